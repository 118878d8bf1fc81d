"""Interop tests of mg-convert (bin/mg-convert, ckpt/) against transformers, PyTorch and the
rules Megatron documents for its checkpoints (docs/FORMATS.md §5, §6).

Every expectation is computed here, in PyTorch, from the Hugging Face weights; nothing is
taken from mg-convert's own output. The sources are tiny random models that transformers
creates and saves (one per family, module-scoped):
  gpt2   GPT2LMHeadModel, fp32, V=300, H=32, 4 heads, 4 layers (LayerNorm, biases, learned
         positions, tied embeddings, Conv1D weights)
  llama  LlamaForCausalLM, fp32, V=259, H=64, 8 heads, 4 KV heads (GQA), F=96, untied,
         rope_theta 50000
  qwen2  Qwen2ForCausalLM, bf16, V=500, H=64, 8 heads, 4 KV heads, QKV bias, tied
Vocabulary sizes are not multiples of 128, so every conversion pads; 4 KV heads make TP=4
legal. Every parameter is drawn at random (norm weights and biases included), so a tensor
written in the wrong place cannot go unnoticed.

Checked:
  1. HF -> Megatron at TP in {1,2,4} x PP in {1,2} (with --verify) -> HF: every exported tensor
     equals the source bit for bit (same names, dtypes, shapes, bytes), the config matches,
     and transformers loads the export and gives identical logits. Every .pt any test reads
     opens with torch.load(weights_only=True) with only argparse.Namespace allow-listed (the
     process-wide allow-list, which importing megatron.core fills, is emptied meanwhile).
  2. At TP=2 (PP=1 and PP=2) every rank's state dict equals the split computed here by
     Megatron's rules: QKV rows [q_g..., k_g, v_g] per query group, SwiGLU fc1 per rank
     [gate_r; up_r], vocab padded with zero rows to a multiple of 128*TP and split on dim 0,
     row-parallel weights split on dim 1, norms / row-parallel biases / position embeddings
     replicated, GPT-2 Conv1D weights transposed, tied output layer copied to the last stage
     when PP>1; local layer numbering per stage; the args carry the model shape.
  3. Resharding TP2PP2 -> TP4PP1 -> TP1PP1 equals the direct HF -> TP1PP1 conversion tensor for
     tensor, and the args agree except the ones that depend on TP/PP.
  4. --target-dtype bf16 writes exactly torch's .to(torch.bfloat16) of the source, in the
     Megatron shards and in the HF export.
  5. A Megatron checkpoint written by torch.save itself (PyTorch's pickler and zip writer, the
     layout of item 2) exports to the source HF weights (--true-vocab-size).
  6. --iteration, sharded HF output (--max-shard-size) with its index, --tokenizer-dir,
     --transformer-impl local, --make-vocab-size-divisible-by, uneven pipeline stages
     (--decoder-first-pipeline-num-layers), optimizer state in megatron-core's nested form
     refused unless --drop-optimizer-state (torch's form is resharded:
     test_convert_moments.py), a missing or truncated shard leaves no output.
The megatron-core GPTModel comparison is in test_convert_mcore.py.
A missing bin/mg-convert fails every test (run make); nothing is skipped.
"""
import argparse
import json
import os
import pathlib
import re

import pytest
import torch
import transformers
from safetensors.torch import load_file

from conftest import bin_dir_path, run_mg

TPS = (1, 2, 4)
PPS = (1, 2)
DIVISIBLE = 128

FAMILIES = {
    "gpt2": dict(
        config=lambda: transformers.GPT2Config(
            vocab_size=300, n_embd=32, n_layer=4, n_head=4, n_positions=64,
            bos_token_id=299, eos_token_id=299),
        model=lambda c: transformers.GPT2LMHeadModel(c),
        dtype=torch.float32,
    ),
    "llama": dict(
        config=lambda: transformers.LlamaConfig(
            vocab_size=259, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64,
            rms_norm_eps=1e-5, rope_theta=50000.0, tie_word_embeddings=False,
            bos_token_id=1, eos_token_id=2),
        model=lambda c: transformers.LlamaForCausalLM(c),
        dtype=torch.float32,
    ),
    "qwen2": dict(
        config=lambda: transformers.Qwen2Config(
            vocab_size=500, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
            bos_token_id=1, eos_token_id=2),
        model=lambda c: transformers.Qwen2ForCausalLM(c),
        dtype=torch.bfloat16,
    ),
}

# --------------------------------------------------------------------------------------------
# running the tool

def mg_convert(*args, check=True):
    """Runs bin/mg-convert ARGS --quiet; a missing binary or (with check) a failure fails the test."""
    exe = bin_dir_path() / "mg-convert"
    if not os.access(exe, os.X_OK):
        pytest.fail(f"{exe} is missing: build it with make (ckpt/main.c)")
    return run_mg([str(exe), *[str(a) for a in args], "--quiet"], check=check)


def to_megatron(src, dst, tp, pp, *extra):
    mg_convert("--load-dir", src, "--save-dir", dst, "--saver", "megatron",
               "--target-tensor-parallel-size", tp, "--target-pipeline-parallel-size", pp, *extra)
    return dst


def to_hf(src, dst, *extra):
    mg_convert("--load-dir", src, "--save-dir", dst, "--saver", "hf", *extra)
    return dst


# --------------------------------------------------------------------------------------------
# Hugging Face side

def make_hf_source(family, path):
    """A tiny random model of FAMILY saved with save_pretrained into PATH; every parameter random."""
    spec = FAMILIES[family]
    gen = torch.Generator().manual_seed(sum(map(ord, family)))
    model = spec["model"](spec["config"]()).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    model = model.to(spec["dtype"])
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def hf_source(tmp_path_factory):
    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = make_hf_source(family, tmp_path_factory.mktemp(f"hf-{family}"))
        return cache[family]

    return get


def read_hf(path):
    """{name: tensor} of an HF directory (model.safetensors or the shards of its index)."""
    path = pathlib.Path(path)
    index = path / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text())["weight_map"]
        out = {}
        for f in sorted(set(weight_map.values())):
            part = load_file(path / f)
            assert {k for k, v in weight_map.items() if v == f} == set(part), f"index of {path} disagrees with {f}"
            out.update(part)
        return out
    return load_file(path / "model.safetensors")


def hf_config(path):
    return json.loads((pathlib.Path(path) / "config.json").read_text())


def assert_same_tensors(actual, expected, what):
    """Same names, dtypes, shapes and bits; the message names every difference."""
    missing, extra = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
    problems = []
    if missing:
        problems.append(f"missing {missing}")
    if extra:
        problems.append(f"unexpected {extra}")
    for k in sorted(set(expected) & set(actual)):
        a, e = actual[k], expected[k]
        if not isinstance(a, torch.Tensor):
            problems.append(f"{k}: {type(a).__name__}, expected a tensor")
        elif a.dtype != e.dtype or a.shape != e.shape:
            problems.append(f"{k}: {a.dtype} {tuple(a.shape)}, expected {e.dtype} {tuple(e.shape)}")
        elif not torch.equal(a.view(torch.uint8) if a.numel() else a, e.view(torch.uint8) if e.numel() else e):
            bad = (a.float() != e.float()).nonzero()
            where = bad[0].tolist() if len(bad) else "bit pattern only"
            problems.append(f"{k}: values differ ({len(bad)} elements, first at {where})")
    if problems:
        pytest.fail(f"{what}: " + "; ".join(problems[:20]) + (" ..." if len(problems) > 20 else ""))


_SOURCE_LOGITS = {}


def source_logits(path, ids):
    """logits() of a source directory, computed once per (directory, ids)."""
    key = (str(path), tuple(ids.flatten().tolist()), tuple(ids.shape))
    if key not in _SOURCE_LOGITS:
        _SOURCE_LOGITS[key] = logits(path, ids)
    return _SOURCE_LOGITS[key]


def logits(path, ids):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype="auto").eval()
    with torch.no_grad():
        return model(ids).logits


CONFIG_KEYS = {
    "gpt2": ("model_type", "vocab_size", "n_embd", "n_layer", "n_head", "n_positions",
             "layer_norm_epsilon", "activation_function"),
    "llama": ("model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps",
              "max_position_embeddings", "attention_bias", "mlp_bias", "hidden_act"),
    "qwen2": ("model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
              "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "max_position_embeddings",
              "hidden_act"),
}


def assert_same_config(family, exported, source):
    a = transformers.AutoConfig.from_pretrained(exported)
    e = transformers.AutoConfig.from_pretrained(source)
    diffs = [f"{k}: {getattr(a, k, None)!r} != {getattr(e, k)!r}" for k in CONFIG_KEYS[family]
             if getattr(a, k, None) != getattr(e, k)]
    if a.architectures != e.architectures:
        diffs.append(f"architectures {a.architectures} != {e.architectures}")
    if bool(a.tie_word_embeddings) != bool(e.tie_word_embeddings):
        diffs.append(f"tie_word_embeddings {a.tie_word_embeddings} != {e.tie_word_embeddings}")
    if family != "gpt2" and a.rope_parameters.get("rope_theta") != e.rope_parameters.get("rope_theta"):
        diffs.append(f"rope_theta {a.rope_parameters} != {e.rope_parameters}")
    assert not diffs, f"config.json of {exported} differs from the source: {diffs}"


# --------------------------------------------------------------------------------------------
# Megatron side

RANK_DIR = re.compile(r"mp_rank_(\d\d)(?:_(\d\d\d))?$")

def torch_load(f):
    """torch.load(f, weights_only=True) with argparse.Namespace as the only allow-listed class:
    the process-wide allow-list (which importing megatron.core fills with many classes) is
    emptied for the call and restored afterwards."""
    saved = torch.serialization.get_safe_globals()
    torch.serialization.clear_safe_globals()
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            return torch.load(f, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - name the file
        pytest.fail(f"torch.load(weights_only=True) fails on {f}: {e}")
    finally:
        torch.serialization.add_safe_globals(saved)


def read_megatron(path):
    """(tracker text, iteration dir name, {(tp, pp): top-level dict}) of a Megatron torch checkpoint,
    every file read with torch_load (weights_only); the rank folders must form a full TP x PP
    grid named as Megatron names them."""
    path = pathlib.Path(path)
    tracker = (path / "latest_checkpointed_iteration.txt").read_text()
    name = "release" if tracker.strip() == "release" else f"iter_{int(tracker.strip()):07d}"
    ranks = {}
    for d in sorted((path / name).iterdir()):
        m = RANK_DIR.match(d.name)
        assert m, f"unexpected entry {d} in a Megatron checkpoint"
        ranks[(int(m.group(1)), int(m.group(2) or 0))] = torch_load(d / "model_optim_rng.pt")
    tp = 1 + max(t for t, _ in ranks)
    pp = 1 + max(p for _, p in ranks)
    assert set(ranks) == {(t, p) for t in range(tp) for p in range(pp)}, f"incomplete grid {sorted(ranks)}"
    for d in (path / name).iterdir():
        assert (d.name.count("_") == 3) == (pp > 1), f"{d.name}: PP suffix must be present iff PP > 1"
    return tracker, name, ranks


def model_tensors(sd, where):
    """The tensors of a rank's 'model' dict; _extra_state entries must be None or uint8 tensors."""
    out = {}
    for k, v in sd["model"].items():
        if k.endswith("._extra_state"):
            assert v is None or (isinstance(v, torch.Tensor) and v.dtype == torch.uint8), \
                f"{where}: {k} = {type(v).__name__}, expected None or a uint8 tensor"
        else:
            out[k] = v
    return out


def padded_vocab(v, tp, divisible=DIVISIBLE):
    m = divisible * tp
    return (v + m - 1) // m * m


def pad_rows(t, rows):
    return torch.cat([t, torch.zeros((rows - t.shape[0],) + tuple(t.shape[1:]), dtype=t.dtype)])


def interleave_qkv(q, k, v, ng):
    """Megatron's fused QKV order: per query group, the group's q heads, its k head, its v head."""
    qs, ks, vs = q.chunk(ng), k.chunk(ng), v.chunk(ng)
    return torch.cat([torch.cat([qs[g], ks[g], vs[g]]) for g in range(ng)])


def logical_layers(family, hf, cfg):
    """Full (unsplit) Megatron tensors per global layer, with split rules: {suffix: (tensor, rule)}
    with rule 'col' (dim 0), 'row' (dim 1), 'rep' (replicated) or 'swiglu'."""
    layers = []
    if family == "gpt2":
        H, nh = cfg["n_embd"], cfg["n_head"]
        for i in range(cfg["n_layer"]):
            p = f"transformer.h.{i}."
            w = hf[p + "attn.c_attn.weight"].t()
            b = hf[p + "attn.c_attn.bias"]
            layers.append({
                "input_norm.weight": (hf[p + "ln_1.weight"], "rep"),
                "input_norm.bias": (hf[p + "ln_1.bias"], "rep"),
                "self_attention.linear_qkv.weight": (interleave_qkv(w[:H], w[H:2 * H], w[2 * H:], nh), "col"),
                "self_attention.linear_qkv.bias": (interleave_qkv(b[:H], b[H:2 * H], b[2 * H:], nh), "col"),
                "self_attention.linear_proj.weight": (hf[p + "attn.c_proj.weight"].t(), "row"),
                "self_attention.linear_proj.bias": (hf[p + "attn.c_proj.bias"], "rep"),
                "mlp_norm.weight": (hf[p + "ln_2.weight"], "rep"),
                "mlp_norm.bias": (hf[p + "ln_2.bias"], "rep"),
                "mlp.linear_fc1.weight": (hf[p + "mlp.c_fc.weight"].t(), "col"),
                "mlp.linear_fc1.bias": (hf[p + "mlp.c_fc.bias"], "col"),
                "mlp.linear_fc2.weight": (hf[p + "mlp.c_proj.weight"].t(), "row"),
                "mlp.linear_fc2.bias": (hf[p + "mlp.c_proj.bias"], "rep"),
            })
        return layers
    ng = cfg["num_key_value_heads"]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        layer = {
            "input_norm.weight": (hf[p + "input_layernorm.weight"], "rep"),
            "self_attention.linear_qkv.weight": (interleave_qkv(
                hf[a + "q_proj.weight"], hf[a + "k_proj.weight"], hf[a + "v_proj.weight"], ng), "col"),
            "self_attention.linear_proj.weight": (hf[a + "o_proj.weight"], "row"),
            "mlp_norm.weight": (hf[p + "post_attention_layernorm.weight"], "rep"),
            "mlp.linear_fc1.weight": ((hf[p + "mlp.gate_proj.weight"], hf[p + "mlp.up_proj.weight"]), "swiglu"),
            "mlp.linear_fc2.weight": (hf[p + "mlp.down_proj.weight"], "row"),
        }
        if a + "q_proj.bias" in hf:
            layer["self_attention.linear_qkv.bias"] = (interleave_qkv(
                hf[a + "q_proj.bias"], hf[a + "k_proj.bias"], hf[a + "v_proj.bias"], ng), "col")
        layers.append(layer)
    return layers


NORM_NAMES = {
    "transformer_engine": {
        "input_norm.": "self_attention.linear_qkv.layer_norm_",
        "mlp_norm.": "mlp.linear_fc1.layer_norm_",
    },
    "local": {"input_norm.": "input_layernorm.", "mlp_norm.": "pre_mlp_layernorm."},
}


def split(t, rule, tp, r):
    if rule == "rep":
        return t
    if rule == "swiglu":
        gate, up = t
        return torch.cat([gate.chunk(tp)[r], up.chunk(tp)[r]])
    return t.chunk(tp, dim=0 if rule == "col" else 1)[r]


def expected_megatron(family, hf_dir, tp, pp, impl="transformer_engine", divisible=DIVISIBLE, stages=None):
    """{(tp_rank, pp_rank): {name: tensor}} that Megatron's rules give for the HF model in HF_DIR;
    STAGES: layers per pipeline stage (default: even split)."""
    hf = read_hf(hf_dir)
    cfg = hf_config(hf_dir)
    V = cfg["vocab_size"]
    Vp = padded_vocab(V, tp, divisible)
    if family == "gpt2":
        embed, head, final = hf["transformer.wte.weight"], None, "transformer.ln_f."
    else:
        embed, final = hf["model.embed_tokens.weight"], "model.norm."
        head = None if cfg.get("tie_word_embeddings") else hf["lm_head.weight"]
    embed = pad_rows(embed, Vp)
    head = embed if head is None else pad_rows(head, Vp)
    tied = family == "gpt2" or cfg.get("tie_word_embeddings")
    layers = logical_layers(family, hf, cfg)
    stages = stages or [len(layers) // pp] * pp
    assert sum(stages) == len(layers) and len(stages) == pp
    out = {}
    for p in range(pp):
        for r in range(tp):
            sd = {}
            if p == 0:
                sd["embedding.word_embeddings.weight"] = embed.chunk(tp)[r]
                if family == "gpt2":
                    sd["embedding.position_embeddings.weight"] = hf["transformer.wpe.weight"]
            for local in range(stages[p]):
                for name, (t, rule) in layers[sum(stages[:p]) + local].items():
                    for old, new in NORM_NAMES[impl].items():
                        name = name.replace(old, new) if name.startswith(old) else name
                    sd[f"decoder.layers.{local}.{name}"] = split(t, rule, tp, r)
            if p == pp - 1:
                sd["decoder.final_layernorm.weight"] = hf[final + "weight"]
                if final + "bias" in hf:
                    sd["decoder.final_layernorm.bias"] = hf[final + "bias"]
                if not tied or pp > 1:
                    sd["output_layer.weight"] = head.chunk(tp)[r]
            out[(r, p)] = {k: v.contiguous() for k, v in sd.items()}
    return out


def expected_args(family, hf_dir, tp, pp):
    """Model args Megatron needs to rebuild the model (docs/FORMATS.md §5.2), from config.json."""
    c = hf_config(hf_dir)
    if family == "gpt2":
        H = c["n_embd"]
        return dict(num_layers=c["n_layer"], hidden_size=H, ffn_hidden_size=c.get("n_inner") or 4 * H,
                    num_attention_heads=c["n_head"], kv_channels=H // c["n_head"],
                    max_position_embeddings=c["n_positions"], position_embedding_type="learned_absolute",
                    normalization="LayerNorm", swiglu=False, add_bias_linear=True,
                    untie_embeddings_and_output_weights=False,
                    tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                    padded_vocab_size=padded_vocab(c["vocab_size"], tp),
                    make_vocab_size_divisible_by=DIVISIBLE)
    return dict(num_layers=c["num_hidden_layers"], hidden_size=c["hidden_size"],
                ffn_hidden_size=c["intermediate_size"], num_attention_heads=c["num_attention_heads"],
                num_query_groups=c["num_key_value_heads"], group_query_attention=True,
                kv_channels=c["hidden_size"] // c["num_attention_heads"],
                max_position_embeddings=c["max_position_embeddings"], position_embedding_type="rope",
                rotary_base=transformers.AutoConfig.from_pretrained(hf_dir).rope_parameters["rope_theta"],
                normalization="RMSNorm", norm_epsilon=c["rms_norm_eps"], swiglu=True, add_bias_linear=False,
                add_qkv_bias=family == "qwen2",
                untie_embeddings_and_output_weights=not c.get("tie_word_embeddings", False),
                tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                padded_vocab_size=padded_vocab(c["vocab_size"], tp), make_vocab_size_divisible_by=DIVISIBLE)


def assert_args(args, expected, where):
    diffs = [f"{k}={getattr(args, k, '<absent>')!r} (expected {v!r})" for k, v in expected.items()
             if getattr(args, k, "<absent>") != v and not (isinstance(v, float) and
                                                          getattr(args, k, None) == pytest.approx(v))]
    assert not diffs, f"{where}: args " + ", ".join(diffs)


# --------------------------------------------------------------------------------------------
# 1. round trip HF -> Megatron TPxPP -> HF

@pytest.mark.parametrize("pp", PPS)
@pytest.mark.parametrize("tp", TPS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_round_trip_bit_identical(family, tp, pp, hf_source, tmp_path):
    src = hf_source(family)
    mg = to_megatron(src, tmp_path / "mg", tp, pp, "--verify")
    _, _, ranks = read_megatron(mg)
    assert sorted(ranks) == [(t, p) for t in range(tp) for p in range(pp)]
    back = to_hf(mg, tmp_path / "hf")
    assert_same_tensors(read_hf(back), read_hf(src), f"{family} TP{tp}PP{pp} round trip")
    assert_same_config(family, back, src)
    ids = torch.randint(0, hf_config(src)["vocab_size"], (2, 13), generator=torch.Generator().manual_seed(1))
    a, e = logits(back, ids), source_logits(src, ids)
    assert a.dtype == e.dtype and torch.equal(a, e), \
        f"logits differ: max |diff| {(a.float() - e.float()).abs().max().item()}"


# --------------------------------------------------------------------------------------------
# 2. TP=2 shards equal Megatron's split rules

@pytest.mark.parametrize("pp", PPS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tp2_shards_follow_megatron_rules(family, pp, hf_source, tmp_path):
    src = hf_source(family)
    mg = to_megatron(src, tmp_path / "mg", 2, pp)
    tracker, name, ranks = read_megatron(mg)
    assert (tracker.strip(), name) == ("release", "release")
    expected = expected_megatron(family, src, 2, pp)
    assert sorted(ranks) == sorted(expected)
    want_args = expected_args(family, src, 2, pp)
    dtype = FAMILIES[family]["dtype"]
    for rank, sd in sorted(ranks.items()):
        where = f"{family} TP2PP{pp} rank {rank}"
        assert sd.get("checkpoint_version") == 3.0, f"{where}: checkpoint_version {sd.get('checkpoint_version')!r}"
        assert "iteration" in sd, f"{where}: no 'iteration'"
        assert_args(sd["args"], want_args, where)
        assert getattr(sd["args"], "params_dtype", None) == dtype, f"{where}: params_dtype {getattr(sd['args'], 'params_dtype', None)}"
        assert bool(getattr(sd["args"], "bf16", False)) == (dtype == torch.bfloat16), f"{where}: args.bf16"
        assert bool(getattr(sd["args"], "fp16", False)) is False, f"{where}: args.fp16"
        assert_same_tensors(model_tensors(sd, where), expected[rank], where)


def test_padded_vocab_rows_are_zero(hf_source, tmp_path):
    """Spelled out for one case: V=259 at TP=4 pads to 512 rows, the 253 new rows are zero."""
    mg = to_megatron(hf_source("llama"), tmp_path / "mg", 4, 1)
    _, _, ranks = read_megatron(mg)
    for name in ("embedding.word_embeddings.weight", "output_layer.weight"):
        full = torch.cat([ranks[(r, 0)]["model"][name] for r in range(4)])
        assert full.shape[0] == 512, f"{name}: {full.shape[0]} rows, expected 512"
        assert not full[259:].any(), f"{name}: padded rows are not zero"
        assert full[:259].abs().sum() > 0


# --------------------------------------------------------------------------------------------
# 3. resharding chain == direct conversion

TP_PP_ARGS = {"tensor_model_parallel_size", "pipeline_model_parallel_size", "padded_vocab_size",
              "world_size", "data_parallel_size", "load", "save", "rank", "local_rank"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_reshard_chain_equals_direct(family, hf_source, tmp_path):
    src = hf_source(family)
    direct = to_megatron(src, tmp_path / "direct", 1, 1)
    a = to_megatron(src, tmp_path / "tp2pp2", 2, 2)
    b = to_megatron(a, tmp_path / "tp4pp1", 4, 1, "--verify")
    c = to_megatron(b, tmp_path / "tp1pp1", 1, 1, "--verify")
    _, _, want = read_megatron(direct)
    _, _, got = read_megatron(c)
    assert sorted(got) == [(0, 0)]
    assert_same_tensors(model_tensors(got[(0, 0)], "chain"), model_tensors(want[(0, 0)], "direct"),
                        f"{family} TP2PP2 -> TP4PP1 -> TP1PP1 vs direct TP1PP1")
    assert sorted(got[(0, 0)]["model"]) == sorted(want[(0, 0)]["model"]), "the _extra_state keys differ"
    ga, wa = vars(got[(0, 0)]["args"]), vars(want[(0, 0)]["args"])
    diffs = {k: (ga.get(k, "<absent>"), wa.get(k, "<absent>")) for k in set(ga) | set(wa)
             if k not in TP_PP_ARGS and ga.get(k, "<absent>") != wa.get(k, "<absent>")}
    assert not diffs, f"args of the chain differ from the direct conversion: {diffs}"
    for k in ("padded_vocab_size", "tensor_model_parallel_size", "pipeline_model_parallel_size"):
        assert ga[k] == wa[k], f"args.{k}: {ga[k]} != {wa[k]}"
    # the intermediate checkpoints follow the rules too
    _, _, mid = read_megatron(b)
    exp = expected_megatron(family, src, 4, 1)
    for rank in exp:
        assert_same_tensors(model_tensors(mid[rank], f"TP4 {rank}"), exp[rank], f"{family} TP4PP1 from TP2PP2 rank {rank}")


# --------------------------------------------------------------------------------------------
# 4. --target-dtype

@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_target_dtype_bf16(family, hf_source, tmp_path):
    src = hf_source(family)
    mg = to_megatron(src, tmp_path / "mg", 2, 2, "--target-dtype", "bf16")
    _, _, ranks = read_megatron(mg)
    exp = expected_megatron(family, src, 2, 2)
    for rank, sd in ranks.items():
        assert getattr(sd["args"], "params_dtype", None) == torch.bfloat16
        assert getattr(sd["args"], "bf16", None) is True
        assert_same_tensors(model_tensors(sd, str(rank)), {k: v.to(torch.bfloat16) for k, v in exp[rank].items()},
                            f"{family} bf16 shards {rank}")
    back = to_hf(mg, tmp_path / "hf")
    assert_same_tensors(read_hf(back), {k: v.to(torch.bfloat16) for k, v in read_hf(src).items()},
                        f"{family} bf16 export")
    ids = torch.randint(0, hf_config(src)["vocab_size"], (1, 9))
    assert logits(back, ids).dtype == torch.bfloat16


def test_target_dtype_fp32_from_bf16_is_exact(hf_source, tmp_path):
    src = hf_source("qwen2")
    back = to_hf(to_megatron(src, tmp_path / "mg", 1, 1, "--target-dtype", "fp32"), tmp_path / "hf")
    assert_same_tensors(read_hf(back), {k: v.float() for k, v in read_hf(src).items()}, "qwen2 bf16 -> fp32")


# --------------------------------------------------------------------------------------------
# 5. a checkpoint written by torch.save itself

def torch_written_checkpoint(family, hf_dir, root, tp, pp, impl="local"):
    """Megatron layout of item 2 written with torch.save (PyTorch's pickler, memo and zip writer);
    _extra_state entries are None (local spec) or empty uint8 tensors (TransformerEngine >= 1.0)."""
    exp = expected_megatron(family, hf_dir, tp, pp, impl=impl)
    extra = None if impl == "local" else torch.empty(0, dtype=torch.uint8)
    args = argparse.Namespace(**expected_args(family, hf_dir, tp, pp), transformer_impl=impl,
                              params_dtype=FAMILIES[family]["dtype"], fp16=False,
                              bf16=FAMILIES[family]["dtype"] == torch.bfloat16, vocab_size=None,
                              seq_length=64, virtual_pipeline_model_parallel_size=None,
                              num_layers_per_virtual_pipeline_stage=None, num_experts=None,
                              expert_model_parallel_size=1, ckpt_format="torch", use_dist_ckpt=False,
                              add_position_embedding=family == "gpt2", rotary_percent=1.0,
                              rotary_interleaved=False, apply_layernorm_1p=False, qk_layernorm=False,
                              consumed_train_samples=1234, iteration=7)
    if family == "gpt2":
        args.norm_epsilon = hf_config(hf_dir)["layer_norm_epsilon"]
        args.group_query_attention = False
        args.num_query_groups = 1
        args.add_qkv_bias = False
    root = pathlib.Path(root)
    (root / "iter_0000007").mkdir(parents=True)
    for (r, p), tensors in exp.items():
        # own storages like Megatron's parameters, except the embedding shards: views into the
        # padded table (storage offset > 0 on rank > 0, the storage holds every rank's rows)
        model = {k: v if k.startswith("embedding.word") else v.clone() for k, v in tensors.items()}
        for k in list(tensors):
            if k.endswith(".weight") and ("linear_" in k):
                model[k.rsplit(".", 1)[0] + "._extra_state"] = extra
        d = root / "iter_0000007" / (f"mp_rank_{r:02d}" + (f"_{p:03d}" if pp > 1 else ""))
        d.mkdir()
        torch.save({"args": args, "checkpoint_version": 3.0, "iteration": 7, "model": model,
                    "rng_state": None, "num_floating_point_operations_so_far": 0},
                   d / "model_optim_rng.pt")
    (root / "latest_checkpointed_iteration.txt").write_text("7")
    return root


@pytest.mark.parametrize("family,tp,pp,impl", [("llama", 2, 2, "local"), ("gpt2", 4, 1, "local"),
                                               ("qwen2", 1, 2, "local"), ("llama", 4, 2, "transformer_engine"),
                                               ("gpt2", 2, 2, "transformer_engine")])
def test_export_of_torch_written_checkpoint(family, tp, pp, impl, hf_source, tmp_path):
    src = hf_source(family)
    mg = torch_written_checkpoint(family, src, tmp_path / "mg", tp, pp, impl)
    V = hf_config(src)["vocab_size"]
    back = to_hf(mg, tmp_path / "hf", "--true-vocab-size", V)
    assert_same_tensors(read_hf(back), read_hf(src), f"{family} torch.save-written TP{tp}PP{pp} -> HF")
    ids = torch.randint(0, V, (1, 11))
    assert torch.equal(logits(back, ids), logits(src, ids))


# --------------------------------------------------------------------------------------------
# 6. flags: --iteration, --max-shard-size, --tokenizer-dir, --transformer-impl local

def test_iteration_folder(hf_source, tmp_path):
    mg = to_megatron(hf_source("gpt2"), tmp_path / "mg", 1, 2, "--iteration", "1500")
    tracker, name, ranks = read_megatron(mg)
    assert tracker == "1500", f"tracker holds {tracker!r}"
    assert name == "iter_0001500"
    assert {sd["iteration"] for sd in ranks.values()} == {1500}
    assert sorted(p.name for p in mg.iterdir()) == ["iter_0001500", "latest_checkpointed_iteration.txt"]


def test_local_spec_names(hf_source, tmp_path):
    src = hf_source("qwen2")
    mg = to_megatron(src, tmp_path / "mg", 2, 1, "--transformer-impl", "local")
    _, _, ranks = read_megatron(mg)
    exp = expected_megatron("qwen2", src, 2, 1, impl="local")
    for rank, sd in ranks.items():
        assert_same_tensors(model_tensors(sd, str(rank)), exp[rank], f"local spec {rank}")
    for rank, sd in ranks.items():
        # Megatron's saver records the spec it built the model with (margs.transformer_impl)
        impl = getattr(sd["args"], "transformer_impl", None)
        assert impl == "local", f"rank {rank}: args.transformer_impl = {impl!r}, expected 'local'"


def test_sharded_export_and_tokenizer_files(hf_source, tmp_path):
    src = hf_source("llama")
    tok = tmp_path / "tok"
    tok.mkdir()
    files = {"tokenizer.json": '{"version": "1.0"}\n', "tokenizer_config.json": '{"model_max_length": 64}\n',
             "special_tokens_map.json": "{}\n"}
    for name, text in files.items():
        (tok / name).write_text(text)
    mg = to_megatron(src, tmp_path / "mg", 2, 1)
    back = to_hf(mg, tmp_path / "hf", "--max-shard-size", "40000", "--tokenizer-dir", tok)
    index = json.loads((back / "model.safetensors.index.json").read_text())
    shards = sorted(p.name for p in back.glob("*.safetensors"))
    assert len(shards) > 1 and not (back / "model.safetensors").exists(), shards
    assert shards == [f"model-{i:05d}-of-{len(shards):05d}.safetensors" for i in range(1, len(shards) + 1)]
    assert set(index["weight_map"].values()) == set(shards)
    source = read_hf(src)
    assert index["metadata"]["total_size"] == sum(t.numel() * t.element_size() for t in source.values())
    for s in shards:
        part = load_file(back / s)
        size = sum(t.numel() * t.element_size() for t in part.values())
        assert size <= 40000 or len(part) == 1, f"{s} holds {size} bytes in {len(part)} tensors"
    assert_same_tensors(read_hf(back), source, "sharded export")
    for name, text in files.items():
        assert (back / name).read_text() == text, f"{name} not copied"
    ids = torch.randint(0, 259, (1, 7))
    assert torch.equal(logits(back, ids), logits(src, ids))
    # the sharded export is a valid source in turn
    again = to_megatron(back, tmp_path / "again", 2, 2)
    _, _, ranks = read_megatron(again)
    exp = expected_megatron("llama", src, 2, 2)
    for rank, sd in ranks.items():
        assert_same_tensors(model_tensors(sd, str(rank)), exp[rank], f"import of the sharded export, rank {rank}")


def test_make_vocab_size_divisible_by(hf_source, tmp_path):
    """K=1 at TP=2: V=259 pads to 260 (a multiple of K*TP), one zero row."""
    src = hf_source("llama")
    mg = to_megatron(src, tmp_path / "mg", 2, 1, "--make-vocab-size-divisible-by", "1")
    _, _, ranks = read_megatron(mg)
    exp = expected_megatron("llama", src, 2, 1, divisible=1)
    for rank, sd in ranks.items():
        assert sd["args"].padded_vocab_size == 260 and sd["args"].make_vocab_size_divisible_by == 1
        assert_same_tensors(model_tensors(sd, str(rank)), exp[rank], f"divisible by 1, rank {rank}")
    assert_same_tensors(read_hf(to_hf(mg, tmp_path / "hf")), read_hf(src), "divisible by 1, export")


def test_uneven_pipeline_stages(hf_source, tmp_path):
    """--decoder-first-pipeline-num-layers 1 with 4 layers on PP=2: stages hold 1 and 3 layers
    (Megatron's uneven rule), recorded in args; the export is the source again."""
    src = hf_source("qwen2")
    mg = to_megatron(src, tmp_path / "mg", 2, 2, "--decoder-first-pipeline-num-layers", "1")
    _, _, ranks = read_megatron(mg)
    exp = expected_megatron("qwen2", src, 2, 2, stages=[1, 3])
    for rank, sd in ranks.items():
        assert sd["args"].decoder_first_pipeline_num_layers == 1, rank
        assert_same_tensors(model_tensors(sd, str(rank)), exp[rank], f"uneven stages, rank {rank}")
    even = to_megatron(mg, tmp_path / "even", 1, 2, "--verify")
    _, _, ranks = read_megatron(even)
    exp = expected_megatron("qwen2", src, 1, 2)
    for rank, sd in ranks.items():
        assert_same_tensors(model_tensors(sd, str(rank)), exp[rank], f"uneven -> even, rank {rank}")
    assert_same_tensors(read_hf(to_hf(mg, tmp_path / "hf")), read_hf(src), "uneven stages, export")


def test_optimizer_state_is_refused_or_dropped(hf_source, tmp_path):
    """A checkpoint with optimizer state in megatron-core's nested form ({'optimizer':
    {'state', 'param_groups'}}): refused as unsupported (exit 2, the message names the
    flag, no output) unless --drop-optimizer-state, which converts the model without it."""
    src = hf_source("llama")
    mg = torch_written_checkpoint("llama", src, tmp_path / "mg", 2, 1)
    for f in mg.glob("iter_*/mp_rank_*/model_optim_rng.pt"):
        sd = torch_load(f)
        params = [v for v in sd["model"].values() if isinstance(v, torch.Tensor)]
        sd["optimizer"] = {"optimizer": {"state": {i: {"exp_avg": torch.zeros_like(p), "exp_avg_sq": torch.ones_like(p),
                                                      "step": torch.tensor(7.0)} for i, p in enumerate(params)},
                                         "param_groups": [{"lr": 1e-4, "params": list(range(len(params)))}]}}
        sd["opt_param_scheduler"] = {"max_lr": 1e-4, "num_steps": 7}
        torch.save(sd, f)
    out = tmp_path / "out"
    p = mg_convert("--load-dir", mg, "--save-dir", out, "--target-tensor-parallel-size", 1, check=False)
    assert p.returncode == 2, f"exit {p.returncode}, expected 2 (unsupported); stderr: {p.stderr}"
    assert p.stderr.startswith("mg-convert: not supported yet: ") and "optimizer" in p.stderr \
        and "--drop-optimizer-state" in p.stderr, p.stderr
    assert not out.exists(), f"{out} left behind after a refusal"
    p = mg_convert("--load-dir", mg, "--save-dir", out, "--target-tensor-parallel-size", 1,
                   "--drop-optimizer-state", "--true-vocab-size", 259)
    # --quiet still names the training state a resumed run would miss, not the dropped optimizer
    # state (asked for) nor the _extra_state metadata
    notes = p.stderr.splitlines()
    assert sorted(n.split(": ", 2)[2].split(" ")[0] for n in notes) == ["opt_param_scheduler", "rng_state"], notes
    assert all(n.startswith("mg-convert: not converted (intentionally): ") and "training state" in n
               for n in notes), notes
    _, _, ranks = read_megatron(out)
    assert "optimizer" not in ranks[(0, 0)]
    # the source is local-spec: the output keeps its naming (no --transformer-impl)
    assert_same_tensors(model_tensors(ranks[(0, 0)], "dropped"),
                        expected_megatron("llama", src, 1, 1, impl="local")[(0, 0)],
                        "model after --drop-optimizer-state")


def test_tensors_larger_than_a_write_chunk(tmp_path):
    """Tensors of several 8 MiB write chunks whose rows straddle the chunk boundaries (the
    .pt writer asks for 8 MiB pieces; rows of 448 bytes do not divide them), gathered by
    several threads (--workers 3, one output file): the shards equal the HF rows, zero
    padding included, and the round trip to HF is bit-identical."""
    V, H = 37003, 112
    cfg = transformers.LlamaConfig(vocab_size=V, hidden_size=H, intermediate_size=96, num_hidden_layers=1,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                                   tie_word_embeddings=False)
    gen = torch.Generator().manual_seed(7)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    src = tmp_path / "hf"
    model.save_pretrained(src)
    source = read_hf(src)
    for tp in (1, 2):
        mg = to_megatron(src, tmp_path / f"tp{tp}", tp, 1, "--workers", 3)
        _, _, ranks = read_megatron(mg)
        emb = source["model.embed_tokens.weight"]
        padded = torch.cat([emb, torch.zeros(-V % (DIVISIBLE * tp), H)])
        for r in range(tp):
            got = ranks[(r, 0)]["model"]["embedding.word_embeddings.weight"]
            assert torch.equal(got, padded.chunk(tp)[r]), f"TP{tp} rank {r}: embedding shard differs"
        back = to_hf(mg, tmp_path / f"back{tp}", "--workers", 3)
        assert_same_tensors(read_hf(back), source, f"TP{tp} round trip of 8 MiB+ tensors")


def test_quiet_and_summary(hf_source, tmp_path):
    """--quiet: nothing on stderr when only routine entries (_extra_state) are dropped; without
    it, the dropped entries and the summary (singular "1 file") are listed."""
    mg = to_megatron(hf_source("gpt2"), tmp_path / "mg", 2, 1)
    p = mg_convert("--load-dir", mg, "--save-dir", tmp_path / "q", "--target-tensor-parallel-size", 1)
    assert p.stderr == "", p.stderr
    exe = bin_dir_path() / "mg-convert"
    p = run_mg([str(exe), "--load-dir", mg, "--save-dir", tmp_path / "loud", "--target-tensor-parallel-size", 1])
    notes = p.stderr.splitlines()
    assert any(n.startswith("mg-convert: not converted (intentionally): ") and "_extra_state" in n
               for n in notes), notes
    assert re.fullmatch(r"mg-convert: wrote \d+ tensors in 1 file, [0-9.]+ MB, in [0-9.]+ s", notes[-1]), notes


@pytest.mark.parametrize("case", ["missing", "truncated"])
def test_bad_input_leaves_nothing(case, hf_source, tmp_path):
    """A missing or truncated shard of a Megatron source: exit 1, an error naming the file, no output."""
    src = hf_source("gpt2")
    mg = to_megatron(src, tmp_path / "mg", 2, 2)
    victim = mg / "release" / "mp_rank_01_001" / "model_optim_rng.pt"
    if case == "missing":
        victim.unlink()
    else:
        victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 3])
    out = tmp_path / "out"
    p = mg_convert("--load-dir", mg, "--save-dir", out, "--saver", "hf", check=False)
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr}"
    assert p.stderr.startswith("mg-convert: error: ") and "mp_rank_01_001" in p.stderr, p.stderr
    assert not out.exists() and sorted(x.name for x in tmp_path.iterdir()) == ["mg"], list(tmp_path.iterdir())


# --------------------------------------------------------------------------------------------
# large pieces: rows that lie back to back in an input file are copied file to file

def large_llama(seed):
    """A Llama (hidden 512, vocab 1024, one layer, GQA) whose tensors are 1-4 MiB in fp32,
    random weights from seed."""
    config = transformers.LlamaConfig(
        vocab_size=1024, hidden_size=512, intermediate_size=1024, num_hidden_layers=1,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    gen = torch.Generator().manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    return model


def test_large_contiguous_tensors_copied_exactly(tmp_path):
    """Tensors of 1-4 MiB (fp32 Llama, hidden 512, vocab 1024): at TP1 whole tensors and at TP2
    whole shards (vocab halves, gate/up halves) are contiguous ranges of the input, which
    mg-convert copies file to file; the shards equal Megatron's split rules and the round
    trip gives the source bytes back."""
    model = large_llama(7)
    src = tmp_path / "src"
    model.to(torch.float32).save_pretrained(src)
    assert read_hf(src)["model.embed_tokens.weight"].nbytes == 2 << 20
    for tp in (1, 2):
        mg = to_megatron(src, tmp_path / f"mg{tp}", tp, 1)
        _, _, ranks = read_megatron(mg)
        expected = expected_megatron("llama", src, tp, 1)
        assert sorted(ranks) == sorted(expected)
        for rank, sd in sorted(ranks.items()):
            assert_same_tensors(model_tensors(sd, f"TP{tp} rank {rank}"), expected[rank],
                                f"TP{tp} rank {rank}")
        back = to_hf(mg, tmp_path / f"hf{tp}")
        assert_same_tensors(read_hf(back), read_hf(src), f"TP{tp} round trip")
