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

struct mem_allocator {
	struct mem_slab s;   /* one used block per live handle (size = req =
				the bytes asked for, addr 0), dead ones
				reused */
	struct mem_stats st; /* counters; largest_free filled on read */
};

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
	mem_slab_init(&a->s, "arena", NULL, NULL);
	a->st.budget = cfg->budget;
	return a;
}

static void destroy(struct mem_allocator *a)
{
	if (!a)
		return;
	mem_slab_destroy(&a->s);
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
	uint32_t id = mem_slab_new(&a->s);
	struct mem_blk *k = &a->s.b[id];
	k->size = k->req = bytes;
	k->state = MEM_B_USED;
	mem_stats_on_alloc(s, bytes, bytes);
	/* reserved == allocated, so its peak is peak_allocated */
	s->reserved += bytes;
	s->peak_reserved = s->peak_allocated;
	*h = id;
	check(a);
	return 0;
}

static void afree(struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->s.n && a->s.b[h].state == MEM_B_USED);
	uint64_t bytes = a->s.b[h].size;
	mem_slab_kill(&a->s, h);
	mem_stats_on_free(&a->st, bytes, bytes);
	a->st.reserved -= bytes;
	check(a);
}

static uint64_t addr(const struct mem_allocator *a, mem_handle h)
{
	assert(a && h < a->s.n && a->s.b[h].state == MEM_B_USED);
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
	.min_budget = 1,
	.create = create,
	.destroy = destroy,
	.alloc = alloc,
	.free = afree,
	.addr = addr,
	.stats = stats,
	.dump = dump,
};
