/*
 * optimal_milp.c - build the joint swap/recompute MILP and solve it with
 * CBC's C API (Cbc_C_Interface.h, Debian coinor-libcbc-dev).
 *
 * Notation (README, "The optimal policy"). Stages t = 0..T-1 are the ops
 * in issue order. For a managed tensor j (produced this iteration, not
 * persistent) p = its producer, L = its last reader (the executor frees a
 * tensor after its last reader, so nothing may keep it longer; later
 * stages regenerate it only by recomputation). For an op i, L_i = the
 * last stage in which re-running i can serve anything: i itself, or, when
 * i is recomputable, the largest L_r over the readers r of its outputs.
 *
 *   R[t,i]  op i (< t, recomputable) is re-run in stage t;  R[t,t] = 1
 *   S[t,j]  j is resident at the start of stage t         (p < t <= L)
 *   O[t,j]  j is copied to the host during stage t (D2H)  (p < t < L)
 *   I[t,j]  j is copied back during stage t (H2D), resident from t+1
 *   H[t,j]  the host holds a valid copy of j at stage t   (p+1 < t < L)
 *   st[t]   the stall of stage t, continuous >= 0
 *
 * Checkmate (Jain et al., MLSys 2020, section 4; parasj/checkmate's
 * solver and POET's copy of it, ucbrise/poet poet_solver.py):
 *   "R[t][v] <= R[t][u] + SRam[t][u]" for every edge u -> v:
 *       (1) R[t,i] <= S[t,j] + R[t,p(j)]     every managed input j of i
 *   "SRam[t+1][i] <= SRam[t][i] + R[t][i] + MIn[t][i]" (POET adds MIn):
 *       (2) S[t+1,j] <= S[t,j] + R[t,p] + I[t,j]
 *   POET's "MOut[i][j] <= SRam[i][j]" and "MIn[i][j] <= SSd[i][j]":
 *       (3) O[t,j] <= S[t,j],   I[t,j] <= H[t,j]
 *   POET's "SSd[t+1][i] <= SSd[t][i] + MOut[t][i]", less what a swap-in
 *   consumes (the executor drops the host copy when it swaps a tensor in,
 *   sim/ex.c swap_in_done):
 *       (4) H[t+1,j] <= H[t,j] + O[t,j] - I[t,j]
 * Memory, per stage (conservative where Checkmate frees inside a stage
 * with its FREE variables: everything resident, recomputed or arriving in
 * stage t is counted for the whole stage, and each recomputation's
 * workspace too; the fixed tensors in every stage):
 *       (5) sum_j b_j S[t,j] + sum_i (out_i + ws_i) R[t,i]
 *           + sum_j b_j I[t,j] <= B - fixed - out_t - ws_t
 * Time (new here: POET charges a transfer energy, not time; Beaumont et
 * al., NeurIPS 2021, time offloads on chains only). Each copy engine is
 * serial and runs beside the stage's compute C_t = c_t + sum c_i R[t,i]:
 *       (6) st[t] >= sum_j h_j I[t,j] - C_t,
 *           st[t] >= sum_j d_j O[t,j] - C_t,   st[t] >= 0
 * Objective: sum_t (C_t + st[t]) = compute + recompute + stalls.
 */
#include "optimal_milp.h"

#include <Cbc_C_Interface.h>
/* CLP's header declares ClpSolve_new() without a prototype */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <Clp_C_Interface.h>
#pragma GCC diagnostic pop
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <errno.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CBC and CLP, loaded at run time (issue 37): linked, they put 15 of
 * the program's 23 shared libraries before main() of every command, about
 * three quarters of a small `simulate`'s instructions in the dynamic
 * linker, though only the optimal policy solves. dlopen(3) loads
 * libCbcSolver (the soname of Debian's coinor-libcbc-dev; the Makefile
 * reads it from the library the headers came with) and its dependencies,
 * CLP's libClp among them, whose symbols dlsym(3) finds through the same
 * handle ("the symbol resolution algorithm used shall be dependency order
 * as described in dlopen()", POSIX dlsym). Only the functions this file
 * calls are resolved, each typed as its declaration in
 * Cbc_C_Interface.h / Clp_C_Interface.h. */
#ifndef GMS_CBC_SONAME
#define GMS_CBC_SONAME "libCbcSolver.so.3"
#endif
const char *const opt_lib_soname = GMS_CBC_SONAME;

struct opt_lib {
	void *h;
	Clp_Simplex *(*Clp_newModel)(void);
	void (*Clp_deleteModel)(Clp_Simplex *);
	void (*Clp_loadProblem)(Clp_Simplex *, int, int, const CoinBigIndex *,
				const int *, const double *, const double *,
				const double *, const double *, const double *,
				const double *);
	void (*Clp_setLogLevel)(Clp_Simplex *, int);
	void (*Clp_setMaximumIterations)(Clp_Simplex *, int);
	int (*Clp_dual)(Clp_Simplex *, int);
	int (*Clp_isProvenOptimal)(Clp_Simplex *);
	int (*Clp_isProvenPrimalInfeasible)(Clp_Simplex *);
	double (*Clp_objectiveValue)(Clp_Simplex *);
	int (*Clp_numberIterations)(Clp_Simplex *);
	int (*Clp_isIterationLimitReached)(Clp_Simplex *);
	Cbc_Model *(*Cbc_newModel)(void);
	void (*Cbc_loadProblem)(Cbc_Model *, int, int, const CoinBigIndex *,
				const int *, const double *, const double *,
				const double *, const double *, const double *,
				const double *);
	void (*Cbc_setInteger)(Cbc_Model *, int);
	void (*Cbc_setMIPStartI)(Cbc_Model *, int, const int *,
				 const double *);
	void (*Cbc_setLogLevel)(Cbc_Model *, int);
	void (*Cbc_setParameter)(Cbc_Model *, const char *, const char *);
	int (*Cbc_solve)(Cbc_Model *);
	double *(*Cbc_bestSolution)(Cbc_Model *);
	int (*Cbc_isProvenInfeasible)(Cbc_Model *);
	int (*Cbc_isProvenOptimal)(Cbc_Model *);
	double (*Cbc_getObjValue)(Cbc_Model *);
	double (*Cbc_getBestPossibleObjValue)(Cbc_Model *);
	int (*Cbc_getNodeCount)(Cbc_Model *);
	int (*Cbc_getIterationCount)(Cbc_Model *);
	int (*Cbc_isNodeLimitReached)(Cbc_Model *);
};

/* each pointer typed as the headers declare its function (_Generic's
 * operand is not evaluated: no reference to the symbol is linked) */
#define SAME_TYPE(f)                                                       \
	_Static_assert(_Generic(&f, __typeof__(((struct opt_lib *)0)->f): 1, \
				default: 0),                               \
		       #f " is typed as its declaration")
SAME_TYPE(Clp_newModel);
SAME_TYPE(Clp_deleteModel);
SAME_TYPE(Clp_loadProblem);
SAME_TYPE(Clp_setLogLevel);
SAME_TYPE(Clp_setMaximumIterations);
SAME_TYPE(Clp_dual);
SAME_TYPE(Clp_isProvenOptimal);
SAME_TYPE(Clp_isProvenPrimalInfeasible);
SAME_TYPE(Clp_objectiveValue);
SAME_TYPE(Clp_numberIterations);
SAME_TYPE(Clp_isIterationLimitReached);
SAME_TYPE(Cbc_newModel);
SAME_TYPE(Cbc_loadProblem);
SAME_TYPE(Cbc_setInteger);
SAME_TYPE(Cbc_setMIPStartI);
SAME_TYPE(Cbc_setLogLevel);
SAME_TYPE(Cbc_setParameter);
SAME_TYPE(Cbc_solve);
SAME_TYPE(Cbc_bestSolution);
SAME_TYPE(Cbc_isProvenInfeasible);
SAME_TYPE(Cbc_isProvenOptimal);
SAME_TYPE(Cbc_getObjValue);
SAME_TYPE(Cbc_getBestPossibleObjValue);
SAME_TYPE(Cbc_getNodeCount);
SAME_TYPE(Cbc_getIterationCount);
SAME_TYPE(Cbc_isNodeLimitReached);
#undef SAME_TYPE

#define LIB_FN(f) {#f, offsetof(struct opt_lib, f)}
static const struct {
	const char *name;
	size_t off;
} lib_fns[] = {
	LIB_FN(Clp_newModel), LIB_FN(Clp_deleteModel),
	LIB_FN(Clp_loadProblem), LIB_FN(Clp_setLogLevel),
	LIB_FN(Clp_setMaximumIterations), LIB_FN(Clp_dual),
	LIB_FN(Clp_isProvenOptimal), LIB_FN(Clp_isProvenPrimalInfeasible),
	LIB_FN(Clp_objectiveValue), LIB_FN(Clp_numberIterations),
	LIB_FN(Clp_isIterationLimitReached), LIB_FN(Cbc_newModel),
	LIB_FN(Cbc_loadProblem), LIB_FN(Cbc_setInteger),
	LIB_FN(Cbc_setMIPStartI), LIB_FN(Cbc_setLogLevel),
	LIB_FN(Cbc_setParameter), LIB_FN(Cbc_solve),
	LIB_FN(Cbc_bestSolution), LIB_FN(Cbc_isProvenInfeasible),
	LIB_FN(Cbc_isProvenOptimal), LIB_FN(Cbc_getObjValue),
	LIB_FN(Cbc_getBestPossibleObjValue), LIB_FN(Cbc_getNodeCount),
	LIB_FN(Cbc_getIterationCount), LIB_FN(Cbc_isNodeLimitReached),
};
#undef LIB_FN

int opt_lib_open_named(const char *soname, struct opt_lib **out,
		       gms_err *err)
{
	*out = NULL;
	struct opt_lib *l = calloc(1, sizeof *l);
	if (!l)
		return gms_errf(err, "out of memory");
	l->h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!l->h) {
		const char *why = dlerror();
		free(l);
		return gms_errf(err,
				"the optimal policy needs COIN-OR CBC, and "
				"%s could not be loaded (%s); install "
				"coinor-libcbc-dev (make deps)",
				soname, why ? why : "no reason given");
	}
	for (size_t k = 0; k < sizeof lib_fns / sizeof lib_fns[0]; k++) {
		dlerror();
		void *sym = dlsym(l->h, lib_fns[k].name);
		if (!sym) {
			gms_errf(err, "%s has no function %s: not the CBC "
				 "the optimal policy was built for",
				 soname, lib_fns[k].name);
			dlclose(l->h);
			free(l);
			return -1;
		}
		/* POSIX dlsym, Application Usage: a void * from dlsym is
		 * converted to a function pointer through its bytes, which
		 * ISO C leaves undefined and POSIX requires to work */
		_Static_assert(sizeof sym == sizeof(void (*)(void)),
			       "a data pointer holds a function pointer");
		memcpy((char *)l + lib_fns[k].off, &sym, sizeof sym);
	}
	*out = l;
	return 0;
}

int opt_lib_open(struct opt_lib **out, gms_err *err)
{
	return opt_lib_open_named(opt_lib_soname, out, err);
}

void opt_lib_close(struct opt_lib *l)
{
	if (!l)
		return;
	dlclose(l->h);
	free(l);
}

const char *const opt_status_names[] = {"optimal", "stopped",
					"no-solution", "infeasible"};


const char *opt_search_used(int search, uint64_t n_vars)
{
	return search == OPT_SEARCH_LP ||
				       (search == OPT_SEARCH_AUTO &&
					n_vars > OPT_FULL_MAX_VARS)
		       ? "lp"
		       : "full";
}

/* Column layout: one base per op (R) and per tensor (S, O, I, H). */
struct lay {
	const struct opt_in *in;
	const struct wl_workload *wl;
	uint32_t T;
	uint32_t *L;	 /* per tensor: last reader (managed) */
	uint32_t *Lop;	 /* per op: last stage it may be re-run in */
	int64_t *Rb, *Sb, *Ob, *Ib, *Hb; /* -1: none */
	int64_t STb, n;
	uint64_t *ob;	 /* per op: managed output bytes */
};

/* j's producer, or -1 for the input batch (resident from the start) */
static int64_t prod(const struct lay *y, uint32_t j)
{
	uint32_t p = y->wl->tensors[j].producer;
	return p == WL_NONE ? -1 : (int64_t)p;
}

/* Bytes op t's first output takes over from its first input, in place:
 * the executor's rule (sim/ex.c alloc_outputs) as far as the graph tells
 * it: an in-place op, both tensors managed, t the input's last reader,
 * the output no larger. */
static uint64_t inplace_share(const struct opt_in *in, uint32_t t)
{
	const struct wl_op *o = &in->wl->ops[t];
	if (!o->inplace || !o->n_in || !o->n_out)
		return 0;
	const struct wl_tensor *a = &in->wl->tensors[o->in[0]];
	const struct wl_tensor *b = &in->wl->tensors[o->out[0]];
	if (!in->managed[a->id] || !in->managed[b->id] || !a->n_readers ||
	    a->readers[a->n_readers - 1] != t ||
	    a->release_after != WL_NONE || b->bytes > a->bytes)
		return 0;
	return b->bytes;
}

static int64_t colR(const struct lay *y, uint32_t i, uint32_t t)
{
	if (i >= y->T || y->Rb[i] < 0 || t <= i || t > y->Lop[i])
		return -1;
	return y->Rb[i] + (t - i - 1);
}

static int64_t colS(const struct lay *y, uint32_t j, uint32_t t)
{
	if (y->Sb[j] < 0 || (int64_t)t <= prod(y, j) || t > y->L[j])
		return -1;
	return y->Sb[j] + (t - prod(y, j) - 1);
}

/* O and I: stages p+1 .. L-1 */
static int64_t colOI(const struct lay *y, const int64_t *base, uint32_t j,
		     uint32_t t)
{
	if (base[j] < 0 || (int64_t)t <= prod(y, j) || t + 1 > y->L[j])
		return -1;
	return base[j] + (t - prod(y, j) - 1);
}

/* H: stages p+2 .. L-1 */
static int64_t colH(const struct lay *y, uint32_t j, uint32_t t)
{
	if (y->Hb[j] < 0 || (int64_t)t < prod(y, j) + 2 || t + 1 > y->L[j])
		return -1;
	return y->Hb[j] + (t - prod(y, j) - 2);
}

static void lay_free(struct lay *y)
{
	free(y->L);
	free(y->Lop);
	free(y->Rb);
	free(y->Sb);
	free(y->Ob);
	free(y->Ib);
	free(y->Hb);
	free(y->ob);
}

/* The column layout; -1 on out of memory. */
static int lay_build(struct lay *y, const struct opt_in *in)
{
	const struct wl_workload *wl = in->wl;
	memset(y, 0, sizeof *y);
	y->in = in;
	y->wl = wl;
	y->T = wl->n_ops;
	uint32_t T = wl->n_ops, N = wl->n_tensors;
	y->L = calloc(N ? N : 1, sizeof *y->L);
	y->Lop = calloc(T ? T : 1, sizeof *y->Lop);
	y->Rb = malloc((T ? T : 1) * sizeof *y->Rb);
	y->ob = calloc(T ? T : 1, sizeof *y->ob);
	y->Sb = malloc((N ? N : 1) * sizeof *y->Sb);
	y->Ob = malloc((N ? N : 1) * sizeof *y->Ob);
	y->Ib = malloc((N ? N : 1) * sizeof *y->Ib);
	y->Hb = malloc((N ? N : 1) * sizeof *y->Hb);
	if (!y->L || !y->Lop || !y->Rb || !y->ob || !y->Sb || !y->Ob ||
	    !y->Ib || !y->Hb)
		return -1;
	for (uint32_t j = 0; j < N; j++) {
		const struct wl_tensor *x = &wl->tensors[j];
		y->L[j] = x->n_readers ? x->readers[x->n_readers - 1]
				       : x->producer;
		if (in->managed[j] && x->producer != WL_NONE)
			y->ob[x->producer] += x->bytes;
	}
	/* L_i, readers after producers: a reverse walk sees L_r first */
	for (uint32_t k = T; k-- > 0;) {
		const struct wl_op *o = &wl->ops[k];
		y->Lop[k] = k;
		if (!in->remat || !o->recomputable)
			continue;
		for (uint32_t a = 0; a < o->n_out; a++) {
			const struct wl_tensor *x = &wl->tensors[o->out[a]];
			if (!in->managed[x->id])
				continue;
			for (uint32_t r = 0; r < x->n_readers; r++)
				if (y->Lop[x->readers[r]] > y->Lop[k])
					y->Lop[k] = y->Lop[x->readers[r]];
		}
		/* the executor cannot regenerate the input batch: a re-run
		 * must come while it is still there (ex_drop's lineage rule,
		 * sim/ex.h) */
		for (uint32_t a = 0; a < o->n_in; a++)
			if (in->managed[o->in[a]] &&
			    wl->tensors[o->in[a]].producer == WL_NONE &&
			    y->L[o->in[a]] < y->Lop[k])
				y->Lop[k] = y->L[o->in[a]] > k
						    ? y->L[o->in[a]]
						    : k;
	}
	int64_t n = 0;
	for (uint32_t k = 0; k < T; k++) {
		y->Rb[k] = y->Lop[k] > k ? n : -1;
		n += y->Lop[k] - k;
	}
	for (uint32_t j = 0; j < N; j++) {
		y->Sb[j] = y->Ob[j] = y->Ib[j] = y->Hb[j] = -1;
		if (!in->managed[j])
			continue;
		int64_t p = prod(y, j), L = y->L[j];
		if (L > p) {
			y->Sb[j] = n;
			n += L - p;
		}
		if (in->swap && L > p + 1) {
			y->Ob[j] = n;
			n += L - p - 1;
			y->Ib[j] = n;
			n += L - p - 1;
		}
		if (in->swap && L > p + 2) {
			y->Hb[j] = n;
			n += L - p - 2;
		}
	}
	y->STb = n;
	y->n = n + T;
	return 0;
}

/* A row under construction. */
struct row {
	int *col;
	double *val;
	int n, cap;
};

static int row_add(struct row *r, int64_t col, double v)
{
	if (col < 0)
		return 0;
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 16;
		int *c = realloc(r->col, (size_t)cap * sizeof *c);
		if (!c)
			return -1;
		r->col = c;
		double *w = realloc(r->val, (size_t)cap * sizeof *w);
		if (!w)
			return -1;
		r->val = w;
		r->cap = cap;
	}
	r->col[r->n] = (int)col;
	r->val[r->n++] = v;
	return 0;
}

/* The constraint matrix as triplets, loaded into CBC at once
 * (Cbc_loadProblem): adding rows one by one costs CBC time quadratic in
 * the model (69 s for the 376-op recorded transformer). */
struct mat {
	int *er, *ec;	    /* entries: row, column */
	double *ev;	    /* and value */
	size_t n, cap;
	double *lo, *hi;    /* row bounds */
	int rows, rcap;
};

static int mat_row(struct mat *a, const struct row *r, char sense,
		   double rhs)
{
	if (a->rows == a->rcap) {
		int cap = a->rcap ? 2 * a->rcap : 256;
		double *lo = realloc(a->lo, (size_t)cap * sizeof *lo);
		if (!lo)
			return -1;
		a->lo = lo;
		double *hi = realloc(a->hi, (size_t)cap * sizeof *hi);
		if (!hi)
			return -1;
		a->hi = hi;
		a->rcap = cap;
	}
	if (a->n + (size_t)r->n > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 1024;
		while (cap < a->n + (size_t)r->n)
			cap *= 2;
		int *er = realloc(a->er, cap * sizeof *er);
		if (!er)
			return -1;
		a->er = er;
		int *ec = realloc(a->ec, cap * sizeof *ec);
		if (!ec)
			return -1;
		a->ec = ec;
		double *ev = realloc(a->ev, cap * sizeof *ev);
		if (!ev)
			return -1;
		a->ev = ev;
		a->cap = cap;
	}
	for (int k = 0; k < r->n; k++) {
		a->er[a->n] = a->rows;
		a->ec[a->n] = r->col[k];
		a->ev[a->n++] = r->val[k];
	}
	a->lo[a->rows] = sense == 'L' ? -DBL_MAX : rhs;
	a->hi[a->rows] = sense == 'G' ? DBL_MAX : rhs;
	a->rows++;
	return 0;
}

static void mat_free(struct mat *a)
{
	free(a->er);
	free(a->ec);
	free(a->ev);
	free(a->lo);
	free(a->hi);
}

/* The matrix column-major (CBC's and CLP's loadProblem); -1 on out of
 * memory. */
struct csc {
	CoinBigIndex *start;
	int *idx;
	double *val;
};

static int mat_csc(const struct mat *a, int ncols, struct csc *c)
{
	c->start = calloc((size_t)ncols + 1, sizeof *c->start);
	c->idx = malloc((a->n ? a->n : 1) * sizeof *c->idx);
	c->val = malloc((a->n ? a->n : 1) * sizeof *c->val);
	CoinBigIndex *fill = calloc((size_t)ncols + 1, sizeof *fill);
	if (!c->start || !c->idx || !c->val || !fill) {
		free(fill);
		return -1;
	}
	for (size_t k = 0; k < a->n; k++)
		c->start[a->ec[k] + 1]++;
	for (int col = 0; col < ncols; col++)
		c->start[col + 1] += c->start[col];
	memcpy(fill, c->start, ((size_t)ncols + 1) * sizeof *fill);
	for (size_t k = 0; k < a->n; k++) {
		CoinBigIndex at = fill[a->ec[k]]++;
		c->idx[at] = a->er[k];
		c->val[at] = a->ev[k];
	}
	free(fill);
	return 0;
}

static void csc_free(struct csc *c)
{
	free(c->start);
	free(c->idx);
	free(c->val);
}

/* A heuristic schedule as a full column vector (the MIP start): the
 * framework's (everything resident from production to last reader) or
 * swap-all (between two uses far enough apart, a tensor is copied out
 * beside the first use, or in the stage after its producer's, and
 * copied back in the stage before the second). No
 * recomputation. Fills x and returns its objective, or -1 when it breaks
 * a memory row. */
static double heuristic(const struct lay *y, bool swap_all, double *x,
			const double *rhs_mem)
{
	const struct opt_in *in = y->in;
	const struct wl_workload *wl = y->wl;
	uint32_t T = y->T;
	memset(x, 0, (size_t)y->n * sizeof *x);
	double *mem = calloc(T ? T : 1, sizeof *mem);
	double *h2d = calloc(T ? T : 1, sizeof *h2d);
	double *d2h = calloc(T ? T : 1, sizeof *d2h);
	double obj = -1;
	if (!mem || !h2d || !d2h)
		goto out;
	for (uint32_t j = 0; j < wl->n_tensors; j++) {
		if (y->Sb[j] < 0)
			continue;
		const struct wl_tensor *w = &wl->tensors[j];
		double b = (double)w->bytes;
		int64_t a = prod(y, j), born = a;
		for (uint32_t k = 0; k < w->n_readers; k++) {
			uint32_t r = w->readers[k];
			/* the copy out: beside the previous reader, or in
			 * the stage after the producer's */
			uint32_t o = (uint32_t)(a == born ? a + 1 : a);
			if (swap_all && y->Hb[j] >= 0 && r >= o + 2) {
				if ((int64_t)o != a) {
					x[colS(y, j, o)] = 1;
					mem[o] += b;
				}
				x[colOI(y, y->Ob, j, o)] = 1;
				d2h[o] += (double)in->t_d2h[j];
				for (uint32_t t = o + 1; t < r; t++)
					x[colH(y, j, t)] = 1;
				x[colOI(y, y->Ib, j, r - 1)] = 1;
				h2d[r - 1] += (double)in->t_h2d[j];
				mem[r - 1] += b;
				x[colS(y, j, r)] = 1;
				mem[r] += b;
			} else {
				for (uint32_t t = (uint32_t)(a + 1); t <= r;
				     t++) {
					x[colS(y, j, t)] = 1;
					mem[t] += b;
				}
			}
			a = r;
		}
	}
	obj = 0;
	for (uint32_t t = 0; t < T; t++) {
		if (mem[t] > rhs_mem[t]) {
			obj = -1;
			goto out;
		}
		double c = (double)in->op_time[t];
		double st = fmax(0, fmax(h2d[t] - c, d2h[t] - c));
		x[y->STb + t] = st;
		obj += c + st;
	}
out:
	free(mem);
	free(h2d);
	free(d2h);
	return obj;
}

void opt_sched_free(struct opt_sched *s)
{
	free(s->rc_off);
	free(s->rc);
	free(s->in_off);
	free(s->in);
	free(s->out_off);
	free(s->out);
	free(s->rel_off);
	free(s->rel);
	free(s->rel_evict);
	free(s->mem);
	free(s->stall);
	memset(s, 0, sizeof *s);
}

/* A copy of n elements of size sz (NULL stays NULL; *fail set when
 * out of memory). */
static void *dup_n(const void *src, size_t n, size_t sz, int *fail)
{
	if (!src)
		return NULL;
	void *d = malloc((n ? n : 1) * sz);
	if (!d)
		*fail = 1;
	else
		memcpy(d, src, n * sz);
	return d;
}

int opt_sched_copy(struct opt_sched *dst, const struct opt_sched *src)
{
	*dst = *src;
	uint32_t T = src->n_stages;
	size_t nrc = src->rc_off ? src->rc_off[T] : 0,
	       nin = src->in_off ? src->in_off[T] : 0,
	       nout = src->out_off ? src->out_off[T] : 0,
	       nrel = src->rel_off ? src->rel_off[T] : 0;
	size_t to = (size_t)T + 1;
	int fail = 0;
	dst->rc_off = dup_n(src->rc_off, to, sizeof *src->rc_off, &fail);
	dst->rc = dup_n(src->rc, nrc, sizeof *src->rc, &fail);
	dst->in_off = dup_n(src->in_off, to, sizeof *src->in_off, &fail);
	dst->in = dup_n(src->in, nin, sizeof *src->in, &fail);
	dst->out_off = dup_n(src->out_off, to, sizeof *src->out_off, &fail);
	dst->out = dup_n(src->out, nout, sizeof *src->out, &fail);
	dst->rel_off = dup_n(src->rel_off, to, sizeof *src->rel_off, &fail);
	dst->rel = dup_n(src->rel, nrel, sizeof *src->rel, &fail);
	dst->rel_evict = dup_n(src->rel_evict, nrel, sizeof *src->rel_evict,
			       &fail);
	dst->mem = dup_n(src->mem, T, sizeof *src->mem, &fail);
	dst->stall = dup_n(src->stall, T, sizeof *src->stall, &fail);
	if (fail) {
		opt_sched_free(dst);
		return -1;
	}
	return 0;
}

static bool on(const double *x, int64_t c)
{
	return c >= 0 && x[c] > 0.5;
}

/* Mark j resident (S) from stage t back to where it was last made: its
 * producer's stage, or a stage whose re-run of the producer (R[u,p])
 * carries it over ((2): S[u+1,j] <= S[u,j] + R[u,p]). Linear in j's
 * life. */
static void need_back(const struct lay *y, double *x, uint32_t j, int64_t t)
{
	int64_t p = prod(y, j);
	for (int64_t u = t; u > p; u--) {
		if (x[colS(y, j, (uint32_t)u)] > 0.5)
			return; /* marked from here back already */
		x[colS(y, j, (uint32_t)u)] = 1;
		if (u - 1 > p && p >= 0 && on(x, colR(y, (uint32_t)p,
						       (uint32_t)(u - 1))))
			return;
	}
}

/* A heuristic policy's schedule as a MIP start: its re-runs R[t,i]
 * (sd), each op t's and each re-run's managed inputs present where they
 * are read ((1): resident, or their producer re-run in the stage), and
 * every tensor resident only back to where it was last made (need_back:
 * the least residency the re-runs allow, so the memory rows see no
 * more than the policy held). No copies, so no stalls. Fills x and
 * returns its objective (base + the objective's terms), or -1 with *why
 * when it breaks a bound or a row of the MILP (checked exactly on the
 * matrix, so a schedule the MILP cannot express is never passed). */
static double seed_start(const struct lay *y, const struct mat *mx,
			 const struct csc *cs, const double *clo,
			 const double *chi, const double *obj, double base,
			 const struct opt_seed *sd, double *x, const char **why)
{
	const struct wl_workload *wl = y->wl;
	const struct opt_in *in = y->in;
	memset(x, 0, (size_t)y->n * sizeof *x);
	if (!sd->fit) {
		*why = "it did not fit the budget";
		return -1;
	}
	for (uint32_t k = 0; k < sd->n; k++) {
		int64_t c = colR(y, sd->op[k], sd->stage[k]);
		if (c < 0) {
			*why = "a re-run the MILP does not have";
			return -1;
		}
		x[c] = 1;
	}
	/* the reads of stage t: op t's, then its re-runs' (a re-run's
	 * input is there, or its producer re-run in the stage too) */
	for (uint32_t t = y->T; t-- > 0;) {
		for (uint32_t i = 0; i <= t; i++) {
			if (i != t && !on(x, colR(y, i, t)))
				continue;
			const struct wl_op *o = &wl->ops[i];
			for (uint32_t a = 0; a < o->n_in; a++) {
				uint32_t j = o->in[a];
				if (!in->managed[j])
					continue;
				int64_t p = prod(y, j);
				if (p >= 0 && on(x, colR(y, (uint32_t)p, t)))
					continue;
				if (colS(y, j, t) < 0) {
					*why = "a read outside its tensor's life";
					return -1;
				}
				need_back(y, x, j, t);
			}
		}
	}
	/* bounds, then every row */
	double v = base;
	for (int64_t c = 0; c < y->n; c++) {
		if (x[c] < clo[c] - 1e-9 || x[c] > chi[c] + 1e-9) {
			*why = "a variable out of its bounds";
			return -1;
		}
		v += obj[c] * x[c];
	}
	double *act = calloc((size_t)mx->rows + 1, sizeof *act);
	if (!act) {
		*why = "out of memory";
		return -1;
	}
	for (int64_t c = 0; c < y->n; c++)
		if (x[c] != 0)
			for (CoinBigIndex e = cs->start[c]; e < cs->start[c + 1];
			     e++)
				act[cs->idx[e]] += cs->val[e] * x[c];
	for (int r = 0; r < mx->rows; r++) {
		double tol = 1e-6 * (1 + fabs(act[r]));
		if (act[r] < mx->lo[r] - tol || act[r] > mx->hi[r] + tol) {
			*why = "it breaks a memory or dependency row";
			free(act);
			return -1;
		}
	}
	free(act);
	return v;
}

/* Does a swap-in read the host copy j has after stage t (H on from t+1
 * until that swap-in)? Then j leaves the device as a swap-out with
 * release and its copy-out is replayed; otherwise the copy is one the
 * MILP made at no cost and never used, so it is not replayed and j, when
 * it leaves, is dropped (the executor would swap an OUT tensor in on
 * demand rather than let a planned re-run regenerate it). The batch,
 * which cannot be re-run, always leaves as a swap-out. Linear in the
 * stages of j's life. */
static bool copy_used(const struct lay *y, const double *x, uint32_t j,
		      uint32_t t)
{
	for (uint32_t u = t + 1; u < y->L[j]; u++) {
		if (!on(x, colH(y, j, u)))
			break;
		if (on(x, colOI(y, y->Ib, j, u)))
			return true;
	}
	return prod(y, j) < 0;
}

/* The schedule of solution x into s's lists; -1 on out of memory. */
static int extract(const struct lay *y, const double *x, struct opt_sched *s)
{
	const struct wl_workload *wl = y->wl;
	const struct opt_in *in = y->in;
	uint32_t T = y->T, N = wl->n_tensors;
	size_t cap = (size_t)y->n + 1;
	s->rc_off = calloc(T + 1, sizeof *s->rc_off);
	s->in_off = calloc(T + 1, sizeof *s->in_off);
	s->out_off = calloc(T + 1, sizeof *s->out_off);
	s->rel_off = calloc(T + 1, sizeof *s->rel_off);
	s->rc = malloc(cap * sizeof *s->rc);
	s->in = malloc(cap * sizeof *s->in);
	s->out = malloc(cap * sizeof *s->out);
	s->rel = malloc(cap * sizeof *s->rel);
	s->rel_evict = malloc(cap);
	s->mem = calloc(T ? T : 1, sizeof *s->mem);
	s->stall = calloc(T ? T : 1, sizeof *s->stall);
	if (!s->rc_off || !s->in_off || !s->out_off || !s->rel_off ||
	    !s->rc || !s->in || !s->out || !s->rel || !s->rel_evict ||
	    !s->mem || !s->stall)
		return -1;
	uint32_t nrc = 0, nin = 0, nout = 0, nrel = 0;
	s->peak_mem = 0;
	for (uint32_t t = 0; t < T; t++) {
		s->rc_off[t] = nrc;
		s->in_off[t] = nin;
		s->out_off[t] = nout;
		s->rel_off[t] = nrel;
		double mem = (double)in->fixed + (double)y->ob[t] -
			     (double)inplace_share(in, t) +
			     (double)in->op_ws[t];
		for (uint32_t i = 0; i < t; i++)
			if (on(x, colR(y, i, t))) {
				s->rc[nrc++] = i;
				mem += (double)(y->ob[i] + in->op_ws[i]);
			}
		for (uint32_t j = 0; j < N; j++) {
			if (!in->managed[j])
				continue;
			double b = (double)wl->tensors[j].bytes;
			int64_t p = prod(y, j);
			bool here = on(x, colS(y, j, t)) ||
				    (p == (int64_t)t) ||
				    on(x, colR(y, (uint32_t)p, t));
			mem += on(x, colS(y, j, t)) ? b : 0;
			/* copies that change nothing are not replayed (the
			 * MILP may keep them where they cost no time): a
			 * swap-in of a tensor still resident, a swap-out
			 * whose host copy no swap-in reads */
			if (on(x, colOI(y, y->Ib, j, t))) {
				if (!on(x, colS(y, j, t)))
					s->in[nin++] = j;
				mem += b;
			}
			if (on(x, colOI(y, y->Ob, j, t)) &&
			    copy_used(y, x, j, t))
				s->out[nout++] = j;
			/* resident in stage t and not in t+1, while the
			 * executor would keep it (it has readers after t) */
			if (here && t < y->L[j] && !on(x, colS(y, j, t + 1))) {
				s->rel_evict[nrel] = copy_used(y, x, j, t);
				s->rel[nrel++] = j;
			}
		}
		s->mem[t] = mem;
		s->stall[t] = x[y->STb + t];
		if (mem > s->peak_mem)
			s->peak_mem = mem;
	}
	s->rc_off[T] = nrc;
	s->in_off[T] = nin;
	s->out_off[T] = nout;
	s->rel_off[T] = nrel;
	return 0;
}

/*
 * The relaxation: a lower bound on every schedule the executor can run.
 *
 * The MILP above is the optimum of a restricted class (a copy starts and
 * ends inside one stage; memory is counted for the whole stage), so a
 * heuristic whose copies span several ops can beat it. This second model
 * is built so that every executor schedule maps onto one of its feasible
 * points with an objective no larger than the schedule's time, which
 * makes its optimum, its LP relaxation and any CBC bound of it lower
 * bounds on every policy's iteration time (under the model's
 * assumptions: persistent tensors stay resident, copies are pinned and
 * uncompressed, and the same hardware profile).
 *
 * Stage t is the wall interval (e_{t-1}, e_t], e_t the end of op t; its
 * length D_t = C_t + st[t] with C_t = c_t + sum_i c_i R[t,i] (c: the least
 * time of an algorithm of the op that could fit, a lower bound of what
 * any run pays). For a managed tensor j with producer p and last reader
 * L, stages p+1..L (the ranges of the MILP's S):
 *
 *   S[t,j]  valid on the device at e_{t-1}                   (binary)
 *   A[t,j]  a copy-in (H2D) of j completes in stage t         (binary)
 *   F[t,j]  a copy-in of j is under way at e_t                (binary)
 *   G[t,j]  the fraction of that copy done by e_t             [0,1]
 *   U[t,j]  H2D engine time spent on j in stage t, ns         [0,h_j]
 *   AO, QO, GO, UO: the same for the copy-out (D2H) of j
 *   H[t,j]  the host holds a copy of j at e_{t-1}             (binary)
 *   K[t,j]  j holds device memory just before e_t             [0,1]
 *   W[t,j]  j is held through all of stage t up to op t's start [0,1]
 *   AP[t,j] a copy-out of j completes before op t starts      (binary)
 *   UP[t,j] D2H engine time spent on j before op t starts     [0,d_j]
 *   Z[t,j]  j is freed before op t starts with no host copy   (binary)
 *
 * Checkmate's constraints (Jain et al., MLSys 2020, section 4.2;
 * parasj/checkmate checkmate/core/solvers/gurobi_solver.py:
 * "self.R[t, v] <= self.R[t, u] + self.S[t, u]" and "self.S[t + 1, i] <=
 * self.S[t, i] + self.R[t, i]"), with POET's page-in (Patil et al., ICML
 * 2022; ShishirPatil/poet poet/poet_solver.py: "self.SRam[t + 1][i] <=
 * self.SRam[t][i] + self.R[t][i] + self.MIn[t][i]") as a completion
 * inside the stage:
 *   (B1) R[t,i] <= S[t,j] + R[t,p(j)] + A[t,j]  every managed input j of
 *        a re-run i (and 1 <= ... for op t itself);
 *   (B2) S[t+1,j] <= S[t,j] + R[t,p] + A[t,j].
 * POET's host residency ("self.SSd[t + 1][i] <= self.SSd[t][i] +
 * self.MOut[t][i]") and its page-in precondition ("self.MIn[i][j] <=
 * self.SSd[i][j]"), with the copy-out completing inside the stage:
 *   (B3) H[t+1,j] <= H[t,j] + AO[t,j];  A[t,j] <= H[t,j] + AO[t,j]
 *        (a swap-in does not consume the host copy here: the executor
 *        drops it, a relaxation keeps it).
 * Copies that span stages (new here: POET's paging moves a page within a
 * stage and charges energy, not time). A copy progresses by the engine
 * time given to it, stage after stage, while it is under way:
 *   (B4) h G[t] <= h G[t-1] + U[t];  h A[t] <= h G[t-1] + U[t];
 *        G[t] <= F[t];  U[t] <= h (F[t] + A[t]);  U[t] <= h (H[t] + AO[t])
 *   (B5) the same for D2H with d_j, GO, QO, AO, UO, and the copy reads
 *        data that was there at the stage's start, re-created in it, or
 *        copied in from a host copy made before (a copy-in and a
 *        copy-out of one stage cannot justify each other):
 *        UO[t] <= d (S[t] + R[t,p] + H[t] + QO[t-1]),
 *        AO[t] <= S[t] + R[t,p] + H[t] + QO[t-1].
 * Each engine is serial, so its time inside a stage fits the stage:
 *   (B6) sum_j U[t,j] <= D_t,  sum_j UO[t,j] <= D_t,
 * and a copy-in of op t's input j is over before op t starts (j cannot
 * be copied in while op t holds it):
 *   (B7) sum_{j in in(t)} U[t,j] <= D_t - c_t = st[t] + sum_i c_i R[t,i].
 * Memory (Checkmate's U[t,k], gurobi_solver.py "self.U[t, k + 1] ==
 * self.U[t, k] + self.R[t, k + 1] * permute_ram[k + 1] - mem_freed", and
 * POET's "self.U[t][0] == ... + pl.lpSum(self.SRam[t][i] *
 * ram_vec_bytes[i] ...)", taken at the frontier op and without FREE_E:
 * only what is surely held is counted). Just before e_t the
 * device holds the fixed tensors, op t's inputs, outputs and workspace,
 * everything valid at e_t, and every block a copy is still reading or
 * writing:
 *   (B8) K[t,j] >= S[t+1,j], F[t,j], QO[t,j];
 *        fixed + in_t + out_t + ws_t + sum_{j not in in(t)} b_j K[t,j]
 *        <= budget;
 * and during a re-run i of stage t, what was held through the stage
 * (valid at both ends, neither re-run nor copied in inside it):
 *   (B9) W[t,j] >= S[t,j] + S[t+1,j] - 1 - R[t,p] - A[t,j];
 *        fixed + sum_j b_j W[t,j] + max_i (o_i + ws_i) R[t,i] <= budget,
 *        o_i the least managed output of i (a re-run allocates the one
 *        it regenerates; sim/ex.c wants_block: not one still there or
 *        not wanted).
 * A copy under way at e_{t-1} holds j's block until it ends (the
 * executor allocates a copy-in's block when it is issued and frees a
 * released block when its copy-out ends, sim/ex.c ex_swap_in and
 * swap_out_done), so j counts at op t's start, and in (B9), unless it
 * ended before:
 *   (B10) W[t,j] >= F[t-1,j] - A[t,j],  W[t,j] >= QO[t-1,j] - AP[t,j];
 *        d AP[t] <= d GO[t-1] + UP[t],  UP[t] <= UO[t],  AP[t] <= AO[t];
 *        sum_j UP[t,j] <= D_t - c_t (the window before op t);
 *        fixed + in_t + out_t + ws_t + sum_{j not in in(t)} b_j W[t,j]
 *        <= budget.
 * A tensor valid at e_{t-1} is held at op t's start unless it was freed
 * before: released once a copy-out ended (AP) or with a host copy made
 * earlier (H, sim/ex.c ex_swap_out: "the host already has the data"),
 * or dropped (Z: freed while no copy-out of it had ever completed; H is
 * read as "a copy-out has completed before", since j does not change
 * once written), after which only a re-run of its producer gives it
 * data again, so a copy-out, a copy-in or validity at e_t need one:
 *   (B11) W[t,j] >= S[t,j] - AP[t,j] - H[t,j] - Z[t,j];
 *        S[t+1,j] + Z[t,j] <= 1 + R[t,p],  AO[t,j] + Z[t,j] <= 1 +
 *        R[t,p],  A[t,j] + Z[t,j] <= 1 + R[t,p].
 * Minimise sum_t D_t. Relaxed (each only lowers the bound): memory
 * inside a re-run other than (B9), copies fluid inside a stage (a copy's
 * share of a stage may overlap the op that reads it, except (B7)), a
 * host copy kept across swap-ins, an op re-run several times in a stage
 * counted once, no copy latency or derating, no fragmentation.
 */
enum { BF_S, BF_A, BF_F, BF_G, BF_U, BF_AO, BF_QO, BF_GO, BF_UO, BF_H,
       BF_K, BF_W, BF_AP, BF_UP, BF_Z, BF_N };

struct blay {
	const struct lay *y;
	int64_t *fb[BF_N]; /* per family, per tensor: base column or -1 */
	int64_t *Yb;	   /* per op: base column of its algorithm choice,
			      -1 when it has none */
	int64_t STb, WMb, n;
};

static int64_t bcol(const struct blay *b, int f, uint32_t j, int64_t t)
{
	const struct lay *y = b->y;
	int64_t p = prod(y, j);
	if (b->fb[f][j] < 0 || t <= p || t > (int64_t)y->L[j])
		return -1;
	return b->fb[f][j] + (t - p - 1);
}

static bool is_input(const struct wl_op *o, uint32_t j)
{
	for (uint32_t a = 0; a < o->n_in; a++)
		if (o->in[a] == j)
			return true;
	return false;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What a solve gave: the LP's value (NAN: not reached), and CBC's
 * outcome when it ended within the limit (done). */
struct sres {
	double lp;
	bool done, infeasible, optimal, has_sol;
	double obj, best; /* CBC's objective and best possible bound */
	struct opt_work w; /* its work; killed: the safety net (wall
			      clock) stopped it */
	double *x;	  /* the best solution (n), when has_sol */
};

/* Write all of buf to fd; -1 on error. */
static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The work limits and the safety net of one solve (struct opt_in). */
struct lim {
	const struct opt_lib *lib; /* CBC's and CLP's functions */
	int64_t nodes;	  /* CBC's branch-and-bound nodes (0: the root) */
	int64_t lp_iter;  /* CLP's simplex iterations for the LP value */
	double wall_s;	  /* the safety net, wall seconds */
	int search;	  /* enum opt_search: OPT_SEARCH_LP, or AUTO above
			     OPT_FULL_MAX_VARS columns: the LP and the
			     MIP start alone */
};

/* The limits in `in` (opt_solve's and opt_bound's) */
static struct lim lim_of(const struct opt_in *in)
{
	return (struct lim){.lib = in->lib,
			    .nodes = in->node_limit,
			    .lp_iter = in->lp_iterations,
			    .wall_s = in->time_limit_s,
			    .search = in->search};
}

/* The child: CLP's LP, then CBC, each result written to fd as soon as it
 * is known (the LP first, so that a parent which stops CBC at the
 * safety net still has it). Never returns.
 *
 * Only work limits stop it, so that the same problem gives the same
 * answer on any machine at any load: CLP's iteration limit
 * (Clp_setMaximumIterations) and CBC's node limit ("maxNodes", the
 * CbcModel::setMaximumNodes of Cbc_C_Interface.h; node 0 is the root),
 * one thread ("threads 0": no parallel search, whose order depends on
 * timing), CBC's default seeds. No seconds limit is given to either:
 * CBC 2.10 reads the clock where a limit is set (CbcNode's hitMaxTime
 * during strong branching, CglPreProcess's time limit), so a limit,
 * even one not reached, could make the search depend on speed. The
 * parent's wall-clock cap is a safety net, reported when it fires. */
static void solve_child(int fd, const struct mat *mx, const struct csc *cs,
			int n, int64_t n_int, const double *clo,
			const double *chi, const double *obj,
			const struct lim *lim, const double *start)
{
	const struct opt_lib *L = lim->lib;
	Clp_Simplex *c = L->Clp_newModel();
	Cbc_Model *m = L->Cbc_newModel();
	if (!c || !m)
		_exit(1);
	L->Clp_loadProblem(c, n, mx->rows, cs->start, cs->idx, cs->val, clo, chi,
			obj, mx->lo, mx->hi);
	L->Clp_setLogLevel(c, 0);
	L->Clp_setMaximumIterations(c, (int)lim->lp_iter);
	L->Clp_dual(c, 0);
	double lp[3] = {L->Clp_isProvenOptimal(c) ? L->Clp_objectiveValue(c) : NAN,
			L->Clp_numberIterations(c),
			L->Clp_isIterationLimitReached(c)};
	bool lp_infeasible = L->Clp_isProvenPrimalInfeasible(c);
	L->Clp_deleteModel(c);
	if (write_all(fd, lp, sizeof lp) < 0)
		_exit(1);
	if (strcmp(opt_search_used(lim->search, (uint64_t)n), "lp") == 0) {
		/* search lp: the LP's value is the bound, the MIP start the
		 * incumbent, no branch and bound (CBC's root alone, even
		 * without cuts or heuristics, did no more than the LP on
		 * the 376-op recorded transformer, in minutes) */
		double h[8] = {lp_infeasible, 0, 0, 0,
			       isnan(lp[0]) ? -INFINITY : lp[0], 0, 0, 1};
		if (write_all(fd, h, sizeof h) < 0)
			_exit(1);
		_exit(0);
	}
	L->Cbc_loadProblem(m, n, mx->rows, cs->start, cs->idx, cs->val, clo, chi,
			obj, mx->lo, mx->hi);
	for (int64_t k = 0; k < n_int; k++)
		L->Cbc_setInteger(m, (int)k);
	if (start) {
		int *idx = malloc((size_t)n * sizeof *idx);
		if (idx) {
			for (int k = 0; k < n; k++)
				idx[k] = k;
			L->Cbc_setMIPStartI(m, n, idx, start);
			free(idx);
		}
	}
	L->Cbc_setLogLevel(m, 0);
	char v[32];
	snprintf(v, sizeof v, "%lld", (long long)lim->nodes);
	L->Cbc_setParameter(m, "maxNodes", v);
	L->Cbc_setParameter(m, "threads", "0");
	L->Cbc_solve(m);
	const double *sol = L->Cbc_bestSolution(m);
	double h[8] = {L->Cbc_isProvenInfeasible(m), L->Cbc_isProvenOptimal(m),
		       sol != NULL, sol ? L->Cbc_getObjValue(m) : 0,
		       L->Cbc_getBestPossibleObjValue(m), L->Cbc_getNodeCount(m),
		       L->Cbc_getIterationCount(m), L->Cbc_isNodeLimitReached(m)};
	if (write_all(fd, h, sizeof h) < 0 ||
	    (sol && write_all(fd, sol, (size_t)n * sizeof *sol) < 0))
		_exit(1);
	_exit(0);
}

/* Solve a model's LP (CLP) and MILP (CBC) under the work limits of lim,
 * with start as CBC's MIP start (NULL: none). CBC 2.10's C API has no
 * way to interrupt a solve (and CBC checks a seconds limit only between
 * phases: a 5 s limit took 49 s at the root of the 376-op recorded
 * transformer), so both run in a child process, killed when lim->wall_s
 * has passed: res->w.killed, which the caller reports (the answer then
 * depends on the machine's speed). What the child had written by then
 * is kept (the LP's value comes first). A separate process also keeps
 * CBC's static state (its command-line driver, CbcMain1) apart between
 * concurrent solves. -1 on a system error. */
static int solve_both(const struct mat *mx, const struct csc *cs, int n,
		      int64_t n_int, const double *clo, const double *chi,
		      const double *obj, const struct lim *lim,
		      const double *start, struct sres *res)
{
	memset(res, 0, sizeof *res);
	res->lp = NAN;
	enum { NLP = 3, NH = 8 };
	size_t need = sizeof(double) * (NLP + NH + (size_t)n);
	char *buf = malloc(need);
	res->x = malloc(((size_t)n + 1) * sizeof *res->x);
	int fd[2];
	if (!buf || !res->x || pipe(fd) < 0) {
		free(buf);
		return -1;
	}
	double t0 = wall_s();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		free(buf);
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		solve_child(fd[1], mx, cs, n, n_int, clo, chi, obj, lim,
			    start);
	}
	close(fd[1]);
	size_t got = 0;
	bool eof = false;
	while (!eof && got < need) {
		double left = lim->wall_s - (wall_s() - t0);
		if (left <= 0) {
			res->w.killed = true;
			break;
		}
		struct pollfd pfd = {.fd = fd[0], .events = POLLIN};
		int pr = poll(&pfd, 1, (int)ceil(left * 1000));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0) {
			res->w.killed = true;
			break;
		}
		if (pr < 0)
			break;
		ssize_t r = read(fd[0], buf + got, need - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			eof = true;
		else
			got += (size_t)r;
	}
	close(fd[0]);
	kill(pid, SIGKILL); /* gone already when it finished */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	double h[NLP + NH];
	if (got >= NLP * sizeof(double)) {
		memcpy(h, buf, NLP * sizeof(double));
		res->lp = h[0];
		res->w.lp_iter = (uint64_t)h[1];
		res->w.lp_stopped = h[2] > 0.5;
	}
	if (got >= sizeof h) {
		memcpy(h, buf, sizeof h);
		res->infeasible = h[NLP] > 0.5;
		res->optimal = h[NLP + 1] > 0.5;
		res->has_sol = h[NLP + 2] > 0.5;
		res->obj = h[NLP + 3];
		res->best = h[NLP + 4];
		res->w.nodes = (uint64_t)h[NLP + 5];
		res->w.iter = (uint64_t)h[NLP + 6];
		res->w.node_limit = h[NLP + 7] > 0.5;
		res->done = !res->has_sol || got == need;
		if (res->has_sol && got == need)
			memcpy(res->x, buf + sizeof h,
			       (size_t)n * sizeof *res->x);
	}
	free(buf);
	return 0;
}

/* Checkmate's dependency rows of stage t, "self.R[t, v] <= self.R[t, u] +
 * self.S[t, u]" for op t (R[t,t] = 1) and each op i re-run in it: an
 * input j is resident at the stage's start or its producer is re-run in
 * the stage; in the relaxation (b not NULL), or a copy-in of j completes
 * in it (B1). -1 on out of memory. */
static int dep_rows(const struct lay *y, const struct blay *b, uint32_t t,
		    struct row *r, struct mat *mx)
{
	for (uint32_t i = 0; i <= t; i++) {
		int64_t ri = i == t ? -1 : colR(y, i, t);
		if (i != t && ri < 0)
			continue;
		const struct wl_op *o = &y->wl->ops[i];
		for (uint32_t a = 0; a < o->n_in; a++) {
			uint32_t j = o->in[a];
			if (!y->in->managed[j])
				continue;
			r->n = 0;
			/* colR of producer -1 (the batch) is -1: none */
			if (row_add(r, b ? bcol(b, BF_S, j, t) : colS(y, j, t),
				    1) < 0 ||
			    row_add(r, colR(y, (uint32_t)prod(y, j), t), 1) <
				    0 ||
			    row_add(r, b ? bcol(b, BF_A, j, t) : -1, 1) < 0 ||
			    row_add(r, ri, -1) < 0 ||
			    mat_row(mx, r, 'G', i == t ? 1 : 0) < 0)
				return -1;
		}
	}
	return 0;
}

/* (B12)'s terms of op t in row r: each algorithm's time (time) or
 * workspace bytes times its Y column; none when t has no choice. -1 on
 * out of memory. */
static int alg_terms(const struct blay *b, uint32_t t, struct row *r,
		     bool time)
{
	const struct opt_in *in = b->y->in;
	if (b->Yb[t] < 0)
		return 0;
	for (uint32_t a = in->alg_off[t]; a < in->alg_off[t + 1]; a++)
		if (row_add(r, b->Yb[t] + a - in->alg_off[t],
			    time ? (double)in->alg_time[a]
				 : (double)in->alg_ws[a]) < 0)
			return -1;
	return 0;
}

/* Add to row r, or to matrix mx, of the function being built; on out of
 * memory, to its label oom. */
#define ADD(c, v)                                       \
	do {                                            \
		if (row_add(&r, (c), (v)) < 0)          \
			goto oom;                       \
	} while (0)
#define ROW(sense, rhs)                                 \
	do {                                            \
		if (mat_row(&mx, &r, (sense), (rhs)) < 0) \
			goto oom;                       \
	} while (0)

/* Build and solve the relaxation into s->bnd_*, under the work limits
 * and safety net of lim; -1 on out of memory. */
static int bound_solve(const struct lay *y, const struct lim *lim,
		       struct opt_sched *s)
{
	const struct opt_in *in = y->in;
	const struct wl_workload *wl = y->wl;
	uint32_t T = y->T, N = wl->n_tensors;
	const sim_time_t *ct = in->op_time_lb ? in->op_time_lb : in->op_time;
	const uint64_t *cw = in->op_ws_lb ? in->op_ws_lb : in->op_ws;
	struct blay b = {.y = y};
	struct row r = {0};
	struct mat mx = {0};
	struct csc cs = {0};
	double *clo = NULL, *chi = NULL, *obj = NULL;
	int rc = -1;
	int64_t n = 0;
	for (uint32_t k = 0; k < T; k++)
		n += y->Lop[k] - k; /* R first, as the MILP's (lay_build) */
	/* binaries first (CBC's integer columns 0..n_int-1) */
	static const int order[BF_N] = {BF_S, BF_A, BF_F, BF_AO, BF_QO,
					BF_H, BF_AP, BF_Z, BF_G, BF_U, BF_GO,
					BF_UO, BF_UP, BF_K, BF_W};
	for (int f = 0; f < BF_N; f++) {
		b.fb[f] = malloc((N ? N : 1) * sizeof *b.fb[f]);
		if (!b.fb[f])
			goto out;
	}
	/* (B12) the algorithm of op t's own run: Y columns after R's, for
	 * an op with a choice */
	b.Yb = malloc((T ? T : 1) * sizeof *b.Yb);
	if (!b.Yb)
		goto out;
	for (uint32_t t = 0; t < T; t++) {
		b.Yb[t] = -1;
		if (in->alg_off && in->alg_off[t + 1] - in->alg_off[t] > 1) {
			b.Yb[t] = n;
			n += in->alg_off[t + 1] - in->alg_off[t];
		}
	}
	int64_t n_int = 0;
	for (int k = 0; k < BF_N; k++) {
		int f = order[k];
		bool sw = f != BF_S && f != BF_K && f != BF_W && f != BF_Z;
		for (uint32_t j = 0; j < N; j++) {
			int64_t p = prod(y, j), L = y->L[j];
			b.fb[f][j] = -1;
			if (!in->managed[j] || L <= p || (sw && !in->swap))
				continue;
			b.fb[f][j] = n;
			n += L - p;
		}
		if (f == BF_Z)
			n_int = n;
	}
	b.STb = n;
	b.WMb = n + T;
	b.n = n + 2 * (int64_t)T;
	if ((uint64_t)b.n > in->max_vars)
		goto toobig;
	clo = calloc((size_t)b.n, sizeof *clo);
	chi = malloc((size_t)b.n * sizeof *chi);
	obj = calloc((size_t)b.n, sizeof *obj);
	if (!clo || !chi || !obj)
		goto out;
	for (int64_t c = 0; c < b.n; c++)
		chi[c] = c < b.STb ? 1 : DBL_MAX;
	double base = 0, alone = 0; /* alone: compute at the least times */
	for (uint32_t t = 0; t < T; t++) {
		alone += (double)ct[t];
		obj[b.STb + t] = 1;
		for (uint32_t i = 0; i < t; i++)
			if (colR(y, i, t) >= 0)
				obj[colR(y, i, t)] = (double)ct[i];
		if (b.Yb[t] < 0) {
			base += (double)ct[t];
			continue;
		}
		for (uint32_t a = in->alg_off[t]; a < in->alg_off[t + 1]; a++)
			obj[b.Yb[t] + a - in->alg_off[t]] =
				(double)in->alg_time[a];
	}
	for (uint32_t j = 0; j < N; j++) {
		int64_t p = prod(y, j), L = y->L[j];
		if (b.fb[BF_S][j] < 0)
			continue;
		if (p < 0)
			clo[bcol(&b, BF_S, j, 0)] = 1; /* the batch */
		for (int64_t t = p + 1; t <= L && in->swap; t++) {
			chi[bcol(&b, BF_U, j, t)] = (double)in->t_h2d[j];
			chi[bcol(&b, BF_UO, j, t)] = (double)in->t_d2h[j];
			chi[bcol(&b, BF_UP, j, t)] = (double)in->t_d2h[j];
		}
		if (in->swap) /* no host copy before the first copy-out */
			chi[bcol(&b, BF_H, j, p + 1)] = 0;
	}
	/* per tensor and stage: (B2)-(B5), (B8)'s K and (B9)'s W */
	for (uint32_t j = 0; j < N; j++) {
		if (b.fb[BF_S][j] < 0)
			continue;
		int64_t p = prod(y, j), L = y->L[j];
		double h = (double)in->t_h2d[j], d = (double)in->t_d2h[j];
		for (int64_t t = p + 1; t <= L; t++) {
			int64_t Rp = p >= 0 ? colR(y, (uint32_t)p, (uint32_t)t)
					    : -1;
			if (t < L) { /* (B2) */
				r.n = 0;
				ADD(bcol(&b, BF_S, j, t + 1), 1);
				ADD(bcol(&b, BF_S, j, t), -1);
				ADD(Rp, -1);
				ADD(bcol(&b, BF_A, j, t), -1);
				ROW('L', 0);
				/* (B8) K >= S[t+1], F, QO */
				int kf[3] = {BF_S, BF_F, BF_QO};
				for (int q = 0; q < 3; q++) {
					int64_t c = bcol(&b, kf[q], j,
							 q ? t : t + 1);
					if (c < 0)
						continue;
					r.n = 0;
					ADD(bcol(&b, BF_K, j, t), 1);
					ADD(c, -1);
					ROW('G', 0);
				}
				/* (B9) */
				r.n = 0;
				ADD(bcol(&b, BF_W, j, t), 1);
				ADD(bcol(&b, BF_S, j, t), -1);
				ADD(bcol(&b, BF_S, j, t + 1), -1);
				ADD(Rp, 1);
				ADD(bcol(&b, BF_A, j, t), 1);
				ROW('G', -1);
				/* (B11) valid at e_{t-1}, j is still held at op
				 * t's start unless a copy-out ended before it,
				 * the host had a copy (a release frees it at
				 * once), or it was dropped (Z); after a drop j
				 * is valid, or copied out, again only when
				 * re-created in the stage */
				r.n = 0;
				ADD(bcol(&b, BF_W, j, t), 1);
				ADD(bcol(&b, BF_S, j, t), -1);
				ADD(bcol(&b, BF_AP, j, t), 1);
				ADD(bcol(&b, BF_H, j, t), 1);
				ADD(bcol(&b, BF_Z, j, t), 1);
				ROW('G', 0);
				static const int zf[3] = {BF_S, BF_AO, BF_A};
				for (int q = 0; q < 3; q++) {
					int64_t c = bcol(&b, zf[q], j,
							 q ? t : t + 1);
					if (c < 0)
						continue;
					r.n = 0;
					ADD(c, 1);
					ADD(bcol(&b, BF_Z, j, t), 1);
					ADD(Rp, -1);
					ROW('L', 1);
				}
			}
			if (!in->swap)
				continue;
			/* (B10) a copy under way at e_{t-1} holds j's block
			 * until it ends: through stage t for a copy-in that
			 * does not complete in it, up to op t's start for a
			 * copy-out that does not complete before it */
			if (t < L) {
				r.n = 0;
				ADD(bcol(&b, BF_W, j, t), 1);
				ADD(bcol(&b, BF_F, j, t - 1), -1);
				ADD(bcol(&b, BF_A, j, t), 1);
				ROW('G', 0);
				r.n = 0;
				ADD(bcol(&b, BF_W, j, t), 1);
				ADD(bcol(&b, BF_QO, j, t - 1), -1);
				ADD(bcol(&b, BF_AP, j, t), 1);
				ROW('G', 0);
			}
			/* AP: a copy-out that completes before op t starts,
			 * with UP of its engine time in that window */
			r.n = 0;
			ADD(bcol(&b, BF_AP, j, t), d);
			ADD(bcol(&b, BF_GO, j, t - 1), -d);
			ADD(bcol(&b, BF_UP, j, t), -1);
			ROW('L', 0);
			r.n = 0;
			ADD(bcol(&b, BF_UP, j, t), 1);
			ADD(bcol(&b, BF_UO, j, t), -1);
			ROW('L', 0);
			r.n = 0;
			ADD(bcol(&b, BF_AP, j, t), 1);
			ADD(bcol(&b, BF_AO, j, t), -1);
			ROW('L', 0);
			/* (B3) */
			if (t < L) {
				r.n = 0;
				ADD(bcol(&b, BF_H, j, t + 1), 1);
				ADD(bcol(&b, BF_H, j, t), -1);
				ADD(bcol(&b, BF_AO, j, t), -1);
				ROW('L', 0);
			}
			r.n = 0;
			ADD(bcol(&b, BF_A, j, t), 1);
			ADD(bcol(&b, BF_H, j, t), -1);
			ADD(bcol(&b, BF_AO, j, t), -1);
			ROW('L', 0);
			/* (B4) and (B5): dir 0 H2D, 1 D2H */
			for (int dir = 0; dir < 2; dir++) {
				int fA = dir ? BF_AO : BF_A,
				    fF = dir ? BF_QO : BF_F,
				    fG = dir ? BF_GO : BF_G,
				    fU = dir ? BF_UO : BF_U;
				double k = dir ? d : h;
				int64_t U = bcol(&b, fU, j, t);
				int64_t Gp = bcol(&b, fG, j, t - 1);
				r.n = 0;
				ADD(bcol(&b, fG, j, t), k);
				ADD(Gp, -k);
				ADD(U, -1);
				ROW('L', 0);
				r.n = 0;
				ADD(bcol(&b, fA, j, t), k);
				ADD(Gp, -k);
				ADD(U, -1);
				ROW('L', 0);
				r.n = 0;
				ADD(bcol(&b, fG, j, t), 1);
				ADD(bcol(&b, fF, j, t), -1);
				ROW('L', 0);
				r.n = 0;
				ADD(U, 1);
				ADD(bcol(&b, fF, j, t), -k);
				ADD(bcol(&b, fA, j, t), -k);
				ROW('L', 0);
				r.n = 0;
				ADD(U, 1);
				if (dir == 0) {
					ADD(bcol(&b, BF_H, j, t), -k);
					ADD(bcol(&b, BF_AO, j, t), -k);
				} else {
					ADD(bcol(&b, BF_S, j, t), -k);
					ADD(Rp, -k);
					ADD(bcol(&b, BF_H, j, t), -k);
					ADD(bcol(&b, BF_QO, j, t - 1), -k);
				}
				ROW('L', 0);
				if (dir == 0)
					continue;
				/* and a copy-out that completes had data */
				r.n = 0;
				ADD(bcol(&b, BF_AO, j, t), 1);
				ADD(bcol(&b, BF_S, j, t), -1);
				ADD(Rp, -1);
				ADD(bcol(&b, BF_H, j, t), -1);
				ADD(bcol(&b, BF_QO, j, t - 1), -1);
				ROW('L', 0);
			}
		}
	}
	for (uint32_t t = 0; t < T; t++) {
		const struct wl_op *ot = &wl->ops[t];
		/* (B1) op t and every re-run of stage t */
		if (dep_rows(y, &b, t, &r, &mx) < 0)
			goto oom;
		/* (B12) one algorithm for op t's own run */
		if (b.Yb[t] >= 0) {
			r.n = 0;
			for (uint32_t a = in->alg_off[t]; a < in->alg_off[t + 1];
			     a++)
				ADD(b.Yb[t] + a - in->alg_off[t], 1);
			ROW('E', 1);
		}
		/* (B8) memory just before e_t; op t's workspace is its
		 * algorithm's (B12) */
		double need = (double)in->fixed + (double)y->ob[t] +
			      (b.Yb[t] < 0 ? (double)cw[t] : 0) -
			      (double)inplace_share(in, t);
		for (uint32_t a = 0; a < ot->n_in; a++) {
			uint32_t j = ot->in[a];
			bool first = true;
			for (uint32_t q = 0; q < a; q++)
				first &= ot->in[q] != j;
			if (in->managed[j] && first)
				need += (double)wl->tensors[j].bytes;
		}
		r.n = 0;
		for (uint32_t j = 0; j < N; j++)
			if (!is_input(ot, j))
				ADD(bcol(&b, BF_K, j, t),
				    (double)wl->tensors[j].bytes);
		if (alg_terms(&b, t, &r, false) < 0)
			goto oom;
		ROW('L', (double)in->budget - need);
		/* (B10) and at op t's start, once its outputs and workspace
		 * are allocated */
		r.n = 0;
		for (uint32_t j = 0; j < N; j++)
			if (!is_input(ot, j))
				ADD(bcol(&b, BF_W, j, t),
				    (double)wl->tensors[j].bytes);
		if (alg_terms(&b, t, &r, false) < 0)
			goto oom;
		if (r.n)
			ROW('L', (double)in->budget - need);
		/* (B9) memory during a re-run */
		r.n = 0;
		for (uint32_t j = 0; j < N; j++)
			ADD(bcol(&b, BF_W, j, t),
			    (double)wl->tensors[j].bytes);
		ADD(b.WMb + t, 1);
		ROW('L', (double)in->budget - (double)in->fixed);
		for (uint32_t i = 0; i < t; i++) {
			int64_t c = colR(y, i, t);
			if (c < 0)
				continue;
			/* a re-run allocates its workspace and at least one
			 * output (the one it regenerates; the others may be
			 * there already, or not wanted) */
			const struct wl_op *oi = &wl->ops[i];
			uint64_t least = 0;
			for (uint32_t q = 0; q < oi->n_out; q++) {
				uint64_t by = wl->tensors[oi->out[q]].bytes;
				if (in->managed[oi->out[q]] &&
				    (!least || by < least))
					least = by;
			}
			r.n = 0;
			ADD(b.WMb + t, 1);
			ADD(c, -(double)(least + cw[i]));
			ROW('G', 0);
		}
		if (!in->swap)
			continue;
		/* (B6), (B7) and (B10)'s window: st[t] + sum c_i R[t,i]
		 * >= engine time - c_t (e 0: H2D, 1: D2H), or >= the
		 * engine time before op t starts (e 2: copy-ins of op t's
		 * inputs, 3: copy-outs that free a block by then) */
		for (int e = 0; e < 4; e++) {
			static const int fam[4] = {BF_U, BF_UO, BF_U, BF_UP};
			r.n = 0;
			ADD(b.STb + t, 1);
			for (uint32_t i = 0; i < t; i++)
				ADD(colR(y, i, t), (double)ct[i]);
			for (uint32_t j = 0; j < N; j++) {
				if (e == 2 && !is_input(ot, j))
					continue;
				ADD(bcol(&b, fam[e], j, t), -1);
			}
			/* D_t: op t's time is its algorithm's (B12) */
			if (e < 2 && b.Yb[t] >= 0) {
				if (alg_terms(&b, t, &r, true) < 0)
					goto oom;
				ROW('G', 0);
			} else {
				ROW('G', e >= 2 ? 0 : -(double)ct[t]);
			}
		}
	}
	s->bnd_vars = (uint64_t)b.n;
	s->bnd_rows = (uint64_t)mx.rows;
	s->bnd_int = (uint64_t)n_int;
	if (mat_csc(&mx, (int)b.n, &cs) < 0)
		goto out;
	struct sres sr;
	if (solve_both(&mx, &cs, (int)b.n, n_int, clo, chi, obj, lim, NULL,
		       &sr) < 0) {
		free(sr.x);
		goto out;
	}
	s->bnd_lp = isnan(sr.lp) ? NAN : sr.lp + base;
	s->bnd_work = sr.w;
	if (sr.done && sr.infeasible) {
		s->bnd_status = OPT_INFEASIBLE;
		s->bnd_best = s->bound = INFINITY;
	} else {
		bool opt = sr.done && sr.optimal && sr.has_sol;
		s->bnd_status = opt ? OPT_OPTIMAL
			       : sr.has_sol ? OPT_FEASIBLE
					    : OPT_NO_SOLUTION;
		/* CBC's bound when it ended; compute alone when the
		 * safety net stopped it first (or it reported -inf before
		 * its root) */
		s->bnd_best = sr.done ? (opt ? sr.obj : sr.best) + base : alone;
		if (!isfinite(s->bnd_best) || s->bnd_best < alone)
			s->bnd_best = alone;
		s->bound = s->bnd_best;
		if (!isnan(s->bnd_lp) && s->bnd_lp > s->bound)
			s->bound = s->bnd_lp;
	}
	free(sr.x);
	rc = 0;
	goto out;
toobig:
	/* too large to build: compute alone bounds the time */
	s->bnd_vars = (uint64_t)b.n;
	s->bnd_status = OPT_NO_SOLUTION;
	s->bnd_lp = NAN;
	s->bnd_best = s->bound = 0;
	for (uint32_t t = 0; t < T; t++)
		s->bound += (double)ct[t];
	s->bnd_best = s->bound;
	rc = 0;
oom:
out:
	csc_free(&cs);
	mat_free(&mx);
	free(r.col);
	free(r.val);
	free(clo);
	free(chi);
	free(obj);
	for (int f = 0; f < BF_N; f++)
		free(b.fb[f]);
	free(b.Yb);
	return rc;
}

static int solve_with(const struct opt_in *in, struct opt_sched *s,
		      gms_err *err)
{
	const struct wl_workload *wl = in->wl;
	uint32_t T = wl->n_ops, N = wl->n_tensors;
	memset(s, 0, sizeof *s);
	s->n_stages = T;
	snprintf(s->start, sizeof s->start, "none");
	/* An op's own working set: its managed inputs, outputs, workspace
	 * and the fixed tensors. Above the budget, no schedule exists. */
	for (uint32_t t = 0; t < T; t++) {
		const struct wl_op *o = &wl->ops[t];
		uint64_t need = in->fixed + in->op_ws[t] - inplace_share(in, t);
		for (uint32_t a = 0; a < o->n_in; a++)
			if (in->managed[o->in[a]])
				need += wl->tensors[o->in[a]].bytes;
		for (uint32_t a = 0; a < o->n_out; a++)
			if (in->managed[o->out[a]])
				need += wl->tensors[o->out[a]].bytes;
		if (need > in->budget)
			return gms_errf(err,
					"infeasible: op '%s' needs %llu bytes "
					"(its inputs, outputs and workspace, "
					"and %llu bytes of persistent tensors) "
					"above the budget of %llu bytes",
					o->name, (unsigned long long)need,
					(unsigned long long)in->fixed,
					(unsigned long long)in->budget);
	}
	struct lay y;
	double t0 = wall_s();
	const struct lim lim = lim_of(in);
	struct row r = {0};
	double *x = NULL, *rhs_mem = NULL;
	struct csc cs = {0};
	struct mat mx = {0};
	double *clo = NULL, *chi = NULL, *obj = NULL;
	int rc = -1;
	if (lay_build(&y, in) < 0) {
		gms_errf(err, "out of memory");
		goto out;
	}
	if ((uint64_t)y.n > in->max_vars) {
		gms_errf(err,
			 "the exact formulation of '%s' has %lld variables, "
			 "above max_vars %llu (decompose=blocks solves a "
			 "workload with block marks by blocks)",
			 wl->name, (long long)y.n,
			 (unsigned long long)in->max_vars);
		goto out;
	}
	x = calloc((size_t)y.n + 1, sizeof *x);
	rhs_mem = calloc(T ? T : 1, sizeof *rhs_mem);
	clo = calloc((size_t)y.n + 1, sizeof *clo);
	chi = malloc(((size_t)y.n + 1) * sizeof *chi);
	obj = calloc((size_t)y.n + 1, sizeof *obj);
	if (!x || !rhs_mem || !clo || !chi || !obj) {
		gms_errf(err, "out of memory");
		goto out;
	}
	/* columns: binaries, then the stalls */
	for (int64_t c = 0; c < y.n; c++)
		chi[c] = c < y.STb ? 1 : DBL_MAX;
	double base = 0;
	for (uint32_t t = 0; t < T; t++) {
		base += (double)in->op_time[t];
		obj[y.STb + t] = 1;
		for (uint32_t i = 0; i < t; i++) {
			int64_t c = colR(&y, i, t);
			if (c >= 0)
				obj[c] = (double)in->op_time[i];
		}
	}
	/* I at stage p+1 has no host copy to read: (3) with H = 0 */
	for (uint32_t j = 0; j < N; j++)
		if (y.Ib[j] >= 0)
			chi[colOI(&y, y.Ib, j, (uint32_t)(prod(&y, j) + 1))] =
				0;
	/* the input batch is on the device when the iteration begins */
	for (uint32_t j = 0; j < N; j++)
		if (y.Sb[j] >= 0 && prod(&y, j) < 0)
			clo[colS(&y, j, 0)] = 1;
	for (uint32_t t = 0; t < T; t++) {
		/* (1) dependencies of op t and of every op re-run in t */
		if (dep_rows(&y, NULL, t, &r, &mx) < 0)
			goto oom;
		/* (5) memory */
		r.n = 0;
		for (uint32_t i = 0; i < t; i++)
			ADD(colR(&y, i, t),
			    (double)(y.ob[i] + in->op_ws[i]));
		for (uint32_t j = 0; j < N; j++) {
			double b = (double)wl->tensors[j].bytes;
			ADD(colS(&y, j, t), b);
			ADD(colOI(&y, y.Ib, j, t), b);
		}
		rhs_mem[t] = (double)in->budget - (double)in->fixed -
			     (double)y.ob[t] + (double)inplace_share(in, t) -
			     (double)in->op_ws[t];
		if (r.n)
			ROW('L', rhs_mem[t]);
		/* (6) the two copy engines */
		for (int dir = 0; dir < 2 && in->swap; dir++) {
			r.n = 0;
			ADD(y.STb + t, 1);
			for (uint32_t i = 0; i < t; i++)
				ADD(colR(&y, i, t), (double)in->op_time[i]);
			int n_copy = 0;
			for (uint32_t j = 0; j < N; j++) {
				int64_t c = colOI(&y, dir ? y.Ob : y.Ib, j, t);
				if (c < 0)
					continue;
				n_copy++;
				ADD(c, -(double)(dir ? in->t_d2h[j]
						     : in->t_h2d[j]));
			}
			if (n_copy)
				ROW('G', -(double)in->op_time[t]);
		}
	}
	for (uint32_t j = 0; j < N; j++) {
		if (y.Sb[j] < 0)
			continue;
		int64_t p = prod(&y, j);
		for (uint32_t t = (uint32_t)(p + 1); t < y.L[j]; t++) {
			/* (2) residency */
			r.n = 0;
			ADD(colS(&y, j, t + 1), 1);
			ADD(colS(&y, j, t), -1);
			ADD(colR(&y, (uint32_t)p, t), -1);
			ADD(colOI(&y, y.Ib, j, t), -1);
			ROW('L', 0);
			if (y.Ob[j] < 0)
				continue;
			/* (3) */
			r.n = 0;
			ADD(colOI(&y, y.Ob, j, t), 1);
			ADD(colS(&y, j, t), -1);
			ROW('L', 0);
			if (colH(&y, j, t) >= 0) {
				r.n = 0;
				ADD(colOI(&y, y.Ib, j, t), 1);
				ADD(colH(&y, j, t), -1);
				ROW('L', 0);
			}
			/* (4) */
			if (colH(&y, j, t + 1) >= 0) {
				r.n = 0;
				ADD(colH(&y, j, t + 1), 1);
				ADD(colH(&y, j, t), -1);
				ADD(colOI(&y, y.Ob, j, t), -1);
				ADD(colOI(&y, y.Ib, j, t), 1);
				ROW('L', 0);
			}
		}
	}
#undef ADD
#undef ROW
	s->n_vars = (uint64_t)y.n;
	s->n_rows = (uint64_t)mx.rows;
	s->n_int = (uint64_t)y.STb;
	/* the MIP start: the framework's schedule when it fits, else
	 * swap-all when it fits */
	double h = heuristic(&y, false, x, rhs_mem);
	snprintf(s->start, sizeof s->start, "framework");
	if (h < 0 && in->swap) {
		h = heuristic(&y, true, x, rhs_mem);
		snprintf(s->start, sizeof s->start, "swap-all");
	}
	if (mat_csc(&mx, (int)y.n, &cs) < 0)
		goto oom;
	/* a heuristic policy's schedule, when it fits the MILP and beats
	 * the start above */
	if (in->n_seed) {
		double *xs = malloc(((size_t)y.n + 1) * sizeof *xs);
		if (!xs)
			goto oom;
		for (uint32_t k = 0; k < in->n_seed; k++) {
			const struct opt_seed *sd = &in->seed[k];
			const char *why = NULL;
			double v = seed_start(&y, &mx, &cs, clo, chi, obj, base,
					      sd, xs, &why);
			size_t at = strlen(s->seeds);
			if (v < 0)
				snprintf(s->seeds + at, sizeof s->seeds - at,
					 "%s%s rejected (%s)", at ? "; " : "",
					 sd->name, why);
			else
				snprintf(s->seeds + at, sizeof s->seeds - at,
					 "%s%s %.0f ns (ran %.0f ns)",
					 at ? "; " : "", sd->name, v, sd->time);
			if (v >= 0 && (h < 0 || v < h)) {
				h = v;
				memcpy(x, xs, (size_t)y.n * sizeof *x);
				snprintf(s->start, sizeof s->start, "%s",
					 sd->name);
			}
		}
		free(xs);
	}
	if (h < 0)
		snprintf(s->start, sizeof s->start, "none");
	else
		s->start_obj = h;
	/* the incumbent, then the global bound, each under the work
	 * limits and the safety net */
	struct sres sr;
	if (solve_both(&mx, &cs, (int)y.n, y.STb, clo, chi, obj, &lim,
		       h >= 0 ? x : NULL, &sr) < 0) {
		free(sr.x);
		gms_errf(err, "cannot start the solver process");
		goto out;
	}
	s->lp_bound = isnan(sr.lp) ? NAN : sr.lp + base;
	s->work = sr.w;
	if (sr.done && sr.infeasible) {
		s->status = OPT_INFEASIBLE;
		free(sr.x);
		rc = 0;
		goto out;
	}
	/* stopped by the safety net before CBC answered: the MIP start is
	 * the incumbent, the LP (or compute alone) the bound */
	const double *sol = sr.has_sol && sr.done ? sr.x : h >= 0 ? x : NULL;
	double lb = isnan(s->lp_bound) ? base : s->lp_bound;
	if (!sol) {
		s->status = OPT_NO_SOLUTION;
		s->best_bound = sr.done ? sr.best + base : lb;
		if (!isfinite(s->best_bound) || s->best_bound < lb)
			s->best_bound = lb;
		free(sr.x);
		rc = 0;
		goto out;
	}
	s->status = sr.done && sr.optimal ? OPT_OPTIMAL : OPT_FEASIBLE;
	s->objective = sol == x ? h : sr.obj + base;
	s->best_bound = s->status == OPT_OPTIMAL ? s->objective
			: sr.done ? sr.best + base
				  : lb;
	if (!isfinite(s->best_bound) || s->best_bound < lb)
		s->best_bound = lb; /* -inf: CBC or CLP stopped first */
	if (s->best_bound > s->objective)
		s->best_bound = s->objective;
	s->gap = s->objective > 0
			 ? (s->objective - s->best_bound) / s->objective
			 : 0;
	int erc = extract(&y, sol, s);
	free(sr.x);
	if (erc < 0)
		goto oom;
	rc = 0;
	goto out;
oom:
	gms_errf(err, "out of memory");
	rc = -1;
out:
	if (rc == 0 && !in->no_bound && bound_solve(&y, &lim, s) < 0) {
		gms_errf(err, "out of memory");
		rc = -1;
	}
	s->solve_s = wall_s() - t0;
	csc_free(&cs);
	free(r.col);
	free(r.val);
	mat_free(&mx);
	free(clo);
	free(chi);
	free(obj);
	free(x);
	free(rhs_mem);
	lay_free(&y);
	if (rc < 0)
		opt_sched_free(s);
	return rc;
}

static int bound_with(const struct opt_in *in, struct opt_sched *s,
		      gms_err *err)
{
	struct lay y;
	double t0 = wall_s();
	const struct lim lim = lim_of(in);
	memset(s, 0, sizeof *s);
	s->n_stages = in->wl->n_ops;
	snprintf(s->start, sizeof s->start, "none");
	int rc = lay_build(&y, in) < 0 || bound_solve(&y, &lim, s) < 0
		 ? gms_errf(err, "out of memory")
		 : 0;
	s->solve_s = wall_s() - t0;
	lay_free(&y);
	return rc;
}

/* Call f with in->lib, or with CBC opened for this call alone when the
 * caller opened none (the policy opens it once per plan). */
static int with_lib(int (*f)(const struct opt_in *, struct opt_sched *,
			     gms_err *),
		    const struct opt_in *in, struct opt_sched *s,
		    gms_err *err)
{
	if (in->lib)
		return f(in, s, err);
	struct opt_in own = *in;
	struct opt_lib *l;
	if (opt_lib_open(&l, err) < 0) {
		memset(s, 0, sizeof *s);
		return -1;
	}
	own.lib = l;
	int rc = f(&own, s, err);
	opt_lib_close(l);
	return rc;
}

int opt_solve(const struct opt_in *in, struct opt_sched *s, gms_err *err)
{
	return with_lib(solve_with, in, s, err);
}

int opt_bound(const struct opt_in *in, struct opt_sched *s, gms_err *err)
{
	return with_lib(bound_with, in, s, err);
}
