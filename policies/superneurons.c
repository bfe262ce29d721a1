/*
 * superneurons.c - SuperNeurons (Wang, Ye, Zhao, Wu, Li, Song, Xu,
 * Kraska: "SuperNeurons: Dynamic GPU Memory Management for Training Deep
 * Neural Networks", PPoPP 2018, arXiv 1801.04380), the baseline of
 * AccUDNN's Table 3.
 *
 * SOURCES. The paper's body was not available to this project (neither in
 * ../shared/papers nor in the public text we could reach: searched again
 * for issue 36's second pass, docs/superneurons.md lists where); its
 * abstract was: "SuperNeurons features 3 memory optimizations, Liveness Analysis,
 * Unified Tensor Pool, and Cost-Aware Recomputation, all together they
 * effectively reduce the network-wide peak memory usage down to the
 * maximal memory usage among layers. [...] Given the limited GPU DRAM,
 * SuperNeurons not only provisions the necessary memory for the
 * training, but also dynamically allocates the memory for convolution
 * workspaces to achieve the high performance." Each mechanism below is
 * therefore built from the authors' released code,
 * github.com/linnanwang/superneurons-release at commit
 * d20d25cd1315cd84f23cafd8be2a667a90ec511e (2021-02-13; files named
 * below), and from what the papers in ../shared/papers say of it:
 * Capuchin, section 2: "SuperNeurons [31] also avoids recomputation of
 * convolution layer to reduce overhead"; its related work: "[5, 31]
 * proposes a recomputation strategy to release cheap-computations' memory
 * in forward phase and get it back via recomputation" and "vDNN [24],
 * Superneurons [31] and [22] swap the data out to the CPU in forward
 * phase and prefetch it at backward propagation"; AccUDNN, section 6.3
 * E: it "couples the swapping technique with re-computation mechanism".
 *
 * WHAT READERS OF THE PAPER WROTE (secondary: third-party notes that
 * paraphrase its sections; docs/superneurons.md gives where; the Chinese
 * ones in our translation). Each backs a mechanism built from the code:
 *   liveness: "for every layer, construct an in and an out set that
 *   track the tensors live before and after the layer [...] the runtime
 *   fills them by checking the dependencies of the layers after it; a
 *   tensor of the in set that no later layer needs is removed from the
 *   out set", which cuts the peak "from sum(l_i^f) + sum(l_i^b) to
 *   sum(l_i^f) + l_N^b" -- liveness.cpp's set_ins / set_outs, below;
 *   offload: "the runtime asynchronously transfers the forward outputs of
 *   CONV layers to pre-allocated pinned CPU memory" and POOL, ACT, BN and
 *   LRN, large and cheap, are not offloaded -- offload=conv (which also
 *   takes a convolution's input, below); prefetch: "in backward, at a
 *   CONV layer, the tensors the previous CONV layer needs are fetched
 *   asynchronously, overlapping the CPU-to-GPU transfer with computation"
 *   -- prefetch=true, not the released code's synchronous CPUtoGPU;
 *   cache: "Unified Tensor Pool communication tools for GPU-CPU memory
 *   using Least Recent Used tensor replacement policy and a Tensor cache"
 *   (wadmes.github.io), LRU "because back-propagation computes
 *   head-to-tail and then tail-to-head, so the most recently used tensors
 *   are reused first"; recomputation: "speed-centric keeps the
 *   recomputed tensors for the backward layers [about O(N) extra]",
 *   "memory-centric recomputes the dependencies for every backward layer
 *   [up to O(N^2)]", and cost-aware takes "l_peak = max(l_i)" and uses
 *   speed-centric where a segment's recomputation fits under it,
 *   memory-centric otherwise -- the released code's larger_than_bottleneck
 *   rule, below. They differ from what is built here in two places: the
 *   workspace ("the fastest convolution algorithm that fits the memory
 *   left, the functional tensors served first"): here the fastest or, when
 *   it does not fit, the least-workspace one (the executor offers no
 *   algorithm between them); and the memory pool ("pre-allocates a large
 *   GPU memory pool of 1 KB blocks [...] an allocation takes the first node
 *   of the empty list with enough room"), a first-fit allocator: here the
 *   personality's allocator (arena for caffe, BFC for tf-graph, the caching
 *   allocator for pytorch), whose fragmentation can decide the deepest
 *   network (docs/superneurons.md).
 *
 * LIVENESS ANALYSIS (`liveness`). src/liveness.cpp builds, per layer and
 * direction, an in set (set_ins: the layer's forward or backward
 * dependencies, "if (t->get_type() != DATA && t->get_type() != CONV_BUFF)
 * continue;": activations, their gradients and convolution workspace
 * only) and an out set (set_outs: every such tensor for which
 * is_freeable_afterwards(layer_id, dir, t) holds, i.e. no layer after
 * this one in the forward-then-backward route uses it, "purified" so a
 * tensor is freed once). update() frees the out set after the layer. The
 * executor's reference counts do exactly this at op granularity, so the
 * mechanism here is to replace the framework's memory manager
 * (pol_ops.own_memory): under the caffe personality, whose blobs and
 * diffs live for the whole run (wl_tensor.held), liveness frees them
 * after their last use; under tf-graph and pytorch the personality
 * already frees dead tensors at their last use, and liveness changes
 * nothing there (same peak; the README says so). liveness=false keeps
 * the personality's own manager.
 *
 * CHECKPOINTS AND COST-AWARE RECOMPUTATION (`recompute`).
 * include/mem_control.h: CHECKPOINT_LAYERS = CONV, FC, JOIN_L, FORK_L,
 * CONCAT (and is_checkpoint adds DATA_L and SOFTMAX). Every other layer
 * (POOL, ACT, BN, LRN, DROPOUT, PADDING) is cheap: its output is freed
 * after forward (recompute.cpp offload_to_recompute:
 * "t->free_gpu_space(RECOMPUTE)") and regenerated in backward from the
 * nearest checkpoint before it (recompute_for_dependency, called for a
 * backward layer by upload_to_reconstruct). Here the op types map: conv,
 * matmul (FC), add (JOIN), split (FORK), concat, softmax, loss,
 * attention, embedding and anything unknown are checkpoints; pool, relu,
 * batchnorm, layernorm, dropout and other elementwise kernels (LRN,
 * padding) are cheap. A cheap op's output is dropped (ex_drop) after its
 * last forward reader when some backward op reads it (after its
 * producer when only backward reads it); one whose producer the workload
 * marks not recomputable is kept (our dropout: its mask), and so is one
 * whose regeneration would pass through a
 * checkpoint the framework has freed by then (SuperNeurons' liveness
 * keeps checkpoint outputs through forward for this, set_outs under
 * RECOMPUTE_ON; our executor frees a tensor after its last reader, and
 * re-running the convolution is what SuperNeurons avoids): Caffe's
 * BatchNorm saves x_norm and backward never reads the convolution's
 * output. Where the workload runs a cheap op in place over a checkpoint's
 * output (caffe's and pytorch's ReLU after a convolution), the checkpoint
 * moves to the in-place result: the convolution's output is gone, so the
 * result is what must be kept.
 *
 * Two strategies (recompute.cpp). A segment is the chain of cheap layers
 * after a checkpoint (scan_checkpoint); here, the dropped tensors
 * connected through their producers' inputs. Its memory seg_mem is the
 * sum over its layers of f_mem_usage, each layer's forward dependencies
 * (find_bottleneck: inputs and outputs of type DATA or CONV_BUFF); the
 * bottleneck peak_m is the largest b_mem_usage, the memory of one
 * backward layer's dependencies ("backward bottleneck"), here the
 * largest, over backward ops, of their non-persistent inputs and outputs
 * plus workspace.
 *   speed-centric: the segment is recomputed once and what is
 *   regenerated stays for the backward layers after ("we do nothing this
 *   layer, as the output already in gpu"): the executor keeps a
 *   regenerated tensor that another op still reads;
 *   memory-centric: during a recomputation each regenerated tensor that
 *   the backward layer being prepared does not read is freed again as
 *   soon as the next layer of the chain has read it (update_f_tensor
 *   after each forward of the chain: "if
 *   (is_backward_dependency(t, curt_recomputed_layer_id)) continue;" else
 *   free_gpu_space(RECOMPUTE)), so the next backward layer recomputes
 *   from the checkpoint again;
 *   cost-aware (the default): memory-centric for a segment whose seg_mem
 *   exceeds peak_m ("larger_than_bottleneck"), speed-centric otherwise:
 *   update_f_tensor starts with "// if curt segment does not exceed
 *   bottleneck, then skip". (The released build sets LARGER, which
 *   enables that rule.)
 *
 * UNIFIED TENSOR POOL (`offload`, `cache`, `prefetch`). The tensors that
 * may leave the device are the kept activations (not dropped for
 * recomputation) the backward pass reads: recompute.cpp's
 * offload_to_recompute removes the recomputed ones from the LRU, and
 * tensor.cpp acquireSpaceGPU puts every other DATA tensor it allocates at
 * the LRU's head ("lru->update(this)"): offload=all. The papers citing
 * SuperNeurons describe it offloading around convolutions (Capuchin:
 * "based on the assumption that convolution layer is more expensive";
 * the issue: the outputs of convolution layers): offload=conv (default)
 * takes the kept tensors a forward convolution reads or writes -- its
 * output, and its input, which its backward reads for the filter
 * gradient (our workloads' batch-norm backward reads its own saved
 * x_norm rather than the convolution's output, so the output alone
 * would leave nothing to offload in Caffe's ResNets). offload=none:
 * nothing. A tensor is offloaded after its last forward reader, or after
 * its producer when only backward reads it (a batch-norm's x_norm).
 *   cache=true (default): the Tensor Cache. An offloaded tensor is copied
 *   to pinned host memory on the D2H engine after its last forward
 *   reader without leaving the device (ex_swap_out without release) and
 *   enters an LRU list that every access refreshes; when an allocation
 *   fails, the least recently used resident one not needed by the op is
 *   released ("// kick out some tensors in LRU ... lru->remove_oldest()
 *   ... t->GPUtoCPU(); t->free_gpu_space(CPU);", acquireSpaceGPU under
 *   LRU_ON); with its host copy already made, the release costs no copy
 *   unless the copy is still running (then the allocation waits for it).
 *   The released code copies at eviction, synchronously (GPUtoCPU); here
 *   the copy is made ahead on the D2H engine, overlapping compute -- our
 *   choice, the paper's overlap of transfers being what we could not
 *   read.
 *   cache=false: every offloaded tensor leaves the device after its last
 *   forward reader (ex_swap_out with release), as vDNN does.
 *   prefetch=true (default): at each backward op the policy issues the
 *   swap-in of the next group of offloaded tensors the backward pass
 *   will read (those first read by the next layer, in backward order,
 *   that reads any), overlapping the current op; the released code
 *   fetches synchronously when a layer stashes its dependencies
 *   (liveness.cpp stash: "t->CPUtoGPU()"), which is prefetch=false: the
 *   executor's on-demand swap-in (an H2D stall).
 *
 * CONVOLUTION WORKSPACE. The abstract's "dynamically allocates the memory
 * for convolution workspaces": every convolution takes its fastest
 * algorithm (plan), and when its workspace does not fit, the allocation
 * falls back to the least-workspace algorithm before anything is evicted
 * (on_alloc_fail, EX_FALLBACK; counted by the executor as algorithm
 * fallbacks).
 *
 * Every refused action (a drop, an offload, a prefetch) and every
 * eviction is counted and reported. Linear in the workload's size but for
 * on_alloc_fail's walk of the LRU list from its tail (O(tensors) per
 * failed allocation, as the released code's remove_oldest loop).
 */
#include "../sim/ex.h"
#include "pol.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum sn_recompute { SN_RC_OFF, SN_RC_SPEED, SN_RC_MEMORY, SN_RC_COST };
static const char *const sn_recompute_names[] = {
	"off", "speed-centric", "memory-centric", "cost-aware", NULL};
enum sn_offload { SN_OFF_NONE, SN_OFF_CONV, SN_OFF_CKPT };
static const char *const sn_offload_names[] = {"none", "conv", "all",
					       NULL};

struct sn_params {
	bool liveness; /* own memory manager: free after last use */
	int recompute; /* enum sn_recompute */
	int offload;   /* enum sn_offload */
	bool cache;    /* LRU tensor cache (else eager release) */
	bool prefetch; /* asynchronous prefetch in backward */
};

#define P_(f) offsetof(struct sn_params, f)
static const struct prm_def sn_params[] = {
	{"liveness", PRM_BOOL, "true", 0, 0, NULL,
	 "liveness analysis: free every activation, gradient and workspace "
	 "after its last use, replacing the framework's memory manager "
	 "(Caffe's held blobs); false keeps the framework's",
	 P_(liveness)},
	{"recompute", PRM_ENUM, "cost-aware", 0, 0, sn_recompute_names,
	 "recomputation of cheap layers (pool, activation, batch-norm, LRN, "
	 "...): off, speed-centric (segment once, kept), memory-centric "
	 "(per backward layer) or cost-aware (memory-centric where a "
	 "segment's memory exceeds the largest backward layer's)",
	 P_(recompute)},
	{"offload", PRM_ENUM, "conv", 0, 0, sn_offload_names,
	 "unified tensor pool: which kept activations the backward pass reads "
	 "may go to host memory: none, conv (those a convolution reads or "
	 "writes) or all",
	 P_(offload)},
	{"cache", PRM_BOOL, "true", 0, 0, NULL,
	 "tensor cache: offloaded tensors are copied out but stay on the "
	 "device until an allocation needs room (LRU); false releases them "
	 "after their last forward use",
	 P_(cache)},
	{"prefetch", PRM_BOOL, "true", 0, 0, NULL,
	 "prefetch the next backward layer's offloaded tensors during the "
	 "current op (false: fetched on demand, as the released code does)",
	 P_(prefetch)},
	PRM_END,
};
#undef P_

enum sn_role {
	SN_NONE,    /* not an activation this policy manages */
	SN_CKPT,    /* a checkpoint's output, kept */
	SN_OFFLOAD, /* a checkpoint's output the tensor pool may offload */
	SN_DROP,    /* a cheap layer's output, dropped after forward */
	SN_KEPT,    /* cheap, but kept: read first in backward, or not
		       recomputable */
};

struct sn {
	struct sn_params prm;
	uint32_t n_tensors, n_ops;
	uint8_t *role;	     /* per tensor, enum sn_role */
	uint32_t *seg;	     /* per tensor: its segment's root (SN_DROP) */
	uint64_t *seg_mem;   /* per root: the segment's forward memory */
	bool *mem_centric;   /* per root: recomputed per backward layer */
	uint32_t *drop_at;   /* per op + 1: drop_list[drop_at[o] ..
				drop_at[o + 1]) are dropped after op o */
	uint32_t *drop_list;
	uint32_t *off_at;    /* the same for offloads */
	uint32_t *off_list;
	uint32_t *pre;	     /* offloaded tensors by first backward reader */
	uint32_t *first_bwd; /* per tensor: its first backward reader */
	uint32_t n_pre;
	uint32_t pre_next;   /* pre[] index of the next group to fetch */
	uint32_t *lru_prev, *lru_next; /* the tensor cache, per tensor */
	bool *in_lru;
	uint32_t lru_head, lru_tail; /* most and least recently used */
	bool *releasing;     /* a release this policy issued is pending */
	uint64_t pending_rel;
	const struct wl_op *cur; /* the op being prepared */
	uint64_t peak_m;	 /* the backward bottleneck */
	/* plan figures */
	uint32_t n_ckpt, n_drop, n_kept, n_off, n_seg, n_seg_mem;
	uint64_t drop_bytes, off_bytes;
	/* run counters (whole run) */
	uint64_t drops, drops_refused, redrops, redrops_refused;
	uint64_t offloads, offloads_refused, evictions, evict_bytes;
	uint64_t prefetches, prefetches_refused, hits, inflight, misses;
	uint64_t ws_fallbacks;
	char first_refusal[160];
};

static void note_refusal(struct sn *s, struct ex *ex)
{
	if (!s->first_refusal[0])
		snprintf(s->first_refusal, sizeof s->first_refusal, "%s",
			 ex_last_error(ex));
}

static int sn_init(struct pol *p, gms_err *err);
static void sn_fini(struct pol *p);
static int sn_plan(struct pol *p, struct ex *ex, gms_err *err);
static void sn_iter_begin(struct pol *p, struct ex *ex, int iter);
static void sn_before_op(struct pol *p, struct ex *ex, const struct wl_op *op);
static void sn_on_access(struct pol *p, struct ex *ex,
			 const struct ex_access *a);
static void sn_after_op(struct pol *p, struct ex *ex, const struct wl_op *op);
static enum ex_verdict sn_on_alloc_fail(struct pol *p, struct ex *ex,
					const struct ex_alloc_req *req);
static void sn_on_copy_done(struct pol *p, struct ex *ex,
			    const struct ex_copy *c);
static void sn_report(struct pol *p, FILE *out);

#define SN_OPS(own)                                                            \
	.name = "superneurons",                                                \
	.summary = "SuperNeurons: liveness analysis, unified tensor pool "      \
		   "(offload around convolutions, LRU cache, prefetch), "           \
		   "cost-aware recomputation",                                 \
	.params = sn_params, .params_size = sizeof(struct sn_params),          \
	.own_memory = (own), .init = sn_init, .fini = sn_fini,                 \
	.plan = sn_plan, .iter_begin = sn_iter_begin,                          \
	.before_op = sn_before_op, .on_access = sn_on_access,                  \
	.after_op = sn_after_op, .on_alloc_fail = sn_on_alloc_fail,            \
	.on_copy_done = sn_on_copy_done, .report = sn_report

const struct pol_ops pol_superneurons_ops = {SN_OPS(true)};
/* liveness=false: the same hooks under the framework's memory manager
 * (own_memory is a property of the table, so init switches tables). */
static const struct pol_ops sn_framework_memory_ops = {SN_OPS(false)};

static int sn_init(struct pol *p, gms_err *err)
{
	struct sn *s = calloc(1, sizeof *s);
	if (!s)
		return gms_errf(err, "out of memory");
	s->prm = *(const struct sn_params *)p->params;
	p->priv = s;
	if (!s->prm.liveness)
		p->ops = &sn_framework_memory_ops;
	return 0;
}

static void sn_free_plan(struct sn *s)
{
	free(s->role);
	free(s->seg);
	free(s->seg_mem);
	free(s->mem_centric);
	free(s->drop_at);
	free(s->drop_list);
	free(s->off_at);
	free(s->off_list);
	free(s->pre);
	free(s->first_bwd);
	free(s->lru_prev);
	free(s->lru_next);
	free(s->in_lru);
	free(s->releasing);
}

static void sn_fini(struct pol *p)
{
	struct sn *s = p->priv;
	if (s)
		sn_free_plan(s);
	free(s);
	p->priv = NULL;
}

/* ---- planning -------------------------------------------------------- */

/* mem_control.h's CHECKPOINT_LAYERS (CONV, FC, JOIN_L, FORK_L, CONCAT,
 * with DATA_L and SOFTMAX): everything but the cheap layers. */
static bool cheap(enum wl_op_type t)
{
	switch (t) {
	case OT_POOL:
	case OT_RELU:
	case OT_BATCHNORM:
	case OT_LAYERNORM:
	case OT_DROPOUT:
	case OT_ELEMWISE: /* LRN, padding */
		return true;
	default:
		return false;
	}
}

static uint32_t uf_find(uint32_t *seg, uint32_t t)
{
	while (seg[t] != t) {
		seg[t] = seg[seg[t]];
		t = seg[t];
	}
	return t;
}

/* Group ids[] (n of them) by key[id] (< n_keys) into at/list: counting
 * sort, stable in id order. */
static void group_by(const uint32_t *key, uint32_t n_keys, const bool *pick,
		     uint32_t n, uint32_t *at, uint32_t *list)
{
	memset(at, 0, ((size_t)n_keys + 2) * sizeof *at);
	for (uint32_t t = 0; t < n; t++)
		if (pick[t])
			at[key[t] + 1]++;
	for (uint32_t k = 0; k < n_keys; k++)
		at[k + 1] += at[k];
	for (uint32_t t = 0; t < n; t++)
		if (pick[t])
			list[at[key[t]]++] = t;
	for (uint32_t k = n_keys; k > 0; k--)
		at[k] = at[k - 1];
	at[0] = 0;
}

/* Bytes of op o's non-persistent inputs and outputs (each once) plus its
 * workspace under its fastest algorithm. */
static uint64_t op_mem(const struct ex *ex, const struct wl_op *op)
{
	const struct wl_workload *wl = ex_workload(ex);
	uint32_t n;
	const struct wl_algo *al = ex_op_algos(ex, op->id, &n);
	uint64_t b = n ? al[wl_fastest_of(al, n)].workspace : op->workspace;
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		uint32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
		bool seen = false;
		for (uint32_t j = 0; j < k && !seen; j++)
			seen = (j < op->n_in ? op->in[j]
					      : op->out[j - op->n_in]) == t;
		if (!seen && !ex_tensor_persistent(ex, t))
			b += wl->tensors[t].bytes;
	}
	return b;
}

static bool read_in_backward(const struct wl_workload *wl, uint32_t t,
			     uint32_t *first)
{
	const struct wl_tensor *x = &wl->tensors[t];
	for (uint32_t i = 0; i < x->n_readers; i++)
		if (wl->ops[x->readers[i]].phase == WL_BWD) {
			*first = x->readers[i];
			return true;
		}
	return false;
}

static int sn_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct sn *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	uint32_t nt = wl->n_tensors, no = wl->n_ops;
	sn_free_plan(s);
	struct sn_params prm = s->prm;
	memset(s, 0, sizeof *s);
	s->prm = prm;
	s->n_tensors = nt;
	s->n_ops = no;
	s->role = calloc(nt + 1, 1);
	s->seg = calloc(nt + 1, sizeof *s->seg);
	s->seg_mem = calloc(nt + 1, sizeof *s->seg_mem);
	s->mem_centric = calloc(nt + 1, sizeof *s->mem_centric);
	s->drop_at = calloc((size_t)no + 2, sizeof *s->drop_at);
	s->drop_list = calloc(nt + 1, sizeof *s->drop_list);
	s->off_at = calloc((size_t)no + 2, sizeof *s->off_at);
	s->off_list = calloc(nt + 1, sizeof *s->off_list);
	s->pre = calloc(nt + 1, sizeof *s->pre);
	s->first_bwd = calloc(nt + 1, sizeof *s->first_bwd);
	s->lru_prev = calloc(nt + 1, sizeof *s->lru_prev);
	s->lru_next = calloc(nt + 1, sizeof *s->lru_next);
	s->in_lru = calloc(nt + 1, sizeof *s->in_lru);
	s->releasing = calloc(nt + 1, sizeof *s->releasing);
	uint32_t *key = calloc(nt + 1, sizeof *key);
	bool *pick = calloc(nt + 1, sizeof *pick);
	bool *ok = calloc(nt + 1, sizeof *ok); /* alive or regenerable */
	if (!s->role || !s->seg || !s->seg_mem || !s->mem_centric ||
	    !s->drop_at || !s->drop_list || !s->off_at || !s->off_list ||
	    !s->pre || !s->first_bwd || !s->lru_prev || !s->lru_next ||
	    !s->in_lru || !s->releasing || !key || !pick || !ok) {
		free(ok);
		free(key);
		free(pick);
		return gms_errf(err, "out of memory");
	}
	/* the fastest algorithm for every convolution (see CONVOLUTION
	 * WORKSPACE) */
	for (uint32_t o = 0; o < no; o++) {
		uint32_t n;
		const struct wl_algo *al = ex_op_algos(ex, o, &n);
		if (n && ex_pick_algo(ex, o, wl_fastest_of(al, n)) < 0) {
			free(key);
			free(pick);
				return gms_errf(err, "%s", ex_last_error(ex));
		}
	}
	for (uint32_t t = 0; t < nt; t++)
		ok[t] = ex_tensor_persistent(ex, t) ||
			wl->tensors[t].kind == WL_INPUT ||
			wl->tensors[t].producer == WL_NONE;
	/* roles, in issue order (a producer comes before its readers) */
	for (uint32_t o = 0; o < no; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (op->phase != WL_FWD)
			continue;
		/* the lineage a drop needs: every input of the producer
		 * alive until backward, or itself regenerable from such
		 * tensors through cheap layers (recompute.cpp regenerates
		 * from the checkpoint, never through one) */
		bool regen = op->recomputable;
		for (uint32_t i = 0; i < op->n_in && regen; i++)
			regen = ok[op->in[i]];
		for (uint32_t k = 0; k < op->n_out; k++) {
			uint32_t t = op->out[k];
			const struct wl_tensor *x = &wl->tensors[t];
			uint32_t fb;
			s->seg[t] = t;
			ok[t] = read_in_backward(wl, t, &fb) ||
				(x->held && !s->prm.liveness) ||
				(cheap(op->type) && regen);
			if (x->kind != WL_ACT ||
			    !read_in_backward(wl, t, &s->first_bwd[t]))
				continue;
			/* an in-place op over a checkpoint's output keeps
			 * the checkpoint (the file comment) */
			uint32_t src = op->n_in ? op->in[0] : WL_NONE;
			bool over_ckpt = op->inplace && src != WL_NONE &&
					 wl->tensors[src].n_readers == 1 &&
					 s->role[src] != SN_DROP &&
					 !cheap(wl->ops[wl->tensors[src].producer]
							.type);
			if (!cheap(op->type) || over_ckpt ||
			    s->prm.recompute == SN_RC_OFF)
				s->role[t] = SN_CKPT;
			else if (!regen)
				s->role[t] = SN_KEPT;
			else
				s->role[t] = SN_DROP;
		}
	}
	/* the tensor pool: kept activations read in backward, after their
	 * last forward use; offload=conv: those a convolution reads or
	 * writes in forward */
	for (uint32_t o = 0; o < no; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (op->phase != WL_FWD || s->prm.offload == SN_OFF_NONE ||
		    (s->prm.offload == SN_OFF_CONV && op->type != OT_CONV))
			continue;
		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			uint32_t t = k < op->n_in ? op->in[k]
						  : op->out[k - op->n_in];
			if (s->role[t] == SN_CKPT || s->role[t] == SN_KEPT)
				s->role[t] = SN_OFFLOAD;
		}
	}
	/* segments: dropped tensors joined through their producers' inputs */
	for (uint32_t t = 0; t < nt; t++) {
		if (s->role[t] != SN_DROP)
			continue;
		const struct wl_op *pr = &wl->ops[wl->tensors[t].producer];
		for (uint32_t i = 0; i < pr->n_in; i++)
			if (s->role[pr->in[i]] == SN_DROP) {
				uint32_t a = uf_find(s->seg, t),
					 b = uf_find(s->seg, pr->in[i]);
				if (a != b)
					s->seg[a > b ? a : b] = a > b ? b : a;
			}
	}
	/* seg_mem: f_mem_usage of each layer of the segment, i.e. each
	 * dropped tensor's producer's forward dependencies */
	for (uint32_t t = 0; t < nt; t++)
		if (s->role[t] == SN_DROP)
			s->seg_mem[uf_find(s->seg, t)] +=
				op_mem(ex, &wl->ops[wl->tensors[t].producer]);
	/* peak_m: the backward bottleneck (find_bottleneck) */
	for (uint32_t o = 0; o < no; o++)
		if (wl->ops[o].phase == WL_BWD) {
			uint64_t b = op_mem(ex, &wl->ops[o]);
			if (b > s->peak_m)
				s->peak_m = b;
		}
	for (uint32_t t = 0; t < nt; t++) {
		switch ((enum sn_role)s->role[t]) {
		case SN_DROP:
			s->n_drop++;
			s->drop_bytes += wl->tensors[t].bytes;
			if (uf_find(s->seg, t) == t) {
				s->n_seg++;
				s->mem_centric[t] =
					s->prm.recompute == SN_RC_MEMORY ||
					(s->prm.recompute == SN_RC_COST &&
					 s->seg_mem[t] > s->peak_m);
				s->n_seg_mem += s->mem_centric[t];
			}
			break;
		case SN_OFFLOAD:
			s->n_off++;
			s->off_bytes += wl->tensors[t].bytes;
			/* fall through */
		case SN_CKPT:
			s->n_ckpt++;
			break;
		case SN_KEPT:
			s->n_kept++;
			break;
		case SN_NONE:
			break;
		}
	}
	/* drops and offloads after the last forward reader */
	for (uint32_t t = 0; t < nt; t++) {
		const struct wl_tensor *x = &wl->tensors[t];
		key[t] = x->last_fwd_reader != WL_NONE ? x->last_fwd_reader
						       : x->producer;
		pick[t] = s->role[t] == SN_DROP || s->role[t] == SN_OFFLOAD;
		if (!pick[t])
			key[t] = 0;
		pick[t] = s->role[t] == SN_DROP;
	}
	group_by(key, no, pick, nt, s->drop_at, s->drop_list);
	for (uint32_t t = 0; t < nt; t++)
		pick[t] = s->role[t] == SN_OFFLOAD;
	group_by(key, no, pick, nt, s->off_at, s->off_list);
	/* the prefetch order: by first backward reader */
	uint32_t *pat = calloc((size_t)no + 2, sizeof *pat);
	if (!pat) {
		free(key);
		free(pick);
		free(ok);
		return gms_errf(err, "out of memory");
	}
	group_by(s->first_bwd, no, pick, nt, pat, s->pre);
	s->n_pre = pat[no];
	free(pat);
	free(key);
	free(pick);
	free(ok);
	return 0;
}

/* ---- the tensor cache ---------------------------------------------------- */

static void lru_remove(struct sn *s, uint32_t t)
{
	if (!s->in_lru[t])
		return;
	uint32_t pv = s->lru_prev[t], nx = s->lru_next[t];
	if (pv != WL_NONE)
		s->lru_next[pv] = nx;
	else
		s->lru_head = nx;
	if (nx != WL_NONE)
		s->lru_prev[nx] = pv;
	else
		s->lru_tail = pv;
	s->in_lru[t] = false;
}

static void lru_touch(struct sn *s, uint32_t t)
{
	lru_remove(s, t);
	s->lru_prev[t] = WL_NONE;
	s->lru_next[t] = s->lru_head;
	if (s->lru_head != WL_NONE)
		s->lru_prev[s->lru_head] = t;
	s->lru_head = t;
	if (s->lru_tail == WL_NONE)
		s->lru_tail = t;
	s->in_lru[t] = true;
}

/* ---- during the run ------------------------------------------------------ */

static void sn_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct sn *s = p->priv;
	(void)ex;
	(void)iter;
	s->lru_head = s->lru_tail = WL_NONE;
	memset(s->in_lru, 0, s->n_tensors * sizeof *s->in_lru);
	memset(s->releasing, 0, s->n_tensors * sizeof *s->releasing);
	s->pending_rel = 0;
	s->pre_next = 0;
	s->cur = NULL;
}

static bool reads(const struct wl_op *op, uint32_t t)
{
	for (uint32_t i = 0; i < op->n_in; i++)
		if (op->in[i] == t)
			return true;
	return false;
}

/* Release t (an offloaded tensor, IN); true when the engine took it. */
static bool release(struct sn *s, struct ex *ex, uint32_t t)
{
	if (ex_swap_out(ex, t, EX_RELEASE) == ENG_EVENT_NONE)
		return false;
	lru_remove(s, t);
	if (ex_tensor_state(ex, t) == TS_SWAPPING_OUT && !s->releasing[t]) {
		s->releasing[t] = true;
		s->pending_rel++;
	}
	return true;
}

/* Prefetch: the next group of offloaded tensors (same first backward
 * reader) whose reader comes after op o. */
static void prefetch_after(struct sn *s, struct ex *ex, uint32_t o)
{
	while (s->pre_next < s->n_pre &&
	       s->first_bwd[s->pre[s->pre_next]] <= o)
		s->pre_next++;
	if (s->pre_next >= s->n_pre)
		return;
	uint32_t r = s->first_bwd[s->pre[s->pre_next]];
	for (; s->pre_next < s->n_pre && s->first_bwd[s->pre[s->pre_next]] == r;
	     s->pre_next++) {
		uint32_t t = s->pre[s->pre_next];
		enum ex_state st = ex_tensor_state(ex, t);
		if (st != TS_OUT && st != TS_SWAPPING_OUT)
			continue; /* resident (cached) or not made */
		if (ex_swap_in(ex, t, ENG_EVENT_NONE) == ENG_EVENT_NONE) {
			s->prefetches_refused++;
			note_refusal(s, ex);
		} else {
			s->prefetches++;
		}
	}
}

static void sn_before_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct sn *s = p->priv;
	s->cur = op;
	if (op->phase != WL_BWD)
		return;
	/* the tensor cache's hits and misses at a first backward use */
	for (uint32_t i = 0; i < op->n_in; i++) {
		uint32_t t = op->in[i];
		if (s->role[t] != SN_OFFLOAD || s->first_bwd[t] != op->id)
			continue;
		enum ex_state st = ex_tensor_state(ex, t);
		if (st == TS_IN)
			s->hits++;
		else if (st == TS_SWAPPING_IN)
			s->inflight++;
		else if (st == TS_OUT || st == TS_SWAPPING_OUT)
			s->misses++;
	}
	if (s->prm.prefetch)
		prefetch_after(s, ex, op->id);
	for (uint32_t i = 0; i < op->n_in; i++)
		if (ex_tensor_state(ex, op->in[i]) == TS_RECOMPUTE)
			ex_recompute(ex, op->in[i]);
}

/* Every access refreshes the cache; a regenerated tensor's write in a
 * memory-centric segment frees the dropped inputs its kernel read that
 * the op being prepared does not read (update_f_tensor). */
static void sn_on_access(struct pol *p, struct ex *ex,
			 const struct ex_access *a)
{
	struct sn *s = p->priv;
	uint32_t t = a->tensor;
	if (s->in_lru[t])
		lru_touch(s, t);
	if (!a->recompute || !a->write || s->role[t] != SN_DROP ||
	    !s->mem_centric[uf_find(s->seg, t)])
		return;
	const struct wl_workload *wl = ex_workload(ex);
	const struct wl_op *pr = &wl->ops[wl->tensors[t].producer];
	for (uint32_t i = 0; i < pr->n_in; i++) {
		uint32_t v = pr->in[i];
		if (s->role[v] != SN_DROP || ex_tensor_state(ex, v) != TS_IN ||
		    (s->cur && reads(s->cur, v)))
			continue;
		if (ex_drop(ex, v) == 0) {
			s->redrops++;
		} else {
			s->redrops_refused++;
			note_refusal(s, ex);
		}
	}
}

static void sn_after_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct sn *s = p->priv;
	for (uint32_t k = s->drop_at[op->id]; k < s->drop_at[op->id + 1]; k++) {
		uint32_t t = s->drop_list[k];
		if (ex_tensor_state(ex, t) != TS_IN)
			continue; /* freed or in place: nothing held */
		if (ex_drop(ex, t) == 0) {
			s->drops++;
		} else {
			s->drops_refused++;
			note_refusal(s, ex);
		}
	}
	for (uint32_t k = s->off_at[op->id]; k < s->off_at[op->id + 1]; k++) {
		uint32_t t = s->off_list[k];
		if (ex_tensor_state(ex, t) != TS_IN)
			continue;
		bool ok;
		if (s->prm.cache) {
			ok = ex_swap_out(ex, t, 0) != ENG_EVENT_NONE;
			if (ok)
				lru_touch(s, t);
		} else {
			ok = release(s, ex, t);
		}
		if (ok) {
			s->offloads++;
		} else {
			s->offloads_refused++;
			note_refusal(s, ex);
		}
	}
}

static enum ex_verdict sn_on_alloc_fail(struct pol *p, struct ex *ex,
					const struct ex_alloc_req *req)
{
	struct sn *s = p->priv;
	if (req->tensor == WL_NONE && req->fallback != EX_NO_FALLBACK) {
		s->ws_fallbacks++;
		return EX_FALLBACK;
	}
	const struct wl_op *op = &ex_workload(ex)->ops[req->op];
	for (uint32_t t = s->lru_tail; t != WL_NONE;) {
		uint32_t pv = s->lru_prev[t];
		enum ex_state st = ex_tensor_state(ex, t);
		if (st != TS_IN) {
			lru_remove(s, t); /* freed or gone: stale */
		} else if (!ex_tensor_busy(ex, t) && !reads(op, t) &&
			   release(s, ex, t)) {
			s->evictions++;
			s->evict_bytes += ex_workload(ex)->tensors[t].bytes;
			return ex_tensor_state(ex, t) == TS_SWAPPING_OUT
				       ? EX_WAIT
				       : EX_RETRY;
		}
		t = pv;
	}
	return s->pending_rel ? EX_WAIT : EX_FAIL;
}

static void sn_on_copy_done(struct pol *p, struct ex *ex,
			    const struct ex_copy *c)
{
	struct sn *s = p->priv;
	(void)ex;
	if (c->dir == ENG_D2H && s->releasing[c->tensor]) {
		s->releasing[c->tensor] = false;
		s->pending_rel--;
	}
}

static void sn_report(struct pol *p, FILE *out)
{
	const struct sn *s = p->priv;
	double mib = 1048576.0;
	fprintf(out, "liveness %s\nrecompute %s\noffload %s\ncache %s\n"
		     "prefetch %s\n",
		s->prm.liveness ? "on" : "off",
		sn_recompute_names[s->prm.recompute],
		sn_offload_names[s->prm.offload], s->prm.cache ? "on" : "off",
		s->prm.prefetch ? "on" : "off");
	fprintf(out, "checkpoints %u\nkept_cheap %u\n", s->n_ckpt, s->n_kept);
	fprintf(out, "dropped_per_iter %u (%.1f MiB)\n", s->n_drop,
		(double)s->drop_bytes / mib);
	fprintf(out, "segments %u (memory-centric %u)\n", s->n_seg,
		s->n_seg_mem);
	fprintf(out, "peak_m %.1f MiB\n", (double)s->peak_m / mib);
	fprintf(out, "offloadable_per_iter %u (%.1f MiB)\n", s->n_off,
		(double)s->off_bytes / mib);
	fprintf(out, "drops %llu\ndrops_refused %llu\n",
		(unsigned long long)s->drops,
		(unsigned long long)s->drops_refused);
	fprintf(out, "redrops %llu\nredrops_refused %llu\n",
		(unsigned long long)s->redrops,
		(unsigned long long)s->redrops_refused);
	fprintf(out, "offloads %llu\noffloads_refused %llu\n",
		(unsigned long long)s->offloads,
		(unsigned long long)s->offloads_refused);
	fprintf(out, "evictions %llu (%.1f MiB)\n",
		(unsigned long long)s->evictions,
		(double)s->evict_bytes / mib);
	fprintf(out, "prefetches %llu\nprefetches_refused %llu\n",
		(unsigned long long)s->prefetches,
		(unsigned long long)s->prefetches_refused);
	fprintf(out, "cache_hits %llu\ncache_inflight %llu\ncache_misses "
		     "%llu\n",
		(unsigned long long)s->hits, (unsigned long long)s->inflight,
		(unsigned long long)s->misses);
	fprintf(out, "workspace_fallbacks %llu\n",
		(unsigned long long)s->ws_fallbacks);
	if (s->first_refusal[0])
		fprintf(out, "first_refusal %s\n", s->first_refusal);
}
