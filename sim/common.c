/* common.c - error formatting and the number parsers of common.h. */
#include "common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	if (ns >= 9.2e18)
		return SIM_TIME_MAX;
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
	if (parse_with_unit(s, units, &v) < 0 || v >= 9.2e18)
		return -1;
	*out = sim_round_ns(v);
	return 0;
}
