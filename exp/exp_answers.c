/*
 * exp_answers.c - the answer a user acts on (issue 34): the slowdown of
 * each point against the `framework` policy at the same workload, batch
 * and budget (summary.csv's slowdown_vs_framework), and the short table
 * `gpumemsim run` prints at its end.
 *
 * The table is the result set in a few lines; everything in it is also
 * in summary.csv. It is printed after the files are written, so it never
 * changes them.
 */
#include "exp.h"
#include "max_batch.h"

#include <string.h>

uint64_t exp_usable(const struct exp *e)
{
	return e->hw.capacity - e->hw.reserved;
}

static bool trained(const struct exp_point *p)
{
	return p && !strcmp(exp_status(p), "ok");
}

static bool is_framework(const struct exp *e, size_t pol)
{
	return !strcmp(e->pol[pol].name, "framework");
}

/* The budget a point ran with, 0 (the profile's usable) resolved. */
static uint64_t point_budget(const struct exp *e, const struct exp_point *p)
{
	return p->budget ? p->budget : e->budget ? e->budget : exp_usable(e);
}

static bool same_config(const struct exp *e, const struct exp_point *a,
			const struct exp_point *b)
{
	return a->wl == b->wl && a->batch == b->batch &&
	       point_budget(e, a) == point_budget(e, b);
}

/* The first trained framework point of p's configuration in a list. */
static const struct exp_point *fw_in(const struct exp *e,
				     const struct exp_point *pts, size_t n,
				     const struct exp_point *p)
{
	for (size_t i = 0; i < n; i++)
		if (is_framework(e, pts[i].pol) && trained(&pts[i]) &&
		    same_config(e, &pts[i], p))
			return &pts[i];
	return NULL;
}

static const struct exp_point *fw_match(const struct exp *e,
					const struct exp_result *r,
					const struct exp_point *p)
{
	const struct exp_point *q = fw_in(e, r->pt, r->n_pt, p);
	for (size_t i = 0; !q && i < r->n_srch; i++)
		q = fw_in(e, r->srch[i].probe, r->srch[i].n_probe, p);
	for (size_t i = 0; !q && i < r->n_eff; i++) {
		q = fw_in(e, r->eff[i].base.probe, r->eff[i].base.n_probe, p);
		if (!q)
			q = fw_in(e, &r->eff[i].run, 1, p);
	}
	return q;
}

double exp_slowdown(const struct exp *e, const struct exp_result *r,
		    const struct exp_point *p)
{
	if (!trained(p))
		return 0.0;
	const struct exp_point *q = fw_match(e, r, p);
	if (!q || q->st.steady.time <= 0)
		return 0.0;
	return (double)p->st.steady.time / (double)q->st.steady.time;
}

/* ---- the table ------------------------------------------------------- */

static void gib(FILE *f, uint64_t b)
{
	fprintf(f, " %9.2f", (double)b / (1024.0 * 1024.0 * 1024.0));
}

/* The width of the workload (or policy) column: its longest label,
 * between the header's 8 and 80 characters. */
static int label_width(const struct exp *e, bool policies)
{
	size_t w = 8, n = policies ? e->n_pol : e->n_wl;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(policies ? e->pol[i].label : e->wl[i].label);
		if (l > w)
			w = l;
	}
	return w > 80 ? 80 : (int)w;
}

static void row(FILE *f, const struct exp *e, const struct exp_result *r,
		const struct exp_point *p, const char *result)
{
	const size_t wl = p->wl, pol = p->pol;
	int ww = label_width(e, false), pw = label_width(e, true);
	fprintf(f, "  %-*.*s %-*.*s %8lld %9.2f%s %-12.12s", ww, ww,
		e->wl[wl].label, pw, pw, e->pol[pol].label, (long long)p->batch,
		(double)point_budget(e, p) / (1024.0 * 1024.0 * 1024.0),
		point_budget(e, p) > exp_usable(e) ? "*" : " ", result);
	if (!trained(p)) {
		fputs("         -        -", f);
	} else {
		fprintf(f, " %9.1f", p->st.samples_per_s);
		double s = exp_slowdown(e, r, p);
		if (s > 0)
			fprintf(f, " %7.2fx", s);
		else
			fputs("        -", f);
	}
	gib(f, p->st.mem.peak_allocated);
	gib(f, p->st.pinned_peak);
	fputc('\n', f);
}

/* The framework max-batch search's run of a batch (mb_probe_fn). */
struct fw_ctx {
	const struct exp *e;
	size_t wl, pol;
	uint64_t budget;
	char error[1024]; /* why a run failed (not OOM): the search stops */
};

static int fw_probe(void *ctx, int64_t batch, struct mb_obs *o)
{
	struct fw_ctx *c = ctx;
	struct exp_point p = {.wl = c->wl, .pol = c->pol, .batch = batch,
			      .budget = c->budget};
	exp_simulate(c->e, &p, NULL, NULL);
	o->fits = trained(&p);
	o->peak = p.st.mem.peak_requested;
	o->budget = point_budget(c->e, &p);
	/* failed, not OOM (a trace without batch marks cannot be built at
	 * another batch): no answer from this search */
	bool failed = !strcmp(exp_status(&p), "failed");
	if (failed)
		snprintf(c->error, sizeof c->error, "%s",
			 p.error[0] ? p.error : p.st.error);
	st_run_free(&p.st);
	return failed ? -1 : 0;
}

/* A workload whose batch fits under no policy: what does fit. The
 * largest batch below it under `framework` (when the experiment has it
 * and the workload can be built at other batches: generators, files and
 * traces with batch marks) by the max-batch search (max_batch.h, no
 * confirm runs), and the pointer to `measure: max-batch`. */
static void nothing_fits(FILE *f, const struct exp *e, size_t wl,
			 int64_t batch, uint64_t budget)
{
	fprintf(f, "  %s: batch %lld fits under no policy here.",
		e->wl[wl].label, (long long)batch);
	size_t fw = e->n_pol;
	for (size_t k = 0; k < e->n_pol && fw == e->n_pol; k++)
		if (is_framework(e, k))
			fw = k;
	if (fw < e->n_pol && batch > 1) {
		struct mb_cfg cfg = {1, batch - 1, 0};
		struct fw_ctx c = {e, wl, fw, budget, ""};
		struct mb_result res;
		int rc = mb_search(&cfg, fw_probe, &c, &res);
		if (rc == 0 && res.best > 0)
			fprintf(f, " The largest batch `framework` trains on "
				   "this budget: %lld.",
				(long long)res.best);
		else if (rc == 0)
			fputs(" `framework` trains no batch on this budget "
			      "(not even 1).",
			      f);
		else
			fprintf(f, " (`framework` could not run it at a smaller "
				   "batch: %s.)",
				c.error[0] ? c.error : "out of host memory");
	}
	fputs(" For each policy's largest batch: `measure: {kind: "
	      "max-batch}` (gpumemsim help experiment).\n",
	      f);
}

static void header(FILE *f, const struct exp *e, const char *batch_col)
{
	int ww = label_width(e, false), pw = label_width(e, true);
	fprintf(f, "  %-*s %-*s %8s %10s %-12s %9s %8s %9s %9s\n", ww,
		"workload", pw, "policy", batch_col, "budget_GiB", "result",
		"samples/s", "slowdown", "peak_GiB", "pinned_GiB");
}

/* run and sweep: one line per point (run) or per (workload, policy): the
 * point that trained at the least budget (budget sweeps) or the largest
 * batch (batch sweeps), else the last point. */
static void points_table(FILE *f, const struct exp *e,
			 const struct exp_result *r)
{
	header(f, e, "batch");
	for (size_t w = 0; w < e->n_wl; w++) {
		bool any = false;
		const struct exp_point *last = NULL;
		for (size_t k = 0; k < e->n_pol; k++) {
			const struct exp_point *best = NULL, *seen = NULL;
			for (size_t i = 0; i < r->n_pt; i++) {
				const struct exp_point *p = &r->pt[i];
				if (p->wl != w || p->pol != k)
					continue;
				if (e->kind == EXP_RUN) {
					row(f, e, r, p,
					    trained(p)	     ? "fits"
					    : p->st.oom.hit ? "OOM"
							     : "failed");
					any |= trained(p);
					last = p;
					continue;
				}
				seen = p;
				if (!trained(p))
					continue;
				if (!best ||
				    (e->axis == EXP_AXIS_BATCH
					     ? p->batch > best->batch
					     : point_budget(e, p) <
						       point_budget(e, best)))
					best = p;
			}
			if (e->kind == EXP_RUN || !seen)
				continue;
			any |= best != NULL;
			row(f, e, r, best ? best : seen,
			    !best			    ? "OOM at all"
			    : e->axis == EXP_AXIS_BATCH ? "largest fit"
							: "least budget");
		}
		if (!any && e->kind == EXP_RUN && last)
			nothing_fits(f, e, w, last->batch, last->budget);
	}
}

void exp_print_answers(const struct exp *e, const struct exp_result *r,
		       FILE *f)
{
	fprintf(f, "\n%s on %s (%s; slowdown: iteration time over "
		   "`framework` at the same batch and budget):\n",
		e->name, e->hw.name, exp_kind_names[e->kind]);
	if (r->pt) {
		points_table(f, e, r);
	} else if (r->srch) {
		bool mb = e->kind == EXP_MAX_BATCH;
		header(f, e, "batch");
		for (size_t i = 0; i < r->n_srch; i++) {
			const struct exp_search *s = &r->srch[i];
			const struct exp_point *p = exp_row(r, i);
			if (!s->n_probe)
				continue;
			row(f, e, r, p ? p : &s->probe[0],
			    !p	   ? "none fits"
			    : mb  ? (s->capped ? "largest (cap)" : "largest")
			    : e->kind == EXP_MIN_POOL ? "least pool"
						      : "best");
		}
	} else {
		header(f, e, "batch");
		for (size_t i = 0; i < r->n_eff; i++) {
			const struct exp_point *p = exp_row(r, i);
			if (p)
				row(f, e, r, p, "tuned k*");
		}
	}
	for (size_t i = 0; i < exp_n_rows(r); i++) {
		const struct exp_point *p = exp_row(r, i);
		if (p && point_budget(e, p) > exp_usable(e)) {
			fprintf(f, "  * budget above the %s's %.2f GiB usable "
				   "memory: a larger device simulated "
				   "(budget_above_device)\n",
				e->hw.name,
				(double)exp_usable(e) /
					(1024.0 * 1024.0 * 1024.0));
			break;
		}
	}
}
