# plot-tradeoff.gp - samples/s against the device memory a run reserved,
# every run that trained: a panel per workload, a colour and point per
# policy, and the Pareto front (no run both faster and using less
# memory) as a black step line. Drawn by results/plots.sh from
# summary.csv (issue 34) with: dat (rows "workload policy GiB samples/s
# batch"), front (rows "workload GiB samples/s", by memory), out, term,
# xlabel, ptitle, lib.
load lib
wls = system("awk '!s[$1]++ { printf \"%s \", $1 }' " . dat)
pols = system("awk '!s[$2]++ { printf \"%s \", $2 }' " . dat)
np = words(wls); nq = words(pols)
cols = grid_cols(np); rows = grid_rows(np)
W = cols <= 2 ? 1100 : 1500
H = 60 + 360 * rows + 22 * int((nq + 2) / 3) + 40
if (term eq 'png') { set terminal pngcairo size W,H noenhanced font ',10' } else { set terminal svg size W,H noenhanced font ',10' }
set output out
keyh = (22.0 * int((nq + 2) / 3) + 40) / H
toph = 40.0 / H
pw = 1.0 / cols
ph = (1.0 - keyh - toph) / rows
set multiplot title ptitle . " (black: the Pareto front)"
set grid
set xlabel xlabel
set ylabel "samples/s"
unset key
do for [w = 1:np] {
	wl = word(wls, w)
	set origin ((w - 1) % cols) * pw, 1.0 - toph - (int((w - 1) / cols) + 1) * ph
	set size pw, ph
	set title wl
	set xrange [0:*]; set yrange [0:*]
	plot front using (strcol(1) eq wl ? $2 : NaN):3 with steps lw 1.5 lc rgb 'black' notitle, \
	     for [q = 1:nq] dat using ((strcol(1) eq wl && strcol(2) eq word(pols, q)) ? $3 : NaN):4 with points pt ptype(q) ps 1.4 lc rgb col(q) notitle
}
set origin 0, 0
set size 1, keyh
unset title; unset xlabel; unset ylabel; unset grid; unset border; unset tics
set xrange [0:1]; set yrange [0:1]
set key center center horizontal maxcols 3 width 2
plot for [q = 1:nq] 2 with points pt ptype(q) ps 1.4 lc rgb col(q) title word(pols, q)
unset multiplot
