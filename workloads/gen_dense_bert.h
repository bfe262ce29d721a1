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

struct wl_workload *wl_gen_densenet121(const struct wl_gen_args *a,
				       gms_err *err);
struct wl_workload *wl_gen_bert_base(const struct wl_gen_args *a,
				     gms_err *err);
struct wl_workload *wl_gen_bert_large(const struct wl_gen_args *a,
				      gms_err *err);

#endif
