/*
 * gpumemsim_main.c - the command-line program: the one place above every
 * layer (sim/, workloads/, policies/, exp/, calibrate/); nothing includes
 * it, so sim/ depends on nothing above it.
 *
 * Exit codes: 0 the run(s) completed (an OOM is a result, reported, not a
 * failure); 1 a run failed (engine or policy error); 2 bad input (usage,
 * YAML, unknown names).
 */
#include "../calibrate/calib.h"
#include "../exp/compare.h"
#include "../exp/exp.h"
#include "../exp/shard.h"
#include "../policies/dtr.h"
#include "../policies/pol.h"
#include "../workloads/wl.h"
#include "../workloads/wl_gen.h"
#include "../sim/ex.h"
#include "../sim/heap.h"
#include "../sim/hw.h"
#include "../sim/mem.h"
#include "../sim/sched.h"
#include "../sim/snapshot.h"
#include "../sim/trace.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
		"  run EXPERIMENT.yaml [options]      run an experiment into\n"
		"                                     <out>/<name>/ (summary.csv,\n"
		"                                     runs.json, plot.png/.svg)\n"
		"      --out DIR           write the results to DIR instead\n"
		"      -j N, -jN           parallel runs (default: the cores)\n"
		"      --quiet             no progress line on stderr\n"
		"      --trace FILE        Chrome trace (Perfetto) of one run\n"
		"      --schedule FILE     schedule log (validation mode) of\n"
		"                          one run\n"
		"      --trace-point N     which (--trace, --schedule,\n"
		"                          --memory-snapshot): row N of\n"
		"                          summary.csv\n"
		"                          (default 0)\n"
		"      --memory-snapshot FILE.pickle  PyTorch memory snapshot\n"
		"                          of one run (as simulate's)\n"
		"      --trace-all DIR     a Chrome trace of every row, as\n"
		"                          DIR/<row>-<workload>-<policy>.json\n"
		"      --shard K/N         run only the K-th (0-based) of N\n"
		"                          balanced slices of the points into\n"
		"                          <out>/shard-K-of-N.shard (no\n"
		"                          --trace); then `merge`\n"
		"      --plan FILE         with --shard: the slices, baselines\n"
		"                          and models of `plan`'s FILE (each\n"
		"                          shard then builds only the workloads\n"
		"                          of the tasks it runs, searches no\n"
		"                          baseline, fits no AccUDNN model the\n"
		"                          plan holds)\n"
		"  plan EXPERIMENT.yaml --shards N [--out DIR] [-j N] [--quiet]\n"
		"       [--steal]                     search the baselines and fit\n"
		"                                     the points' AccUDNN models\n"
		"                                     and DTR baselines once, and\n"
		"                                     write <out>/plan-of-N.plan\n"
		"                                     for `run --shard K/N --plan`\n"
		"      --steal             the shards claim tasks through a\n"
		"                          directory beside the plan file\n"
		"                          (plan-of-N.claims/, on a shared\n"
		"                          file system): a shard that ends\n"
		"                          early runs others' unstarted tasks\n"
		"  merge DIR|FILE... [--out DIR] [--quiet]\n"
		"                                     the N shard files of one\n"
		"                                     experiment (a DIR: its\n"
		"                                     shard-*-of-*.shard) into the\n"
		"                                     result set the unsharded run\n"
		"                                     writes, byte for byte; into\n"
		"                                     --out or the first shard's\n"
		"                                     directory\n"
		"  optimal WORKLOAD --budget B [--node-limit N] [--time-limit S]\n"
		"          [simulate's options]       the optimal policy's MILP\n"
		"                                     (CBC): schedule, objective,\n"
		"                                     bound, gap, and its replay\n"
		"                                     (2 iterations, 1 warm-up,\n"
		"                                     arena); N: CBC's nodes per\n"
		"                                     solve (the work limit,\n"
		"                                     node_limit), S: the wall-\n"
		"                                     clock safety net\n"
		"                                     (time_limit), reported\n"
		"                                     when it fires\n"
		"  simulate WORKLOAD [options]        one workload under a policy\n"
		"      WORKLOAD            a generator name (`list workloads`),\n"
		"                          a workload .yaml or a DTR trace .log\n"
		"                          (dtr:FILE.log: in $GMS_DTR_DIR, else\n"
		"                          ../shared/data/dtr beside the checkout)\n"
		"      --remat forward|simrd  a trace's recomputable ops: forward\n"
		"                          ops (default) or every op, as DTR\n"
		"      --times log|profile a trace's op times: the log's TIME\n"
		"                          (default; the profile where it has\n"
		"                          none) or the hardware profile for\n"
		"                          every op\n"
		"      --hw NAME|PATH      hardware profile (default V100-16GB;\n"
		"                          `gpumemsim list hw`)\n"
		"      --policy NAME       policy (default framework; `list policies`)\n"
		"      --set KEY=VALUE     policy parameter (repeatable;\n"
		"                          `gpumemsim help policies`)\n"
		"      --allocator NAME    device allocator (`list allocators`);\n"
		"                          default framework: the workload's\n"
		"                          framework's (tf-*: bfc, pytorch:\n"
		"                          caching, caffe: arena;\n"
		"                          gpumemsim-record logs: caching;\n"
		"                          other files: bfc)\n"
		"      --budget BYTES      device bytes for tensors (default:\n"
		"                          capacity minus reserved), e.g. 6GiB\n"
		"                          (GiB or G: 2^30 bytes; GB: 10^9)\n"
		"      --pool-size BYTES   initial pool (pool-bestfit, highend,\n"
		"                          bfc growth); default: the budget\n"
		"      --batch N           batch size (generators: default 32;\n"
		"                          files: override the file's)\n"
		"      --size N            generator input size (default: its own)\n"
		"      --framework NAME    generator's framework personality:\n"
		"                          pytorch (default), tf-graph,\n"
		"                          tf-eager, caffe\n"
		"      --optimizer NAME    none, sgd, momentum (default), adam,\n"
		"                          adamw, adam8bit\n"
		"      --precision NAME    fp32 (default), tf32, fp16-autocast,\n"
		"                          bf16-autocast, bf16-pure\n"
		"      --attention NAME    language models: eager (default),\n"
		"                          sdpa\n"
		"      --loss NAME         language models: full (default),\n"
		"                          chunked\n"
		"      --host MODE         the host thread: framework (default:\n"
		"                          as the personality does; README,\n"
		"                          \"The host thread\"), runahead (launch\n"
		"                          without waiting, up to a sync point)\n"
		"                          or wait (for each kernel)\n"
		"      --iterations N      iterations to simulate (default 3)\n"
		"      --settle-max N      a learning policy (capuchin): up to N\n"
		"                          more warm-up iterations until it\n"
		"                          reports its plan stable (default\n"
		"                          100; 0: none)\n"
		"      --grow-max N        up to N more warm-up iterations\n"
		"                          while a measured one grows\n"
		"                          the pinned pool or the device\n"
		"                          reservation (default 10; 0: none;\n"
		"                          docs/host.md)\n"
		"      --warmup N          leading iterations left out of the\n"
		"                          steady state (default 1)\n"
		"      --trace FILE        Chrome trace of the run\n"
		"      --memory-snapshot FILE.pickle  the allocator's segments\n"
		"                          and blocks at the end and the\n"
		"                          alloc/free trace, as PyTorch's\n"
		"                          torch.cuda.memory._dump_snapshot\n"
		"                          writes them (memory_viz reads it;\n"
		"                          docs/outputs-and-snapshot.md)\n"
		"      --schedule FILE     schedule log of the run: what the\n"
		"                          executor issued (README, \"Schedule\n"
		"                          log\"); not with --trace\n"
		"  describe WORKLOAD [--batch N] [--size N] [--framework F]\n"
		"           [--optimizer O] [--precision P] [--attention A]\n"
		"           [--loss L] [--ops]\n"
		"                                     per-layer table (params,\n"
		"                                     activations, FLOPs) and\n"
		"                                     totals; --ops: per op\n"
		"  fit MEASUREMENTS.csv -o PROFILE.yaml [options]\n"
		"                                     fit GPU measurements (the\n"
		"                                     CSV of build/calibrate-gpu,\n"
		"                                     `make calibrate`) into a\n"
		"                                     hardware profile; no GPU needed\n"
		"      --name NAME         the profile's name (default: file stem)\n"
		"      --base PROFILE      take the host: section from it\n"
		"                          (default: estimates, marked)\n"
		"      --precision P       matmul rows for compute.matmul: fp32\n"
		"                          (default), tf32, fp16\n"
		"      --force             write the profile even where a fit's\n"
		"                          R^2 is below 0.9 (README,\n"
		"                          \"Calibration\")\n"
		"  calibrate --host -o PROFILE.yaml [options]\n"
		"                                     measure this CPU: memcpy and\n"
		"                                     ZVC (de)compression per thread;\n"
		"                                     writes the base profile with\n"
		"                                     its host: section measured\n"
		"      --hw NAME|PATH      base profile (default V100-16GB)\n"
		"      --threads N         threads at once (default: the base\n"
		"                          profile's cpu_threads)\n"
		"      --density D         nonzero fraction of the synthetic\n"
		"                          activations (default 0.5)\n"
		"      --size BYTES        buffer per thread (default 64MiB)\n"
		"      --repeats N         timed repetitions, median kept\n"
		"                          (default 5)\n"
		"  calibrate               (no --host) the GPU side is a separate\n"
		"                          program: `make calibrate`, then\n"
		"                          build/calibrate-gpu -o M.csv and\n"
		"                          gpumemsim fit M.csv -o PROFILE.yaml\n"
		"  compare SCHEDULE MEASURED [options]\n"
		"                                     validation mode: a schedule\n"
		"                                     log (simulate --schedule)\n"
		"                                     against the measurement CSV\n"
		"                                     of its replay on a GPU; prints\n"
		"                                     the report, writes\n"
		"                                     compare.csv, summary.txt,\n"
		"                                     trace.json, timeline.png/.svg\n"
		"      --out DIR           where (default results/compare)\n"
		"      --no-plot           no timeline plot (no gnuplot needed)\n"
		"  dtr TRACE.log [options]            replay a DTR trace as the DTR\n"
		"                                     simulator simrd does (README,\n"
		"                                     \"The dtr policy (serial\n"
		"                                     preset)\"): one memory counter,\n"
		"                                     eviction by a heuristic,\n"
		"                                     rematerialization on demand\n"
		"      --heuristic H       dtr (default), dtr-eqclass, msps,\n"
		"                          lru, largest\n"
		"      --ratio R           budget: int(R x the baseline peak),\n"
		"                          0 < R <= 1e6 (default 1)\n"
		"      --budget BYTES      budget in bytes instead, e.g. 4GiB\n"
		"      --remat-limit X     stop (\"thrash\") once the\n"
		"                          rematerialized compute passes X x the\n"
		"                          baseline compute (default 1, simrd's\n"
		"                          run_pareto); `none`: never\n"
		"      --csv               a CSV header and one row instead\n"
		"  list policies|allocators|hw|workloads|experiments\n"
		"  help [experiment|policies|hw|workloads]\n"
		"                                     this text, or a key table\n"
		"  --version                          print the version\n"
		"\n"
		"exit status: 0 ok (an OOM is a reported result), 1 a run failed,\n"
		"2 bad input (usage, YAML errors, unknown names); nothing is\n"
		"written when the input is bad.\n");
}

/* The files of dir ending in suffix, sorted, each as "  <shown><name>";
 * -1 when dir cannot be read. */
static int list_files(const char *dir, const char *shown, const char *suffix)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	/* sorted, so the listing is the same everywhere */
	char names[256][256];
	size_t n = 0, ls = strlen(suffix);
	struct dirent *de;
	while ((de = readdir(d)) && n < 256) {
		size_t l = strlen(de->d_name);
		if (l > ls && !strcmp(de->d_name + l - ls, suffix))
			snprintf(names[n++], sizeof names[0], "%s", de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof names[0],
	      (int (*)(const void *, const void *))strcmp);
	for (size_t i = 0; i < n; i++)
		printf("  %s%s\n", shown, names[i]);
	return 0;
}

static void list_dir(const char *sub, const char *suffix)
{
	char dir[1100], shown[300];
	snprintf(dir, sizeof dir, "%s/%s", hw_datadir(), sub);
	snprintf(shown, sizeof shown, "%s/", sub);
	list_files(dir, shown, suffix);
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
		char dir[1100];
		snprintf(dir, sizeof dir, "%s/configs/hw", hw_datadir());
		DIR *d = opendir(dir);
		if (!d) {
			fprintf(stderr, "gpumemsim: %s: cannot read\n", dir);
			return EXIT_INPUT;
		}
		closedir(d);
		list_dir("configs/hw", ".yaml");
	} else if (strcmp(what, "workloads") == 0) {
		printf("generators (name: {name: NAME, batch: N, size: N, "
		       "framework: tf-graph|tf-eager|pytorch|caffe, optimizer: "
		       "none|sgd|momentum|adam}):\n");
		for (const struct wl_gen *g = wl_gens; g->name; g++)
			printf("  %-16s %s=%lld (min %lld)  %s\n", g->name,
			       g->size_name, (long long)g->default_size,
			       (long long)g->min_size, g->desc);
		printf("workload files ({file: PATH, batch: N}):\n");
		list_dir("workloads/examples", ".yaml");
		char dir[GMS_PATH_MAX];
		printf("recorded traces ({trace: PATH} or {trace: dtr:FILE} "
		       "in the DTR trace directory; batch fixed):\n");
		list_dir("workloads/traces/recorded", ".log");
		if (wl_dtr_dir(dir, sizeof dir) < 0 ||
		    list_files(dir, WL_DTR_PREFIX, ".log") < 0)
			printf("  (no DTR logs: no directory %s; set GMS_DTR_DIR, "
			       "docs/third-party-data.md)\n", dir);
	} else if (strcmp(what, "experiments") == 0) {
		list_dir("configs/experiments", ".yaml");
	} else {
		fprintf(stderr, "gpumemsim: list what? (policies, allocators, "
				"hw, workloads, experiments)\n");
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
	if (strcmp(topic, "experiment") == 0) {
		exp_print_help(stdout);
		return EXIT_OK;
	}
	if (strcmp(topic, "workloads") == 0)
		return list("workloads");
	fprintf(stderr, "gpumemsim: no help on '%s' (experiment, policies, "
			"hw, workloads)\n",
		topic);
	return EXIT_INPUT;
}

static int parse_range(const char *opt, const char *v, int64_t lo,
		       int64_t hi, int64_t *out)
{
	if (!v || gms_parse_int(v, out) < 0 || *out < lo || *out > hi) {
		if (hi == INT64_MAX)
			fprintf(stderr, "gpumemsim: %s needs an integer >= %lld\n",
				opt, (long long)lo);
		else
			fprintf(stderr,
				"gpumemsim: %s needs an integer from %lld to "
				"%lld\n",
				opt, (long long)lo, (long long)hi);
		return -1;
	}
	return 0;
}

static int parse_count(const char *opt, const char *v, int64_t lo,
		       int64_t *out)
{
	return parse_range(opt, v, lo, INT64_MAX, out);
}

/* A Chrome trace's process name (issue 34): what ran, and the budget and
 * allocator, so that traces of several points opened together (run
 * --trace-all) tell themselves apart. budget 0: the profile's usable
 * memory. */
static void trace_title(char *buf, size_t n, const char *wl, int64_t batch,
			const char *pol, const struct hw_profile *hw,
			uint64_t budget, const char *allocator,
			const char *status)
{
	uint64_t b = budget ? budget : hw->capacity - hw->reserved;
	snprintf(buf, n, "%s batch %lld, %s on %s, budget %.2f GiB, "
			 "allocator %s (%s)",
		 wl, (long long)batch, pol, hw->name,
		 (double)b / (1024.0 * 1024.0 * 1024.0),
		 allocator && allocator[0] ? allocator : "?", status);
}

/* "unknown option", with the nearest of the command's options when one
 * is close (gms_near_hint, issue 34). Returns EXIT_INPUT. */
static int unknown_option(const char *a, const char *const *known)
{
	struct gms_near near;
	char hint[GMS_NEAR_BUF];
	gms_near_init(&near, a);
	for (size_t i = 0; known[i]; i++)
		gms_near_add(&near, known[i]);
	fprintf(stderr, "gpumemsim: unknown option %s%s\n", a,
		gms_near_hint(&near, hint));
	return EXIT_INPUT;
}

/* The workload options simulate and describe share. */
struct wl_opts {
	int64_t batch, size;	/* --batch, --size; 0 = default */
	int framework, optimizer; /* --framework, --optimizer; -1 = default */
	int remat;		/* --remat (a trace's enum wl_dtr_remat); -1 =
				   default */
	int times;		/* --times (a trace's enum wl_dtr_times); -1 =
				   default (log) */
	int precision, attention, loss; /* --precision, --attention, --loss:
				   the index + 1; 0 = default */
};

/* Take option a (value v) if it is a workload option: 1 taken, 0 not
 * one, -1 bad value (reported). */
static int wl_opt(const char *a, const char *v, struct wl_opts *o)
{
	if (strcmp(a, "--batch") == 0 || strcmp(a, "--size") == 0)
		return parse_count(a, v, 1, a[2] == 'b' ? &o->batch : &o->size)
			       < 0 ? -1 : 1;
	bool fw = strcmp(a, "--framework") == 0;
	bool rm = strcmp(a, "--remat") == 0;
	bool tm = strcmp(a, "--times") == 0;
	bool pr = strcmp(a, "--precision") == 0;
	bool at = strcmp(a, "--attention") == 0;
	bool ls = strcmp(a, "--loss") == 0;
	if (!fw && !rm && !tm && !pr && !at && !ls &&
	    strcmp(a, "--optimizer") != 0)
		return 0;
	const char *const *names = fw   ? wl_framework_names
				   : rm ? wl_dtr_remat_names
				   : tm ? wl_dtr_times_names
				   : pr ? wl_precision_names
				   : at ? wl_attn_names
				   : ls ? wl_loss_names
					: wl_optim_names;
	int *to = fw   ? &o->framework
		  : rm ? &o->remat
		  : tm ? &o->times
		  : pr ? &o->precision
		  : at ? &o->attention
		  : ls ? &o->loss
		       : &o->optimizer;
	for (int i = 0; v && names[i]; i++)
		if (strcmp(names[i], v) == 0) {
			*to = i + (pr || at || ls);
			return 1;
		}
	char known[256] = "";
	for (int i = 0; names[i]; i++)
		gms_list_add(known, sizeof known, names[i]);
	fprintf(stderr, "gpumemsim: %s: unknown '%s' (known: %s)\n", a,
		v ? v : "", known);
	return -1;
}

/* A workload named on the command line: a generator, a DTR trace (.log)
 * or a workload YAML file. */
static struct wl_workload *load_workload(const char *spec,
					 const struct wl_opts *o,
					 gms_err *err)
{
	const struct wl_gen *g = wl_gen_find(spec);
	size_t l = strlen(spec);
	int64_t batch = o->batch;
	bool is_log = (l > 4 && strcmp(spec + l - 4, ".log") == 0) ||
		      (l > 5 && strcmp(spec + l - 5, ".json") == 0);
	if (!is_log && (o->remat >= 0 || o->times >= 0)) {
		gms_errf(err, "%s applies to DTR traces (.log) only",
			 o->remat >= 0 ? "--remat" : "--times");
		return NULL;
	}
	if (g) {
		struct wl_gen_args a = {
			.batch = batch ? batch : 32, .size = o->size,
			.framework = o->framework < 0
					     ? WL_FW_PYTORCH
					     : (enum wl_framework)o->framework,
			.optimizer = o->optimizer < 0
					     ? WL_OPTIM_MOMENTUM
					     : (enum wl_optim)o->optimizer,
			.depth = wl_gen_name_depth(g, spec)};
		if (o->precision)
			a.precision = (enum wl_precision)(o->precision - 1);
		if ((o->attention || o->loss) && !g->arch) {
			gms_errf(err, "%s applies to language models only",
				 o->attention ? "--attention" : "--loss");
			return NULL;
		}
		if (o->attention)
			a.arch.attention = (enum wl_attn)(o->attention - 1);
		if (o->loss)
			a.arch.loss = (enum wl_loss)(o->loss - 1);
		return wl_gen_build(g, &a, err);
	}
	if (o->size || o->framework >= 0 || o->optimizer >= 0 ||
	    o->precision || o->attention || o->loss) {
		gms_errf(err, "%s applies to generators only",
			 o->size		? "--size"
			 : o->framework >= 0	? "--framework"
			 : o->optimizer >= 0	? "--optimizer"
			 : o->precision		? "--precision"
			 : o->attention		? "--attention"
						: "--loss");
		return NULL;
	}
	if (is_log) { /* --batch: a log with batch marks only (issue 35) */
		char path[GMS_PATH_MAX];
		int rc = wl_dtr_resolve(spec, path, sizeof path, err);
		return rc ? NULL
			  : wl_load_dtr_batch(
				    path,
				    o->remat < 0 ? WL_DTR_REMAT_FORWARD
						 : (enum wl_dtr_remat)o->remat,
				    o->times == WL_DTR_TIMES_PROFILE, batch,
				    err);
	}
	if (!strchr(spec, '/') && !strstr(spec, ".yaml")) {
		/* wl_gen_lookup's message names the nearest generator */
		gms_err gerr = {{0}};
		wl_gen_lookup(spec, &gerr);
		gms_errf(err, "'%s' is no generator nor a .yaml/.log file (%s)",
			 spec, gerr.msg);
		return NULL;
	}
	return wl_load_yaml(spec, batch, err);
}

/* A run that completed but whose --trace or --schedule file could not
 * be written: failed, with that file's error as the run's (printed once,
 * in the report's FAILED: line and on stderr). */
static void out_failed(struct st_run *st, gms_err *err, const gms_err *why)
{
	st->failed = true;
	*err = *why;
	snprintf(st->error, sizeof st->error, "%s", why->msg);
}

/* After simulate wrote an output file (wrc: its writer's result, werr
 * its error): on failure the run is failed with the writer's error (or,
 * when the run itself failed, that error is printed and the run's comes
 * later); else "<label>: <path>" on stderr. */
static void output_written(int wrc, const gms_err *werr, const char *label,
			   const char *path, int *r, struct st_run *st,
			   gms_err *err)
{
	if (wrc < 0) {
		if (*r == 0)
			out_failed(st, err, werr);
		else /* the run's own error comes below */
			fprintf(stderr, "gpumemsim: %s\n", werr->msg);
		*r = -1;
	} else {
		fprintf(stderr, "%s: %s\n", label, path);
	}
}

/* An allocation of the command line's own failed: say so (it exited 1
 * silently, issue 38). */
static int oom_exit(void)
{
	fputs("gpumemsim: out of memory\n", stderr);
	return EXIT_RUN;
}

static int simulate(int argc, char **argv)
{
	const char *wl_path = NULL, *hw_spec = "V100-16GB",
		   *policy = "framework", *allocator = "framework",
		   *trace = NULL, *sched = NULL, *snap = NULL;
	const char **kv = calloc((size_t)argc, sizeof *kv);
	size_t n_kv = 0;
	uint64_t budget = 0, pool = 0;
	int64_t iters = 3, warmup = 1, settle_max = 100,
		grow_max = EX_GROW_DEFAULT;
	enum ex_host host = EX_HOST_FRAMEWORK;
	struct wl_opts wo = {0, 0, -1, -1, -1, -1};
	int rc = EXIT_INPUT;
	if (!kv)
		return oom_exit();
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = a[0] == '-' && a[1] == '-';
		int took;
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
		else if (strcmp(a, "--trace") == 0)
			trace = v;
		else if (strcmp(a, "--schedule") == 0)
			sched = v;
		else if (strcmp(a, "--memory-snapshot") == 0)
			snap = v;
		else if (strcmp(a, "--host") == 0) {
			int k = 0;
			while (ex_host_names[k] && strcmp(ex_host_names[k], v))
				k++;
			if (!ex_host_names[k]) {
				fprintf(stderr,
					"gpumemsim: --host: '%s' is not one of "
					"framework, runahead, wait\n",
					v);
				goto out;
			}
			host = (enum ex_host)k;
		} else if ((took = wl_opt(a, v, &wo)) != 0) {
			if (took < 0)
				goto out;
		} else if (strcmp(a, "--budget") == 0 ||
			 strcmp(a, "--pool-size") == 0) {
			uint64_t *dst = a[2] == 'b' ? &budget : &pool;
			if (gms_parse_bytes(v, dst) < 0 || *dst == 0) {
				fprintf(stderr,
					"gpumemsim: %s: '%s' is not a positive "
					"size (e.g. 6GiB or 6G = 6 x 2^30 "
					"bytes, 6GB = 6 x 10^9)\n",
					a, v);
				goto out;
			}
		} else if (strcmp(a, "--iterations") == 0) {
			/* an experiment's limits (exp.c): 1e8 iterations took
			 * 7.5 GB of statistics (issue 38) */
			if (parse_range(a, v, 1, 1000, &iters) < 0)
				goto out;
		} else if (strcmp(a, "--settle-max") == 0) {
			if (parse_count(a, v, 0, &settle_max) < 0)
				goto out;
			if (settle_max > EX_SETTLE_MAX) {
				fprintf(stderr, "gpumemsim: --settle-max: %lld "
						"is above %d\n",
					(long long)settle_max, EX_SETTLE_MAX);
				goto out;
			}
		} else if (strcmp(a, "--grow-max") == 0) {
			if (parse_range(a, v, 0, EX_GROW_MAX, &grow_max) < 0)
				goto out;
		} else if (strcmp(a, "--warmup") == 0) {
			if (parse_range(a, v, 0, 999, &warmup) < 0)
				goto out;
		} else if (takes) {
			static const char *const opts[] = {
				"--hw", "--policy", "--set", "--allocator",
				"--trace", "--schedule", "--budget",
				"--pool-size", "--iterations", "--settle-max",
				"--warmup", "--batch", "--size", "--framework",
				"--remat", "--times", "--precision",
				"--attention", "--loss", "--optimizer",
				"--memory-snapshot", NULL};
			unknown_option(a, opts);
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
		fprintf(stderr, "gpumemsim: simulate needs a workload (a "
				"generator, .yaml or .log)\n");
		goto out;
	}
	if (!!trace + !!sched + !!snap > 1) {
		fprintf(stderr, "gpumemsim: --trace, --schedule and "
				"--memory-snapshot: one of them per run\n");
		goto out;
	}
	if (warmup >= iters) {
		fprintf(stderr,
			"gpumemsim: --warmup (%lld) must be below --iterations "
			"(%lld)\n",
			(long long)warmup, (long long)iters);
		goto out;
	}
	if (strcmp(allocator, "framework") != 0 && !mem_find(allocator)) {
		fprintf(stderr, "gpumemsim: unknown allocator '%s' (see "
				"`gpumemsim list allocators`)\n",
			allocator);
		goto out;
	}
	gms_err err = {{0}};
	/* the trace's location before the run (--schedule's file is opened
	 * before it anyway) */
	if (trace && gms_out_probe(trace, &err) < 0) {
		fprintf(stderr, "gpumemsim: --trace: %s\n", err.msg);
		goto out;
	}
	if (snap && gms_out_probe(snap, &err) < 0) {
		fprintf(stderr, "gpumemsim: --memory-snapshot: %s\n", err.msg);
		goto out;
	}
	struct hw_profile hw;
	if (hw_load(&hw, hw_spec, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		goto out;
	}
	struct wl_workload *wl = load_workload(wl_path, &wo, &err);
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
	struct tr_rec tr;
	tr_init(&tr, wl);
	struct snap_rec sn;
	snap_init(&sn, wl);
	struct sch_writer *sw = NULL;
	if (sched && !(sw = sch_writer_open(sched, wl, &hw, pol.label,
					    (int)iters, (int)warmup, &err))) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		tr_fini(&tr);
		snap_fini(&sn);
		pol_destroy(&pol);
		wl_free(wl);
		goto out;
	}
	struct ex_cfg cfg = {.hw = &hw, .wl = wl, .pol = &pol,
			     .allocator = allocator, .budget = budget,
			     .pool_size = pool, .iterations = (int)iters,
			     .warmup = (int)warmup,
			     .settle_max = (int)settle_max,
			     .grow_max = (int)grow_max, .host = host,
			     .obs = trace  ? tr_observer(&tr)
				    : sw   ? sch_writer_observer(sw)
				    : snap ? snap_observer(&sn)
					   : NULL};
	struct st_run st;
	int r = ex_run(&cfg, &st, &err);
	if (sw) {
		gms_err serr;
		sch_writer_set_length(sw,
				      (int)iters + st.settle_extra +
					      st.grow_extra,
				      st.warmup);
		output_written(sch_writer_close(sw, st.mem.peak_allocated,
						st.mem.peak_reserved, &serr),
			       &serr, "schedule", sched, &r, &st, &err);
	}
	if (trace) {
		char title[600];
		trace_title(title, sizeof title, wl->name, wl->batch, pol.label,
			    &hw, budget,
			    st.allocator[0] ? st.allocator : allocator,
			    st.failed	 ? "failed"
			    : st.oom.hit ? "oom"
			    : r == 0	 ? "ok"
					 : "failed");
		gms_err terr;
		output_written(tr_write_chrome(&tr, trace, title, &terr), &terr,
			       "trace", trace, &r, &st, &err);
	}
	tr_fini(&tr);
	if (snap && (r == 0 || st.failed)) {
		gms_err serr;
		output_written(snap_write(&sn, snap, &serr), &serr,
			       "memory snapshot", snap, &r, &st, &err);
	}
	snap_fini(&sn);
	/* bad input found when the run set up (a budget below the
	 * allocator's least): no run, so no report; exit 2 below */
	bool ran = r == 0 || st.failed;
	/* the allocator that ran: the policy's own (vDNN's CNMeM) or
	 * --allocator; empty when the run stopped before making one */
	if (ran) {
		printf("%s on %s, batch %lld, policy %s, allocator %s\n",
		       wl->name, hw.name, (long long)wl->batch, pol.label,
		       st.allocator[0] ? st.allocator : allocator);
		st_print(&st, stdout);
	}
	gms_err rerr = {{0}};
	if (ran && pol_report_text(&pol, &st.pol_report, &rerr) < 0 &&
	    r == 0)
		r = -1, st.failed = true, err = rerr;
	if (ran && st.pol_report) {
		printf("  policy %s (whole run):\n", pol.ops->name);
		fputs(st.pol_report, stdout);
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

/* `optimal WORKLOAD --budget B`: simulate under the optimal policy
 * (README, "The optimal policy") for one iteration on the arena
 * allocator (the MILP models no fragmentation; --allocator overrides it),
 * with the schedule in the report; --node-limit N and --time-limit S are
 * the policy's node_limit and time_limit. The solve's wall time goes to
 * stderr only (outputs stay deterministic). */
static int optimal_cmd(int argc, char **argv)
{
	static const char *const pre[] = {
		"--policy", "optimal", "--iterations", "2", "--warmup", "1",
		"--allocator", "arena", "--set", "schedule=true"};
	/* the command's own flags: each a --set of the policy's key */
	static const char *const flag[2] = {"--node-limit", "--time-limit"};
	static const char *const key[2] = {"node_limit", "time_limit"};
	size_t n_pre = sizeof pre / sizeof *pre;
	char **av = calloc(n_pre + (size_t)argc + 1, sizeof *av);
	char *kv[2] = {NULL, NULL};
	if (!av)
		return EXIT_RUN;
	size_t n = 0;
	for (size_t i = 0; i < n_pre; i++)
		av[n++] = (char *)pre[i];
	int rc = EXIT_INPUT;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--policy") == 0) {
			fprintf(stderr, "gpumemsim: optimal: --policy is "
					"optimal's own\n");
			goto out;
		}
		int f = strcmp(argv[i], flag[0]) == 0	? 0
			: strcmp(argv[i], flag[1]) == 0 ? 1
							: -1;
		if (f >= 0) {
			if (i + 1 >= argc || kv[f]) {
				fprintf(stderr, "gpumemsim: %s needs one "
						"value\n",
					flag[f]);
				goto out;
			}
			size_t l = strlen(argv[i + 1]) + 16;
			kv[f] = malloc(l);
			if (!kv[f]) {
				rc = EXIT_RUN;
				goto out;
			}
			snprintf(kv[f], l, "%s=%s", key[f], argv[++i]);
			av[n++] = "--set";
			av[n++] = kv[f];
			continue;
		}
		av[n++] = argv[i];
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = simulate((int)n, av);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "optimal: solved and simulated in %.3f s\n",
		(double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
out:
	free(kv[0]);
	free(kv[1]);
	free(av);
	return rc;
}

/* A summary row to re-run: its point (results cleared) and workload. */
static struct wl_workload *point_again(const struct exp *e,
				       const struct exp_point *row,
				       struct exp_point *p, gms_err *err)
{
	*p = (struct exp_point){.wl = row->wl, .pol = row->pol,
				.batch = row->batch, .budget = row->budget,
				.fraction = row->fraction, .plan = row->plan};
	return exp_build_workload(e, p->wl, p->batch, err);
}

/* Re-run one summary row with a schedule writer and write its log. */
static int write_point_schedule(const struct exp *e,
				const struct exp_point *row, const char *path,
				gms_err *err)
{
	struct exp_point p;
	struct wl_workload *wl = point_again(e, row, &p, err);
	if (!wl)
		return -1;
	struct sch_writer *w = sch_writer_open(path, wl, &e->hw,
					       e->pol[p.pol].label,
					       e->iterations, e->warmup, err);
	if (!w) {
		wl_free(wl);
		return -1;
	}
	exp_simulate(e, &p, wl, sch_writer_observer(w));
	sch_writer_set_length(w,
			      e->iterations + p.st.settle_extra +
				      p.st.grow_extra,
			      p.st.warmup);
	int rc = sch_writer_close(w, p.st.mem.peak_allocated,
				  p.st.mem.peak_reserved, err);
	st_run_free(&p.st);
	wl_free(wl);
	return rc;
}

/* Re-run one summary row with a timeline recorder and write its Chrome
 * trace, or (snapshot) with a snapshot recorder and write the PyTorch
 * memory snapshot (snapshot.h). */
static int write_point_trace(const struct exp *e, const struct exp_point *row,
			     const char *path, bool snapshot, gms_err *err)
{
	struct exp_point p;
	struct wl_workload *wl = point_again(e, row, &p, err);
	if (!wl)
		return -1;
	struct tr_rec tr;
	struct snap_rec sn;
	tr_init(&tr, wl);
	snap_init(&sn, wl);
	exp_simulate(e, &p, wl,
		     snapshot ? snap_observer(&sn) : tr_observer(&tr));
	char title[600];
	trace_title(title, sizeof title, e->wl[p.wl].label, p.batch,
		    e->pol[p.pol].label, &e->hw,
		    p.budget ? p.budget : e->budget, p.st.allocator,
		    exp_status(&p));
	int rc = snapshot ? snap_write(&sn, path, err)
			  : tr_write_chrome(&tr, path, title, err);
	tr_fini(&tr);
	snap_fini(&sn);
	st_run_free(&p.st);
	wl_free(wl);
	return rc;
}

/* `compare SCHEDULE MEASURED [--out DIR] [--no-plot]`: both files are
 * read and checked before anything is written. */
static int compare(int argc, char **argv)
{
	const char *path[2] = {NULL, NULL}, *out = "results/compare";
	int n = 0;
	bool plot = true;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--out") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(a, "--no-plot") == 0) {
			plot = false;
		} else if (a[0] == '-' || n == 2) {
			fprintf(stderr, "gpumemsim: compare: unexpected '%s' "
					"(usage: compare SCHEDULE MEASURED "
					"[--out DIR] [--no-plot])\n",
				a);
			return EXIT_INPUT;
		} else {
			path[n++] = a;
		}
	}
	if (n != 2) {
		fprintf(stderr, "gpumemsim: usage: compare SCHEDULE MEASURED "
				"[--out DIR] [--no-plot]\n");
		return EXIT_INPUT;
	}
	struct sch_log log = {0};
	struct msr m = {0};
	struct cmp_result r;
	gms_err err = {{0}};
	if (cmp_check_out(out, &err) < 0) {
		fprintf(stderr, "gpumemsim: --out: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (sch_read(path[0], &log, &err) < 0 || sch_check(&log, &err) < 0 ||
	    msr_read(path[1], &m, &err) < 0 ||
	    cmp_run(&log, &m, &r, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		msr_free(&m);
		sch_free(&log);
		return EXIT_INPUT;
	}
	cmp_report(&r, stdout);
	int rc = cmp_write(&r, out, plot, stdout, &err) < 0 ? EXIT_RUN
							   : EXIT_OK;
	if (rc != EXIT_OK)
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
	cmp_free(&r);
	msr_free(&m);
	sch_free(&log);
	return rc;
}

/* The runs' failures: exit 1 and a line saying where to look. */
static int failed_runs(size_t n, const char *where)
{
	if (!n)
		return EXIT_OK;
	fprintf(stderr, "gpumemsim: %zu run(s) failed; see 'error' in %s\n",
		n, where);
	return EXIT_RUN;
}

/* run --shard K/N [--plan FILE]: the shard file only; e is freed. */
static int run_shard(struct exp *e, const struct exp_opts *o, unsigned k,
		     unsigned n, const char *plan)
{
	gms_err err = {{0}};
	long failed =
		shd_run(e, o, k, n, plan, o->quiet ? NULL : stdout, &err);
	exp_free(e);
	if (failed < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return failed == -2 ? EXIT_INPUT : EXIT_RUN;
	}
	return failed_runs((size_t)failed, "the merged summary");
}

/* merge DIR|FILE... [--out DIR] [--quiet] */
static int merge(int argc, char **argv)
{
	const char *out = NULL;
	bool quiet = false;
	char **in = calloc((size_t)argc + 1, sizeof *in);
	size_t n_in = 0;
	if (!in)
		return oom_exit();
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q")) {
			quiet = true;
		} else if (!strcmp(argv[i], "--out")) {
			if (i + 1 == argc) {
				fprintf(stderr, "gpumemsim: --out needs a "
						"value\n");
				free(in);
				return EXIT_INPUT;
			}
			out = argv[++i];
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "gpumemsim: unknown option %s\n",
				argv[i]);
			free(in);
			return EXIT_INPUT;
		} else {
			in[n_in++] = argv[i];
		}
	}
	if (!n_in) {
		fprintf(stderr, "gpumemsim: merge needs the shards' "
				"directories or files\n");
		free(in);
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	struct exp e;
	struct exp_result r;
	int rc = shd_merge(in, n_in, out, &e, &r, &err);
	free(in);
	if (rc < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (!quiet)
		printf("%s: %zu rows merged\n", e.name, exp_n_rows(&r));
	rc = EXIT_OK;
	if (exp_check_out(&e, NULL, &err) < 0 ||
	    exp_write(&e, &r, quiet ? NULL : stdout, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		rc = EXIT_RUN;
	}
	int f = failed_runs(r.n_failed, "the summary");
	exp_result_free(&r);
	exp_free(&e);
	return rc != EXIT_OK ? rc : f;
}

/* run --trace-all DIR: a Chrome trace of every summary row, each re-run
 * with a timeline recorder (as --trace re-runs one), into
 * DIR/<row>-<workload>-<policy>.json, names made of [A-Za-z0-9._-]; a
 * search without an answer: its first probe. Returns 0 or -1 with err. */
static int write_all_traces(const struct exp *e, const struct exp_result *r,
			    const char *dir, gms_err *err)
{
	if (gms_mkdirs(dir, err) < 0)
		return -1;
	for (size_t i = 0; i < exp_n_rows(r); i++) {
		const struct exp_point *row = exp_row(r, i);
		if (!row && r->srch && r->srch[i].n_probe)
			row = &r->srch[i].probe[0];
		if (!row)
			continue;
		char name[300], path[PRM_PATH_MAX + 320];
		snprintf(name, sizeof name, "%03zu-%.60s-%.60s", i,
			 e->wl[row->wl].label, e->pol[row->pol].label);
		for (char *c = name; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') ||
			      (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9') || *c == '.' ||
			      *c == '-' || *c == '_'))
				*c = '_';
		snprintf(path, sizeof path, "%s/%s.json", dir, name);
		if (write_point_trace(e, row, path, false, err) < 0)
			return -1;
	}
	printf("traces:  %s/ (%zu)\n", dir, exp_n_rows(r));
	return 0;
}

/* plan EXP --shards N: the plan file only; e is freed. */
static int plan_shards(struct exp *e, const struct exp_opts *o, unsigned n,
		       bool steal)
{
	gms_err err = {{0}};
	int rc = shd_plan_make(e, o->jobs, n, steal, o->quiet ? NULL : stdout,
			       &err);
	exp_free(e);
	if (rc < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_RUN;
	}
	return EXIT_OK;
}

/* `run` (planning false) and `plan` (true: --shards N, --out, -j,
 * --quiet only) */
static int run_experiment(int argc, char **argv, bool planning)
{
	const char *path = NULL, *shard = NULL, *trace_all = NULL,
		   *snap = NULL, *plan = NULL, *shards = NULL;
	struct exp_opts o = {0};
	bool steal = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int64_t n;
		if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
			o.quiet = true;
			continue;
		}
		if (planning && strcmp(a, "--steal") == 0) {
			steal = true;
			continue;
		}
		/* -jN as make takes it (issue 34) */
		if (a[0] == '-' && a[1] == 'j' && a[2]) {
			if (parse_count("-j", a + 2, 1, &n) < 0)
				return EXIT_INPUT;
			o.jobs = n > 1024 ? 1024 : (int)n;
			continue;
		}
		bool known = planning
			? !strcmp(a, "--out") || !strcmp(a, "--shards") ||
			  !strcmp(a, "-j") || !strcmp(a, "--jobs")
			: !strcmp(a, "--out") || !strcmp(a, "--trace") ||
			  !strcmp(a, "--schedule") || !strcmp(a, "--shard") ||
			  !strcmp(a, "--trace-point") || !strcmp(a, "-j") ||
			  !strcmp(a, "--jobs") || !strcmp(a, "--trace-all") ||
			  !strcmp(a, "--memory-snapshot") ||
			  !strcmp(a, "--plan");
		if (a[0] == '-' && !known) {
			static const char *const opts[] = {
				"--out",  "--trace", "--schedule", "--shard",
				"--trace-point", "--jobs", "--quiet",
				"--trace-all", "--memory-snapshot", "--plan",
				NULL};
			static const char *const plan_opts[] = {
				"--shards", "--out", "--jobs", "--quiet",
				"--steal", NULL};
			return unknown_option(a, planning ? plan_opts : opts);
		}
		if (known && !v) {
			fprintf(stderr, "gpumemsim: %s needs a value\n", a);
			return EXIT_INPUT;
		}
		if (strcmp(a, "--out") == 0)
			o.out = v;
		else if (strcmp(a, "--shard") == 0)
			shard = v;
		else if (strcmp(a, "--shards") == 0)
			shards = v;
		else if (strcmp(a, "--plan") == 0)
			plan = v;
		else if (strcmp(a, "--trace") == 0)
			o.trace = v;
		else if (strcmp(a, "--trace-all") == 0)
			trace_all = v;
		else if (strcmp(a, "--memory-snapshot") == 0)
			snap = v;
		else if (strcmp(a, "--schedule") == 0)
			o.schedule = v;
		else if (strcmp(a, "--trace-point") == 0) {
			if (parse_count(a, v, 0, &n) < 0)
				return EXIT_INPUT;
			o.trace_point = (long)n;
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--jobs") == 0) {
			if (parse_count(a, v, 1, &n) < 0)
				return EXIT_INPUT;
			o.jobs = n > 1024 ? 1024 : (int)n;
		} else if (!path) {
			path = a;
			continue;
		} else {
			fprintf(stderr, "gpumemsim: unexpected argument %s\n",
				a);
			return EXIT_INPUT;
		}
		i++;
	}
	if (!path) {
		fprintf(stderr, "gpumemsim: %s needs an experiment file "
				"(`gpumemsim list experiments`)\n",
			planning ? "plan" : "run");
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	unsigned sk = 0, sn = 0;
	if (shard && shd_parse(shard, &sk, &sn, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (planning) {
		int64_t n = 0;
		if (!shards) {
			fprintf(stderr, "gpumemsim: plan needs --shards N\n");
			return EXIT_INPUT;
		}
		if (parse_count("--shards", shards, 1, &n) < 0)
			return EXIT_INPUT;
		if (n > 1000000) {
			fprintf(stderr, "gpumemsim: --shards %s: at most "
					"1000000\n", shards);
			return EXIT_INPUT;
		}
		sn = (unsigned)n;
	}
	if (plan && !shard) {
		fprintf(stderr, "gpumemsim: --plan FILE goes with --shard K/N "
				"(`gpumemsim plan` makes FILE)\n");
		return EXIT_INPUT;
	}
	/* a shard of a plan builds only the workloads its tasks need: the
	 * plan step built and checked them all */
	o.lazy = plan != NULL;
	if (shard && (o.trace || o.schedule || trace_all || snap)) {
		fprintf(stderr, "gpumemsim: --shard runs part of the points: "
				"take --trace/--schedule from an unsharded "
				"run\n");
		return EXIT_INPUT;
	}
	struct exp e;
	int lrc = exp_load(&e, path, &o, &err);
	if (lrc == EXP_SKIPPED) { /* third-party data absent: not an error */
		printf("gpumemsim: %s: skipped: %s\n", path, err.msg);
		return EXIT_OK;
	}
	if (lrc < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (planning)
		return plan_shards(&e, &o, sn, steal);
	if (shard)
		return run_shard(&e, &o, sk, sn, plan);
	if (snap && gms_out_probe(snap, &err) < 0) {
		fprintf(stderr, "gpumemsim: --memory-snapshot: %s\n", err.msg);
		exp_free(&e);
		return EXIT_INPUT;
	}
	if (o.trace_point && !o.trace && !o.schedule && !snap) {
		fprintf(stderr, "gpumemsim: --trace-point needs --trace FILE, "
				"--schedule FILE or --memory-snapshot FILE\n");
		exp_free(&e);
		return EXIT_INPUT;
	}
	if ((o.trace || o.schedule || snap) &&
	    (size_t)o.trace_point >= exp_planned_rows(&e)) {
		fprintf(stderr,
			"gpumemsim: --trace-point %ld: no such row (the summary "
			"will have %zu)\n",
			o.trace_point, exp_planned_rows(&e));
		exp_free(&e);
		return EXIT_INPUT;
	}
	/* every output location before the first simulation */
	if (exp_check_out(&e, &o, &err) < 0 ||
	    (trace_all && gms_mkdirs(trace_all, &err) < 0)) {
		fprintf(stderr, "gpumemsim: %s%s\n",
			trace_all && !err.msg[0] ? "--trace-all: " : "",
			err.msg);
		exp_free(&e);
		return EXIT_INPUT;
	}
	struct exp_result r;
	int rc = EXIT_OK;
	if (exp_run(&e, &o, &r, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		exp_free(&e);
		return EXIT_RUN;
	}
	if (!o.quiet)
		printf("%s: %zu rows in %.2f s\n", e.name, exp_n_rows(&r),
		       r.wall_s);
	if (exp_write(&e, &r, stdout, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		rc = EXIT_RUN;
	}
	if (o.trace || o.schedule || snap) {
		const struct exp_point *row =
			exp_row(&r, (size_t)o.trace_point);
		/* a search without an answer: its first (smallest) probe */
		if (!row && r.srch && r.srch[o.trace_point].n_probe)
			row = &r.srch[o.trace_point].probe[0];
		if (!row) {
			fprintf(stderr, "gpumemsim: --trace-point %ld: no run\n",
				o.trace_point);
			rc = EXIT_RUN;
		}
		if (row && o.trace) {
			if (write_point_trace(&e, row, o.trace, false, &err) < 0) {
				fprintf(stderr, "gpumemsim: %s\n", err.msg);
				rc = EXIT_RUN;
			} else {
				printf("trace:   %s\n", o.trace);
			}
		}
		if (row && snap) {
			if (write_point_trace(&e, row, snap, true, &err) < 0) {
				fprintf(stderr, "gpumemsim: %s\n", err.msg);
				rc = EXIT_RUN;
			} else {
				printf("memory snapshot: %s\n", snap);
			}
		}
		if (row && o.schedule) {
			if (write_point_schedule(&e, row, o.schedule, &err) <
			    0) {
				fprintf(stderr, "gpumemsim: %s\n", err.msg);
				rc = EXIT_RUN;
			} else {
				printf("schedule: %s\n", o.schedule);
			}
		}
	}
	if (trace_all && write_all_traces(&e, &r, trace_all, &err) < 0) {
		fprintf(stderr, "gpumemsim: --trace-all: %s\n", err.msg);
		rc = EXIT_RUN;
	}
	if (!o.quiet)
		exp_print_answers(&e, &r, stdout);
	int f = failed_runs(r.n_failed, "the summary");
	if (rc == EXIT_OK)
		rc = f;
	exp_result_free(&r);
	exp_free(&e);
	return rc;
}

/* Per-layer (or, with --ops, per-op) table of a workload. */
static int describe(int argc, char **argv)
{
	const char *spec = NULL;
	struct wl_opts wo = {0, 0, -1, -1, -1, -1};
	bool ops = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--ops") == 0) {
			ops = true;
			continue;
		}
		int took = wl_opt(a, v, &wo);
		if (took < 0)
			return EXIT_INPUT;
		if (took) {
			i++;
		} else if (a[0] == '-' || spec) {
			fprintf(stderr, "gpumemsim: describe: unexpected %s\n",
				a);
			return EXIT_INPUT;
		} else {
			spec = a;
		}
	}
	if (!spec) {
		fprintf(stderr, "gpumemsim: describe needs a workload "
				"(`gpumemsim list workloads`)\n");
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	struct wl_workload *wl = load_workload(spec, &wo, &err);
	if (!wl) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	wl_describe(wl, ops, stdout);
	wl_free(wl);
	return EXIT_OK;
}

/* `gpumemsim fit MEASUREMENTS.csv -o OUT.yaml [...]` */
static int fit(int argc, char **argv)
{
	const char *csv = NULL, *out = NULL;
	struct cal_fit_opts o = {0};
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char **dst = !strcmp(a, "-o")	       ? &out
				   : !strcmp(a, "--name")      ? &o.name
				   : !strcmp(a, "--base")      ? &o.base
				   : !strcmp(a, "--precision") ? &o.precision
							       : NULL;
		if (dst && !v) {
			fprintf(stderr, "gpumemsim: %s needs a value\n", a);
			return EXIT_INPUT;
		}
		if (dst) {
			*dst = v;
			i++;
		} else if (!strcmp(a, "--force")) {
			o.force = true;
		} else if (a[0] == '-' || csv) {
			fprintf(stderr, "gpumemsim: fit: unexpected %s\n", a);
			return EXIT_INPUT;
		} else {
			csv = a;
		}
	}
	if (!csv || !out) {
		fprintf(stderr, "gpumemsim: usage: fit MEASUREMENTS.csv -o "
				"PROFILE.yaml [--name N] [--base P] "
				"[--precision fp32|tf32|fp16] [--force]\n");
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	/* where the profile goes, before the fit (issue 38) */
	if (gms_out_probe(out, &err) < 0) {
		fprintf(stderr, "gpumemsim: -o: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (cal_fit_file(csv, out, &o, stdout, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	printf("wrote %s\n", out);
	return EXIT_OK;
}

/* `gpumemsim calibrate --host -o OUT.yaml [...]`; without --host, where
 * the GPU side is. */
static int calibrate(int argc, char **argv)
{
	const char *base = "V100-16GB", *out = NULL;
	bool host = false;
	/* density 0.5: between the activation densities vDNN++ V-C implies
	 * for AlexNet (36% pinned memory saved by ZVC: 1 - 0.36 = d + 1/32
	 * mask overhead, d = 0.61) and VGG-16 (67%: d = 0.30) */
	struct cal_host_opts o = {.threads = 0, .density = 0.5,
				  .bytes = 64 * GMS_MIB, .repeats = 5};
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--host") == 0) {
			host = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "gpumemsim: calibrate: %s %s\n", a,
				a[0] == '-' ? "needs a value" : "unexpected");
			return EXIT_INPUT;
		}
		if (strcmp(a, "-o") == 0)
			out = v;
		else if (strcmp(a, "--hw") == 0)
			base = v;
		else if (strcmp(a, "--threads") == 0) {
			if (parse_count(a, v, 1, &o.threads) < 0)
				return EXIT_INPUT;
		} else if (strcmp(a, "--repeats") == 0) {
			if (parse_count(a, v, 1, &o.repeats) < 0)
				return EXIT_INPUT;
		} else if (strcmp(a, "--size") == 0) {
			if (gms_parse_bytes(v, &o.bytes) < 0 || o.bytes < 128) {
				fprintf(stderr, "gpumemsim: --size: '%s' is "
						"not a size >= 128 bytes\n",
					v);
				return EXIT_INPUT;
			}
		} else if (strcmp(a, "--density") == 0) {
			if (gms_parse_double(v, &o.density) < 0 ||
			    o.density < 0 || o.density > 1) {
				fprintf(stderr, "gpumemsim: --density: '%s' is "
						"not in [0, 1]\n",
					v);
				return EXIT_INPUT;
			}
		} else {
			fprintf(stderr, "gpumemsim: calibrate: unexpected %s\n",
				a);
			return EXIT_INPUT;
		}
		i++;
	}
	if (!host) {
		fprintf(stderr,
			"gpumemsim: calibrate measures the host only (--host). "
			"The GPU side:\n"
			"  make calibrate                  (needs nvcc)\n"
			"  build/calibrate-gpu -o M.csv    (on the GPU machine)\n"
			"  gpumemsim fit M.csv -o configs/hw/NAME.yaml\n");
		return EXIT_INPUT;
	}
	if (!out) {
		fprintf(stderr, "gpumemsim: calibrate --host needs -o "
				"PROFILE.yaml\n");
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	struct hw_profile hw;
	if (hw_load(&hw, base, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (gms_out_probe(out, &err) < 0) { /* before the measurement */
		fprintf(stderr, "gpumemsim: -o: %s\n", err.msg);
		return EXIT_INPUT;
	}
	if (!o.threads)
		o.threads = hw.cpu_threads;
	struct cal_host_result r;
	if (cal_host_measure(&o, &r, &err) < 0 ||
	    cal_host_write(base, out, &o, &r, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_RUN;
	}
	printf("host, %lld threads, %llu bytes each, density %g "
	       "(compressed to %.3f), per thread:\n"
	       "  memcpy          %8.3f GB/s\n"
	       "  ZVC compress    %8.3f GB/s (input)\n"
	       "  ZVC decompress  %8.3f GB/s (output)\n"
	       "wrote %s (base %s)\n",
	       (long long)o.threads, (unsigned long long)o.bytes, o.density,
	       r.ratio, r.memcpy_bps / 1e9, r.zvc_bps / 1e9,
	       r.zvc_decompress_bps / 1e9, out, base);
	return EXIT_OK;
}

/* A finite number in (0, 1e6] for option opt; -1 after a message. */
static int parse_factor(const char *opt, const char *v, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (end == v || *end || errno || !(x > 0) || x > 1e6) {
		fprintf(stderr, "gpumemsim: dtr: %s: '%s' is not a number in "
				"(0, 1e6]\n", opt, v);
		return -1;
	}
	*out = x;
	return 0;
}

/* `gpumemsim dtr TRACE.log [--heuristic H] [--ratio R | --budget BYTES]
 * [--remat-limit X|none] [--csv]` */
static int dtr_cmd(int argc, char **argv)
{
	const char *path = NULL, *budget_s = NULL;
	enum dtr_heuristic h = DTR_H_DTR;
	double ratio = 1.0, limit = 1.0;
	bool have_ratio = false, csv = false, no_limit = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = !strcmp(a, "--heuristic") || !strcmp(a, "--ratio") ||
			     !strcmp(a, "--budget") ||
			     !strcmp(a, "--remat-limit");
		if (takes && !v) {
			fprintf(stderr, "gpumemsim: dtr: %s needs a value\n", a);
			return EXIT_INPUT;
		}
		if (!strcmp(a, "--heuristic")) {
			h = dtr_heuristic_parse(v);
			if (h == DTR_H_COUNT) {
				fprintf(stderr, "gpumemsim: dtr: unknown "
						"heuristic '%s' (dtr, "
						"dtr-eqclass, msps, lru, "
						"largest)\n", v);
				return EXIT_INPUT;
			}
		} else if (!strcmp(a, "--ratio")) {
			if (parse_factor(a, v, &ratio) < 0)
				return EXIT_INPUT;
			have_ratio = true;
		} else if (!strcmp(a, "--budget")) {
			budget_s = v;
		} else if (!strcmp(a, "--remat-limit")) {
			if (!strcmp(v, "none"))
				no_limit = true;
			else if (parse_factor(a, v, &limit) < 0)
				return EXIT_INPUT;
		} else if (!strcmp(a, "--csv")) {
			csv = true;
		} else if (a[0] == '-' || path) {
			fprintf(stderr, "gpumemsim: dtr: unexpected %s\n", a);
			return EXIT_INPUT;
		} else {
			path = a;
		}
		i += takes;
	}
	if (!path) {
		fprintf(stderr, "gpumemsim: dtr needs a DTR trace (.log)\n");
		return EXIT_INPUT;
	}
	if (budget_s && have_ratio) {
		fprintf(stderr, "gpumemsim: dtr: --ratio or --budget, not "
				"both\n");
		return EXIT_INPUT;
	}
	struct dtr_opts o = {.heuristic = h};
	if (budget_s && (gms_parse_bytes(budget_s, &o.budget_bytes) < 0 ||
			 !o.budget_bytes)) {
		fprintf(stderr, "gpumemsim: dtr: --budget: '%s' is not a "
				"positive byte size\n", budget_s);
		return EXIT_INPUT;
	}
	gms_err err = {{0}};
	struct dtr_trace *tr;
	char full[GMS_PATH_MAX]; /* a dtr:FILE name: in the trace directory */
	if (wl_dtr_resolve(path, full, sizeof full, &err) != 0 ||
	    dtr_trace_load(full, &tr, &err) < 0) {
		fprintf(stderr, "gpumemsim: %s\n", err.msg);
		return EXIT_INPUT;
	}
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	if (!budget_s)
		o.budget_bytes = dtr_budget_for_ratio(&b, ratio);
	/* run_pareto: remat_limit = compute x (overhead_limit - 1), a
	 * float the integer remat compute must exceed: its floor */
	double lim = floor((double)b.compute_ns * limit);
	o.remat_limit_ns = no_limit || lim >= 18446744073709551615.0
				   ? UINT64_MAX
				   : (uint64_t)lim;
	struct dtr_result r;
	int rc = dtr_serial_run(tr, &o, &r, &err);
	dtr_trace_free(tr);
	if (rc < 0) {
		fprintf(stderr, "gpumemsim: dtr: %s\n", err.msg);
		return EXIT_RUN;
	}
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (csv) {
		printf("trace,heuristic,budget_bytes,status,overhead,clock_end,"
		       "baseline_peak_bytes,baseline_compute_ns,"
		       "remat_compute_ns,remat_ops,evictions_heuristic,"
		       "evictions_eager_release,max_memory_bytes\n"
		       "%s,%s,%llu,%s,%.17g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
		       "%llu\n",
		       base, dtr_heuristic_name(h),
		       (unsigned long long)o.budget_bytes,
		       dtr_status_name(r.status), r.overhead,
		       (unsigned long long)r.clock_end,
		       (unsigned long long)b.peak_bytes,
		       (unsigned long long)b.compute_ns,
		       (unsigned long long)r.remat_compute_ns,
		       (unsigned long long)r.remat_ops,
		       (unsigned long long)r.evictions_heuristic,
		       (unsigned long long)r.evictions_eager_release,
		       (unsigned long long)r.max_memory_bytes);
		return EXIT_OK;
	}
	printf("trace          %s\n"
	       "baseline       peak %llu B, compute %llu ns, %u ops, %u "
	       "storages\n"
	       "heuristic      %s\n"
	       "budget         %llu B (%.4g x the peak)\n"
	       "remat limit    ",
	       base, (unsigned long long)b.peak_bytes,
	       (unsigned long long)b.compute_ns, b.n_ops, b.n_storages,
	       dtr_heuristic_name(h), (unsigned long long)o.budget_bytes,
	       b.peak_bytes ? (double)o.budget_bytes / (double)b.peak_bytes
			    : 0.0);
	if (o.remat_limit_ns == UINT64_MAX)
		printf("none\n");
	else
		printf("%llu ns\n", (unsigned long long)o.remat_limit_ns);
	printf("status         %s%s\n"
	       "overhead       %.6f (clock %llu ns; it starts at 1)\n"
	       "rematerialized %llu ns in %llu ops\n"
	       "evictions      %llu by the heuristic, %llu on release\n"
	       "max memory     %llu B\n",
	       dtr_status_name(r.status),
	       r.status == DTR_OOM	  ? " (nothing left to evict)"
	       : r.status == DTR_THRASH ? " (the remat limit was passed)"
					: "",
	       r.overhead, (unsigned long long)r.clock_end,
	       (unsigned long long)r.remat_compute_ns,
	       (unsigned long long)r.remat_ops,
	       (unsigned long long)r.evictions_heuristic,
	       (unsigned long long)r.evictions_eager_release,
	       (unsigned long long)r.max_memory_bytes);
	return EXIT_OK;
}

/* The command named by argv[1]; its exit status. */
static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_INPUT;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
		return help(NULL);
	/* `gpumemsim CMD ... --help`: every command's options are in the
	 * one usage text */
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
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
					"allocators, hw, workloads, "
					"experiments)\n");
			return EXIT_INPUT;
		}
		return list(argv[2]);
	}
	if (strcmp(cmd, "simulate") == 0)
		return simulate(argc - 2, argv + 2);
	if (strcmp(cmd, "optimal") == 0)
		return optimal_cmd(argc - 2, argv + 2);
	if (strcmp(cmd, "run") == 0)
		return run_experiment(argc - 2, argv + 2, false);
	if (strcmp(cmd, "plan") == 0)
		return run_experiment(argc - 2, argv + 2, true);
	if (strcmp(cmd, "merge") == 0)
		return merge(argc - 2, argv + 2);
	if (strcmp(cmd, "describe") == 0)
		return describe(argc - 2, argv + 2);
	if (strcmp(cmd, "fit") == 0)
		return fit(argc - 2, argv + 2);
	if (strcmp(cmd, "calibrate") == 0)
		return calibrate(argc - 2, argv + 2);
	if (strcmp(cmd, "compare") == 0)
		return compare(argc - 2, argv + 2);
	if (strcmp(cmd, "dtr") == 0)
		return dtr_cmd(argc - 2, argv + 2);
	fprintf(stderr, "gpumemsim: unknown command '%s'\n\n", cmd);
	usage(stderr);
	return EXIT_INPUT;
}

/* Standard output checked on close: a report lost to a full disk or a
 * closed pipe is a failure (exit 1 unless the command failed already),
 * never a silent 0. */
static int finish(int rc)
{
	bool bad = fflush(stdout) != 0;
	int e = errno;
	bad = bad || ferror(stdout);
	if (fclose(stdout) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	if (!bad)
		return rc;
	fprintf(stderr, "gpumemsim: standard output: write error: %s\n",
		e ? strerror(e) : "lost output");
	return rc == EXIT_OK ? EXIT_RUN : rc;
}

int main(int argc, char **argv)
{
	/* the simulator's own memory in huge pages (sim/heap.h; issue 18:
	 * page faults were half of max-batch.yaml's wall time), for the
	 * commands that simulate: the others would only start twice */
	if (argc > 1 && (!strcmp(argv[1], "run") || !strcmp(argv[1], "plan") ||
			 !strcmp(argv[1], "compare") ||
			 ((!strcmp(argv[1], "simulate") ||
			   !strcmp(argv[1], "optimal") ||
			   !strcmp(argv[1], "dtr")) &&
			  heap_worth_huge(argc, argv))))
		heap_exec_huge(argv);
	heap_tune();
	return finish(dispatch(argc, argv));
}
