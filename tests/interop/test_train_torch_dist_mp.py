"""mg-train --ckpt-format torch_dist at TP 2 x PP 2 (4 ranks under mpirun, CPU):
every model-parallel rank writes its shards (__R_0..2.distcp: R = pp_rank * 2 + tp_rank)
under the tensors' global shapes and layer numbers, rank 0 the .metadata, common.pt and
metadata.json once.

- megatron-core's dist_checkpointing.load (mcore_torch_dist.py, its loader resharding to its
  own TP 1 x PP 1 model) gives exactly the tensors of mg-train's `torch`-format checkpoint of
  the same run, resharded to TP 1 by mg-convert;
- mg-train resumes from it at TP 2 x PP 2 with the uninterrupted run's losses and grad norms
  bit for bit;
- PyTorch's DCP reader (dcp_to_torch_save) finds every AdamW moment and weight at its global
  place, equal to that resharded torch checkpoint's (its optimizer state in Megatron's order);
- mg-convert --inspect reads it, and exports it to Hugging Face with --verify.

A tiny Llama (SwiGLU's two-box fc1 shards, GQA, untied) and a tiny GPT-2 (biases: split
and replicated; tied embeddings: the last stage's copy not written); mock data,
OMP_NUM_THREADS=1. Four 4-rank runs per model; and at TP 2 x DP 2 with the distributed
optimizer (three runs) the data-parallel replicas write nothing and the resume is bit for bit.
"""
import json
import re

import pytest
import torch
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

import conftest
from mpi_launch import run_mpi
from test_convert import assert_same_tensors
from test_convert_torch_dist import run_helper
from test_train_mcore_tp import optimizer_order
from test_train_torch_dist import te_name

MODELS = {
    "gpt2": ["--num-layers", "4", "--hidden-size", "32", "--num-attention-heads", "4"],
    "llama": ["--num-layers", "4", "--hidden-size", "32", "--num-attention-heads", "4",
              "--group-query-attention", "--num-query-groups", "2", "--swiglu",
              "--normalization", "RMSNorm", "--position-embedding-type", "rope",
              "--untie-embeddings-and-output-weights", "--disable-bias-linear"],
}
COMMON = ["--lr", "3e-3", "--min-lr", "3e-4", "--lr-decay-style", "cosine",
          "--lr-warmup-iters", "2", "--weight-decay", "0.1", "--clip-grad", "1.0",
          "--seq-length", "16", "--max-position-embeddings", "16", "--micro-batch-size", "2",
          "--global-batch-size", "4", "--eval-iters", "0", "--tokenizer-type", "NullTokenizer",
          "--vocab-size", "1001", "--mock-data", "--log-interval", "1", "--train-iters", "6"]
TP2PP2 = ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"]
# TP 2 x DP 2 with the distributed optimizer: the moments gathered per model shard
TP2DP2 = ["--tensor-model-parallel-size", "2", "--use-distributed-optimizer"]
DIST = ["--ckpt-format", "torch_dist"]


def _train(arch, log, extra=(), layout=TP2PP2):
    run_mpi(4, "mg-train", [*MODELS[arch], *COMMON, *layout, "--log-file", log, *extra])
    return [(r["iteration"], r["loss"], r["grad_norm"]) for r in map(json.loads, open(log))
            if r["kind"] == "train"]


SAVE3 = ["--save-interval", "100", "--exit-interval", "3"]


@pytest.fixture(scope="module", params=sorted(MODELS))
def runs(request, tmp_path_factory):
    arch, tmp = request.param, tmp_path_factory.mktemp(f"tdmp-{request.param}")
    r = {"arch": arch, "tmp": tmp, "dist": tmp / "dist", "torch": tmp / "torch"}
    r["full"] = _train(arch, tmp / "full.jsonl")
    r["first"] = _train(arch, tmp / "a.jsonl", ["--save", r["dist"], *SAVE3, *DIST])
    r["rest"] = _train(arch, tmp / "b.jsonl", ["--load", r["dist"]])
    _train(arch, tmp / "t.jsonl", ["--save", r["torch"], *SAVE3])
    conftest.run_mg(["mg-convert", "--load-dir", r["torch"], "--save-dir", tmp / "torch-tp1",
                     "--target-tensor-parallel-size", "1", "--target-pipeline-parallel-size", "1"])
    r["tp1"] = torch.load(tmp / "torch-tp1" / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt",
                          weights_only=False)
    return r


def test_each_rank_writes_its_shards(runs):
    names = sorted(p.name for p in (runs["dist"] / "iter_0000003").iterdir())
    assert names == sorted([".metadata", "common.pt", "metadata.json",
                            *[f"__{r}_{k}.distcp" for r in range(4) for k in range(3)]])


def test_resume_is_bit_identical(runs):
    assert [i for i, *_ in runs["first"]] == [1, 2, 3]
    assert runs["first"] + runs["rest"] == runs["full"]  # exact floats


def test_mcore_loads_it_resharded(runs):
    out = runs["tmp"] / "loaded.pt"
    run_helper("load", runs["dist"], out)
    loaded = {te_name(k): v for k, v in torch.load(out, weights_only=True).items()}
    ours = {k: v for k, v in runs["tp1"]["model"].items() if v is not None and "_extra_state" not in k}
    assert_same_tensors(loaded, ours, f"{runs['arch']}: TP2xPP2 torch_dist loaded by megatron-core")


def _stacked(name):
    """decoder.layers.3.X -> (decoder.layers.X, 3); other names -> (name, None)."""
    m = re.match(r"decoder\.layers\.(\d+)\.(.*)", name)
    return (f"decoder.layers.{m.group(2)}", int(m.group(1))) if m else (name, None)


def test_pytorch_reads_the_moments(runs):
    """PyTorch's own DCP reader: every moment (and weight) at its global place equals the
    torch-format checkpoint's, resharded to TP 1 (optimizer state in Megatron's order)."""
    out = runs["tmp"] / "dcp.pt"
    dcp_to_torch_save(runs["dist"] / "iter_0000003", out)
    full = torch.load(out, weights_only=False)
    sd = runs["tp1"]
    names = optimizer_order({k: v for k, v in sd["model"].items() if isinstance(v, torch.Tensor)})
    state = sd["optimizer"]["state"]
    assert len(names) == len(state)
    got, want = {}, {}
    for i, n in enumerate(names):
        key, layer = _stacked(n)
        for what, prefix in (("exp_avg", "optimizer.state.exp_avg."), ("exp_avg_sq", "optimizer.state.exp_avg_sq."),
                             ("weight", "")):
            v = full[prefix + key]
            got[f"{what} {n}"] = v if layer is None else v[layer]
            want[f"{what} {n}"] = sd["model"][n] if what == "weight" else state[i][what]
    assert_same_tensors(got, want, f"{runs['arch']}: TP2xPP2 torch_dist read by torch.distributed.checkpoint")


def test_convert_reads_it(runs):
    p = conftest.run_mg(["mg-convert", "--inspect", runs["dist"]])
    assert "format: megatron torch_dist" in p.stdout and "parallel: tp 2, pp 2" in p.stdout
    p = conftest.run_mg(["mg-convert", "--load-dir", runs["dist"], "--save-dir", runs["tmp"] / "hf",
                         "--saver", "hf", "--verify"])
    assert "identical to the source" in p.stdout + p.stderr


def test_data_parallel_replicas_written_once(tmp_path):
    full = _train("llama", tmp_path / "full.jsonl", layout=TP2DP2)
    ck = tmp_path / "ck"
    first = _train("llama", tmp_path / "a.jsonl", ["--save", ck, *SAVE3, *DIST], layout=TP2DP2)
    names = sorted(p.name for p in (ck / "iter_0000003").iterdir())
    assert names == sorted([".metadata", "common.pt", "metadata.json",
                            *[f"__{r}_{k}.distcp" for r in range(2) for k in range(3)]])
    rest = _train("llama", tmp_path / "b.jsonl", ["--load", ck], layout=TP2DP2)
    assert first + rest == full  # exact floats
