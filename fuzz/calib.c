/*
 * calib.c - libFuzzer harness: the calibration CSV (calibrate/csv.c) and, when it
 * reads, the fits of calibrate/fit.c and profile.c into a profile
 * (cal_fit_file; the profile is written to a scratch file and removed).
 */
#include "fuzz.h"
#include "../calibrate/calib.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	const char *p = fz_path("calib", ".csv", data, size);
	if (!p)
		return 0;
	char out[600];
	snprintf(out, sizeof out, "%s.yaml", p);
	struct cal_fit_opts o = {0};
	int rc = cal_fit_file(p, out, &o, NULL, &err);
	fz_check(rc, &err);
	unlink(out);
	return 0;
}
