/*
 * fuzz.c - the scratch file and the oracle of fuzz.h.
 */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The scratch file's path, for the atexit hook (one harness a process:
 * set once, by the first input, and never changed). */
static char fz_file[512];

static void fz_remove(void)
{
	if (fz_file[0])
		unlink(fz_file);
}

const char *fz_path(const char *name, const char *ext, const uint8_t *data,
		    size_t size)
{
	if (!fz_file[0]) {
		const char *dir = getenv("TMPDIR");
		snprintf(fz_file, sizeof fz_file, "%s/gms-fuzz-%s-%ld%s",
			 dir && *dir ? dir : "/tmp", name, (long)getpid(),
			 ext);
		atexit(fz_remove);
	}
	FILE *f = fopen(fz_file, "wb");
	if (!f)
		return NULL;
	size_t w = size ? fwrite(data, 1, size, f) : 0;
	if (fclose(f) != 0 || w != size)
		return NULL;
	return fz_file;
}

void fz_check(int rc, const gms_err *err)
{
	if (rc < 0 && !err->msg[0]) {
		fprintf(stderr, "fuzz: a loader failed without a message\n");
		abort();
	}
}
