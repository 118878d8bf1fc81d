"""megatron-core's own GPTModel (package megatron-core 0.16.1, CPU, TP=1, local spec) loads
checkpoints that mg-convert wrote and gives the logits transformers gives.

Setup, all on CPU in this process: a gloo process group of size 1 (file:// rendezvous),
parallel_state.initialize_model_parallel(1, 1), and Megatron's inference RNG tracker
(initialize_rng_tracker(inference_rng_tracker=True)) because DotProductAttention always forks
the CUDA RNG tracker around attention dropout, and the training tracker needs CUDA to do that.
The model is built from the checkpoint's own args (what --use-checkpoint-args would use) and
loads its 'model' dict with load_state_dict(strict=True), so the key set (the _extra_state
entries of the local spec included) must be exactly what Megatron expects.

Two CUDA assumptions of megatron-core 0.16.1 stand between it and a CPU forward pass:
  - get_default_causal_mask() builds its mask on "cuda" when no mask is given: the tests pass
    an explicit causal mask (Megatron's convention, True = masked), which is a normal input;
  - RotaryEmbedding.get_emb() moves inv_freq to torch.cuda.current_device() unconditionally
    (megatron/core/models/common/embeddings/rotary_pos_embedding.py), and the attention's
    GlobalMemoryBuffer allocates on torch.cuda.current_device() the first time a (name, dtype)
    needs a larger buffer (test_train_mcore.test_attention_buffer_needs_cuda). Every forward
    therefore runs with torch.cuda.current_device patched to return "cpu" (nothing else is
    changed); test_rope_forward_needs_cuda pins the RoPE line: without the patch a CPU-only
    host fails there with "Found no NVIDIA driver on your system".
test_reference_split_matches_mcore anchors this file's PyTorch reference of Megatron's layout
(test_convert.expected_megatron) to megatron-core itself, independently of mg-convert.
"""
import argparse
import functools
import inspect
import logging
import warnings

import pytest
import torch
import torch.nn.functional as F
import transformers

from test_convert import (expected_megatron, expected_args, hf_config,
                          make_hf_source, read_megatron, to_megatron)


@pytest.fixture(scope="module")
def mcore(tmp_path_factory):
    """megatron.core, with a size-1 gloo group and the inference RNG tracker set up."""
    for name in ("torch.utils.cpp_extension", "megatron", "megatron.core"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import megatron.core
        from megatron.core import parallel_state
        from megatron.core.tensor_parallel.random import initialize_rng_tracker
        import megatron.core.models.gpt  # noqa: F401
        import megatron.core.models.gpt.gpt_layer_specs  # noqa: F401
        import megatron.core.transformer.transformer_config  # noqa: F401
    import torch.distributed as dist
    own = not dist.is_initialized()
    if own:
        dist.init_process_group("gloo", init_method=f"file://{tmp_path_factory.mktemp('pg')}/rendezvous",
                                rank=0, world_size=1)
    parallel_state.initialize_model_parallel(1, 1)
    initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)
    yield megatron.core
    initialize_rng_tracker(force_reset=True)  # back to the default (training) tracker
    parallel_state.destroy_model_parallel()
    if own:
        dist.destroy_process_group()


def build_gpt_model(mcore, args, init=False, **config):
    """GPTModel (local spec) from a checkpoint's args, the way Megatron maps args to its config;
    init: megatron-core's own initialisation (--use-cpu-initialization: init_method N(0, 0.02)
    over each whole tensor, the padded vocabulary rows included, from torch's CPU generator);
    config: more TransformerConfig fields, e.g. tensor_model_parallel_size."""
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.transformer_config import TransformerConfig
    act = F.silu if args.swiglu else functools.partial(F.gelu, approximate="tanh")
    cfg = TransformerConfig(
        num_layers=args.num_layers, hidden_size=args.hidden_size,
        ffn_hidden_size=args.ffn_hidden_size, num_attention_heads=args.num_attention_heads,
        num_query_groups=args.num_query_groups if getattr(args, "group_query_attention", False) else None,
        kv_channels=args.kv_channels, normalization=args.normalization, layernorm_epsilon=args.norm_epsilon,
        gated_linear_unit=args.swiglu, activation_func=act, add_bias_linear=args.add_bias_linear,
        add_qkv_bias=getattr(args, "add_qkv_bias", False), params_dtype=args.params_dtype,
        bf16=bool(args.bf16), fp16=bool(args.fp16),
        use_cpu_initialization=True, perform_initialization=init, hidden_dropout=0.0, attention_dropout=0.0,
        bias_dropout_fusion=False, apply_rope_fusion=False, masked_softmax_fusion=False,
        bias_activation_fusion=False, persist_layer_norm=False, gradient_accumulation_fusion=False,
        **config)
    model = GPTModel(
        config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(normalization=args.normalization),
        vocab_size=args.padded_vocab_size, max_sequence_length=args.max_position_embeddings,
        position_embedding_type=args.position_embedding_type,
        rotary_base=getattr(args, "rotary_base", 10000),
        share_embeddings_and_output_weights=not args.untie_embeddings_and_output_weights)
    return model.eval()


def mcore_logits(model, ids, vocab, monkeypatch):
    n = ids.shape[1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)[None, None]
    pos = torch.arange(n).unsqueeze(0).expand_as(ids)
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "current_device", lambda: "cpu")
        with torch.no_grad():
            out = model(ids, pos, attention_mask=mask)
    return out[..., :vocab]


def hf_logits(path, ids):
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype="auto").eval()
    with torch.no_grad():
        return model(ids).logits


def assert_close_logits(a, e, what):
    diff = (a.float() - e.float()).abs().max().item()
    assert torch.allclose(a.float(), e.float(), atol=1e-4, rtol=1e-4), \
        f"{what}: megatron-core logits differ from transformers, max |diff| {diff}"


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_mcore_loads_converted_checkpoint(family, mcore, tmp_path, monkeypatch):
    src = make_hf_source(family, tmp_path / "hf")
    mg = to_megatron(src, tmp_path / "mg", 1, 1, "--transformer-impl", "local")
    _, _, ranks = read_megatron(mg)
    sd = ranks[(0, 0)]
    model = build_gpt_model(mcore, sd["args"])
    result = model.load_state_dict(sd["model"], strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    V = hf_config(src)["vocab_size"]
    ids = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(3))
    assert_close_logits(mcore_logits(model, ids, V, monkeypatch), hf_logits(src, ids),
                        f"{family} via mg-convert")


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_reference_split_matches_mcore(family, mcore, tmp_path, monkeypatch):
    """The PyTorch reference of Megatron's layout used by test_convert.py, checked by megatron-core."""
    src = make_hf_source(family, tmp_path / "hf")
    sd = expected_megatron(family, src, 1, 1, impl="local")[(0, 0)]
    args = argparse.Namespace(**expected_args(family, src, 1, 1), params_dtype=torch.float32, bf16=False, fp16=False)
    if family == "gpt2":
        args.norm_epsilon = hf_config(src)["layer_norm_epsilon"]
    model = build_gpt_model(mcore, args)
    result = model.load_state_dict(sd, strict=False)
    assert not result.unexpected_keys and all(k.endswith("._extra_state") for k in result.missing_keys), result
    V = hf_config(src)["vocab_size"]
    ids = torch.randint(0, V, (2, 12), generator=torch.Generator().manual_seed(4))
    assert_close_logits(mcore_logits(model, ids, V, monkeypatch), hf_logits(src, ids),
                        f"{family} reference split")


def test_rope_forward_needs_cuda(mcore):
    """Why the RoPE tests patch torch.cuda.current_device: RotaryEmbedding.get_emb moves inv_freq
    to the current CUDA device whenever it is on the CPU, so on a CPU-only host the forward
    fails there ("Found no NVIDIA driver"). Checked on the source, so that it holds on hosts
    with and without a GPU; when this fails, megatron-core changed and the patch may go."""
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    src = inspect.getsource(RotaryEmbedding.get_emb)
    assert "if self.inv_freq.device.type == 'cpu':" in src and \
        "self.inv_freq.to(device=torch.cuda.current_device())" in src, src
