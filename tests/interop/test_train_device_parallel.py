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
    work would read stale data), Llama in the random thread order.
  - TP=2 x DP=2 with --use-distributed-optimizer on the device (gradients reduce-scattered and
    parameters all-gathered in device buffers): losses and grad norms equal the device run
    without it within 1e-5 relative, and its checkpoint (model_optim_rng.pt and
    distrib_optim.pt of each model shard) has the CPU distributed-optimizer run's tensors:
    same names, shapes and dtypes, values within the drift of 20 Adam steps.
  - the TP=2 x PP=2 device run's checkpoint exported to Hugging Face by mg-convert (TP and PP
    merged): transformers' logits on random ids equal mg-train's model on the exported weights.
  - --dry-run --device cuda plans every pipeline stage's device memory.

mpirun --oversubscribe --allow-run-as-root (a missing mpirun fails); OMP_NUM_THREADS=1.
"""
import json
import re

import pytest
import torch

import conftest
from test_train_ckpt import _torch_load
from test_train_device import _assert_close_tensors, _assert_memory_as_planned, _emu
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


def test_dry_run_plans_each_stage(data):  # noqa: F811
    """Every stage's line: the first stage holds the word embeddings, the last the final norm
    and the output layer's copy of them; the plan fits the emulated 80 GiB."""
    p = conftest.run_mg([_emu(), *model_args(data, "gpt2", TP2PP2), "--device", "cuda",
                         "--dry-run"], env={"WORLD_SIZE": "4", **ENV})
    stages = re.findall(r"^device memory per rank \(--device cuda, fp32\), pipeline stage "
                        r"(\d) of 2: parameters ([\d.]+) MiB", p.stdout, re.M)
    assert [s for s, _ in stages] == ["0", "1"], p.stdout
    assert "the plan fits" in p.stdout, p.stdout
