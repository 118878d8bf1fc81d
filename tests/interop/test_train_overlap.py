"""--overlap-grad-reduce: the data-parallel gradients reduced bucket by bucket from the last
micro-batch's backward (train/grad_buckets.h) give the same bits as the one reduction after
the backward.

The models, data and processes are test_train_parallel.py's (6 layers, hidden 32, 6
micro-batches per iteration, 20 iterations, about 110 k parameters); --ddp-bucket-size 5000
cuts the first stage's buffer into several buckets (the test checks at least 4 in --dry-run's
plan). For each layout, the run with --overlap-grad-reduce logs exactly (==, not approx) the
losses, grad norms and validation losses of the run without it, and the communication the
comm layer counts on rank 0 equals --dry-run's plan (one all-reduce, or reduce-scatter and
all-gather, per bucket):
  - DP=2 (GPT-2, tied embeddings on one stage);
  - TP=2 x DP=2 with --sequence-parallel (GPT-2: the norms' and biases' gradients summed over
    the tensor group inside each bucket, before its data-parallel sum);
  - PP=2 x DP=2 (GPT-2: the tied embedding's bucket waits for the embedding group's sum after
    the schedule; the second stage has one bucket, as megatron-core's DDP);
  - DP=2, TP=2 x DP=2 and PP=2 x DP=2 with --use-distributed-optimizer (buckets
    reduce-scattered; under PP the shared embedding's own bucket waits for the schedule's end).
Exact equality holds because every gradient element goes through the same operations in the
same order (model-parallel sums, x 1/DP, the data-parallel sum in rank order); the bucket
boundaries only group the elements into calls.

On the CPU backend (the MPI backend) the collectives are blocking calls from the backward,
not nonblocking ones: a bucket's reduction does not run concurrently with the rest of the
backward.

--device cuda (the emulation build, `make emu`, NCCL over the host shim): DP=2, DP=2 with
the distributed optimizer and PP=2 x DP=2 again log the runs without overlap exactly (within
DIST_REL with the distributed optimizer), here with each bucket's collective on the
data-parallel group's communication stream after an event of the compute stream, and the
compute stream waiting for an event of the communication stream before the step; rank 0
allocates exactly the device bytes --dry-run plans (the buckets' staging buffer, or the
distributed optimizer's bucketed buffer, included). The runs
use the emulator's late streams (MGK_EMU_STREAMS=late), in which such a collective is queued
on its stream and runs only when something must see it: with the compute stream's wait
removed (comm_nccl.c n_async_join) the DP=2 run's first grad norm was 1.3235 instead of
1.4179 and the test failed. The other wait (the communication stream's for the compute
stream) is not exposed: the emulator runs kernels when they are launched.

mpirun --oversubscribe --allow-run-as-root; OMP_NUM_THREADS=1.
"""
import json
import re

import pytest

import conftest
from test_dist_optim_resume import megatron_form
from test_dist_train import _totals
from test_train_device import _assert_memory_as_planned, _emu
from test_train_parallel import data, model_args, mpirun, run_train  # noqa: F401
from test_train_parallel_ckpt import full_and_stopped, stripped

OVERLAP = ["--overlap-grad-reduce", "--ddp-bucket-size", 5000]
TP2 = ["--tensor-model-parallel-size", 2]
LAYOUTS = {
    "dp2": (2, []),
    "tp2-dp2-sp": (4, TP2 + ["--sequence-parallel"]),
    "pp2-dp2": (4, ["--pipeline-model-parallel-size", 2]),
    "dp2-distopt": (2, ["--use-distributed-optimizer"]),
    "tp2-dp2-distopt": (4, TP2 + ["--use-distributed-optimizer"]),
    "pp2-dp2-distopt": (4, ["--pipeline-model-parallel-size", 2, "--use-distributed-optimizer"]),
}
DIST_REL = 1e-9
GRAD_ROW = re.compile(r"^  data (all-reduce|reduce-scatter): (\d+) x \d+ bytes = \d+ bytes, "
                      r"gradients \(a bucket of", re.M)


def assert_same_run(ref, got, what, rel):
    """Every record's loss and grad norm equal (rel 0: ==) or within rel relative."""
    assert [(r["kind"], r["iteration"]) for r in got] == \
        [(r["kind"], r["iteration"]) for r in ref], what
    assert len([r for r in ref if r["kind"] == "train"]) == 20
    worst = 0.0
    for a, b in zip(ref, got):
        for k in ["loss", "grad_norm"] if a["kind"] == "train" else ["loss"]:
            worst = max(worst, abs(b[k] - a[k]) / abs(a[k]))
            assert b[k] == a[k] if rel == 0 else b[k] == pytest.approx(a[k], rel=rel), \
                f"{what}: {a['kind']} {k} at iteration {a['iteration']}: {b[k]!r} vs {a[k]!r}"
    print(f"{what}: largest relative difference {worst:.3g}")


def planned_buckets(args, nproc):
    """(--dry-run's stdout, the number of gradient buckets it plans on rank 0)."""
    plan = conftest.run_mg(["mg-train", *args, "--dry-run"],
                           env={"WORLD_SIZE": str(nproc)}).stdout
    return plan, sum(int(calls) for _, calls in GRAD_ROW.findall(plan))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_cpu_overlap_same_bits(data, layout, tmp_path):  # noqa: F811
    nproc, flags = LAYOUTS[layout]
    plain, _ = run_train(nproc, model_args(data, "gpt2", flags), tmp_path / "plain.jsonl")
    args = model_args(data, "gpt2", flags + OVERLAP)
    got, err = run_train(nproc, args, tmp_path / "overlap.jsonl")
    rel = DIST_REL if "--use-distributed-optimizer" in flags else 0
    assert_same_run(plain, got, f"{layout} --overlap-grad-reduce", rel)
    plan, buckets = planned_buckets(args, nproc)
    assert buckets >= 4, plan
    measured = _totals(err, "measured")
    assert measured and measured == _totals(plan, "total"), (err, plan)


DEVICE_LAYOUTS = {k: LAYOUTS[k] for k in ("dp2", "dp2-distopt", "pp2-dp2")}


def run_emu(nproc, args, metrics):
    """The emulation build with --device cuda under mpirun, the emulator's late streams."""
    cmd = mpirun() + ["-np", nproc, _emu(), *args, "--device", "cuda", "--log-file", metrics]
    p = conftest.run_mg(cmd, env={"OMP_NUM_THREADS": "1", "MGK_EMU_STREAMS": "late"})
    assert f"{nproc} ranks" in p.stderr and "nccl); device cuda:0 (mgk-emu" in p.stderr, p.stderr
    return [json.loads(line) for line in open(metrics)], p.stderr


@pytest.mark.parametrize("layout", sorted(DEVICE_LAYOUTS))
def test_device_overlap_same_bits(data, layout, tmp_path):  # noqa: F811
    nproc, flags = DEVICE_LAYOUTS[layout]
    plain, _ = run_emu(nproc, model_args(data, "gpt2", flags), tmp_path / "plain.jsonl")
    got, err = run_emu(nproc, model_args(data, "gpt2", flags + OVERLAP),
                       tmp_path / "overlap.jsonl")
    rel = DIST_REL if "--use-distributed-optimizer" in flags else 0
    assert_same_run(plain, got, f"{layout} --overlap-grad-reduce --device cuda", rel)
    _assert_memory_as_planned(err)


def test_resume_bucketed_distrib_optim(data, tmp_path):  # noqa: F811
    """PP=2 x DP=2 with the distributed optimizer, --overlap-grad-reduce and --ddp-bucket-size
    1 (a bucket per parameter, so that every bucket's end padding is cut from the coalesced
    tensors, which then differ from the one-bucket layout's) stops at 10 and saves; its rank files rewritten in megatron-core's form (the moments and master weights
    only in distrib_optim.pt, in the bucketed layout), the resumed run logs iterations 11-20
    bit for bit as the uninterrupted one; resumed without --overlap-grad-reduce (one bucket:
    another layout, as in Megatron) the load is refused, naming numel_unpadded."""
    flags = ["--pipeline-model-parallel-size", 2, "--use-distributed-optimizer",
             "--overlap-grad-reduce", "--ddp-bucket-size", 1]
    full, first = full_and_stopped("gpt2", data, tmp_path, flags)
    for s in sorted((tmp_path / "ck" / "iter_0000010").iterdir()):
        megatron_form(s / "model_optim_rng.pt", float)
    load = ["--load", tmp_path / "ck"]
    second, err = run_train(4, model_args(data, "gpt2", flags + load), tmp_path / "b.jsonl")
    assert "loaded" in err and "at iteration 10" in err, err
    assert stripped(first + second) == stripped(full)
    one_bucket = ["--pipeline-model-parallel-size", 2, "--use-distributed-optimizer", *load]
    p = conftest.run_mg(mpirun() + ["-np", 4, conftest.bin_dir_path() / "mg-train",
                                    *model_args(data, "gpt2", one_bucket)],
                        env={"OMP_NUM_THREADS": "1"}, check=False)
    assert p.returncode != 0 and "numel_unpadded" in p.stderr, p.stderr
