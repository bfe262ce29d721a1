# optimal-gap-ratio.awk - "fraction ratio" rows of policy P on workload W
# from an optimal-gap run (README, "The optimal policy"), for
# results/plot-optimal-gap.gp. K=opt: the policy's iteration time over
# the optimal policy's (the replayed incumbent) where both ran; K=bound:
# over the global bound (runs.json's "global bound", ns, reported also
# where the restricted MILP is infeasible). Run as
#   awk -F, -v W=chain-mlp -v P=capuchin -v K=bound \
#       -f results/optimal-gap-ratio.awk DIR/runs.json DIR/summary.csv
# runs.json holds one point a line.
FNR == NR {
	if ($0 !~ /"policy":"optimal/)
		next
	if (!match($0, /"workload":"[^"]*"/))
		next
	w = substr($0, RSTART + 12, RLENGTH - 13)
	if (!match($0, /"budget_fraction":[0-9.eE+-]+/))
		next
	f = sprintf("%.4f", substr($0, RSTART + 18, RLENGTH - 18))
	if (match($0, /global bound +[0-9.]+/)) {
		s = substr($0, RSTART, RLENGTH)
		sub(/global bound +/, "", s)
		bound[w, f] = s / 1e6
	}
	next
}
FNR > 1 {
	# summary.csv quotes a policy label with parameters, whose commas
	# are not separators ("optimal(node_limit=1000,time_limit=300)")
	line = $0
	out = ""
	while (match(line, /"[^"]*"/)) {
		lab = substr(line, RSTART + 1, RLENGTH - 2)
		gsub(/,/, ";", lab)
		out = out substr(line, 1, RSTART - 1) lab
		line = substr(line, RSTART + RLENGTH)
	}
	split(out line, c, ",")
	split(c[6], q, "(")
	t[c[2], c[5], q[1]] = c[9]
	ok[c[2], c[5], q[1]] = c[8] == "ok"
}
END {
	for (k in t) {
		split(k, a, SUBSEP)
		if (a[1] != W || a[3] != P || !ok[k])
			continue
		if (K == "bound" && ((a[1], a[2]) in bound) && bound[a[1], a[2]] > 0)
			print a[2], t[k] / bound[a[1], a[2]]
		else if (K == "opt" && ok[a[1], a[2], "optimal"])
			print a[2], t[k] / t[a[1], a[2], "optimal"]
	}
}
