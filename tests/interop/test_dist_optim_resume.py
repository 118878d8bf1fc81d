"""mg-train --load of a checkpoint as Megatron writes it with --use-distributed-optimizer
(`torch` format): model_optim_rng.pt's 'optimizer' is DistributedOptimizer.state_dict()
({'optimizer': {'param_groups': [...]}}, the groups without 'params' and with the step
count), the fp32 master weights and the Adam moments only in distrib_optim.pt
(get_parameter_state_dp_zero; docs/FORMATS.md §5.2).

mg-train at PP=2 x DP=2 with the distributed optimizer stops at iteration 10 and saves; every
rank file is rewritten in megatron-core's form (its moments removed). Resumed at the same
layout it must log bit for bit the uninterrupted run's iterations 11-20; resumed at PP=2 x
DP=1 (distrib_optim.pt does not depend on the data-parallel size) within 1e-5 relative
(only the reduction order differs). Without distrib_optim.pt the load fails naming it.
mg-convert reshards the moments of distrib_optim.pt (test_convert_moments.py), or drops
them when told to. Models, data and processes as test_train_parallel.py.
"""
import argparse
import math
import shutil

import pytest
import torch

import conftest
from test_train_parallel import ENV, V, data, model_args, mpirun, run_train  # noqa: F401
from test_train_parallel_ckpt import full_and_stopped, stripped
from test_train_run import ARCHS

PP2 = ["--pipeline-model-parallel-size", 2, "--use-distributed-optimizer"]


def megatron_form(path, step_type):
    """path rewritten with DistributedOptimizer.state_dict() as its 'optimizer' (the step a
    float as torch's AdamW keeps it, an int as TransformerEngine's FusedAdam)."""
    torch.serialization.add_safe_globals([argparse.Namespace])
    ck = torch.load(path, weights_only=False)
    groups = []
    for g in ck["optimizer"]["param_groups"]:
        g = {k: v for k, v in g.items() if k != "params"}
        g["step"] = step_type(g["step"])
        groups.append(g)
    ck["optimizer"] = {"optimizer": {"param_groups": groups}}
    torch.save(ck, path)


@pytest.fixture(scope="module", params=sorted(ARCHS))
def runs(request, data, tmp_path_factory):  # noqa: F811
    """(arch, data, work dir, uninterrupted records, stopped-at-10 records)."""
    arch = request.param
    d = tmp_path_factory.mktemp(f"dist_resume_{arch}")
    full, first = full_and_stopped(arch, data, d, PP2)
    shards = sorted((d / "ck" / "iter_0000010").iterdir())
    assert [s.name for s in shards] == ["mp_rank_00_000", "mp_rank_00_001"]
    shutil.copy(shards[0] / "model_optim_rng.pt", d / "ours.pt")
    for s in shards:
        assert (s / "distrib_optim.pt").is_file()
        megatron_form(s / "model_optim_rng.pt", float if arch == "gpt2" else int)
    return arch, data, d, full, first


def test_resume_from_distrib_optim_is_bit_exact(runs):
    arch, data, d, full, first = runs  # noqa: F811
    second, err = run_train(4, model_args(data, arch, PP2 + ["--load", d / "ck"]), d / "b.jsonl")
    assert "loaded" in err and "at iteration 10" in err, err
    assert [r["iteration"] for r in second if r["kind"] == "train"] == list(range(11, 21))
    assert stripped(first + second) == stripped(full)


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=0.0)


def test_resume_at_another_data_parallel_size(runs):
    arch, data, d, full, _ = runs  # noqa: F811
    second, err = run_train(2, model_args(data, arch, PP2 + ["--load", d / "ck"]), d / "c.jsonl")
    assert "at iteration 10" in err, err
    want = {(r["kind"], r["iteration"]): r for r in full if r["iteration"] > 10}
    got = {(r["kind"], r["iteration"]): r for r in second}
    assert sorted(got) == sorted(want)
    for key, r in got.items():
        for field in ("loss", "grad_norm"):
            if field in r:
                assert close(r[field], want[key][field]), (key, field, r[field], want[key])


def test_missing_distrib_optim_is_named(runs, tmp_path):
    arch, data, d, _, _ = runs  # noqa: F811
    ck = tmp_path / "ck"
    shutil.copytree(d / "ck", ck)
    gone = ck / "iter_0000010" / "mp_rank_00_001" / "distrib_optim.pt"
    gone.unlink()
    cmd = mpirun() + ["-np", 2, conftest.bin_dir_path() / "mg-train"]
    p = conftest.run_mg(cmd + model_args(data, arch, PP2 + ["--load", ck]), check=False, env=ENV)
    assert p.returncode != 0
    assert f"{gone}, which is missing" in p.stderr and "--no-load-optim" in p.stderr, p.stderr


def test_mg_convert_reshards_distrib_optim_or_drops_it(runs, tmp_path):
    """mg-convert reshards the moments of distrib_optim.pt (test_convert_moments.py resumes
    from them) and drops it, listed, with --drop-optimizer-state; never silently."""
    _, _, d, _, _ = runs
    out = tmp_path / "tp1"
    p = conftest.run_mg(["mg-convert", "--load-dir", d / "ck", "--save-dir", out, "--verify",
                         "--true-vocab-size", V])
    assert "parameters and their Adam moments" in p.stdout, p.stdout + p.stderr
    out = tmp_path / "dropped"
    p = conftest.run_mg(["mg-convert", "--load-dir", d / "ck", "--save-dir", out, "--verify",
                         "--drop-optimizer-state", "--true-vocab-size", V])
    assert "identical to the source" in p.stdout + p.stderr
    assert "distrib_optim.pt" in p.stdout + p.stderr


def test_chained_optimizers_are_not_supported(runs, tmp_path):
    """ChainedOptimizer.state_dict() of several optimizers is a list: not supported yet."""
    arch, data, d, _, _ = runs  # noqa: F811
    ck = tmp_path / "ck"
    shutil.copytree(d / "ck", ck)
    for f in ck.glob("iter_*/mp_rank_*/model_optim_rng.pt"):
        sd = torch.load(f, weights_only=False)
        sd["optimizer"] = [sd["optimizer"], sd["optimizer"]]
        torch.save(sd, f)
    cmd = mpirun() + ["-np", 2, conftest.bin_dir_path() / "mg-train"]
    p = conftest.run_mg(cmd + model_args(data, arch, PP2 + ["--load", ck]), check=False, env=ENV)
    assert p.returncode == 2, p.stderr  # MPI_Abort with the tool's exit status
    assert "): error: not supported yet: " in p.stderr and "chained optimizers" in p.stderr, \
        p.stderr


def test_megatron_loads_our_optimizer_param_groups(runs):
    """mg-train's own rank file, with the distributed optimizer, also carries
    DistributedOptimizer.state_dict()'s {'optimizer': {'param_groups'}}: megatron-core's
    DistributedOptimizer.load_state_dict (on a stand-in holding a torch AdamW whose groups
    are Megatron's, no buffers: the moments come from distrib_optim.pt) restores the
    hyper-parameters and the step count from it."""
    import types
    from megatron.core.optimizer.distrib_optimizer import DistributedOptimizer
    _, _, d, _, _ = runs
    torch.serialization.add_safe_globals([argparse.Namespace])
    ck = torch.load(d / "ours.pt", weights_only=False)
    plain = ck["optimizer"]["param_groups"]
    assert ck["optimizer"]["optimizer"]["param_groups"] == \
        [{k: v for k, v in g.items() if k != "params"} for g in plain]
    params = [torch.nn.Parameter(torch.zeros(1)) for _ in plain]
    inner = torch.optim.AdamW([{"params": [p], "wd_mult": g["wd_mult"], "lr_mult": 1.0,
                                "is_expert_parallel": False, "is_decoupled_lr": False}
                               for p, g in zip(params, plain)], lr=1.0)
    stand_in = types.SimpleNamespace(
        ddp_config=types.SimpleNamespace(use_megatron_fsdp=False), optimizer=inner,
        gbuf_ranges=[], config=types.SimpleNamespace(fp16=False), grad_scaler=None)
    DistributedOptimizer.load_state_dict(stand_in, ck["optimizer"])
    for got, want in zip(inner.param_groups, plain):
        for key in ("lr", "betas", "eps", "weight_decay", "wd_mult", "step"):
            assert got[key] == want[key], key
    assert plain[0]["step"] == 10
