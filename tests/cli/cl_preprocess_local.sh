# The cluster recipe's preprocessing (scripts/cluster/preprocess.sh) run for real on this
# machine: 2 shards tokenized one by one (--local), then merged; and the Slurm path, with a
# stand-in sbatch that runs each job at once (fake-slurm/sbatch). Both merged
# datasets are byte-identical to one mg-preprocess over the same inputs in the same order.
cl=$MG_CLI_DIR/../../scripts/cluster
V=$MG_VOCAB_DIR/gpt2
tok=(--tokenizer-type GPT2BPETokenizer --vocab-file "$V/gpt2-vocab.json"
     --merge-file "$V/gpt2-merges.txt" --append-eod --workers 2 --quiet)
python3 - <<'PY'
import json
texts = ["Hello world.", "Sharded corpora merge in order.", "", "A longer one: " + "words " * 50,
         "Ünïcödé and <|endoftext|> inside", "last of the first shard"]
with open("a.jsonl", "w") as f:
    f.writelines(json.dumps({"text": t}) + "\n" for t in texts)
with open("b.jsonl", "w") as f:
    f.writelines(json.dumps({"text": t[::-1]}) + "\n" for t in texts[::-1])
PY
"$MG_BIN/mg-preprocess" --input a.jsonl --input b.jsonl --output-prefix one "${tok[@]}"
echo "one run: exit $?"
"$cl/preprocess.sh" --local --output-prefix local/corpus a.jsonl b.jsonl -- "${tok[@]}"
echo "local: exit $?"
ls local
cmp one_text_document.bin local/corpus_text_document.bin && cmp one_text_document.idx \
  local/corpus_text_document.idx && echo "local: byte-identical to one run"

PATH=$MG_CLI_DIR/fake-slurm:$PATH "$cl/preprocess.sh" --nodes 2 --output-prefix slurm/corpus a.jsonl b.jsonl \
  -- "${tok[@]}"
echo "slurm: exit $?"
sed 's/--wrap=.*//' jobs.log
ls slurm
cmp one_text_document.bin slurm/corpus_text_document.bin && cmp one_text_document.idx \
  slurm/corpus_text_document.idx && echo "slurm: byte-identical to one run"
echo "== two keys: one merged dataset per key"
python3 - <<'PY'
import json
for name, n in (("c.jsonl", 3), ("d.jsonl", 4)):
    with open(name, "w") as f:
        f.writelines(json.dumps({"text": f"body {name} {i}", "title": f"title {i}"}) + "\n"
                     for i in range(n))
PY
"$MG_BIN/mg-preprocess" --input c.jsonl d.jsonl --output-prefix keys1 "${tok[@]}" --json-keys text title
"$cl/preprocess.sh" --local --output-prefix keys/c c.jsonl d.jsonl -- "${tok[@]}" --json-keys text title
echo "local, two keys: exit $?"
ls keys
for k in text title; do
  cmp keys1_${k}_document.bin keys/c_${k}_document.bin && cmp keys1_${k}_document.idx \
    keys/c_${k}_document.idx && echo "$k: byte-identical to one run"
done
echo "== a second submission while the shards of the first exist is refused"
mkdir slurm/corpus.shards
PATH=$MG_CLI_DIR/fake-slurm:$PATH "$cl/preprocess.sh" --output-prefix slurm/corpus a.jsonl -- "${tok[@]}"
echo "exit $?"
echo "== a missing input"
"$cl/preprocess.sh" --local --output-prefix x a.jsonl nope.jsonl -- "${tok[@]}"
echo "exit $?"
