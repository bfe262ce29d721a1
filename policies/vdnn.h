/* vdnn.h - what vdnn.c (vDNN, vDNN++) shares with its tests. */
#ifndef GMS_VDNN_H
#define GMS_VDNN_H

#include <stdint.h>

/* Pinned bytes a ZVC-compressed host copy of `bytes` takes when `threads`
 * threads each compress a share into chunks of bytes / (frac x threads)
 * (vDNN++ section IV-C); `density` is the fraction of nonzero values. */
uint64_t vdnn_zvc_stored(uint64_t bytes, double density, int64_t frac,
			 int64_t threads);

#endif
