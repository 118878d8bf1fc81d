/* model_io.c — model.h: parameters from/to a safetensors file with Hugging Face names.
 *
 * Contract (model.h, mg/schema.h): every element of a rank's shard maps to its canonical
 * (Megatron, unsplit) element (mg_gpt_canonical_index) and from there to one element of
 * one HF tensor (mg_hf_locate, mg/hf_map.h: copy, transpose, qkv, c_attn, gate_up). Load reads F32/BF16/F16 and checks shapes; padded vocabulary
 * rows are set to zero. Names may lack the "transformer." / "model." prefix (base-model
 * files). Save writes F32 tensors of the full layout.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/dtype_convert.h"
#include "mg/hf_map.h"
#include "mg/safetensors.h"
#include "model.h"

typedef struct {
    int ndim;
    int64_t shape[2];
} hf_shape;

static hf_shape hf_shape_of(const mg_model_desc *m, const mg_param *p, int k)
{
    hf_shape s;
    s.ndim = mg_hf_shape(m, p, k, s.shape);
    return s;
}

static mg_status check_tensor(const mg_st_file *f, const mg_st_tensor *t, hf_shape s)
{
    MG_RETURN_IF(t->dtype != MG_TD_F32 && t->dtype != MG_TD_BF16 && t->dtype != MG_TD_F16,
                 MG_ERR_FORMAT, "%s: tensor %s: dtype %s (expected F32, BF16 or F16)",
                 mg_st_path(f), t->name, mg_tdtype_name(t->dtype));
    int ok = t->ndim == s.ndim && t->shape[0] == s.shape[0] &&
             (s.ndim == 1 || t->shape[1] == s.shape[1]);
    MG_RETURN_IF(!ok, MG_ERR_FORMAT, "%s: tensor %s: shape [%lld%s%lld] expected, found %d-dim "
                 "[%lld, ...]", mg_st_path(f), t->name, (long long)s.shape[0],
                 s.ndim == 2 ? ", " : "", s.ndim == 2 ? (long long)s.shape[1] : 0LL, t->ndim,
                 t->ndim ? (long long)t->shape[0] : 0LL);
    return MG_OK;
}

static float read_elem(const mg_st_tensor *t, int64_t i)
{
    if (t->dtype == MG_TD_F32) {
        float v;
        memcpy(&v, (const char *)t->data + i * 4, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, (const char *)t->data + i * 2, 2);
    return t->dtype == MG_TD_BF16 ? mg_bf16_to_f32(h) : mg_f16_to_f32(h);
}

/* The tensor `name`, or the same without the "transformer." / "model." prefix (files saved
 * from GPT2Model / LlamaModel, like the original gpt2 checkpoint). */
static mg_status find_hf(const mg_st_file *f, const char *name, const mg_st_tensor **t)
{
    static const char *const prefixes[2] = {"transformer.", "model."};
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(prefixes[i]);
        if (strncmp(name, prefixes[i], n) == 0 && !mg_st_find(f, name) && mg_st_find(f, name + n)) {
            *t = mg_st_find(f, name + n);
            return MG_OK;
        }
    }
    return mg_st_get(f, name, t);
}

static mg_status load_tensor(mg_gpt *g, const mg_st_file *f, const mg_gpt_tensor *v)
{
    char names[3][256];
    const mg_st_tensor *src[3] = {NULL, NULL, NULL};
    int n = mg_schema_hf_names(&v->param, &g->m, names);
    for (int k = 0; k < n; k++) {
        MG_FORWARD(find_hf(f, names[k], &src[k]));
        MG_FORWARD(check_tensor(f, src[k], hf_shape_of(&g->m, &v->param, k)));
    }
    float *x = g->params + v->offset;
    for (int64_t r = 0; r < v->shape[0]; r++)
        for (int64_t c = 0; c < v->shape[1]; c++) {
            int64_t R, C;
            int pad;
            mg_gpt_canonical_index(g, v, r, c, &R, &C, &pad);
            if (pad) {
                x[r * v->shape[1] + c] = 0.0f;
                continue;
            }
            mg_hf_elem e = mg_hf_locate(&g->m, &v->param, R, C);
            x[r * v->shape[1] + c] = read_elem(src[e.k], e.off);
        }
    return MG_OK;
}

mg_status mg_gpt_load_hf(mg_gpt *g, const char *path)
{
    mg_st_file *f = NULL;
    MG_FORWARD(mg_st_open(&f, path));
    mg_status st = MG_OK;
    for (size_t i = 0; i < g->nt && st == MG_OK; i++) st = load_tensor(g, f, &g->t[i]);
    mg_st_close(f);
    return st;
}

/* ---- save ---- */

typedef struct {
    char name[256];
    size_t view;
    int k;
    int64_t numel;
} hf_entry;

static mg_status declare_all(const mg_gpt *g, mg_st_writer *w, hf_entry *e, size_t *ne)
{
    *ne = 0;
    for (size_t i = 0; i < g->nt; i++) {
        char names[3][256];
        int n = mg_schema_hf_names(&g->t[i].param, &g->m, names);
        for (int k = 0; k < n; k++) {
            hf_shape s = hf_shape_of(&g->m, &g->t[i].param, k);
            hf_entry *x = &e[(*ne)++];
            memcpy(x->name, names[k], sizeof x->name);
            x->view = i;
            x->k = k;
            x->numel = s.shape[0] * (s.ndim == 2 ? s.shape[1] : 1);
            MG_FORWARD(mg_st_writer_declare(w, x->name, MG_TD_F32, s.ndim, s.shape));
        }
    }
    return MG_OK;
}

/* Gathers HF tensor e from buf into out. */
static void gather(const mg_gpt *g, const float *buf, const hf_entry *e, float *out)
{
    const mg_gpt_tensor *v = &g->t[e->view];
    const float *x = buf + v->offset;
    for (int64_t r = 0; r < v->shape[0]; r++)
        for (int64_t c = 0; c < v->shape[1]; c++) {
            int64_t R, C;
            int pad;
            mg_gpt_canonical_index(g, v, r, c, &R, &C, &pad);
            if (pad) continue;
            mg_hf_elem h = mg_hf_locate(&g->m, &v->param, R, C);
            if (h.k == e->k) out[h.off] = x[r * v->shape[1] + c];
        }
}

static mg_status write_all(const mg_gpt *g, const float *buf, mg_st_writer *w,
                           const hf_entry *e, size_t ne)
{
    const char *name;
    uint64_t nbytes;
    while ((name = mg_st_writer_next(w, &nbytes, NULL)) != NULL) {
        size_t i = 0;
        while (i < ne && strcmp(e[i].name, name) != 0) i++;
        MG_ASSERT(i < ne);
        float *out = mg_calloc((size_t)e[i].numel, sizeof(float));
        if (!out) return MG_ERR_NOMEM;
        gather(g, buf, &e[i], out);
        mg_status st = mg_st_writer_tensor(w, name, out, (size_t)nbytes);
        free(out);
        MG_FORWARD(st);
    }
    return mg_st_writer_finish(w);
}

mg_status mg_gpt_save_hf(const mg_gpt *g, const float *buf, const char *path)
{
    MG_RETURN_IF(g->lay.tp != 1 || g->lay.layers != g->m.num_layers, MG_ERR_UNSUPPORTED,
                 "not supported yet: saving a tensor- or pipeline-parallel shard as HF");
    hf_entry *e = mg_calloc(g->nt * 3 + 1, sizeof(*e));
    if (!e) return MG_ERR_NOMEM;
    mg_st_writer *w = NULL;
    size_t ne = 0;
    mg_status st = mg_st_writer_create(&w, path);
    if (st == MG_OK) st = declare_all(g, w, e, &ne);
    if (st == MG_OK) st = mg_st_writer_begin(w);
    if (st == MG_OK) st = write_all(g, buf, w, e, ne);
    mg_st_writer_free(w);
    free(e);
    return st;
}
