/*
 * hw.c - libFuzzer harness: the hardware profile YAML (sim/hw.c), through its
 * in-memory entry point hw_load_string (the bytes up to the first NUL: a
 * text).
 */
#include "fuzz.h"
#include "../sim/hw.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gms_err err = {{0}};
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	struct hw_profile hw;
	int rc = hw_load_string(&hw, "fuzz.yaml", text, &err);
	fz_check(rc, &err);
	free(text);
	return 0;
}
