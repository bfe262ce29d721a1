#!/usr/bin/python3
# simrd_compare.py - run simrd, the DTR simulator, on a DTR log at given
# heuristics and budget ratios, in the settings of its run_pareto (issue
# 37; docs/speed-figures.md, "The serial replay above 4,096 storages"),
# and print one CSV row a point in the columns of `gpumemsim dtr --csv`,
# plus simrd's wall and CPU seconds for the point. With --gpumemsim it
# also runs our replay on each point, times it, and says whether the two
# rows are equal field by field.
#
#   /usr/bin/python3 validate/simrd_compare.py LOG [--simrd DIR]
#       [--heuristics dtr,msps] [--ratios 0.9,0.8,0.5] [--timeout S]
#       [--gpumemsim build/gpumemsim]
#
# DIR is the simrd/ subdirectory of uwsampl/dtr-prototype (commit eff53cc,
# the one /work/shared/dtr-semantics.md reads; it needs python3-attr), or
# $SIMRD; without it the script says so and exits 0 (skipped).
#
# simrd's settings, from simrd/simrd_experiments/eval/pareto/run.py
# (run_pareto, run_pareto_paper): the baseline is
#   rt = RuntimeV1(math.inf, Heuristic(), stats=False, trace=False)
# its peak rt.telemetry.summary['max_memory'] and compute
# summary['model_compute']; each point is
#   budgets = [int(baseline_memory * r) for r in ratios]
#   remat_limit = baseline_compute * (overhead_limit - 1)   # 2.0
#   RuntimeV2EagerOptimized(budget, heuristic, remat_limit=..., trace=False,
#                           stats=False)
# run as simrd_experiments/pareto.py's safe_callback does (MemoryError is
# OOM, RematExceededError thrash). Its wall time is measured around the
# callback alone, as safe_callback's total_time is (parsing and the
# baseline not included).
#
# The counters simrd does not keep itself are counted by a subclass that
# adds one call a compute and an eviction: remat_ops (the _compute calls
# with rematerialize=True: nested rematerializations and the pins' final
# rematerializations), evictions_heuristic (the _evict calls under _free)
# and evictions_eager_release (the others: RuntimeV2EagerOptimized.release).
import argparse
import math
import os
import resource
import signal
import subprocess
import sys
import time

HEURISTICS = {"dtr": "DTR", "msps": "MSPS", "lru": "LRU",
              "largest": "LargestStorage", "dtr-eqclass": "DTREqClass"}
COLUMNS = ["trace", "heuristic", "budget_bytes", "status", "overhead",
           "clock_end", "baseline_peak_bytes", "baseline_compute_ns",
           "remat_compute_ns", "remat_ops", "evictions_heuristic",
           "evictions_eager_release", "max_memory_bytes"]


class Timeout(Exception):
    pass


def find_simrd(arg):
    for d in filter(None, [arg, os.environ.get("SIMRD")]):
        if os.path.isfile(os.path.join(d, "simrd", "runtime", "v2.py")):
            return d
    return None


def cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def counting_runtime(base):
    class Counting(base):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            self.n_remat = 0
            self.n_evict_heuristic = 0
            self.n_evict_release = 0
            self.in_free = False

        def _compute(self, t, rematerialize=True):
            if rematerialize:
                self.n_remat += 1
            return super()._compute(t, rematerialize=rematerialize)

        def _free(self, size):
            self.in_free = True
            try:
                super()._free(size)
            finally:
                self.in_free = False

        def _evict(self, s):
            if self.in_free:
                self.n_evict_heuristic += 1
            else:
                self.n_evict_release += 1
            super()._evict(s)
    return Counting


def on_alarm(signum, frame):
    raise Timeout()


def run_simrd(callback, rt_class, heuristic, budget, remat_limit, timeout,
              RematExceededError):
    rt = rt_class(budget, heuristic, remat_limit=remat_limit, trace=False,
                  stats=False)
    status = "ok"
    w0, c0 = time.time(), cpu_s()
    if timeout:  # CPU seconds, as the machine may be shared
        signal.setitimer(signal.ITIMER_PROF, timeout)
    try:
        callback(rt)
    except MemoryError:
        status = "OOM"
    except RematExceededError:
        status = "thrash"
    except Timeout:
        status = "timeout"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return rt, status, time.time() - w0, cpu_s() - c0


def run_ours(gpumemsim, log, h, ratio):
    w0 = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([gpumemsim, "dtr", log, "--heuristic", h,
                          "--ratio", repr(ratio), "--csv"],
                         capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = out.strip().split("\n")
    if lines[0].split(",") != COLUMNS:
        sys.exit("simrd_compare.py: %s dtr --csv printed the columns %s, "
                 "not %s" % (gpumemsim, lines[0], ",".join(COLUMNS)))
    cpu = (after.ru_utime + after.ru_stime) - \
        (before.ru_utime + before.ru_stime)
    return lines[1].split(","), time.time() - w0, cpu


def same(a, b):
    """Field by field: overhead as a double (both print it round-trip),
    the others as text."""
    for k, x, y in zip(COLUMNS, a, b):
        if k == "overhead":
            if float(x) != float(y):
                return False
        elif x != y:
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--simrd", help="the simrd/ directory of dtr-prototype "
                    "(default: $SIMRD)")
    ap.add_argument("--heuristics", default="dtr,msps")
    ap.add_argument("--ratios", default="0.9,0.8,0.5")
    ap.add_argument("--timeout", type=int, default=0,
                    help="CPU seconds a simrd point may take (0: no limit); "
                    "status `timeout` and `exact` `cut off` past it")
    ap.add_argument("--gpumemsim", help="also run this gpumemsim's dtr "
                    "replay on each point and compare")
    a = ap.parse_args()
    d = find_simrd(a.simrd)
    if d is None:
        print("simrd_compare.py: simrd not found (give --simrd DIR or $SIMRD: "
              "the simrd/ directory of uwsampl/dtr-prototype); skipped",
              file=sys.stderr)
        return 0
    sys.path.insert(0, d)
    from simrd.heuristic import Heuristic
    import simrd.heuristic as heuristics
    from simrd.parse import parse_file
    from simrd.runtime import (RuntimeV1, RuntimeV2EagerOptimized,
                               RematExceededError)
    hs = a.heuristics.split(",")
    for h in hs:
        if h not in HEURISTICS:
            sys.exit("simrd_compare.py: unknown heuristic '%s' (%s)" %
                     (h, ", ".join(HEURISTICS)))
    ratios = [float(r) for r in a.ratios.split(",")]
    signal.signal(signal.SIGPROF, on_alarm)
    sys.setrecursionlimit(1000000)  # simrd's _materialize recurses

    t0 = time.time()
    with open(a.log) as f:
        callback = parse_file(f, start=True).get_closure()
    parse_s = time.time() - t0
    rt = RuntimeV1(math.inf, Heuristic(), stats=False, trace=False)
    t0 = time.time()
    callback(rt)
    base_s = time.time() - t0
    peak = rt.telemetry.summary["max_memory"]
    compute = rt.telemetry.summary["model_compute"]
    remat_limit = compute * (2.0 - 1)
    print("# %s: simrd parse %.3f s, baseline %.3f s, peak %d B, compute "
          "%d ns" % (a.log, parse_s, base_s, peak, compute), flush=True)
    cols = ["source"] + COLUMNS + ["wall_s", "cpu_s"]
    if a.gpumemsim:
        cols += ["exact"]
    print(",".join(cols), flush=True)
    rt_class = counting_runtime(RuntimeV2EagerOptimized)
    name = os.path.basename(a.log)
    for h in hs:
        for r in ratios:
            budget = int(peak * r)
            rt, status, wall, cpu = run_simrd(
                callback, rt_class, getattr(heuristics, HEURISTICS[h])(),
                budget, remat_limit, a.timeout, RematExceededError)
            s = rt.telemetry.summary
            row = [name, h, str(budget), status, repr(rt.clock / compute),
                   str(rt.clock), str(peak), str(compute),
                   str(s["remat_compute"]), str(rt.n_remat),
                   str(rt.n_evict_heuristic), str(rt.n_evict_release),
                   str(s["max_memory"])]
            out = ["simrd"] + row + ["%.3f" % wall, "%.3f" % cpu]
            if not a.gpumemsim:
                print(",".join(out), flush=True)
                continue
            ours, owall, ocpu = run_ours(a.gpumemsim, a.log, h, r)
            ok = "yes" if status != "timeout" and same(row, ours) else (
                "cut off" if status == "timeout" else "no")
            print(",".join(out + [ok]), flush=True)
            print(",".join(["gpumemsim"] + ours +
                           ["%.3f" % owall, "%.3f" % ocpu, ok]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
