"""Interop tests for the CPU kernels (kernels/kernels.h) against PyTorch.

build/tests/tools/kernel_probe runs one op's forward and backward on raw little-endian f32/i32
files; each test feeds the same random inputs (awkward sizes) to PyTorch's own functions with
autograd (torch.nn.functional, torch.optim.AdamW, and Megatron-Core's RoPE and fused bias-GeLU
where Megatron has its own code) and requires, for every output and gradient, on both
backends (ref and fast):
    |ours - torch| <= atol + rtol * |torch|      (tolerances stated per test, fp32)
"""
import warnings

import numpy as np
import pytest

import torch
F = torch.nn.functional

BACKENDS = ["ref", "fast"]


def rnd(seed, *shape, scale=1.0):
    return (np.random.default_rng(seed).uniform(-1, 1, size=shape) * scale).astype(np.float32)


class Probe:
    def __init__(self, run_mg, tmp_path, backend):
        self.run_mg, self.dir, self.backend = run_mg, tmp_path, backend

    def __call__(self, op, inputs, **params):
        for name, arr in inputs.items():
            arr = np.ascontiguousarray(arr)
            assert arr.dtype in (np.float32, np.int32), name
            arr.astype(arr.dtype.newbyteorder("<")).tofile(self.dir / f"{name}.bin")
        args = ["kernel_probe", self.backend, op, self.dir] + [f"{k}={v}" for k, v in params.items()]
        self.run_mg(args)
        return self

    def out(self, name, shape, dtype=np.float32):
        return np.fromfile(self.dir / f"{name}.bin", dtype=np.dtype(dtype).newbyteorder("<")).reshape(shape)


@pytest.fixture(params=BACKENDS)
def probe(request, run_mg, tmp_path, test_tool):
    test_tool("kernel_probe")
    return Probe(run_mg, tmp_path, request.param)


def close(name, ours, ref, atol, rtol):
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    ours = np.asarray(ours).reshape(ref.shape)
    err = np.abs(ours.astype(np.float64) - ref.astype(np.float64))
    lim = atol + rtol * np.abs(ref.astype(np.float64))
    bad = np.argwhere(~(err <= lim))
    assert bad.size == 0, (f"{name}: {len(bad)} of {ref.size} elements out of tolerance "
                           f"(atol {atol}, rtol {rtol}); first at {tuple(bad[0])}: ours "
                           f"{ours[tuple(bad[0])]!r} torch {ref[tuple(bad[0])]!r}; worst |err| {err.max():.3g}")


def leaf(a):
    return torch.tensor(a, requires_grad=True)


def test_linear(probe):
    N, IN, OUT = 37, 45, 29
    x, W, b, dy = rnd(1, N, IN), rnd(2, OUT, IN, scale=0.5), rnd(3, OUT), rnd(4, N, OUT)
    probe("linear", dict(x=x, W=W, b=b, dy=dy), N=N, IN=IN, OUT=OUT, bias=1)
    tx, tW, tb = leaf(x), leaf(W), leaf(b)
    y = F.linear(tx, tW, tb)
    y.backward(torch.tensor(dy))
    tol = dict(atol=1e-5, rtol=1e-4)
    close("y", probe.out("y", (N, OUT)), y, **tol)
    close("dx", probe.out("dx", (N, IN)), tx.grad, **tol)
    close("dW", probe.out("dW", (OUT, IN)), tW.grad, **tol)
    close("db", probe.out("db", (OUT,)), tb.grad, **tol)


@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_norms(probe, kind):
    N, C, eps = 37, 77, 1e-5
    x = rnd(1, N, C, scale=2.0) + (np.arange(N * C).reshape(N, C) % 5).astype(np.float32)
    w, b, dy = rnd(2, C), rnd(3, C), rnd(4, N, C)
    tx, tw, tb = leaf(x), leaf(w), leaf(b)
    if kind == "layernorm":
        probe("layernorm", dict(x=x, w=w, b=b, dy=dy), N=N, C=C, eps=eps)
        y = F.layer_norm(tx, (C,), tw, tb, eps)
    else:
        probe("rmsnorm", dict(x=x, w=w, dy=dy), N=N, C=C, eps=eps)
        y = F.rms_norm(tx, (C,), tw, eps)
    y.backward(torch.tensor(dy))
    tol = dict(atol=1e-5, rtol=1e-4)
    close("y", probe.out("y", (N, C)), y, **tol)
    close("dx", probe.out("dx", (N, C)), tx.grad, **tol)
    close("dw", probe.out("dw", (C,)), tw.grad, **tol)
    if kind == "layernorm":
        close("db", probe.out("db", (C,)), tb.grad, **tol)


def megatron_bias_gelu(x):
    """Megatron-Core's fused bias-GeLU (its MLP's default when the linear layers have biases)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.fusions.fused_bias_gelu import bias_gelu_impl
    return bias_gelu_impl(x, torch.zeros(x.shape[-1]))


@pytest.mark.parametrize("approx", ["none", "tanh", "megatron_bias_gelu"])
def test_gelu(probe, approx):
    n = 4099
    x, dy = rnd(1, n, scale=6.0), rnd(2, n)
    probe("gelu", dict(x=x, dy=dy), n=n, tanh=int(approx != "none"))
    tx = leaf(x)
    y = megatron_bias_gelu(tx) if approx == "megatron_bias_gelu" else F.gelu(tx, approximate=approx)
    y.backward(torch.tensor(dy))
    close("y", probe.out("y", (n,)), y, atol=1e-6, rtol=1e-5)
    close("dx", probe.out("dx", (n,)), tx.grad, atol=1e-6, rtol=1e-5)


def test_swiglu(probe):
    N, Fh = 23, 41
    x, dy = rnd(1, N, 2 * Fh, scale=5.0), rnd(2, N, Fh)
    probe("swiglu", dict(x=x, dy=dy), N=N, F=Fh)
    tx = leaf(x)
    gate, up = torch.chunk(tx, 2, dim=-1)  # Megatron's swiglu: silu(x[0]) * x[1]
    y = F.silu(gate) * up
    y.backward(torch.tensor(dy))
    close("y", probe.out("y", (N, Fh)), y, atol=1e-6, rtol=1e-5)
    close("dx", probe.out("dx", (N, 2 * Fh)), tx.grad, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("rot,with_pos", [(16, False), (10, True)])
def test_rope(probe, rot, with_pos):
    B, T, H, D, base = 2, 29, 3, 16, 10000.0
    x, dy = rnd(1, B, T, H, D), rnd(2, B, T, H, D)
    pos = np.random.default_rng(3).integers(0, 2048, size=(B, T)).astype(np.int32)
    ins = dict(x=x, dy=dy, **(dict(pos=pos) if with_pos else {}))
    probe("rope", ins, B=B, T=T, H=H, D=D, rot=rot, base=base, pos=int(with_pos))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.models.common.embeddings.rope_utils import _apply_rotary_pos_emb_bshd
    # Megatron's RotaryEmbedding: inv_freq in fp32, freqs = outer(positions, inv_freq), cat twice
    inv_freq = 1.0 / (base ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
    p = torch.tensor(pos if with_pos else np.tile(np.arange(T), (B, 1)), dtype=torch.float32)
    freqs = p[..., None] * inv_freq  # (B, T, rot/2), as torch.outer per row
    emb = torch.cat((freqs, freqs), dim=-1)[:, :, None, :]  # (B, T, 1, rot)
    tx = leaf(x)
    y = _apply_rotary_pos_emb_bshd(tx, emb, rotary_interleaved=False)
    y.backward(torch.tensor(dy))
    close("y", probe.out("y", x.shape), y, atol=1e-6, rtol=1e-5)
    close("dx", probe.out("dx", x.shape), tx.grad, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("B,T,Hq,Hkv,D,docs", [(2, 67, 6, 2, 24, False), (2, 67, 6, 2, 24, True),
                                               (1, 130, 3, 3, 7, False), (3, 1, 4, 1, 5, False)])
def test_attention(probe, B, T, Hq, Hkv, D, docs):
    scale = 1.0 / np.sqrt(D)
    q, k, v = rnd(1, B, T, Hq, D, scale=1.5), rnd(2, B, T, Hkv, D, scale=1.5), rnd(3, B, T, Hkv, D)
    dy = rnd(4, B, T, Hq, D)
    seg = np.tile((np.arange(T) // 11).astype(np.int32), (B, 1))  # documents of 11 tokens
    ins = dict(q=q, k=k, v=v, dy=dy, **(dict(seg=seg) if docs else {}))
    probe("attn", ins, B=B, T=T, Hq=Hq, Hkv=Hkv, D=D, scale=repr(float(np.float32(scale))), seg=int(docs))
    tq, tk, tv = leaf(q), leaf(k), leaf(v)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    mask = causal & torch.tensor(seg[:, :, None] == seg[:, None, :])[:, None] if docs else causal
    y = F.scaled_dot_product_attention(tq.transpose(1, 2), tk.transpose(1, 2), tv.transpose(1, 2),
                                       attn_mask=mask, scale=float(np.float32(scale)), enable_gqa=True)
    y = y.transpose(1, 2)
    y.backward(torch.tensor(dy))
    tol = dict(atol=1e-5, rtol=1e-4)
    close("y", probe.out("y", q.shape), y, **tol)
    close("dq", probe.out("dq", q.shape), tq.grad, **tol)
    close("dk", probe.out("dk", k.shape), tk.grad, **tol)
    close("dv", probe.out("dv", v.shape), tv.grad, **tol)


@pytest.mark.parametrize("with_mask", [False, True])
def test_cross_entropy_padded_vocab(probe, with_mask):
    N, V, Vp, scale = 29, 1001, 1024, 1.0 / 29
    logits = rnd(1, N, Vp, scale=8.0)
    logits[:, V:] = 50.0  # padding columns: large, and must not count
    targets = np.random.default_rng(2).integers(0, V, size=N).astype(np.int32)
    mask = (np.random.default_rng(3).uniform(size=N) > 0.3).astype(np.float32)
    ins = dict(logits=logits, targets=targets, **(dict(mask=mask) if with_mask else {}))
    probe("xent", ins, N=N, Vp=Vp, V=V, scale=repr(scale), mask=int(with_mask))
    tl = leaf(logits)
    loss = F.cross_entropy(tl[:, :V], torch.tensor(targets, dtype=torch.long), reduction="none")
    w = torch.tensor(mask if with_mask else np.ones(N, np.float32)) * scale
    (loss * w).sum().backward()
    close("loss", probe.out("loss", (N,)), loss, atol=1e-5, rtol=1e-5)
    close("lse", probe.out("lse", (N,)), torch.logsumexp(tl[:, :V], dim=1), atol=1e-5, rtol=1e-6)
    close("dlogits", probe.out("dlogits", (N, Vp)), tl.grad, atol=1e-7, rtol=1e-5)


def test_embedding(probe):
    N, C, V = 53, 70, 31
    ids = np.random.default_rng(1).integers(0, V, size=N).astype(np.int32)
    table, dy = rnd(2, V, C), rnd(3, N, C)
    probe("embedding", dict(ids=ids, table=table, dy=dy), N=N, C=C, V=V)
    tt = leaf(table)
    y = F.embedding(torch.tensor(ids, dtype=torch.long), tt)
    y.backward(torch.tensor(dy))
    close("y", probe.out("y", (N, C)), y, atol=0, rtol=0)
    close("dtable", probe.out("dtable", (V, C)), tt.grad, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("decay,gscale", [(1, 1.0), (0, 0.37)])
def test_adamw_matches_torch_optim(probe, decay, gscale):
    n, steps, lr, b1, b2, eps, wd = 1003, 6, 3e-3, 0.9, 0.95, 1e-8, 0.1
    p0, g = rnd(1, n), rnd(2, steps, n, scale=0.1)
    probe("adamw", dict(p=p0, g=g), n=n, steps=steps, lr=lr, b1=b1, b2=b2, eps=eps, wd=wd,
          decay=decay, gscale=gscale)
    tp = torch.nn.Parameter(torch.tensor(p0))
    opt = torch.optim.AdamW([tp], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd if decay else 0.0,
                            foreach=False)
    for s in range(steps):
        tp.grad = torch.tensor(g[s])
        if gscale != 1.0:
            tp.grad.mul_(torch.tensor(gscale, dtype=torch.float32))  # clip_grad_norm_'s scaling
        opt.step()
    st = opt.state[tp]
    tol = dict(atol=1e-7, rtol=2e-6)
    close("p", probe.out("p", (n,)), tp, **tol)
    close("m", probe.out("m", (n,)), st["exp_avg"], **tol)
    close("v", probe.out("v", (n,)), st["exp_avg_sq"], **tol)


def test_sumsq_grad_norm(probe):
    n = 3 * 16384 + 5
    x = rnd(1, n, scale=3.0)
    probe("sumsq", dict(x=x), n=n)
    ours = probe.out("s", (1,), np.float64)[0]
    ref = torch.linalg.vector_norm(torch.tensor(x, dtype=torch.float64)).item() ** 2
    assert abs(ours - ref) <= 1e-12 * ref
