/*
 * passive.h - Capuchin's passive mode (section 4.2, Figure 6, and the
 * Tensor Access Tracker of section 5.2), shared by the policies that fall
 * back on it: `ondemand` (passive mode alone) and `capuchin` (measured
 * execution, and the safety net of guided execution).
 *
 * The tracker keeps the iteration's tensor accesses in order. When an
 * allocation fails, pas_evict() picks tensors from the start of that list
 * and swaps them out with release; the caller decides how long the
 * executor waits for the copies (ondemand: all of them, "copied to CPU
 * memory synchronously"; capuchin with decoupled swapping: the earliest).
 * Swap-in on a later access ("access failure") is the executor's default.
 *
 * Which tensors, Capuchin section 5.2: "When an OOM is detected, TAT will
 * look for one or multiple tensors with an approximate size to be evicted
 * in tensor access list from the beginning until the current allocation is
 * successful." The paper does not say how close "approximate" is. Here
 * (PAS_SIZE) a tensor is of approximately the requested size when request
 * <= bytes < 2 * request: at least the request, so its block alone can
 * hold it, and less than twice it, the window in which TensorFlow's BFC
 * allocator (Capuchin is built on TensorFlow 1.11) hands a free chunk out
 * whole rather than splitting it (bfc_allocator.cc FindChunkPtr,
 * `chunk->size >= rounded_bytes * 2` -> SplitChunk; see sim/mem_bfc.c). A
 * round evicts the first such tensor from the start of the list; when the
 * list holds none, it evicts from the start of the list whatever the
 * sizes, until the evicted bytes cover the request (the "multiple
 * tensors" case). PAS_ORDER: always the latter.
 *
 * "Until the allocation succeeds" is done in rounds: evict, wait, retry;
 * if fragmentation still defeats the request, the next round evicts more.
 * Candidates are resident, non-persistent tensors that the op being
 * prepared does not read and no running kernel reads.
 *
 * Cost (issue 18): a scan from the start of the list used to walk past
 * every persistent and already evicted tensor at its head on every round,
 * O(n^2) on a long chain. The list now holds each tensor once, at its
 * first access (where the scan meets it first), and a bitmap of the
 * places that may still be candidates: a place found evicted, freed or
 * persistent leaves it until the tensor is accessed again or swapped in
 * (pas_copy_done), so each round costs the candidates it passes and a
 * few word operations per level. The same tensors are chosen in the same
 * order.
 */
#ifndef GMS_PASSIVE_H
#define GMS_PASSIVE_H

#include "../sim/ex.h"

/* How a round picks the tensors to evict (the header says why). */
enum pas_rule {
	PAS_SIZE,  /* first tensor of approximately the requested size, else
		      as PAS_ORDER (Capuchin section 5.2) */
	PAS_ORDER, /* from the start of the list until the bytes cover the
		      request, regardless of size */
};
extern const char *const pas_rule_names[]; /* "size", "order" */

/* Levels of the candidate bitmap: 64^6 = 2^36 positions, more than a
 * workload has tensors (ids are uint32_t). */
#define PAS_LEVELS 6
#define PAS_NONE UINT32_MAX

/* The access list and what the evictions did. */
struct pas {
	uint32_t *list;	 /* tensor ids in order of their first access this
			    iteration (a later access of the same tensor
			    does not change where the scan meets it) */
	size_t n, cap;	 /* length and capacity */
	uint32_t *pos;	 /* per tensor id: its place in list, PAS_NONE when
			    not accessed yet this iteration */
	size_t n_pos;	 /* length of pos */
	uint64_t *bits[PAS_LEVELS]; /* the candidates: bit i of level 0 set
				       when list[i] may be evictable (not
				       known to be out, freed or
				       persistent); bit j of level k + 1
				       when word j of level k is nonzero */
	uint64_t evicted;	/* tensors evicted over the run */
	uint64_t evicted_iter;	/* of which this iteration */
	uint64_t bytes_iter;	/* bytes evicted this iteration */
};

/* A round's swap-outs: the events of the first and the last issued
 * (ENG_EVENT_NONE when none was). The D2H engine runs them in order. */
struct pas_round {
	eng_event first, last;
	uint64_t bytes; /* bytes evicted */
};

/* Start an iteration: an empty list, this iteration's counts zero. */
void pas_reset(struct pas *s);
/* Record an access of tensor t (on_access). */
void pas_record(struct pas *s, uint32_t t);
/* A copy completed (on_copy_done): a swap-in's tensor is resident again
 * without an access and may be a candidate again. Every way back to TS_IN
 * other than this passes through an access (pas_record): a kernel's
 * outputs, recomputed ones included, and inputs made resident for a
 * kernel, which are busy until its issue reports the access. */
void pas_copy_done(struct pas *s, const struct ex_copy *c);
/* Told of each eviction a round starts (may be NULL). */
typedef void (*pas_note_fn)(void *obj, uint32_t t, eng_event ev);

/* Evict for a failed request of `bytes` (the rule above); `note(obj, t,
 * ev)` is called for each swap-out started. */
struct pas_round pas_evict(struct pas *s, struct ex *ex, enum pas_rule rule,
			   uint64_t bytes, pas_note_fn note, void *obj);
void pas_free(struct pas *s);

#endif
