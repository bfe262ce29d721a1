/*
 * replay.c - the replayer's scheduling core (see replay.h for the enqueue
 * policy and what it checks).
 */
#include "replay.h"
#include "../sim/msr.h"

#include <stdlib.h>
#include <string.h>

const char *rp_kind_name(enum sch_kind k)
{
	switch (k) {
	case SCH_ITER: return "iter";
	case SCH_KERNEL: return "kernel";
	case SCH_COPY: return "copy";
	case SCH_ALLOC: return "alloc";
	case SCH_FREE: return "free";
	case SCH_HOSTWAIT: return "hostwait";
	case SCH_END: return "end";
	case SCH_WAIT: return "wait";
	case SCH_RECORD: return "record";
	case SCH_CPU: return "cpu";
	case SCH_DRIVER: return "driver";
	default: return "?";
	}
}

/* A device block the log allocated. */
struct rp_blk {
	uint64_t addr;	     /* model address */
	uint64_t size;	     /* bytes */
	bool live;	     /* allocated and not yet freed */
	enum rp_stream last; /* stream that last used it (for the free) */
	uint64_t used;	     /* issue count when that stream used it */
};

/* The core's state for one replay. */
struct rp_ctx {
	const struct rp_backend *b; /* the backend */
	uint64_t arena;		    /* arena bytes, 0 = unbounded */
	bool runahead;		    /* launch without waiting per kernel
				       (rp_replay_host) */
	struct rp_blk *tens;	    /* blocks by tensor id */
	size_t n_tens;		    /* its length */
	struct rp_blk *ws;	    /* live workspace blocks, alloc order */
	size_t n_ws, cap_ws;	    /* their count, capacity */
	uint32_t *ev_ids;	    /* the iteration's signalled events,
				       sorted (dense index = position) */
	bool *ev_set;		    /* dense event signalled by an item
				       issued so far */
	uint32_t *ev_map;	    /* dense event -> the backend event that
				       stands for it (itself, a slot's, or
				       RP_FIRED) */
	uint32_t q_last[RP_STREAM_COUNT]; /* backend event of the last item
					     issued on each stream this
					     iteration, RP_FIRED if none */
	uint32_t q_wait[RP_STREAM_COUNT][RP_MAX_WAITS]; /* the logged
					     `wait`s for the next item on
					     each stream (backend events) */
	uint32_t q_nwait[RP_STREAM_COUNT]; /* how many of q_wait[s] */
	size_t n_ev;		    /* distinct events */
	const struct sch_item **slot_it; /* slot -> its record */
	uint32_t *q_slots[RP_STREAM_COUNT]; /* slots per stream, in
					       issue order */
	size_t q_n[RP_STREAM_COUNT];	     /* their counts */
	size_t q_done[RP_STREAM_COUNT];     /* first slot not known to have
					       finished */
	uint64_t n_issued;	    /* items issued (an ordering clock) */
	uint64_t kernel_issued;	    /* n_issued at the last kernel */
	uint64_t peak_end;	    /* highest end address allocated */
};

static int rec_err(gms_err *err, const struct sch_item *r, const char *what)
{
	return gms_errf(err, "replay: iteration %d, seq %u (%s): %s", r->iter,
			r->seq, rp_kind_name(r->kind), what);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* An event that needs no waiting for (a driver call's return: replayed
 * in an arena, nothing calls the driver; a record behind an idle
 * stream). */
#define RP_FIRED (SCH_NONE - 1)

/* Does record r signal an event (a kernel or copy's completion, a
 * record behind a queue, the driver calls' return, host compression)? */
static bool signals(const struct sch_item *r)
{
	return (r->kind == SCH_KERNEL || r->kind == SCH_COPY ||
		r->kind == SCH_RECORD || r->kind == SCH_DRIVER ||
		r->kind == SCH_CPU) &&
	       r->signal_ev != SCH_NONE;
}

/* Dense index of a logged event, SCH_NONE when no item signals it. */
static uint32_t ev_dense(const struct rp_ctx *c, uint32_t ev)
{
	const uint32_t *p = bsearch(&ev, c->ev_ids, c->n_ev, sizeof *p,
				    cmp_u32);
	return p ? (uint32_t)(p - c->ev_ids) : SCH_NONE;
}

/* The stream of a kernel, a copy, or a `wait`/`record` on a queue: a
 * compute queue's wait or record is the compute stream's (they were the
 * H2D stream's before issue 30: vDNN++'s forward barrier then waited on
 * the wrong stream, and a compute record stood for H2D's last item). */
static enum rp_stream item_stream(const struct sch_item *r)
{
	if (r->kind == SCH_KERNEL || r->q == ENG_COMPUTE)
		return RP_COMPUTE;
	return r->q == ENG_D2H ? RP_D2H : RP_H2D;
}

/* The block of a copy, or of a free: a tensor's, or a live workspace's
 * at `addr`. NULL when not live. */
static struct rp_blk *find_blk(struct rp_ctx *c, const struct sch_item *r,
			       size_t *ws_at)
{
	if (r->tensor != SCH_NONE)
		return r->tensor < c->n_tens && c->tens[r->tensor].live
			       ? &c->tens[r->tensor]
			       : NULL;
	for (size_t i = c->n_ws; i-- > 0;)
		if (c->ws[i].addr == r->addr) {
			*ws_at = i;
			return &c->ws[i];
		}
	return NULL;
}

static int do_alloc(struct rp_ctx *c, const struct sch_item *r, gms_err *err)
{
	if (r->size == 0 || r->addr + r->size < r->addr ||
	    (c->arena && r->addr + r->size > c->arena)) {
		char m[160];
		snprintf(m, sizeof m,
			 "block [%llu, +%llu) outside the arena of %llu bytes",
			 (unsigned long long)r->addr,
			 (unsigned long long)r->size,
			 (unsigned long long)c->arena);
		return rec_err(err, r, m);
	}
	struct rp_blk nb = {r->addr, r->size, true, RP_COMPUTE, c->n_issued};
	if (r->tensor == SCH_NONE) {
		if (c->n_ws == c->cap_ws) {
			size_t cap = c->cap_ws ? 2 * c->cap_ws : 8;
			struct rp_blk *p = realloc(c->ws, cap * sizeof *p);
			if (!p)
				return gms_errf(err, "replay: out of memory");
			c->ws = p;
			c->cap_ws = cap;
		}
		c->ws[c->n_ws++] = nb;
	} else {
		if (r->tensor >= c->n_tens) {
			size_t n = (size_t)r->tensor + 1;
			if (n < 2 * c->n_tens)
				n = 2 * c->n_tens;
			struct rp_blk *p = realloc(c->tens, n * sizeof *p);
			if (!p)
				return gms_errf(err, "replay: out of memory");
			memset(p + c->n_tens, 0, (n - c->n_tens) * sizeof *p);
			c->tens = p;
			c->n_tens = n;
		}
		if (c->tens[r->tensor].live)
			return rec_err(err, r, "tensor allocated twice");
		if (r->share != SCH_NONE) {
			/* an in-place takeover: the block passes from the
			 * shared tensor to this one (no free is logged) */
			if (r->share >= c->n_tens || !c->tens[r->share].live ||
			    c->tens[r->share].addr != r->addr)
				return rec_err(err, r, "takes over a block that "
						       "is not there");
			nb = c->tens[r->share];
			c->tens[r->share].live = false;
			c->tens[r->tensor] = nb;
			return 0; /* nothing to allocate on the device */
		}
		c->tens[r->tensor] = nb;
	}
	if (r->addr + r->size > c->peak_end)
		c->peak_end = r->addr + r->size;
	return c->b->alloc(c->b->obj, r, err);
}

static int do_free(struct rp_ctx *c, const struct sch_item *r, gms_err *err)
{
	size_t at = 0;
	struct rp_blk *k = find_blk(c, r, &at);
	if (!k || k->addr != r->addr)
		return rec_err(err, r, "free of a block not allocated there");
	/* ordered after the block's last use: its last copy when that
	 * came after the last kernel, else the compute stream */
	enum rp_stream s = k->used > c->kernel_issued ? k->last : RP_COMPUTE;
	k->live = false;
	if (r->tensor == SCH_NONE)
		c->ws[at] = c->ws[--c->n_ws];
	return c->b->free(c->b->obj, r, s, err);
}

#define RP_STR_(x) #x
#define RP_STR(x) RP_STR_(x)

/* Add backend event ev to a list of n waits (at most RP_MAX_WAITS): a
 * fired one (RP_FIRED) or one already there adds nothing. -1: full. */
static int add_wait(uint32_t *w, uint32_t *n, uint32_t ev)
{
	if (ev == RP_FIRED || ev == SCH_NONE)
		return 0;
	for (uint32_t i = 0; i < *n; i++)
		if (w[i] == ev)
			return 0;
	if (*n == RP_MAX_WAITS)
		return -1;
	w[(*n)++] = ev;
	return 0;
}

/* Issue a kernel or copy record as slot `slot`. */
static int do_issue(struct rp_ctx *c, const struct sch_item *r, uint32_t slot,
		    gms_err *err)
{
	struct rp_issue is = {.it = r, .slot = slot, .s = item_stream(r),
			      .signal = SCH_NONE,
			      .pred_ns = r->end - r->start};
	/* the logged `wait` records, then its own wait= */
	for (uint32_t i = 0; i < c->q_nwait[is.s]; i++)
		is.wait[is.n_wait++] = c->q_wait[is.s][i];
	c->q_nwait[is.s] = 0;
	if (r->wait_ev != SCH_NONE) {
		uint32_t d = ev_dense(c, r->wait_ev);
		if (d == SCH_NONE || !c->ev_set[d])
			return rec_err(err, r, "waits for an event no earlier "
					       "item signals");
		if (add_wait(is.wait, &is.n_wait, c->ev_map[d]) < 0)
			return rec_err(err, r, "more than " RP_STR(RP_MAX_WAITS)
					       " waits before one item");
	}
	/* every item signals a backend event: its logged one, or one of
	 * its own (n_ev + slot) that a later `record` may stand for */
	if (r->signal_ev != SCH_NONE) {
		uint32_t d = ev_dense(c, r->signal_ev);
		is.signal = d;
		c->ev_map[d] = d;
	} else {
		is.signal = (uint32_t)c->n_ev + slot;
	}
	c->q_last[is.s] = is.signal;
	c->n_issued++;
	if (r->kind == SCH_COPY) {
		size_t at;
		struct rp_blk *k = find_blk(c, r, &at);
		if (!k || r->size > k->size)
			return rec_err(err, r, "copy of a tensor that is not "
					       "allocated (or larger than "
					       "its block)");
		is.addr = k->addr;
		k->last = is.s;
		k->used = c->n_issued;
	} else {
		c->kernel_issued = c->n_issued;
		/* the workspace allocated last that is large enough */
		for (size_t i = c->n_ws; r->workspace && i-- > 0;)
			if (c->ws[i].size >= r->workspace) {
				is.addr = c->ws[i].addr;
				is.has_ws = true;
				break;
			}
	}
	if (c->b->issue(c->b->obj, &is, err) != 0)
		return -1;
	if (is.signal < c->n_ev)
		c->ev_set[is.signal] = true;
	c->slot_it[slot] = r;
	c->q_slots[is.s][c->q_n[is.s]++] = slot;
	return 0;
}

/* Host wait for memory until `until`: every issued item predicted to end
 * by then has finished (per stream, FIFO: the last such item). */
static int wait_memory(struct rp_ctx *c, sim_time_t until, gms_err *err)
{
	for (int s = 0; s < RP_STREAM_COUNT; s++) {
		size_t i = c->q_done[s];
		while (i < c->q_n[s] && c->slot_it[c->q_slots[s][i]]->end <= until)
			i++;
		if (i > c->q_done[s]) {
			if (c->b->host_wait_slot(c->b->obj, c->q_slots[s][i - 1],
						 err) != 0)
				return -1;
			c->q_done[s] = i;
		}
	}
	return 0;
}

static int push_row(struct rp_meas *m, int iter, uint32_t seq,
		    enum sch_kind k, int64_t s, int64_t e, gms_err *err)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct rp_row *p = realloc(m->rows, cap * sizeof *p);
		if (!p)
			return gms_errf(err, "replay: out of memory");
		m->rows = p;
		m->cap = cap;
	}
	m->rows[m->n++] = (struct rp_row){iter, seq, k, s, e};
	return 0;
}

/* Replay records [a, b): a is the ITER record, b its END record. */
static int replay_iter(struct rp_ctx *c, const struct sch_item *a,
		       const struct sch_item *b, struct rp_meas *m,
		       gms_err *err)
{
	uint32_t n_slots = 0;
	c->n_ev = 0;
	for (const struct sch_item *r = a; r < b; r++) {
		if (signals(r))
			c->ev_ids[c->n_ev++] = r->signal_ev;
		n_slots += r->kind == SCH_KERNEL || r->kind == SCH_COPY;
	}
	qsort(c->ev_ids, c->n_ev, sizeof *c->ev_ids, cmp_u32);
	size_t u = 0;
	for (size_t i = 0; i < c->n_ev; i++)
		if (u == 0 || c->ev_ids[u - 1] != c->ev_ids[i])
			c->ev_ids[u++] = c->ev_ids[i];
	c->n_ev = u;
	memset(c->ev_set, 0, u * sizeof *c->ev_set);
	for (size_t i = 0; i < u; i++)
		c->ev_map[i] = SCH_NONE;
	memset(c->q_n, 0, sizeof c->q_n);
	memset(c->q_done, 0, sizeof c->q_done);
	for (int q = 0; q < RP_STREAM_COUNT; q++) {
		c->q_last[q] = RP_FIRED; /* the streams drained at the last
					    iteration's end */
		c->q_nwait[q] = 0;
	}
	if (c->b->iter_begin(c->b->obj, a->iter, n_slots,
			     (uint32_t)u + n_slots, err))
		return -1;
	uint32_t slot = 0, kslot = SCH_NONE; /* the kernel not waited for */
	sim_time_t kend = 0;		      /* its predicted end */
	for (const struct sch_item *r = a + 1; r < b; r++) {
		if (r->seq <= r[-1].seq && r > a + 1)
			return rec_err(err, r, "records out of seq order");
		if (r->iter != a->iter)
			return rec_err(err, r, "record of another iteration");
		/* the model's host never runs ahead of the device: what it
		 * issued at or after a kernel's end waited for the kernel */
		if (!c->runahead && kslot != SCH_NONE && r->t >= kend) {
			if (c->b->host_wait_slot(c->b->obj, kslot, err) != 0)
				return -1;
			kslot = SCH_NONE;
		}
		int rc = 0;
		switch (r->kind) {
		case SCH_KERNEL:
		case SCH_COPY:
			/* a kernel logged before its predecessor's
			 * predicted end (the model does not do that) is
			 * issued as logged: the stream orders the two */
			rc = do_issue(c, r, slot, err);
			if (r->kind == SCH_KERNEL) {
				kslot = slot;
				kend = r->end;
			}
			slot++;
			break;
		case SCH_ALLOC: rc = do_alloc(c, r, err); break;
		case SCH_FREE: rc = do_free(c, r, err); break;
		case SCH_HOSTWAIT: {
			if (r->wait_ev == SCH_NONE) {
				rc = wait_memory(c, r->end, err);
				break;
			}
			uint32_t d = ev_dense(c, r->wait_ev);
			if (d == SCH_NONE || !c->ev_set[d])
				rc = rec_err(err, r, "host waits for an event no "
						     "earlier item signals");
			else if (c->ev_map[d] != RP_FIRED)
				rc = c->b->host_wait_event(c->b->obj,
							   c->ev_map[d], err);
			break;
		}
		case SCH_RECORD: {
			/* an event behind everything queued on the stream:
			 * the completion of its last item (FIFO) */
			uint32_t d = ev_dense(c, r->signal_ev);
			c->ev_map[d] = c->q_last[item_stream(r)];
			c->ev_set[d] = true;
			break;
		}
		case SCH_WAIT: {
			uint32_t d = ev_dense(c, r->wait_ev);
			if (d == SCH_NONE || !c->ev_set[d])
				rc = rec_err(err, r, "a stream waits for an event "
						     "no earlier item signals");
			else if (add_wait(c->q_wait[item_stream(r)],
					  &c->q_nwait[item_stream(r)],
					  c->ev_map[d]) < 0)
				rc = rec_err(err, r, "more than "
					     RP_STR(RP_MAX_WAITS) " waits "
					     "before one item");
			break;
		}
		case SCH_DRIVER:
			/* the host's cudaMalloc/cudaFree calls: the replay
			 * allocates inside its arena and makes none, so
			 * their return has happened (the cost they would
			 * have added is a finding of compare's, not
			 * replayed). But a cudaFree synchronises the
			 * device first (sim/ex.c, "driver calls"; the log's
			 * `record`s before it): the host waits for what
			 * every stream was given, as the model's did (a
			 * host running ahead skipped that sync) */
			for (int s = 0; r->calls[1] > 0 && rc == 0 &&
					s < RP_STREAM_COUNT; s++)
				if (c->q_last[s] != RP_FIRED)
					rc = c->b->host_wait_event(
						c->b->obj, c->q_last[s], err);
			if (rc == 0 && r->signal_ev != SCH_NONE) {
				uint32_t d = ev_dense(c, r->signal_ev);
				c->ev_map[d] = RP_FIRED;
				c->ev_set[d] = true;
			}
			break;
		case SCH_CPU:
			rc = rec_err(err, r, "host CPU work (vDNN++'s "
					     "compression, a host optimizer "
					     "step) is not replayed");
			break;
		default:
			rc = rec_err(err, r, "unexpected record inside an "
					     "iteration");
		}
		if (rc != 0)
			return -1;
	}
	int64_t span = 0;
	if (c->b->iter_end(c->b->obj, &span, err) != 0)
		return -1;
	if (push_row(m, a->iter, 0, SCH_ITER, 0, span, err) != 0)
		return -1;
	for (uint32_t i = 0; i < n_slots; i++) {
		int64_t s = 0, e = 0;
		if (c->b->times(c->b->obj, i, &s, &e) != 0)
			return gms_errf(err, "replay: iteration %d: no times "
					     "for item %u", a->iter, i);
		if (push_row(m, a->iter, c->slot_it[i]->seq,
			     c->slot_it[i]->kind, s, e, err) != 0)
			return -1;
	}
	return 0;
}

uint64_t rp_arena_extent(const struct sch_log *log)
{
	uint64_t end = 1;
	for (size_t i = 0; i < log->n; i++) {
		const struct sch_item *r = &log->it[i];
		if (r->kind == SCH_ALLOC && r->addr + r->size > end)
			end = r->addr + r->size;
	}
	return end;
}

uint64_t rp_spin_ns(uint64_t pred, uint64_t overhead)
{
	return pred > overhead ? pred - overhead : 0;
}

int rp_replay(const struct sch_log *log, const struct rp_backend *b,
	      uint64_t arena, struct rp_meas *m, gms_err *err)
{
	return rp_replay_host(log, b, arena, false, m, err);
}

int rp_replay_host(const struct sch_log *log, const struct rp_backend *b,
		   uint64_t arena, bool runahead, struct rp_meas *m,
		   gms_err *err)
{
	struct rp_ctx c = {.b = b, .arena = arena, .runahead = runahead};
	int rc = -1;
	size_t n = log->n ? log->n : 1;
	c.ev_ids = malloc(n * sizeof *c.ev_ids);
	c.ev_set = malloc(n * sizeof *c.ev_set);
	c.ev_map = malloc(n * sizeof *c.ev_map);
	c.slot_it = malloc(n * sizeof *c.slot_it);
	for (int s = 0; s < RP_STREAM_COUNT; s++)
		c.q_slots[s] = malloc(n * sizeof *c.q_slots[s]);
	if (!c.ev_ids || !c.ev_set || !c.ev_map || !c.slot_it || !c.q_slots[0] ||
	    !c.q_slots[1] || !c.q_slots[2]) {
		gms_errf(err, "replay: out of memory");
		goto out;
	}
	size_t i = 0;
	/* set-up: the persistent tensors' blocks, before the first
	 * iteration (iter -1) */
	for (; i < log->n && log->it[i].kind == SCH_ALLOC && log->it[i].iter < 0;
	     i++)
		if (do_alloc(&c, &log->it[i], err) != 0)
			goto out;
	while (i < log->n) {
		const struct sch_item *a = &log->it[i];
		if (a->kind != SCH_ITER) {
			rec_err(err, a, "record outside an iteration");
			goto out;
		}
		size_t j = i + 1;
		while (j < log->n && log->it[j].kind != SCH_END)
			j++;
		if (j == log->n) {
			rec_err(err, a, "iteration without an end record");
			goto out;
		}
		if (replay_iter(&c, a, &log->it[j], m, err) != 0)
			goto out;
		i = j + 1;
	}
	if (c.peak_end > m->peak_bytes)
		m->peak_bytes = c.peak_end;
	rc = 0;
out:
	free(c.tens);
	free(c.ws);
	free(c.ev_ids);
	free(c.ev_set);
	free(c.ev_map);
	free(c.slot_it);
	for (int s = 0; s < RP_STREAM_COUNT; s++)
		free(c.q_slots[s]);
	return rc;
}

int rp_meas_write(const struct rp_meas *m, const char *path, gms_err *err)
{
	/* one writer for the format: sim/msr's */
	char known[64];
	int mode = gms_lookup(msr_mode_names, m->mode, known, sizeof known);
	int alloc = gms_lookup(msr_alloc_names, m->alloc, known, sizeof known);
	if (mode < 0 || alloc < 0)
		return gms_errf(err, "replay: mode '%s' or allocation '%s' "
				     "unknown", m->mode, m->alloc);
	struct msr x;
	if (msr_init(&x, m->device[0] ? m->device : "-", (enum msr_mode)mode,
		     (enum msr_alloc)alloc, err) < 0)
		return -1;
	x.peak_bytes = m->peak_bytes;
	int rc = 0;
	for (size_t i = 0; i < m->n && rc == 0; i++) {
		const struct rp_row *r = &m->rows[i];
		enum msr_kind k = r->kind == SCH_ITER	  ? MSR_ITER
				  : r->kind == SCH_KERNEL ? MSR_KERNEL
							  : MSR_COPY;
		rc = msr_add(&x, r->iter, r->seq, k, r->start_ns, r->end_ns,
			     err);
	}
	if (rc == 0)
		rc = msr_write(&x, path, err);
	msr_free(&x);
	return rc;
}

void rp_meas_free(struct rp_meas *m)
{
	free(m->rows);
	m->rows = NULL;
	m->n = m->cap = 0;
}
