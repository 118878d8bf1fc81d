/* verify.c — --verify: re-open the written checkpoint with its loader (which re-checks every
 * file, name, shape, replicated copy) and compare every canonical parameter, element by
 * element in the target dtype, with the source after the same conversion; on Megatron
 * output also the padding rows of the vocabulary tensors (ck_vocab_row); with the source's
 * Adam moments kept, the moments (float32) and the step count alike, and a --bf16/--fp16
 * run's fp32 masters with them.
 *
 * Contract (ckpt.h): prints "verify: N parameters (M tensors, B bytes) identical" on stdout,
 * or fails with MG_ERR_FORMAT naming the first differing parameter and element.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

static mg_status same_model(const mg_model_desc *a, const mg_model_desc *b, const char *dir)
{
    int ok = a->arch == b->arch && a->num_layers == b->num_layers &&
             a->hidden_size == b->hidden_size && a->ffn_hidden_size == b->ffn_hidden_size &&
             a->num_attention_heads == b->num_attention_heads &&
             a->num_query_groups == b->num_query_groups && a->kv_channels == b->kv_channels &&
             a->vocab_size == b->vocab_size && a->tied_embeddings == b->tied_embeddings;
    MG_RETURN_IF(!ok, MG_ERR_FORMAT, "verify: %s: the written model description differs from "
                 "the plan", dir);
    return MG_OK;
}

static mg_status compare_param(const ck_source *a, const ck_source *b, size_t i, mg_tdtype dt,
                               uint64_t *bytes)
{
    const mg_param *p = ck_param(a, i), *q = ck_param(b, i);
    MG_RETURN_IF(p->spec != q->spec || p->layer != q->layer || p->rows != q->rows ||
                     p->cols != q->cols, MG_ERR_FORMAT,
                 "verify: parameter %zu (%s) differs in shape", i, p->spec->key);
    ck_loc loc;
    b->locate(b, i, 0, 0, &loc);
    MG_RETURN_IF(loc.dtype != dt, MG_ERR_FORMAT, "verify: %s (layer %lld) was written as %s, "
                 "expected %s", p->spec->key, (long long)p->layer, mg_tdtype_name(loc.dtype),
                 mg_tdtype_name(dt));
    size_t es = mg_tdtype_size(dt);
    int64_t chunk = p->rows < 256 ? p->rows : 256;
    size_t n = (size_t)(chunk * p->cols) * es;
    uint8_t *x = mg_malloc(n ? n : 1), *y = mg_malloc(n ? n : 1);
    mg_status st = x && y ? MG_OK : MG_ERR_NOMEM;
    for (int64_t r = 0; r < p->rows && st == MG_OK; r += chunk) {
        int64_t k = p->rows - r < chunk ? p->rows - r : chunk;
        size_t len = (size_t)(k * p->cols) * es;
        st = ck_read_rows(a, i, r, k, 0, p->cols, x, dt);
        if (st == MG_OK) st = ck_read_rows(b, i, r, k, 0, p->cols, y, dt);
        if (st == MG_OK && memcmp(x, y, len) != 0) {
            size_t e = 0;
            while (memcmp(x + e * es, y + e * es, es) == 0) e++;
            st = mg_error_set(MG_ERR_FORMAT, "verify: %s (layer %lld) differs at row %lld, "
                              "column %lld", p->spec->key, (long long)p->layer,
                              (long long)(r + (int64_t)e / p->cols), (long long)((int64_t)e % p->cols));
        }
        *bytes += len;
    }
    free(x);
    free(y);
    if (a->release) a->release(a, i);
    if (b->release) b->release(b, i);
    return st;
}

/* Megatron output: each padding row [V, Vp) of a vocabulary tensor must be the source row
 * ck_vocab_row names (in the target dtype), or zero. */
static mg_status padding_rows(const ck_source *s, const ck_source *w, size_t i,
                              const ck_plan *pl, mg_tdtype dt)
{
    const mg_param *p = ck_param(w, i);
    if (p->spec->split != MG_SPLIT_VOCAB) return MG_OK;
    size_t n = (size_t)p->cols * mg_tdtype_size(dt);
    uint8_t *x = mg_malloc(n), *y = mg_calloc(1, n);
    mg_status st = x && y ? MG_OK : MG_ERR_NOMEM;
    for (int64_t r = p->rows; r < pl->m.padded_vocab_size && st == MG_OK; r++) {
        int64_t from = ck_vocab_row(s, r);
        st = ck_read_rows(w, i, r, 1, 0, p->cols, x, dt);
        if (st == MG_OK && from >= 0) st = ck_read_rows(s, i, from, 1, 0, p->cols, y, dt);
        if (st == MG_OK && memcmp(x, y, n) != 0)
            st = mg_error_set(MG_ERR_FORMAT, "verify: %s: padding row %lld is not %s",
                              p->spec->key, (long long)r,
                              from < 0 ? "zero" : "the source's row it copies");
    }
    free(x);
    free(y);
    return st;
}

mg_status ck_verify(const ck_source *s, const ck_plan *pl, const char *dir, int loader,
                    const ck_opts *o)
{
    ck_opts vo = *o;
    vo.true_vocab = pl->m.vocab_size;
    vo.drop_optim = 0;
    ck_source *w = NULL;
    mg_status st = ck_source_open(&w, dir, &vo, loader);
    if (st != MG_OK) {
        mg_error_prefix("verify: re-reading the output");
        return st;
    }
    st = same_model(&pl->m, &w->m, dir);
    if (st == MG_OK && w->nparams != s->nparams)
        st = mg_error_set(MG_ERR_FORMAT, "verify: %zu parameters written, %zu expected",
                          w->nparams, s->nparams);
    if (st == MG_OK && w->m.dtype != pl->m.dtype)
        st = mg_error_set(MG_ERR_FORMAT, "verify: written dtype %s, expected %s",
                          mg_tdtype_name(w->m.dtype), mg_tdtype_name(pl->m.dtype));
    if (st == MG_OK && w->moments != s->moments)
        st = mg_error_set(MG_ERR_FORMAT, "verify: the output %s the Adam moments",
                          w->moments ? "holds" : "lacks");
    if (st == MG_OK && s->moments && w->optim_step != s->optim_step)
        st = mg_error_set(MG_ERR_FORMAT, "verify: optimizer step %g written, %g expected",
                          w->optim_step, s->optim_step);
    uint64_t bytes = 0;
    if (st == MG_OK && w->masters != s->masters)
        st = mg_error_set(MG_ERR_FORMAT, "verify: the output %s the fp32 masters",
                          w->masters ? "holds" : "lacks");
    static const char *const copy[] = {"", "exp_avg", "exp_avg_sq", "fp32 master"};
    size_t all = s->nparams * CK_COPIES(s);
    for (size_t i = 0; i < all && st == MG_OK; i++) { /* moments, masters: float32 */
        mg_tdtype dt = i < s->nparams ? pl->m.dtype : MG_TD_F32;
        st = compare_param(s, w, i, dt, &bytes);
        if (st == MG_OK && loader == CK_MEGATRON) st = padding_rows(s, w, i, pl, dt);
        if (st != MG_OK && i >= s->nparams) mg_error_prefix("verify: %s", copy[i / s->nparams]);
    }
    if (st == MG_OK)
        printf("verify: %zu parameters%s (%zu tensor%s in %zu file%s, %llu bytes) identical "
               "to the source\n", s->nparams,
               s->masters ? ", their Adam moments and fp32 masters"
               : s->moments ? " and their Adam moments" : "",
               pl->ntensors, pl->ntensors == 1 ? "" : "s", pl->nfiles,
               pl->nfiles == 1 ? "" : "s", (unsigned long long)bytes);
    ck_source_free(w);
    return st;
}
