/*
 * test_snapshot.c - the PyTorch memory snapshot (issue 34): the pickle
 * writer against bytes worked out from the opcodes and against Python's
 * own pickle, and a simulated run's snapshot read back by Python and by
 * torch 1.13's torch.cuda._memory_viz (each skipped, with a message,
 * where /usr/bin/python3 or its torch is absent).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../sim/pickle.h"
#include "clikit.h"
#include "tmpkit.h"

#define PY "/usr/bin/python3"

/* The bytes of a file (at most n); their count. */
static size_t read_bytes(const char *path, unsigned char *buf, size_t n)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	size_t k = fread(buf, 1, n, f);
	fclose(f);
	return k;
}

/* Run `PY script args` and return its stdout (caller frees), or NULL
 * when the interpreter is absent. */
static char *python(const char *script, const char *args)
{
	if (access(PY, X_OK) != 0)
		return NULL;
	char path[64], cmd[1024];
	tmp_text(path, "gms-test-snap-py", script);
	snprintf(cmd, sizeof cmd, "%s %s %s 2>&1", PY, path, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char *out = calloc(1, 1 << 16);
	size_t n = fread(out, 1, (1 << 16) - 1, p);
	out[n] = 0;
	pclose(p);
	remove(path);
	return out;
}

/* {'a': 1} by the opcodes of pickle.h: PROTO 2, EMPTY_DICT, MARK,
 * BINUNICODE 'a' (length 1, little-endian), BININT 1, SETITEMS, STOP. */
static void test_pickle_bytes(void **state)
{
	(void)state;
	char path[64];
	tmp_text(path, "gms-test-pickle", "");
	FILE *f = fopen(path, "wb");
	pk_begin(f);
	pk_dict(f);
	pk_str(f, "a");
	pk_int(f, 1);
	pk_dict_end(f);
	pk_end(f);
	fclose(f);
	const unsigned char want[] = {0x80, 2,	  '}', '(', 'X', 1, 0, 0, 0,
				      'a',  'J', 1,   0,   0,	0,   'u', '.'};
	unsigned char got[64];
	assert_int_equal(read_bytes(path, got, sizeof got), sizeof want);
	assert_memory_equal(got, want, sizeof want);
	/* 2^40 needs LONG1 of 6 bytes: 00 00 00 00 00 01; -2^40: ... ff */
	f = fopen(path, "wb");
	pk_uint(f, (uint64_t)1 << 40);
	pk_int(f, -((int64_t)1 << 40));
	fclose(f);
	const unsigned char want2[] = {0x8a, 6, 0, 0, 0, 0, 0, 1,
				       0x8a, 6, 0, 0, 0, 0, 0, 0xff};
	assert_int_equal(read_bytes(path, got, sizeof got), sizeof want2);
	assert_memory_equal(got, want2, sizeof want2);
	remove(path);
}

/* Every kind of value, loaded by Python's pickle and compared there. */
static void test_pickle_python(void **state)
{
	(void)state;
	char path[64];
	tmp_text(path, "gms-test-pickle", "");
	FILE *f = fopen(path, "wb");
	pk_begin(f);
	pk_dict(f);
	pk_str(f, "list");
	pk_list(f);
	pk_int(f, 0);
	pk_int(f, -1);
	pk_int(f, 2147483647);
	pk_int(f, -2147483648LL);
	pk_int(f, 2147483648LL);
	pk_int(f, INT64_MIN);
	pk_uint(f, UINT64_MAX);
	pk_uint(f, (uint64_t)1 << 63);
	pk_bool(f, true);
	pk_bool(f, false);
	pk_none(f);
	pk_list_end(f);
	pk_str(f, "caf\xc3\xa9"); /* UTF-8 */
	pk_tuple2_int(f, 0, 7);
	pk_str(f, "empty");
	pk_list(f);
	pk_list_end(f);
	pk_dict_end(f);
	pk_end(f);
	fclose(f);
	char *out = python(
		"import pickle, sys\n"
		"v = pickle.load(open(sys.argv[1], 'rb'))\n"
		"want = {'list': [0, -1, 2**31 - 1, -2**31, 2**31, -2**63, "
		"2**64 - 1, 2**63, True, False, None], 'caf\\u00e9': (0, 7), "
		"'empty': []}\n"
		"print('same' if v == want and type(v['list'][8]) is bool "
		"else 'differ %r' % (v,))\n",
		path);
	remove(path);
	if (!out) {
		skip(); /* no /usr/bin/python3 */
		return;
	}
	if (strcmp(out, "same\n") != 0)
		fail_msg("%s", out);
	free(out);
}

/* chain3 at batch 4 on the caching allocator, derived in
 * tests/fixtures/exp/chain3-alloc-costs.yaml: segments S1 (small, 2 MiB,
 * at 0), S2 (large, 20 MiB, at 2 MiB), S3 (small, 2 MiB, at 22 MiB), S4
 * (large, 20 MiB, at 24 MiB); later iterations make none: 44 MiB =
 * 46137344 bytes, each segment's blocks adding up to it. The trace's
 * peak of live blocks is framework's 6b + 3 MiB at op2_bwd
 * (chain3-maxbatch.yaml): 27 MiB = 28311552 (sizes are whole MiB, no
 * rounding). */
static const char read_snapshot[] =
	"import pickle, sys\n"
	"s = pickle.load(open(sys.argv[1], 'rb'))\n"
	"g = s['segments']\n"
	"for x in g:\n"
	"    assert sum(b['size'] for b in x['blocks']) == x['total_size']\n"
	"cur = peak = 0\n"
	"for e in s['device_traces'][0]:\n"
	"    if e['action'] == 'alloc':\n"
	"        cur += e['size']; peak = max(peak, cur)\n"
	"    elif e['action'] == 'free_completed':\n"
	"        cur -= e['size']\n"
	"print(sum(x['total_size'] for x in g),\n"
	"      ','.join(x['segment_type'] for x in g),\n"
	"      ','.join(str(x['address']) for x in g), peak)\n";

static void snapshot_of(const char *args, const char *path)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s --memory-snapshot %s", args, path);
	expect(cmd, 0, NULL);
}

static void test_snapshot_chain3(void **state)
{
	(void)state;
	char path[64];
	tmp_text(path, "gms-test-snap", "");
	snapshot_of("simulate tests/fixtures/chain3.yaml --allocator caching",
		    path);
	char *out = python(read_snapshot, path);
	if (!out) {
		remove(path);
		skip();
		return;
	}
	if (strcmp(out, "46137344 small,large,small,large "
			"0,2097152,23068672,25165824 28311552\n") != 0)
		fail_msg("%s", out);
	free(out);
	/* run --memory-snapshot: the row --trace-point names, the same */
	char args[256];
	snprintf(args, sizeof args,
		 "run tests/fixtures/exp/chain3-alloc-costs.yaml --quiet "
		 "--out %s.d",
		 path);
	snapshot_of(args, path);
	out = python(read_snapshot, path);
	if (strcmp(out, "46137344 small,large,small,large "
			"0,2097152,23068672,25165824 28311552\n") != 0)
		fail_msg("%s", out);
	free(out);
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf %s.d", path);
	assert_int_equal(system(rm), 0);
	/* the arena allocator places nothing: refused, nothing written */
	remove(path);
	char cmd[256];
	snprintf(cmd, sizeof cmd,
		 "simulate tests/fixtures/chain3.yaml --allocator arena "
		 "--memory-snapshot %s",
		 path);
	expect(cmd, 1, "the arena allocator places nothing");
	assert_int_not_equal(access(path, F_OK), 0);
}

/* torch 1.13's own tooling (torch/cuda/_memory_viz.py) on the segments:
 * stats' total_size and the byte counts of memory()'s flamegraph lines
 * both give the 44 MiB (46137344) reserved at the peak. */
static void test_snapshot_memory_viz(void **state)
{
	(void)state;
	char path[64];
	tmp_text(path, "gms-test-snap", "");
	snapshot_of("simulate tests/fixtures/chain3.yaml --allocator caching",
		    path);
	char *out = python(
		"import pickle, sys\n"
		"try:\n"
		"    import torch.cuda._memory_viz as mv\n"
		"except ImportError:\n"
		"    print('no torch'); sys.exit(0)\n"
		"s = pickle.load(open(sys.argv[1], 'rb'))['segments']\n"
		"lines = mv.memory(s, format_flamegraph=lambda t: t)\n"
		"print(mv.stats(s)['total_size'].value,\n"
		"      sum(int(l.rsplit(' ', 1)[1]) for l in lines.splitlines()))\n",
		path);
	remove(path);
	if (!out || !strcmp(out, "no torch\n")) {
		fprintf(stderr, "test_snapshot_memory_viz: skipped: %s\n",
			out ? "torch is not importable by " PY
			    " (make deps-record)"
			    : PY " is absent");
		free(out);
		skip();
		return;
	}
	if (strcmp(out, "46137344 46137344\n") != 0)
		fail_msg("%s", out);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pickle_bytes),
		cmocka_unit_test(test_pickle_python),
		cmocka_unit_test(test_snapshot_chain3),
		cmocka_unit_test(test_snapshot_memory_viz),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
