/* compare.c - a schedule log beside a measurement of its replay: the
 * join, the steady-state summary, the report and the files (compare.h).
 * Nothing here depends on wall-clock time: same inputs, same bytes. */
#include "compare.h"

#include "exp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const cmp_engine_names[] = {"compute", "h2d", "d2h", NULL};
const char *const cmp_cause_names[] = {"h2d", "d2h", "memory", "alloc",
				       "unattributed", NULL};

void cmp_free(struct cmp_result *r)
{
	free(r->item);
	free(r->iters);
	memset(r, 0, sizeof *r);
}

/* ---- the join ------------------------------------------------------------ */

static int engine_of(enum eng_q q)
{
	return q == ENG_COMPUTE ? CMP_COMPUTE
	       : q == ENG_H2D	? CMP_H2D
	       : q == ENG_D2H	? CMP_D2H
				: -1;
}

/* (iter, seq, kind), the schedule's item before the measured row. */
static int by_key(const void *a, const void *b)
{
	const struct cmp_item *x = a, *y = b;
	if (x->iter != y->iter)
		return x->iter < y->iter ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (int)y->has[CMP_PRED] - (int)x->has[CMP_PRED];
}

/* A copy that signals an event, for the stall of a kernel waiting on it. */
struct signal {
	int iter;     /* iteration (events are per iteration) */
	uint32_t ev;  /* the event */
	int engine;   /* the copy's engine */
};

static int by_signal(const void *a, const void *b)
{
	const struct signal *x = a, *y = b;
	if (x->iter != y->iter)
		return x->iter < y->iter ? -1 : 1;
	return (x->ev > y->ev) - (x->ev < y->ev);
}

/* Hostwaits in (iter, seq) order. */
static int by_iter_seq(const void *a, const void *b)
{
	const struct sch_item *x = *(const struct sch_item *const *)a;
	const struct sch_item *y = *(const struct sch_item *const *)b;
	if (x->iter != y->iter)
		return x->iter < y->iter ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static sim_time_t dur(const struct cmp_item *it, int side)
{
	return it->end[side] - it->start[side];
}

static bool joined(const struct cmp_item *it)
{
	return it->has[CMP_PRED] && it->has[CMP_MEAS];
}

/* What the run's stalls need beside the items. */
struct stall_ctx {
	const struct sch_item **hw; /* hostwaits by (iter, seq) */
	size_t n_hw;		    /* count */
	struct signal *sig;	    /* signalling copies by (iter, ev) */
	size_t n_sig;		    /* count */
};

/* The engine of the copy that signals ev in iteration it, or -1. */
static int signaller(const struct stall_ctx *c, int it, uint32_t ev)
{
	struct signal key = {.iter = it, .ev = ev};
	const struct signal *s =
		bsearch(&key, c->sig, c->n_sig, sizeof key, by_signal);
	return s ? s->engine : -1;
}

/* Compute idle time of iteration `it` on one side by cause (compare.h):
 * the gap before each joined kernel and after the last; *h walks the
 * hostwaits, starting at the iteration's first. */
static void stalls(const struct cmp_result *r, const struct stall_ctx *c,
		   int it, int side, size_t h, sim_time_t out[CMP_CAUSES])
{
	const struct cmp_iter *ci = &r->iters[it];
	sim_time_t cursor = 0;
	for (size_t i = ci->first; i <= ci->first + ci->n; i++) {
		bool tail = i == ci->first + ci->n;
		const struct cmp_item *k = tail ? NULL : &r->item[i];
		if (k && (k->kind != MSR_KERNEL || !joined(k)))
			continue;
		int cause = -1;
		while (h < c->n_hw && c->hw[h]->iter == it &&
		       (tail || c->hw[h]->seq < k->seq)) {
			cause = c->hw[h]->cause < ST_STALL_COUNT
					? c->hw[h]->cause
					: CMP_UNATTRIBUTED;
			h++;
		}
		sim_time_t next = tail ? ci->span[side] : k->start[side];
		if (next > cursor) {
			if (cause < 0 && k && k->sch->wait_ev != SCH_NONE) {
				int e = signaller(c, it, k->sch->wait_ev);
				cause = e == CMP_H2D   ? ST_STALL_H2D
					: e == CMP_D2H ? ST_STALL_D2H
						       : -1;
			}
			out[cause < 0 ? CMP_UNATTRIBUTED : cause] +=
				next - cursor;
		}
		if (k && k->end[side] > cursor)
			cursor = k->end[side];
	}
}

/* Linear interpolation at position q (n - 1) of sorted a[0..n). */
static double quantile(const double *a, size_t n, double q)
{
	if (!n)
		return 0;
	double pos = q * (double)(n - 1);
	size_t lo = (size_t)pos;
	if (lo + 1 >= n)
		return a[n - 1];
	return a[lo] + (pos - (double)lo) * (a[lo + 1] - a[lo]);
}

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* A candidate for a ranking: larger value first, then lower index. */
struct rank {
	size_t item;   /* index into item[] */
	double value;  /* what it is ranked by */
	double signed_value; /* shown (relative error with its sign) */
	bool start;    /* disagreements: in start */
};

static int by_rank(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return (x->item > y->item) - (x->item < y->item);
}

/* The steady-state summary (items joined and sorted, iters filled). */
static int summarise(struct cmp_result *r, const struct stall_ctx *c,
		     gms_err *err)
{
	double *rel = malloc((r->n_item ? r->n_item : 1) * sizeof *rel);
	struct rank *worst = malloc((r->n_item ? r->n_item : 1) *
				    sizeof *worst);
	struct rank *top = malloc((r->n_item ? r->n_item : 1) * sizeof *top);
	if (!rel || !worst || !top) {
		free(rel);
		free(worst);
		free(top);
		return gms_errf(err, "out of memory");
	}
	size_t n_top = 0, h = 0;
	double sum[CMP_SIDES] = {0};
	for (int it = 0; it < r->n_iter; it++) {
		const struct cmp_iter *ci = &r->iters[it];
		size_t h0 = h; /* this iteration's first hostwait */
		while (h0 < c->n_hw && c->hw[h0]->iter < it)
			h0++;
		h = h0;
		while (h < c->n_hw && c->hw[h]->iter == it) {
			if (ci->steady && c->hw[h]->cause < ST_STALL_COUNT)
				r->host_wait[c->hw[h]->cause] +=
					c->hw[h]->end - c->hw[h]->t;
			h++;
		}
		if (!ci->steady)
			continue;
		if (ci->has[CMP_PRED] && ci->has[CMP_MEAS]) {
			r->n_steady++;
			for (int s = 0; s < CMP_SIDES; s++) {
				sum[s] += (double)ci->span[s];
				stalls(r, c, it, s, h0, r->stall[s]);
			}
		}
		for (size_t i = ci->first; i < ci->first + ci->n; i++) {
			const struct cmp_item *x = &r->item[i];
			if (!joined(x) || x->engine < 0)
				continue;
			for (int s = 0; s < CMP_SIDES; s++)
				r->busy[s][x->engine] += dur(x, s);
			sim_time_t dp = dur(x, CMP_PRED), dm = dur(x, CMP_MEAS);
			sim_time_t ds = llabs(x->start[CMP_MEAS] -
					      x->start[CMP_PRED]);
			sim_time_t dd = llabs(dm - dp);
			if (ds || dd)
				top[n_top++] = (struct rank){
					.item = i,
					.value = (double)(ds > dd ? ds : dd),
					.start = ds >= dd};
			if (x->kind != MSR_KERNEL)
				continue;
			if (dp == 0) {
				r->n_zero_pred++;
				continue;
			}
			double e = (double)(dm - dp) / (double)dp;
			worst[r->n_rel] = (struct rank){.item = i,
							.value = fabs(e),
							.signed_value = e};
			rel[r->n_rel++] = fabs(e);
		}
	}
	for (int s = 0; s < CMP_SIDES; s++)
		r->iter_time[s] = r->n_steady ? sum[s] / r->n_steady : 0;
	r->iter_err = r->iter_time[CMP_PRED] > 0
			      ? (r->iter_time[CMP_MEAS] - r->iter_time[CMP_PRED]) /
					r->iter_time[CMP_PRED]
			      : 0;
	qsort(rel, r->n_rel, sizeof *rel, by_double);
	r->rel_median = quantile(rel, r->n_rel, 0.5);
	r->rel_p90 = quantile(rel, r->n_rel, 0.9);
	qsort(worst, r->n_rel, sizeof *worst, by_rank);
	for (r->n_worst = 0; r->n_worst < CMP_WORST && r->n_worst < r->n_rel;
	     r->n_worst++) {
		r->worst[r->n_worst] = worst[r->n_worst].item;
		r->worst_rel[r->n_worst] = worst[r->n_worst].signed_value;
	}
	qsort(top, n_top, sizeof *top, by_rank);
	for (r->n_top = 0; r->n_top < CMP_TOP && r->n_top < n_top; r->n_top++)
		r->top[r->n_top] = (struct cmp_diff){
			.item = top[r->n_top].item,
			.ns = (sim_time_t)top[r->n_top].value,
			.start = top[r->n_top].start};
	free(rel);
	free(worst);
	free(top);
	return 0;
}

/* Iterations: the schedule's iter and end records; -1 when an item's
 * iteration has no iter record. */
static int take_iterations(struct cmp_result *r, const struct sch_log *log,
			   bool *begun, gms_err *err)
{
	for (size_t i = 0; i < log->n; i++) {
		const struct sch_item *s = &log->it[i];
		if (s->iter < 0)
			continue; /* set-up: the persistent blocks */
		struct cmp_iter *ci = &r->iters[s->iter];
		if (s->kind == SCH_ITER) {
			begun[s->iter] = true;
			ci->start_pred = s->start;
		} else if (s->kind == SCH_END) {
			ci->has[CMP_PRED] = true;
			ci->span[CMP_PRED] = s->end;
		}
	}
	for (size_t i = 0; i < log->n; i++)
		if (log->it[i].iter >= 0 && !begun[log->it[i].iter])
			return gms_errf(err, "schedule: record seq %u of "
					     "iteration %d, which has no iter "
					     "record",
					log->it[i].seq, log->it[i].iter);
	for (int i = 0; i < r->n_iter; i++)
		r->iters[i].steady = i >= log->warmup;
	return 0;
}

int cmp_run(const struct sch_log *log, const struct msr *m,
	    struct cmp_result *r, gms_err *err)
{
	memset(r, 0, sizeof *r);
	r->log = log;
	r->msr = m;
	r->n_iter = log->iterations > 0 ? log->iterations : 0;
	size_t n_sched = 0, n_hw = 0, n_sig = 0;
	for (size_t i = 0; i < log->n; i++) {
		const struct sch_item *s = &log->it[i];
		if (s->iter < 0) {
			/* set-up records (before the first iteration): the
			 * persistent tensors' allocations only */
			if (s->kind != SCH_ALLOC)
				return gms_errf(err, "schedule: a %s record "
						     "before the first "
						     "iteration",
						sch_kind_names[s->kind]);
			continue;
		}
		if (s->iter >= r->n_iter)
			r->n_iter = s->iter + 1;
		n_sched += s->kind == SCH_KERNEL || s->kind == SCH_COPY;
		n_hw += s->kind == SCH_HOSTWAIT;
		n_sig += s->kind == SCH_COPY && s->signal_ev != SCH_NONE;
	}
	size_t cap = n_sched + m->n + 1;
	r->item = calloc(cap, sizeof *r->item);
	r->iters = calloc((size_t)r->n_iter + 1, sizeof *r->iters);
	bool *begun = calloc((size_t)r->n_iter + 1, sizeof *begun);
	struct stall_ctx c = {
		.hw = malloc((n_hw + 1) * sizeof *c.hw),
		.sig = malloc((n_sig + 1) * sizeof *c.sig)};
	int rc = 0;
	if (!r->item || !r->iters || !begun || !c.hw || !c.sig) {
		rc = gms_errf(err, "out of memory");
		goto out;
	}
	if ((rc = take_iterations(r, log, begun, err)) < 0)
		goto out;
	for (size_t i = 0; i < log->n; i++) {
		const struct sch_item *s = &log->it[i];
		if (s->kind == SCH_HOSTWAIT)
			c.hw[c.n_hw++] = s;
		if (s->kind != SCH_KERNEL && s->kind != SCH_COPY)
			continue;
		sim_time_t t0 = r->iters[s->iter].start_pred;
		if (s->kind == SCH_COPY && s->signal_ev != SCH_NONE)
			c.sig[c.n_sig++] = (struct signal){
				.iter = s->iter, .ev = s->signal_ev,
				.engine = engine_of(s->q)};
		r->item[r->n_item++] = (struct cmp_item){
			.iter = s->iter, .seq = s->seq,
			.kind = s->kind == SCH_KERNEL ? MSR_KERNEL : MSR_COPY,
			.engine = engine_of(s->q), .name = s->name ? s->name : "",
			.sch = s, .has = {true, false},
			.start = {s->start - t0, 0}, .end = {s->end - t0, 0}};
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct msr_row *w = &m->row[i];
		if (w->kind == MSR_ITER) {
			if (w->iter < r->n_iter && begun[w->iter]) {
				r->iters[w->iter].has[CMP_MEAS] = true;
				r->iters[w->iter].span[CMP_MEAS] = w->end;
			} else {
				r->n_iter_unscheduled++;
			}
			continue;
		}
		r->item[r->n_item++] = (struct cmp_item){
			.iter = w->iter, .seq = w->seq, .kind = w->kind,
			.engine = -1, .name = "", .has = {false, true},
			.start = {0, w->start}, .end = {0, w->end}};
	}
	qsort(r->item, r->n_item, sizeof *r->item, by_key);
	/* merge each schedule item with the row of its key */
	size_t n = 0;
	for (size_t i = 0; i < r->n_item; i++) {
		struct cmp_item *x = &r->item[i];
		if (n && !r->item[n - 1].has[CMP_MEAS] && x->has[CMP_MEAS] &&
		    !x->has[CMP_PRED] && r->item[n - 1].iter == x->iter &&
		    r->item[n - 1].seq == x->seq &&
		    r->item[n - 1].kind == x->kind) {
			r->item[n - 1].has[CMP_MEAS] = true;
			r->item[n - 1].start[CMP_MEAS] = x->start[CMP_MEAS];
			r->item[n - 1].end[CMP_MEAS] = x->end[CMP_MEAS];
			continue;
		}
		r->item[n++] = *x;
	}
	r->n_item = n;
	for (size_t i = 0; i < n; i++) {
		const struct cmp_item *x = &r->item[i];
		r->n_unmeasured += !x->has[CMP_MEAS];
		r->n_unscheduled += !x->has[CMP_PRED];
		if (x->iter < r->n_iter) {
			struct cmp_iter *ci = &r->iters[x->iter];
			if (!ci->n)
				ci->first = i;
			ci->n++;
		}
	}
	for (int i = 0; i < r->n_iter; i++)
		r->n_iter_unmeasured += begun[i] && !r->iters[i].has[CMP_MEAS];
	qsort(c.hw, c.n_hw, sizeof *c.hw, by_iter_seq);
	qsort(c.sig, c.n_sig, sizeof *c.sig, by_signal);
	rc = summarise(r, &c, err);
out:
	free(begun);
	free(c.hw);
	free(c.sig);
	if (rc < 0)
		cmp_free(r);
	return rc;
}

/* ---- the report ---------------------------------------------------------- */

static double pct(double measured, double predicted)
{
	return predicted != 0 ? 100.0 * (measured - predicted) / predicted : 0;
}

static double ms(double ns) { return ns / 1e6; }

void cmp_report(const struct cmp_result *r, FILE *f)
{
	const struct sch_log *l = r->log;
	fprintf(f, "compare: %s on %s, batch %lld, policy %s, allocator %s\n",
		l->workload, l->hw, (long long)l->batch, l->policy,
		l->allocator);
	fprintf(f, "measured on %s (mode %s, alloc %s)\n", r->msr->device,
		msr_mode_names[r->msr->mode], msr_alloc_names[r->msr->alloc]);
	fprintf(f, "steady state: iterations >= %d measured on both sides: "
		   "%d\n",
		l->warmup, r->n_steady);
	fprintf(f, "  iteration time   predicted %.3f ms, measured %.3f ms, "
		   "error %+.1f%%\n",
		ms(r->iter_time[CMP_PRED]), ms(r->iter_time[CMP_MEAS]),
		100 * r->iter_err);
	fprintf(f, "  per-kernel error |measured/predicted - 1| median "
		   "%.1f%%, p90 %.1f%% (%zu kernels; %zu predicted at 0 ns "
		   "left out)\n",
		100 * r->rel_median, 100 * r->rel_p90, r->n_rel,
		r->n_zero_pred);
	for (size_t i = 0; i < r->n_worst; i++) {
		const struct cmp_item *x = &r->item[r->worst[i]];
		fprintf(f, "    %-14s iter %d seq %u: %+.1f%% (predicted %.3f "
			   "us, measured %.3f us)\n",
			x->name, x->iter, x->seq, 100 * r->worst_rel[i],
			dur(x, CMP_PRED) / 1e3, dur(x, CMP_MEAS) / 1e3);
	}
	fprintf(f, "  busy (ms)          predicted   measured   error\n");
	for (int e = 0; e < CMP_ENGINES; e++)
		fprintf(f, "    %-14s %11.3f %10.3f %+7.1f%%\n",
			cmp_engine_names[e], ms((double)r->busy[CMP_PRED][e]),
			ms((double)r->busy[CMP_MEAS][e]),
			pct((double)r->busy[CMP_MEAS][e],
			    (double)r->busy[CMP_PRED][e]));
	fprintf(f, "  compute stall (ms) predicted   measured   (host blocked, "
		   "predicted)\n");
	for (int s = 0; s < CMP_CAUSES; s++) {
		fprintf(f, "    %-14s %11.3f %10.3f", cmp_cause_names[s],
			ms((double)r->stall[CMP_PRED][s]),
			ms((double)r->stall[CMP_MEAS][s]));
		if (s < ST_STALL_COUNT)
			fprintf(f, "   (%.3f)", ms((double)r->host_wait[s]));
		fputc('\n', f);
	}
	fprintf(f, "  peak memory      predicted %llu B allocated, %llu B "
		   "reserved; measured %llu B (%+.1f%% against allocated)\n",
		(unsigned long long)l->peak_allocated,
		(unsigned long long)l->peak_reserved,
		(unsigned long long)r->msr->peak_bytes,
		pct((double)r->msr->peak_bytes, (double)l->peak_allocated));
	fprintf(f, "  joins            %zu schedule items without a row, %zu "
		   "rows without an item, %zu iterations not measured, %zu "
		   "iter rows for iterations not in the schedule\n",
		r->n_unmeasured, r->n_unscheduled, r->n_iter_unmeasured,
		r->n_iter_unscheduled);
	fprintf(f, "largest disagreements (|measured - predicted| in start or "
		   "duration):\n");
	for (size_t i = 0; i < r->n_top; i++) {
		const struct cmp_item *x = &r->item[r->top[i].item];
		fprintf(f, "  %2zu %10.3f us %-8s iter %d seq %u %s %s %s "
			   "(predicted %lld..%lld, measured %lld..%lld ns)\n",
			i + 1, (double)r->top[i].ns / 1e3,
			r->top[i].start ? "start" : "duration", x->iter, x->seq,
			msr_kind_names[x->kind], cmp_engine_names[x->engine],
			x->name, (long long)x->start[CMP_PRED],
			(long long)x->end[CMP_PRED],
			(long long)x->start[CMP_MEAS],
			(long long)x->end[CMP_MEAS]);
	}
}

/* ---- files --------------------------------------------------------------- */

static void csv_time(FILE *f, bool has, sim_time_t t)
{
	if (has)
		fprintf(f, ",%lld", (long long)t);
	else
		fputc(',', f);
}

static void csv_row(FILE *f, const struct cmp_result *r, int it,
		    uint32_t seq, const char *kind, const char *name,
		    const char *queue, const bool has[CMP_SIDES],
		    const sim_time_t start[CMP_SIDES],
		    const sim_time_t end[CMP_SIDES])
{
	bool steady = it < r->n_iter && r->iters[it].steady;
	fprintf(f, "%d,%u,%s,", it, seq, kind);
	exp_csv_str(f, name);
	fprintf(f, ",%s,%d", queue, steady);
	for (int s = 0; s < CMP_SIDES; s++) {
		csv_time(f, has[s], start[s]);
		csv_time(f, has[s], end[s]);
	}
	for (int s = 0; s < CMP_SIDES; s++)
		csv_time(f, has[s], end[s] - start[s]);
	bool both = has[CMP_PRED] && has[CMP_MEAS];
	sim_time_t dp = end[CMP_PRED] - start[CMP_PRED];
	sim_time_t dm = end[CMP_MEAS] - start[CMP_MEAS];
	csv_time(f, both, dm - dp);
	if (both && dp)
		fprintf(f, ",%.6f", (double)(dm - dp) / (double)dp);
	else
		fputc(',', f);
	csv_time(f, both, start[CMP_MEAS] - start[CMP_PRED]);
	fputc('\n', f);
}

static int write_csv(const struct cmp_result *r, const char *path,
		     gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	fputs("iter,seq,kind,name,queue,steady,pred_start_ns,pred_end_ns,"
	      "meas_start_ns,meas_end_ns,pred_dur_ns,meas_dur_ns,dur_err_ns,"
	      "dur_rel_err,start_err_ns\n",
	      o.f);
	size_t i = 0;
	for (int it = 0; it < r->n_iter; it++) {
		const struct cmp_iter *ci = &r->iters[it];
		const sim_time_t zero[CMP_SIDES] = {0, 0};
		csv_row(o.f, r, it, 0, "iter", "", "", ci->has, zero,
			ci->span);
		for (; i < r->n_item && r->item[i].iter <= it; i++) {
			const struct cmp_item *x = &r->item[i];
			csv_row(o.f, r, x->iter, x->seq,
				msr_kind_names[x->kind], x->name,
				x->engine < 0 ? "" : cmp_engine_names[x->engine],
				x->has, x->start, x->end);
		}
	}
	/* rows of iterations the schedule does not have */
	for (; i < r->n_item; i++) {
		const struct cmp_item *x = &r->item[i];
		csv_row(o.f, r, x->iter, x->seq, msr_kind_names[x->kind], "",
			"", x->has, x->start, x->end);
	}
	return gms_out_commit(&o, err);
}

static int write_summary(const struct cmp_result *r, const char *path,
			 gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	cmp_report(r, o.f);
	return gms_out_commit(&o, err);
}

/* Trace tracks: the iterations, then per engine predicted and measured,
 * then the predicted host waits. */
enum { TID_ITER = 1, TID_ENGINE = 3, TID_HOST = TID_ENGINE + 2 * CMP_ENGINES };
static const char *const side_names[CMP_SIDES] = {"predicted", "measured"};

static void trace_span(FILE *f, int tid, const char *name, const char *cat,
		       sim_time_t ts, sim_time_t d, int it, uint32_t seq)
{
	fputs(",\n{\"ph\":\"X\",\"name\":", f);
	gms_json_str(f, name);
	fprintf(f, ",\"cat\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":", cat, tid);
	tr_json_us(f, ts);
	fputs(",\"dur\":", f);
	tr_json_us(f, d);
	fprintf(f, ",\"args\":{\"iter\":%d,\"seq\":%u}}", it, seq);
}

static int write_trace(const struct cmp_result *r, const char *path,
		       gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	FILE *f = o.f;
	char title[800];
	snprintf(title, sizeof title, "%s on %s (predicted) against %s "
				      "(measured)",
		 r->log->workload, r->log->hw, r->msr->device);
	tr_json_begin(f, title);
	char name[64];
	for (int s = 0; s < CMP_SIDES; s++) {
		snprintf(name, sizeof name, "iterations (%s)", side_names[s]);
		tr_json_track(f, 1, TID_ITER + s, name, TID_ITER + s);
		for (int e = 0; e < CMP_ENGINES; e++) {
			int tid = TID_ENGINE + 2 * e + s;
			snprintf(name, sizeof name, "%s (%s)",
				 cmp_engine_names[e], side_names[s]);
			tr_json_track(f, 1, tid, name, tid);
		}
	}
	tr_json_track(f, 1, TID_HOST, "host waits (predicted)", TID_HOST);
	/* iteration k of both sides starts at the sum of the longer side's
	 * spans before it, so the same item lines up */
	sim_time_t off = 0;
	for (int it = 0; it < r->n_iter; it++) {
		const struct cmp_iter *ci = &r->iters[it];
		sim_time_t len = 0;
		for (int s = 0; s < CMP_SIDES; s++) {
			if (!ci->has[s])
				continue;
			if (ci->span[s] > len)
				len = ci->span[s];
			snprintf(name, sizeof name, "iteration %d", it);
			trace_span(f, TID_ITER + s, name, "iteration", off,
				   ci->span[s], it, 0);
		}
		for (size_t i = ci->first; i < ci->first + ci->n; i++) {
			const struct cmp_item *x = &r->item[i];
			for (int s = 0; s < CMP_SIDES; s++) {
				if (!x->has[s] || x->engine < 0)
					continue;
				if (x->end[s] > len)
					len = x->end[s];
				trace_span(f, TID_ENGINE + 2 * x->engine + s,
					   x->name, msr_kind_names[x->kind],
					   off + x->start[s], dur(x, s), it,
					   x->seq);
			}
		}
		for (size_t i = 0; i < r->log->n; i++) {
			const struct sch_item *w = &r->log->it[i];
			if (w->kind != SCH_HOSTWAIT || w->iter != it)
				continue;
			sim_time_t t = w->t - ci->start_pred;
			trace_span(f, TID_HOST,
				   cmp_cause_names[w->cause < ST_STALL_COUNT
							   ? w->cause
							   : CMP_UNATTRIBUTED],
				   "hostwait", off + t, w->end - w->t, it,
				   w->seq);
			if (w->end - ci->start_pred > len)
				len = w->end - ci->start_pred;
		}
		off += len;
	}
	fputs("\n]}\n", f);
	return gms_out_commit(&o, err);
}

/* The plot's iteration: the first steady one measured on both sides,
 * else the first measured on both; -1 when none is. */
static int plot_iteration(const struct cmp_result *r)
{
	int any = -1;
	for (int it = 0; it < r->n_iter; it++) {
		const struct cmp_iter *ci = &r->iters[it];
		if (!ci->has[CMP_PRED] || !ci->has[CMP_MEAS])
			continue;
		if (ci->steady)
			return it;
		if (any < 0)
			any = it;
	}
	return any;
}

/* timeline.dat: start_ms end_ms row side (row 4 the iteration, 3
 * compute, 2 H2D, 1 D2H; side 0 predicted, 1 measured). */
static int write_plot_data(const struct cmp_result *r, int it,
			   const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	const struct cmp_iter *ci = &r->iters[it];
	fprintf(o.f, "# iteration %d: start_ms end_ms row side\n", it);
	for (int s = 0; s < CMP_SIDES; s++)
		fprintf(o.f, "0 %.6f 4 %d\n", ms((double)ci->span[s]), s);
	for (size_t i = ci->first; i < ci->first + ci->n; i++) {
		const struct cmp_item *x = &r->item[i];
		for (int s = 0; s < CMP_SIDES; s++)
			if (x->has[s] && x->engine >= 0)
				fprintf(o.f, "%.6f %.6f %d %d\n",
					ms((double)x->start[s]),
					ms((double)x->end[s]), 3 - x->engine,
					s);
	}
	return gms_out_commit(&o, err);
}

/* The files cmp_write writes into its directory. */
static const char *const cmp_files[] = {"compare.csv",	"summary.txt",
					"trace.json",	"timeline.dat",
					"timeline.png", "timeline.svg", NULL};

int cmp_check_out(const char *dir, gms_err *err)
{
	char p[GMS_PATH_MAX + 32];
	for (int i = 0; cmp_files[i]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, cmp_files[i]);
		if (gms_out_check(p, err) < 0)
			return -1;
	}
	return 0;
}

int cmp_write(const struct cmp_result *r, const char *dir, bool plot,
	      FILE *log, gms_err *err)
{
	/* every target first: a refusal after compare.csv was written left
	 * half a set (issue 38) */
	if (cmp_check_out(dir, err) < 0 || gms_mkdirs(dir, err) < 0)
		return -1;
	char csv[1100], sum[1100], trace[1100], dat[1100], png[1100],
		svg[1100];
	snprintf(csv, sizeof csv, "%s/compare.csv", dir);
	snprintf(sum, sizeof sum, "%s/summary.txt", dir);
	snprintf(trace, sizeof trace, "%s/trace.json", dir);
	snprintf(dat, sizeof dat, "%s/timeline.dat", dir);
	snprintf(png, sizeof png, "%s/timeline.png", dir);
	snprintf(svg, sizeof svg, "%s/timeline.svg", dir);
	if (write_csv(r, csv, err) < 0 || write_summary(r, sum, err) < 0 ||
	    write_trace(r, trace, err) < 0)
		return -1;
	if (log)
		fprintf(log, "compare: %s\nsummary: %s\ntrace:   %s\n", csv,
			sum, trace);
	int it = plot_iteration(r);
	if (!plot)
		return 0;
	if (it < 0) {
		if (log)
			fprintf(log, "plot:    none (no iteration measured on "
				     "both sides)\n");
		return 0;
	}
	if (write_plot_data(r, it, dat, err) < 0)
		return -1;
	char title[800];
	snprintf(title, sizeof title, "%s on %s, policy %s: iteration %d, "
				      "predicted against measured on %s",
		 r->log->workload, r->log->hw, r->log->policy, it,
		 r->msr->device);
	if (exp_gnuplot("plot-compare.gp", dat, "predicted measured",
			"time from the iteration's start (ms)", title, png, svg,
			err) < 0)
		return -1;
	if (log)
		fprintf(log, "plot:    %s\n         %s\n", png, svg);
	return 0;
}
