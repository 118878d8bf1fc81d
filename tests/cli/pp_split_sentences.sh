# --split-sentences with an NLTK punkt_tab model (given with --punkt-dir, or found through
# $NLTK_DATA/tokenizers/punkt_tab/LANG): PREFIX_{key}_sentence.bin/.idx with one sequence per
# sentence and the EOD after the last sentence only; a missing model is an error (exit 1).
mkdir -p punkt/english nd/tokenizers/punkt_tab
printf 'mr\n' > punkt/english/abbrev_types.txt
: > punkt/english/sent_starters.txt
: > punkt/english/collocations.tab
printf 'the\t34\n' > punkt/english/ortho_context.tab
cp -r punkt/english nd/tokenizers/punkt_tab/
printf '%s\n' '{"text": "Hello Mr. Smith. Bye."}' '{"text": ""}' '{"text": "One.\n\nTwo"}' > in.jsonl
gpt2=(--tokenizer-type GPT2BPETokenizer --vocab-file "$MG_VOCAB_DIR/gpt2/gpt2-vocab.json"
      --merge-file "$MG_VOCAB_DIR/gpt2/gpt2-merges.txt")
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix out "${gpt2[@]}" --split-sentences \
  --punkt-dir punkt --append-eod --quiet
echo "exit $?"
od -A d -t u2 out_text_sentence.bin
od -A d -t x1 out_text_sentence.idx
# --keep-newlines: the whitespace after a sentence end stays in it ("One.\n\n" = 3198 13 628)
NLTK_DATA=nd "$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix kn "${gpt2[@]}" \
  --split-sentences --keep-newlines --quiet
echo "exit $?"
od -A d -t u2 kn_text_sentence.bin
HOME=. NLTK_DATA=nd "$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix x "${gpt2[@]}" \
  --split-sentences --lang german
echo "exit $?"
"$MG_BIN/mg-preprocess" --input in.jsonl --output-prefix x "${gpt2[@]}" --split-sentences \
  --punkt-dir punkt --lang ../punkt/english
echo "exit $?"
ls
