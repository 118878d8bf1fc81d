"""--mock-data: the samples mg-train (and gpt_mock_samples, the library's view of every
split) take from megatron-core's MockGPTDataset, built by BlendedMegatronDatasetBuilder with
no blend (config.mock = True) and megatron-core's own NullTokenizer.

Megatron facts this relies on (megatron-core 0.16.1): MockGPTLowLevelDataset holds 100000
documents with lengths numpy.random.default_rng(0).integers(1, 4096, dtype=int32), document
of length L = (arange(L - 1) + 1) % tokenizer.vocab_size then tokenizer.eod; the config
replaces any split by "1,1,1" when there is no blend; each split is a plain MockGPTDataset
asking for the builder's size (None = one epoch).
mg-train's `--tokenizer-type NullTokenizer --vocab-size V` is Megatron's NullTokenizer(V - 1)
(vocab_size V, eod V - 1).
"""
import json
import re

import pytest

import conftest
from test_gptds import _megatron
from test_train_run import _check_samples

ENV = {"OMP_NUM_THREADS": "1"}
MODEL = ["--num-layers", "1", "--hidden-size", "32", "--num-attention-heads", "2",
         "--lr", "1e-3"]
FLAG_SETS = [(), ("--eod-mask-loss", "--reset-position-ids", "--reset-attention-mask")]


def _tokenizer(vocab):
    from megatron.core.tokenizers.text.libraries.null_tokenizer import NullTokenizer
    return NullTokenizer(vocab - 1)


def _megatron_mock(vocab, seq, seed, sizes, flags=(), split="969, 30, 1"):
    """megatron-core's three MockGPTDataset splits (sizes: None = one epoch)."""
    b, g = _megatron()
    cfg = g.GPTDatasetConfig(
        random_seed=seed, sequence_length=seq, blend=None, split=split,
        tokenizer=_tokenizer(vocab), eod_mask_loss="--eod-mask-loss" in flags,
        reset_position_ids="--reset-position-ids" in flags,
        reset_attention_mask="--reset-attention-mask" in flags, create_attention_mask=True)
    assert cfg.mock and cfg.split == "1,1,1"  # the split megatron-core uses for mock data
    return b.BlendedMegatronDatasetBuilder(g.MockGPTDataset, sizes, lambda: True, cfg).build()


def _sizes(gbs, iters, eval_iters):
    """mg-train's (and Megatron's) requested sizes without --eval-interval."""
    return [iters * gbs, (iters // 1000 + 1) * eval_iters * gbs, eval_iters * gbs]


def _train_args(vocab, seq, seed, gbs, iters, eval_iters, flags=()):
    return ["mg-train", *MODEL, "--seq-length", seq, "--max-position-embeddings", seq,
            "--micro-batch-size", 1, "--global-batch-size", gbs, "--train-iters", iters,
            "--eval-iters", eval_iters, "--seed", seed, "--tokenizer-type", "NullTokenizer",
            "--vocab-size", vocab, "--mock-data", *flags]


def _dump(args, n):
    out = conftest.run_mg(args + ["--dump-samples", n], env=ENV).stdout
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("flags", FLAG_SETS)
@pytest.mark.parametrize("vocab,seq,seed", [(1000, 16, 1234), (50, 300, 7)])
def test_dump_samples_mock(flags, vocab, seq, seed):
    mine = _dump(_train_args(vocab, seq, seed, 4, 30, 3, flags), 30)
    train = _megatron_mock(vocab, seq, seed, _sizes(4, 30, 3), flags)[0]
    _check_samples(mine, train, flags)
    if seq == 300:  # a document ends inside a sample (eod, then the next document's 1)
        assert any(row["tokens"][i:i + 2] == [vocab - 1, 1] for row in mine
                   for i in range(seq - 1))


def test_mock_ignores_split():
    """megatron-core replaces --split by "1,1,1" for mock data; mg-train does too."""
    base = _train_args(1000, 16, 3, 4, 10, 2)
    assert _dump(base, 12) == _dump(base + ["--split", "90,8,2"], 12)


def _tool_samples(vocab, seq, seed, sizes, first, every):
    args = ["gpt_mock_samples", "--vocab-size", vocab, "--eod", vocab - 1, "--seq-length", seq,
            "--seed", seed, "--first", first]
    for name, size in zip(("train", "valid", "test"), sizes):
        if size is not None:
            args += [f"--{name}-samples", size]
    lens, samples = {}, {}
    for line in conftest.run_mg(args + ["--every", every]).stdout.splitlines():
        m = re.fullmatch(r"(train|valid|test) (\d+)(?::(.*))?", line)
        assert m, line
        if m.group(3) is None:
            lens[m.group(1)] = int(m.group(2))
        else:
            samples[(m.group(1), int(m.group(2)))] = [int(x) for x in m.group(3).split()]
    return lens, samples


@pytest.mark.parametrize("vocab,seq,seed,sizes", [
    (1000, 64, 1234, [120, 40, 8]),        # mg-train's sizes: one epoch per split
    (300, 8, 5, [None, None, None]),       # no sizes: one epoch, every sample
    (32000, 2048, 99, [80000, 50, None]),  # train spans 3 epochs (separate final epoch)
])
def test_mock_splits_match(vocab, seq, seed, sizes):
    ref = _megatron_mock(vocab, seq, seed, sizes)
    every = max(1, len(ref[0]) // 50)
    lens, mine = _tool_samples(vocab, seq, seed, sizes, 50, every)
    for k, name in enumerate(("train", "valid", "test")):
        assert lens[name] == len(ref[k]), name
        for i in range(0, min(len(ref[k]), 50 * every), every):
            text = ref[k]._query_document_sample_shuffle_indices(i)[0].tolist()
            assert mine[(name, i)] == text, f"{name} sample {i}"
    assert {name for name, _ in mine} == {"train", "valid", "test"}


def test_mock_needs_a_tokenizer():
    args = _train_args(1000, 16, 1, 4, 10, 2)
    i = args.index("--tokenizer-type")
    del args[i:i + 2]
    p = conftest.run_mg(args + ["--dump-samples", 1], check=False, env=ENV)
    assert p.returncode == 2 and "--mock-data needs --tokenizer-type" in p.stderr, p.stderr


def test_train_on_mock_data():
    """A short run on mock data trains and evaluates on the mock validation split."""
    args = _train_args(64, 32, 1, 2, 4, 1) + ["--eval-interval", "2", "--log-interval", "1"]
    p = conftest.run_mg(args, env=ENV)
    assert p.stdout.count("iteration ") >= 4, p.stdout
    assert "validation loss at iteration 2" in p.stdout, p.stdout
