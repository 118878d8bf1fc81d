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

A span longer than 5 bytes is cut where no piece holds the two characters on either
side as an adjacent pair (the pairs of all pieces are kept in a bit filter), and its parts
are encoded (and cached) on their own: test_long_spans_cut encodes long spans, English
words without spaces and synthetic Chinese-like lines (a Markov chain over CJK
characters, with a model trained on text of the same chain, so pieces of 2-6 characters
meet across many boundaries), next to characters outside the vocabulary.
"""
import json
import os
import pathlib
import random
import subprocess
import zlib

import pytest

from conftest import ROOT, VOCAB_DIR, assert_same_ids

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


ZH_MODEL = dict(model_type="bpe", vocab_size=3000, byte_fallback=True,
                character_coverage=0.9995, hard_vocab_limit=False)


def zh_chain(seed):
    """A Markov chain over 400 CJK characters and two punctuation marks: each character
    is followed by one of its 4 favourites 3 times in 4."""
    rng = random.Random(seed)
    chars = [chr(0x4E00 + rng.randrange(0x5000)) for _ in range(400)] + ["\uff0c", "\u3002"]
    return chars, {c: rng.sample(chars, 4) for c in chars}


def zh_line(rng, chain, n):
    chars, fav = chain
    c, out = rng.choice(chars), []
    for _ in range(n):
        out.append(c)
        c = rng.choice(fav[c]) if rng.random() < 0.75 else rng.choice(chars)
    return "".join(out)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("spm_bpe")
    for name, cfg in MODELS.items():
        spm.SentencePieceTrainer.train(input=str(BOTCHAN), model_prefix=str(d / name),
                                       minloglevel=2, **cfg)
    rng, chain = random.Random(7), zh_chain(7)
    zh_text = d / "zh.txt"
    zh_text.write_text("".join(zh_line(rng, chain, rng.randint(20, 120)) + "\n"
                               for _ in range(3000)), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(zh_text), model_prefix=str(d / "bpe_zh"),
                                   minloglevel=2, **ZH_MODEL)
    return {**{name: d / f"{name}.model" for name in MODELS}, "bpe_zh": d / "bpe_zh.model"}


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
    assert_same_ids(tokenize(models[name], items), expect, items)


def long_spans(name, seed):
    """Spans of 20-400 bytes: Chinese-like lines for bpe_zh (the training chain, with
    characters outside the vocabulary, ASCII and a few spaces), English words without
    spaces for the others; short ones between them."""
    rng = random.Random(seed)
    if name == "bpe_zh":
        chain, extra = zh_chain(7), "\u9fa5\u3400\U0001F600ab1 \u00e9"
        def piece():
            s = zh_line(rng, chain, rng.randint(1, 130))
            return "".join(rng.choice(extra) if rng.random() < 0.02 else c for c in s)
    else:
        common = BOTCHAN.read_text(encoding="utf-8").split()[:3000]
        def piece():
            ws = [rng.choice(common) for _ in range(rng.randint(1, 40))]
            return "".join(word(rng, 1, 3) if rng.random() < 0.05 else w for w in ws)
    return [" ".join(piece() for _ in range(rng.randint(1, 4))) for _ in range(4000)]


@pytest.mark.parametrize("name", list(MODELS) + ["bpe_zh"])
def test_long_spans_cut(models, name):
    items = long_spans(name, zlib.crc32(name.encode()))
    assert sum(len(w.encode()) > 24 for t in items for w in t.split()) > 5000
    sp = spm.SentencePieceProcessor(model_file=str(models[name]))
    expect = [sp.encode_as_ids(t) for t in items]
    if name == "bpe_zh":  # pieces of several characters do occur
        assert sum(len(sp.id_to_piece(i)) >= 3 for e in expect for i in e) > 10000
    assert_same_ids(tokenize(models[name], items), expect, items)
