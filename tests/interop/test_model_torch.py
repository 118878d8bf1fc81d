"""mg-train's model (train/model.h) against transformers, same weights, fp32.

A tiny GPT-2 (GPT2LMHeadModel: LayerNorm, learned positions, biases, tied embeddings, GeLU
tanh = gelu_new or erf = gelu) and a tiny Llama (LlamaForCausalLM: RMSNorm, RoPE, SwiGLU,
grouped-query attention 8 heads / 4 groups, no biases, untied), eager attention, dropout 0,
2 layers, hidden 64, vocabulary 1000 (padded to 1024 by mg-train), batch 2 x 16 tokens;
also Llama with tied embeddings, Qwen2 (QKV bias), explicit position ids, and packed
documents (position ids and attention reset per document) against each document run alone.
The transformers model is randomised (norm weights and biases too), its weights saved as
safetensors and handed to build/tests/tools/model_probe with the equivalent Megatron flags;
the loss is the (masked) mean token cross-entropy. mg-train's softmax runs over the padded
vocabulary, as Megatron's (1024 columns; the HF file has no padding rows, so mg-train's are
zero and their logits 0): the PyTorch side appends those 24 zero logits before the
cross-entropy, so the loss and every gradient carry the padding columns' share; with
--mask-vocab-padding (test_mask_vocab_padding_is_transformers_loss) the loss is transformers'
own over the 1000 columns. For logits (the 1000 real columns), loss and every parameter's
gradient, on both kernel backends (ref and fast):
    |ours - torch| <= atol + rtol * |torch|   per tensor, with
    atol = ATOL_REL * max|torch tensor| and rtol = RTOL (stated below, fp32 reduction order).
"""
import numpy as np
import pytest

import torch
import transformers
import safetensors.torch as st
F = torch.nn.functional

V, B, T, H, L = 1000, 2, 16, 64, 2
VP = 1024  # --make-vocab-size-divisible-by 128
ATOL_REL, RTOL = 4e-6, 4e-5
LOSS_RTOL = 1e-6

COMMON = ["--num-layers", L, "--hidden-size", H, "--num-attention-heads", 8, "--seq-length", T,
          "--max-position-embeddings", 32, "--vocab-size", V, "--micro-batch-size", B,
          "--train-iters", 1, "--lr", "1e-3", "--norm-epsilon", "1e-5"]
LLAMA_FLAGS = ["--normalization", "RMSNorm", "--swiglu", "--position-embedding-type", "rope",
               "--untie-embeddings-and-output-weights", "--disable-bias-linear",
               "--group-query-attention", "--num-query-groups", 4, "--ffn-hidden-size", 160,
               "--rotary-base", 10000]


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or ".ln_" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g))


def gpt2_model(gelu):
    cfg = transformers.GPT2Config(vocab_size=V, n_positions=32, n_embd=H, n_layer=L, n_head=8,
                                  activation_function=gelu, resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, layer_norm_epsilon=1e-5,
                                  bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    m = transformers.GPT2LMHeadModel(cfg)
    randomise(m, 1)
    return m


def llama_model(tied=False):
    cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=H, intermediate_size=160,
                                   num_hidden_layers=L, num_attention_heads=8,
                                   num_key_value_heads=4, max_position_embeddings=32,
                                   rms_norm_eps=1e-5, tie_word_embeddings=tied,
                                   attention_bias=False, mlp_bias=False, attention_dropout=0.0,
                                   bos_token_id=0, eos_token_id=0, pad_token_id=None)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    m = transformers.LlamaForCausalLM(cfg)
    randomise(m, 2)
    return m


def qwen2_model():
    cfg = transformers.Qwen2Config(vocab_size=V, hidden_size=H, intermediate_size=160,
                                   num_hidden_layers=L, num_attention_heads=8,
                                   num_key_value_heads=4, max_position_embeddings=32,
                                   rms_norm_eps=1e-5, tie_word_embeddings=False,
                                   use_sliding_window=False, attention_dropout=0.0,
                                   bos_token_id=0, eos_token_id=0)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    m = transformers.Qwen2ForCausalLM(cfg)
    randomise(m, 3)
    return m


def batch(seed, masked):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=(B, T)).astype(np.int32)
    tgt = rng.integers(0, V, size=(B, T)).astype(np.int32)
    mask = (rng.uniform(size=(B, T)) < 0.7).astype(np.float32) if masked else None
    return ids, tgt, mask


def padded(logits, pad):
    """The logits of mg-train's softmax: the real columns and `pad` padding columns, whose
    rows are zero here (the HF weights have none), so their logits are 0."""
    return F.pad(logits, (0, pad))


def torch_run(model, ids, tgt, mask, pos=None, pad=VP - V):
    model.train()
    model.zero_grad()
    kw = {} if pos is None else {"position_ids": torch.tensor(pos, dtype=torch.long)}
    logits = model(input_ids=torch.tensor(ids, dtype=torch.long), **kw).logits
    per = F.cross_entropy(padded(logits, pad).reshape(-1, V + pad),
                          torch.tensor(tgt, dtype=torch.long).reshape(-1), reduction="none")
    m = torch.ones_like(per) if mask is None else torch.tensor(mask).reshape(-1)
    loss = (per * m).sum() / m.sum()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return logits.detach(), loss.item(), grads


def probe_run(run_mg, tmp_path, backend, gelu, model, flags, ids, tgt, mask, pos=None,
              seg=None):
    weights = {n: p.detach().contiguous() for n, p in model.named_parameters()}
    st.save_file(weights, str(tmp_path / "weights.safetensors"))
    inp = {"ids": torch.tensor(ids), "targets": torch.tensor(tgt)}
    if mask is not None:
        inp["loss_mask"] = torch.tensor(mask)
    if pos is not None:
        inp["pos"] = torch.tensor(pos)
    if seg is not None:
        inp["seg"] = torch.tensor(seg)
    st.save_file(inp, str(tmp_path / "input.safetensors"))
    run_mg(["model_probe", backend, gelu, tmp_path / "weights.safetensors",
            tmp_path / "input.safetensors", tmp_path] + COMMON + flags,
           env={"OMP_NUM_THREADS": "2"})
    out = st.load_file(str(tmp_path / "out.safetensors"))
    grads = st.load_file(str(tmp_path / "grads.safetensors"))
    return out["logits"], float(out["loss"][0]), grads


def close(name, ours, ref):
    ref = ref.double().numpy()
    ours = ours.double().numpy().reshape(ref.shape)
    atol = ATOL_REL * float(np.abs(ref).max()) + 1e-12
    err = np.abs(ours - ref)
    bad = np.argwhere(~(err <= atol + RTOL * np.abs(ref)))
    assert bad.size == 0, (f"{name}: {len(bad)} of {ref.size} out of tolerance (atol {atol:.3g}, "
                           f"rtol {RTOL}); first at {tuple(bad[0])}: ours {ours[tuple(bad[0])]!r} "
                           f"torch {ref[tuple(bad[0])]!r}; worst |err| {err.max():.3g}")


def compare(model, flags, gelu, backend, masked, run_mg, tmp_path, pos=None):
    ids, tgt, mask = batch(7, masked)
    pad = 0 if "--mask-vocab-padding" in flags else VP - V
    t_logits, t_loss, t_grads = torch_run(model, ids, tgt, mask, pos, pad)
    o_logits, o_loss, o_grads = probe_run(run_mg, tmp_path, backend, gelu, model, flags, ids,
                                          tgt, mask, pos)
    close("logits", o_logits, t_logits)
    assert abs(o_loss - t_loss) <= LOSS_RTOL * abs(t_loss) + 1e-7, (o_loss, t_loss)
    assert set(o_grads) == set(t_grads), sorted(set(o_grads) ^ set(t_grads))
    for name, g in t_grads.items():
        assert float(g.abs().max()) > 0, f"{name}: zero gradient in torch (test is vacuous)"
        close(f"grad {name}", o_grads[name], g)


@pytest.mark.parametrize("backend", ["ref", "fast"])
@pytest.mark.parametrize("gelu", [("tanh", "gelu_new"), ("erf", "gelu")], ids=["tanh", "erf"])
@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_gpt2_matches_transformers(backend, gelu, masked, run_mg, tmp_path, test_tool):
    test_tool("model_probe")
    compare(gpt2_model(gelu[1]), [], gelu[0], backend, masked, run_mg, tmp_path)


@pytest.mark.parametrize("backend", ["ref", "fast"])
@pytest.mark.parametrize("masked", [False, True], ids=["nomask", "mask"])
def test_llama_gqa_matches_transformers(backend, masked, run_mg, tmp_path, test_tool):
    test_tool("model_probe")
    compare(llama_model(), LLAMA_FLAGS, "default", backend, masked, run_mg, tmp_path)


def test_llama_tied_embeddings(run_mg, tmp_path, test_tool):
    test_tool("model_probe")
    flags = [f for f in LLAMA_FLAGS if f != "--untie-embeddings-and-output-weights"]
    compare(llama_model(tied=True), flags, "default", "fast", True, run_mg, tmp_path)


@pytest.mark.parametrize("backend", ["ref", "fast"])
def test_qwen2_qkv_bias(backend, run_mg, tmp_path, test_tool):
    """Qwen2: the Llama family plus a bias on q/k/v only (--add-qkv-bias)."""
    test_tool("model_probe")
    compare(qwen2_model(), LLAMA_FLAGS + ["--add-qkv-bias"], "default", backend, False, run_mg,
            tmp_path)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_position_ids(family, run_mg, tmp_path, test_tool):
    """Explicit position ids (--reset-position-ids restarts them at each document): learned
    positions look them up, RoPE rotates by them."""
    test_tool("model_probe")
    pos = np.concatenate([np.arange(5), np.arange(11)]).astype(np.int32)
    pos = np.stack([pos, np.arange(3, 3 + T)]).astype(np.int32)
    if family == "gpt2":
        compare(gpt2_model("gelu_new"), [], "tanh", "fast", False, run_mg, tmp_path, pos)
    else:
        compare(llama_model(), LLAMA_FLAGS, "default", "fast", False, run_mg, tmp_path, pos)


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_mask_vocab_padding_is_transformers_loss(family, run_mg, tmp_path, test_tool):
    """--mask-vocab-padding: the softmax over the 1000 real columns, transformers' loss."""
    test_tool("model_probe")
    model, flags, gelu = ((gpt2_model("gelu_new"), [], "tanh") if family == "gpt2"
                          else (llama_model(), LLAMA_FLAGS, "default"))
    compare(model, flags + ["--mask-vocab-padding"], gelu, "fast", True, run_mg, tmp_path)


def test_padding_columns_change_the_loss(run_mg, tmp_path, test_tool):
    """The two semantics differ on this batch by far more than the tolerance (so the tests
    above tell them apart)."""
    test_tool("model_probe")
    ids, tgt, _ = batch(7, False)
    model = llama_model()
    _, megatron, _ = torch_run(model, ids, tgt, None)
    _, hf, _ = torch_run(model, ids, tgt, None, pad=0)
    assert abs(megatron - hf) > 1000 * LOSS_RTOL * hf, (megatron, hf)
    _, ours, _ = probe_run(run_mg, tmp_path, "fast", "default", model, LLAMA_FLAGS, ids, tgt, None)
    assert abs(ours - megatron) <= LOSS_RTOL * megatron, (ours, megatron, hf)


SEGMENTS = [[5, 11], [7, 4, 5]]  # document lengths per sequence (sum T)


def torch_documents(model, ids, tgt):
    """Each document run alone (positions from 0): what --reset-position-ids plus
    --reset-attention-mask must reproduce on the packed sequences."""
    model.train()
    model.zero_grad()
    rows, total = [], 0.0
    for b, lens in enumerate(SEGMENTS):
        parts, s = [], 0
        for n in lens:
            lg = model(input_ids=torch.tensor(ids[b:b + 1, s:s + n], dtype=torch.long)).logits[0]
            total = total + F.cross_entropy(padded(lg, VP - V),
                                            torch.tensor(tgt[b, s:s + n], dtype=torch.long),
                                            reduction="sum")
            parts.append(lg)
            s += n
        rows.append(torch.cat(parts))
    loss = total / (B * T)
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    return torch.stack(rows).detach(), loss.item(), grads


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_packed_documents(family, run_mg, tmp_path, test_tool):
    test_tool("model_probe")
    model, flags, gelu = ((gpt2_model("gelu_new"), [], "tanh") if family == "gpt2"
                          else (llama_model(), LLAMA_FLAGS, "default"))
    ids, tgt, _ = batch(5, False)
    seg = np.array([np.repeat(np.arange(len(l)), l) for l in SEGMENTS], dtype=np.int32)
    pos = np.array([np.concatenate([np.arange(n) for n in l]) for l in SEGMENTS], dtype=np.int32)
    t_logits, t_loss, t_grads = torch_documents(model, ids, tgt)
    o_logits, o_loss, o_grads = probe_run(run_mg, tmp_path, "fast", gelu, model, flags, ids, tgt,
                                          None, pos, seg)
    close("logits", o_logits, t_logits)
    assert abs(o_loss - t_loss) <= LOSS_RTOL * abs(t_loss), (o_loss, t_loss)
    for name, g in t_grads.items():
        close(f"grad {name}", o_grads[name], g)


def test_gpt2_default_gelu_is_megatrons_bias_gelu(run_mg, tmp_path, test_tool):
    """With linear biases, mg-train's default GeLU is Megatron's fused bias-gelu (tanh), so
    `default` matches transformers' gelu_new."""
    test_tool("model_probe")
    compare(gpt2_model("gelu_new"), [], "default", "ref", False, run_mg, tmp_path)


def test_base_model_names_and_bf16(run_mg, tmp_path, test_tool):
    """Weights saved without the "transformer." prefix (GPT2Model, like the original gpt2
    file) and in bf16 load too: same logits as the bf16-rounded fp32 model."""
    test_tool("model_probe")
    model = gpt2_model("gelu_new")
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    weights = {n.removeprefix("transformer."): p.detach().to(torch.bfloat16).contiguous()
               for n, p in model.named_parameters()}
    st.save_file(weights, str(tmp_path / "weights.safetensors"))
    ids, tgt, _ = batch(3, False)
    st.save_file({"ids": torch.tensor(ids), "targets": torch.tensor(tgt)},
                 str(tmp_path / "input.safetensors"))
    run_mg(["model_probe", "ref", "tanh", tmp_path / "weights.safetensors",
            tmp_path / "input.safetensors", tmp_path] + COMMON)
    t_logits, _, _ = torch_run(model, ids, tgt, None)
    close("logits", st.load_file(str(tmp_path / "out.safetensors"))["logits"], t_logits)


def test_wrong_shape_is_refused(run_mg, tmp_path, test_tool):
    test_tool("model_probe")
    model = gpt2_model("gelu_new")
    weights = {n: p.detach().contiguous() for n, p in model.named_parameters()}
    weights["transformer.h.1.mlp.c_fc.weight"] = torch.zeros(H, 100)
    st.save_file(weights, str(tmp_path / "weights.safetensors"))
    ids, tgt, _ = batch(1, False)
    st.save_file({"ids": torch.tensor(ids), "targets": torch.tensor(tgt)},
                 str(tmp_path / "input.safetensors"))
    p = run_mg(["model_probe", "ref", "default", tmp_path / "weights.safetensors",
                tmp_path / "input.safetensors", tmp_path] + COMMON, check=False)
    assert p.returncode == 2
    assert "transformer.h.1.mlp.c_fc.weight" in p.stderr and "shape" in p.stderr, p.stderr
