"""mg-train's per-shard checkpoints (checkpoint.h: one mp_rank_TT[_PPP] file per model
shard, written between begin and commit): a TP 2 (GPT-2, tied) and a TP 2 x PP 2 (Llama,
untied) checkpoint of a freshly initialised model (build/tests/tools/ckpt_shards, the
writers of such a run in one process) are what mg-convert reads as Megatron checkpoints of
that layout, and merged to TP 1 x PP 1 they hold exactly the tensors of the TP 1 save
(Megatron's initialisation does not depend on the layout). The padded vocabulary is the same
at every layout (--make-vocab-size-divisible-by 64, vocabulary 1001: 1024 at TP 1 and 2).
"""
import argparse

import pytest
import torch

import conftest

BASE = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
        "--seq-length", "16", "--max-position-embeddings", "16", "--micro-batch-size", "1",
        "--train-iters", "10", "--lr", "1e-3", "--vocab-size", "1001",
        "--make-vocab-size-divisible-by", "64", "--save-interval", "5"]
LLAMA = ["--normalization", "RMSNorm", "--swiglu", "--position-embedding-type", "rope",
         "--untie-embeddings-and-output-weights", "--disable-bias-linear",
         "--group-query-attention", "--num-query-groups", "2"]


def _model(path):
    torch.serialization.add_safe_globals([argparse.Namespace])
    sd = torch.load(path, weights_only=False)["model"]
    return {k: v for k, v in sd.items() if not k.endswith("._extra_state")}


@pytest.mark.parametrize("arch,layout,folders", [
    ("gpt2", ["--tensor-model-parallel-size", "2"], ["mp_rank_00", "mp_rank_01"]),
    ("llama", ["--tensor-model-parallel-size", "2", "--pipeline-model-parallel-size", "2"],
     ["mp_rank_00_000", "mp_rank_00_001", "mp_rank_01_000", "mp_rank_01_001"]),
])
def test_shards_merge_to_the_single_shard(tmp_path, arch, layout, folders):
    flags = BASE + (LLAMA if arch == "llama" else [])
    conftest.run_mg(["ckpt_shards", tmp_path / "one", 5, *flags])
    conftest.run_mg(["ckpt_shards", tmp_path / "many", 5, *flags, *layout])
    it = tmp_path / "many" / "iter_0000005"
    assert sorted(p.name for p in it.iterdir()) == folders
    assert (tmp_path / "many" / "latest_checkpointed_iteration.txt").read_text() == "5"
    conftest.run_mg(["mg-convert", "--load-dir", tmp_path / "many", "--save-dir",
                     tmp_path / "merged", "--target-tensor-parallel-size", "1",
                     "--target-pipeline-parallel-size", "1", "--drop-optimizer-state"])
    want = _model(tmp_path / "one" / "iter_0000005" / "mp_rank_00" / "model_optim_rng.pt")
    got = _model(next((tmp_path / "merged").glob("*/mp_rank_00/model_optim_rng.pt")))
    assert sorted(got) == sorted(want)
    for k in want:
        assert torch.equal(got[k], want[k]), k
