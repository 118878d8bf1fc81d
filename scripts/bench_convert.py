#!/usr/bin/env python3
"""Benchmark of mg-convert against `cp -r` and a PyTorch converter that works the way
Megatron's tools/checkpoint/convert.py does (load every tensor, split, torch.save per rank;
and back: load every rank, merge, save). Prints seconds, GB/s and peak RSS of each, and the
ratios. Subcommands:

  generate DIR [--layers N ...]   write a synthetic Llama-shaped HF checkpoint (config.json,
                                  2 GB safetensors shards + index; random bf16 bytes written
                                  by numpy in 64 MB pieces, never the whole model in memory)
  torch-to-megatron SRC DST --tp T --pp P    the PyTorch path, HF -> Megatron torch format
  torch-to-hf SRC DST                        the PyTorch path, Megatron -> HF
  run --bin BIN --model DIR --work DIR       time everything, print the table and ratios
      [--format torch_dist]                  the torch_dist contenders (bench_convert_dist.py)

A last row times `cp -r` followed by an fsync of every copied file, for context: mg-convert
fsyncs each file it writes (atomic, durable output), plain `cp -r` does not.

The contenders run in rounds (--rounds, default 3), one after the other in each round, and
each is reported by its fastest round: on a shared machine the speed of memory copies into
the page cache swings by 2x from one minute to the next, and alternating keeps one
contender from getting all the good minutes.

GB = 10^9 bytes of tensor data (the safetensors payload of the source), the same numerator
for every contender. Peak RSS is the child's ru_maxrss (os.wait4), which counts file pages
mapped and touched by the process as well as its own memory; RssAnon (own memory only) is
sampled from /proc every 20 ms and printed next to it.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

GB = 1e9
# Safetensors shard size of the generated source and of every HF output (mg-convert's
# --max-shard-size, the PyTorch path's shards), so that every contender writes the layout
# `cp -r` copies.
SHARD_BYTES = 2_000_000_000


# ------------------------------------------------------------------------------------------
# synthetic checkpoint

def llama_tensors(c):
    """(name, shape) of a Llama HF checkpoint, in the order HF lists them."""
    H, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    d = H // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * d
    out = [("model.embed_tokens.weight", (V, H))]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (H,)), (p + "self_attn.q_proj.weight", (H, H)),
                (p + "self_attn.k_proj.weight", (kv, H)), (p + "self_attn.v_proj.weight", (kv, H)),
                (p + "self_attn.o_proj.weight", (H, H)), (p + "post_attention_layernorm.weight", (H,)),
                (p + "mlp.gate_proj.weight", (F, H)), (p + "mlp.up_proj.weight", (F, H)),
                (p + "mlp.down_proj.weight", (H, F))]
    out += [("model.norm.weight", (H,)), ("lm_head.weight", (V, H))]
    return out


def write_safetensors(path, tensors, rng):
    """One safetensors file of bf16 TENSORS [(name, shape)], filled with random finite bf16."""
    import numpy as np
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    piece = 32 << 20  # elements per write (64 MB)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text)
        for _, shape in tensors:
            left = int(np.prod(shape))
            while left:
                n = min(left, piece)
                x = rng.integers(0, 1 << 16, n, dtype=np.uint16)
                x &= 0xBFFF  # clear the exponent's top bit: |x| < 2, no Inf/NaN
                f.write(x.tobytes())
                left -= n
    return off


def generate(args):
    import numpy as np
    out = pathlib.Path(args.dir)
    if (out / "model.safetensors.index.json").exists():
        print(f"{out}: already there")
        return
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    c = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=args.hidden,
             intermediate_size=args.ffn, num_hidden_layers=args.layers, num_attention_heads=args.heads,
             num_key_value_heads=args.kv_heads, head_dim=args.hidden // args.heads, vocab_size=args.vocab,
             max_position_embeddings=4096, rms_norm_eps=1e-5, rope_theta=10000.0, hidden_act="silu",
             tie_word_embeddings=False, attention_bias=False, mlp_bias=False, torch_dtype="bfloat16",
             bos_token_id=1, eos_token_id=2)
    (tmp / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    shards, cur, size = [], [], 0
    for name, shape in llama_tensors(c):
        n = 2
        for s in shape:
            n *= s
        if cur and size + n > args.shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += n
    shards.append(cur)
    rng = np.random.default_rng(1234)
    weight_map, total = {}, 0
    for i, tensors in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        total += write_safetensors(tmp / fname, tensors, rng)
        weight_map.update({name: fname for name, _ in tensors})
    (tmp / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n")
    tmp.rename(out)
    print(f"{out}: {total / GB:.2f} GB in {len(shards)} shards")


# ------------------------------------------------------------------------------------------
# the PyTorch path (what Megatron's converter does: everything in memory, torch.save per rank)

def load_hf(src):
    from safetensors.torch import load_file
    src = pathlib.Path(src)
    index = json.loads((src / "model.safetensors.index.json").read_text())
    sd = {}
    for f in sorted(set(index["weight_map"].values())):
        sd.update(load_file(src / f))
    return sd, json.loads((src / "config.json").read_text())


def megatron_args(c, tp, pp, vp):
    return argparse.Namespace(
        num_layers=c["num_hidden_layers"], hidden_size=c["hidden_size"], ffn_hidden_size=c["intermediate_size"],
        num_attention_heads=c["num_attention_heads"], num_query_groups=c["num_key_value_heads"],
        group_query_attention=True, kv_channels=c["hidden_size"] // c["num_attention_heads"],
        max_position_embeddings=c["max_position_embeddings"], seq_length=c["max_position_embeddings"],
        padded_vocab_size=vp, make_vocab_size_divisible_by=128, vocab_size=c["vocab_size"],
        position_embedding_type="rope", rotary_base=c["rope_theta"], normalization="RMSNorm",
        norm_epsilon=c["rms_norm_eps"], swiglu=True, add_bias_linear=False, add_qkv_bias=False,
        untie_embeddings_and_output_weights=True, tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp, transformer_impl="transformer_engine", bf16=True, fp16=False,
        params_dtype=None, ckpt_format="torch")


def torch_to_megatron(args):
    import torch
    t0 = time.perf_counter()
    sd, c = load_hf(args.src)
    tp, pp = args.tp, args.pp
    L, ng = c["num_hidden_layers"], c["num_key_value_heads"]
    V = c["vocab_size"]
    vp = -(-V // (128 * tp)) * 128 * tp

    def pad(t):
        return torch.cat([t, t.new_zeros((vp - V, t.shape[1]))])

    embed, head = pad(sd.pop("model.embed_tokens.weight")), pad(sd.pop("lm_head.weight"))
    models = {}  # like the saver: every target rank's model in memory, saved at the end
    for p in range(pp):
        for r in range(tp):
            models[(r, p)] = {}
    per = L // pp
    for i in range(L):
        p, local = divmod(i, per)
        pre = f"model.layers.{i}."
        q, k, v = (sd.pop(pre + f"self_attn.{x}_proj.weight") for x in "qkv")
        qkv = torch.cat([torch.cat([a, b, cc]) for a, b, cc in zip(q.chunk(ng), k.chunk(ng), v.chunk(ng))])
        gate, up = sd.pop(pre + "mlp.gate_proj.weight"), sd.pop(pre + "mlp.up_proj.weight")
        o, down = sd.pop(pre + "self_attn.o_proj.weight"), sd.pop(pre + "mlp.down_proj.weight")
        n1, n2 = sd.pop(pre + "input_layernorm.weight"), sd.pop(pre + "post_attention_layernorm.weight")
        for r in range(tp):
            m, d = models[(r, p)], f"decoder.layers.{local}."
            m[d + "self_attention.linear_qkv.layer_norm_weight"] = n1.clone()
            m[d + "self_attention.linear_qkv.weight"] = qkv.chunk(tp)[r].clone()
            m[d + "self_attention.linear_proj.weight"] = o.chunk(tp, 1)[r].clone()
            m[d + "mlp.linear_fc1.layer_norm_weight"] = n2.clone()
            m[d + "mlp.linear_fc1.weight"] = torch.cat([gate.chunk(tp)[r], up.chunk(tp)[r]])
            m[d + "mlp.linear_fc2.weight"] = down.chunk(tp, 1)[r].clone()
    for r in range(tp):
        models[(r, 0)]["embedding.word_embeddings.weight"] = embed.chunk(tp)[r].clone()
        models[(r, pp - 1)]["decoder.final_layernorm.weight"] = sd["model.norm.weight"].clone()
        models[(r, pp - 1)]["output_layer.weight"] = head.chunk(tp)[r].clone()
    margs = megatron_args(c, tp, pp, vp)
    margs.params_dtype = torch.bfloat16
    dst = pathlib.Path(args.dst)
    for (r, p), m in models.items():
        d = dst / "release" / (f"mp_rank_{r:02d}" + (f"_{p:03d}" if pp > 1 else ""))
        d.mkdir(parents=True)
        torch.save({"args": margs, "checkpoint_version": 3.0, "iteration": 0, "model": m}, d / "model_optim_rng.pt")
    (dst / "latest_checkpointed_iteration.txt").write_text("release")
    print(f"conversion-seconds {time.perf_counter() - t0:.3f}")


def torch_to_hf(args):
    import torch
    from safetensors.torch import save_file
    t0 = time.perf_counter()
    src = pathlib.Path(args.src) / "release"
    ranks = {}
    with torch.serialization.safe_globals([argparse.Namespace]):
        for d in sorted(src.iterdir()):
            parts = d.name.split("_")
            ranks[(int(parts[2]), int(parts[3]) if len(parts) > 3 else 0)] = torch.load(
                d / "model_optim_rng.pt", map_location="cpu", weights_only=True)
    a = ranks[(0, 0)]["args"]
    tp, pp = a.tensor_model_parallel_size, a.pipeline_model_parallel_size
    V, ng, d = a.vocab_size, a.num_query_groups, a.kv_channels
    hpg = a.num_attention_heads // ng
    per = a.num_layers // pp
    out = {}

    def cat(p, name, dim=0):
        return torch.cat([ranks[(r, p)]["model"][name] for r in range(tp)], dim)

    out["model.embed_tokens.weight"] = cat(0, "embedding.word_embeddings.weight")[:V].clone()
    for i in range(a.num_layers):
        p, local = divmod(i, per)
        m, pre, hf = ranks[(0, p)]["model"], f"decoder.layers.{local}.", f"model.layers.{i}."
        qkv = cat(p, pre + "self_attention.linear_qkv.weight").view(ng, (hpg + 2) * d, -1)
        out[hf + "self_attn.q_proj.weight"] = qkv[:, :hpg * d].reshape(-1, qkv.shape[-1]).clone()
        out[hf + "self_attn.k_proj.weight"] = qkv[:, hpg * d:(hpg + 1) * d].reshape(-1, qkv.shape[-1]).clone()
        out[hf + "self_attn.v_proj.weight"] = qkv[:, (hpg + 1) * d:].reshape(-1, qkv.shape[-1]).clone()
        out[hf + "self_attn.o_proj.weight"] = cat(p, pre + "self_attention.linear_proj.weight", 1)
        fc1 = [ranks[(r, p)]["model"][pre + "mlp.linear_fc1.weight"].chunk(2) for r in range(tp)]
        out[hf + "mlp.gate_proj.weight"] = torch.cat([g for g, _ in fc1])
        out[hf + "mlp.up_proj.weight"] = torch.cat([u for _, u in fc1])
        out[hf + "mlp.down_proj.weight"] = cat(p, pre + "mlp.linear_fc2.weight", 1)
        out[hf + "input_layernorm.weight"] = m[pre + "self_attention.linear_qkv.layer_norm_weight"].clone()
        out[hf + "post_attention_layernorm.weight"] = m[pre + "mlp.linear_fc1.layer_norm_weight"].clone()
    out["model.norm.weight"] = ranks[(0, pp - 1)]["model"]["decoder.final_layernorm.weight"].clone()
    out["lm_head.weight"] = cat(pp - 1, "output_layer.weight")[:V].clone()
    del ranks
    dst = pathlib.Path(args.dst)
    dst.mkdir(parents=True)
    shutil.copy(pathlib.Path(args.config_from) / "config.json", dst / "config.json")
    shards, cur, size = [], {}, 0
    for k in sorted(out):
        n = out[k].numel() * 2
        if cur and size + n > SHARD_BYTES:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = out[k]
        size += n
    shards.append(cur)
    weight_map = {}
    for i, s in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(s, dst / fname, metadata={"format": "pt"})
        weight_map.update({k: fname for k in s})
    (dst / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": sum(t.numel() * 2 for t in out.values())}, "weight_map": weight_map}))
    print(f"conversion-seconds {time.perf_counter() - t0:.3f}")


# ------------------------------------------------------------------------------------------
# timing

def run_measured(cmd):
    """Runs CMD; returns (seconds, peak RSS bytes from wait4, peak RssAnon bytes sampled,
    the seconds the command itself reports on a 'conversion-seconds S' line or None,
    CPU seconds (user + system) from wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    anon = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                for line in open(f"/proc/{proc.pid}/status"):
                    if line.startswith("RssAnon:"):
                        anon[0] = max(anon[0], int(line.split()[1]) * 1024)
            except OSError:
                pass
            done.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    done.set()
    th.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed with exit status {proc.returncode}")
    inner = [float(line.split()[1]) for line in out.splitlines() if line.startswith("conversion-seconds ")]
    return secs, ru.ru_maxrss * 1024, anon[0], inner[0] if inner else None, ru.ru_utime + ru.ru_stime


def payload_bytes(model):
    return json.loads((pathlib.Path(model) / "model.safetensors.index.json").read_text())["metadata"]["total_size"]


def contenders(args, model, work):
    """(label, command, outputs removed after it) in the order of one round."""
    mg = str(pathlib.Path(args.bin) / "mg-convert")
    py, me, tp, pp = sys.executable, os.path.abspath(__file__), args.tp, args.pp
    mg_flags = ["--quiet"] + (["--workers", str(args.workers)] if args.workers else [])
    out = [("cp -r", ["cp", "-r", str(model), str(work / "cp")], ["cp"]),
           (f"mg-convert HF -> TP{tp}PP{pp}",
            [mg, "--load-dir", str(model), "--save-dir", str(work / "mg"),
             "--target-tensor-parallel-size", str(tp),
             "--target-pipeline-parallel-size", str(pp)] + mg_flags, []),
           (f"mg-convert TP{tp}PP{pp} -> HF",
            [mg, "--load-dir", str(work / "mg"), "--save-dir", str(work / "mghf"),
             "--saver", "hf", "--max-shard-size", str(SHARD_BYTES)] + mg_flags, ["mg", "mghf"])]
    if not args.skip_torch:
        out += [(f"PyTorch HF -> TP{tp}PP{pp}", [py, me, "torch-to-megatron", str(model),
                                                 str(work / "pt"), "--tp", str(tp), "--pp", str(pp)], []),
                (f"PyTorch TP{tp}PP{pp} -> HF", [py, me, "torch-to-hf", str(work / "pt"),
                                                 str(work / "pthf"), "--config-from", str(model)],
                 ["pt", "pthf"])]
    # context: mg-convert fsyncs every file it writes (a crash leaves no torn checkpoint);
    # `cp -r` does not. The same copy made durable, file by file (coreutils `sync FILE...`):
    files = sorted(p.name for p in model.iterdir())
    out.append(("cp -r + fsync of each file (context)",
                ["sh", "-c", 'cp -r "$0" "$1" && cd "$1" && sync "$@"', str(model), str(work / "cpd")]
                + files, ["cpd"]))
    return out


def measure_rounds(model, work, plan, rounds):
    """Runs every contender of plan once per round (the page cache warm with the source);
    returns per contender the measurements of every round (run_measured's tuples)."""
    subprocess.run(["cat"] + [str(p) for p in sorted(model.iterdir())], stdout=subprocess.DEVNULL, check=True)
    runs = [[] for _ in plan]
    for rnd in range(rounds):
        for i, (label, cmd, cleanup) in enumerate(plan):
            subprocess.run(["sync"], check=True)
            runs[i].append(run_measured(cmd))
            print(f"  round {rnd + 1}: {label}: {runs[i][-1][0]:.2f} s", file=sys.stderr, flush=True)
            for c in cleanup:
                shutil.rmtree(work / c, ignore_errors=True)
    return runs


def run(args):
    """Times the contenders of --format (torch: this file's; torch_dist: bench_convert_dist.py's)."""
    fmt = sys.modules[__name__]
    if args.format == "torch_dist":
        import bench_convert_dist as fmt
    model, work = pathlib.Path(args.model), pathlib.Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    nbytes = payload_bytes(model)
    plan = fmt.contenders(args, model, work)
    runs = measure_rounds(model, work, plan, args.rounds)
    shutil.rmtree(work, ignore_errors=True)
    fmt.report(args, model, nbytes, plan, runs)


def print_table(model, nbytes, rounds, plan, runs):
    """The table (each contender's fastest round; every round's seconds in brackets); returns
    per contender (fastest seconds, its inner seconds or None, peak RSS over the rounds)."""
    print(f"model: {model} ({nbytes / GB:.2f} GB of bf16 tensors); {rounds} rounds, "
          f"contenders alternated; the fastest round of each")
    print("| contender | seconds (every round) | GB/s | CPU seconds | peak RSS (MB) | peak RssAnon (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    best = []
    for (label, _, _), rs in zip(plan, runs):
        secs, rss, anon, inner, cpu = min(rs, key=lambda r: r[0])
        best.append((secs, inner, max(r[1] for r in rs)))
        note = f" ({inner:.2f} s without Python start-up and imports)" if inner is not None else ""
        every = " / ".join(f"{r[0]:.2f}" for r in rs)
        print(f"| {label}{note} | {secs:.2f} ({every}) | {nbytes / GB / secs:.2f} | {cpu:.2f} | "
              f"{max(r[1] for r in rs) / 1e6:.0f} | {max(r[2] for r in rs) / 1e6:.0f} |")
    return best


def report(args, model, nbytes, plan, runs):
    """The table and the ratios of the fastest rounds."""
    best = print_table(model, nbytes, args.rounds, plan, runs)
    cp, mg_to, mg_back, cpd = best[0][0], best[1][0], best[2][0], best[-1][0]
    print(f"mg-convert throughput / cp: to Megatron {cp / mg_to:.2f}, back to HF {cp / mg_back:.2f} "
          f"(target >= 0.70)")
    print(f"  against the durable copy (cp -r + fsync, last row): to Megatron {cpd / mg_to:.2f}, "
          f"back to HF {cpd / mg_back:.2f}")
    if not args.skip_torch:
        (pt_to, in_to, _), (pt_back, in_back, _) = best[3], best[4]
        print(f"PyTorch time / mg-convert time: to Megatron {pt_to / mg_to:.1f}x, back to HF "
              f"{pt_back / mg_back:.1f}x, round trip {(pt_to + pt_back) / (mg_to + mg_back):.1f}x (target >= 10x)")
        print(f"  the same without PyTorch's start-up and imports: to Megatron {in_to / mg_to:.1f}x, "
              f"back to HF {in_back / mg_back:.1f}x, round trip {(in_to + in_back) / (mg_to + mg_back):.1f}x")
        print(f"  cp -r time / PyTorch time (the bound on this ratio for any tool that writes the "
              f"same bytes at cp's speed): to Megatron {pt_to / cp:.1f}x, back to HF {pt_back / cp:.1f}x")
    print(f"mg-convert peak RSS: {max(best[1][2], best[2][2]) / 1e6:.0f} MB (target < 1000 MB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("dir")
    g.add_argument("--layers", type=int, default=8)
    g.add_argument("--hidden", type=int, default=4096)
    g.add_argument("--ffn", type=int, default=11008)
    g.add_argument("--heads", type=int, default=32)
    g.add_argument("--kv-heads", type=int, default=8)
    g.add_argument("--vocab", type=int, default=32000)
    g.add_argument("--shard-bytes", type=int, default=SHARD_BYTES)
    t = sub.add_parser("torch-to-megatron")
    t.add_argument("src")
    t.add_argument("dst")
    t.add_argument("--tp", type=int, required=True)
    t.add_argument("--pp", type=int, required=True)
    h = sub.add_parser("torch-to-hf")
    h.add_argument("src")
    h.add_argument("dst")
    h.add_argument("--config-from", required=True)
    r = sub.add_parser("run")
    r.add_argument("--bin", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--tp", type=int, default=4)
    r.add_argument("--pp", type=int, default=2)
    r.add_argument("--workers", type=int, default=0)
    r.add_argument("--skip-torch", action="store_true", help="leave the PyTorch/megatron-core path out")
    r.add_argument("--format", choices=["torch", "torch_dist"], default="torch",
                   help="Megatron format: torch (TP/PP, vs a PyTorch converter) or torch_dist "
                        "(vs megatron-core's dist_checkpointing.load + save_pretrained)")
    r.add_argument("--rounds", type=int, default=3, help="rounds of all contenders, alternated")
    a = ap.parse_args()
    {"generate": generate, "torch-to-megatron": torch_to_megatron, "torch-to-hf": torch_to_hf, "run": run}[a.cmd](a)


if __name__ == "__main__":
    main()
