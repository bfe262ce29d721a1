/*
 * test_host.c - the host thread (sim/ex.c, "the host thread"): kernels
 * launched by a host that runs ahead of the device up to a
 * synchronisation point, or waits for each; host.launch out of the
 * device time of calibrated kernels (sim/hw.c). Timelines worked out by
 * hand in the comments; hw_test_profile (a copy of b bytes takes b ns,
 * kernels have explicit times) and the `arena` allocator.
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

/* An op of `ns` ns timed by the profile (hw_test_profile: F FLOPs take
 * F / 1000 ns), so that its launch costs the host host.launch; with
 * `recorded`, an op of recorded time `ns` instead (as testkit's OPX),
 * whose launch costs the host nothing (ex.c, profile_timed). */
static void op_timed(struct wl_workload *w, const char *name, sim_time_t ns,
		     uint32_t in, uint32_t out, bool recorded)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = OT_OTHER,
			       .phase = WL_FWD, .in = &in, .n_in = 1,
			       .out = &out, .n_out = 1,
			       .time = recorded ? ns : 0,
			       .flops = recorded ? (double)ns : 1000.0 * ns,
			       .recomputable = true};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

/* The chain x -> A -> a -> B -> b -> C -> c -> D -> d -> E -> e, kernels
 * of 100, 10, 10, 100 and 10 ns; a is 200 bytes (its copy takes 200 ns).
 * `framework`: the personality recorded (NULL: none, as files). */
static struct wl_workload *chain5_as(const char *framework, bool recorded)
{
	struct wl_workload *w = wl_new("chain5", 1);
	uint32_t x = T(w, "x", 10, WL_INPUT), a = T(w, "a", 200, WL_ACT),
		 b = T(w, "b", 10, WL_ACT), c = T(w, "c", 10, WL_ACT),
		 d = T(w, "d", 10, WL_ACT), e = T(w, "e", 10, WL_ACT);
	op_timed(w, "A", 100, x, a, recorded);
	op_timed(w, "B", 10, a, b, recorded);
	op_timed(w, "C", 10, b, c, recorded);
	op_timed(w, "D", 100, c, d, recorded);
	op_timed(w, "E", 10, d, e, recorded);
	wl_set_framework(w, framework);
	finalize(w);
	return w;
}

static struct wl_workload *chain5(const char *framework)
{
	return chain5_as(framework, false);
}

/* A policy with one synchronisation point: after A it copies a to the
 * host (no release, not waited for: an offload), and before D the host
 * waits for that copy (a per-layer cudaStreamSynchronize, as vDNN's). */
struct sync_state {
	eng_event copy; /* the copy's event, this iteration */
};

static void sync_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct sync_state *s = p->priv;
	if (strcmp(op->name, "A") == 0) {
		s->copy = ex_swap_out(ex, 1 /* a */, 0);
		assert_int_not_equal(s->copy, ENG_EVENT_NONE);
	}
}

static void sync_before(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct sync_state *s = p->priv;
	if (strcmp(op->name, "D") == 0)
		ex_wait(ex, s->copy);
}

static const struct pol_ops sync_ops = {.name = "sync",
					.summary = "test policy",
					.before_op = sync_before,
					.after_op = sync_after};

/* chain5 for 2 iterations with host.launch L and host.alloc_call C
 * under host mode `mode`. */
static void run_chain_c(const struct wl_workload *w, sim_time_t L,
			sim_time_t C, enum ex_host mode, bool sync,
			struct st_run *st)
{
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.host_launch = L;
	hw.host_alloc_call = C;
	struct sync_state ss = {ENG_EVENT_NONE};
	const struct pol_ops none = {.name = "none"};
	struct pol pol = {.ops = sync ? &sync_ops : &none, .priv = &ss};
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .iterations = 2,
			     .warmup = 0, .host = mode};
	gms_err err = {{0}};
	if (ex_run(&cfg, st, &err) < 0)
		fail_msg("ex_run: %s", err.msg);
	assert_false(st->oom.hit);
	assert_int_equal(st->n_iter, 2);
}

static void run_chain(const struct wl_workload *w, sim_time_t L,
		      enum ex_host mode, bool sync, struct st_run *st)
{
	run_chain_c(w, L, 0, mode, sync, st);
}

/*
 * The host runs ahead, then blocks at a synchronisation point. L = 30 ns.
 * Host: launches A over [0, 30); A runs 30-130 (the device waited 30 for
 * the host). After A the copy of a is queued behind it: 130-330. The host
 * went on launching without waiting: B over [30, 60), C [60, 90); the
 * device runs B 130-140, C 140-150 (both launched long before). Before D
 * the host waits for the copy (the sync point): it returns at 330, then
 * launches D over [330, 360); D runs 360-460 (the device waited 30 more),
 * E launched [360, 390) runs 460-470. Iteration: 470 ns; host-bound
 * 30 + 30 = 60; host issue 5 x 30 = 150; the stall on the copy 150-330
 * = 180 (d2h). Iteration 1 begins at 470 after the loss read (the host
 * synchronised at the end) and repeats it: 470 again.
 * Without the host cost (L = 0): A 0-100, copy 100-300, B, C to 120, D
 * 300-400, E 400-410: 410 ns, the same less the two exposed launches;
 * the stall on the copy 120-300 = 180 ns as well.
 */
static void test_runahead_then_sync(void **state)
{
	(void)state;
	struct wl_workload *w = chain5(NULL);
	struct st_run st;
	run_chain(w, 30, EX_HOST_RUNAHEAD, true, &st);
	for (int i = 0; i < 2; i++) {
		const struct st_iter *it = &st.iter[i];
		assert_int_equal(it->start, 470 * i);
		assert_int_equal(it->time, 470);
		assert_int_equal(it->compute_busy, 230);
		assert_int_equal(it->host_issue, 150);
		assert_int_equal(it->host_bound, 60);
		assert_int_equal(it->stall[ST_STALL_D2H], 180);
	}
	st_run_free(&st);
	run_chain(w, 0, EX_HOST_RUNAHEAD, true, &st);
	assert_int_equal(st.iter[1].time, 410);
	assert_int_equal(st.iter[1].host_bound, 0);
	assert_int_equal(st.iter[1].stall[ST_STALL_D2H], 180);
	st_run_free(&st);
	wl_free(w);
}

/*
 * The same with a host that waits for each kernel before launching the
 * next: A launched [0, 30), runs 30-130; copy 130-330; B launched
 * [130, 160), runs 160-170; C [170, 200), 200-210; before D the host
 * waits for the copy until 330, launches D [330, 360), D 360-460; E
 * [460, 490), 490-500. Iteration 500 ns; every launch exposed: host-bound
 * 5 x 30 = 150; stall on the copy 210-330 = 120.
 */
static void test_wait_per_kernel(void **state)
{
	(void)state;
	struct wl_workload *w = chain5(NULL);
	struct st_run st;
	run_chain(w, 30, EX_HOST_WAIT, true, &st);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].time, 500);
		assert_int_equal(st.iter[i].host_bound, 150);
		assert_int_equal(st.iter[i].host_issue, 150);
		assert_int_equal(st.iter[i].stall[ST_STALL_D2H], 120);
	}
	st_run_free(&st);
	wl_free(w);
}

/*
 * The personality decides (EX_HOST_FRAMEWORK): pytorch runs ahead, a
 * workload with no framework waits. No sync point, L = 30. Run-ahead:
 * A launched [0, 30) runs 30-130; B..E are launched by 150, each before
 * the previous kernel ends: B 130-140, C 140-150, D 150-250, E 250-260:
 * 260 ns, host-bound 30. Waiting: each kernel 30 after the previous one:
 * A 30-130, B 160-170, C 200-210, D 240-340, E 370-380: 380 ns (the old
 * model, the launch inside each kernel: 5 x 30 + 230 = 380).
 */
static void test_personality_decides(void **state)
{
	(void)state;
	struct wl_workload *pt = chain5("pytorch"), *none = chain5(NULL);
	struct st_run st;
	run_chain(pt, 30, EX_HOST_FRAMEWORK, false, &st);
	assert_int_equal(st.iter[1].time, 260);
	assert_int_equal(st.iter[1].host_bound, 30);
	st_run_free(&st);
	run_chain(none, 30, EX_HOST_FRAMEWORK, false, &st);
	assert_int_equal(st.iter[1].time, 380);
	assert_int_equal(st.iter[1].host_bound, 150);
	st_run_free(&st);
	wl_free(pt);
	wl_free(none);
}

/* Recorded op times (a trace's TIME) stand for the whole op as before:
 * no host cost to launch them, in either mode. chain5 recorded, L = 30,
 * waiting: A 0-100, B 100-110, C 110-120, D 120-220, E 220-230: 230 ns,
 * as with L = 0. */
static void test_recorded_times_unchanged(void **state)
{
	(void)state;
	struct wl_workload *w = chain5_as(NULL, true);
	struct st_run st;
	run_chain(w, 30, EX_HOST_WAIT, false, &st);
	assert_int_equal(st.iter[1].time, 230);
	assert_int_equal(st.iter[1].host_issue, 0);
	assert_int_equal(st.iter[1].host_bound, 0);
	st_run_free(&st);
	wl_free(w);
}

/*
 * Allocator calls cost the host host.alloc_call (C = 5) each; run-ahead,
 * L = 30, no sync point. The host allocates x (0-5) and a (5-10),
 * launches A (10-40): A runs 40-140. At each kernel's end the executor
 * frees its inputs and allocates the next output, which the host, ahead,
 * does long before: free x, alloc b, launch B puts the host at 80; free
 * a, alloc c, launch C: 120; free b, alloc d, launch D: 160; free c,
 * alloc e, launch E: 200; free d, free e: 210. The device runs B 140-150,
 * C 150-160, D 160-260 (launched at 160, just in time), E 260-270:
 * 270 ns, host-bound 40 (before A). Host time: 5 launches x 30 + 12 calls
 * (6 allocations, 6 frees) x 5 = 210 ns. Iteration 1 begins at 270, the
 * host at 210 behind it: the same, 270 ns.
 */
static void test_alloc_calls(void **state)
{
	(void)state;
	struct wl_workload *w = chain5(NULL);
	struct st_run st;
	run_chain_c(w, 30, 5, EX_HOST_RUNAHEAD, false, &st);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(st.iter[i].time, 270);
		assert_int_equal(st.iter[i].host_bound, 40);
		assert_int_equal(st.iter[i].host_issue, 210);
	}
	st_run_free(&st);
	wl_free(w);
}

/* Every personality the generators have runs ahead (wl.c cites each);
 * none given (files, traces) or an unknown name waits. */
static void test_runahead_table(void **state)
{
	(void)state;
	assert_true(wl_framework_runahead("pytorch"));
	assert_true(wl_framework_runahead("tf-graph"));
	assert_true(wl_framework_runahead("tf-eager"));
	assert_true(wl_framework_runahead("caffe"));
	assert_false(wl_framework_runahead(NULL));
	assert_false(wl_framework_runahead("mxnet"));
}

/*
 * host.launch comes out of the calibrated launch term (hw.h): a memory
 * op of 1e6 bytes at mem_bw 1e12 B/s takes 1000 ns plus launch 5000 ns;
 * with host.launch 3000 the device keeps 2000: 3000 ns; with host.launch
 * 8000 (more than the term) it keeps none: 1000 ns. A measured time
 * (conv_algos) of 10000 ns keeps 7000 with host.launch 3000, 0 with
 * 12000.
 */
static void test_launch_out_of_device_time(void **state)
{
	(void)state;
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.op[OT_RELU].mem_bw = 1e12;
	hw.op[OT_RELU].peak_flops = 1e12;
	hw.op[OT_RELU].launch = 5000;
	assert_int_equal(hw_kernel_time(&hw, OT_RELU, 0, 1e6), 6000);
	hw.host_launch = 3000;
	assert_int_equal(hw_kernel_time(&hw, OT_RELU, 0, 1e6), 3000);
	hw.host_launch = 8000;
	assert_int_equal(hw_kernel_time(&hw, OT_RELU, 0, 1e6), 1000);
	hw.host_launch = 3000;
	assert_int_equal(hw_device_time(&hw, 10000), 7000);
	hw.host_launch = 12000;
	assert_int_equal(hw_device_time(&hw, 10000), 0);
}

/* host: launch and alloc_call load from a profile, 0 when absent. */
static void test_profile_keys(void **state)
{
	(void)state;
	static const char base[] =
		"device: {capacity: 1GiB, reserved: 0}\n"
		"compute:\n"
		"  conv: {peak_flops: 1e12, sat_flops: 1e9, alpha: 1, "
		"mem_bw: 1e11, launch: 5us}\n"
		"  matmul: {peak_flops: 1e12, sat_flops: 1e9, alpha: 1, "
		"mem_bw: 1e11, launch: 5us}\n"
		"  memory: {peak_flops: 1e12, sat_flops: 0, alpha: 1, "
		"mem_bw: 1e11, launch: 5us}\n"
		"link:\n"
		"  h2d: {bw_pinned: 1e10, bw_pageable: 1e10, latency: 0, "
		"derate: 1}\n"
		"  d2h: {bw_pinned: 1e10, bw_pageable: 1e10, latency: 0, "
		"derate: 1}\n"
		"  shared_engine: false\n";
	char text[2048];
	struct hw_profile hw;
	gms_err err = {{0}};
	snprintf(text, sizeof text, "%shost: {zvc_bytes_per_s: 2e9}\n", base);
	if (hw_load_string(&hw, "p.yaml", text, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(hw.host_launch, 0);
	assert_int_equal(hw.host_alloc_call, 0);
	snprintf(text, sizeof text,
		 "%shost: {zvc_bytes_per_s: 2e9, launch: 6368ns, "
		 "alloc_call: 1us}\n",
		 base);
	if (hw_load_string(&hw, "p.yaml", text, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(hw.host_launch, 6368);
	assert_int_equal(hw.host_alloc_call, 1000);
	/* 5 us of launch term less 6368 ns: none on the device */
	assert_int_equal(hw_kernel_time(&hw, OT_RELU, 0, 1e6), 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runahead_then_sync),
		cmocka_unit_test(test_wait_per_kernel),
		cmocka_unit_test(test_personality_decides),
		cmocka_unit_test(test_recorded_times_unchanged),
		cmocka_unit_test(test_alloc_calls),
		cmocka_unit_test(test_runahead_table),
		cmocka_unit_test(test_launch_out_of_device_time),
		cmocka_unit_test(test_profile_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
