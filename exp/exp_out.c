/*
 * exp_out.c - an experiment's results: summary.csv, runs.json, the plot
 * data and the gnuplot plot.
 *
 * Every file goes to a temporary and is renamed into place (gms_out), so
 * an interrupted run never leaves a half-written result. Nothing here
 * depends on wall-clock time or the thread count: same inputs, same bytes.
 */
#include "exp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GMS_VERSION
#define GMS_VERSION "unknown"
#endif

extern char **environ;

static double ms(sim_time_t t) { return (double)t / 1e6; }

/* p ran and trained: no OOM, no failure. */
static bool point_trained(const struct exp_point *p)
{
	return p && !strcmp(exp_status(p), "ok");
}

/* ---- CSV ----------------------------------------------------------------- */

/* A cell a spreadsheet would take for a formula (one beginning with =,
 * +, -, @, a tab or a CR) is quoted and prefixed with ', as OWASP's "CSV
 * Injection" advises ("prepend each cell field with a single quote (')
 * ... ensure that each cell field is quoted") (issue 38). */
void exp_csv_str(FILE *f, const char *s)
{
	bool formula = *s && strchr("=+-@\t\r", *s);
	if (!formula && !strpbrk(s, ",\"\n\r")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	if (formula)
		fputc('\'', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The statistics columns every summary row carries, units in the names.
 * `allocator` is the device allocator model the run used: the policy's
 * own (vDNN's pool-bestfit) or the experiment's. */
static const char stat_header[] =
	"allocator,"
	"status,iter_time_ms,samples_per_s,slowdown_vs_framework,"
	"compute_busy_ms,recompute_ms,"
	"recompute_kernels,recompute_gflop,stall_h2d_ms,stall_d2h_ms,"
	"stall_memory_ms,stall_alloc_ms,h2d_bytes,d2h_bytes,swap_outs,"
	"swap_ins,drops,swap_out_cancels,releases,algo_fallbacks,"
	"kernels,peak_requested_bytes,peak_allocated_bytes,"
	"peak_reserved_bytes,pinned_peak_bytes,host_peak_bytes,host_cpu_ms,"
	"frag_at_peak,frag_max,"
	"allocations,frees,alloc_failures,device_mallocs,device_frees,"
	"alloc_ms,cuda_mallocs,cuda_frees,cuda_host_allocs,events,"
	"late_swap_ins,replans,host_issue_ms,host_bound_ms,warmup_iters,"
	"settled_iter,grow_warmup_iters,grow_capped,"
	"oom_iteration,oom_op,oom_tensor,oom_bytes,oom_reason,error";

/* A time column's value, or an empty field when the run did not train
 * (issue 34: an OOM row's zeros were averaged in by a reader). */
static void csv_time(FILE *f, bool ok, const char *fmt, double v)
{
	if (ok)
		fprintf(f, fmt, v);
	fputc(',', f);
}

/* The statistics of p; `error` replaces the point's own error when set;
 * slowdown: exp_slowdown's (0: empty). An OOM or failed row leaves its
 * time and throughput columns empty. */
static void csv_stats(FILE *f, const struct exp_point *p, const char *error,
		      double slowdown)
{
	const struct st_run *r = &p->st;
	const struct st_iter *s = &r->steady;
	bool ok = point_trained(p);
	exp_csv_str(f, r->allocator);
	fprintf(f, ",%s,", exp_status(p));
	csv_time(f, ok, "%.6f", ms(s->time));
	csv_time(f, ok, "%.4f", r->samples_per_s);
	csv_time(f, ok && slowdown > 0, "%.4f", slowdown);
	csv_time(f, ok, "%.6f", ms(s->compute_busy));
	csv_time(f, ok, "%.6f", ms(s->recompute));
	fprintf(f, "%llu,%.6f,", (unsigned long long)s->n_recompute,
		s->recompute_flops / 1e9);
	csv_time(f, ok, "%.6f", ms(s->stall[ST_STALL_H2D]));
	csv_time(f, ok, "%.6f", ms(s->stall[ST_STALL_D2H]));
	csv_time(f, ok, "%.6f", ms(s->stall[ST_STALL_MEMORY]));
	csv_time(f, ok, "%.6f", ms(s->stall[ST_STALL_ALLOC]));
	fprintf(f, "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
		   "%llu,%llu,%llu,%llu,",
		(unsigned long long)s->bytes_h2d,
		(unsigned long long)s->bytes_d2h,
		(unsigned long long)s->n_swap_out,
		(unsigned long long)s->n_swap_in, (unsigned long long)s->n_drop,
		(unsigned long long)s->n_swap_out_cancelled,
		(unsigned long long)s->n_release,
		(unsigned long long)s->n_algo_fallback,
		(unsigned long long)s->n_kernels,
		(unsigned long long)r->mem.peak_requested,
		(unsigned long long)r->mem.peak_allocated,
		(unsigned long long)r->mem.peak_reserved,
		(unsigned long long)r->pinned_peak,
		(unsigned long long)r->host_peak);
	csv_time(f, ok, "%.6f", ms(s->host_busy));
	fprintf(f, "%.6f,%.6f,%llu,%llu,%llu,%llu,%llu,", r->frag_at_peak,
		r->frag_max, (unsigned long long)r->mem.n_alloc,
		(unsigned long long)r->mem.n_free,
		(unsigned long long)r->mem.n_fail,
		(unsigned long long)r->mem.n_device_malloc,
		(unsigned long long)r->mem.n_device_free);
	csv_time(f, ok, "%.6f", ms(s->alloc_time));
	fprintf(f, "%llu,%llu,%llu,%llu,",
		(unsigned long long)s->n_cuda_malloc,
		(unsigned long long)s->n_cuda_free,
		(unsigned long long)s->n_host_alloc,
		(unsigned long long)r->events);
	/* settled_iter: empty when the policy does not learn or settling
	 * was not asked for; -1 when it had not settled by the cap */
	fprintf(f, "%llu,%llu,%.6f,%.6f,%d,", (unsigned long long)s->n_late_in,
		(unsigned long long)s->n_replan, ms(s->host_issue),
		ms(s->host_bound), r->warmup);
	if (r->settle_asked)
		fprintf(f, "%d", r->settled_iter);
	/* grow_warmup_iters: warm-up iterations added while the pools grew;
	 * grow_capped: 1 when grow_max stopped them with a pool still
	 * growing in a measured iteration; both empty when the rule was off (grow_max or warmup 0) */
	if (r->grow_asked)
		fprintf(f, ",%d,%d,", r->grow_extra, r->grow_capped ? 1 : 0);
	else
		fputs(",,,", f);
	if (r->oom.hit) {
		fprintf(f, "%d,", r->oom.iter);
		exp_csv_str(f, r->oom.op);
		fputc(',', f);
		exp_csv_str(f, r->oom.tensor);
		fprintf(f, ",%llu,", (unsigned long long)r->oom.bytes);
		exp_csv_str(f, r->oom.reason);
		fputc(',', f);
	} else {
		fputs(",,,,,", f);
	}
	exp_csv_str(f, error && error[0] ? error
		   : p->error[0]      ? p->error
		   : r->failed	      ? r->error
				      : "");
	fputc('\n', f);
}

/* ---- efficiency-optimal and scaling ------------------------------------ */

/* The baseline's answer (the first policy's largest batch), or NULL. */
static const struct exp_point *eff_base(const struct exp_eff *f)
{
	return f->base.best >= 0 ? &f->base.probe[f->base.best] : NULL;
}

/* One row of the scaling table: configuration cfg (0: the baseline at
 * its largest batch, 1: the tuned policy at k*) of workload f on n GPUs.
 * Returns false when that configuration has no run that trained. */
struct exp_scale {
	int64_t batch;	    /* per GPU */
	double t_iter;	    /* simulated iteration, s */
	double delta;	    /* Δ(n), s */
	double thr;	    /* samples/s of the cluster */
	double speedup;	    /* over the same configuration on 1 GPU */
	double speedup_base; /* over the baseline on 1 GPU (0: none) */
};

static bool scale_row(const struct exp *e, const struct exp_eff *f, int cfg,
		      int64_t n, struct exp_scale *o)
{
	const struct exp_point *b = eff_base(f);
	const struct exp_point *p = cfg ? (f->tuned ? &f->run : NULL) : b;
	memset(o, 0, sizeof *o);
	if (!point_trained(p))
		return false;
	o->batch = p->batch;
	o->t_iter = (double)p->st.steady.time / 1e9;
	o->delta = cl_delta(&e->cluster, n, f->param_bytes);
	o->thr = cl_throughput(n, o->batch, o->t_iter, o->delta);
	double one = cl_throughput(1, o->batch, o->t_iter, 0.0);
	o->speedup = one > 0 ? o->thr / one : 0.0;
	if (point_trained(b)) {
		double base1 = cl_throughput(
			1, b->batch, (double)b->st.steady.time / 1e9, 0.0);
		o->speedup_base = base1 > 0 ? o->thr / base1 : 0.0;
	}
	return true;
}

static void write_eff_rows(FILE *f, const struct exp *e,
			   const struct exp_result *r)
{
	fprintf(f, "point,workload,baseline_policy,baseline_max_batch,"
		   "baseline_samples_per_s,baseline_iter_time_ms,"
		   "baseline_probes,k_base,k_max,k_star,batch_gain,"
		   "t_iter_pred_ms,t_iter_pred_over_sim,learning_rate,"
		   "feature_maps,pinned,violations,run_pinned,"
		   "run_violations,profile_runs,param_bytes,policy,%s\n",
		stat_header);
	for (size_t i = 0; i < r->n_eff; i++) {
		const struct exp_eff *x = &r->eff[i];
		const struct exp_point *b = eff_base(x);
		const struct accudnn_tune_out *t = &x->tune;
		fprintf(f, "%zu,", i);
		exp_csv_str(f, e->wl[i].label);
		fputc(',', f);
		exp_csv_str(f, e->pol[0].label);
		fprintf(f, ",%lld,%.4f,%.6f,%zu,%lld,",
			b ? (long long)b->batch : 0LL,
			b ? b->st.samples_per_s : 0.0,
			b ? ms(b->st.steady.time) : 0.0, x->base.n_probe,
			(long long)x->k_base);
		if (x->tuned) {
			double sim = (double)x->run.st.steady.time / 1e9;
			fprintf(f, "%lld,%lld,%.4f,%.6f,%.4f,%.6g,%u,%u,%u,",
				(long long)t->k_max, (long long)t->k_star,
				b ? (double)t->k_star / (double)b->batch : 0.0,
				t->t_iter_pred * 1e3,
				sim > 0 ? t->t_iter_pred / sim : 0.0, t->lr,
				t->n_fm, t->n_pinned, t->n_violations);
			/* the runtime's own count of what it deployed
			 * (empty: the second policy is not accudnn) */
			if (x->assessed)
				fprintf(f, "%u,%u,", x->run_pinned,
					x->run_violations);
			else
				fputs(",,", f);
			fprintf(f, "%d,", t->profile_runs);
		} else {
			fputs(",,,,,,,,,,,,", f);
		}
		fprintf(f, "%llu,", (unsigned long long)x->param_bytes);
		exp_csv_str(f, e->pol[1].label);
		fputc(',', f);
		csv_stats(f, &x->run, x->error, exp_slowdown(e, r, &x->run));
	}
}

static void write_scaling_rows(FILE *f, const struct exp *e,
			       const struct exp_result *r)
{
	fputs("point,workload,policy,gpus,sync,batch_per_gpu,total_batch,"
	      "iter_time_ms,delta_ms,comm_fraction,samples_per_s,speedup,"
	      "speedup_vs_baseline_1gpu,param_bytes,status\n",
	      f);
	size_t row = 0;
	for (size_t i = 0; i < r->n_eff; i++)
		for (int cfg = 0; cfg < 2; cfg++)
			for (size_t g = 0; g < e->cluster.n_gpus; g++) {
				int64_t n = e->cluster.gpus[g];
				struct exp_scale x;
				bool ok = scale_row(e, &r->eff[i], cfg, n, &x);
				fprintf(f, "%zu,", row++);
				exp_csv_str(f, e->wl[i].label);
				fputc(',', f);
				exp_csv_str(f, e->pol[cfg].label);
				fprintf(f, ",%lld,%s,", (long long)n,
					cl_sync_names[e->cluster.sync]);
				if (ok)
					fprintf(f,
						"%lld,%lld,%.6f,%.6f,%.6f,"
						"%.4f,%.6f,%.6f,",
						(long long)x.batch,
						(long long)(x.batch * n),
						x.t_iter * 1e3, x.delta * 1e3,
						x.delta / (x.t_iter + x.delta),
						x.thr, x.speedup,
						x.speedup_base);
				else
					fputs(",,,,,,,,", f);
				fprintf(f, "%llu,%s\n",
					(unsigned long long)r->eff[i]
						.param_bytes,
					ok ? "ok" : "failed");
			}
}

static int write_csv(const struct exp *e, const struct exp_result *r,
		     const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	FILE *f = o.f;
	if (r->eff) {
		if (e->kind == EXP_SCALING)
			write_scaling_rows(f, e, r);
		else
			write_eff_rows(f, e, r);
	} else if (!r->srch) {
		fprintf(f, "point,workload,batch,budget_bytes,budget_fraction,"
			   "policy,%s\n",
			stat_header);
		for (size_t i = 0; i < r->n_pt; i++) {
			const struct exp_point *p = &r->pt[i];
			fprintf(f, "%zu,", i);
			exp_csv_str(f, e->wl[p->wl].label);
			/* budget_fraction: empty unless the sweep is over
			 * fractions (issue 34) */
			fprintf(f, ",%lld,%llu,", (long long)p->batch,
				(unsigned long long)p->budget);
			if (e->axis == EXP_AXIS_FRACTION)
				fprintf(f, "%.4f", p->fraction);
			fputc(',', f);
			exp_csv_str(f, e->pol[p->pol].label);
			fputc(',', f);
			csv_stats(f, p, NULL, exp_slowdown(e, r, p));
		}
	} else if (e->kind == EXP_MIN_POOL) {
		fprintf(f, "point,workload,batch,policy,aggregate_peak_bytes,"
			   "pool_bytes,fragmentation_bytes,restarts,fits,"
			   "limit_bytes,probes,%s\n",
			stat_header);
		for (size_t i = 0; i < r->n_srch; i++) {
			const struct exp_search *s = &r->srch[i];
			const struct exp_point *p = exp_row(r, i);
			uint64_t pool = p ? s->mp.pool : 0;
			fprintf(f, "%zu,", i);
			exp_csv_str(f, e->wl[s->wl].label);
			fprintf(f, ",%lld,",
				s->n_probe ? (long long)s->probe[0].batch : 0LL);
			exp_csv_str(f, e->pol[s->pol].label);
			fprintf(f, ",%llu,%llu,%llu,%u,%s,%llu,%zu,",
				(unsigned long long)s->peak,
				(unsigned long long)pool,
				(unsigned long long)(pool ? pool - s->peak : 0),
				s->mp.restarts, p ? "true" : "false",
				(unsigned long long)s->limit, s->n_probe);
			/* no answer: the last run (the one that failed) */
			csv_stats(f, p ? p : &s->probe[s->n_probe - 1],
				  s->error, exp_slowdown(e, r, p));
		}
	} else {
		bool mb = e->kind == EXP_MAX_BATCH;
		fprintf(f, "point,workload,policy,%s,%sprobes,%s\n",
			mb ? "max_batch" : "best_batch",
			mb ? "limit_reached,larger_fit_batch," : "",
			stat_header);
		for (size_t i = 0; i < r->n_srch; i++) {
			const struct exp_search *s = &r->srch[i];
			const struct exp_point *p = exp_row(r, i);
			fprintf(f, "%zu,", i);
			exp_csv_str(f, e->wl[s->wl].label);
			fputc(',', f);
			exp_csv_str(f, e->pol[s->pol].label);
			fprintf(f, ",%lld,", p ? (long long)p->batch : 0LL);
			if (mb)
				fprintf(f, "%d,%lld,", s->capped,
					(long long)s->larger_fit);
			fprintf(f, "%zu,", s->n_probe);
			/* nothing fitted: the smallest batch's run */
			csv_stats(f, p ? p : &s->probe[0], NULL,
				  exp_slowdown(e, r, p));
		}
	}
	return gms_out_commit(&o, err);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_iter(FILE *f, const struct st_iter *s)
{
	fprintf(f,
		"{\"time_ns\":%lld,\"compute_busy_ns\":%lld,"
		"\"recompute_ns\":%lld,\"stall_h2d_ns\":%lld,"
		"\"stall_d2h_ns\":%lld,\"stall_memory_ns\":%lld,"
		"\"stall_alloc_ns\":%lld,"
		"\"h2d_bytes\":%llu,\"d2h_bytes\":%llu,\"swap_outs\":%llu,"
		"\"swap_ins\":%llu,\"drops\":%llu,\"swap_out_cancels\":%llu,"
		"\"releases\":%llu,"
		"\"algo_fallbacks\":%llu,\"recomputes\":%llu,"
		"\"recompute_flops\":%.17g,\"kernels\":%llu,"
		"\"alloc_ns\":%lld,\"cuda_mallocs\":%llu,\"cuda_frees\":%llu,"
		"\"cuda_host_allocs\":%llu,\"late_swap_ins\":%llu,"
		"\"replans\":%llu,\"host_issue_ns\":%lld,"
		"\"host_bound_ns\":%lld}",
		(long long)s->time, (long long)s->compute_busy,
		(long long)s->recompute, (long long)s->stall[ST_STALL_H2D],
		(long long)s->stall[ST_STALL_D2H],
		(long long)s->stall[ST_STALL_MEMORY],
		(long long)s->stall[ST_STALL_ALLOC],
		(unsigned long long)s->bytes_h2d,
		(unsigned long long)s->bytes_d2h,
		(unsigned long long)s->n_swap_out,
		(unsigned long long)s->n_swap_in, (unsigned long long)s->n_drop,
		(unsigned long long)s->n_swap_out_cancelled,
		(unsigned long long)s->n_release,
		(unsigned long long)s->n_algo_fallback,
		(unsigned long long)s->n_recompute, s->recompute_flops,
		(unsigned long long)s->n_kernels, (long long)s->alloc_time,
		(unsigned long long)s->n_cuda_malloc,
		(unsigned long long)s->n_cuda_free,
		(unsigned long long)s->n_host_alloc,
		(unsigned long long)s->n_late_in,
		(unsigned long long)s->n_replan, (long long)s->host_issue,
		(long long)s->host_bound);
}

/* The policy's report as an array of its lines, each trimmed of the
 * blanks around it; blank lines left out. */
static void json_report(FILE *f, const char *text)
{
	fputc('[', f);
	bool first = true;
	for (const char *s = text ? text : ""; *s;) {
		size_t n = strcspn(s, "\n");
		const char *a = s, *b = s + n;
		while (a < b && (*a == ' ' || *a == '\t'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
			b--;
		if (b > a) {
			fputs(first ? "" : ",", f);
			gms_json_strn(f, a, (size_t)(b - a));
			first = false;
		}
		s += n + (s[n] == '\n');
	}
	fputc(']', f);
}

static void json_point(FILE *f, const struct exp *e,
		       const struct exp_point *p)
{
	const struct st_run *r = &p->st;
	const struct mem_stats *m = &r->mem;
	fputs("{\"workload\":", f);
	gms_json_str(f, e->wl[p->wl].label);
	fputs(",\"policy\":", f);
	gms_json_str(f, e->pol[p->pol].label);
	fputs(",\"allocator\":", f); /* the one used (st_run.allocator) */
	gms_json_str(f, r->allocator);
	fprintf(f, ",\"batch\":%lld,\"budget_bytes\":%llu,"
		   "\"budget_fraction\":%.17g,\"status\":\"%s\"",
		(long long)p->batch, (unsigned long long)p->budget,
		p->fraction, exp_status(p));
	fputs(",\"error\":", f);
	gms_json_str(f, p->error[0] ? p->error : r->error);
	fprintf(f, ",\"samples_per_s\":%.17g,\"steady\":", r->samples_per_s);
	json_iter(f, &r->steady);
	fprintf(f, ",\"warmup\":%d,\"settle_extra\":%d", r->warmup,
		r->settle_extra);
	if (r->settle_asked)
		fprintf(f, ",\"settled_iter\":%d", r->settled_iter);
	if (r->grow_asked)
		fprintf(f, ",\"grow_extra\":%d,\"grow_capped\":%s",
			r->grow_extra, r->grow_capped ? "true" : "false");
	fputs(",\"iterations\":[", f);
	for (int i = 0; i < r->n_iter; i++) {
		if (i)
			fputc(',', f);
		json_iter(f, &r->iter[i]);
	}
	fprintf(f,
		"],\"memory\":{\"budget\":%llu,\"peak_requested\":%llu,"
		"\"peak_allocated\":%llu,\"peak_reserved\":%llu,"
		"\"allocations\":%llu,\"frees\":%llu,\"failures\":%llu,"
		"\"device_mallocs\":%llu,\"device_frees\":%llu,"
		"\"frag_at_peak\":%.17g,\"frag_max\":%.17g,"
		"\"pinned_peak\":%llu,\"host_peak\":%llu},\"events\":%llu",
		(unsigned long long)m->budget,
		(unsigned long long)m->peak_requested,
		(unsigned long long)m->peak_allocated,
		(unsigned long long)m->peak_reserved,
		(unsigned long long)m->n_alloc, (unsigned long long)m->n_free,
		(unsigned long long)m->n_fail,
		(unsigned long long)m->n_device_malloc,
		(unsigned long long)m->n_device_free, r->frag_at_peak,
		r->frag_max, (unsigned long long)r->pinned_peak,
		(unsigned long long)r->host_peak,
		(unsigned long long)r->events);
	if (r->oom.hit) {
		fprintf(f, ",\"oom\":{\"iteration\":%d,\"op\":", r->oom.iter);
		gms_json_str(f, r->oom.op);
		fputs(",\"tensor\":", f);
		gms_json_str(f, r->oom.tensor);
		fprintf(f, ",\"bytes\":%llu,\"largest_free\":%llu,\"reason\":",
			(unsigned long long)r->oom.bytes,
			(unsigned long long)r->oom.largest_free);
		gms_json_str(f, r->oom.reason);
		fputc('}', f);
	}
	fputs(",\"policy_report\":", f);
	json_report(f, r->pol_report);
	fputc('}', f);
}

/* A min-pool search: its answer and every attempt (probe 0 is the
 * aggregate-peak run, not an attempt). */
static void json_min_pool(FILE *f, const struct exp_search *s, bool fit)
{
	fprintf(f, ",\"aggregate_peak_bytes\":%llu,\"pool_bytes\":%llu,"
		   "\"restarts\":%u,\"fits\":%s,\"limit_bytes\":%llu,"
		   "\"search_error\":",
		(unsigned long long)s->peak,
		(unsigned long long)(fit ? s->mp.pool : 0), s->mp.restarts,
		fit ? "true" : "false", (unsigned long long)s->limit);
	gms_json_str(f, s->error);
	fputs(",\"attempts\":[", f);
	for (size_t k = 1; k < s->n_probe; k++) {
		const struct exp_point *p = &s->probe[k];
		fprintf(f, "%s{\"pool_bytes\":%llu,\"status\":\"%s\"",
			k > 1 ? "," : "", (unsigned long long)p->pool_size,
			exp_status(p));
		if (p->st.oom.hit)
			fprintf(f, ",\"fail_bytes\":%llu,"
				   "\"largest_free_bytes\":%llu",
				(unsigned long long)p->st.oom.bytes,
				(unsigned long long)p->st.oom.largest_free);
		fputc('}', f);
	}
	fputc(']', f);
}

/* efficiency-optimal and scaling: per workload the baseline's search,
 * the tuner's answer and the run at k*; scaling adds the cluster and its
 * table. */
static void json_eff(FILE *f, const struct exp *e, const struct exp_result *r)
{
	if (e->kind == EXP_SCALING) {
		const struct cl_cluster *c = &e->cluster;
		fprintf(f, "\"cluster\":{\"sync\":\"%s\",\"net_bytes_per_s\":"
			   "%.17g,\"net_latency_ns\":%lld,\"pcie_h2d_bytes_per_s\":"
			   "%.17g,\"pcie_d2h_bytes_per_s\":%.17g,\"gpus\":[",
			cl_sync_names[c->sync], c->net_bw,
			(long long)c->net_latency, c->pcie_h2d, c->pcie_d2h);
		for (size_t g = 0; g < c->n_gpus; g++)
			fprintf(f, "%s%lld", g ? "," : "", (long long)c->gpus[g]);
		fputs("]},\n\"scaling\":[", f);
		size_t row = 0;
		for (size_t i = 0; i < r->n_eff; i++)
			for (int cfg = 0; cfg < 2; cfg++)
				for (size_t g = 0; g < c->n_gpus; g++) {
					struct exp_scale x;
					bool ok = scale_row(e, &r->eff[i], cfg,
							    c->gpus[g], &x);
					fputs(row++ ? ",\n {\"workload\":"
						    : "\n {\"workload\":",
					      f);
					gms_json_str(f, e->wl[i].label);
					fputs(",\"policy\":", f);
					gms_json_str(f, e->pol[cfg].label);
					fprintf(f,
						",\"gpus\":%lld,\"ok\":%s,"
						"\"batch_per_gpu\":%lld,"
						"\"iter_time_s\":%.17g,"
						"\"delta_s\":%.17g,"
						"\"samples_per_s\":%.17g,"
						"\"speedup\":%.17g,"
						"\"speedup_vs_baseline_1gpu\":"
						"%.17g}",
						(long long)c->gpus[g],
						ok ? "true" : "false",
						(long long)x.batch, x.t_iter,
						x.delta, x.thr, x.speedup,
						x.speedup_base);
				}
		fputs("],\n", f);
	}
	fputs("\"efficiency\":[", f);
	for (size_t i = 0; i < r->n_eff; i++) {
		const struct exp_eff *x = &r->eff[i];
		const struct accudnn_tune_out *t = &x->tune;
		const struct exp_point *b = eff_base(x);
		fputs(i ? ",\n {\"workload\":" : "\n {\"workload\":", f);
		gms_json_str(f, e->wl[i].label);
		fprintf(f, ",\"baseline_max_batch\":%lld,\"k_base\":%lld,"
			   "\"param_bytes\":%llu,\"tuned\":%s",
			b ? (long long)b->batch : 0LL, (long long)x->k_base,
			(unsigned long long)x->param_bytes,
			x->tuned ? "true" : "false");
		if (x->tuned)
			fprintf(f, ",\"tune\":{\"k_base\":%lld,\"k_max\":%lld,"
				   "\"k_star\":%lld,\"t_iter_pred_s\":%.17g,"
				   "\"learning_rate\":%.17g,\"feature_maps\":%u,"
				   "\"pinned\":%u,\"violations\":%u,"
				   "\"profile_runs\":%d}",
				(long long)t->k_base, (long long)t->k_max,
				(long long)t->k_star, t->t_iter_pred, t->lr,
				t->n_fm, t->n_pinned, t->n_violations,
				t->profile_runs);
		if (x->assessed)
			fprintf(f, ",\"run_pinned\":%u,\"run_violations\":%u",
				x->run_pinned, x->run_violations);
		fputs(",\"error\":", f);
		gms_json_str(f, x->error);
		fputs(",\"baseline_probes\":[", f);
		for (size_t k = 0; k < x->base.n_probe; k++) {
			fputs(k ? ",\n  " : "\n  ", f);
			json_point(f, e, &x->base.probe[k]);
		}
		fputs("]", f);
		if (x->tuned) {
			fputs(",\n \"run\":", f);
			json_point(f, e, &x->run);
		}
		fputs("}", f);
	}
}

/* A whole file as a JSON string (the exact inputs); "" if unreadable. */
static void json_file(FILE *f, const char *path)
{
	FILE *in = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0;
	if (in) {
		fseek(in, 0, SEEK_END);
		long len = ftell(in);
		fseek(in, 0, SEEK_SET);
		if (len > 0 && (buf = malloc((size_t)len + 1)) != NULL) {
			n = fread(buf, 1, (size_t)len, in);
			buf[n] = '\0';
		}
		fclose(in);
	}
	gms_json_str(f, buf ? buf : "");
	free(buf);
}

static int write_json(const struct exp *e, const struct exp_result *r,
		      const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	FILE *f = o.f;
	fputs("{\n\"gpumemsim\":", f);
	gms_json_str(f, GMS_VERSION);
	fputs(",\n\"experiment\":", f);
	gms_json_str(f, e->name);
	fputs(",\n\"file\":", f);
	gms_json_str(f, e->path);
	fputs(",\n\"file_text\":", f);
	json_file(f, e->path);
	fputs(",\n\"hw\":{\"name\":", f);
	gms_json_str(f, e->hw.name);
	fputs(",\"path\":", f);
	gms_json_str(f, e->hw.path);
	fputs(",\"text\":", f);
	json_file(f, e->hw.path);
	fprintf(f, "},\n\"settings\":{\"measure\":\"%s\",\"allocator\":",
		exp_kind_names[e->kind]);
	gms_json_str(f, e->allocator);
	fprintf(f, ",\"budget\":%llu,\"pool_size\":%llu,\"iterations\":%d,"
		   "\"warmup\":%d,\"settle_max\":%d,\"grow_max\":%d,"
		   "\"host_pinned\":%llu},\n\"workloads\":[",
		(unsigned long long)e->budget,
		(unsigned long long)e->pool_size, e->iterations, e->warmup,
		e->settle_max, e->grow_max,
		(unsigned long long)e->hw.host_pinned);
	for (size_t i = 0; i < e->n_wl; i++) {
		const struct exp_workload *w = &e->wl[i];
		fputs(i ? ",\n {\"label\":" : "\n {\"label\":", f);
		gms_json_str(f, w->label);
		if (w->src == EXP_SRC_GEN) {
			fputs(",\"generator\":", f);
			gms_json_str(f, w->gen->name);
			fprintf(f, ",\"batch\":%lld,\"size\":%lld,"
				   "\"framework\":\"%s\",\"optimizer\":\"%s\"",
				(long long)w->batch, (long long)w->args.size,
				wl_framework_names[w->args.framework],
				wl_optim_names[w->args.optimizer]);
			/* written only when not fp32, and for language models
			 * (the results of the other workloads stay as they
			 * were before these keys) */
			if (w->args.precision != WL_PREC_FP32 || w->gen->arch)
				fprintf(f, ",\"precision\":\"%s\"",
					wl_precision_names[w->args.precision]);
			if (w->gen->arch) {
				const struct wl_arch *a = &w->args.arch;
				fprintf(f, ",\"attention\":\"%s\",\"loss\":"
					   "\"%s\",\"layers\":%lld,\"hidden\":"
					   "%lld,\"heads\":%lld,\"kv_heads\":"
					   "%lld,\"ffn\":%lld,\"vocab\":%lld,"
					   "\"lora\":%lld",
					wl_attn_names[a->attention],
					wl_loss_names[a->loss],
					(long long)a->layers,
					(long long)a->hidden,
					(long long)a->heads,
					(long long)a->kv_heads,
					(long long)a->ffn,
					(long long)a->vocab,
					(long long)a->lora);
			}
		} else {
			fputs(w->src == EXP_SRC_TRACE ? ",\"trace\":"
						      : ",\"file\":",
			      f);
			gms_json_str(f, w->path);
			fprintf(f, ",\"batch\":%lld", (long long)w->batch);
		}
		if (r->baseline)
			fprintf(f, ",\"baseline_peak_bytes\":%llu",
				(unsigned long long)r->baseline[i]);
		fputc('}', f);
	}
	fputs("],\n\"policies\":[", f);
	for (size_t i = 0; i < e->n_pol; i++) {
		fputs(i ? "," : "", f);
		gms_json_str(f, e->pol[i].label);
	}
	fputs("],\n", f);
	if (r->eff) {
		json_eff(f, e, r);
	} else if (!r->srch) {
		fputs("\"points\":[", f);
		for (size_t i = 0; i < r->n_pt; i++) {
			fputs(i ? ",\n " : "\n ", f);
			json_point(f, e, &r->pt[i]);
		}
	} else {
		fputs("\"searches\":[", f);
		for (size_t i = 0; i < r->n_srch; i++) {
			const struct exp_search *s = &r->srch[i];
			const struct exp_point *b = exp_row(r, i);
			fputs(i ? ",\n {\"workload\":" : "\n {\"workload\":",
			      f);
			gms_json_str(f, e->wl[s->wl].label);
			fputs(",\"policy\":", f);
			gms_json_str(f, e->pol[s->pol].label);
			fprintf(f, ",\"answer\":%lld",
				b ? (long long)b->batch : 0LL);
			if (e->kind == EXP_MAX_BATCH)
				fprintf(f, ",\"limit_reached\":%s,"
					   "\"larger_fit_batch\":%lld",
					s->capped ? "true" : "false",
					(long long)s->larger_fit);
			if (e->kind == EXP_MIN_POOL)
				json_min_pool(f, s, b != NULL);
			fputs(",\"probes\":[", f);
			for (size_t k = 0; k < s->n_probe; k++) {
				fputs(k ? ",\n  " : "\n  ", f);
				json_point(f, e, &s->probe[k]);
			}
			fputs("]}", f);
		}
	}
	fputs("]\n}\n", f);
	return gms_out_commit(&o, err);
}

/* ---- plot ---------------------------------------------------------------- */

/* A label in the plot's data or titles: a control character (a line
 * break in a label wrote lines of data into plot.dat, issue 38) becomes
 * '?'; with `blanks`, blanks and quotes become '_' too. */
static void clean(FILE *f, const char *s, bool blanks)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		fputc(c < 0x20 || c == 0x7f			    ? '?'
		      : blanks && (c == ' ' || c == '\'' || c == '"') ? '_'
								    : c,
		      f);
	}
}

/* A title without blanks (gnuplot's word() splits on them). */
static void word(FILE *f, const char *s) { clean(f, s, true); }

/* A series' comment line in the plot's data: "# WORKLOAD POLICY". */
static void comment(FILE *f, const char *wl, const char *pol)
{
	fputs("# ", f);
	clean(f, wl, false);
	fputc(' ', f);
	clean(f, pol, false);
}

/* A budget for a plot's title: "4.0_GiB", or "whole_device" for 0 (the
 * device's usable memory). */
static void budget_word(FILE *t, uint64_t budget)
{
	if (budget)
		fprintf(t, "%.1f_GiB", (double)budget / (double)GMS_GIB);
	else
		fputs("whole_device", t);
}

/* A series' title word for the plots (results/plot-lib.gp reads it):
 * "PANEL|POLICY", PANEL the workload's label, then "@batch=N" when every
 * point of the series has that batch, "@budget=B" when every point has
 * that budget (issue 34: batch and budget in the panels' titles). */
static void title_word(FILE *t, const struct exp *e, size_t w, size_t q,
		       const struct exp_point *const *pts, size_t n)
{
	word(t, e->wl[w].label);
	bool one_batch = n > 0, one_budget = n > 0;
	for (size_t i = 1; i < n; i++) {
		one_batch = one_batch && pts[i]->batch == pts[0]->batch;
		one_budget = one_budget && pts[i]->budget == pts[0]->budget;
	}
	if (one_batch)
		fprintf(t, "@batch=%lld", (long long)pts[0]->batch);
	if (one_budget) {
		fputs("@budget=", t);
		budget_word(t, pts[0]->budget);
	}
	fputc('|', t);
	word(t, e->pol[q].label);
}

/* A series of (workload w, policy q): its comment in the data and its
 * title (blank-separated) in the titles. */
static void series_head(FILE *f, FILE *t, const struct exp *e, size_t w,
			size_t q, const struct exp_point *const *pts, size_t n,
			size_t *series)
{
	comment(f, e->wl[w].label, e->pol[q].label);
	fputc('\n', f);
	fprintf(t, "%s", (*series)++ ? " " : "");
	title_word(t, e, w, q, pts, n);
}

/* A DTR Pareto sweep: budget fractions, every policy `dtr` (the plot of
 * the DTR paper's Figure 2: overhead against the budget ratio, a panel
 * per model, a curve per heuristic). */
static bool pareto(const struct exp *e)
{
	if (e->axis != EXP_AXIS_FRACTION)
		return false;
	for (size_t q = 0; q < e->n_pol; q++)
		if (strcmp(e->pol[q].name, "dtr"))
			return false;
	return true;
}

/* Compute overhead of a point: its steady iteration time over the kernel
 * time of its own ops (compute busy less recomputation); simrd's
 * clock / compute (dtr-semantics.md 0). NaN when it did not finish. */
static double overhead(const struct exp_point *p)
{
	sim_time_t own = p->st.steady.compute_busy - p->st.steady.recompute;
	if (strcmp(exp_status(p), "ok") || own <= 0)
		return NAN;
	return (double)p->st.steady.time / (double)own;
}

static int cmp_batch(const void *a, const void *b)
{
	const struct exp_point *x = *(const struct exp_point *const *)a;
	const struct exp_point *y = *(const struct exp_point *const *)b;
	return (x->batch > y->batch) - (x->batch < y->batch);
}

/* The plot's data (blocks separated by two blank lines, one per series)
 * and the series titles; returns the gnuplot script's name:
 * plot-empty.gp when no row has a value to draw (a sweep where every
 * point ran out of memory is a legal result, issue 38: the kind's own
 * script fails on its empty range and took the whole set with it). */
static const char *write_plot_data(const struct exp *e,
				   const struct exp_result *r,
				   const char *path, char *titles, size_t tn,
				   char *xlabel, size_t xn, gms_err *err)
{
	/* rows with a value: max-batch's and eff's tables draw zeros */
	size_t drawn = e->kind == EXP_MAX_BATCH || e->kind == EXP_EFF ||
		       e->kind == EXP_RUN;
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return NULL;
	FILE *f = o.f;
	FILE *t = fmemopen(titles, tn, "w");
	const char *script = NULL;
	snprintf(xlabel, xn, "batch size");
	if (!t) {
		gms_out_abort(&o);
		gms_errf(err, "out of memory");
		return NULL;
	}
	switch (e->kind) {
	case EXP_RUN:
		script = "plot-run.gp";
		/* the columns; after allocated and reserved, allocated by
		 * tensor kind and the host bytes holding tensors
		 * (ex_mem_sample; results/plot-kinds.gp stacks them) */
		fputs("# time_ms allocated_MiB reserved_MiB", f);
		for (int j = 0; j < WL_KIND_COUNT; j++)
			fprintf(f, " %s_MiB", wl_kind_name((enum wl_kind)j));
		fputs(" host_MiB\n", f);
		for (size_t i = 0; i < r->n_pt; i++) {
			const struct exp_point *p = &r->pt[i];
			comment(f, e->wl[p->wl].label, e->pol[p->pol].label);
			fprintf(f, " batch %lld\n", (long long)p->batch);
			fprintf(t, "%s", i ? " " : "");
			title_word(t, e, p->wl, p->pol,
				   (const struct exp_point *const[]){p}, 1);
			/* the plot marks where a run stopped (issue 34) */
			fprintf(t, "|%s", exp_status(p));
			/* the series' title in the file too, for plots drawn
			 * from it later (results/plots.sh) */
			fputs("# title ", f);
			title_word(f, e, p->wl, p->pol,
				   (const struct exp_point *const[]){p}, 1);
			fprintf(f, "|%s\n", exp_status(p));
			for (size_t k = 0; p->tl && k < p->tl->n; k++) {
				const struct tr_event *ev = &p->tl->ev[k];
				if (ev->what != TR_MEM)
					continue;
				const struct tr_kinds *kd = &p->tl->kinds[ev->id];
				/* printf's "%.6f" of ms and MiB, from the
				 * integers (common.h), a line one fwrite */
				char line[(WL_KIND_COUNT + 4) * GMS_FIXED6_MAX];
				size_t n = gms_fmt_ms6(line, ev->t0);
				line[n++] = ' ';
				n += gms_fmt_mib6(line + n, ev->a);
				line[n++] = ' ';
				n += gms_fmt_mib6(line + n, ev->b);
				for (int j = 0; j < WL_KIND_COUNT; j++) {
					line[n++] = ' ';
					n += gms_fmt_mib6(line + n, kd->kind[j]);
				}
				line[n++] = ' ';
				n += gms_fmt_mib6(line + n, kd->host);
				line[n++] = '\n';
				fwrite(line, 1, n, f);
			}
			if (!p->tl || !p->tl->n) {
				fputs("0 0 0", f);
				for (int j = 0; j <= WL_KIND_COUNT; j++)
					fputs(" 0", f);
				fputc('\n', f);
			}
			fputs("\n\n", f);
		}
		break;
	case EXP_SWEEP: {
		script = "plot-sweep.gp";
		/* the Pareto plot's rows: "fraction overhead" */
		bool par = pareto(e);
		if (par)
			script = "plot-pareto.gp";
		if (e->axis == EXP_AXIS_BUDGET)
			snprintf(xlabel, xn, "device budget (GiB)");
		if (e->axis == EXP_AXIS_FRACTION)
			snprintf(xlabel, xn,
				 "budget (fraction of the baseline peak)");
		/* dtr on DTR logs: both presets' fractions are of simrd's
		 * baseline peak (exp_run.c, dtr_full_fraction_budget) */
		bool logs = par;
		for (size_t w = 0; w < e->n_wl; w++)
			logs = logs && e->wl[w].src == EXP_SRC_TRACE;
		if (logs)
			snprintf(xlabel, xn, "budget ratio (of simrd's baseline "
					     "peak, both presets)");
		size_t nv = e->n_values, series = 0;
		for (size_t w = 0; w < e->n_wl; w++)
			for (size_t q = 0; q < e->n_pol; q++) {
				const struct exp_point *pts[nv ? nv : 1];
				for (size_t v = 0; v < nv; v++)
					pts[v] = &r->pt[(w * nv + v) * e->n_pol +
							q];
				series_head(f, t, e, w, q, pts, nv, &series);
				for (size_t v = 0; v < nv; v++) {
					const struct exp_point *p =
						&r->pt[(w * nv + v) * e->n_pol +
						       q];
					double x = e->axis == EXP_AXIS_BATCH
							   ? (double)p->batch
						   : e->axis == EXP_AXIS_BUDGET
							   ? (double)p->budget /
								     (double)GMS_GIB
							   : p->fraction;
					if (par && isnan(overhead(p)))
						fprintf(f, "%.6f NaN\n", x);
					else if (par)
						drawn += fprintf(f,
								 "%.6f %.6f\n",
								 x,
								 overhead(p)) >
							 0;
					else if (strcmp(exp_status(p), "ok"))
						fprintf(f, "%.6f NaN NaN\n", x);
					else
						drawn += fprintf(
							f, "%.6f %.6f %.6f\n",
							x, p->st.samples_per_s,
							ms(p->st.steady.time)) > 0;
				}
				fputs("\n\n", f);
			}
		break;
	}
	case EXP_BEST:
		script = "plot-sweep.gp";
		for (size_t i = 0; i < r->n_srch; i++) {
			const struct exp_search *s = &r->srch[i];
			const struct exp_point **ord =
				calloc(s->n_probe ? s->n_probe : 1,
				       sizeof *ord);
			if (!ord)
				break;
			for (size_t k = 0; k < s->n_probe; k++)
				ord[k] = &s->probe[k];
			qsort(ord, s->n_probe, sizeof *ord, cmp_batch);
			comment(f, e->wl[s->wl].label, e->pol[s->pol].label);
			fputc('\n', f);
			fprintf(t, "%s", i ? " " : "");
			title_word(t, e, s->wl, s->pol, ord, 0);
			for (size_t k = 0; k < s->n_probe; k++) {
				const struct exp_point *p = ord[k];
				if (strcmp(exp_status(p), "ok"))
					fprintf(f, "%lld NaN NaN\n",
						(long long)p->batch);
				else
					drawn += fprintf(f, "%lld %.6f %.6f\n",
							 (long long)p->batch,
							 p->st.samples_per_s,
							 ms(p->st.steady.time)) >
						 0;
			}
			fputs("\n\n", f);
			free(ord);
		}
		break;
	case EXP_MAX_BATCH:
		script = "plot-max-batch.gp";
		/* a table: one row per workload, one column per policy (the
		 * largest batch, 0: none), then one per policy (samples/s at
		 * that batch, 0: none; the bars' labels, issue 34) */
		fputs("workload", f);
		for (int k = 0; k < 2; k++)
			for (size_t q = 0; q < e->n_pol; q++) {
				fputc(' ', f);
				word(f, e->pol[q].label);
				if (k)
					fputs(":samples_per_s", f);
			}
		fputc('\n', f);
		for (size_t w = 0; w < e->n_wl; w++) {
			word(f, e->wl[w].label);
			for (size_t q = 0; q < e->n_pol; q++) {
				const struct exp_point *p =
					exp_row(r, w * e->n_pol + q);
				fprintf(f, " %lld", p ? (long long)p->batch : 0LL);
			}
			for (size_t q = 0; q < e->n_pol; q++) {
				const struct exp_point *p =
					exp_row(r, w * e->n_pol + q);
				fprintf(f, " %.1f",
					point_trained(p) ? p->st.samples_per_s : 0.0);
			}
			fputc('\n', f);
		}
		fprintf(t, "%zu", e->n_pol);
		break;
	case EXP_MIN_POOL:
		script = "plot-min-pool.gp";
		/* one block per workload (a panel, issue 34: the policies
		 * on the x axis, not 60 legend entries), one row per policy:
		 * "policy peak pool", MiB (NaN: no answer) */
		for (size_t w = 0; w < e->n_wl; w++) {
			comment(f, e->wl[w].label, "");
			fputc('\n', f);
			fprintf(t, "%s", w ? " " : "");
			word(t, e->wl[w].label);
			const struct exp_search *s0 = &r->srch[w * e->n_pol];
			if (s0->n_probe)
				fprintf(t, "@batch=%lld",
					(long long)s0->probe[0].batch);
			for (size_t q = 0; q < e->n_pol; q++) {
				size_t i = w * e->n_pol + q;
				const struct exp_search *s = &r->srch[i];
				double mib = (double)GMS_MIB;
				word(f, e->pol[q].label);
				if (s->peak)
					drawn += fprintf(f, " %.3f",
							 (double)s->peak /
								 mib) > 0;
				else
					fputs(" NaN", f);
				if (exp_row(r, i))
					drawn += fprintf(f, " %.3f",
							 (double)s->mp.pool /
								 mib) > 0;
				else
					fputs(" NaN", f);
				fputc('\n', f);
			}
			fputs("\n\n", f);
		}
		break;
	case EXP_EFF:
		script = "plot-eff.gp";
		/* a table: per workload the two batches and their samples/s
		 * (0: none) */
		fputs("workload baseline_batch k_star baseline_samples_per_s "
		      "tuned_samples_per_s\n",
		      f);
		for (size_t w = 0; w < r->n_eff; w++) {
			const struct exp_eff *x = &r->eff[w];
			const struct exp_point *b = eff_base(x);
			bool ok = x->tuned && point_trained(&x->run);
			word(f, e->wl[w].label);
			fprintf(f, " %lld %lld %.4f %.4f\n",
				b ? (long long)b->batch : 0LL,
				x->tuned ? (long long)x->tune.k_star : 0LL,
				point_trained(b) ? b->st.samples_per_s : 0.0,
				ok ? x->run.st.samples_per_s : 0.0);
		}
		fputs("baseline tuned", t);
		break;
	case EXP_SCALING: {
		script = "plot-scaling.gp";
		snprintf(xlabel, xn, "GPUs");
		size_t series = 0;
		for (size_t w = 0; w < r->n_eff; w++)
			for (int cfg = 0; cfg < 2; cfg++) {
				series_head(f, t, e, w, (size_t)cfg, NULL, 0,
					    &series);
				for (size_t g = 0; g < e->cluster.n_gpus; g++) {
					int64_t n = e->cluster.gpus[g];
					struct exp_scale x;
					if (scale_row(e, &r->eff[w], cfg, n, &x))
						drawn += fprintf(
							f, "%lld %.6f %.6f\n",
							(long long)n, x.thr,
							x.speedup) > 0;
					else
						fprintf(f, "%lld NaN NaN\n",
							(long long)n);
				}
				fputs("\n\n", f);
			}
		break;
	}
	default:
		break;
	}
	fclose(t);
	if (gms_out_commit(&o, err) < 0)
		return NULL;
	return drawn ? script : "plot-empty.gp";
}

/* Append s to a gnuplot single-quoted string ('' stands for '). */
static void gp_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* One gnuplot drawing the png and then the svg of a plot. One process
 * for both, not one each at once (issue 18): each costs 25-45 ms, most
 * of it starting (its dynamic linker resolving 80 libraries: 30% of a
 * png's samples), and two at once on two busy cores took 130 ms where
 * one drawing both took 77 (max-batch.yaml's plot, median of 6, load
 * average 1.7); the images are the same bytes. */
struct gp_job {
	pid_t pid;			 /* the process, 0: not started */
	char *expr;			 /* its -e commands */
	char *see;			 /* the png's variables alone: the
					    command that shows why it
					    failed (gp_finish) */
	char sp[GMS_PATH_MAX + 32];	 /* the script's path */
	char tmp[2][GMS_PATH_MAX + 32];	 /* the images' temporaries */
	const char *out[2];		 /* where they go: png, svg */
};

/* The variables of one image (gp_start). */
static void gp_vars(FILE *ef, const char *const *names,
		    const char *const *vals, int n)
{
	for (int i = 0; i < n; i++) {
		fprintf(ef, "%s=", names[i]);
		gp_quoted(ef, vals[i]);
		fputs("; ", ef);
	}
}

/* Start gnuplot on a script from <datadir>/results/ for the png
 * terminal, then (after `reset`, so that nothing carries over) the svg;
 * the images go to their outputs' temporaries. */
static int gp_start(struct gp_job *j, const char *script, const char *dat,
		    const char *titles, const char *xlabel, const char *title,
		    const char *png, const char *svg, gms_err *err)
{
	memset(j, 0, sizeof *j);
	const char *out[2] = {png, svg}, *term[2] = {"png", "svg"};
	snprintf(j->sp, sizeof j->sp, "%s/results/%s", hw_datadir(), script);
	for (int k = 0; k < 2; k++) {
		j->out[k] = out[k];
		snprintf(j->tmp[k], sizeof j->tmp[k], "%s.tmp", out[k]);
	}
	/* the png pass's variables (j->see), then the commands: load the
	 * script, reset, the svg's out and term, load it again */
	size_t slen = 0, len = 0;
	FILE *sf = open_memstream(&j->see, &slen);
	if (!sf)
		return gms_errf(err, "out of memory");
	/* lib: the helpers every script loads (palette, titles) */
	char lib[GMS_PATH_MAX + 32];
	snprintf(lib, sizeof lib, "%s/results/plot-lib.gp", hw_datadir());
	const char *names[] = {"dat", "titles", "xlabel", "ptitle", "lib",
			       "out", "term"};
	const char *vals[] = {dat,  titles,    xlabel, title,
			      lib, j->tmp[0], term[0]};
	gp_vars(sf, names, vals, 7);
	fclose(sf);
	FILE *ef = open_memstream(&j->expr, &len);
	if (!ef) {
		free(j->see);
		return gms_errf(err, "out of memory");
	}
	fprintf(ef, "%sload ", j->see);
	gp_quoted(ef, j->sp);
	fputs("; reset; ", ef);
	gp_vars(ef, names + 5, (const char *const[]){j->tmp[1], term[1]}, 2);
	fputs("load ", ef);
	gp_quoted(ef, j->sp);
	fclose(ef);
	char *argv[] = {"gnuplot", "-e", j->expr, NULL};
	/* gnuplot warns about series with no points (a policy that ran out
	 * of memory everywhere): keep its chatter out, say on failure how to
	 * see it */
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	int rc = posix_spawnp(&j->pid, "gnuplot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		j->pid = 0;
		free(j->expr);
		free(j->see);
		j->expr = j->see = NULL;
		return gms_errf(err, "cannot run gnuplot: %s (install it: "
				     "make deps)",
				strerror(rc));
	}
	return 0;
}

/* Wait for j and rename its images into place. */
static int gp_finish(struct gp_job *j, gms_err *err)
{
	if (!j->pid)
		return -1; /* never started: gp_start said why */
	int st, rc = 0;
	if (waitpid(j->pid, &st, 0) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		rc = gms_errf(err, "gnuplot failed on %s; to see why: "
				   "gnuplot -e \"%.400s\" %s",
			      j->sp, j->see, j->sp);
	for (int k = 0; k < 2 && rc == 0; k++) {
		if (gms_out_check(j->out[k], err) < 0)
			rc = -1;
		else if (rename(j->tmp[k], j->out[k]) != 0)
			rc = gms_errf(err, "%s: %s", j->out[k],
				      strerror(errno));
	}
	for (int k = 0; k < 2; k++)
		unlink(j->tmp[k]); /* what is left of a failure */
	free(j->expr);
	free(j->see);
	j->expr = j->see = NULL;
	j->pid = 0;
	return rc;
}

int exp_gnuplot(const char *script, const char *dat, const char *titles,
		const char *xlabel, const char *title, const char *png,
		const char *svg, gms_err *err)
{
	struct gp_job g;
	if (gp_start(&g, script, dat, titles, xlabel, title, png, svg, err) <
	    0)
		return -1;
	return gp_finish(&g, err);
}

/* scaling: the efficiency-optimal table its rows come from, tuning.csv. */
static int write_tuning(const struct exp *e, const struct exp_result *r,
			const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	write_eff_rows(o.f, e, r);
	return gms_out_commit(&o, err);
}

/* The files of a result set (exp_write writes those that apply). */
static const char *const set_files[] = {"summary.csv", "runs.json",
					"tuning.csv",  "plot.dat",
					"plot.png",    "plot.svg", NULL};

static int set_recover(const char *dir, const char *mine, gms_err *err);

int exp_check_out(const struct exp *e, const struct exp_opts *o,
		  gms_err *err)
{
	char p[GMS_PATH_MAX + 32];
	/* the folders this call makes go again when a check fails: a bad
	 * --trace left an empty results directory (issue 38) */
	snprintf(p, sizeof p, "%s", e->out_dir);
	size_t have = strlen(p);
	while (have && access(p, F_OK) != 0) {
		while (have && p[have - 1] != '/')
			have--;
		while (have && p[have - 1] == '/')
			have--;
		p[have] = '\0';
	}
	if (gms_mkdirs(e->out_dir, err) < 0)
		return gms_err_prefix(err, "output directory");
	int rc = set_recover(e->out_dir, NULL, err);
	for (int i = 0; rc == 0 && set_files[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", e->out_dir, set_files[i]);
		rc = gms_out_check(p, err);
	}
	snprintf(p, sizeof p, "%s/%s", e->out_dir, set_files[0]);
	if (rc == 0 && gms_out_probe(p, err) < 0)
		rc = gms_err_prefix(err, "output directory");
	if (rc == 0 && o && o->trace && gms_out_probe(o->trace, err) < 0)
		rc = gms_err_prefix(err, "--trace");
	if (rc == 0 && o && o->schedule && gms_out_probe(o->schedule, err) < 0)
		rc = gms_err_prefix(err, "--schedule");
	snprintf(p, sizeof p, "%s", e->out_dir);
	for (size_t n = strlen(p); rc < 0 && n > have; n--)
		if (p[n] == '/' || !p[n]) { /* each made folder, deepest first */
			p[n] = '\0';
			rmdir(p);
		}
	return rc;
}

/* Write the files of the set that apply into dir. */
static int write_set(const struct exp *e, const struct exp_result *r,
		     const char *dir, gms_err *err)
{
	char p[6][GMS_PATH_MAX + 64]; /* set_files' order */
	for (int i = 0; i < 6; i++)
		snprintf(p[i], sizeof p[i], "%s/%s", dir, set_files[i]);
	char *titles = calloc(1, 1 << 20), xlabel[128];
	if (!titles)
		return gms_errf(err, "out of memory");
	const char *script = NULL;
	int rc = -1;
	/* plot.dat only for the plot (with plot: false it was the larger
	 * part of writing a `run`'s set: memory timelines, issue 18); it
	 * goes first, and gnuplot draws while the other files are written
	 * (summary.csv and runs.json took 3 ms of max-batch.yaml after its
	 * last search, issue 18) */
	struct gp_job gp;
	bool drawing = false;
	if (e->plot) {
		char title[300];
		/* the budget in the title of the searches (issue 34); the
		 * other plots give it per panel, as they give the batch */
		if (e->kind != EXP_MAX_BATCH && e->kind != EXP_EFF &&
		    e->kind != EXP_SCALING)
			snprintf(title, sizeof title, "%s on %s", e->name,
				 e->hw.name);
		else if (e->budget)
			snprintf(title, sizeof title, "%s on %s, budget %.1f GiB",
				 e->name, e->hw.name,
				 (double)e->budget / (double)GMS_GIB);
		else
			snprintf(title, sizeof title,
				 "%s on %s, the whole device", e->name,
				 e->hw.name);
		if (!(script = write_plot_data(e, r, p[3], titles, 1 << 20,
					       xlabel, sizeof xlabel, err)) ||
		    gp_start(&gp, script, p[3], titles, xlabel, title, p[4],
			     p[5], err) < 0)
			goto out;
		drawing = true;
	}
	if (write_csv(e, r, p[0], err) < 0 || write_json(e, r, p[1], err) < 0 ||
	    (e->kind == EXP_SCALING && write_tuning(e, r, p[2], err) < 0)) {
		gms_err ignore;
		if (drawing)
			gp_finish(&gp, &ignore); /* reaped: the set goes */
		goto out;
	}
	rc = drawing ? gp_finish(&gp, err) : 0;
out:
	free(titles);
	return rc;
}

/* Remove the temporary set directory and whatever is in it (only files
 * this program made). */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[GMS_PATH_MAX + 300];
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
			unlink(p);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/*
 * The commit of a set is atomic (issue 38, item 5). It used to be one
 * rename per file: a SIGKILL between two (a cluster's time limit, the
 * OOM killer) left a new summary.csv beside the old runs.json and plots,
 * and every kill left a .set-XXXXXX folder that no later run removed.
 * Now, as a journal (redo log) does it:
 *
 *   1. the set is written into DIR/.set-XXXXXX, whose lock file
 *      (.set-XXXXXX/.lock, a POSIX record lock held while the run lives)
 *      says that it is in use, and the list of its files last
 *      (.set-XXXXXX/.files);
 *   2. the commit is one rename of that directory to DIR/.set-commit:
 *      before it DIR holds the old set whole, after it the new one is
 *      decided;
 *   3. each file is moved from .set-commit into DIR (a file of the set
 *      not on the list is removed from DIR), then .set-commit goes.
 *
 * A kill in step 3 leaves DIR/.set-commit: whoever next commits into DIR,
 * or checks it before a run (exp_check_out), first finishes that commit
 * (set_recover), and removes every .set-XXXXXX whose lock no live process
 * holds. While DIR/.set-commit exists, the set in DIR is not complete.
 */
#define SET_COMMIT ".set-commit"
#define SET_LOCK ".lock"
#define SET_LIST ".files"

/* Take (wait) or test (!wait) the write lock of the set directory dir's
 * lock file; returns its descriptor (keep it open: closing it drops the
 * lock), -1 when another process holds it (!wait) or it is missing. */
static int set_lock(const char *dir, bool create, bool wait)
{
	char p[GMS_PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/" SET_LOCK, dir);
	int fd = open(p, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	int rc;
	while ((rc = fcntl(fd, wait ? F_SETLKW : F_SETLK, &l)) < 0 &&
	       errno == EINTR)
		;
	if (rc < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Step 3: move the files of the committed set dir/.set-commit into dir
 * (logging them to log) and remove it. A file already moved (a commit
 * finished by a later run) is no longer there; one not on the list is
 * not part of the set and goes from dir. */
static int set_roll_forward(const char *dir, FILE *log, gms_err *err)
{
	char cd[GMS_PATH_MAX + 32], from[GMS_PATH_MAX + 64],
		to[GMS_PATH_MAX + 64], list[256] = "";
	snprintf(cd, sizeof cd, "%s/" SET_COMMIT, dir);
	snprintf(from, sizeof from, "%s/" SET_LIST, cd);
	FILE *lf = fopen(from, "r");
	if (!lf) { /* the list goes after every move: they are done */
		remove_dir(cd);
		return 0;
	}
	size_t n = fread(list, 1, sizeof list - 1, lf);
	list[n] = '\0';
	fclose(lf);
	for (int i = 0; set_files[i]; i++) {
		char want[64];
		snprintf(want, sizeof want, "\n%s\n", set_files[i]);
		snprintf(from, sizeof from, "%s/%s", cd, set_files[i]);
		snprintf(to, sizeof to, "%s/%s", dir, set_files[i]);
		if (gms_out_check(to, err) < 0)
			return -1;
		if (!strstr(list, want)) {
			unlink(to); /* stale: not part of this set */
		} else if (rename(from, to) != 0 && errno != ENOENT) {
			return gms_errf(err, "%s: cannot rename into place: %s",
					to, strerror(errno));
		} else if (log && i != 3) { /* plot.dat: not announced */
			static const char *const lbl[] = {
				"summary: ", "runs:    ", "tuning:  ", "",
				"plot:    ", "         "};
			fprintf(log, "%s%s\n", lbl[i], to);
		}
	}
	remove_dir(cd);
	return 0;
}

/* Before a commit into dir, or a run that will commit there: finish an
 * interrupted commit (waiting for one in progress) and remove the
 * temporaries of dead runs (.set-XXXXXX whose lock nobody holds), but
 * not `mine` (this process's own: testing its lock here would release
 * it, as closing any descriptor of a file drops the process's locks). */
static int set_recover(const char *dir, const char *mine, gms_err *err)
{
	char p[GMS_PATH_MAX + 300];
	snprintf(p, sizeof p, "%s/" SET_COMMIT, dir);
	int fd = set_lock(p, false, true);
	int rc = 0;
	if (access(p, F_OK) == 0) /* (still) there once its lock is had */
		rc = set_roll_forward(dir, NULL, err);
	if (fd >= 0)
		close(fd);
	if (rc < 0)
		return gms_err_prefix(err, "finishing an interrupted commit");
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (strncmp(de->d_name, ".set-", 5) ||
		    !strcmp(de->d_name, SET_COMMIT) ||
		    (mine && !strcmp(p, mine)))
			continue;
		/* a live run holds its lock from just after mkdtemp; one
		 * killed in between left a directory with no lock file */
		int lk = set_lock(p, false, false);
		char lp[GMS_PATH_MAX + 320];
		snprintf(lp, sizeof lp, "%s/" SET_LOCK, p);
		if (lk >= 0 || access(lp, F_OK) != 0)
			remove_dir(p);
		if (lk >= 0)
			close(lk);
	}
	if (d)
		closedir(d);
	return 0;
}

/* The set is all or nothing, and its commit atomic (above): on a failure
 * before the commit the temporary is removed and the previous set stays
 * as it was; a file of the set this run does not write (plot.png/.svg
 * with plot: false, tuning.csv but for scaling) is removed, so no stale
 * file survives. */
int exp_write(const struct exp *e, const struct exp_result *r, FILE *log,
	      gms_err *err)
{
	if (gms_mkdirs(e->out_dir, err) < 0)
		return -1;
	char tmp[GMS_PATH_MAX + 32], p[GMS_PATH_MAX + 64];
	snprintf(tmp, sizeof tmp, "%s/.set-XXXXXX", e->out_dir);
	if (!mkdtemp(tmp))
		return gms_errf(err, "%s: cannot create a temporary directory: "
				     "%s",
				e->out_dir, strerror(errno));
	int lk = set_lock(tmp, true, false);
	if (lk < 0) {
		remove_dir(tmp);
		return gms_errf(err, "%s: cannot lock it: %s", tmp,
				strerror(errno));
	}
	int rc = write_set(e, r, tmp, err);
	/* the list of the set's files, last: "\nsummary.csv\n..." */
	snprintf(p, sizeof p, "%s/" SET_LIST, tmp);
	struct gms_out o;
	if (rc == 0 && (rc = gms_out_open(&o, p, err)) == 0) {
		for (int i = 0; set_files[i]; i++) {
			char f[GMS_PATH_MAX + 64];
			snprintf(f, sizeof f, "%s/%s", tmp, set_files[i]);
			if (access(f, F_OK) == 0)
				fprintf(o.f, "\n%s", set_files[i]);
		}
		fputc('\n', o.f);
		rc = gms_out_commit(&o, err);
	}
	/* every target checked before the commit: a refusal keeps the old
	 * set */
	for (int i = 0; rc == 0 && set_files[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", e->out_dir, set_files[i]);
		rc = gms_out_check(p, err);
	}
	if (rc == 0)
		rc = set_recover(e->out_dir, tmp, err);
	snprintf(p, sizeof p, "%s/" SET_COMMIT, e->out_dir);
	if (rc == 0 && rename(tmp, p) != 0)
		rc = gms_errf(err, "%s: cannot commit the set: %s", p,
			      strerror(errno));
	if (rc < 0) {
		remove_dir(tmp);
		close(lk);
		return -1;
	}
	rc = set_roll_forward(e->out_dir, log, err);
	close(lk);
	return rc;
}
