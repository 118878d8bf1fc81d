# mg-convert --inspect --summary: one line per kind of tensor (layers as *, the files
# counted) for big models; a Hugging Face input's vocabulary is unpadded (Megatron pads it
# when converting). A config.json that contradicts the weights is named as its key (exit 1).
F=$MG_CLI_DIR/cv_fixtures/llama-tiny
"$MG_BIN/mg-convert" --inspect "$F" --summary | sed "s|$F|FIXTURE|g"
echo "exit ${PIPESTATUS[0]}"
"$MG_BIN/mg-convert" --load-dir "$F" --save-dir tp2 --target-tensor-parallel-size 2 --quiet
"$MG_BIN/mg-convert" --inspect tp2 --summary
echo "exit $?"
"$MG_BIN/mg-convert" --summary --load-dir tp2 --save-dir x 2>&1
echo "exit $?"
cp -r "$F" three && sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' three/config.json
"$MG_BIN/mg-convert" --load-dir three --save-dir out 2>&1
echo "exit $?"
cp -r "$F" one && sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 1/' one/config.json
"$MG_BIN/mg-convert" --load-dir one --save-dir out 2>&1
echo "exit $?"
cp -r "$F" wide && sed -i 's/"hidden_size": 16/"hidden_size": 32/' wide/config.json
"$MG_BIN/mg-convert" --load-dir wide --save-dir out 2>&1
echo "exit $?"
ls
