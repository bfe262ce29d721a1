# plot-eff.gp - efficiency-optimal: per workload the baseline's largest
# batch against the tuned k*, and the samples/s of each. Called by
# gpumemsim with: dat (plot.dat: header "workload baseline_batch k_star
# baseline_samples_per_s tuned_samples_per_s", one row per workload; 0 =
# none), out, term, titles, ptitle, lib. Issue 34: each bar carries its
# value ("none": 0), log y where a panel spans more than 30x,
# Okabe-Ito colours (plot-lib.gp).
load lib
if (term eq 'png') { set terminal pngcairo size 1100,850 noenhanced } else { set terminal svg size 1100,850 noenhanced }
set output out
set multiplot layout 2,1 title ptitle
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set xtics rotate by 20 right
set key outside top center horizontal autotitle columnhead
set lmargin 12
set rmargin 3
stats dat using 2 nooutput
nr = STATS_records
undefine STATS_*
# the centre of bar i (1 or 2) of row r
bx(r, i) = r + (i - 1.5) / 3.0
do for [k = 0:1] {
	# stats counts only values inside the ranges set: none yet
	set autoscale xy
	lo = 1e300; hi = -1
	do for [c = 2 + 2 * k:3 + 2 * k] {
		stats dat using (column(c) > 0 ? column(c) : NaN) nooutput
		if (exists("STATS_max")) { lo = (STATS_min > 0 && STATS_min < lo) ? STATS_min : lo; hi = STATS_max > hi ? STATS_max : hi }
		undefine STATS_*
	}
	lg = (hi > 0 && lo < 1e300 && hi / lo > 30)
	if (lg) { set logscale y; ybot = lo / 2; set yrange [ybot:hi * 3] } else { unset logscale y; ybot = 0; set yrange [0:hi * 1.15] }
	set xrange [-0.6:nr - 0.4]
	set ylabel (k == 0 ? "batch size" : "samples/s")
	lab(v) = v > 0 ? (k == 0 ? sprintf("%d", v) : sprintf(v >= 100 ? "%.0f" : "%.1f", v)) : "none"
	ylab(v) = v > 0 ? v : ybot
	c1 = 2 + 2 * k
	plot dat using (column(c1) > 0 ? column(c1) : NaN):xtic(1) lc rgb col(1) title (k == 0 ? "baseline largest batch" : "baseline"), \
	     '' using (column(c1 + 1) > 0 ? column(c1 + 1) : NaN) lc rgb col(2) title (k == 0 ? "tuned k*" : "tuned at k*"), \
	     for [i = 1:2] '' using (bx($0, i)):(ylab(column(c1 + i - 1))):(lab(column(c1 + i - 1))) with labels rotate by 90 left offset 0,0.3 font ',9' notitle
}
unset multiplot
