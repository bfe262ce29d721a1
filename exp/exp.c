/*
 * exp.c - the experiment file: tables of every key, parsing, validation,
 * and building a workload of an experiment.
 *
 * The file is checked whole before anything runs: the tables below reject
 * unknown keys, wrong types and values out of range (cfg.c); names are
 * then resolved: the hardware profile is loaded, every policy is created
 * once with its parameters, every generator is looked up and every
 * workload file or trace is loaded once.
 */
#include "exp.h"
#include "shard.h"

#include "../policies/pol.h"
#include "../sim/mem.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const exp_kind_names[] = {"run", "sweep", "max-batch",
				      "best-throughput", "min-pool",
				      "efficiency-optimal", "scaling", NULL};

/* ---- the tables --------------------------------------------------------- */

/* Top level, as read (names resolved afterwards). */
struct exp_top {
	char name[PRM_STR_MAX];
	char description[PRM_STR_MAX];
	char hw[PRM_PATH_MAX];
	char allocator[PRM_STR_MAX];
	uint64_t budget, pool_size, host_pinned;
	bool above_device;
	int64_t iterations, warmup, settle_max, grow_max;
	char out[PRM_PATH_MAX];
	bool plot;
	yaml_node_t *workloads, *policies, *measure, *cluster;
};

#define TOP(f) offsetof(struct exp_top, f)
static const struct prm_def top_defs[] = {
	{"name", PRM_STR, "", 0, 0, NULL,
	 "experiment name: results go to <out>/<name>/ (default: the file "
	 "name without .yaml)", TOP(name)},
	{"description", PRM_STR, "", 0, 0, NULL,
	 "one line saying what the experiment shows (copied to runs.json)",
	 TOP(description)},
	{"hw", PRM_PATH, "V100-16GB", 0, 0, NULL,
	 "hardware profile: a name in configs/hw/ or a path", TOP(hw)},
	{"allocator", PRM_STR, "framework", 0, 0, NULL,
	 "device allocator (`gpumemsim list allocators`), or framework: "
	 "each workload's framework's (tf-*: bfc, pytorch: caching, caffe: "
	 "arena; gpumemsim-record logs: caching; other files and traces: "
	 "bfc)", TOP(allocator)},
	{"budget", PRM_BYTES, "0", 0, 0, NULL,
	 "device bytes for tensors; 0 = the profile's capacity minus its "
	 "reserved bytes", TOP(budget)},
	{"budget_above_device", PRM_BOOL, "false", 0, 0, NULL,
	 "allow a byte budget (`budget`, a sweep's `measure: budget`) above "
	 "the profile's usable memory (capacity minus reserved): a larger "
	 "device is simulated and the answer table marks it; without it "
	 "such a budget is refused, as simulate --budget refuses it",
	 TOP(above_device)},
	{"host_pinned", PRM_BYTES, "0", 0, 0, NULL,
	 "pinned host bytes available, in place of the profile's host: "
	 "{pinned} (the host of a paper's machine on the same GPU); 0 = the "
	 "profile's", TOP(host_pinned)},
	{"pool_size", PRM_BYTES, "0", 0, 0, NULL,
	 "allocator's initial pool; 0 = the budget", TOP(pool_size)},
	{"iterations", PRM_INT, "3", 1, 1000, NULL,
	 "training iterations simulated per run", TOP(iterations)},
	{"warmup", PRM_INT, "1", 0, 999, NULL,
	 "leading iterations left out of the steady-state figures (< "
	 "iterations)", TOP(warmup)},
	{"settle_max", PRM_INT, "100", 0, 500, NULL,
	 "for a policy that learns (capuchin): up to this many more warm-up "
	 "iterations until it reports its plan stable (Capuchin 6.3.2: "
	 "\"usually within 50 iterations\"); 0: measure after `warmup` "
	 "whatever the policy does", TOP(settle_max)},
	{"grow_max", PRM_INT, EX_GROW_DEFAULT_STR, 0, EX_GROW_MAX, NULL,
	 "up to this many more warm-up iterations while a measured one "
	 "grows the pinned host pool (cudaMallocHost) or the device "
	 "allocator's reservation (cudaMalloc above its peak); the caching "
	 "allocators keep what they took, so a real step pays those calls "
	 "only while its pools grow (docs/host.md); 0: measure after "
	 "`warmup` whatever grows", TOP(grow_max)},
	{"out", PRM_PATH, "results", 0, 0, NULL,
	 "directory that holds <name>/ (relative to the working directory)",
	 TOP(out)},
	{"plot", PRM_BOOL, "true", 0, 0, NULL,
	 "draw plot.png and plot.svg with gnuplot", TOP(plot)},
	{"workloads", PRM_NODE, NULL, 0, 0, NULL,
	 "sequence of workloads (table `workload` below)", TOP(workloads)},
	{"policies", PRM_NODE, NULL, 0, 0, NULL,
	 "sequence of policies: {name: POLICY, PARAM: VALUE...} (`gpumemsim "
	 "help policies`)", TOP(policies)},
	{"measure", PRM_NODE, NULL, 0, 0, NULL,
	 "the measurement: a mapping with `kind` (tables `measure` below)",
	 TOP(measure)},
	{"cluster", PRM_NODE, "", 0, 0, NULL,
	 "measure scaling: the cluster of one-GPU hosts (table `cluster` "
	 "below)", TOP(cluster)},
	PRM_END,
};

/* One workload entry. */
struct exp_wl_in {
	char name[PRM_STR_MAX], file[PRM_PATH_MAX], trace[PRM_PATH_MAX];
	char label[PRM_STR_MAX];
	int64_t batch, size;
	int framework, optimizer;
	int remat, times;
	int precision, attention, loss;
	int64_t seq, layers, hidden, heads, kv_heads, ffn, vocab, lora;
};
#define WLI(f) offsetof(struct exp_wl_in, f)
static const struct prm_def wl_defs[] = {
	{"name", PRM_STR, "", 0, 0, NULL,
	 "a generator (`gpumemsim list workloads`); or give file or trace",
	 WLI(name)},
	{"file", PRM_PATH, "", 0, 0, NULL,
	 "a workload YAML file (workloads/README.md)", WLI(file)},
	{"trace", PRM_PATH, "", 0, 0, NULL,
	 "a recorded DTR training log (its batch is fixed): a path, or "
	 "dtr:FILE for FILE in the DTR trace directory ($GMS_DTR_DIR, else "
	 "../shared/data/dtr beside the checkout; absent: the experiment "
	 "is skipped)", WLI(trace)},
	{"remat", PRM_ENUM, "forward", 0, 0, wl_dtr_remat_names,
	 "traces: which recorded ops may be re-run: forward (forward ops "
	 "whose results no in-place op changes) or simrd (every op, as "
	 "DTR's simulator)", WLI(remat)},
	{"times", PRM_ENUM, "log", 0, 0, wl_dtr_times_names,
	 "traces: where op times come from: log (its TIME values; ops "
	 "without one, as gpumemsim-record's, from the hardware profile) "
	 "or profile (every op from the hardware profile, by op type, "
	 "shapes, FLOPs and bytes; the log's TIME ignored)", WLI(times)},
	{"label", PRM_STR, "", 0, 0, NULL,
	 "name in results (default: the generator name or file stem)",
	 WLI(label)},
	{"batch", PRM_INT, "0", 0, 1 << 24, NULL,
	 "batch size; 0 = the file's (required for generators unless the "
	 "measurement varies it)", WLI(batch)},
	{"size", PRM_INT, "0", 0, 1 << 16, NULL,
	 "input side in pixels, or sequence length for BERT; 0 = the "
	 "generator's default", WLI(size)},
	{"framework", PRM_ENUM, "pytorch", 0, 0, wl_framework_names,
	 "framework personality (README, \"Framework personalities\"): "
	 "what is kept for backward, run in place, held; the network "
	 "definition; the default allocator", WLI(framework)},
	{"optimizer", PRM_ENUM, "momentum", 0, 0, wl_optim_names,
	 "update rule and the state it adds: none (no updates), sgd (no "
	 "state), momentum (one buffer), adam or adamw (two moments), "
	 "adam8bit (two 8-bit moments, bitsandbytes)",
	 WLI(optimizer)},
	{"precision", PRM_ENUM, "fp32", 0, 0, wl_precision_names,
	 "dtypes and math: fp32, tf32 (fp32 storage, TF32 tensor cores), "
	 "fp16-autocast / bf16-autocast (torch.autocast, fp32 weights, "
	 "grads and states), bf16-pure (everything bf16)",
	 WLI(precision)},
	{"seq", PRM_INT, "0", 0, 1 << 20, NULL,
	 "language models: sequence length (the same as size)", WLI(seq)},
	{"attention", PRM_ENUM, "eager", 0, 0, wl_attn_names,
	 "language models: eager (scores and probabilities saved) or sdpa "
	 "(FlashAttention: output and logsumexp)", WLI(attention)},
	{"loss", PRM_ENUM, "full", 0, 0, wl_loss_names,
	 "language models: full (vocabulary logits, their fp32 upcast, "
	 "cross-entropy; Hugging Face) or chunked (fused linear "
	 "cross-entropy, Liger Kernel)", WLI(loss)},
	{"layers", PRM_INT, "0", 0, 1 << 16, NULL,
	 "language models: decoder layers (0: the preset's)", WLI(layers)},
	{"hidden", PRM_INT, "0", 0, 1 << 20, NULL,
	 "language models: hidden size (0: the preset's)", WLI(hidden)},
	{"heads", PRM_INT, "0", 0, 1 << 16, NULL,
	 "language models: attention heads (0: the preset's)", WLI(heads)},
	{"kv_heads", PRM_INT, "0", 0, 1 << 16, NULL,
	 "language models: key/value heads, grouped-query attention (0: the "
	 "preset's; GPT-2: heads)", WLI(kv_heads)},
	{"ffn", PRM_INT, "0", 0, 1 << 22, NULL,
	 "language models: MLP inner size (0: the preset's; GPT-2: "
	 "4 * hidden)", WLI(ffn)},
	{"vocab", PRM_INT, "0", 0, 1 << 24, NULL,
	 "language models: vocabulary size (0: the preset's)", WLI(vocab)},
	{"lora", PRM_INT, "0", 0, 1 << 16, NULL,
	 "language models: LoRA rank r (0: full fine-tuning): base frozen, "
	 "adapters on the attention projections (PEFT's default targets)",
	 WLI(lora)},
	PRM_END,
};

/* Keys only the language-model generators take (struct wl_arch). */
static const char *const arch_keys[] = {"seq",	     "attention", "loss",
					"layers",    "hidden",	  "heads",
					"kv_heads",  "ffn",	  "vocab",
					"lora",	     NULL};

/* The measure mapping, one table per kind (each knows `kind`). */
struct exp_meas {
	int kind;
	yaml_node_t *batch, *budget, *budget_fraction;
	int64_t start, limit, confirm;
	int64_t min, max, step;
	uint64_t pool_limit;
	bool pool_shrink;
	int64_t lr_batch;
	double lr_base, lr_c;
};
#define MS(f) offsetof(struct exp_meas, f)
#define KIND_DEF                                                               \
	{"kind", PRM_ENUM, NULL, 0, 0, exp_kind_names,                         \
	 "run | sweep | max-batch | best-throughput | min-pool | "            \
	 "efficiency-optimal | scaling", MS(kind)}
static const struct prm_def run_defs[] = {KIND_DEF, PRM_END};
static const struct prm_def sweep_defs[] = {
	KIND_DEF,
	{"batch", PRM_NODE, "", 0, 0, NULL,
	 "sweep over these batch sizes, e.g. [16, 32, 64]", MS(batch)},
	{"budget", PRM_NODE, "", 0, 0, NULL,
	 "or over these device budgets in bytes, e.g. [4GiB, 2GiB] (above "
	 "the profile's usable memory only with budget_above_device: a "
	 "larger device)", MS(budget)},
	{"budget_fraction", PRM_NODE, "", 0, 0, NULL,
	 "or over fractions of the baseline: the least memory framework "
	 "needs (the workload's personality) with this allocator, e.g. [1.0, 0.75, 0.5]",
	 MS(budget_fraction)},
	PRM_END,
};
#define MAXB_DEFS                                                              \
	{"start", PRM_INT, "1", 1, 1 << 24, NULL, "first batch tried",         \
	 MS(start)},                                                           \
	{"limit", PRM_INT, "65536", 1, 1 << 24, NULL,                          \
	 "largest batch tried (the answer is capped there)", MS(limit)},       \
	{"confirm", PRM_INT, "4", 0, 1024, NULL,                               \
	 "batches just above the answer also checked (non-monotonic "          \
	 "feasibility)", MS(confirm)}
static const struct prm_def maxb_defs[] = {KIND_DEF, MAXB_DEFS, PRM_END};
/* efficiency-optimal and scaling: the baseline's max-batch search, then
 * the tuner. lr_base and lr_batch: He et al. 2016 (ResNet), section 3.4,
 * "We use SGD with a mini-batch size of 256. The learning rate starts
 * from 0.1": 0.1 is the rate of batch 256, so equation 9's base is 256
 * (q = k* / 256), not the batch the tuner starts from (Caffe's largest,
 * which that rate was never set for; issue 29); c: AccUDNN gives no
 * value for the convexity of equation 9, so 1 is a placeholder to set
 * per network. */
#define TUNE_DEFS                                                              \
	{"lr_base", PRM_DOUBLE, "0.1", 0, 0, NULL,                             \
	 "learning rate at batch lr_batch (AccUDNN eq 9's alpha_base; He "     \
	 "et al.'s 0.1)", MS(lr_base)},                                        \
	{"lr_batch", PRM_INT, "256", 1, 1 << 24, NULL,                         \
	 "the batch lr_base was set for (eq 9's base; He et al.'s 256)",       \
	 MS(lr_batch)},                                                        \
	{"c", PRM_DOUBLE, "1", 0, 0, NULL,                                     \
	 "convexity constant c of AccUDNN eq 9 (the paper gives none)",        \
	 MS(lr_c)}
static const struct prm_def eff_defs[] = {KIND_DEF, MAXB_DEFS, TUNE_DEFS,
					  PRM_END};
static const struct prm_def best_defs[] = {
	KIND_DEF,
	{"min", PRM_INT, "1", 1, 1 << 24, NULL, "smallest batch", MS(min)},
	{"max", PRM_INT, NULL, 1, 1 << 24, NULL, "largest batch", MS(max)},
	{"step", PRM_INT, "0", 0, 1 << 24, NULL,
	 "grid step; 0 = powers of two (then refined by ternary search)",
	 MS(step)},
	PRM_END,
};
static const struct prm_def minp_defs[] = {
	KIND_DEF,
	{"limit", PRM_BYTES, "0", 0, 0, NULL,
	 "largest pool tried (beyond it: does not fit); 0 = the experiment's "
	 "budget", MS(pool_limit)},
	{"shrink", PRM_BOOL, "false", 0, 0, NULL,
	 "then bisect below the answer (to 512 bytes) for the smallest pool "
	 "that still serves: for policies whose footprint grows with the "
	 "pool, like accudnn's prefetch stream, which fills what it is given",
	 MS(pool_shrink)},
	PRM_END,
};
static const struct prm_def *const meas_defs[EXP_KIND_COUNT] = {
	run_defs, sweep_defs, maxb_defs, best_defs, minp_defs, eff_defs,
	eff_defs};

/* The cluster mapping (measure scaling; cluster.h has the model). */
struct exp_cl_in {
	yaml_node_t *gpus;
	double gbps, efficiency;
	sim_time_t latency;
	int sync;
};
#define CLI(f) offsetof(struct exp_cl_in, f)
static const struct prm_def cluster_defs[] = {
	{"gpus", PRM_NODE, "", 0, 0, NULL,
	 "cluster sizes N (one GPU a host), e.g. [1, 2, 4, 8]", CLI(gpus)},
	{"bandwidth_gbps", PRM_DOUBLE, "10", 0, 0, NULL,
	 "network line rate per direction, Gb/s (AccUDNN 6.1: 10Gbps "
	 "Ethernet)", CLI(gbps)},
	/* TCP/IPv4 over Ethernet at MTU 1500 with TCP timestamps: 1448
	 * payload bytes in 1538 on the wire (1500 + 14 header + 4 FCS + 8
	 * preamble + 12 inter-frame gap; 1500 - 20 IP - 20 TCP - 12
	 * timestamp option) */
	{"efficiency", PRM_DOUBLE, "0.9415", 0, 0, NULL,
	 "payload fraction of the line rate (TCP at MTU 1500: 1448/1538)",
	 CLI(efficiency)},
	/* estimate: a small-message one-way time through kernel TCP
	 * sockets on 10 GbE (send and receive system calls, interrupt,
	 * protocol stack; half a netperf TCP_RR round trip) is some tens of
	 * us on commodity NICs; 50 us, the pessimistic end, as the paper's
	 * sockets are a plain implementation */
	{"latency", PRM_TIME, "50us", 0, 0, NULL,
	 "per message (estimate: kernel TCP sockets on 10 GbE)",
	 CLI(latency)},
	{"sync", PRM_ENUM, "ps", 0, 0, cl_sync_names,
	 "ps (AccUDNN 6.3 C: a shard per host in host memory) or ring "
	 "(ring all-reduce, parameters on the GPU)", CLI(sync)},
	PRM_END,
};

void exp_print_help(FILE *f)
{
	fprintf(f, "experiment file (configs/experiments/*.yaml), top level:\n");
	prm_print_help(top_defs, f, "    ");
	fprintf(f, "\nworkload (each item of `workloads:`; one of name, file, "
		   "trace):\n");
	prm_print_help(wl_defs, f, "    ");
	for (int k = 0; k < EXP_KIND_COUNT; k++) {
		fprintf(f, "\nmeasure, kind: %s\n", exp_kind_names[k]);
		prm_print_help(meas_defs[k], f, "    ");
	}
	fprintf(f, "\ncluster (measure scaling; README, \"Cluster model\"):\n");
	prm_print_help(cluster_defs, f, "    ");
	fprintf(f, "\npolicies: each item is {name: POLICY, ...parameters}; "
		   "see `gpumemsim help policies`.\n");
}

/* ---- parsing ------------------------------------------------------------- */

static const char *stem(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	snprintf(buf, n, "%s", b);
	char *dot = strrchr(buf, '.');
	if (dot && dot != buf)
		*dot = '\0';
	return buf;
}

/* A path in the file: absolute; else relative to the working directory
 * when it exists there, else to the experiment file's directory, else to
 * the data directory (the repository). */
static void resolve(const struct exp *e, const char *p, char *out, size_t n)
{
	char dir[PRM_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", e->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int k = snprintf(out, n, "%s/%s", slash ? dir : ".", p);
	if (k < 0 || (size_t)k >= n)
		out[0] = '\0'; /* too long: not a candidate */
	if (p[0] == '/' || access(p, F_OK) == 0)
		snprintf(out, n, "%s", p);
	else if (!out[0] || access(out, F_OK) != 0) {
		k = snprintf(out, n, "%s/%s", hw_datadir(), p);
		if (k < 0 || (size_t)k >= n) /* too long: as written */
			snprintf(out, n, "%s", p);
	}
}

static int parse_workloads(struct exp *e, yaml_node_t *seq, gms_err *err)
{
	struct cfg_doc *d = e->doc;
	if (!seq || seq->type != YAML_SEQUENCE_NODE || !cfg_seq_len(seq))
		return cfg_errf(err, d, seq,
				"key 'workloads': expected a non-empty "
				"sequence of workloads");
	e->n_wl = cfg_seq_len(seq);
	e->wl = calloc(e->n_wl, sizeof *e->wl);
	if (!e->wl)
		return gms_errf(err, "out of memory");
	for (size_t i = 0; i < e->n_wl; i++) {
		yaml_node_t *n = cfg_seq_item(d, seq, i);
		struct exp_workload *w = &e->wl[i];
		struct exp_wl_in in;
		char what[48];
		snprintf(what, sizeof what, "workload %zu", i + 1);
		if (n && n->type == YAML_SCALAR_NODE) {
			/* a bare generator name */
			if (prm_set_defaults(wl_defs, &in, err) < 0)
				return -1;
			snprintf(in.name, sizeof in.name, "%s", cfg_scalar(n));
		} else if (cfg_parse_map(d, n, wl_defs, &in, what, err) < 0) {
			return -1;
		}
		w->node = n;
		int n_src = !!in.name[0] + !!in.file[0] + !!in.trace[0];
		if (n_src != 1)
			return cfg_errf(err, d, n,
					"%s: give exactly one of 'name', "
					"'file', 'trace'",
					what);
		/* trace keys given explicitly to a generator or file */
		static const char *const trace_only[] = {"remat", "times",
							 NULL};
		for (int k = 0; !in.trace[0] && trace_only[k]; k++)
			if (n->type == YAML_MAPPING_NODE &&
			    cfg_map_get(d, n, trace_only[k]))
				return cfg_errf(err, d,
						cfg_map_get(d, n, trace_only[k]),
						"%s: key '%s': applies to "
						"traces only",
						what, trace_only[k]);
		w->batch = in.batch;
		char buf[256];
		if (in.name[0]) {
			w->src = EXP_SRC_GEN;
			w->gen = wl_gen_lookup(in.name, err);
			if (!w->gen) {
				yaml_node_t *v = cfg_map_get(d, n, "name");
				return cfg_err_at(err, d, v ? v : n,
						  "%s: key 'name'", what);
			}
			w->args = (struct wl_gen_args){
				.batch = in.batch, .size = in.size,
				.framework = (enum wl_framework)in.framework,
				.optimizer = (enum wl_optim)in.optimizer,
				.precision = (enum wl_precision)in.precision,
				.depth = wl_gen_name_depth(w->gen, in.name)};
			if (wl_gen_check_depth(w->gen, w->args.depth, err) < 0)
				return cfg_err_at(err, d,
						  cfg_map_get(d, n, "name"),
						  "%s: key 'name'", what);
			for (int k = 0; !w->gen->arch && arch_keys[k]; k++)
				if (n->type == YAML_MAPPING_NODE &&
				    cfg_map_get(d, n, arch_keys[k]))
					return cfg_errf(
						err, d,
						cfg_map_get(d, n, arch_keys[k]),
						"%s: key '%s': applies to "
						"language models only (gpt2*, "
						"llama*, ...)",
						what, arch_keys[k]);
			if (in.seq && in.size)
				return cfg_errf(err, d,
						cfg_map_get(d, n, "seq"),
						"%s: key 'seq': give seq or "
						"size, not both", what);
			if (in.seq)
				w->args.size = in.seq;
			w->args.arch = (struct wl_arch){
				.layers = in.layers, .hidden = in.hidden,
				.heads = in.heads, .kv_heads = in.kv_heads,
				.ffn = in.ffn, .vocab = in.vocab,
				.attention = (enum wl_attn)in.attention,
				.loss = (enum wl_loss)in.loss, .lora = in.lora};
			if (hw_math_check(&e->hw,
					  wl_precision_math(w->args.precision),
					  err) < 0) {
				yaml_node_t *v = cfg_map_get(d, n, "precision");
				return cfg_err_at(err, d, v ? v : n,
						  "%s: key 'precision'", what);
			}
			const char *bk = NULL;
			if (w->gen->arch &&
			    wl_llm_check(in.name, &w->args.arch, &bk, err) < 0) {
				yaml_node_t *v = cfg_map_get(d, n, bk);
				return cfg_err_at(err, d, v ? v : n,
						  "%s: key '%s'", what, bk);
			}
			snprintf(w->label, sizeof w->label, "%s", in.name);
		} else {
			bool trace = in.trace[0];
			w->src = trace ? EXP_SRC_TRACE : EXP_SRC_FILE;
			w->remat = (enum wl_dtr_remat)in.remat;
			w->profile_times = in.times == WL_DTR_TIMES_PROFILE;
			if (trace && !strncmp(in.trace, WL_DTR_PREFIX,
					      strlen(WL_DTR_PREFIX))) {
				int rc = wl_dtr_resolve(in.trace, w->path,
							sizeof w->path, err);
				if (rc == WL_DTR_ABSENT) /* noted; parsing goes
							    on for errors */
					snprintf(e->skip, sizeof e->skip,
						 "%s", err->msg);
				if (rc < 0)
					return cfg_err_at(
						err, d, cfg_map_get(d, n,
								    "trace"),
						"%s: key 'trace'", what);
			} else {
				resolve(e, trace ? in.trace : in.file,
					w->path, sizeof w->path);
			}
			snprintf(w->label, sizeof w->label, "%s",
				 stem(w->path, buf, sizeof buf));
			/* generator keys given explicitly (a default value
			 * written out is still a key that does nothing) */
			const char *bad = NULL;
			static const char *const gen_only[] = {
				"size", "framework", "optimizer", "precision",
				"seq", "attention", "loss", "layers", "hidden",
				"heads", "kv_heads", "ffn", "vocab", "lora",
				NULL};
			for (int k = 0; !bad && gen_only[k]; k++)
				if (n->type == YAML_MAPPING_NODE &&
				    cfg_map_get(d, n, gen_only[k]))
					bad = gen_only[k];
			/* `batch:` on a trace: a log with batch marks loads
			 * at it, one without is an error when built (issue
			 * 35, wl_load_dtr_batch) */
			if (bad)
				return cfg_errf(err, d, cfg_map_get(d, n, bad),
						"%s: key '%s': applies to "
						"generators only",
						what, bad);
		}
		if (in.label[0])
			snprintf(w->label, sizeof w->label, "%s", in.label);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(e->wl[j].label, w->label))
				return cfg_errf(err, d, n,
						"%s: label '%s' is used twice "
						"(give 'label')",
						what, w->label);
	}
	return 0;
}

/* "ondemand" or "ondemand(mode=eager)": the name and its parameters as
 * written, for results. */
static void policy_label(struct cfg_doc *d, yaml_node_t *n, const char *name,
			 char *out, size_t sz)
{
	size_t len = (size_t)snprintf(out, sz, "%s", name);
	int k = 0;
	for (size_t i = 0; i < cfg_map_len(n) && len < sz; i++) {
		yaml_node_t *key, *val;
		cfg_map_pair(d, n, i, &key, &val);
		const char *ks = cfg_scalar(key), *vs = cfg_scalar(val);
		if (!ks || !strcmp(ks, "name"))
			continue;
		len += (size_t)snprintf(out + len, sz - len, "%s%s=%s",
					k++ ? "," : "(", ks, vs ? vs : "...");
	}
	if (k && len + 1 < sz)
		strcat(out, ")");
}

/* Every absolute budget (the top-level 'budget', a sweep's 'budget'
 * values) must hold one block of the allocator each policy runs `wl`
 * with (mem_ops.min_budget): a smaller one is refused at load, at the
 * value, rather than as a failed row per point (issue 38). Fractions are
 * of a baseline that already holds the workload. */
static int check_min_budget(struct exp *e, const struct wl_workload *wl,
			    const char *what, yaml_node_t *top_node,
			    gms_err *err)
{
	size_t n = e->axis == EXP_AXIS_BUDGET ? e->n_values : 0;
	for (size_t v = 0; v <= n; v++) {
		uint64_t b = v < n ? e->budgets[v] : e->budget;
		yaml_node_t *at = v < n ? cfg_seq_item(e->doc, e->budgets_node, v)
					: top_node;
		if (b == 0)
			continue; /* top level: the profile's capacity */
		for (size_t p = 0; p < e->n_pol; p++) {
			const char *name = ex_allocator_name(
				e->allocator, wl->framework,
				e->pol[p].allocator[0] ? e->pol[p].allocator
						       : NULL);
			const struct mem_ops *m = mem_find(name);
			if (m && b < m->min_budget)
				return cfg_errf(
					err, e->doc, at,
					"key 'budget': %llu B is below "
					"the %llu bytes of the smallest block "
					"of allocator '%s' (%s, policy '%s')",
					(unsigned long long)b,
					(unsigned long long)m->min_budget, name,
					what, e->pol[p].label);
		}
	}
	return 0;
}

static int parse_policies(struct exp *e, yaml_node_t *seq, gms_err *err)
{
	struct cfg_doc *d = e->doc;
	if (!seq || seq->type != YAML_SEQUENCE_NODE || !cfg_seq_len(seq))
		return cfg_errf(err, d, seq,
				"key 'policies': expected a non-empty "
				"sequence of {name: POLICY, ...}");
	e->n_pol = cfg_seq_len(seq);
	e->pol = calloc(e->n_pol, sizeof *e->pol);
	if (!e->pol)
		return gms_errf(err, "out of memory");
	for (size_t i = 0; i < e->n_pol; i++) {
		yaml_node_t *n = cfg_seq_item(d, seq, i);
		struct exp_policy *p = &e->pol[i];
		const char *name = NULL;
		if (n && n->type == YAML_SCALAR_NODE) {
			name = cfg_scalar(n);
			p->node = NULL;
		} else if (n && n->type == YAML_MAPPING_NODE) {
			yaml_node_t *v = cfg_map_get(d, n, "name");
			name = v ? cfg_scalar(v) : NULL;
			p->node = n;
			if (!name)
				return cfg_errf(err, d, n,
						"policy %zu: key 'name': "
						"required",
						i + 1);
		} else {
			return cfg_errf(err, d, n,
					"policy %zu: expected a name or "
					"{name: POLICY, ...}",
					i + 1);
		}
		snprintf(p->name, sizeof p->name, "%s", name);
		if (!pol_lookup(name, err)) {
			yaml_node_t *v = p->node ? cfg_map_get(d, n, "name") : n;
			return cfg_err_at(err, d, v, "policy %zu: key 'name'",
					  i + 1);
		}
		/* create once: checks every parameter */
		struct pol pol;
		if (pol_create(&pol, name, d, p->node, NULL, 0, err) < 0) {
			if (!strstr(err->msg, d->path))
				return cfg_errf(err, d, n, "%s", err->msg);
			return -1;
		}
		if (pol.ops->allocator && pol.ops->allocator(&pol))
			snprintf(p->allocator, sizeof p->allocator, "%s",
				 pol.ops->allocator(&pol));
		pol_destroy(&pol);
		policy_label(d, p->node, name, p->label, sizeof p->label);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(e->pol[j].label, p->label))
				return cfg_errf(err, d, n,
						"policy %zu: '%s' is listed "
						"twice",
						i + 1, p->label);
	}
	return 0;
}

/* A sequence of scalars, each parsed by `one`. */
static int parse_values(struct cfg_doc *d, yaml_node_t *seq, const char *key,
			size_t elem, void **out, size_t *n,
			int (*one)(const char *s, void *dst, const char **why),
			gms_err *err)
{
	if (seq->type != YAML_SEQUENCE_NODE || !cfg_seq_len(seq))
		return cfg_errf(err, d, seq,
				"%s: expected a non-empty "
				"sequence, e.g. [a, b, c]",
				key);
	*n = cfg_seq_len(seq);
	*out = calloc(*n, elem);
	if (!*out)
		return gms_errf(err, "out of memory");
	for (size_t i = 0; i < *n; i++) {
		yaml_node_t *it = cfg_seq_item(d, seq, i);
		const char *s = cfg_scalar(it), *why = "not a scalar";
		if (!s || one(s, (char *)*out + i * elem, &why) < 0)
			return cfg_errf(err, d, it,
					"%s: item %zu '%s': %s",
					key, i + 1, s ? s : "", why);
	}
	return 0;
}

/* A byte budget above the profile's usable memory without
 * budget_above_device (issue 34: `budget: [32GiB]` on a V100-16GB was
 * accepted silently). Returns -1 with err at node. */
static int budget_above(const struct exp *e, yaml_node_t *node,
			const char *what, uint64_t budget, gms_err *err)
{
	return cfg_errf(err, e->doc, node,
			"%s: %llu bytes (%.2f GiB) exceed the %s's %llu usable "
			"bytes (%.2f GiB: capacity minus reserved); set "
			"`budget_above_device: true` to simulate a larger "
			"device",
			what, (unsigned long long)budget,
			(double)budget / (1024.0 * 1024.0 * 1024.0), e->hw.name,
			(unsigned long long)exp_usable(e),
			(double)exp_usable(e) / (1024.0 * 1024.0 * 1024.0));
}

static int one_batch(const char *s, void *dst, const char **why)
{
	int64_t v;
	*why = "expected an integer batch size >= 1";
	if (gms_parse_int(s, &v) < 0 || v < 1 || v > (1 << 24))
		return -1;
	*(int64_t *)dst = v;
	return 0;
}

static int one_budget(const char *s, void *dst, const char **why)
{
	uint64_t v;
	*why = "expected a positive size, e.g. 4GiB";
	if (gms_parse_bytes(s, &v) < 0 || v == 0)
		return -1;
	*(uint64_t *)dst = v;
	return 0;
}

static int one_fraction(const char *s, void *dst, const char **why)
{
	double v;
	*why = "expected a fraction in (0, 4]";
	if (gms_parse_double(s, &v) < 0 || !(v > 0) || v > 4)
		return -1;
	*(double *)dst = v;
	return 0;
}

static int one_gpus(const char *s, void *dst, const char **why)
{
	int64_t v;
	*why = "expected a number of GPUs, 1 to 65536";
	if (gms_parse_int(s, &v) < 0 || v < 1 || v > (1 << 16))
		return -1;
	*(int64_t *)dst = v;
	return 0;
}

/* `cluster:` (measure scaling only, and required there). */
static int parse_cluster(struct exp *e, yaml_node_t *n, gms_err *err)
{
	struct cfg_doc *d = e->doc;
	yaml_node_t *root = cfg_root(d);
	if (e->kind != EXP_SCALING) {
		if (n)
			return cfg_errf(err, d, cfg_map_get(d, root, "cluster"),
					"key 'cluster': applies to measure "
					"scaling only");
		return 0;
	}
	if (!n || n->type != YAML_MAPPING_NODE)
		return cfg_errf(err, d, n ? n : root,
				"key 'cluster': measure scaling needs a "
				"mapping with 'gpus'");
	struct exp_cl_in in;
	if (cfg_parse_map(d, n, cluster_defs, &in, "cluster", err) < 0)
		return -1;
	if (!in.gpus)
		return cfg_errf(err, d, n, "cluster: key 'gpus': required");
	if (!(in.gbps > 0) || !(in.efficiency > 0) || in.efficiency > 1)
		return cfg_errf(err, d, n,
				"cluster: keys 'bandwidth_gbps' (> 0) and "
				"'efficiency' (in (0, 1]): out of range");
	struct cl_cluster *c = &e->cluster;
	if (parse_values(d, in.gpus, "cluster: key 'gpus'", sizeof(int64_t),
			 (void **)&c->gpus, &c->n_gpus, one_gpus, err) < 0)
		return -1;
	c->net_bw = in.gbps * 1e9 / 8 * in.efficiency;
	c->net_latency = in.latency;
	c->sync = (enum cl_sync)in.sync;
	cl_set_pcie(c, &e->hw);
	return 0;
}

/* efficiency-optimal and scaling: generators (the tuner builds the
 * network) and two policies (the baseline, then the tuned one). */
static int check_eff(struct exp *e, gms_err *err)
{
	struct cfg_doc *d = e->doc;
	if (e->kind != EXP_EFF && e->kind != EXP_SCALING)
		return 0;
	for (size_t i = 0; i < e->n_wl; i++)
		if (e->wl[i].src != EXP_SRC_GEN)
			return cfg_errf(err, d, e->wl[i].node,
					"workload %zu ('%s'): measure %s "
					"needs a generator (`name`): the "
					"tuner builds the network at other "
					"batches",
					i + 1, e->wl[i].label,
					exp_kind_names[e->kind]);
	if (e->n_pol != 2)
		return cfg_errf(err, d, cfg_map_get(d, cfg_root(d), "policies"),
				"key 'policies': measure %s needs two: the "
				"baseline (e.g. framework), then the policy "
				"run at the tuned batch (accudnn, mode: "
				"dynamic)",
				exp_kind_names[e->kind]);
	return 0;
}

static int parse_measure(struct exp *e, yaml_node_t *n, gms_err *err)
{
	struct cfg_doc *d = e->doc;
	if (!n || n->type != YAML_MAPPING_NODE)
		return cfg_errf(err, d, n,
				"key 'measure': expected a mapping with "
				"'kind'");
	yaml_node_t *kn = cfg_map_get(d, n, "kind");
	const char *ks = kn ? cfg_scalar(kn) : NULL;
	int kind = -1;
	for (int k = 0; ks && k < EXP_KIND_COUNT; k++)
		if (!strcmp(ks, exp_kind_names[k]))
			kind = k;
	if (kind < 0)
		return cfg_errf(err, d, kn ? kn : n,
				"measure: key 'kind': %s%s%s (run, sweep, "
				"max-batch, best-throughput, min-pool, "
				"efficiency-optimal, scaling)",
				ks ? "unknown kind '" : "required",
				ks ? ks : "", ks ? "'" : "");
	struct exp_meas m;
	if (cfg_parse_map(d, n, meas_defs[kind], &m, "measure", err) < 0)
		return -1;
	e->kind = (enum exp_kind)kind;
	switch (e->kind) {
	case EXP_RUN:
		break;
	case EXP_SWEEP: {
		int given = !!m.batch + !!m.budget + !!m.budget_fraction;
		if (given != 1)
			return cfg_errf(err, d, n,
					"measure: a sweep needs exactly one "
					"of 'batch', 'budget', "
					"'budget_fraction'");
		if (m.batch) {
			e->axis = EXP_AXIS_BATCH;
			return parse_values(d, m.batch, "measure: key 'batch'",
					    sizeof(int64_t),
					    (void **)&e->batches, &e->n_values,
					    one_batch, err);
		}
		if (m.budget) {
			e->axis = EXP_AXIS_BUDGET;
			e->budgets_node = m.budget;
			if (parse_values(d, m.budget, "measure: key 'budget'",
					 sizeof(uint64_t),
					 (void **)&e->budgets, &e->n_values,
					 one_budget, err) < 0)
				return -1;
			for (size_t i = 0; i < e->n_values; i++)
				if (!e->above_device &&
				    e->budgets[i] > exp_usable(e)) {
					char what[80];
					snprintf(what, sizeof what,
						 "measure: key 'budget': item "
						 "%zu",
						 i + 1);
					return budget_above(
						e, cfg_seq_item(d, m.budget, i),
						what, e->budgets[i], err);
				}
			return 0;
		}
		e->axis = EXP_AXIS_FRACTION;
		return parse_values(d, m.budget_fraction,
				    "measure: key 'budget_fraction'",
				    sizeof(double), (void **)&e->fractions,
				    &e->n_values, one_fraction, err);
	}
	case EXP_EFF:
	case EXP_SCALING:
		if (!(m.lr_base > 0) || !(m.lr_c > 0))
			return cfg_errf(err, d, n,
					"measure: keys 'lr_base' and 'c': must "
					"be > 0");
		e->lr_base = m.lr_base;
		e->lr_batch = m.lr_batch;
		e->lr_c = m.lr_c;
		/* then the baseline's max-batch search's keys */
		/* fall through */
	case EXP_MAX_BATCH:
		if (m.start > m.limit)
			return cfg_errf(err, d, cfg_map_get(d, n, "start"),
					"measure: key 'start': %lld is above "
					"'limit' (%lld)",
					(long long)m.start, (long long)m.limit);
		e->start = m.start;
		e->limit = m.limit;
		e->confirm = m.confirm;
		break;
	case EXP_BEST:
		if (m.min > m.max)
			return cfg_errf(err, d, cfg_map_get(d, n, "min"),
					"measure: key 'min': %lld is above "
					"'max' (%lld)",
					(long long)m.min, (long long)m.max);
		e->lo = m.min;
		e->hi = m.max;
		e->step = m.step;
		break;
	case EXP_MIN_POOL:
		e->pool_limit = m.pool_limit;
		e->pool_shrink = m.pool_shrink;
		break;
	default:
		break;
	}
	return 0;
}

/* Does the measurement choose the batch? */
static bool varies_batch(const struct exp *e)
{
	return e->kind == EXP_MAX_BATCH || e->kind == EXP_BEST ||
	       e->kind == EXP_EFF || e->kind == EXP_SCALING ||
	       (e->kind == EXP_SWEEP && e->axis == EXP_AXIS_BATCH);
}

/* The batch exp_load builds workload i at to check it (the first the
 * measurement runs). */
static int64_t load_batch(const struct exp *e, size_t i)
{
	return varies_batch(e) ? (e->kind == EXP_SWEEP	 ? e->batches[0]
				  : e->kind != EXP_BEST ? e->start
							: e->lo)
			       : e->wl[i].batch;
}

int exp_load(struct exp *e, const char *path, const struct exp_opts *o,
	     gms_err *err)
{
	struct wl_workload **pre = NULL;
	memset(e, 0, sizeof *e);
	snprintf(e->path, sizeof e->path, "%s", path);
	if (cfg_load(&e->doc, path, err) < 0)
		return -1;
	struct cfg_doc *d = e->doc;
	yaml_node_t *root = cfg_root(d);
	struct exp_top top;
	if (cfg_parse_map(d, root, top_defs, &top, NULL, err) < 0)
		goto fail;
	char buf[256];
	snprintf(e->name, sizeof e->name, "%s",
		 top.name[0] ? top.name : stem(path, buf, sizeof buf));
	if (strchr(e->name, '/') || !strcmp(e->name, "..") ||
	    !strcmp(e->name, ".")) {
		cfg_errf(err, d, cfg_map_get(d, root, "name"),
			 "key 'name': '%s' is not a plain directory name",
			 e->name);
		goto fail;
	}
	if (o && o->out && !o->out[0]) {
		gms_errf(err, "--out: empty directory name");
		goto fail;
	}
	if (!top.out[0]) {
		cfg_errf(err, d, cfg_map_get(d, root, "out"),
			 "key 'out': empty directory name (use \".\")");
		goto fail;
	}
	if (top.pool_size && top.budget && top.pool_size > top.budget) {
		cfg_errf(err, d, cfg_map_get(d, root, "pool_size"),
			 "key 'pool_size': %llu bytes exceed 'budget' (%llu)",
			 (unsigned long long)top.pool_size,
			 (unsigned long long)top.budget);
		goto fail;
	}
	int k = o && o->out ? snprintf(e->out_dir, sizeof e->out_dir, "%s",
				       o->out)
			    : snprintf(e->out_dir, sizeof e->out_dir,
				       "%s/%s", top.out, e->name);
	if (k < 0 || (size_t)k >= sizeof e->out_dir) {
		cfg_errf(err, d, cfg_map_get(d, root, "out"),
			 "key 'out': the results directory's path is longer "
			 "than %d characters",
			 PRM_PATH_MAX - 1);
		goto fail;
	}
	if (top.warmup >= top.iterations) {
		cfg_errf(err, d, cfg_map_get(d, root, "warmup"),
			 "key 'warmup': %lld must be below 'iterations' (%lld)",
			 (long long)top.warmup, (long long)top.iterations);
		goto fail;
	}
	e->iterations = (int)top.iterations;
	e->warmup = (int)top.warmup;
	e->settle_max = (int)top.settle_max;
	e->grow_max = (int)top.grow_max;
	e->plot = top.plot;
	e->budget = top.budget;
	e->pool_size = top.pool_size;
	if (strcmp(top.allocator, "framework") != 0 &&
	    !mem_lookup(top.allocator, err)) {
		cfg_err_at(err, d, cfg_map_get(d, root, "allocator"),
			   "key 'allocator'");
		goto fail;
	}
	snprintf(e->allocator, sizeof e->allocator, "%s", top.allocator);
	if (hw_load(&e->hw, top.hw, err) < 0) {
		cfg_err_at(err, d, cfg_map_get(d, root, "hw"), "key 'hw'");
		goto fail;
	}
	if (top.host_pinned)
		e->hw.host_pinned = top.host_pinned;
	e->above_device = top.above_device;
	if (!e->above_device && top.budget > exp_usable(e)) {
		budget_above(e, cfg_map_get(d, root, "budget"), "key 'budget'",
			     top.budget, err);
		goto fail;
	}
	if (parse_measure(e, top.measure, err) < 0 ||
	    parse_workloads(e, top.workloads, err) < 0 ||
	    parse_policies(e, top.policies, err) < 0 ||
	    parse_cluster(e, top.cluster, err) < 0 || check_eff(e, err) < 0)
		goto fail;
	if (e->skip[0]) { /* third-party data absent: nothing to build */
		gms_errf(err, "%s", e->skip);
		exp_free(e);
		return EXP_SKIPPED;
	}
	if (e->kind == EXP_MIN_POOL && top.pool_size) {
		cfg_errf(err, d, cfg_map_get(d, root, "pool_size"),
			 "key 'pool_size': measure min-pool chooses the pool "
			 "itself (leave it out)");
		goto fail;
	}
	/* every workload must be buildable as the measurement will use it
	 * (lazy: a plan step built and checked them, shard.h); pre: a later
	 * entry of the same log, built with an earlier one */
	pre = calloc(e->n_wl ? e->n_wl : 1, sizeof *pre);
	if (!pre) {
		gms_errf(err, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < e->n_wl && !(o && o->lazy); i++) {
		struct exp_workload *w = &e->wl[i];
		char what[200];
		snprintf(what, sizeof what, "workload %zu ('%s')", i + 1,
			 w->label);
		if (w->src == EXP_SRC_GEN && !varies_batch(e) && w->batch < 1) {
			cfg_errf(err, d, w->node,
				 "%s: key 'batch': required (>= 1) for a "
				 "generator",
				 what);
			goto fail;
		}
		int64_t b = load_batch(e, i);
		struct wl_workload *wl = pre[i];
		pre[i] = NULL;
		for (size_t j = i + 1; !wl && j < e->n_wl; j++)
			if (!pre[j] && load_batch(e, j) == b &&
			    exp_same_log(e, i, j, b) &&
			    exp_build_log_pair(e, i, j, b, &wl, &pre[j],
					       err) < 0)
				break; /* built alone, for its message */
		/* else the last build of the same generator as its
		 * template (a hint: the workload is the same; llm-seq's 40
		 * entries are two networks' at other lengths, issue 37). A
		 * chain of templates costs no memory here: every build is
		 * alive until the runs start (the cache's own keep no
		 * chain, cache_drop) */
		struct wl_reserve like = {0};
		for (size_t j = i; !wl && j-- > 0 && !like.like;)
			if (exp_same_gen(e, j, i) && e->wl[j].first)
				like = wl_reserve_like(e->wl[j].first);
		if (!wl)
			wl = exp_build_workload_in(e, i, b, &like, err);
		if (!wl) {
			cfg_err_at(err, d, w->node, "%s", what);
			goto fail;
		}
		w->ops = wl->n_ops;
		if (shd_scan(wl, &w->live) < 0) {
			gms_errf(err, "out of memory");
			wl_free(wl);
			goto fail;
		}
		if (check_min_budget(e, wl, what,
				     cfg_map_get(d, root, "budget"), err) < 0) {
			wl_free(wl);
			goto fail;
		}
		/* kept for exp_run's workload cache: a search's first probe
		 * (4 builds of max-batch.yaml's 117, and on the one thread
		 * before any search starts), the one build of every other
		 * measurement's points and baseline, so that a run builds
		 * each workload once, not here and again for its tasks
		 * (issue 37: with shards, each shard paid both) */
		w->first = wl;
		w->first_batch = b;
	}
	free(pre);
	return 0;
fail:
	for (size_t i = 0; pre && i < e->n_wl; i++)
		wl_free(pre[i]);
	free(pre);
	exp_free(e);
	return -1;
}

void exp_free(struct exp *e)
{
	for (size_t i = 0; e->wl && i < e->n_wl; i++) {
		wl_free(e->wl[i].first);
		free(e->wl[i].live.reach);
		free(e->wl[i].live.need);
	}
	free(e->wl);
	free(e->pol);
	free(e->batches);
	free(e->budgets);
	free(e->fractions);
	free(e->cluster.gpus);
	if (e->doc)
		cfg_free(e->doc);
	memset(e, 0, sizeof *e);
}

bool exp_same_gen(const struct exp *e, size_t a, size_t b)
{
	return e->wl[a].src == EXP_SRC_GEN && e->wl[b].src == EXP_SRC_GEN &&
	       e->wl[a].gen == e->wl[b].gen;
}

struct wl_workload *exp_build_workload(const struct exp *e, size_t i,
				       int64_t batch, gms_err *err)
{
	return exp_build_workload_in(e, i, batch, NULL, err);
}

struct wl_workload *exp_build_workload_in(const struct exp *e, size_t i,
					  int64_t batch,
					  const struct wl_reserve *r,
					  gms_err *err)
{
	const struct exp_workload *w = &e->wl[i];
	switch (w->src) {
	case EXP_SRC_GEN: {
		struct wl_gen_args a = w->args;
		a.batch = batch ? batch : w->batch;
		if (r)
			a.reserve = *r;
		return wl_gen_build(w->gen, &a, err);
	}
	case EXP_SRC_FILE:
		return wl_load_yaml(w->path, batch ? batch : w->batch, err);
	case EXP_SRC_TRACE:
		return wl_load_dtr_batch(w->path, w->remat, w->profile_times,
					 batch ? batch : w->batch, err);
	}
	gms_errf(err, "bad workload source");
	return NULL;
}

bool exp_same_log(const struct exp *e, size_t i, size_t j, int64_t batch)
{
	const struct exp_workload *a = &e->wl[i], *b = &e->wl[j];
	return i != j && a->src == EXP_SRC_TRACE && b->src == EXP_SRC_TRACE &&
	       a->profile_times == b->profile_times &&
	       (batch ? batch : a->batch) == (batch ? batch : b->batch) &&
	       strcmp(a->path, b->path) == 0;
}

int exp_build_log_pair(const struct exp *e, size_t i, size_t j,
		       int64_t batch, struct wl_workload **wi,
		       struct wl_workload **wj, gms_err *err)
{
	const struct exp_workload *a = &e->wl[i];
	enum wl_dtr_remat r[2] = {a->remat, e->wl[j].remat};
	struct wl_workload *w[2];
	int rc = wl_load_dtr_rules(a->path, r, 2, a->profile_times,
				   batch ? batch : a->batch, w, err);
	*wi = w[0];
	*wj = w[1];
	return rc;
}
