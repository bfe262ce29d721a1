/*
 * wl_dtr.c - recorded PyTorch training traces (wl_load_dtr), in the
 * JSON-lines log format of the Dynamic Tensor Rematerialization project
 * (uwsampl/dtr-prototype; the three logs shipped are in
 * workloads/traces/dtr/, the mapping is in workloads/README.md, "Recorded
 * traces").
 *
 * The log. One flat JSON object per line, keyed by INSTRUCTION:
 *   CONSTANT  NAME                    a tensor that exists before the step
 *   MEMORY    NAME, MEMORY            its size in bytes (after CONSTANT and
 *                                     after each CALL result)
 *   CALL      NAME, ARGS, RESULT, TIME  an operator: handles read, handles
 *                                     returned, measured time in ns; each
 *                                     result is followed by its MEMORY and
 *                                     ALIAS lines
 *   ALIAS     NAME, ALIAS             -1: the result has fresh storage; k:
 *                                     it is a view of argument k's storage
 *   MUTATE    NAME, ARGS, MUTATE, TIME  an in-place operator; MUTATE lists
 *                                     the indices of the arguments written
 *   COPY      DST, SRC                DST is a new handle on SRC's tensor
 *   COPY_FROM DST, SRC                the existing handle DST now refers to
 *                                     SRC's tensor (it drops its old one)
 *   RELEASE   NAME                    the handle is dropped
 *   ANNOTATE  ANNOTATION              START (the recorded step begins) or
 *                                     BACKWARD (the backward pass begins)
 * gpumemsim-record's extension (workloads/README.md, "Logs from
 * gpumemsim-record"): SHAPES on CALL and MUTATE, "DTYPE[D0,...]" per ARGS
 * and then per RESULT item; TIME optional where SHAPES is given (the op is
 * then timed by the profile from wl_aten.c's FLOPs and bytes; a CALL whose
 * results are all aliases takes 1 ns); ANNOTATE "NOTE ..." a comment; a
 * CONSTANT never released that no forward op reads is optimizer state.
 * Numbers (MEMORY, TIME, ALIAS, MUTATE's items) are written as decimal
 * strings in the recorded logs; bare JSON integers are accepted too.
 * TIME is at most 1e15 ns and MEMORY at most 1e15 bytes, wl.h's physical
 * bounds WL_OP_TIME_MAX and WL_BYTES_MAX (issue 17: a TIME near INT64_MAX
 * overflowed the clock).
 *
 * The reading, as the DTR simulator (simrd/parse) has it: a handle names a
 * tensor; a tensor lives in a storage (fresh, or shared with the argument
 * it aliases); a storage is freed when the last handle on it, aliases
 * included, is released. The loader follows storage, not handles:
 *   - each CALL and each MUTATE is one op, in log order, with the TIME as
 *     its measured time; phase forward before ANNOTATE BACKWARD, backward
 *     after; a MUTATE after BACKWARD that writes only storage of CONSTANTs
 *     is a parameter update (phase update, type update);
 *   - each storage of non-zero size is one tensor, named after the handle
 *     that created it; an op reads the storages of its ARGS (repeats
 *     once), writes the fresh storages of its results; a MUTATE writes
 *     nothing new (it reads its arguments, like an update op);
 *   - the release point of a tensor (wl_set_release_after) is the last op
 *     issued before its last handle was released; storage never released
 *     in the log is held to the last op of the step.
 * Kinds: a CONSTANT never released is a parameter; one released in the log
 * is per-step data (input: the batch, the labels, scalar literals); fresh
 * storage is an activation in forward, an activation gradient in backward,
 * or a parameter gradient when made in backward and never released. A
 * CONSTANT alive across exactly one op is that op's workspace; one alive
 * across none, and every zero-byte storage, is left out.
 *
 * Strictness. The parser reads the flat JSON subset these logs use
 * (objects of string keys; values: strings, integers, arrays of those)
 * with a small hand-written scanner over the file read whole, with exact
 * columns. Measured on the 1 MB transformer log (-O2): 5-10 ms for the
 * whole load, workload built; libyaml's event parser alone, one line at a
 * time, takes 25-45 ms on the same lines. Every key is checked: a malformed line, an unknown INSTRUCTION
 * or key, a missing or repeated key, a wrong value type, a handle unknown
 * or already defined, a MEMORY or ALIAS for a name not awaiting one, an
 * ALIAS or MUTATE index out of range, or a CALL's results left without
 * their MEMORY and ALIAS lines is an error "path:line:col: ..." naming the
 * key. An ANNOTATE START discards what came before it (a log may hold
 * warm-up steps; the last START marks the recorded one). No global state.
 *
 * The same scanner serves readers that build something else (wl_dtr.h,
 * wl_dtr_scan): with a callback set, each instruction is handed over once
 * checked, with its handles as numbers, and no workload is built.
 */
#include "wl_dtr.h"
#include "wl_aten.h"
#include "conv_algo.h"
#include "../sim/hw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>

/* ---- Keys and instructions ------------------------------------------- */

enum dtr_key {
	K_INSTRUCTION, K_NAME, K_MEMORY, K_ARGS, K_RESULT, K_TIME, K_ALIAS,
	K_MUTATE, K_DST, K_SRC, K_ANNOTATION, K_SHAPES, K_BATCH, K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"INSTRUCTION", "NAME", "MEMORY", "ARGS", "RESULT", "TIME", "ALIAS",
	"MUTATE", "DST", "SRC", "ANNOTATION", "SHAPES", "BATCH"};

/* "key 'NAME'" and so on, for messages about a key's value. */
static const char *const key_what[K_COUNT] = {
	"key 'INSTRUCTION'", "key 'NAME'", "key 'MEMORY'", "key 'ARGS'",
	"key 'RESULT'", "key 'TIME'", "key 'ALIAS'", "key 'MUTATE'",
	"key 'DST'", "key 'SRC'", "key 'ANNOTATION'", "key 'SHAPES'",
	"key 'BATCH'"};

/* The key called s, K_COUNT if none: one string comparison, as this runs
 * for every key of every line. */
static enum dtr_key key_index(const char *s)
{
	enum dtr_key k;
	switch (s[0]) {
	case 'I': k = K_INSTRUCTION; break;
	case 'N': k = K_NAME; break;
	case 'M': k = s[1] == 'E' ? K_MEMORY : K_MUTATE; break;
	case 'A':
		k = s[1] == 'R'	  ? K_ARGS
		    : s[1] == 'L' ? K_ALIAS
				  : K_ANNOTATION;
		break;
	case 'R': k = K_RESULT; break;
	case 'T': k = K_TIME; break;
	case 'D': k = K_DST; break;
	case 'S': k = s[1] == 'H' ? K_SHAPES : K_SRC; break;
	case 'B': k = K_BATCH; break;
	default: return K_COUNT;
	}
	return strcmp(s, key_names[k]) == 0 ? k : K_COUNT;
}

enum dtr_ins {
	I_CONSTANT, I_MEMORY, I_CALL, I_ALIAS, I_MUTATE, I_COPY, I_COPY_FROM,
	I_RELEASE, I_ANNOTATE, I_COUNT
};

#define KB(k) (1u << (k))

/* An instruction's name and its keys (no others allowed). */
struct dtr_ins_def {
	const char *name; /* as written in INSTRUCTION */
	unsigned keys;	  /* KB() of each required key besides INSTRUCTION */
	unsigned opt;	  /* KB() of each optional key (gpumemsim-record's
			     extension: TIME may be left out, SHAPES added) */
};

static const struct dtr_ins_def ins_defs[I_COUNT] = {
	{"CONSTANT", KB(K_NAME)},
	{"MEMORY", KB(K_NAME) | KB(K_MEMORY), KB(K_BATCH)},
	{"CALL", KB(K_NAME) | KB(K_ARGS) | KB(K_RESULT),
	 KB(K_TIME) | KB(K_SHAPES)},
	{"ALIAS", KB(K_NAME) | KB(K_ALIAS)},
	{"MUTATE", KB(K_NAME) | KB(K_ARGS) | KB(K_MUTATE),
	 KB(K_TIME) | KB(K_SHAPES)},
	{"COPY", KB(K_DST) | KB(K_SRC)},
	{"COPY_FROM", KB(K_DST) | KB(K_SRC)},
	{"RELEASE", KB(K_NAME)},
	{"ANNOTATE", KB(K_ANNOTATION)},
};

/* The instruction called s, I_COUNT if none (one string comparison). */
static int ins_index(const char *s)
{
	int i;
	switch (s[0]) {
	case 'C':
		if (s[1] == 'A')
			i = I_CALL;
		else if (s[1] == 'O' && s[2] == 'N')
			i = I_CONSTANT;
		else
			return strcmp(s, "COPY") == 0	   ? I_COPY
			       : strcmp(s, "COPY_FROM") == 0 ? I_COPY_FROM
							     : I_COUNT;
		break;
	case 'M': i = s[1] == 'E' ? I_MEMORY : I_MUTATE; break;
	case 'A': i = s[1] == 'L' ? I_ALIAS : I_ANNOTATE; break;
	case 'R': i = I_RELEASE; break;
	default: return I_COUNT;
	}
	return strcmp(s, ins_defs[i].name) == 0 ? i : I_COUNT;
}

/* ---- Loader state ------------------------------------------------------ */

/* Value types of the JSON subset. */
enum jtype { J_STR, J_INT, J_ARR };

/* One array element of the current line. */
struct jitem {
	const char *s; /* string value (NUL-terminated, in the file buffer),
			  NULL for an integer */
	int64_t n;     /* integer value when s is NULL */
	uint32_t col;  /* 1-based column where it starts */
};

/* One key's value on the current line. */
struct jfield {
	bool present;	  /* the key was given */
	enum jtype type;  /* its value's type */
	uint32_t col;	  /* column of the value */
	const char *s;	  /* J_STR: the string */
	int64_t n;	  /* J_INT: the integer */
	uint32_t first;	  /* J_ARR: index of its first item in items */
	uint32_t count;	  /* J_ARR: number of items */
};

#define NO_OP WL_NONE	    /* "no op yet" in the records below */
#define NO_TENSOR WL_NONE    /* a storage that is no tensor */
#define NO_STO WL_NONE	    /* "no storage" */

/* A storage: what the simulator allocates. */
struct dtr_sto {
	const char *name;  /* handle that created it (the tensor's name) */
	uint64_t bytes;	   /* size from its MEMORY line */
	bool constant;	   /* made by CONSTANT (else by a CALL result) */
	bool sized;	   /* its MEMORY line was read */
	bool released;	   /* its last handle was released */
	bool mutated;	   /* some MUTATE wrote it */
	bool trained;	   /* a forward op read it (a parameter does;
			      optimizer state only the update and the
			      optimizer's own CALLs read, issue 35) */
	uint32_t refs;	   /* live handles on it */
	uint32_t producer; /* CALL op that made it, NO_OP for a constant */
	uint32_t created;  /* ops issued before it was made */
	uint32_t rel_op;   /* released: last op issued before the release,
			      NO_OP if none was */
	uint32_t tensor;   /* tensor id once built, NO_TENSOR if none */
	uint32_t line;	   /* line that made it */
};

/* A handle: a name bound to a storage. */
struct dtr_handle {
	const char *name; /* in the file buffer; NULL = empty slot */
	uint32_t hash;	  /* wl_name_hash of name */
	uint32_t sto;	  /* storage index */
	bool alive;	  /* defined and not released */
	uint32_t id;	  /* number in order of first definition since
			     START (wl_dtr.h) */
};

/* An op: one CALL or MUTATE. */
struct dtr_op {
	const char *name;     /* operator name from the log */
	uint32_t line;	      /* its line */
	bool mutate;	      /* a MUTATE (else a CALL) */
	enum wl_phase phase;  /* forward / backward / update */
	sim_time_t time;      /* measured time, ns; 0: none given, or
				 profile times asked for */
	int64_t logged;	      /* TIME as written (0 stays 0; none: -1) */
	uint32_t arg0, n_arg; /* its ARGS' storages: args[arg0 ..] */
	uint32_t res0, n_res; /* fresh storages it made: res[res0 ..] */
	uint32_t n_result;    /* results listed (aliases included) */
	uint32_t shp0, n_shp; /* its SHAPES: shapes[shp0 ..], n_arg +
				 n_result of them, or none */
};

/* A CALL result awaiting its MEMORY and ALIAS lines. */
struct dtr_pend {
	const char *name; /* the result handle */
	uint32_t col;	  /* its column on the CALL line */
	bool has_mem;	  /* MEMORY seen */
	bool has_alias;	  /* ALIAS seen */
	uint64_t bytes;	  /* MEMORY value */
	int64_t alias;	  /* ALIAS value */
};

/* A growable array of fixed-size elements. */
struct dtr_vec {
	void *p;    /* elements */
	uint32_t n; /* used */
	uint32_t cap; /* allocated */
};

struct dtr {
	const char *path;	 /* for messages */
	gms_err *err;		 /* where errors go */
	uint32_t line;		 /* current line (1-based) */
	const char *line_start;	 /* its first byte, for columns */
	struct jfield f[K_COUNT]; /* the current line's keys */
	unsigned given;		 /* KB() of each of them present */
	struct dtr_vec items;	 /* struct jitem: array elements, this line */
	struct dtr_vec stos;	 /* struct dtr_sto */
	struct dtr_vec ops;	 /* struct dtr_op */
	struct dtr_vec args;	 /* uint32_t: storages read, per op */
	struct dtr_vec res;	 /* uint32_t: storages made, per op */
	struct dtr_vec pend;	 /* struct dtr_pend: open CALL's results */
	struct dtr_vec shapes;	 /* struct wl_aten_shape: SHAPES items as
				    read_shapes parsed them (at the batch
				    loaded), per op */
	bool profile_times;	 /* ignore TIME: every op timed by the
				    profile (wl_load_dtr_opt) */
	uint32_t pend_line;	 /* line of the open CALL (0: none) */
	uint32_t pend_const;	 /* storage of a CONSTANT awaiting MEMORY,
				    NO_STO if none */
	struct dtr_handle *ht;	 /* handle table, open addressing */
	uint32_t ht_cap;	 /* slots (a power of two) */
	uint32_t ht_n;		 /* occupied slots (alive or not) */
	bool bwd;		 /* after ANNOTATE BACKWARD */
	enum wl_dtr_remat remat; /* which ops are marked recomputable */
	wl_dtr_fn fn;		 /* wl_dtr_scan's callback, NULL when
				    loading a workload */
	bool simrd_rules;	 /* wl_dtr_scan: simrd's parse rules for
				    START and RELEASE (wl_dtr.h) */
	bool started;		 /* an ANNOTATE START was seen */
	bool recorder;		 /* a NOTE names gpumemsim-record: a PyTorch
				    step, run on PyTorch's allocator */
	int64_t rec_batch;	 /* ANNOTATE BATCH n: the batch recorded, its
				    marked sizes proportional to it; 0: none */
	int64_t want_batch;	 /* the batch to load at (0: the log's own) */
	uint32_t batch_line;	 /* the ANNOTATE BATCH's line */
	void *fn_ctx;		 /* its context */
	uint32_t def_id;	 /* id of the handle ht_define bound last */
	uint32_t const_id;	 /* handle of the CONSTANT awaiting MEMORY */
	struct dtr_vec arg_ids;	 /* uint32_t: ARGS' handle ids, parallel to
				    args (callback only) */
	struct dtr_vec ev_res;	 /* struct wl_dtr_result: the closing
				    CALL's results (callback only) */
	struct dtr_vec ev_mut;	 /* uint32_t: MUTATE's indices (callback
				    only) */
	struct dtr_tmemo *tm;	 /* op_type_of's memo, open addressing */
	uint32_t tm_cap, tm_n;	 /* its slots (a power of two), used */
};

/* op_type of an operator name in the forward phase (type[0]) and in
 * backward (type[1]), -1 until asked. */
struct dtr_tmemo {
	const char *name; /* NULL: an empty slot */
	uint32_t hash;	  /* wl_name_hash of name */
	signed char type[2];
};

/* ---- Small helpers ---------------------------------------------------- */

static int vec_push(struct dtr_vec *v, size_t elem, const void *x)
{
	if (v->n == v->cap) {
		uint32_t cap = v->cap ? v->cap * 2 : 64;
		if (cap <= v->cap)
			return -1;
		void *p = realloc(v->p, (size_t)cap * elem);
		if (!p)
			return -1;
		v->p = p;
		v->cap = cap;
	}
	memcpy((char *)v->p + (size_t)v->n * elem, x, elem);
	v->n++;
	return 0;
}

#define VEC_AT(v, type, i) (((type *)(v).p)[i])

/* An error at the current line, column col: "path:line:col: ...". */
static int fail(struct dtr *d, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct dtr *d, uint32_t col, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return gms_errf(d->err, "%s:%u:%u: %s", d->path, d->line, col, msg);
}

static int oom(struct dtr *d)
{
	return fail(d, 1, "out of memory");
}

static uint32_t col_of(const struct dtr *d, const char *p)
{
	return (uint32_t)(p - d->line_start) + 1;
}

/* ---- Handle table ------------------------------------------------------- */

/* The slot of name: its entry, or the empty slot where it would go. */
static struct dtr_handle *ht_slot(const struct dtr *d, const char *name,
				  uint32_t h)
{
	uint32_t mask = d->ht_cap - 1;
	for (uint32_t i = h & mask;; i = (i + 1) & mask) {
		struct dtr_handle *e = &d->ht[i];
		if (!e->name || (e->hash == h && strcmp(e->name, name) == 0))
			return e;
	}
}

/* The live handle called name, or NULL. */
static struct dtr_handle *ht_find(const struct dtr *d, const char *name)
{
	if (!d->ht)
		return NULL;
	struct dtr_handle *e = ht_slot(d, name, wl_name_hash(name));
	return e->name && e->alive ? e : NULL;
}

static int ht_grow(struct dtr *d)
{
	uint32_t cap = d->ht_cap ? d->ht_cap * 2 : 1024;
	if (cap <= d->ht_cap)
		return -1;
	struct dtr_handle *old = d->ht;
	uint32_t old_cap = d->ht_cap;
	d->ht = calloc(cap, sizeof *d->ht);
	if (!d->ht) {
		d->ht = old;
		return -1;
	}
	d->ht_cap = cap;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].name)
			*ht_slot(d, old[i].name, old[i].hash) = old[i];
	free(old);
	return 0;
}

/* Bind a new handle name (key k's value at col) to storage sto; the name
 * must not be alive. Released names are reused in place. */
static int ht_define(struct dtr *d, const char *name, uint32_t col,
		     enum dtr_key k, uint32_t sto)
{
	if ((uint64_t)(d->ht_n + 1) * 2 > d->ht_cap && ht_grow(d) < 0)
		return oom(d);
	uint32_t h = wl_name_hash(name);
	struct dtr_handle *e = ht_slot(d, name, h);
	if (e->name && e->alive)
		return fail(d, col, "key '%s': handle '%s' is already defined",
			    key_names[k], name);
	uint32_t id = e->name ? e->id : d->ht_n;
	if (!e->name)
		d->ht_n++;
	*e = (struct dtr_handle){name, h, sto, true, id};
	d->def_id = id;
	VEC_AT(d->stos, struct dtr_sto, sto).refs++;
	return 0;
}

/* Drop one reference to a storage; the last one releases it. */
static void sto_unref(struct dtr *d, uint32_t sto)
{
	struct dtr_sto *s = &VEC_AT(d->stos, struct dtr_sto, sto);
	if (--s->refs == 0) {
		s->released = true;
		s->rel_op = d->ops.n ? d->ops.n - 1 : NO_OP;
	}
}

/* ---- JSON subset -------------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end)
{
	/* nearly always no blank: a byte above ' ' is none */
	while (p < end && (unsigned char)*p <= ' ' &&
	       (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

/* Parse a string at *pp (at its opening quote), unescaping it in place and
 * NUL-terminating it; *out points to it. what: "key 'ARGS'" or "a key",
 * for messages. */
static int parse_str(struct dtr *d, char **pp, const char *end,
		     const char **out, const char *what)
{
	/* The bytes that end a plain run: the quote, a backslash, and the
	 * control characters, among them the line's end ('\n', or the NUL
	 * after the text: scan_buf). */
	static const unsigned char stop[256] = {
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		['"'] = 1, ['\\'] = 1};
	char *p = *pp + 1, *w;
	*out = p;
	/* a string without escapes, as nearly all are, is left in place:
	 * the run up to its quote is found without bounds checks, as the
	 * line's end stops it (issue 37: 20% of a recorded log's build was
	 * this loop a byte at a time, with a copy) */
	while (!stop[(unsigned char)*p])
		p++;
	if (*p == '"') {
		*p = '\0';
		*pp = p + 1;
		return 0;
	}
	w = p;
	while (p < end && *p != '"') {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20)
			return fail(d, col_of(d, p), "%s: control character "
						     "in a string", what);
		if (c != '\\') {
			*w++ = *p++;
			continue;
		}
		if (p + 1 >= end)
			break;
		char e = p[1];
		const char *sub = strchr("\"\\/bfnrt", e);
		if (e && sub) {
			*w++ = "\"\\/\b\f\n\r\t"[sub - "\"\\/bfnrt"];
			p += 2;
			continue;
		}
		if (e != 'u' || end - p < 6)
			return fail(d, col_of(d, p), "%s: bad escape in a "
						     "string", what);
		unsigned v = 0;
		for (int i = 2; i < 6; i++) {
			char h = p[i];
			int x = h >= '0' && h <= '9'   ? h - '0'
				: h >= 'a' && h <= 'f' ? h - 'a' + 10
				: h >= 'A' && h <= 'F' ? h - 'A' + 10
						       : -1;
			if (x < 0)
				return fail(d, col_of(d, p),
					    "%s: bad \\u escape in a string",
					    what);
			v = v * 16 + (unsigned)x;
		}
		if (v == 0 || (v >= 0xd800 && v <= 0xdfff))
			return fail(d, col_of(d, p), "%s: unsupported \\u "
						     "escape in a string", what);
		/* UTF-8; at most 3 bytes for 6 read */
		if (v < 0x80) {
			*w++ = (char)v;
		} else if (v < 0x800) {
			*w++ = (char)(0xc0 | (v >> 6));
			*w++ = (char)(0x80 | (v & 0x3f));
		} else {
			*w++ = (char)(0xe0 | (v >> 12));
			*w++ = (char)(0x80 | ((v >> 6) & 0x3f));
			*w++ = (char)(0x80 | (v & 0x3f));
		}
		p += 6;
	}
	if (p >= end)
		return fail(d, col_of(d, *pp), "%s: unterminated string",
			    what);
	*w = '\0'; /* w <= p: the closing quote or before */
	*pp = p + 1;
	return 0;
}

/* Parse a decimal integer [-]digits of [p, end) exactly. */
static int parse_int_span(const char *p, const char *end, int64_t *out)
{
	bool neg = false;
	uint64_t v = 0;
	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p == end)
		return -1;
	if (*p == '0' && end - p > 1)
		return -1; /* no leading zeros */
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned dgt = (unsigned)(*p - '0');
		if (v > (UINT64_C(9223372036854775808) - dgt) / 10)
			return -1;
		v = v * 10 + dgt;
	}
	if (!neg && v > INT64_MAX)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* A bare JSON number token at *pp: an integer (no fraction/exponent). */
static int parse_num(struct dtr *d, const char **pp, const char *end,
		     int64_t *out, const char *what)
{
	const char *p = *pp, *q = p;
	while (q < end && (*q == '-' || *q == '+' || *q == '.' ||
			   (*q >= '0' && *q <= '9') || *q == 'e' || *q == 'E'))
		q++;
	if (parse_int_span(p, q, out) < 0)
		return fail(d, col_of(d, p), "%s: expected an integer",
			    what);
	*pp = q;
	return 0;
}

/* One scalar (string or integer) at *pp. */
static int parse_scalar(struct dtr *d, char **pp, const char *end,
			struct jitem *it, const char *what)
{
	char *p = *pp;
	it->col = col_of(d, p);
	it->s = NULL;
	it->n = 0;
	if (*p == '"')
		return parse_str(d, pp, end, &it->s, what);
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		const char *q = p;
		if (parse_num(d, &q, end, &it->n, what) < 0)
			return -1;
		*pp = p + (q - p);
		return 0;
	}
	return fail(d, it->col, "%s: expected a string or an integer",
		    what);
}

/* Parse the line [p, end) into d->f. */
static int parse_line(struct dtr *d, char *p, const char *end)
{
	memset(d->f, 0, sizeof d->f);
	d->given = 0;
	d->items.n = 0;
	p = (char *)skip_ws(p, end);
	if (p >= end || *p != '{')
		return fail(d, col_of(d, p), "expected '{'");
	p = (char *)skip_ws(p + 1, end);
	if (p < end && *p == '}') {
		p++;
		goto tail;
	}
	for (;;) {
		if (p >= end || *p != '"')
			return fail(d, col_of(d, p), "expected a key");
		uint32_t kcol = col_of(d, p);
		const char *key;
		if (parse_str(d, &p, end, &key, "a key") < 0)
			return -1;
		enum dtr_key k = key_index(key);
		if (k == K_COUNT)
			return fail(d, kcol, "unknown key '%s'", key);
		const char *what = key_what[k];
		struct jfield *f = &d->f[k];
		if (f->present)
			return fail(d, kcol, "key '%s' given twice", key);
		p = (char *)skip_ws(p, end);
		if (p >= end || *p != ':')
			return fail(d, col_of(d, p), "key '%s': expected ':'",
				    key);
		p = (char *)skip_ws(p + 1, end);
		if (p >= end)
			return fail(d, col_of(d, p), "key '%s': missing value",
				    key);
		f->present = true;
		d->given |= KB(k);
		f->col = col_of(d, p);
		if (*p == '[') {
			f->type = J_ARR;
			f->first = d->items.n;
			p = (char *)skip_ws(p + 1, end);
			if (p < end && *p == ']') {
				p++;
			} else {
				for (;;) {
					struct jitem it;
					if (p >= end)
						return fail(d, col_of(d, p),
							    "key '%s': "
							    "unterminated array",
							    key);
					if (parse_scalar(d, &p, end, &it,
							 what) < 0)
						return -1;
					if (vec_push(&d->items, sizeof it,
						     &it) < 0)
						return oom(d);
					f->count++;
					p = (char *)skip_ws(p, end);
					if (p < end && *p == ',') {
						p = (char *)skip_ws(p + 1, end);
						continue;
					}
					if (p < end && *p == ']') {
						p++;
						break;
					}
					return fail(d, col_of(d, p),
						    "key '%s': expected ',' "
						    "or ']'", key);
				}
			}
		} else {
			struct jitem it;
			if (*p == '{' || *p == 't' || *p == 'f' || *p == 'n')
				return fail(d, f->col, "key '%s': unsupported "
						       "value", key);
			if (parse_scalar(d, &p, end, &it, what) < 0)
				return -1;
			f->type = it.s ? J_STR : J_INT;
			f->s = it.s;
			f->n = it.n;
		}
		p = (char *)skip_ws(p, end);
		if (p < end && *p == ',') {
			p = (char *)skip_ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		return fail(d, col_of(d, p), "expected ',' or '}'");
	}
tail:
	p = (char *)skip_ws(p, end);
	if (p < end)
		return fail(d, col_of(d, p), "trailing characters after the "
					     "object");
	return 0;
}

/* ---- Field access ------------------------------------------------------- */

/* Key k's value as a non-empty string. */
static int get_str(struct dtr *d, enum dtr_key k, const char **out)
{
	const struct jfield *f = &d->f[k];
	if (f->type != J_STR)
		return fail(d, f->col, "key '%s': expected a string",
			    key_names[k]);
	if (!*f->s)
		return fail(d, f->col, "key '%s': empty name", key_names[k]);
	*out = f->s;
	return 0;
}

/* An integer written as a decimal string or a bare integer, in [lo, hi]. */
static int item_int(struct dtr *d, enum dtr_key k, const struct jitem *it,
		    int64_t lo, int64_t hi, int64_t *out)
{
	int64_t v = it->n;
	if (it->s && parse_int_span(it->s, it->s + strlen(it->s), &v) < 0)
		return fail(d, it->col, "key '%s': '%s' is not an integer",
			    key_names[k], it->s);
	if (v < lo || v > hi)
		return fail(d, it->col, "key '%s': %lld is out of range "
					"[%lld, %lld]",
			    key_names[k], (long long)v, (long long)lo,
			    (long long)hi);
	*out = v;
	return 0;
}

static int get_int(struct dtr *d, enum dtr_key k, int64_t lo, int64_t hi,
		   int64_t *out)
{
	const struct jfield *f = &d->f[k];
	if (f->type == J_ARR)
		return fail(d, f->col, "key '%s': expected an integer",
			    key_names[k]);
	struct jitem it = {f->type == J_STR ? f->s : NULL, f->n, f->col};
	return item_int(d, k, &it, lo, hi, out);
}

static int want_array(struct dtr *d, enum dtr_key k)
{
	if (d->f[k].type != J_ARR)
		return fail(d, d->f[k].col, "key '%s': expected an array",
			    key_names[k]);
	return 0;
}

static const struct jitem *item(const struct dtr *d, enum dtr_key k,
				uint32_t i)
{
	return &VEC_AT(d->items, struct jitem, d->f[k].first + i);
}

/* The live handle named by string item/field (at col) of key k. */
static int lookup(struct dtr *d, enum dtr_key k, const char *name,
		  uint32_t col, struct dtr_handle **out)
{
	*out = ht_find(d, name);
	if (!*out)
		return fail(d, col, "key '%s': unknown handle '%s'",
			    key_names[k], name);
	return 0;
}

/* ---- Instructions ------------------------------------------------------- */

static int new_sto(struct dtr *d, const char *name, bool constant,
		   uint32_t producer, uint64_t bytes, uint32_t *out)
{
	struct dtr_sto s = {.name = name,
			    .bytes = bytes,
			    .constant = constant,
			    .sized = !constant,
			    .producer = producer,
			    .created = producer == NO_OP ? d->ops.n : producer,
			    .rel_op = NO_OP,
			    .tensor = NO_TENSOR,
			    .line = d->line};
	*out = d->stos.n;
	return vec_push(&d->stos, sizeof s, &s) < 0 ? oom(d) : 0;
}

/* Resolve ARGS into storages appended to d->args. */
static int read_args(struct dtr *d, struct dtr_op *op)
{
	if (want_array(d, K_ARGS) < 0)
		return -1;
	op->arg0 = d->args.n;
	op->n_arg = d->f[K_ARGS].count;
	for (uint32_t i = 0; i < op->n_arg; i++) {
		const struct jitem *it = item(d, K_ARGS, i);
		struct dtr_handle *h;
		if (!it->s)
			return fail(d, it->col, "key 'ARGS': expected handle "
						"names");
		if (lookup(d, K_ARGS, it->s, it->col, &h) < 0)
			return -1;
		if (vec_push(&d->args, sizeof h->sto, &h->sto) < 0 ||
		    (d->fn && vec_push(&d->arg_ids, sizeof h->id, &h->id) < 0))
			return oom(d);
	}
	return 0;
}

/* Hand a checked instruction to wl_dtr_scan's callback, if any. */
static int emit(struct dtr *d, struct wl_dtr_event *ev)
{
	if (!d->fn)
		return 0;
	ev->line = d->line;
	return d->fn(d->fn_ctx, ev, d->err) ? -1 : 0;
}

/* The event of op (a CALL or MUTATE), its handles from arg_ids. */
static struct wl_dtr_event op_event(const struct dtr *d,
				    const struct dtr_op *op)
{
	return (struct wl_dtr_event){
		.kind = op->mutate ? WL_DTR_MUTATE : WL_DTR_CALL,
		.name = op->name,
		.time = op->logged < 0 ? 0 : op->logged,
		.timed = op->logged >= 0,
		.args = &VEC_AT(d->arg_ids, uint32_t, op->arg0),
		.n_args = op->n_arg};
}

static int get_time(struct dtr *d, struct dtr_op *op)
{
	int64_t t;
	op->time = 0; /* none: the profile's model (wl_aten.c's costs) */
	op->logged = -1;
	if (!d->f[K_TIME].present)
		return 0;
	/* a measured kernel time: at most WL_OP_TIME_MAX (wl.h), 1e15 ns */
	if (get_int(d, K_TIME, 0, (int64_t)WL_OP_TIME_MAX, &t) < 0)
		return -1;
	op->logged = t;
	if (!d->profile_times)
		op->time = t > 0 ? t : 1; /* 0 would mean "use the profile" */
	return 0;
}

/* ANNOTATE "BATCH n" (issue 35; workloads/README.md, "Logs from
 * gpumemsim-record"): the log was recorded at batch n, and each MEMORY
 * with "BATCH": "1" and each SHAPES dimension written "Db" is proportional
 * to it; the log then loads at any batch. Once per log, before any
 * mark. */
static int do_batch(struct dtr *d, const char *v)
{
	int64_t n = 0;
	const char *q = v;
	while (*q >= '0' && *q <= '9' && n <= 1000000000)
		n = n * 10 + (*q++ - '0');
	if (q == v || *q || n < 1 || n > 1000000000)
		return fail(d, d->f[K_ANNOTATION].col,
			    "key 'ANNOTATION': 'BATCH %s': expected a batch "
			    "in [1, 1e9]", v);
	if (d->rec_batch && d->rec_batch != n)
		return fail(d, d->f[K_ANNOTATION].col,
			    "key 'ANNOTATION': BATCH %lld, but line %u said "
			    "BATCH %lld", (long long)n, d->batch_line,
			    (long long)d->rec_batch);
	d->rec_batch = n;
	d->batch_line = d->line;
	return 0;
}

/* A size or dimension v marked proportional to the batch, at the batch
 * loaded: v / rec_batch * want_batch into *out; 0, or why not: B_NONE
 * when there is no ANNOTATE BATCH, B_MULT when v is not a multiple of it,
 * B_BIG when the result passes WL_BYTES_MAX (batch_fail says it). The
 * check and its message are apart so that the message is made only for
 * an error: formatting it for every marked size was 7% of a recorded
 * log's build (issue 37). */
enum { B_OK, B_NONE, B_MULT, B_BIG };
static int batch_scaled(const struct dtr *d, int64_t v, int64_t *out)
{
	if (!d->rec_batch)
		return B_NONE;
	if (v % d->rec_batch)
		return B_MULT;
	int64_t per = v / d->rec_batch,
		b = d->want_batch ? d->want_batch : d->rec_batch;
	if (per && b > (int64_t)WL_BYTES_MAX / per)
		return B_BIG;
	*out = per * b;
	return B_OK;
}

/* batch_scaled's error why at column col (what: "MEMORY 12", "item 3's
 * dimension 1"). */
static int batch_fail(struct dtr *d, int why, uint32_t col, const char *key,
		      const char *what)
{
	if (why == B_NONE)
		return fail(d, col, "key '%s': %s is marked proportional to "
				    "the batch, but no ANNOTATE BATCH came "
				    "before", key, what);
	if (why == B_MULT)
		return fail(d, col, "key '%s': %s is marked proportional to "
				    "the batch, but is not a multiple of the "
				    "batch %lld", key, what,
			    (long long)d->rec_batch);
	return fail(d, col, "key '%s': %s at batch %lld is more than 1e15",
		    key, what,
		    (long long)(d->want_batch ? d->want_batch : d->rec_batch));
}

/* The dimensions of sh marked proportional to the batch ("4b"), at the
 * batch loaded (batch_scaled); -1 with the error at col, item i. */
static int shape_at_batch(struct dtr *d, struct wl_aten_shape *sh,
			  uint32_t col, uint32_t i)
{
	for (uint32_t k = 0; k < sh->ndim; k++) {
		if (!(sh->batched >> k & 1))
			continue;
		int why = batch_scaled(d, sh->dim[k], &sh->dim[k]);
		if (why != B_OK) {
			char what[64];
			snprintf(what, sizeof what, "item %u's dimension %u",
				 i + 1, k + 1);
			return batch_fail(d, why, col, "SHAPES", what);
		}
	}
	return 0;
}

/* SHAPES (optional): one "DTYPE[D0,...]" per ARGS item and then per
 * RESULT item, each checked here (wl_aten_shape_parse, shape_at_batch). */
static int read_shapes(struct dtr *d, struct dtr_op *op, uint32_t n_result)
{
	op->shp0 = d->shapes.n;
	if (!d->f[K_SHAPES].present)
		return 0;
	if (want_array(d, K_SHAPES) < 0)
		return -1;
	if (d->f[K_SHAPES].count != op->n_arg + n_result)
		return fail(d, d->f[K_SHAPES].col, "key 'SHAPES': %u shapes "
			    "for %u arguments and %u results",
			    d->f[K_SHAPES].count, op->n_arg, n_result);
	for (uint32_t i = 0; i < d->f[K_SHAPES].count; i++) {
		const struct jitem *it = item(d, K_SHAPES, i);
		struct wl_aten_shape sh;
		const char *why = "expected a string";
		if (!it->s || wl_aten_shape_parse(it->s, &sh, &why) < 0)
			return fail(d, it->col, "key 'SHAPES': %s", why);
		if (shape_at_batch(d, &sh, it->col, i) < 0)
			return -1;
		/* kept for op_cost, when building (not by wl_dtr_scan) */
		if (!d->fn && vec_push(&d->shapes, sizeof sh, &sh) < 0)
			return oom(d);
	}
	op->n_shp = d->f[K_SHAPES].count;
	return 0;
}

static int do_call(struct dtr *d)
{
	struct dtr_op op = {.mutate = false, .line = d->line,
			    .phase = d->bwd ? WL_BWD : WL_FWD};
	if (get_str(d, K_NAME, &op.name) < 0 || get_time(d, &op) < 0 ||
	    read_args(d, &op) < 0 || want_array(d, K_RESULT) < 0 ||
	    read_shapes(d, &op, d->f[K_RESULT].count) < 0)
		return -1;
	op.n_result = d->f[K_RESULT].count;
	d->pend.n = 0;
	for (uint32_t i = 0; i < d->f[K_RESULT].count; i++) {
		const struct jitem *it = item(d, K_RESULT, i);
		if (!it->s || !*it->s)
			return fail(d, it->col, "key 'RESULT': expected handle "
						"names");
		if (ht_find(d, it->s))
			return fail(d, it->col, "key 'RESULT': handle '%s' is "
						"already defined", it->s);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(item(d, K_RESULT, j)->s, it->s) == 0)
				return fail(d, it->col, "key 'RESULT': '%s' "
							"listed twice", it->s);
		struct dtr_pend pd = {.name = it->s, .col = it->col};
		if (vec_push(&d->pend, sizeof pd, &pd) < 0)
			return oom(d);
	}
	op.res0 = d->res.n;
	if (vec_push(&d->ops, sizeof op, &op) < 0)
		return oom(d);
	d->pend_line = d->line;
	return 0;
}

/* The open CALL's result named by NAME, or NULL. */
static struct dtr_pend *pending(struct dtr *d, const char *name)
{
	for (uint32_t i = 0; i < d->pend.n; i++) {
		struct dtr_pend *p = &VEC_AT(d->pend, struct dtr_pend, i);
		if (strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

/* Bind the open CALL's results once each has its MEMORY and ALIAS. */
static int close_call(struct dtr *d)
{
	uint32_t o = d->ops.n - 1;
	struct dtr_op *op = &VEC_AT(d->ops, struct dtr_op, o);
	for (uint32_t i = 0; i < d->pend.n; i++) {
		const struct dtr_pend *p = &VEC_AT(d->pend, struct dtr_pend, i);
		uint32_t sto;
		if (p->alias < 0) {
			if (new_sto(d, p->name, false, o, p->bytes, &sto) < 0 ||
			    vec_push(&d->res, sizeof sto, &sto) < 0)
				return oom(d);
			op = &VEC_AT(d->ops, struct dtr_op, o);
			op->n_res++;
		} else {
			sto = VEC_AT(d->args, uint32_t,
				     op->arg0 + (uint32_t)p->alias);
		}
		if (ht_define(d, p->name, p->col, K_RESULT, sto) < 0)
			return -1;
		struct wl_dtr_result r = {d->def_id, p->bytes, p->alias};
		if (d->fn && vec_push(&d->ev_res, sizeof r, &r) < 0)
			return oom(d);
	}
	d->pend.n = 0;
	d->pend_line = 0;
	if (!d->fn)
		return 0;
	op = &VEC_AT(d->ops, struct dtr_op, o);
	struct wl_dtr_event ev = op_event(d, op);
	ev.res = d->ev_res.p;
	ev.n_res = d->ev_res.n;
	d->ev_res.n = 0;
	return emit(d, &ev);
}

/* All results of the open CALL complete? */
static bool call_complete(const struct dtr *d)
{
	for (uint32_t i = 0; i < d->pend.n; i++) {
		const struct dtr_pend *p =
			&VEC_AT(d->pend, const struct dtr_pend, i);
		if (!p->has_mem || !p->has_alias)
			return false;
	}
	return true;
}

static int do_memory(struct dtr *d)
{
	const char *name;
	int64_t bytes;
	if (get_str(d, K_NAME, &name) < 0 ||
	    get_int(d, K_MEMORY, 0, (int64_t)WL_BYTES_MAX, &bytes) < 0)
		return -1;
	if (d->f[K_BATCH].present) {
		int64_t one;
		if (get_int(d, K_BATCH, 1, 1, &one) < 0)
			return -1;
		int why = batch_scaled(d, bytes, &bytes);
		if (why != B_OK) {
			char what[48];
			snprintf(what, sizeof what, "MEMORY %lld",
				 (long long)bytes);
			return batch_fail(d, why, d->f[K_MEMORY].col, "MEMORY",
					  what);
		}
	}
	uint32_t col = d->f[K_NAME].col;
	if (d->pend_const != NO_STO) {
		struct dtr_sto *s =
			&VEC_AT(d->stos, struct dtr_sto, d->pend_const);
		if (strcmp(s->name, name) != 0)
			return fail(d, col, "key 'NAME': MEMORY for '%s', but "
					    "CONSTANT '%s' awaits its size",
				    name, s->name);
		s->bytes = (uint64_t)bytes;
		s->sized = true;
		d->pend_const = NO_STO;
		struct wl_dtr_event ev = {.kind = WL_DTR_CONSTANT,
					  .name = name,
					  .handle = d->const_id,
					  .bytes = (uint64_t)bytes};
		return emit(d, &ev);
	}
	struct dtr_pend *p = d->pend_line ? pending(d, name) : NULL;
	if (!p)
		return fail(d, col, "key 'NAME': MEMORY for %s handle '%s'",
			    ht_find(d, name) ? "the already sized" : "unknown",
			    name);
	if (p->has_mem)
		return fail(d, col, "key 'NAME': second MEMORY for '%s'",
			    name);
	p->has_mem = true;
	p->bytes = (uint64_t)bytes;
	return call_complete(d) ? close_call(d) : 0;
}

static int do_alias(struct dtr *d)
{
	const char *name;
	if (get_str(d, K_NAME, &name) < 0)
		return -1;
	uint32_t col = d->f[K_NAME].col;
	struct dtr_pend *p = d->pend_line ? pending(d, name) : NULL;
	if (!p)
		return fail(d, col, "key 'NAME': ALIAS for '%s', which is not "
				    "a result of the CALL before it", name);
	if (p->has_alias)
		return fail(d, col, "key 'NAME': second ALIAS for '%s'",
			    name);
	const struct dtr_op *op =
		&VEC_AT(d->ops, struct dtr_op, d->ops.n - 1);
	if (get_int(d, K_ALIAS, -1, (int64_t)op->n_arg - 1, &p->alias) < 0)
		return -1;
	p->has_alias = true;
	return call_complete(d) ? close_call(d) : 0;
}

static int do_mutate(struct dtr *d)
{
	struct dtr_op op = {.mutate = true, .line = d->line,
			    .phase = d->bwd ? WL_BWD : WL_FWD};
	if (get_str(d, K_NAME, &op.name) < 0 || get_time(d, &op) < 0 ||
	    read_args(d, &op) < 0 || want_array(d, K_MUTATE) < 0 ||
	    read_shapes(d, &op, 0) < 0)
		return -1;
	bool all_const = d->f[K_MUTATE].count > 0;
	for (uint32_t i = 0; i < d->f[K_MUTATE].count; i++) {
		int64_t k;
		if (item_int(d, K_MUTATE, item(d, K_MUTATE, i), 0,
			     (int64_t)op.n_arg - 1, &k) < 0)
			return -1;
		struct dtr_sto *s = &VEC_AT(
			d->stos, struct dtr_sto,
			VEC_AT(d->args, uint32_t, op.arg0 + (uint32_t)k));
		s->mutated = true;
		all_const &= s->constant;
		uint32_t ki = (uint32_t)k;
		if (d->fn && vec_push(&d->ev_mut, sizeof ki, &ki) < 0)
			return oom(d);
	}
	if (d->bwd && all_const)
		op.phase = WL_UPD;
	op.res0 = d->res.n;
	if (vec_push(&d->ops, sizeof op, &op) < 0)
		return oom(d);
	if (!d->fn)
		return 0;
	struct wl_dtr_event ev = op_event(d, &op);
	ev.mutate = d->ev_mut.p;
	ev.n_mutate = d->ev_mut.n;
	d->ev_mut.n = 0;
	return emit(d, &ev);
}

static int do_copy(struct dtr *d, bool from)
{
	const char *dst, *src;
	struct dtr_handle *hs, *hd;
	if (get_str(d, K_DST, &dst) < 0 || get_str(d, K_SRC, &src) < 0 ||
	    lookup(d, K_SRC, src, d->f[K_SRC].col, &hs) < 0)
		return -1;
	uint32_t sto = hs->sto;
	struct wl_dtr_event ev = {.kind = from ? WL_DTR_COPY_FROM : WL_DTR_COPY,
				  .name = dst,
				  .src = hs->id};
	if (!from) {
		if (ht_define(d, dst, d->f[K_DST].col, K_DST, sto) < 0)
			return -1;
		ev.handle = d->def_id;
		return emit(d, &ev);
	}
	if (lookup(d, K_DST, dst, d->f[K_DST].col, &hd) < 0)
		return -1;
	uint32_t old = hd->sto;
	hd->sto = sto;
	VEC_AT(d->stos, struct dtr_sto, sto).refs++;
	sto_unref(d, old);
	ev.handle = hd->id;
	return emit(d, &ev);
}

static int do_release(struct dtr *d)
{
	const char *name;
	struct dtr_handle *h;
	if (get_str(d, K_NAME, &name) < 0)
		return -1;
	if (d->simrd_rules && !ht_find(d, name)) {
		/* simrd's parse_file (ignore_undefined_release): a name
		 * not bound since the START is skipped; its tensor_map keeps
		 * released names, so one released already is released
		 * again */
		struct dtr_handle *e =
			d->ht ? ht_slot(d, name, wl_name_hash(name)) : NULL;
		if (!e || !e->name)
			return 0;
		struct wl_dtr_event ev = {.kind = WL_DTR_RELEASE,
					  .name = name,
					  .handle = e->id};
		return emit(d, &ev);
	}
	if (lookup(d, K_NAME, name, d->f[K_NAME].col, &h) < 0)
		return -1;
	h->alive = false;
	sto_unref(d, h->sto);
	struct wl_dtr_event ev = {.kind = WL_DTR_RELEASE,
				  .name = name,
				  .handle = h->id};
	return emit(d, &ev);
}

/* ANNOTATE START: forget everything before it. */
static void restart(struct dtr *d)
{
	d->stos.n = d->ops.n = d->args.n = d->res.n = d->pend.n = 0;
	d->shapes.n = 0;
	d->arg_ids.n = d->ev_res.n = d->ev_mut.n = 0;
	d->pend_line = 0;
	d->pend_const = NO_STO;
	if (d->ht)
		memset(d->ht, 0, (size_t)d->ht_cap * sizeof *d->ht);
	d->ht_n = 0;
	d->bwd = false;
}

/* Handle the parsed line. */
static int dispatch(struct dtr *d)
{
	const struct jfield *fi = &d->f[K_INSTRUCTION];
	if (!fi->present)
		return fail(d, 1, "missing key 'INSTRUCTION'");
	if (fi->type != J_STR)
		return fail(d, fi->col, "key 'INSTRUCTION': expected a string");
	int ins = ins_index(fi->s);
	if (ins == I_COUNT)
		return fail(d, fi->col, "key 'INSTRUCTION': unknown "
					"instruction '%s'", fi->s);
	const struct dtr_ins_def *def = &ins_defs[ins];
	/* the keys the instruction must have (as `want` below); only when
	 * the line's do not fit them, the loop finds the first key at
	 * fault (a loop a line was 3% of a recorded log's build, issue 37) */
	unsigned must = def->keys;
	if ((def->opt & KB(K_TIME)) && !d->f[K_SHAPES].present)
		must |= KB(K_TIME);
	bool fits = !(d->given & ~KB(K_INSTRUCTION) & ~(must | def->opt)) &&
		    !(must & ~d->given);
	for (int k = 0; k < K_COUNT && !fits; k++) {
		if (k == K_INSTRUCTION)
			continue;
		/* TIME may be left out only by a log with SHAPES (from
		 * which the profile times the op) */
		bool want = (def->keys & KB(k)) ||
			    (k == K_TIME && (def->opt & KB(k)) &&
			     !d->f[K_SHAPES].present);
		if (d->f[k].present && !want && !(def->opt & KB(k)))
			return fail(d, d->f[k].col, "key '%s' does not belong "
						    "to %s", key_names[k],
				    def->name);
		if (!d->f[k].present && want)
			return fail(d, 1, "%s: missing key '%s'", def->name,
				    key_names[k]);
	}
	/* a CONSTANT's MEMORY and a CALL's MEMORY/ALIAS lines come first */
	if (d->pend_const != NO_STO && ins != I_MEMORY)
		return fail(d, 1, "%s: CONSTANT '%s' has no MEMORY line",
			    def->name,
			    VEC_AT(d->stos, struct dtr_sto, d->pend_const)
				    .name);
	if (d->pend_line && ins != I_MEMORY && ins != I_ALIAS)
		return fail(d, 1, "%s: the CALL on line %u lacks MEMORY and "
				  "ALIAS lines for its results",
			    def->name, d->pend_line);
	switch ((enum dtr_ins)ins) {
	case I_CONSTANT: {
		const char *name;
		uint32_t sto;
		if (get_str(d, K_NAME, &name) < 0 ||
		    new_sto(d, name, true, NO_OP, 0, &sto) < 0 ||
		    ht_define(d, name, d->f[K_NAME].col, K_NAME, sto) < 0)
			return -1;
		d->pend_const = sto;
		d->const_id = d->def_id;
		return 0;
	}
	case I_MEMORY:
		return do_memory(d);
	case I_CALL: {
		if (do_call(d) < 0)
			return -1;
		return d->pend.n == 0 ? close_call(d) : 0;
	}
	case I_ALIAS:
		return do_alias(d);
	case I_MUTATE:
		return do_mutate(d);
	case I_COPY:
		return do_copy(d, false);
	case I_COPY_FROM:
		return do_copy(d, true);
	case I_RELEASE:
		return do_release(d);
	case I_ANNOTATE: {
		const char *a;
		if (get_str(d, K_ANNOTATION, &a) < 0)
			return -1;
		struct wl_dtr_event ev = {.kind = WL_DTR_START};
		if (strcmp(a, "START") == 0) {
			/* simrd drops the lines up to the first START only;
			 * a later one is an annotation it ignores */
			if (d->simrd_rules && d->started)
				return 0;
			d->started = true;
			restart(d);
		} else if (strcmp(a, "BACKWARD") == 0) {
			d->bwd = true;
			ev.kind = WL_DTR_BACKWARD;
		} else if (strncmp(a, "NOTE ", 5) == 0) {
			/* a comment: no event. gpumemsim-record writes
			 * "NOTE gpumemsim-record N, torch V, ..." first
			 * (cli/gpumemsim_record.py): the log is a PyTorch
			 * step (issue 34) */
			if (strncmp(a + 5, "gpumemsim-record ", 17) == 0)
				d->recorder = true;
			return 0;
		} else if (strncmp(a, "BATCH ", 6) == 0) {
			return do_batch(d, a + 6);
		} else {
			return fail(d, d->f[K_ANNOTATION].col,
				    "key 'ANNOTATION': unknown annotation "
				    "'%s' (START, BACKWARD, BATCH n, NOTE ...)",
				    a);
		}
		return emit(d, &ev);
	}
	case I_COUNT:
		break;
	}
	return 0;
}

/* ---- Op types ------------------------------------------------------------ */

static bool has(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

static bool prefix_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strncmp(s, *list, strlen(*list)) == 0)
			return true;
	return false;
}

static const char *const matmul_names[] = {
	"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv",
	"addmv", "dot", "einsum", NULL};
static const char *const concat_names[] = {"cat", "_cat", "stack",
					   "split_backward", NULL};
static const char *const split_names[] = {"split", "split_with_sizes",
					  "chunk", "unbind", NULL};
static const char *const add_names[] = {"add", "add_", "sub", "sub_", "rsub",
					NULL};
/* views: no kernel of their own (ALIAS k results) */
static const char *const view_names[] = {
	"view", "_unsafe_view", "t", "transpose", "permute", "slice",
	"select", "narrow", "as_strided", "expand", "reshape", "squeeze",
	"unsqueeze", "alias", "detach", "unfold", "diagonal", NULL};
static const char *const elemwise_prefixes[] = {
	"mul", "div", "clone", "copy", "contiguous", "sum", "mean",
	"ones_like", "zeros_like", "fill", "zero_", "constant_pad", "neg",
	"exp", "log", "sqrt", "rsqrt", "pow", "tanh", "sigmoid", "gelu",
	"where", "masked_fill", "slice_backward", "select_backward",
	"upsample", "clamp", "abs", "_to_copy", NULL};

/* The op type of a recorded operator; bwd: the backward form when the type
 * has one (backward phase, or "backward" in the name). */
static enum wl_op_type op_type(const char *n, enum wl_phase phase)
{
	bool bwd = phase != WL_FWD || has(n, "backward");
#define PICK(f, b) return bwd ? (b) : (f)
	if (phase == WL_UPD)
		return OT_UPDATE;
	if (has(n, "conv") && !has(n, "convert"))
		PICK(OT_CONV, OT_CONV_BWD_DATA);
	if (has(n, "batch_norm"))
		PICK(OT_BATCHNORM, OT_BATCHNORM_BWD);
	if (has(n, "layer_norm"))
		PICK(OT_LAYERNORM, OT_LAYERNORM_BWD);
	if (has(n, "softmax"))
		PICK(OT_SOFTMAX, OT_SOFTMAX_BWD);
	if (has(n, "dropout") || has(n, "droupout") || has(n, "masked_scale"))
		PICK(OT_DROPOUT, OT_DROPOUT_BWD);
	if (has(n, "relu") || has(n, "threshold"))
		PICK(OT_RELU, OT_RELU_BWD);
	if (has(n, "pool"))
		PICK(OT_POOL, OT_POOL_BWD);
	if (has(n, "embedding"))
		PICK(OT_EMBEDDING, OT_EMBEDDING_BWD);
	if (has(n, "attention"))
		PICK(OT_ATTENTION, OT_ATTENTION_BWD);
	if (has(n, "loss") || has(n, "cross_entropy"))
		PICK(OT_LOSS, OT_LOSS_BWD);
	if (one_of(n, matmul_names))
		PICK(OT_MATMUL, OT_MATMUL_BWD);
#undef PICK
	if (one_of(n, concat_names))
		return OT_CONCAT;
	if (one_of(n, split_names))
		return OT_SPLIT;
	if (one_of(n, add_names))
		return OT_ADD;
	if (one_of(n, view_names))
		return OT_OTHER;
	if (prefix_of(n, elemwise_prefixes))
		return OT_ELEMWISE;
	return OT_OTHER;
}

/* op_type(n, phase) through d's memo: a log has a few dozen operator
 * names, each classified by up to 30 string searches and 40 comparisons
 * (17% of a recorded log's build, issue 37). Without memory for the
 * memo, op_type itself. */
static enum wl_op_type op_type_of(struct dtr *d, const char *n,
				  enum wl_phase phase)
{
	if (phase == WL_UPD)
		return op_type(n, phase);
	if ((uint64_t)(d->tm_n + 1) * 2 > d->tm_cap) {
		uint32_t cap = d->tm_cap ? d->tm_cap * 2 : 64;
		struct dtr_tmemo *t = cap > d->tm_cap ? calloc(cap, sizeof *t)
						      : NULL;
		if (!t)
			return op_type(n, phase);
		for (uint32_t i = 0; i < d->tm_cap; i++) {
			const struct dtr_tmemo *o = &d->tm[i];
			uint32_t k = o->hash & (cap - 1);
			while (o->name && t[k].name)
				k = (k + 1) & (cap - 1);
			if (o->name)
				t[k] = *o;
		}
		free(d->tm);
		d->tm = t;
		d->tm_cap = cap;
	}
	uint32_t h = wl_name_hash(n), k = h & (d->tm_cap - 1);
	while (d->tm[k].name &&
	       (d->tm[k].hash != h || strcmp(d->tm[k].name, n) != 0))
		k = (k + 1) & (d->tm_cap - 1);
	struct dtr_tmemo *e = &d->tm[k];
	if (!e->name) {
		*e = (struct dtr_tmemo){n, h, {-1, -1}};
		d->tm_n++;
	}
	int b = phase != WL_FWD;
	if (e->type[b] < 0)
		e->type[b] = (signed char)op_type(n, phase);
	return (enum wl_op_type)e->type[b];
}

/* ---- Building the workload ---------------------------------------------- */

/* wl_aten_op_desc with the op's type known (op_type_of). */
static void op_desc_typed(const char *name, enum wl_op_type type,
			  const struct wl_aten_shape *in, uint32_t n_in,
			  const struct wl_aten_shape *out, uint32_t n_out,
			  struct wl_op_desc *desc, struct wl_algo *algos,
			  struct wl_conv *conv);

/* Type, time, FLOPs, bytes and convolution geometry of op o into desc
 * (algos: room for CA_MAX_ALGOS). A TIME from the log is kept; without
 * one, a CALL whose results are all views runs no kernel (1 ns), and an
 * op with SHAPES gets wl_aten_cost's FLOPs and bytes for the profile. */
static void op_cost(struct dtr *d, const struct dtr_op *op,
		    struct wl_op_desc *desc, struct wl_algo *algos,
		    struct wl_conv *conv)
{
	desc->type = op_type_of(d, op->name, op->phase);
	desc->time = op->time;
	if (op->time)
		return;
	if (!op->mutate && op->n_result > 0 && op->n_res == 0) {
		desc->time = 1; /* views only: no kernel */
		return;
	}
	if (!op->n_shp)
		return;
	const struct wl_aten_shape *sh =
		&VEC_AT(d->shapes, const struct wl_aten_shape, op->shp0);
	uint32_t n = op->n_shp < 64 ? op->n_shp : 64, n_in = op->n_arg;
	if (n_in > n)
		n_in = n;
	op_desc_typed(op->name, desc->type, sh, n_in, sh + n_in, n - n_in,
		      desc, algos, conv);
}

void wl_aten_op_desc(const char *name, enum wl_phase phase,
		     const struct wl_aten_shape *in, uint32_t n_in,
		     const struct wl_aten_shape *out, uint32_t n_out,
		     struct wl_op_desc *desc, struct wl_algo *algos,
		     struct wl_conv *conv)
{
	op_desc_typed(name, op_type(name, phase), in, n_in, out, n_out, desc,
		      algos, conv);
}

static void op_desc_typed(const char *name, enum wl_op_type type,
			  const struct wl_aten_shape *in, uint32_t n_in,
			  const struct wl_aten_shape *out, uint32_t n_out,
			  struct wl_op_desc *desc, struct wl_algo *algos,
			  struct wl_conv *conv)
{
	struct wl_aten_cost c;
	wl_aten_cost(name, type, in, n_in, out, n_out, &c);
	desc->type = c.type;
	desc->flops = c.flops;
	desc->bytes = c.bytes;
	if (!c.has_conv)
		return;
	*conv = c.conv;
	desc->conv = conv;
	desc->algos = algos;
	if (desc->type == OT_CONV) {
		desc->n_algos = ca_algos(conv, CA_FWD, algos);
		return;
	}
	/* convolution_backward runs cuDNN's data and filter passes in one
	 * ATen op: it takes the pass whose fastest algorithm needs the
	 * larger workspace (the one the op's peak sees), the data pass
	 * when there is no data gradient to compute alike */
	struct wl_algo f[CA_MAX_ALGOS];
	uint32_t nd = ca_algos(conv, CA_BWD_DATA, algos);
	uint32_t nf = ca_algos(conv, CA_BWD_FILTER, f);
	uint32_t kd = wl_fastest_algo_within(algos, nd, UINT64_MAX);
	uint32_t kf = wl_fastest_algo_within(f, nf, UINT64_MAX);
	desc->n_algos = nd;
	if (f[kf].workspace > algos[kd].workspace) {
		memcpy(algos, f, nf * sizeof *f);
		desc->n_algos = nf;
		desc->type = OT_CONV_BWD_FILTER;
	}
}

/* Workload name and batch from a DTR log's file name,
 * "<model>-<batch>-<budget>-<date>-<kind>.log": ("resnet32", 56); any
 * other name: (the base name without .log / .jsonl, 1). */
void wl_dtr_name_from_path(const char *path, char *name, size_t cap,
			   int64_t *batch)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 4 && strcmp(b + n - 4, ".log") == 0)
		n -= 4;
	else if (n > 6 && strcmp(b + n - 6, ".jsonl") == 0)
		n -= 6;
	else if (n > 5 && strcmp(b + n - 5, ".json") == 0)
		n -= 5;
	*batch = 1;
	const char *dash = memchr(b, '-', n);
	if (dash && dash > b) {
		const char *q = dash + 1, *e = b + n;
		int64_t v = 0;
		while (q < e && *q >= '0' && *q <= '9' && v < 1000000000)
			v = v * 10 + (*q++ - '0');
		if (q > dash + 1 && q < e && *q == '-' && v > 0) {
			*batch = v;
			n = (size_t)(dash - b);
		}
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(name, b, n);
	name[n] = '\0';
}

/* An op's name in the workload: snprintf's "%.120s/%u" of its operator
 * and index, written here, as snprintf was 4% of a recorded log's build
 * (issue 37). out: at least 120 + 1 + 10 + 1 bytes. */
static void op_name(char *out, const char *name, uint32_t o)
{
	size_t n = strnlen(name, 120);
	memcpy(out, name, n);
	out[n++] = '/';
	char dig[10];
	int k = 0;
	do
		dig[k++] = (char)('0' + o % 10);
	while ((o /= 10) > 0);
	while (k > 0)
		out[n++] = dig[--k];
	out[n] = '\0';
}

/* What a storage becomes. */
enum sto_role { R_NONE, R_TENSOR, R_WORKSPACE };

static enum sto_role role_of(const struct dtr_sto *s)
{
	if (s->bytes == 0)
		return R_NONE;
	if (!s->constant || !s->released)
		return R_TENSOR;
	if (s->rel_op == NO_OP || s->rel_op < s->created)
		return R_NONE; /* alive across no op */
	return s->rel_op == s->created ? R_WORKSPACE : R_TENSOR;
}

static enum wl_kind kind_of(const struct dtr *d, const struct dtr_sto *s)
{
	if (s->constant)
		return s->released  ? WL_INPUT
		       : s->trained ? WL_PARAM
				    : WL_OPT_STATE;
	enum wl_phase ph = VEC_AT(d->ops, struct dtr_op, s->producer).phase;
	if (ph == WL_FWD)
		return WL_ACT;
	return s->released ? WL_ACT_GRAD : WL_PARAM_GRAD;
}

static struct wl_workload *build(struct dtr *d)
{
	char name[256];
	int64_t batch;
	gms_err *err = d->err;
	wl_dtr_name_from_path(d->path, name, sizeof name, &batch);
	if (d->rec_batch) /* ANNOTATE BATCH: the recorder's word */
		batch = d->rec_batch;
	if (d->want_batch && d->want_batch != batch && !d->rec_batch) {
		gms_errf(err, "%s: recorded at batch %lld, without batch marks "
			      "(ANNOTATE BATCH, gpumemsim-record 2 or later): "
			      "it loads at that batch only, not %lld",
			 d->path, (long long)batch,
			 (long long)d->want_batch);
		return NULL;
	}
	if (d->want_batch) /* the marked sizes were scaled when read */
		batch = d->want_batch;
	struct wl_workload *w = wl_new(name, batch);
	uint32_t *in = NULL, *out = NULL;
	uint64_t *ws = calloc(d->ops.n, sizeof *ws);
	if (!w || !ws) {
		gms_errf(err, "%s: out of memory", d->path);
		goto fail;
	}
	uint32_t last = d->ops.n - 1;
	for (uint32_t o = 0; o < d->ops.n; o++) {
		const struct dtr_op *op = &VEC_AT(d->ops, struct dtr_op, o);
		/* read in forward: a parameter (or a buffer). Not "read by
		 * any op but an update": Adam's step (torch/optim/adam.py,
		 * _single_tensor_adam: `denom = (exp_avg_sq.sqrt() / ...)`,
		 * `step = _get_value(step_t)`) reads its second moment and
		 * its step counter with CALLs, which the log's phases put in
		 * backward; they made those parameters (issue 35) */
		for (uint32_t i = 0; op->phase == WL_FWD && i < op->n_arg; i++)
			VEC_AT(d->stos, struct dtr_sto,
			       VEC_AT(d->args, uint32_t, op->arg0 + i))
				.trained = true;
	}
	/* tensors, in order of creation */
	for (uint32_t i = 0; i < d->stos.n; i++) {
		struct dtr_sto *s = &VEC_AT(d->stos, struct dtr_sto, i);
		enum sto_role r = role_of(s);
		if (r == R_WORKSPACE)
			ws[s->created] += s->bytes;
		if (r != R_TENSOR)
			continue;
		char alt[64];
		const char *nm = s->name;
		if (wl_tensor_id(w, nm) != WL_NONE) { /* a name reused */
			snprintf(alt, sizeof alt, "%.40s#%u", s->name, i);
			nm = alt;
		}
		s->tensor = wl_add_tensor(w, nm, s->bytes, kind_of(d, s), err);
		if (s->tensor == WL_NONE) {
			gms_err_prefix(err, "%s:%u", d->path, s->line);
			goto fail;
		}
	}
	/* ops */
	uint32_t max_arg = 1, max_res = 1;
	for (uint32_t o = 0; o < d->ops.n; o++) {
		const struct dtr_op *op = &VEC_AT(d->ops, struct dtr_op, o);
		if (op->n_arg > max_arg)
			max_arg = op->n_arg;
		if (op->n_res > max_res)
			max_res = op->n_res;
	}
	in = malloc(max_arg * sizeof *in);
	out = malloc(max_res * sizeof *out);
	if (!in || !out) {
		gms_errf(err, "%s: out of memory", d->path);
		goto fail;
	}
	for (uint32_t o = 0; o < d->ops.n; o++) {
		const struct dtr_op *op = &VEC_AT(d->ops, struct dtr_op, o);
		uint32_t n_in = 0, n_out = 0;
		bool mutated = false;
		for (uint32_t i = 0; i < op->n_arg; i++) {
			uint32_t t = VEC_AT(d->stos, struct dtr_sto,
					    VEC_AT(d->args, uint32_t,
						   op->arg0 + i))
					     .tensor;
			bool dup = t == NO_TENSOR;
			for (uint32_t j = 0; j < n_in && !dup; j++)
				dup = in[j] == t;
			if (!dup)
				in[n_in++] = t;
		}
		for (uint32_t i = 0; i < op->n_res; i++) {
			const struct dtr_sto *s = &VEC_AT(
				d->stos, struct dtr_sto,
				VEC_AT(d->res, uint32_t, op->res0 + i));
			mutated |= s->mutated;
			if (s->tensor != NO_TENSOR)
				out[n_out++] = s->tensor;
		}
		char oname[160];
		op_name(oname, op->name, o);
		struct wl_op_desc desc = {
			.name = oname,
			.phase = op->phase,
			.in = in,
			.n_in = n_in,
			.out = out,
			.n_out = n_out,
			.workspace = ws[o],
			/* forward: a forward CALL can be re-run to
			 * regenerate its results, unless a MUTATE changed
			 * them since. simrd: any op ("rematerializing a view
			 * re-executes the view op", dtr-semantics.md 4; a
			 * MUTATE there makes a new tensor its re-run
			 * regenerates). Here a MUTATE writes no tensor of
			 * its own, so a mutated result is regenerated by its
			 * CALL alone: the MUTATE's TIME is not charged
			 * again (README, "Recorded traces"). */
			.recomputable = d->remat == WL_DTR_REMAT_SIMRD ||
					(!op->mutate && op->phase == WL_FWD &&
					 !mutated),
		};
		struct wl_algo algos[CA_MAX_ALGOS];
		struct wl_conv conv;
		op_cost(d, op, &desc, algos, &conv);
		if (wl_add_op(w, &desc, err) == WL_NONE) {
			gms_err_prefix(err, "%s:%u", d->path, op->line);
			goto fail;
		}
	}
	/* release points: the trace's, or the last op when never released */
	for (uint32_t i = 0; i < d->stos.n; i++) {
		const struct dtr_sto *s = &VEC_AT(d->stos, struct dtr_sto, i);
		if (s->tensor == NO_TENSOR ||
		    w->tensors[s->tensor].kind == WL_PARAM ||
		    w->tensors[s->tensor].kind == WL_OPT_STATE)
			continue;
		uint32_t r = s->released ? s->rel_op : last;
		if (wl_set_release_after(w, s->tensor, r, err) < 0)
			goto fail;
	}
	/* a recorded PyTorch step follows the pytorch personality, so the
	 * allocator `framework` is PyTorch's caching allocator
	 * (wl_framework_allocator; issue 34); a DTR log names none */
	if (d->recorder)
		wl_set_framework(w, "pytorch");
	if (wl_finalize(w, err) < 0) {
		gms_err_prefix(err, "%s", d->path);
		goto fail;
	}
	free(in);
	free(out);
	free(ws);
	return w;
fail:
	free(in);
	free(out);
	free(ws);
	wl_free(w);
	return NULL;
}

/* ---- Entry point --------------------------------------------------------- */

static char *read_file(const char *path, size_t *len, gms_err *err)
{
	const struct gms_limit lim = {WL_DTR_MAX_BYTES, GMS_MAX_LINE,
				      "a DTR or recorded log"};
	return gms_read_all(path, &lim, len, err);
}

const char *const wl_dtr_remat_names[] = {"forward", "simrd", NULL};
const char *const wl_dtr_times_names[] = {"log", "profile", NULL};

int wl_dtr_dir(char *out, size_t cap)
{
	const char *e = getenv("GMS_DTR_DIR");
	int k = e && *e ? snprintf(out, cap, "%s", e)
			: snprintf(out, cap, "%s/../shared/data/dtr",
				   hw_datadir());
	return k < 0 || (size_t)k >= cap ? -1 : 0;
}

int wl_dtr_resolve(const char *spec, char *out, size_t cap, gms_err *err)
{
	size_t np = strlen(WL_DTR_PREFIX);
	if (strncmp(spec, WL_DTR_PREFIX, np) != 0) {
		if ((size_t)snprintf(out, cap, "%s", spec) >= cap)
			return gms_errf(err, "%s: path too long", spec);
		return 0;
	}
	char dir[GMS_PATH_MAX];
	if (wl_dtr_dir(dir, sizeof dir) < 0)
		return gms_errf(err, "%s: the DTR trace directory's path is "
				     "too long", spec);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		gms_errf(err, "%s: the DTR traces are not here (no directory "
			      "%s); set GMS_DTR_DIR to where they are, or get "
			      "them from github.com/uwsampl/dtr-prototype "
			      "(docs/third-party-data.md)",
			 spec, dir);
		return WL_DTR_ABSENT;
	}
	int k = snprintf(out, cap, "%s/%s", dir, spec + np);
	if (k < 0 || (size_t)k >= cap)
		return gms_errf(err, "%s: path too long", spec);
	return 0;
}

/* Scan the log held in buf (len bytes, NUL-terminated; parsed in place);
 * 0 or -1 with d->err set. */
static int scan_buf(struct dtr *d, char *buf, size_t len)
{
	int rc = 0;
	char *p = buf, *end = buf + len;
	/* the first NUL byte (end if none): a line holds one when it is
	 * before the line's end, as no earlier line did */
	const char *nul = buf + strlen(buf);
	while (p < end && rc == 0) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		d->line++;
		d->line_start = p;
		if (nul < eol)
			rc = fail(d, 1, "NUL byte in the line");
		else if (skip_ws(p, eol) < eol)
			rc = parse_line(d, p, eol) < 0 ? -1 : dispatch(d);
		p = eol + 1;
	}
	if (rc == 0) {
		d->line++;
		d->line_start = end;
		if (d->pend_const != NO_STO)
			rc = fail(d, 1, "end of file: CONSTANT '%s' has no "
					"MEMORY line",
				  VEC_AT(d->stos, struct dtr_sto, d->pend_const)
					  .name);
		else if (d->pend_line)
			rc = fail(d, 1, "end of file: the CALL on line %u "
					"lacks MEMORY and ALIAS lines for its "
					"results", d->pend_line);
		else if (d->ops.n == 0)
			rc = fail(d, 1, "no CALL or MUTATE: nothing to "
					"simulate");
	}
	return rc;
}

static void dtr_release(struct dtr *d)
{
	free(d->items.p);
	free(d->stos.p);
	free(d->ops.p);
	free(d->args.p);
	free(d->res.p);
	free(d->pend.p);
	free(d->shapes.p);
	free(d->arg_ids.p);
	free(d->ev_res.p);
	free(d->ev_mut.p);
	free(d->ht);
	free(d->tm);
}

struct wl_workload *wl_load_dtr(const char *path, gms_err *err)
{
	return wl_load_dtr_remat(path, WL_DTR_REMAT_FORWARD, err);
}

struct wl_workload *wl_load_dtr_remat(const char *path, enum wl_dtr_remat r,
				      gms_err *err)
{
	return wl_load_dtr_with(path, r, false, err);
}

struct wl_workload *wl_load_dtr_opt(const char *path, bool profile_times,
				    gms_err *err)
{
	return wl_load_dtr_with(path, WL_DTR_REMAT_FORWARD, profile_times, err);
}

struct wl_workload *wl_load_dtr_with(const char *path, enum wl_dtr_remat r,
				     bool profile_times, gms_err *err)
{
	return wl_load_dtr_batch(path, r, profile_times, 0, err);
}

struct wl_workload *wl_load_dtr_batch(const char *path, enum wl_dtr_remat r,
				      bool profile_times, int64_t batch,
				      gms_err *err)
{
	struct wl_workload *w = NULL;
	return wl_load_dtr_rules(path, &r, 1, profile_times, batch, &w,
				 err) < 0
		       ? NULL
		       : w;
}

int wl_load_dtr_rules(const char *path, const enum wl_dtr_remat *r, size_t n,
		      bool profile_times, int64_t batch,
		      struct wl_workload **out, gms_err *err)
{
	for (size_t i = 0; i < n; i++)
		out[i] = NULL;
	size_t pl = strlen(path);
	if (pl > 5 && strcmp(path + pl - 5, ".json") == 0) {
		char nm[256];
		int64_t own;
		wl_dtr_name_from_path(path, nm, sizeof nm, &own);
		if (batch > 0 && batch != own)
			return gms_errf(err, "%s: an execution trace loads at "
					     "its own batch (%lld) only, not "
					     "%lld", path, (long long)own,
					(long long)batch);
		for (size_t i = 0; i < n; i++)
			if (!(out[i] = wl_load_et(path, r[i], err)))
				goto fail;
		return 0;
	}
	size_t len;
	char *buf = read_file(path, &len, err);
	if (!buf)
		return -1;
	struct dtr d = {.path = path, .err = err, .pend_const = NO_STO,
			.profile_times = profile_times,
			.want_batch = batch > 0 ? batch : 0};
	int rc = scan_buf(&d, buf, len);
	/* the rule is read by build alone, which sets each storage's
	 * tensor again (and its `trained` to the same) */
	for (size_t i = 0; i < n && rc == 0; i++) {
		d.remat = r[i];
		if (!(out[i] = build(&d)))
			rc = -1;
	}
	dtr_release(&d);
	free(buf);
	if (rc == 0)
		return 0;
fail:
	for (size_t i = 0; i < n; i++) {
		wl_free(out[i]);
		out[i] = NULL;
	}
	return -1;
}

/* wl_dtr_scan over a buffer of ours. */
static int scan_owned(const char *path, char *buf, size_t len, wl_dtr_fn fn,
		      void *ctx, gms_err *err)
{
	struct dtr d = {.path = path,
			.err = err,
			.pend_const = NO_STO,
			.fn = fn,
			.fn_ctx = ctx,
			.simrd_rules = true};
	int rc = scan_buf(&d, buf, len);
	dtr_release(&d);
	free(buf);
	return rc;
}

int wl_dtr_scan(const char *path, wl_dtr_fn fn, void *ctx, gms_err *err)
{
	size_t len;
	char *buf = read_file(path, &len, err);
	if (!buf)
		return -1;
	return scan_owned(path, buf, len, fn, ctx, err);
}

int wl_dtr_scan_mem(const char *name, const char *text, size_t len,
		    wl_dtr_fn fn, void *ctx, gms_err *err)
{
	char *buf = malloc(len + 1);
	if (!buf)
		return gms_errf(err, "%s: out of memory", name);
	memcpy(buf, text, len);
	buf[len] = '\0';
	return scan_owned(name, buf, len, fn, ctx, err);
}
