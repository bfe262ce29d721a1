/* wl_describe.c - `gpumemsim describe`: a workload as a table. */
#include "wl.h"

#include <stdlib.h>
#include <string.h>

static double mib(double b) { return b / (double)GMS_MIB; }

/* Per layer: everything summed over its ops. */
struct layer_sum {
	uint32_t ops;	     /* ops of the layer */
	uint64_t params;     /* parameter elements first read here */
	uint64_t act;	     /* bytes of activations it produces */
	double fwd, bwd;     /* FLOPs of its forward / backward ops */
};

static void per_layer(const struct wl_workload *w, FILE *f)
{
	struct layer_sum *L = calloc(w->n_layers ? w->n_layers : 1, sizeof *L);
	if (!L)
		return;
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		struct layer_sum *l = &L[op->layer];
		l->ops++;
		if (op->phase == WL_FWD)
			l->fwd += op->flops;
		else if (op->phase == WL_BWD)
			l->bwd += op->flops;
		for (uint32_t i = 0; i < op->n_out; i++)
			if (w->tensors[op->out[i]].kind == WL_ACT)
				l->act += w->tensors[op->out[i]].bytes;
	}
	/* a parameter belongs to the layer of its first reader */
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (x->kind == WL_PARAM && x->n_readers)
			L[w->ops[x->readers[0]].layer].params +=
				x->bytes / (x->esz ? x->esz : 4);
	}
	fprintf(f, "%-40s %5s %14s %12s %12s %12s\n", "layer", "ops",
		"params", "act_MiB", "fwd_GFLOP", "bwd_GFLOP");
	for (uint32_t l = 0; l < w->n_layers; l++) {
		if (!L[l].params && !L[l].act && !L[l].fwd && !L[l].bwd)
			continue; /* e.g. update-only layers */
		fprintf(f, "%-40s %5u %14llu %12.3f %12.3f %12.3f\n",
			w->layers[l], L[l].ops,
			(unsigned long long)L[l].params, mib((double)L[l].act),
			L[l].fwd / 1e9, L[l].bwd / 1e9);
	}
	free(L);
}

/* Workspace of op's fastest algorithm (what `framework` and vDNN's "p"
 * run); the most any of its algorithms needs is shown apart, as a max. */
static uint64_t fastest_ws(const struct wl_op *op)
{
	return wl_op_workspace(op, wl_fastest_algo(op));
}

static void per_op(const struct wl_workload *w, FILE *f)
{
	fprintf(f, "%-5s %-36s %-18s %-8s %12s %12s %10s %10s %10s  %s\n",
		"id", "op", "type", "phase", "out_MiB", "GFLOP", "dram_MiB",
		"ws_MiB", "ws_max_MiB", "inputs");
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		uint64_t out = 0;
		for (uint32_t i = 0; i < op->n_out; i++)
			out += w->tensors[op->out[i]].bytes;
		fprintf(f, "%-5u %-36s %-18s %-8s %12.3f %12.4f %10.3f %10.3f "
			   "%10.3f  ",
			o, op->name, wl_op_type_name(op->type),
			wl_phase_name(op->phase), mib((double)out),
			op->flops / 1e9, mib(op->bytes),
			mib((double)fastest_ws(op)),
			mib((double)wl_op_max_workspace(op)));
		for (uint32_t i = 0; i < op->n_in; i++)
			fprintf(f, "%s%s", i ? "," : "",
				w->tensors[op->in[i]].name);
		fputc('\n', f);
	}
}

/* Elements of the parameters (bytes / the stated element size; 4 when
 * none is stated). */
static uint64_t param_elems(const struct wl_workload *w)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++)
		if (w->tensors[t].kind == WL_PARAM)
			n += w->tensors[t].bytes /
			     (w->tensors[t].esz ? w->tensors[t].esz : 4);
	return n;
}

/* Memory by kind and element size (a generator's dtypes: 4 fp32, 2
 * fp16/bf16, 1 masks and 8-bit states, 8 int64), and the model state in
 * bytes per parameter: the figure users reckon with (16 for fp32 Adam or
 * mixed precision with fp32 master weights, grads and Adam states). */
static void by_dtype(const struct wl_workload *w, FILE *f)
{
	static const int cols[] = {4, 2, 1, 8, 0};
	static const char *const hdr[] = {"4-byte", "2-byte", "1-byte",
					  "8-byte", "unstated"};
	uint64_t b[WL_KIND_COUNT][5] = {{0}};
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		for (int c = 0; c < 5; c++)
			if (x->esz == cols[c])
				b[x->kind][c] += x->bytes;
	}
	fprintf(f, "\nby kind and element size (MiB, sum over tensors; "
		   "4-byte fp32, 2-byte fp16/bf16):\n  %-14s", "");
	for (int c = 0; c < 5; c++)
		fprintf(f, " %10s", hdr[c]);
	fputc('\n', f);
	for (int k = 0; k < WL_KIND_COUNT; k++) {
		if (!wl_bytes_of_kind(w, (enum wl_kind)k))
			continue;
		fprintf(f, "  %-14s", wl_kind_name((enum wl_kind)k));
		for (int c = 0; c < 5; c++)
			fprintf(f, " %10.2f", mib((double)b[k][c]));
		fputc('\n', f);
	}
	uint64_t n = param_elems(w);
	if (!n)
		return;
	double pp = (double)wl_bytes_of_kind(w, WL_PARAM) / (double)n;
	double pg = (double)wl_bytes_of_kind(w, WL_PARAM_GRAD) / (double)n;
	double ps = (double)wl_bytes_of_kind(w, WL_OPT_STATE) / (double)n;
	fprintf(f, "model state per parameter: %.2f B weights + %.2f B "
		   "gradients + %.2f B optimizer state = %.2f B\n",
		pp, pg, ps, pp + pg + ps);
}

/* What the framework keeps, by category (static: from readers, release
 * points and held flags; in-place take-overs are not subtracted). */
static void kept(const struct wl_workload *w, FILE *f)
{
	/* 0 read in backward, 1 held past the last reader (the TF eager
	 * tape, .grad to the step), 2 held for the run (Caffe) */
	uint64_t b[3] = {0, 0, 0};
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (x->kind == WL_PARAM || x->kind == WL_OPT_STATE)
			continue;
		uint32_t last = x->n_readers ? x->readers[x->n_readers - 1]
					     : x->producer;
		if (x->held)
			b[2] += x->bytes;
		else if (x->release_after != WL_NONE &&
			 (last == WL_NONE || x->release_after > last))
			b[1] += x->bytes;
		else if ((x->kind == WL_ACT || x->kind == WL_INPUT) &&
			 x->n_readers &&
			 w->ops[x->readers[x->n_readers - 1]].phase != WL_FWD &&
			 (x->producer == WL_NONE ||
			  w->ops[x->producer].phase == WL_FWD))
			b[0] += x->bytes;
	}
	fprintf(f, "framework %s keeps:\n",
		w->framework ? w->framework : "(none given)");
	fprintf(f, "  parameters          %.2f MiB\n",
		mib((double)wl_bytes_of_kind(w, WL_PARAM)));
	fprintf(f, "  optimizer state     %.2f MiB\n",
		mib((double)wl_bytes_of_kind(w, WL_OPT_STATE)));
	fprintf(f, "  saved for backward  %.2f MiB (forward tensors a "
		   "backward op reads)\n", mib((double)b[0]));
	fprintf(f, "  held past last use  %.2f MiB (release points: the eager "
		   "tape, gradients held to the step)\n", mib((double)b[1]));
	fprintf(f, "  held for the run    %.2f MiB (allocated once, never "
		   "freed: Caffe's blobs)\n", mib((double)b[2]));
}

/* The middle block b = n_blocks / 2 of a workload whose generator marks
 * blocks (wl_op.block; the first and last touch the embeddings and the
 * head): what the backward pass keeps of it, for comparison with
 * Korthikanti et al. 2022's activation memory per layer
 * (docs/checkpoint-modes.md). saved: activations its forward ops produce
 * that a backward op reads (or holds to a release point in backward);
 * core attention: those made by its core-attention ops
 * (WL_REGION_CORE_ATTN) and read by no forward op outside them, what the
 * checkpoint policy's selective mode recomputes; inputs: activations made
 * before it that its forward ops read, what blocks mode keeps. */
static void per_block(const struct wl_workload *w, FILE *f)
{
	if (!w->n_blocks)
		return;
	uint32_t b = w->n_blocks / 2, n = 0;
	uint64_t saved = 0, core = 0, in = 0;
	for (uint32_t t = 0; t < w->n_tensors; t++) {
		const struct wl_tensor *x = &w->tensors[t];
		if (x->kind != WL_ACT || x->producer == WL_NONE ||
		    w->ops[x->producer].phase != WL_FWD)
			continue;
		const struct wl_op *pr = &w->ops[x->producer];
		bool bwd = x->release_after != WL_NONE &&
			   w->ops[x->release_after].phase != WL_FWD;
		bool inside = pr->region == WL_REGION_CORE_ATTN, mine = false;
		for (uint32_t r = 0; r < x->n_readers; r++) {
			const struct wl_op *rd = &w->ops[x->readers[r]];
			bwd |= rd->phase != WL_FWD;
			if (rd->phase == WL_FWD) {
				inside &= rd->region == WL_REGION_CORE_ATTN &&
					  rd->block == pr->block;
				mine |= rd->block == b;
			}
		}
		if (pr->block != b) {
			in += mine ? x->bytes : 0;
			continue;
		}
		if (!bwd)
			continue;
		n++;
		saved += x->bytes;
		core += inside ? x->bytes : 0;
	}
	fprintf(f, "per block (%u marked; block %u):\n", w->n_blocks, b);
	fprintf(f, "  saved for backward  %llu B (%.2f MiB, %u tensors)\n",
		(unsigned long long)saved, mib((double)saved), n);
	fprintf(f, "  core attention      %llu B (%.2f MiB: what selective "
		   "recomputes)\n",
		(unsigned long long)core, mib((double)core));
	fprintf(f, "  inputs              %llu B (%.2f MiB: what blocks "
		   "keeps)\n\n",
		(unsigned long long)in, mib((double)in));
}

void wl_describe(const struct wl_workload *w, bool by_op, FILE *f)
{
	fprintf(f, "%s, batch %lld: %u ops, %u tensors, %u layers\n\n",
		w->name, (long long)w->batch, w->n_ops, w->n_tensors,
		w->n_layers);
	if (by_op)
		per_op(w, f);
	else
		per_layer(w, f);
	double fl[WL_PHASE_COUNT] = {0}, macs = 0;
	uint64_t ws = 0, ws_max = 0;
	for (uint32_t o = 0; o < w->n_ops; o++) {
		const struct wl_op *op = &w->ops[o];
		fl[op->phase] += op->flops;
		if (op->phase == WL_FWD &&
		    (op->type == OT_CONV || op->type == OT_MATMUL))
			macs += op->flops / 2;
		if (fastest_ws(op) > ws)
			ws = fastest_ws(op);
		if (wl_op_max_workspace(op) > ws_max)
			ws_max = wl_op_max_workspace(op);
	}
	uint64_t p = wl_bytes_of_kind(w, WL_PARAM);
	fprintf(f, "\ntotals:\n");
	fprintf(f, "  parameters          %llu (%.2f MiB)\n",
		(unsigned long long)param_elems(w), mib((double)p));
	for (int k = 0; k < WL_KIND_COUNT; k++)
		if (k != WL_PARAM && wl_bytes_of_kind(w, (enum wl_kind)k))
			fprintf(f, "  %-19s %.2f MiB (sum over tensors)\n",
				wl_kind_name((enum wl_kind)k),
				mib((double)wl_bytes_of_kind(w, (enum wl_kind)k)));
	/* ops of a recorded log whose ATen name wl_aten.c does not know:
	 * type other, timed by the profile as memory-bound */
	uint32_t unknown = 0;
	for (uint32_t i = 0; i < w->n_ops; i++)
		unknown += w->ops[i].type == OT_OTHER && w->ops[i].time == 0;
	if (unknown)
		fprintf(f, "  unclassified ops    %u (type other: timed as "
			   "memory-bound)\n", unknown);
	fprintf(f, "  largest workspace   %.2f MiB (fastest algorithm of each "
		   "op)\n",
		mib((double)ws));
	fprintf(f, "  max workspace       %.2f MiB (any algorithm)\n",
		mib((double)ws_max));
	fprintf(f, "  FLOPs               forward %.3f G, backward %.3f G, "
		   "update %.3f G\n",
		fl[WL_FWD] / 1e9, fl[WL_BWD] / 1e9, fl[WL_UPD] / 1e9);
	fprintf(f, "  forward MACs/sample %.4f G (conv and matmul)\n",
		w->batch ? macs / (double)w->batch / 1e9 : 0.0);
	fputc('\n', f);
	per_block(w, f);
	kept(w, f);
	by_dtype(w, f);
}
