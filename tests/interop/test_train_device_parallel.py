"""mg-train --device cuda with several processes: the emulation build (`make emu`:
build-emu/bin/mg-train, docs/CUDA_EMU.md) under mpirun, one emulated GPU per rank, every
collective and pipeline transfer on the NCCL backend over device buffers (train/comm_nccl.c on
the NCCL host shim, the host values — loss, norms, flags — staged through device buffers),
against the CPU backend of the real build (bin/mg-train --device cpu, MPI) on the same layout.
Models, data and processes are test_train_parallel.py's (6 layers, hidden 32, 6 micro-batches
of 2 x 16 tokens per iteration, 20 iterations, vocabulary 999 padded to 1024), 4 ranks each:

  - TP=2 x DP=2 and TP=2 x PP=2, GPT-2 (tied embeddings: the embedding group's gradient sum
    under PP; the vocabulary-parallel cross-entropy's group maximum on the device) and Llama
    (GQA, SwiGLU, RoPE): every iteration's loss and grad norm and the validation losses equal
    the CPU run's within 1e-5 relative; the world is NCCL's and each rank's device is the
    emulated GPU; rank 0 allocates exactly the device bytes --dry-run plans for its stage.
    GPT-2 runs with the emulator's late streams (MGK_EMU_STREAMS=late: a copy on a stream runs
    only when something must see it, so a collective that did not follow the stream's earlier
    work would read stale data: with the shim's catch-up of the stream removed, the first
    staged broadcast already reads garbage and the ranks' start-up check fails), Llama in the
    random thread order.
  - TP=2 x DP=2 with --use-distributed-optimizer on the device (gradients reduce-scattered and
    parameters all-gathered in device buffers): losses and grad norms equal the device run
    without it within 1e-5 relative, and its checkpoint (model_optim_rng.pt and
    distrib_optim.pt of each model shard) has the CPU distributed-optimizer run's tensors:
    same names, shapes and dtypes, values within the drift of 20 Adam steps.
  - the TP=2 x PP=2 device run's checkpoint exported to Hugging Face by mg-convert (TP and PP
    merged): transformers' logits on random ids equal mg-train's model on the exported weights.
  - --bf16 and --fp16 (16-bit activations at the stage boundaries and in the tensor-parallel
    sums, all-gathers and reduce-scatters, gradients reduced in fp32) at PP=2 x DP=2,
    TP=2 x DP=2 and TP=2 x DP=2 with --sequence-parallel: losses within BF16_REL (2e-3) /
    FP16_REL (5e-4) of the single-process device run of the precision, falling; rank 0 moves
    the bytes --dry-run plans (16-bit activations at 2 bytes).
  - --fp16 with forced overflows (--initial-loss-scale 2^28) at TP=2 x DP=2: every rank skips
    together (the scales are megatron-core's DynamicGradScaler's, both tensor-parallel
    ranks' checkpoints hold its state).
  - --use-distributed-optimizer with --bf16 / --fp16 at TP=2 x DP=2: the plain 16-bit run's
    losses, the planned memory and bytes, fp32 masters in both checkpoint files.
  - --dry-run --device cuda plans every pipeline stage's device memory.

mpirun --oversubscribe --allow-run-as-root (a missing mpirun fails); OMP_NUM_THREADS=1.
"""
import json
import re

import pytest
import torch

import conftest
from test_dist_train import _totals
from test_train_ckpt import _torch_load
from test_train_loss_scale import megatron_scales, scaler_module  # noqa: F401 - a fixture
from test_train_device import (BF16_REL, FP16_REL, _assert_close_tensors,
                               _assert_memory_as_planned, _emu)
from test_train_parallel import (V, assert_same_run, data, model_args, mpirun,  # noqa: F401
                                 run_train)
from test_train_parallel_ckpt import assert_probe_logits

ENV = {"OMP_NUM_THREADS": "1"}
LR = 1e-3  # model_args'
TP2DP2 = ["--tensor-model-parallel-size", 2]
TP2PP2 = ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2]
LAYOUTS = {"tp2-dp2": TP2DP2, "tp2-pp2": TP2PP2}
EMU_MODE = {"gpt2": {"MGK_EMU_STREAMS": "late"}, "llama": {"MGK_EMU_ORDER": "random:1"}}


def run_device(arch, args, metrics):
    """The emulation build on 4 ranks with --device cuda; (records, stderr)."""
    cmd = mpirun() + ["-np", 4, _emu()] + args + ["--device", "cuda", "--log-file", metrics]
    p = conftest.run_mg(cmd, env={**ENV, **EMU_MODE[arch]})
    assert "4 ranks" in p.stderr and "nccl); device cuda:0 (mgk-emu" in p.stderr, p.stderr
    return [json.loads(line) for line in open(metrics)], p.stderr


def assert_same_records(ref, got, what):
    """test_train_parallel's comparison (1e-5 relative), no skipped iteration, the loss falls."""
    assert_same_run(ref, got, what)
    assert all(r["skipped"] == 0 and r["nan"] == 0 for r in got if r["kind"] == "train")
    train = [r["loss"] for r in got if r["kind"] == "train"]
    assert train[-1] < train[0], f"{what}: the loss does not fall: {train}"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_device_layout_equals_cpu(data, arch, layout, tmp_path):  # noqa: F811
    flags = LAYOUTS[layout]
    save = ["--save", tmp_path / "ck", "--save-interval", 100] if layout == "tp2-pp2" else []
    cpu, _ = run_train(4, model_args(data, arch, flags + ["--device", "cpu"]),
                       tmp_path / "cpu.jsonl")
    dev, err = run_device(arch, model_args(data, arch, flags + save), tmp_path / "dev.jsonl")
    assert_same_records(cpu, dev, f"{arch} {layout} device")
    _assert_memory_as_planned(err)
    if layout == "tp2-pp2":
        hf = tmp_path / "hf"
        conftest.run_mg(["mg-convert", "--load-dir", tmp_path / "ck", "--save-dir", hf,
                         "--saver", "hf", "--true-vocab-size", V, "--drop-optimizer-state",
                         "--quiet"])
        assert_probe_logits(arch, hf, tmp_path)


H16_LAYOUTS = {"pp2-dp2": ["--pipeline-model-parallel-size", 2], "tp2-dp2": TP2DP2,
               "tp2-sp-dp2": TP2DP2 + ["--sequence-parallel"]}
# --fp16 with Megatron's dynamic loss scaling from 2^10 (no overflow on this model)
H16_FLAGS = {"bf16": ["--bf16"], "fp16": ["--fp16", "--initial-loss-scale", 1024]}


@pytest.fixture(scope="module")
def one_h16(data, tmp_path_factory):  # noqa: F811
    """The single-process device run of each precision: {precision: records}."""
    d, out = tmp_path_factory.mktemp("one_h16"), {}
    for prec, flags in H16_FLAGS.items():
        metrics = d / f"{prec}.jsonl"
        one = conftest.run_mg([_emu(), *model_args(data, "gpt2", flags), "--device", "cuda",
                               "--log-file", metrics], env=ENV)
        assert "1 ranks" in one.stderr, one.stderr
        out[prec] = [json.loads(line) for line in open(metrics)]
    return out


def assert_near(ref, got, rel, what):
    """Same records; every loss (train and validation) within rel of ref's; the same loss
    scales and no skipped iteration; the training loss falls."""
    assert [(r["kind"], r["iteration"]) for r in got] == [(r["kind"], r["iteration"]) for r in ref]
    worst = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(ref, got))
    assert worst <= rel, f"{what}: loss differs by {worst:.3g} relative"
    train = [(a, b) for a, b in zip(ref, got) if a["kind"] == "train"]
    assert all(b["skipped"] == 0 and b["loss_scale"] == a["loss_scale"] for a, b in train)
    assert train[-1][1]["loss"] < train[0][1]["loss"], f"{what}: the loss does not fall"


@pytest.mark.parametrize("layout", sorted(H16_LAYOUTS))
@pytest.mark.parametrize("prec", sorted(H16_FLAGS))
def test_h16_layout_near_single_process(data, one_h16, prec, layout, tmp_path):  # noqa: F811
    """--bf16 / --fp16 on 4 ranks against the single-process device run of the same precision:
    within BF16_REL (2e-3) / FP16_REL (5e-4), the loss falling (the tensor-parallel
    activation sums, all-gathers and reduce-scatters in 16 bits, gradients reduced in fp32;
    measured when written: bf16 8.0e-6 at PP=2 x DP=2, 3.0e-5 at TP=2 x DP=2 and with SP;
    fp16 1.6e-6 at PP=2 x DP=2, 2.3e-6 at TP=2 x DP=2 and with SP)."""
    args = model_args(data, "gpt2", H16_FLAGS[prec] + H16_LAYOUTS[layout])
    got, err = run_device("gpt2", args, tmp_path / "dev.jsonl")
    rel = BF16_REL if prec == "bf16" else FP16_REL
    assert_near(one_h16[prec], got, rel, f"{prec} {layout}")
    # rank 0 moves the --dry-run plan's bytes: the activations in 16 bits
    plan = conftest.run_mg([_emu(), *args, "--device", "cuda", "--dry-run"],
                           env={"WORLD_SIZE": "4", **ENV}).stdout
    measured = _totals(err, "measured")
    assert measured and measured == _totals(plan, "total"), (err, plan)


def test_fp16_overflow_at_tp2_skips_on_every_rank(data, tmp_path, scaler_module):  # noqa: F811
    """--fp16 from --initial-loss-scale 2^28 at TP=2 x DP=2: the first iterations overflow;
    found_inf (the gradient norm over the model-parallel group not finite) skips them on
    every rank together: the logged loss scales are megatron-core's DynamicGradScaler's on
    the logged overflow sequence, and each tensor-parallel rank's checkpoint (written by that
    rank) holds that scaler's state and a scheduler that stepped for the advanced iterations
    only (measured when written: 9 of 20 skipped, the single-process run skips 8: one
    borderline overflow falls the other way with 16-bit sums over two ranks)."""
    flags = ["--fp16", "--initial-loss-scale", 2**28, "--save-interval", 100]
    got, _ = run_device("gpt2", model_args(data, "gpt2", flags + TP2DP2 + ["--save",
                                                                           tmp_path / "ck"]),
                        tmp_path / "dev.jsonl")
    got = [r for r in got if r["kind"] == "train"]
    skips = "".join(str(r["skipped"]) for r in got)
    assert skips.startswith("11") and "0" in skips, skips
    scales, ref = megatron_scales(scaler_module, 2.0**28, skips)
    assert [r["loss_scale"] for r in got] == scales
    want = ref.state_dict()
    for mp in ("mp_rank_00", "mp_rank_01"):
        ck = _torch_load(tmp_path / "ck" / "iter_0000020" / mp / "model_optim_rng.pt")
        ours = ck["optimizer"]["grad_scaler"]
        assert torch.equal(ours["scale"], want["scale"]), mp
        assert (ours["growth_tracker"], ours["hysteresis_tracker"]) == \
            (want["growth_tracker"], want["hysteresis_tracker"]), mp
        assert ck["opt_param_scheduler"]["num_steps"] == skips.count("0") * 12, mp


def _shard_files(ck):
    it = ck / "iter_0000020"
    return sorted(p.relative_to(it) for p in it.rglob("*.pt"))


def test_distributed_optimizer_on_device(data, tmp_path):  # noqa: F811
    arch, dist = "gpt2", TP2DP2 + ["--use-distributed-optimizer"]
    plain, _ = run_device(arch, model_args(data, arch, TP2DP2), tmp_path / "plain.jsonl")
    save = ["--save", tmp_path / "dev", "--save-interval", 100]
    got, err = run_device(arch, model_args(data, arch, dist + save), tmp_path / "dist.jsonl")
    assert_same_records(plain, got, "distributed optimizer on the device")
    _assert_memory_as_planned(err)
    save = ["--save", tmp_path / "cpu", "--save-interval", 100, "--device", "cpu"]
    run_train(4, model_args(data, arch, dist + save), tmp_path / "cpu.jsonl")
    files = _shard_files(tmp_path / "cpu")
    assert [str(f) for f in files] == ["mp_rank_00/distrib_optim.pt",
                                       "mp_rank_00/model_optim_rng.pt",
                                       "mp_rank_01/distrib_optim.pt",
                                       "mp_rank_01/model_optim_rng.pt"]
    assert _shard_files(tmp_path / "dev") == files
    for f in files:
        a = _torch_load(tmp_path / "dev" / "iter_0000020" / f)
        b = _torch_load(tmp_path / "cpu" / "iter_0000020" / f)
        if f.name == "model_optim_rng.pt":
            _assert_close_tensors(a["model"], b["model"], lambda t: 1e-2 * LR, f"{f} model")
            assert a["iteration"] == b["iteration"] == 20
            continue
        ta, tb = a[0][(torch.float32, torch.float32)], b[0][(torch.float32, torch.float32)]
        assert ta["numel_unpadded"] == tb["numel_unpadded"]
        _assert_close_tensors({"param": ta["param"]}, {"param": tb["param"]},
                              lambda t: 1e-2 * LR, f"{f}")
        for k in ("exp_avg", "exp_avg_sq"):
            _assert_close_tensors({k: ta[k]}, {k: tb[k]},
                                  lambda x: 1e-4 * float(x.abs().max()), f"{f}")


def _model_tensors(shard):
    """model_optim_rng.pt's model tensors of a shard folder (no extra states)."""
    model = _torch_load(shard / "model_optim_rng.pt")["model"]
    return {k: t for k, t in model.items() if isinstance(t, torch.Tensor)}


H16_DTYPE = {"bf16": torch.bfloat16, "fp16": torch.float16}


@pytest.mark.parametrize("prec", sorted(H16_FLAGS))
def test_h16_distributed_optimizer_on_device(data, prec, tmp_path):  # noqa: F811
    """--use-distributed-optimizer with --bf16 / --fp16 at TP=2 x DP=2 (fp32 gradients
    reduce-scattered, AdamW on the shard's fp32 masters, the 16-bit parameters all-gathered)
    against the same 16-bit layout without it: the same losses within 1e-5 relative and loss
    scales, rank 0 allocating the planned device bytes and moving the --dry-run plan's bytes.
    Each model shard's checkpoint is Megatron's mixed-precision one: model_optim_rng.pt's
    model holds the 16-bit weights, distrib_optim.pt is keyed by megatron-core's
    (param dtype, grad dtype) = (16-bit, float32) and its 'param' holds fp32 masters within
    1e-2 x lr of the plain run's (its optimizer's fp32_from_fp16_params; a stale shard is 20
    steps away) whose 16-bit rounding is the model's weights (measured when written: the
    same losses bit for bit in bf16 and fp16)."""
    flags = H16_FLAGS[prec] + TP2DP2 + ["--save-interval", 100]
    plain, _ = run_device("gpt2", model_args(data, "gpt2", flags + ["--save", tmp_path / "a"]),
                          tmp_path / "plain.jsonl")
    args = model_args(data, "gpt2", flags + ["--use-distributed-optimizer",
                                             "--save", tmp_path / "b"])
    got, err = run_device("gpt2", args, tmp_path / "dist.jsonl")
    assert_near(plain, got, 1e-5, f"{prec} distributed optimizer")
    _assert_memory_as_planned(err)
    plan = conftest.run_mg([_emu(), *args, "--device", "cuda", "--dry-run"],
                           env={"WORLD_SIZE": "4", **ENV}).stdout
    assert _totals(err, "measured") == _totals(plan, "total"), (err, plan)
    dt = H16_DTYPE[prec]
    # the values of a buffer or of tensors, sorted (the buffer's alignment gaps are zeros):
    # sorted matching is the closest one, so two runs' masters compare within a bound
    values = lambda x: x[x != 0].sort().values  # noqa: E731
    for mp in ("mp_rank_00", "mp_rank_01"):
        ck = _torch_load(tmp_path / "a" / "iter_0000020" / mp / "model_optim_rng.pt")
        masters = torch.cat([t.flatten() for group in ck["optimizer"]["fp32_from_fp16_params"]
                             for t in group])
        weights = _model_tensors(tmp_path / "b" / "iter_0000020" / mp)
        assert {t.dtype for t in weights.values()} == {dt}, mp
        state = _torch_load(tmp_path / "b" / "iter_0000020" / mp / "distrib_optim.pt")
        (key, buf), = state[0].items()
        assert key == (dt, torch.float32), (mp, key)
        assert buf["param"].dtype == torch.float32, mp
        a, b = values(masters), values(buf["param"])
        assert a.shape == b.shape, mp
        gap = float((a - b).abs().max())
        assert gap <= 1e-2 * LR, f"{prec} {mp} masters: max difference {gap:.3g}"
        flat = torch.cat([t.flatten().float() for t in weights.values()])
        assert torch.equal(values(buf["param"].to(dt).float()), values(flat)), mp


def test_dry_run_plans_each_stage(data):  # noqa: F811
    """Every stage's line: the first stage holds the word embeddings, the last the final norm
    and the output layer's copy of them; the plan fits the emulated 80 GiB."""
    p = conftest.run_mg([_emu(), *model_args(data, "gpt2", TP2PP2), "--device", "cuda",
                         "--dry-run"], env={"WORLD_SIZE": "4", **ENV})
    stages = re.findall(r"^device memory per rank \(--device cuda, fp32\), pipeline stage "
                        r"(\d) of 2: parameters ([\d.]+) MiB", p.stdout, re.M)
    assert [s for s, _ in stages] == ["0", "1"], p.stdout
    assert "the plan fits" in p.stdout, p.stdout
