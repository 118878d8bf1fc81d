#!/usr/bin/env python3
"""demo-summary.py — the demo's last step (scripts/demo.sh step 5): what it made, in a screen.

Usage: scripts/demo-summary.py WORK_DIR OUT_DIR SECONDS

Reads WORK_DIR/metrics.jsonl (mg-train --log-file) and WORK_DIR/logits-check/check.json
(scripts/demo-hf.py) and prints where each output will be once WORK_DIR is renamed to
OUT_DIR, the first and last training loss, the last validation loss, the mean tokens/s and
MFU (iterations 2..N: the first one warms up), the sample text and the wall time SECONDS.
Exit status: 0, 1 when the last training loss is not clearly (10%) below the first or an
input is missing, 2 usage error.
"""
import json
import os
import sys


def read_metrics(path):
    with open(path, encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    train = [r for r in recs if r["kind"] == "train"]
    valid = [r for r in recs if r["kind"] == "valid"]
    if not train or not valid:
        raise ValueError(f"{path}: needs training and validation records")
    return train, valid


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def summary(work, out, seconds):
    train, valid = read_metrics(os.path.join(work, "metrics.jsonl"))
    with open(os.path.join(work, "logits-check", "check.json"), encoding="utf-8") as f:
        check = json.load(f)
    steady = train[1:] or train
    mfu = [r["mfu"] for r in steady if r.get("mfu") is not None]
    first, last = train[0]["loss"], train[-1]["loss"]
    lines = [
        f"demo outputs in {out}/ ({seconds} s):",
        f"  dataset      data/fortunes_text_document.bin/.idx (corpus data/fortunes.jsonl)",
        f"  training     checkpoints/ (Megatron 'torch', DP=2), train.log, metrics.jsonl",
        f"  resharded    checkpoints-tp2/ (TP=2), checkpoints-tp1/ (back to TP=1)",
        f"  Hugging Face hf/ (config.json, model.safetensors, tokenizer.json)",
        f"  curves       loss-curves.png",
        f"  sample       sample.txt",
        f"training loss: first {first:.3f} (iteration {train[0]['iteration']}), "
        f"last {last:.3f} (iteration {train[-1]['iteration']})",
        f"validation loss: {valid[-1]['loss']:.3f} (after iteration {valid[-1]['iteration']})",
        f"speed: {mean([r['tokens_per_s'] for r in steady]):.0f} tokens/s, MFU "
        + (f"{100 * mean(mfu):.1f}%" if mfu else "unknown (no gemm peak)"),
        f"logits: transformers = mg-train's forward (max |difference| "
        f"{check['max_abs_diff']:.2g} <= {check['tolerance']:.2g})",
        "sample (transformers, greedy):",
        *("  " + line for line in (check["prompt"] + check["continuation"]).splitlines()),
    ]
    print("\n".join(lines))
    if not last < 0.9 * first:
        print(f"demo-summary.py: error: the training loss did not go down: {first:.3f} -> "
              f"{last:.3f}", file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) != 4 or not argv[3].isdigit():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        return summary(argv[1], argv[2], int(argv[3]))
    except (OSError, ValueError, KeyError) as e:
        print(f"demo-summary.py: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
