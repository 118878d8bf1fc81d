#!/usr/bin/env python3
"""plot-metrics.py — draws mg-train's metrics file (--log-file metrics.jsonl) as a PNG.

Usage: scripts/plot-metrics.py METRICS.jsonl OUT.png

Two panels: the training lm loss per iteration with the validation losses on top, and the
throughput (tokens/s, and MFU when the peak was known) per iteration. Needs matplotlib
(Agg backend, no display); without it the script says so and exits with status 2.
Exit status: 0 done, 1 unreadable metrics file, 2 usage error or no matplotlib.
"""
import json
import sys


def read_metrics(path):
    train, valid = [], []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not a JSON line: {e}") from None
            (train if rec.get("kind") == "train" else valid).append(rec)
    if not train:
        raise ValueError(f"{path}: no training records")
    return train, [r for r in valid if r.get("kind") == "valid"]


def plot(train, valid, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    its = [r["iteration"] for r in train]
    ax1.plot(its, [r["loss"] for r in train], lw=1, label="train lm loss")
    if valid:
        ax1.plot([r["iteration"] for r in valid], [r["loss"] for r in valid], "o-",
                 label="validation lm loss")
    ax1.set_ylabel("lm loss (nats/token)")
    ax1.legend()
    ax1.grid(alpha=0.3)
    ax2.plot(its, [r["tokens_per_s"] for r in train], lw=1, color="C2", label="tokens/s")
    ax2.set_ylabel("tokens/s")
    ax2.set_xlabel("iteration")
    ax2.grid(alpha=0.3)
    mfu = [(r["iteration"], r["mfu"]) for r in train if r.get("mfu") is not None]
    if mfu:
        ax3 = ax2.twinx()
        ax3.plot([m[0] for m in mfu], [100 * m[1] for m in mfu], lw=1, color="C3", alpha=0.6)
        ax3.set_ylabel("MFU (%)", color="C3")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        train, valid = read_metrics(argv[1])
    except (OSError, ValueError) as e:
        print(f"plot-metrics.py: error: {e}", file=sys.stderr)
        return 1
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plot-metrics.py: matplotlib is not installed: cannot draw "
              f"{len(train)} iterations", file=sys.stderr)
        return 2
    plot(train, valid, argv[2])
    print(f"plot-metrics.py: wrote {argv[2]} ({len(train)} iterations, "
          f"{len(valid)} validations)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
