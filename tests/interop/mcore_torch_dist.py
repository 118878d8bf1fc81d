"""megatron-core's own torch_dist checkpoints, for test_convert_torch_dist.py (run as a script:
megatron-core's writer starts processes, so the work happens under `if __name__ == "__main__"`
in a process of its own).

  save FAMILY DIR [MODE]     a tiny GPT-2- or Llama-style GPTModel (local spec, seeded random
                             weights, zero vocabulary padding rows, CPU) saved with dist_checkpointing.save into
                             DIR/iter_0000003 (+ Megatron's tracker file); its common state
                             holds args, iteration and checkpoint_version as Megatron's
                             save_checkpoint writes them. DIR/reference.pt: the model's
                             state_dict, token ids and megatron-core's logits for them.
                             `uneven`: the same weights saved as ShardedTensors cut into
                             uneven chunks along every axis (what other layouts and several
                             ranks produce), over 3 writer files. `per_layer`: the same weights
                             under per-layer keys (decoder.layers.N.X, what non-homogeneous
                             models get) where the model gives ShardedTensors (the SwiGLU fc1
                             factory keeps its stacked key: both forms in one checkpoint).
  load DIR OUT               builds the GPTModel of DIR's args and loads DIR with
                             dist_checkpointing.load: a key the model asks for that DIR lacks
                             fails the load, and so (checked here) does a key of DIR's
                             .metadata that the model does not ask for (but the optimizer's
                             optimizer.state.*); OUT: its state_dict.
                             (The strictness options that make megatron-core check unexpected
                             keys itself call load_tensors_metadata, which hands
                             TensorProperties.__dict__ to torch.empty: with torch 2.15 that
                             dict has `strides` and torch.empty refuses it, for megatron-core's
                             own checkpoints too; so the default ASSUME_OK_UNEXPECTED is used.)

CPU stand-ins (megatron-core 0.16.1 assumes CUDA in a few places, none about the data):
a gloo world of 1, the inference RNG tracker, torch.cuda.current_device/synchronize returning
"cpu"/nothing, and filesystem_async._process_memory (psutil's RSS, only logged) returning 0.
"""
import argparse
import logging
import os
import sys
import tempfile
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ITERATION = 3
LAYERS, HIDDEN, HEADS, SEQ = 2, 64, 4, 32


def family_args(family):
    """Megatron args of the tiny model (what Megatron's save_checkpoint stores)."""
    common = dict(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS, kv_channels=HIDDEN // HEADS,
                  max_position_embeddings=SEQ, seq_length=SEQ, vocab_size=100, padded_vocab_size=128,
                  make_vocab_size_divisible_by=128, tensor_model_parallel_size=1,
                  pipeline_model_parallel_size=1, params_dtype=torch.float32, bf16=False, fp16=False,
                  iteration=ITERATION)
    if family == "gpt2":
        return argparse.Namespace(**common, ffn_hidden_size=4 * HIDDEN, position_embedding_type="learned_absolute",
                                  normalization="LayerNorm", norm_epsilon=1e-5, swiglu=False,
                                  add_bias_linear=True, untie_embeddings_and_output_weights=False,
                                  group_query_attention=False, num_query_groups=None)
    return argparse.Namespace(**common, ffn_hidden_size=96, position_embedding_type="rope", rotary_base=10000,
                              normalization="RMSNorm", norm_epsilon=1e-5, swiglu=True, add_bias_linear=False,
                              add_qkv_bias=False, untie_embeddings_and_output_weights=True,
                              group_query_attention=True, num_query_groups=2)


def setup():
    for name in ("torch.utils.cpp_extension", "megatron", "megatron.core"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.simplefilter("ignore")
    import torch.distributed as dist
    from megatron.core import parallel_state
    from megatron.core.tensor_parallel.random import initialize_rng_tracker
    import megatron.core.dist_checkpointing.strategies.filesystem_async as fa
    fa._process_memory = lambda: 0
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.current_device = lambda: "cpu"
    dist.init_process_group("gloo", init_method=f"file://{tempfile.mkdtemp()}/rendezvous", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(1, 1)
    initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)


def build(args):
    import megatron.core
    from test_convert_mcore import build_gpt_model
    return build_gpt_model(megatron.core, args)


def uneven_cuts(n):
    """Uneven pieces of range(n): [0, a) [a, b) [b, n) with a, b off the even points."""
    if n < 4:
        return [(0, n)]
    a, b = max(1, n // 3 - 1), n // 3 + n // 2
    return [(0, a), (a, b), (b, n)]


def uneven(sd):
    """Every ShardedTensor of sd replaced by uneven pieces (one axis per tensor, rotating)."""
    from megatron.core.dist_checkpointing import ShardedTensor
    out, axis = {}, 0
    for key, st in sd.items():
        if not isinstance(st, ShardedTensor):
            out[key] = st
            continue
        data, dims = st.data, st.data.ndim
        ax = axis % dims
        axis += 1
        pieces = []
        for lo, hi in uneven_cuts(data.shape[ax]):
            piece = data.narrow(ax, lo, hi - lo).clone()
            offs = list(st.global_offset)
            offs[ax] += lo
            pieces.append(ShardedTensor(st.key, piece, st.dtype, tuple(piece.shape), st.global_shape,
                                        tuple(offs), None, st.replica_id, 0, st.allow_shape_mismatch, None))
        out[key] = pieces
    return out


def flat_sharded(model):
    """The model's sharded state dict with each ShardedTensor's data as its global piece."""
    from megatron.core.dist_checkpointing import ShardedTensor
    sd = model.sharded_state_dict()
    res = {}
    for key, v in sd.items():
        if isinstance(v, ShardedTensor) and v.prepend_axis_num:
            # stacked layer key: the piece is the layer's tensor with the layer axis in front
            data = v.data.reshape((1,) * v.prepend_axis_num + tuple(v.data.shape))
            v = ShardedTensor(v.key, data, v.dtype, tuple(data.shape), v.global_shape, v.global_offset,
                              None, v.replica_id, 0, v.allow_shape_mismatch, None)
        res[key] = v
    return res


def per_layer(sd):
    """Stacked layer ShardedTensors of sd under per-layer keys, without the layer axis."""
    from megatron.core.dist_checkpointing import ShardedTensor
    out = {}
    for key, v in sd.items():
        if isinstance(v, ShardedTensor) and v.prepend_axis_num == 1:
            layer, rest = v.global_offset[0], v.key[len("decoder.layers."):]
            v = ShardedTensor(f"decoder.layers.{layer}.{rest}", v.data, v.dtype, tuple(v.data.shape),
                              v.global_shape[1:], v.global_offset[1:], None, v.replica_id, 0,
                              v.allow_shape_mismatch, None)
        out[key] = v
    return out


def save(family, root, mode):
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing.strategies.torch import TorchDistSaveShardedStrategy
    setup()
    args = family_args(family)
    model = build(args)
    g = torch.Generator().manual_seed(11 if family == "gpt2" else 12)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
            if p.shape[0] == args.padded_vocab_size:  # vocabulary padding rows: zero, as converted
                p[args.vocab_size:] = 0
    sd = model.sharded_state_dict()
    if mode == "uneven":
        sd = uneven(flat_sharded(model))
    elif mode == "per_layer":
        sd = per_layer(sd)
    state = {"model": sd, "args": args, "iteration": ITERATION, "checkpoint_version": 3.0}
    ckpt = os.path.join(root, f"iter_{ITERATION:07d}")
    os.makedirs(ckpt)
    strategy = TorchDistSaveShardedStrategy("torch_dist", 1, thread_count=3 if mode == "uneven" else 2)
    dist_checkpointing.save(state, ckpt, sharded_strategy=strategy)
    with open(os.path.join(root, "latest_checkpointed_iteration.txt"), "w") as f:
        f.write(str(ITERATION))
    ids = torch.randint(0, args.vocab_size, (2, 12), generator=torch.Generator().manual_seed(5))
    n = ids.shape[1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)[None, None]
    with torch.no_grad():
        logits = model(ids, torch.arange(n).unsqueeze(0).expand_as(ids), attention_mask=mask)
    torch.save({"state_dict": {k: v for k, v in model.state_dict().items() if "_extra_state" not in k},
                "ids": ids, "logits": logits[..., :args.vocab_size]}, os.path.join(root, "reference.pt"))


def requested_keys(sharded):
    from megatron.core.dist_checkpointing import ShardedObject, ShardedTensor
    from megatron.core.dist_checkpointing.dict_utils import nested_values
    from megatron.core.dist_checkpointing.mapping import ShardedTensorFactory
    keys = set()
    for v in nested_values(sharded):
        if isinstance(v, ShardedObject):
            keys.add(v.unique_key)
        elif isinstance(v, (ShardedTensor, ShardedTensorFactory)):  # factory: SwiGLU fc1
            keys.add(v.key)
    return keys


def load(ckpt_root, out):
    from megatron.core import dist_checkpointing
    from torch.distributed.checkpoint import FileSystemReader
    setup()
    with open(os.path.join(ckpt_root, "latest_checkpointed_iteration.txt")) as f:
        it = f.read().strip()
    ckpt = os.path.join(ckpt_root, "release" if it == "release" else f"iter_{int(it):07d}")
    common = dist_checkpointing.load_common_state_dict(ckpt)
    args = common["args"]
    # this process is TP = PP = 1: the loader reshards a checkpoint written at another layout
    args.tensor_model_parallel_size = args.pipeline_model_parallel_size = 1
    model = build(args)
    sharded = {"model": model.sharded_state_dict()}
    stored = {k for k in FileSystemReader(ckpt).read_metadata().state_dict_metadata
              if not k.startswith("optimizer.state.")}  # the optimizer's, not asked for here
    if stored - requested_keys(sharded) - {"common_state/shard_0_1"}:
        sys.exit(f"unexpected keys in {ckpt}: {sorted(stored - requested_keys(sharded))}")
    state = dist_checkpointing.load(sharded, ckpt)
    model.load_state_dict(state["model"], strict=True)
    torch.save({k: v for k, v in model.state_dict().items() if "_extra_state" not in k}, out)


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "plain")
    elif sys.argv[1] == "load":
        load(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"usage: {sys.argv[0]} save FAMILY DIR [uneven|per_layer] | load DIR OUT")
