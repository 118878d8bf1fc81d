# The cluster recipe's dry modes (scripts/cluster/): the commands each script would submit
# for a node count, with nothing run. Paths: $MG_BIN and the repository root shown as names.
root=$(cd "$MG_CLI_DIR/../.." && pwd)
cl=$root/scripts/cluster
show() { sed "s|$MG_BIN|\$MG_BIN|g; s|$root|ROOT|g"; }
tok="--tokenizer-type GPT2BPETokenizer --vocab-file v.json --merge-file m.txt --append-eod"
echo "== preprocess: 3 shards on 2 nodes, two keys"
"$cl/preprocess.sh" --dry-run --nodes 2 --output-prefix data/web s0.jsonl.zst "s 1.jsonl" s2.jsonl \
  -- $tok --json-keys text title --workers 64 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
echo "== preprocess: sentences, no node limit"
"$cl/preprocess.sh" --dry-run --output-prefix p a.jsonl -- $tok --split-sentences 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
flags="--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 2 --data-path data/web_text_document --save ck"
for l in srun mpirun torchrun; do
  echo "== train: 8 nodes x 2 ranks, TP 2 x PP 2, $l"
  "$cl/train.sh" --dry-run --nodes 8 --tasks-per-node 2 --launcher $l -- $flags 2>&1 | show
  echo "exit ${PIPESTATUS[0]}"
done
echo "== train: after a job, one rank per node"
"$cl/train.sh" --dry-run --nodes 4 --tasks-per-node 1 --after 4242 -- --num-layers 2 \
  --tensor-model-parallel-size=4 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
echo "== train: mpirun with a hostfile, no Slurm"
"$cl/train.sh" --dry-run --nodes 2 --tasks-per-node 4 --launcher mpirun --hostfile hosts \
  -- --num-layers 2 --pipeline-model-parallel-size 8 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
echo "== train: 6 ranks do not hold TP 4"
"$cl/train.sh" --dry-run --nodes 3 --tasks-per-node 2 -- --tensor-model-parallel-size 4 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
echo "== convert: after the training job"
"$cl/convert.sh" --dry-run --after 4243 --load-dir ck --save-dir "hf out" -- --tokenizer-dir tok 2>&1 | show
echo "exit ${PIPESTATUS[0]}"
echo "== usage errors"
"$cl/preprocess.sh" --dry-run --output-prefix p a.jsonl 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
"$cl/preprocess.sh" --dry-run --local --output-prefix p a.jsonl -- $tok 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
"$cl/train.sh" --dry-run --nodes 0 --tasks-per-node 1 -- --x 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
"$cl/train.sh" --dry-run --nodes 1 --tasks-per-node 1 --launcher srun --hostfile h -- --x 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
"$cl/convert.sh" --dry-run --load-dir ck 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
echo "== without sbatch (PATH has none here), a real submission is refused"
PATH=/usr/bin:/bin "$cl/convert.sh" --load-dir ck --save-dir hf 2>&1 | show; echo "exit ${PIPESTATUS[0]}"
