/*
 * fuzz.h - what the libFuzzer harnesses (fuzz/<name>.c) share: each
 * defines LLVMFuzzerTestOneInput over one input format and is linked
 * either with libFuzzer (`make fuzz`, clang -fsanitize=fuzzer) or with
 * fuzz/replay_main.c, a driver that feeds it every file it is given (how
 * `make check` and `make asan` replay the corpora without clang).
 *
 * The loaders read paths, so the harness writes the bytes to a file of
 * its own (fz_path) first. The oracle beyond the sanitizers: a loader
 * that fails must say why (a non-empty message), fz_check.
 */
#ifndef GMS_FUZZ_H
#define GMS_FUZZ_H

#include "../sim/common.h"

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point (each harness defines it). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write data to this process's scratch file for the harness `name`
 * (suffix `ext`, e.g. ".yaml") and return its path; NULL when it cannot
 * be written (the input is then skipped). The file is reused by every
 * input of the process and removed at exit. */
const char *fz_path(const char *name, const char *ext, const uint8_t *data,
		    size_t size);

/* Abort (a finding) when rc < 0 and err holds no message. */
void fz_check(int rc, const gms_err *err);

#endif
