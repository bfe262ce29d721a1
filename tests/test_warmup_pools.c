/*
 * test_warmup_pools.c - warm-up until the pools stop growing (ex.c,
 * settle_pools; docs/host.md, "Warm-up until the pools stop growing"),
 * with cudaMallocHost's size-dependent cost (costs.host_alloc_bytes_per_s,
 * hw_host_alloc_time). Timelines worked out by hand in the comments.
 *
 * Setting: hw_test_profile (a copy of b bytes takes b ns, launch 0, host
 * launch 0), the `arena` allocator (no cudaMalloc at all: only the pinned
 * pool can grow), the pytorch personality with the host waiting for each
 * kernel (EX_HOST_WAIT), cudaMallocHost H = 10000 ns + bytes / 1e8 B/s
 * (10 ns a byte).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testkit.h"
#include "wlkit.h"

#define OP(w, name, ph, time, in, n_in, out, n_out) \
	OPX(w, name, ph, time, in, n_in, out, n_out, NULL, 0)

/* A policy that swaps a tensor out (with release, waited for) after one
 * op and back in (waited for) before another, in iterations from..to-1. */
struct swap_act {
	uint32_t t;	    /* the tensor */
	uint32_t out_after; /* op after which it goes out */
	uint32_t in_before; /* op before which it comes back */
	int from, to;	    /* iterations [from, to) */
};
struct swap_pol {
	const struct swap_act *a;
	size_t n;
	int iter; /* the iteration running (pol_ops.iter_begin) */
};

static void sp_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	(void)ex;
	((struct swap_pol *)p->priv)->iter = iter;
}

static void sp_act(struct pol *p, struct ex *ex, const struct wl_op *op,
		   bool before)
{
	struct swap_pol *s = p->priv;
	for (size_t i = 0; i < s->n; i++) {
		const struct swap_act *a = &s->a[i];
		if (s->iter < a->from || s->iter >= a->to)
			continue;
		eng_event ev = ENG_EVENT_NONE;
		if (!before && op->id == a->out_after)
			ev = ex_swap_out(ex, a->t, EX_RELEASE);
		else if (before && op->id == a->in_before)
			ev = ex_swap_in(ex, a->t, ENG_EVENT_NONE);
		else
			continue;
		assert_int_not_equal(ev, ENG_EVENT_NONE);
		ex_wait(ex, ev);
	}
}

static void sp_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	sp_act(p, ex, op, true);
}

static void sp_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	sp_act(p, ex, op, false);
}

static const struct pol_ops swap_ops = {
	.name = "swap-by-iteration",
	.summary = "test policy",
	.iter_begin = sp_iter_begin,
	.before_op = sp_before,
	.after_op = sp_after,
};

/* x 100 B (input), A: x -> a 1000 B (100 ns), B: x -> b 500 B (100 ns),
 * C: a, b -> c 100 B (100 ns): swap3 of test_exec.c. Tensor ids: x 0,
 * a 1, b 2, c 3; ops A 0, B 1, C 2. */
static struct wl_workload *swap3(void)
{
	struct wl_workload *w = wl_new("swap3", 1);
	wl_set_framework(w, "pytorch");
	uint32_t x = T(w, "x", 100, WL_INPUT), a = T(w, "a", 1000, WL_ACT),
		 b = T(w, "b", 500, WL_ACT), c = T(w, "c", 100, WL_ACT);
	OP(w, "A", WL_FWD, 100, &x, 1, &a, 1);
	OP(w, "B", WL_FWD, 100, &x, 1, &b, 1);
	uint32_t ab[] = {a, b};
	OP(w, "C", WL_FWD, 100, ab, 2, &c, 1);
	finalize(w);
	return w;
}

static void run_swaps(const struct wl_workload *w, const struct swap_act *a,
		      size_t n, int iters, int grow_max, struct st_run *st)
{
	struct swap_pol sp = {a, n, 0};
	struct pol pol = {.ops = &swap_ops, .priv = &sp};
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.host_alloc_cost = 10000;
	hw.host_alloc_bytes_per_s = 1e8;
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .iterations = iters,
			     .warmup = 1, .grow_max = grow_max,
			     .host = EX_HOST_WAIT};
	gms_err err = {{0}};
	if (ex_run(&cfg, st, &err) < 0)
		fail_msg("ex_run: %s", err.msg);
	assert_false(st->oom.hit);
}

/*
 * a goes out in every iteration, b from iteration 1 on.
 * Iteration 0: A 0-100; a's swap-out grows the empty pinned pool by
 *   1000 B: one cudaMallocHost of 10000 + 1000 B / 1e8 B/s = 10000 +
 *   10000 = 20000 ns, the host in it 100-20100 (stall alloc); D2H of a
 *   20100-21100; B 21100-21200; H2D of a 21200-22200; C 22200-22300:
 *   22300 ns.
 * Iteration 1: A 0-100; a's 1000 B come from the pool (given back at its
 *   swap-in): no call; D2H 100-1100; B 1100-1200; b's swap-out needs
 *   1500 B pinned with 1000 reserved: the pool grows by the 500 B
 *   shortfall, 10000 + 500 / 1e8 s = 15000 ns, 1200-16200; D2H of b
 *   16200-16700; H2D of a 16700-17700, of b 17700-18200; C 18200-18300:
 *   18300 ns, alloc 15000.
 * Iteration 2: the same without the call: 18300 - 15000 = 3300 ns.
 * warmup 1, 2 iterations asked: iteration 1, the first measured, grew the
 * pool, so it becomes warm-up and iteration 2 is run and measured: 3
 * iterations, warm-up 2, grow_extra 1, steady time 3300 ns. Without the
 * rule (grow_max 0) the measured iteration is 1: 18300 ns.
 */
static const struct swap_act grow_twice[] = {{1, 0, 2, 0, 1000},
					     {2, 1, 2, 1, 1000}};

static void test_pool_growth_is_warmup(void **state)
{
	(void)state;
	struct wl_workload *w = swap3();
	struct st_run st;
	run_swaps(w, grow_twice, 2, 2, 10, &st);
	assert_int_equal(st.n_iter, 3);
	assert_int_equal(st.warmup, 2);
	assert_true(st.grow_asked);
	assert_int_equal(st.grow_extra, 1);
	assert_false(st.grow_capped);
	assert_int_equal(st.iter[0].n_host_alloc, 1);
	assert_int_equal(st.iter[0].alloc_time, 20000);
	assert_int_equal(st.iter[0].time, 22300);
	assert_int_equal(st.iter[1].n_host_alloc, 1);
	assert_int_equal(st.iter[1].alloc_time, 15000);
	assert_int_equal(st.iter[1].stall[ST_STALL_ALLOC], 15000);
	assert_int_equal(st.iter[1].time, 18300);
	assert_int_equal(st.iter[2].n_host_alloc, 0);
	assert_int_equal(st.iter[2].alloc_time, 0);
	assert_int_equal(st.iter[2].time, 3300);
	assert_int_equal(st.steady.time, 3300);
	assert_int_equal(st.steady.alloc_time, 0);
	assert_int_equal(st.pinned_peak, 1500);
	st_run_free(&st);
	/* the rule off: iteration 1, growth and all, is measured */
	run_swaps(w, grow_twice, 2, 2, 0, &st);
	assert_int_equal(st.n_iter, 2);
	assert_int_equal(st.warmup, 1);
	assert_false(st.grow_asked);
	assert_int_equal(st.grow_extra, 0);
	assert_int_equal(st.steady.time, 18300);
	assert_int_equal(st.steady.alloc_time, 15000);
	st_run_free(&st);
	wl_free(w);
}

/*
 * Growth after a steady iteration: a goes out in every iteration, b from
 * iteration 2 on; 3 iterations asked, warm-up 1.
 * Iteration 0: 22300 ns (the pool grows by 1000 B, as above).
 * Iteration 1: a's 1000 B from the pool: 2300 ns (test_exec.c's
 *   test_swap_out_and_back), measured, no growth.
 * Iteration 2: b's 500 B grow the pool (15000 ns): 18300 ns. A measured
 *   iteration grew: iterations 0-2 become warm-up (warm-up 3, 2 added)
 *   and two more run, 3 and 4, at 3300 ns each: steady 3300 ns, 5
 *   iterations. Checking only the first measured iteration would have
 *   measured iterations 1 and 2: (2300 + 18300) / 2 = 10300 ns.
 */
static const struct swap_act grow_after_steady[] = {{1, 0, 2, 0, 1000},
						    {2, 1, 2, 2, 1000}};

static void test_pool_growth_after_steady(void **state)
{
	(void)state;
	struct wl_workload *w = swap3();
	struct st_run st;
	run_swaps(w, grow_after_steady, 2, 3, 10, &st);
	assert_int_equal(st.n_iter, 5);
	assert_int_equal(st.warmup, 3);
	assert_int_equal(st.grow_extra, 2);
	assert_false(st.grow_capped);
	assert_int_equal(st.iter[0].time, 22300);
	assert_int_equal(st.iter[1].time, 2300);
	assert_int_equal(st.iter[1].n_host_alloc, 0);
	assert_int_equal(st.iter[2].time, 18300);
	assert_int_equal(st.iter[2].alloc_time, 15000);
	assert_int_equal(st.iter[3].time, 3300);
	assert_int_equal(st.iter[4].time, 3300);
	assert_int_equal(st.steady.time, 3300);
	assert_int_equal(st.steady.n_host_alloc, 0);
	st_run_free(&st);
	wl_free(w);
}

/*
 * The cap: nothing goes out in iteration 0, a from iteration 1, b from
 * iteration 2, and grow_max 1.
 * Iteration 0: A, B, C back to back: 300 ns, no call.
 * Iteration 1: a's swap-out grows the empty pool by 1000 B (20000 ns):
 *   22300 ns as iteration 0 above. It was to be measured and grew: warm-up
 *   2, grow_extra 1 (the cap).
 * Iteration 2: b's swap-out grows the pool by 500 B (15000 ns): 18300 ns
 *   as iteration 1 above. It grew again, and the cap allows no more:
 *   grow_capped, and it is measured (steady 18300 ns, alloc 15000).
 * 3 iterations in all (2 asked + 1).
 */
static const struct swap_act grow_late[] = {{1, 0, 2, 1, 1000},
					    {2, 1, 2, 2, 1000}};

static void test_pool_growth_cap_reported(void **state)
{
	(void)state;
	struct wl_workload *w = swap3();
	struct st_run st;
	run_swaps(w, grow_late, 2, 2, 1, &st);
	assert_int_equal(st.n_iter, 3);
	assert_int_equal(st.warmup, 2);
	assert_int_equal(st.grow_extra, 1);
	assert_true(st.grow_capped);
	assert_int_equal(st.iter[0].time, 300);
	assert_int_equal(st.iter[0].n_host_alloc, 0);
	assert_int_equal(st.iter[1].time, 22300);
	assert_int_equal(st.iter[1].alloc_time, 20000);
	assert_int_equal(st.iter[2].time, 18300);
	assert_int_equal(st.iter[2].alloc_time, 15000);
	assert_int_equal(st.steady.time, 18300);
	/* the report says so */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	st_print(&st, f);
	fclose(f);
	assert_non_null(strstr(buf, "pools grew         still in a measured "
				    "iteration after 1 extra warm-up "
				    "iterations (the cap)"));
	free(buf);
	st_run_free(&st);
	/* a cap of 2 lets iteration 2 go to the warm-up too: iteration 3
	 * grows nothing and is measured, 3300 ns */
	run_swaps(w, grow_late, 2, 2, 2, &st);
	assert_int_equal(st.n_iter, 4);
	assert_int_equal(st.warmup, 3);
	assert_int_equal(st.grow_extra, 2);
	assert_false(st.grow_capped);
	assert_int_equal(st.steady.time, 3300);
	st_run_free(&st);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_growth_is_warmup),
		cmocka_unit_test(test_pool_growth_after_steady),
		cmocka_unit_test(test_pool_growth_cap_reported),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
