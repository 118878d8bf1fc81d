"""mg-train's NCCL backend (train/comm_nccl.c) on the NCCL host shim (kernels/nccl_emu/,
docs/CUDA_EMU.md "NCCL on the host"), device buffers from the CUDA emulator.

- Under mpirun: comm_probe_nccl (the NCCL backend, every buffer a cudaMalloc block) prints
  exactly what comm_probe (the MPI backend, host buffers) prints for the same layout: the
  groups, every operation's counters, "ops ok" on every rank (each result equals the
  rank-order sum bit for bit) and a digest of every result's bits per rank and group; the
  same again with host arrays handed to the NCCL backend (staged through a device buffer).
- The shim's calls the backend does not make yet (nccl_types_probe under mpirun): bf16 and
  fp16 sums accumulated in fp32 and rounded once (equal to the fp32 sum rounded, within half
  an ulp plus fp32's error of the exact sum), ncclAvg, ncclMax, integer sums and products, a
  group's receives posted before their sends, host pointers and unknown streams refused.
- Without mpirun, torchrun's way: WORLD_SIZE processes started with RANK, LOCAL_RANK,
  MASTER_ADDR and MASTER_PORT; rank 0 hands the NCCL unique id to the others over TCP
  (train/comm_tcp.c) and the shim's ranks meet at the socket the id names: the same output
  as the MPI backend under mpirun again. A rank whose process ends (killed) makes the
  others' call fail with an error naming it, and they exit non-zero instead of hanging.
"""
import os
import socket
import subprocess

import pytest

import conftest

from mpi_launch import run_mpi

LAYOUTS = [(2, 1, 1), (3, 1, 1), (4, 2, 1), (4, 2, 2), (8, 2, 2)]


def _lines(out):
    return sorted(l for l in out.splitlines() if l.split()[:1] in (["group"], ["count"],
                                                                  ["digest"], ["ops"]))


@pytest.mark.parametrize("world,tp,pp", LAYOUTS)
def test_nccl_backend_equals_mpi_backend(world, tp, pp):
    mpi = run_mpi(world, "comm_probe", [tp, pp, 60])
    nccl = run_mpi(world, "comm_probe_nccl", [tp, pp, 60])
    assert nccl.stdout.count("ops ok") == world, nccl.stdout + nccl.stderr
    digests = [l for l in nccl.stdout.splitlines() if l.startswith("digest ")]
    assert len(digests) == world * 6, nccl.stdout  # world, tensor, pipeline, data, model, embedding
    assert _lines(nccl.stdout) == _lines(mpi.stdout)


@pytest.mark.parametrize("world,tp,pp", [(4, 2, 1), (8, 2, 2)])
def test_nccl_backend_host_buffers(world, tp, pp, monkeypatch):
    """MG_PROBE_HOST=1: comm_probe_nccl hands its host arrays to the NCCL backend itself, which
    stages them through a device buffer of the group (how mg-train's loss, norms and flags
    cross ranks): the MPI backend's output again, bit for bit."""
    mpi = run_mpi(world, "comm_probe", [tp, pp, 60])
    monkeypatch.setenv("MG_PROBE_HOST", "1")
    nccl = run_mpi(world, "comm_probe_nccl", [tp, pp, 60])
    assert nccl.stdout.count("ops ok") == world, nccl.stdout + nccl.stderr
    assert _lines(nccl.stdout) == _lines(mpi.stdout)


@pytest.mark.parametrize("world", [2, 3, 4])
def test_shim_types_and_operators(world):
    p = run_mpi(world, "nccl_types_probe", [])
    assert p.stdout.count("types ok") == world, p.stdout + p.stderr


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_torchrun_style(world, args):
    """WORLD_SIZE processes of comm_probe_nccl with torchrun's variables (Popen objects)."""
    port = _free_port()
    procs = []
    for r in range(world):
        env = dict(os.environ, WORLD_SIZE=str(world), RANK=str(r), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        for k in [k for k in env if k.startswith(("OMPI_", "PMI_", "SLURM_"))]:
            del env[k]
        procs.append(subprocess.Popen([conftest._resolve("comm_probe_nccl"), *map(str, args)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    return procs


def _run_torchrun_style(world, args):
    """The processes' joined stdout; each must exit 0."""
    procs = _start_torchrun_style(world, args)
    outs = [p.communicate() for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{out}\n{err}"
    return "".join(out for out, _ in outs)


@pytest.mark.parametrize("world,tp,pp", [(2, 1, 1), (4, 2, 2)])
def test_torchrun_environment_launch(world, tp, pp):
    out = _run_torchrun_style(world, [tp, pp, 60])
    assert out.count("ops ok") == world, out
    mpi = run_mpi(world, "comm_probe", [tp, pp, 60])
    assert _lines(out) == _lines(mpi.stdout)


def test_torchrun_environment_dead_rank_named():
    procs = _start_torchrun_style(3, [1, 1, 60, "stall"])
    try:
        assert procs[2].stdout.readline() == "stalling\n"  # after the communicators' setup
        procs[2].kill()
        procs[2].communicate()
        for r in (0, 1):
            out, err = procs[r].communicate()
            assert procs[r].returncode != 0, out + err
            assert "mgk-emu: ncclAllReduce: socket rank 2 closed its connection" in err, err
            assert (f"comm_probe: error: all-reduce on the world group (3 ranks, NCCL) failed: "
                    f"remote process exited or there was a network error on rank {r} of 3"
                    ) in err
    finally:  # a failed assertion leaves no rank waiting for the others
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
