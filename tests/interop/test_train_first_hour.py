"""A Megatron user's first hour (issue 20), against the real peers.

1. --use-checkpoint-args on a converted Hugging Face Llama: mg-train trains a tiny Llama,
   mg-convert exports it to Hugging Face (--saver hf) and converts that back (a 'release'
   checkpoint whose args mg-convert writes from config.json). `mg-train --load BACK
   --use-checkpoint-args --finetune` with no model flag trains, and its first loss equals
   megatron-core's: GPTModel (local spec, test_convert_mcore.build_gpt_model) built from the
   converted checkpoint's args, its weights loaded strictly, on the same first global batch
   (mg-train's --dump-samples), the token losses over the padded vocabulary averaged as
   Megatron's loss_func does (rel 1e-5).
2. --tensorboard-dir: TensorBoard's own reader (EventAccumulator) reads the event file back;
   its "lm loss", "learning-rate" and "grad-norm" scalars equal the metrics file's (float32),
   "lm loss vs samples" is stepped by consumed samples, "lm loss validation" by iteration.
"""
import json

import numpy
import pytest
import torch
import torch.nn.functional as F

import conftest
from test_convert_mcore import build_gpt_model, mcore, mcore_logits  # noqa: F401
from test_train_ckpt import ENV, V, _args, _run, _torch_load, data  # noqa: F401
from test_train_mcore import to_local_names


def _first_batch(args, n):
    out = conftest.run_mg(args + ["--dump-samples", n], env=ENV).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    return {k: torch.tensor([r[k] for r in rows]) for k in ("tokens", "labels", "loss_mask")}


def test_use_checkpoint_args_on_a_converted_hf_llama(data, mcore, tmp_path,  # noqa: F811
                                                     monkeypatch):
    ck, hf, back = tmp_path / "ck", tmp_path / "hf", tmp_path / "back"
    _run(_args(data, "llama", iters=3, extra=["--save", ck]), tmp_path / "a.jsonl")
    conftest.run_mg(["mg-convert", "--load-dir", ck, "--save-dir", hf, "--saver", "hf",
                     "--true-vocab-size", V, "--drop-optimizer-state", "--quiet"])
    conftest.run_mg(["mg-convert", "--load-dir", hf, "--save-dir", back, "--quiet"])
    no_model = ["mg-train", "--load", back, "--use-checkpoint-args", "--finetune",
                "--micro-batch-size", 2, "--global-batch-size", 4, "--train-iters", 2,
                "--lr", "1e-3", "--data-path", data, "--split", "95,5,0", "--log-interval", 1,
                "--eval-iters", 0]
    ours = _run(no_model, tmp_path / "b.jsonl")
    assert [i for i, _ in ours] == [1, 2]
    sd = _torch_load(back / "release" / "mp_rank_00" / "model_optim_rng.pt")
    a = sd["args"]
    model = build_gpt_model(mcore, a)
    # a converted checkpoint carries TransformerEngine's _extra_state entries (as Megatron's
    # own TE checkpoints do); the local spec has none of core_attention's
    own = model.state_dict()
    weights = {k: v for k, v in to_local_names(sd["model"], a).items()
               if not k.endswith("._extra_state") or k in own}
    result = model.load_state_dict(weights, strict=True)
    assert not result.missing_keys and not result.unexpected_keys, result
    batch = _first_batch(no_model, 4)
    logits = mcore_logits(model, batch["tokens"], a.padded_vocab_size, monkeypatch).double()
    assert logits.shape[-1] == a.padded_vocab_size
    token_loss = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                 reduction="none")
    mask = batch["loss_mask"].flatten().double()
    theirs = float((token_loss * mask).sum() / mask.sum())
    assert ours[0][1] == pytest.approx(theirs, rel=1e-5)


def test_tensorboard_reads_the_event_file(data, tmp_path):  # noqa: F811
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    tb = tmp_path / "tb"
    args = _args(data, "gpt2", iters=4, extra=["--tensorboard-dir", tb, "--eval-interval", 2])
    args[args.index("--eval-iters") + 1] = 1
    _run(args, tmp_path / "m.jsonl")
    records = [json.loads(line) for line in open(tmp_path / "m.jsonl")]
    train = [r for r in records if r["kind"] == "train"]
    files = list(tb.iterdir())
    assert len(files) == 1 and files[0].name.startswith("events.out.tfevents."), files
    ea = EventAccumulator(str(tb))
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    assert {"lm loss", "learning-rate", "grad-norm", "batch-size", "loss-scale",
            "lm loss vs samples", "lm loss validation"} <= tags, tags

    def scalars(tag):
        return [(e.step, e.value) for e in ea.Scalars(tag)]

    f32 = numpy.float32
    for tag, key in (("lm loss", "loss"), ("learning-rate", "lr"), ("grad-norm", "grad_norm")):
        assert scalars(tag) == [(r["iteration"], float(f32(r[key]))) for r in train], tag
    assert [s for s, _ in scalars("lm loss vs samples")] == [r["consumed_samples"]
                                                              for r in train]
    valid = [r for r in records if r["kind"] == "valid"]
    assert scalars("lm loss validation") == [(r["iteration"], float(f32(r["loss"])))
                                             for r in valid]
