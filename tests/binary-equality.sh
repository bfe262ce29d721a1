#!/bin/sh
# binary-equality.sh - a change that must not move a result (issue 18's
# speed work): run each experiment given (default: every
# configs/experiments/*.yaml) with two binaries, the old one built from a
# reference commit and the new one, and cmp every data file of the two
# result sets: summary.csv, runs.json (less its "gpumemsim" version line,
# which names the commit), tuning.csv, plot.dat. The images are not
# compared: a change of plot terminal redraws them from the same data.
# Both run with GPUMEMSIM_HOME at this checkout, so that runs.json names
# the same hardware profile path. Experiments whose inputs are absent
# (../shared/data/dtr) are skipped.
#
#   OLD=/tmp/ref/build/gpumemsim tests/binary-equality.sh [EXP.yaml...]
#   env: OLD (required), NEW (build/gpumemsim), JOBS (-j per run, 2),
#        TMPDIR
# To build the reference: git archive REF | tar -x -C DIR; make -C DIR
set -eu
NEW=${NEW:-build/gpumemsim}
JOBS=${JOBS:-2}
[ -n "${OLD:-}" ] || { echo "binary-equality: set OLD=path/to/old/gpumemsim"; exit 2; }
[ $# -gt 0 ] || set -- configs/experiments/*.yaml
GPUMEMSIM_HOME=$(pwd)
export GPUMEMSIM_HOME
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gms-bineq-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
for exp in "$@"; do
	name=$(basename "$exp" .yaml)
	if grep -q 'shared/data/dtr' "$exp" && [ ! -d ../shared/data/dtr ]; then
		echo "skip $name (../shared/data/dtr absent)"
		continue
	fi
	"$OLD" run "$exp" --out "$tmp/$name/old" -j "$JOBS" --quiet \
		>/dev/null 2>&1 || true
	"$NEW" run "$exp" --out "$tmp/$name/new" -j "$JOBS" --quiet \
		>/dev/null 2>&1 || true
	bad=""
	n=0
	for f in summary.csv runs.json tuning.csv plot.dat; do
		a=$tmp/$name/old/$f b=$tmp/$name/new/$f
		[ -e "$a" ] || [ -e "$b" ] || continue
		n=$((n + 1))
		if [ "$f" = runs.json ]; then
			grep -v '^"gpumemsim":' "$a" >"$a.cmp" 2>/dev/null || true
			grep -v '^"gpumemsim":' "$b" >"$b.cmp" 2>/dev/null || true
			a=$a.cmp b=$b.cmp
		fi
		cmp -s "$a" "$b" || bad="$bad $f"
	done
	if [ "$n" -eq 0 ]; then
		echo "FAIL $name: no result files"
		fail=1
	elif [ -n "$bad" ]; then
		echo "FAIL $name:$bad differ"
		fail=1
	else
		echo "ok   $name ($n files identical)"
	fi
done
exit $fail
