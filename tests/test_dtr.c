/*
 * test_dtr.c - recorded DTR traces (wl_load_dtr) and the release points
 * they need (wl_tensor.release_after, honoured by the executor).
 *
 *   - release points on hand-built workloads: peaks worked out by hand on
 *     the `arena` allocator (plain sums), graph-mode in-place included,
 *     and wl_finalize's checks;
 *   - a hand-written log using every instruction
 *     (tests/fixtures/dtr/mini-4-all.log): ops, tensors, sizes, readers,
 *     aliases, release points, phases, workspace and peak by hand;
 *   - small logs written to temporary files: START, bare integers, reused
 *     names, and each malformed line located at path:line:col;
 *   - the three shipped logs (workloads/traces/dtr/): op count and total
 *     time against a plain text scan, the baseline peak against an
 *     independent pass over the log, ondemand below the peak, load time.
 *
 * Run from the repository root: fixtures and traces are found relative to
 * it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpkit.h"
#include "testkit.h"
#include "wlkit.h"

#define FIX "tests/fixtures/dtr/"
/* the DTR logs, in the trace directory (dtr_path_or_skip) */
static const char *const shipped[] = {DTR_RESNET32, DTR_TRANSFORMER,
				      DTR_UNET};
#define N_SHIPPED (sizeof shipped / sizeof *shipped)

/* ---- helpers ---------------------------------------------------------- */

static void assert_io(const struct wl_workload *w, const char *op,
		      const char *in, const char *out)
{
	const struct wl_op *o = &w->ops[op_id(w, op)];
	char got[256];
	names_of(w, o->in, o->n_in, got, sizeof got);
	if (strcmp(got, in) != 0)
		fail_msg("inputs of %s: got \"%s\", want \"%s\"", op, got, in);
	names_of(w, o->out, o->n_out, got, sizeof got);
	if (strcmp(got, out) != 0)
		fail_msg("outputs of %s: got \"%s\", want \"%s\"", op, got,
			 out);
}

/* Write text to a fresh temporary file; path gets its name. */
static void write_tmp(char path[static 32], const char *text)
{
	tmp_text(path, "gms_test_dtr", text);
}

/* Load a log given as text; NULL with err on failure. */
static struct wl_workload *load_text(const char *text, char path[static 32],
				     gms_err *err)
{
	write_tmp(path, text);
	struct wl_workload *w = wl_load_dtr(path, err);
	unlink(path);
	return w;
}

static struct hw_profile big_profile(void)
{
	struct hw_profile hw;
	hw_test_profile(&hw, 64 * GMS_GIB);
	hw.host_pinned = 64 * GMS_GIB; /* room to swap for ondemand */
	return hw;
}

/* Run w under policy `name` on the big test profile with the arena. */
static int run_policy(const struct wl_workload *w, const char *name,
		      const char *kv, uint64_t budget, int iters,
		      struct st_run *st)
{
	struct pol pol;
	gms_err err = {{0}};
	if (pol_create(&pol, name, NULL, NULL, &kv, kv ? 1 : 0, &err) < 0)
		fail_msg("%s", err.msg);
	struct hw_profile hw = big_profile();
	struct ex_cfg cfg = {.hw = &hw, .wl = w, .pol = &pol,
			     .allocator = "arena", .budget = budget,
			     .iterations = iters, .warmup = 0};
	int rc = ex_run(&cfg, st, &err);
	if (rc < 0)
		print_message("ex_run: %s\n", err.msg);
	pol_destroy(&pol);
	return rc;
}

#define OP(w, name, ph, time, in, n_in, out, n_out) \
	OPX(w, name, ph, time, in, n_in, out, n_out, NULL, 0)

/* ---- release points on hand-built workloads ---------------------------
 *
 * chain4: A -> a; B(a) -> b; C(b) -> c; D(c) -> d, all 10 ns, activations
 * of sizes sa, sb, sc, sd; a's release point is `rel` (WL_NONE: none).
 * Each op allocates its output at its start; a tensor is freed when its
 * last reader (or its release point, if later) completes.
 */
static struct wl_workload *chain4(uint64_t sa, uint64_t sb, uint64_t sc,
				  uint64_t sd, uint32_t rel)
{
	struct wl_workload *w = wl_new("chain4", 1);
	uint32_t a = T(w, "a", sa, WL_ACT), b = T(w, "b", sb, WL_ACT),
		 c = T(w, "c", sc, WL_ACT), d = T(w, "d", sd, WL_ACT);
	OP(w, "A", WL_FWD, 10, NULL, 0, &a, 1);
	OP(w, "B", WL_FWD, 10, &a, 1, &b, 1);
	OP(w, "C", WL_FWD, 10, &b, 1, &c, 1);
	OP(w, "D", WL_FWD, 10, &c, 1, &d, 1);
	gms_err err;
	if (wl_set_release_after(w, a, rel, &err) < 0)
		fail_msg("%s", err.msg);
	finalize(w);
	return w;
}

static uint64_t chain4_peak(uint64_t sa, uint64_t sb, uint64_t sc,
			    uint64_t sd, uint32_t rel)
{
	struct wl_workload *w = chain4(sa, sb, sc, sd, rel);
	struct st_run st;
	assert_int_equal(run_policy(w, "framework", NULL, 0, 2, &st), 0);
	assert_false(st.failed);
	assert_false(st.oom.hit);
	assert_int_equal(st.n_iter, 2);
	assert_int_equal(st.iter[1].time, 40);
	uint64_t peak = st.mem.peak_allocated;
	assert_int_equal(st.mem.allocated, 0); /* all freed each iteration */
	st_run_free(&st);
	wl_free(w);
	return peak;
}

/*
 * Sizes a 100, b 200, c 400, d 50:
 *   no release point:  A 100 | B 300, a freed -> 200 | C 600, b freed ->
 *                      400 | D 450 -> 0.              peak 600 (at C)
 *   a released after B (its last reader): the same, 600.
 *   a released after C: A 100 | B 300 (a kept) | C 700, a and b freed ->
 *                      400 | D 450.                   peak 700 (at C)
 *   a released after D: ... | C 700, b freed -> 500 | D 550. peak 700.
 * Sizes a 100, b 200, c 50, d 400 tell "after C" from "after D":
 *   no release point:  A 100 | B 300 -> 200 | C 250 -> 50 | D 450.  450
 *   a released after C: A 100 | B 300 | C 350 -> 50 | D 450.        450
 *   a released after D: A 100 | B 300 | C 350, b freed -> 150 |
 *                      D 550.                                       550
 */
static void test_release_point_peak(void **state)
{
	(void)state;
	assert_int_equal(chain4_peak(100, 200, 400, 50, WL_NONE), 600);
	assert_int_equal(chain4_peak(100, 200, 400, 50, 1), 600);
	assert_int_equal(chain4_peak(100, 200, 400, 50, 2), 700);
	assert_int_equal(chain4_peak(100, 200, 400, 50, 3), 700);
	assert_int_equal(chain4_peak(100, 200, 50, 400, WL_NONE), 450);
	assert_int_equal(chain4_peak(100, 200, 50, 400, 2), 450);
	assert_int_equal(chain4_peak(100, 200, 50, 400, 3), 550);
}

/*
 * An input with no reader, released after op B, and an in-place op.
 *   x input 30, released after B;  A -> a (100);  B(a) -> b (100),
 *   in place;  C(b) -> c (10).
 * Graph mode, no release point on a: iteration start 30 | A 130 | B
 *   takes over a's block: 130, x freed -> 100 | C 110.      peak 130
 * a released after C: B may not take over a block the trace still holds:
 *   A 130 | B 230, x freed -> 200 | C 210.                  peak 230
 */
static uint64_t inplace_peak(uint32_t rel_a)
{
	struct wl_workload *w = wl_new("inplace", 1);
	uint32_t x = T(w, "x", 30, WL_INPUT), a = T(w, "a", 100, WL_ACT),
		 b = T(w, "b", 100, WL_ACT), c = T(w, "c", 10, WL_ACT);
	gms_err err;
	OP(w, "A", WL_FWD, 10, NULL, 0, &a, 1);
	struct wl_op_desc d = {.name = "B", .type = OT_RELU, .phase = WL_FWD,
			       .in = &a, .n_in = 1, .out = &b, .n_out = 1,
			       .time = 10, .inplace = true};
	assert_int_not_equal(wl_add_op(w, &d, &err), WL_NONE);
	OP(w, "C", WL_FWD, 10, &b, 1, &c, 1);
	assert_int_equal(wl_set_release_after(w, x, 1, &err), 0);
	assert_int_equal(wl_set_release_after(w, a, rel_a, &err), 0);
	finalize(w);
	struct st_run st;
	assert_int_equal(run_policy(w, "framework", NULL, 0, 2, &st),
			 0);
	assert_false(st.failed);
	assert_int_equal(st.n_iter, 2);
	uint64_t peak = st.mem.peak_allocated;
	st_run_free(&st);
	wl_free(w);
	return peak;
}

static void test_release_point_input_and_inplace(void **state)
{
	(void)state;
	assert_int_equal(inplace_peak(WL_NONE), 130);
	assert_int_equal(inplace_peak(2), 230);
}

static void test_release_point_errors(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = wl_new("bad", 1);
	uint32_t p = T(w, "p", 8, WL_PARAM), a = T(w, "a", 8, WL_ACT),
		 b = T(w, "b", 8, WL_ACT);
	OP(w, "A", WL_FWD, 1, &p, 1, &a, 1);
	/* no op 1 yet */
	assert_int_equal(wl_set_release_after(w, a, 1, &err), -1);
	assert_has(err.msg, "not an op id");
	assert_int_equal(wl_set_release_after(w, 99, 0, &err), -1);
	assert_has(err.msg, "not a tensor id");
	assert_int_equal(wl_set_release_after(w, p, 0, &err), -1);
	assert_has(err.msg, "lives for the whole run");
	OP(w, "B", WL_FWD, 1, &a, 1, &b, 1);
	OP(w, "C", WL_FWD, 1, &a, 1, NULL, 0);
	/* released after B, but C reads a later */
	assert_int_equal(wl_set_release_after(w, a, 1, &err), 0);
	assert_int_equal(wl_finalize(w, &err), -1);
	assert_has(err.msg, "tensor 'a' is released after op 'B' but read "
			    "later by op 'C'");
	wl_free(w);

	w = wl_new("bad2", 1);
	a = T(w, "a", 8, WL_ACT);
	b = T(w, "b", 8, WL_ACT);
	OP(w, "A", WL_FWD, 1, NULL, 0, &a, 1);
	OP(w, "B", WL_FWD, 1, &a, 1, &b, 1);
	assert_int_equal(wl_set_release_after(w, b, 0, &err), 0);
	assert_int_equal(wl_finalize(w, &err), -1);
	assert_has(err.msg, "before its producer 'B'");
	/* clearing it makes the workload valid */
	assert_int_equal(wl_set_release_after(w, b, WL_NONE, &err), 0);
	assert_int_equal(wl_finalize(w, &err), 0);
	assert_int_equal(wl_set_release_after(w, b, 1, &err), -1);
	assert_has(err.msg, "after wl_finalize");
	wl_free(w);
}

/* ---- an independent reading of a log -----------------------------------
 * A plain scan, sharing nothing with the loader: per line, the value of a
 * key is found with strstr; handles map to storages through a small hash
 * table. Counts CALL + MUTATE lines, sums TIME, and follows the live
 * storage bytes (constants included; a storage is freed when its last
 * handle, aliases included, is released) to their peak. */

struct scan_h {
	char name[48];	/* handle name, "" = empty slot */
	uint32_t sto;	/* storage */
	bool alive;	/* not released */
};

struct scan {
	struct scan_h *h;  /* handle table */
	uint32_t cap;	   /* its slots (power of two) */
	uint64_t *size;	   /* per storage: bytes */
	uint32_t *refs;	   /* per storage: live handles */
	uint32_t n_sto;	   /* storages */
	uint32_t cap_sto;  /* their capacity */
	uint64_t live;	   /* bytes of live storages */
	uint64_t peak;	   /* max of live */
	uint64_t ops;	   /* CALL + MUTATE lines */
	uint64_t time;	   /* sum of TIME */
	uint64_t mem_last; /* last MEMORY value */
	char mem_name[48]; /* and its NAME */
	char args[8][48];  /* the last CALL's ARGS */
	bool const_wait;   /* a CONSTANT awaits its MEMORY */
};

/* The string value of "KEY":"value" in line, copied into out. */
static bool sval(const char *line, const char *key, char *out, size_t cap)
{
	char pat[32];
	snprintf(pat, sizeof pat, "\"%s\":\"", key);
	const char *p = strstr(line, pat);
	if (!p)
		return false;
	p += strlen(pat);
	const char *q = strchr(p, '"');
	assert_non_null(q);
	size_t n = (size_t)(q - p);
	assert_true(n < cap);
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

static struct scan_h *scan_slot(struct scan *s, const char *name)
{
	uint32_t h = 5381;
	for (const char *c = name; *c; c++)
		h = h * 33 + (unsigned char)*c;
	for (uint32_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1))
		if (!s->h[i].name[0] || strcmp(s->h[i].name, name) == 0)
			return &s->h[i];
}

static uint32_t scan_new_sto(struct scan *s, uint64_t bytes)
{
	if (s->n_sto == s->cap_sto) {
		s->cap_sto = s->cap_sto ? s->cap_sto * 2 : 1024;
		s->size = realloc(s->size, s->cap_sto * sizeof *s->size);
		s->refs = realloc(s->refs, s->cap_sto * sizeof *s->refs);
		assert_non_null(s->size);
		assert_non_null(s->refs);
	}
	s->size[s->n_sto] = bytes;
	s->refs[s->n_sto] = 0;
	s->live += bytes;
	return s->n_sto++;
}

static void scan_bind(struct scan *s, const char *name, uint32_t sto)
{
	struct scan_h *e = scan_slot(s, name);
	assert_true(!e->name[0] || !e->alive);
	snprintf(e->name, sizeof e->name, "%s", name);
	e->sto = sto;
	e->alive = true;
	s->refs[sto]++;
}

static uint32_t scan_get(struct scan *s, const char *name)
{
	struct scan_h *e = scan_slot(s, name);
	if (!e->name[0] || !e->alive)
		fail_msg("scan: unknown handle %s", name);
	return e->sto;
}

static void scan_unref(struct scan *s, uint32_t sto)
{
	assert_true(s->refs[sto] > 0);
	if (--s->refs[sto] == 0)
		s->live -= s->size[sto];
}

static void scan_line(struct scan *s, const char *line)
{
	char ins[16], a[48], b[48];
	assert_true(sval(line, "INSTRUCTION", ins, sizeof ins));
	if (strcmp(ins, "CALL") == 0 || strcmp(ins, "MUTATE") == 0) {
		s->ops++;
		assert_true(sval(line, "TIME", a, sizeof a));
		s->time += strtoull(a, NULL, 10);
		/* keep ARGS for a following ALIAS k */
		const char *p = strstr(line, "\"ARGS\":[");
		assert_non_null(p);
		p += 8;
		for (int i = 0; *p == '"'; i++) {
			assert_true(i < 8);
			const char *q = strchr(p + 1, '"');
			snprintf(s->args[i], sizeof s->args[i], "%.*s",
				 (int)(q - p - 1), p + 1);
			p = q + 1;
			if (*p == ',')
				p++;
		}
	} else if (strcmp(ins, "CONSTANT") == 0) {
		assert_true(sval(line, "NAME", a, sizeof a));
		scan_bind(s, a, scan_new_sto(s, 0));
		s->const_wait = true;
	} else if (strcmp(ins, "MEMORY") == 0) {
		assert_true(sval(line, "NAME", s->mem_name, sizeof s->mem_name));
		assert_true(sval(line, "MEMORY", a, sizeof a));
		s->mem_last = strtoull(a, NULL, 10);
		if (s->const_wait) { /* the CONSTANT just defined */
			uint32_t sto = scan_get(s, s->mem_name);
			s->size[sto] = s->mem_last;
			s->live += s->mem_last;
			s->const_wait = false;
		}
	} else if (strcmp(ins, "ALIAS") == 0) {
		assert_true(sval(line, "NAME", a, sizeof a));
		assert_true(sval(line, "ALIAS", b, sizeof b));
		assert_string_equal(a, s->mem_name);
		long k = strtol(b, NULL, 10);
		uint32_t sto = k < 0 ? scan_new_sto(s, s->mem_last)
				     : scan_get(s, s->args[k]);
		scan_bind(s, a, sto);
	} else if (strcmp(ins, "COPY") == 0) {
		assert_true(sval(line, "DST", a, sizeof a));
		assert_true(sval(line, "SRC", b, sizeof b));
		scan_bind(s, a, scan_get(s, b));
	} else if (strcmp(ins, "COPY_FROM") == 0) {
		assert_true(sval(line, "DST", a, sizeof a));
		assert_true(sval(line, "SRC", b, sizeof b));
		uint32_t old = scan_get(s, a), sto = scan_get(s, b);
		struct scan_h *e = scan_slot(s, a);
		e->sto = sto;
		s->refs[sto]++;
		scan_unref(s, old);
	} else if (strcmp(ins, "RELEASE") == 0) {
		assert_true(sval(line, "NAME", a, sizeof a));
		uint32_t sto = scan_get(s, a);
		scan_slot(s, a)->alive = false;
		scan_unref(s, sto);
	}
	if (s->live > s->peak)
		s->peak = s->live;
}

static void scan_file(const char *path, struct scan *s)
{
	memset(s, 0, sizeof *s);
	s->cap = 1 << 16;
	s->h = calloc(s->cap, sizeof *s->h);
	assert_non_null(s->h);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		assert_non_null(strchr(line, '\n'));
		scan_line(s, line);
	}
	fclose(f);
	free(s->h);
	free(s->size);
	free(s->refs);
	s->h = NULL;
	s->size = NULL;
	s->refs = NULL;
}

/* ---- the hand-written log using every instruction ----------------------
 * tests/fixtures/dtr/mini-4-all.log, line by line:
 *   2-3   CONSTANT w 4096 (never released: parameter)
 *   4-5   CONSTANT x 1000 (released on line 40, after op 5: input)
 *   6-8   CONSTANT tmp 64, released before any op: left out
 *   9-10  COPY w1 <- w; RELEASE w: w1 keeps w's storage
 *   11-13 op 0 cudnn_convolution(x, w1) -> y 2000, fresh   (conv, 500)
 *   14-16 op 1 view(y) -> v, ALIAS 0: v is y's storage     (other, 5)
 *   17    RELEASE y: v still holds the storage
 *   18    op 2 MUTATE relu_(v): reads y, writes nothing new (relu, 40)
 *   19-20 CONSTANT s 8 after op 2, released (line 24) after op 3: alive
 *         across op 3 only -> 8 bytes of op 3's workspace
 *   21-23 op 3 mul(v, s) -> m 2000                       (elemwise, 30)
 *   25-27 COPY h <- m; COPY_FROM h <- v (h moves to y's storage, m keeps
 *         one handle); RELEASE v: y is held by h alone
 *   28    ANNOTATE BACKWARD
 *   29-35 op 4 cudnn_convolution_backward(m, x, w1) -> gx 1000, gw 4096,
 *         gb 0 bytes (left out)                       (conv_bwd_data, 900)
 *   36-37 RELEASE m, RELEASE h: m and y are released after op 4 (y's last
 *         reader was op 3: its release point is later)
 *   38    op 5 MUTATE add_(w1, gw), writing w1 only, after backward:
 *         update                                        (update, 20)
 *   39-41 RELEASE gx, x (after op 5), gb; gw is never released: a
 *         parameter gradient, held to the last op.
 * Peak (arena, framework): w 4096 at setup; x 1000 at the iteration's
 * start: 5096 | op 0 +y 7096 | op 1, op 2 7096 | op 3 +m +8 workspace
 * 9104, workspace freed -> 9096 | op 4 +gx +gw 14192, y and m freed ->
 * 10192 | op 5 10192, x gx gw freed -> 4096. Peak 14192 at op 4; the
 * trace itself peaks there too (tmp adds 64 at 5096 + 64 only).
 */
static void test_fixture_all(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *w = wl_load_dtr(FIX "mini-4-all.log", &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_string_equal(w->name, "mini");
	assert_int_equal(w->batch, 4);
	assert_int_equal(w->n_ops, 6);
	assert_int_equal(w->n_tensors, 6);

	static const struct {
		const char *name;
		enum wl_op_type type;
		enum wl_phase phase;
		sim_time_t time;
		uint64_t ws;
		bool recomputable;
	} ops[] = {
		/* y is modified in place later: re-running op 0 would not
		 * give it back */
		{"cudnn_convolution/0", OT_CONV, WL_FWD, 500, 0, false},
		{"view/1", OT_OTHER, WL_FWD, 5, 0, true},
		{"relu_/2", OT_RELU, WL_FWD, 40, 0, false},
		{"mul/3", OT_ELEMWISE, WL_FWD, 30, 8, true},
		{"cudnn_convolution_backward/4", OT_CONV_BWD_DATA, WL_BWD, 900,
		 0, false},
		{"add_/5", OT_UPDATE, WL_UPD, 20, 0, false},
	};
	for (uint32_t o = 0; o < 6; o++) {
		const struct wl_op *op = &w->ops[o];
		assert_string_equal(op->name, ops[o].name);
		assert_int_equal(op->type, ops[o].type);
		assert_int_equal(op->phase, ops[o].phase);
		assert_int_equal(op->time, ops[o].time);
		assert_int_equal(op->workspace, ops[o].ws);
		assert_int_equal(op->recomputable, ops[o].recomputable);
		assert_false(op->inplace);
	}

	static const struct {
		const char *name;
		uint64_t bytes;
		enum wl_kind kind;
		uint32_t release_after;
	} ts[] = {
		{"w", 4096, WL_PARAM, WL_NONE},
		{"x", 1000, WL_INPUT, 5},
		{"y", 2000, WL_ACT, 4},
		{"m", 2000, WL_ACT, 4},
		{"gx", 1000, WL_ACT_GRAD, 5},
		{"gw", 4096, WL_PARAM_GRAD, 5},
	};
	for (uint32_t i = 0; i < 6; i++) {
		const struct wl_tensor *t = &w->tensors[tensor_id(w, ts[i].name)];
		assert_int_equal(t->bytes, ts[i].bytes);
		assert_int_equal(t->kind, ts[i].kind);
		assert_int_equal(t->release_after, ts[i].release_after);
	}
	assert_int_equal(wl_tensor_id(w, "tmp"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "s"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "gb"), WL_NONE);
	assert_int_equal(wl_tensor_id(w, "v"), WL_NONE); /* a view */

	assert_io(w, "cudnn_convolution/0", "x w", "y");
	assert_io(w, "view/1", "y", "");
	assert_io(w, "relu_/2", "y", "");
	assert_io(w, "mul/3", "y", "m");
	assert_io(w, "cudnn_convolution_backward/4", "m x w", "gx gw");
	assert_io(w, "add_/5", "w gw", "");
	/* y: produced by op 0, read up to op 3, released after op 4 */
	const struct wl_tensor *y = &w->tensors[tensor_id(w, "y")];
	assert_int_equal(y->producer, 0);
	assert_int_equal(y->n_readers, 3);
	assert_int_equal(y->readers[2], 3);

	struct scan s;
	scan_file(FIX "mini-4-all.log", &s);
	assert_int_equal(s.peak, 14192);
	assert_int_equal(s.ops, 6);
	assert_int_equal(s.time, 1495);

	struct st_run st;
	for (int m = 0; m < 1; m++) {
		assert_int_equal(run_policy(w, "framework", NULL, 0, 2, &st),
				 0);
		assert_false(st.failed);
		assert_false(st.oom.hit);
		assert_int_equal(st.n_iter, 2);
		assert_int_equal(st.mem.peak_allocated, 14192);
		assert_int_equal(st.iter[0].time, 1495);
		assert_int_equal(st.mem.allocated, 4096); /* w stays */
		st_run_free(&st);
	}
	wl_free(w);
}

/* ---- small logs ----------------------------------------------------------- */

/*
 * Warm-up before START is discarded; numbers may be bare integers; a
 * CALL result's ALIAS may come before its MEMORY; a released handle name
 * may be defined again (the second storage of that name gets a suffixed
 * tensor name); TIME 0 becomes 1 ns; a log without BACKWARD is all
 * forward; blank lines and spaces between tokens are fine.
 *   storages: w (param 16), a (32, op 0), b (4, op 1), a again (8, op 2)
 *   a is read by op 1 and released after it; b read by op 2, released
 *   after it; the second a is never released: held to the last op, 2.
 */
static void test_start_ints_reuse(void **state)
{
	(void)state;
	char path[32];
	gms_err err = {{0}};
	const char *log =
		"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"old\"}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"old\",\"MEMORY\":9}\n"
		"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[\"old\"],"
		"\"RESULT\":[],\"TIME\":3}\n"
		"{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
		"\n"
		"{ \"INSTRUCTION\" : \"CONSTANT\" , \"NAME\" : \"w\" }\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":16}\n"
		"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"addmm\",\"ARGS\":[\"w\"],"
		"\"RESULT\":[\"a\"],\"TIME\":7}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":32}\n"
		"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":-1}\n"
		"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"sum\",\"ARGS\":[\"a\"],"
		"\"RESULT\":[\"b\"],\"TIME\":\"0\"}\n"
		"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"4\"}\n"
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n"
		"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\",\"ARGS\":[\"b\"],"
		"\"RESULT\":[\"a\"],\"TIME\":2}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":8}\n"
		"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":-1}\n"
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}";
	struct wl_workload *w = load_text(log, path, &err);
	if (!w)
		fail_msg("%s", err.msg);
	assert_int_equal(w->batch, 1);
	assert_int_equal(w->n_ops, 3);
	assert_int_equal(wl_tensor_id(w, "old"), WL_NONE);
	assert_string_equal(w->ops[0].name, "addmm/0");
	assert_int_equal(w->ops[0].type, OT_MATMUL);
	assert_int_equal(w->ops[0].time, 7);
	assert_string_equal(w->ops[1].name, "sum/1");
	assert_int_equal(w->ops[1].type, OT_ELEMWISE);
	assert_int_equal(w->ops[1].time, 1); /* 0 would mean "model" */
	assert_int_equal(w->ops[2].type, OT_RELU);
	for (uint32_t o = 0; o < 3; o++)
		assert_int_equal(w->ops[o].phase, WL_FWD);
	assert_int_equal(w->n_tensors, 4);
	assert_int_equal(w->tensors[tensor_id(w, "w")].kind, WL_PARAM);
	const struct wl_tensor *a = &w->tensors[tensor_id(w, "a")];
	assert_int_equal(a->kind, WL_ACT);
	assert_int_equal(a->bytes, 32);
	assert_int_equal(a->release_after, 1);
	assert_int_equal(w->tensors[tensor_id(w, "b")].bytes, 4);
	assert_int_equal(w->tensors[tensor_id(w, "b")].release_after, 2);
	const struct wl_tensor *a2 = &w->tensors[tensor_id(w, "a#3")];
	assert_int_equal(a2->bytes, 8);
	assert_int_equal(a2->producer, 2);
	assert_int_equal(a2->release_after, 2);
	assert_io(w, "relu/2", "b", "a#3");
	wl_free(w);
}

/* A malformed log: its text, where the error is and what it says. */
struct bad_case {
	const char *text; /* the log */
	unsigned line;	  /* expected line */
	unsigned col;	  /* expected column, 0 = not checked */
	const char *says; /* part of the message */
};

#define L_CONST(n, b)                                                  \
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"" n "\"}\n"           \
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"" n "\",\"MEMORY\":\"" b \
	"\"}\n"
#define L_CALL1(op, arg, res)                                           \
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"" op "\",\"ARGS\":[\"" arg \
	"\"],\"RESULT\":[\"" res "\"],\"TIME\":\"5\"}\n"

static void test_malformed(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
		/* bad JSON */
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"\n",
		 3, 36, "expected ',' or '}'"},
		{"{\"INSTRUCTION\":\"CONSTANT\" \"NAME\":\"a\"}\n", 1, 27,
		 "expected ',' or '}'"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a}\n", 1, 34,
		 "key 'NAME': unterminated string"},
		{"[1]\n", 1, 1, "expected '{'"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"} x\n",
		 3, 38, "trailing characters"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":true}\n", 1, 34,
		 "key 'NAME': unsupported value"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
				   "\"ARGS\":[\"a\",],\"RESULT\":[],"
				   "\"TIME\":\"1\"}\n",
		 3, 46, "key 'ARGS': expected a string or an integer"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\\q\"}\n", 1, 36,
		 "key 'NAME': bad escape"},
		/* unknown instruction, unknown or misplaced keys */
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"FOO\"}\n", 3, 16,
		 "key 'INSTRUCTION': unknown instruction 'FOO'"},
		{"{\"INSTRUCTION\":\"C\"}\n", 1, 16,
		 "unknown instruction 'C'"},
		{"{\"INSTRUCTION\":\"COPYX\",\"DST\":\"a\",\"SRC\":\"b\"}\n", 1,
		 16, "unknown instruction 'COPYX'"},
		{"{\"INSTRUCTION\":\"\"}\n", 1, 16, "unknown instruction ''"},
		{"{\"NAME\":\"a\"}\n", 1, 1, "missing key 'INSTRUCTION'"},
		{"{\"NA\":\"a\"}\n", 1, 2, "unknown key 'NA'"},
		{"{\"\":\"a\"}\n", 1, 2, "unknown key ''"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\",\"SIZE\":1}\n",
		 1, 38, "unknown key 'SIZE'"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\","
				   "\"TIME\":\"1\"}\n",
		 3, 44, "key 'TIME' does not belong to RELEASE"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\",\"NAME\":\"b\"}\n",
		 1, 38, "key 'NAME' given twice"},
		/* missing keys */
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
				   "\"ARGS\":[\"a\"],\"RESULT\":[]}\n",
		 3, 1, "CALL: missing key 'TIME'"},
		{"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\"}\n", 1, 1,
		 "MEMORY: missing key 'MEMORY'"},
		{"{\"INSTRUCTION\":\"COPY\",\"SRC\":\"a\"}\n", 1, 1,
		 "COPY: missing key 'DST'"},
		/* values */
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n"
		 "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"12a\"}\n",
		 2, 45, "key 'MEMORY': '12a' is not an integer"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n"
		 "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"-1\"}\n",
		 2, 45, "key 'MEMORY': -1 is out of range"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
				   "\"ARGS\":[\"a\"],\"RESULT\":[],"
				   "\"TIME\":\"1.5\"}\n",
		 3, 66, "key 'TIME': '1.5' is not an integer"},
		{"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":[\"a\"]}\n", 1, 33,
		 "key 'NAME': expected a string"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
				   "\"ARGS\":\"a\",\"RESULT\":[],"
				   "\"TIME\":\"1\"}\n",
		 3, 0, "key 'ARGS': expected an array"},
		/* handles */
		{L_CONST("a", "8") L_CALL1("relu", "q", "b"), 3, 0,
		 "key 'ARGS': unknown handle 'q'"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"zz\","
				   "\"MEMORY\":\"1\"}\n",
		 3, 32, "key 'NAME': MEMORY for unknown handle 'zz'"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\","
				   "\"MEMORY\":\"1\"}\n",
		 3, 32, "MEMORY for the already sized handle 'a'"},
		{"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"nobody\"}\n", 1, 33,
		 "key 'NAME': unknown handle 'nobody'"},
		{L_CONST("a", "8") L_CONST("b", "8")
		 "{\"INSTRUCTION\":\"COPY\",\"DST\":\"b\",\"SRC\":\"a\"}\n",
		 5, 29, "key 'DST': handle 'b' is already defined"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"COPY_FROM\",\"DST\":\"c\","
				   "\"SRC\":\"a\"}\n",
		 3, 0, "key 'DST': unknown handle 'c'"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n",
		 3, 34, "key 'NAME': handle 'a' is already defined"},
		{L_CONST("a", "8") L_CALL1("relu", "a", "a"), 3, 0,
		 "key 'RESULT': handle 'a' is already defined"},
		/* CALL results and CONSTANT sizes */
		{L_CONST("a", "8") L_CALL1("relu", "a", "b")
		 "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"8\"}\n"
		 "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"1\"}\n",
		 5, 43, "key 'ALIAS': 1 is out of range [-1, 0]"},
		{L_CONST("a", "8") L_CALL1("relu", "a", "b")
		 "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"8\"}\n"
		 "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n",
		 5, 1, "the CALL on line 3 lacks MEMORY and ALIAS"},
		{L_CONST("a", "8") L_CALL1("relu", "a", "b")
		 "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\",\"ALIAS\":\"-1\"}\n",
		 4, 31, "ALIAS for 'c', which is not a result"},
		{L_CONST("a", "8") L_CALL1("relu", "a", "b")
		 "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n",
		 5, 1, "end of file: the CALL on line 3 lacks MEMORY"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n"
		 "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n",
		 2, 1, "RELEASE: CONSTANT 'a' has no MEMORY line"},
		{"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"a\"}\n", 2, 1,
		 "end of file: CONSTANT 'a' has no MEMORY line"},
		{L_CONST("a", "8") "{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"add_\","
				   "\"ARGS\":[\"a\"],\"MUTATE\":[1],"
				   "\"TIME\":\"1\"}\n",
		 3, 62, "key 'MUTATE': 1 is out of range"},
		{L_CALL1("relu", "a", "b"), 1, 0,
		 "key 'ARGS': unknown handle 'a'"},
		{L_CONST("a", "8")
		 "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"MIDDLE\"}\n",
		 3, 40, "key 'ANNOTATION': unknown annotation 'MIDDLE'"},
		/* nothing to run */
		{L_CONST("a", "8"), 3, 1, "no CALL or MUTATE"},
		{"", 1, 1, "no CALL or MUTATE"},
		/* a handle from before START is gone */
		{L_CONST("a", "8")
		 "{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
		 "{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n",
		 4, 0, "unknown handle 'a'"},
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[32], want[96];
		gms_err err = {{0}};
		struct wl_workload *w = load_text(cases[i].text, path, &err);
		if (w) {
			print_message("case %zu loaded\n", i);
			wl_free(w);
			bad++;
			continue;
		}
		if (cases[i].col)
			snprintf(want, sizeof want, "%s:%u:%u: ", path,
				 cases[i].line, cases[i].col);
		else
			snprintf(want, sizeof want, "%s:%u:", path,
				 cases[i].line);
		if (strncmp(err.msg, want, strlen(want)) != 0 ||
		    !strstr(err.msg, cases[i].says)) {
			print_message("case %zu: \"%s\", want \"%s...%s\"\n", i,
				      err.msg, want, cases[i].says);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	gms_err err = {{0}};
	assert_null(wl_load_dtr(FIX "no-such.log", &err));
	assert_has(err.msg, FIX "no-such.log: ");
}

/* remat: simrd on the same log. DTR's simulator rematerialises any op
 * (dtr-semantics.md 4: `_materialize` re-runs whatever op made an
 * undefined parent, views included; a MUTATE's results are tensors of
 * their own there). So, from the walk above: op 0 (y is mutated later:
 * not recomputable under forward), op 2 (a MUTATE), op 4 (backward) and
 * op 5 (update) become recomputable; ops 1 and 3 were already. Nothing
 * else changes: the same 6 ops and 6 tensors, the same reads, writes and
 * release points, so the same peak 14192 under framework. */
static void test_fixture_remat_simrd(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct wl_workload *f = wl_load_dtr(FIX "mini-4-all.log", &err);
	struct wl_workload *w = wl_load_dtr_remat(FIX "mini-4-all.log",
						  WL_DTR_REMAT_SIMRD, &err);
	if (!w || !f)
		fail_msg("%s", err.msg);
	static const bool fwd[6] = {false, true, false, true, false, false};
	assert_int_equal(w->n_ops, 6);
	assert_int_equal(w->n_tensors, 6);
	for (uint32_t o = 0; o < 6; o++) {
		assert_int_equal(f->ops[o].recomputable, fwd[o]);
		assert_true(w->ops[o].recomputable);
		assert_int_equal(w->ops[o].n_in, f->ops[o].n_in);
		assert_int_equal(w->ops[o].n_out, f->ops[o].n_out);
	}
	for (uint32_t t = 0; t < 6; t++)
		assert_int_equal(w->tensors[t].release_after,
				 f->tensors[t].release_after);
	struct st_run st;
	assert_int_equal(run_policy(w, "framework", NULL, 0, 2, &st), 0);
	assert_int_equal(st.mem.peak_allocated, 14192);
	st_run_free(&st);
	assert_string_equal(wl_dtr_remat_names[WL_DTR_REMAT_SIMRD], "simrd");
	assert_string_equal(wl_dtr_remat_names[WL_DTR_REMAT_FORWARD],
			    "forward");
	wl_free(f);
	wl_free(w);
}

/* wl_dtr_resolve: a path is copied; "dtr:F" is F in $GMS_DTR_DIR, or
 * WL_DTR_ABSENT with the reason when that directory does not exist. */
static void test_trace_dir(void **state)
{
	(void)state;
	char out[GMS_PATH_MAX];
	gms_err err = {{0}};
	assert_int_equal(wl_dtr_resolve("a/b.log", out, sizeof out, &err), 0);
	assert_string_equal(out, "a/b.log");
	setenv("GMS_DTR_DIR", "tests/fixtures/dtr", 1);
	assert_int_equal(wl_dtr_resolve("dtr:mini-4-all.log", out, sizeof out,
					&err), 0);
	assert_string_equal(out, "tests/fixtures/dtr/mini-4-all.log");
	setenv("GMS_DTR_DIR", "/nonexistent/gms-dtr", 1);
	assert_int_equal(wl_dtr_resolve("dtr:x.log", out, sizeof out, &err),
			 WL_DTR_ABSENT);
	assert_has(err.msg, "dtr:x.log: the DTR traces are not here (no "
			    "directory /nonexistent/gms-dtr); set GMS_DTR_DIR");
	unsetenv("GMS_DTR_DIR");
	/* the default: beside the checkout */
	assert_int_equal(wl_dtr_dir(out, sizeof out), 0);
	char want[GMS_PATH_MAX];
	snprintf(want, sizeof want, "%s/../shared/data/dtr", hw_datadir());
	assert_string_equal(out, want);
}

/* ---- the shipped logs --------------------------------------------------- */

/* Each shipped log: ops and total time as a plain scan counts them, the
 * baseline peak equal to the log's own (framework, arena: no op of a
 * trace is marked in place, so graph and eager mode allocate alike, in the
 * trace's order), one iteration's time the sum of TIME, and ondemand at
 * 70% of the peak finishing or ending as a clean OOM. */
static void test_shipped(void **state)
{
	(void)state;
	for (size_t i = 0; i < N_SHIPPED; i++) {
		gms_err err = {{0}};
		char path[GMS_PATH_MAX];
		dtr_path_or_skip(shipped[i], path, sizeof path);
		struct wl_workload *w = wl_load_dtr(path, &err);
		if (!w)
			fail_msg("%s", err.msg);
		struct scan s;
		scan_file(path, &s);
		assert_int_equal(w->n_ops, s.ops);
		uint64_t total = 0;
		for (uint32_t o = 0; o < w->n_ops; o++)
			total += (uint64_t)w->ops[o].time;
		assert_int_equal(total, s.time);
		print_message("%s: %u ops, %u tensors, %.3f ms, peak %llu\n",
			      w->name, w->n_ops, w->n_tensors, total / 1e6,
			      (unsigned long long)s.peak);

		struct st_run st;
		assert_int_equal(run_policy(w, "framework", NULL, 0, 2, &st),
				 0);
		assert_false(st.failed);
		assert_false(st.oom.hit);
		assert_int_equal(st.n_iter, 2);
		assert_int_equal(st.mem.peak_allocated, s.peak);
		assert_int_equal(st.iter[1].time, (sim_time_t)total);
		st_run_free(&st);

		uint64_t budget = s.peak / 10 * 7;
		assert_int_equal(run_policy(w, "ondemand", NULL, budget, 2, &st),
				 0);
		assert_false(st.failed);
		if (st.oom.hit) {
			print_message("  ondemand at %llu: OOM at %s (%s)\n",
				      (unsigned long long)budget, st.oom.op,
				      st.oom.reason);
		} else {
			assert_int_equal(st.n_iter, 2);
			assert_true(st.mem.peak_allocated <= budget);
			assert_true(st.iter[0].n_swap_out > 0);
			print_message("  ondemand at %llu: %.3f ms, %llu "
				      "evictions\n",
				      (unsigned long long)budget,
				      st.iter[1].time / 1e6,
				      (unsigned long long)st.iter[1].n_swap_out);
		}
		st_run_free(&st);
		wl_free(w);
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The biggest shipped log (~1 MB) loads in well under a second (about
 * 10 ms in an optimised build). */
static void test_load_time(void **state)
{
	(void)state;
	gms_err err = {{0}};
	char path[GMS_PATH_MAX];
	dtr_path_or_skip(shipped[1], path, sizeof path);
	double t0 = now_s();
	struct wl_workload *w = wl_load_dtr(path, &err);
	double dt = now_s() - t0;
	if (!w)
		fail_msg("%s", err.msg);
	print_message("%s: loaded in %.1f ms\n", w->name, dt * 1e3);
	assert_true(dt < 1.0);
	wl_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release_point_peak),
		cmocka_unit_test(test_release_point_input_and_inplace),
		cmocka_unit_test(test_release_point_errors),
		cmocka_unit_test(test_fixture_all),
		cmocka_unit_test(test_start_ints_reuse),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_shipped),
		cmocka_unit_test(test_load_time),
		cmocka_unit_test(test_fixture_remat_simrd),
		cmocka_unit_test(test_trace_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
