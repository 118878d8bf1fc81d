# --version prints the version, the git revision and the optional parts built in, and exits
# 0, whatever else is on the line.
"$MG_BIN/mg-preprocess" --version
"$MG_BIN/mg-preprocess" --input x --version
