#!/bin/sh
# examples/parallel/sweep.sh - an experiment as N shards on one machine
# through GNU parallel (apt-get install parallel), then the merge
# (README, "Sweeps on a cluster"). From the repository root:
#
#   examples/parallel/sweep.sh configs/experiments/max-batch.yaml 4 results/mb
#
# The result set in OUT is byte-identical to `gpumemsim run EXP --out OUT`.
# (On one machine `run -j` does the same with threads; this is the
# pattern for machines that share a file system: `parallel -S host1,host2`.)
set -eu
EXP=${1:?usage: sweep.sh EXP.yaml N OUT}
N=${2:?usage: sweep.sh EXP.yaml N OUT}
OUT=${3:?usage: sweep.sh EXP.yaml N OUT}
BIN=${BIN:-build/gpumemsim}
# the baselines once, and the slices (docs/sweeps.md, "A plan step")
"$BIN" plan "$EXP" --shards "$N" --out "$OUT" --quiet
# a shard that had failed runs exits 1 but still writes its file: merge
# decides (it names any shard that is missing)
parallel --halt never "$BIN" run "$EXP" --out "$OUT" --quiet -j 1 \
	--shard {}/"$N" --plan "$OUT/plan-of-$N.plan" \
	::: $(seq 0 $((N - 1))) || true
exec "$BIN" merge "$OUT"
