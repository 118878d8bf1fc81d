"""The demo (scripts/demo.sh, `make demo`) shortened to 20 iterations: every step runs and
produces its outputs, the summary reports a training loss that went down, the exported
model's logits equal mg-train's forward (checked by scripts/demo-hf.py, which fails on a
difference), and a second run replaces the first's outputs. Also the checks' own failures:
demo-hf.py on an export whose config disagrees with the model flags, demo-summary.py on a
loss that did not go down, a --out folder that is not a demo's, and a step that fails.

The demo reads the GPT-2 ranks of the test vocabularies (tiktoken/r50k_base.tiktoken, the
same bytes as the openai-whisper asset that `make demo` fetches), runs the tools of MG_BIN
model_probe of MG_BUILD and this Python environment (MG_VENV).
"""
import json
import os
import subprocess
import sys

import pytest

import conftest

ROOT = conftest.ROOT
ITERS = 20


def demo(out, ranks=conftest.VOCAB_DIR / "tiktoken" / "r50k_base.tiktoken", check=True):
    env = dict(os.environ, MG_BIN=str(conftest.bin_dir_path()),
               MG_PROBE=str(conftest._resolve("model_probe")), MG_VENV=sys.prefix)
    cmd = [str(ROOT / "scripts" / "demo.sh"), "--out", str(out), "--iters", str(ITERS),
           "--ranks", str(ranks)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stdout[-4000:]}\n"
                    f"{p.stderr[-4000:]}")
    return p


@pytest.fixture(scope="module")
def demo_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    p = demo(out)
    return out, p.stdout, p.stderr


def test_demo_outputs(demo_out):
    out, stdout, stderr = demo_out
    for rel in ["data/fortunes_text_document.bin", "data/fortunes_text_document.idx",
                f"checkpoints/iter_{ITERS:07d}/mp_rank_00/model_optim_rng.pt",
                "checkpoints-tp2/release/mp_rank_00/model_optim_rng.pt",
                "checkpoints-tp2/release/mp_rank_01/model_optim_rng.pt",
                "checkpoints-tp1/release/mp_rank_00/model_optim_rng.pt",
                "hf/config.json", "hf/model.safetensors", "hf/tokenizer.json",
                "hf/tokenizer_config.json", "metrics.jsonl", "train.log",
                "summary.txt", "sample.txt"]:
        assert (out / rel).is_file(), rel
    assert (out / "loss-curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not out.with_name("out.partial").exists()
    assert "mg-train under mpirun -np 2 (data parallel: DP=2" in stdout
    assert "2 ranks (TP 1, PP 1, DP 2, mpi)" in stderr
    check = json.loads((out / "logits-check" / "check.json").read_text())
    assert check["max_abs_diff"] <= check["tolerance"]
    assert check["logits_shape"] == [len(check["ids"]), 50257]
    assert (out / "sample.txt").read_text().startswith(check["prompt"])
    summary = (out / "summary.txt").read_text()
    assert summary in stdout
    loss = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    train = [r for r in loss if r["kind"] == "train"]
    assert [r["iteration"] for r in train] == list(range(1, ITERS + 1))
    assert f"training loss: first {train[0]['loss']:.3f} (iteration 1), " \
           f"last {train[-1]['loss']:.3f} (iteration {ITERS})" in summary
    assert train[-1]["loss"] < 0.9 * train[0]["loss"]


def test_demo_second_run_replaces(demo_out, tmp_path):
    out = demo_out[0]
    (out / "stale.txt").write_text("from before")
    first = (out / "metrics.jsonl").read_text()
    demo(out)
    assert not (out / "stale.txt").exists() and not out.with_name("out.partial").exists()
    # the same seed and data: the same losses (timings differ)
    losses = [[r.get("loss") for r in map(json.loads, t.splitlines())]
              for t in (first, (out / "metrics.jsonl").read_text())]
    assert losses[0] == losses[1]


def test_demo_refuses_a_folder_not_its_own(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("precious")
    p = demo(mine, check=False)
    assert p.returncode == 1
    assert "is not a demo output" in p.stderr
    assert (mine / "keep.txt").read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_demo_failed_step_keeps_its_partial_outputs(tmp_path):
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("not base64 ranks\n")
    p = demo(tmp_path / "out", ranks=bad, check=False)
    assert p.returncode == 1
    assert "demo: error: the step above failed; its outputs so far are in " in p.stderr
    assert not (tmp_path / "out").exists()
    assert (tmp_path / "out.partial" / "data" / "fortunes.jsonl").is_file()


def test_demo_hf_fails_on_different_logits(demo_out, tmp_path):
    """An export whose config.json disagrees with the model (ReLU instead of GeLU) loads
    and generates, but its logits differ from mg-train's forward: exit 1."""
    out = demo_out[0]
    hf = tmp_path / "hf"
    hf.mkdir()
    for name in ("model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (hf / name).symlink_to(out / "hf" / name)
    config = json.loads((out / "hf" / "config.json").read_text())
    config["activation_function"] = "relu"
    (hf / "config.json").write_text(json.dumps(config))
    model = ["--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4",
             "--seq-length", "64", "--max-position-embeddings", "64",
             "--tokenizer-type", "TikTokenizer", "--tokenizer-model",
             str(conftest.VOCAB_DIR / "tiktoken" / "r50k_base.tiktoken"),
             "--tiktoken-pattern", "r50k_base", "--micro-batch-size", "1",
             "--train-iters", "1", "--lr", "1e-3"]
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo-hf.py"), str(hf),
                        str(conftest.VOCAB_DIR / "tiktoken" / "r50k_base.tiktoken"),
                        str(conftest._resolve("model_probe")), str(tmp_path / "check"),
                        str(tmp_path / "sample.txt"), "--", *model],
                       capture_output=True, text=True)
    assert p.returncode == 1, p.stdout + p.stderr
    assert ": DIFFERENT" in p.stdout
    check = json.loads((tmp_path / "check" / "check.json").read_text())
    assert check["max_abs_diff"] > check["tolerance"]


def test_demo_summary_fails_when_the_loss_does_not_go_down(tmp_path):
    (tmp_path / "logits-check").mkdir()
    (tmp_path / "logits-check" / "check.json").write_text(json.dumps(
        {"prompt": "Q:", "continuation": " A", "max_abs_diff": 0.0, "tolerance": 1e-5}))
    recs = [{"kind": "train", "iteration": i, "loss": 10.0 - 0.1 * i, "tokens_per_s": 100.0,
             "mfu": 0.1} for i in (1, 2, 3)] + [{"kind": "valid", "iteration": 3, "loss": 9.8}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    p = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo-summary.py"), str(tmp_path),
                        "out", "5"], capture_output=True, text=True)
    assert p.returncode == 1
    assert "the training loss did not go down: 9.900 -> 9.700" in p.stderr
