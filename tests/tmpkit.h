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

#endif
