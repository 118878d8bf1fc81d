# mg-train --dry-run: the plan for GPT-2 124M (fp32 on CPU), a Llama-shaped GQA model with a
# real tokenizer's vocabulary and --bf16 (mixed-precision memory), and a TP 2 x PP 2 layout.
"$MG_BIN/mg-train" --dry-run --num-layers 12 --hidden-size 768 --num-attention-heads 12 \
    --seq-length 1024 --max-position-embeddings 1024 --vocab-size 50257 \
    --micro-batch-size 4 --global-batch-size 8 --train-iters 100 --lr 6e-4
echo "exit $?"
"$MG_BIN/mg-train" --dry-run --num-layers 4 --hidden-size 512 --num-attention-heads 8 \
    --group-query-attention --num-query-groups 2 --swiglu --normalization RMSNorm \
    --position-embedding-type rope --disable-bias-linear --untie-embeddings-and-output-weights \
    --seq-length 256 --max-position-embeddings 256 --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$MG_VOCAB_DIR/gpt2/gpt2-vocab.json" --merge-file "$MG_VOCAB_DIR/gpt2/gpt2-merges.txt" \
    --micro-batch-size 2 --global-batch-size 16 --train-samples 1600 --lr 3e-4 \
    --lr-decay-style cosine --lr-warmup-fraction 0.01 --bf16
echo "exit $?"
"$MG_BIN/mg-train" --dry-run --num-layers 8 --hidden-size 256 --num-attention-heads 8 \
    --seq-length 128 --max-position-embeddings 128 --vocab-size 32000 \
    --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --micro-batch-size 1 --global-batch-size 4 --train-iters 10 --lr 1e-4
echo "exit $?"
