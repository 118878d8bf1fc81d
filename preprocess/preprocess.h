/* preprocess/preprocess.h — mg-preprocess internals: the options struct and the modes.
 *
 * main.c parses argv into struct mg_preprocess_opts (options.c) and calls one mode:
 *   pp_run_preprocess()  tools/preprocess_data.py   (pipeline.c, encode.c, output.c)
 *   pp_run_merge()       tools/merge_datasets.py    (merge_mode.c)
 * A mode returns an exit code (mg/cli.h); runtime failures are reported by the mode.
 */
#ifndef MG_PREPROCESS_H
#define MG_PREPROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/tokenizer.h"

struct mg_preprocess_opts {
    const char **inputs;         /* --input PATH... (repeatable; file, directory, "-", or a
                                    quoted glob pattern when no such file exists) */
    size_t n_inputs;
    const char *output_prefix;   /* --output-prefix */
    const char **json_keys;      /* --json-keys K... (default: text; duplicates dropped) */
    size_t n_json_keys;
    int split_sentences;         /* --split-sentences (NLTK Punkt, mg/punkt.h) */
    int keep_newlines;           /* --keep-newlines (only matters with --split-sentences) */
    const char *lang;            /* --lang (only matters with --split-sentences) */
    const char *punkt_dir;       /* --punkt-dir DIR (model DIR/lang; NULL: NLTK's search) */
    int append_eod;              /* --append-eod */
    int64_t workers;             /* --workers (encoder threads; default: online CPUs) */
    int64_t partitions;          /* --partitions */
    int keep_sequential_samples; /* --keep-sequential-samples */
    int64_t log_interval;        /* --log-interval (documents) */
    const char **special_tokens; /* --tokenizer-special-tokens T... (copied into tok) */
    size_t n_special_tokens;
    mg_tok_opts tok;             /* --tokenizer-type, --vocab-file, --merge-file,
                                    --tokenizer-model, --vocab-size, --tiktoken-pattern,
                                    --tiktoken-num-special-tokens,
                                    --tokenizer-hf-no-include-special-tokens,
                                    --null-tokenizer-eod-id */
    int skip_invalid;            /* --skip-invalid */
    int quiet;                   /* --quiet */
    int no_direct_io;            /* --no-direct-io (.bin through the page cache) */
    int merge;                   /* --merge (tools/merge_datasets.py mode) */
    int multimodal;              /* --multimodal (merge mode; refused: not supported yet) */
    int help;                    /* --help / -h */
    int version;                 /* --version */
    const char *inspect;         /* --inspect PREFIX (inspection mode, inspect.h) */
    const char *decode_spec;     /* --decode SPEC (with --inspect: documents to decode) */
    char **owned_;               /* (not a flag) strings allocated by the parser */
    size_t n_owned_;
};

/* Fills o from argv; on a usage error prints it and exits with status 2. The arrays in o
 * point into argv or into memory owned by o (freed by pp_opts_free). */
void pp_parse_options(struct mg_preprocess_opts *o, int argc, char **argv);
void pp_opts_free(struct mg_preprocess_opts *o);

/* Prints the --help text on stdout. */
void pp_print_help(void);

int pp_run_preprocess(const struct mg_preprocess_opts *o);
int pp_run_merge(const struct mg_preprocess_opts *o);

#endif
