/*
 * cfg.c - YAML input checked against prm_def tables (see cfg.h).
 *
 * Messages follow one shape so a user can jump to the spot:
 *     <file>:<line>:<col>: <what>: key '<key>': <problem>
 * with 1-based line and column (libyaml's marks are 0-based). `what` is
 * left out when the caller passes NULL or "".
 *
 * Every value is parsed into a local prm_val first and stored only when it
 * is valid, so a failing prm_set_kv leaves the target untouched.
 */
#include "cfg.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Append s to buf (of size n, holding a string), cutting what does not
 * fit. */
static void cat(char *buf, size_t n, const char *s)
{
	size_t l = strlen(buf), m = strlen(s);
	if (l + 1 >= n)
		return;
	if (m > n - l - 1)
		m = n - l - 1;
	memcpy(buf + l, s, m);
	buf[l + m] = 0;
}

/* ---- documents ------------------------------------------------------- */

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p)
		memcpy(p, s, n);
	return p;
}

/* Turn a libyaml parser error into a message. */
static int parser_error(gms_err *err, const char *name,
			const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "unknown error";
	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return gms_errf(err, "%s: out of memory while reading YAML",
				name);
	case YAML_READER_ERROR:
		/* The reader reports a byte offset, not a line. */
		if (p->problem_value != -1)
			return gms_errf(err,
					"%s: byte %zu: YAML reader error: %s "
					"(#%X)",
					name, p->problem_offset, problem,
					(unsigned)p->problem_value);
		return gms_errf(err, "%s: byte %zu: YAML reader error: %s",
				name, p->problem_offset, problem);
	default:
		break;
	}
	if (p->context)
		return gms_errf(err,
				"%s:%zu:%zu: YAML syntax error: %s (%s, at "
				"%zu:%zu)",
				name, p->problem_mark.line + 1,
				p->problem_mark.column + 1, problem, p->context,
				p->context_mark.line + 1,
				p->context_mark.column + 1);
	return gms_errf(err, "%s:%zu:%zu: YAML syntax error: %s", name,
			p->problem_mark.line + 1, p->problem_mark.column + 1,
			problem);
}

/* Load the first document of an already prepared parser; a second
 * document is an error (a configuration is one mapping). */
static int load_parser(struct cfg_doc **out, const char *name,
		       yaml_parser_t *parser, gms_err *err)
{
	*out = NULL;
	struct cfg_doc *d = calloc(1, sizeof *d);
	if (!d)
		return gms_errf(err, "%s: out of memory", name);
	d->path = dup_str(name);
	if (!d->path) {
		free(d);
		return gms_errf(err, "%s: out of memory", name);
	}
	if (!yaml_parser_load(parser, &d->doc)) {
		parser_error(err, name, parser);
		free(d->path);
		free(d);
		return -1;
	}
	if (yaml_document_get_root_node(&d->doc)) {
		yaml_document_t next;
		if (!yaml_parser_load(parser, &next)) {
			parser_error(err, name, parser);
			cfg_free(d);
			return -1;
		}
		yaml_node_t *r = yaml_document_get_root_node(&next);
		if (r) {
			gms_errf(err,
				 "%s:%zu:%zu: a second YAML document; a "
				 "configuration file holds exactly one",
				 name, r->start_mark.line + 1,
				 r->start_mark.column + 1);
			yaml_document_delete(&next);
			cfg_free(d);
			return -1;
		}
		yaml_document_delete(&next);
	}
	*out = d;
	return 0;
}

/* "name:L:C" of byte `off` of text (1-based, libyaml's counting: a line
 * ends at '\n', columns count bytes). */
static void byte_where(const char *text, size_t off, size_t *line,
		       size_t *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* Count the collections open after event e in *depth; past
 * CFG_MAX_DEPTH an error at e. */
static int depth_step(int *depth, const yaml_event_t *e, const char *name,
		      gms_err *err)
{
	if (e->type == YAML_SEQUENCE_START_EVENT ||
	    e->type == YAML_MAPPING_START_EVENT)
		(*depth)++;
	else if (e->type == YAML_SEQUENCE_END_EVENT ||
		 e->type == YAML_MAPPING_END_EVENT)
		(*depth)--;
	if (*depth > CFG_MAX_DEPTH)
		return gms_errf(err,
				"%s:%zu:%zu: YAML nested deeper than %d "
				"levels (the limit of an input; README, "
				"\"Input limits\")",
				name, e->start_mark.line + 1,
				e->start_mark.column + 1, CFG_MAX_DEPTH);
	return 0;
}

/* The nesting limit, checked before the document is built: the events
 * are read one by one and the pass stops at the first collection deeper
 * than CFG_MAX_DEPTH, so libyaml's scanner (whose work per token grows
 * with the flow nesting: quadratic in it) never sees the rest. A syntax
 * error here is left to the real load, which reports it. */
static int check_depth(const char *name, const char *text, size_t len,
		       gms_err *err)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		return gms_errf(err, "%s: out of memory", name);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	int depth = 0, rc = 0;
	for (;;) {
		yaml_event_t e;
		if (!yaml_parser_parse(&p, &e))
			break;
		yaml_event_type_t t = e.type;
		rc = depth_step(&depth, &e, name, err);
		yaml_event_delete(&e);
		if (rc < 0 || t == YAML_STREAM_END_EVENT)
			break;
	}
	yaml_parser_delete(&p);
	return rc;
}

/* Every YAML input comes through here: the limits of cfg.h, then the
 * document. text holds len bytes (a NUL among them is libyaml's error). */
static int load_text(struct cfg_doc **out, const char *name,
		     const char *text, size_t len, gms_err *err)
{
	if (len > CFG_MAX_BYTES) {
		size_t line, col;
		byte_where(text, CFG_MAX_BYTES, &line, &col);
		return gms_errf(err,
				"%s:%zu:%zu: larger than %d bytes (%d MiB, "
				"the limit of a YAML input; README, \"Input "
				"limits\")",
				name, line, col, CFG_MAX_BYTES,
				CFG_MAX_BYTES >> 20);
	}
	if (check_depth(name, text, len, err) < 0)
		return -1;
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return gms_errf(err, "%s: out of memory", name);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
				     len);
	int rc = load_parser(out, name, &parser, err);
	yaml_parser_delete(&parser);
	return rc;
}

int cfg_load(struct cfg_doc **out, const char *path, gms_err *err)
{
	*out = NULL;
	if (!path || !*path)
		return gms_errf(err, "no configuration file named");
	FILE *f = gms_fopen_in(path, "rb", err);
	if (!f)
		return -1; /* gms_fopen_in said why */
	/* at most one byte past the limit is read: enough to refuse the
	 * file (and to stop on an endless one such as /dev/zero) */
	size_t cap = 0, len = 0;
	char *text = NULL;
	int rc = 0;
	while (len <= CFG_MAX_BYTES) {
		if (len == cap) {
			size_t nc = cap ? 2 * cap : 4096;
			if (nc > (size_t)CFG_MAX_BYTES + 1)
				nc = (size_t)CFG_MAX_BYTES + 1;
			char *nt = realloc(text, nc);
			if (!nt) {
				rc = gms_errf(err, "%s: out of memory", path);
				break;
			}
			text = nt;
			cap = nc;
		}
		size_t r = fread(text + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
	}
	if (rc == 0 && ferror(f))
		rc = gms_errf(err, "%s: cannot read: %s", path,
			      strerror(errno));
	fclose(f);
	if (rc == 0)
		rc = load_text(out, path, text ? text : "", len, err);
	free(text);
	return rc;
}

int cfg_load_string(struct cfg_doc **out, const char *name, const char *text,
		    gms_err *err)
{
	*out = NULL;
	if (!name)
		name = "<string>";
	if (!text)
		text = "";
	return load_text(out, name, text, strlen(text), err);
}

void cfg_free(struct cfg_doc *d)
{
	if (!d)
		return;
	yaml_document_delete(&d->doc);
	free(d->path);
	free(d);
}

yaml_node_t *cfg_root(struct cfg_doc *d)
{
	return d ? yaml_document_get_root_node(&d->doc) : NULL;
}

/* ---- node helpers ---------------------------------------------------- */

const char *cfg_where_mark(struct cfg_doc *d, const yaml_mark_t *mark,
			   char *buf, size_t n)
{
	const char *name = d && d->path ? d->path : "<input>";
	if (!buf || n == 0)
		return buf;
	if (mark)
		snprintf(buf, n, "%s:%zu:%zu", name, mark->line + 1,
			 mark->column + 1);
	else
		snprintf(buf, n, "%s", name);
	return buf;
}

const char *cfg_where(struct cfg_doc *d, const yaml_node_t *node, char *buf,
		      size_t n)
{
	return cfg_where_mark(d, node ? &node->start_mark : NULL, buf, n);
}

int cfg_errf(gms_err *err, struct cfg_doc *d, const yaml_node_t *node,
	     const char *fmt, ...)
{
	if (!err)
		return -1;
	char where[600], body[sizeof err->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	cfg_where(d, node, where, sizeof where);
	err->msg[0] = 0;
	cat(err->msg, sizeof err->msg, where);
	cat(err->msg, sizeof err->msg, ": ");
	cat(err->msg, sizeof err->msg, body);
	return -1;
}

int cfg_err_at(gms_err *err, struct cfg_doc *d, const yaml_node_t *node,
	       const char *fmt, ...)
{
	if (!err)
		return -1;
	char where[600], body[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(body, sizeof body, fmt, ap);
	va_end(ap);
	cfg_where(d, node, where, sizeof where);
	return gms_err_prefix(err, "%s: %s", where, body);
}

const char *cfg_scalar(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SCALAR_NODE)
		return NULL;
	return (const char *)node->data.scalar.value;
}

size_t cfg_seq_len(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SEQUENCE_NODE)
		return 0;
	return (size_t)(node->data.sequence.items.top -
			node->data.sequence.items.start);
}

yaml_node_t *cfg_seq_item(struct cfg_doc *d, const yaml_node_t *node,
			  size_t i)
{
	if (!d || i >= cfg_seq_len(node))
		return NULL;
	return yaml_document_get_node(&d->doc,
				      node->data.sequence.items.start[i]);
}

size_t cfg_map_len(const yaml_node_t *node)
{
	if (!node || node->type != YAML_MAPPING_NODE)
		return 0;
	return (size_t)(node->data.mapping.pairs.top -
			node->data.mapping.pairs.start);
}

int cfg_map_pair(struct cfg_doc *d, const yaml_node_t *node, size_t i,
		 yaml_node_t **key, yaml_node_t **value)
{
	if (key)
		*key = NULL;
	if (value)
		*value = NULL;
	if (!d || i >= cfg_map_len(node))
		return -1;
	const yaml_node_pair_t *p = node->data.mapping.pairs.start + i;
	if (key)
		*key = yaml_document_get_node(&d->doc, p->key);
	if (value)
		*value = yaml_document_get_node(&d->doc, p->value);
	return 0;
}

yaml_node_t *cfg_map_get(struct cfg_doc *d, const yaml_node_t *node,
			 const char *key)
{
	size_t n = cfg_map_len(node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *k, *v;
		cfg_map_pair(d, node, i, &k, &v);
		const char *s = cfg_scalar(k);
		if (s && key && strcmp(s, key) == 0)
			return v;
	}
	return NULL;
}

static const char *node_kind(const yaml_node_t *node)
{
	if (!node)
		return "nothing";
	switch (node->type) {
	case YAML_MAPPING_NODE:
		return "a mapping";
	case YAML_SEQUENCE_NODE:
		return "a sequence";
	case YAML_SCALAR_NODE:
		return "a scalar";
	default:
		return "an empty node";
	}
}

/* A plain (unquoted) scalar that YAML reads as null: "", "~", "null". */
static bool is_plain_null(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SCALAR_NODE ||
	    node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	const char *s = (const char *)node->data.scalar.value;
	return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* ---- values ---------------------------------------------------------- */

/* One parsed value, before it is stored. */
union prm_val {
	int64_t i;		/* PRM_INT */
	uint64_t u;		/* PRM_BYTES */
	double d;		/* PRM_DOUBLE */
	bool b;			/* PRM_BOOL */
	char s[PRM_PATH_MAX];	/* PRM_STR, PRM_PATH */
	int e;			/* PRM_ENUM */
	sim_time_t t;		/* PRM_TIME */
	yaml_node_t *node;	/* PRM_NODE */
};

static const char *type_name(enum prm_type t)
{
	switch (t) {
	case PRM_INT:
		return "int";
	case PRM_BYTES:
		return "bytes";
	case PRM_DOUBLE:
		return "double";
	case PRM_BOOL:
		return "bool";
	case PRM_STR:
		return "string";
	case PRM_PATH:
		return "path";
	case PRM_ENUM:
		return "enum";
	case PRM_TIME:
		return "time";
	case PRM_NODE:
		return "mapping";
	}
	return "?";
}

static const char *type_expect(enum prm_type t)
{
	switch (t) {
	case PRM_INT:
		return "an integer";
	case PRM_BYTES:
		return "a byte size (e.g. 4096, 512MiB, 16GiB; GB = 10^9 "
		       "bytes, GiB or G = 2^30)";
	case PRM_DOUBLE:
		return "a number";
	case PRM_BOOL:
		return "a boolean (true/false/yes/no)";
	case PRM_STR:
		return "a string";
	case PRM_PATH:
		return "a path";
	case PRM_ENUM:
		return "one of the listed values";
	case PRM_TIME:
		return "a duration (e.g. 1500, 10us, 2.5ms)";
	case PRM_NODE:
		return "a mapping or sequence";
	}
	return "?";
}


/* "a, b, c" of a NULL-terminated list. */
static void join_choices(char *buf, size_t n, const char *const *choices,
			 const char *sep)
{
	buf[0] = 0;
	for (size_t i = 0; choices && choices[i]; i++) {
		if (i)
			cat(buf, n, sep);
		cat(buf, n, choices[i]);
	}
}

/* "a, b, c" of the keys of a table. */
/* The keys of defs joined into buf (size n), and into hint the nearest
 * to the unknown key `key` when one is close (gms_near_hint). */
static void join_keys(char *buf, size_t n, const struct prm_def *defs,
		      const char *key, char *hint)
{
	struct gms_near near;
	gms_near_init(&near, key);
	buf[0] = 0;
	for (size_t i = 0; defs[i].key; i++) {
		gms_list_add(buf, n, defs[i].key);
		gms_near_add(&near, defs[i].key);
	}
	gms_near_hint(&near, hint);
}

static bool has_range(const struct prm_def *p)
{
	return !(p->min == 0 && p->max == 0);
}

/* Range check of a numeric value; writes why on failure. */
static int check_range(const struct prm_def *p, double v, const char *text,
		       char *why, size_t n)
{
	if (!has_range(p))
		return 0;
	if (v < p->min || v > p->max) {
		snprintf(why, n, "%s is out of range [%g, %g]", text, p->min,
			 p->max);
		return -1;
	}
	return 0;
}

/* Parse scalar text s for p into v. `null` says the YAML value was a plain
 * null (empty). On failure writes the problem into why and returns -1. */
static int parse_text(const struct prm_def *p, const char *s, bool null,
		      union prm_val *v, char *why, size_t n)
{
	char qt[GMS_QUOTE_BUF]; /* s as quoted in messages */
	/* Only what store() copies is set: a string's whole field (its
	 * tail zeroed), else the member of the type, written below. Zeroing
	 * the whole union, PRM_PATH_MAX (4 KiB) bytes, for every value was
	 * most of a streamed workload's per-value work (issue 37). */
	v->u = 0;
	if (p->type == PRM_STR || p->type == PRM_PATH) {
		const char *t = null ? "" : s;
		size_t max = p->type == PRM_STR ? PRM_STR_MAX : PRM_PATH_MAX;
		size_t len = strlen(t);
		if (len >= max) {
			snprintf(why, n,
				 "string is %zu characters long; at most %zu "
				 "are allowed",
				 len, max - 1);
			return -1;
		}
		memcpy(v->s, t, len);
		memset(v->s + len, 0, max - len);
		return 0;
	}
	if (p->type == PRM_NODE) {
		snprintf(why, n, "expected %s, found a scalar",
			 type_expect(p->type));
		return -1;
	}
	if (null || !*s) {
		snprintf(why, n, "expected %s, found an empty value",
			 type_expect(p->type));
		return -1;
	}
	/* Skip leading blanks when looking for a minus sign. */
	const char *q = s;
	while (isspace((unsigned char)*q))
		q++;
	switch (p->type) {
	case PRM_INT:
		if (gms_parse_int(s, &v->i) < 0) {
			snprintf(why, n, "expected %s, found %s",
				 type_expect(p->type), gms_quote(qt, s));
			return -1;
		}
		return check_range(p, (double)v->i, s, why, n);
	case PRM_BYTES:
		if (*q == '-') {
			snprintf(why, n, "a size must not be negative (%s)",
				 gms_quote(qt, s));
			return -1;
		}
		if (gms_parse_bytes(s, &v->u) < 0) {
			snprintf(why, n, "expected %s, found %s",
				 type_expect(p->type), gms_quote(qt, s));
			return -1;
		}
		return check_range(p, (double)v->u, s, why, n);
	case PRM_DOUBLE:
		if (gms_parse_double(s, &v->d) < 0) {
			snprintf(why, n, "expected %s, found %s",
				 type_expect(p->type), gms_quote(qt, s));
			return -1;
		}
		return check_range(p, v->d, s, why, n);
	case PRM_TIME:
		if (*q == '-') {
			snprintf(why, n, "a time must not be negative (%s)",
				 gms_quote(qt, s));
			return -1;
		}
		if (gms_parse_time(s, &v->t) < 0) {
			snprintf(why, n, "expected %s, found %s",
				 type_expect(p->type), gms_quote(qt, s));
			return -1;
		}
		return check_range(p, (double)v->t, s, why, n);
	case PRM_BOOL:
		if (strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0) {
			v->b = true;
			return 0;
		}
		if (strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0) {
			v->b = false;
			return 0;
		}
		snprintf(why, n, "expected %s, found %s",
			 type_expect(p->type), gms_quote(qt, s));
		return -1;
	case PRM_ENUM:
		for (int i = 0; p->choices && p->choices[i]; i++)
			if (strcmp(p->choices[i], s) == 0) {
				v->e = i;
				return 0;
			}
		{
			char list[700], hint[GMS_NEAR_BUF];
			struct gms_near near;
			gms_near_init(&near, s);
			for (int i = 0; p->choices && p->choices[i]; i++)
				gms_near_add(&near, p->choices[i]);
			join_choices(list, sizeof list, p->choices, ", ");
			snprintf(why, n, "%s is not one of: %s%s",
				 gms_quote(qt, s), list,
				 gms_near_hint(&near, hint));
		}
		return -1;
	case PRM_STR:
	case PRM_PATH:
	case PRM_NODE:
		break;
	}
	snprintf(why, n, "unsupported parameter type %d", (int)p->type);
	return -1;
}

static void store(const struct prm_def *p, void *dst, const union prm_val *v)
{
	char *at = (char *)dst + p->offset;
	switch (p->type) {
	case PRM_INT:
		memcpy(at, &v->i, sizeof v->i);
		break;
	case PRM_BYTES:
		memcpy(at, &v->u, sizeof v->u);
		break;
	case PRM_DOUBLE:
		memcpy(at, &v->d, sizeof v->d);
		break;
	case PRM_BOOL:
		memcpy(at, &v->b, sizeof v->b);
		break;
	case PRM_STR:
		memcpy(at, v->s, PRM_STR_MAX);
		break;
	case PRM_PATH:
		memcpy(at, v->s, PRM_PATH_MAX);
		break;
	case PRM_ENUM:
		memcpy(at, &v->e, sizeof v->e);
		break;
	case PRM_TIME:
		memcpy(at, &v->t, sizeof v->t);
		break;
	case PRM_NODE:
		memcpy(at, &v->node, sizeof v->node);
		break;
	}
}

/* Store the default of p. A PRM_NODE default (any non-NULL def) is a NULL
 * node pointer: the key was absent. */
static int apply_default(const struct prm_def *p, void *dst, gms_err *err)
{
	union prm_val v;
	char why[800];
	if (p->type == PRM_NODE) {
		memset(&v, 0, sizeof v);
		store(p, dst, &v);
		return 0;
	}
	if (parse_text(p, p->def, false, &v, why, sizeof why) < 0)
		return gms_errf(err,
				"key '%s': invalid default '%s' in the "
				"parameter table: %s",
				p->key, p->def, why);
	store(p, dst, &v);
	return 0;
}

static const char *what_sep(const char *what)
{
	return what && *what ? ": " : "";
}

static const char *what_str(const char *what)
{
	return what && *what ? what : "";
}

int prm_set_defaults(const struct prm_def *defs, void *dst, gms_err *err)
{
	for (const struct prm_def *p = defs; p && p->key; p++)
		if (!p->def)
			return gms_errf(err,
					"key '%s' is required and has no "
					"default",
					p->key);
	for (const struct prm_def *p = defs; p && p->key; p++)
		if (apply_default(p, dst, err) < 0)
			return -1;
	return 0;
}

/* ---- mappings -------------------------------------------------------- */

/* parse_map's modes: apply the defaults first; refuse a missing
 * required key. */
enum { PM_DEFAULTS = 1, PM_REQUIRED = 2 };

static int parse_map(struct cfg_doc *d, yaml_node_t *node,
		     const struct prm_def *defs, void *dst, const char *what,
		     int mode, gms_err *err)
{
	const char *ws = what_str(what), *sep = what_sep(what);
	char qt[GMS_QUOTE_BUF]; /* a file's text as quoted in messages */
	if (!node)
		return cfg_errf(err, d, NULL, "%s%sexpected a mapping, found "
				"an empty document", ws, sep);
	if (node->type != YAML_MAPPING_NODE) {
		const char *s = cfg_scalar(node);
		if (s && is_plain_null(node))
			return cfg_errf(err, d, node,
					"%s%sexpected a mapping, found an "
					"empty value",
					ws, sep);
		if (s)
			return cfg_errf(err, d, node,
					"%s%sexpected a mapping, found a "
					"scalar %s",
					ws, sep, gms_quote(qt, s));
		return cfg_errf(err, d, node,
				"%s%sexpected a mapping, found %s", ws, sep,
				node_kind(node));
	}
	size_t ndefs = 0;
	while (defs[ndefs].key)
		ndefs++;
	if (mode & PM_DEFAULTS)
		for (size_t i = 0; i < ndefs; i++)
			if (defs[i].def && apply_default(&defs[i], dst, err) < 0)
				return -1;
	/* First key node of each def seen so far, for duplicates and the
	 * required check; on the stack for the usual table (a streamed
	 * workload parses a mapping per op). */
	yaml_node_t *seen_small[32] = {0};
	yaml_node_t **seen = seen_small;
	if (ndefs + 1 > sizeof seen_small / sizeof *seen_small)
		seen = calloc(ndefs + 1, sizeof *seen);
	if (!seen)
		return gms_errf(err, "out of memory");
	int rc = 0;
	size_t npairs = cfg_map_len(node);
	for (size_t i = 0; i < npairs && rc == 0; i++) {
		yaml_node_t *k, *v;
		cfg_map_pair(d, node, i, &k, &v);
		const char *key = cfg_scalar(k);
		if (!key) {
			rc = cfg_errf(err, d, k,
				      "%s%sa key must be a scalar, found %s",
				      ws, sep, node_kind(k));
			break;
		}
		size_t j = 0;
		while (j < ndefs && strcmp(defs[j].key, key) != 0)
			j++;
		if (j == ndefs) {
			char known[800], hint[GMS_NEAR_BUF];
			join_keys(known, sizeof known, defs, key, hint);
			rc = cfg_errf(err, d, k,
				      "%s%skey %s: unknown key%s (known: %s)",
				      ws, sep, gms_quote(qt, key), hint,
				      known);
			break;
		}
		const struct prm_def *p = &defs[j];
		if (seen[j]) {
			rc = cfg_errf(err, d, k,
				      "%s%skey '%s': duplicate key (first at "
				      "line %zu, column %zu)",
				      ws, sep, key,
				      seen[j]->start_mark.line + 1,
				      seen[j]->start_mark.column + 1);
			break;
		}
		seen[j] = k;
		union prm_val val;
		if (p->type == PRM_NODE) {
			val.node = v; /* all that store() copies */
			store(p, dst, &val);
			continue;
		}
		if (!v || v->type != YAML_SCALAR_NODE) {
			rc = cfg_errf(err, d, v ? v : k,
				      "%s%skey '%s': expected %s, found %s",
				      ws, sep, key, type_expect(p->type),
				      node_kind(v));
			break;
		}
		char why[800];
		if (parse_text(p, cfg_scalar(v), is_plain_null(v), &val, why,
			       sizeof why) < 0) {
			rc = cfg_errf(err, d, v, "%s%skey '%s': %s", ws, sep,
				      key, why);
			break;
		}
		store(p, dst, &val);
	}
	if (rc == 0 && (mode & PM_REQUIRED))
		for (size_t j = 0; j < ndefs; j++)
			if (!defs[j].def && !seen[j]) {
				rc = cfg_errf(err, d, node,
					      "%s%skey '%s': missing required "
					      "key",
					      ws, sep, defs[j].key);
				break;
			}
	if (seen != seen_small)
		free(seen);
	return rc;
}

int cfg_parse_map(struct cfg_doc *d, yaml_node_t *node,
		  const struct prm_def *defs, void *dst, const char *what,
		  gms_err *err)
{
	return parse_map(d, node, defs, dst, what, PM_DEFAULTS | PM_REQUIRED,
			 err);
}

int cfg_parse_map_over(struct cfg_doc *d, yaml_node_t *node,
		       const struct prm_def *defs, void *dst,
		       const char *what, gms_err *err)
{
	return parse_map(d, node, defs, dst, what, 0, err);
}

int prm_defaults_of(const struct prm_def *defs, void *dst, gms_err *err)
{
	for (const struct prm_def *p = defs; p && p->key; p++)
		if (p->def && apply_default(p, dst, err) < 0)
			return -1;
	return 0;
}

int cfg_parse_map_from(struct cfg_doc *d, yaml_node_t *node,
		       const struct prm_def *defs, void *dst,
		       const void *defaults, size_t size, const char *what,
		       gms_err *err)
{
	/* a mapping refused before any value is stored, as cfg_parse_map
	 * refuses it before applying its defaults */
	if (node && node->type == YAML_MAPPING_NODE)
		memcpy(dst, defaults, size);
	return parse_map(d, node, defs, dst, what, PM_REQUIRED, err);
}

/* ---- key=value ------------------------------------------------------- */

int prm_set_kv(const struct prm_def *defs, void *dst, const char *kv,
	       const char *what, gms_err *err)
{
	const char *ws = what_str(what), *sep = what_sep(what);
	if (!kv)
		return gms_errf(err, "%s%sexpected key=value, found nothing",
				ws, sep);
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv)
		return gms_errf(err, "%s%sexpected key=value, found '%s'", ws,
				sep, kv);
	char key[PRM_STR_MAX];
	size_t kl = (size_t)(eq - kv);
	if (kl >= sizeof key)
		return gms_errf(err, "%s%skey '%.*s...': unknown key", ws, sep,
				40, kv);
	memcpy(key, kv, kl);
	key[kl] = 0;
	const struct prm_def *p = defs;
	while (p->key && strcmp(p->key, key) != 0)
		p++;
	if (!p->key) {
		char known[800], hint[GMS_NEAR_BUF];
		join_keys(known, sizeof known, defs, key, hint);
		return gms_errf(err,
				"%s%skey '%s': unknown key%s (known: %s)", ws,
				sep, key, hint, known);
	}
	if (p->type == PRM_NODE)
		return gms_errf(err,
				"%s%skey '%s': a nested mapping cannot be set "
				"with key=value",
				ws, sep, key);
	union prm_val v;
	char why[800];
	if (parse_text(p, eq + 1, false, &v, why, sizeof why) < 0)
		return gms_errf(err, "%s%skey '%s': %s", ws, sep, key, why);
	store(p, dst, &v);
	return 0;
}

/* ---- help ------------------------------------------------------------ */

/* The range/choices column of p into buf. */
static void range_text(const struct prm_def *p, char *buf, size_t n)
{
	buf[0] = 0;
	if (p->type == PRM_ENUM)
		join_choices(buf, n, p->choices, "|");
	else if (has_range(p))
		snprintf(buf, n, "[%g, %g]", p->min, p->max);
	else if (p->type == PRM_BYTES || p->type == PRM_TIME)
		snprintf(buf, n, ">= 0");
}

static const char *def_text(const struct prm_def *p)
{
	if (!p->def)
		return "(required)";
	if (p->type == PRM_NODE)
		return "(optional)";
	if ((p->type == PRM_STR || p->type == PRM_PATH) && !*p->def)
		return "\"\"";
	return p->def;
}

void prm_print_help(const struct prm_def *defs, FILE *f, const char *indent)
{
	if (!f || !defs)
		return;
	if (!indent)
		indent = "";
	int wk = 3, wt = 4, wd = 7, wr = 5;
	char r[512];
	for (const struct prm_def *p = defs; p->key; p++) {
		int l = (int)strlen(p->key);
		wk = l > wk ? l : wk;
		l = (int)strlen(type_name(p->type));
		wt = l > wt ? l : wt;
		l = (int)strlen(def_text(p));
		wd = l > wd ? l : wd;
		range_text(p, r, sizeof r);
		l = (int)strlen(r);
		wr = l > wr ? l : wr;
	}
	fprintf(f, "%s%-*s  %-*s  %-*s  %-*s  %s\n", indent, wk, "key", wt,
		"type", wd, "default", wr, "range", "description");
	for (const struct prm_def *p = defs; p->key; p++) {
		range_text(p, r, sizeof r);
		fprintf(f, "%s%-*s  %-*s  %-*s  %-*s  %s\n", indent, wk, p->key,
			wt, type_name(p->type), wd, def_text(p), wr, r,
			p->help ? p->help : "");
	}
}

/* ---- streaming ------------------------------------------------------- */

/* libyaml's read handler: hands the parser at most max_bytes bytes and
 * stops (an input error) when the file holds one more. */
static int stream_read(void *data, unsigned char *buf, size_t size,
		       size_t *size_read)
{
	struct cfg_stream *s = data;
	*size_read = 0;
	if (s->nread >= s->max_bytes) {
		unsigned char extra;
		if (fread(&extra, 1, 1, s->f) == 1) {
			s->too_big = true;
			return 0;
		}
		return !ferror(s->f);
	}
	if (s->since_event > s->max_item) {
		s->too_long = true;
		return 0;
	}
	uint64_t left = s->max_bytes - s->nread;
	if (size > left)
		size = (size_t)left;
	*size_read = fread(buf, 1, size, s->f);
	if (s->on_read && *size_read)
		s->on_read(s->on_read_arg, buf, *size_read);
	s->nread += *size_read;
	s->since_event += *size_read;
	return *size_read > 0 || !ferror(s->f);
}

static int stream_start(struct cfg_stream *s, gms_err *err)
{
	if (!yaml_parser_initialize(&s->parser))
		return gms_errf(err, "%s: out of memory", s->path);
	s->started = true;
	s->nread = 0;
	s->too_big = false;
	s->too_long = false;
	s->since_event = 0;
	memset(&s->last, 0, sizeof s->last);
	s->depth = 0;
	yaml_parser_set_input(&s->parser, stream_read, s);
	return 0;
}

int cfg_stream_open(struct cfg_stream *s, const char *path,
		    uint64_t max_bytes, gms_err *err)
{
	memset(s, 0, sizeof *s);
	if (!path || !*path)
		return gms_errf(err, "no configuration file named");
	s->max_bytes = max_bytes;
	s->max_item = CFG_MAX_ITEM;
	s->path = dup_str(path);
	if (!s->path)
		return gms_errf(err, "%s: out of memory", path);
	s->f = gms_fopen_in(path, "rb", err);
	if (!s->f)
		return -1; /* gms_fopen_in said why */
	return stream_start(s, err);
}

int cfg_stream_rewind(struct cfg_stream *s, gms_err *err)
{
	if (s->started)
		yaml_parser_delete(&s->parser);
	s->started = false;
	if (fseek(s->f, 0, SEEK_SET) != 0)
		return gms_errf(err,
				"%s: cannot read it again (%s): a workload "
				"file is read in passes, give a regular file",
				s->path, strerror(errno));
	clearerr(s->f);
	return stream_start(s, err);
}

int cfg_stream_next(struct cfg_stream *s, yaml_event_t *e, gms_err *err)
{
	if (!yaml_parser_parse(&s->parser, e)) {
		if (s->too_big)
			return gms_errf(err,
					"%s: byte %llu: larger than %llu bytes "
					"(the limit of this input; README, "
					"\"Input limits\")",
					s->path,
					(unsigned long long)s->max_bytes + 1,
					(unsigned long long)s->max_bytes);
		if (s->too_long)
			return gms_errf(err,
					"%s:%zu:%zu: too large: more than %llu "
					"bytes after here without a YAML event "
					"(a scalar or a comment that long; the "
					"limit of one item of a streamed "
					"workload file; README, \"Input "
					"limits\")",
					s->path, s->last.line + 1,
					s->last.column + 1,
					(unsigned long long)s->max_item);
		if (ferror(s->f))
			return gms_errf(err, "%s: cannot read: %s", s->path,
					strerror(errno));
		return parser_error(err, s->path, &s->parser);
	}
	s->since_event = 0;
	s->last = e->end_mark;
	if (depth_step(&s->depth, e, s->path, err) < 0) {
		yaml_event_delete(e);
		return -1;
	}
	return 0;
}

/* The tag a node gets, as yaml_parser_load gives it (NULL and "!" are
 * the default). */
static const yaml_char_t *node_tag(const yaml_char_t *tag)
{
	return tag && strcmp((const char *)tag, "!") != 0 ? tag : NULL;
}

/* Add the node that starts with *e (not consumed) to doc, a collection
 * empty; *id its id. */
static int add_node(struct cfg_stream *s, const yaml_event_t *e,
		    yaml_document_t *doc, int *id, gms_err *err)
{
	int rc = 0;
	*id = 0;
	switch (e->type) {
	case YAML_SCALAR_EVENT:
		if (e->data.scalar.length > INT_MAX) {
			rc = gms_errf(err, "%s:%zu:%zu: a scalar of %zu bytes",
				      s->path, e->start_mark.line + 1,
				      e->start_mark.column + 1,
				      e->data.scalar.length);
			break;
		}
		*id = yaml_document_add_scalar(
			doc, node_tag(e->data.scalar.tag),
			e->data.scalar.value, (int)e->data.scalar.length,
			e->data.scalar.style);
		break;
	case YAML_SEQUENCE_START_EVENT:
		*id = yaml_document_add_sequence(
			doc, node_tag(e->data.sequence_start.tag),
			e->data.sequence_start.style);
		break;
	case YAML_MAPPING_START_EVENT:
		*id = yaml_document_add_mapping(
			doc, node_tag(e->data.mapping_start.tag),
			e->data.mapping_start.style);
		break;
	case YAML_ALIAS_EVENT:
		rc = gms_errf(err,
			      "%s:%zu:%zu: YAML alias '*%s': aliases are not "
			      "read in this input (it is streamed; write "
			      "the value out)",
			      s->path, e->start_mark.line + 1,
			      e->start_mark.column + 1,
			      (const char *)e->data.alias.anchor);
		break;
	default:
		rc = gms_errf(err, "%s:%zu:%zu: unexpected YAML event %d",
			      s->path, e->start_mark.line + 1,
			      e->start_mark.column + 1, (int)e->type);
		break;
	}
	if (rc == 0 && !*id)
		rc = gms_errf(err, "%s: out of memory", s->path);
	if (rc == 0) {
		yaml_node_t *n = yaml_document_get_node(doc, *id);
		n->start_mark = e->start_mark;
		n->end_mark = e->end_mark;
	}
	return rc;
}

/* Build the node starting at *e (consumed) into doc; *id its id. */
static int build(struct cfg_stream *s, yaml_event_t *e, yaml_document_t *doc,
		 int *id, gms_err *err)
{
	int rc = add_node(s, e, doc, id, err);
	yaml_event_type_t t = e->type;
	yaml_event_delete(e);
	if (rc < 0 || t == YAML_SCALAR_EVENT)
		return rc;
	bool map = t == YAML_MAPPING_START_EVENT;
	for (int key = 0;;) {
		yaml_event_t c;
		if (cfg_stream_next(s, &c, err) < 0)
			return -1;
		if (c.type == YAML_SEQUENCE_END_EVENT ||
		    c.type == YAML_MAPPING_END_EVENT) {
			yaml_document_get_node(doc, *id)->end_mark = c.end_mark;
			yaml_event_delete(&c);
			return 0;
		}
		int child;
		if (build(s, &c, doc, &child, err) < 0)
			return -1;
		int ok = 1;
		if (!map)
			ok = yaml_document_append_sequence_item(doc, *id, child);
		else if (key)
			ok = yaml_document_append_mapping_pair(doc, *id, key,
								child);
		key = map && !key ? child : 0;
		if (!ok)
			return gms_errf(err, "%s: out of memory", s->path);
	}
}

int cfg_stream_node(struct cfg_stream *s, yaml_event_t *first,
		    struct cfg_doc *d, yaml_node_t **out, gms_err *err)
{
	int id;
	*out = NULL;
	if (build(s, first, &d->doc, &id, err) < 0)
		return -1;
	*out = yaml_document_get_node(&d->doc, id);
	return 0;
}

int cfg_stream_stub(struct cfg_stream *s, yaml_event_t *first,
		    struct cfg_doc *d, yaml_node_t **out, size_t *n_items,
		    gms_err *err)
{
	int id;
	*out = NULL;
	if (n_items)
		*n_items = 0;
	if (first->type != YAML_SEQUENCE_START_EVENT &&
	    first->type != YAML_MAPPING_START_EVENT)
		return cfg_stream_node(s, first, d, out, err);
	if (add_node(s, first, &d->doc, &id, err) < 0) {
		yaml_event_delete(first);
		return -1;
	}
	if (cfg_stream_skip(s, first, n_items, err) < 0)
		return -1;
	*out = yaml_document_get_node(&d->doc, id);
	return 0;
}

int cfg_stream_skip(struct cfg_stream *s, yaml_event_t *first,
		    size_t *n_items, gms_err *err)
{
	int base = s->depth;
	size_t n = 0;
	bool open = first->type == YAML_SEQUENCE_START_EVENT ||
		    first->type == YAML_MAPPING_START_EVENT;
	yaml_event_delete(first);
	while (open) {
		yaml_event_t e;
		if (cfg_stream_next(s, &e, err) < 0)
			return -1;
		/* a child begins one level in: depth base (a scalar) or
		 * base + 1 (a collection start) */
		if (s->depth == base + (e.type == YAML_SEQUENCE_START_EVENT ||
					e.type == YAML_MAPPING_START_EVENT))
			n += e.type != YAML_SEQUENCE_END_EVENT &&
			     e.type != YAML_MAPPING_END_EVENT;
		open = s->depth >= base;
		yaml_event_delete(&e);
	}
	if (n_items)
		*n_items = n;
	return 0;
}

int cfg_stream_finish(struct cfg_stream *s, gms_err *err)
{
	yaml_event_t e;
	if (cfg_stream_next(s, &e, err) < 0) /* the document's end */
		return -1;
	yaml_event_delete(&e);
	if (cfg_stream_next(s, &e, err) < 0)
		return -1;
	yaml_event_type_t t = e.type;
	yaml_event_delete(&e);
	if (t != YAML_DOCUMENT_START_EVENT)
		return 0;
	/* a second document: read it whole first, as yaml_parser_load does
	 * (a syntax error in it is the message), then refuse it at its root */
	if (cfg_stream_next(s, &e, err) < 0)
		return -1;
	yaml_mark_t root = e.start_mark;
	if (cfg_stream_skip(s, &e, NULL, err) < 0 ||
	    cfg_stream_next(s, &e, err) < 0)
		return -1;
	yaml_event_delete(&e);
	return gms_errf(err,
			"%s:%zu:%zu: a second YAML document; a configuration "
			"file holds exactly one",
			s->path, root.line + 1, root.column + 1);
}

void cfg_stream_close(struct cfg_stream *s)
{
	if (s->started)
		yaml_parser_delete(&s->parser);
	if (s->f)
		fclose(s->f);
	free(s->path);
	memset(s, 0, sizeof *s);
}

struct cfg_doc *cfg_doc_new(const char *name, gms_err *err)
{
	struct cfg_doc *d = calloc(1, sizeof *d);
	if (d)
		d->path = dup_str(name);
	if (!d || !d->path ||
	    !yaml_document_initialize(&d->doc, NULL, NULL, NULL, 1, 1)) {
		if (d)
			free(d->path);
		free(d);
		gms_errf(err, "%s: out of memory", name);
		return NULL;
	}
	return d;
}

int cfg_doc_clear(struct cfg_doc *d, gms_err *err)
{
	/* Emptied in place, its node stack kept: what yaml_document_delete
	 * frees of each node (its tag, and a scalar's value, a sequence's
	 * items or a mapping's pairs; libyaml's yaml_free is free(), api.c)
	 * without freeing the stack and the document for
	 * yaml_document_initialize to allocate them again, which was a tenth
	 * of a streamed workload's load (issue 37). A cfg_doc_new document
	 * has no directives to free. */
	(void)err;
	yaml_document_t *doc = &d->doc;
	for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
		free(n->tag);
		if (n->type == YAML_SCALAR_NODE)
			free(n->data.scalar.value);
		else if (n->type == YAML_SEQUENCE_NODE)
			free(n->data.sequence.items.start);
		else if (n->type == YAML_MAPPING_NODE)
			free(n->data.mapping.pairs.start);
	}
	doc->nodes.top = doc->nodes.start;
	return 0;
}
