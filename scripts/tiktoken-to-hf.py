#!/usr/bin/env python3
"""tiktoken-to-hf.py — a Hugging Face tokenizer folder from GPT-2's tiktoken ranks.

Usage: scripts/tiktoken-to-hf.py RANKS.tiktoken OUT_DIR

transformers' own TikTokenConverter turns the ranks (r50k_base: GPT-2's byte-pair ranks,
the regex of tiktoken's r50k_base, <|endoftext|> = 50256 as eos/bos) into OUT_DIR/
tokenizer.json + tokenizer_config.json, which `AutoTokenizer.from_pretrained` loads and
`mg-convert --saver hf --tokenizer-dir OUT_DIR` copies into an export. The ids of a sample
text must equal tiktoken's on the same ranks (exit 1 otherwise). Exit status: 0, 1, 2 usage.
"""
import sys

EOT = "<|endoftext|>"
SAMPLE = "Q: How many\n\tprogrammers? <|endoftext|> Ünïcödé  x 12345 'll"


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext.openai_public import r50k_pat_str
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    ranks, out = argv[1], argv[2]
    tok = TikTokenConverter(vocab_file=ranks, pattern=r50k_pat_str,
                            extra_special_tokens=[EOT]).converted()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOT, bos_token=EOT).save_pretrained(out)
    mergeable = load_tiktoken_bpe(ranks)
    ref = tiktoken.Encoding(name="r50k", pat_str=r50k_pat_str, mergeable_ranks=mergeable,
                            special_tokens={EOT: len(mergeable)})
    ours = AutoTokenizer.from_pretrained(out)(SAMPLE).input_ids
    if ours != ref.encode(SAMPLE, allowed_special="all"):
        print(f"tiktoken-to-hf.py: error: {out} tokenizes differently from tiktoken",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
