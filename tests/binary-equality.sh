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
# PROBES=answer compares what a search found, not how: for a change of
# search that may run other batches for the same answers (the max-batch
# search, issue 18), the `probes` and `baseline_probes` columns of the
# CSV files and every probe of runs.json but the answer's (the batch of
# its "answer" or "baseline_max_batch") are left out; the answer's probe,
# its summary row and everything else are still compared byte for byte.
#
#   OLD=/tmp/ref/build/gpumemsim tests/binary-equality.sh [EXP.yaml...]
#   env: OLD (required), NEW (build/gpumemsim), JOBS (-j per run, 2),
#        PROBES (all: every probe, the default; answer), TMPDIR
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
PROBES=${PROBES:-all}
# csv_drop FILE: FILE without its probes and baseline_probes columns
# (fields split on commas outside double quotes, as exp_csv_str quotes)
csv_drop() {
	awk '
	function split_csv(line, f,   n, i, c, q, cur) {
		n = 0; q = 0; cur = ""
		for (i = 1; i <= length(line); i++) {
			c = substr(line, i, 1)
			if (c == "\"") q = !q
			if (c == "," && !q) { f[++n] = cur; cur = "" }
			else cur = cur c
		}
		f[++n] = cur
		return n
	}
	{
		n = split_csv($0, f)
		if (NR == 1)
			for (i = 1; i <= n; i++)
				drop[i] = f[i] == "probes" || f[i] == "baseline_probes"
		out = ""
		for (i = 1; i <= n; i++)
			if (!drop[i]) out = out (out == "" && i == 1 ? "" : ",") f[i]
		print out
	}' "$1"
}
# json_drop FILE: runs.json less its version line and, but for the
# answer'"'"'s, its probes (one a line, "  {" ...); the end of each list kept
json_drop() {
	awk '
	/^"gpumemsim":/ { next }
	{
		if (match($0, /"(answer|baseline_max_batch)":[0-9]+/)) {
			a = substr($0, RSTART, RLENGTH); sub(/.*:/, "", a); ans = a
		}
	}
	/^  \{/ {
		b = $0
		if (match(b, /"batch":[0-9]+/)) {
			b = substr(b, RSTART + 8, RLENGTH - 8)
		}
		t = $0
		match(t, /\}[],}]*$/)
		tail = substr(t, RSTART + 1)
		body = substr(t, 1, RSTART)
		if (b == ans) print body
		if (tail ~ /]/) print tail
		next
	}
	{ print }' "$1"
}
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
		if [ "$f" = runs.json ] && [ "$PROBES" = answer ]; then
			json_drop "$a" >"$a.cmp" 2>/dev/null || true
			json_drop "$b" >"$b.cmp" 2>/dev/null || true
			a=$a.cmp b=$b.cmp
		elif [ "$f" = runs.json ]; then
			grep -v '^"gpumemsim":' "$a" >"$a.cmp" 2>/dev/null || true
			grep -v '^"gpumemsim":' "$b" >"$b.cmp" 2>/dev/null || true
			a=$a.cmp b=$b.cmp
		elif [ "$PROBES" = answer ] && [ "${f%.csv}" != "$f" ]; then
			csv_drop "$a" >"$a.cmp" 2>/dev/null || true
			csv_drop "$b" >"$b.cmp" 2>/dev/null || true
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
