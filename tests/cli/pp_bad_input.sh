# Invalid input stops the run with FILE:LINE: reason, exit status 1, and no output file
# (nor temporary file) is left. NullTokenizer where the tokenizer does not matter.
pp() {
  "$MG_BIN/mg-preprocess" --output-prefix out --quiet --workers 2 "$@" 2>&1
  echo "exit $?"
  ls
}
null=(--tokenizer-type NullTokenizer --vocab-size 100)
gpt2=(--tokenizer-type GPT2BPETokenizer --vocab-file "$MG_VOCAB_DIR/gpt2/gpt2-vocab.json"
      --merge-file "$MG_VOCAB_DIR/gpt2/gpt2-merges.txt")
good='{"text": "1 2 3", "title": "4"}'
mkdir in
for i in $(seq 1 3000); do echo "$good"; done > in/head.jsonl
{ cat in/head.jsonl; echo '{"text": "1 2", oops}'; } > in/bad_json.jsonl
{ cat in/head.jsonl; echo '{"title": "1"}'; } > in/missing_key.jsonl
{ cat in/head.jsonl; echo '{"text": 12}'; } > in/number.jsonl
{ cat in/head.jsonl; echo '{"text": ["1", 2]}'; } > in/list.jsonl
{ echo "$good"; echo; echo "$good"; } > in/empty_line.jsonl
{ echo "$good"; printf '{"text": "\xff"}\n'; } > in/bad_utf8.jsonl
{ echo "$good"; echo '{"text": "1  2"}'; } > in/not_int.jsonl
{ echo '{"text": "lone \ud800 surrogate"}'; } > in/surrogate.jsonl
echo "== invalid JSON";         pp --input in/bad_json.jsonl "${null[@]}"
echo "== missing key";          pp --input in/missing_key.jsonl "${null[@]}" --json-keys title text
echo "== number value";         pp --input in/number.jsonl "${null[@]}"
echo "== list value";           pp --input in/list.jsonl "${null[@]}"
echo "== empty line";           pp --input in/empty_line.jsonl "${null[@]}"
echo "== invalid UTF-8";        pp --input in/bad_utf8.jsonl "${null[@]}"
echo "== NullTokenizer field";  pp --input in/not_int.jsonl "${null[@]}"
echo "== lone surrogate, GPT2"; pp --input in/surrogate.jsonl "${gpt2[@]}"
echo "== second input";         pp --input in/head.jsonl --input in/number.jsonl "${null[@]}" --partitions 2
(cd in && tar -cf ../shards.tar head.jsonl number.jsonl)
echo "== tar member";           pp --input shards.tar "${null[@]}"; rm shards.tar
echo "== missing input";        pp --input in/nothere.jsonl "${null[@]}"
echo "== missing output dir";   pp --input in/head.jsonl "${null[@]}" --output-prefix nodir/out
