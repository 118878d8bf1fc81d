"""Loss scaling in mg-train (train/grad_scaler.h, step.h, loop.c) against Megatron's rules.

megatron-core 0.16.1's get_megatron_optimizer gives a mixed-precision optimizer (--fp16,
--bf16 or --use-distributed-optimizer) a ConstantGradScaler with --loss-scale and a
DynamicGradScaler with --fp16; MixedPrecisionOptimizer.step multiplies the loss gradient by
the scale, unscales the main gradients, skips the update when one is inf/NaN (found_inf) and
updates the scaler; Megatron's train_step steps the lr scheduler after successful updates
only while the iteration and the consumed samples advance; training_log prints
`loss scale: {:.1f}`, leaves out the grad norm of a skipped iteration and counts the skipped
ones. The scaler's state_dict sits in the optimizer's state dict under 'grad_scaler'.

On the CPU (fast): the distributed optimizer's constant scaler (fp32) — a power-of-two scale
gives bit-identical losses, grad norms and checkpoints; a scale that overflows (1e39: inf in
float32, as torch.tensor([1e39]) is) skips every iteration: parameters, moments and step
count stay those of the checkpoint it resumed from, the scheduler stays behind and resumes
from there. The checkpoint's 'grad_scaler' of a dynamic scaler (build/tests/tools/ckpt_shards
after a sequence of updates) equals megatron-core's DynamicGradScaler.state_dict() after the
same updates, and megatron-core's load_state_dict reads it back.

On the emulation build (`make emu`, --device cuda --bf16; 1-2 s an iteration under load, so
3 iterations a run and no validation): --loss-scale 1 changes nothing bitwise, --loss-scale
1024 neither (measured when written: identical losses and grad norms; the test allows 1e-6
relative), --loss-scale 1e39 skips every iteration and leaves the fp32 masters (the
checkpoint's fp32_from_fp16_params) and the bf16 weights at their initialisation. With
--fp16 (issue 14's Done-when): the first iterations overflow from
--initial-loss-scale 2^28, the scales are megatron-core's DynamicGradScaler's on the same overflow sequence, the
log lines count the skipped iterations as training_log does, then the loss falls.
"""
import json
import os
import re
import types

import pytest
import torch

import conftest
from test_grad_scaler import dynamic_scaler_class
from test_train_ckpt import _ckpt_file, _torch_load
from test_train_run import _train_args, botchan  # noqa: F401 - botchan is a fixture

ENV = {"OMP_NUM_THREADS": "1"}
EMU = conftest.ROOT / os.environ.get("MG_EMU_BIN", "build-emu/bin") / "mg-train"
GBS = 8
TINY = ["--num-layers", "2", "--hidden-size", "8", "--num-attention-heads", "2",
        "--seq-length", "4", "--max-position-embeddings", "4", "--micro-batch-size", "1",
        "--global-batch-size", "4", "--train-iters", "10", "--lr", "1e-3", "--vocab-size", "100"]


def _run(data, iters, tmp_path, name, extra=(), prog=None):
    """mg-train on the tiny GPT-2 without validation; the process and its train records."""
    metrics = tmp_path / f"{name}.jsonl"
    args = _train_args(data, "gpt2", iters, ["--eval-iters", 0, "--log-file", metrics,
                                             *extra])
    if prog:
        args[0] = prog
    p = conftest.run_mg(args, env=ENV)
    return p, [r for r in map(json.loads, open(metrics)) if r["kind"] == "train"]


def _lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith(" [")]


def _adamw(ck):
    """torch's AdamW state dict in a checkpoint's optimizer dict (nested in the --bf16/--fp16
    layout, Float16OptimizerWithFloat16Params.state_dict)."""
    od = ck["optimizer"]
    return od["optimizer"] if "fp32_from_fp16_params" in od else od


def _masters(ck):
    """The fp32 masters of a --bf16/--fp16 checkpoint, in the optimizer's order."""
    return [t for g in ck["optimizer"]["fp32_from_fp16_params"] for t in g]


def _assert_same_state(a, b, what):
    """The model tensors, the masters, the moments and the step counts of two checkpoints,
    bit for bit."""
    assert a["model"].keys() == b["model"].keys()
    for k, t in a["model"].items():
        if isinstance(t, torch.Tensor):
            assert torch.equal(t, b["model"][k]), f"{what}: {k}"
    if "fp32_from_fp16_params" in a["optimizer"]:
        assert all(torch.equal(x, y) for x, y in zip(_masters(a), _masters(b), strict=True))
    sa, sb = _adamw(a)["state"], _adamw(b)["state"]
    assert sa.keys() == sb.keys()
    for i in sa:
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sa[i][k], sb[i][k]), f"{what}: parameter {i} {k}"


def _assert_same_records(a, b, rel=0.0):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for k in ("loss", "grad_norm"):
            assert abs(x[k] - y[k]) <= rel * abs(y[k]), (k, x, y)


# --- the checkpoint's grad_scaler against megatron-core -------------------------------

@pytest.fixture
def scaler_module(monkeypatch):
    """megatron-core's grad_scaler module on the CPU: its tensors lose their 'cuda' device,
    and load_state_dict's .cuda(current_device()) keeps the tensor where it is."""
    module = dynamic_scaler_class()
    cpu_torch = types.SimpleNamespace(max=torch.max, float=torch.float,
                                      cuda=types.SimpleNamespace(current_device=lambda: 0))
    cpu_torch.tensor = lambda data, dtype=None, device=None: torch.tensor(data, dtype=dtype)
    monkeypatch.setattr(module, "torch", cpu_torch)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)
    return module


def _shards_ckpt(tmp_path, flags, updates):
    tmp_path.mkdir(exist_ok=True)
    d = tmp_path / "ck"
    conftest.run_mg(["ckpt_shards", d, 5, "--scaler-updates", updates, *TINY, *flags])
    return _torch_load(_ckpt_file(d, 5))


def test_dynamic_scaler_state_as_megatron(tmp_path, scaler_module):
    updates = "1101000" + "0" * 5 + "111"
    ck = _shards_ckpt(tmp_path, ["--fp16", "--initial-loss-scale", "1024",
                                 "--loss-scale-window", "3", "--min-loss-scale", "64"], updates)
    ref = scaler_module.DynamicGradScaler(initial_scale=1024.0, min_scale=64.0,
                                          growth_factor=2.0, backoff_factor=0.5,
                                          growth_interval=3, hysteresis=2)
    for f in updates:
        ref.update(f == "1")
    ours, want = ck["optimizer"]["grad_scaler"], ref.state_dict()
    assert list(ours) == list(want)
    assert ours["scale"].dtype == want["scale"].dtype == torch.float32
    assert ours["scale"].shape == want["scale"].shape == (1,)
    assert torch.equal(ours["scale"], want["scale"])
    assert (ours["growth_tracker"], ours["hysteresis_tracker"]) == \
        (want["growth_tracker"], want["hysteresis_tracker"])
    # megatron-core's own load_state_dict takes it
    back = scaler_module.DynamicGradScaler(initial_scale=2.0**32, min_scale=1.0,
                                           growth_factor=2.0, backoff_factor=0.5,
                                           growth_interval=1000, hysteresis=2)
    back.load_state_dict(ck["optimizer"]["grad_scaler"])
    assert torch.equal(back.scale, want["scale"])
    assert back.state_dict()["hysteresis_tracker"] == want["hysteresis_tracker"]
    # the scheduler stepped for the successful updates only; the samples all count
    overflows = updates.count("1")
    assert ck["opt_param_scheduler"]["num_steps"] == (5 - overflows) * 4
    assert ck["args"].consumed_train_samples == 5 * 4


def test_constant_and_no_scaler_state(tmp_path, scaler_module):
    ck = _shards_ckpt(tmp_path / "bf16", ["--bf16", "--loss-scale", "8"], "")
    assert ck["optimizer"]["grad_scaler"] == scaler_module.ConstantGradScaler(8.0).state_dict()
    ck = _shards_ckpt(tmp_path / "fp32", ["--loss-scale", "8"], "")  # FP32Optimizer: none
    assert "grad_scaler" not in ck["optimizer"]
    assert ck["opt_param_scheduler"]["num_steps"] == 5 * 4


# --- CPU: the distributed optimizer's constant scaler -----------------------------------

DIST = ["--use-distributed-optimizer"]


def test_power_of_two_scale_changes_nothing(botchan, tmp_path):
    base, a = _run(botchan, 4, tmp_path, "base", [*DIST, "--save", tmp_path / "a"])
    scaled, b = _run(botchan, 4, tmp_path, "scaled",
                     [*DIST, "--loss-scale", 1024, "--save", tmp_path / "b"])
    assert [(r["loss"], r["grad_norm"]) for r in a] == [(r["loss"], r["grad_norm"]) for r in b]
    assert all(r["loss_scale"] == 1024 and r["skipped"] == 0 for r in b)
    assert all(" loss scale: 1024.0 | grad norm: " in line for line in _lines(scaled.stdout))
    assert all(" loss scale: 1.0 | grad norm: " in line for line in _lines(base.stdout))
    ca, cb = _torch_load(_ckpt_file(tmp_path / "a", 4)), _torch_load(_ckpt_file(tmp_path / "b", 4))
    _assert_same_state(ca, cb, "--loss-scale 1024")
    assert "grad_scaler" not in ca["optimizer"] and cb["optimizer"]["grad_scaler"] == {}


def test_plain_fp32_ignores_loss_scale(botchan, tmp_path):
    """Megatron's FP32Optimizer has no scaler: --loss-scale changes nothing, scale 1.0."""
    p, recs = _run(botchan, 2, tmp_path, "fp32", ["--loss-scale", 1e39])
    assert all(r["loss_scale"] == 1 and r["skipped"] == 0 for r in recs)
    assert all(" loss scale: 1.0 | grad norm: " in line for line in _lines(p.stdout))


def test_overflow_skips_and_keeps_state(botchan, tmp_path):
    """A 6-iteration schedule: 3 iterations, then 2 more from that checkpoint with a scale
    that overflows (inf): both skipped, the checkpoint at 5 holds the state of 3 and a
    scheduler 2 iterations behind; a third run from it (no scale) takes the learning rate
    Megatron's scheduler gives after 4 successful updates, which a plain resume from 3
    takes at iteration 4."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _, first = _run(botchan, 6, tmp_path, "first", [*DIST, "--save", a, "--exit-interval", 3])
    p, skip = _run(botchan, 6, tmp_path, "skip",
                   [*DIST, "--load", a, "--save", b, "--loss-scale", 1e39,
                    "--log-interval", 5, "--exit-interval", 5])
    assert [(r["iteration"], r["skipped"], r["loss_scale"], r["grad_norm"]) for r in skip] == \
        [(4, 1, None, None), (5, 1, None, None)]  # inf and NaN are null in JSON
    assert all(r["lr"] == first[-1]["lr"] for r in skip)  # the scheduler stands still
    [line] = _lines(p.stdout)
    assert re.search(r" iteration +5/ +6 \| consumed samples: +40 \|", line)
    # Megatron: no lm loss before an advanced iteration, scale inf, no grad norm
    assert re.search(r"\| global batch size: +8 \| loss scale: inf \| number of skipped "
                     r"iterations: +2 \| number of nan iterations: +0 \|$", line), line
    c3, c5 = _torch_load(_ckpt_file(a, 3)), _torch_load(_ckpt_file(b, 5))
    _assert_same_state(c3, c5, "skipped iterations")
    assert c5["iteration"] == 5 and c5["args"].consumed_train_samples == 5 * GBS
    assert c5["opt_param_scheduler"]["num_steps"] == 3 * GBS
    _, resumed = _run(botchan, 6, tmp_path, "resumed", [*DIST, "--load", b, "--save", c])
    _, plain = _run(botchan, 6, tmp_path, "plain", [*DIST, "--load", a, "--exit-interval", 4])
    assert resumed[0]["skipped"] == 0 and resumed[0]["lr"] == plain[0]["lr"]
    assert _torch_load(_ckpt_file(c, 6))["opt_param_scheduler"]["num_steps"] == 4 * GBS


# --- the emulated device: --bf16 with a constant scale ---------------------------------

def _emu():
    if not EMU.is_file():
        pytest.fail(f"{EMU} was not built: run `make emu` (docs/CUDA_EMU.md)")
    return str(EMU)


BF16 = ["--device", "cuda", "--bf16"]


def test_bf16_loss_scale_one_and_power_of_two(botchan, tmp_path):
    emu = _emu()
    _, base = _run(botchan, 3, tmp_path, "base", [*BF16, "--save", tmp_path / "a"], emu)
    _, one = _run(botchan, 3, tmp_path, "one",
                  [*BF16, "--loss-scale", 1, "--save", tmp_path / "b"], emu)
    _, pow2 = _run(botchan, 3, tmp_path, "pow2", [*BF16, "--loss-scale", 1024], emu)
    _assert_same_records(one, base)
    _assert_same_state(_torch_load(_ckpt_file(tmp_path / "a", 3)),
                       _torch_load(_ckpt_file(tmp_path / "b", 3)), "--loss-scale 1")
    _assert_same_records(pow2, base, rel=1e-6)
    assert [r["loss_scale"] for r in pow2] == [1024] * 3
    assert all(r["skipped"] == 0 for r in base + one + pow2)
    assert base[-1]["loss"] < base[0]["loss"]


def test_bf16_overflow_skips_every_iteration(botchan, tmp_path):
    emu = _emu()
    p, recs = _run(botchan, 2, tmp_path, "inf",
                   [*BF16, "--loss-scale", 1e39, "--save", tmp_path / "a", "--save-interval", 1],
                   emu)
    assert [(r["skipped"], r["lr"]) for r in recs] == [(1, 0.0), (1, 0.0)]  # warmup at 0
    assert all("| loss scale: inf | number of skipped iterations:   1 |" in line
               for line in _lines(p.stdout))
    init = tmp_path / "init"  # the initialisation, written by the same code without training
    conftest.run_mg(["ckpt_shards", init, 0, *_train_args(botchan, "gpt2", 2)[1:], "--bf16"])
    start = _torch_load(_ckpt_file(init, 0))
    for it in (1, 2):
        ck = _torch_load(_ckpt_file(tmp_path / "a", it))
        for k, t in start["model"].items():
            if isinstance(t, torch.Tensor):
                assert torch.equal(ck["model"][k], t), (it, k)
        assert all(torch.equal(x, y) for x, y in zip(_masters(ck), _masters(start), strict=True))
        for s in _adamw(ck)["state"].values():
            assert float(s["step"]) == 0 and not s["exp_avg"].any() and not s["exp_avg_sq"].any()
        assert ck["opt_param_scheduler"]["num_steps"] == 0


# --- the emulated device: --fp16 with the dynamic scaler (issue 14's Done-when) --------

def _megatron_line_fields(flags, interval):
    """Per printed iteration of training_log: (iteration, skipped in its interval, whether
    the line has an lm loss, whether it has a grad norm)."""
    out, count, seen = [], 0, False
    for i, f in enumerate(flags, 1):
        count += f == "1"
        seen = seen or f == "0"
        if i == 1 or i % interval == 0:
            out.append((i, count, seen, f == "0"))
            count = 0
    return out


def megatron_scales(scaler_module, initial, skips):
    """megatron-core's DynamicGradScaler (mg-train's defaults) from `initial` over the overflow
    flags skips ("1": overflow): (the scale after each update, the scaler)."""
    ref = scaler_module.DynamicGradScaler(initial_scale=initial, min_scale=1.0,
                                          growth_factor=2.0, backoff_factor=0.5,
                                          growth_interval=1000, hysteresis=2)
    scales = []
    for f in skips:
        ref.update(f == "1")
        scales.append(float(ref.scale.item()))
    return scales, ref


def test_fp16_overflow_lowers_the_scale_as_megatron(botchan, tmp_path, scaler_module):
    """--fp16 from --initial-loss-scale 2^28 (the tiny GPT-2's fp16 gradients overflow above
    about 2^22): the first iterations overflow and are skipped, the scale after each
    iteration is megatron-core's DynamicGradScaler's (hysteresis 2) on the same overflow
    sequence, the log lines count the skipped iterations as training_log does, then training
    proceeds and the loss falls (measured when written: 7 skipped, 2^28 -> 2^22, the
    advanced losses 7.35 -> 6.92 over 5 iterations)."""
    emu = _emu()
    metrics = tmp_path / "fp16.jsonl"
    args = _train_args(botchan, "gpt2", 12, ["--device", "cuda", "--fp16", "--initial-loss-scale",
                                             2**28, "--eval-iters", 0, "--log-interval", 4,
                                             "--log-file", metrics])
    p = conftest.run_mg([emu] + args[1:], env=ENV)
    recs = [r for r in map(json.loads, open(metrics)) if r["kind"] == "train"]
    flags = "".join(str(r["skipped"]) for r in recs)
    assert flags.startswith("11") and "0" in flags, flags
    want, _ = megatron_scales(scaler_module, 2.0**28, flags)
    assert [r["loss_scale"] for r in recs] == want
    lines = _lines(p.stdout)
    fields = _megatron_line_fields(flags, 4)
    assert len(lines) == len(fields)
    for line, (it, skipped, has_loss, has_norm) in zip(lines, fields):
        assert re.search(rf" iteration +{it}/ +12 \|", line), line
        assert f" loss scale: {want[it - 1]:.1f} |" in line, line
        assert f" number of skipped iterations: {skipped:3d} |" in line, line
        assert (" lm loss: " in line) == has_loss and (" grad norm: " in line) == has_norm, line
    advanced = [r["loss"] for r in recs if not r["skipped"]]
    assert advanced[-1] < advanced[0] - 0.2, advanced


def test_fp16_nan_loss_with_dynamic_scaling_goes_on(botchan, tmp_path):
    """Megatron's validate_args turns check_for_nan_in_loss_and_grad off for --fp16 with
    dynamic loss scaling (a non-finite loss is the scaler's signal): after a step with
    --lr 1e30 the fp16 weights are inf and the loss NaN/Inf, and the run goes on, each such
    iteration skipped and counted as a nan iteration. With a constant --loss-scale the check
    stays on, as in every other precision (pretrain_gpt.py loss_func: NaN or Inf is fatal):
    the run stops at the first non-finite loss with exit 1."""
    emu = _emu()
    blow_up = ["--device", "cuda", "--fp16", "--lr", "1e30", "--lr-warmup-iters", 0,
               "--min-lr", 0, "--log-interval", 1]
    p, recs = _run(botchan, 4, tmp_path, "dyn", [*blow_up, "--initial-loss-scale", 1], emu)
    assert [(r["nan"], r["skipped"]) for r in recs] == [(0, 0)] + [(1, 1)] * 3, recs
    assert all(r["loss"] is None and r["loss_scale"] == 1.0 for r in recs[1:])
    assert "| number of nan iterations:   1 |" in _lines(p.stdout)[-1], p.stdout
    args = _train_args(botchan, "gpt2", 4, ["--eval-iters", 0, *blow_up, "--loss-scale", 1])
    q = conftest.run_mg([emu] + args[1:], check=False, env=ENV)
    assert q.returncode == 1 and "NaN/Inf loss at iteration 2" in q.stderr, q.stderr
