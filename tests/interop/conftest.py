"""Shared fixtures and helpers for the interop tests (pytest against the real peers).

Paths
  root           the repository root (the parent of tests/)
  vocab_dir      VOCAB_DIR: $MG_VOCAB_DIR, or <root>/build/vocab, which the session unpacks
                 from tests/data/vocab.tar.zst (scripts/unpack-vocab.sh) when it is stale
  bin_dir        built tools: <root>/$MG_BIN (default <root>/bin)
  tools_dir      test programs: <root>/$MG_BUILD/tests/tools (default <root>/build/tests/tools)
  mg_preprocess  <bin_dir>/mg-preprocess; a missing binary FAILS the test (never skips)
  test_tool      test_tool(name) -> path of <tools_dir>/<name>, failing if it was not built

Corpora
  write_texts_jsonl(path, texts, key="text") -> path: one JSON line {key: text} per text.

Running programs
  run_mg(args, check=True, input=None, cwd=None, env=None) -> subprocess.CompletedProcess
      args[0] may be a tool name ("mg-preprocess"), a test program name ("idx_write") or a
      path; output is text. With check=True a non-zero exit fails the test and shows the
      command, the exit status and stderr. No wall-clock limit (tests never time out).

Megatron indexed datasets (megatron-core's own code, import warnings silenced)
  megatron_build(prefix, docs, dtype, multimodal=False)
      writes prefix.bin/.idx with IndexedDatasetBuilder exactly like preprocess_data.py:
      builder.add_document(flat_ids, lengths) per document. A document is a list of ids (one
      sequence; [] = empty document: add_document([], [])) or a list of lists of ids (one
      sequence each). dtype: a numpy dtype or a Megatron dtype code.
  megatron_merge(prefixes, out_prefix, multimodal=False)
      tools/merge_datasets.py's loop: builder with the first dataset's dtype, add_index each
      prefix in the order given, finalize.
  megatron_read(prefix, multimodal=False) -> list of documents, each a list of sequences
      (lists of Python ints), read with IndexedDataset.
  assert_same_dataset(prefix_a, prefix_b)
      .bin and .idx must be byte-identical; on a mismatch the failure names the first
      differing document (read with IndexedDataset), or the header/array that differs.
All helpers exist both as module functions (import conftest) and as fixtures of the same name.

Skips
  Every skip is listed with its reason (-rs is always on). A skip that expected-skips.txt
  does not name fails the run: a suite that cannot run must not pass.
"""
import fnmatch
import logging
import os
import pathlib
import subprocess
import warnings

import numpy
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCAB_DIR = pathlib.Path(os.environ.get("MG_VOCAB_DIR") or ROOT / "build" / "vocab")
EXPECTED_SKIPS = pathlib.Path(__file__).with_name("expected-skips.txt")

DTYPE_CODES = {
    1: numpy.uint8,
    2: numpy.int8,
    3: numpy.int16,
    4: numpy.int32,
    5: numpy.int64,
    6: numpy.float64,
    7: numpy.float32,
    8: numpy.uint16,
}

_megatron = None


def megatron_indexed_dataset():
    """megatron.core.datasets.indexed_dataset, imported once with its warnings silenced."""
    global _megatron
    if _megatron is None:
        for name in ("torch.utils.cpp_extension", "megatron", "megatron.core"):
            logging.getLogger(name).setLevel(logging.ERROR)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from megatron.core.datasets import indexed_dataset
        logging.getLogger("megatron.core.datasets.indexed_dataset").setLevel(logging.WARNING)
        _megatron = indexed_dataset
    return _megatron


def numpy_dtype(dtype):
    """A numpy dtype class from a Megatron dtype code or anything numpy.dtype accepts."""
    if isinstance(dtype, int):
        return DTYPE_CODES[dtype]
    return numpy.dtype(dtype).type


def _sequences(doc):
    if len(doc) > 0 and isinstance(doc[0], (list, tuple, numpy.ndarray)):
        return [list(s) for s in doc]
    return [list(doc)] if len(doc) > 0 else []


def megatron_build(prefix, docs, dtype, multimodal=False):
    mod = megatron_indexed_dataset()
    prefix = str(prefix)
    builder = mod.IndexedDatasetBuilder(
        prefix + ".bin", dtype=numpy_dtype(dtype), multimodal=multimodal
    )
    for doc in docs:
        seqs = _sequences(doc)
        flat = [t for s in seqs for t in s]
        builder.add_document(flat, [len(s) for s in seqs])
    builder.finalize(prefix + ".idx")


def megatron_merge(prefixes, out_prefix, multimodal=False):
    mod = megatron_indexed_dataset()
    prefixes = [str(p) for p in prefixes]
    first = mod.IndexedDataset(prefixes[0], multimodal=multimodal)
    builder = mod.IndexedDatasetBuilder(
        str(out_prefix) + ".bin", dtype=first.index.dtype, multimodal=multimodal
    )
    del first
    for p in prefixes:
        builder.add_index(p)
    builder.finalize(str(out_prefix) + ".idx")


def megatron_read(prefix, multimodal=False):
    mod = megatron_indexed_dataset()
    ds = mod.IndexedDataset(str(prefix), multimodal=multimodal)
    docs = []
    di = ds.document_indices
    for k in range(len(di) - 1):
        seqs = []
        for i in range(int(di[k]), int(di[k + 1])):
            item = ds[i]
            tokens = item[0] if multimodal else item
            seqs.append([int(x) for x in tokens])
        docs.append(seqs)
    return docs


def _first_difference(prefix_a, prefix_b):
    """A sentence naming where two datasets differ, read with IndexedDataset."""
    mod = megatron_indexed_dataset()
    try:
        a = mod.IndexedDataset(str(prefix_a))
        b = mod.IndexedDataset(str(prefix_b))
    except Exception as e:  # noqa: BLE001 - report whatever the peer says
        return f"IndexedDataset cannot open one of them: {e!r}"
    if a.index.dtype != b.index.dtype:
        return f"dtype {a.index.dtype} != {b.index.dtype}"
    da, db = a.document_indices, b.document_indices
    for k in range(min(len(da), len(db)) - 1):
        ra, rb = (int(da[k]), int(da[k + 1])), (int(db[k]), int(db[k + 1]))
        seq_a = [a[i].tolist() for i in range(*ra)]
        seq_b = [b[i].tolist() for i in range(*rb)]
        if seq_a != seq_b or ra != rb:
            return f"first differing document {k}: {seq_a[:8]} (sequences {ra}) != {seq_b[:8]} (sequences {rb})"
    if len(da) != len(db):
        return f"document counts differ: {len(da) - 1} != {len(db) - 1}"
    if not numpy.array_equal(a.sequence_lengths, b.sequence_lengths):
        return "sequence lengths differ"
    return "documents are equal; the difference is in the header, pointers or modes"


def assert_same_dataset(prefix_a, prefix_b):
    diffs = []
    for ext in (".bin", ".idx"):
        pa, pb = pathlib.Path(str(prefix_a) + ext), pathlib.Path(str(prefix_b) + ext)
        ba, bb = pa.read_bytes(), pb.read_bytes()
        if ba != bb:
            at = next((i for i, (x, y) in enumerate(zip(ba, bb)) if x != y), min(len(ba), len(bb)))
            diffs.append(f"{pa.name} ({len(ba)} bytes) != {pb.name} ({len(bb)} bytes) from byte {at}")
    if diffs:
        pytest.fail(
            f"datasets {prefix_a} and {prefix_b} differ: {'; '.join(diffs)}; "
            + _first_difference(prefix_a, prefix_b)
        )


def assert_same_ids(got, expect, texts):
    """Fails naming the first of the texts whose ids (got[i]) differ from expect[i]."""
    bad = [i for i in range(len(texts)) if got[i] != expect[i]]
    if bad:
        i = bad[0]
        pytest.fail(f"{len(bad)} of {len(texts)} texts differ; first {texts[i][:80]!r}:\n"
                    f"  ours {got[i][:40]}\n  ref  {expect[i][:40]}")


def bin_dir_path():
    return (ROOT / os.environ.get("MG_BIN", "bin")).resolve()


def tools_dir_path():
    return ROOT / os.environ.get("MG_BUILD", "build") / "tests" / "tools"


def _resolve(prog):
    prog = str(prog)
    if "/" in prog:
        return prog
    for d in (bin_dir_path(), tools_dir_path()):
        if (d / prog).exists():
            return str(d / prog)
    pytest.fail(f"{prog} not found in {bin_dir_path()} or {tools_dir_path()}: run make (and make tools-test)")


def write_texts_jsonl(path, texts, key="text"):
    """Writes one JSON line {key: text} per text; returns path."""
    import json
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({key: t}) + "\n")
    return path


def run_mg(args, check=True, input=None, cwd=None, env=None):
    cmd = [_resolve(args[0])] + [str(a) for a in args[1:]]
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    p = subprocess.run(cmd, input=input, cwd=cwd, env=full_env, capture_output=True, text=True)
    if check and p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited with {p.returncode}:\n{p.stderr}")
    return p


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def vocab_dir():
    return VOCAB_DIR


@pytest.fixture(scope="session")
def bin_dir():
    return bin_dir_path()


@pytest.fixture(scope="session")
def tools_dir():
    return tools_dir_path()


@pytest.fixture(scope="session")
def mg_preprocess(bin_dir):
    p = bin_dir / "mg-preprocess"
    if not os.access(p, os.X_OK):
        pytest.fail(f"{p} is missing: build it with make")
    return p


@pytest.fixture(scope="session")
def test_tool():
    def get(name):
        p = tools_dir_path() / name
        if not os.access(p, os.X_OK):
            pytest.fail(f"{p} is missing: build it with make {p.relative_to(ROOT)}")
        return p

    return get


@pytest.fixture(name="run_mg")
def run_mg_fixture():
    return run_mg


@pytest.fixture(name="megatron_build")
def megatron_build_fixture():
    return megatron_build


@pytest.fixture(name="megatron_merge")
def megatron_merge_fixture():
    return megatron_merge


@pytest.fixture(name="megatron_read")
def megatron_read_fixture():
    return megatron_read


@pytest.fixture(name="assert_same_dataset")
def assert_same_dataset_fixture():
    return assert_same_dataset


# ---- session set-up: the vocabularies; skips listed, and failing unless expected ----

def pytest_configure(config):
    if "s" not in config.option.reportchars and "a" not in config.option.reportchars:
        config.option.reportchars += "s"


def pytest_sessionstart(session):
    if not os.environ.get("MG_VOCAB_DIR"):
        p = subprocess.run([str(ROOT / "scripts" / "unpack-vocab.sh"), str(VOCAB_DIR)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            pytest.exit(f"cannot unpack the test vocabularies: {p.stderr.strip()}", returncode=1)
    if not VOCAB_DIR.is_dir():
        pytest.exit(f"vocabulary directory {VOCAB_DIR} missing (MG_VOCAB_DIR)", returncode=1)


_skipped = []  # (test id relative to tests/interop, reason)


def _test_id(nodeid):
    path, sep, rest = nodeid.partition("::")
    return pathlib.PurePath(path).name + sep + rest


def _note_skip(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((_test_id(report.nodeid), reason))


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):
    _note_skip(report)


def expected_skips():
    """[(test id pattern, why)] from expected-skips.txt: 'PATTERN | why' per line."""
    out = []
    for line in EXPECTED_SKIPS.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pattern, _, why = line.partition(" | ")
            out.append((pattern.strip(), why.strip()))
    return out


def unexpected_skips():
    patterns = [p for p, _ in expected_skips()]
    return [(t, r) for t, r in _skipped if not any(fnmatch.fnmatchcase(t, p) for p in patterns)]


def pytest_sessionfinish(session, exitstatus):
    if unexpected_skips() and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    bad = unexpected_skips()
    if bad:
        terminalreporter.section("unexpected skips (not in tests/interop/expected-skips.txt)",
                                 red=True)
        for t, r in bad:
            terminalreporter.line(f"UNEXPECTED SKIP {t}: {r}", red=True)
