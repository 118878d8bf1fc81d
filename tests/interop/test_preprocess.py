"""Interop tests of mg-preprocess against Megatron's preprocess_data.py / merge_datasets.py.

The peer side is what preprocess_data.py does (docs/FORMATS.md §2), computed here
with the real peers, and written with megatron-core's IndexedDatasetBuilder
(conftest.megatron_build / megatron_merge):
    for each line, for each key: ids = tokenizer.tokenize(value); if ids and --append-eod:
    ids.append(eod); builder.add_document(ids, [len(ids)] or [])
Tokenizers (Megatron's current system, megatron/core/tokenizers):
  GPT2BPETokenizer      transformers GPT2TokenizerFast on the local vocab/merges (what
                        Megatron's AutoTokenizer("gpt2", vocab_file, merges_file) is); eod 50256
  TikTokenizer          megatron-core's TikTokenTokenizer on a Megatron JSON vocabulary
                        converted from cl100k_base.tiktoken (the 256 single-byte entries
                        reordered to bytes 0..255, as Megatron's loader requires)
  HuggingFaceTokenizer  transformers AutoTokenizer(dir)(text).input_ids, eod = eos_token_id
  NullTokenizer         megatron-core's NullTokenizer class; HEAD's --vocab-size V has
                        vocab_size V and eod V-1, which is megatron-core 0.16's NullTokenizer(V-1)
Checked: byte-identical .bin/.idx for a corpus of botchan lines, fortunes (English, Chinese,
Bulgarian), adversarial strings, empty documents and multi-key records, with and without
--append-eod; identical output for --workers 1/2/3; for plain/.gz/.zst/.bz2/.xz/tar/zip
input/stdin/a directory of shards; --partitions P = Megatron's round-robin partitions merged
with add_index; --keep-sequential-samples; --merge = merge_datasets.py; no partition files left.
"""
import base64
import bz2
import gzip
import json
import logging
import lzma
import os
import pathlib
import random
import shutil
import subprocess
import tarfile
import warnings
import zipfile

import pytest

from conftest import ROOT, VOCAB_DIR, assert_same_dataset, megatron_build, megatron_merge, run_mg

VOCAB = VOCAB_DIR
FORTUNES = pathlib.Path("/usr/share/games/fortunes")

ADVERSARIAL = [
    "",
    " ",
    "  ",
    "\n",
    "\r\n",
    "a\rb",
    "\t\u3000\u00a0\u2028x",
    "<|endoftext|>",
    "before<|endoftext|>after <|endoftext|>",
    "<s></s><unk><mask>",
    "I'm what's 'S 'll 've 're 'd",
    "caf\u00e9 cafe\u0301 \u00c5ngstr\u00f6m \ufb01",
    "\U0001F600\U0001F469\u200d\U0001F4BB emoji \u2764\ufe0f",
    "\u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd",
    "\u0000 nul \u0001\u001f control",
    "1234567890" * 30,
    "a" * 3000,
    " " * 50 + "x" + " " * 50,
    "https://example.com/a?b=c&d=e#f",
    "def f(x):\n    return x ** 2\n\n\n",
    "\u00ad\ufeff\ufffd\U0010fffd",
    "\u0130\u0131 \u1e9e\u00df",
]


def fortune_entries(name, limit):
    text = (FORTUNES / name).read_text(encoding="utf-8")
    return [e.strip("\n") for e in text.split("\n%\n") if e.strip()][:limit]


def corpus_texts():
    botchan = (VOCAB / "sentencepiece" / "botchan.txt").read_text(encoding="utf-8").split("\n")
    texts = botchan[:2500]
    for name, limit in [("fortunes", 200), ("chinese", 300), ("bg/bgproverb", 125),
                        ("bg/bgauthors", 151)]:
        texts += fortune_entries(name, limit)
    texts += ADVERSARIAL
    rng = random.Random(7)
    rng.shuffle(texts)
    return texts


def write_jsonl(path, records):
    """One JSON object per line; ensure_ascii alternates and every 5th line ends in CRLF."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        for i, rec in enumerate(records):
            f.write(json.dumps(rec, ensure_ascii=(i % 2 == 0)))
            f.write("\r\n" if i % 5 == 3 else "\n")
    return path


def peer_docs(records, key, encode, eod, append_eod):
    docs = []
    for rec in records:
        ids = list(encode(rec[key]))
        if ids and append_eod:
            ids.append(eod)
        docs.append(ids)
    return docs


def dtype_for(vocab_size):
    return "uint16" if vocab_size < 65500 else "int32"


def preprocess(tmp, inputs, prefix, tok, keys=("text",), extra=(), input_data=None):
    args = ["mg-preprocess", "--output-prefix", str(tmp / prefix), "--quiet"]
    for i in inputs:
        args += ["--input", str(i)]
    args += ["--json-keys", *keys] + list(tok["args"]) + list(extra)
    run_mg(args, input=input_data)
    return [tmp / f"{prefix}_{k}_document" for k in keys]


def expect(tmp, name, records, key, tok, append_eod):
    prefix = tmp / name
    megatron_build(prefix, peer_docs(records, key, tok["encode"], tok["eod"], append_eod),
                   dtype_for(tok["vocab_size"]))
    return prefix


# ---- tokenizers ---------------------------------------------------------------------------


def quiet_imports():
    for name in ("transformers", "megatron", "megatron.core"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.simplefilter("ignore")


def gpt2_tok(tmp_dir):
    """The files under the names from_pretrained looks for (works in transformers 4 and 5)."""
    quiet_imports()
    from transformers import GPT2TokenizerFast

    shutil.copy(VOCAB / "gpt2" / "gpt2-vocab.json", tmp_dir / "vocab.json")
    shutil.copy(VOCAB / "gpt2" / "gpt2-merges.txt", tmp_dir / "merges.txt")
    t = GPT2TokenizerFast.from_pretrained(str(tmp_dir))
    assert len(t) == 50257 and t.eos_token_id == 50256
    t.model_max_length = 1 << 40
    return {"args": ["--tokenizer-type", "GPT2BPETokenizer",
                     "--vocab-file", VOCAB / "gpt2" / "gpt2-vocab.json",
                     "--merge-file", VOCAB / "gpt2" / "gpt2-merges.txt"],
            "encode": lambda s: t(s)["input_ids"], "eod": t.eos_token_id,
            "vocab_size": len(t)}


def tiktoken_json(path):
    """cl100k_base.tiktoken as Megatron's JSON list: entry i = {rank, token_bytes, token_str};
    the single bytes (ranks 0..255 in cl100k, in another order) are put at 0..255 in byte
    order. Only single-byte ids move; merges involve pieces of 2+ bytes, so BPE is unchanged."""
    lines = (VOCAB / "tiktoken" / "cl100k_base.tiktoken").read_text().split()
    toks = [base64.b64decode(lines[i]) for i in range(0, len(lines), 2)]
    assert sorted(toks[:256]) == [bytes([b]) for b in range(256)]
    toks[:256] = [bytes([b]) for b in range(256)]
    entries = [{"rank": i, "token_bytes": base64.b64encode(b).decode(),
                "token_str": b.decode("utf-8", errors="replace")} for i, b in enumerate(toks)]
    path.write_text(json.dumps(entries))
    return path, len(toks)


def tiktoken_tok(tmp_dir):
    quiet_imports()
    from megatron.core.tokenizers.text.libraries.tiktoken_tokenizer import TikTokenTokenizer

    path, n = tiktoken_json(tmp_dir / "cl100k_megatron.json")
    vocab_size = n + 1000
    t = TikTokenTokenizer(str(path), vocab_size=vocab_size)
    return {"args": ["--tokenizer-type", "TikTokenizer", "--tokenizer-model", path,
                     "--vocab-size", vocab_size],
            "encode": t.text_to_ids, "eod": t.eod, "vocab_size": t.vocab_size}


def hf_tok(name):
    quiet_imports()
    from transformers import AutoTokenizer

    d = VOCAB / "hf" / name
    t = AutoTokenizer.from_pretrained(str(d))
    t.model_max_length = 1 << 40
    return {"args": ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", d],
            "encode": lambda s: t(s).input_ids, "eod": t.eos_token_id, "vocab_size": len(t)}


def null_tok(vocab_size):
    quiet_imports()
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    t = NullTokenizer(vocab_size - 1)  # = HEAD's NullTokenizer(vocab_size), see the docstring
    assert t.vocab_size == vocab_size and t.eod == vocab_size - 1
    return {"args": ["--tokenizer-type", "NullTokenizer", "--vocab-size", vocab_size],
            "encode": t.text_to_ids, "eod": t.eod, "vocab_size": t.vocab_size}


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            if name == "gpt2":
                cache[name] = gpt2_tok(tmp_path_factory.mktemp("gpt2"))
            elif name == "tiktoken":
                cache[name] = tiktoken_tok(tmp_path_factory.mktemp("tiktoken"))
            elif name.startswith("hf-"):
                cache[name] = hf_tok(name[3:])
            else:
                cache[name] = null_tok(int(name.split("-")[1]))
        return cache[name]

    return get


def null_records(n, vocab_size, seed=3):
    """NullTokenizer input: space-separated integers below vocab_size (never empty: Python's
    int('') fails), plus a second key."""
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        k = rng.choice([1, 1, 2, 5, 40, 300])
        recs.append({"text": " ".join(str(rng.randrange(vocab_size)) for _ in range(k)),
                     "id": str(i % vocab_size)})
    return recs


# ---- tokenizer semantics ----------------------------------------------------------------

TOKENIZERS = ["gpt2", "tiktoken", "hf-llama3", "hf-qwen3", "hf-deepseek_v3"]


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
@pytest.mark.parametrize("name", TOKENIZERS)
def test_corpus_matches_megatron(tmp_path, tokenizers, name, append_eod):
    tok = tokenizers(name)
    records = [{"text": t} for t in corpus_texts()]
    if name == "tiktoken":  # tiktoken turns a lone surrogate into U+FFFD; the others fail
        records.append({"text": "lone \ud800 surrogate"})
    src = write_jsonl(tmp_path / "corpus.jsonl", records)
    extra = ["--append-eod"] if append_eod else []
    (got,) = preprocess(tmp_path, [src], "out", tok, extra=extra + ["--workers", "2"])
    assert_same_dataset(got, expect(tmp_path, "peer", records, "text", tok, append_eod))


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
@pytest.mark.parametrize("vocab_size", [1000, 70000])
def test_null_tokenizer_matches_megatron(tmp_path, tokenizers, vocab_size, append_eod):
    tok = tokenizers(f"null-{vocab_size}")
    records = null_records(3000, vocab_size)
    src = write_jsonl(tmp_path / "ints.jsonl", records)
    extra = ["--append-eod"] if append_eod else []
    (got,) = preprocess(tmp_path, [src], "out", tok, extra=extra)
    assert_same_dataset(got, expect(tmp_path, "peer", records, "text", tok, append_eod))


def test_multi_key_records(tmp_path, tokenizers):
    tok = tokenizers("gpt2")
    texts = corpus_texts()[:1500]
    records = []
    for i in range(0, len(texts) - 1, 2):  # key order varies; an extra key is ignored
        rec = {"title": texts[i], "n": i, "text": texts[i + 1]}
        records.append(rec if i % 4 else {"text": rec["text"], "title": rec["title"], "n": None})
    src = write_jsonl(tmp_path / "mk.jsonl", records)
    got = preprocess(tmp_path, [src], "out", tok, keys=("title", "text"),
                     extra=["--append-eod", "--workers", "3"])
    for prefix, key in zip(got, ("title", "text")):
        assert_same_dataset(prefix, expect(tmp_path, "peer_" + key, records, key, tok, True))


# ---- determinism and input forms -----------------------------------------------------------


def test_workers_do_not_change_output(tmp_path, tokenizers):
    tok = tokenizers("gpt2")
    records = [{"text": t} for t in corpus_texts()] * 3
    src = write_jsonl(tmp_path / "c.jsonl", records)
    outs = [preprocess(tmp_path, [src], f"w{w}", tok, extra=["--append-eod", "--workers", w])[0]
            for w in (1, 2, 3)]
    assert_same_dataset(outs[0], outs[1])
    assert_same_dataset(outs[0], outs[2])
    assert_same_dataset(outs[0], expect(tmp_path, "peer", records, "text", tok, True))


def test_null_workers_do_not_change_output(tmp_path, tokenizers):
    tok = tokenizers("null-70000")
    records = null_records(60000, 70000, seed=11)
    src = write_jsonl(tmp_path / "c.jsonl", records)
    outs = [preprocess(tmp_path, [src], f"w{w}", tok, keys=("text", "id"),
                       extra=["--append-eod", "--workers", w])
            for w in (1, 2, 3, 8)]
    for o in outs[1:]:
        assert_same_dataset(outs[0][0], o[0])
        assert_same_dataset(outs[0][1], o[1])
    assert_same_dataset(outs[0][0], expect(tmp_path, "peer", records, "text", tok, True))


def compress(src, dst, kind):
    data = src.read_bytes()
    if kind == "gz":
        dst.write_bytes(gzip.compress(data))
    elif kind == "bz2":
        dst.write_bytes(bz2.compress(data))
    elif kind == "xz":
        dst.write_bytes(lzma.compress(data))
    elif kind == "zst":
        subprocess.run(["zstd", "-q", "-f", "-o", str(dst), str(src)], check=True)
    return dst


def test_compressed_archives_stdin_and_directories(tmp_path, tokenizers):
    tok = tokenizers("null-1000")
    records = null_records(40000, 1000, seed=5)
    half = len(records) // 2
    shard_dir = tmp_path / "shards"
    shard_dir.mkdir()
    a = write_jsonl(shard_dir / "part-0.jsonl", records[:half])
    b = write_jsonl(shard_dir / "part-1.jsonl", records[half:])
    whole = tmp_path / "all.jsonl"
    whole.write_bytes(a.read_bytes() + b.read_bytes())
    (ref,) = preprocess(tmp_path, [whole], "plain", tok, extra=["--append-eod"])
    assert_same_dataset(ref, expect(tmp_path, "peer", records, "text", tok, True))

    variants = {"two-files": [a, b], "directory": [shard_dir]}
    for kind in ("gz", "zst", "bz2", "xz"):
        variants[kind] = [compress(whole, tmp_path / f"all.jsonl.{kind}", kind)]
    variants["mixed"] = [compress(a, tmp_path / "a.jsonl.gz", "gz"),
                         compress(b, tmp_path / "b.jsonl.zst", "zst")]
    with tarfile.open(tmp_path / "shards.tar", "w") as t:
        t.add(a, arcname="part-0.jsonl")
        t.add(b, arcname="part-1.jsonl")
    variants["tar"] = [tmp_path / "shards.tar"]
    compress(tmp_path / "shards.tar", tmp_path / "shards.tar.gz", "gz")
    variants["tar.gz"] = [tmp_path / "shards.tar.gz"]
    with zipfile.ZipFile(tmp_path / "shards.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.write(a, "part-0.jsonl")
        z.write(b, "part-1.jsonl")
    variants["zip"] = [tmp_path / "shards.zip"]
    for name, inputs in variants.items():
        (got,) = preprocess(tmp_path, inputs, name, tok, extra=["--append-eod", "--workers", 3])
        assert_same_dataset(got, ref)
    (got,) = preprocess(tmp_path, ["-"], "stdin", tok, extra=["--append-eod"],
                        input_data=whole.read_text(encoding="utf-8"))
    assert_same_dataset(got, ref)


# ---- partitions and merge ------------------------------------------------------------------


@pytest.mark.parametrize("parts", [2, 3])
def test_partitions_round_robin(tmp_path, tokenizers, parts):
    """preprocess_data.py --partitions P: line n (counted over all input files) goes to
    partition n % P; each partition is encoded, then the partitions are merged in order
    0..P-1 with add_index. The documents come out permuted."""
    tok = tokenizers("null-1000")
    records = null_records(5001, 1000, seed=9)
    src_a = write_jsonl(tmp_path / "a.jsonl", records[:2000])
    src_b = write_jsonl(tmp_path / "b.jsonl", records[2000:])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    got = preprocess(out_dir, [src_a, src_b], "p", tok, keys=("text", "id"),
                     extra=["--append-eod", "--partitions", parts, "--workers", 2])
    for prefix, key in zip(got, ("text", "id")):
        part_prefixes = []
        for i in range(parts):
            part = [r for n, r in enumerate(records) if n % parts == i]
            part_prefixes.append(expect(tmp_path, f"peer_{i}_{key}", part, key, tok, True))
        megatron_merge(part_prefixes, tmp_path / f"peer_{key}")
        assert_same_dataset(prefix, tmp_path / f"peer_{key}")
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(
        f"p_{k}_document.{e}" for k in ("text", "id") for e in ("bin", "idx"))


def test_keep_sequential_samples_keeps_order(tmp_path, tokenizers):
    tok = tokenizers("null-1000")
    records = null_records(3001, 1000, seed=13)
    src = write_jsonl(tmp_path / "a.jsonl", records)
    (got,) = preprocess(tmp_path, [src], "seq", tok,
                        extra=["--partitions", 4, "--keep-sequential-samples"])
    assert_same_dataset(got, expect(tmp_path, "peer", records, "text", tok, False))


def test_merge_mode_matches_merge_datasets(tmp_path, tokenizers):
    tok = tokenizers("null-1000")
    d = tmp_path / "parts"
    d.mkdir()
    names = ["b_part", "a_part", "c10", "c9", "C_upper"]  # code-point order: C_upper a_ b_ c10 c9
    for i, name in enumerate(names):
        docs = peer_docs(null_records(50 + 30 * i, 1000, seed=i), "text", tok["encode"],
                         tok["eod"], i % 2 == 0)
        megatron_build(d / name, docs + [[]], "uint16")
    run_mg(["mg-preprocess", "--merge", "--input", d, "--output-prefix", tmp_path / "merged",
            "--quiet"])
    megatron_merge([d / n for n in sorted(names)], tmp_path / "peer")
    assert_same_dataset(tmp_path / "merged", tmp_path / "peer")
