/*
 * test_et.c - PyTorch execution traces as workloads (workloads/wl_et.c,
 * issue 35): the shipped fixture tests/fixtures/et/mlp-2-et.json, which
 * tests/fixtures/et/record_et.py recorded with torch 1.13's
 * ExecutionGraphObserver (the second training step of Linear(4, 8), ReLU,
 * Linear(8, 3) on a batch of 2, cross entropy, SGD with momentum 0.9),
 * loaded and simulated; bad traces give a located error and exit 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"
#include "../workloads/wl.h"
#include "clikit.h"
#include "testkit.h"
#include "tmpkit.h"

#define FIXTURE "tests/fixtures/et/mlp-2-et.json"

static void test_fixture(void **state)
{
	(void)state;
	gms_err err = {0};
	struct wl_workload *w = wl_load_et(FIXTURE, WL_DTR_REMAT_FORWARD,
					   &err);
	if (!w)
		fail_msg("%s", err.msg);
	/* name and batch from the file name, as for DTR logs */
	assert_string_equal(w->name, "mlp");
	assert_int_equal(w->batch, 2);
	/* parameters: 4*8 + 8 + 8*3 + 3 = 67 floats, 268 B; the batch
	 * (2x4 floats, 32 B) and the labels (2 int64, 16 B) are read by the
	 * forward and made by no op, so they count as parameters too (the
	 * trace does not say which tensor is the batch): 316 B. Momentum,
	 * read only by the optimizer's step: 268 B. The gradients, made in
	 * backward and read by the step: 268 B. */
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM), 316);
	assert_int_equal(wl_bytes_of_kind(w, WL_OPT_STATE), 268);
	assert_int_equal(wl_bytes_of_kind(w, WL_PARAM_GRAD), 268);
	/* the observer records the outermost ATen op of each call: forward
	 * linear, relu, linear, cross_entropy_loss, and the backward's seed
	 * (ones_like, torch/autograd/__init__.py _make_grads, which runs on
	 * the calling thread before the autograd engine's first range, so it
	 * reads as forward); the step is SGD's
	 * (torch/optim/sgd.py, _single_tensor_sgd) buf.mul_(momentum)
	 * .add_(d_p) and param.add_(buf): 3 in-place ops for each of the 4
	 * parameters; and each of the optimizer's two record_function ranges
	 * (Optimizer.step#SGD.step, Optimizer.zero_grad#SGD.zero_grad) two
	 * ops of the range's own: an aten::zeros on the thread before it
	 * (torch 1.13's torch.ops.profiler._record_function_enter returns its
	 * handle as a tensor, torch/autograd/profiler.py) and an aten::empty
	 * inside it: 12 + 4 */
	const char *fwd[] = {"linear/0", "relu/1", "linear/2",
			     "cross_entropy_loss/3", "ones_like/4"};
	uint32_t n[WL_PHASE_COUNT] = {0};
	for (uint32_t i = 0; i < w->n_ops; i++) {
		if (i < 5) {
			assert_string_equal(w->ops[i].name, fwd[i]);
			assert_int_equal(w->ops[i].phase, WL_FWD);
		}
		n[w->ops[i].phase]++;
	}
	assert_int_equal(n[WL_FWD], 5);
	assert_int_equal(n[WL_UPD], 16);
	/* linear 4 -> 8 on 2 rows: 2 * (2*8) * 4 = 128 FLOPs */
	assert_true(w->ops[0].flops == 128.0);
	/* it simulates, parameters and momentum resident throughout */
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * GMS_GIB);
	assert_true(framework_peak(w, &hw) >= 316 + 268);
	wl_free(w);
	expect("simulate " FIXTURE " --policy framework", 0,
	       "mlp on V100-16GB, batch 2, policy framework");
	expect("simulate " FIXTURE " --batch 4", 2,
	       "an execution trace loads at its own batch (2) only");
}

/* The fixture's text with the first `from` replaced by `to`, written to
 * a temporary file named *.json; the command on it exits 2 naming the
 * place. */
static void bad(const char *from, const char *to, const char *where,
		const char *msg)
{
	char *text = tmp_slurp(FIXTURE);
	char *at = strstr(text, from);
	assert_non_null(at);
	size_t n = strlen(text) + strlen(to) + 1;
	char *t = malloc(n);
	assert_non_null(t);
	snprintf(t, n, "%.*s%s%s", (int)(at - text), text, to,
		 at + strlen(from));
	char path[64], json[80], args[200], want[400];
	tmp_text(path, "et", t);
	snprintf(json, sizeof json, "%s.json", path);
	assert_int_equal(rename(path, json), 0);
	snprintf(args, sizeof args, "describe %s", json);
	snprintf(want, sizeof want, "%s:%s: %s", json, where, msg);
	expect(args, 2, want);
	unlink(json);
	free(t);
	free(text);
}

static void test_bad_traces(void **state)
{
	(void)state;
	/* line and column worked out from the fixture's text: line 2 is
	 * `  "schema": "1.0.1", ...`, the value at column 13 */
	bad("\"schema\": \"1.0.1\"", "\"schema\": \"0.9\"", "2:13",
	    "key 'schema': expected an execution trace schema 1.x");
	/* node 9 (aten::linear, the first op) is at lines 55 to 57: its
	 * tensor input [3,4,0,8,4,"cpu"] (line 56, column 18) loses its
	 * device */
	bad("\"inputs\": [[3,4,0,8,4,\"cpu\"],[5,6",
	    "\"inputs\": [[3,4,0,8,4],[5,6", "56:18", "node 9 ('aten::linear'): inputs item 1: a tensor value "
	    "is [tensor id, storage id, offset, numel, itemsize, device]");
	bad("\"name\": \"aten::linear\", \"id\": 9,",
	    "\"name\": \"aten::linear\", \"id\": \"x\",", "55:37",
	    "node 11: key 'id': expected an integer");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_bad_traces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
