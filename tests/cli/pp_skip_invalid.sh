# --skip-invalid: invalid lines are skipped and counted (the first 10 named), exit 0; the
# dataset holds the valid lines only.
{
  echo '{"text": "1 2"}'
  echo 'not json'
  echo '{"text": "3"}'
  echo
  echo '{"other": "9"}'
  echo '{"text": 5}'
  printf '{"text": "\xc3"}\n'
  echo '{"text": "x"}'
  echo '{"text": "4 5 6"}'
  for i in 1 2 3 4 5; do echo '{"text": ""}'; done
  echo '{"text": "7"}'
} > in.jsonl
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 100 --append-eod --skip-invalid --quiet --workers 3
echo "exit $?"
od -A d -t x1 out_text_document.bin
od -A d -t x1 out_text_document.idx
