# plot-max-batch.gp - the largest trainable batch per policy, clustered by
# workload. Called by gpumemsim with: dat (plot.dat: a header row
# "workload POLICY...", one row per workload), out, term, titles (the
# number of policies), ptitle.
# png: libgd's terminal, not pngcairo. Bars are axis-aligned, so cairo's
# antialiasing adds nothing to them (the text is antialiased by FreeType
# in both), and cairo's 32-bit image cost libpng and zlib 270 of the 376
# million instructions of max-batch.yaml's png; libgd's palette image
# takes 171 million in all (callgrind, issue 18). The svg is unchanged.
if (term eq 'png') { set terminal png size 1100,600 noenhanced } else { set terminal svg size 1100,600 noenhanced }
set output out
set title ptitle.": largest batch that trains without running out of memory"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "batch size"
set yrange [0:*]
set grid ytics
# long or many workload labels (e.g. "resnet50/tf-eager") are set on a
# slant so that they do not run into each other
set xtics rotate by -35 left
set bmargin 9
set key outside right top autotitle columnhead
n = int(titles)
plot for [i=2:n+1] dat using i:xtic(1)
