#!/bin/sh
# shard-equality.sh - sharded-and-merged equals unsharded (issue 18): for
# each experiment given (default: every configs/experiments/*.yaml) run it
# whole, then as N shards (default 3; SHARD_RUNNER=parallel runs them
# through GNU parallel, else one after the other), merge, and cmp every
# file of the two result sets (summary.csv, runs.json, tuning.csv,
# plot.dat, plot.png, plot.svg). `make check-shards` runs it. PLAN=1:
# `gpumemsim plan` first, and every shard runs from its plan file;
# STEAL=1 too: `plan --steal` (the shards claim tasks).
#
#   tests/shard-equality.sh [EXP.yaml...]
#   env: BIN (build/gpumemsim), N (3), JOBS (-j per run, 2),
#        SHARD_RUNNER (serial|parallel), PLAN (0|1), STEAL (0|1), TMPDIR
set -eu
BIN=${BIN:-build/gpumemsim}
N=${N:-3}
JOBS=${JOBS:-2}
RUNNER=${SHARD_RUNNER:-serial}
PLAN=${PLAN:-0}
STEAL=${STEAL:-0}
[ $# -gt 0 ] || set -- configs/experiments/*.yaml
if [ "$RUNNER" = parallel ] && ! command -v parallel >/dev/null 2>&1; then
	echo "shard-equality: GNU parallel not installed (apt-get install parallel); skipped"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gms-shard-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
for exp in "$@"; do
	name=$(basename "$exp" .yaml)
	full=$tmp/$name/full sh=$tmp/$name/shards
	out=$("$BIN" run "$exp" --out "$full" -j "$JOBS" --quiet 2>&1) || true
	case $out in
	*": skipped: "*) # third-party data absent (README "Third-party data")
		echo "skip $name: ${out#*skipped: }"; continue ;;
	esac
	last=$((N - 1))
	set --
	if [ "$PLAN" = 1 ]; then
		"$BIN" plan "$exp" --shards "$N" --out "$sh" -j "$JOBS" --quiet \
			$([ "$STEAL" = 1 ] && echo --steal) ||
			{ echo "FAIL $name: plan"; fail=1; continue; }
		set -- --plan "$sh/plan-of-$N.plan"
	fi
	if [ "$RUNNER" = parallel ]; then
		parallel -j "$JOBS" "$BIN" run "$exp" --out "$sh" -j 1 --quiet \
			--shard {}/"$N" "$@" ::: $(seq 0 $last) >/dev/null 2>&1 || true
	else
		for k in $(seq 0 $last); do
			"$BIN" run "$exp" --out "$sh" -j "$JOBS" --quiet \
				--shard "$k/$N" "$@" >/dev/null 2>&1 || true
		done
	fi
	if ! "$BIN" merge "$sh" --quiet; then
		# merge exits 1 when runs failed, as run does; the files count
		[ -f "$sh/summary.csv" ] || { echo "FAIL $name: merge"; fail=1; continue; }
	fi
	ok=1
	for f in summary.csv runs.json tuning.csv plot.dat plot.png plot.svg; do
		if [ -f "$full/$f" ] || [ -f "$sh/$f" ]; then
			cmp -s "$full/$f" "$sh/$f" || { echo "FAIL $name: $f differs"; ok=0; fail=1; }
		fi
	done
	[ ! -f "$full/summary.csv" ] && { echo "FAIL $name: no unsharded summary"; ok=0; fail=1; }
	[ $ok = 1 ] && echo "ok   $name: $N shards ($RUNNER$([ "$PLAN" = 1 ] && echo ', from a plan')$([ "$STEAL" = 1 ] && echo ', stealing')) merged = unsharded"
done
exit $fail
