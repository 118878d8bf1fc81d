/* mg/hf_map.h — the Hugging Face <-> Megatron tensor mapping: where every element of a
 * parameter's canonical (Megatron, unsplit) tensor lives among the parameter's Hugging Face
 * tensors, for mg-convert and mg-train alike.
 *
 * Contract (the transforms of mg/schema.h; HF names from mg_schema_hf_names, tensor k of a
 * parameter being its k-th name):
 *   - copy: one tensor of the canonical shape.
 *   - transpose: GPT-2 Conv1D, one [cols, rows] tensor.
 *   - qkv: three tensors q [heads*d, cols], k and v [groups*d, cols] (d = kv_channels); the
 *     canonical rows of query group g are [its heads/groups q heads | its k head | its v
 *     head], d rows each, so the d rows of one head are consecutive on both sides.
 *   - c_attn: GPT-2's fused Conv1D, one [cols, rows] tensor whose columns are [Q | K | V]
 *     (a bias is one [rows] vector), Q, K and V interleaved per group as for qkv.
 *   - gate_up: SwiGLU fc1 = [gate; up], two tensors of rows/2 rows each.
 *   - Pure functions of the model description and the parameter.
 */
#ifndef MG_HF_MAP_H
#define MG_HF_MAP_H

#include <stdint.h>

#include "mg/model_desc.h"
#include "mg/schema.h"

/* One canonical element's place: HF tensor k, flat element offset off inside it, and the
 * element stride (step) from canonical column c to c + 1 of the same row. */
typedef struct {
    int k;
    int64_t off;
    int64_t step;
} mg_hf_elem;

/* Where canonical element (row, col) of p lives. */
mg_hf_elem mg_hf_locate(const mg_model_desc *m, const mg_param *p, int64_t row, int64_t col);

/* Shape of p's HF tensor k into shape (shape[1] = 1 for a vector); returns its ndim. */
int mg_hf_shape(const mg_model_desc *m, const mg_param *p, int k, int64_t shape[2]);

/* The canonical QKV row of row hf_row of HF part `part` (0 q, 1 k, 2 v). */
int64_t mg_hf_qkv_row(const mg_model_desc *m, int part, int64_t hf_row);

#endif /* MG_HF_MAP_H */
