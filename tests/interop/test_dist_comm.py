"""mg-train's communication layer (train/comm.h) on several processes under mpirun.

- The groups every rank builds are megatron-core's: the test asks megatron-core 0.16.1's own
  RankGenerator (order tp-cp-ep-dp-pp, parallel_state.initialize_model_parallel's default)
  and default_embedding_ranks, and compares with comm_probe's lists on every rank.
- Every operation on every group gives exactly the rank-order result on every rank
  (comm_probe checks the bits), with odd counts, for several world sizes and layouts.
- A stuck rank turns into an error on the others naming the rank, the group, the operation
  and the peer, and the whole job ends with a non-zero status (MPI_Abort).
- A launch that cannot work is refused clearly: torchrun's WORLD_SIZE > 1 for the CPU
  trainer; a configuration that differs between ranks (seed, flags, data) is named.
"""
import re

import pytest

import conftest
from mpi_launch import run_mpi

LAYOUTS = [(2, 1, 1), (3, 1, 1), (4, 2, 2), (8, 2, 2), (6, 3, 1), (6, 1, 3), (8, 1, 4)]


def _megatron_groups(world, tp, pp):
    from megatron.core import parallel_state as ps
    dp = world // (tp * pp)
    gen = ps.RankGenerator(tp=tp, ep=1, dp=dp, pp=pp, cp=1, order="tp-cp-ep-dp-pp")
    groups = {"world": [list(range(world))], "tensor": gen.get_ranks("tp"),
              "data": gen.get_ranks("dp"), "pipeline": gen.get_ranks("pp"),
              "model": gen.get_ranks("tp-pp")}
    groups["embedding"] = [ps.default_embedding_ranks(r) for r in groups["pipeline"]]
    return groups


def _parse_groups(out):
    """{world rank: {kind: (ranks, index)}} from comm_probe's
    'group WORLD-RANK KIND RANK SIZE RANKS...' lines (the ranks' lines interleave)."""
    per_rank = {}
    for line in out.splitlines():
        f = line.split()
        if not f or f[0] != "group":
            continue
        me, kind, rank, size = int(f[1]), f[2], int(f[3]), int(f[4])
        ranks = [int(x) for x in f[5:]]
        assert len(ranks) == size
        per_rank.setdefault(me, {})[kind] = (ranks, rank)
    return per_rank


@pytest.mark.parametrize("world,tp,pp", LAYOUTS)
def test_groups_and_operations(world, tp, pp):
    p = run_mpi(world, "comm_probe", [tp, pp, 60])
    assert p.stdout.count("ops ok") == world, p.stdout + p.stderr
    want = _megatron_groups(world, tp, pp)
    got = _parse_groups(p.stdout)
    assert sorted(got) == list(range(world))
    for rank, kinds in got.items():
        for kind, (ranks, idx) in kinds.items():
            assert ranks[idx] == rank
            if kind == "embedding" and not any(rank in g for g in want["embedding"]):
                assert ranks == [rank], "a middle stage's embedding group is itself alone"
                continue
            mine = [g for g in want[kind] if rank in g]
            assert mine == [ranks], f"rank {rank} {kind} group {ranks}, megatron-core {mine}"


def test_volume_counters():
    """The counters count payload bytes per group and operation: comm_probe's ops on a
    world of 2 (TP 1, PP 1: data = world, the other groups of one rank count nothing)."""
    p = run_mpi(2, "comm_probe", [1, 1, 60])
    counts = {tuple(f[1:3]): (int(f[3]), int(f[4]))
              for f in (l.split() for l in p.stdout.splitlines()) if f and f[0] == "count"}
    n = 1001 + 7 * 2  # comm_probe's count for 2 ranks
    m = n // 2
    for g in ("world", "data"):
        assert counts[(g, "all-reduce")] == (2, n * 4 + 3 * 8)  # f32 n, f64 3
        assert counts[(g, "reduce-scatter")] == (1, 2 * m * 4)  # the whole send buffer
        assert counts[(g, "all-gather")] == (1, 2 * m * 4)  # the whole recv buffer
        assert counts[(g, "broadcast")] == (1, 32)
        assert counts[(g, "send")] == (1, 8) and counts[(g, "recv")] == (1, 8)
        assert counts[(g, "barrier")] == (1, 0)
    assert not any(k[0] in ("tensor", "pipeline", "model") for k in counts)


def test_stuck_rank_times_out():
    """The last rank sleeps; the others' all-reduce times out after 1 s: each names
    itself, the group, the operation and the rank it waits for; MPI_Abort ends the job."""
    p = run_mpi(3, "comm_probe", [1, 1, 1, "stall"], check=False)
    assert p.returncode != 0
    errs = re.findall(r"comm_probe: error: (.*)", p.stderr)
    assert errs, p.stderr
    for e in errs:
        assert re.match(r"all-reduce on the world group \(3 ranks\) timed out after 1 s "
                        r"\(--distributed-timeout-minutes\) on rank [01] of 3; waiting for "
                        r"rank 2$", e), e


MODEL = ["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2",
         "--lr", "1e-3", "--seq-length", "16", "--max-position-embeddings", "16",
         "--micro-batch-size", "1", "--global-batch-size", "4", "--train-iters", "2",
         "--eval-iters", "0", "--tokenizer-type", "NullTokenizer", "--vocab-size", "1001",
         "--mock-data"]


def _mpmd(rank0_extra, rank1_extra):
    """mpirun -np 1 mg-train MODEL rank0_extra : -np 1 mg-train MODEL rank1_extra."""
    import subprocess
    from mpi_launch import mpi_env, mpirun_cmd
    a = mpirun_cmd(1, "mg-train", MODEL + rank0_extra)
    b = mpirun_cmd(1, "mg-train", MODEL + rank1_extra)[2:]  # "-np 1 PROG ARGS"
    return subprocess.run(a + [":"] + b, env=mpi_env(), capture_output=True, text=True)


@pytest.mark.parametrize("extra,part,mine,theirs", [
    (["--seed", "5"], "seed", "--seed 5", "--seed 1234"),
    (["--log-interval", "7"], "flags", "--log-interval", "(none)"),
    (["--vocab-size", "1003"], "data", "mock data, vocabulary 1003",
     "mock data, vocabulary 1001"),
])
def test_configuration_mismatch_named(extra, part, mine, theirs):
    p = _mpmd([], extra)
    assert p.returncode == 2, p.stderr
    msg = (f"the ranks do not run the same configuration: rank 1 differs from rank 0 in its "
           f"{part}: ")
    lines = [l for l in p.stderr.splitlines() if msg in l]
    # every rank fails with the same message; the first one's MPI_Abort may end the other
    # before it prints
    assert 1 <= len(lines) <= 2, p.stderr
    for l in lines:
        assert f'is "{mine}" on rank 1 but "{theirs}" on rank 0' in l, l


def test_torchrun_environment_refused():
    p = conftest.run_mg(["mg-train", *MODEL], check=False,
                        env={"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0",
                             "OMP_NUM_THREADS": "1"})
    assert p.returncode == 2
    assert "a torchrun environment launch of 2 ranks with CPU buffers" in p.stderr
    assert "launch it with mpirun or srun" in p.stderr


def test_world_not_divisible_refused():
    p = run_mpi(3, "mg-train", MODEL + ["--tensor-model-parallel-size", "2"], check=False)
    assert p.returncode == 2
    assert ("world size (3) is not divisible by tensor model parallel size (2) times "
            "pipeline model parallel size (1)") in p.stderr
