"""mg-train's learning-rate schedule against megatron-core's OptimizerParamScheduler.

build/tests/tools/lr_probe parses an mg-train command line (train/options.c) and prints, for
every iteration k, the scheduler's step count (k x global batch size, in samples) with our
learning rate and weight decay (train/lr_schedule.c). Each case builds megatron-core 0.16.1's
own OptimizerParamScheduler from the same flags the way Megatron's training loop does
(megatron/training/training.py get_optimizer_param_scheduler, lines 1354-1407 at
core_v0.16.1, transcribed in `megatron_scheduler` below), steps it by the global batch size
after every iteration (train_step's increment), and requires lr and weight decay to be
EXACTLY equal (bit for bit) at every iteration, past the end of the decay.
"""
import logging
import types
import warnings

import pytest

MODEL = ("--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
         "--max-position-embeddings 32 --vocab-size 100").split()


def scheduler_class():
    logging.getLogger("megatron").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    return OptimizerParamScheduler


def megatron_scheduler(a):
    """training.py get_optimizer_param_scheduler (core_v0.16.1 lines 1354-1407) for args a."""
    gbs = a["global_batch_size"]
    if a.get("train_iters"):
        decay_iters = a.get("lr_decay_iters") or a["train_iters"]
        lr_decay_steps = decay_iters * gbs
        wd_incr_steps = a["train_iters"] * gbs
        wsd = a.get("lr_wsd_decay_iters")
        wsd_decay_steps = wsd * gbs if wsd is not None else None
        if a.get("lr_warmup_fraction") is not None:
            lr_warmup_steps = a["lr_warmup_fraction"] * lr_decay_steps
        else:
            lr_warmup_steps = a.get("lr_warmup_iters", 0) * gbs
    else:
        lr_decay_steps = a.get("lr_decay_samples") or a["train_samples"]
        wd_incr_steps = a["train_samples"]
        wsd_decay_steps = a.get("lr_wsd_decay_samples")
        if a.get("lr_warmup_fraction") is not None:
            lr_warmup_steps = a["lr_warmup_fraction"] * lr_decay_steps
        else:
            lr_warmup_steps = a.get("lr_warmup_samples", 0)
    wd = a.get("weight_decay", 0.01)
    style = a.get("weight_decay_incr_style", "constant")
    optimizer = types.SimpleNamespace(param_groups=[{}])
    sched = scheduler_class()(
        optimizer,
        init_lr=a.get("lr_warmup_init", 0.0),
        max_lr=a["lr"],
        min_lr=a.get("min_lr", 0.0),
        lr_warmup_steps=lr_warmup_steps,
        lr_decay_steps=lr_decay_steps,
        lr_decay_style=a.get("lr_decay_style", "linear"),
        start_wd=a.get("start_weight_decay", wd) if style != "constant" else wd,
        end_wd=a.get("end_weight_decay", wd) if style != "constant" else wd,
        wd_incr_steps=wd_incr_steps,
        wd_incr_style=style,
        use_checkpoint_opt_param_scheduler=False,
        override_opt_param_scheduler=False,
        wsd_decay_steps=wsd_decay_steps,
        lr_wsd_decay_style=a.get("lr_wsd_decay_style", "exponential"),
    )
    return sched, optimizer


def flags(a):
    out = []
    for k, v in a.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


CASES = {
    "linear_warmup": dict(train_iters=40, lr=1e-3, min_lr=1e-5, lr_warmup_iters=5),
    "linear_default": dict(train_iters=17, lr=3e-4),
    "cosine_fraction_init": dict(train_iters=50, lr=6e-4, min_lr=6e-5, lr_warmup_fraction=0.07,
                                 lr_warmup_init=1e-5, lr_decay_style="cosine"),
    "cosine_decay_shorter": dict(train_iters=60, lr_decay_iters=45, lr=6e-4, min_lr=1e-5,
                                 lr_warmup_iters=4, lr_decay_style="cosine"),
    "cosine_decay_longer": dict(train_iters=30, lr_decay_iters=80, lr=2e-4, lr_warmup_iters=3,
                                lr_decay_style="cosine"),
    "constant_warmup": dict(train_iters=25, lr=1e-3, lr_warmup_iters=6,
                            lr_decay_style="constant"),
    "invsqrt_warmup": dict(train_iters=40, lr_decay_iters=30, lr=1e-3, min_lr=2e-4,
                           lr_warmup_iters=3, lr_decay_style="inverse-square-root"),
    "invsqrt_no_warmup": dict(train_iters=30, lr=1e-3, lr_decay_style="inverse-square-root"),
    "wsd_exponential": dict(train_iters=40, lr=1e-3, min_lr=1e-5, lr_warmup_iters=4,
                            lr_decay_style="WSD", lr_wsd_decay_iters=10),
    "wsd_linear": dict(train_iters=40, lr=1e-3, lr_warmup_iters=4, lr_decay_style="WSD",
                       lr_wsd_decay_iters=13, lr_wsd_decay_style="linear"),
    "wsd_cosine": dict(train_iters=33, lr=1e-3, min_lr=1e-4, lr_decay_style="WSD",
                       lr_wsd_decay_iters=9, lr_wsd_decay_style="cosine"),
    "wsd_minus_sqrt": dict(train_iters=33, lr=1e-3, min_lr=1e-4, lr_warmup_fraction=0.05,
                           lr_decay_style="WSD", lr_wsd_decay_iters=11,
                           lr_wsd_decay_style="minus_sqrt"),
    "samples_cosine": dict(train_samples=1000, lr=1e-3, min_lr=1e-5, lr_warmup_samples=100,
                           lr_decay_samples=800, lr_decay_style="cosine"),
    "samples_fraction_linear": dict(train_samples=777, lr=5e-4, lr_warmup_fraction=0.013),
    "samples_wsd": dict(train_samples=960, lr=1e-3, lr_warmup_samples=48, lr_decay_style="WSD",
                        lr_wsd_decay_samples=200, lr_wsd_decay_style="cosine"),
    "wd_linear": dict(train_iters=20, lr=1e-3, weight_decay_incr_style="linear",
                      start_weight_decay=0.0, end_weight_decay=0.1),
    "wd_cosine": dict(train_iters=21, lr=1e-3, lr_decay_style="cosine",
                      weight_decay_incr_style="cosine", start_weight_decay=0.01,
                      end_weight_decay=0.3),
    "wd_constant": dict(train_iters=8, lr=1e-3, weight_decay=0.1),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("batch", [(4, 4), (4, 12)])
def test_lr_matches_megatron(name, batch, run_mg):
    micro, gbs = batch
    a = dict(CASES[name], global_batch_size=gbs)
    p = run_mg(["lr_probe"] + MODEL + ["--micro-batch-size", str(micro)] + flags(a))
    rows = [line.split() for line in p.stdout.splitlines()]
    assert len(rows) > a.get("train_iters", a.get("train_samples", 0) // gbs)
    sched, opt = megatron_scheduler(a)
    for k, steps, lr, wd in rows:
        k = int(k)
        assert float(steps) == sched.num_steps == k * gbs
        ref_lr, ref_wd = opt.param_groups[0]["lr"], opt.param_groups[0]["weight_decay"]
        assert float(lr) == ref_lr, f"{name} iteration {k} ({steps} samples): lr {lr} != {ref_lr!r}"
        assert float(wd) == ref_wd, f"{name} iteration {k}: weight decay {wd} != {ref_wd!r}"
        sched.step(gbs)


def test_probe_refuses_megatron_assertions(run_mg):
    """Where Megatron's scheduler asserts, mg-train refuses the command line."""
    base = ["lr_probe"] + MODEL + ["--micro-batch-size", "2", "--train-iters", "10", "--lr", "1e-3"]
    p = run_mg(base + ["--lr-warmup-iters", "10"], check=False)
    assert p.returncode == 2 and "shorter than the decay" in p.stderr
    with pytest.raises(AssertionError):
        megatron_scheduler(dict(train_iters=10, lr=1e-3, lr_warmup_iters=10, global_batch_size=2))
    p = run_mg(base + ["--lr-decay-style", "WSD"], check=False)
    assert p.returncode == 2 and "--lr-wsd-decay-iters" in p.stderr
    with pytest.raises(AssertionError):
        megatron_scheduler(dict(train_iters=10, lr=1e-3, lr_decay_style="WSD", global_batch_size=2))
