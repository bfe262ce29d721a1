/*
 * cfg.h - YAML input with declared parameters (the ramulator2 way).
 *
 * Every YAML mapping the program reads is described by a table of prm_def:
 * key, type, default, range, help text and where the value lands in a C
 * struct. One table serves three purposes: parsing (cfg_parse_map), the
 * command line (prm_set_kv, for --set key=value) and documentation
 * (prm_print_help, for --help and `gpumemsim help`). Because parsing is
 * table-driven, an unknown key, a wrong type, a value out of range or a
 * missing required key is always an error naming file:line:column and key.
 *
 * Nested mappings and sequences are declared PRM_NODE: the parser checks
 * the key is known and stores the yaml node for the caller to walk.
 */
#ifndef GMS_CFG_H
#define GMS_CFG_H

#include "common.h"

#include <stdio.h>
#include <yaml.h>

enum prm_type {
	PRM_INT,    /* int64_t; decimal integer */
	PRM_BYTES,  /* uint64_t; integer or "16GiB", "512MB", ... */
	PRM_DOUBLE, /* double; "1e12", "0.75" */
	PRM_BOOL,   /* bool; true/false (also yes/no) */
	PRM_STR,    /* char[PRM_STR_MAX]; any scalar */
	PRM_PATH,   /* char[PRM_PATH_MAX]; a file or directory name */
	PRM_ENUM,   /* int; index of the value in choices[] */
	PRM_TIME,   /* sim_time_t; integer ns or "2.5ms", "10us" */
	PRM_NODE,   /* yaml_node_t *; a mapping or sequence the caller walks
		       (stored as found, of any kind: the caller checks it;
		       NULL when absent, for an optional one, i.e. def !=
		       NULL) */
};

#define PRM_STR_MAX 128
#define PRM_PATH_MAX GMS_PATH_MAX

struct prm_def {
	const char *key;	   /* YAML key / --set name */
	enum prm_type type;	   /* how the value is parsed and stored */
	const char *def;	   /* default as it would be written in YAML;
				      NULL = required */
	double min, max;	   /* inclusive range for numeric types; both 0
				      = unbounded (bytes/time: >= 0 always) */
	const char *const *choices; /* PRM_ENUM: NULL-terminated values */
	const char *help;	   /* one line for --help */
	size_t offset;		   /* offsetof() the field in the target struct */
};

/* A table ends with an entry whose key is NULL. */
#define PRM_END {NULL, 0, NULL, 0, 0, NULL, NULL, 0}

/* A parsed YAML file. */
struct cfg_doc {
	char *path;	     /* file name used in messages */
	yaml_document_t doc; /* libyaml's document tree */
};

/* Limits of every YAML input (README, "Input limits"), checked before
 * the document is built; an input past one is refused with
 * "file:line:col" of the place it is passed. Size: the shipped files are
 * at most 10 KiB and a hand-written workload of the largest generated
 * network (BERT-large) would be some hundreds; 16 MiB leaves room and
 * bounds the memory a document takes (libyaml's nodes are some 100
 * bytes for a scalar of a few). Depth: the shipped formats nest at most
 * 5 collections; libyaml's scanner does work per token proportional to
 * the flow nesting (quadratic time: 80 KB of '[' took 12 s), so 64. */
#define CFG_MAX_BYTES (16 << 20)
#define CFG_MAX_DEPTH 64

/* Parse the file at path. On a syntax error the message names
 * file:line:column and libyaml's problem. A file holds one document; a
 * second one is an error. Returns 0 and a document to free with cfg_free
 * (*out is NULL on failure). */
int cfg_load(struct cfg_doc **out, const char *path, gms_err *err);

/* Parse a YAML text held in memory; name is used in messages. */
int cfg_load_string(struct cfg_doc **out, const char *name, const char *text,
		    gms_err *err);

void cfg_free(struct cfg_doc *d);

/* The root node, or NULL for an empty document. */
yaml_node_t *cfg_root(struct cfg_doc *d);

/* Fill dst from the mapping node: defaults first, then each key of the
 * mapping, checked against defs. `what` names the mapping in messages
 * (e.g. "policy 'vdnn'"). Errors: node not a mapping, unknown key,
 * duplicate key, wrong type, out of range, missing required key. Messages
 * read "file:line:col: <what>: key '<key>': <problem>" (1-based; `what`
 * left out when NULL or ""); a NULL node (empty document) names only the
 * file. The first error stops the parse; dst may then hold some values. */
int cfg_parse_map(struct cfg_doc *d, yaml_node_t *node,
		  const struct prm_def *defs, void *dst, const char *what,
		  gms_err *err);

/* Like cfg_parse_map, but over the values already in dst: no defaults are
 * applied and missing required keys are not an error, so only the keys
 * present in the mapping change. For partial overrides (e.g. a hardware
 * profile's per-op-type compute figures over its class figures). All other
 * checks are those of cfg_parse_map. */
int cfg_parse_map_over(struct cfg_doc *d, yaml_node_t *node,
		       const struct prm_def *defs, void *dst,
		       const char *what, gms_err *err);

/* Every default of defs into dst, the required keys' fields left as they
 * are: a template for cfg_parse_map_from. 0, or -1 with a message (a
 * table's default that does not parse). */
int prm_defaults_of(const struct prm_def *defs, void *dst, gms_err *err);

/* cfg_parse_map with the defaults taken from `defaults` (size bytes, made
 * by prm_defaults_of over a struct of dst's type) instead of parsed from
 * their text for each mapping: the same values, checks and messages. For
 * a list of many mappings of one table (a streamed workload's ops,
 * where parsing the defaults was a tenth of the load; issue 37). */
int cfg_parse_map_from(struct cfg_doc *d, yaml_node_t *node,
		       const struct prm_def *defs, void *dst,
		       const void *defaults, size_t size, const char *what,
		       gms_err *err);

/* Set only the defaults of defs into dst (no YAML involved). A table whose
 * required keys have no default makes this fail with a message. */
int prm_set_defaults(const struct prm_def *defs, void *dst, gms_err *err);

/* Apply "key=value" (command line) to dst, checked like YAML. */
int prm_set_kv(const struct prm_def *defs, void *dst, const char *kv,
	       const char *what, gms_err *err);

/* Print the table: key, type, default, range/choices, help. */
void prm_print_help(const struct prm_def *defs, FILE *f, const char *indent);

/* Helpers for callers that walk PRM_NODE values themselves. */

/* "file:line:col" of a node, into buf; returns buf. */
const char *cfg_where(struct cfg_doc *d, const yaml_node_t *node, char *buf,
		      size_t n);

/* "file:line:col" of a mark (a place kept after its node is gone). */
const char *cfg_where_mark(struct cfg_doc *d, const yaml_mark_t *mark,
			   char *buf, size_t n);

/* Error located at node: "file:line:col: <formatted>". Returns -1. */
int cfg_errf(gms_err *err, struct cfg_doc *d, const yaml_node_t *node,
	     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Locate an error already in err at node: "file:line:col: <formatted>:
 * <the message>". Returns -1. */
int cfg_err_at(gms_err *err, struct cfg_doc *d, const yaml_node_t *node,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The scalar text of node, or NULL if it is not a scalar. */
const char *cfg_scalar(const yaml_node_t *node);

/* Number of items of a sequence node (0 if not a sequence) and item i. */
size_t cfg_seq_len(const yaml_node_t *node);
yaml_node_t *cfg_seq_item(struct cfg_doc *d, const yaml_node_t *node,
			  size_t i);

/* Number of pairs of a mapping node (0 if not a mapping); pair i's key and
 * value nodes (returns -1 and NULLs when i is out of range). */
size_t cfg_map_len(const yaml_node_t *node);
int cfg_map_pair(struct cfg_doc *d, const yaml_node_t *node, size_t i,
		 yaml_node_t **key, yaml_node_t **value);

/* The value node of the first pair of a mapping whose key is the scalar
 * `key`, or NULL (absent, or node not a mapping). For pointing messages
 * at a value after cfg_parse_map has accepted it. */
yaml_node_t *cfg_map_get(struct cfg_doc *d, const yaml_node_t *node,
			 const char *key);

/* ---- streaming: a file read event by event -----------------------------
 *
 * For inputs too large for a document tree (a workload of a million ops:
 * libyaml's document API took 2.9 GB and failed; issue 18). The caller
 * walks libyaml's events (yaml_parser_parse) and builds only the part it
 * needs now -- one list item -- into a small cfg_doc with
 * cfg_stream_node, so the cfg_parse_map tables and their messages serve
 * unchanged and memory does not grow with the file. Syntax errors,
 * CFG_MAX_DEPTH and the size limit read as for cfg_load. */

/* An open YAML file read as events. */
struct cfg_stream {
	yaml_parser_t parser; /* libyaml's parser over f */
	FILE *f;	      /* the file, rewound for each pass */
	char *path;	      /* file name used in messages */
	uint64_t max_bytes;   /* the file may hold at most this many bytes */
	uint64_t nread;	      /* bytes handed to the parser in this pass */
	bool too_big;	      /* the read handler found byte max_bytes + 1 */
	uint64_t max_item;    /* the most bytes read between two events */
	uint64_t since_event; /* bytes read since the last event */
	bool too_long;	      /* the read handler passed max_item */
	yaml_mark_t last;     /* where the last event ended */
	bool started;	      /* parser initialised (for cfg_stream_close) */
	int depth;	      /* collections open after the last event */
	/* called with each piece of the file as it is read (NULL: none;
	 * set after cfg_stream_open): a caller's hash of what was parsed */
	void (*on_read)(void *arg, const void *p, size_t n);
	void *on_read_arg;
};

/* The most bytes a stream reads without an event (cfg_stream.max_item):
 * libyaml builds a scalar whole before its event, so without a limit a
 * 2 GB `name:` was refused only after 36 s and 4.26 GB of memory (issue
 * 38). 1 MiB: the longest scalar of a generated 1M-op workload is a name
 * of some 30 bytes. The count includes the parser's read-ahead (at most
 * 16 KiB, its raw buffer) and a comment as long. */
#define CFG_MAX_ITEM ((uint64_t)1 << 20)

/* Open path for reading events, refusing it past max_bytes and an item
 * (a scalar, a comment) longer than CFG_MAX_ITEM. Returns 0, or
 * -1 with a message (the stream then needs no close, but may get one). */
int cfg_stream_open(struct cfg_stream *s, const char *path,
		    uint64_t max_bytes, gms_err *err);

/* Start again at the first byte (another pass); the file must be
 * seekable. */
int cfg_stream_rewind(struct cfg_stream *s, gms_err *err);

/* The next event into *e (to free with yaml_event_delete), checking the
 * nesting and size limits. On error *e holds nothing to free. */
int cfg_stream_next(struct cfg_stream *s, yaml_event_t *e, gms_err *err);

/* Build the node that starts with *first (a scalar or collection start;
 * consumed) into d, reading the rest of its events; *out is the node.
 * An alias is refused (messages say so). */
int cfg_stream_node(struct cfg_stream *s, yaml_event_t *first,
		    struct cfg_doc *d, yaml_node_t **out, gms_err *err);

/* Like cfg_stream_node, but a collection is added empty (its kind and
 * place only) and read past; *n_items (may be NULL) as cfg_stream_skip
 * gives it. */
int cfg_stream_stub(struct cfg_stream *s, yaml_event_t *first,
		    struct cfg_doc *d, yaml_node_t **out, size_t *n_items,
		    gms_err *err);

/* Read past the node that starts with *first (consumed); *n_items (may be
 * NULL) gets its number of direct children (a mapping's keys and values
 * count both). */
int cfg_stream_skip(struct cfg_stream *s, yaml_event_t *first,
		    size_t *n_items, gms_err *err);

/* After the first document's root node: the rest of the stream must hold
 * no second document (checked as cfg_load checks it). */
int cfg_stream_finish(struct cfg_stream *s, gms_err *err);

void cfg_stream_close(struct cfg_stream *s);

/* An empty document named `name`, to build nodes into; cfg_doc_clear
 * empties it again. */
struct cfg_doc *cfg_doc_new(const char *name, gms_err *err);
int cfg_doc_clear(struct cfg_doc *d, gms_err *err);

#endif
