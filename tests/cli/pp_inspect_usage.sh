# --inspect / --decode usage errors (exit 2).
printf '{"text": "1 2 3"}\n' > a.jsonl
"$MG_BIN/mg-preprocess" --input a.jsonl --output-prefix d --tokenizer-type NullTokenizer \
    --vocab-size 100 --quiet
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 0
echo "exit $?"
"$MG_BIN/mg-preprocess" --decode 0 --tokenizer-type NullTokenizer --vocab-size 100
echo "exit $?"
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 1 --tokenizer-type NullTokenizer --vocab-size 100
echo "exit $?"
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 3-1 --tokenizer-type NullTokenizer --vocab-size 100
echo "exit $?"
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 0,,1 --tokenizer-type NullTokenizer --vocab-size 100
echo "exit $?"
"$MG_BIN/mg-preprocess" --inspect d_text_document --input a.jsonl
echo "exit $?"
# ids the tokenizer cannot decode: a runtime failure naming the document
"$MG_BIN/mg-preprocess" --inspect d_text_document --decode 0 --tokenizer-type NullTokenizer \
    --vocab-size 3 > out.txt 2>&1
echo "exit $?"
tail -2 out.txt
