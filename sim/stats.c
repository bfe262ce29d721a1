/* stats.c - steady-state figures and the human-readable report. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

const char *const st_stall_names[] = {"h2d", "d2h", "memory", "alloc",
					     NULL};

void st_run_free(struct st_run *r)
{
	free(r->iter);
	r->iter = NULL;
	free(r->pol_report);
	r->pol_report = NULL;
}

void st_finish(struct st_run *r)
{
	struct st_iter *s = &r->steady;
	memset(s, 0, sizeof *s);
	int n = r->n_iter - r->warmup;
	if (n <= 0 || !r->iter)
		return;
	for (int i = r->warmup; i < r->n_iter; i++) {
		const struct st_iter *it = &r->iter[i];
		/* times summed with the clock's check (common.h): a failed
		 * run's iterations may hold SIM_TIME_OVER */
		s->time = sim_time_add(s->time, it->time);
		s->compute_busy = sim_time_add(s->compute_busy,
					       it->compute_busy);
		s->recompute = sim_time_add(s->recompute, it->recompute);
		s->host_busy = sim_time_add(s->host_busy, it->host_busy);
		s->alloc_time = sim_time_add(s->alloc_time, it->alloc_time);
		s->host_issue = sim_time_add(s->host_issue, it->host_issue);
		s->host_bound = sim_time_add(s->host_bound, it->host_bound);
		s->n_cuda_malloc += it->n_cuda_malloc;
		s->n_cuda_free += it->n_cuda_free;
		s->n_host_alloc += it->n_host_alloc;
		for (int k = 0; k < ST_STALL_COUNT; k++)
			s->stall[k] = sim_time_add(s->stall[k], it->stall[k]);
		s->bytes_h2d += it->bytes_h2d;
		s->bytes_d2h += it->bytes_d2h;
		s->n_swap_out += it->n_swap_out;
		s->n_release += it->n_release;
		s->n_swap_in += it->n_swap_in;
		s->n_swap_out_cancelled += it->n_swap_out_cancelled;
		s->n_algo_fallback += it->n_algo_fallback;
		s->n_drop += it->n_drop;
		s->n_recompute += it->n_recompute;
		s->recompute_flops += it->recompute_flops;
		s->n_kernels += it->n_kernels;
		s->n_late_in += it->n_late_in;
		s->n_replan += it->n_replan;
	}
	s->time /= n;
	s->compute_busy /= n;
	s->recompute /= n;
	s->host_busy /= n;
	s->alloc_time /= n;
	s->host_issue /= n;
	s->host_bound /= n;
	s->n_cuda_malloc /= (uint64_t)n;
	s->n_cuda_free /= (uint64_t)n;
	s->n_host_alloc /= (uint64_t)n;
	for (int k = 0; k < ST_STALL_COUNT; k++)
		s->stall[k] /= n;
	s->bytes_h2d /= (uint64_t)n;
	s->bytes_d2h /= (uint64_t)n;
	s->n_swap_out /= (uint64_t)n;
	s->n_release /= (uint64_t)n;
	s->n_swap_in /= (uint64_t)n;
	s->n_swap_out_cancelled /= (uint64_t)n;
	s->n_algo_fallback /= (uint64_t)n;
	s->n_drop /= (uint64_t)n;
	s->n_recompute /= (uint64_t)n;
	s->recompute_flops /= n;
	s->n_kernels /= (uint64_t)n;
	/* rounded up: one late prefetch or re-plan in the steady window
	 * is not hidden as 0 */
	s->n_late_in = (s->n_late_in + (uint64_t)n - 1) / (uint64_t)n;
	s->n_replan = (s->n_replan + (uint64_t)n - 1) / (uint64_t)n;
	r->samples_per_s =
		s->time > 0 ? (double)r->batch * 1e9 / (double)s->time : 0.0;
}

static double ms(sim_time_t t) { return (double)t / 1e6; }
static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

void st_print(const struct st_run *r, FILE *f)
{
	const struct st_iter *s = &r->steady;
	if (r->failed)
		fprintf(f, "  FAILED: %s\n", r->error);
	if (r->oom.hit) {
		char where[32] = "set-up";
		if (r->oom.iter >= 0)
			snprintf(where, sizeof where, "iteration %d",
				 r->oom.iter);
		fprintf(f, "  OOM in %s at op %s: %s needs %llu bytes (%.2f MiB)\n",
			where, r->oom.op, r->oom.tensor,
			(unsigned long long)r->oom.bytes, mib(r->oom.bytes));
		fprintf(f, "      %s\n", r->oom.reason);
	}
	if (r->allocator[0])
		fprintf(f, "  allocator          %s\n", r->allocator);
	fprintf(f, "  iterations         %d (warm-up %d)\n", r->n_iter,
		r->warmup);
	if (r->settle_asked && r->settled_iter >= 0)
		fprintf(f, "  policy settled     from iteration %d (warm-up "
			   "extended by %d)\n",
			r->settled_iter, r->settle_extra);
	else if (r->settle_asked)
		fprintf(f, "  policy settled     no: still changing after %d "
			   "extra warm-up iterations (the cap)\n",
			r->settle_extra);
	if (r->grow_asked && r->grow_capped)
		fprintf(f, "  pools grew         still in a measured "
			   "iteration after %d extra warm-up iterations (the "
			   "cap)\n",
			r->grow_extra);
	else if (r->grow_asked && r->grow_extra > 0)
		fprintf(f, "  pools grew         in %d more warm-up "
			   "iteration%s (grow_max)\n",
			r->grow_extra, r->grow_extra == 1 ? "" : "s");
	if (r->n_iter > r->warmup) {
		fprintf(f, "  iteration time     %.3f ms\n", ms(s->time));
		fprintf(f, "  samples/s          %.2f\n", r->samples_per_s);
		fprintf(f, "  compute busy       %.3f ms\n",
			ms(s->compute_busy));
		fprintf(f, "  recompute          %.3f ms (%llu kernels, %.3g FLOPs)\n",
			ms(s->recompute), (unsigned long long)s->n_recompute,
			s->recompute_flops);
		if (s->host_busy)
			fprintf(f, "  host cpu           %.3f ms\n",
				ms(s->host_busy));
		if (s->host_issue)
			fprintf(f, "  host launches      %.3f ms (device "
				   "waited for the host %.3f ms)\n",
				ms(s->host_issue), ms(s->host_bound));
		fprintf(f, "  stall h2d          %.3f ms\n",
			ms(s->stall[ST_STALL_H2D]));
		fprintf(f, "  stall d2h          %.3f ms\n",
			ms(s->stall[ST_STALL_D2H]));
		fprintf(f, "  stall memory       %.3f ms\n",
			ms(s->stall[ST_STALL_MEMORY]));
		fprintf(f, "  stall alloc        %.3f ms\n",
			ms(s->stall[ST_STALL_ALLOC]));
		fprintf(f, "  driver alloc calls %.3f ms (%llu cudaMalloc, %llu "
			   "cudaFree, %llu cudaMallocHost)\n",
			ms(s->alloc_time), (unsigned long long)s->n_cuda_malloc,
			(unsigned long long)s->n_cuda_free,
			(unsigned long long)s->n_host_alloc);
		fprintf(f, "  bytes h2d          %llu (%.2f MiB)\n",
			(unsigned long long)s->bytes_h2d, mib(s->bytes_h2d));
		fprintf(f, "  bytes d2h          %llu (%.2f MiB)\n",
			(unsigned long long)s->bytes_d2h, mib(s->bytes_d2h));
		fprintf(f, "  swap-outs          %llu\n",
			(unsigned long long)s->n_swap_out);
		fprintf(f, "  releases (no copy) %llu\n",
			(unsigned long long)s->n_release);
		fprintf(f, "  swap-ins           %llu\n",
			(unsigned long long)s->n_swap_in);
		fprintf(f, "  swap-out cancels   %llu\n",
			(unsigned long long)s->n_swap_out_cancelled);
		fprintf(f, "  algo fallbacks     %llu\n",
			(unsigned long long)s->n_algo_fallback);
		fprintf(f, "  drops              %llu\n",
			(unsigned long long)s->n_drop);
		fprintf(f, "  late swap-ins      %llu\n",
			(unsigned long long)s->n_late_in);
		fprintf(f, "  re-plans           %llu\n",
			(unsigned long long)s->n_replan);
	}
	if (r->conv_bound)
		fprintf(f, "  measured convs     %llu ops took the profile's "
			   "conv_algos\n",
			(unsigned long long)r->conv_bound);
	if (r->gemm_bound)
		fprintf(f, "  measured GEMMs     %llu ops took the profile's "
			   "gemms\n",
			(unsigned long long)r->gemm_bound);
	fprintf(f, "  peak allocated     %llu (%.2f MiB)\n",
		(unsigned long long)r->mem.peak_allocated,
		mib(r->mem.peak_allocated));
	fprintf(f, "  peak reserved      %llu (%.2f MiB)\n",
		(unsigned long long)r->mem.peak_reserved,
		mib(r->mem.peak_reserved));
	fprintf(f, "  peak pinned host   %llu (%.2f MiB)\n",
		(unsigned long long)r->pinned_peak, mib(r->pinned_peak));
	if (r->host_peak)
		fprintf(f, "  peak host memory   %llu (%.2f MiB)\n",
			(unsigned long long)r->host_peak, mib(r->host_peak));
	fprintf(f, "  fragmentation      %.4f at peak allocated, %.4f max\n",
		r->frag_at_peak, r->frag_max);
	fprintf(f, "  events             %llu\n",
		(unsigned long long)r->events);
}
