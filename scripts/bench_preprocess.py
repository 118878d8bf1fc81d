#!/usr/bin/env python3
"""Times mg-preprocess against the Python peers on one corpus and prints MB/s and ratios.

MB are 10^6 bytes of document text (the UTF-8 bytes of the "text" values), the same
denominator for every contender; mg-preprocess's time is the whole process (JSON parsing,
tokenizing, writing .bin/.idx), the peers' time is encoding only (they are given the decoded
strings), so the ratios are conservative for mg-preprocess.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def load_texts(corpus):
    with open(corpus, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def time_mg(binary, corpus, args, workers):
    with tempfile.TemporaryDirectory() as d:
        cmd = [binary, "--input", corpus, "--output-prefix", os.path.join(d, "out"),
               "--workers", str(workers), "--quiet", "--append-eod"] + args
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return time.perf_counter() - t0


def time_peer(encode, texts):
    t0 = time.perf_counter()
    for t in texts:
        encode(t)
    return time.perf_counter() - t0


def tiktoken_r50k(vocab):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    ranks = load_tiktoken_bpe(os.path.join(vocab, "tiktoken", "r50k_base.tiktoken"))
    pat = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
    enc = tiktoken.Encoding("r50k_base", pat_str=pat, mergeable_ranks=ranks,
                            special_tokens={"<|endoftext|>": 50256})
    return lambda t: enc.encode(t, allowed_special="all")


def hf_gpt2(vocab):
    from transformers import GPT2TokenizerFast
    tok = GPT2TokenizerFast(vocab_file=os.path.join(vocab, "gpt2", "gpt2-vocab.json"),
                            merges_file=os.path.join(vocab, "gpt2", "gpt2-merges.txt"))
    backend = tok.backend_tokenizer
    return lambda t: backend.encode(t).ids


def time_megatron(megatron_dir, corpus, vocab, extra_path, limit_mb=8):
    """Megatron's tools/preprocess_data.py (legacy GPT-2 tokenizer: the current one needs the
    Hugging Face hub) on the first limit_mb MB of the corpus; returns (seconds, MB of text)."""
    with tempfile.TemporaryDirectory() as d:
        part = os.path.join(d, "part.jsonl")
        mb = 0.0
        with open(corpus, encoding="utf-8") as f, open(part, "w", encoding="utf-8") as out:
            for line in f:
                out.write(line)
                mb += len(json.loads(line)["text"].encode("utf-8", "surrogatepass")) / 1e6
                if mb >= limit_mb:
                    break
        env = dict(os.environ, PYTHONPATH=extra_path)
        cmd = [sys.executable, os.path.join(megatron_dir, "tools", "preprocess_data.py"),
               "--input", part, "--output-prefix", os.path.join(d, "out"),
               "--tokenizer-type", "GPT2BPETokenizer", "--legacy-tokenizer",
               "--vocab-file", os.path.join(vocab, "gpt2", "gpt2-vocab.json"),
               "--merge-file", os.path.join(vocab, "gpt2", "gpt2-merges.txt"),
               "--workers", "1", "--append-eod", "--log-interval", "1000000"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0, mb


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--vocab", required=True)
    a = ap.parse_args()
    texts = load_texts(a.corpus)
    mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
    print(f"corpus: {a.corpus}: {len(texts)} documents, {mb:.1f} MB of text, "
          f"{os.cpu_count()} cores")
    gpt2 = ["--tokenizer-type", "GPT2BPETokenizer",
            "--vocab-file", os.path.join(a.vocab, "gpt2", "gpt2-vocab.json"),
            "--merge-file", os.path.join(a.vocab, "gpt2", "gpt2-merges.txt")]
    mg = os.path.join(a.bin, "mg-preprocess")
    rows = []
    for w in (1, 2):
        s = time_mg(mg, a.corpus, gpt2, w)
        rows.append((f"mg-preprocess GPT-2 end to end, {w} worker(s)", s, w))
    rows.append(("tiktoken r50k encode, 1 thread", time_peer(tiktoken_r50k(a.vocab), texts), 1))
    rows.append(("HF tokenizers GPT-2 encode, 1 thread", time_peer(hf_gpt2(a.vocab), texts), 1))
    mdir = os.environ.get("MEGATRON_LM_DIR")
    if mdir:
        s, part_mb = time_megatron(mdir, a.corpus, a.vocab, os.environ.get("MG_BENCH_PYEXTRA", ""))
        rows.append((f"Megatron preprocess_data.py, 1 worker ({part_mb:.0f} MB)", s * mb / part_mb, 1))
    base = {name: mb / s / cores for name, s, cores in rows}
    print(f"{'contender':48s} {'seconds':>8s} {'MB/s':>8s} {'MB/s/core':>10s}")
    for name, s, cores in rows:
        print(f"{name:48s} {s:8.2f} {mb / s:8.1f} {mb / s / cores:10.1f}")
    mg1 = base[rows[0][0]]
    print()
    print(f"mg-preprocess (1 worker) / tiktoken per core: {mg1 / base[rows[2][0]]:.1f}x")
    print(f"mg-preprocess (1 worker) / HF tokenizers per core: {mg1 / base[rows[3][0]]:.1f}x")
    print(f"scaling 1 -> 2 workers: {rows[0][1] / rows[1][1]:.2f}x")
    if mdir:
        print(f"mg-preprocess (1 worker) / Megatron preprocess_data.py per core: "
              f"{mg1 / base[rows[4][0]]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
