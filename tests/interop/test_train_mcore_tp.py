"""A TP=2 forward and backward of megatron-core 0.16.1's own GPTModel (two CPU processes,
gloo, parallel_state.initialize_model_parallel(2, 1), local spec) against mg-train's TP=2
on the same weights and the same global batch, rank by rank.

mg-train (mpirun, 2 processes) trains one iteration of the tiny GPT-2 (tied) and Llama (GQA
with one query group per rank, SwiGLU, RoPE, untied) models of test_train_parallel.py with
--lr 0 --clip-grad 0 and saves it: each rank's file then holds its shards of the initial
weights and, as AdamW's first moment after one step, 0.1 x its shards of the gradient of
the iteration's loss (6 micro-batches, each one's masked mean / 6). megatron-core's
GPTModel, built at TP=2 from the file's args on each of two processes, loads the rank's
file (TE names renamed to the local spec, as test_train_mcore.py) strictly, runs the same 6
micro-batches (mg-train's --dump-samples) forward with labels (vocab-parallel embedding,
column/row-parallel linears, vocab-parallel cross-entropy) and backward with the same
scaling; then per rank every parameter's gradient must equal mg-train's (rtol 1e-4, atol
1e-6 of the largest gradient) and the loss mg-train logged (1e-5).

The vocabulary here is 1024 (Vp = V at TP 2: no padding), because Megatron's cross-entropy
runs over the padding columns and mg-train's masks them (the vocab-pad change aligns them).
CPU workarounds as test_convert_mcore.py: the inference RNG tracker, an explicit causal mask,
torch.cuda.current_device patched to "cpu" (in the worker processes).
"""
import json
import multiprocessing
import warnings

import pytest
import torch

import conftest
from test_train_ckpt import _torch_load
from test_train_mcore import local_spec_map, local_name
from test_train_parallel import data, model_args, run_train  # noqa: F401
from test_train_run import ARCHS

VOCAB = 1024
NMICRO, MBS = 6, 2
B1 = 0.9


def te_to_local(model_sd, args):
    te_map = local_spec_map(args)
    return {k: local_name(k, te_map) for k in model_sd}


def optimizer_order(model_sd):
    """mg-train's (and Megatron's) optimizer parameter order: the 2-D tensors, then the
    others, each in the TE spec's registration order (a layer's linear_proj before its
    linear_qkv, whose fused norm comes first)."""
    names = list(model_sd)
    order = []
    for i, n in enumerate(names):
        if ".self_attention.linear_proj." in n:
            continue
        layer = n.split(".self_attention.")[0]
        prev = names[i - 1] if i else ""
        if ".self_attention.linear_qkv." in n and not prev.startswith(layer + ".self_attention.linear_qkv."):
            order += [m for m in names if m.startswith(layer + ".self_attention.linear_proj.")]
        order.append(n)
    tensors = [n for n in order if isinstance(model_sd[n], torch.Tensor)]
    return [n for n in tensors if model_sd[n].dim() == 2] + \
        [n for n in tensors if model_sd[n].dim() != 2]


def our_grads(sd):
    """{TE name: gradient} from the first moment after one step (m = (1 - b1) g)."""
    names = optimizer_order(sd["model"])
    state = sd["optimizer"]["state"]
    assert len(names) == len(state)
    out = {}
    for i, n in enumerate(names):
        m = state[i]["exp_avg"]
        assert m.shape == sd["model"][n].shape, n
        out[n] = m / (1 - B1)
    return out


def mcore_worker(rank, world, initfile, ck_file, batches, q):
    """One TP rank of megatron-core: loss sums and gradients of the global batch."""
    try:
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"file://{initfile}", rank=rank,
                                world_size=world)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import megatron.core
            from megatron.core import parallel_state
            from megatron.core.tensor_parallel.random import initialize_rng_tracker
            from test_convert_mcore import build_gpt_model
        parallel_state.initialize_model_parallel(world, 1)
        initialize_rng_tracker(inference_rng_tracker=True, force_reset=True)
        torch.cuda.current_device = lambda: "cpu"  # see the module docstring
        sd = _torch_load(ck_file)
        model = build_gpt_model(megatron.core, sd["args"], tensor_model_parallel_size=world)
        to_local = te_to_local(sd["model"], sd["args"])
        result = model.load_state_dict({to_local[k]: v for k, v in sd["model"].items()},
                                       strict=True)
        assert not result.missing_keys and not result.unexpected_keys, result
        total, count = 0.0, 0.0
        for mb in batches:
            ids, labels = torch.tensor(mb["tokens"]), torch.tensor(mb["labels"])
            mask = torch.tensor(mb["loss_mask"], dtype=torch.float32)
            pos = torch.tensor(mb["position_ids"])
            n = ids.shape[1]
            causal = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)[None, None]
            loss = model(ids, pos, attention_mask=causal, labels=labels)
            (torch.sum(loss * mask) / mask.sum() / len(batches)).backward()
            total += float(torch.sum(loss.detach().double() * mask))
            count += float(mask.sum())
        to_te = {v: k for k, v in to_local.items()}
        # numpy arrays travel by value (a tensor would need this process alive)
        grads = {to_te[n]: p.grad.detach().numpy().copy() for n, p in model.named_parameters()}
        q.put((rank, total / count, grads, None))
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()
    except Exception:  # reported to the test, which fails with it
        import traceback
        q.put((rank, None, None, traceback.format_exc()))


def run_mcore(ck, batches, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    files = [ck / "iter_0000001" / f"mp_rank_{r:02d}" / "model_optim_rng.pt" for r in range(2)]
    procs = [ctx.Process(target=mcore_worker,
                         args=(r, 2, tmp_path / "pg", files[r], batches, q)) for r in range(2)]
    for p in procs:
        p.start()
    out = {}
    for _ in procs:
        rank, loss, grads, err = q.get()
        assert err is None, f"megatron-core rank {rank}:\n{err}"
        out[rank] = (loss, grads)
    for p in procs:
        p.join()
    return out


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_tp2_forward_backward_equals_mcore(arch, data, tmp_path):  # noqa: F811
    one_step = ["--tensor-model-parallel-size", 2, "--vocab-size", VOCAB, "--train-iters", 1,
                "--lr", 0, "--min-lr", 0, "--lr-warmup-iters", 0, "--clip-grad", 0,
                "--eval-iters", 0, "--save", tmp_path / "ck", "--save-interval", 1]
    args = model_args(data, arch, one_step)
    records, _ = run_train(2, args, tmp_path / "m.jsonl")
    ours_loss = records[0]["loss"]
    dump = conftest.run_mg(["mg-train", *args, "--dump-samples", NMICRO * MBS],
                           env={"OMP_NUM_THREADS": "1"}).stdout
    rows = [json.loads(line) for line in dump.splitlines()]
    batches = [{k: [r[k] for r in rows[i * MBS:(i + 1) * MBS]]
                for k in ("tokens", "labels", "loss_mask", "position_ids")}
               for i in range(NMICRO)]
    theirs = run_mcore(tmp_path / "ck", batches, tmp_path)
    for rank in range(2):
        loss, grads = theirs[rank]
        assert loss == pytest.approx(ours_loss, rel=1e-5), f"{arch} rank {rank} loss"
        sd = _torch_load(tmp_path / "ck" / "iter_0000001" / f"mp_rank_{rank:02d}" /
                         "model_optim_rng.pt")
        ours = our_grads(sd)
        assert set(ours) == set(grads), set(ours) ^ set(grads)
        grads = {n: torch.from_numpy(g) for n, g in grads.items()}
        scale = max(float(g.abs().max()) for g in grads.values())
        for n, g in grads.items():
            torch.testing.assert_close(ours[n], g, rtol=1e-4, atol=1e-6 * scale,
                                       msg=f"{arch} rank {rank} {n}")
