/* registry.c - every policy, by name, and instance creation. */
#include "pol.h"

#include <stdlib.h>
#include <string.h>

extern const struct pol_ops pol_framework_ops;
extern const struct pol_ops pol_ondemand_ops;

/* Add a policy here (and its file in policies/). Order is listing order. */
static const struct pol_ops *const pol_table[] = {
	&pol_framework_ops,
	&pol_ondemand_ops,
};

const struct pol_ops *pol_at(size_t i)
{
	return i < sizeof pol_table / sizeof *pol_table ? pol_table[i] : NULL;
}

const struct pol_ops *pol_find(const char *name)
{
	for (size_t i = 0; pol_at(i); i++)
		if (strcmp(pol_at(i)->name, name) == 0)
			return pol_at(i);
	return NULL;
}

int pol_create(struct pol *p, const char *name, struct cfg_doc *doc,
	       yaml_node_t *node, const char *const *kv, size_t n_kv,
	       gms_err *err)
{
	memset(p, 0, sizeof *p);
	p->ops = pol_find(name);
	if (!p->ops) {
		char known[512] = "";
		for (size_t i = 0; pol_at(i); i++) {
			strncat(known, i ? ", " : "",
				sizeof known - strlen(known) - 1);
			strncat(known, pol_at(i)->name,
				sizeof known - strlen(known) - 1);
		}
		return gms_errf(err, "unknown policy '%s' (known: %s)", name,
				known);
	}
	char what[96];
	snprintf(what, sizeof what, "policy '%s'", name);
	if (p->ops->params_size) {
		p->params = calloc(1, p->ops->params_size);
		if (!p->params)
			return gms_errf(err, "out of memory");
		int rc = node ? cfg_parse_map(doc, node, p->ops->params,
					      p->params, what, err)
			      : prm_set_defaults(p->ops->params, p->params,
						 err);
		for (size_t i = 0; rc == 0 && i < n_kv; i++)
			rc = prm_set_kv(p->ops->params, p->params, kv[i], what,
					err);
		if (rc < 0) {
			pol_destroy(p);
			return -1;
		}
	} else if (n_kv) {
		return gms_errf(err, "%s takes no parameters (got '%s')", what,
				kv[0]);
	}
	snprintf(p->label, sizeof p->label, "%s", name);
	if (p->ops->init && p->ops->init(p, err) < 0) {
		pol_destroy(p);
		return -1;
	}
	return 0;
}

void pol_destroy(struct pol *p)
{
	if (p->ops && p->ops->fini)
		p->ops->fini(p);
	free(p->params);
	memset(p, 0, sizeof *p);
}
