"""Interop tests of mg-convert reading Hugging Face pytorch_model.bin checkpoints (torch.save of
the state dict, PyTorch's zip format), single-file and sharded with pytorch_model.bin.index.json.

transformers 5 no longer writes .bin checkpoints (save_pretrained has no safe_serialization),
so the sources are written here the way transformers 4 did: torch.save of model.state_dict()
(tied weights keep both keys on one storage), or of consecutive key groups of at most
max_shard_size bytes named pytorch_model-0000i-of-0000n.bin plus the index. The state dicts
come from transformers loading the safetensors source of test_convert.py's tiny random models
(GPT-2 tied, Llama GQA, Qwen2 bf16 tied), so both sources hold the same weights.

Checked:
  1. Each family, single file and sharded, imported into Megatron (TP2 PP1 / TP2 PP2, with
     --verify): every output file is byte-identical to the import of the safetensors source;
     exported back to HF it equals the safetensors source tensor for tensor and transformers
     gives the logits of the .bin source (which transformers loads itself). A direct .bin ->
     HF conversion writes the same model.safetensors as the safetensors source would.
  2. Tensors that are views into one shared storage (storage offsets > 0), old GPT-2 naming
     (no "transformer." prefix, attn.bias / masked_bias buffers), tensors of 1-4 MiB (copied
     file to file from the .bin) all convert like the safetensors source.
  3. --inspect reports "hf pytorch_model.bin" and every tensor of every shard; safetensors win
     when both formats are present.
  4. Bad input: a truncated .bin, an index naming a missing shard (exit 1, the file named, no
     output), a non-contiguous tensor (exit 2, "not supported yet: non-contiguous tensor NAME
     in FILE"), the legacy non-zip torch.save format (exit 2), a non-tensor entry, a tensor
     outside the schema and a shape mismatch (named).
"""
import json
import pathlib
import shutil

import pytest
import torch
import transformers

import test_convert as tc
from conftest import bin_dir_path, run_mg

FAMILIES = sorted(tc.FAMILIES)


# --------------------------------------------------------------------------------------------
# .bin sources

def hf_state(st_dir):
    """model.state_dict() of the safetensors source as transformers loads it (tied keys share)."""
    model = transformers.AutoModelForCausalLM.from_pretrained(st_dir, dtype="auto")
    return model.state_dict()


def copy_json(st_dir, dst):
    dst.mkdir(parents=True)
    for f in pathlib.Path(st_dir).glob("*.json"):
        shutil.copy(f, dst / f.name)
    return dst


def save_single(state, dst):
    torch.save(state, dst / "pytorch_model.bin")
    return dst


def save_sharded(state, dst, max_shard_size):
    """transformers 4's sharding: keys in order, a new shard when the next tensor would pass
    max_shard_size; the index as save_pretrained wrote it."""
    shards, cur, size = [], {}, 0
    for k, v in state.items():
        n = v.numel() * v.element_size()
        if cur and size + n > max_shard_size:
            shards.append(cur)
            cur, size = {}, 0
        cur[k] = v
        size += n
    shards.append(cur)
    weight_map = {}
    for i, part in enumerate(shards, 1):
        name = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
        torch.save(part, dst / name)
        weight_map.update({k: name for k in part})
    total = sum(v.numel() * v.element_size() for v in state.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (dst / "pytorch_model.bin.index.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    assert len(shards) > 2, f"only {len(shards)} shards"
    return dst


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """sources(family, layout) -> (safetensors dir, .bin dir); layout 'single' or 'sharded'."""
    cache = {}

    def get(family, layout="single"):
        if family not in cache:
            cache[family] = tc.make_hf_source(family, tmp_path_factory.mktemp(f"st-{family}"))
        st = cache[family]
        if (family, layout) not in cache:
            dst = copy_json(st, tmp_path_factory.mktemp(f"bin-{family}-{layout}") / "hf")
            state = hf_state(st)
            cache[(family, layout)] = (save_single(state, dst) if layout == "single"
                                       else save_sharded(state, dst, 20000))
        return st, cache[(family, layout)]

    return get


def tree(path):
    """{relative path: bytes} of every file under path."""
    path = pathlib.Path(path)
    return {str(f.relative_to(path)): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()}


def assert_same_tree(actual, expected):
    a, e = tree(actual), tree(expected)
    assert sorted(a) == sorted(e), f"{actual} has {sorted(a)}, {expected} has {sorted(e)}"
    diff = [k for k in sorted(a) if a[k] != e[k]]
    assert not diff, f"{actual} and {expected} differ in {diff}"


def ids_for(st):
    return torch.randint(0, tc.hf_config(st)["vocab_size"], (2, 9),
                         generator=torch.Generator().manual_seed(3))


# --------------------------------------------------------------------------------------------
# 1. .bin imports equal safetensors imports

@pytest.mark.parametrize("layout,tp,pp", [("single", 2, 1), ("sharded", 2, 2)])
@pytest.mark.parametrize("family", FAMILIES)
def test_bin_import_equals_safetensors_import(family, layout, tp, pp, sources, tmp_path):
    st, src = sources(family, layout)
    mg = tc.to_megatron(src, tmp_path / "mg-bin", tp, pp, "--verify")
    assert_same_tree(mg, tc.to_megatron(st, tmp_path / "mg-st", tp, pp))
    back = tc.to_hf(mg, tmp_path / "hf")
    tc.assert_same_tensors(tc.read_hf(back), tc.read_hf(st), f"{family} {layout} .bin -> TP{tp}PP{pp} -> HF")
    ids = ids_for(st)
    a, e = tc.logits(back, ids), tc.logits(src, ids)
    assert a.dtype == e.dtype and torch.equal(a, e), \
        f"logits differ: max |diff| {(a.float() - e.float()).abs().max().item()}"


@pytest.mark.parametrize("family", FAMILIES)
def test_bin_to_safetensors(family, sources, tmp_path):
    st, src = sources(family, "sharded")
    out = tc.to_hf(src, tmp_path / "out")
    ref = tc.to_hf(st, tmp_path / "ref")
    assert_same_tree(out, ref)
    tc.assert_same_tensors(tc.read_hf(out), tc.read_hf(st), f"{family} sharded .bin -> safetensors")


# --------------------------------------------------------------------------------------------
# 2. storage layouts and old naming

def test_views_into_one_storage(sources, tmp_path):
    """Every tensor a view of one flat storage (storage offsets > 0, one storage record)."""
    st, _ = sources("llama")
    state = hf_state(st)
    flat = torch.cat([v.reshape(-1) for v in state.values()])
    views, at = {}, 0
    for k, v in state.items():
        views[k] = flat[at:at + v.numel()].view(v.shape)
        at += v.numel()
    assert views["lm_head.weight"].storage_offset() > 0
    src = save_single(views, copy_json(st, tmp_path / "bin"))
    mg = tc.to_megatron(src, tmp_path / "mg-bin", 2, 1)
    assert_same_tree(mg, tc.to_megatron(st, tmp_path / "mg-st", 2, 1))


def test_old_gpt2_names_and_buffers(sources, tmp_path):
    """GPT-2 as the original hub repos store it: no "transformer." prefix, no lm_head, the
    attn.bias mask and attn.masked_bias buffers (dropped, listed)."""
    st, _ = sources("gpt2")
    state = {k.removeprefix("transformer."): v for k, v in hf_state(st).items() if k != "lm_head.weight"}
    n = tc.hf_config(st)["n_positions"]
    for i in range(tc.hf_config(st)["n_layer"]):
        state[f"h.{i}.attn.bias"] = torch.tril(torch.ones(n, n)).view(1, 1, n, n)
        state[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    src = save_single(state, copy_json(st, tmp_path / "bin"))
    exe = bin_dir_path() / "mg-convert"
    p = run_mg([exe, "--load-dir", src, "--save-dir", tmp_path / "mg-bin", "--target-tensor-parallel-size", 2])
    notes = [n for n in p.stderr.splitlines() if "not converted" in n]
    assert len(notes) == 2 * tc.hf_config(st)["n_layer"] and all("buffer" in n for n in notes), notes
    assert_same_tree(tmp_path / "mg-bin", tc.to_megatron(st, tmp_path / "mg-st", 2, 1))


def test_large_tensors_copied_from_the_bin(tmp_path):
    """Tensors of 1-4 MiB: whole tensors (TP1) and shards (TP2) are copied file to file out of
    the .bin's storage records; the output equals the import of the safetensors source."""
    model = tc.large_llama(11)
    st = tmp_path / "st"
    model.save_pretrained(st)
    src = save_single(model.state_dict(), copy_json(st, tmp_path / "bin"))
    for tp in (1, 2):
        mg = tc.to_megatron(src, tmp_path / f"mg-bin{tp}", tp, 1)
        assert_same_tree(mg, tc.to_megatron(st, tmp_path / f"mg-st{tp}", tp, 1))
    assert_same_tree(tc.to_hf(src, tmp_path / "hf-bin"), tc.to_hf(st, tmp_path / "hf-st"))


# --------------------------------------------------------------------------------------------
# 3. --inspect, preference

def inspect(path):
    return run_mg([bin_dir_path() / "mg-convert", "--inspect", path], check=False)


def test_inspect_reports_bin(sources):
    _, src = sources("qwen2", "sharded")
    p = inspect(src)
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and lines[0] == "format: hf pytorch_model.bin", p.stdout + p.stderr
    assert lines[-1] == "problems: 0", p.stdout
    index = json.loads((src / "pytorch_model.bin.index.json").read_text())["weight_map"]
    listed = {tuple(line.split()[:2]) for line in lines if line.startswith("  ")}
    assert listed == {(f, k) for k, f in index.items()}, sorted(listed ^ {(f, k) for k, f in index.items()})


def test_safetensors_preferred(sources, tmp_path):
    """With model.safetensors present, a .bin beside it is not read (here: not even valid)."""
    st, _ = sources("llama")
    both = tmp_path / "both"
    shutil.copytree(st, both)
    (both / "pytorch_model.bin").write_bytes(b"not a torch file")
    assert inspect(both).stdout.splitlines()[0] == "format: hf safetensors"
    assert_same_tree(tc.to_megatron(both, tmp_path / "mg-both", 2, 1), tc.to_megatron(st, tmp_path / "mg-st", 2, 1))


# --------------------------------------------------------------------------------------------
# 4. bad input

def refused(src, tmp_path):
    out = tmp_path / "out"
    p = tc.mg_convert("--load-dir", src, "--save-dir", out, "--target-tensor-parallel-size", 2, check=False)
    assert not out.exists(), f"{out} left behind"
    return p


def test_truncated_bin(sources, tmp_path):
    _, good = sources("gpt2")
    src = copy_json(good, tmp_path / "src")
    data = (good / "pytorch_model.bin").read_bytes()
    (src / "pytorch_model.bin").write_bytes(data[: len(data) // 2])
    p = refused(src, tmp_path)
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr}"
    assert p.stderr.startswith("mg-convert: error: ") and str(src / "pytorch_model.bin") in p.stderr, p.stderr


def test_index_names_missing_shard(sources, tmp_path):
    _, good = sources("llama", "sharded")
    src = tmp_path / "src"
    shutil.copytree(good, src)
    victim = sorted(src.glob("pytorch_model-*.bin"))[1]
    victim.unlink()
    p = refused(src, tmp_path)
    assert p.returncode == 1, f"exit {p.returncode}: {p.stderr}"
    assert p.stderr.startswith("mg-convert: error: ") and victim.name in p.stderr, p.stderr


def test_non_contiguous_tensor_refused(sources, tmp_path):
    st, _ = sources("llama")
    state = hf_state(st)
    name = "model.layers.1.self_attn.o_proj.weight"
    w = state[name]
    assert w.shape[0] == w.shape[1]
    state[name] = w.t().contiguous().t()  # same values, column-major
    assert not state[name].is_contiguous() and torch.equal(state[name], w)
    src = save_single(state, copy_json(st, tmp_path / "src"))
    p = refused(src, tmp_path)
    assert p.returncode == 2, f"exit {p.returncode}: {p.stderr}"
    want = f"mg-convert: not supported yet: non-contiguous tensor {name} in {src / 'pytorch_model.bin'}"
    assert p.stderr.strip() == want, p.stderr
    assert inspect(src).returncode == 1


def test_legacy_format_refused(sources, tmp_path):
    """torch.save's pre-1.6 format (not a zip): not supported yet, the file named."""
    st, _ = sources("gpt2")
    src = copy_json(st, tmp_path / "src")
    torch.save(hf_state(st), src / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    p = refused(src, tmp_path)
    assert p.returncode == 2, f"exit {p.returncode}: {p.stderr}"
    assert p.stderr.startswith("mg-convert: not supported yet: ") and "legacy" in p.stderr \
        and str(src / "pytorch_model.bin") in p.stderr, p.stderr


@pytest.mark.parametrize("case", ["not_a_tensor", "shape", "unknown"])
def test_bad_entries_named(case, sources, tmp_path):
    st, _ = sources("qwen2")
    state = hf_state(st)
    name = "model.layers.0.mlp.down_proj.weight"
    if case == "not_a_tensor":
        state["model.extra"] = 3
    elif case == "shape":
        state[name] = state[name][:, :-1].contiguous()
    else:
        state["model.layers.0.mlp.extra.weight"] = torch.zeros(3)
    src = save_single(state, copy_json(st, tmp_path / "src"))
    p = refused(src, tmp_path)
    expect = {"not_a_tensor": (2, "model.extra"), "shape": (1, name),
              "unknown": (2, "model.layers.0.mlp.extra.weight")}[case]
    assert p.returncode == expect[0], f"exit {p.returncode}: {p.stderr}"
    assert expect[1] in p.stderr and "pytorch_model.bin" in p.stderr, p.stderr
