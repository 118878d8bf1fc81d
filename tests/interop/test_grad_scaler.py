"""train/grad_scaler.c against megatron-core's own DynamicGradScaler.

build/tests/tools/scaler_probe runs our dynamic scaler on a string of overflow flags and
prints (scale, growth_tracker, hysteresis_tracker) after every update. Each case runs
megatron-core 0.16.1's DynamicGradScaler (optimizer/grad_scaler.py) on the same flags,
growth factor 2 and backoff 0.5 as get_megatron_optimizer builds it, and requires every
scale (a float32, compared exactly) and both trackers to be equal after every update.
The class puts its tensors on 'cuda'; the test runs it on the CPU by handing the module a
torch whose tensor() drops the device argument (its arithmetic is unchanged).
"""
import logging
import random
import types
import warnings

import pytest
import torch


def dynamic_scaler_class():
    logging.getLogger("megatron").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.optimizer import grad_scaler
    return grad_scaler


@pytest.fixture
def megatron_scaler(monkeypatch):
    module = dynamic_scaler_class()
    cpu_torch = types.SimpleNamespace(**{k: getattr(torch, k) for k in ("max", "float")})
    cpu_torch.tensor = lambda data, dtype=None, device=None: torch.tensor(data, dtype=dtype)
    monkeypatch.setattr(module, "torch", cpu_torch)

    def make(initial, minimum, window, hysteresis):
        return module.DynamicGradScaler(initial_scale=initial, min_scale=minimum,
                                        growth_factor=2.0, backoff_factor=0.5,
                                        growth_interval=window, hysteresis=hysteresis)
    return make


def megatron_sequence(scaler, flags):
    out = []
    for f in flags:
        scaler.update(f == "1")
        st = scaler.state_dict()
        assert st["scale"].dtype == torch.float32
        out.append((float(st["scale"].item()), st["growth_tracker"], st["hysteresis_tracker"]))
    return out


def ours(run_mg, initial, minimum, window, hysteresis, flags):
    p = run_mg(["scaler_probe", repr(initial), repr(minimum), window, hysteresis, flags])
    rows = [line.split() for line in p.stdout.splitlines()]
    return [(float(a), int(b), int(c)) for a, b, c in rows]


CASES = [
    # fp16 defaults: the first overflows of a run at 2**32 (hysteresis 2), then training
    (2.0**32, 1.0, 1000, 2, "1" * 12 + "0" * 30),
    # hysteresis absorbs isolated overflows; the spent tracker halves at every later one
    (65536.0, 1.0, 4, 3, "10" * 3 + "0" * 8 + "110111" + "0" * 9),
    # the floor: a long run of overflows stops at --min-loss-scale
    (1024.0, 8.0, 5, 1, "1" * 15 + "0" * 11 + "1"),
    # growth after every window of clean steps (and an overflow restarting the window)
    (1.0, 1.0, 3, 2, "0" * 10 + "1" + "0" * 7),
    # a floor that is not a power of two: max(scale * 0.5, min) in float32
    (1000.0, 3.0, 2, 1, "1111111" + "00" * 4 + "1111"),
]


@pytest.mark.parametrize("initial,minimum,window,hysteresis,flags", CASES)
def test_dynamic_scaler_sequences(run_mg, megatron_scaler, initial, minimum, window, hysteresis,
                                  flags):
    want = megatron_sequence(megatron_scaler(initial, minimum, window, hysteresis), flags)
    got = ours(run_mg, initial, minimum, window, hysteresis, flags)
    assert len(got) == len(flags)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"after update {i + 1} (flag {flags[i]}): ours {g}, megatron-core {w}"


def test_dynamic_scaler_random_sequences(run_mg, megatron_scaler):
    rng = random.Random(14)
    for _ in range(20):
        initial = 2.0 ** rng.randint(0, 40)
        minimum = min(initial, rng.choice([1.0, 2.0, 0.25, 3.0]))
        window, hysteresis = rng.randint(1, 6), rng.randint(1, 4)
        p = rng.choice([0.1, 0.5, 0.9])
        flags = "".join("1" if rng.random() < p else "0" for _ in range(60))
        want = megatron_sequence(megatron_scaler(initial, minimum, window, hysteresis), flags)
        assert ours(run_mg, initial, minimum, window, hysteresis, flags) == want, \
            (initial, minimum, window, hysteresis, flags)
