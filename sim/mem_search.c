/*
 * mem_search.c - vDNN++ section IV-B's smallest-pool-size search, and a
 * replay of a list of allocation requests through any allocator model.
 *
 * The search restarts the whole sequence with a pool larger by the
 * shortfall seen at the failure (request - largest free block). It only
 * ever grows, so it stops at the first pool that serves, which need not be
 * the smallest (the paper's 9-versus-11-unit example); tests/
 * test_mem_search.c works both of the paper's sequences by hand.
 */
#include "mem_search.h"

#include <stdlib.h>

/* x rounded up to a multiple of g (g >= 1); 0 when that overflows. */
static uint64_t round_up(uint64_t x, uint64_t g)
{
	uint64_t r = x % g;
	if (r == 0)
		return x;
	return x > UINT64_MAX - (g - r) ? 0 : x + (g - r);
}

int mem_min_pool(uint64_t start, uint64_t limit, uint64_t granule,
		 mem_attempt_fn attempt, void *ctx, struct mem_search *out,
		 gms_err *err)
{
	*out = (struct mem_search){0};
	if (granule == 0)
		granule = 1;
	if (start == 0)
		return gms_errf(err, "pool search: start must be > 0");
	uint64_t pool = round_up(start, granule);
	for (;;) {
		if (pool == 0 || pool > limit) {
			out->pool = pool ? pool : UINT64_MAX;
			out->over_limit = true;
			return 0;
		}
		out->pool = pool;
		out->attempts++;
		uint64_t fail = 0, largest = 0;
		int rc = attempt(ctx, pool, &fail, &largest, err);
		if (rc < 0)
			return gms_err_prefix(err, "pool search at %llu bytes",
					      (unsigned long long)pool);
		if (rc > 0)
			return 0;
		out->restarts++;
		out->fail_bytes = fail;
		out->largest_free = largest;
		/* An attempt is deterministic: the same pool replays the same
		 * requests and fails at the same one. So the pool must grow
		 * each time or the loop never ends; a failure with a free
		 * block at least as large as the request is not a shortfall
		 * of this pool (the model refused for another reason), and
		 * growing by (request - largest free) <= 0 would retry the
		 * same run forever. */
		if (fail <= largest)
			return gms_errf(err,
					"pool search at %llu bytes: a request "
					"of %llu bytes failed with a free "
					"block of %llu bytes; a larger pool "
					"would not change the run",
					(unsigned long long)pool,
					(unsigned long long)fail,
					(unsigned long long)largest);
		uint64_t grow = fail - largest;
		pool = grow > UINT64_MAX - pool ? 0
						: round_up(pool + grow, granule);
	}
}

int mem_replay_attempt(void *ctx, uint64_t pool, uint64_t *fail_bytes,
		       uint64_t *largest_free, gms_err *err)
{
	const struct mem_replay *r = ctx;
	struct mem_cfg cfg = {.budget = pool, .pool_size = pool};
	struct mem_dev d;
	uint32_t n_id = 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->req[i].id >= n_id)
			n_id = r->req[i].id + 1;
	mem_handle *h = malloc((n_id ? n_id : 1) * sizeof *h);
	if (!h)
		return gms_errf(err, "out of memory");
	for (uint32_t k = 0; k < n_id; k++)
		h[k] = MEM_HANDLE_NONE;
	if (mem_dev_open(&d, r->model, &cfg, err) < 0) {
		free(h);
		return -1;
	}
	int rc = 1;
	for (size_t i = 0; i < r->n && rc == 1; i++) {
		const struct mem_req *q = &r->req[i];
		bool live = h[q->id] != MEM_HANDLE_NONE;
		if (q->bytes == 0 ? !live : live) {
			rc = gms_errf(err, "request %zu: %s %u, which is %s", i,
				      q->bytes ? "allocates" : "frees", q->id,
				      live ? "live" : "not live");
		} else if (q->bytes == 0) {
			d.ops->free(d.a, h[q->id]);
			h[q->id] = MEM_HANDLE_NONE;
		} else if (d.ops->alloc(d.a, q->bytes, q->flags, &h[q->id]) <
			   0) {
			struct mem_stats st;
			d.ops->stats(d.a, &st);
			*fail_bytes = q->bytes;
			*largest_free = st.largest_free;
			h[q->id] = MEM_HANDLE_NONE;
			rc = 0;
		}
	}
	mem_dev_close(&d);
	free(h);
	return rc;
}
