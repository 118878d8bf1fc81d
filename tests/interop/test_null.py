"""Interop tests for NullTokenizer (libcommon/tok/tok_null.c) against megatron-core's
NullTokenizer library class: ids = [int(x) for x in text.split(' ')].

Our ids come from build/tests/tools/tokenize --keep-going (a text Python rejects must print
"error: ..." on its line). Sizes: mgtools follows Megatron HEAD (vocab_size = V, eod = V - 1);
the installed megatron-core 0.16 class reports vocab_size = V + 1 and eod = V for
NullTokenizer(V), so ours for --vocab-size V equals its NullTokenizer(V - 1).
Values outside int64 are an error for us (Megatron would fail later, writing the .bin).
"""
import json
import os
import random
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "build", "tests", "tools", "tokenize")


def megatron_null(vocab_size):
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer
    return NullTokenizer(vocab_size)


def run_tokenize(args, texts):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (make build/tests/tools/tokenize)")
    data = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    p = subprocess.run([TOOL, "--keep-going"] + [str(a) for a in args], input=data.encode(),
                       capture_output=True)
    if p.returncode != 0:
        pytest.fail(f"tokenize exited {p.returncode}: {p.stderr.decode(errors='replace')}")
    sizes = dict(kv.split("=") for kv in p.stderr.decode().splitlines()[0].split())
    lines = p.stdout.decode("utf-8").split("\n")[:-1]
    assert len(lines) == len(texts)
    return int(sizes["vocab_size"]), int(sizes["eod"]), lines


EDGE = [
    "11 325 97", "", " ", "1  2", " 1", "1 ", "1\n", "\t7\r\n", "+5", "-3", "-0", "+-1", "--1",
    "1_000", "0_0", "1__0", "_1", "1_", "+_1", "- 1", "+", "-", "007", "0x1f", "1e3", "1.0",
    "\u0661\u0662\u0663", "\uff11\uff12", "\u00a01\u00a0", "\u20001\u3000", "\u00851\u0085",
    "1\u200b", "\x1c1", "1\x1f", "\x0b\x0c3", "\u0663x", "\U0001D7CE\U0001D7D9", "\u2462",
    "\u00b2", "1\u0000", "9223372036854775807", "-9223372036854775808", "12 34 56 78 90",
    "5 abc", "1,2", "\u096712", "\u17e0\u17e1", "\u0e51\u0e52 \u0ed3", "١ ٢ ٣",
]


def random_texts(n):
    rng = random.Random(7)
    alphabet = ["0", "1", "9", " ", " ", "_", "+", "-", "\t", "\n", "a", "\u0663", "\uff15",
                "\u00a0", "\u3000", "\u200b", "."]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(n)]


def expected(tok, text):
    try:
        ids = tok.text_to_ids(text)
    except ValueError:
        return None
    return ids


def test_null_tokenizer_matches_megatron():
    texts = EDGE + random_texts(3000)
    vocab, eod, lines = run_tokenize(["--tokenizer-type", "NullTokenizer", "--vocab-size", 1000],
                                     texts)
    ref = megatron_null(1000 - 1)
    assert (vocab, eod) == (ref.vocab_size, ref.eod) == (1000, 999)
    n_ok = n_err = 0
    for text, line in zip(texts, lines):
        want = expected(ref, text)
        if want is not None and all(-2**63 <= v < 2**63 for v in want):
            assert line == " ".join(map(str, want)), f"{text!r}: ours {line!r}, Megatron {want}"
            n_ok += 1
        elif want is not None:
            assert line.startswith("error: ") and "does not fit in 64 bits" in line, text
        else:
            assert line.startswith("error: ") and "is not an integer" in line, \
                f"{text!r}: Megatron raises, ours {line!r}"
            n_err += 1
    assert n_ok > 100 and n_err > 100


def test_null_tokenizer_eod_override():
    vocab, eod, lines = run_tokenize(["--tokenizer-type", "NullTokenizer", "--vocab-size", 50,
                                      "--null-tokenizer-eod-id", 7], ["1 2"])
    assert (vocab, eod, lines) == (50, 7, ["1 2"])


def test_null_tokenizer_needs_vocab_size():
    p = subprocess.run([TOOL, "--tokenizer-type", "NullTokenizer"], input=b"",
                       capture_output=True)
    assert p.returncode == 1 and b"needs --vocab-size" in p.stderr
