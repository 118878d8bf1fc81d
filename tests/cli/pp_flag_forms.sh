# argparse-style flags: --flag=value, unique prefixes (--out, --tokenizer-t), a repeated list
# flag replaces the earlier list (--json-keys), --input accumulates and expands a quoted glob
# (sorted), Megatron's training-only flags are accepted and ignored.
mkdir d
echo '{"text": "1", "t": "2"}' > d/b.jsonl
echo '{"text": "3", "t": "4"}' > d/a.jsonl
echo '{"text": "5", "t": "6"}' > c.jsonl
"$MG_BIN/mg-preprocess" --input='d/*.jsonl' --input c.jsonl --out=x --tokenizer-t NullTokenizer \
  --vocab-size=10 --json-keys text --json-keys t --vocab-extra-ids 0 --no-pad-vocab-size \
  --trust-remote-code --null-tokenizer-pad-id -1 --padded-vocab-size 128 --quiet
echo "exit $?"
ls
od -A d -t u2 x_t_document.bin
