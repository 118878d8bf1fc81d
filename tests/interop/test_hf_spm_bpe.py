"""SentencePiece-style BPE in tokenizer.json (Llama-2, Gemma-3, Mistral-style files) against
transformers' AutoTokenizer: ids identical to AutoTokenizer(DIR)(text).input_ids (and
convert_tokens_to_ids(tokenize(text)) with --tokenizer-hf-no-include-special-tokens),
vocab_size = len(tokenizer), eod = the eos id; then mg-preprocess end to end on llama2
against Megatron's IndexedDatasetBuilder.

Besides the real folders, variants built in tmp folders exercise the pipeline parts the
real files do not reach through transformers: the file's own Prepend + Replace normalizers
(tokenizer_class PreTrainedTokenizerFast: transformers keeps the file pipeline), Metaspace
with prepend_scheme "first" (LlamaTokenizer with legacy false), Metaspace split:true, a
Regex Replace, and char-initial BPE without byte_fallback (unknown characters become a
fused <unk>).

The corpus reuses test_hf_tokenizers' helpers (TestPlans, botchan, fortunes, handwritten
multilingual texts, adversarial strings) and adds strings aimed at this pipeline.
"""
import json
import shutil

import pytest

from test_hf_tokenizers import (
    ADVERSARIAL,
    HANDWRITTEN,
    auto_tokenizer,
    compare,
    fortunes,
    load_test_plans,
    reference_ids,
    run_tokenize,
)
from test_preprocess import corpus_texts, expect, hf_tok, preprocess, write_jsonl
from conftest import assert_same_dataset, write_texts_jsonl

SPM_ADVERSARIAL = [
    "\u2581",
    "\u2581\u2581 a \u2581b",
    " leading space",
    "  two leading spaces",
    "trailing space ",
    "<0x0A> literal byte token text <0xFF>",
    "<s>",
    "</s>",
    "<unk>",
    "a<s>b</s>c<unk>d",
    " <s> spaced </s> ",
    "<bos>hi<eos><pad><mask>[multimodal]<unused0>",
    "<start_of_turn>user\nhello<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_image><image_soft_token><end_of_image>",
    "\t" * 40 + "x",
    "\n" * 40 + "y",
    " " * 40 + "z",
    "\u2581" * 40,
    "rare: \U0001FAE8 \U000E0041 \ua66e \U00013000 \U0001D11E \u0fd5 \u2e3a \U0010FFFD",
    "mixed\u00a0nbsp\u3000ideographic\u2009thin",
    "\U0001F600\U0001F600 \U0001F469\u200d\U0001F4BB",
    "<b>x> </b> a> </z > </",  # Gemma's token ">\u2581</" spans a U+2581 run start
    "word\u2581\u2581 \u2581word \ua66e \ua66e\u2581x",
]


@pytest.fixture(scope="module")
def corpus(vocab_dir):
    texts = load_test_plans(vocab_dir)
    assert len(texts) == 313
    botchan = (vocab_dir / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8")
    texts += botchan.split("\n")
    fort = fortunes()
    assert len(fort) > 50, "Debian fortunes (chinese, bg) missing"
    texts += fort
    texts += HANDWRITTEN + ADVERSARIAL + SPM_ADVERSARIAL
    texts.append(botchan)
    texts.append("abcdefghijklmnopqrstuvwxyz0123456789" * 3000)  # ~100 kB, one piece
    texts.append(("日本語テキスト" * 20000)[:100000])
    return texts


@pytest.fixture(scope="module")
def corpus_file(corpus, tmp_path_factory):
    return write_texts_jsonl(tmp_path_factory.mktemp("spm") / "corpus.jsonl", corpus)


def check_dir(d, include_special, corpus, corpus_file, test_tool, what):
    tok = auto_tokenizer(d)
    args = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(d)]
    if not include_special:
        args.append("--tokenizer-hf-no-include-special-tokens")
    got, vocab_size, eod = run_tokenize(test_tool, corpus_file, args)
    assert vocab_size == len(tok)
    assert eod == tok.convert_tokens_to_ids(tok.eos_token)
    compare(corpus, got, reference_ids(tok, corpus, include_special), what)


@pytest.mark.parametrize("include_special", [True, False])
@pytest.mark.parametrize("name", ["llama2", "gemma3"])
def test_spm_bpe_ids(name, include_special, vocab_dir, corpus, corpus_file, test_tool):
    check_dir(vocab_dir / "hf" / name, include_special, corpus, corpus_file, test_tool,
              f"{name} special={include_special}")


def variant(src, dst, config=None, edit=None):
    """Copies an HF folder, patching tokenizer_config.json keys and tokenizer.json."""
    dst.mkdir()
    cfg = json.loads((src / "tokenizer_config.json").read_text(encoding="utf-8"))
    cfg.update(config or {})
    (dst / "tokenizer_config.json").write_text(json.dumps(cfg), encoding="utf-8")
    if edit is None:
        shutil.copy(src / "tokenizer.json", dst / "tokenizer.json")
        return dst
    j = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    edit(j)
    (dst / "tokenizer.json").write_text(json.dumps(j), encoding="utf-8")
    return dst


def metaspace_split(j):
    j["normalizer"] = None
    j["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581",
                          "prepend_scheme": "first", "split": True}


def regex_replace(j):
    j["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}


def no_byte_fallback(j):
    j["model"]["byte_fallback"] = False
    j["model"]["fuse_unk"] = True


VARIANTS = {
    # the file's Sequence[Prepend, Replace] normalizer, no pre-tokenizer (Mistral-style)
    "file-pipeline": ({"tokenizer_class": "PreTrainedTokenizerFast"}, None),
    "llama-first": ({"legacy": False}, None),
    "metaspace-split": ({"tokenizer_class": "PreTrainedTokenizerFast"}, metaspace_split),
    "regex-replace": ({"tokenizer_class": "PreTrainedTokenizerFast"}, regex_replace),
    "unk-fused": ({"tokenizer_class": "PreTrainedTokenizerFast"}, no_byte_fallback),
}


@pytest.mark.parametrize("include_special", [True, False])
@pytest.mark.parametrize("kind", sorted(VARIANTS))
def test_spm_bpe_variants(kind, include_special, vocab_dir, corpus, corpus_file, test_tool,
                          tmp_path):
    config, edit = VARIANTS[kind]
    d = variant(vocab_dir / "hf" / "llama2", tmp_path / kind, config, edit)
    check_dir(d, include_special, corpus, corpus_file, test_tool,
              f"llama2 {kind} special={include_special}")


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
def test_preprocess_llama2_matches_megatron(tmp_path, append_eod):
    tok = hf_tok("llama2")
    records = [{"text": t} for t in corpus_texts() + SPM_ADVERSARIAL]
    src = write_jsonl(tmp_path / "corpus.jsonl", records)
    extra = (["--append-eod"] if append_eod else []) + ["--workers", "2"]
    (got,) = preprocess(tmp_path, [src], "out", tok, extra=extra)
    assert_same_dataset(got, expect(tmp_path, "peer", records, "text", tok, append_eod))
