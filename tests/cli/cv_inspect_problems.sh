# --inspect lists the problems it finds and exits 1: a tensor whose shape does not match the
# model (cv_fixtures/bad-shape), and a Megatron checkpoint with a missing TP shard.
cp -r "$MG_CLI_DIR/cv_fixtures/bad-shape" .
"$MG_BIN/mg-convert" --inspect bad-shape > bad-shape.txt
echo "exit $?"
grep -v '^  ' bad-shape.txt
"$MG_BIN/mg-convert" --load-dir "$MG_CLI_DIR/cv_fixtures/llama-tiny" --save-dir mg \
  --target-tensor-parallel-size 2 --quiet
rm -r mg/release/mp_rank_01
"$MG_BIN/mg-convert" --inspect mg > missing.txt
echo "exit $?"
grep -v '^  ' missing.txt
