"""Launching mgtools programs under Open MPI's mpirun for the distributed tests.

  mpirun_cmd(np, prog, args, extra=()) -> the command line: mpirun --oversubscribe -np NP
      [extra...] PROG ARGS (prog resolved like conftest.run_mg: bin/ or build/tests/tools/).
  mpi_env(threads=1) -> the environment: Open MPI's two variables that allow running as
      root (the tests run as root in CI), OMP_NUM_THREADS.
  run_mpi(np, prog, args, extra=(), check=True) -> subprocess.CompletedProcess (text).
  rank_pids(marker, rank) -> pids of the processes whose command line contains marker and
      whose environment says OMPI_COMM_WORLD_RANK=rank.
A missing mpirun FAILS the test (scripts/setup.sh --system installs openmpi-bin).
"""
import os
import shutil
import subprocess

import pytest

import conftest


def mpi_env(threads=1):
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMP_NUM_THREADS": str(threads)})
    return env


def mpirun_cmd(np, prog, args, extra=()):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        pytest.fail("mpirun not found: run scripts/setup.sh --system (openmpi-bin)")
    return [mpirun, "--oversubscribe", "-np", str(np), *extra, conftest._resolve(prog),
            *[str(a) for a in args]]


def run_mpi(np, prog, args, extra=(), check=True):
    cmd = mpirun_cmd(np, prog, args, extra)
    p = subprocess.run(cmd, env=mpi_env(), capture_output=True, text=True)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def rank_pids(marker, rank):
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
            if marker not in cmd or "mpirun" in cmd.split("\0")[0]:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in env:
            pids.append(int(pid))
    return pids
