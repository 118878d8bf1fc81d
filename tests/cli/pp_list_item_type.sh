# A list value (sentences) whose item is not a string is an invalid line: the message names
# FILE:LINE, the key and the 1-based item; exit status 1 and no output left. With
# --skip-invalid the other lines are written, one sequence per sentence with tokens (the
# .idx shows the sequence lengths: eod counted in the last one).
pp() {
  "$MG_BIN/mg-preprocess" --output-prefix out --quiet --workers 2 \
    --tokenizer-type NullTokenizer --vocab-size 100 --append-eod "$@" 2>&1
  echo "exit $?"
  ls
}
{
  echo '{"text": ["1 2", "3"]}'
  echo '{"text": ["4", 5, "6"]}'
} > item_number.jsonl
echo "== number item";     pp --input item_number.jsonl
rm item_number.jsonl
{
  echo '{"text": ["1 2", "3"]}'
  echo '{"text": ["4", ["5"]]}'
  echo '{"text": [null]}'
  echo '{"text": ["7", {"x": "8"}]}'
  echo '{"text": ["9", "x"]}'
  echo '{"text": []}'
  echo '{"text": ["10 11"], "title": [true]}'
} > mixed.jsonl
echo "== skip invalid";    pp --input mixed.jsonl --skip-invalid
od -A d -t x1 out_text_document.idx
