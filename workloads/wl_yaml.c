/*
 * wl_yaml.c - hand-written workload YAML (wl_load_yaml).
 *
 * Format (also in workloads/README.md):
 *
 *   name: chain3                # optional; default = file name sans .yaml
 *   batch: 4                    # optional, default 1; sizes and FLOPs
 *                               # written *_per_sample are for one sample
 *                               # and scale with it
 *   tensors:                    # required, non-empty, any order
 *     - {name: x,  kind: input,      bytes_per_sample: 1MiB}
 *     - {name: w1, kind: parameter,  bytes: 4KiB}
 *     - {name: a1, kind: activation, bytes_per_sample: 1MiB}
 *   ops:                        # required, non-empty, in issue order
 *     - name: fc1               # required, unique
 *       type: matmul            # required: wl_op_type_names
 *       phase: forward          # required: forward|backward|update
 *       layer: fc1              # optional, default = the op's name
 *       inputs: [x, w1]         # optional, default []
 *       outputs: [a1]           # optional, default []
 *       flops: 2e9              # or flops_per_sample; neither = 0
 *       bytes: 0                # or bytes_per_sample: DRAM bytes moved;
 *                               # neither = 0
 *       time: 1ms               # optional measured kernel time; overrides
 *                               # the hardware profile's compute model
 *       workspace: 0            # scratch while the kernel runs (no algos)
 *       recomputable: true      # default: true for forward ops, else false
 *       inplace: false          # out[0] may reuse in[0]'s storage
 *       block: 0                # optional: the repeated unit (layer,
 *                               # residual block) it belongs to, from 0
 *                               # in forward order; its backward ops
 *                               # too (the checkpoint policy's blocks)
 *       region: core_attention  # optional: none (default) or
 *                               # core_attention (checkpoint selective)
 *       algos:                  # optional; convolution algorithm choices
 *         - {name: implicit_gemm, workspace: 0, time_scale: 1.0}
 *         - {name: fft, workspace: 64MiB, time_scale: 0.6}
 *
 * Tensor kinds: input, parameter, param_grad, opt_state, activation,
 * act_grad, workspace. A tensor gives exactly one of bytes and
 * bytes_per_sample (units as in "4KiB", "1.5MB"); the size must be > 0.
 * An op gives at most one of flops/flops_per_sample and of
 * bytes/bytes_per_sample. *_per_sample figures are multiplied by the
 * batch: the file's, or the one passed to wl_load_yaml when > 0; a
 * measured time does not scale. Per-op FLOPs are at most 1e18, sizes and
 * bytes moved at most 1e15 and a measured time at most 1e15 ns, the
 * per-sample figures at the batch too (wl.h's physical bounds,
 * WL_FLOPS_MAX, WL_BYTES_MAX, WL_OP_TIME_MAX). Times take ns, us, ms, s
 * ("1ms"). An algo's workspace defaults to 0 and its time_scale (kernel time relative
 * to the op's base time) to 1; algos are stored fastest first, whatever
 * order they are written in.
 *
 * Graph rules are wl_finalize's (wl.c): every activation, gradient and
 * workspace tensor is produced by exactly one op before any op reads it;
 * inputs, parameters and optimizer state are never outputs; an input is
 * read by at least one op (refused here, at its name). A parameter
 * update is in place: the update op lists parameters, gradients and
 * optimizer state as inputs and has no outputs.
 *
 * Every mapping is parsed by cfg_parse_map against the prm_def tables
 * below, so an unknown key, a wrong type, a negative size or a missing
 * required key is an error naming file:line:column and the key; so are an
 * unknown tensor name in inputs/outputs (at the name), a duplicate tensor
 * or op name (at the second name) and both forms of one size. *
 * The file is streamed (libyaml's events, cfg_stream_*; README, "Input
 * limits"): no document tree of it is built, only one list item at a time
 * (into yw_ctx.doc, then freed), so a 1M-op file loads in 650 MB where the
 * document took 2.9 GB and failed (issue 18). The passes keep the order
 * of a document load's messages: syntax first, then the top mapping, the
 * tensors, the ops.
 */
#include "../sim/cfg.h"
#include "wl.h"
#include "wl_cache.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Top-level mapping. */
struct yw_top {
	char name[PRM_STR_MAX]; /* workload name, "" = from the file name */
	int64_t batch;		/* batch the per-sample figures scale to */
	yaml_node_t *tensors;	/* sequence of tensor mappings */
	yaml_node_t *ops;	/* sequence of op mappings */
};

static const struct prm_def yw_top_defs[] = {
	{"name", PRM_STR, "", 0, 0, NULL,
	 "workload name (default: the file name without .yaml)",
	 offsetof(struct yw_top, name)},
	{"batch", PRM_INT, "1", 1, 1e9, NULL,
	 "batch size the file describes (*_per_sample figures scale with it)",
	 offsetof(struct yw_top, batch)},
	{"tensors", PRM_NODE, NULL, 0, 0, NULL,
	 "list of tensors: name, kind, bytes or bytes_per_sample",
	 offsetof(struct yw_top, tensors)},
	{"ops", PRM_NODE, NULL, 0, 0, NULL, "list of ops, in issue order",
	 offsetof(struct yw_top, ops)},
	PRM_END};

/* One tensor mapping. */
struct yw_tensor {
	char name[PRM_STR_MAX];	   /* unique tensor name */
	int kind;		   /* index in wl_kind_names */
	uint64_t bytes;		   /* fixed size */
	uint64_t bytes_per_sample; /* size of one sample */
};

static const struct prm_def yw_tensor_defs[] = {
	{"name", PRM_STR, NULL, 0, 0, NULL, "unique tensor name",
	 offsetof(struct yw_tensor, name)},
	{"kind", PRM_ENUM, NULL, 0, 0, wl_kind_names, "what the tensor holds",
	 offsetof(struct yw_tensor, kind)},
	{"bytes", PRM_BYTES, "0", 0, WL_BYTES_MAX, NULL,
	 "size, independent of the batch (exclusive with bytes_per_sample); "
	 "at most 1e15 (1 PB, wl.h WL_BYTES_MAX)",
	 offsetof(struct yw_tensor, bytes)},
	{"bytes_per_sample", PRM_BYTES, "0", 0, WL_BYTES_MAX, NULL,
	 "size of one sample; the tensor holds batch x this",
	 offsetof(struct yw_tensor, bytes_per_sample)},
	PRM_END};

/* One op mapping. */
struct yw_op {
	char name[PRM_STR_MAX];	 /* unique op name */
	int type;		 /* index in wl_op_type_names */
	int phase;		 /* index in wl_phase_names */
	char layer[PRM_STR_MAX]; /* layer name, "" = the op's name */
	yaml_node_t *inputs;	 /* sequence of tensor names, or NULL */
	yaml_node_t *outputs;	 /* sequence of tensor names, or NULL */
	double flops;		 /* FLOPs of the kernel */
	double flops_per_sample; /* FLOPs per sample */
	uint64_t bytes;		 /* DRAM bytes moved */
	uint64_t bytes_per_sample; /* DRAM bytes moved per sample */
	sim_time_t time;	 /* measured kernel time, 0 = model */
	uint64_t workspace;	 /* scratch bytes while the kernel runs */
	bool recomputable;	 /* may be re-run to regenerate outputs */
	bool inplace;		 /* out[0] may reuse in[0]'s storage */
	yaml_node_t *algos;	 /* sequence of algo mappings, or NULL */
	int64_t block;		 /* wl_op.block, -1 = none */
	int region;		 /* index in wl_region_names */
};

static const struct prm_def yw_op_defs[] = {
	{"name", PRM_STR, NULL, 0, 0, NULL, "unique op name",
	 offsetof(struct yw_op, name)},
	{"type", PRM_ENUM, NULL, 0, 0, wl_op_type_names, "kernel type",
	 offsetof(struct yw_op, type)},
	{"phase", PRM_ENUM, NULL, 0, 0, wl_phase_names,
	 "forward, backward or update", offsetof(struct yw_op, phase)},
	{"layer", PRM_STR, "", 0, 0, NULL,
	 "layer the op belongs to (default: the op's name)",
	 offsetof(struct yw_op, layer)},
	{"inputs", PRM_NODE, "", 0, 0, NULL, "tensors read, by name",
	 offsetof(struct yw_op, inputs)},
	{"outputs", PRM_NODE, "", 0, 0, NULL,
	 "tensors written (allocated when the op starts)",
	 offsetof(struct yw_op, outputs)},
	{"flops", PRM_DOUBLE, "0", 0, WL_FLOPS_MAX, NULL,
	 "floating-point operations (exclusive with flops_per_sample); at "
	 "most 1e18, 100x the largest GEMM that fits a GPU (wl.h "
	 "WL_FLOPS_MAX)",
	 offsetof(struct yw_op, flops)},
	{"flops_per_sample", PRM_DOUBLE, "0", 0, WL_FLOPS_MAX, NULL,
	 "floating-point operations per sample (scale with the batch)",
	 offsetof(struct yw_op, flops_per_sample)},
	{"bytes", PRM_BYTES, "0", 0, WL_BYTES_MAX, NULL,
	 "DRAM bytes the kernel moves (exclusive with bytes_per_sample); at "
	 "most 1e15 (1 PB, wl.h WL_BYTES_MAX)",
	 offsetof(struct yw_op, bytes)},
	{"bytes_per_sample", PRM_BYTES, "0", 0, WL_BYTES_MAX, NULL,
	 "DRAM bytes moved per sample (scale with the batch)",
	 offsetof(struct yw_op, bytes_per_sample)},
	{"time", PRM_TIME, "0", 0, WL_OP_TIME_MAX, NULL,
	 "measured kernel time; overrides the compute model (0 = model); "
	 "at most 1e15 ns, 11.6 days (wl.h WL_OP_TIME_MAX)",
	 offsetof(struct yw_op, time)},
	{"workspace", PRM_BYTES, "0", 0, 0, NULL,
	 "scratch bytes while the kernel runs (ops without algos)",
	 offsetof(struct yw_op, workspace)},
	{"recomputable", PRM_BOOL, "false", 0, 0, NULL,
	 "may be re-run to regenerate its outputs (default: forward ops)",
	 offsetof(struct yw_op, recomputable)},
	{"inplace", PRM_BOOL, "false", 0, 0, NULL,
	 "output 0 may reuse input 0's storage",
	 offsetof(struct yw_op, inplace)},
	{"algos", PRM_NODE, "", 0, 0, NULL,
	 "algorithm choices: name, workspace, time_scale",
	 offsetof(struct yw_op, algos)},
	{"block", PRM_INT, "-1", -1, 1e9, NULL,
	 "the block (layer, residual block) the op belongs to, from 0 in "
	 "forward order; -1 = none (checkpoint's blocks mode)",
	 offsetof(struct yw_op, block)},
	{"region", PRM_ENUM, "none", 0, 0, wl_region_names,
	 "part of its block: none or core_attention (checkpoint's selective "
	 "mode)",
	 offsetof(struct yw_op, region)},
	PRM_END};

/* One algo mapping. */
struct yw_algo {
	char name[PRM_STR_MAX]; /* algorithm name */
	uint64_t workspace;	/* scratch bytes it needs */
	double time_scale;	/* kernel time relative to the op's base */
};

static const struct prm_def yw_algo_defs[] = {
	{"name", PRM_STR, NULL, 0, 0, NULL, "algorithm name",
	 offsetof(struct yw_algo, name)},
	{"workspace", PRM_BYTES, "0", 0, 0, NULL, "scratch bytes it needs",
	 offsetof(struct yw_algo, workspace)},
	{"time_scale", PRM_DOUBLE, "1", 1e-9, 1e9, NULL,
	 "kernel time relative to the op's base time",
	 offsetof(struct yw_algo, time_scale)},
	PRM_END};

/* State of one load. */
struct yw_ctx {
	struct cfg_stream in;	  /* the file, read as events */
	struct cfg_doc *topdoc;	  /* the top mapping, lists left empty */
	struct cfg_doc *doc;	  /* the list item being read */
	size_t n_tensors, n_ops;  /* items in the lists (the first pass) */
	struct yw_top top;	  /* the top mapping's values */
	struct wl_workload *w;	  /* the workload being built */
	yaml_mark_t *tname;	  /* per tensor id: where its name is */
	yaml_mark_t *oname;	  /* per op id: where its name is */
	size_t tname_cap, oname_cap; /* allocated lengths of tname, oname */
	bool no_marks;		  /* keep no marks (load_fast: its errors
				     are load_slow's to word) */
	struct wl_cache_w *cw;	  /* the cache entry written, or NULL */
	struct wl_algo *algos;	  /* scratch for one op's algos */
	size_t algos_cap;	  /* allocated length of algos */
	uint32_t *ids;		  /* scratch for one op's inputs+outputs */
	size_t ids_cap;		  /* allocated length of ids */
	struct yw_tensor tdef;	  /* a tensor's defaults (prm_defaults_of) */
	struct yw_op odef;	  /* an op's defaults */
};

/* The key node of `key` in a mapping; NULL when absent. */
static yaml_node_t *map_key(struct cfg_doc *d, yaml_node_t *map,
			    const char *key)
{
	size_t n = cfg_map_len(map);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k;
		cfg_map_pair(d, map, i, &k, NULL);
		const char *s = cfg_scalar(k);
		if (s && strcmp(s, key) == 0)
			return k;
	}
	return NULL;
}

/* Check that at most one of keys a and b is present (exactly one when
 * `need`); returns 0, or -1 with an error at the later key. *which is set
 * to 0 (a present or neither) or 1 (b present). */
static int one_of(struct yw_ctx *c, yaml_node_t *map, const char *what,
		  const char *a, const char *b, bool need, int *which,
		  gms_err *err)
{
	yaml_node_t *ka = map_key(c->doc, map, a);
	yaml_node_t *kb = map_key(c->doc, map, b);
	*which = kb ? 1 : 0;
	if (ka && kb) {
		bool b_later = kb->start_mark.index > ka->start_mark.index;
		return cfg_errf(err, c->doc, b_later ? kb : ka,
				"%s: key '%s': give either %s or %s, not "
				"both",
				what, b_later ? b : a, a, b);
	}
	if (need && !ka && !kb)
		return cfg_errf(err, c->doc, map,
				"%s: key '%s': missing required key (give "
				"%s or %s)",
				what, a, a, b);
	return 0;
}

/* "tensor 'x'" (or "tensor 3" while the name is missing) into buf: how
 * messages name the mapping m, item i of its list. */
static void describe(struct yw_ctx *c, yaml_node_t *m, const char *kind,
		     size_t i, char *buf, size_t n)
{
	const char *nm = cfg_scalar(cfg_map_get(c->doc, m, "name"));
	if (!nm || !*nm) {
		snprintf(buf, n, "%s %zu", kind, i + 1);
		return;
	}
	/* snprintf(buf, n, "%s '%.*s'", kind, PRM_STR_MAX - 1, nm) written
	 * out: its format interpreter, for every item of a streamed file,
	 * cost more than the rest of describing it (issue 37) */
	size_t at = 0;
	const char *parts[] = {kind, " '", nm, "'"};
	for (size_t k = 0; k < 4 && n; k++) {
		size_t len = strlen(parts[k]);
		if (k == 2 && len > PRM_STR_MAX - 1)
			len = PRM_STR_MAX - 1;
		if (len > n - 1 - at)
			len = n - 1 - at;
		memcpy(buf + at, parts[k], len);
		at += len;
	}
	if (n)
		buf[at] = '\0';
}

static int need_seq(struct yw_ctx *c, yaml_node_t *n, const char *key,
		    const char *what, gms_err *err)
{
	if (!n || n->type != YAML_SEQUENCE_NODE)
		return cfg_errf(err, c->doc, n,
				"%s: key '%s': expected a list, found %s",
				what, key,
				n && n->type == YAML_MAPPING_NODE
					? "a mapping"
					: "a scalar");
	return 0;
}

/* A name already given to item prev (WL_NONE: none) is an error at the
 * second name; marks[] holds where each item's name is. */
static int defined_twice(struct yw_ctx *c, yaml_node_t *name_node,
			 uint32_t prev, const yaml_mark_t *marks,
			 const char *what, gms_err *err)
{
	char buf[600];
	if (prev == WL_NONE)
		return 0;
	if (c->no_marks)
		return gms_errf(err, "%s: key 'name': defined twice", what);
	return cfg_errf(err, c->doc, name_node,
			"%s: key 'name': defined twice (first at %s)", what,
			cfg_where_mark(c->doc, &marks[prev], buf, sizeof buf));
}

/* Room for (*marks)[id], the array grown by doubling. */
static int mark_room(struct yw_ctx *c, yaml_mark_t **marks, size_t *cap,
		     uint32_t id, gms_err *err)
{
	if (id < *cap || c->no_marks)
		return 0;
	size_t nc = *cap ? *cap * 2 : 1024;
	while (nc <= id)
		nc *= 2;
	yaml_mark_t *p = realloc(*marks, nc * sizeof *p);
	if (!p)
		return gms_errf(err, "%s: out of memory", c->doc->path);
	*marks = p;
	*cap = nc;
	return 0;
}

/* Tensor i of the list, the mapping m. */
static int load_tensor(struct yw_ctx *c, yaml_node_t *m, size_t i,
		       int64_t batch, gms_err *err)
{
	struct yw_tensor t;
	char what[PRM_STR_MAX + 32];
	describe(c, m, "tensor", i, what, sizeof what);
	if (cfg_parse_map_from(c->doc, m, yw_tensor_defs, &t, &c->tdef,
			       sizeof t, what, err) < 0)
		return -1;
	yaml_node_t *name_node = cfg_map_get(c->doc, m, "name");
	if (defined_twice(c, name_node, wl_tensor_id(c->w, t.name), c->tname, what,
			  err) < 0)
		return -1;
	int per_sample;
	if (one_of(c, m, what, "bytes", "bytes_per_sample", true, &per_sample,
		   err) < 0)
		return -1;
	uint64_t bytes = t.bytes;
	const char *key = "bytes";
	if (per_sample) {
		key = "bytes_per_sample";
		if ((double)t.bytes_per_sample * (double)batch > WL_BYTES_MAX)
			return cfg_errf(err, c->doc,
					cfg_map_get(c->doc, m, key),
					"%s: key '%s': size at batch %lld is "
					"beyond 1e15 bytes (WL_BYTES_MAX)",
					what, key, (long long)batch);
		bytes = t.bytes_per_sample * (uint64_t)batch;
	}
	if (bytes == 0)
		return cfg_errf(err, c->doc, cfg_map_get(c->doc, m, key),
				"%s: key '%s': size must be > 0", what, key);
	gms_err e = {{0}};
	if (c->cw)
		wl_cache_w_tensor(c->cw, t.name, bytes, (enum wl_kind)t.kind);
	uint32_t id =
		wl_add_tensor(c->w, t.name, bytes, (enum wl_kind)t.kind, &e);
	if (id == WL_NONE)
		return cfg_errf(err, c->doc, m, "%s", e.msg);
	if (mark_room(c, &c->tname, &c->tname_cap, id, err) < 0)
		return -1;
	if (!c->no_marks)
		c->tname[id] = name_node->start_mark;
	return 0;
}

/* Resolve a list of tensor names into c->ids starting at *at. */
static int resolve_names(struct yw_ctx *c, yaml_node_t *seq, const char *key,
			 const char *what, size_t *at, gms_err *err)
{
	if (!seq)
		return 0;
	if (need_seq(c, seq, key, what, err) < 0)
		return -1;
	size_t n = cfg_seq_len(seq);
	if (*at + n > c->ids_cap) {
		size_t cap = (*at + n) * 2;
		uint32_t *p = realloc(c->ids, cap * sizeof *p);
		if (!p)
			return gms_errf(err, "%s: out of memory", c->doc->path);
		c->ids = p;
		c->ids_cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = cfg_seq_item(c->doc, seq, i);
		const char *s = cfg_scalar(item);
		if (!s)
			return cfg_errf(err, c->doc, item,
					"%s: key '%s': expected a tensor name, "
					"found a %s",
					what, key,
					item && item->type == YAML_MAPPING_NODE
						? "mapping"
						: "sequence");
		uint32_t id = wl_tensor_id(c->w, s);
		if (id == WL_NONE)
			return cfg_errf(err, c->doc, item,
					"%s: key '%s': unknown tensor '%s'",
					what, key, s);
		c->ids[(*at)++] = id;
	}
	return 0;
}

static int load_algos(struct yw_ctx *c, yaml_node_t *seq, const char *what,
		      uint32_t *n_algos, gms_err *err)
{
	*n_algos = 0;
	if (!seq)
		return 0;
	if (need_seq(c, seq, "algos", what, err) < 0)
		return -1;
	size_t n = cfg_seq_len(seq);
	if (n > c->algos_cap) {
		struct wl_algo *p = realloc(c->algos, n * sizeof *p);
		if (!p)
			return gms_errf(err, "%s: out of memory", c->doc->path);
		c->algos = p;
		c->algos_cap = n;
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *m = cfg_seq_item(c->doc, seq, i);
		struct yw_algo a;
		char kind[PRM_STR_MAX + 40], w[2 * PRM_STR_MAX + 80];
		snprintf(kind, sizeof kind, "%s: algo", what);
		describe(c, m, kind, i, w, sizeof w);
		if (cfg_parse_map(c->doc, m, yw_algo_defs, &a, w, err) < 0)
			return -1;
		/* a is gone after this iteration; the name's scalar lives in
		 * the document until wl_add_op has copied it. */
		c->algos[i] = (struct wl_algo){
			.name = cfg_scalar(cfg_map_get(c->doc, m, "name")),
			.workspace = a.workspace,
			.time_scale = a.time_scale,
		};
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->algos[j].name, c->algos[i].name) == 0)
				return cfg_errf(err, c->doc,
						cfg_map_get(c->doc, m, "name"),
						"%s: key 'name': listed twice",
						w);
	}
	*n_algos = (uint32_t)n;
	return 0;
}

static int load_op(struct yw_ctx *c, yaml_node_t *m, size_t i, int64_t batch,
		   gms_err *err)
{
	struct yw_op o;
	char what[PRM_STR_MAX + 32];
	describe(c, m, "op", i, what, sizeof what);
	if (cfg_parse_map_from(c->doc, m, yw_op_defs, &o, &c->odef, sizeof o,
			       what, err) < 0)
		return -1;
	yaml_node_t *name_node = cfg_map_get(c->doc, m, "name");
	if (defined_twice(c, name_node, wl_op_id(c->w, o.name), c->oname, what,
			  err) < 0)
		return -1;
	int flops_ps, bytes_ps;
	if (one_of(c, m, what, "flops", "flops_per_sample", false, &flops_ps,
		   err) < 0 ||
	    one_of(c, m, what, "bytes", "bytes_per_sample", false, &bytes_ps,
		   err) < 0)
		return -1;
	if (!cfg_map_get(c->doc, m, "recomputable"))
		o.recomputable = o.phase == WL_FWD;

	size_t n_ids = 0;
	if (resolve_names(c, o.inputs, "inputs", what, &n_ids, err) < 0)
		return -1;
	size_t n_in = n_ids;
	if (resolve_names(c, o.outputs, "outputs", what, &n_ids, err) < 0)
		return -1;
	uint32_t n_algos;
	if (load_algos(c, o.algos, what, &n_algos, err) < 0)
		return -1;

	double fb = (double)batch;
	/* per-sample figures at the batch: within the same bounds */
	if (flops_ps && o.flops_per_sample * fb > WL_FLOPS_MAX)
		return cfg_errf(err, c->doc,
				cfg_map_get(c->doc, m, "flops_per_sample"),
				"%s: key 'flops_per_sample': %g FLOPs at batch "
				"%lld, beyond 1e18 (WL_FLOPS_MAX)",
				what, o.flops_per_sample * fb,
				(long long)batch);
	if (bytes_ps && (double)o.bytes_per_sample * fb > WL_BYTES_MAX)
		return cfg_errf(err, c->doc,
				cfg_map_get(c->doc, m, "bytes_per_sample"),
				"%s: key 'bytes_per_sample': %g bytes at batch "
				"%lld, beyond 1e15 (WL_BYTES_MAX)",
				what, (double)o.bytes_per_sample * fb,
				(long long)batch);
	struct wl_op_desc d = {
		.name = o.name,
		.type = (enum wl_op_type)o.type,
		.phase = (enum wl_phase)o.phase,
		.layer = o.layer[0] ? o.layer : NULL,
		.in = c->ids,
		.n_in = (uint32_t)n_in,
		/* no ids at all: c->ids is NULL, and NULL + 0 is undefined
		 * in C (clang's UBSan reports it) */
		.out = c->ids ? c->ids + n_in : NULL,
		.n_out = (uint32_t)(n_ids - n_in),
		.flops = flops_ps ? o.flops_per_sample * fb : o.flops,
		.bytes = bytes_ps ? (double)o.bytes_per_sample * fb
				  : (double)o.bytes,
		.time = o.time,
		.workspace = o.workspace,
		.recomputable = o.recomputable,
		.inplace = o.inplace,
		.algos = n_algos ? c->algos : NULL,
		.n_algos = n_algos,
	};
	gms_err e = {{0}};
	uint32_t block = o.block < 0 ? WL_NONE : (uint32_t)o.block;
	wl_set_block(c->w, block, (uint8_t)o.region);
	if (c->cw)
		wl_cache_w_op(c->cw, block, (uint8_t)o.region, &d);
	uint32_t id = wl_add_op(c->w, &d, &e);
	if (id == WL_NONE)
		return cfg_errf(err, c->doc, m, "%s", e.msg);
	if (mark_room(c, &c->oname, &c->oname_cap, id, err) < 0)
		return -1;
	if (!c->no_marks)
		c->oname[id] = name_node->start_mark;
	return 0;
}

/* The top-level list under key (its stub node seq, of n items) must be
 * a non-empty sequence. */
static int need_list(struct yw_ctx *c, yaml_node_t *seq, size_t n,
		     const char *key, gms_err *err)
{
	if (need_seq(c, seq, key, "workload", err) < 0)
		return -1;
	if (n == 0)
		return cfg_errf(err, c->topdoc, seq,
				"workload: key '%s': the list is empty", key);
	return 0;
}

typedef int (*yw_item_fn)(struct yw_ctx *, yaml_node_t *, size_t, int64_t,
			  gms_err *);

/* The items of a sequence up to its end event (consumed), each built
 * alone into c->doc and handed to fn; the stream stands after the
 * sequence's start. *n gets the number of items. */
static int load_items(struct yw_ctx *c, int64_t batch, yw_item_fn fn,
		      size_t *n, gms_err *err)
{
	yaml_event_t e;
	for (*n = 0;; (*n)++) {
		yaml_node_t *m;
		if (cfg_stream_next(&c->in, &e, err) < 0)
			return -1;
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		if (cfg_doc_clear(c->doc, err) < 0) {
			yaml_event_delete(&e);
			return -1;
		}
		if (cfg_stream_node(&c->in, &e, c->doc, &m, err) < 0 ||
		    fn(c, m, *n, batch, err) < 0)
			return -1;
	}
}

/* The list under top-level key `key` (checked by the first pass: a
 * non-empty sequence) read item by item. The stream stands after the
 * key's event. */
static int load_list(struct yw_ctx *c, int64_t batch, yw_item_fn fn,
		     gms_err *err)
{
	yaml_event_t e;
	size_t n;
	if (cfg_stream_next(&c->in, &e, err) < 0) /* the sequence's start */
		return -1;
	yaml_event_delete(&e);
	return load_items(c, batch, fn, &n, err);
}

/* One pass over the file: the tensors list (when `tensors`), then the ops
 * list if it comes after it (or when !tensors). *ops_done says whether
 * the ops were read. */
static int load_pass(struct yw_ctx *c, bool tensors, int64_t batch,
		     bool *ops_done, gms_err *err)
{
	bool tensors_done = !tensors;
	*ops_done = false;
	yaml_event_t e;
	/* stream start, document start, the top mapping's start */
	for (int k = 0; k < 3; k++) {
		if (cfg_stream_next(&c->in, &e, err) < 0)
			return -1;
		yaml_event_delete(&e);
	}
	while (!*ops_done) {
		if (cfg_stream_next(&c->in, &e, err) < 0)
			return -1;
		if (e.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&e);
			break;
		}
		const char *k = e.type == YAML_SCALAR_EVENT
					? (const char *)e.data.scalar.value
					: "";
		/* the first pass refused a second key of either name */
		int list = strcmp(k, "tensors") == 0 ? 1
			   : strcmp(k, "ops") == 0   ? 2
						     : 0;
		if (cfg_stream_skip(&c->in, &e, NULL, err) < 0)
			return -1;
		if (list == 1 && !tensors_done) {
			if (load_list(c, batch, load_tensor, err) < 0)
				return -1;
			tensors_done = true;
			continue;
		}
		if (list == 2 && tensors_done) {
			if (need_list(c, c->top.ops, c->n_ops, "ops", err) < 0 ||
			    load_list(c, batch, load_op, err) < 0)
				return -1;
			*ops_done = true;
			continue;
		}
		if (cfg_stream_next(&c->in, &e, err) < 0 ||
		    cfg_stream_skip(&c->in, &e, NULL, err) < 0)
			return -1;
	}
	return 0;
}

/* The first pass: every syntax, nesting and size error of the file (as a
 * document load reports them, before any other), and the top mapping
 * into c->topdoc, whose values that are lists or mappings are left empty
 * (only their kind and place are read); the number of items of the
 * tensors and ops lists into c->n_tensors, c->n_ops. *root is NULL for a
 * file without a document. */
static int scan_top(struct yw_ctx *c, yaml_node_t **root, gms_err *err)
{
	yaml_event_t e;
	*root = NULL;
	if (cfg_stream_next(&c->in, &e, err) < 0) /* stream start */
		return -1;
	yaml_event_delete(&e);
	if (cfg_stream_next(&c->in, &e, err) < 0)
		return -1;
	yaml_event_type_t t = e.type;
	yaml_event_delete(&e);
	if (t != YAML_DOCUMENT_START_EVENT)
		return 0; /* no document */
	if (cfg_stream_next(&c->in, &e, err) < 0)
		return -1;
	bool map = e.type == YAML_MAPPING_START_EVENT;
	int root_id;
	if (map) {
		/* the top mapping: its pairs are read below */
		root_id = yaml_document_add_mapping(&c->topdoc->doc, NULL,
						    YAML_ANY_MAPPING_STYLE);
		if (root_id)
			yaml_document_get_node(&c->topdoc->doc, root_id)
				->start_mark = e.start_mark;
		yaml_event_delete(&e);
		if (!root_id)
			return gms_errf(err, "%s: out of memory", c->in.path);
	} else {
		if (cfg_stream_stub(&c->in, &e, c->topdoc, root, NULL, err) < 0)
			return -1;
		root_id = (int)(*root - c->topdoc->doc.nodes.start) + 1;
	}
	while (map) {
		if (cfg_stream_next(&c->in, &e, err) < 0)
			return -1;
		if (e.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&e);
			break;
		}
		yaml_node_t *k, *v;
		size_t n;
		if (cfg_stream_stub(&c->in, &e, c->topdoc, &k, NULL, err) < 0)
			return -1;
		int key_id = (int)(k - c->topdoc->doc.nodes.start) + 1;
		if (cfg_stream_next(&c->in, &e, err) < 0 ||
		    cfg_stream_stub(&c->in, &e, c->topdoc, &v, &n, err) < 0)
			return -1;
		/* nodes may have moved: look the key up again */
		const char *ks =
			cfg_scalar(yaml_document_get_node(&c->topdoc->doc, key_id));
		if (ks && strcmp(ks, "tensors") == 0 && !c->n_tensors)
			c->n_tensors = n;
		if (ks && strcmp(ks, "ops") == 0 && !c->n_ops)
			c->n_ops = n;
		if (!yaml_document_append_mapping_pair(
			    &c->topdoc->doc, root_id, key_id,
			    (int)(v - c->topdoc->doc.nodes.start) + 1))
			return gms_errf(err, "%s: out of memory", c->in.path);
	}
	*root = yaml_document_get_node(&c->topdoc->doc, root_id);
	return cfg_stream_finish(&c->in, err);
}

/* "dir/chain3.yaml" -> "chain3" into buf. */
static void stem(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t len = strlen(b);
	const char *dot = strrchr(b, '.');
	if (dot && dot != b)
		len = (size_t)(dot - b);
	if (len >= n)
		len = n - 1;
	memcpy(buf, b, len);
	buf[len] = '\0';
}

/* Free what a load holds but its workload. */
static void ctx_free(struct yw_ctx *c)
{
	free(c->tname);
	free(c->oname);
	free(c->algos);
	free(c->ids);
	cfg_free(c->doc);
	cfg_free(c->topdoc);
	cfg_stream_close(&c->in);
}

/* The usual file in one pass: its top mapping holds `name` and `batch`
 * (either may be absent), then `tensors`, then `ops`, and nothing after
 * them, as every writer of these files (gen-workload.sh, the examples)
 * orders them. Returns the workload, or NULL when the file is laid out
 * otherwise or holds any error: then load_slow reads it again, and gives
 * the message a document load would, in its order (syntax first, then
 * the top mapping, the tensors, the ops). On success it has done exactly
 * load_slow's calls, in its order, with the same values: the top
 * mapping's keys before the lists are parsed with the same table (the
 * lists, the only keys after them, are checked to be non-empty
 * sequences as need_list checks them), the items with load_tensor and
 * load_op, then the same end-of-stream, unread-input and wl_finalize
 * checks, so the workload is load_slow's, field by field. Issue 37: the
 * first of load_slow's passes, libyaml's parse of the whole file only
 * to find syntax errors before any other, was a third of a 1M-op load. */
static void hash_read(void *arg, const void *p, size_t n)
{
	wl_hash_add(arg, p, n);
}

/* cw (may be NULL): the cache entry to write the builder calls into;
 * key[2] (may be NULL) the hash of the bytes parsed. */
static struct wl_workload *load_fast(const char *path, int64_t batch,
				     struct wl_cache_w *cw, uint64_t key[2])
{
	/* no marks: 24 bytes an item, 72 MB for a million ops */
	struct yw_ctx c = {.no_marks = true, .cw = cw};
	struct wl_hash h;
	gms_err err = {{0}}; /* any error: load_slow says it */
	yaml_event_t e;
	int root_id = 0;
	bool ok = false;
	if (cfg_stream_open(&c.in, path, WL_YAML_MAX_BYTES, &err) < 0 ||
	    !(c.topdoc = cfg_doc_new(path, &err)) ||
	    !(c.doc = cfg_doc_new(path, &err)) ||
	    prm_defaults_of(yw_tensor_defs, &c.tdef, &err) < 0 ||
	    prm_defaults_of(yw_op_defs, &c.odef, &err) < 0 ||
	    prm_defaults_of(yw_top_defs, &c.top, &err) < 0)
		goto out;
	wl_hash_init(&h);
	if (key) {
		c.in.on_read = hash_read;
		c.in.on_read_arg = &h;
	}
	/* stream start, document start, the top mapping's start */
	for (int k = 0; k < 3; k++) {
		if (cfg_stream_next(&c.in, &e, &err) < 0)
			goto out;
		yaml_event_type_t t = e.type;
		yaml_mark_t at = e.start_mark;
		yaml_event_delete(&e);
		if (k == 1 && t != YAML_DOCUMENT_START_EVENT)
			goto out;
		if (k == 2) {
			if (t != YAML_MAPPING_START_EVENT)
				goto out;
			root_id = yaml_document_add_mapping(
				&c.topdoc->doc, NULL, YAML_ANY_MAPPING_STYLE);
			if (!root_id)
				goto out;
			yaml_document_get_node(&c.topdoc->doc, root_id)
				->start_mark = at;
		}
	}
	/* name and batch, up to the tensors key */
	for (;;) {
		yaml_node_t *k, *v;
		if (cfg_stream_next(&c.in, &e, &err) < 0)
			goto out;
		if (e.type == YAML_SCALAR_EVENT &&
		    strcmp((const char *)e.data.scalar.value, "tensors") == 0) {
			yaml_event_delete(&e);
			break;
		}
		if (e.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&e);
			goto out; /* no tensors: an error */
		}
		if (cfg_stream_stub(&c.in, &e, c.topdoc, &k, NULL, &err) < 0)
			goto out;
		int key_id = (int)(k - c.topdoc->doc.nodes.start) + 1;
		if (cfg_stream_next(&c.in, &e, &err) < 0 ||
		    cfg_stream_stub(&c.in, &e, c.topdoc, &v, NULL, &err) < 0 ||
		    !yaml_document_append_mapping_pair(
			    &c.topdoc->doc, root_id, key_id,
			    (int)(v - c.topdoc->doc.nodes.start) + 1))
			goto out;
	}
	if (cfg_parse_map_over(c.topdoc,
			       yaml_document_get_node(&c.topdoc->doc, root_id),
			       yw_top_defs, &c.top, "workload", &err) < 0)
		goto out;
	if (!c.top.name[0])
		stem(path, c.top.name, sizeof c.top.name);
	if (batch <= 0)
		batch = c.top.batch;
	if (!(c.w = wl_new(c.top.name, batch)))
		goto out;
	if (cw)
		wl_cache_w_new(cw, c.top.name, batch);
	/* tensors: a non-empty sequence; then the key ops, its non-empty
	 * sequence, and the top mapping's end */
	static const char *const keys[] = {NULL, "ops"};
	static const yw_item_fn fns[] = {load_tensor, load_op};
	for (int l = 0; l < 2; l++) {
		size_t n;
		if (keys[l]) {
			if (cfg_stream_next(&c.in, &e, &err) < 0)
				goto out;
			bool is_key =
				e.type == YAML_SCALAR_EVENT &&
				strcmp((const char *)e.data.scalar.value,
				       keys[l]) == 0;
			yaml_event_delete(&e);
			if (!is_key)
				goto out;
		}
		if (cfg_stream_next(&c.in, &e, &err) < 0)
			goto out;
		yaml_event_type_t t = e.type;
		yaml_event_delete(&e);
		if (t != YAML_SEQUENCE_START_EVENT ||
		    load_items(&c, batch, fns[l], &n, &err) < 0 || n == 0)
			goto out;
	}
	if (cfg_stream_next(&c.in, &e, &err) < 0)
		goto out;
	yaml_event_type_t t = e.type;
	yaml_event_delete(&e);
	ok = t == YAML_MAPPING_END_EVENT &&
	     cfg_stream_finish(&c.in, &err) == 0 &&
	     wl_unread_input(c.w) == WL_NONE && wl_finalize(c.w, &err) == 0;
out:
	if (!ok) {
		wl_free(c.w);
		c.w = NULL;
	}
	if (key)
		wl_hash_value(&h, key);
	ctx_free(&c);
	return c.w;
}

/* The file in passes (scan_top, then load_pass): every message in its
 * place in the order a document load gives them. */
static struct wl_workload *load_slow(const char *path, int64_t batch,
				     gms_err *err)
{
	struct yw_ctx c = {0};
	struct yw_top *top = &c.top;
	yaml_node_t *root;
	if (cfg_stream_open(&c.in, path, WL_YAML_MAX_BYTES, err) < 0 ||
	    !(c.topdoc = cfg_doc_new(path, err)) ||
	    !(c.doc = cfg_doc_new(path, err)) || scan_top(&c, &root, err) < 0)
		goto fail;
	if (!root) {
		gms_errf(err, "%s: empty workload file", path);
		goto fail;
	}
	if (cfg_parse_map(c.topdoc, root, yw_top_defs, top, "workload", err) < 0)
		goto fail;
	if (prm_defaults_of(yw_tensor_defs, &c.tdef, err) < 0 ||
	    prm_defaults_of(yw_op_defs, &c.odef, err) < 0)
		goto fail;
	if (!top->name[0])
		stem(path, top->name, sizeof top->name);
	if (batch <= 0)
		batch = top->batch;
	c.w = wl_new(top->name, batch);
	if (!c.w) {
		gms_errf(err, "%s: out of memory", path);
		goto fail;
	}
	/* the ops list is checked when it is reached, after the tensors */
	if (need_list(&c, c.top.tensors, c.n_tensors, "tensors", err) < 0)
		goto fail;
	if (mark_room(&c, &c.tname, &c.tname_cap, (uint32_t)c.n_tensors,
		      err) < 0 ||
	    mark_room(&c, &c.oname, &c.oname_cap, (uint32_t)c.n_ops, err) < 0)
		goto fail;
	/* the tensors, then the ops: in one pass when the file lists them
	 * in that order, else a third pass for the ops */
	bool ops_done;
	if (cfg_stream_rewind(&c.in, err) < 0 ||
	    load_pass(&c, true, batch, &ops_done, err) < 0)
		goto fail;
	if (!ops_done && (cfg_stream_rewind(&c.in, err) < 0 ||
			  load_pass(&c, false, batch, &ops_done, err) < 0))
		goto fail;
	uint32_t unread = wl_unread_input(c.w);
	if (unread != WL_NONE) {
		char where[600];
		cfg_where_mark(c.doc, &c.tname[unread], where, sizeof where);
		gms_errf(err,
			 "%s: tensor '%s': key 'kind': an input no op reads "
			 "(it would be loaded and never released)",
			 where, c.w->tensors[unread].name);
		goto fail;
	}
	if (wl_finalize(c.w, err) < 0) {
		gms_err_prefix(err, "%s", path);
		goto fail;
	}
	goto done;
fail:
	wl_free(c.w);
	c.w = NULL;
done:
	ctx_free(&c);
	return c.w;
}

struct wl_workload *wl_load_yaml_cached(const char *path, int64_t batch,
					const struct wl_cache_opts *o,
					struct wl_cache_report *rep,
					gms_err *err)
{
	struct wl_cache_report dummy;
	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof *rep);
	rep->status = WL_CACHE_OFF;
	if (!path) {
		gms_errf(err, "wl_load_yaml: no path");
		return NULL;
	}
	/* one pass for a regular file laid out as usual; a pipe is read
	 * once only, by load_slow, which says it needs a regular file */
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return load_slow(path, batch, err);
	uint64_t key[2], size;
	struct wl_cache_w *cw = NULL;
	if (o && o->dir && (uint64_t)st.st_size >= o->min_bytes &&
	    wl_cache_entry(o->dir, path, batch, rep->entry,
			   sizeof rep->entry) &&
	    wl_hash_file(path, key, &size) == 0) {
		gms_err e = {{0}};
		enum wl_cache_status cs;
		struct wl_workload *w =
			wl_cache_read(rep->entry, key, size, batch, &cs, &e);
		rep->status = cs;
		if (w)
			return w;
		if (cs == WL_CACHE_CORRUPT)
			snprintf(rep->why, sizeof rep->why, "%s", e.msg);
		gms_err we = {{0}};
		cw = wl_cache_w_open(rep->entry, key, size, batch, &we);
		if (!cw) {
			rep->write_failed = true;
			snprintf(rep->why, sizeof rep->why, "%s", we.msg);
		}
	}
	uint64_t got[2];
	struct wl_workload *w = load_fast(path, batch, cw, cw ? got : NULL);
	if (cw) {
		gms_err we = {{0}};
		/* the file as it was hashed, else (changed since) no entry */
		if (!w || got[0] != key[0] || got[1] != key[1]) {
			/* a file load_fast does not read (another layout,
			 * an error) or one that changed: no entry */
			wl_cache_w_abort(cw);
			if (rep->status != WL_CACHE_CORRUPT)
				rep->status = WL_CACHE_OFF;
		} else if (wl_cache_w_commit(cw, &we) < 0) {
			rep->write_failed = true;
			snprintf(rep->why, sizeof rep->why, "%s", we.msg);
		}
	}
	return w ? w : load_slow(path, batch, err);
}

struct wl_workload *wl_load_yaml(const char *path, int64_t batch,
				 gms_err *err)
{
	/* the directory (made if absent) only for a file to cache */
	char dir[GMS_PATH_MAX];
	struct stat st;
	bool big = path && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		   (uint64_t)st.st_size >= WL_CACHE_MIN_FILE;
	struct wl_cache_opts o = {big ? wl_cache_dir(dir, sizeof dir) : NULL,
				  WL_CACHE_MIN_FILE};
	struct wl_cache_report rep;
	struct wl_workload *w = wl_load_yaml_cached(path, batch, &o, &rep, err);
	/* the cache never changes a result: a damaged entry or a failed
	 * write is said, and the YAML was loaded */
	if (rep.status == WL_CACHE_CORRUPT)
		fprintf(stderr, "gpumemsim: warning: %s; loaded %s instead\n",
			rep.why, path);
	if (rep.write_failed)
		fprintf(stderr, "gpumemsim: warning: %s: workload cache not "
			"written (%s)\n", path, rep.why);
	return w;
}
