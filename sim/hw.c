/*
 * hw.c - hardware profiles: loading configs/hw/NAME.yaml and the compute
 * and copy time models (see hw.h for the formulas).
 *
 * File layout (every mapping is a prm_def table below; `gpumemsim help hw`
 * prints them):
 *
 *   name: V100-16GB              # optional; default: file name stem
 *   device:  {capacity: 16GiB, reserved: 1GiB}
 *   compute:
 *     conv:   {peak_flops: 14e12, sat_flops: 2e9, alpha: 1, mem_bw: 700e9,
 *              launch: 5us}
 *     matmul: {...}
 *     memory: {...}              # every memory-bound op type
 *     conv_bwd_filter: {peak_flops: 9e12}   # optional, per op type,
 *                                # partial: other fields keep the class's
 *   link:
 *     h2d: {bw_pinned: 12e9, bw_pageable: 8e9, latency: 10us, derate: 0.9}
 *     d2h: {...}
 *     shared_engine: false
 *   costs: {malloc: 100us, free: 50us, host_alloc: 1ms}   # optional
 *   host:  {pinned: 64GiB, cpu_threads: 8, zvc_bytes_per_s: 2e9,
 *           zvc_decompress_bytes_per_s: 3e9,   # optional
 *           memcpy_bytes_per_s: 10e9}          # optional
 *
 * Op classes: conv = conv, conv_bwd_data, conv_bwd_filter; matmul =
 * matmul, matmul_bwd, attention, attention_bwd; memory = every other type.
 * The keys "conv" and "matmul" under compute name the classes (which the
 * op types conv and matmul take as they are).
 *
 * A profile is parsed into a local copy and handed out only when every
 * check passed, so a failed hw_load leaves *hw untouched.
 */
#include "hw.h"

#include "cfg.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GMS_DATADIR
#define GMS_DATADIR "."
#endif

/* ---- parameter tables ----------------------------------------------- */

/* The top-level mapping; nested mappings are walked by hw_parse. */
struct hw_top {
	char name[PRM_STR_MAX]; /* profile name; "" = file name stem */
	yaml_node_t *device;	/* device: capacity, reserved */
	yaml_node_t *compute;	/* compute: classes and overrides */
	yaml_node_t *link;	/* link: h2d, d2h, shared_engine */
	yaml_node_t *costs;	/* costs: malloc, free, host_alloc; or NULL */
	yaml_node_t *host;	/* host: pinned, cpu_threads, ZVC, memcpy */
};

static const struct prm_def top_defs[] = {
	{"name", PRM_STR, "", 0, 0, NULL,
	 "profile name in results (default: file name without .yaml)",
	 offsetof(struct hw_top, name)},
	{"device", PRM_NODE, NULL, 0, 0, NULL, "device memory (see device:)",
	 offsetof(struct hw_top, device)},
	{"compute", PRM_NODE, NULL, 0, 0, NULL,
	 "compute model per op class and op type (see compute:)",
	 offsetof(struct hw_top, compute)},
	{"link", PRM_NODE, NULL, 0, 0, NULL, "PCIe copy engines (see link:)",
	 offsetof(struct hw_top, link)},
	{"costs", PRM_NODE, "", 0, 0, NULL,
	 "allocation costs (see costs:; all 0 when absent)",
	 offsetof(struct hw_top, costs)},
	{"host", PRM_NODE, NULL, 0, 0, NULL, "host side (see host:)",
	 offsetof(struct hw_top, host)},
	PRM_END};

/* device: */
struct hw_device {
	uint64_t capacity; /* device memory bytes */
	uint64_t reserved; /* bytes taken by context and framework */
};

static const struct prm_def device_defs[] = {
	{"capacity", PRM_BYTES, NULL, 0, 0, NULL, "device memory, > 0",
	 offsetof(struct hw_device, capacity)},
	{"reserved", PRM_BYTES, "0", 0, 0, NULL,
	 "bytes not available to tensors (CUDA context, framework); "
	 "< capacity",
	 offsetof(struct hw_device, reserved)},
	PRM_END};

/* compute.<class> and compute.<op type>: straight into struct hw_compute. */
static const struct prm_def compute_fields[] = {
	{"peak_flops", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "FLOP/s at and beyond saturation, > 0",
	 offsetof(struct hw_compute, peak_flops)},
	{"sat_flops", PRM_DOUBLE, "0", 0, 0, NULL,
	 "FLOPs at the saturation point, >= 0 (0: always at peak)",
	 offsetof(struct hw_compute, sat_flops)},
	{"alpha", PRM_DOUBLE, "1", 0, 1, NULL,
	 "shape of the rise below saturation, (0, 1]",
	 offsetof(struct hw_compute, alpha)},
	{"mem_bw", PRM_DOUBLE, "0", 0, 0, NULL,
	 "achieved DRAM bytes/s of the roofline term, >= 0 (0: no term)",
	 offsetof(struct hw_compute, mem_bw)},
	{"launch", PRM_TIME, "0", 0, 0, NULL, "fixed cost per kernel",
	 offsetof(struct hw_compute, launch)},
	PRM_END};

/* The op classes, in the order of their keys under compute:. */
enum hw_class { HC_CONV, HC_MATMUL, HC_MEMORY, HC_COUNT };
static const char *const class_names[HC_COUNT] = {"conv", "matmul",
						  "memory"};

static enum hw_class class_of(enum wl_op_type t)
{
	switch (t) {
	case OT_CONV:
	case OT_CONV_BWD_DATA:
	case OT_CONV_BWD_FILTER:
		return HC_CONV;
	case OT_MATMUL:
	case OT_MATMUL_BWD:
	case OT_ATTENTION:
	case OT_ATTENTION_BWD:
		return HC_MATMUL;
	default:
		return HC_MEMORY;
	}
}

/* compute: one node per class key, then one per op type (the entries of
 * the class-named types conv and matmul stay NULL: their key is the
 * class's). */
struct hw_compute_nodes {
	yaml_node_t *cls[HC_COUNT]; /* compute.conv/matmul/memory */
	yaml_node_t *op[OT_COUNT];  /* compute.<op type>, or NULL */
};

/* Fill defs (room for HC_COUNT + OT_COUNT + 1 entries) with the keys of
 * compute:. Built at run time from wl_op_type_names, so it cannot fall out
 * of step with the op types. */
static void compute_defs(struct prm_def *defs)
{
	size_t n = 0;
	for (int c = 0; c < HC_COUNT; c++)
		defs[n++] = (struct prm_def){
			class_names[c], PRM_NODE, NULL, 0, 0, NULL,
			c == HC_CONV	 ? "class: conv, conv_bwd_data, "
					   "conv_bwd_filter"
			: c == HC_MATMUL ? "class: matmul, matmul_bwd, "
					   "attention, attention_bwd"
					 : "class: every other op type",
			offsetof(struct hw_compute_nodes, cls) +
				(size_t)c * sizeof(yaml_node_t *)};
	for (int t = 0; t < OT_COUNT; t++) {
		const char *name = wl_op_type_name((enum wl_op_type)t);
		if (strcmp(name, class_names[HC_CONV]) == 0 ||
		    strcmp(name, class_names[HC_MATMUL]) == 0)
			continue;
		defs[n++] = (struct prm_def){
			name, PRM_NODE, "", 0, 0, NULL,
			"partial override of its class's figures",
			offsetof(struct hw_compute_nodes, op) +
				(size_t)t * sizeof(yaml_node_t *)};
	}
	defs[n] = (struct prm_def)PRM_END;
}

/* link: */
struct hw_link_nodes {
	yaml_node_t *h2d;   /* link.h2d */
	yaml_node_t *d2h;   /* link.d2h */
	bool shared_engine; /* one FIFO for both directions */
};

static const struct prm_def link_defs[] = {
	{"h2d", PRM_NODE, NULL, 0, 0, NULL, "host-to-device copies",
	 offsetof(struct hw_link_nodes, h2d)},
	{"d2h", PRM_NODE, NULL, 0, 0, NULL, "device-to-host copies",
	 offsetof(struct hw_link_nodes, d2h)},
	{"shared_engine", PRM_BOOL, "false", 0, 0, NULL,
	 "both directions share one copy engine (one FIFO)",
	 offsetof(struct hw_link_nodes, shared_engine)},
	PRM_END};

/* link.h2d and link.d2h: straight into struct hw_link. */
static const struct prm_def link_dir_defs[] = {
	{"bw_pinned", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "bytes/s with pinned host memory, > 0",
	 offsetof(struct hw_link, bw_pinned)},
	{"bw_pageable", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "bytes/s with pageable host memory, > 0",
	 offsetof(struct hw_link, bw_pageable)},
	{"latency", PRM_TIME, "0", 0, 0, NULL, "fixed cost per copy",
	 offsetof(struct hw_link, latency)},
	{"derate", PRM_DOUBLE, "1", 0, 1, NULL,
	 "bandwidth factor while the other direction transfers, (0, 1]",
	 offsetof(struct hw_link, derate)},
	PRM_END};

/* costs: straight into struct hw_profile. */
static const struct prm_def costs_defs[] = {
	{"malloc", PRM_TIME, "0", 0, 0, NULL,
	 "cudaMalloc of a pool or segment",
	 offsetof(struct hw_profile, malloc_cost)},
	{"free", PRM_TIME, "0", 0, 0, NULL, "cudaFree",
	 offsetof(struct hw_profile, free_cost)},
	{"host_alloc", PRM_TIME, "0", 0, 0, NULL,
	 "cudaMallocHost (pinned host memory)",
	 offsetof(struct hw_profile, host_alloc_cost)},
	PRM_END};

/* host: straight into struct hw_profile. */
static const struct prm_def host_defs[] = {
	{"pinned", PRM_BYTES, "0", 0, 0, NULL,
	 "pinned host bytes available (0: unlimited)",
	 offsetof(struct hw_profile, host_pinned)},
	{"cpu_threads", PRM_INT, "1", 1, 4096, NULL,
	 "host threads for compression",
	 offsetof(struct hw_profile, cpu_threads)},
	{"zvc_bytes_per_s", PRM_DOUBLE, NULL, 0, 0, NULL,
	 "ZVC compression throughput per thread (vDNN++ IV-C), bytes/s, > 0",
	 offsetof(struct hw_profile, zvc_bytes_per_s)},
	{"zvc_decompress_bytes_per_s", PRM_DOUBLE, "0", 0, 0, NULL,
	 "ZVC decompression throughput per thread, bytes/s of output, > 0 "
	 "(default: zvc_bytes_per_s)",
	 offsetof(struct hw_profile, zvc_decompress_bytes_per_s)},
	{"memcpy_bytes_per_s", PRM_DOUBLE, "0", 0, 0, NULL,
	 "host memcpy bandwidth per thread, bytes/s, > 0 when given "
	 "(default 0: not given)",
	 offsetof(struct hw_profile, memcpy_bytes_per_s)},
	PRM_END};

/* ---- checks beyond the tables --------------------------------------- */

/* Error at the value of `key` in map (or at map when the key is absent,
 * i.e. the value was inherited or defaulted). */
static int field_err(gms_err *err, struct cfg_doc *d, yaml_node_t *map,
		     const char *what, const char *key, const char *problem,
		     double v)
{
	yaml_node_t *at = cfg_map_get(d, map, key);
	return cfg_errf(err, d, at ? at : map, "%s: key '%s': %s (found %g)",
			what, key, problem, v);
}

static int check_compute(const struct hw_compute *c, struct cfg_doc *d,
			 yaml_node_t *map, const char *what, gms_err *err)
{
	if (!(c->peak_flops > 0))
		return field_err(err, d, map, what, "peak_flops",
				 "must be > 0", c->peak_flops);
	if (!(c->sat_flops >= 0))
		return field_err(err, d, map, what, "sat_flops",
				 "must be >= 0", c->sat_flops);
	if (!(c->alpha > 0 && c->alpha <= 1))
		return field_err(err, d, map, what, "alpha",
				 "must be in (0, 1]", c->alpha);
	if (!(c->mem_bw >= 0))
		return field_err(err, d, map, what, "mem_bw", "must be >= 0",
				 c->mem_bw);
	return 0;
}

static int check_link(const struct hw_link *l, struct cfg_doc *d,
		      yaml_node_t *map, const char *what, gms_err *err)
{
	if (!(l->bw_pinned > 0))
		return field_err(err, d, map, what, "bw_pinned", "must be > 0",
				 l->bw_pinned);
	if (!(l->bw_pageable > 0))
		return field_err(err, d, map, what, "bw_pageable",
				 "must be > 0", l->bw_pageable);
	if (!(l->derate > 0 && l->derate <= 1))
		return field_err(err, d, map, what, "derate",
				 "must be in (0, 1]", l->derate);
	return 0;
}

/* ---- loading --------------------------------------------------------- */

/* The file name of path without directories and a .yaml/.yml suffix. */
static void stem_of(const char *path, char *buf, size_t n)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t l = strlen(b);
	if (l > 5 && strcmp(b + l - 5, ".yaml") == 0)
		l -= 5;
	else if (l > 4 && strcmp(b + l - 4, ".yml") == 0)
		l -= 4;
	if (l >= n)
		l = n - 1;
	memcpy(buf, b, l);
	buf[l] = 0;
}

/* Parse a loaded document into hw (which the caller zeroed). */
static int hw_parse(struct hw_profile *hw, struct cfg_doc *d, gms_err *err)
{
	struct hw_top top;
	yaml_node_t *root = cfg_root(d);
	if (cfg_parse_map(d, root, top_defs, &top, NULL, err) < 0)
		return -1;

	/* name */
	if (top.name[0]) {
		if (strlen(top.name) >= sizeof hw->name)
			return cfg_errf(err, d, cfg_map_get(d, root, "name"),
					"key 'name': longer than %zu "
					"characters",
					sizeof hw->name - 1);
		memcpy(hw->name, top.name, strlen(top.name) + 1);
	} else {
		stem_of(d->path, hw->name, sizeof hw->name);
	}

	/* device */
	struct hw_device dev;
	if (cfg_parse_map(d, top.device, device_defs, &dev, "device", err) < 0)
		return -1;
	if (dev.capacity == 0)
		return field_err(err, d, top.device, "device", "capacity",
				 "must be > 0", 0);
	if (dev.reserved >= dev.capacity)
		return cfg_errf(err, d, cfg_map_get(d, top.device, "reserved"),
				"device: key 'reserved': %llu bytes must be "
				"less than capacity (%llu bytes)",
				(unsigned long long)dev.reserved,
				(unsigned long long)dev.capacity);
	hw->capacity = dev.capacity;
	hw->reserved = dev.reserved;

	/* compute: classes first, then each op type over its class */
	struct prm_def cdefs[HC_COUNT + OT_COUNT + 1];
	struct hw_compute_nodes cn;
	struct hw_compute cls[HC_COUNT];
	char what[96];
	compute_defs(cdefs);
	memset(&cn, 0, sizeof cn); /* op[conv], op[matmul] have no key */
	if (cfg_parse_map(d, top.compute, cdefs, &cn, "compute", err) < 0)
		return -1;
	for (int c = 0; c < HC_COUNT; c++) {
		snprintf(what, sizeof what, "compute.%s", class_names[c]);
		if (cfg_parse_map(d, cn.cls[c], compute_fields, &cls[c], what,
				  err) < 0 ||
		    check_compute(&cls[c], d, cn.cls[c], what, err) < 0)
			return -1;
	}
	for (int t = 0; t < OT_COUNT; t++) {
		hw->op[t] = cls[class_of((enum wl_op_type)t)];
		if (!cn.op[t])
			continue;
		snprintf(what, sizeof what, "compute.%s",
			 wl_op_type_name((enum wl_op_type)t));
		if (cfg_parse_map_over(d, cn.op[t], compute_fields, &hw->op[t],
				       what, err) < 0 ||
		    check_compute(&hw->op[t], d, cn.op[t], what, err) < 0)
			return -1;
	}

	/* link */
	struct hw_link_nodes ln;
	if (cfg_parse_map(d, top.link, link_defs, &ln, "link", err) < 0)
		return -1;
	if (cfg_parse_map(d, ln.h2d, link_dir_defs, &hw->link[HW_H2D],
			  "link.h2d", err) < 0 ||
	    check_link(&hw->link[HW_H2D], d, ln.h2d, "link.h2d", err) < 0)
		return -1;
	if (cfg_parse_map(d, ln.d2h, link_dir_defs, &hw->link[HW_D2H],
			  "link.d2h", err) < 0 ||
	    check_link(&hw->link[HW_D2H], d, ln.d2h, "link.d2h", err) < 0)
		return -1;
	hw->shared_engine = ln.shared_engine;

	/* costs (optional) */
	if (top.costs) {
		if (cfg_parse_map(d, top.costs, costs_defs, hw, "costs", err) <
		    0)
			return -1;
	} else if (prm_set_defaults(costs_defs, hw, err) < 0) {
		return -1;
	}

	/* host */
	if (cfg_parse_map(d, top.host, host_defs, hw, "host", err) < 0)
		return -1;
	if (!(hw->zvc_bytes_per_s > 0))
		return field_err(err, d, top.host, "host", "zvc_bytes_per_s",
				 "must be > 0", hw->zvc_bytes_per_s);
	/* The optional figures default to 0; given, they must be > 0. */
	if (cfg_map_get(d, top.host, "zvc_decompress_bytes_per_s") &&
	    !(hw->zvc_decompress_bytes_per_s > 0))
		return field_err(err, d, top.host, "host",
				 "zvc_decompress_bytes_per_s", "must be > 0",
				 hw->zvc_decompress_bytes_per_s);
	if (!(hw->zvc_decompress_bytes_per_s > 0))
		hw->zvc_decompress_bytes_per_s = hw->zvc_bytes_per_s;
	if (cfg_map_get(d, top.host, "memcpy_bytes_per_s") &&
	    !(hw->memcpy_bytes_per_s > 0))
		return field_err(err, d, top.host, "host", "memcpy_bytes_per_s",
				 "must be > 0", hw->memcpy_bytes_per_s);
	return 0;
}

/* Parse d into *hw only when it is valid. */
static int hw_from_doc(struct hw_profile *hw, struct cfg_doc *d,
		       gms_err *err)
{
	struct hw_profile tmp;
	memset(&tmp, 0, sizeof tmp);
	if (strlen(d->path) >= sizeof tmp.path)
		return gms_errf(err, "%s: path longer than %zu characters",
				d->path, sizeof tmp.path - 1);
	memcpy(tmp.path, d->path, strlen(d->path) + 1);
	if (hw_parse(&tmp, d, err) < 0)
		return -1;
	*hw = tmp;
	return 0;
}

int hw_load_string(struct hw_profile *hw, const char *name, const char *text,
		   gms_err *err)
{
	struct cfg_doc *d;
	if (cfg_load_string(&d, name, text, err) < 0)
		return -1;
	int rc = hw_from_doc(hw, d, err);
	cfg_free(d);
	return rc;
}

const char *hw_datadir(void)
{
	const char *e = getenv("GPUMEMSIM_HOME");
	return e && *e ? e : GMS_DATADIR;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "unknown hardware profile" with the names found in dir. */
static int unknown_profile(const char *spec, const char *dir, gms_err *err)
{
	DIR *dd = opendir(dir);
	if (!dd)
		return gms_errf(err,
				"unknown hardware profile '%s' (cannot list "
				"%s: %s)",
				spec, dir, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(dd)) != NULL) {
		if (!ends_with(e->d_name, ".yaml") || e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **nn = realloc(names, cap * sizeof *names);
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		size_t l = strlen(e->d_name) - 5;
		names[n] = malloc(l + 1);
		if (!names[n]) {
			rc = -1;
			break;
		}
		memcpy(names[n], e->d_name, l);
		names[n][l] = 0;
		n++;
	}
	closedir(dd);
	if (rc < 0) {
		gms_errf(err, "unknown hardware profile '%s' (out of memory)",
			 spec);
	} else {
		qsort(names, n, sizeof *names, cmp_str);
		char list[700] = "";
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(list);
			snprintf(list + l, sizeof list - l, "%s%s",
				 i ? ", " : "", names[i]);
		}
		gms_errf(err,
			 "unknown hardware profile '%s' (available in %s: "
			 "%s)",
			 spec, dir, n ? list : "none");
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return -1;
}

int hw_load(struct hw_profile *hw, const char *spec, gms_err *err)
{
	if (!spec || !*spec)
		return gms_errf(err, "no hardware profile named");
	char path[1024];
	if (strchr(spec, '/') || ends_with(spec, ".yaml") ||
	    ends_with(spec, ".yml")) {
		if (strlen(spec) >= sizeof path)
			return gms_errf(err, "%s: path too long", spec);
		memcpy(path, spec, strlen(spec) + 1);
	} else {
		char dir[sizeof path];
		int l = snprintf(dir, sizeof dir, "%s/configs/hw",
				 hw_datadir());
		if (l < 0 || (size_t)l >= sizeof dir ||
		    strlen(dir) + strlen(spec) + 7 >= sizeof path)
			return gms_errf(err, "hardware profile '%s': path too "
					"long", spec);
		size_t dl = strlen(dir), sl = strlen(spec);
		memcpy(path, dir, dl);
		path[dl] = '/';
		memcpy(path + dl + 1, spec, sl);
		memcpy(path + dl + 1 + sl, ".yaml", 6);
		if (access(path, F_OK) != 0)
			return unknown_profile(spec, dir, err);
	}
	struct cfg_doc *d;
	if (cfg_load(&d, path, err) < 0)
		return -1;
	int rc = hw_from_doc(hw, d, err);
	cfg_free(d);
	return rc;
}

/* ---- models ---------------------------------------------------------- */

sim_time_t hw_kernel_time(const struct hw_profile *hw, enum wl_op_type t,
			  double flops, double bytes)
{
	if ((int)t < 0 || t >= OT_COUNT)
		t = OT_OTHER;
	const struct hw_compute *c = &hw->op[t];
	/* Seconds are multiplied out to ns before dividing, so figures that
	 * divide exactly (the test profile's) give exact integers. */
	double comp = 0, mem = 0;
	if (flops > 0 && c->peak_flops > 0) {
		double thr = c->peak_flops;
		if (c->sat_flops > 0 && flops < c->sat_flops)
			thr *= pow(flops / c->sat_flops, c->alpha);
		comp = flops * 1e9 / thr;
	}
	if (bytes > 0 && c->mem_bw > 0)
		mem = bytes * 1e9 / c->mem_bw;
	return sim_round_ns((double)c->launch + (comp > mem ? comp : mem));
}

sim_time_t hw_copy_time(const struct hw_profile *hw, enum hw_dir dir,
			uint64_t bytes, bool pinned)
{
	if ((int)dir < 0 || dir >= HW_DIR_COUNT)
		dir = HW_H2D;
	const struct hw_link *l = &hw->link[dir];
	double bw = pinned ? l->bw_pinned : l->bw_pageable;
	double ns = (double)l->latency;
	if (bytes > 0 && bw > 0)
		ns += (double)bytes * 1e9 / bw;
	return sim_round_ns(ns);
}

/* ---- help and the test profile -------------------------------------- */

void hw_print_help(FILE *f)
{
	struct prm_def cdefs[HC_COUNT + OT_COUNT + 1];
	compute_defs(cdefs);
	/* The class keys only; the per-op-type keys are listed in prose. */
	cdefs[HC_COUNT] = (struct prm_def)PRM_END;
	fprintf(f, "Hardware profile: configs/hw/NAME.yaml (or a path); "
		   "--hw NAME\n\n");
	fprintf(f, "top level:\n");
	prm_print_help(top_defs, f, "  ");
	fprintf(f, "\ndevice:\n");
	prm_print_help(device_defs, f, "  ");
	fprintf(f, "\ncompute:\n");
	prm_print_help(cdefs, f, "  ");
	fprintf(f, "  and, optionally, any op type as a key, a partial "
		   "override of its class:\n   ");
	size_t col = 3;
	for (int t = 0; t < OT_COUNT; t++) {
		const char *n = wl_op_type_name((enum wl_op_type)t);
		if (!strcmp(n, "conv") || !strcmp(n, "matmul"))
			continue;
		if (col + 1 + strlen(n) > 76) {
			fprintf(f, "\n   ");
			col = 3;
		}
		fprintf(f, " %s", n);
		col += 1 + strlen(n);
	}
	fprintf(f, "\n\ncompute.<class> and compute.<op type> "
		   "(kernel time = launch + max(F / thr(F), B / mem_bw),\n"
		   " thr(F) = peak_flops * min(1, F / sat_flops) ^ alpha):\n");
	prm_print_help(compute_fields, f, "  ");
	fprintf(f, "\nlink:\n");
	prm_print_help(link_defs, f, "  ");
	fprintf(f, "\nlink.h2d and link.d2h (copy time = latency + bytes / "
		   "bandwidth):\n");
	prm_print_help(link_dir_defs, f, "  ");
	fprintf(f, "\ncosts:\n");
	prm_print_help(costs_defs, f, "  ");
	fprintf(f, "\nhost:\n");
	prm_print_help(host_defs, f, "  ");
}

void hw_test_profile(struct hw_profile *hw, uint64_t capacity)
{
	memset(hw, 0, sizeof *hw);
	snprintf(hw->name, sizeof hw->name, "test");
	hw->capacity = capacity;
	hw->reserved = 0;
	for (int t = 0; t < OT_COUNT; t++)
		hw->op[t] = (struct hw_compute){.peak_flops = 1e12,
						.sat_flops = 1,
						.alpha = 1,
						.mem_bw = 0,
						.launch = 0};
	for (int dir = 0; dir < HW_DIR_COUNT; dir++)
		hw->link[dir] = (struct hw_link){.bw_pinned = 1e9,
						 .bw_pageable = 1e9,
						 .latency = 0,
						 .derate = 1};
	hw->shared_engine = false;
	hw->malloc_cost = 0;
	hw->free_cost = 0;
	hw->host_alloc_cost = 0;
	hw->host_pinned = 0;
	hw->cpu_threads = 1;
	hw->zvc_bytes_per_s = 1e9;
	hw->zvc_decompress_bytes_per_s = 1e9;
	hw->memcpy_bytes_per_s = 1e9;
}
