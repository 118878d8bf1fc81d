# A small real run with NullTokenizer (uint16, eod = vocab_size - 1 = 99), two keys, CRLF
# line ends, --append-eod: the exact .bin/.idx bytes.
printf '{"text": "1 2 3", "t": "5"}\r\n{"t": "6 7", "text": "4"}\n{"text": "10 20", "t": "30"}' > in.jsonl
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 100 --append-eod --json-keys text t --quiet
echo "exit $?"
ls
for f in out_text_document.bin out_text_document.idx out_t_document.bin out_t_document.idx; do
  echo "== $f"; od -A d -t x1 "$f"
done
