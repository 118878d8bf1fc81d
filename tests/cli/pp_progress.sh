# Without --quiet: a start line, progress at most once a second (not shown: timing), and a
# summary naming the files written. Timings are globbed.
for i in $(seq 1 2500); do echo "{\"text\": \"$((i % 90)) 1\"}"; done > in.jsonl
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 100 --workers 2 --log-interval 1000000 2>&1
echo "exit $?"
