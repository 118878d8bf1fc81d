# The three tools' command-line words, one scanner (mg/argv.h) under three dialects:
# mg-preprocess (argparse with allow_abbrev), mg-train (Megatron's parser: exact names) and
# mg-convert (exact names, a value is the next word whatever it looks like). Every odd form:
# "--", "-", a negative number, "-h" and "-h=x", "=" with an empty value, a switch with a
# value, an ambiguous or too short prefix, a flag missing its value, a stray word.
pp() { "$MG_BIN/mg-preprocess" "$@" 2>&1 | head -3; echo "exit ${PIPESTATUS[0]}"; }
tr() { "$MG_BIN/mg-train" "$@" 2>&1 | head -3; echo "exit ${PIPESTATUS[0]}"; }
cv() { "$MG_BIN/mg-convert" "$@" 2>&1 | head -3; echo "exit ${PIPESTATUS[0]}"; }
for args in "--" "-" "-5" "-.5" "-h=x" "-x" "--=x" "--in" "--t" "--tok=x" "--tokenizer-type" \
            "--quiet=1" "--json-keys --quiet" "--input a --output-prefix" "stray" \
            "--input=" "--tokenizer-special-tokens" "--partitions=-1" "--lang -x"; do
  echo "== mg-preprocess $args"
  pp $args
done
pp -h | head -1
for args in "--" "-" "-5" "-h=x" "--num-lay 2" "--dry-run=1" "--lr" "--lr -1" "--lr=-1" \
            "--data-path" "--data-path=" "--split --lr" "stray" "--tokenizer-type=" \
            "--tokenizer-special-tokens --lr"; do
  echo "== mg-train $args"
  tr $args
done
tr -h | head -1
for args in "--" "-" "-5" "-h=x" "--load" "--load-dir" "--load-dir=" "--verify=1" \
            "--save-dir --verify" "--iteration -1" "--load-dir a --save-dir b stray" \
            "--inspect x --quiet=" "--target-dtype=fp8" "--loader"; do
  echo "== mg-convert $args"
  cv $args
done
cv -h | head -1
