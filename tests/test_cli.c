/*
 * test_cli.c - the program as a user runs it: exit codes, error messages
 * that name file:line:column and key, and byte-identical output for the
 * same inputs. Runs the binary of its own build tree (plain or sanitized).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "clikit.h"
#include "../sim/sched.h"



#define WL "workloads/examples/tiny-cnn.yaml"

static void test_bad_input_exits_2_with_location(void **state)
{
	(void)state;
	expect("simulate tests/fixtures/bad_unknown_key.yaml", 2,
	       "bad_unknown_key.yaml:");
	expect("simulate tests/fixtures/bad_negative_size.yaml", 2,
	       "bad_negative_size.yaml:");
	expect("simulate tests/fixtures/bad_malformed.yaml", 2,
	       "bad_malformed.yaml:");
	expect("simulate " WL " --policy vdnn-typo", 2,
	       "unknown policy 'vdnn-typo'");
	expect("simulate " WL " --set mdoe=eager", 2, "mdoe");
	expect("simulate " WL " --allocator cnmem", 2, "unknown allocator");
	expect("simulate " WL " --hw V100-32GB", 2, "V100-32GB");
	expect("simulate " WL " --budget -5", 2, "--budget");
	expect("simulate", 2, "needs a workload");
	expect("frobnicate", 2, "unknown command");
}

/* --schedule writes a log that reads back and passes sch_check; with
 * --trace it is refused (one observer per run). */
static void test_schedule_option(void **state)
{
	(void)state;
	char path[128], args[512];
	snprintf(path, sizeof path, "/tmp/gms_test_cli_%ld.sched",
		 (long)getpid());
	snprintf(args, sizeof args,
		 "simulate " WL " --budget 6MiB --policy ondemand "
		 "--schedule %s",
		 path);
	expect(args, 0, "schedule: ");
	struct sch_log log;
	gms_err err = {{0}};
	if (sch_read(path, &log, &err) < 0 || sch_check(&log, &err) < 0)
		fail_msg("%s", err.msg);
	assert_string_equal(log.policy, "ondemand");
	sch_free(&log);
	unlink(path);
	snprintf(args, sizeof args,
		 "simulate " WL " --trace %s.json --schedule %s", path, path);
	expect(args, 2, "one of them per run");
}

static void test_oom_is_a_result(void **state)
{
	(void)state;
	expect("simulate " WL " --budget 6MiB", 0, "OOM in iteration 0 at op");
	expect("simulate " WL " --budget 6MiB --policy ondemand", 0,
	       "swap-outs");
}

/* Started by the dynamic loader (`ld.so gpumemsim ...`, as relocatable
 * installs run it), a command that simulates runs as it does otherwise:
 * its re-execution for huge pages (sim/heap.c) must not exec
 * /proc/self/exe, which is then the loader. The loader is the binary's
 * own (its PT_INTERP, from readelf). Skipped under ASan, whose runtime
 * must come first. */
static void test_started_by_loader(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	skip();
#else
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "ld=$(readelf -l %s 2>/dev/null | sed -n "
		 "'s/.*interpreter: \\(.*\\)]/\\1/p'); "
		 "[ -n \"$ld\" ] || exit 77; "
		 "$ld %s simulate vgg16 --batch 1 --iterations 1 --warmup 0 "
		 ">/dev/null 2>&1",
		 BIN, BIN);
	int st = system(cmd);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (rc == 77)
		skip();
	assert_int_equal(rc, 0);
#endif
}

/* simulate's first line names the allocator that ran: vdnn's CNMeM
 * pool-bestfit (vdnn_allocator), not --allocator's default bfc; then the
 * policy's report (issue 12, item 8). */
static void test_simulate_says_what_ran(void **state)
{
	(void)state;
	expect("simulate tests/fixtures/chain3.yaml --policy vdnn "
	       "--set offload=all --set algo=m",
	       0, "policy vdnn, allocator pool-bestfit\n");
	expect("simulate tests/fixtures/chain3.yaml --policy vdnn "
	       "--set offload=all --set algo=m",
	       0, "scheme all(m)\n");
	expect("simulate tests/fixtures/chain3.yaml", 0,
	       "policy framework, allocator bfc\n");
}

/* simulate --times: the fixture's one op has TIME 1000000 ns, kept by
 * default (1 ms an iteration: one kernel) and with --times log; with
 * --times profile the profile times 800 bytes of relu, microseconds
 * (V100: 900 GB/s, a launch some us), shown as 0.0NN ms. The option
 * belongs to traces. */
static void test_simulate_times(void **state)
{
	(void)state;
	const char *log = "simulate tests/fixtures/dtr-1ms.log";
	char args[256];
	expect(log, 0, "iteration time     1.000 ms\n");
	snprintf(args, sizeof args, "%s --times log", log);
	expect(args, 0, "iteration time     1.000 ms\n");
	snprintf(args, sizeof args, "%s --times profile", log);
	expect(args, 0, "iteration time     0.0");
	snprintf(args, sizeof args, "%s --times prof", log);
	expect(args, 2, "--times: unknown 'prof' (known: log, profile)");
	expect("simulate resnet50 --times profile", 2,
	       "--times applies to DTR traces (.log) only");
	expect("simulate " WL " --remat simrd", 2,
	       "--remat applies to DTR traces (.log) only");
}

/* issue 34: the defaults a PyTorch user expects. A generator follows the
 * pytorch personality unless told, so `framework` runs on PyTorch's
 * caching allocator (wl_framework_allocator); a gpumemsim-record log (its
 * first NOTE names the recorder) too; a DTR log names no framework: bfc,
 * as before. Each line says what ran. */
static void test_pytorch_defaults(void **state)
{
	(void)state;
	expect("simulate resnet34 --batch 1", 0,
	       "policy framework, allocator caching\n");
	expect("simulate resnet34 --batch 1 --framework tf-graph", 0,
	       "policy framework, allocator bfc\n");
	expect("describe resnet34 --batch 1", 0, "framework pytorch keeps:");
	expect("simulate workloads/traces/recorded/gpt2tiny-2-recorded.log", 0,
	       "policy framework, allocator caching\n");
	expect("simulate tests/fixtures/dtr-1ms.log", 0,
	       "policy framework, allocator bfc\n");
}

/* issue 34: the nearest option, and a simulate trace's process name with
 * the budget and the allocator (the V100-16GB's whole 16 GiB - 768 MiB =
 * 15.25 GiB; --budget 4G is 4 x 2^30 bytes, 4.00 GiB; 4GB is 4 x 10^9,
 * 3.73 GiB). */
static void test_hints_and_trace_name(void **state)
{
	(void)state;
	expect("simulate tests/fixtures/chain3.yaml --iteration 2", 2,
	       "unknown option --iteration; did you mean '--iterations'?");
	expect("run tests/fixtures/exp/chain3-vdnn.yaml --trace-pont 1", 2,
	       "unknown option --trace-pont; did you mean '--trace-point'?");
	expect("simulate resnt50", 2, "did you mean 'resnet50'?");
	expect("simulate tests/fixtures/chain3.yaml --hw V100-16G", 2,
	       "did you mean 'V100-16GB'?");
	expect("simulate tests/fixtures/chain3.yaml --policy ondemnad", 2,
	       "did you mean 'ondemand'?");
	char path[64], args[256], buf[4096];
	snprintf(path, sizeof path, "/tmp/gms-test-cli-trace-%d.json",
		 (int)getpid());
	const struct {
		const char *opt, *want;
	} c[] = {
		{"", "chain3 batch 4, framework on V100-16GB, budget 15.25 GiB, "
		     "allocator bfc (ok)"},
		{"--budget 4G --allocator arena",
		 "budget 4.00 GiB, allocator arena (ok)"},
		{"--budget 4GB", "budget 3.73 GiB, allocator bfc (ok)"},
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		snprintf(args, sizeof args,
			 "simulate tests/fixtures/chain3.yaml --trace %s %s",
			 path, c[i].opt);
		expect(args, 0, NULL);
		FILE *f = fopen(path, "r");
		assert_non_null(f);
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = 0;
		fclose(f);
		if (!strstr(buf, c[i].want))
			fail_msg("%s: wanted '%s' in\n%.300s", args, c[i].want,
				 buf);
	}
	remove(path);
}

static void test_listings_and_help(void **state)
{
	(void)state;
	expect("list policies", 0, "ondemand");
	expect("list allocators", 0, "pool-bestfit");
	expect("list hw", 0, "P100-PCIe-16GB");
	expect("help policies", 0, "mode");
	expect("--help", 0, "exit status");
}

static void test_same_inputs_same_bytes(void **state)
{
	(void)state;
	char *a, *b;
	const char *args = "simulate " WL " --policy ondemand --budget 6MiB "
			   "--allocator caching --iterations 4";
	assert_int_equal(sh(args, &a), 0);
	assert_int_equal(sh(args, &b), 0);
	assert_string_equal(a, b);
	free(a);
	free(b);
}

/* compare's command line (the comparison itself: test_compare.c): usage
 * errors and an unreadable schedule exit 2 before anything is written;
 * --help lists it. */
static void test_compare_cli(void **state)
{
	(void)state;
	expect("compare", 2, "usage: compare SCHEDULE MEASURED");
	expect("compare a.log", 2, "usage: compare SCHEDULE MEASURED");
	expect("compare a.log b.csv c.csv", 2, "unexpected 'c.csv'");
	expect("compare a.log b.csv --colour", 2, "unexpected '--colour'");
	expect("compare /nonexistent/s.log m.csv --out /tmp/gms-never", 2,
	       "/nonexistent/s.log");
	char *out;
	sh("--help", &out);
	assert_non_null(strstr(out, "compare SCHEDULE MEASURED"));
	free(out);
	FILE *f = fopen("/tmp/gms-never/compare.csv", "r");
	assert_null(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input_exits_2_with_location),
		cmocka_unit_test(test_oom_is_a_result),
		cmocka_unit_test(test_schedule_option),
		cmocka_unit_test(test_simulate_says_what_ran),
		cmocka_unit_test(test_started_by_loader),
		cmocka_unit_test(test_simulate_times),
		cmocka_unit_test(test_listings_and_help),
		cmocka_unit_test(test_pytorch_defaults),
		cmocka_unit_test(test_hints_and_trace_name),
		cmocka_unit_test(test_same_inputs_same_bytes),
		cmocka_unit_test(test_compare_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
