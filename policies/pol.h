/*
 * pol.h - the policy interface: a table of hooks, every one optional.
 *
 * A policy decides what lives on the device. It never touches the clock
 * or the event queue; it acts only through the engine calls of sim/ex.h
 * (swap out, swap in, drop, recompute, wait, place high, pick an
 * algorithm). Like Linux's struct sched_class, each hook names its caller
 * and what it may do; a NULL hook means "do the default".
 *
 * Lifetime of an instance (all calls come from sim/ex.c unless noted):
 *
 *   init        pol_create (policies/registry.c), called by whoever runs
 *               a policy (the command line's simulate, exp/exp_run.c's
 *               exp_simulate, the tests) before ex_run, once, before
 *               anything else:
 *               parse nothing itself -- the registry has already filled
 *               `params` (a struct laid out by the policy's prm_def table)
 *               -- and set up private state. May fail (bad combination of
 *               parameters) with err filled.
 *   allocator   run set-up (ex_run), before the device allocator is
 *               made: the allocator model the policy's paper prescribes
 *               (vDNN: CNMeM's pool-bestfit; vDNN++: pool-bestfit or
 *               highend by heuristic), or NULL for the run's own
 *               (ex_cfg.allocator). Must not fail.
 *   plan        once, after the executor is built and before persistent
 *               tensors are allocated: static policies see the whole
 *               workload and profile (ex_workload, ex_hw, ex_op_time) and
 *               may pick algorithms and set placement hints. What the
 *               framework keeps or runs in place is the workload's
 *               (its framework personality), never a policy's.
 *   iter_begin  at the start of each iteration, after the iteration's
 *               input tensors exist (every other non-persistent tensor is
 *               NONE then). Resets per-iteration policy state.
 *   before_op   before the executor handles an op's inputs: may prefetch
 *               (ex_swap_in), request recomputation (ex_recompute), pick a
 *               convolution algorithm (ex_pick_algo), mark outputs for
 *               high-end placement (ex_place_high), or make the executor
 *               wait for an event (ex_wait: vDNN's layer sync).
 *   before_access  for every work item, the iteration's ops and
 *               recomputations alike, once per input, before the executor
 *               looks at that input's state (so a back-access sees a
 *               tensor still SWAPPING_IN, OUT or RECOMPUTE: Capuchin's
 *               feedback, section 4.4). `a` is the access the kernel
 *               will make (count, orig as they will be; time = now). May
 *               swap in, recompute, evict others or wait; the executor
 *               then handles the input's state as it finds it.
 *   on_access   every time a kernel is issued, once per tensor it reads
 *               or writes (Capuchin's Tensor Access Tracker). May evict
 *               (ex_swap_out, ex_drop), prefetch (ex_swap_in) and request
 *               recomputation (ex_recompute: runs right after this
 *               kernel); a wait applies before the next kernel.
 *   after_op    when the op's kernel has completed and its dead tensors
 *               are freed: may offload (ex_swap_out), drop, prefetch, wait.
 *   on_alloc_fail  when the allocator cannot serve a request. The
 *               executor has no fallback of its own: a workspace request
 *               carries the cheaper algorithm it could fall back to
 *               (ex_alloc_req.fallback), and only the policy decides to
 *               take it (EX_FALLBACK). May evict, drop or wait, then
 *               returns what the executor should do:
 *                 EX_RETRY  try the allocation again now (if a wait was
 *                           requested with ex_wait, after it fires);
 *                 EX_WAIT   block until some device memory is released,
 *                           then retry (vDNN++'s blocking cnmemMalloc);
 *                           the stall counts as waiting for memory;
 *                 EX_FAIL   give up: the run ends as OOM;
 *                 EX_FALLBACK  (workspace requests with a fallback)
 *                           run this issue of the op with the
 *                           least-workspace algorithm instead, as
 *                           TensorFlow does when a convolution's scratch
 *                           allocation fails (counted as an algorithm
 *                           fallback in the statistics).
 *               NULL hook = EX_FAIL (no fallback either). A policy that answers EX_RETRY
 *               without changing anything is stopped after a bounded
 *               number of tries (the run ends as OOM, saying so).
 *   on_copy_done   when a swap-out or swap-in the policy issued has
 *               completed (state already updated). May issue more work.
 *   iter_end    after an iteration has drained (all streams idle), with
 *               its statistics; learning policies adjust here.
 *   settled     right after iter_end, by the executor, only when the
 *               run allows settling (ex_cfg.settle_max > 0) and the
 *               iteration just ended was the last warm-up one: a
 *               learning policy answers the first iteration from which
 *               its decisions have stopped changing (Capuchin: no
 *               in-trigger moved, no re-plan, no late prefetch feedback
 *               could still move), or -1 while they still change. The
 *               executor then extends the warm-up by one iteration, up
 *               to settle_max times, so that the steady state is
 *               measured only once the policy is stable (Capuchin
 *               6.3.2). NULL: the policy does not learn.
 *   report      at the end of the run (after ex_run, by whoever ran it,
 *               through pol_report_text): print the policy's own
 *               statistics as "key value" lines; they go to st_run's
 *               pol_report, simulate's report and runs.json's
 *               policy_report.
 *   fini        free private state.
 *
 * Which seed and later policies use which hooks and engine calls:
 *   framework  on_alloc_fail only (ex_fallback_or_fail); the framework
 *              personality is in the workload.
 *   ondemand   on_access (records the access list), on_alloc_fail
 *              (ex_swap_out with release of a tensor of about the requested
 *              size, or tensors, from the start of the access list, then
 *              ex_wait on the last copy: synchronous eviction),
 *              iter_begin (clears the list). Swap-in on access
 *              to an evicted tensor is the executor's default.
 *   vDNN       plan (choose layers, ex_pick_algo for m/p schemes),
 *              before_op (ex_swap_out without waiting, ex_swap_in of the
 *              nearest earlier offloaded layer while this one computes),
 *              after_op of a layer's last op (ex_wait on its offload or
 *              prefetch event: the layer-wise synchronisation).
 *   vDNN++     as vDNN without the per-layer after_op waits, but one
 *              after the last forward op (ex_wait on ex_queue_event(D2H):
 *              every offload has left before backward); on_alloc_fail
 *              returns EX_WAIT (blocking allocation); ex_place_high for
 *              tensors to be offloaded; allocation order via before_op.
 *   Capuchin   (policies/capuchin.c) on_access: the Tensor Access
 *              Tracker (iteration 0 records {tensor, orig, stall-free
 *              time}: ex_access.orig, ex_iter_start, ex_stalled); in
 *              guided iterations ex_swap_out (release) at a swap's
 *              evicted-access, ex_swap_in at an in-trigger, and the
 *              recomputation targets regenerated on the way to another
 *              kept (collective recomputation) or ex_drop'ped again;
 *              after_op: ex_drop of recomputation targets at their
 *              evicted-access (the kernel is done); before_access:
 *              feedback (a back-access that finds its tensor
 *              SWAPPING_IN); on_alloc_fail: ex_wait on the earliest
 *              unfinished swap-out (decoupled swapping), ex_drop of
 *              kept targets, then passive mode (policies/passive.h);
 *              iter_end: the Policy Maker after iteration 0
 *              (policies/capuchin_plan.h), in-trigger moves after the
 *              others. Recomputation itself is the executor's on-demand
 *              default at the back-access.
 *   AccUDNN    (policies/accudnn.c) own_memory (its runtime memory
 *              manager replaces Caffe's held blobs); allocator
 *              (pool-bestfit: one pool); plan (the feature maps; dynamic:
 *              a profiling pass, the performance model and Algorithm 2's
 *              pinning, policies/accudnn_model.h); on_access (offload on
 *              D2H as the producing kernel is issued); after_op (release
 *              after the last forward reader; resume the swap-in stream);
 *              before_op (the stream starts with the backward pass);
 *              on_copy_done (resume it); on_alloc_fail (give back a
 *              prefetched map needed last, else EX_WAIT). The three
 *              streams are the engine's compute, H2D and D2H queues.
 *   checkpoint plan (which forward activations to keep: sqrt(n)
 *              segment boundaries, articulation tensors, conv/matmul
 *              outputs or a list), after_op (ex_drop of the others still
 *              resident once their forward readers are done), before_op
 *              in backward (ex_recompute of what the op will read; the
 *              executor re-runs producers recursively).
 */
#ifndef GMS_POL_H
#define GMS_POL_H

#include "../sim/cfg.h"
#include "../sim/common.h"

struct ex;	  /* the executor (sim/ex.h) */
struct wl_op;	  /* workloads/wl.h */
struct ex_access; /* sim/ex.h */
struct ex_alloc_req;
struct ex_copy;
struct st_iter;

/* What on_alloc_fail tells the executor. */
enum ex_verdict {
	EX_RETRY,    /* try the allocation again (after pending waits) */
	EX_WAIT,     /* block until device memory is released, then retry */
	EX_FAIL,     /* give up: the run ends as OOM */
	EX_FALLBACK, /* a workspace request only, when the request names a
			fallback algorithm: run the op with it instead */
};

/* A policy instance: the table, its parameters and its private state. */
struct pol {
	const struct pol_ops *ops; /* the policy's hooks */
	void *params;		   /* filled from ops->params (prm table) */
	void *params_mem;	   /* allocation holding params (and the name
				      read from YAML before them) */
	void *priv;		   /* the policy's own state (init allocates) */
	char label[96];		   /* e.g. "ondemand(mode=eager)", for outputs */
};

struct pol_ops {
	const char *name;	      /* as written in YAML: "vdnn" */
	const char *summary;	      /* one line for `gpumemsim list` */
	const struct prm_def *params; /* parameters and defaults (may be
					 NULL: none) */
	size_t params_size;	      /* sizeof the struct params point to */
	bool own_memory;	      /* the policy replaces the framework's
					 memory manager: tensors the
					 framework would hold for the run
					 (wl_tensor.held, Caffe's blobs) are
					 freed after their last use like any
					 other (AccUDNN's runtime memory
					 manager, its section 5) */

	int (*init)(struct pol *p, gms_err *err);
	void (*fini)(struct pol *p);
	const char *(*allocator)(const struct pol *p);
	int (*plan)(struct pol *p, struct ex *ex, gms_err *err);
	void (*iter_begin)(struct pol *p, struct ex *ex, int iter);
	void (*before_op)(struct pol *p, struct ex *ex,
			  const struct wl_op *op);
	void (*before_access)(struct pol *p, struct ex *ex,
			      const struct ex_access *a);
	void (*on_access)(struct pol *p, struct ex *ex,
			  const struct ex_access *a);
	void (*after_op)(struct pol *p, struct ex *ex,
			 const struct wl_op *op);
	enum ex_verdict (*on_alloc_fail)(struct pol *p, struct ex *ex,
					 const struct ex_alloc_req *req);
	void (*on_copy_done)(struct pol *p, struct ex *ex,
			     const struct ex_copy *c);
	void (*iter_end)(struct pol *p, struct ex *ex, int iter,
			 const struct st_iter *st);
	int (*settled)(const struct pol *p);
	void (*report)(struct pol *p, FILE *out);
};

/* ---- Registry (policies/registry.c) ------------------------------ */

/* The policy named `name`, or NULL. */
const struct pol_ops *pol_find(const char *name);
/* pol_find, or NULL with "unknown policy 'x' (known: ...)" in err. */
const struct pol_ops *pol_lookup(const char *name, gms_err *err);
/* The i-th registered policy, NULL past the end. */
const struct pol_ops *pol_at(size_t i);

/* Make an instance of policy `name` with parameters from a YAML mapping
 * (node may be NULL: defaults), then from "key=value" overrides (kv may be
 * NULL). The mapping is the policy's whole node, as in `policy: {name:
 * vdnn, offload: conv}`: its `name` key, if present, must equal `name`;
 * every other key must be one of the policy's parameters. Errors name the
 * file:line:col and key. Calls init. */
int pol_create(struct pol *p, const char *name, struct cfg_doc *doc,
	       yaml_node_t *node, const char *const *kv, size_t n_kv,
	       gms_err *err);
void pol_destroy(struct pol *p);

/* The policy's report (its "key value" lines, pol_ops.report) as an owned
 * string in *text; NULL when the policy has no report hook. Returns -1 on
 * out of memory. Thread-safe: each call writes its own buffer. */
int pol_report_text(struct pol *p, char **text, gms_err *err);

#endif
