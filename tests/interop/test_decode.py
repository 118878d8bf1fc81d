"""Interop tests for mg_tokenizer_decode (the decode slot of every tokenizer type).

Our text comes from build/tests/tools/decode_ids (one line of ids in, one JSON string out);
the reference is the library Megatron uses, decoding with special tokens kept:
  GPT2BPETokenizer      transformers GPT2TokenizerFast (local vocab/merges).decode(ids)
  HuggingFaceTokenizer  transformers AutoTokenizer(dir).decode(ids), every dir in vocab/hf
  TikTokenizer          tiktoken Encoding.decode(ids) (errors="replace"): the OpenAI encodings
                        from the local .tiktoken files, and the Megatron layout as an
                        Encoding with the ranks shifted by num_special and Megatron's specials
  SentencePiece .model  sentencepiece DecodeIds(ids), test and trained models
  NullTokenizer         Megatron's detokenize: " ".join(str(i) for i in ids)
Id sequences: the reference's ids of botchan lines, Chinese/Bulgarian fortunes, the
adversarial strings of test_tiktoken and multilingual samples; random slices and reversals
of those (they cut multi-byte characters: invalid UTF-8 must become U+FFFD exactly as the
reference does); and uniformly random ids (special, control, unknown and byte tokens).
"""
import json
import os
import random
import shutil
import subprocess

import pytest

import conftest
import test_tiktoken as tt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = tt.VOCAB
TOOL = os.path.join(ROOT, "build", "tests", "tools", "decode_ids")

MULTILINGUAL = [
    "日本語のテキスト、カタカナとひらがな。東京は大きい都市です。",
    "中文文本：你好，世界！今天天气很好。",
    "Български език: Здравейте, как сте?",
    "العربية: مرحبا بالعالم، كيف حالك؟",
    "हिन्दी: नमस्ते दुनिया, आप कैसे हैं?",
    "emoji 😀😁 👨‍👩‍👧‍👦 🏳️‍🌈 𐍈 and ⁇ and ▁ and \ufffd",
    "  leading spaces, trailing  ", "tabs\tand\nnewlines\n\n", "<s> </s> <unk> <0x41>",
    "<|endoftext|> isn't it ? don't do not , . !",
]


def corpus():
    texts = tt.botchan_lines()[:600] + tt.fortune_docs()[:300] + tt.ADVERSARIAL + MULTILINGUAL
    return [t for t in texts if len(t) < 20000]


TEXTS = corpus()


def id_sequences(encode, vocab_size, seed):
    """Encoded texts, slices and reversals of them, and random id sequences."""
    rng = random.Random(seed)
    seqs = [list(encode(t)) for t in TEXTS]
    cut = []
    for ids in seqs:
        if len(ids) >= 2:
            i = rng.randrange(len(ids))
            j = rng.randrange(i, len(ids) + 1)
            cut.append(ids[i:j])
            cut.append(ids[::-1][: 1 + rng.randrange(len(ids))])
    rand = [[rng.randrange(vocab_size) for _ in range(rng.randrange(1, 24))] for _ in range(400)]
    return seqs + cut + rand + [[]]


def run_decode(args, seqs):
    if not os.access(TOOL, os.X_OK):
        pytest.fail(f"{TOOL} is missing: make tools-test")
    data = "".join(" ".join(map(str, s)) + "\n" for s in seqs)
    p = subprocess.run([TOOL, "--keep-going"] + [str(a) for a in args], input=data,
                       capture_output=True, text=True, encoding="utf-8")
    if p.returncode != 0:
        pytest.fail(f"decode_ids {args} exited with {p.returncode}:\n{p.stderr}")
    out = [json.loads(line) for line in p.stdout.split("\n")[:-1]]
    assert len(out) == len(seqs)
    return out


def reference(decode, seqs):
    out = []
    for s in seqs:
        try:
            out.append(decode(s))
        except Exception as e:  # the reference rejects the ids: we must too
            out.append({"error": repr(e)})
    return out


def compare(args, decode, seqs):
    ours = run_decode(args, seqs)
    theirs = reference(decode, seqs)
    bad = []
    for s, a, b in zip(seqs, ours, theirs):
        if isinstance(b, dict):
            ok = isinstance(a, dict)
        else:
            ok = a == b
        if not ok:
            bad.append(f"ids {s[:40]}:\n  ours   {a!r:.300}\n  theirs {b!r:.300}")
    assert not bad, f"{len(bad)} of {len(seqs)} decodes differ:\n" + "\n".join(bad[:8])
    return ours


def quiet():
    import logging
    import warnings
    for name in ("transformers", "megatron"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.simplefilter("ignore")


# ---- GPT2BPETokenizer and HuggingFaceTokenizer ----

def test_gpt2(tmp_path):
    quiet()
    from transformers import GPT2TokenizerFast
    shutil.copy(os.path.join(VOCAB, "gpt2", "gpt2-vocab.json"), tmp_path / "vocab.json")
    shutil.copy(os.path.join(VOCAB, "gpt2", "gpt2-merges.txt"), tmp_path / "merges.txt")
    t = GPT2TokenizerFast.from_pretrained(str(tmp_path))
    t.model_max_length = 1 << 40
    args = ["--tokenizer-type", "GPT2BPETokenizer",
            "--vocab-file", os.path.join(VOCAB, "gpt2", "gpt2-vocab.json"),
            "--merge-file", os.path.join(VOCAB, "gpt2", "gpt2-merges.txt")]
    compare(args, t.decode, id_sequences(lambda s: t(s).input_ids, len(t), 1))


HF_DIRS = sorted(os.listdir(os.path.join(VOCAB, "hf")))


@pytest.mark.parametrize("name", HF_DIRS)
def test_hf(name):
    quiet()
    from transformers import AutoTokenizer
    d = os.path.join(VOCAB, "hf", name)
    t = AutoTokenizer.from_pretrained(d)
    t.model_max_length = 1 << 40
    args = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", d]
    compare(args, t.decode, id_sequences(lambda s: t(s).input_ids, len(t), 2))


# ---- TikTokenizer ----

@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_tiktoken_openai(name):
    enc = tt.openai_encoding(name)
    args = ["--tokenizer-type", "TikTokenizer", "--tokenizer-model", tt._tiktoken_file(name),
            "--tiktoken-pattern", name]
    seqs = id_sequences(lambda s: enc.encode(s, allowed_special="all"), enc.n_vocab, 3)
    ours = compare(args, enc.decode, seqs)
    assert sum(isinstance(o, dict) for o in ours) < len(seqs) // 10  # holes are rare


def test_tiktoken_megatron_layout():
    """Megatron's layout (1000 special ids, then the ranks) as a tiktoken Encoding."""
    import tiktoken
    ranks = tt._load_ranks("cl100k_base")
    num_special = 1000
    named = ["<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>"]
    specials = {s: i for i, s in enumerate(named)}
    specials.update({f"<SPECIAL_{i}>": i for i in range(len(named), num_special)})
    enc = tiktoken.Encoding("megatron", pat_str=r"\S+|\s+",
                            mergeable_ranks={b: r + num_special for b, r in ranks.items()},
                            special_tokens=specials)
    vocab_size = len(ranks) + num_special
    args = ["--tokenizer-type", "TikTokenizer", "--tokenizer-model",
            tt._tiktoken_file("cl100k_base"), "--vocab-size", vocab_size]
    plain = tt.openai_encoding("cl100k_base")
    encode = lambda s: [i + num_special for i in plain.encode_ordinary(s)]  # noqa: E731
    seqs = id_sequences(encode, vocab_size, 4) + [[0, 1, 2, 999, 1000, 7, 3]]
    compare(args, enc.decode, seqs)


# ---- SentencePiece .model ----

TRAINED = {
    "bpe_bf": dict(model_type="bpe", vocab_size=3000, byte_fallback=True),
    "bpe_llama": dict(model_type="bpe", vocab_size=3000, byte_fallback=True, split_digits=True,
                      normalization_rule_name="identity", remove_extra_whitespaces=False,
                      character_coverage=0.99),
    "uni_user": dict(model_type="unigram", vocab_size=1500,
                     user_defined_symbols=["<sep>", "foo", "ing!", "[MASK]"]),
    "uni_ident": dict(model_type="unigram", vocab_size=1000, normalization_rule_name="identity",
                      remove_extra_whitespaces=False, add_dummy_prefix=False),
    "uni_suffix": dict(model_type="unigram", vocab_size=1200, treat_whitespace_as_suffix=True),
}


@pytest.fixture(scope="module")
def spm_models(tmp_path_factory):
    import sentencepiece as spm
    d = tmp_path_factory.mktemp("spm_decode")
    out = {n: os.path.join(VOCAB, "sentencepiece", n + ".model")
           for n in ("test_model", "test_ja_model")}
    for name, cfg in TRAINED.items():
        spm.SentencePieceTrainer.train(input=os.path.join(VOCAB, "sentencepiece", "botchan.txt"),
                                       model_prefix=str(d / name), minloglevel=2, **cfg)
        out[name] = str(d / f"{name}.model")
    return out


@pytest.mark.parametrize("name", ["test_model", "test_ja_model"] + list(TRAINED))
def test_sentencepiece(spm_models, name):
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=spm_models[name])
    args = ["--tokenizer-type", "SentencePieceTokenizer", "--tokenizer-model", spm_models[name]]
    seqs = id_sequences(sp.encode_as_ids, sp.get_piece_size(), 5)
    ours = compare(args, sp.decode_ids, seqs)
    if name == "bpe_bf":  # byte pieces really were decoded, and some were invalid
        assert any("\ufffd" in o for o in ours if isinstance(o, str))


# ---- NullTokenizer ----

def test_null():
    rng = random.Random(6)
    seqs = [[rng.randrange(5000) for _ in range(rng.randrange(0, 30))] for _ in range(200)]
    compare(["--tokenizer-type", "NullTokenizer", "--vocab-size", 5000],
            lambda ids: " ".join(str(i) for i in ids), seqs)


def test_out_of_range_id_is_an_error():
    ours = run_decode(["--tokenizer-type", "NullTokenizer", "--vocab-size", 10], [[3, 10]])
    assert isinstance(ours[0], dict) and "position 1" in ours[0]["error"]


# ---- mg-preprocess --inspect --decode, end to end ----

def test_inspect_decode_matches_reference(tmp_path, run_mg, megatron_read):
    """A dataset written by mg-preprocess, read back with megatron-core's IndexedDataset:
    --inspect's counts match it and --decode prints every sequence as transformers decodes
    its ids (llama2: SentencePiece-style BPE with byte fallback)."""
    quiet()
    from transformers import AutoTokenizer
    d = os.path.join(VOCAB, "hf", "llama2")
    t = AutoTokenizer.from_pretrained(d)
    texts = tt.botchan_lines()[:150] + MULTILINGUAL + [""]
    conftest.write_texts_jsonl(tmp_path / "in.jsonl", texts)
    tok = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", d]
    run_mg(["mg-preprocess", "--input", tmp_path / "in.jsonl", "--output-prefix",
            tmp_path / "ds", "--append-eod", "--quiet"] + tok)
    prefix = tmp_path / "ds_text_document"
    docs = megatron_read(str(prefix))
    out = run_mg(["mg-preprocess", "--inspect", prefix, "--decode", f"0-{len(docs) - 1}"] + tok)
    summary, _, decoded = out.stdout.partition("=== document 0:")
    n_seq = sum(len(doc) for doc in docs)
    n_tok = sum(len(s) for doc in docs for s in doc)
    assert f"documents                    {len(docs)}\n" in summary
    assert f"sequences                    {n_seq}\n" in summary
    assert f"tokens                       {n_tok}\n" in summary
    expect = "".join(
        f"=== document {i}: {len(doc)} sequences, {sum(map(len, doc))} tokens ===\n"
        + "".join(t.decode(s) + "\n" for s in doc) for i, doc in enumerate(docs))
    assert "=== document 0:" + decoded == expect
