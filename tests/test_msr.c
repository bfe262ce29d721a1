/*
 * test_msr.c - the measurement CSV of validation mode (sim/msr.h): the
 * writer's bytes, a round trip, and the strict reader's errors with the
 * file:line:column each points at (columns counted by hand below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../sim/msr.h"
#include "tmpkit.h"

static const char head[] = "# gms-measure 1\n"
			   "# device=H100 mode=real alloc=arena "
			   "peak_bytes=4096\n"
			   "iter,seq,kind,start_ns,end_ns\n";

/* The reader fails on text with "PATH:" followed by want. */
static void rejects(const char *text, const char *want)
{
	char path[64], msg[1200];
	tmp_text(path, "gms-msr", text);
	struct msr m;
	gms_err err = {{0}};
	assert_int_equal(msr_read(path, &m, &err), -1);
	assert_int_equal(m.n, 0);
	assert_null(m.row);
	snprintf(msg, sizeof msg, "%s:%s", path, want);
	if (strncmp(err.msg, msg, strlen(msg)) != 0)
		fail_msg("got '%s', want prefix '%s'", err.msg, msg);
	unlink(path);
}

static void test_write_then_read(void **state)
{
	(void)state;
	struct msr m;
	gms_err err = {{0}};
	assert_int_equal(msr_init(&m, "A100-SXM4", MSR_MODE_SPIN,
				  MSR_ALLOC_ASYNC, &err), 0);
	/* added out of order: the file sorts them by (iter, iter row
	 * first, seq) */
	assert_int_equal(msr_add(&m, 1, 7, MSR_COPY, 150, 900, &err), 0);
	assert_int_equal(msr_add(&m, 1, 0, MSR_ITER, 0, 5000, &err), 0);
	assert_int_equal(msr_add(&m, 0, 3, MSR_KERNEL, 100, 2000, &err), 0);
	assert_int_equal(msr_add(&m, 0, 0, MSR_ITER, 0, 4000, &err), 0);
	m.peak_bytes = 123456789;
	char path[64];
	tmp_text(path, "gms-msr", "");
	assert_int_equal(msr_write(&m, path, &err), 0);
	msr_free(&m);
	char *text = tmp_slurp(path);
	assert_string_equal(text,
			    "# gms-measure 1\n"
			    "# device=A100-SXM4 mode=spin alloc=async "
			    "peak_bytes=123456789\n"
			    "iter,seq,kind,start_ns,end_ns\n"
			    "0,0,iter,0,4000\n"
			    "0,3,kernel,100,2000\n"
			    "1,0,iter,0,5000\n"
			    "1,7,copy,150,900\n");
	free(text);
	assert_int_equal(msr_read(path, &m, &err), 0);
	assert_string_equal(m.device, "A100-SXM4");
	assert_int_equal(m.mode, MSR_MODE_SPIN);
	assert_int_equal(m.alloc, MSR_ALLOC_ASYNC);
	assert_int_equal(m.peak_bytes, 123456789);
	assert_int_equal(m.n, 4);
	/* file order, with the line each row came from */
	assert_int_equal(m.row[1].kind, MSR_KERNEL);
	assert_int_equal(m.row[1].seq, 3);
	assert_int_equal(m.row[1].start, 100);
	assert_int_equal(m.row[1].end, 2000);
	assert_int_equal(m.row[1].line, 5);
	assert_int_equal(m.row[3].iter, 1);
	assert_int_equal(m.row[3].kind, MSR_COPY);
	msr_free(&m);
	unlink(path);
}

static void test_reader_accepts(void **state)
{
	(void)state;
	/* keys in another order, CRLF, no final newline, any row order */
	char path[64];
	tmp_text(path, "gms-msr", "# gms-measure 1\r\n"
		  "# peak_bytes=0 alloc=arena mode=real device=-\r\n"
		  "iter,seq,kind,start_ns,end_ns\r\n"
		  "0,6,copy,150,900\n"
		  "0,0,iter,0,12345678\n"
		  "0,5,kernel,100,2000");
	struct msr m;
	gms_err err = {{0}};
	assert_int_equal(msr_read(path, &m, &err), 0);
	assert_int_equal(m.n, 3);
	assert_string_equal(m.device, "-");
	assert_int_equal(m.row[2].end, 2000);
	msr_free(&m);
	unlink(path);
}

static void test_reader_rejects(void **state)
{
	(void)state;
	char buf[512];
	rejects("gms-measure 1\n", "1:1: not a measurement file");
	/* "# gms-measure " is 14 bytes: the version is column 15 */
	rejects("# gms-measure 2\n", "1:15: version '2' is not supported");
	rejects("# gms-measure 1\n", "2:1: the file ends before the header");
	rejects("# gms-measure 1\ndevice=x\n", "2:1: expected '# device=");
	/* "# device=X " is 11 bytes: mode= at 12, its value at 17 */
	rejects("# gms-measure 1\n# device=X mode=fast alloc=arena "
		"peak_bytes=1\n",
		"2:17: key 'mode': 'fast' is not one of real, spin");
	rejects("# gms-measure 1\n# device=X mode=real colour=red\n",
		"2:22: unknown key 'colour'");
	rejects("# gms-measure 1\n# device=X mode=real mode=spin\n",
		"2:22: key 'mode': given twice");
	/* the line is 32 bytes: the missing key is reported after it */
	rejects("# gms-measure 1\n# device=X mode=real alloc=arena\n",
		"2:33: key 'peak_bytes' is missing");
	rejects("# gms-measure 1\n# device=X mode=real alloc=arena "
		"peak_bytes=1e9\n",
		"2:45: key 'peak_bytes': '1e9' is not a non-negative integer");
	rejects("# gms-measure 1\n# device=X mode=real alloc=arena "
		"peak_bytes=1\niter,seq,kind,start,end\n",
		"3:1: expected the header");
	snprintf(buf, sizeof buf, "%s0,x,kernel,1,2\n", head);
	rejects(buf, "4:3: column 'seq': 'x' is not a non-negative integer");
	snprintf(buf, sizeof buf, "%s0,1,kern,1,2\n", head);
	rejects(buf, "4:5: column 'kind': 'kern' is not one of iter, "
		     "kernel, copy");
	snprintf(buf, sizeof buf, "%s0,1,kernel,-1,2\n", head);
	rejects(buf, "4:12: column 'start_ns': '-1' is not a non-negative");
	/* "0,5,kernel,100," is 15 bytes */
	snprintf(buf, sizeof buf, "%s0,5,kernel,100,50\n", head);
	rejects(buf, "4:16: column 'end_ns': 50 is before start_ns 100");
	snprintf(buf, sizeof buf, "%s0,5,kernel,100\n", head);
	rejects(buf, "4:15: 4 columns, expected 5");
	snprintf(buf, sizeof buf, "%s0,5,kernel,1,2,3\n", head);
	rejects(buf, "4:16: more than 5 columns");
	snprintf(buf, sizeof buf, "%s0,0,iter,0,9\n\n", head);
	rejects(buf, "5:1: an empty line");
	snprintf(buf, sizeof buf, "%s0,3,iter,0,9\n", head);
	rejects(buf, "4:3: column 'seq': an iter row has seq 0, not 3");
	/* "1,0,iter," is 9 bytes */
	snprintf(buf, sizeof buf, "%s1,0,iter,5,10\n", head);
	rejects(buf, "4:10: column 'start_ns': an iter row starts at 0");
	snprintf(buf, sizeof buf, "%s3000000000,0,iter,0,9\n", head);
	rejects(buf, "4:1: column 'iter': 3000000000 is out of range");
	/* a repeated row is named, with the line it repeats; the class
	 * matters: iter row seq 0 and kernel seq 0 are different rows */
	snprintf(buf, sizeof buf,
		 "%s0,0,iter,0,9\n0,0,kernel,1,2\n0,4,copy,1,2\n"
		 "0,4,kernel,3,4\n",
		 head);
	rejects(buf, "7:1: a second row for the same (iter, seq, kind) as "
		     "line 6");
	snprintf(buf, sizeof buf, "%s0,0,iter,0,9\n1,2,kernel,1,2\n", head);
	rejects(buf, "5:1: iteration 1 has kernel or copy rows but no iter "
		     "row");
}

static void test_writer_refuses(void **state)
{
	(void)state;
	struct msr m;
	gms_err err = {{0}};
	assert_int_equal(msr_init(&m, "Tesla M40", MSR_MODE_REAL,
				  MSR_ALLOC_ARENA, &err), -1);
	assert_int_equal(msr_init(&m, "M40", MSR_MODE_REAL, MSR_ALLOC_ARENA,
				  &err), 0);
	assert_int_equal(msr_add(&m, 0, 1, MSR_KERNEL, 10, 5, &err), -1);
	assert_int_equal(msr_add(&m, 0, 1, MSR_ITER, 0, 5, &err), -1);
	assert_int_equal(m.n, 0);
	msr_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_then_read),
		cmocka_unit_test(test_reader_accepts),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_writer_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
