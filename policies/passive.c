/*
 * passive.c - Capuchin's passive mode: the access list and on-demand
 * eviction (passive.h says which tensors and why).
 */
#include "passive.h"

#include <stdlib.h>
#include <string.h>

/* A tensor is of approximately the requested size when request <= bytes <
 * PAS_APPROX_FACTOR * request: BFC hands a chunk of under twice the
 * (rounded) request out whole (bfc_allocator.cc FindChunkPtr; mem_bfc.c). */
#define PAS_APPROX_FACTOR 2

const char *const pas_rule_names[] = {"size", "order", NULL};

/* ---- the set of candidate positions: a bitmap with a summary level per
 * 64 words, so the next set position is found in PAS_LEVELS steps ---- */

/* Is position i in the set? */
static bool bits_has(const struct pas *s, size_t i)
{
	return s->bits[0][i >> 6] >> (i & 63) & 1;
}

static void bits_set(struct pas *s, size_t i)
{
	for (int k = 0; k < PAS_LEVELS; k++, i >>= 6) {
		uint64_t *w = &s->bits[k][i >> 6], was = *w;
		*w = was | (uint64_t)1 << (i & 63);
		if (was)
			break; /* the word had members: the levels above are
				  set already (bits_clear keeps them so);
				  every access set all six levels, 2% of
				  max-batch.yaml's instructions (issue 18) */
	}
}

static void bits_clear(struct pas *s, size_t i)
{
	for (int k = 0; k < PAS_LEVELS; k++, i >>= 6) {
		s->bits[k][i >> 6] &= ~((uint64_t)1 << (i & 63));
		if (s->bits[k][i >> 6])
			break; /* the word still has members: levels above
				  stay set */
	}
}

/* Words of level k for `cap` positions. */
static size_t bits_words(size_t cap, int k)
{
	size_t n = cap;
	for (int j = 0; j <= k; j++)
		n = (n + 63) >> 6;
	return n;
}

/* The first position >= i in the set, or SIZE_MAX. */
static size_t bits_next(const struct pas *s, size_t i)
{
	int k = 0;
	size_t pos = i; /* a position at level k */
	for (;;) {
		size_t wi = pos >> 6;
		if (wi >= bits_words(s->cap, k))
			return SIZE_MAX;
		uint64_t w = s->bits[k][wi] & (~(uint64_t)0 << (pos & 63));
		if (w) {
			pos = (wi << 6) | (size_t)__builtin_ctzll(w);
			break;
		}
		if (++k == PAS_LEVELS)
			return SIZE_MAX;
		pos = wi + 1;
	}
	while (k-- > 0) /* down to level 0 through the first member */
		pos = (pos << 6) | (size_t)__builtin_ctzll(s->bits[k][pos]);
	return pos;
}

/* Room for `cap` positions (the contents kept); -1 out of memory. */
static int bits_grow(struct pas *s, size_t cap)
{
	for (int k = 0; k < PAS_LEVELS; k++) {
		size_t old = s->cap ? bits_words(s->cap, k) : 0;
		size_t n = bits_words(cap, k);
		uint64_t *b = realloc(s->bits[k], n * sizeof *b);
		if (!b)
			return -1;
		memset(b + old, 0, (n - old) * sizeof *b);
		s->bits[k] = b;
	}
	return 0;
}

/* ---- the access list ------------------------------------------------- */

void pas_reset(struct pas *s)
{
	for (size_t i = 0; i < s->n; i++) {
		s->pos[s->list[i]] = PAS_NONE;
		if (bits_has(s, i))
			bits_clear(s, i);
	}
	s->n = 0;
	s->evicted_iter = 0;
	s->bytes_iter = 0;
}

void pas_record(struct pas *s, uint32_t t)
{
	if (t >= s->n_pos) {
		size_t n = s->n_pos ? s->n_pos : 1024;
		while (n <= t)
			n *= 2;
		uint32_t *p = realloc(s->pos, n * sizeof *p);
		if (!p)
			return; /* the list is a hint; a gap only costs choice */
		for (size_t i = s->n_pos; i < n; i++)
			p[i] = PAS_NONE;
		s->pos = p;
		s->n_pos = n;
	}
	if (s->pos[t] != PAS_NONE) {
		/* accessed again: resident, a candidate again at its first
		 * place */
		bits_set(s, s->pos[t]);
		return;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint32_t *l = realloc(s->list, cap * sizeof *l);
		if (!l)
			return;
		s->list = l;
		if (bits_grow(s, cap) < 0)
			return;
		s->cap = cap;
	}
	s->pos[t] = (uint32_t)s->n;
	s->list[s->n] = t;
	bits_set(s, s->n++);
}

void pas_copy_done(struct pas *s, const struct ex_copy *c)
{
	uint32_t t = c->tensor;
	if (c->dir == ENG_H2D && t < s->n_pos && s->pos[t] != PAS_NONE)
		bits_set(s, s->pos[t]);
}

void pas_free(struct pas *s)
{
	free(s->list);
	free(s->pos);
	for (int k = 0; k < PAS_LEVELS; k++) {
		free(s->bits[k]);
		s->bits[k] = NULL;
	}
	s->list = NULL;
	s->pos = NULL;
	s->n = s->cap = s->n_pos = 0;
}

/* Start t's eviction; false when the executor refused (e.g. pinned
 * memory exhausted). */
static bool evict(struct pas *s, struct ex *ex, uint32_t t,
		  struct pas_round *r, pas_note_fn note, void *obj)
{
	eng_event ev = ex_swap_out(ex, t, EX_RELEASE);
	if (ev == ENG_EVENT_NONE)
		return false;
	if (r->first == ENG_EVENT_NONE)
		r->first = ev;
	r->last = ev;
	if (note)
		note(obj, t, ev);
	uint64_t b = ex_workload(ex)->tensors[t].bytes;
	r->bytes += b;
	s->evicted++;
	s->evicted_iter++;
	s->bytes_iter += b;
	return true;
}

/* The next candidate at or after list position *i that may be evicted
 * now (resident, not persistent, not read by the op being prepared nor by
 * a running kernel), or false. Candidates found not resident (evicted, freed, dropped)
 * or persistent leave the set: none of them can be evicted before it is
 * accessed again or its swap-in completes, and both put it back
 * (pas_record, pas_copy_done). One busy stays: it is free again once its
 * kernel is done. */
static bool next_evictable(struct pas *s, const struct ex *ex, size_t *i)
{
	for (size_t p = bits_next(s, *i); p != SIZE_MAX;
	     p = bits_next(s, p + 1)) {
		uint32_t t = s->list[p];
		if (ex_tensor_state(ex, t) != TS_IN ||
		    ex_tensor_persistent(ex, t)) {
			bits_clear(s, p);
			continue;
		}
		if (ex_tensor_busy(ex, t))
			continue;
		*i = p;
		return true;
	}
	return false;
}

struct pas_round pas_evict(struct pas *s, struct ex *ex, enum pas_rule rule,
			   uint64_t bytes, pas_note_fn note, void *obj)
{
	const struct wl_workload *wl = ex_workload(ex);
	struct pas_round r = {ENG_EVENT_NONE, ENG_EVENT_NONE, 0};
	/* Only a tensor's first place in the list counts: the scan meets it
	 * there first, and a later place finds it in the same state (or
	 * evicted by this very scan). */
	if (rule == PAS_SIZE) {
		/* one tensor of approximately the requested size */
		for (size_t i = 0; !r.bytes && next_evictable(s, ex, &i); i++) {
			uint32_t t = s->list[i];
			uint64_t b = wl->tensors[t].bytes;
			if (b >= bytes && b / PAS_APPROX_FACTOR < bytes)
				evict(s, ex, t, &r, note, obj);
		}
	}
	/* none of that size (or PAS_ORDER): from the start, any size */
	for (size_t i = 0; r.bytes < bytes && next_evictable(s, ex, &i); i++)
		evict(s, ex, s->list[i], &r, note, obj);
	return r;
}
