# plot-min-pool.gp - the smallest allocator pool that serves each policy
# (vDNN++ section IV-B's search) beside its aggregate peak, clustered by
# workload: per policy one light bar (aggregate peak: bytes in live
# blocks, no fragmentation) and one dark bar of the same colour (the
# pool); the gap between the two is the fragmentation. A missing dark bar:
# no pool up to the limit served. Called by gpumemsim with: dat (plot.dat:
# a header row "workload POLICY:peak POLICY:pool...", one row per workload,
# MiB), out, term, titles (the number of policies), ptitle.
# png: libgd's terminal, not pngcairo. Bars are axis-aligned, so cairo's
# antialiasing adds nothing to them (the text is antialiased by FreeType
# in both), and cairo's 32-bit image cost libpng and zlib 270 of the 376
# million instructions of max-batch.yaml's png; libgd's palette image
# takes 171 million in all (callgrind, issue 18). The svg is unchanged.
if (term eq 'png') { set terminal png size 1100,600 noenhanced } else { set terminal svg size 1100,600 noenhanced }
set output out
set title ptitle.": aggregate peak (light) and smallest pool found (dark)"
set style data histogram
set style histogram clustered gap 1
set boxwidth 0.9
set ylabel "device memory (MiB)"
set yrange [0:*]
set grid ytics
set key outside right top autotitle columnhead
set datafile missing "NaN"
n = int(titles)
plot for [j=2:2*n+1] dat using j:xtic(1) lc (j/2) \
     fs solid (j % 2 == 0 ? 0.3 : 0.9) border -1
