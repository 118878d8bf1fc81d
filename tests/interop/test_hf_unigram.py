"""Unigram models in tokenizer.json (T5-style) against HF tokenizers and transformers.

The tokenizer.json files are built here, in tmp folders, by the reference libraries
themselves:
  - transformers' convert_slow_tokenizer (SpmConverter, T5Converter) applied to
    SentencePiece's test .model files (tests/data) and to Unigram models trained with the sentencepiece package
    on botchan.txt (with and without byte_fallback): normalizer Precompiled + Strip +
    Replace, pre-tokenizer Metaspace, decoder Metaspace; with tokenizer_class T5Tokenizer
    transformers 5 rebuilds the pipeline (Precompiled only, WhitespaceSplit + Metaspace,
    unk id 2);
  - tokenizers' SentencePieceUnigramTokenizer trained on botchan.txt (its own Nmt + NFKC +
    Replace normalizer, and a variant with Strip + Replace).
Ids are compared with tokenizers.Tokenizer.from_file(...).encode(text).ids and with
transformers' AutoTokenizer(DIR)(text).input_ids (Megatron's HuggingFaceTokenizer), on
botchan, the Debian fortunes (Chinese, Bulgarian), handwritten multilingual text (Japanese,
Arabic, Hindi, emoji) and the adversarial strings; decode(ids) with the reference's
tokenizer.decode(ids) (special tokens kept).
"""
import json
import shutil
import subprocess

import pytest

from test_hf_tokenizers import ADVERSARIAL, HANDWRITTEN, compare, fortunes, run_tokenize
from test_hf_spm_bpe import SPM_ADVERSARIAL
from test_spm import long_document
from conftest import write_texts_jsonl

EXTRA = [
    "Hello  world  ",
    "   leading and trailing   ",
    "\u00a0nbsp\u00a0 \u3000ideographic\u3000",
    "ﬁ ligature ① circled Ａ fullwidth ｶﾀｶﾅ halfwidth",
    "e\u0301 combining, a\u0308\u0301 two marks, \r\n crlf \r lone cr",
    "क्षत्रिय हिन्दी नमस्ते, العربية مرحبا, 日本語のテキスト, Български език",
    "\U0001F469\u200d\U0001F4BB emoji \U0001F1EF\U0001F1F5 flag \u2764\ufe0f",
    "<unk> <s> </s> <pad>",
    "unknown: \u2603 \U0001D11E \U00013000",
    "",
    " ",
]


@pytest.fixture(scope="module")
def corpus(vocab_dir):
    botchan = (vocab_dir / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8")
    texts = botchan.split("\n")[:1500]
    fort = fortunes()
    assert len(fort) > 50, "Debian fortunes (chinese, bg) missing"
    texts += fort + HANDWRITTEN + ADVERSARIAL + SPM_ADVERSARIAL + EXTRA
    texts.append(botchan[:200000])
    return texts


@pytest.fixture(scope="module")
def corpus_file(corpus, tmp_path_factory):
    return write_texts_jsonl(tmp_path_factory.mktemp("uni") / "corpus.jsonl", corpus)


class _Slow:
    """What convert_slow_tokenizer reads from a slow tokenizer."""

    def __init__(self, path):
        self.vocab_file = str(path)
        self._extra_ids = 0
        self.add_prefix_space = True
        self.legacy = True

    def convert_tokens_to_ids(self, token):
        import sentencepiece

        return sentencepiece.SentencePieceProcessor(model_file=self.vocab_file).piece_to_id(token)


def convert(model_path, out_dir, converter="SpmConverter", config=None, byte_fallback=False):
    import transformers.convert_slow_tokenizer as cst

    out_dir.mkdir()
    cls = getattr(cst, converter)
    if byte_fallback:  # the converter's switch for Unigram(byte_fallback=True)
        cls = type("ByteFallbackConverter", (cls,), {"handle_byte_fallback": True})
    tok = cls(_Slow(model_path)).converted()
    assert json.loads(tok.to_str())["model"]["byte_fallback"] == byte_fallback
    tok.save(str(out_dir / "tokenizer.json"))
    if config is not None:
        (out_dir / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return out_dir


def train_spm(vocab_dir, out_dir, byte_fallback):
    import sentencepiece

    prefix = out_dir / f"uni_bf{int(byte_fallback)}"
    sentencepiece.SentencePieceTrainer.train(
        input=str(vocab_dir / "sentencepiece" / "botchan.txt"), model_prefix=str(prefix),
        model_type="unigram", vocab_size=1200, byte_fallback=byte_fallback,
        minloglevel=2, num_threads=1)
    return prefix.with_suffix(".model")


def train_hf_unigram(vocab_dir, out_dir, strip=False):
    """Its own pipeline: Nmt + NFKC + Replace(" {2,}", " "), Metaspace; or (strip) the
    normalizer replaced by Strip + Replace."""
    from tokenizers import SentencePieceUnigramTokenizer, Regex, normalizers

    tok = SentencePieceUnigramTokenizer()
    tok.train([str(vocab_dir / "sentencepiece" / "botchan.txt")], vocab_size=1500,
              special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>", show_progress=False)
    if strip:
        tok.normalizer = normalizers.Sequence(
            [normalizers.Strip(left=True, right=True), normalizers.Replace(Regex(" {2,}"), " ")])
    else:
        assert [type(n).__name__ for n in tok.normalizer] == ["Nmt", "NFKC", "Replace"]
    out_dir.mkdir()
    tok.save(str(out_dir / "tokenizer.json"))
    return out_dir


@pytest.fixture(scope="module")
def models(vocab_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unimodels")
    sp = vocab_dir / "sentencepiece"
    cfg = {"eos_token": "</s>", "unk_token": "<unk>"}
    t5cfg = dict(cfg, tokenizer_class="T5Tokenizer", pad_token="<pad>", extra_ids=0)
    out = {
        "spm-test_model": convert(sp / "test_model.model", tmp / "a", config=cfg),
        "t5-test_ja_model": convert(sp / "test_ja_model.model", tmp / "b", "T5Converter"),
        "t5class-test_model": convert(sp / "test_model.model", tmp / "c", "T5Converter", t5cfg),
        "trained-bf0": convert(train_spm(vocab_dir, tmp, False), tmp / "d", config=cfg),
        "trained-bf1": convert(train_spm(vocab_dir, tmp, True), tmp / "e", config=cfg,
                               byte_fallback=True),
        "hf-trained": train_hf_unigram(vocab_dir, tmp / "f"),
        "hf-trained-strip": train_hf_unigram(vocab_dir, tmp / "g", strip=True),
    }
    return out


NAMES = ["spm-test_model", "t5-test_ja_model", "t5class-test_model", "trained-bf0",
         "trained-bf1", "hf-trained", "hf-trained-strip"]


def hf_args(d, include_special=True):
    args = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(d)]
    if not include_special:
        args.append("--tokenizer-hf-no-include-special-tokens")
    return args


# t5class-test_model is left out: transformers rebuilds it from its classes, so only
# test_unigram_ids_vs_transformers compares it.
@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith("t5class")])
def test_unigram_ids_vs_tokenizers(name, models, corpus, corpus_file, test_tool, tmp_path):
    """tokenizer.json alone (no tokenizer_config.json: its named tokens are transformers')."""
    from tokenizers import Tokenizer

    d = tmp_path
    shutil.copy(models[name] / "tokenizer.json", d / "tokenizer.json")
    tok = Tokenizer.from_file(str(d / "tokenizer.json"))
    got, vocab_size, _ = run_tokenize(test_tool, corpus_file, hf_args(d))
    assert vocab_size == tok.get_vocab_size(with_added_tokens=True)
    want = [e.ids for e in tok.encode_batch(corpus)]
    compare(corpus, got, want, f"{name} vs tokenizers")


@pytest.mark.parametrize("include_special", [True, False])
@pytest.mark.parametrize("name", NAMES)
def test_unigram_ids_vs_transformers(name, include_special, models, corpus, corpus_file,
                                     test_tool):
    from transformers import AutoTokenizer

    d = models[name]
    tok = AutoTokenizer.from_pretrained(str(d))
    if tok.unk_token is None and not include_special:
        # convert_tokens_to_ids gives None for an unknown string: Megatron cannot write it
        p = subprocess.run([str(test_tool("tokenize")), *hf_args(d, include_special)],
                           input=json.dumps({"text": "\u2603 snowman"}).encode() + b"\n",
                           capture_output=True)
        assert p.returncode == 1 and b"names no unk_token" in p.stderr, p.stderr
        return
    got, vocab_size, eod = run_tokenize(test_tool, corpus_file, hf_args(d, include_special))
    assert vocab_size == len(tok)
    if tok.eos_token is not None:
        assert eod == tok.convert_tokens_to_ids(tok.eos_token)
    if include_special:
        want = [list(x) for x in tok(corpus).input_ids]
    else:
        want = [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in corpus]
    compare(corpus, got, want, f"{name} special={include_special} vs transformers")


def run_decode(test_tool, d, id_lists):
    inp = "".join(" ".join(str(i) for i in ids) + "\n" for ids in id_lists)
    p = subprocess.run([str(test_tool("decode_ids")), "--tokenizer-type", "HuggingFaceTokenizer",
                        "--tokenizer-model", str(d)],
                       input=inp.encode(), capture_output=True)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


@pytest.mark.parametrize("name", NAMES)
def test_unigram_decode(name, models, corpus, test_tool):
    from transformers import AutoTokenizer

    d = models[name]
    tok = AutoTokenizer.from_pretrained(str(d))
    ids = [list(x) for x in tok(corpus).input_ids]
    # also raw id runs: byte pieces, specials, pieces out of context
    n = len(tok)
    ids += [list(range(i, min(i + 40, n))) for i in range(0, n, 97)]
    got = run_decode(test_tool, d, ids)
    want = [tok.decode(x) for x in ids]
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    assert not bad, f"{name}: {len(bad)} decodes differ; first ids {ids[bad[0]][:20]}: " \
                    f"got {got[bad[0]][:80]!r} expected {want[bad[0]][:80]!r}"


@pytest.mark.parametrize("split", [True, False])
@pytest.mark.parametrize("name", ["spm-test_model", "t5-test_ja_model", "trained-bf1"])
def test_unigram_long_document(name, split, models, vocab_dir, test_tool, tmp_path):
    """A ~1 MB document, every id, against tokenizers (f64 sums, no rebasing, unlike
    sentencepiece 0.2.3); split False: Metaspace without splitting, so the whole document
    is one lattice."""
    from tokenizers import Tokenizer

    spec = json.loads((models[name] / "tokenizer.json").read_text(encoding="utf-8"))
    assert spec["pre_tokenizer"]["type"] == "Metaspace"
    spec["pre_tokenizer"]["split"] = split
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    text = long_document(len(name) * 2 + split, 1_000_000)
    corpus_file = write_texts_jsonl(tmp_path / "long.jsonl", [text])
    got, _, _ = run_tokenize(test_tool, corpus_file, hf_args(tmp_path))
    want = [Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode(text).ids]
    compare([text], got, want, f"{name} (split {split}) vs tokenizers")
