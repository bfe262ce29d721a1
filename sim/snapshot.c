/*
 * snapshot.c - a simulated run as a PyTorch memory snapshot (snapshot.h).
 */
#include "snapshot.h"
#include "pickle.h"

#include <stdlib.h>
#include <string.h>

enum { SN_ALLOC, SN_FREE };

struct snap_event {
	uint64_t addr, size;
	sim_time_t time;
	uint32_t tensor; /* WL_NONE: workspace */
	uint8_t what;	 /* SN_ALLOC, SN_FREE */
};

struct snap_seg {
	uint64_t addr, size;
	size_t first, n; /* its blocks in snap_rec.blk */
	bool small;
};

struct snap_blk {
	uint64_t addr, size, req;
	bool used;
};

/* Grow *p (n used, *cap slots of `elem` bytes) by one; false when host
 * memory ran out. */
static bool grow(void **p, size_t n, size_t *cap, size_t elem)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? 2 * *cap : 256;
	void *q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static void on_run(void *obj, const char *allocator, uint64_t budget)
{
	struct snap_rec *r = obj;
	snprintf(r->allocator, sizeof r->allocator, "%s", allocator);
	r->budget = budget;
}

static void on_block(void *obj, bool alloc, const struct ex_block *b)
{
	struct snap_rec *r = obj;
	/* a tensor taking over another's block in place: the block stays
	 * allocated, nothing happens in the allocator */
	if (alloc && b->share != WL_NONE)
		return;
	if (!grow((void **)&r->ev, r->n_ev, &r->cap_ev, sizeof *r->ev)) {
		r->oom = true;
		return;
	}
	r->ev[r->n_ev++] = (struct snap_event){
		b->addr, b->size ? b->size : b->bytes, b->time, b->tensor,
		alloc ? SN_ALLOC : SN_FREE};
}

static void on_seg(void *ctx, uint64_t addr, uint64_t size, bool small)
{
	struct snap_rec *r = ctx;
	if (!grow((void **)&r->seg, r->n_seg, &r->cap_seg, sizeof *r->seg)) {
		r->oom = true;
		return;
	}
	r->seg[r->n_seg++] = (struct snap_seg){addr, size, r->n_blk, 0, small};
}

static void on_blk(void *ctx, uint64_t addr, uint64_t size, uint64_t req,
		   bool used)
{
	struct snap_rec *r = ctx;
	if (r->oom || !r->n_seg ||
	    !grow((void **)&r->blk, r->n_blk, &r->cap_blk, sizeof *r->blk)) {
		r->oom = true;
		return;
	}
	r->blk[r->n_blk++] = (struct snap_blk){addr, size, req, used};
	r->seg[r->n_seg - 1].n++;
}

static void on_end(void *obj, const struct mem_ops *ops,
		   const struct mem_allocator *a, sim_time_t now)
{
	(void)now;
	struct snap_rec *r = obj;
	if (!ops->walk)
		return;
	struct mem_walk w = {r, on_seg, on_blk};
	ops->walk(a, &w);
	r->walked = true;
}

void snap_init(struct snap_rec *r, const struct wl_workload *wl)
{
	memset(r, 0, sizeof *r);
	r->wl = wl;
	r->obs = (struct ex_observer){.obj = r, .run = on_run,
				      .block = on_block, .end = on_end};
}

void snap_fini(struct snap_rec *r)
{
	free(r->ev);
	free(r->seg);
	free(r->blk);
	memset(r, 0, sizeof *r);
}

const struct ex_observer *snap_observer(struct snap_rec *r) { return &r->obs; }

static void frames(FILE *f, const struct snap_rec *r, uint32_t tensor)
{
	pk_list(f);
	if (r->wl) {
		pk_dict(f);
		pk_str(f, "filename");
		pk_str(f, r->wl->name ? r->wl->name : "workload");
		pk_str(f, "line");
		pk_int(f, 0);
		pk_str(f, "name");
		pk_str(f, tensor == WL_NONE ? "workspace"
					    : r->wl->tensors[tensor].name);
		pk_dict_end(f);
	}
	pk_list_end(f);
}

static void trace_entry(FILE *f, const struct snap_rec *r,
			const struct snap_event *e, const char *action)
{
	pk_dict(f);
	pk_str(f, "action");
	pk_str(f, action);
	pk_str(f, "addr");
	pk_uint(f, e->addr);
	pk_str(f, "size");
	pk_uint(f, e->size);
	pk_str(f, "stream");
	pk_int(f, 0);
	pk_str(f, "time_us");
	pk_int(f, e->time / 1000);
	pk_str(f, "frames");
	frames(f, r, e->tensor);
	pk_dict_end(f);
}

static void segment(FILE *f, const struct snap_rec *r,
		    const struct snap_seg *s)
{
	uint64_t used = 0, req = 0;
	for (size_t i = s->first; i < s->first + s->n; i++)
		if (r->blk[i].used) {
			used += r->blk[i].size;
			req += r->blk[i].req;
		}
	pk_dict(f);
	pk_str(f, "device");
	pk_int(f, 0);
	pk_str(f, "address");
	pk_uint(f, s->addr);
	pk_str(f, "total_size");
	pk_uint(f, s->size);
	pk_str(f, "allocated_size");
	pk_uint(f, used);
	pk_str(f, "active_size");
	pk_uint(f, used);
	pk_str(f, "requested_size");
	pk_uint(f, req);
	pk_str(f, "stream");
	pk_int(f, 0);
	pk_str(f, "segment_type");
	pk_str(f, s->small ? "small" : "large");
	pk_str(f, "segment_pool_id");
	pk_tuple2_int(f, 0, 0);
	pk_str(f, "is_expandable");
	pk_bool(f, false);
	pk_str(f, "frames");
	pk_list(f);
	pk_list_end(f);
	pk_str(f, "blocks");
	pk_list(f);
	for (size_t i = s->first; i < s->first + s->n; i++) {
		const struct snap_blk *b = &r->blk[i];
		pk_dict(f);
		pk_str(f, "address");
		pk_uint(f, b->addr);
		pk_str(f, "size");
		pk_uint(f, b->size);
		pk_str(f, "requested_size");
		pk_uint(f, b->req);
		pk_str(f, "state");
		pk_str(f, b->used ? "active_allocated" : "inactive");
		pk_str(f, "frames");
		pk_list(f);
		pk_list_end(f);
		pk_dict_end(f);
	}
	pk_list_end(f);
	pk_dict_end(f);
}

int snap_write(const struct snap_rec *r, const char *path, gms_err *err)
{
	if (r->oom)
		return gms_errf(err, "%s: out of host memory recording the "
				     "snapshot",
				path);
	if (!r->walked)
		return gms_errf(err,
				"%s: the %s allocator places nothing (no "
				"segments or addresses): a memory snapshot "
				"needs caching, bfc, pool-bestfit or highend",
				path, r->allocator[0] ? r->allocator : "run's");
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	FILE *f = o.f;
	pk_begin(f);
	pk_dict(f);
	pk_str(f, "segments");
	pk_list(f);
	for (size_t i = 0; i < r->n_seg; i++)
		segment(f, r, &r->seg[i]);
	pk_list_end(f);
	pk_str(f, "device_traces");
	pk_list(f);
	pk_list(f);
	for (size_t i = 0; i < r->n_ev; i++) {
		const struct snap_event *e = &r->ev[i];
		if (e->what == SN_ALLOC) {
			trace_entry(f, r, e, "alloc");
		} else {
			/* one stream: the free completes at once */
			trace_entry(f, r, e, "free_requested");
			trace_entry(f, r, e, "free_completed");
		}
	}
	pk_list_end(f);
	pk_list_end(f);
	/* what the simulator ran (not read by PyTorch's tools) */
	pk_str(f, "gpumemsim");
	pk_dict(f);
	pk_str(f, "allocator");
	pk_str(f, r->allocator);
	pk_str(f, "budget");
	pk_uint(f, r->budget);
	pk_dict_end(f);
	pk_dict_end(f);
	pk_end(f);
	return gms_out_commit(&o, err);
}
