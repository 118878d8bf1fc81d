#!/usr/bin/env python3
"""mg-train data parallelism on this machine: communication volume and throughput.

For GPT-2 124M (12 x 768, vocabulary 50257 through --mock-data and the NullTokenizer: the
same shapes as GPT-2, no files needed), global batch 2 x micro batch B, sequence T, fp32:

  volume     for DP = 2 (all-reduce) and DP = 2 with --use-distributed-optimizer
             (reduce-scatter + all-gather): the payload bytes per group and operation that
             the comm layer counted in the last training step (mg-train's "measured" notes)
             beside mg-train --dry-run's plan ("total" rows, WORLD_SIZE=2). Any difference
             is an error (exit 1).
  tokens/s   global tokens per iteration / median iteration time (the first iteration left
             out), for: 1 process x N threads; 2 processes x N/2 threads (mpirun, DP = 2);
             the same with the distributed optimizer. overhead = 1 - DP / single
             (target <= 10% for DP = 2).

    bench_dist.py --bin BIN [--iters N] [--threads N] [--batch B] [--seq T]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

MODEL = ["--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
         "--max-position-embeddings", "1024", "--lr", "3e-4", "--min-lr", "3e-5",
         "--lr-decay-style", "cosine", "--weight-decay", "0.1", "--clip-grad", "1.0",
         "--tokenizer-type", "NullTokenizer", "--vocab-size", "50257", "--mock-data",
         "--eval-iters", "0", "--log-interval", "1", "--seed", "1234"]


def totals(text, word):
    pat = re.compile(word + r" (\w+) ([\w-]+): (\d+) calls, (\d+) bytes")
    return {(m[1], m[2]): (int(m[3]), int(m[4])) for m in pat.finditer(text)}


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-dist: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def train(a, np, threads, extra):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.jsonl")
        args = [os.path.join(a.bin, "mg-train"), *MODEL, "--seq-length", str(a.seq),
                "--micro-batch-size", str(a.batch), "--global-batch-size", str(2 * a.batch),
                "--train-iters", str(a.iters), "--log-file", log, *extra]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        cmd = args if np == 1 else [shutil.which("mpirun"), "--oversubscribe", "-np", str(np),
                                    "--bind-to", "none", *args]
        p = run(cmd, env)
        rows = [json.loads(l) for l in open(log)]
        secs = [r["elapsed_ms"] / 1e3 for r in rows if r["kind"] == "train"][1:]
        tps = 2 * a.batch * a.seq / statistics.median(secs)
        return tps, totals(p.stderr, "measured"), p.stderr


def plan(a, extra):
    cmd = [os.path.join(a.bin, "mg-train"), *MODEL, "--seq-length", str(a.seq),
           "--micro-batch-size", str(a.batch), "--global-batch-size", str(2 * a.batch),
           "--train-iters", str(a.iters), "--dry-run", *extra]
    return totals(run(cmd, dict(os.environ, WORLD_SIZE="2")).stdout, "total")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    a = ap.parse_args()
    print(f"mg-train data parallelism: GPT-2 124M, global batch {2 * a.batch} x {a.seq} "
          f"tokens, {a.iters} iterations (first left out), {a.threads} threads in all")
    single, _, _ = train(a, 1, a.threads, [])
    print(f"  1 process  x {a.threads} threads:            {single:9.1f} tokens/s")
    bad = 0
    for name, extra in (("DP=2", []), ("DP=2 distributed optimizer",
                                       ["--use-distributed-optimizer"])):
        tps, measured, _ = train(a, 2, max(1, a.threads // 2), extra)
        print(f"  2 processes x {max(1, a.threads // 2)} thread, {name:27s}: {tps:9.1f} "
              f"tokens/s, overhead {100 * (1 - tps / single):5.1f}% (target <= 10%)")
        planned = plan(a, extra)
        print(f"    communication per iteration, {name} (payload bytes, rank 0):")
        print(f"      {'group op':28s} {'plan calls':>10s} {'plan bytes':>14s} "
              f"{'measured calls':>14s} {'measured bytes':>14s}")
        for key in sorted(set(planned) | set(measured)):
            p, m = planned.get(key, (0, 0)), measured.get(key, (0, 0))
            ok = p == m
            bad += not ok
            print(f"      {key[0] + ' ' + key[1]:28s} {p[0]:10d} {p[1]:14d} {m[0]:14d} "
                  f"{m[1]:14d} {'' if ok else 'MISMATCH'}")
    if bad:
        sys.exit(f"bench-dist: {bad} rows of measured volume differ from the plan")


if __name__ == "__main__":
    main()
