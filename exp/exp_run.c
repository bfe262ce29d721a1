/*
 * exp_run.c - running an experiment: one point, the thread pool, and the
 * max-batch, best-throughput and min-pool searches.
 *
 * Every task writes only its own slot of the result arrays; the pool hands
 * out task indices under a mutex, so the results (and the files written
 * from them in index order) do not depend on the number of threads.
 */
#include "exp.h"
#include "max_batch.h"
#include "../policies/accudnn.h"
#include "../policies/dtr_full.h"
#include "../policies/optimal.h"
#include "../policies/pol.h"
#include "../sim/heap.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


const char *exp_status(const struct exp_point *p)
{
	if (!p->ran || p->st.failed)
		return "failed";
	return p->st.oom.hit ? "oom" : "ok";
}

static bool fits(const struct exp_point *p)
{
	return p->ran && !p->st.failed && !p->st.oom.hit;
}

/* ---- built workloads, shared -------------------------------------------
 *
 * Building a workload (a generator, a workload YAML, a DTR trace) cost
 * more than simulating it: a max-batch search built its workload for
 * every probe, and every policy's search built the same batches again.
 * exp_run builds each (workload, batch) once and shares it: the executor
 * and the policies take the workload const (struct ex_cfg.wl), so one
 * built workload serves every thread at once. A build is deterministic,
 * so which thread builds it does not change a result. A workload's
 * entries are freed when the last task that uses it is done. */

struct wl_entry {
	size_t wl;		  /* index into exp.wl */
	int64_t batch;		  /* batch asked for (0: its own) */
	struct wl_workload *w;	  /* the workload, NULL: the build failed */
	char error[sizeof(gms_err)]; /* why it failed */
};

struct wl_cache {
	pthread_mutex_t mu;	  /* guards everything below */
	const struct exp *e;	  /* whose workloads */
	struct wl_entry *ent;	  /* built so far */
	size_t n, cap;
	size_t *users;		  /* per workload: tasks not yet done */
	size_t *gen_first;	  /* per workload: the first workload of its
				     generator (exp_same_gen), or itself */
	struct wl_workload **kept; /* per first workload of a generator
				     that builds two or more: the template
				     root (wl_template_root) of the newest
				     build of one dropped, held for the
				     next (cache_room), else NULL */
};

static int64_t cache_key(const struct exp *e, size_t wl, int64_t batch);

/* An empty cache that takes over the builds exp_load kept (struct
 * exp_workload.first): they are the first probes of the searches. */
static int cache_init(struct wl_cache *c, const struct exp *e)
{
	memset(c, 0, sizeof *c);
	size_t n_wl = e->n_wl;
	c->users = calloc(n_wl ? n_wl : 1, sizeof *c->users);
	c->ent = calloc(n_wl ? n_wl : 1, sizeof *c->ent);
	c->gen_first = calloc(n_wl ? n_wl : 1, sizeof *c->gen_first);
	c->kept = calloc(n_wl ? n_wl : 1, sizeof *c->kept);
	if (!c->users || !c->ent || !c->gen_first || !c->kept) {
		free(c->users);
		free(c->ent);
		free(c->gen_first);
		free(c->kept);
		return -1;
	}
	for (size_t i = 0; i < n_wl; i++) {
		size_t j = 0;
		while (j < i && !exp_same_gen(e, j, i))
			j++;
		c->gen_first[i] = j; /* i itself when none before */
	}
	c->cap = n_wl ? n_wl : 1;
	c->e = e;
	for (size_t i = 0; i < n_wl; i++) {
		struct exp_workload *w = &e->wl[i];
		if (!w->first)
			continue;
		c->ent[c->n++] = (struct wl_entry){
			.wl = i, .batch = cache_key(e, i, w->first_batch),
			.w = w->first};
		w->first = NULL; /* the cache's now */
	}
	pthread_mutex_init(&c->mu, NULL);
	return 0;
}

/* Free the entries of workload wl (every entry when wl is (size_t)-1);
 * a generator's builds leave their newest template root in kept. */
static void cache_drop(struct wl_cache *c, size_t wl)
{
	const struct exp *e = c->e;
	size_t k = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct wl_entry *h = &c->ent[i];
		if (wl != (size_t)-1 && h->wl != wl) {
			c->ent[k++] = *h;
			continue;
		}
		const struct wl_workload *root =
			h->w && e->wl[h->wl].src == EXP_SRC_GEN
				? wl_template_root(h->w)
				: NULL;
		if (root && wl != (size_t)-1) {
			size_t g = c->gen_first[h->wl];
			wl_free(c->kept[g]);
			c->kept[g] = wl_hold(root);
		}
		wl_free(h->w);
	}
	c->n = k;
}

static void cache_fini(struct wl_cache *c)
{
	cache_drop(c, (size_t)-1);
	for (size_t i = 0; i < c->e->n_wl; i++)
		wl_free(c->kept[i]);
	free(c->kept);
	free(c->gen_first);
	free(c->ent);
	free(c->users);
	pthread_mutex_destroy(&c->mu);
}

/* Caller holds mu. */
static const struct wl_entry *cache_find(const struct wl_cache *c,
					 size_t wl, int64_t batch)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->ent[i].wl == wl && c->ent[i].batch == batch)
			return &c->ent[i];
	return NULL;
}

/* Caller holds mu: workload wl built at another batch (the newest
 * entry), else another workload of the same generator (the newest:
 * llm-seq's entries are two networks at other sequence lengths,
 * attention and loss, issue 37), for the next build to reserve room from
 * and follow as its template (wl_reserve): a max-batch search builds the
 * same network at each probe, and grew its arrays and name tables from
 * empty and copied and hashed every name every time (issue 18). Zeros
 * when none is built. The template is held (wl_hold) until the caller
 * has built with it and freed it: another workload's entry may be
 * dropped meanwhile (cache_done). */
static void cache_room(const struct wl_cache *c, size_t wl,
		       struct wl_reserve *r)
{
	const struct exp *e = c->e;
	const struct wl_workload *same = NULL, *other = NULL;
	for (size_t i = c->n; i-- > 0 && !same;) {
		const struct wl_entry *h = &c->ent[i];
		if (h->w && h->wl == wl)
			same = h->w;
		else if (h->w && !other && exp_same_gen(e, h->wl, wl))
			other = wl_template_root(h->w); /* no chain */
	}
	const struct wl_workload *t = same    ? same
				      : other ? other
					      : c->kept[c->gen_first[wl]];
	if (t)
		*r = wl_reserve_like(wl_hold(t));
}

/* The key of workload wl at batch: the batch exp_build_workload builds
 * at (0 asks for the entry's own; a trace its log's own, or any batch
 * when its log is marked, issue 35), so that the same workload is one
 * entry. */
static int64_t cache_key(const struct exp *e, size_t wl, int64_t batch)
{
	return batch ? batch : e->wl[wl].batch;
}

/* Caller holds mu: the workload of entry h, or NULL with its error. */
static const struct wl_workload *entry_get(const struct wl_entry *h,
					   gms_err *err)
{
	if (!h->w)
		gms_errf(err, "%s", h->error);
	return h->w;
}

/* Caller holds mu: put ne into the cache unless an entry of its
 * workload and batch is there (a thread that raced us built it first);
 * ne->w is then the cache's (NULL here). The entry, or NULL when memory
 * ran out. */
static const struct wl_entry *cache_put(struct wl_cache *c,
					struct wl_entry *ne)
{
	const struct wl_entry *h = cache_find(c, ne->wl, ne->batch);
	if (h)
		return h;
	struct wl_entry *p = gms_grow(c->ent, &c->cap, c->n, sizeof *p, 16);
	if (!p)
		return NULL;
	c->ent = p;
	c->ent[c->n] = *ne;
	ne->w = NULL; /* the cache's now */
	return &c->ent[c->n++];
}

/* Caller holds mu: another workload of the same log as wl at key
 * (exp_same_log: recorded.yaml names each log twice), not yet built and
 * with tasks still to run here, to build from the same reading; (size_t)-1
 * if none. */
static size_t cache_sibling(const struct wl_cache *c, const struct exp *e,
			    size_t wl, int64_t batch, int64_t key)
{
	for (size_t j = 0; j < e->n_wl; j++)
		if (c->users[j] && cache_key(e, j, batch) == key &&
		    exp_same_log(e, wl, j, key) && !cache_find(c, j, key))
			return j;
	return (size_t)-1;
}

/* Workload wl at batch, built once; NULL with err when the build failed
 * (the same message every time) or memory ran out. Valid until the last
 * task of wl is done (cache_done). A workload of the same log that tasks
 * here will run is built with it, from one reading (issue 37). */
static const struct wl_workload *cache_get(struct wl_cache *c,
					   const struct exp *e, size_t wl,
					   int64_t batch, gms_err *err)
{
	int64_t key = cache_key(e, wl, batch);
	const struct wl_workload *w = NULL;
	struct wl_reserve room = {0};
	size_t sib = (size_t)-1;
	pthread_mutex_lock(&c->mu);
	const struct wl_entry *h = cache_find(c, wl, key);
	if (h) {
		w = entry_get(h, err);
	} else {
		cache_room(c, wl, &room);
		sib = cache_sibling(c, e, wl, batch, key);
	}
	pthread_mutex_unlock(&c->mu);
	if (h)
		return w;
	/* built outside the lock, so that other workloads build in
	 * parallel; when two threads race, the first entry wins and the
	 * other build (the same workload) is freed */
	struct wl_entry ne = {.wl = wl, .batch = key},
			ns = {.wl = sib, .batch = key};
	gms_err berr = {{0}};
	if (sib != (size_t)-1 &&
	    exp_build_log_pair(e, wl, sib, key, &ne.w, &ns.w, &berr) < 0) {
		berr = (gms_err){{0}}; /* built alone below, for its own */
		sib = (size_t)-1;
	}
	if (sib == (size_t)-1)
		ne.w = exp_build_workload_in(e, wl, key, &room, &berr);
	wl_free((struct wl_workload *)room.like);
	snprintf(ne.error, sizeof ne.error, "%s", berr.msg);
	pthread_mutex_lock(&c->mu);
	h = cache_put(c, &ne);
	if (h)
		w = entry_get(h, err);
	else
		gms_errf(err, "out of memory");
	/* the sibling's tasks may have ended meanwhile (claimed elsewhere):
	 * then no cache_done would free it */
	if (ns.w && c->users[sib])
		(void)cache_put(c, &ns);
	pthread_mutex_unlock(&c->mu);
	wl_free(ne.w);
	wl_free(ns.w);
	return w;
}

/* Before the tasks start: free the builds taken over from exp_load of
 * the workloads none of whose tasks runs here (a shard's, only: task i
 * is of workload i / per_wl), which no cache_done would free. */
static void cache_unused(struct wl_cache *c, const bool *only,
			 size_t per_wl, size_t n_wl)
{
	for (size_t w = 0; only && w < n_wl; w++) {
		bool any = false;
		for (size_t i = w * per_wl; !any && i < (w + 1) * per_wl; i++)
			any = only[i];
		if (!any)
			cache_drop(c, w);
	}
}

/* A task of workload wl is done: the last one frees its workloads. */
static void cache_done(struct wl_cache *c, size_t wl)
{
	pthread_mutex_lock(&c->mu);
	if (c->users[wl] && --c->users[wl] == 0)
		cache_drop(c, wl);
	pthread_mutex_unlock(&c->mu);
}

/* The executor's configuration of a run as run_one (below) makes it
 * (run_one; the plan step's profiling passes, exp_plan_step), *big the
 * room for an enlarged profile. */
static void run_cfg(const struct exp *e, const struct wl_workload *wl,
		    struct pol *pol, uint64_t budget, uint64_t pool_size,
		    const struct ex_observer *obs, struct hw_profile *big,
		    struct ex_cfg *cfg)
{
	/* the profile is copied only to enlarge it: it holds the measured
	 * tables (over 100 KB), and copying it for every run was 1% of
	 * max-batch.yaml's instructions (callgrind, issue 18) */
	const struct hw_profile *hwp = &e->hw;
	if (!budget)
		budget = hwp->capacity - hwp->reserved;
	if (budget > hwp->capacity - hwp->reserved) {
		*big = e->hw;
		big->capacity = budget + big->reserved;
		hwp = big;
	}
	*cfg = (struct ex_cfg){.hw = hwp, .wl = wl, .pol = pol,
			       .allocator = e->allocator, .budget = budget,
			       .pool_size = pool_size ? pool_size
						      : e->pool_size,
			       .iterations = e->iterations,
			       .warmup = e->warmup,
			       .settle_max = e->settle_max,
			       .grow_max = e->grow_max,
			       .obs = obs};
}

/* One run of a built workload under a created policy with the
 * experiment's allocator and iterations. A budget beyond the profile's
 * memory simulates a larger device; 0 means the profile's usable memory.
 * pool_size 0 means the experiment's. Returns the budget used. A run that
 * could not start is marked failed. */
static uint64_t run_one(const struct exp *e, const struct wl_workload *wl,
			struct pol *pol, uint64_t budget, uint64_t pool_size,
			const struct ex_observer *obs, struct st_run *st,
			char *error, size_t n)
{
	gms_err err = {{0}};
	struct hw_profile big;
	struct ex_cfg cfg;
	run_cfg(e, wl, pol, budget, pool_size, obs, &big, &cfg);
	if (ex_run(&cfg, st, &err) < 0) {
		snprintf(error, n, "%s", err.msg);
		st->failed = true; /* also when it failed before starting */
	}
	return cfg.budget;
}

/* What the runs of one experiment share besides their workloads (issue
 * 37): models fitted once per distinct profiling pass. NULL members (a
 * lone `simulate`, exp_simulate): each run on its own. */
struct run_shared {
	struct ac_fit_memo *fits;	/* accudnn's performance models */
	struct dtr_trace_memo *traces;	/* DTR logs and their baselines */
	struct opt_memo *blocks;	/* optimal's block solves */
};

/* The budget point p runs at under created policy pol: its own, else
 * the experiment's; dtr on a DTR log: a fraction is of simrd's baseline
 * peak, in both presets (not of the executor's baseline), from memo
 * traces (may be NULL). 0, or -1 with err (the log cannot be read). */
static int point_budget(const struct exp *e, struct dtr_trace_memo *traces,
			const struct exp_point *p, const struct pol *pol,
			uint64_t *budget, gms_err *err)
{
	const struct exp_workload *w = &e->wl[p->wl];
	*budget = p->budget ? p->budget : e->budget;
	if (p->fraction > 0 && w->src == EXP_SRC_TRACE &&
	    dtr_full_fraction_budget(pol, traces, w->path, p->fraction,
				     budget, err) < 0)
		return -1;
	return 0;
}

/* Simulate point p on workload wl, or, when wl is NULL, mark it failed
 * with build_err (why the workload could not be built). */
static void simulate(const struct exp *e, const struct run_shared *sh,
		     struct exp_point *p, const struct wl_workload *wl,
		     const char *build_err, const struct ex_observer *obs)
{
	gms_err err = {{0}};
	memset(&p->st, 0, sizeof p->st);
	p->error[0] = '\0';
	p->ran = false;
	if (!wl) {
		snprintf(p->error, sizeof p->error, "%s", build_err);
		p->st.failed = true;
		return;
	}
	p->batch = wl->batch;
	const struct exp_policy *ep = &e->pol[p->pol];
	struct pol pol;
	if (pol_create(&pol, ep->name, e->doc, ep->node, NULL, 0, &err) < 0) {
		snprintf(p->error, sizeof p->error, "%s", err.msg);
		p->st.failed = true;
		return;
	}
	/* the tuner's strategy, carried out as it is (AccUDNN section 2) */
	if (p->plan && pol.ops == pol_find("accudnn") &&
	    accudnn_deploy(&pol, p->plan, &err) < 0) {
		snprintf(p->error, sizeof p->error, "%s", err.msg);
		p->st.failed = true;
		pol_destroy(&pol);
		return;
	}
	if (sh && sh->fits && pol.ops == pol_find("accudnn"))
		accudnn_share_fits(&pol, sh->fits);
	if (sh && sh->blocks)
		optimal_share_memo(&pol, sh->blocks);
	uint64_t budget;
	const struct exp_workload *w = &e->wl[p->wl];
	if (point_budget(e, sh ? sh->traces : NULL, p, &pol, &budget, &err) <
	    0) {
		snprintf(p->error, sizeof p->error, "%s", err.msg);
		p->st.failed = true;
		pol_destroy(&pol);
		return;
	}
	if (dtr_full_is_serial(&pol)) { /* DTR's own replay, not ex_run */
		if (w->src != EXP_SRC_TRACE ||
		    dtr_full_run_serial(&pol, sh ? sh->traces : NULL, w->path,
					p->fraction, budget, wl->batch, &p->st,
					&p->budget, &err) < 0) {
			snprintf(p->error, sizeof p->error, "%s",
				 w->src != EXP_SRC_TRACE
					 ? "policy dtr, preset serial: "
					   "replays DTR traces only"
					 : err.msg);
			p->st.failed = true;
		}
		p->ran = true;
		pol_destroy(&pol);
		return;
	}
	p->budget = run_one(e, wl, &pol, budget, p->pool_size, obs, &p->st,
			    p->error, sizeof p->error);
	p->ran = true;
	if (pol_report_text(&pol, &p->st.pol_report, &err) < 0 &&
	    !p->st.failed) {
		snprintf(p->error, sizeof p->error, "%s", err.msg);
		p->st.failed = true;
	}
	pol_destroy(&pol);
}

void exp_simulate(const struct exp *e, struct exp_point *p,
		  const struct wl_workload *built,
		  const struct ex_observer *obs)
{
	gms_err err = {{0}};
	struct wl_workload *own =
		built ? NULL : exp_build_workload(e, p->wl, p->batch, &err);
	simulate(e, NULL, p, built ? built : own, err.msg, obs);
	wl_free(own);
}

/* ---- the pool ---------------------------------------------------------- */

struct pool {
	pthread_mutex_t mu;	/* guards next, done and the progress line */
	size_t next, n;		/* next task to hand out, how many */
	size_t done;		/* finished tasks (for progress) */
	size_t units_done, units; /* finer progress (search probes) */
	void (*fn)(void *ctx, size_t i, struct pool *p); /* one task */
	void *ctx;		/* its context */
	bool progress;		/* draw the progress line */
	struct timespec t0;	/* when the run began */
	const char *what;	/* label of the phase */
	const bool *only;	/* tasks to run (NULL: all) */
	const size_t *order;	/* the n tasks in the order they are handed
				   out (NULL: index order) */
	const struct exp_opts *claims; /* claim, claim_ctx, ran (work
				   stealing), or NULL; a task another
				   process claims is released by
				   task_skip */
};

static void task_skip(void *ctx, size_t i);

static double since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Caller holds mu. */
static void draw(struct pool *p)
{
	if (!p->progress)
		return;
	double el = since(&p->t0);
	double eta = p->done ? el * (double)(p->n - p->done) / (double)p->done
			     : 0;
	fprintf(stderr, "\r%s: %zu/%zu done, %.1f s elapsed", p->what,
		p->done, p->n, el);
	if (p->done && p->done < p->n)
		fprintf(stderr, ", ~%.0f s left", eta);
	if (p->units)
		fprintf(stderr, " (%zu runs)", p->units_done);
	fputs("\033[K", stderr); /* clear the rest of the line */
	fflush(stderr);
}

static void unit_done(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	p->units_done++;
	draw(p);
	pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		size_t i = p->next < p->n ? p->next++ : p->n;
		pthread_mutex_unlock(&p->mu);
		if (i == p->n)
			return NULL;
		if (p->order)
			i = p->order[i];
		if (p->only && !p->only[i]) {
			/* not this run's */
		} else if (p->claims &&
			   !p->claims->claim(p->claims->claim_ctx, i)) {
			task_skip(p->ctx, i);
		} else {
			if (p->claims)
				p->claims->ran[i] = true;
			p->fn(p->ctx, i, p);
		}
		pthread_mutex_lock(&p->mu);
		p->done++;
		draw(p);
		pthread_mutex_unlock(&p->mu);
	}
}

/* -j: the threads asked for, or (<= 0) the cores. */
static int jobs_of(int jobs)
{
	return jobs > 0 ? jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

/* Run fn over the n tasks (those `only` admits) on `jobs` threads, in
 * `order`; o: its claim (work stealing), or NULL. */
static int pool_run(size_t n, int jobs, bool progress, const char *what,
		    void (*fn)(void *, size_t, struct pool *), void *ctx,
		    const bool *only, const size_t *order,
		    const struct exp_opts *o, gms_err *err)
{
	struct pool p = {.n = n, .fn = fn, .ctx = ctx, .progress = progress,
			 .what = what, .units = !strcmp(what, "searches"),
			 .only = only, .order = order,
			 .claims = o && o->claim ? o : NULL};
	pthread_mutex_init(&p.mu, NULL);
	clock_gettime(CLOCK_MONOTONIC, &p.t0);
	if (jobs > (int)n)
		jobs = (int)n;
	if (jobs < 1)
		jobs = 1;
	pthread_t *th = calloc((size_t)jobs, sizeof *th);
	if (!th) {
		pthread_mutex_destroy(&p.mu);
		return gms_errf(err, "out of memory");
	}
	int started = 0;
	for (; started < jobs; started++)
		if (pthread_create(&th[started], NULL, worker, &p) != 0)
			break;
	if (started == 0)
		worker(&p); /* no threads to be had: run here */
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (progress)
		fputc('\n', stderr);
	free(th);
	pthread_mutex_destroy(&p.mu);
	return 0;
}

/* ---- tasks -------------------------------------------------------------- */

struct run_ctx {
	const struct exp *e;	/* the experiment */
	struct exp_result *r;	/* where results go */
	exp_tune_fn tune;	/* efficiency-optimal, scaling: the tuner
				   (NULL: not linked in) */
	struct wl_cache *cache;	/* the workloads, each built once */
	struct run_shared sh;	/* fitted models, shared by the runs */
};

/* Simulate p (its workload at p->batch from the cache). */
static void simulate_shared(const struct run_ctx *c, struct exp_point *p,
			    const struct ex_observer *obs)
{
	gms_err err = {{0}};
	const struct wl_workload *wl =
		cache_get(c->cache, c->e, p->wl, p->batch, &err);
	simulate(c->e, &c->sh, p, wl, err.msg, obs);
}

/* Task i, claimed by another process: its workload's use ends here. */
static void task_skip(void *ctx, size_t i)
{
	struct run_ctx *c = ctx;
	const struct exp_result *r = c->r;
	cache_done(c->cache, r->eff ? i : r->srch ? r->srch[i].wl : r->pt[i].wl);
}

/* `run` measurements keep each point's timeline for the memory plot. */
static void point_task(void *ctx, size_t i, struct pool *p)
{
	(void)p;
	struct run_ctx *c = ctx;
	struct exp_point *pt = &c->r->pt[i];
	if (pt->st.failed) {
		cache_done(c->cache, pt->wl);
		return; /* set up as failed (no baseline) */
	}
	/* `run` keeps each point's timeline for the memory plot (which
	 * needs no names), when there is a plot */
	if (c->e->kind == EXP_RUN && c->e->plot &&
	    (pt->tl = calloc(1, sizeof *pt->tl)))
		tr_init(pt->tl, NULL);
	simulate_shared(c, pt, pt->tl ? tr_observer(pt->tl) : NULL);
	cache_done(c->cache, pt->wl);
}

/*
 * What the baseline search knows without running (issue 37: every shard
 * that touches a workload repeats its search, 14 framework runs of 3
 * iterations for sweep1000's ResNet-50, so 16 shards ran it 10 times).
 *
 * Under the `caching` allocator the budget enters at two tests only
 * (mem_caching.c): `bytes <= budget` in alloc and `reserved + segment <=
 * budget` in alloc_block (a failed one is followed by
 * release_cached_blocks and one retry, a test of its own). A run
 * records the most any of its passed tests needed (mem_stats.same_lo)
 * and one less than the least any failed test needed (same_hi). At any
 * budget b' in [same_lo, same_hi] every test goes the same way, so, by
 * induction over the run's allocations, the allocator makes the same
 * decisions and the run is the same run. Nothing else in a framework
 * run reads the budget: the executor passes it only to the allocator, to
 * the observer and to messages (sim/ex.c, ex_run; the framework policy
 * has no plan and acts only on a failed allocation,
 * ex_fallback_or_fail), and the device capacity run_one enlarges serves
 * only ex_run's check that the budget fits it. So baseline_fits answers
 * a budget inside the interval of a run already made with that run's
 * outcome, and the search takes the same path to the same value. (A
 * clean fitting run -- no test failed -- answers every budget from its
 * peak reservation up.)
 */
#define BASE_KNOWN 64 /* intervals kept: the search makes at most 1 + 7 +
			 the bisection's 38 steps (1 MiB to 2^58 bytes) */
struct base_known {
	struct {
		uint64_t lo, hi; /* the budgets this run answers */
		bool ok;	 /* its outcome */
	} run[BASE_KNOWN];
	unsigned n;	     /* intervals kept */
	unsigned runs;	     /* runs made (for tests) */
	bool known;	     /* answer from them (tests: false) */
};

/* Does framework (graph mode) train workload wl within budget, with the
 * convolution algorithms it planned (no workspace fallback: a budget that
 * makes TensorFlow take slower algorithms is not what it needs)? */
static bool baseline_fits(const struct exp *e, const struct wl_workload *wl,
			  uint64_t budget, struct base_known *k)
{
	for (unsigned i = 0; k->known && i < k->n; i++)
		if (k->run[i].lo <= budget && budget <= k->run[i].hi)
			return k->run[i].ok; /* the same run (above) */
	struct pol pol;
	gms_err err;
	if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) < 0)
		return false;
	struct st_run st = {0};
	char error[256];
	run_one(e, wl, &pol, budget, 0, NULL, &st, error, sizeof error);
	k->runs++;
	bool ok = !st.failed && !st.oom.hit && st.fallbacks == 0;
	/* a run that ended before the allocator was made has no interval */
	if (!strcmp(st.allocator, "caching") && st.mem.same_hi &&
	    st.mem.budget == budget && k->n < BASE_KNOWN) {
		/* budget 0 means the profile's memory (run_one): another
		 * run, never answered */
		k->run[k->n].lo = st.mem.same_lo ? st.mem.same_lo : 1;
		k->run[k->n].hi = st.mem.same_hi;
		k->run[k->n++].ok = ok;
	}
	st_run_free(&st);
	pol_destroy(&pol);
	return ok;
}

/* The baseline of budget fractions: the least device memory `framework`
 * (graph mode) needs with the experiment's allocator, to 1 MiB. Search:
 * from the peak of live tensor bytes (arena: no allocator overhead, a
 * lower bound) double until it fits, then bisect. Fragmentation can make
 * feasibility non-monotonic; the answer is the smallest budget the
 * bisection found to fit. */
uint64_t exp_baseline_of(const struct exp *e, const struct wl_workload *wl,
			 bool known, unsigned *runs)
{
	gms_err err = {{0}};
	struct pol pol;
	uint64_t live = 0;
	if (pol_create(&pol, "framework", NULL, NULL, NULL, 0, &err) == 0) {
		struct hw_profile hw = e->hw;
		hw.capacity = (uint64_t)1 << 50; /* 1 PiB: no limit */
		hw.reserved = 0;
		struct ex_cfg cfg = {.hw = &hw, .wl = wl, .pol = &pol,
				     .allocator = "arena",
				     .iterations = 1, .warmup = 0};
		struct st_run st;
		if (ex_run(&cfg, &st, &err) == 0 && !st.oom.hit)
			live = st.mem.peak_allocated;
		st_run_free(&st);
		pol_destroy(&pol);
	}
	const uint64_t mib = GMS_MIB;
	struct base_known k = {.known = known};
	uint64_t lo = live, hi = live;
	if (live && !baseline_fits(e, wl, live, &k)) {
		hi = (live / mib + 1) * mib;
		bool ok = baseline_fits(e, wl, hi, &k);
		for (int i = 0; i < 6 && !ok; i++) {
			lo = hi;
			hi *= 2;
			ok = baseline_fits(e, wl, hi, &k);
		}
		if (!ok)
			hi = 0; /* not even 64x the live bytes: give up */
		while (hi && hi - lo > mib) {
			uint64_t mid = (lo + (hi - lo) / 2) / mib * mib;
			if (mid <= lo)
				break;
			if (baseline_fits(e, wl, mid, &k))
				hi = mid;
			else
				lo = mid;
		}
	}
	if (runs)
		*runs = k.runs;
	return live ? hi : 0;
}

static void baseline_task(void *ctx, size_t i, struct pool *p)
{
	(void)p;
	struct run_ctx *c = ctx;
	const struct exp *e = c->e;
	gms_err err = {{0}};
	c->r->baseline[i] = 0;
	const struct wl_workload *wl = cache_get(c->cache, e, i, 0, &err);
	if (wl)
		c->r->baseline[i] = exp_baseline_of(e, wl, true, NULL);
	cache_done(c->cache, i);
}

/* A new, zeroed probe of search s (its workload and policy), or NULL when
 * out of memory. */
static struct exp_point *new_probe(struct exp_search *s)
{
	struct exp_point *np = gms_grow(s->probe, &s->cap_probe, s->n_probe,
					sizeof *np, 16);
	if (!np)
		return NULL;
	s->probe = np;
	struct exp_point *pt = &s->probe[s->n_probe++];
	memset(pt, 0, sizeof *pt);
	pt->wl = s->wl;
	pt->pol = s->pol;
	return pt;
}

static struct exp_point *probe(struct exp_search *s,
			       const struct run_ctx *c, int64_t batch,
			       struct pool *p)
{
	for (size_t i = 0; i < s->n_probe; i++)
		if (s->probe[i].batch == batch)
			return &s->probe[i];
	struct exp_point *pt = new_probe(s);
	if (!pt)
		return NULL;
	pt->batch = batch;
	simulate_shared(c, pt, NULL);
	pt->batch = batch; /* as asked, even if the build failed */
	unit_done(p);
	return pt;
}

/* The max-batch search's run of a batch (mb_probe_fn): a probe of s. */
struct mb_ctx {
	const struct run_ctx *c; /* the experiment's run */
	struct exp_search *s;	 /* the search the probes go to */
	struct pool *p;		 /* for progress */
};

static int mb_probe(void *ctx, int64_t batch, struct mb_obs *o)
{
	struct mb_ctx *m = ctx;
	struct exp_point *pt = probe(m->s, m->c, batch, m->p);
	if (!pt)
		return -1;
	o->fits = fits(pt);
	o->peak = pt->st.mem.peak_requested;
	o->budget = pt->budget;
	return 0;
}

/* The largest batch of search s's (workload, policy): mb_search
 * (max_batch.c: the answer of the doubling-and-bisection search, from
 * fewer runs), then `confirm` batches above it. */
static void max_batch_search(const struct run_ctx *c, struct exp_search *s,
			     struct pool *p)
{
	const struct exp *e = c->e;
	struct mb_cfg cfg = {e->start, e->limit, e->confirm};
	struct mb_ctx m = {c, s, p};
	struct mb_result r;
	s->best = -1;
	if (mb_search(&cfg, mb_probe, &m, &r) < 0 || !r.best)
		return; /* out of memory, or nothing fits */
	for (size_t k = 0; k < s->n_probe; k++)
		if (s->probe[k].batch == r.best)
			s->best = (long)k;
	s->capped = r.capped;
	s->larger_fit = r.larger_fit;
}

static void max_batch_task(void *ctx, size_t i, struct pool *p)
{
	struct run_ctx *c = ctx;
	max_batch_search(c, &c->r->srch[i], p);
	cache_done(c->cache, c->r->srch[i].wl);
}

/* efficiency-optimal and scaling, one workload: the first policy's
 * largest batch, the tuner from the workload's batch (or, when it gives
 * none, from that largest batch), then the second policy at k*. */
static void eff_one(struct run_ctx *c, size_t i, struct pool *p)
{
	const struct exp *e = c->e;
	struct exp_eff *f = &c->r->eff[i];
	gms_err err = {{0}};
	f->base.wl = i;
	f->base.pol = 0;
	max_batch_search(c, &f->base, p);
	const struct exp_point *b =
		f->base.best >= 0 ? &f->base.probe[f->base.best] : NULL;
	f->k_base = e->wl[i].batch ? e->wl[i].batch : b ? b->batch : 0;
	if (!f->k_base) {
		snprintf(f->error, sizeof f->error,
			 "no base batch: the workload gives none and '%s' "
			 "trains none",
			 e->pol[0].label);
		return;
	}
	const struct wl_workload *wl =
		cache_get(c->cache, e, i, f->k_base, &err);
	if (!wl) {
		snprintf(f->error, sizeof f->error, "%s", err.msg);
		return;
	}
	for (uint32_t t = 0; t < wl->n_tensors; t++)
		if (wl->tensors[t].kind == WL_PARAM)
			f->param_bytes += wl->tensors[t].bytes;
	struct accudnn_tune_in in = {.gen = e->wl[i].gen, .args = e->wl[i].args,
				     .hw = &e->hw, .budget = e->budget,
				     .fits = c->sh.fits,
				     .lr_base = e->lr_base,
				     .lr_batch = e->lr_batch, .c = e->lr_c};
	in.args.batch = f->k_base;
	/* the tuner's builds (its profiling passes, its check at k_base)
	 * follow this one as their template (wl_reserve: a hint, no output
	 * depends on it); each built from empty before, 3.5 M instructions
	 * against a cached build's 2.3 M in accudnn-batch (issue 37) */
	in.args.reserve = wl_reserve_like(wl);
	if (c->tune(&in, &f->tune, &err) < 0) {
		snprintf(f->error, sizeof f->error, "tuner: %.1000s", err.msg);
		return;
	}
	f->tuned = true;
	f->run.wl = i;
	f->run.pol = 1;
	f->run.batch = f->tune.k_star;
	f->run.plan = f->tune.plan;
	simulate_shared(c, &f->run, NULL);
	f->run.batch = f->tune.k_star;
	/* what the runtime reported of the strategy it deployed */
	const char *rep = f->run.st.pol_report;
	const char *a = rep ? strstr(rep, "\nviolations_left ") : NULL;
	const char *q = rep ? strstr(rep, "\npinned ") : NULL;
	if (f->run.plan && rep && strstr(rep, "strategy tuner\n") && a && q) {
		f->assessed = true;
		f->run_violations = (uint32_t)strtoul(a + 17, NULL, 10);
		f->run_pinned = (uint32_t)strtoul(q + 8, NULL, 10);
	}
	unit_done(p);
}

static double thr(struct exp_search *s, const struct run_ctx *c, int64_t b,
		  struct pool *p)
{
	struct exp_point *pt = probe(s, c, b, p);
	return pt && fits(pt) ? pt->st.samples_per_s : 0.0;
}

/* Grid over [lo, hi], then integer ternary search between the best grid
 * point's neighbours. Ties go to the smaller batch. */
static void best_one(struct run_ctx *c, size_t i, struct pool *p)
{
	const struct exp *e = c->e;
	struct exp_search *s = &c->r->srch[i];
	int64_t grid[64 + 2] = {0};
	size_t n = 0;
	if (e->step) {
		for (int64_t b = e->lo; b <= e->hi && n < 64; b += e->step)
			grid[n++] = b;
	} else {
		grid[n++] = e->lo;
		for (int64_t b = 1; b <= e->hi && n < 64; b *= 2)
			if (b > e->lo)
				grid[n++] = b;
	}
	if (grid[n - 1] != e->hi)
		grid[n++] = e->hi;
	size_t bi = 0;
	double bt = -1;
	for (size_t k = 0; k < n; k++) {
		double t = thr(s, c, grid[k], p);
		if (t > bt) {
			bt = t;
			bi = k;
		}
	}
	int64_t a = bi ? grid[bi - 1] : grid[0];
	int64_t b = bi + 1 < n ? grid[bi + 1] : grid[n - 1];
	while (b - a > 2) {
		int64_t m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
		double t1 = thr(s, c, m1, p); /* in this order: probes are */
		double t2 = thr(s, c, m2, p); /* listed as they ran */
		if (t1 >= t2)
			b = m2;
		else
			a = m1;
	}
	for (int64_t x = a; x <= b; x++)
		thr(s, c, x, p); /* the last few, exhaustively */
	int64_t best = 0;
	bt = -1;
	for (size_t k = 0; k < s->n_probe; k++) {
		const struct exp_point *pt = &s->probe[k];
		double t = fits(pt) ? pt->st.samples_per_s : 0.0;
		if (t > bt || (t == bt && pt->batch < best)) {
			bt = t;
			best = pt->batch;
			s->best = (long)k;
		}
	}
	if (bt <= 0)
		s->best = -1;
}

/* An attempt of the pool search (mem_attempt_fn): a probe with budget =
 * pool_size = pool. With pool-bestfit or highend that is one pool that can
 * never grow; an OOM gives the request and the largest free block. */
struct mp_ctx {
	const struct exp *e;		/* the experiment */
	struct exp_search *s;		/* the search the probes go to */
	const struct wl_workload *wl;	/* its workload, built once */
	struct pool *p;			/* for progress */
};

static int mp_attempt(void *ctx, uint64_t pool, uint64_t *fail_bytes,
		      uint64_t *largest_free, gms_err *err)
{
	struct mp_ctx *c = ctx;
	struct exp_point *pt = new_probe(c->s);
	if (!pt)
		return gms_errf(err, "out of memory");
	pt->budget = pt->pool_size = pool;
	exp_simulate(c->e, pt, c->wl, NULL);
	unit_done(c->p);
	if (fits(pt) && pt->st.fallbacks == 0)
		return 1;
	if (fits(pt)) {
		/* a convolution ran a cheaper algorithm than planned because
		 * its workspace did not fit: this pool does not serve the
		 * sequence the policy meant to run (issue 12) */
		*fail_bytes = pt->st.fallback_bytes;
		*largest_free = pt->st.fallback_largest_free;
		return 0;
	}
	if (pt->ran && !pt->st.failed) {
		*fail_bytes = pt->st.oom.bytes;
		*largest_free = pt->st.oom.largest_free;
		return 0;
	}
	return gms_errf(err, "%s", pt->error[0] ? pt->error : pt->st.error);
}

/* measure.shrink: bisect between one granule and the pool that served for
 * the smallest that still serves (to the granule). Feasibility need not
 * be monotonic; the answer is the smallest pool found to serve. */
static void shrink_pool(struct mp_ctx *m, gms_err *err)
{
	struct exp_search *s = m->s;
	uint64_t lo = 0, hi = s->mp.pool;
	while (hi - lo > MEM_SEARCH_GRANULE) {
		uint64_t mid = (lo + (hi - lo) / 2) / MEM_SEARCH_GRANULE *
			       MEM_SEARCH_GRANULE;
		if (mid <= lo)
			break;
		uint64_t fb, lf;
		int r = mp_attempt(m, mid, &fb, &lf, err);
		if (r < 0) {
			snprintf(s->error, sizeof s->error, "%s", err->msg);
			return;
		}
		s->mp.attempts++;
		if (r) {
			hi = mid;
			s->mp.pool = mid;
			s->best = (long)s->n_probe - 1;
		} else {
			lo = mid;
		}
	}
}

/* vDNN++ IV-B: the aggregate peak from a run with the experiment's budget
 * and the whole of it as the pool, then mem_min_pool from that peak. */
static void min_pool_one(struct run_ctx *c, size_t i, struct pool *p)
{
	const struct exp *e = c->e;
	struct exp_search *s = &c->r->srch[i];
	gms_err err = {{0}};
	s->best = -1;
	const struct wl_workload *wl = cache_get(c->cache, e, s->wl, 0, &err);
	struct exp_point *pk = new_probe(s);
	if (!pk)
		return;
	simulate(e, &c->sh, pk, wl, err.msg, NULL); /* fails if wl is NULL */
	unit_done(p);
	if (!fits(pk) || !wl)
		return; /* the peak run's status says why */
	s->peak = pk->st.mem.peak_allocated;
	s->limit = e->pool_limit ? e->pool_limit : pk->budget;
	struct mp_ctx m = {e, s, wl, p};
	if (mem_min_pool(s->peak, s->limit, MEM_SEARCH_GRANULE, mp_attempt,
			 &m, &s->mp, &err) < 0)
		snprintf(s->error, sizeof s->error, "%s", err.msg);
	else if (!s->mp.over_limit)
		s->best = (long)s->n_probe - 1; /* the attempt that served */
	if (s->best >= 0 && e->pool_shrink)
		shrink_pool(&m, &err);
}

/* The tasks of the searches: each, when done, lets go of its workload's
 * builds (the last task of a workload frees them). */
static void eff_task(void *ctx, size_t i, struct pool *p)
{
	struct run_ctx *c = ctx;
	eff_one(c, i, p);
	cache_done(c->cache, i);
}

static void best_task(void *ctx, size_t i, struct pool *p)
{
	struct run_ctx *c = ctx;
	best_one(c, i, p);
	cache_done(c->cache, c->r->srch[i].wl);
}

static void min_pool_task(void *ctx, size_t i, struct pool *p)
{
	struct run_ctx *c = ctx;
	min_pool_one(c, i, p);
	cache_done(c->cache, c->r->srch[i].wl);
}

/* The order to start n tasks in, per_wl consecutive tasks a workload:
 * the workloads with the most ops first (ties: file order), each
 * workload's tasks in index order. A task's cost grows with its
 * workload's ops (every probe simulates each op per iteration), and the
 * pool hands tasks out in this order, so the largest start first and the
 * small ones fill in at the end: greedy longest-processing-time (Graham,
 * SIAM J. Appl. Math. 1969, as shard.c's plan). In file order, max-batch's
 * last search (bert_base under ondemand) ran alone on one of two cores
 * for a fifth of the run (issue 18). Each task writes its own slot, so
 * the order changes no result. A plan file's shard takes the plan's
 * order as given (o->order, shard.c's shd_order). NULL when out of
 * memory (index order). */
static size_t *task_order(const struct exp *e, const struct exp_opts *o,
			  size_t n, size_t per_wl)
{
	size_t *ord = malloc((n ? n : 1) * sizeof *ord);
	if (ord && o && o->order) { /* a plan file's shard (shd_order) */
		memcpy(ord, o->order, n * sizeof *ord);
		return ord;
	}
	if (!ord || !per_wl)
		return ord;
	for (size_t i = 0; i < n; i++) { /* insertion sort: stable */
		uint32_t ops = e->wl[i / per_wl].ops;
		size_t k = i;
		for (; k > 0 && e->wl[ord[k - 1] / per_wl].ops < ops; k--)
			ord[k] = ord[k - 1];
		ord[k] = i;
	}
	return ord;
}

/* The kinds of task (exp.h). */
bool exp_is_search(const struct exp *e)
{
	return e->kind == EXP_MAX_BATCH || e->kind == EXP_BEST ||
	       e->kind == EXP_MIN_POOL;
}

bool exp_is_eff(const struct exp *e)
{
	return e->kind == EXP_EFF || e->kind == EXP_SCALING;
}

/* r's points, nv values per (workload, policy), their budgets from
 * r->baseline (budget fractions); one without a baseline or whose
 * fraction is 0 bytes is set up failed, with the reason. */
static int points_init(const struct exp *e, struct exp_result *r, size_t nv,
		       gms_err *err)
{
	size_t n = e->n_wl * nv * e->n_pol;
	/* n_pt set only with pt: exp_result_free walks n_pt points (the
	 * plan step frees its result on every path) */
	if (!(r->pt = calloc(n, sizeof *r->pt)))
		return gms_errf(err, "out of memory");
	r->n_pt = n;
	/* summary order: workload, then the swept value, then policy */
	for (size_t i = 0; i < r->n_pt; i++) {
		struct exp_point *p = &r->pt[i];
		size_t w = i / (nv * e->n_pol), v = i / e->n_pol % nv;
		p->wl = w;
		p->pol = i % e->n_pol;
		p->batch = e->axis == EXP_AXIS_BATCH ? e->batches[v]
						     : e->wl[w].batch;
		if (e->axis == EXP_AXIS_BUDGET)
			p->budget = e->budgets[v];
		if (e->axis == EXP_AXIS_FRACTION) {
			p->fraction = e->fractions[v];
			p->budget = (uint64_t)((double)r->baseline[w] *
					       e->fractions[v]);
			if (!r->baseline[w]) {
				snprintf(p->error, sizeof p->error,
					 "no baseline: the workload did not "
					 "run under framework");
				p->st.failed = true;
				continue;
			}
			if (!p->budget) {
				snprintf(p->error, sizeof p->error,
					 "budget fraction %g of %llu bytes is "
					 "0 bytes",
					 p->fraction,
					 (unsigned long long)r->baseline[w]);
				p->st.failed = true;
				continue;
			}
		}
	}
	return 0;
}

static int run_measure(const struct exp *e, const struct exp_opts *o,
		       struct exp_result *r, struct wl_cache *cache,
		       const struct run_shared *sh, gms_err *err)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int jobs = jobs_of(o ? o->jobs : 0);
	bool progress = !(o && o->quiet) && isatty(2);
	struct run_ctx c = {e, r, o && o->tune ? o->tune : accudnn_tune,
			    cache, *sh};
	const bool *only = o ? o->only : NULL,
		   *held = o && o->claim ? o->ran : only; /* run here */
	int rc = 0;
	if (exp_is_eff(e)) {
		r->n_eff = e->n_wl;
		r->eff = calloc(r->n_eff, sizeof *r->eff);
		if (!r->eff)
			return gms_errf(err, "out of memory");
		for (size_t i = 0; i < e->n_wl; i++)
			cache->users[i] = 1;
		cache_unused(cache, only, 1, e->n_wl);
		size_t *ord = task_order(e, o, r->n_eff, 1);
		rc = pool_run(r->n_eff, jobs, progress, "searches", eff_task,
			      &c, only, ord, o, err);
		free(ord);
		r->n_failed = exp_count_failed(r, held);
		r->wall_s = since(&t0);
		return rc;
	}
	if (exp_is_search(e)) {
		r->n_srch = e->n_wl * e->n_pol;
		r->srch = calloc(r->n_srch, sizeof *r->srch);
		if (!r->srch)
			return gms_errf(err, "out of memory");
		for (size_t i = 0; i < r->n_srch; i++) {
			r->srch[i].wl = i / e->n_pol;
			r->srch[i].pol = i % e->n_pol;
			r->srch[i].best = -1;
			cache->users[r->srch[i].wl]++;
		}
		cache_unused(cache, only, e->n_pol, e->n_wl);
		size_t *ord = task_order(e, o, r->n_srch, e->n_pol);
		rc = pool_run(r->n_srch, jobs, progress, "searches",
			      e->kind == EXP_BEST	   ? best_task
			      : e->kind == EXP_MIN_POOL ? min_pool_task
							: max_batch_task,
			      &c, only, ord, o, err);
		free(ord);
		r->n_failed = exp_count_failed(r, held);
		r->wall_s = since(&t0);
		return rc;
	}
	size_t nv = e->kind == EXP_SWEEP ? e->n_values : 1;
	const uint64_t *given = o ? o->baselines : NULL;
	bool search = e->axis == EXP_AXIS_FRACTION && !given;
	for (size_t i = 0; i < e->n_wl; i++) /* points, and the baseline */
		cache->users[i] = nv * e->n_pol + search;
	cache_unused(cache, only, nv * e->n_pol, e->n_wl);
	if (e->axis == EXP_AXIS_FRACTION) {
		r->baseline = calloc(e->n_wl, sizeof *r->baseline);
		if (!r->baseline)
			return gms_errf(err, "out of memory");
	}
	if (given && r->baseline) /* a plan file's (shard.h) */
		memcpy(r->baseline, given, e->n_wl * sizeof *r->baseline);
	if (search) {
		/* a shard without a plan file computes the baselines its
		 * points need */
		bool *need = NULL;
		if (only && !(need = calloc(e->n_wl, sizeof *need)))
			return gms_errf(err, "out of memory");
		for (size_t i = 0; need && i < e->n_wl * nv * e->n_pol; i++)
			need[i / (nv * e->n_pol)] |= only[i];
		rc = pool_run(e->n_wl, jobs, progress, "baselines",
			      baseline_task, &c, need, NULL, NULL, err);
		free(need);
		if (rc < 0)
			return -1;
	}
	if (points_init(e, r, nv, err) < 0)
		return -1;
	size_t *ord = task_order(e, o, r->n_pt, nv * e->n_pol);
	rc = pool_run(r->n_pt, jobs, progress, "runs", point_task, &c, only,
		      ord, o, err);
	free(ord);
	r->n_failed = exp_count_failed(r, held);
	r->wall_s = since(&t0);
	return rc;
}

size_t exp_count_failed(const struct exp_result *r, const bool *only)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_eff; i++) {
		const struct exp_eff *f = &r->eff[i];
		if (only && !only[i])
			continue;
		n += f->error[0] != '\0' ||
		     (f->tuned && !fits(&f->run) && !f->run.st.oom.hit);
		for (size_t k = 0; k < f->base.n_probe; k++)
			n += !f->base.probe[k].ran || f->base.probe[k].st.failed;
	}
	for (size_t i = 0; i < r->n_srch; i++) {
		if (only && !only[i])
			continue;
		n += r->srch[i].error[0] != '\0';
		for (size_t k = 0; k < r->srch[i].n_probe; k++)
			n += !r->srch[i].probe[k].ran ||
			     r->srch[i].probe[k].st.failed;
	}
	for (size_t i = 0; i < r->n_pt; i++)
		if (!only || only[i])
			n += !fits(&r->pt[i]) && !r->pt[i].st.oom.hit;
	return n;
}

int exp_run(const struct exp *e, const struct exp_opts *o,
	    struct exp_result *r, gms_err *err)
{
	memset(r, 0, sizeof *r);
	heap_tune(); /* sim/heap.h: the same every call */
	struct wl_cache cache;
	if (cache_init(&cache, e) < 0)
		return gms_errf(err, "out of memory");
	struct exp_models own = {0}, *m = o && o->models ? o->models : &own;
	if (m == &own && exp_models_new(&own) < 0) {
		cache_fini(&cache);
		return gms_errf(err, "out of memory");
	}
	struct run_shared sh = {.fits = m->fits, .traces = m->traces,
				.blocks = opt_memo_new()};
	int rc = sh.blocks ? run_measure(e, o, r, &cache, &sh, err)
			   : gms_errf(err, "out of memory");
	exp_models_free(&own);
	opt_memo_free(sh.blocks);
	cache_fini(&cache);
	return rc;
}

int exp_models_new(struct exp_models *m)
{
	m->fits = ac_fit_memo_new();
	m->traces = dtr_trace_memo_new();
	if (m->fits && m->traces)
		return 0;
	exp_models_free(m);
	return -1;
}

void exp_models_free(struct exp_models *m)
{
	ac_fit_memo_free(m->fits);
	dtr_trace_memo_free(m->traces);
	m->fits = NULL;
	m->traces = NULL;
}

/* Point i's models, fitted into the shared memos as simulate's run would
 * fit them (exp_plan_step): the budget as simulate sets it, then the
 * profiling pass accudnn's plan hook would make on run_one's cfg. */
static void model_task(void *ctx, size_t i, struct pool *pl)
{
	(void)pl;
	struct run_ctx *c = ctx;
	const struct exp *e = c->e;
	const struct exp_point *p = &c->r->pt[i];
	const struct exp_policy *ep = &e->pol[p->pol];
	gms_err err = {{0}};
	struct pol pol;
	if (p->st.failed ||
	    pol_create(&pol, ep->name, e->doc, ep->node, NULL, 0, &err) < 0) {
		cache_done(c->cache, p->wl);
		return;
	}
	uint64_t budget;
	(void)point_budget(e, c->sh.traces, p, &pol, &budget, &err);
	const struct wl_workload *wl =
		pol.ops == pol_find("accudnn")
			? cache_get(c->cache, e, p->wl, p->batch, &err)
			: NULL;
	if (wl) {
		struct hw_profile big;
		struct ex_cfg cfg;
		run_cfg(e, wl, &pol, budget, p->pool_size, NULL, &big, &cfg);
		(void)accudnn_prefit(&pol, &cfg, c->sh.fits, &err);
	}
	pol_destroy(&pol);
	cache_done(c->cache, p->wl);
}

int exp_plan_step(const struct exp *e, int jobs, uint64_t *base,
		  struct exp_models *m, gms_err *err)
{
	bool points = !exp_is_eff(e) && !exp_is_search(e);
	size_t nv = e->kind == EXP_SWEEP ? e->n_values : 1;
	heap_tune(); /* as exp_run */
	struct wl_cache cache;
	if (cache_init(&cache, e) < 0)
		return gms_errf(err, "out of memory");
	/* one cache for both phases: each workload built once (exp_load's
	 * build, which cache_init takes) */
	for (size_t i = 0; i < e->n_wl; i++)
		cache.users[i] = (base != NULL) + (points ? nv * e->n_pol : 0);
	struct exp_result r = {.baseline = base};
	struct run_ctx c = {.e = e, .r = &r, .cache = &cache,
			    .sh = {.fits = m->fits, .traces = m->traces}};
	int rc = 0;
	if (base)
		rc = pool_run(e->n_wl, jobs_of(jobs), false, "baselines",
			      baseline_task, &c, NULL, NULL, NULL, err);
	r.baseline = NULL;
	if (rc == 0 && points && e->axis == EXP_AXIS_FRACTION) {
		r.baseline = calloc(e->n_wl ? e->n_wl : 1, sizeof *r.baseline);
		if (!r.baseline)
			rc = gms_errf(err, "out of memory");
		else if (base)
			memcpy(r.baseline, base, e->n_wl * sizeof *r.baseline);
	}
	if (rc == 0 && points)
		rc = points_init(e, &r, nv, err);
	if (rc == 0 && points)
		rc = pool_run(r.n_pt, jobs_of(jobs), false, "models",
			      model_task, &c, NULL, NULL, NULL, err);
	exp_result_free(&r);
	cache_fini(&cache);
	return rc;
}

void exp_result_free(struct exp_result *r)
{
	for (size_t i = 0; i < r->n_pt; i++) {
		st_run_free(&r->pt[i].st);
		if (r->pt[i].tl) {
			tr_fini(r->pt[i].tl);
			free(r->pt[i].tl);
		}
	}
	for (size_t i = 0; i < r->n_srch; i++) {
		for (size_t k = 0; k < r->srch[i].n_probe; k++)
			st_run_free(&r->srch[i].probe[k].st);
		free(r->srch[i].probe);
	}
	for (size_t i = 0; i < r->n_eff; i++) {
		struct exp_eff *f = &r->eff[i];
		for (size_t k = 0; k < f->base.n_probe; k++)
			st_run_free(&f->base.probe[k].st);
		free(f->base.probe);
		st_run_free(&f->run.st);
		accudnn_plan_free(f->tune.plan);
	}
	free(r->eff);
	free(r->pt);
	free(r->srch);
	free(r->baseline);
	memset(r, 0, sizeof *r);
}

size_t exp_planned_rows(const struct exp *e)
{
	if (exp_is_eff(e))
		return e->n_wl; /* trace rows: the run at k* per workload */
	if (exp_is_search(e))
		return e->n_wl * e->n_pol;
	return e->n_wl * e->n_pol * (e->kind == EXP_SWEEP ? e->n_values : 1);
}

size_t exp_n_rows(const struct exp_result *r)
{
	return r->eff ? r->n_eff : r->srch ? r->n_srch : r->n_pt;
}

const struct exp_point *exp_row(const struct exp_result *r, size_t i)
{
	if (i >= exp_n_rows(r))
		return NULL;
	if (r->eff)
		return r->eff[i].tuned ? &r->eff[i].run : NULL;
	if (!r->srch)
		return &r->pt[i];
	const struct exp_search *s = &r->srch[i];
	return s->best >= 0 ? &s->probe[s->best] : NULL;
}
