# --merge == tools/merge_datasets.py: datasets of a directory in sorted name order.
null=(--tokenizer-type NullTokenizer --vocab-size 100 --quiet)
mkdir parts
echo '{"text": "1 2"}' > a.jsonl
echo '{"text": "3"}' > b.jsonl
"$MG_BIN/mg-preprocess" --input b.jsonl --output-prefix parts/b "${null[@]}"
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix parts/a "${null[@]}"
"$MG_BIN/mg-preprocess" --merge --input parts --output-prefix merged --quiet
echo "exit $?"
od -A d -t u2 merged.bin
od -A d -t x1 merged.idx
touch parts/stray.txt
"$MG_BIN/mg-preprocess" --merge --input parts --output-prefix merged2 --quiet
echo "exit $?"
"$MG_BIN/mg-preprocess" --merge --input a.jsonl --output-prefix merged3 --quiet
echo "exit $?"
ls
