/*
 * testkit.h - small workloads and runs for the executor tests: build
 * tensors and ops with explicit times, and run them on hw_test_profile (a
 * copy of b bytes takes b ns) with the `arena` allocator (memory figures
 * are plain sums). Include after <cmocka.h>.
 */
#ifndef GMS_TESTKIT_H
#define GMS_TESTKIT_H

#include "../policies/pol.h"
#include "../sim/ex.h"

/* Add a tensor; the test fails if the builder refuses it. */
static inline uint32_t T(struct wl_workload *w, const char *name,
			 uint64_t bytes, enum wl_kind k)
{
	gms_err err;
	uint32_t id = wl_add_tensor(w, name, bytes, k, &err);
	assert_int_not_equal(id, WL_NONE);
	return id;
}

/* Add an op of `time` ns (FLOPs = time), recomputable, with optional
 * algorithm choices. */
static inline void OPX(struct wl_workload *w, const char *name,
		       enum wl_phase ph, sim_time_t time, const uint32_t *in,
		       uint32_t n_in, const uint32_t *out, uint32_t n_out,
		       const struct wl_algo *al, uint32_t n_al)
{
	gms_err err;
	struct wl_op_desc d = {.name = name, .type = OT_OTHER, .phase = ph,
			       .in = in, .n_in = n_in, .out = out,
			       .n_out = n_out, .time = time,
			       .flops = (double)time, .recomputable = true,
			       .algos = al, .n_algos = n_al};
	if (wl_add_op(w, &d, &err) == WL_NONE)
		fail_msg("%s", err.msg);
}

static inline void finalize(struct wl_workload *w)
{
	gms_err err;
	if (wl_finalize(w, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Make policy `name` with "key=value" settings; the test fails if the
 * registry refuses them. */
static inline void make_policy(struct pol *p, const char *name,
			       const char *const *kv, size_t n)
{
	gms_err err;
	if (pol_create(p, name, NULL, NULL, kv, n, &err) < 0)
		fail_msg("%s", err.msg);
}

/* Run iters iterations (no warm-up) under pol on profile hw with an
 * allocator, a budget (0: the whole device) and a pool size (mem_cfg). */
static inline int run_on(const struct wl_workload *w, struct pol *pol,
			 const struct hw_profile *hw, const char *allocator,
			 uint64_t budget, uint64_t pool_size, int iters,
			 struct st_run *st)
{
	struct ex_cfg cfg = {.hw = hw, .wl = w, .pol = pol,
			     .allocator = allocator, .budget = budget,
			     .pool_size = pool_size, .iterations = iters,
			     .warmup = 0};
	gms_err err = {{0}};
	int rc = ex_run(&cfg, st, &err);
	if (rc < 0)
		print_message("ex_run: %s\n", err.msg);
	return rc;
}

/* run_on the 1 MiB test device with `arena`, optionally on one shared
 * copy engine. */
static inline int run_hw(const struct wl_workload *w, struct pol *pol,
			 uint64_t budget, int iters, struct st_run *st,
			 bool shared)
{
	struct hw_profile hw;
	hw_test_profile(&hw, 1 << 20);
	hw.shared_engine = shared;
	return run_on(w, pol, &hw, "arena", budget, 0, iters, st);
}

/* Peak requested bytes of one iteration of w under the framework policy
 * on profile hw with `arena` (plain sums); the test fails on an error or
 * an OOM. */
static inline uint64_t framework_peak(const struct wl_workload *w,
				      const struct hw_profile *hw)
{
	struct pol pol;
	make_policy(&pol, "framework", NULL, 0);
	struct st_run st;
	memset(&st, 0, sizeof st);
	if (run_on(w, &pol, hw, "arena", 0, 0, 1, &st) < 0)
		fail_msg("ex_run failed");
	assert_false(st.oom.hit);
	uint64_t peak = st.mem.peak_requested;
	st_run_free(&st);
	pol_destroy(&pol);
	return peak;
}

/* A budget under memory pressure for w on the 64 GiB test device: the
 * whole-run tensors (parameters, optimizer state) and 60% of what the
 * framework policy needs beyond them. */
static inline uint64_t pressure_budget(const struct wl_workload *w)
{
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	uint64_t peak = framework_peak(w, &hw);
	uint64_t whole = wl_bytes_of_kind(w, WL_PARAM) +
			 wl_bytes_of_kind(w, WL_OPT_STATE);
	return whole + (peak - whole) / 10 * 6;
}

/* Run workload w (named `what` in messages) under policy `name` with each
 * of the n settings of kv, three iterations on the 64 GiB test device
 * with `arena` (unless the policy has its own allocator) and the given
 * budget. Each run must complete without an engine error and, unless
 * allow_oom, without an OOM, and its report must contain `need` (NULL:
 * anything). Returns how many runs trained. */
static inline size_t run_under_pressure(const struct wl_workload *w,
					const char *what, const char *name,
					const char *const *kv, size_t n,
					const char *need, uint64_t budget,
					bool allow_oom)
{
	size_t trained = 0;
	struct hw_profile hw;
	hw_test_profile(&hw, (uint64_t)64 << 30);
	for (size_t m = 0; m < n; m++) {
		struct pol pol;
		make_policy(&pol, name, &kv[m], 1);
		struct st_run st;
		memset(&st, 0, sizeof st);
		int rc = run_on(w, &pol, &hw, "arena", budget, 0, 3, &st);
		char *rep = NULL;
		gms_err err;
		assert_int_equal(pol_report_text(&pol, &rep, &err), 0);
		bool oom = st.oom.hit && allow_oom;
		trained += !st.oom.hit;
		if (rc != 0 || st.failed || (st.oom.hit && !allow_oom) ||
		    (!oom && st.n_iter != 3) || (need && !strstr(rep, need)))
			fail_msg("%s %s %s: rc %d, %d iterations, oom %d (%s: "
				 "%s), error %s\n%s",
				 what, name, kv[m], rc, st.n_iter, st.oom.hit,
				 st.oom.tensor, st.oom.reason, st.error, rep);
		free(rep);
		st_run_free(&st);
		pol_destroy(&pol);
	}
	return trained;
}

/* Policy p's report (empty when it has none) into buf, cut at cap. */
static inline void report_into(struct pol *p, char *buf, size_t cap)
{
	char *text = NULL;
	gms_err err = {{0}};
	assert_int_equal(pol_report_text(p, &text, &err), 0);
	snprintf(buf, cap, "%s", text ? text : "");
	free(text);
}

#endif
