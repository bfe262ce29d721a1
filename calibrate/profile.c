/*
 * profile.c - `gpumemsim fit`: the measurement CSV through the fits of
 * fit.c into a hardware profile YAML, every figure with a comment saying
 * how it was measured and the quality of its fit in `fit:` keys.
 *
 * What comes from where:
 *   device.capacity      metadata memory_bytes (totalGlobalMem)
 *   device.reserved      memory_bytes - free_bytes (context and handles)
 *   compute.conv         conv fwd rows, the fastest algorithm per shape
 *   compute.conv_bwd_*   conv bwd_data / bwd_filter rows, likewise
 *   compute.matmul       matmul rows of --precision (default fp32)
 *   compute.memory       memory elementwise rows (launch, mem_bw);
 *                        batchnorm and pool rows override their op types
 *   mem_bw of conv and matmul: the elementwise fit's (achieved DRAM)
 *   link.*               copy rows (fit.c); derate from bidir rows
 *   link.shared_engine   metadata async_engines < 2
 *   costs                alloc rows, medians
 *   host                 --base profile's host section, else estimates
 *                        marked as such (`gpumemsim calibrate --host`)
 *   conv_algos           every conv row
 *   gemms                every gemm row (the generators' GEMM shapes,
 *                        calibrate/gemm_shapes.h)
 * A class without rows is an error naming the end of the file, except
 * conv, which takes the matmul fit when the file has no conv rows (a
 * toolkit without cuDNN) and says so in the profile.
 */
#include "calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef GMS_VERSION
#define GMS_VERSION "unknown"
#endif

/* Points gathered for one fit. */
struct pts {
	double *x;  /* design rows (p columns) or FLOPs */
	double *y;  /* ns */
	size_t n;   /* points */
	size_t cap; /* allocated points */
	size_t p;   /* columns of x */
};

static int pts_add(struct pts *s, const double *x, double y)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 64;
		double *nx = realloc(s->x, nc * s->p * sizeof *nx);
		if (!nx)
			return -1;
		s->x = nx;
		double *ny = realloc(s->y, nc * sizeof *ny);
		if (!ny)
			return -1;
		s->y = ny;
		s->cap = nc;
	}
	memcpy(s->x + s->n * s->p, x, s->p * sizeof *x);
	s->y[s->n++] = y;
	return 0;
}

static void pts_free(struct pts *s)
{
	free(s->x);
	free(s->y);
	memset(s, 0, sizeof *s);
}

/* "FILE:LINES: end of file: no 'bench,kind' rows (needed for what)". */
static int missing(const struct cal_csv *c, const char *rows,
		   const char *what, gms_err *err)
{
	return gms_errf(err, "%s:%ld: end of file: no %s rows (needed for "
			     "%s)",
			c->path, c->lines, rows, what);
}

/* Prefix err with the file and the rows a fit failed on. */
static int fit_failed(const struct cal_csv *c, const char *rows,
		      gms_err *err)
{
	return gms_err_prefix(err, "%s: fitting the %s rows", c->path, rows);
}

/* A fit below CAL_MIN_R2 is refused, or with o->force kept and said in
 * the log. `rows` names the rows as fit_failed does. */
static int check_r2(const struct cal_csv *c, const char *rows,
		    const struct cal_quality *q, const struct cal_fit_opts *o,
		    FILE *log, gms_err *err)
{
	if (isnan(q->r2) || q->r2 >= CAL_MIN_R2)
		return 0;
	if (!o->force)
		return gms_errf(err, "%s: fitting the %s rows: R^2 %.4f is "
				     "below %.2f: the measurements do not "
				     "follow the model (README, "
				     "\"Calibration\"); --force writes the "
				     "profile anyway",
				c->path, rows, q->r2, CAL_MIN_R2);
	if (log)
		fprintf(log, "warning: the %s rows fit with R^2 %.4f, below "
			     "%.2f; kept (--force)\n",
			rows, q->r2, CAL_MIN_R2);
	return 0;
}

/* The conv rows' math mode (metadata "conv_math", written by
 * calibrate-gpu since issue 21) must be the one --precision models:
 * fp32 is FP32 on CUDA cores (cuDNN's CUDNN_FMA_MATH), tf32 TF32 Tensor
 * Cores. cuDNN's default math runs FP32 convolutions on TF32 Tensor Cores
 * from compute capability 8.0 on, so a CSV without the line may hold
 * either: said on the log, and kept (older GPUs have no TF32). fp16 has
 * no conv rows of its own: the check does not apply. */
static int check_conv_math(const struct cal_csv *c, const char *prec,
			   FILE *log, gms_err *err)
{
	bool conv = false;
	for (size_t i = 0; i < c->n_rows && !conv; i++)
		conv = c->rows[i].bench == CB_CONV;
	if (!conv || strcmp(prec, "fp16") == 0)
		return 0;
	const char *want = strcmp(prec, "tf32") == 0 ? "tf32" : "fma";
	const char *m = cal_meta_get(c, "conv_math");
	if (!m) {
		if (log)
			fprintf(log, "note: the conv rows do not say their math "
				     "mode (no '# conv_math:' line); on compute "
				     "capability 8.0 and later cuDNN's default "
				     "runs FP32 convolutions on TF32 Tensor "
				     "Cores\n");
		return 0;
	}
	if (strcmp(m, want) != 0)
		return gms_errf(err, "%s: metadata 'conv_math': the conv rows "
				     "were measured with '%s' math, but "
				     "--precision %s models '%s' (README, "
				     "\"Calibration\")",
				c->path, m, prec, want);
	return 0;
}

/* "KEY: {r2: .., worst_rel: .., points: ..}" (no r2 for a median). */
static void put_fit(FILE *f, const char *key, const struct cal_quality *q)
{
	if (isnan(q->r2))
		fprintf(f, "%s: {worst_rel: %.4g, points: %zu}", key,
			q->worst_rel, q->points);
	else
		fprintf(f, "%s: {r2: %.6f, worst_rel: %.4g, points: %zu}", key,
			q->r2, q->worst_rel, q->points);
}

/* ---- copies ------------------------------------------------------------ */

/* Kinds of bench copy (order of cal_kinds(CB_COPY)). */
enum { K_H2D_PIN, K_H2D_PAGE, K_D2H_PIN, K_D2H_PAGE, K_H2D_BI, K_D2H_BI };

struct link_fit {
	double latency_ns, bw_pin, bw_page; /* the joint fit */
	struct cal_quality q;		     /* its quality */
	double derate;			     /* bidir bw / bw_pin, <= 1 */
	struct cal_quality dq;		     /* bidir fit quality */
	bool has_derate;		     /* bidir rows were there */
};

static int fit_link(const struct cal_csv *c, int dir, struct link_fit *l,
		    gms_err *err)
{
	const char *dn = dir == HW_H2D ? "h2d" : "d2h";
	int kpin = dir == HW_H2D ? K_H2D_PIN : K_D2H_PIN;
	int kpage = kpin + 1, kbi = dir == HW_H2D ? K_H2D_BI : K_D2H_BI;
	struct pts s = {.p = 3}, b = {.p = 2};
	size_t npin = 0, npage = 0;
	int rc = 0;
	char rows[64], what[64];
	for (size_t i = 0; i < c->n_rows && rc == 0; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != CB_COPY)
			continue;
		double sz = r->size_bytes;
		if (r->kind == kpin || r->kind == kpage) {
			double x[3] = {1, r->kind == kpin ? sz : 0,
				       r->kind == kpage ? sz : 0};
			npin += r->kind == kpin;
			npage += r->kind == kpage;
			rc = pts_add(&s, x, r->median_ns);
		} else if (r->kind == kbi) {
			double x[2] = {1, sz};
			rc = pts_add(&b, x, r->median_ns);
		}
	}
	if (rc < 0) {
		rc = gms_errf(err, "out of memory");
		goto out;
	}
	snprintf(what, sizeof what, "link.%s", dn);
	snprintf(rows, sizeof rows, "'copy,%s_%s'", dn,
		 npin ? "pageable" : "pinned");
	if (!npin || !npage) {
		rc = missing(c, rows, what, err);
		goto out;
	}
	double k[3];
	snprintf(rows, sizeof rows, "copy %s", dn);
	if (cal_fit_linear(s.x, s.y, s.n, 3, k, &l->q, err) < 0) {
		rc = fit_failed(c, rows, err);
		goto out;
	}
	if (!(k[1] > 0) || !(k[2] > 0)) {
		rc = gms_errf(err, "%s: copy %s rows: no positive bandwidth "
				   "fits (time does not grow with size)",
			      c->path, dn);
		goto out;
	}
	l->latency_ns = k[0] > 0 ? k[0] : 0;
	l->bw_pin = 1e9 / k[1];
	l->bw_page = 1e9 / k[2];
	l->has_derate = b.n > 0;
	l->derate = 1;
	if (b.n) {
		snprintf(rows, sizeof rows, "copy %s_bidir", dn);
		double kb[2];
		if (cal_fit_linear(b.x, b.y, b.n, 2, kb, &l->dq, err) < 0) {
			rc = fit_failed(c, rows, err);
			goto out;
		}
		if (kb[1] > 0 && 1e9 / kb[1] < l->bw_pin)
			l->derate = 1e9 / kb[1] / l->bw_pin;
	}
out:
	pts_free(&s);
	pts_free(&b);
	return rc;
}

/* ---- compute ----------------------------------------------------------- */

/* Rows of (bench, kind) as (FLOPs, ns); conv: the fastest algorithm per
 * shape (param without its algo=). */
static int gather_compute(const struct cal_csv *c, enum cal_bench bench,
			  int kind, struct pts *s)
{
	s->p = 1;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != bench || r->kind != kind)
			continue;
		if (bench == CB_CONV) {
			/* skip unless the fastest of its shape, the
			 * earliest among equals */
			char shape[256], other[256];
			bool beaten = false;
			cal_param_str(r->param, "layer", shape, sizeof shape);
			for (size_t j = 0; j < c->n_rows && !beaten; j++) {
				const struct cal_row *o = &c->rows[j];
				if (o->bench != bench || o->kind != kind ||
				    cal_param_str(o->param, "layer", other,
						  sizeof other) < 0 ||
				    strcmp(shape, other) != 0)
					continue;
				beaten = o->median_ns < r->median_ns ||
					 (o->median_ns == r->median_ns && j < i);
			}
			if (beaten)
				continue;
		}
		if (pts_add(s, &r->flops, r->median_ns) < 0)
			return -1;
	}
	return 0;
}

/* Fit (bench, kind) rows; *have = false when there are none. */
static int fit_compute_rows(const struct cal_csv *c, enum cal_bench bench,
			    int kind, struct cal_compute_fit *f, bool *have,
			    gms_err *err)
{
	struct pts s = {0};
	char rows[64];
	snprintf(rows, sizeof rows, "'%s,%s'", cal_bench_name(bench),
		 cal_kinds(bench)[kind]);
	int rc = 0;
	if (gather_compute(c, bench, kind, &s) < 0)
		rc = gms_errf(err, "out of memory");
	else if ((*have = s.n > 0) &&
		 cal_fit_compute(s.x, s.y, s.n, f, err) < 0)
		rc = fit_failed(c, rows, err);
	pts_free(&s);
	return rc;
}

/* Memory-bound rows of `kind`: launch + bytes / mem_bw. */
struct mem_fit {
	double launch_ns, bw;	/* the fit */
	struct cal_quality q;	/* its quality */
	bool have;		/* rows were there */
};

static int fit_memory(const struct cal_csv *c, int kind, struct mem_fit *m,
		      gms_err *err)
{
	struct pts s = {.p = 2};
	int rc = 0;
	for (size_t i = 0; i < c->n_rows && rc == 0; i++) {
		const struct cal_row *r = &c->rows[i];
		double x[2] = {1, r->size_bytes};
		if (r->bench == CB_MEMORY && r->kind == kind)
			rc = pts_add(&s, x, r->median_ns);
	}
	m->have = s.n > 0;
	if (rc < 0) {
		rc = gms_errf(err, "out of memory");
	} else if (m->have) {
		double k[2];
		char rows[64];
		snprintf(rows, sizeof rows, "memory %s",
			 cal_kinds(CB_MEMORY)[kind]);
		if (cal_fit_linear(s.x, s.y, s.n, 2, k, &m->q, err) < 0)
			rc = fit_failed(c, rows, err);
		else if (!(k[1] > 0))
			rc = gms_errf(err, "%s: %s rows: time does not grow "
					   "with bytes",
				      c->path, rows);
		m->launch_ns = k[0] > 0 ? k[0] : 0;
		m->bw = k[1] > 0 ? 1e9 / k[1] : 0;
	}
	pts_free(&s);
	return rc;
}

/* ---- allocation costs --------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of the kind's medians; q: worst relative deviation. Returns
 * false when there are no rows. */
static bool median_cost(const struct cal_csv *c, enum cal_bench bench,
			int kind, double *med, struct cal_quality *q)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n_rows; i++)
		n += c->rows[i].bench == bench && c->rows[i].kind == kind;
	double *v = n ? malloc(n * sizeof *v) : NULL;
	if (!v)
		return false;
	n = 0;
	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i].bench == bench && c->rows[i].kind == kind)
			v[n++] = c->rows[i].median_ns;
	qsort(v, n, sizeof *v, cmp_double);
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	q->r2 = NAN;
	q->worst_rel = 0;
	q->points = n;
	for (size_t i = 0; i < n; i++) {
		double rel = fabs(v[i] - *med) / v[i];
		q->worst_rel = rel > q->worst_rel ? rel : q->worst_rel;
	}
	free(v);
	return true;
}

/* cudaMallocHost's cost as the measurement shows it: affine in the size,
 * c + b / rate (hw_host_alloc_time). On the H100 (results/calibration/
 * H100-80GB-HBM3/measurements.csv, the alloc,host_alloc rows) it is 2.2
 * to 3.3 us up to 1 MiB and then grows with the size, 356 ms at 1 GiB
 * (about 3 GB/s of pinning), so one median (0.54 ms) is 160 times too
 * much at 1 MiB and 650 times too little at 1 GiB. The line goes through
 * the smallest and the largest size measured: c and rate from those two
 * rows, worst_rel over every size. False (and the median used) when
 * fewer than two sizes were measured or the cost does not grow with the
 * size. */
static bool affine_cost(const struct cal_csv *c, enum cal_bench bench,
			int kind, double *cost, double *rate,
			struct cal_quality *q)
{
	const struct cal_row *lo = NULL, *hi = NULL;
	size_t n = 0;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != bench || r->kind != kind)
			continue;
		n++;
		if (!lo || r->size_bytes < lo->size_bytes)
			lo = r;
		if (!hi || r->size_bytes > hi->size_bytes)
			hi = r;
	}
	if (n < 2 || !(hi->size_bytes > lo->size_bytes) ||
	    !(hi->median_ns > lo->median_ns))
		return false;
	*rate = (hi->size_bytes - lo->size_bytes) * 1e9 /
		(hi->median_ns - lo->median_ns);
	/* a rate a profile cannot hold (sizes that cost about the same:
	 * the median serves) */
	if (!(*rate >= HW_BYTE_RATE_MIN && *rate <= HW_BYTE_RATE_MAX))
		return false;
	*cost = lo->median_ns - lo->size_bytes * 1e9 / *rate;
	if (*cost < 0)
		*cost = 0;
	q->r2 = NAN;
	q->worst_rel = 0;
	q->points = n;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != bench || r->kind != kind || !(r->median_ns > 0))
			continue;
		double m = *cost + r->size_bytes * 1e9 / *rate;
		double rel = fabs(m - r->median_ns) / r->median_ns;
		q->worst_rel = rel > q->worst_rel ? rel : q->worst_rel;
	}
	return true;
}

/* ---- writing ------------------------------------------------------------ */

static void put_compute(FILE *f, const char *key,
			const struct cal_compute_fit *k, double mem_bw)
{
	fprintf(f, "  %s: {peak_flops: %.6g, sat_flops: %.6g, alpha: %.4g, "
		   "mem_bw: %.6g, launch: %.0fns,\n    ",
		key, k->peak, k->sat, k->alpha, mem_bw, k->launch_ns);
	put_fit(f, "fit", &k->q);
	fprintf(f, "}\n");
}

static void put_memory(FILE *f, const char *key, const struct mem_fit *m,
		       double peak)
{
	fprintf(f, "  %s: {peak_flops: %.6g, sat_flops: 0, alpha: 1, "
		   "mem_bw: %.6g, launch: %.0fns,\n    ",
		key, peak, m->bw, m->launch_ns);
	put_fit(f, "fit", &m->q);
	fprintf(f, "}\n");
}

static void put_link(FILE *f, const char *dn, const struct link_fit *l)
{
	fprintf(f, "  %s: {bw_pinned: %.6g, bw_pageable: %.6g, latency: "
		   "%.0fns, derate: %.4g,\n    ",
		dn, l->bw_pin, l->bw_page, l->latency_ns, l->derate);
	put_fit(f, "fit", &l->q);
	if (l->has_derate) {
		fprintf(f, ",\n    ");
		put_fit(f, "derate_fit", &l->dq);
	}
	fprintf(f, "}\n");
}

/* conv_algos: one line per conv row. */
static void put_conv_algos(FILE *f, const struct cal_csv *c)
{
	static const char *const ops[] = {"conv", "conv_bwd_data",
					  "conv_bwd_filter"};
	static const char *const keys[] = {"n", "c", "h", "w", "k",
					   "r", "s", "stride", "pad"};
	bool any = false;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != CB_CONV)
			continue;
		if (!any)
			fprintf(f, "\n# Every convolution algorithm measured "
				   "(cuDNN), median time and workspace; the "
				   "executor binds\n# them to every convolution "
				   "with the same pass and geometry "
				   "(workloads/conv_algo.c).\n"
				   "conv_algos:\n");
		any = true;
		char layer[128] = "?", algo[128] = "?";
		cal_param_str(r->param, "layer", layer, sizeof layer);
		cal_param_str(r->param, "algo", algo, sizeof algo);
		fprintf(f, "  - {op: %s, layer: %s", ops[r->kind], layer);
		for (size_t j = 0; j < sizeof keys / sizeof *keys; j++) {
			int64_t v;
			if (cal_param_int(r->param, keys[j], &v) == 0)
				fprintf(f, ", %s: %lld", keys[j], (long long)v);
		}
		fprintf(f, ", algo: %s, time: %.0fns, workspace: %.0f}\n", algo,
			r->median_ns, r->size_bytes);
	}
}

/* gemms: one line per gemm row of the fitted precision (bench gemm: the
 * shapes of calibrate/gemm_shapes.h; kind the arithmetic). The profile's
 * compute.matmul is the curve of --precision's matmul rows, and the
 * workload arithmetic it times is fp32 (a TF32 profile times an fp32
 * workload's matmuls as TF32, as PyTorch does with allow_tf32=True and
 * its conv_algos: were measured with conv_math tf32); so the rows of
 * kind `kprec` are written as the fp32 workload's GEMMs, and the others
 * are left out: a TF32 profile's fp32 GEMMs otherwise took the FP32
 * rows' times, 2.7x the TF32 ones on BERT's FFN (issue 30's H100 run). */
static void put_gemms(FILE *f, const struct cal_csv *c, int kprec)
{
	static const char *const keys[] = {"batch", "m", "n", "k"};
	bool any = false;
	for (size_t i = 0; i < c->n_rows; i++) {
		const struct cal_row *r = &c->rows[i];
		if (r->bench != CB_GEMM || (int)r->kind != kprec)
			continue;
		if (!any)
			fprintf(f, "\n# Every GEMM shape measured (cuBLAS) in "
				   "%s, median time; the executor times every "
				   "matmul of\n# a generated fp32 workload with "
				   "the same shape with it (less host.launch); "
				   "math: fp32\n# is the workload's arithmetic "
				   "(fit --precision: which rows time it).\n"
				   "gemms:\n",
				cal_kinds(CB_GEMM)[kprec]);
		any = true;
		char layer[128] = "?";
		cal_param_str(r->param, "layer", layer, sizeof layer);
		fprintf(f, "  - {layer: %s", layer);
		for (size_t j = 0; j < sizeof keys / sizeof *keys; j++) {
			int64_t v;
			if (cal_param_int(r->param, keys[j], &v) == 0)
				fprintf(f, ", %s: %lld", keys[j], (long long)v);
		}
		fprintf(f, ", math: fp32, time: %.0fns}\n", r->median_ns);
	}
}

/* host.launch: the median of the launch rows (an empty kernel, timed
 * from an event recorded before its launch to one after it, the host
 * waiting for each: calibrate/gpu_bench.cu, time_gpu). For an empty
 * kernel that is the host's issue cost plus a device start latency this
 * measurement cannot separate; all of it is taken as the host's (the
 * kernel fits' launch terms hold the same cost, hw.h). 0: no launch row. */
static double host_launch_ns(const struct cal_csv *c)
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i].bench == CB_LAUNCH)
			return c->rows[i].median_ns;
	return 0;
}

/* The `, launch: N` of the host section, when measured. */
static void put_host_launch(FILE *f, const struct cal_csv *c)
{
	double l = host_launch_ns(c);
	if (l > 0)
		fprintf(f, ", launch: %.0fns", l);
}

/* The host section: the base's figures, or marked estimates; launch
 * measured (host_launch_ns). */
static int put_host(FILE *f, const struct cal_csv *c, const char *base,
		    gms_err *err)
{
	if (host_launch_ns(c) > 0)
		fprintf(f, "# host.launch: the launch row's median (an empty "
			   "kernel, event to event: the host's\n# issue cost; "
			   "taken out of every kernel's launch term, "
			   "`gpumemsim help hw`)\n");
	if (!base) {
		fprintf(f,
			"# host: NOT MEASURED - estimates (as in the shipped "
			"profiles: a scalar ZVC loop\n# handles about one "
			"4-byte word per ns, ~2-4 GB/s; the lower end). "
			"Measure with\n#   gpumemsim calibrate --host --hw "
			"THIS.yaml -o THIS.yaml\n"
			"host: {pinned: 0, cpu_threads: 1, zvc_bytes_per_s: "
			"2e9");
		put_host_launch(f, c);
		fprintf(f, "}\n");
		return 0;
	}
	struct hw_profile b;
	if (hw_load(&b, base, err) < 0)
		return gms_err_prefix(err, "--base");
	fprintf(f, "# host: from the base profile %s (not measured by this "
		   "fit)\n",
		base);
	fprintf(f, "host: {pinned: %llu, cpu_threads: %lld, zvc_bytes_per_s: "
		   "%.6g, zvc_decompress_bytes_per_s: %.6g",
		(unsigned long long)b.host_pinned, (long long)b.cpu_threads,
		b.zvc_bytes_per_s, b.zvc_decompress_bytes_per_s);
	if (b.memcpy_bytes_per_s > 0)
		fprintf(f, ", memcpy_bytes_per_s: %.6g", b.memcpy_bytes_per_s);
	put_host_launch(f, c);
	fprintf(f, "}\n");
	return 0;
}

/* The metadata as comments, and the device: section. */
static int put_device(FILE *f, const struct cal_csv *c, gms_err *err)
{
	/* measured text and a path, UTF-8 or not: the profile must load
	 * (issue 38) */
	fprintf(f, "# Measured by build/calibrate-gpu; fitted by gpumemsim "
		   "%s (`gpumemsim fit`)\n# from ",
		GMS_VERSION);
	gms_utf8_text(f, c->path);
	fprintf(f, " (%zu measurements). Measurement metadata:\n", c->n_rows);
	for (size_t i = 0; i < c->n_meta; i++) {
		fputs("#   ", f);
		gms_utf8_text(f, c->meta[i].key);
		fputs(": ", f);
		gms_utf8_text(f, c->meta[i].value);
		fputc('\n', f);
	}
	fprintf(f, "# Each figure comes with `fit: {r2, worst_rel, points}`: "
		   "R^2, the largest\n# relative residual and the points "
		   "fitted (`gpumemsim help hw`).\n");
	const char *mem = cal_meta_get(c, "memory_bytes");
	const char *fr = cal_meta_get(c, "free_bytes");
	uint64_t total, free_b = 0;
	if (!mem || gms_parse_bytes(mem, &total) < 0 || total == 0)
		return gms_errf(err, "%s: metadata 'memory_bytes' missing or "
				     "not a size (needed for "
				     "device.capacity)",
				c->path);
	if (fr && (gms_parse_bytes(fr, &free_b) < 0 || free_b > total))
		return gms_errf(err, "%s: metadata 'free_bytes': '%s' is not a "
				     "size up to memory_bytes",
				c->path, fr);
	fprintf(f, "\ndevice:\n  # capacity: totalGlobalMem; reserved: "
		   "%s\n  capacity: %llu\n  reserved: %llu\n",
		fr ? "total - free after the CUDA context and the cuDNN/cuBLAS "
		     "handles\n  # exist (cudaMemGetInfo)"
		   : "not measured (no free_bytes), 0",
		(unsigned long long)total,
		(unsigned long long)(fr ? total - free_b : 0));
	return 0;
}

/* Build the whole profile text into f. */
static int build(FILE *f, const struct cal_csv *c,
		 const struct cal_fit_opts *o, FILE *log, gms_err *err)
{
	const char *prec = o->precision ? o->precision : "fp32";
	int kprec = -1;
	for (int i = 0; cal_kinds(CB_MATMUL)[i]; i++)
		if (strcmp(cal_kinds(CB_MATMUL)[i], prec) == 0)
			kprec = i;
	if (kprec < 0)
		return gms_errf(err, "--precision: '%s' is not fp32, tf32 or "
				     "fp16",
				prec);
	if (check_conv_math(c, prec, log, err) < 0)
		return -1;
	if (o->name) { /* quoted: a JSON string is a YAML flow scalar */
		fputs("name: ", f);
		gms_json_str(f, o->name);
		fputc('\n', f);
	}
	if (put_device(f, c, err) < 0)
		return -1;

	/* compute */
	struct mem_fit mem[3];
	for (int k = 0; k < 3; k++) {
		char mrows[64];
		snprintf(mrows, sizeof mrows, "'memory,%s'",
			 cal_kinds(CB_MEMORY)[k]);
		if (fit_memory(c, k, &mem[k], err) < 0 ||
		    (mem[k].have &&
		     check_r2(c, mrows, &mem[k].q, o, log, err) < 0))
			return -1;
	}
	if (!mem[0].have)
		return missing(c, "'memory,elementwise'", "compute.memory",
			       err);
	struct cal_compute_fit mm, cv[3];
	bool have_mm, have_cv[3];
	char rows[64];
	snprintf(rows, sizeof rows, "'matmul,%s'", prec);
	if (fit_compute_rows(c, CB_MATMUL, kprec, &mm, &have_mm, err) < 0)
		return -1;
	if (!have_mm)
		return missing(c, rows, "compute.matmul", err);
	if (check_r2(c, rows, &mm.q, o, log, err) < 0)
		return -1;
	for (int k = 0; k < 3; k++) {
		char crows[64];
		snprintf(crows, sizeof crows, "'conv,%s'",
			 cal_kinds(CB_CONV)[k]);
		if (fit_compute_rows(c, CB_CONV, k, &cv[k], &have_cv[k], err) <
			    0 ||
		    (have_cv[k] &&
		     check_r2(c, crows, &cv[k].q, o, log, err) < 0))
			return -1;
	}
	double bw = mem[0].bw;
	fprintf(f, "\n# compute: t = launch + max(F / thr(F), B / mem_bw), "
		   "thr(F) = peak_flops *\n# min(1, F / sat_flops) ^ alpha "
		   "(AccUDNN 3.3.1): a grid over (sat_flops, alpha)\n# with "
		   "linear sub-fits, polished by nonlinear least squares on "
		   "relative\n# residuals. mem_bw of conv and matmul: the "
		   "elementwise kernels' fit.\ncompute:\n");
	if (have_cv[0]) {
		fprintf(f, "  # conv: cuDNN forward, fastest algorithm per "
			   "layer shape\n");
		put_compute(f, "conv", &cv[0], bw);
	} else {
		fprintf(f, "  # conv: NO conv rows (built without cuDNN?): "
			   "the matmul fit below, not measured\n");
		put_compute(f, "conv", &mm, bw);
	}
	fprintf(f, "  # matmul: cuBLAS GEMM, %s\n", prec);
	put_compute(f, "matmul", &mm, bw);
	fprintf(f, "  # memory: elementwise kernels, launch + bytes / "
		   "mem_bw; peak_flops is not fitted\n  # (the memory term "
		   "decides): the matmul peak\n");
	put_memory(f, "memory", &mem[0], mm.peak);
	if (have_cv[1])
		put_compute(f, "conv_bwd_data", &cv[1], bw);
	if (have_cv[2])
		put_compute(f, "conv_bwd_filter", &cv[2], bw);
	if (mem[1].have)
		put_memory(f, "batchnorm", &mem[1], mm.peak);
	if (mem[2].have)
		put_memory(f, "pool", &mem[2], mm.peak);

	/* link */
	struct link_fit lf[HW_DIR_COUNT];
	for (int d = 0; d < HW_DIR_COUNT; d++) {
		const char *dn = d == HW_H2D ? "h2d" : "d2h";
		char lrows[64], brows[64];
		snprintf(lrows, sizeof lrows, "copy %s", dn);
		snprintf(brows, sizeof brows, "copy %s_bidir", dn);
		if (fit_link(c, d, &lf[d], err) < 0 ||
		    check_r2(c, lrows, &lf[d].q, o, log, err) < 0 ||
		    (lf[d].has_derate &&
		     check_r2(c, brows, &lf[d].dq, o, log, err) < 0))
			return -1;
	}
	const char *eng = cal_meta_get(c, "async_engines");
	int64_t engines = 2;
	if (eng && gms_parse_int(eng, &engines) < 0)
		return gms_errf(err, "%s: metadata 'async_engines': '%s' is "
				     "not an integer",
				c->path, eng);
	fprintf(f, "\n# link: t = latency + bytes / bw, one weighted (1/t^2) "
		   "least-squares fit per\n# direction over pinned and "
		   "pageable copies (shared latency); derate: the\n# "
		   "bandwidth of copies timed while the other direction "
		   "runs / bw_pinned%s.\n# shared_engine: asyncEngineCount "
		   "%s.\nlink:\n",
		   lf[0].has_derate && lf[1].has_derate ? ""
							: " (1 where not measured)",
		   eng ? eng : "not recorded (2 assumed)");
	put_link(f, "h2d", &lf[HW_H2D]);
	put_link(f, "d2h", &lf[HW_D2H]);
	fprintf(f, "  shared_engine: %s\n", engines < 2 ? "true" : "false");

	/* costs */
	static const char *const cost_keys[] = {"malloc", "free",
						"host_alloc"};
	double cost[3] = {0, 0, 0};
	struct cal_quality cq[3];
	bool have_cost[3];
	double host_rate = 0;
	for (int k = 0; k < 3; k++)
		have_cost[k] = median_cost(c, CB_ALLOC, k, &cost[k], &cq[k]);
	bool affine = affine_cost(c, CB_ALLOC, 2, &cost[2], &host_rate,
				  &cq[2]);
	fprintf(f, "\n# costs: the median over the sizes measured "
		   "(cudaMalloc, cudaFree%s);\n# worst_rel: "
		   "the largest deviation of a size from it; 0 where not "
		   "measured.%s\ncosts: {malloc: %.0fns, free: %.0fns, "
		   "host_alloc: %.0fns",
		affine ? "" : ", cudaMallocHost",
		affine ? "\n# cudaMallocHost: host_alloc + bytes / "
			 "host_alloc_bytes_per_s, the line through the\n# "
			 "smallest and the largest size measured (docs/"
			 "host.md)."
		       : "",
		cost[0], cost[1], cost[2]);
	if (affine)
		fprintf(f, ", host_alloc_bytes_per_s: %.6g", host_rate);
	if (have_cost[0] || have_cost[1] || have_cost[2]) {
		fprintf(f, ",\n  fit: {");
		bool first = true;
		for (int k = 0; k < 3; k++) {
			if (!have_cost[k])
				continue;
			fprintf(f, "%s", first ? "" : ",\n    ");
			put_fit(f, cost_keys[k], &cq[k]);
			first = false;
		}
		fprintf(f, "}");
	}
	fprintf(f, "}\n\n");
	if (put_host(f, c, o->base, err) < 0)
		return -1;
	put_conv_algos(f, c);
	put_gemms(f, c, kprec);

	if (log) {
		fprintf(log, "fit %s (%zu rows)\n", c->path, c->n_rows);
		const char *names[] = {"conv", "conv_bwd_data",
				       "conv_bwd_filter"};
		for (int k = 0; k < 3; k++)
			if (have_cv[k])
				fprintf(log,
					"  %-16s peak %.4g FLOP/s, sat %.4g "
					"FLOPs, alpha %.3f, launch %.0f ns; "
					"R^2 %.5f, worst %.2f%%\n",
					names[k], cv[k].peak, cv[k].sat,
					cv[k].alpha, cv[k].launch_ns, cv[k].q.r2,
					100 * cv[k].q.worst_rel);
		fprintf(log,
			"  %-16s peak %.4g FLOP/s, sat %.4g FLOPs, alpha %.3f, "
			"launch %.0f ns; R^2 %.5f, worst %.2f%%\n",
			"matmul", mm.peak, mm.sat, mm.alpha, mm.launch_ns,
			mm.q.r2, 100 * mm.q.worst_rel);
		fprintf(log, "  %-16s mem_bw %.4g B/s, launch %.0f ns; R^2 "
			     "%.5f, worst %.2f%%\n",
			"memory", mem[0].bw, mem[0].launch_ns, mem[0].q.r2,
			100 * mem[0].q.worst_rel);
		for (int d = 0; d < HW_DIR_COUNT; d++)
			fprintf(log,
				"  %-16s pinned %.4g B/s, pageable %.4g B/s, "
				"latency %.0f ns, derate %.3f; R^2 %.5f, "
				"worst %.2f%%\n",
				d == HW_H2D ? "h2d" : "d2h", lf[d].bw_pin,
				lf[d].bw_page, lf[d].latency_ns, lf[d].derate,
				lf[d].q.r2, 100 * lf[d].q.worst_rel);
	}
	return 0;
}

int cal_fit_file(const char *csv, const char *out,
		 const struct cal_fit_opts *o, FILE *log, gms_err *err)
{
	struct cal_csv c;
	if (cal_csv_read(&c, csv, err) < 0)
		return -1;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		cal_csv_free(&c);
		return gms_errf(err, "out of memory");
	}
	int rc = build(f, &c, o, log, err);
	fclose(f);
	cal_csv_free(&c);
	if (rc == 0)
		rc = cal_write_profile(out, text, err);
	free(text);
	return rc;
}

int cal_write_profile(const char *out, const char *text, gms_err *err)
{
	struct hw_profile hw;
	if (hw_load_string(&hw, out, text, err) < 0)
		return gms_err_prefix(err, "internal error: the profile "
					   "written does not load");
	struct gms_out w;
	if (gms_out_open(&w, out, err) < 0)
		return -1;
	fputs(text, w.f);
	return gms_out_commit(&w, err);
}
