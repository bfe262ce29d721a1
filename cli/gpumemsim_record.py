#!/usr/bin/python3
# gpumemsim_record.py - record one PyTorch training step as a gpumemsim
# workload: the DTR JSON-lines log (workloads/wl_dtr.c, workloads/README.md
# "Recorded traces"), with the extensions of "Logs from gpumemsim-record".
#
# Run with /usr/bin/python3: Debian's python3-torch (1.13) and
# python3-torchvision (0.14), which `make deps` installs, are built for the
# system interpreter, not for a pyenv or venv python3 that may come first on
# PATH. `build/gpumemsim-record` (made by `make`) is this file.
#
# Mechanism: torch.utils._python_dispatch.TorchDispatchMode (torch 1.13).
# Its __torch_dispatch__ sees every ATen op after autograd, the ones the
# autograd engine runs for backward and the optimizer's in-place updates
# included, with real tensors: their storages, shapes and dtypes. The op
# schema says which arguments an op writes (alias_info.is_write). Releases
# are exact at op granularity: the recorder holds one reference on every
# storage it has seen and, before each op, reads each storage's reference
# count (c10::intrusive_ptr_target::refcount_, the word after the vtable
# pointer of the StorageImpl that UntypedStorage._cdata points to; torch
# 1.13 has no Python accessor for it). A count of 1 is the recorder's own
# reference: everything else let go of the storage since the previous op,
# so its handle is released there. Holding the reference also keeps the
# address from being reused while the storage is tracked. weakref.finalize
# on tensors would not be exact: autograd saves an op's outputs as new
# TensorImpls on the same storage (SavedVariable), so a tensor object can
# die while its storage lives on.
#
# Only the standard library and torch. No output is written unless the
# whole step records: the log goes to a temporary file renamed into place.
import argparse
import ctypes
import gc
import os
import sys
import tempfile

VERSION = 1

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
except ImportError as e:  # the tests skip on this message
    torch = None
    TorchDispatchMode = object
    _IMPORT_ERROR = str(e)


class RecordError(Exception):
    """A bad model, input or op: the message says which; nothing is
    written."""


def _refcount(cdata):
    # c10::intrusive_ptr_target: vptr, then std::atomic<size_t> refcount_
    return ctypes.c_size_t.from_address(cdata + 8).value


# The torch whose StorageImpl layout _refcount was checked on (Debian's
# python3-torch 1.13.0a0, c10/util/intrusive_ptr.h of v1.13: the class has
# a virtual destructor, so the vtable pointer comes first, then
# `mutable std::atomic<size_t> refcount_;`). Another version may move the
# word: the lifetimes would then be silently wrong, so it is refused.
TORCH_CHECKED = "1.13"


def check_torch(version):
    """Refuse a torch other than TORCH_CHECKED, then probe the layout: a
    view adds one reference to its storage and deleting it takes it
    back. RecordError if either fails."""
    if version.split("+")[0].split(".")[:2] != TORCH_CHECKED.split("."):
        raise RecordError(
            "torch %s is not supported: the recorder reads torch %s's "
            "storage reference count from memory "
            "(c10::intrusive_ptr_target::refcount_) to know when each "
            "tensor dies, and that layout was checked on %s only, so "
            "lifetimes could be wrong; use Debian's python3-torch %s "
            "(make deps) with /usr/bin/python3"
            % (version, TORCH_CHECKED, TORCH_CHECKED, TORCH_CHECKED))
    t = torch.empty(4)
    st = t.storage()._storage
    before = _refcount(st._cdata)
    v = t.view(2, 2)
    during = _refcount(st._cdata)
    del v
    after = _refcount(st._cdata)
    if during != before + 1 or after != before:
        raise RecordError(
            "torch %s: the storage reference count read from memory did "
            "not follow a view (%d, %d, %d; expected n, n+1, n): this "
            "build's layout differs from torch %s's"
            % (version, before, during, after, TORCH_CHECKED))


def _shape(t):
    return "%s[%s]" % (str(t.dtype).replace("torch.", ""),
                       ",".join(str(d) for d in t.shape))


class _Recorder(TorchDispatchMode):
    """Writes one log line (a dict) per DTR instruction into self.lines."""

    def __init__(self, consts):
        super().__init__()
        self.lines = []
        self.sto = {}      # storage cdata -> [UntypedStorage, handle, bytes]
        self.pinned = set()  # cdata of parameters and optimizer state
        self.n = 0
        for name, t, pinned in consts:
            try:
                key = self._key(t)
            except RecordError as e:
                raise RecordError("tensor '%s': %s" % (name, e))
            if key in self.sto:
                continue  # tied weights: one storage, one handle
            self._constant(t, name)
            if pinned:
                self.pinned.add(key)

    # ---- storages and handles ------------------------------------------
    @staticmethod
    def _key(t):
        if t.layout != torch.strided:
            raise RecordError("unsupported tensor layout %s (only dense "
                              "strided tensors are recorded)" % t.layout)
        return t.storage()._storage._cdata

    def _track(self, t, handle):
        st = t.storage()._storage
        self.sto[st._cdata] = [st, handle, st.nbytes()]
        return st.nbytes()

    def _constant(self, t, name):
        nbytes = self._track(t, name)
        self.lines.append({"INSTRUCTION": "CONSTANT", "NAME": name})
        self.lines.append({"INSTRUCTION": "MEMORY", "NAME": name,
                           "MEMORY": str(nbytes)})

    def _fresh(self, prefix):
        self.n += 1
        return "%s.%d" % (prefix, self.n)

    def poll(self):
        """Release the handle of every storage only the recorder holds."""
        dead = [k for k, v in self.sto.items()
                if k not in self.pinned and _refcount(k) == 1]
        for k in dead:  # dict order: creation order, deterministic
            self.lines.append({"INSTRUCTION": "RELEASE",
                               "NAME": self.sto[k][1]})
            del self.sto[k]

    # ---- ops -------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if func.namespace == "profiler":  # record_function's markers
            return func(*args, **kwargs)
        self.poll()
        leaves, _ = tree_flatten((args, kwargs))
        ins = [x for x in leaves if isinstance(x, torch.Tensor)]
        try:
            keys = [self._key(t) for t in ins]
        except RecordError as e:
            raise RecordError("unsupported op aten::%s: %s" % (name, e))
        for t, k in zip(ins, keys):
            if k not in self.sto:  # made outside the recorded ops
                self._constant(t, self._fresh("const"))
        written = set()
        for i, a in enumerate(func._schema.arguments):
            if a.alias_info is None or not a.alias_info.is_write:
                continue
            v = args[i] if i < len(args) else kwargs.get(a.name)
            for x in tree_flatten(v)[0]:
                if isinstance(x, torch.Tensor):
                    written.add(id(x))
        out = func(*args, **kwargs)
        outs = [x for x in tree_flatten(out)[0]
                if isinstance(x, torch.Tensor)]
        try:
            okeys = [self._key(t) for t in outs]
        except RecordError as e:
            raise RecordError("unsupported op aten::%s: %s" % (name, e))
        arg_h = [self.sto[k][1] for k in keys]
        shapes = [_shape(t) for t in ins]
        fresh = [k not in self.sto for k in okeys]
        if written and not any(fresh):
            mut = sorted({i for i, t in enumerate(ins) if id(t) in written})
            self.lines.append({"INSTRUCTION": "MUTATE", "NAME": name,
                               "ARGS": arg_h, "MUTATE": [str(i) for i in mut],
                               "SHAPES": shapes})
            return out
        for k in okeys:  # an existing storage it was not given: read it
            if k in self.sto and k not in keys:
                keys.append(k)
                arg_h.append(self.sto[k][1])
                shapes.append(_shape(outs[okeys.index(k)]))
        res, tail, views, made = [], [], [], set()
        for t, k in zip(outs, okeys):
            h = self._fresh(name)
            res.append(h)
            shapes.append(_shape(t))
            if k in self.sto and k not in made:
                alias = keys.index(k)
                views.append(h)
                nbytes = self.sto[k][2]
            elif k in made:  # a second result on a storage just made
                alias, nbytes = -1, 0
                views.append(h)
            else:
                alias, nbytes = -1, self._track(t, h)
                made.add(k)
            tail.append({"INSTRUCTION": "MEMORY", "NAME": h,
                         "MEMORY": str(nbytes)})
            tail.append({"INSTRUCTION": "ALIAS", "NAME": h,
                         "ALIAS": str(alias)})
        self.lines.append({"INSTRUCTION": "CALL", "NAME": name,
                           "ARGS": arg_h, "RESULT": res, "SHAPES": shapes})
        self.lines.extend(tail)
        for h in views:  # the storage's own handle keeps it
            self.lines.append({"INSTRUCTION": "RELEASE", "NAME": h})
        return out


# ---- the training step ----------------------------------------------------

LOSSES = ("cross_entropy", "mse", "sum")
OPTIMIZERS = ("none", "sgd", "momentum", "adam", "adamw")


def _loss(kind, out, target):
    if kind == "cross_entropy":
        return torch.nn.functional.cross_entropy(out, target)
    if kind == "mse":
        return torch.nn.functional.mse_loss(out, target)
    return out.sum()


def _target(kind, out):
    if kind == "cross_entropy":
        if out.dim() != 2:
            raise RecordError("loss cross_entropy needs a (batch, classes) "
                              "output, the model gave shape %s"
                              % list(out.shape))
        g = torch.Generator().manual_seed(1)
        return torch.randint(0, out.shape[1], (out.shape[0],), generator=g)
    if kind == "mse":
        return torch.zeros_like(out)
    return None


def _optimizer(kind, model, lr):
    params = [p for p in model.parameters() if p.requires_grad]
    if kind == "none" or not params:
        return None
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr)
    return torch.optim.Adam(params, lr=lr)


def _step(model, x, loss_kind, opt, rec=None, target=None):
    out = model(x)
    if not isinstance(out, torch.Tensor):
        raise RecordError("the model returned %s, not a tensor"
                          % type(out).__name__)
    if rec is None:
        target = _target(loss_kind, out)
    loss = _loss(loss_kind, out, target)
    del out
    if rec is not None:
        rec.lines.append({"INSTRUCTION": "ANNOTATE",
                          "ANNOTATION": "BACKWARD"})
    loss.backward()
    del loss
    if opt is not None:
        opt.step()
    return target


def record(model, input_shape, loss="cross_entropy", optimizer="momentum",
           lr=0.01, input_dtype="float32", vocab=0, note=""):
    """Record the second of two training steps of model on a random batch
    of input_shape; returns the log's lines (dicts, in order)."""
    if torch is None:
        raise RecordError("torch is not importable by %s (%s): run "
                          "`make deps` and use /usr/bin/python3"
                          % (sys.executable, _IMPORT_ERROR))
    check_torch(torch.__version__)
    if loss not in LOSSES:
        raise RecordError("unknown loss '%s' (%s)" % (loss, ", ".join(LOSSES)))
    if optimizer not in OPTIMIZERS:
        raise RecordError("unknown optimizer '%s' (%s)"
                          % (optimizer, ", ".join(OPTIMIZERS)))
    if not input_shape or any(d <= 0 for d in input_shape):
        raise RecordError("input shape %s: every dimension must be > 0"
                          % list(input_shape))
    if not isinstance(model, torch.nn.Module):
        raise RecordError("the model is a %s, not a torch.nn.Module"
                          % type(model).__name__)
    torch.manual_seed(0)
    model.train()
    g = torch.Generator().manual_seed(0)
    if input_dtype == "int64":
        if vocab <= 0:
            raise RecordError("an int64 input needs a vocabulary size > 0")
        x = torch.randint(0, vocab, tuple(input_shape), generator=g)
    elif input_dtype == "float32":
        x = torch.randn(tuple(input_shape), generator=g)
    else:
        raise RecordError("unknown input dtype '%s' (float32, int64)"
                          % input_dtype)
    opt = _optimizer(optimizer, model, lr)
    try:
        # warm-up step: the optimizer makes its state (momentum buffers)
        target = _step(model, x, loss, opt)
        model.zero_grad(set_to_none=True)
        gc.collect()
        consts = [(n, p, True) for n, p in model.named_parameters()]
        consts += [(n, b, True) for n, b in model.named_buffers()]
        if opt is not None:
            names = {id(p): n for n, p in model.named_parameters()}
            for p, st in opt.state.items():
                for k, v in sorted(st.items()):
                    if isinstance(v, torch.Tensor):
                        consts.append(("%s.%s" % (names[id(p)], k), v, True))
        consts.append(("input", x, False))
        if target is not None:
            consts.append(("target", target, False))
        rec = _Recorder(consts)
        del consts
        with rec:
            _step(model, x, loss, opt, rec, target)
        del x, target
        gc.collect()
        rec.poll()
    except RecordError:
        raise
    except Exception as e:
        raise RecordError("the training step raised %s: %s"
                          % (type(e).__name__, e)) from e
    head = [{"INSTRUCTION": "ANNOTATE", "ANNOTATION":
             "NOTE gpumemsim-record %d, torch %s%s"
             % (VERSION, torch.__version__, note)},
            {"INSTRUCTION": "ANNOTATE", "ANNOTATION": "START"}]
    return head + rec.lines


def _format(line):
    def val(v):
        if isinstance(v, list):
            return "[" + ",".join(val(x) for x in v) + "]"
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "{" + ",".join('"%s":%s' % (k, val(v))
                          for k, v in sorted(line.items())) + "}\n"


def write_log(lines, path):
    """Write lines to path through a temporary file in the same folder."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".record-", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            for line in lines:
                f.write(_format(line))
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for secrets
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


# ---- the command ------------------------------------------------------------

def _model(spec):
    """torchvision:NAME, nn:transformer_encoder[:LAYERS:DMODEL:HEADS], or
    FILE.py:FUNCTION (a function that returns the nn.Module)."""
    kind, _, rest = spec.partition(":")
    if kind == "torchvision" and rest:
        import torchvision.models as tvm
        if not hasattr(tvm, rest):
            raise RecordError("torchvision 0.14 has no model '%s'" % rest)
        return getattr(tvm, rest)()
    if kind == "nn" and rest.split(":")[0] == "transformer_encoder":
        p = [int(v) for v in rest.split(":")[1:]] or [2, 256, 4]
        if len(p) != 3:
            raise RecordError("nn:transformer_encoder:LAYERS:DMODEL:HEADS")
        layer = torch.nn.TransformerEncoderLayer(p[1], p[2],
                                                 dim_feedforward=4 * p[1])
        return torch.nn.TransformerEncoder(layer, p[0])
    path, _, fn = spec.rpartition(":")
    if not path.endswith(".py") or not fn:
        raise RecordError("model '%s': give torchvision:NAME, "
                          "nn:transformer_encoder or FILE.py:FUNCTION" % spec)
    import importlib.util
    if not os.path.isfile(path):
        raise RecordError("model file '%s' not found" % path)
    sp = importlib.util.spec_from_file_location("user_model", path)
    mod = importlib.util.module_from_spec(sp)
    try:
        sp.loader.exec_module(mod)
        return getattr(mod, fn)()
    except Exception as e:
        raise RecordError("%s: making the model raised %s: %s"
                          % (spec, type(e).__name__, e)) from e


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="gpumemsim-record",
        description="Record one PyTorch training step (forward, loss, "
        "backward, optimizer step) as a gpumemsim trace: "
        "`gpumemsim simulate OUT.log --policy P` then runs any policy on "
        "it. Needs /usr/bin/python3 with python3-torch (make deps).")
    ap.add_argument("--model", required=True,
                    help="torchvision:NAME, nn:transformer_encoder"
                    "[:LAYERS:DMODEL:HEADS] or FILE.py:FUNCTION")
    ap.add_argument("--input", required=True,
                    help="input shape, e.g. 2,3,224,224")
    ap.add_argument("--input-dtype", default="float32",
                    choices=("float32", "int64"))
    ap.add_argument("--vocab", type=int, default=0,
                    help="token range for an int64 input")
    ap.add_argument("--loss", default="cross_entropy", choices=LOSSES)
    ap.add_argument("--optimizer", default="momentum", choices=OPTIMIZERS)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("-o", "--out", required=True,
                    help="the log; name it NAME-BATCH-....log so the "
                    "loader reads the batch from it")
    a = ap.parse_args(argv)
    try:
        try:
            shape = [int(v) for v in a.input.split(",")]
        except ValueError:
            raise RecordError("--input '%s': expected integers separated "
                              "by commas" % a.input)
        if torch is None:
            record(None, shape)  # raises the message
        lines = record(_model(a.model), shape, a.loss, a.optimizer, a.lr,
                       a.input_dtype, a.vocab,
                       ", command: gpumemsim-record " + " ".join(
                           x for x in (argv if argv is not None
                                       else sys.argv[1:])
                           if not x.startswith(("-o", "--out")) and
                           x != a.out))
        write_log(lines, a.out)
    except RecordError as e:
        print("gpumemsim-record: %s; nothing written" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
