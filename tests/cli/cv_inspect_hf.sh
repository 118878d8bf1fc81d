# --inspect of a Hugging Face directory: format, model config, every tensor, total bytes,
# no problems (exit 0). Input: cv_fixtures/llama-tiny (bf16 Llama, V=100, GQA 4/2 heads).
"$MG_BIN/mg-convert" --inspect "$MG_CLI_DIR/cv_fixtures/llama-tiny"
echo "exit $?"
