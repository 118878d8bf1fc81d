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
loader looks up; the rank file's optimizer is the reference's torch state dict (the full
moments, which FP32Optimizer and mg-train without the distributed optimizer load) with
DistributedOptimizer.state_dict()'s 'optimizer' beside it (the source's param groups without
'params', with the step count), as mg-train writes it. And megatron-core's own
DistributedOptimizer loads the converted checkpoint (load_state_dict, load_parameter_state)
into masters and moments equal to the reference's. A PP=2 target (the tied embedding's
shared buckets) resumes with the source layout's losses; --target-data-parallel-size and
the refusal of a 16-bit target are checked too.
"""
import json
import shutil

import pytest
import torch

import conftest
from mpi_launch import run_mpi
from test_convert_mcore import build_gpt_model, mcore  # noqa: F401
from test_dist_optim_mcore import COMMON, _load, megatron_world
from test_dist_train import GPT2, LLAMA

BUCKETS = {"one-bucket": None, "bucket-5000": 5000}


def _convert(src, out, *extra):
    p = conftest.run_mg(["mg-convert", "--load-dir", src, "--save-dir", out, "--verify",
                         "--target-tensor-parallel-size", 1, *extra])
    assert "parameters and their Adam moments" in p.stdout, p.stdout + p.stderr


def _train_and_convert(tmp_path, arch, overlap, *extra):
    """The TP=2 distributed-optimizer run converted to TP=1 (extra: mg-convert flags) and its
    plain-form reference resharding: (the reference's rank file, the output's rank folder)."""
    ck = tmp_path / "ck"
    run_mpi(2, "mg-train", [*(GPT2 if arch == "gpt2" else LLAMA), *COMMON, *overlap,
                            "--tensor-model-parallel-size", 2, "--save", ck])
    plain = tmp_path / "plain"
    shutil.copytree(ck, plain)
    for f in plain.glob("iter_*/mp_rank_*/distrib_optim.pt"):
        f.unlink()
    _convert(plain, tmp_path / "ref", *extra)
    _convert(ck, tmp_path / "tp1", *extra)
    ref = _load(tmp_path / "ref" / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt")
    return ref, tmp_path / "tp1" / "iter_0000003" / "mp_rank_00"


@pytest.mark.parametrize("buckets", sorted(BUCKETS))
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_converted_distrib_optim_is_megatron_buffer(tmp_path, mcore, monkeypatch,  # noqa: F811
                                                    arch, buckets):
    size = BUCKETS[buckets]
    overlap = ["--overlap-grad-reduce", "--ddp-bucket-size", size] if size else []
    ref, d = _train_and_convert(tmp_path, arch, overlap)
    got = _load(d / "model_optim_rng.pt")
    assert sorted(got["optimizer"]) == ["optimizer", "param_groups", "state"]
    assert got["optimizer"]["param_groups"] == ref["optimizer"]["param_groups"]
    assert got["optimizer"]["state"].keys() == ref["optimizer"]["state"].keys()
    for i, st in ref["optimizer"]["state"].items():
        assert st.keys() == got["optimizer"]["state"][i].keys(), i
        assert all(torch.equal(got["optimizer"]["state"][i][k], v) for k, v in st.items()), i
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


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_megatron_distributed_optimizer_loads_converted(tmp_path, mcore, monkeypatch,  # noqa: F811
                                                        arch):
    """megatron-core's own DistributedOptimizer (get_megatron_optimizer over its
    DistributedDataParallel of the local-spec GPTModel, one bucket, the size-1 gloo group)
    loads the converted TP=1 checkpoint (--transformer-impl local: the model's own parameter
    order) as Megatron's load_checkpoint does: load_state_dict of the rank file's optimizer,
    then load_parameter_state of its distrib_optim.pt; every fp32 master and moment it then
    holds equals the plain-form resharding's weight and moment, and its groups have the
    source's step count. On the CPU: torch.cuda.current_device and torch.tensor's device
    patched as in test_train_mcore.py, Tensor.type() answering torch.cuda.* for the
    optimizer's parameter type check, load_parameter_state under no_grad (the fp32 masters
    are views of the parameters), and torch's AdamW (the fallback without TransformerEngine
    or Apex) keeps a per-parameter 'step' that load_parameter_state_from_dp_zero would copy
    from the file (FusedAdam keeps it in the group): taken out around the call."""
    from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    ref, d = _train_and_convert(tmp_path, arch, [], "--transformer-impl", "local")
    sd = _load(d / "model_optim_rng.pt")
    a = sd["args"]
    model = build_gpt_model(mcore, a)
    model.train()
    tensor, ttype = torch.tensor, torch.Tensor.type

    def cuda_type(self, *x, **k):
        t = ttype(self, *x, **k)
        return t.replace("torch.", "torch.cuda.", 1) if not x and not k else t
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "current_device", lambda: "cpu")
        m.setattr(torch, "tensor", lambda *x, device=None, **k: tensor(*x, **k))
        m.setattr(torch.Tensor, "type", cuda_type)
        ddp = DistributedDataParallel(model.config, DistributedDataParallelConfig(
            use_distributed_optimizer=True, overlap_grad_reduce=False), model)
        cfg = OptimizerConfig(optimizer="adam", lr=a.lr, weight_decay=0.01, adam_beta1=0.9,
                              adam_beta2=0.999, adam_eps=1e-8, clip_grad=0.0, bf16=False,
                              fp16=False, use_distributed_optimizer=True)
        [opt] = get_megatron_optimizer(cfg, [ddp]).chained_optimizers
        assert type(opt).__name__ == "DistributedOptimizer"
        opt.load_state_dict(sd["optimizer"])
        steps = {p: st.pop("step") for p, st in opt.optimizer.state.items()}
        with torch.no_grad():
            opt.load_parameter_state(str(d / "distrib_optim.pt"))
        for p, s in steps.items():
            opt.optimizer.state[p]["step"] = s
    assert {g["step"] for g in opt.optimizer.param_groups} == {3}
    # the reference's moments by name: decay group, then no decay, each in the model's order
    names = [n for n, _ in model.named_parameters()]
    weights = ref["model"]
    flat = [n for n in names if weights[n].dim() == 2] + \
        [n for n in names if weights[n].dim() != 2]
    ids = [i for g in ref["optimizer"]["param_groups"] for i in g["params"]]
    state = ref["optimizer"]["state"]
    moments = {n: state[i] for n, i in zip(flat, ids)}
    by_param = {p: n for n, p in model.named_parameters()}
    checked = 0
    for model_param, (gi, gj) in opt.model_param_group_index_map.items():
        n = by_param[model_param]
        main = opt.optimizer.param_groups[gi]["params"][gj]
        assert torch.equal(main.reshape(-1), weights[n].reshape(-1)), n
        for k in ("exp_avg", "exp_avg_sq"):
            got = opt.optimizer.state[main][k].reshape(-1)
            assert torch.equal(got, moments[n][k].reshape(-1)), (n, k)
        checked += 1
    assert checked == len(names)


def test_16_bit_target_is_refused(tmp_path):
    """distrib_optim.pt holds fp32 masters, which a --target-dtype bf16 output of an fp32 run
    does not have: refused (exit 2, no output) unless --drop-optimizer-state."""
    ck = tmp_path / "ck"
    run_mpi(2, "mg-train", [*GPT2, *COMMON, "--save", ck])
    out = tmp_path / "bf16"
    p = conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", out, "--target-dtype",
                         "bf16"], check=False)
    assert p.returncode == 2 and not out.exists(), p.stderr
    assert "not supported yet: --target-dtype BF16 with the distributed optimizer" in p.stderr
    conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", out, "--target-dtype",
                     "bf16", "--drop-optimizer-state"])


def test_target_data_parallel_size(tmp_path):
    """--target-data-parallel-size is the output's args' data_parallel_size, from which
    distrib_optim.pt's DDP buckets follow with overlap_grad_reduce and no ddp_bucket_size
    (the default bucket size max(40000000, 1000000 x DP)); a source whose args lack
    data_parallel_size there converts while its buffer is below 40,000,000 elements (every
    DP then gives one bucket), and --verify reads the output back in its layout."""
    ck = tmp_path / "ck"
    run_mpi(2, "mg-train", [*GPT2, *COMMON, "--overlap-grad-reduce", "--save", ck])
    for f in ck.glob("iter_*/mp_rank_*/model_optim_rng.pt"):
        sd = _load(f)
        assert sd["args"].overlap_grad_reduce and sd["args"].ddp_bucket_size is None
        del sd["args"].data_parallel_size
        torch.save(sd, f)
    _convert(ck, tmp_path / "dp3", "--target-data-parallel-size", 3)
    d = tmp_path / "dp3" / "iter_0000003" / "mp_rank_00"
    assert _load(d / "model_optim_rng.pt")["args"].data_parallel_size == 3
    assert (d / "distrib_optim.pt").exists()
    p = conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", tmp_path / "hf",
                         "--saver", "hf", "--target-data-parallel-size", 3], check=False)
    assert p.returncode == 2 and "--target-data-parallel-size is for Megatron" in p.stderr


# COMMON for 5 iterations (the checkpoint at 3 keeps the 5-iteration schedule)
FIVE = [a if a != "3" or prev != "--train-iters" else "5"
        for prev, a in zip([None, *COMMON], COMMON)]


def _resumed(tmp_path, ck, name, layout):
    """mg-train --use-distributed-optimizer resumed from ck in layout (2 ranks) for
    iterations 4 and 5: its logged train records."""
    log = tmp_path / f"{name}.jsonl"
    run_mpi(2, "mg-train", [*GPT2, *FIVE, *layout, "--load", ck, "--log-file", log,
                            "--log-interval", 1])
    recs = [r for r in map(json.loads, open(log)) if r["kind"] == "train"]
    assert [r["iteration"] for r in recs] == [4, 5], recs
    return recs


def test_pipeline_target_resumes(tmp_path):
    """The tied GPT-2's TP=2 distributed-optimizer checkpoint resharded to PP=2 (each stage's
    buffer: the first stage's word embedding and the last stage's tied copy each in a
    bucket of its own) resumes at PP=2 with --use-distributed-optimizer and logs the
    source layout's resumed iterations 4 and 5 (loss and grad norm within 1e-5 relative;
    iteration 5's loss follows the step that used the moments)."""
    ck = tmp_path / "ck"
    tp2 = ["--tensor-model-parallel-size", 2]
    run_mpi(2, "mg-train", [*GPT2, *FIVE, *tp2, "--exit-interval", 3, "--save", ck])
    _convert(ck, tmp_path / "pp2", "--target-pipeline-parallel-size", 2)
    want = _resumed(tmp_path, ck, "tp2", tp2)
    got = _resumed(tmp_path, tmp_path / "pp2", "pp2", ["--pipeline-model-parallel-size", 2])
    for a, b in zip(want, got):
        for k in ("loss", "grad_norm"):
            assert b[k] == pytest.approx(a[k], rel=1e-5), (a["iteration"], k, b[k], a[k])
