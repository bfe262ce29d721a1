# plot-empty.gp - the plot of a result set with no point to draw: every
# row out of memory (a legal result, issue 38) or otherwise without a
# value. A titled frame that says so, in place of the kind's plot (whose
# scripts fail on an empty range). Called by gpumemsim with: dat, titles,
# xlabel, out, term, ptitle (as every plot-*.gp; dat, titles unused).
if (term eq 'png') { set terminal png size 1100,600 noenhanced } else { set terminal svg size 1100,600 noenhanced }
set output out
set title ptitle
unset key
unset tics
set xlabel xlabel
set xrange [0:1]
set yrange [0:1]
set label 1 "nothing to plot: no row has a value (every one out of memory or failed; see summary.csv)" at graph 0.5, 0.5 center
plot -1 notitle
