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
		{"TiB", 1099511627776.0}, {"K", 1024.0},
		{"M", 1048576.0},   {"G", 1073741824.0},
		{"T", 1099511627776.0}, {NULL, 0}};
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
	if (!*path) /* `--trace ''` was found only at the rename */
		return gms_errf(err, "an empty output path");
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

/* The mode open(2) gives a new file, 0666 less the umask, for the
 * temporary that mkstemp makes 0600 (results were 0644 under any umask,
 * issue 38). The umask from /proc/self/status (Linux 4.7 on): reading it
 * with umask(2) sets it, a race with a thread creating a file; that only
 * where /proc is not there. */
static mode_t new_file_mode(void)
{
	unsigned mask = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && !found && fgets(line, sizeof line, f))
		found = sscanf(line, "Umask: %o", &mask) == 1;
	if (f)
		fclose(f);
	if (!found) {
		mode_t m = umask(022);
		umask(m);
		mask = m;
	}
	return (mode_t)(0666 & ~mask);
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
	fchmod(fd, new_file_mode());
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

/* The length of the well-formed UTF-8 sequence at p (before end), 0 if
 * there is none: the Unicode Standard's table 3-7 (well-formed byte
 * sequences: no overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2
			 : c >= 0xe0 && c <= 0xef	 ? 3
			 : c >= 0xf0 && c <= 0xf4	 ? 4
						 : 0;
	if (!n || (size_t)(end - p) < n)
		return 0;
	unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
	unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
	for (size_t i = 1; i < n; i++)
		if (p[i] < (i == 1 ? lo : 0x80) || p[i] > (i == 1 ? hi : 0xbf))
			return 0;
	return n;
}

void gms_json_strn(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	const unsigned char *end = (const unsigned char *)s + n;
	for (const unsigned char *p = (const unsigned char *)s; p < end && *p;
	     p++) {
		size_t k = utf8_len(p, end);
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else if (!k) /* not UTF-8: JSON is (RFC 8259, 8.1; issue 38) */
			fputs("\\ufffd", f);
		else {
			fwrite(p, 1, k, f);
			p += k - 1;
		}
	}
	fputc('"', f);
}

void gms_utf8_text(FILE *f, const char *s)
{
	const unsigned char *end = (const unsigned char *)s + strlen(s);
	for (const unsigned char *p = (const unsigned char *)s; p < end;) {
		size_t k = utf8_len(p, end);
		if (k)
			fwrite(p, 1, k, f);
		else
			fputs("\xef\xbf\xbd", f); /* U+FFFD */
		p += k ? k : 1;
	}
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

/* The two "too large" messages of gms_read_all and gms_in_line. */
static int too_large(const char *path, long line,
		     const struct gms_limit *lim, gms_err *err)
{
	if (line > 0)
		return gms_errf(err,
				"%s:%ld: too large: a line of more than %zu "
				"bytes (the limit of a line of %s; README, "
				"\"Input limits\")",
				path, line, lim->line, lim->what);
	return gms_errf(err,
			"%s: too large: more than %llu bytes (%llu MiB, the "
			"limit of %s; README, \"Input limits\")",
			path, (unsigned long long)lim->bytes,
			(unsigned long long)(lim->bytes >> 20), lim->what);
}

char *gms_read_all(const char *path, const struct gms_limit *lim,
		   size_t *len, gms_err *err)
{
	*len = 0;
	FILE *f = gms_fopen_in(path, "rb", err);
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0, cur = 0; /* cur: the current line's length */
	long line = 1;
	int rc = 0;
	for (;;) {
		if (cap - n < 65536) {
			/* at most one byte past the limit is read */
			uint64_t want = cap ? 2 * (uint64_t)cap : 1 << 16;
			if (want > lim->bytes + 2)
				want = lim->bytes + 2;
			char *b = want > cap ? realloc(buf, (size_t)want) : NULL;
			if (want > cap && !b) {
				rc = gms_errf(err, "%s: out of memory", path);
				break;
			}
			if (b) {
				buf = b;
				cap = (size_t)want;
			}
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		/* line by line with memchr: a byte at a time was 8
		 * instructions a byte, 13% of a DTR log's build (issue 37) */
		for (const char *p = buf + n, *e = buf + n + r; p < e;) {
			const char *nl = memchr(p, '\n', (size_t)(e - p));
			size_t k = (size_t)((nl ? nl : e) - p);
			if (k > lim->line - cur) {
				rc = too_large(path, line, lim, err);
				break;
			}
			cur += k;
			if (!nl)
				break;
			line++;
			cur = 0;
			p = nl + 1;
		}
		n += r;
		if (rc == 0 && n > lim->bytes)
			rc = too_large(path, 0, lim, err);
		if (rc < 0 || r == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = gms_errf(err, "%s: cannot read: %s", path,
			      strerror(errno));
	fclose(f);
	if (rc < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

ptrdiff_t gms_in_line(struct gms_in *in, char **buf, size_t *cap,
		      gms_err *err)
{
	size_t n = 0;
	bool end = false; /* f has no more bytes (or failed) */
	in->line++;
	for (;;) {
		if (in->pos == in->len) {
			in->pos = 0;
			in->len = fread(in->blk, 1, sizeof in->blk, in->f);
			if (!in->len) {
				end = true;
				break;
			}
		}
		const char *s = in->blk + in->pos;
		size_t avail = in->len - in->pos;
		const char *nl = memchr(s, '\n', avail);
		size_t k = nl ? (size_t)(nl - s) + 1 : avail; /* taken */
		size_t text = k - (nl != NULL); /* of them before '\n' */
		/* Where a byte at a time would stop: the file's limit at
		 * the piece's byte jb (0-based: the one past lim.bytes), the
		 * line's at its text byte jl (the one past lim.line; n never
		 * exceeds it); at the same byte, the file's first. */
		uint64_t jb = in->lim.bytes - in->nread;
		size_t jl = in->lim.line - n;
		if (jb < k && (jl >= text || jb <= jl))
			return too_large(in->path, 0, &in->lim, err), -2;
		if (jl < text)
			return too_large(in->path, in->line, &in->lim, err),
			       -2;
		if (n + k + 1 > *cap) {
			size_t nc = *cap ? *cap : 256;
			while (nc < n + k + 1)
				nc *= 2;
			char *b = realloc(*buf, nc);
			if (!b)
				return gms_errf(err, "%s: out of memory",
						in->path),
				       -2;
			*buf = b;
			*cap = nc;
		}
		memcpy(*buf + n, s, k);
		n += k;
		in->pos += k;
		in->nread += k;
		if (nl)
			break;
	}
	if (!*cap) {
		char *b = malloc(256);
		if (!b)
			return gms_errf(err, "%s: out of memory", in->path),
			       -2;
		*buf = b;
		*cap = 256;
	}
	(*buf)[n] = '\0';
	if (end && ferror(in->f))
		return gms_errf(err, "%s: cannot read: %s", in->path,
				strerror(errno)),
		       -2;
	return n || !end ? (ptrdiff_t)n : -1;
}

bool gms_in_end(struct gms_in *in)
{
	return in->pos == in->len && getc(in->f) == EOF;
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

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t gms_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > GMS_NEAR_MAX || lb > GMS_NEAR_MAX)
		return SIZE_MAX;
	/* three rows of the dynamic programme: i-2, i-1, i */
	size_t r[3][GMS_NEAR_MAX + 1];
	for (size_t j = 0; j <= lb; j++)
		r[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *c = r[i % 3], *p = r[(i - 1) % 3], *pp = r[(i - 2) % 3];
		c[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = lower(a[i - 1]) != lower(b[j - 1]);
			size_t v = p[j - 1] + cost;
			if (p[j] + 1 < v)
				v = p[j] + 1;
			if (c[j - 1] + 1 < v)
				v = c[j - 1] + 1;
			if (i > 1 && j > 1 &&
			    lower(a[i - 1]) == lower(b[j - 2]) &&
			    lower(a[i - 2]) == lower(b[j - 1]) &&
			    pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			c[j] = v;
		}
	}
	return r[la % 3][lb];
}

void gms_near_init(struct gms_near *n, const char *word)
{
	n->word = word ? word : "";
	n->best[0] = 0;
	n->dist = SIZE_MAX;
}

void gms_near_add(struct gms_near *n, const char *name)
{
	if (!name)
		return;
	size_t d = gms_edit_distance(n->word, name);
	if (d < n->dist) {
		n->dist = d;
		snprintf(n->best, sizeof n->best, "%s", name);
	}
}

const char *gms_near_hint(const struct gms_near *n, char *buf)
{
	size_t l = strlen(n->word), lim = l / 3;
	if (lim > 3)
		lim = 3;
	if (lim < 1)
		lim = 1;
	buf[0] = 0;
	if (n->dist != SIZE_MAX && n->dist <= lim && n->dist < l)
		snprintf(buf, GMS_NEAR_BUF, "; did you mean '%s'?", n->best);
	return buf;
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

/* "00" to "99": two digits a division (issue 37) */
static const char digit_pairs[201] =
	"0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
	"5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/* The digits of v into the end of buf; returns where they start. */
static char *put_digits(char *end, uint64_t v)
{
	while (v >= 100) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

size_t gms_fmt_u64(char *out, uint64_t v)
{
	char buf[20], *end = buf + sizeof buf, *s = put_digits(end, v);
	memcpy(out, s, (size_t)(end - s));
	return (size_t)(end - s);
}

/* "I.FFFFFF" of integer part ip and 6-digit fraction fr into out. */
static size_t fmt_fixed6(char *out, uint64_t ip, uint64_t fr)
{
	char buf[32], *end = buf + sizeof buf;
	for (int i = 0; i < 3; i++, fr /= 100) {
		end -= 2;
		memcpy(end, digit_pairs + 2 * (fr % 100), 2);
	}
	*--end = '.';
	char *s = put_digits(end, ip);
	memcpy(out, s, (size_t)(buf + sizeof buf - s));
	return (size_t)(buf + sizeof buf - s);
}

/* printf's own, where the integers' path does not apply */
static size_t fmt_printf6(char *out, double v)
{
	int n = snprintf(out, GMS_FIXED6_MAX, "%.6f", v);
	return n < 0 ? 0 : (size_t)n < GMS_FIXED6_MAX ? (size_t)n
						      : GMS_FIXED6_MAX - 1;
}

size_t gms_fmt_mib6(char *out, uint64_t bytes)
{
	if (bytes >> 53)
		return fmt_printf6(out, (double)bytes / (double)GMS_MIB);
	uint64_t ip = bytes >> 20, p = (bytes & 0xFFFFF) * 1000000u;
	uint64_t q = p >> 20, r = p & 0xFFFFF;
	if (r > 0x80000 || (r == 0x80000 && (q & 1)))
		q++; /* to nearest, ties to even */
	if (q == 1000000) {
		ip++;
		q = 0;
	}
	return fmt_fixed6(out, ip, q);
}

size_t gms_fmt_ms6(char *out, int64_t t)
{
	if (t < 0 || t >= (int64_t)4294967296 * 1000000)
		return fmt_printf6(out, (double)t / 1e6);
	return fmt_fixed6(out, (uint64_t)t / 1000000, (uint64_t)t % 1000000);
}

void *gms_grow(void *arr, size_t *cap, size_t n, size_t sz, size_t first)
{
	if (n < *cap)
		return arr;
	size_t c = *cap ? 2 * *cap : first;
	void *b = realloc(arr, c * sz);
	if (b)
		*cap = c;
	return b;
}
