/*
 * checkpoint.c - the recomputation baselines (Capuchin section 6.1,
 * "Baselines"): keep some forward activations ("checkpoints"), drop the
 * rest once the forward pass has finished reading them, and regenerate
 * them in the backward pass from the nearest kept ancestors.
 *
 * Every mode only chooses the set of kept tensors; the mechanism is one:
 *   plan       classifies each forward activation: kept (a checkpoint),
 *              kept as the tail (produced after the last checkpoint: the
 *              backward pass reads it first, so dropping it would save no
 *              peak memory, only time; `keep_last`), kept because its
 *              producer cannot be re-run (dropout, a mutated trace
 *              tensor), kept because the engine would refuse to drop it
 *              (an input of its producer is freed by then and cannot be
 *              re-made: plan_check), or dropped after its last forward
 *              use: the later of its producer and its last forward
 *              reader;
 *   after_op   of that op: ex_drop of each dropped tensor still resident
 *              (read in backward, or held as the lineage of another
 *              dropped tensor);
 *   before_op  of a backward op: ex_recompute of each input in
 *              RECOMPUTE; the executor re-runs the producers on the
 *              compute stream, recursively back to resident tensors, and
 *              counts recompute time and FLOPs. Regenerated tensors stay
 *              until their last backward reader, so a segment is
 *              recomputed once.
 *
 * Modes:
 *   sqrt    Chen et al. 2016, "Training deep nets with sublinear memory
 *           cost", section 4.1: the n forward ops (issue order, a
 *           topological order) in k = ceil(sqrt(n)) segments of equal op
 *           counts (`segments` overrides k); at each segment end the
 *           policy keeps the segment boundary: every activation produced
 *           at or before it and read by a forward op after it (one tensor
 *           on a chain, the shortcut and the main path inside a residual
 *           block, all earlier features in a dense block), so each
 *           segment is regenerated from its own boundary.
 *   memory  gradient-checkpointing's "memory" strategy
 *           (github.com/cybertronai/gradient-checkpointing,
 *           memory_saving_gradients.py): articulation tensors ("bottleneck
 *           tensors") among the forward activations the backward pass
 *           reads (its ts_filtered, N of them), in topological order; all
 *           of them when there are at most ceil(sqrt(N)), else every
 *           step-th, step = ceil(count / sqrt(N)), starting at index step
 *           (its sorted_bottlenecks[step::step]). `segments` replaces
 *           sqrt(N) there.
 *   speed   the same tool's "speed" strategy: keep the outputs of
 *           convolutions and matrix multiplies (forward OT_CONV and
 *           OT_MATMUL), recompute everything else.
 *   list    keep exactly the tensors named in `tensors`.
 *   blocks  torch.utils.checkpoint (use_reentrant=False) on every k-th
 *           block (`every`) the generators mark, optionally offloading
 *           the kept block inputs to the host (`offload`: ColossalAI's
 *           activation_offload); selective: Megatron-LM's selective
 *           recomputation of core attention (Korthikanti et al. 2022).
 *           Both: "blocks and selective" below, docs/checkpoint-modes.md.
 *
 * ARTICULATION POINTS. The definition is gradient-checkpointing's: a
 * tensor t is a bottleneck when every path from the inputs to the loss
 * passes through t, i.e. the forward ops split into those t depends on
 * and those that depend on t, with no tensor crossing between the two
 * parts but t. (Graph-theoretic articulation points of the undirected
 * op-tensor graph would also count tensors whose removal only cuts off a
 * side branch, e.g. a batchnorm's saved statistics; those do not bound
 * what a segment's recomputation needs, so the separating definition is
 * the one that serves.) Computed in one pass over the issue order: the
 * frontier after forward op i is the set of activations produced at or
 * before i and read by a forward op after i (parameters and inputs are
 * constants, not paths; tensors no later forward op reads are dead ends);
 * t is a bottleneck exactly when some frontier is {t}. Issue order is a
 * topological order, and when every forward op lies on a path to a loss
 * (true of the generators and traces) a separating t has only ancestors
 * before its producer and only descendants after it in any such order, so
 * the test is exact. Difference arrays over the positions give each
 * frontier's size and, when it is 1, its tensor (sum of ids): O(ops +
 * tensors).
 *
 * Where a stretch of forward ops has no articulation point (an Inception
 * module, a dense block, a transformer layer's attention) `memory` does
 * what gradient-checkpointing does: nothing is kept inside, so the whole
 * stretch is regenerated from the checkpoint before it when the backward
 * pass reaches it. The report names every such stretch longer than a
 * segment (n / ceil(sqrt(n)) forward ops) and where it is regenerated
 * from.
 *
 * AGAINST GRADIENT-CHECKPOINTING. memory_saving_gradients.py (commit
 * 43444e0, the line numbers below) differs from this model in:
 *   - the tail: it copies the ops from the checkpoints to the loss
 *     (ys) and takes the gradients on the copy (lines 208-227), the copy
 *     waiting for ys (232-236), so the activations after the last
 *     checkpoint are recomputed at the start of backward: keep_last=false.
 *     keep_last=true (the default here) keeps them instead, as Chen et
 *     al. 4.1's segments do: backward reads them first, so recomputing
 *     them saves little or no peak memory and costs a forward pass of the
 *     tail (test_sqrt_options in tests/test_checkpoint.c, worked by hand).
 *   - memory mode's candidates: it drops tensors of at most 1024 elements
 *     (MIN_CHECKPOINT_NODE_SIZE, lines 30, 113) and names containing
 *     L2Loss, entropy, FusedBatchNorm, Switch, dropout or Cast (114-120)
 *     from ts_all before taking ts_filtered (the backward graph's inputs,
 *     126-128) and N = len(ts_filtered) (160); here every forward
 *     activation the backward pass reads counts.
 *   - memory mode's fallback: when ts_filtered yields fewer than
 *     sqrt(N) bottlenecks it tries again over ts_all, tensors the
 *     backward pass does not read included (133-150). Not done here: the
 *     executor frees a tensor no later op reads, so such a "checkpoint"
 *     would not be kept (TensorFlow keeps it because the recomputed copies
 *     read it, 266). Of the shipped networks this concerns densenet121 (12
 *     bottlenecks read in backward < sqrt(366)).
 *   - what it may recompute: only fwd_ops, the forward walk from the
 *     variables (lines 80-95), and its bottleneck test intersects with
 *     ts_all, their outputs: followed (fwd_act: a tensor with no
 *     trainable parameter upstream, like BERT's attention mask or TF 1.x
 *     dropout's random chain, whose noise shape array_ops.shape folds to
 *     a constant for a static x, is neither a candidate, a shortcut nor
 *     dropped).
 *   - what is re-run: it copies every op between checkpoints, dropout
 *     included (copy_with_input_replacements, 215 and 261); whether the
 *     copy draws the same mask is left to TensorFlow's op seeds (the
 *     repository's issue #35 asks). Here dropout is not recomputable
 *     (gen.c), so its mask and, when backward reads it, its output are
 *     kept, and an activation whose recomputation would need a dropout
 *     output that is already freed (BERT's residual adds) is kept too
 *     (CK_UNREGEN) rather than dropped and refused at run time.
 *   - the bottleneck test: its b_inp/f_inp disjointness (137-144) is
 *     the separating definition used here (ARTICULATION POINTS above),
 *     but its |b_inp| + |f_inp| >= |ts_all| counts only tensors some
 *     forward op reads, so as we read it one tensor of ts_all that no
 *     forward op reads (a batchnorm's saved statistics, a dropout mask)
 *     rules out every bottleneck, which its name filters avoid; here such
 *     dead ends do not count.
 *
 * Deterministic: every choice follows issue order and tensor ids.
 */
#include "../sim/ex.h"
#include "pol.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum ck_mode { CK_SQRT, CK_MEMORY, CK_SPEED, CK_LIST, CK_BLOCKS,
	       CK_SELECTIVE };
static const char *const ck_mode_names[] = {"sqrt",   "memory",    "speed",
					    "list",   "blocks",    "selective",
					    NULL};

struct ck_params {
	int mode;		    /* enum ck_mode */
	int64_t segments;	    /* sqrt: segments, memory: replaces
				       sqrt(N); 0 = automatic */
	char tensors[PRM_STR_MAX];  /* list: names, comma or space separated */
	bool keep_last;		    /* keep what follows the last checkpoint */
	int64_t every;		    /* blocks: checkpoint every k-th block */
	bool offload;		    /* blocks: kept block inputs to host */
};

static const struct prm_def ck_params[] = {
	{"mode", PRM_ENUM, "memory", 0, 0, ck_mode_names,
	 "sqrt (Chen et al. segments), memory (articulation points spaced "
	 "about sqrt(N)), speed (keep conv/matmul outputs), list, blocks "
	 "(torch.utils.checkpoint per block) or selective (Megatron: "
	 "recompute core attention)",
	 offsetof(struct ck_params, mode)},
	{"segments", PRM_INT, "0", 0, 1e6, NULL,
	 "sqrt: number of segments; memory: replaces sqrt(N) in the "
	 "spacing; 0 = automatic",
	 offsetof(struct ck_params, segments)},
	{"tensors", PRM_STR, "", 0, 0, NULL,
	 "list: the tensors to keep, comma or space separated",
	 offsetof(struct ck_params, tensors)},
	{"keep_last", PRM_BOOL, "true", 0, 0, NULL,
	 "keep the activations produced after the last checkpoint (backward "
	 "reads them first; recomputing them saves no peak memory)",
	 offsetof(struct ck_params, keep_last)},
	{"every", PRM_INT, "1", 1, 1e6, NULL,
	 "blocks: checkpoint every k-th block (blocks k-1, 2k-1, ..., "
	 "torchtitan's ac_freq)",
	 offsetof(struct ck_params, every)},
	{"offload", PRM_BOOL, "false", 0, 0, NULL,
	 "blocks: copy each checkpointed block's kept inputs to host "
	 "memory after its forward, prefetch them back in backward",
	 offsetof(struct ck_params, offload)},
	PRM_END,
};

/* What the plan made of a tensor. */
enum ck_role {
	CK_NONE,   /* not a forward activation: not the policy's business */
	CK_KEEP,   /* a checkpoint */
	CK_TAIL,   /* kept: produced after the last checkpoint */
	CK_FIXED,  /* kept: its producer cannot be re-run */
	CK_UNREGEN, /* kept: when it would be dropped, an input of its
		       producer is freed and cannot be re-made (plan_check) */
	CK_DROP,   /* dropped after its last forward use, if resident */
};

struct ckpt {
	uint8_t *role;	     /* per tensor: enum ck_role */
	uint32_t *drop_at;   /* per op + 1: drop_list[drop_at[o] ..
				drop_at[o + 1]) are dropped after op o */
	uint32_t *drop_list; /* tensor ids, grouped by op */
	char *plan_text;     /* the plan's report lines */
	size_t plan_len;     /* their length */
	uint32_t planned;    /* drops the plan expects per iteration */
	char first_unregen[256]; /* why the first CK_UNREGEN is kept */
	uint64_t drops;	     /* drops done over the run */
	uint64_t refused;    /* drops the engine refused */
	char first_refusal[256]; /* why the first one was refused */
	/* blocks and selective (struct ck_regions) */
	uint32_t nr;	     /* checkpointed regions */
	uint32_t *treg;	     /* per tensor: region of a saved tensor the
				plan drops, WL_NONE otherwise */
	uint32_t *sv_at;     /* per region + 1: sv_list[sv_at[r] ..
				sv_at[r + 1]) its dropped saved tensors,
				producer order */
	uint32_t *sv_list;
	uint32_t *end_reg;   /* per op: the region whose forward ends
				with it, WL_NONE */
	uint32_t *in_at;     /* per region + 1: in_list[..) its inputs to
				offload (offload: true) */
	uint32_t *in_list;
	uint32_t *prev_in;   /* per region: the nearest earlier one with
				inputs to offload, WL_NONE */
	uint64_t *stamp;     /* per region: the before_op call that last
				started its regeneration */
	uint64_t calls;	     /* before_op calls of backward ops */
	bool offload;	     /* offload: true */
	uint64_t regens;     /* region recomputations started */
	uint64_t offloads, off_refused; /* swap-outs issued / refused */
	uint64_t off_bytes;  /* bytes of those issued */
	uint64_t prefetches, pre_refused; /* swap-ins issued / refused */
	char first_off_refusal[256];
};

static int ck_init(struct pol *p, gms_err *err)
{
	const struct ck_params *prm = p->params;
	if (prm->mode != CK_BLOCKS && (prm->offload || prm->every != 1))
		return gms_errf(err, "key '%s': only with mode blocks (mode "
				     "is %s)",
				prm->offload ? "offload" : "every",
				ck_mode_names[prm->mode]);
	p->priv = calloc(1, sizeof(struct ckpt));
	return p->priv ? 0 : gms_errf(err, "out of memory");
}

static void ck_clear(struct ckpt *s)
{
	free(s->role);
	free(s->drop_at);
	free(s->drop_list);
	free(s->plan_text);
	free(s->treg);
	free(s->sv_at);
	free(s->sv_list);
	free(s->end_reg);
	free(s->in_at);
	free(s->in_list);
	free(s->prev_in);
	free(s->stamp);
	s->prev_in = NULL;
	s->stamp = NULL;
	s->treg = s->sv_at = s->sv_list = s->end_reg = NULL;
	s->in_at = s->in_list = NULL;
	s->nr = 0;
	s->role = NULL;
	s->drop_at = s->drop_list = NULL;
	s->plan_text = NULL;
	s->plan_len = 0;
	s->planned = 0;
	s->first_unregen[0] = '\0';
}

static void ck_fini(struct pol *p)
{
	struct ckpt *s = p->priv;
	if (s)
		ck_clear(s);
	free(s);
	p->priv = NULL;
}

/* ---- the forward graph ------------------------------------------------ */

/* What plan knows of the workload's forward pass. */
struct ck_graph {
	const struct wl_workload *wl; /* the workload */
	uint32_t nf;		      /* forward ops */
	uint32_t *fop;		      /* their op ids, issue order */
	uint32_t *fpos;		      /* per op: index in fop, or WL_NONE */
	uint32_t *last_use;	      /* per tensor: op after which it is
					 dropped, or WL_NONE */
	bool *held;		      /* per tensor: a forward activation
					 alive after the forward pass (read
					 in backward or released later) */
	bool *trained;		      /* per tensor: produced by an op with
					 a trainable parameter upstream
					 (gradient-checkpointing's fwd_ops,
					 see fwd_act) */
	uint32_t *cnt;		      /* per position: frontier size */
	uint64_t *idsum;	      /* per position: sum of frontier ids */
};

static bool constant(enum wl_kind k)
{
	return k == WL_INPUT || k == WL_PARAM || k == WL_OPT_STATE;
}

/* A forward activation the tool would recompute: produced by a forward
 * op that has a trainable parameter upstream. memory_saving_gradients.py
 * takes its candidates from "fwd_ops = ge.get_forward_walk_ops([x.op for
 * x in xs], inclusive=True, within_ops=bwd_ops)" (xs: the variables
 * differentiated, line 80) and "ts_all = ge.filter_ts(fwd_ops, True)",
 * and its bottleneck test intersects b_inp and f_inp with ts_all, so a
 * tensor built from the input alone -- BERT's attention mask, read by
 * every layer -- is neither a candidate nor a shortcut: it is an input of
 * the recomputed copies, kept (issue 29: it made no layer boundary an
 * articulation point, and memory mode reached batch 97 on BERT-base). */
static bool fwd_act(const struct ck_graph *g, uint32_t t)
{
	const struct wl_tensor *wt = &g->wl->tensors[t];
	return !constant(wt->kind) && wt->producer != WL_NONE &&
	       g->wl->ops[wt->producer].phase == WL_FWD && g->trained[t];
}

/* Position (forward index) interval [from, to) over which t is on the
 * frontier; false when it is on none (no later forward reader). */
static bool flow(const struct ck_graph *g, uint32_t t, uint32_t *from,
		 uint32_t *to)
{
	const struct wl_tensor *wt = &g->wl->tensors[t];
	if (!fwd_act(g, t) || wt->last_fwd_reader == WL_NONE ||
	    wt->last_fwd_reader <= wt->producer)
		return false;
	*from = g->fpos[wt->producer];
	*to = g->fpos[wt->last_fwd_reader];
	return true;
}

static void graph_free(struct ck_graph *g)
{
	free(g->fop);
	free(g->fpos);
	free(g->last_use);
	free(g->held);
	free(g->trained);
	free(g->cnt);
	free(g->idsum);
}

static int graph_build(struct ck_graph *g, const struct wl_workload *wl)
{
	memset(g, 0, sizeof *g);
	g->wl = wl;
	size_t no = wl->n_ops + 1, nt = wl->n_tensors + 1;
	g->fop = calloc(no, sizeof *g->fop);
	g->fpos = calloc(no, sizeof *g->fpos);
	g->last_use = calloc(nt, sizeof *g->last_use);
	g->held = calloc(nt, sizeof *g->held);
	g->trained = calloc(nt, sizeof *g->trained);
	g->cnt = calloc(no + 1, sizeof *g->cnt);
	g->idsum = calloc(no + 1, sizeof *g->idsum);
	if (!g->fop || !g->fpos || !g->last_use || !g->held || !g->cnt ||
	    !g->idsum || !g->trained)
		return -1;
	/* xs: the parameters; a workload that declares none (a graph built
	 * by hand) has only its inputs to start the walk from */
	enum wl_kind xs = WL_INPUT;
	for (uint32_t t = 0; t < wl->n_tensors && xs == WL_INPUT; t++)
		if (wl->tensors[t].kind == WL_PARAM)
			xs = WL_PARAM;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		g->fpos[o] = WL_NONE;
		if (op->phase != WL_FWD)
			continue;
		g->fpos[o] = g->nf;
		g->fop[g->nf++] = o;
		/* the forward walk from the parameters, in issue order (a
		 * topological order): one pass over the reads */
		bool tr = false;
		for (uint32_t i = 0; i < op->n_in && !tr; i++)
			tr = wl->tensors[op->in[i]].kind == xs ||
			     g->trained[op->in[i]];
		for (uint32_t i = 0; i < op->n_out && tr; i++)
			g->trained[op->out[i]] = true;
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		const struct wl_tensor *wt = &wl->tensors[t];
		g->last_use[t] = WL_NONE;
		if (!fwd_act(g, t))
			continue;
		uint32_t last = wt->producer;
		if (wt->last_fwd_reader != WL_NONE && wt->last_fwd_reader > last)
			last = wt->last_fwd_reader;
		g->last_use[t] = last;
		for (uint32_t r = 0; r < wt->n_readers; r++)
			g->held[t] |= wl->ops[wt->readers[r]].phase != WL_FWD;
		if (wt->release_after != WL_NONE &&
		    wl->ops[wt->release_after].phase != WL_FWD)
			g->held[t] = true;
		uint32_t a, b;
		if (flow(g, t, &a, &b)) {
			g->cnt[a]++;
			g->cnt[b]--;
			g->idsum[a] += t;
			g->idsum[b] -= t;
		}
	}
	for (uint32_t i = 1; i < g->nf; i++) {
		g->cnt[i] += g->cnt[i - 1];
		g->idsum[i] += g->idsum[i - 1];
	}
	return 0;
}

/* Forward activations the backward pass needs: gradient-checkpointing's
 * ts_filtered. */
static uint32_t count_held(const struct ck_graph *g)
{
	uint32_t n = 0;
	for (uint32_t t = 0; t < g->wl->n_tensors; t++)
		n += g->held[t];
	return n;
}

/* Keep the frontiers after the sqrt mode's k - 1 segment ends (forward
 * positions j * nf / k - 1): every tensor whose frontier interval [a, b)
 * holds one of them, found with a prefix count of the ends over the
 * positions, so O(ops + tensors) rather than a scan per segment. -1 when
 * out of memory. */
static int keep_segment_ends(const struct ck_graph *g, uint32_t k,
			     uint8_t *role)
{
	uint32_t *before = calloc((size_t)g->nf + 2, sizeof *before);
	if (!before)
		return -1;
	for (uint32_t j = 1; j < k; j++) /* an end at position i counts */
		before[(uint64_t)j * g->nf / k]++; /* in before[i + 1] */
	for (uint32_t i = 1; i <= g->nf; i++)
		before[i] += before[i - 1]; /* ends at positions < i */
	for (uint32_t t = 0; t < g->wl->n_tensors; t++) {
		uint32_t a, b;
		if (flow(g, t, &a, &b) && before[b] > before[a])
			role[t] = CK_KEEP;
	}
	free(before);
	return 0;
}

/* Bottleneck tensors in topological order: each a frontier of one (and,
 * with held_only, read by the backward pass). Returns how many were
 * written to out. */
static uint32_t bottlenecks(const struct ck_graph *g, bool held_only,
			    uint32_t *out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i + 1 < g->nf; i++) {
		if (g->cnt[i] != 1)
			continue;
		uint32_t t = (uint32_t)g->idsum[i];
		if ((g->held[t] || !held_only) && (n == 0 || out[n - 1] != t))
			out[n++] = t;
	}
	return n;
}

/* ---- what the engine will accept ----------------------------------------
 *
 * ex_drop (sim/ex.c) accepts a drop of t when t is IN, its producer is
 * recomputable and every input u of that producer "can be had again"
 * (regenerable()): u is persistent, or not freed (state other than NONE),
 * or freed with a recomputable producer whose inputs can be had again, and
 * so on back. Whether an input is freed depends on when the drop happens:
 * the executor frees a tensor once no op that reads it is left to
 * complete (its reference count, plus its release point) and no dropped
 * tensor holds it as lineage. So a residual add whose other input is a
 * dropout output cannot be dropped after its last forward use: the add's
 * backward reads nothing, so the dropout output was freed right after the
 * add, and dropout is not recomputable (its mask). The plan cannot see
 * that from roles alone.
 *
 * plan_check therefore replays the executor's bookkeeping over the ops up
 * to the last planned drop, in issue order, with the plan's drops in the
 * order after_op makes them: per tensor the state (NONE, IN, RECOMPUTE),
 * the uses not yet completed and the lineage references, updated as
 * ex.c's kernel_done/settle and lineage_take/lineage_release do; at each
 * drop it asks regenerable()'s question of the replayed states. A drop
 * that would be refused is taken out of the plan and its tensor kept
 * (CK_UNREGEN: kept, it holds no lineage, as a refused drop leaves the
 * tensor IN too, so the later checks see the states the run will have).
 * In-place takeover (graph mode) frees an input at the start of the op
 * that is its last reader instead of at its end, which no after_op can
 * tell apart, so the replay leaves it out. Only kernels of the workload
 * are replayed, not recomputations: a backward op issued before the last
 * planned drop (not in any shipped workload or trace) could make the run
 * differ, and then the run's refusals are counted and reported as before.
 *
 * Cost: the replay is O(ops + reads). A check enters only freed tensors,
 * each at most once per op (`seen`, stamped with the op); one found not
 * regenerable stays so for the rest of the forward pass (what it needs is
 * freed and never re-made: only a drop's lineage re-marks a freed tensor,
 * and only a regenerable one), so `bad` remembers it for good; one found
 * regenerable in an accepted drop becomes RECOMPUTE and is not entered
 * again while that drop holds it. */

/* The replayed executor state. */
struct ck_sim {
	const struct wl_workload *wl; /* the workload */
	const struct ex *ex;	      /* for ex_tensor_persistent */
	uint8_t *st;		      /* per tensor: TS_NONE, TS_IN or
					 TS_RECOMPUTE */
	bool *bad;		      /* per tensor: freed, not regenerable */
	uint32_t *uses;		      /* per tensor: uses not completed */
	uint32_t *lin;		      /* per tensor: lineage references */
	uint32_t *seen;		      /* per tensor: op + 1 of the last check
					 that entered it */
	uint32_t *stk;		      /* work stack: tensors */
	uint32_t *pos;		      /* per stack entry: next input (check) */
	uint32_t *rel_at;	      /* per op + 1: rel_list[rel_at[o] ..
					 rel_at[o + 1]) have release point o */
	uint32_t *rel_list;	      /* tensor ids, grouped by release op */
};

static const struct wl_op *producer(const struct ck_sim *c, uint32_t t)
{
	return &c->wl->ops[c->wl->tensors[t].producer];
}

/* ex.c regenerable()'s first test: persistent or not freed. */
static bool sim_alive(const struct ck_sim *c, uint32_t t)
{
	return ex_tensor_persistent(c->ex, t) || c->st[t] != TS_NONE;
}

/* ex.c settle(), the part that ends lives: t (and, through lineage
 * released, what it held) is freed once nothing will read it. */
static void sim_settle(struct ck_sim *c, uint32_t t0)
{
	uint32_t n = 0;
	c->stk[n++] = t0;
	while (n) {
		uint32_t t = c->stk[--n];
		if (c->uses[t] || c->lin[t] || ex_tensor_persistent(c->ex, t))
			continue;
		if (c->st[t] == TS_RECOMPUTE) { /* lineage_release */
			const struct wl_op *p = producer(c, t);
			for (uint32_t i = 0; i < p->n_in; i++) {
				c->lin[p->in[i]]--;
				c->stk[n++] = p->in[i];
			}
		}
		c->st[t] = TS_NONE;
	}
}

/* ex.c kernel_done() for op o, not a recomputation: outputs made, each
 * distinct input's use and the release points at o consumed. */
static void sim_op(struct ck_sim *c, uint32_t o)
{
	const struct wl_op *op = &c->wl->ops[o];
	for (uint32_t i = 0; i < op->n_out; i++)
		c->st[op->out[i]] = TS_IN;
	for (uint32_t i = 0; i < op->n_in; i++) {
		bool first = true;
		for (uint32_t k = 0; k < i; k++)
			first &= op->in[k] != op->in[i];
		if (first && c->uses[op->in[i]] > 0)
			c->uses[op->in[i]]--;
	}
	for (uint32_t i = 0; i < op->n_in; i++)
		sim_settle(c, op->in[i]);
	for (uint32_t i = 0; i < op->n_out; i++)
		sim_settle(c, op->out[i]);
	for (uint32_t k = c->rel_at[o]; k < c->rel_at[o + 1]; k++) {
		uint32_t t = c->rel_list[k];
		if (c->uses[t] > 0)
			c->uses[t]--;
		sim_settle(c, t);
	}
}

/* ex.c regenerable(u) in the replayed state, depth first without
 * recursion; `stamp` is the op + 1 (what passed at this op still does:
 * within one after_op states only go from NONE to RECOMPUTE). */
static bool sim_regen(struct ck_sim *c, uint32_t u, uint32_t stamp)
{
	if (sim_alive(c, u) || (c->seen[u] == stamp && !c->bad[u]))
		return true;
	uint32_t n = 0, w = u;
	for (;;) {
		/* w: freed, not yet entered at this op */
		uint32_t pr = c->wl->tensors[w].producer;
		if (c->bad[w] || pr == WL_NONE ||
		    !ex_op_recomputable(c->ex, pr)) {
			c->bad[w] = true; /* and all that needs it */
			while (n)
				c->bad[c->stk[--n]] = true;
			return false;
		}
		c->seen[w] = stamp;
		c->stk[n] = w;
		c->pos[n++] = 0;
		/* the next input on the stack still to be looked at */
		for (w = WL_NONE; n && w == WL_NONE;) {
			const struct wl_op *p = producer(c, c->stk[n - 1]);
			if (c->pos[n - 1] == p->n_in) {
				n--; /* all its inputs can be had again */
				continue;
			}
			uint32_t v = p->in[c->pos[n - 1]++];
			if (!sim_alive(c, v) &&
			    !(c->seen[v] == stamp && !c->bad[v]))
				w = v;
		}
		if (w == WL_NONE)
			return true;
	}
}

/* ex.c lineage_take(t): references on its producer's inputs; a freed one
 * becomes RECOMPUTE with references of its own. */
static void sim_take(struct ck_sim *c, uint32_t t)
{
	uint32_t n = 0;
	c->stk[n++] = t;
	while (n) {
		const struct wl_op *p = producer(c, c->stk[--n]);
		for (uint32_t i = 0; i < p->n_in; i++) {
			uint32_t u = p->in[i];
			if (!ex_tensor_persistent(c->ex, u) &&
			    c->st[u] == TS_NONE) {
				c->st[u] = TS_RECOMPUTE;
				c->stk[n++] = u;
			}
			c->lin[u]++;
		}
	}
}

static void sim_free(struct ck_sim *c)
{
	free(c->st);
	free(c->bad);
	free(c->uses);
	free(c->lin);
	free(c->seen);
	free(c->stk);
	free(c->pos);
	free(c->rel_at);
	free(c->rel_list);
}

static int sim_init(struct ck_sim *c, const struct ex *ex)
{
	const struct wl_workload *wl = ex_workload(ex);
	size_t nt = (size_t)wl->n_tensors + 1, edges = 0;
	size_t np = nt > (size_t)wl->n_ops + 1 ? nt : (size_t)wl->n_ops + 1;
	for (uint32_t o = 0; o < wl->n_ops; o++)
		edges += wl->ops[o].n_in;
	memset(c, 0, sizeof *c);
	c->wl = wl;
	c->ex = ex;
	c->st = calloc(nt, sizeof *c->st);
	c->bad = calloc(nt, sizeof *c->bad);
	c->uses = calloc(nt, sizeof *c->uses);
	c->lin = calloc(nt, sizeof *c->lin);
	c->seen = calloc(nt, sizeof *c->seen);
	/* settle's stack holds at most every lineage reference at once */
	c->stk = calloc(nt + edges, sizeof *c->stk);
	c->pos = calloc(np, sizeof *c->pos); /* also the release fill */
	c->rel_at = calloc((size_t)wl->n_ops + 2, sizeof *c->rel_at);
	c->rel_list = calloc(nt, sizeof *c->rel_list);
	if (!c->st || !c->bad || !c->uses || !c->lin || !c->seen || !c->stk ||
	    !c->pos || !c->rel_at || !c->rel_list)
		return -1;
	/* ex.c iter_begin: uses = readers + the release point; the inputs
	 * are resident; release points indexed by op (counting sort) */
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		const struct wl_tensor *wt = &wl->tensors[t];
		c->uses[t] = wt->n_readers + (wt->release_after != WL_NONE);
		c->st[t] = wt->kind == WL_INPUT ? TS_IN : TS_NONE;
		if (wt->release_after < wl->n_ops)
			c->rel_at[wt->release_after + 1]++;
	}
	for (uint32_t o = 0; o < wl->n_ops; o++)
		c->rel_at[o + 1] += c->rel_at[o];
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		uint32_t o = wl->tensors[t].release_after;
		if (o < wl->n_ops)
			c->rel_list[c->rel_at[o] + c->pos[o]++] = t;
	}
	memset(c->pos, 0, np * sizeof *c->pos);
	return 0;
}

/* Replay the plan's drops (see above): keep what the engine would refuse
 * to drop (CK_UNREGEN), take it and the drops of tensors already freed by
 * then (nothing held: after_op skips them) out of the drop lists, count
 * the drops left per iteration in s->planned. -1 when out of memory. */
static int plan_check(struct ckpt *s, const struct ex *ex)
{
	const struct wl_workload *wl = ex_workload(ex);
	struct ck_sim c;
	if (sim_init(&c, ex) < 0) {
		sim_free(&c);
		return -1;
	}
	uint32_t last = 0; /* ops after the last drop need no replay */
	for (uint32_t o = 0; o < wl->n_ops; o++)
		if (s->drop_at[o] < s->drop_at[o + 1])
			last = o;
	uint32_t w = 0; /* drop lists compacted in place */
	s->planned = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		uint32_t from = s->drop_at[o], to = s->drop_at[o + 1];
		s->drop_at[o] = w;
		if (o > last)
			continue;
		sim_op(&c, o);
		for (uint32_t k = from; k < to; k++) {
			uint32_t t = s->drop_list[k];
			if (c.st[t] != TS_IN)
				continue; /* freed: after_op skips it */
			const struct wl_op *p = producer(&c, t);
			uint32_t i = 0;
			while (i < p->n_in && sim_regen(&c, p->in[i], o + 1))
				i++;
			if (i < p->n_in) {
				if (!s->first_unregen[0])
					snprintf(s->first_unregen,
						 sizeof s->first_unregen,
						 "%s: input %s of %s is freed "
						 "by then and cannot be re-made",
						 wl->tensors[t].name,
						 wl->tensors[p->in[i]].name,
						 p->name);
				s->role[t] = CK_UNREGEN;
				continue;
			}
			sim_take(&c, t);
			c.st[t] = TS_RECOMPUTE;
			sim_settle(&c, t);
			s->drop_list[w++] = t;
			s->planned++;
		}
	}
	s->drop_at[wl->n_ops] = w;
	sim_free(&c);
	return 0;
}

/* ---- the plan ----------------------------------------------------------- */

static double mib(uint64_t b) { return (double)b / 1048576.0; }

/* list mode: mark the named tensors kept; an unknown name is an error. */
static int keep_named(const struct wl_workload *wl, const char *names,
		      uint8_t *role, gms_err *err)
{
	char buf[PRM_STR_MAX];
	snprintf(buf, sizeof buf, "%s", names);
	int n = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ", \t", &save); tok;
	     tok = strtok_r(NULL, ", \t", &save), n++) {
		uint32_t t = wl_tensor_id(wl, tok);
		if (t == WL_NONE)
			return gms_errf(err,
					"key 'tensors': unknown tensor '%s' "
					"in workload %s",
					tok, wl->name);
		role[t] = CK_KEEP;
	}
	if (n == 0)
		return gms_errf(err, "key 'tensors': mode list needs at least "
				     "one tensor name");
	return 0;
}

/* Print up to 6 names of tensors with role r, then how many more. */
static void print_names(FILE *f, const struct wl_workload *wl,
			const uint8_t *role, enum ck_role r)
{
	uint32_t n = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		if (role[t] != r)
			continue;
		if (n < 6)
			fprintf(f, " %s", wl->tensors[t].name);
		n++;
	}
	if (n > 6)
		fprintf(f, " ... (+%u)", n - 6);
}

/* Count and bytes of the tensors with role r. */
static void role_sum(const struct wl_workload *wl, const uint8_t *role,
		     enum ck_role r, uint32_t *n, uint64_t *bytes)
{
	*n = 0;
	*bytes = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (role[t] == r) {
			(*n)++;
			*bytes += wl->tensors[t].bytes;
		}
}

/* memory mode: report stretches longer than `seg` forward ops with no
 * bottleneck, and where each is regenerated from. */
static void report_gaps(FILE *f, const struct ck_graph *g,
			const uint32_t *bn, uint32_t nb, const uint8_t *role,
			uint32_t seg)
{
	const struct wl_workload *wl = g->wl;
	uint32_t shown = 0, more = 0, prev = 0; /* position after last bn */
	for (uint32_t k = 0; k <= nb; k++) {
		uint32_t end = k < nb ? g->fpos[wl->tensors[bn[k]].producer]
				      : g->nf - 1; /* last op of the stretch */
		uint32_t len = end >= prev ? end - prev + 1 : 0;
		if (len > seg) {
			if (shown == 8) {
				more++;
			} else {
				/* the nearest checkpoint at or before it */
				const char *from = "the inputs";
				for (uint32_t j = k; j-- > 0;)
					if (role[bn[j]] == CK_KEEP) {
						from = wl->tensors[bn[j]].name;
						break;
					}
				const struct wl_op *a = &wl->ops[g->fop[prev]];
				const struct wl_op *b = &wl->ops[g->fop[end]];
				fprintf(f,
					"    no articulation  %u ops, %s .. %s "
					"(layers %s .. %s): nothing kept inside;"
					" %s\n",
					len, a->name, b->name,
					wl->layers[a->layer],
					wl->layers[b->layer],
					k == nb ? "after the last bottleneck"
						: "regenerated whole in "
						  "backward");
				fprintf(f, "                     from %s\n",
					from);
				shown++;
			}
		}
		if (k < nb)
			prev = g->fpos[wl->tensors[bn[k]].producer] + 1;
	}
	if (more)
		fprintf(f, "    no articulation  %u more such stretches\n",
			more);
}

/* ---- blocks and selective ------------------------------------------------
 *
 * Both modes checkpoint regions of the forward pass the way
 * torch.utils.checkpoint(fn, *args, use_reentrant=False) does a call of
 * fn (pytorch/pytorch torch/utils/checkpoint.py, _checkpoint_hook and
 * _recomputation_hook):
 *   saved    the region's inputs ("ctx.saved_tensors" of the frame's
 *            input_saver, what recompute_fn is re-run from) and its
 *            outputs (they leave fn and are saved, if at all, by the ops
 *            that read them after it); every tensor an op inside saves
 *            for backward is replaced by a placeholder ("pack_hook(x):
 *            holder = _Holder() ... return holder"), so the tensor itself
 *            is freed once the forward pass has no further use for it:
 *            here, dropped after the later of its producer and its last
 *            forward reader;
 *   regained at the first unpack of any placeholder of the region in
 *            backward ("if not frame.is_recomputed[gid]: ...
 *            frame.recompute_fn(*args)"), the whole region's forward is
 *            re-run, stopping once every placeholder is filled
 *            (_StopRecomputationError, early stop, the default): here,
 *            before the first backward op that reads a dropped tensor of
 *            the region, every dropped tensor of the region is
 *            regenerated, in forward order (the executor re-runs only the
 *            producers needed, so nothing after the last saved tensor
 *            runs again);
 *   freed    each regenerated tensor is held in frame.recomputed, a
 *            WeakKeyDictionary keyed by the holder's handle, until its
 *            unpack ("holder.handles[gid] = None; return ret"): here, the
 *            executor frees it after its last backward reader.
 *   random   preserve_rng_state=True (the default) stashes and restores
 *            the RNG state, so a dropout inside re-draws its mask; here
 *            such a dropout is let re-run (ex_allow_recompute), counted
 *            in the plan's report. Megatron's tensor_parallel.checkpoint
 *            does the same with its CUDA RNG tracker.
 *
 * blocks (every k): the regions are the workload's blocks (wl_op.block:
 * transformer layers, residual blocks, dense blocks, marked by the
 * generators) whose index b has (b + 1) % k == 0, torchtitan's layer
 * selective AC ("ptd_checkpoint_wrapper._count += 1; if not ac_freq or
 * ptd_checkpoint_wrapper._count % ac_freq == 0: return
 * ptd_checkpoint_wrapper(module, preserve_rng_state=False)",
 * torchtitan/models/llama3/infra/parallelize.py): every 1 is every
 * block, every 2 the second, fourth, ... A workload with no marks (recorded traces, YAML files,
 * networks whose generator marks none) falls back, and says so in the
 * report, to the stretches between consecutive articulation points
 * (memory mode's bottlenecks: each stretch is entered through one
 * tensor, as a block is through its input); the stretch after the last
 * one (the head and loss, read first by backward) is not a region.
 *
 * selective: Megatron-LM's recompute_granularity='selective'
 * (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
 * Transformer Models", section 4.2: "we only checkpoint and recompute
 * the parts of each layer that take up a considerable amount of memory
 * but are not computationally expensive to recompute", the QK^T,
 * softmax, softmax dropout and attention over V). In Megatron-Core
 * (megatron/core/transformer/attention.py) "self.checkpoint_core_
 * attention = self.config.recompute_granularity == 'selective'" makes
 * forward call _checkpointed_attention_forward(query, key, value,
 * attention_mask, ...), which wraps self.core_attention in
 * tensor_parallel.checkpoint: q, k, v and the mask are saved, the
 * context (the output) is saved by linear_proj, everything in between
 * is recomputed. Here the region of each block is its ops the
 * generator marks WL_REGION_CORE_ATTN (scores, scale, mask, softmax,
 * dropout, context; the fused kernel with sdpa). A workload with none
 * marked has nothing to recompute: the report says so and the run is
 * the framework's.
 *
 * offload (blocks): checkpoint the blocks and offload the checkpoints,
 * as ColossalAI's checkpoint(function, activation_offload, *args)
 * (colossalai/legacy/utils/activation_checkpoint.py: "if
 * ctx.activation_offload: tensors = ctx.tensor_inputs", copied to the
 * device again at the start of the block's backward, "tensors =
 * copy_to_device(tensors, ctx.device)") and PyTorch's
 * checkpoint_wrapper composed with offload_wrapper (torch/distributed/
 * algorithms/_checkpoint/checkpoint_wrapper.py: save_on_cpu around a
 * checkpointed module, whose only saved tensors are its inputs) do.
 * Each region input that no later forward op reads is copied to pinned
 * host memory on the D2H engine after the region's last forward op
 * (ex_swap_out with release); in backward, when a region is regenerated
 * its own offloaded inputs still on the host are fetched at once (the
 * recomputation waits for them: counted as late prefetches) and the
 * inputs of the region before it are prefetched on the H2D engine, one
 * region ahead (ColossalAI copies at the start of the block's backward,
 * not ahead). Refused copies are counted and reported; a refused
 * swap-out leaves the tensor resident.
 */

/* The forward ops of each checkpointed region: reg[o] a compact region
 * id in forward order, or WL_NONE. Returns the number of regions;
 * report lines to f. */
static uint32_t find_regions(const struct ck_graph *g,
			     const struct ck_params *prm, uint32_t *reg,
			     uint32_t *key, uint32_t *bn, FILE *f)
{
	const struct wl_workload *wl = g->wl;
	uint32_t nkeys = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++)
		reg[o] = key[o] = WL_NONE;
	uint64_t k = (uint64_t)prm->every;
	if (prm->mode == CK_BLOCKS && wl->n_blocks) {
		nkeys = wl->n_blocks;
		for (uint32_t i = 0; i < g->nf; i++) {
			uint32_t b = wl->ops[g->fop[i]].block;
			if (b != WL_NONE && ((uint64_t)b + 1) % k == 0)
				key[g->fop[i]] = b;
		}
		fprintf(f, "    blocks             %u marked by the workload; "
			   "every %llu: blocks %llu, %llu, ...\n",
			wl->n_blocks, (unsigned long long)k,
			(unsigned long long)(k - 1),
			(unsigned long long)(2 * k - 1));
	} else if (prm->mode == CK_BLOCKS) {
		uint32_t nb = bottlenecks(g, false, bn), j = 0;
		nkeys = nb;
		for (uint32_t i = 0; i < g->nf; i++) {
			while (j < nb &&
			       g->fpos[wl->tensors[bn[j]].producer] < i)
				j++;
			if (j < nb && ((uint64_t)j + 1) % k == 0)
				key[g->fop[i]] = j;
		}
		fprintf(f, "    blocks             none marked by the workload: "
			   "FALLBACK to the %u stretches between articulation "
			   "points; every %llu\n",
			nb, (unsigned long long)k);
	} else {
		uint32_t n = 0;
		for (uint32_t i = 0; i < g->nf; i++) {
			const struct wl_op *op = &wl->ops[g->fop[i]];
			if (op->region != WL_REGION_CORE_ATTN)
				continue;
			key[op->id] = op->block != WL_NONE ? op->block : 0;
			if (key[op->id] + 1 > nkeys)
				nkeys = key[op->id] + 1;
			n++;
		}
		if (n)
			fprintf(f, "    core attention     %u forward ops marked "
				   "by the workload\n",
				n);
		else
			fprintf(f, "    core attention     none marked by the "
				   "workload: NOTHING to recompute, the run is "
				   "the framework's\n");
	}
	/* compact ids in forward order; key[] reused as the map */
	uint32_t nr = 0, last = WL_NONE, lastid = WL_NONE;
	for (uint32_t i = 0; i < g->nf; i++) {
		uint32_t o = g->fop[i];
		if (key[o] == WL_NONE)
			continue;
		if (key[o] != last) { /* a block's ops are contiguous */
			last = key[o];
			lastid = nr++;
		}
		reg[o] = lastid;
	}
	(void)nkeys;
	return nr;
}

/* blocks and selective: the roles, the regions' saved tensors, their
 * ends and (offload) their inputs. -1 with err. */
static int plan_regions(struct ckpt *s, const struct ck_graph *g,
			const struct ck_params *prm, struct ex *ex,
			uint32_t *bn, FILE *f, gms_err *err)
{
	const struct wl_workload *wl = g->wl;
	uint8_t *role = s->role;
	size_t no = (size_t)wl->n_ops + 1, nt = (size_t)wl->n_tensors + 1;
	uint32_t *reg = calloc(no, sizeof *reg);
	uint32_t *key = calloc(no, sizeof *key);
	s->treg = calloc(nt, sizeof *s->treg);
	s->end_reg = calloc(no, sizeof *s->end_reg);
	s->sv_list = calloc(nt, sizeof *s->sv_list);
	s->in_list = calloc(nt, sizeof *s->in_list);
	int rc = -1;
	if (!reg || !key || !s->treg || !s->end_reg || !s->sv_list ||
	    !s->in_list)
		goto oom;
	uint32_t nr = find_regions(g, prm, reg, key, bn, f);
	s->nr = nr;
	s->sv_at = calloc((size_t)nr + 2, sizeof *s->sv_at);
	s->in_at = calloc((size_t)nr + 2, sizeof *s->in_at);
	s->prev_in = calloc((size_t)nr + 1, sizeof *s->prev_in);
	s->stamp = calloc((size_t)nr + 1, sizeof *s->stamp);
	if (!s->sv_at || !s->in_at || !s->prev_in || !s->stamp)
		goto oom;
	uint32_t reruns = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		s->treg[t] = WL_NONE;
		if (!fwd_act(g, t))
			continue;
		const struct wl_tensor *wt = &wl->tensors[t];
		uint32_t r = reg[wt->producer];
		if (r == WL_NONE)
			continue;
		bool inside = true;
		for (uint32_t i = 0; i < wt->n_readers && inside; i++) {
			const struct wl_op *rd = &wl->ops[wt->readers[i]];
			inside = rd->phase != WL_FWD || reg[rd->id] == r;
		}
		if (!inside) {
			role[t] = CK_KEEP; /* an output of the region */
			continue;
		}
		if (!ex_op_recomputable(ex, wt->producer)) {
			/* preserve_rng_state: a dropout re-draws its mask */
			if (wl->ops[wt->producer].type == OT_DROPOUT &&
			    ex_allow_recompute(ex, wt->producer) == 0) {
				reruns++;
			} else {
				role[t] = g->held[t] ? CK_FIXED : CK_NONE;
				continue;
			}
		}
		role[t] = CK_DROP;
	}
	/* saved tensors per region, in producer order; region ends */
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		s->end_reg[o] = WL_NONE;
		if (reg[o] != WL_NONE)
			key[reg[o]] = o; /* the region's last op so far */
		for (uint32_t i = 0; i < op->n_out; i++) {
			uint32_t t = op->out[i];
			if (role[t] == CK_DROP && g->held[t] &&
			    wl->tensors[t].producer == o) {
				s->treg[t] = reg[o];
				s->sv_at[reg[o] + 1]++;
			}
		}
	}
	for (uint32_t r = 0; r < nr; r++) {
		s->end_reg[key[r]] = r;
		s->sv_at[r + 1] += s->sv_at[r];
	}
	uint32_t *pos = calloc((size_t)nr + 1, sizeof *pos);
	if (!pos)
		goto oom;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		for (uint32_t i = 0; i < op->n_out; i++) {
			uint32_t t = op->out[i], r = s->treg[t];
			if (r != WL_NONE && wl->tensors[t].producer == o)
				s->sv_list[s->sv_at[r] + pos[r]++] = t;
		}
	}
	/* inputs of each region (kept; offload's candidates): activations
	 * made before it and read in it by their last forward reader */
	uint32_t nin = 0, nidle = 0;
	uint64_t bin = 0;
	memset(pos, 0, ((size_t)nr + 1) * sizeof *pos);
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t t = 0; t < wl->n_tensors; t++) {
			const struct wl_tensor *wt = &wl->tensors[t];
			uint32_t lr = wt->last_fwd_reader;
			if (constant(wt->kind) || wt->producer == WL_NONE ||
			    lr == WL_NONE || reg[lr] == WL_NONE ||
			    reg[wt->producer] == reg[lr] ||
			    wl->ops[wt->producer].phase != WL_FWD)
				continue;
			uint32_t r = reg[lr];
			if (s->sv_at[r] == s->sv_at[r + 1]) {
				/* nothing regenerated there: no fetch would
				 * bring it back ahead (not offloaded) */
				nidle += pass == 0;
				continue;
			}
			if (pass == 0) {
				s->in_at[r + 1]++;
				nin++;
				bin += wt->bytes;
			} else {
				s->in_list[s->in_at[r] + pos[r]++] = t;
			}
		}
		for (uint32_t r = 0; pass == 0 && r < nr; r++)
			s->in_at[r + 1] += s->in_at[r];
	}
	/* the region before each whose inputs a regeneration prefetches */
	for (uint32_t r = 0, last = WL_NONE; r < nr; r++) {
		s->prev_in[r] = last;
		if (s->in_at[r] < s->in_at[r + 1])
			last = r;
	}
	free(pos);
	fprintf(f, "    regions            %u checkpointed; inputs last read "
		   "there %u tensors, %.1f MiB (kept%s)\n",
		nr, nin, mib(bin),
		prm->offload ? "; offloaded to host after the region" : "");
	if (nidle)
		fprintf(f, "    inputs left        %u tensors of regions that "
			   "save nothing to regenerate (read in place: %s)\n",
			nidle, prm->offload ? "not offloaded" : "kept");
	if (reruns)
		fprintf(f, "    dropout re-run     %u ops inside regions: RNG "
			   "state restored (preserve_rng_state)\n",
			reruns);
	rc = 0;
	goto out;
oom:
	gms_errf(err, "out of memory");
out:
	free(reg);
	free(key);
	return rc;
}

static int ck_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	const struct ck_params *prm = p->params;
	struct ckpt *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	ck_clear(s);
	struct ck_graph g;
	uint32_t *bn = calloc(2 * (size_t)wl->n_tensors + 1, sizeof *bn);
	s->role = calloc(wl->n_tensors + 1, 1);
	s->drop_at = calloc((size_t)wl->n_ops + 2, sizeof *s->drop_at);
	s->drop_list = calloc(wl->n_tensors + 1, sizeof *s->drop_list);
	FILE *f = open_memstream(&s->plan_text, &s->plan_len);
	int rc = -1;
	if (graph_build(&g, wl) < 0 || !bn || !s->role || !s->drop_at ||
	    !s->drop_list || !f) {
		gms_errf(err, "out of memory");
		goto out;
	}
	uint8_t *role = s->role;
	uint32_t nheld = count_held(&g);
	/* a segment: n / ceil(sqrt(n)) forward ops (Chen et al. 4.1) */
	uint32_t kauto = (uint32_t)ceil(sqrt((double)g.nf));
	uint32_t seg = kauto ? (g.nf + kauto - 1) / kauto : 0;
	uint32_t nb = bottlenecks(&g, true, bn);
	fprintf(f, "    mode               %s\n", ck_mode_names[prm->mode]);
	fprintf(f, "    forward ops        %u\n", g.nf);
	switch ((enum ck_mode)prm->mode) {
	case CK_SQRT: {
		uint32_t k = prm->segments > 0 ? (uint32_t)prm->segments
					       : kauto;
		if (k > g.nf)
			k = g.nf;
		if (keep_segment_ends(&g, k, role) < 0) {
			gms_errf(err, "out of memory");
			goto out;
		}
		fprintf(f, "    segments           %u (about %u ops each)\n",
			k, k ? (g.nf + k - 1) / k : 0);
		break;
	}
	case CK_MEMORY: {
		double target = prm->segments > 0 ? (double)prm->segments
						  : sqrt((double)nheld);
		uint32_t step = 1;
		if ((double)nb > ceil(target) && target > 0)
			step = (uint32_t)ceil((double)nb / target);
		for (uint32_t i = step == 1 ? 0 : step; i < nb; i += step)
			role[bn[i]] = CK_KEEP;
		fprintf(f, "    articulation pts   %u separate the graph, %u "
			   "read in backward:",
			bottlenecks(&g, false, bn + nb), nb);
		for (uint32_t i = 0; i < nb && i < 6; i++)
			fprintf(f, " %s", wl->tensors[bn[i]].name);
		fprintf(f, "%s\n", nb > 6 ? " ..." : "");
		fprintf(f, "    spacing            N = %u, target %.1f: every %u"
			   " from index %u\n",
			nheld, target, step, step == 1 ? 0 : step);
		break;
	}
	case CK_SPEED:
		for (uint32_t i = 0; i < g.nf; i++) {
			const struct wl_op *op = &wl->ops[g.fop[i]];
			if (op->type == OT_CONV || op->type == OT_MATMUL)
				for (uint32_t k = 0; k < op->n_out; k++)
					role[op->out[k]] = CK_KEEP;
		}
		break;
	case CK_LIST:
		if (keep_named(wl, prm->tensors, role, err) < 0)
			goto out;
		break;
	case CK_BLOCKS:
	case CK_SELECTIVE:
		if (plan_regions(s, &g, prm, ex, bn, f, err) < 0)
			goto out;
		s->offload = prm->offload;
		break;
	}
	bool regions = prm->mode == CK_BLOCKS || prm->mode == CK_SELECTIVE;
	/* Where the workload marks an op in place (ReLU in tf-graph, pytorch,
	 * caffe), it overwrites an input it is the
	 * only reader of, so such a checkpoint would be gone at once; keep
	 * the overwrite's result instead: whatever needs the input reaches it
	 * through that op alone. */
	uint32_t moved = 0;
	for (uint32_t t = 0; t < wl->n_tensors && !regions; t++) {
		const struct wl_tensor *wt = &wl->tensors[t];
		if (role[t] != CK_KEEP || wt->n_readers != 1)
			continue;
		const struct wl_op *r = &wl->ops[wt->readers[0]];
		if (r->inplace && r->phase == WL_FWD && r->in[0] == t &&
		    r->n_out > 0 && wt->bytes >= wl->tensors[r->out[0]].bytes) {
			role[t] = CK_NONE; /* a later id: visited again (chains) */
			role[r->out[0]] = CK_KEEP;
			moved++;
		}
	}
	if (moved)
		fprintf(f, "    moved in place     %u checkpoints overwritten by "
			   "an in-place op: its output kept instead\n",
			moved);
	/* the last checkpoint's producer; what comes after is the tail */
	uint32_t last = 0;
	bool any = false;
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (role[t] == CK_KEEP && fwd_act(&g, t) &&
		    (!any || wl->tensors[t].producer > last)) {
			last = wl->tensors[t].producer;
			any = true;
		}
	for (uint32_t t = 0; t < wl->n_tensors && !regions; t++) {
		if (role[t] == CK_KEEP || !fwd_act(&g, t))
			continue;
		const struct wl_tensor *wt = &wl->tensors[t];
		if (prm->keep_last && (!any || wt->producer > last))
			role[t] = g.held[t] ? CK_TAIL : CK_NONE;
		else if (!wl->ops[wt->producer].recomputable)
			role[t] = g.held[t] ? CK_FIXED : CK_NONE;
		else
			role[t] = CK_DROP;
	}
	/* drop lists by op: counting sort on last_use */
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (role[t] == CK_DROP)
			s->drop_at[g.last_use[t] + 1]++;
	for (uint32_t o = 0; o < wl->n_ops; o++)
		s->drop_at[o + 1] += s->drop_at[o];
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (role[t] == CK_DROP)
			s->drop_list[s->drop_at[g.last_use[t]]++] = t;
	for (uint32_t o = wl->n_ops; o > 0; o--) /* undo the fill shift */
		s->drop_at[o] = s->drop_at[o - 1];
	s->drop_at[0] = 0;
	if (plan_check(s, ex) < 0) {
		gms_errf(err, "out of memory");
		goto out;
	}
	/* the report */
	static const struct {
		enum ck_role r;
		const char *what;
	} rows[] = {
		{CK_KEEP, "checkpoints"},
		{CK_TAIL, "kept tail"},
		{CK_FIXED, "not recomputable"},
		{CK_UNREGEN, "not regenerable"},
	};
	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		uint32_t n;
		uint64_t b;
		role_sum(wl, role, rows[i].r, &n, &b);
		fprintf(f, "    %-18s %u tensors, %.1f MiB:",
			regions && rows[i].r == CK_KEEP ? "region outputs"
							 : rows[i].what,
			n, mib(b));
		print_names(f, wl, role, rows[i].r);
		fputc('\n', f);
	}
	uint32_t nd = 0;
	uint64_t bd = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (role[t] == CK_DROP && g.held[t]) {
			nd++;
			bd += wl->tensors[t].bytes;
		}
	if (s->first_unregen[0])
		fprintf(f, "                       (kept: an input of the "
			   "producer is gone when it would be dropped; first: "
			   "%s)\n",
			s->first_unregen);
	fprintf(f, "    dropped            %u of %u backward-read activations,"
		   " %.1f MiB\n",
		nd, nheld, mib(bd));
	fprintf(f, "    drops planned      %u per iteration\n", s->planned);
	uint32_t nu = 0;
	uint64_t bu = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		const struct wl_tensor *wt = &wl->tensors[t];
		if (!g.trained[t] && !constant(wt->kind) &&
		    wt->producer != WL_NONE &&
		    wl->ops[wt->producer].phase == WL_FWD) {
			nu++;
			bu += wt->bytes;
		}
	}
	if (nu)
		fprintf(f, "    untrained inputs   %u activations, %.1f MiB, "
			   "with no parameter upstream: not recomputed "
			   "(the tool's fwd_ops)\n",
			nu, mib(bu));
	if (prm->mode == CK_MEMORY)
		report_gaps(f, &g, bn, nb, role, seg);
	rc = 0;
out:
	if (f)
		fclose(f);
	graph_free(&g);
	free(bn);
	return rc;
}

/* ---- during the run ------------------------------------------------------ */

/* offload: copy region r's inputs to the host, releasing the device
 * copies (after its last forward op). */
static void offload_inputs(struct ckpt *s, struct ex *ex, uint32_t r)
{
	const struct wl_workload *wl = ex_workload(ex);
	for (uint32_t k = s->in_at[r]; k < s->in_at[r + 1]; k++) {
		uint32_t t = s->in_list[k];
		if (ex_tensor_state(ex, t) != TS_IN)
			continue; /* freed: nothing to keep */
		if (ex_swap_out(ex, t, EX_RELEASE) != ENG_EVENT_NONE) {
			s->offloads++;
			s->off_bytes += wl->tensors[t].bytes;
		} else if (s->off_refused++ == 0) {
			snprintf(s->first_off_refusal,
				 sizeof s->first_off_refusal, "%s",
				 ex_last_error(ex));
		}
	}
}

/* offload: bring region r's inputs back (H2D), those still on the host. */
static void fetch_inputs(struct ckpt *s, struct ex *ex, uint32_t r)
{
	for (uint32_t k = s->in_at[r]; k < s->in_at[r + 1]; k++) {
		uint32_t t = s->in_list[k];
		if (ex_tensor_state(ex, t) != TS_OUT)
			continue;
		if (ex_swap_in(ex, t, ENG_EVENT_NONE) != ENG_EVENT_NONE)
			s->prefetches++;
		else if (s->pre_refused++ == 0)
			snprintf(s->first_off_refusal,
				 sizeof s->first_off_refusal, "%s",
				 ex_last_error(ex));
	}
}

/* The first backward use of a dropped tensor of region r: regenerate
 * every dropped saved tensor of r still to be regenerated (torch's
 * recompute_fn at the first unpack). The executor runs pushed
 * recomputations last-pushed first, so they are pushed in reverse
 * forward order, once per producer. */
static void regen_region(struct ckpt *s, struct ex *ex, uint32_t r)
{
	const struct wl_workload *wl = ex_workload(ex);
	s->regens++;
	if (s->offload) {
		fetch_inputs(s, ex, r); /* late: the recomputation waits */
		if (s->prev_in[r] != WL_NONE) /* one region ahead */
			fetch_inputs(s, ex, s->prev_in[r]);
	}
	uint32_t prev = WL_NONE;
	for (uint32_t k = s->sv_at[r + 1]; k-- > s->sv_at[r];) {
		uint32_t t = s->sv_list[k], pr = wl->tensors[t].producer;
		if (ex_tensor_state(ex, t) != TS_RECOMPUTE || pr == prev)
			continue;
		ex_recompute(ex, t);
		prev = pr;
	}
}

static void ck_after_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct ckpt *s = p->priv;
	if (s->offload && s->end_reg[op->id] != WL_NONE)
		offload_inputs(s, ex, s->end_reg[op->id]);
	for (uint32_t k = s->drop_at[op->id]; k < s->drop_at[op->id + 1]; k++) {
		uint32_t t = s->drop_list[k];
		if (ex_tensor_state(ex, t) != TS_IN)
			continue; /* freed after its last use: nothing held */
		if (ex_drop(ex, t) == 0) {
			s->drops++;
		} else if (s->refused++ == 0) {
			snprintf(s->first_refusal, sizeof s->first_refusal,
				 "%s", ex_last_error(ex));
		}
	}
}

static void ck_before_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct ckpt *s = p->priv;
	if (op->phase == WL_FWD)
		return;
	/* a region once per op, though the op reads several of its tensors
	 * (the pushed recomputations have not run yet) */
	s->calls++;
	for (uint32_t i = 0; s->treg && i < op->n_in; i++) {
		uint32_t t = op->in[i], r = s->treg[t];
		if (r != WL_NONE && s->stamp[r] != s->calls &&
		    ex_tensor_state(ex, t) == TS_RECOMPUTE) {
			s->stamp[r] = s->calls;
			regen_region(s, ex, r);
		}
	}
	for (uint32_t i = 0; i < op->n_in; i++)
		if (ex_tensor_state(ex, op->in[i]) == TS_RECOMPUTE)
			ex_recompute(ex, op->in[i]);
}

static void ck_report(struct pol *p, FILE *out)
{
	const struct ckpt *s = p->priv;
	if (s->plan_text)
		fwrite(s->plan_text, 1, s->plan_len, out);
	fprintf(out, "    drops              %llu\n",
		(unsigned long long)s->drops);
	fprintf(out, "    drops refused      %llu%s%s%s\n",
		(unsigned long long)s->refused, s->refused ? " (first: " : "",
		s->refused ? s->first_refusal : "", s->refused ? ")" : "");
	if (s->treg)
		fprintf(out, "    region regens      %llu (recomputations of a "
			     "region started at its first backward use)\n",
			(unsigned long long)s->regens);
	if (s->offload)
		fprintf(out, "    offloads           %llu, %.1f MiB; refused %llu;"
			     " fetches back %llu, refused %llu%s%s%s\n",
			(unsigned long long)s->offloads, mib(s->off_bytes),
			(unsigned long long)s->off_refused,
			(unsigned long long)s->prefetches,
			(unsigned long long)s->pre_refused,
			s->first_off_refusal[0] ? " (first: " : "",
			s->first_off_refusal, s->first_off_refusal[0] ? ")" : "");
}

const struct pol_ops pol_checkpoint_ops = {
	.name = "checkpoint",
	.summary = "recomputation: Chen et al. sqrt(n) segments, "
		   "gradient-checkpointing memory/speed, a named list, "
		   "per-block (torch.utils.checkpoint, optional offload) or "
		   "selective (Megatron)",
	.params = ck_params,
	.params_size = sizeof(struct ck_params),
	.init = ck_init,
	.fini = ck_fini,
	.plan = ck_plan,
	.before_op = ck_before_op,
	.after_op = ck_after_op,
	.on_alloc_fail = ex_fallback_or_fail, /* TensorFlow's no-scratch fallback */
	.report = ck_report,
};
