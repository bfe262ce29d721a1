/*
 * test_meta.c - the files that let people use and cite the project
 * (issue 12): LICENSE is the MIT licence with the project's copyright
 * line, and CITATION.cff follows the Citation File Format 1.2.0 schema
 * (https://citation-file-format.github.io/1.2.0/schema.json): its four
 * required keys, no key outside the schema's top level (the schema has
 * additionalProperties: false), authors as persons or entities, a date
 * matching the schema's pattern, and the licence as an SPDX id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sim/cfg.h"

/* The schema's top-level properties (CFF 1.2.0 schema.json). */
static const char *const cff_keys[] = {
	"abstract", "authors", "cff-version", "commit", "contact",
	"date-released", "doi", "identifiers", "keywords", "license",
	"license-url", "message", "preferred-citation", "references",
	"repository", "repository-artifact", "repository-code", "title",
	"type", "url", "version", NULL};

static const char *scalar(struct cfg_doc *d, yaml_node_t *root,
			  const char *key)
{
	const char *s = cfg_scalar(cfg_map_get(d, root, key));
	if (!s || !*s)
		fail_msg("CITATION.cff: '%s' missing or empty", key);
	return s;
}

/* The schema's date: ^[0-9]{4}-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])$ */
static bool cff_date(const char *s)
{
	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return false;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
			return false;
	int m = atoi(s + 5), day = atoi(s + 8);
	return m >= 1 && m <= 12 && day >= 1 && day <= 31;
}

static void test_citation_cff(void **state)
{
	(void)state;
	struct cfg_doc *d;
	gms_err err;
	if (cfg_load(&d, "CITATION.cff", &err) < 0)
		fail_msg("%s", err.msg);
	yaml_node_t *root = cfg_root(d);
	assert_int_equal(root->type, YAML_MAPPING_NODE);
	for (size_t i = 0; i < cfg_map_len(root); i++) {
		yaml_node_t *k, *v;
		assert_int_equal(cfg_map_pair(d, root, i, &k, &v), 0);
		const char *key = cfg_scalar(k);
		bool known = false;
		for (size_t j = 0; key && cff_keys[j]; j++)
			known |= !strcmp(key, cff_keys[j]);
		if (!known)
			fail_msg("CITATION.cff: key '%s' is not in CFF 1.2.0",
				 key ? key : "?");
	}
	assert_string_equal(scalar(d, root, "cff-version"), "1.2.0");
	scalar(d, root, "message");
	scalar(d, root, "title");
	scalar(d, root, "abstract");
	scalar(d, root, "version");
	assert_string_equal(scalar(d, root, "license"), "MIT");
	assert_true(cff_date(scalar(d, root, "date-released")));
	yaml_node_t *au = cfg_map_get(d, root, "authors");
	assert_non_null(au);
	assert_true(cfg_seq_len(au) >= 1); /* schema: minItems 1 */
	for (size_t i = 0; i < cfg_seq_len(au); i++) {
		yaml_node_t *a = cfg_seq_item(d, au, i);
		/* an entity has a name, a person family-names or given-names */
		assert_true(cfg_scalar(cfg_map_get(d, a, "name")) ||
			    cfg_scalar(cfg_map_get(d, a, "family-names")) ||
			    cfg_scalar(cfg_map_get(d, a, "given-names")));
	}
	assert_string_equal(
		cfg_scalar(cfg_map_get(d, cfg_seq_item(d, au, 0), "name")),
		"the gpumemsim authors");
	cfg_free(d);
}

static void test_license_mit(void **state)
{
	(void)state;
	FILE *f = fopen("LICENSE", "r");
	assert_non_null(f);
	char buf[8192];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_int_equal(strncmp(buf, "MIT License\n", 12), 0);
	assert_non_null(strstr(buf, "Copyright (c) 2026 the gpumemsim authors"));
	/* the MIT grant and its condition, as opensource.org words them */
	assert_non_null(strstr(buf, "Permission is hereby granted, free of "
				    "charge, to any person obtaining a copy"));
	assert_non_null(strstr(buf, "The above copyright notice and this "
				    "permission notice shall be included"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_citation_cff),
		cmocka_unit_test(test_license_mit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
