/*
 * optimal.c - the `optimal` policy: solve the joint swap/recompute MILP
 * (policies/optimal_milp.h; README, "The optimal policy") for the run's
 * workload, profile and budget, then replay its schedule in the executor,
 * so that the solver's claim is checked by the model every other policy
 * runs on.
 *
 * Replay of stage t (op t):
 *   before_op(t)  wait for every copy of stage t-1 (ex_queue_event on
 *                 both engines: the MILP's stage ends when its copies
 *                 have, constraint 6); swap out (no release) the tensors
 *                 of O[t,.] and swap in those of I[t,.], both beside
 *                 stage t's compute; re-run the ops of R[t,.] in id order
 *                 (ex_recompute of their dropped outputs).
 *   after_op(t)   release what the MILP does not keep for stage t+1
 *                 (S[t+1,j] = 0) while the executor would (it has later
 *                 readers): a swap-out with release when the host holds a
 *                 copy, else ex_drop.
 *   on_copy_done  a swap-in refused for want of memory (a block released
 *                 by a swap-out still copying) is issued again once a
 *                 copy completes and frees memory; a swap-out of a
 *                 tensor still arriving (swapped in the stage before) is
 *                 issued once it has arrived.
 *   on_alloc_fail EX_WAIT while a release is pending (the MILP frees a
 *                 swapped-out block at its stage's end; the executor
 *                 frees it when the copy finishes, which the stage's wait
 *                 also awaits), a few times, then EX_FAIL.
 * Every refusal and wait is counted and reported, with the simulated
 * iteration time and peak against the solver's.
 */
#include "../sim/ex.h"
#include "optimal.h"
#include "optimal_blocks.h"
#include "optimal_milp.h"
#include "pol.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct optimal_params {
	int64_t node_limit;    /* CBC's nodes, per solve */
	int64_t lp_iterations; /* CLP's iterations, per LP value */
	int search;	       /* enum opt_search */
	double time_limit;     /* the safety net, wall seconds per solve */
	bool swap, remat;   /* what the MILP may use */
	int64_t max_vars;   /* refuse larger problems */
	bool schedule;	    /* print the schedule in the report */
	char seeds[PRM_STR_MAX]; /* heuristics whose schedules seed CBC */
	int decompose;	    /* enum decompose */
	int64_t menu;	    /* keep budgets per peak budget, per block */
	int64_t menu_max;   /* the most a menu is doubled to */
	int64_t exact_ops;  /* auto: decompose above this many ops */
};

/* in enum opt_search's order */
static const char *const search_choices[] = {"auto", "full", "lp", NULL};

enum decompose { DEC_AUTO, DEC_OFF, DEC_BLOCKS };
static const char *const decompose_names[] = {"auto", "off", "blocks",
					      NULL};

static const struct prm_def optimal_params[] = {
	{"node_limit", PRM_INT, "1000", 0, 1e9, NULL,
	 "CBC's branch-and-bound nodes per solve (0: the root only): a "
	 "work limit, so the same inputs give the same incumbent, bound "
	 "and gap on any machine; when it stops the search, the incumbent "
	 "is replayed and the gap to the bound reported",
	 offsetof(struct optimal_params, node_limit)},
	{"lp_iterations", PRM_INT, "1000000", 1, 1e9, NULL,
	 "CLP's simplex iterations for each LP relaxation's value (a work "
	 "limit; stopped there, the LP value is not reported)",
	 offsetof(struct optimal_params, lp_iterations)},
	{"search", PRM_ENUM, "auto", 0, 0, search_choices,
	 "full: CBC's branch and bound (up to node_limit nodes); lp: the "
	 "LP's value is the bound and the MIP start the incumbent, no "
	 "CBC (large problems, where CBC's root alone takes minutes); "
	 "auto: full up to 20000 variables, lp above",
	 offsetof(struct optimal_params, search)},
	{"time_limit", PRM_DOUBLE, "600", 0.001, 86400, NULL,
	 "safety net, wall seconds per solve: a solve still running is "
	 "killed and the report says so (its answer then depends on the "
	 "machine's speed); the work limits are what normally stop CBC",
	 offsetof(struct optimal_params, time_limit)},
	{"swap", PRM_BOOL, "true", 0, 0, NULL,
	 "allow swapping (false: Checkmate's recomputation-only problem)",
	 offsetof(struct optimal_params, swap)},
	{"remat", PRM_BOOL, "true", 0, 0, NULL,
	 "allow recomputation (false: swapping only)",
	 offsetof(struct optimal_params, remat)},
	{"max_vars", PRM_INT, "200000", 1, 1e9, NULL,
	 "refuse a formulation with more variables (the exact MILP grows "
	 "with ops times tensors)",
	 offsetof(struct optimal_params, max_vars)},
	{"seeds", PRM_STR, "checkpoint,dtr", 0, 0, NULL,
	 "policies (comma-separated, with their defaults; \"\" for none) "
	 "run on the side first: each one's re-runs, translated into the "
	 "MILP's variables, are CBC's MIP start when they satisfy the MILP "
	 "and beat the framework's or swap-all's schedule",
	 offsetof(struct optimal_params, seeds)},
	{"schedule", PRM_BOOL, "false", 0, 0, NULL,
	 "print the solver's schedule, stage by stage, in the report",
	 offsetof(struct optimal_params, schedule)},
	{"decompose", PRM_ENUM, "auto", 0, 0, decompose_names,
	 "blocks: solve each distinct block (wl_op.block) for a menu of "
	 "budgets and combine one option per block by Rotor's chain DP, as "
	 "Rockmate does (policies/optimal_blocks.c): the optimum over that "
	 "decomposition, not a bound; off: the exact MILP; auto: blocks "
	 "when the workload has block marks and more than exact_ops ops",
	 offsetof(struct optimal_params, decompose)},
	{"menu", PRM_INT, "4", 2, 64, NULL,
	 "decompose: keep budgets per peak budget (two peaks) each "
	 "distinct block is solved for (Rockmate's nb_budget_save)",
	 offsetof(struct optimal_params, menu)},
	{"menu_max", PRM_INT, "8", 2, 64, NULL,
	 "decompose: when no combination of the blocks' options fits, "
	 "the menu is doubled and the blocks solved again, up to this "
	 "many keep budgets (counted in the report; each doubling "
	 "doubles the block solves)",
	 offsetof(struct optimal_params, menu_max)},
	{"exact_ops", PRM_INT, "400", 1, 1e9, NULL,
	 "decompose=auto: the most ops solved exactly",
	 offsetof(struct optimal_params, exact_ops)},
	PRM_END,
};

struct optimal {
	const struct wl_workload *wl;
	struct opt_sched s;
	struct opt_blocks blk; /* decompose: the blocks' options, choice */
	bool decomposed;
	bool solved;
	uint32_t *pending;  /* swap-ins refused for memory, to retry */
	uint32_t n_pending;
	uint32_t *pend_out; /* swap-outs of tensors still arriving */
	uint32_t n_pend_out;
	sim_time_t sim_time; /* last iteration's simulated time */
	uint64_t sim_peak;   /* peak requested bytes, whole run */
	uint64_t budget;
	/* refusals and waits: the replay's departures from the MILP */
	uint64_t n_refused_in, n_refused_out, n_refused_drop,
		n_refused_rc, n_retried_in, n_alloc_wait, n_alloc_fail;
	char last_refusal[160];
	struct opt_memo *memo; /* the experiment's block solves (NULL:
				  this run solves its own) */
};

static int optimal_init(struct pol *p, gms_err *err)
{
	p->priv = calloc(1, sizeof(struct optimal));
	return p->priv ? 0 : gms_errf(err, "out of memory");
}

static void optimal_fini(struct pol *p)
{
	struct optimal *o = p->priv;
	if (o) {
		opt_sched_free(&o->s);
		opt_blocks_free(&o->blk);
		free(o->pending);
		free(o->pend_out);
	}
	free(o);
	p->priv = NULL;
}

static void refused(struct optimal *o, struct ex *ex, uint64_t *count)
{
	(*count)++;
	snprintf(o->last_refusal, sizeof o->last_refusal, "%s",
		 ex_last_error(ex));
}

/* A side run's re-runs, per stage, on its last iteration: a
 * recomputation is issued before the kernel of the op that needs it
 * (ex_recompute from before_op or on demand), so its stage is the next
 * op kernel's. */
struct seed_rec {
	uint32_t *stage, *op; /* the iteration's (stage, op) pairs */
	uint32_t n, cap;
	uint32_t pend;	      /* pairs of the stage not yet closed */
	bool ok;
};

static void seed_iter(void *obj, int iter, bool end, sim_time_t now)
{
	struct seed_rec *r = obj;
	(void)iter;
	(void)now;
	if (!end)
		r->n = r->pend = 0; /* keep the last iteration's */
}

static void seed_issue(void *obj, enum eng_q q, const struct eng_item *it,
		       const struct ex_kernel *k, sim_time_t now)
{
	struct seed_rec *r = obj;
	(void)q;
	(void)it;
	(void)now;
	if (!k)
		return;
	if (!k->recompute) {
		for (uint32_t a = r->n - r->pend; a < r->n; a++)
			r->stage[a] = k->op;
		r->pend = 0;
		return;
	}
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? 2 * r->cap : 64;
		uint32_t *st = realloc(r->stage, cap * sizeof *st);
		if (st)
			r->stage = st;
		uint32_t *op = st ? realloc(r->op, cap * sizeof *op) : NULL;
		if (!op) {
			r->ok = false;
			return;
		}
		r->op = op;
		r->cap = cap;
	}
	r->op[r->n++] = k->op;
	r->pend++;
}

/* Run policy `name` (its defaults) on the side with this run's
 * configuration and record its last iteration's re-runs in *sd (owned
 * arrays in *rec). 1 when it ran and fit, 0 when it did not (why in
 * err), -1 on an error. */
static int seed_run(struct ex *ex, const char *name, struct opt_seed *sd,
		    struct seed_rec *rec, gms_err *err)
{
	struct pol child;
	if (pol_create(&child, name, NULL, NULL, NULL, 0, err) < 0)
		return -1;
	struct ex_observer obs = {.obj = rec, .iter = seed_iter,
				  .issue = seed_issue};
	struct ex_cfg cfg = *ex_config(ex);
	cfg.pol = &child;
	cfg.obs = &obs;
	rec->ok = true;
	struct st_run r;
	int rc = ex_run(&cfg, &r, err);
	pol_destroy(&child);
	int fit = rc == 0 && !r.oom.hit && r.n_iter > 0 && rec->ok &&
		  !rec->pend;
	*sd = (struct opt_seed){.name = name,
				.time = fit ? (double)r.iter[r.n_iter - 1].time
					    : 0,
				.stage = rec->stage, .op = rec->op,
				.n = rec->n};
	st_run_free(&r);
	return fit;
}

static int optimal_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	const struct optimal_params *prm = p->params;
	struct optimal *o = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	uint32_t T = wl->n_ops, N = wl->n_tensors;
	o->wl = wl;
	struct mem_stats ms;
	ex_mem_stats(ex, &ms);
	o->budget = ms.budget;
	struct opt_lib *lib = NULL;
	sim_time_t *ot = calloc(T ? T : 1, sizeof *ot);
	uint64_t *ws = calloc(T ? T : 1, sizeof *ws);
	sim_time_t *ot_lb = calloc(T ? T : 1, sizeof *ot_lb);
	uint64_t *ws_lb = calloc(T ? T : 1, sizeof *ws_lb);
	uint32_t *alg_off = calloc((size_t)T + 1, sizeof *alg_off);
	sim_time_t *alg_time = NULL;
	uint64_t *alg_ws = NULL;
	uint32_t n_alg = 0;
	for (uint32_t i = 0; i < T; i++) {
		uint32_t n;
		ex_op_algos(ex, i, &n);
		n_alg += n ? n : 1;
	}
	alg_time = calloc(n_alg ? n_alg : 1, sizeof *alg_time);
	alg_ws = calloc(n_alg ? n_alg : 1, sizeof *alg_ws);
	n_alg = 0;
	bool *man = calloc(N ? N : 1, sizeof *man);
	sim_time_t *h2d = calloc(N ? N : 1, sizeof *h2d);
	sim_time_t *d2h = calloc(N ? N : 1, sizeof *d2h);
	o->pending = calloc(N ? N : 1, sizeof *o->pending);
	o->pend_out = calloc(N ? N : 1, sizeof *o->pend_out);
	int rc = -1;
	if (!ot || !ws || !ot_lb || !ws_lb || !alg_off || !alg_time ||
	    !alg_ws || !man || !h2d || !d2h || !o->pending ||
	    !o->pend_out) {
		gms_errf(err, "out of memory");
		goto out;
	}
	uint64_t fixed = 0;
	/* managed: not kept for the run (produced this iteration, or the
	 * input batch); the rest (parameters, optimizer state, held blobs)
	 * is counted as resident in every stage */
	for (uint32_t j = 0; j < N; j++) {
		const struct wl_tensor *t = &wl->tensors[j];
		man[j] = !ex_tensor_persistent(ex, j) &&
			 (t->producer != WL_NONE || t->n_readers > 0);
		if (!man[j])
			fixed += t->bytes;
		h2d[j] = ex_copy_time(ex, ENG_H2D, t->bytes);
		d2h[j] = ex_copy_time(ex, ENG_D2H, t->bytes);
	}
	/* The convolution algorithm is not a variable of the MILP: each op
	 * takes the fastest whose workspace fits beside the fixed tensors
	 * and what the framework's schedule has live in its stage (every
	 * managed tensor from its producer to its last reader: a
	 * difference array, linear), else the least-workspace one. Where
	 * swapping or recomputation would make room for a faster one, the
	 * MILP does not see it (README, "The optimal policy"). */
	int64_t *live = calloc((size_t)T + 1, sizeof *live);
	if (!live) {
		gms_errf(err, "out of memory");
		goto out;
	}
	for (uint32_t j = 0; j < N; j++) {
		const struct wl_tensor *t = &wl->tensors[j];
		if (!man[j])
			continue;
		uint32_t from = t->producer == WL_NONE ? 0 : t->producer;
		uint32_t to = t->n_readers ? t->readers[t->n_readers - 1]
					   : from;
		live[from] += (int64_t)t->bytes;
		live[to + 1] -= (int64_t)t->bytes;
	}
	int64_t run = 0;
	for (uint32_t i = 0; i < T; i++) {
		const struct wl_op *op = &wl->ops[i];
		uint32_t n;
		const struct wl_algo *al = ex_op_algos(ex, i, &n);
		run += live[i];
		uint64_t own = fixed + (uint64_t)run;
		uint32_t pick = 0;
		/* for the global bound: the least time of an algorithm whose
		 * workspace fits beside the op's own inputs and outputs, and
		 * the least workspace of any (each a lower bound of what a
		 * run of any policy pays) */
		uint64_t io = fixed;
		for (uint32_t a = 0; a < op->n_in; a++)
			io += man[op->in[a]] ? wl->tensors[op->in[a]].bytes : 0;
		for (uint32_t a = 0; a < op->n_out; a++)
			io += man[op->out[a]] ? wl->tensors[op->out[a]].bytes
					      : 0;
		ot_lb[i] = SIM_TIME_MAX;
		ws_lb[i] = n ? UINT64_MAX : op->workspace;
		for (uint32_t a = 0; a < n; a++) {
			if (al[a].workspace < ws_lb[i])
				ws_lb[i] = al[a].workspace;
			if (io + al[a].workspace > ms.budget)
				continue;
			if (ex_pick_algo(ex, i, a) < 0)
				continue;
			if (ex_op_time(ex, i) < ot_lb[i])
				ot_lb[i] = ex_op_time(ex, i);
			alg_time[n_alg] = ex_op_time(ex, i);
			alg_ws[n_alg++] = al[a].workspace;
		}
		for (uint32_t a = 0; a < n; a++)
			if (al[a].workspace < al[pick].workspace)
				pick = a;
		for (uint32_t a = 0; a < n; a++)
			if (own + al[a].workspace <= ms.budget) {
				pick = a;
				break;
			}
		if (n && ex_pick_algo(ex, i, pick) < 0) {
			gms_errf(err, "op '%s': %s", op->name,
				 ex_last_error(ex));
			free(live);
			goto out;
		}
		ot[i] = ex_op_time(ex, i);
		ws[i] = n ? al[pick].workspace : op->workspace;
		if (ot_lb[i] > ot[i])
			ot_lb[i] = ot[i];
		if (n_alg == alg_off[i]) { /* no algorithms, or none fits */
			alg_time[n_alg] = ot[i];
			alg_ws[n_alg++] = ws[i];
		}
		alg_off[i + 1] = n_alg;
	}
	free(live);
	/* CBC, loaded only now that a MILP is to be solved */
	if (opt_lib_open(&lib, err) < 0)
		goto out;
	struct opt_in in = {.lib = lib, .wl = wl, .op_time = ot, .op_ws = ws,
			    .op_time_lb = ot_lb, .op_ws_lb = ws_lb,
			    .alg_off = alg_off, .alg_time = alg_time,
			    .alg_ws = alg_ws,
			    .managed = man, .t_h2d = h2d, .t_d2h = d2h,
			    .budget = ms.budget, .fixed = fixed,
			    .node_limit = prm->node_limit,
			    .lp_iterations = prm->lp_iterations,
			    .search = prm->search,
			    .time_limit_s = prm->time_limit, .swap = prm->swap,
			    .remat = prm->remat,
			    .max_vars = (uint64_t)prm->max_vars,
			    .memo = o->memo};
	o->decomposed = prm->decompose == DEC_BLOCKS ||
			(prm->decompose == DEC_AUTO && wl->n_blocks &&
			 T > (uint64_t)prm->exact_ops);
	/* the heuristics' schedules: the exact MILP's MIP starts (by
	 * blocks, each block solve starts from the framework's or
	 * swap-all's schedule: a policy's re-runs of the whole workload
	 * cut into a block broke the block's rows on GPT-2, docs/optimal.md) */
	char names[PRM_STR_MAX];
	snprintf(names, sizeof names, "%s", o->decomposed ? "" : prm->seeds);
	struct opt_seed sd[8];
	struct seed_rec rec[8];
	memset(rec, 0, sizeof rec);
	uint32_t n_seed = 0;
	int src = -1;
	char *save = NULL;
	for (char *nm = strtok_r(names, ", ", &save); nm;
	     nm = strtok_r(NULL, ", ", &save)) {
		if (n_seed == 8) {
			gms_errf(err, "seeds: at most 8 policies");
			goto seeds_out;
		}
		if (strcmp(nm, "optimal") == 0) {
			gms_errf(err, "seeds: 'optimal' cannot seed itself");
			goto seeds_out;
		}
		gms_err e2 = {{0}};
		int fit = seed_run(ex, nm, &sd[n_seed], &rec[n_seed], &e2);
		n_seed++;
		if (fit < 0) {
			gms_errf(err, "seeds: %s", e2.msg);
			goto seeds_out;
		}
		sd[n_seed - 1].fit = fit == 1;
	}
	in.seed = sd;
	in.n_seed = n_seed;
	src = o->decomposed ? opt_blocks_solve(&in, (uint32_t)prm->menu,
						(uint32_t)prm->menu_max,
						&o->s, &o->blk, err)
			    : opt_solve(&in, &o->s, err);
seeds_out:
	for (uint32_t k = 0; k < n_seed; k++) {
		free(rec[k].stage);
		free(rec[k].op);
	}
	if (src < 0)
		goto out;
	if (o->decomposed && o->s.status == OPT_INFEASIBLE) {
		uint32_t n_opt = 0;
		uint64_t least = UINT64_MAX;
		for (uint32_t c = 0; c < o->blk.n_classes; c++)
			for (uint32_t k = 0; k < o->blk.c[c].n_opt; k++) {
				n_opt++;
				if (o->blk.c[c].opt[k].keep < least)
					least = o->blk.c[c].opt[k].keep;
			}
		gms_errf(err, "no combination of the block options of "
			      "'%s' fits %llu bytes (decompose=blocks: "
			      "block inputs and outputs stay; %u blocks, "
			      "%u options from %u solves, %u proven, the "
			      "least keep %llu B; menu %u, doubled %u "
			      "times from %u, menu_max %u: %s); global "
			      "bound %.0f ns (relaxation %s)",
			 wl->name, (unsigned long long)ms.budget,
			 o->blk.n_blocks, n_opt, o->blk.n_solves,
			 o->blk.n_proven,
			 (unsigned long long)(n_opt ? least : 0),
			 o->blk.menu, o->blk.n_doubled, o->blk.menu_first,
			 o->blk.menu_max, opt_blocks_why_none(&o->blk),
			 o->s.bound,
			 opt_status_names[o->s.bnd_status]);
		goto out;
	}
	if (o->s.status == OPT_INFEASIBLE) {
		if (o->s.bnd_status == OPT_INFEASIBLE)
			gms_errf(err, "infeasible: no schedule of '%s' fits "
				      "%llu bytes (the global bound's "
				      "relaxation is proven infeasible)",
				 wl->name, (unsigned long long)ms.budget);
		else
			gms_errf(err, "no replayable schedule of '%s' in %llu "
				      "bytes (the restricted MILP is "
				      "infeasible); global bound %.0f ns "
				      "(relaxation %s)",
				 wl->name, (unsigned long long)ms.budget,
				 o->s.bound,
				 opt_status_names[o->s.bnd_status]);
		goto out;
	}
	if (o->s.status == OPT_NO_SOLUTION) {
		gms_errf(err, "no schedule of '%s' found within %s "
			      "(bound %.0f ns)",
			 wl->name,
			 o->s.work.killed ? "the safety net's time_limit"
				     : "node_limit",
			 o->s.best_bound);
		goto out;
	}
	o->solved = true;
	rc = 0;
out:
	opt_lib_close(lib);
	free(ot);
	free(ws);
	free(ot_lb);
	free(ws_lb);
	free(alg_off);
	free(alg_time);
	free(alg_ws);
	free(man);
	free(h2d);
	free(d2h);
	return rc;
}

static void optimal_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct optimal *o = p->priv;
	(void)ex;
	(void)iter;
	o->n_pending = 0;
	o->n_pend_out = 0;
}

/* Copy j out (no release). A tensor swapped in during the previous
 * stage may still be arriving: the MILP's stage begins when that copy
 * ends (the wait before this stage's kernels), so its copy out is issued
 * then, from on_copy_done. */
static void swap_out(struct optimal *o, struct ex *ex, uint32_t j)
{
	if (ex_tensor_state(ex, j) == TS_SWAPPING_IN &&
	    o->n_pend_out < o->wl->n_tensors) {
		o->pend_out[o->n_pend_out++] = j;
		return;
	}
	if (ex_swap_out(ex, j, 0) == ENG_EVENT_NONE)
		refused(o, ex, &o->n_refused_out);
}

static void swap_in(struct optimal *o, struct ex *ex, uint32_t j)
{
	if (ex_swap_in(ex, j, ENG_EVENT_NONE) != ENG_EVENT_NONE)
		return;
	if (ex_tensor_state(ex, j) == TS_OUT &&
	    o->n_pending < o->wl->n_tensors) {
		o->pending[o->n_pending++] = j; /* no memory yet */
		o->n_retried_in++; /* each time it is put back */
	} else {
		refused(o, ex, &o->n_refused_in);
	}
}

static void optimal_before_op(struct pol *p, struct ex *ex,
			      const struct wl_op *op)
{
	struct optimal *o = p->priv;
	const struct opt_sched *s = &o->s;
	uint32_t t = op->id;
	if (!o->solved)
		return;
	/* the stage begins when stage t-1's copies have ended */
	ex_wait(ex, ex_queue_event(ex, ENG_H2D));
	ex_wait(ex, ex_queue_event(ex, ENG_D2H));
	for (uint32_t k = s->out_off[t]; k < s->out_off[t + 1]; k++)
		swap_out(o, ex, s->out[k]);
	for (uint32_t k = s->in_off[t]; k < s->in_off[t + 1]; k++)
		swap_in(o, ex, s->in[k]);
	for (uint32_t k = s->rc_off[t]; k < s->rc_off[t + 1]; k++) {
		const struct wl_op *r = &o->wl->ops[s->rc[k]];
		for (uint32_t a = 0; a < r->n_out; a++)
			if (ex_tensor_state(ex, r->out[a]) == TS_RECOMPUTE &&
			    ex_recompute(ex, r->out[a]) < 0)
				refused(o, ex, &o->n_refused_rc);
	}
}

static void optimal_after_op(struct pol *p, struct ex *ex,
			     const struct wl_op *op)
{
	struct optimal *o = p->priv;
	const struct opt_sched *s = &o->s;
	uint32_t t = op->id;
	if (!o->solved)
		return;
	for (uint32_t k = s->rel_off[t]; k < s->rel_off[t + 1]; k++) {
		uint32_t j = s->rel[k];
		if (ex_tensor_state(ex, j) != TS_IN)
			continue; /* freed already, or on its way out */
		if (s->rel_evict[k]) {
			if (ex_swap_out(ex, j, EX_RELEASE) == ENG_EVENT_NONE)
				refused(o, ex, &o->n_refused_out);
		} else if (ex_drop(ex, j) < 0) {
			refused(o, ex, &o->n_refused_drop);
		}
	}
}

static void optimal_on_copy_done(struct pol *p, struct ex *ex,
				 const struct ex_copy *c)
{
	struct optimal *o = p->priv;
	(void)c;
	uint32_t n = o->n_pending;
	o->n_pending = 0;
	/* swap_in re-queues at an index <= k: read before written */
	for (uint32_t k = 0; k < n; k++)
		swap_in(o, ex, o->pending[k]);
	n = o->n_pend_out;
	o->n_pend_out = 0;
	for (uint32_t k = 0; k < n; k++)
		swap_out(o, ex, o->pend_out[k]);
}

static enum ex_verdict optimal_on_alloc_fail(struct pol *p, struct ex *ex,
					     const struct ex_alloc_req *req)
{
	struct optimal *o = p->priv;
	(void)ex;
	if (req->tries < 4) {
		o->n_alloc_wait++;
		return EX_WAIT;
	}
	o->n_alloc_fail++;
	return EX_FAIL;
}

static void optimal_iter_end(struct pol *p, struct ex *ex, int iter,
			     const struct st_iter *st)
{
	struct optimal *o = p->priv;
	(void)iter;
	struct mem_stats ms;
	ex_mem_stats(ex, &ms);
	o->sim_time = st->time;
	o->sim_peak = ms.peak_requested;
}

static void print_list(FILE *out, const char *what,
		       const struct wl_workload *wl, const uint32_t *ids,
		       uint32_t a, uint32_t b, bool ops)
{
	if (a == b)
		return;
	fprintf(out, " %s", what);
	for (uint32_t k = a; k < b; k++)
		fprintf(out, "%s%s", k == a ? " " : ",",
			ops ? wl->ops[ids[k]].name : wl->tensors[ids[k]].name);
}

/* What stopped a solve of a model of n columns: "none" when it ended
 * on its own. */
static const char *stopped_by(const struct optimal_params *prm, uint64_t n,
			      const struct opt_work *w)
{
	return w->killed ? "the safety net (time_limit): depends on the "
			"machine's speed"
	       : strcmp(opt_search_used(prm->search, n), "lp") == 0
		       ? "search lp (the LP and the MIP start, no branch and "
			 "bound)"
	       : w->node_limit ? "node_limit"
			    : "none";
}

static void optimal_report(struct pol *p, FILE *out)
{
	const struct optimal_params *prm = p->params;
	struct optimal *o = p->priv;
	const struct opt_sched *s = &o->s;
	if (!o->solved)
		return;
	char lp[96];
	if (isnan(s->lp_bound))
		snprintf(lp, sizeof lp, "not reached (%s)",
			 s->work.lp_stopped ? "lp_iterations" : "safety net");
	else
		snprintf(lp, sizeof lp, "%.0f ns", s->lp_bound);
	double diff = s->objective > 0
			      ? ((double)o->sim_time - s->objective) /
					s->objective
			      : 0;
	if (o->decomposed) {
		opt_blocks_report(&o->blk, s, out);
		fprintf(out,
			"    objective          %.0f ns (blocks' options and the "
			"%.0f ns of the ops in no block)\n"
			"    milp peak          %.0f B of %llu\n",
			s->objective, o->blk.other_time, s->peak_mem,
			(unsigned long long)o->budget);
	} else {
		fprintf(out,
			"    solver             cbc, %s\n"
			"    problem            %u stages, %llu variables (%llu "
			"binary), %llu constraints\n"
			"    mip start          %s (%.0f ns); seeds: %s\n"
			"    objective          %.0f ns\n"
			"    lp bound           %s\n"
			"    best bound         %.0f ns\n"
			"    gap                %.4f%%\n"
			"    nodes              %llu (node_limit %lld, search "
			"%s), %llu cbc iterations, %llu lp iterations\n"
			"    stopped by         %s\n"
			"    milp peak          %.0f B of %llu\n",
			opt_status_names[s->status], s->n_stages,
			(unsigned long long)s->n_vars,
			(unsigned long long)s->n_int,
			(unsigned long long)s->n_rows, s->start, s->start_obj,
			s->seeds[0] ? s->seeds : "none", s->objective, lp,
			s->best_bound, 100 * s->gap,
			(unsigned long long)s->work.nodes,
			(long long)prm->node_limit,
			opt_search_used(prm->search, s->n_vars),
			(unsigned long long)s->work.iter,
			(unsigned long long)s->work.lp_iter,
			stopped_by(prm, s->n_vars, &s->work),
			s->peak_mem, (unsigned long long)o->budget);
	}
	fprintf(out,
		"    simulated time     %lld ns (%+.4f%% of the objective)\n"
		"    simulated peak     %llu B (%+lld B against the milp)\n"
		"    replay departures  %llu swap-in, %llu swap-out, %llu "
		"drop, %llu recompute refused; %llu swap-ins retried, "
		"%llu allocation waits, %llu failures%s%s\n",
		(long long)o->sim_time, 100 * diff,
		(unsigned long long)o->sim_peak,
		(long long)o->sim_peak - (long long)llround(s->peak_mem),
		(unsigned long long)o->n_refused_in,
		(unsigned long long)o->n_refused_out,
		(unsigned long long)o->n_refused_drop,
		(unsigned long long)o->n_refused_rc,
		(unsigned long long)o->n_retried_in,
		(unsigned long long)o->n_alloc_wait,
		(unsigned long long)o->n_alloc_fail,
		o->last_refusal[0] ? "; last: " : "", o->last_refusal);
	char blp[96];
	if (isnan(s->bnd_lp))
		snprintf(blp, sizeof blp, "not reached (%s)",
			 s->bnd_work.lp_stopped ? "lp_iterations" : "safety net");
	else
		snprintf(blp, sizeof blp, "%.0f ns", s->bnd_lp);
	double vs = s->bound > 0 ? (double)o->sim_time / s->bound : 0;
	if (!s->bnd_rows) /* over max_vars: not built */
		fprintf(out,
			"    global bound       %.0f ns (compute alone: the "
			"relaxation's %llu variables are over max_vars)\n"
			"    simulated / bound  %.4f\n",
			s->bound, (unsigned long long)s->bnd_vars, vs);
	else
		fprintf(out,
			"    global bound       %.0f ns (relaxation %s, lp %s, cbc "
			"bound %.0f ns; %llu variables, %llu binary, %llu "
			"constraints; %llu nodes, search %s, %llu cbc "
			"iterations, %llu lp iterations; stopped by %s)\n"
			"    simulated / bound  %.4f\n",
			s->bound, opt_status_names[s->bnd_status], blp, s->bnd_best,
			(unsigned long long)s->bnd_vars,
			(unsigned long long)s->bnd_int,
			(unsigned long long)s->bnd_rows,
			(unsigned long long)s->bnd_work.nodes,
			opt_search_used(prm->search, s->bnd_vars),
			(unsigned long long)s->bnd_work.iter,
			(unsigned long long)s->bnd_work.lp_iter,
			stopped_by(prm, s->bnd_vars, &s->bnd_work),
			vs);
	fprintf(out, "    safety net         %s\n",
		s->work.killed || s->bnd_work.killed
			? "HIT: a solve ran past time_limit and was killed; "
			  "these figures depend on the machine's speed"
			: "not hit (the figures are the work limits' and "
			  "repeat on any machine)");
	if (!prm->schedule)
		return;
	for (uint32_t t = 0; t < s->n_stages; t++) {
		fprintf(out, "    stage %u %s:", t, o->wl->ops[t].name);
		print_list(out, "recompute", o->wl, s->rc, s->rc_off[t],
			   s->rc_off[t + 1], true);
		print_list(out, "swap-out", o->wl, s->out, s->out_off[t],
			   s->out_off[t + 1], false);
		print_list(out, "swap-in", o->wl, s->in, s->in_off[t],
			   s->in_off[t + 1], false);
		print_list(out, "release", o->wl, s->rel, s->rel_off[t],
			   s->rel_off[t + 1], false);
		fprintf(out, " mem %.0f stall %.0f\n", s->mem[t],
			s->stall[t]);
	}
}

const struct pol_ops pol_optimal_ops = {
	.name = "optimal",
	.summary = "the schedule of a MILP (CBC) that decides swapping and "
		   "recomputation together, both copy engines timed, replayed",
	.params = optimal_params,
	.params_size = sizeof(struct optimal_params),
	.init = optimal_init,
	.fini = optimal_fini,
	.plan = optimal_plan,
	.iter_begin = optimal_iter_begin,
	.before_op = optimal_before_op,
	.after_op = optimal_after_op,
	.on_alloc_fail = optimal_on_alloc_fail,
	.on_copy_done = optimal_on_copy_done,
	.iter_end = optimal_iter_end,
	.report = optimal_report,
};

void optimal_share_memo(struct pol *p, struct opt_memo *m)
{
	if (p->ops == &pol_optimal_ops)
		((struct optimal *)p->priv)->memo = m;
}
