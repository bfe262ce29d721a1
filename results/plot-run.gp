# plot-run.gp - device memory over time, one panel per workload, one
# colour per policy (allocated thick, reserved dotted). Called by
# gpumemsim with: dat (plot.dat: one block per run, columns time_ms
# allocated_MiB reserved_MiB), out, term (png|svg), titles (one word per
# run, "PANEL|POLICY|STATUS", plot-lib.gp), xlabel, ptitle, lib.
# Issue 34: vdnn-timing's 44 runs over one axis became a panel per
# workload and one legend of the policies; a run that ran out of memory
# ends with a cross on the x axis where it stopped.
load lib
n = words(titles)
array first[n + 1]
np = 0
do for [i = 1:n] {
	if (i == 1 || f_panel(word(titles, i)) ne f_panel(word(titles, i - 1))) { np = np + 1; first[np] = i }
}
first[np + 1] = n + 1
# policies: as many as the largest panel has
nq = 0
do for [w = 1:np] { nq = (first[w + 1] - first[w] > nq) ? first[w + 1] - first[w] : nq }
cols = grid_cols(np); rows = grid_rows(np)
# the legend's columns: fewer for long labels
ml = 0
do for [q = 1:nq] { ml = strlen(f_pol(word(titles, q))) > ml ? strlen(f_pol(word(titles, q))) : ml }
kcols = ml > 45 ? 2 : (ml > 28 ? 3 : 4)
kcols = nq < kcols ? nq : kcols
krows = int((nq + kcols - 1) / kcols)
W = cols <= 2 ? 1100 : 1500
H = 60 + 330 * rows + 22 * krows + 40
if (term eq 'png') { set terminal pngcairo size W,H noenhanced font ',10' } else { set terminal svg size W,H noenhanced font ',10' }
set output out
keyh = (22.0 * krows + 40) / H
toph = 40.0 / H
pw = 1.0 / cols
ph = (1.0 - keyh - toph) / rows
set multiplot title ptitle . ": device memory over time (allocated thick, reserved dotted; x: out of memory)"
set grid
set xlabel "simulated time (ms)"
set ylabel "MiB"
unset key
set yrange [0:*]
do for [w = 1:np] {
	a = first[w]; b = first[w + 1] - 1
	set origin ((w - 1) % cols) * pw, 1.0 - toph - (int((w - 1) / cols) + 1) * ph
	set size pw, ph
	set title panel_title(f_panel(word(titles, a)))
	# where each run that did not finish stopped: its last time
	unset label
	do for [i = a:b] {
		if (f_status(word(titles, i)) ne 'ok') {
			stats dat index (i - 1) using 1 nooutput
			if (exists("STATS_max")) { set label (i - a + 1) "" at first STATS_max, first 0 point pt 2 ps 2.5 lw 2 lc rgb col(i - a + 1) front }
			undefine STATS_*
		}
	}
	plot for [i = a:b] dat index (i - 1) using 1:2 with steps lw 2 lc rgb col(i - a + 1) dt dtype(i - a + 1) notitle, \
	     for [i = a:b] dat index (i - 1) using 1:3 with steps lw 1 dt 3 lc rgb col(i - a + 1) notitle
}
unset label
set origin 0, 0
set size 1, keyh
unset title; unset xlabel; unset ylabel; unset grid; unset border; unset tics
set xrange [0:1]; set yrange [0:1]
set key center center horizontal maxcols kcols width 2
plot for [q = 1:nq] 2 with lines lw 3 lc rgb col(q) dt dtype(q) title (f_pol(word(titles, first[1] + q - 1)))
unset multiplot
