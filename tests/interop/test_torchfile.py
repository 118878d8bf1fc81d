"""Interop tests for the torch.save module (libcommon torchfile/zip/pickle) against torch.

pt_tool (tests/tools/pt_tool.c) dumps a .pt file as stable text; render() below produces the
same text from the object torch.load returns, so a dump of a file torch wrote must equal
render(torch.load(file)). The other direction: files pt_tool writes must load with
torch.load(weights_only=True) (argparse.Namespace only when allow-listed, as Megatron does)
and hold exactly the expected values; their ZIP layout must match what torch writes.
"""
import argparse
import collections
import io
import random
import struct
import sys
import subprocess
import zipfile
import zlib

import numpy
import pytest
import torch

from conftest import run_mg

DTYPES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL", torch.float8_e4m3fn: "F8_E4M3",
    torch.float8_e5m2: "F8_E5M2", torch.uint16: "U16", torch.uint32: "U32", torch.uint64: "U64",
}


def quote(s):
    if isinstance(s, bytes):
        body = "".join("\\" + chr(b) if chr(b) in "\\'" else
                       (f"\\x{b:02x}" if b < 0x20 or b >= 0x7f else chr(b)) for b in s)
        return "b'" + body + "'"
    body = "".join("\\" + c if c in "\\'" else
                   (f"\\x{ord(c):02x}" if ord(c) < 0x20 or ord(c) == 0x7f else c) for c in s)
    return "'" + body + "'"


def dims(v):
    return "[" + ", ".join(str(int(x)) for x in v) + "]"


class Renderer:
    """The text pt_tool dump prints, from a loaded object."""

    def __init__(self):
        self.lines = []
        self.keys = {}

    def scalar(self, x):
        if x is None:
            return "None"
        if isinstance(x, bool):
            return "True" if x else "False"
        if isinstance(x, int):
            return str(x)
        if isinstance(x, float):
            return "%.17g" % x
        if isinstance(x, (str, bytes)):
            return quote(x)
        if isinstance(x, torch.dtype):
            return "global " + str(x)
        raise TypeError(f"no rendering for {type(x)}")

    def tensor(self, t):
        key = self.keys.setdefault(t.untyped_storage()._cdata, str(len(self.keys)))
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        return (f"tensor {DTYPES[t.dtype]} shape={dims(t.shape)} stride={dims(t.stride())} "
                f"offset={t.storage_offset()} storage={key} crc32=0x{zlib.crc32(raw):08x}")

    def value(self, x, depth, prefix=""):
        pad = "  " * depth + prefix
        if isinstance(x, (tuple, list)):
            self.lines.append(f"{pad}{type(x).__name__}[{len(x)}]")
            for v in x:
                self.value(v, depth + 1)
        elif isinstance(x, (dict, argparse.Namespace)):
            items = list(vars(x).items()) if isinstance(x, argparse.Namespace) else list(x.items())
            self.lines.append(f"{pad}{type(x).__name__}[{len(items)}]")
            for k, v in items:
                self.value(v, depth + 1, self.scalar(k) + ": ")
        elif isinstance(x, torch.Tensor):
            self.lines.append(pad + self.tensor(x))
        elif isinstance(x, numpy.ndarray):
            crc = zlib.crc32(x.tobytes())
            self.lines.append(f"{pad}ndarray {x.dtype.str} shape={dims(x.shape)} crc32=0x{crc:08x}")
        else:
            self.lines.append(pad + self.scalar(x))


def render(obj):
    r = Renderer()
    r.value(obj, 0)
    return "\n".join(r.lines) + "\n"


def dump(path):
    return run_mg(["pt_tool", "dump", path]).stdout


def state_dict():
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(12, 4, generator=g).to(torch.bfloat16)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd = collections.OrderedDict()
    sd["embedding.word_embeddings.weight"] = torch.randn(8, 4, generator=g).to(torch.bfloat16)
    sd["q"] = qkv[0:4]                       # views sharing one bf16 storage
    sd["k_t"] = qkv[4:8].t()                 # non-contiguous
    sd["v_col"] = qkv[8:, 1]                 # strided, offset
    sd["base"] = base
    sd["base_cols"] = base[:, 1::2]
    sd["f16"] = torch.tensor([1.0, -2.5, 65504.0], dtype=torch.float16)
    sd["f64"] = torch.tensor([1e-300, -0.0], dtype=torch.float64)
    sd["i64"] = torch.tensor([[0, -1], [2**40, -2**63]], dtype=torch.int64)
    sd["i32"] = torch.tensor([7, -7], dtype=torch.int32)
    sd["i8"] = torch.tensor([-128, 127], dtype=torch.int8)
    sd["u8"] = torch.tensor([0, 255], dtype=torch.uint8)
    sd["mask"] = torch.tensor([True, False])
    sd["scalar"] = torch.tensor(3.25)
    sd["fp8"] = torch.tensor([0.5, -1.0]).to(torch.float8_e4m3fn)
    sd["u16"] = torch.tensor([1, 65535], dtype=torch.uint16)
    sd["layer._extra_state"] = None
    return sd


def megatron_like():
    random.seed(1234)
    numpy.random.seed(5)
    args = argparse.Namespace(
        num_layers=2, hidden_size=8, num_attention_heads=2, ffn_hidden_size=32,
        tensor_model_parallel_size=1, pipeline_model_parallel_size=1, padded_vocab_size=16,
        params_dtype=torch.bfloat16, bf16=True, fp16=False, vocab_size=None, lr=3e-4,
        tokenizer_type="GPT2BPETokenizer", data_path=["1.0", "/data/x_text_document"],
        consumed_train_samples=1280, normalization="LayerNorm", norm_epsilon=1e-5)
    model = state_dict()
    exp_avg = torch.zeros(8, 4)
    return {
        "args": args,
        "checkpoint_version": 3.0,
        "iteration": 10,
        "model": model,
        "optimizer": {
            "optimizer": {
                "state": {0: {"exp_avg": exp_avg, "exp_avg_sq": exp_avg + 1, "step": torch.tensor(10.0)}},
                "param_groups": [{"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "params": [0]}],
            },
            "fp32_from_fp16_params": [[model["embedding.word_embeddings.weight"].float()]],
        },
        "opt_param_scheduler": {"max_lr": 3e-4, "num_steps": 1280, "lr_decay_style": "cosine"},
        "rng_state": [{
            "random_rng_state": random.getstate(),
            "np_rng_state": numpy.random.get_state(),
            "torch_rng_state": torch.get_rng_state(),
            "cuda_rng_state": None,
        }],
        "num_floating_point_operations_so_far": 123456789012345,
    }


def test_dump_state_dict_matches_torch(tmp_path):
    p = tmp_path / "sd.pt"
    torch.save(state_dict(), p)
    assert dump(p) == render(torch.load(p, weights_only=True))


def test_dump_megatron_checkpoint_matches_torch(tmp_path):
    d = tmp_path / "iter_0000010" / "mp_rank_00"
    d.mkdir(parents=True)
    p = d / "model_optim_rng.pt"
    torch.save(megatron_like(), p)
    text = dump(p)
    assert text == render(torch.load(p, weights_only=False))
    assert "  'args': Namespace[17]\n    'num_layers': 2\n" in text
    assert "'torch_rng_state': tensor U8 shape=[5056]" in text
    assert "'np_rng_state': tuple[5]\n" in text and "ndarray <u4 shape=[624]" in text


def test_dump_buffer_saved_file_and_pickle_protocol(tmp_path):
    """torch.save to a file object uses the archive name 'archive'; protocol 4 pickles."""
    buf = io.BytesIO()
    obj = {"w": torch.ones(3, dtype=torch.float16), "t": (1, 2.5, "x", None)}
    torch.save(obj, buf, pickle_protocol=4)
    p = tmp_path / "buf.pt"
    p.write_bytes(buf.getvalue())
    assert zipfile.ZipFile(p).namelist()[0] == "archive/data.pkl"
    # torch's own weights_only unpickler has no FRAME opcode: load the reference fully
    assert dump(p) == render(torch.load(p, weights_only=False))


EXPECTED_F32 = [i * 0.5 - 1.0 for i in range(12)]


def check_written(d):
    assert list(d.keys())[:4] == ["checkpoint_version", "iteration", "model", "nested"] or \
        list(d.keys())[:5] == ["args", "checkpoint_version", "iteration", "model", "nested"]
    assert d["checkpoint_version"] == 3.0 and d["iteration"] == 10
    m = d["model"]
    assert type(m) is collections.OrderedDict
    assert list(m.keys()) == ["w_f32", "w_bf16", "w_f16", "idx_i64", "mask", "scalar", "view"]
    assert torch.equal(m["w_f32"], torch.tensor(EXPECTED_F32).reshape(3, 4))
    bf = torch.tensor([1.0, -2.0, 1.5, 0.0, float("inf"), 3.140625], dtype=torch.bfloat16)
    assert m["w_bf16"].dtype == torch.bfloat16 and torch.equal(m["w_bf16"], bf.reshape(2, 3))
    f16 = torch.tensor([1.0, -2.0, 1.5, 65504.0, 2.0**-24], dtype=torch.float16)
    assert m["w_f16"].dtype == torch.float16 and torch.equal(m["w_f16"], f16)
    assert torch.equal(m["idx_i64"], torch.tensor([[0, -1], [2**40, -2**63]]))
    assert torch.equal(m["mask"], torch.tensor([True, False, True]))
    assert m["scalar"].shape == () and m["scalar"].item() == 2.5
    assert torch.equal(m["view"], m["w_f32"].reshape(-1)[1::4])
    assert m["view"].untyped_storage().data_ptr() == m["w_f32"].untyped_storage().data_ptr()
    n = d["nested"]
    assert n["a"]["b"] == [1, -2, 255, 256, 65535, 65536, 70000, -3000000000, 2**40, 2**63 - 1,
                           -2**63, 1.5, -1e-300, "h\u00e9llo 'q' \\ \n", None, True, False]
    assert n["tuple"] == (1, 2, 3, 4)
    assert n["big_list"] == [i * 7 for i in range(2500)]
    assert n["int_keys"] == {i: -i for i in range(1001)}
    assert n["empty"] == {} and n["empty_list"] == []
    assert d["bytes"] == b"\x00\xff abc\x80"
    assert d["dtype"] is torch.bfloat16


def test_written_file_loads_weights_only(tmp_path):
    p = tmp_path / "w.pt"
    run_mg(["pt_tool", "write", p])
    d = torch.load(p, weights_only=True)
    check_written(d)
    check_written(torch.load(p, weights_only=True, mmap=True))
    assert dump(p) == render(d)


def test_written_namespace_needs_allowlist(tmp_path):
    """torch 2.x weights_only refuses argparse.Namespace unless allow-listed (Megatron does)."""
    p = tmp_path / "model_optim_rng.pt"
    run_mg(["pt_tool", "write", "--namespace", p])
    # The refusal is checked in a fresh interpreter: importing megatron-core (other tests do)
    # adds argparse.Namespace to torch's process-wide safe globals.
    probe = subprocess.run([sys.executable, "-c", "import sys, torch; torch.load(sys.argv[1], "
                            "weights_only=True)", str(p)], capture_output=True, text=True)
    assert probe.returncode != 0 and "argparse.Namespace" in probe.stderr, probe.stderr
    with torch.serialization.safe_globals([argparse.Namespace]):
        d = torch.load(p, weights_only=True)
    check_written(d)
    assert d["args"] == argparse.Namespace(num_layers=2, hidden_size=8, params_dtype=torch.bfloat16,
                                           lr=1e-4, tokenizer_type="GPT2BPETokenizer",
                                           vocab_size=None, bf16=True, layers=[1, 2])


def local_data_offset(raw, info):
    n, m = struct.unpack_from("<HH", raw, info.header_offset + 26)
    return info.header_offset + 30 + n + m


def test_written_layout_matches_torch(tmp_path):
    p = tmp_path / "model_optim_rng.pt"
    run_mg(["pt_tool", "write", p])
    ref = tmp_path / "ref.pt"
    torch.save({"a": torch.ones(2), "b": torch.zeros(3)}, ref)
    z, zr = zipfile.ZipFile(p), zipfile.ZipFile(ref)
    assert z.testzip() is None
    names = [i.filename.split("/", 1)[1] for i in z.infolist()]
    ref_names = [i.filename.split("/", 1)[1] for i in zr.infolist()]
    assert names[:4] == ref_names[:4] == ["data.pkl", ".format_version", ".storage_alignment", "byteorder"]
    assert names[-2:] == ref_names[-2:] == ["version", ".data/serialization_id"]
    assert names[4:-2] == [f"data/{k}" for k in range(6)]
    assert all(i.filename.startswith("model_optim_rng/") for i in z.infolist())
    raw, rraw = p.read_bytes(), ref.read_bytes()
    for zf, data in ((z, raw), (zr, rraw)):
        for i in zf.infolist():
            assert i.compress_type == zipfile.ZIP_STORED and i.flag_bits == 0x0808
            assert local_data_offset(data, i) % 64 == 0
    for name in ("version", ".format_version", ".storage_alignment", "byteorder"):
        assert z.read("model_optim_rng/" + name) == zr.read("ref/" + name)
    sid = z.read("model_optim_rng/.data/serialization_id")
    assert len(sid) == 40 and sid.isdigit()
    # ZIP64 end records are always present, as torch writes them
    assert raw[-98:-94] == b"PK\x06\x06" and rraw[-98:-94] == b"PK\x06\x06"


def test_roundtrip_megatron_checkpoint(tmp_path):
    src = tmp_path / "model_optim_rng.pt"
    torch.save(megatron_like(), src)
    out = tmp_path / "out" / "model_optim_rng.pt"
    out.parent.mkdir()
    run_mg(["pt_tool", "roundtrip", src, out])
    a = torch.load(src, weights_only=False)
    b = torch.load(out, weights_only=False)
    assert render(a) == render(b) == dump(out)
    assert b["args"] == a["args"]
    assert b["rng_state"][0]["random_rng_state"] == a["rng_state"][0]["random_rng_state"]
    np_a, np_b = a["rng_state"][0]["np_rng_state"], b["rng_state"][0]["np_rng_state"]
    assert np_a[0] == np_b[0] and numpy.array_equal(np_a[1], np_b[1]) and np_a[2:] == np_b[2:]
    # views keep sharing one storage
    m = b["model"]
    assert m["q"].untyped_storage().data_ptr() == m["k_t"].untyped_storage().data_ptr()
    assert m["k_t"].stride() == (1, 4) and m["v_col"].storage_offset() == 33


def test_dump_rejects_corrupt_files(tmp_path):
    src = tmp_path / "sd.pt"
    torch.save({"w": torch.ones(4)}, src)
    raw = src.read_bytes()
    cases = {
        "trunc.pt": raw[: len(raw) // 2],
        "magic.pt": b"XX" + raw[2:],
        "empty.pt": b"",
    }
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        r = run_mg(["pt_tool", "dump", p], check=False)
        assert r.returncode == 1, name
        assert r.stderr.startswith("pt_tool: error: ") and name in r.stderr, r.stderr
        assert r.stdout == ""
