"""mg-train's activation recomputation (--recompute-granularity full with --recompute-method
uniform or block, and selective / --recompute-activations) on the CPU backend:

- over 20 iterations the losses, gradient norms and validation losses are bit for bit those
  of the same run without recomputation (the forward is deterministic), single process and
  TP=2 x PP=2 (also with --sequence-parallel) under mpirun, for the tiny GPT-2 and Llama of
  test_train_parallel.py;
- the activation arenas a run allocates (its note on stderr, rank 0 = stage 0) are exactly
  the bytes --dry-run plans for them (acts_plan.h; Megatron's theoretical_memory_usage.py
  has no formula for full recomputation, and its selective one assumes attention scores
  that mg-train's arena plan counts itself);
- the device path of the emulation build (`make emu`, --device cuda, fp32 and --bf16) logs
  bit for bit the losses of its own run without recomputation, and allocates exactly the
  device memory its --dry-run plans, the activations less than without recomputation (a
  chunk's or the attention's buffers shared by the layers: a backward that did not re-run
  the forward would read another layer's values); so does TP=2 x PP=2 on the device under
  mpirun (NCCL on the emulated devices), rank 0 with exactly its planned device bytes;
- the measured peak RSS of a run with long sequences falls by the planned saving of the
  arenas (within 2% + 2 MiB): bytes, not time.
"""
import os
import re
import subprocess
import sys

import pytest

import conftest
from test_train_parallel import V, data, model_args, run_train  # noqa: F401
from test_train_device import _args as device_args
from test_train_device import _assert_memory_as_planned, _emu, _run
from test_train_device_parallel import run_device
from test_train_parallel_ckpt import stripped
from test_train_run import ARCHS, botchan  # noqa: F401 - botchan is a fixture

TP2PP2 = ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2]
MODES = {
    "uniform": ["--recompute-granularity", "full", "--recompute-method", "uniform",
                "--recompute-num-layers", 2],
    "block": ["--recompute-granularity", "full", "--recompute-method", "block",
              "--recompute-num-layers", 1],
    "selective": ["--recompute-activations"],
}
SINGLE = {
    "uniform": ["--recompute-granularity", "full", "--recompute-method", "uniform",
                "--recompute-num-layers", 4],  # chunks of 4 and 2 layers
    "block": ["--recompute-granularity", "full", "--recompute-method", "block",
              "--recompute-num-layers", 2],
    "selective": ["--recompute-granularity", "selective"],
}
NOTE = re.compile(r"activation arenas with recomputation: (\d+) x (\d+) bytes")
PLAN = re.compile(r"activation arenas per rank \(CPU, fp32, as allocated\), .*: stage (\d+) "
                  r"\(\d+ layers\): (\d+) x (\d+) bytes = [\d.]+ MiB; without recomputation "
                  r"(\d+) x (\d+) bytes")


def planned(args, nproc):
    """(stage, slots, arena bytes, slots without, arena bytes without) of --dry-run."""
    out = conftest.run_mg(["mg-train", *args, "--dry-run"],
                          env={"WORLD_SIZE": str(nproc)}).stdout
    m = PLAN.search(out)
    assert m, out
    return tuple(int(x) for x in m.groups())


def check_run(ref, arch, data, nproc, flags, mode, tmp_path):  # noqa: F811
    args = model_args(data, arch, flags + MODES[mode] if nproc > 1 else flags + SINGLE[mode])
    got, err = run_train(nproc, args, tmp_path / "m.jsonl")
    assert stripped(got) == stripped(ref), f"{arch} {mode} x{nproc}: not bit-identical"
    note = NOTE.search(err)
    assert note, err
    stage, slots, arena, _, _ = planned(args, nproc)
    assert (stage, slots, arena) == (0, int(note[1]), int(note[2])), (err, stage, slots, arena)


@pytest.fixture(scope="module", params=sorted(ARCHS))
def refs(request, data, tmp_path_factory):  # noqa: F811
    arch = request.param
    d = tmp_path_factory.mktemp(f"rc_{arch}")
    single, _ = run_train(1, model_args(data, arch), d / "s.jsonl")
    tp2pp2, _ = run_train(4, model_args(data, arch, TP2PP2), d / "p.jsonl")
    sp, _ = run_train(4, model_args(data, arch, TP2PP2 + ["--sequence-parallel"]),
                      d / "sp.jsonl")
    assert len([r for r in single if r["kind"] == "train"]) == 20
    return arch, single, tp2pp2, sp


@pytest.mark.parametrize("mode", sorted(SINGLE))
def test_single_process_bit_identical(refs, data, mode, tmp_path):  # noqa: F811
    arch, single, _, _ = refs
    check_run(single, arch, data, 1, [], mode, tmp_path)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_tp2_pp2_bit_identical(refs, data, mode, tmp_path):  # noqa: F811
    arch, _, tp2pp2, sp = refs
    check_run(tp2pp2, arch, data, 4, TP2PP2, mode, tmp_path)
    if mode == "block":
        check_run(sp, arch, data, 4, TP2PP2 + ["--sequence-parallel"], mode, tmp_path)


# Started from a small Python rather than from pytest: a child's peak RSS counts what its
# forked parent held before exec.
RSS_WRAPPER = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.buffer.write(err)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024)
"""


def peak_rss(args):
    """Peak resident bytes of one single-process mg-train run, and its stderr."""
    mg = str(conftest.bin_dir_path() / "mg-train")
    p = subprocess.run([sys.executable, "-c", RSS_WRAPPER, mg, *map(str, args)],
                       capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"})
    status, rss = p.stdout.split()
    assert status == "0", p.stderr
    return int(rss), p.stderr


@pytest.mark.parametrize("mode", ["uniform1", "uniform4", "selective"])
def test_peak_rss_falls_by_the_planned_saving(data, mode):  # noqa: F811
    """Long sequences (T = 512, micro-batch 4, 8 heads): the arena (the CPU attention keeps
    its T x T probabilities) is hundreds of MiB, far above the process's other memory."""
    base = ["--num-layers", 8, "--hidden-size", 64, "--num-attention-heads", 8,
            "--seq-length", 512, "--max-position-embeddings", 512, "--micro-batch-size", 4,
            "--global-batch-size", 4, "--train-iters", 2, "--lr", "1e-3", "--vocab-size", V,
            "--data-path", data, "--split", "90,10,0", "--eval-iters", 0]
    rc = {"uniform1": MODES["uniform"][:-1] + [1], "uniform4": MODES["uniform"][:-1] + [4],
          "selective": MODES["selective"]}[mode]
    _, _, arena, _, arena_without = planned(base + rc, 1)
    without, _ = peak_rss(base)
    with_rc, err = peak_rss(base + rc)
    assert f"1 x {arena} bytes" in err, err
    saving = arena_without - arena
    assert saving > 100 * 2**20
    assert abs((without - with_rc) - saving) <= 0.02 * saving + 2 * 2**20, \
        (without, with_rc, saving)


DEVICE_MODES = {
    "uniform": ["--recompute-granularity", "full", "--recompute-method", "uniform",
                "--recompute-num-layers", 1],
    "block": ["--recompute-granularity", "full", "--recompute-method", "block",
              "--recompute-num-layers", 2],
    "selective": ["--recompute-granularity", "selective"],
}
DEVICE_ACTS = re.compile(r"^device memory per rank \(--device cuda, (?:fp32|bf16)\): .* "
                         r"activations ([\d.]+) MiB", re.M)


def device_activations(data, arch, flags):  # noqa: F811
    args = [_emu(), *device_args(data, arch)[1:], "--device", "cuda", "--dry-run", *flags]
    out = conftest.run_mg(args, env={"OMP_NUM_THREADS": "1"}).stdout
    m = DEVICE_ACTS.search(out)
    assert m, out
    return float(m[1])


@pytest.mark.parametrize("arch,prec,modes", [
    ("gpt2", "fp32", ["uniform", "selective"]), ("llama", "fp32", ["block", "selective"]),
    ("gpt2", "bf16", ["uniform", "selective"]), ("llama", "bf16", ["block"])])
def test_device_bit_identical(botchan, arch, prec, modes, tmp_path):  # noqa: F811
    dev = ["--device", "cuda"] + (["--bf16"] if prec == "bf16" else [])
    p, ref = _run(_emu(), botchan, arch, tmp_path, "ref", dev)
    _assert_memory_as_planned(p.stderr)
    none = device_activations(botchan, arch, dev[2:])
    for mode in modes:
        flags = DEVICE_MODES[mode]
        p, got = _run(_emu(), botchan, arch, tmp_path, mode, dev + flags)
        assert stripped(got) == stripped(ref), f"{arch} {prec} {mode}: not bit-identical"
        _assert_memory_as_planned(p.stderr)
        assert device_activations(botchan, arch, dev[2:] + flags) < none, mode


def test_device_tp2_pp2_bit_identical(data, tmp_path):  # noqa: F811
    ref, _ = run_device("gpt2", model_args(data, "gpt2", TP2PP2), tmp_path / "ref.jsonl")
    got, err = run_device("gpt2", model_args(data, "gpt2", TP2PP2 + MODES["uniform"]),
                          tmp_path / "rc.jsonl")
    assert stripped(got) == stripped(ref), "gpt2 TP2 x PP2 uniform on the device"
    _assert_memory_as_planned(err)
