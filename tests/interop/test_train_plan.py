"""mg-train --dry-run against transformers and Megatron's formulas.

Parameter count: `mg-train --dry-run` prints "parameters: N"; the same shape built as a
transformers model (GPT2LMHeadModel, LlamaForCausalLM, Qwen2ForCausalLM, on the meta device)
must have exactly N parameters (sum of numel over model.parameters(), tied weights once).
The vocabulary is counted padded, as Megatron allocates it: the transformers model is built
with vocab_size = Megatron's padded size ceil(V / (make_vocab_size_divisible_by x TP)) x
(make_vocab_size_divisible_by x TP) (tokenizer.py _vocab_size_with_padding), so both count the
padding rows of the embedding (and of an untied output layer).

FLOPs: "FLOPs per iteration" must equal megatron/training/training.py
num_floating_point_operations (core_v0.16.1, transformer_flops() lines 321-575; the dense,
non-MLA, no-MTP path) transcribed below, evaluated in Python floats for the global batch.

Memory: the "Theoretical memory footprints" line must equal
megatron/training/theoretical_memory_usage.py (core_v0.16.1) compute_weight_and_optimizer_memory
(lines 12-189) and compute_activation_memory_without_sp (lines 266-337), or with
--sequence-parallel and selective recomputation compute_activation_memory (the path
report_theoretical_memory takes then), transcribed below, to the printed 2 decimals; the fp32 per-rank line must be 4/4/8 bytes per parameter and twice
Megatron's activation bytes (the documented fp32 convention of train/memory_plan.h).
"""
import re
import types
import warnings

import pytest

import torch

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import transformers

MIB = 1024 * 1024


def padded(v, div, tp):
    mult = div * tp
    return -(-v // mult) * mult


def dry_run(run_mg, flags, env=None):
    p = run_mg(["mg-train", "--dry-run"] + flags.split(), env=env)
    out = p.stdout
    get = lambda pat: re.search(pat, out, re.M)
    return types.SimpleNamespace(
        text=out,
        params=int(get(r"^parameters: (\d+) ").group(1)),
        rank_params=int(get(r"^parameters on the most loaded rank: (\d+)$").group(1)),
        flops=int(get(r"^FLOPs per iteration: (\d+) ").group(1)),
        megatron=get(r"weight and optimizer=([\d.]+) MB, activation=([\d.]+) MB, total=([\d.]+) MB").groups(),
        fp32=get(r"^memory per rank \(fp32\): weights ([\d.]+) MiB, gradients ([\d.]+) MiB, "
                 r"optimizer ([\d.]+) MiB \(Adam m and v\), activations ([\d.]+) MiB").groups()
        if "(fp32)" in out else None,
        padded_vocab=int(get(r"^vocabulary: \d+ padded to (\d+) ").group(1)),
    )


def hf_count(model_cls, config):
    with torch.device("meta"):
        model = model_cls(config)
    return sum(p.numel() for p in model.parameters())


def megatron_flops(a, batch_size):
    """training.py num_floating_point_operations -> transformer_flops (dense GPT path)."""
    if not a.group_query_attention:
        a.num_query_groups = a.num_attention_heads
    num_dense_layers, num_moe_layers, num_experts_routed_to = a.num_layers, 0, 0
    mtp_num_layers, num_layers = 0, a.num_layers
    moe_ffn_hidden_size, shared_expert_ffn_hidden_size = a.ffn_hidden_size, 0
    forward_backward_expansion_factor = 3
    fma_expansion_factor = 2
    ffn_expansion_factor = 3 if a.swiglu else 2
    query_projection_size = a.kv_channels * a.num_attention_heads
    key_projection_size = a.kv_channels * a.num_query_groups
    value_projection_size = a.kv_channels * a.num_query_groups
    gate_projection_size = 0
    standard_self_attn_term = (
        forward_backward_expansion_factor * fma_expansion_factor * (
            a.hidden_size * (query_projection_size + key_projection_size + value_projection_size
                             + gate_projection_size)
            + query_projection_size * a.seq_length / 2 * 2
            + query_projection_size * a.hidden_size))
    num_linear_attention_layers, linear_self_attn_term = 0, 0
    num_standard_attention_layers = num_layers
    self_attn_term = (linear_self_attn_term * num_linear_attention_layers
                      + standard_self_attn_term * num_standard_attention_layers)
    return (
        batch_size * a.seq_length * (
            forward_backward_expansion_factor * fma_expansion_factor * a.hidden_size * (
                (a.ffn_hidden_size * ffn_expansion_factor) * num_dense_layers
                + (moe_ffn_hidden_size * num_experts_routed_to * ffn_expansion_factor) * num_moe_layers
                + (shared_expert_ffn_hidden_size * ffn_expansion_factor) * num_moe_layers)
            + self_attn_term
            + forward_backward_expansion_factor * fma_expansion_factor * mtp_num_layers * (
                3 * a.hidden_size + 2 * a.hidden_size * a.hidden_size)
            + forward_backward_expansion_factor * fma_expansion_factor * a.hidden_size
            * a.padded_vocab_size * (mtp_num_layers + 1)))


def megatron_memory(a, num_microbatches, dp=1, distributed_optimizer=False):
    """theoretical_memory_usage.py: (weight+optimizer bytes, activation bytes without SP)."""
    query_projection_size = a.kv_channels * a.num_attention_heads
    ratio = query_projection_size / a.hidden_size
    if not a.group_query_attention:
        a.num_query_groups = a.num_attention_heads
    gated = 3 / 2 if a.swiglu else 1
    norm_size = 1 if a.normalization == "RMSNorm" else 2
    self_attn_term = 2 * a.hidden_size * a.hidden_size * (
        (1 + (a.num_query_groups / a.num_attention_heads)) * ratio)
    dense = 2 * a.hidden_size * ((a.ffn_hidden_size * gated) + norm_size) + self_attn_term
    moe = 2 * a.hidden_size * (+(0 * 1 * gated) + (0 * gated) + norm_size) + self_attn_term
    embedding_size = a.hidden_size * a.padded_vocab_size
    final_layernorm = norm_size * a.hidden_size
    block = dense * a.num_layers + moe * 0 + final_layernorm
    mtp_block = dense * 0 + moe * 0
    shard = ((block / a.pp) + mtp_block + embedding_size) / a.tp
    if a.untie and a.pp == 1:
        shard += embedding_size / a.tp
    weight_and_optimizer = shard * (6 + 12 / dp if distributed_optimizer else 18)
    act = a.seq_length * a.micro_batch_size * a.hidden_size * (10 + (24 / a.tp))
    act = act * a.num_layers
    act += 8 * a.seq_length * a.micro_batch_size * a.pp
    act += a.seq_length * a.micro_batch_size * a.hidden_size * a.pp
    if a.pp > 1:
        act *= min(1, num_microbatches / a.pp)
    if a.pp == 1:
        logits_size = a.seq_length * a.micro_batch_size * a.padded_vocab_size
        logits_size /= a.tp
        act += (logits_size + a.seq_length * a.micro_batch_size * a.hidden_size) * 2
    act *= 1.05
    return weight_and_optimizer, act


def args_for(h, L, heads, groups, ffn, kv, seq, vp, swiglu, norm, untie, gqa,
             mbs=2, tp=1, pp=1):
    return types.SimpleNamespace(
        hidden_size=h, num_layers=L, num_attention_heads=heads, num_query_groups=groups,
        ffn_hidden_size=ffn, kv_channels=kv, seq_length=seq, padded_vocab_size=vp,
        swiglu=swiglu, normalization=norm, untie=untie, group_query_attention=gqa,
        micro_batch_size=mbs, tp=tp, pp=pp)


COMMON = "--micro-batch-size 2 --global-batch-size 6 --train-iters 10 --lr 1e-4"


def check_plan(plan, a, gbs, nmb):
    assert plan.padded_vocab == a.padded_vocab_size
    flops = megatron_flops(a, gbs)
    assert plan.flops == int(flops), f"FLOPs {plan.flops} != Megatron {flops!r}"
    wo, act = megatron_memory(a, nmb)
    assert plan.megatron == (f"{wo / MIB:.2f}", f"{act / MIB:.2f}", f"{(wo + act) / MIB:.2f}")
    if plan.fp32:
        n = plan.rank_params
        assert plan.fp32 == (f"{4 * n / MIB:.2f}", f"{4 * n / MIB:.2f}", f"{8 * n / MIB:.2f}",
                             f"{2 * act / MIB:.2f}")


def test_gpt2_shape(run_mg):
    plan = dry_run(run_mg, "--num-layers 3 --hidden-size 96 --num-attention-heads 6 "
                   "--seq-length 48 --max-position-embeddings 64 --vocab-size 1000 " + COMMON)
    vp = padded(1000, 128, 1)
    cfg = transformers.GPT2Config(n_embd=96, n_layer=3, n_head=6, n_positions=64, vocab_size=vp)
    assert plan.params == hf_count(transformers.GPT2LMHeadModel, cfg)
    assert plan.rank_params == plan.params
    check_plan(plan, args_for(96, 3, 6, 6, 4 * 96, 16, 48, vp, False, "LayerNorm", False, False),
               6, 3)


def test_gpt2_124m(run_mg):
    """The real GPT-2 small shape: 124,475,904 with the 50304-row padded vocabulary."""
    plan = dry_run(run_mg, "--num-layers 12 --hidden-size 768 --num-attention-heads 12 "
                   "--seq-length 1024 --max-position-embeddings 1024 --vocab-size 50257 "
                   "--micro-batch-size 4 --global-batch-size 8 --train-iters 1 --lr 1e-4")
    cfg = transformers.GPT2Config(vocab_size=50304)
    assert plan.params == hf_count(transformers.GPT2LMHeadModel, cfg) == 124475904
    check_plan(plan, args_for(768, 12, 12, 12, 3072, 64, 1024, 50304, False, "LayerNorm",
                              False, False, mbs=4), 8, 2)


LLAMA = ("--normalization RMSNorm --swiglu --position-embedding-type rope "
         "--disable-bias-linear ")


@pytest.mark.parametrize("untie", [True, False])
def test_llama_gqa_shape(run_mg, untie):
    plan = dry_run(run_mg, LLAMA + "--num-layers 2 --hidden-size 128 --num-attention-heads 8 "
                   "--group-query-attention --num-query-groups 2 --seq-length 64 "
                   "--max-position-embeddings 64 --vocab-size 3001 "
                   "--make-vocab-size-divisible-by 64 " + COMMON +
                   (" --untie-embeddings-and-output-weights" if untie else ""))
    vp = padded(3001, 64, 1)
    ffn = int((4 * 128 * 2 / 3) / 64) * 64
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=ffn, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=2, vocab_size=vp,
                                   max_position_embeddings=64, tie_word_embeddings=not untie)
    assert plan.params == hf_count(transformers.LlamaForCausalLM, cfg)
    check_plan(plan, args_for(128, 2, 8, 2, ffn, 16, 64, vp, True, "RMSNorm", untie, True), 6, 3)


def test_llama_kv_channels(run_mg):
    """q = kv_channels x heads != hidden (head_dim set explicitly)."""
    plan = dry_run(run_mg, LLAMA + "--num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                   "--kv-channels 32 --group-query-attention --num-query-groups 2 "
                   "--ffn-hidden-size 96 --seq-length 32 --max-position-embeddings 32 "
                   "--vocab-size 500 --untie-embeddings-and-output-weights " + COMMON)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                   vocab_size=512, max_position_embeddings=32,
                                   tie_word_embeddings=False)
    assert plan.params == hf_count(transformers.LlamaForCausalLM, cfg)
    check_plan(plan, args_for(64, 2, 4, 2, 96, 32, 32, 512, True, "RMSNorm", True, True), 6, 3)


def test_qwen2_qkv_bias(run_mg):
    plan = dry_run(run_mg, LLAMA + "--add-qkv-bias --num-layers 2 --hidden-size 64 "
                   "--num-attention-heads 4 --group-query-attention --num-query-groups 2 "
                   "--ffn-hidden-size 160 --seq-length 32 --max-position-embeddings 32 "
                   "--vocab-size 300 --untie-embeddings-and-output-weights " + COMMON)
    cfg = transformers.Qwen2Config(hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=384,
                                   max_position_embeddings=32, tie_word_embeddings=False)
    assert plan.params == hf_count(transformers.Qwen2ForCausalLM, cfg)
    assert "QKV bias only" in plan.text


def test_parallel_layout_megatron_memory(run_mg):
    """TP 2 x PP 2: vocabulary padded to 128 x TP, Megatron's per-rank formula with 1F1B."""
    plan = dry_run(run_mg, "--num-layers 4 --hidden-size 128 --num-attention-heads 8 "
                   "--seq-length 64 --max-position-embeddings 64 --vocab-size 1000 "
                   "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
                   "--micro-batch-size 1 --global-batch-size 1 --train-iters 5 --lr 1e-4")
    assert plan.padded_vocab == 1024
    check_plan(plan, args_for(128, 4, 8, 8, 512, 16, 64, 1024, False, "LayerNorm", False, False,
                              mbs=1, tp=2, pp=2), 1, 1)
    # most loaded rank: first stage = 2 layers split over TP + half the vocabulary + positions
    h, f, q = 128, 512, 128
    layer = 2 * 2 * h + (h * 3 * q + 3 * q) // 2 + q * h // 2 + h + (h * f + f) // 2 + f * h // 2 + h
    assert plan.rank_params == 2 * layer + 1024 * h // 2 + 64 * h


def test_distributed_optimizer_memory(run_mg):
    """--use-distributed-optimizer at DP 2 (torchrun's WORLD_SIZE): Megatron's 6 + 12 / DP
    bytes per parameter, and the fp32 Adam moments split over the data-parallel ranks."""
    env = {"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0"}
    flags = ("--num-layers 3 --hidden-size 96 --num-attention-heads 6 --seq-length 64 "
             "--max-position-embeddings 64 --vocab-size 1000 --micro-batch-size 2 "
             "--global-batch-size 8 --train-iters 10 --lr 1e-4")
    plain = dry_run(run_mg, flags, env)
    dist = dry_run(run_mg, flags + " --use-distributed-optimizer", env)
    a = args_for(96, 3, 6, 6, 384, 16, 64, 1024, False, "LayerNorm", False, False)
    for plan, distributed in ((plain, False), (dist, True)):
        wo, act = megatron_memory(a, 2, dp=2, distributed_optimizer=distributed)
        assert plan.megatron == (f"{wo / MIB:.2f}", f"{act / MIB:.2f}", f"{(wo + act) / MIB:.2f}")
    n = dist.rank_params
    assert plain.fp32[2] == f"{8 * n / MIB:.2f}"
    assert dist.fp32[2] == f"{8 * n / 2 / MIB:.2f}"


def megatron_activation_sp(a, num_microbatches):
    """theoretical_memory_usage.py compute_activation_memory (SP + selective recompute)."""
    act = (a.seq_length * a.micro_batch_size * a.hidden_size) * (
        18 + (4 * (a.ffn_hidden_size / a.hidden_size)))
    act *= a.num_layers
    act += 8 * a.seq_length * a.micro_batch_size * a.pp
    act += a.seq_length * a.micro_batch_size * a.hidden_size * a.pp
    if a.pp > 1 and num_microbatches is not None:
        act *= min(1, num_microbatches / a.pp)
    if a.pp == 1:
        act += (a.seq_length * a.micro_batch_size * a.hidden_size * 4
                * (1 + (a.padded_vocab_size / a.hidden_size)))
    return act / a.tp


@pytest.mark.parametrize("recompute", ["--recompute-activations",
                                       "--recompute-granularity selective"])
def test_sequence_parallel_selective_memory(run_mg, recompute):
    """--sequence-parallel with selective recomputation: Megatron's SP formula; without the
    recomputation (or without SP) the other one."""
    flags = ("--num-layers 4 --hidden-size 128 --num-attention-heads 8 --seq-length 64 "
             "--max-position-embeddings 64 --vocab-size 1000 --tensor-model-parallel-size 2 "
             "--micro-batch-size 2 --global-batch-size 4 --train-iters 5 --lr 1e-4 ")
    a = args_for(128, 4, 8, 8, 512, 16, 64, 1024, False, "LayerNorm", False, False, tp=2)
    env = {"WORLD_SIZE": "2"}
    wo, act = megatron_memory(a, 2)
    act_sp = megatron_activation_sp(a, 2)
    for extra, want in ((recompute + " --sequence-parallel", act_sp), ("--sequence-parallel", act),
                        (recompute, act)):
        plan = dry_run(run_mg, flags + extra, env)
        assert plan.megatron == (f"{wo / MIB:.2f}", f"{want / MIB:.2f}",
                                 f"{(wo + want) / MIB:.2f}"), extra
