/*
 * tmpkit.h - test input files: text written to a fresh temporary file.
 * Include after <cmocka.h>.
 */
#ifndef GMS_TMPKIT_H
#define GMS_TMPKIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write text to a new file /tmp/<stem>-XXXXXX; its name into path (at
 * least strlen(stem) + 13 bytes). */
static inline void tmp_text(char *path, const char *stem, const char *text)
{
	sprintf(path, "/tmp/%s-XXXXXX", stem);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A whole file's text (caller frees); the test fails if it is unreadable. */
static inline char *tmp_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *s = malloc((size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

#endif
