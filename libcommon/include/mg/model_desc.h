/* mg/model_desc.h — one description of a GPT-style model, shared by mg-convert, mg-train and
 * the schemas (docs/DESIGN.md "Model families").
 *
 * Contract:
 *   - mg_model_desc holds the architecture (family, sizes, variants), the vocabulary sizes,
 *     the parameter dtype and the parallel layout (TP, PP, uneven first/last stages).
 *   - It is filled from a Hugging Face config.json (mg_model_from_hf_config), from a Megatron
 *     `args` argparse.Namespace (mg_model_from_args), or field by field (mg-train flags,
 *     after mg_model_init). mg_model_check validates the combination.
 *   - Writers: mg_model_to_hf_config (config.json text that transformers loads) and
 *     mg_model_to_args (a Namespace with every model argument Megatron checks on load,
 *     docs/FORMATS.md §5.2). The original config.json text, when known, is
 *     kept (hf_config_json; also stored in args as `hf_config_json`) so that an export
 *     reproduces the fields this struct does not model (token ids, rope parameters, ...).
 *   - Families: GPT-2 (LayerNorm, GeLU, learned positions, biases, tied embeddings), Llama /
 *     Mistral (RMSNorm, SwiGLU, RoPE, GQA, no biases), Qwen2 (Llama + QKV bias). Anything
 *     else (MoE, rope interleaving, linear biases on Llama, ...) is MG_ERR_UNSUPPORTED
 *     "not supported yet: X".
 *   - The struct owns hf_config_json (malloc'd); mg_model_free releases it. Copy with
 *     mg_model_copy.
 */
#ifndef MG_MODEL_DESC_H
#define MG_MODEL_DESC_H

#include <stdint.h>

#include "mg/error.h"
#include "mg/pickle.h"
#include "mg/tensor.h"

typedef enum { MG_ARCH_GPT2, MG_ARCH_LLAMA, MG_ARCH_MISTRAL, MG_ARCH_QWEN2 } mg_arch;

typedef struct {
    mg_arch arch;
    int64_t num_layers, hidden_size, ffn_hidden_size;
    int64_t num_attention_heads, num_query_groups, kv_channels;
    int64_t max_position_embeddings, seq_length;
    int64_t vocab_size;                   /* true vocabulary size, 0 = unknown */
    int64_t padded_vocab_size;            /* as stored by the source, 0 = unknown */
    int64_t make_vocab_size_divisible_by; /* default 128 */
    int rmsnorm;                          /* 1 RMSNorm, 0 LayerNorm (with bias) */
    double norm_epsilon;
    int swiglu;
    int learned_positions;                /* 1 learned_absolute, 0 rope */
    double rotary_base;
    double rope_scaling_factor;           /* Llama-3.1 style scaling, 0 = none */
    int add_bias_linear;                  /* biases on every linear (GPT-2) */
    int add_qkv_bias;                     /* bias on QKV only (Qwen2) or with add_bias_linear */
    int tied_embeddings;
    mg_tdtype dtype;                      /* parameter dtype (F32, BF16, F16) */
    int64_t tp, pp;
    int64_t pp_first, pp_last;            /* uneven first/last stage layers, 0 = even */
    char *hf_config_json;                 /* original config.json, or NULL (owned) */
} mg_model_desc;

/* Defaults: Llama family, dtype F32, TP = PP = 1, divisible-by 128, nothing else set. */
void mg_model_init(mg_model_desc *m);
void mg_model_free(mg_model_desc *m); /* releases hf_config_json; accepts a zeroed struct */
mg_status mg_model_copy(mg_model_desc *dst, const mg_model_desc *src);

/* "gpt2", "llama", "mistral", "qwen2"; HF architectures name ("LlamaForCausalLM"). */
const char *mg_arch_name(mg_arch a);
const char *mg_arch_hf_class(mg_arch a);

/* Checks sizes and divisibility (heads by groups, hidden by heads, ...). MG_ERR_FORMAT
 * naming `label` and the field. */
mg_status mg_model_check(const mg_model_desc *m, const char *label);

/* Padded vocabulary for tp ranks: V rounded up to a multiple of divisible_by * tp. */
int64_t mg_model_padded_vocab(const mg_model_desc *m, int64_t tp);

/* Fills m from config.json text (label names it in errors). The parallel fields keep their
 * values; hf_config_json is set to a copy of the text. */
mg_status mg_model_from_hf_config(mg_model_desc *m, const char *json, const char *label);
/* config.json text for m (malloc'd, caller frees), indent 2, sorted keys, ending "\n". */
mg_status mg_model_to_hf_config(const mg_model_desc *m, char **json);

/* Fills m from a Megatron args Namespace (label names the file in errors). */
mg_status mg_model_from_args(mg_model_desc *m, const mg_pk_obj *ns, const char *label);
/* A new Namespace (owned by g) describing m with m->tp / m->pp; iteration-free. */
mg_status mg_model_to_args(const mg_model_desc *m, mg_pk_graph *g, mg_pk_obj **ns);

#endif /* MG_MODEL_DESC_H */
