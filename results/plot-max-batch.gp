# plot-max-batch.gp - the largest trainable batch per policy, clustered by
# workload, and the samples/s each policy trains at there. Called by
# gpumemsim with: dat (plot.dat: a header row "workload POLICY...
# POLICY:samples_per_s...", one row per workload: n largest batches (0:
# none fits), then n samples/s (0: none)), out, term, titles (the number
# of policies), ptitle, lib.
# Issue 34: each bar carries its value, the second panel the throughput
# at that batch (a larger batch bought with swapping or recomputation is
# slower), "none" where nothing fits; log y where the batches span more
# than 30x; Okabe-Ito colours (plot-lib.gp).
# png: libgd's terminal, not pngcairo. Bars are axis-aligned, so cairo's
# antialiasing adds nothing to them (the text is antialiased by FreeType
# in both), and cairo's 32-bit image cost libpng and zlib 270 of the 376
# million instructions of max-batch.yaml's png; libgd's palette image
# takes 171 million in all (callgrind, issue 18). The svg is unchanged.
load lib
n = int(titles)
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set xtics rotate by 20 right
set key outside top center horizontal autotitle columnhead
set lmargin 12
set rmargin 3
set datafile separator whitespace
# the centre of bar i (1-based) of row r (0-based) in a clustered
# histogram of n columns with gap 1
bx(r, i) = r + (i - (n + 1) / 2.0) / (n + 1.0)
# both panels: log y when the positive values span more than 30x
stats dat using 2 nooutput
nr = STATS_records
undefine STATS_*
# many workloads (superneurons-depth's 60): upright names in a smaller
# font, so neighbouring names do not run into each other
h = 900
if (nr > 16) { set xtics rotate by 90 right font ',8'; h = 1200 }
if (term eq 'png') { set terminal png size 1200,h noenhanced } else { set terminal svg size 1200,h noenhanced }
set output out
set multiplot layout 2,1 title ptitle
do for [k = 0:1] {
	# stats counts only values inside the ranges set: none yet
	set autoscale xy
	lo = 1e300; hi = -1
	do for [i = 2 + k * n:1 + (k + 1) * n] {
		stats dat using (column(i) > 0 ? column(i) : NaN) nooutput
		if (exists("STATS_max")) { lo = (STATS_min > 0 && STATS_min < lo) ? STATS_min : lo; hi = STATS_max > hi ? STATS_max : hi }
		undefine STATS_*
	}
	# a 0 (nothing fits) has no bar: "none" is written on the axis
	lg = (hi > 0 && lo < 1e300 && hi / lo > 30)
	if (lg) { set logscale y; ybot = lo / 2; set yrange [ybot:hi * 3] } else { unset logscale y; ybot = 0; set yrange [0:hi * 1.15] }
	set xrange [-0.6:nr - 0.4]
	if (k == 1) { unset key }
	set ylabel (k == 0 ? "largest batch" : "samples/s at that batch")
	lab(v) = v > 0 ? (k == 0 ? sprintf("%d", v) : sprintf(v >= 100 ? "%.0f" : "%.1f", v)) : "none"
	ylab(v) = v > 0 ? v : ybot
	plot for [i = 2 + k * n:1 + (k + 1) * n] dat using (column(i) > 0 ? column(i) : NaN):xtic(1) lc rgb col(i - 1 - k * n) fs solid fdens(i - 1 - k * n) border -1 title columnhead(i - k * n), \
	     for [i = 2 + k * n:1 + (k + 1) * n] dat using (bx($0, i - 1 - k * n)):(ylab(column(i))):(lab(column(i))) with labels rotate by 90 left offset 0,0.3 font ',8' notitle
}
unset multiplot
