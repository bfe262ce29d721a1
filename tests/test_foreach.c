/*
 * test_foreach.c - torch.optim's multi-tensor (foreach) update under the
 * pytorch personality (workloads/gen.c, "foreach"; issue 30): ATen's
 * multi_tensor_apply chunking rule worked by hand, the launches of a
 * three-parameter network's Adam step, and the per-parameter update ops
 * of the frameworks that run one kernel per parameter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workloads/gen.h"
#include "testkit.h"
#include "wlkit.h"

/*
 * The rule (MultiTensorApply.cuh, multi_tensor_apply): one block per
 * chunk; launch when the blocks reach max_blocks, or when the tensors
 * reach max_tensors at a tensor's last chunk; a tensor cut by a full
 * block list goes on as the next launch's first tensor; empty tensors
 * are skipped; what is left is launched at the end. With chunk 65536,
 * max_tensors 2, max_blocks 3 and tensors of 196609 (4 chunks, the last
 * of 1 element), 10, 0 and 65536 elements:
 *   t0 chunks 0..2: 3 blocks, full -> launch {t0..t0, 196608}; t0 goes
 *   on (1 tensor); t0 chunk 3 (1 element): 1 block; t1 (10): 2 tensors
 *   at its last chunk -> launch {t0..t1, 11}; t2 is empty; t3: 1 block,
 *   the end -> launch {t3..t3, 65536}. Three launches, 262155 elements,
 *   the sum of the sizes.
 */
static void test_chunking_rule(void **state)
{
	(void)state;
	const uint64_t n[] = {196609, 10, 0, 65536};
	struct gen_launch l[4];
	assert_int_equal(gen_foreach_launches(n, 4, 65536, 2, 3, NULL, 0), 3);
	assert_int_equal(gen_foreach_launches(n, 4, 65536, 2, 3, l, 4), 3);
	assert_int_equal(l[0].t0, 0);
	assert_int_equal(l[0].t1, 0);
	assert_int_equal(l[0].elems, 196608);
	assert_int_equal(l[1].t0, 0);
	assert_int_equal(l[1].t1, 1);
	assert_int_equal(l[1].elems, 11);
	assert_int_equal(l[2].t0, 3);
	assert_int_equal(l[2].t1, 3);
	assert_int_equal(l[2].elems, 65536);
	/* the tensor limit alone: 5 one-chunk tensors, 2 a launch -> 3 */
	const uint64_t m[] = {1, 2, 3, 4, 5};
	assert_int_equal(gen_foreach_launches(m, 5, 65536, 2, 320, l, 4), 3);
	assert_int_equal(l[2].t0, 4);
	assert_int_equal(l[2].elems, 5);
}

/* x (4096 features) -> fc1 (36864, no bias) -> fc2 (10, bias), batch 1:
 * parameters fc1.weight 36864 x 4096 = 150,994,944 elements (2304
 * chunks of 65536), fc2.weight 10 x 36864 = 368,640 (6 chunks, the
 * last partial), fc2.bias 10 (1 chunk). */
static struct wl_workload *three(enum wl_framework fw, enum wl_optim o)
{
	struct wl_gen_args a = {1, 0, fw, o};
	gms_err err = {{0}};
	struct gen *g = gen_new("three", &a, &err);
	struct gen_tensor x = gen_input(g, "x", 4096, 1, 1);
	x = gen_linear(g, "fc1", x, 36864, false);
	x = gen_linear(g, "fc2", x, 10, true);
	struct wl_workload *w = gen_finish(g, x, &err);
	if (!w)
		fail_msg("%s", err.msg);
	return w;
}

static uint32_t n_updates(const struct wl_workload *w)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		n += w->ops[i].type == OT_UPDATE && w->ops[i].phase == WL_UPD;
	return n;
}

/*
 * pytorch + adam (fp32, 4 bytes an element): the torch 2.x default is
 * _multi_tensor_adam's 7 foreach ops over the three parameters (the
 * step counters are CPU tensors: no kernel). Every op's tensor limit
 * (336 at the deepest, 3) is far off; the block limit, 2240 (the 32 KB
 * kernel-argument build), is not: fc1.weight's 2304 chunks fill the
 * first launch after 2240 chunks, 2240 x 65536 = 146,800,640 elements;
 * its last 64 chunks (4,194,304 elements), fc2.weight (368,640) and
 * fc2.bias (10) are the second launch: 4,562,954 elements, 3 tensors.
 * So 2 launches an op, 14 update ops. Bytes an element, each list read
 * or written once: lerp_(m, g) reads m, g, writes m: 12; mul_(v) 8;
 * addcmul_(v, g, g) reads v, g, writes v: 12; sqrt(v) -> tmp 8;
 * div_(tmp) 8; add_(tmp) 8; addcdiv_(p, m, tmp) reads 3, writes p: 16
 * (72 in all). FLOPs: lerp 3, addcmul 3, addcdiv 3, the others 1.
 */
static void test_adam_launches(void **state)
{
	(void)state;
	struct wl_workload *w = three(WL_FW_PYTORCH, WL_OPTIM_ADAM);
	assert_int_equal(n_updates(w), 14);
	const struct wl_op *o = op(w, "optimizer.0_lerp_.0");
	assert_true(o->bytes == 12.0 * 146800640.0);
	assert_true(o->flops == 3.0 * 146800640.0);
	assert_op_io(w, "optimizer.0_lerp_.0",
		     "fc1.weight.grad fc1.weight.adam_m -> ");
	o = op(w, "optimizer.6_addcdiv_.1");
	assert_true(o->bytes == 16.0 * 4562954.0);
	assert_true(o->flops == 3.0 * 4562954.0);
	assert_op_io(w, "optimizer.6_addcdiv_.1",
		     "fc1.weight fc1.weight.adam_m fc1.weight.exp_avg_sq_sqrt "
		     "fc2.weight fc2.weight.adam_m fc2.weight.exp_avg_sq_sqrt "
		     "fc2.bias fc2.bias.adam_m fc2.bias.exp_avg_sq_sqrt -> ");
	assert_true(op(w, "optimizer.4_div_.1")->bytes == 8.0 * 4562954.0);
	/* the temporary list exp_avg_sq_sqrt: one tensor a parameter, its
	 * size in fp32 (fc1: 150,994,944 x 4 = 603,979,776 bytes), written
	 * by the sqrt launch holding the parameter's first chunk (fc1's by
	 * launch 0, which launch 1 reads and finishes), read by div_, add_
	 * and addcdiv_, held to the step's last op (the function's return) */
	assert_op_io(w, "optimizer.3_sqrt.0",
		     "fc1.weight.adam_v -> fc1.weight.exp_avg_sq_sqrt");
	assert_op_io(w, "optimizer.3_sqrt.1",
		     "fc1.weight.adam_v fc1.weight.exp_avg_sq_sqrt "
		     "fc2.weight.adam_v fc2.bias.adam_v -> "
		     "fc2.weight.exp_avg_sq_sqrt fc2.bias.exp_avg_sq_sqrt");
	assert_op_io(w, "optimizer.4_div_.0", "fc1.weight.exp_avg_sq_sqrt -> ");
	const struct wl_tensor *t = tensor(w, "fc1.weight.exp_avg_sq_sqrt");
	assert_int_equal(t->bytes, 603979776);
	assert_int_equal(t->kind, WL_WORKSPACE);
	assert_int_equal(t->release_after, op_id(w, "optimizer.6_addcdiv_.1"));
	assert_int_equal(op_id(w, "optimizer.6_addcdiv_.1"), w->n_ops - 1);
	/* 72 bytes and 13 FLOPs an element over all 151,363,594 */
	double b = 0, f = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		if (w->ops[i].phase == WL_UPD) {
			b += w->ops[i].bytes;
			f += w->ops[i].flops;
		}
	assert_true(b == 72.0 * 151363594.0);
	assert_true(f == 13.0 * 151363594.0);
	wl_free(w);
	/* adamw: _foreach_mul_(params, 1 - lr * wd) first, 2 launches more;
	 * sgd: one _foreach_add_, 2 launches; momentum: 3 ops, 6 */
	w = three(WL_FW_PYTORCH, WL_OPTIM_ADAMW);
	assert_int_equal(n_updates(w), 16);
	assert_op_io(w, "optimizer.0_mul_.1",
		     "fc1.weight fc2.weight fc2.bias -> ");
	wl_free(w);
	w = three(WL_FW_PYTORCH, WL_OPTIM_SGD);
	assert_int_equal(n_updates(w), 2);
	assert_true(op(w, "optimizer.0_add_.0")->bytes == 12.0 * 146800640.0);
	wl_free(w);
	w = three(WL_FW_PYTORCH, WL_OPTIM_MOMENTUM);
	assert_int_equal(n_updates(w), 6);
	wl_free(w);
}

/* One update kernel per parameter where the framework runs one: TF's
 * apply_gradients (one apply op per variable), Caffe's per-blob update,
 * bitsandbytes' 8-bit step under pytorch: 3 ops, fc1.weight's reading
 * its weight, gradient and two moments. */
static void test_per_parameter(void **state)
{
	(void)state;
	const enum wl_framework fw[] = {WL_FW_TF_GRAPH, WL_FW_TF_EAGER};
	for (size_t i = 0; i < 2; i++) {
		struct wl_workload *w = three(fw[i], WL_OPTIM_ADAM);
		assert_int_equal(n_updates(w), 3);
		assert_op_io(w, "fc1.weight.update",
			     "fc1.weight fc1.weight.grad fc1.weight.adam_m "
			     "fc1.weight.adam_v -> ");
		wl_free(w);
	}
	struct wl_workload *w = three(WL_FW_PYTORCH, WL_OPTIM_ADAM8BIT);
	assert_int_equal(n_updates(w), 3);
	wl_free(w);
}

/* ZeRO-Offload replaces the step with DeepSpeed's CPU Adam, parameter by
 * parameter, whatever kernels the framework would have run: on the
 * three-parameter network under AdamW, pytorch's 16 foreach ops and
 * tf-graph's 3 per-parameter ops give the same CPU step and the same
 * copies. Bytes an element (policies/zero_offload.c): fp32 master read
 * and written 8, the parameter's copy written 4, the gradient read 4,
 * two states read and written 16: 32; 151,363,594 elements x 32 =
 * 4,843,635,008 bytes at host.mem_bw 1e9 B/s = 4843.635008 ms (no FLOPs
 * term: the test profile gives no host.flops_per_thread). Each gradient
 * goes out once and each parameter comes back once: 151,363,594 x 4 =
 * 605,454,376 bytes each way. */
static void test_zero_offload_same_step(void **state)
{
	(void)state;
	const enum wl_framework fw[] = {WL_FW_PYTORCH, WL_FW_TF_GRAPH};
	for (size_t i = 0; i < 2; i++) {
		struct wl_workload *w = three(fw[i], WL_OPTIM_ADAMW);
		struct hw_profile hw;
		hw_test_profile(&hw, (uint64_t)64 << 30);
		hw.host_mem_bw = 1e9;
		hw.host_flops_per_thread = 0;
		struct pol p;
		struct st_run st;
		make_policy(&p, "zero-offload", NULL, 0);
		memset(&st, 0, sizeof st);
		if (run_on(w, &p, &hw, "arena", 0, 0, 1, &st) < 0 ||
		    st.oom.hit)
			fail_msg("%s: %s", w->framework, st.error);
		assert_int_equal(st.steady.bytes_d2h, 605454376);
		assert_int_equal(st.steady.bytes_h2d, 605454376);
		char *rep = NULL;
		gms_err err = {{0}};
		assert_int_equal(pol_report_text(&p, &rep, &err), 0);
		const char *k = strstr(rep, "cpu_adam_step_ms ");
		assert_non_null(k);
		double ms = strtod(k + strlen("cpu_adam_step_ms "), NULL);
		/* to the nanosecond (each duration is rounded up to one) */
		if (!(ms > 4843.635008 - 4e-6 && ms < 4843.635008 + 4e-6))
			fail_msg("%s: cpu_adam_step_ms %.6f", w->framework, ms);
		free(rep);
		st_run_free(&st);
		pol_destroy(&p);
		wl_free(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunking_rule),
		cmocka_unit_test(test_adam_launches),
		cmocka_unit_test(test_per_parameter),
		cmocka_unit_test(test_zero_offload_same_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
