/*
 * gpumemsim_main.c - the command-line program.
 *
 * Exit codes: 0 the run(s) completed (an OOM is a result, reported, not a
 * failure); 1 a run failed (engine or policy error); 2 bad input (usage,
 * YAML, unknown names).
 */
#include "../policies/pol.h"
#include "../workloads/wl.h"
#include "ex.h"
#include "hw.h"
#include "mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GMS_VERSION
#define GMS_VERSION "unknown"
#endif

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_INPUT = 2 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gpumemsim COMMAND [ARGS]\n"
		"\n"
		"Simulates GPU memory-management policies for DNN training.\n"
		"\n"
		"commands:\n"
		"  simulate WORKLOAD.yaml [options]   run one workload under a policy\n"
		"      --hw NAME|PATH      hardware profile (default V100-16GB;\n"
		"                          `gpumemsim list hw`)\n"
		"      --policy NAME       policy (default framework; `list policies`)\n"
		"      --set KEY=VALUE     policy parameter (repeatable;\n"
		"                          `gpumemsim help policies`)\n"
		"      --allocator NAME    device allocator (default bfc;\n"
		"                          `list allocators`)\n"
		"      --budget BYTES      device bytes for tensors (default:\n"
		"                          capacity minus reserved), e.g. 6GiB\n"
		"      --pool-size BYTES   initial pool (pool-bestfit, highend,\n"
		"                          bfc growth); default: the budget\n"
		"      --batch N           override the workload's batch size\n"
		"      --iterations N      iterations to simulate (default 3)\n"
		"      --warmup N          leading iterations left out of the\n"
		"                          steady state (default 1)\n"
		"  list policies|allocators|hw        what is available\n"
		"  help [policies|hw]                 this text, or parameter tables\n"
		"  --version                          print the version\n"
		"\n"
		"exit status: 0 ok (an OOM is a reported result), 1 a run failed,\n"
		"2 bad input (usage, YAML errors, unknown names).\n");
}

static int list(const char *what)
{
	if (strcmp(what, "policies") == 0) {
		for (size_t i = 0; pol_at(i); i++)
			printf("%-12s %s\n", pol_at(i)->name, pol_at(i)->summary);
	} else if (strcmp(what, "allocators") == 0) {
		for (size_t i = 0; mem_model(i); i++)
			printf("%-13s %s\n", mem_model(i)->name,
			       mem_model(i)->summary);
	} else if (strcmp(what, "hw") == 0) {
		char cmd[1024];
		snprintf(cmd, sizeof cmd,
			 "ls '%s/configs/hw' | sed -n 's/\\.yaml$//p'",
			 hw_datadir());
		return system(cmd) == 0 ? EXIT_OK : EXIT_INPUT;
	} else {
		fprintf(stderr,
			"gpumemsim: list what? (policies, allocators, hw)\n");
		return EXIT_INPUT;
	}
	return EXIT_OK;
}

static int help(const char *topic)
{
	if (!topic) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(topic, "policies") == 0) {
		for (size_t i = 0; pol_at(i); i++) {
			printf("%s: %s\n", pol_at(i)->name, pol_at(i)->summary);
			if (pol_at(i)->params)
				prm_print_help(pol_at(i)->params, stdout, "    ");
		}
		return EXIT_OK;
	}
	if (strcmp(topic, "hw") == 0) {
		hw_print_help(stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "gpumemsim: no help on '%s' (policies, hw)\n", topic);
	return EXIT_INPUT;
}

static int parse_count(const char *opt, const char *v, int64_t lo,
		       int64_t *out)
{
	if (!v || gms_parse_int(v, out) < 0 || *out < lo) {
		fprintf(stderr, "gpumemsim: %s needs an integer >= %lld\n", opt,
			(long long)lo);
		return -1;
	}
	return 0;
}

static int simulate(int argc, char **argv)
{
	const char *wl_path = NULL, *hw_spec = "V100-16GB",
		   *policy = "framework", *allocator = "bfc";
	const char **kv = calloc((size_t)argc, sizeof *kv);
	size_t n_kv = 0;
	uint64_t budget = 0, pool = 0;
	int64_t batch = 0, iters = 3, warmup = 1;
	int rc = EXIT_INPUT;
	if (!kv)
		return EXIT_RUN;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = a[0] == '-' && a[1] == '-';
		if (takes && !v) {
			fprintf(stderr, "gpumemsim: %s needs a value\n", a);
			goto out;
		}
		if (strcmp(a, "--hw") == 0)
			hw_spec = v;
		else if (strcmp(a, "--policy") == 0)
			policy = v;
		else if (strcmp(a, "--set") == 0)
			kv[n_kv++] = v;
		else if (strcmp(a, "--allocator") == 0)
			allocator = v;
		else if (strcmp(a, "--budget") == 0 ||
			 strcmp(a, "--pool-size") == 0) {
			uint64_t *dst = a[2] == 'b' ? &budget : &pool;
			if (gms_parse_bytes(v, dst) < 0 || *dst == 0) {
				fprintf(stderr,
					"gpumemsim: %s: '%s' is not a positive "
					"size (e.g. 6GiB)\n",
					a, v);
				goto out;
			}
		} else if (strcmp(a, "--batch") == 0) {
			if (parse_count(a, v, 1, &batch) < 0)
				goto out;
		} else if (strcmp(a, "--iterations") == 0) {
			if (parse_count(a, v, 1, &iters) < 0)
				goto out;
		} else if (strcmp(a, "--warmup") == 0) {
			if (parse_count(a, v, 0, &warmup) < 0)
				goto out;
		} else if (takes) {
			fprintf(stderr, "gpumemsim: unknown option %s\n", a);
			goto out;
		} else if (!wl_path) {
			wl_path = a;
			continue;
		} else {
			fprintf(stderr, "gpumemsim: unexpected argument %s\n",
				a);
			goto out;
		}
		i++;
	}
	if (!wl_path) {
		fprintf(stderr, "gpumemsim: simulate needs a workload file\n");
		goto out;
	}
	if (warmup >= iters) {
		fprintf(stderr,
			"gpumemsim: --warmup (%lld) must be below --iterations "
			"(%lld)\n",
			(long long)warmup, (long long)iters);
		goto out;
	}
	if (!mem_find(allocator)) {
		fprintf(stderr, "gpumemsim: unknown allocator '%s' (see "
				"`gpumemsim list allocators`)\n",
			allocator);
		goto out;
	}
	gms_err err = {{0}};
	struct hw_profile hw;
	if (hw_load(&hw, hw_spec, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		goto out;
	}
	struct wl_workload *wl = wl_load_yaml(wl_path, batch, &err);
	if (!wl) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		goto out;
	}
	struct pol pol;
	if (pol_create(&pol, policy, NULL, NULL, kv, n_kv, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		wl_free(wl);
		goto out;
	}
	struct ex_cfg cfg = {.hw = &hw, .wl = wl, .pol = &pol,
			     .allocator = allocator, .budget = budget,
			     .pool_size = pool, .iterations = (int)iters,
			     .warmup = (int)warmup};
	struct st_run st;
	int r = ex_run(&cfg, &st, &err);
	printf("%s on %s, batch %lld, policy %s, allocator %s\n", wl->name,
	       hw.name, (long long)wl->batch, pol.label, allocator);
	st_print(&st, stdout);
	if (pol.ops->report) {
		printf("  policy %s (whole run):\n", pol.ops->name);
		pol.ops->report(&pol, stdout);
	}
	if (r < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		rc = st.failed ? EXIT_RUN : EXIT_INPUT;
	} else {
		rc = EXIT_OK;
	}
	st_run_free(&st);
	pol_destroy(&pol);
	wl_free(wl);
out:
	free(kv);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_INPUT;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
		return help(NULL);
	if (strcmp(cmd, "--version") == 0) {
		printf("gpumemsim %s\n", GMS_VERSION);
		return EXIT_OK;
	}
	if (strcmp(cmd, "help") == 0)
		return help(argc > 2 ? argv[2] : NULL);
	if (strcmp(cmd, "list") == 0) {
		if (argc < 3) {
			fprintf(stderr, "gpumemsim: list what? (policies, "
					"allocators, hw)\n");
			return EXIT_INPUT;
		}
		return list(argv[2]);
	}
	if (strcmp(cmd, "simulate") == 0)
		return simulate(argc - 2, argv + 2);
	fprintf(stderr, "gpumemsim: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return EXIT_INPUT;
}
