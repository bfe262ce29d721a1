# plot-min-pool.gp - the smallest allocator pool that serves each policy
# (vDNN++ section IV-B's search) beside its aggregate peak: one panel per
# workload, the policies along the x axis, per policy a light bar
# (aggregate peak: bytes in live blocks, no fragmentation) and a dark bar
# (the pool); the gap between the two is the fragmentation. A missing
# dark bar: no pool up to the limit served. Called by gpumemsim with: dat
# (plot.dat: one block per workload, rows "POLICY peak_MiB pool_MiB",
# NaN: none), out, term, titles (one word per workload, "PANEL", as
# plot-lib.gp reads it), ptitle, lib.
# Issue 34: 30 policies x 2 bars made 60 legend entries over the bars;
# now the legend has two and each panel names its policies (parameters
# without their keys: "vdnnpp(all,m,bestfit,prefetch-first)").
# png: libgd's terminal, not pngcairo. Bars are axis-aligned, so cairo's
# antialiasing adds nothing to them (the text is antialiased by FreeType
# in both), and cairo's 32-bit image cost libpng and zlib 270 of the 376
# million instructions of max-batch.yaml's png; libgd's palette image
# takes 171 million in all (callgrind, issue 18). The svg is unchanged.
load lib
np = words(titles)
stats dat index 0 using 0 nooutput
nq = STATS_records
undefine STATS_*
# few policies: panels side by side, labels level; many: one panel a
# row, labels upright
few = nq <= 6
cols = few ? grid_cols(np) : 1
rows = few ? grid_rows(np) : np
H = 60 + (few ? 330 : 500) * rows
W = few && cols > 2 ? 1500 : 1400
if (term eq 'png') { set terminal png size W,H noenhanced } else { set terminal svg size W,H noenhanced }
set output out
set multiplot layout rows,cols title ptitle
set style fill solid border -1
set boxwidth 0.4
set ylabel "device memory (MiB)"
set yrange [0:*]
set xrange [-0.6:nq - 0.4]
set grid ytics
if (few) { set xtics norotate font ',9'; set bmargin 3 } else { set xtics rotate by -90 left font ',9'; set bmargin 17 }
set datafile missing "NaN"
set key at screen 0.99, 0.998 right top horizontal
do for [w = 1:np] {
	set title panel_title(word(titles, w))
	plot dat index (w - 1) using ($0 - 0.2):2:xtic(nokeys(strcol(1))) with boxes lc rgb col(1) fs solid 0.35 border -1 title "aggregate peak", \
	     '' index (w - 1) using ($0 + 0.2):3 with boxes lc rgb col(1) fs solid 0.9 border -1 title "smallest pool"
	unset key
}
unset multiplot
