/*
 * capuchin.h - what the capuchin policy exposes besides its pol_ops: the
 * wall-clock time its Policy Maker took, for `make bench` (kept out of
 * the report so that results stay byte-identical from run to run), and
 * the re-plans of its runtime refinement.
 */
#ifndef GMS_CAPUCHIN_H
#define GMS_CAPUCHIN_H

#include "pol.h"

/* Host time (ns, CLOCK_MONOTONIC) spent making the plan after the
 * measured iteration (cp_peak_period and cp_plan), 0 when none was made.
 * p must be a capuchin instance. */
uint64_t capuchin_planning_ns(const struct pol *p);

/* Re-plans of the runtime refinement over the run so far (the report's
 * plan_replans). p must be a capuchin instance. */
int capuchin_replans(const struct pol *p);

#endif
