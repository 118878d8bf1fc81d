/* pipeline.c — reader thread, encoder threads and the in-order writer; see pipeline.h. */
#include "pipeline.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mg/cli.h"

/* Batch size limits: the text of all slots together stays near SLOT_TEXT_BUDGET (their ids
 * take 1-3 times as much: 8-byte ids, 0.2-0.4 tokens per byte; up to 8 times with a Unigram
 * .model on Chinese or Japanese text). Each worker adds two slots (the batch it encodes and
 * one of reorder slack), so BATCH_MAX_BYTES is most of what a worker adds besides its
 * encoder: 256 KiB keeps that within a few MiB (1 MiB cost 16 MiB per worker with a Unigram
 * .model) and is as fast for one worker (tests/interop/test_preprocess_memory.py, issue 17).
 * A line longer than the limit makes a batch of its own. */
#define SLOT_TEXT_BUDGET (16u << 20)
#define BATCH_MAX_BYTES (256u << 10)
#define BATCH_MIN_BYTES (16u << 10)
#define BATCH_MAX_LINES 16384
/* Skipped lines printed one by one; the rest are only counted. */
#define SKIP_WARNINGS PP_SKIP_MSGS

enum slot_state { SLOT_FREE, SLOT_READING, SLOT_FILLED, SLOT_ENCODING, SLOT_DONE };

typedef struct {
    const pp_pipeline_cfg *cfg;
    size_t n_slots;
    pp_batch **slots;
    enum slot_state *state;
    size_t batch_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv_free, cv_filled, cv_done;
    uint64_t n_batches; /* batches handed to the encoders so far */
    int reader_done;
    mg_status reader_st;
    char reader_msg[MG_ERROR_MAX];
    int stop; /* the writer gave up: every thread leaves */
} pipe_t;

/* ---- reader ---------------------------------------------------------------------------- */

/* Fills b with lines; *eof set at the end of input. */
static mg_status fill_batch(pipe_t *p, pp_batch *b, int *eof)
{
    mg_instream *in = p->cfg->in;
    uint64_t bytes0 = mg_instream_bytes(in);
    while (b->text_len < p->batch_bytes && b->n_lines < BATCH_MAX_LINES) {
        const char *line;
        size_t len;
        MG_FORWARD(mg_instream_next_line(in, &line, &len));
        if (!line) {
            *eof = 1;
            break;
        }
        uint64_t line_no = 0;
        const char *name = mg_instream_where(in, &line_no);
        MG_FORWARD(pp_batch_add_line(b, line, len, name, line_no));
    }
    b->bytes = mg_instream_bytes(in) - bytes0;
    b->pos = mg_instream_compressed_pos(in);
    return MG_OK;
}

/* Waits for a free slot; returns its index or -1 when the pipeline stops. */
static long take_free_slot(pipe_t *p)
{
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop) break;
        for (size_t i = 0; i < p->n_slots; i++) {
            if (p->state[i] != SLOT_FREE) continue;
            p->state[i] = SLOT_READING;
            pthread_mutex_unlock(&p->mu);
            return (long)i;
        }
        pthread_cond_wait(&p->cv_free, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return -1;
}

static void reader_finish(pipe_t *p, mg_status st)
{
    if (st != MG_OK) mg_error_copy(p->reader_msg);
    p->reader_st = st;
    p->reader_done = 1;
    pthread_cond_broadcast(&p->cv_filled);
    pthread_cond_broadcast(&p->cv_done);
}

static void *reader_main(void *arg)
{
    pipe_t *p = arg;
    uint64_t line = 0;
    for (;;) {
        long s = take_free_slot(p);
        if (s < 0) break;
        pp_batch *b = p->slots[s];
        pp_batch_reset(b);
        b->first_line = line;
        int eof = 0;
        mg_status st = fill_batch(p, b, &eof);
        line += b->n_lines;
        pthread_mutex_lock(&p->mu);
        p->state[s] = b->n_lines ? SLOT_FILLED : SLOT_FREE;
        if (b->n_lines) b->seq = p->n_batches++;
        pthread_cond_signal(&p->cv_filled);
        if (st != MG_OK || eof) reader_finish(p, st);
        pthread_mutex_unlock(&p->mu);
        if (st != MG_OK || eof) return NULL;
    }
    pthread_mutex_lock(&p->mu);
    reader_finish(p, MG_OK);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- encoders -------------------------------------------------------------------------- */

/* The filled slot with the lowest sequence number, or -1. Called with the lock held. */
static long oldest_filled(const pipe_t *p)
{
    long best = -1;
    for (size_t i = 0; i < p->n_slots; i++)
        if (p->state[i] == SLOT_FILLED && (best < 0 || p->slots[i]->seq < p->slots[best]->seq))
            best = (long)i;
    return best;
}

static long take_filled_slot(pipe_t *p)
{
    long s = -1;
    pthread_mutex_lock(&p->mu);
    while (!p->stop && (s = oldest_filled(p)) < 0 && !p->reader_done)
        pthread_cond_wait(&p->cv_filled, &p->mu);
    if (p->stop) s = -1;
    if (s >= 0) p->state[s] = SLOT_ENCODING;
    pthread_mutex_unlock(&p->mu);
    return s;
}

typedef struct {
    pipe_t *p;
    pp_encoder *enc;
} encoder_arg;

static void *encoder_main(void *arg)
{
    encoder_arg *ea = arg;
    pipe_t *p = ea->p;
    long s;
    while ((s = take_filled_slot(p)) >= 0) {
        pp_batch *b = p->slots[s];
        mg_status st = pp_encode_batch(ea->enc, b);
        if (st != MG_OK && !b->failed) { /* out of memory: reported like a bad line */
            b->failed = 1;
            b->fail_status = st;
            b->fail_line = 0;
            mg_error_copy(b->fail_msg);
        }
        pthread_mutex_lock(&p->mu);
        p->state[s] = SLOT_DONE;
        pthread_cond_broadcast(&p->cv_done);
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* ---- writer (calling thread) ----------------------------------------------------------- */

/* Waits for batch number seq; returns its slot, or -1 at the end of input. */
static long take_done_slot(pipe_t *p, uint64_t seq)
{
    pthread_mutex_lock(&p->mu);
    for (;;) {
        for (size_t i = 0; i < p->n_slots; i++) {
            if (p->state[i] == SLOT_DONE && p->slots[i]->seq == seq) {
                pthread_mutex_unlock(&p->mu);
                return (long)i;
            }
        }
        if (p->reader_done && seq >= p->n_batches) break;
        pthread_cond_wait(&p->cv_done, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return -1;
}

static void release_slot(pipe_t *p, long s)
{
    pthread_mutex_lock(&p->mu);
    p->state[s] = SLOT_FREE;
    pthread_cond_signal(&p->cv_free);
    pthread_mutex_unlock(&p->mu);
}

static void warn_skipped(const pp_batch *b, pp_pipeline_stats *stats)
{
    for (size_t i = 0; i < b->n_skip_msgs; i++) {
        uint64_t nth = stats->skipped + i + 1;
        if (nth <= SKIP_WARNINGS) mg_warn("skipping invalid line %s", b->skip_msg[i]);
        if (nth == SKIP_WARNINGS) mg_warn("further invalid lines are skipped silently");
    }
}

static mg_status prefix_where(const pp_batch *b, size_t i, mg_status st)
{
    char where[MG_ERROR_MAX];
    pp_batch_where(b, i, where, sizeof where);
    mg_error_prefix("%s", where);
    return st;
}

/* Writes every valid line of b (one document per key). */
static mg_status write_batch(pipe_t *p, const pp_batch *b, pp_pipeline_stats *stats)
{
    size_t nk = p->cfg->n_keys;
    if (b->failed) return mg_error_set(MG_ERR_FORMAT, "%s", b->fail_msg);
    warn_skipped(b, stats);
    size_t start = 0, seq = 0;
    for (size_t i = 0; i < b->n_lines; i++) {
        for (size_t k = 0; k < nk && !b->status[i]; k++) {
            size_t end = b->end[i * nk + k], seq_end = b->seq_end[i * nk + k];
            mg_status st = pp_outputs_add(p->cfg->out, k, b->first_line + i, b->ids.v + start,
                                          end - start, b->seq_len + seq, seq_end - seq);
            if (st != MG_OK) return prefix_where(b, i, st);
            stats->tokens += end - start;
            start = end;
            seq = seq_end;
        }
    }
    stats->lines += b->n_lines;
    stats->skipped += b->n_skipped;
    stats->documents += b->n_lines - b->n_skipped;
    stats->bytes += b->bytes;
    mg_progress_update(p->cfg->progress, stats->documents, stats->bytes, b->pos);
    return MG_OK;
}

static mg_status write_all(pipe_t *p, pp_pipeline_stats *stats)
{
    long s;
    for (uint64_t seq = 0; (s = take_done_slot(p, seq)) >= 0; seq++) {
        mg_status st = write_batch(p, p->slots[s], stats);
        release_slot(p, s);
        if (st != MG_OK) return st;
    }
    if (p->reader_st != MG_OK) mg_error_restore(p->reader_st, p->reader_msg);
    return p->reader_st;
}

/* ---- set-up ---------------------------------------------------------------------------- */

static mg_status pipe_init(pipe_t *p, const pp_pipeline_cfg *cfg)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_free, NULL);
    pthread_cond_init(&p->cv_filled, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    p->cfg = cfg;
    /* one batch per encoder, reorder slack (up to 8), one being read, one being written */
    p->n_slots = cfg->n_workers + (cfg->n_workers < 8 ? cfg->n_workers : 8) + 2;
    size_t per = SLOT_TEXT_BUDGET / p->n_slots;
    p->batch_bytes = per > BATCH_MAX_BYTES ? BATCH_MAX_BYTES
                   : per < BATCH_MIN_BYTES ? BATCH_MIN_BYTES : per;
    p->slots = mg_calloc(p->n_slots, sizeof *p->slots);
    p->state = mg_calloc(p->n_slots, sizeof *p->state);
    if (!p->slots || !p->state) return MG_ERR_NOMEM;
    for (size_t i = 0; i < p->n_slots; i++)
        if (!(p->slots[i] = pp_batch_create(cfg->n_keys))) return MG_ERR_NOMEM;
    return MG_OK;
}

static void pipe_destroy(pipe_t *p)
{
    for (size_t i = 0; p->slots && i < p->n_slots; i++) pp_batch_free(p->slots[i]);
    free(p->slots);
    free(p->state);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv_free);
    pthread_cond_destroy(&p->cv_filled);
    pthread_cond_destroy(&p->cv_done);
}

static void pipe_stop(pipe_t *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_free);
    pthread_cond_broadcast(&p->cv_filled);
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
}

/* Starts the reader and the encoders; *n_started counts the threads to join. */
static mg_status start_threads(pipe_t *p, pthread_t *th, encoder_arg *ea, size_t *n_started)
{
    *n_started = 0;
    if (pthread_create(&th[0], NULL, reader_main, p) != 0)
        return mg_error_set(MG_ERR_NOMEM, "cannot start the reader thread");
    *n_started = 1;
    for (size_t w = 0; w < p->cfg->n_workers; w++) {
        ea[w].p = p;
        ea[w].enc = p->cfg->encoders[w];
        if (pthread_create(&th[w + 1], NULL, encoder_main, &ea[w]) != 0)
            return mg_error_set(MG_ERR_NOMEM, "cannot start encoder thread %zu", w);
        (*n_started)++;
    }
    return MG_OK;
}

mg_status pp_pipeline_run(const pp_pipeline_cfg *cfg, pp_pipeline_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    pipe_t p;
    pthread_t *th = mg_calloc(cfg->n_workers + 1, sizeof *th);
    encoder_arg *ea = mg_calloc(cfg->n_workers, sizeof *ea);
    mg_status st = th && ea ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) st = pipe_init(&p, cfg);
    size_t n_started = 0;
    if (st == MG_OK) st = start_threads(&p, th, ea, &n_started);
    if (st == MG_OK) st = write_all(&p, stats);
    char msg[MG_ERROR_MAX];
    mg_error_copy(msg);
    if (th && ea) {
        pipe_stop(&p);
        for (size_t i = 0; i < n_started; i++) pthread_join(th[i], NULL);
        pipe_destroy(&p);
    }
    free(th);
    free(ea);
    if (st != MG_OK) mg_error_restore(st, msg);
    return st;
}
