# --inspect detects a corrupted .idx header: magic, version, dtype code, truncated file.
printf '{"text": "1 2 3"}\n{"text": "4 5"}\n' > a.jsonl
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix d --tokenizer-type NullTokenizer \
    --vocab-size 100 --quiet
for what in magic:0:X version:9:\\x07 dtype:17:\\x0b; do
    IFS=: read -r name off byte <<<"$what"
    cp d_text_document.bin "$name.bin"
    cp d_text_document.idx "$name.idx"
    printf "$byte" | dd of="$name.idx" bs=1 seek="$off" conv=notrunc 2>/dev/null
    "$MG_BIN/mg-preprocess" --inspect "$name"
    echo "$name: exit $?"
done
cp d_text_document.bin short.bin
head -c 20 d_text_document.idx > short.idx
"$MG_BIN/mg-preprocess" --inspect short
echo "short: exit $?"
"$MG_BIN/mg-preprocess" --inspect missing
echo "missing: exit $?"
