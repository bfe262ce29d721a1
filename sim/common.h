/*
 * common.h - types every module shares: simulated time and error reports.
 *
 * Time is an integer count of nanoseconds (sim_time_t), never a float: the
 * clock only ever adds integers, so a run is bit-for-bit repeatable.
 * Durations computed from floating-point models are rounded once, with
 * sim_round_ns(), at the boundary between the model and the clock.
 *
 * Errors are return codes (0 ok, -1 failed) plus a gms_err the callee fills
 * with a human-readable message, "file:line:col: key 'k': what went wrong"
 * where the error comes from an input file.
 */
#ifndef GMS_COMMON_H
#define GMS_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef int64_t sim_time_t; /* simulated nanoseconds since the run began */

#define SIM_NS ((sim_time_t)1)
#define SIM_US ((sim_time_t)1000)
#define SIM_MS ((sim_time_t)1000000)
#define SIM_S ((sim_time_t)1000000000)
#define SIM_TIME_MAX INT64_MAX

/* The clock's limit: 2^62 ns, about 146 years of simulated time. No
 * training run comes near it (the longest published ones take months);
 * reaching it means the inputs were absurd (an op of 1e18 FLOPs on a
 * profile of 1e6 FLOP/s, a million ops of a day each), and the run stops
 * with an error (st_run.failed) instead of wrapping the int64 clock. The
 * limit is half the int64 range so that a time plus a duration, each at
 * most the limit, never overflows before it is checked. */
#define SIM_TIME_LIMIT ((sim_time_t)1 << 62)
/* A time or duration past the limit: what sim_round_ns and sim_time_add
 * return when a value does not fit. Any sum with it is past the limit
 * too, so the flag propagates to the check (sim_time_over). */
#define SIM_TIME_OVER (SIM_TIME_LIMIT + 1)

static inline bool sim_time_over(sim_time_t t) { return t > SIM_TIME_LIMIT; }

/* a + b for times and durations (>= 0): the sum, or SIM_TIME_OVER when it
 * passes SIM_TIME_LIMIT or either term already did. Never overflows. */
static inline sim_time_t sim_time_add(sim_time_t a, sim_time_t b)
{
	sim_time_t s;
	if (sim_time_over(a) || sim_time_over(b) ||
	    __builtin_add_overflow(a, b, &s) || sim_time_over(s))
		return SIM_TIME_OVER;
	return s;
}

/* n * d for a count of things of duration d >= 0 (driver calls of one
 * cost): the product, or SIM_TIME_OVER past the limit. */
static inline sim_time_t sim_time_mul(uint64_t n, sim_time_t d)
{
	sim_time_t p;
	if (sim_time_over(d) || n > (uint64_t)SIM_TIME_LIMIT ||
	    __builtin_mul_overflow((sim_time_t)n, d, &p) || sim_time_over(p))
		return SIM_TIME_OVER;
	return p;
}

#define GMS_KIB ((uint64_t)1024)
#define GMS_MIB ((uint64_t)1024 * 1024)
#define GMS_GIB ((uint64_t)1024 * 1024 * 1024)

/* An error message; filled by the function that failed. */
typedef struct gms_err {
	char msg[1024]; /* NUL-terminated description, empty when no error */
} gms_err;

/* Format an error into e (which may be NULL); always returns -1 so callers
 * can write `return gms_errf(err, ...)`. */
int gms_errf(gms_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Prefix an existing message: "<prefix>: <old message>". Returns -1. */
int gms_err_prefix(gms_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Round a non-negative duration in nanoseconds (from a model) to the clock's
 * integer; negative or NaN inputs give 0; one past SIM_TIME_LIMIT
 * (infinity included) gives SIM_TIME_OVER, never an undefined conversion,
 * and whoever adds it to the clock reports the overflow. */
sim_time_t sim_round_ns(double ns);

/* Parse a byte size: an integer, or a number with a unit B, KB, MB, GB, TB
 * (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. "1.5GiB";
 * K, M, G, T alone are the powers of 1024, as in GNU coreutils ("K", "M",
 * "G" ... "are powers of 1024", "KB", "MB" ... "powers of 1000": dd(1),
 * sort(1)), so "4G" is 4GiB and "4GB" 4 * 10^9 (issue 34).
 * Returns 0 and sets *out, or -1 (negative, malformed or overflowing). */
int gms_parse_bytes(const char *s, uint64_t *out);

/* Parse a duration: an integer number of nanoseconds, or a number with a
 * unit ns, us, ms, s, e.g. "2.5ms". Returns 0 or -1. */
int gms_parse_time(const char *s, sim_time_t *out);

/* Parse a finite double (accepts 1e9 and the like). Returns 0 or -1. */
int gms_parse_double(const char *s, double *out);

/* Parse a signed 64-bit integer in decimal. Returns 0 or -1. */
int gms_parse_int(const char *s, int64_t *out);

/* A result file written all or nothing: gms_out_open creates a temporary
 * beside `path`; gms_out_commit flushes it, checks for write errors and
 * renames it onto `path`; gms_out_abort removes it. Readers never see a
 * half-written file. Output targets are regular files only: a `path` that
 * exists and is anything else -- a symlink, a directory, a FIFO, a device
 * node -- is refused (gms_out_check), never replaced by the rename. */
/* The longest path handled: Linux's PATH_MAX (<linux/limits.h>). */
#define GMS_PATH_MAX 4096

struct gms_out {
	FILE *f;		 /* write here between open and commit */
	char path[GMS_PATH_MAX]; /* final name */
	char tmp[GMS_PATH_MAX + 16]; /* temporary (path + ".tmpXXXXXX") */
};
int gms_out_open(struct gms_out *o, const char *path, gms_err *err);
int gms_out_commit(struct gms_out *o, gms_err *err);
void gms_out_abort(struct gms_out *o);

/* The rule of output targets: 0 when path does not exist or is a regular
 * file (not followed if a symlink), else -1 with "path: is a symlink
 * (...): output files are regular files only". */
int gms_out_check(const char *path, gms_err *err);

/* Check, before any work, that a result can later be written at path:
 * gms_out_check, and a temporary can be created beside it (then
 * removed). Returns 0 or -1 with the reason. */
int gms_out_probe(const char *path, gms_err *err);

/* Open an input file for reading (mode "r" or "rb"); a directory is
 * refused ("PATH: is a directory, not a file"), so every reader says so
 * instead of failing later on a read error. NULL with err on failure. */
FILE *gms_fopen_in(const char *path, const char *mode, gms_err *err);

/* Input limits (issue 38; README, "Input limits"). Every reader is
 * bounded, so an endless input (a symlink to /dev/zero) or a 2 GB line
 * ends in one located "too large" error at the limit, not in an
 * allocation failure after gigabytes and a wrong message. The YAML
 * inputs have theirs in cfg.h and wl.h. */
#define GMS_MAX_LINE ((size_t)1 << 20) /* 1 MiB: a line of a text input */
struct gms_limit {
	uint64_t bytes;	  /* the most a file may hold */
	size_t line;	  /* the longest line, its '\n' excluded */
	const char *what; /* "a schedule log", for the message */
};

/* Read all of path (gms_fopen_in) into a NUL-terminated buffer (caller
 * frees; its length in *len), refusing, as soon as it is read, a line
 * longer than lim->line ("PATH:LINE: too large: a line of more than N
 * bytes (the limit of a line of WHAT; ...)") and a file of more than
 * lim->bytes ("PATH: too large: more than N bytes (...)"). */
char *gms_read_all(const char *path, const struct gms_limit *lim,
		   size_t *len, gms_err *err);

/* A line-by-line reader with the same limits (getline(3) otherwise).
 * It reads f in blocks (issue 37: a byte at a time, getc_unlocked, merge
 * spent some 25 instructions a byte of its shard files), so nothing else
 * may read f while it does; set f, path and lim, the rest zero. */
#define GMS_IN_BLOCK 16384 /* bytes read at once: four 4 KiB pages */
struct gms_in {
	FILE *f;
	const char *path;
	struct gms_limit lim;
	uint64_t nread;		  /* bytes handed out in lines */
	long line;		  /* lines read */
	char blk[GMS_IN_BLOCK];	  /* bytes read from f: blk[pos..len) not
				     handed out yet */
	size_t pos, len;	  /* in blk */
};
/* The next line into *buf (*cap its allocation, as getline's), its
 * '\n' kept; returns its length, -1 at the end of the file, -2 with err
 * (too large, cannot read, out of memory). */
ptrdiff_t gms_in_line(struct gms_in *in, char **buf, size_t *cap,
		      gms_err *err);
/* Whether f has nothing more after the lines read (it may read a byte). */
bool gms_in_end(struct gms_in *in);

/* User content quoted for a message: at most GMS_QUOTE_MAX bytes of s in
 * single quotes, control characters escaped (\n, \t, \xNN), "..." after
 * a cut; so a message never echoes a file's content without limit. Into
 * buf (GMS_QUOTE_BUF bytes); returns buf. */
#define GMS_QUOTE_MAX 64
#define GMS_QUOTE_BUF (4 * GMS_QUOTE_MAX + 8)
const char *gms_quote(char *buf, const char *s);

/* Append item to the ", "-separated list in buf (size n), as far as it
 * fits; for "unknown X (known: a, b, c)" messages. */
void gms_list_add(char *buf, size_t n, const char *item);

/* "Did you mean" for an unknown name (issue 34): the edit distance
 * (optimal string alignment: insertions, deletions, substitutions and
 * transpositions of adjacent characters, each 1; ASCII case ignored) of
 * two names; SIZE_MAX when either is longer than GMS_NEAR_MAX bytes. */
#define GMS_NEAR_MAX 63
size_t gms_edit_distance(const char *a, const char *b);

/* The nearest to `word` of the names offered with gms_near_add, the
 * first of equals; close enough to suggest when its distance is at most
 * max(1, min(3, strlen(word) / 3)) and below strlen(word) (a typo or
 * two, not a different word): "iteration" -> "iterations" (1 of 9
 * letters), "resnet" -> "resnet50" (2 of 6), but not "vgg" -> "vgg16"
 * (2 of 3). */
struct gms_near {
	const char *word;
	char best[GMS_NEAR_MAX + 1];
	size_t dist; /* of best; SIZE_MAX: none yet */
};
void gms_near_init(struct gms_near *n, const char *word);
void gms_near_add(struct gms_near *n, const char *name);
/* "; did you mean 'NAME'?" when a name is close enough, else "" (buf:
 * at least GMS_NEAR_MAX + 24 bytes); returns buf. */
#define GMS_NEAR_BUF (GMS_NEAR_MAX + 24)
const char *gms_near_hint(const struct gms_near *n, char *buf);

/* Index of s in the NULL-terminated list of names, or -1 with the names
 * joined into known (size n) for the message. */
int gms_lookup(const char *const *list, const char *s, char *known,
	       size_t n);

/* Write s with each byte that is not part of well-formed UTF-8 as
 * U+FFFD (a YAML output: libyaml refuses a file that is not UTF-8). */
void gms_utf8_text(FILE *f, const char *s);

/* Write s as a JSON string literal (quotes and escapes included; a byte
 * that is not part of well-formed UTF-8 as \ufffd). */
void gms_json_str(FILE *f, const char *s);
/* The same for the first n bytes of s (or up to its NUL). */
void gms_json_strn(FILE *f, const char *s, size_t n);

/* printf's "%.6f" of two quotients the plot files write a line of per
 * memory event (issue 37: llm-seq spent 73% of its run in glibc's
 * printf_fp, which formats a double through multi-precision integers),
 * written from the integers, byte for byte what printf writes, into
 * out (GMS_FIXED6_MAX bytes; no NUL), returning how many (a line goes
 * out with one fwrite: a call of stdio a value, with its lock, was half
 * of writing the line):
 *  - gms_fmt_mib6: (double)bytes / 2^20, exact for bytes < 2^53 (a
 *    division by a power of two), so the exact binary fraction rounded
 *    to 6 decimals, ties to even as glibc rounds in the default mode
 *    (k / 2^20 x 10^6 in integers: 2^20 x 10^6 < 2^64);
 *  - gms_fmt_ms6: (double)t / 1e6 for 0 <= t < 2^32 x 10^6 ns: the
 *    double is within half an ulp (at most 2^-22 ms) of t / 10^6, which
 *    has 6 decimals, so rounding it to 6 decimals gives t's own digits.
 * Outside those ranges both call printf. tests/test_io.c compares them
 * with snprintf over every fraction of 3 MiB and 20 M times. */
#define GMS_FIXED6_MAX 32 /* room for one: "%.6f" of at most 2^64 / 2^20
			     or 2^63 / 10^6 has 21 bytes */
size_t gms_fmt_mib6(char *out, uint64_t bytes);
size_t gms_fmt_ms6(char *out, int64_t t);
/* The decimal digits of v into out (at most 20 bytes; no NUL); returns
 * how many. */
size_t gms_fmt_u64(char *out, uint64_t v);

/* Room for one more item in array arr of *cap items of sz bytes, n of
 * them used: arr while n < *cap, else arr realloc'd to twice *cap (to
 * `first` when *cap is 0) with *cap updated; NULL when out of memory
 * (arr untouched and still the caller's). */
void *gms_grow(void *arr, size_t *cap, size_t n, size_t sz, size_t first);

/* Create a directory and its parents (like mkdir -p). Returns 0 or -1. */
int gms_mkdirs(const char *path, gms_err *err);

#endif
