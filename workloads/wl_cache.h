/*
 * wl_cache.h - a compact binary copy of a loaded workload YAML (issue 37).
 *
 * A large workload file takes seconds to load, nearly all of it libyaml's
 * parse (docs/speed-figures.md); loading it again from the cache replays
 * the builder calls the YAML made (wl_new, wl_add_tensor, wl_set_block,
 * wl_add_op, in their order, with their arguments) and finalizes, so the
 * workload is the YAML load's, field by field. The YAML stays the
 * source: an entry is used only when the file's content hash, its size
 * and the batch asked for are the entry's, and the entry's own payload
 * hash checks; anything else and the YAML is loaded and the entry
 * written again (all or nothing: a temporary renamed onto the name).
 *
 * Entries live in a directory (wl_cache_dir), one per workload file
 * (by its absolute path) and requested batch, named
 * <hash of the path>-<batch>.wlc; only files of at least
 * WL_CACHE_MIN_FILE bytes are cached.
 */
#ifndef GMS_WL_CACHE_H
#define GMS_WL_CACHE_H

#include "wl.h"

#include <stdbool.h>
#include <stdint.h>

/* The smallest file cached: 4 MiB (sim/heap.h's HEAP_HUGE_MIN_FILE, the
 * size past which a load is long enough to gain: a 4 MiB file holds some
 * 15,000 ops and takes about 0.2 s to parse). Below it the
 * hash, the look-up and the write would cost about what they save. */
#define WL_CACHE_MIN_FILE ((uint64_t)4 << 20)

/* A 128-bit hash of a byte stream, fed in any pieces: the same bytes
 * give the same value however they are split. Not cryptographic: it
 * tells a changed file or a damaged entry from the one it was made for. */
struct wl_hash {
	uint64_t a, b;		/* the two lanes */
	uint64_t n;		/* bytes fed */
	unsigned char tail[8];	/* the bytes of an unfinished word */
	unsigned nt;		/* how many */
};
void wl_hash_init(struct wl_hash *h);
void wl_hash_add(struct wl_hash *h, const void *p, size_t n);
/* The value (h is left as it was: more may be added). */
void wl_hash_value(const struct wl_hash *h, uint64_t out[2]);

/* The hash of the file at path (all of it) into key[2], its length into
 * *size; -1 when it cannot be read. */
int wl_hash_file(const char *path, uint64_t key[2], uint64_t *size);

/* What a cached load found. */
enum wl_cache_status {
	WL_CACHE_OFF,	  /* not used: no directory, a small or irregular
			     file, or a file changed while it was read */
	WL_CACHE_HIT,	  /* loaded from the entry */
	WL_CACHE_MISS,	  /* no entry: the YAML loaded, the entry written */
	WL_CACHE_STALE,	  /* an entry for other content: the YAML loaded,
			     the entry written again */
	WL_CACHE_CORRUPT, /* an entry that does not read back (damaged,
			     truncated, another format): the YAML loaded, the
			     entry written again, and why in `why` */
};

struct wl_cache_opts {
	const char *dir;    /* the cache directory; NULL: no cache */
	uint64_t min_bytes; /* the smallest file cached */
};

/* What a cached load did: its status, the entry's path and, for a
 * corrupt entry or a write that failed, why. */
struct wl_cache_report {
	enum wl_cache_status status;
	bool write_failed;	  /* the new entry could not be written */
	char entry[GMS_PATH_MAX]; /* the entry's path ("" when none) */
	char why[1024];		  /* the problem, for CORRUPT or write_failed */
};

/* The cache directory of this environment: $GPUMEMSIM_CACHE when set
 * ("" or "off": none), else $XDG_CACHE_HOME/gpumemsim, else
 * $HOME/.cache/gpumemsim; created if absent. NULL when there is none or
 * it cannot be created. buf holds the result. */
const char *wl_cache_dir(char *buf, size_t n);

/* A cache entry being written (by wl_yaml.c's loader as it builds). */
struct wl_cache_w;

/* Start an entry for the file with content hash key[2] and size, loaded
 * at the requested batch (0: the file's); NULL when it cannot be created
 * (why in err). */
struct wl_cache_w *wl_cache_w_open(const char *entry, const uint64_t key[2],
				   uint64_t size, int64_t batch,
				   gms_err *err);
void wl_cache_w_new(struct wl_cache_w *c, const char *name, int64_t batch);
void wl_cache_w_tensor(struct wl_cache_w *c, const char *name,
		       uint64_t bytes, enum wl_kind kind);
void wl_cache_w_op(struct wl_cache_w *c, uint32_t block, uint8_t region,
		   const struct wl_op_desc *d);
/* Finish (commit) or drop (abort) the entry; commit returns 0 or -1 with
 * err. Both free c. */
int wl_cache_w_commit(struct wl_cache_w *c, gms_err *err);
void wl_cache_w_abort(struct wl_cache_w *c);

/* The workload the entry holds for content key[2] of size bytes at the
 * requested batch, finalized; NULL with *status STALE (another file's
 * content or batch, or no entry: then MISS) or CORRUPT (why in err). */
struct wl_workload *wl_cache_read(const char *entry, const uint64_t key[2],
				  uint64_t size, int64_t batch,
				  enum wl_cache_status *status, gms_err *err);

/* The entry's path for the workload file at path and the requested
 * batch, into buf; NULL when the path cannot be resolved. */
const char *wl_cache_entry(const char *dir, const char *path, int64_t batch,
			   char *buf, size_t n);

/* wl_load_yaml with the cache of o (and what it did in *rep, may be
 * NULL). wl_load_yaml is this with wl_cache_dir and WL_CACHE_MIN_FILE,
 * printing a warning on stderr for a corrupt entry or a failed write. */
struct wl_workload *wl_load_yaml_cached(const char *path, int64_t batch,
					const struct wl_cache_opts *o,
					struct wl_cache_report *rep,
					gms_err *err);

#endif
