/* common.c - error formatting and the number parsers of common.h. */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gms_errf(gms_err *e, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int gms_err_prefix(gms_err *e, const char *fmt, ...)
{
	if (e) {
		char pre[512];
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(pre, sizeof pre - 2, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -1;
		size_t lp = strlen(pre), lm = strlen(e->msg);
		memcpy(pre + lp, ": ", 3);
		lp += 2;
		if (lp + lm >= sizeof e->msg)
			lm = sizeof e->msg - lp - 1;
		memmove(e->msg + lp, e->msg, lm); /* make room, then prefix */
		memcpy(e->msg, pre, lp);
		e->msg[lp + lm] = '\0';
	}
	return -1;
}

sim_time_t sim_round_ns(double ns)
{
	if (!(ns > 0.0))
		return 0;
	if (ns > (double)SIM_TIME_LIMIT) /* 2^62 is exact in a double */
		return SIM_TIME_OVER;
	return (sim_time_t)llround(ns);
}

int gms_parse_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int gms_parse_int(const char *s, int64_t *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Split "12.5MiB" into number and unit; the unit is looked up in a table. */
struct unit {
	const char *name; /* suffix as written */
	double scale;     /* multiplier to the base unit */
};

static int parse_with_unit(const char *s, const struct unit *units,
			   double *out)
{
	char *end;
	if (!s || !*s)
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -1;
	while (*end == ' ')
		end++;
	if (!*end) {
		*out = v;
		return 0;
	}
	for (const struct unit *u = units; u->name; u++)
		if (strcmp(end, u->name) == 0) {
			*out = v * u->scale;
			return 0;
		}
	return -1;
}

int gms_parse_bytes(const char *s, uint64_t *out)
{
	static const struct unit units[] = {
		{"B", 1.0},	      {"KB", 1e3},	       {"MB", 1e6},
		{"GB", 1e9},	      {"TB", 1e12},	       {"KiB", 1024.0},
		{"MiB", 1048576.0},   {"GiB", 1073741824.0},
		{"TiB", 1099511627776.0}, {NULL, 0}};
	double v;
	if (s && s[0] == '-')
		return -1;
	if (parse_with_unit(s, units, &v) < 0 || v >= 1.8e19)
		return -1;
	if (v != floor(v))
		v = ceil(v); /* 1.5KB of a fractional byte rounds up */
	*out = (uint64_t)v;
	return 0;
}

int gms_parse_time(const char *s, sim_time_t *out)
{
	static const struct unit units[] = {{"ns", 1.0}, {"us", 1e3},
					    {"ms", 1e6}, {"s", 1e9},
					    {NULL, 0}};
	double v;
	if (s && s[0] == '-')
		return -1;
	if (parse_with_unit(s, units, &v) < 0 || v > (double)SIM_TIME_LIMIT)
		return -1; /* beyond the clock (common.h, SIM_TIME_LIMIT) */
	*out = sim_round_ns(v);
	return 0;
}

/* ---- all-or-nothing result files ---------------------------------------- */

/* What a file of mode m is, for messages. */
static const char *file_kind(mode_t m)
{
	return S_ISLNK(m)    ? "a symlink"
	       : S_ISDIR(m)  ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
			     : "not a regular file";
}

int gms_out_check(const char *path, gms_err *err)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0
				       : gms_errf(err, "%s: %s", path,
						  strerror(errno));
	if (S_ISREG(st.st_mode))
		return 0;
	return gms_errf(err,
			"%s: is %s; output files are regular files only (it "
			"would be replaced, not written through)",
			path, file_kind(st.st_mode));
}

int gms_out_probe(const char *path, gms_err *err)
{
	struct gms_out o;
	if (gms_out_open(&o, path, err) < 0)
		return -1;
	gms_out_abort(&o);
	return 0;
}

int gms_out_open(struct gms_out *o, const char *path, gms_err *err)
{
	memset(o, 0, sizeof *o);
	if (strlen(path) >= sizeof o->path)
		return gms_errf(err, "%s: path too long", path);
	if (gms_out_check(path, err) < 0)
		return -1;
	snprintf(o->path, sizeof o->path, "%s", path);
	snprintf(o->tmp, sizeof o->tmp, "%s.tmpXXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0)
		return gms_errf(err, "%s: cannot create: %s", path,
				strerror(errno));
	/* mkstemp makes the file 0600; results are ordinary files */
	fchmod(fd, 0644);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		close(fd);
		unlink(o->tmp);
		return gms_errf(err, "%s: %s", path, strerror(errno));
	}
	return 0;
}

int gms_out_commit(struct gms_out *o, gms_err *err)
{
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int e = errno;
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	o->f = NULL;
	if (bad) {
		unlink(o->tmp);
		return gms_errf(err, "%s: write failed: %s", o->path,
				strerror(e));
	}
	/* again: the target may have appeared while the result was made */
	if (gms_out_check(o->path, err) < 0) {
		unlink(o->tmp);
		return -1;
	}
	if (rename(o->tmp, o->path) != 0) {
		e = errno;
		unlink(o->tmp);
		return gms_errf(err, "%s: cannot rename into place: %s",
				o->path, strerror(e));
	}
	return 0;
}

void gms_out_abort(struct gms_out *o)
{
	if (o->f) {
		fclose(o->f);
		o->f = NULL;
		unlink(o->tmp);
	}
}

int gms_mkdirs(const char *path, gms_err *err)
{
	char buf[GMS_PATH_MAX];
	if (!path[0])
		return gms_errf(err, "empty directory name");
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return gms_errf(err, "%s: path too long", path);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return gms_errf(err, "%s: cannot create: %s",
						buf, strerror(errno));
			*p = c;
			if (c == '\0')
				break;
		}
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return gms_errf(err, "%s: not a directory", path);
	return 0;
}

void gms_json_str(FILE *f, const char *s)
{
	gms_json_strn(f, s, strlen(s));
}

void gms_json_strn(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	const unsigned char *end = (const unsigned char *)s + n;
	for (const unsigned char *p = (const unsigned char *)s; p < end && *p;
	     p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

FILE *gms_fopen_in(const char *path, const char *mode, gms_err *err)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		gms_errf(err, "%s: is a directory, not a file", path);
		return NULL;
	}
	FILE *f = fopen(path, mode);
	if (!f)
		gms_errf(err, "%s: cannot open: %s", path, strerror(errno));
	return f;
}

const char *gms_quote(char *buf, const char *s)
{
	size_t n = 0;
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	buf[n++] = '\'';
	for (size_t i = 0; p[i]; i++) {
		if (i == GMS_QUOTE_MAX) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		if (p[i] == '\n' || p[i] == '\t' || p[i] == '\r') {
			buf[n++] = '\\';
			buf[n++] = p[i] == '\n' ? 'n' : p[i] == '\t' ? 't' : 'r';
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			n += (size_t)snprintf(buf + n, 5, "\\x%02x", p[i]);
		} else {
			buf[n++] = (char)p[i];
		}
	}
	buf[n++] = '\'';
	buf[n] = '\0';
	return buf;
}

void gms_list_add(char *buf, size_t n, const char *item)
{
	size_t l = strnlen(buf, n);
	if (l + 1 >= n)
		return;
	snprintf(buf + l, n - l, "%s%s", l ? ", " : "", item);
}

int gms_lookup(const char *const *list, const char *s, char *known,
	       size_t n)
{
	known[0] = 0;
	for (int i = 0; list[i]; i++) {
		if (strcmp(list[i], s) == 0)
			return i;
		gms_list_add(known, n, list[i]);
	}
	return -1;
}
