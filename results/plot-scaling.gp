# plot-scaling.gp - scaling: cluster samples/s and speed-up against the
# number of GPUs, one line per (workload, policy), and the ideal line
# (speed-up = N). Called by gpumemsim with: dat (plot.dat: one block per
# series, columns gpus samples_per_s speedup; NaN = no run), out, term,
# titles ("PANEL|POLICY", plot-lib.gp), xlabel, ptitle, lib.
if (term eq 'png') { set terminal pngcairo size 1100,800 noenhanced } else { set terminal svg size 1100,800 noenhanced }
set output out
load lib
set datafile missing NaN
n = words(titles)
set multiplot layout 2,1 title ptitle
set key outside right top
set grid
set xlabel xlabel
set ylabel "samples/s"
plot for [i=1:n] dat index (i-1) using 1:2 with linespoints lw 2 lc rgb col(i) pt ptype(i) dt dtype(i) title panel_title(f_panel(word(titles, i))).' '.f_pol(word(titles, i))
set ylabel "speed-up over 1 GPU"
plot for [i=1:n] dat index (i-1) using 1:3 with linespoints lw 2 lc rgb col(i) pt ptype(i) dt dtype(i) title panel_title(f_panel(word(titles, i))).' '.f_pol(word(titles, i)), x with lines dt 2 lc rgb "gray" title "ideal"
unset multiplot
