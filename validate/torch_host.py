#!/usr/bin/env python3
"""validate/torch_host.py - the host time PyTorch's eager mode spends per
operator, measured where the device is not the bottleneck (issue 30: a
TF32 BERT step's kernels sum to about half its measured time; the rest is
the host issuing them).

    python3 validate/torch_host.py [-n 5000] -o OUT.csv

OUT.csv: case,ops,host_us_per_op,wall_us_per_op; each case issues -n
operators on tiny CUDA tensors (one element: each kernel runs for a few
microseconds at most), host_us_per_op the time until the host has issued
them all (time.perf_counter, no synchronisation inside) over -n, and
wall_us_per_op the same until the device has finished them. Where the host
is the bottleneck the two agree, and the figure is the host's cost per
operator: Python, the dispatcher, autograd's recording, the caching
allocator and the launch together. Cases:

  launch_only      torch.add(x, 1, out=y): dispatcher and launch, no
                   allocation, no autograd
  op_alloc         y = x + 1: an output allocated (caching allocator)
  op_autograd      y = x * 2 with x.requires_grad: the forward op with its
                   autograd node recorded
  linear_fwd_bwd   a tiny nn.Linear's forward and backward with the
                   gradient accumulated (per kernel launched: the
                   profiler-free count is 1 forward GEMM + bias, 2 GEMMs
                   and a reduction backward; reported per call here)
  pack_pinned      save_on_cpu(pin_memory=True)'s own pack hook on a
                   one-element tensor: a pinned buffer from the caching
                   host allocator, a copy and its synchronisation
  unpack_pinned    its unpack hook: tensor.to(device, non_blocking=True)
  backward_node    autograd's backward of a chain of 100 y * 2 nodes,
                   per node (the engine's C++ thread: no Python per node;
                   102 nodes a chain with its sum and AccumulateGrad, each
                   backward() call's own start-up spread over them)
The median of 5 rounds after one warm-up round.
"""
import argparse
import statistics
import sys
import time

from torch_mechanisms import write


def measure(fn, n, torch):
    rounds = []
    for r in range(6):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        if r:
            rounds.append(((t1 - t0) * 1e6 / n, (t2 - t0) * 1e6 / n))
    return (statistics.median(h for h, _ in rounds),
            statistics.median(w for _, w in rounds))


def backward_nodes(torch, dev, chains=50, depth=100):
    """backward_node: per node, the median over 5 rounds (after one) of
    the backward of `chains` chains of `depth` y * 2 nodes and their
    sum, built before the clock starts"""
    x = torch.ones(1, device=dev, requires_grad=True)
    rounds = []
    for r in range(6):
        ends = []
        for _ in range(chains):
            y = x
            for _ in range(depth):
                y = y * 2
            ends.append(y.sum())
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for e in ends:
            e.backward()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        n = chains * (depth + 2)  # SumBackward, the muls, AccumulateGrad
        if r:
            rounds.append(((t1 - t0) * 1e6 / n, (t2 - t0) * 1e6 / n))
    return (statistics.median(h for h, _ in rounds),
            statistics.median(w for _, w in rounds))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("torch_host: no CUDA GPU found; nothing measured")
        return 0
    dev = torch.device("cuda")
    x = torch.ones(1, device=dev)
    y = torch.empty(1, device=dev)
    xg = torch.ones(1, device=dev, requires_grad=True)
    lin = torch.nn.Linear(4, 4).to(dev)
    xin = torch.ones(2, 4, device=dev)

    def linear_fwd_bwd():
        lin(xin).sum().backward()
    hooks = torch.autograd.graph.save_on_cpu(pin_memory=True)
    packed = hooks.pack_hook(x)
    cases = [("launch_only", lambda: torch.add(x, 1, out=y)),
             ("op_alloc", lambda: x + 1),
             ("op_autograd", lambda: xg * 2),
             ("linear_fwd_bwd", linear_fwd_bwd),
             ("pack_pinned", lambda: hooks.pack_hook(x)),
             ("unpack_pinned", lambda: hooks.unpack_hook(packed))]
    rows = []
    for name, fn in cases:
        n = a.n if name not in ("linear_fwd_bwd", "pack_pinned") \
            else a.n // 10
        h, w = measure(fn, n, torch)
        rows.append((name, n, h, w))
        print(f"torch_host: {name}: host {h:.2f} us/op, wall {w:.2f} us/op "
              f"({n} ops; torch {torch.__version__})", flush=True)
    h, w = backward_nodes(torch, dev)
    rows.append(("backward_node", 102 * 50, h, w))
    print(f"torch_host: backward_node: host {h:.2f} us/node, wall {w:.2f} "
          f"us/node", flush=True)
    write(a.o, "case,ops,host_us_per_op,wall_us_per_op", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
