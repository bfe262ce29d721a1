# plot-pareto.gp - the DTR Pareto plot (Kirisame et al., ICLR 2021,
# Figure 2): compute overhead (slowdown: iteration time over the kernel
# time of the step's own ops) against the budget ratio (memory budget /
# baseline peak: on DTR logs simrd's, for both presets; xlabel says
# which), one panel per model, one colour per heuristic (preset serial
# dashed); points
# that ran out of memory or thrashed are a cross on the x axis (issue 34).
# Called by gpumemsim with:
# dat (plot.dat: one block per (workload, policy) series in workload
# order, columns ratio overhead; NaN = OOM or thrash), out, term, titles
# ("PANEL|POLICY" words, plot-lib.gp), xlabel, ptitle, lib.
load lib
if (term eq 'png') { set terminal pngcairo size 1600,650 noenhanced } else { set terminal svg size 1600,650 noenhanced }
set output out
n = words(titles)
# series per panel: those naming the first series' workload
wl(s) = f_panel(s)
pol(s) = f_pol(s)
# "dtr(heuristic=msps,preset=serial)" -> "msps,preset=serial"
short(s) = (strstrt(pol(s), 'heuristic=') > 0) ? pol(s)[strstrt(pol(s), 'heuristic=') + 10:strlen(pol(s)) - 1] : pol(s)
# "msps,preset=serial" -> "msps": the heuristic, whatever the preset
heur(s) = (strstrt(short(s), ',') > 0) ? short(s)[1:strstrt(short(s), ',') - 1] : short(s)
dash(s) = (strstrt(s, 'serial') > 0) ? 2 : 1
# the colour of series q of panel w: the index of the panel's first
# series with the same heuristic (a heuristic has one colour, full solid
# and serial dashed)
hcol(w, q, k) = (k >= q || heur(word(titles, (w - 1) * np + k)) eq heur(word(titles, (w - 1) * np + q))) ? k : hcol(w, q, k + 1)
np = 0
do for [i=1:n] { if (wl(word(titles, i)) eq wl(word(titles, 1))) { np = np + 1 } }
nw = n / np
set multiplot layout 1,nw title ptitle . "  (x on the axis: out of memory or thrashed)"
set grid
set xlabel xlabel
set ylabel "overhead (slowdown)"
set xrange [*:*] reverse
set yrange [0.95:*]
set key top left font ',9'
do for [w=1:nw] {
	set title panel_title(wl(word(titles, (w - 1) * np + 1)))
	# preset serial (simrd's own model) dashed
	plot for [q=1:np] dat index ((w - 1) * np + q - 1) using 1:2 with linespoints lw 2 pt ptype(q) lc rgb col(hcol(w, q, 1)) dt dash(word(titles, (w - 1) * np + q)) title short(word(titles, (w - 1) * np + q)), \
	     for [q=1:np] dat index ((w - 1) * np + q - 1) using 1:(strcol(2) eq 'NaN' ? 0.95 : 1/0) with points pt 2 ps 2 lw 2 lc rgb col(hcol(w, q, 1)) notitle
}
unset multiplot
