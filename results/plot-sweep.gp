# plot-sweep.gp - throughput against the swept value (batch size or
# device budget), one panel per workload, one line per policy; also used
# for best-throughput searches (every batch probed). Called by gpumemsim
# with: dat (plot.dat: one block per series, columns x samples_per_s
# iter_time_ms; NaN = out of memory), out, term, titles (one word per
# series, "PANEL|POLICY", plot-lib.gp), xlabel, ptitle, lib.
# Issue 34: a panel per workload and one legend of the policies (recorded
# had 56 series over one axis); a point that ran out of memory is a cross
# on the x axis where the line stops; series that coincide are set apart
# (each policy its own colour, point and dash, and x moved by 0.4% a
# policy, so none hides under another); log y where values span more than
# 30x. Iteration time is batch / samples/s (summary.csv has it).
load lib
n = words(titles)
array first[n + 1]
np = 0
do for [i = 1:n] {
	if (i == 1 || f_panel(word(titles, i)) ne f_panel(word(titles, i - 1))) { np = np + 1; first[np] = i }
}
first[np + 1] = n + 1
nq = first[2] - first[1]
cols = grid_cols(np); rows = grid_rows(np)
# the legend's columns: fewer for long labels
ml = 0
do for [q = 1:nq] { ml = strlen(f_pol(word(titles, q))) > ml ? strlen(f_pol(word(titles, q))) : ml }
kcols = ml > 45 ? 2 : (ml > 28 ? 3 : 4)
kcols = nq < kcols ? nq : kcols
krows = int((nq + kcols - 1) / kcols)
W = cols <= 2 ? 1100 : 1500
H = 60 + 330 * rows + 24 * krows + 30
if (term eq 'png') { set terminal pngcairo size W,H noenhanced font ',10' } else { set terminal svg size W,H noenhanced font ',10' }
set output out
keyh = (24.0 * krows + 30) / H
toph = 40.0 / H
pw = 1.0 / cols
ph = (1.0 - keyh - toph) / rows
set multiplot title ptitle . "  (x on the axis: did not train: out of memory, or failed)"
set grid
set xlabel xlabel
if (!exists("ylab")) { ylab = "samples/s" }
set ylabel ylab
unset key
dodge(x, q) = x * (1 + 0.004 * (q - (nq + 1) / 2.0))
do for [w = 1:np] {
	a = first[w]; b = first[w + 1] - 1
	set origin ((w - 1) % cols) * pw, 1.0 - toph - (int((w - 1) / cols) + 1) * ph
	set size pw, ph
	set title panel_title(f_panel(word(titles, a)))
	# the panel's range: log y when it spans more than 30x
	# stats counts only values inside the ranges set: none yet
	set autoscale xy
	lo = 1e300; hi = -1
	do for [i = a:b] {
		stats dat index (i - 1) using 2 nooutput
		if (exists("STATS_max") && STATS_records > 0) { lo = (STATS_min < lo && STATS_min > 0) ? STATS_min : lo; hi = STATS_max > hi ? STATS_max : hi }
		undefine STATS_*
	}
	if (hi > 0 && lo < 1e300 && hi / lo > 30) { set logscale y; ybot = lo / 2 } else { unset logscale y; ybot = 0 }
	set yrange [ybot:*]
	plot for [i = a:b] dat index (i - 1) using (dodge($1, i - a + 1)):2 with linespoints lw 2 lc rgb col(i - a + 1) pt ptype(i - a + 1) dt dtype(i - a + 1) ps 1.2 notitle, \
	     for [i = a:b] dat index (i - 1) using (dodge($1, i - a + 1)):(strcol(2) eq 'NaN' ? ybot : 1/0) with points lc rgb col(i - a + 1) pt 2 ps 2.5 lw 2 notitle
}
# the legend: one entry a policy, below the panels
set origin 0, 0
set size 1, keyh
unset title; unset xlabel; unset ylabel; unset grid; unset border; unset tics; unset logscale
set xrange [0:1]; set yrange [0:1]
set key center center horizontal maxcols kcols width 2
plot for [q = 1:nq] 2 with linespoints lw 2 lc rgb col(q) pt ptype(q) dt dtype(q) ps 1.2 title (f_pol(word(titles, first[1] + q - 1)))
unset multiplot
