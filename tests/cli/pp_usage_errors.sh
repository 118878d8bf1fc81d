# Usage errors: exit status 2 and a message naming the flag; nothing is written.
pp() { "$MG_BIN/mg-preprocess" "$@" 2>&1; echo "exit $?"; }
printf '{"text": "1 2"}\n' > in.jsonl
null=(--tokenizer-type NullTokenizer --vocab-size 10)
pp --bogus
pp --input in.jsonl "${null[@]}"
pp --output-prefix out "${null[@]}"
pp --input in.jsonl --output-prefix out
pp --input in.jsonl --output-prefix out "${null[@]}" --workers 0
pp --input in.jsonl --output-prefix out "${null[@]}" --workers two
pp --input in.jsonl --output-prefix out "${null[@]}" --log-interval=
pp --input in.jsonl --output-prefix out "${null[@]}" --partitions -1
pp --input in.jsonl --output-prefix out "${null[@]}" --tiktoken-pattern v3
pp --input in.jsonl --output-prefix out "${null[@]}" --append-eod=yes
pp --input in.jsonl --output-prefix out "${null[@]}" --json-keys
pp --input in.jsonl --output-prefix out "${null[@]}" --output-prefix
pp --input in.jsonl --output-prefix out "${null[@]}" stray
pp --input in.jsonl --output-prefix out --tok NullTokenizer
pp --input in.jsonl --output-prefix out --tokenizer-type MultimodalTokenizer --vocab-file in.jsonl
pp --input in.jsonl --output-prefix out "${null[@]}" --find-optimal-num-workers
pp --merge --input . --output-prefix out "${null[@]}"
pp --merge --input a --input b --output-prefix out
pp --merge --input . --output-prefix out --multimodal
ls
