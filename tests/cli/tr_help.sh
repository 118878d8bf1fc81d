# mg-train --help prints the usage (every flag, the FLOP formula) on stdout and exits 0;
# --version prints the version, the git revision and the optional parts built in.
"$MG_BIN/mg-train" --help
echo "exit $?"
"$MG_BIN/mg-train" --version
echo "exit $?"
