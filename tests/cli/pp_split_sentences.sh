# --split-sentences is refused (exit 2); --keep-newlines and --lang alone are accepted.
printf '{"text": "1 2"}\n' > in.jsonl
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 10 --split-sentences --keep-newlines
echo "exit $?"
"$MG_BIN/mg-preprocess" --split-sentences
echo "exit $?"
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 10 --keep-newlines --lang german --quiet
echo "exit $?"
ls
