/*
 * gen_inception.h - the GoogLeNet, Inception-v3 and Inception-v4
 * generators (gen_inception.c), for the wl_gens[] table in wl_gen.c.
 */
#ifndef GMS_GEN_INCEPTION_H
#define GMS_GEN_INCEPTION_H

#include "wl_gen.h"

/* Smallest inputs, worked out in gen_inception.c ("Smallest input"). */
#define GOOGLENET_DEFAULT_SIZE 224
#define GOOGLENET_MIN_SIZE 15 /* 15 -> 8 -> 4 -> 2 -> 1 (ceil-mode pools) */
#define INCEPTION_V3_DEFAULT_SIZE 299
#define INCEPTION_V3_MIN_SIZE 299 /* the aux head's 5x5 conv needs 17x17 */
#define INCEPTION_V4_DEFAULT_SIZE 299
#define INCEPTION_V4_MIN_SIZE 75 /* 75 -> 37 -> 35 -> 17 -> 15 -> 7 -> 3 -> 1 */

struct wl_workload *wl_gen_googlenet(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *wl_gen_inception_v3(const struct wl_gen_args *a,
					gms_err *err);
struct wl_workload *wl_gen_inception_v4(const struct wl_gen_args *a,
					gms_err *err);

#endif
