#!/usr/bin/env python3
"""validate/torch_mechanisms.py - time PyTorch's own memory mechanisms on
this GPU (issue 30), beside the simulator's policies that model them:

  mechanism           PyTorch                                  gpumemsim
  none                a plain step (validate/torch_step.py's)  --policy framework
  checkpoint_blocks   torch.utils.checkpoint(use_reentrant=    --policy checkpoint
                      False) around every block                --set mode=blocks
  save_on_cpu_pinned  torch.autograd.graph.save_on_cpu(        --policy offload
                      pin_memory=True) around the forward      --set pin_memory=true
  save_on_cpu         the same with pin_memory=False           --policy offload

    python3 validate/torch_mechanisms.py [--batch 32] [--gpt2-batch 8]
        [--steps 10] [--nets resnet50,bert_base,gpt2] -o OUT.csv
        [--steps-out STEPS.csv]
    python3 validate/torch_mechanisms.py --count-packs -o PACKS.csv
        (what save_on_cpu would copy in one step: count_packs, below)

OUT.csv: net,optimizer,batch,mechanism,measured_ms,measured_peak_bytes,
host_pinned_peak_bytes; measured_ms is the median step over --steps timed
steps after 3 warm-up steps (CUDA events around forward, backward,
optimizer step and zero_grad), measured_peak_bytes
torch.cuda.max_memory_allocated() over the timed steps, and
host_pinned_peak_bytes the pinned host allocator's peak
(torch.cuda.host_memory_stats(), where this torch has it; empty if not).
STEPS.csv: every step's time, warm-ups included (step 0 is the first step
of the mechanism in this process): the pinned host pool
(CachingHostAllocator) grows in the first steps of save_on_cpu(pin_memory=
True) and is reused after, which is what the simulator's pinned-allocation
cost must reproduce.

Blocks, as the generators number them (wl_op.block): ResNet-50's 16
torchvision Bottleneck modules (layer1..layer4), BERT-base's 12
encoder.layer modules and GPT-2's 12 transformer.h modules, through
HuggingFace's gradient_checkpointing_enable(use_reentrant=False), which
wraps each layer's __call__ in torch.utils.checkpoint.checkpoint.

Settings as validate/torch_step.py (FP32, TF32 off, cudnn.benchmark, eager
attention, zero_grad(set_to_none=True)); GPT-2 is HuggingFace's
GPT2LMHeadModel with GPT2Config()'s defaults (12 layers, hidden 768, 12
heads, vocabulary 50257, tied lm_head), sequence 1024, Adam, its own
shifted cross-entropy loss. The processes run one network each, the
mechanisms in the order above, so the pinned pool starts empty at
save_on_cpu_pinned's first step.
"""
import argparse
import os
import statistics
import subprocess
import sys

from torch_step import build

MECHANISMS = ["none", "checkpoint_blocks", "save_on_cpu_pinned", "save_on_cpu"]


def pinned_peak(torch):
    f = getattr(torch.cuda, "host_memory_stats", None)
    if f is None:
        return ""
    try:
        st = f()
    except Exception:
        return ""
    for k in ("allocated_bytes.peak", "reserved_bytes.peak",
              "allocated_bytes.all.peak", "reserved_bytes.all.peak"):
        if k in st:
            return str(int(st[k]))
    return ""


def run_net(net, batch, steps, torch, mechanisms=None):
    dev = torch.device("cuda")
    rows, steps_rows = [], []
    for mech in mechanisms or MECHANISMS:
        opt_name, model, opt, fwd, enable_ckpt = build(net, batch, dev, torch)
        model.train()
        if mech == "checkpoint_blocks":
            enable_ckpt()

        def step():
            if mech.startswith("save_on_cpu"):
                with torch.autograd.graph.save_on_cpu(
                        pin_memory=mech.endswith("pinned")):
                    loss = fwd()
            else:
                loss = fwd()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        times = []
        for i in range(3 + steps):
            if i == 3:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            step()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        peak = torch.cuda.max_memory_allocated()
        med = statistics.median(times[3:])
        rows.append((net, opt_name, batch, mech, med, peak, pinned_peak(torch)))
        steps_rows += [(net, batch, mech, i, t) for i, t in enumerate(times)]
        print(f"torch_mechanisms: {net} batch {batch} {mech}: {med:.3f} ms, "
              f"peak {peak} B, first steps "
              + " ".join(f"{t:.1f}" for t in times[:4]), flush=True)
        del model, opt, fwd, step
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return rows, steps_rows


def count_packs(net, batch, torch):
    """What save_on_cpu would copy in one step of net: its pack hook runs
    once per tensor an op saves for backward (saved_tensors_hooks: "the
    pack_hook function will be called everytime an operation saves a
    tensor for backward"), parameters included, and copies tensor.size()
    each time (torch/autograd/graph.py, pack_to_cpu). Here the hook keeps
    the tensor and counts: packs and their bytes, distinct storages and
    their bytes (what a copy per storage would move), and the packs of
    parameters. A row: net,batch,packs,pack_bytes,storages,storage_bytes,
    param_packs,param_bytes."""
    dev = torch.device("cuda")
    _, model, _, fwd, _ = build(net, batch, dev, torch)
    model.train()
    params = {p.data_ptr() for p in model.parameters()}
    n = nbytes = pn = pbytes = 0
    stor = {}

    def pack(t):
        nonlocal n, nbytes, pn, pbytes
        b = t.numel() * t.element_size()
        n += 1
        nbytes += b
        st = t.untyped_storage()
        stor[st.data_ptr()] = st.nbytes()
        if t.data_ptr() in params:
            pn += 1
            pbytes += b
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = fwd()
    loss.backward()
    torch.cuda.synchronize()
    row = (net, batch, n, nbytes, len(stor), sum(stor.values()), pn, pbytes)
    print("torch_mechanisms: packs " + " ".join(str(v) for v in row),
          flush=True)
    del model, fwd, loss
    torch.cuda.empty_cache()
    return row


def write(path, header, rows):
    tmp = path + ".partial"
    with open(tmp, "w") as f:
        f.write(header + "\n")
        for r in rows:
            f.write(",".join(f"{v:.4f}" if isinstance(v, float) else str(v)
                             for v in r) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--gpt2-batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--nets", default="resnet50,bert_base,gpt2")
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS),
                    help="which of " + ",".join(MECHANISMS) + " to time, "
                    "in that order (default: all)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child: one net
    ap.add_argument("-o", required=True)
    ap.add_argument("--steps-out")
    ap.add_argument("--count-packs", action="store_true",
                    help="only count what save_on_cpu packs in one step "
                    "of each network (count_packs) into OUT.csv; no timing")
    a = ap.parse_args()
    mechs = a.mechanisms.split(",")
    bad = [m for m in mechs if m not in MECHANISMS]
    if bad:
        ap.error(f"--mechanisms: unknown {','.join(bad)} (known: "
                 f"{','.join(MECHANISMS)})")
    if a.one:  # child process: one network, all mechanisms
        import torch
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        b = a.gpt2_batch if a.one == "gpt2" else a.batch
        rows, srows = run_net(a.one, b, a.steps, torch, mechs)
        write(a.o, "", rows)
        write(a.o + ".steps", "", srows)
        return 0
    import torch
    if not torch.cuda.is_available():
        print("torch_mechanisms: no CUDA GPU found; nothing measured")
        return 0
    if a.count_packs:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        rows = [count_packs(net, a.gpt2_batch if net == "gpt2" else a.batch,
                            torch) for net in a.nets.split(",")]
        write(a.o, "net,batch,packs,pack_bytes,storages,storage_bytes,"
              "param_packs,param_bytes", rows)
        return 0
    rows, srows = [], []
    for net in a.nets.split(","):
        part = a.o + "." + net
        r = subprocess.run([sys.executable, __file__, "--one", net,
                            "--batch", str(a.batch), "--gpt2-batch",
                            str(a.gpt2_batch), "--steps", str(a.steps),
                            "--mechanisms", a.mechanisms,
                            "-o", part])
        if r.returncode != 0 or not os.path.exists(part):
            print(f"torch_mechanisms: {net}: not measured (exit "
                  f"{r.returncode})")
            continue
        for path, acc in ((part, rows), (part + ".steps", srows)):
            with open(path) as f:
                acc += [ln.rstrip("\n") for ln in f if ln.strip()]
            os.remove(path)
        flush(a, rows, srows)  # each network's rows as soon as measured
    flush(a, rows, srows)
    return 0


def flush(a, rows, srows):
    write(a.o, "net,optimizer,batch,mechanism,measured_ms,"
          "measured_peak_bytes,host_pinned_peak_bytes",
          [(r,) for r in rows])
    if a.steps_out:
        write(a.steps_out, "net,batch,mechanism,step,ms", [(r,) for r in srows])


if __name__ == "__main__":
    sys.exit(main())
