"""Interop tests for the span cache and the short-span merge of the SentencePiece BPE
encoder (libcommon/tok/spm_bpe.c) against the sentencepiece package (encode_as_ids).

A BPE model whose pieces hold no "▁" past their start is encoded "▁"-led span by span;
each span's pieces are cached per encoder (up to CACHE_MAX = 131072 spans of at most 255
bytes, then the cache is emptied), spans of at most 64 bytes are merged by a scan instead
of the heap. Here one tokenize process encodes texts with several times CACHE_MAX
distinct spans (so the cache is emptied, refilled, and spans seen before an emptying
come back), frequent words (cache hits next to misses), spans of 60-70 and of 250-260
bytes (both sides of the short-span and of the cache limits), characters outside the
vocabulary (byte fallback, unk) and user-defined symbols. Models are trained on
botchan.txt like tests/interop/test_spm.py does.
"""
import json
import os
import pathlib
import random
import subprocess
import zlib

import pytest

from conftest import ROOT, VOCAB_DIR

import sentencepiece as spm

VOCAB = VOCAB_DIR
TOOL = ROOT / os.environ.get("MG_BUILD", "build") / "tests" / "tools" / "tokenize"
BOTCHAN = VOCAB / "sentencepiece" / "botchan.txt"

MODELS = {
    "bpe_bf": dict(model_type="bpe", vocab_size=4000, byte_fallback=True),
    "bpe_user": dict(model_type="bpe", vocab_size=1500,
                     user_defined_symbols=["<sep>", "foo", "ing!", "[MASK]"]),
}
CACHE_MAX = 131072


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("spm_bpe")
    for name, cfg in MODELS.items():
        spm.SentencePieceTrainer.train(input=str(BOTCHAN), model_prefix=str(d / name),
                                       minloglevel=2, **cfg)
    return {name: d / f"{name}.model" for name in MODELS}


def word(rng, lo, hi):
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:'\"!?-()"
    rare = "\u2603\u65e5\u00e9\u0416<sep>foo[MASK]ing!\U0001F600"
    n = rng.randint(lo, hi)
    return "".join(rng.choice(rare) if rng.random() < 0.03 else rng.choice(letters)
                   for _ in range(n))


def texts(seed):
    """Texts with more than 2 * CACHE_MAX distinct spans, frequent words among them, the
    first texts repeated at the end (after the cache was emptied)."""
    rng = random.Random(seed)
    common = BOTCHAN.read_text(encoding="utf-8").split()[:3000]
    out = []
    while len(out) * 80 < 4 * CACHE_MAX:
        ws = []
        for _ in range(80):
            r = rng.random()
            if r < 0.6:
                ws.append(word(rng, 1, 14))
            elif r < 0.93:
                ws.append(rng.choice(common))
            elif r < 0.96:
                ws.append(word(rng, 58, 68))
            elif r < 0.965:
                ws.append(word(rng, 248, 258))
            else:
                ws.append(rng.choice(common) + rng.choice(",.;!?") + rng.choice(common))
        out.append(" ".join(ws))
    return out + out[:200]


def tokenize(model, items):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (make build/tests/tools/tokenize)")
    data = "".join(json.dumps({"text": t}) + "\n" for t in items)
    p = subprocess.run([str(TOOL), "--tokenizer-type", "SentencePieceTokenizer",
                        "--tokenizer-model", str(model)], input=data.encode(),
                       capture_output=True)
    if p.returncode != 0:
        pytest.fail(f"tokenize exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    lines = p.stdout.decode().split("\n")[:-1]
    assert len(lines) == len(items)
    return [[int(x) for x in line.split()] for line in lines]


@pytest.mark.parametrize("name", list(MODELS))
def test_many_distinct_spans(models, name):
    items = texts(zlib.crc32(name.encode()))
    distinct = {w for t in items for w in t.split()}
    assert len(distinct) > 2 * CACHE_MAX  # the cache is emptied at least twice
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    expect = [sp.encode_as_ids(t) for t in items]
    got = tokenize(models[name], items)
    bad = [i for i in range(len(items)) if got[i] != expect[i]]
    if bad:
        i = bad[0]
        pytest.fail(f"{len(bad)} of {len(items)} texts differ; first {items[i][:80]!r}:\n"
                    f"  ours {got[i][:40]}\n  spm  {expect[i][:40]}")
