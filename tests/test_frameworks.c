/*
 * test_frameworks.c - the framework personalities (issue 13): what each
 * framework keeps alive, worked out by hand on a tiny network, the
 * optimizers' state, each framework's default allocator, and the reason
 * TensorFlow eager needs more memory than graph mode on ResNet-50.
 *
 * A probe policy records, at the first access of every op (the kernel's
 * issue: its outputs and workspace are allocated, nothing of the op freed
 * yet), the set of resident non-persistent tensors; the set with the most
 * bytes is the set alive at the peak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../workloads/gen.h"
#include "testkit.h"
#include "wlkit.h"

#define MAX_LIVE 64

/* What the probe saw. */
struct probe {
	uint32_t last_op;	/* op of the last access seen */
	const char *at_op;	/* name of the op where the most was live */
	uint32_t at;		/* op id whose boundary set is wanted, or
				   WL_NONE */
	uint64_t best;		/* most bytes live at an op's issue */
	uint32_t live[MAX_LIVE]; /* the tensors then */
	uint32_t n_live;
	uint64_t at_bytes;	/* bytes live at op `at`'s issue */
};

static void probe_access(struct pol *p, struct ex *ex,
			 const struct ex_access *a)
{
	struct probe *pr = p->priv;
	if (a->op == pr->last_op)
		return;
	pr->last_op = a->op;
	const struct wl_workload *w = ex_workload(ex);
	uint64_t bytes = 0;
	uint32_t live[MAX_LIVE], n = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		enum ex_state s = ex_tensor_state(ex, t);
		if (ex_tensor_persistent(ex, t) ||
		    (s != TS_IN && s != TS_SWAPPING_OUT))
			continue;
		bytes += w->tensors[t].bytes;
		if (n < MAX_LIVE)
			live[n++] = t;
	}
	if (a->op == pr->at)
		pr->at_bytes = bytes;
	if (bytes > pr->best) {
		pr->best = bytes;
		pr->at_op = w->ops[a->op].name;
		memcpy(pr->live, live, n * sizeof *live);
		pr->n_live = n;
	}
}

static const struct pol_ops probe_ops = {.name = "probe",
					 .on_access = probe_access};

/* Run w for one iteration under the probe with the arena (plain sums). */
static void probe_run(const struct wl_workload *w, struct probe *pr,
		      uint64_t device)
{
	struct pol pol = {.ops = &probe_ops, .priv = pr};
	pr->last_op = WL_NONE;
	struct hw_profile hw;
	hw_test_profile(&hw, device);
	struct st_run st;
	assert_int_equal(run_on(w, &pol, &hw, "arena", 0, 0, 1, &st), 0);
	assert_false(st.oom.hit);
	st_run_free(&st);
}

/* The probe's set at the peak as "name name ..." in id order. */
static void live_names(const struct wl_workload *w, const struct probe *pr,
		       char *buf, size_t n)
{
	buf[0] = 0;
	for (uint32_t i = 0; i < pr->n_live; i++)
		gms_list_add(buf, n, w->tensors[pr->live[i]].name);
}

/* Run the tiny net under fw and check the op where the most is live, the
 * set then (id order) and its bytes. */
static void check_tiny(enum wl_framework fw, const char *op,
		       const char *set, uint64_t bytes, struct probe *pr)
{
	struct wl_workload *w = tiny1x1(fw, WL_OPTIM_MOMENTUM);
	pr->at = pr->at_op ? wl_op_id(w, pr->at_op) : WL_NONE;
	pr->at_op = NULL;
	probe_run(w, pr, 1 << 20);
	char names[1024];
	live_names(w, pr, names, sizeof names);
	assert_string_equal(pr->at_op, op);
	assert_string_equal(names, set);
	assert_int_equal(pr->best, bytes);
	wl_free(w);
}

/*
 * Sizes at batch 2 (fp32): input 2*3*8*8*4 = 1,536; conv1.out, bn1.out,
 * relu1.out and their gradients 2*4*8*8*4 = 2,048 each; bn1.saved 2*4*4
 * = 32; pool1.out and its gradient 2*4*4*4*4 = 512; fc's gradients
 * (weight 10*64*4 = 2,560, bias 40) 2,600.
 *
 * tf-graph: ReLU writes over bn1.out, relu1.bwd over its dY. The peak is
 * at pool1.bwd (it reads relu1.out and pool1.out, writes
 * relu1.out.grad): input, conv1.out (batchnorm's backward reads it),
 * bn1.saved, relu1.out, pool1.out, pool1.out.grad, relu1.out.grad, fc's
 * gradients = 1,536 + 2,048 + 32 + 2,048 + 512 + 512 + 2,048 + 2,600 =
 * 11,336. (relu1.bwd writes in place: 10,312.)
 */
static void test_tiny_tf_graph(void **state)
{
	(void)state;
	struct probe pr = {0};
	check_tiny(WL_FW_TF_GRAPH, "pool1.bwd",
		   "input, conv1.out, bn1.saved, relu1.out, pool1.out, "
		   "pool1.out.grad, fc.weight.grad, fc.bias.grad, "
		   "relu1.out.grad",
		   11336, &pr);
}

/*
 * tf-eager: nothing in place, and the tape keeps per op (backprop.py):
 * Conv2D its input, FusedBatchNorm its input and outputs (bn1.out and
 * the statistics), Relu its output, MaxPool its input and output, MatMul
 * its input, the loss all -- each until that layer's backward has run.
 * So bn1.out lives until bn1.bwd. The peak moves to relu1.bwd, whose dX
 * (bn1.out.grad) gets its own block: input, conv1.out, bn1.out,
 * bn1.saved, relu1.out, fc's gradients, relu1.out.grad, bn1.out.grad =
 * 1,536 + 2,048 + 2,048 + 32 + 2,048 + 2,600 + 2,048 + 2,048 = 14,408.
 */
static void test_tiny_tf_eager(void **state)
{
	(void)state;
	struct probe pr = {0};
	check_tiny(WL_FW_TF_EAGER, "relu1.bwd",
		   "input, conv1.out, bn1.out, bn1.saved, relu1.out, "
		   "fc.weight.grad, fc.bias.grad, relu1.out.grad, "
		   "bn1.out.grad",
		   14408, &pr);
}

/*
 * pytorch: ReLU in place (torchvision's inplace=True) but not its
 * backward (threshold_backward allocates); max_pool2d_with_indices saves
 * int64 indices, 2*4*4*4 * 8 = 1,024 B, and its input, not its output.
 *   pool1.bwd: input, conv1.out, bn1.saved, relu1.out, pool1.indices,
 *     fc grads, pool1.out.grad, relu1.out.grad = 11,848 (pool1.out was
 *     last read by fc.bwd_weight);
 *   relu1.bwd: input, conv1.out, bn1.saved, relu1.out, fc grads,
 *     relu1.out.grad, bn1.out.grad = 12,360: the peak.
 */
static void test_tiny_pytorch(void **state)
{
	(void)state;
	struct probe pr = {.at_op = "pool1.bwd"}; /* also: bytes there */
	check_tiny(WL_FW_PYTORCH, "relu1.bwd",
		   "input, conv1.out, bn1.saved, relu1.out, fc.weight.grad, "
		   "fc.bias.grad, relu1.out.grad, bn1.out.grad",
		   12360, &pr);
	assert_int_equal(pr.at_bytes, 11848);
	struct wl_workload *w = tiny1x1(WL_FW_PYTORCH, WL_OPTIM_MOMENTUM);
	assert_int_equal(w->tensors[wl_tensor_id(w, "pool1.indices")].bytes,
			 1024);
	wl_free(w);
}

/*
 * pytorch's batch-norm buffers (nn.BatchNorm2d: running_mean and
 * running_var, fp32 per channel, num_batches_tracked one int64): bn1 of
 * the tiny net has 4 channels, so 16 + 16 + 8 = 40 bytes of whole-run
 * tensors beside its parameters, read by bn1's forward and given no
 * gradient or momentum. The other personalities have none. And
 * torchvision's residual sum `out += identity` runs in place under
 * pytorch only (ResNet-34 at batch 1; Caffe's Eltwise has its own top).
 */
static void test_pytorch_buffers_and_residual(void **state)
{
	(void)state;
	struct wl_workload *w = tiny1x1(WL_FW_PYTORCH, WL_OPTIM_MOMENTUM);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 2680 + 40);
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), 2680);
	static const char *const bufs[] = {"bn1.running_mean",
					   "bn1.running_var",
					   "bn1.num_batches_tracked"};
	static const uint64_t sizes[] = {16, 16, 8};
	uint32_t bn = op_id(w, "bn1");
	for (int i = 0; i < 3; i++) {
		const struct wl_tensor *x = tensor(w, bufs[i]);
		assert_int_equal(x->bytes, sizes[i]);
		assert_int_equal(x->kind, WL_PARAM);
		assert_int_equal(x->n_readers, 1);
		assert_int_equal(x->readers[0], bn);
		char g[64];
		snprintf(g, sizeof g, "%s.grad", bufs[i]);
		assert_int_equal(wl_tensor_id(w, g), WL_NONE);
	}
	wl_free(w);
	for (int f = 0; f < WL_FW_COUNT; f++) {
		w = tiny1x1((enum wl_framework)f, WL_OPTIM_MOMENTUM);
		if (f != WL_FW_PYTORCH) {
			assert_int_equal(wl_tensor_id(w, "bn1.running_mean"),
					 WL_NONE);
		}
		wl_free(w);
		if (f == WL_FW_CAFFE)
			continue; /* KaimingHe's names (res2a...): its Eltwise
				   has its own top, never in place */
		w = gen_build_ok("resnet34", 1, 64, (enum wl_framework)f,
				 WL_OPTIM_MOMENTUM);
		assert_int_equal(w->ops[op_id(w, "layer1.0.add")].inplace,
				 f == WL_FW_PYTORCH);
		wl_free(w);
	}
}

/*
 * Optimizers: parameters of the tiny net are 12 (conv) + 4 + 4 (bn) +
 * 640 + 10 (fc) = 670 floats, 2,680 bytes. State: none and sgd keep
 * none, momentum one copy (2,680 B), adam and adamw two (5,360 B),
 * adam8bit two fp32 ones too (bitsandbytes keeps 32-bit states for
 * tensors under min_8bit_size = 4096 elements: all five here); none has
 * no update ops, the others one per parameter tensor (5).
 */
static void test_optimizers(void **state)
{
	(void)state;
	const uint64_t bytes[WL_OPTIM_COUNT] = {0, 0, 2680, 5360, 5360, 5360};
	const uint32_t updates[WL_OPTIM_COUNT] = {0, 5, 5, 5, 5, 5};
	for (int o = 0; o < WL_OPTIM_COUNT; o++) {
		struct wl_workload *w = tiny1x1(WL_FW_TF_GRAPH, (enum wl_optim)o);
		assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 2680);
		assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), bytes[o]);
		uint32_t n = 0;
		for (uint32_t i = 0; i < w->n_ops; i++)
			n += w->ops[i].type == OT_UPDATE;
		assert_int_equal(n, updates[o]);
		wl_free(w);
	}
}

/* Each personality's allocator when the run names none ("framework"). */
static void test_default_allocator(void **state)
{
	(void)state;
	const char *want[] = {"bfc", "bfc", "caching", "arena"};
	for (int f = 0; f < WL_FW_COUNT; f++) {
		struct wl_workload *w =
			tiny1x1((enum wl_framework)f, WL_OPTIM_MOMENTUM);
		assert_string_equal(w->framework, wl_framework_names[f]);
		struct pol pol;
		make_policy(&pol, "framework", NULL, 0);
		struct hw_profile hw;
		hw_test_profile(&hw, 1 << 24);
		struct st_run st;
		assert_int_equal(run_on(w, &pol, &hw, NULL, 0, 0, 1, &st), 0);
		assert_string_equal(st.allocator, want[f]);
		st_run_free(&st);
		pol_destroy(&pol);
		wl_free(w);
	}
	assert_string_equal(wl_framework_allocator(NULL), "bfc");
}

/*
 * ResNet-50, batch 4: tf-eager keeps more than tf-graph, and for the
 * reason the model gives. When backward starts (the issue of loss.bwd),
 * graph mode holds what backward ops read: each batchnorm's input (a
 * conv output), each ReLU's output, and so on; a batchnorm's output is
 * either overwritten in place by its ReLU or, before a residual add,
 * freed once the add has read it. The eager tape keeps FusedBatchNorm's
 * outputs until its gradient runs, so every batchnorm output is still
 * there; so are the logits (fc.out) and the loss value, which
 * SoftmaxCrossEntropyWithLogits keeps for its gradient while graph mode
 * freed them after the loss. Everything else is the same. So at that
 * point eager - graph = sum of the bn outputs + fc.out + loss.out,
 * exactly.
 */
static void test_resnet50_eager_vs_graph(void **state)
{
	(void)state;
	uint64_t at[2];
	uint64_t bn = 0, extra = 0;
	for (int m = 0; m < 2; m++) {
		struct wl_gen_args a = {4, 224,
					m ? WL_FW_TF_EAGER : WL_FW_TF_GRAPH,
					WL_OPTIM_SGD};
		gms_err err = {{0}};
		struct wl_workload *w =
			wl_gen_build(wl_gen_find("resnet50"), &a, &err);
		if (!w)
			fail_msg("%s", err.msg);
		struct probe pr = {.at = wl_op_id(w, "loss.bwd")};
		probe_run(w, &pr, 8ull << 30);
		at[m] = pr.at_bytes;
		if (m == 0) {
			for (uint32_t o = 0; o < w->n_ops; o++)
				if (w->ops[o].type == OT_BATCHNORM)
					bn += w->tensors[w->ops[o].out[0]]
						      .bytes;
			extra = w->tensors[wl_tensor_id(w, "fc.out")].bytes +
				w->tensors[wl_tensor_id(w, "loss.out")].bytes;
		}
		wl_free(w);
	}
	/* 53 batchnorms; fc.out 4*1000*4 B, loss.out 4 B */
	assert_int_equal(extra, 16004);
	assert_true(bn > 0);
	assert_int_equal(at[1] - at[0], bn + extra);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tiny_tf_graph),
		cmocka_unit_test(test_tiny_tf_eager),
		cmocka_unit_test(test_tiny_pytorch),
		cmocka_unit_test(test_pytorch_buffers_and_residual),
		cmocka_unit_test(test_optimizers),
		cmocka_unit_test(test_default_allocator),
		cmocka_unit_test(test_resnet50_eager_vs_graph),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
