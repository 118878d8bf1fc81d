#!/usr/bin/env python3
"""Times mg-train against a PyTorch CPU training loop of the same model, on the same threads.

For each model (GPT-2 124M; a Llama-shaped model of similar size: RMSNorm, RoPE, SwiGLU,
grouped-query attention, untied embeddings, no biases) both trainers run the same number of
iterations of micro batch B x sequence T (fp32, one micro batch per iteration, AdamW with
weight decay 0.1, gradient clipping at 1.0, no dropout), each in its own process so that its
peak RSS is its own. Printed per model:

  tokens/s      B*T / median iteration time, iterations after the first `--warmup` left out;
                the best of `--repeat` runs, mg-train and PyTorch alternated
  ratio         mg-train / PyTorch tokens/s (target >= 1)
  MFU           Megatron's FLOPs per iteration (mg-train --dry-run, the formula in
                mg-train --help) / iteration time / the sgemm peak mg-train measures at
                start-up (the same peak for both; target >= 50% for mg-train)
  RSS / plan    peak RSS of mg-train / the total that --dry-run plans (target <= 1.2)

The PyTorch side is transformers' GPT2LMHeadModel / LlamaForCausalLM (attention through
torch's scaled_dot_product_attention), torch.optim.AdamW (PyTorch's default foreach
implementation) and clip_grad_norm_: what a researcher writing a CPU loop would run. Both get
real tokens: mg-train from the dataset, PyTorch from the same .bin file.

    bench_train.py --bin BIN --data PREFIX --vocab VOCAB [--threads N] [--iters N]
                   [--warmup N] [--repeat N] [--only gpt2|llama]
    bench_train.py torch-loop ...   (internal: the PyTorch loop in its own process)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

B, T = 4, 256
COMMON = ["--seq-length", str(T), "--max-position-embeddings", "1024",
          "--micro-batch-size", str(B), "--global-batch-size", str(B),
          "--lr", "3e-4", "--min-lr", "3e-5", "--lr-decay-style", "cosine",
          "--weight-decay", "0.1", "--clip-grad", "1.0", "--init-method-std", "0.02",
          "--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
          "--split", "100,0,0", "--seed", "1234"]
MODELS = {
    "gpt2": ("GPT-2 124M", []),
    "llama": ("Llama-shaped (12 x 768, GQA 4, SwiGLU 2048)",
              ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "2048",
               "--position-embedding-type", "rope", "--untie-embeddings-and-output-weights",
               "--disable-bias-linear", "--group-query-attention", "--num-query-groups", "4"]),
}
PADDED_VOCAB = 50304  # GPT-2's 50257 rounded up to a multiple of 128, as mg-train pads it


def run_measured(cmd, env):
    """(stdout, stderr, peak RSS in MiB) of cmd, which must exit 0."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        o, e = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        sys.exit(f"bench-train: {' '.join(cmd)} exited {p.returncode}:\n{e}")
    return o, e, usage.ru_maxrss / 1024.0


def mg_args(a, model):
    tok = ["--tokenizer-type", "GPT2BPETokenizer",
           "--vocab-file", os.path.join(a.vocab, "gpt2", "gpt2-vocab.json"),
           "--merge-file", os.path.join(a.vocab, "gpt2", "gpt2-merges.txt")]
    return COMMON + MODELS[model][1] + tok + ["--data-path", a.data]


def dry_run(a, model):
    """(FLOPs per iteration, planned MiB) from mg-train --dry-run."""
    out = subprocess.run([os.path.join(a.bin, "mg-train"), *mg_args(a, model),
                          "--train-iters", str(a.iters), "--dry-run"],
                         check=True, capture_output=True, text=True).stdout
    flops = int(re.search(r"^FLOPs per iteration: (\d+)", out, re.M).group(1))
    mib = float(re.search(r"^memory per rank.*total ([0-9.]+) MiB", out, re.M).group(1))
    return flops, mib


def run_mg(a, model, env):
    """Per-iteration seconds, the measured gemm peak (FLOP/s) and peak RSS (MiB)."""
    with tempfile.TemporaryDirectory() as d:
        metrics = os.path.join(d, "metrics.jsonl")
        cmd = [os.path.join(a.bin, "mg-train"), *mg_args(a, model),
               "--train-iters", str(a.iters), "--log-interval", str(a.iters),
               "--log-file", metrics]
        _, err, rss = run_measured(cmd, env)
        with open(metrics) as f:
            rows = [json.loads(line) for line in f]
    secs = [r["elapsed_ms"] / 1e3 for r in rows if r["kind"] == "train"]
    peak = float(re.search(r"gemm peak ([0-9.]+) GFLOP/s", err).group(1)) * 1e9
    return secs, peak, rss


def run_torch(a, model, env):
    cmd = [sys.executable, os.path.abspath(__file__), "torch-loop", "--model", model,
           "--data", a.data, "--iters", str(a.iters), "--threads", str(a.threads)]
    out, _, rss = run_measured(cmd, env)
    return json.loads(out)["seconds"], rss


def torch_model(model):
    import transformers
    if model == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=PADDED_VOCAB, n_positions=1024, n_embd=768,
                                      n_layer=12, n_head=12, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0, initializer_range=0.02)
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(vocab_size=PADDED_VOCAB, hidden_size=768,
                                   intermediate_size=2048, num_hidden_layers=12,
                                   num_attention_heads=12, num_key_value_heads=4,
                                   max_position_embeddings=1024, tie_word_embeddings=False,
                                   attention_bias=False, mlp_bias=False, rms_norm_eps=1e-5)
    return transformers.LlamaForCausalLM(cfg)


def torch_loop(argv):
    """The PyTorch side: prints {"seconds": [per-iteration seconds]}."""
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    a = p.parse_args(argv)
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(1234)
    m = torch_model(a.model)
    m.train()
    decay = [p for n, p in m.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in m.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.999), eps=1e-8)
    tokens = np.memmap(a.data + ".bin", dtype=np.uint16, mode="r")
    secs = []
    for it in range(a.iters):
        beg = it * B * (T + 1)
        chunk = torch.from_numpy(np.array(tokens[beg:beg + B * (T + 1)], dtype=np.int64))
        chunk = chunk.view(B, T + 1)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = m(input_ids=chunk[:, :-1], labels=chunk[:, :-1]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        secs.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": secs}))


def steady(secs, warmup):
    return statistics.median(secs[warmup:])


def bench_model(a, model, env):
    flops, plan_mib = dry_run(a, model)
    mg_ts, torch_ts, peaks, mg_rss, torch_rss = [], [], [], 0.0, 0.0
    for _ in range(a.repeat):  # alternated, so that both see the same neighbours
        mg_secs, peak, rss = run_mg(a, model, env)
        mg_ts.append(steady(mg_secs, a.warmup))
        peaks.append(peak)
        mg_rss = max(mg_rss, rss)
        torch_secs, rss = run_torch(a, model, env)
        torch_ts.append(steady(torch_secs, a.warmup))
        torch_rss = max(torch_rss, rss)
    mg_t, torch_t, peak = min(mg_ts), min(torch_ts), max(peaks)
    print(f"\n{MODELS[model][0]}: B={B} T={T} fp32, {a.threads} threads, "
          f"{a.iters} iterations (median of the last {a.iters - a.warmup}), best of "
          f"{a.repeat} alternated runs; {flops / 1e9:.1f} GFLOP per iteration; sgemm peak "
          f"{peak / 1e9:.1f} GFLOP/s")
    print("  s/iter of every run: mg-train " + " ".join(f"{t:.3f}" for t in mg_ts) +
          ", PyTorch " + " ".join(f"{t:.3f}" for t in torch_ts))
    print(f"  {'':10} {'s/iter':>8} {'tokens/s':>9} {'MFU':>7} {'peak RSS MiB':>13}")
    for name, t, rss in (("mg-train", mg_t, mg_rss), ("PyTorch", torch_t, torch_rss)):
        print(f"  {name:10} {t:8.3f} {B * T / t:9.1f} {100 * flops / t / peak:6.1f}% "
              f"{rss:13.0f}")
    print(f"  ratio mg-train / PyTorch tokens/s: {torch_t / mg_t:.2f}x (target >= 1)")
    print(f"  mg-train MFU: {100 * flops / mg_t / peak:.1f}% of the sgemm peak "
          f"(target >= 50%)")
    print(f"  mg-train peak RSS / --dry-run plan ({plan_mib:.0f} MiB): "
          f"{mg_rss / plan_mib:.2f} (target <= 1.2)")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "torch-loop":
        return torch_loop(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--data", required=True, help="GPT-2 tokenized dataset prefix (uint16)")
    p.add_argument("--vocab", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=3, help="alternated runs of each trainer")
    p.add_argument("--only", choices=sorted(MODELS))
    a = p.parse_args()
    if a.iters <= a.warmup:
        sys.exit("bench-train: --iters must exceed --warmup")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads))
    for model in ([a.only] if a.only else list(MODELS)):
        bench_model(a, model, env)


if __name__ == "__main__":
    main()
