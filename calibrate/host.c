/*
 * host.c - host calibration (`gpumemsim calibrate --host`): what the
 * simulator's host side costs on this CPU, measured, per thread.
 *
 * - memcpy: bytes copied per second by one thread while N threads copy at
 *   once (each its own buffers, larger than the caches).
 * - Zero-value compression (vDNN++ IV-C compresses offloaded activations
 *   on the CPU with ZVC, after Rhu et al., cDMA, HPCA 2018): each group of
 *   32 32-bit words becomes a 32-bit mask of its nonzero words followed by
 *   those words. Compression is timed in bytes of input per second,
 *   decompression in bytes of output per second, on synthetic ReLU
 *   activations of a given density (fraction of nonzeros), N threads at
 *   once; every buffer is decompressed and compared word for word.
 * The figure kept is the median over the repetitions of the mean over the
 * threads. The results replace the host: section of a base profile.
 */
#include "calib.h"

#include "../sim/cfg.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- ZVC --------------------------------------------------------------- */

/* Words of a group: one mask bit per word of a 32-bit mask. */
enum { ZVC_GROUP = 32 };

size_t cal_zvc_bound(size_t n)
{
	return n + (n + ZVC_GROUP - 1) / ZVC_GROUP;
}

size_t cal_zvc_compress(const uint32_t *in, size_t n, uint32_t *out)
{
	uint32_t *o = out;
	for (size_t g = 0; g < n; g += ZVC_GROUP) {
		size_t m = n - g < ZVC_GROUP ? n - g : ZVC_GROUP;
		uint32_t mask = 0, *p = o + 1;
		/* branch-free: every word is stored, the pointer moves on
		 * past the nonzero ones only (the slot after the last
		 * nonzero word is within the group's 1 + m words) */
		for (size_t j = 0; j < m; j++) {
			uint32_t v = in[g + j], nz = v != 0;
			*p = v;
			p += nz;
			mask |= nz << j;
		}
		*o = mask;
		o = p;
	}
	return (size_t)(o - out);
}

size_t cal_zvc_decompress(const uint32_t *in, size_t n, uint32_t *out)
{
	const uint32_t *p = in;
	for (size_t g = 0; g < n; g += ZVC_GROUP) {
		size_t m = n - g < ZVC_GROUP ? n - g : ZVC_GROUP;
		uint32_t mask = *p++;
		if (g + ZVC_GROUP < n) {
			/* not the last group: *p is within the stream (at
			 * worst the next group's mask), so read it
			 * unconditionally, branch-free */
			for (size_t j = 0; j < m; j++) {
				uint32_t bit = (mask >> j) & 1;
				out[g + j] = *p & (0u - bit);
				p += bit;
			}
			continue;
		}
		for (size_t j = 0; j < m; j++) {
			uint32_t bit = (mask >> j) & 1;
			out[g + j] = bit ? *p : 0;
			p += bit;
		}
	}
	return (size_t)(p - in);
}

/* xorshift64* (Vigna 2016): a small fixed-seed generator, so the
 * activations are the same on every machine. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

void cal_activations(uint32_t *out, size_t n, double density,
		     unsigned long seed)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&s);
		/* top 53 bits as a uniform in [0, 1) against density; a
		 * positive float in [1, 2) from 23 other bits */
		double u = (double)(r >> 11) / 9007199254740992.0;
		float v = 1.0f + (float)(r & 0x7fffff) / 8388608.0f;
		uint32_t w;
		memcpy(&w, &v, sizeof w);
		out[i] = u < density ? w : 0;
	}
}

/* ---- timing ------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What a thread measures in one repetition. */
enum { M_MEMCPY, M_COMP, M_DECOMP, M_COUNT };

/* One thread's buffers and results. */
struct worker {
	pthread_t tid;		  /* the thread */
	pthread_barrier_t *start; /* all threads begin each phase together */
	const struct cal_host_opts *o; /* options */
	size_t words;		  /* words per buffer */
	uint32_t *act, *zip, *back, *copy; /* activations, compressed,
					      decompressed, memcpy target */
	double *secs;		  /* [repeat][M_COUNT] seconds */
	size_t zwords;		  /* compressed words (last repetition) */
	bool ok;		  /* every round trip exact */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t bytes = w->words * sizeof(uint32_t);
	w->ok = true;
	for (int64_t r = 0; r < w->o->repeats; r++) {
		double *s = w->secs + r * M_COUNT;
		pthread_barrier_wait(w->start);
		double t0 = now_s();
		memcpy(w->copy, w->act, bytes);
		s[M_MEMCPY] = now_s() - t0;
		pthread_barrier_wait(w->start);
		t0 = now_s();
		w->zwords = cal_zvc_compress(w->act, w->words, w->zip);
		s[M_COMP] = now_s() - t0;
		pthread_barrier_wait(w->start);
		t0 = now_s();
		size_t used = cal_zvc_decompress(w->zip, w->words, w->back);
		s[M_DECOMP] = now_s() - t0;
		if (used != w->zwords ||
		    memcmp(w->back, w->act, bytes) != 0)
			w->ok = false;
		/* the copy must be read, or the compiler may drop it */
		if (w->copy[w->words / 2] != w->act[w->words / 2])
			w->ok = false;
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int cal_host_measure(const struct cal_host_opts *o,
		     struct cal_host_result *r, gms_err *err)
{
	memset(r, 0, sizeof *r);
	if (o->threads < 1 || o->repeats < 1 || o->bytes < 4 * ZVC_GROUP ||
	    !(o->density >= 0 && o->density <= 1))
		return gms_errf(err, "calibrate --host: threads and repeats "
				     ">= 1, size >= 128 bytes, density in "
				     "[0, 1]");
	size_t nt = (size_t)o->threads, words = o->bytes / sizeof(uint32_t);
	struct worker *w = calloc(nt, sizeof *w);
	double *per = calloc((size_t)o->repeats, sizeof *per);
	pthread_barrier_t start;
	int rc = 0;
	if (!w || !per) {
		rc = gms_errf(err, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		w[i].o = o;
		w[i].start = &start;
		w[i].words = words;
		w[i].act = malloc(words * sizeof(uint32_t));
		w[i].zip = malloc(cal_zvc_bound(words) * sizeof(uint32_t));
		w[i].back = malloc(words * sizeof(uint32_t));
		w[i].copy = malloc(words * sizeof(uint32_t));
		w[i].secs = calloc((size_t)o->repeats * M_COUNT,
				   sizeof(double));
		if (!w[i].act || !w[i].zip || !w[i].back || !w[i].copy ||
		    !w[i].secs) {
			rc = gms_errf(err, "out of memory (%zu threads x 4 "
					   "buffers of %llu bytes)",
				      nt, (unsigned long long)o->bytes);
			goto out;
		}
		cal_activations(w[i].act, words, o->density, i + 1);
		/* touch every page before timing */
		memset(w[i].zip, 0, cal_zvc_bound(words) * sizeof(uint32_t));
		memset(w[i].back, 0, words * sizeof(uint32_t));
		memset(w[i].copy, 0, words * sizeof(uint32_t));
	}
	pthread_barrier_init(&start, NULL, (unsigned)nt);
	size_t started = 0;
	for (; started < nt; started++)
		if (pthread_create(&w[started].tid, NULL, work, &w[started]))
			break;
	if (started < nt) {
		/* cannot happen in practice; the started threads would wait
		 * on the barrier forever, so give up loudly */
		fprintf(stderr, "calibrate --host: cannot start thread %zu\n",
			started);
		abort();
	}
	for (size_t i = 0; i < nt; i++)
		pthread_join(w[i].tid, NULL);
	pthread_barrier_destroy(&start);
	double *fig[M_COUNT] = {&r->memcpy_bps, &r->zvc_bps,
				&r->zvc_decompress_bps};
	for (int m = 0; m < M_COUNT; m++) {
		for (int64_t k = 0; k < o->repeats; k++) {
			per[k] = 0;
			for (size_t i = 0; i < nt; i++)
				per[k] += (double)o->bytes /
					  w[i].secs[k * M_COUNT + m] /
					  (double)nt;
		}
		qsort(per, (size_t)o->repeats, sizeof *per, cmp_double);
		size_t h = (size_t)o->repeats / 2;
		*fig[m] = o->repeats % 2 ? per[h] : (per[h - 1] + per[h]) / 2;
	}
	r->round_trip_ok = true;
	double z = 0;
	for (size_t i = 0; i < nt; i++) {
		r->round_trip_ok = r->round_trip_ok && w[i].ok;
		z += (double)w[i].zwords / (double)words / (double)nt;
	}
	r->ratio = z;
	if (!r->round_trip_ok)
		rc = gms_errf(err, "calibrate --host: ZVC round trip was not "
				   "exact (a bug)");
out:
	for (size_t i = 0; w && i < nt; i++) {
		free(w[i].act);
		free(w[i].zip);
		free(w[i].back);
		free(w[i].copy);
		free(w[i].secs);
	}
	free(w);
	free(per);
	return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* The CPU model from /proc/cpuinfo, or "unknown CPU". */
static void cpu_model(char *buf, size_t n)
{
	snprintf(buf, n, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		char *c = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && c) {
			c++;
			while (*c == ' ')
				c++;
			c[strcspn(c, "\n")] = 0;
			snprintf(buf, n, "%s", c);
			break;
		}
	}
	fclose(f);
}

/* The host: section text (ends with a newline). */
static void put_host(FILE *f, uint64_t pinned, const struct cal_host_opts *o,
		     const struct cal_host_result *r)
{
	char cpu[256], when[64];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
	cpu_model(cpu, sizeof cpu);
	fprintf(f,
		"# host: MEASURED by `gpumemsim calibrate --host` on %s,\n"
		"# %s (%ld CPUs online): %lld threads at once, each on its "
		"own %llu-byte\n# buffers, median of %lld repetitions of the "
		"mean over the threads.\n"
		"# zvc_*: zero-value compression (vDNN++ IV-C) of synthetic "
		"ReLU activations\n# of density %.3g (compressed to %.3f of "
		"the input; every round trip exact);\n# compression per byte "
		"of input, decompression per byte of output.\n"
		"# memcpy_bytes_per_s: bytes copied per second by one "
		"thread.\n# pinned: kept from the base profile.\n",
		when, cpu, sysconf(_SC_NPROCESSORS_ONLN), (long long)o->threads,
		(unsigned long long)o->bytes, (long long)o->repeats,
		o->density, r->ratio);
	fprintf(f,
		"host: {pinned: %llu, cpu_threads: %lld, zvc_bytes_per_s: "
		"%.4g,\n  zvc_decompress_bytes_per_s: %.4g, "
		"memcpy_bytes_per_s: %.4g}\n",
		(unsigned long long)pinned, (long long)o->threads, r->zvc_bps,
		r->zvc_decompress_bps, r->memcpy_bps);
}

/* Read a whole profile (a YAML input: CFG_MAX_BYTES, issue 38). */
static char *slurp(const char *path, gms_err *err)
{
	const struct gms_limit lim = {CFG_MAX_BYTES, CFG_MAX_BYTES,
				      "a YAML input"};
	size_t len;
	return gms_read_all(path, &lim, &len, err);
}

int cal_host_write(const char *base_path, const char *out,
		   const struct cal_host_opts *o,
		   const struct cal_host_result *r, gms_err *err)
{
	struct hw_profile base;
	if (hw_load(&base, base_path, err) < 0)
		return -1;
	char *text = slurp(base.path, err);
	if (!text)
		return -1;
	struct cfg_doc *d;
	if (cfg_load(&d, base.path, err) < 0) {
		free(text);
		return -1;
	}
	/* the byte range of the host: pair, from the start of its line
	 * (and the comment lines just above it, which describe the figures
	 * being replaced) to the end of the value's last line */
	yaml_node_t *root = cfg_root(d), *k = NULL, *v = NULL;
	for (size_t i = 0; i < cfg_map_len(root); i++) {
		yaml_node_t *ki, *vi;
		cfg_map_pair(d, root, i, &ki, &vi);
		if (cfg_scalar(ki) && strcmp(cfg_scalar(ki), "host") == 0) {
			k = ki;
			v = vi;
		}
	}
	if (!k) { /* hw_load requires host:; kept for safety */
		cfg_free(d);
		free(text);
		return gms_errf(err, "%s: no host: section", base.path);
	}
	size_t a = k->start_mark.index, b = v->end_mark.index;
	cfg_free(d);
	while (a > 0 && text[a - 1] != '\n')
		a--;
	while (a > 0) {
		size_t p = a - 1; /* the previous line's newline */
		while (p > 0 && text[p - 1] != '\n')
			p--;
		if (text[p] != '#')
			break;
		a = p;
	}
	/* a block mapping ends where the next line starts; a flow mapping
	 * after its '}' (the rest of that line goes too) */
	if (b > 0 && text[b - 1] != '\n')
		while (text[b] && text[b++] != '\n')
			;
	char *nt = NULL;
	size_t nl = 0;
	FILE *m = open_memstream(&nt, &nl);
	if (!m) {
		free(text);
		return gms_errf(err, "out of memory");
	}
	fwrite(text, 1, a, m);
	put_host(m, base.host_pinned, o, r);
	fputs(text + b, m);
	fclose(m);
	free(text);
	int rc = cal_write_profile(out, nt, err);
	free(nt);
	return rc;
}
