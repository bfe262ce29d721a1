/*
 * wl_cache.c - the binary cache of loaded workload YAML files (wl_cache.h).
 *
 * An entry, native byte order (it is read on the machine that wrote it;
 * the header's 0x01020304 refuses another order):
 *
 *   header  "GMSWLC1\n", u32 version, u32 0x01020304, u64 YAML size,
 *           u64 content hash[2], i64 requested batch, u64 payload bytes,
 *           u64 payload hash[2]
 *   payload records, each a tag byte:
 *           'N' str name, i64 batch                       wl_new
 *           'T' str name, u64 bytes, u8 kind              wl_add_tensor
 *           'O' u32 block, u8 region, str name, u8 type,  wl_set_block,
 *               u8 phase, u8 has_layer, [str layer],      wl_add_op
 *               u32 n_in, u32 ids[n_in], u32 n_out, u32 ids[n_out],
 *               f64 flops, f64 bytes, i64 time, u64 workspace,
 *               u8 flags (1 recomputable, 2 inplace),
 *               u32 n_algos, n_algos x (str name, u64 workspace,
 *               f64 time_scale)
 *           'E' the end
 *   str: u32 length, the bytes (at most GMS_PATH_MAX).
 *
 * The replay makes the builder calls in the entry's order and then the
 * YAML loader's last checks (an unread input, wl_finalize); any record
 * out of range, a short file, bytes after 'E', a payload hash or length
 * that differs, or a call that fails: the entry is corrupt, the workload
 * built from it dropped.
 */
/* realpath(3) is XSI (POSIX's X/Open part), not in the build's
 * _POSIX_C_SOURCE */
#undef _POSIX_C_SOURCE
#define _XOPEN_SOURCE 700

#include "wl_cache.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ---- the hash ------------------------------------------------------ */

/* Two lanes of 64-bit words, each a multiply and a shift-xor per word
 * (the constants: the golden ratio's and xxHash's PRIME64_2, odd
 * multipliers that spread every input bit upwards), finished with the
 * length and murmur3's fmix64 of each lane. About 1 ns a word: a 274 MB
 * file in a tenth of a second. */
#define WH_K1 0x9E3779B97F4A7C15ull
#define WH_K2 0xC2B2AE3D27D4EB4Full

static void wh_word(struct wl_hash *h, uint64_t w)
{
	h->a = (h->a ^ w) * WH_K1;
	h->a ^= h->a >> 31;
	h->b = (h->b + w) * WH_K2;
	h->b ^= h->b >> 29;
}

void wl_hash_init(struct wl_hash *h)
{
	memset(h, 0, sizeof *h);
	h->a = 0x243F6A8885A308D3ull; /* pi's fraction */
	h->b = 0x13198A2E03707344ull;
}

void wl_hash_add(struct wl_hash *h, const void *p, size_t n)
{
	const unsigned char *s = p;
	h->n += n;
	while (n && h->nt) {
		h->tail[h->nt++] = *s++;
		n--;
		if (h->nt == 8) {
			uint64_t w;
			memcpy(&w, h->tail, 8);
			wh_word(h, w);
			h->nt = 0;
		}
	}
	if (h->nt)
		return; /* all of it went into the unfinished word */
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		wh_word(h, w);
	}
	memcpy(h->tail, s, n);
	h->nt = (unsigned)n;
}

static uint64_t fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

void wl_hash_value(const struct wl_hash *h, uint64_t out[2])
{
	struct wl_hash f = *h;
	if (f.nt) {
		uint64_t w = 0;
		memcpy(&w, f.tail, f.nt);
		wh_word(&f, w);
	}
	wh_word(&f, f.n);
	out[0] = fmix64(f.a ^ f.b);
	out[1] = fmix64(f.b + (f.a << 1));
}

int wl_hash_file(const char *path, uint64_t key[2], uint64_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = malloc(CHUNK);
	struct wl_hash h;
	wl_hash_init(&h);
	size_t n;
	while (buf && (n = fread(buf, 1, CHUNK, f)) > 0)
		wl_hash_add(&h, buf, n);
	int rc = buf && !ferror(f) ? 0 : -1;
	free(buf);
	fclose(f);
	wl_hash_value(&h, key);
	*size = h.n;
	return rc;
}

/* ---- where entries live -------------------------------------------- */

/* mkdir that finds an existing directory fine. */
static int make_dir(const char *d)
{
	struct stat st;
	if (mkdir(d, 0755) == 0)
		return 0;
	return errno == EEXIST && stat(d, &st) == 0 && S_ISDIR(st.st_mode)
		       ? 0
		       : -1;
}

const char *wl_cache_dir(char *buf, size_t n)
{
	const char *env = getenv("GPUMEMSIM_CACHE");
	int k;
	if (env) {
		if (!*env || strcmp(env, "off") == 0)
			return NULL;
		k = snprintf(buf, n, "%s", env);
		if (k < 0 || (size_t)k >= n || make_dir(buf) < 0)
			return NULL;
		return buf;
	}
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (xdg && *xdg) {
		k = snprintf(buf, n, "%s", xdg);
	} else if (home && *home) {
		k = snprintf(buf, n, "%s/.cache", home);
	} else {
		return NULL;
	}
	if (k < 0 || (size_t)k >= n || make_dir(buf) < 0)
		return NULL;
	size_t len = (size_t)k;
	k = snprintf(buf + len, n - len, "/gpumemsim");
	if (k < 0 || (size_t)k >= n - len || make_dir(buf) < 0)
		return NULL;
	return buf;
}

const char *wl_cache_entry(const char *dir, const char *path, int64_t batch,
			   char *buf, size_t n)
{
	char *abs = realpath(path, NULL);
	if (!abs)
		return NULL;
	struct wl_hash h;
	uint64_t v[2];
	wl_hash_init(&h);
	wl_hash_add(&h, abs, strlen(abs));
	wl_hash_value(&h, v);
	free(abs);
	int k = snprintf(buf, n, "%s/%016llx%016llx-%lld.wlc", dir,
			 (unsigned long long)v[0], (unsigned long long)v[1],
			 (long long)batch);
	return k < 0 || (size_t)k >= n ? NULL : buf;
}

/* ---- writing ------------------------------------------------------- */

static const char wc_magic[8] = {'G', 'M', 'S', 'W', 'L', 'C', '1', '\n'};
#define WC_VERSION 1u
#define WC_ORDER 0x01020304u

struct wc_header {
	char magic[8];
	uint32_t version, order;
	uint64_t size;
	uint64_t key[2];
	int64_t batch;
	uint64_t payload;
	uint64_t phash[2];
};

struct wl_cache_w {
	struct gms_out out;
	struct wc_header hd;
	struct wl_hash ph; /* of the payload */
	bool bad;	   /* a write failed */
};

static void put(struct wl_cache_w *c, const void *p, size_t n)
{
	if (c->bad)
		return;
	if (fwrite(p, 1, n, c->out.f) != n)
		c->bad = true;
	wl_hash_add(&c->ph, p, n);
	c->hd.payload += n;
}

static void put_u8(struct wl_cache_w *c, uint8_t v) { put(c, &v, 1); }
static void put_u32(struct wl_cache_w *c, uint32_t v) { put(c, &v, 4); }
static void put_u64(struct wl_cache_w *c, uint64_t v) { put(c, &v, 8); }
static void put_f64(struct wl_cache_w *c, double v) { put(c, &v, 8); }

static void put_str(struct wl_cache_w *c, const char *s)
{
	size_t n = strlen(s);
	if (n > GMS_PATH_MAX) {
		c->bad = true;
		return;
	}
	put_u32(c, (uint32_t)n);
	put(c, s, n);
}

struct wl_cache_w *wl_cache_w_open(const char *entry, const uint64_t key[2],
				   uint64_t size, int64_t batch,
				   gms_err *err)
{
	struct wl_cache_w *c = calloc(1, sizeof *c);
	if (!c) {
		gms_errf(err, "%s: out of memory", entry);
		return NULL;
	}
	if (gms_out_open(&c->out, entry, err) < 0) {
		free(c);
		return NULL;
	}
	memcpy(c->hd.magic, wc_magic, 8);
	c->hd.version = WC_VERSION;
	c->hd.order = WC_ORDER;
	c->hd.size = size;
	c->hd.key[0] = key[0];
	c->hd.key[1] = key[1];
	c->hd.batch = batch;
	wl_hash_init(&c->ph);
	/* the header again at the commit, with the payload's length and
	 * hash */
	if (fwrite(&c->hd, sizeof c->hd, 1, c->out.f) != 1)
		c->bad = true;
	return c;
}

void wl_cache_w_new(struct wl_cache_w *c, const char *name, int64_t batch)
{
	put_u8(c, 'N');
	put_str(c, name);
	put_u64(c, (uint64_t)batch);
}

void wl_cache_w_tensor(struct wl_cache_w *c, const char *name,
		       uint64_t bytes, enum wl_kind kind)
{
	put_u8(c, 'T');
	put_str(c, name);
	put_u64(c, bytes);
	put_u8(c, (uint8_t)kind);
}

void wl_cache_w_op(struct wl_cache_w *c, uint32_t block, uint8_t region,
		   const struct wl_op_desc *d)
{
	put_u8(c, 'O');
	put_u32(c, block);
	put_u8(c, region);
	put_str(c, d->name);
	put_u8(c, (uint8_t)d->type);
	put_u8(c, (uint8_t)d->phase);
	put_u8(c, d->layer != NULL);
	if (d->layer)
		put_str(c, d->layer);
	put_u32(c, d->n_in);
	if (d->n_in)
		put(c, d->in, (size_t)d->n_in * 4);
	put_u32(c, d->n_out);
	if (d->n_out)
		put(c, d->out, (size_t)d->n_out * 4);
	put_f64(c, d->flops);
	put_f64(c, d->bytes);
	put_u64(c, (uint64_t)d->time);
	put_u64(c, d->workspace);
	put_u8(c, (uint8_t)((d->recomputable ? 1 : 0) | (d->inplace ? 2 : 0)));
	put_u32(c, d->n_algos);
	for (uint32_t i = 0; i < d->n_algos; i++) {
		put_str(c, d->algos[i].name);
		put_u64(c, d->algos[i].workspace);
		put_f64(c, d->algos[i].time_scale);
	}
}

int wl_cache_w_commit(struct wl_cache_w *c, gms_err *err)
{
	put_u8(c, 'E');
	wl_hash_value(&c->ph, c->hd.phash);
	if (!c->bad && (fseek(c->out.f, 0, SEEK_SET) != 0 ||
			fwrite(&c->hd, sizeof c->hd, 1, c->out.f) != 1))
		c->bad = true;
	if (c->bad) {
		gms_errf(err, "%s: cannot write the cache entry", c->out.path);
		wl_cache_w_abort(c);
		return -1;
	}
	int rc = gms_out_commit(&c->out, err);
	free(c);
	return rc;
}

void wl_cache_w_abort(struct wl_cache_w *c)
{
	if (!c)
		return;
	gms_out_abort(&c->out);
	free(c);
}

/* ---- reading ------------------------------------------------------- */

/* The reader takes the payload in blocks of WC_BLOCK bytes, hashing each
 * whole as it comes (the payload is the rest of the file: bytes after
 * its 'E' are refused): reading and hashing field by field through
 * stdio was two thirds of a load from the cache. */
#define WC_BLOCK ((size_t)1 << 20)

struct wc_r {
	FILE *f;
	struct wl_hash ph;
	uint64_t got;	    /* payload bytes read */
	unsigned char *buf; /* the current block (WC_BLOCK bytes) */
	size_t pos, len;    /* bytes of it taken, and held */
	bool bad;	    /* short */
	char *str;    /* the last string read (GMS_PATH_MAX + 1) */
	char *str2;   /* a second one (an op's layer) */
};

/* The next block; false at the end of the file (or a read error). */
static bool refill(struct wc_r *r)
{
	r->pos = 0;
	r->len = fread(r->buf, 1, WC_BLOCK, r->f);
	wl_hash_add(&r->ph, r->buf, r->len);
	r->got += r->len;
	return r->len > 0;
}

static void get(struct wc_r *r, void *p, size_t n)
{
	unsigned char *d = p;
	while (n && !r->bad) {
		if (r->pos == r->len && !refill(r))
			break;
		size_t k = r->len - r->pos < n ? r->len - r->pos : n;
		memcpy(d, r->buf + r->pos, k);
		r->pos += k;
		d += k;
		n -= k;
	}
	if (n) {
		r->bad = true;
		memset(d, 0, n);
	}
}

static uint8_t get_u8(struct wc_r *r)
{
	uint8_t v;
	get(r, &v, 1);
	return v;
}

static uint32_t get_u32(struct wc_r *r)
{
	uint32_t v;
	get(r, &v, 4);
	return v;
}

static uint64_t get_u64(struct wc_r *r)
{
	uint64_t v;
	get(r, &v, 8);
	return v;
}

static double get_f64(struct wc_r *r)
{
	double v;
	get(r, &v, 8);
	return v;
}

/* A string into buf (GMS_PATH_MAX + 1 bytes); NULL when too long or
 * short. */
static const char *get_str(struct wc_r *r, char *buf)
{
	uint32_t n = get_u32(r);
	if (n > GMS_PATH_MAX) {
		r->bad = true;
		return NULL;
	}
	get(r, buf, n);
	buf[n] = '\0';
	return r->bad ? NULL : buf;
}

/* Room for n items of size sz in *p (*cap items allocated). */
static int room(void **p, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return 0;
	size_t nc = n > 2 * *cap ? n : 2 * *cap;
	void *q = realloc(*p, nc * sz);
	if (!q)
		return -1;
	*p = q;
	*cap = nc;
	return 0;
}

/* The most ids or algos one op may list in an entry: a bound on what a
 * damaged count makes the reader allocate (one op of a YAML file lists
 * its tensors; 2^24 is past any file of WL_YAML_MAX_BYTES's items). */
#define WC_MAX_LIST ((uint32_t)1 << 24)

/* The payload into a workload; NULL with why (the entry is corrupt). */
static struct wl_workload *replay(struct wc_r *r, gms_err *err)
{
	struct wl_workload *w = NULL;
	uint32_t *ids = NULL;
	size_t ids_cap = 0;
	struct wl_algo *algos = NULL;
	char **anames = NULL;
	size_t algos_cap = 0, anames_n = 0;
	gms_err e = {{0}};
	const char *why = NULL;
	for (;;) {
		uint8_t tag = get_u8(r);
		if (r->bad) {
			why = "truncated";
			goto fail;
		}
		if (tag == 'E')
			break;
		if (!w && tag != 'N') {
			why = "no workload record first";
			goto fail;
		}
		if (tag == 'N') {
			const char *nm = get_str(r, r->str);
			int64_t b = (int64_t)get_u64(r);
			if (w || !nm || r->bad || b <= 0) {
				why = "a bad workload record";
				goto fail;
			}
			if (!(w = wl_new(nm, b))) {
				why = "out of memory";
				goto fail;
			}
		} else if (tag == 'T') {
			const char *nm = get_str(r, r->str);
			uint64_t bytes = get_u64(r);
			uint8_t kind = get_u8(r);
			if (!nm || r->bad || kind >= WL_KIND_COUNT) {
				why = "a bad tensor record";
				goto fail;
			}
			if (wl_add_tensor(w, nm, bytes, (enum wl_kind)kind,
					  &e) == WL_NONE) {
				why = e.msg;
				goto fail;
			}
		} else if (tag == 'O') {
			struct wl_op_desc d = {0};
			uint32_t block = get_u32(r);
			uint8_t region = get_u8(r);
			d.name = get_str(r, r->str);
			uint8_t type = get_u8(r), phase = get_u8(r);
			uint8_t has_layer = get_u8(r);
			d.layer = has_layer ? get_str(r, r->str2) : NULL;
			d.n_in = get_u32(r);
			if (r->bad || !d.name || (has_layer && !d.layer) ||
			    has_layer > 1 || type >= OT_COUNT ||
			    phase >= WL_PHASE_COUNT ||
			    region >= WL_REGION_COUNT || d.n_in > WC_MAX_LIST) {
				why = "a bad op record";
				goto fail;
			}
			if (room((void **)&ids, &ids_cap, d.n_in + 1,
				 sizeof *ids) < 0) {
				why = "out of memory";
				goto fail;
			}
			get(r, ids, (size_t)d.n_in * 4);
			d.n_out = get_u32(r);
			if (d.n_out > WC_MAX_LIST ||
			    room((void **)&ids, &ids_cap,
				 (size_t)d.n_in + d.n_out + 1,
				 sizeof *ids) < 0) {
				why = "a bad op record";
				goto fail;
			}
			get(r, ids + d.n_in, (size_t)d.n_out * 4);
			d.in = d.n_in ? ids : NULL;
			d.out = d.n_out ? ids + d.n_in : NULL;
			d.type = (enum wl_op_type)type;
			d.phase = (enum wl_phase)phase;
			d.flops = get_f64(r);
			d.bytes = get_f64(r);
			d.time = (sim_time_t)get_u64(r);
			d.workspace = get_u64(r);
			uint8_t flags = get_u8(r);
			d.recomputable = flags & 1;
			d.inplace = (flags & 2) != 0;
			d.n_algos = get_u32(r);
			if (r->bad || flags > 3 || d.n_algos > WC_MAX_LIST ||
			    room((void **)&algos, &algos_cap, d.n_algos,
				 sizeof *algos) < 0) {
				why = "a bad op record";
				goto fail;
			}
			if (d.n_algos > anames_n) {
				char **p = realloc(anames,
						   d.n_algos * sizeof *p);
				if (!p) {
					why = "out of memory";
					goto fail;
				}
				anames = p;
				for (; anames_n < d.n_algos; anames_n++)
					if (!(anames[anames_n] =
						      malloc(GMS_PATH_MAX + 1))) {
						why = "out of memory";
						goto fail;
					}
			}
			for (uint32_t i = 0; i < d.n_algos; i++) {
				algos[i].name = get_str(r, anames[i]);
				algos[i].workspace = get_u64(r);
				algos[i].time_scale = get_f64(r);
				algos[i].time = 0;
			}
			if (r->bad) {
				why = "truncated";
				goto fail;
			}
			d.algos = d.n_algos ? algos : NULL;
			wl_set_block(w, block, region);
			if (wl_add_op(w, &d, &e) == WL_NONE) {
				why = e.msg;
				goto fail;
			}
		} else {
			why = "an unknown record";
			goto fail;
		}
	}
	if (!w) {
		why = "no workload record";
		goto fail;
	}
	if (wl_unread_input(w) != WL_NONE) {
		why = "an input no op reads";
		goto fail;
	}
	if (wl_finalize(w, &e) < 0) {
		why = e.msg;
		goto fail;
	}
	goto out;
fail:
	/* a short read gives zeros, which may fail a check before the
	 * shortness is seen */
	gms_errf(err, "%s", r->bad ? "truncated" : why);
	wl_free(w);
	w = NULL;
out:
	free(ids);
	free(algos);
	for (size_t i = 0; i < anames_n; i++)
		free(anames[i]);
	free(anames);
	return w;
}

struct wl_workload *wl_cache_read(const char *entry, const uint64_t key[2],
				  uint64_t size, int64_t batch,
				  enum wl_cache_status *status, gms_err *err)
{
	struct wc_r r = {0};
	struct wc_header hd;
	struct wl_workload *w = NULL;
	*status = WL_CACHE_MISS;
	r.f = fopen(entry, "rb");
	if (!r.f)
		return NULL;
	*status = WL_CACHE_CORRUPT;
	r.str = malloc(GMS_PATH_MAX + 1);
	r.str2 = malloc(GMS_PATH_MAX + 1);
	r.buf = malloc(WC_BLOCK);
	if (!r.str || !r.str2 || !r.buf) {
		gms_errf(err, "%s: out of memory", entry);
		goto out;
	}
	if (fread(&hd, sizeof hd, 1, r.f) != 1) {
		gms_errf(err, "%s: corrupt cache entry: shorter than its header",
			 entry);
		goto out;
	}
	if (memcmp(hd.magic, wc_magic, 8) != 0 || hd.version != WC_VERSION ||
	    hd.order != WC_ORDER) {
		gms_errf(err, "%s: corrupt cache entry: not a version %u entry "
			 "of this machine's byte order", entry, WC_VERSION);
		goto out;
	}
	if (hd.size != size || hd.key[0] != key[0] || hd.key[1] != key[1] ||
	    hd.batch != batch) {
		*status = WL_CACHE_STALE;
		goto out;
	}
	wl_hash_init(&r.ph);
	gms_err e = {{0}};
	w = replay(&r, &e);
	uint64_t ph[2];
	wl_hash_value(&r.ph, ph);
	const char *why = !w ? e.msg
			  : r.pos < r.len || refill(&r) ? "bytes after its end"
			  : r.got != hd.payload || ph[0] != hd.phash[0] ||
				  ph[1] != hd.phash[1]
			      ? "its payload does not match its hash"
			      : NULL;
	if (why) {
		gms_errf(err, "%s: corrupt cache entry: %s", entry, why);
		wl_free(w);
		w = NULL;
		goto out;
	}
	*status = WL_CACHE_HIT;
out:
	free(r.str);
	free(r.str2);
	free(r.buf);
	fclose(r.f);
	return w;
}
