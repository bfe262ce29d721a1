/*
 * validate_gpu.cu - the replayer on a GPU (`make validate`, run as
 * build/validate-gpu SCHEDULE -o MEASURED.csv [--mode real|spin]
 * [--alloc arena|async] [--host wait|runahead] [--device N]): executes a
 * schedule log
 * (sim/sched.h, written by `gpumemsim simulate --schedule`) through the
 * replay core (validate/replay.h, which decides when the host issues each
 * record: the model's enqueue policy) and writes the measurement CSV that
 * `gpumemsim compare` reads.
 *
 *   streams  one compute stream and two copy streams (h2d, d2h), plus an
 *            idle allocation stream for --alloc async
 *   events   one cudaEvent per logged event (timing disabled), recorded
 *            after its item and waited for with cudaStreamWaitEvent or,
 *            by the host, cudaEventSynchronize; each kernel and copy is
 *            bracketed by two timing events on its stream, read after
 *            the iteration drained (ns from an event recorded on the
 *            compute stream at the iteration's start)
 *   memory   --alloc arena (default): one cudaMalloc of the highest end
 *            address the log places (rp_arena_extent), every tensor at
 *            base + its model address, so fragmentation
 *            and the OOM point are the model's; peak_bytes = the highest
 *            end address placed. --alloc async: cudaMallocAsync on the
 *            allocation stream (each stream then waits for it) and
 *            cudaFreeAsync on the stream that last used the block;
 *            peak_bytes = the default pool's reserved high-water mark,
 *            what the real allocator needed for the same requests
 *   copies   cudaMemcpyAsync from a pinned (cudaMallocHost) or pageable
 *            (malloc) host buffer, as the record says
 *   kernels  --mode spin: one thread busy for the predicted duration
 *            less an empty kernel's time (rp_spin_ns; clock64 cycles at
 *            a clock rate measured at start-up), to
 *            validate overlap and ordering alone. --mode real (default):
 *            cuDNN convolution with the scheduled algorithm when the
 *            record has conv geometry (and the build has cuDNN), cuBLAS
 *            SGEMM of a square n^3 with 2 n^3 = flops for matmul types,
 *            else a kernel reading and writing `bytes` (half each); their
 *            operands live in a scratch buffer beside the arena (the log
 *            names no kernel operands), the convolution's workspace at
 *            its logged block when there is one. Every kernel not run as
 *            scheduled (no geometry, an algorithm this cuDNN refuses or
 *            names differently, a workspace larger than logged) is
 *            counted and reported on stderr.
 * Without a GPU (cudaGetDeviceCount fails or returns 0) it says "no CUDA
 * GPU found" and exits 0, writing nothing.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef GMS_HAVE_CUDNN
#include <cudnn.h>
#endif

#include <algorithm>
#include <array>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "../validate/replay.h"
#include "../workloads/wl.h"
}

#define CK(x)                                                              \
	do {                                                               \
		cudaError_t e_ = (x);                                      \
		if (e_ != cudaSuccess)                                     \
			return gms_errf(err, "validate-gpu: %s:%d: %s: %s", \
					__FILE__, __LINE__, #x,            \
					cudaGetErrorString(e_));           \
	} while (0)

/* Exit on a CUDA error outside the hooks (set-up). */
#define CX(x)                                                              \
	do {                                                               \
		cudaError_t e_ = (x);                                      \
		if (e_ != cudaSuccess) {                                   \
			fprintf(stderr, "validate-gpu: %s:%d: %s: %s\n",   \
				__FILE__, __LINE__, #x,                    \
				cudaGetErrorString(e_));                   \
			exit(1);                                           \
		}                                                          \
	} while (0)

#ifdef GMS_HAVE_CUDNN
/* A convolution's descriptors and the workspace its algorithm needs,
 * built once per (pass, algorithm, geometry) and kept for the run, as a
 * framework keeps them (PyTorch's cuDNN plan cache): building them for
 * every call cost the replay host about 75 us per convolution on the
 * H100, time the device waited (issue 21). */
struct conv_desc {
	cudnnTensorDescriptor_t xd, yd; /* input, output */
	cudnnFilterDescriptor_t wd;	/* filter */
	cudnnConvolutionDescriptor_t cd; /* the convolution, FMA math */
	size_t ws;			/* workspace of the algorithm */
	bool ok;			/* this cuDNN offers the algorithm */
};

#endif

/* What a replay on the GPU needs. */
struct gpu {
	bool real;			 /* --mode real (else spin) */
	bool async;			 /* --alloc async (else arena) */
	cudaStream_t st[RP_STREAM_COUNT]; /* compute, h2d, d2h */
	cudaStream_t sa;		 /* allocation stream (async) */
	cudaEvent_t alloc_ev;		 /* after each cudaMallocAsync */
	cudaEvent_t it0;		 /* the iteration's start (compute) */
	cudaEvent_t end[RP_STREAM_COUNT]; /* each stream drained */
	std::vector<cudaEvent_t> ev;	 /* dense logged events */
	std::vector<cudaEvent_t> t0, t1; /* per slot: start, end */
	std::vector<int64_t> s_ns, e_ns; /* per slot, read at iter_end */
	char *arena;			 /* rp_arena_extent bytes (arena mode) */
	std::unordered_map<uint64_t, void *> blk; /* async: model addr ->
						      block */
	char *scratch;			 /* real kernels' operands */
	size_t scratch_bytes;		 /* its size */
	void *pinned, *pageable;	 /* host buffers */
	double cycles_per_ns;		 /* spin kernels' clock */
	uint64_t spin_overhead_ns;	 /* an empty spin kernel's time
					    between its events (median) */
	cublasHandle_t blas;		 /* cuBLAS, on the compute stream */
#ifdef GMS_HAVE_CUDNN
	cudnnHandle_t dnn;		 /* cuDNN, on the compute stream */
	std::map<std::array<int64_t, 14>, struct conv_desc> convs; /*
					    run_conv's descriptors */
#endif
	uint64_t n_kernels;		 /* kernels issued */
	uint64_t n_no_geometry;		 /* convolutions without geometry,
					    run memory-bound */
	uint64_t n_algo_fallback;	 /* convolutions not run with the
					    scheduled algorithm or workspace */
};

__global__ void k_spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

/* Reads n floats and writes n: 8 n bytes moved. */
__global__ void k_move(const float *x, float *y, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] = 2.0f * x[i] + 1.0f;
}

static bool is_conv(uint32_t t)
{
	return t == OT_CONV || t == OT_CONV_BWD_DATA || t == OT_CONV_BWD_FILTER;
}

static bool is_matmul(uint32_t t)
{
	return t == OT_MATMUL || t == OT_MATMUL_BWD;
}

/* Side of the square SGEMM of `flops` (2 n^3 = flops). */
static int gemm_n(double flops)
{
	double n = std::cbrt(flops / 2);
	return n < 1 ? 1 : (int)std::lround(n);
}

static void *dev_ptr(gpu *g, uint64_t addr)
{
	if (!g->async)
		return g->arena + addr;
	auto p = g->blk.find(addr);
	return p == g->blk.end() ? nullptr : p->second;
}

/* Record a kernel's start event: by each kernel's code right before its
 * launch, after any host-side preparation (descriptors, workspace
 * queries), so that the time the host spends preparing is not measured
 * as the kernel's while the stream waits idle (issue 21: on the H100
 * every cuDNN convolution of the replay measured 80-700 us longer than
 * the same call in calibrate-gpu). */
static int mark_start(gpu *g, const rp_issue *is, gms_err *err)
{
	CK(cudaEventRecord(g->t0[is->slot], g->st[RP_COMPUTE]));
	return 0;
}

static int run_move(gpu *g, const rp_issue *is, double bytes, gms_err *err)
{
	cudaStream_t s = g->st[RP_COMPUTE];
	size_t n = (size_t)(bytes / 8);
	n = std::min(n, g->scratch_bytes / 8);
	if (mark_start(g, is, err) != 0)
		return -1;
	if (n == 0)
		return 0;
	int blocks = (int)std::min<size_t>((n + 255) / 256, 65535);
	float *x = (float *)g->scratch, *y = x + n;
	k_move<<<blocks, 256, 0, s>>>(x, y, n);
	CK(cudaGetLastError());
	return 0;
}

#ifdef GMS_HAVE_CUDNN
static conv_desc *conv_desc_get(gpu *g, const sch_item *it, int algo)
{
	const int64_t *v = it->conv; /* N,C,K,H,W,HO,WO,R,S,STRIDE,PH,PW */
	std::array<int64_t, 14> key;
	key[0] = it->type;
	key[1] = algo;
	std::copy(v, v + 12, key.begin() + 2);
	auto f = g->convs.find(key);
	if (f != g->convs.end())
		return &f->second;
	conv_desc d{};
	cudnnCreateTensorDescriptor(&d.xd);
	cudnnCreateTensorDescriptor(&d.yd);
	cudnnCreateFilterDescriptor(&d.wd);
	cudnnCreateConvolutionDescriptor(&d.cd);
	cudnnSetTensor4dDescriptor(d.xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
				   (int)v[0], (int)v[1], (int)v[3], (int)v[4]);
	cudnnSetTensor4dDescriptor(d.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
				   (int)v[0], (int)v[2], (int)v[5], (int)v[6]);
	cudnnSetFilter4dDescriptor(d.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
				   (int)v[2], (int)v[1], (int)v[7], (int)v[8]);
	cudnnSetConvolution2dDescriptor(d.cd, (int)v[10], (int)v[11],
					(int)v[9], (int)v[9], 1, 1,
					CUDNN_CROSS_CORRELATION,
					CUDNN_DATA_FLOAT);
	/* FP32 on CUDA cores, as the profiles model and calibrate-gpu
	 * measures (calibrate/gpu_bench.cu, conv_math): cuDNN's default
	 * math would run these on TF32 Tensor Cores from sm_80 on */
	cudnnSetConvolutionMathType(d.cd, CUDNN_FMA_MATH);
	cudnnStatus_t st;
	if (it->type == OT_CONV)
		st = cudnnGetConvolutionForwardWorkspaceSize(
			g->dnn, d.xd, d.wd, d.cd, d.yd,
			(cudnnConvolutionFwdAlgo_t)algo, &d.ws);
	else if (it->type == OT_CONV_BWD_DATA)
		st = cudnnGetConvolutionBackwardDataWorkspaceSize(
			g->dnn, d.wd, d.yd, d.cd, d.xd,
			(cudnnConvolutionBwdDataAlgo_t)algo, &d.ws);
	else
		st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
			g->dnn, d.xd, d.yd, d.cd, d.wd,
			(cudnnConvolutionBwdFilterAlgo_t)algo, &d.ws);
	d.ok = st == CUDNN_STATUS_SUCCESS;
	return &(g->convs[key] = d);
}

static void conv_descs_free(gpu *g)
{
	for (auto &kv : g->convs) {
		cudnnDestroyTensorDescriptor(kv.second.xd);
		cudnnDestroyTensorDescriptor(kv.second.yd);
		cudnnDestroyFilterDescriptor(kv.second.wd);
		cudnnDestroyConvolutionDescriptor(kv.second.cd);
	}
	g->convs.clear();
}

/* The scheduled convolution; 1 when it could not run as scheduled (the
 * caller counts it and runs the memory-bound kernel instead). */
static int run_conv(gpu *g, const rp_issue *is, gms_err *err)
{
	const sch_item *it = is->it;
	const int64_t *v = it->conv; /* N,C,K,H,W,HO,WO,R,S,STRIDE,PH,PW */
	int algo = wl_conv_algo_value((enum wl_op_type)it->type, it->algo);
	if (algo < 0)
		return 1;
	const conv_desc *d = conv_desc_get(g, it, algo);
	size_t xb = (size_t)(v[0] * v[1] * v[3] * v[4]) * 4,
	       yb = (size_t)(v[0] * v[2] * v[5] * v[6]) * 4,
	       wb = (size_t)(v[2] * v[1] * v[7] * v[8]) * 4;
	const float one = 1, zero = 0;
	char *x = g->scratch, *y = x + xb, *w = y + yb;
	void *wsp = is->has_ws ? dev_ptr(g, is->addr) : nullptr;
	size_t have = is->has_ws ? it->workspace : 0, ws = d->ws;
	if (xb + yb + wb > g->scratch_bytes || !d->ok || ws > have ||
	    (ws && !wsp))
		return 1;
	if (mark_start(g, is, err) != 0)
		return 1;
	cudnnStatus_t st;
	if (it->type == OT_CONV)
		st = cudnnConvolutionForward(g->dnn, &one, d->xd, x, d->wd, w,
					     d->cd,
					     (cudnnConvolutionFwdAlgo_t)algo,
					     wsp, ws, &zero, d->yd, y);
	else if (it->type == OT_CONV_BWD_DATA)
		st = cudnnConvolutionBackwardData(
			g->dnn, &one, d->wd, w, d->yd, y, d->cd,
			(cudnnConvolutionBwdDataAlgo_t)algo, wsp, ws, &zero,
			d->xd, x);
	else
		st = cudnnConvolutionBackwardFilter(
			g->dnn, &one, d->xd, x, d->yd, y, d->cd,
			(cudnnConvolutionBwdFilterAlgo_t)algo, wsp, ws, &zero,
			d->wd, w);
	return st == CUDNN_STATUS_SUCCESS ? 0 : 1;
}
#endif

static int run_kernel(gpu *g, const rp_issue *is, gms_err *err)
{
	const sch_item *it = is->it;
	cudaStream_t s = g->st[RP_COMPUTE];
	g->n_kernels++;
	if (!g->real) {
		long long cyc = (long long)((double)rp_spin_ns(
						    is->pred_ns,
						    g->spin_overhead_ns) *
					    g->cycles_per_ns);
		if (mark_start(g, is, err) != 0)
			return -1;
		k_spin<<<1, 1, 0, s>>>(cyc);
		CK(cudaGetLastError());
		return 0;
	}
	if (is_conv(it->type)) {
		if (!it->has_conv) {
			g->n_no_geometry++;
			return run_move(g, is, it->bytes, err);
		}
#ifdef GMS_HAVE_CUDNN
		if (run_conv(g, is, err) == 0)
			return 0;
#endif
		g->n_algo_fallback++;
		return run_move(g, is, it->bytes, err);
	}
	if (is_matmul(it->type)) {
		int n = gemm_n(it->flops);
		const float one = 1, zero = 0;
		float *a = (float *)g->scratch, *b = a + (size_t)n * n,
		      *c = b + (size_t)n * n;
		if (mark_start(g, is, err) != 0)
			return -1;
		if (cublasSgemm(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
				&one, a, n, b, n, &zero, c, n) !=
		    CUBLAS_STATUS_SUCCESS)
			return gms_errf(err, "validate-gpu: iteration %d seq "
					     "%u: cublasSgemm n=%d failed",
					it->iter, it->seq, n);
		return 0;
	}
	return run_move(g, is, it->bytes, err);
}

/* ---- hooks ---------------------------------------------------------------- */

static int g_iter_begin(void *obj, int iter, uint32_t n_slots,
			uint32_t n_events, gms_err *err)
{
	gpu *g = (gpu *)obj;
	(void)iter;
	while (g->ev.size() < n_events) {
		cudaEvent_t e;
		CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
		g->ev.push_back(e);
	}
	while (g->t0.size() < n_slots) {
		cudaEvent_t a, b;
		CK(cudaEventCreate(&a));
		CK(cudaEventCreate(&b));
		g->t0.push_back(a);
		g->t1.push_back(b);
	}
	g->s_ns.assign(n_slots, 0);
	g->e_ns.assign(n_slots, 0);
	CK(cudaEventRecord(g->it0, g->st[RP_COMPUTE]));
	return 0;
}

static int g_issue(void *obj, const rp_issue *is, gms_err *err)
{
	gpu *g = (gpu *)obj;
	cudaStream_t s = g->st[is->s];
	for (uint32_t i = 0; i < is->n_wait; i++)
		CK(cudaStreamWaitEvent(s, g->ev[is->wait[i]], 0));
	if (is->it->kind != SCH_KERNEL) /* kernels: run_kernel, at launch */
		CK(cudaEventRecord(g->t0[is->slot], s));
	if (is->it->kind == SCH_KERNEL) {
		if (run_kernel(g, is, err) != 0)
			return -1;
	} else {
		void *d = dev_ptr(g, is->addr);
		void *h = is->it->pinned ? g->pinned : g->pageable;
		if (!d)
			return gms_errf(err, "validate-gpu: iteration %d seq %u:"
					     " no block at %llu",
					is->it->iter, is->it->seq,
					(unsigned long long)is->addr);
		if (is->s == RP_H2D)
			CK(cudaMemcpyAsync(d, h, is->it->size,
					   cudaMemcpyHostToDevice, s));
		else
			CK(cudaMemcpyAsync(h, d, is->it->size,
					   cudaMemcpyDeviceToHost, s));
	}
	CK(cudaEventRecord(g->t1[is->slot], s));
	if (is->signal != SCH_NONE)
		CK(cudaEventRecord(g->ev[is->signal], s));
	return 0;
}

static int g_wait_slot(void *obj, uint32_t slot, gms_err *err)
{
	gpu *g = (gpu *)obj;
	CK(cudaEventSynchronize(g->t1[slot]));
	return 0;
}

static int g_wait_event(void *obj, uint32_t ev, gms_err *err)
{
	gpu *g = (gpu *)obj;
	CK(cudaEventSynchronize(g->ev[ev]));
	return 0;
}

static int g_alloc(void *obj, const sch_item *it, gms_err *err)
{
	gpu *g = (gpu *)obj;
	if (!g->async)
		return 0; /* placed at the model's address */
	void *p;
	CK(cudaMallocAsync(&p, it->size, g->sa));
	CK(cudaEventRecord(g->alloc_ev, g->sa));
	for (int s = 0; s < RP_STREAM_COUNT; s++)
		CK(cudaStreamWaitEvent(g->st[s], g->alloc_ev, 0));
	g->blk[it->addr] = p;
	return 0;
}

static int g_free(void *obj, const sch_item *it, rp_stream s, gms_err *err)
{
	gpu *g = (gpu *)obj;
	if (!g->async)
		return 0;
	auto p = g->blk.find(it->addr);
	if (p == g->blk.end())
		return gms_errf(err, "validate-gpu: free of no block at %llu",
				(unsigned long long)it->addr);
	CK(cudaFreeAsync(p->second, g->st[s]));
	g->blk.erase(p);
	return 0;
}

static int64_t elapsed_ns(cudaEvent_t a, cudaEvent_t b, gms_err *err)
{
	float ms = 0;
	cudaError_t e = cudaEventElapsedTime(&ms, a, b);
	if (e != cudaSuccess) {
		gms_errf(err, "validate-gpu: cudaEventElapsedTime: %s",
			 cudaGetErrorString(e));
		return INT64_MIN;
	}
	return (int64_t)std::llround((double)ms * 1e6);
}

static int g_iter_end(void *obj, int64_t *span, gms_err *err)
{
	gpu *g = (gpu *)obj;
	for (int s = 0; s < RP_STREAM_COUNT; s++)
		CK(cudaEventRecord(g->end[s], g->st[s]));
	CK(cudaDeviceSynchronize());
	*span = 0;
	for (int s = 0; s < RP_STREAM_COUNT; s++) {
		int64_t t = elapsed_ns(g->it0, g->end[s], err);
		if (t == INT64_MIN)
			return -1;
		*span = std::max(*span, t);
	}
	for (size_t i = 0; i < g->s_ns.size(); i++) {
		g->s_ns[i] = elapsed_ns(g->it0, g->t0[i], err);
		g->e_ns[i] = elapsed_ns(g->it0, g->t1[i], err);
		if (g->s_ns[i] == INT64_MIN || g->e_ns[i] == INT64_MIN)
			return -1;
	}
	return 0;
}

static int g_times(void *obj, uint32_t slot, int64_t *s, int64_t *e)
{
	gpu *g = (gpu *)obj;
	if (slot >= g->s_ns.size())
		return -1;
	*s = g->s_ns[slot];
	*e = g->e_ns[slot];
	return 0;
}

/* ---- set-up ----------------------------------------------------------------- */

/* Device cycles per ns: a spin of 2^24 cycles timed with events (after
 * one warm-up launch). */
static double measure_clock(cudaStream_t s)
{
	const long long cyc = 1LL << 24;
	cudaEvent_t a, b;
	CX(cudaEventCreate(&a));
	CX(cudaEventCreate(&b));
	k_spin<<<1, 1, 0, s>>>(cyc / 16);
	CX(cudaEventRecord(a, s));
	k_spin<<<1, 1, 0, s>>>(cyc);
	CX(cudaEventRecord(b, s));
	CX(cudaEventSynchronize(b));
	float ms;
	CX(cudaEventElapsedTime(&ms, a, b));
	CX(cudaEventDestroy(a));
	CX(cudaEventDestroy(b));
	return (double)cyc / ((double)ms * 1e6);
}

/* An empty spin kernel's time between the events around it, median of
 * 21 after a warm-up: what launching any kernel costs on top of its
 * spinning (rp_spin_ns). */
static uint64_t measure_spin_overhead(cudaStream_t s)
{
	cudaEvent_t a, b;
	CX(cudaEventCreate(&a));
	CX(cudaEventCreate(&b));
	std::vector<float> v;
	for (int i = 0; i < 22; i++) {
		CX(cudaEventRecord(a, s));
		k_spin<<<1, 1, 0, s>>>(0);
		CX(cudaEventRecord(b, s));
		CX(cudaEventSynchronize(b));
		float ms;
		CX(cudaEventElapsedTime(&ms, a, b));
		if (i > 0)
			v.push_back(ms);
	}
	CX(cudaEventDestroy(a));
	CX(cudaEventDestroy(b));
	std::sort(v.begin(), v.end());
	return (uint64_t)((double)v[v.size() / 2] * 1e6);
}

/* What the log asks of host buffers and scratch. */
static void needs(const sch_log *log, size_t *pinned, size_t *pageable,
		  size_t *scratch)
{
	*pinned = *pageable = *scratch = 0;
	for (size_t i = 0; i < log->n; i++) {
		const sch_item *it = &log->it[i];
		if (it->kind == SCH_COPY) {
			size_t *p = it->pinned ? pinned : pageable;
			*p = std::max<size_t>(*p, it->size);
		} else if (it->kind == SCH_KERNEL) {
			size_t b = (size_t)it->bytes;
			if (is_matmul(it->type)) {
				size_t n = (size_t)gemm_n(it->flops);
				b = 3 * n * n * 4;
			} else if (is_conv(it->type) && it->has_conv) {
				const int64_t *v = it->conv;
				b = (size_t)(v[0] * v[1] * v[3] * v[4] +
					     v[0] * v[2] * v[5] * v[6] +
					     v[2] * v[1] * v[7] * v[8]) * 4;
				b = std::max(b, (size_t)it->bytes);
			}
			*scratch = std::max(*scratch, b);
		}
	}
}

/* Reads SCHEDULE into log (see the end of this file). */
static int load_schedule(const char *path, sch_log *log, gms_err *err);
static void unload_schedule(sch_log *log);

static void usage()
{
	fprintf(stderr,
		"usage: validate-gpu SCHEDULE -o MEASURED.csv [--mode real|spin]"
		" [--alloc arena|async] [--host wait|runahead] [--device N]\n"
		"--host runahead launches without waiting for each kernel (a\n"
		"schedule simulated with a host that runs ahead); wait (the\n"
		"default) waits per kernel as the replay always did\n"
		"Replays a schedule log (gpumemsim simulate ... --schedule "
		"SCHEDULE) on this GPU\nand writes the measurement CSV; then\n"
		"  gpumemsim compare SCHEDULE MEASURED.csv\n");
}

int main(int argc, char **argv)
{
	const char *sched = NULL, *out = NULL, *mode = "real",
		   *alloc = "arena", *host = "wait";
	int dev = 0;
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a == "-h" || a == "--help") {
			usage();
			return 0;
		} else if (v && a == "-o") {
			out = v;
			i++;
		} else if (v && a == "--mode") {
			mode = v;
			i++;
		} else if (v && a == "--alloc") {
			alloc = v;
			i++;
		} else if (v && a == "--host") {
			host = v;
			i++;
		} else if (v && a == "--device") {
			dev = atoi(v);
			i++;
		} else if (a[0] != '-' && !sched) {
			sched = argv[i];
		} else {
			usage();
			return 2;
		}
	}
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		printf("validate-gpu: no CUDA GPU found (%s); nothing replayed\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 0;
	}
	if (!sched || !out ||
	    (strcmp(mode, "real") && strcmp(mode, "spin")) ||
	    (strcmp(alloc, "arena") && strcmp(alloc, "async")) ||
	    (strcmp(host, "wait") && strcmp(host, "runahead"))) {
		usage();
		return 2;
	}
	gms_err err = {{0}};
	sch_log log;
	memset(&log, 0, sizeof log);
	if (load_schedule(sched, &log, &err) != 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	CX(cudaSetDevice(dev));
	cudaDeviceProp p;
	CX(cudaGetDeviceProperties(&p, dev));
	gpu g{};
	g.real = !strcmp(mode, "real");
	g.async = !strcmp(alloc, "async");
	for (int s = 0; s < RP_STREAM_COUNT; s++) {
		CX(cudaStreamCreateWithFlags(&g.st[s], cudaStreamNonBlocking));
		CX(cudaEventCreateWithFlags(&g.end[s], 0));
	}
	CX(cudaStreamCreateWithFlags(&g.sa, cudaStreamNonBlocking));
	CX(cudaEventCreateWithFlags(&g.alloc_ev, cudaEventDisableTiming));
	CX(cudaEventCreate(&g.it0));
	if (cublasCreate(&g.blas) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "validate-gpu: cublasCreate failed\n");
		return 1;
	}
	cublasSetStream(g.blas, g.st[RP_COMPUTE]);
#ifdef GMS_HAVE_CUDNN
	if (cudnnCreate(&g.dnn) != CUDNN_STATUS_SUCCESS) {
		fprintf(stderr, "validate-gpu: cudnnCreate failed\n");
		return 1;
	}
	cudnnSetStream(g.dnn, g.st[RP_COMPUTE]);
#else
	if (g.real)
		fprintf(stderr, "validate-gpu: built without cuDNN: "
				"convolutions run as memory-bound kernels\n");
#endif
	size_t pin, pag, scr;
	needs(&log, &pin, &pag, &scr);
	uint64_t arena = g.async ? 0 : rp_arena_extent(&log);
	if (!g.async) {
		e = cudaMalloc((void **)&g.arena, arena);
		if (e != cudaSuccess) {
			fprintf(stderr, "validate-gpu: the arena of %llu bytes "
					"(the highest end address the schedule "
					"places) does not fit: %s\n",
				(unsigned long long)arena,
				cudaGetErrorString(e));
			return 1;
		}
	} else {
		cudaMemPool_t pool;
		CX(cudaDeviceGetDefaultMemPool(&pool, dev));
		uint64_t zero = 0, keep = UINT64_MAX;
		/* keep freed memory in the pool (a framework's cache) and
		 * start the high-water mark here */
		CX(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
					   &keep));
		CX(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh,
					   &zero));
	}
	g.scratch_bytes = g.real ? std::max<size_t>(scr, 4096) : 4096;
	e = cudaMalloc((void **)&g.scratch, g.scratch_bytes);
	if (e != cudaSuccess) {
		fprintf(stderr, "validate-gpu: scratch of %zu bytes for the "
				"kernels' operands does not fit: %s\n",
			g.scratch_bytes, cudaGetErrorString(e));
		return 1;
	}
	CX(cudaMemset(g.scratch, 0, g.scratch_bytes));
	CX(cudaMallocHost(&g.pinned, std::max<size_t>(pin, 1)));
	g.pageable = malloc(std::max<size_t>(pag, 1));
	if (!g.pageable) {
		fprintf(stderr, "validate-gpu: out of host memory\n");
		return 1;
	}
	memset(g.pageable, 0, std::max<size_t>(pag, 1));
	g.cycles_per_ns = measure_clock(g.st[RP_COMPUTE]);
	g.spin_overhead_ns = measure_spin_overhead(g.st[RP_COMPUTE]);
	fprintf(stderr,
		"validate-gpu: %s; %s kernels, %s allocation; clock %.3f "
		"cycles/ns; empty kernel %llu ns; scratch %zu bytes; "
		"replaying %s\n",
		p.name, mode, alloc, g.cycles_per_ns,
		(unsigned long long)g.spin_overhead_ns, g.scratch_bytes, sched);

	rp_backend b = {&g,	     g_iter_begin, g_issue, g_wait_slot,
			g_wait_event, g_alloc,	    g_free,  g_iter_end,
			g_times};
	rp_meas m;
	memset(&m, 0, sizeof m);
	snprintf(m.device, sizeof m.device, "%.127s", p.name);
	for (char *c = m.device; *c; c++)
		if (*c == ' ')
			*c = '_';
	snprintf(m.mode, sizeof m.mode, "%s", mode);
	snprintf(m.alloc, sizeof m.alloc, "%s", alloc);
	int rc = rp_replay_host(&log, &b, arena, strcmp(host, "runahead") == 0,
				&m, &err);
	if (rc == 0 && g.async) {
		cudaMemPool_t pool;
		uint64_t high = 0;
		CX(cudaDeviceGetDefaultMemPool(&pool, dev));
		CX(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh,
					   &high));
		m.peak_bytes = high;
	}
	if (rc == 0)
		rc = rp_meas_write(&m, out, &err);
	if (rc != 0)
		fprintf(stderr, "%s\n", err.msg);
	else
		fprintf(stderr,
			"validate-gpu: wrote %s (%llu kernels; %llu "
			"convolutions without geometry and %llu not with the "
			"scheduled algorithm or workspace ran memory-bound; "
			"peak %llu bytes)\n",
			out, (unsigned long long)g.n_kernels,
			(unsigned long long)g.n_no_geometry,
			(unsigned long long)g.n_algo_fallback,
			(unsigned long long)m.peak_bytes);
	rp_meas_free(&m);
	unload_schedule(&log);
	cudaDeviceSynchronize();
	for (auto &kv : g.blk)
		cudaFree(kv.second);
	cudaFree(g.arena);
	cudaFree(g.scratch);
	cudaFreeHost(g.pinned);
	free(g.pageable);
	cublasDestroy(g.blas);
#ifdef GMS_HAVE_CUDNN
	conv_descs_free(&g);
	cudnnDestroy(g.dnn);
#endif
	return rc == 0 ? 0 : 1;
}

/* ---- reading the schedule ------------------------------------------------------
 * sch_read is strict (path:line:col and the key on an error); sch_check
 * then makes sure the log is consistent before anything runs on the GPU
 * (the core checks what it relies on as it goes as well). */
static int load_schedule(const char *path, sch_log *log, gms_err *err)
{
	if (sch_read(path, log, err) != 0)
		return -1;
	if (sch_check(log, err) != 0) {
		gms_err_prefix(err, "%s", path);
		sch_free(log);
		return -1;
	}
	return 0;
}

static void unload_schedule(sch_log *log)
{
	sch_free(log);
}
