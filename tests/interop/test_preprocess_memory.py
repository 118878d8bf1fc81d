"""Memory of mg-preprocess per added worker (issue 17: peak RSS grows by at most the
tokenizer's cache bound per worker, whatever the corpus size).

Each worker has its own encoder (its caches, its scratch) and two batch slots in the
pipeline (preprocess/pipeline.c: one being encoded, one of reorder slack; at most
BATCH_MAX_BYTES = 256 KiB of text per batch, with its int64 ids). So peak RSS with 4
workers minus peak RSS with 1 worker must be at most 3 * (cache bound + SLACK), where the
cache bound is fixed per tokenizer type:

  - GPT-2 (byte-level BPE, libcommon/tok/bpe_merge.c): 16 MiB word cache + 8 MiB
    long-piece cache = 24 MiB;
  - SentencePiece BPE .model (libcommon/tok/spm_bpe.c): span cache, 2^18 slots of 8 bytes
    + an 8 MiB arena = 10 MiB, and the table of 3-byte characters, 64K x 4 bytes = 256 KiB;
  - SentencePiece Unigram .model: no cache, 0;

and SLACK = 8 MiB covers the rest: the two batch slots (2 x 256 KiB of text and at most
one int64 id per byte: 4.5 MiB), the encoder's scratch for documents of at most 16 KB,
the thread's stack and malloc arena. Documents longer than a batch raise the slots and
the scratch with the longest document (about 20 bytes per byte of it for a Unigram
.model); that is not measured here: the corpus is 12 MB of documents of 2-16 KB, larger
than all the slots of 4 workers (10 x 256 KiB) together. The measure is the child's peak
resident set (ru_maxrss, from a small launcher), bytes, not time.
"""
import os
import random
import subprocess
import sys

import pytest

from conftest import VOCAB_DIR, bin_dir_path, write_texts_jsonl

import sentencepiece as spm

MIB = 1 << 20
SLACK = 8 * MIB
BOTCHAN = VOCAB_DIR / "sentencepiece" / "botchan.txt"


def corpus_texts(seed=17, total=12_000_000):
    """Documents of 2-16 KB of botchan's words in random order, with random numbers and
    letter runs (so the caches keep meeting new pieces), total bytes >= total."""
    rng = random.Random(seed)
    words = BOTCHAN.read_text(encoding="utf-8").split()
    texts, size = [], 0
    while size < total:
        want, parts, n = rng.randint(2000, 16000), [], 0
        while n < want:
            r = rng.random()
            w = (str(rng.randint(0, 10**6)) if r < 0.05 else
                 "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                 if r < 0.15 else rng.choice(words))
            parts.append(w)
            n += len(w) + 1
        texts.append(" ".join(parts))
        size += n
    return texts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("memory")
    return write_texts_jsonl(d / "corpus.jsonl", corpus_texts())


@pytest.fixture(scope="module")
def bpe_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("memory_spm")
    spm.SentencePieceTrainer.train(input=str(BOTCHAN), model_prefix=str(d / "bpe"),
                                   model_type="bpe", vocab_size=4000, byte_fallback=True,
                                   minloglevel=2)
    return d / "bpe.model"


# Run from a fresh small interpreter: a child's ru_maxrss starts from the resident size of
# the process it was forked from (exec folds the old image's high-water mark in), and this
# process holds the corpus and sentencepiece; the launcher is ~10 MB.
LAUNCHER = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def peak_rss(args):
    """Peak resident set of mg-preprocess run with args, in bytes (its own)."""
    p = subprocess.run([sys.executable, "-I", "-c", LAUNCHER,
                        str(bin_dir_path() / "mg-preprocess")] + [str(a) for a in args],
                       capture_output=True, text=True, check=True)
    rc, kb = p.stdout.split()
    assert rc == "0", p.stderr
    return int(kb) * 1024


def tokenizer_flags(name, bpe_model):
    if name == "gpt2":
        return ["--tokenizer-type", "GPT2BPETokenizer",
                "--vocab-file", VOCAB_DIR / "gpt2" / "gpt2-vocab.json",
                "--merge-file", VOCAB_DIR / "gpt2" / "gpt2-merges.txt"]
    model = bpe_model if name == "spm_bpe" else VOCAB_DIR / "sentencepiece" / "test_ja_model.model"
    return ["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", model]


CACHE_BOUND = {"gpt2": 24 * MIB, "spm_bpe": 10 * MIB + 256 * 1024, "spm_unigram": 0}


@pytest.mark.parametrize("name", sorted(CACHE_BOUND))
def test_growth_per_worker_is_the_cache_bound(name, corpus, bpe_model, tmp_path):
    flags = tokenizer_flags(name, bpe_model)
    rss = {}
    for workers in (1, 4):
        rss[workers] = peak_rss(["--input", corpus, "--output-prefix", tmp_path / f"w{workers}",
                                 "--workers", workers, "--append-eod", "--quiet"] + flags)
    growth = rss[4] - rss[1]
    bound = 3 * (CACHE_BOUND[name] + SLACK)
    print(f"{name}: peak RSS 1 worker {rss[1] / MIB:.1f} MiB, 4 workers {rss[4] / MIB:.1f} MiB, "
          f"growth {growth / MIB:.1f} MiB <= {bound / MIB:.0f} MiB")
    assert growth <= bound, (
        f"{name}: peak RSS grows by {growth / MIB:.1f} MiB from 1 to 4 workers, more than "
        f"3 x (cache bound {CACHE_BOUND[name] / MIB:.0f} MiB + slack {SLACK / MIB:.0f} MiB)")
    assert rss[1] < 100 * 1000 * 1000, f"{name}: {rss[1] / 1e6:.1f} MB with one worker"
