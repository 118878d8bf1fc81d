"""mg-convert and Megatron's torch_dist format, against megatron-core 0.16.1 itself (CPU, gloo
world of 1; the saving and loading run in mcore_torch_dist.py, a process of their own).

Sources: tiny GPT-2-style (LayerNorm, biases, learned positions, tied) and Llama-style (RMSNorm,
SwiGLU, RoPE, GQA, untied) GPTModels (local spec, 2 layers, vocabulary 100 padded to 128),
random weights, saved by dist_checkpointing.save: stacked `decoder.layers.*` keys, two writer
files, common.pt; and the same weights cut into uneven chunks along every axis over three
files (the layout other TP/PP/DP writers produce).

Checked:
  1. torch_dist -> HF: transformers' logits equal megatron-core's forward (fp32 tolerance),
     whatever the chunking (the uneven checkpoint gives the same bytes), whatever pickle
     protocol the .metadata was written with (2, 4, 5), stacked or per-layer keys (both in one
     checkpoint), with the common state in common.pt or
     in the newer `common_state/shard_0_1` byte object.
  2. torch_dist -> torch TP=2 PP=2 (--verify) -> HF equals torch_dist -> HF bit for bit, and
     -> torch_dist again (mg-convert's writer) loads into megatron-core's GPTModel with the
     original weights bit for bit.
  3. mg-convert's torch_dist output (--ckpt-format torch_dist, --verify): megatron-core's
     dist_checkpointing.load loads it into the GPTModel of its args (every key the model asks
     for present, no other key) with identical weights; the data is spread over --workers
     files; HF -> torch_dist -> HF is bit-identical for GPT-2, Llama and Qwen2.
  4. --inspect lists the keys (stacked, global shapes) and finds no problem.
  5. Bad input (a truncated data file, a .metadata naming a missing file or an offset past the
     end, chunks that overlap or leave a hole, an unknown class in .metadata): exit 1, the
     message names the file and the offset, nothing is written; --inspect reports the same
     problem (exit 1) and still describes the model from common.pt.
"""
import os
import pickle
import subprocess
import sys
import io
from pathlib import Path

import pytest
import torch
import transformers

from test_convert import assert_same_tensors, hf_source, mg_convert, read_hf, to_hf, to_megatron  # noqa: F401

HELPER = Path(__file__).with_name("mcore_torch_dist.py")
ITER = "iter_0000003"


def run_helper(*args):
    p = subprocess.run([sys.executable, str(HELPER), *map(str, args)], capture_output=True, text=True)
    if p.returncode:
        pytest.fail(f"{HELPER.name} {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr[-4000:]}")


@pytest.fixture(scope="module")
def mcore_ckpt(tmp_path_factory):
    """mcore_ckpt(family, mode) -> a folder with megatron-core's torch_dist checkpoint."""
    cache = {}

    def get(family, mode="plain"):
        if (family, mode) not in cache:
            root = tmp_path_factory.mktemp(f"td-{family}-{mode}")
            run_helper("save", family, root / "ckpt", mode)
            cache[family, mode] = root / "ckpt"
        return cache[family, mode]

    return get


def to_torch_dist(src, dst, *extra):
    return to_megatron(src, dst, 1, 1, "--ckpt-format", "torch_dist", "--transformer-impl", "local", *extra)


def mcore_loaded(ckpt, tmp_path):
    """The state_dict megatron-core's GPTModel has after dist_checkpointing.load of ckpt."""
    out = tmp_path / "loaded.pt"
    run_helper("load", ckpt, out)
    return torch.load(out, weights_only=True)


def reference(ckpt):
    return torch.load(ckpt / "reference.pt", weights_only=True)


def hf_logits(path, ids):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype="auto").eval()
    with torch.no_grad():
        return model(ids).logits


def copy_ckpt(src, dst):
    """A writable copy of checkpoint folder src (without reference.pt)."""
    dst.mkdir()
    (dst / "latest_checkpointed_iteration.txt").write_text((src / "latest_checkpointed_iteration.txt").read_text())
    (dst / ITER).mkdir()
    for f in (src / ITER).iterdir():
        (dst / ITER / f.name).write_bytes(f.read_bytes())
    return dst


def load_metadata(ckpt):
    with open(ckpt / ITER / ".metadata", "rb") as f:
        return pickle.load(f)


def dump_metadata(ckpt, md, protocol=4):
    with open(ckpt / ITER / ".metadata", "wb") as f:
        pickle.dump(md, f, protocol=protocol)


# --------------------------------------------------------------------------------------------
# 1. torch_dist -> HF

@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_logits_equal_megatron_core(family, mcore_ckpt, tmp_path):
    ckpt = mcore_ckpt(family)
    hf = to_hf(ckpt, tmp_path / "hf")
    ref = reference(ckpt)
    got = hf_logits(hf, ref["ids"])
    diff = (got - ref["logits"]).abs().max().item()
    assert torch.allclose(got, ref["logits"], atol=1e-5, rtol=1e-4), f"{family}: max |diff| {diff}"


def as_ranks(src, dst):
    """A copy of checkpoint src whose data files are renamed __K_0.distcp (as if rank K wrote
    each), the .metadata following."""
    ckpt = copy_ckpt(src, dst)
    md = load_metadata(ckpt)
    names = sorted({s.relative_path for s in md.storage_data.values()})
    new = {n: f"__{k}_0.distcp" for k, n in enumerate(names)}
    for n in names:
        (ckpt / ITER / n).rename(ckpt / ITER / f"tmp{new[n]}")
    for n in names:
        (ckpt / ITER / f"tmp{new[n]}").rename(ckpt / ITER / new[n])
    for info in md.storage_data.values():
        info.relative_path = new[info.relative_path]
    dump_metadata(ckpt, md)
    return ckpt


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_uneven_chunks_read_the_same(family, mcore_ckpt, tmp_path):
    md = load_metadata(mcore_ckpt(family, "uneven"))
    counts = {k: len(v.chunks) for k, v in md.state_dict_metadata.items() if hasattr(v, "chunks")}
    assert max(counts.values()) >= 4 and len({s.relative_path for s in md.storage_data.values()}) == 3, counts
    plain = read_hf(to_hf(mcore_ckpt(family), tmp_path / "plain"))
    assert_same_tensors(read_hf(to_hf(mcore_ckpt(family, "uneven"), tmp_path / "uneven")), plain,
                        f"{family} uneven chunks")
    ranks = as_ranks(mcore_ckpt(family, "uneven"), tmp_path / "ranks")
    assert sorted(p.name for p in (ranks / ITER).glob("*.distcp")) == ["__0_0.distcp", "__1_0.distcp",
                                                                        "__2_0.distcp"]
    assert_same_tensors(read_hf(to_hf(ranks, tmp_path / "ranks_hf")), plain, f"{family} chunks of 3 ranks")


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_per_layer_keys_read_the_same(family, mcore_ckpt, tmp_path):
    keys = set(load_metadata(mcore_ckpt(family, "per_layer")).state_dict_metadata)
    assert "decoder.layers.1.self_attention.linear_proj.weight" in keys, sorted(keys)
    plain = read_hf(to_hf(mcore_ckpt(family), tmp_path / "plain"))
    assert_same_tensors(read_hf(to_hf(mcore_ckpt(family, "per_layer"), tmp_path / "per_layer")), plain,
                        f"{family} per-layer keys")


@pytest.mark.parametrize("protocol", [2, 5])
def test_metadata_pickle_protocols(protocol, mcore_ckpt, tmp_path):
    src = mcore_ckpt("llama")
    ckpt = copy_ckpt(src, tmp_path / "ckpt")
    dump_metadata(ckpt, load_metadata(ckpt), protocol)
    assert (ckpt / ITER / ".metadata").read_bytes()[:2] == bytes([0x80, protocol])
    assert_same_tensors(read_hf(to_hf(ckpt, tmp_path / "hf")), read_hf(to_hf(src, tmp_path / "ref")),
                        f".metadata at protocol {protocol}")


def test_common_state_inside_the_data(mcore_ckpt, tmp_path):
    """Newer Megatron: no common.pt, the common dict is the byte object common_state/shard_0_1
    (torch.save([common])) appended to a data file."""
    from torch.distributed.checkpoint.filesystem import _StorageInfo
    from torch.distributed.checkpoint.metadata import BytesStorageMetadata, MetadataIndex
    src = mcore_ckpt("gpt2")
    ckpt = copy_ckpt(src, tmp_path / "ckpt")
    common = torch.load(ckpt / ITER / "common.pt", weights_only=False)
    (ckpt / ITER / "common.pt").unlink()
    blob = io.BytesIO()
    torch.save([common], blob)
    data = ckpt / ITER / "__0_1.distcp"
    offset = data.stat().st_size
    data.write_bytes(data.read_bytes() + blob.getvalue())
    md = load_metadata(ckpt)
    md.state_dict_metadata["common_state/shard_0_1"] = BytesStorageMetadata()
    md.storage_data[MetadataIndex("common_state/shard_0_1")] = _StorageInfo("__0_1.distcp", offset,
                                                                            len(blob.getvalue()))
    dump_metadata(ckpt, md)
    assert_same_tensors(read_hf(to_hf(ckpt, tmp_path / "hf")), read_hf(to_hf(src, tmp_path / "ref")),
                        "common_state")


# --------------------------------------------------------------------------------------------
# 2. resharding into the torch format

@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_torch_tp2pp2_round_trip(family, mcore_ckpt, tmp_path):
    ckpt = mcore_ckpt(family)
    mg = to_megatron(ckpt, tmp_path / "mg", 2, 2, "--verify")
    assert sorted(p.name for p in (mg / "release").iterdir()) == \
        ["mp_rank_00_000", "mp_rank_00_001", "mp_rank_01_000", "mp_rank_01_001"]
    assert_same_tensors(read_hf(to_hf(mg, tmp_path / "back")), read_hf(to_hf(ckpt, tmp_path / "direct")),
                        f"{family} torch_dist -> TP2PP2 -> HF")
    td = to_torch_dist(mg, tmp_path / "td", "--verify")
    assert_same_tensors(mcore_loaded(td, tmp_path), reference(ckpt)["state_dict"],
                        f"{family} torch_dist -> TP2PP2 -> torch_dist, loaded by megatron-core")


# --------------------------------------------------------------------------------------------
# 3. writing torch_dist

@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_mcore_loads_written_torch_dist(family, mcore_ckpt, tmp_path):
    ckpt = mcore_ckpt(family, "uneven")
    td = to_torch_dist(ckpt, tmp_path / "td", "--verify", "--workers", 3, "--iteration", 9)
    files = sorted(p.name for p in (td / "iter_0000009").iterdir())
    assert files == [".metadata", "__0_0.distcp", "__0_1.distcp", "__0_2.distcp", "common.pt",
                     "metadata.json"], files
    assert (td / "latest_checkpointed_iteration.txt").read_text() == "9"
    assert_same_tensors(mcore_loaded(td, tmp_path), reference(ckpt)["state_dict"],
                        f"{family} mg-convert torch_dist loaded by megatron-core")


@pytest.mark.parametrize("family", ["gpt2", "llama", "qwen2"])
def test_hf_round_trip_through_torch_dist(family, hf_source, tmp_path):
    src = hf_source(family)
    td = to_megatron(src, tmp_path / "td", 1, 1, "--ckpt-format", "torch_dist", "--verify")
    assert_same_tensors(read_hf(to_hf(td, tmp_path / "hf")), read_hf(src), f"{family} HF -> torch_dist -> HF")


# --------------------------------------------------------------------------------------------
# 4. --inspect

def test_inspect(mcore_ckpt):
    p = mg_convert("--inspect", mcore_ckpt("llama"))
    out = p.stdout
    assert out.startswith(f"format: megatron torch_dist ({ITER})\n"), out
    assert f"{ITER}  decoder.layers.mlp.linear_fc1.weight [2, 192, 64] F32 4 chunks\n" in out, out
    assert "problems: 0\n" in out, out


# --------------------------------------------------------------------------------------------
# 5. bad input

def first_entry(md, pred):
    return next(k for k in md.storage_data if pred(k))


def break_truncate(ckpt):
    f = ckpt / ITER / "__0_1.distcp"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    return "__0_1.distcp"


def break_missing_file(ckpt):
    md = load_metadata(ckpt)
    md.storage_data[first_entry(md, lambda k: k.offset is not None)].relative_path = "__7_0.distcp"
    dump_metadata(ckpt, md)
    return "__7_0.distcp"


def break_offset(ckpt):
    md = load_metadata(ckpt)
    info = md.storage_data[first_entry(md, lambda k: k.offset is not None)]
    info.offset = (ckpt / ITER / info.relative_path).stat().st_size + 64
    dump_metadata(ckpt, md)
    return info.relative_path


def stacked(md):
    return next(k for k, v in md.state_dict_metadata.items()
                if k.startswith("decoder.layers.") and hasattr(v, "chunks") and len(v.chunks) == 2)


def break_overlap(ckpt):
    from torch.distributed.checkpoint.metadata import ChunkStorageMetadata
    md = load_metadata(ckpt)
    v = md.state_dict_metadata[stacked(md)]
    c = v.chunks[0]
    v.chunks[0] = ChunkStorageMetadata(c.offsets, torch.Size([2, *c.sizes[1:]]))
    dump_metadata(ckpt, md)
    return ".metadata"


def break_hole(ckpt):
    md = load_metadata(ckpt)
    key = stacked(md)
    gone = md.state_dict_metadata[key].chunks.pop()
    del md.storage_data[first_entry(md, lambda k: k.fqn == key and k.offset == gone.offsets)]
    dump_metadata(ckpt, md)
    return ".metadata"


def break_class(ckpt):
    f = ckpt / ITER / ".metadata"
    data = f.read_bytes()
    assert data.count(b"BytesStorageMetadata") == 1
    f.write_bytes(data.replace(b"BytesStorageMetadata", b"BytesStorageMetadatX"))
    return ".metadata"


BREAKS = {"truncated": (break_truncate, "offset"), "missing_file": (break_missing_file, "pickle offset"),
          "offset_past_end": (break_offset, "offset"), "overlap": (break_overlap, "overlap"),
          "hole": (break_hole, "do not cover"), "unknown_class": (break_class, "unknown class")}


@pytest.mark.parametrize("case", sorted(BREAKS))
def test_bad_input(case, mcore_ckpt, tmp_path):
    ckpt = copy_ckpt(mcore_ckpt("gpt2"), tmp_path / "ckpt")
    breaker, words = BREAKS[case]
    where = breaker(ckpt)
    out = tmp_path / "out"
    p = mg_convert("--load-dir", ckpt, "--save-dir", out, "--saver", "hf", check=False)
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr}"
    err = p.stderr
    assert err.startswith("mg-convert: error: ") and where in err and "offset" in err and words in err, err
    assert not out.exists(), list(out.iterdir())
    q = mg_convert("--inspect", ckpt, check=False)
    assert q.returncode == 1 and q.stdout.startswith(f"format: megatron torch_dist ({ITER})\n"), q.stdout
    assert f"problem: {err[len('mg-convert: error: '):].strip()}\n" in q.stdout, q.stdout
