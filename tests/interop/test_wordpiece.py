"""Interop: WordPiece tokenizers (BertWordPieceLowerCase / BertWordPieceCase and HF
tokenizer.json WordPiece models) against Megatron, transformers and tokenizers.

Megatron HEAD (megatron-core 0.16.1) builds BertWordPiece* as MegatronHFTokenizer =
transformers AutoTokenizer("bert-large-uncased" / "bert-large-cased", vocab_file=...): the
hub name is resolved here to a local folder of that name in the working directory (holding
the hub's tokenizer_config.json settings: do_lower_case true / false), so Megatron's own
build_tokenizer() runs offline on our vocab.txt. Its tokenize() ids, vocab_size and eod are
the reference (and, with --append-eod, what preprocess_data.py writes into .bin).

Vocabularies: bert-base-chinese's vocab.txt shipped in the cn-clip wheel (21128 lines), and
English WordPiece vocabularies trained here by tokenizers' BertWordPieceTokenizer on
botchan.txt (cased and uncased). tokenizer.json files are written by tokenizers itself.
The C side runs build/tests/tools/tokenize and decode_ids once over one JSONL of all texts.
"""
import argparse
import importlib.util
import json
import logging
import os
import pathlib
import shutil
import warnings

import pytest

from conftest import ROOT, VOCAB_DIR, assert_same_dataset, megatron_build, run_mg, write_texts_jsonl

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

VOCAB = VOCAB_DIR
BOTCHAN = VOCAB / "sentencepiece" / "botchan.txt"

MULTILINGUAL = [
    "中文文本：你好，世界！这是一个测试。繁體中文與简体中文混合。",
    "日本語のテキストです。カタカナとひらがな、漢字が混ざっています。",
    "Българският език е индоевропейски език от групата на южнославянските езици.",
    "مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥ و 12345.",
    "हिन्दी में लिखा गया पाठ, संयुक्ताक्षर क्ष त्र ज्ञ के साथ।",
    "Emoji: 👩‍👩‍👧‍👦 family, 🏳️‍🌈 flag, 👍🏽 tone, ❤️ heart, 🇫🇷🇩🇪 flags 😀🥰🫠",
    "Ελληνικά ΣΑΣ σας, Русский текст, 한국어 텍스트도 있습니다.",
    "Việt Nam, Tiếng Việt có dấu: Nguyễn Thị Minh Khai",
]

EDGE = [
    "",
    " ",
    "\n\t\r ",
    "café cafe\u0301 naïve RÉSUMÉ Ångström İstanbul ß ẞ ǅ ﬁ",
    "Zalgo: Z̷̢͔̈́a̸̡̛l̴̰̈g̶̱͝ȍ̸̦ and e\u0301 vs \u00e9, \u212b vs \u00c5, \uac00 vs \u1100\u1161",
    "ctrl\u0000nul\u0001\u0002\u0007\u001b[31mred\u001b[0m \u00ad soft\u200bzero\u200cwidth\u200d\ufeff\ufffd end",
    "tabs\tand\u000b\u000cvertical\u0085next\u00a0nbsp\u2028line\u2029para\u3000ideo",
    "\u001c\u001d\u001e\u001f separators \u007f del \u0080\u009f c1",
    "private \ue000\uf8ff \U000f0000 unassigned \u0378 \U0001fbff",
    "punct!!! ??? ... --- ___ *** ((())) [[[]]] {{{}}} <<<>>> $+<=>^`|~ ¡¿«»„“”‘’ — – … · ‧ ※",
    "https://example.com/path?query=1&b=2#frag user@example.com",
    "I'm don't won't can't y'all o'clock rock'n'roll it's",
    "[CLS] [SEP] [PAD] [MASK] [UNK] a[SEP]b [sep] [SEP [ SEP ]",
    "<extra_id_0> <extra_id_99> <extra_id_100> x<extra_id_5>y",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "d" * 250,
    "é" * 100 + " " + "é" * 101 + " " + "中" * 120,
    "0123456789" * 20 + " 3.14159 1,000,000.00 ½ ² ⅷ ①",
    "CJK ext: \U00020000\U0002a6df \U0002a700 \U0002b740 \U0002b820\U0002b8ff\U0002b920 \U0002ceaf \U00030000 \uf900 \U0002f800 \u3400 \u9fff",
    "Full-width: ＡＢＣ１２３！ half-width ｶﾀｶﾅ",
    "ǅungla ǈ ǋ Ǳ ΐ ΰ ﬀ ﬃ Ϊ́",
]


def botchan_texts():
    lines = BOTCHAN.read_text(encoding="utf-8").split("\n")
    return lines[:1500] + ["\n".join(lines)]


def all_texts():
    return botchan_texts() + MULTILINGUAL + EDGE


def zh_vocab():
    spec = importlib.util.find_spec("cn_clip")
    if spec is None:
        pytest.fail("cn-clip is not installed (tests/interop/requirements.txt)")
    return pathlib.Path(list(spec.submodule_search_locations)[0]) / "clip" / "vocab.txt"


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
    """name -> vocab.txt path: zh (bert-base-chinese), botchan-uncased, botchan-cased."""
    from tokenizers import BertWordPieceTokenizer

    d = tmp_path_factory.mktemp("wp_vocab")
    out = {"zh": zh_vocab()}
    for name, lower in (("botchan-uncased", True), ("botchan-cased", False)):
        t = BertWordPieceTokenizer(lowercase=lower)
        t.train([str(BOTCHAN)], vocab_size=3000, min_frequency=2, show_progress=False)
        sub = d / name
        sub.mkdir()
        t.save_model(str(sub))
        out[name] = sub / "vocab.txt"
    return out


def megatron_bert(tok_type, vocab_file, cwd, include_special=True, special_tokens=None):
    """Megatron's build_tokenizer(args) for a BertWordPiece type, run in `cwd` where the
    hub-name folder resolves offline."""
    name = "bert-large-uncased" if tok_type == "BertWordPieceLowerCase" else "bert-large-cased"
    folder = pathlib.Path(cwd) / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    shutil.copy(vocab_file, folder / "vocab.txt")
    lower = tok_type == "BertWordPieceLowerCase"
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"do_lower_case": lower, "model_max_length": 512}))
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    for n in ("torch.utils.cpp_extension", "megatron", "megatron.core"):
        logging.getLogger(n).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.tokenizers.text.utils.build_tokenizer import build_tokenizer
    args = argparse.Namespace(
        tokenizer_type=tok_type, tokenizer_special_tokens=special_tokens,
        vocab_file=str(vocab_file), merge_file=None, tokenizer_hf_use_fast=False,
        trust_remote_code=False, tokenizer_hf_include_special_tokens=include_special,
        tokenizer_metadata=None)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return build_tokenizer(args)
    finally:
        os.chdir(old)


def c_tokenize(tmp, args, texts):
    inp = write_texts_jsonl(tmp / "in.jsonl", texts)
    p = run_mg(["tokenize", *args], input=inp.read_text(encoding="utf-8"))
    head = p.stderr.splitlines()[0]
    vs, eod = (int(x.split("=")[1]) for x in head.split())
    lines = p.stdout.split("\n")[: len(texts)]
    return vs, eod, [[int(x) for x in l.split()] for l in lines]


def c_decode(tmp, args, id_lists):
    (tmp / "ids.txt").write_text("".join(" ".join(map(str, ids)) + "\n" for ids in id_lists))
    p = run_mg(["decode_ids", *args], input=(tmp / "ids.txt").read_text())
    return [json.loads(l) for l in p.stdout.splitlines()]


def compare(texts, got, want, what):
    bad = [(i, t[:60], g[:12], w[:12]) for i, (t, g, w) in enumerate(zip(texts, got, want)) if g != w]
    assert not bad, f"{what}: {len(bad)} of {len(texts)} texts differ, first: {bad[:3]}"


@pytest.mark.parametrize("tok_type", ["BertWordPieceLowerCase", "BertWordPieceCase"])
@pytest.mark.parametrize("vocab", ["zh", "botchan-uncased", "botchan-cased"])
def test_megatron_bert_ids(tmp_path, vocabs, tok_type, vocab):
    texts = all_texts()
    ref = megatron_bert(tok_type, vocabs[vocab], tmp_path)
    want = [ref.tokenize(t) for t in texts]
    vs, eod, got = c_tokenize(tmp_path, ["--tokenizer-type", tok_type, "--vocab-file",
                                         vocabs[vocab]], texts)
    assert (vs, eod) == (ref.vocab_size, ref.eod)
    compare(texts, got, want, f"{tok_type} {vocab}")
    # decode = transformers' tokenizer.decode(ids) (special tokens kept)
    dec = c_decode(tmp_path, ["--tokenizer-type", tok_type, "--vocab-file", vocabs[vocab]], want)
    compare(texts, dec, [ref._tokenizer.tokenizer.decode(w) for w in want], "decode")


def test_megatron_bert_options(tmp_path, vocabs):
    """--tokenizer-hf-no-include-special-tokens and --tokenizer-special-tokens (LowerCase)."""
    texts = all_texts()[-len(EDGE) - len(MULTILINGUAL):] + ["x <NEW> y <new> [SEP]z"]
    ref = megatron_bert("BertWordPieceLowerCase", vocabs["zh"], tmp_path, include_special=False,
                        special_tokens=["<NEW>", "[SEP]", "你"])
    vs, eod, got = c_tokenize(tmp_path, [
        "--tokenizer-type", "BertWordPieceLowerCase", "--vocab-file", vocabs["zh"],
        "--tokenizer-hf-no-include-special-tokens", "--tokenizer-special-tokens", "<NEW>",
        "[SEP]", "你"], texts)
    assert (vs, eod) == (ref.vocab_size, ref.eod)
    compare(texts, got, [ref.tokenize(t) for t in texts], "no-include-special + specials")


def hf_dir(tmp, name, tok, config=None):
    d = tmp / name
    d.mkdir()
    tok.save(str(d / "tokenizer.json"))
    if config is not None:
        (d / "tokenizer_config.json").write_text(json.dumps(config))
    return d


def wordpiece_dirs(tmp, vocabs):
    """tokenizer.json WordPiece files written by tokenizers (and one BertTokenizer class)."""
    from tokenizers import (BertWordPieceTokenizer, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)

    dirs = [hf_dir(tmp, "bert-zh", BertWordPieceTokenizer(str(vocabs["zh"]), lowercase=True)),
            hf_dir(tmp, "bert-cased", BertWordPieceTokenizer(str(vocabs["botchan-cased"]),
                                                              lowercase=False)),
            hf_dir(tmp, "bert-class", BertWordPieceTokenizer(str(vocabs["botchan-cased"]),
                                                              lowercase=False),
                   {"tokenizer_class": "BertTokenizer", "do_lower_case": True,
                    "clean_up_tokenization_spaces": True}),
            hf_dir(tmp, "distilbert-class", BertWordPieceTokenizer(str(vocabs["zh"])),
                   {"tokenizer_class": "DistilBertTokenizerFast", "do_lower_case": False,
                    "strip_accents": True, "tokenize_chinese_chars": False}),
            hf_dir(tmp, "bert-options", BertWordPieceTokenizer(
                str(vocabs["zh"]), clean_text=False, handle_chinese_chars=False,
                strip_accents=False, lowercase=True))]
    t = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=20))
    t.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.Lowercase(),
                                         normalizers.StripAccents()])
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.BertPreTokenizer(),
                                               pre_tokenizers.Digits(individual_digits=True)])
    t.decoder = decoders.WordPiece(cleanup=False)
    t.train([str(BOTCHAN)], trainers.WordPieceTrainer(vocab_size=2000, show_progress=False,
                                                      special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    t.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    dirs.append(hf_dir(tmp, "trained", t, {"eos_token": "[SEP]"}))
    t2 = Tokenizer(models.WordPiece(t.get_vocab(), unk_token="[UNK]",
                                    continuing_subword_prefix="@@"))
    t2.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.NFD(),
                                          normalizers.NFKC()])
    t2.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                pre_tokenizers.Punctuation(),
                                                pre_tokenizers.Digits()])
    dirs.append(hf_dir(tmp, "prefix-at", t2))
    t.pre_tokenizer = pre_tokenizers.Whitespace()
    dirs.append(hf_dir(tmp, "whitespace", t))
    return dirs


def texts_for(name):
    """Whitespace (HF's regex \\w+|[^\\w\\s]+ on Oniguruma): tokenizers' Oniguruma counts the
    Join_Control characters U+200C/U+200D as \\w, Debian's 6.9.8 does not; those texts are
    left out for that pre-tokenizer (a known engine difference, not WordPiece's)."""
    texts = all_texts()
    if name == "whitespace":
        texts = [t for t in texts if "\u200c" not in t and "\u200d" not in t]
    return texts


def test_hf_wordpiece_json(tmp_path, vocabs):
    from transformers import AutoTokenizer

    for d in wordpiece_dirs(tmp_path, vocabs):
        texts = texts_for(d.name)
        ref = AutoTokenizer.from_pretrained(str(d))
        want = [ref(t).input_ids for t in texts]
        vs, eod, got = c_tokenize(tmp_path, ["--tokenizer-type", "HuggingFaceTokenizer",
                                             "--tokenizer-model", d], texts)
        assert vs == len(ref), d.name
        compare(texts, got, want, d.name)
        dec = c_decode(tmp_path, ["--tokenizer-type", "HuggingFaceTokenizer",
                                  "--tokenizer-model", d], want)
        compare(texts, dec, [ref.decode(w) for w in want], d.name + " decode")


def test_preprocess_bert(tmp_path, vocabs, mg_preprocess):
    """mg-preprocess end to end: .bin/.idx identical to megatron-core's builder fed with
    Megatron's own BertWordPieceLowerCase ids (+ eod)."""
    texts = botchan_texts()[:300] + MULTILINGUAL + EDGE
    ref = megatron_bert("BertWordPieceLowerCase", vocabs["zh"], tmp_path)
    inp = write_texts_jsonl(tmp_path / "corpus.jsonl", texts)
    run_mg(["mg-preprocess", "--input", inp, "--output-prefix", tmp_path / "mg", "--quiet",
            "--json-keys", "text", "--tokenizer-type", "BertWordPieceLowerCase", "--vocab-file",
            vocabs["zh"], "--append-eod", "--workers", "2"])
    docs = []
    for t in texts:
        ids = ref.tokenize(t)
        docs.append(ids + [ref.eod] if ids else ids)
    megatron_build(tmp_path / "ref", docs, "uint16")
    assert_same_dataset(tmp_path / "mg_text_document", tmp_path / "ref")


SWEEP_STEPS = {
    "bert-lower": lambda n: n.BertNormalizer(lowercase=True),
    "bert-cased": lambda n: n.BertNormalizer(lowercase=False),
    "nfd": lambda n: n.NFD(),
    "nfkc": lambda n: n.NFKC(),
    "nfkd": lambda n: n.NFKD(),
    "lowercase": lambda n: n.Lowercase(),
    "strip-accents": lambda n: n.StripAccents(),
}


# General category changed since the unicode_categories crate's data (Unicode 8-era):
# U+166D Po -> So (12.0), U+1734 Mn -> Mc (14.0), U+1885/U+1886 Lo -> Mn (9.0).
CATEGORY_CHANGED = {"0x166d", "0x1734", "0x1885", "0x1886"}


@pytest.mark.parametrize("step", sorted(SWEEP_STEPS))
def test_unicode_sweep(tmp_path, step):
    """Every code point assigned in Unicode 3.2, as "a" + c + "b", through one normalizer
    step (and BertPreTokenizer for the BertNormalizer steps): identical to tokenizers.

    Characters assigned later differ in a few hundred code points because the tables differ:
    HF tokenizers 0.23.3 uses older Unicode data (unicode_categories for BertNormalizer's
    control/punctuation/Mn tests and unicode-normalization-alignments for NFD/NFKC/NFKD and
    StripAccents: about Unicode 11-13) and Rust std's lowercase (16.0), utf8proc 2.8.0 here
    is Unicode 15.0."""
    import unicodedata

    from tokenizers import normalizers, pre_tokenizers

    old = unicodedata.ucd_3_2_0
    cps = [c for c in range(0x110000)
           if not 0xD800 <= c <= 0xDFFF and old.category(chr(c)) != "Cn"]
    texts = ["a" + chr(c) + "b" for c in cps]
    inp = write_texts_jsonl(tmp_path / "cps.jsonl", texts)
    p = run_mg(["bert_normalize", step], input=inp.read_text(encoding="utf-8"))
    got = [json.loads(line) for line in p.stdout.split("\n")[: len(texts)]]
    norm = SWEEP_STEPS[step](normalizers)
    pre = pre_tokenizers.BertPreTokenizer()
    bad = []
    for c, t, g in zip(cps, texts, got):
        n = norm.normalize_str(t)
        w = [x for x, _ in pre.pre_tokenize_str(n)] if step.startswith("bert") else n
        if w != g:
            bad.append((hex(c), g, w))
    bad = [b for b in bad if b[0] not in CATEGORY_CHANGED]
    assert not bad, f"{step}: {len(bad)} of {len(cps)} code points differ: {bad[:5]}"
