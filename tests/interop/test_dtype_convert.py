"""Interop tests for the dtype conversion (libcommon/base/dtype_convert.c) against torch.

build/tests/tools/dtype_tool converts raw little-endian arrays (FROM TO < in > out); torch
converts the same bits with tensor.to(dtype) on CPU. Inputs: every 16-bit pattern for BF16 and
F16, a stride sample of all F32 patterns plus random weights-like values, specials (zeros,
subnormals, max normal, rounding ties, overflow, Inf, NaN payloads), and F64 values built to
hit the double rounding of F64 -> F32 -> BF16/F16.

Every non-NaN result must be bit-identical to torch's. For NaNs torch's bits depend on its code
path (on AVX2: F32->BF16 gives 0xFFFF, F16->BF16 0x7FC0, F64->BF16 and F16->F32 differ between
vector lanes and the scalar tail), so there ours must follow the documented rule (sign kept,
quiet, top payload bits kept; BF16->F32 a plain shift), torch's must be NaN, and for the pairs
that torch converts with the hardware's instructions (F32->F16, F64->F32, F64->F16, BF16->F16,
F32->F64, BF16->F64, F16->F64, BF16->F32) the NaN bits must match torch's too.
"""
import os
import subprocess

import numpy as np
import pytest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "build", "tests", "tools", "dtype_tool")

TORCH = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16}
UINT = {"F32": np.uint32, "F64": np.uint64, "BF16": np.uint16, "F16": np.uint16}
SINT = {"F32": torch.int32, "F64": torch.int64, "BF16": torch.int16, "F16": torch.int16}
NAN_BITS_MATCH = {("F32", "F16"), ("F64", "F32"), ("F64", "F16"), ("BF16", "F16"),
                  ("F32", "F64"), ("BF16", "F64"), ("F16", "F64"), ("BF16", "F32")}


def tool(frm, to, data, threads=None):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} not built (make tools-test)")
    args = [TOOL] + (["--threads", str(threads)] if threads is not None else []) + [frm, to]
    p = subprocess.run(args, input=data, capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
    return p.stdout


def torch_convert(frm, to, bits):
    t = torch.from_numpy(bits.view(UINT[frm]).view(np.dtype(f"i{bits.itemsize}")).copy())
    out = t.view(TORCH[frm]).to(TORCH[to]).contiguous().view(SINT[to]).numpy()
    return out.view(UINT[to])


def is_nan(bits, dt):
    b = bits.astype(np.uint64)
    if dt == "F64":
        return (b & 0x7FFFFFFFFFFFFFFF) > 0x7FF0000000000000
    if dt == "F32":
        return (b & 0x7FFFFFFF) > 0x7F800000
    if dt == "BF16":
        return (b & 0x7FFF) > 0x7F80
    return (b & 0x7FFF) > 0x7C00


def nan_rule(frm, to, bits):
    """Our documented NaN bits (applied to every element; use where the input is NaN)."""
    b = bits.astype(np.uint64)
    if frm == "F64":  # -> F32 first
        f = ((b >> 32) & 0x80000000) | 0x7FC00000 | ((b >> 29) & 0x7FFFFF)
    elif frm == "BF16":
        f = b << 16
    elif frm == "F16":
        f = ((b & 0x8000) << 16) | 0x7FC00000 | ((b & 0x3FF) << 13)
    else:
        f = b
    if to == "F32":
        return f.astype(np.uint32)
    if to == "BF16":
        return ((f >> 16) | 0x40).astype(np.uint16)
    if to == "F16":
        return (((f >> 16) & 0x8000) | 0x7E00 | ((f >> 13) & 0x3FF)).astype(np.uint16)
    f64 = ((f & 0x80000000) << 32) | 0x7FF8000000000000 | ((f & 0x7FFFFF) << 29)
    return f64.astype(np.uint64)


def compare(frm, to, bits):
    bits = np.ascontiguousarray(bits.astype(UINT[frm]))
    ours = np.frombuffer(tool(frm, to, bits.tobytes()), dtype=UINT[to])
    theirs = torch_convert(frm, to, bits)
    assert ours.shape == theirs.shape
    nan = is_nan(bits, frm)
    bad = np.nonzero((ours != theirs) & ~nan)[0]
    if len(bad):
        i = bad[0]
        pytest.fail(f"{frm}->{to}: {len(bad)} non-NaN mismatches, first input {int(bits[i]):#x}: "
                    f"ours {int(ours[i]):#x}, torch {int(theirs[i]):#x}")
    assert is_nan(theirs[nan], to).all(), "torch gave a non-NaN for a NaN"
    want = nan_rule(frm, to, bits[nan])
    assert (ours[nan] == want).all(), f"{frm}->{to}: NaN bits differ from the documented rule"
    if (frm, to) in NAN_BITS_MATCH:
        assert (ours[nan] == theirs[nan]).all(), f"{frm}->{to}: NaN bits differ from torch"
    return ours


F32_SPECIAL = [
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00408000,
    0x00018000, 0x00010000, 0x3F800000, 0x3F808000, 0x3F818000, 0x3F808001, 0x3F801000,
    0x3F803000, 0x3F801001, 0x7F7FFFFF, 0x7F7F7FFF, 0x7F7F8000, 0x477FE000, 0x477FEFFF,
    0x477FF000, 0x477FF001, 0x33800000, 0x33000000, 0x33000001, 0x33C00000, 0x387FE000,
    0x387FA000, 0x38800000, 0xB8000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001,
    0x7F812345, 0xFF800001, 0x7FFFFFFF, 0x7FBFFFFF, 0x7F802000, 0xFFFFE000,
]


def f32_inputs():
    rng = np.random.default_rng(5)
    stride = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32)
    weights = (rng.standard_normal(200_000) * 0.02).astype(np.float32).view(np.uint32)
    wide = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    # every low half around the BF16 rounding boundary, for random upper halves
    hi = rng.integers(0, 1 << 16, 20_000, dtype=np.uint64).astype(np.uint32) << 16
    ties = (hi[:, None] | np.array([0x7FFF, 0x8000, 0x8001, 0x0FFF, 0x1000, 0x1001, 0x3000],
                                   dtype=np.uint32)).ravel()
    return np.concatenate([np.array(F32_SPECIAL, dtype=np.uint32), stride, weights, wide, ties])


def f64_inputs():
    rng = np.random.default_rng(6)
    with np.errstate(invalid="ignore"):  # NaNs: the widening quiets them, fine as inputs
        f32 = f32_inputs()[::3].view(np.float32).astype(np.float64).view(np.uint64)
    # near F32 (and so BF16/F16) rounding boundaries: F32 values +- tiny offsets in F64
    base = (rng.standard_normal(100_000) * 10.0).astype(np.float32).view(np.uint32)
    low = rng.choice([0x8000, 0x1000, 0x3000, 0x7FFF], base.size).astype(np.uint32)
    base = (base & 0xFFFF0000) | low
    near = base.view(np.float32).astype(np.float64).view(np.uint64)
    near = np.concatenate([near, near + 1, near - 1, near + (1 << 20), near - (1 << 20)])
    raw = rng.integers(0, 1 << 63, 100_000, dtype=np.uint64) * 2
    raw += rng.integers(0, 2, 100_000, dtype=np.uint64)
    special = np.array([0x3FF0100004000000, 0x3FF0020000100000, 0x40EFFDFFFFFF0000,
                        0x47EFFFFFF0000000, 0x47EFFFFFEFFFFFFF, 0x47EFFFFFFFFFFFFF,
                        0x36A0000000000000, 0x3690000000000000, 0x3690000000000001,
                        0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                        0xFFF8000000000123, 0x7FF0123456789ABC, 0xFFF0000000000001,
                        0x0000000000000001, 0x8000000000000000], dtype=np.uint64)
    return np.concatenate([special, f32, near, raw])


ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


@pytest.mark.parametrize("to", ["BF16", "F16", "F64"])
def test_f32_to(to):
    compare("F32", to, f32_inputs())


@pytest.mark.parametrize("frm,to", [("BF16", "F32"), ("F16", "F32"), ("BF16", "F16"),
                                    ("F16", "BF16"), ("BF16", "F64"), ("F16", "F64")])
def test_all_16bit_values(frm, to):
    compare(frm, to, ALL16)


@pytest.mark.parametrize("to", ["BF16", "F16", "F32"])
def test_f64_to(to):
    compare("F64", to, f64_inputs())


def test_f64_double_rounding_like_torch():
    """F64 -> BF16/F16 rounds to F32 first (torch does): 1 + 2^-8 + 2^-30 -> BF16 1.0."""
    x = np.array([1 + 2**-8 + 2**-30, 1 + 2**-11 + 2**-40], dtype=np.float64)
    bf = np.frombuffer(tool("F64", "BF16", x.tobytes()), dtype=np.uint16)
    hf = np.frombuffer(tool("F64", "F16", x.tobytes()), dtype=np.uint16)
    assert bf.tolist() == [0x3F80, 0x3F80] and hf.tolist() == [0x3C04, 0x3C00]
    assert torch.tensor(x).to(torch.bfloat16).view(torch.int16).tolist() == [0x3F80, 0x3F80]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 65536, 300_001])
def test_lengths_and_threads_agree(n):
    """Any length, single-threaded and parallel: the same bytes as torch (non-NaN inputs)."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    for to in ("BF16", "F16"):
        one = tool("F32", to, x.tobytes(), threads=1)
        assert tool("F32", to, x.tobytes(), threads=4) == one
        assert tool("F32", to, x.tobytes()) == one
        ref = torch.from_numpy(x).to(TORCH[to]).view(torch.int16).numpy().tobytes()
        assert one == ref


def test_round_trip_bf16_f32_bf16():
    ours = np.frombuffer(tool("F32", "BF16", tool("BF16", "F32", ALL16.tobytes())), dtype=np.uint16)
    nan = is_nan(ALL16, "BF16")
    assert (ours[~nan] == ALL16[~nan]).all()
    assert (ours[nan] == (ALL16[nan] | 0x40)).all()


def test_unsupported_pair_fails():
    p = subprocess.run([TOOL, "I64", "BF16"], input=b"\0" * 8, capture_output=True)
    assert p.returncode == 1 and b"cannot convert I64 to BF16" in p.stderr
