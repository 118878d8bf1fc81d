"""Interop tests of mg-preprocess on JSON values that are lists of strings (sentences).

Megatron's Encoder.encode (docs/FORMATS.md §2) accepts data[key] being a list of
strings, as in the "_ss" files --split-sentences writes:
    sentences = text if isinstance(text, list) else [text]
    for s in sentences: ids = tokenize(s); if ids: doc_ids += ids; lens.append(len(ids))
    if doc_ids and append_eod: doc_ids.append(eod); lens[-1] += 1
    builder.add_document(doc_ids, lens)
The peer side below does exactly that with the real tokenizers (transformers'
GPT2TokenizerFast on the local GPT-2 files, megatron-core's NullTokenizer) and writes the
dataset with megatron-core's IndexedDatasetBuilder (conftest.megatron_build, a document
being a list of sequences). Checked: byte-identical .bin/.idx with and without --append-eod,
records mixing strings and lists (empty sentences, all-empty lists, [], whitespace), two
keys, --workers 1/3, --partitions 2, and list records read from a tar of .jsonl.gz,
.jsonl.zst and plain members and from a zip of .jsonl.gz members.
"""
import gzip
import json
import os
import pathlib
import random
import subprocess
import tarfile
import zipfile

import pytest

from conftest import ROOT, VOCAB_DIR, assert_same_dataset, megatron_build, megatron_merge, run_mg
from test_preprocess import gpt2_tok, quiet_imports

VOCAB = VOCAB_DIR


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return dict(gpt2_tok(tmp_path_factory.mktemp("gpt2")), dtype="uint16")


@pytest.fixture(scope="module")
def null():
    quiet_imports()
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer

    vocab_size = 70000
    t = NullTokenizer(vocab_size - 1)  # = HEAD's NullTokenizer(V) (see test_preprocess.py)
    assert t.eod == vocab_size - 1
    return {"args": ["--tokenizer-type", "NullTokenizer", "--vocab-size", vocab_size],
            "encode": t.text_to_ids, "eod": t.eod, "dtype": "int32"}


def encoder_encode(value, encode, eod, append_eod):
    """Encoder.encode for one key: the document as a list of sequences."""
    sentences = value if isinstance(value, list) else [value]
    seqs = []
    for s in sentences:
        ids = list(encode(s))
        if len(ids) > 0:
            seqs.append(ids)
    if seqs and append_eod:
        seqs[-1].append(eod)
    return seqs


def expect(tmp, name, records, key, tok, append_eod):
    docs = [encoder_encode(r[key], tok["encode"], tok["eod"], append_eod) for r in records]
    megatron_build(tmp / name, docs, tok["dtype"])
    return tmp / name


def write_jsonl(path, records):
    """ensure_ascii alternates; every 7th line ends in CRLF."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        for i, rec in enumerate(records):
            f.write(json.dumps(rec, ensure_ascii=(i % 2 == 0)))
            f.write("\r\n" if i % 7 == 3 else "\n")
    return path


def preprocess(tmp, inputs, prefix, tok, keys=("text",), extra=()):
    args = ["mg-preprocess", "--output-prefix", str(tmp / prefix), "--quiet"]
    for i in inputs:
        args += ["--input", str(i)]
    run_mg(args + ["--json-keys", *keys] + list(tok["args"]) + list(extra))
    return [tmp / f"{prefix}_{k}_document" for k in keys]


# ---- records ---------------------------------------------------------------------------------


def text_records(n, seed=1):
    """Lists of botchan sentences (with empty and whitespace sentences, all-empty lists, []),
    plain strings in between, and a "title" key that is a list or a string."""
    lines = [x for x in (VOCAB / "sentencepiece" / "botchan.txt").read_text(
        encoding="utf-8").split("\n")]
    extras = ["", "", " ", "\n", "caf\u00e9 \u4e2d\u6587 \U0001F600", "<|endoftext|>", "a\r\nb"]
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            text = rng.choice(lines)
        elif kind == 1:
            text = []
        elif kind == 2:
            text = ["" for _ in range(rng.randint(1, 3))]
        else:
            pool = lines + extras * 20
            text = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
        title = [rng.choice(lines), rng.choice(extras)] if i % 2 else rng.choice(lines)
        recs.append({"title": title, "text": text} if i % 3 else {"text": text, "title": title})
    return recs


def int_records(n, vocab_size=70000, seed=2):
    """NullTokenizer input: lists of space-separated integers (Python's int('') fails, so
    no empty sentence; empty documents come from [])."""
    rng = random.Random(seed)
    recs = []
    for i in range(n):
        k = rng.choice([0, 1, 1, 2, 5, 30])
        sents = [" ".join(str(rng.randrange(vocab_size)) for _ in range(rng.randint(1, 20)))
                 for _ in range(k)]
        recs.append({"text": sents if i % 5 else (sents[0] if sents else "7")})
    return recs


# ---- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
def test_gpt2_lists_match_encoder_encode(tmp_path, gpt2, append_eod):
    records = text_records(1500)
    src = write_jsonl(tmp_path / "lists.jsonl", records)
    extra = (["--append-eod"] if append_eod else []) + ["--workers", 3]
    got = preprocess(tmp_path, [src], "out", gpt2, keys=("text", "title"), extra=extra)
    for prefix, key in zip(got, ("text", "title")):
        assert_same_dataset(prefix, expect(tmp_path, "peer_" + key, records, key, gpt2,
                                           append_eod))


@pytest.mark.parametrize("append_eod", [False, True], ids=["no-eod", "eod"])
def test_null_lists_match_encoder_encode(tmp_path, null, append_eod):
    records = int_records(20000)
    src = write_jsonl(tmp_path / "ints.jsonl", records)
    extra = ["--append-eod"] if append_eod else []
    peer = expect(tmp_path, "peer", records, "text", null, append_eod)
    for workers in (1, 3):
        (got,) = preprocess(tmp_path, [src], f"w{workers}", null,
                            extra=extra + ["--workers", workers])
        assert_same_dataset(got, peer)


def test_lists_with_partitions(tmp_path, null):
    records = int_records(3001, seed=5)
    src = write_jsonl(tmp_path / "ints.jsonl", records)
    out = tmp_path / "out"
    out.mkdir()
    (got,) = preprocess(out, [src], "p", null, extra=["--append-eod", "--partitions", 2])
    parts = [expect(tmp_path, f"peer_{i}", [r for n, r in enumerate(records) if n % 2 == i],
                    "text", null, True) for i in range(2)]
    megatron_merge(parts, tmp_path / "peer")
    assert_same_dataset(got, tmp_path / "peer")


def test_lists_from_archives_of_compressed_shards(tmp_path, null):
    """A tar of .jsonl.gz / .jsonl.zst / plain shards and a zip of .jsonl.gz shards read
    like the concatenated shards."""
    records = int_records(9000, seed=7)
    shards = tmp_path / "shards"
    shards.mkdir()
    thirds = [records[:3000], records[3000:6000], records[6000:]]
    plain = [write_jsonl(shards / f"part-{i}.jsonl", r) for i, r in enumerate(thirds)]
    gz = shards / "part-0.jsonl.gz"
    gz.write_bytes(gzip.compress(plain[0].read_bytes()))
    zst = shards / "part-1.jsonl.zst"
    subprocess.run(["zstd", "-q", "-f", "-o", str(zst), str(plain[1])], check=True)
    with tarfile.open(tmp_path / "shards.tar", "w") as t:
        for p in (gz, zst, plain[2]):
            t.add(p, arcname=p.name)
    for i in (1, 2):
        (shards / f"part-{i}.jsonl.gz").write_bytes(gzip.compress(plain[i].read_bytes()))
    with zipfile.ZipFile(tmp_path / "shards.zip", "w", zipfile.ZIP_STORED) as z:
        for i in range(3):
            z.write(shards / f"part-{i}.jsonl.gz", f"part-{i}.jsonl.gz")
    peer = expect(tmp_path, "peer", records, "text", null, True)
    for name in ("shards.tar", "shards.zip"):
        (got,) = preprocess(tmp_path, [tmp_path / name], name.replace(".", "_"), null,
                            extra=["--append-eod", "--workers", 2])
        assert_same_dataset(got, peer)
