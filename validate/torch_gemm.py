#!/usr/bin/env python3
"""validate/torch_gemm.py - time PyTorch's own GEMM calls at the shapes
calibrate-gpu measures (calibrate/gemm_shapes.h), in the layouts a real
training step uses, to set beside calibrate-gpu's cuBLAS rows (issue 30:
TF32 BERT's real step is far slower than the GEMM table predicts).

    python3 validate/torch_gemm.py [--batch 32] [--nets bert_base]
        [--reps 20] -o OUT.csv

OUT.csv (through OUT.csv.partial renamed into place):
    precision,shape,variant,batch,m,n,k,us
one row per shape, layout variant and precision (fp32: TF32 off; tf32:
torch.backends.cuda.matmul.allow_tf32 on), us the median over 3 rounds of
the mean of --reps calls between CUDA events, after 5 warm-up calls.
A shape is calibrate-gpu's (batch products C m x n = A m x k . B k x n);
the variants are how nn.Linear and eager attention reach cuBLAS for it:

  mm         torch.mm(A, B), both row-major contiguous: the calibration's
             product as PyTorch issues a plain matmul
  linear     F.linear(x, W) with W stored [n, k] (x W^T): nn.Linear's
             forward without bias
  linear_b   F.linear(x, W, b): with bias (addmm; cuBLASLt's bias
             epilogue where PyTorch uses it)
  mm_tn      torch.mm(A^T-view, B): A stored [k, m] and transposed, the
             weight gradient's layout (dY^T x)
  bmm        torch.matmul on [B, H, m, k] x [B, H, k, n] (attention's
             scores and context; batch = B*H)
  bmm_t      scores as eager attention computes them: Q . K^T-view

Operands are torch.randn (values matter to the tensor cores' power, as
calibrate-gpu's hashed random operands). Nothing here is an input of the
model; the CSV is read by hand beside measurements-tf32.csv.
"""
import argparse
import os
import re
import statistics
import sys

from torch_mechanisms import write

HERE = os.path.dirname(os.path.abspath(__file__))


def shapes(batch, nets):
    """calibrate/gemm_shapes.h's table at batch: (name, batch, m, n, k)"""
    src = open(os.path.join(HERE, "..", "calibrate", "gemm_shapes.h")).read()
    out = []
    for name, per, b, m, n, k in re.findall(
            r'\{"([^"]+)", (\d), (\d+), (\d+), (\d+), (\d+)\}', src):
        if name.split(".")[0] not in nets:
            continue
        dims = [int(b), int(m), int(n), int(k)]
        dims[int(per)] *= batch
        out.append((name, *dims))
    return out


def timed(fn, reps, torch):
    for _ in range(5):
        fn()
    rounds = []
    for _ in range(3):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        rounds.append(s.elapsed_time(e) * 1000.0 / reps)
    return statistics.median(rounds)


def variants(b, m, n, k, torch):
    """(variant, callable) for one shape"""
    F = torch.nn.functional
    r = lambda *s: torch.randn(*s, device="cuda")  # noqa: E731
    if b == 1:
        a, bb = r(m, k), r(k, n)
        w, bias, at = r(n, k), r(n), r(k, m)
        return [("mm", lambda: torch.mm(a, bb)),
                ("linear", lambda: F.linear(a, w)),
                ("linear_b", lambda: F.linear(a, w, bias)),
                ("mm_tn", lambda: torch.mm(at.t(), bb))]
    heads = 12 if b % 12 == 0 else 1
    a, bb = r(b // heads, heads, m, k), r(b // heads, heads, k, n)
    kt = r(b // heads, heads, n, k)
    return [("bmm", lambda: torch.matmul(a, bb)),
            ("bmm_t", lambda: torch.matmul(a, kt.transpose(-1, -2)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--nets", default="bert_base")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("torch_gemm: no CUDA GPU found; nothing measured")
        return 0
    rows = []
    for prec in ("fp32", "tf32"):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        for name, b, m, n, k in shapes(a.batch, a.nets.split(",")):
            for var, fn in variants(b, m, n, k, torch):
                us = timed(fn, a.reps, torch)
                rows.append((prec, name, var, b, m, n, k, us))
                print(f"torch_gemm: {prec} {name} {var} "
                      f"({b}x{m}x{n}x{k}): {us:.1f} us", flush=True)
    write(a.o, "precision,shape,variant,batch,m,n,k,us", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
