#!/usr/bin/env bash
# The main job end to end (make demo): a real corpus to a trained, resharded, exported model.
#   1. mg-preprocess: the English fortune cookies of Debian's `fortunes` packages as JSONL
#      (white space runs, the files' line breaks and tab indents, made one space; shuffled
#      with a fixed seed, so the validation split is a sample of every file) ->
#      a Megatron .bin/.idx with GPT-2's byte-pair ranks (TikTokenizer r50k_base; the ranks
#      ship in the `openai-whisper` package on PyPI, fetched once into ~/.cache/mgtools/demo);
#   2. mg-train under `mpirun -np 2`, data-parallel (DP=2, one thread per rank): a 3.4M
#      parameter GPT-2-style model with a validation split, Megatron's log lines, the
#      --log-file metrics and checkpoints;
#   3. mg-convert: the checkpoint resharded to TP=2 and back to TP=1, then exported to
#      Hugging Face, every step with --verify, with a tokenizer.json that transformers makes
#      from the same ranks (scripts/tiktoken-to-hf.py), so the folder is all transformers needs;
#   4. scripts/demo-hf.py: transformers loads the export, generates a greedy continuation of
#      a fixed prompt, and its logits on prompt + continuation must equal mg-train's own
#      forward (build/tests/tools/model_probe) within fp32 tolerance; scripts/plot-metrics.py
#      draws the loss curves;
#   5. a summary (scripts/demo-summary.py): where each output is, first/last training loss,
#      validation loss, tokens/s and MFU, the sample; it fails unless the loss went down.
# Everything is written into OUT.partial and renamed to OUT when all steps passed, so a
# second run replaces the outputs of the first (a folder that is not a demo's is refused).
#   scripts/demo.sh [--out DIR] [--iters N] [--ranks FILE]
#     --out DIR     output folder (default demo-output in the repository root)
#     --iters N     training iterations (default 300; tests/interop/test_demo.py runs 20)
#     --ranks FILE  GPT-2 ranks (r50k_base.tiktoken) to use instead of fetching them
# Needs: the tools (make; MG_BIN overrides bin/), build/tests/tools/model_probe (make demo
# builds it; MG_PROBE overrides), mpirun, the `fortunes` package and the Python environment
# of scripts/setup.sh (MG_VENV overrides).
# Exit status: 0 done, 1 a step failed (OUT.partial is kept to look at), 2 usage error.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/demo-output iters=300 ranks=
usage() { echo "usage: scripts/demo.sh [--out DIR] [--iters N] [--ranks FILE]" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --iters) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || usage; iters=$2; shift 2 ;;
    --ranks) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    *) usage ;;
  esac
done
die() { echo "demo: error: $*" >&2; exit 1; }
step() { echo; echo "== demo step $1"; }
start=$(date +%s)

# The output folder: ours (a marker file) or new; built in OUT.partial, renamed at the end.
if [ -e "$out" ] && [ ! -e "$out/.mgtools-demo" ]; then
  die "'$out' exists and is not a demo output: give another --out"
fi
bin=${MG_BIN:-$root/bin} probe=${MG_PROBE:-$root/build/tests/tools/model_probe}
for t in "$bin/mg-preprocess" "$bin/mg-train" "$bin/mg-convert" "$probe"; do
  [ -x "$t" ] || die "'$t' is not built: run 'make demo'"
done
command -v mpirun >/dev/null || die "mpirun not found: run scripts/setup.sh (openmpi-bin)"
venv=${MG_VENV:-$("$root/scripts/setup.sh" --python | sed -n 's/^MG_VENV=//p')}
py=$venv/bin/python
[ -x "$py" ] || die "no Python environment at '$venv': run scripts/setup.sh"

work=$out.partial
rm -rf "$work"
mkdir -p "$work/data"
touch "$work/.mgtools-demo"
trap 'echo "demo: error: the step above failed; its outputs so far are in $work" >&2; exit 1' ERR

if [ -z "$ranks" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/demo
  ranks=$cache/gpt2.tiktoken
  if [ ! -s "$ranks" ]; then
    mkdir -p "$cache"
    tmp=$(mktemp -d)
    "$py" -m pip download -q --no-deps --no-binary :all: -d "$tmp" openai-whisper==20250625
    tar -xzf "$tmp"/openai_whisper-*.tar.gz -C "$tmp" --wildcards '*/whisper/assets/gpt2.tiktoken'
    mv "$tmp"/openai_whisper-*/whisper/assets/gpt2.tiktoken "$ranks"
    rm -rf "$tmp"
  fi
fi
[ -s "$ranks" ] || die "no GPT-2 ranks at '$ranks'"

step "1/5: mg-preprocess (fortunes -> Megatron .bin/.idx, GPT-2 byte-pair ranks)"
corpus=$work/data/fortunes.jsonl
files=$(dpkg-query -L fortunes fortunes-min 2>/dev/null | grep '^/usr/share/games/fortunes/[^./]*$') ||
  die "the 'fortunes' package is not installed: run scripts/setup.sh"
python3 - "$corpus" $files <<'PY'
import json, random, sys
docs = []
for path in sorted(sys.argv[2:]):
    with open(path, encoding="utf-8", errors="replace") as f:
        for text in f.read().split("\n%\n"):
            if text.strip():
                docs.append({"text": " ".join(text.split()), "source": path.rsplit("/", 1)[1]})
random.Random(1234).shuffle(docs)
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.writelines(json.dumps(d) + "\n" for d in docs)
PY
echo "corpus:    $corpus ($(wc -l <"$corpus") documents, $(du -h "$corpus" | cut -f1))"
echo "tokenizer: GPT-2 byte-pair ranks $ranks"
tok=(--tokenizer-type TikTokenizer --tokenizer-model "$ranks" --tiktoken-pattern r50k_base)
"$bin/mg-preprocess" --input "$corpus" --output-prefix "$work/data/fortunes" "${tok[@]}" \
  --append-eod --workers 2
data=$work/data/fortunes_text_document

step "2/5: mg-train under mpirun -np 2 (data parallel: DP=2, TP=1, PP=1, 1 thread per rank)"
model=(--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 64
       --max-position-embeddings 64 --hidden-dropout 0 --attention-dropout 0 "${tok[@]}")
eval_interval=$(( iters >= 300 ? 50 : (iters + 1) / 2 ))
train=("${model[@]}" --micro-batch-size 4 --global-batch-size 8 --train-iters "$iters"
       --lr 3e-3 --min-lr 3e-4 --lr-decay-style cosine --lr-warmup-iters $(( (iters + 9) / 10 ))
       --data-path "$data" --split 98,2,0 --eval-interval "$eval_interval" --eval-iters 10
       --log-interval $(( iters >= 100 ? 10 : 1 )) --save "$work/checkpoints"
       --save-interval $(( (iters + 1) / 2 )) --log-file "$work/metrics.jsonl")
mpi_env=(OMP_NUM_THREADS=1)
[ "$(id -u)" = 0 ] && mpi_env+=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
echo "mpirun -np 2 bin/mg-train ${train[*]}"
env "${mpi_env[@]}" mpirun --oversubscribe -np 2 "$bin/mg-train" "${train[@]}" |
  tee "$work/train.log"

step "3/5: mg-convert (reshard TP=1 -> TP=2 -> TP=1, export to Hugging Face, --verify)"
"$bin/mg-convert" --load-dir "$work/checkpoints" --save-dir "$work/checkpoints-tp2" \
  --target-tensor-parallel-size 2 --drop-optimizer-state --verify
"$bin/mg-convert" --load-dir "$work/checkpoints-tp2" --save-dir "$work/checkpoints-tp1" \
  --target-tensor-parallel-size 1 --verify
"$py" "$root/scripts/tiktoken-to-hf.py" "$ranks" "$work/hf-tokenizer"
"$bin/mg-convert" --load-dir "$work/checkpoints-tp1" --save-dir "$work/hf" --saver hf --verify \
  --tokenizer-dir "$work/hf-tokenizer"
rm -rf "$work/hf-tokenizer"

step "4/5: transformers: greedy generation, logits against mg-train's forward; loss curves"
"$py" "$root/scripts/demo-hf.py" "$work/hf" "$ranks" "$probe" "$work/logits-check" \
  "$work/sample.txt" -- "${model[@]}" --micro-batch-size 1 --train-iters 1 --lr 1e-3
"$py" "$root/scripts/plot-metrics.py" "$work/metrics.jsonl" "$work/loss-curves.png"

step "5/5: summary"
"$py" "$root/scripts/demo-summary.py" "$work" "$out" $(( $(date +%s) - start )) >"$work/summary.txt"
rm -rf "$out"
mv "$work" "$out"
cat "$out/summary.txt"
