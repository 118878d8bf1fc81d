"""Megatron's GPT sample order: mg (mg/gptds.h, mg/nprandom.h through the test program
gpt_samples) against megatron-core's GPTDataset / BlendedDataset built by
BlendedMegatronDatasetBuilder from the same .bin/.idx files, and against numpy's
RandomState.

Datasets are written with megatron-core's IndexedDatasetBuilder (conftest.megatron_build) from
random token ids: documents of varied lengths, some with several sequences (GPT counts
sequences). Compared: every split's length, each GPTDataset's document/sample/shuffle index,
and the tokens (seq_length + 1 per sample, unpadded/padded text exactly as
_query_document_sample_shuffle_indices returns it) of the samples in order.
"""
import logging
import os
import random
import warnings

import numpy
import pytest

import conftest

SPLITS = ("train", "valid", "test")


class _Tokenizer:
    """The tokenizer fields GPTDatasetConfig and MegatronDataset read: no pad id (-1)."""

    vocab_size = None
    eod = 0
    eos = 0
    unique_identifiers = {"class": "test-tokenizer"}

    @property
    def pad(self):
        raise NotImplementedError("no pad token")


def _megatron():
    for name in ("torch.utils.cpp_extension", "megatron", "megatron.core"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets import blended_megatron_dataset_builder as b
        from megatron.core.datasets import gpt_dataset as g
    logging.getLogger("megatron.core.datasets").setLevel(logging.ERROR)
    return b, g


def write_dataset(prefix, n_docs, seed, max_len=60, dtype=numpy.int32):
    rng = random.Random(seed)
    docs = []
    for _ in range(n_docs):
        if rng.random() < 0.15:
            docs.append([[rng.randrange(1, 50000) for _ in range(rng.randint(1, max_len))]
                         for _ in range(rng.randint(2, 3))])
        else:
            docs.append([rng.randrange(1, 50000) for _ in range(rng.randint(1, max_len))])
    conftest.megatron_build(prefix, docs, dtype)
    return str(prefix)


def megatron_build(data_path, split, seq_length, seed, sizes, drop_last_valid=True,
                   surplus=0.005):
    """The three top-level datasets megatron-core builds (None for an absent split).
    data_path: the --data-path list, or a dict {split name: list} of per-split paths."""
    from megatron.core.datasets.utils import get_blend_from_list

    b, g = _megatron()
    if isinstance(data_path, dict):
        blend = None
        per_split = [get_blend_from_list([str(p) for p in data_path[name]])
                     if name in data_path else None for name in SPLITS]
    else:
        blend = get_blend_from_list([str(p) for p in data_path])
        per_split = None
    cfg = g.GPTDatasetConfig(
        random_seed=seed,
        sequence_length=seq_length,
        blend=blend,
        blend_per_split=per_split,
        split=split,
        tokenizer=_Tokenizer(),
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        drop_last_partial_validation_sequence=drop_last_valid,
        mid_level_dataset_surplus=surplus,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return b.BlendedMegatronDatasetBuilder(g.GPTDataset, sizes, lambda: True, cfg).build()


def megatron_text(ds, i):
    """(dataset id, raw text) of top-level sample i."""
    _, g = _megatron()
    if isinstance(ds, g.GPTDataset):
        return 0, ds._query_document_sample_shuffle_indices(i)[0].tolist()
    d = int(ds.dataset_index[i])
    j = int(ds.dataset_sample_index[i])
    return d, ds.datasets[d]._query_document_sample_shuffle_indices(j)[0].tolist()


def gptdatasets(ds):
    _, g = _megatron()
    return [ds] if isinstance(ds, g.GPTDataset) else list(ds.datasets)


def run_mg_samples(data_path, split, seq_length, seed, sizes, first=None, extra_args=()):
    if isinstance(data_path, dict):
        paths = [a for name, path in data_path.items()
                 for a in [f"--{name}-data-path", *[str(p) for p in path]]]
    else:
        paths = ["--data-path", *[str(p) for p in data_path], "--split", split]
    args = ["gpt_samples", *paths, "--seq-length", seq_length, "--seed", seed, "--indices",
            *extra_args]
    for name, size in zip(SPLITS, sizes):
        if size is not None:
            args += [f"--{name}-samples", size]
    if first is not None:
        args += ["--first", first]
    out = conftest.run_mg(args).stdout
    parsed = {"len": {}, "samples": {}, "idx": {}}
    for line in out.splitlines():
        head, _, rest = line.partition(":")
        words = head.split()
        if not rest and len(words) == 2:
            parsed["len"][words[0]] = int(words[1])
        elif words[0] in SPLITS:
            parsed["samples"].setdefault(words[0], []).append(
                (int(words[2]), [int(x) for x in rest.split()]))
        else:
            parsed["idx"][(words[0], words[1], int(words[2]))] = [int(x) for x in rest.split()]
    return parsed


def compare(data_path, split, seq_length, seed, sizes, first=None, drop_last_valid=True,
            surplus=0.005):
    extra = ("--surplus", repr(surplus))
    extra += () if drop_last_valid else ("--keep-partial-validation",)
    mine = run_mg_samples(data_path, split, seq_length, seed, sizes, first, extra)
    theirs = megatron_build(data_path, split, seq_length, seed, sizes, drop_last_valid, surplus)
    for k, name in enumerate(SPLITS):
        ds = theirs[k]
        if ds is None:
            assert name not in mine["len"], f"{name}: megatron builds no split, mg does"
            continue
        assert mine["len"].get(name) == len(ds), f"{name} length"
        for p, gds in enumerate(gptdatasets(ds)):
            key = (name, p)
            assert mine["idx"][("doc",) + key] == gds.document_index.tolist(), f"{key} doc index"
            assert mine["idx"][("sample",) + key] == gds.sample_index.reshape(-1).tolist(), \
                f"{key} sample index"
            assert mine["idx"][("shuffle",) + key] == gds.shuffle_index.tolist(), \
                f"{key} shuffle index"
        n = len(ds) if first is None else min(first, len(ds))
        got = mine["samples"].get(name, [])
        assert len(got) == n
        for i in range(n):
            assert got[i] == megatron_text(ds, i), f"{name} sample {i}"
    return mine


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("gptds")
    return {
        "a": write_dataset(d / "a_text_document", 2500, 1, max_len=40),
        "b": write_dataset(d / "b_text_document", 120, 2, max_len=25, dtype=numpy.uint16),
        "tiny": write_dataset(d / "tiny_text_document", 40, 3, max_len=9),
    }


@pytest.mark.parametrize("seq_length", [4, 17, 64])
@pytest.mark.parametrize("seed", [1234, 7, 2**32 - 1])
def test_single_prefix_969_30_1(data, seq_length, seed):
    # train asks for three epochs and more; valid/test for a few samples (their splits are small)
    tokens = os.path.getsize(data["a"] + ".bin") // 4
    sizes = [tokens * 3 // seq_length, 50, 3]
    mine = compare([data["a"]], "969, 30, 1", seq_length, seed, sizes, first=3000)
    assert mine["idx"][("epochs", "train", 0)][0] >= 3


@pytest.mark.parametrize("split", ["99,1,0", "1,1,1", "0.7,0.2,0.1", "100", "8,2"])
@pytest.mark.parametrize("sizes", [[None, None, None], [500, 40, 7], [1, 0, 2]])
def test_splits_and_sizes(data, split, sizes):
    compare([data["a"]], split, 9, 1234, sizes, first=1500)


def test_empty_split_without_sample_count(data):
    # the tiny dataset's test split of "969,30,1" holds no sequence: megatron-core (its helper
    # is compiled without asserts) builds an empty GPTDataset; mg too
    mine = compare([data["tiny"]], "969,30,1", 4, 1, [None, None, None])
    assert mine["len"]["test"] == 0
    # in an unweighted blend that empty dataset gets weight 0, which BlendedDataset refuses
    with pytest.raises(AssertionError):
        megatron_build([data["tiny"], data["b"]], "969,30,1", 4, 1, [None, None, None])
    p = conftest.run_mg(["gpt_samples", "--data-path", data["tiny"], data["b"], "--split",
                         "969,30,1", "--seq-length", 4], check=False)
    assert p.returncode == 1 and "not positive" in p.stderr


@pytest.mark.parametrize("train", [60, 61, 75, 90, 119, 120, 121, 200, 333])
def test_final_epoch_rule(data, train):
    # tiny dataset, many epochs: exercise both sides of the 80% separate-last-epoch threshold
    mine = compare([data["tiny"]], "1,0,0", 5, 99, [train, None, None])
    assert mine["len"]["train"] >= train


def test_partial_validation_sequence(data):
    compare([data["a"]], "90,10,0", 13, 5, [100, None, None], drop_last_valid=False)
    compare([data["tiny"]], "50,50,0", 7, 5, [10, 100, None], drop_last_valid=False)


@pytest.mark.parametrize("weights", [("0.3", "0.7"), ("2", "1"), ("1", "1")])
@pytest.mark.parametrize("seq_length", [8, 33])
def test_two_dataset_blend(data, weights, seq_length):
    path = [weights[0], data["a"], weights[1], data["b"]]
    compare(path, "90,8,2", seq_length, 1234, [700, 20, 4])


def test_weighted_single_prefix_is_a_blend(data, tmp_path):
    mine = compare(["1.0", data["a"]], "949,50,1", 16, 3, [300, 10, 2])
    assert mine["len"]["train"] == 300
    # --raw writes the same tokens as int64, split after split
    raw = tmp_path / "samples.bin"
    conftest.run_mg(["gpt_samples", "--data-path", "1.0", data["a"], "--split", "949,50,1",
                     "--seq-length", 16, "--seed", 3, "--train-samples", 300, "--valid-samples",
                     10, "--test-samples", 2, "--raw", raw])
    want = [tok for name in SPLITS for _, tok in mine["samples"][name]]
    assert numpy.fromfile(raw, dtype="<i8").reshape(-1, 17).tolist() == want


@pytest.mark.parametrize("sizes", [[None, None, None], [200, 9, None]])
def test_unweighted_blend(data, sizes):
    compare([data["a"], data["b"]], "80,20,0", 6, 42, sizes)


@pytest.mark.parametrize("paths", [
    {"train": ["a"], "valid": ["tiny"]},
    {"train": ["2", "a"], "test": ["b"]},
    {"train": ["0.3", "a", "0.7", "b"], "valid": ["1", "tiny", "3", "b"], "test": ["tiny"]},
    {"train": ["a", "b"], "valid": ["b", "tiny"]},
])
@pytest.mark.parametrize("sizes", [[400, 30, 5], [None, None, None]])
def test_per_split_blends(data, paths, sizes):
    paths = _resolve_paths(data, paths)
    weighted = any(p[0][0].isdigit() for p in paths.values() if len(p) > 1)
    if weighted and None in sizes:
        # megatron-core: a weighted blend without a sample count is refused
        with pytest.raises(AssertionError, match="size_is_none => weights_are_none"):
            megatron_build(paths, None, 8, 1234, sizes)
        p = conftest.run_mg(["gpt_samples", "--seq-length", 8] + [
            a for name, path in paths.items() for a in [f"--{name}-data-path", *path]],
            check=False)
        assert p.returncode == 1 and "needs a sample count" in p.stderr
        return
    compare(paths, None, 8, 1234, sizes)


def _resolve_paths(data, paths):
    return {name: [data.get(p, p) for p in path] for name, path in paths.items()}


@pytest.mark.parametrize("train", [7, 50, 101, 333])
def test_blend_without_surplus(data, train):
    # surplus 0: the blend may draw more samples from a dataset than it holds; megatron-core
    # then raises IndexError and mg must refuse too, otherwise both give the same samples
    path = ["0.5", data["tiny"], "0.5", data["b"]]
    sizes = [train, 0, 0]
    try:
        megatron_build(path, "1,0,0", 4, 1234, sizes, surplus=0.0)
    except IndexError:
        p = conftest.run_mg(["gpt_samples", "--data-path", *path, "--split", "1,0,0",
                             "--seq-length", 4, "--train-samples", train, "--valid-samples", 0,
                             "--test-samples", 0, "--surplus", 0], check=False)
        assert p.returncode == 1 and "draws" in p.stderr
        return
    compare(path, "1,0,0", 4, 1234, sizes, surplus=0.0)


@pytest.mark.parametrize("dtype", ["i32", "u32", "i64"])
def test_numpy_shuffle(tmp_path, dtype):
    npdt = {"i32": numpy.int32, "u32": numpy.uint32, "i64": numpy.int64}[dtype]
    rng = random.Random(dtype)
    cases = [(0, 0), (1, 1), (1234, 2), (1234, 10), (2**32 - 1, 1000), (5, 3_000_000)]
    cases += [(rng.randrange(2**32), rng.choice([3, 77, 624, 625, 5000, 65537]))
              for _ in range(12)]
    for seed, n in cases:
        out = tmp_path / "s.bin"
        conftest.run_mg(["gpt_samples", "--np-shuffle", seed, n, dtype, out])
        want = numpy.arange(n, dtype=npdt)
        numpy.random.RandomState(seed).shuffle(want)
        got = numpy.fromfile(out, dtype="<i8")
        assert numpy.array_equal(got, want.astype(numpy.int64)), f"seed {seed} n {n}"
        if dtype == "i64":
            assert numpy.array_equal(got, numpy.random.RandomState(seed).permutation(n))


def test_numpy_randint(tmp_path):
    rng = random.Random(11)
    for _ in range(30):
        seed = rng.randrange(2**32)
        low = rng.choice([0, -5, 3, -(2**40)])
        high = low + rng.choice([1, 2, 10, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**45, 2**62])
        out = tmp_path / "r.bin"
        conftest.run_mg(["gpt_samples", "--np-randint", seed, low, high, 500, out])
        want = numpy.random.RandomState(seed).randint(low, high, size=500, dtype=numpy.int64)
        assert numpy.array_equal(numpy.fromfile(out, dtype="<i8"), want), (seed, low, high)


def test_seed_out_of_range(tmp_path):
    p = conftest.run_mg(["gpt_samples", "--np-shuffle", 2**32, 5, "i64", tmp_path / "x"],
                        check=False)
    assert p.returncode == 1
