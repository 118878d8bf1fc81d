#!/usr/bin/env python3
"""The expected step time and MFU of docs/SCALING.md, from mg-train --dry-run's plans.

For each model and layout it runs `mg-train --dry-run` (WORLD_SIZE=N: the plan for N ranks)
and reads the FLOPs per iteration, the memory per rank and the communication per rank, then
models one iteration on H100 SXM GPUs:

  compute   GEMM FLOPs / (GEMM efficiency x peak) + attention FLOPs / attention rate
            + elementwise bytes / (HBM efficiency x HBM bandwidth) + AdamW bytes / its rate
  comm      every collective of the plan: bytes x (n - 1) / n / bus bandwidth (NCCL's busbw
            convention), with the types of a bf16 run (below)
  step      compute + tensor-parallel comm + data-parallel comm (no overlap: mg-train's plan
            has one gradient bucket), and with the data-parallel comm hidden behind the
            backward pass but for one 40M-parameter bucket (Megatron's default bucket size)
  MFU       FLOPs per iteration / N / step time / the dense bf16 peak

The plan counts the CPU trainer's fp32 buffers; a bf16 run (Megatron's rules) reduces the
gradients in fp32 (kept), all-gathers bf16 parameters and moves bf16 activations (halved).
Every constant is in CONSTANTS with its source. Prints docs/SCALING.md's tables (Markdown).

    scaling_model.py --bin BIN
"""
import argparse
import os
import re
import subprocess
import sys
import textwrap

CONSTANTS = {
    # NVIDIA H100 SXM5 data sheet: dense bf16 tensor cores, HBM3
    "peak_bf16": 989.4e12,
    "hbm": 3.35e12,
    # GEMM efficiency per model (MODELS): docs/BENCHMARKS.md's first H200 run (kernels at
    # 7aa63b4) measured cuBLASLt bf16 4096^3 at 88.5% and linear+GeLU 8192x768->3072 at
    # 51.4%; wider models are assumed between the two.
    # The same run: median fraction of HBM bandwidth of the 23 memory-bound kernels; AdamW's
    "hbm_eff": 0.41,
    "adamw_hbm_eff": 0.78,
    # attention: as measured in that run (bf16, forward / backward TFLOP/s), and issue 13's
    # targets (>= 50% / >= 35% of the bf16 peak) for the FlashAttention-2 kernels merged
    # since (cuda-perf), not measured on a GPU yet
    "attn_measured": (8.4e12, 6.9e12),
    "attn_target": (0.50 * 989.4e12, 0.35 * 989.4e12),
    # NCCL busbw: NVLink4 through NVSwitch, reduce-scatter / all-gather ~370 GB/s
    # (NVIDIA/nccl-tests#212); 8 x NDR 400 Gb/s per node, 46-48 GB/s per NIC
    # (NVIDIA/nccl-tests#290), 8 rails: ~368 GB/s, capped by NVLink; a badly tuned 8 x 400G
    # RoCE cluster measured ~100 GB/s (NVIDIA/nccl#2409)
    "busbw_nvlink": 370e9,
    "busbw_ib": 368e9,
    "busbw_ib_poor": 100e9,
    "gpus_per_node": 8,
    "bucket_params": 40e6,
}

def bench_args(name):
    """mg-train's model and batch flags of scripts/bench_gpu.py's model `name`."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_gpu
    m = bench_gpu.MODELS[name]
    return [*m["args"], "--vocab-size", str(m["vocab"]), "--seq-length", str(m["T"]),
            "--micro-batch-size", str(m["B"]), "--global-batch-size", str(m["B"])]


COMMON = ["--tokenizer-type", "NullTokenizer", "--mock-data", "--lr", "1e-4",
          "--train-iters", "100", "--bf16", "--use-distributed-optimizer"]
MODELS = {
    # scripts/bench-gpu.sh's two models, exactly as it runs them (bench_args)
    "gpt2-124m": {
        "title": "GPT-2 124M (12 x 768, T=1024, vocabulary 50257), B=16: bench-gpu.sh's",
        "args": bench_args("gpt2"),
        "tp": 1, "worlds": (1,), "gemm_eff": 0.51, "elementwise_h": 94,
    },
    "llama-1b": {
        "title": "Llama-style 1.2B (Llama-3.2-1B's shape, T=2048), B=4: bench-gpu.sh's",
        "args": bench_args("llama"),
        "tp": 1, "worlds": (1,), "gemm_eff": 0.75, "elementwise_h": 140,
    },
    "gpt2-1.5b": {
        "title": "GPT-2 1.5B (48 x 1600, 25 heads, T=1024, vocabulary 50257)",
        "args": ["--num-layers", "48", "--hidden-size", "1600", "--num-attention-heads", "25",
                 "--seq-length", "1024", "--max-position-embeddings", "1024",
                 "--vocab-size", "50257", "--micro-batch-size", "8",
                 "--global-batch-size", "512"],
        "tp": 1, "worlds": (8, 32), "gemm_eff": 0.70,
        # bytes per token per layer of the elementwise kernels, in units of h (bf16, forward
        # + backward): LayerNorm x2, GeLU, residual adds x2, bias gradients
        "elementwise_h": 94,
    },
    "llama3-8b": {
        "title": "Llama-3 8B (32 x 4096, GQA 32/8, SwiGLU 14336, T=8192, vocabulary 128256)",
        "args": ["--num-layers", "32", "--hidden-size", "4096", "--num-attention-heads", "32",
                 "--group-query-attention", "--num-query-groups", "8",
                 "--ffn-hidden-size", "14336", "--swiglu", "--normalization", "RMSNorm",
                 "--position-embedding-type", "rope", "--rotary-base", "500000",
                 "--untie-embeddings-and-output-weights", "--disable-bias-linear",
                 "--seq-length", "8192", "--max-position-embeddings", "8192",
                 "--vocab-size", "128256", "--micro-batch-size", "1",
                 "--global-batch-size", "128", "--tensor-model-parallel-size", "2",
                 "--sequence-parallel"],
        "tp": 2, "worlds": (8, 32), "gemm_eff": 0.85,
        # RMSNorm x2, SwiGLU, RoPE on q and k, residual adds x2
        "elementwise_h": 140,
    },
}


def plan(a, model, world):
    env = dict(os.environ, WORLD_SIZE=str(world), RANK="0")
    out = subprocess.run([os.path.join(a.bin, "mg-train"), *COMMON, *MODELS[model]["args"],
                          "--dry-run"], env=env, check=True, capture_output=True,
                         text=True).stdout
    num = lambda pat: float(re.search(pat, out, re.M).group(1))
    p = {
        "flops": num(r"^FLOPs per iteration: (\d+)"),
        "tokens": num(r"(\d+) tokens per iteration"),
        "params_rank": num(r"^parameters on the most loaded rank: (\d+)"),
        "weights": num(r"weights ([0-9.]+) MiB"), "grads": num(r"gradients ([0-9.]+) MiB"),
        "optimizer": num(r"optimizer ([0-9.]+) MiB"),
        "activations": num(r"activations ([0-9.]+) MiB"),
        "h": num(r"hidden (\d+)"), "L": num(r"^model: \S+ (\d+) layers"),
        "q": num(r"(\d+) heads") * num(r"kv channels (\d+)"),
        "s": num(r"sequence (\d+)"), "vocab": num(r"padded to (\d+)"),
        "dp": num(r"x DP (\d+)"),
        "comm": [(m[1], m[2], int(m[3]), int(m[4])) for m in re.finditer(
            r"^  total (\w+) ([\w-]+): (\d+) calls, (\d+) bytes", out, re.M)],
    }
    return p


def compute_parts(model, p, world, attn_rates):
    """Seconds of the GEMMs, attention, elementwise kernels (and cross-entropy), AdamW."""
    c, tp = CONSTANTS, MODELS[model]["tp"]
    attn = 6 * p["q"] * p["s"] * p["L"] * p["tokens"]
    gemm = p["flops"] - attn
    t_gemm = gemm / world / (MODELS[model]["gemm_eff"] * c["peak_bf16"])
    # Megatron counts the backward as two forwards; the backward rate was measured on 2.5
    # forwards' FLOPs (docs/BENCHMARKS.md), so its time is 2.5 forwards at that rate
    fwd, bwd = attn_rates
    t_attn = attn / 3 / world * (1 / fwd + 2.5 / bwd)
    tokens_rank = p["tokens"] / (world / tp)
    elem = MODELS[model]["elementwise_h"] * p["h"] / tp * p["L"] * tokens_rank
    xent = 6 * p["vocab"] / tp * tokens_rank  # bf16 logits read, gradient written and read
    t_mem = (elem + xent) / (c["hbm_eff"] * c["hbm"])
    t_adam = 30 * p["params_rank"] / p["dp"] / (c["adamw_hbm_eff"] * c["hbm"])
    return t_gemm, t_attn, t_mem, t_adam


def comm_time(p, world, ib_busbw):
    """(tensor-parallel seconds, data-parallel seconds, data-parallel bytes) per iteration."""
    c = CONSTANTS
    tp_s = dp_s = dp_bytes = 0.0
    for group, op, _, nbytes in p["comm"]:
        if group not in ("tensor", "data") or op == "all-reduce":
            continue  # the all-reduces are a few bytes (loss, norms)
        if group == "tensor" or op == "all-gather":
            nbytes /= 2  # bf16 activations, bf16 parameters; gradients stay fp32
        n = world // int(p["dp"]) if group == "tensor" else int(p["dp"])
        across_nodes = group == "data" and world > c["gpus_per_node"]
        bw = ib_busbw if across_nodes else c["busbw_nvlink"]
        t = nbytes * (n - 1) / n / bw
        if group == "tensor":
            tp_s += t
        else:
            dp_s += t
            dp_bytes += nbytes
    return tp_s, dp_s, dp_bytes


def row(model, p, world, attn_name, attn_rates, ib_name, ib_busbw):
    c = CONSTANTS
    t_c = sum(compute_parts(model, p, world, attn_rates))
    t_tp, t_dp, dp_bytes = comm_time(p, world, ib_busbw)
    hidden = min(1.0, c["bucket_params"] / p["params_rank"])  # one bucket stays exposed
    steps = (t_c + t_tp + t_dp, t_c + t_tp + t_dp * hidden)
    mfu = [p["flops"] / world / t / c["peak_bf16"] for t in steps]
    per_gpu = [p["tokens"] / world / t for t in steps]
    nodes = "1 node" if world <= c["gpus_per_node"] else f"{world // 8} nodes"
    net = ib_name if world > c["gpus_per_node"] else "NVLink" if world > 1 else "-"
    return (f"| {world} ({nodes}) | {attn_name} | {net} | {t_c:.3f} | {t_tp:.3f} | "
            f"{t_dp:.3f} | {steps[0]:.3f} / {steps[1]:.3f} | {per_gpu[0]:,.0f} / "
            f"{per_gpu[1]:,.0f} | {100 * mfu[0]:.1f}% / {100 * mfu[1]:.1f}% |")


def memory_line(p):
    opt = p["optimizer"]  # --dry-run gives the distributed optimizer's shard (12 / DP)
    total = p["weights"] + p["grads"] + opt + p["activations"]
    return (f"weights {p['weights']:.0f} + gradients {p['grads']:.0f} + optimizer shard "
            f"{opt:.0f} + activations {p['activations']:.0f} = {total:.0f} MiB per GPU")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    a = ap.parse_args()
    c = CONSTANTS
    for model, spec in MODELS.items():
        print(f"\n### {spec['title']}\n")
        plans = {w: plan(a, model, w) for w in spec["worlds"]}
        for w, p in plans.items():
            parts = compute_parts(model, p, w, c["attn_target"])
            text = (f"- {w} GPU{'s' if w > 1 else ''} (TP {spec['tp']} x DP {int(p['dp'])}): "
                    f"{p['flops'] / 1e12:,.0f} TFLOP and {p['tokens']:,.0f} tokens per "
                    f"iteration; {memory_line(p)}; compute with the target attention: " +
                    ", ".join(f"{n} {100 * t / sum(parts):.0f}%" for n, t in
                              zip(("GEMMs", "attention", "elementwise", "AdamW"), parts)))
            print(textwrap.fill(text, 96, subsequent_indent="  "))
        print("\n| GPUs | attention kernels | DP network | compute s | TP comm s | DP comm s "
              "| step s (no overlap / overlap) | tokens/s per GPU | MFU |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for w, p in plans.items():
            nets = [("NDR 8 rails", c["busbw_ib"]), ("poor RoCE", c["busbw_ib_poor"])]
            for attn_name, rates in (("measured", c["attn_measured"]),
                                     ("issue 13 target", c["attn_target"])):
                for ib_name, bw in (nets if w > c["gpus_per_node"] else nets[:1]):
                    print(row(model, p, w, attn_name, rates, ib_name, bw))


if __name__ == "__main__":
    main()
