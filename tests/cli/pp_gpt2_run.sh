# GPT-2 ids: "Hello world" = 15496 995; <|endoftext|> in the text is the special token 50256;
# an empty text is an empty document (no EOD even with --append-eod). Input from stdin.
printf '%s\n' '{"text": "Hello world"}' '{"text": ""}' '{"text": "a<|endoftext|>b"}' |
"$MG_BIN/mg-preprocess" --input - --output-prefix out --tokenizer-type GPT2BPETokenizer \
  --vocab-file "$MG_VOCAB_DIR/gpt2/gpt2-vocab.json" --merge-file "$MG_VOCAB_DIR/gpt2/gpt2-merges.txt" \
  --append-eod --quiet
echo "exit $?"
od -A d -t u2 out_text_document.bin
od -A d -t x1 out_text_document.idx
