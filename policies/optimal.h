/*
 * optimal.h - what an experiment gives the `optimal` policy besides its
 * configuration (policies/optimal.c; README, "The optimal policy").
 */
#ifndef GMS_OPTIMAL_H
#define GMS_OPTIMAL_H

#include "optimal_blocks.h"
#include "pol.h"

/* Share the experiment's block solves (opt_memo_new) with p, when p is
 * an `optimal` policy (else nothing): each distinct block point is then
 * solved once per experiment, not once per run. The memo outlives p. */
void optimal_share_memo(struct pol *p, struct opt_memo *m);

#endif
