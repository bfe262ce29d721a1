/* test_ev.c - event queue order and the engines' timing, by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../sim/eng.h"
#include "../sim/ev.h"

/* ---- event queue ---- */

struct log {
	uint64_t v[4096]; /* recorded args in firing order */
	sim_time_t at[4096]; /* firing times */
	size_t n;
	struct ev_queue *q;
};

static void rec(void *obj, uint64_t arg)
{
	struct log *l = obj;
	l->at[l->n] = ev_now(l->q);
	l->v[l->n++] = arg;
}

static void test_ties_run_in_scheduling_order(void **state)
{
	(void)state;
	struct ev_queue q;
	struct log l = {.q = &q};
	ev_init(&q);
	/* 100 events at the same time, scheduled in order 0..99, mixed with
	 * earlier and later ones */
	for (uint64_t i = 0; i < 100; i++) {
		ev_at(&q, 50, rec, &l, i);
		ev_at(&q, 10 + (sim_time_t)i, rec, &l, 1000 + i);
	}
	ev_run(&q, NULL);
	assert_int_equal(l.n, 200);
	/* times 10..49 first (40 events), then the 100 ties in order, then
	 * times 50 (arg 1040, scheduled after tie 40... ) */
	size_t k = 0;
	for (uint64_t i = 0; i < 40; i++, k++)
		assert_int_equal(l.v[k], 1000 + i);
	/* at time 50: ties 0..99 were scheduled interleaved with the event
	 * of time 50 (arg 1040, scheduled right after tie 40) */
	for (uint64_t i = 0; i <= 40; i++, k++)
		assert_int_equal(l.v[k], i);
	assert_int_equal(l.v[k++], 1040);
	for (uint64_t i = 41; i < 100; i++, k++)
		assert_int_equal(l.v[k], i);
	for (uint64_t i = 41; i < 100; i++, k++)
		assert_int_equal(l.v[k], 1000 + i);
	ev_fini(&q);
}

static void test_heap_order_random(void **state)
{
	(void)state;
	struct ev_queue q;
	struct log l = {.q = &q};
	ev_init(&q);
	/* linear congruential generator: times in [0, 64) so many ties */
	uint64_t x = 12345;
	size_t count[64] = {0};
	for (uint64_t i = 0; i < 4000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		sim_time_t t = (sim_time_t)((x >> 33) % 64);
		count[t]++;
		ev_at(&q, t, rec, &l, i);
	}
	ev_run(&q, NULL);
	assert_int_equal(l.n, 4000);
	for (size_t i = 1; i < l.n; i++) {
		assert_true(l.at[i - 1] <= l.at[i]);
		if (l.at[i - 1] == l.at[i]) /* ties: scheduling order */
			assert_true(l.v[i - 1] < l.v[i]);
	}
	ev_fini(&q);
}

/* ---- engines ---- */

struct fix {
	struct ev_queue q;
	struct hw_profile hw;
	struct eng e;
	sim_time_t done_at[16]; /* completion time by tag */
};

static void done(void *obj, uint64_t tag)
{
	struct fix *f = obj;
	f->done_at[tag] = ev_now(&f->q);
}

static struct fix *fix_new(double derate, sim_time_t latency, bool shared)
{
	struct fix *f = calloc(1, sizeof *f);
	ev_init(&f->q);
	hw_test_profile(&f->hw, GMS_GIB);
	for (int d = 0; d < HW_DIR_COUNT; d++) {
		f->hw.link[d].derate = derate;
		f->hw.link[d].latency = latency;
	}
	f->hw.shared_engine = shared;
	assert_int_equal(eng_init(&f->e, &f->q, &f->hw), 0);
	return f;
}

static void fix_free(struct fix *f)
{
	eng_fini(&f->e);
	ev_fini(&f->q);
	free(f);
}

static void copy(struct fix *f, enum eng_q q, uint64_t bytes, uint64_t tag)
{
	struct eng_item it = {.type = ENG_COPY, .q = q, .bytes = bytes,
			      .pinned = true, .wait = ENG_EVENT_NONE,
			      .signal = ENG_EVENT_NONE, .done = done, .obj = f,
			      .arg = tag};
	assert_int_equal(eng_issue(&f->e, &it), 0);
}

/* test profile: 1 byte per ns each way */
static void test_fifo_order_one_engine(void **state)
{
	(void)state;
	struct fix *f = fix_new(1.0, 0, false);
	copy(f, ENG_H2D, 100, 0);
	copy(f, ENG_H2D, 200, 1);
	copy(f, ENG_H2D, 300, 2);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[0], 100);
	assert_int_equal(f->done_at[1], 300);
	assert_int_equal(f->done_at[2], 600);
	assert_int_equal(f->e.f[ENG_H2D].busy, 600);
	assert_int_equal(f->e.f[ENG_H2D].bytes, 600);
	fix_free(f);
}

static void test_directions_overlap(void **state)
{
	(void)state;
	struct fix *f = fix_new(1.0, 0, false);
	copy(f, ENG_D2H, 1000, 0);
	copy(f, ENG_H2D, 500, 1);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[0], 1000); /* concurrent, full speed */
	assert_int_equal(f->done_at[1], 500);
	fix_free(f);
}

static void test_derate_when_both_busy(void **state)
{
	(void)state;
	/* derate 0.5: both run at 0.5 B/ns while both transfer. H2D's 500 B
	 * take 1000 ns; by then D2H has moved 500 of its 1000 B and the
	 * remaining 500 go at full speed: done at 1500. */
	struct fix *f = fix_new(0.5, 0, false);
	copy(f, ENG_D2H, 1000, 0);
	copy(f, ENG_H2D, 500, 1);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[1], 1000);
	assert_int_equal(f->done_at[0], 1500);
	fix_free(f);
}

static void test_shared_engine_serialises(void **state)
{
	(void)state;
	struct fix *f = fix_new(0.5, 0, true);
	copy(f, ENG_D2H, 1000, 0);
	copy(f, ENG_H2D, 500, 1);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[0], 1000);
	assert_int_equal(f->done_at[1], 1500);
	fix_free(f);
}

static void test_latency_then_bandwidth(void **state)
{
	(void)state;
	struct fix *f = fix_new(1.0, 10, false);
	copy(f, ENG_H2D, 100, 0);
	copy(f, ENG_H2D, 100, 1);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[0], 110);
	assert_int_equal(f->done_at[1], 220);
	fix_free(f);
}

static void test_copy_waits_for_kernel_event(void **state)
{
	(void)state;
	struct fix *f = fix_new(1.0, 0, false);
	eng_event ev = eng_event_new(&f->e, ENG_COMPUTE);
	struct eng_item k = {.type = ENG_KERNEL, .q = ENG_COMPUTE,
			     .duration = 500, .wait = ENG_EVENT_NONE,
			     .signal = ev, .done = done, .obj = f, .arg = 0};
	struct eng_item w = {.type = ENG_WAIT, .q = ENG_D2H, .wait = ev,
			     .signal = ENG_EVENT_NONE};
	assert_int_equal(eng_issue(&f->e, &w), 0);
	copy(f, ENG_D2H, 100, 1);
	copy(f, ENG_H2D, 100, 2); /* other queue: not held */
	assert_int_equal(eng_issue(&f->e, &k), 0);
	ev_run(&f->q, NULL);
	assert_int_equal(f->done_at[0], 500);
	assert_int_equal(f->done_at[1], 600);
	assert_int_equal(f->done_at[2], 100);
	assert_true(eng_event_done(&f->e, ev));
	assert_int_equal(f->e.evt[ev].when, 500);
	fix_free(f);
}

static void test_record_fires_behind_queued_work(void **state)
{
	(void)state;
	struct fix *f = fix_new(1.0, 0, false);
	copy(f, ENG_D2H, 300, 0);
	eng_event ev = eng_record(&f->e, ENG_D2H);
	assert_false(eng_event_done(&f->e, ev));
	ev_run(&f->q, NULL);
	assert_true(eng_event_done(&f->e, ev));
	assert_int_equal(f->e.evt[ev].when, 300);
	eng_event idle = eng_record(&f->e, ENG_H2D); /* idle queue */
	assert_true(eng_event_done(&f->e, idle));
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ties_run_in_scheduling_order),
		cmocka_unit_test(test_heap_order_random),
		cmocka_unit_test(test_fifo_order_one_engine),
		cmocka_unit_test(test_directions_overlap),
		cmocka_unit_test(test_derate_when_both_busy),
		cmocka_unit_test(test_shared_engine_serialises),
		cmocka_unit_test(test_latency_then_bandwidth),
		cmocka_unit_test(test_copy_waits_for_kernel_event),
		cmocka_unit_test(test_record_fires_behind_queued_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
