#!/usr/bin/env python3
"""mg-train on one NVIDIA GPU in bf16 against PyTorch's transformers loop (issue 14).

Models (mock data through the NullTokenizer: no files needed; bf16 mixed precision with
fp32 master weights, AdamW, clipping at 1.0, no dropout, one micro batch per iteration):

  gpt2    GPT-2 124M: 12 x 768, 12 heads, vocabulary 50257, B=16, T=1024
  llama   Llama-style 1.2B (Llama-3.2-1B's shape): 16 x 2048, 32 heads / 8 query groups,
          SwiGLU 8192, RMSNorm, RoPE (base 500000), tied embeddings, vocabulary 128256,
          B=4, T=2048

Printed per model and trainer:

  s/iter     median iteration time, the first `--warmup` iterations left out (mg-train's
             CUDA-event times from its --log-file; PyTorch: torch.cuda.synchronize around
             each step)
  tokens/s   B*T / s/iter
  TFLOP/s    Megatron's FLOPs per iteration (mg-train --dry-run: num_floating_point_operations,
             the same count for both trainers) / s/iter
  MFU        TFLOP/s / the GPU's dense bf16 peak: mg-train's own (its log's tflops / mfu,
             from its table keyed on the exact device name), the same for both trainers; a
             device mg-train does not know prints "unknown", never a guess
  peak MiB   the process's peak device memory as nvidia-smi sees it (sampled every 0.1 s;
             the CUDA context included; "device-wide" where nvidia-smi cannot see the
             process, as in a container: the GPU's used memory above the start), beside
             --dry-run's plan for mg-train and torch.cuda.max_memory_allocated for PyTorch

The PyTorch side, when torch is importable and sees a GPU: transformers' GPT2LMHeadModel /
LlamaForCausalLM (the vocabulary padded as mg-train pads it) with SDPA attention, fp32
weights under torch.autocast(bfloat16), torch.optim.AdamW(fused=True), clip_grad_norm_, no
torch.compile. Otherwise it prints why it did not run.

Exit status: 0 after measuring; 1 when no GPU is visible (nothing is measured) or a trainer
fails; 2 when mg-train cannot train on a GPU (no --device).

    bench_gpu.py --bin BIN [--only gpt2|llama] [--iters N] [--warmup N] [--no-torch]
    bench_gpu.py torch-loop ...   (internal: the PyTorch loop in its own process)
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

COMMON = ["--lr", "3e-4", "--min-lr", "3e-5", "--lr-decay-style", "cosine",
          "--weight-decay", "0.1", "--clip-grad", "1.0", "--init-method-std", "0.02",
          "--tokenizer-type", "NullTokenizer", "--mock-data", "--eval-iters", "0",
          "--seed", "1234", "--device", "cuda", "--bf16"]
MODELS = {
    "gpt2": {
        "title": "GPT-2 124M", "B": 16, "T": 1024, "vocab": 50257,
        "args": ["--num-layers", "12", "--hidden-size", "768", "--num-attention-heads", "12",
                 "--max-position-embeddings", "1024"],
    },
    "llama": {
        "title": "Llama-style 1.2B (16 x 2048, GQA 32/8, SwiGLU 8192)", "B": 4, "T": 2048,
        "vocab": 128256,
        "args": ["--num-layers", "16", "--hidden-size", "2048", "--num-attention-heads", "32",
                 "--group-query-attention", "--num-query-groups", "8",
                 "--ffn-hidden-size", "8192", "--swiglu", "--normalization", "RMSNorm",
                 "--position-embedding-type", "rope", "--rotary-base", "500000",
                 "--max-position-embeddings", "2048", "--disable-bias-linear"],
    },
}


def smi(query, kind):
    """nvidia-smi's CSV rows (lists of fields) for --query-KIND=QUERY."""
    p = subprocess.run(["nvidia-smi", f"--query-{kind}={query}", "--format=csv,noheader,nounits"],
                       capture_output=True, text=True)
    return [[x.strip() for x in l.split(",")] for l in p.stdout.splitlines() if l.strip()]


def gpu_name():
    """The first GPU's name as nvidia-smi prints it, or None when none is visible."""
    try:
        rows = smi("name", "gpu")
    except OSError:
        return None
    return rows[0][0] if rows else None


def device_used():
    """MiB in use on the first GPU."""
    rows = smi("memory.used", "gpu")
    return int(rows[0][0]) if rows and rows[0][0].isdigit() else 0


class PeakMemory(threading.Thread):
    """Samples the device memory of process `pid` (MiB) every 0.1 s until stopped: its own
    line in nvidia-smi's process list, or (inside a container, where nvidia-smi shows other
    process ids) the first GPU's used memory above what was used before the start."""

    def __init__(self, pid, baseline):
        super().__init__(daemon=True)
        self.pid, self.baseline, self.halt = str(pid), baseline, threading.Event()
        self.own = self.device = 0

    def run(self):
        while not self.halt.is_set():
            for f in smi("pid,used_memory", "compute-apps"):
                if len(f) == 2 and f[0] == self.pid and f[1].isdigit():
                    self.own = max(self.own, int(f[1]))
            self.device = max(self.device, device_used() - self.baseline)
            self.halt.wait(0.1)

    def stop(self):
        """(peak MiB, how it was measured)."""
        self.halt.set()
        self.join()
        if self.own:
            return self.own, "process"
        return self.device, "device-wide"


def run_sampled(cmd, what):
    """(stdout, stderr, (peak device MiB, how)) of cmd, which must exit 0."""
    baseline = device_used()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mem = PeakMemory(p.pid, baseline)
    mem.start()
    out, err = p.communicate()
    peak = mem.stop()
    if p.returncode != 0:
        sys.exit(f"bench-gpu: {what} failed ({p.returncode}): {' '.join(cmd)}\n{err[-3000:]}")
    return out, err, peak


def mg_cmd(a, m, extra):
    spec = MODELS[m]
    return [os.path.join(a.bin, "mg-train"), *COMMON, *spec["args"],
            "--vocab-size", str(spec["vocab"]), "--seq-length", str(spec["T"]),
            "--micro-batch-size", str(spec["B"]), "--global-batch-size", str(spec["B"]),
            "--train-iters", str(a.iters), *extra]


def dry_run(a, m):
    """(FLOPs per iteration, planned MiB per rank) from mg-train --dry-run."""
    p = subprocess.run(mg_cmd(a, m, ["--dry-run"]), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-gpu: mg-train --dry-run failed ({p.returncode}):\n{p.stderr}")
    flops = int(re.search(r"^FLOPs per iteration: (\d+)", p.stdout, re.M).group(1))
    mib = float(re.search(r"^memory per rank.*total ([0-9.]+) MiB", p.stdout, re.M).group(1))
    return flops, mib


def run_mg(a, m):
    """(per-iteration seconds, peak device memory, the dense peak FLOP/s mg-train's MFU is
    relative to or None when it prints "unknown") of mg-train."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log.jsonl")
        _, _, peak = run_sampled(mg_cmd(a, m, ["--log-interval", "1", "--log-file", log]),
                                 "mg-train")
        rows = [r for r in map(json.loads, open(log)) if r["kind"] == "train"]
    known = [r for r in rows if r.get("mfu") and r.get("tflops")]
    device_peak = known[-1]["tflops"] * 1e12 / known[-1]["mfu"] if known else None
    return [r["elapsed_ms"] / 1e3 for r in rows], peak, device_peak


def torch_status():
    """None when torch is importable and sees a GPU, else why the PyTorch loop cannot run."""
    p = subprocess.run([sys.executable, "-c", "import torch, transformers; "
                        "print(torch.cuda.is_available())"], capture_output=True, text=True)
    if p.returncode != 0:
        return f"torch or transformers not importable by {sys.executable}"
    return None if p.stdout.strip() == "True" else "torch sees no GPU"


def run_torch(a, m):
    """(per-iteration seconds, peak device MiB, torch's max allocated MiB)."""
    cmd = [sys.executable, os.path.abspath(__file__), "torch-loop", "--model", m,
           "--iters", str(a.iters)]
    out, _, peak = run_sampled(cmd, "the PyTorch loop")
    r = json.loads(out.strip().splitlines()[-1])
    return r["seconds"], peak, r["max_allocated_mib"]


def padded(vocab):
    """The vocabulary rounded up to a multiple of 128, as mg-train pads it (TP 1)."""
    return (vocab + 127) // 128 * 128


def torch_model(m):
    import transformers
    spec = MODELS[m]
    if m == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=padded(spec["vocab"]), n_positions=spec["T"],
                                      n_embd=768, n_layer=12, n_head=12, resid_pdrop=0.0,
                                      embd_pdrop=0.0, attn_pdrop=0.0, initializer_range=0.02,
                                      attn_implementation="sdpa")
        return transformers.GPT2LMHeadModel(cfg)
    cfg = transformers.LlamaConfig(vocab_size=padded(spec["vocab"]), hidden_size=2048,
                                   intermediate_size=8192, num_hidden_layers=16,
                                   num_attention_heads=32, num_key_value_heads=8,
                                   max_position_embeddings=spec["T"], rope_theta=500000.0,
                                   tie_word_embeddings=True, attention_bias=False,
                                   mlp_bias=False, rms_norm_eps=1e-5, attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(cfg)


def torch_loop(argv):
    """The PyTorch side: prints {"seconds": [...], "max_allocated_mib": M}."""
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--iters", type=int, required=True)
    a = p.parse_args(argv)
    import torch
    torch.manual_seed(1234)
    spec = MODELS[a.model]
    dev = torch.device("cuda")
    model = torch_model(a.model).to(dev)
    model.train()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.999), eps=1e-8, fused=True)
    gen = torch.Generator(device=dev).manual_seed(1234)
    secs = []
    for _ in range(a.iters):
        ids = torch.randint(0, spec["vocab"], (spec["B"], spec["T"]), device=dev, generator=gen)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        secs.append(time.perf_counter() - t0)
    print(json.dumps({"seconds": secs,
                      "max_allocated_mib": torch.cuda.max_memory_allocated() / 2**20}))


def row(name, t, tokens, flops, device_peak, mem, note):
    tflops = flops / t / 1e12
    mfu = f"{100 * tflops * 1e12 / device_peak:6.1f}%" if device_peak else "unknown"
    print(f"  {name:10} {t:8.4f} {tokens / t:10.0f} {tflops:8.1f} {mfu:>8} {mem[0]:9.0f}  "
          f"({mem[1]}) {note}")


def bench_model(a, m, why_no_torch):
    spec = MODELS[m]
    tokens = spec["B"] * spec["T"]
    flops, plan = dry_run(a, m)
    secs, mg_peak, device_peak = run_mg(a, m)
    if len(secs) <= a.warmup:
        sys.exit(f"bench-gpu: mg-train logged {len(secs)} iterations, need more than "
                 f"--warmup {a.warmup}")
    mg_t = statistics.median(secs[a.warmup:])
    print(f"\n{spec['title']}: B={spec['B']} T={spec['T']} bf16, {a.iters} iterations "
          f"(median of the last {a.iters - a.warmup}); {flops / 1e12:.2f} TFLOP per iteration; "
          "dense bf16 peak (mg-train's table): " +
          (f"{device_peak / 1e12:.1f} TFLOP/s" if device_peak else "unknown"))
    print(f"  {'':10} {'s/iter':>8} {'tokens/s':>10} {'TFLOP/s':>8} {'MFU':>8} "
          f"{'peak MiB':>9}")
    row("mg-train", mg_t, tokens, flops, device_peak, mg_peak,
        f"--dry-run plan {plan:.0f} MiB: peak / plan {mg_peak[0] / plan:.3f}")
    if why_no_torch:
        print(f"  PyTorch    not run: {why_no_torch}")
        return
    t_secs, t_peak, t_alloc = run_torch(a, m)
    t_t = statistics.median(t_secs[a.warmup:])
    row("PyTorch", t_t, tokens, flops, device_peak, t_peak,
        f"torch max allocated {t_alloc:.0f} MiB")
    print(f"  mg-train / PyTorch tokens/s: {t_t / mg_t:.2f}x")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "torch-loop":
        return torch_loop(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--only", choices=sorted(MODELS))
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--no-torch", action="store_true", help="leave out the PyTorch loop")
    a = p.parse_args()
    if a.iters <= a.warmup:
        sys.exit("bench-gpu: --iters must exceed --warmup")
    name = gpu_name()
    if not name:
        print("bench-gpu: no NVIDIA GPU visible (nvidia-smi lists none): nothing measured",
              file=sys.stderr)
        return 1
    helptext = subprocess.run([os.path.join(a.bin, "mg-train"), "--help"],
                              capture_output=True, text=True).stdout
    if "--device" not in helptext:
        print(f"bench-gpu: {a.bin}/mg-train has no --device flag: it cannot train on a GPU",
              file=sys.stderr)
        return 2
    why_no_torch = "--no-torch" if a.no_torch else torch_status()
    print(f"GPU: {name}")
    start = time.monotonic()
    for m in ([a.only] if a.only else list(MODELS)):
        bench_model(a, m, why_no_torch)
    print(f"\nbench-gpu: {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
