# A directory input takes its corpus files (*.jsonl, *.json, compressed or not, and
# archives) and skips everything else, naming what it skipped: here the dataset and the
# index cache mg-train wrote beside it (PREFIX/cache/..., as Megatron does) do not stop a
# later run on the same folder.
null=(--tokenizer-type NullTokenizer --vocab-size 100)
mkdir data
for i in 1 2 3 4 5 6 7 8; do echo "{\"text\": \"$i 2 3 4 5 6 7 8 9 10 11 12\"}"; done > data/a.jsonl
printf '{"text": "7 8 9"}\n' | gzip > data/b.json.gz
"$MG_BIN/mg-preprocess" --input data --output-prefix data/c "${null[@]}" --append-eod --quiet
echo "exit $?"
"$MG_BIN/mg-train" --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 4 \
  --max-position-embeddings 4 --micro-batch-size 1 --lr 1e-3 --train-iters 1 --eval-iters 0 \
  "${null[@]}" --data-path data/c_text_document --split 100,0,0 >/dev/null 2>&1
echo "exit $?"
find data -type f | sort | sed -E 's/[0-9a-f]{32}/HASH/'
"$MG_BIN/mg-preprocess" --input data --output-prefix d "${null[@]}" --append-eod --quiet 2>&1 |
  sed -E 's/[0-9a-f]{32}/HASH/'
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-preprocess" --inspect d_text_document | grep -E '^(documents|tokens)'
