# The .bin by direct I/O (the default, where the filesystem takes it) and through the page
# cache (--no-direct-io) are the same bytes; the dataset is large enough (3.2 MB of uint16
# ids) that whole 2 MiB buffers go out direct and the tail buffered.
awk 'BEGIN { for (i = 0; i < 8000; i++) { printf "{\"text\": \"";
  for (j = 0; j < 200; j++) printf "%s%d", (j ? " " : ""), (i * 7 + j) % 97; print "\"}" } }' \
  > in.jsonl
flags=(--input in.jsonl --tokenizer-type NullTokenizer --vocab-size 100 --append-eod --quiet
       --workers 2)
"$MG_BIN/mg-preprocess" "${flags[@]}" --output-prefix direct
echo "default: exit $?"
"$MG_BIN/mg-preprocess" "${flags[@]}" --output-prefix buffered --no-direct-io
echo "--no-direct-io: exit $?"
cmp direct_text_document.bin buffered_text_document.bin && echo "bin same"
cmp direct_text_document.idx buffered_text_document.idx && echo "idx same"
wc -c < direct_text_document.bin
ls
