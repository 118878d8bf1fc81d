# Bad input stops mg-convert with "mg-convert: error: ..." naming the file and tensor, exit 1,
# and leaves no output directory (nor a temporary one) behind. Each case converts into out/
# and then lists the working directory.
mkdir in
cp -r "$MG_CLI_DIR/cv_fixtures/llama-tiny" "$MG_CLI_DIR/cv_fixtures/bad-offset" "$MG_CLI_DIR/cv_fixtures/bad-shape" in/
chmod -R u+w in
fx=in
cv() {
  "$MG_BIN/mg-convert" --save-dir out --quiet "$@" 2>&1
  echo "exit $?"
  ls -A | grep -v '^\.std'
}
"$MG_BIN/mg-convert" --load-dir "$fx/llama-tiny" --save-dir in/tp2 --target-tensor-parallel-size 2 --quiet
"$MG_BIN/mg-convert" --load-dir "$fx/llama-tiny" --save-dir in/tp2f --target-tensor-parallel-size 2 \
  --target-dtype fp32 --quiet
pt=release/mp_rank_01/model_optim_rng.pt
size=$(stat -c %s "in/tp2/$pt")
mk() { rm -rf "in/$1"; cp -r in/tp2 "in/$1"; }
mk trunc_pt;   head -c $((size / 2)) "in/tp2/$pt" > "in/trunc_pt/$pt"
mk magic_pt;   printf 'XXXX' | dd of="in/magic_pt/$pt" bs=1 conv=notrunc status=none
mk missing;    rm -r in/missing/release/mp_rank_01
mk disagree;   cp "in/tp2f/$pt" "in/disagree/$pt"
mkdir -p in/trunc_st in/len_st in/limit_st
cp "$fx/llama-tiny/config.json" in/trunc_st/
head -c 10000 "$fx/llama-tiny/model.safetensors" > in/trunc_st/model.safetensors
cp "$fx/llama-tiny/config.json" "$fx/llama-tiny/model.safetensors" in/len_st/
cp "$fx/llama-tiny/config.json" "$fx/llama-tiny/model.safetensors" in/limit_st/
# u64 header length 1 MiB (past the end of the 17880-byte file), then 4 GiB (over the limit)
printf '\x00\x00\x10\x00\x00\x00\x00\x00' | dd of=in/len_st/model.safetensors bs=1 conv=notrunc status=none
printf '\x00\x00\x00\x00\x01\x00\x00\x00' | dd of=in/limit_st/model.safetensors bs=1 conv=notrunc status=none
echo "== truncated .pt";              cv --load-dir in/trunc_pt
echo "== wrong magic in .pt";         cv --load-dir in/magic_pt
echo "== missing TP shard";           cv --load-dir in/missing
echo "== TP shards that disagree";    cv --load-dir in/disagree
echo "== truncated safetensors";      cv --load-dir in/trunc_st
echo "== header length past the end"; cv --load-dir in/len_st
echo "== header length over the limit"; cv --load-dir in/limit_st
echo "== data offsets past the end";  cv --load-dir "$fx/bad-offset"
echo "== shape not in the schema";    cv --load-dir "$fx/bad-shape"
echo "== shape not in the schema, export"; cv --load-dir "$fx/bad-shape" --saver hf
mkdir out; echo keep > out/file.txt
echo "== non-empty --save-dir";       "$MG_BIN/mg-convert" --load-dir "$fx/llama-tiny" --save-dir out --quiet 2>&1
echo "exit $?"
ls -A out
rm -r out
echo "== missing --load-dir";         cv --load-dir in/nothere
