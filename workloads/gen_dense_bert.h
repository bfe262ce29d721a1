/*
 * gen_dense_bert.h - the DenseNet-121 and BERT generators
 * (gen_densenet.c, gen_bert.c), for the wl_gens[] table in wl_gen.c.
 */
#ifndef GMS_GEN_DENSE_BERT_H
#define GMS_GEN_DENSE_BERT_H

#include "wl_gen.h"

#define DENSENET_DEFAULT_SIZE 224
#define DENSENET_MIN_SIZE 29 /* 29 -> 15 (conv0) -> 8 (pool0) -> 4, 2, 1 */

#define BERT_DEFAULT_SEQ 128
#define BERT_MIN_SEQ 1
#define BERT_MAX_SEQ 512 /* max_position_embeddings */
#define BERT_HEAD_PREFIX "cls." /* the classification head's names */
#define BERT_VOCAB 30522	 /* vocab_size (bert_config.json) */
#define BERT_TYPE_VOCAB 2	 /* type_vocab_size */
#define BERT_DROPOUT 0.1	 /* hidden_dropout_prob and
				    attention_probs_dropout_prob */
#define BERT_CLASSES 2		 /* the classification head's classes */

/* A BERT configuration (the BertConfig fields the generators use). */
struct bert_cfg {
	const char *name;	/* workload name */
	int64_t layers;		/* num_hidden_layers */
	int64_t hidden;		/* hidden_size */
	int64_t heads;		/* num_attention_heads */
	int64_t inter;		/* intermediate_size */
	int64_t vocab;		/* vocab_size */
	int64_t max_pos;	/* max_position_embeddings */
};

/* BERT as TensorFlow 1.x runs google-research/bert's modeling.py, one TF
 * op a layer (gen_bert_tf1.c); a->size is the sequence length, 1 to
 * c->max_pos. bert_base and bert_large use it for the tf-graph and
 * tf-eager frameworks; tests call it with small configurations. */
/* The fused (HuggingFace-style) model of gen_bert.c at any framework,
 * a->size the sequence length (1 to c->max_pos): what bert_base and
 * bert_large build for pytorch and caffe. */
struct wl_workload *gen_bert_fused(const struct bert_cfg *c,
				   const struct wl_gen_args *a, gms_err *err);
struct wl_workload *gen_bert_tf1(const struct bert_cfg *c,
				 const struct wl_gen_args *a, gms_err *err);

struct wl_workload *wl_gen_densenet121(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *wl_gen_bert_base(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *wl_gen_bert_large(const struct wl_gen_args *a,
				      gms_err *err);

#endif
