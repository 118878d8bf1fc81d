# mg-train --load checked before any dataset is built (ckpt_preflight.h): a layout the
# world cannot hold, --ckpt-step (an iteration the folder lacks: its iterations listed), a
# model flag that contradicts the checkpoint (each named, as the checkpoint's key and the
# flag), --use-checkpoint-args, a Hugging Face folder (the mg-convert command), a checkpoint at another TP x PP (both
# layouts and the command that reshards), and Megatron's scheduler rule: a resume whose
# schedule differs is refused unless --override-opt_param-scheduler (the flags') or
# --use-checkpoint-opt_param-scheduler (the checkpoint's) is given.
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 2 --lr 1e-3
   --tokenizer-type NullTokenizer --vocab-size 64 --mock-data --lr-decay-style cosine
   --eval-iters 0 --log-interval 1"
# the iteration lines cut to the iteration, the learning rate and the loss's 3 digits
t() {
  "$MG_BIN/mg-train" "$@" 2>&1 | grep -E 'error|loaded|iteration +[0-9]' |
    sed -E 's/^ \[[^]]*\] (iteration +[0-9]+\/ +[0-9]+).*(learning rate: [^|]*).*(lm loss: [0-9]\.[0-9]{2}).*/\1 | \2| \3/'
  echo "exit ${PIPESTATUS[0]}"
}
t $M --train-iters 4 --tensor-model-parallel-size 2
"$MG_BIN/mg-train" $M --train-iters 4 --save ck --save-interval 2 >/dev/null 2>&1
echo "train exit $?"
# --save without --save-interval saves at the end (Megatron's behaviour)
"$MG_BIN/mg-train" $M --train-iters 3 --save at-end >/dev/null 2>&1
echo "train exit $?"
ls at-end
t $M --train-iters 4 --load ck --ckpt-step 3
t $M --train-iters 4 --ckpt-step 2
t $M --train-iters 4 --load ck --ckpt-step 2
t $M --train-iters 4 --load ck --num-layers 2 --hidden-size 32
t $M --train-iters 4 --load ck --normalization RMSNorm --swiglu --ffn-hidden-size 64
t $M --train-iters 4 --load ck --max-position-embeddings 32
t $M --train-iters 6 --load ck
t $M --train-iters 6 --load ck --lr 2e-3 --min-lr 1e-4 --lr-decay-style linear
t $M --train-iters 6 --load ck --override-opt_param-scheduler
t $M --train-iters 6 --load ck --use-checkpoint-opt_param-scheduler
t $M --train-iters 6 --load ck --use-checkpoint-opt_param-scheduler --override-opt_param-scheduler
t $M --train-iters 6 --load ck --finetune
# --use-checkpoint-args: no model flags (the sizes, variants and vocabulary from the args)
t --load ck --use-checkpoint-args --finetune --micro-batch-size 2 --global-batch-size 2 \
  --lr 1e-3 --mock-data --tokenizer-type NullTokenizer --train-iters 2 --eval-iters 0 \
  --log-interval 1
t --use-checkpoint-args --micro-batch-size 2 --lr 1e-3 --vocab-size 64 --train-iters 2
"$MG_BIN/mg-convert" --load-dir ck --save-dir hf --saver hf --quiet 2>&1
echo "convert exit $?"
t $M --train-iters 4 --load hf
"$MG_BIN/mg-convert" --load-dir ck --save-dir ck-tp2 --target-tensor-parallel-size 2 \
  --drop-optimizer-state --quiet 2>&1
echo "convert exit $?"
t $M --train-iters 4 --load ck-tp2
rm ck-tp2/release/mp_rank_01/model_optim_rng.pt
t $M --train-iters 4 --load ck-tp2
