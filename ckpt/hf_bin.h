/* hf_bin.h — Hugging Face pytorch_model.bin files (torch.save of a flat state dict, PyTorch's
 * zip format) read as tables of safetensors-like tensor entries, zero copy.
 *
 * Contract (hf_bin.c): ck_bin_open maps the file (mg/torchfile.h); its root must be a dict
 * (or OrderedDict) of str -> tensor with unique keys (MG_ERR_FORMAT otherwise, naming the
 * file and entry; a non-tensor value is MG_ERR_UNSUPPORTED). Every tensor must be
 * contiguous row-major (strides of size-1 dimensions are free) with any storage offset, and
 * lie inside its storage record; a non-contiguous one is MG_ERR_UNSUPPORTED
 * "not supported yet: non-contiguous tensor NAME in FILE". Tensors may share storages
 * (tied weights): each key is its own entry. Entries are mg_st_tensor (mg/safetensors.h)
 * whose data points into the mapping; `offset` is the file offset of that data. Every
 * pointer handed out stays valid until ck_bin_close.
 */
#ifndef CKPT_HF_BIN_H
#define CKPT_HF_BIN_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/safetensors.h"

typedef struct ck_bin ck_bin; /* opaque */

/* Opens path; *b is NULL on failure. */
mg_status ck_bin_open(ck_bin **b, const char *path);
void ck_bin_close(ck_bin *b); /* accepts NULL */
const char *ck_bin_path(const ck_bin *b);
/* Entries in the state dict's order. */
size_t ck_bin_count(const ck_bin *b);
const mg_st_tensor *ck_bin_at(const ck_bin *b, size_t i);
/* Entry by name, NULL if absent (no error set). */
const mg_st_tensor *ck_bin_find(const ck_bin *b, const char *name);
/* The whole file's mapping (byte i is byte i of the file) and its size. */
const uint8_t *ck_bin_mapping(const ck_bin *b, size_t *size);

#endif /* CKPT_HF_BIN_H */
