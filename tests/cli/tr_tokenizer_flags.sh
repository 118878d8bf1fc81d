# mg-train takes mg-preprocess's tokenizer flags (Megatron's _add_tokenizer_args serves
# both): --tiktoken-pattern (Megatron's v1/v2 layout or an OpenAI encoding's ids) and
# --tiktoken-num-special-tokens decide the vocabulary the model is built for; a bad value is
# a usage error, as in mg-preprocess.
M="--dry-run --num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 1 --global-batch-size 1 --train-iters 2
   --lr 1e-3 --tokenizer-type TikTokenizer --tokenizer-model $MG_VOCAB_DIR/tiktoken/r50k_base.tiktoken"
"$MG_BIN/mg-train" $M --tiktoken-pattern r50k_base | grep '^vocabulary'
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-train" $M --tiktoken-pattern v1 --tiktoken-num-special-tokens 500 --vocab-size 50756 |
  grep '^vocabulary'
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-train" $M --tiktoken-pattern v3
echo "exit $?"
"$MG_BIN/mg-preprocess" --input - --output-prefix x --tokenizer-type TikTokenizer \
  --tokenizer-model "$MG_VOCAB_DIR/tiktoken/r50k_base.tiktoken" --tiktoken-pattern v3
echo "exit $?"
"$MG_BIN/mg-train" $M --tokenizer-special-tokens
echo "exit $?"
