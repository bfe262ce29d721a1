# plot-optimal-gap.gp - each policy's iteration time over the optimal
# policy's replayed incumbent (top row) and over the global lower bound
# (bottom row; README, "The optimal policy", docs/optimal.md), against
# the budget fraction, one column per workload, from an optimal-gap run:
#   gnuplot -e "dir='results/optimal-gap'" results/plot-optimal-gap.gp
# writes DIR/ratio.png. Points where a policy or the MILP did not run
# (OOM, infeasible) are absent. Below 1 on the top row: the policy beats
# the restricted MILP's schedule class; nothing is below 1 on the bottom
# row (the bound holds for every schedule the executor runs).
if (!exists("dir")) dir = 'results/optimal-gap'
if (!exists("lib")) lib = 'results/plot-lib.gp'
load lib
csv = dir . '/summary.csv'
json = dir . '/runs.json'
set terminal pngcairo size 1800,900 noenhanced
set output dir . '/ratio.png'
set datafile separator whitespace
rows(w, p, k) = sprintf("< awk -F, -v W='%s' -v P='%s' -v K=%s -f results/optimal-gap-ratio.awk %s %s | sort -n", w, p, k, json, csv)
workloads = system(sprintf("awk -F, 'NR > 1 && !seen[$2]++ { printf \"%%s \", $2 }' %s", csv))
policies = system(sprintf("awk -F, 'NR > 1 { sub(/^\"/, \"\", $6); split($6, q, \"(\"); if (q[1] != \"optimal\" && !seen[q[1]]++) printf \"%%s \", q[1] }' %s", csv))
set multiplot layout 2, words(workloads) title "iteration time over the MILP incumbent (top) and the global bound (bottom)"
set grid
set xrange [*:*] reverse
set xlabel "budget (fraction of the baseline peak)"
set key top left font ',8'
do for [k = 1:2] {
	kind = k == 1 ? 'opt' : 'bound'
	set ylabel (k == 1 ? "time / optimal" : "time / bound")
	do for [w = 1:words(workloads)] {
		set title word(workloads, w)
		plot for [p = 1:words(policies)] rows(word(workloads, w), word(policies, p), kind) using 1:2 with linespoints lw 2 pt ptype(p) lc rgb col(p) dt dtype(p) title word(policies, p), 1 with lines dt 2 lc rgb 'black' title (k == 1 ? 'optimal' : 'bound')
	}
}
unset multiplot
