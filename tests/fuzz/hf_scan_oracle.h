/* hf_scan_oracle.h — differential check of the tokenizer.json vocab/merges scanner
 * (libcommon/tok/hf_vocab_scan.c) against jansson, shared by tests/fuzz/fuzz_hf_vocab_scan.c
 * and tests/unit/test_hf_vocab_scan.c.
 *
 * A text is parsed as it is (mg_hf_desc_parse: the scanner takes model.vocab and
 * model.merges when they are in its subset) and again with its first "model" written
 * "mod\u0065l" (the scanner declines escaped keys, so jansson parses everything; the
 * decoded text is the same). When the scanner took something (else jansson alone parsed
 * the text as it is), both must give the same status and message (a jansson
 * line:column after the escaped key on its line is moved back by the 5 added bytes) and,
 * when they succeed, the same vocabulary and merges in the same order, the scanner's
 * strings NUL-terminated.
 */
#ifndef MG_HF_SCAN_ORACLE_H
#define MG_HF_SCAN_ORACLE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/hf_json.h"

typedef struct {
    mg_status st;
    char msg[1024];
    mg_hf_desc d;
} parsed;

static void parse(parsed *p, const char *text, size_t len)
{
    mg_hf_desc_init(&p->d);
    p->st = mg_hf_desc_parse(&p->d, text, len, "t.json");
    snprintf(p->msg, sizeof p->msg, "%s", p->st == MG_OK ? "" : mg_last_error());
}

/* a's strings (the scanner's) are also NUL-terminated when nul is set. */
static int same_strs(const mg_hf_str *a, const mg_hf_str *b, size_t n, int nul)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].len != b[i].len || memcmp(a[i].s, b[i].s, a[i].len) != 0 ||
            (nul && a[i].s[a[i].len]))
            return 0;
    return 1;
}

/* The text with its first "model" key escaped (same line count: the differential keeps
 * line numbers; columns on that line shift by 5). */
static char *escape_model_key(const char *text, size_t len, size_t *out_len)
{
    const char *k = memmem(text, len, "\"model\"", 7);
    if (!k) return NULL;
    char *o = malloc(len + 6);
    size_t at = (size_t)(k - text) + 4; /* after "mod */
    memcpy(o, text, at);
    memcpy(o + at, "\\u0065", 6);
    memcpy(o + at + 6, text + at + 1, len - at - 1);
    *out_len = len + 5;
    return o;
}

/* The message of the escaped text as the original's: a jansson "t.json:L:C:" after the
 * key on its line (key_line, key_col: 1-based line, characters before the key) moves back. */
static void unshift_message(char *msg, long key_line, long key_col)
{
    long l, c;
    int n = 0;
    if (sscanf(msg, "t.json:%ld:%ld:%n", &l, &c, &n) != 2 || n == 0 || l != key_line ||
        c <= key_col + 5)
        return;
    char head[64];
    int h = snprintf(head, sizeof head, "t.json:%ld:%ld:", l, c - 5);
    memmove(msg + h, msg + n, strlen(msg + n) + 1); /* the new head is shorter */
    memcpy(msg, head, (size_t)h);
}

static void key_position(const char *text, size_t len, long *line, long *col)
{
    const char *k = memmem(text, len, "\"model\"", 7);
    *line = 1, *col = 0;
    for (const char *p = text; p < k; p++) {
        if (*p == '\n') (*line)++, *col = 0;
        else if ((*p & 0xC0) != 0x80) (*col)++;
    }
}

/* Parses both ways and compares: NULL if they agree (*scanned: whether the scanner took
 * the vocabulary or merges), else what differs (static text). Texts without "model" or
 * where the escaped one is still scanned (the first "model" was not the key) are not
 * compared. */
static const char *hf_scan_oracle_check(const char *text, size_t len, int *scanned)
{
    static char diff[2400];
    size_t elen;
    long key_line, key_col;
    char *esc = escape_model_key(text, len, &elen);
    *scanned = 0;
    if (!esc) return NULL;
    key_position(text, len, &key_line, &key_col);
    parsed *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    parse(a, text, len);
    parse(b, esc, elen);
    free(esc);
    *scanned = a->d.scanned_vocab || a->d.scanned_merges;
    const char *res = NULL;
    unshift_message(b->msg, key_line, key_col);
    if (!*scanned || b->d.scanned_vocab || b->d.scanned_merges) {
        res = NULL; /* nothing scanned: jansson alone parsed the text as it is */
    } else if (a->st != b->st || strcmp(a->msg, b->msg) != 0) {
        snprintf(diff, sizeof diff, "status %d \"%s\" vs jansson's %d \"%s\"", (int)a->st,
                 a->msg, (int)b->st, b->msg);
        res = diff;
    } else if (a->st == MG_OK) {
        int ok = a->d.n_vocab == b->d.n_vocab && a->d.n_merges == b->d.n_merges &&
                 same_strs(a->d.vocab, b->d.vocab, a->d.n_vocab, a->d.scanned_vocab) &&
                 (a->d.n_vocab == 0 || memcmp(a->d.vocab_id, b->d.vocab_id,
                                              a->d.n_vocab * sizeof *a->d.vocab_id) == 0) &&
                 same_strs(a->d.merge_l, b->d.merge_l, a->d.n_merges, a->d.scanned_merges) &&
                 same_strs(a->d.merge_r, b->d.merge_r, a->d.n_merges, a->d.scanned_merges) &&
                 a->d.n_added == b->d.n_added && a->d.n_pre == b->d.n_pre &&
                 a->d.byte_fallback == b->d.byte_fallback && a->d.n_prefix == b->d.n_prefix;
        snprintf(diff, sizeof diff, "descriptions differ: vocab %zu/%zu, merges %zu/%zu",
                 a->d.n_vocab, b->d.n_vocab, a->d.n_merges, b->d.n_merges);
        res = ok ? NULL : diff;
    }
    mg_hf_desc_free(&a->d);
    mg_hf_desc_free(&b->d);
    free(a);
    free(b);
    return res;
}

#endif
