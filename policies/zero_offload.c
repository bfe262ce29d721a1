/*
 * zero_offload.c - ZeRO-Offload on one GPU: Ren et al., "ZeRO-Offload:
 * Democratizing Billion-Scale Model Training", USENIX ATC 2021, section
 * 4.1 (single-GPU schedule, Figure 5), 4.2 (CPU-Adam), 4.3 (one-step
 * delayed parameter update, DPU), and DeepSpeed's implementation,
 * deepspeed/ops/adam/cpu_adam.py (DeepSpeedCPUAdam) over csrc/adam
 * (ds_adam_step: "FP32 master weights on CPU", "FP32 gradients on CPU",
 * exp_avg and exp_avg_sq on CPU, SIMD across OpenMP threads, tiled). See
 * docs/offload.md.
 *
 * The paper's data flow: the model states that the optimizer step needs
 * live on the host -- "ZeRO-Offload ... offloads ... the fp32 model
 * states" (the optimizer states, and the fp32 master parameters) -- the
 * forward and backward run on the GPU; "gradients are offloaded to CPU
 * as they are produced" in backward, the Adam step runs on the CPU, and
 * "the updated parameters are copied back to the GPU". Here:
 *
 *   - every optimizer-state tensor (WL_OPT_STATE) of an update op lives
 *     in host memory for the run (ex_host_resident); the device never
 *     holds it;
 *   - master_weights: true adds a 4-byte fp32 master copy of each updated
 *     parameter in host memory (ex_host_reserve; DeepSpeedCPUAdam: "the
 *     model requires to have its master parameter (in FP32) reside on
 *     the CPU memory"). The device keeps the workload's parameter as it
 *     is (fp32 under autocast: docs/offload.md says what DeepSpeed's
 *     bf16 mode would keep instead);
 *   - each parameter gradient an update op reads is copied D2H as soon
 *     as its producing kernel completes, its device block freed when all
 *     its readers are update ops (gradients: host), or kept until the
 *     update (gradients: device, the copy then only feeds the CPU);
 *   - each update op runs on the host CPU (ex_run_on_host) after its
 *     gradient has arrived; CPU-Adam's time per parameter is that of a
 *     memory-bound SIMD loop (section 4.2: vectorised, multithreaded,
 *     tiled), t = max(B / host.mem_bw, F / (threads x
 *     host.flops_per_thread)), B = the bytes ds_adam_step reads and
 *     writes: master r+w (4 + 4 bytes an element), the fp32 gradient
 *     read (4), each state read and written, and the device-precision
 *     copy written for the H2D transfer (the parameter's bytes); F = the
 *     update op's FLOPs (AdamW 15 an element, 14 under pytorch's
 *     foreach ops, workloads/gen.c). A tensor several update ops read
 *     (pytorch's foreach ops, one per launch over many parameters)
 *     counts its bytes in the first; their temporaries are host
 *     scratch (ex_run_on_host) with no bytes. The flops term is left
 *     out when the profile gives no host.flops_per_thread (said in the
 *     report);
 *   - after each parameter's step (its last update op) its updated
 *     value is copied H2D (ex_refresh), overlapping the next step;
 *   - dpu: true -- section 4.3: "the CPU computation of step i-1
 *     overlaps with the GPU forward and backward of step i", using
 *     parameters one step stale. Each parameter's CPU step and its copy
 *     back are issued at the iteration's start (ex_host_task, then
 *     ex_refresh after it, pipelined as without DPU) and run beside the
 *     forward and backward; the update ops take no time. The paper applies DPU
 *     only after the first N steps; every iteration does here (the
 *     warm-up is not measured).
 *
 * pin_memory (DeepSpeed's offload_optimizer.pin_memory, default false):
 * pinned or pageable transfers of gradients and parameters. Host memory
 * is a capacity (host.memory of the profile): a host that cannot hold
 * the states, masters and gradients ends the run as a host OOM, reported
 * like a device one.
 */
#include "../sim/ex.h"
#include "pol.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

struct zo_params {
	bool master;	    /* fp32 master weights on the host */
	int grads_host;	    /* 1 (host): gradients freed on the device once copied */
	bool pin;	    /* pinned transfers */
	bool dpu;	    /* delayed parameter update */
	int64_t threads;    /* CPU-Adam threads, 0: the profile's */
};

#define P_(f) offsetof(struct zo_params, f)
static const char *const zo_grad_names[] = {"device", "host", NULL};
static const struct prm_def zo_params_def[] = {
	{"master_weights", PRM_BOOL, "true", 0, 0, NULL,
	 "fp32 master copy of each updated parameter in host memory (4 bytes "
	 "an element)",
	 P_(master)},
	{"gradients", PRM_ENUM, "host", 0, 0, zo_grad_names,
	 "host: a gradient's device block is freed once it is copied out; "
	 "device: kept until the update (the copy only feeds the CPU)",
	 P_(grads_host)},
	{"pin_memory", PRM_BOOL, "false", 0, 0, NULL,
	 "pinned (true) or pageable (false, DeepSpeed's default) transfers",
	 P_(pin)},
	{"dpu", PRM_BOOL, "false", 0, 0, NULL,
	 "one-step delayed parameter update (Ren et al. 4.3)", P_(dpu)},
	{"threads", PRM_INT, "0", 0, 4096, NULL,
	 "CPU-Adam threads; 0: the profile's host.cpu_threads", P_(threads)},
	PRM_END};

/* ZO_SEEN: counted in an update op's CPU-Adam bytes already (a
 * multi-tensor update reads a tensor in several ops: gen.c, "foreach") */
enum { ZO_GRAD = 1, ZO_GRAD_RELEASE = 2, ZO_PARAM = 4, ZO_SEEN = 8 };

struct zo_state {
	struct zo_params prm;
	unsigned flags;	     /* EX_PAGEABLE or 0 */
	uint8_t *f;	     /* per tensor: ZO_* */
	sim_time_t *t_op;    /* per op: CPU-Adam time, 0: not on host */
	uint32_t *last;	     /* per tensor: the last update op reading it */
	sim_time_t *t_par;   /* per parameter tensor: its CPU-Adam step
				when the update ops are multi-tensor (shared),
				else NULL */
	sim_time_t step;     /* sum: one CPU step */
	uint64_t states_bytes, master_bytes, grad_bytes, param_bytes;
	uint64_t n_upd, refused;
	bool flops_term;     /* the profile gave flops_per_thread */
};

static int zo_init(struct pol *p, gms_err *err)
{
	struct zo_state *s = calloc(1, sizeof *s);
	if (!s)
		return gms_errf(err, "out of memory");
	s->prm = *(const struct zo_params *)p->params;
	s->flags = s->prm.pin ? 0 : EX_PAGEABLE;
	p->priv = s;
	return 0;
}

static void zo_fini(struct pol *p)
{
	struct zo_state *s = p->priv;
	if (!s)
		return;
	free(s->f);
	free(s->t_op);
	free(s->last);
	free(s->t_par);
	free(s);
	p->priv = NULL;
}

/* Elements of tensor t: its bytes over its stated element size (4 when a
 * file or trace states none). */
static double numel(const struct wl_tensor *x)
{
	return (double)x->bytes / (double)(x->esz ? x->esz : 4);
}

static int zo_plan(struct pol *p, struct ex *ex, gms_err *err)
{
	struct zo_state *s = p->priv;
	const struct wl_workload *wl = ex_workload(ex);
	const struct hw_profile *hw = ex_hw(ex);
	double bw = hw->host_mem_bw;
	if (!(bw > 0))
		return gms_errf(err,
				"profile %s (%s): key 'host.mem_bw' is needed "
				"to time the CPU-Adam step (host DRAM bytes/s)",
				hw->name, hw->path);
	double threads = (double)(s->prm.threads ? s->prm.threads
						 : hw->cpu_threads);
	s->flops_term = hw->host_flops_per_thread > 0;
	s->f = calloc(wl->n_tensors + 1, 1);
	s->t_op = calloc(wl->n_ops + 1, sizeof *s->t_op);
	s->last = calloc(wl->n_tensors + 1, sizeof *s->last);
	if (!s->f || !s->t_op || !s->last)
		return gms_errf(err, "out of memory");
	uint64_t master = 0;
	bool shared = false; /* a tensor read by several update ops */
	double bytes_all = 0, flops_all = 0, n_all = 0;
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		const struct wl_op *op = &wl->ops[o];
		if (op->type != OT_UPDATE || op->phase != WL_UPD)
			continue;
		double bytes = 0;
		/* one CPU-Adam step over each tensor however many update
		 * ops read it (pytorch's foreach ops read a parameter's
		 * tensors in several; CPU-Adam replaces them all), its
		 * bytes in the first op reading it, its copy back after
		 * the last */
		for (uint32_t i = 0; i < op->n_in; i++) {
			uint32_t t = op->in[i];
			const struct wl_tensor *x = &wl->tensors[t];
			s->last[t] = o;
			if (s->f[t] & ZO_SEEN) {
				shared = true;
				continue;
			}
			s->f[t] |= ZO_SEEN;
			switch (x->kind) {
			case WL_OPT_STATE:
				if (!(s->f[t] & ZO_PARAM)) {
					if (ex_host_resident(ex, t) < 0)
						return gms_errf(err, "%s",
							ex_last_error(ex));
					s->states_bytes += x->bytes;
					s->f[t] |= ZO_PARAM;
				}
				bytes += 2.0 * (double)x->bytes;
				break;
			case WL_WORKSPACE:
				/* pytorch's foreach temporary (gen.c,
				 * "foreach"): host scratch of the op on
				 * the host (ex_run_on_host); CPU-Adam keeps
				 * none and moves no bytes for it */
				break;
			case WL_PARAM:
				s->f[t] |= ZO_PARAM;
				s->param_bytes += x->bytes;
				/* the device-precision copy it writes, and
				 * the fp32 master, read and written */
				bytes += (double)x->bytes + 8.0 * numel(x);
				n_all += numel(x);
				if (s->prm.master)
					master += (uint64_t)(4.0 * numel(x));
				break;
			default:
				/* a gradient the framework holds for the run
				 * (Caffe's diffs, wl_tensor.held) can never
				 * leave the device: refused, naming it */
				if (ex_tensor_persistent(ex, t))
					return gms_errf(
						err,
						"gradient %s is held for the run "
						"by the workload's framework "
						"personality (%s): ZeRO-Offload "
						"needs it copied out (use a "
						"pytorch workload)",
						x->name,
						wl->framework ? wl->framework
							      : "none");
				s->f[t] |= ZO_GRAD;
				/* ds_adam_step reads fp32 gradients */
				bytes += 4.0 * numel(x);
				break;
			}
		}
		double sec = bytes / bw;
		if (s->flops_term)
			sec = fmax(sec, op->flops /
					    (threads * hw->host_flops_per_thread));
		sim_time_t d = (sim_time_t)ceil(sec * 1e9);
		s->t_op[o] = d > 0 ? d : 1;
		s->step = sim_time_add(s->step, s->t_op[o]);
		bytes_all += bytes;
		flops_all += op->flops;
		s->n_upd++;
	}
	/* Multi-tensor update ops (pytorch's foreach, one per launch over
	 * many parameters) are not DeepSpeed's step: ds_adam_step runs
	 * parameter by parameter, each copied back while the next steps.
	 * So the ops take no time and each parameter's step is a host task
	 * after its last update op (zo_after_op; at the iteration's start
	 * with dpu), its share of the whole step by its elements (one
	 * dtype: the foreach group's, so every element costs the same). */
	if (shared && n_all > 0) {
		/* the bound over the whole step, as one loop would have it
		 * (not each op's: an op whose tensors were counted already
		 * would add its FLOPs alone) */
		double sec_all = bytes_all / bw;
		if (s->flops_term)
			sec_all = fmax(sec_all,
				       flops_all /
					       (threads *
						hw->host_flops_per_thread));
		s->step = (sim_time_t)ceil(sec_all * 1e9);
		s->t_par = calloc(wl->n_tensors + 1, sizeof *s->t_par);
		if (!s->t_par)
			return gms_errf(err, "out of memory");
		for (uint32_t t = 0; t < wl->n_tensors; t++) {
			if (!(s->f[t] & ZO_SEEN) ||
			    wl->tensors[t].kind != WL_PARAM)
				continue;
			double sec = sec_all * numel(&wl->tensors[t]) / n_all;
			sim_time_t d = (sim_time_t)ceil(sec * 1e9);
			s->t_par[t] = d > 0 ? d : 1;
		}
	}
	for (uint32_t o = 0; o < wl->n_ops; o++)
		if (s->t_op[o] &&
		    ex_run_on_host(ex, o,
				   s->prm.dpu || s->t_par ? 0 : s->t_op[o]) < 0)
			return gms_errf(err, "%s", ex_last_error(ex));
	/* a gradient is freed once copied when only update ops read it */
	for (uint32_t t = 0; t < wl->n_tensors; t++) {
		if (!(s->f[t] & ZO_GRAD))
			continue;
		s->grad_bytes += wl->tensors[t].bytes;
		bool only_upd = s->prm.grads_host == 1;
		for (uint32_t i = 0; i < wl->tensors[t].n_readers; i++)
			only_upd &= wl->ops[wl->tensors[t].readers[i]].phase ==
				    WL_UPD;
		if (only_upd)
			s->f[t] |= ZO_GRAD_RELEASE;
	}
	s->master_bytes = master;
	if (master && ex_host_reserve(ex, master) < 0)
		return gms_errf(err, "%s", ex_last_error(ex));
	return 0;
}

/* Multi-tensor update ops (zo_plan): the CPU step of each parameter
 * whose last update op is op, then its copy back. */
static void par_steps(struct zo_state *s, struct ex *ex,
		      const struct wl_op *op)
{
	const struct wl_workload *wl = ex_workload(ex);
	for (uint32_t i = 0; i < op->n_in; i++) {
		uint32_t t = op->in[i];
		if (wl->tensors[t].kind != WL_PARAM || s->last[t] != op->id)
			continue;
		eng_event ev = ex_host_task(ex, t, s->t_par[t],
					    ENG_EVENT_NONE);
		if (ex_refresh(ex, t, s->flags, ev) == ENG_EVENT_NONE)
			s->refused++;
	}
}

static void zo_iter_begin(struct pol *p, struct ex *ex, int iter)
{
	struct zo_state *s = p->priv;
	(void)iter;
	if (!s->prm.dpu)
		return;
	/* step i-1's CPU update beside step i: each parameter's step on the
	 * host, its copy back after it (overlapping the next one's step) */
	const struct wl_workload *wl = ex_workload(ex);
	for (uint32_t o = 0; o < wl->n_ops; o++) {
		if (!s->t_op[o])
			continue;
		const struct wl_op *op = &wl->ops[o];
		if (s->t_par) {
			par_steps(s, ex, op);
			continue;
		}
		eng_event ev = ex_host_task(ex, op->in[0], s->t_op[o],
					    ENG_EVENT_NONE);
		for (uint32_t i = 0; i < op->n_in; i++)
			if (wl->tensors[op->in[i]].kind == WL_PARAM &&
			    s->last[op->in[i]] == o &&
			    ex_refresh(ex, op->in[i], s->flags, ev) ==
				    ENG_EVENT_NONE)
				s->refused++;
	}
}

static void zo_after_op(struct pol *p, struct ex *ex, const struct wl_op *op)
{
	struct zo_state *s = p->priv;
	/* gradients out as they are produced */
	for (uint32_t i = 0; i < op->n_out; i++) {
		uint32_t t = op->out[i];
		if (!(s->f[t] & ZO_GRAD) || ex_tensor_state(ex, t) != TS_IN)
			continue;
		unsigned fl = s->flags |
			      ((s->f[t] & ZO_GRAD_RELEASE) ? EX_RELEASE : 0);
		if (ex_swap_out(ex, t, fl) == ENG_EVENT_NONE) {
			/* the CPU step cannot run without it: a host OOM
			 * (ex_last_error says which memory) */
			char why[200];
			snprintf(why, sizeof why, "zero-offload: gradient "
				 "not copied to the host: %s",
				 ex_last_error(ex));
			ex_stop_oom(ex, t, why);
			return;
		}
	}
	/* the updated parameter back to the device */
	if (s->prm.dpu || !s->t_op[op->id])
		return;
	if (s->t_par) {
		par_steps(s, ex, op);
		return;
	}
	for (uint32_t i = 0; i < op->n_in; i++) {
		uint32_t t = op->in[i];
		if (ex_workload(ex)->tensors[t].kind == WL_PARAM &&
		    s->last[t] == op->id &&
		    ex_refresh(ex, t, s->flags, ENG_EVENT_NONE) ==
			    ENG_EVENT_NONE)
			s->refused++;
	}
}

static void zo_report(struct pol *p, FILE *out)
{
	struct zo_state *s = p->priv;
	fprintf(out, "update_ops_on_host %llu\n", (unsigned long long)s->n_upd);
	fprintf(out, "host_optimizer_state_bytes %llu\n",
		(unsigned long long)s->states_bytes);
	fprintf(out, "host_master_bytes %llu\n",
		(unsigned long long)s->master_bytes);
	fprintf(out, "gradient_bytes %llu\n", (unsigned long long)s->grad_bytes);
	fprintf(out, "parameter_bytes %llu\n",
		(unsigned long long)s->param_bytes);
	fprintf(out, "cpu_adam_step_ms %.6f\n", (double)s->step / 1e6);
	fprintf(out, "cpu_adam_flops_term %s\n",
		s->flops_term ? "yes" : "no (host.flops_per_thread not given)");
	fprintf(out, "dpu %s\n", s->prm.dpu ? "true" : "false");
	fprintf(out, "refused %llu\n", (unsigned long long)s->refused);
}

const struct pol_ops pol_zero_offload_ops = {
	.name = "zero-offload",
	.summary = "ZeRO-Offload: optimizer states (and fp32 masters) in host "
		   "memory, gradients D2H, CPU-Adam, parameters H2D (Ren et al. "
		   "2021)",
	.params = zo_params_def,
	.params_size = sizeof(struct zo_params),
	.init = zo_init,
	.fini = zo_fini,
	.plan = zo_plan,
	.iter_begin = zo_iter_begin,
	.after_op = zo_after_op,
	.on_alloc_fail = ex_fallback_or_fail,
	.report = zo_report,
};
