/* test_policy.c - the registry and policy parameters from YAML and --set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../policies/pol.h"
#include "../sim/ex.h"

static void test_registry(void **state)
{
	(void)state;
	assert_non_null(pol_find("framework"));
	assert_non_null(pol_find("ondemand"));
	assert_null(pol_find("vdnn++"));
	size_t n = 0;
	while (pol_at(n))
		n++;
	assert_true(n >= 2);
	struct pol p;
	gms_err err = {{0}};
	assert_int_equal(pol_create(&p, "fremework", NULL, NULL, NULL, 0, &err),
			 -1);
	assert_non_null(strstr(err.msg, "unknown policy 'fremework'"));
	assert_non_null(strstr(err.msg, "framework"));
}

/* Parse the `policy:` mapping of a YAML text and create the instance. */
static int from_yaml(const char *text, struct pol *p, gms_err *err)
{
	struct cfg_doc *d;
	if (cfg_load_string(&d, "exp.yaml", text, err) < 0)
		return -1;
	yaml_node_t *node = cfg_map_get(d, cfg_root(d), "policy");
	assert_non_null(node);
	const char *name = cfg_scalar(cfg_map_get(d, node, "name"));
	int rc = pol_create(p, name, d, node, NULL, 0, err);
	cfg_free(d);
	return rc;
}

static void test_yaml_params(void **state)
{
	(void)state;
	struct pol p;
	gms_err err = {{0}};
	assert_int_equal(
		from_yaml("policy: {name: ondemand, evict: order}\n", &p, &err),
		0);
	assert_int_equal(*(int *)p.params, 1); /* ondemand.c: OD_ORDER */
	pol_destroy(&p);
	assert_int_equal(from_yaml("policy:\n  name: ondemand\n", &p, &err),
			 0);
	assert_int_equal(*(int *)p.params, 0); /* OD_SIZE, the default */
	pol_destroy(&p);
}

static void test_yaml_errors(void **state)
{
	(void)state;
	struct pol p;
	gms_err err = {{0}};
	/* a typo is an error at its line and column, never ignored */
	assert_int_equal(from_yaml("policy:\n  name: ondemand\n  evcit: size\n",
				   &p, &err),
			 -1);
	assert_non_null(strstr(err.msg, "exp.yaml:3:3"));
	assert_non_null(strstr(err.msg, "'evcit'"));
	/* a value outside the choices */
	assert_int_equal(from_yaml("policy: {name: ondemand, evict: lazy}\n",
				   &p, &err),
			 -1);
	assert_non_null(strstr(err.msg, "exp.yaml:1:33"));
	assert_non_null(strstr(err.msg, "'evict'"));
	/* the framework personality is the workload's, not a policy key */
	assert_int_equal(from_yaml("policy: {name: framework, mode: eager}\n",
				   &p, &err),
			 -1);
	assert_non_null(strstr(err.msg, "'mode'"));
	/* a policy that takes no such key */
	assert_int_equal(from_yaml("policy: {name: framework, offload: conv}\n",
				   &p, &err),
			 -1);
	assert_non_null(strstr(err.msg, "exp.yaml:1:27"));
	assert_non_null(strstr(err.msg, "'offload'"));
}

static void test_set_overrides(void **state)
{
	(void)state;
	struct pol p;
	gms_err err = {{0}};
	const char *ok[] = {"evict=order"};
	assert_int_equal(pol_create(&p, "ondemand", NULL, NULL, ok, 1, &err),
			 0);
	assert_int_equal(*(int *)p.params, 1); /* OD_ORDER */
	pol_destroy(&p);
	const char *bad[] = {"evict=sometimes"};
	assert_int_equal(pol_create(&p, "ondemand", NULL, NULL, bad, 1, &err),
			 -1);
	assert_non_null(strstr(err.msg, "evict"));
	const char *unknown[] = {"offload=all"};
	assert_int_equal(
		pol_create(&p, "ondemand", NULL, NULL, unknown, 1, &err), -1);
	assert_non_null(strstr(err.msg, "offload"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_yaml_params),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_set_overrides),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
