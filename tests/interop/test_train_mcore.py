"""megatron-core 0.16.1 loads what mg-train writes (--save) and continues from it: its own
GPTModel takes the weights, its FP32Optimizer and OptimizerParamScheduler the optimizer part,
and Megatron-LM's checkpoint loader finds the arguments it checks. CPU only, TP=1.

Setup: the `mcore` fixture and build_gpt_model of test_convert_mcore.py (its docstring lists
the CPU workarounds: gloo group of size 1, inference RNG tracker, explicit causal mask,
torch.cuda.current_device patched; here for every forward, see
test_attention_buffer_needs_cuda). mg-train trains the tiny GPT-2-style and Llama-style models
of test_train_ckpt.py for 6 iterations and saves after each one.

1. The model. mg-train names its tensors after Megatron's default TransformerEngine spec
   (args.transformer_impl "transformer_engine": linear_qkv.layer_norm_weight, ...), and
   TransformerEngine cannot be installed on a CPU host. So GPTModel is built from the
   checkpoint's args with the local spec and the keys are renamed with the map megatron-core
   itself declares between the two specs (get_gpt_layer_local_spec().submodules.
   sharded_state_dict_keys_map; Megatron applies it to distributed checkpoints only, a
   `torch`-format file with TE names does not load into the local spec, asserted).
   load_state_dict(strict=True) must succeed, and the logits on a batch must equal those of
   mg-train's model on the same weights (build/tests/tools/model_probe on mg-convert's HF
   export) and of transformers on that export: |diff| <= 1e-4 * max|logit| + 1e-5.
2. The optimizer, for fp32 training without --use-distributed-optimizer: Megatron's
   FP32Optimizer around torch.optim.AdamW (its choice when neither TransformerEngine nor Apex
   is installed), with the parameter groups of megatron.core.optimizer._get_param_groups over
   the parameters in the TE spec's order (TEOrderChunk), loads the iteration-5 'optimizer';
   OptimizerParamScheduler loads 'opt_param_scheduler' (and must give the rate mg-train
   logged); then one step with the gradient mg-train applied at iteration 6 must reproduce
   the iteration-6 checkpoint: weights (atol 1e-6), moments (rtol 1e-5 / 1e-4), step 6.
   mg-convert reshards that state dict of Megatron's (to TP=2 and back, moments included)
   without changing a bit of it.
3. megatron/training/checkpointing.py (Megatron-LM; neither megatron-core's wheel nor its
   source distribution on PyPI has megatron/training): read with `git show core_v0.16.1:...` from a clone of
   NVIDIA/Megatron-LM named by $MG_MEGATRON_LM_GIT. These five tests are optional (README,
   tests/interop/expected-skips.txt): without the variable they skip; with it, a clone that
   lacks the tag fails them:
   its own check_checkpoint_args and load_args_from_checkpoint run on our args; the one
   thing load_checkpoint needs that we do not write, 'rng_state', is pinned to its lines
   (a resume needs --no-load-rng), and so is its optimizer branch (--no-load-optim skips the
   scheduler too; another optimizer class's KeyError; reload_model_params otherwise).
"""
import argparse
import ast
import json
import os
import pathlib
import subprocess

import numpy
import pytest
import torch

import conftest
from test_convert_mcore import build_gpt_model, hf_logits, mcore, mcore_logits  # noqa: F401
from test_train_ckpt import ENV, V, _args, _ckpt_file, _run, _torch_load, data  # noqa: F401

MEGATRON_GIT = os.environ.get("MG_MEGATRON_LM_GIT")
MEGATRON_TAG = "core_v0.16.1"


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def trained(request, data, tmp_path_factory):
    """(arch, checkpoint dir, mg-train's arguments, work dir): 6 iterations, saved after each."""
    arch = request.param
    d = tmp_path_factory.mktemp(f"mcore_{arch}")
    args = _args(data, arch, extra=["--save", d / "ck", "--save-interval", 1])
    _run(args, d / "m.jsonl")
    return arch, d / "ck", args, d


def local_spec_map(args):
    """{TE-spec key prefix inside a layer: local-spec prefix}, as megatron-core's local layer
    spec declares it (sharded_state_dict_keys_map: local name -> TE name)."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    spec = get_gpt_layer_local_spec(normalization=args.normalization)
    keys_map = spec.submodules.sharded_state_dict_keys_map
    assert keys_map, "megatron-core's local spec no longer declares its TE names"
    return {te: local for local, te in keys_map.items()}


def local_name(key, te_map):
    """A TE-spec state-dict key under its local-spec name (decoder.layers.N.<rest>)."""
    parts = key.split(".", 3)
    if key.startswith("decoder.layers.") and len(parts) == 4:
        for te, local in te_map.items():
            if parts[3].startswith(te):
                return ".".join(parts[:3]) + "." + local + parts[3][len(te):]
    return key


def to_local_names(model_sd, args):
    """The TE-spec 'model' dict under local-spec names (same tensors, same order)."""
    te_map = local_spec_map(args)
    return {local_name(k, te_map): v for k, v in model_sd.items()}


def load_mcore(mcore, ck, it=6):
    """(checkpoint dict, GPTModel built from its args with the renamed 'model' loaded strictly)."""
    sd = _torch_load(_ckpt_file(ck, it))
    model = build_gpt_model(mcore, sd["args"])
    result = model.load_state_dict(to_local_names(sd["model"], sd["args"]), strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    return sd, model


def probe_logits(args, ck, tmp_path, ids):
    """mg-train's model (model_probe, reference kernels) on ck's weights, exported by mg-convert."""
    import safetensors.torch as st
    hf = tmp_path / "hf"
    conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", hf, "--saver", "hf",
                     "--true-vocab-size", V, "--drop-optimizer-state", "--quiet"])
    st.save_file({"ids": ids.to(torch.int32), "targets": ids.roll(-1, 1).to(torch.int32)},
                 str(tmp_path / "input.safetensors"))
    conftest.run_mg(["model_probe", "ref", "default", hf / "model.safetensors",
                     tmp_path / "input.safetensors", tmp_path] + args[1:], env=ENV)
    return hf, st.load_file(str(tmp_path / "out.safetensors"))["logits"]


def assert_logits(a, ref, what):
    err = float((a.double() - ref.double()).abs().max())
    assert a.shape == ref.shape and err <= 1e-4 * float(ref.abs().max()) + 1e-5, f"{what}: {err}"


def test_mcore_loads_and_matches_our_model(trained, mcore, tmp_path, monkeypatch):
    """GPTModel (local spec) from the checkpoint's args loads its renamed 'model' strictly and
    gives mg-train's logits; the TE names themselves do not load into the local spec."""
    arch, ck, args, _ = trained
    sd, model = load_mcore(mcore, ck)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*input_layernorm"):
        build_gpt_model(mcore, sd["args"]).load_state_dict(sd["model"], strict=True)
    ids = torch.tensor(numpy.random.default_rng(11).integers(0, V, size=(2, 16)), dtype=torch.long)
    # patched for every model, not only RoPE: see test_attention_buffer_needs_cuda
    ours = mcore_logits(model, ids, V, monkeypatch)
    hf, probe = probe_logits(args, ck, tmp_path, ids)
    assert_logits(ours, probe, f"{arch}: megatron-core vs mg-train's model")
    assert_logits(ours, hf_logits(hf, ids), f"{arch}: megatron-core vs transformers")


def test_attention_buffer_needs_cuda(mcore):
    """Why every forward here runs with torch.cuda.current_device patched (test_convert_mcore
    patches it for RoPE only): DotProductAttention takes its score buffer from
    parallel_state.get_global_memory_buffer(), which allocates it on
    torch.cuda.current_device() the first time a (name, dtype) needs a larger one. A GPT-2
    forward on a CPU-only host therefore fails there unless an earlier patched forward left a
    large enough CPU buffer (test_convert_mcore.py's gpt2 case passes only after its llama
    case: `pytest -k "loads_converted and gpt2"` alone fails with "Found no NVIDIA driver")."""
    import inspect
    from megatron.core.transformer.dot_product_attention import DotProductAttention
    from megatron.core.utils import GlobalMemoryBuffer
    assert "parallel_state.get_global_memory_buffer().get_tensor(" in \
        inspect.getsource(DotProductAttention.forward)
    assert "device=torch.cuda.current_device()," in inspect.getsource(GlobalMemoryBuffer.get_tensor)


class TEOrderChunk:
    """The model chunk megatron.core.optimizer._get_param_groups would see with the TE spec:
    GPTModel's parameters under their checkpoint (TE) names, in the TE spec's registration
    order. The local spec registers per layer input_layernorm, self_attention (linear_proj,
    then linear_qkv: Attention.__init__ builds linear_proj before SelfAttention.__init__ builds
    linear_qkv; asserted in test_te_parameter_order), pre_mlp_layernorm, mlp. The TE spec has
    no separate norms: TransformerEngine's LayerNormLinear registers layer_norm_weight and
    layer_norm_bias before its weight and bias. So the TE order is the local one with each
    layer's input_layernorm moved to just before its linear_qkv (pre_mlp_layernorm already
    sits just before linear_fc1)."""

    def __init__(self, model, te_keys, args):
        te_map = local_spec_map(args)
        to_te = {local_name(k, te_map): k for k in te_keys}
        local = dict(model.named_parameters())
        self.params = []
        for name, p in local.items():
            if ".input_layernorm." in name:
                continue
            if ".self_attention.linear_qkv.weight" in name:
                norm = name.split(".self_attention.")[0] + ".input_layernorm."
                self.params += [(to_te[n], q) for n, q in local.items() if n.startswith(norm)]
            self.params.append((to_te[name], p))

    def named_parameters(self):
        return iter(self.params)


def megatron_optimizer(mcore, chunk, model, a, monkeypatch):
    """Megatron's optimizer for fp32 training without --use-distributed-optimizer, built by
    megatron.core.optimizer from the run's settings (mg-train's defaults: Adam, betas 0.9/0.999,
    eps 1e-8, weight decay 0.01). clip_grad 0: the gradients given to it are already clipped.
    FP32Optimizer.__init__ puts its loss scale on 'cuda' (test_fp32_optimizer_needs_cuda):
    built with torch.tensor's device argument dropped, nothing else changed."""
    import megatron.core.optimizer as mo
    from megatron.core.optimizer import OptimizerConfig
    cfg = OptimizerConfig(optimizer="adam", lr=a.lr, min_lr=a.min_lr, weight_decay=0.01,
                          adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-8, clip_grad=0.0,
                          bf16=False, fp16=False, use_distributed_optimizer=False)
    groups = mo._get_param_groups([chunk], cfg, None)
    tensor = torch.tensor
    with monkeypatch.context() as m:
        m.setattr(torch, "tensor", lambda *x, device=None, **k: tensor(*x, **k))
        opt = mo._get_megatron_optimizer_based_on_param_groups(cfg, [model], groups)
    assert type(opt).__name__ == "FP32Optimizer" and type(opt.optimizer) is torch.optim.AdamW
    return opt


def megatron_scheduler(opt, a):
    """OptimizerParamScheduler as megatron/training/training.py builds it for this run
    (iteration-based: steps in samples; warmup 2 iterations; --lr-warmup-init 0; constant wd)."""
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    gbs, wd = a.global_batch_size, 0.01
    return OptimizerParamScheduler(
        opt, init_lr=0.0, max_lr=a.lr, min_lr=a.min_lr, lr_warmup_steps=2 * gbs,
        lr_decay_steps=a.train_iters * gbs, lr_decay_style="cosine", start_wd=wd, end_wd=wd,
        wd_incr_steps=a.train_iters * gbs, wd_incr_style="constant",
        use_checkpoint_opt_param_scheduler=False, override_opt_param_scheduler=False)


def megatron_step(trained, mcore, monkeypatch):
    """Megatron's FP32Optimizer and OptimizerParamScheduler, loaded from the iteration-5
    checkpoint, after one step with the gradient mg-train applied at iteration 6 (recovered
    from the first moments: g = (m6 - b1 m5) / (1 - b1)). Returns (optimizer, {parameter:
    checkpoint name}, iteration-6 checkpoint, moments of iteration 6 by name, learning rates
    the scheduler set, mg-train's logged ones)."""
    arch, ck, _, d = trained
    s5, model = load_mcore(mcore, ck, 5)
    s6 = _torch_load(_ckpt_file(ck, 6))
    a = s5["args"]
    chunk = TEOrderChunk(model, s5["model"], a)
    opt = megatron_optimizer(mcore, chunk, model, a, monkeypatch)
    opt.load_state_dict(s5["optimizer"])
    sched = megatron_scheduler(opt, a)
    sched.load_state_dict(s5["opt_param_scheduler"])
    lrs = [(g["lr"], g["weight_decay"]) for g in opt.param_groups]
    logged = {r["iteration"]: r["lr"] for r in map(json.loads, open(d / "m.jsonl"))
              if r["kind"] == "train"}
    inner, b1 = opt.optimizer, 0.9
    name = {p: n for n, p in chunk.named_parameters()}
    order = [name[p] for g in inner.param_groups for p in g["params"]]
    m6 = dict(zip(order, (s6["optimizer"]["state"][i] for g in s6["optimizer"]["param_groups"]
                          for i in g["params"])))
    for p, n in name.items():
        st = inner.state[p]
        assert float(st["step"]) == 5 and st["exp_avg"].shape == p.shape, n
        p.grad = (m6[n]["exp_avg"] - b1 * st["exp_avg"]) / (1 - b1)
    opt.step()
    return opt, name, s6, m6, lrs, logged


def test_megatron_optimizer_continues(trained, mcore, monkeypatch):
    """Megatron's optimizer and scheduler continue from our iteration-5 checkpoint exactly as
    mg-train did: after the step, the weights and both moments equal the iteration-6
    checkpoint. This pins, per tensor, the moments' order, the step count (bias correction),
    the learning rate of iteration 6 and each group's weight decay (none on biases and
    norms)."""
    opt, name, s6, m6, lrs, logged = megatron_step(trained, mcore, monkeypatch)
    # the log prints the rate after the scheduler's step: the one the next iteration uses
    assert [lr for lr, _ in lrs] == pytest.approx([logged[5]] * 2, rel=1e-6)
    assert [wd for _, wd in lrs] == [0.01, 0.0]
    for p, n in name.items():
        st = opt.optimizer.state[p]
        assert float(st["step"]) == 6, n
        torch.testing.assert_close(st["exp_avg"], m6[n]["exp_avg"], rtol=1e-5, atol=1e-9, msg=n)
        torch.testing.assert_close(st["exp_avg_sq"], m6[n]["exp_avg_sq"], rtol=1e-4, atol=1e-12,
                                   msg=n)
        torch.testing.assert_close(p.detach(), s6["model"][n], rtol=0, atol=1e-6, msg=n)


def test_mg_train_resumes_from_megatron_optimizer(trained, mcore, monkeypatch, tmp_path):
    """The other way: the iteration-6 checkpoint with Megatron's optimizer state dict (the one
    megatron_step ends with) in place of ours; mg-train resumes from it for 2 more iterations
    and logs the losses of resuming from its own state (1e-5: the state was rebuilt from
    recovered gradients). A file whose param groups lack wd_mult (older mg-train, another
    parameter order) is refused."""
    _, ck, args, _ = trained
    opt, _, s6, _, _, _ = megatron_step(trained, mcore, monkeypatch)
    more = list(args)
    more[more.index("--train-iters") + 1] = 8
    more = more[:more.index("--save")] + more[more.index("--save") + 4:]
    more += ["--override-opt_param-scheduler"]  # 8 iterations, not 6: Megatron's rule
    ref = _run(more + ["--load", ck], tmp_path / "ref.jsonl")
    assert [i for i, _ in ref] == [7, 8]
    theirs = tmp_path / "theirs"
    (theirs / "iter_0000006" / "mp_rank_00").mkdir(parents=True)
    (theirs / "latest_checkpointed_iteration.txt").write_text("6")
    torch.save(dict(s6, optimizer=opt.state_dict()), _ckpt_file(theirs, 6))
    got = _run(more + ["--load", theirs], tmp_path / "got.jsonl")
    assert [i for i, _ in got] == [7, 8]
    assert [x for _, x in got] == pytest.approx([x for _, x in ref], rel=1e-5)
    old = dict(s6)
    old["optimizer"]["param_groups"] = [{k: v for k, v in g.items() if k != "wd_mult"}
                                        for g in s6["optimizer"]["param_groups"]]
    torch.save(old, _ckpt_file(theirs, 6))
    p = _run(more + ["--load", theirs], tmp_path / "old.jsonl", check=False)
    assert p.returncode == 1 and "without Megatron's wd_mult" in p.stderr, p.stderr


def test_mg_convert_reshards_megatron_optimizer(trained, mcore, monkeypatch, tmp_path):
    """Megatron's own FP32Optimizer state dict (megatron_step's, iteration 6) goes through
    mg-convert to TP=2 and back to TP=1 with its moments: every tensor, moment, step count
    and param group (Megatron's keys, its 'params' numbering) comes back equal, and the
    iteration and the scheduler are kept."""
    opt, _, s6, _, _, _ = megatron_step(trained, mcore, monkeypatch)
    theirs = tmp_path / "theirs"
    (theirs / "iter_0000006" / "mp_rank_00").mkdir(parents=True)
    (theirs / "latest_checkpointed_iteration.txt").write_text("6")
    mine = dict(s6, optimizer=opt.state_dict())
    torch.save(mine, _ckpt_file(theirs, 6))
    tp2, back = tmp_path / "tp2", tmp_path / "back"
    conftest.run_mg(["mg-convert", "--load-dir", theirs, "--save-dir", tp2, "--verify",
                     "--target-tensor-parallel-size", 2])
    conftest.run_mg(["mg-convert", "--load-dir", tp2, "--save-dir", back, "--verify"])
    got = _torch_load(_ckpt_file(back, 6))
    assert got["iteration"] == 6 and got["opt_param_scheduler"] == mine["opt_param_scheduler"]
    for k, v in mine["model"].items():
        if isinstance(v, torch.Tensor):
            assert torch.equal(got["model"][k], v), k
    want, have = mine["optimizer"], got["optimizer"]
    assert have["param_groups"] == want["param_groups"]
    assert sorted(have["state"]) == sorted(want["state"])
    for i, e in want["state"].items():
        assert float(have["state"][i]["step"]) == float(e["step"]) == 6, i
        for m in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(have["state"][i][m], e[m]), (i, m)


def test_fp32_optimizer_needs_cuda(mcore):
    """Why megatron_optimizer drops torch.tensor's device: FP32Optimizer.__init__ puts its
    constant loss scale on 'cuda' (the only CUDA use on the path taken here)."""
    import inspect
    from megatron.core.optimizer.optimizer import FP32Optimizer
    assert "self._scale = torch.tensor([1.0], dtype=torch.float, device='cuda')" in \
        inspect.getsource(FP32Optimizer.__init__)


def test_te_parameter_order(mcore):
    """TEOrderChunk's premise, checked on megatron-core's source: Attention.__init__ builds
    linear_proj, and SelfAttention.__init__ builds linear_qkv after calling it."""
    import inspect
    from megatron.core.transformer.attention import Attention, SelfAttention
    assert "self.linear_proj = build_module(" in inspect.getsource(Attention.__init__)
    src = inspect.getsource(SelfAttention.__init__)
    assert src.index("super().__init__(") < src.index("self.linear_qkv = submodules.linear_qkv(")


# ---- megatron/training/checkpointing.py (Megatron-LM, not in the megatron-core package) ----

@pytest.fixture(scope="module")
def training_ckpt_src():
    if not MEGATRON_GIT:
        pytest.skip("optional: needs a git clone of NVIDIA/Megatron-LM with tag "
                    f"{MEGATRON_TAG} named by $MG_MEGATRON_LM_GIT")
    p = subprocess.run(["git", "-C", MEGATRON_GIT, "show",
                        f"{MEGATRON_TAG}:megatron/training/checkpointing.py"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.fail(f"$MG_MEGATRON_LM_GIT={MEGATRON_GIT}: no {MEGATRON_TAG} "
                    f"megatron/training/checkpointing.py there: {p.stderr.strip()}")
    return p.stdout


def megatron_function(src, name, **globals_):
    """Megatron's own function `name` from checkpointing.py, run with the given globals."""
    tree = ast.parse(src)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    ns = dict(globals_)
    exec(compile(ast.Module([node], []), f"checkpointing.py:{name}", "exec"), ns)
    return ns[name]


def test_check_checkpoint_args(trained, training_ckpt_src):
    """check_checkpoint_args (run on load unless --finetune) passes for a job with the same
    model: every field it compares is in our args (it reads them without defaults)."""
    _, ck, _, _ = trained
    a = _torch_load(_ckpt_file(ck, 6))["args"]
    job = argparse.Namespace(**vars(a), vocab_file=None, data_parallel_random_init=False,
                             phase_transition_iterations=None)
    check = megatron_function(training_ckpt_src, "check_checkpoint_args",
                              get_args=lambda: job, get_checkpoint_version=lambda: 3.0)
    check(a)
    job.num_attention_heads = 4
    with pytest.raises(AssertionError, match="num_attention_heads value from checkpoint"):
        check(a)


def test_check_checkpoint_args_tokenizer(data, tmp_path, training_ckpt_src):
    """With --vocab-file Megatron also compares tokenizer_type, max_position_embeddings,
    make_vocab_size_divisible_by and padded_vocab_size with the job's."""
    vocab = conftest.VOCAB_DIR
    tok = ["--tokenizer-type", "GPT2BPETokenizer", "--vocab-file",
           vocab / "gpt2" / "gpt2-vocab.json", "--merge-file", vocab / "gpt2" / "gpt2-merges.txt"]
    args = _args(data, iters=3, extra=["--save", tmp_path / "ck", "--save-interval", 3, *tok])
    i = args.index("--vocab-size")
    del args[i:i + 2]
    _run(args, tmp_path / "m.jsonl")
    a = _torch_load(_ckpt_file(tmp_path / "ck", 3))["args"]
    job = argparse.Namespace(num_layers=2, hidden_size=32, num_attention_heads=2,
                             add_position_embedding=True, vocab_file=str(tok[3]),
                             max_position_embeddings=16, make_vocab_size_divisible_by=128,
                             use_dist_ckpt=False, padded_vocab_size=50304,
                             tokenizer_type="GPT2BPETokenizer", data_parallel_random_init=False,
                             phase_transition_iterations=None, tensor_model_parallel_size=1,
                             pipeline_model_parallel_size=1)
    megatron_function(training_ckpt_src, "check_checkpoint_args", get_args=lambda: job,
                      get_checkpoint_version=lambda: 3.0)(a)


def test_use_checkpoint_args(trained, mcore, training_ckpt_src):
    """load_args_from_checkpoint (--use-checkpoint-args) on a job that gives no model flags
    (Megatron's defaults: dropouts 0.1, the shape arguments None) takes the whole model from
    our args: no dense-GPT argument it reads is missing, and the GPTModel built from the
    result loads the checkpoint strictly (absent or None: MoE, Mamba, hybrid, heterogeneous,
    tokenizer without --tokenizer-type, virtual pipeline, spec, ...)."""
    _, ck, _, _ = trained
    sd = _torch_load(_ckpt_file(ck, 6))
    missing = []
    job = argparse.Namespace(load=str(ck), hidden_dropout=0.1, attention_dropout=0.1,
                             use_tokenizer_model_from_checkpoint_args=True,
                             use_mp_args_from_checkpoint_args=True,
                             norm_epsilon=1e-5, params_dtype=torch.float32, bf16=False, fp16=False)
    load_args = megatron_function(
        training_ckpt_src, "load_args_from_checkpoint",
        _load_base_checkpoint=lambda *x, **k: (sd, "model_optim_rng.pt", False, None),
        print_rank_0=lambda m: missing.extend(m.split()[-1:] if "did not provide" in m else []))
    job, _ = load_args(job)
    assert (job.hidden_dropout, job.attention_dropout, job.ckpt_format) == (0.0, 0.0, "torch")
    assert job.iteration == 6 and job.padded_vocab_size == 1024
    other_families = {"apply_query_key_layer_scaling", "use_rotary_position_embeddings", "spec"}
    dense = {"num_layers", "hidden_size", "ffn_hidden_size", "seq_length", "num_attention_heads",
             "num_query_groups", "group_query_attention", "kv_channels", "max_position_embeddings",
             "position_embedding_type", "add_position_embedding", "rotary_base", "rotary_percent",
             "rotary_interleaved", "add_bias_linear", "add_qkv_bias", "squared_relu", "swiglu",
             "untie_embeddings_and_output_weights", "apply_layernorm_1p", "normalization",
             "attention_dropout", "hidden_dropout", "padded_vocab_size", "ckpt_format",
             "tensor_model_parallel_size", "pipeline_model_parallel_size",
             "expert_model_parallel_size"}
    assert not dense & set(missing), sorted(dense & set(missing))
    model = build_gpt_model(mcore, job)
    model.load_state_dict(to_local_names(sd["model"], sd["args"]), strict=True)


def test_load_checkpoint_rng_state_missing(trained, training_ckpt_src):
    """The part of Megatron's load_checkpoint that our checkpoint does not satisfy: there is
    no 'rng_state' (mg-train draws no random numbers after initialisation), so without
    --no-load-rng (or --finetune) Megatron takes its backward-compatibility branch, reads
    state_dict['random_rng_state'], gets a KeyError and exits ("Unable to load rng state
    from checkpoint ... Specify --no-load-rng or --finetune"). Everything else it reads at
    the top level is there."""
    _, ck, _, _ = trained
    sd = _torch_load(_ckpt_file(ck, 6))
    src = training_ckpt_src
    for line in ("iteration = state_dict['iteration']",
                 "set_checkpoint_version(state_dict.get('checkpoint_version', 0))",
                 "checkpoint_args = state_dict['args']",
                 "optimizer.load_state_dict(state_dict['optimizer'])",
                 "opt_param_scheduler.load_state_dict(state_dict['opt_param_scheduler'])",
                 "if 'rng_state' in state_dict:",
                 "random.setstate(state_dict['random_rng_state'])",
                 "'Specify --no-load-rng or --finetune to prevent '"):
        assert line in src, line
    assert {"args", "checkpoint_version", "iteration", "model", "optimizer",
            "opt_param_scheduler", "num_floating_point_operations_so_far"} <= set(sd)
    assert sd["checkpoint_version"] == 3.0 and sd["iteration"] == 6
    assert "rng_state" not in sd and "random_rng_state" not in sd


def test_load_checkpoint_optimizer_branch(training_ckpt_src):
    """What mg-train's --load follows for the optimizer (loop.c, ckpt_preflight.c): Megatron's
    load_checkpoint loads 'optimizer' and 'opt_param_scheduler' in one branch that
    --no-load-optim and --finetune skip (so the schedule restarts), whose KeyError (another
    optimizer class's state) prints the --no-load-optim advice, and whose else branch
    refreshes a --bf16/--fp16 run's masters from the model weights (reload_model_params)."""
    tree = ast.parse(training_ckpt_src)
    fn = next(n for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name == "load_checkpoint")

    def text(nodes):
        return ast.unparse(ast.Module(nodes, []))
    branches = [n for n in ast.walk(fn) if isinstance(n, ast.If)
                and "not args.no_load_optim" in ast.unparse(n.test) and "not args.finetune" in
                ast.unparse(n.test) and "opt_param_scheduler.load_state_dict(state_dict"
                "['opt_param_scheduler'])" in text(n.body)]
    assert len(branches) == 1
    body, orelse = text(branches[0].body), text(branches[0].orelse)
    assert "optimizer.load_state_dict(state_dict['optimizer'])" in body
    assert "except KeyError" in body and "Specify --no-load-optim or --finetune" in body
    assert "if (args.fp16 or args.bf16) and optimizer is not None:" in orelse
    assert "optimizer.reload_model_params()" in orelse
