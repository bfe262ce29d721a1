#!/usr/bin/python3
# gpumemsim_record.py - record one PyTorch training step as a gpumemsim
# workload: the DTR JSON-lines log (workloads/wl_dtr.c, workloads/README.md
# "Recorded traces"), with the extensions of "Logs from gpumemsim-record".
#
# Run with /usr/bin/python3: Debian's python3-torch (1.13) and
# python3-torchvision (0.14), which `make deps-record` installs, are built for the
# system interpreter, not for a pyenv or venv python3 that may come first on
# PATH. `build/gpumemsim-record` (made by `make`) is this file.
#
# Mechanism: torch.utils._python_dispatch.TorchDispatchMode (torch 1.13 and
# 2.x). Its __torch_dispatch__ sees every ATen op after autograd, the ones
# the autograd engine runs for backward and the optimizer's in-place
# updates included: their storages, shapes and dtypes. The op schema says
# which arguments an op writes (alias_info.is_write).
#
# No real compute (issue 35): the model, its input and the optimizer state
# live on torch's meta device ("tensors on the meta device have no data;
# operators compute only the output's metadata", torch docs, "Meta
# device"), so a step costs the time of tracing it. An op without a meta
# kernel in the running torch gets one of META_RULES (torch 2.x's own meta
# functions, for the ones torch 1.13 lacks) or, failing that, runs for real
# on CPU tensors of the same shapes filled with zeros, its results turned
# back into meta tensors; such ops are counted and named in the output.
# (FakeTensorMode would do the same with more machinery; the meta device
# is enough because only shapes, dtypes and storages are recorded.)
#
# Releases are exact at op granularity: the recorder holds a weak
# reference on every storage it has seen (StorageWeakRef,
# torch/multiprocessing/reductions.py, in torch 1.13 and 2.x: `expired()`
# is true once no tensor holds the storage) and, before each op, releases
# the handle of every storage whose reference has expired. Storage, not
# tensors: autograd saves an op's outputs as new TensorImpls on the same
# storage (SavedVariable), so a tensor object can die while its storage
# lives on. The weak reference also keeps the StorageImpl's memory, so its
# address (the key) is not reused while it is tracked (c10 intrusive_ptr:
# "the object is deleted when the weak count reaches 0").
#
# Only the standard library and torch. No output is written unless the
# whole step records: the log goes to a temporary file renamed into place.
import argparse
import gc
import os
import sys
import tempfile
import time

VERSION = 2

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map
    from torch.multiprocessing.reductions import StorageWeakRef
except ImportError as e:  # the tests skip on this message
    torch = None
    TorchDispatchMode = object
    _IMPORT_ERROR = str(e)


class RecordError(Exception):
    """A bad model, input or op: the message says which; nothing is
    written."""


def _storage(t):
    """The UntypedStorage under t: torch 2.x's untyped_storage(), torch
    1.13's storage()._storage."""
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage()
    return t.storage()._storage


def check_torch(version):
    """Refuse a torch older than 1.13 (no TorchDispatchMode that sees the
    backward), then probe the lifetimes on the meta device: a view keeps
    its storage alive and the storage's weak reference expires once the
    last tensor on it is gone. RecordError if either fails."""
    try:
        major, minor = (int(v) for v in
                        version.split("+")[0].split(".")[:2])
    except ValueError:
        raise RecordError("torch %s: cannot read the version" % version)
    if (major, minor) < (1, 13):
        raise RecordError(
            "torch %s is not supported: the recorder needs torch 1.13 or "
            "later (TorchDispatchMode, meta kernels); use Debian's "
            "python3-torch 1.13 (make deps-record) with /usr/bin/python3 or a "
            "torch 2.x" % version)
    t = torch.empty(4, device="meta")
    ref = StorageWeakRef(_storage(t))
    v = t.view(2, 2)
    del t
    alive = not ref.expired()
    del v
    if not alive or not ref.expired():
        raise RecordError(
            "torch %s: a storage's weak reference did not follow its "
            "tensors (expired with a view alive: %s, after: %s)"
            % (version, not alive, ref.expired()))


def _meta_convolution_backward(grad_output, input_, weight, bias_sizes,
                               stride, padding, dilation, transposed,
                               output_padding, groups, output_mask):
    # torch 2.x, torch/_meta_registrations.py, meta_convolution_backward:
    # "High level logic taken from slow_conv3d_backward_cpu which should
    # be representative of all convolution_backward impls": new_empty of
    # the input's, the weight's and the bias's sizes, as output_mask asks
    return (grad_output.new_empty(input_.size()) if output_mask[0]
            else None,
            grad_output.new_empty(weight.size()) if output_mask[1]
            else None,
            grad_output.new_empty(bias_sizes) if output_mask[2] else None)


# Meta functions torch 1.13 lacks, by ATen name (overload packet).
META_RULES = {"convolution_backward": _meta_convolution_backward}


def _to_meta(x):
    if isinstance(x, torch.Tensor) and x.device.type != "meta":
        return x.to("meta")
    return x


def _real(func, args, kwargs):
    """Run func for real on zero-filled CPU tensors shaped as the meta
    ones (views keep their storage sharing), results back on meta: an
    op's result aliasing an argument's storage becomes the same view of
    the meta argument; an argument returned as is stays itself."""
    flat, _ = tree_flatten((args, kwargs))
    metas = [x for x in flat if isinstance(x, torch.Tensor)
             and x.device.type == "meta"]
    real_sto, back = {}, {}
    for m in metas:
        st = _storage(m)
        if st._cdata not in real_sto:
            n = st.nbytes() // m.element_size()
            real_sto[st._cdata] = torch.zeros(max(n, 1), dtype=m.dtype)
    conv = {}
    for m in metas:
        base = real_sto[_storage(m)._cdata]
        r = base.as_strided(m.size(), m.stride(), m.storage_offset())
        conv[id(m)] = r
        back[id(r)] = m

    def to_real(x):
        return conv.get(id(x), x) if isinstance(x, torch.Tensor) else x
    out = func(*tree_map(to_real, args), **tree_map(to_real, kwargs))
    meta_of = {}
    for m in metas:
        meta_of.setdefault(_storage(m)._cdata, m)

    def to_meta(r):
        if not isinstance(r, torch.Tensor):
            return r
        if id(r) in back:
            return back[id(r)]
        for k, base in real_sto.items():
            if _storage(r)._cdata == _storage(base)._cdata:
                return meta_of[k].as_strided(r.size(), r.stride(),
                                             r.storage_offset())
        return torch.empty_strided(r.size(), r.stride(), dtype=r.dtype,
                                   device="meta")
    return tree_map(to_meta, out)


def _shape(t):
    return "%s[%s]" % (str(t.dtype).replace("torch.", ""),
                       ",".join(str(d) for d in t.shape))


class _MetaRunner(TorchDispatchMode):
    """Runs every op on the meta device (run()), recording nothing: the
    warm-up step."""

    def __init__(self):
        super().__init__()
        self.real = {}     # ATen name -> ops run for real (no meta kernel)
        self.ruled = {}    # ATen name -> ops given a META_RULES function

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return self.run(func, func.overloadpacket.__name__, args,
                        kwargs or {})

    def run(self, func, name, args, kwargs):
        """func on the meta device; an op without a meta kernel gets its
        META_RULES function or runs for real (counted either way). CPU
        tensors beside meta ones (made by the model without a device)
        are moved to meta first."""
        try:
            return func(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as e:
            flat = tree_flatten((args, kwargs))[0]
            devs = {x.device.type for x in flat
                    if isinstance(x, torch.Tensor) and x.dim() > 0}
            if "meta" not in devs and not any(
                    isinstance(x, torch.Tensor) and x.device.type == "meta"
                    for x in flat):
                raise
            for x in flat:
                if isinstance(x, torch.Tensor) and \
                        x.layout != torch.strided:
                    raise RecordError(
                        "unsupported op aten::%s: unsupported tensor "
                        "layout %s (only dense strided tensors are "
                        "recorded)" % (name, x.layout))
            if len(devs) > 1:  # mixed devices: a CPU tensor to meta
                return self.run(func, name, tree_map(_to_meta, args),
                                tree_map(_to_meta, kwargs))
            if name in META_RULES:
                self.ruled[name] = self.ruled.get(name, 0) + 1
                return META_RULES[name](*args, **kwargs)
            if not isinstance(e, NotImplementedError) and \
                    "meta" not in str(e).lower():
                raise  # the model's own error
            self.real[name] = self.real.get(name, 0) + 1
            return _real(func, args, kwargs)


class _Recorder(_MetaRunner):
    """Writes one log line (a dict) per DTR instruction into self.lines."""

    def __init__(self, consts):
        super().__init__()
        self.lines = []
        self.sto = {}      # storage cdata -> [StorageWeakRef, handle, bytes]
        self.pinned = set()  # cdata of parameters and optimizer state
        self.n = 0
        self.n_ops = 0     # CALL and MUTATE lines
        self.n_sto = 0     # storages tracked (tensors of the log)
        self.live = 0      # bytes of tracked storage not yet released
        self.peak = 0      # the most live bytes at any point
        self.progress = None  # called with the recorder after each op
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
        return _storage(t)._cdata

    def _track(self, t, handle):
        st = _storage(t)
        self.sto[st._cdata] = [StorageWeakRef(st), handle, st.nbytes()]
        self.n_sto += 1
        self.live += st.nbytes()
        self.peak = max(self.peak, self.live)
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
                if k not in self.pinned and v[0].expired()]
        for k in dead:  # dict order: creation order, deterministic
            self.lines.append({"INSTRUCTION": "RELEASE",
                               "NAME": self.sto[k][1]})
            self.live -= self.sto[k][2]
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
        out = self.run(func, name, args, kwargs)
        self.n_ops += 1
        if self.progress:
            self.progress(self)
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
            # the indices as JSON numbers, as DTR's logger writes them
            # (dtr-implementation.patch, DTRLogMutate: `const
            # std::vector<size_t>& mutate; ... j["MUTATE"] = mutate;`):
            # simrd's parse indexes a list with them (parse.py,
            # `l.args[m]`), so strings made it fail (issue 37)
            self.lines.append({"INSTRUCTION": "MUTATE", "NAME": name,
                               "ARGS": arg_h, "MUTATE": list(mut),
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
        # class 0 for every sample: a meta tensor has no values anyway,
        # and zeros are valid labels where an op runs for real
        return torch.zeros((out.shape[0],), dtype=torch.int64,
                           device=out.device)
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


def _model_to_meta(model):
    """Move parameters and buffers to the meta device in place, one meta
    tensor for each tensor (Module.to would give each module of a tied
    weight its own copy: _apply makes a new Parameter per module when the
    CPU and meta tensors are not shallow-copy compatible)."""
    memo = {}
    for mod in model.modules():
        for group in (mod._parameters, mod._buffers):
            for k, t in group.items():
                if t is None or t.device.type == "meta":
                    continue
                if id(t) not in memo:
                    m = t.detach().to("meta")
                    if isinstance(t, torch.nn.Parameter):
                        m = torch.nn.Parameter(m, t.requires_grad)
                    memo[id(t)] = (t, m)
                group[k] = memo[id(t)][1]


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
           lr=0.01, input_dtype="float32", vocab=0, note="", progress=None,
           stats=None):
    """Record the second of two training steps of model on a batch of
    input_shape, on the meta device (the model is moved there); returns
    the log's lines (dicts, in order). progress(recorder) is called after
    each recorded op; stats, a dict, gets ops, tensors, peak (bytes) and
    the ops run for real (real) or by a META_RULES function (ruled)."""
    if torch is None:
        raise RecordError("torch is not importable by %s (%s): run "
                          "`make deps-record` and use /usr/bin/python3"
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
    _model_to_meta(model)
    model.zero_grad(set_to_none=True)
    if input_dtype == "int64":
        if vocab <= 0:
            raise RecordError("an int64 input needs a vocabulary size > 0")
        x = torch.zeros(tuple(input_shape), dtype=torch.int64, device="meta")
    elif input_dtype == "float32":
        x = torch.empty(tuple(input_shape), device="meta")
    else:
        raise RecordError("unknown input dtype '%s' (float32, int64)"
                          % input_dtype)
    opt = _optimizer(optimizer, model, lr)
    try:
        # warm-up step: the optimizer makes its state (momentum buffers)
        with _MetaRunner():
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
        rec.progress = progress
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
    if stats is not None:
        stats.update(ops=rec.n_ops, tensors=rec.n_sto, peak=rec.peak,
                     real=dict(rec.real), ruled=dict(rec.ruled))
    real = ""
    if rec.real:
        real = "; ran for real (no meta kernel): " + ", ".join(
            "aten::%s x%d" % kv for kv in sorted(rec.real.items()))
    head = [{"INSTRUCTION": "ANNOTATE", "ANNOTATION":
             "NOTE gpumemsim-record %d, torch %s%s%s"
             % (VERSION, torch.__version__, note, real)},
            {"INSTRUCTION": "ANNOTATE", "ANNOTATION": "START"}]
    return head + rec.lines


def _dims(shape):
    """"float32[2,3]" -> ("float32", [2, 3])."""
    dt, _, rest = shape.partition("[")
    return dt, [int(v) for v in rest[:-1].split(",") if v]


def mark_batch(a, b, batch):
    """Batch marks (issue 35; workloads/README.md, "Logs from
    gpumemsim-record"): a and b are the lines of one step recorded at
    batch and at 2 * batch. They must be the same log but for sizes; a
    storage's MEMORY and a SHAPES dimension either stay (fixed: weights,
    optimizer state, a scalar) or double (proportional to the batch, then
    divisible by it). Returns a's lines with "BATCH": "1" on each
    proportional MEMORY and a "b" after each proportional dimension
    ("float32[4b,3,224,224]"), preceded by ANNOTATE "BATCH <batch>"; or
    raises RecordError naming the first line that is neither."""
    if len(a) != len(b):
        raise RecordError("the step at batch %d has %d log lines, at %d "
                          "%d: its ops depend on the batch"
                          % (batch, len(a), 2 * batch, len(b)))
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if i == 1 or (i == 0 and not x.get("ANNOTATION", "").startswith(
                "NOTE ")):
            out.append({"INSTRUCTION": "ANNOTATE",
                        "ANNOTATION": "BATCH %d" % batch})
        def bad(what):
            return RecordError("log line %d (%s %s) at batch %d and %d: %s"
                               % (i + 1, x["INSTRUCTION"],
                                  x.get("NAME", ""), batch, 2 * batch, what))
        if set(x) != set(y) or any(x[k] != y[k] for k in x
                                   if k not in ("MEMORY", "SHAPES",
                                                "ANNOTATION")):
            raise bad("the ops differ, so the step depends on the batch")
        x = dict(x)
        if "MEMORY" in x:
            m, n = int(x["MEMORY"]), int(y["MEMORY"])
            if n == 2 * m and m % batch == 0 and m:
                x["BATCH"] = "1"
            elif n != m:
                raise bad("%d and %d bytes: neither fixed nor "
                          "proportional to the batch" % (m, n))
        if "SHAPES" in x:
            marked = []
            for sa, sb in zip(x["SHAPES"], y["SHAPES"]):
                dt, da = _dims(sa)
                _, db = _dims(sb)
                if len(da) != len(db):
                    raise bad("shapes %s and %s" % (sa, sb))
                ds = []
                for u, v in zip(da, db):
                    if v == 2 * u and u % batch == 0 and u:
                        ds.append("%db" % u)
                    elif u == v:
                        ds.append(str(u))
                    else:
                        raise bad("shapes %s and %s: a dimension neither "
                                  "fixed nor proportional to the batch"
                                  % (sa, sb))
                marked.append("%s[%s]" % (dt, ",".join(ds)))
            x["SHAPES"] = marked
        out.append(x)
    return out


def _format(line):
    def val(v):
        if isinstance(v, list):
            return "[" + ",".join(val(x) for x in v) + "]"
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)  # MUTATE's indices: numbers, as DTR writes
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "{" + ",".join('"%s":%s' % (k, val(v))
                          for k, v in sorted(line.items())) + "}\n"


def check_out(path):
    """The rule of output targets, as gpumemsim's (gms_out_check,
    sim/common.c): a path that exists must be a regular file (not
    followed if a symlink), since the rename of the temporary replaces
    it: -o /dev/null as root would replace the system's /dev/null (issue
    38). Its folder must exist. RecordError if not."""
    import stat
    try:
        m = os.lstat(path).st_mode
    except FileNotFoundError:
        m = None
    except OSError as e:
        raise RecordError("-o %s: %s" % (path, e.strerror))
    if m is not None and not stat.S_ISREG(m):
        kind = ("a symlink" if stat.S_ISLNK(m) else
                "a directory" if stat.S_ISDIR(m) else
                "a FIFO" if stat.S_ISFIFO(m) else
                "a character device" if stat.S_ISCHR(m) else
                "a block device" if stat.S_ISBLK(m) else
                "a socket" if stat.S_ISSOCK(m) else "not a regular file")
        raise RecordError("-o %s: is %s; output files are regular files "
                          "only (it would be replaced, not written "
                          "through)" % (path, kind))
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise RecordError("-o %s: its folder %s does not exist" % (path, d))


def write_log(lines, path):
    """Write lines to path through a temporary file in the same folder,
    renamed into place after check_out (again: the target may have
    appeared meanwhile); mode 0666 less the umask, as open(2) gives."""
    check_out(path)
    d = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".record-", suffix=".tmp", dir=d)
    except OSError as e:
        raise RecordError("-o %s: cannot create a file there: %s"
                          % (path, e.strerror))
    try:
        with os.fdopen(fd, "w") as f:
            for line in lines:
                f.write(_format(line))
        mask = os.umask(0o022)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # mkstemp's 0600 is for secrets
        check_out(path)
        os.replace(tmp, path)
    except BaseException as e:
        os.unlink(tmp)
        if isinstance(e, OSError):
            raise RecordError("-o %s: cannot write: %s"
                              % (path, e.strerror))
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


def _bytes(n):
    return "%d B (%.1f MiB)" % (n, n / 2**20)


class _Progress:
    """The progress line on stream: rewritten in place (\\r) on a
    terminal at most every 0.2 s, one line every 10 s otherwise; called
    with the recorder after each recorded op."""

    def __init__(self, stream):
        self.f = stream
        self.tty = stream.isatty()
        self.every = 0.2 if self.tty else 10.0
        self.t0 = self.last = time.monotonic()
        self.open = False

    def say(self, msg):
        self.done()
        self.f.write("gpumemsim-record: %s\n" % msg)
        self.f.flush()

    def __call__(self, rec):
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        line = ("gpumemsim-record: %.0f s, %d ops, %d tensors, live %s"
                % (now - self.t0, rec.n_ops, rec.n_sto, _bytes(rec.live)))
        if self.tty:
            self.f.write("\r" + line + "\033[K")
            self.open = True
        else:
            self.f.write(line + "\n")
        self.f.flush()

    def done(self):
        if self.open:
            self.f.write("\n")
            self.open = False


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="gpumemsim-record",
        description="Record one PyTorch training step (forward, loss, "
        "backward, optimizer step) as a gpumemsim trace: "
        "`gpumemsim simulate OUT.log --policy P` then runs any policy on "
        "it. Needs /usr/bin/python3 with python3-torch (make deps-record).")
    ap.add_argument("--model", required=True,
                    help="torchvision:NAME, nn:transformer_encoder"
                    "[:LAYERS:DMODEL:HEADS] or FILE.py:FUNCTION (FILE.py "
                    "is executed, as Python, with your rights: give only "
                    "a file you trust)")
    ap.add_argument("--input", required=True,
                    help="input shape, e.g. 2,3,224,224")
    ap.add_argument("--input-dtype", default="float32",
                    choices=("float32", "int64"))
    ap.add_argument("--vocab", type=int, default=0,
                    help="token range for an int64 input")
    ap.add_argument("--batch-dim", type=int, default=0,
                    help="the input's batch dimension (default 0; -1: "
                    "record at this batch only). The step is recorded "
                    "again at twice the batch and what scales with it is "
                    "marked, so the log loads at any batch")
    ap.add_argument("--loss", default="cross_entropy", choices=LOSSES)
    ap.add_argument("--optimizer", default="momentum", choices=OPTIMIZERS)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("-o", "--out", required=True,
                    help="the log; name it NAME-BATCH-....log so the "
                    "loader reads the batch from it")
    a = ap.parse_args(argv)
    prog = _Progress(sys.stderr)
    try:
        try:
            shape = [int(v) for v in a.input.split(",")]
        except ValueError:
            raise RecordError("--input '%s': expected integers separated "
                              "by commas" % a.input)
        check_out(a.out)  # before the work, as gpumemsim checks
        if torch is None:
            record(None, shape)  # raises the message
        model = _model(a.model)
        st = {}
        prog.say("recording (meta device, no compute)")
        lines = record(model, shape, a.loss, a.optimizer, a.lr,
                       a.input_dtype, a.vocab,
                       ", command: gpumemsim-record " + " ".join(
                           x for x in (argv if argv is not None
                                       else sys.argv[1:])
                           if not x.startswith(("-o", "--out")) and
                           x != a.out),
                       progress=prog, stats=st)
        if a.batch_dim >= 0:
            if a.batch_dim >= len(shape):
                raise RecordError("--batch-dim %d: the input has %d "
                                  "dimensions" % (a.batch_dim, len(shape)))
            b = shape[a.batch_dim]
            prog.say("recording again at batch %d to mark what scales "
                     "with the batch" % (2 * b))
            shape2 = list(shape)
            shape2[a.batch_dim] = 2 * b
            twice = record(model, shape2, a.loss, a.optimizer, a.lr,
                           a.input_dtype, a.vocab, progress=prog)
            try:
                lines = mark_batch(lines, twice, b)
            except RecordError as e:
                prog.say("not marked for other batches (it loads at "
                         "batch %d only): %s" % (b, e))
            del twice
        if st["real"]:
            prog.say("ran for real (no meta kernel): " + ", ".join(
                "aten::%s x%d" % kv for kv in sorted(st["real"].items())))
        write_log(lines, a.out)
        prog.done()
        print("wrote %d ops, %d tensors, peak %s to %s"
              % (st["ops"], st["tensors"], _bytes(st["peak"]), a.out))
    except RecordError as e:
        prog.done()
        print("gpumemsim-record: %s; nothing written" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
