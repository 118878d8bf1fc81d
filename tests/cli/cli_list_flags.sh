# --list-flags prints one line per flag of the tool's table: name, number of values
# (0, 1, + or *) and what a value is (text, file, dir); "-h 0" where -h is the help flag.
# The bash completion and the man page tests are made from it (tests/install/run.sh).
"$MG_BIN/mg-preprocess" --list-flags | grep -E '^(-h|--input|--output-prefix|--json-keys|--punkt-dir|--append-eod|--workers) '
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-convert" --list-flags | grep -E '^(-h|--load-dir|--saver|--verify|--list-flags) '
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-train" --list-flags | grep -E '^(-h|--num-layers|--data-path|--save|--vocab-file|--tokenizer-special-tokens|--swiglu) '
echo "exit ${PIPESTATUS[0]}"
# the whole command line is read first: an unknown flag is still a usage error
for t in mg-preprocess mg-convert mg-train; do
  "$MG_BIN/$t" --list-flags --no-such-flag >/dev/null 2>&1
  echo "$t: exit $?"
done
