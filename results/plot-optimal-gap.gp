# plot-optimal-gap.gp - each policy's iteration time over the optimal
# policy's (README, "The optimal policy"), against the budget fraction,
# one panel per workload, from an optimal-gap run's summary.csv:
#   gnuplot -e "dir='results/optimal-gap'" results/plot-optimal-gap.gp
# writes DIR/ratio.png. Points where a policy or the MILP did not run
# (OOM, infeasible) are absent. Below 1: the policy beats the MILP's
# restricted schedule class (README says where that happens and why).
if (!exists("dir")) dir = 'results/optimal-gap'
if (!exists("lib")) lib = 'results/plot-lib.gp'
load lib
csv = dir . '/summary.csv'
set terminal pngcairo size 1400,600 noenhanced
set output dir . '/ratio.png'
set datafile separator whitespace
# "workload fraction policy ratio" rows of the points where both ran
rows(w, p) = sprintf("< awk -F, 'NR > 1 { split($6, q, \"(\"); t[$2, $5, q[1]] = $9; s[$2, $5, q[1]] = $8 } END { for (k in t) { split(k, a, SUBSEP); if (a[1] == \"%s\" && a[3] == \"%s\" && s[k] == \"ok\" && s[a[1], a[2], \"optimal\"] == \"ok\") print a[2], t[k] / t[a[1], a[2], \"optimal\"] } }' %s | sort -n", w, p, csv)
workloads = system(sprintf("awk -F, 'NR > 1 && !seen[$2]++ { printf \"%%s \", $2 }' %s", csv))
policies = system(sprintf("awk -F, 'NR > 1 { split($6, q, \"(\"); if (q[1] != \"optimal\" && !seen[q[1]]++) printf \"%%s \", q[1] }' %s", csv))
set multiplot layout 1, words(workloads) title "iteration time over the optimum (MILP, CBC)"
set grid
set xrange [*:*] reverse
set xlabel "budget (fraction of the baseline peak)"
set ylabel "time / optimal"
set key top left font ',9'
do for [w = 1:words(workloads)] {
	set title word(workloads, w)
	plot for [p = 1:words(policies)] rows(word(workloads, w), word(policies, p)) using 1:2 with linespoints lw 2 pt ptype(p) lc rgb col(p) dt dtype(p) title word(policies, p), 1 with lines dt 2 lc rgb 'black' title 'optimal'
}
unset multiplot
