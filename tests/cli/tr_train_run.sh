# mg-train on a tiny GPT-2 corpus: --dump-samples (Megatron's first training samples with
# --eod-mask-loss --reset-position-ids --reset-attention-mask: the EOD 50256 is masked out
# of the loss, positions and segments restart after it), then 3 iterations with
# validation: Megatron's log lines (timings masked, losses and norms cut to 3 digits: the
# sums' order depends on BLAS and threads), the validation blocks, progress on stderr.
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  printf '{"text": "Document %d says hello to the world, then stops."}\n' "$i"
done > docs.jsonl
V="--tokenizer-type GPT2BPETokenizer --vocab-file $MG_VOCAB_DIR/gpt2/gpt2-vocab.json
   --merge-file $MG_VOCAB_DIR/gpt2/gpt2-merges.txt"
"$MG_BIN/mg-preprocess" --input docs.jsonl --output-prefix c $V --append-eod --quiet
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 20
   --max-position-embeddings 20 --micro-batch-size 2 --global-batch-size 4 --lr 1e-3
   --data-path c_text_document --split 80,20,0 $V"
"$MG_BIN/mg-train" $M --train-iters 3 --dump-samples 2 --eod-mask-loss --reset-position-ids \
  --reset-attention-mask
echo "exit $?"
"$MG_BIN/mg-train" $M --train-iters 3 --log-interval 1 --eval-interval 2 --eval-iters 1 2>err.txt |
  sed -E 's/^ \[[^]]*\]/ [TIME]/; s/(\(ms\)|TFLOP\/s\/GPU\)|second|MFU): [0-9.]+%?/\1: N/g
          s/(loss( value| PPL)?: [0-9]\.[0-9]{2})[0-9]{4}/\1~/g; s/(norm: [0-9]+\.[0-9])[0-9]{2}/\1~/'
echo "exit ${PIPESTATUS[0]}"
sed -E 's/peak [0-9.]+ GFLOP\/s \([a-z]+, [0-9]+ threads?\)/peak N/' err.txt
