# What mg-convert cannot convert correctly is refused with "not supported yet: ...", exit 2,
# and no output: an unknown architecture, a mixture-of-experts model.
fx=$MG_CLI_DIR/cv_fixtures/llama-tiny
cv() {
  "$MG_BIN/mg-convert" --save-dir out --quiet "$@" 2>&1
  echo "exit $?"
  ls -A | grep -v '^\.std'
}
mkdir -p in/falcon in/mixtral
sed 's/LlamaForCausalLM/FalconForCausalLM/; s/"llama"/"falcon"/' "$fx/config.json" > in/falcon/config.json
cp "$fx/model.safetensors" in/falcon/
sed 's/LlamaForCausalLM/MixtralForCausalLM/; s/"llama"/"mixtral"/; s/^{/{\n  "num_local_experts": 4,\n  "num_experts_per_tok": 2,/' \
  "$fx/config.json" > in/mixtral/config.json
cp "$fx/model.safetensors" in/mixtral/
echo "== unknown architecture"; cv --load-dir in/falcon
echo "== mixture of experts";   cv --load-dir in/mixtral
rm -rf in
