# --partitions 2: line n goes to partition n % 2, partitions merged in order (documents
# 0 2 4 1 3); no partition file is left. --keep-sequential-samples keeps the order.
for i in 0 1 2 3 4; do echo "{\"text\": \"$i\"}"; done > in.jsonl
null=(--tokenizer-type NullTokenizer --vocab-size 10 --quiet)
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix rr --partitions 2 "${null[@]}"
echo "exit $?"
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix seq --partitions 2 \
  --keep-sequential-samples "${null[@]}"
echo "exit $?"
ls
od -A d -t u2 rr_text_document.bin
od -A d -t u2 seq_text_document.bin
