#!/bin/sh
# steal-balance.sh - how evenly `plan --steal` shares an experiment's work
# over N shards on a cluster (issue 37), measured without one: one
# machine's N shards are timed by how the kernel shares its cores, not
# by the plan. The shipped binary runs the experiment as shard 0 of a
# plan of 1 under callgrind, which dumps its instruction count before and
# after each task (point, search or efficiency row), so each task's cost
# is measured; then for each N the plan of N with stealing is made and
# its shards are played out with those costs: all start together at one
# speed, and each, when free, claims the next unclaimed task in its own
# order (shd_order: its own by the plan's bound, then the others' of the
# workloads it builds, then the rest, each grouped by workload). A
# shard's work is the sum of the tasks it ran (the builds are inside the
# first task of each workload, once, as in the plan of 1). Prints per N
# the slowest shard's work over the mean, for the plan alone (static,
# `plan` without --steal) and with stealing, and the bound no schedule
# beats: the largest task over the mean (a task runs whole in one shard).
#
#   tests/steal-balance.sh EXP.yaml [N...]     (default N: 4 16)
#   env: BIN (build/gpumemsim), TMPDIR; needs valgrind and python3
set -eu
BIN=${BIN:-build/gpumemsim}
[ $# -ge 1 ] || { echo "usage: tests/steal-balance.sh EXP.yaml [N...]"; exit 2; }
EXP=$1; shift
[ $# -gt 0 ] || set -- 4 16
command -v valgrind >/dev/null || { echo "steal-balance: needs valgrind"; exit 2; }
d=$(mktemp -d "${TMPDIR:-/tmp}/gms-steal-XXXXXX")
trap 'rm -rf "$d"' EXIT
$BIN plan "$EXP" --shards 1 --out "$d/p1" -q >/dev/null
f=""
for t in point_task max_batch_task best_task min_pool_task eff_task; do
	f="$f --dump-before=$t --dump-after=$t"
done
valgrind --tool=callgrind --callgrind-out-file="$d/cg" $f "$BIN" run "$EXP" \
	--shard 0/1 --plan "$d/p1/plan-of-1.plan" --out "$d/s1" -j 1 -q \
	>/dev/null 2>&1
$BIN merge "$d/s1" --out "$d/m1" -q >/dev/null
for n in "$@"; do
	$BIN plan "$EXP" --shards "$n" --steal --out "$d/p$n" -q >/dev/null
done
python3 - "$d" "$(basename "$EXP" .yaml)" "$@" <<'PY'
import csv, glob, sys
d, name, Ns = sys.argv[1], sys.argv[2], [int(x) for x in sys.argv[3:]]
def plan(path):
    """(owner, bound) of each task of a plan file (shard.h)."""
    L = open(path).read().split('\n'); i = 0; t = []
    while i < len(L):
        if (L[i].startswith('shard ') and i + 2 < len(L)
                and L[i + 1].startswith('cost ') and L[i + 2].startswith('bound ')):
            t.append((int(L[i].split()[1]), int(L[i + 2].split()[1]))); i += 3
        else:
            i += 1
    return t
# each dump: the instructions since the last one, and what triggered it
dumps = sorted(glob.glob(d + '/cg.*'), key=lambda f: int(f.rsplit('.', 1)[1]))
seg = []
for f in dumps:
    trig = cost = None
    for line in open(f):
        if line.startswith('desc: Trigger:'):
            trig = line.split(': ', 2)[-1].strip()
        if line.startswith('summary:'):
            cost = int(line.split()[1])
    if trig and trig.startswith('--dump-after='):
        seg.append(cost)
p1 = plan(d + '/p1/plan-of-1.plan'); T = len(p1)
if len(seg) != T:
    sys.exit('steal-balance: %d tasks measured, the plan has %d' % (len(seg), T))
c = [0] * T  # a plan of 1 runs its tasks by bound, largest first (ties: index)
for j, i in enumerate(sorted(range(T), key=lambda i: (-p1[i][1], i))):
    c[i] = seg[j]
rows = list(csv.DictReader(open(d + '/m1/summary.csv')))
wl = [r['workload'] for r in rows]  # summary.csv: one row a task
tot = sum(c)
out = ['%s: %d tasks, %.0f M instructions, the largest %.0f M' % (name, T, tot / 1e6, max(c) / 1e6)]
for N in Ns:
    pN = plan(d + '/p%d/plan-of-%d.plan' % (N, N))
    own = [o for o, b in pN]; bound = [b for o, b in pN]
    key = lambda i: (-bound[i], i)
    def grouped(ts):
        ts = sorted(ts, key=key); g = {}
        for i in ts:
            g.setdefault(wl[i], []).append(i)
        return [i for w in dict.fromkeys(wl[i] for i in ts) for i in g[w]]
    orders = []
    for k in range(N):
        mine = [i for i in range(T) if own[i] == k]
        built = set(wl[i] for i in mine)
        orders.append(sorted(mine, key=key)
                      + grouped([i for i in range(T) if own[i] != k and wl[i] in built])
                      + grouped([i for i in range(T) if own[i] != k and wl[i] not in built]))
    claimed = [False] * T; pos = [0] * N; t = [0.0] * N; work = [0] * N
    live = set(range(N))
    while live:
        k = min(live, key=lambda s: (t[s], s))
        while pos[k] < T and claimed[orders[k][pos[k]]]:
            pos[k] += 1
        if pos[k] == T:
            live.discard(k); continue
        i = orders[k][pos[k]]; claimed[i] = True; t[k] += c[i]; work[k] += c[i]
    static = [sum(c[i] for i in range(T) if own[i] == k) for k in range(N)]
    m = tot / N
    out.append('  N=%d: slowest/mean %.2f static, %.2f stealing; bound %.2f'
               % (N, max(static) / m, max(work) / m, max(1.0, max(c) / m)))
print('\n'.join(out))
PY
