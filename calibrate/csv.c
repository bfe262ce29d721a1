/*
 * csv.c - reading the calibration measurement CSV (format in calib.h).
 *
 * The reader is strict: the magic first line, metadata, the exact header,
 * then rows of nine columns whose bench and kind are known and whose
 * numbers are numbers in range. The first problem stops the read with
 * "FILE:LINE: column 'x': problem", so a truncated or hand-edited file
 * never yields a silently wrong profile.
 */
#include "calib.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const bench_names[CB_COUNT + 1] = {
	"copy", "alloc", "launch", "matmul", "conv", "memory", "gemm", NULL};

static const char *const kinds_copy[] = {
	"h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable",
	"h2d_bidir",  "d2h_bidir",    NULL};
static const char *const kinds_alloc[] = {"malloc", "free", "host_alloc",
					  "host_free", NULL};
static const char *const kinds_launch[] = {"empty", NULL};
static const char *const kinds_matmul[] = {"fp32", "tf32", "fp16", NULL};
static const char *const kinds_conv[] = {"fwd", "bwd_data", "bwd_filter",
					 NULL};
static const char *const kinds_memory[] = {"elementwise", "batchnorm",
					   "pool", NULL};
static const char *const *const bench_kinds[CB_COUNT] = {
	kinds_copy, kinds_alloc, kinds_launch,
	kinds_matmul, kinds_conv, kinds_memory, kinds_matmul};

const char *cal_bench_name(enum cal_bench b)
{
	return (int)b >= 0 && b < CB_COUNT ? bench_names[b] : "?";
}

const char *const *cal_kinds(enum cal_bench b)
{
	return (int)b >= 0 && b < CB_COUNT ? bench_kinds[b] : NULL;
}

/* Strip trailing newline, carriage return and spaces. */
static void chomp(char *s)
{
	size_t l = strlen(s);
	while (l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' '))
		s[--l] = 0;
}

static const char *const col_names[] = {
	"bench", "kind", "param", "size_bytes", "flops",
	"repeats", "median_ns", "p10_ns", "p90_ns"};
enum { N_COLS = sizeof col_names / sizeof *col_names };

/* A number column: finite, >= 0 (> 0 when positive). */
static int num_col(const struct cal_csv *c, long line, int col,
		   const char *s, bool positive, double *out, gms_err *err)
{
	if (gms_parse_double(s, out) < 0)
		return gms_errf(err, "%s:%ld: column '%s': '%s' is not a "
				     "number",
				c->path, line, col_names[col], s);
	if (positive ? !(*out > 0) : !(*out >= 0))
		return gms_errf(err, "%s:%ld: column '%s': %s must be %s",
				c->path, line, col_names[col], s,
				positive ? "> 0" : ">= 0");
	return 0;
}

/* Parse one data line (modified in place) into r. */
static int parse_row(const struct cal_csv *c, long line, char *s,
		     struct cal_row *r, gms_err *err)
{
	char *f[N_COLS + 1];
	int n = 0;
	f[n++] = s;
	for (char *p = s; *p; p++)
		if (*p == ',') {
			*p = 0;
			if (n <= N_COLS)
				f[n] = p + 1;
			n++;
		}
	if (n != N_COLS)
		return gms_errf(err,
				"%s:%ld: %d columns, expected %d (%s)",
				c->path, line, n, N_COLS, CAL_CSV_HEADER);
	char known[256];
	memset(r, 0, sizeof *r);
	r->line = line;
	int b = gms_lookup(bench_names, f[0], known, sizeof known);
	if (b < 0)
		return gms_errf(err, "%s:%ld: column 'bench': unknown '%s' "
				     "(known: %s)",
				c->path, line, f[0], known);
	r->bench = (enum cal_bench)b;
	r->kind = gms_lookup(bench_kinds[b], f[1], known, sizeof known);
	if (r->kind < 0)
		return gms_errf(err, "%s:%ld: column 'kind': unknown '%s' for "
				     "bench %s (known: %s)",
				c->path, line, f[1], f[0], known);
	if (strlen(f[2]) >= sizeof r->param)
		return gms_errf(err, "%s:%ld: column 'param': longer than %zu "
				     "characters",
				c->path, line, sizeof r->param - 1);
	memcpy(r->param, f[2], strlen(f[2]) + 1);
	double rep;
	if (num_col(c, line, 3, f[3], false, &r->size_bytes, err) < 0 ||
	    num_col(c, line, 4, f[4], false, &r->flops, err) < 0 ||
	    num_col(c, line, 5, f[5], true, &rep, err) < 0 ||
	    num_col(c, line, 6, f[6], true, &r->median_ns, err) < 0 ||
	    num_col(c, line, 7, f[7], true, &r->p10_ns, err) < 0 ||
	    num_col(c, line, 8, f[8], true, &r->p90_ns, err) < 0)
		return -1;
	/* range first: converting a double outside int64_t's range is
	 * undefined (clang's UBSan reports it); 0x1p63 is 2^63, exact */
	if (!(rep < 0x1p63) || rep != floor(rep))
		return gms_errf(err, "%s:%ld: column 'repeats': %s is not an "
				     "integer (below 2^63)",
				c->path, line, f[5]);
	r->repeats = (int64_t)rep;
	if (r->p10_ns > r->median_ns || r->median_ns > r->p90_ns)
		return gms_errf(err, "%s:%ld: column 'median_ns': %s is not "
				     "between p10_ns (%s) and p90_ns (%s)",
				c->path, line, f[6], f[7], f[8]);
	return 0;
}

/* "# key: value" into m; returns 0, or 1 when the comment is no
 * key: value pair. */
static int parse_meta(const char *s, struct cal_meta *m)
{
	s++;
	while (*s == ' ')
		s++;
	const char *colon = strchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof m->key)
		return 1;
	for (const char *p = s; p < colon; p++)
		if (*p == ' ')
			return 1;
	memcpy(m->key, s, (size_t)(colon - s));
	m->key[colon - s] = 0;
	const char *v = colon + 1;
	while (*v == ' ')
		v++;
	snprintf(m->value, sizeof m->value, "%s", v);
	return 0;
}

/* Append to a growing array. */
static int grow(void **a, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? 2 * *cap : 64;
	void *na = realloc(*a, nc * size);
	if (!na)
		return -1;
	*a = na;
	*cap = nc;
	return 0;
}

int cal_csv_read(struct cal_csv *c, const char *path, gms_err *err)
{
	memset(c, 0, sizeof *c);
	snprintf(c->path, sizeof c->path, "%s", path);
	FILE *f = gms_fopen_in(path, "r", err);
	if (!f)
		return -1;
	char *s = NULL;
	size_t sn = 0, cap_rows = 0, cap_meta = 0;
	long line = 0;
	bool header = false;
	int rc = 0;
	struct gms_in in = {.f = f, .path = path,
			    .lim = {CAL_CSV_MAX_BYTES, GMS_MAX_LINE,
				    "a calibration CSV"}};
	ptrdiff_t got;
	while ((got = gms_in_line(&in, &s, &sn, err)) >= 0) {
		line++;
		chomp(s);
		if (line == 1) {
			if (strcmp(s, CAL_CSV_MAGIC) != 0) {
				rc = gms_errf(err,
					      "%s:1: not a calibration CSV "
					      "(the first line must be '%s')",
					      path, CAL_CSV_MAGIC);
				break;
			}
			continue;
		}
		if (!s[0])
			continue;
		if (s[0] == '#') {
			struct cal_meta m;
			if (header || parse_meta(s, &m))
				continue;
			if (grow((void **)&c->meta, c->n_meta, &cap_meta,
				 sizeof *c->meta) < 0) {
				rc = gms_errf(err, "%s: out of memory", path);
				break;
			}
			c->meta[c->n_meta++] = m;
			continue;
		}
		if (!header) {
			if (strcmp(s, CAL_CSV_HEADER) != 0) {
				rc = gms_errf(err,
					      "%s:%ld: expected the header "
					      "'%s'",
					      path, line, CAL_CSV_HEADER);
				break;
			}
			header = true;
			continue;
		}
		if (grow((void **)&c->rows, c->n_rows, &cap_rows,
			 sizeof *c->rows) < 0) {
			rc = gms_errf(err, "%s: out of memory", path);
			break;
		}
		if (parse_row(c, line, s, &c->rows[c->n_rows], err) < 0) {
			rc = -1;
			break;
		}
		c->n_rows++;
	}
	if (got == -2)
		rc = -1; /* gms_in_line said why */
	if (rc == 0 && line == 0)
		rc = gms_errf(err, "%s:1: empty file", path);
	else if (rc == 0 && !header)
		rc = gms_errf(err, "%s:%ld: end of file before the header "
				   "'%s'",
			      path, line, CAL_CSV_HEADER);
	c->lines = line;
	free(s);
	fclose(f);
	if (rc < 0)
		cal_csv_free(c);
	return rc;
}

void cal_csv_free(struct cal_csv *c)
{
	free(c->rows);
	free(c->meta);
	c->rows = NULL;
	c->meta = NULL;
	c->n_rows = c->n_meta = 0;
}

const char *cal_meta_get(const struct cal_csv *c, const char *key)
{
	for (size_t i = 0; i < c->n_meta; i++)
		if (strcmp(c->meta[i].key, key) == 0)
			return c->meta[i].value;
	return NULL;
}

int cal_param_str(const char *param, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	const char *p = param;
	while (p && *p) {
		const char *end = strchr(p, ';');
		size_t l = end ? (size_t)(end - p) : strlen(p);
		if (l > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			size_t vl = l - kl - 1;
			if (vl >= n)
				vl = n - 1;
			memcpy(buf, p + kl + 1, vl);
			buf[vl] = 0;
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

int cal_param_int(const char *param, const char *key, int64_t *out)
{
	char buf[32];
	*out = 0;
	if (cal_param_str(param, key, buf, sizeof buf) < 0 ||
	    gms_parse_int(buf, out) < 0)
		return -1;
	return 0;
}
