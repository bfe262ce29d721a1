/*
 * vdnn.c - vDNN (Rhu et al., MICRO 2016) and vDNN++ (Shriram et al.), as
 * the vDNN++ paper describes them (its sections II-B, III and IV).
 *
 * Both reason in layers (wl_op.layer) and offload the input X of chosen
 * layers to pinned host memory while the layer computes:
 *
 *   offload scheme  all: every layer; conv: the convolution layers;
 *                   aconv: every other convolution layer (the 1st, 3rd,
 *                   ...); none: nothing (the "base" manager);
 *   algorithm       m: every convolution kernel takes its memory-optimal
 *                   algorithm (least workspace, the faster on a tie);
 *                   p: its performance-optimal one (fastest, the smaller
 *                   workspace on a tie);
 *   dyn             profile passes pick the scheme: all(m) must fit
 *                   (else nothing does, and the run goes ahead as all(m)
 *                   to report its OOM); then none(p), conv(p), all(p),
 *                   the first that fits; else vDNN's greedy downgrade,
 *                   all(p) with the first k conv layers on m for k = 1,
 *                   2, ... (see plan_dyn). A pass is this policy with
 *                   that scheme, simulated on the side with the run's
 *                   profile, budget and iterations;
 *   m_layers        under p, the first N conv layers take m (what the
 *                   greedy step sets; also a parameter).
 *
 * Which tensors a chosen layer offloads: the activations (and the input
 * batch) its forward ops read, when this layer is their last forward
 * reader (so a skip connection's tensor leaves after its last forward
 * use, not before) and some backward op reads them again (a tensor no
 * backward op needs is freed after its last use anyway; copying it out
 * would be wasted traffic).
 *
 * vDNN, forward: at the start of a chosen layer, its X is copied out on
 * the D2H engine (ex_swap_out with release) while the layer computes; at
 * the layer's end (after_op of its last op) the host waits for the copy
 * (ex_wait: "vDNN synchronizes computation and offload at the end of each
 * layer"), so the next layer starts when both are done and X's block is
 * free. Backward: at the start of each layer m, the X of the
 * nearest earlier layer n < m that was offloaded and not yet fetched is
 * copied in (ex_swap_in) while m computes, and the next layer waits for
 * that copy. A layer whose own X is still on the host when it starts
 * fetches it on demand (the executor's default, an H2D stall).
 *
 * vDNN++ (section IV-A): the same copies without the end-of-layer waits,
 * but with one barrier at the end of forward propagation: every offloaded
 * X has left the device before backward starts (the semaphore wait of
 * section IV-A; see vdnn_after_op), so no prefetch ever finds a tensor
 * still on its way out. The next layer starts as soon as the previous
 * one's kernels finish; an
 * offloaded X is freed when both its copy and its readers are done; an
 * allocation that does not fit waits until memory is released
 * (on_alloc_fail = EX_WAIT, the blocking cnmemMalloc), counted as a
 * memory stall; in backward a kernel waits only for its own input's
 * prefetch. Section IV-B: allocation heuristic `bestfit` (CNMeM as is) or
 * `highend` (tensors chosen for offload placed at the highest free
 * address, the others by best fit) and the order of allocations in a
 * backward layer: `prefetch-first` (the prefetched X before the layer's
 * input gradient: the copy is issued before the op's outputs are
 * allocated) or `derivative-first` (after: issued when the op's kernel is
 * issued, its outputs already allocated). Both copies start at the same
 * instant; only the placement differs. Section IV-C: ZVC compression of
 * the offloaded copies on the host CPU (see plan_compression).
 *
 * Memory: both run on CNMeM, a pool-bestfit pool as large as the budget
 * (vDNN++ with `highend` on the highend model); the allocator hook
 * imposes it whatever the experiment's allocator is.
 */
#include "vdnn.h"

#include "../sim/ex.h"
#include "pol.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum vd_offload { VD_NONE, VD_ALL, VD_CONV, VD_ACONV, VD_DYN };
static const char *const vd_offload_names[] = {"none", "all",  "conv",
					       "aconv", "dyn", NULL};
enum vd_algo { VD_M, VD_P };
static const char *const vd_algo_names[] = {"m", "p", NULL};
enum vd_heur { VD_BESTFIT, VD_HIGHEND };
static const char *const vd_heur_names[] = {"bestfit", "highend", NULL};
enum vd_order { VD_PREFETCH_FIRST, VD_DERIVATIVE_FIRST };
static const char *const vd_order_names[] = {"prefetch-first",
					     "derivative-first", NULL};

struct vdnn_params {
	int offload;	      /* enum vd_offload */
	int algo;	      /* enum vd_algo */
	int64_t m_layers;     /* algo p: leading conv layers taking m */
	int heuristic;	      /* enum vd_heur (vDNN++) */
	int order;	      /* enum vd_order (vDNN++) */
	bool compress;	      /* ZVC-compress host copies (vDNN++) */
	double relu_density;  /* nonzero fraction of ReLU outputs */
	double density;	      /* nonzero fraction of other tensors */
	char densities[PRM_STR_MAX]; /* "name=d,..." per-tensor overrides */
	int64_t frac;	      /* FRAC: chunks per thread share */
	int64_t threads;      /* compression threads, 0 = the profile's */
};

#define P_(f) offsetof(struct vdnn_params, f)
#define VD_COMMON_PARAMS                                                       \
	{"offload", PRM_ENUM, "dyn", 0, 0, vd_offload_names,                   \
	 "layers whose input is offloaded: none, all, conv, aconv "            \
	 "(alternate conv layers), or dyn (profile passes choose offload "     \
	 "and algorithm)",                                                     \
	 P_(offload)},                                                         \
	{"algo", PRM_ENUM, "p", 0, 0, vd_algo_names,                           \
	 "convolution algorithms: m (least workspace) or p (fastest); "        \
	 "ignored by dyn",                                                     \
	 P_(algo)},                                                            \
	{"m_layers", PRM_INT, "0", 0, 1 << 30, NULL,                           \
	 "with algo=p: the first N convolution layers (forward order) take "   \
	 "their memory-optimal algorithms instead (the step of dyn's greedy "  \
	 "downgrade)",                                                         \
	 P_(m_layers)}

static const struct prm_def vdnn_params[] = {
	VD_COMMON_PARAMS,
	PRM_END,
};

static const struct prm_def vdnnpp_params[] = {
	VD_COMMON_PARAMS,
	{"heuristic", PRM_ENUM, "bestfit", 0, 0, vd_heur_names,
	 "allocation heuristic (section IV-B): bestfit (CNMeM) or highend "
	 "(offloaded tensors at the highest free address)",
	 P_(heuristic)},
	{"order", PRM_ENUM, "prefetch-first", 0, 0, vd_order_names,
	 "backward allocation order: the prefetched input before "
	 "(prefetch-first) or after (derivative-first) the layer's gradient",
	 P_(order)},
	{"compress", PRM_BOOL, "false", 0, 0, NULL,
	 "ZVC-compress offloaded data in pinned memory on the host CPU "
	 "(section IV-C)",
	 P_(compress)},
	/* A ReLU zeroes its negative inputs; for pre-activations symmetric
	 * about zero (what batch statistics and zero-mean initialisation aim
	 * for) that is half of them: density 0.5. */
	{"relu_density", PRM_DOUBLE, "0.5", 0, 1, NULL,
	 "fraction of nonzero values in ReLU outputs, (0, 1]; 0.5: half of "
	 "pre-activations symmetric about zero are negative",
	 P_(relu_density)},
	{"density", PRM_DOUBLE, "1", 0, 1, NULL,
	 "fraction of nonzero values in other offloaded tensors (1: assume "
	 "dense)",
	 P_(density)},
	{"densities", PRM_STR, "", 0, 0, NULL,
	 "per-tensor densities overriding the two above, "
	 "\"name=0.3,name2=0.6\"",
	 P_(densities)},
	/* The paper leaves FRAC open ("a fixed fraction (say FRAC)"); 8
	 * wastes at most 1/8 of a tensor to the last chunk of each thread. */
	{"frac", PRM_INT, "8", 1, 1 << 20, NULL,
	 "FRAC: pinned space for compressed data grows in chunks of "
	 "size / (FRAC x threads)",
	 P_(frac)},
	{"threads", PRM_INT, "0", 0, 4096, NULL,
	 "host threads compressing, 0 = the profile's host.cpu_threads",
	 P_(threads)},
	PRM_END,
};
#undef P_

/* One dyn profile pass. */
struct vd_pass {
	int offload, algo; /* the configuration tried */
	bool fits;	   /* it ran without OOM */
	sim_time_t time;   /* its iteration time */
};

struct vdnn {
	bool pp;		/* vDNN++ (no layer sync, blocking malloc) */
	struct vdnn_params prm; /* parameters, dyn resolved */
	uint32_t n_layers;	/* layers of the workload */
	uint32_t *off_at;	/* per layer + 1: off_list[off_at[l] ..
				   off_at[l + 1]) are layer l's offloads */
	uint32_t *off_list;	/* tensor ids grouped by layer */
	bool *fetched;		/* per layer: prefetch issued this iter */
	uint32_t layer;		/* layer of the previous op (WL_NONE: none
				   yet this iteration) */
	int phase;		/* its phase */
	bool *conv;		/* per layer: has a forward convolution */
	uint32_t *below;	/* per layer l: the nearest layer under l
				   that offloads or has a forward
				   convolution (where next_to_fetch's walk
				   down stops), WL_NONE for none */
	uint32_t pending;	/* derivative-first: layer to fetch when the
				   current op's kernel is issued, or WL_NONE */
	uint32_t pending_op;	/* the op that kernel belongs to */
	eng_event sync;		/* vDNN: the copy the next layer waits for */
	uint64_t off_bytes;	/* bytes offloaded per iteration (planned) */
	uint32_t n_off;		/* tensors offloaded per iteration */
	uint32_t n_off_layers;	/* layers offloading */
	uint64_t n_refused;	/* offloads the engine refused (tensor not
				   resident, pinned memory exhausted) */
	uint64_t n_fetch_failed; /* prefetches the allocator could not
				    serve: the tensor stays out and the
				    executor brings it in when backward
				    reads it (on demand, stalling) */
	uint64_t n_barrier;	/* vDNN++: end-of-forward barriers waited on
				   (one per iteration) */
	uint32_t n_comp;	/* tensors compressed */
	uint64_t comp_stored;	/* their compressed host size */
	uint64_t comp_bytes;	/* their size */
	struct vd_pass pass[4]; /* dyn's profile passes of whole schemes */
	int n_pass;		/* how many */
	int64_t n_greedy;	/* dyn's greedy downgrade passes */
};

static int vdnn_init_common(struct pol *p, bool pp, gms_err *err)
{
	struct vdnn *s = calloc(1, sizeof *s);
	if (!s)
		return gms_errf(err, "out of memory");
	s->pp = pp;
	s->prm = *(const struct vdnn_params *)p->params;
	if (!pp) { /* parameters vDNN lacks take the non-vDNN++ meaning */
		s->prm.heuristic = VD_BESTFIT;
		s->prm.order = VD_PREFETCH_FIRST;
		s->prm.compress = false;
	}
	if (s->prm.compress && !(s->prm.relu_density > 0 && s->prm.density > 0)) {
		free(s);
		return gms_errf(err, "densities must be > 0 to compress");
	}
	p->priv = s;
	return 0;
}

static int vdnn_init(struct pol *p, gms_err *err)
{
	return vdnn_init_common(p, false, err);
}

static int vdnnpp_init(struct pol *p, gms_err *err)
{
	return vdnn_init_common(p, true, err);
}

static void vdnn_fini(struct pol *p)
{
	struct vdnn *s = p->priv;
	if (s) {
		free(s->off_at);
		free(s->off_list);
		free(s->fetched);
		free(s->conv);
		free(s->below);
	}
	free(s);
	p->priv = NULL;
}

static const char *vdnn_allocator(const struct pol *p)
{
	const struct vdnn *s = p->priv;
	return s->prm.heuristic == VD_HIGHEND ? "highend" : "pool-bestfit";
}

/* ---- planning -------------------------------------------------------- */

/* rank[l] for each layer l: its place among the convolution layers (those
 * with a forward conv op) in the order their forward ops run, -1 for the
 * others. Returns how many convolution layers there are. */
static int64_t conv_ranks(const struct wl_workload *wl, int64_t *rank)
{
	for (uint32_t l = 0; l <= wl->n_layers; l++)
		rank[l] = -1;
	int64_t n_conv = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (op->phase == WL_FWD && op->type == OT_CONV &&
		    rank[op->layer] < 0)
			rank[op->layer] = n_conv++;
	}
	return n_conv;
}

/* Each convolution kernel's algorithm under scheme m (least workspace,
 * the faster on a tie) or p (fastest, the smaller workspace on a tie);
 * under p the kernels of the first m_layers convolution layers (in the
 * order their forward ops run) take m. */
static int pick_algos(struct ex *ex, int algo, int64_t m_layers, gms_err *err)
{
	const struct wl_workload *wl = ex_workload(ex);
	int64_t *rank = malloc((wl->n_layers + 1) * sizeof *rank);
	if (!rank)
		return gms_errf(err, "out of memory");
	conv_ranks(wl, rank);
	int rc = 0;
	for (uint32_t o = 0; o < wl->n_ops && rc == 0; o++) {
		const struct wl_op *op = &wl->ops[o];
		uint32_t n;
		const struct wl_algo *al = ex_op_algos(ex, o, &n);
		if (n == 0)
			continue;
		bool m = algo == VD_M || (rank[op->layer] >= 0 &&
					  rank[op->layer] < m_layers);
		uint32_t best = m ? wl_least_workspace_of(al, n)
				  : wl_fastest_of(al, n);
		if (ex_pick_algo(ex, o, best) < 0)
			rc = gms_errf(err, "%s", ex_last_error(ex));
	}
	free(rank);
	return rc;
}

/* Is t read by some backward op? */
static bool read_in_backward(const struct wl_workload *wl,
			     const struct wl_tensor *t)
{
	for (uint32_t i = 0; i < t->n_readers; i++)
		if (wl->ops[t->readers[i]].phase == WL_BWD)
			return true;
	return false;
}

/* Which layers the scheme chooses: chosen[l]. Layers are taken in the
 * order their first forward op runs; "alternate" counts conv layers. */
static int choose_layers(const struct wl_workload *wl, int scheme,
			 bool *chosen, bool *conv)
{
	bool *seen = calloc(wl->n_layers + 1, sizeof *seen);
	if (!seen)
		return -1;
	for (uint32_t o = 0; o < wl->n_ops; o++)
		if (wl->ops[o].phase == WL_FWD)
			conv[wl->ops[o].layer] |= wl->ops[o].type == OT_CONV;
	uint32_t k = 0; /* convolution layers seen, in forward order */
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		uint32_t l = wl->ops[o].layer;
		if (wl->ops[o].phase != WL_FWD || seen[l])
			continue;
		seen[l] = true;
		chosen[l] = scheme == VD_ALL ||
			    (scheme == VD_CONV && conv[l]) ||
			    (scheme == VD_ACONV && conv[l] && k % 2 == 0);
		k += conv[l];
	}
	free(seen);
	return 0;
}

/* off_at/off_list for `scheme`: see the file comment for which tensors. */
static int plan_offloads(struct vdnn *s, const struct wl_workload *wl,
			 int scheme, gms_err *err)
{
	s->n_layers = wl->n_layers;
	bool *chosen = calloc(wl->n_layers + 1, sizeof *chosen);
	uint32_t *owner = malloc((wl->n_tensors + 1) * sizeof *owner);
	s->off_at = calloc(wl->n_layers + 1, sizeof *s->off_at);
	s->off_list = malloc((wl->n_tensors + 1) * sizeof *s->off_list);
	s->fetched = calloc(wl->n_layers + 1, sizeof *s->fetched);
	s->conv = calloc(wl->n_layers + 1, sizeof *s->conv);
	s->below = malloc((wl->n_layers + 1) * sizeof *s->below);
	if (!chosen || !owner || !s->off_at || !s->off_list || !s->fetched ||
	    !s->conv || !s->below ||
	    choose_layers(wl, scheme, chosen, s->conv) < 0) {
		free(chosen);
		free(owner);
		return gms_errf(err, "out of memory");
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		const struct wl_tensor *x = &wl->tensors[t];
		owner[t] = WL_NONE;
		if ((x->kind != WL_ACT && x->kind != WL_INPUT) ||
		    x->last_fwd_reader == WL_NONE || !read_in_backward(wl, x))
			continue;
		uint32_t l = wl->ops[x->last_fwd_reader].layer;
		if (chosen[l])
			owner[t] = l;
	}
	/* group by layer (counting sort keeps tensor order within a layer) */
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (owner[t] != WL_NONE)
			s->off_at[owner[t] + 1]++;
	for (uint32_t l = 0; l < wl->n_layers; l++) {
		s->n_off_layers += s->off_at[l + 1] > 0;
		s->off_at[l + 1] += s->off_at[l];
	}
	uint32_t *fill = calloc(wl->n_layers + 1, sizeof *fill);
	if (!fill) {
		free(chosen);
		free(owner);
		return gms_errf(err, "out of memory");
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		uint32_t l = owner[t];
		if (l == WL_NONE)
			continue;
		s->off_list[s->off_at[l] + fill[l]++] = t;
		s->off_bytes += wl->tensors[t].bytes;
		s->n_off++;
	}
	s->below[0] = WL_NONE;
	for (uint32_t l = 1; l <= wl->n_layers; l++)
		s->below[l] = s->off_at[l] > s->off_at[l - 1] || s->conv[l - 1]
				      ? l - 1
				      : s->below[l - 1];
	free(fill);
	free(chosen);
	free(owner);
	return 0;
}

/* Every tensor's density in d[]: relu_density for ReLU outputs, density
 * for the rest, then the "densities" entries ("name=0.3,name2=0.6"), each
 * naming a tensor of the workload. */
static int tensor_densities(const struct vdnn_params *prm,
			    const struct wl_workload *wl, double *d,
			    gms_err *err)
{
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		uint32_t p = wl->tensors[t].producer;
		d[t] = p != WL_NONE && wl->ops[p].type == OT_RELU
			       ? prm->relu_density
			       : prm->density;
	}
	for (const char *c = prm->densities; *c;) {
		const char *eq = strchr(c, '='), *end = strchr(c, ',');
		if (!end)
			end = c + strlen(c);
		if (!eq || eq > end)
			return gms_errf(err,
					"densities: '%.*s' is not name=density",
					(int)(end - c), c);
		char name[PRM_STR_MAX];
		snprintf(name, sizeof name, "%.*s", (int)(eq - c), c);
		uint32_t t = wl_tensor_id(wl, name);
		if (t == WL_NONE)
			return gms_errf(err,
					"densities: no tensor '%s' in workload %s",
					name, wl->name);
		char *stop;
		d[t] = strtod(eq + 1, &stop);
		if (stop != end || !(d[t] > 0 && d[t] <= 1))
			return gms_errf(err,
					"densities: '%.*s': the density must be "
					"in (0, 1]",
					(int)(end - c), c);
		c = *end ? end + 1 : end;
	}
	return 0;
}

/* Bytes a ZVC-compressed copy of `bytes` occupies in pinned memory
 * (section IV-C). ZVC keeps one mask bit per 32-bit word plus the nonzero
 * words (Rhu et al., cDMA, HPCA 2018): bytes x (density + 1/32). Each of
 * `threads` threads compresses a 1/threads share and takes pinned space in
 * chunks of size / (FRAC x threads) as it fills them, so a share needs
 * ceil(FRAC x (density + 1/32)) chunks. */
uint64_t vdnn_zvc_stored(uint64_t bytes, double density, int64_t frac,
			 int64_t threads)
{
	uint64_t n = (uint64_t)threads;
	uint64_t chunk = (bytes + (uint64_t)frac * n - 1) / ((uint64_t)frac * n);
	double share = (double)bytes / (double)n * (density + 1.0 / 32.0);
	uint64_t chunks = (uint64_t)ceil(share / (double)chunk - 1e-9);
	return n * chunks * chunk;
}

/* Section IV-C: compress every offloaded tensor that ZVC shrinks. The
 * threads share one tensor ("these threads compress different parts of
 * the offloaded network layer data in parallel"), so a tensor takes
 * size / (threads x throughput per thread) to compress. */
static int plan_compression(struct vdnn *s, struct ex *ex, gms_err *err)
{
	const struct wl_workload *wl = ex_workload(ex);
	const struct hw_profile *hw = ex_hw(ex);
	int64_t threads = s->prm.threads ? s->prm.threads : hw->cpu_threads;
	double *d = malloc((wl->n_tensors + 1) * sizeof *d);
	if (!d)
		return gms_errf(err, "out of memory");
	int rc = tensor_densities(&s->prm, wl, d, err);
	for (uint32_t i = 0; rc == 0 && i < s->off_at[s->n_layers]; i++) {
		uint32_t t = s->off_list[i];
		uint64_t bytes = wl->tensors[t].bytes;
		uint64_t stored =
			vdnn_zvc_stored(bytes, d[t], s->prm.frac, threads);
		if (stored >= bytes)
			continue; /* ZVC would not shrink it */
		double n = (double)threads;
		sim_time_t tc = sim_round_ns((double)bytes /
					     (n * hw->zvc_bytes_per_s) * 1e9);
		sim_time_t td = sim_round_ns(
			(double)bytes / (n * hw->zvc_decompress_bytes_per_s) *
			1e9);
		if (ex_host_compress(ex, t, stored, tc, td) < 0) {
			rc = gms_errf(err, "%s", ex_last_error(ex));
			break;
		}
		s->n_comp++;
		s->comp_stored += stored;
		s->comp_bytes += bytes;
	}
	free(d);
	return rc;
}

static int plan_scheme(struct pol *p, struct ex *ex, gms_err *err);
/* One dyn profile pass: this policy with scheme (offload, algo, m_layers),
 * simulated on the side with the run's configuration (as many iterations
 * as the run: a pool fragments across iterations too). 1 when it ran
 * without OOM, 0 when it did not fit, -1 on an error. */
static int dyn_pass(struct pol *p, struct ex *ex, int offload, int algo,
		    int64_t m_layers, gms_err *err)
{
	struct vdnn *s = p->priv;
	struct vdnn_params prm = s->prm;
	prm.offload = offload;
	prm.algo = algo;
	prm.m_layers = m_layers;
	struct pol child = {.ops = p->ops, .params = &prm};
	snprintf(child.label, sizeof child.label, "%s", p->label);
	if (p->ops->init(&child, err) < 0)
		return -1;
	struct ex_cfg cfg = *ex_config(ex);
	cfg.pol = &child;
	cfg.obs = NULL;
	struct st_run r;
	int rc = ex_run(&cfg, &r, err);
	p->ops->fini(&child);
	bool fits = rc == 0 && !r.oom.hit;
	sim_time_t time = r.n_iter > r.warmup ? r.steady.time : 0;
	st_run_free(&r);
	if (rc < 0)
		return gms_err_prefix(err, "dyn profile pass %s(%s)",
				      vd_offload_names[offload],
				      vd_algo_names[algo]);
	if (m_layers == 0 && s->n_pass < (int)(sizeof s->pass / sizeof *s->pass))
		s->pass[s->n_pass++] = (struct vd_pass){offload, algo, fits,
							time};
	else
		s->n_greedy++;
	return fits;
}

/*
 * dyn, as vDNN describes it (Rhu et al., MICRO 2016, section III-C): a
 * profile pass first checks that all(m), the most memory-saving scheme,
 * trains at all (else nothing does, and the run goes ahead as all(m) to
 * report its OOM); then none(p), conv(p) and all(p) are tried in that
 * order, the first that fits winning; if none does, vDNN's greedy
 * last resort downgrades convolution layers from their
 * performance-optimal to their memory-optimal algorithms one layer at a
 * time: all(p) with the first k conv layers (forward order) on m, for k =
 * 1, 2, ..., until a pass fits -- at worst every layer, which is all(m).
 * The vDNN++ paper only says dyn "runs few profile passes and uses a
 * heuristic to choose the mode which fits in the memory and is the
 * fastest" (section II-B). The order of the downgrade (first layers
 * first) is our choice: vDNN's text does not fix it, and in CNNs the
 * first layers have the largest feature maps and workspaces. Feasibility
 * is honest: a pass whose convolution workspace does not fit is an OOM
 * (vDNN never changes an algorithm it chose).
 */
static int plan_dyn(struct pol *p, struct ex *ex, gms_err *err)
{
	struct vdnn *s = p->priv;
	static const int order[][2] = {
		{VD_ALL, VD_M},	 /* must fit, else nothing does */
		{VD_NONE, VD_P}, {VD_CONV, VD_P}, {VD_ALL, VD_P},
	};
	int off = VD_ALL, algo = VD_M; /* all(m) unless something faster fits */
	int64_t m_layers = 0;
	bool found = false;
	for (size_t i = 0; i < sizeof order / sizeof *order && !found; i++) {
		int fits = dyn_pass(p, ex, order[i][0], order[i][1], 0, err);
		if (fits < 0)
			return -1;
		if (i == 0 && !fits) { /* run all(m) to report its OOM */
			s->prm.offload = VD_ALL;
			s->prm.algo = VD_M;
			s->prm.m_layers = 0;
			return plan_scheme(p, ex, err);
		}
		if (i > 0 && fits) {
			off = order[i][0];
			algo = order[i][1];
			found = true;
		}
	}
	const struct wl_workload *wl = ex_workload(ex);
	int64_t *rank = malloc((wl->n_layers + 1) * sizeof *rank);
	if (!rank)
		return gms_errf(err, "out of memory");
	int64_t n_conv = conv_ranks(wl, rank);
	free(rank);
	for (int64_t k = 1; !found && k < n_conv; k++) {
		int fits = dyn_pass(p, ex, VD_ALL, VD_P, k, err);
		if (fits < 0)
			return -1;
		if (fits) {
			algo = VD_P;
			m_layers = k;
			found = true;
		}
	}
	s->prm.offload = off;
	s->prm.algo = algo;
	s->prm.m_layers = m_layers;
	return plan_scheme(p, ex, err);
}

static int plan_scheme(struct pol *p, struct ex *ex, gms_err *err)
{
	struct vdnn *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	if (pick_algos(ex, s->prm.algo, s->prm.m_layers, err) < 0 ||
	    plan_offloads(s, wl, s->prm.offload, err) < 0)
		return -1;
	for (uint32_t i = 0; i < s->off_at[s->n_layers]; i++)
		ex_place_high(ex, s->off_list[i], s->prm.heuristic == VD_HIGHEND);
	if (s->prm.compress)
		return plan_compression(s, ex, err);
	return 0;
}

static int vdnn_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct vdnn *s = p->priv;
	if (ex_workload(ex)->n_layers == 0)
		return gms_errf(err, "workload %s has no layers",
				ex_workload(ex)->name);
	return s->prm.offload == VD_DYN ? plan_dyn(p, ex, err)
					: plan_scheme(p, ex, err);
}

/* ---- running ----------------------------------------------------------- */

static void vdnn_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct vdnn *s = p->priv;
	(void)ex;
	(void)iter;
	s->layer = WL_NONE;
	s->phase = WL_FWD;
	s->pending = WL_NONE;
	s->sync = ENG_EVENT_NONE;
	memset(s->fetched, 0, s->n_layers * sizeof *s->fetched);
}

/* Copy layer l's offloaded tensors in; returns the last copy's event (the
 * H2D engine is FIFO, so it is the last to finish). */
static eng_event fetch(struct vdnn *s, struct ex *ex, uint32_t l)
{
	eng_event last = ENG_EVENT_NONE;
	for (uint32_t i = s->off_at[l]; i < s->off_at[l + 1]; i++) {
		uint32_t t = s->off_list[i];
		enum ex_state st = ex_tensor_state(ex, t);
		if (st != TS_OUT && st != TS_SWAPPING_OUT && st != TS_SWAPPING_IN)
			continue;
		eng_event ev = ex_swap_in(ex, t, ENG_EVENT_NONE);
		if (ev != ENG_EVENT_NONE)
			last = ev;
		else
			s->n_fetch_failed++; /* no block: never silently */
	}
	return last;
}

/* The layer whose offloads to fetch while backward layer m computes, or
 * WL_NONE: walking down from m - 1, the nearest layer that offloaded
 * anything, if it is not fetched yet. The walk also stops at a
 * convolution layer (vDNN's search window ends at the next CONV layer),
 * and a fetched layer ends it too: so the fetches run one offloading
 * layer ahead of the backward pass and never further, however many
 * layers (ReLU, pooling) lie between. The walk's end is below[m]
 * (planned once: walking each time cost O(layers) per backward layer
 * when backward ops sit in layers of their own, issue 18). */
static uint32_t next_to_fetch(struct vdnn *s, uint32_t m)
{
	uint32_t l = s->below[m];
	if (l == WL_NONE || s->off_at[l + 1] == s->off_at[l] || s->fetched[l])
		return WL_NONE; /* nothing below, a convolution, or fetched */
	s->fetched[l] = true;
	return l;
}

/* A new layer starts (forward or backward). */
static void layer_begins(struct vdnn *s, struct ex *ex, const struct wl_op *op)
{
	s->sync = ENG_EVENT_NONE;
	uint32_t l = op->layer;
	if (op->phase == WL_FWD) {
		for (uint32_t i = s->off_at[l]; i < s->off_at[l + 1]; i++) {
			eng_event ev = ex_swap_out(ex, s->off_list[i], EX_RELEASE);
			if (ev != ENG_EVENT_NONE)
				s->sync = ev;
			else
				s->n_refused++;
		}
		return;
	}
	if (op->phase != WL_BWD)
		return;
	uint32_t n = next_to_fetch(s, l);
	if (n == WL_NONE)
		return;
	if (s->prm.order == VD_DERIVATIVE_FIRST) {
		s->pending = n; /* at the kernel's issue (on_access) */
		s->pending_op = op->id;
	} else {
		s->sync = fetch(s, ex, n);
	}
}

static void vdnn_before_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct vdnn *s = p->priv;
	if (op->layer == s->layer && (int)op->phase == s->phase)
		return;
	s->layer = op->layer;
	s->phase = (int)op->phase;
	layer_begins(s, ex, op);
}

/*
 * A layer's last op has completed (the next op belongs to another layer or
 * phase). What the host waits for before the next layer starts:
 *
 * vDNN: its layer's copies. "vDNN synchronizes computation and
 * offload/prefetch of data at the end of each layer; i.e. it continues to
 * the next layer's computation only after both computation and transfer
 * have been completed" (vDNN++ paper, section I). The wait comes here, at
 * the layer's end, so that the next layer's allocations and prefetch are
 * issued after it, as in vDNN.
 *
 * vDNN++: nothing, except at the end of forward propagation: "after
 * forward propagation of all layers, main thread decrements the semaphore
 * to wait for the release of all offloaded layers. This ensures that all
 * layers chosen to be offloaded are offloaded and released from GPU
 * memory before start of backward propagation" (section IV-A). An
 * offloaded X is released once its copy and its layer's computation are
 * done; the computation is done here, so the barrier is the D2H engine
 * draining (everything queued on it so far), a D2H stall.
 */
static void vdnn_after_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct vdnn *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	const struct wl_op *next =
		op->id + 1 < wl->n_ops ? &wl->ops[op->id + 1] : NULL;
	if (next && next->layer == op->layer && next->phase == op->phase)
		return; /* the layer goes on */
	if (!s->pp) {
		ex_wait(ex, s->sync);
		s->sync = ENG_EVENT_NONE;
	} else if (op->phase == WL_FWD && next && next->phase != WL_FWD) {
		ex_wait(ex, ex_queue_event(ex, ENG_D2H));
		s->n_barrier++;
	}
}

static void vdnn_on_access(struct pol *p, struct ex *ex,
			   const struct ex_access *a)
{
	struct vdnn *s = p->priv;
	if (s->pending == WL_NONE || a->op != s->pending_op || a->recompute)
		return;
	uint32_t n = s->pending;
	s->pending = WL_NONE;
	s->sync = fetch(s, ex, n);
}

static enum ex_verdict vdnnpp_on_alloc_fail(struct pol *p, struct ex *ex,
					    const struct ex_alloc_req *req)
{
	(void)p;
	(void)ex;
	(void)req;
	return EX_WAIT; /* the blocking cnmemMalloc of section IV-A */
}

static void vdnn_report(struct pol *p, FILE *out)
{
	const struct vdnn *s = p->priv;
	fprintf(out, "scheme %s(%s)\n", vd_offload_names[s->prm.offload],
		vd_algo_names[s->prm.algo]);
	if (s->prm.m_layers && s->prm.algo == VD_P)
		fprintf(out, "m_layers %lld\n", (long long)s->prm.m_layers);
	if (s->pp)
		fprintf(out, "heuristic %s\norder %s\n",
			vd_heur_names[s->prm.heuristic],
			vd_order_names[s->prm.order]);
	fprintf(out, "offload_layers %u\noffload_tensors %u\n"
		     "offload_bytes_per_iter %llu\n",
		s->n_off_layers, s->n_off, (unsigned long long)s->off_bytes);
	fprintf(out, "offloads_refused %llu\nprefetches_failed %llu\n",
		(unsigned long long)s->n_refused,
		(unsigned long long)s->n_fetch_failed);
	if (s->pp)
		fprintf(out, "forward_barriers %llu\n",
			(unsigned long long)s->n_barrier);
	for (int i = 0; i < s->n_pass; i++)
		fprintf(out, "dyn_pass_%d %s(%s) %s %.3f ms\n", i + 1,
			vd_offload_names[s->pass[i].offload],
			vd_algo_names[s->pass[i].algo],
			s->pass[i].fits ? "fits" : "oom",
			(double)s->pass[i].time / 1e6);
	if (s->n_greedy)
		fprintf(out, "dyn_greedy_passes %lld\n",
			(long long)s->n_greedy);
	if (s->prm.compress)
		fprintf(out, "compressed_tensors %u\ncompressed_bytes %llu\n"
			     "compressed_stored %llu\n",
			s->n_comp, (unsigned long long)s->comp_bytes,
			(unsigned long long)s->comp_stored);
}

const struct pol_ops pol_vdnn_ops = {
	.name = "vdnn",
	.summary = "vDNN: offload layer inputs (all/conv/aconv, m/p "
		   "algorithms, dyn), layer-wise synchronisation, CNMeM",
	.params = vdnn_params,
	.params_size = sizeof(struct vdnn_params),
	.init = vdnn_init,
	.fini = vdnn_fini,
	.allocator = vdnn_allocator,
	.plan = vdnn_plan,
	.iter_begin = vdnn_iter_begin,
	.before_op = vdnn_before_op,
	.on_access = vdnn_on_access,
	.after_op = vdnn_after_op,
	.report = vdnn_report,
};

const struct pol_ops pol_vdnnpp_ops = {
	.name = "vdnnpp",
	.summary = "vDNN++: vDNN without layer stalls, blocking allocation, "
		   "high-end placement, allocation orders, ZVC compression",
	.params = vdnnpp_params,
	.params_size = sizeof(struct vdnn_params),
	.init = vdnnpp_init,
	.fini = vdnn_fini,
	.allocator = vdnn_allocator,
	.plan = vdnn_plan,
	.iter_begin = vdnn_iter_begin,
	.before_op = vdnn_before_op,
	.on_access = vdnn_on_access,
	.after_op = vdnn_after_op,
	.on_alloc_fail = vdnnpp_on_alloc_fail,
	.report = vdnn_report,
};
