# plot-sweep.gp - throughput and iteration time against the swept value
# (batch size or device budget), one line per (workload, policy); also used
# for best-throughput searches (every batch probed). Called by gpumemsim
# with: dat (plot.dat: one block per series, columns x samples_per_s
# iter_time_ms; NaN = out of memory), out, term, titles, xlabel, ptitle.
if (term eq 'png') { set terminal pngcairo size 1100,800 noenhanced } else { set terminal svg size 1100,800 noenhanced }
set output out
set datafile missing NaN
# gnuplot cycles 8 line colours: series 9.. are dashed, other points
n = words(titles)
set multiplot layout 2,1 title ptitle
set key outside right top
set grid
set xlabel xlabel
set ylabel "samples/s"
plot for [i=1:n] dat index (i-1) using 1:2 with linespoints lw 2 pt (7 + 2 * int((i-1)/8)) dt int((i+7)/8) lc i title word(titles, i)
set ylabel "iteration time (ms)"
plot for [i=1:n] dat index (i-1) using 1:3 with linespoints lw 2 pt (7 + 2 * int((i-1)/8)) dt int((i+7)/8) lc i title word(titles, i)
unset multiplot
