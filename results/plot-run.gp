# plot-run.gp - device memory over time, one line per run of a `run`
# experiment. Called by gpumemsim with: dat (plot.dat: one block per run,
# columns time_ms allocated_MiB reserved_MiB), out, term (png|svg),
# titles (one word per block), xlabel, ptitle.
if (term eq 'png') { set terminal pngcairo size 1100,600 noenhanced } else { set terminal svg size 1100,600 noenhanced }
set output out
set title ptitle.": device memory over time (allocated solid, reserved dashed)"
set xlabel "simulated time (ms)"
set ylabel "MiB"
set key outside right top
set grid
n = words(titles)
plot for [i=1:n] dat index (i-1) using 1:2 with steps lw 2 lc i title word(titles, i), \
     for [i=1:n] dat index (i-1) using 1:3 with steps dt 2 lc i notitle
