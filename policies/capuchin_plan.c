/* TEMPORARY STUB - not committed; replaced by the i14-plan branch */
#include "capuchin_plan.h"
#include <stdlib.h>
#include <string.h>
void cp_peak_period(const struct cp_input *in, uint64_t budget, sim_time_t *b, sim_time_t *e)
{ (void)in; (void)budget; *b = *e = 0; }
size_t cp_choose_trigger(const struct cp_input *in, size_t evict, size_t back, sim_time_t start)
{
	size_t k = back;
	while (k > evict + 1 && in->acc[k - 1].time >= start) k--;
	return k > evict + 1 ? k - 1 : (evict + 1 < back ? evict + 1 : back);
}
int cp_plan(const struct cp_input *in, struct cp_plan *out, gms_err *err)
{
	(void)err;
	memset(out, 0, sizeof *out);
	uint32_t nt = in->wl->n_tensors;
	size_t *last = calloc(nt, sizeof *last); bool *has = calloc(nt, 1); bool *done = calloc(nt,1);
	out->d = calloc(nt, sizeof *out->d); out->cap = nt;
	int64_t need = (int64_t)in->mem_saving;
	for (size_t j = 0; j < in->n_acc && need > 0; j++) {
		uint32_t t = in->acc[j].tensor;
		if (in->persistent[t]) continue;
		if (has[t] && !done[t] && in->acc[j].time - in->acc[last[t]].time > 1000000) {
			struct cp_decision *d = &out->d[out->n++];
			d->tensor = t; d->how = CP_SWAP; d->evict = last[t]; d->back = j;
			d->trigger = cp_choose_trigger(in, last[t], j, in->acc[j].time - in->swap_in[t]);
			done[t] = true; need -= (int64_t)in->wl->tensors[t].bytes; out->saved += in->wl->tensors[t].bytes;
		}
		has[t] = true; last[t] = j;
	}
	free(last); free(has); free(done);
	return 0;
}
void cp_plan_free(struct cp_plan *p) { free(p->d); p->d = NULL; }
