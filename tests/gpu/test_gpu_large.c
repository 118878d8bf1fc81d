/* test_gpu_large.c — GPU-only checks at training sizes (too slow for the emulator): the
 * attention at T = 1024 (32 query tiles of the portable kernels, 16 of the tensor-core ones)
 * against the CPU reference in fp32, and the tensor-core bf16 kernels against the portable
 * bf16 kernels on the same inputs. Tolerances as tests/cuda (fp32 2e-5 + 2e-4 |ref|; bf16
 * 2e-2 + 2e-2 |portable| for the tensor-core backward, whose P and dS are rounded to bf16).
 */
#include "../cuda/cuda_test_util.h"

static const mgk_attn_dims large = {2, 1024, 8, 2, 128, 0.08838834764831845f};

MG_TEST(gpu_attention_large_fp32)
{
    ct c;
    ct_begin(&c, t);
    mgk_attn_dims d = large;
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    if (c.ok) {
        float *q = ct_rand(&c, nq, 1, 1.0f), *k = ct_rand(&c, nk, 2, 1.0f),
              *v = ct_rand(&c, nk, 3, 1.0f);
        float *o = ct_rand(&c, nq, 4, 1.0f), *dy = ct_rand(&c, nq, 5, 1.0f);
        float *dq = ct_rand(&c, nq, 6, 1.0f), *dk = ct_rand(&c, nk, 7, 1.0f),
              *dv = ct_rand(&c, nk, 8, 1.0f);
        float *sv = (float *)ct_host(&c, malloc((size_t)mgk_attn_saved_numel(&c.ref, &d) * 4));
        float *Dq = CT_UPF(&c, q, nq), *Dk = CT_UPF(&c, k, nk), *Dv = CT_UPF(&c, v, nk);
        float *Do = CT_UPF(&c, o, nq), *Ddq = CT_UPF(&c, dq, nq), *Ddk = CT_UPF(&c, dk, nk);
        float *Ddv = CT_UPF(&c, dv, nk);
        float *Dsv = (float *)ct_dalloc(&c, (size_t)mgk_attn_saved_numel(&c.dev, &d) * 4);
        MG_CHECK_OK(t, mgk_ctx_reserve(&c.ref, mgk_attn_scratch_numel(&c.ref, &d)));
        MG_CHECK_OK(t, mgk_ctx_reserve(&c.dev, mgk_attn_scratch_numel(&c.dev, &d)));
        mgk_attn_fwd(&c.ref, &d, o, sv, q, k, v, NULL);
        mgk_attn_fwd(&c.dev, &d, Do, Dsv, Dq, Dk, Dv, NULL);
        KT_CLOSE(t, "attn out (T 1024)", ct_down(&c, Do, nq), o, nq, 2e-5, 2e-4);
        mgk_attn_bwd(&c.ref, &d, dq, dk, dv, dy, sv, q, k, v, NULL);
        mgk_attn_bwd(&c.dev, &d, Ddq, Ddk, Ddv, CT_UPF(&c, dy, nq), Dsv, Dq, Dk, Dv, NULL);
        KT_CLOSE(t, "attn dq (T 1024)", ct_down(&c, Ddq, nq), dq, nq, 2e-5, 2e-4);
        KT_CLOSE(t, "attn dk (T 1024)", ct_down(&c, Ddk, nk), dk, nk, 2e-5, 2e-4);
        KT_CLOSE(t, "attn dv (T 1024)", ct_down(&c, Ddv, nk), dv, nk, 2e-5, 2e-4);
    }
    ct_end(&c);
}

MG_TEST(gpu_attention_large_wmma_vs_portable)
{
    ct c;
    ct_begin(&c, t);
    mgk_attn_dims d = large;
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    int64_t ns = c.ok ? mgk_attn_saved_numel(&c.dev, &d) : 0, nl = d.B * d.Hq * d.T;
    if (c.ok) {
        MG_CHECK_OK(t, mgk_ctx_reserve(&c.dev, mgk_attn_scratch_numel(&c.dev, &d)));
        float *h[4];
        mgk_bf16 *in[4]; /* q, k, v, dout */
        int64_t n[4] = {nq, nk, nk, nq};
        for (int i = 0; i < 4; i++) {
            h[i] = ct_round_bf16(ct_rand(&c, n[i], 11 + (uint64_t)i, 1.0f), n[i]);
            in[i] = ct_up_bf16(&c, h[i], n[i]);
        }
        mgk_bf16 *out[2], *grad[2][3];
        float *saved[2];
        for (int w = 0; w < 2; w++) { /* 0: portable, 1: tensor cores; gradients from zero */
            out[w] = (mgk_bf16 *)ct_dalloc(&c, (size_t)nq * 2);
            saved[w] = (float *)ct_dalloc(&c, (size_t)ns * 4);
            for (int g = 0; g < 3; g++) {
                grad[w][g] = (mgk_bf16 *)ct_dalloc(&c, (size_t)n[g] * 2);
                mgk_zero(&c.dev, (float *)(void *)grad[w][g], n[g] / 2);
            }
        }
        mgk_cuda_attn_fwd_bf16(&c.dev, &d, out[0], saved[0], in[0], in[1], in[2], NULL);
        mgk_cuda_attn_fwd_bf16_wmma(&c.dev, &d, out[1], saved[1], in[0], in[1], in[2], NULL);
        mgk_cuda_attn_bwd_bf16(&c.dev, &d, grad[0][0], grad[0][1], grad[0][2], in[3], saved[0],
                               in[0], in[1], in[2], NULL);
        mgk_cuda_attn_bwd_bf16_wmma(&c.dev, &d, grad[1][0], grad[1][1], grad[1][2], in[3],
                                    saved[1], in[0], in[1], in[2], NULL);
        KT_CLOSE(t, "wmma out", ct_down_bf16(&c, out[1], nq), ct_down_bf16(&c, out[0], nq), nq,
                 1e-2, 1e-2);
        KT_CLOSE(t, "wmma lse", ct_down(&c, saved[1], nl), ct_down(&c, saved[0], nl), nl, 1e-4,
                 1e-5);
        static const char *names[3] = {"wmma dq", "wmma dk", "wmma dv"};
        for (int g = 0; g < 3; g++)
            KT_CLOSE(t, names[g], ct_down_bf16(&c, grad[1][g], n[g]),
                     ct_down_bf16(&c, grad[0][g], n[g]), n[g], 2e-2, 2e-2);
    }
    ct_end(&c);
}
