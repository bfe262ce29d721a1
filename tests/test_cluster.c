/*
 * test_cluster.c - the cluster model (exp/cluster.c: Δ of AccUDNN's
 * equation 3 for a parameter server and a ring all-reduce, worked out by
 * hand below) and the efficiency-optimal and scaling measures on BVLC
 * AlexNet with a stub tuner whose answer is known (k* = 2 k_base), so
 * nothing here needs policies/accudnn.c.
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

#include "../exp/exp.h"

/* Figures chosen for hand arithmetic: network 1e9 B/s with 1 ms a
 * message, PCIe 10e9 B/s with 10 us a copy, P = 400e6 bytes. */
static struct cl_cluster hand(enum cl_sync sync)
{
	return (struct cl_cluster){.net_bw = 1e9, .net_latency = SIM_MS,
				   .sync = sync, .pcie_h2d = 10e9,
				   .pcie_d2h = 10e9,
				   .pcie_lat_h2d = 10 * SIM_US,
				   .pcie_lat_d2h = 10 * SIM_US};
}

static void test_delta_ps(void **state)
{
	(void)state;
	struct cl_cluster c = hand(CL_SYNC_PS);
	/* N = 4: PCIe 10 us + 10 us + 2 x 400e6 / 10e9 s = 80.02 ms;
	 * push and pull 2 x 3 x (1 ms + 100e6 / 1e9 s) = 606 ms;
	 * Δ = 686.02 ms */
	assert_float_equal(cl_delta(&c, 4, 400000000), 0.68602, 1e-12);
	/* N = 2: 80.02 + 2 x 1 x (1 + 200) = 482.02 ms */
	assert_float_equal(cl_delta(&c, 2, 400000000), 0.48202, 1e-12);
	/* N = 1: plain single-GPU Caffe, no server: 0 */
	assert_float_equal(cl_delta(&c, 1, 400000000), 0.0, 0);
}

static void test_delta_ring(void **state)
{
	(void)state;
	struct cl_cluster c = hand(CL_SYNC_RING);
	/* N = 4: 2 (N-1) = 6 steps of 1 ms + 100e6 / 1e9 s: 606 ms, no
	 * PCIe */
	assert_float_equal(cl_delta(&c, 4, 400000000), 0.606, 1e-12);
	/* N = 8: 14 x (1 ms + 50 ms) = 714 ms */
	assert_float_equal(cl_delta(&c, 8, 400000000), 0.714, 1e-12);
	assert_float_equal(cl_delta(&c, 1, 400000000), 0.0, 0);
}

static void test_throughput(void **state)
{
	(void)state;
	/* 8 x 32 samples in 0.5 + 0.3 s: 320 samples/s */
	assert_float_equal(cl_throughput(8, 32, 0.5, 0.3), 320.0, 1e-9);
	assert_float_equal(cl_throughput(1, 32, 0.0, 0.0), 0.0, 0);
}

static char tmp[256];

/* Write text to a temporary experiment file; its path in tmp. */
static void write_exp(const char *text)
{
	snprintf(tmp, sizeof tmp, "/tmp/gms-test-cluster-XXXXXX");
	int fd = mkstemp(tmp);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
}

static int load(struct exp *e, const char *text, gms_err *err)
{
	write_exp(text);
	int rc = exp_load(e, tmp, NULL, err);
	unlink(tmp);
	return rc;
}

#define HEAD                                                                   \
	"hw: Tesla-M40-24GB\nbudget: 2GiB\niterations: 2\nwarmup: 1\n"         \
	"plot: false\n"
#define ALEXNET                                                                \
	"workloads:\n  - {name: alexnet, size: 227, framework: caffe}\n"

static void test_defaults(void **state)
{
	(void)state;
	struct exp e;
	gms_err err = {{0}};
	int rc = load(&e,
		      HEAD ALEXNET "policies: [framework, ondemand]\n"
				   "cluster: {gpus: [1, 8]}\n"
				   "measure: {kind: scaling}\n",
		      &err);
	if (rc < 0)
		fail_msg("%s", err.msg);
	/* 10 Gb/s x 0.9415 / 8 bits = 1.176875e9 B/s; 50 us; ps */
	assert_float_equal(e.cluster.net_bw, 1.176875e9, 1);
	assert_int_equal(e.cluster.net_latency, 50 * SIM_US);
	assert_int_equal(e.cluster.sync, CL_SYNC_PS);
	/* PCIe from the M40 profile: 12e9 B/s pinned, 10 us */
	assert_float_equal(e.cluster.pcie_h2d, 12e9, 1);
	assert_float_equal(e.cluster.pcie_d2h, 12e9, 1);
	assert_int_equal(e.cluster.pcie_lat_h2d, 10 * SIM_US);
	assert_int_equal(e.cluster.n_gpus, 2);
	assert_int_equal(e.cluster.gpus[1], 8);
	assert_float_equal(e.lr_base, 0.1, 0);
	exp_free(&e);
}

static void test_bad_files(void **state)
{
	(void)state;
	static const struct {
		const char *text, *want;
	} bad[] = {
		{HEAD "workloads: [{file: workloads/examples/tiny-cnn.yaml}]\n"
		      "policies: [framework, ondemand]\n"
		      "measure: {kind: efficiency-optimal}\n",
		 "needs a generator"},
		{HEAD ALEXNET "policies: [framework]\n"
			      "measure: {kind: efficiency-optimal}\n",
		 "needs two"},
		{HEAD ALEXNET "policies: [framework, ondemand]\n"
			      "measure: {kind: scaling}\n",
		 "key 'cluster': measure scaling needs"},
		{HEAD ALEXNET "policies: [framework]\n"
			      "cluster: {gpus: [1]}\nmeasure: {kind: run}\n",
		 "applies to measure scaling only"},
		{HEAD ALEXNET "policies: [framework, ondemand]\n"
			      "cluster: {gpus: [1, 0]}\n"
			      "measure: {kind: scaling}\n",
		 "cluster: key 'gpus': item 2 '0'"},
		{HEAD ALEXNET "policies: [framework, ondemand]\n"
			      "cluster: {gpus: [1], sync: tree}\n"
			      "measure: {kind: scaling}\n",
		 "sync"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct exp e;
		gms_err err = {{0}};
		if (load(&e, bad[i].text, &err) == 0)
			fail_msg("case %zu loaded", i);
		if (!strstr(err.msg, bad[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg,
				 bad[i].want);
	}
}

/* The stub tuner: k* = 2 k_base, learning rate linear in q. */
static int stub_tune(const struct accudnn_tune_in *in,
		     struct accudnn_tune_out *out, gms_err *err)
{
	(void)err;
	memset(out, 0, sizeof *out);
	out->k_base = in->args.batch;
	out->k_max = 3 * in->args.batch;
	out->k_star = 2 * in->args.batch;
	out->lr = 2 * in->lr_base;
	out->t_iter_pred = 0.25;
	return 0;
}

static void test_scaling_measure(void **state)
{
	(void)state;
	struct exp e;
	gms_err err = {{0}};
	/* ring, 8 Gb/s at efficiency 1 = 1e9 B/s, no latency */
	int rc = load(&e,
		      HEAD ALEXNET "policies:\n  - {name: framework}\n"
				   "  - {name: ondemand}\n"
				   "cluster: {gpus: [1, 8], sync: ring, "
				   "bandwidth_gbps: 8, efficiency: 1, "
				   "latency: 0}\n"
				   "measure: {kind: scaling, start: 8, "
				   "limit: 64, lr_base: 0.05}\n",
		      &err);
	if (rc < 0)
		fail_msg("%s", err.msg);
	struct exp_opts o = {.jobs = 1, .quiet = true, .tune = stub_tune};
	struct exp_result r;
	assert_int_equal(exp_run(&e, &o, &r, &err), 0);
	assert_int_equal(r.n_eff, 1);
	const struct exp_eff *f = &r.eff[0];
	assert_true(f->base.best >= 0);
	const struct exp_point *b = &f->base.probe[f->base.best];
	/* the workload gives no batch: the tuner starts from the
	 * baseline's largest */
	assert_int_equal(f->k_base, b->batch);
	assert_true(f->tuned);
	assert_float_equal(f->tune.lr, 0.1, 1e-15); /* 2 x lr_base */
	/* the second policy ran at the stub's k* */
	assert_int_equal(f->run.pol, 1);
	assert_int_equal(f->run.batch, 2 * b->batch);
	/* BVLC AlexNet has 60,965,224 parameters (its prototxt; README):
	 * 243,860,896 fp32 bytes */
	assert_int_equal(f->param_bytes, 243860896);
	/* N = 8 ring: 14 steps of 243860896 / 8 bytes at 1e9 B/s =
	 * 0.426756568 s */
	assert_float_equal(cl_delta(&e.cluster, 8, f->param_bytes),
			   0.426756568, 1e-12);
	assert_int_equal(exp_n_rows(&r), 1);
	char dir[300];
	snprintf(dir, sizeof dir, "/tmp/gms-test-cluster-out-%d", (int)getpid());
	snprintf(e.out_dir, sizeof e.out_dir, "%s", dir);
	assert_int_equal(exp_write(&e, &r, NULL, &err), 0);
	char path[400], line[512];
	snprintf(path, sizeof path, "%s/summary.csv", dir);
	FILE *in = fopen(path, "r");
	assert_non_null(in);
	assert_non_null(fgets(line, sizeof line, in));
	assert_non_null(strstr(line, "speedup_vs_baseline_1gpu"));
	/* rows: framework N = 1, 8; ondemand N = 1, 8 */
	int rows = 0;
	while (fgets(line, sizeof line, in))
		rows++;
	fclose(in);
	assert_int_equal(rows, 4);
	snprintf(path, sizeof path, "%s/tuning.csv", dir);
	assert_int_equal(access(path, R_OK), 0);
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	exp_result_free(&r);
	exp_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delta_ps),
		cmocka_unit_test(test_delta_ring),
		cmocka_unit_test(test_throughput),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_scaling_measure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
