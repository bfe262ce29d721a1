/*
 * test_mem.c - the device allocator models against answers worked out by
 * hand (never copied from the program's output).
 *
 * Notation in the comments: M = 1 MiB, K = 1 KiB; [a, b) is an address
 * range in the allocator's virtual address space (pool/segment/region k
 * starts where k-1 ends).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../sim/mem.h"

#define K GMS_KIB
#define M GMS_MIB

/* ---------------------------------------------------------------- helpers */

static struct mem_dev open_dev(const char *model, uint64_t budget,
			       uint64_t pool)
{
	struct mem_dev d;
	struct mem_cfg cfg = {.budget = budget, .pool_size = pool};
	gms_err err = {{0}};
	int rc = mem_dev_open(&d, model, &cfg, &err);
	if (rc != 0)
		fail_msg("mem_dev_open(%s): %s", model, err.msg);
	return d;
}

/* allocate, must succeed, returns the handle */
static mem_handle A(struct mem_dev *d, uint64_t bytes, unsigned flags)
{
	mem_handle h = MEM_HANDLE_NONE;
	assert_int_equal(d->ops->alloc(d->a, bytes, flags, &h), 0);
	assert_true(h != MEM_HANDLE_NONE);
	return h;
}

/* allocate, must fail */
static void A_FAIL(struct mem_dev *d, uint64_t bytes, unsigned flags)
{
	mem_handle h = MEM_HANDLE_NONE;
	assert_int_equal(d->ops->alloc(d->a, bytes, flags, &h), -1);
}

static void D(struct mem_dev *d, mem_handle h)
{
	d->ops->free(d->a, h);
}

static uint64_t AD(struct mem_dev *d, mem_handle h)
{
	return d->ops->addr(d->a, h);
}

static struct mem_stats ST(struct mem_dev *d)
{
	struct mem_stats s;
	d->ops->stats(d->a, &s);
	return s;
}

static void assert_frag(struct mem_dev *d, double want)
{
	struct mem_stats s = ST(d);
	double got = mem_frag(&s);
	if (got < want - 1e-12 || got > want + 1e-12)
		fail_msg("mem_frag %.15f, want %.15f", got, want);
}

/* -------------------------------------------------------------- registry */

static void test_registry(void **state)
{
	(void)state;
	const char *names[] = {"pool-bestfit", "highend", "bfc", "caching",
			       "arena"};
	size_t n = 0;
	while (mem_model(n))
		n++;
	assert_int_equal(n, 5);
	for (size_t i = 0; i < 5; i++) {
		assert_non_null(mem_find(names[i]));
		assert_ptr_equal(mem_find(names[i]), mem_model(i));
		assert_string_equal(mem_model(i)->name, names[i]);
		assert_non_null(mem_model(i)->summary);
	}
	assert_null(mem_find("cnmem"));
	assert_null(mem_find(NULL));

	struct mem_dev d;
	struct mem_cfg cfg = {.budget = 10 * M};
	gms_err err = {{0}};
	assert_int_equal(mem_dev_open(&d, "nope", &cfg, &err), -1);
	assert_non_null(strstr(err.msg, "nope"));
	assert_null(d.a);
	mem_dev_close(&d); /* harmless on a failed open */

	cfg.budget = 0;
	assert_int_equal(mem_dev_open(&d, "bfc", &cfg, &err), -1);
	cfg.budget = 10 * M;
	cfg.pool_size = 11 * M;
	assert_int_equal(mem_dev_open(&d, "pool-bestfit", &cfg, &err), -1);
	assert_non_null(strstr(err.msg, "pool_size"));
}

/* ------------------------------------- vDNN++ IV-B: 9-unit vs 11-unit pool */

/*
 * A1(5) A2(2) A3(1) D2 A4(1) D1 D3 A5(8), unit U = 1 MiB (a multiple of
 * CNMeM's 512-byte granularity, so sizes are exact).
 *
 * 9-unit pool:
 *   A1 -> [0,5)  A2 -> [5,7)  A3 -> [7,8)        free: [8,9)
 *   D2                                           free: [5,7) 2, [8,9) 1
 *   A4(1): best fit = smallest that fits = [8,9) -> A4 at 8
 *                                                free: [5,7)
 *   D1: [0,5) merges with [5,7)                  free: [0,7)
 *   D3: [7,8) merges                             free: [0,8)
 *   A5(8) -> [0,8).  Served: 9 units used, one pool.
 * 11-unit pool:
 *   A1 -> [0,5)  A2 -> [5,7)  A3 -> [7,8)        free: [8,11) 3
 *   D2                                           free: [5,7) 2, [8,11) 3
 *   A4(1): best fit = [5,7) -> A4 at 5           free: [6,7) 1, [8,11) 3
 *   D1: [0,5) cannot merge (A4 at 5)             free: [0,5), [6,7), [8,11)
 *   D3: [7,8) merges with both neighbours        free: [0,5) 5, [6,11) 5
 *   A5(8): no free block of 8 although 10 units are free -> a new pool of
 *   exactly 8 units (at address 11) if the budget allows, else failure.
 *   Fragmentation before A5: 1 - 5/10 = 0.5.
 */
static void ivb_prefix(struct mem_dev *d, mem_handle *a4, uint64_t a4_addr)
{
	const uint64_t U = M;
	mem_handle a1 = A(d, 5 * U, 0);
	mem_handle a2 = A(d, 2 * U, 0);
	mem_handle a3 = A(d, 1 * U, 0);
	assert_int_equal(AD(d, a1), 0);
	assert_int_equal(AD(d, a2), 5 * U);
	assert_int_equal(AD(d, a3), 7 * U);
	D(d, a2);
	*a4 = A(d, 1 * U, 0);
	assert_int_equal(AD(d, *a4), a4_addr);
	D(d, a1);
	D(d, a3);
}

static void test_vdnnpp_ivb_pool9(void **state)
{
	(void)state;
	const uint64_t U = M;
	const char *models[] = {"pool-bestfit", "highend"};
	for (int i = 0; i < 2; i++) {
		struct mem_dev d = open_dev(models[i], 9 * U, 9 * U);
		mem_handle a4;
		ivb_prefix(&d, &a4, 8 * U);
		struct mem_stats s = ST(&d);
		assert_int_equal(s.largest_free, 8 * U);
		assert_frag(&d, 0.0);
		mem_handle a5 = A(&d, 8 * U, 0);
		assert_int_equal(AD(&d, a5), 0);
		s = ST(&d);
		assert_int_equal(s.allocated, 9 * U);
		assert_int_equal(s.reserved, 9 * U);
		assert_int_equal(s.peak_allocated, 9 * U);
		assert_int_equal(s.largest_free, 0);
		assert_int_equal(s.n_device_malloc, 1);
		assert_int_equal(s.n_fail, 0);
		assert_int_equal(s.n_alloc, 5);
		assert_int_equal(s.n_free, 3);
		mem_dev_close(&d);
	}
}

static void test_vdnnpp_ivb_pool11(void **state)
{
	(void)state;
	const uint64_t U = M;
	/* budget == pool: A5 fails */
	struct mem_dev d = open_dev("pool-bestfit", 11 * U, 11 * U);
	mem_handle a4;
	ivb_prefix(&d, &a4, 5 * U);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 1 * U);
	assert_int_equal(s.largest_free, 5 * U);
	assert_frag(&d, 0.5);
	A_FAIL(&d, 8 * U, 0);
	s = ST(&d);
	assert_int_equal(s.n_fail, 1);
	assert_int_equal(s.allocated, 1 * U); /* unchanged */
	assert_int_equal(s.reserved, 11 * U);
	assert_int_equal(s.n_device_malloc, 1);
	mem_dev_close(&d);

	/* budget 20 units: a new pool of exactly 8 units, never merged */
	d = open_dev("pool-bestfit", 20 * U, 11 * U);
	ivb_prefix(&d, &a4, 5 * U);
	mem_handle a5 = A(&d, 8 * U, 0);
	assert_int_equal(AD(&d, a5), 11 * U);
	s = ST(&d);
	assert_int_equal(s.reserved, 19 * U);
	assert_int_equal(s.peak_reserved, 19 * U);
	assert_int_equal(s.allocated, 9 * U);
	assert_int_equal(s.n_device_malloc, 2);
	/* free blocks [0,5) and [6,11): 10 free, largest 5 */
	assert_int_equal(s.largest_free, 5 * U);
	assert_frag(&d, 0.5);
	/* freeing everything: pool 1 coalesces to 11, pool 2 stays 8 */
	D(&d, a4);
	D(&d, a5);
	s = ST(&d);
	assert_int_equal(s.allocated, 0);
	assert_int_equal(s.largest_free, 11 * U);
	assert_frag(&d, 1.0 - 11.0 / 19.0);
	/* 12 units fit in neither pool (never merged): fails, 19 + 12 > 20 */
	A_FAIL(&d, 12 * U, 0);
	mem_dev_close(&d);
}

/* -------------------------- vDNN++ III-B: unavoidable fragmentation case */

/*
 * a11 a12 a13 a14 d1 a22 a23 a24 d2 a33 a34 d3 a44 d4, a_ij freed at d_j,
 * sizes a1j = 1 unit, a2j = 1/3, a3j = 2/3, a4j = 2. Unit = 3 MiB, so
 * a1j = 3M, a2j = 1M, a3j = 2M, a4j = 6M. Just before every d_j the live
 * bytes are 4 units = 12M (the aggregate peak). Pool = 12M.
 *
 *   a11 [0,3) a12 [3,6) a13 [6,9) a14 [9,12)    pool full
 *   d1: free [0,3)
 *   a22 -> [0,1)  a23 -> [1,2)  a24 -> [2,3)     (best fit: the only
 *                                                 free block, low end)
 *   d2: frees a12 [3,6) and a22 [0,1): free [0,1) 1M, [3,6) 3M
 *       (not contiguous: a23, a24 lie between)
 *   a33 (2M): best fit [3,6) -> [3,5)           free [0,1) 1M, [5,6) 1M
 *   a34 (2M): 2M free in total but no block of 2M -> FAILS in a 12M pool
 *       (live 10M; fragmentation 1 - 1M/2M = 0.5).
 * With a larger budget, a34 gets a new 2M pool at 12M and:
 *   d3: frees a13 [6,9), a23 [1,2), a33 [3,5):
 *       free [0,2) 2M (with a22's [0,1)), [3,9) 6M (with [5,6))
 *   a44 (6M): best fit [3,9) exactly -> at 3M
 *   d4: everything free: pool 1 [0,12) 12M, pool 2 [12,14) 2M.
 *   peak allocated 12M (= 4 units), peak reserved 14M, 2 pools.
 */
struct iiib {
	mem_handle a11, a12, a13, a14; /* block 1: 1 unit each, freed at d1..d4 */
	mem_handle a22, a23, a24;      /* block 2: 1/3 unit, freed at d2..d4 */
	mem_handle a33, a34;	       /* block 3: 2/3 unit, freed at d3, d4 */
	mem_handle a44;		       /* block 4: 2 units, freed at d4 */
};

static void iiib_to_a33(struct mem_dev *d, struct iiib *x)
{
	x->a11 = A(d, 3 * M, 0);
	x->a12 = A(d, 3 * M, 0);
	x->a13 = A(d, 3 * M, 0);
	x->a14 = A(d, 3 * M, 0);
	assert_int_equal(AD(d, x->a11), 0);
	assert_int_equal(AD(d, x->a12), 3 * M);
	assert_int_equal(AD(d, x->a13), 6 * M);
	assert_int_equal(AD(d, x->a14), 9 * M);
	D(d, x->a11); /* d1 */
	x->a22 = A(d, 1 * M, 0);
	x->a23 = A(d, 1 * M, 0);
	x->a24 = A(d, 1 * M, 0);
	assert_int_equal(AD(d, x->a22), 0);
	assert_int_equal(AD(d, x->a23), 1 * M);
	assert_int_equal(AD(d, x->a24), 2 * M);
	D(d, x->a12); /* d2 */
	D(d, x->a22);
	x->a33 = A(d, 2 * M, 0);
	assert_int_equal(AD(d, x->a33), 3 * M);
	struct mem_stats s = ST(d);
	assert_int_equal(s.allocated, 10 * M);
	assert_int_equal(s.largest_free, 1 * M);
}

static void test_vdnnpp_iiib(void **state)
{
	(void)state;
	struct iiib x;
	/* pool = budget = aggregate peak (4 units): best fit cannot serve */
	struct mem_dev d = open_dev("pool-bestfit", 12 * M, 12 * M);
	iiib_to_a33(&d, &x);
	assert_frag(&d, 0.5);
	A_FAIL(&d, 2 * M, 0); /* a34 */
	assert_int_equal(ST(&d).n_fail, 1);
	mem_dev_close(&d);

	/* room for a second pool: the sequence completes with 14M */
	d = open_dev("pool-bestfit", 24 * M, 12 * M);
	iiib_to_a33(&d, &x);
	x.a34 = A(&d, 2 * M, 0);
	assert_int_equal(AD(&d, x.a34), 12 * M);
	D(&d, x.a13); /* d3 */
	D(&d, x.a23);
	D(&d, x.a33);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 6 * M); /* a14 a24 a34 */
	assert_int_equal(s.largest_free, 6 * M);
	assert_frag(&d, 1.0 - 6.0 / 8.0); /* free [0,2) and [3,9) */
	x.a44 = A(&d, 6 * M, 0);
	assert_int_equal(AD(&d, x.a44), 3 * M);
	D(&d, x.a14); /* d4 */
	D(&d, x.a24);
	D(&d, x.a34);
	D(&d, x.a44);
	s = ST(&d);
	assert_int_equal(s.allocated, 0);
	assert_int_equal(s.requested, 0);
	assert_int_equal(s.reserved, 14 * M);
	assert_int_equal(s.peak_reserved, 14 * M);
	assert_int_equal(s.peak_allocated, 12 * M);
	assert_int_equal(s.peak_requested, 12 * M);
	assert_int_equal(s.largest_free, 12 * M);
	assert_int_equal(s.n_device_malloc, 2);
	assert_frag(&d, 1.0 - 12.0 / 14.0);
	mem_dev_close(&d);
}

/*
 * frag_at_peak and frag_max (mem_frag_track) on the III-B sequence, with
 * a sample after every allocation (failed ones too) and every free, as
 * the executor takes them. mem_frag after each step, 24M budget:
 *   a11 a12 a13 a14: allocated 3, 6, 9, 12M; one free block or none: 0
 *   d1 (a11): free [0,3): 0;  a22 a23 a24: one free block or none: 0
 *     (a24 is the second time at 12M)
 *   d2: a12 -> free [3,6): 0; a22 -> [0,1) [3,6): 1 - 3/4 = 0.25
 *   a33 -> free [0,1) [5,6): 1 - 1/2 = 0.5
 *   a34 -> new pool, allocated 12M (third time), same free: 0.5
 *   d3: a13 -> [0,1) [5,9): 1 - 4/5 = 0.2; a23 -> [0,2) [5,9):
 *       1 - 4/6; a33 -> [0,2) [3,9): 1 - 6/8 = 0.25
 *   a44 -> [3,9) taken, free [0,2) only: 0 (fourth time at 12M)
 *   d4: a14 -> [0,2) [9,12): 1 - 3/5 = 0.4; a24 -> [0,3) [9,12):
 *       0.5; a34 -> pool 2 free too, [0,3) [9,12) [12,14): 1 - 3/8 =
 *       0.625; a44 -> [0,12) [12,14): 1 - 12/14
 * The peak of allocated bytes, 12M, is reached four times, with 0, 0, 0.5
 * and 0: frag_at_peak = 0.5 (the worst of them; the first alone would say
 * 0). frag_max = 0.625, right after a free (d4's a34). In a 12M budget
 * a34 fails (10M allocated, 0.5, as after a33): the peak is reached only
 * with a full pool (a14, a24), frag_at_peak 0; frag_max 0.5.
 */
static void test_frag_track_iiib(void **state)
{
	(void)state;
	struct mem_frag_track t = {0};
	struct mem_dev d = open_dev("pool-bestfit", 24 * M, 12 * M);
	struct mem_stats s;
#define SAMPLE(op)                                                       \
	do {                                                             \
		op;                                                      \
		s = ST(&d);                                              \
		mem_frag_sample(&t, &s);                                 \
	} while (0)
	mem_handle a11, a12, a13, a14, a22, a23, a24, a33, a34, a44;
	SAMPLE(a11 = A(&d, 3 * M, 0));
	SAMPLE(a12 = A(&d, 3 * M, 0));
	SAMPLE(a13 = A(&d, 3 * M, 0));
	SAMPLE(a14 = A(&d, 3 * M, 0));
	SAMPLE(D(&d, a11));
	SAMPLE(a22 = A(&d, 1 * M, 0));
	SAMPLE(a23 = A(&d, 1 * M, 0));
	SAMPLE(a24 = A(&d, 1 * M, 0));
	assert_true(t.at_peak == 0.0 && t.max == 0.0);
	SAMPLE(D(&d, a12));
	SAMPLE(D(&d, a22));
	SAMPLE(a33 = A(&d, 2 * M, 0));
	SAMPLE(a34 = A(&d, 2 * M, 0));
	assert_int_equal(t.peak, 12 * M);
	assert_true(t.at_peak == 0.5);
	SAMPLE(D(&d, a13));
	SAMPLE(D(&d, a23));
	SAMPLE(D(&d, a33));
	SAMPLE(a44 = A(&d, 6 * M, 0));
	SAMPLE(D(&d, a14));
	SAMPLE(D(&d, a24));
	assert_true(t.max == 0.5);
	SAMPLE(D(&d, a34));
	SAMPLE(D(&d, a44));
	assert_int_equal(t.n, 20);
	assert_int_equal(t.peak, 12 * M);
	assert_true(t.at_peak == 0.5);
	assert_true(t.max == 1.0 - 3.0 / 8.0);
	mem_dev_close(&d);

	struct iiib x;
	d = open_dev("pool-bestfit", 12 * M, 12 * M);
	t = (struct mem_frag_track){0};
	SAMPLE(x.a11 = A(&d, 3 * M, 0));
	SAMPLE(x.a12 = A(&d, 3 * M, 0));
	SAMPLE(x.a13 = A(&d, 3 * M, 0));
	SAMPLE(x.a14 = A(&d, 3 * M, 0));
	SAMPLE(D(&d, x.a11));
	SAMPLE(x.a22 = A(&d, 1 * M, 0));
	SAMPLE(x.a23 = A(&d, 1 * M, 0));
	SAMPLE(x.a24 = A(&d, 1 * M, 0));
	SAMPLE(D(&d, x.a12));
	SAMPLE(D(&d, x.a22));
	SAMPLE(x.a33 = A(&d, 2 * M, 0));
	SAMPLE(A_FAIL(&d, 2 * M, 0));
	assert_int_equal(t.n, 12);
	assert_true(t.at_peak == 0.0);
	assert_true(t.max == 0.5);
#undef SAMPLE
	mem_dev_close(&d);
}

/* --------------------------------------------------- highend placement */

/*
 * highend, pool 10M, budget 12M:
 *   A(2M)        best fit [0,10) low end     -> 0        free [2,10)
 *   B(3M, HIGH)  highest fitting [2,10), top -> 7        free [2,7)
 *   C(1M)        best fit [2,7) low end      -> 2        free [3,7)
 *   D(1M, HIGH)  [3,7) top                   -> 6        free [3,6)
 *   free B: [7,10) (D at 6 keeps it apart)   free [3,6) 3M, [7,10) 3M
 *   E(2M, HIGH)  highest fitting [7,10), top -> 8        free [3,6), [7,8)
 *   F(2M)        best fit: only [3,6) fits   -> 3        free [5,6), [7,8)
 *   G(1M)        tie of two 1M blocks, lowest address -> 5
 *   H(1M, HIGH)  the only free block [7,8)   -> 7        pool full
 *   I(2M, HIGH)  nothing free: new pool of 2M at 10M.
 * pool-bestfit ignores MEM_HIGH: B would go to 2.
 */
static void test_highend_placement(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("highend", 12 * M, 10 * M);
	mem_handle a = A(&d, 2 * M, 0);
	mem_handle b = A(&d, 3 * M, MEM_HIGH);
	mem_handle c = A(&d, 1 * M, 0);
	mem_handle dd = A(&d, 1 * M, MEM_HIGH);
	assert_int_equal(AD(&d, a), 0);
	assert_int_equal(AD(&d, b), 7 * M);
	assert_int_equal(AD(&d, c), 2 * M);
	assert_int_equal(AD(&d, dd), 6 * M);
	D(&d, b);
	assert_int_equal(ST(&d).largest_free, 3 * M);
	assert_frag(&d, 0.5);
	mem_handle e = A(&d, 2 * M, MEM_HIGH);
	assert_int_equal(AD(&d, e), 8 * M);
	mem_handle f = A(&d, 2 * M, 0);
	assert_int_equal(AD(&d, f), 3 * M);
	mem_handle g = A(&d, 1 * M, 0);
	assert_int_equal(AD(&d, g), 5 * M);
	mem_handle h = A(&d, 1 * M, MEM_HIGH);
	assert_int_equal(AD(&d, h), 7 * M);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 10 * M);
	assert_int_equal(s.largest_free, 0);
	mem_handle i = A(&d, 2 * M, MEM_HIGH);
	assert_int_equal(AD(&d, i), 10 * M);
	s = ST(&d);
	assert_int_equal(s.n_device_malloc, 2);
	assert_int_equal(s.reserved, 12 * M);
	mem_dev_close(&d);

	d = open_dev("pool-bestfit", 12 * M, 10 * M);
	a = A(&d, 2 * M, 0);
	b = A(&d, 3 * M, MEM_HIGH);
	assert_int_equal(AD(&d, b), 2 * M);
	mem_dev_close(&d);
}

/*
 * The heuristic's point (vDNN++ IV-B): forward pass keeps x1 x2 x3 (1M
 * each) and offloads y1 y2 (2M each, MEM_HIGH), allocated in the order
 * x1 y1 x2 y2 x3 in a 10M pool; then y1, y2 are freed (offloaded).
 *   highend:      x1 0, y1 8, x2 1, y2 6, x3 2; free after: [3,10) one
 *                 block of 7M -> fragmentation 0.
 *   pool-bestfit: x1 0, y1 1, x2 3, y2 4, x3 6; free after: [1,3) 2M,
 *                 [4,6) 2M, [7,10) 3M -> fragmentation 1 - 3/7 = 4/7.
 */
static void test_highend_forward(void **state)
{
	(void)state;
	const char *models[] = {"highend", "pool-bestfit"};
	const uint64_t want[2][5] = {{0, 8, 1, 6, 2}, {0, 1, 3, 4, 6}};
	const double frag[2] = {0.0, 4.0 / 7.0};
	for (int m = 0; m < 2; m++) {
		struct mem_dev d = open_dev(models[m], 10 * M, 0);
		mem_handle x1 = A(&d, 1 * M, 0);
		mem_handle y1 = A(&d, 2 * M, MEM_HIGH);
		mem_handle x2 = A(&d, 1 * M, 0);
		mem_handle y2 = A(&d, 2 * M, MEM_HIGH);
		mem_handle x3 = A(&d, 1 * M, 0);
		assert_int_equal(AD(&d, x1), want[m][0] * M);
		assert_int_equal(AD(&d, y1), want[m][1] * M);
		assert_int_equal(AD(&d, x2), want[m][2] * M);
		assert_int_equal(AD(&d, y2), want[m][3] * M);
		assert_int_equal(AD(&d, x3), want[m][4] * M);
		D(&d, y1);
		D(&d, y2);
		assert_frag(&d, frag[m]);
		mem_dev_close(&d);
	}
}

/* --------------------------------------------- pool-bestfit rounding */

/*
 * CNMeM rounds to 512 B: 1 B -> 512, 513 B -> 1024; pool_size 0 is the
 * whole budget rounded down to 512 (budget 10000 -> 9728 = 19 * 512).
 */
static void test_pool_rounding(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("pool-bestfit", 10000, 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.reserved, 9728);
	assert_int_equal(s.n_device_malloc, 1);
	mem_handle a = A(&d, 1, 0);
	mem_handle b = A(&d, 513, 0);
	assert_int_equal(AD(&d, a), 0);
	assert_int_equal(AD(&d, b), 512);
	s = ST(&d);
	assert_int_equal(s.requested, 514);
	assert_int_equal(s.allocated, 1536);
	assert_int_equal(s.largest_free, 9728 - 1536);
	/* 9728 - 1536 = 8192 free; 8193 rounds to 8704 > 472 left -> fail */
	A_FAIL(&d, 8193, 0);
	mem_handle c = A(&d, 8192, 0);
	assert_int_equal(AD(&d, c), 1536);
	D(&d, a);
	D(&d, b);
	D(&d, c);
	mem_dev_close(&d);
}

/* ---------------------------------------------------------------- bfc */

/*
 * Rounding and best fit across bins. Budget 1 GiB, pool_size 0: one
 * region of the whole budget taken up front (1 device allocation).
 *   1 B    -> rounded 256, chunk 1G >= 2 * 256 -> split, at 0
 *   1000 B -> rounded 1024, at 256
 */
static void test_bfc_rounding(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("bfc", GMS_GIB, 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.reserved, GMS_GIB);
	assert_int_equal(s.n_device_malloc, 1);
	mem_handle a = A(&d, 1, 0);
	mem_handle b = A(&d, 1000, 0);
	assert_int_equal(AD(&d, a), 0);
	assert_int_equal(AD(&d, b), 256);
	s = ST(&d);
	assert_int_equal(s.requested, 1001);
	assert_int_equal(s.allocated, 1280);
	assert_int_equal(s.largest_free, GMS_GIB - 1280);
	mem_dev_close(&d);
}

/*
 * Best fit over bins (bin i = sizes [256 << i, 256 << (i+1)): bin 11 is
 * [512K, 1M), bin 13 is [2M, 4M)). Budget 8M, one region:
 *   p0 600K [0,600K) h1 16K [600K,616K) p1 768K [616K,1384K)
 *   h2 16K [1384K,1400K) p2 2M [1400K,3448K) h3 16K [3448K,3464K)
 *   p3 600K [3464K,4064K) h4 16K [4064K,4080K), rest [4080K,8M) free.
 * Free p0..p3: free chunks 600K@0, 768K@616K (bin 11), 2M@1400K (bin 13),
 * 600K@3464K (bin 11), and the 8M-4080K = 4112K tail (bin 14).
 *   550K: bin 11, smallest fitting 600K, tie -> lowest address: 0.
 *         600K < 1100K and 50K < 128M: no split, the whole 600K is used.
 *   700K: bin 11: 768K at 616K (no split: 768K < 1400K).
 *   800K: bin 11 has nothing >= 800K; bin 12 empty; bin 13: 2M at 1400K,
 *         2M >= 1600K -> split, used [1400K, 2200K).
 *   550K again: 600K at 3464K.
 */
static void test_bfc_bins(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("bfc", 8 * M, 0);
	mem_handle p0 = A(&d, 600 * K, 0), h1 = A(&d, 16 * K, 0);
	mem_handle p1 = A(&d, 768 * K, 0), h2 = A(&d, 16 * K, 0);
	mem_handle p2 = A(&d, 2 * M, 0), h3 = A(&d, 16 * K, 0);
	mem_handle p3 = A(&d, 600 * K, 0), h4 = A(&d, 16 * K, 0);
	assert_int_equal(AD(&d, p1), 616 * K);
	assert_int_equal(AD(&d, p2), 1400 * K);
	assert_int_equal(AD(&d, p3), 3464 * K);
	assert_int_equal(AD(&d, h4), 4064 * K);
	D(&d, p0);
	D(&d, p1);
	D(&d, p2);
	D(&d, p3);
	assert_int_equal(ST(&d).largest_free, 8 * M - 4080 * K);
	mem_handle q0 = A(&d, 550 * K, 0);
	assert_int_equal(AD(&d, q0), 0);
	assert_int_equal(ST(&d).allocated, 64 * K + 600 * K);
	mem_handle q1 = A(&d, 700 * K, 0);
	assert_int_equal(AD(&d, q1), 616 * K);
	assert_int_equal(ST(&d).allocated, 64 * K + 600 * K + 768 * K);
	mem_handle q2 = A(&d, 800 * K, 0);
	assert_int_equal(AD(&d, q2), 1400 * K);
	assert_int_equal(ST(&d).allocated,
			 64 * K + 600 * K + 768 * K + 800 * K);
	mem_handle q3 = A(&d, 550 * K, 0);
	assert_int_equal(AD(&d, q3), 3464 * K);
	(void)h1;
	(void)h2;
	(void)h3;
	mem_dev_close(&d);
}

/*
 * Split rule with kMaxInternalFragmentation (128 MiB). Budget 300M, one
 * region [0,300M).
 *   200M: 300M < 400M and 300M - 200M = 100M < 128M -> no split: the whole
 *         300M chunk is in use (allocated 300M, nothing free).
 *   free; 160M: 300M < 320M but 140M >= 128M -> split: allocated 160M,
 *         free 140M.
 */
static void test_bfc_split_rule(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("bfc", 300 * M, 0);
	mem_handle a = A(&d, 200 * M, 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 300 * M);
	assert_int_equal(s.requested, 200 * M);
	assert_int_equal(s.largest_free, 0);
	A_FAIL(&d, 256, 0);
	D(&d, a);
	mem_handle b = A(&d, 160 * M, 0);
	s = ST(&d);
	assert_int_equal(AD(&d, b), 0);
	assert_int_equal(s.allocated, 160 * M);
	assert_int_equal(s.largest_free, 140 * M);
	assert_int_equal(s.peak_allocated, 300 * M);
	mem_dev_close(&d);
}

/*
 * Coalescing. Budget 1M: A [0,256K) B [256K,512K) C [512K,768K)
 * D [768K,1M) (exact fit, no split).
 *   free A, C: free [0,256K), [512K,768K): largest 256K of 512K -> 0.5
 *   free B: merges with the next (C) and the previous (A): [0,768K)
 *   700K -> 768K chunk at 0, 768K < 1400K: no split; allocated 1M.
 */
static void test_bfc_coalesce(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("bfc", 1 * M, 0);
	mem_handle a = A(&d, 256 * K, 0), b = A(&d, 256 * K, 0);
	mem_handle c = A(&d, 256 * K, 0), e = A(&d, 256 * K, 0);
	assert_int_equal(AD(&d, e), 768 * K);
	D(&d, a);
	D(&d, c);
	assert_int_equal(ST(&d).largest_free, 256 * K);
	assert_frag(&d, 0.5);
	D(&d, b);
	assert_int_equal(ST(&d).largest_free, 768 * K);
	assert_frag(&d, 0.0);
	mem_handle f = A(&d, 700 * K, 0);
	assert_int_equal(AD(&d, f), 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 1 * M);
	assert_int_equal(s.requested, 700 * K + 256 * K);
	mem_dev_close(&d);
}

/*
 * allow_growth (pool_size = first region) and garbage collection.
 * Budget 16M, pool_size 1M; curr = 1M.
 *   a 512K: no chunk; Extend: 512K <= curr -> region 1M at 0, curr -> 2M;
 *           1M >= 2*512K -> split, a at 0.
 *   b 768K: free [512K,1M) too small; Extend: region 2M at 1M, curr -> 4M;
 *           split, b at 1M.
 *   c 5M:   Extend: 5M > 4M -> curr 8M (increased, not doubled after);
 *           region 8M at 3M; 8M < 10M and 3M < 128M: no split.
 *   e 4M:   free chunks 512K, 1.25M; Extend: available 16M - 11M = 5M,
 *           region min(8M, 5M) = 5M at 11M, curr -> 16M; 5M < 8M, 1M <
 *           128M: no split. reserved 16M, 4 device allocations.
 *   g 256:  best fit 512K at 512K (split).
 *   free c (its 8M region is wholly free).
 *   9M:     no chunk; Extend: available 0; GC: free regions 8M, 0 + 8M <
 *           9M -> no; fails, nothing deallocated.
 *   free e (5M region wholly free).
 *   9M:     Extend fails; GC: 8M + 5M = 13M >= 9M -> both regions freed
 *           (2 device frees, reserved 3M); Extend: available 13M, 9M <=
 *           curr 16M -> region min(16M, 13M) = 13M at 16M (addresses are
 *           not reused), no split (13M < 18M, 4M < 128M).
 */
static void test_bfc_growth(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("bfc", 16 * M, 1 * M);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.reserved, 0);
	assert_int_equal(s.n_device_malloc, 0);
	mem_handle a = A(&d, 512 * K, 0);
	assert_int_equal(AD(&d, a), 0);
	assert_int_equal(ST(&d).reserved, 1 * M);
	mem_handle b = A(&d, 768 * K, 0);
	assert_int_equal(AD(&d, b), 1 * M);
	assert_int_equal(ST(&d).reserved, 3 * M);
	mem_handle c = A(&d, 5 * M, 0);
	assert_int_equal(AD(&d, c), 3 * M);
	s = ST(&d);
	assert_int_equal(s.reserved, 11 * M);
	assert_int_equal(s.allocated, 512 * K + 768 * K + 8 * M);
	mem_handle e = A(&d, 4 * M, 0);
	assert_int_equal(AD(&d, e), 11 * M);
	s = ST(&d);
	assert_int_equal(s.reserved, 16 * M);
	assert_int_equal(s.n_device_malloc, 4);
	assert_int_equal(s.allocated, 512 * K + 768 * K + 8 * M + 5 * M);
	mem_handle g = A(&d, 256, 0);
	assert_int_equal(AD(&d, g), 512 * K);
	D(&d, c);
	A_FAIL(&d, 9 * M, 0);
	s = ST(&d);
	assert_int_equal(s.n_fail, 1);
	assert_int_equal(s.reserved, 16 * M);
	assert_int_equal(s.n_device_free, 0);
	D(&d, e);
	mem_handle h = A(&d, 9 * M, 0);
	assert_int_equal(AD(&d, h), 16 * M);
	s = ST(&d);
	assert_int_equal(s.n_device_free, 2);
	assert_int_equal(s.n_device_malloc, 5);
	assert_int_equal(s.reserved, 16 * M);
	assert_int_equal(s.peak_reserved, 16 * M);
	assert_int_equal(s.allocated, 512 * K + 256 + 768 * K + 13 * M);
	(void)a;
	(void)b;
	(void)g;
	mem_dev_close(&d);
}

/* ------------------------------------------------------------ caching */

/*
 * Budget 64M. Constants: 512 B rounding, small <= 1M in 2M segments,
 * large: < 10M -> 20M segment, else rounded up to 2M; split if the rest is
 * >= 512 (small) or > 1M (large).
 *   a 1000 B  -> 1024, small; new 2M segment at 0; split -> a at 0
 *   b 1M      -> small (<= 1M): [1024, 2M) fits -> at 1024; rest
 *                1M - 1024 >= 512 -> split
 *   c 1M + 1  -> 1M + 512, large; new 20M segment at 2M; rest 19M - 512
 *                > 1M -> split; c at 2M
 *   d 18M-512 -> large; the free 19M - 512 block at 3M + 512 fits; rest
 *                exactly 1M, not > 1M -> no split: d holds 19M - 512
 *   e 10M     -> not < 10M: segment 10M (2M multiple) at 22M, no split
 *   f 10M + 1 -> 10M + 512: segment 12M at 32M, rest 2M - 512 > 1M: split
 *   g small: the small segment's rest is [1M+1024, 2M) = 1M - 1024;
 *     g = 1M - 1536 leaves 512 >= 512 -> split, g at 1M + 1024
 *   h 512     -> the 512 B rest at 2M - 512
 *   reserved 2 + 20 + 10 + 12 = 44M, 4 segments.
 *   free e (a whole segment, cached), free c (split: not releasable).
 *   30M: no cached block >= 30M; segment 30M: 44 + 30 > 64 ->
 *        release_cached_blocks frees e's 10M segment (1 device free,
 *        reserved 34M), retry: 34 + 30 = 64 -> segment at 44M.
 *   2M:  large cached blocks: c's 1M + 512, f's rest 2M - 512: none fits;
 *        20M segment: 64 + 20 > 64; nothing releasable -> fails.
 *   free f (its 12M segment is whole again).
 *   25M: nothing cached fits; 26M segment: 64 + 26 > 64 -> release frees
 *        f's 12M segment (reserved 52M) but 52 + 26 > 64 -> fails, and the
 *        release stays done.
 */
static void test_caching(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("caching", 64 * M, 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.reserved, 0);
	mem_handle a = A(&d, 1000, 0);
	assert_int_equal(AD(&d, a), 0);
	s = ST(&d);
	assert_int_equal(s.reserved, 2 * M);
	assert_int_equal(s.allocated, 1024);
	assert_int_equal(s.requested, 1000);
	mem_handle b = A(&d, 1 * M, 0);
	assert_int_equal(AD(&d, b), 1024);
	mem_handle c = A(&d, 1 * M + 1, 0);
	assert_int_equal(AD(&d, c), 2 * M);
	s = ST(&d);
	assert_int_equal(s.reserved, 22 * M);
	assert_int_equal(s.allocated, 1024 + 1 * M + 1 * M + 512);
	assert_int_equal(s.largest_free, 19 * M - 512);
	mem_handle dd = A(&d, 18 * M - 512, 0);
	assert_int_equal(AD(&d, dd), 3 * M + 512);
	s = ST(&d);
	assert_int_equal(s.allocated, 1024 + 1 * M + 1 * M + 512 + 19 * M -
					      512);
	assert_int_equal(s.reserved, 22 * M);
	mem_handle e = A(&d, 10 * M, 0);
	assert_int_equal(AD(&d, e), 22 * M);
	mem_handle f = A(&d, 10 * M + 1, 0);
	assert_int_equal(AD(&d, f), 32 * M);
	s = ST(&d);
	assert_int_equal(s.reserved, 44 * M);
	assert_int_equal(s.n_device_malloc, 4);
	/* largest cached block: f's rest 2M - 512 */
	assert_int_equal(s.largest_free, 2 * M - 512);
	mem_handle g = A(&d, 1 * M - 1536, 0);
	assert_int_equal(AD(&d, g), 1 * M + 1024);
	mem_handle h = A(&d, 512, 0);
	assert_int_equal(AD(&d, h), 2 * M - 512);
	s = ST(&d);
	assert_int_equal(s.n_device_malloc, 4); /* served from the cache */
	uint64_t alloc_before = s.allocated;
	/* small segment full (a + b + g + h = 2M), c + d = the 20M segment,
	 * e 10M, f 10M + 512 */
	assert_int_equal(alloc_before, 2 * M + 20 * M + 10 * M + 10 * M + 512);

	D(&d, e);
	D(&d, c);
	s = ST(&d);
	assert_int_equal(s.reserved, 44 * M); /* freed blocks stay cached */
	assert_int_equal(s.largest_free, 10 * M);
	mem_handle i = A(&d, 30 * M, 0);
	assert_int_equal(AD(&d, i), 44 * M);
	s = ST(&d);
	assert_int_equal(s.n_device_free, 1);
	assert_int_equal(s.n_device_malloc, 5);
	assert_int_equal(s.reserved, 64 * M);
	assert_int_equal(s.peak_reserved, 64 * M);

	A_FAIL(&d, 2 * M, 0);
	s = ST(&d);
	assert_int_equal(s.n_fail, 1);
	assert_int_equal(s.n_device_free, 1);
	assert_int_equal(s.reserved, 64 * M);

	D(&d, f);
	A_FAIL(&d, 25 * M, 0);
	s = ST(&d);
	assert_int_equal(s.n_fail, 2);
	assert_int_equal(s.n_device_free, 2);
	assert_int_equal(s.reserved, 52 * M);
	(void)a;
	(void)b;
	(void)dd;
	(void)g;
	(void)h;
	(void)i;
	mem_dev_close(&d);
}

/*
 * Merging inside a segment and re-use of a whole cached segment:
 * budget 40M. x 4M, y 4M -> one 20M segment: x [0,4M), y [4M,8M),
 * rest [8M,20M). Free x then y: the three merge into one 20M block, which
 * then serves 15M (a 16M segment would otherwise be made) with no new
 * device allocation; rest 5M > 1M -> split.
 * Then z is freed: the segment is whole again, by merging (the one way a
 * cached whole segment appears, which release_cached_blocks counts on,
 * issue 18). 30M: nothing cached fits; a 30M segment: 20 + 30 > 40 ->
 * the 20M segment is released (1 device free, reserved 0), retry: a 30M
 * segment at 20M (addresses are not reused), 2 device mallocs.
 */
static void test_caching_merge(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("caching", 40 * M, 0);
	mem_handle x = A(&d, 4 * M, 0), y = A(&d, 4 * M, 0);
	assert_int_equal(AD(&d, y), 4 * M);
	D(&d, x);
	assert_int_equal(ST(&d).largest_free, 12 * M);
	assert_frag(&d, 1.0 - 12.0 / 16.0);
	D(&d, y);
	assert_int_equal(ST(&d).largest_free, 20 * M);
	mem_handle z = A(&d, 15 * M, 0);
	assert_int_equal(AD(&d, z), 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.n_device_malloc, 1);
	assert_int_equal(s.allocated, 15 * M);
	assert_int_equal(s.largest_free, 5 * M);
	D(&d, z);
	mem_handle big = A(&d, 30 * M, 0);
	assert_int_equal(AD(&d, big), 20 * M);
	s = ST(&d);
	assert_int_equal(s.n_device_free, 1);
	assert_int_equal(s.n_device_malloc, 2);
	assert_int_equal(s.reserved, 30 * M);
	mem_dev_close(&d);
}

/*
 * The budgets at which a run's tests go the same way (same_lo, same_hi;
 * issue 37, the baseline search's shortcut). Budget 30M:
 *   4M  -> large, nothing cached: a 20M segment (test: 0 + 20M <= 30M,
 *          passed: same_lo 20M); the rest [4M, 20M) is cached
 *   8M  -> the cached 16M block at 4M: no segment, only the test 8M <=
 *          budget (passed); rest [12M, 20M)
 *   12M -> not < 10M: a 12M segment; the cached 8M does not fit; test
 *          20M + 12M <= 30M fails (same_hi 32M - 1), release_cached_blocks
 *          finds no whole free segment, the retry fails the same way
 * So every budget in [20M, 32M - 1] makes the same run (1 failure, no
 * device free), 32M lets the 12M through, 20M - 1 refuses the 4M.
 */
static void caching_same_run(uint64_t budget, bool *ok)
{
	struct mem_dev d = open_dev("caching", budget, 0);
	mem_handle h;
	const uint64_t ask[] = {4 * M, 8 * M, 12 * M};
	for (int i = 0; i < 3; i++)
		ok[i] = d.ops->alloc(d.a, ask[i], 0, &h) == 0;
	struct mem_stats s = ST(&d);
	if (budget == 30 * M) {
		assert_int_equal(s.same_lo, 20 * M);
		assert_int_equal(s.same_hi, 32 * M - 1);
		assert_int_equal(s.n_fail, 1);
		assert_int_equal(s.n_device_free, 0);
	}
	mem_dev_close(&d);
}

static void test_caching_same(void **state)
{
	(void)state;
	bool ok[3];
	const uint64_t same[] = {30 * M, 20 * M, 32 * M - 1};
	for (int i = 0; i < 3; i++) {
		caching_same_run(same[i], ok);
		assert_true(ok[0] && ok[1] && !ok[2]);
	}
	caching_same_run(32 * M, ok);
	assert_true(ok[0] && ok[1] && ok[2]);
	caching_same_run(20 * M - 1, ok);
	assert_false(ok[0]);
	/* no other allocator tracks it */
	struct mem_dev b = open_dev("bfc", 30 * M, 0);
	assert_int_equal(ST(&b).same_hi, 0);
	mem_dev_close(&b);
}

/* --------------------------------------------------------------- arena */

static void test_arena(void **state)
{
	(void)state;
	struct mem_dev d = open_dev("arena", 10 * M, 0);
	mem_handle a = A(&d, 6 * M, 0);
	A_FAIL(&d, 5 * M, 0);
	mem_handle b = A(&d, 4 * M, 0);
	struct mem_stats s = ST(&d);
	assert_int_equal(s.allocated, 10 * M);
	assert_int_equal(s.reserved, 10 * M);
	assert_int_equal(s.largest_free, 0);
	assert_int_equal(s.n_fail, 1);
	assert_frag(&d, 0.0);
	D(&d, a);
	s = ST(&d);
	assert_int_equal(s.allocated, 4 * M);
	assert_int_equal(s.reserved, 4 * M);
	assert_int_equal(s.largest_free, 6 * M);
	assert_int_equal(s.peak_allocated, 10 * M);
	assert_int_equal(s.peak_reserved, 10 * M);
	assert_frag(&d, 0.0);
	mem_handle c = A(&d, 1, 0); /* no rounding */
	s = ST(&d);
	assert_int_equal(s.allocated, 4 * M + 1);
	assert_int_equal(s.requested, 4 * M + 1);
	assert_int_equal(s.n_device_malloc, 0);
	D(&d, b);
	D(&d, c);
	assert_int_equal(ST(&d).allocated, 0);
	assert_int_equal(ST(&d).n_free, 3);
	mem_dev_close(&d);
}

/* ------------------------------------------------- mem_frag, host, stress */

static void test_frag_values(void **state)
{
	(void)state;
	struct mem_stats s = {0};
	assert_true(mem_frag(&s) == 0.0); /* nothing free */
	s.reserved = 10;
	s.allocated = 4;
	s.largest_free = 3;
	assert_true(mem_frag(&s) == 0.5); /* 1 - 3/6 */
	s.largest_free = 6;
	assert_true(mem_frag(&s) == 0.0);
	s.largest_free = 0;
	assert_true(mem_frag(&s) == 1.0);
	s.allocated = 10;
	assert_true(mem_frag(&s) == 0.0);
}

static void test_host(void **state)
{
	(void)state;
	struct mem_host h = {.capacity = 100};
	assert_int_equal(mem_host_alloc(&h, 60), 0);
	assert_int_equal(mem_host_alloc(&h, 41), -1);
	assert_int_equal(h.in_use, 60);
	assert_int_equal(mem_host_alloc(&h, 40), 0);
	assert_int_equal(h.peak, 100);
	mem_host_free(&h, 60);
	assert_int_equal(h.in_use, 40);
	assert_int_equal(h.peak, 100);
	assert_int_equal(h.n_alloc, 2);
	struct mem_host u = {0}; /* unlimited */
	assert_int_equal(mem_host_alloc(&u, UINT64_MAX / 2), 0);
	assert_int_equal(mem_host_alloc(&u, UINT64_MAX / 2), 0);
	assert_int_equal(u.peak, UINT64_MAX / 2 * 2);
}

/* The pinned pool grows by the shortfall, once per new high-water mark,
 * and is reused after frees (mem.h, struct mem_host). By hand: 60 -> grow
 * to 60 (call 1); +40 -> 100 > 60, grow to 100 (call 2); free 60 -> 40 in
 * use; +60 -> 100 <= 100, from the pool; free all; +100 -> from the pool;
 * +1 -> 101 > 100, grow (call 3). */
static void test_host_pool(void **state)
{
	(void)state;
	struct mem_host h = {0};
	mem_host_take(&h, 60);
	assert_int_equal(h.n_grow, 1);
	assert_int_equal(h.reserved, 60);
	assert_int_equal(mem_host_alloc(&h, 40), 0);
	assert_int_equal(h.n_grow, 2);
	assert_int_equal(h.reserved, 100);
	mem_host_free(&h, 60);
	assert_int_equal(mem_host_alloc(&h, 60), 0);
	assert_int_equal(h.n_grow, 2);
	mem_host_free(&h, 100);
	assert_int_equal(h.reserved, 100); /* kept: no cudaFreeHost */
	mem_host_take(&h, 100);
	assert_int_equal(h.n_grow, 2);
	mem_host_take(&h, 1);
	assert_int_equal(h.n_grow, 3);
	assert_int_equal(h.reserved, 101);
	assert_int_equal(h.n_alloc, 5);
}

struct live {
	mem_handle h;	/* handle */
	uint64_t bytes; /* requested */
	uint64_t addr;	/* address */
};

static int by_addr(const void *x, const void *y)
{
	const struct live *a = x, *b = y;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/*
 * Random allocate/free mixes on every model: the header's invariants hold
 * after every step, live blocks never overlap, counts add up, peaks are
 * maxima of the currents, and freeing everything leaves nothing allocated.
 */
static void test_stress_invariants(void **state)
{
	(void)state;
	enum { N = 256, STEPS = 20000 };
	struct live live[N], sorted[N];
	for (size_t m = 0; mem_model(m); m++) {
		const char *name = mem_model(m)->name;
		uint64_t pool = (m == 2) ? 8 * M : 32 * M; /* bfc: growth */
		struct mem_dev d = open_dev(name, 256 * M, pool);
		uint64_t x = 12345 + m; /* LCG state */
		size_t n = 0;
		uint64_t peak_alloc = 0, peak_res = 0, peak_req = 0, req = 0;
		uint64_t nok = 0, nfree = 0;
		for (int step = 0; step < STEPS; step++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			unsigned r = (unsigned)(x >> 33);
			if (n < N && (n == 0 || r % 100 < 55)) {
				uint64_t bytes;
				switch (r % 4) {
				case 0: bytes = 1 + (r >> 3) % 4096; break;
				case 1: bytes = 1 + (r >> 3) % (2 * M); break;
				case 2: bytes = 1 + (r >> 3) % (12 * M); break;
				default: bytes = 1 + (r >> 3) % (40 * M);
				}
				unsigned fl = (r >> 2) & 1 ? MEM_HIGH : 0;
				mem_handle h;
				if (d.ops->alloc(d.a, bytes, fl, &h) == 0) {
					live[n].h = h;
					live[n].bytes = bytes;
					live[n].addr = AD(&d, h);
					n++;
					nok++;
					req += bytes;
				}
			} else if (n > 0) {
				size_t i = r % n;
				D(&d, live[i].h);
				req -= live[i].bytes;
				live[i] = live[--n];
				nfree++;
			}
			struct mem_stats s = ST(&d);
			assert_true(s.allocated <= s.reserved);
			assert_true(s.reserved <= s.budget);
			assert_true(s.requested <= s.allocated);
			assert_int_equal(s.requested, req);
			if (strcmp(name, "arena") != 0)
				assert_true(s.largest_free <=
					    s.reserved - s.allocated);
			else
				assert_int_equal(s.largest_free,
						 s.budget - s.allocated);
			double fr = mem_frag(&s);
			assert_true(fr >= 0.0 && fr <= 1.0);
			if (s.allocated > peak_alloc)
				peak_alloc = s.allocated;
			if (s.reserved > peak_res)
				peak_res = s.reserved;
			if (s.requested > peak_req)
				peak_req = s.requested;
			assert_int_equal(s.peak_allocated, peak_alloc);
			assert_int_equal(s.peak_reserved, peak_res);
			assert_int_equal(s.peak_requested, peak_req);
			assert_int_equal(s.n_alloc, nok);
			assert_int_equal(s.n_free, nfree);
			if (strcmp(name, "arena") != 0 && step % 64 == 0) {
				memcpy(sorted, live, n * sizeof *live);
				qsort(sorted, n, sizeof *sorted, by_addr);
				for (size_t i = 1; i < n; i++)
					assert_true(sorted[i - 1].addr +
							    sorted[i - 1].bytes <=
						    sorted[i].addr);
			}
		}
		assert_true(nok > 1000);
		while (n > 0)
			D(&d, live[--n].h);
		struct mem_stats s = ST(&d);
		assert_int_equal(s.allocated, 0);
		assert_int_equal(s.requested, 0);
		assert_int_equal(s.n_alloc, s.n_free);
		if (strcmp(name, "arena") == 0)
			assert_int_equal(s.reserved, 0);
		mem_dev_close(&d);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_vdnnpp_ivb_pool9),
		cmocka_unit_test(test_vdnnpp_ivb_pool11),
		cmocka_unit_test(test_vdnnpp_iiib),
		cmocka_unit_test(test_highend_placement),
		cmocka_unit_test(test_highend_forward),
		cmocka_unit_test(test_pool_rounding),
		cmocka_unit_test(test_bfc_rounding),
		cmocka_unit_test(test_bfc_bins),
		cmocka_unit_test(test_bfc_split_rule),
		cmocka_unit_test(test_bfc_coalesce),
		cmocka_unit_test(test_bfc_growth),
		cmocka_unit_test(test_caching),
		cmocka_unit_test(test_caching_merge),
		cmocka_unit_test(test_caching_same),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_frag_values),
		cmocka_unit_test(test_frag_track_iiib),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_host_pool),
		cmocka_unit_test(test_stress_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
