"""mg-convert writes the distributed optimizer's state back in its own form, checked against
megatron-core 0.16.1.

mg-train trains a tiny GPT-2 (tied) and a tiny Llama (untied, GQA, SwiGLU) for 3 iterations
at TP=2 with --use-distributed-optimizer (without --overlap-grad-reduce: one bucket; with it
and --ddp-bucket-size 5000: several) and saves; mg-convert reshards that checkpoint to TP=1
(--verify). The reference resharding is mg-convert's plain one: the same checkpoint without
its distrib_optim.pt files holds mg-train's copy of the full moments in torch's state dict,
which mg-convert reshards into torch's form (test_convert_moments.py resumes from that form
with the uninterrupted run's losses). megatron-core's own _ParamAndGradBuffer of the TP=1
model (test_dist_optim_mcore.megatron_world: its layout, get_parameter_state_dp_zero's
coalescing) applied to the reference's weights and moments must give exactly the 'param',
'exp_avg' and 'exp_avg_sq' of the converted distrib_optim.pt, under the key megatron-core's
loader looks up; the rank file's optimizer is DistributedOptimizer.state_dict() (the
source's param groups without 'params', with the step count).
"""
import shutil

import pytest
import torch

import conftest
from mpi_launch import run_mpi
from test_convert_mcore import mcore  # noqa: F401
from test_dist_optim_mcore import COMMON, _load, megatron_world
from test_dist_train import GPT2, LLAMA

BUCKETS = {"one-bucket": None, "bucket-5000": 5000}


def _convert(src, out):
    p = conftest.run_mg(["mg-convert", "--load-dir", src, "--save-dir", out, "--verify",
                         "--target-tensor-parallel-size", 1])
    assert "parameters and their Adam moments" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("buckets", sorted(BUCKETS))
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_converted_distrib_optim_is_megatron_buffer(tmp_path, mcore, monkeypatch,  # noqa: F811
                                                    arch, buckets):
    size = BUCKETS[buckets]
    overlap = ["--overlap-grad-reduce", "--ddp-bucket-size", size] if size else []
    ck = tmp_path / "ck"
    run_mpi(2, "mg-train", [*(GPT2 if arch == "gpt2" else LLAMA), *COMMON, *overlap,
                            "--tensor-model-parallel-size", 2, "--save", ck])
    plain = tmp_path / "plain"
    shutil.copytree(ck, plain)
    for f in plain.glob("iter_*/mp_rank_*/distrib_optim.pt"):
        f.unlink()
    _convert(plain, tmp_path / "ref")
    _convert(ck, tmp_path / "tp1")
    ref = _load(tmp_path / "ref" / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt")
    d = tmp_path / "tp1" / "iter_0000003" / "mp_rank_00"
    got = _load(d / "model_optim_rng.pt")
    assert "state" in ref["optimizer"] and sorted(got["optimizer"]) == ["optimizer"]
    groups = got["optimizer"]["optimizer"]["param_groups"]
    assert [dict(g, params=r["params"]) for g, r in
            zip(groups, ref["optimizer"]["param_groups"])] == ref["optimizer"]["param_groups"]
    assert all("params" not in g and g["step"] == 3 for g in groups)
    for k, v in ref["model"].items():
        assert v is None and got["model"][k] is None or torch.equal(got["model"][k], v), k
    buf, theirs = megatron_world(mcore, monkeypatch, ref, size)
    if size:
        assert len(buf.buckets) >= 4, len(buf.buckets)
    ours = torch.load(d / "distrib_optim.pt", weights_only=True)
    assert ours["buckets_coalesced"] is True
    [(key, mine)] = ours[0].items()
    assert key == (torch.float32, torch.float32)
    assert mine["numel_unpadded"] == buf.numel_unpadded
    for what, x in theirs.items():
        assert torch.equal(mine[what], x), what
