/*
 * replay_main.c - the replay driver: runs a harness's
 * LLVMFuzzerTestOneInput over every file named on the command line
 * (directories: every regular file in them, sorted), as libFuzzer does
 * when given files. Built with the ordinary compiler, so a machine
 * without clang still replays the corpora (`make check`, `make asan`).
 * Prints one line with the count; a crash is the sanitizer's report.
 */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Feed one file; returns 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return -1;
	}
	size_t cap = 4096, n = 0;
	uint8_t *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf) {
		fprintf(stderr, "replay: %s: out of memory\n", path);
		return -1;
	}
	/* libFuzzer hands a copy of exactly n bytes */
	uint8_t *in = malloc(n ? n : 1);
	if (!in) {
		free(buf);
		return -1;
	}
	memcpy(in, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(in, n);
	free(in);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Feed every regular file of a directory, in name order. */
static int replay_dir(const char *dir, size_t *count)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "replay: %s: cannot open\n", dir);
		return -1;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		size_t l = strlen(dir) + strlen(e->d_name) + 2;
		if (!(names[n] = malloc(l))) {
			rc = -1;
			break;
		}
		snprintf(names[n++], l, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, cmp_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (rc == 0 && stat(names[i], &st) == 0 &&
		    S_ISREG(st.st_mode)) {
			rc = replay_file(names[i]);
			*count += rc == 0;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "replay: %s: no such file\n", argv[i]);
			return 1;
		}
		int rc = S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count)
					     : replay_file(argv[i]);
		if (rc < 0)
			return 1;
		count += !S_ISDIR(st.st_mode);
	}
	printf("replayed %zu inputs\n", count);
	return 0;
}
