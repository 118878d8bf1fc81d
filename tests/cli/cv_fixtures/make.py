"""Writes the committed inputs of the mg-convert CLI tests (tests/cli/cv_*.sh) into this folder.
Run once with the interop venv's python (transformers, torch, safetensors); the outputs are
committed, the CLI tests only read them:
  llama-tiny/   HF LlamaForCausalLM, bf16, V=100 (not a multiple of 128), H=16, 4 heads,
                2 KV heads, F=32, 2 layers, untied; config.json + model.safetensors
  bad-shape/    the same model, but model.layers.1.mlp.up_proj.weight declared [16, 32]
                instead of [32, 16] (same byte count: a valid safetensors file whose shape
                does not match the Llama schema)
  bad-offset/   the same model, but the data_offsets of model.norm.weight point past the
                end of the file (begin and end shifted by 4096 bytes)
Regenerating changes the random weights; update the golden files afterwards.
"""
import json
import pathlib
import shutil
import struct

import torch
import transformers

HERE = pathlib.Path(__file__).resolve().parent


def rewrite_header(path, edit):
    """Loads the safetensors header of PATH, lets EDIT change it, writes it back (same data)."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    edit(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + raw[8 + n:])


def main():
    torch.manual_seed(20261122)
    cfg = transformers.LlamaConfig(vocab_size=100, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                   tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    good = HERE / "llama-tiny"
    shutil.rmtree(good, ignore_errors=True)
    model.save_pretrained(good)
    for name, edit in (("bad-shape", lambda h: h["model.layers.1.mlp.up_proj.weight"].update(shape=[16, 32])),
                       ("bad-offset", lambda h: h["model.norm.weight"].update(
                           data_offsets=[o + 4096 for o in h["model.norm.weight"]["data_offsets"]]))):
        d = HERE / name
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(good, d)
        rewrite_header(d / "model.safetensors", edit)


if __name__ == "__main__":
    main()
