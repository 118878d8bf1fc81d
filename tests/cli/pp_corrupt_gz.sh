# A truncated .gz is an error naming the file (exit 1), and no output file is left.
for i in $(seq 1 20000); do echo "{\"text\": \"$i $((i % 7)) 3\"}"; done | gzip -9 > full.jsonl.gz
head -c 20000 full.jsonl.gz > cut.jsonl.gz
"$MG_BIN/mg-preprocess" --input cut.jsonl.gz --output-prefix out --tokenizer-type NullTokenizer \
  --vocab-size 100000 --quiet
echo "exit $?"
ls
