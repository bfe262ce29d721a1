/* sched.c - the schedule log: writer (an executor observer), strict
 * reader and consistency check; see sched.h for the format. */
#include "sched.h"

#include "../workloads/wl.h"
#include "ex.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const sch_kind_names[] = {"iter", "kernel", "copy", "alloc",
				      "free", "hostwait", "end", "wait",
				      "record", "cpu", "driver", NULL};

static const char *const q_names[ENG_Q_COUNT] = {"compute", "h2d", "d2h",
						 "host"};
/* host CPU work: vDNN++'s (de)compression, an optimizer step on the host
 * (zero-offload; ex.h EX_KIND_HOST_WORK), by eng_item.kind */
static const char *const cpu_names[] = {"compress", "decompress", "work",
					NULL};

/* ---- writing ------------------------------------------------------------ */

struct sch_writer {
	struct gms_out out;	      /* the temporary being written */
	const struct wl_workload *wl; /* names, ops */
	const struct hw_profile *hw;  /* name, shared copy engine */
	char policy[128];	      /* policy label */
	int iterations, warmup;	      /* as configured, then as run
					 (sch_writer_set_length) */
	long length_at;		      /* file offset of the meta line's
					 iterations=, -1: not written */
	bool meta;		      /* the meta line is written */
	bool failed;		      /* out of memory: close fails */
	int iter;		      /* iteration buffered, -1: set-up */
	sim_time_t iter_start;	      /* its start */
	struct sch_item *it;	      /* records buffered, issue order */
	size_t n, cap;		      /* their count and capacity */
	size_t *by_serial;	      /* record index of serial base + i */
	size_t n_ser, cap_ser;	      /* its use and capacity */
	uint64_t base;		      /* serial of by_serial[0] */
	bool have_base;		      /* base is set */
	size_t waiting;		      /* the open hostwait, SIZE_MAX: none */
	uint32_t *ids;		      /* buffered kernels' tensors (a
					 kernel's addr is the offset of its
					 own here) */
	size_t n_ids, cap_ids;	      /* their count and capacity */
	struct ex_observer obs;	      /* what sch_writer_observer gives */
};

static struct sch_item *w_push(struct sch_writer *w, enum sch_kind k,
			       sim_time_t t)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct sch_item *v = realloc(w->it, cap * sizeof *v);
		if (!v) {
			w->failed = true;
			return NULL;
		}
		w->it = v;
		w->cap = cap;
	}
	struct sch_item *r = &w->it[w->n++];
	memset(r, 0, sizeof *r);
	r->kind = k;
	r->iter = w->iter;
	r->t = t;
	r->tensor = r->share = r->wait_ev = r->signal_ev = SCH_NONE;
	r->name = r->algo = "";
	return r;
}

static uint32_t ev_id(eng_event e) { return e == ENG_EVENT_NONE ? SCH_NONE : e; }

/* A name as a value: no spaces or '=' inside, "-" when empty. */
static void put_name(FILE *f, const char *key, const char *s)
{
	fprintf(f, " %s=", key);
	if (!s || !*s) {
		fputc('-', f);
		return;
	}
	for (; *s; s++)
		fputc(*s == ' ' || *s == '=' || *s == '\t' || *s == '\n' ? '_'
									  : *s,
		      f);
}

static void put_id(FILE *f, const char *key, uint32_t id, const char *none)
{
	if (id == SCH_NONE)
		fprintf(f, " %s=%s", key, none);
	else
		fprintf(f, " %s=%u", key, id);
}

static void put_t(FILE *f, const char *key, sim_time_t t)
{
	fprintf(f, " %s=%lld", key, (long long)t);
}

static void put_u(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, " %s=%llu", key, (unsigned long long)v);
}

static void write_item(FILE *f, const uint32_t *ids,
		       const struct sch_item *r, uint32_t seq)
{
	fprintf(f, "%s seq=%u", sch_kind_names[r->kind], seq);
	put_t(f, "t", r->t);
	switch (r->kind) {
	case SCH_KERNEL:
		fprintf(f, " q=%s", q_names[r->q]);
		put_u(f, "op", r->op);
		put_name(f, "name", r->name);
		fprintf(f, " type=%s recompute=%d",
			wl_op_type_name((enum wl_op_type)r->type),
			(int)r->recompute);
		put_name(f, "algo", r->algo);
		fprintf(f, " flops=%.17g bytes=%.17g", r->flops, r->bytes);
		put_u(f, "ws", r->workspace);
		if (r->has_conv) {
			fputs(" conv=", f);
			for (int i = 0; i < 12; i++)
				fprintf(f, "%s%lld", i ? "," : "",
					(long long)r->conv[i]);
		} else {
			fputs(" conv=-", f);
		}
		fputs(" tensors=", f);
		if (!r->n_tensors)
			fputc('-', f);
		for (uint32_t i = 0; i < r->n_tensors; i++) /* addr: see w_ids */
			fprintf(f, "%s%u", i ? "," : "", ids[r->addr + i]);
		break;
	case SCH_COPY:
		fprintf(f, " q=%s", q_names[r->q]);
		put_u(f, "tensor", r->tensor);
		put_name(f, "name", r->name);
		put_u(f, "bytes", r->size);
		fprintf(f, " pinned=%d", (int)r->pinned);
		break;
	case SCH_WAIT:
		fprintf(f, " q=%s", q_names[r->q]);
		put_id(f, "event", r->wait_ev, "-");
		break;
	case SCH_RECORD:
		fprintf(f, " q=%s", q_names[r->q]);
		put_id(f, "signal", r->signal_ev, "-");
		break;
	case SCH_CPU:
		put_u(f, "tensor", r->tensor);
		put_name(f, "name", r->name);
		put_u(f, "bytes", r->size);
		fprintf(f, " what=%s", cpu_names[r->type <= 2 ? r->type : 0]);
		put_id(f, "signal", r->signal_ev, "-");
		break;
	case SCH_DRIVER:
		put_u(f, "malloc", r->calls[0]);
		put_u(f, "free", r->calls[1]);
		put_u(f, "hostalloc", r->calls[2]);
		put_t(f, "cost", r->cost);
		put_id(f, "signal", r->signal_ev, "-");
		break;
	case SCH_ALLOC:
	case SCH_FREE:
		put_id(f, "tensor", r->tensor, "ws");
		put_name(f, "name", r->name);
		put_u(f, "bytes", r->size);
		put_u(f, "addr", r->addr);
		if (r->kind == SCH_ALLOC)
			put_id(f, "share", r->share, "-");
		break;
	case SCH_HOSTWAIT:
		put_id(f, "event", r->wait_ev, "memory");
		put_t(f, "until", r->end);
		fprintf(f, " cause=%s", st_stall_names[r->cause]);
		break;
	default:
		break;
	}
	if (r->kind == SCH_KERNEL || r->kind == SCH_COPY) {
		put_id(f, "wait", r->wait_ev, "-");
		put_id(f, "signal", r->signal_ev, "-");
	}
	if (r->kind == SCH_KERNEL || r->kind == SCH_COPY ||
	    r->kind == SCH_CPU) {
		put_t(f, "start", r->start);
		put_t(f, "end", r->end);
	}
	fputc('\n', f);
}

/* Write the buffered records (seq from 0) and empty the buffer. */
static void flush(struct sch_writer *w)
{
	for (size_t i = 0; i < w->n; i++)
		write_item(w->out.f, w->ids, &w->it[i], (uint32_t)i);
	w->n = 0;
	w->n_ids = 0;
	w->n_ser = 0;
	w->have_base = false;
}

/* The meta line's length keys, at a fixed width: sch_writer_set_length
 * rewrites them in place once a learning policy's extra warm-up
 * (ex_cfg.settle_max) is known. */
static void put_length(FILE *f, int iterations, int warmup)
{
	fprintf(f, "iterations=%010d warmup=%010d", iterations, warmup);
}

static void on_run(void *obj, const char *allocator, uint64_t budget)
{
	struct sch_writer *w = obj;
	FILE *f = w->out.f;
	fprintf(f, "gms-schedule %d\nmeta", SCH_VERSION);
	put_name(f, "workload", w->wl->name);
	put_name(f, "hw", w->hw->name);
	put_name(f, "policy", w->policy);
	put_name(f, "allocator", allocator);
	put_u(f, "budget", budget);
	fprintf(f, " batch=%lld ", (long long)w->wl->batch);
	w->length_at = ftell(f);
	put_length(f, w->iterations, w->warmup);
	fprintf(f, " shared=%d\n", (int)w->hw->shared_engine);
	w->meta = true;
}

static void on_iter(void *obj, int iter, bool end, sim_time_t now)
{
	struct sch_writer *w = obj;
	if (!end) {
		if (w->iter < 0)
			flush(w); /* the set-up */
		w->iter = iter;
		w->iter_start = now;
		for (size_t i = 0; i < w->n; i++) /* issued between */
			w->it[i].iter = iter;
		return;
	}
	fprintf(w->out.f, "iter i=%d start=%lld\n", iter,
		(long long)w->iter_start);
	flush(w);
	fprintf(w->out.f, "end i=%d time=%lld\n", iter,
		(long long)(now - w->iter_start));
}

/* Keep kernel k's tensors (inputs, then the outputs it writes) for r. */
static int w_ids(struct sch_writer *w, struct sch_item *r,
		 const struct ex_kernel *k)
{
	uint32_t n = k->n_in + k->n_out;
	if (w->n_ids + n > w->cap_ids) {
		size_t cap = w->cap_ids ? 2 * w->cap_ids : 1024;
		while (cap < w->n_ids + n)
			cap *= 2;
		uint32_t *v = realloc(w->ids, cap * sizeof *v);
		if (!v) {
			w->failed = true;
			return -1;
		}
		w->ids = v;
		w->cap_ids = cap;
	}
	r->addr = w->n_ids;
	r->n_tensors = n;
	for (uint32_t i = 0; i < n; i++)
		w->ids[w->n_ids + i] = i < k->n_in ? k->in[i] : k->out[i - k->n_in];
	w->n_ids += n;
	return 0;
}

static void on_issue(void *obj, enum eng_q q, const struct eng_item *it,
		     const struct ex_kernel *k, sim_time_t now)
{
	struct sch_writer *w = obj;
	const struct wl_workload *wl = w->wl;
	enum sch_kind kind = it->type == ENG_WAIT   ? SCH_WAIT
			     : it->type == ENG_MARK ? SCH_RECORD
			     : it->type == ENG_COPY ? SCH_COPY
			     : q == ENG_HOST	    ? SCH_CPU
						    : SCH_KERNEL;
	struct sch_item *r = w_push(w, kind, now);
	if (!r)
		return;
	if (!w->have_base) {
		w->base = it->serial;
		w->have_base = true;
	}
	uint64_t i = it->serial - w->base;
	if (i >= w->cap_ser) {
		size_t cap = w->cap_ser ? 2 * w->cap_ser : 256;
		while (cap <= i)
			cap *= 2;
		size_t *v = realloc(w->by_serial, cap * sizeof *v);
		if (!v) {
			w->failed = true;
			return;
		}
		w->by_serial = v;
		w->cap_ser = cap;
	}
	w->by_serial[i] = w->n - 1;
	if (i >= w->n_ser)
		w->n_ser = i + 1;
	r->q = it->q;
	r->start = r->end = -1; /* until its span */
	switch (kind) {
	case SCH_WAIT:
		r->wait_ev = ev_id(it->wait);
		return;
	case SCH_RECORD:
		r->signal_ev = ev_id(it->signal);
		return;
	case SCH_COPY:
	case SCH_CPU:
		r->tensor = it->tag;
		r->name = wl->tensors[it->tag].name;
		r->size = it->bytes;
		r->pinned = it->pinned;
		r->type = it->kind == EX_KIND_DECOMPRESS   ? 1
			  : it->kind == EX_KIND_HOST_WORK ? 2
							  : 0;
		break;
	default: {
		const struct wl_op *op = &wl->ops[k ? k->op : it->tag];
		r->op = op->id;
		r->name = op->name;
		r->type = (uint32_t)op->type;
		r->recompute = k ? k->recompute : it->kind;
		r->algo = k ? k->algo : "";
		r->flops = op->flops;
		r->bytes = op->bytes;
		r->workspace = k ? k->workspace : 0;
		if (k && w_ids(w, r, k) < 0)
			return;
		if (op->conv) {
			const struct wl_conv *c = op->conv;
			int64_t g[12] = {c->n, c->c, c->k, c->h,
					 c->w, c->ho, c->wo, c->r, c->s,
					 c->stride, c->pad_h, c->pad_w};
			memcpy(r->conv, g, sizeof g);
			r->has_conv = true;
		}
		break;
	}
	}
	r->wait_ev = ev_id(it->wait);
	r->signal_ev = ev_id(it->signal);
}

static void on_span(void *obj, enum eng_q q, const struct eng_item *it,
		    sim_time_t start, sim_time_t end)
{
	struct sch_writer *w = obj;
	(void)q;
	if (!w->have_base || it->serial < w->base ||
	    it->serial - w->base >= w->n_ser)
		return;
	struct sch_item *r = &w->it[w->by_serial[it->serial - w->base]];
	r->start = start;
	r->end = end;
}

static void on_block(void *obj, bool alloc, const struct ex_block *b)
{
	struct sch_writer *w = obj;
	struct sch_item *r = w_push(w, alloc ? SCH_ALLOC : SCH_FREE, b->time);
	if (!r)
		return;
	r->tensor = b->tensor == WL_NONE ? SCH_NONE : b->tensor;
	r->name = b->tensor == WL_NONE ? "" : w->wl->tensors[b->tensor].name;
	r->share = b->share == WL_NONE ? SCH_NONE : b->share;
	r->size = b->bytes;
	r->addr = b->addr;
}

static void on_driver(void *obj, const struct ex_driver *d)
{
	struct sch_writer *w = obj;
	struct sch_item *r = w_push(w, SCH_DRIVER, d->time);
	if (!r)
		return;
	r->calls[0] = d->n_malloc;
	r->calls[1] = d->n_free;
	r->calls[2] = d->n_host;
	r->cost = d->cost;
	r->signal_ev = ev_id(d->gate);
}

static void on_wait_begin(void *obj, eng_event ev, enum st_stall cause,
			  sim_time_t now)
{
	struct sch_writer *w = obj;
	struct sch_item *r = w_push(w, SCH_HOSTWAIT, now);
	if (!r)
		return;
	r->wait_ev = ev_id(ev);
	r->cause = (uint8_t)cause;
	r->end = now;
	w->waiting = w->n - 1;
}

static void on_wait_end(void *obj, sim_time_t now)
{
	struct sch_writer *w = obj;
	if (w->waiting < w->n)
		w->it[w->waiting].end = now;
	w->waiting = SIZE_MAX;
}

struct sch_writer *sch_writer_open(const char *path,
				   const struct wl_workload *wl,
				   const struct hw_profile *hw,
				   const char *policy, int iterations,
				   int warmup, gms_err *err)
{
	struct sch_writer *w = calloc(1, sizeof *w);
	if (!w) {
		gms_errf(err, "out of memory");
		return NULL;
	}
	if (gms_out_open(&w->out, path, err) < 0) {
		free(w);
		return NULL;
	}
	w->wl = wl;
	w->hw = hw;
	snprintf(w->policy, sizeof w->policy, "%s", policy ? policy : "");
	w->iterations = iterations;
	w->length_at = -1;
	w->warmup = warmup;
	w->iter = -1;
	w->waiting = SIZE_MAX;
	w->obs = (struct ex_observer){
		.obj = w, .span = on_span, .run = on_run, .iter = on_iter,
		.issue = on_issue, .block = on_block, .driver = on_driver,
		.wait_begin = on_wait_begin, .wait_end = on_wait_end};
	return w;
}

const struct ex_observer *sch_writer_observer(struct sch_writer *w)
{
	return &w->obs;
}

static void writer_free(struct sch_writer *w)
{
	free(w->it);
	free(w->by_serial);
	free(w->ids);
	free(w);
}

void sch_writer_abort(struct sch_writer *w)
{
	if (!w)
		return;
	gms_out_abort(&w->out);
	writer_free(w);
}

void sch_writer_set_length(struct sch_writer *w, int iterations, int warmup)
{
	w->iterations = iterations;
	w->warmup = warmup;
	if (w->length_at < 0 || w->failed)
		return;
	FILE *f = w->out.f;
	long end = ftell(f);
	if (end < 0 || fseek(f, w->length_at, SEEK_SET) != 0) {
		w->failed = true;
		return;
	}
	put_length(f, iterations, warmup);
	if (fseek(f, end, SEEK_SET) != 0)
		w->failed = true;
}

int sch_writer_close(struct sch_writer *w, uint64_t peak_allocated,
		     uint64_t peak_reserved, gms_err *err)
{
	const char *why = w->failed ? "out of memory while logging"
			  : !w->meta ? "the run was never set up"
				     : NULL;
	if (why) {
		gms_errf(err, "%s: %s", w->out.path, why);
		sch_writer_abort(w);
		return -1;
	}
	if (w->iter < 0)
		flush(w); /* a set-up with no iteration after it */
	/* an unfinished iteration's records (an OOM) are left out */
	fprintf(w->out.f, "peak allocated=%llu reserved=%llu\n",
		(unsigned long long)peak_allocated,
		(unsigned long long)peak_reserved);
	int rc = gms_out_commit(&w->out, err);
	writer_free(w);
	return rc;
}

/* ---- reading --------------------------------------------------------------- */

#define SCH_MAX_KEYS 20

/* The keys of each record, the meta and peak lines included. */
enum { REC_META = SCH_KIND_COUNT, REC_PEAK, REC_COUNT };
static const char *const rec_keys[REC_COUNT][SCH_MAX_KEYS] = {
	[SCH_ITER] = {"i", "start"},
	[SCH_KERNEL] = {"seq", "t", "q", "op", "name", "type", "recompute",
			"algo", "flops", "bytes", "ws", "conv", "tensors",
			"wait", "signal", "start", "end"},
	[SCH_COPY] = {"seq", "t", "q", "tensor", "name", "bytes", "pinned",
		      "wait", "signal", "start", "end"},
	[SCH_ALLOC] = {"seq", "t", "tensor", "name", "bytes", "addr",
		       "share"},
	[SCH_FREE] = {"seq", "t", "tensor", "name", "bytes", "addr"},
	[SCH_HOSTWAIT] = {"seq", "t", "event", "until", "cause"},
	[SCH_END] = {"i", "time"},
	[SCH_WAIT] = {"seq", "t", "q", "event"},
	[SCH_RECORD] = {"seq", "t", "q", "signal"},
	[SCH_CPU] = {"seq", "t", "tensor", "name", "bytes", "what", "signal",
		     "start", "end"},
	[SCH_DRIVER] = {"seq", "t", "malloc", "free", "hostalloc", "cost",
			"signal"},
	[REC_META] = {"workload", "hw", "policy", "allocator", "budget",
		      "batch", "iterations", "warmup", "shared"},
	[REC_PEAK] = {"allocated", "reserved"},
};

/* A line being read: its fields by key. */
struct sch_line {
	const char *path;	      /* for messages */
	uint32_t no;		      /* line number */
	const char *const *keys;      /* the record's keys */
	char *val[SCH_MAX_KEYS];      /* each key's value */
	size_t col[SCH_MAX_KEYS];     /* its column (1-based) */
	size_t eol;		      /* column past the line's end */
	gms_err *err;		      /* where errors go */
};

static int bad(struct sch_line *l, int k, const char *what)
{
	return gms_errf(l->err, "%s:%u:%zu: key '%s': %s", l->path, l->no,
			l->col[k], l->keys[k], what);
}

static int key_of(const struct sch_line *l, const char *key)
{
	for (int k = 0; k < SCH_MAX_KEYS && l->keys[k]; k++)
		if (strcmp(l->keys[k], key) == 0)
			return k;
	return -1;
}

static int get_u64(struct sch_line *l, const char *key, uint64_t max,
		   uint64_t *out)
{
	int k = key_of(l, key);
	const char *s = l->val[k];
	char *end;
	if (*s < '0' || *s > '9')
		return bad(l, k, "not a non-negative integer");
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno || v > max)
		return bad(l, k, "not a non-negative integer in range");
	*out = v;
	return 0;
}

static int get_u32(struct sch_line *l, const char *key, uint32_t *out)
{
	uint64_t v;
	if (get_u64(l, key, UINT32_MAX - 1, &v) < 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* An id, or `none` (SCH_NONE). */
static int get_id(struct sch_line *l, const char *key, const char *none,
		  uint32_t *out)
{
	if (strcmp(l->val[key_of(l, key)], none) == 0) {
		*out = SCH_NONE;
		return 0;
	}
	return get_u32(l, key, out);
}

static int get_time(struct sch_line *l, const char *key, sim_time_t *out)
{
	uint64_t v;
	if (get_u64(l, key, INT64_MAX, &v) < 0)
		return -1;
	*out = (sim_time_t)v;
	return 0;
}

static int get_bool(struct sch_line *l, const char *key, bool *out)
{
	int k = key_of(l, key);
	const char *s = l->val[k];
	if (strcmp(s, "0") && strcmp(s, "1"))
		return bad(l, k, "not 0 or 1");
	*out = s[0] == '1';
	return 0;
}

static int get_double(struct sch_line *l, const char *key, double *out)
{
	int k = key_of(l, key);
	if (gms_parse_double(l->val[k], out) < 0 || *out < 0)
		return bad(l, k, "not a non-negative number");
	return 0;
}

/* One of names[] (NULL-terminated), as its index. */
static int get_enum(struct sch_line *l, const char *key,
		    const char *const *names, int n, int *out)
{
	int k = key_of(l, key);
	for (int i = 0; i < n && names[i]; i++)
		if (strcmp(l->val[k], names[i]) == 0) {
			*out = i;
			return 0;
		}
	char msg[256] = "unknown value (known: ";
	for (int i = 0; i < n && names[i]; i++)
		gms_list_add(msg + 22, sizeof msg - 24, names[i]);
	strcat(msg, ")");
	return bad(l, k, msg);
}

static const char *get_name(struct sch_line *l, const char *key)
{
	const char *s = l->val[key_of(l, key)];
	return strcmp(s, "-") == 0 ? "" : s;
}

static int get_q(struct sch_line *l, enum eng_q *q)
{
	int v;
	if (get_enum(l, "q", q_names, ENG_Q_COUNT, &v) < 0)
		return -1;
	*q = (enum eng_q)v;
	return 0;
}

/* Split the line at spaces into key=value fields of record `rec`:
 * every key known, once, all present. */
static int split(struct sch_line *l, int rec, char *p, size_t col)
{
	l->keys = rec_keys[rec];
	memset(l->val, 0, sizeof l->val);
	while (*p) {
		char *tok = p, *sp = strchr(p, ' ');
		size_t tcol = col;
		if (sp) {
			*sp = '\0';
			p = sp + 1;
		} else {
			p += strlen(p);
		}
		col += strlen(tok) + 1;
		char *eq = strchr(tok, '=');
		if (!eq || eq == tok)
			return gms_errf(l->err, "%s:%u:%zu: '%s' is not key=value",
					l->path, l->no, tcol, tok);
		*eq = '\0';
		int k = key_of(l, tok);
		if (k < 0)
			return gms_errf(l->err, "%s:%u:%zu: key '%s': unknown "
						"in a %s record",
					l->path, l->no, tcol, tok,
					rec == REC_META	  ? "meta"
					: rec == REC_PEAK ? "peak"
							  : sch_kind_names[rec]);
		l->col[k] = tcol + (size_t)(eq - tok) + 1;
		if (l->val[k])
			return gms_errf(l->err, "%s:%u:%zu: key '%s': given twice",
					l->path, l->no, tcol, tok);
		if (!eq[1])
			return bad(l, k, "empty value");
		l->val[k] = eq + 1;
	}
	for (int k = 0; k < SCH_MAX_KEYS && l->keys[k]; k++)
		if (!l->val[k]) {
			l->col[k] = l->eol;
			return bad(l, k, "missing");
		}
	return 0;
}

static int push_item(struct sch_log *log, const struct sch_item *it)
{
	if (log->n == log->cap) {
		size_t cap = log->cap ? 2 * log->cap : 1024;
		struct sch_item *v = realloc(log->it, cap * sizeof *v);
		if (!v)
			return -1;
		log->it = v;
		log->cap = cap;
	}
	log->it[log->n++] = *it;
	return 0;
}

static int push_id(struct sch_log *log, uint32_t id)
{
	if (log->n_ids == log->cap_ids) {
		size_t cap = log->cap_ids ? 2 * log->cap_ids : 1024;
		uint32_t *v = realloc(log->ids, cap * sizeof *v);
		if (!v)
			return -1;
		log->ids = v;
		log->cap_ids = cap;
	}
	log->ids[log->n_ids++] = id;
	return 0;
}

/* A comma-separated list of n integers (n = 0: any count; `-` is none). */
static int get_list(struct sch_line *l, struct sch_log *log, const char *key,
		    int64_t *fixed, int n, uint32_t *count)
{
	int k = key_of(l, key);
	char *s = l->val[k];
	*count = 0;
	if (strcmp(s, "-") == 0)
		return 0;
	for (;;) {
		char *end;
		if (*s < '0' || *s > '9')
			return bad(l, k, "not a list of non-negative integers");
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || (*end && *end != ',') ||
		    v > (fixed ? (unsigned long long)INT64_MAX : UINT32_MAX - 1))
			return bad(l, k, "not a list of non-negative integers");
		if (fixed) {
			if ((int)*count == n)
				return bad(l, k, "too many numbers");
			fixed[*count] = (int64_t)v;
		} else if (push_id(log, (uint32_t)v) < 0) {
			return gms_errf(l->err, "out of memory");
		}
		++*count;
		if (!*end)
			break;
		s = end + 1;
	}
	if (fixed && (int)*count != n)
		return bad(l, k, "too few numbers");
	return 0;
}

static int copy_str(struct sch_line *l, char *dst, size_t n, const char *key)
{
	const char *s = get_name(l, key);
	if (strlen(s) >= n)
		return bad(l, key_of(l, key), "too long");
	snprintf(dst, n, "%s", s);
	return 0;
}

/* Parse a record's fields into it (common keys and per kind). */
static int parse_item(struct sch_line *l, struct sch_log *log,
		      struct sch_item *it)
{
	int v;
	switch (it->kind) {
	case SCH_ITER:
		return get_time(l, "start", &it->start);
	case SCH_END:
		return get_time(l, "time", &it->end);
	default:
		break;
	}
	if (get_u32(l, "seq", &it->seq) < 0 || get_time(l, "t", &it->t) < 0)
		return -1;
	switch (it->kind) {
	case SCH_KERNEL: {
		int64_t conv[12];
		uint32_t nc, nt;
		if (get_q(l, &it->q) < 0 || get_u32(l, "op", &it->op) < 0 ||
		    get_enum(l, "type", wl_op_type_names, OT_COUNT, &v) < 0 ||
		    get_bool(l, "recompute", &it->recompute) < 0 ||
		    get_double(l, "flops", &it->flops) < 0 ||
		    get_double(l, "bytes", &it->bytes) < 0 ||
		    get_u64(l, "ws", UINT64_MAX, &it->workspace) < 0 ||
		    get_list(l, log, "conv", conv, 12, &nc) < 0 ||
		    get_list(l, log, "tensors", NULL, 0, &nt) < 0)
			return -1;
		if (it->q != ENG_COMPUTE)
			return bad(l, key_of(l, "q"), "a kernel runs on compute");
		it->type = (uint32_t)v;
		it->name = get_name(l, "name");
		it->algo = get_name(l, "algo");
		it->has_conv = nc == 12;
		if (it->has_conv)
			memcpy(it->conv, conv, sizeof conv);
		it->n_tensors = nt;
		break;
	}
	case SCH_COPY:
		if (get_q(l, &it->q) < 0 || get_u32(l, "tensor", &it->tensor) < 0 ||
		    get_u64(l, "bytes", UINT64_MAX, &it->size) < 0 ||
		    get_bool(l, "pinned", &it->pinned) < 0)
			return -1;
		if (it->q != ENG_H2D && it->q != ENG_D2H)
			return bad(l, key_of(l, "q"), "a copy is h2d or d2h");
		it->name = get_name(l, "name");
		break;
	case SCH_WAIT:
		if (get_q(l, &it->q) < 0 || get_u32(l, "event", &it->wait_ev) < 0)
			return -1;
		break;
	case SCH_RECORD:
		if (get_q(l, &it->q) < 0 ||
		    get_u32(l, "signal", &it->signal_ev) < 0)
			return -1;
		break;
	case SCH_CPU:
		if (get_u32(l, "tensor", &it->tensor) < 0 ||
		    get_u64(l, "bytes", UINT64_MAX, &it->size) < 0 ||
		    get_enum(l, "what", cpu_names, 3, &v) < 0)
			return -1;
		it->q = ENG_HOST;
		it->type = (uint32_t)v;
		it->name = get_name(l, "name");
		break;
	case SCH_DRIVER:
		if (get_u64(l, "malloc", UINT64_MAX, &it->calls[0]) < 0 ||
		    get_u64(l, "free", UINT64_MAX, &it->calls[1]) < 0 ||
		    get_u64(l, "hostalloc", UINT64_MAX, &it->calls[2]) < 0 ||
		    get_time(l, "cost", &it->cost) < 0 ||
		    get_id(l, "signal", "-", &it->signal_ev) < 0)
			return -1;
		break;
	case SCH_ALLOC:
	case SCH_FREE:
		if (get_id(l, "tensor", "ws", &it->tensor) < 0 ||
		    get_u64(l, "bytes", UINT64_MAX, &it->size) < 0 ||
		    get_u64(l, "addr", UINT64_MAX, &it->addr) < 0 ||
		    (it->kind == SCH_ALLOC &&
		     get_id(l, "share", "-", &it->share) < 0))
			return -1;
		it->name = get_name(l, "name");
		break;
	case SCH_HOSTWAIT:
		if (get_id(l, "event", "memory", &it->wait_ev) < 0 ||
		    get_time(l, "until", &it->end) < 0 ||
		    get_enum(l, "cause", st_stall_names, ST_STALL_COUNT, &v) < 0)
			return -1;
		it->cause = (uint8_t)v;
		break;
	default:
		break;
	}
	if (it->kind == SCH_KERNEL || it->kind == SCH_COPY) {
		if (get_id(l, "wait", "-", &it->wait_ev) < 0)
			return -1;
	}
	if (it->kind == SCH_KERNEL || it->kind == SCH_COPY ||
	    it->kind == SCH_CPU) {
		if (get_id(l, "signal", "-", &it->signal_ev) < 0 ||
		    get_time(l, "start", &it->start) < 0 ||
		    get_time(l, "end", &it->end) < 0)
			return -1;
		if (it->end < it->start)
			return bad(l, key_of(l, "end"), "before start");
	}
	return 0;
}

static int read_meta(struct sch_line *l, struct sch_log *log)
{
	uint64_t it, wu;
	if (copy_str(l, log->workload, sizeof log->workload, "workload") < 0 ||
	    copy_str(l, log->hw, sizeof log->hw, "hw") < 0 ||
	    copy_str(l, log->policy, sizeof log->policy, "policy") < 0 ||
	    copy_str(l, log->allocator, sizeof log->allocator, "allocator") < 0 ||
	    get_u64(l, "budget", UINT64_MAX, &log->budget) < 0 ||
	    get_u64(l, "batch", INT64_MAX, &it) < 0)
		return -1;
	log->batch = (int64_t)it;
	if (get_u64(l, "iterations", INT32_MAX, &it) < 0 ||
	    get_u64(l, "warmup", INT32_MAX, &wu) < 0 ||
	    get_bool(l, "shared", &log->shared_copy) < 0)
		return -1;
	log->iterations = (int)it;
	log->warmup = (int)wu;
	return 0;
}

static int read_text(const char *path, struct sch_log *log, gms_err *err)
{
	const struct gms_limit lim = {SCH_MAX_BYTES, GMS_MAX_LINE,
				      "a schedule log"};
	size_t n;
	char *buf = gms_read_all(path, &lim, &n, err);
	if (!buf)
		return -1;
	if (memchr(buf, '\0', n)) {
		free(buf);
		return gms_errf(err, "%s: a NUL byte: not a schedule log", path);
	}
	log->strings = buf;
	log->n_str = n + 1;
	log->cap_str = n + 1;
	return 0;
}

int sch_read(const char *path, struct sch_log *log, gms_err *err)
{
	memset(log, 0, sizeof *log);
	if (read_text(path, log, err) < 0)
		return -1;
	struct sch_line l = {.path = path, .err = err};
	enum { HEADER, META, SETUP, IN_ITER, BETWEEN, DONE } st = HEADER;
	int iter = -1;
	uint32_t seq = 0;
	char *p = log->strings;
	while (*p) {
		char *line = p, *nl = strchr(p, '\n');
		if (nl) {
			*nl = '\0';
			p = nl + 1;
		} else {
			p += strlen(p);
		}
		l.no++;
		size_t len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		l.eol = len + 1;
		if (st == HEADER) {
			const char *magic = "gms-schedule ";
			if (strncmp(line, magic, strlen(magic)) != 0)
				goto fail_fmt;
			int64_t v;
			if (gms_parse_int(line + strlen(magic), &v) < 0 ||
			    v != SCH_VERSION) {
				gms_errf(err, "%s:1:%zu: version '%s': this "
					      "reader knows version %d",
					 path, strlen(magic) + 1,
					 line + strlen(magic), SCH_VERSION);
				goto fail;
			}
			st = META;
			continue;
		}
		char *sp = strchr(line, ' ');
		if (!sp) {
			gms_errf(err, "%s:%u:1: '%s': a record needs fields",
				 path, l.no, line);
			goto fail;
		}
		*sp = '\0';
		int rec = -1;
		for (int k = 0; k < SCH_KIND_COUNT; k++)
			if (strcmp(line, sch_kind_names[k]) == 0)
				rec = k;
		if (strcmp(line, "meta") == 0)
			rec = REC_META;
		if (strcmp(line, "peak") == 0)
			rec = REC_PEAK;
		if (rec < 0) {
			gms_errf(err, "%s:%u:1: unknown record '%s'", path, l.no,
				 line);
			goto fail;
		}
		bool ok = st == META	    ? rec == REC_META
			  : st == SETUP	    ? rec == SCH_ALLOC || rec == SCH_FREE ||
					   rec == SCH_ITER || rec == REC_PEAK
			  : st == IN_ITER   ? rec < SCH_KIND_COUNT && rec != SCH_ITER
			  : st == BETWEEN   ? rec == SCH_ITER || rec == REC_PEAK
					    : false;
		if (!ok) {
			gms_errf(err, "%s:%u:1: record '%s' out of place%s",
				 path, l.no, line,
				 st == META   ? " (meta comes second)"
				 : st == DONE ? " (after peak)"
					      : "");
			goto fail;
		}
		if (split(&l, rec, sp + 1, (size_t)(sp - line) + 2) < 0)
			goto fail;
		if (rec == REC_META) {
			if (read_meta(&l, log) < 0)
				goto fail;
			st = SETUP;
			continue;
		}
		if (rec == REC_PEAK) {
			if (get_u64(&l, "allocated", UINT64_MAX,
				    &log->peak_allocated) < 0 ||
			    get_u64(&l, "reserved", UINT64_MAX,
				    &log->peak_reserved) < 0)
				goto fail;
			st = DONE;
			continue;
		}
		struct sch_item it = {.kind = (enum sch_kind)rec, .iter = iter,
				      .tensor = SCH_NONE, .share = SCH_NONE,
				      .wait_ev = SCH_NONE,
				      .signal_ev = SCH_NONE, .name = "",
				      .algo = "", .line = l.no};
		if (parse_item(&l, log, &it) < 0)
			goto fail;
		if (rec == SCH_ITER || rec == SCH_END) {
			uint32_t i;
			if (get_u32(&l, "i", &i) < 0)
				goto fail;
			if ((int64_t)i != (rec == SCH_ITER ? iter + 1 : iter)) {
				bad(&l, 0, rec == SCH_ITER
						   ? "iterations must follow "
						     "one another from 0"
						   : "not the iteration begun");
				goto fail;
			}
			iter = (int)i;
			it.iter = iter;
			seq = 0;
			st = rec == SCH_ITER ? IN_ITER : BETWEEN;
		} else {
			if (it.seq != seq) {
				char m[64];
				snprintf(m, sizeof m, "expected %u", seq);
				bad(&l, key_of(&l, "seq"), m);
				goto fail;
			}
			seq++;
		}
		if (push_item(log, &it) < 0) {
			gms_errf(err, "%s: out of memory", path);
			goto fail;
		}
	}
	if (st != DONE) {
		gms_errf(err, "%s:%u:1: ends before its peak record (cut short?)",
			 path, l.no + 1);
		goto fail;
	}
	/* the kernels' tensor lists, in the id store in file order */
	size_t at = 0;
	for (size_t i = 0; i < log->n; i++)
		if (log->it[i].kind == SCH_KERNEL) {
			log->it[i].tensors =
				log->it[i].n_tensors ? log->ids + at : NULL;
			at += log->it[i].n_tensors;
		}
	return 0;
fail_fmt:
	gms_errf(err, "%s:1:1: not a schedule log (no 'gms-schedule' header)",
		 path);
fail:
	sch_free(log);
	return -1;
}

void sch_free(struct sch_log *log)
{
	free(log->it);
	free(log->strings);
	free(log->ids);
	memset(log, 0, sizeof *log);
}

/* ---- consistency -------------------------------------------------------------- */

/* A device block the check tracks. */
struct chk_block {
	uint64_t addr, bytes; /* where, how large */
	sim_time_t used;      /* latest end of a kernel or copy using it */
	bool live;	      /* not freed */
};

struct chk {
	const struct sch_log *log; /* what is checked */
	gms_err *err;		   /* where the problem goes */
	struct chk_block *b;	   /* every block allocated */
	size_t n_b, cap_b;	   /* count, capacity */
	size_t *of;		   /* per tensor id: its block + 1, 0 none */
	uint32_t n_t;		   /* tensor ids covered by `of` */
	uint8_t *sig;		   /* per event: signalled this iteration */
	uint32_t n_ev;		   /* events covered by `sig` */
};

static int chk_fail(struct chk *c, const struct sch_item *it,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int chk_fail(struct chk *c, const struct sch_item *it,
		    const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char where[96];
	if (it->iter < 0)
		snprintf(where, sizeof where, "set-up");
	else
		snprintf(where, sizeof where, "iteration %d", it->iter);
	return gms_errf(c->err, "line %u: %s, seq %u (%s): %s", it->line,
			where, it->seq, sch_kind_names[it->kind], msg);
}

/* The live block tensor t (SCH_NONE: the workspace at addr) is in, or
 * NULL. */
static struct chk_block *chk_find(struct chk *c, uint32_t t, uint64_t addr)
{
	if (t == SCH_NONE) {
		for (size_t i = c->n_b; i-- > 0;)
			if (c->b[i].live && c->b[i].addr == addr)
				return &c->b[i];
		return NULL;
	}
	if (t >= c->n_t || !c->of[t] || !c->b[c->of[t] - 1].live)
		return NULL;
	return &c->b[c->of[t] - 1];
}

static int chk_use(struct chk *c, const struct sch_item *it, uint32_t t)
{
	struct chk_block *b = chk_find(c, t, 0);
	if (!b)
		return chk_fail(c, it, "tensor %u is not allocated", t);
	if (b->used < it->end)
		b->used = it->end;
	return 0;
}

static int chk_signal(struct chk *c, const struct sch_item *it, uint32_t ev)
{
	if (ev == SCH_NONE)
		return 0;
	if (c->sig[ev])
		return chk_fail(c, it, "event %u signalled twice", ev);
	c->sig[ev] = 1;
	return 0;
}

static int chk_wait(struct chk *c, const struct sch_item *it, uint32_t ev)
{
	if (ev != SCH_NONE && !c->sig[ev])
		return chk_fail(c, it,
				"waits for event %u, which nothing before it "
				"in the iteration signals",
				ev);
	return 0;
}

static int chk_alloc(struct chk *c, const struct sch_item *it, bool arena)
{
	if (it->tensor != SCH_NONE && chk_find(c, it->tensor, 0))
		return chk_fail(c, it, "tensor %u is already allocated",
				it->tensor);
	size_t k;
	if (it->share != SCH_NONE) {
		struct chk_block *s = chk_find(c, it->share, 0);
		if (!s || s->addr != it->addr)
			return chk_fail(c, it,
					"shares the block of tensor %u, which "
					"is not allocated at %llu",
					it->share,
					(unsigned long long)it->addr);
		k = (size_t)(s - c->b);
	} else {
		/* arena places nothing: every block is at 0 */
		for (size_t i = 0; i < c->n_b && !arena; i++) {
			const struct chk_block *b = &c->b[i];
			if (b->live && it->addr < b->addr + b->bytes &&
			    b->addr < it->addr + it->size)
				return chk_fail(
					c, it,
					"[%llu, %llu) overlaps a live block "
					"[%llu, %llu)",
					(unsigned long long)it->addr,
					(unsigned long long)(it->addr + it->size),
					(unsigned long long)b->addr,
					(unsigned long long)(b->addr + b->bytes));
		}
		if (c->n_b == c->cap_b) {
			size_t cap = c->cap_b ? 2 * c->cap_b : 256;
			struct chk_block *v = realloc(c->b, cap * sizeof *v);
			if (!v)
				return gms_errf(c->err, "out of memory");
			c->b = v;
			c->cap_b = cap;
		}
		k = c->n_b++;
		c->b[k] = (struct chk_block){it->addr, it->size, 0, true};
	}
	if (it->tensor != SCH_NONE)
		c->of[it->tensor] = k + 1;
	return 0;
}

static int chk_free(struct chk *c, const struct sch_item *it)
{
	struct chk_block *b = chk_find(c, it->tensor, it->addr);
	if (!b || b->addr != it->addr)
		return chk_fail(c, it, "frees %s at %llu, not allocated there",
				it->tensor == SCH_NONE ? "a workspace"
						       : "a tensor",
				(unsigned long long)it->addr);
	if (b->used > it->t)
		return chk_fail(c, it,
				"freed at %lld while a kernel or copy uses it "
				"until %lld",
				(long long)it->t, (long long)b->used);
	b->live = false;
	return 0;
}

/* Queue items in FIFO order, without overlap. */
static int chk_queue(struct chk *c, const struct sch_item *it,
		     sim_time_t *busy_until)
{
	if (it->start < it->t)
		return chk_fail(c, it, "starts at %lld, before it was issued "
				       "at %lld",
				(long long)it->start, (long long)it->t);
	if (it->start < *busy_until)
		return chk_fail(c, it,
				"starts at %lld on queue %s, before the item "
				"issued before it ends at %lld",
				(long long)it->start, q_names[it->q],
				(long long)*busy_until);
	*busy_until = it->end;
	return 0;
}

static int chk_item(struct chk *c, const struct sch_item *it,
		    sim_time_t *busy, bool arena)
{
	enum eng_q q = it->q;
	if (q == ENG_D2H && c->log->shared_copy)
		q = ENG_H2D; /* one copy engine */
	switch (it->kind) {
	case SCH_KERNEL:
	case SCH_COPY:
	case SCH_CPU:
		if (chk_queue(c, it, &busy[q]) < 0 ||
		    chk_wait(c, it, it->wait_ev) < 0 ||
		    chk_signal(c, it, it->signal_ev) < 0)
			return -1;
		if (it->kind == SCH_COPY)
			return chk_use(c, it, it->tensor);
		for (uint32_t i = 0; it->kind == SCH_KERNEL && i < it->n_tensors;
		     i++)
			if (chk_use(c, it, it->tensors[i]) < 0)
				return -1;
		return 0;
	case SCH_WAIT:
	case SCH_HOSTWAIT:
		if (it->kind == SCH_HOSTWAIT && it->end < it->t)
			return chk_fail(c, it, "ends before it began");
		return chk_wait(c, it, it->wait_ev);
	case SCH_RECORD:
	case SCH_DRIVER:
		return chk_signal(c, it, it->signal_ev);
	case SCH_ALLOC:
		return chk_alloc(c, it, arena);
	case SCH_FREE:
		return chk_free(c, it);
	default:
		return 0;
	}
}

int sch_check(const struct sch_log *log, gms_err *err)
{
	struct chk c = {.log = log, .err = err};
	for (size_t i = 0; i < log->n; i++) {
		const struct sch_item *it = &log->it[i];
		uint32_t ids[3] = {it->tensor, it->share, SCH_NONE};
		for (int k = 0; k < 2; k++)
			if (ids[k] != SCH_NONE && ids[k] + 1 > c.n_t)
				c.n_t = ids[k] + 1;
		for (uint32_t k = 0; k < it->n_tensors; k++)
			if (it->tensors[k] + 1 > c.n_t)
				c.n_t = it->tensors[k] + 1;
		uint32_t evs[2] = {it->wait_ev, it->signal_ev};
		for (int k = 0; k < 2; k++)
			if (evs[k] != SCH_NONE && evs[k] + 1 > c.n_ev)
				c.n_ev = evs[k] + 1;
	}
	c.of = calloc((size_t)c.n_t + 1, sizeof *c.of);
	c.sig = calloc((size_t)c.n_ev + 1, 1);
	int rc = 0;
	if (!c.of || !c.sig)
		rc = gms_errf(err, "out of memory");
	bool arena = strcmp(log->allocator, "arena") == 0;
	sim_time_t busy[ENG_Q_COUNT] = {0};
	/* the iteration's start and the latest end of the work queued in
	 * it: its `end` may not come before (an iteration that ended before
	 * its kernels was accepted, issue 38) */
	sim_time_t begun = 0, last = 0;
	for (size_t i = 0; i < log->n && rc == 0; i++) {
		const struct sch_item *it = &log->it[i];
		if (it->kind == SCH_ITER) {
			memset(c.sig, 0, (size_t)c.n_ev + 1);
			for (int q = 0; q < ENG_Q_COUNT; q++)
				busy[q] = it->start;
			begun = last = it->start;
			continue;
		}
		if (it->kind == SCH_END) {
			if (it->end < last - begun)
				rc = chk_fail(&c, it, "the iteration ends before "
						      "the work queued in it");
			continue;
		}
		rc = chk_item(&c, it, busy, arena);
		if ((it->kind == SCH_KERNEL || it->kind == SCH_COPY ||
		     it->kind == SCH_CPU) &&
		    it->end > last)
			last = it->end;
	}
	free(c.b);
	free(c.of);
	free(c.sig);
	return rc;
}
