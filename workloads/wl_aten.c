/*
 * wl_aten.c - what a recorded ATen op costs (wl_aten.h).
 *
 * FLOPs (a multiply-add is 2, as gen.c counts them):
 *   - convolution (convolution, _convolution, cudnn_convolution, ...):
 *     in = (input, weight[, bias]), out = (output):
 *     2 * numel(output) * numel(weight) / weight[0], i.e. 2 N K Ho Wo
 *     (C/groups) R S;
 *   - convolution_backward (one ATen op computes the data and the filter
 *     gradient, aten/src/ATen/native/native_functions.yaml), in =
 *     (grad_output, input, weight): twice the forward's, with grad_output
 *     as the output;
 *   - mm, bmm, matmul, linear, mv, dot: 2 * numel(out) * in[0]'s last
 *     dimension; addmm, addbmm, baddbmm, addmv (in = (self, a, b)): the
 *     same with in[1]'s;
 *   - anything else: one FLOP per output element (memory-bound: the
 *     profile's roofline makes its time bytes / bandwidth).
 * Bytes: every input and output once (numel * element size).
 * Convolution geometry (so the algorithm model, conv_algo.c, applies to a
 * recorded forward convolution): batch, channels and sizes from the
 * shapes; the shapes do not say stride and padding, so padding is taken
 * as R/2 by S/2 (torchvision's convolutions all pad so) and the stride as
 * ceil(H / Ho), and the geometry is kept only when these reproduce Ho and
 * Wo exactly and groups is 1 (grouped convolutions are not modelled).
 */
#include "wl_aten.h"

#include <string.h>

static const struct {
	const char *name; /* torch's dtype name less "torch." */
	uint32_t bytes;	  /* element size */
} dtypes[] = {
	{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8},
	{"int64", 8},	{"int32", 4},	{"int16", 2},	 {"int8", 1},
	{"uint8", 1},	{"bool", 1},	{"complex64", 8}, {"complex128", 16},
};

int wl_aten_shape_parse(const char *s, struct wl_aten_shape *out,
			const char **why)
{
	const char *lb = strchr(s, '[');
	size_t n = lb ? (size_t)(lb - s) : 0;
	*out = (struct wl_aten_shape){0};
	for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes && lb; i++)
		if (strncmp(dtypes[i].name, s, n) == 0 &&
		    dtypes[i].name[n] == '\0') {
			out->elem = dtypes[i].bytes; /* the names differ */
			break;
		}
	if (!out->elem) {
		*why = "expected DTYPE[D0,D1,...] with a torch dtype "
		       "(float32, int64, ...)";
		return -1;
	}
	const char *p = lb + 1;
	if (*p == ']')
		return p[1] ? (*why = "characters after ']'", -1) : 0;
	for (;;) {
		int64_t v = 0;
		const char *q = p;
		while (*q >= '0' && *q <= '9' && v <= (int64_t)WL_BYTES_MAX)
			v = v * 10 + (*q++ - '0');
		if (q == p || v > (int64_t)WL_BYTES_MAX) {
			*why = "a dimension is not an integer in [0, 1e15]";
			return -1;
		}
		if (out->ndim == WL_ATEN_DIMS) {
			*why = "more than 8 dimensions";
			return -1;
		}
		if (*q == 'b') { /* proportional to the batch */
			out->batched |= 1u << out->ndim;
			q++;
		}
		out->dim[out->ndim++] = v;
		if (*q == ']' && q[1]) {
			*why = "characters after ']'";
			return -1;
		}
		if (*q == ']') {
			/* a tensor's limit (wl.h): a 1e15-long dimension ran
			 * as a 44-day iteration (issue 38) */
			double b = out->elem;
			for (uint32_t i = 0; i < out->ndim; i++)
				b *= (double)out->dim[i];
			if (b > WL_BYTES_MAX) {
				*why = "a shape of more than 1e15 bytes (the "
				       "limit of a tensor)";
				return -1;
			}
			return 0;
		}
		if (*q != ',') {
			*why = "expected 'b', ',' or ']' after a dimension";
			return -1;
		}
		p = q + 1;
	}
}

static double numel(const struct wl_aten_shape *s)
{
	double n = 1;
	for (uint32_t i = 0; i < s->ndim; i++)
		n *= (double)s->dim[i];
	return n;
}

static double last_dim(const struct wl_aten_shape *s)
{
	return s->ndim ? (double)s->dim[s->ndim - 1] : 1;
}

static bool one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

static const char *const conv_fwd[] = {
	"convolution", "_convolution", "cudnn_convolution",
	"mkldnn_convolution", "convolution_overrideable",
	"_slow_conv2d_forward", "conv2d", NULL};
static const char *const conv_bwd[] = {
	"convolution_backward", "cudnn_convolution_backward",
	"convolution_backward_overrideable", "_slow_conv2d_backward", NULL};
static const char *const mm_a0[] = {"mm", "bmm", "matmul", "linear", "mv",
				    "dot", NULL};
static const char *const mm_a1[] = {"addmm", "addbmm", "baddbmm", "addmv",
				    NULL};
/* memory-bound kernels whose names wl_dtr.c's reading leaves as "other":
 * factories, comparisons, random fills, reductions, optimizer pieces */
static const char *const elemwise[] = {
	"zeros", "ones", "empty", "empty_like", "new_zeros", "new_empty",
	"new_ones", "full", "full_like", "scalar_tensor", "bernoulli_",
	"bernoulli", "uniform_", "normal_", "lt", "le", "gt", "ge", "eq", "ne",
	"addcmul_", "addcdiv_", "addcmul", "addcdiv", "max", "min", "argmax",
	"amax", "var_mean", "std", "var", "square", "reciprocal", "lerp_",
	"index_select", "gather", "scatter_add", "index_add", "arange",
	"embedding_dense_backward", "_foreach_add_", "_foreach_mul_", NULL};

/* The geometry of a forward convolution, if the inference holds. */
static bool conv_geometry(const struct wl_aten_shape *x,
			  const struct wl_aten_shape *wt,
			  const struct wl_aten_shape *y, struct wl_conv *g)
{
	/* an empty convolution (a zero dimension: no FLOPs) has no
	 * algorithm to choose; with one, cuDNN's per-algorithm times were
	 * 0/0 and the load failed on a NaN time_scale (issue 38) */
	if (x->ndim != 4 || wt->ndim != 4 || y->ndim != 4 ||
	    wt->dim[1] != x->dim[1])
		return false;
	for (int i = 0; i < 4; i++)
		if (x->dim[i] < 1 || wt->dim[i] < 1 || y->dim[i] < 1)
			return false;
	int64_t r = wt->dim[2], s = wt->dim[3];
	int64_t stride = (x->dim[2] + y->dim[2] - 1) / y->dim[2];
	*g = (struct wl_conv){.n = x->dim[0], .c = x->dim[1], .k = wt->dim[0],
			      .h = x->dim[2], .w = x->dim[3], .ho = y->dim[2],
			      .wo = y->dim[3], .r = r, .s = s, .stride = stride,
			      .pad_h = r / 2, .pad_w = s / 2, .groups = 1};
	return stride >= 1 &&
	       (g->h + 2 * g->pad_h - r) / stride + 1 == g->ho &&
	       (g->w + 2 * g->pad_w - s) / stride + 1 == g->wo;
}

void wl_aten_cost(const char *name, enum wl_op_type type,
		  const struct wl_aten_shape *in, uint32_t n_in,
		  const struct wl_aten_shape *out, uint32_t n_out,
		  struct wl_aten_cost *c)
{
	*c = (struct wl_aten_cost){.type = type, .known = type != OT_OTHER};
	double out_el = 0;
	for (uint32_t i = 0; i < n_in; i++)
		c->bytes += numel(&in[i]) * in[i].elem;
	for (uint32_t i = 0; i < n_out; i++) {
		c->bytes += numel(&out[i]) * out[i].elem;
		out_el += numel(&out[i]);
	}
	c->flops = out_el;
	if (one_of(name, conv_fwd) && n_in >= 2 && n_out >= 1 &&
	    in[1].ndim >= 1 && in[1].dim[0] > 0) {
		c->flops = 2 * numel(&out[0]) * numel(&in[1]) / in[1].dim[0];
		c->has_conv = conv_geometry(&in[0], &in[1], &out[0], &c->conv);
	} else if (one_of(name, conv_bwd) && n_in >= 3 && in[2].ndim >= 1 &&
		   in[2].dim[0] > 0) {
		c->flops = 2 * 2 * numel(&in[0]) * numel(&in[2]) /
			   in[2].dim[0];
		c->has_conv = conv_geometry(&in[1], &in[2], &in[0], &c->conv);
	} else if (one_of(name, mm_a0) && n_in >= 1 && n_out >= 1) {
		c->flops = 2 * numel(&out[0]) * last_dim(&in[0]);
	} else if (one_of(name, mm_a1) && n_in >= 2 && n_out >= 1) {
		c->flops = 2 * numel(&out[0]) * last_dim(&in[1]);
	} else if (type == OT_OTHER && one_of(name, elemwise)) {
		c->type = OT_ELEMWISE;
		c->known = true;
	}
}
