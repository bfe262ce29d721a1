#!/usr/bin/env python3
"""validate/torch_step.py - time real PyTorch training steps on this GPU
(validate/measure-gpu.sh, step 4), for comparison with the simulator's
pytorch personality at the same network, batch and optimizer.

    python3 validate/torch_step.py [--batch 32] [--steps 10] -o OUT.csv

Writes OUT.csv (through OUT.csv.partial renamed into place):
    net,optimizer,batch,measured_ms,measured_peak_bytes
one row per network: resnet50 (torchvision, SGD with momentum 0.9, input
3x224x224, 1000 classes, cross-entropy) and bert_base (HuggingFace
BertForSequenceClassification with BertConfig()'s defaults: L12 H768 A12,
vocabulary 30522, 2 labels, sequence 128, Adam); --nets gpt2 adds
validate/torch_mechanisms.py's GPT-2 (build, below). measured_ms is the median
step time (forward, backward, optimizer step, zero_grad) over --steps steps
after 3 warm-up steps, from CUDA events (the log line also gives the
median host issue time: from before the step's first call until the host
has issued its last kernel, time.perf_counter; equal to the step time
where the host is the bottleneck); measured_peak_bytes is
torch.cuda.max_memory_allocated() over the timed steps (the caching
allocator's bytes in live blocks: what the simulator's "peak allocated"
counts), after torch.cuda.reset_peak_memory_stats().

Settings, each chosen to match what the simulator models:
  - FP32 on CUDA cores: TF32 off for cuDNN and cuBLAS
    (torch.backends.cudnn.allow_tf32 / torch.backends.cuda.matmul.allow_tf32;
    the profiles' compute model is FP32); --tf32: both on, for a profile
    fitted from TF32 measurements;
  - torch.backends.cudnn.benchmark = True: cuDNN's fastest algorithm per
    shape, as the profile's conv_algos pick the fastest measured one;
  - BERT with attn_implementation="eager": the attention that materialises
    scores and probabilities [B, heads, S, S], as the generator models
    (HuggingFace's BertSelfAttention); the default SDPA kernel keeps
    neither;
  - zero_grad(set_to_none=True) (PyTorch 2's default): gradients are freed
    between steps.
"""
import argparse
import os
import statistics
import sys
import time


def build(net, batch, dev, torch):
    """(optimizer name, model, optimizer, forward returning the loss,
    checkpointing enabler) of one network at batch on dev: the models,
    inputs and optimizers this file and validate/torch_mechanisms.py time
    (the module docstrings say which)"""
    if net == "resnet50":
        import torchvision
        model = torchvision.models.resnet50(weights=None).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = torch.randn(batch, 3, 224, 224, device=dev)
        y = torch.randint(0, 1000, (batch,), device=dev)
        loss_fn = torch.nn.CrossEntropyLoss()

        def enable_ckpt():
            from torch.utils.checkpoint import checkpoint

            class Ckpt(torch.nn.Module):
                def __init__(self, inner):
                    super().__init__()
                    self.inner = inner

                def forward(self, t):
                    return checkpoint(self.inner, t, use_reentrant=False)
            for name in ("layer1", "layer2", "layer3", "layer4"):
                seq = getattr(model, name)
                for i in range(len(seq)):
                    seq[i] = Ckpt(seq[i])
        return "momentum", model, opt, lambda: loss_fn(model(x), y), enable_ckpt
    if net == "bert_base":
        from transformers import BertConfig, BertForSequenceClassification
        cfg = BertConfig(num_labels=2, attn_implementation="eager")
        model = BertForSequenceClassification(cfg).to(dev)
        impl = getattr(model.config, "_attn_implementation", "?")
        if impl != "eager":
            raise RuntimeError(f"attention implementation {impl}, not eager")
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        ids = torch.randint(0, cfg.vocab_size, (batch, 128), device=dev)
        y = torch.randint(0, 2, (batch,), device=dev)
        return ("adam", model, opt,
                lambda: model(input_ids=ids, labels=y).loss,
                lambda: model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False}))
    if net == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(attn_implementation="eager")
        model = GPT2LMHeadModel(cfg).to(dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        ids = torch.randint(0, cfg.vocab_size, (batch, 1024), device=dev)
        return ("adam", model, opt,
                lambda: model(input_ids=ids, labels=ids).loss,
                lambda: model.gradient_checkpointing_enable(
                    gradient_checkpointing_kwargs={"use_reentrant": False}))
    raise ValueError(net)


def step_fn(net, batch, dev, torch):
    """(optimizer name, model, one training step) of build's network"""
    opt_name, model, opt, fwd, _ = build(net, batch, dev, torch)
    model.train()

    def step():
        fwd().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return opt_name, model, step


def profile_step(step, path, torch):
    """One more step under torch.profiler (CUDA activity): its kernels
    by total device time, written through path.partial."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    avg = prof.key_averages()
    # torch >= 2.4 names it device_time_total (cuda_time_total before)
    key = ("device_time_total" if avg and hasattr(avg[0], "device_time_total")
           else "cuda_time_total")
    table = avg.table(sort_by=key, row_limit=60, max_name_column_width=90)
    with open(path + ".partial", "w") as f:
        f.write(table + "\n")
    os.replace(path + ".partial", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--nets", default="resnet50,bert_base")
    ap.add_argument("--tf32", action="store_true",
                    help="TF32 Tensor Cores for cuDNN and cuBLAS (for a "
                    "profile fitted with --precision tf32 from "
                    "calibrate-gpu --tf32)")
    ap.add_argument("--profile", metavar="PREFIX",
                    help="also write PREFIX-NET.txt: torch.profiler's "
                    "table of one more step's CUDA kernels (name, calls, "
                    "total device time), to set beside the simulator's "
                    "per-op prediction (simulate --trace)")
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("torch_step: no CUDA GPU found; nothing measured")
        return 0
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    rows = []
    for net in a.nets.split(","):
        try:
            opt, model, step = step_fn(net, a.batch, dev, torch)
        except Exception as e:  # a missing package: say so, go on
            print(f"torch_step: {net}: not measured: {e!r}")
            continue
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        times, host = [], []
        for _ in range(a.steps):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            h0 = time.perf_counter()
            step()
            host.append((time.perf_counter() - h0) * 1e3)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        peak = torch.cuda.max_memory_allocated()
        if a.profile:
            profile_step(step, f"{a.profile}-{net}.txt", torch)
        rows.append((net, opt, a.batch, statistics.median(times), peak))
        print(f"torch_step: {net} batch {a.batch}: "
              f"{statistics.median(times):.3f} ms, peak {peak} B, "
              f"host issue {statistics.median(host):.3f} ms "
              f"(torch {torch.__version__}, {torch.cuda.get_device_name()})")
        del model, step
        torch.cuda.empty_cache()
    tmp = a.o + ".partial"
    with open(tmp, "w") as f:
        f.write("net,optimizer,batch,measured_ms,measured_peak_bytes\n")
        for r in rows:
            f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.4f},{r[4]}\n")
    os.replace(tmp, a.o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
