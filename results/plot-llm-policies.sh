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
here=$(cd "$(dirname "$0")" && pwd)
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
	# columns by name, split by csv2tsv.awk (a policy label with a comma
	# is quoted: checkpoint(mode=blocks,every=1))
	awk -f "$here/csv2tsv.awk" "$d/summary.csv" | awk -F'\t' -v seq="$seq" -v out="$tmp/p$n" '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	{
		if ($c["max_batch"] + 0 < 1) next
		printf "%s %s\n", $c["max_batch"], $c["samples_per_s"] * seq >> (out "_" $c["workload"])
		printf "%s %s %s\n", $c["max_batch"], $c["samples_per_s"] * seq, $c["policy"] >> (out "_lab")
	}'
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
