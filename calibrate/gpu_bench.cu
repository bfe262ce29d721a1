/*
 * gpu_bench.cu - the GPU microbenchmarks (`make calibrate`, run as
 * build/calibrate-gpu -o MEASUREMENTS.csv). Writes the CSV defined in
 * calibrate/calib.h, which `gpumemsim fit` turns into a profile.
 *
 * Every measurement: warm-up runs, then `repeats` timed runs (CUDA events
 * on the stream, or the host clock for allocation calls); median, 10th and
 * 90th percentiles are written.
 *   copy    H2D and D2H, pinned and pageable, 4 KiB to 1 GiB (doubling);
 *           and both directions at once on two streams, each timed on
 *           its own stream (kinds h2d_bidir, d2h_bidir; pinned)
 *   alloc   cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost, 4 KiB to
 *           1 GiB
 *   launch  an empty kernel
 *   matmul  cuBLAS SGEMM (fp32), and TF32 / FP16 GEMM with --tf32,
 *           --fp16, square sizes 32 to 8192
 *   gemm    the same GEMMs (strided-batched where batch > 1) on the
 *           shapes the transformer generators emit (calibrate/
 *           gemm_shapes.h) at --batch; `gpumemsim fit` carries every
 *           row into the profile's gemms:
 *   conv    cuDNN forward, backward-data, backward-filter, every
 *           algorithm cuDNN offers, on the layer shapes of the shipped
 *           networks (table below) at --batch (default 32): time and
 *           workspace; compiled out without cuDNN (GMS_HAVE_CUDNN)
 *   memory  elementwise (y = a x + b), batch-norm-like (per-channel scale
 *           and shift of NCHW), 2x2 max pooling, 64 KiB to 1 GiB
 * Without a GPU (cudaGetDeviceCount fails or returns 0) it says "no CUDA
 * GPU found" and exits 0, writing nothing.
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#ifdef GMS_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                              \
	do {                                                               \
		cudaError_t e_ = (x);                                      \
		if (e_ != cudaSuccess) {                                   \
			fprintf(stderr, "calibrate-gpu: %s:%d: %s: %s\n",  \
				__FILE__, __LINE__, #x,                    \
				cudaGetErrorString(e_));                   \
			exit(1);                                           \
		}                                                          \
	} while (0)

static FILE *out;
static int repeats = 20, warmup = 3;
/* --cold: a buffer of twice the L2 written before every timed run (not
 * timed), so each run starts with nothing of its operands in L2, as
 * nvbench's default L2 flush does; NULL: runs back to back */
static void *flush_buf;
static size_t flush_bytes;

/* Median and spread of samples (ns), one CSV row. */
static void row(const char *bench, const char *kind, const std::string &param,
		double size, double flops, std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	double p10 = v[(size_t)(0.1 * (double)(n - 1))];
	double p90 = v[(size_t)(0.9 * (double)(n - 1) + 0.5)];
	fprintf(out, "%s,%s,%s,%.0f,%.6g,%zu,%.1f,%.1f,%.1f\n", bench, kind,
		param.c_str(), size, flops, n, med, p10, p90);
	fflush(out);
}

/* Time fn on stream s with events, warm-up first; ns per run. */
template <class F> static std::vector<double> time_gpu(cudaStream_t s, F fn)
{
	cudaEvent_t a, b;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	for (int i = 0; i < warmup; i++)
		fn();
	CK(cudaStreamSynchronize(s));
	std::vector<double> v;
	for (int i = 0; i < repeats; i++) {
		if (flush_buf)
			CK(cudaMemsetAsync(flush_buf, i & 0xff, flush_bytes, s));
		CK(cudaEventRecord(a, s));
		fn();
		CK(cudaEventRecord(b, s));
		CK(cudaEventSynchronize(b));
		float ms;
		CK(cudaEventElapsedTime(&ms, a, b));
		v.push_back(ms * 1e6);
	}
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	return v;
}

static double host_ns()
{
	return (double)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

/* ---- copies ------------------------------------------------------------ */

static void bench_copy(size_t max_bytes)
{
	cudaStream_t s0, s1;
	CK(cudaStreamCreate(&s0));
	CK(cudaStreamCreate(&s1));
	void *d0, *d1, *h0, *h1, *pg;
	CK(cudaMalloc(&d0, max_bytes));
	CK(cudaMalloc(&d1, max_bytes));
	CK(cudaMallocHost(&h0, max_bytes));
	CK(cudaMallocHost(&h1, max_bytes));
	pg = malloc(max_bytes);
	memset(pg, 1, max_bytes);
	for (size_t b = 4096; b <= max_bytes; b *= 2) {
		row("copy", "h2d_pinned", "", (double)b, 0, time_gpu(s0, [&] {
			    CK(cudaMemcpyAsync(d0, h0, b,
					       cudaMemcpyHostToDevice, s0));
		    }));
		row("copy", "d2h_pinned", "", (double)b, 0, time_gpu(s0, [&] {
			    CK(cudaMemcpyAsync(h0, d0, b,
					       cudaMemcpyDeviceToHost, s0));
		    }));
		row("copy", "h2d_pageable", "", (double)b, 0, time_gpu(s0, [&] {
			    CK(cudaMemcpyAsync(d0, pg, b,
					       cudaMemcpyHostToDevice, s0));
		    }));
		row("copy", "d2h_pageable", "", (double)b, 0, time_gpu(s0, [&] {
			    CK(cudaMemcpyAsync(pg, d0, b,
					       cudaMemcpyDeviceToHost, s0));
		    }));
		/* both directions: each copy timed on its own stream */
		cudaEvent_t a0, b0, a1, b1;
		CK(cudaEventCreate(&a0));
		CK(cudaEventCreate(&b0));
		CK(cudaEventCreate(&a1));
		CK(cudaEventCreate(&b1));
		std::vector<double> vh, vd;
		for (int i = -warmup; i < repeats; i++) {
			CK(cudaDeviceSynchronize());
			CK(cudaEventRecord(a0, s0));
			CK(cudaEventRecord(a1, s1));
			CK(cudaMemcpyAsync(d0, h0, b, cudaMemcpyHostToDevice,
					   s0));
			CK(cudaMemcpyAsync(h1, d1, b, cudaMemcpyDeviceToHost,
					   s1));
			CK(cudaEventRecord(b0, s0));
			CK(cudaEventRecord(b1, s1));
			CK(cudaDeviceSynchronize());
			float m0, m1;
			CK(cudaEventElapsedTime(&m0, a0, b0));
			CK(cudaEventElapsedTime(&m1, a1, b1));
			if (i >= 0) {
				vh.push_back(m0 * 1e6);
				vd.push_back(m1 * 1e6);
			}
		}
		row("copy", "h2d_bidir", "", (double)b, 0, vh);
		row("copy", "d2h_bidir", "", (double)b, 0, vd);
		CK(cudaEventDestroy(a0));
		CK(cudaEventDestroy(b0));
		CK(cudaEventDestroy(a1));
		CK(cudaEventDestroy(b1));
	}
	free(pg);
	CK(cudaFreeHost(h0));
	CK(cudaFreeHost(h1));
	CK(cudaFree(d0));
	CK(cudaFree(d1));
	CK(cudaStreamDestroy(s0));
	CK(cudaStreamDestroy(s1));
}

/* ---- allocation and launch ------------------------------------------------ */

static void bench_alloc(size_t max_bytes)
{
	for (size_t b = 4096; b <= max_bytes; b *= 4) {
		std::vector<double> m, f, hm, hf;
		for (int i = -warmup; i < repeats; i++) {
			void *p;
			double t0 = host_ns();
			CK(cudaMalloc(&p, b));
			double t1 = host_ns();
			CK(cudaFree(p));
			double t2 = host_ns();
			CK(cudaMallocHost(&p, b));
			double t3 = host_ns();
			CK(cudaFreeHost(p));
			double t4 = host_ns();
			if (i >= 0) {
				m.push_back(t1 - t0);
				f.push_back(t2 - t1);
				hm.push_back(t3 - t2);
				hf.push_back(t4 - t3);
			}
		}
		row("alloc", "malloc", "", (double)b, 0, m);
		row("alloc", "free", "", (double)b, 0, f);
		row("alloc", "host_alloc", "", (double)b, 0, hm);
		row("alloc", "host_free", "", (double)b, 0, hf);
	}
}

__global__ void k_empty() {}

static void bench_launch()
{
	row("launch", "empty", "", 0, 0,
	    time_gpu(0, [&] { k_empty<<<1, 1>>>(); }));
}

/* ---- matmul --------------------------------------------------------------- */

static void bench_matmul(bool tf32, bool fp16)
{
	cublasHandle_t h;
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "calibrate-gpu: cublasCreate failed\n");
		exit(1);
	}
	const size_t maxn = 8192;
	void *a, *b, *c;
	CK(cudaMalloc(&a, maxn * maxn * 4));
	CK(cudaMalloc(&b, maxn * maxn * 4));
	CK(cudaMalloc(&c, maxn * maxn * 4));
	CK(cudaMemset(a, 0, maxn * maxn * 4));
	CK(cudaMemset(b, 0, maxn * maxn * 4));
	const float one = 1, zero = 0;
	const char *kinds[3] = {"fp32", "tf32", "fp16"};
	for (int k = 0; k < 3; k++) {
		if ((k == 1 && !tf32) || (k == 2 && !fp16))
			continue;
		cublasSetMathMode(h, k == 1 ? CUBLAS_TF32_TENSOR_OP_MATH
					    : CUBLAS_DEFAULT_MATH);
		for (size_t n = 32; n <= maxn; n = n * 3 / 2) {
			int ni = (int)n;
			double es = k == 2 ? 2 : 4;
			std::string p = "m=" + std::to_string(n) +
					";n=" + std::to_string(n) +
					";k=" + std::to_string(n);
			row("matmul", kinds[k], p, 3.0 * es * n * n,
			    2.0 * n * n * n, time_gpu(0, [&] {
				    if (k == 2)
					    cublasGemmEx(h, CUBLAS_OP_N,
							 CUBLAS_OP_N, ni, ni, ni,
							 &one, a, CUDA_R_16F, ni,
							 b, CUDA_R_16F, ni,
							 &zero, c, CUDA_R_16F,
							 ni, CUBLAS_COMPUTE_32F,
							 CUBLAS_GEMM_DEFAULT);
				    else
					    cublasSgemm(h, CUBLAS_OP_N,
							CUBLAS_OP_N, ni, ni, ni,
							&one, (float *)a, ni,
							(float *)b, ni, &zero,
							(float *)c, ni);
			    }));
		}
	}
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	cublasDestroy(h);
}

/* ---- gemm: the generators' shapes ------------------------------------------ */

#include "gemm_shapes.h"

/* Random operands in [-1, 1) (a hash of the index, so every run gets the
 * same values): matrix units run faster on zeros than on real data (seen
 * on an H200 here: a bf16 GEMM 13% faster on zeros; /work/.library/device/
 * METHOD.md, "Correct first"), so the shapes the model's GEMM table comes
 * from are timed on non-zero data, as a training step's are. */
__device__ static float hash_unit(size_t i, unsigned seed)
{
	unsigned long long x = i * 0x9E3779B97F4A7C15ull + seed;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (float)((x >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}
__global__ void k_fill_f32(float *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = hash_unit(i, seed);
}
__global__ void k_fill_f16(__half *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2half(hash_unit(i, seed));
}
static void fill(void *p, size_t n, bool half, unsigned seed)
{
	if (half)
		k_fill_f16<<<1024, 256>>>((__half *)p, n, seed);
	else
		k_fill_f32<<<1024, 256>>>((float *)p, n, seed);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
}

/* Every shape of gemm_shapes.h at `batch` samples, in each arithmetic the
 * flags ask for: C (m x n) = A (m x k) B (k x n), column-major, no
 * transposes (cuBLAS's time depends on the shape and arithmetic; the
 * layout PyTorch picks, row-major with a transposed weight, is the same
 * product). A shape whose operands do not fit the free memory is
 * skipped with a message. */
static void bench_gemm(int batch, bool tf32, bool fp16)
{
	cublasHandle_t h;
	if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "calibrate-gpu: cublasCreate failed\n");
		exit(1);
	}
	const float one = 1, zero = 0;
	const char *kinds[3] = {"fp32", "tf32", "fp16"};
	for (const cal_gemm_shape &s : cal_gemm_shapes) {
		long long d[4] = {s.batch, s.m, s.n, s.k};
		d[s.per] *= batch;
		long long nb = d[0], m = d[1], n = d[2], kk = d[3];
		size_t elems = (size_t)nb * (size_t)(m * kk + kk * n + m * n);
		size_t fr = 0, tot = 0;
		CK(cudaMemGetInfo(&fr, &tot));
		if (elems * 4 + ((size_t)256 << 20) > fr) {
			fprintf(stderr, "calibrate-gpu: gemm %s: %zu bytes do "
					"not fit; skipped\n",
				s.name, elems * 4);
			continue;
		}
		void *a, *b, *c;
		CK(cudaMalloc(&a, (size_t)nb * m * kk * 4));
		CK(cudaMalloc(&b, (size_t)nb * kk * n * 4));
		CK(cudaMalloc(&c, (size_t)nb * m * n * 4));
		for (int k = 0; k < 3; k++) {
			if ((k == 1 && !tf32) || (k == 2 && !fp16))
				continue;
			fill(a, (size_t)nb * m * kk, k == 2, 1);
			fill(b, (size_t)nb * kk * n, k == 2, 2);
			cublasSetMathMode(h, k == 1 ? CUBLAS_TF32_TENSOR_OP_MATH
						    : CUBLAS_DEFAULT_MATH);
			double es = k == 2 ? 2 : 4;
			std::string p = std::string("layer=") + s.name +
					";batch=" + std::to_string(nb) +
					";m=" + std::to_string(m) +
					";n=" + std::to_string(n) +
					";k=" + std::to_string(kk);
			cudaDataType ty = k == 2 ? CUDA_R_16F : CUDA_R_32F;
			cublasComputeType_t ct =
				k == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32
				       : CUBLAS_COMPUTE_32F;
			row("gemm", kinds[k], p, es * (double)elems,
			    2.0 * nb * m * n * kk, time_gpu(0, [&] {
				    cublasGemmStridedBatchedEx(
					    h, CUBLAS_OP_N, CUBLAS_OP_N, (int)m,
					    (int)n, (int)kk, &one, a, ty,
					    (int)m, m * kk, b, ty, (int)kk,
					    kk * n, &zero, c, ty, (int)m,
					    m * n, (int)nb, ct,
					    CUBLAS_GEMM_DEFAULT);
			    }));
		}
		CK(cudaFree(a));
		CK(cudaFree(b));
		CK(cudaFree(c));
	}
	cublasDestroy(h);
}

/* ---- memory-bound kernels -------------------------------------------------- */

__global__ void k_axpb(const float *x, float *y, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] = 2.0f * x[i] + 1.0f;
}

/* per-channel scale and shift of NCHW with C = 64 */
__global__ void k_bn(const float *x, float *y, size_t n, size_t hw,
		     const float *g)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		size_t ch = (i / hw) % 64;
		y[i] = g[ch] * x[i] + g[64 + ch];
	}
}

/* 2x2 max pooling, stride 2, of rows of width w */
__global__ void k_pool(const float *x, float *y, size_t nout, size_t w)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
	     i < nout; i += (size_t)gridDim.x * blockDim.x) {
		size_t r = i / (w / 2), c = i % (w / 2);
		const float *p = x + 2 * r * w + 2 * c;
		y[i] = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[w], p[w + 1]));
	}
}

static void bench_memory(size_t max_bytes)
{
	float *x, *y, *g;
	CK(cudaMalloc(&x, max_bytes));
	CK(cudaMalloc(&y, max_bytes));
	CK(cudaMalloc(&g, 128 * 4));
	CK(cudaMemset(x, 0, max_bytes));
	CK(cudaMemset(g, 0, 128 * 4));
	for (size_t b = 65536; b <= max_bytes / 2; b *= 2) {
		size_t n = b / 4;
		int blocks = (int)std::min<size_t>((n + 255) / 256, 65535);
		/* bytes moved: elementwise and bn read n and write n floats;
		 * pooling reads n and writes n / 4 */
		row("memory", "elementwise", "", 2.0 * b, 2.0 * n,
		    time_gpu(0, [&] { k_axpb<<<blocks, 256>>>(x, y, n); }));
		row("memory", "batchnorm", "", 2.0 * b, 2.0 * n,
		    time_gpu(0, [&] { k_bn<<<blocks, 256>>>(x, y, n, 1024, g); }));
		row("memory", "pool", "", 1.25 * b, 0.75 * n,
		    time_gpu(0, [&] { k_pool<<<blocks, 256>>>(x, y, n / 4, 1024); }));
	}
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFree(g));
}

/* ---- convolutions ------------------------------------------------------------ */

#ifdef GMS_HAVE_CUDNN
#include "conv_shapes.h"

#define DNN(x)                                                             \
	((x) == CUDNN_STATUS_SUCCESS)

/* The math mode of every measured convolution. cuDNN's default
 * (CUDNN_DEFAULT_MATH) lets FP32 convolutions run on TF32 Tensor Cores
 * on compute capability 8.0 and later; frameworks that want FP32 set
 * CUDNN_FMA_MATH (PyTorch's and Caffe2's conv descriptors: "if
 * (!allow_tf32) math_type = CUDNN_FMA_MATH"). The profiles model FP32 on
 * CUDA cores, so FMA unless --tf32 (issue 21: the first H100 calibration
 * measured 285 TFLOP/s "FP32" convolutions against a 67 TFLOP/s FP32
 * peak). Recorded as the metadata line "# conv_math: fma|tf32". */
static cudnnMathType_t conv_math(bool tf32)
{
	return tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

static void bench_conv(int batch, bool tf32)
{
	cudnnHandle_t h;
	if (!DNN(cudnnCreate(&h))) {
		fprintf(stderr, "calibrate-gpu: cudnnCreate failed\n");
		exit(1);
	}
	for (const cal_conv_shape &s : cal_conv_shapes) {
		cudnnTensorDescriptor_t xd, yd;
		cudnnFilterDescriptor_t wd;
		cudnnConvolutionDescriptor_t cd;
		cudnnCreateTensorDescriptor(&xd);
		cudnnCreateTensorDescriptor(&yd);
		cudnnCreateFilterDescriptor(&wd);
		cudnnCreateConvolutionDescriptor(&cd);
		cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
					   batch, s.c, s.h, s.w);
		cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
					   s.k, s.c, s.r, s.s);
		cudnnSetConvolution2dDescriptor(cd, s.pad, s.pad, s.stride,
						s.stride, 1, 1,
						CUDNN_CROSS_CORRELATION,
						CUDNN_DATA_FLOAT);
		if (!DNN(cudnnSetConvolutionMathType(cd, conv_math(tf32)))) {
			fprintf(stderr, "calibrate-gpu: cudnnSetConvolutionMathType "
					"failed\n");
			exit(1);
		}
		int n, c, oh, ow;
		cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &c, &oh,
						      &ow);
		cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
					   n, c, oh, ow);
		size_t xb = (size_t)batch * s.c * s.h * s.w * 4,
		       yb = (size_t)n * c * oh * ow * 4,
		       wb = (size_t)s.k * s.c * s.r * s.s * 4;
		double flops = 2.0 * n * c * oh * ow * s.c * s.r * s.s;
		void *x, *y, *w;
		CK(cudaMalloc(&x, xb));
		CK(cudaMalloc(&y, yb));
		CK(cudaMalloc(&w, wb));
		CK(cudaMemset(x, 0, xb));
		CK(cudaMemset(w, 0, wb));
		CK(cudaMemset(y, 0, yb));
		char geo[200];
		snprintf(geo, sizeof geo,
			 "layer=%s;n=%d;c=%d;h=%d;w=%d;k=%d;r=%d;s=%d;stride=%d;"
			 "pad=%d",
			 s.name, batch, s.c, s.h, s.w, s.k, s.r, s.s, s.stride,
			 s.pad);
		const float one = 1, zero = 0;
		for (int pass = 0; pass < 3; pass++) {
			int count = pass == 0 ? (int)CUDNN_CONVOLUTION_FWD_ALGO_COUNT
				    : pass == 1
					    ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT
					    : (int)CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
			for (int a = 0; a < count; a++) {
				size_t ws = 0;
				cudnnStatus_t st =
					pass == 0 ? cudnnGetConvolutionForwardWorkspaceSize(
							    h, xd, wd, cd, yd,
							    (cudnnConvolutionFwdAlgo_t)a, &ws)
					: pass == 1 ? cudnnGetConvolutionBackwardDataWorkspaceSize(
							      h, wd, yd, cd, xd,
							      (cudnnConvolutionBwdDataAlgo_t)a, &ws)
						    : cudnnGetConvolutionBackwardFilterWorkspaceSize(
							      h, xd, yd, cd, wd,
							      (cudnnConvolutionBwdFilterAlgo_t)a, &ws);
				if (!DNN(st))
					continue; /* not offered here */
				void *wsp = NULL;
				if (ws && cudaMalloc(&wsp, ws) != cudaSuccess) {
					cudaGetLastError();
					continue; /* does not fit */
				}
				auto run = [&] {
					return pass == 0
						? cudnnConvolutionForward(
							  h, &one, xd, x, wd, w, cd,
							  (cudnnConvolutionFwdAlgo_t)a,
							  wsp, ws, &zero, yd, y)
					: pass == 1
						? cudnnConvolutionBackwardData(
							  h, &one, wd, w, yd, y, cd,
							  (cudnnConvolutionBwdDataAlgo_t)a,
							  wsp, ws, &zero, xd, x)
						: cudnnConvolutionBackwardFilter(
							  h, &one, xd, x, yd, y, cd,
							  (cudnnConvolutionBwdFilterAlgo_t)a,
							  wsp, ws, &zero, wd, w);
				};
				if (DNN(run())) {
					std::string p = std::string(geo) +
							";algo=" + std::to_string(a);
					static const char *kinds[3] = {
						"fwd", "bwd_data", "bwd_filter"};
					row("conv", kinds[pass], p, (double)ws,
					    flops, time_gpu(0, [&] { run(); }));
				}
				if (wsp)
					CK(cudaFree(wsp));
			}
		}
		CK(cudaFree(x));
		CK(cudaFree(y));
		CK(cudaFree(w));
		cudnnDestroyTensorDescriptor(xd);
		cudnnDestroyTensorDescriptor(yd);
		cudnnDestroyFilterDescriptor(wd);
		cudnnDestroyConvolutionDescriptor(cd);
	}
	cudnnDestroy(h);
}
#endif

/* ---- main ------------------------------------------------------------------ */

static void usage()
{
	fprintf(stderr,
		"usage: calibrate-gpu -o MEASUREMENTS.csv [--device N] "
		"[--batch N] [--repeats N]\n"
		"                     [--max-bytes BYTES] [--tf32] [--fp16] "
		"[--quick] [--cold]\n"
		"                     [--only BENCH[,BENCH...]]\n"
		"--only runs the named benches alone (launch, copy, alloc,\n"
		"memory, matmul, gemm, conv); e.g. --only gemm adds the GEMM\n"
		"shapes to an earlier calibration of the same GPU\n"
		"Measures this GPU (format: calibrate/calib.h); then\n"
		"  gpumemsim fit MEASUREMENTS.csv -o configs/hw/NAME.yaml\n");
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int dev = 0, batch = 32;
	bool tf32 = false, fp16 = false, cold = false;
	size_t max_bytes = (size_t)1 << 30;
	std::string only; /* --only: comma-separated benches; empty: all */
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a == "--tf32")
			tf32 = true;
		else if (a == "--fp16")
			fp16 = true;
		else if (a == "--cold")
			cold = true;
		else if (a == "--quick") {
			repeats = 5;
			max_bytes = (size_t)64 << 20;
		} else if (a == "-h" || a == "--help") {
			usage();
			return 0;
		} else if (v && a == "-o") {
			path = v;
			i++;
		} else if (v && a == "--device") {
			dev = atoi(v);
			i++;
		} else if (v && a == "--batch") {
			batch = atoi(v);
			i++;
		} else if (v && a == "--repeats") {
			repeats = atoi(v);
			i++;
		} else if (v && a == "--only") {
			only = v;
			i++;
		} else if (v && a == "--max-bytes") {
			max_bytes = strtoull(v, NULL, 10);
			i++;
		} else {
			usage();
			return 2;
		}
	}
	static const char *const benches[] = {"launch", "copy",	 "alloc",
					      "memory", "matmul", "gemm",
					      "conv"};
	/* every name in --only is a bench: a typo is an error, not an
	 * empty calibration */
	std::vector<std::string> chosen; /* --only's names; empty: all */
	for (size_t b = 0, e; b < only.size(); b = e + 1) {
		e = only.find(',', b);
		if (e == std::string::npos)
			e = only.size();
		std::string name = only.substr(b, e - b);
		chosen.push_back(name);
		if (std::find(std::begin(benches), std::end(benches), name) ==
		    std::end(benches)) {
			fprintf(stderr, "calibrate-gpu: --only: no bench '%s' "
					"(launch, copy, alloc, memory, matmul, "
					"gemm, conv)\n",
				name.c_str());
			return 2;
		}
	}
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		printf("calibrate-gpu: no CUDA GPU found (%s); nothing measured\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	if (!path || batch < 1 || repeats < 1 || max_bytes < 4096) {
		usage();
		return 2;
	}
	auto want = [&chosen](const char *name) {
		return chosen.empty() ||
		       std::find(chosen.begin(), chosen.end(), name) !=
			       chosen.end();
	};
	CK(cudaSetDevice(dev));
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, dev));
	int drv = 0, rt = 0;
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	std::string tmp = std::string(path) + ".partial";
	out = fopen(tmp.c_str(), "w");
	if (!out) {
		perror(path);
		return 1;
	}
	/* the library handles exist before free memory is read */
	cublasHandle_t hb;
	cublasCreate(&hb);
	int cublas_v = 0;
	cublasGetVersion(hb, &cublas_v);
#ifdef GMS_HAVE_CUDNN
	cudnnHandle_t hd;
	cudnnCreate(&hd);
#endif
	size_t fr, tot;
	CK(cudaMemGetInfo(&fr, &tot));
	/* after free_bytes: the flush buffer is the benchmark's, not the
	 * frameworks' */
	if (cold) {
		flush_bytes = 2 * (size_t)std::max(p.l2CacheSize, 1 << 20);
		CK(cudaMalloc(&flush_buf, flush_bytes));
	}
	fprintf(out, "# gpumemsim calibration v1\n# device: %s\n# driver: %d\n"
		     "# runtime: %d\n# cublas: %d\n",
		p.name, drv, rt, cublas_v);
#ifdef GMS_HAVE_CUDNN
	fprintf(out, "# cudnn: %zu\n# conv_math: %s\n", cudnnGetVersion(),
		tf32 ? "tf32" : "fma");
#endif
	fprintf(out, "# memory_bytes: %zu\n# free_bytes: %zu\n# sms: %d\n"
		     "# async_engines: %d\n# batch: %d\n# repeats: %d\n"
		     "# l2_flush: %s\n",
		p.totalGlobalMem, fr, p.multiProcessorCount, p.asyncEngineCount,
		batch, repeats, cold ? "yes" : "no");
	if (!only.empty())
		fprintf(out, "# only: %s\n", only.c_str());
	fprintf(out, "bench,kind,param,size_bytes,flops,repeats,median_ns,"
		     "p10_ns,p90_ns\n");
	fprintf(stderr, "calibrate-gpu: %s; writing %s\n", p.name, path);
	if (want("launch"))
		bench_launch();
	if (want("copy"))
		bench_copy(max_bytes);
	if (want("alloc"))
		bench_alloc(max_bytes);
	if (want("memory"))
		bench_memory(max_bytes);
	if (want("matmul"))
		bench_matmul(tf32, fp16);
	if (want("gemm"))
		bench_gemm(batch, tf32, fp16);
#ifdef GMS_HAVE_CUDNN
	if (want("conv"))
		bench_conv(batch, tf32);
	cudnnDestroy(hd);
#else
	if (want("conv"))
		fprintf(stderr, "calibrate-gpu: built without cuDNN: no "
				"convolution measurements\n");
#endif
	cublasDestroy(hb);
	if (fclose(out) != 0 || rename(tmp.c_str(), path) != 0) {
		perror(path);
		return 1;
	}
	fprintf(stderr, "calibrate-gpu: wrote %s\n", path);
	return 0;
}
