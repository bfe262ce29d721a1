/*
 * test_cfg.c - the declared-parameter YAML reader (sim/cfg.c) and the
 * number parsers of sim/common.c.
 *
 * Every error test asserts the whole message, so the line and column can be
 * checked against the YAML text written right above it (1-based; a line is
 * one "...\n" string of the test text).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sim/cfg.h"
#include "tmpkit.h"

/* The target struct of the test table: one field per parameter type. */
struct tcfg {
	int64_t iterations;	/* PRM_INT with a range */
	int64_t warmup;		/* PRM_INT without a range */
	uint64_t budget;	/* PRM_BYTES */
	double ratio;		/* PRM_DOUBLE in [0, 1] */
	bool trace;		/* PRM_BOOL */
	char name[PRM_STR_MAX]; /* PRM_STR, required */
	int mode;		/* PRM_ENUM */
	sim_time_t timeout;	/* PRM_TIME */
	yaml_node_t *policies;	/* PRM_NODE, optional */
};

static const char *const modes[] = {"graph", "eager", NULL};

#define F(f) offsetof(struct tcfg, f)
static const struct prm_def tdefs[] = {
	{"iterations", PRM_INT, "3", 1, 1000, NULL, "iterations to simulate",
	 F(iterations)},
	{"warmup", PRM_INT, "0", 0, 0, NULL, "iterations not measured",
	 F(warmup)},
	{"budget", PRM_BYTES, "1GiB", 0, 0, NULL, "device memory budget",
	 F(budget)},
	{"ratio", PRM_DOUBLE, "0.5", 0, 1, NULL, "a fraction", F(ratio)},
	{"trace", PRM_BOOL, "false", 0, 0, NULL, "write a timeline",
	 F(trace)},
	{"name", PRM_STR, NULL, 0, 0, NULL, "run name", F(name)},
	{"mode", PRM_ENUM, "graph", 0, 0, modes, "executor mode", F(mode)},
	{"timeout", PRM_TIME, "10ms", 0, 0, NULL, "time limit", F(timeout)},
	{"policies", PRM_NODE, "", 0, 0, NULL, "policy list", F(policies)},
	PRM_END};

/* The same table with no required key, for prm_set_defaults. */
static const struct prm_def odefs[] = {
	{"iterations", PRM_INT, "3", 1, 1000, NULL, "iterations to simulate",
	 F(iterations)},
	{"ratio", PRM_DOUBLE, "0.5", 0, 1, NULL, "a fraction", F(ratio)},
	{"name", PRM_STR, "run", 0, 0, NULL, "run name", F(name)},
	PRM_END};

#define KNOWN                                                              \
	"(known: iterations, warmup, budget, ratio, trace, name, mode, "   \
	"timeout, policies)"

/* Parse text as t.yaml and apply tdefs to its root; returns cfg_parse_map's
 * result, with the message in err. */
static int parse_root(const char *text, struct tcfg *c, gms_err *err)
{
	struct cfg_doc *d;
	memset(c, 0, sizeof *c);
	err->msg[0] = 0;
	if (cfg_load_string(&d, "t.yaml", text, err) < 0)
		return -1;
	int rc = cfg_parse_map(d, cfg_root(d), tdefs, c, NULL, err);
	cfg_free(d);
	return rc;
}

/* Expect the parse of text to fail with exactly msg. */
static void expect_error(const char *text, const char *msg)
{
	struct tcfg c;
	gms_err err;
	int rc = parse_root(text, &c, &err);
	if (rc == 0 || strcmp(err.msg, msg) != 0)
		print_error("text:\n%s\nexpected: %s\ngot (rc %d): %s\n", text,
			    msg, rc, err.msg);
	assert_int_equal(rc, -1);
	assert_string_equal(err.msg, msg);
}

/* ---- accepted input ------------------------------------------------- */

static void test_parse_all_types(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	const char *text = "iterations: 7\n"
			   "warmup: -2\n"
			   "budget: 1.5KiB\n"
			   "ratio: 0.25\n"
			   "trace: yes\n"
			   "name: \"my run\"\n"
			   "mode: eager\n"
			   "timeout: 2.5ms\n"
			   "policies:\n"
			   "  - vdnn\n"
			   "  - capuchin\n";
	struct cfg_doc *d;
	assert_int_equal(cfg_load_string(&d, "t.yaml", text, &err), 0);
	memset(&c, 0, sizeof c);
	assert_int_equal(cfg_parse_map(d, cfg_root(d), tdefs, &c, "exp", &err),
			 0);
	assert_int_equal(c.iterations, 7);
	assert_int_equal(c.warmup, -2);
	assert_int_equal(c.budget, 1536);
	assert_true(c.ratio == 0.25);
	assert_true(c.trace);
	assert_string_equal(c.name, "my run");
	assert_int_equal(c.mode, 1);
	assert_int_equal(c.timeout, 2500000);
	assert_non_null(c.policies);
	assert_int_equal(cfg_seq_len(c.policies), 2);
	assert_string_equal(cfg_scalar(cfg_seq_item(d, c.policies, 1)),
			    "capuchin");
	assert_null(cfg_seq_item(d, c.policies, 2));
	char where[64];
	assert_string_equal(cfg_where(d, c.policies, where, sizeof where),
			    "t.yaml:10:3");
	/* cfg_map_get finds values by key, for messages after parsing. */
	yaml_node_t *v = cfg_map_get(d, cfg_root(d), "mode");
	assert_string_equal(cfg_scalar(v), "eager");
	assert_string_equal(cfg_where(d, v, where, sizeof where),
			    "t.yaml:7:7");
	assert_null(cfg_map_get(d, cfg_root(d), "absent"));
	assert_int_equal(cfg_map_len(cfg_root(d)), 9);
	cfg_free(d);
}

static void test_defaults_applied(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	assert_int_equal(parse_root("name: x\n", &c, &err), 0);
	assert_int_equal(c.iterations, 3);
	assert_int_equal(c.warmup, 0);
	assert_int_equal(c.budget, GMS_GIB);
	assert_true(c.ratio == 0.5);
	assert_false(c.trace);
	assert_string_equal(c.name, "x");
	assert_int_equal(c.mode, 0);
	assert_int_equal(c.timeout, 10 * SIM_MS);
	assert_null(c.policies);
}

/* cfg_parse_map_from: the defaults from a struct prm_defaults_of made
 * (parsed once), the same values and checks as cfg_parse_map: each
 * default by hand from tdefs, a value given wins, a missing required key
 * and a value out of range are errors as there (issue 37). */
static void test_parse_map_from(void **state)
{
	(void)state;
	struct tcfg defs, c;
	gms_err err = {{0}};
	memset(&defs, 0x5a, sizeof defs); /* the required field kept as is */
	assert_int_equal(prm_defaults_of(tdefs, &defs, &err), 0);
	assert_int_equal(defs.iterations, 3);
	assert_int_equal(defs.budget, GMS_GIB);
	assert_true(defs.ratio == 0.5);
	assert_int_equal(defs.timeout, 10 * SIM_MS);
	assert_null(defs.policies);
	assert_int_equal((unsigned char)defs.name[0], 0x5a);
	struct cfg_doc *d;
	assert_int_equal(cfg_load_string(&d, "t.yaml",
					 "- {name: a, ratio: 0.75}\n"
					 "- {iterations: 2}\n"
					 "- {name: b, iterations: 0}\n",
					 &err),
			 0);
	yaml_node_t *root = cfg_root(d);
	assert_int_equal(cfg_parse_map_from(d, cfg_seq_item(d, root, 0), tdefs,
					    &c, &defs, sizeof c, "item", &err),
			 0);
	assert_string_equal(c.name, "a");
	assert_true(c.ratio == 0.75);
	assert_int_equal(c.iterations, 3);
	assert_int_equal(c.mode, 0);
	assert_int_equal(cfg_parse_map_from(d, cfg_seq_item(d, root, 1), tdefs,
					    &c, &defs, sizeof c, "item", &err),
			 -1);
	assert_string_equal(err.msg,
			    "t.yaml:2:3: item: key 'name': missing required key");
	assert_int_equal(cfg_parse_map_from(d, cfg_seq_item(d, root, 2), tdefs,
					    &c, &defs, sizeof c, "item", &err),
			 -1);
	assert_string_equal(err.msg, "t.yaml:3:25: item: key 'iterations': 0 "
				     "is out of range [1, 1000]");
	cfg_free(d);
}

static void test_bool_spellings(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	const char *t[] = {"true", "True", "TRUE", "yes", "Yes"};
	const char *f[] = {"false", "False", "no", "NO"};
	char text[128];
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		snprintf(text, sizeof text, "name: x\ntrace: %s\n", t[i]);
		assert_int_equal(parse_root(text, &c, &err), 0);
		assert_true(c.trace);
	}
	for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
		snprintf(text, sizeof text, "name: x\ntrace: %s\n", f[i]);
		assert_int_equal(parse_root(text, &c, &err), 0);
		assert_false(c.trace);
	}
}

static void test_flow_mapping_and_nested(void **state)
{
	(void)state;
	gms_err err;
	struct cfg_doc *d;
	const char *text = "exp:\n"
			   "  run: {name: a, iterations: 9}\n";
	assert_int_equal(cfg_load_string(&d, "t.yaml", text, &err), 0);
	yaml_node_t *run = cfg_map_get(d, cfg_map_get(d, cfg_root(d), "exp"),
				       "run");
	struct tcfg c;
	assert_int_equal(cfg_parse_map(d, run, tdefs, &c, "run", &err), 0);
	assert_int_equal(c.iterations, 9);
	assert_string_equal(c.name, "a");
	cfg_free(d);
}

static void test_string_max_length(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	char text[400], want[200];
	/* PRM_STR_MAX - 1 characters fit. */
	memset(want, 'a', PRM_STR_MAX - 1);
	want[PRM_STR_MAX - 1] = 0;
	snprintf(text, sizeof text, "name: %s\n", want);
	assert_int_equal(parse_root(text, &c, &err), 0);
	assert_string_equal(c.name, want);
	/* One more is an error. */
	snprintf(text, sizeof text, "name: %sb\n", want);
	expect_error(text, "t.yaml:1:7: key 'name': string is 128 characters "
			   "long; at most 127 are allowed");
	/* An empty plain value is an empty string. */
	assert_int_equal(parse_root("name:\n", &c, &err), 0);
	assert_string_equal(c.name, "");
}

/* ---- errors, each with its location --------------------------------- */

static void test_unknown_key(void **state)
{
	(void)state;
	expect_error("name: x\n"
		     "iteratons: 5\n",
		     "t.yaml:2:1: key 'iteratons': unknown key; did you mean "
		     "'iterations'? " KNOWN);
	/* Nested, with `what` naming the mapping. */
	gms_err err;
	struct cfg_doc *d;
	const char *text = "exp:\n"
			   "  name: x\n"
			   "    \n"
			   "  iteratons: 5\n";
	assert_int_equal(cfg_load_string(&d, "exp.yaml", text, &err), 0);
	struct tcfg c;
	assert_int_equal(cfg_parse_map(d, cfg_map_get(d, cfg_root(d), "exp"),
				       tdefs, &c, "experiment", &err),
			 -1);
	assert_string_equal(err.msg, "exp.yaml:4:3: experiment: key "
				     "'iteratons': unknown key; did you mean "
				     "'iterations'? " KNOWN);
	cfg_free(d);
}

static void test_duplicate_key(void **state)
{
	(void)state;
	expect_error("name: a\n"
		     "warmup: 1\n"
		     "name: b\n",
		     "t.yaml:3:1: key 'name': duplicate key (first at line 1, "
		     "column 1)");
	expect_error("{name: a,  name: b}\n",
		     "t.yaml:1:12: key 'name': duplicate key (first at line "
		     "1, column 2)");
}

static void test_not_a_mapping(void **state)
{
	(void)state;
	expect_error("- a\n"
		     "- b\n",
		     "t.yaml:1:1: expected a mapping, found a sequence");
	expect_error("hello\n",
		     "t.yaml:1:1: expected a mapping, found a scalar 'hello'");
	expect_error("", "t.yaml: expected a mapping, found an empty document");
	expect_error("# only a comment\n",
		     "t.yaml: expected a mapping, found an empty document");
	/* A nested value that should be a mapping. */
	gms_err err;
	struct cfg_doc *d;
	const char *text = "runs:\n"
			   "  first: 12\n";
	assert_int_equal(cfg_load_string(&d, "t.yaml", text, &err), 0);
	struct tcfg c;
	yaml_node_t *first =
		cfg_map_get(d, cfg_map_get(d, cfg_root(d), "runs"), "first");
	assert_int_equal(cfg_parse_map(d, first, tdefs, &c, "run 'first'",
				       &err),
			 -1);
	assert_string_equal(err.msg, "t.yaml:2:10: run 'first': expected a "
				     "mapping, found a scalar '12'");
	cfg_free(d);
}

static void test_key_not_scalar(void **state)
{
	(void)state;
	expect_error("name: x\n"
		     "? [a, b]\n"
		     ": 1\n",
		     "t.yaml:2:3: a key must be a scalar, found a sequence");
}

static void test_wrong_types(void **state)
{
	(void)state;
	/* A mapping or a sequence where a scalar is expected. */
	expect_error("name: x\n"
		     "budget: {a: 1}\n",
		     "t.yaml:2:9: key 'budget': expected a byte size (e.g. "
		     "4096, 512MiB, 16GiB; GB = 10^9 bytes, GiB or G = 2^30), found a mapping");
	expect_error("name:\n"
		     "  - a\n",
		     "t.yaml:2:3: key 'name': expected a string, found a "
		     "sequence");
	/* Text where a number is expected. */
	expect_error("name: x\n"
		     "ratio: abc\n",
		     "t.yaml:2:8: key 'ratio': expected a number, found 'abc'");
	expect_error("name: x\n"
		     "iterations: 2.5\n",
		     "t.yaml:2:13: key 'iterations': expected an integer, "
		     "found '2.5'");
	expect_error("name: x\n"
		     "budget: 12XB\n",
		     "t.yaml:2:9: key 'budget': expected a byte size (e.g. "
		     "4096, 512MiB, 16GiB; GB = 10^9 bytes, GiB or G = 2^30), found '12XB'");
	expect_error("name: x\n"
		     "timeout: soon\n",
		     "t.yaml:2:10: key 'timeout': expected a duration (e.g. "
		     "1500, 10us, 2.5ms), found 'soon'");
	/* Quoted numbers are numbers; quoted text is still not one. */
	expect_error("name: x\n"
		     "ratio: \"0.x\"\n",
		     "t.yaml:2:8: key 'ratio': expected a number, found '0.x'");
	/* An empty value where a number is expected. */
	expect_error("name: x\n"
		     "ratio:\n"
		     "trace: true\n",
		     "t.yaml:2:7: key 'ratio': expected a number, found an "
		     "empty value");
	/* Negative sizes and times. */
	expect_error("name: x\n"
		     "budget: -5\n",
		     "t.yaml:2:9: key 'budget': a size must not be negative "
		     "('-5')");
	expect_error("{name: x, budget: -1GiB}\n",
		     "t.yaml:1:19: key 'budget': a size must not be negative "
		     "('-1GiB')");
	expect_error("name: x\n"
		     "timeout: -1ms\n",
		     "t.yaml:2:10: key 'timeout': a time must not be negative "
		     "('-1ms')");
	/* Booleans are true/false/yes/no only. */
	expect_error("name: x\n"
		     "trace: maybe\n",
		     "t.yaml:2:8: key 'trace': expected a boolean "
		     "(true/false/yes/no), found 'maybe'");
	expect_error("name: x\n"
		     "trace: on\n",
		     "t.yaml:2:8: key 'trace': expected a boolean "
		     "(true/false/yes/no), found 'on'");
	expect_error("name: x\n"
		     "trace: 1\n",
		     "t.yaml:2:8: key 'trace': expected a boolean "
		     "(true/false/yes/no), found '1'");
}

static void test_out_of_range(void **state)
{
	(void)state;
	expect_error("name: x\n"
		     "iterations: 0\n",
		     "t.yaml:2:13: key 'iterations': 0 is out of range "
		     "[1, 1000]");
	expect_error("name: x\n"
		     "iterations: 1001\n",
		     "t.yaml:2:13: key 'iterations': 1001 is out of range "
		     "[1, 1000]");
	expect_error("name: x\n"
		     "ratio: 1.5\n",
		     "t.yaml:2:8: key 'ratio': 1.5 is out of range [0, 1]");
	/* The bounds are inclusive; no range when both are 0. */
	struct tcfg c;
	gms_err err;
	assert_int_equal(parse_root("{name: x, iterations: 1000, ratio: 0, "
				    "warmup: -99999}",
				    &c, &err),
			 0);
	assert_int_equal(c.iterations, 1000);
	assert_int_equal(c.warmup, -99999);
}

static void test_enum_choices(void **state)
{
	(void)state;
	expect_error("name: x\n"
		     "mode: lazy\n",
		     "t.yaml:2:7: key 'mode': 'lazy' is not one of: graph, "
		     "eager");
	/* Choices are case-sensitive; the hint ignores case (issue 34). */
	expect_error("name: x\n"
		     "mode: Graph\n",
		     "t.yaml:2:7: key 'mode': 'Graph' is not one of: graph, "
		     "eager; did you mean 'graph'?");
}

static void test_missing_required(void **state)
{
	(void)state;
	expect_error("warmup: 1\n"
		     "mode: eager\n",
		     "t.yaml:1:1: key 'name': missing required key");
	expect_error("# run\n"
		     "  {warmup: 1}\n",
		     "t.yaml:2:3: key 'name': missing required key");
}

static void test_syntax_errors(void **state)
{
	(void)state;
	gms_err err;
	struct cfg_doc *d = (struct cfg_doc *)1;
	/* "b: c" after "a: " is a second mapping on one line. */
	assert_int_equal(cfg_load_string(&d, "s.yaml",
					 "name: x\n"
					 "a: b: c\n",
					 &err),
			 -1);
	assert_null(d);
	assert_string_equal(err.msg, "s.yaml:2:5: YAML syntax error: mapping "
				     "values are not allowed in this context");
	/* An unclosed flow sequence: the problem is found at the end. */
	assert_int_equal(cfg_load_string(&d, "s.yaml",
					 "name: x\n"
					 "list: [a, b\n"
					 "other: 1\n",
					 &err),
			 -1);
	assert_string_equal(err.msg,
			    "s.yaml:3:6: YAML syntax error: did not find "
			    "expected ',' or ']' (while parsing a flow "
			    "sequence, at 2:7)");
	/* Bad indentation. */
	assert_int_equal(cfg_load_string(&d, "s.yaml",
					 "a:\n"
					 "    b: 1\n"
					 "  c: 2\n",
					 &err),
			 -1);
	assert_string_equal(err.msg,
			    "s.yaml:3:3: YAML syntax error: did not find "
			    "expected key (while parsing a block mapping, at "
			    "1:1)");
	/* A tab used for indentation. */
	assert_int_equal(cfg_load_string(&d, "s.yaml",
					 "a:\n"
					 "\tb: 1\n",
					 &err),
			 -1);
	assert_string_equal(err.msg,
			    "s.yaml:2:1: YAML syntax error: found character "
			    "that cannot start any token (while scanning for "
			    "the next token, at 2:1)");
	/* Invalid UTF-8: the reader reports a byte offset. */
	assert_int_equal(cfg_load_string(&d, "s.yaml", "a: \xff\n", &err), -1);
	assert_string_equal(err.msg, "s.yaml: byte 3: YAML reader error: "
				     "invalid leading UTF-8 octet (#FF)");
	/* More than one document. */
	assert_int_equal(cfg_load_string(&d, "s.yaml",
					 "a: 1\n"
					 "---\n"
					 "b: 2\n",
					 &err),
			 -1);
	assert_string_equal(err.msg, "s.yaml:3:1: a second YAML document; a "
				     "configuration file holds exactly one");
}

static void test_file_load(void **state)
{
	(void)state;
	gms_err err;
	struct cfg_doc *d = NULL;
	char path[] = "/tmp/gms_test_cfg_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("name: from-file\n"
	      "iterations: 12\n"
	      "colour: red\n",
	      f);
	fclose(f);
	assert_int_equal(cfg_load(&d, path, &err), 0);
	struct tcfg c;
	assert_int_equal(cfg_parse_map(d, cfg_root(d), tdefs, &c, NULL, &err),
			 -1);
	char want[256];
	snprintf(want, sizeof want, "%s:3:1: key 'colour': unknown key " KNOWN,
		 path);
	assert_string_equal(err.msg, want);
	cfg_free(d);
	remove(path);
	assert_int_equal(cfg_load(&d, "/nonexistent/x.yaml", &err), -1);
	assert_null(d);
	assert_string_equal(err.msg, "/nonexistent/x.yaml: cannot open: No "
				     "such file or directory");
	cfg_free(NULL);
	assert_null(cfg_root(NULL));
}

/* ---- defaults, overrides, key=value, help --------------------------- */

static void test_set_defaults(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	memset(&c, 0, sizeof c);
	assert_int_equal(prm_set_defaults(odefs, &c, &err), 0);
	assert_int_equal(c.iterations, 3);
	assert_true(c.ratio == 0.5);
	assert_string_equal(c.name, "run");
	assert_int_equal(prm_set_defaults(tdefs, &c, &err), -1);
	assert_string_equal(err.msg,
			    "key 'name' is required and has no default");
}

static void test_parse_map_over(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	struct cfg_doc *d;
	memset(&c, 0, sizeof c);
	assert_int_equal(prm_set_defaults(odefs, &c, &err), 0);
	c.ratio = 0.75;
	/* Only the keys present change; the required `name` may be absent. */
	assert_int_equal(cfg_load_string(&d, "o.yaml", "iterations: 40\n", &err),
			 0);
	assert_int_equal(cfg_parse_map_over(d, cfg_root(d), tdefs, &c, "over",
					    &err),
			 0);
	assert_int_equal(c.iterations, 40);
	assert_true(c.ratio == 0.75);
	assert_string_equal(c.name, "run");
	cfg_free(d);
	/* The checks are those of cfg_parse_map. */
	assert_int_equal(cfg_load_string(&d, "o.yaml",
					 "iterations: 4\n"
					 "ratio: 2\n",
					 &err),
			 0);
	assert_int_equal(cfg_parse_map_over(d, cfg_root(d), tdefs, &c, "over",
					    &err),
			 -1);
	assert_string_equal(err.msg,
			    "o.yaml:2:8: over: key 'ratio': 2 is out of range "
			    "[0, 1]");
	cfg_free(d);
}

static void test_set_kv(void **state)
{
	(void)state;
	struct tcfg c;
	gms_err err;
	memset(&c, 0, sizeof c);
	assert_int_equal(prm_set_kv(tdefs, &c, "budget=2GB", "run", &err), 0);
	assert_int_equal(c.budget, 2000000000ull);
	assert_int_equal(prm_set_kv(tdefs, &c, "mode=eager", "run", &err), 0);
	assert_int_equal(c.mode, 1);
	assert_int_equal(prm_set_kv(tdefs, &c, "name=a=b", "run", &err), 0);
	assert_string_equal(c.name, "a=b");
	assert_int_equal(prm_set_kv(tdefs, &c, "name=", "run", &err), 0);
	assert_string_equal(c.name, "");
	assert_int_equal(prm_set_kv(tdefs, &c, "trace=no", "run", &err), 0);
	assert_false(c.trace);
	assert_int_equal(prm_set_kv(tdefs, &c, "timeout=10us", "run", &err),
			 0);
	assert_int_equal(c.timeout, 10000);

	/* Errors name the key and `what`, and leave dst as it was. */
	c.ratio = 0.5;
	assert_int_equal(prm_set_kv(tdefs, &c, "ratio=1.5", "policy 'vdnn'",
				    &err),
			 -1);
	assert_string_equal(err.msg, "policy 'vdnn': key 'ratio': 1.5 is out "
				     "of range [0, 1]");
	assert_true(c.ratio == 0.5);
	assert_int_equal(prm_set_kv(tdefs, &c, "ratio=abc", "run", &err), -1);
	assert_string_equal(err.msg,
			    "run: key 'ratio': expected a number, found 'abc'");
	assert_int_equal(prm_set_kv(tdefs, &c, "ratio=", "run", &err), -1);
	assert_string_equal(err.msg, "run: key 'ratio': expected a number, "
				     "found an empty value");
	assert_int_equal(prm_set_kv(tdefs, &c, "ratoi=1", "run", &err), -1);
	/* issue 34: a transposition is one edit */
	assert_string_equal(err.msg, "run: key 'ratoi': unknown key; did you "
				     "mean 'ratio'? " KNOWN);
	assert_int_equal(prm_set_kv(tdefs, &c, "ratio", "run", &err), -1);
	assert_string_equal(err.msg, "run: expected key=value, found 'ratio'");
	assert_int_equal(prm_set_kv(tdefs, &c, "=1", "run", &err), -1);
	assert_string_equal(err.msg, "run: expected key=value, found '=1'");
	assert_int_equal(prm_set_kv(tdefs, &c, "budget=-1", "run", &err), -1);
	assert_string_equal(err.msg, "run: key 'budget': a size must not be "
				     "negative ('-1')");
	assert_int_equal(prm_set_kv(tdefs, &c, "mode=lazy", NULL, &err), -1);
	assert_string_equal(err.msg,
			    "key 'mode': 'lazy' is not one of: graph, eager");
	assert_int_equal(prm_set_kv(tdefs, &c, "policies=a", "run", &err), -1);
	assert_string_equal(err.msg, "run: key 'policies': a nested mapping "
				     "cannot be set with key=value");
	assert_int_equal(prm_set_kv(tdefs, &c, "trace=2", "run", &err), -1);
	assert_string_equal(err.msg, "run: key 'trace': expected a boolean "
				     "(true/false/yes/no), found '2'");
	/* A NULL err is allowed. */
	assert_int_equal(prm_set_kv(tdefs, &c, "x=1", "run", NULL), -1);
}

static void test_print_help(void **state)
{
	(void)state;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	prm_print_help(tdefs, f, "  ");
	fclose(f);
	const char *want =
		"  key         type     default     range        description\n"
		"  iterations  int      3           [1, 1000]    iterations to "
		"simulate\n"
		"  warmup      int      0                        iterations not "
		"measured\n"
		"  budget      bytes    1GiB        >= 0         device memory "
		"budget\n"
		"  ratio       double   0.5         [0, 1]       a fraction\n"
		"  trace       bool     false                    write a "
		"timeline\n"
		"  name        string   (required)               run name\n"
		"  mode        enum     graph       graph|eager  executor "
		"mode\n"
		"  timeout     time     10ms        >= 0         time limit\n"
		"  policies    mapping  (optional)               policy list\n";
	if (strcmp(buf, want) != 0)
		print_error("got:\n%s", buf);
	assert_string_equal(buf, want);
	free(buf);
}

/* ---- common.c parsers ----------------------------------------------- */

static void test_parse_bytes(void **state)
{
	(void)state;
	uint64_t v;
	assert_int_equal(gms_parse_bytes("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(gms_parse_bytes("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(gms_parse_bytes("1.5KiB", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(gms_parse_bytes("2GB", &v), 0);
	assert_int_equal(v, 2000000000ull);
	assert_int_equal(gms_parse_bytes("16GiB", &v), 0);
	assert_int_equal(v, 16 * GMS_GIB);
	assert_int_equal(gms_parse_bytes("512MiB", &v), 0);
	assert_int_equal(v, 512 * GMS_MIB);
	assert_int_equal(gms_parse_bytes("3 MB", &v), 0);
	assert_int_equal(v, 3000000);
	assert_int_equal(gms_parse_bytes("1TiB", &v), 0);
	assert_int_equal(v, 1024 * GMS_GIB);
	assert_int_equal(gms_parse_bytes("10B", &v), 0);
	assert_int_equal(v, 10);
	/* issue 34: K, M, G, T alone are powers of 1024 (GNU coreutils' dd
	 * and sort), the B forms powers of 1000 */
	assert_int_equal(gms_parse_bytes("4G", &v), 0);
	assert_int_equal(v, 4294967296ull);
	assert_int_equal(gms_parse_bytes("4GB", &v), 0);
	assert_int_equal(v, 4000000000ull);
	assert_int_equal(gms_parse_bytes("512M", &v), 0);
	assert_int_equal(v, 536870912ull);
	assert_int_equal(gms_parse_bytes("2K", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(gms_parse_bytes("1T", &v), 0);
	assert_int_equal(v, 1099511627776ull);
	assert_int_equal(gms_parse_bytes("4g", &v), -1);
	/* A fractional byte rounds up. */
	assert_int_equal(gms_parse_bytes("1.0001KB", &v), 0);
	assert_int_equal(v, 1001);
	assert_int_equal(gms_parse_bytes("1e3", &v), 0);
	assert_int_equal(v, 1000);
	/* Rejected: negative, unknown unit, no number, overflow, empty. */
	assert_int_equal(gms_parse_bytes("-1", &v), -1);
	assert_int_equal(gms_parse_bytes("12XB", &v), -1);
	assert_int_equal(gms_parse_bytes("GiB", &v), -1);
	assert_int_equal(gms_parse_bytes("12gib", &v), -1);
	assert_int_equal(gms_parse_bytes("1e30", &v), -1);
	assert_int_equal(gms_parse_bytes("", &v), -1);
	assert_int_equal(gms_parse_bytes(NULL, &v), -1);
	assert_int_equal(gms_parse_bytes("nan", &v), -1);
}

/* issue 34: the shared "did you mean" helper, distances worked by hand
 * (optimal string alignment, ASCII case ignored). */
static void test_edit_distance(void **state)
{
	(void)state;
	assert_int_equal(gms_edit_distance("iteration", "iterations"), 1);
	assert_int_equal(gms_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(gms_edit_distance("ratoi", "ratio"), 1);
	assert_int_equal(gms_edit_distance("ab", "ba"), 1);
	assert_int_equal(gms_edit_distance("BFC", "bfc"), 0);
	assert_int_equal(gms_edit_distance("", "abc"), 3);
	assert_int_equal(gms_edit_distance("abc", ""), 3);
	char longer[GMS_NEAR_MAX + 2];
	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = 0;
	assert_true(gms_edit_distance(longer, "a") == SIZE_MAX);
	/* the nearest, the first of equals, and the threshold max(1,
	 * min(3, len / 3)) */
	struct gms_near n;
	char hint[GMS_NEAR_BUF];
	gms_near_init(&n, "ondemnd");
	gms_near_add(&n, "framework");
	gms_near_add(&n, "ondemand");
	gms_near_add(&n, "checkpoint");
	assert_string_equal(gms_near_hint(&n, hint),
			    "; did you mean 'ondemand'?");
	gms_near_init(&n, "resnet"); /* 2 edits of 6 letters: close */
	gms_near_add(&n, "resnet50");
	assert_string_equal(gms_near_hint(&n, hint),
			    "; did you mean 'resnet50'?");
	gms_near_init(&n, "vgg"); /* 2 edits of 3 letters: not */
	gms_near_add(&n, "vgg16");
	assert_string_equal(gms_near_hint(&n, hint), "");
	gms_near_init(&n, "x"); /* one letter: never a suggestion */
	gms_near_add(&n, "y");
	assert_string_equal(gms_near_hint(&n, hint), "");
	gms_near_init(&n, "ab");
	gms_near_add(&n, "ac");
	gms_near_add(&n, "ad");
	assert_string_equal(gms_near_hint(&n, hint), "; did you mean 'ac'?");
}

static void test_parse_time(void **state)
{
	(void)state;
	sim_time_t t;
	assert_int_equal(gms_parse_time("2.5ms", &t), 0);
	assert_int_equal(t, 2500000);
	assert_int_equal(gms_parse_time("10us", &t), 0);
	assert_int_equal(t, 10000);
	assert_int_equal(gms_parse_time("1500", &t), 0);
	assert_int_equal(t, 1500);
	assert_int_equal(gms_parse_time("3ns", &t), 0);
	assert_int_equal(t, 3);
	assert_int_equal(gms_parse_time("2s", &t), 0);
	assert_int_equal(t, 2 * SIM_S);
	assert_int_equal(gms_parse_time("0.0004us", &t), 0);
	assert_int_equal(t, 0); /* 0.4 ns rounds to 0 */
	assert_int_equal(gms_parse_time("1.5ns", &t), 0);
	assert_int_equal(t, 2); /* rounded half away from zero */
	assert_int_equal(gms_parse_time("-1ms", &t), -1);
	assert_int_equal(gms_parse_time("5min", &t), -1);
	assert_int_equal(gms_parse_time("ms", &t), -1);
	assert_int_equal(gms_parse_time("", &t), -1);
	assert_int_equal(gms_parse_time("1e19", &t), -1);
}

static void test_parse_numbers(void **state)
{
	(void)state;
	double d;
	int64_t i;
	assert_int_equal(gms_parse_double("1e12", &d), 0);
	assert_true(d == 1e12);
	assert_int_equal(gms_parse_double("-0.75", &d), 0);
	assert_true(d == -0.75);
	assert_int_equal(gms_parse_double("1.5x", &d), -1);
	assert_int_equal(gms_parse_double("inf", &d), -1);
	assert_int_equal(gms_parse_double("", &d), -1);
	assert_int_equal(gms_parse_int("-42", &i), 0);
	assert_int_equal(i, -42);
	assert_int_equal(gms_parse_int("9223372036854775807", &i), 0);
	assert_true(i == INT64_MAX);
	assert_int_equal(gms_parse_int("9223372036854775808", &i), -1);
	assert_int_equal(gms_parse_int("12.0", &i), -1);
	assert_int_equal(gms_parse_int("0x10", &i), -1);
	assert_int_equal(sim_round_ns(-5.0), 0);
	assert_int_equal(sim_round_ns(2.5), 3);
	/* past the clock's limit, 2^62 ns: the flag value 2^62 + 1, never
	 * INT64_MAX, so that adding it to a time cannot overflow (issue 17) */
	assert_true(sim_round_ns(1e30) == ((sim_time_t)1 << 62) + 1);
	assert_true(sim_round_ns(1.0 / 0.0) == ((sim_time_t)1 << 62) + 1);
	assert_true(sim_round_ns(4611686018427387904.0) == (sim_time_t)1 << 62);
	/* sums: 2^62 - 1 + 1 is the limit itself; one more is past it, and
	 * so is anything added to a value past it */
	assert_true(sim_time_add(((sim_time_t)1 << 62) - 1, 1) ==
		    (sim_time_t)1 << 62);
	assert_true(sim_time_add((sim_time_t)1 << 62, 1) ==
		    ((sim_time_t)1 << 62) + 1);
	assert_true(sim_time_add(INT64_MAX, INT64_MAX) ==
		    ((sim_time_t)1 << 62) + 1);
	assert_true(sim_time_mul(3, 7) == 21);
	assert_true(sim_time_mul(UINT64_MAX, 2) == ((sim_time_t)1 << 62) + 1);
	assert_true(sim_time_mul(4, (sim_time_t)1 << 60) ==
		    (sim_time_t)1 << 62);
	/* a time past the limit is refused at parse: 2^62 + 1 ns is not */
	sim_time_t t;
	assert_int_equal(gms_parse_time("4611686018427387904", &t), 0);
	assert_int_equal(gms_parse_time("4.7e18", &t), -1);
}

static void test_errf_helpers(void **state)
{
	(void)state;
	gms_err err;
	assert_int_equal(gms_errf(&err, "a %d", 1), -1);
	assert_string_equal(err.msg, "a 1");
	assert_int_equal(gms_err_prefix(&err, "ctx"), -1);
	assert_string_equal(err.msg, "ctx: a 1");
	assert_int_equal(gms_errf(NULL, "x"), -1);
	/* cfg_errf locates at a node, or only names the file without one. */
	struct cfg_doc *d;
	assert_int_equal(cfg_load_string(&d, "h.yaml", "a:\n  b: [1, 2]\n",
					 &err),
			 0);
	yaml_node_t *b = cfg_map_get(d, cfg_map_get(d, cfg_root(d), "a"), "b");
	assert_int_equal(cfg_errf(&err, d, b, "bad %s", "list"), -1);
	assert_string_equal(err.msg, "h.yaml:2:6: bad list");
	assert_int_equal(cfg_errf(&err, d, NULL, "whole file"), -1);
	assert_string_equal(err.msg, "h.yaml: whole file");
	assert_null(cfg_scalar(b));
	assert_int_equal(cfg_seq_len(b), 2);
	assert_int_equal(cfg_map_len(b), 0);
	yaml_node_t *k, *v;
	assert_int_equal(cfg_map_pair(d, cfg_root(d), 1, &k, &v), -1);
	assert_null(k);
	assert_int_equal(cfg_map_pair(d, cfg_root(d), 0, &k, &v), 0);
	assert_string_equal(cfg_scalar(k), "a");
	cfg_free(d);
}

/* ---- input limits (issue 17, defect 3) ------------------------------ */

/* Nesting: 64 levels load, the 65th collection is refused where it
 * starts. "[" x 65 then "]" x 65: the 65th '[' is byte 65 of line 1,
 * column 65. */
static void test_nesting_limit(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct cfg_doc *d = NULL;
	char text[2 * 65 + 1];
	memset(text, '[', 64);
	memset(text + 64, ']', 64);
	text[128] = 0;
	assert_int_equal(cfg_load_string(&d, "n.yaml", text, &err), 0);
	cfg_free(d);
	memset(text, '[', 65);
	memset(text + 65, ']', 65);
	text[130] = 0;
	assert_int_equal(cfg_load_string(&d, "n.yaml", text, &err), -1);
	assert_null(d);
	assert_string_equal(err.msg, "n.yaml:1:65: YAML nested deeper than 64 "
				     "levels (the limit of an input; README, "
				     "\"Input limits\")");
	/* block mappings count alike: "a:" then " a:" ... each key's value
	 * is the next mapping, the root being level 1; the 65th starts on
	 * line 65 (the key of level 65) at column 65 (64 spaces before) */
	char *deep = malloc(70 * 70);
	assert_non_null(deep);
	deep[0] = 0;
	for (int i = 0; i < 66; i++) {
		size_t l = strlen(deep);
		memset(deep + l, ' ', (size_t)i);
		strcpy(deep + l + (size_t)i, "a:\n");
	}
	assert_int_equal(cfg_load_string(&d, "b.yaml", deep, &err), -1);
	assert_non_null(strstr(err.msg, "b.yaml:65:65: YAML nested deeper"));
	free(deep);
}

/* The regression input: 80 KB of '[' (12 s in libyaml before the
 * limit) is refused at the 65th, line 1 column 65. No time is asserted
 * (the rules: no wall-clock in tests); the pre-pass reads events only up
 * to the limit. */
static void test_nesting_80k(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct cfg_doc *d = NULL;
	const char *path = "tests/fixtures/fuzz/regress/exp-nesting-80k.yaml";
	assert_int_equal(cfg_load(&d, path, &err), -1);
	assert_null(d);
	assert_string_equal(err.msg,
			    "tests/fixtures/fuzz/regress/exp-nesting-80k.yaml:"
			    "1:65: YAML nested deeper than 64 levels (the "
			    "limit of an input; README, \"Input limits\")");
}

/* Size: a file of CFG_MAX_BYTES loads (as far as the limit goes: here a
 * comment), one byte more is refused at the byte past the limit. The
 * text is "#" then lines of 63 'x' and a newline (64 bytes a line);
 * 16 MiB / 64 = 262144 lines, so byte 16 MiB (0-based) starts line
 * 262145, column 1. */
static void test_size_limit(void **state)
{
	(void)state;
	gms_err err = {{0}};
	struct cfg_doc *d = NULL;
	size_t n = CFG_MAX_BYTES;
	char *text = malloc(n + 1), path[64];
	assert_non_null(text);
	for (size_t i = 0; i < n; i += 64) {
		memset(text + i, 'x', 63);
		text[i] = '#';
		text[i + 63] = '\n';
	}
	text[n] = 0;
	tmp_text(path, "gms_test_cfg_big", text);
	free(text);
	assert_int_equal(cfg_load(&d, path, &err), 0);
	cfg_free(d);
	FILE *f = fopen(path, "a");
	assert_non_null(f);
	fputs("a", f);
	fclose(f);
	assert_int_equal(cfg_load(&d, path, &err), -1);
	assert_null(d);
	char want[256];
	snprintf(want, sizeof want,
		 "%s:262145:1: larger than 16777216 bytes (16 MiB, the limit "
		 "of a YAML input; README, \"Input limits\")",
		 path);
	assert_string_equal(err.msg, want);
	remove(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_all_types),
		cmocka_unit_test(test_defaults_applied),
		cmocka_unit_test(test_parse_map_from),
		cmocka_unit_test(test_bool_spellings),
		cmocka_unit_test(test_flow_mapping_and_nested),
		cmocka_unit_test(test_string_max_length),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_duplicate_key),
		cmocka_unit_test(test_not_a_mapping),
		cmocka_unit_test(test_key_not_scalar),
		cmocka_unit_test(test_wrong_types),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_enum_choices),
		cmocka_unit_test(test_missing_required),
		cmocka_unit_test(test_syntax_errors),
		cmocka_unit_test(test_file_load),
		cmocka_unit_test(test_set_defaults),
		cmocka_unit_test(test_parse_map_over),
		cmocka_unit_test(test_set_kv),
		cmocka_unit_test(test_print_help),
		cmocka_unit_test(test_parse_bytes),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_edit_distance),
		cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_errf_helpers),
		cmocka_unit_test(test_nesting_limit),
		cmocka_unit_test(test_nesting_80k),
		cmocka_unit_test(test_size_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
