/*
 * wl_dtr.h - the DTR log scanner of wl_dtr.c, instruction by instruction,
 * for readers that build something other than a workload (the serial DTR
 * replay, policies/dtr_serial.c).
 *
 * wl_dtr_scan reads a log with the checks and messages of wl_load_dtr
 * ("path:line:col: ..."), and calls fn once per instruction that
 * completes, in log order, after the loader has checked it. Handles are
 * named by number: the n-th distinct name defined since the START is
 * handle n (0-based); a name released and defined again keeps its number,
 * so numbers follow the order in which names were first bound (the order
 * of a Python dict keyed by name). The pointers in an event are valid
 * during the call only.
 *
 * Its one reader is simrd's replay, so where the loader and simrd's
 * parser (parse/parse.py parse_file, uwsampl/dtr-prototype eff53cc)
 * differ, it follows simrd:
 *  - the recorded part begins after the FIRST ANNOTATE START (the loader:
 *    the last; a log may hold warm-up steps); a later START is no event;
 *  - a RELEASE of a name not bound since that START is skipped, and one
 *    of a name released already is a RELEASE of the tensor it named
 *    again (simrd's tensor_map keeps released names; the loader rejects
 *    both: "unknown handle").
 * Where simrd cannot replay a log at all it is not followed: a log
 * without START is read whole (simrd's pop() fails), and a name defined
 * again after its release is a new binding (simrd's parser asserts).
 */
#ifndef GMS_WL_DTR_H
#define GMS_WL_DTR_H

#include "wl.h"

/* What an instruction did. */
enum wl_dtr_kind {
	WL_DTR_START,	  /* ANNOTATE START: forget everything before */
	WL_DTR_BACKWARD,  /* ANNOTATE BACKWARD */
	WL_DTR_CONSTANT,  /* CONSTANT and its MEMORY line: handle, bytes */
	WL_DTR_CALL,	  /* CALL and its results' MEMORY/ALIAS lines */
	WL_DTR_MUTATE,	  /* MUTATE: args, mutate */
	WL_DTR_COPY,	  /* COPY: handle (DST) now names src's tensor */
	WL_DTR_COPY_FROM, /* COPY_FROM: handle (DST) drops its tensor and
			     names src's */
	WL_DTR_RELEASE,	  /* RELEASE: handle dropped */
};

/* One result of a CALL. */
struct wl_dtr_result {
	uint32_t handle; /* its handle */
	uint64_t bytes;	 /* MEMORY */
	int64_t alias;	 /* ALIAS: -1, or the index of the argument whose
			    storage it views */
};

/* One instruction, as fn sees it. */
struct wl_dtr_event {
	enum wl_dtr_kind kind;		   /* what it is */
	uint32_t line;			   /* the line that completed it */
	const char *name;		   /* CALL, MUTATE: the operator;
					      CONSTANT, RELEASE: the handle's
					      name; COPY*: DST */
	uint32_t handle;		   /* CONSTANT, RELEASE: the handle;
					      COPY, COPY_FROM: DST's */
	uint32_t src;			   /* COPY, COPY_FROM: SRC's handle */
	uint64_t bytes;			   /* CONSTANT: its MEMORY */
	int64_t time;			   /* CALL, MUTATE: TIME as logged, ns
					      (0 stays 0; none: 0) */
	bool timed;			   /* CALL, MUTATE: the log gave a TIME
					      (a log with SHAPES may leave it
					      out) */
	const uint32_t *args;		   /* CALL, MUTATE: ARGS' handles */
	uint32_t n_args;		   /* their number */
	const struct wl_dtr_result *res;   /* CALL: its results */
	uint32_t n_res;			   /* their number */
	const uint32_t *mutate;		   /* MUTATE: indices into args */
	uint32_t n_mutate;		   /* their number */
};

/* Called per instruction; a non-zero return stops the scan, which then
 * returns -1 (fn sets err). */
typedef int (*wl_dtr_fn)(void *ctx, const struct wl_dtr_event *ev,
			 gms_err *err);

/* Scan the log at path; 0, or -1 with err set. */
int wl_dtr_scan(const char *path, wl_dtr_fn fn, void *ctx, gms_err *err);

/* The same over len bytes of text (copied; NUL bytes are errors as in a
 * file); name stands for the path in messages. */
int wl_dtr_scan_mem(const char *name, const char *text, size_t len,
		    wl_dtr_fn fn, void *ctx, gms_err *err);

#endif
