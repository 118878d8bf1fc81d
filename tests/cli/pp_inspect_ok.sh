# --inspect on a clean dataset: the summary, exit 0; --decode prints chosen documents.
null=(--tokenizer-type NullTokenizer --vocab-size 100)
printf '{"text": "1 2 3"}\n{"text": "4 5"}\n{"text": "6"}\n{"text": "7 8 9 10"}\n' > a.jsonl
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix d "${null[@]}" --append-eod --quiet
"$MG_BIN/mg-preprocess" --inspect d_text_document
echo "exit $?"
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 0,2-3 "${null[@]}"
echo "exit $?"
gpt2=(--tokenizer-type GPT2BPETokenizer --vocab-file "$MG_VOCAB_DIR/gpt2/gpt2-vocab.json"
      --merge-file "$MG_VOCAB_DIR/gpt2/gpt2-merges.txt")
printf '{"text": "Hello, world!"}\n{"text": ""}\n{"text": "日本語 — Ünïcödé\\nline two"}\n' > b.jsonl
"$MG_BIN/mg-preprocess" --input b.jsonl --output-prefix g "${gpt2[@]}" --append-eod --quiet
"$MG_BIN/mg-preprocess" --inspect g_text_document --decode 0-2 "${gpt2[@]}"
echo "exit $?"
