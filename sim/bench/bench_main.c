/*
 * bench_main.c - `make bench`: how fast the engine is.
 *
 *  1. the event queue alone: schedule and run N events with pseudo-random
 *     times (many ties), events per second;
 *  2. the engine alone: compute stream and copy engines with
 *     cross-stream waits, driven by kernel completions, copies bounded by
 *     a window of 4 outstanding a direction (a realistic, bounded mix);
 *     events per second. 1. and 2. are also given as a ratio against a
 *     bare binary heap (no callbacks) run in the same process on the
 *     same number of events and events held;
 *  3. the whole simulator on a synthetic 1,000-op workload (a 500-layer
 *     chain, forward and backward): wall time per simulated iteration and
 *     engine events per second, under `framework` (everything fits) and
 *     under `ondemand` with half the memory it needs (evictions and
 *     swap-ins on every iteration);
 *  4. the network generators: wall time to build each one at batch 64
 *     (default input size, graph preset, Adam), the best of 3 builds.
 *  5. ex_drop's regenerability check on a Fibonacci DAG of N ops (op k
 *     reads t_{k-1} and t_{k-2}; N = 200 unless given): after the last
 *     op every input of its producer is freed, so dropping t_N walks back
 *     through all of them (issue 12, item 4); wall time of the drops.
 *  6. Capuchin's Policy Maker (capuchin_planning_ns: host time of
 *     cp_peak_period and cp_plan at the end of the measured iteration)
 *     on ResNet-152 (tf-graph, SGD) at batch 256 on a P100-PCIe-16GB
 *     (the framework trains at most 85 there, capuchin-maxbatch.yaml, so
 *     the measured iteration runs out of memory and a plan is made) and
 *     on the DTR transformer trace with 3/4 of the device memory its
 *     framework run peaks at; one iteration each (the measured one), the
 *     best of 3, with the plan's size from the policy's report.
 *  7. AccUDNN's tuner (accudnn_tune: the GMAP, five profiling passes of
 *     the simulator, the fit and Algorithm 2) on ResNet-152 under Caffe
 *     on a Tesla M40 with 12 GiB, as accudnn-batch.yaml runs it; wall
 *     time of one call, the best of 3.
 *  8. scaling (issue 18): every policy on the synthetic chain of 3. at
 *     1K, 10K, 100K and 1M ops (`scale MAXOPS` caps it), 2 iterations of
 *     which 1 warm-up, framework with all the memory the chain needs, the
 *     others with half of it (so they swap or recompute); nanoseconds of
 *     wall time per op-iteration, the best of 3 runs (1 where a run
 *     takes over 10 s). Each run is a child process stopped after
 *     SCALE_LIMIT_S ("did not finish"; larger sizes are then skipped).
 *     The bar: at 1M, within 2x of the figure at 1K.
 *  9. dtr (issue 19): the serial DTR replay (policies/dtr_serial.c) on
 *     the three DTR traces of the shared data (../shared/data/dtr), every
 *     heuristic at simrd's budgets (0.9 .. 0.2 of the baseline peak):
 *     per trace and heuristic the mean wall time of a budget point (the
 *     best of 3 runs each; the trace loaded once), beside simrd's own wall
 *     time for the same points from simrd-reference.json, and the ratio:
 *     the mean's and the worst point's. The bar: every point >= 100x.
 * Figures are wall-clock on this machine; run it on an idle machine.
 */
#include "../../policies/accudnn.h"
#include "../../policies/capuchin.h"
#include "../../policies/dtr.h"
#include "../../policies/pol.h"
#include "../../tests/json_check.h"
#include "../../workloads/wl_gen.h"
#include "../ex.h"
#include "../heap.h"
#include "../hw.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nop(void *obj, uint64_t arg)
{
	(*(uint64_t *)obj) += arg;
}

/* The baseline the queue and engine figures are given against: a bare
 * binary min-heap of (time, sequence) with no callbacks, running the same
 * hold model (ev's 4-ary heap must beat or match it). */
struct bh_ev {
	sim_time_t t; /* when */
	uint64_t seq; /* ties in scheduling order */
};

static bool bh_less(const struct bh_ev *a, const struct bh_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void bh_push(struct bh_ev *h, size_t *n, struct bh_ev e)
{
	size_t i = (*n)++;
	while (i > 0 && bh_less(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct bh_ev bh_pop(struct bh_ev *h, size_t *n)
{
	struct bh_ev top = h[0], last = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && bh_less(&h[c + 1], &h[c]))
			c++;
		if (!bh_less(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = last;
	return top;
}

/* Events per second of the bare binary heap: n pops and pushes with
 * `pending` events held, times advancing by xorshift % 2048. */
static double bench_heap(uint64_t n, uint64_t pending)
{
	struct bh_ev *h = malloc((pending + 1) * sizeof *h);
	size_t hn = 0;
	uint64_t seq = 0, x = 88172645463325252ULL, sink = 0;
	double t0 = now_s();
	for (uint64_t i = 0; i < pending; i++)
		bh_push(h, &hn, (struct bh_ev){(sim_time_t)i, seq++});
	for (uint64_t i = 0; i < n; i++) {
		struct bh_ev e = bh_pop(h, &hn);
		sink += (uint64_t)e.t;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bh_push(h, &hn,
			(struct bh_ev){e.t + (sim_time_t)(x % 2048), seq++});
	}
	double dt = now_s() - t0;
	free(h);
	if (sink == 42) /* keep the loop */
		printf(" ");
	return (double)n / dt;
}

static void bench_queue(void)
{
	const uint64_t n = 10 * 1000 * 1000;
	struct ev_queue q;
	uint64_t sink = 0, x = 88172645463325252ULL;
	ev_init(&q);
	double t0 = now_s();
	/* keep ~1000 events pending, like a busy simulation: each popped
	 * event schedules one more a little later */
	for (uint64_t i = 0; i < 1000; i++)
		ev_at(&q, (sim_time_t)i, nop, &sink, 1);
	struct ev e;
	for (uint64_t i = 0; i < n; i++) {
		ev_pop(&q, &e);
		e.fn(e.obj, e.arg);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift */
		ev_at(&q, q.now + (sim_time_t)(x % 2048), nop, &sink, 1);
	}
	double dt = now_s() - t0;
	double heap = bench_heap(n, 1000);
	printf("event queue:   %llu events in %.3f s = %.2f M events/s "
	       "(1000 pending); bare binary heap %.2f M/s: ratio %.2f\n",
	       (unsigned long long)n, dt, (double)n / dt / 1e6, heap / 1e6,
	       (double)n / dt / heap);
	ev_fini(&q);
}

/* The engine alone (event queue + compute stream + copy engines), on a
 * bounded mix like a swapping policy's: a kernel's completion issues the
 * next kernel (100 us) and, every other kernel, a D2H copy of 1 MiB that
 * waits for it (cross-stream event) and an H2D copy of 1 MiB (on the
 * V100-16GB's link 10 us + 87 us, a little more while both directions
 * run: the copy engines about half busy), each only while fewer than
 * ENG_BENCH_WINDOW copies of its direction are outstanding (a prefetch
 * window: the queues stay bounded; the previous mix issued 1 us kernels
 * with copies the link could not drain, so its queues grew without
 * bound). */
#define ENG_BENCH_WINDOW 4
struct eng_bench {
	struct eng e;	   /* the engines */
	uint64_t left;	   /* kernels still to issue */
	int out[2];	   /* copies outstanding: [0] D2H, [1] H2D */
	uint64_t copies;   /* copies issued */
	uint64_t skipped;  /* copies not issued: window full */
	int max_queued;	   /* most copies outstanding at once */
};

static void eb_copy_done(void *obj, uint64_t dir)
{
	((struct eng_bench *)obj)->out[dir]--;
}

static void eb_kernel_done(void *obj, uint64_t i)
{
	struct eng_bench *b = obj;
	if (!b->left)
		return;
	b->left--;
	eng_event ev = eng_event_new(&b->e, ENG_COMPUTE);
	struct eng_item k = {.type = ENG_KERNEL, .q = ENG_COMPUTE,
			     .duration = 100000, .wait = ENG_EVENT_NONE,
			     .signal = ev, .done = eb_kernel_done, .obj = b,
			     .arg = i + 1};
	eng_issue(&b->e, &k);
	if (i % 2 == 0) {
		for (int d = 0; d < 2; d++) {
			if (b->out[d] >= ENG_BENCH_WINDOW) {
				b->skipped++;
				continue;
			}
			enum eng_q q = d ? ENG_H2D : ENG_D2H;
			struct eng_item w = {.type = ENG_WAIT, .q = q,
					     .wait = ev,
					     .signal = ENG_EVENT_NONE};
			struct eng_item c = {.type = ENG_COPY, .q = q,
					     .bytes = GMS_MIB, .pinned = true,
					     .wait = ENG_EVENT_NONE,
					     .signal = ENG_EVENT_NONE,
					     .done = eb_copy_done, .obj = b,
					     .arg = (uint64_t)d};
			if (!d)
				eng_issue(&b->e, &w);
			eng_issue(&b->e, &c);
			b->out[d]++;
			b->copies++;
			if (b->out[d] > b->max_queued)
				b->max_queued = b->out[d];
		}
	}
	if (b->e.n_evt > 1 << 16 && eng_idle(&b->e))
		eng_reset_events(&b->e);
}

static void bench_engine(void)
{
	struct ev_queue q;
	struct hw_profile hw;
	gms_err err;
	if (hw_load(&hw, "V100-16GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	double best = 0;
	uint64_t n = 0;
	struct eng_bench *b = NULL;
	for (int r = 0; r < 3; r++) { /* the best of 3 */
		free(b);
		b = calloc(1, sizeof *b);
		ev_init(&q);
		eng_init(&b->e, &q, &hw);
		b->left = 2 * 1000 * 1000;
		double t0 = now_s();
		eb_kernel_done(b, 0);
		n = ev_run(&q, NULL);
		double dt = now_s() - t0;
		if (r == 0 || dt < best)
			best = dt;
		eng_fini(&b->e);
		ev_fini(&q);
	}
	/* the baseline with as many events held as this mix holds at most:
	 * a kernel and its event, and the copies of both windows */
	double heap = bench_heap(n, 2 + 2 * ENG_BENCH_WINDOW);
	printf("engine:        %llu events (2M kernels of 100 us, %llu copies of 1 MiB "
	       "with cross-stream waits, at most %d outstanding a direction; "
	       "%llu not issued, window full) in %.3f s = %.2f M events/s; "
	       "bare binary heap %.2f M/s: ratio %.2f\n",
	       (unsigned long long)n, (unsigned long long)b->copies,
	       b->max_queued, (unsigned long long)b->skipped, best,
	       (double)n / best / 1e6, heap / 1e6, (double)n / best / heap);
	free(b);
}

/* The chain of `layers` layers, forward then backward, each op its own
 * layer (as in traces); activations and their gradients of `act` bytes,
 * weights and theirs of act / 8. */
static struct wl_workload *synthetic(int layers, uint64_t act)
{
	gms_err err;
	char name[64];
	struct wl_workload *w = wl_new("synthetic-chain", 64);
	uint32_t *a = malloc(sizeof *a * (size_t)(layers + 1));
	uint32_t *g = malloc(sizeof *g * (size_t)(layers + 1));
	uint32_t *wt = malloc(sizeof *wt * (size_t)(layers + 1));
	a[0] = wl_add_tensor(w, "x", act, WL_INPUT, &err);
	for (int i = 1; i <= layers; i++) {
		snprintf(name, sizeof name, "a%d", i);
		a[i] = wl_add_tensor(w, name, act, WL_ACT, &err);
		snprintf(name, sizeof name, "w%d", i);
		wt[i] = wl_add_tensor(w, name, act / 8, WL_PARAM, &err);
		snprintf(name, sizeof name, "g%d", i);
		if (i < layers) /* the last layer starts from its output */
			g[i] = wl_add_tensor(w, name, act,
					     WL_ACT_GRAD, &err);
		snprintf(name, sizeof name, "gw%d", i);
		wl_add_tensor(w, name, act / 8, WL_PARAM_GRAD, &err);
	}
	g[0] = wl_add_tensor(w, "g0", act, WL_ACT_GRAD, &err);
	for (int i = 1; i <= layers; i++) {
		uint32_t in[2] = {a[i - 1], wt[i]};
		snprintf(name, sizeof name, "fwd%d", i);
		struct wl_op_desc d = {.name = name, .type = OT_MATMUL,
				       .phase = WL_FWD, .in = in, .n_in = 2,
				       .out = &a[i], .n_out = 1, .flops = 4e9,
				       .bytes = 2.0 * (double)act,
				       .recomputable = true};
		wl_add_op(w, &d, &err);
	}
	for (int i = layers; i >= 1; i--) {
		/* the last layer's gradient comes from its own output */
		uint32_t in[3] = {i == layers ? a[i] : g[i], a[i - 1], wt[i]};
		snprintf(name, sizeof name, "gw%d", i);
		uint32_t out[2] = {g[i - 1], wl_tensor_id(w, name)};
		snprintf(name, sizeof name, "bwd%d", i);
		struct wl_op_desc d = {.name = name, .type = OT_MATMUL_BWD,
				       .phase = WL_BWD, .in = in, .n_in = 3,
				       .out = out, .n_out = 2, .flops = 8e9,
				       .bytes = 4.0 * (double)act};
		wl_add_op(w, &d, &err);
	}
	free(a);
	free(g);
	free(wt);
	if (wl_finalize(w, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	return w;
}

static void bench_run(const struct wl_workload *w, const char *policy,
		      uint64_t budget, int iters)
{
	struct hw_profile hw;
	gms_err err;
	if (hw_load(&hw, "V100-16GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	struct pol pol;
	if (pol_create(&pol, policy, NULL, NULL, NULL, 0, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .budget = budget,
			     .iterations = iters, .warmup = 1};
	struct st_run st;
	double t0 = now_s();
	int rc = ex_run(&cfg, &st, &err);
	double dt = now_s() - t0;
	if (rc < 0 || st.oom.hit) {
		fprintf(stderr, "bench: %s run failed: %s %s\n", policy,
			err.msg, st.oom.reason);
		exit(1);
	}
	printf("%-10s %4u ops x %d iterations: %.3f ms per simulated "
	       "iteration, %.2f M simulator events/s (%llu events, %llu "
	       "swap-outs/iter)\n",
	       policy, w->n_ops, iters, dt * 1e3 / iters,
	       (double)st.events / dt / 1e6, (unsigned long long)st.events,
	       (unsigned long long)st.steady.n_swap_out);
	st_run_free(&st);
	pol_destroy(&pol);
}

/* The host thread's cost (sim/ex.c, "the host thread"): the framework
 * policy on the synthetic chain with host.launch 0 (no host model), and
 * with V100-16GB's 5 us host launch, the host running ahead or waiting
 * for each kernel (an extra event per kernel whenever the device waits
 * for a launch); the best of 5 runs of 20 iterations each, simulator
 * time per op issued. */
static void bench_host(const struct wl_workload *w)
{
	struct hw_profile hw;
	gms_err err;
	if (hw_load(&hw, "V100-16GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	static const struct {
		const char *what;
		bool launch;
		enum ex_host mode;
	} modes[] = {{"off (launch 0)", false, EX_HOST_WAIT},
		     {"run-ahead", true, EX_HOST_RUNAHEAD},
		     {"wait per kernel", true, EX_HOST_WAIT}};
	sim_time_t l = hw.host_launch;
	double base = 0;
	for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
		hw.host_launch = modes[m].launch ? l : 0;
		double best = 1e30;
		uint64_t ops = 0;
		for (int r = 0; r < 5; r++) {
			struct pol pol;
			if (pol_create(&pol, "framework", NULL, NULL, NULL, 0,
				       &err) < 0) {
				fprintf(stderr, "bench: %s\n", err.msg);
				exit(1);
			}
			struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
					     .allocator = "bfc",
					     .iterations = 20, .warmup = 1,
					     .host = modes[m].mode};
			struct st_run st;
			double t0 = now_s();
			int rc = ex_run(&cfg, &st, &err);
			double dt = now_s() - t0;
			if (rc < 0 || st.oom.hit) {
				fprintf(stderr, "bench: host run failed: %s\n",
					err.msg);
				exit(1);
			}
			ops = 0;
			for (int i = 0; i < st.n_iter; i++)
				ops += st.iter[i].n_kernels;
			if (dt < best)
				best = dt;
			st_run_free(&st);
			pol_destroy(&pol);
		}
		double ns = best * 1e9 / (double)ops;
		if (m == 0)
			base = ns;
		printf("host model %-16s %.1f ns per op (%+.1f ns against "
		       "off; %llu ops)\n",
		       modes[m].what, ns, ns - base, (unsigned long long)ops);
	}
}

/* Build every generator's network; the best of `reps` builds. */
static void bench_generators(void)
{
	const int reps = 3;
	const struct wl_gen_args a = {.batch = 64, .framework = WL_FW_TF_GRAPH,
				      .optimizer = WL_OPTIM_ADAM};
	for (const struct wl_gen *g = wl_gens; g->name; g++) {
		double best = 0;
		uint32_t ops = 0;
		for (int r = 0; r < reps; r++) {
			gms_err err;
			double t0 = now_s();
			struct wl_workload *w = wl_gen_build(g, &a, &err);
			double dt = now_s() - t0;
			if (!w) {
				fprintf(stderr, "bench: %s: %s\n", g->name,
					err.msg);
				exit(1);
			}
			ops = w->n_ops;
			wl_free(w);
			if (r == 0 || dt < best)
				best = dt;
		}
		printf("generator  %-14s batch 64: %5u ops built in %8.3f ms "
		       "(best of %d)\n",
		       g->name, ops, best * 1e3, reps);
	}
}

/* The Fibonacci DAG's policy: drop t_N once op N is done, timing it. */
struct fib_bench {
	uint32_t op;   /* op N */
	uint32_t t;    /* t_N */
	double drop_s; /* wall time spent in ex_drop */
	int drops;     /* drops accepted */
};

static void fib_after(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct fib_bench *b = p->priv;
	if (op->id != b->op)
		return;
	double t0 = now_s();
	int rc = ex_drop(ex, b->t);
	b->drop_s += now_s() - t0;
	if (rc < 0) {
		fprintf(stderr, "bench: fib: %s\n", ex_last_error(ex));
		exit(1);
	}
	b->drops++;
}

/* t_0 (input, also read by the last op), t_1 = op1(t_0), t_k = opk(t_{k-1},
 * t_{k-2}) for k = 2..n, then "sink" reads t_n and t_0. After op n, t_1 ..
 * t_{n-1} are all freed. */
static struct wl_workload *fib_dag(uint32_t n)
{
	gms_err err;
	char name[32];
	struct wl_workload *w = wl_new("fibonacci", 1);
	uint32_t *t = malloc(sizeof *t * ((size_t)n + 1));
	for (uint32_t k = 0; k <= n; k++) {
		snprintf(name, sizeof name, "t%u", k);
		t[k] = wl_add_tensor(w, name, GMS_MIB, k ? WL_ACT : WL_INPUT,
				     &err);
	}
	uint32_t sink = wl_add_tensor(w, "s", GMS_MIB, WL_ACT, &err);
	for (uint32_t k = 1; k <= n + 1; k++) {
		uint32_t in[2] = {t[k - 1], k > 1 ? t[k - 2] : 0};
		if (k == n + 1)
			in[0] = t[n], in[1] = t[0];
		snprintf(name, sizeof name, k <= n ? "op%u" : "sink", k);
		struct wl_op_desc d = {.name = name, .type = OT_OTHER,
				       .phase = WL_FWD, .in = in,
				       .n_in = k > 1 ? 2 : 1,
				       .out = k <= n ? &t[k] : &sink,
				       .n_out = 1, .time = 1000,
				       .recomputable = true};
		if (wl_add_op(w, &d, &err) == WL_NONE) {
			fprintf(stderr, "bench: %s\n", err.msg);
			exit(1);
		}
	}
	free(t);
	if (wl_finalize(w, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	return w;
}

static void bench_fib(uint32_t n)
{
	struct wl_workload *w = fib_dag(n);
	struct hw_profile hw;
	gms_err err;
	if (hw_load(&hw, "V100-16GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	struct fib_bench b = {.op = n - 1, .t = wl_tensor_id(w, "t0") + n};
	const struct pol_ops ops = {.name = "fib-drop", .after_op = fib_after};
	struct pol pol = {.ops = &ops, .priv = &b};
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "bfc", .iterations = 2,
			     .warmup = 1};
	struct st_run st;
	double t0 = now_s();
	int rc = ex_run(&cfg, &st, &err);
	double dt = now_s() - t0;
	if (rc < 0 || st.oom.hit) {
		fprintf(stderr, "bench: fib run failed: %s %s\n", err.msg,
			st.oom.reason);
		exit(1);
	}
	printf("fib drop   %4u ops x 2 iterations: %d drops in %.6f s "
	       "(%.3f ms the run, %llu recompute kernels/iter)\n",
	       n, b.drops, b.drop_s, dt * 1e3,
	       (unsigned long long)st.steady.n_recompute);
	st_run_free(&st);
	wl_free(w);
}

/* The value of "key N" in a policy report, 0 when absent. */
static unsigned long long report_value(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l += !!l)
		if (!strncmp(l, key, n) && l[n] == ' ')
			return strtoull(l + n + 1, NULL, 10);
	return 0;
}

/* One capuchin run of one iteration (the measured one; the plan is made
 * at its end): the best planning time of `reps`, and the plan's size. */
static void bench_plan_one(const char *what, const struct wl_workload *w,
			   const struct hw_profile *hw, uint64_t budget)
{
	const int reps = 3;
	uint64_t best = 0;
	unsigned long long swaps = 0, recomputes = 0, accesses = 0;
	for (int r = 0; r < reps; r++) {
		gms_err err;
		struct pol pol;
		if (pol_create(&pol, "capuchin", NULL, NULL, NULL, 0, &err) <
		    0) {
			fprintf(stderr, "bench: %s\n", err.msg);
			exit(1);
		}
		struct ex_cfg cfg = {.hw = hw, .wl = w, .pol = &pol,
				     .allocator = "bfc", .budget = budget,
				     .iterations = 1, .warmup = 0};
		struct st_run st;
		char *text = NULL;
		if (ex_run(&cfg, &st, &err) < 0 || st.oom.hit ||
		    pol_report_text(&pol, &text, &err) < 0) {
			fprintf(stderr, "bench: capuchin %s failed: %s %s\n",
				what, err.msg, st.oom.reason);
			exit(1);
		}
		uint64_t ns = capuchin_planning_ns(&pol);
		if (r == 0 || ns < best)
			best = ns;
		swaps = report_value(text, "plan_swaps");
		recomputes = report_value(text, "plan_recomputes");
		accesses = report_value(text, "measured_accesses");
		free(text);
		st_run_free(&st);
		pol_destroy(&pol);
	}
	if (!best)
		printf("capuchin plan %-32s no plan was made (nothing ran out "
		       "of memory)\n", what);
	else
		printf("capuchin plan %-32s %llu accesses: planned in %.3f ms "
		       "(best of %d): %llu swaps, %llu recomputes\n",
		       what, accesses, (double)best * 1e-6, reps, swaps,
		       recomputes);
}

static void bench_plan(void)
{
	gms_err err;
	struct hw_profile hw;
	if (hw_load(&hw, "P100-PCIe-16GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	const struct wl_gen_args a = {.batch = 256,
				      .framework = WL_FW_TF_GRAPH,
				      .optimizer = WL_OPTIM_SGD};
	const struct wl_gen *g = wl_gen_lookup("resnet152", &err);
	struct wl_workload *w = g ? wl_gen_build(g, &a, &err) : NULL;
	if (!w) {
		fprintf(stderr, "bench: resnet152: %s\n", err.msg);
		exit(1);
	}
	bench_plan_one("resnet152 batch 256", w, &hw, 0);
	wl_free(w);
	/* the DTR transformer log, from the trace directory (not shipped:
	 * README "Third-party data"); without it, this part is skipped */
	char path[GMS_PATH_MAX];
	int rc = wl_dtr_resolve(WL_DTR_PREFIX "transformer-10-8000000000.0-"
				"2020-10-1-10-56-5-default.log",
				path, sizeof path, &err);
	if (rc == WL_DTR_ABSENT) {
		printf("capuchin planning on the DTR transformer: skipped: "
		       "%s\n", err.msg);
		return;
	}
	w = rc < 0 ? NULL : wl_load_dtr(path, &err);
	if (!w) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	/* its peak under framework with all the memory, then 3/4 of it */
	struct pol fw;
	struct st_run st;
	if (pol_create(&fw, "framework", NULL, NULL, NULL, 0, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &fw,
			     .allocator = "bfc", .iterations = 1};
	if (ex_run(&cfg, &st, &err) < 0 || st.oom.hit) {
		fprintf(stderr, "bench: transformer: %s %s\n", err.msg,
			st.oom.reason);
		exit(1);
	}
	uint64_t peak = st.mem.peak_allocated;
	st_run_free(&st);
	pol_destroy(&fw);
	char what[64];
	snprintf(what, sizeof what, "transformer at 3/4 of %llu MiB",
		 (unsigned long long)(peak / GMS_MIB));
	bench_plan_one(what, w, &hw, peak / 4 * 3);
	wl_free(w);
}

static void bench_tune(void)
{
	gms_err err;
	struct hw_profile hw;
	if (hw_load(&hw, "Tesla-M40-24GB", &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	struct accudnn_tune_in in = {
		.gen = wl_gen_lookup("resnet152", &err),
		.args = {.batch = 15, .framework = WL_FW_CAFFE,
			 .optimizer = WL_OPTIM_MOMENTUM},
		.hw = &hw, .budget = (uint64_t)12 << 30, .lr_base = 0.1,
		.c = 1};
	struct accudnn_tune_out out;
	double best = 0;
	for (int r = 0; r < 3; r++) {
		double t0 = now_s();
		if (!in.gen || accudnn_tune(&in, &out, &err) < 0) {
			fprintf(stderr, "bench: accudnn_tune: %s\n", err.msg);
			exit(1);
		}
		double t = now_s() - t0;
		if (r == 0 || t < best)
			best = t;
	}
	printf("accudnn tune resnet152 caffe, M40 12 GiB: %.3f s (best of 3; "
	       "%d profiling passes, k_max %lld, k* %lld, %u of %u feature "
	       "maps pinned)\n",
	       best, out.profile_runs, (long long)out.k_max,
	       (long long)out.k_star, out.n_pinned, out.n_fm);
}

/* Per run of the scaling table, seconds before the child is stopped. */
#define SCALE_LIMIT_S 60

/* The policies of the scaling table, their parameters ("k=v") and the
 * allocator (bfc unless named; vdnn and vdnnpp impose their own). */
static const struct {
	const char *label, *name, *kv, *alloc; /* label, policy, one param,
						  allocator or NULL */
} scale_pols[] = {
	{"framework", "framework", NULL, NULL},
	{"ondemand", "ondemand", NULL, NULL},
	{"ondemand/cach", "ondemand", NULL, "caching"},
	{"vdnn", "vdnn", NULL, NULL},
	{"vdnnpp", "vdnnpp", NULL, NULL},
	{"ckpt-sqrt", "checkpoint", "mode=sqrt", NULL},
	{"ckpt-memory", "checkpoint", "mode=memory", NULL},
	{"capuchin", "capuchin", NULL, NULL},
	{"accudnn", "accudnn", NULL, NULL},
	/* preset full (the executor's), the default heuristic (dtr's
	 * h_DTR); the chain's forward ops are recomputable */
	{"dtr", "dtr", NULL, NULL},
};

/* One run of the chain in a child; writes its wall seconds to fd, or
 * exits non-zero. */
static void scale_child(const struct wl_workload *w, int k, uint64_t budget,
			int fd)
{
	struct hw_profile hw;
	gms_err err;
	struct pol pol;
	const char *kv[1] = {scale_pols[k].kv};
	if (hw_load(&hw, "V100-16GB", &err) < 0 ||
	    pol_create(&pol, scale_pols[k].name, NULL, NULL, kv,
		       scale_pols[k].kv ? 1 : 0, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		_exit(2);
	}
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = scale_pols[k].alloc
						  ? scale_pols[k].alloc
						  : "bfc",
			     .budget = budget, .iterations = 2, .warmup = 1};
	struct st_run st;
	double t0 = now_s();
	int rc = ex_run(&cfg, &st, &err);
	double dt = now_s() - t0;
	if (rc < 0 || st.oom.hit) {
		fprintf(stderr, "bench: %s failed: %s %s\n",
			scale_pols[k].label, rc < 0 ? err.msg : "",
			st.oom.hit ? st.oom.reason : "");
		_exit(3);
	}
	if (write(fd, &dt, sizeof dt) != (ssize_t)sizeof dt)
		_exit(4);
	_exit(0);
}

/* Seconds of one run, < 0: did not finish in time (or failed). */
static double scale_once(const struct wl_workload *w, int k, uint64_t budget)
{
	int fd[2];
	if (pipe(fd) < 0)
		return -2;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -2;
	if (pid == 0) {
		close(fd[0]);
		alarm(SCALE_LIMIT_S);
		scale_child(w, k, budget, fd[1]);
	}
	close(fd[1]);
	double dt = -1;
	if (read(fd[0], &dt, sizeof dt) != (ssize_t)sizeof dt)
		dt = -1;
	close(fd[0]);
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? -1
									    : -2;
	return dt;
}

static void bench_scale(uint32_t max_ops, const char *only)
{
	const uint32_t sizes[] = {1000, 10000, 100000, 1000000};
	const int n_sizes = 4, n_pols = sizeof scale_pols / sizeof *scale_pols;
	double ns[sizeof scale_pols / sizeof *scale_pols][4];
	bool stop[sizeof scale_pols / sizeof *scale_pols] = {0};
	printf("scaling: ns per op-iteration (best of 3; chain of N ops, 2 "
	       "iterations; '-' did not finish in %d s, 'oom'/'err' failed)\n"
	       "%-13s", SCALE_LIMIT_S, "policy");
	for (int i = 0; i < n_sizes && sizes[i] <= max_ops; i++)
		printf(" %10u", sizes[i]);
	printf("  1M/1K\n");
	for (int i = 0; i < n_sizes && sizes[i] <= max_ops; i++) {
		int layers = (int)(sizes[i] / 2);
		/* about 8 GiB of activations whatever the length (fits a
		 * V100-16GB twice), a power of two each */
		uint64_t act = 16;
		while (act * 2 * (uint64_t)layers <= 8ULL << 30)
			act *= 2;
		struct wl_workload *w = synthetic(layers, act);
		/* the chain keeps every activation for backward */
		uint64_t need = (uint64_t)layers * (act + act / 8);
		for (int k = 0; k < n_pols; k++) {
			ns[k][i] = -3; /* not run */
			if (stop[k] || (only && strcmp(only, scale_pols[k].label)))
				continue;
			/* framework: the whole device */
			uint64_t budget = strcmp(scale_pols[k].name,
						 "framework") == 0 ? 0
								   : need / 2;
			double best = -1;
			for (int r = 0; r < 3; r++) {
				double dt = scale_once(w, k, budget);
				if (dt < 0) {
					best = dt;
					break;
				}
				if (best < 0 || dt < best)
					best = dt;
				if (dt > 10)
					break;
			}
			ns[k][i] = best < 0 ? best
					    : best * 1e9 / (2.0 * w->n_ops);
			stop[k] = best < 0;
		}
		wl_free(w);
	}
	for (int k = 0; k < n_pols; k++) {
		if (only && strcmp(only, scale_pols[k].label))
			continue;
		printf("%-13s", scale_pols[k].label);
		for (int i = 0; i < n_sizes && sizes[i] <= max_ops; i++) {
			if (ns[k][i] >= 0)
				printf(" %10.0f", ns[k][i]);
			else
				printf(" %10s", ns[k][i] == -1   ? "-"
						: ns[k][i] == -2 ? "err"
								 : "");
		}
		if (max_ops >= sizes[3] && ns[k][3] >= 0 && ns[k][0] > 0)
			printf("  %5.2f", ns[k][3] / ns[k][0]);
		printf("\n");
	}
}

/* The whole text of a file, or NULL. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap + 1);
	while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0)
		if ((n += got) == cap) {
			char *b = realloc(buf, 2 * cap + 1);
			if (!b) {
				free(buf);
				buf = NULL;
			}
			buf = b;
			cap *= 2;
		}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* Load a DTR log and its baseline (exit on error), printing how long
 * that took under the name given. */
static struct dtr_trace *dtr_load_print(const char *path, const char *name,
					struct dtr_baseline *b)
{
	struct dtr_trace *tr;
	gms_err err;
	double t0 = now_s();
	if (dtr_trace_load(path, &tr, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	dtr_baseline(tr, b);
	printf("  %s: load and baseline %.1f ms, %u ops, %u storages\n", name,
	       (now_s() - t0) * 1e3, b->n_ops, b->n_storages);
	return tr;
}

/* 9. the serial DTR replay against simrd's wall time; only the model
 * named only (NULL: all). */
static void bench_dtr(const char *only)
{
	char dir[1100], path[1400];
	if (wl_dtr_dir(dir, sizeof dir) < 0) /* $GMS_DTR_DIR or the default */
		snprintf(dir, sizeof dir, "(too long)");
	snprintf(path, sizeof path, "%s/simrd-reference.json", dir);
	char *text = read_text(path);
	char jerr[128];
	struct jv *ref = text ? jv_parse(text, jerr, sizeof jerr) : NULL;
	free(text);
	const struct jv *models = jv_get(ref, "models");
	if (!models) {
		printf("dtr: %s not found or not JSON: skipped\n", path);
		jv_free(ref);
		return;
	}
	printf("dtr: serial replay per budget point (best of 3), against "
	       "simrd's wall time (simrd-reference.json)\n");
	unsigned points = 0, fast = 0, faster = 0;
	for (size_t m = 0; m < models->n; m++) {
		const struct jv *mo = models->item[m], *log = jv_get(mo, "log");
		const struct jv *runs = jv_get(mo, "runs");
		if (!log || log->type != JV_STR || !runs ||
		    (only && strcmp(only, models->key[m])))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, log->str);
		gms_err err;
		struct dtr_baseline b;
		struct dtr_trace *tr = dtr_load_print(path, models->key[m], &b);
		for (int h = 0; h < DTR_H_COUNT; h++) {
			const struct jv *pts =
				jv_get(runs, dtr_heuristic_simrd_name(h));
			static const double ratios[] = {0.9, 0.8, 0.7, 0.6,
							0.5, 0.4, 0.3, 0.2};
			double sum = 0, simrd = 0, worst = INFINITY;
			double worst_r = 0;
			for (size_t i = 0; i < 8; i++) {
				const struct jv *p =
					pts && i < pts->n ? pts->item[i] : NULL;
				const struct jv *jr = jv_get(p, "ratio");
				const struct jv *ws = jv_get(p, "wall_s");
				double ratio = jr ? jr->num : ratios[i];
				struct dtr_opts o = {
					(enum dtr_heuristic)h,
					dtr_budget_for_ratio(&b, ratio),
					b.compute_ns};
				double best = INFINITY;
				for (int k = 0; k < 3; k++) {
					struct dtr_result r;
					double a = now_s();
					if (dtr_serial_run(tr, &o, &r, &err) < 0) {
						fprintf(stderr, "bench: %s\n",
							err.msg);
						exit(1);
					}
					double z = now_s() - a;
					best = z < best ? z : best;
				}
				sum += best;
				if (!ws || ws->type != JV_NUM)
					continue;
				simrd += ws->num;
				points++;
				fast += ws->num >= 100 * best;
				faster += ws->num >= 200 * best;
				if (ws->num / best < worst) {
					worst = ws->num / best;
					worst_r = ratio;
				}
			}
			printf("    %-12s %8.3f ms/point", dtr_heuristic_name(h),
			       sum / 8 * 1e3);
			if (simrd > 0)
				printf("   simrd %8.1f ms/point   %6.0fx, worst "
				       "%.0fx (at %.1f)",
				       simrd / 8 * 1e3, simrd / sum, worst,
				       worst_r);
			else
				printf("   (no simrd figures)");
			printf("\n");
		}
		dtr_trace_free(tr);
	}
	printf("  points at least 100x faster than simrd: %u of %u, at least "
	       "200x: %u\n", fast, points, faster);
	jv_free(ref);
}

/* 9b. the serial replay of any DTR log (gpumemsim-bench dtr PATH.log):
 * ms per budget point (best of 3) at simrd's eight ratios, per storage,
 * and the region rebuilds done by a walk instead of the closures (issue
 * 37: above 4,096 storages they all were). */
static void bench_dtr_log(const char *path)
{
	gms_err err;
	struct dtr_baseline b;
	struct dtr_trace *tr = dtr_load_print(path, path, &b);
	static const double ratios[] = {0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2};
	for (int h = 0; h < DTR_H_COUNT; h++) {
		double sum = 0;
		uint64_t walked = 0, rebuilt = 0;
		for (size_t i = 0; i < 8; i++) {
			struct dtr_opts o = {(enum dtr_heuristic)h,
					     dtr_budget_for_ratio(&b, ratios[i]),
					     b.compute_ns};
			double best = INFINITY;
			struct dtr_result r;
			for (int k = 0; k < 3; k++) {
				double a = now_s();
				if (dtr_serial_run(tr, &o, &r, &err) < 0) {
					fprintf(stderr, "bench: %s\n", err.msg);
					exit(1);
				}
				double z = now_s() - a;
				best = z < best ? z : best;
			}
			sum += best;
			walked += r.rebuilds_walked;
			rebuilt += r.rebuilds;
		}
		printf("  %-12s %8.3f ms/point  %7.1f ns/storage  rebuilds "
		       "%llu, by a walk %llu\n", dtr_heuristic_name(h),
		       sum / 8 * 1e3, sum / 8 * 1e9 / (b.n_storages ? b.n_storages : 1),
		       (unsigned long long)rebuilt, (unsigned long long)walked);
	}
	dtr_trace_free(tr);
}

int main(int argc, char **argv)
{
	/* optional argument: queue, engine, framework, ondemand, host, gen, fib,
	 * plan, tune, scale or dtr (default: all); fib takes the op count
	 * after it, scale the largest chain and a policy's label, dtr a
	 * model of the reference (resnet32, transformer, unet) or a log's
	 * path (ending in .log) */
	/* the simulator's memory as gpumemsim has it (sim/heap.h: huge
	 * pages, 64 MiB top pad), so that the figures are the program's */
	heap_exec_huge(argv);
	heap_tune();
	const char *only = argc > 1 ? argv[1] : "";
	if (!*only || strcmp(only, "queue") == 0)
		bench_queue();
	if (!*only || strcmp(only, "engine") == 0)
		bench_engine();
	struct wl_workload *w = synthetic(500, 8 * GMS_MIB);
	/* the chain keeps every activation for backward: 500 x 8 MiB plus
	 * weights; half of that forces evictions */
	uint64_t need = 500ULL * 8 * GMS_MIB + 500ULL * GMS_MIB;
	if (!*only || strcmp(only, "framework") == 0)
		bench_run(w, "framework", 0, 50);
	if (!*only || strcmp(only, "ondemand") == 0)
		bench_run(w, "ondemand", need / 2, 50);
	if (!*only || strcmp(only, "host") == 0)
		bench_host(w);
	wl_free(w);
	if (!*only || strcmp(only, "gen") == 0)
		bench_generators();
	if (!*only || strcmp(only, "fib") == 0)
		bench_fib(argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10)
				   : 200);
	if (!*only || strcmp(only, "plan") == 0)
		bench_plan();
	if (!*only || strcmp(only, "tune") == 0)
		bench_tune();
	if (!*only || strcmp(only, "scale") == 0)
		bench_scale(argc > 2 && !strcmp(only, "scale")
				    ? (uint32_t)strtoul(argv[2], NULL, 10)
				    : 1000000,
			    argc > 3 ? argv[3] : NULL);
	if (!strcmp(only, "dtr") && argc > 2 && strstr(argv[2], ".log"))
		bench_dtr_log(argv[2]);
	else if (!*only || strcmp(only, "dtr") == 0)
		bench_dtr(argc > 2 && !strcmp(only, "dtr") ? argv[2] : NULL);
	return 0;
}
