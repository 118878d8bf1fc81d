# mg-convert --help prints the usage on stdout and exits 0; no arguments is a usage error.
"$MG_BIN/mg-convert" --help
echo "exit $?"
"$MG_BIN/mg-convert" >/dev/null 2>err.txt
echo "no arguments: exit $?"
head -c 200 err.txt | head -1
