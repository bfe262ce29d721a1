/* trace.c - record the simulated timeline; write Chrome trace JSON and a
 * memory table. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

static void push(struct tr_rec *r, const struct tr_event *e)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct tr_event *ev = realloc(r->ev, cap * sizeof *ev);
		if (!ev) {
			r->oom = true;
			return;
		}
		r->ev = ev;
		r->cap = cap;
	}
	r->ev[r->n++] = *e;
}

static void on_span(void *obj, enum eng_q q, const struct eng_item *it,
		    sim_time_t start, sim_time_t end)
{
	struct tr_event e = {.t0 = start, .t1 = end, .id = it->tag,
			     .what = TR_SPAN, .q = (uint8_t)q,
			     .a = it->bytes, .flag = it->kind};
	push(obj, &e);
}

/* The host thread launched op's kernel (its own track, "host thread"). */
static void on_host(void *obj, uint32_t op, sim_time_t start, sim_time_t end)
{
	struct tr_event e = {.t0 = start, .t1 = end, .id = op,
			     .what = TR_HOST};
	push(obj, &e);
}

static void on_mark(void *obj, enum ex_mark what, uint32_t t, sim_time_t when)
{
	struct tr_event e = {.t0 = when, .t1 = when, .id = t, .what = TR_MARK,
			     .flag = (uint8_t)what};
	push(obj, &e);
}

/* Room for one more memory breakdown; false when out of memory. */
static bool kinds_room(struct tr_rec *r)
{
	if (r->n_kinds < r->cap_kinds)
		return true;
	size_t cap = r->cap_kinds ? 2 * r->cap_kinds : 256;
	struct tr_kinds *k = cap - 1 <= UINT32_MAX
				     ? realloc(r->kinds, cap * sizeof *k)
				     : NULL; /* ids are 32-bit */
	if (!k) {
		r->oom = true;
		return false;
	}
	r->kinds = k;
	r->cap_kinds = cap;
	return true;
}

struct tr_kinds *tr_kinds_add(struct tr_rec *r, struct tr_event *e)
{
	if (!kinds_room(r))
		return NULL;
	e->id = (uint32_t)r->n_kinds;
	struct tr_kinds *k = &r->kinds[r->n_kinds++];
	memset(k, 0, sizeof *k);
	return k;
}

static void on_mem(void *obj, sim_time_t when, const struct ex_mem_sample *s)
{
	struct tr_rec *r = obj;
	struct tr_event *e = NULL;
	/* several changes at one instant: keep the last */
	if (r->n && r->ev[r->n - 1].what == TR_MEM &&
	    r->ev[r->n - 1].t0 == when) {
		e = &r->ev[r->n - 1];
	} else {
		struct tr_event n = {.t0 = when, .t1 = when, .what = TR_MEM};
		if (!tr_kinds_add(r, &n))
			return;
		push(r, &n);
		if (r->oom)
			return;
		e = &r->ev[r->n - 1];
	}
	e->a = s->allocated;
	e->b = s->reserved;
	struct tr_kinds *k = &r->kinds[e->id];
	memcpy(k->kind, s->kind, sizeof k->kind);
	k->host = s->host;
}

void tr_init(struct tr_rec *r, const struct wl_workload *wl)
{
	memset(r, 0, sizeof *r);
	r->wl = wl;
	/* without a workload nothing can be named: memory only */
	r->obs = (struct ex_observer){.obj = r, .span = wl ? on_span : NULL,
				      .mark = wl ? on_mark : NULL,
				      .host = wl ? on_host : NULL,
				      .mem = on_mem};
}

void tr_fini(struct tr_rec *r)
{
	free(r->ev);
	free(r->kinds);
	memset(r, 0, sizeof *r);
}

const struct ex_observer *tr_observer(struct tr_rec *r) { return &r->obs; }

/* Microseconds with nanosecond digits, as Chrome traces count time. */
void tr_json_us(FILE *f, sim_time_t ns)
{
	fprintf(f, "%lld.%03lld", (long long)(ns / 1000),
		(long long)(ns % 1000));
}

void tr_json_begin(FILE *f, const char *title)
{
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
	fputs("{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{"
	      "\"name\":",
	      f);
	gms_json_str(f, title);
	fputs("}}", f);
}

void tr_json_track(FILE *f, int pid, int tid, const char *name, int sort)
{
	fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":"
		   "\"thread_name\",\"args\":{\"name\":",
		pid, tid);
	gms_json_str(f, name);
	fprintf(f, "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":"
		   "\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
		pid, tid, sort);
}

static const char *const track_names[ENG_Q_COUNT] = {"compute", "H2D",
						      "D2H", "host CPU"};

int tr_write_chrome(const struct tr_rec *r, const char *path,
		    const char *title, gms_err *err)
{
	if (r->oom)
		return gms_errf(err, "%s: the trace ran out of memory", path);
	if (!r->wl)
		return gms_errf(err, "%s: a memory-only recording", path);
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	FILE *f = o.f;
	const struct wl_workload *wl = r->wl;
	tr_json_begin(f, title);
	for (int q = 0; q < ENG_Q_COUNT; q++)
		tr_json_track(f, 1, q + 1, track_names[q], q + 1);
	/* the framework's host thread, launching kernels (ex.c), when a
	 * launch costs it time (host.launch) */
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].what == TR_HOST) {
			tr_json_track(f, 1, ENG_Q_COUNT + 1, "host thread", 0);
			break;
		}
	for (size_t i = 0; i < r->n; i++) {
		const struct tr_event *e = &r->ev[i];
		fputs(",\n{", f);
		switch ((enum tr_what)e->what) {
		case TR_SPAN: {
			bool kernel = e->q == ENG_COMPUTE;
			const char *name = kernel ? wl->ops[e->id].name
						  : wl->tensors[e->id].name;
			fputs("\"ph\":\"X\",\"name\":", f);
			gms_json_str(f, name);
			fprintf(f, ",\"cat\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":",
				kernel		   ? (e->flag ? "recompute" : "kernel")
				: e->q == ENG_H2D  ? "swap_in"
				: e->q == ENG_D2H  ? "swap_out"
				: e->flag	   ? "decompress"
						   : "compress",
				e->q + 1);
			tr_json_us(f, e->t0);
			fputs(",\"dur\":", f);
			tr_json_us(f, e->t1 - e->t0);
			if (kernel)
				fprintf(f, ",\"args\":{\"type\":\"%s\","
					   "\"phase\":\"%s\"}",
					wl_op_type_name(wl->ops[e->id].type),
					wl_phase_name(wl->ops[e->id].phase));
			else
				fprintf(f, ",\"args\":{\"bytes\":%llu}",
					(unsigned long long)e->a);
			if (kernel && e->flag) {
				/* a recomputation also gets an instant event */
				fputs("},\n{\"ph\":\"i\",\"s\":\"t\",\"name\":"
				      "\"recompute\",\"cat\":\"recompute\","
				      "\"pid\":1,\"tid\":1,\"ts\":",
				      f);
				tr_json_us(f, e->t0);
				fputs(",\"args\":{\"op\":", f);
				gms_json_str(f, name);
				fputc('}', f);
			}
			break;
		}
		case TR_HOST:
			fputs("\"ph\":\"X\",\"name\":", f);
			gms_json_str(f, wl->ops[e->id].name);
			fprintf(f, ",\"cat\":\"launch\",\"pid\":1,\"tid\":%d,"
				   "\"ts\":",
				ENG_Q_COUNT + 1);
			tr_json_us(f, e->t0);
			fputs(",\"dur\":", f);
			tr_json_us(f, e->t1 - e->t0);
			break;
		case TR_MARK:
			fputs("\"ph\":\"i\",\"s\":\"t\",\"name\":", f);
			gms_json_str(f, ex_mark_names[e->flag]);
			/* evictions sit on the D2H track, drops on compute */
			fprintf(f, ",\"cat\":\"%s\",\"pid\":1,\"tid\":%d,\"ts\":",
				ex_mark_names[e->flag],
				e->flag == EX_MARK_EVICT ? ENG_D2H + 1
							 : ENG_COMPUTE + 1);
			tr_json_us(f, e->t0);
			fputs(",\"args\":{\"tensor\":", f);
			gms_json_str(f, wl->tensors[e->id].name);
			fprintf(f, ",\"bytes\":%llu}",
				(unsigned long long)wl->tensors[e->id].bytes);
			break;
		case TR_MEM:
			/* two counters, not one with two series: chrome://
			 * tracing would stack the series */
			fputs("\"ph\":\"C\",\"name\":\"device memory allocated\","
			      "\"pid\":1,\"ts\":",
			      f);
			tr_json_us(f, e->t0);
			fprintf(f, ",\"args\":{\"bytes\":%llu}},\n{",
				(unsigned long long)e->a);
			fputs("\"ph\":\"C\",\"name\":\"device memory reserved\","
			      "\"pid\":1,\"ts\":",
			      f);
			tr_json_us(f, e->t0);
			fprintf(f, ",\"args\":{\"bytes\":%llu}},\n{",
				(unsigned long long)e->b);
			/* one counter, a series a kind: the viewer stacks
			 * them, which is the point here (issue 34) */
			fputs("\"ph\":\"C\",\"name\":\"device memory by kind\","
			      "\"pid\":1,\"ts\":",
			      f);
			tr_json_us(f, e->t0);
			fputs(",\"args\":{", f);
			const struct tr_kinds *k = &r->kinds[e->id];
			for (int j = 0; j < WL_KIND_COUNT; j++)
				fprintf(f, "%s\"%s\":%llu", j ? "," : "",
					wl_kind_name((enum wl_kind)j),
					(unsigned long long)k->kind[j]);
			fputs("}},\n{\"ph\":\"C\",\"name\":\"host memory "
			      "holding tensors\",\"pid\":1,\"ts\":",
			      f);
			tr_json_us(f, e->t0);
			fprintf(f, ",\"args\":{\"bytes\":%llu}",
				(unsigned long long)k->host);
			break;
		}
		fputc('}', f);
	}
	fputs("\n]}\n", f);
	return gms_out_commit(&o, err);
}

int tr_write_mem(const struct tr_rec *r, const char *path, gms_err *err)
{
	if (r->oom)
		return gms_errf(err, "%s: the trace ran out of memory", path);
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	fputs("# time_ms allocated_MiB reserved_MiB\n", o.f);
	for (size_t i = 0; i < r->n; i++) {
		const struct tr_event *e = &r->ev[i];
		if (e->what == TR_MEM)
			fprintf(o.f, "%.6f %.6f %.6f\n", (double)e->t0 / 1e6,
				(double)e->a / (double)GMS_MIB,
				(double)e->b / (double)GMS_MIB);
	}
	return gms_out_commit(&o, err);
}
