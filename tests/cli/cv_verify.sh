# --verify re-reads what was written and compares it with the source: HF -> Megatron TP2,
# Megatron -> Megatron TP1 PP2, Megatron -> HF; each reports success and exits 0, and the
# exported safetensors file is byte-identical to the source.
fx=$MG_CLI_DIR/cv_fixtures/llama-tiny
"$MG_BIN/mg-convert" --load-dir "$fx" --save-dir tp2 --target-tensor-parallel-size 2 --verify --workers 2
echo "exit $?"
"$MG_BIN/mg-convert" --load-dir tp2 --save-dir pp2 --target-pipeline-parallel-size 2 --verify --workers 2
echo "exit $?"
"$MG_BIN/mg-convert" --load-dir pp2 --save-dir hf --saver hf --verify --workers 2
echo "exit $?"
cmp "$fx/model.safetensors" hf/model.safetensors && echo "safetensors identical"
ls hf
