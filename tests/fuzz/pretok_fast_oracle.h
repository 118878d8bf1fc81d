/* pretok_fast_oracle.h — differential check of the scanners' window loops (mg_split_gpt2,
 * mg_split_cl100k, mg_split_o200k: ASCII pieces decided from pretok_ascii.h's byte-class
 * masks) against
 * their reference loops (mg_split_*_ref: the scanner's piece function at every position),
 * shared by tests/fuzz/fuzz_pretok_fast.c and tests/unit/test_pretok_fast.c.
 *
 * Any bytes (malformed UTF-8 included): both loops must give the same pieces. The configs
 * are those of the families in libcommon/text/pretok.c that use these scanners (GPT-2;
 * cl100k as HF, tiktoken, tiktoken under Oniguruma; Qwen2; Megatron v1; o200k; Megatron
 * v2), so Llama-3's, Qwen3's and r50k's regexes are covered.
 */
#ifndef MG_PRETOK_FAST_ORACLE_H
#define MG_PRETOK_FAST_ORACLE_H

#include <stdio.h>
#include <string.h>

#include "text/pretok_internal.h"

typedef struct {
    const char *name;
    mg_split_all_fn fast, ref;
    mg_scan_cfg cfg;
} pretok_fast_case;

static const pretok_fast_case pretok_fast_cases[] = {
    {"gpt2", mg_split_gpt2, mg_split_gpt2_ref, {1, 0, 0}},
    {"cl100k", mg_split_cl100k, mg_split_cl100k_ref, {2, 3, 0}},
    {"cl100k-tiktoken", mg_split_cl100k, mg_split_cl100k_ref, {2, 3, 1}},
    {"cl100k-tiktoken-onig", mg_split_cl100k, mg_split_cl100k_ref, {2, 0, 1}},
    {"qwen2", mg_split_cl100k, mg_split_cl100k_ref, {2, 1, 0}},
    {"megatron-v1", mg_split_cl100k, mg_split_cl100k_ref, {0, 1, 0}},
    {"o200k", mg_split_o200k, mg_split_o200k_ref, {2, 3, 0}},
    {"megatron-v2", mg_split_o200k, mg_split_o200k_ref, {0, 1, 0}},
};
#define PRETOK_FAST_NCASES (sizeof pretok_fast_cases / sizeof pretok_fast_cases[0])

/* NULL if both loops split s[0, n) alike (case c), else a description of the first
 * difference (static buffer). base is added to every offset, as the callers do. */
static const char *pretok_fast_oracle_check(const pretok_fast_case *c, const uint8_t *s,
                                            size_t n, size_t base)
{
    static char msg[256];
    mg_spans a = {0}, b = {0};
    const char *diff = NULL;
    if (c->fast(&c->cfg, s, n, base, &a) != MG_OK || c->ref(&c->cfg, s, n, base, &b) != MG_OK) {
        diff = "out of memory";
    } else {
        size_t i = 0;
        while (i < a.n && i < b.n && a.v[i].off == b.v[i].off && a.v[i].len == b.v[i].len) i++;
        if (i < a.n || i < b.n) {
            snprintf(msg, sizeof msg,
                     "%s: piece %zu of %zu/%zu: window loop [%u,+%u), reference [%u,+%u)",
                     c->name, i, a.n, b.n, i < a.n ? a.v[i].off : 0, i < a.n ? a.v[i].len : 0,
                     i < b.n ? b.v[i].off : 0, i < b.n ? b.v[i].len : 0);
            diff = msg;
        }
    }
    mg_spans_free(&a);
    mg_spans_free(&b);
    return diff;
}

#endif /* MG_PRETOK_FAST_ORACLE_H */
