/*
 * mem_arena.c - `arena`: a budget handed out without placement.
 *
 * A request succeeds iff the bytes in use plus it fit the budget: no
 * rounding, no blocks, hence no fragmentation. It models AccUDNN's buffer
 * pool and serves as the "no fragmentation" bound for the other models.
 * Stats: reserved == allocated == requested (nothing is held beyond what is
 * in use), largest_free = budget - allocated, n_device_malloc/free stay 0
 * (the budget is treated as already owned), so mem_frag is 0. There is no
 * placement, so every block's address is 0.
 */
#include "mem.h"

#include <assert.h>
#include <stdlib.h>

#define NONE MEM_HANDLE_NONE

struct mem_allocator {
	uint64_t *bytes;     /* size of each handle's block; UINT64_MAX when
				the slot is not live */
	uint32_t *next_dead; /* free-slot list links */
	uint32_t n;	     /* slots handed out so far */
	uint32_t cap;	     /* slots allocated */
	uint32_t dead;	     /* first slot to reuse, or NONE */
	struct mem_stats st; /* counters; largest_free filled on read */
};

#define NOT_LIVE UINT64_MAX

static void check(const struct mem_allocator *a)
{
	const struct mem_stats *s = &a->st;
	(void)s;
	assert(s->allocated == s->reserved && s->requested == s->allocated);
	assert(s->allocated <= s->budget);
	assert(s->peak_allocated >= s->allocated);
	assert(s->peak_reserved == s->peak_allocated);
}

static struct mem_allocator *create(const struct mem_cfg *cfg, gms_err *err)
{
	if (!cfg || cfg->budget == 0)
		return gms_errf(err, "budget must be > 0"), NULL;
	struct mem_allocator *a = calloc(1, sizeof *a);
	if (!a)
		return gms_errf(err, "out of memory"), NULL;
	a->dead = NONE;
	a->st.budget = cfg->budget;
	return a;
}

static void destroy(struct mem_allocator *a)
{
	if (!a)
		return;
	free(a->bytes);
	free(a->next_dead);
	free(a);
}

static int alloc(struct mem_allocator *a, uint64_t bytes, unsigned flags,
		 mem_handle *h)
{
	(void)flags;
	assert(a && h && bytes > 0);
	struct mem_stats *s = &a->st;
	if (bytes > s->budget - s->allocated) {
		s->n_fail++;
		return -1;
	}
	uint32_t id;
	if (a->dead != NONE) {
		id = a->dead;
		a->dead = a->next_dead[id];
	} else {
		if (a->n == a->cap) {
			uint32_t cap = a->cap ? a->cap * 2 : 64;
			uint64_t *b = realloc(a->bytes, cap * sizeof *b);
			if (b)
				a->bytes = b;
			uint32_t *d = realloc(a->next_dead, cap * sizeof *d);
			if (d)
				a->next_dead = d;
			if (!b || !d) {
				fprintf(stderr, "gpumemsim: out of host "
						"memory (arena)\n");
				abort();
			}
			a->cap = cap;
		}
		id = a->n++;
		assert(id != NONE);
	}
	a->bytes[id] = bytes;
	s->requested += bytes;
	s->allocated += bytes;
	s->reserved += bytes;
	if (s->allocated > s->peak_allocated)
		s->peak_allocated = s->peak_requested = s->peak_reserved =
			s->allocated;
	s->n_alloc++;
	*h = id;
	check(a);
	return 0;
}

static void afree(struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->n && a->bytes[h] != NOT_LIVE);
	uint64_t bytes = a->bytes[h];
	a->bytes[h] = NOT_LIVE;
	a->next_dead[h] = a->dead;
	a->dead = h;
	a->st.requested -= bytes;
	a->st.allocated -= bytes;
	a->st.reserved -= bytes;
	a->st.n_free++;
	check(a);
}

static uint64_t addr(const struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->n && a->bytes[h] != NOT_LIVE);
	(void)a;
	(void)h;
	return 0;
}

static void stats(const struct mem_allocator *a, struct mem_stats *out)
{
	assert(a && out);
	*out = a->st;
	out->largest_free = a->st.budget - a->st.allocated;
}

static void dump(const struct mem_allocator *a, FILE *f)
{
	fprintf(f, "arena: %llu of %llu bytes in use\n",
		(unsigned long long)a->st.allocated,
		(unsigned long long)a->st.budget);
}

const struct mem_ops mem_arena_ops = {
	.name = "arena",
	.summary = "no placement: fits iff bytes in use plus the request fit "
		   "the budget (AccUDNN buffer pool; fragmentation-free bound)",
	.create = create,
	.destroy = destroy,
	.alloc = alloc,
	.free = afree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
};
