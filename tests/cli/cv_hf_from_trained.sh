# A checkpoint mg-train saved (with AdamW state and the scheduler) exports to Hugging Face
# without --drop-optimizer-state: HF has nowhere to put optimizer state, so it is dropped and
# listed like the scheduler. A Megatron save keeps it: the Adam moments are resharded with
# their parameters, the scheduler kept, the iteration too (a training checkpoint, not release).
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 1 --global-batch-size 1 --train-iters 2
   --lr 1e-3 --tokenizer-type NullTokenizer --vocab-size 64 --mock-data --eval-iters 0"
"$MG_BIN/mg-train" $M --save ck --save-interval 2 >/dev/null 2>&1
echo "train exit $?"
"$MG_BIN/mg-convert" --load-dir ck --save-dir hf --saver hf --verify 2>&1 |
  sed -E 's/in [0-9.]+ s/in N s/; s/[0-9.]+ MB/N MB/'
echo "exit ${PIPESTATUS[0]}"
ls hf
"$MG_BIN/mg-convert" --load-dir ck --save-dir mg --quiet --verify
echo "exit $?"
ls
ls mg
cat mg/latest_checkpointed_iteration.txt; echo
