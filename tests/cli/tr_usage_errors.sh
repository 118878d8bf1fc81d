# mg-train usage errors (exit 2, the flag named; the warmup in the unit given), unsupported
# settings (exit 2, "not supported yet": dropout, mrope), --bf16 on
# CPU, --mock-data without a tokenizer, and a run without data.
M="--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32
   --max-position-embeddings 32 --micro-batch-size 2 --train-iters 10 --lr 1e-3 --vocab-size 100"
t() { "$MG_BIN/mg-train" "$@" 2>&1; echo "exit $?"; }
t
t $M --bogus-flag
t $M --num-layer 3
t $M --hidden-size abc
t $M --normalization rmsnorm
t $M --lr-decay-style WSD
t $M --global-batch-size 3
t $M --max-position-embeddings 16
t $M --train-samples 100
t $M --lr-warmup-fraction 0.1 --lr-warmup-iters 2
t $M --min-lr 0.1
t $M --lr-warmup-iters 10
t $M --lr-decay-iters 5 --lr-warmup-fraction 1.0
t $M --mock-data --data-path corpus
t --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --micro-batch-size 2 --train-iters 10 --lr 1e-3 --dry-run
t $M --tokenizer-type GPT2BPETokenizer --vocab-file missing.json --merge-file missing.txt --dry-run
t $M --position-embedding-type mrope
t $M --hidden-dropout 0.1
t $M --recompute-granularity full --recompute-method uniform --recompute-num-layers 3
t $M --recompute-granularity full --recompute-num-layers 1
t $M --recompute-granularity selective --recompute-method block
t $M --device gpu
t $M --bf16
t $M --mock-data
t $M --data-path missing_text_document
t $M --dump-samples 0
t $M
