# --inspect detects a .bin shorter than its index says (exit 1, names the sizes).
printf '{"text": "1 2 3"}\n{"text": "4 5"}\n' > a.jsonl
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix d --tokenizer-type NullTokenizer \
    --vocab-size 100 --quiet
truncate -s 8 d_text_document.bin
"$MG_BIN/mg-preprocess" --inspect d_text_document
echo "exit $?"
# and a .bin with extra bytes
printf '\0\0' >> d_text_document.bin
printf '\0\0\0\0' >> d_text_document.bin
"$MG_BIN/mg-preprocess" --inspect d_text_document
echo "exit $?"
