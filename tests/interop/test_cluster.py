"""The cluster recipe's training launch run for real: scripts/cluster/train.sh with
`--launcher mpirun --hostfile FILE` (Open MPI without Slurm) starts 2 ranks of mg-train at
TP=2 on this machine, and they log the losses of the single-process run (within 1e-5
relative: only the order of the sums differs). The Slurm paths of the recipe are checked by
their dry modes (tests/cli/cl_dry_runs.sh) and the preprocessing by a real local run
(tests/cli/cl_preprocess_local.sh).
"""
import json
import os
import subprocess

import conftest
import mpi_launch

FLAGS = ["--num-layers", "2", "--hidden-size", "32", "--num-attention-heads", "4",
         "--seq-length", "16", "--max-position-embeddings", "16", "--micro-batch-size", "2",
         "--global-batch-size", "4", "--train-iters", "4", "--lr", "1e-3",
         "--tokenizer-type", "NullTokenizer", "--vocab-size", "255", "--mock-data",
         "--eval-iters", "0", "--log-interval", "1"]


def losses(path):
    return [r["loss"] for r in map(json.loads, path.read_text().splitlines())
            if r["kind"] == "train"]


def test_train_sh_mpirun_hostfile_tp2(tmp_path):
    (tmp_path / "hosts").write_text("localhost slots=2\n")
    env = dict(mpi_launch.mpi_env(), MG_BIN=str(conftest.bin_dir_path()))
    p = subprocess.run([str(conftest.ROOT / "scripts" / "cluster" / "train.sh"), "--nodes", "1",
                        "--tasks-per-node", "2", "--launcher", "mpirun", "--hostfile", "hosts",
                        "--", *FLAGS, "--tensor-model-parallel-size", "2",
                        "--log-file", "tp2.jsonl"],
                       cwd=tmp_path, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "# mg-train: 2 ranks = TP 2 x PP 1 x DP 1 (mpirun, hosts of hosts)" in p.stdout
    assert "2 ranks (TP 2, PP 1, DP 1, mpi)" in p.stderr
    conftest.run_mg(["mg-train", *FLAGS, "--log-file", tmp_path / "one.jsonl"],
                    env=dict(os.environ, OMP_NUM_THREADS="1"))
    ours, ref = losses(tmp_path / "tp2.jsonl"), losses(tmp_path / "one.jsonl")
    assert len(ours) == len(ref) == 4
    assert all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(ours, ref)), (ours, ref)
