# One wording for the three tools (mg/argv.h, argparse's): an unknown flag names the closest
# valid one, an invalid choice lists the valid values (and the closest); a Megatron
# tokenizer type that mgtools lacks stays "not supported yet".
t() { "$MG_BIN/$@" 2>&1 | sed -n 1p; echo "exit ${PIPESTATUS[0]}"; }
M="--num-layers 1 --hidden-size 16 --num-attention-heads 2 --seq-length 16
   --max-position-embeddings 16 --micro-batch-size 2 --lr 1e-3 --train-iters 2 --dry-run"
t mg-train $M --tokenizer-typ NullTokenizer
t mg-train $M --tokenizer-type GPT2BPE --vocab-file v.json
t mg-train $M --tokenizer-type MultimodalTokenizer
t mg-train $M --normalization rmsnorm
t mg-preprocess --input x.jsonl --output-prefix o --tokenizer-type GPT2BPE
t mg-preprocess --input x.jsonl --output-prefix o --tokenzier-type GPT2BPETokenizer
t mg-preprocess --input x.jsonl --output-prefix o --tokenizer-type SFTTokenizer
t mg-convert --load-dir a --save-dir b --saver HF
t mg-convert --load-dir a --save-dir b --loader llama
t mg-convert --load-dir a --save-dir b --target-tensor-parallel 2
