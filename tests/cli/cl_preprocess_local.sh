# The cluster recipe's preprocessing (scripts/cluster/preprocess.sh) run for real on this
# machine: 2 shards tokenized one by one (--local), then merged; and the Slurm path, with a
# stand-in sbatch that runs each job at once (the array's tasks in index order). Both merged
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

mkdir fakebin
cat >fakebin/sbatch <<'SH'
#!/usr/bin/env bash
# A stand-in for Slurm's sbatch --parsable: runs the --wrap command now (an --array's
# indices in order, SLURM_ARRAY_TASK_ID set), logs to jobs.log, prints a job id.
n=$(( $(cat .jobs 2>/dev/null || echo 0) + 1 )); echo $n >.jobs
array= wrap=
for a; do
  case $a in --array=*) array=${a#--array=}; array=${array%\%*} ;; --wrap=*) wrap=${a#--wrap=} ;; esac
done
echo "job $n: ${*%%--wrap=*}" >>jobs.log
if [ -n "$array" ]; then
  for i in $(seq "${array%-*}" "${array#*-}"); do
    SLURM_ARRAY_TASK_ID=$i sh -c "$wrap" >>jobs.log 2>&1 || exit 1
  done
else
  sh -c "$wrap" >>jobs.log 2>&1 || exit 1
fi
echo $n
SH
chmod +x fakebin/sbatch
PATH=$PWD/fakebin:$PATH "$cl/preprocess.sh" --nodes 2 --output-prefix slurm/corpus a.jsonl b.jsonl \
  -- "${tok[@]}"
echo "slurm: exit $?"
sed 's/--wrap=.*//' jobs.log
ls slurm
cmp one_text_document.bin slurm/corpus_text_document.bin && cmp one_text_document.idx \
  slurm/corpus_text_document.idx && echo "slurm: byte-identical to one run"
echo "== a second submission while the shards of the first exist is refused"
mkdir slurm/corpus.shards
PATH=$PWD/fakebin:$PATH "$cl/preprocess.sh" --output-prefix slurm/corpus a.jsonl -- "${tok[@]}"
echo "exit $?"
echo "== a missing input"
"$cl/preprocess.sh" --local --output-prefix x a.jsonl nope.jsonl -- "${tok[@]}"
echo "exit $?"
