# plot-kinds.gp - device memory over time stacked by tensor kind (issue
# 34): a panel per run of a `kind: run` experiment (its workload, batch,
# budget and policy in the panel's title), the allocated bytes split into
# parameters, optimizer state, parameter gradients, input, activations,
# activation gradients and workspace (the kinds sum to the allocated
# bytes, asserted in sim/ex.c, mem_changed) above the axis, the host
# bytes holding tensors (swapped-out copies, host-resident tensors)
# hatched below it (offloading policies hold several times the device's
# bytes on the host: stacked on top they flattened the device's kinds),
# and the reserved bytes as a dotted line. Values hold from one
# sample to the next (a change of device memory), so the areas are steps:
# each cumulative layer is drawn with `fillsteps` (the filledcurves of a
# step function, to the axis), the tallest first, each lower one over it.
# Drawn by results/plots.sh from the run's plot.dat (columns: time_ms
# allocated_MiB reserved_MiB input parameter param_grad opt_state
# activation act_grad workspace host, MiB; exp_out.c) with: dat, titles
# (one word a run, "PANEL|POLICY|STATUS", plot-lib.gp), out, term,
# ptitle, lib.
load lib
n = words(titles)
cols = grid_cols(n); rows = grid_rows(n)
W = cols <= 2 ? 1100 : 1500
H = 60 + 330 * rows + 70
if (term eq 'png') { set terminal pngcairo size W,H noenhanced font ',10' } else { set terminal svg size W,H noenhanced font ',10' }
set output out
keyh = 70.0 / H
toph = 40.0 / H
pw = 1.0 / cols
ph = (1.0 - keyh - toph) / rows
# the layers, bottom up: plot.dat's column and its name; the persistent
# kinds at the bottom, what comes and goes above them
lcol = "5 7 6 4 8 9 10"
lname = "parameters|optimizer state|parameter gradients|input|activations|activation gradients|workspace"
lpal = "1 3 2 6 7 4 8"
nl = words(lcol)
# the name of layer k (names hold spaces: '|'-separated)
nth(s, k) = k <= 1 ? (strstrt(s, '|') ? s[1:strstrt(s, '|') - 1] : s) : nth(s[strstrt(s, '|') + 1:], k - 1)
# layers 1..k of a row, summed
cum(k) = k < 1 ? 0 : column(int(word(lcol, k))) + cum(k - 1)
# a tic step of about a sixth of r: 1, 2 or 5 times a power of ten
p10(r) = 10 ** floor(log10(r / 6.0))
tstep(r) = r / 6.0 / p10(r) > 5 ? 10 * p10(r) : (r / 6.0 / p10(r) > 2 ? 5 * p10(r) : (r / 6.0 / p10(r) > 1 ? 2 * p10(r) : p10(r)))
set multiplot title ptitle . ": device memory over time by tensor kind (above the axis; reserved dotted) and host bytes holding tensors (hatched, below)"
set grid front
set xlabel "simulated time (ms)"
set ylabel "MiB: device up, host down"
tf = cols > 2 ? ',8' : ',10'
set xtics font tf
unset key
set autoscale xfix
set style fill solid 1.0 noborder
do for [i = 1:n] {
	s = word(titles, i)
	set origin ((i - 1) % cols) * pw, 1.0 - toph - (int((i - 1) / cols) + 1) * ph
	set size pw, ph
	set title panel_title(f_panel(s)) . "\n" . f_pol(s) . (f_status(s) ne 'ok' ? " (" . f_status(s) . ")" : "") font (cols > 2 ? ',8' : ',10')
	# the y range: the device's reserved bytes up, the host's down;
	# tics labelled with their size either side
	stats dat index (i - 1) using 3 nooutput
	up = STATS_max > 0 ? STATS_max : 1
	stats dat index (i - 1) using 11 nooutput
	down = STATS_max
	set yrange [-1.05 * down:1.05 * up]
	st = tstep(up + down)
	set ytics () font tf
	do for [v = -int(down / st):int(up / st)] { set ytics add (sprintf('%g', abs(v * st)) v * st) }
	plot dat index (i - 1) using 1:(-$11) with fillsteps fs pattern 4 lc rgb '#000000', \
	     for [k = nl:1:-1] dat index (i - 1) using 1:(cum(k)) with fillsteps fs solid 1.0 noborder lc rgb col(int(word(lpal, k))), \
	     dat index (i - 1) using 1:2 with steps lw 1 lc rgb '#000000', \
	     dat index (i - 1) using 1:3 with steps lw 1 dt 3 lc rgb '#000000'
	undefine STATS_*
}
set origin 0, 0
set size 1, keyh
unset title; unset xlabel; unset ylabel; unset grid; unset border; unset tics
set xrange [0:1]; set yrange [0:1]
set key center center horizontal maxcols 5 width 1
plot NaN notitle, for [k = 1:nl] keyentry with boxes fs solid 1.0 lc rgb col(int(word(lpal, k))) title nth(lname, k), \
     keyentry with boxes fs pattern 4 lc rgb '#000000' title "on host (below the axis)", \
     keyentry with lines lw 1 lc rgb '#000000' title "allocated", \
     keyentry with lines lw 1 dt 3 lc rgb '#000000' title "reserved"
unset multiplot
