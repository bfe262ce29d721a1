/*
 * clikit.h - run the program of this test's own build tree (plain or
 * sanitized) as a user would, for the CLI and experiment tests. Include
 * after <cmocka.h>.
 */
#ifndef GMS_CLIKIT_H
#define GMS_CLIKIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifdef __SANITIZE_ADDRESS__
#define BIN "build-asan/gpumemsim"
#else
#define BIN "build/gpumemsim"
#endif

/* Run the shell command cmd; return the exit status and what it wrote
 * to stdout (caller frees). */
static inline int sh_cmd(const char *cmd, char **out)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, n = 0, r;
	char *buf = malloc(cap);
	while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
		n += r;
		if (n + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[n] = '\0';
	int st = pclose(p);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Run `gpumemsim ARGS` (stderr joined to stdout); return the exit status
 * and the output (caller frees). */
static inline int sh(const char *args, char **out)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s 2>&1", BIN, args);
	return sh_cmd(cmd, out);
}

/* Run `gpumemsim ARGS`; fail unless it exits `code` with `needle` (when
 * not NULL) in its output. */
static inline void expect(const char *args, int code, const char *needle)
{
	char *out;
	int rc = sh(args, &out);
	if (rc != code || (needle && !strstr(out, needle)))
		fail_msg("`%s` exited %d (want %d), output:\n%s\nwanted: %s",
			 args, rc, code, out, needle ? needle : "");
	free(out);
}

#endif
