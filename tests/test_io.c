/*
 * test_io.c - the program's files as a user meets them (issue 17): what
 * an output path may be, when a bad one is found, write errors, input
 * paths that are directories, messages that quote a file's content.
 * Runs the binary of its own build tree (plain or sanitized) through
 * /bin/sh, so a test can redirect its streams or limit its file size.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "clikit.h"

#include "../sim/common.h"
#include "../sim/heap.h"

#include <sys/resource.h>

#define WL "workloads/examples/tiny-cnn.yaml"

/* Run the shell line fmt, where each "@" stands for the program, with
 * stderr (and stdout unless the line redirects it) captured; return the
 * exit status and the output (caller frees). */
static int shx(char **out, const char *fmt, ...)
{
	char line[2048], cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	size_t n = (size_t)snprintf(cmd, sizeof cmd, "{ ");
	for (const char *p = line; *p && n + 64 < sizeof cmd; p++)
		if (*p == '@')
			n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s",
					      BIN);
		else
			cmd[n++] = *p;
	snprintf(cmd + n, sizeof cmd - n, "; } 2>&1");
	FILE *pp = popen(cmd, "r");
	assert_non_null(pp);
	size_t cap = 1 << 16, len = 0, r;
	char *buf = malloc(cap);
	while ((r = fread(buf + len, 1, cap - len - 1, pp)) > 0) {
		len += r;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	int st = pclose(pp);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* shx, and the status and a piece of the output checked. */
static void expect_sh(int code, const char *needle, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	char *out;
	int rc = shx(&out, "%s", line);
	if (rc != code || (needle && !strstr(out, needle)))
		fail_msg("`%s` exited %d (want %d), output:\n%s\nwanted: %s",
			 line, rc, code, out, needle ? needle : "");
	free(out);
}

/* A fresh scratch directory /tmp/gms-io-<pid>-<tag> (removed first). */
static void scratch(char *dir, size_t n, const char *tag)
{
	snprintf(dir, n, "/tmp/gms-io-%ld-%s", (long)getpid(), tag);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
	assert_int_equal(system(cmd), 0);
}

static void unscratch(const char *dir)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* Defect 2: a symlink or a FIFO at an output path was replaced by the
 * rename of the temporary (a device node too, as root). Now refused with
 * the reason, and left as it was. */
/* gms_fmt_mib6 / gms_fmt_ms6 against printf's own "%.6f" (libc, the
 * reference they replace): every fraction of 3 MiB (3 x 2^20 byte
 * counts: 192 exact ties among them, which glibc rounds to even), byte
 * counts up to 2^53 + 1 (past it printf itself), and nanoseconds from 0
 * to 10^6 one by one, then 10^6 pseudo-random ones up to the exact
 * path's bound 2^32 x 10^6 and past it, and -1; gms_fmt_u64 against
 * printf's PRIu64 on the same numbers and every power of ten and its
 * neighbours. */
static void fixed6_cmp(const char *got, size_t n, const char *want)
{
	if (n != strlen(want) || memcmp(got, want, n) != 0)
		fail_msg("wrote %.*s, printf writes %s", (int)n, got, want);
}

static void test_put_fixed6(void **state)
{
	(void)state;
	char got[GMS_FIXED6_MAX], want[64];
	for (uint64_t n = 0; n < 3 * GMS_MIB; n++) {
		snprintf(want, sizeof want, "%.6f", (double)n / (double)GMS_MIB);
		fixed6_cmp(got, gms_fmt_mib6(got, n), want);
		snprintf(want, sizeof want, "%" PRIu64, n);
		fixed6_cmp(got, gms_fmt_u64(got, n), want);
	}
	const uint64_t big[] = {((uint64_t)1 << 53) - 1, (uint64_t)1 << 53,
				((uint64_t)1 << 53) + 1, 123456789012345u,
				UINT64_MAX};
	for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
		snprintf(want, sizeof want, "%.6f",
			 (double)big[i] / (double)GMS_MIB);
		fixed6_cmp(got, gms_fmt_mib6(got, big[i]), want);
		snprintf(want, sizeof want, "%" PRIu64, big[i]);
		fixed6_cmp(got, gms_fmt_u64(got, big[i]), want);
	}
	for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10)
		for (uint64_t v = p - 1; v <= p + 1; v++) {
			snprintf(want, sizeof want, "%" PRIu64, v);
			fixed6_cmp(got, gms_fmt_u64(got, v), want);
		}
	uint64_t x = 88172645463325252u; /* xorshift64 */
	const int64_t lim = (int64_t)4294967296 * 1000000;
	for (int64_t i = -1; i < 2000000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int64_t t = i <= 1000000 ? i
			    : (int64_t)(x % (uint64_t)(lim + lim / 8));
		snprintf(want, sizeof want, "%.6f", (double)t / 1e6);
		fixed6_cmp(got, gms_fmt_ms6(got, t), want);
		snprintf(want, sizeof want, "%" PRIu64, x);
		fixed6_cmp(got, gms_fmt_u64(got, x), want);
	}
}

static void test_output_not_regular_refused(void **state)
{
	(void)state;
	char d[256], p[400];
	scratch(d, sizeof d, "nonreg");
	snprintf(p, sizeof p, "%s/link.json", d);
	assert_int_equal(symlink("target.json", p), 0);
	expect_sh(2, "is a symlink; output files are regular files only",
		  "@ simulate " WL " --trace %s", p);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	snprintf(p, sizeof p, "%s/fifo", d);
	assert_int_equal(mkfifo(p, 0600), 0);
	expect_sh(2, "is a FIFO", "@ simulate " WL " --schedule %s", p);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* (a device node takes the same path: not tried, since before the
	 * fix the test itself would replace it) */
	unscratch(d);
}

#define EXP "tests/fixtures/exp/chain3-batches.yaml"

/* Defect 4: a bad --out, --trace or --schedule was found after the whole
 * experiment ran (exit 1, the work lost). Now every output location is
 * made and checked first: exit 2 and no run (no "rows in" line, no
 * report). */
static void test_bad_output_found_first(void **state)
{
	(void)state;
	char d[256], f[400];
	scratch(d, sizeof d, "early");
	snprintf(f, sizeof f, "%s/file", d);
	FILE *x = fopen(f, "w");
	assert_non_null(x);
	fclose(x);
	char *out;
	/* --out under a regular file: no directory can be made there */
	assert_int_equal(shx(&out, "@ run " EXP " --quiet --out %s/sub", f),
			 2);
	assert_non_null(strstr(out, "output directory"));
	assert_null(strstr(out, "summary:"));
	free(out);
	assert_int_equal(
		shx(&out, "@ run " EXP " --out %s/o --trace %s/no/t.json", d,
		    d),
		2);
	assert_non_null(strstr(out, "--trace: "));
	assert_null(strstr(out, "rows in"));
	free(out);
	assert_int_equal(shx(&out, "@ run " EXP " --out %s/o --schedule %s/x",
			     d, f),
			 2);
	assert_non_null(strstr(out, "--schedule: "));
	free(out);
	/* a set file that is a directory */
	snprintf(f, sizeof f, "%s/o2/runs.json", d);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "mkdir -p %s", f);
	assert_int_equal(system(cmd), 0);
	expect_sh(2, "runs.json: is a directory", "@ run " EXP " --out %s/o2",
		  d);
	/* simulate: no report before the refusal */
	assert_int_equal(
		shx(&out, "@ simulate " WL " --trace %s/no/t.json", d), 2);
	assert_non_null(strstr(out, "--trace: "));
	assert_null(strstr(out, "peak allocated"));
	free(out);
	unscratch(d);
}

/* Defect 6: write errors were ignored (`simulate > /dev/full` exited 0).
 * Standard output is checked on close: exit 1 with a message. */
static void test_stdout_write_error(void **state)
{
	(void)state;
	expect_sh(1, "standard output: write error",
		  "@ simulate " WL " > /dev/full");
	expect_sh(1, "standard output: write error",
		  "@ list policies > /dev/full");
}

/* Defect 7: `simulate --budget 1` exited 2 (bad input) but printed an
 * empty report to stdout first. Now the message only. */
static void test_budget_below_least_no_report(void **state)
{
	(void)state;
	char *out;
	assert_int_equal(shx(&out, "@ simulate " WL " --budget 1 2>/dev/null"),
			 2);
	assert_string_equal(out, ""); /* nothing on stdout */
	free(out);
	expect_sh(2, "budget 1 is below", "@ simulate " WL " --budget 1");
}

/* Defect 7: a failed --trace write in simulate printed empty `FAILED:`
 * and `gpumemsim:` lines. The trace is made to fail as it is written: a
 * file size limit of 1 KiB (ulimit -f 1, SIGXFSZ ignored so the write
 * returns EFBIG) against a trace of tiny-cnn's 3 iterations, which is
 * longer. Both lines now carry the write's error. */
static void test_trace_write_failure_reported(void **state)
{
	(void)state;
	char d[256];
	scratch(d, sizeof d, "xfsz");
	char *out;
	int rc = shx(&out,
		     "trap '' XFSZ; ulimit -f 1; @ simulate " WL
		     " --trace %s/t.json",
		     d);
	if (rc != 1 || strstr(out, "FAILED: \n") ||
	    strstr(out, "gpumemsim: \n") ||
	    !strstr(out, "FAILED: ") ||
	    !strstr(out, "t.json: write failed"))
		fail_msg("exit %d, output:\n%s", rc, out);
	/* said on stderr once, and in the report once */
	const char *a = strstr(out, "gpumemsim: ");
	assert_non_null(a);
	assert_non_null(strstr(a, "write failed"));
	assert_null(strstr(strstr(a, "write failed") + 1, "gpumemsim: "));
	free(out);
	unscratch(d);
}

#define REG "tests/fixtures/fuzz/regress/"

/* Defect 7: an input tensor no op reads (y, written at line 5, column
 * 12 of the fixture: `  - {name: y` puts the name's value there) loaded,
 * then the run failed with "still in at the end of iteration 0". Now
 * refused at load with its location. */
static void test_unread_input_rejected_at_load(void **state)
{
	(void)state;
	expect_sh(2, "workload-unread-input.yaml:5:12: tensor 'y'",
		  "@ simulate " REG "workload-unread-input.yaml");
}

/* Defect 7: a directory given where a file is expected reported "YAML
 * reader error: input error" (or a read error). Every file input says it
 * is a directory: experiment, workload YAML, profile, DTR log, CSV,
 * schedule, measurement; and a workload file in an experiment. */
static void test_directory_as_input(void **state)
{
	(void)state;
	char d[256];
	scratch(d, sizeof d, "dirin");
	const char *want = "is a directory, not a file";
	char cmd[1200];
	snprintf(cmd, sizeof cmd,
		 "mkdir %s/e.yaml %s/w.log %s/m.csv %s/s.sched", d, d, d, d);
	assert_int_equal(system(cmd), 0);
	expect_sh(2, want, "@ run %s/e.yaml --out %s/o", d, d);
	expect_sh(2, want, "@ simulate %s/e.yaml", d);
	expect_sh(2, want, "@ simulate " WL " --hw %s/e.yaml", d);
	expect_sh(2, want, "@ simulate %s/w.log", d);
	expect_sh(2, want, "@ fit %s/m.csv -o %s/p.yaml", d, d);
	expect_sh(2, want, "@ compare %s/s.sched %s/m.csv --out %s/c", d, d,
		  d);
	/* the measurement: after a schedule that reads */
	expect_sh(0, NULL,
		  "@ simulate " WL " --budget 6MiB --schedule %s/ok.sched "
		  ">/dev/null",
		  d);
	expect_sh(2, want, "@ compare %s/ok.sched %s/m.csv --out %s/c", d, d,
		  d);
	expect_sh(2, "regress: is a directory, not a file",
		  "@ run " REG "exp-directory-as-file.yaml --out %s/o", d);
	unscratch(d);
}

/* Issue 38, items 1 and 2: the DTR/recorded log, calibration CSV,
 * measurement CSV, schedule log and shard readers had no size limit: a
 * symlink to /dev/zero, or one 2 GB line, grew memory until allocation
 * failed (15-35 s, about 2.1 GB each), then a wrong message ("empty
 * file", "ends before the header"); a workload YAML refused a 2 GB
 * `name:` only after 36 s and 4.26 GB. Now each is refused at its limit,
 * "too large" with the limit: a line of more than GMS_MAX_LINE = 1 MiB
 * (a line of 1048577 bytes here, and /dev/zero: one endless line), a
 * streamed YAML item of more than CFG_MAX_ITEM = 1 MiB (a 2 MiB name). */
static void test_readers_capped(void **state)
{
	(void)state;
	char d[256], cmd[2400];
	scratch(d, sizeof d, "cap");
	snprintf(cmd, sizeof cmd,
		 "cd %s && head -c 1048577 /dev/zero | tr '\\0' a > line && "
		 "echo >> line && for x in z-4-x.log z.csv z.sched z.shard; do "
		 "ln -s /dev/zero $x; done && for x in l-4-x.log l.csv "
		 "l.sched l.shard; do cp line $x; done && "
		 "{ printf 'name: '; tr -d '\\n' < line; tr -d '\\n' < line; "
		 "echo; grep -v '^name: chain3' $OLDPWD/tests/fixtures/chain3.yaml; "
		 "} > big.yaml",
		 d);
	assert_int_equal(system(cmd), 0);
	expect_sh(0, NULL,
		  "@ simulate " WL " --budget 6MiB --schedule %s/ok.sched "
		  ">/dev/null",
		  d);
	const char *line = "1: too large: a line of more than 1048576 bytes";
	for (int i = 0; i < 2; i++) {
		char z = "zl"[i];
		expect_sh(2, line, "@ simulate %s/%c-4-x.log", d, z);
		expect_sh(2, line, "@ dtr %s/%c-4-x.log", d, z);
		expect_sh(2, line, "@ fit %s/%c.csv -o %s/p.yaml", d, z, d);
		expect_sh(2, line, "@ compare %s/%c.sched %s/%c.csv --out %s/c",
			  d, z, d, z, d);
		expect_sh(2, line, "@ compare %s/ok.sched %s/%c.csv --out %s/c",
			  d, d, z, d);
		expect_sh(2, line, "@ merge %s/%c.shard --out %s/m", d, z, d);
	}
	expect_sh(2, "too large: more than 1048576 bytes after here",
		  "@ simulate %s/big.yaml", d);
	expect_sh(2, NULL, "ls %s/p.yaml %s/c %s/m 2>/dev/null", d, d, d);
	unscratch(d);
}

/* Issue 38, item 7: output paths checked before the work, and nothing
 * left of a refusal. `simulate --trace ''` failed only at the rename,
 * after the run; `fit -o DIR/missing/p.yaml` after the fit; `compare
 * --out D` with a symlink at D/trace.json wrote compare.csv and
 * summary.txt, then refused (half a set); `run --trace` into a missing
 * folder left the new, empty --out folder. And two values refused:
 * `simulate --iterations 1001` (an experiment's limit is 1000; 1e8 took
 * 7.5 GB) and `dtr --budget 0`. */
static void test_outputs_checked_first(void **state)
{
	(void)state;
	char d[256], cmd[800];
	scratch(d, sizeof d, "first");
	expect_sh(2, "--trace: an empty output path",
		  "@ simulate " WL " --trace ''");
	expect_sh(2, "gpumemsim: -o: ",
		  "@ fit tests/fixtures/fuzz/calib/synthetic.csv -o "
		  "%s/missing/p.yaml",
		  d);
	snprintf(cmd, sizeof cmd, "mkdir -p %s/c && ln -s /dev/null %s/c/trace.json",
		 d, d);
	assert_int_equal(system(cmd), 0);
	expect_sh(2, "trace.json: is a symlink",
		  "@ compare tests/fixtures/fuzz/sched/tiny-cnn-ondemand.sched "
		  "tests/fixtures/fuzz/msr/tiny-cnn-ondemand.csv --out %s/c",
		  d);
	expect_sh(0, NULL, "test ! -e %s/c/compare.csv", d);
	expect_sh(2, "--trace", "@ run " EXP " --out %s/nd/a --trace %s/no/t.json",
		  d, d);
	expect_sh(0, NULL, "test ! -e %s/nd", d);
	expect_sh(2, "--iterations needs an integer from 1 to 1000",
		  "@ simulate " WL " --iterations 1001");
	expect_sh(2, "--budget: '0' is not a positive",
		  "@ dtr tests/fixtures/dtr-1ms.log --budget 0");
	unscratch(d);
}

/* Result files follow the umask (issue 38, item 7): they were 0644 under
 * any umask (mkstemp's 0600, then fchmod 0644). Under umask 027 a trace
 * and a result set's files are 0640, under 002 0664: 0666 less the
 * mask, as open(2) makes a file. */
static void test_files_follow_umask(void **state)
{
	(void)state;
	char d[256];
	scratch(d, sizeof d, "umask");
	expect_sh(0, "640 640 640",
		  "umask 027; @ simulate " WL " --trace %s/t.json >/dev/null "
		  "2>&1; @ run " EXP " --quiet --out %s/o >/dev/null; stat -c "
		  "%%a %s/t.json %s/o/summary.csv %s/o/runs.json | tr '\\n' ' '",
		  d, d, d, d, d);
	expect_sh(0, "664", "umask 002; @ simulate " WL " --trace %s/u.json "
			    ">/dev/null 2>&1; stat -c %%a %s/u.json",
		  d, d);
	unscratch(d);
}

/* sch_check accepted an iteration whose end precedes its kernels (issue
 * 38, item 7): the seed schedule's iteration 0 ends after 1 ns, before
 * its first kernel does. */
static void test_sched_end_before_work(void **state)
{
	(void)state;
	char d[256];
	scratch(d, sizeof d, "schend");
	expect_sh(2, "line 74: iteration 0, seq 0 (end): the iteration ends "
		     "before the work queued in it",
		  "sed 's/^end i=0 time=.*/end i=0 time=1/' "
		  "tests/fixtures/fuzz/sched/tiny-cnn-ondemand.sched > "
		  "%s/s.sched && @ compare %s/s.sched "
		  "tests/fixtures/fuzz/msr/tiny-cnn-ondemand.csv --out %s/c",
		  d, d, d);
	unscratch(d);
}

/* Short of memory (issue 38, item 7): under `ulimit -v 50000` simulate
 * exited 1 without a word. glibc's heaps grew by the 64 MiB top pad
 * (sim/heap.h), more than the whole limit, so every malloc failed, and
 * the first (of the command line) returned silently. The pad is now a
 * 16th of a limit (50000 KiB: 3.05 MiB) and the run completes; a failed
 * allocation of the command line says "out of memory". heap_top_pad
 * under a 32 MiB RLIMIT_DATA, in a child: 2 MiB. (The run is left out
 * under ASan, whose shadow memory alone exceeds any such limit.) */
static void test_memory_limit(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {32 << 20, 32 << 20};
		_exit(setrlimit(RLIMIT_DATA, &rl) != 0	       ? 2
		      : heap_top_pad() == (2 << 20) ? 0
						      : 1);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
#ifndef __SANITIZE_ADDRESS__
	expect_sh(0, "iteration time     12.000 ms",
		  "ulimit -v 50000; @ simulate tests/fixtures/chain3.yaml");
#endif
}

/* Start-up (issue 37): a one-workload command re-executes for huge pages
 * only for a workload file of at least HEAP_HUGE_MIN_FILE (4 MiB) bytes:
 * a small file, an option, a missing path or a directory do not; a file
 * of exactly 4 MiB (sparse, made with ftruncate) does. */
static void test_worth_huge(void **state)
{
	(void)state;
	char big[] = "/tmp/gms-huge-XXXXXX";
	int fd = mkstemp(big);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, HEAP_HUGE_MIN_FILE), 0);
	close(fd);
	char *small[] = {"gpumemsim", "simulate", "tests/fixtures/chain3.yaml",
			 "--quiet", "/nonexistent", "/tmp", NULL};
	assert_false(heap_worth_huge(6, small));
	char *large[] = {"gpumemsim", "simulate", "--quiet", big, NULL};
	assert_true(heap_worth_huge(4, large));
	fd = open(big, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, HEAP_HUGE_MIN_FILE - 1), 0);
	close(fd);
	assert_false(heap_worth_huge(4, large));
	unlink(big);
}

/* Invalid UTF-8 went raw into trace.json (not JSON, RFC 8259 8.1) and
 * into a fitted profile's metadata (a YAML file libyaml then refused to
 * load) (issue 38, item 7). Each byte not part of well-formed UTF-8
 * (Unicode table 3-7) is now U+FFFD; well-formed text is kept. */
static void test_invalid_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} t[] = {
		{"caf\xc3\xa9", "\"caf\xc3\xa9\""},	       /* kept */
		{"\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""}, /* U+1F600 */
		{"re\xfflu", "\"re\\ufffdlu\""},
		{"\xc0\xaf", "\"\\ufffd\\ufffd\""},	     /* overlong */
		{"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""}, /* surrogate */
		{"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
		{"x\xe2\x82", "\"x\\ufffd\\ufffd\""}, /* cut short */
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);
		assert_non_null(f);
		gms_json_str(f, t[i].in);
		fclose(f);
		assert_string_equal(buf, t[i].out);
		free(buf);
	}
	char d[256];
	scratch(d, sizeof d, "utf8");
	/* a DTR log whose op and tensor names are not UTF-8 */
	expect_sh(0, NULL,
		  "sed 's/\"relu\"/\"re\\xfflu\"/' tests/fixtures/dtr-1ms.log > "
		  "%s/u-1-x.log && grep -q \"$(printf 're\\377lu')\" "
		  "%s/u-1-x.log && @ simulate %s/u-1-x.log --trace %s/t.json",
		  d, d, d, d);
	expect_sh(0, NULL, "grep -q 're\\\\ufffdlu' %s/t.json && ! grep -q "
			   "\"$(printf '\\377')\" %s/t.json",
		  d, d);
	/* a calibration whose device name is not */
	expect_sh(0, NULL,
		  "sed 's/^# device: .*/# device: GPU \\xff\\xfe/' "
		  "tests/fixtures/fuzz/calib/synthetic.csv > %s/m.csv && "
		  "@ fit %s/m.csv -o %s/p.yaml >/dev/null && @ simulate " WL
		  " --hw %s/p.yaml >/dev/null",
		  d, d, d, d);
	unscratch(d);
}

/* The limits of issue 38 as parameters: a whole file (gms_read_all) and
 * line by line (gms_in_line), with limits of 10 bytes a file and 4 a
 * line: a file of 10 bytes and lines of 4 are read, one more byte of
 * either is refused with the limit named. */
static void test_read_limits(void **state)
{
	(void)state;
	char d[256], p[300];
	scratch(d, sizeof d, "lim");
	snprintf(p, sizeof p, "%s/f", d);
	const struct gms_limit lim = {10, 4, "a test input"};
	const char *ok[] = {"abcd\nefgh\n", "abcd\nefg\n"};
	const char *bad[] = {"abcd\nefgh\nx", "abcde\n", "ab\nabcde"};
	const char *why[] = {"f: too large: more than 10 bytes (0 MiB, the "
			     "limit of a test input;",
			     "f:1: too large: a line of more than 4 bytes "
			     "(the limit of a line of a test input;",
			     "f:2: too large: a line of more than 4 bytes"};
	for (int i = 0; i < 5; i++) {
		const char *t = i < 2 ? ok[i] : bad[i - 2];
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fputs(t, f);
		assert_int_equal(fclose(f), 0);
		gms_err err = {0};
		size_t len = 0;
		char *all = gms_read_all(p, &lim, &len, &err);
		/* the same line by line */
		f = fopen(p, "r");
		assert_non_null(f);
		struct gms_in in = {.f = f, .path = p, .lim = lim};
		char *buf = NULL;
		size_t cap = 0, got = 0;
		ptrdiff_t n;
		gms_err err2 = {0};
		while ((n = gms_in_line(&in, &buf, &cap, &err2)) >= 0)
			got += (size_t)n;
		fclose(f);
		free(buf);
		if (i < 2) {
			if (!all)
				fail_msg("%s", err.msg);
			assert_int_equal(len, strlen(t));
			assert_string_equal(all, t);
			assert_int_equal(n, -1);
			assert_int_equal(got, strlen(t));
		} else {
			assert_null(all);
			assert_non_null(strstr(err.msg, why[i - 2]));
			assert_int_equal(n, -2);
			assert_non_null(strstr(err2.msg, why[i - 2]));
		}
		free(all);
	}
	unscratch(d);
}

/* gms_in_line reads in blocks of GMS_IN_BLOCK (16384) bytes: lines that
 * end just before, at and past a block's end, a line over three blocks
 * with NUL bytes in it, and a last line without '\n', each read back
 * whole with its length; and the limits where they fall in a later
 * block: a line of 20001 bytes over a limit of 20000 (its line named),
 * and a file one byte over 50000 at a line's '\n' (the file named). */
static void test_in_line_blocks(void **state)
{
	(void)state;
	char d[256], p[300];
	scratch(d, sizeof d, "blk");
	snprintf(p, sizeof p, "%s/f", d);
	/* text lengths, '\n' not counted; the last line has none */
	const size_t len[] = {16383, 0, 16382, 1, 40000, 7, 16384, 5};
	const size_t nl = sizeof len / sizeof *len;
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	for (size_t i = 0; i < nl; i++) {
		for (size_t j = 0; j < len[i]; j++)
			putc(j % 1000 == 999 ? '\0' : 'a' + (int)((i + j) % 26),
			     f);
		if (i + 1 < nl)
			putc('\n', f);
	}
	assert_int_equal(fclose(f), 0);
	const struct gms_limit big = {1 << 20, 1 << 19, "a test input"};
	f = fopen(p, "rb");
	assert_non_null(f);
	struct gms_in in = {.f = f, .path = p, .lim = big};
	char *buf = NULL;
	size_t cap = 0, total = 0;
	for (size_t i = 0; i < nl; i++) {
		gms_err err = {0};
		ptrdiff_t n = gms_in_line(&in, &buf, &cap, &err);
		size_t want = len[i] + (i + 1 < nl);
		assert_int_equal(n, (ptrdiff_t)want);
		assert_int_equal(buf[n], '\0');
		for (size_t j = 0; j < len[i]; j++)
			assert_int_equal(buf[j],
					 j % 1000 == 999
						 ? '\0'
						 : 'a' + (int)((i + j) % 26));
		total += want;
		assert_int_equal(in.nread, total);
		assert_int_equal(in.line, (long)i + 1);
	}
	gms_err err = {0};
	assert_int_equal(gms_in_line(&in, &buf, &cap, &err), -1);
	assert_true(gms_in_end(&in));
	fclose(f);
	/* the limits, past the first block */
	const struct {
		size_t a, b; /* two lines' text lengths */
		struct gms_limit lim;
		long line; /* the line gms_in_line refuses */
		const char *why;
	} lims[] = {
		{10000, 20001, {1 << 20, 20000, "a test input"}, 2,
		 "f:2: too large: a line of more than 20000 bytes"},
		{10000, 20000, {1 << 20, 20000, "a test input"}, 0, NULL},
		/* 10001 + 39999 = 50000 bytes, then the '\n' is one more */
		{10000, 39999, {50000, 1 << 19, "a test input"}, 2,
		 "f: too large: more than 50000 bytes"},
		{10000, 39998, {50000, 1 << 19, "a test input"}, 0, NULL},
		/* the 30001st byte is the 20000th of line 2: both limits
		 * at the same byte (the file's named), or the line's one
		 * byte sooner */
		{10000, 25000, {30000, 19999, "a test input"}, 2,
		 "f: too large: more than 30000 bytes"},
		{10000, 25000, {30000, 19998, "a test input"}, 2,
		 "f:2: too large: a line of more than 19998 bytes"},
	};
	for (size_t c = 0; c < sizeof lims / sizeof *lims; c++) {
		f = fopen(p, "wb");
		assert_non_null(f);
		for (size_t j = 0; j < lims[c].a; j++)
			putc('x', f);
		putc('\n', f);
		for (size_t j = 0; j < lims[c].b; j++)
			putc('y', f);
		putc('\n', f);
		assert_int_equal(fclose(f), 0);
		f = fopen(p, "rb");
		assert_non_null(f);
		struct gms_in in2 = {.f = f, .path = p, .lim = lims[c].lim};
		ptrdiff_t n;
		gms_err e2 = {0};
		while ((n = gms_in_line(&in2, &buf, &cap, &e2)) >= 0)
			;
		fclose(f);
		if (!lims[c].why) {
			assert_int_equal(n, -1);
			assert_int_equal(in2.nread, lims[c].a + lims[c].b + 2);
			continue;
		}
		assert_int_equal(n, -2);
		assert_int_equal(in2.line, lims[c].line);
		if (!strstr(e2.msg, lims[c].why))
			fail_msg("case %zu: %s", c, e2.msg);
	}
	free(buf);
	unscratch(d);
}

/* gms_read_all reads 65,535 bytes first (a 64 KiB buffer less the NUL),
 * and counts a line's length across reads (issue 37 made it a memchr a
 * line): with a line limit of 65,540, "a\n" and a line of 65,540 bytes
 * (ending in the second read) are read whole; one byte more is refused
 * as line 2. */
static void test_read_line_across_reads(void **state)
{
	(void)state;
	char d[256], p[300];
	scratch(d, sizeof d, "lim2");
	snprintf(p, sizeof p, "%s/f", d);
	const struct gms_limit lim = {1 << 20, 65540, "a test input"};
	for (int extra = 0; extra < 2; extra++) {
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fputs("a\n", f);
		for (int i = 0; i < 65540 + extra; i++)
			fputc('x', f);
		fputc('\n', f);
		assert_int_equal(fclose(f), 0);
		gms_err err = {0};
		size_t len = 0;
		char *all = gms_read_all(p, &lim, &len, &err);
		if (!extra) {
			if (!all)
				fail_msg("%s", err.msg);
			assert_int_equal(len, 2 + 65540 + 1);
		} else {
			assert_null(all);
			assert_non_null(strstr(err.msg, "f:2: too large: a line "
						       "of more than 65540 "
						       "bytes"));
		}
		free(all);
	}
	unscratch(d);
}

/* Defect 7: messages quoted a file's content without limit (`--hw
 * /etc/passwd` printed the file). The fixture's budget is "1", \x01, a
 * line break and 100 A's: quoted as its first 64 bytes (1, \x01, \n and
 * 61 A's: 3 + 61 = 64), escaped, then "...". */
static void test_quoted_content_capped(void **state)
{
	(void)state;
	char want[128] = "found '1\\x01\\n";
	memset(want + strlen(want), 'A', 61);
	strcat(want, "...'");
	char a100[101];
	memset(a100, 'A', 100);
	a100[100] = '\0';
	char *out;
	assert_int_equal(shx(&out, "@ run " REG "exp-quoted-content.yaml"), 2);
	if (!strstr(out, want) || strstr(out, a100))
		fail_msg("output:\n%s\nwanted: %s", out, want);
	free(out);
	/* a file that is no YAML mapping: its first line, cut */
	assert_int_equal(shx(&out, "@ simulate " WL " --hw /etc/passwd"), 2);
	assert_non_null(strstr(out, "...'"));
	assert_true(strlen(out) < 400);
	free(out);
}

/* Defect 7: paths in an experiment file were capped at 127 characters
 * (a string parameter's limit). The fixture's hw and workload file are
 * longer (205 and 266 characters, ../ repeated) and run. */
static void test_long_paths_in_experiment(void **state)
{
	(void)state;
	char d[256];
	scratch(d, sizeof d, "long");
	expect_sh(0, "summary: ", "@ run " REG "exp-long-paths.yaml --quiet --out %s",
		  d);
	unscratch(d);
}

/* The text of a file, or NULL when it does not exist (caller frees). */
static char *slurp_or_null(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 16);
	assert_non_null(buf);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Defect 7: a result set could be half-written (summary.csv without
 * runs.json) and a stale plot.png survived `plot: false`. chain3-batches'
 * summary.csv is 6410 bytes and its runs.json 48224 (the files of a
 * plain run): with a file size limit of 20 KiB the first fits and the
 * second fails. The set is now written into a temporary directory and
 * moved in whole: the old summary.csv stays as it was, no temporary is
 * left. A successful run removes the stale plot.png (the fixture has
 * plot: false) and leaves a file not of the set alone. */
static void test_result_set_all_or_nothing(void **state)
{
	(void)state;
	char d[256], p[400], *t;
	scratch(d, sizeof d, "set");
	snprintf(p, sizeof p, "%s/summary.csv", d);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("old\n", f);
	fclose(f);
	expect_sh(1, "runs.json",
		  "trap '' XFSZ; ulimit -f 20; @ run " EXP " --quiet --out %s",
		  d);
	t = slurp_or_null(p);
	assert_non_null(t);
	assert_string_equal(t, "old\n");
	free(t);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "test -z \"$(ls -A %s | grep -v summary.csv)\"",
		 d);
	assert_int_equal(system(cmd), 0); /* no runs.json, no .set-* */
	snprintf(cmd, sizeof cmd, "touch %s/plot.png %s/mine.txt", d, d);
	assert_int_equal(system(cmd), 0);
	expect_sh(0, "summary: ", "@ run " EXP " --quiet --out %s", d);
	snprintf(p, sizeof p, "%s/plot.png", d);
	assert_null(slurp_or_null(p));
	snprintf(p, sizeof p, "%s/mine.txt", d);
	t = slurp_or_null(p);
	assert_non_null(t);
	free(t);
	snprintf(p, sizeof p, "%s/runs.json", d);
	t = slurp_or_null(p);
	assert_non_null(t);
	free(t);
	unscratch(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_fixed6),
		cmocka_unit_test(test_output_not_regular_refused),
		cmocka_unit_test(test_bad_output_found_first),
		cmocka_unit_test(test_stdout_write_error),
		cmocka_unit_test(test_budget_below_least_no_report),
		cmocka_unit_test(test_trace_write_failure_reported),
		cmocka_unit_test(test_unread_input_rejected_at_load),
		cmocka_unit_test(test_directory_as_input),
		cmocka_unit_test(test_quoted_content_capped),
		cmocka_unit_test(test_long_paths_in_experiment),
		cmocka_unit_test(test_result_set_all_or_nothing),
		cmocka_unit_test(test_readers_capped),
		cmocka_unit_test(test_read_limits),
		cmocka_unit_test(test_in_line_blocks),
		cmocka_unit_test(test_read_line_across_reads),
		cmocka_unit_test(test_outputs_checked_first),
		cmocka_unit_test(test_files_follow_umask),
		cmocka_unit_test(test_sched_end_before_work),
		cmocka_unit_test(test_memory_limit),
		cmocka_unit_test(test_worth_huge),
		cmocka_unit_test(test_invalid_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
