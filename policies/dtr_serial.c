/*
 * dtr_serial.c - the "serial" DTR replay (dtr.h): a DTR log parsed into
 * simrd's op/storage stream and schedule, replayed as simrd's
 * RuntimeV2EagerOptimized does it. Sources, uwsampl/dtr-prototype at
 * eff53cc, paths under simrd/simrd/ (summary: dtr-semantics.md):
 *
 *  parse/parse.py parse_file   the schedule: CONSTANT -> compute + Pin;
 *                              CALL -> compute (an ALIAS k result is a
 *                              size-0 view sharing arg k's storage);
 *                              MUTATE -> compute of a new op over all
 *                              ARGS, one fresh output per mutated arg of
 *                              that arg's storage size, the name rebound
 *                              and the old tensor released; COPY -> Get;
 *                              COPY_FROM -> Release(old dst), Get;
 *                              RELEASE -> Release; at the end a Pin for
 *                              every name whose tensor's parse refcount
 *                              is > 0, in the order names were first bound
 *  parse/graph.py get_closure  Pin rematerializes an undefined tensor
 *  tensor.py                   Storage (size, tensors: root then views,
 *                              ref_ext, ref_int, compute = TIME of the
 *                              distinct ops of its tensors, updated when a
 *                              tensor is created), Tensor.from_op (the
 *                              outputs become children of every argument,
 *                              duplicates kept)
 *  runtime/runtime.py          the clock starts at 1
 *  runtime/v2.py RuntimeV2     _materialize, _compute, _free, _lock,
 *                              _unlock, the storage pool (a list: append
 *                              at the end, remove anywhere), the thrash
 *                              check after every materialize
 *  runtime/v2.py RuntimeV2Optimized  regions rebuilt after _compute and
 *                              absorbed on _evict; equivalence classes
 *  runtime/v2.py RuntimeV2EagerOptimized  eager eviction on release
 *  optimization/region.py      Region.rebuild, Region.absorb
 *  optimization/eqclass.py     EqClassNode (union-find), CheckpointInfo
 *  heuristic/heuristic.py      choose: the pool scanned in order, a
 *                              storage taken whenever cost <= best, so
 *                              of equal costs the last; stop at a cost
 *                              of 0
 *  runtime/v1.py               the baseline: RuntimeV1 at an unlimited
 *                              budget frees (banishes) a storage when its
 *                              last handle goes, pinned ones included
 *
 * Layout. The trace holds the static stream: ops, tensors (numbered in
 * creation order, an op's outputs consecutive), storages (numbered in
 * creation order, each with its tensors), the children of each tensor in
 * creation order, and the schedule. A replay (struct ds_run) holds the
 * mutable state. "Created so far" is a prefix of the tensor numbers, so a
 * tensor's children and a storage's views as simrd sees them at any point
 * are the prefix of the static lists below n_created.
 *
 * Speed (README, "The serial preset: simrd exactly"): the regions walk a
 * storage graph with each edge once (struct ds_adj); the regions of one
 * update are rebuilt from closures shared between them (struct ds_memo:
 * the same sets simrd's per-region DFS finds, rebuild_walk, which
 * dtr_opts.walk_regions keeps for tests); their sets are lists or
 * bitsets with a span (struct ds_ids) from a per-replay arena; a pinned
 * storage's regions, and MSPS's children-side interiors, are not kept
 * because nothing reads them (regions_after, struct ds_run's
 * fwd_interior). Everything else is simrd's algorithm, step for step.
 */
#include "dtr.h"

#include "../workloads/wl_dtr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DS_NIL UINT32_MAX /* no tensor / storage / op / node */

/* ---- The static stream ------------------------------------------------ */

/* An op: a CONSTANT, CALL or MUTATE. */
struct ds_op {
	uint64_t time;	/* TIME, ns (0 for a constant) */
	uint64_t total; /* sum of its outputs' sizes (views count 0) */
	uint32_t arg0;	/* its arguments: tr->args[arg0 ..] (tensors) */
	uint32_t n_arg; /* their number (repeats kept) */
	uint32_t out0;	/* its outputs: tensors out0 .. out0 + n_out - 1 */
	uint32_t n_out; /* their number (>= 1) */
	bool constant;	/* a CONSTANT (pinned, never freed) */
};

/* A tensor: one output of one op. */
struct ds_tensor {
	uint32_t op;	 /* the op that makes it */
	uint32_t sto;	 /* its storage */
	uint64_t size;	 /* its own size: 0 for a view */
	uint64_t cdelta; /* what its creation adds to its storage's
			    compute: its op's TIME, unless that op already
			    made a tensor of the storage */
	uint32_t kid0;	 /* its children: tr->kids[kid0 .. kid0 + n_kid) */
	uint32_t n_kid;	 /* their number (repeats kept) */
};

/* A storage. */
struct ds_sto {
	uint64_t size; /* bytes */
	uint32_t t0;   /* its tensors: tr->sto_t[t0 .. t0 + nt), root first */
	uint32_t nt;   /* their number */
};

/* The storage-level graph in one direction: for each storage, the other
 * storages next to any of its tensors, each once, with the tensor id from
 * which on the edge exists (the first child's, or the first tensor's of
 * the storage that has that parent), sorted by it: the neighbours as of n
 * tensors created are the entries with key < n. The regions' DFS visits
 * these instead of every tensor's parents or children: it only collects
 * sets (and sums over them), so repeats and order do not matter, and the
 * transformer's views repeat most edges. */
struct ds_adj {
	uint32_t *off; /* storage s: entries off[s] .. off[s + 1] */
	uint32_t *sto; /* the neighbour */
	uint32_t *key; /* from which tensor id on */
};

enum { DIR_FWD, DIR_REV }; /* region (children), region_rev (parents) */

/* A schedule command (parse/graph.py GCompute, GGet, GRelease). */
enum ds_cmd_kind { C_COMPUTE, C_GET, C_PIN, C_RELEASE };

struct ds_cmd {
	enum ds_cmd_kind kind; /* what */
	uint32_t arg;	       /* C_COMPUTE: the op; else the tensor */
};

/* A growable array. */
struct ds_vec {
	void *p;      /* elements */
	uint32_t n;   /* used */
	uint32_t cap; /* allocated */
};

struct dtr_trace {
	struct ds_vec ops;   /* struct ds_op */
	struct ds_vec ts;    /* struct ds_tensor */
	struct ds_vec stos;  /* struct ds_sto */
	struct ds_vec args;  /* uint32_t: ops' argument tensors */
	struct ds_vec cmds;  /* struct ds_cmd: the schedule */
	uint32_t *kids;	     /* children of all tensors (CSR) */
	struct ds_adj adj[2]; /* storage neighbours, [DIR_FWD]: children,
				 [DIR_REV]: parents */
	uint32_t *sto_t;     /* tensors of all storages (CSR) */
	uint64_t const_bytes; /* bytes of all constants */
	struct dtr_baseline base; /* filled at load */
	double *inv_size;    /* per storage: LargestStorage's score, 1 /
				size (it never changes; a division per
				storage scanned was most of a replay) */
	gms_err untimed;     /* the first CALL or MUTATE without TIME, as
				the replay's refusal (serial_run); msg[0]
				0: every op has one */
};

#define OPS(tr) ((struct ds_op *)(tr)->ops.p)
#define TS(tr) ((struct ds_tensor *)(tr)->ts.p)
#define STOS(tr) ((struct ds_sto *)(tr)->stos.p)
#define ARGS(tr) ((uint32_t *)(tr)->args.p)
#define CMDS(tr) ((struct ds_cmd *)(tr)->cmds.p)

static int vec_grow(struct ds_vec *v, size_t elem, uint32_t need)
{
	if (need <= v->cap)
		return 0;
	uint64_t cap = v->cap ? v->cap : 64;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX)
		return -1;
	void *p = realloc(v->p, (size_t)cap * elem);
	if (!p)
		return -1;
	v->p = p;
	v->cap = (uint32_t)cap;
	return 0;
}

static int vec_push(struct ds_vec *v, size_t elem, const void *x)
{
	if (v->n == UINT32_MAX || vec_grow(v, elem, v->n + 1) < 0)
		return -1;
	memcpy((char *)v->p + (size_t)v->n * elem, x, elem);
	v->n++;
	return 0;
}

/* ---- Parsing: the scanner's events into the stream --------------------- */

/* The parse's state (parse_file's tensor_map and the _ref counts). */
struct ds_parse {
	struct dtr_trace *tr; /* being built */
	const char *path;     /* for messages */
	struct ds_vec bound;  /* uint32_t: handle id -> tensor it names */
	struct ds_vec ref;    /* uint32_t: tensor -> parse refcount (_ref) */
	struct ds_vec res;    /* uint32_t: scratch, an op's result tensors */
	struct ds_vec tmp;    /* uint32_t: scratch, an op's argument tensors */
};

static int p_oom(struct ds_parse *ps, uint32_t line, gms_err *err)
{
	return gms_errf(err, "%s:%u: out of memory", ps->path, line);
}

/* Bind handle h to tensor t (handles are numbered densely from 0). */
static int p_bind(struct ds_parse *ps, uint32_t h, uint32_t t)
{
	uint32_t none = DS_NIL;
	while (ps->bound.n <= h)
		if (vec_push(&ps->bound, sizeof none, &none) < 0)
			return -1;
	((uint32_t *)ps->bound.p)[h] = t;
	return 0;
}

static uint32_t p_tensor(const struct ds_parse *ps, uint32_t h)
{
	return h < ps->bound.n ? ((uint32_t *)ps->bound.p)[h] : DS_NIL;
}

static uint32_t *p_ref(struct ds_parse *ps, uint32_t t)
{
	return &((uint32_t *)ps->ref.p)[t];
}

static int p_cmd(struct ds_parse *ps, enum ds_cmd_kind k, uint32_t arg)
{
	struct ds_cmd c = {k, arg};
	return vec_push(&ps->tr->cmds, sizeof c, &c);
}

/* A new op over the tensors args[0 .. n_arg) with n_out outputs; the
 * outputs are added by p_output. */
static int p_op(struct ds_parse *ps, const uint32_t *args, uint32_t n_arg,
		uint64_t time, bool constant)
{
	struct dtr_trace *tr = ps->tr;
	struct ds_op op = {.time = time,
			   .arg0 = tr->args.n,
			   .n_arg = n_arg,
			   .out0 = tr->ts.n,
			   .constant = constant};
	for (uint32_t i = 0; i < n_arg; i++)
		if (vec_push(&tr->args, sizeof *args, &args[i]) < 0)
			return -1;
	return vec_push(&tr->ops, sizeof op, &op);
}

/* An output of the last op: a view of storage sto, or (sto == DS_NIL) a
 * fresh storage of size bytes; returns the tensor or DS_NIL. */
static uint32_t p_output(struct ds_parse *ps, uint32_t sto, uint64_t bytes)
{
	struct dtr_trace *tr = ps->tr;
	uint32_t o = tr->ops.n - 1, t = tr->ts.n, zero = 0;
	struct ds_op *op = &OPS(tr)[o];
	struct ds_tensor x = {.op = o, .sto = sto, .size = bytes,
			      .cdelta = op->time};
	if (sto == DS_NIL) {
		struct ds_sto s = {.size = bytes};
		x.sto = tr->stos.n;
		if (vec_push(&tr->stos, sizeof s, &s) < 0)
			return DS_NIL;
	} else {
		x.size = 0;
	}
	/* distinct ops only (tensor.py Storage.get_compute): a storage's
	 * tensors come in creation order, so an op's second output on the
	 * same storage is the only repeat */
	struct ds_sto *s = &STOS(tr)[x.sto];
	s->nt++;
	for (uint32_t u = op->out0; u < t; u++)
		if (TS(tr)[u].sto == x.sto)
			x.cdelta = 0;
	op->n_out++;
	op->total += x.size;
	if (vec_push(&tr->ts, sizeof x, &x) < 0 ||
	    vec_push(&ps->ref, sizeof zero, &zero) < 0)
		return DS_NIL;
	return t;
}

static int p_event(void *ctx, const struct wl_dtr_event *ev, gms_err *err)
{
	struct ds_parse *ps = ctx;
	struct dtr_trace *tr = ps->tr;
	uint32_t line = ev->line;
	ps->res.n = 0;
	switch (ev->kind) {
	case WL_DTR_START: {
		/* parse_file(start=True): everything before is dropped */
		tr->ops.n = tr->ts.n = tr->stos.n = tr->args.n = 0;
		tr->cmds.n = ps->bound.n = ps->ref.n = 0;
		tr->const_bytes = 0;
		tr->untimed.msg[0] = '\0';
		return 0;
	}
	case WL_DTR_BACKWARD:
		return 0;
	case WL_DTR_CONSTANT: {
		uint32_t t;
		if (p_op(ps, NULL, 0, 0, true) < 0 ||
		    (t = p_output(ps, DS_NIL, ev->bytes)) == DS_NIL ||
		    p_cmd(ps, C_COMPUTE, tr->ops.n - 1) < 0 ||
		    p_cmd(ps, C_PIN, t) < 0 || p_bind(ps, ev->handle, t) < 0)
			return p_oom(ps, line, err);
		*p_ref(ps, t) = 1;
		tr->const_bytes += ev->bytes;
		return 0;
	}
	case WL_DTR_CALL:
	case WL_DTR_MUTATE: {
		bool mut = ev->kind == WL_DTR_MUTATE;
		uint32_t n_out = mut ? ev->n_mutate : ev->n_res;
		if (n_out == 0) /* simrd's compute() takes tensors[0] */
			return gms_errf(err, "%s:%u: %s '%s' has no %s: simrd "
					     "cannot replay an op without "
					     "outputs", ps->path, line,
					mut ? "MUTATE" : "CALL", ev->name,
					mut ? "MUTATE indices" : "results");
		if (ev->time < 0)
			return gms_errf(err, "%s:%u: negative TIME", ps->path,
					line);
		/* simrd's parse() reads every CALL and MUTATE as
		 * Call(j["RESULT"], j["NAME"], j["ARGS"], j["TIME"]) and
		 * Mutate(..., j["TIME"]) (parse/parse.py), so it refuses a
		 * log without TIME (a KeyError). Read as TIME 0, every score
		 * was 0 and the thrash limit 0, which nothing passes: the
		 * replay of gpumemsim-record's densenet121 at ratio 1.0 never
		 * ended (issue 37). The load goes on (the baseline, an
		 * unlimited run, needs no times: the dtr policy's budget
		 * fractions take its peak); the replay refuses it. */
		if (!ev->timed && !tr->untimed.msg[0])
			gms_errf(&tr->untimed,
				 "%s:%u: %s '%s' has no TIME: the serial "
				 "replay (simrd) needs every op's measured "
				 "time; a log without times replays as a "
				 "workload (an experiment's trace:, or "
				 "gpumemsim simulate LOG)",
				 ps->path, line, mut ? "MUTATE" : "CALL",
				 ev->name);
		ps->tmp.n = 0;
		for (uint32_t i = 0; i < ev->n_args; i++) {
			uint32_t t = p_tensor(ps, ev->args[i]);
			if (vec_push(&ps->tmp, sizeof t, &t) < 0)
				return p_oom(ps, line, err);
		}
		if (p_op(ps, ps->tmp.p, ev->n_args, (uint64_t)ev->time,
			 false) < 0)
			return p_oom(ps, line, err);
		const uint32_t *args = &ARGS(tr)[OPS(tr)[tr->ops.n - 1].arg0];
		for (uint32_t i = 0; i < n_out; i++) {
			uint32_t t;
			if (mut) { /* a fresh copy of the mutated storage */
				uint32_t a = args[ev->mutate[i]];
				t = p_output(ps, DS_NIL,
					     STOS(tr)[TS(tr)[a].sto].size);
			} else if (ev->res[i].alias >= 0) {
				uint32_t a = args[ev->res[i].alias];
				t = p_output(ps, TS(tr)[a].sto, 0);
			} else {
				t = p_output(ps, DS_NIL, ev->res[i].bytes);
			}
			if (t == DS_NIL ||
			    vec_push(&ps->res, sizeof t, &t) < 0)
				return p_oom(ps, line, err);
			args = &ARGS(tr)[OPS(tr)[tr->ops.n - 1].arg0];
		}
		if (p_cmd(ps, C_COMPUTE, tr->ops.n - 1) < 0)
			return p_oom(ps, line, err);
		for (uint32_t i = 0; i < n_out; i++) {
			uint32_t t = ((uint32_t *)ps->res.p)[i];
			*p_ref(ps, t) = 1;
			uint32_t h = mut ? ev->args[ev->mutate[i]]
					 : ev->res[i].handle;
			uint32_t old = mut ? p_tensor(ps, h) : DS_NIL;
			if (p_bind(ps, h, t) < 0)
				return p_oom(ps, line, err);
			if (mut) {
				(*p_ref(ps, old))--;
				if (p_cmd(ps, C_RELEASE, old) < 0)
					return p_oom(ps, line, err);
			}
		}
		return 0;
	}
	case WL_DTR_COPY:
	case WL_DTR_COPY_FROM: {
		uint32_t t = p_tensor(ps, ev->src);
		if (ev->kind == WL_DTR_COPY_FROM) {
			uint32_t old = p_tensor(ps, ev->handle);
			(*p_ref(ps, old))--;
			if (p_cmd(ps, C_RELEASE, old) < 0)
				return p_oom(ps, line, err);
		}
		(*p_ref(ps, t))++;
		if (p_bind(ps, ev->handle, t) < 0 || p_cmd(ps, C_GET, t) < 0)
			return p_oom(ps, line, err);
		return 0;
	}
	case WL_DTR_RELEASE: {
		uint32_t t = p_tensor(ps, ev->handle);
		(*p_ref(ps, t))--;
		return p_cmd(ps, C_RELEASE, t) < 0 ? p_oom(ps, line, err) : 0;
	}
	}
	return 0;
}

/* Calls fn(ctx, neighbour storage, key) for every edge of storage s in
 * direction dir, repeats included. */
static void p_edges(const struct dtr_trace *tr, uint32_t s, int dir,
		    void (*fn)(void *, uint32_t, uint32_t), void *ctx)
{
	const struct ds_sto *x = &STOS(tr)[s];
	for (uint32_t i = 0; i < x->nt; i++) {
		uint32_t t = tr->sto_t[x->t0 + i];
		const struct ds_tensor *y = &TS(tr)[t];
		if (dir == DIR_FWD) {
			for (uint32_t k = 0; k < y->n_kid; k++) {
				uint32_t u = tr->kids[y->kid0 + k];
				fn(ctx, TS(tr)[u].sto, u);
			}
		} else {
			const struct ds_op *op = &OPS(tr)[y->op];
			for (uint32_t k = 0; k < op->n_arg; k++)
				fn(ctx, TS(tr)[ARGS(tr)[op->arg0 + k]].sto, t);
		}
	}
}

/* p_adj's state while one storage's edges are gathered. */
struct ds_gather {
	uint32_t self;	/* the storage (self-edges are dropped) */
	uint32_t *slot; /* per storage: its entry in this storage's list + 1,
			   0 if none yet */
	uint32_t *sto;	/* the list: neighbours */
	uint32_t *key;	/* and their least keys */
	uint32_t n;	/* its length */
};

static void p_gather(void *ctx, uint32_t us, uint32_t key)
{
	struct ds_gather *g = ctx;
	if (us == g->self)
		return;
	uint32_t i = g->slot[us];
	if (!i) {
		g->sto[g->n] = us;
		g->key[g->n] = key;
		g->slot[us] = ++g->n;
	} else if (key < g->key[i - 1]) {
		g->key[i - 1] = key;
	}
}

static void p_count(void *ctx, uint32_t us, uint32_t key)
{
	(void)us;
	(void)key;
	(*(uint64_t *)ctx)++;
}

/* Build tr->adj[dir] (struct ds_adj). */
static int p_adj(struct dtr_trace *tr, int dir)
{
	uint32_t ns = tr->stos.n;
	struct ds_adj *a = &tr->adj[dir];
	uint64_t cap = 0, most = 0;
	for (uint32_t s = 0; s < ns; s++) {
		uint64_t n = 0;
		p_edges(tr, s, dir, p_count, &n);
		cap += n;
		most = n > most ? n : most;
	}
	if (cap >= UINT32_MAX)
		return -1;
	a->off = malloc(((size_t)ns + 1) * sizeof *a->off);
	a->sto = malloc((cap ? cap : 1) * sizeof *a->sto);
	a->key = malloc((cap ? cap : 1) * sizeof *a->key);
	struct ds_gather g = {.slot = calloc(ns ? ns : 1, sizeof *g.slot)};
	if (!a->off || !a->sto || !a->key || !g.slot) {
		free(g.slot);
		return -1;
	}
	uint32_t at = 0;
	for (uint32_t s = 0; s < ns; s++) {
		a->off[s] = at;
		g = (struct ds_gather){s, g.slot, a->sto + at, a->key + at, 0};
		p_edges(tr, s, dir, p_gather, &g);
		/* by key (insertion sort: the lists are short and mostly in
		 * order already), and reset the slots */
		for (uint32_t i = 0; i < g.n; i++) {
			g.slot[g.sto[i]] = 0;
			uint32_t k = g.key[i], v = g.sto[i], j = i;
			for (; j > 0 && g.key[j - 1] > k; j--) {
				g.key[j] = g.key[j - 1];
				g.sto[j] = g.sto[j - 1];
			}
			g.key[j] = k;
			g.sto[j] = v;
		}
		at += g.n;
	}
	a->off[ns] = at;
	free(g.slot);
	(void)most;
	return 0;
}

/* After the scan: the end's Pins, the children and storage lists. */
static int p_finish(struct ds_parse *ps)
{
	struct dtr_trace *tr = ps->tr;
	for (uint32_t h = 0; h < ps->bound.n; h++) {
		uint32_t t = p_tensor(ps, h);
		/* signed: a name released twice takes _ref below 0
		 * (wl_dtr.h), and Python's `> 0` is false there */
		if (t != DS_NIL && (int32_t)*p_ref(ps, t) > 0 &&
		    p_cmd(ps, C_PIN, t) < 0)
			return -1;
	}
	uint32_t nt = tr->ts.n, ns = tr->stos.n;
	struct ds_tensor *ts = TS(tr);
	struct ds_sto *ss = STOS(tr);
	/* children: op o's outputs are appended to each argument's list,
	 * in op order (Tensor.from_op: p.children.extend(outputs)) */
	uint64_t n_kids = 0;
	for (uint32_t o = 0; o < tr->ops.n; o++) {
		const struct ds_op *op = &OPS(tr)[o];
		for (uint32_t i = 0; i < op->n_arg; i++)
			ts[ARGS(tr)[op->arg0 + i]].n_kid += op->n_out;
		n_kids += (uint64_t)op->n_arg * op->n_out;
	}
	if (n_kids >= UINT32_MAX)
		return -1;
	tr->kids = malloc((n_kids ? n_kids : 1) * sizeof *tr->kids);
	tr->sto_t = malloc((nt ? nt : 1) * sizeof *tr->sto_t);
	if (!tr->kids || !tr->sto_t)
		return -1;
	uint32_t k = 0;
	for (uint32_t t = 0; t < nt; t++) {
		ts[t].kid0 = k;
		k += ts[t].n_kid;
		ts[t].n_kid = 0;
	}
	for (uint32_t o = 0; o < tr->ops.n; o++) {
		const struct ds_op *op = &OPS(tr)[o];
		for (uint32_t i = 0; i < op->n_arg; i++) {
			struct ds_tensor *p = &ts[ARGS(tr)[op->arg0 + i]];
			for (uint32_t j = 0; j < op->n_out; j++)
				tr->kids[p->kid0 + p->n_kid++] = op->out0 + j;
		}
	}
	k = 0;
	for (uint32_t s = 0; s < ns; s++) {
		ss[s].t0 = k;
		k += ss[s].nt;
		ss[s].nt = 0;
	}
	for (uint32_t t = 0; t < nt; t++) {
		struct ds_sto *s = &ss[ts[t].sto];
		tr->sto_t[s->t0 + s->nt++] = t;
	}
	return p_adj(tr, DIR_FWD) < 0 || p_adj(tr, DIR_REV) < 0 ? -1 : 0;
}

void dtr_trace_free(struct dtr_trace *tr)
{
	if (!tr)
		return;
	free(tr->ops.p);
	free(tr->ts.p);
	free(tr->stos.p);
	free(tr->args.p);
	free(tr->cmds.p);
	free(tr->kids);
	for (int d = 0; d < 2; d++) {
		free(tr->adj[d].off);
		free(tr->adj[d].sto);
		free(tr->adj[d].key);
	}
	free(tr->sto_t);
	free(tr->inv_size);
	free(tr);
}

static int run_baseline(const struct dtr_trace *tr, struct dtr_baseline *b,
			gms_err *err);

/* Load through the scanner: scan(path or text) with p_event. */
static int trace_load(const char *path, const char *text, size_t len,
		      struct dtr_trace **out, gms_err *err)
{
	*out = NULL;
	struct dtr_trace *tr = calloc(1, sizeof *tr);
	if (!tr)
		return gms_errf(err, "%s: out of memory", path);
	struct ds_parse ps = {.tr = tr, .path = path};
	int rc = text ? wl_dtr_scan_mem(path, text, len, p_event, &ps, err)
		      : wl_dtr_scan(path, p_event, &ps, err);
	if (rc == 0 && p_finish(&ps) < 0)
		rc = gms_errf(err, "%s: out of memory", path);
	free(ps.bound.p);
	free(ps.ref.p);
	free(ps.res.p);
	free(ps.tmp.p);
	if (rc == 0)
		rc = run_baseline(tr, &tr->base, err);
	if (rc == 0 &&
	    !(tr->inv_size = malloc((tr->stos.n ? tr->stos.n : 1) *
				    sizeof *tr->inv_size)))
		rc = gms_errf(err, "%s: out of memory", path);
	for (uint32_t s = 0; rc == 0 && s < tr->stos.n; s++)
		tr->inv_size[s] =
			dtr_cost(DTR_H_LARGEST, 0, STOS(tr)[s].size, 0, 0);
	if (rc < 0) {
		dtr_trace_free(tr);
		return -1;
	}
	*out = tr;
	return 0;
}

int dtr_trace_load(const char *path, struct dtr_trace **out, gms_err *err)
{
	return trace_load(path, NULL, 0, out, err);
}

int dtr_trace_load_mem(const char *name, const char *text, size_t len,
		       struct dtr_trace **out, gms_err *err)
{
	return trace_load(name, text, len, out, err);
}

/* ---- Lists of storages (the regions' interiors and frontiers) ---------- */

/* A set of storage ids, as a list without repeats while short, as a
 * bitset over all storages once long (DS_BITS_MIN). Membership in a short
 * list is tested by marking its members in a per-storage array (struct
 * ds_run's mark, mark2), which costs a pass over it. The regions' largest
 * sets, the ones absorbed into most, are bitsets: on the transformer at
 * 0.9 marking them was 40 of the 41 million storages marked, and growing
 * them as lists was a third of the time. */
struct ds_ids {
	uint32_t *v;	/* short: the members, in no particular order */
	uint32_t n;	/* a list's members (a bitset's are not counted:
			   nothing reads it, and counting them was a tenth
			   of the regions' rebuilds) */
	uint32_t cap;	/* short: room in v */
	uint64_t *bits; /* long: the members as a bitset (v unused), or
			   NULL while short */
	uint32_t lo, hi; /* a bitset: its members are in words lo .. hi - 1
			    (lo >= hi: none); the unions and clears of the
			    regions' sets visit only these (on the
			    transformer a region spans a tenth of them) */
};

/* A list this long becomes a bitset (while the replay's DS_BITS_BUDGET
 * lasts; after that, lists stay lists); every set is a bitset from the
 * start when a bitset has at most DS_BITS_WORDS words (2048 storages):
 * then membership is a bit test everywhere, clearing and walking a set
 * cost a few dozen words. Measured trade-offs, not constants of simrd. */
#define DS_BITS_MIN 64
#define DS_BITS_WORDS 32
#define DS_BITS_BUDGET ((uint64_t)64 << 20) /* bytes of bitsets a replay */

static bool bit_has(const uint64_t *b, uint32_t x)
{
	return b[x >> 6] >> (x & 63) & 1;
}

static void bit_set(uint64_t *b, uint32_t x)
{
	b[x >> 6] |= (uint64_t)1 << (x & 63);
}


/* Where a replay's lists and bitsets live: blocks of power-of-two sizes
 * cut from chunks, a block given back kept for the next request of its
 * size, everything freed at once at the end. A replay grows thousands of
 * short lists; malloc and realloc were a tenth of its time. The chunks
 * are small enough for malloc to take them from its heap (below glibc's
 * 128 KiB mmap threshold), where the next replay finds them again: fresh
 * pages cost more in faults than the lists' work. */
#define DS_CLASSES 40		   /* block sizes 2^0 .. 2^39 bytes */
#define DS_CHUNK ((size_t)64 << 10) /* bytes of a chunk (at least) */

struct ds_arena {
	void *free_[DS_CLASSES]; /* blocks given back, by size class; each
				    holds the next in its first bytes */
	char *at, *end;		 /* the current chunk's unused part */
	void **chunks;		 /* all chunks, to free them */
	uint32_t n_chunks;	 /* how many */
	uint32_t cap_chunks;	 /* allocated */
};

static unsigned size_class(size_t bytes)
{
	unsigned k = 3; /* a block holds a pointer */
	while (((size_t)1 << k) < bytes)
		k++;
	return k;
}

/* A block of at least bytes (a power of two >= 8), uninitialised. */
static void *arena_get(struct ds_arena *a, size_t bytes)
{
	unsigned k = size_class(bytes);
	if (k >= DS_CLASSES)
		return NULL;
	size_t sz = (size_t)1 << k;
	if (a->free_[k]) {
		void *p = a->free_[k];
		memcpy(&a->free_[k], p, sizeof(void *));
		return p;
	}
	if ((size_t)(a->end - a->at) < sz) {
		size_t csz = sz > DS_CHUNK ? sz : DS_CHUNK;
		if (a->n_chunks == a->cap_chunks) {
			uint32_t cap = a->cap_chunks ? a->cap_chunks * 2 : 16;
			void **c = realloc(a->chunks, cap * sizeof *c);
			if (!c)
				return NULL;
			a->chunks = c;
			a->cap_chunks = cap;
		}
		char *c = malloc(csz);
		if (!c)
			return NULL;
		a->chunks[a->n_chunks++] = c;
		a->at = c;
		a->end = c + csz;
	}
	void *p = a->at;
	a->at += sz;
	return p;
}

static void arena_put(struct ds_arena *a, void *p, size_t bytes)
{
	if (!p)
		return;
	unsigned k = size_class(bytes);
	memcpy(p, &a->free_[k], sizeof(void *));
	a->free_[k] = p;
}

static void arena_free(struct ds_arena *a)
{
	for (uint32_t i = 0; i < a->n_chunks; i++)
		free(a->chunks[i]);
	free(a->chunks);
}

/* An iteration over a set: for (it = {0}; ids_next(l, words, &it, &x);).
 * A bitset is visited in ascending order; the order never matters here
 * (the regions' updates are sums and unions). */
struct ds_iter {
	uint32_t i; /* next entry (list) or next word (bitset) */
	uint64_t w; /* bitset: the bits of the current word not yet seen */
};

static inline bool ids_next(const struct ds_ids *l, uint32_t words,
			    struct ds_iter *it, uint32_t *x)
{
	if (!l->bits) {
		if (it->i >= l->n)
			return false;
		*x = l->v[it->i++];
		return true;
	}
	(void)words;
	if (it->i < l->lo)
		it->i = l->lo;
	while (!it->w) {
		if (it->i >= l->hi)
			return false;
		it->w = l->bits[it->i++];
	}
	*x = (it->i - 1) * 64 + (uint32_t)__builtin_ctzll(it->w);
	it->w &= it->w - 1;
	return true;
}

/* ---- A replay ---------------------------------------------------------- */

/* optimization/region.py Region: the evicted storages reachable from a
 * base storage in one direction, the material storages at its edge, and
 * the sum of the interior's compute. */
struct ds_region {
	struct ds_ids interior; /* evicted storages */
	struct ds_ids frontier; /* material storages at the edge */
	uint64_t compute;	/* sum of the interior's compute, each added
				   when it joined */
};

/* The mutable state of one storage. */
struct ds_sstate {
	int64_t last_access;  /* meta['last_access_int'], DTR_NEVER = -inf */
	int32_t ref_ext;      /* handles (Get/Release) */
	int32_t ref_int;      /* locks */
	uint32_t prev, next;  /* the pool's list links */
	uint32_t ecn;	      /* its equivalence-class node, DS_NIL = None */
	bool has_ecn;	      /* meta has 'ecn' (None included) */
	bool pinned;	      /* permanently locked */
	bool in_pool;	      /* evictable: material, unlocked, unpinned */
};

/* An equivalence-class node (EqClassNode). */
struct ds_ecn {
	uint32_t parent; /* DS_NIL: a root */
	int64_t value;	 /* a root's CheckpointInfo.compute */
};

/* The evicted closures of one direction within one regions_after
 * (memo_closure): for an immaterial storage u, C(u), the immaterial
 * storages reachable from u through immaterial storages (u included),
 * F(u), the material storages next to those, and the compute of C(u)
 * (memo_closure's DFS marks what it has, so the cycles views make in the
 * storage graph end it). A rebuild's interior is the union of the
 * closures of the base's immaterial neighbours, its frontier the union
 * of theirs and the base's material neighbours, less the base: what the
 * DFS from the base finds, without walking a closure again for every
 * base that reaches it (each storage was walked 11 to 17 times per
 * update on the traces). Valid while nothing becomes material or
 * immaterial and no tensor is created: within one regions_after. */
struct ds_ment {		 /* an entry: its sets as the words of
				    their spans, in ds_memo's words */
	size_t c, f;		 /* where C's and F's words start */
	uint32_t clo, chi;	 /* C: words clo .. chi - 1 (never empty: u) */
	uint32_t flo, fhi;	 /* F: words flo .. fhi - 1 (flo >= fhi:
				    empty) */
	uint64_t sum;		 /* the compute of C */
};

struct ds_memo {
	uint32_t *stamp;	 /* per storage: the call its entry is for */
	uint32_t *slot;		 /* per storage: its entry (valid if stamp) */
	struct ds_ment *ent;	 /* the entries of this call */
	uint32_t n;		 /* entries used this call */
	uint32_t cap;		 /* entries allocated */
	uint64_t *words;	 /* the entries' sets, each its span only (a
				    closure spans a few words of a long
				    trace; a whole bitset each was what
				    capped the closures at 4,096 storages,
				    issue 37) */
	size_t used, room;	 /* words used this call, allocated */
	struct ds_vec todo;	 /* uint32_t: memo_prepare's storages */
};

/* The replay's state. */
struct ds_run {
	const struct dtr_trace *tr;  /* the stream */
	enum dtr_heuristic h;	     /* the heuristic */
	bool regions;		     /* h keeps regions (DTR, MSPS) */
	bool fwd_interior;	     /* and the children-side interiors and
					compute: DTR scores with them; MSPS
					reads only region_rev's compute, and
					a region's interior feeds only the
					interiors of the same direction, so
					for MSPS they are never read */
	bool eqclass;		     /* h keeps equivalence classes */
	bool v1;		     /* the baseline: RuntimeV1's banishing
					(free on the last release, pinned
					included) */
	uint64_t budget;	     /* bytes */
	uint64_t remat_limit;	     /* ns */
	int64_t clock;		     /* starts at 1 */
	uint64_t memory;	     /* the memory counter */
	uint32_t n_created;	     /* tensors created so far */
	uint8_t *defined;	     /* per tensor */
	uint8_t *material;	     /* per storage: its bytes are in memory
					(apart from ss, as comp and vis: the
					regions' DFS reads them for every
					edge) */
	uint64_t *comp;		     /* per storage: Storage.compute */
	uint32_t *vis;		     /* per storage and direction: its edges
					(struct ds_adj) created so far, [2 *
					s + dir]; they only grow */
	uint32_t *dfs;		     /* the DFS stack of rebuild (a storage is
					pushed at most once: ns entries) */
	struct ds_sstate *ss;	     /* per storage */
	struct ds_region *reg;	     /* per storage, [2 * s + DIR_*] */
	uint32_t head, tail;	     /* the pool, in list order */
	struct ds_vec ec;	     /* struct ds_ecn: the eq-class nodes */
	struct ds_vec stack;	     /* uint32_t: DFS stack and the
					materialize snapshots */
	struct ds_vec aff;	     /* uint32_t: storages whose regions to
					rebuild */
	uint32_t *mark;		     /* per storage: epoch last marked (sets
					of storages: interiors, neighbours) */
	uint32_t *mark2;	     /* the same, a second set at once
					(frontiers) */
	uint32_t epoch;		     /* the last epoch handed out */
	struct dtr_result *res;	     /* counters */
	bool nomem;		     /* out of host memory */
	uint32_t words;		     /* 64-bit words of a region's bitset */
	uint32_t bits_min;	     /* a list this long becomes a bitset
					(DS_BITS_MIN, or 0: all are) */
	uint64_t bits_left;	     /* bytes of bitsets still allowed */
	struct ds_arena arena;	     /* the regions' lists and bitsets */
	struct ds_memo *memo;	     /* [DIR_FWD], [DIR_REV], or NULL
					(walk_regions): rebuild walks */
	uint64_t *scratch;	     /* 2 x words, all zero between
					closures: memo_closure builds C and F
					here */
	bool walk_call;		     /* this regions_after walks (below) */
	uint32_t skip, backoff;	     /* calls still to walk; the next pause */
	uint64_t visits, est;	     /* this call: storages the closures'
					DFS popped and words their unions
					visited, and the interiors the
					rebuilds got (what the walks would
					pop), in the directions that keep
					interiors */
	uint32_t call;		     /* regions_after's calls (memo stamps) */
};

enum ds_stop { S_GO = 0, S_OOM, S_THRASH, S_NOMEM };

static const struct ds_tensor *T(const struct ds_run *r, uint32_t t)
{
	return &TS(r->tr)[t];
}

static const struct ds_op *OP(const struct ds_run *r, uint32_t o)
{
	return &OPS(r->tr)[o];
}

/* ---- The pool (v2.py storage_pool: a list) ------------------------------ */

static void pool_append(struct ds_run *r, uint32_t s)
{
	struct ds_sstate *x = &r->ss[s];
	if (x->in_pool)
		return;
	x->in_pool = true;
	x->prev = r->tail;
	x->next = DS_NIL;
	if (r->tail != DS_NIL)
		r->ss[r->tail].next = s;
	else
		r->head = s;
	r->tail = s;
}

static void pool_remove(struct ds_run *r, uint32_t s)
{
	struct ds_sstate *x = &r->ss[s];
	if (!x->in_pool)
		return;
	x->in_pool = false;
	if (x->prev != DS_NIL)
		r->ss[x->prev].next = x->next;
	else
		r->head = x->next;
	if (x->next != DS_NIL)
		r->ss[x->next].prev = x->prev;
	else
		r->tail = x->prev;
}

static void lock(struct ds_run *r, uint32_t s)
{
	if (r->ss[s].ref_int++ == 0)
		pool_remove(r, s);
}

static void unlock(struct ds_run *r, uint32_t s)
{
	if (--r->ss[s].ref_int == 0)
		pool_append(r, s);
}

/* ---- Equivalence classes (optimization/eqclass.py) ---------------------- */

/* A fresh epoch for mark and mark2 (both cleared on wrap-around). */
static uint32_t new_epoch(struct ds_run *r)
{
	if (++r->epoch == 0) {
		size_t n = r->tr->stos.n ? r->tr->stos.n : 1;
		memset(r->mark, 0, n * sizeof *r->mark);
		memset(r->mark2, 0, n * sizeof *r->mark2);
		r->epoch = 1;
	}
	return r->epoch;
}

static struct ds_ecn *EC(struct ds_run *r)
{
	return r->ec.p;
}

static uint32_t ec_new(struct ds_run *r, int64_t value)
{
	struct ds_ecn x = {DS_NIL, value};
	if (vec_push(&r->ec, sizeof x, &x) < 0) {
		r->nomem = true;
		return DS_NIL;
	}
	return r->ec.n - 1;
}

/* EqClassNode.find_root, with its path compression. */
static uint32_t ec_root(struct ds_run *r, uint32_t x)
{
	uint32_t root = x;
	while (EC(r)[root].parent != DS_NIL)
		root = EC(r)[root].parent;
	while (x != root) {
		uint32_t next = EC(r)[x].parent;
		if (next != root)
			EC(r)[x].parent = root;
		x = next;
	}
	return root;
}

/* EqClassNode.merge(merge_f, lhs, rhs): lhs's root under rhs's, values
 * summed. */
static void ec_merge(struct ds_run *r, uint32_t lhs, uint32_t rhs)
{
	uint32_t l = ec_root(r, lhs), rr = ec_root(r, rhs);
	if (l == rr)
		return;
	EC(r)[l].parent = rr;
	EC(r)[rr].value += EC(r)[l].value;
}

/* ---- Regions (optimization/region.py) ----------------------------------- */

static struct ds_region *region(struct ds_run *r, uint32_t s, int dir)
{
	return &r->reg[2 * (size_t)s + (size_t)dir];
}

/* How many of the ascending tensor ids l[0 .. n) are created so far. */
static uint32_t created_prefix(const struct ds_run *r, const uint32_t *l,
			       uint32_t n)
{
	if (n == 0 || l[n - 1] < r->n_created)
		return n;
	uint32_t lo = 0, hi = n - 1; /* l[hi] is not created */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l[mid] < r->n_created)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The neighbour storages of s in direction dir as of now (struct
 * ds_adj): *list and the count. */
static inline uint32_t nbrs(struct ds_run *r, uint32_t s, int dir,
			    const uint32_t **list)
{
	const struct ds_adj *a = &r->tr->adj[dir];
	uint32_t o = a->off[s], n = a->off[s + 1] - o;
	uint32_t *v = &r->vis[2 * (size_t)s + (size_t)dir];
	while (*v < n && a->key[o + *v] < r->n_created)
		(*v)++;
	*list = &a->sto[o];
	return *v;
}

/* The tensors of storage s created so far: *list and the count. */
static uint32_t sto_tensors(const struct ds_run *r, uint32_t s,
			    const uint32_t **list)
{
	const struct ds_sto *x = &STOS(r->tr)[s];
	*list = &r->tr->sto_t[x->t0];
	return created_prefix(r, *list, x->nt);
}

static void oom_if(struct ds_run *r, int rc)
{
	if (rc < 0)
		r->nomem = true;
}

/* ---- Sets of storages, with the replay's arena ----------------------- */

/* Bitset l gains members in word w. */
static inline void ids_span(struct ds_ids *l, uint32_t w)
{
	if (l->lo >= l->hi) {
		l->lo = w;
		l->hi = w + 1;
	} else if (w < l->lo) {
		l->lo = w;
	} else if (w >= l->hi) {
		l->hi = w + 1;
	}
}

/* A long list becomes a bitset (r->bits_min), its array given back; -1
 * when the bitsets' budget is spent (the list stays a list). */
static int ids_index_(struct ds_run *r, struct ds_ids *l)
{
	size_t bytes = (size_t)r->words * sizeof *l->bits;
	if (bytes > r->bits_left)
		return -1;
	uint64_t *b = arena_get(&r->arena, bytes);
	if (!b)
		return -1; /* the list still works */
	memset(b, 0, bytes);
	r->bits_left -= bytes;
	l->lo = l->hi = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		bit_set(b, l->v[i]);
		ids_span(l, l->v[i] >> 6);
	}
	arena_put(&r->arena, l->v, l->cap * sizeof *l->v);
	l->v = NULL;
	l->cap = 0;
	l->bits = b;
	return 0;
}

/* ids_push when the list is full or about to become a bitset. */
static void ids_push_slow(struct ds_run *r, struct ds_ids *l, uint32_t x)
{
	if (l->n + 1 >= r->bits_min && ids_index_(r, l) == 0) {
		bit_set(l->bits, x);
		ids_span(l, x >> 6);
		return;
	}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 8;
		uint32_t *v = arena_get(&r->arena, cap * sizeof *v);
		if (!v) {
			r->nomem = true;
			return;
		}
		if (l->n)
			memcpy(v, l->v, l->n * sizeof *v);
		arena_put(&r->arena, l->v, l->cap * sizeof *v);
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = x;
}

/* Add x, which is not a member. */
static inline void ids_push(struct ds_run *r, struct ds_ids *l, uint32_t x)
{
	if (l->bits) {
		bit_set(l->bits, x);
		ids_span(l, x >> 6);
	} else if (l->n < l->cap && l->n + 1 < r->bits_min) {
		l->v[l->n++] = x;
	} else {
		ids_push_slow(r, l, x);
	}
}

/* Remove x if present. */
static void ids_remove(struct ds_ids *l, uint32_t x)
{
	if (l->bits) {
		l->bits[x >> 6] &= ~((uint64_t)1 << (x & 63));
		return;
	}
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i] == x) {
			l->v[i] = l->v[--l->n];
			return;
		}
}

static void ids_clear(const struct ds_run *r, struct ds_ids *l)
{
	(void)r;
	if (l->bits && l->lo < l->hi)
		memset(l->bits + l->lo, 0, (l->hi - l->lo) * sizeof *l->bits);
	l->n = l->lo = l->hi = 0;
}

/* Mark the members of a list (not a bitset) with epoch e in m. */
static void ids_mark(const struct ds_ids *l, uint32_t *m, uint32_t e)
{
	for (uint32_t i = 0; !l->bits && i < l->n; i++)
		m[l->v[i]] = e;
}

/* Is x a member: by the bitset, or by the marks ids_mark left. */
static inline bool ids_has(const struct ds_ids *l, const uint32_t *m,
			   uint32_t e, uint32_t x)
{
	return l->bits ? bit_has(l->bits, x) : m[x] == e;
}

/* Empty g. */
static void region_clear(const struct ds_run *r, struct ds_region *g)
{
	ids_clear(r, &g->interior);
	ids_clear(r, &g->frontier);
	g->compute = 0;
}

/* Region.rebuild: a DFS from base over the direction's neighbours of all
 * tensors of each storage visited; material ones (the base excepted) into
 * the frontier, immaterial ones into the interior with their current
 * compute. */
static void rebuild_walk(struct ds_run *r, uint32_t base, int dir)
{
	struct ds_region *g = region(r, base, dir);
	uint32_t e = new_epoch(r); /* mark: interior, mark2: frontier */
	bool keep = dir == DIR_REV || r->fwd_interior;
	region_clear(r, g);
	uint32_t sp = 0;
	r->dfs[sp++] = base;
	while (sp) {
		uint32_t s = r->dfs[--sp];
		const uint32_t *ul;
		uint32_t nu = nbrs(r, s, dir, &ul);
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t us = ul[j];
			if (r->material[us]) {
				if (us != base && r->mark2[us] != e) {
					r->mark2[us] = e;
					ids_push(r, &g->frontier, us);
				}
				continue;
			}
			if (r->mark[us] == e)
				continue;
			r->mark[us] = e;
			r->dfs[sp++] = us;
			if (!keep)
				continue;
			g->compute += r->comp[us];
			ids_push(r, &g->interior, us);
		}
	}
}

/* Up to this many words (4,096 storages, the cap the closures had) a closure's entry keeps its sets
 * whole, as before issue 37, rather than tracking their spans: measured,
 * see docs/speed-figures.md. */
#define DS_WHOLE_WORDS 64

/* A span of words [lo, hi) of a bitset (lo >= hi: none) gains word w. */
static inline void span_add(uint32_t *lo, uint32_t *hi, uint32_t w)
{
	if (*lo >= *hi) {
		*lo = w;
		*hi = w + 1;
	} else if (w < *lo) {
		*lo = w;
	} else if (w >= *hi) {
		*hi = w + 1;
	}
}

/* Room for one more entry in m whose two sets take n_words words; -1:
 * out of memory. */
static int memo_room(struct ds_memo *m, size_t n_words)
{
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? 2 * m->cap : 64;
		struct ds_ment *e = realloc(m->ent, cap * sizeof *e);
		if (!e)
			return -1;
		m->ent = e;
		m->cap = cap;
	}
	if (m->used + n_words > m->room) {
		size_t room = m->room ? m->room : 1024;
		while (room < m->used + n_words)
			room *= 2;
		uint64_t *w = realloc(m->words, room * sizeof *w);
		if (!w)
			return -1;
		m->words = w;
		m->room = room;
	}
	return 0;
}

/* c |= o, c a bitset over all storages, o the words lo .. hi - 1 of one
 * (o[0] is word lo); returns the compute of the members new to c: o_sum
 * (o's) when the two are disjoint, the common case, else the sum over
 * the new members. */
static uint64_t union_sum(const struct ds_run *r, uint64_t *c,
			  const uint64_t *o, uint32_t lo, uint32_t hi,
			  uint64_t o_sum)
{
	uint64_t common = 0, sum = 0;
	for (uint32_t q = lo; q < hi; q++)
		common |= c[q] & o[q - lo];
	if (!common) {
		for (uint32_t q = lo; q < hi; q++)
			c[q] |= o[q - lo];
		return o_sum;
	}
	for (uint32_t q = lo; q < hi; q++) {
		uint64_t nb = o[q - lo] & ~c[q];
		c[q] |= nb;
		for (; nb; nb &= nb - 1)
			sum += r->comp[q * 64 + (uint32_t)__builtin_ctzll(nb)];
	}
	return sum;
}

/* The entry of immaterial storage u in direction dir this call (struct
 * ds_memo): a DFS from u over the immaterial storages not in C yet
 * (the storage graph has cycles), that takes a storage with an entry
 * already as a whole: its C and F join u's, and it is not walked again
 * (what it reaches, u reaches, and what is in C(w) has its closure in
 * C(w) too). C and F are built in the replay's scratch bitsets, then
 * their spans copied into the entry and cleared. */
static inline __attribute__((always_inline)) uint32_t
closure_dfs(struct ds_run *r, uint32_t u, int dir, const bool spans)
{
	struct ds_memo *m = &r->memo[dir];
	uint32_t call = r->call, sp = 0;
	uint64_t *c = r->scratch, *f = c + r->words;
	uint32_t clo = 0, chi = 0, flo = 0, fhi = 0;
	if (!spans) { /* whole: built in place, as before issue 37 */
		chi = fhi = r->words;
		if (memo_room(m, 2 * (size_t)r->words) < 0)
			return DS_NIL;
		c = m->words + m->used;
		f = c + r->words;
		memset(c, 0, 2 * (size_t)r->words * sizeof *c);
	}
	uint64_t sum = r->comp[u];
	bit_set(c, u);
	if (spans)
		span_add(&clo, &chi, u >> 6);
	r->dfs[sp++] = u;
	uint64_t pops = 0;
	while (sp) {
		uint32_t v = r->dfs[--sp];
		const uint32_t *ul;
		uint32_t nu = nbrs(r, v, dir, &ul);
		pops++;
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t w = ul[j];
			if (r->material[w]) {
				bit_set(f, w);
				if (spans)
					span_add(&flo, &fhi, w >> 6);
			} else if (bit_has(c, w)) {
				continue;
			} else if (m->stamp[w] == call) {
				const struct ds_ment *o = &m->ent[m->slot[w]];
				const uint64_t *oc = m->words + o->c;
				sum += union_sum(r, c, oc, o->clo, o->chi,
						 o->sum);
				pops += o->chi - o->clo + o->fhi - o->flo;
				if (spans) {
					span_add(&clo, &chi, o->clo);
					span_add(&clo, &chi, o->chi - 1);
				}
				for (uint32_t q = o->flo; q < o->fhi; q++)
					f[q] |= m->words[o->f + q - o->flo];
				if (spans && o->flo < o->fhi) {
					span_add(&flo, &fhi, o->flo);
					span_add(&flo, &fhi, o->fhi - 1);
				}
			} else {
				bit_set(c, w);
				if (spans)
					span_add(&clo, &chi, w >> 6);
				sum += r->comp[w];
				r->dfs[sp++] = w;
			}
		}
	}
	if (!spans) {
		uint32_t k = m->n++;
		m->ent[k] = (struct ds_ment){.c = m->used, .f = m->used + chi,
					     .chi = chi, .fhi = fhi,
					     .sum = sum};
		m->used += 2 * (size_t)chi;
		m->stamp[u] = call;
		m->slot[u] = k;
		return k;
	}
	if (dir == DIR_REV || r->fwd_interior)
		r->visits += pops;
	uint32_t k = DS_NIL;
	if (memo_room(m, (size_t)(chi - clo) + (fhi > flo ? fhi - flo : 0)) ==
	    0) {
		k = m->n++;
		struct ds_ment *e = &m->ent[k];
		*e = (struct ds_ment){.c = m->used, .clo = clo, .chi = chi,
				      .flo = flo, .fhi = fhi, .sum = sum};
		memcpy(m->words + m->used, c + clo, (chi - clo) * sizeof *c);
		m->used += chi - clo;
		e->f = m->used;
		if (flo < fhi) {
			memcpy(m->words + m->used, f + flo,
			       (fhi - flo) * sizeof *f);
			m->used += fhi - flo;
		}
		m->stamp[u] = call;
		m->slot[u] = k;
	}
	memset(c + clo, 0, (chi - clo) * sizeof *c);
	if (flo < fhi)
		memset(f + flo, 0, (fhi - flo) * sizeof *f);
	return k;
}

static uint32_t memo_closure(struct ds_run *r, uint32_t u, int dir)
{
	if (r->memo[dir].stamp[u] == r->call)
		return r->memo[dir].slot[u];
	return r->words <= DS_WHOLE_WORDS ? closure_dfs(r, u, dir, false)
					  : closure_dfs(r, u, dir, true);
}

/* Add x to g's set l unless it is there (as a bitset, or by the marks m
 * with epoch e). */
static inline void ids_add(struct ds_run *r, struct ds_ids *l, uint32_t *m,
			   uint32_t e, uint32_t x)
{
	if (ids_has(l, m, e, x))
		return;
	m[x] = e;
	ids_push(r, l, x);
}

/* rebuild with the closures (struct ds_memo); -1 if out of memory for an
 * entry (then walk). Where the region's sets are bitsets the closures'
 * words are or-ed in; else their members are added one by one. */
static int rebuild_memo(struct ds_run *r, uint32_t base, int dir)
{
	struct ds_region *g = region(r, base, dir);
	struct ds_memo *m = &r->memo[dir];
	bool keep = dir == DIR_REV || r->fwd_interior;
	/* below the old cap every set becomes a bitset here, as before;
	 * above it a set becomes one only as it grows (ids_push), so that
	 * short sets do not spend the bitsets' budget that long ones need
	 * (absorb into long lists was most of the time at 27,000
	 * storages) */
	if (!g->frontier.bits && r->words <= DS_WHOLE_WORDS)
		(void)ids_index_(r, &g->frontier);
	if (keep && !g->interior.bits && r->words <= DS_WHOLE_WORDS)
		(void)ids_index_(r, &g->interior);
	bool words = g->frontier.bits && (!keep || g->interior.bits);
	region_clear(r, g);
	uint32_t e = words ? 0 : new_epoch(r), last = DS_NIL;
	uint64_t *gi = g->interior.bits, *gf = g->frontier.bits;
	const uint32_t *ul;
	uint32_t nu = nbrs(r, base, dir, &ul);
	for (uint32_t j = 0; j < nu; j++) {
		uint32_t w = ul[j];
		if (r->material[w]) {
			if (words) {
				bit_set(gf, w);
				ids_span(&g->frontier, w >> 6);
			} else if (w != base) {
				ids_add(r, &g->frontier, r->mark2, e, w);
			}
			continue;
		}
		uint32_t k = memo_closure(r, w, dir);
		if (k == DS_NIL)
			return -1; /* out of memory for the entries */
		if (k == last)
			continue;
		last = k;
		const struct ds_ment *o = &m->ent[k];
		const uint64_t *oc = m->words + o->c, *of = m->words + o->f;
		if (words) {
			for (uint32_t q = o->flo; q < o->fhi; q++)
				gf[q] |= of[q - o->flo];
			if (o->flo < o->fhi) {
				ids_span(&g->frontier, o->flo);
				ids_span(&g->frontier, o->fhi - 1);
			}
			if (!keep)
				continue;
			g->compute += union_sum(r, gi, oc, o->clo, o->chi,
						o->sum);
			if (r->words > DS_WHOLE_WORDS)
				r->visits += o->chi - o->clo + o->fhi - o->flo;
			ids_span(&g->interior, o->clo);
			ids_span(&g->interior, o->chi - 1);
			continue;
		}
		for (uint32_t q = o->flo; q < o->fhi; q++)
			for (uint64_t b = of[q - o->flo]; b; b &= b - 1) {
				uint32_t x = q * 64 +
					     (uint32_t)__builtin_ctzll(b);
				if (x != base)
					ids_add(r, &g->frontier, r->mark2, e,
						x);
			}
		for (uint32_t q = o->clo; keep && q < o->chi; q++)
			for (uint64_t b = oc[q - o->clo]; b; b &= b - 1) {
				uint32_t x = q * 64 +
					     (uint32_t)__builtin_ctzll(b);
				if (!ids_has(&g->interior, r->mark, e, x)) {
					r->mark[x] = e;
					g->compute += r->comp[x];
					ids_push(r, &g->interior, x);
					r->est++;
				}
			}
	}
	if (words)
		gf[base >> 6] &= ~((uint64_t)1 << (base & 63));
	for (uint32_t q = g->interior.lo;
	     r->words > DS_WHOLE_WORDS && words && keep && q < g->interior.hi;
	     q++)
		r->est += (uint64_t)__builtin_popcountll(gi[q]);
	return 0;
}

static int cmp_up(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The closures the rebuilds of bases[0 .. n) in direction dir will ask
 * for, made farthest first: storages are numbered in creation order, so
 * an op's output storages come after its arguments' but for views; the
 * children side from the highest number down, the parents side from the
 * lowest up, so that a closure mostly finds those it reaches made
 * already (a fifth of the storages walked on resnet32 and the
 * transformer; any order gives the same closures). The storages are
 * listed and sorted (n log n in the list, not a pass over all
 * storages). */
static void memo_prepare(struct ds_run *r, const uint32_t *bases, uint32_t n,
			 int dir)
{
	struct ds_memo *m = &r->memo[dir];
	if (r->words <= DS_WHOLE_WORDS) { /* as before issue 37: a bitset */
		uint64_t *set = r->scratch;
		bool any = false;
		for (uint32_t i = 0; i < n; i++) {
			const uint32_t *ul;
			uint32_t nu = nbrs(r, bases[i], dir, &ul);
			for (uint32_t j = 0; j < nu; j++) {
				uint32_t w = ul[j];
				if (r->material[w] || m->stamp[w] == r->call)
					continue;
				bit_set(set, w);
				any = true;
			}
		}
		for (uint32_t i = 0; any && i < r->words; i++) {
			uint32_t q = dir == DIR_FWD ? r->words - 1 - i : i;
			while (set[q]) {
				uint32_t b = dir == DIR_FWD
					? 63 - (uint32_t)__builtin_clzll(set[q])
					: (uint32_t)__builtin_ctzll(set[q]);
				set[q] &= ~((uint64_t)1 << b);
				(void)memo_closure(r, q * 64 + b, dir);
			}
		}
		return;
	}
	m->todo.n = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t *ul;
		uint32_t nu = nbrs(r, bases[i], dir, &ul);
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t w = ul[j];
			if (r->material[w] || m->stamp[w] == r->call)
				continue;
			oom_if(r, vec_push(&m->todo, sizeof w, &w));
		}
	}
	uint32_t *t = m->todo.p, nt = m->todo.n;
	if (nt > 1)
		qsort(t, nt, sizeof *t, cmp_up);
	for (uint32_t i = 0; i < nt; i++)
		(void)memo_closure(r, t[dir == DIR_FWD ? nt - 1 - i : i], dir);
}

/* Region.rebuild, by the closures where there are. */
static void rebuild(struct ds_run *r, uint32_t base, int dir)
{
	r->res->rebuilds++;
	if (!r->memo || r->walk_call || rebuild_memo(r, base, dir) < 0) {
		r->res->rebuilds_walked++;
		rebuild_walk(r, base, dir);
	}
}

/* Region.absorb: g (a region in direction dir) takes in the just evicted
 * s: s leaves the frontier, s's own frontier joins it (the base is not
 * filtered out), and the members of s's interior g lacks, and s itself,
 * join the interior with their compute. */
/* g |= o for two bitsets, word by word; if comp, the compute of each
 * member new to g is added to *sum. */
static void bits_union(const struct ds_run *r, struct ds_ids *g,
		       const struct ds_ids *o, uint64_t *sum)
{
	(void)r;
	/* o is mostly a subset of g already (on the transformer at 0.9,
	 * 86,000 unions, half adding nothing): test that first, in a loop
	 * without branches */
	uint64_t any = 0;
	for (uint32_t w = o->lo; w < o->hi; w++)
		any |= o->bits[w] & ~g->bits[w];
	for (uint32_t w = o->lo; any && w < o->hi; w++) {
		uint64_t nb = o->bits[w] & ~g->bits[w];
		if (!nb)
			continue;
		g->bits[w] |= nb;
		ids_span(g, w);
		for (; sum && nb; nb &= nb - 1)
			*sum += r->comp[w * 64 + (uint32_t)__builtin_ctzll(nb)];
	}
}

static void absorb(struct ds_run *r, struct ds_region *g, uint32_t s, int dir)
{
	struct ds_region *o = region(r, s, dir);
	struct ds_iter it = {0};
	uint32_t x, e = new_epoch(r);
	ids_remove(&g->frontier, s);
	if (o != g && g->frontier.bits && o->frontier.bits) {
		bits_union(r, &g->frontier, &o->frontier, NULL);
	} else if (o != g) {
		ids_mark(&g->frontier, r->mark2, e);
		while (ids_next(&o->frontier, r->words, &it, &x))
			if (!ids_has(&g->frontier, r->mark2, e, x)) {
				r->mark2[x] = e;
				ids_push(r, &g->frontier, x);
			}
	}
	if (dir == DIR_FWD && !r->fwd_interior)
		return;
	/* interior_diff = o.interior - g.interior, plus s (always summed) */
	ids_mark(&g->interior, r->mark, e);
	g->compute += r->comp[s];
	if (!ids_has(&g->interior, r->mark, e, s)) {
		r->mark[s] = e;
		ids_push(r, &g->interior, s);
	}
	if (o != g && g->interior.bits && o->interior.bits) {
		bits_union(r, &g->interior, &o->interior, &g->compute);
		return;
	}
	for (it = (struct ds_iter){0};
	     o != g && ids_next(&o->interior, r->words, &it, &x);)
		if (!ids_has(&g->interior, r->mark, e, x)) {
			r->mark[x] = e;
			g->compute += r->comp[x];
			ids_push(r, &g->interior, x);
		}
}

/* ---- Eviction ----------------------------------------------------------- */

/* Storage.evicted_neighbors: push onto r->aff the immaterial storages
 * (other than s) next to any tensor of s, each once. */
static void evicted_neighbours(struct ds_run *r, uint32_t s)
{
	uint32_t e = new_epoch(r);
	r->aff.n = 0;
	for (int dir = DIR_FWD; dir <= DIR_REV; dir++) {
		const uint32_t *ul;
		uint32_t nu = nbrs(r, s, dir, &ul);
		for (uint32_t j = 0; j < nu; j++) {
			uint32_t us = ul[j];
			if (r->material[us] || r->mark[us] == e)
				continue;
			r->mark[us] = e;
			oom_if(r, vec_push(&r->aff, sizeof us, &us));
		}
	}
}

/* v2.py _evict (RuntimeV2Optimized): free s, update its neighbours'
 * regions or equivalence classes. */
static void evict(struct ds_run *r, uint32_t s)
{
	struct ds_sstate *x = &r->ss[s];
	const uint32_t *tl;
	r->material[s] = 0;
	r->memory -= STOS(r->tr)[s].size;
	pool_remove(r, s);
	uint32_t nt = sto_tensors(r, s, &tl);
	for (uint32_t i = 0; i < nt; i++)
		r->defined[tl[i]] = 0;
	if (r->regions) {
		/* the lists iterated are s's; absorb changes another
		 * region, or (s in its own frontier) s's other one. A
		 * pinned storage's regions are skipped: it is never scored
		 * or evicted again, so nothing reads them (see
		 * regions_after) */
		struct ds_iter it = {0};
		uint32_t y;
		while (ids_next(&region(r, s, DIR_REV)->frontier, r->words, &it,
				&y))
			if (!r->ss[y].pinned)
				absorb(r, region(r, y, DIR_FWD), s, DIR_FWD);
		for (it = (struct ds_iter){0};
		     ids_next(&region(r, s, DIR_FWD)->frontier, r->words, &it,
			      &y);)
			if (!r->ss[y].pinned)
				absorb(r, region(r, y, DIR_REV), s, DIR_REV);
		region_clear(r, region(r, s, DIR_FWD));
		region_clear(r, region(r, s, DIR_REV));
	}
	if (r->eqclass) {
		x->ecn = ec_new(r, (int64_t)r->comp[s]);
		x->has_ecn = true;
		if (x->ecn == DS_NIL)
			return;
		evicted_neighbours(r, s);
		for (uint32_t i = 0; i < r->aff.n; i++) {
			uint32_t n = ((uint32_t *)r->aff.p)[i];
			if (r->ss[n].ecn != DS_NIL)
				ec_merge(r, r->ss[n].ecn, x->ecn);
		}
	}
}

/* The heuristic's score of pooled storage s. */
static double score(struct ds_run *r, uint32_t s)
{
	const struct ds_sstate *x = &r->ss[s];
	uint64_t size = STOS(r->tr)[s].size, c = r->comp[s];
	r->res->cost_evals++;
	/* dtr_cost's common case inline (choose scores the whole pool for
	 * each eviction): both operands below 2^53, where one IEEE division
	 * is Python's correctly rounded int / int (dtr_div's fast path) */
	const uint64_t exact = (uint64_t)1 << 53;
	switch (r->h) {
	case DTR_H_DTR:
		c += region(r, s, DIR_FWD)->compute +
		     region(r, s, DIR_REV)->compute;
		if (size && size < exact && c < exact &&
		    x->last_access != DTR_NEVER && r->clock > x->last_access &&
		    (uint64_t)(r->clock - x->last_access) < exact / size)
			return (double)c /
			       (double)(size *
					(uint64_t)(r->clock - x->last_access));
		break;
	case DTR_H_MSPS:
		c += region(r, s, DIR_REV)->compute;
		if (size && size < exact && c < exact)
			return (double)c / (double)size;
		break;
	case DTR_H_EQCLASS: {
		/* s.compute plus each distinct neighbouring class's value */
		int64_t sum = (int64_t)c;
		evicted_neighbours(r, s);
		uint32_t *roots = r->aff.p;
		for (uint32_t i = 0; i < r->aff.n; i++)
			roots[i] = r->ss[roots[i]].ecn == DS_NIL
					   ? DS_NIL
					   : ec_root(r, r->ss[roots[i]].ecn);
		for (uint32_t i = 0; i < r->aff.n; i++) {
			bool dup = roots[i] == DS_NIL;
			for (uint32_t j = 0; j < i && !dup; j++)
				dup = roots[j] == roots[i];
			if (!dup)
				sum += EC(r)[roots[i]].value;
		}
		if (sum < 0) /* a class can go negative (eqclass.py keeps
				subtracting); Python's quotient is signed */
			return -dtr_cost(r->h, (uint64_t)-sum, size,
					 x->last_access, r->clock);
		return dtr_cost(r->h, (uint64_t)sum, size, x->last_access,
				r->clock);
	}
	case DTR_H_LARGEST:
		return r->tr->inv_size[s];
	case DTR_H_LRU:
	case DTR_H_COUNT:
		break;
	}
	return dtr_cost(r->h, c, size, x->last_access, r->clock);
}

/* Heuristic.choose: scan the pool in order, take s whenever its cost is
 * <= the best so far (ties: the later one), stop at a cost of 0. */
static uint32_t choose(struct ds_run *r)
{
	double best = INFINITY;
	uint32_t pick = DS_NIL;
	for (uint32_t s = r->head; s != DS_NIL; s = r->ss[s].next) {
		double c = score(r, s);
		if (c <= best) {
			best = c;
			pick = s;
		}
		if (c == 0)
			break;
	}
	return pick;
}

/* v2.py _free: evict until size more bytes fit. */
static enum ds_stop free_for(struct ds_run *r, uint64_t size)
{
	while (r->memory + size > r->budget) {
		if (r->head == DS_NIL)
			return S_OOM;
		uint32_t s = choose(r);
		if (s == DS_NIL) /* every score NaN: cannot happen */
			return S_OOM;
		evict(r, s);
		r->res->evictions_heuristic++;
		if (r->nomem)
			return S_NOMEM;
	}
	return S_GO;
}

/* ---- Computing ------------------------------------------------------------ */

/* Rebuild the regions after storages became material (RuntimeV2Optimized
 * _compute): both of each new one's regions, then region of every storage
 * in the union of their region_rev frontiers and region_rev of every one
 * in the union of their region frontiers.
 *
 * Except a pinned storage's (and evict does not absorb into them): a
 * region is read only to score its storage in the pool, when its storage
 * is evicted (its frontiers and, by absorb, its interiors) and here, just
 * after its storage was computed; a pinned storage is in none of these
 * again (pins are never undone in RuntimeV2), so what simrd keeps
 * updating there is never used. The parameters are pinned, and their
 * regions, which reach every evicted storage downstream, were most of
 * the work: the results are the same, the replay several times faster. */
static void regions_after(struct ds_run *r, const uint32_t *fresh,
			  uint32_t n_fresh)
{
	/* the new storages: siblings in index order, then t; rebuilding
	 * twice gives the same, so each storage once */
	uint32_t e = new_epoch(r);
	if (r->memo && ++r->call == 0) { /* wrapped: clear the stamps */
		size_t n = r->tr->stos.n ? r->tr->stos.n : 1;
		for (int d = 0; d < 2; d++) {
			memset(r->memo[d].stamp, 0, n * sizeof(uint32_t));
		}
		r->call = 1;
	}
	for (int d = 0; r->memo && d < 2; d++)
		r->memo[d].n = 0, r->memo[d].used = 0;
	r->walk_call = r->skip > 0;
	r->skip -= r->walk_call;
	r->visits = r->est = 0;
	r->aff.n = 0;
	for (uint32_t i = 0; i < n_fresh; i++) {
		uint32_t s = fresh[i];
		if (r->mark[s] == e)
			continue;
		r->mark[s] = e;
		oom_if(r, vec_push(&r->aff, sizeof s, &s));
	}
	uint32_t n_new = r->aff.n;
	for (int d = 0; r->memo && !r->walk_call && d < 2; d++)
		memo_prepare(r, r->aff.p, n_new, d);
	for (uint32_t i = 0; i < n_new; i++) {
		uint32_t s = ((uint32_t *)r->aff.p)[i];
		rebuild(r, s, DIR_FWD);
		rebuild(r, s, DIR_REV);
	}
	/* A: region_rev frontiers (rebuild region), B: region frontiers
	 * (rebuild region_rev); the sets are deduplicated by epoch */
	for (int dir = DIR_FWD; dir <= DIR_REV; dir++) {
		uint32_t start = r->aff.n;
		e = new_epoch(r);
		for (uint32_t i = 0; i < n_new; i++) {
			uint32_t s = ((uint32_t *)r->aff.p)[i];
			const struct ds_ids *f =
				&region(r, s, dir == DIR_FWD ? DIR_REV
							     : DIR_FWD)
					 ->frontier;
			struct ds_iter it = {0};
			uint32_t y;
			while (ids_next(f, r->words, &it, &y)) {
				if (r->mark[y] != e && !r->ss[y].pinned) {
					r->mark[y] = e;
					oom_if(r, vec_push(&r->aff, sizeof y,
							   &y));
				}
			}
		}
		if (r->memo && !r->walk_call)
			memo_prepare(r, (uint32_t *)r->aff.p + start,
				     r->aff.n - start, dir);
		for (uint32_t i = start; i < r->aff.n; i++)
			rebuild(r, ((uint32_t *)r->aff.p)[i], dir);
		r->aff.n = start;
	}
	/* The closures share walks between the regions of one call, but a
	 * closure walks again what another closure reached without being
	 * its root, so where the regions' closures overlap that way (the
	 * recorded LSTM past 4,096 storages at tight budgets: 1.4 times
	 * the walks' work, docs/speed-figures.md) the walks are cheaper.
	 * When the closures popped more storages, and or-ed more words,
	 * than the walks would have popped storages (the interiors the
	 * rebuilds got), the next calls walk, 1, 2, 4
	 * .. 64 of them as long as that lasts, then the closures are tried
	 * again. Either way the regions are the same sets. */
	if (r->memo && !r->walk_call && r->words > DS_WHOLE_WORDS) {
		if (r->visits > r->est) {
			r->backoff = r->backoff ? r->backoff * 2 : 1;
			if (r->backoff > 64)
				r->backoff = 64;
			r->skip = r->backoff;
		} else {
			r->backoff = 0;
		}
	}
}

/* v2.py _compute: run t's op (the memory is there). */
static void compute_op(struct ds_run *r, uint32_t t, bool remat)
{
	const struct ds_op *op = OP(r, T(r, t)->op);
	uint64_t dup = 0;
	bool fresh = false; /* some output storage becomes material */
	for (uint32_t u = op->out0; u < op->out0 + op->n_out; u++) {
		if (u != t && r->defined[u])
			dup += T(r, u)->size; /* recomputed twice */
		if (!r->material[T(r, u)->sto])
			fresh = true;
	}
	r->clock += (int64_t)op->time;
	r->memory += op->total;
	if (r->memory > r->res->max_memory_bytes)
		r->res->max_memory_bytes = r->memory;
	if (remat) {
		r->res->remat_compute_ns += op->time;
		r->res->remat_ops++;
	} else {
		r->res->model_compute_ns += op->time;
	}
	/* remat_storages, in order: siblings, then t (filtered on material
	 * before anything is set) */
	uint32_t sp0 = r->stack.n;
	for (uint32_t pass = 0; pass < 2 && fresh; pass++)
		for (uint32_t u = op->out0; u < op->out0 + op->n_out; u++) {
			if ((pass == 0) == (u == t))
				continue;
			uint32_t s = T(r, u)->sto;
			if (!r->material[s])
				oom_if(r, vec_push(&r->stack, sizeof s, &s));
		}
	for (uint32_t u = op->out0; u < op->out0 + op->n_out; u++) {
		r->material[T(r, u)->sto] = 1;
		r->defined[u] = 1;
	}
	r->memory -= dup;
	for (uint32_t i = sp0; i < r->stack.n; i++)
		pool_append(r, ((uint32_t *)r->stack.p)[i]);
	if (r->eqclass)
		for (uint32_t i = sp0; i < r->stack.n; i++) {
			uint32_t s = ((uint32_t *)r->stack.p)[i];
			struct ds_sstate *x = &r->ss[s];
			if (x->ecn == DS_NIL)
				continue; /* a storage listed twice */
			EC(r)[ec_root(r, x->ecn)].value -= (int64_t)r->comp[s];
			x->ecn = DS_NIL;
		}
	if (r->regions && fresh) /* rebuild uses the stack above these */
		regions_after(r, (uint32_t *)r->stack.p + sp0,
			      r->stack.n - sp0);
	r->stack.n = sp0;
}

/* v2.py _materialize. */
static enum ds_stop materialize(struct ds_run *r, uint32_t t, bool remat)
{
	const struct ds_op *op = OP(r, T(r, t)->op);
	const uint32_t *args = &ARGS(r->tr)[op->arg0];
	for (uint32_t i = 0; i < op->n_arg; i++)
		r->ss[T(r, args[i])->sto].last_access = r->clock;
	/* lock the defined parents; note the others (a snapshot: a list
	 * taken before any of them is materialized) */
	uint32_t sp0 = r->stack.n;
	for (uint32_t i = 0; i < op->n_arg; i++) {
		if (r->defined[args[i]])
			lock(r, T(r, args[i])->sto);
		else if (vec_push(&r->stack, sizeof i, &i) < 0)
			return S_NOMEM;
	}
	uint32_t sp1 = r->stack.n;
	for (uint32_t k = sp0; k < sp1; k++) {
		uint32_t p = args[((uint32_t *)r->stack.p)[k]];
		if (!r->defined[p]) {
			enum ds_stop st = materialize(r, p, true);
			if (st)
				return st;
		}
		lock(r, T(r, p)->sto);
	}
	r->stack.n = sp0;
	if (r->memory + op->total > r->budget) {
		enum ds_stop st = free_for(r, op->total);
		if (st)
			return st;
	}
	compute_op(r, t, remat);
	if (r->nomem)
		return S_NOMEM;
	for (uint32_t i = 0; i < op->n_arg; i++)
		unlock(r, T(r, args[i])->sto);
	if (r->res->remat_compute_ns > r->remat_limit)
		return S_THRASH;
	return S_GO;
}

/* v2.py compute: create op o's outputs and materialize the first. */
static enum ds_stop cmd_compute(struct ds_run *r, uint32_t o)
{
	const struct ds_op *op = OP(r, o);
	for (uint32_t u = op->out0; u < op->out0 + op->n_out; u++) {
		const struct ds_tensor *x = T(r, u);
		struct ds_sstate *s = &r->ss[x->sto];
		if (u >= r->n_created)
			r->n_created = u + 1;
		s->ref_ext++;
		r->comp[x->sto] += x->cdelta;
		if (r->eqclass && !s->has_ecn) {
			s->has_ecn = true;
			s->ecn = ec_new(r, 0);
			if (r->nomem)
				return S_NOMEM;
		}
	}
	enum ds_stop st = materialize(r, op->out0, false);
	if (st)
		return st;
	for (uint32_t u = op->out0; u < op->out0 + op->n_out; u++)
		r->ss[T(r, u)->sto].last_access = r->clock;
	return S_GO;
}

/* RuntimeV2EagerOptimized.release; in the baseline, RuntimeV1's
 * banishing frees pinned storages too. */
static void cmd_release(struct ds_run *r, uint32_t t)
{
	uint32_t s = T(r, t)->sto;
	struct ds_sstate *x = &r->ss[s];
	if (--x->ref_ext != 0 || !r->material[s])
		return;
	if (r->v1) {
		x->ref_int = 0;
		x->pinned = false;
	} else if (x->pinned) {
		return;
	}
	evict(r, s);
	r->res->evictions_eager_release++;
}

static enum ds_stop cmd_pin(struct ds_run *r, uint32_t t)
{
	if (!r->defined[t]) {
		enum ds_stop st = materialize(r, t, true);
		if (st)
			return st;
	}
	uint32_t s = T(r, t)->sto;
	if (!r->ss[s].pinned) {
		lock(r, s);
		r->ss[s].pinned = true;
	}
	return S_GO;
}

static void memo_free(struct ds_memo *m)
{
	for (int d = 0; m && d < 2; d++) {
		free(m[d].stamp);
		free(m[d].slot);
		free(m[d].ent);
		free(m[d].words);
		free(m[d].todo.p);
	}
	free(m);
}

/* The closures' state for ns storages, or NULL. */
static struct ds_memo *memo_new(uint32_t ns)
{
	size_t n = ns ? ns : 1;
	struct ds_memo *m = calloc(2, sizeof *m);
	for (int d = 0; m && d < 2; d++) {
		struct ds_memo *x = &m[d];
		x->stamp = calloc(n, sizeof *x->stamp);
		x->slot = malloc(n * sizeof *x->slot);
		if (!x->stamp || !x->slot) {
			memo_free(m);
			return NULL;
		}
	}
	return m;
}

static void run_free(struct ds_run *r)
{
	memo_free(r->memo);
	free(r->scratch);
	free(r->reg);
	arena_free(&r->arena);
	free(r->defined);
	free(r->material);
	free(r->comp);
	free(r->vis);
	free(r->dfs);
	free(r->ss);
	free(r->ec.p);
	free(r->stack.p);
	free(r->aff.p);
	free(r->mark);
	free(r->mark2);
}

/* What a probe asks for: stop after n_cmds commands, copy the storages'
 * state into sto[0 .. n_sto). */
struct ds_probe {
	uint32_t n_cmds;	    /* commands to run */
	struct dtr_probe_sto *sto; /* where the state goes */
	uint32_t n_sto;		    /* its room */
};

/* A set as a mask of the storages below 64. */
static uint64_t ids_mask(const struct ds_run *r, const struct ds_ids *l)
{
	struct ds_iter it = {0};
	uint64_t m = 0;
	uint32_t x;
	while (ids_next(l, r->words, &it, &x))
		if (x < 64)
			m |= (uint64_t)1 << x;
	return m;
}

static void probe_fill(const struct ds_run *r, const struct ds_probe *pr)
{
	for (uint32_t s = 0; s < pr->n_sto && s < r->tr->stos.n; s++) {
		struct dtr_probe_sto *p = &pr->sto[s];
		*p = (struct dtr_probe_sto){
			.material = r->material[s],
			.pinned = r->ss[s].pinned,
			.last_access = r->ss[s].last_access,
			.compute = r->comp[s]};
		for (int d = 0; r->reg && d < 2; d++) {
			const struct ds_region *g = &r->reg[2 * (size_t)s + d];
			p->region_compute[d] = g->compute;
			p->interior[d] = ids_mask(r, &g->interior);
			p->frontier[d] = ids_mask(r, &g->frontier);
		}
	}
}

static int replay(const struct dtr_trace *tr, enum dtr_heuristic h,
		  uint64_t budget, uint64_t remat_limit, bool v1, bool walk,
		  const struct ds_probe *pr, struct dtr_result *res,
		  gms_err *err)
{
	uint32_t nt = tr->ts.n, ns = tr->stos.n;
	struct ds_run r = {.tr = tr,
			   .h = h,
			   .regions = h == DTR_H_DTR || h == DTR_H_MSPS,
			   .fwd_interior = h == DTR_H_DTR,
			   .eqclass = h == DTR_H_EQCLASS,
			   .v1 = v1,
			   .budget = budget,
			   .remat_limit = remat_limit,
			   .clock = 1,
			   .words = (ns + 63) / 64,
			   .bits_min = (ns + 63) / 64 <= DS_BITS_WORDS
					       ? 0
					       : DS_BITS_MIN,
			   .bits_left = DS_BITS_BUDGET,
			   .head = DS_NIL,
			   .tail = DS_NIL,
			   .res = res};
	*res = (struct dtr_result){0};
	r.defined = calloc(nt ? nt : 1, 1);
	r.material = calloc(ns ? ns : 1, 1);
	r.comp = calloc(ns ? ns : 1, sizeof *r.comp);
	r.vis = calloc(2 * (size_t)(ns ? ns : 1), sizeof *r.vis);
	r.dfs = malloc((ns ? ns : 1) * sizeof *r.dfs);
	r.ss = malloc((ns ? ns : 1) * sizeof *r.ss);
	r.mark = calloc(ns ? ns : 1, sizeof *r.mark);
	r.mark2 = calloc(ns ? ns : 1, sizeof *r.mark2);
	if (r.regions)
		r.reg = calloc(2 * (size_t)(ns ? ns : 1), sizeof *r.reg);
	if (r.regions && !walk) {
		r.memo = memo_new(ns); /* NULL: walk */
		r.scratch = calloc(2 * (size_t)(r.words ? r.words : 1),
				   sizeof *r.scratch);
		if (!r.scratch) {
			memo_free(r.memo);
			r.memo = NULL;
		}
	}
	if (!r.defined || !r.material || !r.comp || !r.vis || !r.dfs || !r.ss || !r.mark || !r.mark2 || (r.regions && !r.reg)) {
		run_free(&r);
		return gms_errf(err, "dtr: out of memory");
	}
	for (uint32_t s = 0; s < ns; s++)
		r.ss[s] = (struct ds_sstate){.last_access = DTR_NEVER,
					     .prev = DS_NIL,
					     .next = DS_NIL,
					     .ecn = DS_NIL};
	enum ds_stop st = S_GO;
	const struct ds_cmd *c = CMDS(tr);
	uint32_t n_cmds = pr && pr->n_cmds < tr->cmds.n ? pr->n_cmds
							: tr->cmds.n;
	for (uint32_t i = 0; i < n_cmds && st == S_GO; i++) {
		switch (c[i].kind) {
		case C_COMPUTE: st = cmd_compute(&r, c[i].arg); break;
		case C_GET: r.ss[T(&r, c[i].arg)->sto].ref_ext++; break;
		case C_PIN: st = cmd_pin(&r, c[i].arg); break;
		case C_RELEASE: cmd_release(&r, c[i].arg); break;
		}
		if (r.nomem)
			st = S_NOMEM;
	}
	if (pr && st != S_NOMEM)
		probe_fill(&r, pr);
	res->memory_bytes = r.memory;
	run_free(&r);
	if (st == S_NOMEM)
		return gms_errf(err, "dtr: out of memory");
	res->status = st == S_OOM	 ? DTR_OOM
		      : st == S_THRASH ? DTR_THRASH
				       : DTR_OK;
	res->clock_end = (uint64_t)r.clock;
	return 0;
}

static int run_baseline(const struct dtr_trace *tr, struct dtr_baseline *b,
			gms_err *err)
{
	struct dtr_result res;
	/* run_pareto: RuntimeV1(inf, Heuristic()): no regions, no classes */
	if (replay(tr, DTR_H_LARGEST, UINT64_MAX, UINT64_MAX, true, true, NULL,
		   &res, err) < 0)
		return -1;
	*b = (struct dtr_baseline){.peak_bytes = res.max_memory_bytes,
				   .compute_ns = res.model_compute_ns,
				   .const_bytes = tr->const_bytes,
				   .n_ops = tr->ops.n,
				   .n_cmds = tr->cmds.n,
				   .n_storages = tr->stos.n};
	return 0;
}

int dtr_baseline(const struct dtr_trace *tr, struct dtr_baseline *b)
{
	*b = tr->base;
	return 0;
}

/* dtr_serial_run and dtr_serial_probe. */
static int serial_run(const struct dtr_trace *tr, const struct dtr_opts *o,
		      const struct ds_probe *pr, struct dtr_result *r,
		      gms_err *err)
{
	if ((unsigned)o->heuristic >= DTR_H_COUNT)
		return gms_errf(err, "dtr: unknown heuristic %d",
				(int)o->heuristic);
	if (tr->untimed.msg[0])
		return gms_errf(err, "%s", tr->untimed.msg);
	if (replay(tr, o->heuristic, o->budget_bytes, o->remat_limit_ns, false,
		   o->walk_regions, pr, r, err) < 0)
		return -1;
	r->overhead = tr->base.compute_ns
			      ? (double)r->clock_end /
					(double)tr->base.compute_ns
			      : INFINITY;
	return 0;
}

int dtr_serial_run(const struct dtr_trace *tr, const struct dtr_opts *o,
		   struct dtr_result *r, gms_err *err)
{
	return serial_run(tr, o, NULL, r, err);
}

int dtr_serial_probe(const struct dtr_trace *tr, const struct dtr_opts *o,
		     uint32_t n_cmds, struct dtr_result *r,
		     struct dtr_probe_sto *sto, uint32_t n_sto, gms_err *err)
{
	struct ds_probe pr = {n_cmds, sto, n_sto};
	return serial_run(tr, o, &pr, r, err);
}
