# --inspect of a Megatron checkpoint written by mg-convert at TP2 PP2 (iteration 20): format,
# config, TP/PP, every rank's tensors with shape/dtype/sharding, total bytes (exit 0).
"$MG_BIN/mg-convert" --load-dir "$MG_CLI_DIR/cv_fixtures/llama-tiny" --save-dir mg \
  --target-tensor-parallel-size 2 --target-pipeline-parallel-size 2 --iteration 20 --quiet
echo "convert: exit $?"
"$MG_BIN/mg-convert" --inspect mg
echo "exit $?"
