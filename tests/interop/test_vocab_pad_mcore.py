"""Megatron's padded vocabulary, checked against megatron-core 0.16.1 itself (CPU, gloo).

Two tiny models, vocabulary V = 1000 padded to Vp = 1024 (--make-vocab-size-divisible-by 128:
the same Vp at TP 1, 2 and 4): GPT-2-style (tied, LayerNorm, biases, learned positions,
hidden 32, 4 heads) and Llama-style (untied, RMSNorm, SwiGLU, RoPE, GQA 8 heads / 4 groups,
hidden 64, FFN 96), 2 layers, 16 tokens. megatron-core builds and initialises them itself
(GPTModel with the local spec, use_cpu_initialization: its init_method fills the whole
[Vp, H] master weight, padding rows included); the padding rows are then multiplied by 5, as
trained padding rows stand out (they learn large negative logits), so that a tool that drops,
zeroes or re-draws them cannot pass.

1. The loss. mg-train --load of megatron-core's weights, written under either layer naming
   (the local spec's input_layernorm / pre_mlp_layernorm, or TransformerEngine's
   linear_qkv.layer_norm_weight / linear_fc1.layer_norm_weight), logs for iteration 1 the
   loss GPTModel(..., labels=...) gives on the same batch (mg-train's --dump-samples):
   |ours - theirs| <= 1e-6 * theirs. The cross-entropy over the 1000 real columns is far
   from it (the test sees the padding columns); --mask-vocab-padding gives that one.
2. The initialisation. mg-train's initial weights (one iteration at --lr 0, saved) have the
   distribution of megatron-core's: N(0, 0.02) in the real and in the padding rows of the
   embedding and output layer, no row zero.
3. Resharding. In four processes (gloo), megatron-core builds its TP=1 model (four
   data-parallel replicas), saves it as a distributed checkpoint (dist_checkpointing.save)
   and loads that into TP=2 (two replicas) and TP=4 GPTModels (dist_checkpointing.load): its
   own shards. The same weights as
   a `torch`-format local-spec checkpoint, resharded by mg-convert TP1 -> TP2 -> TP4
   (--verify), equal them bit for bit, padding rows, the GQA QKV interleave and the SwiGLU
   fc1 split included, and keep the local naming. The HF export trims to V. A change of
   padded size follows Megatron's converter (tools/checkpoint/saver_base.py, receive_lm's
   pad_weight at NVIDIA/Megatron-LM 00caa53a: truncate to the new size, or append copies of
   the last row), restated here as pad_weight().
4. Resume. megatron-core trains the Llama model 2 iterations on mg-train's samples (its
   FP32Optimizer around AdamW and OptimizerParamScheduler, test_train_mcore.py's set-up) and
   writes a local-spec checkpoint (model, optimizer, scheduler) at iteration 2; mg-train
   resumes it and logs for iterations 3 and 4 the losses megatron-core computes when it
   continues (1e-6 relative; measured ~1e-8 and ~8e-8), and from megatron-core's initial
   weights its four iterations log megatron-core's four losses. mg-train's own
   --transformer-impl local checkpoint loads into megatron-core's local GPTModel and
   optimizer without renaming, every moment on its parameter.

CUDA assumptions of megatron-core 0.16.1 patched for the CPU, in the shard processes only
(test_dist_checkpointing_needs_cuda pins each line): dist_checkpointing.save calls
torch.cuda.synchronize() after staging and torch.cuda.current_device() when finalizing, and
its writer process measures its memory with psutil (not installed: it raises, the save
hangs), so torch.cuda.synchronize is a no-op, current_device returns "cpu" and
filesystem_async._process_memory returns 0 there.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import conftest
from test_convert import (assert_same_tensors, model_tensors, read_hf, read_megatron, to_hf,
                          to_megatron)
from test_convert_mcore import build_gpt_model, mcore  # noqa: F401
from test_train_ckpt import ENV, _run, _torch_load, data  # noqa: F401
from test_train_mcore import TEOrderChunk, local_spec_map, megatron_optimizer, megatron_scheduler

V, VP, SEQ, GBS = 1000, 1024, 16, 4
PAD_SCALE = 5.0
MODELS = {
    "gpt2": ["--num-layers", 2, "--hidden-size", 32, "--num-attention-heads", 4],
    "llama": ["--num-layers", 2, "--hidden-size", 64, "--num-attention-heads", 8,
              "--normalization", "RMSNorm", "--swiglu", "--position-embedding-type", "rope",
              "--disable-bias-linear", "--group-query-attention", "--num-query-groups", 4,
              "--ffn-hidden-size", 96, "--untie-embeddings-and-output-weights"],
}
VOCAB_TENSORS = ("embedding.word_embeddings.weight", "output_layer.weight")


def train_args(data, arch, iters, lr="1e-2", extra=()):
    return ["mg-train", *MODELS[arch], "--seq-length", SEQ, "--max-position-embeddings", SEQ,
            "--micro-batch-size", 2, "--global-batch-size", GBS, "--train-iters", iters,
            "--lr", lr, "--min-lr", "0" if lr == "0" else "1e-4", "--lr-decay-style", "cosine",
            "--lr-warmup-iters", 2 if iters > 2 else 0, "--clip-grad", 0, "--vocab-size", V, "--data-path", data,
            "--split", "95,5,0", "--log-interval", 1, "--eval-iters", 0, *extra]


@pytest.fixture(scope="module")
def initial(data, tmp_path_factory):
    """{arch: mg-train's checkpoint after one iteration at --lr 0}: its initial weights and
    the args every megatron-core model and checkpoint here is built from."""
    out = {}
    for arch in MODELS:
        d = tmp_path_factory.mktemp(f"init_{arch}")
        _run(train_args(data, arch, 1, lr="0", extra=["--save", d / "ck", "--save-interval", 1]),
             d / "m.jsonl")
        out[arch] = _torch_load(d / "ck" / "iter_0000001" / "mp_rank_00" / "model_optim_rng.pt")
    return out


def mcore_model(args, seed, scale_padding=True):
    """megatron-core's GPTModel (local spec) initialised by megatron-core from torch's CPU
    generator seeded with `seed`; the padding rows of the vocabulary tensors scaled."""
    torch.manual_seed(seed)
    model = build_gpt_model(None, args, init=True)
    with torch.no_grad():
        for name, p in model.named_parameters():
            assert p.abs().sum() > 0 or "bias" in name, f"{name}: megatron-core did not initialise it"
            if name in VOCAB_TENSORS and scale_padding:
                p[V:] *= PAD_SCALE
    return model


def te_names(sd, args):
    """A local-spec state dict under TransformerEngine names (megatron-core's own map)."""
    te_map = {local: te for te, local in local_spec_map(args).items()}
    out = {}
    for k, v in sd.items():
        parts = k.split(".", 3)
        if k.startswith("decoder.layers.") and len(parts) == 4:
            for local, te in te_map.items():
                if parts[3].startswith(local):
                    k = ".".join(parts[:3]) + "." + te + parts[3][len(local):]
                    break
        out[k] = v
    return out


def write_megatron(root, model_sd, args, naming="local", iteration=None, **extra):
    """A Megatron `torch`-format TP=1 checkpoint of model_sd ('release' unless iteration)."""
    a = argparse.Namespace(**vars(args))
    a.transformer_impl = naming
    if iteration is None:  # a release: nothing consumed yet
        a.iteration = a.consumed_train_samples = a.consumed_valid_samples = 0
    sd = te_names(model_sd, args) if naming == "transformer_engine" else dict(model_sd)
    name = "release" if iteration is None else f"iter_{iteration:07d}"
    f = root / name / "mp_rank_00" / "model_optim_rng.pt"
    f.parent.mkdir(parents=True)
    torch.save({"args": a, "checkpoint_version": 3.0, "iteration": iteration or 0, "model": sd,
                **extra}, f)
    (root / "latest_checkpointed_iteration.txt").write_text(name if iteration is None else str(iteration))
    return root


def samples(data, arch, n):
    """mg-train's first n training samples (--dump-samples) as tensors."""
    p = conftest.run_mg(train_args(data, arch, 1) + ["--dump-samples", n], env=ENV)
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["sample"] for r in rows] == list(range(n))
    return {k: torch.tensor([r[src] for r in rows]) for k, src in
            (("ids", "tokens"), ("labels", "labels"), ("mask", "loss_mask"), ("pos", "position_ids"))}


def cut(batch, a, b):
    return {k: v[a:b] for k, v in batch.items()}


def mcore_forward(model, b, monkeypatch, labels=True):
    """Per-token loss [b, s] (labels) or logits [b, s, Vp] of GPTModel, explicit causal mask
    and torch.cuda.current_device patched (test_convert_mcore.py's docstring)."""
    n = b["ids"].shape[1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)[None, None]
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "current_device", lambda: "cpu")
        return model(b["ids"], b["pos"], attention_mask=mask,
                     labels=b["labels"] if labels else None)


def mean_loss(per_token, b):
    m = b["mask"].float()
    return (per_token * m).sum() / m.sum()


# --------------------------------------------------------------------------------------------
# 1. the loss over the padded vocabulary

@pytest.mark.parametrize("arch", sorted(MODELS))
@pytest.mark.parametrize("naming", ["local", "transformer_engine"])
def test_iteration1_loss_equals_mcore(arch, naming, data, initial, mcore, tmp_path, monkeypatch):
    args = initial[arch]["args"]
    model = mcore_model(args, seed=5)
    ck = write_megatron(tmp_path / "ck", model.state_dict(), args, naming)
    batch = samples(data, arch, GBS)
    with torch.no_grad():
        theirs = float(mean_loss(mcore_forward(model, batch, monkeypatch), batch))
        logits = mcore_forward(model, batch, monkeypatch, labels=False)
        assert logits.shape[-1] == VP
        per = torch.nn.functional.cross_entropy(logits[..., :V].reshape(-1, V),
                                                batch["labels"].reshape(-1), reduction="none")
        real_only = float(mean_loss(per.view(batch["labels"].shape), batch))
    ours = _run(train_args(data, arch, 1, extra=["--load", ck]), tmp_path / "a.jsonl")
    assert [i for i, _ in ours] == [1]
    print(f"{arch} {naming}: mg-train {ours[0][1]!r} megatron-core {theirs!r} (rel "
          f"{abs(ours[0][1] - theirs) / theirs:.2e}); real columns only {real_only!r}")
    assert abs(ours[0][1] - theirs) <= 1e-6 * theirs, (ours, theirs)
    assert abs(real_only - theirs) > 1e-3 * theirs, "the padding columns do not matter here"
    hf = _run(train_args(data, arch, 1, extra=["--load", ck, "--mask-vocab-padding"]),
              tmp_path / "b.jsonl")
    assert abs(hf[0][1] - real_only) <= 1e-6 * real_only, (hf, real_only)


def test_mg_train_refuses_a_mixed_or_unknown_naming(data, initial, mcore, tmp_path):
    """A file with a tensor of neither naming is refused, naming the tensor."""
    args = initial["gpt2"]["args"]
    sd = dict(mcore_model(args, seed=6).state_dict())
    sd["decoder.layers.0.input_layernorm.weight_typo"] = sd.pop("decoder.layers.0.input_layernorm.weight")
    ck = write_megatron(tmp_path / "ck", sd, args)
    p = _run(train_args(data, "gpt2", 1, extra=["--load", ck]), tmp_path / "m.jsonl", check=False)
    assert p.returncode == 1 and "decoder.layers.0.input_layernorm.weight" in p.stderr, p.stderr


# --------------------------------------------------------------------------------------------
# 2. the initialisation of the padding rows

def assert_normal(x, std, what):
    """x looks like N(0, std): mean, standard deviation and the share inside one std, each
    within 4.5 standard errors; no row is zero and every row's spread is plausible."""
    n = x.numel()
    x = x.double()
    assert abs(float(x.mean())) <= 4.5 * std / n ** 0.5, f"{what}: mean {float(x.mean())}"
    assert abs(float(x.std()) / std - 1) <= 4.5 / (2 * n) ** 0.5, f"{what}: std {float(x.std())}"
    inside = float((x.abs() < std).double().mean())
    assert abs(inside - 0.6827) <= 4.5 * (0.6827 * 0.3173 / n) ** 0.5, f"{what}: {inside} inside 1 std"
    rows = x.std(dim=1)
    assert bool((rows > 0.4 * std).all() and (rows < 1.6 * std).all()), f"{what}: a row's spread {rows}"


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_initial_weights_have_megatrons_distribution(arch, initial, mcore):
    ours = initial[arch]["model"]
    theirs = mcore_model(initial[arch]["args"], seed=7, scale_padding=False).state_dict()
    names = [n for n in VOCAB_TENSORS if n in ours]
    assert names == [n for n in VOCAB_TENSORS if isinstance(theirs.get(n), torch.Tensor)]
    for name in names:
        for who, sd in (("mg-train", ours), ("megatron-core", theirs)):
            assert sd[name].shape == (VP, sd[name].shape[1])
            assert_normal(sd[name][:V], 0.02, f"{who} {name} real rows")
            assert_normal(sd[name][V:], 0.02, f"{who} {name} padding rows")


# --------------------------------------------------------------------------------------------
# 3. resharding against megatron-core's own shards

SHARDS_SCRIPT = r'''
import argparse, pathlib, sys
import torch
import torch.distributed as dist


def main():
    rank, world, d = int(sys.argv[1]), int(sys.argv[2]), pathlib.Path(sys.argv[3])
    sys.path.insert(0, sys.argv[4])
    torch.set_num_threads(1)
    # megatron-core 0.16.1's CUDA assumptions on this path (test_dist_checkpointing_needs_cuda)
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.current_device = lambda: "cpu"
    import megatron.core.dist_checkpointing.strategies.filesystem_async as fa
    fa._process_memory = lambda: 0
    from megatron.core import dist_checkpointing, parallel_state
    from megatron.core.tensor_parallel.random import initialize_rng_tracker
    from test_vocab_pad_mcore import mcore_model
    from test_convert_mcore import build_gpt_model
    dist.init_process_group("gloo", init_method=f"file://{d}/rendezvous", rank=rank,
                            world_size=world)
    torch.serialization.add_safe_globals([argparse.Namespace])
    archs = sorted(torch.load(d / "args.pt").items())
    # TP=1 (data-parallel replicas of one model: the first writes): megatron-core's model and
    # its distributed checkpoint
    parallel_state.initialize_model_parallel(1, 1)
    initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)
    for arch, args in archs:
        model = mcore_model(args, seed=11)
        if rank == 0:
            torch.save(model.state_dict(), d / f"full_{arch}.pt")
            (d / f"dist_{arch}").mkdir()
        dist.barrier()
        dist_checkpointing.save(model.sharded_state_dict(), str(d / f"dist_{arch}"))
    parallel_state.destroy_model_parallel()
    # loaded into TP=2 (two replicas) and TP=4 models: megatron-core's own shards
    for tp in (2, 4):
        parallel_state.initialize_model_parallel(tp, 1)
        initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)
        for arch, args in archs:
            model = build_gpt_model(None, args)
            model.load_state_dict(dist_checkpointing.load(model.sharded_state_dict(),
                                                          str(d / f"dist_{arch}")))
            if rank < tp:
                torch.save(model.state_dict(), d / f"tp{tp}_{arch}_{rank}.pt")
        parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def run_ranks(d, world):
    script = d / "shards.py"
    script.write_text(SHARDS_SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(world), str(d),
                               str(pathlib.Path(__file__).parent)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    outs = [p.communicate()[0] for p in procs]
    for r, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"megatron-core rank {r} of {world} failed:\n{out[-4000:]}"


@pytest.fixture(scope="module")
def mcore_shards(initial, tmp_path_factory):
    """A folder with full_{arch}.pt (megatron-core's TP=1 model) and tp{2,4}_{arch}_{rank}.pt
    (its shards after dist_checkpointing.load at TP 2 and 4)."""
    d = tmp_path_factory.mktemp("mcore_shards")
    torch.save({arch: initial[arch]["args"] for arch in MODELS}, d / "args.pt")
    run_ranks(d, 4)
    return d


def load_plain(path):
    torch.serialization.add_safe_globals([argparse.Namespace])
    return {k: v for k, v in torch.load(path, weights_only=True).items()
            if isinstance(v, torch.Tensor) and not k.endswith("._extra_state")}


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_reshard_equals_mcore_shards(arch, initial, mcore_shards, tmp_path):
    full = load_plain(mcore_shards / f"full_{arch}.pt")
    emb = full["embedding.word_embeddings.weight"]
    assert bool((emb[V:].abs().sum(dim=1) > 0).all()), "padding rows must be non-zero here"
    src = write_megatron(tmp_path / "tp1", full, initial[arch]["args"])
    tp2 = to_megatron(src, tmp_path / "tp2", 2, 1, "--verify")
    tp4 = to_megatron(tp2, tmp_path / "tp4", 4, 1, "--verify")
    for tp, out in ((2, tp2), (4, tp4)):
        _, _, ranks = read_megatron(out)
        assert sorted(ranks) == [(r, 0) for r in range(tp)]
        for r in range(tp):
            theirs = load_plain(mcore_shards / f"tp{tp}_{arch}_{r}.pt")
            assert theirs["embedding.word_embeddings.weight"].shape[0] == VP // tp
            assert_same_tensors(model_tensors(ranks[(r, 0)], f"TP{tp} rank {r}"), theirs,
                                f"{arch}: mg-convert TP{tp} rank {r} vs megatron-core's shard")
            a = ranks[(r, 0)]["args"]
            assert (a.transformer_impl, a.padded_vocab_size, a.tensor_model_parallel_size) == \
                ("local", VP, tp)
    hf = read_hf(to_hf(tp4, tmp_path / "hf", "--true-vocab-size", V))
    exported = [v for k, v in hf.items() if k.endswith(("wte.weight", "embed_tokens.weight"))]
    assert len(exported) == 1 and torch.equal(exported[0], emb[:V])


def test_transformer_impl_overrides_the_source_naming(initial, mcore_shards, tmp_path):
    full = load_plain(mcore_shards / "full_llama.pt")
    src = write_megatron(tmp_path / "tp1", full, initial["llama"]["args"])
    out = to_megatron(src, tmp_path / "te", 2, 1, "--transformer-impl", "transformer_engine")
    _, _, ranks = read_megatron(out)
    assert ranks[(0, 0)]["args"].transformer_impl == "transformer_engine"
    assert "decoder.layers.1.mlp.linear_fc1.layer_norm_weight" in ranks[(1, 0)]["model"]
    assert not any("layernorm" in k and "final" not in k for k in ranks[(1, 0)]["model"])


def pad_weight(table, vp):
    """Megatron's converter (tools/checkpoint/saver_base.py, receive_lm.pad_weight): the
    source's full padded table, cut to the new padded size or grown by copies of its last
    row."""
    if table.shape[0] > vp:
        return table[:vp]
    return torch.cat([table, table[-1:].expand(vp - table.shape[0], -1)])


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_padded_size_change_follows_megatrons_converter(arch, initial, mcore_shards, tmp_path):
    """--make-vocab-size-divisible-by 96 (then the source's, recorded in args): TP2 pads 1000
    to 1152 (1024 + 128 copies of row 1023), TP1 to 1056 (cut), TP4 to 1152 again (1056 + 96
    copies of row 1055); every other tensor as a plain reshard."""
    full = load_plain(mcore_shards / f"full_{arch}.pt")
    src = write_megatron(tmp_path / "tp1", full, initial[arch]["args"])
    table = {n: full[n] for n in VOCAB_TENSORS if n in full}
    chain = [("a", 2, 1152, ["--make-vocab-size-divisible-by", 96]), ("b", 1, 1056, []),
             ("c", 4, 1152, [])]
    prev = src
    for name, tp, vp, extra in chain:
        out = to_megatron(prev, tmp_path / name, tp, 1, "--verify", *extra)
        _, _, ranks = read_megatron(out)
        table = {n: pad_weight(t, vp) for n, t in table.items()}
        for r in range(tp):
            a = ranks[(r, 0)]["args"]
            assert (a.padded_vocab_size, a.make_vocab_size_divisible_by) == (vp, 96)
            got = model_tensors(ranks[(r, 0)], name)
            for n, t in table.items():
                assert torch.equal(got[n], t.chunk(tp)[r]), f"{arch} {name}: {n} rank {r}"
        prev = out
    _, _, ranks = read_megatron(prev)
    _, _, plain = read_megatron(to_megatron(src, tmp_path / "plain", 4, 1))
    for r in range(4):
        got, want = model_tensors(ranks[(r, 0)], "c"), model_tensors(plain[(r, 0)], "plain")
        for n in want:
            if n not in VOCAB_TENSORS:
                assert torch.equal(got[n], want[n]), f"{arch}: {n} rank {r}"


def test_dist_checkpointing_needs_cuda(mcore):
    """The three lines SHARDS_SCRIPT patches around, pinned on megatron-core's source: when
    this fails, megatron-core changed and the patch may go."""
    import inspect
    import megatron.core.dist_checkpointing.strategies.filesystem_async as fa
    import megatron.core.dist_checkpointing.strategies.state_dict_saver as sds
    assert "torch.cuda.synchronize()" in inspect.getsource(fa.FileSystemWriterAsync.preload_tensors)
    assert "device=torch.cuda.current_device()" in \
        inspect.getsource(sds.save_state_dict_async_finalize)
    assert "psutil is not installed" in inspect.getsource(fa._process_memory)


# --------------------------------------------------------------------------------------------
# 4. resuming a local-spec checkpoint that megatron-core wrote

def mcore_train_step(model, opt, sched, batch, monkeypatch):
    """One Megatron iteration: 2 micro-batches (loss / 2 each), AdamW, the scheduler's step;
    returns the iteration's loss."""
    opt.zero_grad()
    total = 0.0
    for mb in (cut(batch, 0, 2), cut(batch, 2, 4)):
        loss = mean_loss(mcore_forward(model, mb, monkeypatch), mb) / 2
        loss.backward()
        total += float(loss.detach())
    opt.step()
    sched.step(increment=GBS)
    return total


def test_resume_local_spec_checkpoint_with_mcores_losses(data, initial, mcore, tmp_path,
                                                         monkeypatch):
    args = argparse.Namespace(**vars(initial["llama"]["args"]))
    args.train_iters, args.lr, args.min_lr = 4, 1e-2, 1e-4
    model = mcore_model(args, seed=13).train()
    opt = megatron_optimizer(mcore, model, model, args, monkeypatch)
    sched = megatron_scheduler(opt, args)
    batch = samples(data, "llama", 4 * GBS)
    theirs = [mcore_train_step(model, opt, sched, cut(batch, i * GBS, (i + 1) * GBS), monkeypatch)
              for i in range(2)]
    args.iteration, args.consumed_train_samples, args.consumed_valid_samples = 2, 2 * GBS, 0
    ck = write_megatron(tmp_path / "ck", model.state_dict(), args, iteration=2,
                        optimizer=opt.state_dict(), opt_param_scheduler=sched.state_dict(),
                        num_floating_point_operations_so_far=0)
    theirs += [mcore_train_step(model, opt, sched, cut(batch, i * GBS, (i + 1) * GBS), monkeypatch)
               for i in (2, 3)]
    ours = _run(train_args(data, "llama", 4, extra=["--load", ck]), tmp_path / "m.jsonl")
    print(f"resumed: mg-train {ours} megatron-core {theirs}")
    assert [i for i, _ in ours] == [3, 4]
    assert abs(ours[0][1] - theirs[2]) <= 1e-6 * theirs[2], (ours, theirs)
    assert abs(ours[1][1] - theirs[3]) <= 1e-6 * theirs[3], (ours, theirs)
    # and from megatron-core's initial weights ('release': a new optimizer), mg-train's four
    # iterations log megatron-core's four losses
    init = write_megatron(tmp_path / "init", mcore_model(args, seed=13).state_dict(), args)
    whole = _run(train_args(data, "llama", 4, extra=["--load", init]), tmp_path / "w.jsonl")
    print(f"from initial weights: mg-train {whole}")
    assert [i for i, _ in whole] == [1, 2, 3, 4]
    assert abs(whole[0][1] - theirs[0]) <= 1e-6 * theirs[0], (whole, theirs)
    for (_, a), b in zip(whole[1:], theirs[1:]):
        assert abs(a - b) <= 1e-6 * b, (whole, theirs)


@pytest.mark.parametrize("arch", sorted(MODELS))
def test_mg_train_local_spec_checkpoint_loads_into_mcore(arch, data, mcore, tmp_path,
                                                         monkeypatch):
    """--transformer-impl local: megatron-core's local-spec GPTModel loads the 'model' dict as
    it is (strict), its optimizer (parameter groups over the local spec's parameter order)
    the 'optimizer', and every moment lands on its parameter: equal to the moment the
    TE-named checkpoint of the same run holds under that parameter's TE name."""
    runs = {}
    for impl in ("local", "transformer_engine"):
        ck = tmp_path / impl
        _run(train_args(data, arch, 3, extra=["--save", ck, "--save-interval", 3,
                                                      "--transformer-impl", impl]),
             tmp_path / f"{impl}.jsonl")
        runs[impl] = _torch_load(ck / "iter_0000003" / "mp_rank_00" / "model_optim_rng.pt")
    local, te = runs["local"], runs["transformer_engine"]
    assert local["args"].transformer_impl == "local"
    assert te_names(local["model"], local["args"]).keys() == te["model"].keys()
    model = build_gpt_model(mcore, local["args"])
    result = model.load_state_dict(local["model"], strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    args = local["args"]
    opt = megatron_optimizer(mcore, model, model, args, monkeypatch)
    opt.load_state_dict(local["optimizer"])
    # the TE file's moments by TE name: its indices run over the decay tensors, then the others,
    # each in the TE spec's parameter order (TEOrderChunk, test_train_mcore.py)
    chunk = TEOrderChunk(model, te["model"], args)
    te_order = [n for n, p in chunk.named_parameters() if p.dim() == 2] + \
        [n for n, p in chunk.named_parameters() if p.dim() != 2]
    te_moments = dict(zip(te_order, (te["optimizer"]["state"][i] for i in range(len(te_order)))))
    te_name = dict(chunk.named_parameters())
    te_name = {p: n for n, p in te_name.items()}
    assert len(opt.optimizer.state) == len(te_order)
    for p, st in opt.optimizer.state.items():
        n = te_name[p]
        assert float(st["step"]) == 3, n
        assert torch.equal(st["exp_avg"], te_moments[n]["exp_avg"]), n
        assert torch.equal(st["exp_avg_sq"], te_moments[n]["exp_avg_sq"]), n
        assert torch.equal(p.detach(), te["model"][n]), n
