/*
 * shard.c - the plan of a sharded experiment, the shard file and the
 * merge (shard.h has the format and the balancing).
 *
 * One visitor per record (sio_*) both writes and reads the file: a field
 * added to a record is added once, in the same order both ways.
 */
#include "shard.h"
#include "../policies/pol.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef GMS_VERSION
#define GMS_VERSION "unknown"
#endif

#define SHD_FORMAT 3		    /* the file format's number (2: the
				       header's `plan`; 3: a memory event
				       on one line) */
#define PLAN_FORMAT 2		    /* the plan file's (2: fits and
				       traces) */
#define STR_(x) #x
#define STR(x) STR_(x) /* a macro's value as a string */

/* The largest shard file merge reads (README "Input limits"): 1 GiB. A
 * point is about 1.7 KB (chain3-batches' shards: 21019 bytes for 12) plus
 * 30 bytes an event of a timeline: some 600,000 points a shard. */
#define SHD_MAX_BYTES ((uint64_t)1 << 30)
#define SHD_MAX_ITEMS ((size_t)1 << 28) /* an array longer than this in a
					   file is corrupt (refused before
					   allocating it) */

/* ---- the serializer ------------------------------------------------------ */

struct sio {
	FILE *f;	  /* the shard file */
	bool rd;	  /* reading it (else writing) */
	const char *path; /* its name, for messages */
	long line;	  /* lines read */
	uint64_t nread;	  /* bytes read */
	uint64_t size;	  /* reading: the file's size (at most
			     SHD_MAX_BYTES) */
	char *buf;	  /* the line read (getline's) */
	size_t cap;	  /* its allocation */
	gms_err *err;	  /* where the first error goes */
	bool bad;	  /* an error happened: the rest does nothing */
	bool oom;	  /* it was running out of memory (not the file's
			     fault) */
	struct gms_in in; /* reading: the line reader of f (sio_next sets
			     it up) */
};

static void sio_fail(struct sio *x, const char *fmt, const char *a,
		     const char *b)
{
	if (x->bad)
		return;
	x->bad = true;
	char msg[2 * GMS_PATH_MAX + 600]; /* two paths and the words */
	snprintf(msg, sizeof msg, fmt, a, b);
	gms_errf(x->err, "%s:%ld: %s", x->path, x->line, msg);
}

/* Out of memory while reading or writing (name: the field, or ""). */
static void sio_oom(struct sio *x, const char *name)
{
	bool was = x->bad;
	sio_fail(x, *name ? "'%s': out of memory%s" : "%sout of memory%s",
		 name, "");
	x->oom = x->oom || !was;
}

/* The bytes a reader of f may take: its size when it is a regular file
 * below SHD_MAX_BYTES, else that limit. */
static uint64_t sio_size_of(FILE *f)
{
	struct stat fst;
	if (fstat(fileno(f), &fst) == 0 && S_ISREG(fst.st_mode) &&
	    (uint64_t)fst.st_size < SHD_MAX_BYTES)
		return (uint64_t)fst.st_size;
	return SHD_MAX_BYTES;
}

/* Read the next line, "name value"; returns the value (after the blank)
 * or NULL after an error. */
static char *sio_next(struct sio *x, const char *name)
{
	if (x->bad)
		return NULL;
	if (!x->in.f)
		x->in = (struct gms_in){.f = x->f, .path = x->path,
					.lim = {SHD_MAX_BYTES, GMS_MAX_LINE,
						"a shard file"}};
	ptrdiff_t n = gms_in_line(&x->in, &x->buf, &x->cap, x->err);
	x->nread = x->in.nread;
	x->line++;
	if (n == -2) {
		x->bad = true; /* gms_in_line said why */
		return NULL;
	}
	if (n <= 0) {
		sio_fail(x, "the file ends where '%s' should be%s", name, "");
		return NULL;
	}
	if (x->buf[n - 1] == '\n')
		x->buf[--n] = '\0';
	if (memchr(x->buf, '\0', (size_t)n)) {
		sio_fail(x, "a NUL byte in the line of '%s'%s", name, "");
		return NULL;
	}
	size_t k = strlen(name);
	if (strncmp(x->buf, name, k) != 0 ||
	    (x->buf[k] != ' ' && x->buf[k] != '\0')) {
		char got[GMS_QUOTE_BUF];
		sio_fail(x, "expected '%s', found %s", name,
			 gms_quote(got, x->buf));
		return NULL;
	}
	return x->buf[k] ? x->buf + k + 1 : x->buf + k;
}

/* Write "name value\n", value the decimal digits of v (minus: a '-'
 * first), with one fwrite: the bytes fprintf's "%s %" PRIu64 "\n" writes,
 * at a tenth of its instructions (issue 37: fprintf was 45% of writing a
 * shard file, a shard's largest cost after its tasks and baselines). */
static void put_num(FILE *f, const char *name, uint64_t v, bool minus)
{
	char line[160];
	size_t k = strlen(name);
	if (k + 23 > sizeof line) { /* not for names this file uses */
		fprintf(f, "%s %s%" PRIu64 "\n", name, minus ? "-" : "", v);
		return;
	}
	memcpy(line, name, k);
	line[k++] = ' ';
	if (minus)
		line[k++] = '-';
	k += gms_fmt_u64(line + k, v);
	line[k++] = '\n';
	fwrite(line, 1, k, f);
}

static void sio_mark(struct sio *x, const char *name)
{
	if (x->rd) {
		sio_next(x, name);
	} else {
		fputs(name, x->f);
		putc('\n', x->f);
	}
}

/*
 * Read back, every field is checked against the range its writer can give
 * (issue 38, item 6: garbled shards that still parsed were merged:
 * negative times and counters, nan and inf, 2^64-1 counters, batch 0):
 * times and batches in [0, SIM_TIME_OVER] (the clock's limit and its
 * overflow mark, common.h), counters at most INT64_MAX, numbers finite and
 * not negative; the few fields with another range say so.
 */
static void sio_range(struct sio *x, const char *name, int64_t *v,
		      int64_t lo, int64_t hi)
{
	if (!x->rd) {
		put_num(x->f, name,
			*v < 0 ? (uint64_t)0 - (uint64_t)*v : (uint64_t)*v,
			*v < 0);
		return;
	}
	char *s = sio_next(x, name), *end;
	if (!s)
		return;
	errno = 0;
	long long n = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		sio_fail(x, "'%s': not an integer: %.40s", name, s);
	else if (n < lo || n > hi)
		sio_fail(x, "'%s': %.40s is out of range", name, s);
	*v = n;
}

/* A time, a batch: 0 to SIM_TIME_OVER. */
static void sio_i64(struct sio *x, const char *name, int64_t *v)
{
	sio_range(x, name, v, 0, SIM_TIME_OVER);
}

static void sio_u64(struct sio *x, const char *name, uint64_t *v)
{
	if (!x->rd) {
		put_num(x->f, name, *v, false);
		return;
	}
	char *s = sio_next(x, name), *end;
	if (!s)
		return;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		sio_fail(x, "'%s': not an unsigned integer: %.40s", name, s);
	*v = n;
}

/* A line "name v[0] v[1] ... v[n - 1]" of n unsigned integers, each
 * written as sio_u64 writes one, a blank between two (read: exactly n,
 * nothing else). A memory event of a timeline is one such line (issue 37:
 * as twelve "name value" lines, a merge of `run` shards cost about what
 * the run did, read at some 90 instructions a line). */
static void sio_u64s(struct sio *x, const char *name, uint64_t *v, size_t n)
{
	if (!x->rd) {
		char line[64 + 21 * 32 + 1]; /* name, 32 x " " and 20 digits, "\n" */
		size_t k = strlen(name);
		assert(k <= 64 && n <= 32); /* the names and counts used here */
		memcpy(line, name, k);
		for (size_t i = 0; i < n; i++) {
			line[k++] = ' ';
			k += gms_fmt_u64(line + k, v[i]);
		}
		line[k++] = '\n';
		fwrite(line, 1, k, x->f);
		return;
	}
	const char *s = sio_next(x, name);
	for (size_t i = 0; s && i < n; i++) {
		const char *d = s;
		while (*s >= '0' && *s <= '9')
			s++;
		size_t nd = (size_t)(s - d);
		bool last = i + 1 == n,
		     ok = nd && nd <= 20 && *s == (last ? '\0' : ' ');
		uint64_t t = 0;
		for (size_t j = 0; ok && j < nd; j++) {
			unsigned c = (unsigned)(d[j] - '0');
			/* only 20 digits can pass 2^64 - 1 */
			ok = nd < 20 || t <= (UINT64_MAX - c) / 10;
			t = t * 10 + c;
		}
		if (!ok) {
			char c[24];
			snprintf(c, sizeof c, "%zu", n);
			sio_fail(x, "'%s': not %s unsigned integers", name, c);
			return;
		}
		v[i] = t;
		s += !last;
	}
}

/* A count (of events, of bytes moved): at most INT64_MAX. */
static void sio_cnt(struct sio *x, const char *name, uint64_t *v)
{
	sio_u64(x, name, v);
	if (x->rd && !x->bad && *v > (uint64_t)INT64_MAX)
		sio_fail(x, "'%s': %s is out of range", name,
			 "a count past INT64_MAX");
}

/* C99 hex floats: read back bit for bit; finite, not negative unless
 * `sign` (a fitted model's launch cost). */
static void sio_real(struct sio *x, const char *name, double *v, bool sign)
{
	if (!x->rd) {
		fprintf(x->f, "%s %a\n", name, *v);
		return;
	}
	char *s = sio_next(x, name), *end;
	if (!s)
		return;
	*v = strtod(s, &end);
	if (end == s || *end)
		sio_fail(x, "'%s': not a number: %.40s", name, s);
	else if (!isfinite(*v) || (*v < 0 && !sign))
		sio_fail(x, "'%s': %.40s is out of range (a finite number, "
			    "not negative)",
			 name, s);
}

static void sio_f64(struct sio *x, const char *name, double *v)
{
	sio_real(x, name, v, false);
}

/* An int: 0 to INT32_MAX (an iteration: -1 too, sio_iter_no). */
static void sio_int(struct sio *x, const char *name, int *v)
{
	int64_t t = *v;
	sio_range(x, name, &t, 0, INT32_MAX);
	*v = (int)t;
}

static void sio_uint(struct sio *x, const char *name, unsigned *v)
{
	uint64_t t = *v;
	sio_u64(x, name, &t);
	if (x->rd && t > UINT32_MAX)
		sio_fail(x, "'%s': out of range%s", name, "");
	*v = (unsigned)t;
}

static void sio_bool(struct sio *x, const char *name, bool *v)
{
	uint64_t t = *v;
	sio_u64(x, name, &t);
	if (x->rd && t > 1)
		sio_fail(x, "'%s': not 0 or 1%s", name, "");
	*v = t == 1;
}

/* A count or index below `max` (read: checked). */
static void sio_size(struct sio *x, const char *name, size_t *v, size_t max)
{
	uint64_t t = *v;
	sio_u64(x, name, &t);
	if (x->rd && !x->bad && t >= max)
		sio_fail(x, "'%s': out of range%s", name, "");
	*v = x->bad ? 0 : (size_t)t;
}

/* A character a string is written with as it is (sio_text). */
static bool plain(unsigned char c)
{
	return c != '\\' && c != '"' && c >= 0x20 && c != 0x7f;
}

/* A string: quoted, with \\ \" \n \r \t and \xHH escapes; `-` unquoted
 * stands for NULL (only where p != NULL: a heap string). Writes into buf
 * (n bytes) or, with p, a new heap string in *p. */
static void sio_text(struct sio *x, const char *name, char *buf, size_t n,
		     char **p)
{
	if (!x->rd) {
		const char *s = p ? *p : buf;
		fputs(name, x->f);
		putc(' ', x->f);
		if (!s) {
			fputs("-\n", x->f);
			return;
		}
		fputc('"', x->f);
		for (; *s; s++) {
			/* a run of characters written as they are: one fwrite */
			size_t run = 0;
			while (s[run] && plain((unsigned char)s[run]))
				run++;
			if (run) {
				fwrite(s, 1, run, x->f);
				s += run - 1;
				continue;
			}
			unsigned char c = (unsigned char)*s;
			if (c == '\\' || c == '"')
				fprintf(x->f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", x->f);
			else if (c == '\r')
				fputs("\\r", x->f);
			else if (c == '\t')
				fputs("\\t", x->f);
			else if (c < 0x20 || c == 0x7f)
				fprintf(x->f, "\\x%02x", c);
			else
				fputc(c, x->f);
		}
		fputs("\"\n", x->f);
		return;
	}
	char *s = sio_next(x, name);
	if (!s)
		return;
	if (p && !strcmp(s, "-")) {
		*p = NULL;
		return;
	}
	size_t len = strlen(s);
	if (len < 2 || s[0] != '"' || s[len - 1] != '"') {
		sio_fail(x, "'%s': not a quoted string%s", name, "");
		return;
	}
	char *out = buf;
	if (p && !(out = *p = malloc(len))) {
		sio_oom(x, name);
		return;
	}
	size_t cap = p ? len : n, k = 0;
	for (size_t i = 1; i + 1 < len; i++) {
		char c = s[i];
		if (c == '\\' && i + 2 < len) {
			c = s[++i];
			if (c == 'n')
				c = '\n';
			else if (c == 'r')
				c = '\r';
			else if (c == 't')
				c = '\t';
			else if (c == 'x' && i + 3 < len) {
				char hex[3] = {s[i + 1], s[i + 2], 0};
				c = (char)strtol(hex, NULL, 16);
				i += 2;
			}
		}
		if (k + 1 >= cap) {
			sio_fail(x, "'%s': longer than %s", name, "its field");
			return;
		}
		out[k++] = c;
	}
	out[k] = '\0';
}

static void sio_str(struct sio *x, const char *name, char *buf, size_t n)
{
	sio_text(x, name, buf, n, NULL);
}

/* An array of *n items of size sz at *arr (read: allocated, zeroed). */
static void sio_array(struct sio *x, const char *name, void **arr, size_t *n,
		      size_t sz)
{
	sio_size(x, name, n, SHD_MAX_ITEMS);
	if (!x->rd || x->bad || !*n)
		return;
	/* each item takes a line of 2 bytes or more: no more items than
	 * the rest of the file can hold (`n_iter 28311552` in a 5 KB file
	 * asked calloc for 5.2 GB; found by fuzz/shard.c, issue 38) */
	if (*n > (x->size - x->nread) / 2) {
		char c[32];
		snprintf(c, sizeof c, "%zu", *n);
		*n = 0;
		sio_fail(x, "'%s': %s items, more than the rest of the file "
			    "can hold",
			 name, c);
		return;
	}
	if (!(*arr = calloc(*n, sz))) {
		*n = 0;
		sio_oom(x, name);
	}
}

/* ---- the records ---------------------------------------------------------- */

#define F(kind, p, f) sio_##kind(x, #f, &(p)->f)
#define FS(p, f) sio_str(x, #f, (p)->f, sizeof (p)->f)

static void sio_iter(struct sio *x, struct st_iter *s)
{
	F(i64, s, start);
	F(i64, s, time);
	F(i64, s, compute_busy);
	F(i64, s, recompute);
	for (int k = 0; k < ST_STALL_COUNT; k++)
		sio_i64(x, st_stall_names[k], &s->stall[k]);
	F(cnt, s, bytes_h2d);
	F(cnt, s, bytes_d2h);
	F(cnt, s, n_swap_out);
	F(cnt, s, n_release);
	F(cnt, s, n_swap_in);
	F(cnt, s, n_swap_out_cancelled);
	F(cnt, s, n_algo_fallback);
	F(cnt, s, n_drop);
	F(cnt, s, n_recompute);
	F(f64, s, recompute_flops);
	F(cnt, s, n_kernels);
	F(i64, s, host_busy);
	F(i64, s, alloc_time);
	F(i64, s, host_issue);
	F(i64, s, host_bound);
	F(cnt, s, n_cuda_malloc);
	F(cnt, s, n_cuda_free);
	F(cnt, s, n_host_alloc);
	F(cnt, s, n_late_in);
	F(cnt, s, n_replan);
}

static void sio_run(struct sio *x, struct st_run *r)
{
	size_t n = r->n_iter > 0 ? (size_t)r->n_iter : 0;
	sio_array(x, "n_iter", (void **)&r->iter, &n, sizeof *r->iter);
	r->n_iter = (int)n;
	for (int i = 0; i < r->n_iter; i++)
		sio_iter(x, &r->iter[i]);
	F(int, r, warmup);
	F(int, r, settle_extra);
	int64_t settled = r->settled_iter; /* -1: never settled */
	sio_range(x, "settled_iter", &settled, -1, INT32_MAX);
	r->settled_iter = (int)settled;
	F(bool, r, settle_asked);
	F(int, r, grow_extra);
	F(bool, r, grow_capped);
	F(bool, r, grow_asked);
	sio_iter(x, &r->steady);
	F(i64, r, batch);
	F(f64, r, samples_per_s);
	FS(r, allocator);
	struct mem_stats *m = &r->mem;
	F(u64, m, budget);
	F(u64, m, requested);
	F(u64, m, allocated);
	F(u64, m, reserved);
	F(u64, m, peak_requested);
	F(u64, m, peak_allocated);
	F(u64, m, peak_reserved);
	F(u64, m, largest_free);
	F(cnt, m, n_alloc);
	F(cnt, m, n_free);
	F(cnt, m, n_fail);
	F(cnt, m, n_device_malloc);
	F(cnt, m, n_device_free);
	F(f64, r, frag_at_peak);
	F(f64, r, frag_max);
	F(u64, r, pinned_peak);
	F(u64, r, host_peak);
	F(cnt, r, events);
	struct st_oom *o = &r->oom;
	F(bool, o, hit);
	int64_t it = o->iter; /* -1: during the setup (ex.c) */
	sio_range(x, "iter", &it, -1, INT32_MAX);
	o->iter = (int)it;
	FS(o, op);
	FS(o, tensor);
	F(u64, o, bytes);
	F(u64, o, largest_free);
	FS(o, reason);
	F(cnt, r, fallbacks);
	F(u64, r, fallback_bytes);
	F(cnt, r, conv_bound);
	F(cnt, r, gemm_bound);
	F(u64, r, fallback_largest_free);
	F(bool, r, failed);
	FS(r, error);
	sio_text(x, "pol_report", NULL, 0, &r->pol_report);
}

/* A point's timeline: only what the memory plots read (its TR_MEM
 * events), and whether it had others (an empty plot series differs). */
static void sio_timeline(struct sio *x, struct exp_point *p)
{
	bool has = p->tl != NULL, other = false;
	size_t n = 0;
	for (size_t k = 0; p->tl && k < p->tl->n; k++)
		n += p->tl->ev[k].what == TR_MEM;
	other = p->tl && p->tl->n > n;
	sio_bool(x, "timeline", &has);
	if (!has || x->bad)
		return;
	if (x->rd && !(p->tl = calloc(1, sizeof *p->tl))) {
		sio_oom(x, "");
		return;
	}
	if (x->rd)
		tr_init(p->tl, NULL);
	sio_bool(x, "other_events", &other);
	struct tr_event *ev = NULL;
	sio_array(x, "mem_events", (void **)&ev, &n, sizeof *ev);
	if (x->rd) {
		if (!x->bad && other &&
		    !(ev = realloc(ev, (n + 1) * sizeof *ev)))
			sio_oom(x, "");
		if (x->bad) {
			free(ev);
			return;
		}
		if (other) /* a placeholder: not plotted */
			ev[n] = (struct tr_event){.what = TR_SPAN};
		p->tl->ev = ev;
		p->tl->n = p->tl->cap = n + other;
	}
	for (size_t k = 0, i = 0; i < n && !x->bad; k++) {
		struct tr_event *e = x->rd ? &ev[i] : &p->tl->ev[k];
		if (!x->rd && e->what != TR_MEM)
			continue;
		/* one line: "ev t0 a b", its bytes by tensor kind (issue
		 * 34) in wl_kind's order, and its host bytes */
		enum { KD = 3, HOST = KD + WL_KIND_COUNT, N_EV };
		uint64_t v[N_EV];
		struct tr_kinds *kd = NULL;
		if (!x->rd) {
			kd = &p->tl->kinds[e->id];
			v[0] = (uint64_t)e->t0;
			v[1] = e->a;
			v[2] = e->b;
			memcpy(v + KD, kd->kind, sizeof kd->kind);
			v[HOST] = kd->host;
		}
		sio_u64s(x, "ev", v, N_EV);
		if (!x->rd) {
			i++;
			continue;
		}
		if (x->bad)
			break;
		if (v[0] > (uint64_t)SIM_TIME_OVER) {
			sio_fail(x, "'ev': its time is out of range%s%s", "",
				 "");
			break;
		}
		e->what = TR_MEM;
		e->t0 = e->t1 = (int64_t)v[0];
		e->a = v[1];
		e->b = v[2];
		if (!(kd = tr_kinds_add(p->tl, e))) {
			sio_oom(x, "");
			break;
		}
		memcpy(kd->kind, v + KD, sizeof kd->kind);
		kd->host = v[HOST];
		i++;
	}
}

static void sio_point(struct sio *x, const struct exp *e,
		      struct exp_point *p)
{
	sio_size(x, "wl", &p->wl, e->n_wl);
	sio_size(x, "pol", &p->pol, e->n_pol);
	F(i64, p, batch);
	F(u64, p, budget);
	F(u64, p, pool_size);
	F(f64, p, fraction);
	sio_run(x, &p->st);
	FS(p, error);
	F(bool, p, ran);
	/* a run that failed before it started has no batch of its own (a
	 * serial replay whose log could not be read: st zeroed) */
	if (x->rd && !x->bad && p->ran &&
	    (p->batch < 1 || (p->st.batch < 1 && !p->st.failed)))
		sio_fail(x, "a point that ran at batch %s%s", "0", "");
	sio_timeline(x, p);
	sio_mark(x, "point_end");
}

static void sio_search(struct sio *x, const struct exp *e,
		       struct exp_search *s)
{
	sio_size(x, "wl", &s->wl, e->n_wl);
	sio_size(x, "pol", &s->pol, e->n_pol);
	sio_array(x, "n_probe", (void **)&s->probe, &s->n_probe,
		  sizeof *s->probe);
	s->cap_probe = s->n_probe;
	for (size_t k = 0; k < s->n_probe; k++)
		sio_point(x, e, &s->probe[k]);
	int64_t best = s->best;
	sio_range(x, "best", &best, -1, (int64_t)s->n_probe - 1);
	s->best = (long)best;
	F(bool, s, capped);
	F(i64, s, larger_fit);
	F(u64, s, peak);
	F(u64, s, limit);
	struct mem_search *m = &s->mp;
	F(u64, m, pool);
	F(uint, m, attempts);
	F(uint, m, restarts);
	F(bool, m, over_limit);
	F(u64, m, fail_bytes);
	F(u64, m, largest_free);
	FS(s, error);
}

static void sio_eff(struct sio *x, const struct exp *e, struct exp_eff *f)
{
	sio_search(x, e, &f->base);
	F(i64, f, k_base);
	struct accudnn_tune_out *t = &f->tune;
	F(i64, t, k_base);
	F(i64, t, k_max);
	F(i64, t, k_star);
	F(f64, t, t_iter_pred);
	F(f64, t, lr);
	unsigned fm = t->n_fm, pin = t->n_pinned, vi = t->n_violations;
	unsigned rp = f->run_pinned, rv = f->run_violations;
	sio_uint(x, "n_fm", &fm);
	sio_uint(x, "n_pinned", &pin);
	sio_uint(x, "n_violations", &vi);
	sio_uint(x, "run_pinned", &rp);
	sio_uint(x, "run_violations", &rv);
	t->n_fm = fm;
	t->n_pinned = pin;
	t->n_violations = vi;
	f->run_pinned = rp;
	f->run_violations = rv;
	F(bool, f, assessed);
	F(int, t, profile_runs);
	F(bool, f, tuned);
	sio_point(x, e, &f->run);
	F(u64, f, param_bytes);
	FS(f, error);
}

/* The task i of r: a point, a search or an efficiency row. */
static void sio_task(struct sio *x, const struct exp *e,
		     struct exp_result *r, size_t i)
{
	if (r->eff)
		sio_eff(x, e, &r->eff[i]);
	else if (r->srch)
		sio_search(x, e, &r->srch[i]);
	else
		sio_point(x, e, &r->pt[i]);
}

/* The file's header. */
struct shd_head {
	int64_t format;		 /* SHD_FORMAT */
	char version[128];	 /* GMS_VERSION of the writer */
	char name[128];		 /* the experiment's name */
	char path[PRM_PATH_MAX]; /* its file, as given to run */
	uint64_t identity;	 /* shd_plan.identity */
	size_t k, n;		 /* shard k of n */
	size_t tasks;		 /* the plan's task count */
	uint64_t plan;		 /* shd_plan.tag: the plan file it ran
				    from, 0: it planned itself */
};

static void sio_head(struct sio *x, struct shd_head *h)
{
	sio_range(x, "gpumemsim-shard", &h->format, 0, INT64_MAX);
	if (x->rd && !x->bad && h->format != SHD_FORMAT)
		sio_fail(x, "not shard file format %s (another gpumemsim's)%s",
			 STR(SHD_FORMAT), "");
	FS(h, version);
	sio_str(x, "experiment", h->name, sizeof h->name);
	FS(h, path);
	F(u64, h, identity);
	sio_size(x, "shard", &h->k, SIZE_MAX);
	sio_size(x, "of", &h->n, SIZE_MAX);
	sio_size(x, "tasks", &h->tasks, SIZE_MAX);
	F(u64, h, plan);
}

/* ---- the plan --------------------------------------------------------- */

int shd_parse(const char *arg, unsigned *k, unsigned *n, gms_err *err)
{
	char *end;
	errno = 0;
	unsigned long a = strtoul(arg, &end, 10), b = 0;
	bool ok = end != arg && *end == '/' && arg[0] != '-';
	if (ok) {
		const char *s = end + 1;
		b = strtoul(s, &end, 10);
		ok = end != s && !*end && *s != '-' && !errno;
	}
	if (!ok || b < 1 || b > 1000000 || a >= b)
		return gms_errf(err, "--shard %s: want K/N with 0 <= K < N "
				     "(e.g. 0/4 .. 3/4; N at most 1000000)",
				arg);
	*k = (unsigned)a;
	*n = (unsigned)b;
	return 0;
}

/* FNV-1a, 64 bits (Fowler, Noll, Vo: offset basis and prime of the
 * published 64-bit parameters). */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;
	const uint64_t P = 0x100000001b3ULL;
	size_t i = 0;
	/* eight bytes a turn, the same steps: the identity hashes every
	 * input file in the plan step, each shard and the merge, at 7
	 * instructions a byte before (issue 37) */
	for (; n - i >= 8; i += 8) {
		h = (h ^ s[i]) * P;
		h = (h ^ s[i + 1]) * P;
		h = (h ^ s[i + 2]) * P;
		h = (h ^ s[i + 3]) * P;
		h = (h ^ s[i + 4]) * P;
		h = (h ^ s[i + 5]) * P;
		h = (h ^ s[i + 6]) * P;
		h = (h ^ s[i + 7]) * P;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * P;
	return h;
}

static uint64_t fnv_file(uint64_t h, const char *path)
{
	h = fnv(h, path, strlen(path) + 1);
	FILE *f = fopen(path, "rb");
	char buf[1 << 14];
	size_t n;
	while (f && (n = fread(buf, 1, sizeof buf, f)) > 0)
		h = fnv(h, buf, n);
	if (f)
		fclose(f);
	return h;
}

/* Doublings from a to b (a >= 1): ceil(log2(b / a)). */
static uint64_t doublings(uint64_t a, uint64_t b)
{
	uint64_t d = 0;
	for (a = a ? a : 1; a < b; a *= 2)
		d++;
	return d;
}

/* The probes a task of e is expected to run, from each search's
 * algorithm (exp_run.c): max-batch, the reference search it answers
 * for (max_batch.c): doubling from start to at most limit, at most as
 * many bisection steps, then `confirm` batches (it runs fewer where the
 * boundary is predicted; an estimate is all the plan needs);
 * best-throughput runs its grid, then a ternary search (two probes a
 * round, the range shrinking to 2/3) over two grid gaps, then three
 * exhaustively; min-pool runs the peak run and the attempt that serves
 * (restarts are not known in advance), then with shrink a bisection from
 * the limit down to one granule. */
static uint64_t shd_probes(const struct exp *e)
{
	uint64_t mb = 1 + 2 * doublings((uint64_t)e->start, (uint64_t)e->limit) +
		      (uint64_t)e->confirm;
	switch (e->kind) {
	case EXP_MAX_BATCH:
		return mb;
	case EXP_EFF:
	case EXP_SCALING:
		return mb + 1; /* and the run at k* */
	case EXP_BEST: {
		uint64_t span = (uint64_t)(e->hi - e->lo), grid;
		grid = e->step ? span / (uint64_t)e->step + 2
			       : doublings(1, (uint64_t)e->hi) + 2;
		grid = grid > 66 ? 66 : grid;
		uint64_t w = 2 * span / (grid > 2 ? grid - 1 : 1), n = grid + 3;
		for (; w > 2; w -= w / 3)
			n += 2;
		return n;
	}
	case EXP_MIN_POOL: {
		uint64_t lim = e->pool_limit ? e->pool_limit
			       : e->budget   ? e->budget
					     : e->hw.capacity - e->hw.reserved;
		return 2 + (e->pool_shrink
				    ? doublings(MEM_SEARCH_GRANULE, lim)
				    : 0);
	}
	default:
		return 1;
	}
}

/* An order of the tasks: cost descending, then index ascending. */
struct shd_ord {
	uint64_t cost; /* the task's estimate */
	size_t i;      /* its index */
};

static int cmp_ord(const void *a, const void *b)
{
	const struct shd_ord *x = a, *y = b;
	if (x->cost != y->cost)
		return x->cost < y->cost ? 1 : -1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Greedy longest-processing-time (Graham, "Bounds on multiprocessing
 * timing anomalies", SIAM J. Appl. Math. 1969: within 4/3 - 1/(3n) of the
 * best makespan): tasks by decreasing cost, each to the least loaded
 * shard, ties to the lower index and the lower shard. ord: T scratch
 * entries; load: n entries, zeroed here. */
static void lpt(const uint64_t *cost, size_t T, unsigned n,
		struct shd_ord *ord, uint32_t *owner, uint64_t *load)
{
	for (size_t i = 0; i < T; i++)
		ord[i] = (struct shd_ord){cost[i], i};
	qsort(ord, T, sizeof *ord, cmp_ord);
	memset(load, 0, n * sizeof *load);
	for (size_t j = 0; j < T; j++) {
		unsigned best = 0;
		for (unsigned k = 1; k < n; k++)
			if (load[k] < load[best])
				best = k;
		owner[ord[j].i] = best;
		load[best] += ord[j].cost;
	}
}

int shd_lpt(const uint64_t *cost, size_t T, unsigned n, uint32_t *owner,
	    uint64_t *load)
{
	struct shd_ord *ord = calloc(T ? T : 1, sizeof *ord);
	if (!ord)
		return -1;
	lpt(cost, T, n, ord, owner, load);
	free(ord);
	return 0;
}

/* McNaughton's wrap-around rule (R. McNaughton, "Scheduling with
 * deadlines and loss functions", Management Science 6(1), 1959), with
 * whole tasks: the groups in order ord[0..G), each group's tasks in the
 * order seq (grouped: first[g] .. first[g + 1]), filling shard after
 * shard up to the limit L, a piece of group g on a shard costing
 * extra[g] and then each task its own cost. A task that does not fit
 * closes the shard. owner: the shard of each task. Returns whether all
 * fit in the n shards. */
static bool wrap(const struct shd_ord *ord, size_t G, const size_t *first,
		 const size_t *seq, const uint64_t *cost,
		 const uint64_t *extra, unsigned n, uint64_t L,
		 uint32_t *owner)
{
	unsigned k = 0;
	uint64_t load = 0;
	bool empty = true; /* shard k holds nothing yet */
	for (size_t o = 0; o < G; o++) {
		size_t g = ord[o].i;
		bool here = false; /* group g has a piece on shard k */
		for (size_t j = first[g]; j < first[g + 1];) {
			size_t i = seq[j];
			uint64_t need = cost[i] + (here ? 0 : extra[g]);
			if (load + need > L) {
				/* an empty shard takes a task whatever it
				 * costs: L below it is infeasible anyway */
				if (empty || ++k == n)
					return false;
				load = 0;
				empty = true;
				here = false;
				continue;
			}
			owner[i] = k;
			load += need;
			empty = false;
			here = true;
			j++;
		}
	}
	return true;
}

int shd_group(const uint64_t *cost, const uint32_t *grp, size_t T,
	      const uint64_t *extra, size_t G, unsigned n, uint32_t *owner,
	      uint64_t *load)
{
	size_t *first = calloc(G + 1, sizeof *first),
	       *seq = calloc(T ? T : 1, sizeof *seq);
	uint64_t *c = calloc(G ? G : 1, sizeof *c);
	struct shd_ord *ord = calloc(G ? G : 1, sizeof *ord),
		       *key = calloc(T ? T : 1, sizeof *key);
	int rc = -1;
	if (!first || !seq || !c || !ord || !key)
		goto out;
	uint64_t hi = 0;
	for (size_t i = 0; i < T; i++) {
		first[grp[i] + 1]++;
		c[grp[i]] += cost[i];
	}
	for (size_t g = 0; g < G; g++) {
		ord[g] = (struct shd_ord){
			c[g] + (first[g + 1] ? extra[g] : 0), g};
		hi += ord[g].cost;
		first[g + 1] += first[g];
	}
	qsort(ord, G, sizeof *ord, cmp_ord);
	/* each group's tasks in a scrambled order (Fibonacci hashing of the
	 * task index, Knuth TAOCP vol. 3, 6.4): each shard gets a mix of
	 * the group's points, not a run of neighbours (a sweep's low budget
	 * fractions fail fast) nor one policy of each cycle, so what the
	 * cost estimate misses evens out over a shard's many tasks */
	for (size_t i = 0; i < T; i++)
		key[i] = (struct shd_ord){(uint64_t)i * 0x9E3779B97F4A7C15ULL, i};
	qsort(key, T, sizeof *key, cmp_ord);
	/* seq: by group (a counting sort, c[] now its next slot), each
	 * group's tasks in the scrambled order */
	for (size_t g = 0; g < G; g++)
		c[g] = first[g];
	for (size_t t = 0; t < T; t++)
		seq[c[grp[key[t].i]]++] = key[t].i;
	/* the least L at which everything fits (all in one shard always
	 * does): each group split over as few shards as that allows, and
	 * the shards it spans consecutive, so N shards split at most N - 1
	 * times and pay at most N - 1 extras more than one run */
	uint64_t lo = hi / n;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (wrap(ord, G, first, seq, cost, extra, n, mid, owner))
			hi = mid;
		else
			lo = mid + 1;
	}
	wrap(ord, G, first, seq, cost, extra, n, hi, owner);
	memset(load, 0, n * sizeof *load);
	for (size_t i = 0; i < T; i++)
		load[owner[i]] += cost[i];
	rc = 0;
out:
	free(first);
	free(seq);
	free(c);
	free(ord);
	free(key);
	return rc;
}

void shd_plan_free(struct shd_plan *p)
{
	free(p->fits);
	free(p->traces);
	free(p->baseline);
	free(p->bound);
	free(p->owner);
	free(p->cost);
	free(p->load);
	memset(p, 0, sizeof *p);
}

/* Nanoseconds per op-iteration of each policy: `make bench`'s scaling
 * table at 1K ops (docs/speed.md, "Other targets": every policy on the
 * same synthetic chain, half its memory, so that they swap or recompute),
 * the size of the shipped workloads (hundreds to thousands of ops).
 * Policies the bench does not run cost framework's. Only their ratios
 * matter to the plan. */
static uint64_t pol_ns(const char *name)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} t[] = {{"framework", 1074}, {"ondemand", 1359},
		 {"vdnn", 2675},      {"vdnnpp", 2753},
		 {"checkpoint", 1336}, {"capuchin", 2115},
		 {"accudnn", 3250},   {"dtr", 2603}};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!strcmp(name, t[i].name))
			return t[i].ns;
	return 1074;
}

/* Allocated before the first op (the executor's setup): weights and
 * optimizer state. */
static bool persistent(const struct wl_tensor *t)
{
	return t->kind == WL_PARAM || t->kind == WL_OPT_STATE;
}

int shd_scan(const struct wl_workload *wl, struct exp_liveness *f)
{
	uint32_t n = wl->n_ops;
	memset(f, 0, sizeof *f);
	f->batch = wl->batch;
	f->ops = n;
	uint64_t *in = calloc(n + 1, sizeof *in), *out = calloc(n + 1, sizeof *out);
	f->reach = calloc(n ? n : 1, sizeof *f->reach);
	f->need = calloc(n ? n : 1, sizeof *f->need);
	if (!in || !out || !f->reach || !f->need) {
		free(in);
		free(out);
		free(f->reach);
		free(f->need);
		memset(f, 0, sizeof *f);
		return -1;
	}
	for (uint32_t i = 0; i < wl->n_tensors; i++) {
		const struct wl_tensor *t = &wl->tensors[i];
		if (persistent(t)) {
			f->persist += t->bytes;
			continue;
		}
		uint32_t a = t->producer != WL_NONE ? t->producer
			     : t->n_readers	      ? t->readers[0]
						      : 0;
		if (t->held) {
			/* allocated when first written and never freed
			 * (wl_tensor.held: Caffe's blobs, sim/ex.c). Counted
			 * as weights, every Caffe point of a budget
			 * fraction was costed 1 op, the budget below them:
			 * superneurons-memory's three Caffe networks, a
			 * fifth of its shards' work, went to one shard
			 * (issue 37) */
			if (a < n)
				in[a] += t->bytes;
			continue;
		}
		uint32_t z = t->n_readers ? t->readers[t->n_readers - 1] : a;
		if (t->release_after != WL_NONE && t->release_after > z)
			z = t->release_after;
		z = z < a ? a : z;
		if (a < n && z < n) {
			in[a] += t->bytes;
			out[z] += t->bytes;
		}
	}
	uint64_t live = 0, reach = 0, need = 0;
	for (uint32_t j = 0; j < n; j++) {
		const struct wl_op *o = &wl->ops[j];
		live += in[j];
		/* framework runs an op's fastest algorithm (the default, as
		 * vDNN's "p"), but when its workspace does not fit it takes
		 * the least workspace and trains on, slower (sim/ex.c,
		 * offer_fallback, ex_fallback_or_fail): it fails only where
		 * the least does not fit (issue 37: with the fastest, PyTorch
		 * points that trained at half the baseline were costed as
		 * failing in their first hundred ops, 40x too little) */
		uint64_t least = o->n_algos
					 ? o->algos[wl_least_workspace_algo(o)].workspace
					 : o->workspace,
			 own = least;
		for (uint32_t k = 0; k < o->n_in; k++)
			if (!persistent(&wl->tensors[o->in[k]]))
				own += wl->tensors[o->in[k]].bytes;
		for (uint32_t k = 0; k < o->n_out; k++)
			if (!persistent(&wl->tensors[o->out[k]]))
				own += wl->tensors[o->out[k]].bytes;
		reach = live + least > reach ? live + least : reach;
		need = own > need ? own : need;
		f->reach[j] = reach;
		f->need[j] = need;
		live -= out[j];
	}
	free(in);
	free(out);
	return 0;
}

/* The first op whose bytes (a prefix maximum, above) pass `room`, or n
 * when none does. */
static uint64_t first_over(const uint64_t *pm, uint64_t n, uint64_t room)
{
	uint64_t lo = 0, hi = n;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (pm[mid] > room)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The bytes a budget above the persistent ones leaves for the rest, in
 * the scan's batch (activations scale with the batch; a batch sweep
 * builds each workload once, at its own batch). */
static uint64_t room_of(const struct exp_liveness *f, uint64_t budget,
			int64_t batch)
{
	double room = (double)(budget - f->persist);
	if (batch > 0 && f->batch > 0 && batch != f->batch)
		room = room * (double)f->batch / (double)batch;
	return room >= 1.8e19 ? UINT64_MAX : (uint64_t)room;
}

/* Is a point at this budget under memory pressure: below what framework
 * holds at its peak, so that the policy must evict? */
static bool pressed(const struct exp_liveness *f, uint64_t budget,
		    int64_t batch)
{
	return f->reach && budget && budget != UINT64_MAX &&
	       (budget <= f->persist ||
		room_of(f, budget, batch) < f->reach[f->ops - 1]);
}

/* The ops a run of policy `pol` simulates at this budget and batch:
 * every op of warmup + iterations, after one pass to set up (the
 * executor's per-tensor state, the policy's plan), unless the budget is
 * below what the first iteration needs -- for framework, which evicts
 * nothing, what it holds at its peak (reach); for a policy that evicts,
 * the largest op's own bytes (need) -- and then the run ends at its
 * first failed allocation, the op the prefix crosses the budget at
 * (issue 37: a point that runs out of memory in its first iteration was
 * costed as a full run). Activations scale with the batch (a batch
 * sweep builds each workload once, at its own batch). */
static uint64_t run_ops(const struct exp *e, const struct exp_liveness *f,
			const char *pol, uint64_t budget, int64_t batch)
{
	uint64_t full = f->ops * ((uint64_t)e->warmup + (uint64_t)e->iterations);
	if (!f->reach || !budget || budget == UINT64_MAX)
		return full;
	if (budget <= f->persist)
		return 1; /* the weights do not fit: the first op fails */
	uint64_t r = room_of(f, budget, batch);
	uint64_t j = first_over(strcmp(pol, "framework") ? f->need : f->reach,
				f->ops, r);
	return j < f->ops ? j + 1 : full;
}

/* The ops a search simulates: its probes (shd_probes), each a full run.
 * A max-batch search (and efficiency-optimal's, scaling's) doubles from
 * `start` only up to the batch at which the workload's bytes, the live
 * ones growing with the batch, pass the budget -- the plan's estimate of
 * the answer -- and one that fails at `start` runs one probe, which
 * ends at its first failed allocation (issue 37: a 7B model's search on
 * a 24 GB card was costed as 17 full runs and ran one that failed). */
static uint64_t search_ops(const struct exp *e, const struct exp_liveness *f,
			   const char *pol)
{
	uint64_t iters = (uint64_t)e->warmup + (uint64_t)e->iterations,
		 full = f->ops * iters * shd_probes(e);
	if (!f->reach || f->batch < 1 ||
	    (e->kind != EXP_MAX_BATCH && e->kind != EXP_EFF &&
	     e->kind != EXP_SCALING))
		return full;
	uint64_t budget = e->budget ? e->budget
		: e->hw.capacity > e->hw.reserved
		? e->hw.capacity - e->hw.reserved : 0;
	int64_t start = e->start > 0 ? e->start : 1;
	uint64_t at_start = run_ops(e, f, pol, budget, start);
	if (at_start < f->ops * iters)
		return at_start; /* the first probe fails */
	const uint64_t *pm = strcmp(pol, "framework") ? f->need : f->reach;
	double per = (double)pm[f->ops - 1] / (double)f->batch,
	       most = per > 0 ? (double)(budget - f->persist) / per : 1e18;
	uint64_t top = most >= (double)e->limit ? (uint64_t)e->limit
						: (uint64_t)most;
	uint64_t probes = 1 + 2 * doublings((uint64_t)start, top) +
			  (uint64_t)e->confirm;
	probes += e->kind != EXP_MAX_BATCH; /* and the run at k* */
	return f->ops * iters * probes;
}

/* The three task layouts of exp_run: a workload a task (efficiency-
 * optimal, scaling), a (workload, policy) a task (the searches), or a
 * (workload, swept value, policy) a task (points). */
static bool is_points(const struct exp *e)
{
	return !exp_is_eff(e) && !exp_is_search(e);
}

size_t shd_task_wl(const struct exp *e, size_t i)
{
	bool eff = exp_is_eff(e), pts = is_points(e);
	size_t nv = e->kind == EXP_SWEEP ? e->n_values : 1,
	       np = e->n_pol ? e->n_pol : 1;
	return eff ? i : pts ? i / (nv * np) : i / np;
}

uint64_t shd_identity(const struct exp *e)
{
	size_t T = exp_planned_rows(e);
	uint64_t h = fnv(0xcbf29ce484222325ULL, &T, sizeof T);
	h = fnv_file(h, e->path);
	h = fnv_file(h, e->hw.path);
	for (size_t w = 0; w < e->n_wl; w++)
		if (e->wl[w].src != EXP_SRC_GEN)
			h = fnv_file(h, e->wl[w].path);
	return h;
}

/* The plan of e over n shards; base: each workload's baseline (a plan
 * file's step searched them: the points' budgets are then known, and a
 * shard pays only the build for a workload it touches), or NULL. */
static int plan_tasks(const struct exp *e, unsigned n, const uint64_t *base,
		      struct shd_plan *p, gms_err *err)
{
	memset(p, 0, sizeof *p);
	size_t T = exp_planned_rows(e);
	p->n_tasks = T;
	p->n = n;
	p->owner = calloc(T ? T : 1, sizeof *p->owner);
	p->cost = calloc(T ? T : 1, sizeof *p->cost);
	p->bound = calloc(T ? T : 1, sizeof *p->bound);
	p->load = calloc(n, sizeof *p->load);
	size_t W = e->n_wl ? e->n_wl : 1;
	struct exp_liveness *f = calloc(W, sizeof *f);
	uint32_t *grp = calloc(T ? T : 1, sizeof *grp);
	uint64_t *extra = calloc(W, sizeof *extra);
	int rc = -1;
	if (!p->owner || !p->cost || !p->bound || !p->load || !f || !grp ||
	    !extra)
		goto out;
	p->identity = shd_identity(e);
	for (size_t w = 0; w < e->n_wl; w++) {
		/* the workload as exp_load built and scanned it (at its
		 * own batch, or the measurement's first: run_ops and
		 * search_ops scale the live bytes to each task's batch);
		 * not scanned or empty: 1 op */
		f[w] = e->wl[w].live;
		if (!f[w].ops || !f[w].reach)
			f[w] = (struct exp_liveness){.ops = 1};
	}
	const uint64_t fw = pol_ns("framework"),
		       iters = (uint64_t)e->warmup + (uint64_t)e->iterations;
	size_t nv = e->kind == EXP_SWEEP ? e->n_values : 1,
	       np = e->n_pol ? e->n_pol : 1;
	/* each cost at most a quarter of 2^64 over the tasks and extras,
	 * so that no sum the dealing forms can wrap around */
	const uint64_t cap = UINT64_MAX / 4 / ((uint64_t)T + e->n_wl + 1);
	for (size_t i = 0; i < T; i++) {
		/* task i as exp_run lays tasks out: efficiency rows per
		 * workload; searches workload-major, then policy; points
		 * workload, swept value, policy */
		bool eff = exp_is_eff(e), pts = is_points(e);
		size_t w = shd_task_wl(e, i), v = pts ? i / np % nv : 0,
		       q = eff ? 0 : i % np;
		const char *pol = e->n_pol ? e->pol[q].name : "framework";
		uint64_t ns = pol_ns(pol), c;
		bool long_run = false; /* may run up to settle_max more */
		grp[i] = (uint32_t)w;
		if (!pts) {
			c = search_ops(e, &f[w], pol);
			long_run = true; /* its probes near the answer */
		} else {
			uint64_t budget = e->budget ? e->budget
				: e->hw.capacity > e->hw.reserved
				? e->hw.capacity - e->hw.reserved : 0;
			int64_t batch = f[w].batch;
			if (e->axis == EXP_AXIS_BUDGET)
				budget = e->budgets[v];
			if (e->axis == EXP_AXIS_BATCH)
				batch = e->batches[v];
			/* a fraction of the baseline: the plan step's,
			 * as exp_run forms the budget, or else the live
			 * peak, the least the baseline can be (its search
			 * starts there) */
			if (e->axis == EXP_AXIS_FRACTION && base)
				budget = base[w] ? (uint64_t)((double)base[w] *
							      e->fractions[v])
						 : 0;
			else if (e->axis == EXP_AXIS_FRACTION)
				budget = f[w].reach
						 ? (uint64_t)(e->fractions[v] *
							      (double)(f[w].persist +
								       f[w].reach[f[w].ops - 1]))
						 : 0;
			c = run_ops(e, &f[w], pol, budget, batch);
			if (e->axis == EXP_AXIS_FRACTION && base && !budget)
				c = 1; /* fails before it runs */
			long_run = c == f[w].ops * iters &&
				   pressed(&f[w], budget, batch);
		}
		p->cost[i] = c > cap / ns ? cap : c * ns;
		/* the most it may take, for the order work stealing runs
		 * tasks in: a policy that is run until its plan settles
		 * (pol_ops.settled: Capuchin) runs up to settle_max more
		 * iterations under pressure (sweep1000's ResNet-50 under
		 * capuchin: 104 iterations at fractions 0.4 to 0.25, 30x
		 * the cost at 0.5), and the plan cannot know which */
		const struct pol_ops *po = pol_find(pol);
		uint64_t grow = iters + (uint64_t)e->settle_max;
		p->bound[i] = po && po->settled && long_run && iters
				      ? (p->cost[i] / iters > cap / grow
						 ? cap
						 : p->cost[i] / iters * grow)
				      : p->cost[i];
	}
	/* what a shard pays once per workload it touches: its build (one
	 * pass over the ops) and, for budget fractions, the baseline search
	 * (exp_run.c, baseline_task): an unlimited run of one iteration,
	 * then framework's runs at the live peak, one doubling or more, and
	 * a bisection from the peak's width down to 1 MiB; with a plan file's
	 * baselines, the build alone */
	for (size_t w = 0; w < e->n_wl; w++) {
		uint64_t peak = f[w].reach ? f[w].persist +
						     f[w].reach[f[w].ops - 1]
					   : 0;
		uint64_t runs = e->axis == EXP_AXIS_FRACTION && !base
					? 2 + (2 + doublings(GMS_MIB, peak)) * iters
					: 1;
		extra[w] = f[w].ops * runs > cap / fw ? cap
						      : f[w].ops * runs * fw;
	}
	rc = shd_group(p->cost, grp, T, extra, e->n_wl, n, p->owner, p->load);
out:
	free(f);
	free(grp);
	free(extra);
	if (rc < 0) {
		shd_plan_free(p);
		return gms_errf(err, "out of memory");
	}
	return 0;
}

int shd_plan(const struct exp *e, unsigned n, struct shd_plan *p,
	     gms_err *err)
{
	return plan_tasks(e, n, NULL, p, err);
}

void shd_path(const struct exp *e, unsigned k, unsigned n, char *buf,
	      size_t len)
{
	snprintf(buf, len, "%s/shard-%u-of-%u.shard", e->out_dir, k, n);
}

/* ---- work stealing ---------------------------------------------------------
 *
 * `plan --steal`: the shards of the plan share a claims directory beside
 * the plan file (<plan less .plan>.claims/, made empty by the plan step),
 * so they must share a file system, as the merge's inputs do on a
 * cluster. A task runs in the shard that first makes its claim, a
 * symbolic link <dir>/<task> -> <shard>: symlink(2) fails with EEXIST
 * when the name exists, so of all the processes that try, one creates it
 * (POSIX; over NFS, version 3 or later), and readlink(2) reads the owner
 * back in one call. Each shard offers itself its own tasks first, those
 * that may take longest first (the plan's bound), then the others' of
 * the workloads it builds, then the rest (shd_order): a shard that
 * ends early runs the others' tasks that have not started, so one whose
 * tasks ran long (Capuchin under pressure: up to settle_max more
 * iterations) is relieved. Before
 * it takes the others' tasks a shard reads the directory once, and again
 * only after a claim it thought free was taken: it tries no name it
 * knows is taken (a failed claim costs 5-15 us of system time here).
 * A shard run again (a requeued job) finds its marker started-K and
 * takes back the claims that name it. Which shard runs a task depends on
 * timing, so the shard files do; each task's result does not, so the
 * merged set is still byte-identical to the unsharded run's.
 */
struct claims {
	char dir[GMS_PATH_MAX + 16]; /* the claims directory */
	unsigned k;		     /* this shard */
	char mark[16];		     /* its number, the links' target */
	size_t n;		     /* tasks */
	const bool *mine;	     /* the plan's tasks for this shard */
	pthread_mutex_t mu;	     /* guards the rest (pool threads) */
	bool started;		     /* the marker is made */
	bool *again;		     /* a run again: the claims naming it */
	bool *taken;		     /* claimed, as last read */
	bool have_taken;	     /* taken[] is read and not known stale */
	bool bad;		     /* claiming failed: run nothing more */
	gms_err err;		     /* why */
};

/* The claims directory of the plan file at path: path less ".plan",
 * plus ".claims"; false when it does not fit in len. */
static bool claims_path(const char *plan, char *buf, size_t len)
{
	size_t n = strlen(plan);
	if (n > 5 && !strcmp(plan + n - 5, ".plan"))
		n -= 5;
	int k = snprintf(buf, len, "%.*s.claims", (int)n, plan);
	return k >= 0 && (size_t)k < len;
}

/* Caller holds mu. */
static bool claim_fail(struct claims *c, const char *what, int e)
{
	if (!c->bad)
		gms_errf(&c->err, "claims directory %s: %s: %s (made by "
				  "`gpumemsim plan --steal`; the shards must "
				  "share its file system)",
			 c->dir, what, strerror(e));
	c->bad = true;
	return false;
}

/* A claim's task number from its name, or c->n when it is not one. */
/* Is nm a number (the name of a claim: a task's index)? */
static bool digits(const char *nm)
{
	return nm[0] && strspn(nm, "0123456789") == strlen(nm);
}

static size_t claim_no(const struct claims *c, const char *nm)
{
	if (!digits(nm) || strlen(nm) > 19)
		return c->n;
	unsigned long long v = strtoull(nm, NULL, 10);
	return v < c->n ? (size_t)v : c->n;
}

/* Does the claim at path name this shard? */
static bool names_me(const struct claims *c, const char *path)
{
	char got[16];
	ssize_t l = readlink(path, got, sizeof got - 1);
	got[l > 0 ? l : 0] = '\0';
	return !strcmp(got, c->mark);
}

/* Caller holds mu: read the directory into taken[] (with_owner: and
 * this shard's claims into again[]). */
static bool claims_read(struct claims *c, bool *into, bool with_owner)
{
	DIR *d = opendir(c->dir);
	if (!d)
		return claim_fail(c, "reading it", errno);
	memset(into, 0, c->n * sizeof *into);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t i = claim_no(c, de->d_name);
		if (i == c->n)
			continue;
		into[i] = true;
		if (with_owner) {
			char path[sizeof c->dir + 32];
			snprintf(path, sizeof path, "%s/%zu", c->dir, i);
			c->again[i] = names_me(c, path);
		}
	}
	closedir(d);
	return true;
}

/* exp_opts.claim: may task i run here? */
static bool claim_task(void *ctx, size_t i)
{
	struct claims *c = ctx;
	bool ok = false;
	pthread_mutex_lock(&c->mu);
	if (c->bad)
		goto out;
	if (i >= c->n) {
		claim_fail(c, "a task past the plan's", ERANGE);
		goto out;
	}
	char path[sizeof c->dir + 32];
	if (!c->started) { /* first: this shard's marker */
		c->started = true;
		snprintf(path, sizeof path, "%s/started-%u", c->dir, c->k);
		if (symlink(c->mark, path) != 0) {
			if (errno != EEXIST) {
				claim_fail(c, "marking this shard started",
					   errno);
				goto out;
			}
			if (!claims_read(c, c->taken, true))
				goto out;
			c->have_taken = true;
		}
	}
	if (c->again[i]) {
		ok = true;
		goto out;
	}
	if (!c->mine[i] && !c->have_taken) {
		if (!claims_read(c, c->taken, false))
			goto out;
		c->have_taken = true;
	}
	if (!c->mine[i] && c->taken[i])
		goto out;
	snprintf(path, sizeof path, "%s/%zu", c->dir, i);
	if (symlink(c->mark, path) == 0) {
		ok = true;
	} else if (errno == EEXIST) {
		/* ours all the same when a retransmitted request made it
		 * (NFS: SYMLINK is not idempotent, RFC 1813 4.4), else
		 * another's, and what was read is stale */
		ok = names_me(c, path);
		c->have_taken = ok && c->have_taken;
	} else {
		claim_fail(c, "claiming a task", errno);
	}
out:
	pthread_mutex_unlock(&c->mu);
	return ok;
}

/* Sort the n tasks at o by p's bound, largest first (ties: index). */
static bool ord_sort(const struct shd_plan *p, size_t *o, size_t n)
{
	struct shd_ord *t = malloc((n ? n : 1) * sizeof *t);
	if (!t)
		return false;
	for (size_t j = 0; j < n; j++)
		t[j] = (struct shd_ord){.cost = p->bound[o[j]], .i = o[j]};
	qsort(t, n, sizeof *t, cmp_ord);
	for (size_t j = 0; j < n; j++)
		o[j] = t[j].i;
	free(t);
	return true;
}

/* The n tasks at o grouped by workload, stably, the groups in the order
 * of their first task (after ord_sort: of their largest bound). */
static bool by_workload(const struct exp *e, size_t *o, size_t n)
{
	size_t W = e->n_wl ? e->n_wl : 1;
	size_t *rank = malloc(W * sizeof *rank), *at = calloc(W + 1, sizeof *at),
	       *t = malloc((n ? n : 1) * sizeof *t), g = 0;
	bool ok = rank && at && t;
	for (size_t w = 0; ok && w < W; w++)
		rank[w] = SIZE_MAX;
	for (size_t j = 0; ok && j < n; j++) { /* groups by first task */
		size_t w = shd_task_wl(e, o[j]);
		if (rank[w] == SIZE_MAX)
			rank[w] = g++;
		at[rank[w] + 1]++;
	}
	for (size_t r = 0; ok && r < g; r++) /* where each group starts */
		at[r + 1] += at[r];
	for (size_t j = 0; ok && j < n; j++)
		t[at[rank[shd_task_wl(e, o[j])]]++] = o[j];
	if (ok)
		memcpy(o, t, n * sizeof *o);
	free(rank);
	free(at);
	free(t);
	return ok;
}

/* (shard.h) The order a shard of a plan file runs (or offers itself) the
 * tasks in:
 * its own (mine); then, stealing, the others' of the workloads it builds,
 * then the rest; each by the plan's bound, the largest first (ties:
 * index), the last two grouped by workload, as
 * greedy longest-processing-time starts the longest jobs first (Graham,
 * SIAM J. Appl. Math. 1969): what may run long starts early, and the
 * shards that end early share out what is left. NULL: out of memory. */
size_t *shd_order(const struct exp *e, const struct shd_plan *p,
		  const bool *mine)
{
	size_t T = p->n_tasks, *o = malloc((T ? T : 1) * sizeof *o), k = 0;
	bool *built = calloc(e->n_wl ? e->n_wl : 1, sizeof *built);
	if (!o || !built) {
		free(o);
		free(built);
		return NULL;
	}
	for (size_t i = 0; i < T; i++)
		built[shd_task_wl(e, i)] |= mine[i];
	/* its own; the others' of workloads it builds for its own (a
	 * build, and for a DTR log its parse and simrd baseline, are paid
	 * once a shard); the rest, those two grouped by workload (a build
	 * is freed once its last task is offered) */
	bool ok = true;
	for (int pass = 0; pass < 3 && ok; pass++) {
		size_t from = k;
		for (size_t i = 0; i < T; i++)
			if ((pass == 0 && mine[i]) ||
			    (pass > 0 && !mine[i] &&
			     built[shd_task_wl(e, i)] == (pass == 1)))
				o[k++] = i;
		ok = ord_sort(p, o + from, k - from) &&
		     (pass == 0 || by_workload(e, o + from, k - from));
	}
	free(built);
	if (!ok) {
		free(o);
		return NULL;
	}
	return o;
}

/* How many of shard k's own tasks other shards ran. */
static size_t claimed_away(const struct shd_plan *p, const bool *ran,
			   unsigned k)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_tasks; i++)
		n += p->owner[i] == k && !ran[i];
	return n;
}

/* The plan step's: an empty claims directory for the plan file at path
 * (made, or emptied of an earlier plan's claims and markers). */
static int claims_reset(const char *plan, gms_err *err)
{
	char dir[GMS_PATH_MAX + 16];
	if (!claims_path(plan, dir, sizeof dir))
		return gms_errf(err, "%s: the claims directory's path is too "
				     "long", plan);
	if (mkdir(dir, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return gms_errf(err, "claims directory %s: %s", dir,
				strerror(errno));
	DIR *d = opendir(dir);
	if (!d)
		return gms_errf(err, "claims directory %s: %s", dir,
				strerror(errno));
	struct dirent *de;
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		const char *nm = de->d_name;
		if (!strncmp(nm, "started-", 8))
			nm += 8;
		if (!digits(nm))
			continue;
		char path[sizeof dir + 300];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		if (unlink(path) != 0)
			rc = gms_errf(err, "claims directory %s: removing %s: "
					   "%s",
				      dir, de->d_name, strerror(errno));
	}
	closedir(d);
	return rc;
}

/* ---- the plan file -------------------------------------------------------- */

void shd_plan_path(const struct exp *e, unsigned n, char *buf, size_t len)
{
	snprintf(buf, len, "%s/plan-of-%u.plan", e->out_dir, n);
}

/* Does e sweep budget fractions of a baseline (its points do)? */
static bool has_baselines(const struct exp *e)
{
	return e->axis == EXP_AXIS_FRACTION && is_points(e);
}

/* The tag a plan file's shards carry: its identity, N, owners and
 * baselines (FNV-1a). */
static uint64_t plan_tag(const struct exp *e, const struct shd_plan *p)
{
	uint64_t h = fnv(0xcbf29ce484222325ULL, &p->identity,
			 sizeof p->identity);
	h = fnv(h, &p->n, sizeof p->n);
	h = fnv(h, &p->steal, sizeof p->steal);
	h = fnv(h, p->owner, p->n_tasks * sizeof *p->owner);
	if (p->baseline)
		h = fnv(h, p->baseline, e->n_wl * sizeof *p->baseline);
	return h ? h : 1; /* 0 is "planned itself" */
}

/* A plan file's models (shard.h): the accudnn fits, then the DTR
 * baselines. */
static void sio_models(struct sio *x, struct shd_plan *p)
{
	sio_array(x, "fits", (void **)&p->fits, &p->n_fits, sizeof *p->fits);
	for (size_t i = 0; i < p->n_fits && !x->bad; i++) {
		struct shd_fit *f = &p->fits[i];
		struct ac_perf *m = &f->perf;
		sio_u64(x, "hash", &f->hash);
		sio_size(x, "kern", &f->n_kern, SIZE_MAX);
		sio_size(x, "copy", &f->n_copy, SIZE_MAX);
		size_t nt = 0;
		for (size_t t = 0; t < OT_COUNT; t++)
			nt += m->have[t];
		sio_size(x, "types", &nt, OT_COUNT + 1);
		/* the types fitted, ascending; the rest stay zero, as
		 * ac_perf_fit leaves them */
		size_t t = 0;
		for (size_t j = 0; j < nt && !x->bad; j++, t++) {
			while (!x->rd && !m->have[t])
				t++;
			size_t ty = t;
			sio_size(x, "type", &ty, OT_COUNT);
			if (x->rd && !x->bad && ty < t)
				sio_fail(x, "'type': not above the one "
					    "before%s%s", "", "");
			if (x->bad)
				break;
			t = ty;
			m->have[t] = true;
			sio_bool(x, "fitted", &m->fitted[t]);
			sio_f64(x, "peak", &m->peak[t]);
			sio_f64(x, "sat", &m->sat[t]);
			sio_f64(x, "alpha", &m->alpha[t]);
			sio_real(x, "launch", &m->launch[t], true);
		}
		sio_f64(x, "rate_all", &m->rate_all);
		sio_f64(x, "bandwidth", &m->bandwidth);
	}
	sio_array(x, "traces", (void **)&p->traces, &p->n_traces,
		  sizeof *p->traces);
	for (size_t i = 0; i < p->n_traces && !x->bad; i++) {
		struct shd_trace *r = &p->traces[i];
		sio_str(x, "log", r->path, sizeof r->path);
		sio_u64(x, "peak_bytes", &r->b.peak_bytes);
		sio_u64(x, "compute_ns", &r->b.compute_ns);
		sio_u64(x, "const_bytes", &r->b.const_bytes);
		sio_uint(x, "ops", &r->b.n_ops);
		sio_uint(x, "cmds", &r->b.n_cmds);
		sio_uint(x, "storages", &r->b.n_storages);
	}
}

/* The plan file, both ways (shard.h has its layout); reading, checked
 * against e (identity, tasks) and n, then p allocated and filled. */
static void sio_plan(struct sio *x, const struct exp *e, unsigned n,
		     struct shd_plan *p)
{
	struct shd_head h = {.format = PLAN_FORMAT, .identity = p->identity,
			     .n = p->n, .tasks = p->n_tasks};
	snprintf(h.version, sizeof h.version, "%s", GMS_VERSION);
	snprintf(h.name, sizeof h.name, "%s", e->name);
	snprintf(h.path, sizeof h.path, "%s", e->path);
	sio_range(x, "gpumemsim-plan", &h.format, 0, INT64_MAX);
	if (x->rd && !x->bad && h.format != PLAN_FORMAT)
		sio_fail(x, "not plan file format %s (another gpumemsim's)%s",
			 STR(PLAN_FORMAT), "");
	/* read back, each value is checked at its line */
	bool rd = x->rd;
	FS(&h, version);
	if (rd && !x->bad && strcmp(h.version, GMS_VERSION))
		sio_fail(x, "made by gpumemsim %s; this is %s: plan, run the "
			    "shards and merge with one version",
			 h.version, GMS_VERSION);
	sio_str(x, "experiment", h.name, sizeof h.name);
	if (rd && !x->bad && strcmp(h.name, e->name))
		sio_fail(x, "a plan of experiment %s, not of %s", h.name,
			 e->name);
	FS(&h, path);
	F(u64, &h, identity);
	if (rd && !x->bad && h.identity != shd_identity(e))
		sio_fail(x, "the experiment %s (or a file it reads) changed "
			    "since this plan was made%s",
			 e->path, "");
	sio_size(x, "of", &h.n, SIZE_MAX);
	if (rd && !x->bad && h.n != n) {
		char a[64], b[64];
		snprintf(a, sizeof a, "%zu", h.n);
		snprintf(b, sizeof b, "%u", n);
		sio_fail(x, "a plan for %s shards, not %s", a, b);
	}
	sio_size(x, "tasks", &h.tasks, SIZE_MAX);
	if (rd && !x->bad && h.tasks != exp_planned_rows(e))
		sio_fail(x, "the experiment %s (or a file it reads) changed "
			    "since this plan was made%s",
			 e->path, "");
	sio_bool(x, "steal", &p->steal);
	if (rd && !x->bad) { /* the header holds: the arrays */
		p->identity = h.identity;
		p->n = n;
		p->n_tasks = h.tasks;
		size_t T = h.tasks ? h.tasks : 1;
		p->owner = calloc(T, sizeof *p->owner);
		p->cost = calloc(T, sizeof *p->cost);
		p->bound = calloc(T, sizeof *p->bound);
		p->load = calloc(n, sizeof *p->load);
		if (has_baselines(e))
			p->baseline = calloc(e->n_wl ? e->n_wl : 1,
					     sizeof *p->baseline);
		if (!p->owner || !p->cost || !p->bound || !p->load ||
		    (has_baselines(e) && !p->baseline))
			sio_oom(x, "");
	}
	size_t nb = p->baseline ? e->n_wl : 0;
	sio_size(x, "baselines", &nb, SIZE_MAX);
	if (x->rd && !x->bad && nb != (p->baseline ? e->n_wl : 0))
		sio_fail(x, "'baselines': not one for each workload of a "
			    "budget-fraction sweep%s%s", "", "");
	for (size_t w = 0; w < nb && !x->bad; w++) {
		sio_u64(x, "bytes", &p->baseline[w]);
		/* at most the 1 PiB device the search runs on (exp_run.c,
		 * exp_baseline_of): a fraction of it is then exact in a
		 * double and converts back to an integer */
		if (x->rd && !x->bad && p->baseline[w] > (uint64_t)1 << 50)
			sio_fail(x, "'bytes': %s is out of range (at most "
				    "2^50, 1 PiB)%s",
				 "the baseline", "");
	}
	sio_models(x, p);
	for (size_t i = 0; i < p->n_tasks && !x->bad; i++) {
		unsigned k = p->owner[i];
		sio_uint(x, "shard", &k);
		if (x->rd && !x->bad && k >= p->n)
			sio_fail(x, "'shard': out of range%s%s", "", "");
		p->owner[i] = k;
		sio_u64(x, "cost", &p->cost[i]);
		sio_u64(x, "bound", &p->bound[i]);
		if (x->rd && !x->bad)
			p->load[k] += p->cost[i];
	}
	sio_mark(x, "end");
	if (x->rd && !x->bad && !gms_in_end(&x->in)) {
		x->line++;
		sio_fail(x, "more after the last '%s'%s", "end", "");
	}
}

static int cmp_fit(const void *a, const void *b)
{
	const struct shd_fit *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->n_kern != y->n_kern)
		return x->n_kern < y->n_kern ? -1 : 1;
	return x->n_copy < y->n_copy ? -1 : x->n_copy > y->n_copy;
}

static int cmp_trace(const void *a, const void *b)
{
	return strcmp(((const struct shd_trace *)a)->path,
		      ((const struct shd_trace *)b)->path);
}

/* The plan's models from memos m, sorted: the file is the same whichever
 * of the plan step's threads fitted first. 0, or -1 out of memory. */
static int models_take(struct shd_plan *p, struct exp_models *m)
{
	p->n_fits = ac_fit_memo_size(m->fits);
	p->n_traces = dtr_trace_memo_size(m->traces);
	p->fits = calloc(p->n_fits ? p->n_fits : 1, sizeof *p->fits);
	p->traces = calloc(p->n_traces ? p->n_traces : 1, sizeof *p->traces);
	if (!p->fits || !p->traces)
		return -1;
	for (size_t i = 0; i < p->n_fits; i++) {
		struct shd_fit *f = &p->fits[i];
		ac_fit_memo_get(m->fits, i, &f->hash, &f->n_kern, &f->n_copy,
				&f->perf);
	}
	for (size_t i = 0; i < p->n_traces; i++) {
		const char *path;
		dtr_trace_memo_get(m->traces, i, &path, &p->traces[i].b);
		snprintf(p->traces[i].path, sizeof p->traces[i].path, "%s",
			 path);
	}
	qsort(p->fits, p->n_fits, sizeof *p->fits, cmp_fit);
	qsort(p->traces, p->n_traces, sizeof *p->traces, cmp_trace);
	return 0;
}

/* A shard's memos m, made holding the plan's models. 0, or -1 out of
 * memory (none made). */
static int models_give(const struct shd_plan *p, struct exp_models *m)
{
	if (exp_models_new(m) < 0)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < p->n_fits && rc == 0; i++)
		rc = ac_fit_memo_put(m->fits, p->fits[i].hash,
				     p->fits[i].n_kern, p->fits[i].n_copy,
				     &p->fits[i].perf);
	for (size_t i = 0; i < p->n_traces && rc == 0; i++)
		rc = dtr_trace_memo_put(m->traces, p->traces[i].path,
					&p->traces[i].b);
	if (rc < 0)
		exp_models_free(m);
	return rc;
}

int shd_plan_make(const struct exp *e, int jobs, unsigned n, bool steal,
		  FILE *log, gms_err *err)
{
	char path[GMS_PATH_MAX + 64];
	shd_plan_path(e, n, path, sizeof path);
	if (gms_mkdirs(e->out_dir, err) < 0)
		return gms_err_prefix(err, "output directory");
	if (gms_out_probe(path, err) < 0)
		return -1;
	uint64_t *base = NULL;
	if (has_baselines(e) &&
	    !(base = calloc(e->n_wl ? e->n_wl : 1, sizeof *base)))
		return gms_errf(err, "out of memory");
	/* the baselines, and the models the points fit, once for all
	 * shards */
	struct exp_models m;
	if (exp_models_new(&m) < 0) {
		free(base);
		return gms_errf(err, "out of memory");
	}
	if (exp_plan_step(e, jobs, base, &m, err) < 0) {
		exp_models_free(&m);
		free(base);
		return -1;
	}
	struct shd_plan p;
	if (plan_tasks(e, n, base, &p, err) < 0) {
		exp_models_free(&m);
		free(base);
		return -1;
	}
	p.baseline = base;
	p.steal = steal;
	int mr = models_take(&p, &m);
	exp_models_free(&m);
	if (mr < 0) {
		shd_plan_free(&p);
		return gms_errf(err, "out of memory");
	}
	if (steal && claims_reset(path, err) < 0) {
		shd_plan_free(&p);
		return -1;
	}
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0) {
		shd_plan_free(&p);
		return -1;
	}
	struct sio x = {.f = o.f, .path = path, .err = err};
	sio_plan(&x, e, n, &p);
	if (gms_out_commit(&o, err) < 0) {
		shd_plan_free(&p);
		return -1;
	}
	if (log) {
		uint64_t total = 0, most = 0;
		for (unsigned k = 0; k < n; k++) {
			total += p.load[k];
			most = p.load[k] > most ? p.load[k] : most;
		}
		fprintf(log, "plan:    %s (%zu tasks on %u shards; estimated "
			     "cost %" PRIu64 ", the most a shard %" PRIu64
			     "%s)\n",
			path, p.n_tasks, n, total, most,
			base ? "; baselines searched" : "");
		if (p.n_fits || p.n_traces)
			fprintf(log, "models:  %zu accudnn models fitted, %zu "
				     "DTR baselines (for every shard)\n",
				p.n_fits, p.n_traces);
		char dir[GMS_PATH_MAX + 16];
		if (steal && claims_path(path, dir, sizeof dir))
			fprintf(log, "claims:  %s/ (work stealing: every "
				     "shard must see it)\n",
				dir);
	}
	shd_plan_free(&p);
	return 0;
}

/* Read the plan file at path for shard runs of e over n shards: 0, -2
 * (bad input: the file refused, or absent) or -1 (out of memory), with
 * err. */
static int plan_read(const struct exp *e, const char *path, unsigned n,
		     struct shd_plan *p, gms_err *err)
{
	memset(p, 0, sizeof *p);
	FILE *f = gms_fopen_in(path, "r", err);
	if (!f)
		return -2;
	struct sio x = {.f = f, .rd = true, .path = path, .err = err,
			.size = sio_size_of(f)};
	sio_plan(&x, e, n, p);
	free(x.buf);
	fclose(f);
	if (x.bad) {
		shd_plan_free(p);
		return x.oom ? -1 : -2;
	}
	p->tag = plan_tag(e, p);
	return 0;
}

/* ---- a shard ------------------------------------------------------------ */

/* The shard file of the tasks held[] (run here) of shard k. */
static int shd_write(const struct exp *e, struct exp_result *r,
		     const struct shd_plan *pl, const bool *held, unsigned k,
		     const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	struct sio x = {.f = o.f, .path = path, .err = err};
	struct shd_head h = {.format = SHD_FORMAT, .identity = pl->identity,
			     .k = k, .n = pl->n, .tasks = pl->n_tasks,
			     .plan = pl->tag};
	snprintf(h.version, sizeof h.version, "%s", GMS_VERSION);
	snprintf(h.name, sizeof h.name, "%s", e->name);
	snprintf(h.path, sizeof h.path, "%s", e->path);
	sio_head(&x, &h);
	/* the baselines of the workloads this shard's points need */
	bool *need = calloc(e->n_wl ? e->n_wl : 1, sizeof *need);
	if (!need) {
		gms_out_abort(&o);
		return gms_errf(err, "out of memory");
	}
	size_t nb = 0, nt = 0;
	for (size_t i = 0; i < pl->n_tasks; i++)
		if (held[i]) {
			nt++;
			if (r->baseline && !need[r->pt[i].wl]) {
				need[r->pt[i].wl] = true;
				nb++;
			}
		}
	sio_size(&x, "baselines", &nb, SIZE_MAX);
	for (size_t w = 0; w < e->n_wl; w++)
		if (need[w]) {
			sio_size(&x, "workload", &w, SIZE_MAX);
			sio_u64(&x, "bytes", &r->baseline[w]);
		}
	free(need);
	sio_size(&x, "count", &nt, SIZE_MAX);
	for (size_t i = 0; i < pl->n_tasks; i++)
		if (held[i]) {
			sio_size(&x, "task", &i, SIZE_MAX);
			sio_u64(&x, "cost", &pl->cost[i]);
			sio_task(&x, e, r, i);
			sio_mark(&x, "end");
		}
	sio_mark(&x, "end");
	return gms_out_commit(&o, err);
}

/* What a plan's shard fitted and read beside the plan's models. */
static void models_said(FILE *log, const struct shd_plan *p,
			struct exp_models *m)
{
	size_t fits, hits, loads, found;
	ac_fit_memo_counts(m->fits, &fits, &hits);
	dtr_trace_memo_counts(m->traces, &loads, &found);
	if (fits + hits + loads + p->n_fits + p->n_traces == 0)
		return; /* nothing of the kind in the experiment */
	fprintf(log, "models:  accudnn: %zu fitted here, %zu runs' found "
		     "(the plan has %zu); DTR: %zu logs read to replay (the "
		     "plan has %zu baselines)\n",
		fits, hits, p->n_fits, loads, p->n_traces);
}

long shd_run(const struct exp *e, const struct exp_opts *o, unsigned k,
	     unsigned n, const char *plan, FILE *log, gms_err *err)
{
	struct shd_plan pl;
	char path[GMS_PATH_MAX + 64];
	shd_path(e, k, n, path, sizeof path);
	if (gms_mkdirs(e->out_dir, err) < 0)
		return gms_err_prefix(err, "output directory");
	if (gms_out_probe(path, err) < 0)
		return -1;
	int pr = plan ? plan_read(e, plan, n, &pl, err) : 0;
	if (pr < 0)
		return pr; /* -2: the plan file refused (bad input) */
	if (!plan && shd_plan(e, n, &pl, err) < 0)
		return -1;
	size_t T = pl.n_tasks ? pl.n_tasks : 1;
	bool *only = calloc(T, sizeof *only), *ran = calloc(T, sizeof *ran);
	struct claims cl = {.k = k};
	size_t *order = NULL;
	/* before the first goto: `out` frees it */
	struct exp_models models = {0};
	long rc = -1;
	if (!only || !ran)
		goto oom;
	size_t mine = 0, held = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < pl.n_tasks; i++) {
		only[i] = pl.owner[i] == k;
		mine += only[i];
		total += pl.cost[i];
	}
	struct exp_opts so = *o;
	so.only = only;
	so.trace = so.schedule = NULL;
	so.baselines = pl.baseline;
	if (plan && models_give(&pl, &models) < 0)
		goto oom;
	so.models = plan ? &models : NULL;
	/* a plan file's shard runs its tasks by the plan's bound, the
	 * largest first (lazy: exp_run knows no workload's size) */
	if (plan && !(order = shd_order(e, &pl, only)))
		goto oom;
	so.order = order;
	if (pl.steal) {
		/* every task is offered, own first, and runs where claimed */
		if (!claims_path(plan, cl.dir, sizeof cl.dir)) {
			gms_errf(&cl.err, "%s: the claims directory's path is "
					  "too long",
				 plan);
			cl.bad = true; /* every task refused, then said */
		}
		snprintf(cl.mark, sizeof cl.mark, "%u", k);
		cl.n = pl.n_tasks;
		cl.mine = only;
		cl.again = calloc(T, sizeof *cl.again);
		cl.taken = calloc(T, sizeof *cl.taken);
		if (!cl.again || !cl.taken)
			goto oom;
		pthread_mutex_init(&cl.mu, NULL);
		so.only = NULL;
		so.claim = claim_task;
		so.claim_ctx = &cl;
		so.ran = ran;
	}
	struct exp_result r;
	if (exp_run(e, &so, &r, err) == 0) {
		const bool *h = pl.steal ? ran : only;
		for (size_t i = 0; i < pl.n_tasks; i++)
			held += h[i];
		if (cl.bad)
			gms_errf(err, "%s", cl.err.msg);
		else if (shd_write(e, &r, &pl, h, k, path, err) == 0) {
			rc = (long)r.n_failed;
			if (log && pl.steal)
				fprintf(log, "shard:   %s (%zu tasks run here, "
					     "%zu of the plan's %zu for this "
					     "shard; %zu in all)\n",
					path, held,
					(size_t)(mine - claimed_away(&pl, ran, k)),
					mine, pl.n_tasks);
			else if (log)
				fprintf(log, "shard:   %s (%zu of %zu tasks, "
					     "estimated cost %" PRIu64
					     " of %" PRIu64 ")\n",
					path, mine, pl.n_tasks, pl.load[k],
					total);
			if (log && so.models)
				models_said(log, &pl, so.models);
		}
		exp_result_free(&r);
	}
	if (so.claim)
		pthread_mutex_destroy(&cl.mu);
	goto out;
oom:
	gms_errf(err, "out of memory");
out:
	exp_models_free(&models);
	free(cl.again);
	free(cl.taken);
	free(order);
	free(only);
	free(ran);
	shd_plan_free(&pl);
	return rc;
}

/* ---- the merge ------------------------------------------------------------ */

/* inputs -> the shard files (a directory: its shard-*-of-*.shard, sorted);
 * returns how many, or -1 with err. *files is malloc'd strings. */
static long collect(char *const *inputs, size_t n_in, char ***files,
		    gms_err *err)
{
	size_t n = 0, cap = 0;
	char **v = NULL;
	for (size_t a = 0; a < n_in; a++) {
		struct stat st;
		if (stat(inputs[a], &st) != 0) {
			gms_errf(err, "%s: %s", inputs[a], strerror(errno));
			goto fail;
		}
		size_t first = n;
		DIR *d = S_ISDIR(st.st_mode) ? opendir(inputs[a]) : NULL;
		struct dirent *de;
		while (S_ISDIR(st.st_mode) ? d && (de = readdir(d)) : n == first) {
			const char *name = S_ISDIR(st.st_mode) ? de->d_name : NULL;
			size_t l = name ? strlen(name) : 0;
			if (name && (strncmp(name, "shard-", 6) || l < 12 ||
				     strcmp(name + l - 6, ".shard")))
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				char **nv = realloc(v, cap * sizeof *v);
				if (!nv) {
					if (d)
						closedir(d);
					gms_errf(err, "out of memory");
					goto fail;
				}
				v = nv;
			}
			size_t len = strlen(inputs[a]) + l + 2;
			if (!(v[n] = malloc(len))) {
				if (d)
					closedir(d);
				gms_errf(err, "out of memory");
				goto fail;
			}
			if (name)
				snprintf(v[n], len, "%s/%s", inputs[a], name);
			else
				snprintf(v[n], len, "%s", inputs[a]);
			n++;
		}
		if (d)
			closedir(d);
		if (S_ISDIR(st.st_mode) && n == first) {
			gms_errf(err, "%s: no shard files (shard-K-of-N.shard) "
				      "in it",
				 inputs[a]);
			goto fail;
		}
		qsort(v + first, n - first, sizeof *v,
		      (int (*)(const void *, const void *))strcmp);
	}
	*files = v;
	return (long)n;
fail:
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -1;
}

/* Allocate r's slots as exp_run lays them out for e. */
static int merge_alloc(const struct exp *e, struct exp_result *r, size_t T,
		       gms_err *err)
{
	memset(r, 0, sizeof *r);
	size_t t = T ? T : 1;
	if (exp_is_eff(e)) {
		r->n_eff = T;
		r->eff = calloc(t, sizeof *r->eff);
	} else if (!is_points(e)) {
		r->n_srch = T;
		r->srch = calloc(t, sizeof *r->srch);
	} else {
		r->n_pt = T;
		r->pt = calloc(t, sizeof *r->pt);
		if (e->axis == EXP_AXIS_FRACTION)
			r->baseline = calloc(e->n_wl ? e->n_wl : 1,
					     sizeof *r->baseline);
		if (e->axis == EXP_AXIS_FRACTION && !r->baseline)
			return gms_errf(err, "out of memory");
	}
	if (!r->eff && !r->srch && !r->pt)
		return gms_errf(err, "out of memory");
	return 0;
}

/* One shard file's body into r: its baselines and its tasks, each of
 * which the plan must give to this shard, once. */
static int merge_body(struct sio *x, const struct exp *e,
		      const struct shd_plan *pl, unsigned k,
		      struct exp_result *r, bool *have_base, bool *seen)
{
	size_t nb = 0, nt = 0, want = 0;
	sio_size(x, "baselines", &nb, e->n_wl + 1);
	for (size_t j = 0; j < nb && !x->bad; j++) {
		size_t w = 0;
		uint64_t b = 0;
		sio_size(x, "workload", &w, e->n_wl);
		sio_u64(x, "bytes", &b);
		if (x->bad)
			break;
		if (!r->baseline)
			sio_fail(x, "a baseline in a measurement without "
				    "budget fractions%s%s", "", "");
		else if (have_base[w] && r->baseline[w] != b)
			sio_fail(x, "workload %s's baseline differs from "
				    "another shard's%s",
				 e->wl[w].label, "");
		else {
			r->baseline[w] = b;
			have_base[w] = true;
		}
	}
	for (size_t i = 0; pl->owner && i < pl->n_tasks; i++)
		want += pl->owner[i] == k;
	sio_size(x, "count", &nt, pl->n_tasks + 1);
	if (!x->bad && pl->owner && nt != want) {
		char a[32], b[32];
		snprintf(a, sizeof a, "%zu", nt);
		snprintf(b, sizeof b, "%zu", want);
		sio_fail(x, "%s tasks, the plan gives this shard %s", a, b);
	}
	for (size_t j = 0; j < nt && !x->bad; j++) {
		size_t i = 0;
		uint64_t cost = 0;
		sio_size(x, "task", &i, pl->n_tasks);
		sio_u64(x, "cost", &cost);
		if (x->bad)
			break;
		if ((pl->owner && pl->owner[i] != k) || seen[i]) {
			char t[32];
			snprintf(t, sizeof t, "%zu", i);
			sio_fail(x, "task %s: %s", t,
				 seen[i] ? "given twice"
					 : "the plan gives it to another "
					   "shard");
			break;
		}
		seen[i] = true;
		sio_task(x, e, r, i);
		sio_mark(x, "end");
	}
	sio_mark(x, "end");
	/* and nothing after it */
	if (!x->bad && !gms_in_end(&x->in)) {
		x->line++;
		sio_fail(x, "more after the last '%s'%s", "end", "");
	}
	return x->bad ? -1 : 0;
}

const char *shd_version(void) { return GMS_VERSION; }

int shd_merge(char *const *inputs, size_t n_in, const char *out,
	      struct exp *e, struct exp_result *r, gms_err *err)
{
	char **files = NULL;
	long nf = collect(inputs, n_in, &files, err);
	if (nf < 0)
		return -1;
	if (nf == 0) {
		free(files);
		return gms_errf(err, "merge: no shard files given");
	}
	struct shd_plan pl = {0};
	struct shd_head h0 = {0};
	bool loaded = false, *have_base = NULL, *seen = NULL;
	long *of = NULL; /* per shard: the file that gave it, -1: none */
	char *buf = NULL;
	size_t cap = 0;
	int rc = -1;
	memset(r, 0, sizeof *r);
	for (long fi = 0; fi < nf; fi++) {
		FILE *f = gms_fopen_in(files[fi], "r", err);
		if (!f)
			goto out;
		struct sio x = {.f = f, .rd = true, .path = files[fi],
				.err = err, .buf = buf, .cap = cap,
				.size = sio_size_of(f)};
		struct shd_head h = {0};
		sio_head(&x, &h);
		if (!x.bad && strcmp(h.version, GMS_VERSION))
			sio_fail(&x, "written by gpumemsim %s; this is %s: "
				     "run the shards and the merge with one "
				     "version",
				 h.version, GMS_VERSION);
		if (!x.bad && (h.n == 0 || h.k >= h.n))
			sio_fail(&x, "shard %s of %s", "K >= N", "N");
		if (!x.bad && fi == 0) {
			h0 = h;
			char dir[GMS_PATH_MAX];
			snprintf(dir, sizeof dir, "%s", files[0]);
			char *slash = strrchr(dir, '/');
			if (slash)
				*slash = '\0';
			else
				snprintf(dir, sizeof dir, ".");
			/* shards of a plan file: their tasks are known
			 * by what they hold, and no workload is built */
			struct exp_opts lo = {.out = out ? out : dir,
					      .lazy = h.plan != 0};
			if (exp_load(e, h.path, &lo, err) != 0) {
				gms_err_prefix(err, "%s: its experiment",
					       files[0]);
				x.bad = true;
			} else if (h.plan) {
				loaded = true;
				pl = (struct shd_plan){
					.n_tasks = exp_planned_rows(e),
					.n = (unsigned)h.n,
					.identity = shd_identity(e),
					.tag = h.plan};
				x.bad = merge_alloc(e, r, pl.n_tasks, err) < 0;
			} else {
				loaded = true;
				x.bad = shd_plan(e, (unsigned)h.n, &pl, err) < 0 ||
					merge_alloc(e, r, pl.n_tasks, err) < 0;
			}
			if (!x.bad && strcmp(h.name, e->name)) {
				char a[GMS_QUOTE_BUF], b[GMS_QUOTE_BUF];
				sio_fail(&x, "its header names the experiment "
					     "%s; its file names %s",
					 gms_quote(a, h.name),
					 gms_quote(b, e->name));
			}
			if (!x.bad && (pl.identity != h.identity ||
				       pl.n_tasks != h.tasks))
				sio_fail(&x, "the experiment %s (or a file it "
					     "reads) changed since this shard "
					     "ran%s",
					 h.path, "");
			if (!x.bad && (!(have_base = calloc(e->n_wl + 1, 1)) ||
				       !(seen = calloc(pl.n_tasks + 1, 1)) ||
				       !(of = malloc(h.n * sizeof *of)))) {
				x.bad = true;
				gms_errf(err, "out of memory");
			}
			for (size_t k = 0; !x.bad && k < h.n; k++)
				of[k] = -1;
		}
		if (!x.bad && (h.identity != h0.identity ||
			       strcmp(h.path, h0.path) || h.tasks != h0.tasks ||
			       strcmp(h.name, h0.name)))
			sio_fail(&x, "a shard of another experiment (%s) than "
				     "the first shard's (%s)",
				 h.path, h0.path);
		if (!x.bad && h.plan != h0.plan)
			sio_fail(&x, "a shard of another plan than the first "
				     "shard's (%s)%s",
				 h0.plan ? "a plan file" : "planned by each "
							   "shard",
				 "");
		if (!x.bad && h.n != h0.n) {
			char a[64], b[64];
			snprintf(a, sizeof a, "%zu/%zu", h.k, h.n);
			snprintf(b, sizeof b, "N = %zu", h0.n);
			sio_fail(&x, "shard %s, but the first shard's plan has "
				     "%s",
				 a, b);
		}
		if (!x.bad && of[h.k] >= 0) {
			char a[64];
			snprintf(a, sizeof a, "%zu/%zu", h.k, h.n);
			sio_fail(&x, "shard %s again (also in %s)", a,
				 files[of[h.k]]);
		}
		if (!x.bad) {
			of[h.k] = fi;
			merge_body(&x, e, &pl, (unsigned)h.k, r, have_base,
				   seen);
		}
		buf = x.buf;
		cap = x.cap;
		fclose(f);
		if (x.bad)
			goto out;
	}
	for (size_t k = 0; k < h0.n; k++)
		if (of[k] < 0) {
			gms_errf(err, "merge: shard %zu/%zu is missing (its "
				      "file: shard-%zu-of-%zu.shard; %ld of "
				      "%zu given)",
				 k, h0.n, k, h0.n, nf, h0.n);
			goto out;
		}
	for (size_t i = 0; i < pl.n_tasks; i++)
		if (!seen[i]) { /* a plan file's shards: none holds it */
			gms_errf(err, "merge: summary row %zu is in none of "
				      "the %zu shards (with `plan --steal`: "
				      "the shard that claimed it stopped "
				      "before writing its file; run it again)",
				 i, h0.n);
			goto out;
		}
	r->n_failed = exp_count_failed(r, NULL);
	rc = 0;
out:
	if (rc < 0) {
		exp_result_free(r);
		if (loaded)
			exp_free(e);
	}
	shd_plan_free(&pl);
	free(have_base);
	free(seen);
	free(of);
	free(buf);
	for (long i = 0; i < nf; i++)
		free(files[i]);
	free(files);
	return rc;
}
