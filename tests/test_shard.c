/*
 * test_shard.c - run --shard K/N and merge (issue 18): the balancing on
 * hand-worked costs, sharded-and-merged results byte-identical to the
 * unsharded run's (through tests/shard-equality.sh, with this build
 * tree's binary), the shards run through GNU parallel, and every refusal
 * of merge. The full equality check over every shipped experiment is
 * `make check-shards` (too slow for make test under ASan).
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
#include "../exp/shard.h"

/* Greedy LPT on costs 7 5 4 3 3 2 over 2 shards, by hand: 7 -> s0 (7|0),
 * 5 -> s1 (7|5), 4 -> s1 (7|9), 3 (task 3) -> s0 (10|9), 3 (task 4) ->
 * s1 (10|12), 2 -> s0 (12|12). */
static void test_lpt_by_hand(void **state)
{
	(void)state;
	const uint64_t cost[] = {7, 5, 4, 3, 3, 2};
	uint32_t owner[6];
	uint64_t load[2];
	assert_int_equal(shd_lpt(cost, 6, 2, owner, load), 0);
	const uint32_t want[] = {0, 1, 1, 0, 1, 0};
	for (int i = 0; i < 6; i++)
		assert_int_equal(owner[i], want[i]);
	assert_int_equal(load[0], 12);
	assert_int_equal(load[1], 12);
	/* ties go to the lower index and the lower shard: four equal
	 * costs over 3 shards: tasks 0, 1, 2 to shards 0, 1, 2, task 3 to
	 * shard 0 (all loads 1, the lowest K) */
	const uint64_t eq[] = {1, 1, 1, 1};
	uint64_t l3[3];
	assert_int_equal(shd_lpt(eq, 4, 3, owner, l3), 0);
	assert_int_equal(owner[0], 0);
	assert_int_equal(owner[1], 1);
	assert_int_equal(owner[2], 2);
	assert_int_equal(owner[3], 0);
	assert_int_equal(l3[0], 2);
}

/* Dealing by workload (issue 37), by hand. Two workloads of 4 tasks of
 * cost 10, each costing 5 more on every shard that touches it, over 2
 * shards: the least limit McNaughton's rule fits is 45 (5 + 4 x 10 a
 * shard; at 44 shard 0 takes 3 tasks of the first, shard 1 its last and
 * 2 of the second, and 2 are left): each workload on a shard of its
 * own, loads 40 and 40 (greedy LPT on the tasks alone dealt them in
 * turn, both workloads on both shards). One workload of 6 tasks over 3
 * shards: 65 at most, 25 fits (5 + 2 x 10 each), 24 takes one task a
 * shard: 2 tasks each. */
static void test_group_by_hand(void **state)
{
	(void)state;
	const uint64_t cost[] = {10, 10, 10, 10, 10, 10, 10, 10};
	const uint32_t grp[] = {0, 0, 0, 0, 1, 1, 1, 1};
	const uint64_t extra[] = {5, 5};
	uint32_t owner[8];
	uint64_t load[3];
	assert_int_equal(shd_group(cost, grp, 8, extra, 2, 2, owner, load), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(owner[i], i / 4);
	assert_int_equal(load[0], 40);
	assert_int_equal(load[1], 40);
	const uint32_t one[] = {0, 0, 0, 0, 0, 0};
	assert_int_equal(shd_group(cost, one, 6, extra, 1, 3, owner, load), 0);
	size_t per[3] = {0};
	for (int i = 0; i < 6; i++)
		per[owner[i]]++;
	for (int k = 0; k < 3; k++) {
		assert_int_equal(per[k], 2);
		assert_int_equal(load[k], 20);
	}
}

/* Tasks of unequal cost in one group, by hand (issue 37): costs 5 1 1 3
 * over 2 shards, no extra. The scrambled order (keys i x 0x9E3779B97F4A7C15
 * mod 2^64, descending: task 3 0xDAA6..., 1 0x9E37..., 2 0x3C6E..., 0
 * 0) is 3 1 2 0; the least limit is the mean, 5: shard 0 takes 3, 1, 2
 * (3 + 1 + 1), shard 1 task 0 (5). Filling by the group's mean cost
 * (ceil(10 / 4) = 3 a task: 2 tasks a shard) gave shard 0 tasks 3, 1
 * (4) and shard 1 tasks 2, 0 (6). */
static void test_group_uneven_by_hand(void **state)
{
	(void)state;
	const uint64_t cost[] = {5, 1, 1, 3}, extra[] = {0};
	const uint32_t grp[] = {0, 0, 0, 0};
	uint32_t owner[4];
	uint64_t load[2];
	assert_int_equal(shd_group(cost, grp, 4, extra, 1, 2, owner, load), 0);
	const uint32_t want[] = {1, 0, 0, 0};
	for (int i = 0; i < 4; i++)
		assert_int_equal(owner[i], want[i]);
	assert_int_equal(load[0], 5);
	assert_int_equal(load[1], 5);
}

/* The plan's cost of each point of tests/fixtures/shard/budget.yaml
 * (chain3 at batch 4; warmup 1 + iterations 2), from chain3.yaml's own
 * table, by hand. Persistent: w1, w2, 2 MiB. Other bytes live at ops 0..6
 * (x from op1, each tensor to its last reader): 12 16 17 20 25 13 2
 * MiB, prefix peaks (framework's reach) 12 16 17 20 25 25 25; one op's
 * own bytes 12 12 5 8 21 13 2, prefix peaks (need) 12 12 12 12 21 21 21.
 * ns per op-iteration: framework 1,074, ondemand 1,359 (docs/speed.md).
 *   32 MiB: room 30, nothing passes it: 7 ops x 3 = 21 ops;
 *   20 MiB: room 18: framework's reach passes it at op 3 (20): 4 ops;
 *           ondemand's need at op 4 (21): 5 ops;
 *   10 MiB: room 8: both at op 0 (12): 1 op;
 *    1 MiB: below the weights: 1 op.
 * Tasks by budget, then policy (framework, ondemand). */
static void test_plan_point_costs(void **state)
{
	(void)state;
	struct exp e;
	struct shd_plan pl;
	gms_err err = {{0}};
	if (exp_load(&e, "tests/fixtures/shard/budget.yaml", NULL, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(shd_plan(&e, 2, &pl, &err), 0);
	assert_int_equal(pl.n_tasks, 8);
	const uint64_t ops[] = {21, 21, 4, 5, 1, 1, 1, 1};
	for (int i = 0; i < 8; i++)
		assert_int_equal(pl.cost[i], ops[i] * (i % 2 ? 1359 : 1074));
	assert_int_equal(pl.load[0] + pl.load[1],
			 (21 + 4 + 1 + 1) * 1074 + (21 + 5 + 1 + 1) * 1359);
	shd_plan_free(&pl);
	exp_free(&e);
}

/* shd_scan by hand (issue 37). chain3 at batch 4 (tests/fixtures/
 * chain3.yaml's table, MiB) with every tensor but the weights held, as
 * the Caffe personality marks them (gen.c; wl_tensor.held: allocated
 * when first written, never freed): persist is the weights, 2; the
 * others join at their producer or first reader and stay: x 4 and a1 8
 * at op 0, a2 4 at 1, a3 1 at 2, g2 4 at 3, g1 8 and gw2 1 at 4, gw1 1
 * at 5, so live and its prefix peaks (reach) 12 16 17 21 30 31 31; an
 * op's own bytes as without held, 12 12 5 8 21 13 2, prefix peaks (need)
 * 12 12 12 12 21 21 21. (Counted as weights, persist was 33 and no
 * budget fraction of the baseline, 33, left a byte for the ops.) And
 * wl_minimal.yaml at batch 3: op f's algorithms need 0 B (slow) and 1
 * MiB (fast) of workspace; framework falls back to the least (sim/ex.c,
 * offer_fallback), so reach at f is x + y = 600 B, not 600 B + 1 MiB;
 * then x alone (u reads it), 300: reach 600 600; need 600 600. */
static void test_scan_by_hand(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_yaml("tests/fixtures/chain3.yaml", 4,
					     &err);
	if (!w)
		fail_msg("%s", err.msg);
	for (uint32_t i = 0; i < w->n_tensors; i++)
		w->tensors[i].held = w->tensors[i].kind != WL_PARAM;
	struct exp_liveness f;
	assert_int_equal(shd_scan(w, &f), 0);
	const uint64_t M = 1048576, reach[] = {12, 16, 17, 21, 30, 31, 31},
		       need[] = {12, 12, 12, 12, 21, 21, 21};
	assert_int_equal(f.ops, 7);
	assert_int_equal(f.persist, 2 * M);
	for (int j = 0; j < 7; j++) {
		assert_int_equal(f.reach[j], reach[j] * M);
		assert_int_equal(f.need[j], need[j] * M);
	}
	free(f.reach);
	free(f.need);
	wl_free(w);
	w = wl_load_yaml("tests/fixtures/wl_minimal.yaml", 3, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(shd_scan(w, &f), 0);
	assert_int_equal(f.ops, 2);
	assert_int_equal(f.persist, 0);
	for (int j = 0; j < 2; j++) {
		assert_int_equal(f.reach[j], 600);
		assert_int_equal(f.need[j], 600);
	}
	free(f.reach);
	free(f.need);
	wl_free(w);
}

/* shd_order by hand on fraction.yaml's 12 tasks (task i of workload
 * i / 6: 2 workloads x 3 fractions x 2 policies), bounds set by hand,
 * workload 0's tasks 0-5: 5 20 3 1 2 4, workload 1's 6-11: 10 9 8 30 7
 * 6. A shard owning none: all 12 by bound (9, 1, 6, 7, 8, 10, 11, 0, 5,
 * 2, 4, 3) grouped by workload in order of each's largest (workload 1,
 * 30, first): 9 6 7 8 10 11 | 1 0 5 2 4 3. Owning task 7: 7 first, then
 * workload 1's others by bound, 9 6 8 10 11, then workload 0's, 1 0 5 2
 * 4 3. */
static void test_order_by_hand(void **state)
{
	(void)state;
	struct exp e;
	struct shd_plan pl;
	gms_err err = {{0}};
	if (exp_load(&e, "tests/fixtures/shard/fraction.yaml", NULL, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(shd_plan(&e, 2, &pl, &err), 0);
	assert_int_equal(pl.n_tasks, 12);
	const uint64_t b[12] = {5, 20, 3, 1, 2, 4, 10, 9, 8, 30, 7, 6};
	memcpy(pl.bound, b, sizeof b);
	bool mine[12] = {false};
	const size_t none[12] = {9, 6, 7, 8, 10, 11, 1, 0, 5, 2, 4, 3},
		     seven[12] = {7, 9, 6, 8, 10, 11, 1, 0, 5, 2, 4, 3};
	size_t *o = shd_order(&e, &pl, mine);
	assert_non_null(o);
	assert_memory_equal(o, none, sizeof none);
	free(o);
	mine[7] = true;
	o = shd_order(&e, &pl, mine);
	assert_non_null(o);
	assert_memory_equal(o, seven, sizeof seven);
	free(o);
	shd_plan_free(&pl);
	exp_free(&e);
}

/* The scaling fixture's one task: resnet34 with no batch given. Probes
 * by hand: 1 + 2 x 13 doublings (1 to 8192) + confirm 4 + the run at k*
 * = 32 at most (fewer where the workload's bytes stop the doubling
 * below 8192); warmup 1 + iterations 2, framework's 1,074 ns: a multiple
 * of 3 x 1,074 x ops, at most 32 x that. A workload that fails to build
 * counts 1 op: resnet34 has more (regression: generators given no batch
 * were built at batch 0, failed, and every task cost the same). */
static void test_plan_cost(void **state)
{
	(void)state;
	struct exp e;
	struct shd_plan pl;
	gms_err err = {{0}};
	if (exp_load(&e, "tests/fixtures/shard/scaling.yaml", NULL, &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(shd_plan(&e, 2, &pl, &err), 0);
	assert_int_equal(pl.n_tasks, 1);
	assert_true(pl.cost[0] > 3 * 1074);
	assert_int_equal(pl.cost[0] % (3 * 1074), 0);
	assert_int_equal(pl.load[0], pl.cost[0]); /* the one task: shard 0 */
	assert_int_equal(pl.load[1], 0);
	shd_plan_free(&pl);
	exp_free(&e);
}

/* The baseline search with and without what its runs prove (exp_run.c,
 * struct base_known): under `caching`, a run is the same run at any
 * budget inside the interval of its budget tests ([same_lo, same_hi]:
 * a clean fitting run's reaches up without end), so such a budget is
 * answered with that run's outcome without running.
 * The value must be the search's that runs every probe, for each
 * workload of tests/fixtures/shard/fraction-caching.yaml; on the larger
 * networks the doubling's first fitting probe is clean and above the
 * answer, so the bisection's first midpoint at least is answered (fewer
 * runs). Under bfc, which reserves its whole budget, nothing is
 * answered: as many runs as before. */
static void test_baseline_known(void **state)
{
	(void)state;
	const char *fx[] = {"tests/fixtures/shard/fraction-caching.yaml",
			    "tests/fixtures/shard/fraction.yaml"};
	for (int f = 0; f < 2; f++) {
		struct exp e;
		gms_err err = {{0}};
		if (exp_load(&e, fx[f], NULL, &err) < 0)
			fail_msg("%s", err.msg);
		unsigned fewer = 0;
		for (size_t w = 0; w < e.n_wl; w++) {
			struct wl_workload *wl =
				exp_build_workload(&e, w, 0, &err);
			assert_non_null(wl);
			unsigned all = 0, some = 0;
			uint64_t want = exp_baseline_of(&e, wl, false, &all),
				 got = exp_baseline_of(&e, wl, true, &some);
			assert_true(want > 0);
			assert_int_equal(got, want);
			assert_true(some <= all);
			fewer += some < all;
			wl_free(wl);
		}
		if (f == 0)
			assert_true(fewer >= 2); /* alexnet, resnet34 */
		else
			assert_int_equal(fewer, 0);
		exp_free(&e);
	}
}

static void test_parse(void **state)
{
	(void)state;
	unsigned k, n;
	gms_err err = {{0}};
	assert_int_equal(shd_parse("2/3", &k, &n, &err), 0);
	assert_int_equal(k, 2);
	assert_int_equal(n, 3);
	const char *bad[] = {"3/3", "1/0", "-1/3", "a/3", "1/", "1", "1/3x",
			     "0/-2", NULL};
	for (int i = 0; bad[i]; i++)
		assert_int_equal(shd_parse(bad[i], &k, &n, &err), -1);
	assert_non_null(strstr(err.msg, "K/N"));
}

/* A fresh, empty directory /tmp/gms_test_<tag>_<pid> into d. */
static void fresh_dir(char *d, size_t n, const char *tag)
{
	char a[300];
	snprintf(d, n, "/tmp/gms_test_%s_%ld", tag, (long)getpid());
	snprintf(a, sizeof a, "rm -rf %s && mkdir -p %s", d, d);
	assert_int_equal(system(a), 0);
}

/* tests/shard-equality.sh with this tree's binary; exit 0 = every file
 * of every set equal. */
static void equality(const char *env, const char *exps)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd,
		 "BIN=%s JOBS=2 %s tests/shard-equality.sh %s 2>&1", BIN, env,
		 exps);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[512];
	while (fgets(line, sizeof line, p))
		fputs(line, stdout);
	int st = pclose(p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s: merged sets differ from the unsharded ones", cmd);
}

#define E "configs/experiments/"
#define F "tests/fixtures/shard/"

/* One experiment of each measurement: run with timelines, budget and
 * budget-fraction sweeps (baselines per shard: fraction.yaml, shipped
 * workloads, so it runs on a clone without the DTR logs; dtr-traces.yaml
 * is skipped there), batch sweep, max-batch, best-throughput, min-pool
 * with and without shrink; scaling (efficiency-optimal plus tuning.csv)
 * in a reduced copy. */
static void test_sharded_equals_unsharded(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	equality("", E "accudnn-memory-timeline.yaml " F "fraction.yaml "
		     E "vdnn-fragmentation.yaml " F "best.yaml");
#else
	equality("", E "vdnn-timing.yaml " F "fraction.yaml " E
		     "dtr-traces.yaml " E "budget-sweep.yaml " E
		     "vdnn-fragmentation.yaml " E "accudnn-memory-naive.yaml "
		     E "accudnn-memory-timeline.yaml " E "max-batch.yaml " E
		     "frameworks-caffe-m40.yaml " E "capuchin-overhead.yaml "
		     F "best.yaml " F
		     "scaling.yaml");
#endif
}

/* The same through a plan file (`gpumemsim plan`, then every shard
 * `--plan`): each shard builds only its own workloads and takes the
 * baselines from the plan. */
static void test_plan_file_equals_unsharded(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	equality("PLAN=1", F "fraction.yaml " F "best.yaml");
#else
	equality("PLAN=1", F "fraction.yaml " F "models.yaml "
		 "tests/fixtures/exp/dtr-pareto-mini.yaml " E "max-batch.yaml " F
		 "best.yaml " F "scaling.yaml " E "vdnn-timing.yaml " E
		 "budget-sweep.yaml " E "accudnn-memory-timeline.yaml");
#endif
}

/* Plan d/sub/plan-of-2.plan of experiment exp, garbled by shell command
 * edit (the file's name appended), is refused by shard 0 with exit 2
 * and message want. */
static void garbled(const char *d, const char *sub, const char *exp,
		    const char *edit, const char *want)
{
	char a[1024];
	snprintf(a, sizeof a, "cp %s/%s/plan-of-2.plan %s/g.plan && %s %s/g.plan",
		 d, sub, d, edit, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "run %s --out %s/g --shard 0/2 --plan %s/g.plan",
		 exp, d, d);
	expect(a, 2, want);
}

/* The plan step's models (issue 37). models.yaml: AccUDNN (dynamic) on
 * two workloads at budget fractions 2.0, 1.5 and 1.2, where everything
 * fits, so the naive profiling pass is the same run at each budget: one
 * model per workload, 2 in the plan, and each shard fits none (its runs
 * find theirs). dtr-pareto-mini.yaml: the log's simrd baseline in the
 * plan; set by hand to 1000 bytes, the full preset's two points run at
 * int(1000 x 1.0) = 1000 bytes without reading the log, and the serial
 * replay, which reads it, refuses it (its baseline is not the plan's).
 * And a garbled models section, refused at its line. */
static void test_plan_models(void **state)
{
	(void)state;
	char d[128], a[1024];
	fresh_dir(d, sizeof d, "models");
	snprintf(a, sizeof a, "plan " F "models.yaml --shards 2 --out %s/m", d);
	expect(a, 0, "2 accudnn models fitted, 0 DTR baselines");
	for (int k = 0; k < 2; k++) {
		snprintf(a, sizeof a,
			 "run " F "models.yaml --out %s/m --shard %d/2 "
			 "--plan %s/m/plan-of-2.plan",
			 d, k, d);
		expect(a, 0, "accudnn: 0 fitted here");
	}
	snprintf(a, sizeof a, "plan tests/fixtures/exp/dtr-pareto-mini.yaml "
			      "--shards 1 --out %s/t", d);
	expect(a, 0, "0 accudnn models fitted, 1 DTR baselines");
	snprintf(a, sizeof a,
		 "sed -i 's/^peak_bytes .*/peak_bytes 1000/' %s/t/plan-of-1.plan",
		 d);
	assert_int_equal(system(a), 0);
	char run[512];
	snprintf(run, sizeof run,
		 "run tests/fixtures/exp/dtr-pareto-mini.yaml --out %s/t "
		 "--shard 0/1 --plan %s/t/plan-of-1.plan",
		 d, d);
	expect(run, 1, "DTR: 0 logs read to replay");
	snprintf(a, sizeof a, "merge %s/t", d);
	expect(a, 1, "1 run(s) failed");
	snprintf(a, sizeof a,
		 "test $(grep -c ',1000,1.0000,dtr(heuristic=' %s/t/summary.csv) "
		 "-eq 2 && grep -q 'not the one given for it (peak 14288, not "
		 "1000 bytes)' %s/t/runs.json",
		 d, d);
	if (system(a) != 0)
		fail_msg("the plan's baseline of 1000 bytes was not used");
	/* a count past 32 bits refused at its own line, by its own key */
	snprintf(a, sizeof a,
		 "sed -i 's/^ops .*/ops 4294967296/' %s/t/plan-of-1.plan", d);
	assert_int_equal(system(a), 0);
	expect(run, 2, "plan-of-1.plan:17: 'ops': out of range");
	static const struct {
		const char *edit, *want;
	} bad[] = {
		{"sed -i '0,/^types /s/^types .*/types 99/'",
		 "'types': out of range"},
		{"sed -i '0,/^type /s/^type .*/type 40/'", "'type': out of range"},
		{"sed -i 's/^fits 2/fits 3/'", "expected 'hash', found 'traces 0'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		garbled(d, "m", F "models.yaml", bad[i].edit, bad[i].want);
}

/* Out of memory in the plan step and in a shard of a plan exits 1 saying
 * so, never a crash (issue 37 review): tests/fixtures/shard/failcalloc.c,
 * preloaded, fails one calloc by its arguments. models.yaml has 2
 * workloads x 3 fractions x 2 policies = 12 tasks: the plan step's
 * points (12 struct exp_point, points_init) and a shard's first
 * calloc(12, 1) (its `only`, shd_run: before the fix its models were
 * freed uninitialised). Not under ASan, whose calloc comes first. */
static void test_plan_oom(void **state)
{
	(void)state;
#ifndef __SANITIZE_ADDRESS__
	char d[128], a[1024], *out;
	fresh_dir(d, sizeof d, "oom");
	snprintf(a, sizeof a,
		 "cc -shared -fPIC -o %s/fc.so tests/fixtures/shard/failcalloc.c",
		 d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a,
		 "FC_N=1 FC_NMEMB=12 FC_SIZE=%zu LD_PRELOAD=%s/fc.so %s plan "
		 F "models.yaml --shards 2 --out %s/p -j 1 2>&1",
		 sizeof(struct exp_point), d, BIN, d);
	int rc = sh_cmd(a, &out);
	if (rc != 1 || !strstr(out, "out of memory"))
		fail_msg("`%s` exited %d (want 1), output:\n%s", a, rc, out);
	free(out);
	snprintf(a, sizeof a, "plan " F "models.yaml --shards 2 --out %s/m", d);
	expect(a, 0, NULL);
	snprintf(a, sizeof a,
		 "FC_N=1 FC_NMEMB=12 FC_SIZE=1 LD_PRELOAD=%s/fc.so %s run " F
		 "models.yaml --out %s/m --shard 0/2 --plan "
		 "%s/m/plan-of-2.plan -j 1 2>&1",
		 d, BIN, d, d);
	rc = sh_cmd(a, &out);
	if (rc != 1 || !strstr(out, "out of memory"))
		fail_msg("`%s` exited %d (want 1), output:\n%s", a, rc, out);
	free(out);
#endif
}

/* A shard of a plan takes its baselines from the plan file, not from a
 * search of its own: fraction.yaml's two baselines set to 1,000,000
 * bytes by hand in the plan, its points run at 1.0, 0.8 and 0.6 of that
 * -- budgets 1000000, 800000 and 600000 bytes (the products are exact
 * in binary64: 0.6's error, 2.2e-11, is under half an ulp of 600000) --
 * where the searched baselines are tens of MB. And the plan's refusals,
 * each with its message. */
static void test_plan_file(void **state)
{
	(void)state;
	char d[128], a[1024];
	fresh_dir(d, sizeof d, "plan");
	snprintf(a, sizeof a, "plan " F "fraction.yaml --shards 2 --out %s/p",
		 d);
	expect(a, 0, "plan-of-2.plan (12 tasks on 2 shards");
	snprintf(a, sizeof a,
		 "sed -i 's/^bytes .*/bytes 1000000/' %s/p/plan-of-2.plan", d);
	assert_int_equal(system(a), 0);
	for (int k = 0; k < 2; k++) {
		snprintf(a, sizeof a,
			 "run " F "fraction.yaml --out %s/p --shard %d/2 "
			 "--plan %s/p/plan-of-2.plan -q",
			 d, k, d);
		expect(a, 0, NULL);
	}
	snprintf(a, sizeof a, "merge %s/p", d);
	expect(a, 0, "12 rows merged");
	const char *budget[] = {",1000000,1.0000,", ",800000,0.8000,",
				",600000,0.6000,"};
	for (int i = 0; i < 3; i++) {
		snprintf(a, sizeof a, "test $(grep -c -- '%s' %s/p/summary.csv) "
				      "-eq 4",
			 budget[i], d);
		if (system(a) != 0)
			fail_msg("%s: not 4 rows (2 workloads x 2 policies)",
				 budget[i]);
	}
	/* a plan for another N */
	snprintf(a, sizeof a,
		 "run " F "fraction.yaml --out %s/p --shard 0/3 --plan "
		 "%s/p/plan-of-2.plan",
		 d, d);
	expect(a, 2, "a plan for 2 shards, not 3");
	/* a shard of a plan merged with one that planned itself */
	snprintf(a, sizeof a, "run " F "fraction.yaml --out %s/q --shard 1/2 -q",
		 d);
	expect(a, 0, NULL);
	snprintf(a, sizeof a, "merge %s/p/shard-0-of-2.shard "
			      "%s/q/shard-1-of-2.shard", d, d);
	expect(a, 2, "a shard of another plan");
	/* the experiment changed since the plan */
	snprintf(a, sizeof a,
		 "cp " F "fraction.yaml %s/x.yaml && " BIN " plan %s/x.yaml "
		 "--shards 1 --out %s/x -q && echo '# edited' >> %s/x.yaml",
		 d, d, d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "run %s/x.yaml --out %s/x --shard 0/1 --plan "
			      "%s/x/plan-of-1.plan", d, d, d);
	expect(a, 2, "changed since this plan was made");
	/* garbled plan files, each refused at its line (exit 2) */
	static const struct {
		const char *edit, *want;
	} bad[] = {
		{"sed -i '0,/^bytes /s/^bytes .*/bytes 1125899906842625/'",
		 ":10: 'bytes': the baseline is out of range"},
		{"sed -i '0,/^shard /s/^shard .*/shard 2/'",
		 ":14: 'shard': out of range"},
		{"sed -i 's/^baselines 2/baselines 1/'",
		 ":9: 'baselines': not one for each workload"},
		{"sed -i 's/^version .*/version \"0.0-other\"/'",
		 ":2: made by gpumemsim 0.0-other"},
		{"echo junk >>", "more after the last 'end'"},
		{"sed -i '$d'", "the file ends where 'end' should be"},
		/* another format's plan: the message names this one's */
		{"sed -i '1s/.*/gpumemsim-plan 1/'",
		 ":1: not plan file format 2 (another gpumemsim's)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		garbled(d, "p", F "fraction.yaml", bad[i].edit, bad[i].want);
	/* the options' own refusals */
	expect("plan " F "fraction.yaml", 2, "plan needs --shards N");
	expect("plan " F "fraction.yaml --shards 0", 2, "--shards");
	expect("plan " F "fraction.yaml --shards 2 --shard 0/2", 2,
	       "unknown option --shard");
	expect("run " F "fraction.yaml --plan x.plan", 2,
	       "--plan FILE goes with --shard");
	snprintf(a, sizeof a, "rm -rf %s", d);
	assert_int_equal(system(a), 0);
}

/* Work stealing (`plan --steal`): fraction.yaml's 12 tasks (2 workloads
 * x 3 fractions x 2 policies) over 2 shards, run one after the other:
 * shard 1 runs its own and then claims all of shard 0's, so shard 0,
 * run after it, finds every task claimed and runs none; the merged set
 * equals the unsharded run's all the same. Run again, shard 1 takes back
 * its own 12 claims; a new plan step empties the claims, and shard 0
 * then runs all 12. Without the claims directory a shard stops (exit
 * 1) and names it. And claims left by shards that stopped, made by
 * hand: each shard run again takes back exactly the claims naming it. */
static void test_plan_steal(void **state)
{
	(void)state;
	char d[128], a[1024];
	fresh_dir(d, sizeof d, "steal");
	snprintf(a, sizeof a,
		 "plan " F "fraction.yaml --shards 2 --out %s/s --steal", d);
	expect(a, 0, "claims:  ");
	const char *run = "run " F "fraction.yaml --out %s/s --shard %d/2 "
			  "--plan %s/s/plan-of-2.plan";
	snprintf(a, sizeof a, run, d, 1, d);
	expect(a, 0, "(12 tasks run here");
	snprintf(a, sizeof a, run, d, 0, d);
	expect(a, 0, "(0 tasks run here, 0 of the plan's");
	snprintf(a, sizeof a, "merge %s/s", d);
	expect(a, 0, "12 rows merged");
	snprintf(a, sizeof a,
		 BIN " run " F "fraction.yaml --out %s/u -q >/dev/null && "
		 "cmp %s/u/summary.csv %s/s/summary.csv && cmp %s/u/plot.dat "
		 "%s/s/plot.dat",
		 d, d, d, d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, run, d, 1, d);
	expect(a, 0, "(12 tasks run here");
	snprintf(a, sizeof a,
		 "plan " F "fraction.yaml --shards 2 --out %s/s --steal -q", d);
	expect(a, 0, NULL);
	snprintf(a, sizeof a, run, d, 0, d);
	expect(a, 0, "(12 tasks run here");
	/* claims made by hand, as two shards that stopped would leave
	 * them (a shard makes its marker before its first claim): tasks
	 * 0-5 claimed by shard 1, 6-11 by shard 0; each, run again, runs
	 * exactly the 6 that name it */
	snprintf(a, sizeof a,
		 BIN " plan " F "fraction.yaml --shards 2 --out %s/s --steal "
		 "-q && cd %s/s/plan-of-2.claims && ln -s 1 started-1 && ln -s 0 "
		 "started-0 && for "
		 "t in 0 1 2 3 4 5; do ln -s 1 $t; done && for t in 6 7 8 9 "
		 "10 11; do ln -s 0 $t; done",
		 d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, run, d, 1, d);
	expect(a, 0, "(6 tasks run here");
	snprintf(a, sizeof a, run, d, 0, d);
	expect(a, 0, "(6 tasks run here");
	snprintf(a, sizeof a, "merge %s/s", d);
	expect(a, 0, "12 rows merged");
	snprintf(a, sizeof a, "cmp %s/u/summary.csv %s/s/summary.csv", d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "rm -r %s/s/plan-of-2.claims", d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, run, d, 1, d);
	expect(a, 1, "plan-of-2.claims: marking this shard started: No such "
		     "file or directory");
	snprintf(a, sizeof a, "rm -rf %s", d);
	assert_int_equal(system(a), 0);
}

static void test_through_gnu_parallel(void **state)
{
	(void)state;
	if (system("command -v parallel >/dev/null 2>&1") != 0) {
		printf("GNU parallel is not installed (apt-get install "
		       "parallel): the parallel run is skipped\n");
		skip();
	}
	equality("SHARD_RUNNER=parallel N=4", F "fraction.yaml");
	/* the shards at once, claiming each other's tasks */
	equality("SHARD_RUNNER=parallel N=4 PLAN=1 STEAL=1",
		 F "fraction.yaml " E "max-batch.yaml");
}

/* merge's refusals, each with its message and exit 2. */
static void test_merge_refuses(void **state)
{
	(void)state;
	char d[128], a[1024], b[256];
	fresh_dir(d, sizeof d, "shard");
	snprintf(a, sizeof a, "mkdir -p %s/b", d);
	assert_int_equal(system(a), 0);
	for (int k = 0; k < 2; k++) {
		snprintf(a, sizeof a,
			 "run " F "best.yaml --out %s/a --shard %d/2 -q", d, k);
		expect(a, 0, NULL);
	}
	/* one shard of two */
	snprintf(a, sizeof a, "merge %s/a/shard-0-of-2.shard", d);
	expect(a, 2, "shard 1/2 is missing");
	/* the same shard twice */
	snprintf(a, sizeof a, "merge %s/a %s/a/shard-1-of-2.shard", d, d);
	expect(a, 2, "shard 1/2 again");
	/* shards of another N */
	snprintf(a, sizeof a, "run " F "best.yaml --out %s/b --shard 2/3 -q",
		 d);
	expect(a, 0, NULL);
	snprintf(a, sizeof a, "merge %s/a %s/b", d, d);
	expect(a, 2, "the first shard's plan has N = 2");
	/* a shard of another experiment */
	snprintf(a, sizeof a,
		 "run " E "accudnn-memory-timeline.yaml --out %s/c "
		 "--shard 1/2 -q",
		 d);
	expect(a, 0, NULL);
	snprintf(a, sizeof a, "merge %s/a/shard-0-of-2.shard "
			      "%s/c/shard-1-of-2.shard", d, d);
	expect(a, 2, "a shard of another experiment");
	/* another version's */
	snprintf(a, sizeof a,
		 "mkdir -p %s/v && sed 's/^version .*/version \"0.0-other\"/' "
		 "%s/a/shard-1-of-2.shard > %s/v/shard-1-of-2.shard",
		 d, d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "merge %s/a/shard-0-of-2.shard %s/v", d, d);
	expect(a, 2, "written by gpumemsim 0.0-other");
	/* a truncated file */
	snprintf(a, sizeof a,
		 "head -c 2000 %s/a/shard-1-of-2.shard > %s/v/shard-1-of-2.shard",
		 d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "merge %s/a/shard-0-of-2.shard %s/v", d, d);
	expect(a, 2, "shard-1-of-2.shard:");
	/* the experiment changed since the shards ran */
	snprintf(a, sizeof a,
		 "cp " F "best.yaml %s/x.yaml && " BIN " run %s/x.yaml "
		 "--out %s/x --shard 0/1 -q >/dev/null && echo '# edited' >> "
		 "%s/x.yaml",
		 d, d, d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "merge %s/x", d);
	expect(a, 2, "changed since this shard ran");
	/* nothing to merge; --shard's own refusals */
	snprintf(b, sizeof b, "merge %s/b/none", d);
	expect(b, 2, "none");
	expect("merge", 2, "needs the shards'");
	expect("run " F "best.yaml --shard 2/2", 2, "0 <= K < N");
	expect("run " F "best.yaml --shard 0/2 --trace /tmp/x.json", 2,
	       "--shard runs part");
	/* and the pair that belongs together merges */
	snprintf(a, sizeof a, "merge %s/a", d);
	expect(a, 0, "2 rows merged");
	snprintf(a, sizeof a, "rm -rf %s", d);
	assert_int_equal(system(a), 0);
}

/* The good shard d/g/shard-0-of-1.shard edited by sed script `sed`
 * into d/b<i>/ (the edit must change it) is refused by merge with exit
 * 2 and message want. */
static void garbled_shard(const char *d, size_t i, const char *sed,
			  const char *want)
{
	char a[1400];
	snprintf(a, sizeof a,
		 "mkdir -p %s/b%zu && sed '%s' %s/g/shard-0-of-1.shard > "
		 "%s/b%zu/shard-0-of-1.shard && ! cmp -s "
		 "%s/g/shard-0-of-1.shard %s/b%zu/shard-0-of-1.shard",
		 d, i, sed, d, d, i, d, d, i);
	if (system(a) != 0)
		fail_msg("the edit did not change the file: %s", a);
	snprintf(a, sizeof a, "merge %s/b%zu --out %s/o", d, i, d);
	expect(a, 2, want);
}

/* merge checks every field's range and the header's identity (issue
 * 38, item 6): each garbled copy of a good shard below (best.yaml run as
 * shard 0/1) parsed, and was merged, before. Each edit changes one line
 * (the first that matches): a negative time, nan and inf, a count of
 * 2^64-1, a point that ran at batch 0, a NUL inside a number, a line
 * after the last `end`, another experiment's name in the header. */
static void test_merge_refuses_garbled(void **state)
{
	(void)state;
	char d[128], a[1400];
	fresh_dir(d, sizeof d, "shardg");
	snprintf(a, sizeof a, "run " F "best.yaml --out %s/g --shard 0/1 -q",
		 d);
	expect(a, 0, NULL);
	static const struct {
		const char *sed, *want;
	} bad[] = {
		{"0,/^time /s/^time .*/time -5/", "'time': -5 is out of range"},
		{"0,/^samples_per_s /s/^samples_per_s .*/samples_per_s nan/",
		 "'samples_per_s': nan is out of range"},
		{"0,/^recompute_flops /s/^recompute_flops .*/recompute_flops "
		 "inf/",
		 "'recompute_flops': inf is out of range"},
		{"0,/^n_kernels /s/^n_kernels .*/n_kernels "
		 "18446744073709551615/",
		 "'n_kernels': a count past INT64_MAX is out of range"},
		{"0,/^batch /s/^batch .*/batch 0/", "a point that ran at batch 0"},
		{"0,/^n_kernels /s/^n_kernels \\(.*\\)/n_kernels \\1\\x0012/",
		 "a NUL byte in the line of 'n_kernels'"},
		{"$a junk", "more after the last 'end'"},
		/* found by fuzz/shard.c: calloc of 5.2 GB */
		{"0,/^n_iter /s/^n_iter .*/n_iter 28311552/",
		 "'n_iter': 28311552 items, more than the rest of the file "
		 "can hold"},
		{"s/^experiment .*/experiment \"other\"/",
		 "its header names the experiment 'other'; its file names "
		 "'shard-best'"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		garbled_shard(d, i, bad[i].sed, bad[i].want);
	snprintf(a, sizeof a, "merge %s/g --out %s/o", d, d);
	expect(a, 0, "merged");
	snprintf(a, sizeof a, "rm -rf %s", d);
	assert_int_equal(system(a), 0);
}

/* A timeline crosses the shard file as one line an event (format 3,
 * issue 37): "ev t0 a b", the seven kinds' bytes, the host bytes: 11
 * unsigned integers, a blank between two. Each edit of the first event
 * line is refused at that line, and a format-2 file by its header. The
 * time's limit is SIM_TIME_OVER = 2^62 + 1 = 4611686018427387905. */
static void test_merge_refuses_garbled_timeline(void **state)
{
	(void)state;
	char d[128], a[1400];
	fresh_dir(d, sizeof d, "shardt");
	snprintf(a, sizeof a,
		 "run " E "accudnn-memory-timeline.yaml --out %s/g --shard 0/1 "
		 "-q",
		 d);
	expect(a, 0, NULL);
	/* the first event line: 11 numbers after "ev" */
	snprintf(a, sizeof a,
		 "grep -m1 '^ev ' %s/g/shard-0-of-1.shard | awk '{exit NF != 12}'",
		 d);
	assert_int_equal(system(a), 0);
	static const struct {
		const char *sed, *want;
	} bad[] = {
		{"0,/^ev /s/^\\(ev .*\\) [0-9]*$/\\1/",
		 "'ev': not 11 unsigned integers"},
		{"0,/^ev /s/^\\(ev .*\\)$/\\1 5/",
		 "'ev': not 11 unsigned integers"},
		{"0,/^ev /s/^ev [0-9]*/ev -1/", "'ev': not 11 unsigned integers"},
		{"0,/^ev /s/^ev [0-9]* /ev 1  /",
		 "'ev': not 11 unsigned integers"},
		{"0,/^ev /s/^ev [0-9]* [0-9]*/ev 1 18446744073709551616/",
		 "'ev': not 11 unsigned integers"},
		{"0,/^ev /s/^ev [0-9]*/ev 4611686018427387906/",
		 "'ev': its time is out of range"},
		{"0,/^ev /s/^ev /ew /", "expected 'ev', found 'ew "},
		{"1s/.*/gpumemsim-shard 2/",
		 ":1: not shard file format 3 (another gpumemsim's)"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		garbled_shard(d, i, bad[i].sed, bad[i].want);
	/* the largest time the clock allows, and 2^64 - 1 bytes, are read
	 * back */
	snprintf(a, sizeof a,
		 "mkdir -p %s/m && sed '0,/^ev /s/^ev [0-9]* [0-9]*/ev "
		 "4611686018427387905 18446744073709551615/' "
		 "%s/g/shard-0-of-1.shard > %s/m/shard-0-of-1.shard && grep -q "
		 "'^ev 4611686018427387905 18446744073709551615 ' "
		 "%s/m/shard-0-of-1.shard",
		 d, d, d, d);
	assert_int_equal(system(a), 0);
	snprintf(a, sizeof a, "merge %s/m --out %s/o", d, d);
	expect(a, 0, "merged");
	snprintf(a, sizeof a, "rm -rf %s", d);
	assert_int_equal(system(a), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lpt_by_hand),
		cmocka_unit_test(test_group_by_hand),
		cmocka_unit_test(test_group_uneven_by_hand),
		cmocka_unit_test(test_plan_point_costs),
		cmocka_unit_test(test_scan_by_hand),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_baseline_known),
		cmocka_unit_test(test_plan_cost),
		cmocka_unit_test(test_order_by_hand),
		cmocka_unit_test(test_merge_refuses),
		cmocka_unit_test(test_merge_refuses_garbled),
		cmocka_unit_test(test_merge_refuses_garbled_timeline),
		cmocka_unit_test(test_sharded_equals_unsharded),
		cmocka_unit_test(test_plan_file_equals_unsharded),
		cmocka_unit_test(test_plan_file),
		cmocka_unit_test(test_plan_models),
		cmocka_unit_test(test_plan_oom),
		cmocka_unit_test(test_plan_steal),
		cmocka_unit_test(test_through_gnu_parallel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
