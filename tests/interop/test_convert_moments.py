"""mg-convert reshards the Adam moments with their parameters (beyond Megatron, whose
converter drops the optimizer state): a TP=2 PP=2 mg-train run stopped at iteration 10,
resharded to TP=1 PP=1 with its optimizer state (exp_avg and exp_avg_sq follow their
parameter's split: the fused QKV and SwiGLU fc1 rows, the padded vocabulary rows), resumes
single-process and logs the uninterrupted single-process run's losses and grad norms of
iterations 11..20 within 1e-5 relative (fp32; only the reduction order differs); the
output keeps the iteration (not `release`) and the optimizer's step count, and --verify
compares the moments too. The reverse (TP=1 -> TP=2 PP=2) resumes alike. A moment whose
shape does not match its parameter is refused, naming the tensor. Models, data and
processes as test_train_parallel.py.
"""
import shutil

import pytest
import torch

import conftest
from test_train_ckpt import _torch_load
from test_train_parallel import V, assert_same_run, data, model_args, run_train  # noqa: F401
from test_train_run import ARCHS

TP2PP2 = ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2]


def stop_at_10(ck):
    return ["--save", ck, "--save-interval", 10, "--exit-interval", 10]


def convert(src, out, *extra):
    return conftest.run_mg(["mg-convert", "--load-dir", src, "--save-dir", out, "--verify",
                            "--true-vocab-size", V, *extra])


@pytest.fixture(scope="module", params=sorted(ARCHS))
def runs(request, data, tmp_path_factory):  # noqa: F811
    """(arch, work dir, uninterrupted single-process records)."""
    arch = request.param
    d = tmp_path_factory.mktemp(f"moments_{arch}")
    full, _ = run_train(1, model_args(data, arch), d / "full.jsonl")
    run_train(4, model_args(data, arch, TP2PP2 + stop_at_10(d / "ck22")), d / "a.jsonl")
    return arch, d, full


def test_tp2pp2_to_tp1_resumes(runs, data, tmp_path):  # noqa: F811
    arch, d, full = runs
    out = tmp_path / "tp1"
    p = convert(d / "ck22", out)
    assert "parameters and their Adam moments" in p.stdout, p.stdout + p.stderr
    assert (out / "latest_checkpointed_iteration.txt").read_text() == "10"
    sd = _torch_load(out / "iter_0000010" / "mp_rank_00" / "model_optim_rng.pt")
    assert sd["iteration"] == 10
    opt = sd["optimizer"]
    n = len([k for k, v in sd["model"].items() if isinstance(v, torch.Tensor)])
    assert sorted(i for g in opt["param_groups"] for i in g["params"]) == list(range(n))
    assert {float(e["step"]) for e in opt["state"].values()} == {10.0}
    resumed, err = run_train(1, model_args(data, arch, ["--load", out]), tmp_path / "b.jsonl")
    assert "at iteration 10" in err, err
    tail = [r for r in full if r["iteration"] > 10]
    assert_same_run_tail(tail, resumed, f"{arch} TP2PP2 -> TP1 with moments")


def assert_same_run_tail(ref, got, what):
    assert [(r["kind"], r["iteration"]) for r in got] == \
        [(r["kind"], r["iteration"]) for r in ref], what
    assert [r["iteration"] for r in got if r["kind"] == "train"] == list(range(11, 21)), what
    for a, b in zip(ref, got):
        for k in ["loss", "grad_norm"] if a["kind"] == "train" else ["loss"]:
            assert b[k] == pytest.approx(a[k], rel=1e-5), \
                f"{what}: {a['kind']} {k} at iteration {a['iteration']}: {b[k]} vs {a[k]}"


def test_tp1_to_tp2pp2_resumes(runs, data, tmp_path):  # noqa: F811
    arch, d, full = runs
    run_train(1, model_args(data, arch, stop_at_10(tmp_path / "ck1")), tmp_path / "a.jsonl")
    out = tmp_path / "tp2pp2"
    convert(tmp_path / "ck1", out, "--target-tensor-parallel-size", 2,
            "--target-pipeline-parallel-size", 2)
    resumed, err = run_train(4, model_args(data, arch, TP2PP2 + ["--load", out]),
                             tmp_path / "b.jsonl")
    assert "at iteration 10" in err, err
    assert_same_run_tail([r for r in full if r["iteration"] > 10], resumed,
                         f"{arch} TP1 -> TP2PP2 with moments")


def test_moment_of_wrong_shape_is_refused(runs, tmp_path):
    _, d, _ = runs
    bad = tmp_path / "bad"
    shutil.copytree(d / "ck22", bad)
    f = bad / "iter_0000010" / "mp_rank_01_000" / "model_optim_rng.pt"
    sd = torch.load(f, weights_only=False)
    sd["optimizer"]["state"][3]["exp_avg_sq"] = torch.zeros(5)
    torch.save(sd, f)
    p = conftest.run_mg(["mg-convert", "--load-dir", bad, "--save-dir", tmp_path / "out"],
                        check=False)
    assert p.returncode == 1, p.stderr
    assert "optimizer.state.3.exp_avg_sq" in p.stderr and "does not match" in p.stderr, p.stderr
    assert "mp_rank_01_000" in p.stderr


def test_torch_dist_target_with_moments_is_refused(runs, tmp_path):
    """The moments are not written in torch_dist yet: refused (exit 2, no output) unless
    --drop-optimizer-state."""
    _, d, _ = runs
    out = tmp_path / "td"
    p = conftest.run_mg(["mg-convert", "--load-dir", d / "ck22", "--save-dir", out,
                         "--ckpt-format", "torch_dist"], check=False)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("mg-convert: not supported yet: converting optimizer state into "
                               "a torch_dist checkpoint") and "--drop-optimizer-state" in p.stderr
    assert not out.exists()
    conftest.run_mg(["mg-convert", "--load-dir", d / "ck22", "--save-dir", out,
                     "--ckpt-format", "torch_dist", "--drop-optimizer-state"])


BUCKETS = {"one-bucket": [], "bucket-1": ["--overlap-grad-reduce", "--ddp-bucket-size", 1]}


@pytest.mark.parametrize("buckets", sorted(BUCKETS))
def test_distributed_optimizer_moments_resume(runs, data, tmp_path, buckets):  # noqa: F811
    """The moments of distrib_optim.pt (megatron-core's buffer layout, read at each rank of a
    TP=2 PP=2 run with --use-distributed-optimizer; its fp32 master weights checked equal to
    the model's) are resharded to TP=1 PP=1, also once the rank files hold only
    DistributedOptimizer.state_dict() as Megatron writes them, and written as mg-train
    writes them: each rank file's optimizer torch's state dict of the full moments with
    DistributedOptimizer.state_dict()'s 'optimizer' beside it (param groups without
    'params', the step count), a distrib_optim.pt beside it in the target stage's buffer
    layout (--verify reads it back). A single-process run with --use-distributed-optimizer
    and the source's DDP buckets resumes from it with the uninterrupted run's losses, and a
    plain run does too (from torch's state dict, whatever the buckets). bucket-1: the run had
    --overlap-grad-reduce --ddp-bucket-size 1 (a DDP bucket per parameter on the first
    stage), which the checkpoint's args say (overlap_grad_reduce, ddp_bucket_size), and
    distrib_optim.pt is read and written in that bucketed layout."""
    arch, _, full = runs
    ck = tmp_path / "ck"
    run_train(4, model_args(data, arch, TP2PP2 + ["--use-distributed-optimizer"] +
                            BUCKETS[buckets] + stop_at_10(ck)), tmp_path / "a.jsonl")
    out = tmp_path / "tp1"
    p = convert(ck, out)
    assert "parameters and their Adam moments" in p.stdout, p.stdout + p.stderr
    assert "mg-train's copy of the moments that distrib_optim.pt holds" in p.stderr, p.stderr
    # megatron-core's own rank files: DistributedOptimizer.state_dict() only, no torch copy
    for f in ck.glob("iter_*/mp_rank_*/model_optim_rng.pt"):
        sd = torch.load(f, weights_only=False)
        sd["optimizer"] = {"optimizer": sd["optimizer"]["optimizer"]}
        torch.save(sd, f)
    shutil.rmtree(out)
    p = convert(ck, out)
    assert "copy of the moments" not in p.stderr, p.stderr
    d = out / "iter_0000010" / "mp_rank_00"
    assert (d / "distrib_optim.pt").exists()
    od = _torch_load(d / "model_optim_rng.pt")["optimizer"]
    assert sorted(od) == ["optimizer", "param_groups", "state"], sorted(od)
    assert [sorted(g) for g in od["optimizer"]["param_groups"]] == \
        [sorted(set(g) - {"params"}) for g in sd["optimizer"]["optimizer"]["param_groups"]]
    assert {g["step"] for g in od["optimizer"]["param_groups"]} == {10}
    flags = [["--use-distributed-optimizer"] + BUCKETS[buckets], []]
    for i, extra in enumerate(flags):
        resumed, err = run_train(1, model_args(data, arch, ["--load", out] + extra),
                                 tmp_path / f"b{i}.jsonl")
        assert "at iteration 10" in err, err
        assert_same_run_tail([r for r in full if r["iteration"] > 10], resumed,
                             f"{arch} TP2PP2 distributed optimizer -> TP1 with moments {extra}")
