/*
 * test_replay.c - the replayer's scheduling core (validate/replay.h) on
 * its host backend (validate/replay_host.h), spin mode: a schedule built
 * here by hand is replayed and the order of every item is checked
 * against the schedule's dependencies, on the backend's logical clock
 * (never on wall-clock times).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "../validate/replay_host.h"

#define ARENA 4096 /* bytes: the schedule's budget */
#define MS SIM_MS

/* A log under construction (names point at literals: no sch_free). */
struct blog {
	struct sch_log log; /* the log */
	uint32_t seq;	    /* next seq of the current iteration */
	int iter;	    /* current iteration */
};

static struct sch_item *add(struct blog *b, enum sch_kind k, sim_time_t t)
{
	struct sch_log *l = &b->log;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 32;
		l->it = realloc(l->it, l->cap * sizeof *l->it);
		assert_non_null(l->it);
	}
	struct sch_item *r = &l->it[l->n++];
	memset(r, 0, sizeof *r);
	r->kind = k;
	r->iter = b->iter;
	r->seq = b->seq++;
	r->t = t;
	r->name = "";
	r->algo = "";
	r->tensor = SCH_NONE;
	r->share = SCH_NONE; /* no in-place takeover */
	r->wait_ev = r->signal_ev = SCH_NONE;
	return r;
}

static void kern(struct blog *b, sim_time_t t, uint32_t op, sim_time_t s,
		 sim_time_t e, uint32_t wait, uint32_t sig, uint64_t ws)
{
	struct sch_item *r = add(b, SCH_KERNEL, t);
	r->q = ENG_COMPUTE;
	r->op = op;
	r->start = s;
	r->end = e;
	r->wait_ev = wait;
	r->signal_ev = sig;
	r->workspace = ws;
}

static void copy(struct blog *b, sim_time_t t, enum eng_q q, uint32_t tensor,
		 uint64_t bytes, bool pinned, sim_time_t s, sim_time_t e,
		 uint32_t wait, uint32_t sig)
{
	struct sch_item *r = add(b, SCH_COPY, t);
	r->q = q;
	r->tensor = tensor;
	r->size = bytes;
	r->pinned = pinned;
	r->start = s;
	r->end = e;
	r->wait_ev = wait;
	r->signal_ev = sig;
}

static void blk(struct blog *b, enum sch_kind k, sim_time_t t,
		uint32_t tensor, uint64_t bytes, uint64_t addr)
{
	struct sch_item *r = add(b, k, t);
	r->tensor = tensor;
	r->size = bytes;
	r->addr = addr;
}

static void hostwait(struct blog *b, sim_time_t t, uint32_t ev,
		     sim_time_t until)
{
	struct sch_item *r = add(b, SCH_HOSTWAIT, t);
	r->wait_ev = ev;
	r->end = until;
	r->cause = ev == SCH_NONE ? ST_STALL_MEMORY : ST_STALL_H2D;
}

/*
 * One iteration (times in ms, predicted; events are engine ids, which
 * differ between the iterations to exercise the core's dense mapping):
 *   alloc x (tensor 0, 1024 B at 0), a (1, 1024 B at 1024)
 *   K1  [0, 2)  signals E1                         slot 0
 *   offload x (d2h, pinned) t=0, waits E1, [2, 3), signals E2   slot 1
 *   (iteration 1 only: hostwait memory t=2 until 3)
 *   alloc p (2, 512 B at 2048) t=2
 *   prefetch p (h2d, pageable) t=2, [2, 6), signals E3          slot 2
 *   K2  [2, 4) t=2                                 slot 3
 *   free x t=3 (the offload released it)
 *   hostwait E3 t=4 until 6 (cause h2d)
 *   K3  [6, 7) t=6                                 slot 4
 *   free p, a t=7
 *   alloc ws (256 B at 3840) t=7
 *   K4  [7, 8) t=7, workspace 256                  slot 5
 *   free ws t=8
 */
static void iteration(struct blog *b, int i, int64_t u, bool logged_waits)
{
	uint32_t e1 = 7 + 100 * (uint32_t)i, e2 = 9 + 100 * (uint32_t)i,
		 e3 = 4 + 100 * (uint32_t)i;
	b->iter = i;
	b->seq = 0;
	struct sch_item *it = add(b, SCH_ITER, 0);
	it->start = 8 * u * i;
	blk(b, SCH_ALLOC, 0, 0, 1024, 0);
	blk(b, SCH_ALLOC, 0, 1, 1024, 1024);
	kern(b, 0, 0, 0, 2 * u, SCH_NONE, e1, 0);
	if (logged_waits) {
		/* as sim/ex.c logs a swap-out: `wait` records on the d2h
		 * stream for its producer's E1, then for a driver call's
		 * return (a cudaMallocHost the replay does not make, so
		 * fired), and the copy with no wait= of its own */
		struct sch_item *w = add(b, SCH_WAIT, 0);
		w->q = ENG_D2H;
		w->wait_ev = e1;
		struct sch_item *d = add(b, SCH_DRIVER, 0);
		d->signal_ev = 11 + 100 * (uint32_t)i;
		w = add(b, SCH_WAIT, 0);
		w->q = ENG_D2H;
		w->wait_ev = d->signal_ev;
		copy(b, 0, ENG_D2H, 0, 1024, true, 2 * u, 3 * u, SCH_NONE, e2);
	} else {
		copy(b, 0, ENG_D2H, 0, 1024, true, 2 * u, 3 * u, e1, e2);
	}
	if (i == 1)
		hostwait(b, 2 * u, SCH_NONE, 3 * u);
	blk(b, SCH_ALLOC, 2 * u, 2, 512, 2048);
	copy(b, 2 * u, ENG_H2D, 2, 512, false, 2 * u, 6 * u, SCH_NONE, e3);
	kern(b, 2 * u, 1, 2 * u, 4 * u, SCH_NONE, SCH_NONE, 0);
	blk(b, SCH_FREE, 3 * u, 0, 1024, 0);
	hostwait(b, 4 * u, e3, 6 * u);
	kern(b, 6 * u, 2, 6 * u, 7 * u, SCH_NONE, SCH_NONE, 0);
	blk(b, SCH_FREE, 7 * u, 2, 512, 2048);
	blk(b, SCH_FREE, 7 * u, 1, 1024, 1024);
	blk(b, SCH_ALLOC, 7 * u, SCH_NONE, 256, 3840);
	kern(b, 7 * u, 3, 7 * u, 8 * u, SCH_NONE, SCH_NONE, 256);
	blk(b, SCH_FREE, 8 * u, SCH_NONE, 256, 3840);
	struct sch_item *end = add(b, SCH_END, 8 * u);
	end->end = 8 * u;
}

/* The schedule above in units of `u` ns (MS everywhere but the run-ahead
 * test, which stretches it so that its overlap does not hang on a
 * stream thread waking within 2 ms on a loaded machine). */
static void build_waits(struct blog *b, int64_t u, bool logged_waits)
{
	memset(b, 0, sizeof *b);
	snprintf(b->log.workload, sizeof b->log.workload, "hand");
	b->log.budget = ARENA;
	b->log.iterations = 2;
	iteration(b, 0, u, logged_waits);
	iteration(b, 1, u, logged_waits);
}

static void build_in(struct blog *b, int64_t u) { build_waits(b, u, false); }

static void build(struct blog *b) { build_in(b, MS); }

static struct rp_host *host(void)
{
	gms_err err;
	/* 1: predicted times are spun as they are, an iteration 8 ms:
	 * long enough that a missing host wait shows even on a loaded
	 * machine (a stream thread wakes in far less than K1's 2 ms) */
	struct rp_host_cfg cfg = {.arena = ARENA, .time_div = 1,
				  .copy_cap = ARENA};
	struct rp_host *h = rp_host_new(&cfg, &err);
	assert_non_null(h);
	return h;
}

/* a ran entirely before b started (logical clock) */
static void before(const struct rp_host *h, int ia, uint32_t a, int ib,
		   uint32_t b)
{
	const struct rp_host_span *x = rp_host_span(h, ia, a),
				  *y = rp_host_span(h, ib, b);
	assert_non_null(x);
	assert_non_null(y);
	assert_true(x->done && y->done);
	assert_true(x->tick1 < y->tick0);
}

enum { K1, OFF, PRE, K2, K3, K4, N_SLOTS };

/* Log b replayed on the host backend (into *m), the host waiting per
 * kernel or running ahead; returns the backend. */
static struct rp_host *replay_log(struct blog *b, bool runahead,
				  struct rp_meas *m)
{
	struct rp_host *h = host();
	*m = (struct rp_meas){.mode = "spin", .alloc = "arena"};
	gms_err err = {{0}};
	assert_int_equal(rp_replay_host(&b->log, rp_host_backend(h), ARENA,
					runahead, m, &err),
			 0);
	return h;
}

/* The hand-made log (built into *b; the caller frees b->log.it),
 * replayed by replay_log. */
static struct rp_host *replay_hand(struct blog *b, bool runahead,
				   struct rp_meas *m)
{
	/* run-ahead: K1 spins 50 ms, so the prefetch issued behind it
	 * starts while it runs even if the h2d thread waits tens of ms
	 * for a core (ASan on two shared cores missed 2 ms) */
	build_in(b, runahead ? 25 * MS : MS);
	return replay_log(b, runahead, m);
}

/* The compute stream's FIFO, the offload behind K1's event, K3 after
 * the host waited for the prefetch's E3, in both iterations. */
static void stream_order(struct rp_host *h)
{
	for (int i = 0; i < 2; i++) {
		before(h, i, K1, i, K2);
		before(h, i, K2, i, K3);
		before(h, i, K3, i, K4);
		before(h, i, K1, i, OFF);
		before(h, i, PRE, i, K3);
	}
}

static void test_order_follows_dependencies(void **state)
{
	(void)state;
	struct blog b;
	struct rp_meas m;
	struct rp_host *h = replay_hand(&b, false, &m);
	stream_order(h);
	for (int i = 0; i < 2; i++) {
		/* the prefetch is logged at t = 2 ms, K1's predicted end:
		 * the host waited for K1 before issuing it (else the idle
		 * h2d stream would have started it at once) */
		before(h, i, K1, i, PRE);
		assert_null(rp_host_span(h, i, N_SLOTS));
	}
	/* iteration 1's memory wait (until 3 ms) waited for the offload
	 * (predicted end 3 ms) before the prefetch was issued */
	before(h, 1, OFF, 1, PRE);
	/* iteration 1 starts after iteration 0 drained */
	for (uint32_t s = 0; s < N_SLOTS; s++)
		before(h, 0, s, 1, K1);
	/* the prefetch wrote p's 512 bytes at its model address 2048, and
	 * nothing around them */
	const unsigned char *a = rp_host_arena(h);
	assert_int_equal(a[2047], 0);
	assert_int_equal(a[2048], RP_HOST_FILL);
	assert_int_equal(a[2559], RP_HOST_FILL);
	assert_int_equal(a[2560], 0);
	/* peak: the highest end address, the workspace's 3840 + 256 */
	assert_int_equal(m.peak_bytes, 4096);
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

/* The CSV: two header lines, the column line, then per iteration one iter
 * row and one row per kernel and copy, seq and kind from the schedule. */
static void test_measurement_csv(void **state)
{
	(void)state;
	struct blog b;
	build(&b);
	struct rp_host *h = host();
	struct rp_meas m = {.mode = "spin", .alloc = "arena"};
	snprintf(m.device, sizeof m.device, "host");
	gms_err err = {{0}};
	assert_int_equal(rp_replay(&b.log, rp_host_backend(h), ARENA, &m,
				   &err), 0);
	char path[] = "build/test_replay.csvXXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(rp_meas_write(&m, path, &err), 0);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[256];
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "# gms-measure 1\n");
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "# device=host mode=spin alloc=arena "
				  "peak_bytes=4096\n");
	assert_non_null(fgets(line, sizeof line, f));
	assert_string_equal(line, "iter,seq,kind,start_ns,end_ns\n");
	/* seq of the kernels and copies, by hand from iteration():
	 * iteration 0: K1 3, offload 4, prefetch 6, K2 7, K3 10, K4 14;
	 * iteration 1 has the memory hostwait at 5, so 3, 4, 7, 8, 11, 15 */
	static const unsigned seqs[2][6] = {{3, 4, 6, 7, 10, 14},
					    {3, 4, 7, 8, 11, 15}};
	static const char *const kinds[6] = {"kernel", "copy", "copy",
					     "kernel", "kernel", "kernel"};
	for (int i = 0; i < 2; i++) {
		int it;
		unsigned seq;
		char kind[16];
		long long s, span;
		assert_non_null(fgets(line, sizeof line, f));
		assert_int_equal(sscanf(line, "%d,%u,%15[a-z],%lld,%lld", &it,
					&seq, kind, &s, &span), 5);
		assert_int_equal(it, i);
		assert_int_equal(seq, 0);
		assert_string_equal(kind, "iter");
		assert_int_equal(s, 0);
		for (int k = 0; k < 6; k++) {
			long long e;
			assert_non_null(fgets(line, sizeof line, f));
			assert_int_equal(sscanf(line, "%d,%u,%15[a-z],%lld,%lld",
						&it, &seq, kind, &s, &e), 5);
			assert_int_equal(it, i);
			assert_int_equal(seq, seqs[i][k]);
			assert_string_equal(kind, kinds[k]);
			assert_true(0 <= s && s <= e && e <= span);
		}
	}
	assert_null(fgets(line, sizeof line, f));
	fclose(f);
	remove(path);
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

/* Replays that must fail, naming the record. */
static void fails(struct blog *b, const char *want)
{
	struct rp_host *h = host();
	struct rp_meas m = {.mode = "spin", .alloc = "arena"};
	gms_err err = {{0}};
	assert_int_equal(rp_replay(&b->log, rp_host_backend(h), ARENA, &m,
				   &err), -1);
	if (!strstr(err.msg, want))
		fail_msg("error '%s' lacks '%s'", err.msg, want);
	rp_meas_free(&m);
	rp_host_free(h);
	free(b->log.it);
}

/* A run-ahead replay (rp_replay_host, runahead true) launches without
 * waiting for each kernel: iteration 0's prefetch, logged at K1's
 * predicted end (2 units; 50 ms here), is issued with K1 still spinning, so the idle
 * h2d stream starts it before K1 ends (the wait-per-kernel replay, above,
 * starts it after); the hostwait on E3 still holds K3 until the prefetch
 * is done, and the streams' order is the log's. */
static void test_runahead_replay(void **state)
{
	(void)state;
	struct blog b;
	struct rp_meas m;
	struct rp_host *h = replay_hand(&b, true, &m);
	const struct rp_host_span *k1 = rp_host_span(h, 0, K1),
				  *pre = rp_host_span(h, 0, PRE);
	assert_non_null(k1);
	assert_non_null(pre);
	assert_true(pre->tick0 < k1->tick1);
	stream_order(h);
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

/* Two `wait` records before one copy (the producer's event, then a
 * driver call's fired return): the copy waits for both, so with the host
 * running ahead the offload still starts after K1 ends. The core kept
 * only the last logged wait before issue 30's H100 run, and run-ahead
 * replays copied tensors before their producers wrote them. */
static void test_waits_accumulate(void **state)
{
	(void)state;
	struct blog b;
	build_waits(&b, 25 * MS, true);
	struct rp_meas m;
	struct rp_host *h = replay_log(&b, true, &m);
	stream_order(h); /* K1 before OFF in both iterations */
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

/* A one-iteration hand log: its start (iter; alloc p, tensor 0, 512 B
 * at 0) and its end (free p at `end`, the end record), replayed with
 * the host running ahead. */
static void begin_one(struct blog *b)
{
	memset(b, 0, sizeof *b);
	snprintf(b->log.workload, sizeof b->log.workload, "hand");
	b->log.budget = ARENA;
	b->log.iterations = 1;
	add(b, SCH_ITER, 0);
	blk(b, SCH_ALLOC, 0, 0, 512, 0);
}

static struct rp_host *end_one(struct blog *b, sim_time_t end,
			       struct rp_meas *m)
{
	blk(b, SCH_FREE, end, 0, 512, 0);
	struct sch_item *e = add(b, SCH_END, end);
	e->end = end;
	return replay_log(b, true, m);
}

/* A `wait` logged on the compute queue (sim/ex.c: a kernel that reads
 * what a copy brought in) holds the compute stream: with the host
 * running ahead, K starts after the prefetch ends. Before issue 30 the
 * core put a compute queue's wait on the H2D stream, and K ran at once.
 *   alloc p (512 B at 0); prefetch p (h2d) [0, 2) signals E5;
 *   wait q=compute E5; K [2, 3); free p; end at 3 (units of 25 ms) */
static void test_compute_wait(void **state)
{
	(void)state;
	const int64_t u = 25 * MS;
	struct blog b;
	begin_one(&b);
	copy(&b, 0, ENG_H2D, 0, 512, true, 0, 2 * u, SCH_NONE, 5);
	struct sch_item *w = add(&b, SCH_WAIT, 0);
	w->q = ENG_COMPUTE;
	w->wait_ev = 5;
	kern(&b, 0, 0, 2 * u, 3 * u, SCH_NONE, SCH_NONE, 0);
	struct rp_meas m;
	struct rp_host *h = end_one(&b, 3 * u, &m);
	before(h, 0, 0, 0, 1); /* slot 0 the prefetch, slot 1 K */
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

/* A cudaFree's device-wide sync (sim/ex.c, "driver calls": a `driver`
 * record with free=1 after `record`s on every queue, and the host's
 * hostwait for its return): the replay makes no cudaFree, but its host
 * waits for what the streams were given, as the model's did, so the
 * prefetch issued after the call starts after K ends. Before, the core
 * took the call's return as fired, and a host running ahead copied at
 * once, while K still ran.
 *   alloc p (512 B at 0); K [0, 2) signals E5; record compute E6, h2d
 *   E7, d2h E8; driver free=1 t=2 signals E9; hostwait E9 t=2 until 2;
 *   prefetch p (h2d) t=2 [2, 3); free p; end at 3 (units of 25 ms) */
static void test_driver_free_syncs(void **state)
{
	(void)state;
	const int64_t u = 25 * MS;
	struct blog b;
	begin_one(&b);
	kern(&b, 0, 0, 0, 2 * u, SCH_NONE, 5, 0);
	for (int q = 0; q < 3; q++) {
		struct sch_item *r = add(&b, SCH_RECORD, 0);
		r->q = q == 0 ? ENG_COMPUTE : q == 1 ? ENG_H2D : ENG_D2H;
		r->signal_ev = 6 + (uint32_t)q;
	}
	struct sch_item *d = add(&b, SCH_DRIVER, 2 * u);
	d->calls[1] = 1;
	d->signal_ev = 9;
	hostwait(&b, 2 * u, 9, 2 * u);
	b.log.it[b.log.n - 1].cause = ST_STALL_ALLOC;
	copy(&b, 2 * u, ENG_H2D, 0, 512, true, 2 * u, 3 * u, SCH_NONE, 10);
	struct rp_meas m;
	struct rp_host *h = end_one(&b, 3 * u, &m);
	before(h, 0, 0, 0, 1); /* slot 0 K, slot 1 the prefetch */
	rp_meas_free(&m);
	rp_host_free(h);
	free(b.log.it);
}

static void test_block_outside_the_arena(void **state)
{
	(void)state;
	struct blog b;
	build(&b);
	b.log.it[2].addr = 3584; /* a: 1024 B at 3584 ends at 4608 > 4096 */
	fails(&b, "iteration 0, seq 2 (alloc): block [3584, +1024) outside "
		  "the arena of 4096 bytes");
}

/* The arena an arena-mode replay needs is the highest end address
 * placed, not the budget (issue 21). build()'s blocks: a [0, 1024), b
 * [1024, 2048), c [2048, 2560), the workspace [3840, 4096): 4096. */
static void test_arena_extent(void **state)
{
	(void)state;
	struct blog b;
	build(&b);
	assert_int_equal(rp_arena_extent(&b.log), 4096);
	/* a run on the whole device logs the device's free bytes as its
	 * budget: the arena stays what the blocks need */
	b.log.budget = 80ULL << 30;
	assert_int_equal(rp_arena_extent(&b.log), 4096);
	/* the caching allocator's fresh segment addresses: c (512 B) at
	 * 5000 ends at 5512, past the budget of 4096 */
	b.log.budget = ARENA;
	b.log.it[5].addr = 5000;
	assert_int_equal(b.log.it[5].kind, SCH_ALLOC);
	assert_int_equal(b.log.it[5].size, 512);
	assert_int_equal(rp_arena_extent(&b.log), 5512);
	free(b.log.it);
}

/* A spin kernel spins for the prediction less the empty kernel's time:
 * 20 us predicted, 5.6 us empty -> 14.4 us; a prediction shorter than
 * an empty kernel spins 0 (it cannot be met: the launch alone is
 * longer). */
static void test_spin_ns(void **state)
{
	(void)state;
	assert_int_equal(rp_spin_ns(20000, 5600), 14400);
	assert_int_equal(rp_spin_ns(5600, 5600), 0);
	assert_int_equal(rp_spin_ns(3000, 5600), 0);
	assert_int_equal(rp_spin_ns(3000, 0), 3000);
}

static void test_wait_for_unsignalled_event(void **state)
{
	(void)state;
	struct blog b;
	build(&b);
	/* iteration 1's offload waits for iteration 0's E1 (id 7): events
	 * are valid only within their iteration */
	for (size_t i = 0; i < b.log.n; i++)
		if (b.log.it[i].iter == 1 && b.log.it[i].kind == SCH_COPY &&
		    b.log.it[i].q == ENG_D2H)
			b.log.it[i].wait_ev = 7;
	fails(&b, "iteration 1, seq 4 (copy): waits for an event no earlier "
		  "item signals");
}

static void test_copy_of_unallocated_tensor(void **state)
{
	(void)state;
	struct blog b;
	build(&b);
	b.log.it[5].tensor = 5; /* iteration 0's prefetch: never allocated */
	fails(&b, "iteration 0, seq 6 (copy): copy of a tensor that is not "
		  "allocated");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_follows_dependencies),
		cmocka_unit_test(test_measurement_csv),
		cmocka_unit_test(test_runahead_replay),
		cmocka_unit_test(test_waits_accumulate),
		cmocka_unit_test(test_compute_wait),
		cmocka_unit_test(test_driver_free_syncs),
		cmocka_unit_test(test_block_outside_the_arena),
		cmocka_unit_test(test_arena_extent),
		cmocka_unit_test(test_spin_ns),
		cmocka_unit_test(test_wait_for_unsignalled_event),
		cmocka_unit_test(test_copy_of_unallocated_tensor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
