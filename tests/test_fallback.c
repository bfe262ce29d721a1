/*
 * test_fallback.c - a convolution whose workspace does not fit is the
 * policy's decision (issue 12, item 2): the executor offers the cheaper
 * algorithm in the request, and only a policy that answers EX_FALLBACK
 * gets it; every fallback is counted. Runs on hw_test_profile with the
 * `arena` allocator (memory is a plain sum of live bytes) unless a
 * policy imposes its own (vDNN: pool-bestfit, sizes rounded to 512 B, so
 * the sizes here are multiples of 512).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "testkit.h"

/*
 * x (512 B, input) -> A -> a (512 B); A has two algorithms:
 *   fast: workspace 1024 B, 1x the op's 1000 ns;
 *   slow: no workspace, 3x.
 * A budget of 1536 B holds x and a (1024) but not the fast workspace
 * (1024 more): A must run slow (3000 ns) or not at all.
 */
static struct wl_workload *one_conv(void)
{
	struct wl_workload *w = wl_new("fb", 1);
	uint32_t x = T(w, "x", 512, WL_INPUT), a = T(w, "a", 512, WL_ACT);
	static const struct wl_algo al[] = {{"fast", 1024, 1.0},
					    {"slow", 0, 3.0}};
	OPX(w, "A", WL_FWD, 1000, &x, 1, &a, 1, al, 2);
	finalize(w);
	return w;
}

/* framework (TensorFlow's no-scratch fallback): 2 iterations, each runs A
 * slow (3000 ns) and counts one fallback; the plan is not changed, so the
 * second iteration tries the fast one again. With the whole device: fast,
 * 1000 ns, no fallback. */
static void test_framework_falls_back(void **state)
{
	(void)state;
	struct wl_workload *w = one_conv();
	struct pol p;
	make_policy(&p, "framework", NULL, 0);
	struct st_run st;
	assert_int_equal(run_hw(w, &p, 1536, 2, &st, false), 0);
	assert_false(st.oom.hit);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].time, 3000);
		assert_int_equal(st.iter[i].n_algo_fallback, 1);
	}
	assert_int_equal(st.steady.n_algo_fallback, 1);
	st_run_free(&st);
	assert_int_equal(run_hw(w, &p, 0, 1, &st, false), 0);
	assert_int_equal(st.iter[0].time, 1000);
	assert_int_equal(st.iter[0].n_algo_fallback, 0);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/* A policy without on_alloc_fail gets no fallback: OOM naming the
 * workspace and its 1024 bytes. */
static void test_no_hook_no_fallback(void **state)
{
	(void)state;
	struct wl_workload *w = one_conv();
	const struct pol_ops ops = {.name = "nohook"};
	struct pol p = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &p, 1536, 1, &st, false), 0);
	assert_true(st.oom.hit);
	assert_string_equal(st.oom.tensor, "workspace");
	assert_int_equal(st.oom.bytes, 1024);
	st_run_free(&st);
	wl_free(w);
}

/* vDNN fixes the algorithm (its p scheme picks fast): OOM, not a slow
 * run. vDNN++ blocks in cnmemMalloc, but nothing in flight will free
 * memory: OOM too, saying so. Neither counts a fallback. */
static void test_vdnn_never_falls_back(void **state)
{
	(void)state;
	struct wl_workload *w = one_conv();
	const char *kv[] = {"offload=none", "algo=p"};
	const char *names[] = {"vdnn", "vdnnpp"};
	for (int i = 0; i < 2; i++) {
		struct pol p;
		make_policy(&p, names[i], kv, 2);
		struct st_run st;
		assert_int_equal(run_hw(w, &p, 1536, 1, &st, false), 0);
		assert_true(st.oom.hit);
		assert_string_equal(st.oom.tensor, "workspace");
		assert_string_equal(st.allocator, "pool-bestfit");
		if (i == 1)
			assert_non_null(strstr(st.oom.reason, "nothing in flight"));
		st_run_free(&st);
		pol_destroy(&p);
	}
	/* with room for the workspace vDNN runs fast */
	struct pol p;
	make_policy(&p, "vdnn", kv, 2);
	struct st_run st;
	assert_int_equal(run_hw(w, &p, 2048, 1, &st, false), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.iter[0].time, 1000);
	st_run_free(&st);
	pol_destroy(&p);
	wl_free(w);
}

/*
 * Waiting, not falling back: A: x -> a (512), k (1024); B: a -> b (512)
 * with {fast: ws 1024, 1x; slow: ws 0, 3x}; C: b, k -> c (512); every op
 * 1000 ns. Budget 2560 (arena). Before B the policy swaps k out with
 * release (1024 B: a 1024 ns copy, 1000-2024). B's output b fits (a, k, b
 * = 2048) but its workspace does not (512 free); the policy answers
 * EX_WAIT; k's block is freed at 2024 and B runs fast, 2024-3024 (1024 ns
 * of memory stall). C swaps k back in on demand (b alone is live: 512 +
 * 1024 fits), 3024-4048 (1024 ns of H2D stall), and runs 4048-5048.
 * Iteration 5048 ns, no fallback.
 */
static uint32_t g_k;
static void w_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	(void)p;
	if (strcmp(op->name, "B") == 0)
		assert_int_not_equal(ex_swap_out(ex, g_k, EX_RELEASE),
				     ENG_EVENT_NONE);
}
static enum ex_verdict w_fail(struct pol *p, struct ex *ex,
			      const struct ex_alloc_req *r)
{
	(void)p;
	(void)ex;
	/* the request names the cheaper algorithm the policy declines */
	assert_int_equal(r->tensor, WL_NONE);
	assert_int_equal(r->algo, 0);
	assert_int_equal(r->fallback, 1);
	assert_int_equal(r->fallback_bytes, 0);
	return EX_WAIT;
}
static void test_wait_instead_of_fallback(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("fbw", 1);
	uint32_t x = T(w, "x", 512, WL_INPUT), a = T(w, "a", 512, WL_ACT),
		 k = T(w, "k", 1024, WL_ACT), b = T(w, "b", 512, WL_ACT),
		 c = T(w, "c", 512, WL_ACT);
	static const struct wl_algo al[] = {{"fast", 1024, 1.0},
					    {"slow", 0, 3.0}};
	uint32_t ak[2] = {a, k}, bk[2] = {b, k};
	OPX(w, "A", WL_FWD, 1000, &x, 1, ak, 2, NULL, 0);
	OPX(w, "B", WL_FWD, 1000, &a, 1, &b, 1, al, 2);
	OPX(w, "C", WL_FWD, 1000, bk, 2, &c, 1, NULL, 0);
	finalize(w);
	g_k = k;
	const struct pol_ops ops = {.name = "wait", .before_op = w_before,
				    .on_alloc_fail = w_fail};
	struct pol p = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &p, 2560, 1, &st, false), 0);
	assert_false(st.oom.hit);
	assert_int_equal(st.iter[0].time, 5048);
	assert_int_equal(st.iter[0].stall[ST_STALL_MEMORY], 1024);
	assert_int_equal(st.iter[0].stall[ST_STALL_H2D], 1024);
	assert_int_equal(st.iter[0].n_algo_fallback, 0);
	st_run_free(&st);
	wl_free(w);
}

/* EX_FALLBACK for a request without a fallback (a tensor) is a policy
 * error: the run fails, naming it. */
static enum ex_verdict bad_fail(struct pol *p, struct ex *ex,
				const struct ex_alloc_req *r)
{
	(void)p;
	(void)ex;
	(void)r;
	return EX_FALLBACK;
}
static void test_fallback_without_one_fails(void **state)
{
	(void)state;
	struct wl_workload *w = wl_new("fbx", 1);
	uint32_t x = T(w, "x", 512, WL_INPUT), a = T(w, "a", 1024, WL_ACT);
	OPX(w, "A", WL_FWD, 1000, &x, 1, &a, 1, NULL, 0);
	finalize(w);
	const struct pol_ops ops = {.name = "bad", .on_alloc_fail = bad_fail};
	struct pol p = {.ops = &ops};
	struct st_run st;
	assert_int_equal(run_hw(w, &p, 1024, 1, &st, false), -1);
	assert_true(st.failed);
	assert_non_null(strstr(st.error, "fallback"));
	st_run_free(&st);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_framework_falls_back),
		cmocka_unit_test(test_no_hook_no_fallback),
		cmocka_unit_test(test_vdnn_never_falls_back),
		cmocka_unit_test(test_wait_instead_of_fallback),
		cmocka_unit_test(test_fallback_without_one_fails),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
