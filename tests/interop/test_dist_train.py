"""mg-train data parallelism under mpirun, against the single-process run.

- DP = 2, with and without --use-distributed-optimizer, reproduces the single-process lm
  loss and grad norm of every one of 20 iterations within 1e-5 relative (fp32: only the
  reduction order differs), for a tiny GPT-2 (tied embeddings, LayerNorm, GeLU, biases) and
  a tiny Llama (GQA, SwiGLU, RMSNorm, RoPE, untied, no biases), an odd vocabulary (1001,
  padded to 1024 at TP 1 — every layout compared here has TP 1, so the same padded size)
  and gradient accumulation (4 micro-batches per iteration in one process, 2 per rank).
- The communication the comm layer counts in a training step equals --dry-run's plan.
- A rank killed with SIGKILL ends the whole job with a message naming it; a stuck rank
  (SIGSTOP) makes the others fail after --distributed-timeout-minutes naming it, the group
  and the operation.
- SIGTERM to one rank with --exit-signal-handler makes every rank stop at the same
  iteration and save one consistent checkpoint, from which a resumed run continues
  bit-exactly like an uninterrupted one (plain DP and the distributed optimizer).
"""
import json
import os
import re
import signal
import subprocess
import time

import pytest

import conftest
from mpi_launch import mpi_env, mpirun_cmd, rank_pids, run_mpi

GPT2 = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4"]
LLAMA = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
         "--group-query-attention", "--num-query-groups", "2", "--swiglu",
         "--normalization", "RMSNorm", "--position-embedding-type", "rope",
         "--untie-embeddings-and-output-weights", "--disable-bias-linear"]
COMMON = ["--lr", "3e-3", "--min-lr", "3e-4", "--lr-decay-style", "cosine",
          "--lr-warmup-iters", "2", "--weight-decay", "0.1", "--clip-grad", "1.0",
          "--seq-length", "16", "--max-position-embeddings", "16", "--micro-batch-size", "2",
          "--global-batch-size", "8", "--eval-iters", "0", "--tokenizer-type", "NullTokenizer",
          "--vocab-size", "1001", "--mock-data", "--log-interval", "1"]
ITERS = 20


def _train_log(tmp_path, name, np, model, extra=()):
    log = tmp_path / f"{name}.jsonl"
    args = [*model, *COMMON, "--train-iters", ITERS, "--log-file", log, *extra]
    if np == 1:
        p = conftest.run_mg(["mg-train", *args], env={"OMP_NUM_THREADS": "1"})
    else:
        p = run_mpi(np, "mg-train", args)
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    return [r for r in rows if r["kind"] == "train"], p


@pytest.mark.parametrize("model", [GPT2, LLAMA], ids=["gpt2", "llama"])
@pytest.mark.parametrize("dist_opt", [False, True], ids=["ddp", "distopt"])
def test_dp2_matches_single_process(tmp_path, model, dist_opt):
    ref, _ = _train_log(tmp_path, "one", 1, model)
    extra = ["--use-distributed-optimizer"] if dist_opt else []
    got, p = _train_log(tmp_path, "dp2", 2, model, extra)
    assert "DP 2, mpi" in p.stderr
    assert len(ref) == len(got) == ITERS
    for a, b in zip(ref, got):
        assert a["iteration"] == b["iteration"]
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-5), a["iteration"]
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5), a["iteration"]
    assert ref[-1]["loss"] < ref[0]["loss"] - 0.05  # it learns: the comparison means something


def _totals(text, word):
    """{(group, op): (calls, bytes)} from '... {word} GROUP OP: C calls, B bytes' lines."""
    pat = re.compile(word + r" (\w+) ([\w-]+): (\d+) calls, (\d+) bytes")
    return {(m[1], m[2]): (int(m[3]), int(m[4])) for m in pat.finditer(text)}


@pytest.mark.parametrize("np,dist_opt", [(2, False), (2, True), (3, True)])
def test_measured_volume_is_the_plan(tmp_path, np, dist_opt):
    extra = ["--use-distributed-optimizer"] if dist_opt else []
    args = [*GPT2, *COMMON, "--global-batch-size", 4 * np, "--train-iters", 5, *extra]
    p = run_mpi(np, "mg-train", args)
    measured = _totals(p.stderr, "measured")
    plan = conftest.run_mg(["mg-train", *args, "--dry-run"], env={"WORLD_SIZE": str(np)})
    planned = _totals(plan.stdout, "total")
    assert measured and measured == planned, (p.stderr, plan.stdout)
    if dist_opt:
        assert ("data", "reduce-scatter") in measured and ("data", "all-gather") in measured


SLOW = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4",
        "--lr", "1e-3", "--seq-length", "64", "--max-position-embeddings", "64",
        "--micro-batch-size", "2", "--global-batch-size", "8", "--eval-iters", "0",
        "--tokenizer-type", "NullTokenizer", "--vocab-size", "1001", "--mock-data",
        "--log-interval", "1"]


def _start(tmp_path, name, extra, mpirun_extra=()):
    """mpirun -np 2 mg-train (a long run) in the background; waits for 3 logged iterations."""
    log = tmp_path / f"{name}.jsonl"
    cmd = mpirun_cmd(2, "mg-train", [*SLOW, "--log-file", log, *extra], mpirun_extra)
    proc = subprocess.Popen(cmd, env=mpi_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and (not log.exists() or len(log.read_text().splitlines()) < 3):
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    pids = rank_pids(str(log), 1)
    assert len(pids) == 1, pids
    return proc, pids[0], log


def test_sigkill_ends_the_job(tmp_path):
    proc, pid, _ = _start(tmp_path, "kill", ["--train-iters", "1000000"])
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate()
    assert proc.returncode != 0
    # the launcher sees the death first and names the rank
    assert re.search(r"process rank 1 with PID \d+ on node \S+ exited on signal 9", err), err


def test_sigkill_survivors_time_out(tmp_path):
    """With --enable-recovery mpirun lets the survivor run: our timeout names the dead peer."""
    proc, pid, _ = _start(tmp_path, "recover", ["--train-iters", "1000000",
                                                "--distributed-timeout-minutes", "0.05"],
                          ["--enable-recovery"])
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate()
    assert re.search(r"mg-train \(rank 0 of 2\): error: all-reduce on the data group \(2 "
                     r"ranks\) (timed out after 3 s \(--distributed-timeout-minutes\)|failed: "
                     r".*) on rank 0 \(world rank 0\) of 2; waiting for rank 1 \(world rank "
                     r"1\)", err), err


def test_stuck_rank_times_out(tmp_path):
    proc, pid, _ = _start(tmp_path, "stuck", ["--train-iters", "1000000",
                                              "--distributed-timeout-minutes", "0.05"])
    os.kill(pid, signal.SIGSTOP)
    out, err = proc.communicate()
    assert proc.returncode == 1, err
    assert re.search(r"mg-train \(rank 0 of 2\): error: [a-z-]+ on the (data|world) group "
                     r"\(2 ranks\) timed out after 3 s \(--distributed-timeout-minutes\) on "
                     r"rank 0 (\(world rank 0\) )?of 2; waiting for rank 1", err), err


def _losses(log, first):
    rows = [json.loads(l) for l in log.read_text().splitlines()]
    return [(r["iteration"], r["loss"], r["grad_norm"]) for r in rows
            if r["kind"] == "train" and r["iteration"] >= first]


@pytest.mark.parametrize("dist_opt", [False, True], ids=["ddp", "distopt"])
def test_sigterm_checkpoint_resumes_bit_exactly(tmp_path, dist_opt):
    extra = ["--use-distributed-optimizer"] if dist_opt else []
    save = tmp_path / "ckpt"
    flags = ["--train-iters", "100000", "--lr-decay-style", "constant", *extra]
    proc, pid, _ = _start(tmp_path, "term", [*flags, "--exit-signal-handler", "--save", save,
                                             "--save-interval", "100000"])
    os.kill(pid, signal.SIGTERM)  # rank 1: not the rank that writes the checkpoint
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    k = int((save / "latest_checkpointed_iteration.txt").read_text())
    assert f"exiting program after receiving signal 15 at iteration {k}" in err
    assert (save / f"iter_{k:07d}" / "mp_rank_00" / "model_optim_rng.pt").exists()
    stop = k + 5
    ref = tmp_path / "ref.jsonl"
    run_mpi(2, "mg-train", [*SLOW, *flags, "--exit-interval", stop, "--log-file", ref])
    resumed = tmp_path / "resumed.jsonl"
    p = run_mpi(2, "mg-train", [*SLOW, *flags, "--exit-interval", stop, "--load", save,
                                "--log-file", resumed])
    assert f"loaded {save} at iteration {k}" in p.stderr
    got = _losses(resumed, k + 1)
    assert [r[0] for r in got] == list(range(k + 1, stop + 1))
    assert got == _losses(ref, k + 1)  # bit-exact: the log has 17 significant digits
