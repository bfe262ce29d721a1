/*
 * pickle.c - Python pickle protocol 2, written without Python (pickle.h).
 */
#include "pickle.h"

#include <string.h>

static void le(FILE *f, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		fputc((int)((v >> (8 * i)) & 0xff), f);
}

void pk_begin(FILE *f)
{
	fputc(0x80, f);
	fputc(2, f);
}

void pk_end(FILE *f) { fputc('.', f); }

void pk_dict(FILE *f)
{
	fputc('}', f);
	fputc('(', f);
}

void pk_dict_end(FILE *f) { fputc('u', f); }

void pk_list(FILE *f)
{
	fputc(']', f);
	fputc('(', f);
}

void pk_list_end(FILE *f) { fputc('e', f); }

void pk_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	fputc('X', f);
	le(f, (uint64_t)n, 4);
	fwrite(s, 1, n, f);
}

/* LONG1: the fewest little-endian bytes whose two's complement is v. */
static void long1(FILE *f, uint64_t bits, bool negative)
{
	unsigned char b[9];
	int n = 0;
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((bits >> (8 * i)) & 0xff);
	b[8] = negative ? 0xff : 0; /* sign extension of a uint64 */
	n = 9;
	/* drop high bytes that only repeat the sign */
	while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) ||
			 (b[n - 1] == 0xff && (b[n - 2] & 0x80))))
		n--;
	fputc(0x8a, f);
	fputc(n, f);
	fwrite(b, 1, (size_t)n, f);
}

void pk_int(FILE *f, int64_t v)
{
	if (v >= INT32_MIN && v <= INT32_MAX) {
		fputc('J', f);
		le(f, (uint64_t)(uint32_t)(int32_t)v, 4);
		return;
	}
	long1(f, (uint64_t)v, v < 0);
}

void pk_uint(FILE *f, uint64_t v)
{
	if (v <= INT32_MAX) {
		pk_int(f, (int64_t)v);
		return;
	}
	long1(f, v, false);
}

void pk_bool(FILE *f, bool v) { fputc(v ? 0x88 : 0x89, f); }

void pk_none(FILE *f) { fputc('N', f); }

void pk_tuple2_int(FILE *f, int64_t a, int64_t b)
{
	pk_int(f, a);
	pk_int(f, b);
	fputc(0x86, f);
}
