"""mg-train --device cuda of the emulation build (`make emu`: build-emu/bin/mg-train, whose
CUDA backend runs kernels/cuda/*.cu, the CUDA runtime and cuBLASLt on the host emulator,
docs/CUDA_EMU.md) against the CPU backend of the real build (bin/mg-train --device cpu), on
the tiny GPT-2 and Llama of test_train_run.py (botchan, 2 layers, hidden 64, 8 x 64 tokens
per iteration), 20 iterations each at lr 3e-3 (test_train_run's 1e-2 makes a grad-norm spike
near iteration 20 that turns 1e-9 differences into 1e-5 ones within one step):

  - fp32: every iteration's loss and the validation losses equal the CPU backend's within
    1e-5 relative (measured when written: within 6e-9), the grad norms too (3e-6); the checkpoint
    the device run writes (parameters and Adam moments downloaded from the device) equals the
    CPU run's within the drift of 20 Adam steps (below). Llama runs under the emulator's
    random thread order (MGK_EMU_ORDER=random:1), GPT-2 under the forward order with its
    streams mode "late" (MGK_EMU_STREAMS=late: the input uploads on the copy stream run only
    when an event wait or a synchronisation needs them, so a missing wait would show; it
    does: without the compute stream's wait every loss reads 0).
  - --bf16 (bf16 weights and activations, fp32 master weights, gradients and moments): the
    losses stay within BF16_REL = 2e-3 relative of the fp32 CPU run's (measured when written:
    2.3e-4 GPT-2, 1.2e-4 Llama) and fall; the checkpoint holds the fp32
    masters (not bf16-rounded values) in Megatron's mixed-precision layout (the model
    tensors in bf16, test_train_mp_ckpt.py), and exported to Hugging Face (mg-convert:
    bf16 weights) gives transformers' logits equal to mg-train's model on those weights
    (test_train_ckpt.assert_hf_export_matches).
  - --fp16 --loss-scale 1 (fp16 weights and activations, fp32 masters, gradients and moments;
    no loss scaling: Megatron's grad scaler is not supported yet, so plain --fp16 is refused):
    the losses stay within FP16_REL = 5e-4 relative of the fp32 CPU run's (measured when
    written: 1.7e-5 GPT-2, 1.1e-4 Llama, whose small gradients lose bits to fp16's range
    without a loss scale) and fall, and differ from the --bf16 run's (fp16 kernels ran).
  - memory: every device run allocates exactly the group bytes that --dry-run --device cuda
    plans (train/device_plan.h), which the dry run checks against the device's memory.
  - the device choice: --device cpu and auto on the emulation build stay on the CPU (the
    emulated device is taken only when asked for); another --device is a usage error;
    --bf16 and --fp16 on the CPU are refused (exit 2).

The emulation build must exist (`make emu`, which `make test` runs): a missing binary fails
the test. OMP_NUM_THREADS=1 (results, not speed).
"""
import json
import os
import re

import pytest
import torch

import conftest
from test_train_ckpt import _torch_load, assert_hf_export_matches
from test_train_run import _train_args, botchan  # noqa: F401 - botchan is a fixture

ENV = {"OMP_NUM_THREADS": "1"}
EMU = conftest.ROOT / os.environ.get("MG_EMU_BIN", "build-emu/bin") / "mg-train"
ITERS = 20
LR = 3e-3
REL = 1e-5
BF16_REL = 2e-3
FP16_REL = 5e-4


def _emu():
    if not EMU.is_file():
        pytest.fail(f"{EMU} was not built: run `make emu` (NVIDIA's CUDA headers needed, "
                    "docs/CUDA_EMU.md)")
    return str(EMU)


def _args(data, arch, extra=()):
    return _train_args(data, arch, ITERS, ["--lr", LR, "--min-lr", LR / 100, "--log-interval", 5,
                                           "--eval-interval", 10, "--eval-iters", 2, *extra])


def _run(prog, data, arch, tmp_path, name, extra=(), env=()):
    """Trains ITERS iterations; returns the process and the metrics file's records."""
    metrics = tmp_path / f"{name}.jsonl"
    args = _args(data, arch, ["--log-file", metrics, *extra])
    p = conftest.run_mg([prog] + args[1:], env={**ENV, **dict(env)})
    return p, [json.loads(line) for line in open(metrics)]


def _rel(a, b):
    return abs(a - b) / max(abs(a), abs(b))


def _assert_same_records(dev, cpu, rel, what):
    assert [(r["kind"], r["iteration"]) for r in dev] == \
        [(r["kind"], r["iteration"]) for r in cpu]
    assert sum(r["kind"] == "train" for r in cpu) == ITERS
    worst = max((_rel(d["loss"], c["loss"]), c["kind"], c["iteration"])
                for d, c in zip(dev, cpu))
    assert worst[0] <= rel, f"{what}: loss differs by {worst[0]:.3g} relative at {worst[1:]}"
    assert all(d["skipped"] == 0 and d["nan"] == 0 for d in dev if d["kind"] == "train")
    train = [d["loss"] for d in dev if d["kind"] == "train"]
    assert train[-1] < train[0] - 0.5, f"{what}: the loss does not fall: {train}"


def _ckpt(d):
    return _torch_load(d / f"iter_{ITERS:07d}" / "mp_rank_00" / "model_optim_rng.pt")


def _assert_close_tensors(dev, cpu, atol, where):
    """fp32, the same names and shapes, values within atol(t) of the CPU run's tensor t."""
    assert dev.keys() == cpu.keys()
    for name, t in cpu.items():
        d = dev[name]
        assert d.dtype == torch.float32 and d.shape == t.shape, f"{where} {name}"
        err = float((d - t).abs().max())
        assert err <= atol(t), f"{where} {name}: max difference {err:.3g} > {atol(t):.3g}"


def _assert_same_checkpoint(dev, cpu, arch):
    """Adam's update m / (sqrt(v) + eps) turns a last-bit difference of a near-zero gradient
    into a difference up to a whole step (lr), so the parameters are compared within 1% of
    one step and the moments within 1e-4 of each tensor's largest value (measured when
    written: 1.3e-3 of a step, 8e-6 relative); a stale or wrong download differs by far
    more."""
    a, b = _ckpt(dev), _ckpt(cpu)
    _assert_close_tensors(a["model"], b["model"], lambda t: 1e-2 * LR, f"{arch} model")
    for i, s in b["optimizer"]["state"].items():
        t = a["optimizer"]["state"][i]
        assert float(t["step"]) == float(s["step"]) == ITERS
        moments = ("exp_avg", "exp_avg_sq")
        _assert_close_tensors({k: t[k] for k in moments}, {k: s[k] for k in moments},
                              lambda x: 1e-4 * float(x.abs().max()), f"{arch} parameter {i}")


def _assert_memory_as_planned(stderr):
    """The device groups took exactly the bytes --dry-run plans (train/device_plan.h)."""
    m = re.search(r"device memory: (\d+) bytes \([\d.]+ MiB\) allocated by the groups, "
                  r"planned (\d+); kernel workspaces ([\d.]+) MiB", stderr)
    assert m and m.group(1) == m.group(2) and float(m.group(3)) > 0, stderr


@pytest.mark.parametrize("arch,order,streams", [("gpt2", "fwd", "late"),
                                                ("llama", "random:1", "issue")])
def test_fp32_device_equals_cpu(botchan, arch, order, streams, tmp_path):  # noqa: F811
    ck_dev, ck_cpu = tmp_path / "ck_dev", tmp_path / "ck_cpu"
    p, dev = _run(_emu(), botchan, arch, tmp_path, "dev",
                  ["--device", "cuda", "--save", ck_dev, "--save-interval", ITERS],
                  {"MGK_EMU_ORDER": order, "MGK_EMU_STREAMS": streams})
    assert re.search(r"device cuda:0 \(mgk-emu \(emulated", p.stderr), p.stderr
    assert re.search(r"device time per iteration \(CUDA events, 19 iterations after the "
                     r"first\): [\d.]+ ms", p.stderr), p.stderr
    _assert_memory_as_planned(p.stderr)
    _, cpu = _run("mg-train", botchan, arch, tmp_path, "cpu",
                  ["--device", "cpu", "--save", ck_cpu, "--save-interval", ITERS])
    _assert_same_records(dev, cpu, REL, f"{arch} fp32")
    for d, c in zip(dev, cpu):
        if c["kind"] == "train":
            assert _rel(d["grad_norm"], c["grad_norm"]) <= REL, (arch, c["iteration"])
    _assert_same_checkpoint(ck_dev, ck_cpu, arch)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_bf16_device(botchan, arch, tmp_path):  # noqa: F811
    ck = tmp_path / "ck"
    p, dev = _run(_emu(), botchan, arch, tmp_path, "dev",
                  ["--device", "cuda", "--bf16", "--save", ck, "--save-interval", ITERS])
    _, cpu = _run("mg-train", botchan, arch, tmp_path, "cpu", ["--device", "cpu"])
    _assert_same_records(dev, cpu, BF16_REL, f"{arch} bf16")
    _assert_memory_as_planned(p.stderr)
    assert any(_rel(d["loss"], c["loss"]) > 1e-5 for d, c in zip(dev, cpu))  # bf16 ran
    sd = _ckpt(ck)
    masters = torch.cat([t.flatten() for g in sd["optimizer"]["fp32_from_fp16_params"]
                         for t in g])
    assert masters.dtype == torch.float32
    assert bool((masters.view(torch.int32) & 0xFFFF).any()), "bf16-rounded, not fp32 masters"
    assert {t.dtype for t in sd["model"].values()} == {torch.bfloat16}
    args = _args(botchan, arch)
    assert_hf_export_matches(ck, ITERS, tmp_path / "hf", args, botchan["vocab"], 64, tmp_path)


def _worst_rel(dev, cpu):
    return max(_rel(d["loss"], c["loss"]) for d, c in zip(dev, cpu))


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_fp16_device(botchan, arch, tmp_path):  # noqa: F811
    p, dev = _run(_emu(), botchan, arch, tmp_path, "dev",
                  ["--device", "cuda", "--fp16", "--loss-scale", 1])
    _, cpu = _run("mg-train", botchan, arch, tmp_path, "cpu", ["--device", "cpu"])
    _, bf = _run(_emu(), botchan, arch, tmp_path, "bf16", ["--device", "cuda", "--bf16"])
    _assert_same_records(dev, cpu, FP16_REL, f"{arch} fp16")
    _assert_memory_as_planned(p.stderr)
    assert _worst_rel(dev, cpu) > 1e-6  # fp16 ran
    assert _worst_rel(dev, bf) > 1e-6  # and not as bf16


def test_device_choice(botchan, tmp_path):  # noqa: F811
    one = ["--train-iters", 1, "--lr-warmup-iters", 0, "--eval-iters", 0]
    for dev in ("cpu", "auto"):
        p = conftest.run_mg([_emu()] + _args(botchan, "gpt2")[1:] + ["--device", dev] + one,
                            env=ENV)
        assert "; device cpu; " in p.stderr, (dev, p.stderr)
    p = conftest.run_mg(_args(botchan, "gpt2") + ["--device", "gpu"], check=False, env=ENV)
    assert p.returncode == 2 and "--device" in p.stderr, p.stderr
    for prec in ("--bf16", "--fp16"):
        p = conftest.run_mg(_args(botchan, "gpt2") + ["--device", "cpu", prec], check=False,
                            env=ENV)
        assert p.returncode == 2 and f"not supported on CPU: {prec}" in p.stderr, p.stderr


def test_dry_run_device_plan(botchan):  # noqa: F811
    """--dry-run --device cuda plans the device memory by group, bf16 adding the bf16 weight
    copy (half the parameters' bytes) and planning bf16 activations (less than the fp32 arena,
    more than half of it: the statistics stay fp32), fp16 the same bytes as bf16, and checks
    it against the (emulated, 80 GiB) device;
    the GPT-2 124M shape of the benchmark (B 16, T 1024) in bf16 fits."""
    plans = {}
    for prec in ([], ["--bf16"], ["--fp16"]):
        p = conftest.run_mg([_emu()] + _args(botchan, "gpt2")[1:] +
                            ["--device", "cuda", "--dry-run", *prec], env=ENV)
        m = re.search(r"^device memory per rank \(--device cuda, (fp32|bf16|fp16)\): "
                      r"parameters ([\d.]+) MiB, gradients ([\d.]+) MiB, (?:bf16|fp16) weights "
                      r"([\d.]+) MiB, "
                      r"Adam moments [\d.]+ MiB, activations ([\d.]+) MiB .*; total [\d.]+ MiB",
                      p.stdout, re.M)
        assert m, p.stdout
        assert re.search(r"^device mgk-emu \(emulated cc 9\.0 on CPU\): 81920\.00 MiB: the "
                         r"plan fits$", p.stdout, re.M), p.stdout
        plans[m.group(1)] = [float(x) for x in m.groups()[1:]]
    fp32, bf16 = plans["fp32"], plans["bf16"]
    assert plans["fp16"] == bf16
    assert fp32[0] == fp32[1] == bf16[0] and fp32[2] == 0
    assert abs(bf16[2] - fp32[0] / 2) < 0.01
    assert fp32[3] / 2 < bf16[3] < fp32[3]  # bf16 activations, fp32 statistics
    big = ["--num-layers", 12, "--hidden-size", 768, "--num-attention-heads", 12,
           "--seq-length", 1024, "--max-position-embeddings", 1024, "--vocab-size", 50257,
           "--micro-batch-size", 16, "--global-batch-size", 16, "--train-iters", 10,
           "--lr", "6e-4", "--mock-data", "--tokenizer-type", "NullTokenizer"]
    p = conftest.run_mg([_emu(), "--dry-run", "--device", "cuda", "--bf16", *big], env=ENV)
    assert "the plan fits" in p.stdout, p.stdout


def _real_gpu():
    """The name of the GPU bin/mg-train (the nvcc build) sees, or None: its --dry-run
    --device cuda names a visible device."""
    p = conftest.run_mg(["mg-train", "--dry-run", "--device", "cuda", "--num-layers", 1,
                         "--hidden-size", 32, "--num-attention-heads", 2, "--seq-length", 16,
                         "--max-position-embeddings", 16, "--vocab-size", 100,
                         "--micro-batch-size", 1, "--train-iters", 1, "--lr", "1e-3"],
                        check=False, env=ENV)
    m = re.search(r"^device (.*): [\d.]+ MiB: the plan fits$", p.stdout, re.M)
    return m.group(1) if m else None


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("prec", ["fp32", "bf16", "fp16"])
def test_real_gpu_equals_cpu(botchan, arch, prec, tmp_path):  # noqa: F811
    """Where a GPU is visible: bin/mg-train --device cuda (the nvcc kernels, cuBLASLt) against
    its CPU backend, as the emulated runs above. The GPU sums in other orders (cuBLASLt's
    kernels, fp32 atomics), so fp32 is held to 1e-4 relative instead of 1e-5; bf16 and fp16
    (--loss-scale 1) to the emulated bounds. The device groups allocate what --dry-run plans."""
    name = _real_gpu()
    if name is None:
        pytest.skip("no CUDA GPU visible to bin/mg-train")
    extra = ["--device", "cuda"] + {"fp32": [], "bf16": ["--bf16"],
                                     "fp16": ["--fp16", "--loss-scale", 1]}[prec]
    p, dev = _run("mg-train", botchan, arch, tmp_path, "dev", extra)
    assert f"device cuda:0 ({name})" in p.stderr, p.stderr
    _assert_memory_as_planned(p.stderr)
    _, cpu = _run("mg-train", botchan, arch, tmp_path, "cpu", ["--device", "cpu"])
    rel = {"fp32": 1e-4, "bf16": BF16_REL, "fp16": FP16_REL}[prec]
    _assert_same_records(dev, cpu, rel, f"{arch} {prec} GPU")
