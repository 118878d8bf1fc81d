# A Megatron launch script's flags port unchanged: those without effect on this backend are
# accepted and named once on stderr, those at their default value too; those whose meaning
# mg-train cannot honour are refused all together, in one message (exit 2); Megatron's
# conditions on the accepted ones hold (--overlap-param-gather: distributed optimizer and
# --overlap-grad-reduce, arguments.py's messages).
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 2 --lr 1e-3 --train-iters 2
   --vocab-size 64 --dry-run"
"$MG_BIN/mg-train" $M --use-mcore-models --use-flash-attn --distributed-backend nccl \
  --attention-softmax-in-fp32 --transformer-impl local --wandb-project p --wandb-exp-name e \
  --no-masked-softmax-fusion --use-flash-attn --context-parallel-size 1 --recompute-activations \
  --overlap-param-gather --use-distributed-optimizer --overlap-grad-reduce --num-workers 2 \
  2>&1 >/dev/null
echo "exit $?"
"$MG_BIN/mg-train" $M --overlap-param-gather 2>&1 >/dev/null
echo "exit $?"
"$MG_BIN/mg-train" $M --use-mcore-models --num-experts 8 --moe-router-topk 2 --fp8-format hybrid \
  --context-parallel-size 2 --rotary-percent 0.5 --use-legacy-models --optimizer sgd 2>&1
echo "exit $?"
"$MG_BIN/mg-train" $M --rotary-percent 1.0 --expert-model-parallel-size 1 --optimizer adam \
  2>&1 >/dev/null
echo "exit $?"
