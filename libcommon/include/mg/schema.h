/* mg/schema.h — model schemas: every logical parameter of a GPT-style model (mg/model_desc.h)
 * with its names in each checkpoint format, its tensor-parallel split rule and its Hugging
 * Face transform; pipeline layer placement; vocabulary padding.
 *
 * Contract (facts: docs/FORMATS.md §5.3-§5.8, §6.2):
 *   - The "canonical" form of a parameter is Megatron's full, unsplit tensor: [rows, cols]
 *     (cols = 1 for a vector), with the fused QKV rows interleaved per query group
 *     (q heads of the group, then k, then v), SwiGLU fc1 = [gate; up], and vocabulary
 *     tensors holding exactly the true vocabulary (V rows, no padding).
 *   - mg_schema_params lists the parameters a model has, in Megatron's module order
 *     (embeddings, layer 0 .. L-1, final norm, output layer).
 *   - Names: Megatron-Core TransformerEngine spec (default), local spec, legacy Megatron
 *     (flattened with '.'), Hugging Face. Layer numbers in Megatron names are local to the
 *     pipeline stage; HF names use the global layer.
 *   - Split rules: replicated, column (dim 0 chunks), row (dim 1 chunks), vocab (dim 0 of
 *     the padded table), qkv (dim 0 chunks of the interleaved rows: whole query groups per
 *     rank when ng >= TP), swiglu (rank r holds [gate_r; up_r]).
 *   - HF transforms: copy, transpose (GPT-2 Conv1D [in, out]), qkv (separate q/k/v
 *     tensors), c_attn (GPT-2 fused Conv1D [H, 3H] = [Q | K | V] columns), gate_up (two
 *     tensors stacked).
 *   - Pure functions; names are formatted into caller buffers.
 */
#ifndef MG_SCHEMA_H
#define MG_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/model_desc.h"

typedef enum {
    MG_SPLIT_REPLICATED,
    MG_SPLIT_COLUMN,
    MG_SPLIT_ROW,
    MG_SPLIT_VOCAB,
    MG_SPLIT_QKV,
    MG_SPLIT_SWIGLU,
} mg_split;

typedef enum { MG_HF_COPY, MG_HF_TRANSPOSE, MG_HF_QKV, MG_HF_C_ATTN, MG_HF_GATE_UP } mg_hf_xform;

typedef enum { MG_STAGE_FIRST, MG_STAGE_LAYER, MG_STAGE_LAST } mg_stage;

typedef enum { MG_NAMES_TE, MG_NAMES_LOCAL, MG_NAMES_LEGACY } mg_names;

typedef struct {
    const char *key;    /* logical name, e.g. "qkv.weight" */
    mg_stage stage;
    const char *te, *local, *legacy; /* patterns; "%lld" = local layer */
    const char *hf[2];  /* HF patterns ("%lld" = global layer); hf[1] for gate_up only */
    mg_split split;
    mg_hf_xform hf_xform;
    int ndim;           /* 1 or 2 */
    unsigned need;      /* MG_NEED_* bits: present only when the model has them */
} mg_param_spec;

enum {
    MG_NEED_POS = 1,     /* learned position embeddings */
    MG_NEED_NORMB = 2,   /* LayerNorm bias */
    MG_NEED_LINB = 4,    /* biases on every linear */
    MG_NEED_QKVB = 8,    /* QKV bias */
    MG_NEED_UNTIED = 16, /* separate output layer */
};

typedef struct {
    const mg_param_spec *spec;
    int64_t layer;      /* global layer, -1 outside the layers */
    int64_t rows, cols; /* canonical shape (cols = 1 when ndim == 1) */
} mg_param;

/* Parameters of m in Megatron module order (malloc'd array, caller frees). Needs
 * m->vocab_size > 0. */
mg_status mg_schema_params(const mg_model_desc *m, mg_param **params, size_t *n);

/* Megatron name of p for a local layer index (ignored outside the layers). */
void mg_schema_mcore_name(const mg_param *p, mg_names names, int64_t local_layer, char *buf,
                          size_t cap);
/* HF names of p (1, or 2 for gate_up; 3 for separate q/k/v) into bufs[i]; returns count. */
int mg_schema_hf_names(const mg_param *p, const mg_model_desc *m, char bufs[3][256]);
/* Shape of p's shard on one of tp ranks (vocab: padded rows / tp). ndim written to *ndim. */
void mg_schema_shard_shape(const mg_param *p, const mg_model_desc *m, int64_t tp,
                           int64_t vocab_padded, int64_t shape[2], int *ndim);
/* MG_ERR_UNSUPPORTED/ARG if m cannot be split over tp ranks (heads, groups, ffn). */
mg_status mg_schema_check_tp(const mg_model_desc *m, int64_t tp);
/* Split rule name ("replicated", "column", ...). */
const char *mg_schema_split_name(mg_split s);

/* `_extra_state` names a stage's modules have (layers first..first+count-1 local, plus
 * output_layer on the last stage), formatted one at a time: i-th name into buf, 0 when i is
 * past the end. */
int mg_schema_extra_state(const mg_model_desc *m, mg_names names, int64_t local_layers,
                          int last_stage, size_t i, char *buf, size_t cap);

/* Pipeline placement: layers of stage p of pp (first/last 0 = even). MG_ERR_ARG when the
 * layers do not divide. */
mg_status mg_schema_pp_layers(int64_t num_layers, int64_t pp, int64_t first, int64_t last,
                              int64_t p, int64_t *offset, int64_t *count);

#endif /* MG_SCHEMA_H */
