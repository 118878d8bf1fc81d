"""The distributed optimizer's buffer and its distrib_optim.pt against megatron-core 0.16.1.

mg-train trains a tiny GPT-2 (tied) and a tiny Llama (untied, GQA, SwiGLU) for 3 iterations
on 2 ranks with --use-distributed-optimizer and saves, without --overlap-grad-reduce (one
bucket) and with it and --ddp-bucket-size 5000 or 1 (several buckets, the test checks at
least 4; with 1 a bucket per parameter, each bucket's end padding cut from the coalesced
tensors, which then differ from the one-bucket layout's in length, checked too). megatron-core's own _ParamAndGradBuffer (use_distributed_optimizer, the same
overlap_grad_reduce and bucket_size; CPU, the size-1 gloo group of the `mcore` fixture, whose
layout equals DP 2's: buckets are padded to lcm(DP, 128) = 128 for both) lays out parameters of the checkpoint's shapes in Megatron's parameter order,
and get_parameter_state_dp_zero's coalescing of that layout (buckets one after the other, each
cut at numel_unpadded) applied to the checkpoint's weights and moments must give exactly the
'param', 'exp_avg' and 'exp_avg_sq' tensors of our distrib_optim.pt.

Megatron's parameter order is that of the TransformerEngine spec, which cannot be built on a
CPU host: it is taken from megatron-core's local-spec GPTModel (the same Attention /
SelfAttention / MLP classes register linear_proj before linear_qkv), renamed with the spec's
own sharded_state_dict_keys_map, and the norms TE fuses into linear_qkv / linear_fc1 are put
where those fused modules hold them (first in the module).
"""
import argparse
import re
import types

import pytest
import torch

import conftest
from mpi_launch import run_mpi
from test_convert_mcore import build_gpt_model, mcore  # noqa: F401
from test_dist_train import GPT2, LLAMA
from test_train_mcore import local_spec_map

COMMON = ["--lr", "3e-3", "--seq-length", "16", "--max-position-embeddings", "16",
          "--micro-batch-size", "2", "--global-batch-size", "8", "--eval-iters", "0",
          "--tokenizer-type", "NullTokenizer", "--vocab-size", "1001", "--mock-data",
          "--train-iters", "3", "--save-interval", "3", "--use-distributed-optimizer"]


def _te_order(model, args):
    """TE-spec names of the local-spec model's parameters, in the TE spec's order."""
    te_of = {local: te for te, local in local_spec_map(args).items()}
    names = []
    for name, _ in model.named_parameters():
        m = re.match(r"(decoder\.layers\.\d+\.)(.*)", name)
        if m:
            for local, te in te_of.items():
                if m[2].startswith(local):
                    name = m[1] + te + m[2][len(local):]
                    break
        names.append(name)
    def fused(n):
        return re.match(r"(.*\.(linear_qkv|linear_fc1)\.)layer_norm_", n)
    out = [n for n in names if not fused(n)]
    for name in [n for n in names if fused(n)]:  # before its module's first own tensor
        first = next(i for i, n in enumerate(out)
                     if n.startswith(fused(name)[1]) and not fused(n))
        out.insert(first, name)
    return out


def _load(path):
    torch.serialization.add_safe_globals([argparse.Namespace])
    return torch.load(path, weights_only=False)


def megatron_world(mcore, monkeypatch, ck, size):  # noqa: F811
    """megatron-core's _ParamAndGradBuffer (use_distributed_optimizer, overlap_grad_reduce
    when size, bucket_size size) of rank file ck's parameters in Megatron's order, and the
    coalesced 'param', 'exp_avg' and 'exp_avg_sq' of get_parameter_state_dp_zero over that
    layout, from ck's weights and torch optimizer state (the plain form)."""
    from megatron.core import parallel_state
    from megatron.core.distributed import DistributedDataParallelConfig
    from megatron.core.distributed.param_and_grad_buffer import _ParamAndGradBuffer
    args = ck["args"]
    weights = {k: v for k, v in ck["model"].items() if v is not None}  # not _extra_state
    order = _te_order(build_gpt_model(mcore, args), args)
    assert sorted(order) == sorted(weights)
    params = [torch.nn.Parameter(torch.empty(weights[n].shape)) for n in order]
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "current_device", lambda: "cpu")
        buf = _ParamAndGradBuffer(
            DistributedDataParallelConfig(use_distributed_optimizer=True,
                                          overlap_grad_reduce=size is not None,
                                          bucket_size=size), torch.float32,
            torch.float32, params, parallel_state.get_data_parallel_group(), size,
            dict(zip(params, order)), 1.0, list(range(len(params))), False,
            # the default (None) calls a parallel_state function 0.16.1 does not have
            types.SimpleNamespace(tp=parallel_state.get_tensor_model_parallel_group(),
                                  dp_cp=parallel_state.get_data_parallel_group(
                                      with_context_parallel=True)))
    # the moments of the checkpoint's optimizer: parameter groups (decay, then no decay),
    # each in Megatron's order; state i of the flattened group lists
    groups = ck["optimizer"]["param_groups"]
    decay = [n for n in order if weights[n].dim() == 2]
    flat = decay + [n for n in order if weights[n].dim() != 2]
    assert [len(g["params"]) for g in groups] == [len(decay), len(flat) - len(decay)]
    ids = [i for g in groups for i in g["params"]]
    state = ck["optimizer"]["state"]
    source = {"param": weights,
              "exp_avg": {n: state[i]["exp_avg"] for n, i in zip(flat, ids)},
              "exp_avg_sq": {n: state[i]["exp_avg_sq"] for n, i in zip(flat, ids)}}
    world = {}
    for what, values in source.items():
        parts = []
        for b, (lo, hi) in enumerate(buf.bucket_indices):
            x = torch.zeros(hi - lo)
            for p, n in zip(params, order):
                start, end, bucket = buf.param_index_map[p]
                if bucket == b:
                    x[start - lo:end - lo] = values[n].reshape(-1)
            parts.append(x[:buf.buckets[b].numel_unpadded])
        world[what] = torch.cat(parts)
    return buf, world


BUCKETS = {"one-bucket": None, "bucket-5000": 5000, "bucket-1": 1}


@pytest.mark.parametrize("buckets", sorted(BUCKETS))
@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_distrib_optim_matches_megatron_buffer(tmp_path, mcore, monkeypatch, arch,  # noqa: F811
                                               buckets):
    model_flags = GPT2 if arch == "gpt2" else LLAMA
    size = BUCKETS[buckets]
    overlap = ["--overlap-grad-reduce", "--ddp-bucket-size", size] if size else []
    run_mpi(2, "mg-train", [*model_flags, *COMMON, *overlap, "--save", tmp_path / "ck"])
    d = tmp_path / "ck" / "iter_0000003" / "mp_rank_00"
    ck = _load(d / "model_optim_rng.pt")
    ours = torch.load(d / "distrib_optim.pt", weights_only=True)
    buf, theirs = megatron_world(mcore, monkeypatch, ck, size)
    [(key, mine)] = ours[0].items()
    assert ours["buckets_coalesced"] is True
    assert key == (torch.float32, torch.float32)
    assert mine["numel_unpadded"] == buf.numel_unpadded
    assert len(buf.buckets) == 1 if size is None else len(buf.buckets) >= 4, len(buf.buckets)
    if size == 1:
        assert buf.numel_unpadded == sum(p.numel() for p in ck["model"].values())
    for what, x in theirs.items():
        assert torch.equal(mine[what], x), what
