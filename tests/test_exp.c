/*
 * test_exp.c - experiments end to end through the program: searches whose
 * answers are worked out by hand on chain3, budget fractions of a
 * hand-computed baseline, malformed files (one error line, exit 2, nothing
 * written), -j 1 and -j 2 giving identical files, and the Chrome trace
 * (valid JSON, three tracks, a memory counter, no overlapping spans).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "clikit.h"
#include "tmpkit.h"

#include "../exp/exp.h"
#include "../workloads/wl_gen.h"
#include "json_check.h"

#define FX "tests/fixtures/exp/"

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/gms-test-exp-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}


static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	return s;
}

/* The text of tmpdir/<sub>/<name> (free it). */
static char *out_text(const char *sub, const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s/%s", tmpdir, sub, name);
	return slurp(path);
}

/* tmpdir/<sub>/runs.json parsed (jv_free it), its text in *text (free
 * it); fails the test when it is not JSON. */
static struct jv *runs_json(const char *sub, char **text)
{
	char err[128];
	*text = out_text(sub, "runs.json");
	struct jv *root = jv_parse(*text, err, sizeof err);
	if (!root)
		fail_msg("runs.json: %s", err);
	return root;
}

/* Run an experiment into tmpdir/<sub>; fails the test unless exit 0. */
static void run_exp(const char *file, const char *sub, const char *extra)
{
	char args[1024], *out;
	snprintf(args, sizeof args, "run %s --quiet --out %s/%s %s", file,
		 tmpdir, sub, extra ? extra : "");
	int rc = sh(args, &out);
	if (rc != 0)
		fail_msg("`%s` exited %d:\n%s", args, rc, out);
	free(out);
}

/* Field `col` (0-based) of CSV line `row` (0 = header), unquoted
 * ("a,""b" -> a,"b). */
static void csv_field(const char *text, int row, int col, char *buf,
		      size_t n)
{
	const char *p = text;
	for (int r = 0; r < row; r++) {
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	for (int c = 0;; c++) {
		size_t l = 0;
		bool q = *p == '"';
		for (p += q; *p && (q || (*p != ',' && *p != '\n')); p++) {
			if (q && *p == '"') {
				if (p[1] != '"') {
					q = false;
					continue;
				}
				p++;
			}
			if (c == col) {
				assert_true(l + 1 < n);
				buf[l++] = *p;
			}
		}
		if (c == col) {
			buf[l] = '\0';
			return;
		}
		assert_true(*p == ',');
		p++;
	}
}

/* Column index of a header name. */
static int csv_col(const char *text, const char *name)
{
	char buf[128];
	for (int c = 0; c < 200; c++) {
		csv_field(text, 0, c, buf, sizeof buf);
		if (!strcmp(buf, name))
			return c;
	}
	fail_msg("no column %s", name);
	return -1;
}

static void test_max_batch_chain3(void **state)
{
	(void)state;
	run_exp(FX "chain3-maxbatch.yaml", "mb", NULL);
	char v[128];
	char *csv = out_text("mb", "summary.csv");
	csv_field(csv, 1, csv_col(csv, "max_batch"), v, sizeof v);
	assert_string_equal(v, "16"); /* floor((100 - 3) / 6) */
	csv_field(csv, 1, csv_col(csv, "larger_fit_batch"), v, sizeof v);
	assert_string_equal(v, "0"); /* 17..19 need 105..117 MiB */
	csv_field(csv, 1, csv_col(csv, "peak_allocated_bytes"), v, sizeof v);
	assert_string_equal(v, "103809024"); /* 6 x 16 + 3 = 99 MiB */
	csv_field(csv, 1, csv_col(csv, "status"), v, sizeof v);
	assert_string_equal(v, "ok");
	free(csv);
	char *js;
	struct jv *root = runs_json("mb", &js);
	/* The search (exp/max_batch.c), in MiB, peak 6b + 3: 1 (9, fits);
	 * a line through the origin, slope 9, to the budget: d = (100 -
	 * 9) / 9 = 10.1, batch 11 (69, fits). The reference walk infers
	 * 2, 4, 8 and asks 16; the line 1-11 (slope 6) says d = (100 - 69)
	 * / 6 = 5.2, 16 itself (99, fits). The walk asks 32; d = (100 - 99)
	 * / 6 < 1: the neighbour 17 (OOM). The walk infers 32 24 20 18 (OOM
	 * above 17 OOM): answer 16. Its questions within confirm (3) of 16
	 * are run if only inferred: 18 (OOM); confirm 17..19 adds 19:
	 * 1 11 16 17 18 19. (The doubling-and-bisection search it answers
	 * for ran 1 2 4 8 16 32 24 20 18 17 19.) */
	struct jv *s = jv_get(root, "searches");
	assert_non_null(s);
	assert_int_equal(s->n, 1);
	struct jv *pr = jv_get(s->item[0], "probes");
	assert_int_equal(pr->n, 6);
	const int want[] = {1, 11, 16, 17, 18, 19};
	for (size_t k = 0; k < 6; k++)
		assert_int_equal(jv_get(pr->item[k], "batch")->num, want[k]);
	assert_non_null(jv_get(root, "file_text"));
	jv_free(root);
	free(js);
}

/* A batch that trains only because passive mode swaps out on an OOM
 * fits: under ondemand and capuchin(atp=false) chain3's answer is 19
 * (5b + 3 MiB at op2_bwd, derivation in the fixture), not framework's 16,
 * and the answer's run did swap. */
static void test_max_batch_passive_fits(void **state)
{
	(void)state;
	run_exp(FX "chain3-maxbatch-passive.yaml", "mbp", NULL);
	char v[128];
	char *csv = out_text("mbp", "summary.csv");
	for (int row = 1; row <= 2; row++) {
		csv_field(csv, row, csv_col(csv, "max_batch"), v, sizeof v);
		assert_string_equal(v, "19"); /* 98 MiB; 20 needs 103 */
		csv_field(csv, row, csv_col(csv, "status"), v, sizeof v);
		assert_string_equal(v, "ok");
		/* it survives by eviction: 6 x 19 + 3 = 117 MiB > 100 */
		csv_field(csv, row, csv_col(csv, "swap_outs"), v, sizeof v);
		assert_true(atoi(v) >= 1);
	}
	free(csv);
}

/* The result files of runs into tmpdir/a and tmpdir/b (-j 1 and -j 2)
 * are byte-identical; plot.dat is written only with a plot, then by
 * both. */
static void same_files(const char *a, const char *b)
{
	const char *files[] = {"summary.csv", "runs.json", "plot.dat"};
	for (int i = 0; i < 3; i++) {
		char pa[512], pb[512];
		snprintf(pa, sizeof pa, "%s/%s/%s", tmpdir, a, files[i]);
		snprintf(pb, sizeof pb, "%s/%s/%s", tmpdir, b, files[i]);
		if (i == 2 && access(pa, F_OK) != 0) {
			assert_int_not_equal(access(pb, F_OK), 0);
			continue;
		}
		char *x = slurp(pa), *y = slurp(pb);
		if (strcmp(x, y))
			fail_msg("%s differs between -j 1 and -j 2", files[i]);
		free(x);
		free(y);
	}
}

/* Field `name` of CSV row `row` into v. */
static void csv_get(const char *csv, int row, const char *name, char *v,
		    size_t n)
{
	csv_field(csv, row, csv_col(csv, name), v, n);
}

/* Fail unless column `name` of row `row` reads `want`. */
static void csv_want(const char *csv, int row, const char *name,
		     const char *want)
{
	char v[256];
	csv_get(csv, row, name, v, sizeof v);
	assert_string_equal(v, want);
}

/* vDNN++ IV-B's pool search on chain3 with pool-bestfit: the derivation
 * is in the fixture (peak 6b + 3 MiB; the search goes to 7b + 2 MiB). */
static void test_min_pool_chain3(void **state)
{
	(void)state;
	run_exp(FX "chain3-minpool.yaml", "mp", "-j 1");
	run_exp(FX "chain3-minpool.yaml", "mp2", "-j 2");
	char v[128];
	char *csv = out_text("mp", "summary.csv");
	const uint64_t M = 1048576;
	/* row 1: batch 4 */
	csv_get(csv, 1, "workload", v, sizeof v);
	assert_string_equal(v, "chain3");
	csv_get(csv, 1, "batch", v, sizeof v);
	assert_string_equal(v, "4");
	csv_get(csv, 1, "policy", v, sizeof v);
	assert_string_equal(v, "framework");
	csv_get(csv, 1, "aggregate_peak_bytes", v, sizeof v);
	uint64_t peak = strtoull(v, NULL, 10);
	assert_int_equal(peak, 27 * M); /* 6 x 4 + 3 */
	csv_get(csv, 1, "pool_bytes", v, sizeof v);
	uint64_t pool = strtoull(v, NULL, 10);
	assert_true(pool >= peak);
	assert_int_equal(pool, 30 * M); /* 7 x 4 + 2 */
	csv_get(csv, 1, "fragmentation_bytes", v, sizeof v);
	assert_int_equal(strtoull(v, NULL, 10), 3 * M);
	csv_get(csv, 1, "restarts", v, sizeof v);
	assert_string_equal(v, "1"); /* 27 failed */
	csv_get(csv, 1, "fits", v, sizeof v);
	assert_string_equal(v, "true");
	csv_get(csv, 1, "probes", v, sizeof v);
	assert_string_equal(v, "3"); /* the peak run, 27, 30 */
	csv_get(csv, 1, "status", v, sizeof v);
	assert_string_equal(v, "ok");
	csv_get(csv, 1, "iter_time_ms", v, sizeof v);
	assert_float_equal(atof(v), 12.0, 1e-9); /* chain3's op times */
	/* row 2: batch 8, the next pool 58 MiB is past the 57 MiB limit */
	csv_get(csv, 2, "aggregate_peak_bytes", v, sizeof v);
	assert_int_equal(strtoull(v, NULL, 10), 51 * M); /* 6 x 8 + 3 */
	csv_get(csv, 2, "fits", v, sizeof v);
	assert_string_equal(v, "false");
	csv_get(csv, 2, "pool_bytes", v, sizeof v);
	assert_string_equal(v, "0");
	csv_get(csv, 2, "status", v, sizeof v);
	assert_string_equal(v, "oom"); /* the run at 51 MiB */
	csv_get(csv, 2, "oom_bytes", v, sizeof v);
	assert_int_equal(strtoull(v, NULL, 10), 16 * M); /* g1 = 2 x 8 */
	free(csv);
	/* every attempt in runs.json: 27 MiB failed g1 (8 MiB) with 5 MiB
	 * free at most, then 30 MiB served */
	char *js;
	struct jv *root = runs_json("mp", &js);
	struct jv *s = jv_get(root, "searches");
	assert_int_equal(s->n, 2);
	struct jv *at = jv_get(s->item[0], "attempts");
	assert_int_equal(at->n, 2);
	assert_int_equal(jv_get(at->item[0], "pool_bytes")->num, 27 * M);
	assert_int_equal(jv_get(at->item[0], "fail_bytes")->num, 8 * M);
	assert_int_equal(jv_get(at->item[0], "largest_free_bytes")->num,
			 5 * M);
	assert_int_equal(jv_get(at->item[1], "pool_bytes")->num, 30 * M);
	at = jv_get(s->item[1], "attempts");
	assert_int_equal(at->n, 1);
	assert_int_equal(jv_get(at->item[0], "largest_free_bytes")->num,
			 9 * M); /* b + 1 at b = 8 */
	jv_free(root);
	free(js);
	/* -j 1 and -j 2 write the same files */
	same_files("mp", "mp2");
}

/* Driver allocation costs in summary.csv and runs.json: the derivation
 * is in the fixture (3 cudaMallocs of 0.2 ms in iteration 0, none after). */
static void test_alloc_costs_chain3(void **state)
{
	(void)state;
	run_exp(FX "chain3-alloc-costs.yaml", "ac", NULL);
	char v[128];
	char *csv = out_text("ac", "summary.csv");
	/* the steady state is iteration 1 */
	csv_get(csv, 1, "iter_time_ms", v, sizeof v);
	assert_float_equal(atof(v), 12.0, 1e-9);
	csv_get(csv, 1, "alloc_ms", v, sizeof v);
	assert_float_equal(atof(v), 0.0, 1e-9);
	csv_get(csv, 1, "cuda_mallocs", v, sizeof v);
	assert_string_equal(v, "0");
	csv_get(csv, 1, "stall_alloc_ms", v, sizeof v);
	assert_float_equal(atof(v), 0.0, 1e-9);
	csv_get(csv, 1, "device_mallocs", v, sizeof v);
	assert_string_equal(v, "4"); /* S1 at set-up, then S2, S3, S4 */
	free(csv);
	char *js;
	struct jv *root = runs_json("ac", &js);
	struct jv *it = jv_get(jv_get(root, "points")->item[0], "iterations");
	assert_int_equal(it->n, 2);
	assert_int_equal(jv_get(it->item[0], "time_ns")->num, 12600000);
	assert_int_equal(jv_get(it->item[0], "alloc_ns")->num, 600000);
	assert_int_equal(jv_get(it->item[0], "stall_alloc_ns")->num, 600000);
	assert_int_equal(jv_get(it->item[0], "cuda_mallocs")->num, 3);
	assert_int_equal(jv_get(it->item[0], "cuda_frees")->num, 0);
	assert_int_equal(jv_get(it->item[0], "cuda_host_allocs")->num, 0);
	assert_int_equal(jv_get(it->item[1], "time_ns")->num, 12000000);
	assert_int_equal(jv_get(it->item[1], "cuda_mallocs")->num, 0);
	jv_free(root);
	free(js);
}

static void test_best_throughput_chain3(void **state)
{
	(void)state;
	run_exp(FX "chain3-best.yaml", "best", NULL);
	char v[128];
	char *csv = out_text("best", "summary.csv");
	csv_field(csv, 1, csv_col(csv, "best_batch"), v, sizeof v);
	assert_string_equal(v, "16");
	csv_field(csv, 1, csv_col(csv, "samples_per_s"), v, sizeof v);
	assert_float_equal(atof(v), 16 / 0.012, 0.01);
	free(csv);
}

static void test_budget_fraction_chain3(void **state)
{
	(void)state;
	run_exp(FX "chain3-fraction.yaml", "frac", NULL);
	char v[128];
	char *csv = out_text("frac", "summary.csv");
	int cb = csv_col(csv, "budget_bytes"), cs = csv_col(csv, "status"),
	    cp = csv_col(csv, "policy");
	/* rows: (1.0, framework), (1.0, ondemand), (0.9, framework), ... */
	csv_field(csv, 1, cb, v, sizeof v);
	assert_string_equal(v, "28311552"); /* 27 MiB */
	csv_field(csv, 1, cp, v, sizeof v);
	assert_string_equal(v, "framework");
	csv_field(csv, 1, cs, v, sizeof v);
	assert_string_equal(v, "ok");
	csv_field(csv, 3, cb, v, sizeof v);
	assert_string_equal(v, "25480396"); /* 0.9 x 28311552, down */
	csv_field(csv, 3, cs, v, sizeof v);
	assert_string_equal(v, "oom");
	csv_field(csv, 4, cp, v, sizeof v);
	assert_string_equal(v, "ondemand");
	csv_field(csv, 4, cs, v, sizeof v);
	assert_string_equal(v, "ok");
	/* issue 34: slowdown_vs_framework. At 1.0 everything fits, so
	 * ondemand (which acts only on an OOM) runs as framework: 1; at 0.9
	 * framework ran out of memory: no framework time, empty. An OOM
	 * row's time columns are empty, not 0; budget_fraction is given */
	/* framework against itself: 1 */
	csv_want(csv, 1, "slowdown_vs_framework", "1.0000");
	csv_want(csv, 2, "slowdown_vs_framework", "1.0000");
	csv_want(csv, 4, "slowdown_vs_framework", "");
	csv_want(csv, 3, "iter_time_ms", "");
	csv_want(csv, 3, "samples_per_s", "");
	csv_want(csv, 3, "budget_fraction", "0.9000");
	free(csv);
}

/* issue 34: exp_slowdown matches the framework point of the same
 * workload, batch and budget only, and only one that trained. Times are
 * set by hand: 15 ms over 10 ms is 1.5. */
static void test_slowdown_matching(void **state)
{
	(void)state;
	struct exp e;
	memset(&e, 0, sizeof e);
	struct exp_policy pol[2];
	memset(pol, 0, sizeof pol);
	snprintf(pol[0].name, sizeof pol[0].name, "framework");
	snprintf(pol[1].name, sizeof pol[1].name, "ondemand");
	e.pol = pol;
	e.n_pol = 2;
	e.hw.capacity = 16 * GMS_GIB;
	struct exp_point pt[7];
	memset(pt, 0, sizeof pt);
	const struct {
		size_t wl, pol;
		int64_t batch;
		uint64_t budget;
		sim_time_t t;
		bool oom;
	} d[7] = {
		{0, 0, 8, GMS_GIB, 10000000, false},	 /* framework */
		{0, 1, 8, GMS_GIB, 15000000, false},	 /* 1.5 */
		{0, 1, 8, 2 * GMS_GIB, 12000000, false}, /* other budget */
		{0, 0, 16, GMS_GIB, 0, true},		 /* framework OOM */
		{0, 1, 16, GMS_GIB, 30000000, false},	 /* so none */
		{1, 1, 8, GMS_GIB, 20000000, false},	 /* other workload */
		{0, 1, 8, GMS_GIB, 0, true},		 /* itself OOM */
	};
	for (size_t i = 0; i < 7; i++) {
		pt[i].wl = d[i].wl;
		pt[i].pol = d[i].pol;
		pt[i].batch = d[i].batch;
		pt[i].budget = d[i].budget;
		pt[i].ran = true;
		pt[i].st.steady.time = d[i].t;
		pt[i].st.oom.hit = d[i].oom;
	}
	struct exp_result r;
	memset(&r, 0, sizeof r);
	r.pt = pt;
	r.n_pt = 7;
	const double want[7] = {1.0, 1.5, 0, 0, 0, 0, 0};
	for (size_t i = 0; i < 7; i++)
		assert_float_equal(exp_slowdown(&e, &r, &pt[i]), want[i], 1e-12);
}

/* issue 34: a batch that fits nowhere says what does: the fixture derives
 * framework's largest batch on 100 MiB, 16; the answer table on stdout. */
static void test_nothing_fits_says_what_does(void **state)
{
	(void)state;
	char args[512], *out;
	snprintf(args, sizeof args,
		 "run " FX "chain3-nothing-fits.yaml --out %s/nf -j1",
		 tmpdir);
	assert_int_equal(sh(args, &out), 0);
	if (!strstr(out, "batch 32 fits under no policy here. The largest "
			 "batch `framework` trains on this budget: 16.") ||
	    !strstr(out, "measure: {kind: max-batch}") ||
	    !strstr(out, "OOM"))
		fail_msg("%s", out);
	free(out);
	/* a log without batch marks cannot be run at another batch */
	snprintf(args, sizeof args,
		 "run " FX "dtr-nothing-fits.yaml --out %s/nf3 -j1", tmpdir);
	assert_int_equal(sh(args, &out), 0);
	if (!strstr(out, "batch 4 fits under no policy here. (`framework` "
			 "could not run it at a smaller batch: ") ||
	    !strstr(out, "without batch marks"))
		fail_msg("%s", out);
	free(out);
	/* --quiet: no table */
	snprintf(args, sizeof args,
		 "run " FX "chain3-nothing-fits.yaml --out %s/nf2 --quiet",
		 tmpdir);
	assert_int_equal(sh(args, &out), 0);
	assert_null(strstr(out, "fits under no policy"));
	free(out);
}

/* issue 34: the answer table of a max-batch search gives the answer
 * (16, chain3-maxbatch.yaml's derivation) and a run's row its result. */
static void test_answer_table(void **state)
{
	(void)state;
	char args[512], *out;
	snprintf(args, sizeof args,
		 "run " FX "chain3-maxbatch.yaml --out %s/at -j2", tmpdir);
	assert_int_equal(sh(args, &out), 0);
	/* workload label, policy, batch 16, budget 100 MiB = 0.10 GiB,
	 * peak 99 MiB = 0.10 GiB */
	const char *l = strstr(out, "\n  chain3 ");
	if (!l || !strstr(l, "framework") || !strstr(l, "   16 ") ||
	    !strstr(l, "largest") || !strstr(l, "1.00x"))
		fail_msg("%s", out);
	free(out);
}

/* issue 34: a byte budget above the profile's usable memory is refused,
 * at its key or sweep item, unless budget_above_device allows it; then
 * the table marks it. */
static void test_budget_above_device(void **state)
{
	(void)state;
	char args[512], *out;
	snprintf(args, sizeof args,
		 "run " FX "bad-budget-above.yaml --out %s/ba --quiet", tmpdir);
	assert_int_equal(sh(args, &out), 2);
	if (!strstr(out, "bad-budget-above.yaml:5:9: key 'budget': "
			 "34359738368 bytes (32.00 GiB) exceed the "
			 "V100-16GB's 16374562816 usable bytes (15.25 GiB") ||
	    !strstr(out, "budget_above_device: true"))
		fail_msg("%s", out);
	free(out);
	snprintf(args, sizeof args,
		 "run " FX "bad-budget-above-sweep.yaml --out %s/ba --quiet",
		 tmpdir);
	assert_int_equal(sh(args, &out), 2);
	if (!strstr(out, "bad-budget-above-sweep.yaml:10:39: measure: key "
			 "'budget': item 2: 17179869184 bytes (16.00 GiB)"))
		fail_msg("%s", out);
	free(out);
	snprintf(args, sizeof args,
		 "run " FX "chain3-budget-above.yaml --out %s/ba -j1", tmpdir);
	assert_int_equal(sh(args, &out), 0);
	if (!strstr(out, "   32.00* fits") ||
	    !strstr(out, "* budget above the V100-16GB's 15.25 GiB usable"))
		fail_msg("%s", out);
	free(out);
}

/* issue 34: run --trace-all DIR writes one trace per summary row, and a
 * trace's process name gives the budget and the allocator: chain3-vdnn's
 * two rows on the V100-16GB's whole 15.25 GiB, framework on the
 * experiment's bfc and vdnn on its own pool-bestfit. -j2 is -j 2. */
static void test_trace_all(void **state)
{
	(void)state;
	char args[1024], *out;
	snprintf(args, sizeof args,
		 "run " FX "chain3-vdnn.yaml --out %s/ta --quiet -j2 "
		 "--trace-all %s/ta/traces",
		 tmpdir, tmpdir);
	assert_int_equal(sh(args, &out), 0);
	free(out);
	char *t0 = out_text("ta", "traces/000-chain3-framework.json");
	assert_non_null(strstr(t0, "\"name\":\"chain3 batch 4, framework on "
				   "V100-16GB, budget 15.25 GiB, allocator "
				   "bfc (ok)\""));
	free(t0);
	char *t1 = out_text("ta",
			    "traces/001-chain3-vdnn_offload_all_algo_m_.json");
	assert_non_null(strstr(t1, "allocator pool-bestfit (ok)"));
	free(t1);
	/* the OOM rows' empty columns and budget_fraction off a fraction
	 * sweep; framework's own slowdown 1 */
	char *csv = out_text("ta", "summary.csv");
	csv_want(csv, 1, "budget_fraction", "");
	csv_want(csv, 1, "slowdown_vs_framework", "1.0000");
	free(csv);
}

/* The baseline is found with the experiment's allocator, so framework fits
 * at fraction 1.0 with bfc too; at 0.5 it cannot. */
static void test_budget_fraction_bfc(void **state)
{
	(void)state;
	run_exp(FX "chain3-fraction-bfc.yaml", "fbfc", NULL);
	char v[128];
	char *csv = out_text("fbfc", "summary.csv");
	int cb = csv_col(csv, "budget_bytes"), cs = csv_col(csv, "status");
	csv_field(csv, 1, cs, v, sizeof v);
	assert_string_equal(v, "ok");
	csv_field(csv, 1, cb, v, sizeof v);
	uint64_t b = strtoull(v, NULL, 10);
	assert_true(b >= 28311552);	/* the live bytes, 27 MiB */
	assert_int_equal(b % 1048576, 0); /* found to 1 MiB */
	csv_field(csv, 2, cs, v, sizeof v);
	assert_string_equal(v, "oom");
	free(csv);
}

static void test_setup_failure_is_failed(void **state)
{
	(void)state;
	char args[512], *out, v[128];
	snprintf(args, sizeof args,
		 "run " FX "chain3-setup-fail.yaml --quiet --out %s/sf", tmpdir);
	assert_int_equal(sh(args, &out), 1);
	free(out);
	snprintf(args, sizeof args, "%s/sf/summary.csv", tmpdir);
	char *csv = slurp(args);
	int cs = csv_col(csv, "status");
	csv_field(csv, 1, cs, v, sizeof v);
	assert_string_equal(v, "ok");
	csv_field(csv, 2, cs, v, sizeof v);
	assert_string_equal(v, "failed");
	free(csv);
}

/* A sweep in which every point runs out of memory keeps its set (issue
 * 38, item 3): the fixture's 300-byte budget is below chain3's smallest
 * tensor (1 MiB), so both rows are oom, and OOM is a result, not a
 * failure: exit 0, both rows in summary.csv and runs.json, the plot
 * drawn (it says there is nothing to draw). Before the fix gnuplot failed
 * on the empty range and the whole set went: exit 1, no summary.csv. */
static void test_all_oom_sweep_keeps_set(void **state)
{
	(void)state;
	run_exp(FX "chain3-all-oom.yaml", "oom", NULL);
	char path[512], v[64], *csv = out_text("oom", "summary.csv");
	for (int row = 1; row <= 2; row++) {
		csv_get(csv, row, "status", v, sizeof v);
		assert_string_equal(v, "oom");
		csv_get(csv, row, "batch", v, sizeof v);
		assert_int_equal(atoi(v), row);
		/* issue 34: no time, no throughput, no fraction (a batch
		 * sweep): empty, not 0 */
		const char *empty[] = {"iter_time_ms", "samples_per_s",
				       "slowdown_vs_framework",
				       "compute_busy_ms", "stall_h2d_ms",
				       "alloc_ms", "budget_fraction"};
		for (size_t k = 0; k < sizeof empty / sizeof *empty; k++)
			csv_want(csv, row, empty[k], "");
	}
	free(csv);
	char *js;
	struct jv *root = runs_json("oom", &js);
	assert_int_equal(jv_get(root, "points")->n, 2);
	jv_free(root);
	free(js);
	const char *img[] = {"plot.png", "plot.svg", "plot.dat"};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/oom/%s", tmpdir, img[i]);
		assert_int_equal(access(path, F_OK), 0);
	}
	char *svg = out_text("oom", "plot.svg");
	assert_non_null(strstr(svg, "nothing to plot"));
	free(svg);
}

/* Spreadsheet-safe CSV (issue 38, item 7): a cell beginning with =, +,
 * -, @, a tab or a CR went through as a formula; now quoted with a '
 * before it (OWASP's advice). Other cells as before: plain, or quoted
 * when they hold a comma, a quote or a line break. */
static void test_csv_formula_quoted(void **state)
{
	(void)state;
	static const char *const in[] = {"=1+2", "+x", "-y", "@SUM(A1)",
					 "\tz", "plain", "a,b", "q\"q", ""};
	static const char *const out[] = {"\"'=1+2\"", "\"'+x\"", "\"'-y\"",
					  "\"'@SUM(A1)\"", "\"'\tz\"", "plain",
					  "\"a,b\"", "\"q\"\"q\"", ""};
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);
		assert_non_null(f);
		exp_csv_str(f, in[i]);
		fclose(f);
		assert_string_equal(buf, out[i]);
		free(buf);
	}
}

/* A label with a line break wrote a line of data into plot.dat (issue
 * 38, item 7): the fixture's label is "evil\n0 1 2"; its comment line is
 * now "# evil?0 1 2 framework" and no line of plot.dat is "0 1 2". */
static void test_label_newline_plot(void **state)
{
	(void)state;
	run_exp(FX "chain3-label-newline.yaml", "nl", NULL);
	char *dat = out_text("nl", "plot.dat");
	assert_non_null(strstr(dat, "# evil?0 1 2 framework\n"));
	assert_null(strstr(dat, "\n0 1 2\n"));
	assert_true(strncmp(dat, "0 1 2\n", 6) != 0);
	free(dat);
}

/* Write text into the file dir/name. */
static void put(const char *dir, const char *name, const char *text)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static bool exists(const char *dir, const char *name)
{
	char p[600];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* The commit of a result set is atomic (issue 38, item 5): a kill in the
 * middle of moving the files of a committed set (.set-commit) is
 * finished by the next run into the directory, before anything else
 * (exp_check_out), and the temporaries of dead runs are removed, but not
 * a live run's. The directory below is the state a SIGKILL left after
 * the first move of a commit: summary.csv new, the rest still old, and
 * tuning.csv (not part of the new set) not yet removed; two dead runs'
 * temporaries (one killed before it took its lock) and a live one's (its
 * lock held by a child process). Before the fix the old and the new set
 * stayed mixed and every temporary stayed. */
static void test_commit_finished_after_kill(void **state)
{
	(void)state;
	static struct exp e; /* only out_dir is read */
	char d[300], sub[400];
	snprintf(d, sizeof d, "%s/kill", tmpdir);
	snprintf(e.out_dir, sizeof e.out_dir, "%s", d);
	assert_int_equal(mkdir(d, 0755), 0);
	put(d, "summary.csv", "new");
	put(d, "runs.json", "old");
	put(d, "tuning.csv", "old");
	put(d, "plot.png", "old");
	snprintf(sub, sizeof sub, "%s/.set-commit", d);
	assert_int_equal(mkdir(sub, 0755), 0);
	put(sub, ".files", "\nsummary.csv\nruns.json\nplot.dat\nplot.png\n"
			   "plot.svg\n");
	put(sub, ".lock", "");
	const char *rest[] = {"runs.json", "plot.dat", "plot.png", "plot.svg"};
	for (int i = 0; i < 4; i++)
		put(sub, rest[i], "new");
	const char *tmp[] = {".set-dead01", ".set-dead02", ".set-live01"};
	for (int i = 0; i < 3; i++) {
		snprintf(sub, sizeof sub, "%s/%s", d, tmp[i]);
		assert_int_equal(mkdir(sub, 0700), 0);
		put(sub, "summary.csv", "partial");
		if (i != 1)
			put(sub, ".lock", "");
	}
	/* the live run: a child holding the lock until told to go */
	int go[2], ready[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char lp[600];
		snprintf(lp, sizeof lp, "%s/.lock", sub);
		int fd = open(lp, O_RDWR);
		struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		char c = fcntl(fd, F_SETLK, &l) == 0 ? 'y' : 'n';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	gms_err err = {0};
	int rc = exp_check_out(&e, NULL, &err);
	assert_int_equal(write(go[1], "x", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(ready[i]);
	}
	if (rc != 0)
		fail_msg("%s", err.msg);
	const char *set[] = {"summary.csv", "runs.json", "plot.dat",
			     "plot.png", "plot.svg"};
	for (int i = 0; i < 5; i++) {
		char *t = out_text("kill", set[i]);
		if (strcmp(t, "new"))
			fail_msg("%s: '%s', not the new set's", set[i], t);
		free(t);
	}
	assert_false(exists(d, "tuning.csv"));
	assert_false(exists(d, ".set-commit"));
	assert_false(exists(d, ".set-dead01"));
	assert_false(exists(d, ".set-dead02"));
	assert_true(exists(d, ".set-live01"));
}

/* Does the JSON array `a` hold the string s? */
static bool jv_has(const struct jv *a, const char *s)
{
	for (size_t i = 0; a && a->type == JV_ARR && i < a->n; i++)
		if (a->item[i]->type == JV_STR && !strcmp(a->item[i]->str, s))
			return true;
	return false;
}

/* Outputs say what ran (issue 12, item 8): the allocator each row used
 * (vdnn imposes CNMeM's pool-bestfit over the experiment's bfc) and the
 * policy's report lines; derivation in the fixture. Before the fix
 * runs.json named only the experiment's allocator and no report. */
static void test_outputs_say_what_ran(void **state)
{
	(void)state;
	run_exp(FX "chain3-vdnn.yaml", "wr", NULL);
	char path[512], v[128];
	snprintf(path, sizeof path, "%s/wr/summary.csv", tmpdir);
	char *csv = slurp(path);
	csv_get(csv, 1, "policy", v, sizeof v);
	assert_string_equal(v, "framework");
	csv_get(csv, 1, "allocator", v, sizeof v);
	assert_string_equal(v, "bfc");
	csv_get(csv, 2, "policy", v, sizeof v);
	assert_string_equal(v, "vdnn(offload=all,algo=m)"); /* quoted */
	csv_get(csv, 2, "allocator", v, sizeof v);
	assert_string_equal(v, "pool-bestfit");
	csv_get(csv, 2, "status", v, sizeof v);
	assert_string_equal(v, "ok");
	free(csv);
	snprintf(path, sizeof path, "%s/wr/runs.json", tmpdir);
	char *js = slurp(path), err[128];
	struct jv *root = jv_parse(js, err, sizeof err);
	if (!root)
		fail_msg("runs.json: %s", err);
	struct jv *pts = jv_get(root, "points");
	assert_non_null(pts);
	assert_int_equal(pts->n, 2);
	struct jv *fw = pts->item[0], *vd = pts->item[1];
	assert_string_equal(jv_get(fw, "allocator")->str, "bfc");
	struct jv *rep = jv_get(fw, "policy_report");
	assert_non_null(rep);
	assert_int_equal(rep->type, JV_ARR);
	assert_int_equal(rep->n, 0); /* framework reports nothing */
	assert_string_equal(jv_get(vd, "allocator")->str, "pool-bestfit");
	rep = jv_get(vd, "policy_report");
	assert_non_null(rep);
	assert_true(jv_has(rep, "scheme all(m)"));
	assert_true(jv_has(rep, "offload_layers 3"));
	assert_true(jv_has(rep, "offload_tensors 3"));
	assert_true(jv_has(rep, "offload_bytes_per_iter 16777216"));
	/* the experiment's own setting is still there, as asked for */
	assert_string_equal(
		jv_get(jv_get(root, "settings"), "allocator")->str, "bfc");
	jv_free(root);
	free(js);
}

static void test_jobs_identical(void **state)
{
	(void)state;
	run_exp(FX "chain3-batches.yaml", "j1", "-j 1");
	run_exp(FX "chain3-batches.yaml", "j2", "-j 2");
	same_files("j1", "j2");
	/* 2 workloads x 6 batches x 2 policies + the header */
	char p[512];
	snprintf(p, sizeof p, "%s/j1/summary.csv", tmpdir);
	char *csv = slurp(p);
	int lines = 0;
	for (char *c = csv; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, 25);
	free(csv);
}

/* The DTR Pareto plot's data (every policy dtr, budget fractions:
 * plot-pareto.gp): on tests/fixtures/dtr/mini-4-all.log at the whole
 * baseline nothing is evicted, so each heuristic's overhead, iteration
 * time over the kernel time of the step's own ops (1495 ns of TIME, no
 * recomputation), is exactly 1: one block per (workload, policy),
 * "1.000000 1.000000"; preset serial's is simrd's clock, which starts at
 * 1, over the same 1495 ns: 1.000669.
 * The budget: a fraction of simrd's baseline peak in both presets (not
 * of the executor's, 14192 B, test_dtr.c). simrd's RuntimeV1 frees what
 * is released, constants included, and makes a MUTATE a new tensor: the
 * log's memory runs as the executor's (test_dtr.c: 10192 B after op 4's
 * m and h are released) until op 5, add_(w1, gw), holds a fresh 4096 B
 * copy of w1 beside the old one: 10192 + 4096 = 14288 B, the peak, so
 * all three points have budget_bytes 14288. */
static void test_pareto_data(void **state)
{
	(void)state;
	run_exp(FX "dtr-pareto-mini.yaml", "pareto", "");
	char p[512];
	snprintf(p, sizeof p, "%s/pareto/plot.dat", tmpdir);
	char *dat = slurp(p);
	assert_string_equal(dat, "# mini-4-all dtr(heuristic=dtr)\n"
				 "1.000000 1.000000\n\n\n"
				 "# mini-4-all dtr(heuristic=lru)\n"
				 "1.000000 1.000000\n\n\n"
				 "# mini-4-all dtr(heuristic=dtr,preset="
				 "serial)\n1.000000 1.000669\n\n\n");
	free(dat);
	snprintf(p, sizeof p, "%s/pareto/summary.csv", tmpdir);
	char *csv = slurp(p);
	assert_non_null(strstr(csv, "\n0,mini-4-all,4,14288,1.0000,"
				    "dtr(heuristic=dtr),"));
	assert_non_null(strstr(csv, "\n1,mini-4-all,4,14288,1.0000,"
				    "dtr(heuristic=lru),"));
	assert_non_null(strstr(csv, "\n2,mini-4-all,4,14288,1.0000,"
				    "\"dtr(heuristic=dtr,preset=serial)\","));
	free(csv);
	snprintf(p, sizeof p, "%s/pareto/plot.png", tmpdir);
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
}

/* policy dtr, preset serial: the point is DTR's own replay of the log
 * (dtr_serial_run), not the executor. On tests/fixtures/dtr/mini-4-all.log
 * (dtr-semantics.md): at the whole baseline every op runs once and the
 * clock, starting at 1, ends at 1 + 1495 ns of TIME: overhead 1496/1495 =
 * 1.000669. At half of it: the constants w, x and tmp (4096 + 1000 + 64
 * = 5160 B) are pinned and never freed in simrd's budgeted runtime, op 0
 * needs 2000 more, 7160 B, past half of simrd's baseline peak, 14288 B
 * (test_pareto_data), and nothing else
 * is in the pool: OOM before the clock moves (max_memory 5160), absent
 * from the plot. */
static void test_serial_preset(void **state)
{
	(void)state;
	run_exp(FX "dtr-serial-mini.yaml", "serial", "");
	char p[512];
	snprintf(p, sizeof p, "%s/serial/plot.dat", tmpdir);
	char *dat = slurp(p);
	assert_string_equal(dat, "# mini-4-all dtr(heuristic=dtr,preset="
				 "serial)\n1.000000 1.000669\n"
				 "0.500000 NaN\n\n\n");
	free(dat);
	snprintf(p, sizeof p, "%s/serial/runs.json", tmpdir);
	char *js = slurp(p);
	assert_non_null(strstr(js, "\"status ok\""));
	assert_non_null(strstr(js, "\"clock 1496\""));
	assert_non_null(strstr(js, "\"status OOM\""));
	assert_non_null(strstr(js, "\"max_memory 5160\""));
	assert_non_null(strstr(js, "DTR serial: OOM"));
	free(js);
}

/* A malformed file: exit 2, one line naming the file (and line:col and
 * key where there is one), and no output directory. */
static void bad(const char *file, const char *needle)
{
	char args[1024], *out, dir[512];
	snprintf(dir, sizeof dir, "%s/bad-out", tmpdir);
	snprintf(args, sizeof args, "run %s --quiet --out %s", file, dir);
	int rc = sh(args, &out);
	if (rc != 2 || !strstr(out, needle))
		fail_msg("`%s` exited %d, wanted 2 and '%s':\n%s", args, rc,
			 needle, out);
	int lines = 0;
	for (char *c = out; *c; c++)
		lines += *c == '\n';
	if (lines != 1)
		fail_msg("`%s`: %d lines, wanted one:\n%s", args, lines, out);
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0); /* nothing written */
	free(out);
}

static void test_malformed_files(void **state)
{
	(void)state;
	bad(FX "bad-unknown-key.yaml",
	    "bad-unknown-key.yaml:8:22: measure: key 'batchez': unknown key");
	bad(FX "bad-type.yaml", "bad-type.yaml:3:13: key 'iterations'");
	bad(FX "bad-value.yaml",
	    "bad-value.yaml:7:35: measure: key 'batch': item 2 '0'");
	bad(FX "bad-policy.yaml",
	    "bad-policy.yaml:6:12: policy 2: key 'name': unknown policy");
	bad(FX "bad-policy.yaml", "unknown policy 'vdnnn'");
	bad(FX "bad-policy-param.yaml", "bad-policy-param.yaml:5:22: policy 'ondemand': key 'mdoe'");
	bad(FX "bad-policy-param.yaml", "'mdoe'");
	bad(FX "bad-generator.yaml", "unknown generator 'resnet51'");
	bad(FX "bad-hw.yaml", "bad-hw.yaml:2:5: key 'hw':");
	bad(FX "no-such-file.yaml", "no-such-file.yaml");
	bad(FX "bad-pool.yaml", "bad-pool.yaml:3:12: key 'pool_size'");
	/* a budget below the allocator's smallest block (issue 38), at the
	 * value: "measure: {kind: sweep, budget: [1GiB, " is 38 characters;
	 * the files' allocator is bfc (256 B) and accudnn's own pool-bestfit
	 * (cnmem's 512-byte granule); a top-level 'budget: ' is 8 */
	bad(FX "bad-budget-tiny.yaml",
	    "bad-budget-tiny.yaml:6:39: key 'budget': 300 B is below the 512 "
	    "bytes of the smallest block of allocator 'pool-bestfit'");
	bad(FX "bad-budget-one.yaml",
	    "bad-budget-one.yaml:3:9: key 'budget': 1 B is below the 256 "
	    "bytes of the smallest block of allocator 'bfc'");
	bad(FX "bad-minpool-pool.yaml",
	    "bad-minpool-pool.yaml:3:12: key 'pool_size': measure min-pool");
	/* remat: a value of the enum, on traces only; the column is the
	 * value's: "  - {" 5, "trace: " 7, the 33-character path, ", " 2,
	 * "remat: " 7 = 54 before it (bad-remat-gen: 5 + "file: " 6 + 26 +
	 * 2 + "batch: 4" 8 + 2 + 7 = 56) */
	bad(FX "bad-remat.yaml", "bad-remat.yaml:3:55: workload 1: key "
				 "'remat'");
	bad(FX "bad-remat-gen.yaml", "bad-remat-gen.yaml:3:57: workload 1: "
				     "key 'remat': applies to traces only");
	/* times: log or profile, on traces only (bad-times: 5 + "trace: "
	 * 7 + the 26-character path + 2 + "times: " 7 = 47 before the value;
	 * bad-times-gen, a generator: 5 + "name: resnet50" 14 + 2 +
	 * "batch: 2" 8 + 2 + 7 = 38) */
	bad(FX "bad-times.yaml", "bad-times.yaml:3:48: workload 1: key "
				 "'times'");
	bad(FX "bad-times.yaml", "'measured'");
	bad(FX "bad-times-gen.yaml", "bad-times-gen.yaml:3:39: workload 1: "
				     "key 'times': applies to traces only");
	/* language-model keys (issue 31), located at the value: "  - {" 5
	 * + "name: llama" 11 + 2 + "batch: 1" 8 + 2 + "seq: 16" 7 + 2 +
	 * "heads: " 7 = 44; a CNN given kv_heads: 5 + 14 + 2 + 8 + 2 +
	 * "kv_heads: " 10 = 41; seq beside size: 5 + "name: gpt2" 10 + 2 +
	 * 8 + 2 + "size: 16" 8 + 2 + "seq: " 5 = 42 */
	bad(FX "bad-llm-heads.yaml", "bad-llm-heads.yaml:3:45: workload 1: "
				     "key 'heads': llama: hidden 4096 is not "
				     "a multiple of heads 5");
	bad(FX "bad-llm-cnn.yaml", "bad-llm-cnn.yaml:3:42: workload 1: key "
				   "'kv_heads': applies to language models");
	bad(FX "bad-llm-seq.yaml", "bad-llm-seq.yaml:3:43: workload 1: key "
				   "'seq': give seq or size, not both");
	/* a trace by dtr: name whose directory is absent: skipped, exit 0,
	 * one line saying where to get the logs, nothing written; a bad
	 * key elsewhere is still bad input */
	char *out, dir[512], a2[1024];
	snprintf(dir, sizeof dir, "%s/bad-out", tmpdir);
	snprintf(a2, sizeof a2, "run " FX "dtr-absent.yaml --quiet --out %s",
		 dir);
	setenv("GMS_DTR_DIR", "/nonexistent/gms-dtr", 1);
	assert_int_equal(sh(a2, &out), 0);
	assert_non_null(strstr(out, "dtr-absent.yaml: skipped: "
				    "dtr:mini-4-all.log: the DTR traces are "
				    "not here (no directory "
				    "/nonexistent/gms-dtr)"));
	assert_non_null(strstr(out, "github.com/uwsampl/dtr-prototype"));
	free(out);
	struct stat st;
	assert_int_not_equal(stat(dir, &st), 0);
	bad(FX "dtr-absent-bad.yaml", "unknown policy 'frameworx'");
	/* with the directory there, the name is a file in it */
	setenv("GMS_DTR_DIR", "tests/fixtures/dtr", 1);
	snprintf(a2, sizeof a2, "run " FX "dtr-absent.yaml --quiet --out %s",
		 dir);
	assert_int_equal(sh(a2, &out), 0);
	free(out);
	unsetenv("GMS_DTR_DIR");
	snprintf(a2, sizeof a2, "%s/summary.csv", dir);
	char *csv = slurp(a2);
	assert_non_null(strstr(csv, "mini-4-all"));
	free(csv);
	snprintf(a2, sizeof a2, "rm -rf %s", dir);
	assert_int_equal(system(a2), 0);
	/* a --trace-point beyond the rows is caught before anything runs */
	char args[512];
	snprintf(args, sizeof args,
		 FX "chain3-maxbatch.yaml --trace %s/x.json --trace-point 1",
		 tmpdir);
	bad(args, "--trace-point 1: no such row");
}

/* The Chrome trace of ondemand on chain3 with too little memory: JSON,
 * three named tracks, spans that never overlap on a track, evictions, and
 * the memory counter. */
static void test_trace(void **state)
{
	(void)state;
	char tr[512];
	snprintf(tr, sizeof tr, "--trace %s/t.json --trace-point 3", tmpdir);
	/* row 3 of chain3-fraction: (0.9, ondemand) */
	run_exp(FX "chain3-fraction.yaml", "tr", tr);
	snprintf(tr, sizeof tr, "%s/t.json", tmpdir);
	char *js = slurp(tr), err[128];
	struct jv *root = jv_parse(js, err, sizeof err);
	if (!root)
		fail_msg("trace is not JSON: %s", err);
	struct jv *ev = jv_get(root, "traceEvents");
	assert_non_null(ev);
	assert_int_equal(ev->type, JV_ARR);
	const char *want[5] = {NULL, "compute", "H2D", "D2H", "host CPU"};
	int named[5] = {0}, spans[5] = {0}, counters = 0, evicts = 0,
	    kinds = 0;
	double end[5] = {0}, last_alloc = -1, last_alloc_ts = -1,
	       host_max = 0;
	for (size_t i = 0; i < ev->n; i++) {
		struct jv *e = ev->item[i], *ph = jv_get(e, "ph");
		assert_non_null(ph);
		struct jv *tid = jv_get(e, "tid"), *name = jv_get(e, "name");
		int t = tid ? (int)tid->num : 0;
		if (!strcmp(ph->str, "M") && !strcmp(name->str, "thread_name")) {
			assert_true(t >= 1 && t <= 4);
			assert_string_equal(
				jv_get(jv_get(e, "args"), "name")->str, want[t]);
			named[t]++;
		} else if (!strcmp(ph->str, "X")) {
			assert_true(t >= 1 && t <= 4);
			double ts = jv_get(e, "ts")->num,
			       dur = jv_get(e, "dur")->num;
			assert_true(dur >= 0);
			/* complete events on one track follow each other */
			if (ts + 1e-6 < end[t])
				fail_msg("span %s on track %d starts at %f "
					 "before the previous ends (%f)",
					 name->str, t, ts, end[t]);
			end[t] = ts + dur;
			spans[t]++;
		} else if (!strcmp(ph->str, "C") &&
			   !strcmp(name->str, "device memory by kind")) {
			/* its series (one a tensor kind) sum to the
			 * allocated counter of the same instant, written
			 * just before it (issue 34) */
			struct jv *a = jv_get(e, "args");
			double sum = 0;
			for (size_t k = 0; k < a->n; k++)
				sum += a->item[k]->num;
			assert_int_equal(a->n, WL_KIND_COUNT);
			assert_true(sum == last_alloc);
			assert_true(jv_get(e, "ts")->num == last_alloc_ts);
			kinds++;
		} else if (!strcmp(ph->str, "C")) {
			struct jv *b = jv_get(jv_get(e, "args"), "bytes");
			assert_non_null(b);
			if (!strcmp(name->str, "device memory allocated")) {
				/* never above the 0.9 budget */
				assert_true(b->num <= 25480396);
				last_alloc = b->num;
				last_alloc_ts = jv_get(e, "ts")->num;
				counters++;
			} else if (!strcmp(name->str,
					   "host memory holding tensors")) {
				host_max = b->num > host_max ? b->num : host_max;
			} else {
				assert_string_equal(name->str,
						    "device memory reserved");
			}
		} else if (!strcmp(ph->str, "i")) {
			evicts += !strcmp(name->str, "evict");
		}
	}
	for (int t = 1; t <= 3; t++) {
		assert_int_equal(named[t], 1);
		assert_true(spans[t] > 0);
	}
	/* the host CPU track is named; ondemand compresses nothing */
	assert_int_equal(named[4], 1);
	assert_int_equal(spans[4], 0);
	/* chain3: 7 kernels an iteration, 2 iterations, no recomputation */
	assert_true(spans[1] >= 14);
	assert_true(counters > 0);
	assert_int_equal(kinds, counters);
	assert_true(evicts > 0);
	/* ondemand's evictions keep host copies */
	assert_true(host_max > 0);
	jv_free(root);
	free(js);
}

/* `describe` works for every generator and reports its totals; the
 * help and list commands name what the tables hold. */
/* ---- built once, shared (issue 18) -------------------------------------- */

/* Point p of a run equals the same point simulated on a workload built
 * fresh (exp_simulate with no workload builds it). */
static void same_as_fresh(const struct exp *e, const struct exp_point *p)
{
	struct exp_point f = {.wl = p->wl, .pol = p->pol, .batch = p->batch,
			      .budget = p->budget, .pool_size = p->pool_size};
	exp_simulate(e, &f, NULL, NULL);
	assert_string_equal(exp_status(&f), exp_status(p));
	assert_int_equal(f.batch, p->batch);
	assert_int_equal(f.st.n_iter, p->st.n_iter);
	assert_int_equal(f.st.steady.time, p->st.steady.time);
	assert_int_equal(f.st.events, p->st.events);
	assert_int_equal(f.st.mem.peak_allocated, p->st.mem.peak_allocated);
	assert_int_equal(f.st.pinned_peak, p->st.pinned_peak);
	assert_int_equal(f.st.oom.hit, p->st.oom.hit);
	assert_memory_equal(&f.st.samples_per_s, &p->st.samples_per_s,
			    sizeof(double));
	assert_string_equal(f.st.pol_report ? f.st.pol_report : "",
			    p->st.pol_report ? p->st.pol_report : "");
	assert_string_equal(f.error, p->error);
	st_run_free(&f.st);
}

static void load_exp(struct exp *e, const char *path)
{
	gms_err err = {{0}};
	if (exp_load(e, path, NULL, &err) < 0)
		fail_msg("%s", err.msg);
}

/* `times:` of a trace entry: the fixture's one op (relu of 100 floats)
 * has TIME 1000000 ns; `log` (the default) keeps it, `profile` drops it
 * (time 0: the hardware profile's, from its 800 bytes), and the
 * simulated iteration is then far below 1 ms (800 bytes at V100's
 * 900 GB/s is under 1 ns; a kernel launch some microseconds). */
static void test_trace_times(void **state)
{
	(void)state;
	struct exp e;
	load_exp(&e, FX "trace-times.yaml");
	assert_int_equal(e.n_wl, 2);
	gms_err err = {{0}};
	struct wl_workload *lg = exp_build_workload(&e, 0, 0, &err);
	struct wl_workload *pf = exp_build_workload(&e, 1, 0, &err);
	assert_non_null(lg);
	assert_non_null(pf);
	assert_int_equal(lg->n_ops, 1);
	assert_int_equal(pf->n_ops, 1);
	assert_int_equal(lg->ops[0].time, 1000000);
	assert_int_equal(pf->ops[0].time, 0);
	assert_true(pf->ops[0].bytes == 800);
	wl_free(lg);
	wl_free(pf);
	struct exp_opts o = {.jobs = 1, .quiet = true};
	struct exp_result r;
	assert_int_equal(exp_run(&e, &o, &r, &err), 0);
	assert_int_equal(r.n_pt, 2);
	assert_int_equal(r.pt[0].st.steady.time, 1000000);
	assert_true(r.pt[1].st.steady.time < 100000);
	exp_result_free(&r);
	exp_free(&e);
}

/* A max-batch search builds each batch once and shares it between the
 * policies' searches (on two threads): every probe equals a run on a
 * workload built fresh at its batch. The probes must differ among
 * themselves (a cache that gave every probe one workload would make them
 * alike): chain3's peak grows 6 MiB a sample (fixture). */
static void test_shared_builds_max_batch(void **state)
{
	(void)state;
	struct exp e;
	load_exp(&e, FX "chain3-maxbatch-passive.yaml");
	struct exp_opts o = {.jobs = 2, .quiet = true};
	struct exp_result r;
	gms_err err = {{0}};
	assert_int_equal(exp_run(&e, &o, &r, &err), 0);
	assert_int_equal(r.n_srch, 2);
	size_t n = 0;
	for (size_t i = 0; i < r.n_srch; i++) {
		const struct exp_search *s = &r.srch[i];
		assert_true(s->n_probe >= 5);
		for (size_t k = 0; k < s->n_probe; k++, n++)
			same_as_fresh(&e, &s->probe[k]);
		/* batch 1 against batch 11, the search's first prediction
		 * (as in test_max_batch_chain3): +60 MiB at the peak */
		assert_int_equal(s->probe[0].batch, 1);
		assert_int_equal(s->probe[1].batch, 11);
		assert_true(s->probe[1].st.mem.peak_allocated >
			    s->probe[0].st.mem.peak_allocated);
	}
	assert_true(n >= 10);
	exp_result_free(&r);
	exp_free(&e);
}

/* A budget_fraction sweep: the baseline search (batch 0, the entry's)
 * and the points (the entry's batch 4) share one build; each point
 * equals a fresh run. Two workload files swept over batch: each batch
 * shared by the two policies. */
static void test_shared_builds_sweeps(void **state)
{
	(void)state;
	const char *files[] = {FX "chain3-fraction.yaml",
			       FX "chain3-batches.yaml"};
	for (int f = 0; f < 2; f++) {
		struct exp e;
		load_exp(&e, files[f]);
		struct exp_opts o = {.jobs = 2, .quiet = true};
		struct exp_result r;
		gms_err err = {{0}};
		assert_int_equal(exp_run(&e, &o, &r, &err), 0);
		assert_true(r.n_pt >= 4);
		for (size_t i = 0; i < r.n_pt; i++)
			same_as_fresh(&e, &r.pt[i]);
		exp_result_free(&r);
		exp_free(&e);
	}
}

static void test_describe_help_list(void **state)
{
	(void)state;
	char args[256], *out;
	for (const struct wl_gen *g = wl_gens; g->name; g++) {
		snprintf(args, sizeof args, "describe %s --batch 2", g->name);
		int rc = sh(args, &out);
		if (rc != 0 || !strstr(out, "totals:") ||
		    !strstr(out, "forward MACs/sample"))
			fail_msg("`%s` exited %d:\n%s", args, rc, out);
		free(out);
	}
	/* resnet50's 25,557,032 parameters (torchvision; tf-graph counts
	 * no BatchNorm running statistics among them) */
	assert_int_equal(sh("describe resnet50 --batch 32 --framework "
			    "tf-graph", &out), 0);
	assert_non_null(strstr(out, "parameters          25557032"));
	free(out);
	/* issue 31: llama3-8b's 8,030,261,248 parameters (config.json
	 * sums, tests/test_gen_llm.c) under bf16 autocast with AdamW keep
	 * fp32 weights (4 B), fp32 gradients (4 B) and two fp32 moments
	 * (8 B): 16 B a parameter; pure bf16 halves each: 8 B */
	assert_int_equal(sh("describe llama3-8b --precision bf16-autocast "
			    "--optimizer adamw --framework pytorch --batch 1 "
			    "--size 16", &out), 0);
	assert_non_null(strstr(out, "parameters          8030261248"));
	assert_non_null(strstr(out, "4.00 B weights + 4.00 B gradients + "
				    "8.00 B optimizer state = 16.00 B"));
	free(out);
	assert_int_equal(sh("describe llama3-8b --precision bf16-pure "
			    "--optimizer adamw --batch 1 --size 16", &out), 0);
	assert_non_null(strstr(out, "= 8.00 B"));
	free(out);
	assert_int_equal(sh("describe resnet50 --attention sdpa", &out), 2);
	assert_non_null(strstr(out, "applies to language models only"));
	free(out);
	assert_int_equal(sh("describe resnet50 --ops --batch 1", &out), 0);
	assert_non_null(strstr(out, "conv_bwd_filter"));
	free(out);
	assert_int_equal(sh("describe resnet51", &out), 2);
	free(out);
	assert_int_equal(sh("help experiment", &out), 0);
	const char *keys[] = {"budget_fraction", "max-batch", "confirm",
			      "best-throughput", "workloads", "trace",
			      "min-pool"};
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (!strstr(out, keys[i]))
			fail_msg("help experiment lacks %s", keys[i]);
	free(out);
	assert_int_equal(sh("list workloads", &out), 0);
	assert_non_null(strstr(out, "bert_base"));
	/* the DTR logs as dtr: names, or where to put them */
	assert_non_null(strstr(out, "recorded traces"));
	assert_true(strstr(out, "  dtr:") ||
		    strstr(out, "(no DTR logs: no directory"));
	/* and the shipped recordings, always */
	assert_non_null(strstr(out, "workloads/traces/recorded/"));
	free(out);
	assert_int_equal(sh("list experiments", &out), 0);
	assert_non_null(strstr(out, "configs/experiments/default.yaml"));
	free(out);
}

/* exp_gnuplot draws the png and the svg of a plot with one gnuplot, png
 * first then svg (issue 18): both images are there, each of its format
 * (PNG's 8-byte signature, RFC 2083 3.1; an svg element), and no
 * temporary is left. With a gnuplot that fails (a stand-in first on
 * PATH that exits 3), neither image nor temporary is left and the error
 * says how to see gnuplot's own message: the png's pass as a command
 * (its variables, then the script). */
static void test_gnuplot_png_and_svg(void **state)
{
	(void)state;
	char dir[] = "/tmp/gms-gp-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char dat[64], png[64], svg[64], tmp[80];
	snprintf(dat, sizeof dat, "%s/plot.dat", dir);
	snprintf(png, sizeof png, "%s/plot.png", dir);
	snprintf(svg, sizeof svg, "%s/plot.svg", dir);
	FILE *f = fopen(dat, "w");
	assert_non_null(f);
	fputs("workload framework ondemand framework:samples_per_s "
	      "ondemand:samples_per_s\nvgg16 235 360 106.7 74.2\n"
	      "bert 94 511 115.8 32.6\n",
	      f);
	fclose(f);
	gms_err err = {{0}};
	if (exp_gnuplot("plot-max-batch.gp", dat, "2", "workload", "t", png,
			svg, &err) < 0)
		fail_msg("%s", err.msg);
	char *p = tmp_slurp(png), *v = tmp_slurp(svg);
	assert_memory_equal(p, "\x89PNG\r\n\x1a\n", 8);
	assert_non_null(strstr(v, "<svg"));
	free(p);
	free(v);
	snprintf(tmp, sizeof tmp, "%s.tmp", png);
	assert_int_not_equal(access(tmp, F_OK), 0);
	unlink(png);
	unlink(svg);

	/* a gnuplot that fails */
	char bin[80], fake[96], path[4200];
	snprintf(bin, sizeof bin, "%s/bin", dir);
	assert_int_equal(mkdir(bin, 0700), 0);
	snprintf(fake, sizeof fake, "%s/gnuplot", bin);
	f = fopen(fake, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nexit 3\n", f);
	fclose(f);
	assert_int_equal(chmod(fake, 0700), 0);
	const char *old = getenv("PATH");
	char *saved = old ? strdup(old) : NULL;
	snprintf(path, sizeof path, "%s:%s", bin, old ? old : "");
	setenv("PATH", path, 1);
	int rc = exp_gnuplot("plot-max-batch.gp", dat, "2", "workload", "t",
			     png, svg, &err);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err.msg, "gnuplot failed on"));
	assert_non_null(strstr(err.msg, "to see why: gnuplot -e"));
	/* the command to see why is the png's pass, whole: it ends with
	 * the script, after the variables (whatever their length) */
	const char *end = "results/plot-max-batch.gp";
	size_t ml = strlen(err.msg), el = strlen(end);
	assert_true(ml > el);
	assert_string_equal(err.msg + ml - el, end);
	assert_non_null(strstr(err.msg, "term='png'"));
	assert_null(strstr(err.msg, "term='svg'"));
	assert_int_not_equal(access(png, F_OK), 0);
	assert_int_not_equal(access(svg, F_OK), 0);
	assert_int_not_equal(access(tmp, F_OK), 0);
	unlink(fake);
	rmdir(bin);
	unlink(dat);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_batch_chain3),
		cmocka_unit_test(test_gnuplot_png_and_svg),
		cmocka_unit_test(test_max_batch_passive_fits),
		cmocka_unit_test(test_min_pool_chain3),
		cmocka_unit_test(test_alloc_costs_chain3),
		cmocka_unit_test(test_best_throughput_chain3),
		cmocka_unit_test(test_budget_fraction_chain3),
		cmocka_unit_test(test_slowdown_matching),
		cmocka_unit_test(test_nothing_fits_says_what_does),
		cmocka_unit_test(test_answer_table),
		cmocka_unit_test(test_budget_above_device),
		cmocka_unit_test(test_trace_all),
		cmocka_unit_test(test_budget_fraction_bfc),
		cmocka_unit_test(test_setup_failure_is_failed),
		cmocka_unit_test(test_all_oom_sweep_keeps_set),
		cmocka_unit_test(test_commit_finished_after_kill),
		cmocka_unit_test(test_csv_formula_quoted),
		cmocka_unit_test(test_label_newline_plot),
		cmocka_unit_test(test_outputs_say_what_ran),
		cmocka_unit_test(test_jobs_identical),
		cmocka_unit_test(test_malformed_files),
		cmocka_unit_test(test_pareto_data),
		cmocka_unit_test(test_serial_preset),
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_describe_help_list),
		cmocka_unit_test(test_trace_times),
		cmocka_unit_test(test_shared_builds_max_batch),
		cmocka_unit_test(test_shared_builds_sweeps),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
