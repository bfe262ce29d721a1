/*
 * wl_et.c - PyTorch execution traces as workloads (wl_load_et; issue 35).
 *
 * The format: the JSON that torch.profiler.ExecutionTraceObserver writes
 * (torch 2.x; torch 1.13 calls it ExecutionGraphObserver), the input of
 * MLCommons Chakra's converter (chakra/src/converter/pytorch_converter.py)
 * and so of ASTRA-sim. One object: "schema" ("1.0.1" from torch 1.13,
 * "1.0.x[-chakra...]" from torch 2.x) and "nodes", a list of nodes, each
 * with "id", "name", its parent ("parent", or "ctrl_deps" in torch 2.x's
 * later schemas), "op_schema" (the ATen schema; empty for a
 * record_function range), and its arguments: torch 1.13's "inputs",
 * "input_shapes", "input_types" (and the same for outputs) as parallel
 * lists, or torch 2.x's "inputs": {"values", "shapes", "types"}. A
 * tensor argument's value is [tensor id, storage id, offset, numel,
 * itemsize, device] (torch/csrc/profiler/standalone/
 * execution_trace_observer.cpp, `TensorValue`: "tensor_id, storage_id,
 * offset, numel, itemsize, device_str"); a "GenericList[Tensor...]" value
 * is a list of those.
 *
 * The reading:
 *   - an op is a node with an op_schema none of whose ancestors has one
 *     (an ATen op called by another is part of it: aten::t calls
 *     aten::transpose calls aten::as_strided); ops run in order of id
 *     (the observer numbers nodes as they start);
 *   - phase: backward for an op below an "autograd::engine::evaluate_
 *     function: ..." range (the autograd engine's), update for any other
 *     op after the first backward one (the optimizer's step), forward
 *     before;
 *   - a storage is one tensor of the workload, (offset + numel) * itemsize
 *     bytes of the first tensor on it the trace shows (there are no
 *     strides in the trace: a later broadcast view, expand's stride 0,
 *     would count elements twice); an op reads the storages of
 *     its tensor inputs and makes those of its outputs not seen before
 *     (an output on a known storage is a view or an in-place write);
 *   - lifetimes: the trace records no frees, so a storage made by an op
 *     is freed after its last reader (the default release point); one
 *     never made by an op existed before the step: a parameter when a
 *     forward op reads it (the batch and labels too: the trace does not
 *     say which tensor is the batch), optimizer state otherwise, both
 *     kept for the whole run;
 *   - kinds of made storages: forward an activation; backward a parameter
 *     gradient when an update op reads it, else an activation gradient;
 *     update (the optimizer's temporaries) an activation gradient;
 *   - costs: wl_aten_op_desc from the ATen name and shapes, as for the
 *     recorder's logs (the profile's compute model; a Kineto trace's
 *     kernel times are not read); an op whose outputs are all on known
 *     storages and that writes none (a view) takes 1 ns;
 *   - recomputable (remat forward): a forward op that writes no storage
 *     it did not make; simrd: every op.
 * Errors name file:line:col of the node or value and the key; the file
 * is read as YAML (JSON is YAML's flow style; sim/cfg.c), so its size
 * and nesting limits (CFG_MAX_BYTES) apply.
 */
#include "wl.h"
#include "wl_aten.h"
#include "conv_algo.h"
#include "../sim/cfg.h"

#include <stdlib.h>
#include <string.h>

/* A node of the trace, in id order. */
struct et_node {
	int64_t id, parent;
	yaml_node_t *y;	 /* its mapping */
	const char *name;
	const char *schema; /* its op_schema ("" for a range) */
	bool op;	 /* has an op_schema */
	bool in_op;	 /* an ancestor has one */
	bool in_bwd;	 /* below an autograd engine range */
};

/* A storage: one tensor of the workload. */
struct et_sto {
	int64_t id;	   /* storage id in the trace */
	uint64_t bytes;	   /* (offset + numel) * itemsize, first tensor */
	uint32_t producer; /* index of the op that made it, UINT32_MAX none */
	bool fwd_read;	   /* a forward op read it */
	bool upd_read;	   /* an update op read it */
	uint32_t tensor;   /* workload tensor */
};

/* One tensor argument of an op. */
struct et_arg {
	uint32_t sto;
	struct wl_aten_shape sh;
	bool out;
	bool nested;  /* an output of an op the op called */
};

struct et {
	struct cfg_doc *doc;
	gms_err *err;
	struct et_sto *sto;
	uint32_t n_sto, cap_sto;
	uint32_t *ht;	   /* storage id -> index + 1, open addressing */
	uint32_t ht_cap;
	struct et_arg *args;
	uint32_t n_args, cap_args;
};

static int cmp_node(const void *a, const void *b)
{
	const struct et_node *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

static const struct et_node *node_by_id(const struct et_node *n, size_t cnt,
					int64_t id)
{
	size_t lo = 0, hi = cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (n[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cnt && n[lo].id == id ? &n[lo] : NULL;
}

/* An integer scalar node (decimal, optionally negative). */
static int get_int(struct et *e, const yaml_node_t *y, const char *what,
		   int64_t lo, int64_t hi, int64_t *out)
{
	const char *s = y ? cfg_scalar(y) : NULL;
	char *end;
	if (!s || !*s)
		return cfg_errf(e->err, e->doc, y, "%s: expected an integer",
				what);
	long long v = strtoll(s, &end, 10);
	if (*end || v < lo || v > hi)
		return cfg_errf(e->err, e->doc, y,
				"%s: expected an integer in [%lld, %lld]", what,
				(long long)lo, (long long)hi);
	*out = v;
	return 0;
}

static int key_int(struct et *e, const yaml_node_t *m, const char *key,
		   const char *what, int64_t *out)
{
	yaml_node_t *v = cfg_map_get(e->doc, m, key);
	char w[160];
	snprintf(w, sizeof w, "%s: key '%s'", what, key);
	if (!v)
		return cfg_errf(e->err, e->doc, m, "%s: missing", w);
	return get_int(e, v, w, INT64_MIN / 2, INT64_MAX / 2, out);
}

/* Room for one more element of size elem in *p (n used, *cap held):
 * doubles *cap when full; -1 when memory runs out. */
static int grow(void **p, uint32_t n, uint32_t *cap, size_t elem)
{
	if (n < *cap)
		return 0;
	uint32_t c = *cap ? 2 * *cap : 256;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static uint32_t hash64(int64_t v)
{
	uint64_t x = (uint64_t)v * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(x >> 32);
}

/* The storage with trace id sid, made if new and create (*fresh then
 * true); index, or UINT32_MAX when memory runs out or it is new and not
 * create. */
static uint32_t sto_get(struct et *e, int64_t sid, bool create, bool *fresh)
{
	*fresh = false;
	if (2 * (e->n_sto + 1) > e->ht_cap) {
		uint32_t cap = e->ht_cap ? 2 * e->ht_cap : 1024;
		uint32_t *ht = calloc(cap, sizeof *ht);
		if (!ht)
			return UINT32_MAX;
		for (uint32_t i = 0; i < e->ht_cap; i++)
			if (e->ht[i]) {
				uint32_t h = hash64(e->sto[e->ht[i] - 1].id) &
					     (cap - 1);
				while (ht[h])
					h = (h + 1) & (cap - 1);
				ht[h] = e->ht[i];
			}
		free(e->ht);
		e->ht = ht;
		e->ht_cap = cap;
	}
	uint32_t h = hash64(sid) & (e->ht_cap - 1);
	while (e->ht[h]) {
		if (e->sto[e->ht[h] - 1].id == sid)
			return e->ht[h] - 1;
		h = (h + 1) & (e->ht_cap - 1);
	}
	if (!create) {
		*fresh = true;
		return UINT32_MAX;
	}
	if (grow((void **)&e->sto, e->n_sto, &e->cap_sto, sizeof *e->sto) < 0)
		return UINT32_MAX;
	e->sto[e->n_sto] = (struct et_sto){.id = sid, .producer = UINT32_MAX,
					   .tensor = WL_NONE};
	e->ht[h] = ++e->n_sto;
	*fresh = true;
	return e->n_sto - 1;
}

/* The shape node sh (a list of integers) into out (elem set by the
 * caller). */
static int read_shape(struct et *e, const yaml_node_t *sh, const char *what,
		      struct wl_aten_shape *out)
{
	size_t n = cfg_seq_len(sh);
	if (!sh || sh->type != YAML_SEQUENCE_NODE)
		return cfg_errf(e->err, e->doc, sh, "%s: expected a list of "
				"dimensions", what);
	if (n > WL_ATEN_DIMS)
		return cfg_errf(e->err, e->doc, sh, "%s: more than %d "
				"dimensions", what, WL_ATEN_DIMS);
	out->ndim = (uint32_t)n;
	for (size_t i = 0; i < n; i++)
		if (get_int(e, cfg_seq_item(e->doc, sh, i), what, 0,
			    (int64_t)WL_BYTES_MAX, &out->dim[i]) < 0)
			return -1;
	return 0;
}

/* One tensor value v ([tensor id, storage id, offset, numel, itemsize,
 * device]) with its shape node sh, of op op; appended to e->args. */
static int add_tensor_arg(struct et *e, const yaml_node_t *v,
			  const yaml_node_t *sh, bool out, bool nested,
			  uint32_t op, const char *type, const char *what)
{
	if (!v || v->type != YAML_SEQUENCE_NODE || cfg_seq_len(v) != 6)
		return cfg_errf(e->err, e->doc, v, "%s: a tensor value is "
				"[tensor id, storage id, offset, numel, "
				"itemsize, device]", what);
	int64_t f[5];
	for (size_t i = 0; i < 5; i++)
		if (get_int(e, cfg_seq_item(e->doc, v, i), what, 0,
			    (int64_t)WL_BYTES_MAX, &f[i]) < 0)
			return -1;
	if (f[3] == 0) /* empty or undefined ("Tensor(nullptr ...)") */
		return 0;
	if (f[4] < 1 || f[4] > 16)
		return cfg_errf(e->err, e->doc, cfg_seq_item(e->doc, v, 4),
				"%s: itemsize %lld is not 1 to 16 bytes", what,
				(long long)f[4]);
	struct et_arg a = {.out = out, .nested = nested};
	a.sh.elem = (uint32_t)f[4];
	if (read_shape(e, sh, what, &a.sh) < 0)
		return -1;
	bool fresh;
	/* a Python number ATen wrapped for the op (a 0-dim double or int64
	 * tensor, c10::TensorImpl::is_wrapped_number; SGD's momentum in
	 * buf.mul_(momentum)) that no op made: not a tensor of the step */
	if (!out && a.sh.ndim == 0 &&
	    (!strcmp(type, "Tensor(double)") ||
	     !strcmp(type, "Tensor(long int)"))) {
		(void)sto_get(e, f[1], false, &fresh);
		if (fresh)
			return 0;
	}
	a.sto = sto_get(e, f[1], true, &fresh);
	if (a.sto == UINT32_MAX)
		return gms_errf(e->err, "%s: out of memory", e->doc->path), -1;
	struct et_sto *s = &e->sto[a.sto];
	uint64_t bytes = (uint64_t)(f[2] + f[3]) * (uint64_t)f[4];
	if (bytes > WL_BYTES_MAX)
		return cfg_errf(e->err, e->doc, v, "%s: more than 1e15 bytes",
				what);
	/* the trace has no strides: a broadcast view (expand's stride 0)
	 * counts elements twice, so the tensor that first shows a storage
	 * sizes it */
	if (fresh)
		s->bytes = bytes;
	if (fresh && out)
		s->producer = op;
	if (grow((void **)&e->args, e->n_args, &e->cap_args,
		 sizeof *e->args) < 0)
		return gms_errf(e->err, "%s: out of memory", e->doc->path), -1;
	e->args[e->n_args++] = a;
	return 0;
}

/* The values, shapes and types lists of a node's inputs or outputs
 * (which: "inputs" / "outputs"), in either schema. */
static int arg_lists(struct et *e, const yaml_node_t *m, const char *which,
		     const char *what, yaml_node_t **val, yaml_node_t **shp,
		     yaml_node_t **typ)
{
	yaml_node_t *v = cfg_map_get(e->doc, m, which);
	char key[32];
	if (v && v->type == YAML_MAPPING_NODE) { /* torch 2.x's later form */
		*val = cfg_map_get(e->doc, v, "values");
		*shp = cfg_map_get(e->doc, v, "shapes");
		*typ = cfg_map_get(e->doc, v, "types");
	} else {
		*val = v;
		size_t wl = strlen(which) - 1; /* "input_shapes" */
		snprintf(key, sizeof key, "%.*s_shapes", (int)wl, which);
		*shp = cfg_map_get(e->doc, m, key);
		snprintf(key, sizeof key, "%.*s_types", (int)wl, which);
		*typ = cfg_map_get(e->doc, m, key);
	}
	size_t n = cfg_seq_len(*val);
	if (!*val || (*val)->type != YAML_SEQUENCE_NODE)
		return cfg_errf(e->err, e->doc, *val ? *val : m,
				"%s: key '%s': expected a list of values",
				what, which);
	if (!*shp || (*shp)->type != YAML_SEQUENCE_NODE ||
	    cfg_seq_len(*shp) != n)
		return cfg_errf(e->err, e->doc, *shp ? *shp : m,
				"%s: the shapes of '%s': expected a list of "
				"%zu", what, which, n);
	if (!*typ || (*typ)->type != YAML_SEQUENCE_NODE ||
	    cfg_seq_len(*typ) != n)
		return cfg_errf(e->err, e->doc, *typ ? *typ : m,
				"%s: the types of '%s': expected a list of "
				"%zu", what, which, n);
	return 0;
}

/* The tensor arguments of op node m (op index op) into e->args. */
static int read_args(struct et *e, const yaml_node_t *m, uint32_t op,
		     bool nested, const char *what)
{
	for (int o = nested; o < 2; o++) {
		const char *which = o ? "outputs" : "inputs";
		yaml_node_t *val, *shp, *typ;
		if (arg_lists(e, m, which, what, &val, &shp, &typ) < 0)
			return -1;
		for (size_t i = 0; i < cfg_seq_len(val); i++) {
			const char *t = cfg_scalar(cfg_seq_item(e->doc, typ, i));
			yaml_node_t *v = cfg_seq_item(e->doc, val, i),
				    *s = cfg_seq_item(e->doc, shp, i);
			char w[200];
			snprintf(w, sizeof w, "%s: %s item %zu", what, which,
				 i + 1);
			if (!t)
				return cfg_errf(e->err, e->doc,
						cfg_seq_item(e->doc, typ, i),
						"%s: its type: expected a "
						"string", w);
			if (!strncmp(t, "Tensor", 6)) {
				if (add_tensor_arg(e, v, s, o, nested, op, t,
						   w) < 0)
					return -1;
			} else if (!strncmp(t, "GenericList[Tensor", 18)) {
				if (!v || v->type != YAML_SEQUENCE_NODE ||
				    !s || s->type != YAML_SEQUENCE_NODE ||
				    cfg_seq_len(s) != cfg_seq_len(v))
					return cfg_errf(e->err, e->doc, v,
							"%s: a tensor list "
							"and its shapes", w);
				for (size_t k = 0; k < cfg_seq_len(v); k++)
					if (add_tensor_arg(
						    e, cfg_seq_item(e->doc, v, k),
						    cfg_seq_item(e->doc, s, k), o,
						    nested, op, "", w) < 0)
						return -1;
			}
		}
	}
	return 0;
}

struct wl_workload *wl_load_et(const char *path, enum wl_dtr_remat r,
			       gms_err *err)
{
	struct et e = {.err = err};
	struct et_node *nodes = NULL;
	struct wl_workload *w = NULL;
	uint32_t *op_node = NULL, *arg0 = NULL, *ids = NULL;
	uint8_t *phase = NULL;
	struct wl_algo algos[CA_MAX_ALGOS];
	if (cfg_load(&e.doc, path, err) < 0)
		return NULL;
	yaml_node_t *root = cfg_root(e.doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		cfg_errf(err, e.doc, root, "an execution trace is one JSON "
			 "object with 'schema' and 'nodes'");
		goto fail;
	}
	yaml_node_t *schema = cfg_map_get(e.doc, root, "schema");
	const char *sv = schema ? cfg_scalar(schema) : NULL;
	if (!sv || strncmp(sv, "1.", 2) != 0) {
		cfg_errf(err, e.doc, schema ? schema : root,
			 "key 'schema': expected an execution trace schema "
			 "1.x (torch.profiler.ExecutionTraceObserver)");
		goto fail;
	}
	yaml_node_t *ns = cfg_map_get(e.doc, root, "nodes");
	size_t n = cfg_seq_len(ns);
	if (!ns || ns->type != YAML_SEQUENCE_NODE || n == 0) {
		cfg_errf(err, e.doc, ns ? ns : root,
			 "key 'nodes': expected a non-empty list");
		goto fail;
	}
	nodes = calloc(n, sizeof *nodes);
	op_node = malloc(n * sizeof *op_node);
	arg0 = malloc((n + 1) * sizeof *arg0);
	phase = malloc(n);
	if (!nodes || !op_node || !arg0 || !phase) {
		gms_errf(err, "%s: out of memory", path);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		struct et_node *x = &nodes[i];
		char what[64];
		snprintf(what, sizeof what, "node %zu", i + 1);
		x->y = cfg_seq_item(e.doc, ns, i);
		if (!x->y || x->y->type != YAML_MAPPING_NODE) {
			cfg_errf(err, e.doc, x->y, "%s: expected an object",
				 what);
			goto fail;
		}
		const char *pk = cfg_map_get(e.doc, x->y, "parent")
					 ? "parent"
					 : "ctrl_deps";
		yaml_node_t *nm = cfg_map_get(e.doc, x->y, "name");
		yaml_node_t *os = cfg_map_get(e.doc, x->y, "op_schema");
		if (key_int(&e, x->y, "id", what, &x->id) < 0 ||
		    key_int(&e, x->y, pk, what, &x->parent) < 0)
			goto fail;
		x->name = nm ? cfg_scalar(nm) : NULL;
		if (!x->name) {
			cfg_errf(err, e.doc, nm ? nm : x->y,
				 "%s: key 'name': expected a string", what);
			goto fail;
		}
		x->schema = os && cfg_scalar(os) ? cfg_scalar(os) : "";
		x->op = x->schema[0] != '\0';
	}
	qsort(nodes, n, sizeof *nodes, cmp_node);
	for (size_t i = 1; i < n; i++)
		if (nodes[i].id == nodes[i - 1].id) {
			cfg_errf(err, e.doc, nodes[i].y,
				 "key 'id': %lld is used twice",
				 (long long)nodes[i].id);
			goto fail;
		}
	/* in id order a parent (started earlier) comes first */
	uint32_t n_ops = 0;
	bool bwd_seen = false;
	for (size_t i = 0; i < n; i++) {
		struct et_node *x = &nodes[i];
		const struct et_node *p =
			x->parent < x->id ? node_by_id(nodes, n, x->parent)
					  : NULL;
		if (p) {
			x->in_op = p->op || p->in_op;
			x->in_bwd = p->in_bwd ||
				    !strncmp(p->name,
					     "autograd::engine::evaluate_"
					     "function", 35);
		}
		if (x->op && x->in_op && n_ops) {
			/* a storage an inner op makes is the outer op's
			 * (cross_entropy_loss's log_softmax, which the
			 * backward reads) */
			char what[96];
			snprintf(what, sizeof what, "node %lld ('%.40s')",
				 (long long)x->id, x->name);
			if (read_args(&e, x->y, n_ops - 1, true, what) < 0)
				goto fail;
			arg0[n_ops] = e.n_args;
			continue;
		}
		if (!x->op || x->in_op)
			continue;
		bwd_seen |= x->in_bwd;
		phase[n_ops] = x->in_bwd    ? WL_BWD
			       : bwd_seen ? WL_UPD
					  : WL_FWD;
		op_node[n_ops] = (uint32_t)i;
		arg0[n_ops] = e.n_args;
		char what[96];
		snprintf(what, sizeof what, "node %lld ('%.40s')",
			 (long long)x->id, x->name);
		if (read_args(&e, x->y, n_ops, false, what) < 0)
			goto fail;
		n_ops++;
		arg0[n_ops] = e.n_args;
	}
	if (!n_ops) {
		cfg_errf(err, e.doc, ns, "key 'nodes': no ATen op (a node "
			 "with an op_schema)");
		goto fail;
	}
	for (uint32_t o = 0; o < n_ops; o++)
		for (uint32_t a = arg0[o]; a < arg0[o + 1]; a++) {
			struct et_sto *s = &e.sto[e.args[a].sto];
			if (e.args[a].out)
				continue;
			s->fwd_read |= phase[o] == WL_FWD;
			s->upd_read |= phase[o] == WL_UPD;
		}
	char name[256];
	int64_t batch;
	wl_dtr_name_from_path(path, name, sizeof name, &batch);
	w = wl_new(name, batch);
	ids = malloc((e.n_args + 1) * sizeof *ids);
	if (!w || !ids) {
		gms_errf(err, "%s: out of memory", path);
		goto fail;
	}
	for (uint32_t i = 0; i < e.n_sto; i++) {
		struct et_sto *s = &e.sto[i];
		if (!s->bytes)
			continue;
		enum wl_kind k;
		if (s->producer == UINT32_MAX)
			k = s->fwd_read ? WL_PARAM : WL_OPT_STATE;
		else if (phase[s->producer] == WL_FWD)
			k = WL_ACT;
		else if (phase[s->producer] == WL_BWD && s->upd_read)
			k = WL_PARAM_GRAD;
		else
			k = WL_ACT_GRAD;
		char tn[48];
		snprintf(tn, sizeof tn, "storage%lld", (long long)s->id);
		s->tensor = wl_add_tensor(w, tn, s->bytes, k, err);
		if (s->tensor == WL_NONE) {
			gms_err_prefix(err, "%s", path);
			goto fail;
		}
	}
	for (uint32_t o = 0; o < n_ops; o++) {
		const struct et_node *x = &nodes[op_node[o]];
		uint32_t *in = ids, n_in = 0, n_out = 0, n_si = 0, n_so = 0;
		struct wl_aten_shape si[32], so[32];
		bool writes_old = false;
		for (uint32_t a = arg0[o]; a < arg0[o + 1]; a++) {
			const struct et_arg *g = &e.args[a];
			const struct et_sto *s = &e.sto[g->sto];
			bool made = g->out && s->producer == o;
			if (g->out && !g->nested && n_so < 32)
				so[n_so++] = g->sh;
			if (!g->out && n_si < 32)
				si[n_si++] = g->sh;
			writes_old |= g->out && !made;
			if (s->tensor == WL_NONE || made)
				continue;
			bool dup = false;
			for (uint32_t j = 0; j < n_in && !dup; j++)
				dup = in[j] == s->tensor;
			if (!dup)
				in[n_in++] = s->tensor;
		}
		uint32_t *out = ids + n_in;
		for (uint32_t a = arg0[o]; a < arg0[o + 1]; a++) {
			const struct et_sto *s = &e.sto[e.args[a].sto];
			if (e.args[a].out && s->producer == o &&
			    s->tensor != WL_NONE) {
				bool dup = false;
				for (uint32_t j = 0; j < n_out && !dup; j++)
					dup = out[j] == s->tensor;
				if (!dup)
					out[n_out++] = s->tensor;
			}
		}
		const char *an = !strncmp(x->name, "aten::", 6) ? x->name + 6
								: x->name;
		char oname[160];
		snprintf(oname, sizeof oname, "%.120s/%u", an, o);
		struct wl_conv conv;
		struct wl_op_desc desc = {
			.name = oname,
			.phase = (enum wl_phase)phase[o],
			.in = in,
			.n_in = n_in,
			.out = out,
			.n_out = n_out,
			.recomputable = r == WL_DTR_REMAT_SIMRD ||
					(phase[o] == WL_FWD && !writes_old),
		};
		wl_aten_op_desc(an, desc.phase, si, n_si, so, n_so, &desc,
				algos, &conv);
		/* a view: outputs only on known storage, and the schema
		 * writes no argument ("Tensor(a!)" marks one written) */
		if (!n_out && n_so && !strchr(x->schema, '!'))
			desc.time = 1;
		if (wl_add_op(w, &desc, err) == WL_NONE) {
			cfg_err_at(err, e.doc, x->y, "node %lld",
				   (long long)x->id);
			goto fail;
		}
	}
	if (wl_finalize(w, err) < 0) {
		gms_err_prefix(err, "%s", path);
		goto fail;
	}
	goto done;
fail:
	wl_free(w);
	w = NULL;
done:
	free(ids);
	free(phase);
	free(arg0);
	free(op_node);
	free(nodes);
	free(e.sto);
	free(e.ht);
	free(e.args);
	cfg_free(e.doc);
	return w;
}
