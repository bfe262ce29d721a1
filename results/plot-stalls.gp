# plot-stalls.gp - where each run's iteration goes, stacked: compute (the
# step's own kernels), recompute, then the compute stream idle waiting
# for H2D, D2H, memory, alloc, and other (the rest: host gaps). A bar per
# run that trained ("policy@budget_fraction/bBATCH"), a panel per
# workload. Drawn by results/plots.sh from summary.csv (issue 34) with:
# dat (rows "workload label compute recompute h2d d2h memory alloc
# other", ms), out, term, ptitle, lib.
load lib
wls = system("awk '!s[$1]++ { printf \"%s \", $1 }' " . dat)
np = words(wls)
maxbars = int(system("awk '{ n[$1]++ } END { m = 0; for (w in n) if (n[w] > m) m = n[w]; print m }' " . dat))
H = 80 + np * 420
W = maxbars > 30 ? 1600 : 1200
if (term eq 'png') { set terminal pngcairo size W,H noenhanced font ',10' } else { set terminal svg size W,H noenhanced font ',10' }
set output out
set multiplot layout np,1 title ptitle . " (ms a steady iteration)"
set style data histogram
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.75
set grid ytics
set ylabel "ms"
set xtics rotate by -90 left font ',8'
set bmargin 15
set key outside right top
names = "compute recompute H2D D2H memory alloc other"
do for [w = 1:np] {
	wl = word(wls, w)
	set title wl
	sel = "< awk '$1 == \"" . wl . "\"' " . dat
	plot for [k = 3:9] sel using k:xtic(2) lc rgb (k == 9 ? '#DDDDDD' : col(k - 2)) title word(names, k - 2)
	unset key
}
unset multiplot
