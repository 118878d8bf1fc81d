"""Interop tests of the indexed dataset module (libcommon/dataset/idxds_*.c) against megatron-core.

The C side runs through build/tests/tools/idx_write (write / merge / dump). Checked:
  - our writer's .bin/.idx are byte-identical to IndexedDatasetBuilder's for random documents
    (empty documents and multi-sequence documents included), in every dtype;
  - megatron-core's IndexedDataset reads our files back to the same documents;
  - our merge of a directory equals merge_datasets.py's builder.add_index sequence (sorted
    prefixes, first dataset's dtype), plain and multimodal;
  - our reader (dump) reads files written by megatron-core, in every dtype, with modes;
  - an out-of-range token fails in both (numpy >= 2 raises) and we leave no files.
"""
import random

import numpy
import pytest

from conftest import DTYPE_CODES, megatron_indexed_dataset

# Token ranges per dtype code for random documents (within range, extremes included).
RANGES = {
    1: (0, 255),
    2: (-128, 127),
    3: (-32768, 32767),
    4: (-(2**31), 2**31 - 1),
    5: (-(2**63), 2**63 - 1),
    6: (-(2**40), 2**40),
    7: (-(2**24), 2**24),
    8: (0, 65535),
}


def random_docs(seed, code, n_docs=60, multi=True):
    """Random documents: about 1 in 6 empty, some with several sequences (some empty)."""
    rng = random.Random(seed)
    lo, hi = RANGES[code]
    docs = []
    for _ in range(n_docs):
        r = rng.random()
        if r < 0.16:
            docs.append([])
        elif multi and r < 0.4:
            seqs = [[rng.randint(lo, hi) for _ in range(rng.choice([0, 1, 3, 40]))]
                    for _ in range(rng.randint(1, 4))]
            # one zero-length sequence would print as an empty line, i.e. an empty document
            docs.append(seqs if seqs != [[]] else [[], [lo]])
        else:
            docs.append([rng.choice([lo, hi, rng.randint(lo, hi)]) for _ in range(rng.randint(1, 300))])
    return docs


def as_sequences(doc):
    if doc and isinstance(doc[0], list):
        return doc
    return [doc] if doc else []


def write_docs_file(path, docs):
    lines = [" | ".join(" ".join(str(t) for t in s) for s in as_sequences(d)) for d in docs]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def c_write(run_mg, tmp_path, name, docs, code):
    prefix = tmp_path / name
    txt = write_docs_file(tmp_path / (name + ".txt"), docs)
    run_mg(["idx_write", "write", code, prefix, txt])
    return prefix


def dump_lines(docs, code):
    """What `idx_write dump` prints for these documents."""
    n_seq = sum(len(as_sequences(d)) for d in docs)
    head = f"dtype={code} sequences={n_seq} documents={len(docs)}"
    return [head] + [" | ".join(" ".join(str(t) for t in s) for s in as_sequences(d)) for d in docs]


@pytest.fixture(autouse=True)
def _need_tool(test_tool):
    test_tool("idx_write")


@pytest.mark.parametrize("code", [8, 4])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_writer_byte_identical_random(tmp_path, run_mg, megatron_build, assert_same_dataset, code, seed):
    docs = random_docs(seed, code)
    ours = c_write(run_mg, tmp_path, "ours", docs, code)
    theirs = tmp_path / "theirs"
    megatron_build(theirs, docs, code)
    assert_same_dataset(ours, theirs)


@pytest.mark.parametrize("code", sorted(DTYPE_CODES))
def test_writer_byte_identical_every_dtype(tmp_path, run_mg, megatron_build, assert_same_dataset, code):
    docs = random_docs(100 + code, code, n_docs=25)
    ours = c_write(run_mg, tmp_path, "ours", docs, code)
    theirs = tmp_path / "theirs"
    megatron_build(theirs, docs, code)
    assert_same_dataset(ours, theirs)


def test_writer_edge_datasets(tmp_path, run_mg, megatron_build, assert_same_dataset):
    cases = {
        "nothing": [],
        "only_empty": [[], [], []],
        "worked_example": [[10, 20, 50256], [], [[1, 2], [3, 50256]]],
        "empty_last": [[1], []],
    }
    for name, docs in cases.items():
        ours = c_write(run_mg, tmp_path, name, docs, 8)
        theirs = tmp_path / (name + "_mc")
        megatron_build(theirs, docs, 8)
        assert_same_dataset(ours, theirs)


@pytest.mark.parametrize("code", [8, 4])
def test_megatron_reads_ours(tmp_path, run_mg, megatron_read, code):
    docs = random_docs(7, code)
    ours = c_write(run_mg, tmp_path, "ours", docs, code)
    assert megatron_read(ours) == [as_sequences(d) for d in docs]
    ds = megatron_indexed_dataset().IndexedDataset(str(ours))
    assert ds.index.dtype == DTYPE_CODES[code]
    # get() with an offset and a length, like GPTDataset uses it
    first = next(i for i, d in enumerate(docs) if len(as_sequences(d)) == 1 and len(d) > 5)
    seq = int(ds.document_indices[first])
    assert ds.get(seq, offset=2, length=3).tolist() == docs[first][2:5]


@pytest.mark.parametrize("code", sorted(DTYPE_CODES))
def test_dump_reads_megatron_files(tmp_path, run_mg, megatron_build, code):
    docs = random_docs(200 + code, code, n_docs=30)
    prefix = tmp_path / "mc"
    megatron_build(prefix, docs, code)
    out = run_mg(["idx_write", "dump", prefix]).stdout.splitlines()
    assert out == dump_lines(docs, code)


def test_merge_matches_megatron(tmp_path, run_mg, megatron_build, megatron_merge, assert_same_dataset):
    indir = tmp_path / "in"
    indir.mkdir()
    # names whose byte order differs from creation order and from case-folded order
    names = ["shard_10", "shard_2", "Shard_9", "a.b", "shard_1"]
    for i, name in enumerate(names):
        megatron_build(indir / name, random_docs(300 + i, 8, n_docs=12), 8)
    (indir / "subdir").mkdir()  # directories are ignored by merge_datasets.py
    ours = tmp_path / "ours"
    run_mg(["idx_write", "merge", indir, ours])
    theirs = tmp_path / "theirs"
    megatron_merge([indir / n for n in sorted(names)], theirs)
    assert_same_dataset(ours, theirs)


def test_merge_first_dtype_and_mismatch(tmp_path, run_mg, megatron_build):
    indir = tmp_path / "in"
    indir.mkdir()
    megatron_build(indir / "a", [[1, 2, 3]], 4)
    megatron_build(indir / "b", [[4]], 8)
    p = run_mg(["idx_write", "merge", indir, tmp_path / "out"], check=False)
    assert p.returncode == 1
    assert "b.idx: dtype uint16 (code 8) does not match the dtype int32 (code 4)" in p.stderr
    assert not list(tmp_path.glob("out*"))
    # megatron-core refuses the same merge (assert index.dtype == self.dtype)
    mod = megatron_indexed_dataset()
    builder = mod.IndexedDatasetBuilder(str(tmp_path / "mc.bin"), dtype=numpy.int32)
    builder.add_index(str(indir / "a"))
    with pytest.raises(AssertionError):
        builder.add_index(str(indir / "b"))


def test_merge_stray_file(tmp_path, run_mg, megatron_build):
    indir = tmp_path / "in"
    indir.mkdir()
    megatron_build(indir / "a", [[1]], 8)
    (indir / "README.txt").write_text("not a dataset\n")
    p = run_mg(["idx_write", "merge", indir, tmp_path / "out"], check=False)
    assert p.returncode == 1
    assert "README.txt: no .idx file" in p.stderr
    assert not list(tmp_path.glob("out*"))


def test_multimodal_read_and_merge(tmp_path, run_mg, megatron_merge, megatron_read, assert_same_dataset):
    import torch
    mod = megatron_indexed_dataset()
    indir = tmp_path / "in"
    indir.mkdir()
    for name, items in {"x": [([7, 8, 9], 0), ([1, 2], 1)], "y": [([5], 1), ([], 0), ([6, 6], 0)]}.items():
        b = mod.IndexedDatasetBuilder(str(indir / name) + ".bin", dtype=numpy.int32, multimodal=True)
        for toks, mode in items:
            b.add_item(torch.tensor(toks, dtype=torch.int64), mode)
        b.end_document()
        b.add_item(torch.tensor([4], dtype=torch.int64), 1)
        b.end_document()
        b.finalize(str(indir / name) + ".idx")
    out = run_mg(["idx_write", "dump", indir / "x"]).stdout.splitlines()
    assert out == ["dtype=4 sequences=3 documents=2 modes=0,1,1", "7 8 9 | 1 2", "4"]
    ours = tmp_path / "ours"
    run_mg(["idx_write", "merge", indir, ours])
    theirs = tmp_path / "theirs"
    megatron_merge([indir / "x", indir / "y"], theirs, multimodal=True)
    assert_same_dataset(ours, theirs)
    assert megatron_read(ours, multimodal=True)[2] == [[5], [], [6, 6]]


def test_out_of_range_token(tmp_path, run_mg):
    txt = write_docs_file(tmp_path / "d.txt", [[1, 2], [70000]])
    p = run_mg(["idx_write", "write", 8, tmp_path / "ds", txt], check=False)
    assert p.returncode == 1
    assert "token id 70000 does not fit in uint16" in p.stderr
    assert not list(tmp_path.glob("ds*"))
    mod = megatron_indexed_dataset()
    builder = mod.IndexedDatasetBuilder(str(tmp_path / "mc.bin"), dtype=numpy.uint16)
    with pytest.raises(OverflowError):
        builder.add_document([70000], [1])
