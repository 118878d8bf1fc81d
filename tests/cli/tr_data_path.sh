# --data-path takes prefixes (PREFIX.bin + PREFIX.idx): given a .bin/.idx file it names the
# prefix, given a folder it lists the prefixes there, given a missing prefix it lists its
# folder's; checked before the tokenizer and the datasets are built (exit 2).
null=(--tokenizer-type NullTokenizer --vocab-size 100)
mkdir data
echo '{"text": "1 2 3 4 5 6 7 8 9 10"}' > a.jsonl
for p in data/web data/books; do
  "$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix $p "${null[@]}" --append-eod --quiet
done
t() {
  "$MG_BIN/mg-train" --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 4 \
    --max-position-embeddings 4 --micro-batch-size 1 --lr 1e-3 --train-iters 1 "${null[@]}" \
    --data-path "$@" 2>&1 | grep error
  echo "exit ${PIPESTATUS[0]}"
}
t data/web_text_document.bin
t data/books_text_document.idx
t data
t data/web
t 0.5 data/web_text_document 0.5 data/book_text_document
t missing/web_text_document
