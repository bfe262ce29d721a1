/*
 * offload.c - activation offload: every tensor saved for backward goes to
 * host memory when it is saved and comes back when it is unpacked (issue
 * 32; docs/offload.md). Two implementations, as practitioners run them:
 *
 * overlap: false -- PyTorch's torch.autograd.graph.save_on_cpu
 * (torch/autograd/graph.py, class save_on_cpu):
 *
 *     def pack_to_cpu(tensor):
 *         if not pin_memory:
 *             return (tensor.device, tensor.cpu())
 *         packed = torch.empty(tensor.size(), ..., pin_memory=...)
 *         packed.copy_(tensor)
 *         return (tensor.device, packed)
 *     def unpack_from_cpu(packed):
 *         device, tensor = packed
 *         return tensor.to(device, non_blocking=pin_memory)
 *
 *   `tensor.cpu()` and `packed.copy_(tensor)` (no non_blocking) are
 *   synchronous device-to-host copies on the current (compute) stream:
 *   the host waits for the producing kernel and the copy, and no kernel
 *   runs meanwhile. Here: once the kernel that saves a tensor completes,
 *   the tensor is copied out (ex_swap_out) and the host waits for the
 *   copy (ex_wait, a D2H stall). The device block is the autograd
 *   graph's no longer: it is freed once the forward pass has no further
 *   reader (after its last forward reader; at once when it has none).
 *   The unpack is `tensor.to(device)` on the compute stream: the kernel
 *   that reads it waits for the host-to-device copy, which is the
 *   executor's on-demand swap-in (an H2D stall). pin_memory: false (the
 *   default of save_on_cpu) copies at the profile's bw_pageable, true at
 *   bw_pinned (sim/hw.h; every shipped profile states where its pageable
 *   figure comes from).
 *
 * overlap: true -- the stream-overlapped variant of torchtune's
 * training/_activation_offloading.py, class OffloadActivations (the same
 * class is in torchao and Hugging Face TRL), defaults use_pin_memory=True,
 * use_streams=True, min_offload_size=1024, max_fwd_stash_size=5:
 *
 *   pack: "Check if tensor is too small: if num_bytes <
 *   self.min_tensor_size_bytes" -> kept on the device; parameters are
 *   never offloaded ("Check if tensor is a parameter or buffer"); else
 *   "self.s1.wait_stream(self.s0)" and the copy `cpu_tensor.copy_(
 *   activation, non_blocking=True)` on the second stream s1 (the D2H
 *   engine here, behind the producing kernel), and "Stash to keep
 *   activation alive til s1 is done": the activation stays in fwd_stash
 *   until a later pack, for ids "<= tensor_id - self.max_fwd_stash_size",
 *   runs "self.s0.wait_event(ev)" and drops it -- the compute stream
 *   waits for that copy (a D2H stall when it is late) and the block is
 *   freed once the forward pass no longer reads it. At the first
 *   backward node, "if there are still things in the fwd_stash, get rid
 *   of them as we're in bwd now" (the same wait for each).
 *   unpack: the tensor is brought back on s1 and "self.s0.wait_stream(
 *   self.s1)". The autograd engine's thread runs ahead of the GPU, so
 *   the unpack of the next node's tensors is issued while the current
 *   node's kernels run. This executor never runs the host ahead of the
 *   device (sim/ex.h), so that lead is modelled as a prefetch: when the
 *   backward pass enters a layer (wl_op.layer) the tensors saved for the
 *   next backward layer are swapped in (ex_swap_in) on the H2D engine,
 *   and a backward op waits only for its own (a late one is an H2D
 *   stall, counted in late_swap_ins). A prefetch that finds no device
 *   memory is dropped and counted (prefetch_refused); the op then brings
 *   its tensor in on demand.
 *
 * Which tensors are saved for backward: a tensor that is not a parameter
 * or optimizer state (those are the module's, never packed by
 * OffloadActivations; see docs/offload.md for save_on_cpu and weights),
 * made in the forward pass (or an input of the iteration), that some
 * backward op reads. OffloadActivations copies each once, however many
 * backward ops read it (it de-duplicates by storage,
 * "storage_to_tensor_id"). save_on_cpu packs once per saving node, and
 * weights too (its pack hook runs "everytime an operation saves a tensor
 * for backward", torch/autograd/graph.py, saved_tensors_hooks): a
 * tensor's first pack is its own swap-out, every later one and every
 * weight a copy of its own (pack_layer, unpack_group). min_bytes: tensors smaller stay on the device; -1 takes
 * the implementation's own (save_on_cpu: none, 0; OffloadActivations:
 * min_offload_size = 1024).
 */
#include "../sim/ex.h"
#include "pol.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum of_pin { OF_PIN_AUTO, OF_PIN_TRUE, OF_PIN_FALSE };
static const char *const of_pin_names[] = {"auto", "true", "false", NULL};

struct of_params {
	bool overlap;	    /* torchtune's streams (else save_on_cpu) */
	int pin;	    /* enum of_pin */
	int64_t min_bytes;  /* smaller saved tensors stay; -1: default */
	int64_t stash;	    /* max_fwd_stash_size (overlap) */
};

#define P_(f) offsetof(struct of_params, f)
static const struct prm_def of_params[] = {
	{"overlap", PRM_BOOL, "false", 0, 0, NULL,
	 "false: save_on_cpu (blocking copies on the compute stream); true: "
	 "torchtune's OffloadActivations (a copy stream, prefetch one "
	 "backward layer ahead)",
	 P_(overlap)},
	{"pin_memory", PRM_ENUM, "auto", 0, 0, of_pin_names,
	 "host copies pinned (true) or pageable (false); auto: each "
	 "implementation's default (save_on_cpu false, OffloadActivations "
	 "true)",
	 P_(pin)},
	{"min_bytes", PRM_INT, "-1", -1, 1e15, NULL,
	 "saved tensors smaller than this stay on the device; -1: the "
	 "implementation's default (save_on_cpu 0, OffloadActivations 1024)",
	 P_(min_bytes)},
	{"stash", PRM_INT, "5", 1, 1 << 20, NULL,
	 "overlap: OffloadActivations' max_fwd_stash_size, packs after "
	 "which the compute stream waits for a copy",
	 P_(stash)},
	PRM_END};

/* Per-tensor flags. */
enum {
	OF_SAVED = 1,	 /* offloaded when saved (plan) */
	OF_PACKED = 2,	 /* copied out this iteration */
	OF_UNSTASHED = 4, /* the stash let it go (or blocking: copy done) */
	OF_FWD_DONE = 8, /* its last forward reader has completed */
	OF_RELEASED = 16, /* its device block was given up */
	OF_PACK1 = 32,	 /* save_on_cpu: a saving layer's forward packed
			    it (the first pack is the tensor's own copy,
			    later ones are ex_copy_again) */
	OF_UNPACK1 = 64, /* save_on_cpu: a backward layer unpacked it (the
			    first is the executor's swap-in) */
};

struct of_state {
	struct of_params prm;
	bool pinned;	     /* resolved pin_memory */
	uint64_t min_bytes;  /* resolved min_bytes */
	uint8_t *f;	     /* per tensor: OF_* */
	uint32_t n_t;	     /* tensors */
	/* overlap: the forward stash, packed tensors in order */
	uint32_t *stash_t;   /* tensor ids */
	eng_event *stash_ev; /* their copies' events */
	uint32_t n_stash, stash_head; /* packed this iteration, first
					 still stashed */
	/* backward layer groups: runs of consecutive backward ops of one
	 * layer, in issue order; grp_of[op] = its group + 1 (0: none) */
	uint32_t *grp_of;
	uint32_t *grp_at;    /* per group + 1: grp_list[grp_at[g] ..
				grp_at[g + 1]) the saved tensors its ops
				read (first read within the group) */
	uint32_t *grp_list;
	uint32_t n_grp;
	/* save_on_cpu: the groups of each layer (lay_grp[layer]: its last
	 * group, grp_next[g]: the layer's group before g; 0: none) and the
	 * layer's last forward op + 1 (lay_fwd_end; 0: none) */
	uint32_t *lay_grp, *grp_next, *lay_fwd_end;
	bool in_bwd;	     /* the backward pass has begun this iteration */
	/* report */
	uint64_t n_saved, saved_bytes; /* plan: tensors chosen, bytes */
	uint64_t kept_small;	       /* saved tensors under min_bytes */
	uint64_t held;		       /* saved tensors the framework holds
					  for the run (wl_tensor.held) */
	uint64_t prefetches, prefetch_refused, stash_waits, pack_refused;
	uint64_t torch_packs, torch_pack_bytes; /* what save_on_cpu's hook
					  would copy (of_plan) */
	uint64_t again_packs, again_unpacks; /* save_on_cpu: second and
					  later packs / unpacks copied */
	uint64_t again_refused;	       /* of those, refused (no block or
					  no host memory): not copied */
	uint64_t unplaced;	       /* backward groups whose layer has
					  no forward op (recorded traces):
					  no second copies for them (plan) */
};

static int of_init(struct pol *p, gms_err *err)
{
	(void)err;
	struct of_state *s = calloc(1, sizeof *s);
	if (!s)
		return gms_errf(err, "out of memory");
	s->prm = *(const struct of_params *)p->params;
	s->pinned = s->prm.pin == OF_PIN_TRUE ||
		    (s->prm.pin == OF_PIN_AUTO && s->prm.overlap);
	s->min_bytes = s->prm.min_bytes >= 0 ? (uint64_t)s->prm.min_bytes
		       : s->prm.overlap	     ? 1024
					     : 0;
	p->priv = s;
	return 0;
}

static void of_fini(struct pol *p)
{
	struct of_state *s = p->priv;
	if (!s)
		return;
	free(s->f);
	free(s->stash_t);
	free(s->stash_ev);
	free(s->grp_of);
	free(s->grp_at);
	free(s->grp_list);
	free(s->lay_grp);
	free(s->grp_next);
	free(s->lay_fwd_end);
	free(s);
	p->priv = NULL;
}

/* Saved for backward (the header): not whole-run or held, made in the
 * forward pass or an input, read by a backward op. */
static bool saved_for_bwd(const struct wl_workload *wl, uint32_t t)
{
	const struct wl_tensor *x = &wl->tensors[t];
	if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE)
		return false;
	if (x->producer != WL_NONE && wl->ops[x->producer].phase != WL_FWD)
		return false;
	if (x->producer == WL_NONE && x->kind != WL_INPUT)
		return false;
	for (uint32_t i = 0; i < x->n_readers; i++)
		if (wl->ops[x->readers[i]].phase == WL_BWD)
			return true;
	return false;
}


/* Listed in a backward group: a tensor offloaded when saved; under
 * save_on_cpu also a parameter (its hook packs weights too), over
 * min_bytes. */
static bool grouped(const struct of_state *s, const struct wl_workload *wl,
		    uint32_t t)
{
	if (s->f[t] & OF_SAVED)
		return true;
	return !s->prm.overlap && wl->tensors[t].kind == WL_PARAM &&
	       wl->tensors[t].bytes >= s->min_bytes;
}

static int of_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct of_state *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	s->n_t = wl->n_tensors;
	s->f = calloc(wl->n_tensors + 1, 1);
	s->stash_t = calloc(wl->n_tensors + 1, sizeof *s->stash_t);
	s->stash_ev = calloc(wl->n_tensors + 1, sizeof *s->stash_ev);
	s->grp_of = calloc(wl->n_ops + 1, sizeof *s->grp_of);
	s->grp_at = calloc(wl->n_ops + 2, sizeof *s->grp_at);
	if (!s->f || !s->stash_t || !s->stash_ev || !s->grp_of || !s->grp_at)
		return gms_errf(err, "out of memory");
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		if (!saved_for_bwd(wl, t))
			continue;
		if (ex_tensor_persistent(ex, t)) {
			/* the framework holds it for the run (Caffe's
			 * blobs): it never leaves the device */
			s->held++;
			continue;
		}
		if (wl->tensors[t].bytes < s->min_bytes) {
			s->kept_small++;
			continue;
		}
		s->f[t] = OF_SAVED;
		s->n_saved++;
		s->saved_bytes += wl->tensors[t].bytes;
	}
	/* backward layer groups and the tensors each reads that are grouped()
	 * (save_on_cpu: what each saving layer packs): two passes over the
	 * backward ops' inputs (count, fill); a tensor is listed in a group
	 * once (its mark is the group it was last listed in, kept in
	 * stash_t, free until the run starts). The count pass also counts
	 * what save_on_cpu's hook would copy (torch_packs, for the report
	 * beside the policy's own copies): the hook runs "everytime an
	 * operation saves a tensor for backward" (torch/autograd/graph.py,
	 * saved_tensors_hooks) and pack_to_cpu copies each time, parameters
	 * included: once per saving node and tensor. A node is a layer's run
	 * of backward ops (the generators make a layer per module or
	 * functional op), and it saves what those ops read that is saved for
	 * backward or a parameter, however small or held; grouped() tensors
	 * are among them. Measured beside it: validate/torch_mechanisms.py
	 * --count-packs (results/validation/H100-80GB-HBM3/README.md). */
	uint32_t *mark = s->stash_t;
	uint32_t g = 0, prev_layer = WL_NONE;
	size_t n_list = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (op->phase != WL_BWD)
			continue;
		if (g == 0 || op->layer != prev_layer)
			g++;
		prev_layer = op->layer;
		s->grp_of[o] = g;
		for (uint32_t i = 0; i < op->n_in; i++) {
			uint32_t t = op->in[i];
			if (mark[t] == g || (wl->tensors[t].kind != WL_PARAM &&
					     !saved_for_bwd(wl, t)))
				continue;
			mark[t] = g;
			s->torch_packs++;
			s->torch_pack_bytes += wl->tensors[t].bytes;
			if (grouped(s, wl, t)) {
				s->grp_at[g]++;
				n_list++;
			}
		}
	}
	s->n_grp = g;
	/* prefix sums: group k (1-based) lists at [grp_at[k-1], grp_at[k]) */
	for (uint32_t k = 1; k <= g; k++)
		s->grp_at[k] += s->grp_at[k - 1];
	s->grp_list = calloc(n_list + 1, sizeof *s->grp_list);
	if (!s->grp_list)
		return gms_errf(err, "out of memory");
	memset(mark, 0, (wl->n_tensors + 1) * sizeof *mark);
	uint32_t *fill = calloc(g + 2, sizeof *fill);
	if (!fill)
		return gms_errf(err, "out of memory");
	for (uint32_t k = 1; k <= g; k++)
		fill[k] = s->grp_at[k - 1];
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		uint32_t k = s->grp_of[o];
		if (!k)
			continue;
		const struct wl_op *op = &wl->ops[o];
		for (uint32_t i = 0; i < op->n_in; i++) {
			uint32_t t = op->in[i];
			if (grouped(s, wl, t) && mark[t] != k) {
				mark[t] = k;
				s->grp_list[fill[k]++] = t;
			}
		}
	}
	free(fill);
	memset(mark, 0, (wl->n_tensors + 1) * sizeof *mark);
	if (s->prm.overlap)
		return 0;
	s->lay_grp = calloc(wl->n_layers + 1, sizeof *s->lay_grp);
	s->lay_fwd_end = calloc(wl->n_layers + 1, sizeof *s->lay_fwd_end);
	s->grp_next = calloc(g + 2, sizeof *s->grp_next);
	if (!s->lay_grp || !s->lay_fwd_end || !s->grp_next)
		return gms_errf(err, "out of memory");
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		uint32_t k = s->grp_of[o];
		if (op->phase == WL_FWD)
			s->lay_fwd_end[op->layer] = o + 1;
		else if (k && (o == 0 || s->grp_of[o - 1] != k)) {
			s->grp_next[k] = s->lay_grp[op->layer];
			s->lay_grp[op->layer] = k;
		}
	}
	/* a group whose layer never ran forward (a trace names its backward
	 * ops apart) has no pack point: it copies nothing twice, and its
	 * unpacks are skipped too (unpack_group), so each second pack has
	 * its unpack */
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		uint32_t k = s->grp_of[o];
		if (k && (o == 0 || s->grp_of[o - 1] != k) &&
		    !s->lay_fwd_end[wl->ops[o].layer]) {
			s->grp_next[k] = UINT32_MAX; /* unplaced */
			s->unplaced++;
		}
	}
	return 0;
}

static void of_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct of_state *s = p->priv;
	(void)ex;
	(void)iter;
	for (uint32_t t = 0; t < s->n_t; t++)
		s->f[t] &= OF_SAVED;
	s->n_stash = s->stash_head = 0;
	s->in_bwd = false;
}

/* Give up t's device block once both the copy is safe to rely on (the
 * stash let it go; blocking: the copy is done) and the forward pass has
 * no further reader. */
static void maybe_release(struct of_state *s, struct ex *ex, uint32_t t)
{
	uint8_t need = OF_PACKED | OF_UNSTASHED | OF_FWD_DONE;
	if ((s->f[t] & need) != need || (s->f[t] & OF_RELEASED))
		return;
	s->f[t] |= OF_RELEASED;
	/* the host copy exists (or is under way): no second copy */
	if (ex_swap_out(ex, t, EX_RELEASE) == ENG_EVENT_NONE)
		s->pack_refused++;
}

/* The stash lets go of its oldest entry: the compute stream waits for
 * its copy (s0.wait_event). */
static void unstash_one(struct of_state *s, struct ex *ex)
{
	uint32_t t = s->stash_t[s->stash_head];
	eng_event ev = s->stash_ev[s->stash_head++];
	s->stash_waits++;
	ex_wait(ex, ev);
	s->f[t] |= OF_UNSTASHED;
	maybe_release(s, ex, t);
}

static void pack(struct of_state *s, struct ex *ex, uint32_t t)
{
	s->f[t] |= OF_PACKED;
	eng_event ev = ex_swap_out(ex, t, s->pinned ? 0 : EX_PAGEABLE);
	if (ev == ENG_EVENT_NONE) {
		/* host memory refused: it stays on the device (counted) */
		s->pack_refused++;
		s->f[t] |= OF_RELEASED;
		return;
	}
	if (!s->prm.overlap) {
		/* save_on_cpu: synchronous copy */
		ex_wait(ex, ev);
		s->f[t] |= OF_UNSTASHED;
	} else {
		s->stash_t[s->n_stash] = t;
		s->stash_ev[s->n_stash++] = ev;
		/* "id <= tensor_id - self.max_fwd_stash_size", ids counted
		 * over the offloaded tensors (torchtune counts every pack
		 * call, kept ones too: docs/offload.md) */
		while (s->stash_head + (uint32_t)s->prm.stash <= s->n_stash - 1)
			unstash_one(s, ex);
	}
}

static void first_bwd_done(struct of_state *s, struct ex *ex,
			   const struct wl_op *op);

/* save_on_cpu's second copies of backward group k's tensors, out (q
 * ENG_D2H) or back (ENG_H2D): a tensor's first pack is its own swap-out
 * (pack(), at its producer) and its first unpack the executor's swap-in
 * before the op that reads it (OF_PACK1, OF_UNPACK1 mark them taken);
 * every later one and every parameter is a copy of its own
 * (ex_copy_again). A pack waits for its copy (`packed.copy_(tensor)`, no
 * non_blocking); the group's ops wait for its unpacks, all at once (the
 * H2D queue is FIFO). */
static void copy_group_again(struct of_state *s, struct ex *ex, uint32_t k,
			     enum eng_q q)
{
	const struct wl_workload *wl = ex_workload(ex);
	uint8_t first = q == ENG_D2H ? OF_PACK1 : OF_UNPACK1;
	eng_event last = ENG_EVENT_NONE;
	for (uint32_t i = s->grp_at[k - 1]; i < s->grp_at[k]; i++) {
		uint32_t t = s->grp_list[i];
		if (wl->tensors[t].kind != WL_PARAM && !(s->f[t] & first)) {
			s->f[t] |= first;
			continue;
		}
		eng_event ev =
			ex_copy_again(ex, t, q, s->pinned ? 0 : EX_PAGEABLE);
		if (ev == ENG_EVENT_NONE) {
			s->again_refused++;
		} else if (q == ENG_D2H) {
			s->again_packs++;
			ex_wait(ex, ev);
		} else {
			s->again_unpacks++;
			last = ev;
		}
	}
	if (last != ENG_EVENT_NONE)
		ex_wait(ex, last);
}

/* save_on_cpu: once layer L's forward ops are done, its autograd nodes
 * (the groups of L) have packed what their backward reads ("pack_hook ...
 * called everytime an operation saves a tensor"; pack_to_cpu copies each
 * time). */
static void pack_layer(struct of_state *s, struct ex *ex, uint32_t layer)
{
	for (uint32_t k = s->lay_grp[layer]; k; k = s->grp_next[k])
		copy_group_again(s, ex, k, ENG_D2H);
}

/* save_on_cpu: entering backward group k, its node unpacks each packed
 * tensor (`tensor.to(device, non_blocking=pin_memory)`); an unplaced
 * group (of_plan) packed nothing twice and unpacks nothing twice. */
static void unpack_group(struct of_state *s, struct ex *ex, uint32_t k)
{
	if (s->grp_next[k] != UINT32_MAX)
		copy_group_again(s, ex, k, ENG_H2D);
}

static void of_after_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct of_state *s = p->priv;
	if (op->phase == WL_BWD && s->prm.overlap &&
	    s->stash_head < s->n_stash) {
		first_bwd_done(s, ex, op);
		return;
	}
	if (op->phase != WL_FWD)
		return;
	const struct wl_workload *wl = ex_workload(ex);
	/* what this op saves: its inputs (an input of the iteration is
	 * packed at its first reader) and its outputs */
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		uint32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
		if ((s->f[t] & (OF_SAVED | OF_PACKED)) == OF_SAVED &&
		    ex_tensor_state(ex, t) == TS_IN)
			pack(s, ex, t);
	}
	if (!s->prm.overlap && s->lay_fwd_end[op->layer] == op->id + 1)
		pack_layer(s, ex, op->layer);
	/* forward readers done: the last one's completion, or none left
	 * after the producer */
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		uint32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
		if (!(s->f[t] & OF_PACKED) || (s->f[t] & OF_FWD_DONE))
			continue;
		uint32_t lf = wl->tensors[t].last_fwd_reader;
		if (lf == WL_NONE || lf <= op->id) {
			s->f[t] |= OF_FWD_DONE;
			maybe_release(s, ex, t);
		}
	}
}

/* Swap in the saved tensors of backward group k that are on the host. */
static void prefetch_group(struct of_state *s, struct ex *ex, uint32_t k)
{
	for (uint32_t i = s->grp_at[k - 1]; i < s->grp_at[k]; i++) {
		uint32_t t = s->grp_list[i];
		if (ex_tensor_state(ex, t) != TS_OUT)
			continue;
		if (ex_swap_in(ex, t, ENG_EVENT_NONE) == ENG_EVENT_NONE)
			s->prefetch_refused++;
		else
			s->prefetches++;
	}
}

/* Enter backward group k: bring back what its ops read, then prefetch
 * the next group's (the autograd thread's lead over the GPU). */
static void enter_group(struct of_state *s, struct ex *ex, uint32_t k)
{
	prefetch_group(s, ex, k);
	if (k < s->n_grp)
		prefetch_group(s, ex, k + 1);
}

static void of_before_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct of_state *s = p->priv;
	if (op->phase != WL_BWD)
		return;
	if (!s->prm.overlap) {
		uint32_t k = s->grp_of[op->id];
		if (k && (op->id == 0 || s->grp_of[op->id - 1] != k))
			unpack_group(s, ex, k);
		return;
	}
	if (!s->in_bwd) {
		/* the first backward node unpacks what is still stashed
		 * from the device: "if unpack_tensor_id in self.fwd_stash:
		 * maybe_accelerator_tensor = self.fwd_stash[...][0]" -- kept
		 * (never released), its host copy unused */
		s->in_bwd = true;
		for (uint32_t i = s->stash_head; i < s->n_stash; i++)
			for (uint32_t j = 0; j < op->n_in; j++)
				if (op->in[j] == s->stash_t[i])
					s->f[s->stash_t[i]] |= OF_RELEASED;
	}
	uint32_t k = s->grp_of[op->id];
	if (k && (op->id == 0 || s->grp_of[op->id - 1] != k))
		enter_group(s, ex, k);
}

/* After the first backward node, its hook: "if there are still things
 * in the fwd_stash, get rid of them as we're in bwd now" (s0 waits for
 * each copy, the stash lets go); then the unpacks of the next node. */
static void first_bwd_done(struct of_state *s, struct ex *ex,
			   const struct wl_op *op)
{
	while (s->stash_head < s->n_stash)
		unstash_one(s, ex);
	const struct wl_workload *wl = ex_workload(ex);
	if (op->id + 1 < wl->n_ops && s->grp_of[op->id + 1])
		enter_group(s, ex, s->grp_of[op->id + 1]);
}

static void of_report(struct pol *p, FILE *out)
{
	struct of_state *s = p->priv;
	fprintf(out, "implementation %s\n",
		s->prm.overlap ? "torchtune-OffloadActivations"
			       : "torch-save_on_cpu");
	fprintf(out, "pin_memory %s\n", s->pinned ? "true" : "false");
	fprintf(out, "min_bytes %llu\n", (unsigned long long)s->min_bytes);
	fprintf(out, "saved_tensors %llu\n", (unsigned long long)s->n_saved);
	fprintf(out, "saved_bytes %llu\n",
		(unsigned long long)s->saved_bytes);
	fprintf(out, "kept_small %llu\n", (unsigned long long)s->kept_small);
	fprintf(out, "held_by_framework %llu\n", (unsigned long long)s->held);
	fprintf(out, "prefetches %llu\n", (unsigned long long)s->prefetches);
	fprintf(out, "prefetch_refused %llu\n",
		(unsigned long long)s->prefetch_refused);
	fprintf(out, "stash_waits %llu\n", (unsigned long long)s->stash_waits);
	fprintf(out, "pack_refused %llu\n",
		(unsigned long long)s->pack_refused);
	fprintf(out, "save_on_cpu_packs %llu\n",
		(unsigned long long)s->torch_packs);
	fprintf(out, "save_on_cpu_pack_bytes %llu\n",
		(unsigned long long)s->torch_pack_bytes);
	fprintf(out, "again_packs %llu\n", (unsigned long long)s->again_packs);
	fprintf(out, "again_unpacks %llu\n",
		(unsigned long long)s->again_unpacks);
	fprintf(out, "again_refused %llu\n",
		(unsigned long long)s->again_refused);
	fprintf(out, "again_unplaced_groups %llu\n",
		(unsigned long long)s->unplaced);
}

const struct pol_ops pol_offload_ops = {
	.name = "offload",
	.summary = "activation offload: torch save_on_cpu (blocking) or "
		   "torchtune OffloadActivations (overlap: copy stream, "
		   "prefetch)",
	.params = of_params,
	.params_size = sizeof(struct of_params),
	.init = of_init,
	.fini = of_fini,
	.plan = of_plan,
	.iter_begin = of_iter_begin,
	.before_op = of_before_op,
	.after_op = of_after_op,
	/* a failed allocation fails, as PyTorch's does (the framework's
	 * answer: ex_fallback_or_fail); releases never wait on a copy, the
	 * stash has waited for it */
	.on_alloc_fail = ex_fallback_or_fail,
	.report = of_report,
};
