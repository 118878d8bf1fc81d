#!/usr/bin/env python3
"""The torch_dist contenders of bench_convert.py (run --format torch_dist): mg-convert
HF -> torch_dist and torch_dist -> HF against `cp -r` of the same bytes (plain, and made
durable with an fsync of every file, as mg-convert's output is) and against megatron-core's
own path back to HF (dist_checkpointing.load of the whole model, then transformers'
save_pretrained). The synthetic model, the timing and the table are bench_convert.py's.

  mcore-to-hf SRC DST --config-from HF   megatron-core's path: every tensor key of SRC's
                                         .metadata as one whole ShardedTensor, loaded with
                                         dist_checkpointing.load (gloo world of 1, CPU; the
                                         CPU stand-ins of tests/interop/mcore_torch_dist.py),
                                         mapped to Llama HF names, load_state_dict(assign=True)
                                         into a LlamaForCausalLM built on the meta device, and
                                         save_pretrained in 2 GB shards
"""
import argparse
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_convert import SHARD_BYTES, print_table  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def iteration_dir(src):
    it = (src / "latest_checkpointed_iteration.txt").read_text().strip()
    return src / ("release" if it == "release" else f"iter_{int(it):07d}")


def hf_state(loaded, c):
    """Llama HF tensors from the global (stacked) torch_dist tensors."""
    V, ng, H = c["vocab_size"], c["num_key_value_heads"], c["hidden_size"]
    d = H // c["num_attention_heads"]
    hpg = c["num_attention_heads"] // ng
    L = "decoder.layers."
    out = {"model.embed_tokens.weight": loaded["embedding.word_embeddings.weight"][:V],
           "lm_head.weight": loaded["output_layer.weight"][:V],
           "model.norm.weight": loaded["decoder.final_layernorm.weight"]}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        qkv = loaded[L + "self_attention.linear_qkv.weight"][i].view(ng, (hpg + 2) * d, H)
        out[p + "self_attn.q_proj.weight"] = qkv[:, :hpg * d].reshape(-1, H)
        out[p + "self_attn.k_proj.weight"] = qkv[:, hpg * d:(hpg + 1) * d].reshape(-1, H)
        out[p + "self_attn.v_proj.weight"] = qkv[:, (hpg + 1) * d:].reshape(-1, H)
        out[p + "self_attn.o_proj.weight"] = loaded[L + "self_attention.linear_proj.weight"][i]
        gate, up = loaded[L + "mlp.linear_fc1.weight"][i].chunk(2)
        out[p + "mlp.gate_proj.weight"], out[p + "mlp.up_proj.weight"] = gate, up
        out[p + "mlp.down_proj.weight"] = loaded[L + "mlp.linear_fc2.weight"][i]
        out[p + "input_layernorm.weight"] = loaded[L + "self_attention.linear_qkv.layer_norm_weight"][i]
        out[p + "post_attention_layernorm.weight"] = loaded[L + "mlp.linear_fc1.layer_norm_weight"][i]
    return {k: v.contiguous() for k, v in out.items()}


def mcore_to_hf(args):
    import torch
    import transformers
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT / "tests" / "interop"))
    from mcore_torch_dist import setup
    setup()
    from megatron.core import dist_checkpointing
    from megatron.core.dist_checkpointing import ShardedTensor
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata
    ckpt = iteration_dir(pathlib.Path(args.src))
    md = FileSystemReader(ckpt).read_metadata()
    sharded = {k: ShardedTensor.from_rank_offsets(k, torch.empty(tuple(v.size), dtype=v.properties.dtype))
               for k, v in md.state_dict_metadata.items() if isinstance(v, TensorStorageMetadata)}
    loaded = dist_checkpointing.load(sharded, ckpt)
    c = json.loads((pathlib.Path(args.config_from) / "config.json").read_text())
    cfg = transformers.AutoConfig.from_pretrained(args.config_from)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.load_state_dict(hf_state(loaded, c), strict=True, assign=True)
    del loaded
    model.save_pretrained(args.dst, max_shard_size=SHARD_BYTES)
    print(f"conversion-seconds {time.perf_counter() - t0:.3f}")


def contenders(args, model, work):
    """(label, command, outputs removed after it) in the order of one round."""
    mg = str(pathlib.Path(args.bin) / "mg-convert")
    flags = ["--quiet"] + (["--workers", str(args.workers)] if args.workers else [])
    files = sorted(p.name for p in model.iterdir())
    out = [("cp -r", ["cp", "-r", str(model), str(work / "cp")], ["cp"]),
           ("cp -r + fsync of each file",
            ["sh", "-c", 'cp -r "$0" "$1" && cd "$1" && sync "$@"', str(model), str(work / "cpd")] + files,
            ["cpd"]),
           ("mg-convert HF -> torch_dist",
            [mg, "--load-dir", str(model), "--save-dir", str(work / "td"), "--ckpt-format", "torch_dist"]
            + flags, []),
           ("mg-convert torch_dist -> HF",
            [mg, "--load-dir", str(work / "td"), "--save-dir", str(work / "mghf"), "--saver", "hf",
             "--max-shard-size", str(SHARD_BYTES)] + flags, ["mghf"])]
    if not args.skip_torch:
        out.append(("megatron-core dist_checkpointing.load + save_pretrained",
                    [sys.executable, os.path.abspath(__file__), "mcore-to-hf", str(work / "td"),
                     str(work / "mchf"), "--config-from", str(model)], ["mchf"]))
    out[-1][2].append("td")
    return out


def report(args, model, nbytes, plan, runs):
    best = print_table(model, nbytes, args.rounds, plan, runs)
    cp, cpd, to, back = best[0][0], best[1][0], best[2][0], best[3][0]
    print(f"mg-convert throughput / durable cp (cp -r + fsync): HF -> torch_dist {cpd / to:.2f}, "
          f"torch_dist -> HF {cpd / back:.2f} (target >= 0.9); / plain cp -r: {cp / to:.2f}, {cp / back:.2f}")
    if not args.skip_torch:
        mc, inner, _ = best[4]
        print(f"megatron-core time / mg-convert time, torch_dist -> HF: {mc / back:.1f}x (target >= 5x)"
              + (f"; {inner / back:.1f}x without its Python start-up and imports" if inner else ""))
    print(f"mg-convert peak RSS: {max(best[2][2], best[3][2]) / 1e6:.0f} MB (target < 1000 MB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mcore-to-hf")
    m.add_argument("src")
    m.add_argument("dst")
    m.add_argument("--config-from", required=True)
    mcore_to_hf(ap.parse_args())


if __name__ == "__main__":
    main()
