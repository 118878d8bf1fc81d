# The cluster recipe's conversion (scripts/cluster/convert.sh) through a stand-in sbatch that
# runs the job at once (fake-slurm/sbatch): a checkpoint mg-train saved becomes a Hugging Face
# folder, verified tensor by tensor.
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 1 --global-batch-size 1 --train-iters 2
   --lr 1e-3 --tokenizer-type NullTokenizer --vocab-size 64 --mock-data --eval-iters 0"
"$MG_BIN/mg-train" $M --save ck --save-interval 2 >/dev/null 2>&1
echo "train exit $?"
PATH=$MG_CLI_DIR/fake-slurm:$PATH "$MG_CLI_DIR/../../scripts/cluster/convert.sh" --after 41 \
  --load-dir ck --save-dir hf
echo "convert exit $?"
sed -E 's/in [0-9.]+ s/in N s/; s/[0-9.]+ MB/N MB/' jobs.log
ls hf
