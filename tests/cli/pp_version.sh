# --version prints one line and exits 0, whatever else is on the line.
"$MG_BIN/mg-preprocess" --version
"$MG_BIN/mg-preprocess" --input x --version
