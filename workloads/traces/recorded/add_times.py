#!/usr/bin/python3
# add_times.py IN.log OUT.log - give every CALL and MUTATE of a
# gpumemsim-record log a synthetic TIME. The recorder runs on torch's meta
# device and records no TIME (issue 35), and the serial DTR replay
# (`gpumemsim dtr`) reads a missing TIME as 0: every score is then 0 and
# the thrash limit (the baseline compute) is 0, which it never passes. For
# measuring the replay's speed only (issue 37), not its results: TIME =
# the bytes of the op's SHAPES (arguments and results) at 10 bytes per ns,
# at least 1 ns. The lines are written back with sorted keys, as the
# recorder writes them.
import json
import re
import sys

SIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2,
        "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
        "bool": 1}


def nbytes(shape):
    m = re.fullmatch(r"([a-z0-9]+)\[([0-9b,]*)\]", shape)
    if not m or m.group(1) not in SIZE:
        sys.exit("add_times.py: cannot read the shape '%s'" % shape)
    n = 1
    for d in filter(None, m.group(2).split(",")):
        n *= int(d.rstrip("b"))
    return n * SIZE[m.group(1)]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: add_times.py IN.log OUT.log")
    with open(sys.argv[1]) as f, open(sys.argv[2], "w") as g:
        for line in f:
            x = json.loads(line)
            if x["INSTRUCTION"] in ("CALL", "MUTATE") and "TIME" not in x:
                b = sum(nbytes(s) for s in x.get("SHAPES", []))
                x["TIME"] = str(max(1, b // 10))
            g.write(json.dumps(x, separators=(",", ":"), sort_keys=True)
                    + "\n")


main()
