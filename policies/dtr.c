/*
 * dtr.c - DTR's eviction heuristics (dtr.h): names and scores.
 *
 * The scores are simrd's (uwsampl/dtr-prototype eff53cc):
 *   simrd/simrd/heuristic/dtr.py  DTR.evaluate:
 *       (s.compute + region.compute + region_rev.compute)
 *         / (s.size * (clock - last_access_int)), inf if that is <= 0
 *   simrd/simrd/heuristic/dtr.py  DTREqClass.evaluate:
 *       (s.compute + the values of the distinct equivalence classes of
 *        its evicted neighbours) / (the same denominator)
 *   simrd/simrd/heuristic/etc.py  MSPS.evaluate:
 *       (s.compute + region_rev.compute) / s.size, inf if size is 0
 *   simrd/simrd/heuristic/etc.py  LRU.evaluate: last_access_int
 *   simrd/simrd/heuristic/etc.py  LargestStorage.evaluate:
 *       1 / s.size, inf if size is 0
 * Every quotient there is Python's int / int, which is the double nearest
 * the exact rational (ties to even; CPython long_true_divide), so equal
 * scores (ties, broken towards the later storage) are reproduced only if
 * the division is exact too: dtr_div below. size x staleness can pass
 * 2^64 (a 10 GB storage idle for 2 s of trace time), hence 128 bits.
 */
#include "dtr.h"

#include <math.h>
#include <string.h>

static const char *const h_names[DTR_H_COUNT] = {
	"dtr", "dtr-eqclass", "msps", "lru", "largest"};

static const char *const h_simrd[DTR_H_COUNT] = {
	"DTR", "DTREqClass", "MSPS", "LRU", "LargestStorage"};

enum dtr_heuristic dtr_heuristic_parse(const char *name)
{
	for (int h = 0; h < DTR_H_COUNT; h++)
		if (strcmp(name, h_names[h]) == 0)
			return (enum dtr_heuristic)h;
	return DTR_H_COUNT;
}

const char *dtr_heuristic_name(enum dtr_heuristic h)
{
	return (unsigned)h < DTR_H_COUNT ? h_names[h] : "?";
}

const char *dtr_heuristic_simrd_name(enum dtr_heuristic h)
{
	return (unsigned)h < DTR_H_COUNT ? h_simrd[h] : "?";
}

const char *dtr_status_name(enum dtr_status s)
{
	switch (s) {
	case DTR_OK: return "ok";
	case DTR_OOM: return "OOM";
	case DTR_THRASH: return "thrash";
	}
	return "?";
}

static int bitlen(unsigned __int128 x)
{
	uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
	if (hi)
		return 128 - __builtin_clzll(hi);
	return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* The double nearest num / den, ties to even. The fast path: both exact
 * in a double (< 2^53), where IEEE division rounds the exact quotient
 * once. Otherwise: q = floor(num * 2^sh / den) with at least 55
 * significant bits and a sticky bit for the remainder, rounded to 53 bits
 * by hand and scaled by 2^-sh (the result is far from the subnormals:
 * num >= 1 and den < 2^127). */
double dtr_div(unsigned __int128 num, unsigned __int128 den)
{
	const unsigned __int128 exact = (unsigned __int128)1 << 53;
	if (num == 0)
		return 0.0;
	if (num < exact && den < exact)
		return (double)(uint64_t)num / (double)(uint64_t)den;
	/* den >= 2^127 is out of the domain (dtr_cost's size x staleness
	 * is below 2^64 x 2^63): the long division below would shift r out
	 * of 128 bits and never end. Two roundings instead of one, and an
	 * answer, for inputs no score makes */
	if (bitlen(den) > 127)
		return (double)num / (double)den;
	int sh = 127 - bitlen(num); /* num << sh fits in 128 bits */
	unsigned __int128 n = num << sh;
	unsigned __int128 q = n / den, r = n % den;
	while (bitlen(q) < 55) { /* long division, one more bit at a time;
				    r < den < 2^127 so r << 1 fits */
		r <<= 1;
		q <<= 1;
		if (r >= den) {
			r -= den;
			q |= 1;
		}
		sh++;
	}
	int drop = bitlen(q) - 53;
	unsigned __int128 half = (unsigned __int128)1 << (drop - 1);
	unsigned __int128 low = q & (((unsigned __int128)1 << drop) - 1);
	uint64_t m = (uint64_t)(q >> drop);
	if (low > half || (low == half && (r != 0 || (m & 1))))
		m++; /* m may become 2^53: still exact as a double */
	return ldexp((double)m, drop - sh);
}

double dtr_cost(enum dtr_heuristic h, uint64_t compute_sum, uint64_t size,
		int64_t last_access, int64_t clock)
{
	switch (h) {
	case DTR_H_DTR:
	case DTR_H_EQCLASS: {
		/* size * (clock - last_access): -inf staleness is +inf, and
		 * 0 * inf is nan, which is not > 0 (Python) */
		if (size == 0 || last_access == DTR_NEVER)
			return size == 0 ? INFINITY : 0.0;
		if (clock <= last_access)
			return INFINITY;
		unsigned __int128 den = (unsigned __int128)size *
					(uint64_t)(clock - last_access);
		return dtr_div(compute_sum, den);
	}
	case DTR_H_MSPS:
		return size ? dtr_div(compute_sum, size) : INFINITY;
	case DTR_H_LRU:
		return last_access == DTR_NEVER ? -INFINITY
						: (double)last_access;
	case DTR_H_LARGEST:
		return size ? dtr_div(1, size) : INFINITY;
	case DTR_H_COUNT:
		break;
	}
	return INFINITY;
}

uint64_t dtr_budget_for_ratio(const struct dtr_baseline *b, double ratio)
{
	double v = (double)b->peak_bytes * ratio; /* Python: int(peak * r) */
	if (!(v > 0))
		return 0;
	if (v >= 18446744073709551616.0)
		return UINT64_MAX;
	return (uint64_t)v;
}
