/*
 * sched.c - libFuzzer harness: the schedule log (sim/sched.c, sch_read and, when it
 * reads, sch_check).
 */
#include "fuzz.h"
#include "../sim/sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("sched", ".sched", data, size);
	if (!p)
		return 0;
	struct sch_log log;
	int rc = sch_read(p, &log, &err);
	fz_check(rc, &err);
	if (rc == 0) {
		gms_err cerr = {{0}};
		fz_check(sch_check(&log, &cerr), &cerr);
		sch_free(&log);
	}
	return 0;
}
