/*
 * gemm_shapes.h - the GEMM shapes calibrate-gpu measures (calibrate/
 * gpu_bench.cu, bench gemm): every distinct GEMM of the shipped bert_base
 * (sequence 128) and gpt2 (sequence 1024) generators, forward and
 * backward (workloads/gen.c, gemm_of; tests/test_gemm.c checks that none
 * is missing), at the --batch given. Plain C, included by the CUDA
 * program and the test.
 *
 * A shape is `batch` products C (m x n) = A (m x k) B (k x n) (wl.h,
 * struct wl_gemm). One of its figures grows with the samples: `per`
 * names it (0 batch, 1 m, 2 n, 3 k) and its value here is per sample
 * (the sequence's rows, or the heads); the bench multiplies it by
 * --batch. A linear layer of `in` -> `out` features over R rows is
 * (1, R, out, in) forward, (1, R, in, out) for the data gradient and
 * (1, out, in, R) for the weight gradient; attention's scores are
 * (heads, seq, seq, head_dim), its context (heads, seq, head_dim, seq),
 * and their backward halves are one of these two shapes each (dQ, dK
 * and dV the context's, dP the scores').
 */
#ifndef GMS_GEMM_SHAPES_H
#define GMS_GEMM_SHAPES_H

struct cal_gemm_shape {
	const char *name;	   /* shape name, as in the CSV */
	int per;		   /* the figure that is per sample */
	long long batch, m, n, k;  /* the shape, `per` of them per sample */
};
static const struct cal_gemm_shape cal_gemm_shapes[] = {
	/* bert_base: hidden 768, 12 heads of 64, FFN 3072, sequence 128 */
	{"bert_base.h768", 1, 1, 128, 768, 768},
	{"bert_base.h768.bwd_weight", 3, 1, 768, 768, 128},
	{"bert_base.ffn_in", 1, 1, 128, 3072, 768},
	{"bert_base.ffn_out", 1, 1, 128, 768, 3072},
	{"bert_base.ffn_in.bwd_weight", 3, 1, 3072, 768, 128},
	{"bert_base.ffn_out.bwd_weight", 3, 1, 768, 3072, 128},
	{"bert_base.scores", 0, 12, 128, 128, 64},
	{"bert_base.context", 0, 12, 128, 64, 128},
	{"bert_base.pooler", 1, 1, 1, 768, 768},
	{"bert_base.pooler.bwd_weight", 3, 1, 768, 768, 1},
	{"bert_base.classifier", 1, 1, 1, 2, 768},
	{"bert_base.classifier.bwd_data", 1, 1, 1, 768, 2},
	{"bert_base.classifier.bwd_weight", 3, 1, 2, 768, 1},
	/* gpt2: hidden 768, 12 heads of 64, MLP 3072, sequence 1024, vocab
	 * 50257 (the tied lm_head) */
	{"gpt2.h768", 1, 1, 1024, 768, 768},
	{"gpt2.h768.bwd_weight", 3, 1, 768, 768, 1024},
	{"gpt2.mlp_in", 1, 1, 1024, 3072, 768},
	{"gpt2.mlp_out", 1, 1, 1024, 768, 3072},
	{"gpt2.mlp_in.bwd_weight", 3, 1, 3072, 768, 1024},
	{"gpt2.mlp_out.bwd_weight", 3, 1, 768, 3072, 1024},
	{"gpt2.scores", 0, 12, 1024, 1024, 64},
	{"gpt2.context", 0, 12, 1024, 64, 1024},
	{"gpt2.lm_head", 1, 1, 1024, 50257, 768},
	{"gpt2.lm_head.bwd_data", 1, 1, 1024, 768, 50257},
	{"gpt2.lm_head.bwd_weight", 3, 1, 50257, 768, 1024},
};

#endif
