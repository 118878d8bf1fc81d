/* model_init.c — model.h: Megatron's initialisation as a pure function of (seed,
 * parameter, canonical element index), and the shard -> canonical index map it shares
 * with model_io.c.
 *
 * Contract (model.h): value(seed, name, e) = std * N(0,1) where the normal comes from
 * Philox4x32-10 (Salmon et al. 2011) keyed by the 64-bit seed, counter (e, stream) with
 * stream = FNV-1a-64 of "<schema key>#<global layer>", turned into one normal by
 * Box-Muller on two 53-bit uniforms; e = R * cols + C, where a vocabulary tensor's rows R
 * run over the whole padded table (as Megatron's init_method fills its [Vp, H] master
 * weight), so a padding row's values do not depend on TP (only on Vp covering it).
 * std = init_std, or init_std / sqrt(2 L) for linear_proj / linear_fc2; biases 0, norm
 * weights 1; padding rows 0 only with mask_vocab_padding.
 * Rows are filled in parallel (OpenMP); every value is independent of the thread count.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

static void philox_round(uint32_t c[4], const uint32_t k[2])
{
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c[0] = hi1 ^ c[1] ^ k[0];
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k[1];
    c[3] = lo0;
}

static void philox4x32_10(uint32_t c[4], uint64_t seed)
{
    uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int i = 0; i < 10; i++) {
        philox_round(c, k);
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
}

double mg_gpt_normal(uint64_t seed, uint64_t stream, uint64_t counter)
{
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)stream,
                     (uint32_t)(stream >> 32)};
    philox4x32_10(c, seed);
    uint64_t a = ((uint64_t)c[0] << 32) | c[1], b = ((uint64_t)c[2] << 32) | c[3];
    double u1 = (double)((a >> 11) + 1) * 0x1p-53; /* (0, 1] */
    double u2 = (double)(b >> 11) * 0x1p-53;       /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static uint64_t stream_of(const mg_param *p)
{
    char buf[160];
    snprintf(buf, sizeof buf, "%s#%lld", p->spec->key, (long long)p->layer);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *s = (const unsigned char *)buf; *s; s++) {
        h ^= *s;
        h *= 0x100000001b3ull;
    }
    return h;
}

void mg_gpt_canonical_index(const mg_gpt *g, const mg_gpt_tensor *t, int64_t r, int64_t c,
                            int64_t *R, int64_t *C, int *pad)
{
    int64_t rank = g->lay.tp_rank;
    *R = r;
    *C = c;
    *pad = 0;
    switch (t->param.spec->split) {
    case MG_SPLIT_VOCAB:
        *R = t->row0 + r;
        *pad = *R >= t->param.rows;
        break;
    case MG_SPLIT_COLUMN:
    case MG_SPLIT_QKV: *R = t->row0 + r; break;
    case MG_SPLIT_SWIGLU: {
        int64_t fl = t->shape[0] / 2, f = t->param.rows / 2;
        *R = r < fl ? rank * fl + r : f + rank * fl + (r - fl);
        break;
    }
    case MG_SPLIT_ROW: *C = rank * t->shape[1] + c; break;
    case MG_SPLIT_REPLICATED: break;
    }
}

static void init_normal(const mg_gpt *g, const mg_gpt_tensor *t, double std)
{
    float *x = g->params + t->offset;
    uint64_t stream = stream_of(&t->param);
    int inert = g->opt.mask_vocab_padding;
#if MG_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t r = 0; r < t->shape[0]; r++)
        for (int64_t c = 0; c < t->shape[1]; c++) {
            int64_t R, C;
            int pad;
            mg_gpt_canonical_index(g, t, r, c, &R, &C, &pad);
            uint64_t e = (uint64_t)(R * t->param.cols + C);
            double z = pad && inert ? 0.0 : mg_gpt_normal(g->opt.seed, stream, e);
            x[r * t->shape[1] + c] = (float)(std * z);
        }
}

void mg_gpt_init_params(mg_gpt *g)
{
    double std = g->opt.init_std;
    double scaled = std / sqrt(2.0 * (double)g->m.num_layers);
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        float *x = g->params + t->offset;
        switch (t->init) {
        case MG_INIT_ZERO: memset(x, 0, (size_t)t->numel * sizeof(float)); break;
        case MG_INIT_ONE:
            for (int64_t j = 0; j < t->numel; j++) x[j] = 1.0f;
            break;
        case MG_INIT_NORMAL: init_normal(g, t, std); break;
        case MG_INIT_SCALED: init_normal(g, t, scaled); break;
        }
    }
}
