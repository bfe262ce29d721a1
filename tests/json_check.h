/*
 * json_check.h - a strict JSON (RFC 8259) parser for tests: enough to
 * prove that a file the program wrote is JSON and to walk it. Parses into
 * a small tree; jv_parse returns NULL on any syntax error and says where.
 */
#ifndef GMS_JSON_CHECK_H
#define GMS_JSON_CHECK_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jv_type { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ };

struct jv {
	enum jv_type type;  /* what it is */
	double num;	    /* JV_NUM, JV_BOOL (0/1) */
	char *str;	    /* JV_STR (unescaped, UTF-8 kept as bytes) */
	struct jv **item;   /* JV_ARR items, JV_OBJ values */
	char **key;	    /* JV_OBJ keys */
	size_t n;	    /* items or members */
};

struct jv_parser {
	const char *p, *start; /* cursor and text */
	char err[128];	       /* first error */
};

static void jv_free(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jv_free(v->item[i]);
		if (v->key)
			free(v->key[i]);
	}
	free(v->item);
	free(v->key);
	free(v->str);
	free(v);
}

static void jv_ws(struct jv_parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' ||
	       *ps->p == '\r')
		ps->p++;
}

static struct jv *jv_fail(struct jv_parser *ps, const char *what)
{
	if (!ps->err[0])
		snprintf(ps->err, sizeof ps->err, "offset %ld: %s",
			 (long)(ps->p - ps->start), what);
	return NULL;
}

static char *jv_string(struct jv_parser *ps)
{
	if (*ps->p != '"')
		return jv_fail(ps, "expected a string"), NULL;
	ps->p++;
	size_t cap = 32, n = 0;
	char *s = malloc(cap);
	for (;;) {
		unsigned char c = (unsigned char)*ps->p++;
		if (n + 8 > cap)
			s = realloc(s, cap *= 2);
		if (c == '"')
			break;
		if (c < 0x20) {
			free(s);
			return jv_fail(ps, "control character in string"), NULL;
		}
		if (c == '\\') {
			char e = *ps->p++;
			const char *esc = "\"\\/bfnrt", *rep = "\"\\/\b\f\n\r\t";
			const char *k = e ? strchr(esc, e) : NULL;
			if (k) {
				s[n++] = rep[k - esc];
			} else if (e == 'u') {
				for (int i = 0; i < 4; i++)
					if (!isxdigit((unsigned char)ps->p[i])) {
						free(s);
						return jv_fail(ps, "bad \\u escape"),
						       NULL;
					}
				s[n++] = '?';
				ps->p += 4;
			} else {
				free(s);
				return jv_fail(ps, "bad escape"), NULL;
			}
			continue;
		}
		s[n++] = (char)c;
	}
	s[n] = '\0';
	return s;
}

static struct jv *jv_value(struct jv_parser *ps, int depth);

static struct jv *jv_new(enum jv_type t)
{
	struct jv *v = calloc(1, sizeof *v);
	v->type = t;
	return v;
}

static void jv_push(struct jv *v, char *key, struct jv *item)
{
	v->item = realloc(v->item, (v->n + 1) * sizeof *v->item);
	if (v->type == JV_OBJ) {
		v->key = realloc(v->key, (v->n + 1) * sizeof *v->key);
		v->key[v->n] = key;
	}
	v->item[v->n++] = item;
}

static struct jv *jv_value(struct jv_parser *ps, int depth)
{
	jv_ws(ps);
	if (depth > 64)
		return jv_fail(ps, "nested too deep");
	const char *p = ps->p;
	if (*p == '{' || *p == '[') {
		bool obj = *p == '{';
		char close = obj ? '}' : ']';
		struct jv *v = jv_new(obj ? JV_OBJ : JV_ARR);
		ps->p++;
		jv_ws(ps);
		if (*ps->p == close) {
			ps->p++;
			return v;
		}
		for (;;) {
			char *key = NULL;
			jv_ws(ps);
			if (obj) {
				key = jv_string(ps);
				jv_ws(ps);
				if (!key || *ps->p++ != ':') {
					free(key);
					jv_free(v);
					return jv_fail(ps, "expected ':'");
				}
			}
			struct jv *it = jv_value(ps, depth + 1);
			if (!it) {
				free(key);
				jv_free(v);
				return NULL;
			}
			jv_push(v, key, it);
			jv_ws(ps);
			if (*ps->p == ',') {
				ps->p++;
				continue;
			}
			if (*ps->p == close) {
				ps->p++;
				return v;
			}
			jv_free(v);
			return jv_fail(ps, "expected ',' or a closing bracket");
		}
	}
	if (*p == '"') {
		char *s = jv_string(ps);
		if (!s)
			return NULL;
		struct jv *v = jv_new(JV_STR);
		v->str = s;
		return v;
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
		struct jv *v = jv_new(JV_BOOL);
		v->num = *p == 't';
		ps->p += *p == 't' ? 4 : 5;
		return v;
	}
	if (!strncmp(p, "null", 4)) {
		ps->p += 4;
		return jv_new(JV_NULL);
	}
	/* number: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
	const char *q = p;
	if (*q == '-')
		q++;
	if (*q == '0')
		q++;
	else if (isdigit((unsigned char)*q))
		while (isdigit((unsigned char)*q))
			q++;
	else
		return jv_fail(ps, "unexpected character");
	if (*q == '.') {
		q++;
		if (!isdigit((unsigned char)*q))
			return jv_fail(ps, "bad number");
		while (isdigit((unsigned char)*q))
			q++;
	}
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '+' || *q == '-')
			q++;
		if (!isdigit((unsigned char)*q))
			return jv_fail(ps, "bad exponent");
		while (isdigit((unsigned char)*q))
			q++;
	}
	struct jv *v = jv_new(JV_NUM);
	v->num = strtod(p, NULL);
	ps->p = q;
	return v;
}

/* Parse a whole text; NULL (and err) on any error, trailing text included. */
static struct jv *jv_parse(const char *text, char *err, size_t n)
{
	struct jv_parser ps = {text, text, ""};
	struct jv *v = jv_value(&ps, 0);
	if (v) {
		jv_ws(&ps);
		if (*ps.p) {
			jv_free(v);
			v = jv_fail(&ps, "text after the value");
		}
	}
	if (!v)
		snprintf(err, n, "%s", ps.err);
	return v;
}

/* Member of an object, or NULL. */
static struct jv *jv_get(const struct jv *o, const char *key)
{
	if (!o || o->type != JV_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->key[i], key))
			return o->item[i];
	return NULL;
}

#endif
