/* msr.c - the measurement CSV of validation mode: a strict reader and the
 * replayer's writer (format in msr.h). */
#include "msr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const msr_kind_names[] = {"iter", "kernel", "copy", NULL};
const char *const msr_mode_names[] = {"real", "spin", NULL};
const char *const msr_alloc_names[] = {"arena", "async", NULL};

static const char magic[] = "# gms-measure";
static const char header[] = "iter,seq,kind,start_ns,end_ns";
static const char *const col_names[] = {"iter", "seq", "kind", "start_ns",
					"end_ns"};
enum { N_COLS = 5 };

void msr_free(struct msr *m)
{
	free(m->row);
	memset(m, 0, sizeof *m);
}

/* A name the file can hold: non-empty, no blanks, commas or controls. */
static bool plain_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == ',' || *s == 0x7f)
			return false;
	return true;
}

int msr_add(struct msr *m, int iter, uint32_t seq, enum msr_kind kind,
	    sim_time_t start, sim_time_t end, gms_err *err)
{
	if (iter < 0 || (int)kind < 0 || kind >= MSR_KIND_COUNT ||
	    start < 0 || end < start || (kind == MSR_ITER && (seq || start)))
		return gms_errf(err, "msr_add: bad row (iter %d seq %u kind "
				     "%d start %lld end %lld)",
				iter, seq, (int)kind, (long long)start,
				(long long)end);
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct msr_row *r = realloc(m->row, cap * sizeof *r);
		if (!r)
			return gms_errf(err, "out of memory");
		m->row = r;
		m->cap = cap;
	}
	m->row[m->n++] = (struct msr_row){.iter = iter, .seq = seq,
					  .kind = kind, .start = start,
					  .end = end};
	return 0;
}

int msr_init(struct msr *m, const char *device, enum msr_mode mode,
	     enum msr_alloc alloc, gms_err *err)
{
	memset(m, 0, sizeof *m);
	if (!plain_name(device) || strlen(device) >= sizeof m->device)
		return gms_errf(err, "msr_init: device '%s' must be 1 to %zu "
				     "characters without blanks or commas",
				device, sizeof m->device - 1);
	if ((int)mode < 0 || mode >= MSR_MODE_COUNT || (int)alloc < 0 ||
	    alloc >= MSR_ALLOC_COUNT)
		return gms_errf(err, "msr_init: bad mode or alloc");
	snprintf(m->device, sizeof m->device, "%s", device);
	m->mode = mode;
	m->alloc = alloc;
	return 0;
}

/* Rows in (iter, iter row first, seq) order: the writer's order and the
 * reader's duplicate check. */
static int by_key(const void *a, const void *b)
{
	const struct msr_row *x = a, *y = b;
	if (x->iter != y->iter)
		return x->iter < y->iter ? -1 : 1;
	bool xi = x->kind == MSR_ITER, yi = y->kind == MSR_ITER;
	if (xi != yi)
		return xi ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/* The rows in by_key order, in a copy the caller frees; NULL on error. */
static struct msr_row *sorted_rows(const struct msr *m, gms_err *err)
{
	struct msr_row *s = malloc((m->n ? m->n : 1) * sizeof *s);
	if (!s) {
		gms_errf(err, "out of memory");
		return NULL;
	}
	if (m->n)
		memcpy(s, m->row, m->n * sizeof *s);
	qsort(s, m->n, sizeof *s, by_key);
	return s;
}

int msr_write(const struct msr *m, const char *path, gms_err *err)
{
	struct msr_row *s = sorted_rows(m, err);
	if (!s)
		return -1;
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0) {
		free(s);
		return -1;
	}
	fprintf(o.f, "%s %d\n# device=%s mode=%s alloc=%s peak_bytes=%llu\n%s\n",
		magic, MSR_VERSION, m->device, msr_mode_names[m->mode],
		msr_alloc_names[m->alloc], (unsigned long long)m->peak_bytes,
		header);
	for (size_t i = 0; i < m->n; i++)
		fprintf(o.f, "%d,%u,%s,%lld,%lld\n", s[i].iter, s[i].seq,
			msr_kind_names[s[i].kind], (long long)s[i].start,
			(long long)s[i].end);
	free(s);
	return gms_out_commit(&o, err);
}

/* ---- reading ------------------------------------------------------------ */

/* Where the reader is, for messages. */
struct pos {
	const char *path; /* the file */
	long line;	  /* 1-based */
};

/* An unsigned decimal integer field (digits only) up to max. */
static int uint_field(const struct pos *p, const char *s, size_t col,
		      const char *what, uint64_t max, uint64_t *out,
		      gms_err *err)
{
	uint64_t v = 0;
	if (!*s)
		return gms_errf(err, "%s:%ld:%zu: %s: empty", p->path, p->line,
				col, what);
	for (const char *c = s; *c; c++) {
		if (*c < '0' || *c > '9')
			return gms_errf(err, "%s:%ld:%zu: %s: '%s' is not a "
					     "non-negative integer",
					p->path, p->line, col, what, s);
		unsigned d = (unsigned)(*c - '0');
		if (v > (max - d) / 10)
			return gms_errf(err, "%s:%ld:%zu: %s: %s is out of "
					     "range (at most %llu)",
					p->path, p->line, col, what, s,
					(unsigned long long)max);
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Line 2: "# device=NAME mode=M alloc=A peak_bytes=N". */
static int parse_meta(const struct pos *p, char *s, struct msr *m,
		      gms_err *err)
{
	static const char *const keys[] = {"device", "mode", "alloc",
					   "peak_bytes", NULL};
	if (strncmp(s, "# ", 2) != 0)
		return gms_errf(err, "%s:%ld:1: expected '# device=NAME "
				     "mode=real|spin alloc=arena|async "
				     "peak_bytes=N'",
				p->path, p->line);
	long seen[4] = {0};
	size_t end_col = strlen(s) + 1; /* past the line, for missing keys */
	char known[128];
	char *tok = s + 2;
	for (;;) {
		size_t col = (size_t)(tok - s) + 1;
		char *sp = strchr(tok, ' ');
		if (sp)
			*sp = 0;
		char *eq = strchr(tok, '=');
		if (!eq)
			return gms_errf(err, "%s:%ld:%zu: '%s' is not "
					     "key=value",
					p->path, p->line, col, tok);
		*eq = 0;
		const char *v = eq + 1;
		size_t vcol = col + (size_t)(v - tok);
		int k = gms_lookup(keys, tok, known, sizeof known);
		if (k < 0)
			return gms_errf(err, "%s:%ld:%zu: unknown key '%s' "
					     "(known: %s)",
					p->path, p->line, col, tok, known);
		if (seen[k])
			return gms_errf(err, "%s:%ld:%zu: key '%s': given "
					     "twice",
					p->path, p->line, col, tok);
		seen[k] = 1;
		int i;
		uint64_t u;
		switch (k) {
		case 0:
			if (!plain_name(v) || strlen(v) >= sizeof m->device)
				return gms_errf(err, "%s:%ld:%zu: key 'device': "
						     "'%s' must be 1 to %zu "
						     "characters without commas",
						p->path, p->line, vcol, v,
						sizeof m->device - 1);
			snprintf(m->device, sizeof m->device, "%s", v);
			break;
		case 1:
		case 2: {
			const char *const *l = k == 1 ? msr_mode_names
						      : msr_alloc_names;
			if ((i = gms_lookup(l, v, known, sizeof known)) < 0)
				return gms_errf(err, "%s:%ld:%zu: key '%s': "
						     "'%s' is not one of %s",
						p->path, p->line, vcol, tok, v,
						known);
			if (k == 1)
				m->mode = (enum msr_mode)i;
			else
				m->alloc = (enum msr_alloc)i;
			break;
		}
		default:
			if (uint_field(p, v, vcol, "key 'peak_bytes'",
				       UINT64_MAX, &u, err) < 0)
				return -1;
			m->peak_bytes = u;
		}
		if (!sp)
			break;
		tok = sp + 1;
	}
	for (int k = 0; keys[k]; k++)
		if (!seen[k])
			return gms_errf(err, "%s:%ld:%zu: key '%s' is missing",
					p->path, p->line, end_col, keys[k]);
	return 0;
}

/* A data row of five fields. */
static int parse_row(const struct pos *p, char *s, struct msr_row *r,
		     gms_err *err)
{
	char *f[N_COLS];
	size_t col[N_COLS];
	int n = 0;
	char *c = s;
	for (;;) {
		if (n == N_COLS)
			return gms_errf(err, "%s:%ld:%zu: more than %d columns",
					p->path, p->line, (size_t)(c - s) + 1,
					N_COLS);
		f[n] = c;
		col[n++] = (size_t)(c - s) + 1;
		char *comma = strchr(c, ',');
		if (!comma)
			break;
		*comma = 0;
		c = comma + 1;
	}
	if (n < N_COLS)
		return gms_errf(err, "%s:%ld:%zu: %d columns, expected %d (%s)",
				p->path, p->line, strlen(f[n - 1]) + col[n - 1],
				n, N_COLS, header);
	char what[64], known[64];
	uint64_t v[N_COLS] = {0};
	const uint64_t max[N_COLS] = {INT32_MAX, UINT32_MAX, 0, INT64_MAX,
				      INT64_MAX};
	for (int i = 0; i < N_COLS; i++) {
		if (i == 2)
			continue;
		snprintf(what, sizeof what, "column '%s'", col_names[i]);
		if (uint_field(p, f[i], col[i], what, max[i], &v[i], err) < 0)
			return -1;
	}
	int k = gms_lookup(msr_kind_names, f[2], known, sizeof known);
	if (k < 0)
		return gms_errf(err, "%s:%ld:%zu: column 'kind': '%s' is not "
				     "one of %s",
				p->path, p->line, col[2], f[2], known);
	*r = (struct msr_row){.iter = (int)v[0], .seq = (uint32_t)v[1],
			      .kind = (enum msr_kind)k,
			      .start = (sim_time_t)v[3],
			      .end = (sim_time_t)v[4], .line = p->line};
	if (r->end < r->start)
		return gms_errf(err, "%s:%ld:%zu: column 'end_ns': %lld is "
				     "before start_ns %lld",
				p->path, p->line, col[4], (long long)r->end,
				(long long)r->start);
	if (k == MSR_ITER && r->seq != 0)
		return gms_errf(err, "%s:%ld:%zu: column 'seq': an iter row "
				     "has seq 0, not %u",
				p->path, p->line, col[1], r->seq);
	if (k == MSR_ITER && r->start != 0)
		return gms_errf(err, "%s:%ld:%zu: column 'start_ns': an iter "
				     "row starts at 0 (times are relative to "
				     "it), not %lld",
				p->path, p->line, col[3], (long long)r->start);
	return 0;
}

/* After the rows: no repeated (iter, class, seq); each iteration with
 * kernel or copy rows has an iter row. The first offence in file order
 * is reported. */
static int check_rows(const char *path, const struct msr *m, gms_err *err)
{
	struct msr_row *s = sorted_rows(m, err);
	if (!s)
		return -1;
	long bad = 0, first = 0; /* offending line, and the line it repeats */
	int bad_iter = -1;	 /* an iteration without an iter row */
	for (size_t i = 0; i < m->n; i++) {
		bool it = s[i].kind == MSR_ITER;
		bool start = i == 0 || s[i - 1].iter != s[i].iter;
		if (!start && (s[i - 1].kind == MSR_ITER) == it &&
		    s[i - 1].seq == s[i].seq) {
			if (!bad || s[i].line < bad) {
				bad = s[i].line;
				first = s[i - 1].line;
				bad_iter = -1;
			}
		} else if (start && !it && (!bad || s[i].line < bad)) {
			/* sorted iter rows first: this iteration has none;
			 * its first row in file order is the offence */
			long l = s[i].line;
			for (size_t j = i; j < m->n && s[j].iter == s[i].iter;
			     j++)
				if (s[j].line < l)
					l = s[j].line;
			if (!bad || l < bad) {
				bad = l;
				bad_iter = s[i].iter;
			}
		}
	}
	free(s);
	if (!bad)
		return 0;
	if (bad_iter >= 0)
		return gms_errf(err, "%s:%ld:1: iteration %d has kernel or "
				     "copy rows but no iter row",
				path, bad, bad_iter);
	return gms_errf(err, "%s:%ld:1: a second row for the same (iter, "
			     "seq, kind) as line %ld",
			path, bad, first);
}

int msr_read(const char *path, struct msr *m, gms_err *err)
{
	memset(m, 0, sizeof *m);
	FILE *f = gms_fopen_in(path, "r", err);
	if (!f)
		return -1;
	struct pos p = {.path = path};
	struct gms_in in = {.f = f, .path = path,
			    .lim = {MSR_MAX_BYTES, GMS_MAX_LINE,
				    "a measurement CSV"}};
	char *buf = NULL;
	size_t cap = 0;
	ptrdiff_t len;
	int rc = 0;
	while ((len = gms_in_line(&in, &buf, &cap, err)) >= 0) {
		p.line++;
		if (len && buf[len - 1] == '\n')
			buf[--len] = 0;
		if (len && buf[len - 1] == '\r')
			buf[--len] = 0;
		if (strlen(buf) != (size_t)len) {
			rc = gms_errf(err, "%s:%ld:%zu: a NUL byte", path,
				      p.line, strlen(buf) + 1);
			break;
		}
		if (p.line == 1) {
			size_t ml = sizeof magic - 1;
			if (strncmp(buf, magic, ml) != 0 || buf[ml] != ' ') {
				rc = gms_errf(err, "%s:1:1: not a measurement "
						   "file (expected '%s %d')",
					      path, magic, MSR_VERSION);
				break;
			}
			char want[8];
			snprintf(want, sizeof want, "%d", MSR_VERSION);
			if (strcmp(buf + ml + 1, want) != 0) {
				rc = gms_errf(err, "%s:1:%zu: version '%s' "
						   "is not supported (this "
						   "reader: %d)",
					      path, ml + 2, buf + ml + 1,
					      MSR_VERSION);
				break;
			}
			continue;
		}
		if (p.line == 2) {
			if ((rc = parse_meta(&p, buf, m, err)) < 0)
				break;
			continue;
		}
		if (p.line == 3) {
			if (strcmp(buf, header) != 0) {
				rc = gms_errf(err, "%s:3:1: expected the "
						   "header '%s'",
					      path, header);
				break;
			}
			continue;
		}
		if (!len) {
			rc = gms_errf(err, "%s:%ld:1: an empty line", path,
				      p.line);
			break;
		}
		struct msr_row r = {0};
		if ((rc = parse_row(&p, buf, &r, err)) < 0)
			break;
		if ((rc = msr_add(m, r.iter, r.seq, r.kind, r.start, r.end,
				  err)) < 0)
			break;
		m->row[m->n - 1].line = r.line;
	}
	free(buf);
	if (len == -2)
		rc = -1; /* gms_in_line said why */
	fclose(f);
	if (rc == 0 && p.line < 3)
		rc = gms_errf(err, "%s:%ld:1: the file ends before the "
				   "header (line 3)",
			      path, p.line + 1);
	if (rc == 0)
		rc = check_rows(path, m, err);
	if (rc < 0)
		msr_free(m);
	return rc;
}
