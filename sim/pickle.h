/*
 * pickle.h - a small writer of Python's pickle format, protocol 2, for the
 * memory snapshot (snapshot.h): dicts, lists, 2-tuples, str, int, bool and
 * None, nothing else. No Python is needed to write it.
 *
 * The opcodes are those of Python's Lib/pickle.py (and pickletools'
 * descriptions): PROTO 2 (\x80\x02), EMPTY_DICT '}', EMPTY_LIST ']', MARK
 * '(', SETITEMS 'u' (the key/value pairs since the mark into the dict
 * below it), APPENDS 'e' (the items since the mark into the list below
 * it), TUPLE2 \x86, BINUNICODE 'X' (4-byte little-endian length, UTF-8),
 * BININT 'J' (4-byte little-endian signed), LONG1 \x8a (1-byte length,
 * little-endian two's complement), NEWTRUE \x88, NEWFALSE \x89, NONE 'N',
 * STOP '.'. No memo: the unpickler needs none for a tree of values.
 */
#ifndef GMS_PICKLE_H
#define GMS_PICKLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

void pk_begin(FILE *f);	     /* PROTO 2 */
void pk_end(FILE *f);	     /* STOP */
void pk_dict(FILE *f);	     /* an empty dict, then MARK: key, value, ... */
void pk_dict_end(FILE *f);   /* SETITEMS */
void pk_list(FILE *f);	     /* an empty list, then MARK: items ... */
void pk_list_end(FILE *f);   /* APPENDS */
void pk_str(FILE *f, const char *s);
void pk_int(FILE *f, int64_t v);
void pk_uint(FILE *f, uint64_t v);
void pk_bool(FILE *f, bool v);
void pk_none(FILE *f);
void pk_tuple2_int(FILE *f, int64_t a, int64_t b);

#endif
