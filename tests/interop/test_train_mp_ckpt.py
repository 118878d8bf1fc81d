"""mg-train's --bf16/--fp16 checkpoints in Megatron's mixed-precision layout (train/checkpoint.h)
against megatron-core 0.16.1 itself, on the emulation build (`make emu`: --device cuda on the
host) and the tiny GPT-2 of test_train_ckpt.py (2 layers, hidden 32, 4 x 16 tokens an
iteration; about 1 s an emulated iteration).

Megatron writes for a mixed-precision run without the distributed optimizer: 'model' in the
16-bit dtype (Float16Module's state dict), args.bf16/fp16 and params_dtype, and
Float16OptimizerWithFloat16Params.state_dict(): {'optimizer': torch's AdamW state dict,
'grad_scaler' (only when the run has a scaler: --fp16, or --loss-scale), 'fp32_from_fp16_params':
the fp32 masters per param group}. Proven here:

  1. The layout: 16-bit model tensors equal to the masters rounded to nearest-even (torch's
     .to(bfloat16)), which the run keeps as its own weight copy; masters that are not 16-bit
     values; no 'grad_scaler' with plain --bf16 (Megatron's grad_scaler is None), the dynamic
     scaler's state with --fp16.
  2. megatron-core's own GPTModel in bf16/fp16 (params_dtype from our args, the local spec
     under the renamed keys, test_train_mcore.py) loads 'model' strictly, and its
     Float16OptimizerWithFloat16Params (built by megatron.core.optimizer from the run's
     settings, param groups over the TE-order parameters) loads 'optimizer': each of its fp32
     masters, moments and step counts, and its scaler's scale and trackers, equal the
     checkpoint's bit for bit, and each master rounds to the model tensor of the same name.
     Then one step of it with the gradient mg-train applied next (recovered from the moments,
     test_train_mcore.megatron_step) gives the next checkpoint's masters (atol 1e-6) and its
     16-bit model tensors.
  3. Resume: mg-train --load at iteration 3 of a 5-iteration --bf16 run repeats the
     uninterrupted run's losses bit for bit, from its own checkpoint and from the same
     checkpoint with the optimizer state megatron-core's state_dict() wrote.
  4. Another optimizer class (megatron-core's FP32Optimizer and
     Float16OptimizerWithFloat16Params raise KeyError on each other's state, checked;
     load_checkpoint then stops advising --no-load-optim, test_train_mcore's
     test_load_checkpoint_optimizer_branch): an fp32 run refuses a --bf16 checkpoint's
     optimizer state and a --bf16 run an fp32 one (exit 2); with --no-load-optim the weights load
     (the masters from the 16-bit weights, Megatron's reload_model_params) and, as Megatron
     loads the scheduler with the optimizer only, the learning rate starts again from the
     schedule's beginning while the iteration continues.
  5. mg-convert: a checkpoint with this optimizer state goes TP=1 -> TP=2 -> TP=1 with every
     bit kept (the masters split like their parameters) and mg-train resumes from it with the
     uninterrupted losses; without the state the bf16 weights reshard bit for bit and export
     to Hugging Face in bf16; another --target-dtype with the state is refused; resharding
     the moments keeps the optimizer's 'grad_scaler'.

CPU workarounds for megatron-core (besides test_train_mcore.py's): Float16OptimizerWithFloat16Params
takes only parameters whose type() is 'torch.cuda.BFloat16Tensor'/'torch.cuda.HalfTensor'
(test_float16_optimizer_needs_cuda): built with Tensor.type answering the CUDA name of a CPU
16-bit tensor; its scalers' tensors lose their 'cuda' device (torch.tensor's device dropped,
Tensor.cuda the identity while loading).
"""
import os

import pytest
import torch

import conftest
from test_convert_mcore import build_gpt_model, mcore  # noqa: F401 - mcore is a fixture
from test_train_ckpt import ENV, _args, _ckpt_file, _run, _torch_load, data  # noqa: F401
from test_train_mcore import TEOrderChunk, to_local_names

EMU = conftest.ROOT / os.environ.get("MG_EMU_BIN", "build-emu/bin") / "mg-train"
ITERS = 5
INITIAL_SCALE = 4096  # the tiny GPT-2's fp16 gradients stay finite under it
HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _emu():
    if not EMU.is_file():
        pytest.fail(f"{EMU} was not built: run `make emu` (docs/CUDA_EMU.md)")
    return str(EMU)


def _prec_flags(prec):
    extra = ["--initial-loss-scale", INITIAL_SCALE] if prec == "fp16" else []
    return ["--device", "cuda", f"--{prec}", *extra]


def _emu_args(data, prec, iters=ITERS, extra=()):
    args = _args(data, iters=iters, extra=[*_prec_flags(prec), *extra])
    return [_emu()] + args[1:]


_RUNS = {}


def _full_run(prec, data, factory):
    """(precision, checkpoint dir saved after every iteration, mg-train's arguments, train
    records (iteration, loss)) of an uninterrupted emulated run, made once a module."""
    if prec not in _RUNS:
        d = factory.mktemp(f"mp_{prec}")
        args = _emu_args(data, prec)
        losses = _run(args + ["--save", d / "ck", "--save-interval", 1], d / "m.jsonl")
        _RUNS[prec] = (prec, d / "ck", args, losses)
    return _RUNS[prec]


@pytest.fixture(scope="module", params=["bf16", "fp16"])
def run(request, data, tmp_path_factory):
    return _full_run(request.param, data, tmp_path_factory)


@pytest.fixture(scope="module")
def bf16_run(data, tmp_path_factory):
    return _full_run("bf16", data, tmp_path_factory)


# --- 1. the layout --------------------------------------------------------------------------

def _masters(sd):
    """fp32_from_fp16_params, checked to hold as many tensors per group as the groups."""
    groups = sd["optimizer"]["optimizer"]["param_groups"]
    masters = sd["optimizer"]["fp32_from_fp16_params"]
    assert [len(g["params"]) for g in groups] == [len(m) for m in masters]
    return masters


def test_layout_as_megatron(run):
    prec, ck, _, _ = run
    sd = _torch_load(_ckpt_file(ck, 4))
    a = sd["args"]
    assert (a.bf16, a.fp16, a.params_dtype) == (prec == "bf16", prec == "fp16", HALF[prec])
    od = sd["optimizer"]
    assert list(od) == (["optimizer", "grad_scaler", "fp32_from_fp16_params"] if prec == "fp16"
                        else ["optimizer", "fp32_from_fp16_params"])
    assert set(od["optimizer"]) == {"state", "param_groups"}
    tensors = {k: v for k, v in sd["model"].items() if isinstance(v, torch.Tensor)}
    assert {v.dtype for v in tensors.values()} == {HALF[prec]}
    masters = [t for g in _masters(sd) for t in g]
    assert len(masters) == len(tensors) and all(t.dtype == torch.float32 for t in masters)
    flat = torch.cat([t.flatten() for t in masters])
    low = 0xFFFF if prec == "bf16" else 0x1FFF  # the mantissa bits the 16-bit type lacks
    assert bool((flat.view(torch.int32) & low).any()), "16-bit values, not fp32 masters"
    if prec == "fp16":
        s = od["grad_scaler"]
        assert s["scale"].dtype == torch.float32 and s["scale"].shape == (1,)
        assert float(s["scale"]) == INITIAL_SCALE and s["growth_tracker"] == 4
        assert s["hysteresis_tracker"] == 2


# --- 2. megatron-core's Float16OptimizerWithFloat16Params -----------------------------------

def test_float16_optimizer_needs_cuda(mcore):
    """Why the optimizer is built with Tensor.type patched: megatron-core sorts the
    parameters by their CUDA type names and refuses any other."""
    import inspect
    from megatron.core.optimizer.optimizer import Float16OptimizerWithFloat16Params
    src = inspect.getsource(Float16OptimizerWithFloat16Params.__init__)
    assert "if param.type() in ['torch.cuda.HalfTensor', 'torch.cuda.BFloat16Tensor']:" in src
    assert "raise TypeError(" in src


def _cuda_type(tensor_type):
    names = {torch.bfloat16: "torch.cuda.BFloat16Tensor", torch.float16: "torch.cuda.HalfTensor",
             torch.float32: "torch.cuda.FloatTensor"}

    def patched(self, *a, **k):
        return names.get(self.dtype, tensor_type(self)) if not a and not k else \
            tensor_type(self, *a, **k)
    return patched


def float16_optimizer(mcore, sd, model, monkeypatch):
    """(Megatron's Float16OptimizerWithFloat16Params for the run's settings, the chunk
    naming its parameters), loaded from sd's 'optimizer'."""
    import megatron.core.optimizer as mo
    from megatron.core.optimizer import OptimizerConfig
    a = sd["args"]
    cfg = OptimizerConfig(optimizer="adam", lr=a.lr, min_lr=a.min_lr, weight_decay=0.01,
                          adam_beta1=0.9, adam_beta2=0.999, adam_eps=1e-8, clip_grad=0.0,
                          bf16=bool(a.bf16), fp16=bool(a.fp16), loss_scale=None,
                          initial_loss_scale=float(INITIAL_SCALE), min_loss_scale=1.0,
                          loss_scale_window=1000, hysteresis=2,
                          use_distributed_optimizer=False)
    chunk = TEOrderChunk(model, sd["model"], a)
    groups = mo._get_param_groups([chunk], cfg, None)
    tensor, tensor_type = torch.tensor, torch.Tensor.type
    with monkeypatch.context() as m:
        m.setattr(torch, "tensor", lambda *x, device=None, **k: tensor(*x, **k))
        m.setattr(torch.Tensor, "type", _cuda_type(tensor_type))
        opt = mo._get_megatron_optimizer_based_on_param_groups(cfg, [model], groups)
    assert type(opt).__name__ == "Float16OptimizerWithFloat16Params"
    assert type(opt.optimizer) is torch.optim.AdamW
    assert (opt.grad_scaler is None) == bool(a.bf16)
    with monkeypatch.context() as m:
        m.setattr(torch.Tensor, "cuda", lambda self, *x, **k: self)
        m.setattr(torch.cuda, "current_device", lambda: 0)
        opt.load_state_dict(sd["optimizer"])
    return opt, chunk


def _load_model(mcore, sd, prec):
    """GPTModel in Megatron's Float16Module (as get_model wraps it for --bf16/--fp16) with
    sd's 'model' loaded strictly; returns the wrapped GPTModel."""
    from megatron.core.transformer.module import Float16Module
    inner = build_gpt_model(mcore, sd["args"])
    model = Float16Module(inner.config, inner).module
    assert {p.dtype for p in model.parameters()} == {HALF[prec]}
    result = model.load_state_dict(to_local_names(sd["model"], sd["args"]), strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    return model


def _pairs(opt, chunk):
    """(checkpoint name, model parameter, fp32 master) in the optimizer's order."""
    name = {p: n for n, p in chunk.named_parameters()}
    return [(name[p], p, q) for mg, qg in zip(opt.float16_groups, opt.fp32_from_float16_groups)
            for p, q in zip(mg, qg)]


def test_megatron_loads_ours(run, mcore, monkeypatch):
    prec, ck, _, _ = run
    sd = _torch_load(_ckpt_file(ck, 4))
    model = _load_model(mcore, sd, prec)
    opt, chunk = float16_optimizer(mcore, sd, model, monkeypatch)
    ours = sd["optimizer"]
    flat_masters = [t for g in ours["fp32_from_fp16_params"] for t in g]
    flat_index = [i for g in ours["optimizer"]["param_groups"] for i in g["params"]]
    pairs = _pairs(opt, chunk)
    assert len(pairs) == len(flat_masters)
    for (n, p, q), mine, i in zip(pairs, flat_masters, flat_index):
        assert q.dtype == torch.float32 and torch.equal(q, mine), n
        assert torch.equal(q.to(HALF[prec]), sd["model"][n]), f"{n}: master rounds to the weight"
        assert torch.equal(p.detach(), sd["model"][n]), n
        st, want = opt.optimizer.state[q], ours["optimizer"]["state"][i]
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(st[k], want[k]), (n, k)
        assert float(st["step"]) == 4 and st["exp_avg"].shape == p.shape, n
    if prec == "fp16":
        s = opt.grad_scaler
        assert torch.equal(s.scale, ours["grad_scaler"]["scale"])
        assert (s._growth_tracker, s._hysteresis_tracker) == (4, 2)


def test_megatron_step_continues(run, mcore, monkeypatch):
    """Loaded from iteration 3 and stepped with mg-train's iteration-4 gradient (recovered
    from the first moments), Megatron's optimizer gives iteration 4's masters and weights."""
    prec, ck, _, _ = run
    s3, s4 = _torch_load(_ckpt_file(ck, 3)), _torch_load(_ckpt_file(ck, 4))
    model = _load_model(mcore, s3, prec)
    opt, chunk = float16_optimizer(mcore, s3, model, monkeypatch)
    from test_train_mcore import megatron_scheduler
    megatron_scheduler(opt, s3["args"]).load_state_dict(s3["opt_param_scheduler"])
    idx = [i for g in s4["optimizer"]["optimizer"]["param_groups"] for i in g["params"]]
    m4 = [s4["optimizer"]["optimizer"]["state"][i]["exp_avg"] for i in idx]
    scale = float(opt.grad_scaler.scale) if opt.grad_scaler else 1.0
    for (n, p, q), m in zip(_pairs(opt, chunk), m4):
        g = (m - 0.9 * opt.optimizer.state[q]["exp_avg"]) / 0.1
        p.main_grad = g * scale  # Megatron's main_grad buffer, scaled as its loss was
    with monkeypatch.context() as mp:
        mp.setattr(torch.cuda, "current_device", lambda: "cpu")
        ok, _, _ = opt.step()
    assert ok
    masters4 = [t for g in s4["optimizer"]["fp32_from_fp16_params"] for t in g]
    for (n, p, q), want in zip(_pairs(opt, chunk), masters4):
        torch.testing.assert_close(q, want, rtol=0, atol=1e-6, msg=n)
        assert float(opt.optimizer.state[q]["step"]) == 4, n
        # the weight copy is the master rounded; a master within 1e-6 of ours may round to
        # the neighbouring 16-bit value where ours sat on a rounding boundary
        diff = (p.detach().float() - s4["model"][n].float()).abs()
        ulp = s4["model"][n].float().abs() * (2.0 ** -7 if prec == "bf16" else 2.0 ** -10)
        assert bool((diff <= ulp + 1e-6).all()), n


# --- 3. resume ------------------------------------------------------------------------------

def test_resume_bit_for_bit(run, mcore, monkeypatch, tmp_path):
    prec, ck, args, full = run
    got = _run(args + ["--load", ck, "--ckpt-step", 3], tmp_path / "own.jsonl")
    assert got == full[3:], (got, full)
    s3 = _torch_load(_ckpt_file(ck, 3))
    model = _load_model(mcore, s3, prec)
    opt, _ = float16_optimizer(mcore, s3, model, monkeypatch)
    theirs = tmp_path / "theirs"
    (theirs / "iter_0000003" / "mp_rank_00").mkdir(parents=True)
    (theirs / "latest_checkpointed_iteration.txt").write_text("3")
    torch.save(dict(s3, optimizer=opt.state_dict()), _ckpt_file(theirs, 3))
    got = _run(args + ["--load", theirs], tmp_path / "theirs.jsonl")
    assert got == full[3:], (got, full)


@pytest.mark.parametrize("prec", sorted(HALF))
def test_distributed_optimizer_resume_bit_for_bit(data, prec, tmp_path):  # noqa: F811
    """--use-distributed-optimizer with --bf16/--fp16 (one process): the 16-bit model in
    model_optim_rng.pt, the fp32 masters and moments in distrib_optim.pt under megatron-core's
    key (param dtype, grad dtype) = (16-bit, float32); --load at iteration 3 repeats the
    uninterrupted run's losses bit for bit."""
    args = _emu_args(data, prec, extra=["--use-distributed-optimizer"])
    ck = tmp_path / "ck"
    full = _run(args + ["--save", ck, "--save-interval", 1], tmp_path / "m.jsonl")
    sd = _torch_load(_ckpt_file(ck, 3))
    assert {t.dtype for t in sd["model"].values() if isinstance(t, torch.Tensor)} == {HALF[prec]}
    state = _torch_load(ck / "iter_0000003" / "mp_rank_00" / "distrib_optim.pt")
    (key, buf), = state[0].items()
    assert key == (HALF[prec], torch.float32), key
    assert buf["param"].dtype == torch.float32
    got = _run(args + ["--load", ck, "--ckpt-step", 3], tmp_path / "resumed.jsonl")
    assert got == full[3:], (got, full)


# --- 4. another optimizer class, --no-load-optim ---------------------------------------------

def test_fp32_run_and_bf16_checkpoint(bf16_run, data, mcore, monkeypatch, tmp_path):
    _, ck, emu_args, _ = bf16_run
    cpu = _args(data, iters=ITERS)
    p = _run(cpu + ["--load", ck, "--ckpt-step", 3], tmp_path / "a.jsonl", check=False)
    assert p.returncode == 2 and "Float16OptimizerWithFloat16Params" in p.stderr \
        and "--no-load-optim" in p.stderr, p.stderr
    _run(cpu, tmp_path / "fresh.jsonl")
    fresh = _lrs(tmp_path / "fresh.jsonl")
    resumed = _run(cpu + ["--load", ck, "--ckpt-step", 3, "--no-load-optim", "--save",
                          tmp_path / "f32"], tmp_path / "b.jsonl")
    assert [i for i, _ in resumed] == [4, 5]
    assert [lr for _, lr in _lrs(tmp_path / "b.jsonl")] == [lr for _, lr in fresh[:2]]
    f32 = _torch_load(_ckpt_file(tmp_path / "f32", 5))
    assert f32["iteration"] == 5 and f32["args"].consumed_train_samples == 5 * 4
    assert f32["opt_param_scheduler"]["num_steps"] == 2 * 4  # the schedule from 0
    # the masters start from the 16-bit weights (Megatron's reload_model_params): the same
    # as loading those weights, widened to fp32, from a file without optimizer state
    s3 = _torch_load(_ckpt_file(ck, 3))
    widened = tmp_path / "widened"
    (widened / "iter_0000003" / "mp_rank_00").mkdir(parents=True)
    (widened / "latest_checkpointed_iteration.txt").write_text("3")
    model = {k: v.float() if isinstance(v, torch.Tensor) else v for k, v in s3["model"].items()}
    torch.save({k: v for k, v in dict(s3, model=model).items() if k != "optimizer"},
               _ckpt_file(widened, 3))
    assert _run(cpu + ["--load", widened, "--no-load-optim"], tmp_path / "w.jsonl") == resumed
    # and the reverse: a --bf16 run refuses an fp32 run's optimizer state
    p = _run(emu_args + ["--load", tmp_path / "f32"], tmp_path / "c.jsonl", check=False)
    assert p.returncode == 2 and "an fp32 run's (FP32Optimizer)" in p.stderr, p.stderr
    # as megatron-core's optimizers do: each raises KeyError on the other's state
    from test_train_mcore import load_mcore, megatron_optimizer
    s5, fp32_model = load_mcore(mcore, tmp_path / "f32", 5)
    fp32_opt = megatron_optimizer(mcore, TEOrderChunk(fp32_model, s5["model"], s5["args"]),
                                  fp32_model, s5["args"], monkeypatch)
    with pytest.raises(KeyError, match="state"):
        fp32_opt.load_state_dict(s3["optimizer"])
    mixed_opt, _ = float16_optimizer(mcore, s3, _load_model(mcore, s3, "bf16"), monkeypatch)
    with pytest.raises(KeyError, match="optimizer_state_dict"):
        mixed_opt.load_state_dict(s5["optimizer"])


def _lrs(path):
    import json
    return [(r["iteration"], r["lr"]) for r in map(json.loads, open(path)) if r["kind"] == "train"]


# --- 5. mg-convert --------------------------------------------------------------------------

def _convert(src, out, *extra, check=True):
    return conftest.run_mg(["mg-convert", "--load-dir", src, "--save-dir", out, "--verify",
                            *extra], check=check)


def test_convert_16bit_checkpoint(bf16_run, tmp_path):
    """Without optimizer state the 16-bit model tensors reshard (TP=2 and back) bit for bit
    and stay bf16, and export to Hugging Face in bf16 (config torch_dtype bfloat16); with it,
    another --target-dtype is refused (exit 2, no output: the masters belong to bf16 weights)."""
    import json
    import safetensors.torch as st
    _, ck, _, _ = bf16_run
    p = _convert(ck, tmp_path / "f32", "--target-dtype", "fp32", check=False)
    assert p.returncode == 2 and "not supported yet" in p.stderr \
        and "--drop-optimizer-state" in p.stderr, p.stderr
    assert not (tmp_path / "f32").exists()
    _convert(ck, tmp_path / "tp2", "--target-tensor-parallel-size", 2, "--drop-optimizer-state")
    _convert(tmp_path / "tp2", tmp_path / "back")
    src = _torch_load(_ckpt_file(ck, ITERS))
    # without optimizer state, a `release` checkpoint (as Megatron's converter writes)
    back = _torch_load(tmp_path / "back" / "release" / "mp_rank_00" / "model_optim_rng.pt")
    assert back["args"].bf16 and back["args"].params_dtype == torch.bfloat16
    for k, v in src["model"].items():
        if isinstance(v, torch.Tensor):
            assert back["model"][k].dtype == torch.bfloat16, k
            assert torch.equal(back["model"][k], v), k
    hf = tmp_path / "hf"
    conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", hf, "--saver", "hf",
                     "--true-vocab-size", 1000, "--quiet"])
    assert json.loads((hf / "config.json").read_text())["torch_dtype"] == "bfloat16"
    exported = st.load_file(str(hf / "model.safetensors"))
    assert {v.dtype for v in exported.values()} == {torch.bfloat16}
    emb = [v for k, v in exported.items() if k.endswith("wte.weight")]
    assert len(emb) == 1
    assert torch.equal(emb[0], src["model"]["embedding.word_embeddings.weight"][:1000])


def _assert_same_mixed_state(a, b):
    """Model tensors, torch's optimizer dict, masters and scaler of two mixed-precision
    checkpoints, bit for bit."""
    for k, v in a["model"].items():
        if isinstance(v, torch.Tensor):
            assert v.dtype == b["model"][k].dtype and torch.equal(v, b["model"][k]), k
    x, y = a["optimizer"], b["optimizer"]
    assert list(x) == list(y)
    assert x["optimizer"]["param_groups"] == y["optimizer"]["param_groups"]
    for i, e in x["optimizer"]["state"].items():
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(e[k], y["optimizer"]["state"][i][k]), (i, k)
    assert [len(g) for g in x["fp32_from_fp16_params"]] == \
        [len(g) for g in y["fp32_from_fp16_params"]]
    for p, q in zip([t for g in _masters(a) for t in g], [t for g in _masters(b) for t in g],
                    strict=True):
        assert p.dtype == q.dtype == torch.float32 and torch.equal(p, q)
    if "grad_scaler" in x:
        assert torch.equal(x["grad_scaler"]["scale"], y["grad_scaler"]["scale"])
        assert x["grad_scaler"]["growth_tracker"] == y["grad_scaler"]["growth_tracker"]
        assert x["grad_scaler"]["hysteresis_tracker"] == y["grad_scaler"]["hysteresis_tracker"]


def test_convert_reshards_mixed_optimizer_state(run, tmp_path):
    """The --bf16/--fp16 optimizer state (moments, fp32 masters split like their parameters,
    the scaler) goes to TP=2 and back with every bit kept, in Megatron's mixed-precision form;
    mg-train resumes from the round trip with the uninterrupted run's losses."""
    prec, ck, args, full = run
    staged = tmp_path / "at3"
    (staged / "iter_0000003").mkdir(parents=True)
    (staged / "latest_checkpointed_iteration.txt").write_text("3")
    for f in (ck / "iter_0000003").iterdir():
        (staged / "iter_0000003" / f.name).mkdir()
        for g in f.iterdir():
            (staged / "iter_0000003" / f.name / g.name).write_bytes(g.read_bytes())
    p = _convert(staged, tmp_path / "tp2", "--target-tensor-parallel-size", 2)
    assert "Adam moments and fp32 masters" in p.stdout, p.stdout
    tp2 = _torch_load(tmp_path / "tp2" / "iter_0000003" / "mp_rank_01" / "model_optim_rng.pt")
    assert tp2["args"].tensor_model_parallel_size == 2
    assert {t.dtype for t in tp2["model"].values() if isinstance(t, torch.Tensor)} == {HALF[prec]}
    _convert(tmp_path / "tp2", tmp_path / "back")
    _assert_same_mixed_state(_torch_load(_ckpt_file(staged, 3)),
                             _torch_load(_ckpt_file(tmp_path / "back", 3)))
    assert _run(args + ["--load", tmp_path / "back"], tmp_path / "r.jsonl") == full[3:]


def test_convert_keeps_grad_scaler(tmp_path):
    """Resharding the moments keeps the optimizer's 'grad_scaler' (here a dynamic scaler's,
    after overflows and clean steps, in the distributed optimizer's state dict that
    build/tests/tools/ckpt_shards writes): every output file holds the source's."""
    tiny = ["--num-layers", 2, "--hidden-size", 8, "--num-attention-heads", 2, "--seq-length", 4,
            "--max-position-embeddings", 4, "--micro-batch-size", 1, "--global-batch-size", 4,
            "--train-iters", 10, "--lr", "1e-3", "--vocab-size", 100]
    src = tmp_path / "src"
    conftest.run_mg(["ckpt_shards", src, 5, "--scaler-updates", "1101000", *tiny, "--fp16",
                     "--use-distributed-optimizer"])
    _convert(src, tmp_path / "tp2", "--target-tensor-parallel-size", 2)
    _convert(tmp_path / "tp2", tmp_path / "back")
    want = _torch_load(_ckpt_file(src, 5))["optimizer"]["grad_scaler"]
    assert float(want["scale"]) == 2.0 ** 30 and want["growth_tracker"] == 3
    files = [tmp_path / "tp2" / "iter_0000005" / f"mp_rank_0{r}" / "model_optim_rng.pt"
             for r in (0, 1)] + [_ckpt_file(tmp_path / "back", 5)]
    for f in files:
        got = _torch_load(f)["optimizer"]["grad_scaler"]
        assert torch.equal(got["scale"], want["scale"]), f
        assert (got["growth_tracker"], got["hysteresis_tracker"]) == \
            (want["growth_tracker"], want["hysteresis_tracker"]), f
