#!/usr/bin/env python3
"""plot-metrics.py — draws mg-train's metrics file (--log-file metrics.jsonl) as a PNG.

Usage: scripts/plot-metrics.py METRICS.jsonl OUT.png

Two panels, each with its legend: the training lm loss per iteration with the validation
losses on top, and the throughput per iteration (tokens/s on the left axis, MFU in % on its
own right axis when the peak was known). Needs matplotlib (Agg backend, no display). When
the Python that runs it lacks matplotlib, it runs itself again with the Python of the test
environment scripts/setup.sh builds (~/.cache/mgtools/venv-*/, which has it); when there is
none, it says how to get matplotlib and exits with status 2.
Exit status: 0 done, 1 unreadable metrics file, 2 usage error or no matplotlib.
"""
import glob
import json
import os
import sys

RERUN = "MG_PLOT_METRICS_RERUN"  # set when the script runs itself again with another Python


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
    lines = ax2.plot(its, [r["tokens_per_s"] for r in train], lw=1, color="C2",
                     label="tokens/s")
    ax2.set_ylabel("tokens/s", color="C2")
    ax2.set_xlabel("iteration")
    ax2.grid(alpha=0.3)
    mfu = [(r["iteration"], r["mfu"]) for r in train if r.get("mfu") is not None]
    if mfu:  # its own axis: a percentage, not a rate
        ax3 = ax2.twinx()
        lines += ax3.plot([m[0] for m in mfu], [100 * m[1] for m in mfu], lw=1, color="C3",
                          alpha=0.6, label="MFU (%)")
        ax3.set_ylabel("MFU (%)", color="C3")
        ax3.set_ylim(bottom=0)
    ax2.legend(lines, [ln.get_label() for ln in lines], loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def setup_python():
    """The Python of a complete scripts/setup.sh test environment that has matplotlib,
    unless this run is already the second one or runs in that environment."""
    if os.environ.get(RERUN):
        return None
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    for venv in sorted(glob.glob(os.path.join(cache, "mgtools", "venv-*"))):
        py = os.path.join(venv, "bin", "python")
        if os.path.exists(os.path.join(venv, ".complete")) and os.access(py, os.X_OK) \
                and glob.glob(os.path.join(venv, "lib", "python*", "site-packages",
                                           "matplotlib")) \
                and os.path.realpath(venv) != os.path.realpath(sys.prefix):
            return py
    return None


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
        other = setup_python()
        if other:
            os.environ[RERUN] = "1"
            os.execv(other, [other, os.path.abspath(__file__), *argv[1:]])
        print("plot-metrics.py: matplotlib is not installed: cannot draw "
              f"{len(train)} iterations (install it with apt-get install python3-matplotlib, "
              "or pip install matplotlib, or build the test environment with "
              "scripts/setup.sh --python and run the script again)", file=sys.stderr)
        return 2
    plot(train, valid, argv[2])
    print(f"plot-metrics.py: wrote {argv[2]} ({len(train)} iterations, "
          f"{len(valid)} validations)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
