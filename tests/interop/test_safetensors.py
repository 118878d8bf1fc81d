"""Interop tests of the safetensors module (libcommon/ckptfmt/safetensors_*.c) against the safetensors
Python library (0.8, numpy and torch front ends).

The C side runs through build/tests/tools/st_tool (write / dump, see tests/tools/st_tool.c).
Checked:
  - files written by safetensors.torch.save_file / safetensors.numpy.save_file (every dtype
    both sides know, bf16 and fp8 included, 0-dim scalars, empty tensors, metadata) are read
    by our reader with identical names, dtypes, shapes, offsets and data bytes;
  - files written by our writer (whole tensors, and streamed in small pieces that span tensor
    boundaries) are byte-identical to save_file's for the same tensors and metadata, names
    with JSON escapes and non-ASCII included, and safe_open loads them back;
  - several metadata keys (the library orders them randomly): safe_open reads ours back;
  - corrupt or inconsistent headers: our reader rejects exactly the files the library
    rejects, among a set of hand-made near misses; one deliberate difference: a tensor name
    or metadata key given twice (the library keeps the last entry, we reject the file as
    ambiguous).
"""
import json
import random
import struct
import subprocess
import zlib

import numpy
import pytest
import torch
from safetensors import safe_open
from safetensors.numpy import save_file as np_save_file
from safetensors.torch import save_file as torch_save_file

from conftest import run_mg, tools_dir_path

TORCH_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.float64: "F64",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
    torch.float8_e4m3fn: "F8_E4M3",
    torch.float8_e5m2: "F8_E5M2",
    torch.uint16: "U16",
    torch.uint32: "U32",
    torch.uint64: "U64",
}

NUMPY_DTYPES = {
    numpy.float32: "F32",
    numpy.float16: "F16",
    numpy.float64: "F64",
    numpy.int64: "I64",
    numpy.int32: "I32",
    numpy.int16: "I16",
    numpy.int8: "I8",
    numpy.uint8: "U8",
    numpy.bool_: "BOOL",
    numpy.uint16: "U16",
    numpy.uint32: "U32",
    numpy.uint64: "U64",
}

SHAPES = [(), (0,), (3, 0, 2), (1,), (5,), (2, 3), (4, 1, 3), (17, 9)]


def torch_bytes(t):
    """Little-endian raw bytes of a contiguous tensor (any dtype, bf16/fp8 included)."""
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def random_torch(rng, dtype, shape):
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).to(torch.bool)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g, dtype=torch.float32) * 10).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -(2**31)), min(info.max, 2**31 - 1)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(dtype)


def torch_set(seed, names=None):
    rng = random.Random(seed)
    tensors = {}
    for i, dtype in enumerate(TORCH_DTYPES):
        for j in range(2):
            shape = rng.choice(SHAPES)
            name = names[(i * 2 + j) % len(names)] + f".{i}.{j}" if names else f"layer.{i}.w{j}"
            tensors[name] = random_torch(rng, dtype, shape)
    return tensors


def dump(path):
    """st_tool dump FILE --data -> (header_len, metadata list, {name: (dtype, shape, off, n, data)})"""
    out = run_mg(["st_tool", "dump", path, "--data"]).stdout
    lines = out.split("\n")
    assert lines[-1] == ""
    header = int(lines[0].split()[1])
    meta, tensors, order = [], {}, []
    for line in lines[1:-1]:
        f = line.split("\t")
        if f[0] == "meta":
            meta.append((f[1], f[2]))
            continue
        assert f[0] == "tensor" and len(f) == 8, line
        shape = tuple(int(x) for x in f[3].split(",")) if f[3] else ()
        data = bytes.fromhex(f[7])
        assert int(f[6], 16) == zlib.crc32(data)
        tensors[f[1]] = (f[2], shape, int(f[4]), int(f[5]), data)
        order.append(f[1])
    return header, meta, tensors, order


def parse_header(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    return n, json.loads(raw[8 : 8 + n])


def check_dump_matches(path, expected, metadata):
    """expected: {name: (dtype string, shape tuple, bytes)} as the library wrote them."""
    n, hdr = parse_header(path)
    header, meta, tensors, order = dump(path)
    assert header == n
    assert dict(meta) == (metadata or {})
    assert set(tensors) == set(expected)
    for name, (dt, shape, data) in expected.items():
        got = tensors[name]
        assert got[0] == dt, name
        assert got[1] == shape, name
        assert got[4] == data, name
        assert [got[2], got[2] + got[3]] == hdr[name]["data_offsets"], name
    offsets = [tensors[k][2] for k in order]
    assert offsets == sorted(offsets)


def spec_text(tensors, metadata, order=None):
    """The st_tool write spec for {name: (dtype, shape, bytes)}."""
    lines = [f"meta\t{k}\t{v}" for k, v in (metadata or {}).items()]
    names = order or list(tensors)
    for name in names:
        dt, shape, data = tensors[name]
        lines.append(f"tensor\t{name}\t{dt}\t{','.join(map(str, shape))}\t{data.hex()}")
    return ("\n".join(lines) + "\n").encode()


def st_write(out, tensors, metadata, chunk=None, order=None):
    cmd = [str(tools_dir_path() / "st_tool"), "write", str(out)] + ([str(chunk)] if chunk else [])
    p = subprocess.run(cmd, input=spec_text(tensors, metadata, order), capture_output=True)
    assert p.returncode == 0, p.stderr.decode()


def as_expected_torch(tensors):
    return {k: (TORCH_DTYPES[v.dtype], tuple(v.shape), torch_bytes(v)) for k, v in tensors.items()}


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
@pytest.mark.parametrize("seed", [1, 2])
def test_read_torch_written(tmp_path, seed, metadata):
    tensors = torch_set(seed)
    path = tmp_path / "m.safetensors"
    torch_save_file(tensors, str(path), metadata=metadata)
    check_dump_matches(path, as_expected_torch(tensors), metadata)


def test_read_numpy_written(tmp_path):
    rng = numpy.random.default_rng(7)
    arrays = {}
    for i, dt in enumerate(NUMPY_DTYPES):
        for shape in [(), (0, 4), (3, 5)]:
            a = (rng.standard_normal(shape) * 100).astype(dt) if dt != numpy.bool_ else rng.random(shape) > 0.5
            arrays[f"np.{i}.{len(shape)}.{numpy.prod(shape)}"] = numpy.ascontiguousarray(a)
    path = tmp_path / "n.safetensors"
    np_save_file(arrays, str(path), metadata={"format": "np"})
    expected = {k: (NUMPY_DTYPES[a.dtype.type], a.shape, a.astype(a.dtype.newbyteorder("<")).tobytes())
                for k, a in arrays.items()}
    check_dump_matches(path, expected, {"format": "np"})


@pytest.mark.parametrize("chunk", [None, 1, 7, 1000])
@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_write_byte_identical_torch(tmp_path, chunk, metadata):
    names = ["model.embed_tokens", "lm_head", "a\"quote", "back\\slash", "ctl\x01\x1f\x7f",
             "caf\u00e9", "\u4e2d\u6587", "emoji\U0001f600", "slash/name", "Zed", "_x"]
    tensors = torch_set(11, names)
    ref = tmp_path / "ref.safetensors"
    torch_save_file(tensors, str(ref), metadata=metadata)
    ours = tmp_path / "ours.safetensors"
    order = sorted(tensors, key=lambda k: random.Random(k).random())  # declaration order is irrelevant
    st_write(ours, as_expected_torch(tensors), metadata, chunk=chunk, order=order)
    assert ours.read_bytes() == ref.read_bytes()
    with safe_open(str(ours), framework="pt") as f:
        assert sorted(f.keys()) == sorted(tensors)
        assert f.metadata() == metadata
        for k, v in tensors.items():
            got = f.get_tensor(k)
            assert got.dtype == v.dtype and got.shape == v.shape
            assert torch_bytes(got) == torch_bytes(v)


def test_write_byte_identical_numpy(tmp_path):
    rng = numpy.random.default_rng(3)
    arrays = {f"t{i}": rng.integers(-100, 100, size=(i % 4, 3)).astype(dt)
              for i, dt in enumerate([numpy.int8, numpy.float32, numpy.float64, numpy.int16,
                                      numpy.uint8, numpy.float16, numpy.int64, numpy.uint32])}
    ref = tmp_path / "ref.safetensors"
    np_save_file(arrays, str(ref), metadata={"format": "np"})
    ours = tmp_path / "ours.safetensors"
    st_write(ours, {k: (NUMPY_DTYPES[a.dtype.type], a.shape, a.tobytes()) for k, a in arrays.items()},
             {"format": "np"})
    assert ours.read_bytes() == ref.read_bytes()


@pytest.mark.parametrize("metadata", [{}, {"format": "pt", "b": "2", "a": "\u00e9\"\\"}])
def test_write_empty_and_multi_metadata(tmp_path, metadata):
    ours = tmp_path / "ours.safetensors"
    st_write(ours, {}, metadata)
    with safe_open(str(ours), framework="pt") as f:
        assert list(f.keys()) == []
        assert f.metadata() == (metadata or None)
    if not metadata:
        ref = tmp_path / "ref.safetensors"
        torch_save_file({}, str(ref))
        assert ours.read_bytes() == ref.read_bytes()
    else:
        assert dict(dump(ours)[1]) == metadata


def raw_file(header, data_len):
    h = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(h)) + h + bytes(range(256)) * (data_len // 256) + bytes(range(data_len % 256))


U8 = '{"dtype":"U8","shape":[%d],"data_offsets":[%d,%d]}'
NEAR_MISSES = [
    ("{}", 0),
    ("{}", 1),
    ('{"a":%s}' % (U8 % (2, 0, 2)), 2),
    ('{"a":%s}' % (U8 % (2, 0, 2)), 3),
    ('{"a":%s}' % (U8 % (2, 0, 2)), 1),
    ('{"a":%s}' % (U8 % (2, 1, 3)), 3),
    ('{"a":%s,"b":%s}' % (U8 % (2, 0, 2), U8 % (1, 3, 4)), 4),
    ('{"a":%s,"b":%s}' % (U8 % (2, 0, 2), U8 % (2, 1, 3)), 3),
    ('{"b":%s,"a":%s}' % (U8 % (1, 2, 3), U8 % (2, 0, 2)), 3),
    ('{"a":%s,"e":%s,"f":%s}' % (U8 % (2, 0, 2), U8 % (0, 2, 2), U8 % (0, 2, 2)), 2),
    ('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', 4),
    ('{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', 4),
    ('{"a":{"dtype":"F32","shape":[1,0],"data_offsets":[0,0]}}', 0),
    ('{"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}}', 4),
    ('{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":[]}}', 1),
    ('{"__metadata__":{"k":"v"}}', 0),
    ('{"__metadata__":{"k":1}}', 0),
    ('{"__metadata__":null}', 0),
    ('{"a":[]}', 0),
    ("[]", 0),
    ("{} ", 0),
    ("  {}", 0),
    ("{}}", 0),
    ('{"a":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}}', 0),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1.0]}}', 1),
    ('{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"dtype":"U8"}}', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\n', 1),
    ('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}\x00', 1),
]


@pytest.mark.parametrize("case", range(len(NEAR_MISSES)))
def test_validation_agrees_with_library(tmp_path, case):
    header, data_len = NEAR_MISSES[case]
    path = tmp_path / "x.safetensors"
    path.write_bytes(raw_file(header, data_len))
    try:
        with safe_open(str(path), framework="np") as f:
            for k in f.keys():
                f.get_tensor(k)
        lib_ok = True
    except Exception:
        lib_ok = False
    p = run_mg(["st_tool", "dump", path], check=False)
    assert (p.returncode == 0) == lib_ok, (header, data_len, p.stderr)
    if not lib_ok:
        assert p.returncode == 1 and "x.safetensors" in p.stderr


def test_duplicate_tensor_name_rejected(tmp_path):
    """The library silently keeps the last of two same-named entries; we refuse the file."""
    path = tmp_path / "dup.safetensors"
    path.write_bytes(raw_file('{"a":%s,"a":%s}' % (U8 % (1, 0, 1), U8 % (2, 0, 2)), 2))
    with safe_open(str(path), framework="np") as f:
        assert list(f.keys()) == ["a"] and f.get_tensor("a").shape == (2,)
    p = run_mg(["st_tool", "dump", path], check=False)
    assert p.returncode == 1 and "duplicate" in p.stderr
    path.write_bytes(raw_file('{"__metadata__":{"k":"v","k":"w"}}', 0))
    with safe_open(str(path), framework="np") as f:
        assert f.metadata() == {"k": "w"}
    p = run_mg(["st_tool", "dump", path], check=False)
    assert p.returncode == 1 and "duplicate" in p.stderr


def index_dump(path):
    lines = run_mg(["st_tool", "index-dump", path]).stdout.split("\n")
    assert lines[-1] == ""
    size = int(lines[0].split()[1])
    params = int(lines[1].split()[1])
    files = [l[5:] for l in lines[2:-1] if l.startswith("file ")]
    entries = dict(l.split("\t") for l in lines[2 + len(files) : -1])
    return size, params, files, entries


def index_write(out, weight_map, size, params):
    text = "".join(f"{k}\t{v}\n" for k, v in weight_map.items()).encode()
    cmd = [str(tools_dir_path() / "st_tool"), "index-write", str(out), str(size), str(params)]
    p = subprocess.run(cmd, input=text, capture_output=True)
    assert p.returncode == 0, p.stderr.decode()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transformers_sharded_checkpoint(tmp_path, dtype):
    """save_pretrained's shards and index are read by us and rewritten byte-identically;
    transformers loads the checkpoint made of our files."""
    import transformers

    transformers.logging.set_verbosity_error()
    cfg = transformers.GPT2Config(vocab_size=100, n_positions=16, n_embd=8, n_layer=3, n_head=2,
                                  bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).to(dtype)
    ref = tmp_path / "ref"
    model.save_pretrained(str(ref), max_shard_size="2KB")
    index = json.loads((ref / "model.safetensors.index.json").read_text())
    size, params, files, entries = index_dump(ref / "model.safetensors.index.json")
    assert entries == index["weight_map"]
    assert files == sorted(set(index["weight_map"].values())) and len(files) > 2
    assert size == index["metadata"]["total_size"] and params == index["metadata"]["total_parameters"]

    ours = tmp_path / "ours"
    ours.mkdir()
    for name in ["config.json", "generation_config.json"]:
        (ours / name).write_bytes((ref / name).read_bytes())
    for shard in files:
        _, meta, tensors, _ = dump(ref / shard)
        st_write(ours / shard, {k: (v[0], v[1], v[4]) for k, v in tensors.items()}, dict(meta))
        assert (ours / shard).read_bytes() == (ref / shard).read_bytes(), shard
    index_write(ours / "model.safetensors.index.json", entries, size, params)
    assert (ours / "model.safetensors.index.json").read_bytes() == \
        (ref / "model.safetensors.index.json").read_bytes()
    loaded = transformers.GPT2LMHeadModel.from_pretrained(str(ours), dtype=dtype)
    want = model.state_dict()
    for k, v in loaded.state_dict().items():
        assert torch.equal(v, want[k]), k


def test_index_json_like_python(tmp_path):
    weight_map = {"caf\u00e9": "b.safetensors", "emoji\U0001f600": "a.safetensors",
                  "q\"\\\x01\x7f": "a.safetensors", "Zed": "b.safetensors", "_x": "a.safetensors"}
    index = {"metadata": {"total_parameters": 7, "total_size": 2**40}, "weight_map": weight_map}
    out = tmp_path / "model.safetensors.index.json"
    index_write(out, weight_map, 2**40, 7)
    assert out.read_text(encoding="utf-8") == json.dumps(index, indent=2, sort_keys=True) + "\n"
    index_write(out, weight_map, 5, -1)
    index = {"metadata": {"total_size": 5}, "weight_map": weight_map}
    assert out.read_text(encoding="utf-8") == json.dumps(index, indent=2, sort_keys=True) + "\n"
    assert index_dump(out)[3] == weight_map
