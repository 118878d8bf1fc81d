"""mg-train's NCCL backend (train/comm_nccl.c) on the NCCL host shim (kernels/nccl_emu/,
docs/CUDA_EMU.md "NCCL on the host"), device buffers from the CUDA emulator.

- Under mpirun: comm_probe_nccl (the NCCL backend, every buffer a cudaMalloc block) prints
  exactly what comm_probe (the MPI backend, host buffers) prints for the same layout: the
  groups, every operation's counters, "ops ok" on every rank (each result equals the
  rank-order sum bit for bit) and a digest of every result's bits per rank and group.
"""
import pytest

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
