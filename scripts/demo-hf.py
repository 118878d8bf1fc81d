#!/usr/bin/env python3
"""demo-hf.py — the Hugging Face end of the demo (scripts/demo.sh step 4).

Usage: scripts/demo-hf.py HF_DIR RANKS PROBE WORK_DIR SAMPLE.txt -- MG-TRAIN-FLAGS...

transformers loads the export HF_DIR (fp32, AutoModelForCausalLM and AutoTokenizer) and
continues PROMPT greedily (do_sample=False, so the text is reproducible) for NEW_TOKENS
tokens; the prompt's ids must equal tiktoken's on the GPT-2 ranks RANKS (the tokenizer
mg-preprocess used). Then
mg-train's own model (PROBE: build/tests/tools/model_probe, fed the same safetensors and
the model's MG-TRAIN-FLAGS) computes the logits of prompt + continuation, and they must
equal transformers' within fp32 tolerance: |ours - theirs| <= 1e-4 max|theirs| + 1e-5.
Writes SAMPLE.txt (prompt + continuation) and WORK_DIR/check.json (prompt, continuation,
ids, max difference, tolerance). Exit status: 0 equal, 1 the logits differ, 2 usage error.
"""
import json
import os
import subprocess
import sys

PROMPT = "Q: How many programmers does it take to change a light bulb?\nA:"
NEW_TOKENS = 32


def gpt2_encoding(ranks):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext.openai_public import r50k_pat_str
    mergeable = load_tiktoken_bpe(ranks)
    return tiktoken.Encoding(name="gpt2-demo", pat_str=r50k_pat_str, mergeable_ranks=mergeable,
                             special_tokens={"<|endoftext|>": len(mergeable)})


def generate(model, ids):
    import torch
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids),
                             dtype=torch.long), max_new_tokens=NEW_TOKENS, do_sample=False,
                             pad_token_id=model.config.eos_token_id)
    return out[0].tolist()


def probe_logits(probe, hf_dir, ids, work, flags):
    """mg-train's forward on the exported weights: logits [T, V] over the true vocabulary."""
    import safetensors.torch as st
    import torch
    x = torch.tensor([ids], dtype=torch.int32)
    st.save_file({"ids": x, "targets": torch.roll(x, -1, dims=1)},
                 os.path.join(work, "input.safetensors"))
    subprocess.run([probe, "ref", "default", os.path.join(hf_dir, "model.safetensors"),
                    os.path.join(work, "input.safetensors"), work, *flags], check=True)
    return st.load_file(os.path.join(work, "out.safetensors"))["logits"][0].double()


def main(argv):
    if len(argv) < 7 or argv[6] != "--":
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    hf_dir, ranks, probe, work, sample_path, flags = *argv[1:6], argv[7:]
    import torch
    import transformers
    transformers.logging.disable_progress_bar()
    os.makedirs(work, exist_ok=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    model.eval()
    prompt_ids = tokenizer(PROMPT).input_ids
    if prompt_ids != gpt2_encoding(ranks).encode(PROMPT, allowed_special="all"):
        print(f"demo-hf.py: error: {hf_dir}'s tokenizer differs from tiktoken's on the prompt",
              file=sys.stderr)
        return 1
    ids = generate(model, prompt_ids)
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor([ids])).logits[0].double()
    ours = probe_logits(probe, hf_dir, ids, work, flags)
    theirs = theirs[:, :ours.shape[1]]
    diff = float((ours - theirs).abs().max()) if ours.shape == theirs.shape else float("inf")
    tol = 1e-4 * float(theirs.abs().max()) + 1e-5
    continuation = tokenizer.decode(ids[len(prompt_ids):])
    with open(sample_path, "w", encoding="utf-8") as f:
        f.write(PROMPT + continuation + "\n")
    check = {"prompt": PROMPT, "continuation": continuation, "ids": ids,
             "logits_shape": list(theirs.shape), "max_abs_diff": diff, "tolerance": tol}
    with open(os.path.join(work, "check.json"), "w", encoding="utf-8") as f:
        json.dump(check, f, indent=1)
    print(f"prompt + greedy continuation ({len(ids) - len(prompt_ids)} tokens):\n"
          f"{PROMPT}{continuation}")
    verdict = "equal" if diff <= tol else "DIFFERENT"
    print(f"logits of transformers and mg-train's forward on {len(ids)} tokens x "
          f"{ours.shape[1]} vocabulary: max |difference| {diff:.3g} (tolerance {tol:.3g}): "
          f"{verdict}")
    return 0 if diff <= tol else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
