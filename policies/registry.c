/* registry.c - every policy, by name, and instance creation. */
#include "pol.h"

#include <stdlib.h>
#include <string.h>

extern const struct pol_ops pol_framework_ops;
extern const struct pol_ops pol_ondemand_ops;
extern const struct pol_ops pol_vdnn_ops;
extern const struct pol_ops pol_vdnnpp_ops;
extern const struct pol_ops pol_checkpoint_ops;
extern const struct pol_ops pol_capuchin_ops;
extern const struct pol_ops pol_accudnn_ops;
extern const struct pol_ops pol_dtr_ops;
extern const struct pol_ops pol_superneurons_ops;
extern const struct pol_ops pol_optimal_ops;
extern const struct pol_ops pol_offload_ops;
extern const struct pol_ops pol_zero_offload_ops;

/* Add a policy here (and its file in policies/). Order is listing order. */
static const struct pol_ops *const pol_table[] = {
	&pol_framework_ops,
	&pol_ondemand_ops,
	&pol_vdnn_ops,
	&pol_vdnnpp_ops,
	&pol_checkpoint_ops,
	&pol_capuchin_ops,
	&pol_accudnn_ops,
	&pol_dtr_ops,
	&pol_superneurons_ops,
	&pol_optimal_ops,
	&pol_offload_ops,
	&pol_zero_offload_ops,
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

const struct pol_ops *pol_lookup(const char *name, gms_err *err)
{
	const struct pol_ops *ops = pol_find(name);
	if (!ops) {
		char known[512] = "", hint[GMS_NEAR_BUF];
		struct gms_near near;
		gms_near_init(&near, name);
		for (size_t i = 0; pol_at(i); i++) {
			gms_list_add(known, sizeof known, pol_at(i)->name);
			gms_near_add(&near, pol_at(i)->name);
		}
		gms_errf(err, "unknown policy '%s'%s (known: %s)", name,
			 gms_near_hint(&near, hint), known);
	}
	return ops;
}

int pol_create(struct pol *p, const char *name, struct cfg_doc *doc,
	       yaml_node_t *node, const char *const *kv, size_t n_kv,
	       gms_err *err)
{
	memset(p, 0, sizeof *p);
	p->ops = pol_lookup(name, err);
	if (!p->ops)
		return -1;
	char what[96];
	snprintf(what, sizeof what, "policy '%s'", name);
	/* The parameters live after a name field, so one table (the policy's,
	 * shifted, plus `name`) checks the whole YAML mapping. */
	size_t n_defs = 0;
	while (p->ops->params && p->ops->params[n_defs].key)
		n_defs++;
	struct prm_def *defs = calloc(n_defs + 2, sizeof *defs);
	p->params_mem = calloc(1, PRM_STR_MAX + p->ops->params_size);
	if (!defs || !p->params_mem) {
		free(defs);
		pol_destroy(p);
		return gms_errf(err, "out of memory");
	}
	defs[0] = (struct prm_def){"name", PRM_STR, "", 0, 0, NULL,
				   "the policy (`gpumemsim list policies`)", 0};
	for (size_t i = 0; i < n_defs; i++) {
		defs[i + 1] = p->ops->params[i];
		defs[i + 1].offset += PRM_STR_MAX;
	}
	p->params = (char *)p->params_mem + PRM_STR_MAX;
	int rc = node ? cfg_parse_map(doc, node, defs, p->params_mem, what, err)
		      : prm_set_defaults(defs, p->params_mem, err);
	const char *yname = p->params_mem;
	if (rc == 0 && *yname && strcmp(yname, name) != 0)
		rc = gms_errf(err, "%s: key 'name' says '%s'", what, yname);
	for (size_t i = 0; rc == 0 && i < n_kv; i++) {
		if (strncmp(kv[i], "name=", 5) == 0)
			rc = gms_errf(err, "%s: 'name' is not a parameter", what);
		else
			rc = prm_set_kv(defs, p->params_mem, kv[i], what, err);
	}
	free(defs);
	if (rc < 0) {
		pol_destroy(p);
		return -1;
	}
	snprintf(p->label, sizeof p->label, "%s", name);
	if (p->ops->init && p->ops->init(p, err) < 0) {
		pol_destroy(p);
		return -1;
	}
	return 0;
}

int pol_report_text(struct pol *p, char **text, gms_err *err)
{
	*text = NULL;
	if (!p->ops || !p->ops->report)
		return 0;
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	if (!f)
		return gms_errf(err, "out of memory");
	p->ops->report(p, f);
	if (fclose(f) != 0 || !*text) {
		free(*text);
		*text = NULL;
		return gms_errf(err, "out of memory");
	}
	return 0;
}

void pol_destroy(struct pol *p)
{
	if (p->ops && p->ops->fini)
		p->ops->fini(p);
	free(p->params_mem);
	memset(p, 0, sizeof *p);
}
