/*
 * conv_algo.c - the cuDNN convolution algorithm model (conv_algo.h).
 *
 * WHICH ALGORITHMS EXIST. The enums of cuDNN 7/8 (cudnn.h; the cuDNN
 * Developer Guide, cudnnConvolutionFwdAlgo_t, cudnnConvolutionBwdDataAlgo_t,
 * cudnnConvolutionBwdFilterAlgo_t, https://docs.nvidia.com/deeplearning/
 * cudnn/archives/cudnn_761/cudnn-developer-guide/index.html):
 *   forward      0 IMPLICIT_GEMM, 1 IMPLICIT_PRECOMP_GEMM, 2 GEMM,
 *                3 DIRECT (listed, never implemented), 4 FFT, 5 FFT_TILING,
 *                6 WINOGRAD, 7 WINOGRAD_NONFUSED
 *   bwd data     0 ALGO_0, 1 ALGO_1, 2 FFT, 3 FFT_TILING, 4 WINOGRAD,
 *                5 WINOGRAD_NONFUSED
 *   bwd filter   0 ALGO_0, 1 ALGO_1, 2 FFT, 3 ALGO_3, 4 WINOGRAD ("not
 *                implemented"), 5 WINOGRAD_NONFUSED, 6 FFT_TILING
 * The enum descriptions say: IMPLICIT_GEMM / ALGO_0 / ALGO_1 form no
 * matrix ("without actually explicitly forming the matrix that holds the
 * input tensor data"); IMPLICIT_PRECOMP_GEMM and bwd-filter ALGO_3 "need
 * some memory workspace to precompute some indices"; GEMM "an explicit
 * matrix product", needing "a significant memory workspace"; FFT_TILING
 * "splits the inputs into tiles", 32x32 (cuDNN docs as quoted by the
 * coaster-nn bindings, ConvForwardAlgo::FFTTiling); fused WINOGRAD needs
 * "a reasonably sized workspace", WINOGRAD_NONFUSED "significant
 * workspace". The constraints of the same guide's support tables that
 * the model applies (dilation is always 1 here):
 *   FFT          stride 1; h + 2 pad_h <= 256 and w + 2 pad_w <= 256;
 *                filter side > padding on that side
 *   FFT_TILING   stride 1; filter sides <= 32 (one 32x32 tile must hold
 *                a filter); filter side > padding
 *   WINOGRAD     stride 1, 3x3 filters (forward and bwd data)
 *   WINOGRAD_NONFUSED  stride 1, 3x3 or 5x5 filters (all three passes)
 *
 * WORKSPACE (fp32, 4 bytes an element; B batch, C input and K output
 * channels, r x s filter; P = the pass's output plane: forward and bwd
 * filter Ho x Wo, bwd data H x W):
 *   IMPLICIT_GEMM, ALGO_0, ALGO_1   0 (they form no matrix).
 *   IMPLICIT_PRECOMP_GEMM, ALGO_3   the precomputed indices: one 4-byte
 *         offset per element of the reduction dimension, 4 * C * r * s
 *         (first principles: what an implicit GEMM recomputes per element
 *         of a row of the virtual column matrix).
 *   GEMM  the explicit column matrix of the whole batch (one GEMM),
 *         4 * C * r * s * Ho * Wo * B.
 *   WINOGRAD (fused)  F(2x2, 3x3): the transformed filter only, 4 * 16 *
 *         C * K; the data and output tiles stay on chip. Measured: LBANN
 *         PR #437 reports cuDNN's Winograd needing 256 KiB for ResNet-50
 *         res2a_branch2b (64 -> 64, 3x3) = 4 * 16 * 64 * 64 bytes exactly,
 *         independent of the batch.
 *   WINOGRAD_NONFUSED  F(m x m, r x r) with m = 4 (alpha = m + r - 1: 6 for
 *         3x3, 8 for 5x5), its transforms in separate kernels, so the
 *         transformed input, filter and product planes all sit in DRAM:
 *         4 * alpha^2 * (T * B16 * (C + K) + C * K), T = ceil(P_h / 4) *
 *         ceil(P_w / 4) tiles, B16 = B rounded up to a multiple of 16.
 *         Sources: cuDNN's kernels are winogradForwardData4x4 /
 *         winogradForwardFilter4x4 / winogradForwardOutput4x4 around one
 *         batched SGEMM with grid z = 36 = 6 x 6 planes (an Nsight trace of
 *         N=10, 128 -> 128 channels, 224x224: SGEMM grid 392 x 2 x 36 of
 *         128 x 64 tiles, i.e. 50,176 = 16 * 56 * 56 rows: the batch of 10
 *         padded to 16, the whole batch at once); TensorFlow's
 *         ShouldIncludeWinogradNonfusedAlgo (stream_executor/cuda/
 *         cuda_dnn.cc, cuDNN < 7) bounds ceil(B / 16) * max(C, K) * H * W *
 *         4 bytes, the same padded-batch planes.
 *   FFT and FFT_TILING follow cuDNN 9.14: the forward rules below give
 *   cudnnGetConvolutionForwardWorkspaceSize exactly, byte for byte, on
 *   all 62 FFT and FFT_TILING shapes of the H100 calibration
 *   (results/calibration/H100-80GB-HBM3/measurements.csv, batch 32:
 *   every forward convolution of AlexNet, VGG-16 and ResNet-50, 1x1 to
 *   7x7; issue 29 -- the rules before were first-principles guesses,
 *   FFT_TILING up to 21x too large, FFT about 2x too small). The
 *   backward passes were not measured; they take the same planes with
 *   the roles of the tensors exchanged (an assumption).
 *   FFT   N_h = the power of two >= H + 2 pad_h, at least 16 (N_w
 *         likewise); 16 * N_h * (N_w / 2 + 1) bytes a plane (the complex
 *         bins of a real transform, twice); the transformed filter and
 *         input planes, which the output's then reuse: max(C * K + B * C,
 *         B * K) planes forward (bwd data: max(C * K + B * K, B * C); bwd
 *         filter: max(B * C + B * K, C * K)); plus the filter in fp32,
 *         4 * r * s * C * K.
 *   FFT_TILING  32x32 tiles, 8 * 32 * 17 = 4352 bytes a plane, for C * K
 *         filter planes and t * B * (C + K) data planes, t = 1 when the
 *         padded input fits one tile (H + 2 pad_h <= 32 and W + 2 pad_w
 *         <= 32), else 2 (cuDNN works through the tiles two at a time);
 *         1x1 filters use 32-point rows instead, 8 * 17 = 136 bytes a
 *         plane, t = H * ceil(W / 32) rows. The same for every pass (the
 *         expression is symmetric in C and K).
 *   (WINOGRAD_NONFUSED's rule above gives cuDNN 9.14's forward
 *   workspace exactly on the 3x3 shapes of the same calibration, 16 of
 *   them; on AlexNet's 5x5 conv2 cuDNN asks 55% of it. Fused WINOGRAD's
 *   is cuDNN 7's (LBANN); cuDNN 9.14 offers no fused Winograd for FP32
 *   there. The support constraints are the cuDNN 7 guide's, although
 *   cuDNN 9.14 also runs FFT_TILING at stride 2.)
 *
 * TIME SCALE: the algorithm's arithmetic, in multiply-accumulates, over
 * direct convolution's B * K * C * Ho * Wo * r * s (first principles, as
 * Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks",
 * 2015, count Winograd's saving). The implicit/explicit GEMM family does
 * exactly the direct arithmetic: 1.0 (ties keep cuDNN's enum order, so
 * the zero-workspace IMPLICIT_GEMM / ALGO_0 comes first). DRAM traffic of
 * the separate transform kernels is not charged (the op's base time has
 * its own roofline term); a calibrated profile's measured times replace
 * all of this (sim/ex.c binds them).
 *   Winograd F(m, r), alpha = m + r - 1, per tile: alpha^2 * C * K for the
 *         elementwise products; transforms counted densely (an upper
 *         bound: every entry of the transform matrices taken as a MAC):
 *         data alpha x alpha by alpha^3 on both sides = 2 alpha^3 per tile
 *         and input channel, output m x alpha: m alpha^2 + m^2 alpha per
 *         tile and output channel, filter alpha r^2 + alpha^2 r per (C, K)
 *         once. Bwd data swaps the roles of C and K; bwd filter transforms
 *         x and dY (2 alpha^3 each per channel) and inverts once per
 *         (C, K) to r x r. Fused: B images; nonfused: B16 (padded).
 *   FFT   4 MACs per complex bin product and (image, C, K), plus 1.25 *
 *         N log2 N per real 2-D transform of N points (the 5 N log2 N
 *         flops of a complex FFT, halved for real data, halved again
 *         for MACs) for every plane; tiling: the same per 32x32 tile.
 *         FFT and FFT_TILING are listed only when cheaper than direct
 *         (scale < 1): no choice (vDNN's p or m) would ever take them.
 */
#include "conv_algo.h"

#include <math.h>
#include <string.h>

#define F32 4.0	       /* bytes of an fp32 element */
#define CPLX 8.0       /* bytes of a complex fp32 bin */
#define FFT_TILE 32    /* FFT_TILING's tile side (cuDNN docs) */
#define FFT_MAX 256    /* FFT's largest padded side (cuDNN docs) */
#define FFT_MIN 16     /* FFT's smallest transform (cuDNN 9.14, measured) */
#define WINO_M 4       /* WINOGRAD_NONFUSED's output tile (4x4 kernels) */
#define WINO_BATCH 16  /* WINOGRAD_NONFUSED pads the batch to this */

int ca_pass_of(enum wl_op_type t)
{
	switch (t) {
	case OT_CONV:
		return CA_FWD;
	case OT_CONV_BWD_DATA:
		return CA_BWD_DATA;
	case OT_CONV_BWD_FILTER:
		return CA_BWD_FILTER;
	default:
		return -1;
	}
}

/* The op type of pass p (the key of wl_conv_algo_name). */
static enum wl_op_type pass_type(enum ca_pass p)
{
	return p == CA_FWD	    ? OT_CONV
	       : p == CA_BWD_DATA ? OT_CONV_BWD_DATA
				  : OT_CONV_BWD_FILTER;
}

static double cdiv(double a, double b)
{
	return ceil(a / b);
}

/* Winograd F(m x m, r x r) on geometry g in pass p with batch bw: the
 * arithmetic in MACs (header comment). */
static double wino_macs(const struct wl_conv *g, enum ca_pass p, double m,
			double tiles, double bw)
{
	double r = (double)g->r, al = m + r - 1.0;
	double C = (double)g->c, K = (double)g->k;
	double a2 = al * al, a3 = a2 * al;
	double prod = a2 * C * K;
	if (p == CA_BWD_FILTER)
		return bw * tiles * (prod + 2.0 * a3 * (C + K)) +
		       (r * a2 + r * r * al) * C * K;
	double cin = p == CA_FWD ? C : K, cout = p == CA_FWD ? K : C;
	return bw * tiles *
		       (prod + 2.0 * a3 * cin + (m * a2 + m * m * al) * cout) +
	       (al * r * r + a2 * r) * C * K;
}

/* FFT arithmetic in MACs for `planes` real planes of n points with
 * `prods` complex bin products. */
static double fft_macs(double prods, double n, double planes)
{
	return 4.0 * prods + 1.25 * n * log2(n) * planes;
}

/* The power of two >= x, at least FFT_MIN (cuDNN 9.14's FFT sizes). */
static double fft_size(int64_t x)
{
	int64_t n = FFT_MIN;
	while (n < x)
		n *= 2;
	return (double)n;
}

/* FFT's workspace in pass p (header comment: cuDNN 9.14). */
static uint64_t fft_ws(const struct wl_conv *g, enum ca_pass p)
{
	double B = (double)g->n, C = (double)g->c, K = (double)g->k;
	double nh = fft_size(g->h + 2 * g->pad_h);
	double nw = fft_size(g->w + 2 * g->pad_w);
	double in = p == CA_FWD ? C * K + B * C
		    : p == CA_BWD_DATA ? C * K + B * K
				       : B * C + B * K;
	double out = p == CA_FWD ? B * K : p == CA_BWD_DATA ? B * C : C * K;
	double planes = in > out ? in : out;
	return (uint64_t)(2.0 * CPLX * nh * (floor(nw / 2.0) + 1.0) * planes +
			  F32 * (double)(g->r * g->s) * C * K);
}

/* FFT_TILING's workspace, every pass (header comment: cuDNN 9.14). */
static uint64_t fft_tiling_ws(const struct wl_conv *g)
{
	double B = (double)g->n, C = (double)g->c, K = (double)g->k;
	double half = FFT_TILE / 2 + 1;
	if (g->r == 1 && g->s == 1) { /* 32-point rows */
		double t = (double)g->h * cdiv((double)g->w, FFT_TILE);
		return (uint64_t)(CPLX * half * (C * K + t * B * (C + K)));
	}
	double t = g->h + 2 * g->pad_h <= FFT_TILE &&
				   g->w + 2 * g->pad_w <= FFT_TILE
			   ? 1.0
			   : 2.0;
	return (uint64_t)(CPLX * FFT_TILE * half * (C * K + t * B * (C + K)));
}

/* WINOGRAD_NONFUSED's workspace (header comment). */
static uint64_t nonfused_ws(const struct wl_conv *g, enum ca_pass p)
{
	double r = (double)g->r, al = WINO_M + r - 1.0;
	double ph = p == CA_BWD_DATA ? (double)g->h : (double)g->ho;
	double pw = p == CA_BWD_DATA ? (double)g->w : (double)g->wo;
	double t = cdiv(ph, WINO_M) * cdiv(pw, WINO_M);
	double b16 = cdiv((double)g->n, WINO_BATCH) * WINO_BATCH;
	double C = (double)g->c, K = (double)g->k;
	return (uint64_t)(F32 * al * al * (t * b16 * (C + K) + C * K));
}

uint64_t ca_workspace(const struct wl_conv *g, enum ca_pass p,
		      const char *name)
{
	if (!strcmp(name, "FFT"))
		return fft_ws(g, p);
	if (!strcmp(name, "FFT_TILING"))
		return fft_tiling_ws(g);
	if (!strcmp(name, "WINOGRAD_NONFUSED"))
		return nonfused_ws(g, p);
	return 0;
}

uint32_t ca_algos(const struct wl_conv *g, enum ca_pass p,
		  struct wl_algo out[CA_MAX_ALGOS])
{
	enum wl_op_type ty = pass_type(p);
	/* the names by enum value, NULL past the table's end (one table
	 * walk: a look-up per name was 4% of building a network) */
	const char *nm[8];
	const char *const *tab = wl_conv_algo_names(ty);
	for (int i = 0; i < 8; i++)
		nm[i] = tab && (i == 0 || nm[i - 1]) ? tab[i] : NULL;
	double B = (double)g->n, C = (double)g->c, K = (double)g->k;
	double r = (double)g->r, s = (double)g->s;
	double ho = (double)g->ho, wo = (double)g->wo;
	double direct = B * K * C * ho * wo * r * s;
	/* the pass's output plane (tiles are laid over it) */
	double ph = p == CA_BWD_DATA ? (double)g->h : ho;
	double pw = p == CA_BWD_DATA ? (double)g->w : wo;
	bool s1 = g->stride == 1;
	uint32_t n = 0;
	/* the GEMM family: IMPLICIT_GEMM / ALGO_0, then ALGO_1 or PRECOMP */
	out[n++] = (struct wl_algo){nm[0], 0, 1.0, 0};
	if (p == CA_FWD) {
		out[n++] = (struct wl_algo){nm[1], (uint64_t)(F32 * C * r * s),
					    1.0, 0};
		out[n++] = (struct wl_algo){
			nm[2], (uint64_t)(F32 * C * r * s * ho * wo * B), 1.0,
			0};
	} else {
		out[n++] = (struct wl_algo){nm[1], 0, 1.0, 0};
	}
	if (p == CA_BWD_FILTER)
		out[n++] = (struct wl_algo){nm[3], (uint64_t)(F32 * C * r * s),
					    1.0, 0};
	bool pad_ok = g->r > g->pad_h && g->s > g->pad_w;
	double hf = (double)(g->h + 2 * g->pad_h);
	double wf = (double)(g->w + 2 * g->pad_w);
	if (s1 && pad_ok && hf <= FFT_MAX && wf <= FFT_MAX) {
		double bins = hf * (floor(wf / 2.0) + 1.0);
		double planes = B * C + C * K + B * K;
		double sc = fft_macs(bins * B * C * K, hf * wf, planes) /
			    direct;
		if (sc < 1.0)
			out[n++] = (struct wl_algo){"FFT", fft_ws(g, p), sc,
						    0};
	}
	if (s1 && pad_ok && g->r <= FFT_TILE && g->s <= FFT_TILE) {
		double t = cdiv(ph, FFT_TILE + 1 - r) *
			   cdiv(pw, FFT_TILE + 1 - s);
		double bins = FFT_TILE * (FFT_TILE / 2 + 1);
		double planes = t * B * C + C * K + t * B * K;
		double sc = fft_macs(bins * t * B * C * K,
				     FFT_TILE * FFT_TILE, planes) /
			    direct;
		if (sc < 1.0)
			out[n++] = (struct wl_algo){"FFT_TILING",
						    fft_tiling_ws(g), sc, 0};
	}
	bool k3 = g->r == 3 && g->s == 3, k5 = g->r == 5 && g->s == 5;
	if (s1 && k3 && p != CA_BWD_FILTER) {
		/* fused F(2x2, 3x3): tiles of 2 */
		double t = cdiv(ph, 2) * cdiv(pw, 2);
		out[n++] = (struct wl_algo){
			"WINOGRAD", (uint64_t)(F32 * 16.0 * C * K),
			wino_macs(g, p, 2.0, t, B) / direct, 0};
	}
	if (s1 && (k3 || k5)) {
		double t = cdiv(ph, WINO_M) * cdiv(pw, WINO_M);
		double b16 = cdiv(B, WINO_BATCH) * WINO_BATCH;
		out[n++] = (struct wl_algo){
			"WINOGRAD_NONFUSED", nonfused_ws(g, p),
			wino_macs(g, p, WINO_M, t, b16) / direct, 0};
	}
	return n;
}
