"""mg-train's tensor, sequence and pipeline parallelism reproduce the single-process run:
with the same seed and data, TP=2, TP=2 with --sequence-parallel, PP=2, PP=4 with uneven
first and last stages (1, 2, 2, 1 layers), TP=2 x PP=2 and TP=2 x PP=2 with sequence
parallelism, and TP=2 x DP=2 and PP=2 x DP=2 with --use-distributed-optimizer (its gradient
norm counts a tensor replicated over TP once and never the last stage's tied copy) log the
losses and gradient norms of TP=1 PP=1 over 20 iterations within 1e-5
relative (fp32: only the reduction order differs), and the same validation losses, and the
communication the comm layer counts on rank 0 in a step equals --dry-run's plan exactly
(every group and operation: calls and bytes), for the tiny GPT-2 (tied embeddings: under PP the last stage's copy gets the embedding group's
gradient sum) and the tiny Llama (GQA with one query group per TP rank, SwiGLU, RoPE,
untied).

Processes run under `mpirun --oversubscribe --allow-run-as-root` (OpenMPI from
scripts/setup.sh; a missing mpirun fails the test). Every run has 6 micro-batches per
iteration (micro-batch 2, global batch 12), so the pipeline goes through 1F1B's warm-up,
steady and cool-down phases on every stage. The vocabulary is odd, 999 tokens: Megatron pads
it to a multiple of 128 x TP, 1024 at TP=1 and at TP=2, so the padded vocabulary (and with
it the model) is the same at every layout compared here.
"""
import json
import random
import shutil

import numpy
import pytest

import conftest
from test_dist_train import _totals
from test_train_run import ARCHS

ENV = {"OMP_NUM_THREADS": "1"}
V = 999  # odd; padded to 1024 at TP 1 and 2
EOD = V - 1

LAYOUTS = {
    "tp2": (2, ["--tensor-model-parallel-size", 2]),
    "tp2-sp": (2, ["--tensor-model-parallel-size", 2, "--sequence-parallel"]),
    "pp2": (2, ["--pipeline-model-parallel-size", 2]),
    "pp4-uneven": (4, ["--pipeline-model-parallel-size", 4,
                       "--decoder-first-pipeline-num-layers", 1,
                       "--decoder-last-pipeline-num-layers", 1]),
    "tp2-pp2": (4, ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2]),
    "tp2-pp2-sp": (4, ["--tensor-model-parallel-size", 2, "--pipeline-model-parallel-size", 2,
                       "--sequence-parallel"]),
    "tp2-dp2-distopt": (4, ["--tensor-model-parallel-size", 2, "--use-distributed-optimizer"]),
    "pp2-dp2-distopt": (4, ["--pipeline-model-parallel-size", 2, "--use-distributed-optimizer"]),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Documents of random ids 1..997, each ending with the EOD 998."""
    d = tmp_path_factory.mktemp("train_parallel")
    rng = random.Random(31)
    docs = [[rng.randrange(1, EOD) for _ in range(rng.randint(0, 40))] + [EOD]
            for _ in range(400)]
    conftest.megatron_build(d / "docs_text_document", docs, numpy.int32)
    return d / "docs_text_document"


def mpirun():
    path = shutil.which("mpirun")
    if not path:
        pytest.fail("mpirun not found: install openmpi-bin (scripts/setup.sh)")
    return [path, "--oversubscribe", "--allow-run-as-root"]


def model_args(data, arch, extra=()):
    return ["--num-layers", 6, "--hidden-size", 32, "--num-attention-heads", 4,
            "--seq-length", 16, "--max-position-embeddings", 16, "--micro-batch-size", 2,
            "--global-batch-size", 12, "--train-iters", 20, "--lr", "1e-3", "--min-lr", "1e-4",
            "--lr-decay-style", "cosine", "--lr-warmup-iters", 2, "--vocab-size", V,
            "--data-path", data, "--split", "90,10,0", "--log-interval", 5,
            "--eval-interval", 10, "--eval-iters", 2, *ARCHS[arch], *extra]


def run_train(nproc, args, metrics):
    """mg-train on nproc processes (1: no mpirun); returns (metrics records, stderr)."""
    mg = str(conftest.bin_dir_path() / "mg-train")
    cmd = ([mg] if nproc == 1 else mpirun() + ["-np", nproc, mg]) + args
    p = conftest.run_mg(cmd + ["--log-file", metrics], env=ENV)
    return [json.loads(line) for line in open(metrics)], p.stderr


@pytest.fixture(scope="module", params=sorted(ARCHS))
def reference(request, data, tmp_path_factory):
    arch = request.param
    d = tmp_path_factory.mktemp(f"ref_{arch}")
    records, err = run_train(1, model_args(data, arch), d / "m.jsonl")
    assert "1 ranks (TP 1, PP 1, DP 1" in err, err
    return arch, records


def assert_same_run(ref, got, what):
    assert [(r["kind"], r["iteration"]) for r in got] == \
        [(r["kind"], r["iteration"]) for r in ref], what
    assert len([r for r in ref if r["kind"] == "train"]) == 20
    for a, b in zip(ref, got):
        keys = ["loss", "grad_norm"] if a["kind"] == "train" else ["loss"]
        for k in keys:
            assert b[k] == pytest.approx(a[k], rel=1e-5), \
                f"{what}: {a['kind']} {k} at iteration {a['iteration']}: {b[k]} vs {a[k]}"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_layout_reproduces_single_process(reference, layout, data, tmp_path):
    arch, ref = reference
    nproc, flags = LAYOUTS[layout]
    got, err = run_train(nproc, model_args(data, arch, flags), tmp_path / "m.jsonl")
    tp = flags[flags.index("--tensor-model-parallel-size") + 1] if \
        "--tensor-model-parallel-size" in flags else 1
    pp = flags[flags.index("--pipeline-model-parallel-size") + 1] if \
        "--pipeline-model-parallel-size" in flags else 1
    assert f"{nproc} ranks (TP {tp}, PP {pp}, DP {nproc // (tp * pp)}" in err, err
    assert_same_run(ref, got, f"{arch} {layout}")
    measured = _totals(err, "measured")
    plan = conftest.run_mg(["mg-train", *model_args(data, arch, flags), "--dry-run"],
                           env={"WORLD_SIZE": str(nproc)}).stdout
    assert measured and measured == _totals(plan, "total"), (err, plan)
