/*
 * ex.c - the executor; see ex.h for the model it implements.
 *
 * The executor is a small state machine driven by the event queue. Its
 * work is a stack of items: the next op of the iteration, with
 * recomputations pushed on top of it when an input must be regenerated
 * first. Each item goes BEGIN (policy before_op) -> INPUTS (make every
 * input resident) -> ALLOC (outputs, workspace) -> RUNNING (kernel issued)
 * and is popped when its kernel completes. step() advances the top item as
 * far as it can at the current time and returns when the item waits: for
 * its kernel, for an event (a copy), or for memory to be released.
 *
 * Release points (wl_tensor.release_after, from recorded traces): a tensor
 * with one counts one extra use, consumed when that op (not a
 * recomputation of it) completes, so it is not freed before then even when
 * its last reader ran earlier. rel_at/rel_list index the tensors by that op.
 */
#include "ex.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const ex_state_names[] = {"none",	     "in",  "swapping_out",
				      "out",	     "swapping_in", "recompute",
				      NULL};
const char *const ex_mark_names[] = {"evict", "drop", NULL};

/* Per-tensor run-time state. */
struct ex_tensor {
	uint8_t state;		/* enum ex_state */
	bool release_pending;	/* SWAPPING_OUT: free the block when done */
	bool host;		/* holds a valid pinned host copy */
	bool copying_out;	/* a D2H copy of it is in flight */
	bool high;		/* allocate at the high end (policy hint) */
	bool drop_deferred;	/* RECOMPUTE, block kept until readers finish */
	bool pageable;		/* its host copy is in pageable memory
				   (EX_PAGEABLE): copies run at the link's
				   pageable bandwidth, no pinned bytes */
	bool on_host;		/* a whole-run tensor that lives in host
				   memory only (ex_host_resident): state
				   OUT for the run, no device block */
	mem_handle h;		/* device block, MEM_HANDLE_NONE if none */
	uint64_t dev_bytes;	/* the allocator's bytes of that block when
				   counted for this tensor's kind (ex.kind),
				   0 when none is (none, or one it shares in
				   place with the tensor that counts it) */
	uint32_t uses_left;	/* reads by ops not yet completed, this iter */
	uint32_t lineage;	/* dropped tensors whose recompute needs it */
	uint32_t inflight;	/* issued kernels reading it, and
				   ex_copy_again copies of it, not
				   finished */
	uint32_t held;		/* work items past their input check that
				   will read it (kept resident until issue) */
	sim_time_t out_issued;	/* when its last swap-out was issued */
	sim_time_t in_issued;	/* when its last swap-in was issued */
	uint32_t access_count;	/* accesses this iteration */
	uint32_t orig_count;	/* of which the iteration's own (not a
				   recomputation's): ex_access.orig */
	eng_event ready;	/* SWAPPING_IN: fires when it arrives */
	uint64_t pinned;	/* pinned host bytes held for it now */
	uint64_t z_stored;	/* compressed host size, 0 = kept as is
				   (ex_host_compress) */
	sim_time_t z_comp;	/* host CPU time to compress it */
	sim_time_t z_decomp;	/* host CPU time to decompress it */
	uint8_t z_state;	/* enum ex_zstate of the host copy */
	uint32_t z_gen;		/* bumps when the host copy is dropped, so
				   a late (de)compression finds it stale */
	eng_event written;	/* fires when the kernel writing it is done */
	uint64_t again_host;	/* host bytes of its ex_copy_again D2H
				   copies not yet copied back */
	bool again_pageable;	/* those bytes are pageable (no pinned
				   bytes) */
	uint32_t regen_mark;	/* ex.regen_gen when regenerable() last
				   reached it (0: never) */
};

#define EX_MAX_WAITS 64 /* pending ex_wait events at once */

/* A frame of lineage_release()'s walk. */
struct ex_unref {
	uint32_t t; /* tensor whose lineage references are released */
	uint32_t i; /* next input of its producer to release */
};

/* A compressed host copy's life: packed after its D2H copy, unpacked
 * into a full-size pinned staging buffer before its H2D copy. */
enum ex_zstate {
	ZS_RAW,	      /* uncompressed (or not compressed at all) */
	ZS_PACKING,   /* compressing: staging and compressed chunks held */
	ZS_PACKED,    /* only the compressed chunks held */
	ZS_UNPACKING, /* decompressing into a staging buffer */
};

enum ex_phase { PH_BEGIN, PH_INPUTS, PH_ALLOC, PH_RUNNING };

/* An item of work: an op of the iteration or a recomputation. */
struct ex_work {
	uint32_t op;	  /* op id */
	bool recompute;	  /* re-run to regenerate dropped outputs */
	uint8_t phase;	  /* enum ex_phase */
	uint32_t algo;	  /* algorithm used for this issue */
	mem_handle ws;	  /* workspace block while running */
	unsigned tries;	  /* on_alloc_fail calls for the pending request */
	uint32_t seen;	  /* inputs already shown to before_access */
	uint64_t mem_seen; /* ex.mem_version at the last try */
};

enum ex_run_state {
	RS_IDLE,	 /* ready to step */
	RS_KERNEL,	 /* waiting for the top item's kernel */
	RS_WAIT_EVENT,	 /* blocked on wait[0] */
	RS_WAIT_MEMORY,	 /* blocked until memory is released */
	RS_WAIT_DRV,	 /* blocked in driver allocation calls */
	RS_WAIT_HOST,	 /* the top item's kernel is ready, the host is
			    still launching it ("the host thread") */
	RS_DONE,	 /* all iterations done, or stopped */
};

/* Driver allocation calls the host made in one allocator call, pending
 * until the host returns from them (see "driver calls" below). */
struct ex_drv {
	eng_event gate;	     /* fires when the host returns from them */
	eng_event sync[3];   /* cudaFree: marks behind the work queued on
				compute, H2D and D2H when it was called
				(ENG_EVENT_NONE: no cudaFree) */
	sim_time_t cost;     /* host time of the calls */
	sim_time_t end;	     /* when the calls return, once started */
	bool started;	     /* sync done, the cost is being spent */
};

struct ex {
	struct ex_cfg cfg;	    /* what to run */
	const struct wl_workload *wl; /* cfg.wl */
	struct pol *pol;	    /* cfg.pol */
	const struct pol_ops *po;   /* its hooks */
	struct ev_queue evq;	    /* the simulation's events */
	struct eng eng;		    /* compute stream, copy engines */
	struct mem_dev dev;	    /* device allocator */
	struct mem_host host;	    /* pinned host memory */
	uint64_t host_used;	    /* host bytes held now, pinned and
				       pageable copies and host-resident
				       tensors (hw host.memory bounds it) */
	uint64_t host_peak;	    /* max of host_used */
	uint64_t host_reserve_held; /* of host_used, host_reserved once
				       charged (the rest holds tensors) */
	uint64_t kind[WL_KIND_COUNT]; /* allocated device bytes by tensor
					 kind, workspaces in WL_WORKSPACE
					 (ex_mem_sample) */
	uint64_t host_reserved;	    /* host bytes held for the run besides
				       tensors (ex_host_reserve) */
	sim_time_t *host_op;	    /* per op: its time on the host CPU
				       when it runs there (ex_run_on_host),
				       NULL until one does */
	uint8_t *on_host_op;	    /* per op: runs on the host (host_op) */
	struct ex_tensor *t;	    /* per tensor */
	uint32_t *algo;		    /* per op: algorithm chosen */
	bool *rerun;		    /* per op: may be re-run although the
				       workload says not (ex_allow_recompute);
				       NULL until a policy asks */
	const struct wl_algo **algos; /* per op: its algorithm list, the
				       workload's or one bound from the
				       profile's conv_algos: (in bound) */
	uint32_t *n_algos;	    /* per op: entries of algos[op] */
	struct wl_algo *bound;	    /* the measured lists, owned */
	sim_time_t *gemm_time;	    /* per op: the device time of the
				       profile's gemms: entry of its shape
				       (bind_gemms), 0: none; NULL when no
				       op has one */
	uint32_t *rel_at;	    /* per op + 1: rel_list[rel_at[o] ..
				       rel_at[o + 1]) are the tensors whose
				       release point is op o */
	uint32_t *rel_list;	    /* tensor ids, grouped by release point */
	struct ex_work *stack;	    /* work items, top = last */
	size_t n_stack, cap_stack;  /* its size and capacity */
	uint32_t next_op;	    /* next op of the iteration to push */
	int iter;		    /* current iteration */
	bool setup_done;	    /* persistent tensors allocated */
	enum ex_run_state rs;	    /* what the executor waits for */
	eng_event wait[EX_MAX_WAITS]; /* events the host waits for before
					 the next kernel (ex_wait) */
	size_t n_wait;		    /* how many */
	enum st_stall wait_why;	    /* stall cause while blocked */
	sim_time_t blocked_since;   /* when the block began */
	bool wake_pending;	    /* a wake-up event is scheduled */
	bool draining;		    /* iteration's ops done, queues draining */
	uint64_t mem_version;	    /* bumps on every device free */
	uint32_t want_tensor;	    /* RS_WAIT_MEMORY: tensor to allocate
				       (WL_NONE: workspace) */
	uint64_t want_bytes;	    /* RS_WAIT_MEMORY: its size */
	uint32_t pending_release;   /* tensors whose block will be freed by
				       work in flight (swap-out, readers) */
	sim_time_t compute_busy0;   /* compute busy time at iteration start */
	uint64_t reserved_peak0;    /* the device allocator's peak_reserved
				       at iteration start (settle_pools) */
	struct ex_drv *drv;	    /* pending driver calls, a FIFO ring */
	size_t drv_head, drv_n, drv_cap; /* its first entry, size, capacity
					    (a power of 2) */
	bool drv_kicking;	    /* drv_kick is running (re-entry guard) */
	struct mem_frag_track frag; /* fragmentation, sampled after every
				       device allocation and free */
	uint32_t regen_gen;	    /* generation of regenerable()'s marks */
	uint64_t n_left_in;	    /* times a tensor left TS_IN this run:
				       ex_departures */
	uint64_t *left_in;	    /* per tensor: n_left_in when it last
				       left TS_IN (0: never), kept out of
				       ex_tensor, which every step reads */
	uint32_t *walk;		    /* n_tensors + 1 ids: the explicit stack
				       of regenerable() and lineage_take() */
	struct ex_unref *unref;	    /* n_tensors + 1 frames: the explicit
				       stack of lineage_release() */
	struct st_run *st;	    /* results */
	struct st_iter *cur;	    /* current iteration's results */
	const struct ex_kernel *issuing; /* the kernel being issued, for
					    the observer's issue hook */
	uint32_t *kout;		    /* its outputs with a block (the
				       observer's ex_kernel.out), sized for
				       the op with the most outputs */
	bool runahead;		    /* the host runs ahead of the device
				       (ex_cfg.host, the personality's
				       wl_framework_runahead) */
	sim_time_t host_t;	    /* the host thread's clock: when it has
				       issued its last launch or returned
				       from its last wait */
	eng_event k_running;	    /* the compute kernel in flight (its
				       signal); ENG_EVENT_NONE: none, or
				       host work */
	eng_event k_done;	    /* the compute kernel that completed
				       last this iteration (copy_after) */
	size_t launched;	    /* n_stack when the top item's launch
				       was charged and its issue deferred
				       to host_t (RS_WAIT_HOST); 0: none.
				       An item a hook pushes meanwhile
				       (ex_recompute) is charged its own */
	char err[256];		    /* why the last action was refused */
};

/* ---- small helpers --------------------------------------------------- */

static int refuse(struct ex *ex, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int refuse(struct ex *ex, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ex->err, sizeof ex->err, fmt, ap);
	va_end(ap);
	return -1;
}

const char *ex_last_error(const struct ex *ex) { return ex->err; }

/* Allocated before the first iteration and kept: parameters and
 * optimizer state. */
static bool whole_run(const struct ex *ex, uint32_t t)
{
	enum wl_kind k = ex->wl->tensors[t].kind;
	return k == WL_PARAM || k == WL_OPT_STATE;
}

/* Never freed: whole_run tensors, and held ones (wl_tensor.held: Caffe's
 * blobs, allocated when first written and kept), unless the policy
 * replaces the framework's memory manager (pol_ops.own_memory). */
static bool persistent(const struct ex *ex, uint32_t t)
{
	return whole_run(ex, t) || (ex->wl->tensors[t].held && !ex->po->own_memory);
}

/* Every change of a tensor's state goes through here: a departure from
 * TS_IN is stamped (ex_tensor_left_in), so that a policy can tell which
 * tensors left the device since a moment it noted (ex_departures) without
 * a look at each one (the dtr policy's pool, policies/dtr_full.c). */
static void set_state(struct ex *ex, struct ex_tensor *x, enum ex_state st)
{
	if (x->state == TS_IN && st != TS_IN)
		ex->left_in[x - ex->t] = ++ex->n_left_in;
	x->state = (uint8_t)st;
}

static const char *tname(const struct ex *ex, uint32_t t)
{
	return t == WL_NONE ? "workspace" : ex->wl->tensors[t].name;
}

static void stop_oom(struct ex *ex, uint32_t op, uint32_t t, uint64_t bytes,
		     const char *why)
{
	struct st_oom *o = &ex->st->oom;
	if (ex->rs == RS_DONE)
		return;
	o->hit = true;
	o->iter = ex->setup_done ? ex->iter : -1;
	snprintf(o->op, sizeof o->op, "%s",
		 op == WL_NONE ? "(setup)" : ex->wl->ops[op].name);
	snprintf(o->tensor, sizeof o->tensor, "%s", tname(ex, t));
	o->bytes = bytes;
	struct mem_stats ms;
	ex->dev.ops->stats(ex->dev.a, &ms);
	o->largest_free = ms.largest_free;
	snprintf(o->reason, sizeof o->reason, "%s", why);
	ex->rs = RS_DONE;
}

static void stop_error(struct ex *ex, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void stop_error(struct ex *ex, const char *fmt, ...)
{
	if (ex->rs == RS_DONE)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ex->st->error, sizeof ex->st->error, fmt, ap);
	va_end(ap);
	ex->st->failed = true;
	ex->rs = RS_DONE;
}

static void step(struct ex *ex);

const char *const ex_host_names[] = {"framework", "runahead", "wait", NULL};

/* ---- the host thread ---------------------------------------------------
 *
 * The framework's host thread issues the ops in order; launching a kernel
 * costs it host.launch (hw.h); the device runs what was launched from its
 * queue. A host that runs ahead (ex->runahead) launches the next kernel as
 * soon as it has launched the previous one, without waiting for it to
 * finish: "By default, GPU operations are asynchronous. When you call a
 * function that uses the GPU, the operations are enqueued to the
 * particular device, but not necessarily executed until later" (PyTorch,
 * docs/source/notes/cuda.rst, "Asynchronous execution"). Which frameworks
 * do is wl_framework_runahead's (wl.c), with the source for each. A host
 * that does not run ahead waits for each kernel before launching the next
 * (validate-gpu's wait mode, and what the executor modelled before).
 *
 * The host stops running ahead at a synchronisation point, and goes on no
 * earlier than when what it waited for is done (host_sync):
 *   - every wait of the executor: a policy's ex_wait (vDNN's per-layer
 *     cudaStreamSynchronize, passive swap's synchronous copy, vDNN++'s
 *     forward barrier, Capuchin's waits for a swap-in), an input still
 *     SWAPPING_IN, memory not yet released (step, on_wake);
 *   - driver calls, which the host is blocked in (cudaMalloc,
 *     cudaMallocHost; cudaFree after a device-wide sync; PyTorch's
 *     free-cached-and-retry, synchronize_and_free_events in
 *     release_cached_blocks, c10/cuda/CUDACachingAllocator.cpp): see
 *     "driver calls" below; they block the executor, so on_wake;
 *   - the end of the iteration: the training loop reads the loss
 *     (`loss.item()`: Tensor.item calls _local_scalar_dense, whose CUDA
 *     version copies the scalar with a cudaMemcpyAsync and then
 *     synchronises the stream, aten/src/ATen/native/cuda/CUDAScalar.cu),
 *     which is where iter_end drains every queue (iter_begin).
 * The executor itself still prepares each op when the previous kernel
 * has completed (so "now" in a policy's hook stays device time, ex.h);
 * the host thread decides when the kernel can start: no earlier than
 *     host_t + host.launch
 * where host_t is the later of the host's previous launch and its last
 * synchronisation (run-ahead), or of that and now (waiting). Device time
 * idle until then is host-bound (st_iter.host_bound). With host.launch 0
 * nothing changes: every kernel is issued as soon as it is prepared. A
 * kernel whose time the workload recorded (profile_timed) costs the host
 * nothing to launch: its recorded time stands for all of it, as before.
 * Not modelled: a bound on how far the host runs ahead (CUDA's launch
 * queue holds about a thousand launches; the executor's one-op look-ahead
 * never reaches it), the host cost of copies and events. */

/* The host has waited until `when`: it goes on from there. */
static void host_sync(struct ex *ex, sim_time_t when)
{
	if (ex->host_t < when)
		ex->host_t = when;
}

static void on_wake(void *obj, uint64_t arg)
{
	struct ex *ex = obj;
	(void)arg;
	ex->wake_pending = false;
	if (ex->rs == RS_WAIT_EVENT || ex->rs == RS_WAIT_MEMORY ||
	    ex->rs == RS_WAIT_DRV) {
		ex->cur->stall[ex->wait_why] +=
			ev_now(&ex->evq) - ex->blocked_since;
		host_sync(ex, ev_now(&ex->evq)); /* it waited until now */
		ex->rs = RS_IDLE;
		if (ex->cfg.obs && ex->cfg.obs->wait_end)
			ex->cfg.obs->wait_end(ex->cfg.obs->obj,
					      ev_now(&ex->evq));
	}
	if (ex->rs == RS_IDLE)
		step(ex);
}

/* Wake the executor after the callbacks of the current instant that are
 * already queued (so copy completions update tensor states first). */
static void wake(struct ex *ex)
{
	if (ex->wake_pending)
		return;
	ex->wake_pending = true;
	ev_at(&ex->evq, ev_now(&ex->evq), on_wake, ex, 0);
}

static void block(struct ex *ex, enum ex_run_state rs, enum st_stall why)
{
	ex->rs = rs;
	ex->wait_why = why;
	ex->blocked_since = ev_now(&ex->evq);
	const struct ex_observer *o = ex->cfg.obs;
	if (o && o->wait_begin) {
		eng_event ev = rs == RS_WAIT_EVENT ? ex->wait[0]
			       : rs == RS_WAIT_DRV
				       ? ex->drv[(ex->drv_head + ex->drv_n - 1) &
						 (ex->drv_cap - 1)]
						 .gate
				       : ENG_EVENT_NONE;
		o->wait_begin(o->obj, ev, why, ex->blocked_since);
	}
}

static void drv_kick(struct ex *ex);

static void on_event(void *obj, uint64_t ev)
{
	struct ex *ex = obj;
	if (ex->rs == RS_WAIT_EVENT && ex->wait[0] == (eng_event)ev)
		wake(ex);
	drv_kick(ex); /* a cudaFree's sync may be done */
}

/* ---- driver calls ------------------------------------------------------
 *
 * The allocator models say how many driver calls an allocation made
 * (mem_stats.n_device_malloc / n_device_free, mem_host.n_grow); the
 * executor charges their time from the profile (costs: malloc, free,
 * host_alloc). They are made by the host thread, which blocks in them:
 * cudaMalloc and cudaMallocHost return only once the memory is
 * allocated, and freeing device memory synchronises (the CUDA driver API
 * reference of cuMemFree, which cudaFree wraps: "This API will not
 * perform any implicit synchronization when the pointer was allocated
 * with cuMemAllocAsync or cuMemAllocFromPoolAsync ... For all other
 * pointers, this API may perform implicit synchronization"; the CUDA
 * programming guide's "Implicit Synchronization" lists "a page-locked
 * host memory allocation, a device memory allocation" among the host
 * operations that serialise streams). PyTorch's free-cached-and-retry
 * also synchronises explicitly first (synchronize_and_free_events in
 * release_cached_blocks, c10/cuda/CUDACachingAllocator.cpp). So:
 *   - cudaMalloc / cudaMallocHost: the host is busy for the call's cost;
 *   - cudaFree: the host first waits until the work queued so far on the
 *     compute stream and both copy engines has finished (modelled as a
 *     device-wide synchronisation, the worst case the documentation
 *     allows), then is busy for its cost;
 * and whatever the host issues after the calls (the next kernel, a copy)
 * starts no earlier than their return: the next kernel waits in step()
 * (RS_WAIT_DRV, a stall of cause "alloc"), a copy waits on the calls'
 * gate event in its queue. Calls are handled in the order made (a FIFO of
 * struct ex_drv), each O(1). Calls made while planning or allocating
 * persistent tensors (set-up, before iteration 0) are not timed: a
 * framework makes them before training starts. The allocator's own
 * initial reservation (bfc's whole-budget region, CNMeM's pool) is made at
 * creation, also before training. */

static void on_drv_timer(void *obj, uint64_t arg)
{
	(void)arg;
	drv_kick(obj);
}

/* Advance the pending driver calls as far as the time allows. */
static void drv_kick(struct ex *ex)
{
	if (ex->drv_kicking)
		return;
	ex->drv_kicking = true;
	sim_time_t now = ev_now(&ex->evq);
	while (ex->drv_n > 0) {
		struct ex_drv *d = &ex->drv[ex->drv_head];
		if (!d->started) {
			bool synced = true;
			for (int q = 0; q < 3; q++)
				synced &= eng_event_done(&ex->eng, d->sync[q]);
			if (!synced)
				break; /* on_event kicks again */
			d->started = true;
			d->end = sim_time_add(now, d->cost);
			if (d->cost > 0 &&
			    ev_after(&ex->evq, d->cost, on_drv_timer, ex, 0) < 0)
				break; /* past the clock's limit: ex_run stops */
		}
		if (now < d->end)
			break; /* on_drv_timer kicks again */
		eng_event gate = d->gate;
		ex->drv_head = (ex->drv_head + 1) & (ex->drv_cap - 1);
		ex->drv_n--;
		eng_fire(&ex->eng, gate);
	}
	ex->drv_kicking = false;
	if (ex->drv_n == 0 && ex->rs == RS_WAIT_DRV)
		wake(ex);
}

/* The host made n_malloc cudaMalloc, n_free cudaFree and n_host
 * cudaMallocHost calls just now (the frees before the mallocs, as the
 * allocators retry). */
static void drv_charge(struct ex *ex, uint64_t n_malloc, uint64_t n_free,
		       uint64_t n_host, uint64_t host_bytes)
{
	if (!n_malloc && !n_free && !n_host)
		return;
	ex->cur->n_cuda_malloc += n_malloc;
	ex->cur->n_cuda_free += n_free;
	ex->cur->n_host_alloc += n_host;
	if (!ex->setup_done)
		return; /* set-up is not timed */
	const struct hw_profile *hw = ex->cfg.hw;
	sim_time_t cost = sim_time_add(
		sim_time_add(sim_time_mul(n_malloc, hw->malloc_cost),
			     sim_time_mul(n_free, hw->free_cost)),
		hw_host_alloc_time(hw, n_host, host_bytes));
	ex->cur->alloc_time = sim_time_add(ex->cur->alloc_time, cost);
	if (ex->drv_n == ex->drv_cap) {
		size_t cap = ex->drv_cap ? ex->drv_cap * 2 : 16;
		struct ex_drv *v = malloc(cap * sizeof *v);
		if (!v) {
			stop_error(ex, "out of host memory for the simulation");
			return;
		}
		for (size_t i = 0; i < ex->drv_n; i++)
			v[i] = ex->drv[(ex->drv_head + i) & (ex->drv_cap - 1)];
		free(ex->drv);
		ex->drv = v;
		ex->drv_head = 0;
		ex->drv_cap = cap;
	}
	struct ex_drv d = {.gate = eng_event_new(&ex->eng, ENG_COMPUTE),
			   .sync = {ENG_EVENT_NONE, ENG_EVENT_NONE,
				    ENG_EVENT_NONE},
			   .cost = cost};
	if (n_free) {
		d.sync[0] = eng_record(&ex->eng, ENG_COMPUTE);
		d.sync[1] = eng_record(&ex->eng, ENG_H2D);
		d.sync[2] = eng_record(&ex->eng, ENG_D2H);
	}
	if (d.gate == ENG_EVENT_NONE || ex->eng.oom) {
		stop_error(ex, "out of host memory for the simulation");
		return;
	}
	ex->drv[(ex->drv_head + ex->drv_n++) & (ex->drv_cap - 1)] = d;
	const struct ex_observer *o = ex->cfg.obs;
	if (o && o->driver) {
		struct ex_driver od = {n_malloc, n_free, n_host, cost, d.gate,
				       ev_now(&ex->evq)};
		o->driver(o->obj, &od);
	}
	drv_kick(ex);
}

/* Queue q's next item waits for ev (none: nothing). Issued even when ev
 * has fired: the model's timing needs the wait only while ev is pending,
 * but a schedule (sched.c) must carry every dependency, since a replay
 * whose host runs ahead (validate/replay.c, --host runahead) issues the
 * item before its own device has done what the model's had: a swap-out
 * logged without its producer's event was copied before the kernel
 * wrote it (issue 30's H100 run: ondemand's real-ahead replays 34-36%
 * under the prediction). A fired event's wait takes no time (eng.c). */
static void wait_dep(struct ex *ex, enum eng_q q, eng_event ev)
{
	if (ev == ENG_EVENT_NONE)
		return;
	struct eng_item w = {.type = ENG_WAIT, .q = q, .wait = ev,
			     .signal = ENG_EVENT_NONE};
	if (eng_issue(&ex->eng, &w) < 0)
		stop_error(ex, "out of host memory for the simulation");
}

/* A copy the executor issues now on queue q waits for dep (its own
 * dependency, wait_dep) and goes after the compute kernels that have
 * completed by now: its queue waits for the last of them (in the model
 * that wait has fired, so it costs nothing, as wait_dep's). The
 * executor issues an op's copies (a policy's hook, an on-demand swap-in,
 * an eviction at an OOM) once the kernel before has completed (the host
 * thread, above), and frees a block when its last reader's kernel has
 * completed, so the model's copy into a freed block starts after the
 * block's old readers. A replay whose host runs ahead issues the copy
 * when its host gets there, while those kernels are still queued: without
 * this wait it copies before them (issue 30's H100 run: ondemand's
 * swap-in of layer3.4.relu1.out, into the block layer3.4.bn2.bwd had yet
 * to read, ran 4.3 ms before that kernel; the real-ahead replays of
 * ondemand measured 31-33% under the prediction). Frameworks order a
 * copy the same way: TensorFlow's GPUUtil::CopyCPUTensorToGPU ("Wait for
 * the recv-stream to make sure the buffer is truly available") and
 * CopyGPUTensorToCPU ("Wait for the sender's main stream to make sure the
 * data are available") make the copy stream wait for the compute stream
 * (tensorflow/core/common_runtime/gpu/gpu_util.cc, ThenWaitFor); PyTorch
 * copies on the current stream, behind its kernels. */
static void copy_after(struct ex *ex, enum eng_q q, eng_event dep)
{
	wait_dep(ex, q, dep); /* the copy's own dependency */
	eng_event k = ex->k_done;
	/* a wait for a compute event issued no earlier implies k's (the
	 * queue is FIFO, events are numbered in issue order) */
	if (dep != ENG_EVENT_NONE &&
	    eng_event_src(&ex->eng, dep) == ENG_COMPUTE && dep >= k)
		return;
	wait_dep(ex, q, k);
}

/* Queue q's next item waits until the host has returned from its pending
 * driver calls (it is issued after them). */
static void drv_gate(struct ex *ex, enum eng_q q)
{
	if (ex->drv_n == 0)
		return;
	wait_dep(ex, q,
		 ex->drv[(ex->drv_head + ex->drv_n - 1) & (ex->drv_cap - 1)]
			 .gate);
}

/* Pinned pool growths since the host pool counted g0 of them, b0 bytes
 * grown. */
static void host_grew(struct ex *ex, uint64_t g0, uint64_t b0)
{
	drv_charge(ex, 0, 0, ex->host.n_grow - g0, ex->host.grown - b0);
}

/* ---- device memory ---------------------------------------------------- */

/* Device memory changed (or an allocation was tried): sample the
 * fragmentation and, after a change, tell the observer, if it listens. */
static void mem_changed(struct ex *ex, bool changed,
			const struct mem_stats *ms)
{
	mem_frag_sample(&ex->frag, ms);
	struct ex_mem_sample s = {.allocated = ms->allocated,
				  .reserved = ms->reserved};
	uint64_t sum = 0;
	for (int k = 0; k < WL_KIND_COUNT; k++)
		sum += s.kind[k] = ex->kind[k];
	/* every live block is counted for one kind (issue 34) */
	assert(sum == ms->allocated);
	(void)sum;
	const struct ex_observer *o = ex->cfg.obs;
	if (changed && o && o->mem) {
		s.host = ex->host_used - ex->host_reserve_held;
		o->mem(o->obj, ev_now(&ex->evq), &s);
	}
}

/* The kind tensor t's block counts for (WL_NONE: a kernel's workspace). */
static enum wl_kind block_kind(const struct ex *ex, uint32_t t)
{
	return t == WL_NONE ? WL_WORKSPACE : ex->wl->tensors[t].kind;
}

/* eng.on_issue: tell the observer, with the kernel being issued. */
static void observe_issue(void *obj, enum eng_q q, const struct eng_item *it)
{
	struct ex *ex = obj;
	const struct ex_kernel *k =
		it->type == ENG_KERNEL && q == ENG_COMPUTE ? ex->issuing : NULL;
	ex->cfg.obs->issue(ex->cfg.obs->obj, q, it, k, ev_now(&ex->evq));
}

static void observe_mark(struct ex *ex, enum ex_mark what, uint32_t t)
{
	const struct ex_observer *o = ex->cfg.obs;
	if (o && o->mark)
		o->mark(o->obj, what, t, ev_now(&ex->evq));
}

/* Tell the observer of block h of tensor t (WL_NONE: workspace) being
 * allocated (in place over `share`'s block, or fresh: WL_NONE) or freed. */
static void observe_block(struct ex *ex, bool alloc, uint32_t t,
			  uint32_t share, uint64_t bytes, mem_handle h,
			  bool high)
{
	const struct ex_observer *o = ex->cfg.obs;
	if (!o || !o->block)
		return;
	struct ex_block b = {t,
			     share,
			     bytes,
			     ex->dev.ops->addr(ex->dev.a, h),
			     ex->dev.ops->block_size
				     ? ex->dev.ops->block_size(ex->dev.a, h)
				     : 0,
			     ev_now(&ex->evq),
			     high};
	o->block(o->obj, alloc, &b);
}

/* Allocate a device block for tensor t (WL_NONE: workspace); the driver
 * calls the allocator made (also when it failed: caching's
 * free-cached-and-retry frees segments before failing) are charged. */
/* The host called into the framework's allocator (an allocation or a
 * free): host.alloc_call of host time (the host thread, above), whatever
 * driver calls it made besides (charged by drv_charge). PyTorch's
 * CUDACachingAllocator::malloc and free run on the calling host thread
 * under the allocator's mutex (c10/cuda/CUDACachingAllocator.cpp,
 * DeviceCachingAllocator::malloc: "std::unique_lock<std::recursive_mutex>
 * lock(mutex)"), as TF's BFCAllocator::AllocateRaw does
 * (core/common_runtime/bfc_allocator.cc, mutex_lock l(lock_)). Set-up is
 * not timed. */
static void host_alloc_call(struct ex *ex)
{
	sim_time_t c = ex->cfg.hw->host_alloc_call;
	if (c == 0 || !ex->setup_done)
		return;
	if (!ex->runahead)
		host_sync(ex, ev_now(&ex->evq)); /* it waited for the kernel */
	ex->host_t = sim_time_add(ex->host_t, c);
	ex->cur->host_issue = sim_time_add(ex->cur->host_issue, c);
}

static int dev_alloc(struct ex *ex, uint32_t t, uint64_t bytes, bool high,
		     mem_handle *h)
{
	host_alloc_call(ex);
	struct mem_stats m0, m1;
	ex->dev.ops->stats(ex->dev.a, &m0);
	int rc = ex->dev.ops->alloc(ex->dev.a, bytes, high ? MEM_HIGH : 0, h);
	ex->dev.ops->stats(ex->dev.a, &m1);
	drv_charge(ex, m1.n_device_malloc - m0.n_device_malloc,
		   m1.n_device_free - m0.n_device_free, 0, 0);
	/* the block's bytes as the model counts them (rounded); a failed
	 * allocation releases cached memory at most, never a live block */
	assert(m1.allocated >= m0.allocated);
	assert(rc == 0 || m1.allocated == m0.allocated);
	ex->kind[block_kind(ex, t)] += m1.allocated - m0.allocated;
	if (rc == 0 && t != WL_NONE)
		ex->t[t].dev_bytes = m1.allocated - m0.allocated;
	/* a failed allocation is sampled too: it is where fragmentation
	 * bites, and a model may release cached memory while failing */
	mem_changed(ex, rc == 0, &m1);
	if (rc == 0)
		observe_block(ex, true, t, WL_NONE, bytes, *h, high);
	return rc;
}

/* Free tensor t's (WL_NONE: the workspace's, of `bytes`) block. */
static void dev_free(struct ex *ex, uint32_t t, uint64_t bytes,
		     mem_handle *h)
{
	assert(*h != MEM_HANDLE_NONE);
	host_alloc_call(ex);
	observe_block(ex, false, t, WL_NONE, bytes, *h, false);
	struct mem_stats m0, ms;
	ex->dev.ops->stats(ex->dev.a, &m0);
	ex->dev.ops->free(ex->dev.a, *h);
	*h = MEM_HANDLE_NONE;
	ex->mem_version++;
	ex->dev.ops->stats(ex->dev.a, &ms);
	uint64_t freed = m0.allocated - ms.allocated;
	enum wl_kind k = block_kind(ex, t);
	/* a tensor frees what it counted when allocated (or took over) */
	assert(t == WL_NONE || ex->t[t].dev_bytes == freed);
	assert(ex->kind[k] >= freed);
	ex->kind[k] -= freed;
	if (t != WL_NONE)
		ex->t[t].dev_bytes = 0;
	mem_changed(ex, true, &ms);
	if (ex->rs == RS_WAIT_MEMORY)
		wake(ex);
}

/* Pinned bytes held for t grow by `bytes` (a staging buffer or the
 * compressed chunks: bookkeeping of what is already decided, so it does
 * not fail; ex_swap_out checks the capacity for the copy itself). */
/* Host memory, all of it (pinned and pageable copies, host-resident
 * tensors): take `bytes` when the profile's host.memory allows it (0:
 * unlimited), or with force regardless (bookkeeping of what is already
 * decided, as host_pin); -1 when it does not fit. */
static int host_charge(struct ex *ex, uint64_t bytes, bool force)
{
	uint64_t cap = ex->cfg.hw->host_memory;
	if (!force && cap && (ex->host_used > cap || bytes > cap - ex->host_used))
		return -1;
	ex->host_used += bytes;
	if (ex->host_used > ex->host_peak)
		ex->host_peak = ex->host_used;
	return 0;
}

static void host_release(struct ex *ex, uint64_t bytes)
{
	assert(ex->host_used >= bytes);
	ex->host_used -= bytes;
}

static void host_pin(struct ex *ex, uint32_t t, uint64_t bytes)
{
	uint64_t g0 = ex->host.n_grow, b0 = ex->host.grown;
	assert(!ex->t[t].pageable); /* compression keeps pinned copies */
	mem_host_take(&ex->host, bytes);
	host_grew(ex, g0, b0);
	host_charge(ex, bytes, true);
	ex->t[t].pinned += bytes;
}

/* Give back `bytes` of t's host copy (pinned or, EX_PAGEABLE, pageable;
 * ex_tensor.pinned counts either). */
static void host_unpin(struct ex *ex, uint32_t t, uint64_t bytes)
{
	assert(ex->t[t].pinned >= bytes);
	if (!ex->t[t].pageable)
		mem_host_free(&ex->host, bytes);
	host_release(ex, bytes);
	ex->t[t].pinned -= bytes;
}

/* Give back `bytes` (all: UINT64_MAX) of t's ex_copy_again host copies:
 * when one is copied back, when t ends its life (settle_one), and at the
 * iteration's end (iter_end: a whole-run tensor's copy never brought
 * back). */
static void again_release(struct ex *ex, uint32_t t, uint64_t bytes)
{
	struct ex_tensor *x = &ex->t[t];
	if (bytes > x->again_host)
		bytes = x->again_host;
	if (!bytes)
		return;
	if (!x->again_pageable)
		mem_host_free(&ex->host, bytes);
	host_release(ex, bytes);
	x->again_host -= bytes;
}

static void host_drop(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	if (x->host) {
		host_unpin(ex, t, x->pinned);
		x->host = false;
		x->pageable = false;
		x->z_state = ZS_RAW;
		x->z_gen++;
	}
}

/* Bring a tensor's storage in line with its state and references: free
 * blocks whose release or drop was waiting for readers or a copy, and end
 * the life of tensors nobody will read again. Called whenever one of
 * those conditions may have changed (kernel or copy completion, action).
 * True when t was RECOMPUTE and ended its life: the lineage references it
 * held on its producer's inputs are then to be released (settle()). */
static bool settle_one(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	if (x->inflight || x->held)
		return false;
	if (x->state == TS_SWAPPING_OUT && !x->copying_out) {
		assert(x->release_pending);
		dev_free(ex, t, ex->wl->tensors[t].bytes, &x->h);
		x->release_pending = false;
		ex->pending_release--;
		set_state(ex, x, TS_OUT);
	}
	if (x->state == TS_RECOMPUTE && x->drop_deferred) {
		dev_free(ex, t, ex->wl->tensors[t].bytes, &x->h);
		x->drop_deferred = false;
		ex->pending_release--;
	}
	if (x->uses_left || x->lineage || persistent(ex, t))
		return false; /* still needed */
	switch ((enum ex_state)x->state) {
	case TS_IN:
		if (x->copying_out)
			return false; /* the copy's completion settles it
					 again */
		dev_free(ex, t, ex->wl->tensors[t].bytes, &x->h);
		host_drop(ex, t);
		again_release(ex, t, UINT64_MAX);
		set_state(ex, x, TS_NONE);
		break;
	case TS_OUT:
		host_drop(ex, t);
		again_release(ex, t, UINT64_MAX);
		set_state(ex, x, TS_NONE);
		break;
	case TS_RECOMPUTE:
		again_release(ex, t, UINT64_MAX);
		set_state(ex, x, TS_NONE);
		return true; /* its lineage references are due */
	default:
		break; /* SWAPPING_*: the copy's completion settles it */
	}
	return false;
}

/* Release the lineage references a dropped tensor t held on its producer's
 * inputs, settling each; an input that ends its life as RECOMPUTE releases
 * its own in turn, depth first in input order. An explicit stack of
 * frames (ex.unref; a tensor is pushed when it ends its life, so once)
 * rather than recursion, which a chain of 100k dropped ancestors would
 * take 100k deep. */
static void lineage_release(struct ex *ex, uint32_t t)
{
	size_t n = 0;
	ex->unref[n++] = (struct ex_unref){t, 0};
	while (n > 0) {
		struct ex_unref *f = &ex->unref[n - 1];
		const struct wl_op *p =
			&ex->wl->ops[ex->wl->tensors[f->t].producer];
		if (f->i == p->n_in) {
			n--;
			continue;
		}
		uint32_t u = p->in[f->i++];
		assert(ex->t[u].lineage > 0);
		ex->t[u].lineage--;
		if (settle_one(ex, u))
			ex->unref[n++] = (struct ex_unref){u, 0};
	}
}

static void settle(struct ex *ex, uint32_t t)
{
	if (settle_one(ex, t))
		lineage_release(ex, t);
}

/* Take back a drop whose block is still held (readers in flight). */
static void undo_drop(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	assert(x->state == TS_RECOMPUTE && x->drop_deferred);
	x->drop_deferred = false;
	ex->pending_release--;
	set_state(ex, x, TS_IN);
	lineage_release(ex, t);
}

/* ---- queries ----------------------------------------------------------- */

const struct wl_workload *ex_workload(const struct ex *ex) { return ex->wl; }
const struct ex_cfg *ex_config(const struct ex *ex) { return &ex->cfg; }

const struct hw_profile *ex_hw(const struct ex *ex) { return ex->cfg.hw; }
sim_time_t ex_now(const struct ex *ex) { return ev_now(&ex->evq); }
int ex_iter(const struct ex *ex) { return ex->iter; }
sim_time_t ex_iter_start(const struct ex *ex) { return ex->cur->start; }
sim_time_t ex_stalled(const struct ex *ex)
{
	sim_time_t s = 0;
	for (int c = 0; c < ST_STALL_COUNT; c++)
		s += ex->cur->stall[c];
	return s;
}
enum ex_state ex_tensor_state(const struct ex *ex, uint32_t t)
{
	return (enum ex_state)ex->t[t].state;
}
bool ex_tensor_persistent(const struct ex *ex, uint32_t t)
{
	return persistent(ex, t);
}

uint64_t ex_departures(const struct ex *ex) { return ex->n_left_in; }

uint64_t ex_tensor_left_in(const struct ex *ex, uint32_t t)
{
	return ex->left_in[t];
}
void ex_mem_stats(const struct ex *ex, struct mem_stats *out)
{
	ex->dev.ops->stats(ex->dev.a, out);
}

bool ex_tensor_busy(const struct ex *ex, uint32_t t)
{
	if (ex->t[t].inflight)
		return true;
	for (size_t k = 0; k < ex->n_stack; k++) {
		const struct wl_op *op = &ex->wl->ops[ex->stack[k].op];
		for (uint32_t i = 0; i < op->n_in; i++)
			if (op->in[i] == t)
				return true;
		for (uint32_t i = 0; i < op->n_out; i++)
			if (op->out[i] == t)
				return true;
	}
	return false;
}

/* The op's kernel time from the profile's compute model (or its
 * measured time), before any algorithm's scale. */
static sim_time_t op_base_time(const struct ex *ex, const struct wl_op *op)
{
	if (op->time > 0)
		return op->time;
	if (ex->gemm_time && ex->gemm_time[op->id] > 0)
		return ex->gemm_time[op->id]; /* measured (gemms:) */
	return hw_kernel_time_math(ex->cfg.hw, op->type, ex->wl->math,
				   op->flops, op->bytes);
}

static sim_time_t op_time_algo(const struct ex *ex, uint32_t o, uint32_t a)
{
	const struct wl_op *op = &ex->wl->ops[o];
	sim_time_t base = op_base_time(ex, op);
	if (ex->n_algos[o] == 0)
		return base;
	const struct wl_algo *al = &ex->algos[o][a];
	if (al->time > 0)
		return al->time; /* measured (conv_algos:) */
	if (sim_time_over(base))
		return base; /* past the clock's limit: stays flagged */
	return sim_round_ns((double)base * al->time_scale);
}

const struct wl_algo *ex_op_algos(const struct ex *ex, uint32_t op,
				  uint32_t *n)
{
	*n = ex->n_algos[op];
	return ex->algos[op];
}

/* Does profile entry e measure op's convolution? Same pass, batch,
 * channels, input plane, filter, stride and (square) padding. */
static bool conv_matches(const struct hw_conv_algo *e, const struct wl_op *op)
{
	const struct wl_conv *g = op->conv;
	return e->type == (uint8_t)op->type && g->groups == 1 &&
	       g->pad_h == g->pad_w && e->n == g->n && e->c == g->c &&
	       e->h == g->h && e->w == g->w && e->k == g->k && e->r == g->r &&
	       e->s == g->s && e->stride == g->stride && e->pad == g->pad_h;
}

/* Each op's algorithm list: the workload's, or for a convolution with a
 * geometry that the profile's conv_algos: entries measure, the measured
 * algorithms (time and workspace as measured; time_scale their time over
 * the op's base time, so the fastest is the least; an algorithm measured
 * twice counts once, the first entry), fastest first (ties: less
 * workspace, then the profile's order). The count of bound ops goes to
 * st_run.conv_bound, so the substitution is never silent. */
static int bind_conv_algos(struct ex *ex)
{
	const struct wl_workload *wl = ex->wl;
	const struct hw_profile *hw = ex->cfg.hw;
	size_t total = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		ex->algos[o] = wl->ops[o].algos;
		ex->n_algos[o] = wl->ops[o].n_algos;
	}
	if (hw->n_conv_algos == 0)
		return 0;
	/* worst case: every entry bound once per op that matches it */
	for (uint32_t o = 0; o < wl->n_ops; o++)
		if (wl->ops[o].conv)
			for (size_t i = 0; i < hw->n_conv_algos; i++)
				total += conv_matches(&hw->conv_algos[i],
						      &wl->ops[o]);
	if (total == 0)
		return 0;
	ex->bound = calloc(total, sizeof *ex->bound);
	if (!ex->bound)
		return -1;
	size_t used = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (!op->conv)
			continue;
		struct wl_algo *l = &ex->bound[used];
		uint32_t n = 0;
		double base = (double)op_base_time(ex, op);
		for (size_t i = 0; i < hw->n_conv_algos; i++) {
			const struct hw_conv_algo *e = &hw->conv_algos[i];
			if (!conv_matches(e, op))
				continue;
			const char *nm = wl_conv_algo_name(op->type, e->algo);
			bool dup = false;
			for (uint32_t j = 0; j < n; j++)
				dup = dup || strcmp(l[j].name, nm) == 0;
			if (dup)
				continue;
			/* measured like the compute classes: less the
			 * host's issue cost (hw_device_time) */
			sim_time_t dt = hw_device_time(hw, e->time);
			struct wl_algo a = {nm, e->workspace,
					    (double)dt /
						    (base > 0 ? base : 1.0),
					    dt};
			/* insertion: fastest first, ties to less workspace */
			uint32_t k = n++;
			for (; k > 0 && (l[k - 1].time > a.time ||
					 (l[k - 1].time == a.time &&
					  l[k - 1].workspace > a.workspace));
			     k--)
				l[k] = l[k - 1];
			l[k] = a;
		}
		if (n == 0)
			continue;
		used += n;
		ex->algos[o] = l;
		ex->n_algos[o] = n;
		ex->st->conv_bound++;
	}
	return 0;
}

/* Each op whose GEMM shape (wl_op.gemm, set by the generators) and the
 * workload's arithmetic a gemms: entry of the profile measures takes the
 * entry's time less the host's issue cost (hw_device_time, as a
 * conv_algos: entry) instead of the compute curve's: the first entry of
 * that shape counts. The count of such ops goes to st_run.gemm_bound, so
 * the substitution is never silent. O(ops x entries). */
static int bind_gemms(struct ex *ex)
{
	const struct wl_workload *wl = ex->wl;
	const struct hw_profile *hw = ex->cfg.hw;
	if (hw->n_gemms == 0)
		return 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_gemm *g = &wl->ops[o].gemm;
		if (g->batch == 0 || wl->ops[o].time > 0)
			continue;
		for (size_t i = 0; i < hw->n_gemms; i++) {
			const struct hw_gemm *e = &hw->gemms[i];
			if (e->math != (uint8_t)wl->math || e->batch != g->batch ||
			    e->m != g->m || e->n != g->n || e->k != g->k)
				continue;
			if (!ex->gemm_time) {
				ex->gemm_time = calloc(wl->n_ops,
						       sizeof *ex->gemm_time);
				if (!ex->gemm_time)
					return -1;
			}
			ex->gemm_time[o] = hw_device_time(hw, e->time);
			ex->st->gemm_bound++;
			break;
		}
	}
	return 0;
}

static bool profile_timed(const struct ex *ex, uint32_t o, uint32_t a);

sim_time_t ex_op_time(const struct ex *ex, uint32_t op)
{
	sim_time_t t = op_time_algo(ex, op, ex->algo[op]);
	/* a host that waits for each kernel exposes its launch (ex.h) */
	if (!ex->runahead && profile_timed(ex, op, ex->algo[op]))
		t = sim_time_add(t, ex->cfg.hw->host_launch);
	return t;
}

sim_time_t ex_copy_time(const struct ex *ex, enum eng_q dir, uint64_t bytes)
{
	return hw_copy_time(ex->cfg.hw, dir == ENG_H2D ? HW_H2D : HW_D2H,
			    bytes, true);
}

/* ---- actions ------------------------------------------------------------ */

/* An event that has already fired. */
static eng_event done_event(struct ex *ex)
{
	eng_event ev = eng_event_new(&ex->eng, ENG_COMPUTE);
	if (ev != ENG_EVENT_NONE) {
		ex->eng.evt[ev].done = true;
		ex->eng.evt[ev].when = ev_now(&ex->evq);
	}
	return ev;
}

/* Host CPU work on t's host copy finished (arg: t | z_gen << 32). */
static void host_work_done(void *obj, uint64_t arg)
{
	struct ex *ex = obj;
	uint32_t t = (uint32_t)arg;
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	if ((uint32_t)(arg >> 32) != x->z_gen)
		return; /* the host copy was dropped meanwhile */
	if (x->z_state == ZS_PACKING) {
		host_unpin(ex, t, bytes); /* the staging buffer */
		x->z_state = ZS_PACKED;
	} else if (x->z_state == ZS_UNPACKING) {
		host_unpin(ex, t, x->z_stored); /* the chunks */
		x->z_state = ZS_RAW;
	}
}

/* Queue work of `d` ns on the host CPU for t; returns its event. */
static eng_event host_work(struct ex *ex, uint32_t t, sim_time_t d,
			   uint8_t kind)
{
	eng_event ev = eng_event_new(&ex->eng, ENG_HOST);
	struct eng_item it = {.type = ENG_KERNEL, .q = ENG_HOST,
			      .duration = d, .bytes = ex->wl->tensors[t].bytes,
			      .wait = ENG_EVENT_NONE, .signal = ev,
			      .done = host_work_done, .obj = ex,
			      .arg = (uint64_t)t | (uint64_t)ex->t[t].z_gen
							   << 32,
			      .tag = t, .kind = kind};
	ex->cur->host_busy = sim_time_add(ex->cur->host_busy, d);
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return ev;
}

/* t's D2H copy is done: compress it into chunks (held from now on) while
 * the staging buffer it landed in is held until compression ends. */
static void compress(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	host_pin(ex, t, x->z_stored);
	x->z_state = ZS_PACKING;
	host_work(ex, t, x->z_comp, EX_KIND_COMPRESS);
}

/* Before t's H2D copy: decompress it into a full-size staging buffer
 * (behind its compression, if that is still running: the host CPU queue
 * is FIFO). Returns the event the copy waits for. */
static eng_event decompress(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	host_pin(ex, t, ex->wl->tensors[t].bytes);
	x->z_state = ZS_UNPACKING;
	return host_work(ex, t, x->z_decomp, EX_KIND_DECOMPRESS);
}

int ex_host_compress(struct ex *ex, uint32_t t, uint64_t stored,
		     sim_time_t comp, sim_time_t decomp)
{
	struct ex_tensor *x = &ex->t[t];
	if (persistent(ex, t))
		return refuse(ex, "host_compress %s: persistent tensor",
			      tname(ex, t));
	if (x->host || x->copying_out)
		return refuse(ex, "host_compress %s: already has a host copy",
			      tname(ex, t));
	x->z_stored = stored;
	x->z_comp = comp;
	x->z_decomp = decomp;
	return 0;
}

/* Host bytes for a copy out of the device: host memory (host.memory),
 * and pinned memory from the pool unless pageable. NULL when taken, else
 * why not (nothing taken). */
static const char *host_take(struct ex *ex, uint64_t bytes, bool pageable)
{
	if (host_charge(ex, bytes, false) < 0)
		return "host memory exhausted (host.memory)";
	uint64_t g0 = ex->host.n_grow, b0 = ex->host.grown;
	if (!pageable && mem_host_alloc(&ex->host, bytes) < 0) {
		host_release(ex, bytes);
		return "pinned host memory exhausted";
	}
	host_grew(ex, g0, b0);
	return NULL;
}

static void swap_out_done(void *obj, uint64_t t)
{
	struct ex *ex = obj;
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	x->copying_out = false;
	x->host = true;
	ex->cur->bytes_d2h += bytes;
	if (x->z_stored)
		compress(ex, (uint32_t)t);
	settle(ex, (uint32_t)t);
	if (ex->po->on_copy_done && ex->rs != RS_DONE) {
		struct ex_copy c = {(uint32_t)t, ENG_D2H, bytes, x->out_issued};
		ex->po->on_copy_done(ex->pol, ex, &c);
	}
}

eng_event ex_swap_out(struct ex *ex, uint32_t t, unsigned flags)
{
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	if (persistent(ex, t))
		return refuse(ex, "swap_out %s: persistent tensor", tname(ex, t)),
		       ENG_EVENT_NONE;
	if (x->state != TS_IN && x->state != TS_SWAPPING_OUT)
		return refuse(ex, "swap_out %s: state %s", tname(ex, t),
			      ex_state_names[x->state]),
		       ENG_EVENT_NONE;
	if (x->state == TS_SWAPPING_OUT && x->release_pending)
		return refuse(ex, "swap_out %s: already being released",
			      tname(ex, t)),
		       ENG_EVENT_NONE;
	if (x->host || x->copying_out) {
		/* the host already has (or is getting) the data */
		eng_event ev = x->copying_out ? eng_record(&ex->eng, ENG_D2H)
					      : done_event(ex);
		if (flags & EX_RELEASE) {
			set_state(ex, x, TS_SWAPPING_OUT);
			x->release_pending = true;
			ex->pending_release++;
			/* no copy: the one that made the host copy was
			 * counted as the swap-out (issue 29) */
			ex->cur->n_release++;
			observe_mark(ex, EX_MARK_EVICT, t);
			settle(ex, t);
		}
		return ev;
	}
	bool pageable = flags & EX_PAGEABLE;
	if (pageable && x->z_stored)
		return refuse(ex, "swap_out %s: a compressed host copy is "
			      "pinned (EX_PAGEABLE refused)", tname(ex, t)),
		       ENG_EVENT_NONE;
	const char *why = host_take(ex, bytes, pageable);
	if (why)
		return refuse(ex, "swap_out %s: %s", tname(ex, t), why),
		       ENG_EVENT_NONE;
	x->pinned += bytes;
	x->pageable = pageable;
	copy_after(ex, ENG_D2H, x->written);
	drv_gate(ex, ENG_D2H);
	eng_event ev = eng_event_new(&ex->eng, ENG_D2H);
	struct eng_item it = {.type = ENG_COPY, .q = ENG_D2H, .bytes = bytes,
			      .pinned = !pageable, .wait = ENG_EVENT_NONE,
			      .signal = ev, .done = swap_out_done, .obj = ex,
			      .arg = t, .tag = t};
	x->copying_out = true;
	x->out_issued = ev_now(&ex->evq);
	if (flags & EX_RELEASE) {
		set_state(ex, x, TS_SWAPPING_OUT);
		x->release_pending = true;
		ex->pending_release++;
		observe_mark(ex, EX_MARK_EVICT, t);
	}
	ex->cur->n_swap_out++;
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return ev;
}

static void swap_in_done(void *obj, uint64_t t)
{
	struct ex *ex = obj;
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	ex->cur->bytes_h2d += bytes;
	set_state(ex, x, TS_IN);
	host_drop(ex, (uint32_t)t);
	settle(ex, (uint32_t)t);
	if (ex->po->on_copy_done && ex->rs != RS_DONE) {
		struct ex_copy c = {(uint32_t)t, ENG_H2D, bytes, x->in_issued};
		ex->po->on_copy_done(ex->pol, ex, &c);
	}
}

eng_event ex_swap_in(struct ex *ex, uint32_t t, eng_event after)
{
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	if (x->state == TS_SWAPPING_OUT) {
		/* still resident: keep it. The swap-out's release is
		 * cancelled (Capuchin's in-trigger may come before its
		 * eviction has finished); counted, since the tensor never
		 * left the device although its copy ran */
		if (x->release_pending) {
			x->release_pending = false;
			ex->pending_release--;
			ex->cur->n_swap_out_cancelled++;
		}
		set_state(ex, x, TS_IN);
		return done_event(ex);
	}
	if (x->state == TS_SWAPPING_IN)
		return x->ready;
	if (x->state != TS_OUT)
		return refuse(ex, "swap_in %s: state %s", tname(ex, t),
			      ex_state_names[x->state]),
		       ENG_EVENT_NONE;
	if (dev_alloc(ex, t, bytes, x->high, &x->h) < 0)
		return refuse(ex, "swap_in %s: no device memory for %llu bytes",
			      tname(ex, t), (unsigned long long)bytes),
		       ENG_EVENT_NONE;
	copy_after(ex, ENG_H2D, after);
	if (x->z_state == ZS_PACKING || x->z_state == ZS_PACKED) {
		struct eng_item w = {.type = ENG_WAIT, .q = ENG_H2D,
				     .wait = decompress(ex, t),
				     .signal = ENG_EVENT_NONE};
		eng_issue(&ex->eng, &w);
	}
	drv_gate(ex, ENG_H2D);
	x->ready = eng_event_new(&ex->eng, ENG_H2D);
	set_state(ex, x, TS_SWAPPING_IN);
	x->in_issued = ev_now(&ex->evq);
	ex->cur->n_swap_in++;
	struct eng_item it = {.type = ENG_COPY, .q = ENG_H2D, .bytes = bytes,
			      .pinned = !x->pageable, .wait = ENG_EVENT_NONE,
			      .signal = x->ready, .done = swap_in_done,
			      .obj = ex, .arg = t, .tag = t};
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return x->ready;
}

/* Can u, an input of a dropped tensor's producer, be had again? Alive
 * (not NONE) or persistent, or freed after its last use but with a
 * recomputable producer whose inputs can be had again (a transient such
 * as a batchnorm output that an in-place ReLU overwrote), and so on back
 * without a depth limit. That is: no freed tensor reachable from u
 * through freed tensors' producers lacks a recomputable producer. A walk
 * with an explicit stack (ex.walk: a tensor is pushed once, when first
 * marked) visits each such ancestor once per ex_drop (marks stamped with
 * ex.regen_gen, so nothing is cleared between calls), instead of once
 * per path to it, which grows exponentially on a DAG whose ops read two
 * earlier outputs (issue 12, item 4). */
static bool regenerable(struct ex *ex, uint32_t u)
{
	size_t n = 0;
	if (ex->t[u].regen_mark != ex->regen_gen) {
		ex->t[u].regen_mark = ex->regen_gen;
		ex->walk[n++] = u;
	}
	while (n > 0) {
		uint32_t v = ex->walk[--n];
		if (persistent(ex, v) || ex->t[v].state != TS_NONE)
			continue;
		uint32_t pr = ex->wl->tensors[v].producer;
		if (pr == WL_NONE || !ex_op_recomputable(ex, pr))
			return false;
		const struct wl_op *p = &ex->wl->ops[pr];
		for (uint32_t i = 0; i < p->n_in; i++) {
			struct ex_tensor *y = &ex->t[p->in[i]];
			if (y->regen_mark != ex->regen_gen) {
				y->regen_mark = ex->regen_gen;
				ex->walk[n++] = p->in[i];
			}
		}
	}
	return true;
}

/* Start a new regenerable() generation: every mark becomes stale. */
static void regen_new_gen(struct ex *ex)
{
	if (++ex->regen_gen == 0) { /* wrapped: clear the marks once */
		for (uint32_t t = 0; t < ex->wl->n_tensors; t++)
			ex->t[t].regen_mark = 0;
		ex->regen_gen = 1;
	}
}

/* Take lineage references on the inputs of t's producer; a freed input
 * (regenerable() said it can be had again) becomes RECOMPUTE with
 * references of its own, and so on back. settle() ends its life again
 * once its last dependent is regenerated. An explicit stack (ex.walk):
 * a tensor is pushed when it turns NONE -> RECOMPUTE, so once, and a
 * chain of 100k freed ancestors does not recurse 100k deep. */
static void lineage_take(struct ex *ex, uint32_t t)
{
	size_t n = 0;
	ex->walk[n++] = t;
	while (n > 0) {
		uint32_t v = ex->walk[--n];
		const struct wl_op *p =
			&ex->wl->ops[ex->wl->tensors[v].producer];
		for (uint32_t i = 0; i < p->n_in; i++) {
			uint32_t u = p->in[i];
			if (!persistent(ex, u) && ex->t[u].state == TS_NONE) {
				set_state(ex, &ex->t[u], TS_RECOMPUTE);
				ex->walk[n++] = u;
			}
			ex->t[u].lineage++;
		}
	}
}

bool ex_op_recomputable(const struct ex *ex, uint32_t op)
{
	return op < ex->wl->n_ops &&
	       (ex->wl->ops[op].recomputable || (ex->rerun && ex->rerun[op]));
}

int ex_allow_recompute(struct ex *ex, uint32_t op)
{
	if (op >= ex->wl->n_ops || ex->wl->ops[op].phase != WL_FWD)
		return refuse(ex, "allow_recompute: op %u is not a forward op",
			      op);
	if (!ex->rerun &&
	    !(ex->rerun = calloc(ex->wl->n_ops, sizeof *ex->rerun)))
		return refuse(ex, "allow_recompute: out of memory");
	ex->rerun[op] = true;
	return 0;
}

int ex_drop(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	const struct wl_tensor *wt = &ex->wl->tensors[t];
	if (persistent(ex, t) || wt->producer == WL_NONE)
		return refuse(ex, "drop %s: has no producer to re-run",
			      wt->name);
	if (x->state != TS_IN)
		return refuse(ex, "drop %s: state %s", wt->name,
			      ex_state_names[x->state]);
	const struct wl_op *p = &ex->wl->ops[wt->producer];
	if (!ex_op_recomputable(ex, wt->producer))
		return refuse(ex, "drop %s: producer %s is not recomputable",
			      wt->name, p->name);
	regen_new_gen(ex);
	for (uint32_t i = 0; i < p->n_in; i++) {
		uint32_t in = p->in[i];
		if (!regenerable(ex, in))
			return refuse(ex,
				      "drop %s: input %s of %s is already freed",
				      wt->name, tname(ex, in), p->name);
	}
	if (x->copying_out)
		return refuse(ex, "drop %s: a swap-out is in flight", wt->name);
	if (!eng_event_done(&ex->eng, x->written))
		return refuse(ex, "drop %s: its producer is still writing it",
			      wt->name);
	lineage_take(ex, t);
	host_drop(ex, t);
	set_state(ex, x, TS_RECOMPUTE);
	ex->cur->n_drop++;
	observe_mark(ex, EX_MARK_DROP, t);
	if (x->inflight || x->held) {
		/* settle() frees it once its readers (running, or past their
		 * input check) are done */
		x->drop_deferred = true;
		ex->pending_release++;
	} else {
		dev_free(ex, t, ex->wl->tensors[t].bytes, &x->h);
	}
	settle(ex, t);
	return 0;
}

/* Push a work item; `below` puts it under the running top item, to run
 * right after it (a request made while a kernel runs). */
static int push_at(struct ex *ex, uint32_t op, bool recompute, bool below);
static int push(struct ex *ex, uint32_t op, bool recompute)
{
	return push_at(ex, op, recompute, false);
}

static int push_at(struct ex *ex, uint32_t op, bool recompute, bool below)
{
	if (ex->n_stack == ex->cap_stack) {
		size_t cap = ex->cap_stack ? ex->cap_stack * 2 : 16;
		struct ex_work *s = realloc(ex->stack, cap * sizeof *s);
		if (!s)
			return -1;
		ex->stack = s;
		ex->cap_stack = cap;
	}
	if (ex->n_stack > 2 * (size_t)ex->wl->n_ops + 16) {
		stop_error(ex, "recomputation of %s does not terminate",
			   ex->wl->ops[op].name);
		return -1;
	}
	struct ex_work w = {.op = op, .recompute = recompute,
			    .phase = recompute ? PH_INPUTS : PH_BEGIN,
			    .algo = ex->algo[op], .ws = MEM_HANDLE_NONE};
	if (below && ex->n_stack > 0) {
		ex->stack[ex->n_stack] = ex->stack[ex->n_stack - 1];
		ex->stack[ex->n_stack - 1] = w;
		ex->n_stack++;
	} else {
		ex->stack[ex->n_stack++] = w;
	}
	return 0;
}

int ex_recompute(struct ex *ex, uint32_t t)
{
	if (ex->t[t].state != TS_RECOMPUTE)
		return refuse(ex, "recompute %s: state %s", tname(ex, t),
			      ex_state_names[ex->t[t].state]);
	/* asked while a kernel runs (on_access): it runs right after it */
	return push_at(ex, ex->wl->tensors[t].producer, true,
		       ex->rs == RS_KERNEL);
}

void ex_note_replan(struct ex *ex) { ex->cur->n_replan++; }

void ex_wait(struct ex *ex, eng_event ev)
{
	if (ev == ENG_EVENT_NONE || eng_event_done(&ex->eng, ev))
		return;
	if (ex->n_wait == EX_MAX_WAITS) {
		stop_error(ex, "more than %d pending waits", EX_MAX_WAITS);
		return;
	}
	ex->wait[ex->n_wait++] = ev;
}

eng_event ex_queue_event(struct ex *ex, enum eng_q q)
{
	return eng_record(&ex->eng, q);
}

int ex_host_resident(struct ex *ex, uint32_t t)
{
	if (ex->setup_done)
		return refuse(ex, "host_resident %s: only while planning",
			      tname(ex, t));
	if (t >= ex->wl->n_tensors || !whole_run(ex, t))
		return refuse(ex, "host_resident %s: not a parameter or "
			      "optimizer state", t < ex->wl->n_tensors
			      ? tname(ex, t) : "?");
	ex->t[t].on_host = true;
	return 0;
}

int ex_run_on_host(struct ex *ex, uint32_t op, sim_time_t dur)
{
	const struct wl_workload *wl = ex->wl;
	if (ex->setup_done)
		return refuse(ex, "run_on_host: only while planning");
	if (op >= wl->n_ops)
		return refuse(ex, "run_on_host: no op %u", (unsigned)op);
	const struct wl_op *o = &wl->ops[op];
	if (o->phase != WL_UPD || !o->n_in || o->workspace || o->n_algos)
		return refuse(ex, "run_on_host %s: only an update op that "
			      "needs no workspace", o->name);
	for (uint32_t i = 0; i < o->n_out; i++)
		if (whole_run(ex, o->out[i]))
			return refuse(ex, "run_on_host %s: writes %s, a "
				      "tensor of the whole run", o->name,
				      tname(ex, o->out[i]));
	if (!ex->host_op) {
		ex->host_op = calloc(wl->n_ops, sizeof *ex->host_op);
		ex->on_host_op = calloc(wl->n_ops, sizeof *ex->on_host_op);
		if (!ex->host_op || !ex->on_host_op)
			return refuse(ex, "run_on_host: out of memory");
	}
	ex->host_op[op] = dur;
	ex->on_host_op[op] = 1;
	return 0;
}

eng_event ex_host_task(struct ex *ex, uint32_t t, sim_time_t dur,
		       eng_event after)
{
	assert(t < ex->wl->n_tensors);
	if (after != ENG_EVENT_NONE && !eng_event_done(&ex->eng, after)) {
		struct eng_item w = {.type = ENG_WAIT, .q = ENG_HOST,
				     .wait = after, .signal = ENG_EVENT_NONE};
		eng_issue(&ex->eng, &w);
	}
	eng_event ev = eng_event_new(&ex->eng, ENG_HOST);
	struct eng_item it = {.type = ENG_KERNEL, .q = ENG_HOST,
			      .duration = dur, .wait = ENG_EVENT_NONE,
			      .signal = ev, .tag = t,
			      .kind = EX_KIND_HOST_WORK};
	ex->cur->host_busy = sim_time_add(ex->cur->host_busy, dur);
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return ev;
}

static void refresh_done(void *obj, uint64_t bytes)
{
	struct ex *ex = obj;
	ex->cur->bytes_h2d += bytes;
}

eng_event ex_refresh(struct ex *ex, uint32_t t, unsigned flags,
		     eng_event after)
{
	struct ex_tensor *x = &ex->t[t];
	if (!whole_run(ex, t) || x->on_host || x->state != TS_IN)
		return refuse(ex, "refresh %s: not a whole-run tensor resident "
			      "on the device", tname(ex, t)),
		       ENG_EVENT_NONE;
	copy_after(ex, ENG_H2D, after);
	drv_gate(ex, ENG_H2D);
	uint64_t bytes = ex->wl->tensors[t].bytes;
	eng_event ev = eng_event_new(&ex->eng, ENG_H2D);
	struct eng_item it = {.type = ENG_COPY, .q = ENG_H2D, .bytes = bytes,
			      .pinned = !(flags & EX_PAGEABLE),
			      .wait = ENG_EVENT_NONE, .signal = ev,
			      .done = refresh_done, .obj = ex, .arg = bytes,
			      .tag = t};
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return ev;
}

static void copy_again_done(void *obj, uint64_t arg)
{
	struct ex *ex = obj;
	uint32_t t = (uint32_t)(arg >> 1);
	uint64_t bytes = ex->wl->tensors[t].bytes;
	ex->t[t].inflight--;
	if (arg & 1) {
		ex->cur->bytes_h2d += bytes;
		again_release(ex, t, bytes);
	} else {
		ex->cur->bytes_d2h += bytes;
	}
	settle(ex, t);
}

eng_event ex_copy_again(struct ex *ex, uint32_t t, enum eng_q q,
			unsigned flags)
{
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	bool h2d = q == ENG_H2D, pageable = flags & EX_PAGEABLE;
	assert(q == ENG_H2D || q == ENG_D2H);
	bool ok = h2d ? x->state == TS_IN || x->state == TS_SWAPPING_IN
		      : x->state == TS_IN || (x->state == TS_SWAPPING_OUT &&
					      x->h != MEM_HANDLE_NONE);
	if (x->on_host)
		return refuse(ex, "copy_again %s: it lives in host memory",
			      tname(ex, t)),
		       ENG_EVENT_NONE;
	if (!ok)
		return refuse(ex, "copy_again %s: state %s", tname(ex, t),
			      ex_state_names[x->state]),
		       ENG_EVENT_NONE;
	if (h2d && x->again_host < bytes)
		return refuse(ex, "copy_again %s: no copy of its own on the "
			      "host to bring back", tname(ex, t)),
		       ENG_EVENT_NONE;
	if (!h2d && x->again_host && x->again_pageable != pageable)
		return refuse(ex, "copy_again %s: its other copies are %s",
			      tname(ex, t),
			      x->again_pageable ? "pageable" : "pinned"),
		       ENG_EVENT_NONE;
	if (!h2d) {
		const char *why = host_take(ex, bytes, pageable);
		if (why)
			return refuse(ex, "copy_again %s: %s", tname(ex, t),
				      why),
			       ENG_EVENT_NONE;
		x->again_host += bytes;
		x->again_pageable = pageable;
	}
	copy_after(ex, q, h2d ? ENG_EVENT_NONE : x->written);
	drv_gate(ex, q);
	eng_event ev = eng_event_new(&ex->eng, q);
	struct eng_item it = {.type = ENG_COPY, .q = q, .bytes = bytes,
			      .pinned = !pageable, .wait = ENG_EVENT_NONE,
			      .signal = ev, .done = copy_again_done,
			      .obj = ex, .arg = (uint64_t)t << 1 | h2d,
			      .tag = t};
	x->inflight++;
	if (eng_issue(&ex->eng, &it) < 0)
		stop_error(ex, "out of host memory for the simulation");
	return ev;
}

uint64_t ex_host_used(const struct ex *ex) { return ex->host_used; }

void ex_stop_oom(struct ex *ex, uint32_t t, const char *why)
{
	uint32_t op = ex->n_stack ? ex->stack[ex->n_stack - 1].op
		      : ex->next_op ? ex->next_op - 1
				    : WL_NONE;
	stop_oom(ex, op, t, t == WL_NONE ? 0 : ex->wl->tensors[t].bytes, why);
}

int ex_host_reserve(struct ex *ex, uint64_t bytes)
{
	if (ex->setup_done)
		return refuse(ex, "host_reserve: only while planning");
	ex->host_reserved += bytes;
	return 0;
}

void ex_place_high(struct ex *ex, uint32_t t, bool high)
{
	ex->t[t].high = high;
}

int ex_pick_algo(struct ex *ex, uint32_t op, uint32_t algo)
{
	if (algo >= ex->n_algos[op])
		return refuse(ex, "pick_algo %s: no algorithm %u",
			      ex->wl->ops[op].name, algo);
	ex->algo[op] = algo;
	return 0;
}

/* ---- the state machine --------------------------------------------------- */

enum step_rc { S_NEXT, S_BLOCKED, S_STOP };

/* The cheaper algorithm a workspace request could fall back to: the
 * least workspace, the faster on a tie, when it needs less than the
 * algorithm of this issue. */
static void offer_fallback(const struct ex *ex, const struct ex_work *w,
			   struct ex_alloc_req *req)
{
	uint32_t n;
	const struct wl_algo *al = ex_op_algos(ex, w->op, &n);
	if (n == 0)
		return;
	uint32_t best = wl_least_workspace_of(al, n);
	if (al[best].workspace < al[w->algo].workspace) {
		req->fallback = best;
		req->fallback_bytes = al[best].workspace;
	}
}

enum ex_verdict ex_fallback_or_fail(struct pol *p, struct ex *ex,
				    const struct ex_alloc_req *req)
{
	(void)p;
	(void)ex;
	return req->fallback != EX_NO_FALLBACK ? EX_FALLBACK : EX_FAIL;
}

/* Ask the policy about a failed allocation of `bytes` for tensor t
 * (WL_NONE: workspace) of the top item. */
static enum step_rc alloc_failed(struct ex *ex, uint32_t t, uint64_t bytes)
{
	struct ex_work *w = &ex->stack[ex->n_stack - 1];
	uint32_t op = w->op;
	char why[200];
	struct mem_stats ms;
	ex->dev.ops->stats(ex->dev.a, &ms);
	if (!ex->po->on_alloc_fail) {
		snprintf(why, sizeof why,
			 "allocator %s: %llu of %llu bytes in use, largest "
			 "free block %llu; policy %s does not free memory",
			 ex->dev.ops->name, (unsigned long long)ms.allocated,
			 (unsigned long long)ms.budget,
			 (unsigned long long)ms.largest_free, ex->po->name);
		stop_oom(ex, op, t, bytes, why);
		return S_STOP;
	}
	if ((w->tries >= 3 && w->mem_seen == ex->mem_version) ||
	    w->tries > 64 + ex->wl->n_tensors) {
		snprintf(why, sizeof why,
			 "policy %s asked to retry %u times without making "
			 "room",
			 ex->po->name, w->tries);
		stop_oom(ex, op, t, bytes, why);
		return S_STOP;
	}
	struct ex_alloc_req req = {.op = op, .tensor = t, .bytes = bytes,
				   .tries = w->tries, .algo = w->algo,
				   .fallback = EX_NO_FALLBACK};
	if (t == WL_NONE)
		offer_fallback(ex, w, &req);
	w->tries++;
	w->mem_seen = ex->mem_version;
	enum ex_verdict v = ex->po->on_alloc_fail(ex->pol, ex, &req);
	if (ex->rs == RS_DONE)
		return S_STOP;
	switch (v) {
	case EX_FALLBACK:
		if (req.fallback == EX_NO_FALLBACK) {
			stop_error(ex,
				   "policy %s chose a fallback for %s of %s, "
				   "which has none",
				   ex->po->name, tname(ex, t),
				   ex->wl->ops[op].name);
			return S_STOP;
		}
		w->algo = req.fallback;
		w->tries = 0;
		ex->cur->n_algo_fallback++;
		if (ex->st->fallbacks++ == 0) {
			ex->st->fallback_bytes = bytes;
			ex->st->fallback_largest_free = ms.largest_free;
		}
		return S_NEXT;
	case EX_RETRY:
		return S_NEXT; /* step() honours pending waits first */
	case EX_WAIT:
		if (ex->pending_release == 0) {
			snprintf(why, sizeof why,
				 "policy %s waits for memory but nothing in "
				 "flight will release any",
				 ex->po->name);
			stop_oom(ex, op, t, bytes, why);
			return S_STOP;
		}
		ex->want_tensor = t;
		ex->want_bytes = bytes;
		block(ex, RS_WAIT_MEMORY, ST_STALL_MEMORY);
		return S_BLOCKED;
	case EX_FAIL:
	default:
		snprintf(why, sizeof why,
			 "policy %s could not make room (%llu bytes in use, "
			 "largest free block %llu)",
			 ex->po->name, (unsigned long long)ms.allocated,
			 (unsigned long long)ms.largest_free);
		stop_oom(ex, op, t, bytes, why);
		return S_STOP;
	}
}

/* Of op's inputs from `from` on that are to be recomputed (RECOMPUTE,
 * block not held), the one whose producer comes first in the iteration.
 * Regeneration replays the lineage in forward order, as Capuchin's
 * runtime does: "T4's recomputation will start from T1 ... and generate
 * T2, T3 during this process" (5.3), from "the closest input tensors"
 * (5.2). Taking the inputs in argument order instead regenerates a
 * residual block's branch (bn3_k, from tensors of block k) before the
 * shortcut (out_k-1, itself a target): on a chain of dropped blocks every
 * branch output is then held for an add still waiting on the stack --
 * 33 x 368 MB on ResNet-152 b480, an OOM with the memory free. */
static uint32_t first_regen(const struct ex *ex, const struct wl_op *op,
			    uint32_t from)
{
	uint32_t best = op->in[from];
	for (uint32_t k = from + 1; k < op->n_in; k++) {
		uint32_t u = op->in[k];
		const struct ex_tensor *y = &ex->t[u];
		if (y->state == TS_RECOMPUTE && !y->drop_deferred &&
		    ex->wl->tensors[u].producer < ex->wl->tensors[best].producer)
			best = u;
	}
	return best;
}

/* Make the inputs of the top item resident. */
static enum step_rc ensure_inputs(struct ex *ex)
{
	struct ex_work *w = &ex->stack[ex->n_stack - 1];
	const struct wl_op *op = &ex->wl->ops[w->op];
	/* before_access once per input of the item, all of them before any
	 * state is acted on: a back-access sees SWAPPING_IN, OUT or
	 * RECOMPUTE as the op finds it when it is prepared */
	if (w->seen < op->n_in && ex->po->before_access) {
		const struct ex_tensor *x = &ex->t[op->in[w->seen]];
		struct ex_access a = {
			.tensor = op->in[w->seen], .op = w->op, .write = false,
			.recompute = w->recompute,
			.count = x->access_count + 1,
			.orig = x->orig_count + !w->recompute,
			.time = ev_now(&ex->evq)};
		w->seen++;
		ex->po->before_access(ex->pol, ex, &a);
		if (ex->rs == RS_DONE)
			return S_STOP;
		/* the hook may have pushed work or swapped the input in;
		 * the next step sees the next input */
		return S_NEXT;
	}
	bool on_host = ex->on_host_op && ex->on_host_op[w->op];
	for (uint32_t i = 0; on_host && i < op->n_in; i++) {
		/* an op on the host CPU reads host copies: each input is a
		 * whole-run tensor (its host-side state is the policy's:
		 * ex_host_resident, or a device tensor it mirrors on the
		 * host, as ZeRO-Offload's fp32 master of an fp16 parameter)
		 * or has a host copy, made or under way */
		uint32_t t = op->in[i];
		const struct ex_tensor *x = &ex->t[t];
		if (!whole_run(ex, t) && !x->host && !x->copying_out) {
			stop_error(ex,
				   "op %s runs on the host and reads %s, which "
				   "has no host copy (state %s)",
				   op->name, tname(ex, t),
				   ex_state_names[x->state]);
			return S_STOP;
		}
	}
	for (uint32_t i = 0; !on_host && i < op->n_in; i++) {
		uint32_t t = op->in[i];
		struct ex_tensor *x = &ex->t[t];
		uint32_t pr = ex->wl->tensors[t].producer;
		if (pr != WL_NONE && ex->on_host_op && ex->on_host_op[pr]) {
			stop_error(ex,
				   "op %s runs on the device and reads %s, "
				   "written by %s on the host (ex_run_on_host)",
				   op->name, tname(ex, t),
				   ex->wl->ops[pr].name);
			return S_STOP;
		}
		if (x->on_host) {
			stop_error(ex,
				   "op %s runs on the device and reads %s, "
				   "which lives in host memory "
				   "(ex_host_resident): only an op on the "
				   "host may",
				   op->name, tname(ex, t));
			return S_STOP;
		}
		switch ((enum ex_state)x->state) {
		case TS_IN:
		case TS_SWAPPING_OUT:
			continue;
		case TS_SWAPPING_IN:
			/* a prefetch too late: counted once per access (after
			 * the wait the copy is done and t is IN) */
			ex->cur->n_late_in++;
			ex_wait(ex, x->ready);
			return S_NEXT;
		case TS_OUT: {
			eng_event ev = ex_swap_in(ex, t, ENG_EVENT_NONE);
			if (ev == ENG_EVENT_NONE)
				return alloc_failed(ex, t,
						    ex->wl->tensors[t].bytes);
			ex_wait(ex, ev);
			return S_NEXT;
		}
		case TS_RECOMPUTE:
			if (x->drop_deferred) {
				/* block still held for readers: keep it */
				undo_drop(ex, t);
				continue;
			}
			t = first_regen(ex, op, i);
			if (push(ex, ex->wl->tensors[t].producer, true) < 0)
				return S_STOP;
			return S_NEXT;
		case TS_NONE:
		default:
			stop_error(ex,
				   "op %s reads %s, which is not alive (freed "
				   "or never produced)",
				   op->name, tname(ex, t));
			return S_STOP;
		}
	}
	for (uint32_t i = 0; i < op->n_in; i++)
		ex->t[op->in[i]].held++; /* resident until the kernel is done */
	w->phase = PH_ALLOC;
	return S_NEXT;
}

/* Should the block allocated now for t go at the high end? In graph mode
 * an in-place op's output takes over its input's block (alloc_outputs),
 * so a block lives as every tensor of an in-place chain in turn: t, then
 * the output of t's last reader when that reader writes in place over it
 * (ReLU over a convolution's or batch norm's output), and so on. The
 * block goes high when any tensor of the chain is marked high -- vDNN++
 * IV-B places "layer's input which is chosen to be offloaded" at the
 * highest address, and in graph mode that input's storage is the one
 * allocated for the head of its chain. The chain is followed as far as
 * the take-over is certain from the graph alone (the last reader writes
 * in place on in[0], an output no larger, no release point). */
static bool block_high(const struct ex *ex, uint32_t t)
{
	const struct wl_workload *wl = ex->wl;
	for (;;) {
		const struct wl_tensor *x = &wl->tensors[t];
		if (ex->t[t].high)
			return true;
		if (x->n_readers == 0 || x->release_after != WL_NONE ||
		    persistent(ex, t))
			return false;
		/* its last reader (readers are in issue order): the earlier
		 * ones are done when it allocates, so it takes t over */
		const struct wl_op *r = &wl->ops[x->readers[x->n_readers - 1]];
		if (!r->inplace || r->n_in == 0 || r->in[0] != t ||
		    r->n_out == 0 || wl->tensors[r->out[0]].bytes > x->bytes)
			return false;
		t = r->out[0]; /* produced later: the walk ends */
	}
}

static bool wants_block(const struct ex *ex, const struct ex_work *w,
			uint32_t t)
{
	const struct ex_tensor *x = &ex->t[t];
	if (w->recompute)
		return x->state == TS_RECOMPUTE && !x->drop_deferred &&
		       x->h == MEM_HANDLE_NONE;
	return x->state == TS_NONE && x->h == MEM_HANDLE_NONE;
}

/* The workspace bytes of work item w under its algorithm. */
static uint64_t work_ws(const struct ex *ex, const struct ex_work *w)
{
	return ex->n_algos[w->op] ? ex->algos[w->op][w->algo].workspace
				  : ex->wl->ops[w->op].workspace;
}

/* Allocate outputs and workspace of the top item. */
static enum step_rc alloc_outputs(struct ex *ex)
{
	struct ex_work *w = &ex->stack[ex->n_stack - 1];
	const struct wl_op *op = &ex->wl->ops[w->op];
	bool on_host = ex->on_host_op && ex->on_host_op[w->op];
	for (uint32_t i = 0; i < op->n_out; i++) {
		uint32_t t = op->out[i];
		struct ex_tensor *y = &ex->t[t];
		if (!wants_block(ex, w, t))
			continue;
		if (on_host) {
			/* an op on the host writes host scratch (ex.h,
			 * ex_run_on_host): no device block, no host bytes
			 * charged (a pageable copy of none); host ops read
			 * it, its last reader ends it (settle_one) */
			y->host = true;
			y->pageable = true;
			set_state(ex, y, TS_OUT);
			continue;
		}
		if (i == 0 && op->inplace && !w->recompute && op->n_in > 0) {
			uint32_t s = op->in[0];
			struct ex_tensor *x = &ex->t[s];
			if (persistent(ex, s) && persistent(ex, t) &&
			    !whole_run(ex, s) && x->state == TS_IN &&
			    ex->wl->tensors[s].bytes >=
				    ex->wl->tensors[t].bytes) {
				/* held blobs in place (Caffe's top ==
				 * bottom): one block serves both for the
				 * rest of the run; neither is ever freed */
				y->h = x->h;
				set_state(ex, y, TS_IN);
				observe_block(ex, true, t, s,
					      ex->wl->tensors[t].bytes, y->h,
					      false);
				continue;
			}
			if (!persistent(ex, s) && x->state == TS_IN &&
			    x->uses_left == 1 && x->lineage == 0 &&
			    x->inflight == 0 && !x->copying_out && !x->host &&
			    ex->wl->tensors[s].bytes >=
				    ex->wl->tensors[t].bytes) {
				/* the output takes over the input's block */
				y->h = x->h;
				x->h = MEM_HANDLE_NONE;
				/* and counts it for its own kind */
				ex->kind[block_kind(ex, s)] -= x->dev_bytes;
				ex->kind[block_kind(ex, t)] += x->dev_bytes;
				y->dev_bytes = x->dev_bytes;
				x->dev_bytes = 0;
				set_state(ex, x, TS_NONE);
				observe_block(ex, true, t, s,
					      ex->wl->tensors[t].bytes, y->h,
					      false);
				continue;
			}
		}
		if (dev_alloc(ex, t, ex->wl->tensors[t].bytes,
			      w->recompute ? y->high : block_high(ex, t),
			      &y->h) < 0)
			return alloc_failed(ex, t, ex->wl->tensors[t].bytes);
		w->tries = 0;
	}
	uint64_t ws = work_ws(ex, w);
	/* a workspace that does not fit is the policy's decision: it may
	 * make room, wait, or take the cheaper algorithm (EX_FALLBACK) */
	if (ws > 0 && w->ws == MEM_HANDLE_NONE &&
	    dev_alloc(ex, WL_NONE, ws, false, &w->ws) < 0)
		return alloc_failed(ex, WL_NONE, ws);
	w->phase = PH_RUNNING;
	return S_NEXT;
}

static void kernel_done(void *obj, uint64_t arg);

static void on_host_ready(void *obj, uint64_t arg)
{
	struct ex *ex = obj;
	(void)arg;
	if (ex->rs != RS_WAIT_HOST)
		return; /* stopped meanwhile */
	ex->rs = RS_IDLE;
	step(ex);
}

/* Whether op o's kernel under algorithm a is timed by the profile
 * (hw_kernel_time, or a conv_algos: entry bound to it), whose calibrated
 * times held the host's launch cost (hw.h), rather than by a time the
 * workload recorded (a trace's TIME, a file's time: or algorithm times),
 * which is the op's whole cost as recorded, as it always was. */
static bool profile_timed(const struct ex *ex, uint32_t o, uint32_t a)
{
	const struct wl_op *op = &ex->wl->ops[o];
	if (op->time > 0)
		return false;
	if (ex->n_algos[o] == 0 || ex->algos[o] != op->algos)
		return true; /* the model's time, or a bound measured list */
	return !(ex->algos[o][a].time > 0);
}

/* The host launches the top item's kernel (the host thread, above):
 * S_NEXT when it can be issued now, S_BLOCKED until the host is done
 * launching it (on_host_ready steps again). */
static enum step_rc host_launch(struct ex *ex)
{
	sim_time_t now = ev_now(&ex->evq);
	if (ex->launched == ex->n_stack) {
		ex->launched = 0;
		return S_NEXT;
	}
	if (!ex->runahead)
		host_sync(ex, now); /* it waited for the last kernel */
	const struct ex_work *w = &ex->stack[ex->n_stack - 1];
	sim_time_t from = ex->host_t,
		   h = profile_timed(ex, w->op, w->algo) ? ex->cfg.hw->host_launch
							 : 0;
	ex->host_t = sim_time_add(from, h);
	ex->cur->host_issue = sim_time_add(ex->cur->host_issue, h);
	const struct ex_observer *o = ex->cfg.obs;
	if (o && o->host && h > 0)
		o->host(o->obj, w->op, from, ex->host_t);
	if (ex->host_t <= now)
		return S_NEXT;
	/* the device waits for the host: the executor issues a kernel onto
	 * an idle compute stream (queue waits ahead of it are not the
	 * host's) */
	if (eng_q_idle(&ex->eng, ENG_COMPUTE))
		ex->cur->host_bound =
			sim_time_add(ex->cur->host_bound, ex->host_t - now);
	ex->launched = ex->n_stack;
	ex->rs = RS_WAIT_HOST;
	if (ev_at(&ex->evq, ex->host_t, on_host_ready, ex, 0) < 0)
		return S_STOP; /* past the clock's limit: ex_run stops */
	return S_BLOCKED;
}

static void issue(struct ex *ex)
{
	struct ex_work *w = &ex->stack[ex->n_stack - 1];
	const struct wl_op *op = &ex->wl->ops[w->op];
	bool on_host = ex->on_host_op && ex->on_host_op[w->op];
	sim_time_t d = on_host ? ex->host_op[w->op]
			       : op_time_algo(ex, w->op, w->algo);
	enum eng_q q = on_host ? ENG_HOST : ENG_COMPUTE;
	if (on_host) {
		/* the host reads what the D2H engine is still copying only
		 * once it has arrived (the engine is FIFO: a mark behind
		 * the queued copies) */
		bool copying = false;
		for (uint32_t i = 0; i < op->n_in; i++)
			copying |= ex->t[op->in[i]].copying_out;
		if (copying) {
			wait_dep(ex, ENG_HOST, eng_record(&ex->eng, ENG_D2H));
			if (ex->rs == RS_DONE)
				return; /* stop_error: out of memory */
		}
		ex->cur->host_busy = sim_time_add(ex->cur->host_busy, d);
	} else {
		/* the kernel reads what the H2D engine brought in: its
		 * latest copy's event (the engine is FIFO), fired by now
		 * (step() waited for any pending one), for the schedule */
		eng_event in = ENG_EVENT_NONE;
		for (uint32_t i = 0; i < op->n_in; i++) {
			eng_event r = ex->t[op->in[i]].ready;
			if (r != ENG_EVENT_NONE && (in == ENG_EVENT_NONE || r > in))
				in = r;
		}
		wait_dep(ex, ENG_COMPUTE, in);
	}
	eng_event ev = eng_event_new(&ex->eng, q);
	ex->k_running = on_host ? ENG_EVENT_NONE : ev;
	for (uint32_t i = 0; i < op->n_in; i++)
		ex->t[op->in[i]].inflight++;
	for (uint32_t i = 0; i < op->n_out; i++) {
		uint32_t t = op->out[i];
		struct ex_tensor *y = &ex->t[t];
		if (y->state == TS_RECOMPUTE && y->drop_deferred) {
			undo_drop(ex, t); /* never left the device */
		} else if (y->h != MEM_HANDLE_NONE &&
			   (y->state == TS_NONE || y->state == TS_RECOMPUTE)) {
			if (y->state == TS_RECOMPUTE)
				lineage_release(ex, t);
			set_state(ex, y, TS_IN);
			y->written = ev;
		}
	}
	if (w->recompute) {
		ex->cur->recompute = sim_time_add(ex->cur->recompute, d);
		ex->cur->recompute_flops += op->flops;
		ex->cur->n_recompute++;
	}
	ex->cur->n_kernels += !on_host;
	struct eng_item it = {.type = ENG_KERNEL, .q = q,
			      .duration = d, .wait = ENG_EVENT_NONE,
			      .signal = ev, .done = kernel_done, .obj = ex,
			      .arg = w->op,
			      /* host work is named by a tensor (sched.c,
			       * trace.c): the op's first input */
			      .tag = on_host ? op->in[0] : w->op,
			      .kind = on_host ? EX_KIND_HOST_WORK
					      : w->recompute};
	ex->rs = RS_KERNEL;
	struct ex_kernel kinfo = {.op = w->op, .recompute = w->recompute,
			      .algo = ex->n_algos[w->op]
					      ? ex->algos[w->op][w->algo].name
					      : "",
			      .workspace = work_ws(ex, w), .in = op->in,
			      .n_in = op->n_in, .out = op->out,
			      .n_out = op->n_out};
	if (ex->cfg.obs && ex->cfg.obs->issue) {
		kinfo.out = ex->kout;
		kinfo.n_out = 0;
		for (uint32_t i = 0; i < op->n_out; i++)
			if (ex->t[op->out[i]].h != MEM_HANDLE_NONE)
				ex->kout[kinfo.n_out++] = op->out[i];
	}
	ex->issuing = &kinfo;
	int irc = eng_issue(&ex->eng, &it);
	ex->issuing = NULL;
	if (irc < 0) {
		stop_error(ex, "out of host memory for the simulation");
		return;
	}
	bool rec = w->recompute;
	uint32_t o = w->op;
	sim_time_t now = ev_now(&ex->evq);
	for (uint32_t k = 0; k < op->n_in + op->n_out && ex->rs != RS_DONE;
	     k++) {
		bool wr = k >= op->n_in;
		uint32_t t = wr ? op->out[k - op->n_in] : op->in[k];
		struct ex_tensor *x = &ex->t[t];
		x->access_count++;
		x->orig_count += !rec;
		if (ex->po->on_access) {
			struct ex_access a = {.tensor = t, .op = o, .write = wr,
					      .recompute = rec,
					      .count = x->access_count,
					      .orig = x->orig_count,
					      .time = now};
			ex->po->on_access(ex->pol, ex, &a);
		}
	}
}

static void kernel_done(void *obj, uint64_t arg)
{
	struct ex *ex = obj;
	if (ex->rs == RS_DONE)
		return;
	assert(ex->rs == RS_KERNEL && ex->n_stack > 0);
	struct ex_work w = ex->stack[--ex->n_stack];
	const struct wl_op *op = &ex->wl->ops[w.op];
	(void)arg;
	if (ex->k_running != ENG_EVENT_NONE)
		ex->k_done = ex->k_running; /* before its frees and hooks */
	ex->k_running = ENG_EVENT_NONE;
	if (w.ws != MEM_HANDLE_NONE)
		dev_free(ex, WL_NONE, work_ws(ex, &w), &w.ws);
	for (uint32_t i = 0; i < op->n_in; i++) {
		uint32_t t = op->in[i];
		ex->t[t].inflight--;
		ex->t[t].held--;
		if (!w.recompute) {
			bool first = true; /* count repeated inputs once */
			for (uint32_t k = 0; k < i; k++)
				first &= op->in[k] != t;
			if (first && ex->t[t].uses_left > 0)
				ex->t[t].uses_left--;
		}
	}
	for (uint32_t i = 0; i < op->n_in; i++)
		settle(ex, op->in[i]);
	for (uint32_t i = 0; i < op->n_out; i++)
		settle(ex, op->out[i]);
	if (!w.recompute) /* the extra use a release point counts */
		for (uint32_t k = ex->rel_at[w.op]; k < ex->rel_at[w.op + 1];
		     k++) {
			uint32_t t = ex->rel_list[k];
			if (ex->t[t].uses_left > 0)
				ex->t[t].uses_left--;
			settle(ex, t);
		}
	ex->rs = RS_IDLE;
	if (!w.recompute) {
		ex->next_op++;
		if (ex->po->after_op)
			ex->po->after_op(ex->pol, ex, op);
	}
	if (ex->rs == RS_IDLE)
		step(ex);
}

static void iter_begin(struct ex *ex);
static void iter_end(struct ex *ex);

static void step(struct ex *ex)
{
	while (ex->rs == RS_IDLE) {
		if (ex->drv_n > 0) { /* the host is in driver calls */
			block(ex, RS_WAIT_DRV, ST_STALL_ALLOC);
			return; /* drv_kick wakes it */
		}
		while (ex->n_wait > 0) { /* the host waits, in order */
			eng_event ev = ex->wait[0];
			if (!eng_event_done(&ex->eng, ev)) {
				enum eng_q q = eng_event_src(&ex->eng, ev);
				/* the host CPU's (de)compression is part of
				 * the offload pipeline: a D2H stall */
				block(ex, RS_WAIT_EVENT,
				      q == ENG_H2D			? ST_STALL_H2D
				      : q == ENG_D2H || q == ENG_HOST ? ST_STALL_D2H
								      : ST_STALL_MEMORY);
				return;
			}
			/* done already: the host waited until it fired */
			if (ev != ENG_EVENT_NONE)
				host_sync(ex, ex->eng.evt[ev].when);
			memmove(ex->wait, ex->wait + 1,
				--ex->n_wait * sizeof *ex->wait);
		}
		if (ex->n_stack == 0) {
			if (ex->next_op < ex->wl->n_ops) {
				if (push(ex, ex->next_op, false) < 0)
					return;
			} else {
				iter_end(ex);
				continue;
			}
		}
		struct ex_work *w = &ex->stack[ex->n_stack - 1];
		enum step_rc rc = S_NEXT;
		switch ((enum ex_phase)w->phase) {
		case PH_BEGIN: {
			size_t k = ex->n_stack - 1;
			w->phase = PH_INPUTS;
			if (ex->po->before_op)
				ex->po->before_op(ex->pol, ex,
						  &ex->wl->ops[w->op]);
			/* the hook may have picked an algorithm for this op
			 * (and pushed items, moving the stack) */
			ex->stack[k].algo = ex->algo[ex->stack[k].op];
			break;
		}
		case PH_INPUTS:
			if (w->recompute) {
				/* nothing left to regenerate: skip */
				const struct wl_op *op = &ex->wl->ops[w->op];
				bool need = false;
				for (uint32_t i = 0; i < op->n_out; i++)
					need |= ex->t[op->out[i]].state ==
						TS_RECOMPUTE;
				if (!need) {
					ex->n_stack--;
					break;
				}
			}
			rc = ensure_inputs(ex);
			break;
		case PH_ALLOC:
			rc = alloc_outputs(ex);
			break;
		case PH_RUNNING:
			rc = host_launch(ex);
			if (rc == S_NEXT)
				issue(ex);
			break;
		}
		if (rc != S_NEXT)
			return;
	}
}

/* ---- iterations ------------------------------------------------------------ */

static int alloc_resident(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	/* an input a policy placed high (vDNN++ offloads the image of the
	 * first convolution) is allocated high too (issue 29: it was
	 * always low) */
	if (dev_alloc(ex, t, bytes, block_high(ex, t), &x->h) < 0) {
		char why[160];
		snprintf(why, sizeof why,
			 "%s tensor does not fit in the device budget",
			 wl_kind_name(ex->wl->tensors[t].kind));
		stop_oom(ex, WL_NONE, t, bytes, why);
		return -1;
	}
	set_state(ex, x, TS_IN);
	return 0;
}

/* A whole-run tensor that lives in host memory (ex_host_resident): its
 * host bytes, or a host OOM, reported as a result like a device one. */
static int host_resident_alloc(struct ex *ex, uint32_t t)
{
	struct ex_tensor *x = &ex->t[t];
	uint64_t bytes = ex->wl->tensors[t].bytes;
	assert(x->on_host && x->h == MEM_HANDLE_NONE);
	if (host_charge(ex, bytes, false) < 0) {
		char why[160];
		snprintf(why, sizeof why,
			 "host memory exhausted: %s tensor kept on the host "
			 "does not fit in host.memory",
			 wl_kind_name(ex->wl->tensors[t].kind));
		stop_oom(ex, WL_NONE, t, bytes, why);
		return -1;
	}
	set_state(ex, x, TS_OUT);
	return 0;
}

static void iter_begin(struct ex *ex)
{
	const struct wl_workload *wl = ex->wl;
	ex->cur = &ex->st->iter[ex->iter];
	memset(ex->cur, 0, sizeof *ex->cur);
	ex->cur->start = ev_now(&ex->evq);
	/* the loss read at the end of the last iteration (the host thread) */
	host_sync(ex, ex->cur->start);
	ex->compute_busy0 = ex->eng.f[ENG_COMPUTE].busy;
	struct mem_stats ms;
	ex->dev.ops->stats(ex->dev.a, &ms);
	ex->reserved_peak0 = ms.peak_reserved;
	if (ex->cfg.obs && ex->cfg.obs->iter)
		ex->cfg.obs->iter(ex->cfg.obs->obj, ex->iter, false,
				  ex->cur->start);
	eng_reset_events(&ex->eng);
	ex->k_running = ex->k_done = ENG_EVENT_NONE;
	ex->next_op = 0;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		struct ex_tensor *x = &ex->t[t];
		x->ready = x->written = ENG_EVENT_NONE;
		x->access_count = x->orig_count = 0;
		if (persistent(ex, t))
			continue;
		assert(x->state == TS_NONE && x->h == MEM_HANDLE_NONE);
		x->uses_left = wl->tensors[t].n_readers +
			       (wl->tensors[t].release_after != WL_NONE);
		x->lineage = 0;
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (wl->tensors[t].kind == WL_INPUT &&
		    (!persistent(ex, t) || ex->t[t].h == MEM_HANDLE_NONE) &&
		    alloc_resident(ex, t) < 0)
			return;
	if (ex->po->iter_begin)
		ex->po->iter_begin(ex->pol, ex, ex->iter);
}

/* After the last warm-up iteration, a learning policy that has not
 * settled gets one more (pol_ops.settled; Capuchin 6.3.2: "we will
 * ignore those iterations and only measure the performance until the
 * policy is stable"), at most settle_max in all. ex->cfg is the run's
 * copy: its iterations and warmup grow together, so the steady window
 * keeps its length. */
static void settle_policy(struct ex *ex)
{
	if (!ex->po->settled || ex->cfg.settle_max <= 0 ||
	    ex->iter + 1 != ex->cfg.warmup)
		return;
	int from = ex->po->settled(ex->pol);
	ex->st->settled_iter = from;
	if (from >= 0 || ex->st->settle_extra >= ex->cfg.settle_max)
		return;
	ex->st->settle_extra++;
	ex->cfg.warmup++;
	ex->cfg.iterations++;
	ex->st->warmup = ex->cfg.warmup;
}

/* Whether the iteration just ended grew a pool: a cudaMallocHost (the
 * pinned pool never shrinks: n_host_alloc > 0 is growth), or a cudaMalloc
 * that took the device allocator's reservation above its earlier peak.
 * A cudaMalloc below the peak is not growth: the caching allocator's
 * free-and-retry (or a policy's emptyCache) gives segments back and takes
 * them again every iteration, a steady cost a real step pays too. */
static bool iter_grew(struct ex *ex)
{
	if (ex->cur->n_host_alloc > 0)
		return true;
	if (ex->cur->n_cuda_malloc == 0)
		return false;
	struct mem_stats ms;
	ex->dev.ops->stats(ex->dev.a, &ms);
	return ms.peak_reserved > ex->reserved_peak0;
}

/* Warm-up until the pools stop growing. PyTorch keeps what it allocated
 * from the driver: the device caching allocator its segments
 * (c10/cuda/CUDACachingAllocator.cpp, as sim/mem_caching.c models it:
 * cudaFree only in release_cached_blocks, on emptyCache or a failed
 * allocation's retry) and the host one its pinned blocks (aten/src/ATen/cuda/
 * CachingHostAllocator.h: "A caching allocator for CUDA host allocations
 * (pinned memory) ... re-uses freed pinned (page-locked) memory
 * allocations. This avoids device synchronizations due to cudaFreeHost
 * calls."). So cudaMalloc and cudaMallocHost -- 0.6 to 1.1 s per GiB
 * pinned on the H100 -- are paid in the steps that grow the pools and
 * not after: the first save_on_cpu(pin_memory=True) step took 2964 ms on
 * ResNet-50 against 226 ms for every later one (results/validation/
 * H100-80GB-HBM3/README.md, "Measured again on a GPU with the host
 * model"). So the measured window starts after the last iteration that
 * grew a pool: when a measured iteration grows one, it and those before
 * it become warm-up and as many more iterations run (the steady window
 * keeps its length, as settle_policy's), at most grow_max added in all;
 * grow_capped records that the cap left growth in the measured window. */
static void settle_pools(struct ex *ex)
{
	if (!ex->st->grow_asked || ex->st->grow_capped ||
	    ex->iter < ex->cfg.warmup || !iter_grew(ex))
		return;
	int extra = ex->iter + 1 - ex->cfg.warmup;
	if (ex->st->grow_extra + extra > ex->cfg.grow_max) {
		ex->st->grow_capped = true;
		return;
	}
	ex->st->grow_extra += extra;
	ex->cfg.warmup += extra;
	ex->cfg.iterations += extra;
	ex->st->warmup = ex->cfg.warmup;
}

static void iter_end(struct ex *ex)
{
	const struct wl_workload *wl = ex->wl;
	/* drain the copy engines and the host CPU's (de)compression: the
	 * host synchronises at the iteration's end, so leftover work is a
	 * stall of this iteration */
	for (int q = ENG_HOST; q >= ENG_H2D; q--) {
		if (!eng_q_idle(&ex->eng, (enum eng_q)q)) {
			ex_wait(ex, eng_record(&ex->eng, (enum eng_q)q));
			return; /* step() blocks on it and comes back */
		}
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		again_release(ex, t, UINT64_MAX);
		if (persistent(ex, t) || ex->t[t].state == TS_NONE)
			continue;
		/* alive past the iteration: a workload whose outputs are never
		 * read is fine (freed at the producer); anything else is an
		 * engine or policy bug */
		stop_error(ex, "tensor %s still %s at the end of iteration %d",
			   wl->tensors[t].name, ex_state_names[ex->t[t].state],
			   ex->iter);
		return;
	}
	struct st_iter *s = ex->cur;
	s->time = ev_now(&ex->evq) - s->start;
	s->compute_busy = ex->eng.f[ENG_COMPUTE].busy - ex->compute_busy0;
	ex->st->n_iter = ex->iter + 1;
	if (ex->cfg.obs && ex->cfg.obs->iter)
		ex->cfg.obs->iter(ex->cfg.obs->obj, ex->iter, true,
				  ev_now(&ex->evq));
	if (ex->po->iter_end)
		ex->po->iter_end(ex->pol, ex, ex->iter, s);
	if (ex->rs == RS_DONE)
		return;
	settle_pools(ex);
	settle_policy(ex);
	if (++ex->iter >= ex->cfg.iterations) {
		ex->rs = RS_DONE;
		return;
	}
	iter_begin(ex);
}

/* ---- the run ----------------------------------------------------------------- */

static void ex_free(struct ex *ex)
{
	if (!ex)
		return;
	mem_dev_close(&ex->dev);
	eng_fini(&ex->eng);
	ev_fini(&ex->evq);
	free(ex->t);
	free(ex->rerun);
	free(ex->algo);
	free(ex->algos);
	free(ex->n_algos);
	free(ex->bound);
	free(ex->gemm_time);
	free(ex->rel_at);
	free(ex->rel_list);
	free(ex->stack);
	free(ex->drv);
	free(ex->walk);
	free(ex->unref);
	free(ex->left_in);
	free(ex->kout);
	free(ex->host_op);
	free(ex->on_host_op);
	free(ex);
}

/* Build rel_at/rel_list: the tensors of each release point (counting
 * sort by op). -1 when out of memory. */
static int index_release_points(struct ex *ex)
{
	const struct wl_workload *wl = ex->wl;
	uint32_t n = 0;
	ex->rel_at = calloc((size_t)wl->n_ops + 1, sizeof *ex->rel_at);
	if (!ex->rel_at)
		return -1;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		uint32_t o = wl->tensors[t].release_after;
		if (o != WL_NONE && o < wl->n_ops) {
			ex->rel_at[o + 1]++;
			n++;
		}
	}
	for (uint32_t o = 0; o < wl->n_ops; o++)
		ex->rel_at[o + 1] += ex->rel_at[o];
	ex->rel_list = calloc(n ? n : 1, sizeof *ex->rel_list);
	if (!ex->rel_list)
		return -1;
	uint32_t *fill = calloc((size_t)wl->n_ops + 1, sizeof *fill);
	if (!fill)
		return -1;
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		uint32_t o = wl->tensors[t].release_after;
		if (o != WL_NONE && o < wl->n_ops)
			ex->rel_list[ex->rel_at[o] + fill[o]++] = t;
	}
	free(fill);
	return 0;
}

const char *ex_allocator_name(const char *asked, const char *framework,
			      const char *pol_alloc)
{
	if (pol_alloc)
		return pol_alloc;
	if (!asked || strcmp(asked, "framework") == 0)
		return wl_framework_allocator(framework);
	return asked;
}

int ex_run(const struct ex_cfg *cfg, struct st_run *out, gms_err *err)
{
	memset(out, 0, sizeof *out);
	if (!cfg->wl || !cfg->wl->finalized)
		return gms_errf(err, "workload not finalized");
	if (cfg->iterations < 1 || cfg->warmup < 0 ||
	    cfg->warmup >= cfg->iterations)
		return gms_errf(err,
				"iterations must be >= 1 and warmup < "
				"iterations (got %d, %d)",
				cfg->iterations, cfg->warmup);
	const struct hw_profile *hw = cfg->hw;
	if (hw_math_check(hw, cfg->wl->math, err) < 0)
		return -1;
	uint64_t avail = hw->capacity - hw->reserved;
	uint64_t budget = cfg->budget ? cfg->budget : avail;
	if (budget > avail)
		return gms_errf(err,
				"budget %llu bytes exceeds the %s's %llu "
				"usable bytes",
				(unsigned long long)budget, hw->name,
				(unsigned long long)avail);
	struct ex *ex = calloc(1, sizeof *ex);
	if (!ex)
		return gms_errf(err, "out of memory");
	ex->cfg = *cfg;
	ex->wl = cfg->wl;
	ex->pol = cfg->pol;
	ex->po = cfg->pol->ops;
	ex->st = out;
	ex->k_running = ex->k_done = ENG_EVENT_NONE;
	ex->runahead = cfg->host == EX_HOST_RUNAHEAD ||
		       (cfg->host == EX_HOST_FRAMEWORK &&
			wl_framework_runahead(cfg->wl->framework));
	ev_init(&ex->evq);
	out->warmup = cfg->warmup;
	out->batch = cfg->wl->batch;
	out->settled_iter = -1;
	out->settle_asked = cfg->settle_max > 0 && cfg->warmup > 0 &&
			    ex->po->settled;
	out->grow_asked = cfg->grow_max > 0 && cfg->warmup > 0;
	if (cfg->settle_max < 0 || cfg->settle_max > EX_SETTLE_MAX) {
		ex_free(ex);
		return gms_errf(err, "settle_max must be in [0, %d] (got %d)",
				EX_SETTLE_MAX, cfg->settle_max);
	}
	if (cfg->grow_max < 0 || cfg->grow_max > EX_GROW_MAX) {
		ex_free(ex);
		return gms_errf(err, "grow_max must be in [0, %d] (got %d)",
				EX_GROW_MAX, cfg->grow_max);
	}
	out->iter = calloc((size_t)cfg->iterations +
				   (size_t)(out->settle_asked ? cfg->settle_max : 0) +
				   (size_t)(out->grow_asked ? cfg->grow_max : 0),
			   sizeof *out->iter);
	ex->t = calloc(cfg->wl->n_tensors ? cfg->wl->n_tensors : 1,
		       sizeof *ex->t);
	ex->algo = calloc(cfg->wl->n_ops ? cfg->wl->n_ops : 1,
			  sizeof *ex->algo);
	ex->algos = calloc(cfg->wl->n_ops ? cfg->wl->n_ops : 1,
			   sizeof *ex->algos);
	ex->n_algos = calloc(cfg->wl->n_ops ? cfg->wl->n_ops : 1,
			     sizeof *ex->n_algos);
	ex->walk = calloc((size_t)cfg->wl->n_tensors + 1, sizeof *ex->walk);
	ex->unref = calloc((size_t)cfg->wl->n_tensors + 1, sizeof *ex->unref);
	ex->left_in = calloc((size_t)cfg->wl->n_tensors + 1,
			     sizeof *ex->left_in);
	struct mem_cfg mc = {.budget = budget, .pool_size = cfg->pool_size};
	if (!out->iter || !ex->t || !ex->algo || !ex->walk || !ex->unref ||
	    !ex->left_in ||
	    !ex->algos || !ex->n_algos || index_release_points(ex) < 0 ||
	    bind_gemms(ex) < 0 || bind_conv_algos(ex) < 0 || eng_init(&ex->eng, &ex->evq, hw) < 0) {
		ex_free(ex);
		return gms_errf(err, "out of memory");
	}
	const char *alloc = ex_allocator_name(
		cfg->allocator, cfg->wl->framework,
		ex->po->allocator ? ex->po->allocator(ex->pol) : NULL);
	snprintf(out->allocator, sizeof out->allocator, "%s", alloc);
	if (mem_dev_open(&ex->dev, alloc, &mc, err) < 0) {
		ex_free(ex);
		return -1;
	}
	ex->eng.on_event = on_event;
	ex->eng.on_event_obj = ex;
	if (cfg->obs && cfg->obs->span) {
		ex->eng.on_span = cfg->obs->span;
		ex->eng.on_span_obj = cfg->obs->obj;
	}
	if (cfg->obs && cfg->obs->issue) {
		uint32_t most = 1;
		for (uint32_t o = 0; o < cfg->wl->n_ops; o++)
			if (cfg->wl->ops[o].n_out > most)
				most = cfg->wl->ops[o].n_out;
		ex->kout = calloc(most, sizeof *ex->kout);
		if (!ex->kout) {
			ex_free(ex);
			return gms_errf(err, "out of memory");
		}
		ex->eng.on_issue = observe_issue;
		ex->eng.on_issue_obj = ex;
	}
	if (cfg->obs && cfg->obs->run)
		cfg->obs->run(cfg->obs->obj, alloc, budget);
	ex->host.capacity = hw->host_pinned;
	for (uint32_t t = 0; t < cfg->wl->n_tensors; t++)
		ex->t[t] = (struct ex_tensor){.h = MEM_HANDLE_NONE,
					      .ready = ENG_EVENT_NONE,
					      .written = ENG_EVENT_NONE};
	int rc = 0;
	struct st_iter setup = {0};
	ex->cur = &setup; /* actions during planning count nowhere */
	if (ex->po->plan && ex->po->plan(ex->pol, ex, err) < 0) {
		gms_err_prefix(err, "policy %s", ex->po->name);
		snprintf(out->error, sizeof out->error, "%s", err->msg);
		out->failed = true;
		rc = -1;
		goto done;
	}
	for (uint32_t t = 0; t < cfg->wl->n_tensors; t++) {
		if (!whole_run(ex, t))
			continue;
		if (ex->t[t].on_host) {
			if (host_resident_alloc(ex, t) < 0)
				goto done;
		} else if (alloc_resident(ex, t) < 0) {
			goto done;
		}
	}
	if (ex->host_reserved && host_charge(ex, ex->host_reserved, false) < 0) {
		stop_oom(ex, WL_NONE, WL_NONE, ex->host_reserved,
			 "host memory exhausted: the policy's host buffers "
			 "(ex_host_reserve) do not fit in host.memory");
		goto done;
	}
	ex->host_reserve_held = ex->host_reserved;
	ex->setup_done = true;
	iter_begin(ex);
	if (ex->rs == RS_IDLE)
		step(ex);
	struct ev e;
	while (ex->rs != RS_DONE && !ex->evq.bad) {
		if (!ev_pop(&ex->evq, &e)) {
			/* nothing left to happen, yet not done */
			if (ex->rs == RS_WAIT_MEMORY && ex->n_stack) {
				struct ex_work *w = &ex->stack[ex->n_stack - 1];
				stop_oom(ex, w->op, ex->want_tensor,
					 ex->want_bytes,
					 "waiting for memory that nothing in "
					 "flight will release");
			} else {
				stop_error(ex, "executor stalled (state %d)",
					   (int)ex->rs);
			}
			break;
		}
		e.fn(e.obj, e.arg);
		out->events++;
	}
	if (ex->eng.oom)
		stop_error(ex, "out of host memory for the simulation");
	if (ex->evq.bad && !out->failed) {
		/* an event was refused (ev.h): a duration past the clock's
		 * limit, SIM_TIME_LIMIT. The run stops as failed even when
		 * it had reached RS_DONE: its figures would be wrong. */
		char why[sizeof out->error - 40];
		ev_bad_text(&ex->evq, why, sizeof why);
		snprintf(out->error, sizeof out->error, "iteration %d: %s",
			 ex->iter, why);
		out->failed = true;
		ex->rs = RS_DONE;
	}
	if (out->failed) {
		gms_errf(err, "%s", out->error);
		rc = -1;
	}
done:
	ex->dev.ops->stats(ex->dev.a, &out->mem);
	if (cfg->obs && cfg->obs->end)
		cfg->obs->end(cfg->obs->obj, ex->dev.ops, ex->dev.a,
			      ev_now(&ex->evq));
	out->frag_at_peak = ex->frag.at_peak;
	out->frag_max = ex->frag.max;
	assert(out->frag_max >= out->frag_at_peak);
	out->pinned_peak = ex->host.peak;
	out->host_peak = ex->host_peak;
	st_finish(out);
	ex_free(ex);
	return rc;
}
