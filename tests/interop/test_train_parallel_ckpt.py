"""mg-train checkpoints at TP=2 x PP=2: every rank writes its own Megatron `torch`-format
file iter_%07d/mp_rank_TT_PPP/model_optim_rng.pt (its shards under stage-local Megatron-Core
names, the fused QKV and SwiGLU fc1 rows as Megatron shards them, the last stage's copy of
the tied embeddings as output_layer.weight, equal to the first stage's), a run stopped at
iteration 10 and resumed from its own checkpoint logs exactly (bit for bit) the losses,
grad norms and validation losses of the uninterrupted run, and mg-convert reads the
checkpoint, reshards it to TP=1 PP=1 with --verify, giving the single-process run's
weights at the same iteration (up to the reduction-order differences of
test_train_parallel.py), and exports it straight to Hugging Face with the single-process
export's tensors and transformers' logits equal to mg-train's model on them. Models, data
and processes as test_train_parallel.py.
"""
import pytest
import torch

import conftest
from test_train_ckpt import _torch_load
from test_train_parallel import V, data, model_args, run_train  # noqa: F401
from test_train_run import ARCHS

TP2PP2 = ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2]
TIMING = ("elapsed_ms", "tokens_per_s", "tflops", "mfu")


def stripped(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def full_and_stopped(arch, data, d, flags):  # noqa: F811
    """The uninterrupted 4-rank run of the layout flags, and the same run saved to d / "ck" and
    stopped at iteration 10: (full records, first part's records)."""
    full, _ = run_train(4, model_args(data, arch, flags), d / "full.jsonl")
    stop = ["--save", d / "ck", "--save-interval", 10, "--exit-interval", 10]
    first, _ = run_train(4, model_args(data, arch, flags + stop), d / "a.jsonl")
    return full, first


@pytest.fixture(scope="module", params=sorted(ARCHS))
def runs(request, data, tmp_path_factory):  # noqa: F811
    """(arch, work dir, uninterrupted records, stopped-at-10 records, resumed records)."""
    arch = request.param
    d = tmp_path_factory.mktemp(f"pckpt_{arch}")
    full, first = full_and_stopped(arch, data, d, TP2PP2)
    second, err = run_train(4, model_args(data, arch, TP2PP2 + ["--load", d / "ck"]),
                            d / "b.jsonl")
    assert "loaded" in err and "at iteration 10" in err, err
    single = ["--save", d / "ck1", "--save-interval", 10, "--exit-interval", 10]
    run_train(1, model_args(data, arch, single), d / "s.jsonl")
    return arch, d, full, first, second


def test_resume_is_bit_exact(runs):
    _, _, full, first, second = runs
    assert [r["iteration"] for r in first if r["kind"] == "train"] == list(range(1, 11))
    assert [r["iteration"] for r in second if r["kind"] == "train"] == list(range(11, 21))
    assert stripped(first + second) == stripped(full)


def rank_file(ck, tp, pp, it=10):
    return ck / f"iter_{it:07d}" / f"mp_rank_{tp:02d}_{pp:03d}" / "model_optim_rng.pt"


def test_rank_files(runs):
    arch, d, _, _, _ = runs
    ck = d / "ck"
    assert sorted(p.name for p in (ck / "iter_0000010").iterdir()) == \
        ["mp_rank_00_000", "mp_rank_00_001", "mp_rank_01_000", "mp_rank_01_001"]
    sd = {(t, p): _torch_load(rank_file(ck, t, p)) for t in range(2) for p in range(2)}
    for (t, p), s in sd.items():
        a = s["args"]
        assert (a.tensor_model_parallel_size, a.pipeline_model_parallel_size) == (2, 2)
        assert a.padded_vocab_size == 1024 and s["iteration"] == 10
        m = s["model"]
        layers = {k.split(".")[2] for k in m if k.startswith("decoder.layers.")}
        assert layers == {"0", "1", "2"}, (t, p, layers)  # 6 layers, 3 per stage, local names
        assert ("embedding.word_embeddings.weight" in m) == (p == 0)
        assert ("decoder.final_layernorm.weight" in m) == (p == 1)
        assert ("output_layer.weight" in m) == (p == 1)
        if p == 0:
            assert m["embedding.word_embeddings.weight"].shape == (512, 32)
        qkv = m["decoder.layers.0.self_attention.linear_qkv.weight"]
        groups = 2 if arch == "llama" else 4  # query groups; 4 heads of 8
        assert qkv.shape == ((4 + 2 * groups) * 8 // 2, 32)
        n = len(m)
        opt = s["optimizer"]
        assert sorted(i for g in opt["param_groups"] for i in g["params"]) == list(range(n))
    if arch == "gpt2":  # the tied copy equals the embedding shard of the same TP rank
        for t in range(2):
            assert torch.equal(sd[(t, 1)]["model"]["output_layer.weight"],
                               sd[(t, 0)]["model"]["embedding.word_embeddings.weight"])


def test_mg_convert_reads_and_verifies(runs, tmp_path):
    arch, d, _, _, _ = runs
    out = tmp_path / "tp1"
    p = conftest.run_mg(["mg-convert", "--load-dir", d / "ck", "--save-dir", out, "--verify",
                         "--drop-optimizer-state", "--true-vocab-size", V])
    assert "identical to the source" in p.stdout + p.stderr
    mine = _torch_load(out / "release" / "mp_rank_00" / "model_optim_rng.pt")["model"]
    ref = _torch_load(d / "ck1" / "iter_0000010" / "mp_rank_00" / "model_optim_rng.pt")["model"]
    tensors = {k: v for k, v in mine.items() if isinstance(v, torch.Tensor) and v.numel()}
    assert set(tensors) == {k for k, v in ref.items() if isinstance(v, torch.Tensor)}
    for k, v in tensors.items():
        torch.testing.assert_close(v, ref[k], rtol=1e-4, atol=1e-6, msg=f"{arch} {k}")


def test_hf_export_gives_our_logits(runs, tmp_path):
    """The TP=2 x PP=2 checkpoint straight to Hugging Face: every exported tensor is the
    single-process run's export at the same iteration (up to the reduction order), and
    transformers' logits on random ids equal mg-train's model (tests/tools/model_probe) on the
    exported weights within fp32 tolerance."""
    import safetensors.torch as st
    arch, d, _, _, _ = runs
    hf = tmp_path / "hf"
    conftest.run_mg(["mg-convert", "--load-dir", d / "ck", "--save-dir", hf, "--saver", "hf",
                     "--true-vocab-size", V, "--drop-optimizer-state", "--quiet"])
    conftest.run_mg(["mg-convert", "--load-dir", d / "ck1", "--save-dir", tmp_path / "hf1",
                     "--saver", "hf", "--true-vocab-size", V, "--drop-optimizer-state",
                     "--quiet"])
    exported = st.load_file(str(hf / "model.safetensors"))
    single = st.load_file(str(tmp_path / "hf1" / "model.safetensors"))
    assert set(exported) == set(single)
    for k, v in exported.items():
        torch.testing.assert_close(v, single[k], rtol=1e-4, atol=1e-6, msg=f"{arch} {k}")
    assert_probe_logits(arch, hf, tmp_path)


def assert_probe_logits(arch, hf, tmp_path):
    """transformers' logits on random ids of the Hugging Face model in hf equal mg-train's
    model (tests/tools/model_probe, model_args' flags) on its weights within fp32 tolerance."""
    import numpy
    import safetensors.torch as st
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained(str(hf), dtype=torch.float32)
    ids = numpy.random.default_rng(7).integers(0, V, size=(2, 16)).astype(numpy.int32)
    tgt = numpy.roll(ids, -1, axis=1).astype(numpy.int32)
    st.save_file({"ids": torch.tensor(ids), "targets": torch.tensor(tgt)},
                 str(tmp_path / "input.safetensors"))
    conftest.run_mg(["model_probe", "ref", "default", hf / "model.safetensors",
                     tmp_path / "input.safetensors", tmp_path] + model_args("unused", arch),
                    env={"OMP_NUM_THREADS": "1"})
    ours = st.load_file(str(tmp_path / "out.safetensors"))["logits"].double()
    with torch.no_grad():
        ref = model(input_ids=torch.tensor(ids, dtype=torch.long)).logits.double()[..., :V]
    assert ours.shape == ref.shape
    err = float((ours - ref).abs().max())
    assert err <= 1e-4 * float(ref.abs().max()) + 1e-5, f"{arch}: {err}"
