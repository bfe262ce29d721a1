/*
 * shard.c - libFuzzer harness: a shard file (exp/shard.c) through merge
 * (shd_merge), the one input format that had none (issue 38, item 6).
 *
 * A shard names its experiment file (the `path` line: the seeds name
 * fixtures under tests/fixtures/, relative to the repository root, where
 * `make fuzz` and the replay run) and carries the writer's version and
 * the experiment's identity, which change with every commit and every
 * edit of a file the experiment reads. So that the seeds stay deep, the
 * harness replaces the `version` line with this build's and the
 * `identity` line with the plan's for the experiment and N the input
 * names (when it loads); everything else is the fuzzer's.
 */
#include "fuzz.h"
#include "../exp/shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of the first line "key VALUE" of text[0..n) into buf (size
 * cap), NUL-terminated; false when there is none or it does not fit. */
static bool line_value(const char *text, size_t n, const char *key,
		       char *buf, size_t cap)
{
	size_t k = strlen(key);
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(text + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - text) : n;
		if (end - i > k && !memcmp(text + i, key, k) &&
		    text[i + k] == ' ') {
			size_t len = end - i - k - 1;
			if (len >= cap)
				return false;
			memcpy(buf, text + i + k + 1, len);
			buf[len] = '\0';
			return !memchr(buf, '\0', len);
		}
		i = end + 1;
	}
	return false;
}

/* The last identity worked out (most inputs name the same experiment:
 * loading it twice an input halved the rate; one harness a process, as
 * fz_path's file). */
static struct {
	char q[PRM_PATH_MAX + 2], n[32];
	bool ok;
	uint64_t id;
} last;

static bool identity_of(const char *q, const char *n, uint64_t *id);

/* The plan's identity for the experiment file at the quoted path q and
 * n shards; false when it does not load. */
static bool identity(const char *q, const char *n, uint64_t *id)
{
	if (strcmp(q, last.q) || strcmp(n, last.n)) {
		snprintf(last.q, sizeof last.q, "%s", q);
		snprintf(last.n, sizeof last.n, "%s", n);
		last.ok = identity_of(q, n, &last.id);
	}
	*id = last.id;
	return last.ok;
}

static bool identity_of(const char *q, const char *n, uint64_t *id)
{
	char path[PRM_PATH_MAX];
	size_t l = strlen(q);
	if (l < 2 || q[0] != '"' || q[l - 1] != '"' || l - 2 >= sizeof path ||
	    memchr(q + 1, '\\', l - 2))
		return false;
	memcpy(path, q + 1, l - 2);
	path[l - 2] = '\0';
	char *end;
	unsigned long shards = strtoul(n, &end, 10);
	if (*end || shards < 1 || shards > 64)
		return false;
	struct exp e;
	struct exp_opts o = {.out = "/tmp"};
	gms_err err = {{0}};
	if (exp_load(&e, path, &o, &err) != 0)
		return false;
	struct shd_plan pl = {0};
	bool ok = shd_plan(&e, (unsigned)shards, &pl, &err) == 0;
	*id = pl.identity;
	shd_plan_free(&pl);
	exp_free(&e);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char path[PRM_PATH_MAX + 2], n[32], line[64];
	uint64_t id = 0;
	bool have_id = line_value(in, size, "path", path, sizeof path) &&
		       line_value(in, size, "of", n, sizeof n) &&
		       identity(path, n, &id);
	/* the input, its version and identity lines replaced */
	char *text = NULL;
	size_t len = 0;
	FILE *t = open_memstream(&text, &len);
	if (!t)
		return 0;
	bool ver = false, ident = false;
	for (size_t i = 0; i < size;) {
		const char *nl = memchr(in + i, '\n', size - i);
		size_t end = nl ? (size_t)(nl - in) + 1 : size;
		if (!ver && end - i > 8 && !memcmp(in + i, "version ", 8)) {
			fprintf(t, "version \"%s\"\n", shd_version());
			ver = true;
		} else if (!ident && have_id && end - i > 9 &&
			   !memcmp(in + i, "identity ", 9)) {
			snprintf(line, sizeof line, "identity %" PRIu64 "\n",
				 id);
			fputs(line, t);
			ident = true;
		} else {
			fwrite(in + i, 1, end - i, t);
		}
		i = end;
	}
	fclose(t);
	const char *p = fz_path("shard", ".shard", (const uint8_t *)text, len);
	free(text);
	if (!p)
		return 0;
	char *files[] = {(char *)p};
	struct exp e;
	struct exp_result r;
	gms_err err = {{0}};
	int rc = shd_merge(files, 1, "/tmp", &e, &r, &err);
	fz_check(rc, &err);
	if (rc == 0) {
		exp_result_free(&r);
		exp_free(&e);
	}
	return 0;
}
