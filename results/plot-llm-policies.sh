#!/bin/sh
# plot-llm-policies.sh - tokens/s against the largest batch, one panel per
# GPU, from the summary.csv of the llm-policies*.yaml experiments (issue
# 32; docs/offload.md). Each point is one (model, policy): x its largest
# batch (max_batch), y samples_per_s x SEQ tokens/s; a policy that fits no
# batch is left out. Needs gnuplot and awk.
#
#   results/plot-llm-policies.sh OUT.png DIR... [-- SEQ]
#
# DIR: a run's output directory (holding summary.csv), e.g.
#   for e in llm-policies llm-policies-l4 llm-policies-a100 \
#            llm-policies-h100 llm-policies-gh200; do
#     build/gpumemsim run configs/experiments/$e.yaml --quiet; done
#   results/plot-llm-policies.sh results/llm-policies.png results/llm-policies*
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUT.png DIR..." >&2; exit 2; }
out=$1; shift
seq=2048
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for d in "$@"; do
	[ -f "$d/summary.csv" ] || { echo "$0: $d/summary.csv: not found" >&2; exit 1; }
	n=$((n + 1))
	# the hardware profile's name from runs.json's settings, else the dir
	hw=$(grep -o '"hw":{"name":"[^"]*"' "$d/runs.json" 2>/dev/null | head -1 | sed 's/.*:"//; s/"$//')
	[ -n "$hw" ] || hw=$(basename "$d")
	echo "$hw" > "$tmp/title$n"
	# columns by name; a policy label with a comma is quoted (RFC 4180,
	# as exp_csv_str writes it): split on the commas outside quotes
	awk -v seq="$seq" -v out="$tmp/p$n" '
	function split_csv(line, f,    i, ch, q, k, cell) {
		k = 1; cell = ""; q = 0
		for (i = 1; i <= length(line); i++) {
			ch = substr(line, i, 1)
			if (ch == "\"") { q = !q; continue }
			if (ch == "," && !q) { f[k++] = cell; cell = ""; continue }
			cell = cell ch
		}
		f[k] = cell
		return k
	}
	NR == 1 { m = split_csv($0, h); for (i = 1; i <= m; i++) c[h[i]] = i; next }
	{
		split_csv($0, f)
		if (f[c["max_batch"]] + 0 < 1) next
		printf "%s %s\n", f[c["max_batch"]], f[c["samples_per_s"]] * seq >> (out "_" f[c["workload"]])
		printf "%s %s %s\n", f[c["max_batch"]], f[c["samples_per_s"]] * seq, f[c["policy"]] >> (out "_lab")
	}' "$d/summary.csv"
done
{
	echo "set terminal pngcairo size $((480 * n)),520 noenhanced"
	echo "set output '$out'"
	echo "set multiplot layout 1,$n title 'tokens/s against the largest batch (seq $seq, bf16 autocast, AdamW)'"
	echo "set xlabel 'largest batch'; set ylabel 'tokens/s'; set grid"
	echo "set key bottom right; set xrange [0:*]; set yrange [0:*]; set offsets 0, graph 0.25, graph 0.05, 0"
	i=1
	while [ $i -le $n ]; do
		echo "set title '$(cat "$tmp/title$i")'"
		echo "unset label"
		if [ -f "$tmp/p${i}_lab" ]; then
			awk '{ printf "set label \"%s\" at %s,%s offset 0.5,0.3 font \",8\"\n", $3, $1, $2 }' "$tmp/p${i}_lab"
		fi
		plots=""
		for f in "$tmp/p${i}"_*; do
			case $f in *_lab) continue ;; esac
			w=${f#"$tmp/p${i}_"}
			plots="$plots${plots:+, }'$f' using 1:2 with points pt 7 ps 1.5 title '$w'"
		done
		[ -n "$plots" ] && echo "plot $plots" || echo "plot NaN notitle"
		i=$((i + 1))
	done
	echo "unset multiplot"
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
echo "$out"
