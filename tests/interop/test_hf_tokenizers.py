"""Interop: HuggingFaceTokenizer and GPT2BPETokenizer ids against transformers.

Megatron HEAD's HuggingFaceTokenizer is transformers' AutoTokenizer on the --tokenizer-model
folder: text_to_ids is tokenizer(text).input_ids, or with
--tokenizer-hf-no-include-special-tokens convert_tokens_to_ids(tokenize(text)); vocab_size is
len(tokenizer) and eod the id of eos_token. GPT2BPETokenizer is the HF GPT-2 tokenizer built
from vocab.json + merges.txt (GPT2TokenizerFast.from_pretrained on a folder holding the two
files, as transformers 5 reads them). The C side runs build/tests/tools/tokenize once per
tokenizer and mode over one JSONL holding every text; each line must give the same ids.

Texts: the 313 samples of tiktoken's TestPlans.txt, botchan.txt line by line and whole,
Debian fortunes (Chinese, Bulgarian), hand-written multilingual and adversarial texts
(whitespace/newline runs, digits, ZWJ emoji, combining marks, CRLF, NUL, special-token
strings, partial ones), and a 1 MB document without spaces.
"""
import json
import os
import pathlib
import shutil

import pytest

from conftest import write_texts_jsonl

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

HF_DIRS = ["llama3", "qwen3", "deepseek_v3"]

HANDWRITTEN = [
    "日本語のテキストです。カタカナとひらがな、漢字が混ざっています。",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥ و 12345.",
    "हिन्दी में लिखा गया पाठ, संयुक्ताक्षर क्ष त्र ज्ञ के साथ।",
    "Emoji: 👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 tone, ❤️ heart, 🇫🇷🇩🇪 flags",
    "Ελληνικά κείμενα και Русский текст, 한국어 텍스트도 있습니다.",
    "Việt Nam, Tiếng Việt có dấu: Nguyễn Thị Minh Khai",
    "Zalgo: Z̷̢͔̈́a̸̡̛l̴̰̈g̶̱͝ȍ̸̦ and e\u0301 vs \u00e9, \u212b vs \u00c5, \uac00 vs \u1100\u1161",
    "Full-width: ＡＢＣ１２３！ and half-width ｶﾀｶﾅ, ligatures ﬁ ﬂ, ½ ² ⅷ ① numbers",
]

ADVERSARIAL = [
    "",
    " ",
    "\n",
    "                                        x",
    "a" + " " * 300 + "b",
    "\n" * 100 + "x",
    "x" + "\n" * 50,
    "tail with newline and spaces\n   ",
    "x \n \n  ",
    "a\n  ",
    " \t \u00a0 \u3000 \u2028 mixed whitespace \r\n\r\n end \r",
    "line one\r\nline two\r\n\r\nline four",
    "0123456789" * 20,
    "pi=3.14159265358979323846264338327950288419716939937510 and 1,000,000.00",
    "I'M HERE, YOU'RE THERE, HE'S, WE'VE, THEY'LL, SHE'D, it's, 'S alone, '\u017f",
    "don't won't can't shouldn't y'all o'clock rock'n'roll",
    "NUL\u0000inside\u0000\u0000text",
    "<|endoftext|>",
    "a<|endoftext|>b <|endoftext|> c<|endoftext|",
    "<|begin_of_text|>Hello<|end_of_text|><|eot_id|>",
    "<|begin_of_text|<|begin_of_text|>><|im_start|>user\nhi<|im_end|>",
    "<｜begin▁of▁sentence｜>x<｜end▁of▁sentence｜><｜tool▁sep｜> <｜tool▁sep｜>",
    "<|reserved_special_token_0|><|reserved_special_token_250|><|reserved_special_token_",
    "< |endoftext| > <|endoftext |> <|ENDOFTEXT|>",
    "<think>reasoning</think> answer",
    "\ufeffBOM and \u200bzero\u200cwidth\u200djoiners\u2060",
    "控制字符\u0001\u0002\u0007\u001b[31m红色\u001b[0m",
    "tabs\tand\t\tmore\t\t\ttabs",
    "punctuation!!! ??? ... --- ___ *** ((())) [[[]]] {{{}}} <<<>>>",
    "https://example.com/path?query=1&b=2#frag user@example.com",
    "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
    "\U0001f600" * 50,
    "𝕳𝖊𝖑𝖑𝖔 𝔀𝓸𝓻𝓵𝓭 𝟙𝟚𝟛",
    "\U00031350\U0002ebf0 new CJK ext G/I, \U00011f00 Kawi",
]


def load_test_plans(vocab_dir):
    text = (vocab_dir / "tiktoken" / "TestPlans.txt").read_text(encoding="utf-8")
    samples = []
    for chunk in text.split("EncodingName: ")[1:]:
        body = chunk.split("\nSample: ", 1)[1]
        samples.append(body.rsplit("\nEncoded: ", 1)[0])
    return samples


def fortunes():
    out = []
    base = pathlib.Path("/usr/share/games/fortunes")
    for path in [base / "chinese", *sorted((base / "bg").glob("*"))]:
        if path.suffix in (".dat",) or not path.is_file():
            continue
        try:
            data = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out.extend(e for e in data.split("\n%\n")[:200] if e.strip())
    assert out, f"no fortunes under {base} (Debian fortunes-zh, fortunes-bg: scripts/setup.sh)"
    return out


@pytest.fixture(scope="module")
def corpus(vocab_dir):
    botchan = (vocab_dir / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8")
    texts = load_test_plans(vocab_dir)
    assert len(texts) == 313
    texts += botchan.split("\n")
    texts.append(botchan)
    fort = fortunes()
    assert len(fort) > 50, "Debian fortunes (chinese, bg) missing"
    texts += fort
    texts += HANDWRITTEN + ADVERSARIAL
    texts.append("abcdefghijklmnopqrstuvwxyz0123456789" * 29128)  # ~1 MB, no space
    texts.append(("日本語テキスト" * 50000)[:340000])  # ~1 MB of CJK, no space
    return texts


@pytest.fixture(scope="module")
def corpus_file(corpus, tmp_path_factory):
    return write_texts_jsonl(tmp_path_factory.mktemp("hf") / "corpus.jsonl", corpus)


def run_tokenize(test_tool, corpus_file, args):
    import subprocess

    with open(corpus_file, "rb") as f:
        p = subprocess.run([str(test_tool("tokenize")), *args], stdin=f, capture_output=True)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    head = p.stderr.decode().splitlines()[0]
    fields = dict(kv.split("=") for kv in head.split())
    lines = p.stdout.decode().split("\n")
    assert lines[-1] == ""
    ids = [[int(x) for x in line.split()] for line in lines[:-1]]
    return ids, int(fields["vocab_size"]), int(fields["eod"])


def compare(corpus, got, want, what):
    assert len(got) == len(want), f"{what}: {len(got)} lines, expected {len(want)}"
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    if bad:
        i = bad[0]
        k = next((j for j, (a, b) in enumerate(zip(got[i], want[i])) if a != b),
                 min(len(got[i]), len(want[i])))
        pytest.fail(
            f"{what}: {len(bad)} of {len(want)} texts differ; first: text {i} "
            f"{corpus[i][:80]!r}: ids from {k}: got {got[i][k:k + 8]} expected {want[i][k:k + 8]}"
        )


def auto_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def reference_ids(tok, corpus, include_special):
    if include_special:
        return [list(x) for x in tok(corpus).input_ids]
    return [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in corpus]


@pytest.mark.parametrize("name", HF_DIRS)
@pytest.mark.parametrize("include_special", [True, False])
def test_hf_tokenizer_ids(name, include_special, vocab_dir, corpus, corpus_file, test_tool):
    d = vocab_dir / "hf" / name
    tok = auto_tokenizer(d)
    args = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(d)]
    if not include_special:
        args.append("--tokenizer-hf-no-include-special-tokens")
    got, vocab_size, eod = run_tokenize(test_tool, corpus_file, args)
    assert vocab_size == len(tok)
    assert eod == tok.convert_tokens_to_ids(tok.eos_token)
    compare(corpus, got, reference_ids(tok, corpus, include_special), f"{name} special={include_special}")


@pytest.fixture(scope="module")
def gpt2_dir(vocab_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("gpt2")
    shutil.copy(vocab_dir / "gpt2" / "gpt2-vocab.json", d / "vocab.json")
    shutil.copy(vocab_dir / "gpt2" / "gpt2-merges.txt", d / "merges.txt")
    return d


@pytest.mark.parametrize("include_special", [True, False])
def test_gpt2_bpe_tokenizer_ids(include_special, vocab_dir, gpt2_dir, corpus, corpus_file, test_tool):
    from transformers import GPT2TokenizerFast

    tok = GPT2TokenizerFast.from_pretrained(str(gpt2_dir))
    args = ["--tokenizer-type", "GPT2BPETokenizer",
            "--vocab-file", str(vocab_dir / "gpt2" / "gpt2-vocab.json"),
            "--merge-file", str(vocab_dir / "gpt2" / "gpt2-merges.txt")]
    if not include_special:
        args.append("--tokenizer-hf-no-include-special-tokens")
    got, vocab_size, eod = run_tokenize(test_tool, corpus_file, args)
    assert (vocab_size, eod) == (len(tok), tok.eos_token_id) == (50257, 50256)
    compare(corpus, got, reference_ids(tok, corpus, include_special), f"gpt2 special={include_special}")


def test_unsupported_feature_refused(vocab_dir, test_tool, tmp_path):
    """A pipeline part mgtools lacks (here a ByteLevel normalizer) is refused by name, with
    the file; SentencePiece-style files themselves load (test_hf_spm_bpe.py)."""
    import subprocess

    j = json.loads((vocab_dir / "hf" / "llama2" / "tokenizer.json").read_text(encoding="utf-8"))
    j["normalizer"] = {"type": "ByteLevel"}
    (tmp_path / "tokenizer.json").write_text(json.dumps(j), encoding="utf-8")
    p = subprocess.run([str(test_tool("tokenize")), "--tokenizer-type", "HuggingFaceTokenizer",
                        "--tokenizer-model", str(tmp_path)], input=b'{"text": "x"}\n',
                       capture_output=True)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert "not supported yet: normalizer ByteLevel" in err
    assert str(tmp_path / "tokenizer.json") in err
