/* options.c — argv -> struct mg_preprocess_opts, with argparse's rules as
 * tools/preprocess_data.py sees them (the words scanned by mg/argv.h): "--flag value" and
 * "--flag=value", list flags take every following word up to the next flag (nargs='+'),
 * unambiguous prefixes of a long flag are accepted (allow_abbrev), the last occurrence of a
 * flag wins (but --input accumulates here). Usage errors exit with status 2 naming the
 * flag. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/argv.h"
#include "mg/cli.h"
#include "preprocess.h"

enum arg_kind { ARG_NONE, ARG_ONE, ARG_LIST };
/* What a flag does beyond setting its field. */
enum flag_class { CL_NORMAL, CL_IGNORED, CL_UNSUPPORTED };

enum opt_id {
    O_INPUT, O_OUTPUT_PREFIX, O_JSON_KEYS, O_SPLIT_SENTENCES, O_KEEP_NEWLINES, O_LANG,
    O_APPEND_EOD, O_WORKERS, O_PARTITIONS, O_KEEP_SEQUENTIAL, O_LOG_INTERVAL,
    O_PUNKT_DIR, O_TOKENIZER_TYPE, O_VOCAB_FILE, O_MERGE_FILE, O_TOKENIZER_MODEL, O_VOCAB_SIZE,
    O_TIKTOKEN_PATTERN, O_TIKTOKEN_NUM_SPECIAL, O_SPECIAL_TOKENS, O_HF_NO_SPECIAL,
    O_NULL_EOD, O_SKIP_INVALID, O_QUIET, O_NO_DIRECT_IO, O_MERGE, O_MULTIMODAL, O_HELP,
    O_VERSION, O_LIST_FLAGS, O_INSPECT, O_DECODE,
    /* accepted, no effect on preprocessing (training-only or fixed by preprocess_data.py) */
    O_PADDED_VOCAB, O_NO_PAD_VOCAB, O_DISABLE_PAD_VOCAB, O_VOCAB_EXTRA_IDS, O_NULL_PAD,
    O_HF_NO_USE_FAST, O_TRUST_REMOTE_CODE,
    /* recognised, not implemented */
    O_FIND_OPTIMAL, O_WORKERS_TO_CHECK, O_MAX_DOCUMENTS, O_PERFORMANCE_DIR, O_TOK_METADATA,
    O_CHAT_TEMPLATE, O_USE_GIGATOKEN, O_SP_LEGACY, O_SP_NO_IGNORE_WS,
    O_COUNT
};

struct flag {
    const char *name;
    enum arg_kind kind;
    enum flag_class cls;
};

static const struct flag flags[O_COUNT] = {
    [O_INPUT] = {"--input", ARG_LIST, CL_NORMAL},
    [O_OUTPUT_PREFIX] = {"--output-prefix", ARG_ONE, CL_NORMAL},
    [O_JSON_KEYS] = {"--json-keys", ARG_LIST, CL_NORMAL},
    [O_SPLIT_SENTENCES] = {"--split-sentences", ARG_NONE, CL_NORMAL},
    [O_KEEP_NEWLINES] = {"--keep-newlines", ARG_NONE, CL_NORMAL},
    [O_LANG] = {"--lang", ARG_ONE, CL_NORMAL},
    [O_PUNKT_DIR] = {"--punkt-dir", ARG_ONE, CL_NORMAL},
    [O_APPEND_EOD] = {"--append-eod", ARG_NONE, CL_NORMAL},
    [O_WORKERS] = {"--workers", ARG_ONE, CL_NORMAL},
    [O_PARTITIONS] = {"--partitions", ARG_ONE, CL_NORMAL},
    [O_KEEP_SEQUENTIAL] = {"--keep-sequential-samples", ARG_NONE, CL_NORMAL},
    [O_LOG_INTERVAL] = {"--log-interval", ARG_ONE, CL_NORMAL},
    [O_TOKENIZER_TYPE] = {"--tokenizer-type", ARG_ONE, CL_NORMAL},
    [O_VOCAB_FILE] = {"--vocab-file", ARG_ONE, CL_NORMAL},
    [O_MERGE_FILE] = {"--merge-file", ARG_ONE, CL_NORMAL},
    [O_TOKENIZER_MODEL] = {"--tokenizer-model", ARG_ONE, CL_NORMAL},
    [O_VOCAB_SIZE] = {"--vocab-size", ARG_ONE, CL_NORMAL},
    [O_TIKTOKEN_PATTERN] = {"--tiktoken-pattern", ARG_ONE, CL_NORMAL},
    [O_TIKTOKEN_NUM_SPECIAL] = {"--tiktoken-num-special-tokens", ARG_ONE, CL_NORMAL},
    [O_SPECIAL_TOKENS] = {"--tokenizer-special-tokens", ARG_LIST, CL_NORMAL},
    [O_HF_NO_SPECIAL] = {"--tokenizer-hf-no-include-special-tokens", ARG_NONE, CL_NORMAL},
    [O_NULL_EOD] = {"--null-tokenizer-eod-id", ARG_ONE, CL_NORMAL},
    [O_SKIP_INVALID] = {"--skip-invalid", ARG_NONE, CL_NORMAL},
    [O_QUIET] = {"--quiet", ARG_NONE, CL_NORMAL},
    [O_NO_DIRECT_IO] = {"--no-direct-io", ARG_NONE, CL_NORMAL},
    [O_MERGE] = {"--merge", ARG_NONE, CL_NORMAL},
    [O_MULTIMODAL] = {"--multimodal", ARG_NONE, CL_UNSUPPORTED},
    [O_HELP] = {"--help", ARG_NONE, CL_NORMAL},
    [O_VERSION] = {"--version", ARG_NONE, CL_NORMAL},
    [O_LIST_FLAGS] = {"--list-flags", ARG_NONE, CL_NORMAL},
    [O_INSPECT] = {"--inspect", ARG_ONE, CL_NORMAL},
    [O_DECODE] = {"--decode", ARG_ONE, CL_NORMAL},
    [O_PADDED_VOCAB] = {"--padded-vocab-size", ARG_ONE, CL_IGNORED},
    [O_NO_PAD_VOCAB] = {"--no-pad-vocab-size", ARG_NONE, CL_IGNORED},
    [O_DISABLE_PAD_VOCAB] = {"--disable-pad-vocab-size", ARG_NONE, CL_IGNORED},
    [O_VOCAB_EXTRA_IDS] = {"--vocab-extra-ids", ARG_ONE, CL_IGNORED},
    [O_NULL_PAD] = {"--null-tokenizer-pad-id", ARG_ONE, CL_IGNORED},
    [O_HF_NO_USE_FAST] = {"--tokenizer-hf-no-use-fast", ARG_NONE, CL_IGNORED},
    [O_TRUST_REMOTE_CODE] = {"--trust-remote-code", ARG_NONE, CL_IGNORED},
    [O_FIND_OPTIMAL] = {"--find-optimal-num-workers", ARG_NONE, CL_UNSUPPORTED},
    [O_WORKERS_TO_CHECK] = {"--workers-to-check", ARG_LIST, CL_UNSUPPORTED},
    [O_MAX_DOCUMENTS] = {"--max-documents", ARG_ONE, CL_UNSUPPORTED},
    [O_PERFORMANCE_DIR] = {"--performance-dir", ARG_ONE, CL_UNSUPPORTED},
    [O_TOK_METADATA] = {"--tokenizer-metadata", ARG_ONE, CL_UNSUPPORTED},
    [O_CHAT_TEMPLATE] = {"--chat-template", ARG_ONE, CL_UNSUPPORTED},
    [O_USE_GIGATOKEN] = {"--use-gigatoken", ARG_NONE, CL_UNSUPPORTED},
    [O_SP_LEGACY] = {"--tokenizer-sentencepiece-legacy", ARG_NONE, CL_UNSUPPORTED},
    [O_SP_NO_IGNORE_WS] = {"--no-tokenizer-sentencepiece-ignore-extra-whitespaces", ARG_NONE,
                           CL_UNSUPPORTED},
};

/* Parser state: which flags were seen (first unsupported one is refused after parsing). */
struct parse_state {
    int seen[O_COUNT];
    int first_unsupported; /* -1 if none */
};

static const mg_argv_nargs nargs_of[] = {
    [ARG_NONE] = MG_ARGV_SWITCH, [ARG_ONE] = MG_ARGV_ONE, [ARG_LIST] = MG_ARGV_LIST};

/* Flags whose value is a file or path prefix, or a directory (shell completion). */
static const char *const file_flags[] = {"--input", "--output-prefix", "--vocab-file",
                                         "--merge-file", "--tokenizer-model", "--inspect",
                                         "--tokenizer-metadata", NULL};
static const char *const dir_flags[] = {"--punkt-dir", "--performance-dir", NULL};

/* The scanner's table: argparse rules, unique prefixes accepted (allow_abbrev), -h. */
static void argv_table(mg_argv_flag *t, mg_argv_spec *spec)
{
    for (int i = 0; i < O_COUNT; i++) t[i] = (mg_argv_flag){flags[i].name, nargs_of[flags[i].kind]};
    *spec = (mg_argv_spec){t, O_COUNT, 1, 0, O_HELP, file_flags, dir_flags};
}

/* argparse's words for the scanner's errors (mg/argv.h). */
__attribute__((noreturn)) static void scan_error(const mg_argv *a, mg_argv_event ev)
{
    mg_argv_error(a, ev);
    mg_usage_error("%s", mg_last_error());
}

static void push(const char ***arr, size_t *n, const char *v)
{
    const char **a = realloc(*arr, (*n + 1) * sizeof *a);
    if (!a) mg_die(MG_EXIT_FAILURE, "out of memory");
    a[(*n)++] = v;
    *arr = a;
}

static int64_t int_value(int id, const char *v, int64_t min)
{
    int64_t x;
    if (mg_argv_int(flags[id].name, v, min, INT64_MAX, &x) != MG_OK)
        mg_usage_error("%s", mg_last_error());
    return x;
}

/* Stores one value of flag id. */
static void set_value(struct mg_preprocess_opts *o, int id, const char *v)
{
    switch (id) {
    case O_INPUT: push(&o->inputs, &o->n_inputs, v); break;
    case O_OUTPUT_PREFIX: o->output_prefix = v; break;
    case O_JSON_KEYS: push(&o->json_keys, &o->n_json_keys, v); break;
    case O_LANG: o->lang = v; break;
    case O_PUNKT_DIR: o->punkt_dir = v; break;
    case O_WORKERS: o->workers = int_value(id, v, 1); break;
    case O_PARTITIONS: o->partitions = int_value(id, v, 1); break;
    case O_LOG_INTERVAL: o->log_interval = int_value(id, v, 1); break;
    case O_TOKENIZER_TYPE: o->tok.type = v; break;
    case O_VOCAB_FILE: o->tok.vocab_file = v; break;
    case O_MERGE_FILE: o->tok.merge_file = v; break;
    case O_TOKENIZER_MODEL: o->tok.model = v; break;
    case O_VOCAB_SIZE: o->tok.vocab_size = int_value(id, v, 1); break;
    case O_TIKTOKEN_PATTERN:
        if (!mg_tiktoken_pattern_known(v))
            mg_usage_error("argument %s: invalid choice: '%s' (choose from v1, v2, r50k_base, "
                           "p50k_base, p50k_edit, cl100k_base, o200k_base)", flags[id].name, v);
        o->tok.tiktoken_pattern = v;
        break;
    case O_TIKTOKEN_NUM_SPECIAL: o->tok.tiktoken_num_special = int_value(id, v, 0); break;
    case O_SPECIAL_TOKENS: push(&o->special_tokens, &o->n_special_tokens, v); break;
    case O_NULL_EOD: o->tok.null_eod_id = int_value(id, v, 0); break;
    case O_INSPECT: o->inspect = v; break;
    case O_DECODE: o->decode_spec = v; break;
    case O_PADDED_VOCAB: case O_VOCAB_EXTRA_IDS: (void)int_value(id, v, 0); break;
    case O_NULL_PAD: (void)int_value(id, v, -1); break;
    default: break; /* values of refused flags are not looked at */
    }
}

static void set_switch(struct mg_preprocess_opts *o, int id)
{
    switch (id) {
    case O_SPLIT_SENTENCES: o->split_sentences = 1; break;
    case O_KEEP_NEWLINES: o->keep_newlines = 1; break;
    case O_APPEND_EOD: o->append_eod = 1; break;
    case O_KEEP_SEQUENTIAL: o->keep_sequential_samples = 1; break;
    case O_HF_NO_SPECIAL: o->tok.hf_no_include_special = 1; break;
    case O_SKIP_INVALID: o->skip_invalid = 1; break;
    case O_QUIET: o->quiet = 1; break;
    case O_NO_DIRECT_IO: o->no_direct_io = 1; break;
    case O_MERGE: o->merge = 1; break;
    case O_MULTIMODAL: o->multimodal = 1; break;
    case O_HELP: o->help = 1; break;
    case O_VERSION: o->version = 1; break;
    default: break;
    }
}

/* Applies flag a->id with its values. */
static void take(struct mg_preprocess_opts *o, struct parse_state *ps, const mg_argv *a)
{
    int id = a->id;
    ps->seen[id] = 1;
    if (flags[id].cls == CL_UNSUPPORTED && ps->first_unsupported < 0) ps->first_unsupported = id;
    if (flags[id].kind == ARG_NONE) {
        set_switch(o, id);
        return;
    }
    /* argparse: a repeated nargs='+' flag replaces the earlier list (--input accumulates) */
    if (id == O_JSON_KEYS) o->n_json_keys = 0;
    if (id == O_SPECIAL_TOKENS) o->n_special_tokens = 0;
    for (size_t k = 0; k < a->nvalues; k++) set_value(o, id, a->values[k]);
}

static void set_defaults(struct mg_preprocess_opts *o)
{
    memset(o, 0, sizeof *o);
    mg_tok_opts_init(&o->tok);
    o->lang = "english";
    o->workers = 0; /* decided after parsing */
    o->partitions = 1;
    o->log_interval = 1000;
}

/* json_keys: default ["text"]; a key given twice is one dataset (Megatron's dict). */
static void finish_keys(struct mg_preprocess_opts *o)
{
    if (o->n_json_keys == 0) push(&o->json_keys, &o->n_json_keys, "text");
    size_t n = 0;
    for (size_t i = 0; i < o->n_json_keys; i++) {
        size_t j = 0;
        while (j < n && strcmp(o->json_keys[j], o->json_keys[i]) != 0) j++;
        if (j == n) o->json_keys[n++] = o->json_keys[i];
    }
    o->n_json_keys = n;
}

static void check_merge_mode(const struct parse_state *ps)
{
    static const int allowed[] = {O_INPUT, O_OUTPUT_PREFIX, O_MERGE, O_MULTIMODAL, O_QUIET};
    for (int id = 0; id < O_COUNT; id++) {
        int ok = 0;
        for (size_t k = 0; k < sizeof allowed / sizeof allowed[0]; k++) ok |= allowed[k] == id;
        if (ps->seen[id] && !ok)
            mg_usage_error("%s cannot be used with --merge", flags[id].name);
    }
}

/* --inspect PREFIX [--decode SPEC] [tokenizer flags] [--quiet] (inspect.c). */
static void check_inspect_mode(const struct mg_preprocess_opts *o, const struct parse_state *ps)
{
    static const int allowed[] = {
        O_INSPECT, O_DECODE, O_QUIET, O_TOKENIZER_TYPE, O_VOCAB_FILE, O_MERGE_FILE,
        O_TOKENIZER_MODEL, O_VOCAB_SIZE, O_TIKTOKEN_PATTERN, O_TIKTOKEN_NUM_SPECIAL,
        O_SPECIAL_TOKENS, O_HF_NO_SPECIAL, O_NULL_EOD};
    if (!o->inspect) mg_usage_error("--decode needs --inspect PREFIX");
    for (int id = 0; id < O_COUNT; id++) {
        int ok = flags[id].cls == CL_IGNORED;
        for (size_t k = 0; k < sizeof allowed / sizeof allowed[0]; k++) ok |= allowed[k] == id;
        if (ps->seen[id] && !ok)
            mg_usage_error("%s cannot be used with --inspect", flags[id].name);
    }
    if (o->decode_spec && !o->tok.type)
        mg_usage_error("--decode needs --tokenizer-type (and that tokenizer's flags)");
}

static void check_required(const struct mg_preprocess_opts *o)
{
    if (o->n_inputs == 0) mg_usage_error("the following arguments are required: --input");
    if (!o->output_prefix)
        mg_usage_error("the following arguments are required: --output-prefix");
    if (o->merge) {
        if (o->n_inputs != 1) mg_usage_error("--merge takes exactly one --input DIR");
        return;
    }
    if (!o->tok.type)
        mg_usage_error("the following arguments are required: --tokenizer-type");
}

static void own(struct mg_preprocess_opts *o, char *s)
{
    char **a = realloc(o->owned_, (o->n_owned_ + 1) * sizeof *a);
    if (!a || !s) mg_die(MG_EXIT_FAILURE, "out of memory");
    a[o->n_owned_++] = s;
    o->owned_ = a;
}

/* An --input that does not exist but holds * ? or [ is a glob pattern (Megatron's --input
 * with --partitions > 1 is one); its matches, sorted, replace it. No match: kept as is, so
 * that opening it reports the missing file. */
static void expand_globs(struct mg_preprocess_opts *o)
{
    const char **in = o->inputs;
    size_t n = o->n_inputs;
    o->inputs = NULL;
    o->n_inputs = 0;
    for (size_t i = 0; i < n; i++) {
        glob_t g;
        if (access(in[i], F_OK) == 0 || !strpbrk(in[i], "*?[") ||
            glob(in[i], 0, NULL, &g) != 0) {
            push(&o->inputs, &o->n_inputs, in[i]);
            continue;
        }
        for (size_t k = 0; k < g.gl_pathc; k++) {
            own(o, strdup(g.gl_pathv[k]));
            push(&o->inputs, &o->n_inputs, o->owned_[o->n_owned_ - 1]);
        }
        globfree(&g);
    }
    free(in);
}

static int64_t default_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : n;
}

void pp_parse_options(struct mg_preprocess_opts *o, int argc, char **argv)
{
    struct parse_state ps;
    memset(&ps, 0, sizeof ps);
    ps.first_unsupported = -1;
    set_defaults(o);
    mg_argv_flag table[O_COUNT];
    mg_argv_spec spec;
    argv_table(table, &spec);
    mg_argv a;
    mg_argv_init(&a, &spec, argc, argv);
    for (mg_argv_event ev; (ev = mg_argv_next(&a)) != MG_ARGV_END;) {
        if (ev != MG_ARGV_FLAG) scan_error(&a, ev);
        take(o, &ps, &a);
    }
    if (ps.seen[O_LIST_FLAGS]) {
        mg_cli_list_flags(&spec);
        exit(MG_EXIT_OK);
    }
    if (o->help || o->version) return;
    if (ps.first_unsupported >= 0) {
        fprintf(stderr, "%s: not supported yet: %s\n", mg_cli_prog(),
                flags[ps.first_unsupported].name);
        exit(MG_EXIT_USAGE);
    }
    if (o->merge) check_merge_mode(&ps);
    if (o->inspect || o->decode_spec) {
        check_inspect_mode(o, &ps);
        o->tok.special_tokens = o->special_tokens;
        o->tok.n_special_tokens = o->n_special_tokens;
        return;
    }
    check_required(o);
    finish_keys(o);
    if (!o->merge) expand_globs(o);
    o->tok.special_tokens = o->special_tokens;
    o->tok.n_special_tokens = o->n_special_tokens;
    if (o->workers == 0) o->workers = default_workers();
}

void pp_opts_free(struct mg_preprocess_opts *o)
{
    free(o->inputs);
    free(o->json_keys);
    free(o->special_tokens);
    for (size_t i = 0; i < o->n_owned_; i++) free(o->owned_[i]);
    free(o->owned_);
    memset(o, 0, sizeof *o);
}
