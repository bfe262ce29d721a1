/*
 * fit.c - turning calibration measurements (csv.c) into a hardware
 * profile the simulator loads as it is (`gpumemsim fit`).
 *
 * Copies: per direction, one weighted linear least-squares fit (GSL
 * gsl_multifit_wlinear) of t = latency + b / bw_pinned [pinned rows] +
 * b / bw_pageable [pageable rows]: the profile has one latency per
 * direction, so both memory kinds share it. Weights are 1 / t^2, i.e.
 * relative residuals are minimised; sizes span 4 KiB to 1 GiB and an
 * unweighted fit would leave the latency to the noise of the largest
 * copies. derate = bandwidth of the same fit on the `bidir` rows (each
 * direction timed while the other runs) / bw_pinned, at most 1.
 *
 * Compute (AccUDNN 3.3.1, Figure 5; the model of hw.h): per op class,
 * t = launch + F / (peak * min(1, F / sat)^alpha). The model is piecewise
 * in F, and for a fixed (sat, alpha) it is linear in (launch, 1 / peak):
 * below sat, F / thr = sat^alpha F^(1-alpha) / peak. So the fit is
 *   1. a grid over sat (log-spaced between the smallest and the largest
 *      FLOPs measured, and sat = 0: no saturation) and alpha (0.01 to 1),
 *      each point solved exactly by weighted linear least squares
 *      (gsl_fit_wlinear; launch clamped at 0);
 *   2. from the best grid point, a nonlinear least-squares polish of all
 *      four parameters (gsl_multifit_nlinear, trust region with
 *      Levenberg-Marquardt steps, finite-difference Jacobian) on the
 *      relative residuals; kept only if it lowers the residual and keeps
 *      alpha in (0, 1] and launch >= 0.
 * The grid makes the result independent of a starting guess; the polish
 * removes the grid's resolution. Convolutions take, per layer shape and
 * pass, the fastest algorithm (what cudnnFind-based frameworks pick);
 * every algorithm goes to conv_algos:.
 *
 * Memory-bound kernels: t = launch + bytes / mem_bw, the linear fit of
 * the copies. Allocation costs: the median over sizes (the model has one
 * figure per call), worst_rel = the largest relative deviation from it.
 *
 * The profile text is built in memory, loaded with hw_load_string (so it
 * is known to load) and only then written (gms_out: all or nothing).
 */
#include "calib.h"

#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_multifit_nlinear.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef GMS_VERSION
#define GMS_VERSION "unknown"
#endif

/* ---- quality -------------------------------------------------------- */

/* R^2 and worst relative residual of model values m against y. */
static void quality(const double *y, const double *m, size_t n,
		    struct cal_quality *q)
{
	double mean = 0, ss_tot = 0, ss_res = 0, worst = 0;
	for (size_t i = 0; i < n; i++)
		mean += y[i] / (double)n;
	for (size_t i = 0; i < n; i++) {
		ss_tot += (y[i] - mean) * (y[i] - mean);
		ss_res += (y[i] - m[i]) * (y[i] - m[i]);
		double rel = fabs(y[i] - m[i]) / y[i];
		if (rel > worst)
			worst = rel;
	}
	q->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
	q->worst_rel = worst;
	q->points = n;
}

/* ---- distinct points ------------------------------------------------ */

size_t cal_distinct(const double *x, size_t n, size_t p)
{
	/* quadratic, as the files are: a few hundred rows */
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = memcmp(x + i * p, x + j * p,
				      p * sizeof *x) == 0;
		d += !seen;
	}
	return d;
}

/* ---- linear least squares ------------------------------------------- */

int cal_fit_linear(const double *x, const double *y, size_t n, size_t p,
		   double *c, struct cal_quality *q, gms_err *err)
{
	size_t d = cal_distinct(x, n, p);
	if (d < p + 1)
		return gms_errf(err, "%zu distinct points (of %zu) for %zu "
				     "parameters (need at least %zu)",
				d, n, p, p + 1);
	gsl_matrix *X = gsl_matrix_alloc(n, p), *cov = gsl_matrix_alloc(p, p);
	gsl_vector *w = gsl_vector_alloc(n), *Y = gsl_vector_alloc(n),
		   *C = gsl_vector_alloc(p);
	gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, p);
	double chisq, *m = malloc(n * sizeof *m);
	int rc = 0;
	if (!X || !cov || !w || !Y || !C || !ws || !m) {
		rc = gms_errf(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p; j++)
			gsl_matrix_set(X, i, j, x[i * p + j]);
		gsl_vector_set(Y, i, y[i]);
		gsl_vector_set(w, i, 1 / (y[i] * y[i]));
	}
	size_t rank;
	/* tol 1e-12: columns of a rank-deficient design (e.g. one size
	 * only) are reported, not fitted to noise */
	if (gsl_multifit_wlinear_tsvd(X, w, Y, 1e-12, C, cov, &chisq, &rank,
				      ws) != GSL_SUCCESS ||
	    rank < p) {
		rc = gms_errf(err, "the measurements do not determine the %zu "
				   "parameters (rank %zu): too few distinct "
				   "sizes",
			      p, rank);
		goto out;
	}
	for (size_t j = 0; j < p; j++)
		c[j] = gsl_vector_get(C, j);
	for (size_t i = 0; i < n; i++) {
		m[i] = 0;
		for (size_t j = 0; j < p; j++)
			m[i] += c[j] * x[i * p + j];
	}
	quality(y, m, n, q);
out:
	free(m);
	gsl_multifit_linear_free(ws);
	gsl_vector_free(C);
	gsl_vector_free(Y);
	gsl_vector_free(w);
	gsl_matrix_free(cov);
	gsl_matrix_free(X);
	return rc;
}

/* ---- the compute model ---------------------------------------------- */

/* F / thr(F) in units of 1 / peak: F at and beyond saturation,
 * sat^alpha F^(1-alpha) below it. */
static double work(double F, double sat, double alpha)
{
	return sat > 0 && F < sat ? pow(sat, alpha) * pow(F, 1 - alpha) : F;
}

/* Model time in ns. */
static double model_ns(const struct cal_compute_fit *f, double F)
{
	return f->launch_ns + work(F, f->sat, f->alpha) * 1e9 / f->peak;
}

/* Sum of squared relative residuals. */
static double rel_ssr(const struct cal_compute_fit *f, const double *F,
		      const double *t, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double r = (t[i] - model_ns(f, F[i])) / t[i];
		s += r * r;
	}
	return s;
}

/* For fixed sat and alpha: launch and peak by weighted linear least
 * squares (launch >= 0), from g[i] = work(F[i], sat, alpha) (the
 * caller's). Returns 0, or -1 when no positive peak fits. */
static int inner_fit(const double *t, const double *w, const double *g,
		     size_t n, double sat, double alpha,
		     struct cal_compute_fit *f)
{
	double c0, c1, cov00, cov01, cov11, chisq;
	gsl_fit_wlinear(g, 1, w, 1, t, 1, n, &c0, &c1, &cov00, &cov01, &cov11,
			&chisq);
	if (!(c0 >= 0)) {
		c0 = 0;
		gsl_fit_wmul(g, 1, w, 1, t, 1, n, &c1, &cov11, &chisq);
	}
	if (!(c1 > 0) || !isfinite(c1))
		return -1;
	f->launch_ns = c0;
	f->peak = 1e9 / c1;
	f->sat = sat;
	f->alpha = alpha;
	return 0;
}

/* rel_ssr with work(F[i], f->sat, f->alpha) given as g[i]: the same
 * arithmetic as model_ns, term for term (issue 37). */
static double rel_ssr_g(const struct cal_compute_fit *f, const double *g,
			const double *t, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double r = (t[i] - (f->launch_ns + g[i] * 1e9 / f->peak)) /
			   t[i];
		s += r * r;
	}
	return s;
}

/* Data for the nonlinear polish. */
struct nl_data {
	const double *F; /* FLOPs */
	const double *t; /* ns */
	size_t n;	 /* points */
};

/* x = (launch in us, ln peak, ln sat, alpha). */
static void nl_unpack(const gsl_vector *x, struct cal_compute_fit *f)
{
	f->launch_ns = gsl_vector_get(x, 0) * 1e3;
	f->peak = exp(gsl_vector_get(x, 1));
	f->sat = exp(gsl_vector_get(x, 2));
	f->alpha = gsl_vector_get(x, 3);
}

static int nl_residuals(const gsl_vector *x, void *data, gsl_vector *r)
{
	const struct nl_data *d = data;
	struct cal_compute_fit f;
	nl_unpack(x, &f);
	for (size_t i = 0; i < d->n; i++)
		gsl_vector_set(r, i, (d->t[i] - model_ns(&f, d->F[i])) / d->t[i]);
	return GSL_SUCCESS;
}

/* Polish f (sat > 0) with gsl_multifit_nlinear; f changes only when the
 * polished fit is valid and better. */
static void nl_polish(const double *F, const double *t, size_t n,
		      struct cal_compute_fit *f)
{
	if (n < 5 || !(f->sat > 0))
		return;
	struct nl_data d = {F, t, n};
	gsl_multifit_nlinear_fdf fdf = {.f = nl_residuals, .df = NULL,
					.fvv = NULL, .n = n, .p = 4,
					.params = &d};
	gsl_multifit_nlinear_parameters prm =
		gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(
		gsl_multifit_nlinear_trust, &prm, n, 4);
	if (!w)
		return;
	double x0[4] = {f->launch_ns / 1e3, log(f->peak), log(f->sat),
			f->alpha};
	gsl_vector_view xv = gsl_vector_view_array(x0, 4);
	gsl_error_handler_t *old = gsl_set_error_handler_off();
	int info;
	gsl_multifit_nlinear_init(&xv.vector, &fdf, w);
	int st = gsl_multifit_nlinear_driver(200, 1e-12, 1e-12, 1e-12, NULL,
					     NULL, &info, w);
	gsl_set_error_handler(old);
	struct cal_compute_fit p = *f;
	nl_unpack(gsl_multifit_nlinear_position(w), &p);
	if ((st == GSL_SUCCESS || st == GSL_EMAXITER) && p.alpha > 0 &&
	    p.alpha <= 1 && p.launch_ns >= 0 && isfinite(p.peak) &&
	    isfinite(p.sat) && rel_ssr(&p, F, t, n) < rel_ssr(f, F, t, n))
		*f = p;
	gsl_multifit_nlinear_free(w);
}

/* Grid resolution: 120 saturation points over the measured FLOP range
 * and alpha in steps of 0.01; the polish refines the best. */
enum { SAT_GRID = 120, ALPHA_GRID = 100 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int cal_fit_grid(const double *F, const double *t, size_t n,
		 struct cal_compute_fit *f, gms_err *err)
{
	/* four parameters: at least one point more, at distinct FLOP
	 * counts (repeats of one count determine one time only) */
	size_t d = cal_distinct(F, n, 1);
	if (d < 5)
		return gms_errf(err, "%zu distinct FLOP counts (of %zu points; "
				     "need at least 5)",
				d, n);
	double fmin = F[0], fmax = F[0];
	for (size_t i = 0; i < n; i++) {
		if (!(F[i] > 0))
			return gms_errf(err, "a point with %g FLOPs", F[i]);
		fmin = F[i] < fmin ? F[i] : fmin;
		fmax = F[i] > fmax ? F[i] : fmax;
	}
	/* Speed (issue 37): the grid evaluates work(F, sat, alpha) =
	 * pow(sat, alpha) * pow(F, 1 - alpha) 121 x 100 times per sample.
	 * pow(F, 1 - alpha) depends on the alpha step and the FLOP count
	 * only, so it is tabled once per (alpha, distinct F) (samples
	 * repeat FLOP counts: the same layer shape in many passes), and
	 * pow(sat, alpha) once per cell. Each g[i] is then the same product
	 * of the same two pow() values as work() computes, the linear fits
	 * see the same g[] in the same order, and rel_ssr_g the same model
	 * values: the grid's result is bit for bit the per-sample one. */
	size_t *idx = malloc(n * sizeof *idx);
	double *w = malloc(n * sizeof *w), *g = malloc(n * sizeof *g),
	       *u = malloc(n * sizeof *u),
	       *pf = malloc((size_t)ALPHA_GRID * d * sizeof *pf);
	if (!idx || !w || !g || !u || !pf) {
		free(idx);
		free(w);
		free(g);
		free(u);
		free(pf);
		return gms_errf(err, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		w[i] = 1 / (t[i] * t[i]);
	/* u: the distinct FLOP counts, ascending; idx[i]: F[i]'s place */
	memcpy(u, F, n * sizeof *u);
	qsort(u, n, sizeof *u, cmp_double);
	size_t nu = 0;
	for (size_t i = 0; i < n; i++)
		if (nu == 0 || u[i] != u[nu - 1])
			u[nu++] = u[i];
	for (size_t i = 0; i < n; i++) {
		size_t lo = 0, hi = nu - 1;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (u[mid] < F[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		idx[i] = lo;
	}
	for (int a = 1; a <= ALPHA_GRID; a++) {
		double alpha = (double)a / ALPHA_GRID;
		for (size_t k = 0; k < nu; k++)
			pf[(size_t)(a - 1) * nu + k] = pow(u[k], 1 - alpha);
	}
	double best = INFINITY;
	struct cal_compute_fit c;
	/* sat = 0 first: no saturation (alpha irrelevant): work() = F */
	if (inner_fit(t, w, F, n, 0, 1, &c) == 0) {
		best = rel_ssr_g(&c, F, t, n);
		*f = c;
	}
	/* i = 0 is sat = fmin * pow(.., 0) = fmin exactly: no F lies below
	 * it, g[] = F as at sat = 0, so each of its fits is the sat = 0 fit
	 * with the same residual, which `s < best` never takes: the row is
	 * skipped */
	for (int i = 1; i <= SAT_GRID && fmax > fmin; i++) {
		double sat = fmin * pow(fmax / fmin, (double)i / SAT_GRID);
		for (int a = 1; a <= ALPHA_GRID; a++) {
			double alpha = (double)a / ALPHA_GRID;
			double ps = pow(sat, alpha);
			const double *pa = pf + (size_t)(a - 1) * nu;
			for (size_t k = 0; k < n; k++)
				g[k] = sat > 0 && F[k] < sat ? ps * pa[idx[k]]
							     : F[k];
			if (inner_fit(t, w, g, n, sat, alpha, &c) < 0)
				continue;
			double s = rel_ssr_g(&c, g, t, n);
			if (s < best) {
				best = s;
				*f = c;
			}
		}
	}
	free(idx);
	free(w);
	free(g);
	free(u);
	free(pf);
	if (!isfinite(best))
		return gms_errf(err, "no positive throughput fits the points");
	return 0;
}

int cal_fit_compute(const double *F, const double *t, size_t n,
		    struct cal_compute_fit *f, gms_err *err)
{
	if (cal_fit_grid(F, t, n, f, err) < 0)
		return -1;
	double fmin = F[0];
	for (size_t i = 0; i < n; i++)
		fmin = F[i] < fmin ? F[i] : fmin;
	nl_polish(F, t, n, f);
	/* a saturation point at or below every measurement is no
	 * saturation: the model is then F / peak throughout */
	if (f->sat <= fmin) {
		f->sat = 0;
		f->alpha = 1;
	}
	double *m = malloc(n * sizeof *m);
	if (!m)
		return gms_errf(err, "out of memory");
	for (size_t i = 0; i < n; i++)
		m[i] = model_ns(f, F[i]);
	quality(t, m, n, &f->q);
	free(m);
	return 0;
}
