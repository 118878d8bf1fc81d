/* encode.c — JSON line -> ids for every key, into the batch; see encode.h. */
#include "encode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/jsonl.h"

struct pp_encoder {
    mg_encoder *enc;
    mg_jsonl *json;
    const char *const *keys;
    size_t n_keys;
    mg_jsonl_value *vals;
    int append_eod;
    int64_t eod;
    int skip_invalid;
    mg_punkt_splitter *splitter; /* NULL: no sentence splitting */
};

mg_status pp_encoder_create(pp_encoder **out, const mg_tokenizer *tk, const char *const *keys,
                            size_t n_keys, int append_eod, int skip_invalid)
{
    pp_encoder *e = mg_calloc(1, sizeof *e);
    *out = NULL;
    if (!e) return MG_ERR_NOMEM;
    e->keys = keys;
    e->n_keys = n_keys;
    e->append_eod = append_eod;
    e->eod = mg_tokenizer_eod(tk);
    e->skip_invalid = skip_invalid;
    mg_status st = MG_ERR_NOMEM;
    e->vals = mg_calloc(n_keys, sizeof *e->vals);
    if (e->vals) st = mg_encoder_create(&e->enc, tk);
    if (st == MG_OK) st = mg_jsonl_create(&e->json);
    if (st != MG_OK) {
        pp_encoder_free(e);
        return st;
    }
    *out = e;
    return MG_OK;
}

void pp_encoder_free(pp_encoder *e)
{
    if (!e) return;
    mg_encoder_free(e->enc);
    mg_jsonl_free(e->json);
    mg_punkt_splitter_free(e->splitter);
    free(e->vals);
    free(e);
}

void pp_encoder_set_splitter(pp_encoder *e, mg_punkt_splitter *s)
{
    mg_punkt_splitter_free(e->splitter);
    e->splitter = s;
}

/* Statuses that stop the whole run instead of marking the line invalid. */
static int is_fatal(mg_status st)
{
    return st == MG_ERR_NOMEM || st == MG_ERR_IO || st == MG_ERR_NOSPACE;
}

/* Appends one sequence for the sentence s[0, len) if it has tokens. valid: s is a whole
 * JSON string without lone surrogates (strict UTF-8: mg_jsonl checked it). */
static mg_status encode_sentence(pp_encoder *e, pp_batch *b, const char *s, size_t len,
                                 int valid)
{
    size_t from = b->ids.n;
    MG_FORWARD(valid ? mg_encode_valid(e->enc, s, len, &b->ids)
                     : mg_encode(e->enc, s, len, &b->ids));
    if (b->ids.n > from) MG_FORWARD(pp_batch_push_seq(b, b->ids.n - from));
    return MG_OK;
}

/* Encodes the sentences Punkt finds in s[0, len) (Encoder.split, then Encoder.encode). */
static mg_status encode_split(pp_encoder *e, pp_batch *b, const char *s, size_t len)
{
    const mg_punkt_span *sp;
    size_t n;
    MG_FORWARD(mg_punkt_split(e->splitter, s, len, MG_PUNKT_MEGATRON_CHUNK, &sp, &n));
    for (size_t i = 0; i < n; i++)
        MG_FORWARD(encode_sentence(e, b, s + sp[i].start, sp[i].end - sp[i].start, 0));
    return MG_OK;
}

/* Appends the document of value v: one sequence per sentence with tokens, eod at the end of
 * the last one (Encoder.encode: doc_ids.append(eod); lens[-1] += 1). *item is the sentence
 * being encoded (for messages). */
static mg_status encode_value(pp_encoder *e, pp_batch *b, const mg_jsonl_value *v, size_t *item)
{
    size_t start = b->ids.n;
    for (*item = 0; *item < v->n_items; (*item)++) {
        const mg_jsonl_item *it = &v->items[*item];
        MG_FORWARD(e->splitter ? encode_split(e, b, it->str, it->len)
                               : encode_sentence(e, b, it->str, it->len, !it->lone_surrogates));
    }
    if (!e->append_eod || b->ids.n == start) return MG_OK;
    MG_FORWARD(mg_ids_push(&b->ids, e->eod));
    size_t last = (size_t)b->seq_len[b->n_seq - 1] + 1;
    b->n_seq--; /* pushed again with the eod counted */
    return pp_batch_push_seq(b, last);
}

/* Encodes the values of line i; on a line error writes the reason (no location). */
static mg_status encode_line(pp_encoder *e, pp_batch *b, size_t i, char *reason, size_t rsize)
{
    const char *line = b->text + b->off[i];
    size_t len = b->len[i];
    if (len > 0 && line[len - 1] == '\r') len--;
    if (len == 0) {
        snprintf(reason, rsize, "empty line");
        return MG_ERR_FORMAT;
    }
    mg_status st = mg_jsonl_extract(e->json, line, len, e->keys, e->n_keys, e->vals);
    if (st != MG_OK) {
        snprintf(reason, rsize, "%s", mg_last_error());
        return st;
    }
    for (size_t k = 0; k < e->n_keys; k++) {
        size_t item = 0;
        st = encode_value(e, b, &e->vals[k], &item);
        if (st != MG_OK && e->vals[k].is_list && item < e->vals[k].n_items)
            snprintf(reason, rsize, "key \"%s\" item %zu: %s", e->keys[k], item + 1,
                     mg_last_error());
        else if (st != MG_OK)
            snprintf(reason, rsize, "key \"%s\": %s", e->keys[k], mg_last_error());
        if (st != MG_OK) return st;
        b->end[i * e->n_keys + k] = b->ids.n;
        b->seq_end[i * e->n_keys + k] = b->n_seq;
    }
    return MG_OK;
}

/* dst = "where: reason", truncated to MG_ERROR_MAX bytes. */
static void join_msg(char *dst, const char *where, const char *reason)
{
    size_t n = 0;
    const char *parts[3] = {where, ": ", reason};
    for (int i = 0; i < 3; i++) {
        size_t m = strnlen(parts[i], MG_ERROR_MAX - 1 - n);
        memcpy(dst + n, parts[i], m);
        n += m;
    }
    dst[n] = 0;
}

/* Records invalid line i: skipped (with --skip-invalid) or the batch's failure. The ids and
 * sequence lengths go back to ids_at / seq_at. */
static void mark_invalid(pp_encoder *e, pp_batch *b, size_t i, mg_status st, const char *reason,
                         size_t ids_at, size_t seq_at)
{
    char where[MG_ERROR_MAX];
    pp_batch_where(b, i, where, sizeof where);
    b->ids.n = ids_at;
    b->n_seq = seq_at;
    for (size_t k = 0; k < e->n_keys; k++) {
        b->end[i * e->n_keys + k] = ids_at;
        b->seq_end[i * e->n_keys + k] = seq_at;
    }
    if (!e->skip_invalid) {
        b->failed = 1;
        b->fail_status = st;
        b->fail_line = i;
        join_msg(b->fail_msg, where, reason);
        return;
    }
    b->status[i] = 1;
    b->n_skipped++;
    if (b->n_skip_msgs < PP_SKIP_MSGS)
        join_msg(b->skip_msg[b->n_skip_msgs++], where, reason);
}

mg_status pp_encode_batch(pp_encoder *e, pp_batch *b)
{
    MG_FORWARD(pp_batch_prepare_results(b));
    char reason[MG_ERROR_MAX];
    for (size_t i = 0; i < b->n_lines; i++) {
        size_t ids_at = b->ids.n, seq_at = b->n_seq;
        mg_status st = encode_line(e, b, i, reason, sizeof reason);
        if (st == MG_OK) continue;
        if (is_fatal(st)) return mg_error_set(st, "%s", reason);
        mark_invalid(e, b, i, st, reason, ids_at, seq_at);
        if (b->failed) break;
    }
    return MG_OK;
}
