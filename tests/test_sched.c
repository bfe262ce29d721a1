/* test_sched.c - the schedule log (sim/sched.h): written for a small
 * hand-built workload under a swapping policy and checked record by
 * record against values worked out by hand; sch_check on it and on
 * hand-corrupted copies; the reader's located errors; a round trip on a
 * generated network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/sched.h"
#include "../validate/replay_host.h"
#include "../workloads/wl_gen.h"
#include "testkit.h"

/* A fresh temporary path for this test. */
static void tmp_path(char *buf, size_t n, const char *what)
{
	snprintf(buf, n, "/tmp/gms_test_sched_%ld_%s", (long)getpid(), what);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* Simulate wl under policy `pol_name` (settings kv) on hw with the
 * allocator and budget and the host thread `host`, writing the schedule
 * log to path. */
static void write_log_host(const struct wl_workload *wl,
			   const char *pol_name, const char *const *kv,
			   size_t n_kv, const struct hw_profile *hw,
			   const char *allocator, uint64_t budget, int iters,
			   enum ex_host host, const char *path)
{
	struct pol pol;
	make_policy(&pol, pol_name, kv, n_kv);
	gms_err err = {{0}};
	struct sch_writer *w =
		sch_writer_open(path, wl, hw, pol.label, iters, 0, &err);
	assert_non_null(w);
	struct ex_cfg cfg = {.hw = hw, .wl = wl, .pol = &pol,
			     .allocator = allocator, .budget = budget,
			     .iterations = iters, .warmup = 0, .host = host,
			     .obs = sch_writer_observer(w)};
	struct st_run st;
	if (ex_run(&cfg, &st, &err) < 0)
		fail_msg("ex_run: %s", err.msg);
	assert_false(st.oom.hit);
	if (sch_writer_close(w, st.mem.peak_allocated, st.mem.peak_reserved,
			     &err) < 0)
		fail_msg("close: %s", err.msg);
	st_run_free(&st);
	pol_destroy(&pol);
}

static void write_log(const struct wl_workload *wl, const char *pol_name,
		      const char *const *kv, size_t n_kv,
		      const struct hw_profile *hw, const char *allocator,
		      uint64_t budget, int iters, const char *path)
{
	write_log_host(wl, pol_name, kv, n_kv, hw, allocator, budget, iters,
		       EX_HOST_FRAMEWORK, path);
}

/* The hand-built workload: input x (100 B), f: x -> a (100 B), g: x -> b
 * (200 B, read by nobody), h: a -> c (100 B, read by nobody); each op
 * 10 ns (testkit OPX: its time). */
static struct wl_workload *small_wl(void)
{
	struct wl_workload *w = wl_new("small", 1);
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 200, WL_ACT), c = T(w, "c", 100, WL_ACT);
	OPX(w, "f", WL_FWD, 10, &x, 1, &a, 1, NULL, 0);
	OPX(w, "g", WL_FWD, 10, &x, 1, &b, 1, NULL, 0);
	OPX(w, "h", WL_FWD, 10, &a, 1, &c, 1, NULL, 0);
	finalize(w);
	return w;
}

/* One expected record: kind, t, id (KERNEL: op; COPY, ALLOC, FREE:
 * tensor), event waited (KERNEL/COPY/HOSTWAIT) and signalled, start and
 * end (HOSTWAIT: until), bytes. */
struct want {
	enum sch_kind kind;
	sim_time_t t;
	uint32_t id, wait, signal;
	sim_time_t start, end;
	uint64_t bytes;
};
#define N_ SCH_NONE

/* Derivation, ondemand on the test profile (kernel: its time; a copy of
 * b bytes takes b ns, no latency; driver calls cost 0), arena with a
 * budget of 300 bytes (a block fits iff in use + it <= 300; every
 * address 0), one iteration from t = 0; events are numbered from 0 in
 * the iteration as the engine makes them:
 *  0  alloc x (input, at the iteration's start), 100 B in use
 *  1  alloc a for f: 200 B
 *  2  kernel f [0, 10), signals event 0
 *     at 10, g needs b (200 B): 400 > 300, ondemand evicts a (not busy;
 *     x is g's input), a swap-out with release that the host waits for:
 *  3  driver: the pinned host pool grows once for a (cudaMallocHost,
 *     cost 0) and its gate, event 1, fires at once (no queue waits)
 *  4  wait on the d2h queue for event 0, f's, which wrote a: fired at
 *     10, so it takes no time, but the schedule carries it (a replay
 *     whose host runs ahead must not copy a before f ends; issue 30)
 *  5  copy a d2h [10, 110), 100 B at 1 B/ns, signals event 2
 *  6  hostwait on event 2 from 10 until 110, cause d2h
 *  7  free a at 110 (its copy done: OUT); 0 + x = 100 B in use
 *  8  alloc b at 110: 300 B
 *  9  kernel g [110, 120), signals event 3
 * 10  free x at 120 (its last reader g is done)
 * 11  free b at 120 (no reader: freed at its producer)
 *     h reads a, OUT: swapped in on demand into a fresh block
 * 12  alloc a at 120
 * 13  wait on the h2d queue for event 3, g's, the kernel that completed
 *     last: the executor swaps a in once g is done, and a replay whose
 *     host runs ahead issues the copy while g may still be queued (a's
 *     block may be one g's inputs freed; issue 30: ondemand's copies ran
 *     ahead of the kernels before them); fired at 120, no time
 * 14  copy a h2d [120, 220), signals event 4
 * 15  hostwait on event 4 from 120 until 220, cause h2d
 * 16  alloc c at 220
 * 17  wait on the compute queue for event 4, the copy that brought a
 *     in (fired at 220: no time; for the schedule, as 4)
 * 18  kernel h [220, 230), signals event 5
 * 19  free a at 230 (h done), 20  free c (no reader)
 * (the swap-out at 4 waits for event 0 alone: f wrote a and is also the
 * kernel that completed last)
 * end: time 230; peak allocated 300 (x + b at 110). */
static const struct want small_want[] = {
	{SCH_ALLOC, 0, 0, N_, N_, 0, 0, 100},
	{SCH_ALLOC, 0, 1, N_, N_, 0, 0, 100},
	{SCH_KERNEL, 0, 0, N_, 0, 0, 10, 0},
	{SCH_DRIVER, 10, N_, N_, 1, 0, 0, 0},
	{SCH_WAIT, 10, N_, 0, N_, 0, 0, 0},
	{SCH_COPY, 10, 1, N_, 2, 10, 110, 100},
	{SCH_HOSTWAIT, 10, N_, 2, N_, 0, 110, 0},
	{SCH_FREE, 110, 1, N_, N_, 0, 0, 100},
	{SCH_ALLOC, 110, 2, N_, N_, 0, 0, 200},
	{SCH_KERNEL, 110, 1, N_, 3, 110, 120, 0},
	{SCH_FREE, 120, 0, N_, N_, 0, 0, 100},
	{SCH_FREE, 120, 2, N_, N_, 0, 0, 200},
	{SCH_ALLOC, 120, 1, N_, N_, 0, 0, 100},
	{SCH_WAIT, 120, N_, 3, N_, 0, 0, 0},
	{SCH_COPY, 120, 1, N_, 4, 120, 220, 100},
	{SCH_HOSTWAIT, 120, N_, 4, N_, 0, 220, 0},
	{SCH_ALLOC, 220, 3, N_, N_, 0, 0, 100},
	{SCH_WAIT, 220, N_, 4, N_, 0, 0, 0},
	{SCH_KERNEL, 220, 2, N_, 5, 220, 230, 0},
	{SCH_FREE, 230, 1, N_, N_, 0, 0, 100},
	{SCH_FREE, 230, 3, N_, N_, 0, 0, 100},
};

static void write_small(const char *path)
{
	struct wl_workload *wl = small_wl();
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	write_log(wl, "ondemand", NULL, 0, &hw, "arena", 300, 1, path);
	wl_free(wl);
}

static void test_small_by_hand(void **state)
{
	(void)state;
	char path[256];
	tmp_path(path, sizeof path, "small");
	write_small(path);
	struct sch_log log;
	gms_err err = {{0}};
	if (sch_read(path, &log, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(log.workload, "small");
	assert_string_equal(log.hw, "test");
	assert_string_equal(log.allocator, "arena");
	assert_int_equal(log.budget, 300);
	assert_int_equal(log.iterations, 1);
	assert_false(log.shared_copy);
	size_t n = sizeof small_want / sizeof *small_want;
	/* iter, the records, end; no set-up (no parameters) */
	assert_int_equal(log.n, n + 2);
	assert_int_equal(log.it[0].kind, SCH_ITER);
	assert_int_equal(log.it[0].start, 0);
	for (size_t i = 0; i < n; i++) {
		const struct sch_item *it = &log.it[i + 1];
		const struct want *w = &small_want[i];
		assert_int_equal(it->seq, i);
		assert_int_equal(it->iter, 0);
		assert_int_equal(it->kind, w->kind);
		assert_int_equal(it->t, w->t);
		assert_int_equal(it->signal_ev, w->signal);
		switch (w->kind) {
		case SCH_KERNEL:
			assert_int_equal(it->op, w->id);
			assert_int_equal(it->wait_ev, N_);
			assert_int_equal(it->start, w->start);
			assert_int_equal(it->end, w->end);
			assert_int_equal(it->n_tensors, 2);
			break;
		case SCH_COPY:
			assert_int_equal(it->tensor, w->id);
			assert_int_equal(it->start, w->start);
			assert_int_equal(it->end, w->end);
			assert_int_equal(it->size, w->bytes);
			assert_true(it->pinned);
			break;
		case SCH_ALLOC:
		case SCH_FREE:
			assert_int_equal(it->tensor, w->id);
			assert_int_equal(it->size, w->bytes);
			assert_int_equal(it->addr, 0);
			break;
		case SCH_HOSTWAIT:
			assert_int_equal(it->wait_ev, w->wait);
			assert_int_equal(it->end, w->end);
			break;
		case SCH_WAIT:
			assert_int_equal(it->wait_ev, w->wait);
			break;
		case SCH_DRIVER:
			assert_int_equal(it->calls[2], 1);
			assert_int_equal(it->cost, 0);
			break;
		default:
			break;
		}
	}
	/* it[0] is the iter record: seq k is it[k + 1] */
	assert_int_equal(log.it[7].cause, ST_STALL_D2H);
	assert_int_equal(log.it[16].cause, ST_STALL_H2D);
	assert_int_equal(log.it[5].q, ENG_D2H);
	assert_int_equal(log.it[14].q, ENG_H2D);
	assert_int_equal(log.it[18].q, ENG_COMPUTE);
	/* kernel h reads a (1) and writes c (3) */
	assert_int_equal(log.it[19].tensors[0], 1);
	assert_int_equal(log.it[19].tensors[1], 3);
	assert_string_equal(log.it[19].name, "h");
	assert_int_equal(log.it[n + 1].kind, SCH_END);
	assert_int_equal(log.it[n + 1].end, 230);
	assert_int_equal(log.peak_allocated, 300);
	if (sch_check(&log, &err) < 0)
		fail_msg("%s", err.msg);
	sch_free(&log);
	unlink(path);
}

/* Replace the first occurrence of `from` after the line starting with
 * `anchor` by `to` in file path (a hand corruption). */
static void corrupt(const char *path, const char *anchor, const char *from,
		    const char *to)
{
	char *s = read_all(path);
	char *a = strstr(s, anchor);
	assert_non_null(a);
	char *f = strstr(a, from);
	assert_non_null(f);
	FILE *o = fopen(path, "w");
	assert_non_null(o);
	fwrite(s, 1, (size_t)(f - s), o);
	fputs(to, o);
	fputs(f + strlen(from), o);
	fclose(o);
	free(s);
}

/* sch_check on the small log corrupted by hand: the message names the
 * problem. */
static void check_fails(const char *anchor, const char *from, const char *to,
			const char *from2, const char *to2, const char *need)
{
	char path[256];
	tmp_path(path, sizeof path, "bad");
	write_small(path);
	corrupt(path, anchor, from, to);
	if (from2)
		corrupt(path, anchor, from2, to2);
	struct sch_log log;
	gms_err err = {{0}};
	if (sch_read(path, &log, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(sch_check(&log, &err), -1);
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, need));
	sch_free(&log);
	unlink(path);
}

static void test_check_corrupted(void **state)
{
	(void)state;
	/* overlap on a queue: kernel h issued at 115 and run [115, 230),
	 * while g, issued before it on compute, runs until 120 */
	check_fails("kernel seq=18", "t=220", "t=115", "start=220",
		    "start=115",
		    "starts at 115 on queue compute, before the item issued "
		    "before it ends at 120");
	/* the host waits on an event nothing signals: 9 */
	check_fails("hostwait seq=6", "event=2", "event=9", NULL, NULL,
		    "waits for event 9, which nothing before it");
	/* the swap-in copies a before its block is allocated: the alloc
	 * (seq 12) made an alloc of another tensor id (7) */
	check_fails("alloc seq=12", "tensor=1", "tensor=7", NULL, NULL,
		    "tensor 1 is not allocated");
	/* the swap-out's copy of a after a is freed: the free moved to the
	 * copy's start */
	check_fails("free seq=7", "t=110", "t=50", NULL, NULL,
		    "freed at 50 while a kernel or copy uses it until 110");
	/* the same log claimed to come from a placing allocator: every
	 * address 0, so x and a overlap */
	check_fails("meta", "allocator=arena", "allocator=pool-bestfit", NULL,
		    NULL,
		    "[0, 100) overlaps a live block [0, 100)");
}

/* The reader rejects a bad file with path:line:col and the key. */
static void read_fails(const char *text, const char *need)
{
	char path[256];
	tmp_path(path, sizeof path, "read");
	write_text(path, text);
	struct sch_log log;
	gms_err err = {{0}};
	assert_int_equal(sch_read(path, &log, &err), -1);
	print_message("%s\n", err.msg);
	char full[512];
	snprintf(full, sizeof full, "%s:%s", path, need);
	assert_non_null(strstr(err.msg, full));
	unlink(path);
}

#define HDR "gms-schedule 1\n"
#define META "meta workload=w hw=h policy=p allocator=arena budget=9 " \
	     "batch=1 iterations=1 warmup=0 shared=0\n"

static void test_reader_errors(void **state)
{
	(void)state;
	/* wrong version: column 14, after "gms-schedule " */
	read_fails("gms-schedule 2\n" META "peak allocated=0 reserved=0\n",
		   "1:14: version '2'");
	/* unknown key: `size` at column 26 of the alloc line ("alloc " is
	 * columns 1-6, "seq=0 " 7-12, "t=0 " 13-16, "tensor=0 " 17-25) */
	read_fails(HDR META "alloc seq=0 t=0 tensor=0 size=4 name=x bytes=4 "
			    "addr=0 share=-\npeak allocated=0 reserved=0\n",
		   "3:26: key 'size': unknown in a alloc record");
	/* missing key: share, reported past the line's end (col 47) */
	read_fails(HDR META "alloc seq=0 t=0 tensor=0 name=x bytes=4 "
			    "addr=0\npeak allocated=0 reserved=0\n",
		   "3:47: key 'share': missing");
	/* bad number: bytes=4x, its value at column 39 ("name=x " is
	 * columns 26-32, "bytes=" 33-38) */
	read_fails(HDR META "alloc seq=0 t=0 tensor=0 name=x bytes=4x "
			    "addr=0 share=-\npeak allocated=0 reserved=0\n",
		   "3:39: key 'bytes': not a non-negative integer");
	/* unknown record and a log cut short */
	read_fails(HDR META "bogus x=1\n", "3:1: unknown record 'bogus'");
	read_fails(HDR META, "3:1: ends before its peak record");
}

/* ResNet-50 at batch 2 (pytorch: caching allocator, real addresses)
 * under ondemand with about 60% of what it needs beyond its parameters,
 * optimizer state and gradients (swaps; the foreach update reads every
 * gradient at once, workloads/gen.c "foreach", so they all fit) and under checkpoint (recomputes): each log reads back and passes sch_check,
 * and holds swaps, or recomputations. A recomputation writes only the
 * outputs it regenerates (a batch norm re-run for its output, not its
 * saved statistics, which are kept): its kernel record lists those, not
 * every output of the op, which would name a tensor with no block. */
static void round_trip(const char *policy, bool recompute, bool pressure)
{
	gms_err err = {{0}};
	struct wl_gen_args a = {.batch = 2, .framework = WL_FW_PYTORCH,
				.optimizer = WL_OPTIM_MOMENTUM};
	struct wl_workload *wl = wl_gen_build(wl_gen_find("resnet50"), &a, &err);
	if (!wl)
		fail_msg("%s", err.msg);
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	uint64_t whole = wl_bytes_of_kind(wl, WL_PARAM) +
			 wl_bytes_of_kind(wl, WL_OPT_STATE) +
			 wl_bytes_of_kind(wl, WL_PARAM_GRAD);
	uint64_t peak = framework_peak(wl, &hw);
	uint64_t budget = pressure ? whole + (peak - whole) / 10 * 6 : 0;
	char path[256];
	tmp_path(path, sizeof path, policy);
	write_log(wl, policy, NULL, 0, &hw, "caching", budget, 2, path);
	struct sch_log log;
	if (sch_read(path, &log, &err) < 0)
		fail_msg("%s", err.msg);
	if (sch_check(&log, &err) < 0)
		fail_msg("%s: %s", policy, err.msg);
	size_t copies = 0, kernels = 0, recomputed = 0, ends = 0;
	for (size_t i = 0; i < log.n; i++) {
		copies += log.it[i].kind == SCH_COPY;
		kernels += log.it[i].kind == SCH_KERNEL;
		recomputed += log.it[i].kind == SCH_KERNEL &&
			      log.it[i].recompute;
		ends += log.it[i].kind == SCH_END;
	}
	assert_int_equal(ends, 2);
	assert_true(kernels >= 2 * (size_t)wl->n_ops);
	assert_true(recompute ? recomputed > 0 : copies > 0);
	sch_free(&log);
	unlink(path);
	wl_free(wl);
}

static void test_resnet50_round_trip(void **state)
{
	(void)state;
	round_trip("ondemand", false, true);
	/* checkpoint drops and recomputes whatever the budget (Chen et
	 * al.'s sqrt(n) segments): the whole test device */
	round_trip("checkpoint", true, false);
}

/* The small workload of test_small_by_hand with 25 ms ops, simulated
 * with a host that runs ahead and replayed the same way on the host
 * backend (validate/replay_host.h, predicted times spun as they are):
 * the on-demand swap-in of a (slot 3: f 0, a's swap-out 1, g 2, a's
 * swap-in 3, h 4) starts after g (slot 2) has ended, as the model has
 * it (at 50 ms + 100 ns, g's end). The replay's host issues the swap-in
 * right after launching g, while g spins for 25 ms: before the executor
 * logged the wait for the kernel that completed last (issue 30), the
 * idle h2d stream started the copy at once, 25 ms early; ondemand's
 * real-ahead replays on the H100 ran 31-33% under the prediction so. */
static void test_runahead_replay_swap_in_after_kernel(void **state)
{
	(void)state;
	const sim_time_t op = 25 * SIM_MS;
	struct wl_workload *wl = wl_new("small", 1);
	uint32_t x = T(wl, "x", 100, WL_INPUT), a = T(wl, "a", 100, WL_ACT),
		 b = T(wl, "b", 200, WL_ACT), c = T(wl, "c", 100, WL_ACT);
	OPX(wl, "f", WL_FWD, op, &x, 1, &a, 1, NULL, 0);
	OPX(wl, "g", WL_FWD, op, &x, 1, &b, 1, NULL, 0);
	OPX(wl, "h", WL_FWD, op, &a, 1, &c, 1, NULL, 0);
	finalize(wl);
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	char path[256];
	tmp_path(path, sizeof path, "ahead");
	write_log_host(wl, "ondemand", NULL, 0, &hw, "arena", 300, 1,
		       EX_HOST_RUNAHEAD, path);
	wl_free(wl);
	struct sch_log log;
	gms_err err = {{0}};
	if (sch_read(path, &log, &err) < 0)
		fail_msg("%s", err.msg);
	/* seq 13 (it[14]): the h2d queue waits for g's event, 3 */
	assert_int_equal(log.it[14].kind, SCH_WAIT);
	assert_int_equal(log.it[14].q, ENG_H2D);
	assert_int_equal(log.it[14].wait_ev, 3);
	assert_int_equal(log.it[15].kind, SCH_COPY);
	assert_int_equal(log.it[15].start, 2 * op + 100);
	struct rp_host_cfg cfg = {.arena = rp_arena_extent(&log),
				  .time_div = 1, .copy_cap = 200};
	struct rp_host *h = rp_host_new(&cfg, &err);
	assert_non_null(h);
	struct rp_meas m = {.mode = "spin", .alloc = "arena"};
	if (rp_replay_host(&log, rp_host_backend(h), cfg.arena, true, &m,
			   &err) < 0)
		fail_msg("%s", err.msg);
	const struct rp_host_span *g = rp_host_span(h, 0, 2),
				  *in = rp_host_span(h, 0, 3);
	assert_non_null(g);
	assert_non_null(in);
	assert_true(g->done && in->done);
	assert_true(g->tick1 < in->tick0);
	rp_meas_free(&m);
	rp_host_free(h);
	sch_free(&log);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_by_hand),
		cmocka_unit_test(test_check_corrupted),
		cmocka_unit_test(test_reader_errors),
		cmocka_unit_test(test_resnet50_round_trip),
		cmocka_unit_test(test_runahead_replay_swap_in_after_kernel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
