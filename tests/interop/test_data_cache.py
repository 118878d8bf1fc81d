"""--data-cache-path: mg-train writes and reads Megatron's index caches, byte for byte.

megatron-core 0.16.1 (GPTDataset._build_document_sample_shuffle_indices, BlendedDataset.
_build_indices) names each cache file after the md5 of a JSON description of the dataset and
writes the indices with numpy.save. Checked here, for one prefix, a weighted two-dataset
blend and an unweighted blend:
  * mg-train --data-cache-path B writes exactly the files megatron-core writes into A
    (same names, same bytes: descriptions and .npy files), and the same samples;
  * without --data-cache-path both write the same files into Megatron's default directory
    <prefix>/cache/GPTDataset_indices;
  * mg-train reads Megatron's cache: an index altered (in range) in a copy of A changes
    mg-train's samples exactly as it changes Megatron's, and no file is rewritten;
  * megatron-core reads mg-train's cache the same way (files untouched: loaded, not rebuilt);
  * the tokenizer part of the description equals megatron-core 0.16.1's build_tokenizer
    (what core_v0.16.1 pretrain_gpt.py calls) for each tokenizer type mg-train takes;
  * --mock-data: MockGPTDataset's caches (explicit path only) are the same files too;
  * a cache file that does not match is refused with an error naming it.
BlendedDataset asks torch.distributed for the rank when it has a cache path, so the module
runs in a one-process gloo group.
"""
import argparse
import hashlib
import json
import os
import shutil
from collections import OrderedDict

import numpy
import pytest

import conftest
from test_gptds import _megatron
from test_train_run import _write_docs  # documents ending with EOD = 999

SEQ, SEED, GBS, ITERS, EVAL_ITERS = 16, 1234, 4, 30, 3
SPLIT = "90,8,2"
ENV = {"OMP_NUM_THREADS": "1"}
N_DUMP = 40


@pytest.fixture(scope="module", autouse=True)
def _one_process_group(tmp_path_factory):
    import torch
    if torch.distributed.is_initialized():
        yield
        return
    store = tmp_path_factory.mktemp("pg") / "store"
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=0,
                                         world_size=1)
    yield
    torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cache_data")
    return {"a": _write_docs(d / "a_text_document", 400, 11, numpy.uint16),
            "b": _write_docs(d / "b_text_document", 90, 12, numpy.int32)}


KINDS = {"single": lambda d: [d["a"]],
         "weighted": lambda d: ["0.17", d["a"], "0.4", d["b"]],
         "unweighted": lambda d: [d["a"], d["b"]]}

TOKENIZER_DEFAULTS = dict(  # core_v0.16.1 megatron/training/arguments.py defaults
    tokenizer_type=None, vocab_file=None, merge_file=None, tokenizer_model=None,
    vocab_size=None, tokenizer_special_tokens=None, tokenizer_hf_use_fast=False,
    trust_remote_code=False, tokenizer_hf_include_special_tokens=False,
    tokenizer_sentencepiece_legacy=False, tiktoken_pattern=None,
    tiktoken_num_special_tokens=1000, tokenizer_metadata=None)


def _core_tokenizer(monkeypatch=None, **flags):
    """megatron-core 0.16.1's build_tokenizer(args); with monkeypatch the tokenizer library
    is not loaded (GPT-2's needs the Hugging Face hub): the identifiers come from
    MegatronTokenizerText.__init__ all the same."""
    from megatron.core.tokenizers.text.text_tokenizer import MegatronTokenizerText
    from megatron.core.tokenizers.text.utils.build_tokenizer import build_tokenizer
    if monkeypatch is not None:
        monkeypatch.setattr(MegatronTokenizerText, "_restore_model", lambda self, **kw: None)
    args = dict(TOKENIZER_DEFAULTS)
    args.update(flags)
    return build_tokenizer(argparse.Namespace(**args))


def _megatron_train(data_path, cache):
    """megatron-core's train split for mg-train's sizes, with path_to_cache=cache."""
    b, g = _megatron()
    from megatron.core.datasets.utils import get_blend_from_list
    cfg = g.GPTDatasetConfig(
        random_seed=SEED, sequence_length=SEQ, blend=get_blend_from_list(data_path),
        split=SPLIT, tokenizer=_core_tokenizer(tokenizer_type="NullTokenizer", vocab_size=1000),
        reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
        path_to_cache=None if cache is None else str(cache))
    sizes = [ITERS * GBS, (ITERS // 1000 + 1) * EVAL_ITERS * GBS, EVAL_ITERS * GBS]
    return b.BlendedMegatronDatasetBuilder(g.GPTDataset, sizes, lambda: True, cfg).build()[0]


def _megatron_mock(cache):
    """megatron-core's MockGPTDataset splits (no blend: mock) with path_to_cache=cache."""
    b, g = _megatron()
    cfg = g.GPTDatasetConfig(
        random_seed=SEED, sequence_length=SEQ, blend=None, split=SPLIT,
        tokenizer=_core_tokenizer(tokenizer_type="NullTokenizer", vocab_size=1000),
        reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
        path_to_cache=str(cache))
    sizes = [ITERS * GBS, (ITERS // 1000 + 1) * EVAL_ITERS * GBS, EVAL_ITERS * GBS]
    return b.BlendedMegatronDatasetBuilder(g.MockGPTDataset, sizes, lambda: True, cfg).build()


def _mg_train(data_path, cache, tokenizer=("--tokenizer-type", "NullTokenizer",
                                           "--vocab-size", 1000), check=True, n=N_DUMP):
    args = ["mg-train", "--num-layers", 1, "--hidden-size", 32, "--num-attention-heads", 2,
            "--lr", "1e-3", "--seq-length", SEQ, "--max-position-embeddings", SEQ,
            "--micro-batch-size", 1, "--global-batch-size", GBS, "--train-iters", ITERS,
            "--eval-iters", EVAL_ITERS, "--seed", SEED, "--split", SPLIT, *tokenizer,
            *(["--data-path", *data_path] if data_path else ["--mock-data"]),
            "--dump-samples", n]
    if cache is not None:
        args += ["--data-cache-path", cache]
    p = conftest.run_mg(args, check=check, env=ENV)
    return p, [json.loads(line)["tokens"] for line in p.stdout.splitlines()]


def _snapshot(d):
    return {name: (d / name).read_bytes() for name in sorted(os.listdir(d))}


def _tokens(ds, n=N_DUMP):
    return [ds[i]["tokens"].tolist() for i in range(n)]


def _assert_same_files(a, b):
    sa, sb = _snapshot(a), _snapshot(b)
    assert list(sa) == list(sb), f"file names differ: {sorted(set(sa) ^ set(sb))}"
    diff = [name for name in sa if sa[name] != sb[name]]
    assert not diff, f"files with different bytes: {diff}"


@pytest.mark.parametrize("kind", KINDS)
def test_same_cache_files_as_megatron(data, kind, tmp_path):
    path = KINDS[kind](data)
    ref = _megatron_train(path, tmp_path / "A")
    _, mine = _mg_train(path, tmp_path / "B")
    names = os.listdir(tmp_path / "A")
    n_gpt = 3 * (1 if kind == "single" else 2)
    assert len(names) == 4 * n_gpt + (0 if kind == "single" else 3 * 3)
    _assert_same_files(tmp_path / "A", tmp_path / "B")
    assert mine == _tokens(ref)


def test_default_cache_directory(data, tmp_path):
    for suffix in ("bin", "idx"):
        shutil.copy(f"{data['a']}.{suffix}", tmp_path / f"a_text_document.{suffix}")
    prefix = str(tmp_path / "a_text_document")
    default = tmp_path / "a_text_document" / "cache" / "GPTDataset_indices"
    _megatron_train([prefix], None)
    megatron_files = _snapshot(default)
    assert len(megatron_files) == 12
    shutil.rmtree(tmp_path / "a_text_document")
    _mg_train([prefix], None)
    assert _snapshot(default) == megatron_files


def test_mock_data_cache(tmp_path):
    """MockGPTDataset caches only under an explicit path (split "1,1,1", dataset_path null);
    the indices depend on the mock document lengths only, so the files are identical."""
    _megatron_mock(tmp_path / "A")
    _mg_train(None, tmp_path / "B", n=2)
    assert len(os.listdir(tmp_path / "A")) == 12
    assert all("-MockGPTDataset-" in n for n in os.listdir(tmp_path / "A"))
    _assert_same_files(tmp_path / "A", tmp_path / "B")


def _alter(cache, kind):
    """Changes one index in range: the train shuffle index (one prefix: reversed) or the
    train blend's dataset_sample_index (two entries of one dataset swapped)."""
    if kind == "single":
        (f,) = [n for n in os.listdir(cache) if n.endswith("-GPTDataset-train-shuffle_index.npy")]
        a = numpy.load(cache / f)
        numpy.save(cache / f, a[::-1].copy())
        return
    (f,) = [n for n in os.listdir(cache) if n.endswith("-BlendedDataset-train-dataset_index.npy")]
    d = numpy.load(cache / f)
    s_name = f.replace("dataset_index", "dataset_sample_index")
    s = numpy.load(cache / s_name)
    i, j = [k for k in range(len(d)) if d[k] == d[0]][:2]
    s[i], s[j] = s[j], s[i]
    numpy.save(cache / s_name, s)


@pytest.mark.parametrize("kind", KINDS)
def test_mg_train_reads_megatron_cache(data, kind, tmp_path):
    path = KINDS[kind](data)
    original = _tokens(_megatron_train(path, tmp_path / "A"))
    shutil.copytree(tmp_path / "A", tmp_path / "C")
    _alter(tmp_path / "C", kind)
    before = _snapshot(tmp_path / "C")
    _, mine = _mg_train(path, tmp_path / "C")
    assert _snapshot(tmp_path / "C") == before, "mg-train rewrote the cache"
    ref = _tokens(_megatron_train(path, tmp_path / "C"))
    assert mine != original, "the altered cache file was not read"
    assert mine == ref


@pytest.mark.parametrize("kind", KINDS)
def test_megatron_reads_mg_train_cache(data, kind, tmp_path):
    path = KINDS[kind](data)
    _, original = _mg_train(path, tmp_path / "B")
    _alter(tmp_path / "B", kind)
    _, mine = _mg_train(path, tmp_path / "B")
    assert mine != original, "the altered cache file was not read"
    files = _snapshot(tmp_path / "B")
    mtimes = {n: os.stat(tmp_path / "B" / n).st_mtime_ns for n in files}
    ref = _tokens(_megatron_train(path, tmp_path / "B"))
    assert _snapshot(tmp_path / "B") == files
    assert {n: os.stat(tmp_path / "B" / n).st_mtime_ns for n in files} == mtimes, \
        "megatron-core rebuilt mg-train's cache instead of loading it"
    assert ref == mine


def _vocab(name):
    return os.path.join(conftest.VOCAB_DIR, name)


TOKENIZERS = {
    "NullTokenizer": lambda: dict(tokenizer_type="NullTokenizer", vocab_size=1000),
    "GPT2BPETokenizer": lambda: dict(tokenizer_type="GPT2BPETokenizer",
                                     vocab_file=_vocab("gpt2/gpt2-vocab.json"),
                                     merge_file=_vocab("gpt2/gpt2-merges.txt")),
    "SentencePieceTokenizer": lambda: dict(tokenizer_type="SentencePieceTokenizer",
                                           tokenizer_model=_vocab(
                                               "sentencepiece/test_model.model")),
    "Llama2Tokenizer": lambda: dict(tokenizer_type="Llama2Tokenizer",
                                    tokenizer_model=_vocab("sentencepiece/test_model.model")),
    "HuggingFaceTokenizer": lambda: dict(tokenizer_type="HuggingFaceTokenizer",
                                         tokenizer_model=_vocab("hf/llama2")),
}
FLAG = {"tokenizer_type": "--tokenizer-type", "vocab_size": "--vocab-size",
        "vocab_file": "--vocab-file", "merge_file": "--merge-file",
        "tokenizer_model": "--tokenizer-model"}


@pytest.mark.parametrize("name", TOKENIZERS)
def test_description_tokenizer(data, name, tmp_path, monkeypatch):
    flags = TOKENIZERS[name]()
    argv = [str(x) for k, v in flags.items() for x in (FLAG[k], v)]
    _mg_train([data["a"]], tmp_path, tokenizer=argv, n=1)
    want = _core_tokenizer(monkeypatch, **flags).unique_identifiers
    descs = [n for n in os.listdir(tmp_path) if n.endswith("-description.txt")]
    assert len(descs) == 3
    for n in descs:
        text = (tmp_path / n).read_text()
        desc = json.loads(text, object_pairs_hook=OrderedDict)
        assert list(desc["tokenizer"].items()) == list(want.items())
        assert json.dumps(desc, indent=4) == text
        assert n.startswith(hashlib.md5(text.encode()).hexdigest() + "-GPTDataset-")
        assert desc["dataset_path"] == data["a"] and desc["split"] == SPLIT


def test_mismatching_cache_file_is_refused(data, tmp_path):
    path = KINDS["weighted"](data)
    _mg_train(path, tmp_path)
    (f,) = [n for n in os.listdir(tmp_path) if n.endswith("-GPTDataset-valid-sample_index.npy")
            and (tmp_path / n.replace("sample_index.npy", "description.txt")).read_text()
            .find(data["b"]) > 0]
    numpy.save(tmp_path / f, numpy.load(tmp_path / f)[:-1])  # one row short
    p, _ = _mg_train(path, tmp_path, check=False)
    assert p.returncode == 1
    assert "mg-train: error:" in p.stderr and f"{tmp_path / f}: shape" in p.stderr, p.stderr
    assert (tmp_path / f).exists()
