/* run.c — the preprocess mode (tools/preprocess_data.py): builds the tokenizer, the input
 * stream, the outputs and one encoder per worker, runs the pipeline, and reports. On any
 * failure the outputs are freed without finish (no file is left) before the message is
 * printed; exit status 1 for bad input or I/O, 2 for usage errors.
 *
 * --split-sentences: the Punkt model is loaded once and shared (read-only) by one splitter
 * per encoder; the datasets are PREFIX_{key}_sentence.bin/.idx. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/cli.h"
#include "mg/file.h"
#include "mg/idxds.h"
#include "mg/instream.h"
#include "mg/progress.h"
#include "mg/punkt.h"
#include "mg/tokenizer.h"
#include "pipeline.h"
#include "preprocess.h"

typedef struct {
    mg_tokenizer *tk;
    mg_instream *in;
    pp_outputs *out;
    pp_encoder **encoders;
    size_t n_workers;
    mg_progress *progress;
    mg_punkt *punkt;  /* --split-sentences */
} run_ctx;

static void run_free(run_ctx *r)
{
    for (size_t w = 0; r->encoders && w < r->n_workers; w++) pp_encoder_free(r->encoders[w]);
    free(r->encoders);
    pp_outputs_free(r->out);
    mg_instream_free(r->in);
    mg_progress_free(r->progress);
    mg_tokenizer_free(r->tk);
    mg_punkt_free(r->punkt);
}

/* Frees everything (removing temporary outputs), then reports st and exits. */
__attribute__((noreturn)) static void fail(run_ctx *r, mg_status st)
{
    char msg[MG_ERROR_MAX];
    mg_error_copy(msg);
    run_free(r);
    mg_error_restore(st, msg);
    mg_die_status(st);
}

static mg_status make_encoders(run_ctx *r, const struct mg_preprocess_opts *o)
{
    r->n_workers = (size_t)o->workers;
    r->encoders = mg_calloc(r->n_workers, sizeof *r->encoders);
    if (!r->encoders) return MG_ERR_NOMEM;
    for (size_t w = 0; w < r->n_workers; w++) {
        MG_FORWARD(pp_encoder_create(&r->encoders[w], r->tk, o->json_keys, o->n_json_keys,
                                     o->append_eod, o->skip_invalid));
        if (!r->punkt) continue;
        mg_punkt_splitter *s;
        MG_FORWARD(mg_punkt_splitter_create(&s, r->punkt, o->keep_newlines));
        pp_encoder_set_splitter(r->encoders[w], s);
    }
    return MG_OK;
}

/* --split-sentences: loads the Punkt model. */
static mg_status setup_sentences(run_ctx *r, const struct mg_preprocess_opts *o)
{
    if (!o->split_sentences) return MG_OK;
    return mg_punkt_load_lang(&r->punkt, o->punkt_dir, o->lang);
}

/* The directory of --output-prefix must exist (checked before any work is done). */
static void check_output_dir(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    if (!slash) return;
    size_t n = slash == prefix ? 1 : (size_t)(slash - prefix);
    char *dir = mg_malloc(n + 1);
    if (!dir) mg_die_status(MG_ERR_NOMEM);
    memcpy(dir, prefix, n);
    dir[n] = 0;
    int ok = mg_is_dir(dir);
    if (!ok) mg_die(MG_EXIT_FAILURE, "--output-prefix %s: directory %s does not exist", prefix, dir);
    free(dir);
}

/* The files of input directories that are not corpus files: named once, on stderr. */
static void report_skipped(const mg_instream *in)
{
    const char *const *paths;
    size_t n = mg_instream_skipped(in, &paths), shown = n < 10 ? n : 10;
    if (!n) return;
    mg_warn("skipped %zu file%s in the input directories that %s not corpus files (it takes "
            MG_INSTREAM_CORPUS_RULE "):", n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
    for (size_t i = 0; i < shown; i++) fprintf(stderr, "  %s\n", paths[i]);
    if (n > shown) fprintf(stderr, "  ... and %zu more\n", n - shown);
}

static void setup(run_ctx *r, const struct mg_preprocess_opts *o)
{
    check_output_dir(o->output_prefix);
    mg_status st = mg_tokenizer_create(&r->tk, &o->tok);
    if (st == MG_OK) st = setup_sentences(r, o);
    if (st != MG_OK) fail(r, st);
    if (o->append_eod && mg_tokenizer_eod(r->tk) < 0)
        fail(r, mg_error_set(MG_ERR_ARG, "--append-eod: tokenizer %s has no end-of-document "
                                         "token", o->tok.type));
    st = mg_instream_open(&r->in, o->inputs, o->n_inputs, 0);
    if (st != MG_OK) fail(r, st);
    report_skipped(r->in);
    /* --keep-sequential-samples keeps the input order: the merged partitions equal one. */
    size_t parts = o->keep_sequential_samples ? 1 : (size_t)o->partitions;
    mg_dtype dt = mg_dtype_for_vocab(mg_tokenizer_vocab_size(r->tk));
    const char *level = o->split_sentences ? "sentence" : "document";
    st = pp_outputs_create(&r->out, o->output_prefix, o->json_keys, o->n_json_keys, level, parts,
                           dt, !o->no_direct_io);
    if (st == MG_OK) st = make_encoders(r, o);
    if (st == MG_OK && !o->quiet)
        st = mg_progress_create(&r->progress, "docs", (uint64_t)o->log_interval, 1.0,
                                mg_instream_total_hint(r->in));
    if (st != MG_OK) fail(r, st);
}

static void report(const run_ctx *r, const struct mg_preprocess_opts *o,
                   const pp_pipeline_stats *s)
{
    if (s->skipped) mg_warn("skipped %llu invalid lines", (unsigned long long)s->skipped);
    if (o->quiet) return;
    double dt = mg_progress_elapsed(r->progress);
    double mb = (double)s->bytes / (1024.0 * 1024.0);
    mg_note("done: %llu docs, %llu tokens, %.1f MB in %.2f s (%.1f MB/s), %llu skipped",
            (unsigned long long)s->documents, (unsigned long long)s->tokens, mb, dt,
            dt > 0 ? mb / dt : 0.0, (unsigned long long)s->skipped);
    for (size_t k = 0; k < o->n_json_keys; k++) {
        const char *p = pp_outputs_prefix(r->out, k);
        mg_note("wrote %s.bin, %s.idx", p, p);
    }
}

int pp_run_preprocess(const struct mg_preprocess_opts *o)
{
    run_ctx r = {0};
    setup(&r, o);
    if (!o->quiet)
        mg_note("%lld workers; tokenizer: %s", (long long)o->workers,
                mg_tokenizer_describe(r.tk));
    if (!o->quiet && r.punkt)
        mg_note("sentence splitting: NLTK Punkt model %s%s", mg_punkt_dir(r.punkt),
                o->keep_newlines ? " (--keep-newlines)" : "");
    pp_pipeline_cfg cfg = {r.in, r.encoders, r.n_workers, o->n_json_keys, r.out, r.progress};
    pp_pipeline_stats stats;
    mg_status st = pp_pipeline_run(&cfg, &stats);
    if (st == MG_OK) st = pp_outputs_finish(r.out);
    if (st != MG_OK) fail(&r, st == MG_ERR_ARG || st == MG_ERR_UNSUPPORTED ? MG_ERR_FORMAT : st);
    report(&r, o, &stats);
    run_free(&r);
    return MG_EXIT_OK;
}
