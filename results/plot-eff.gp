# plot-eff.gp - efficiency-optimal: per workload the baseline's largest
# batch against the tuned k*, and the samples/s of each. Called by
# gpumemsim with: dat (plot.dat: header "workload baseline_batch k_star
# baseline_samples_per_s tuned_samples_per_s", one row per workload; 0 =
# none), out, term, titles, ptitle.
if (term eq 'png') { set terminal pngcairo size 1100,800 noenhanced } else { set terminal svg size 1100,800 noenhanced }
set output out
set multiplot layout 2,1 title ptitle
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [0:*]
set grid ytics
set xtics rotate by -35 left
set key outside right top
set ylabel "batch size"
plot dat using 2:xtic(1) title "baseline largest batch", '' using 3 title "tuned k*"
set ylabel "samples/s"
plot dat using 4:xtic(1) title "baseline", '' using 5 title "tuned at k*"
unset multiplot
