# Throughput and MFU: TFLOP/s/GPU keeps 3 significant digits under 10 (a CPU's is not 0.0);
# --peak-tflops gives MFU's peak instead of the start-up sgemm measurement (the metrics
# file's mfu is tflops / that peak); a peak that is not positive is a usage error.
M="--num-layers 1 --hidden-size 64 --num-attention-heads 2 --seq-length 32
   --max-position-embeddings 32 --micro-batch-size 2 --lr 1e-3 --train-iters 2
   --tokenizer-type NullTokenizer --vocab-size 64 --mock-data --log-interval 1 --eval-iters 0"
"$MG_BIN/mg-train" $M --peak-tflops 0.000001 --log-file m.jsonl 2>err.txt |
  grep -oE 'TFLOP/s/GPU\): [0-9.]+' | sed -E 's/: 0\.0*[1-9][0-9]{2}$/: 3 significant digits/'
echo "exit ${PIPESTATUS[0]}"
grep -oE '(--peak-tflops|gemm) peak [0-9.]+ GFLOP/s' err.txt
python3 - <<'PY'
import json
for r in map(json.loads, open("m.jsonl")):
    if r["kind"] == "train":
        print("mfu = tflops / peak:", abs(r["mfu"] - r["tflops"] / 1e-6) <= 1e-9 * r["mfu"])
PY
"$MG_BIN/mg-train" $M --peak-tflops -1 2>&1
echo "exit $?"
"$MG_BIN/mg-train" $M --peak-tflops 0 2>&1 | head -1
