"""mg-train checkpoints (--save / --load): the Megatron `torch` layout that torch.load
(weights_only) opens, the export through mg-convert to Hugging Face and transformers' logits
against mg-train's model on the same weights, bit-identical resumption (a run stopped with
--exit-interval and resumed with --load logs the same losses as the uninterrupted run),
--no-load-optim (a new optimizer and learning-rate schedule, the iteration continuing),
--finetune, and refusal of a mismatching checkpoint.

Tiny models on random documents; OMP_NUM_THREADS=1 (results, not speed).
"""
import argparse
import json
import shutil

import numpy
import pytest
import torch

import conftest
from test_train_run import ARCHS, _write_docs

ENV = {"OMP_NUM_THREADS": "1"}
V = 1000  # NullTokenizer-style ids 1..999 (test_train_run._write_docs)
TRACKER = "latest_checkpointed_iteration.txt"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("train_ckpt")
    return _write_docs(d / "docs_text_document", 300, 21, numpy.int32)


def _args(data, arch="gpt2", iters=6, hidden=32, extra=()):
    return ["mg-train", "--num-layers", 2, "--hidden-size", hidden, "--num-attention-heads", 2,
            "--seq-length", 16, "--max-position-embeddings", 16, "--micro-batch-size", 2,
            "--global-batch-size", 4, "--train-iters", iters, "--lr", "1e-2", "--min-lr", "1e-4",
            "--lr-decay-style", "cosine", "--lr-warmup-iters", 2, "--vocab-size", V,
            "--data-path", data, "--split", "95,5,0", "--log-interval", 1,
            "--eval-iters", 0, *ARCHS[arch], *extra]


def _run(args, metrics, check=True):
    p = conftest.run_mg(args + ["--log-file", metrics], env=ENV, check=check)
    if not check:
        return p
    return [(r["iteration"], r["loss"]) for r in map(json.loads, open(metrics))
            if r["kind"] == "train"]


def _torch_load(path):
    torch.serialization.add_safe_globals([argparse.Namespace])
    return torch.load(path, weights_only=True)


def _ckpt_file(d, it):
    return d / f"iter_{it:07d}" / "mp_rank_00" / "model_optim_rng.pt"


def test_save_layout_and_contents(data, tmp_path):
    ck = tmp_path / "ck"
    _run(_args(data, extra=["--save", ck, "--save-interval", 4]), tmp_path / "m.jsonl")
    # interval 4 and the end of training (6); the tracker names the last one
    assert sorted(p.name for p in ck.iterdir()) == ["iter_0000004", "iter_0000006", TRACKER]
    assert (ck / TRACKER).read_text() == "6"
    d = _torch_load(_ckpt_file(ck, 6))
    assert d["checkpoint_version"] == 3.0 and d["iteration"] == 6
    a = d["args"]
    assert (a.num_layers, a.hidden_size, a.num_attention_heads) == (2, 32, 2)
    assert a.consumed_train_samples == 24 and a.padded_vocab_size == 1024
    model = d["model"]
    assert model["embedding.word_embeddings.weight"].shape == (1024, 32)
    assert model["embedding.word_embeddings.weight"].dtype == torch.float32
    # the padding rows are parameters like the others, as Megatron's: every one drawn at
    # initialisation (none zero) and trained (the loss runs over all 1024 columns)
    pad = model["embedding.word_embeddings.weight"][V:]
    assert bool((pad.abs().sum(dim=1) > 0).all())
    assert "decoder.layers.1.self_attention.linear_qkv.weight" in model
    opt = d["optimizer"]
    n = len(model)
    groups = opt["param_groups"]
    assert sorted(i for g in groups for i in g["params"]) == list(range(n))
    assert groups[1]["weight_decay"] == 0.0 and groups[0]["weight_decay"] == 0.01
    assert all(float(opt["state"][i]["step"]) == 6 for i in range(n))
    # the moments have the shapes of their parameters (decay group = the 2-D weights)
    shapes = sorted(tuple(t.shape) for t in model.values())
    assert sorted(tuple(opt["state"][i]["exp_avg"].shape) for i in range(n)) == shapes
    assert all(opt["state"][i]["exp_avg"].dim() == 2 for i in groups[0]["params"])
    assert d["opt_param_scheduler"]["num_steps"] == 24
    assert d["num_floating_point_operations_so_far"] > 0
    # iteration 4 differs from 6 (it was really written at 4)
    d4 = _torch_load(_ckpt_file(ck, 4))
    assert d4["iteration"] == 4 and float(d4["optimizer"]["state"][0]["step"]) == 4
    assert not torch.equal(d4["model"]["decoder.final_layernorm.weight"],
                           model["decoder.final_layernorm.weight"])
    assert not torch.equal(d4["model"]["embedding.word_embeddings.weight"][V:], pad)
    assert not list(ck.glob("*.tmp.*")) and not list(ck.glob("*.old.*"))


def assert_hf_export_matches(ck, it, hf, args, vocab, seq, tmp_path):
    """mg-convert exports checkpoint ck (iteration it) to Hugging Face in hf: its word
    embeddings are the checkpoint's true-vocabulary rows, and transformers' logits on random
    ids equal mg-train's model (tests/tools/model_probe, the flags args) on the exported
    weights. Returns the checkpoint's model dict."""
    import safetensors.torch as st
    import transformers
    conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", hf, "--saver", "hf",
                     "--true-vocab-size", vocab, "--drop-optimizer-state", "--quiet"])
    saved = _torch_load(_ckpt_file(ck, it))["model"]
    exported = st.load_file(str(hf / "model.safetensors"))
    emb = [v for k, v in exported.items() if k.endswith("embed_tokens.weight") or
           k.endswith("wte.weight")]
    assert len(emb) == 1 and torch.equal(emb[0],
                                         saved["embedding.word_embeddings.weight"][:vocab])
    model = transformers.AutoModelForCausalLM.from_pretrained(str(hf), dtype=torch.float32)
    rng = numpy.random.default_rng(5)
    ids = rng.integers(0, vocab, size=(2, seq)).astype(numpy.int32)
    tgt = numpy.roll(ids, -1, axis=1).astype(numpy.int32)
    st.save_file({"ids": torch.tensor(ids), "targets": torch.tensor(tgt)},
                 str(tmp_path / "input.safetensors"))
    conftest.run_mg(["model_probe", "ref", "default", hf / "model.safetensors",
                     tmp_path / "input.safetensors", tmp_path] + args[1:], env=ENV)
    ours = st.load_file(str(tmp_path / "out.safetensors"))["logits"].double()
    with torch.no_grad():
        ref = model(input_ids=torch.tensor(ids, dtype=torch.long)).logits.double()
    ref = ref[..., :vocab]
    assert ours.shape == ref.shape
    err = float((ours - ref).abs().max())
    assert err <= 1e-4 * float(ref.abs().max()) + 1e-5, err
    return saved


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_export_to_hf_matches_our_model(data, arch, tmp_path):
    ck, hf = tmp_path / "ck", tmp_path / "hf"
    args = _args(data, arch, extra=["--save", ck, "--save-interval", 100])
    _run(args, tmp_path / "m.jsonl")
    saved = assert_hf_export_matches(ck, 6, hf, args, V, 16, tmp_path)
    # and back: HF -> mg-convert (a 'release' checkpoint) -> mg-train --load: the same
    # weights as our own checkpoint except the padding rows (HF has none: they come back
    # zero), so fine-tuning from both with the padding out of the loss (--mask-vocab-padding)
    # logs the same losses
    back = tmp_path / "back"
    conftest.run_mg(["mg-convert", "--load-dir", hf, "--save-dir", back, "--quiet"])
    assert (back / TRACKER).read_text() == "release"
    back_emb = _torch_load(back / "release" / "mp_rank_00" / "model_optim_rng.pt")["model"][
        "embedding.word_embeddings.weight"]
    assert torch.equal(back_emb[:V], saved["embedding.word_embeddings.weight"][:V])
    assert not back_emb[V:].any()
    short = _args(data, arch, iters=3, extra=["--mask-vocab-padding"])
    a = _run(short + ["--load", back], tmp_path / "a.jsonl")  # release: like --finetune
    assert a == _run(short + ["--load", ck, "--finetune"], tmp_path / "b.jsonl")
    assert [i for i, _ in a] == [1, 2, 3]
    # a bf16 checkpoint loads (rounded weights: close to, not equal to, the fp32 losses)
    bf = tmp_path / "bf16"
    conftest.run_mg(["mg-convert", "--load-dir", hf, "--save-dir", bf, "--target-dtype",
                     "bf16", "--quiet"])
    c = _run(short + ["--load", bf], tmp_path / "c.jsonl")
    assert c != a and all(abs(x[1] - y[1]) < 0.05 for x, y in zip(a, c))


def test_resume_is_bit_identical(data, tmp_path):
    full = _run(_args(data, iters=8), tmp_path / "full.jsonl")
    ck = tmp_path / "ck"
    first = _run(_args(data, iters=8, extra=["--save", ck, "--save-interval", 100,
                                             "--exit-interval", 3]), tmp_path / "a.jsonl")
    assert [i for i, _ in first] == [1, 2, 3] and (ck / TRACKER).read_text() == "3"
    rest = _run(_args(data, iters=8, extra=["--load", ck, "--save", ck, "--save-interval",
                                            100]), tmp_path / "b.jsonl")
    assert first + rest == full  # exact floats
    assert (ck / TRACKER).read_text() == "8"
    # no optimizer: the same model at iteration 4 (same loss), then another trajectory
    no_opt = _run(_args(data, iters=8, extra=["--load", _stage(ck, tmp_path, 3),
                                              "--no-load-optim"]), tmp_path / "c.jsonl")
    assert [i for i, _ in no_opt] == list(range(4, 9))
    assert no_opt[0] == full[3] and no_opt[1:] != full[4:]
    # nor the scheduler (Megatron loads opt_param_scheduler with the optimizer only): the
    # learning rates start again from the schedule's first step
    assert _lrs(tmp_path / "c.jsonl") == _lrs(tmp_path / "full.jsonl")[:5]
    # --no-load-rng: there is no RNG state; the same as a plain resume
    rng = _run(_args(data, iters=8, extra=["--load", _stage(ck, tmp_path, 3), "--no-load-rng"]),
               tmp_path / "d.jsonl")
    assert rng == full[3:]


def _lrs(metrics):
    return [r["lr"] for r in map(json.loads, open(metrics)) if r["kind"] == "train"]


def _stage(ck, tmp_path, it):
    """A copy of ck whose tracker points at iteration it."""
    d = tmp_path / f"stage{it}"
    if not d.exists():
        shutil.copytree(ck, d)
        (d / TRACKER).write_text(str(it))
    return d


def test_finetune_restarts_iterations(data, tmp_path):
    ck = tmp_path / "ck"
    fresh = _run(_args(data, iters=4), tmp_path / "fresh.jsonl")
    _run(_args(data, iters=4, extra=["--save", ck, "--save-interval", 100]),
         tmp_path / "a.jsonl")
    ft = _run(_args(data, iters=4, extra=["--load", ck, "--finetune"]), tmp_path / "b.jsonl")
    assert [i for i, _ in ft] == [1, 2, 3, 4]
    assert ft[0][1] < fresh[0][1]  # the trained weights, on the first batch again


def test_mismatching_checkpoint_is_refused(data, tmp_path):
    ck = tmp_path / "ck"
    _run(_args(data, iters=3, extra=["--save", ck, "--save-interval", 100]),
         tmp_path / "a.jsonl")
    # a model flag that contradicts the checkpoint's args: named as that flag, before any
    # dataset is built (ckpt_preflight.h), not as a tensor shape
    p = _run(_args(data, iters=4, hidden=64, extra=["--load", ck]), tmp_path / "b.jsonl",
             check=False)
    assert p.returncode == 2, p.stderr
    assert "checkpoint: hidden_size 32, --hidden-size 64" in p.stderr, p.stderr
    assert "building datasets" not in p.stderr, p.stderr
    # the same tensor shapes with 4 heads instead of 2
    heads = _args(data, iters=4, extra=["--load", ck])
    heads[heads.index("--num-attention-heads") + 1] = 4
    p = _run(heads, tmp_path / "h.jsonl", check=False)
    assert p.returncode == 2, p.stderr
    assert "checkpoint: num_attention_heads 2, --num-attention-heads 4" in p.stderr, p.stderr
    # resuming with another global batch size (Megatron continues from the consumed samples;
    # mg-train's data position is iteration x batch): refused, not silently shifted
    gbs = _args(data, iters=8, extra=["--load", ck, "--override-opt_param-scheduler"])
    gbs[gbs.index("--global-batch-size") + 1] = 8
    p = _run(gbs, tmp_path / "g.jsonl", check=False)
    assert p.returncode == 2 and "not supported yet: resuming" in p.stderr, p.stderr
    # a tensor removed from the file
    d = _torch_load(_ckpt_file(ck, 3))
    del d["model"]["decoder.layers.1.mlp.linear_fc2.weight"]
    torch.save(d, _ckpt_file(ck, 3))
    resume = ["--load", ck, "--override-opt_param-scheduler"]  # 4 iterations, not 3
    p = _run(_args(data, iters=4, extra=resume), tmp_path / "c.jsonl", check=False)
    assert p.returncode == 1, p.stderr
    assert "'decoder.layers.1.mlp.linear_fc2.weight' is missing" in p.stderr, p.stderr
    # a tensor this model does not have
    d["model"]["decoder.layers.1.mlp.linear_fc2.weight"] = torch.zeros(32, 128)
    d["model"]["decoder.layers.2.mlp.linear_fc2.weight"] = torch.zeros(32, 128)
    torch.save(d, _ckpt_file(ck, 3))
    p = _run(_args(data, iters=4, extra=resume), tmp_path / "e.jsonl", check=False)
    assert p.returncode == 1, p.stderr
    assert "'decoder.layers.2.mlp.linear_fc2.weight' is not a parameter" in p.stderr, p.stderr
    # no checkpoint at all
    p = _run(_args(data, iters=4, extra=["--load", tmp_path / "none"]), tmp_path / "f.jsonl",
             check=False)
    assert p.returncode == 1 and "no such folder" in p.stderr, p.stderr
