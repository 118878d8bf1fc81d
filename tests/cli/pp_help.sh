# mg-preprocess --help: the full text (flags, semantics followed, exit status); -h is the same.
"$MG_BIN/mg-preprocess" --help
"$MG_BIN/mg-preprocess" -h | cmp - <("$MG_BIN/mg-preprocess" --help) && echo "-h same as --help"
