"""Interop tests for TikTokenizer (libcommon/tok/tok_tiktoken.c + the BPE engine).

Our ids come from build/tests/tools/tokenize (JSON lines in, one line of ids out). The peers:
  * OpenAI layout (--tiktoken-pattern r50k_base|p50k_base|p50k_edit|cl100k_base|o200k_base):
    tiktoken 0.14 Encodings built from the local .tiktoken files with the patterns and special
    tokens of tiktoken_ext/openai_public.py, encode(text, allowed_special="all");
  * Megatron layout (v1/v2): megatron-core's TikTokenTokenizer library class itself, on a
    Megatron JSON vocabulary converted here from a .tiktoken file, text_to_ids(text).
Corpora: TestPlans.txt samples, botchan.txt lines, Chinese and Bulgarian fortune files,
adversarial strings, and 1 MB documents without spaces.
"""
import base64
import json
import os
import random
import subprocess

import pytest
import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tiktoken_ext import openai_public

import conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = str(conftest.VOCAB_DIR)
TOOL = os.path.join(ROOT, "build", "tests", "tools", "tokenize")
FORTUNES = "/usr/share/games/fortunes"
ENCODINGS = ["r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base"]


def _tiktoken_file(name):
    return os.path.join(VOCAB, "tiktoken", ("p50k_base" if name == "p50k_edit" else name) + ".tiktoken")


_ranks = {}


def _load_ranks(name):
    path = _tiktoken_file(name)
    if path not in _ranks:
        _ranks[path] = load_tiktoken_bpe(path)
    return _ranks[path]


def openai_encoding(name):
    """tiktoken's Encoding for `name`, from openai_public's definition and the local file."""
    ctor = getattr(openai_public, name)
    orig = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: _load_ranks(name)
    try:
        spec = ctor()
    finally:
        openai_public.load_tiktoken_bpe = orig
    return tiktoken.Encoding(spec["name"], pat_str=spec["pat_str"],
                             mergeable_ranks=spec["mergeable_ranks"],
                             special_tokens=spec["special_tokens"],
                             explicit_n_vocab=spec.get("explicit_n_vocab"))


def run_tokenize(args, texts):
    """Runs the tokenize tool; returns (vocab_size, eod, list of id lists)."""
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (make build/tests/tools/tokenize)")
    data = "".join(json.dumps({"text": t}) + "\n" for t in texts)
    p = subprocess.run([TOOL] + [str(a) for a in args], input=data.encode(), capture_output=True)
    if p.returncode != 0:
        pytest.fail(f"tokenize {' '.join(map(str, args))} exited {p.returncode}: "
                    f"{p.stderr.decode(errors='replace')}")
    first = p.stderr.decode().splitlines()[0]
    sizes = dict(kv.split("=") for kv in first.split())
    lines = p.stdout.decode().split("\n")[:-1]
    assert len(lines) == len(texts)
    return int(sizes["vocab_size"]), int(sizes["eod"]), \
        [[int(x) for x in line.split()] for line in lines]


def peer_ids(encode, texts):
    """The peer's ids per text; None where the peer itself fails: tiktoken's fancy-regex
    gives up on some 1 MB whitespace runs ("Max stack size exceeded for backtracking")."""
    out = []
    for t in texts:
        try:
            out.append(encode(t))
        except ValueError as e:
            assert "backtracking" in str(e)
            out.append(None)
    assert any(x is not None for x in out)
    return out


def compare(ours, theirs, texts, what):
    bad = [i for i in range(len(texts)) if theirs[i] is not None and ours[i] != theirs[i]]
    if bad:
        i = bad[0]
        pytest.fail(f"{what}: {len(bad)} of {len(texts)} texts differ; first {texts[i][:80]!r}: "
                    f"ours {ours[i][:30]} peer {theirs[i][:30]}")


# ---- corpora ----

def plan_samples():
    out = []
    with open(os.path.join(VOCAB, "tiktoken", "TestPlans.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("Sample: "):
                out.append(line[len("Sample: "):].rstrip("\n"))
    return out


def botchan_lines():
    with open(os.path.join(VOCAB, "sentencepiece", "botchan.txt"), encoding="utf-8") as f:
        return f.readlines()


def fortune_docs():
    files = [os.path.join(FORTUNES, n) for n in ("chinese", "tang300", "song100")]
    bg = os.path.join(FORTUNES, "bg")
    if os.path.isdir(bg):
        files += [os.path.join(bg, n) for n in sorted(os.listdir(bg))
                  if not n.endswith((".dat", ".u8"))]
    docs = []
    for path in files:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                docs += [d for d in f.read().split("\n%\n") if d]
    if not docs:
        pytest.fail(f"no fortune files under {FORTUNES} (Debian fortunes-zh / fortunes-bg)")
    return docs


ADVERSARIAL = [
    "", " ", "a", "   Hello", "x  \n\ny", "a\n  ", "x \n \n  ", "text\n   ", "end\n", "\n" * 7,
    " " * 1000, "\n" * 1000, "\t\t \n \r\n", "\r\n" * 50, "CRLF\r\nline\r\n\r\n", "a\rb\r",
    "1234567890123", "0" * 5000, "a1b2c3" * 300, "\u0661\u0662\u0663\u0664", "\u00bd\u00b2\u2462\u216b",
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 family", "\U0001F3F3\uFE0F\u200D\U0001F308",
    "e\u0301te\u0301 \u0915\u093f\u0928\u094d\u0926\u0940 \u0939\u093f\u0928\u094d\u0926\u0940",
    "DON'T WON'T I'M HE'S THEY'LL WE'VE YOU'RE I'D", "don't it's 'S 'sx", "Don'\u017f McDonald's",
    "iPhone HTTPServer camelCaseWord ABCdef", "\u0000NUL\u0000bytes\u0000", "a\u0000",
    "<|endoftext|> inside <|endoftext|><|endoftext|>", "<|endof", "x<|fim_prefix|>y<|fim_middle|>z",
    "<|endofprompt|><|fim_suffix|>", "<s></s><unk><mask><pad><cls><sep><SPECIAL_999><SPECIAL_1000>",
    "<<s>>", "</s</s>>", "\u00a0word", "!word $x  !word", "\u200b\ufeff", "\u2028\u2029\u0085 x",
    "\U0001F600\U0001F601 \U00010348", "\u3000\u3000\u6f22\u5b57", "\uac00\ub098\ub2e4 \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",
    "!" * 5000, "//" * 3000 + "\n", "a" * 70 + " " + "b" * 130, "The_quick-brown.fox@example.com?q=1&r=2#frag",
    "    def f(x):\n        return x  \n\n\n", "tab\tseparated\tvalues\n", "\x0b\x0c\x1c\x1d\x1e\x1f",
]


def one_megabyte_docs():
    rng = random.Random(1234)
    zh = "".join(c for c in "".join(fortune_docs()[:2000]) if not c.isspace())
    cjk = (zh * (1 + (1 << 20) // max(1, len(zh.encode())) ))
    cjk = cjk[: (1 << 20) // 3]
    letters = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1 << 20))
    digits_punct = "".join(rng.choice("0123456789.,;:!?") for _ in range(1 << 20))
    return [cjk, letters, digits_punct, " " * (1 << 20)]


def corpus():
    return plan_samples() + botchan_lines() + fortune_docs() + ADVERSARIAL


# ---- OpenAI layout against tiktoken ----

@pytest.mark.parametrize("name", ENCODINGS)
def test_openai_layout_matches_tiktoken(name):
    enc = openai_encoding(name)
    texts = corpus()
    vocab, eod, ours = run_tokenize(["--tokenizer-type", "TikTokenizer", "--tokenizer-model",
                                     _tiktoken_file(name), "--tiktoken-pattern", name], texts)
    assert vocab == enc.n_vocab
    assert eod == enc.eot_token
    theirs = [enc.encode(t, allowed_special="all") for t in texts]
    compare(ours, theirs, texts, name)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
def test_openai_layout_one_megabyte_documents(name):
    enc = openai_encoding(name)
    texts = one_megabyte_docs()
    _, _, ours = run_tokenize(["--tokenizer-type", "TikTokenizer", "--tokenizer-model",
                               _tiktoken_file(name), "--tiktoken-pattern", name], texts)
    theirs = peer_ids(lambda t: enc.encode(t, allowed_special="all"), texts)
    compare(ours, theirs, texts, name + " 1 MB")


# ---- Megatron layout against megatron-core's TikTokenTokenizer ----

def write_megatron_json(name, path):
    """Megatron's vocabulary format from a .tiktoken file: the 256 single bytes first (as
    reload_mergeable_ranks requires), then the other tokens in rank order. Merge priorities
    keep their order, so the BPE is the same up to the id mapping."""
    ranks = _load_ranks(name)
    multi = sorted((r, b) for b, r in ranks.items() if len(b) > 1)
    toks = [bytes([i]) for i in range(256)] + [b for _, b in multi]
    entries = [{"rank": i, "token_bytes": base64.b64encode(b).decode(),
                "token_str": b.decode("utf-8", errors="replace")} for i, b in enumerate(toks)]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(entries, f)
    return len(toks)


def megatron_tiktoken(path, pattern, vocab_size=None):
    from megatron.core.tokenizers.text.libraries.tiktoken_tokenizer import TikTokenTokenizer
    kwargs = {"pattern": pattern, "num_special_tokens": 1000}
    if vocab_size is not None:
        kwargs["vocab_size"] = vocab_size
    return TikTokenTokenizer(path, **kwargs)


@pytest.fixture(scope="module")
def megatron_vocabs(tmp_path_factory):
    d = tmp_path_factory.mktemp("megatron_vocab")
    out = {}
    for name in ("o200k_base", "cl100k_base"):
        path = str(d / f"{name}.json")
        out[name] = (path, write_megatron_json(name, path))
    return out


# (vocabulary, pattern, vocab_size): o200k has enough tokens for the default 131072;
# cl100k needs --vocab-size (Megatron asserts the vocabulary fills vocab_size - 1000).
MEGATRON_CASES = [("o200k_base", "v2", None), ("o200k_base", "v1", None),
                  ("cl100k_base", "v1", 1000 + 100256), ("cl100k_base", "v2", 1000 + 50000)]


@pytest.mark.parametrize("name,pattern,vocab_size", MEGATRON_CASES)
def test_megatron_layout_matches_megatron(megatron_vocabs, name, pattern, vocab_size):
    path, _ = megatron_vocabs[name]
    tok = megatron_tiktoken(path, pattern, vocab_size)
    texts = corpus()
    args = ["--tokenizer-type", "TikTokenizer", "--tokenizer-model", path,
            "--tiktoken-pattern", pattern, "--tiktoken-num-special-tokens", "1000"]
    if vocab_size is not None:
        args += ["--vocab-size", vocab_size]
    vocab, eod, ours = run_tokenize(args, texts)
    assert vocab == tok.vocab_size
    assert eod == tok.eod == 2
    theirs = [tok.text_to_ids(t) for t in texts]
    compare(ours, theirs, texts, f"Megatron {name} {pattern}")
    big = one_megabyte_docs()[:2]
    _, _, ours = run_tokenize(args, big)
    compare(ours, [tok.text_to_ids(t) for t in big], big, f"Megatron {name} {pattern} 1 MB")


def test_megatron_layout_spec_example(megatron_vocabs):
    path, _ = megatron_vocabs["o200k_base"]
    tok = megatron_tiktoken(path, "v2")
    text = "<unk>I</s><mask>"
    _, _, ours = run_tokenize(["--tokenizer-type", "TikTokenizer", "--tokenizer-model", path],
                              [text])
    assert ours[0] == tok.text_to_ids(text)
    assert ours[0][0] == 0 and ours[0][2:] == [2, 3]


def test_megatron_layout_rejects_short_vocabulary(megatron_vocabs):
    path, n = megatron_vocabs["cl100k_base"]
    with pytest.raises(AssertionError):
        megatron_tiktoken(path, "v2")  # default vocab_size 131072 > 1000 + n
    p = subprocess.run([TOOL, "--tokenizer-type", "TikTokenizer", "--tokenizer-model", path],
                       input=b"", capture_output=True)
    assert p.returncode == 1
    assert b"need vocab_size - num_special_tokens" in p.stderr
