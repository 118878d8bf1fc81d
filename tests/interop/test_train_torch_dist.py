"""mg-train --ckpt-format torch_dist: the save is a Megatron dist_checkpointing folder
(metadata.json, .metadata, three .distcp data files written in parallel, common.pt), --load
detects it as Megatron does (metadata.json in the iteration folder) and a resumed run logs
the uninterrupted run's losses bit for bit; megatron-core's dist_checkpointing.load (mcore_torch_dist.py) loads it into
the GPTModel of its args with the weights mg-train's `torch` checkpoint of the same run holds.

Tiny models on random documents (test_train_ckpt.py's); OMP_NUM_THREADS=1.
"""
import pytest
import torch

from test_convert import assert_same_tensors
from test_convert_torch_dist import run_helper
from test_train_ckpt import TRACKER, _args, _ckpt_file, _run, _torch_load, data  # noqa: F401

DIST = ["--ckpt-format", "torch_dist"]
LOCAL_TO_TE = {".input_layernorm.": ".self_attention.linear_qkv.layer_norm_",
               ".pre_mlp_layernorm.": ".mlp.linear_fc1.layer_norm_"}


def te_name(name):
    """megatron-core's local-spec state_dict name -> the TE-spec name mg-train writes."""
    for local, te in LOCAL_TO_TE.items():
        if local in name:
            return name.replace(local, te)
    return name


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_resume_is_bit_identical(arch, data, tmp_path):
    full = _run(_args(data, arch, iters=8), tmp_path / "full.jsonl")
    ck = tmp_path / "ck"
    first = _run(_args(data, arch, iters=8, extra=["--save", ck, "--save-interval", 100,
                                                   "--exit-interval", 3, *DIST]), tmp_path / "a.jsonl")
    assert [i for i, _ in first] == [1, 2, 3] and (ck / TRACKER).read_text() == "3"
    assert sorted(p.name for p in (ck / "iter_0000003").iterdir()) == \
        [".metadata", "__0_0.distcp", "__0_1.distcp", "__0_2.distcp", "common.pt", "metadata.json"]
    rest = _run(_args(data, arch, iters=8, extra=["--load", ck]), tmp_path / "b.jsonl")
    assert first + rest == full  # exact floats


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_mcore_loads_it(arch, data, tmp_path):
    dist, torch_ck = tmp_path / "dist", tmp_path / "torch"
    _run(_args(data, arch, iters=3, extra=["--save", dist, "--save-interval", 100, *DIST]), tmp_path / "a.jsonl")
    _run(_args(data, arch, iters=3, extra=["--save", torch_ck, "--save-interval", 100]), tmp_path / "b.jsonl")
    out = tmp_path / "loaded.pt"
    run_helper("load", dist, out)
    loaded = {te_name(k): v for k, v in torch.load(out, weights_only=True).items()}
    ours = {k: v for k, v in _torch_load(_ckpt_file(torch_ck, 3))["model"].items() if v is not None}
    assert_same_tensors(loaded, ours, f"{arch}: mg-train torch_dist loaded by megatron-core")
