# --inspect detects non-monotone pointers and document indices (exit 1, names the offset).
printf '{"text": "1 2 3"}\n{"text": "4 5"}\n{"text": "6"}\n' > a.jsonl
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix d --tokenizer-type NullTokenizer \
    --vocab-size 100 --quiet
# 3 sequences: lengths at byte 34, pointers (0, 6, 10) at byte 46, document indices at 70
cp d_text_document.bin p.bin
cp d_text_document.idx p.idx
printf '\x02' | dd of=p.idx bs=1 seek=62 conv=notrunc 2>/dev/null
"$MG_BIN/mg-preprocess" --inspect p
echo "pointer going back: exit $?"
cp d_text_document.bin q.bin
cp d_text_document.idx q.idx
printf '\x03' | dd of=q.idx bs=1 seek=78 conv=notrunc 2>/dev/null
printf '\x01' | dd of=q.idx bs=1 seek=86 conv=notrunc 2>/dev/null
"$MG_BIN/mg-preprocess" --inspect q
echo "document index going back: exit $?"
cp d_text_document.bin r.bin
cp d_text_document.idx r.idx
printf '\x01' | dd of=r.idx bs=1 seek=70 conv=notrunc 2>/dev/null
"$MG_BIN/mg-preprocess" --inspect r
echo "first document index not 0: exit $?"
