"""Interop tests for the pre-tokenizer (libcommon/text/pretok*.c) against HF tokenizers.

Our pieces come from build/tests/tools/pretok_split (records in, "off:len" spans out); the
peer's from tokenizers' pre_tokenizers.Split(Regex(...)) and the DeepSeek-V3 tokenizer.json
pre-tokenizer. Texts: the spec's edge cases, random strings over an adversarial alphabet
(including code points assigned in Unicode 15.0-16.0), botchan.txt and fortune files.
The tiktoken-form regexes are checked against Oniguruma in tests/unit/test_pretok.c and at the
token level by the tokenizer tests (tiktoken exposes no splitter).
"""
import json
import os
import random
import struct
import subprocess

import pytest
import tokenizers
from tokenizers import Regex, pre_tokenizers

import conftest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = str(conftest.VOCAB_DIR)
TOOL = os.path.join(ROOT, "build", "tests", "tools", "pretok_split")
FORTUNES = "/usr/share/games/fortunes"

RX = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "r50k": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k-0.6": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
    "cl100k-tiktoken": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+"""]),
    "megatron-v1": r"[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
    "megatron-v2": "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
}
# Family each text must select in the HF dialect (checked through --families).
FAMILY = {"gpt2": "gpt2", "r50k": "gpt2", "cl100k-0.6": "cl100k",
          "cl100k-tiktoken": "cl100k-tiktoken-onig", "o200k": "o200k",
          "megatron-v1": "megatron-v1", "megatron-v2": "megatron-v2",
          "llama3": "cl100k", "qwen3": "qwen2"}


def _hf_json(name):
    with open(os.path.join(VOCAB, "hf", name, "tokenizer.json"), encoding="utf-8") as f:
        return json.load(f)


def _split_regexes(name):
    pre = _hf_json(name)["pre_tokenizer"]
    return [p["pattern"]["Regex"] for p in pre["pretokenizers"] if p["type"] == "Split"]


RX["llama3"] = _split_regexes("llama3")[0]
RX["qwen3"] = _split_regexes("qwen3")[0]
DEEPSEEK = _split_regexes("deepseek_v3")

EDGE = [
    "a\n  ", "x \n \n  ", "   Hello", "x  \n\ny", "\tword", "\u00a0word", "!word", "$x",
    " !word", "12345", " 12345", "½²Ⅻ①", "'S 's 'ſ 'T 'LL 'Ve 're", "McDonald's", "iPhone",
    "HTTPServer", "हिन्दी", "日本語のテキスト", "don't I'M we'RE", "\u2019s it\u2019s",
    "\x1c\x1d\x1e\x1f", "\u200b\ufeff", "a\u3000b\u2028c\u0085d", "\r\n\r\n", "  \r\n  x",
    "foo/bar//baz\n", "A\u0301B\u0301c", "\u01c5ungla", "\u02b0\u02b0a", "\u00e9t\u00e9",
    "word\x00word", "\x00", " ", "  ", "\n", "'", "''s", "a'", "x'\u017f", "K\u212a",
    "\U0001f469\u200d\U0001f4bb emoji", "中文123漢字", "ﾊﾝｶｸ ｶﾀｶﾅ", "한국어 텍스트",
    "\U00011f04\U0001e030\U00031350\U0002ebf0\U00010d4a\U0001ccf0", "(Hello) [World]",
    "$100.00", "x\u0300\u0301", " \u0300", "\u0300x", "1\u0300", "a\rb\r", "\t\t\t",
]

ALPHABET = (
    list("abcXYZ019 .,;'!?/-\"()") + ["'s", "'S", "'ll", "'ve", "'re", "'\u017f", "'\u212a"] +
    [" ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2009", "\x00", "\x1c", "\x85"] +
    ["\u0301", "\u0300", "\u093f", "\u094d", "\u20dd"] +  # Mn, Me
    ["中", "文", "あ", "ア", "ｱ", "한", "글", "\u4e00", "\u9fa6", "\u3040"] +
    ["\U0001f600", "\u200d", "\U0001f469", "\ufe0f", "\u200b"] +
    ["Σ", "σ", "ς", "ǅ", "ʰ", "ª", "ß", "ẞ", "İ", "ı", "ﬆ", "Ⅻ", "½", "²", "١", "५", "𝟘"] +
    ["\U00011f04", "\U0001e030", "\U00031350", "\U0002ebf0", "\U00010d4a", "\U0001ccf0",
     "\U0001e4f0", "\u0cf3", "\U000323b0"]  # Unicode 15.0/15.1/16.0/17.0 code points
)
NEW_IN_15_0_TO_16_0 = set("\U00011f04\U0001e030\U00031350\U0002ebf0\U00010d4a\U0001ccf0"
                          "\U0001e4f0\u0cf3")


def unicode14(texts):
    """The texts without code points newer than Unicode 14.0: Debian's Oniguruma (our generic
    engine) classifies them as unassigned, HF's bundled Oniguruma (16.0) does not."""
    return ["".join(c for c in t if c not in NEW_IN_15_0_TO_16_0) for t in texts]


def random_strings(seed, count, maxlen=24):
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, maxlen)))
            for _ in range(count)]


def corpus_lines():
    lines = []
    with open(os.path.join(VOCAB, "sentencepiece", "botchan.txt"), encoding="utf-8") as f:
        lines += [ln for ln in f.read().split("\n")[:2000]]
    for name in ("chinese.u8", "tang300.u8", "translate-me.u8", "startrek.u8"):
        # Debian fortunes and fortunes-zh (scripts/setup.sh): a missing file fails the test
        with open(os.path.join(FORTUNES, name), encoding="utf-8", errors="replace") as f:
            lines += f.read().split("%\n")[:400]
    return lines


def run_tool(args, texts):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (make tools-test)")
    data = b"".join(struct.pack("<I", len(b)) + b for b in (t.encode("utf-8") for t in texts))
    res = subprocess.run([TOOL] + args, input=data, capture_output=True, check=True)
    out = []
    for t, line in zip(texts, res.stdout.decode().split("\n")):
        b = t.encode("utf-8")
        spans = [tuple(map(int, x.split(":"))) for x in line.split()]
        out.append([b[o:o + n].decode("utf-8") for o, n in spans])
    return out, res.stderr.decode()


def regex_file(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    return str(p)


def hf_pieces(pre, texts):
    return [[t[a:b] for _, (a, b) in pre.pre_tokenize_str(t)] for t in texts]


def compare(ours, theirs, texts):
    bad = [(t, o, h) for t, o, h in zip(texts, ours, theirs) if o != h]
    assert not bad, "%d of %d differ; first: %r" % (len(bad), len(texts), bad[:3])


ALL_TEXTS = EDGE + random_strings(1234, 3000)


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_family_matches_hf_split(tmp_path, name):
    texts = ALL_TEXTS + corpus_lines()
    ours, err = run_tool(["--families", "--regex", regex_file(tmp_path, "rx", RX[name])], texts)
    assert "stage 0: %s" % FAMILY[name] in err
    theirs = hf_pieces(pre_tokenizers.Split(Regex(RX[name]), "isolated"), texts)
    compare(ours, theirs, texts)


def test_deepseek_v3_sequence_matches_tokenizer_json(tmp_path):
    texts = ALL_TEXTS + corpus_lines()
    args = ["--families"]
    for i, rx in enumerate(DEEPSEEK):
        args += ["--regex", regex_file(tmp_path, "rx%d" % i, rx)]
    ours, err = run_tool(args, texts)
    for i in range(3):
        assert "stage %d: deepseek-v3-%d" % (i, i + 1) in err
    tok = tokenizers.Tokenizer.from_file(os.path.join(VOCAB, "hf", "deepseek_v3", "tokenizer.json"))
    compare(ours, hf_pieces(tok.pre_tokenizer, texts), texts)
    fam, _ = run_tool(["--family", "deepseek-v3-1", "--family", "deepseek-v3-2",
                       "--family", "deepseek-v3-3"], texts)
    compare(fam, ours, texts)


@pytest.mark.parametrize("stage", [0, 1, 2])
def test_deepseek_v3_single_stage(tmp_path, stage):
    texts = ALL_TEXTS
    ours, _ = run_tool(["--regex", regex_file(tmp_path, "rx", DEEPSEEK[stage])], texts)
    theirs = hf_pieces(pre_tokenizers.Split(Regex(DEEPSEEK[stage]), "isolated"), texts)
    compare(ours, theirs, texts)


def test_gpt2_family_matches_bytelevel_pretokenizer():
    texts = ALL_TEXTS + corpus_lines()
    ours, _ = run_tool(["--family", "gpt2"], texts)
    pre = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    compare(ours, hf_pieces(pre, texts), texts)


BEHAVIORS = ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]


@pytest.mark.parametrize("behavior", BEHAVIORS)
@pytest.mark.parametrize("invert", [0, 1])
@pytest.mark.parametrize("rx", [r"\s+", r"x*", r"a|b", r"(?<=a)", r"\b", "o200k", "megatron-v1"])
def test_split_behaviors_match_hf(tmp_path, behavior, invert, rx):
    texts = EDGE + random_strings(99, 300, 12) + ["axbxxa", "aab ba", "xx", "abba  b"]
    text = RX.get(rx, rx)
    if rx not in RX:  # runs on the generic (Oniguruma) engine
        texts = unicode14(texts)
    ours, _ = run_tool(["--behavior", behavior, "--invert", str(invert),
                        "--regex", regex_file(tmp_path, "rx", text)], texts)
    pre = pre_tokenizers.Split(Regex(text), behavior, invert=bool(invert))
    compare(ours, hf_pieces(pre, texts), texts)


@pytest.mark.parametrize("behavior", BEHAVIORS)
@pytest.mark.parametrize("invert", [0, 1])
@pytest.mark.parametrize("lit", [" ", "ab", "\u2581", "xx"])
def test_literal_split_matches_hf(behavior, invert, lit):
    texts = EDGE + random_strings(7, 300, 12) + ["xxx", "abab", "a\u2581\u2581b", "  a  "]
    ours, _ = run_tool(["--behavior", behavior, "--invert", str(invert), "--literal", lit], texts)
    pre = pre_tokenizers.Split(lit, behavior, invert=bool(invert))
    compare(ours, hf_pieces(pre, texts), texts)


def test_stage_sequence_with_behaviors_matches_hf(tmp_path):
    texts = unicode14(ALL_TEXTS)
    stages = [(RX["o200k"], "removed", True), (r"\s+", "merged_with_next", False),
              (r"[aeiou]", "contiguous", False)]
    args = []
    for i, (rx, beh, inv) in enumerate(stages):
        args += ["--behavior", beh, "--invert", str(int(inv)),
                 "--regex", regex_file(tmp_path, "rx%d" % i, rx)]
    ours, _ = run_tool(args, texts)
    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(rx), beh, invert=inv)
                                   for rx, beh, inv in stages])
    compare(ours, hf_pieces(pre, texts), texts)
