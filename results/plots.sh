#!/bin/sh
# plots.sh - the figures a paper wants, drawn from a result set a run
# already wrote (issue 34): no simulation, only summary.csv.
#
#   results/plots.sh results/NAME      (or any directory with summary.csv)
#
# writes into DIR, each as .png (and .dat, the numbers drawn):
#   slowdown   the framework policy's samples/s over the run's: at the
#              same workload and batch (with the most memory framework
#              trains in) the ratio of iteration times, the y axis of
#              DTR's Figure 2; past the largest batch framework trains,
#              against framework at that batch (the cost of the larger
#              batch, as Capuchin's Figure 9 reads),
#              against the swept value (budget or batch), a panel per
#              workload; crosses on the axis: out of memory;
#   tradeoff   samples/s against the device memory each run reserved
#              (peak_reserved_bytes), every run that trained, a panel per
#              workload, a colour per policy, and the Pareto front (no
#              run both faster and smaller) as a black step line;
#   stalls     where each run's iteration went, stacked: compute (the
#              step's own kernels), recompute, and the compute stream's
#              idle time waiting for H2D (swap-ins), D2H (swap-outs),
#              memory (a free), alloc (driver calls), and the rest
#              ("other": host gaps); a bar per run that trained, a panel
#              per workload;
#   kinds      (a `kind: run` experiment's set, from its plot.dat) device
#              memory over time stacked by tensor kind (parameters,
#              optimizer state, gradients, input, activations, workspace)
#              with the host bytes holding tensors hatched below, a panel
#              per run (results/plot-kinds.gp).
# Columns are found by their header names, so added columns do not move
# them. Needs gnuplot and a POSIX awk.
set -eu
dir=${1:?usage: results/plots.sh RESULTS_DIR}
csv="$dir/summary.csv"
[ -r "$csv" ] || { echo "plots.sh: no $csv (run the experiment first)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
lib="$here/plot-lib.gp"

# summary.csv -> "field<TAB>field..." (csv2tsv.awk)
tsv() {
	awk -f "$here/csv2tsv.awk" "$csv"
}

# The series of one measure: blocks "x y" per (workload, policy) in the
# order of summary.csv, y NaN where the run did not train; the titles
# ("PANEL|POLICY", plot-lib.gp) on the last line after "#titles ".
# $1: what y is (slowdown | samples)
series() {
	tsv | awk -F'\t' -v what="$1" '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{
		w = $c["workload"]; p = $c["policy"]; b = $c["batch"]
		bf = ("budget_fraction" in c) ? $c["budget_fraction"] : ""
		bb = $c["budget_bytes"]
		ok = $c["status"] == "ok"
		t = $c["iter_time_ms"] + 0
		n++; W[n] = w; P[n] = p; B[n] = b; F[n] = bf; BB[n] = bb; OK[n] = ok; T[n] = t; S[n] = $c["samples_per_s"] + 0
		if (p == "framework" && ok) {
			k = w SUBSEP b
			# the framework reference: with the most memory; and
			# per workload at the largest batch it trains
			if (!(k in refb) || bb + 0 > refb[k] + 0) { refb[k] = bb; ref[k] = S[n] }
			if (!(w in refwb) || b + 0 > refwb[w] + 0) { refwb[w] = b; refw[w] = S[n] }
		}
		if (!((w, p) in seen)) { seen[w, p] = 1; ns++; SW[ns] = w; SP[ns] = p }
		else swept = 1
		if (!(w in wb)) wb[w] = b; else if (wb[w] != b) wvar[w] = 1
		if (!(w in wf)) wf[w] = bf bb; else if (wf[w] != bf bb) fvar[w] = 1
	}
	END {
		# x: the budget fraction, else the budget (GiB), else the batch
		for (s = 1; s <= ns; s++) {
			printf "# %s %s\n", SW[s], SP[s]
			for (i = 1; i <= n; i++) {
				if (W[i] != SW[s] || P[i] != SP[s]) continue
				x = (W[i] in fvar) ? ((F[i] != "" && F[i] + 0 > 0) ? F[i] : BB[i] / 1073741824) : B[i]
				if (what == "slowdown") {
					# samples/s of framework over this run: at
					# the same batch its time ratio; past the
					# batches framework trains, against its
					# largest
					k = W[i] SUBSEP B[i]
					r = (k in ref) ? ref[k] : ((W[i] in refw) ? refw[W[i]] : 0)
					y = !OK[i] ? "NaN" : (r > 0 && S[i] > 0) ? sprintf("%.6f", r / S[i]) : "-"
				} else y = OK[i] ? sprintf("%.6f", S[i]) : "NaN"
				if (y != "-") printf "%s %s\n", x, y
			}
			printf "\n\n"
			tt = tt (s > 1 ? " " : "") SW[s] ((SW[s] in wvar) ? "" : "@batch=" wb[SW[s]]) "|" SP[s]
		}
		xl = "batch size"
		for (w in fvar) xl = "budget (fraction of the baseline peak, or GiB)"
		print "#titles " tt
		if (!swept) print "#single"
		print "#xlabel " xl
	}'
}

draw() { # script dat titles xlabel title out [extra gnuplot commands]
	rm -f "$6"
	# gnuplot warns of series without a point (a policy that never
	# trained): expected here, so its warnings are left out
	gnuplot -e "lib='$lib'; dat='$2'; titles='$3'; xlabel='$4'; ptitle='$5'; out='$6'; term='png'; ${7:-}" "$here/$1" 2>&1 | grep -v 'warning:' >&2 || :
	[ -s "$6" ] || { echo "plots.sh: gnuplot drew no $6" >&2; exit 1; }
}

name=$(basename "$dir")
series slowdown > "$dir/slowdown.dat"
titles=$(sed -n 's/^#titles //p' "$dir/slowdown.dat")
xlabel=$(sed -n 's/^#xlabel //p' "$dir/slowdown.dat")
if grep -q '^#single' "$dir/slowdown.dat"; then
	rm -f "$dir/slowdown.dat" "$dir/slowdown.png"
	echo "plots.sh: no slowdown: one run per workload and policy (a search: each policy at its own batch)" >&2
elif grep -q '^[0-9.]* [0-9]' "$dir/slowdown.dat"; then
	draw plot-sweep.gp "$dir/slowdown.dat" "$titles" "$xlabel" "$name: slowdown against framework (same batch, else the largest framework trains)" "$dir/slowdown.png" "ylab='framework samples/s / samples/s'"
	echo "plot: $dir/slowdown.png"
else
	echo "plots.sh: no slowdown: no framework run trained at the batches here" >&2
fi

# tradeoff: "workload policy reserved_GiB samples_per_s" of every run
# that trained
tsv | awk -F'\t' '
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$c["status"] == "ok" { printf "%s %s %.6f %.6f %s\n", $c["workload"], $c["policy"], $c["peak_reserved_bytes"] / 1073741824, $c["samples_per_s"], $c["batch"] }' > "$dir/tradeoff.dat"
# the front: per workload, by memory, each run faster than every smaller
sort -k1,1 -k3,3g -k4,4gr "$dir/tradeoff.dat" | awk '
$1 != w { w = $1; best = -1 }
$4 > best { best = $4; print $1, $3, $4 }' > "$dir/tradeoff-front.dat"
if [ -s "$dir/tradeoff.dat" ]; then
	draw plot-tradeoff.gp "$dir/tradeoff.dat" "" "device memory reserved at the peak (GiB)" "$name: throughput against memory" "$dir/tradeoff.png" "front='$dir/tradeoff-front.dat'"
	echo "plot: $dir/tradeoff.png"
fi

# stalls: "workload label compute recompute h2d d2h memory alloc other"
tsv | awk -F'\t' '
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$c["status"] == "ok" {
	own = $c["compute_busy_ms"] - $c["recompute_ms"]
	s = $c["compute_busy_ms"] + $c["stall_h2d_ms"] + $c["stall_d2h_ms"] + $c["stall_memory_ms"] + $c["stall_alloc_ms"]
	other = $c["iter_time_ms"] - s; if (other < 0) other = 0
	x = ("budget_fraction" in c && $c["budget_fraction"] + 0 > 0) ? sprintf("@%.2f", $c["budget_fraction"]) : ""
	printf "%s %s%s/b%s %.6f %.6f %.6f %.6f %.6f %.6f %.6f\n", $c["workload"], $c["policy"], x, $c["batch"], own, $c["recompute_ms"], $c["stall_h2d_ms"], $c["stall_d2h_ms"], $c["stall_memory_ms"], $c["stall_alloc_ms"], other }' > "$dir/stalls.dat"
if [ -s "$dir/stalls.dat" ]; then
	draw plot-stalls.gp "$dir/stalls.dat" "" "" "$name: where the iteration goes" "$dir/stalls.png"
	echo "plot: $dir/stalls.png"
fi

# kinds: a run experiment's memory samples by tensor kind, in its plot.dat
# (a header line naming host_MiB; a "# title" line a run)
if [ -r "$dir/plot.dat" ] && head -n 1 "$dir/plot.dat" | grep -q ' host_MiB$'; then
	# a quote would end gnuplot's string: runs' titles never hold one
	# (exp_out.c words), but a hand-made file might
	titles=$(sed -n "s/^# title //p" "$dir/plot.dat" | tr -d "'" | tr '\n' ' ')
	draw plot-kinds.gp "$dir/plot.dat" "$titles" "" "$name" "$dir/kinds.png"
	echo "plot: $dir/kinds.png"
fi
