/*
 * test_docs.c - every command and every figure the documentation quotes
 * is checked (issue 34): README.md and docs/ carry markers, invisible
 * when the Markdown is rendered, that this test runs.
 *
 *   <!-- check: COMMAND
 *   expect: TEXT with a [[FIGURE]]
 *   reject: TEXT
 *   -->
 *
 * COMMAND runs with sh from the checkout's root, $TMP a fresh directory
 * (stderr joined to stdout; commands that are the same run once). Each
 * `expect:` line, brackets removed, must be in the output, and its
 * bracketed FIGURE (the whole line when it has none) must be quoted in the
 * document's text in the 40 lines before the marker: so a figure the
 * docs quote is the one the program prints today. A `reject:` line must
 * not be in the output. Whitespace runs count as one blank, and
 * backticks in the document are ignored.
 *
 *   <!-- run -->
 *   ```sh
 *   ...
 *   ```
 *
 * runs every command of the code block after it (a trailing backslash
 * joins lines, `#` starts a comment): each must exit 0.
 *
 * The checks run the plain build's program: what they test is the text,
 * and the sanitized build runs the same commands in its own tests, so
 * under ASan this test says so and skips.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clikit.h"

/* The documents: README.md and every .md under these folders. */
static const char *const doc_dirs[] = {"docs", "docs/policies", NULL};

#define CTX_LINES 40

struct cached {
	char *cmd, *out;
	int rc;
};

struct checker {
	struct cached *c;
	size_t n, cap;
	char tmp[64];
	char *errors; /* every failure, one a line */
	size_t elen;
	int checks, runs;
};

static void add_error(struct checker *k, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	size_t n = strlen(buf);
	k->errors = realloc(k->errors, k->elen + n + 2);
	memcpy(k->errors + k->elen, buf, n);
	k->elen += n;
	k->errors[k->elen++] = '\n';
	k->errors[k->elen] = '\0';
}

/* s with whitespace runs as one blank and backticks left out (when
 * ticks), trimmed; caller frees. */
static char *norm(const char *s, int ticks)
{
	char *o = malloc(strlen(s) + 1), *p = o;
	int blank = 1;
	for (; *s; s++) {
		if (ticks && *s == '`')
			continue;
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') {
			if (!blank)
				*p++ = ' ';
			blank = 1;
		} else {
			*p++ = *s;
			blank = 0;
		}
	}
	while (p > o && p[-1] == ' ')
		p--;
	*p = '\0';
	return o;
}

/* The output of cmd (run once per distinct command). */
static const struct cached *run_cmd(struct checker *k, const char *cmd)
{
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(k->c[i].cmd, cmd))
			return &k->c[i];
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 16;
		k->c = realloc(k->c, k->cap * sizeof *k->c);
	}
	size_t len = strlen(cmd) + 128;
	char *full = malloc(len);
	snprintf(full, len, "TMP='%s'; export TMP; { %s\n} 2>&1", k->tmp, cmd);
	char *buf;
	int rc = sh_cmd(full, &buf);
	free(full);
	struct cached *c = &k->c[k->n++];
	c->cmd = strdup(cmd);
	c->out = buf;
	c->rc = rc;
	k->runs++;
	return c;
}

/* The text of lines [from, to) joined. */
static char *join(char **lines, size_t from, size_t to)
{
	size_t len = 1;
	for (size_t i = from; i < to; i++)
		len += strlen(lines[i]) + 1;
	char *s = malloc(len), *p = s;
	for (size_t i = from; i < to; i++) {
		size_t n = strlen(lines[i]);
		memcpy(p, lines[i], n);
		p += n;
		*p++ = ' ';
	}
	*p = '\0';
	return s;
}

/* One `<!-- check: ... -->` marker at lines [at, end]. */
static void do_check(struct checker *k, const char *file, char **lines,
		     size_t at, size_t end)
{
	const char *cmd = strstr(lines[at], "check:") + 6;
	char *doc_raw = join(lines, at >= CTX_LINES ? at - CTX_LINES : 0, at);
	char *doc = norm(doc_raw, 1);
	free(doc_raw);
	const struct cached *c = run_cmd(k, cmd);
	char *out = norm(c->out, 0);
	int n_expect = 0;
	for (size_t i = at + 1; i < end; i++) {
		const char *l = lines[i];
		int expect = !strncmp(l, "expect:", 7);
		int reject = !strncmp(l, "reject:", 7);
		if (!expect && !reject) {
			add_error(k, "%s:%zu: a line of a check marker that is "
				     "neither expect: nor reject: '%s'",
				  file, i + 1, l);
			continue;
		}
		/* the output's text: braces out; the figures: inside them
		 * (the whole line when it has none) */
		char *want = norm(l + 7, 0);
		char *figs[8];
		int nf = 0;
		for (char *ob; nf < 8 && (ob = strstr(want, "[["));) {
			char *cb = strstr(ob, "]]");
			if (!cb)
				break;
			figs[nf++] = strndup(ob + 2, (size_t)(cb - ob - 2));
			memmove(cb, cb + 2, strlen(cb + 2) + 1);
			memmove(ob, ob + 2, strlen(ob + 2) + 1);
		}
		if (!nf && expect)
			figs[nf++] = strdup(want);
		k->checks++;
		if (expect) {
			n_expect++;
			if (!strstr(out, want))
				add_error(k, "%s:%zu: `%s` no longer prints '%s'; "
					     "it printed:\n%s",
					  file, i + 1, cmd, want, c->out);
			for (int j = 0; j < nf; j++) {
				char *f = norm(figs[j], 1);
				if (!strstr(doc, f))
					add_error(k, "%s:%zu: the figure '%s' is "
						     "not quoted in the %d lines "
						     "above",
						  file, i + 1, f, CTX_LINES);
				free(f);
			}
		} else if (strstr(out, want)) {
			add_error(k, "%s:%zu: `%s` prints '%s', which the docs "
				     "say it does not",
				  file, i + 1, cmd, want);
		}
		for (int j = 0; j < nf; j++)
			free(figs[j]);
		free(want);
	}
	if (!n_expect && c->rc != 0)
		add_error(k, "%s:%zu: `%s` exited %d:\n%s", file, at + 1, cmd,
			  c->rc, c->out);
	free(out);
	free(doc);
}

/* The commands of the ```sh block after a `<!-- run -->` marker. */
static void do_run(struct checker *k, const char *file, char **lines,
		   size_t n, size_t at)
{
	size_t i = at + 1;
	if (i >= n || strncmp(lines[i], "```", 3)) {
		add_error(k, "%s:%zu: <!-- run --> not followed by a code "
			     "block",
			  file, at + 1);
		return;
	}
	char cmd[4096] = "";
	for (i++; i < n && strncmp(lines[i], "```", 3); i++) {
		char line[2048];
		snprintf(line, sizeof line, "%s", lines[i]);
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		size_t len = strlen(line);
		while (len && (line[len - 1] == ' ' || line[len - 1] == '\t'))
			line[--len] = '\0';
		int cont = len && line[len - 1] == '\\';
		if (cont)
			line[--len] = '\0';
		strncat(cmd, line, sizeof cmd - strlen(cmd) - 2);
		if (cont) {
			strcat(cmd, " ");
			continue;
		}
		char *c = norm(cmd, 0);
		if (*c) {
			const struct cached *r = run_cmd(k, c);
			k->checks++;
			if (r->rc != 0)
				add_error(k, "%s:%zu: `%s` exited %d:\n%s",
					  file, i + 1, c, r->rc, r->out);
		}
		free(c);
		cmd[0] = '\0';
	}
}

static void check_file(struct checker *k, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot open %s", path);
	size_t n = 0, cap = 256;
	char **lines = malloc(cap * sizeof *lines), buf[8192];
	while (fgets(buf, sizeof buf, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof *lines);
		lines[n++] = strdup(buf);
	}
	fclose(f);
	int code = 0; /* inside a fenced code block: markers there are
			 examples (docs/contributing.md), not checks */
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(lines[i], "```", 3))
			code = !code;
		if (code)
			continue;
		if (!strncmp(lines[i], "<!-- run -->", 12)) {
			do_run(k, path, lines, n, i);
		} else if (!strncmp(lines[i], "<!-- check:", 11)) {
			size_t end = i + 1;
			while (end < n && strncmp(lines[end], "-->", 3))
				end++;
			if (end == n)
				add_error(k, "%s:%zu: check marker without -->",
					  path, i + 1);
			else
				do_check(k, path, lines, i, end);
			i = end;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

static void test_docs(void **state)
{
	(void)state;
#ifdef __SANITIZE_ADDRESS__
	/* the documentation's commands are the plain build's */
	skip();
#endif
	struct checker k = {0};
	snprintf(k.tmp, sizeof k.tmp, "/tmp/gms-test-docs-XXXXXX");
	assert_non_null(mkdtemp(k.tmp));
	int files = 0;
	check_file(&k, "README.md");
	files++;
	for (int d = 0; doc_dirs[d]; d++) {
		/* in name order, so failures come in the same order */
		struct dirent **names;
		int m = scandir(doc_dirs[d], &names, NULL, alphasort);
		assert_true(m >= 0);
		for (int i = 0; i < m; i++) {
			size_t len = strlen(names[i]->d_name);
			if (len > 3 &&
			    !strcmp(names[i]->d_name + len - 3, ".md")) {
				char p[512];
				snprintf(p, sizeof p, "%s/%s", doc_dirs[d],
					 names[i]->d_name);
				check_file(&k, p);
				files++;
			}
			free(names[i]);
		}
		free(names);
	}
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf '%s'", k.tmp);
	assert_int_equal(system(rm), 0);
	printf("docs: %d files, %d checks, %d commands run\n", files, k.checks,
	       k.runs);
	for (size_t i = 0; i < k.n; i++) {
		free(k.c[i].cmd);
		free(k.c[i].out);
	}
	free(k.c);
	/* a test that cannot fail is a defect: the docs carry checks */
	assert_true(k.checks >= 10);
	if (k.errors) {
		/* in full on stdout (cmocka's message is cut short) */
		printf("%s", k.errors);
		fail_msg("the documentation no longer matches the program "
			 "(above)");
	}
}

/* The checker itself: a marker whose figure the program does not print,
 * or that the text does not quote, fails; one that holds passes. */
/* Whether the checker found errors; forget them. */
static int took_errors(struct checker *k, const char *needle)
{
	int hit = k->errors && (!needle || strstr(k->errors, needle));
	free(k->errors);
	k->errors = NULL;
	k->elen = 0;
	return hit;
}

static void test_checker(void **state)
{
	(void)state;
	struct checker k = {0};
	snprintf(k.tmp, sizeof k.tmp, "/tmp");
	char *good[] = {"the answer is `42` here", "<!-- check: echo 'x 42'",
			"expect: x [[42]]", "-->"};
	do_check(&k, "good.md", good, 1, 3);
	assert_null(k.errors);
	char *stale[] = {"the answer is 41 here", "<!-- check: echo 'x 42'",
			 "expect: x [[42]]", "-->"};
	do_check(&k, "stale.md", stale, 1, 3);
	assert_true(took_errors(&k, "stale.md:3: the figure '42'"));
	char *moved[] = {"the answer is 42 here", "<!-- check: echo 'x 43'",
			 "expect: x [[42]]", "-->"};
	do_check(&k, "moved.md", moved, 1, 3);
	assert_true(took_errors(&k, "no longer prints 'x 42'"));
	char *rej[] = {"text", "<!-- check: echo 'not used'",
		       "reject: not used", "-->"};
	do_check(&k, "rej.md", rej, 1, 3);
	assert_true(took_errors(&k, "which the docs say it does not"));
	for (size_t i = 0; i < k.n; i++) {
		free(k.c[i].cmd);
		free(k.c[i].out);
	}
	free(k.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checker),
		cmocka_unit_test(test_docs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
