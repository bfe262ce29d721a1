/*
 * test_dtr_serial.c - the DTR heuristics and the serial replay of simrd
 * (policies/dtr.h, dtr.c, dtr_serial.c; dtr-semantics.md):
 *
 *   - dtr_div: Python's int / int, the double nearest the exact quotient,
 *     on cases worked out by hand, two of them where the naive
 *     (double)num / (double)den is one ulp off;
 *   - dtr_cost: each heuristic's score, by hand;
 *   - a hand-worked trace of a constant and six ops under a 400-byte
 *     budget: after every schedule command, the clock, the memory, which
 *     storages are material, the evictions (which storage the heuristic
 *     chooses and why), the rematerializations and the evicted
 *     neighbourhoods (regions' interiors, frontiers and compute); then the
 *     end result under every heuristic, derived the same way;
 *   - the closures past 4,096 storages (issue 37): a 5,000-op chain's
 *     region, by hand, built from them and not walked;
 *   - bad input: the loader's own messages, and an op simrd cannot replay;
 *   - the reference: every point of simrd-reference.json (3 traces x 4
 *     heuristics x 8 budgets) replayed, status, clock (hence the overhead
 *     to every digit) and the counters equal. The traces and the reference
 *     are read from the trace directory ($GMS_DTR_DIR, else
 *     ../shared/data/dtr; README, "Third-party data"); when that is
 *     absent the test says so and is skipped.
 *
 * The hand-worked numbers were derived on paper (comments below) before
 * the replay ran; the DTR authors' simrd, run on the same log, agrees
 * with every one of them.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../policies/dtr.h"
#include "../workloads/wl.h"
#include "clikit.h"
#include "json_check.h"
#include "tmpkit.h"

/* ---- dtr_div ------------------------------------------------------------ */

static void test_div_rounding(void **state)
{
	(void)state;
	const unsigned __int128 one = 1;
	/* Small operands: one IEEE division of exact values. 1/3: the double
	 * nearest 1/3 is the literal 1.0 / 3.0. */
	assert_true(dtr_div(1, 3) == 1.0 / 3.0);
	assert_true(dtr_div(0, 7) == 0.0);
	/* (2^53 - 1) / (2^53 + 1) = 1 - 2/(2^53 + 1)
	 *                        = 1 - 2^-52 + 2^-105 - ...
	 * Below 1 the doubles are 2^-53 apart; 1 - 2^-52 is one of them and
	 * the quotient is 2^-105 above it, far less than half a step: the
	 * answer is 1 - 2^-52. Naively, 2^53 + 1 becomes the double 2^53
	 * (a tie, to even), and (2^53 - 1) / 2^53 = 1 - 2^-53 exactly: one
	 * ulp too high. */
	unsigned __int128 n = (one << 53) - 1, d = (one << 53) + 1;
	assert_true(dtr_div(n, d) == 1.0 - 0x1p-52);
	assert_true((double)n / (double)d == 1.0 - 0x1p-53); /* the trap */
	/* The same scaled by 2^-40 with a 94-bit denominator: (2^53 + 1)
	 * * 2^40 > 2^64 needs the 128-bit path; the answer scales exactly:
	 * 2^-40 (1 - 2^-52); naively 2^-40 (1 - 2^-53). */
	d <<= 40;
	assert_true(dtr_div(n, d) == 0x1p-40 * (1.0 - 0x1p-52));
	assert_true((double)n / (double)d == 0x1p-40 * (1.0 - 0x1p-53));
	/* Ties to even on the long path: (2^54 + 2) / 2 = 2^53 + 1, halfway
	 * between the doubles 2^53 and 2^53 + 2: the even mantissa, 2^53.
	 * (2^54 + 6) / 2 = 2^53 + 3, halfway between 2^53 + 2 and 2^53 + 4:
	 * 2^53 + 4 (mantissa 2^52 + 2 is even). */
	assert_true(dtr_div((one << 54) + 2, 2) == 0x1p53);
	assert_true(dtr_div((one << 54) + 6, 2) == 0x1p53 + 4.0);
	/* Off the midpoints (a remainder): (2^55 + 9) / 4 = 2^53 + 2.25;
	 * the doubles there are 2 apart: 2^53 + 2 is 0.25 away. And
	 * (2^55 + 13) / 4 = 2^53 + 3.25: 2^53 + 2 is 1.25 away, 2^53 + 4
	 * 0.75: 2^53 + 4. */
	assert_true(dtr_div((one << 55) + 9, 4) == 0x1p53 + 2.0);
	assert_true(dtr_div((one << 55) + 13, 4) == 0x1p53 + 4.0);
	/* A 64-bit numerator over 1: 2^63 + 2^10 + 1 lies just above the
	 * midpoint (2^10) of the doubles 2^63 and 2^63 + 2^11: rounds up. */
	assert_true(dtr_div((one << 63) + (one << 10) + 1, 1) ==
		    0x1p63 + 0x1p11);
	/* A power of two over a huge one: exact. 3 / 2^120 = 3 * 2^-120. */
	assert_true(dtr_div(3, one << 120) == 3.0 * 0x1p-120);
	/* Out of the domain (den >= 2^127, which no score reaches): an
	 * answer, not an endless loop; here still exact, 2^64 / 2^127 =
	 * 2^-63 and 1 / (2^128 - 1) rounds to 2^-128. */
	assert_true(dtr_div(one << 64, one << 127) == 0x1p-63);
	assert_true(dtr_div(1, ~(unsigned __int128)0) == 0x1p-128);
}

/* ---- dtr_cost ------------------------------------------------------------ */

static void test_cost(void **state)
{
	(void)state;
	/* DTR: compute / (size x (clock - last access)); these are the two
	 * choices of the hand-worked trace below. 100 / (100 x 500) =
	 * 0.002; 350 / (100 x 160) = 0.021875 (exact in binary). */
	assert_true(dtr_cost(DTR_H_DTR, 100, 100, 101, 601) == 0.002);
	assert_true(dtr_cost(DTR_H_DTR, 350, 100, 651, 811) == 0.021875);
	/* a staleness of 0 or a size of 0: inf (simrd's denominator <= 0) */
	assert_true(isinf(dtr_cost(DTR_H_DTR, 40, 50, 851, 851)));
	assert_true(isinf(dtr_cost(DTR_H_DTR, 40, 0, 1, 851)));
	/* never accessed: -inf staleness is +inf, 40 / inf = 0 */
	assert_true(dtr_cost(DTR_H_DTR, 40, 50, DTR_NEVER, 851) == 0.0);
	/* size x staleness = 2^40 x 2^30 = 2^70 > 2^64: 3 / 2^70 exactly */
	assert_true(dtr_cost(DTR_H_DTR, 3, (uint64_t)1 << 40, 1,
			     1 + ((int64_t)1 << 30)) == 3.0 * 0x1p-70);
	/* the eq-class variant has the same form */
	assert_true(dtr_cost(DTR_H_EQCLASS, 100, 100, 101, 601) == 0.002);
	/* MSPS: compute / size, no staleness: 350 / 100 = 3.5; size 0 inf */
	assert_true(dtr_cost(DTR_H_MSPS, 350, 100, 651, 811) == 3.5);
	assert_true(isinf(dtr_cost(DTR_H_MSPS, 350, 0, 651, 811)));
	/* LRU: the last access itself */
	assert_true(dtr_cost(DTR_H_LRU, 999, 100, 651, 811) == 651.0);
	/* LargestStorage: 1 / size; 1 / 64 = 0.015625; size 0 inf */
	assert_true(dtr_cost(DTR_H_LARGEST, 999, 64, 1, 2) == 0.015625);
	assert_true(isinf(dtr_cost(DTR_H_LARGEST, 999, 0, 1, 2)));
	/* names */
	assert_int_equal(dtr_heuristic_parse("dtr"), DTR_H_DTR);
	assert_int_equal(dtr_heuristic_parse("dtr-eqclass"), DTR_H_EQCLASS);
	assert_int_equal(dtr_heuristic_parse("msps"), DTR_H_MSPS);
	assert_int_equal(dtr_heuristic_parse("lru"), DTR_H_LRU);
	assert_int_equal(dtr_heuristic_parse("largest"), DTR_H_LARGEST);
	assert_int_equal(dtr_heuristic_parse("DTR"), DTR_H_COUNT);
	assert_string_equal(dtr_heuristic_simrd_name(DTR_H_LARGEST),
			    "LargestStorage");
}

/* ---- The hand-worked trace ---------------------------------------------- */

/*
 * A constant w and six ops; sizes in bytes, TIME in ns:
 *
 *   w const 10   a = f(w)    100 B, 100 ns     d = k(c)     100 B, 50 ns
 *                b = g(a)    100 B, 200 ns     RELEASE c
 *                c = h(b)    100 B, 300 ns     e = m(a, d)   50 B, 60 ns
 *                                              x = n(b, e)   50 B, 40 ns
 *                                              RELEASE a, d, e
 *
 * Storages in creation order: W=0 A=1 B=2 C=3 D=4 E=5 X=6. The schedule
 * (parse_file): 0 compute w, 1 pin w, 2 compute a, 3 b, 4 c, 5 d,
 * 6 release c, 7 compute e, 8 x, 9 release a, 10 d, 11 e, then a Pin for
 * each name still referenced, in the order the names were first bound:
 * 12 pin w, 13 pin b, 14 pin x: 15 commands.
 *
 * Baseline (RuntimeV1, unlimited, frees on the last release): memory
 * 10, 110, 210, 310, 410 (d), 310 (c released), 360 (e), 410 (x), ...:
 * peak 410; compute 100+200+300+50+60+40 = 750.
 *
 * The run: DTR, budget 400, thrash limit 750 (run_pareto's: compute x 1).
 * Regions are written (interior | frontier | compute); fwd = region
 * (children side), rev = region_rev (parents side). W is pinned from
 * command 1 on; its regions are not followed (nothing reads them).
 *
 *  0 compute w: clock 1 + 0 = 1, memory 10; pool [W].
 *  1 pin w: W locked, out of the pool.
 *  2 compute a: last_access(W) = 1; memory 110 <= 400; clock 101.
 *    A.fwd = (||0) (no children yet), A.rev = (|W|0). Pool [A].
 *    last_access(A) = 101.
 *  3 compute b: la(A) = 101, A locked; memory 210; clock 301.
 *    B.fwd = (||0), B.rev = (|A|0); then A.fwd rebuilt (A is in B.rev's
 *    frontier): (|B|0). A unlocked: pool [B, A]. la(B) = 301.
 *  4 compute c: la(B) = 301; memory 310; clock 601. C.rev = (|B|0),
 *    B.fwd = (|C|0). Pool [A, C, B]. la(C) = 601.
 *  5 compute d: la(C) = 601, C locked, pool [A, B]. 310 + 100 > 400:
 *    evict. Scores at clock 601:
 *      A: (100 + 0 + 0) / (100 x (601 - 101)) = 100/50000 = 0.002
 *      B: (200 + 0 + 0) / (100 x (601 - 301)) = 200/30000 = 0.0067
 *    A goes (heuristic eviction 1): memory 210. A was in B.rev's
 *    frontier: B.rev absorbs A: A leaves the frontier, A.rev's frontier
 *    {W} joins it, A joins the interior with its compute 100:
 *    B.rev = (A|W|100). Then d: memory 310, clock 651. D.rev = (|C|0),
 *    C.fwd = (|D|0). Pool [B, D, C]. la(D) = 651.
 *  6 release c: C's last handle: evicted at once (eager 1), memory 210.
 *    B.fwd absorbs C: (C|D|300); D.rev absorbs C: (C|B|300).
 *  7 compute e = m(a, d): la(A) = la(D) = 651. D locked; a undefined:
 *    rematerialize a (remat 100, 1 op): la(W) = 651; memory 310; clock
 *    751. Rebuilding A.fwd now finds e, the output in flight, immaterial:
 *    (E|B|60) for a moment. B.rev is rebuilt: (|A|0). A locked. e:
 *    memory 360 (the peak), clock 811. E.rev = (|A,D|0); A.fwd and D.fwd
 *    rebuilt: (|B,E|0) and (|E|0). Pool [B, E, A, D]. la(E) = 811; a's
 *    remat did not refresh la(A): 651.
 *  8 compute x = n(b, e): la(B) = la(E) = 811, both locked; pool
 *    [A, D]. 360 + 50 > 400: evict. Scores at clock 811:
 *      A: (100 + 0 + 0) / (100 x 160) = 0.00625
 *      D: (50 + 0 + 300) / (100 x 160) = 0.021875
 *    (without D's evicted neighbourhood {C}, D would score 50/16000 =
 *    0.003125 and go instead). A goes (heuristic eviction 2): memory
 *    260. B.rev absorbs A: (A|W|100); E.rev absorbs A: (A|D,W|100).
 *    x: memory 310, clock 851. X.rev = (|B,E|0); B.fwd rebuilt: C is
 *    still evicted: (C|D,X|300); E.fwd = (|X|0).
 *  9 release a: A is not material: nothing.
 * 10 release d: D evicted (eager 2), memory 210. B.fwd absorbs D:
 *    (C,D|E,X|350); E.rev absorbs D: D's rev interior {C} is new to it:
 *    (A,C,D|B,W|100 + 300 + 50 = 450).
 * 11 release e: E evicted (eager 3), memory 160. B.fwd absorbs E:
 *    (C,D,E|X|410); X.rev absorbs E: (A,C,D,E|B,W|510).
 * 12-14 pins: w already pinned; b and x are material: locked.
 * End: ok, clock 851, overhead 851/750, remat 100 ns in 1 op, 2
 * heuristic and 3 eager evictions, peak 360.
 */
static const char six_log[] =
	"{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"10\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],"
	"\"RESULT\":[\"a\"],\"TIME\":\"100\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"a\"],"
	"\"RESULT\":[\"b\"],\"TIME\":\"200\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"h\",\"ARGS\":[\"b\"],"
	"\"RESULT\":[\"c\"],\"TIME\":\"300\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"c\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"k\",\"ARGS\":[\"c\"],"
	"\"RESULT\":[\"d\"],\"TIME\":\"50\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"d\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"c\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"m\",\"ARGS\":[\"a\",\"d\"],"
	"\"RESULT\":[\"e\"],\"TIME\":\"60\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"e\",\"MEMORY\":\"50\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"e\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"n\",\"ARGS\":[\"b\",\"e\"],"
	"\"RESULT\":[\"x\"],\"TIME\":\"40\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"50\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"x\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"d\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"e\"}\n";

enum { W, A, B, C, D, E, X, N_STO };
#define M(s) ((uint64_t)1 << (s))

/* A log held in a string; the test fails if it does not load. */
static struct dtr_trace *load_text(const char *name, const char *text)
{
	struct dtr_trace *tr;
	gms_err err = {{0}};
	if (dtr_trace_load_mem(name, text, strlen(text), &tr, &err) < 0)
		fail_msg("%s", err.msg);
	return tr;
}

static struct dtr_trace *load_six(void)
{
	return load_text("six.log", six_log);
}

/* One command's expected state. */
struct step {
	uint64_t clock, memory; /* after it */
	uint64_t material;	/* mask of the material storages */
	uint64_t evh, eager;	/* heuristic and eager evictions so far */
	uint64_t remat;		/* remat ns so far */
};

/* One region's expected content after a command. */
struct reg_check {
	uint32_t after;	    /* commands run */
	uint32_t sto, dir;  /* whose, 0 fwd / 1 rev */
	uint64_t interior;  /* mask */
	uint64_t frontier;  /* mask */
	uint64_t compute;   /* ns */
};

static void test_hand_six(void **state)
{
	(void)state;
	struct dtr_trace *tr = load_six();
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	assert_int_equal(b.peak_bytes, 410);
	assert_int_equal(b.compute_ns, 750);
	assert_int_equal(b.const_bytes, 10);
	assert_int_equal(b.n_ops, 7);
	assert_int_equal(b.n_cmds, 15);
	assert_int_equal(b.n_storages, N_STO);
	const struct step want[15] = {
		/*  0 */ {1, 10, M(W), 0, 0, 0},
		/*  1 */ {1, 10, M(W), 0, 0, 0},
		/*  2 */ {101, 110, M(W) | M(A), 0, 0, 0},
		/*  3 */ {301, 210, M(W) | M(A) | M(B), 0, 0, 0},
		/*  4 */ {601, 310, M(W) | M(A) | M(B) | M(C), 0, 0, 0},
		/*  5 */ {651, 310, M(W) | M(B) | M(C) | M(D), 1, 0, 0},
		/*  6 */ {651, 210, M(W) | M(B) | M(D), 1, 1, 0},
		/*  7 */ {811, 360, M(W) | M(A) | M(B) | M(D) | M(E), 1, 1, 100},
		/*  8 */ {851, 310, M(W) | M(B) | M(D) | M(E) | M(X), 2, 1, 100},
		/*  9 */ {851, 310, M(W) | M(B) | M(D) | M(E) | M(X), 2, 1, 100},
		/* 10 */ {851, 210, M(W) | M(B) | M(E) | M(X), 2, 2, 100},
		/* 11 */ {851, 160, M(W) | M(B) | M(X), 2, 3, 100},
		/* 12 */ {851, 160, M(W) | M(B) | M(X), 2, 3, 100},
		/* 13 */ {851, 160, M(W) | M(B) | M(X), 2, 3, 100},
		/* 14 */ {851, 160, M(W) | M(B) | M(X), 2, 3, 100},
	};
	const struct reg_check regs[] = {
		{3, A, 1, 0, M(W), 0},
		{4, A, 0, 0, M(B), 0},
		{4, B, 1, 0, M(A), 0},
		{5, B, 0, 0, M(C), 0},
		{5, C, 1, 0, M(B), 0},
		{6, B, 1, M(A), M(W), 100},  /* absorbed the evicted A */
		{6, A, 0, 0, 0, 0},	     /* an evicted storage's: cleared */
		{6, C, 0, 0, M(D), 0},
		{6, D, 1, 0, M(C), 0},
		{7, B, 0, M(C), M(D), 300},  /* absorbed the released C */
		{7, D, 1, M(C), M(B), 300},
		{8, A, 0, 0, M(B) | M(E), 0}, /* rebuilt after e */
		{8, A, 1, 0, M(W), 0},
		{8, B, 1, 0, M(A), 0},	     /* rebuilt: A is back */
		{8, D, 0, 0, M(E), 0},
		{8, E, 1, 0, M(A) | M(D), 0},
		{9, B, 0, M(C), M(D) | M(X), 300},
		{9, B, 1, M(A), M(W), 100},
		{9, E, 1, M(A), M(D) | M(W), 100},
		{9, E, 0, 0, M(X), 0},
		{9, X, 1, 0, M(B) | M(E), 0},
		{11, B, 0, M(C) | M(D), M(E) | M(X), 350},
		{11, E, 1, M(A) | M(C) | M(D), M(B) | M(W), 450},
		{12, B, 0, M(C) | M(D) | M(E), M(X), 410},
		{12, X, 1, M(A) | M(C) | M(D) | M(E), M(B) | M(W), 510},
	};
	struct dtr_opts o = {DTR_H_DTR, 400, 750};
	gms_err err = {{0}};
	size_t ri = 0;
	for (uint32_t n = 1; n <= 15; n++) {
		struct dtr_result r;
		struct dtr_probe_sto st[N_STO];
		if (dtr_serial_probe(tr, &o, n, &r, st, N_STO, &err) < 0)
			fail_msg("%s", err.msg);
		const struct step *w = &want[n - 1];
		uint64_t mat = 0;
		for (int s = 0; s < N_STO; s++)
			mat |= st[s].material ? M(s) : 0;
		if (r.clock_end != w->clock || r.memory_bytes != w->memory ||
		    mat != w->material || r.evictions_heuristic != w->evh ||
		    r.evictions_eager_release != w->eager ||
		    r.remat_compute_ns != w->remat || r.status != DTR_OK)
			fail_msg("after command %u: clock %llu memory %llu "
				 "material %#llx evictions %llu+%llu remat "
				 "%llu", n - 1,
				 (unsigned long long)r.clock_end,
				 (unsigned long long)r.memory_bytes,
				 (unsigned long long)mat,
				 (unsigned long long)r.evictions_heuristic,
				 (unsigned long long)r.evictions_eager_release,
				 (unsigned long long)r.remat_compute_ns);
		for (; ri < sizeof regs / sizeof *regs && regs[ri].after == n;
		     ri++) {
			const struct reg_check *c = &regs[ri];
			const struct dtr_probe_sto *p = &st[c->sto];
			if (p->interior[c->dir] != c->interior ||
			    p->frontier[c->dir] != c->frontier ||
			    p->region_compute[c->dir] != c->compute)
				fail_msg("after command %u: storage %u dir %u: "
					 "interior %#llx frontier %#llx "
					 "compute %llu",
					 n - 1, c->sto, c->dir,
					 (unsigned long long)p->interior[c->dir],
					 (unsigned long long)p->frontier[c->dir],
					 (unsigned long long)
						 p->region_compute[c->dir]);
		}
		if (n == 8) { /* a's remat did not refresh its stamp */
			assert_int_equal(st[A].last_access, 651);
			assert_int_equal(st[E].last_access, 811);
			assert_int_equal(st[B].last_access, 301);
		}
		if (n == 15) {
			assert_true(st[W].pinned && st[B].pinned &&
				    st[X].pinned);
			assert_false(st[D].pinned);
		}
	}
	assert_int_equal(ri, sizeof regs / sizeof *regs);
	/* the whole run */
	struct dtr_result r;
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_OK);
	assert_int_equal(r.clock_end, 851);
	assert_true(r.overhead == 851.0 / 750.0);
	assert_int_equal(r.remat_ops, 1);
	assert_int_equal(r.model_compute_ns, 750);
	assert_int_equal(r.max_memory_bytes, 360);
	dtr_trace_free(tr);
}

/*
 * The other heuristics on the same trace and budget. Up to command 4 all
 * runs are the same (no choice is made).
 *
 * MSPS ((compute + region_rev compute) / size): at 5, A 100/100 = 1 <
 * B 200/100 = 2; at 8, A (100 + 0)/100 = 1 < D (50 + 300)/100 = 3.5:
 * DTR's choices, DTR's result.
 *
 * dtr-eqclass: at 5 nothing is evicted yet, A 0.002 < B 0.0067 as DTR;
 * C's eager eviction makes its class {C} (value 300); a's remat takes A
 * out of its class. At 8: A has no evicted neighbour: 100/16000; D's
 * evicted parent C brings its class's 300: 350/16000: A again, DTR's
 * result.
 *
 * LRU (the least last access): at 5, A (101) < B (301): A. At 8 the pool
 * is [A, D] with la(A) = la(D) = 651: a tie, to the later one: D goes
 * (memory 260, then x: 310, clock 851). Then release a: A is material
 * now and goes eagerly (210); release d: D already evicted, nothing;
 * release e: E goes (160). Clock 851, remat 100 in 1 op, evictions 2 +
 * 3, peak 360 as DTR, but D, not A, evicted at 8.
 *
 * LargestStorage (1 / size): at 5, A and B both 100 B: a tie, to the
 * later in the pool [A, B]: B goes (210), d: 310, clock 651; pool [A, D,
 * C]; release c: C goes (210). e = m(a, d): both material, memory 260,
 * clock 711. x = n(b, e): B rematerialized (its parent a is material):
 * 360, clock 911, remat 200 in 1 op; then 360 + 50 > 400 with pool
 * [D, A]: 100 B each, a tie: A goes (260); x: 310, clock 951. release a:
 * nothing; d: D goes (210); e: E goes (160). Clock 951, overhead
 * 951/750, remat 200, evictions 2 + 3, peak 360.
 */
static void test_hand_six_heuristics(void **state)
{
	(void)state;
	struct dtr_trace *tr = load_six();
	gms_err err = {{0}};
	const struct {
		enum dtr_heuristic h;
		uint64_t clock, remat, remat_ops;
	} want[] = {
		{DTR_H_MSPS, 851, 100, 1},
		{DTR_H_EQCLASS, 851, 100, 1},
		{DTR_H_LRU, 851, 100, 1},
		{DTR_H_LARGEST, 951, 200, 1},
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		struct dtr_opts o = {want[i].h, 400, 750};
		struct dtr_result r;
		assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
		assert_int_equal(r.status, DTR_OK);
		assert_int_equal(r.clock_end, want[i].clock);
		assert_int_equal(r.remat_compute_ns, want[i].remat);
		assert_int_equal(r.remat_ops, want[i].remat_ops);
		assert_int_equal(r.evictions_heuristic, 2);
		assert_int_equal(r.evictions_eager_release, 3);
		assert_int_equal(r.max_memory_bytes, 360);
	}
	/* which storage went at command 8 (9 commands run) */
	struct dtr_probe_sto st[N_STO];
	struct dtr_result r;
	struct dtr_opts lru = {DTR_H_LRU, 400, 750};
	assert_int_equal(dtr_serial_probe(tr, &lru, 9, &r, st, N_STO, &err),
			 0);
	assert_true(st[A].material);  /* the earlier of the tie stays */
	assert_false(st[D].material); /* the later goes */
	struct dtr_opts big = {DTR_H_LARGEST, 400, 750};
	assert_int_equal(dtr_serial_probe(tr, &big, 6, &r, st, N_STO, &err),
			 0);
	assert_true(st[A].material);
	assert_false(st[B].material);
	assert_int_equal(r.clock_end, 651);
	dtr_trace_free(tr);
}

/* Budgets where it cannot run, and the thrash limit. */
static void test_hand_six_stops(void **state)
{
	(void)state;
	struct dtr_trace *tr = load_six();
	gms_err err = {{0}};
	struct dtr_result r;
	/* 250 B: w, a, b fit (210); c needs 100 more: A goes (pool [A] after
	 * b is locked; 110 + 100 = 210), c: clock 601; d: pool [B] (c
	 * locked): B goes, d: 210, clock 651; release c: 110; e = m(a, d):
	 * a must come back: a's parent w is material, 110 + 100 = 210,
	 * clock 751, remat 100; e: 260 > 250: the pool holds nothing
	 * (a and d locked, w pinned): OOM at clock 751. */
	struct dtr_opts o = {DTR_H_DTR, 250, 750};
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_OOM);
	assert_int_equal(r.clock_end, 751);
	assert_int_equal(r.remat_compute_ns, 100);
	assert_int_equal(r.evictions_heuristic, 2);
	assert_true(r.overhead == 751.0 / 750.0);
	/* the same run at 400 B with a limit of 99 ns: a's remat (100 ns)
	 * passes it at command 7, where the clock was 751 */
	o = (struct dtr_opts){DTR_H_DTR, 400, 99};
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_THRASH);
	assert_int_equal(r.clock_end, 751);
	/* a limit of exactly 100: not passed (remat > limit stops) */
	o.remat_limit_ns = 100;
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_OK);
	/* budgets as a fraction: int(410 x 0.5) = 205 */
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	assert_int_equal(dtr_budget_for_ratio(&b, 0.5), 205);
	dtr_trace_free(tr);
}

/*
 * A view, COPY_FROM and MUTATE (none of the shipped traces has a
 * COPY_FROM), no START line:
 *
 *   w const 8;  a = f(w) 100 B, 10 ns;  av = v(a) a view of a (ALIAS 0:
 *   size 0, a's storage), 1 ns;  b = g(a) 50 B, 20 ns;
 *   COPY_FROM b <- av: Release(old b), Get(av);
 *   MUTATE m(a) writes a: a new op over [a] with one fresh output a$ of
 *   a's storage size (100 B), 5 ns; the name a now means a$;
 *   Release(a, the old tensor);  RELEASE b: b means av: Release(av).
 * Schedule: compute w, pin w, compute f, v, g, release b, get av,
 * compute m, release a, release av, then Pins in the order the names were
 * first bound: w, a (a$), av, b (av again): 14 commands.
 * Storages: W=0, A=1 (tensors a, av), B=2, A$=3. A's compute: the TIME of
 * the distinct ops of its tensors, f and v: 11.
 * Unlimited budget: memory 8, 108, 108 (a view adds 0), 158; releasing
 * the old b drops B's last handle: B evicted (eager), 108; m: 208 (the
 * peak); A keeps handles (a until the MUTATE, av twice): never evicted.
 * Clock 1 + 10 + 1 + 20 + 5 = 37; baseline the same: peak 208, compute
 * 36. At 150 B: b needs 108 + 50 > 150 with nothing in the pool (a is
 * g's locked parent, w pinned): OOM at clock 12.
 */
static const char cf_log[] =
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"8\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],"
	"\"RESULT\":[\"a\"],\"TIME\":\"10\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"v\",\"ARGS\":[\"a\"],"
	"\"RESULT\":[\"av\"],\"TIME\":\"1\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"av\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"av\",\"ALIAS\":\"0\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"a\"],"
	"\"RESULT\":[\"b\"],\"TIME\":\"20\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"50\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"COPY_FROM\",\"DST\":\"b\",\"SRC\":\"av\"}\n"
	"{\"INSTRUCTION\":\"MUTATE\",\"NAME\":\"m\",\"ARGS\":[\"a\"],"
	"\"MUTATE\":[0],\"TIME\":\"5\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"b\"}\n";

static void test_views_copy_from_mutate(void **state)
{
	(void)state;
	struct dtr_trace *tr = load_text("cf.log", cf_log);
	gms_err err = {{0}};
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	assert_int_equal(b.peak_bytes, 208);
	assert_int_equal(b.compute_ns, 36);
	assert_int_equal(b.n_ops, 5);
	assert_int_equal(b.n_cmds, 14);
	assert_int_equal(b.n_storages, 4);
	struct dtr_opts o = {DTR_H_DTR, UINT64_MAX, 36};
	struct dtr_result r;
	struct dtr_probe_sto st[4];
	assert_int_equal(dtr_serial_probe(tr, &o, 14, &r, st, 4, &err), 0);
	assert_int_equal(r.status, DTR_OK);
	assert_int_equal(r.clock_end, 37);
	assert_int_equal(r.max_memory_bytes, 208);
	assert_int_equal(r.memory_bytes, 208);
	assert_int_equal(r.evictions_eager_release, 1);
	assert_int_equal(r.evictions_heuristic, 0);
	assert_int_equal(st[0].compute, 0);
	assert_int_equal(st[1].compute, 11);
	assert_int_equal(st[2].compute, 20);
	assert_int_equal(st[3].compute, 5);
	assert_false(st[2].material);
	assert_true(st[0].pinned && st[1].pinned && st[3].pinned);
	/* after 5 commands (up to b's compute; the old b not yet
	 * released): B is still there, memory 158 */
	assert_int_equal(dtr_serial_probe(tr, &o, 5, &r, st, 4, &err), 0);
	assert_int_equal(r.memory_bytes, 158);
	assert_true(st[2].material);
	o.budget_bytes = 150;
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_OOM);
	assert_int_equal(r.clock_end, 12);
	assert_int_equal(r.max_memory_bytes, 108);
	dtr_trace_free(tr);
}

/*
 * The closures above the 4,096 storages they were capped at (issue 37):
 * a chain long enough that the regions' bitsets have more than 64 words.
 *
 *   CONSTANT w (8 B); a = f(w) (8 B, 1 ns); x1 = g(a); x_k = g(x_{k-1})
 *   for k = 2 .. N, each 8 B and k ns, x_{k-1} released right after x_k
 *   is computed (eager eviction: x1 .. x_{N-1} end immaterial, x_N
 *   material); then y = h(a) (8 B, 1 ns).
 *
 * Storages: w 0, a 1, x_k 1 + k, y N + 2 (N + 3 in all). Budget and
 * remat limit unlimited: no heuristic eviction, N - 1 eager ones. After
 * y is computed (command 2N + 3: compute and pin w, compute a and x1,
 * then compute x_k and release x_{k-1} for each k >= 2, compute y), y's
 * region_rev has a in its frontier, so a's region (children side) is
 * rebuilt: a's children are x1 (evicted) and y (material); from x1 the
 * children chain runs through x2 .. x_{N-1}, all evicted, to x_N,
 * material. Interior {x1 .. x_{N-1}}, compute 1 + 2 + ... + (N - 1) =
 * N(N - 1)/2, frontier {x_N, y}; as masks of the storages below 64: the
 * interior is x1 .. x62 (storages 2 .. 63), the frontier none. a's
 * region_rev: w is material, so no interior, frontier {w}, compute 0.
 * Every rebuild is made from the closures (none walked), where before
 * issue 37 every one past 4,096 storages was walked.
 */
static void test_closures_past_4096(void **state)
{
	(void)state;
	enum { N = 5000 };
	size_t cap = (size_t)N * 400 + 4096, len = 0;
	char *log = malloc(cap);
	assert_non_null(log);
#define ADD(...) (len += (size_t)snprintf(log + len, cap - len, __VA_ARGS__))
	ADD("{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
	    "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
	    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"8\"}\n");
	for (int k = 0; k <= N + 1; k++) {
		char out[16], arg[16];
		int time = k == 0 || k == N + 1 ? 1 : k;
		if (k == 0 || k == N + 1)
			snprintf(out, sizeof out, k ? "y" : "a");
		else
			snprintf(out, sizeof out, "x%d", k);
		if (k == 0)
			snprintf(arg, sizeof arg, "w");
		else if (k == 1 || k == N + 1)
			snprintf(arg, sizeof arg, "a");
		else
			snprintf(arg, sizeof arg, "x%d", k - 1);
		ADD("{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"%s\"],"
		    "\"RESULT\":[\"%s\"],\"TIME\":\"%d\"}\n"
		    "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"%s\",\"MEMORY\":\"8\"}\n"
		    "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"%s\",\"ALIAS\":\"-1\"}\n",
		    arg, out, time, out, out);
		if (k >= 2 && k <= N)
			ADD("{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"x%d\"}\n",
			    k - 1);
	}
#undef ADD
	assert_true(len < cap);
	struct dtr_trace *tr = load_text("chain.log", log);
	free(log);
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	assert_int_equal(b.n_storages, N + 3);
	gms_err err = {{0}};
	for (int walk = 0; walk <= 1; walk++) {
		struct dtr_opts o = {DTR_H_DTR, UINT64_MAX, UINT64_MAX, walk};
		struct dtr_result r;
		struct dtr_probe_sto st[2];
		if (dtr_serial_probe(tr, &o, 2 * N + 3, &r, st, 2, &err) < 0)
			fail_msg("%s", err.msg);
		assert_int_equal(r.evictions_eager_release, N - 1);
		assert_int_equal(r.evictions_heuristic, 0);
		assert_true(st[1].material);
		assert_int_equal(st[1].region_compute[0],
				 (uint64_t)N * (N - 1) / 2);
		assert_int_equal(st[1].interior[0], ~(uint64_t)0 << 2);
		assert_int_equal(st[1].frontier[0], 0);
		assert_int_equal(st[1].region_compute[1], 0);
		assert_int_equal(st[1].interior[1], 0);
		assert_int_equal(st[1].frontier[1], M(0));
		assert_true(r.rebuilds > 0);
		assert_int_equal(r.rebuilds_walked, walk ? r.rebuilds : 0);
	}
	dtr_trace_free(tr);
}

/*
 * simrd's parse rules where the workload loader's differ (wl_dtr.h):
 * the first ANNOTATE START begins the recorded part, a RELEASE of a name
 * never bound since is skipped, and one of a name released already
 * releases its tensor again:
 *
 *   CONSTANT p 8 (before the START: dropped); START; CONSTANT w 8;
 *   a = f(w) 100 B, 10 ns; COPY c <- a; RELEASE zz (never bound:
 *   skipped); RELEASE p (bound before the START only: skipped); a second
 *   START (no-op); b = g(a) 50 B, 20 ns; RELEASE a; RELEASE a (again).
 *
 * Schedule: compute w, pin w, compute f, get a (COPY), compute g,
 * release a, release a; then Pins, names in the order first bound, for a
 * tensor whose parse refcount is > 0: w (1), a and c (one tensor: 1 + 1
 * - 1 - 1 = 0: no Pin), b (1): 9 commands; storages W, A, B (p
 * dropped); ops w, f, g.
 * Unlimited budget: 8, 108 (f), 158 (g: the peak); A's handles 2 (a,
 * the COPY), 1, then 0 at the second release: evicted at once (eager),
 * 58, though c still names it. Clock 1 + 10 + 20 = 31; the baseline
 * (RuntimeV1) banishes A at the same release: peak 158, compute 30.
 * The workload loader rejects the log: line 10 releases an unknown
 * handle ('{"INSTRUCTION":"RELEASE",' is columns 1-25, '"NAME":' 26-32,
 * "zz" at 33); and past that, dropping all before the LAST START, it
 * would not know g's argument a.
 */
static const char simrd_rules_log[] =
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"p\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"p\",\"MEMORY\":\"8\"}\n"
	"{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
	"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\",\"MEMORY\":\"8\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"w\"],"
	"\"RESULT\":[\"a\"],\"TIME\":\"10\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"100\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"COPY\",\"DST\":\"c\",\"SRC\":\"a\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"zz\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"p\"}\n"
	"{\"INSTRUCTION\":\"ANNOTATE\",\"ANNOTATION\":\"START\"}\n"
	"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"a\"],"
	"\"RESULT\":[\"b\"],\"TIME\":\"20\"}\n"
	"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"50\"}\n"
	"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n"
	"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n";

static void test_simrd_parse_rules(void **state)
{
	(void)state;
	struct dtr_trace *tr = load_text("rules.log", simrd_rules_log);
	gms_err err = {{0}};
	struct dtr_baseline b;
	dtr_baseline(tr, &b);
	assert_int_equal(b.n_cmds, 9);
	assert_int_equal(b.n_ops, 3);
	assert_int_equal(b.n_storages, 3);
	assert_int_equal(b.peak_bytes, 158);
	assert_int_equal(b.compute_ns, 30);
	struct dtr_opts o = {DTR_H_DTR, UINT64_MAX, 30};
	struct dtr_result r;
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), 0);
	assert_int_equal(r.status, DTR_OK);
	assert_int_equal(r.clock_end, 31);
	assert_int_equal(r.max_memory_bytes, 158);
	assert_int_equal(r.memory_bytes, 58);
	assert_int_equal(r.evictions_eager_release, 1);
	dtr_trace_free(tr);
	/* the workload loader keeps its rules */
	char path[64];
	tmp_text(path, "rules", simrd_rules_log);
	struct wl_workload *w = wl_load_dtr(path, &err);
	assert_null(w);
	assert_non_null(strstr(err.msg, ":10:33: key 'NAME': unknown handle "
					"'zz'"));
	remove(path);
}

/* ---- Bad input -------------------------------------------------------------- */

static void test_bad_input(void **state)
{
	(void)state;
	struct dtr_trace *tr = NULL;
	gms_err err = {{0}};
	/* the loader's own check and message: an unknown handle read by a
	 * CALL, at its column (the scanner is wl_dtr.c's; simrd fails there
	 * too, on its tensor_map lookup): '{' 1, "INSTRUCTION":"CALL", 2-22,
	 * "NAME":"f", 23-33, "ARGS":[ 34-41, "v" at 42 */
	const char *bad = "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
			  "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\","
			  "\"MEMORY\":\"10\"}\n"
			  "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
			  "\"ARGS\":[\"v\"],\"RESULT\":[\"a\"],"
			  "\"TIME\":\"5\"}\n";
	assert_int_equal(dtr_trace_load_mem("bad.log", bad, strlen(bad), &tr,
					    &err),
			 -1);
	assert_null(tr);
	assert_string_equal(err.msg,
			    "bad.log:3:42: key 'ARGS': unknown handle 'v'");
	/* a CALL without results: simrd's compute() takes its first output */
	const char *none = "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
			   "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\","
			   "\"MEMORY\":\"10\"}\n"
			   "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\","
			   "\"ARGS\":[\"w\"],\"RESULT\":[],\"TIME\":\"5\"}\n";
	assert_int_equal(dtr_trace_load_mem("none.log", none, strlen(none),
					    &tr, &err),
			 -1);
	assert_string_equal(err.msg, "none.log:3: CALL 'f' has no results: "
				     "simrd cannot replay an op without "
				     "outputs");
	/* a log without TIME (gpumemsim-record's: SHAPES, no times; issue
	 * 37): simrd's parse reads j["TIME"] of every CALL and fails; read
	 * as 0 it left every score 0 and a thrash limit of 0, and the
	 * replay of the recorded densenet121 never ended. It loads (its
	 * baseline, an unlimited run, needs no times: the baseline peak is
	 * w's 40 bytes and a's 40) and the replay refuses it, naming the
	 * CALL's line: it is complete at its ALIAS, line 5. One op, so
	 * that before the fix the replay ended (returned 0) rather than
	 * hang this test. */
	const char *untimed =
		"{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"w\"}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"w\","
		"\"MEMORY\":\"40\"}\n"
		"{\"INSTRUCTION\":\"CALL\",\"NAME\":\"relu\","
		"\"ARGS\":[\"w\"],\"RESULT\":[\"a\"],"
		"\"SHAPES\":[\"float32[10]\",\"float32[10]\"]}\n"
		"{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\","
		"\"MEMORY\":\"40\"}\n"
		"{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\","
		"\"ALIAS\":\"-1\"}\n"
		"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"a\"}\n";
	tr = load_text("untimed.log", untimed);
	struct dtr_baseline ub;
	dtr_baseline(tr, &ub);
	assert_int_equal(ub.peak_bytes, 80);
	struct dtr_opts uo = {DTR_H_DTR, ub.peak_bytes, 0};
	struct dtr_result ur;
	int untimed_rc = dtr_serial_run(tr, &uo, &ur, &err);
	dtr_trace_free(tr);
	assert_int_equal(untimed_rc, -1);
	assert_string_equal(err.msg,
			    "untimed.log:5: CALL 'relu' has no TIME: the "
			    "serial replay (simrd) needs every op's measured "
			    "time; a log without times replays as a workload "
			    "(an experiment's trace:, or gpumemsim simulate "
			    "LOG)");
	/* a missing file */
	assert_int_equal(dtr_trace_load("/nonexistent/x.log", &tr, &err), -1);
	assert_non_null(strstr(err.msg, "/nonexistent/x.log"));
	/* an unknown heuristic in the options */
	tr = load_six();
	struct dtr_opts o = {DTR_H_COUNT, 400, 750};
	struct dtr_result r;
	assert_int_equal(dtr_serial_run(tr, &o, &r, &err), -1);
	dtr_trace_free(tr);
}

/* ---- The command line ------------------------------------------------------ */

/* `gpumemsim dtr` on the hand-worked trace: the row is test_hand_six's
 * figures (overhead 851/750 to 17 digits); bad options exit 2. */
static void test_cli(void **state)
{
	(void)state;
	char path[64], args[256];
	tmp_text(path, "six", six_log);
	char *out;
	snprintf(args, sizeof args, "dtr %s --budget 400 --csv", path);
	assert_int_equal(sh(args, &out), 0);
	assert_non_null(strstr(out, ",dtr,400,ok,1.1346666666666667,851,410,"
				    "750,100,1,2,3,360\n"));
	free(out);
	/* --ratio: int(410 x 0.5) = 205 B, and the human report */
	snprintf(args, sizeof args, "dtr %s --ratio 0.5 --heuristic lru",
		 path);
	assert_int_equal(sh(args, &out), 0);
	assert_non_null(strstr(out, "budget         205 B"));
	assert_non_null(strstr(out, "heuristic      lru"));
	free(out);
	const char *bad[] = {"--heuristic DTR", "--ratio 0", "--ratio x",
			     "--ratio 0.5 --budget 1GiB", "--budget 1XB",
			     "--remat-limit -1", "--frobnicate"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(args, sizeof args, "dtr %s %s", path, bad[i]);
		assert_int_equal(sh(args, &out), 2);
		free(out);
	}
	assert_int_equal(sh("dtr /nonexistent/x.log", &out), 2);
	assert_non_null(strstr(out, "/nonexistent/x.log"));
	free(out);
	remove(path);
}

/* ---- The reference --------------------------------------------------------- */

/* The trace directory (wl_dtr_dir: $GMS_DTR_DIR, else
 * ../shared/data/dtr), where the reference lies beside the logs. */
static const char *data_dir(void)
{
	static char dir[512]; /* one test thread */
	if (wl_dtr_dir(dir, sizeof dir) < 0)
		fail_msg("the trace directory's path is too long");
	return dir;
}

static double num(const struct jv *o, const char *key)
{
	const struct jv *v = jv_get(o, key);
	if (!v || v->type != JV_NUM)
		fail_msg("reference: '%s' missing or not a number", key);
	return v->num;
}

/* Counters compared where the reference gives them. */
static void check_counter(const struct jv *p, const char *key, uint64_t got,
			  const char *where)
{
	const struct jv *v = jv_get(p, key);
	if (v && v->type == JV_NUM && (double)got != v->num)
		fail_msg("%s: %s %llu, simrd %.0f", where, key,
			 (unsigned long long)got, v->num);
}

/* Do a and b agree to 4 significant digits? */
static bool same4(double a, double b)
{
	return fabs(a - b) <= 5e-5 * fabs(b);
}

static void test_reference(void **state)
{
	(void)state;
	char path[1024];
	snprintf(path, sizeof path, "%s/simrd-reference.json", data_dir());
	FILE *f = fopen(path, "r");
	if (!f) {
		print_message("test_reference: %s not found (the DTR trace "
			      "directory: $GMS_DTR_DIR, else "
			      "../shared/data/dtr): skipped\n", path);
		skip();
	}
	fclose(f);
	char *text = tmp_slurp(path);
	char jerr[128];
	struct jv *ref = jv_parse(text, jerr, sizeof jerr);
	free(text);
	if (!ref)
		fail_msg("%s: %s", path, jerr);
	const struct jv *models = jv_get(ref, "models");
	assert_non_null(models);
	assert_int_equal(models->type, JV_OBJ);
	unsigned points = 0, exact = 0, walked = 0;
	for (size_t m = 0; m < models->n; m++) {
		const struct jv *mo = models->item[m];
		const struct jv *log = jv_get(mo, "log");
		assert_non_null(log);
		snprintf(path, sizeof path, "%s/%s", data_dir(), log->str);
		struct dtr_trace *tr;
		gms_err err = {{0}};
		if (dtr_trace_load(path, &tr, &err) < 0)
			fail_msg("%s", err.msg);
		struct dtr_baseline b;
		dtr_baseline(tr, &b);
		const struct jv *bl = jv_get(mo, "baseline");
		assert_true((double)b.peak_bytes == num(bl, "peak_bytes"));
		assert_true((double)b.compute_ns == num(bl, "compute_ns"));
		assert_true((double)b.const_bytes ==
			    num(bl, "const_bytes_total"));
		assert_true((double)b.n_ops == num(bl, "n_ops"));
		assert_true((double)b.n_cmds == num(bl, "n_schedule_cmds"));
		const struct jv *runs = jv_get(mo, "runs");
		assert_non_null(runs);
		for (size_t h = 0; h < runs->n; h++) {
			enum dtr_heuristic hh = DTR_H_COUNT;
			for (int k = 0; k < DTR_H_COUNT; k++)
				if (!strcmp(runs->key[h],
					    dtr_heuristic_simrd_name(k)))
					hh = (enum dtr_heuristic)k;
			if (hh == DTR_H_COUNT)
				fail_msg("reference: unknown heuristic %s",
					 runs->key[h]);
			const struct jv *pts = runs->item[h];
			for (size_t i = 0; i < pts->n; i++) {
				const struct jv *p = pts->item[i];
				char where[160];
				double ratio = num(p, "ratio");
				snprintf(where, sizeof where, "%s %s %.1f",
					 models->key[m], runs->key[h], ratio);
				/* run_pareto: int(peak x ratio), remat limit
				 * compute x (2.0 - 1) */
				struct dtr_opts o = {
					hh, dtr_budget_for_ratio(&b, ratio),
					b.compute_ns};
				if ((double)o.budget_bytes !=
				    num(p, "budget_bytes"))
					fail_msg("%s: budget %llu", where,
						 (unsigned long long)
							 o.budget_bytes);
				struct dtr_result r;
				if (dtr_serial_run(tr, &o, &r, &err) < 0)
					fail_msg("%s: %s", where, err.msg);
				const struct jv *st = jv_get(p, "status");
				assert_non_null(st);
				if (strcmp(dtr_status_name(r.status), st->str))
					fail_msg("%s: status %s, simrd %s",
						 where,
						 dtr_status_name(r.status),
						 st->str);
				const struct jv *ov = jv_get(
					p, r.status == DTR_OK
						   ? "overhead"
						   : "overhead_at_stop");
				if (!ov || ov->type != JV_NUM ||
				    !same4(r.overhead, ov->num))
					fail_msg("%s: overhead %.6f", where,
						 r.overhead);
				check_counter(p, "clock_end", r.clock_end,
					      where);
				check_counter(p, "model_compute_ns",
					      r.model_compute_ns, where);
				check_counter(p, "remat_compute_ns",
					      r.remat_compute_ns, where);
				check_counter(p, "evictions_heuristic",
					      r.evictions_heuristic, where);
				check_counter(p, "evictions_eager_release",
					      r.evictions_eager_release, where);
				check_counter(p, "remat_ops", r.remat_ops,
					      where);
				check_counter(p, "max_memory_bytes",
					      r.max_memory_bytes, where);
				points++;
				exact += r.overhead == ov->num;
				/* the regions by a DFS each, as simrd
				 * (walk_regions): the same replay, to the
				 * last counter, as from the shared closures */
				struct dtr_result w;
				o.walk_regions = true;
				if (dtr_serial_run(tr, &o, &w, &err) < 0)
					fail_msg("%s: %s", where, err.msg);
				if (w.clock_end != r.clock_end ||
				    w.remat_compute_ns != r.remat_compute_ns ||
				    w.evictions_heuristic !=
					    r.evictions_heuristic ||
				    w.evictions_eager_release !=
					    r.evictions_eager_release ||
				    w.max_memory_bytes != r.max_memory_bytes ||
				    w.cost_evals != r.cost_evals)
					fail_msg("%s: walked regions differ",
						 where);
				walked++;
			}
		}
		dtr_trace_free(tr);
	}
	jv_free(ref);
	/* 3 traces x 4 heuristics x 8 budgets, every overhead to the last
	 * bit (the same clock, the same division) */
	assert_int_equal(points, 96);
	assert_int_equal(exact, 96);
	assert_int_equal(walked, 96);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_div_rounding),
		cmocka_unit_test(test_cost),
		cmocka_unit_test(test_hand_six),
		cmocka_unit_test(test_hand_six_heuristics),
		cmocka_unit_test(test_hand_six_stops),
		cmocka_unit_test(test_views_copy_from_mutate),
		cmocka_unit_test(test_closures_past_4096),
		cmocka_unit_test(test_simrd_parse_rules),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_reference),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
