/* pretok_onig.c — the generic pre-tokenizer engine on Oniguruma (MG_HAVE_ONIG), used for
 * regexes without a hand-written scanner and as the differential-test oracle.
 *
 * MG_REGEX_HF compiles exactly as HF tokenizers does (onig crate Regex::new: UTF-8,
 * ONIG_OPTION_NONE, OnigDefaultSyntax = ONIG_SYNTAX_ONIGURUMA). MG_REGEX_TIKTOKEN
 * approximates tiktoken's fancy-regex: Perl syntax (`{n,m}+` possessive) and every `$`
 * outside a character class rewritten to `\z` (end of text only). Compiled regexes are
 * read-only and shared by threads; each thread searches with its own OnigRegion.
 * onig_initialize and onig_new run under one process-wide mutex (as the onig crate does);
 * that mutex is the module's only global state. Without Oniguruma every entry point
 * returns MG_ERR_UNSUPPORTED.
 */
#include "pretok_internal.h"

#include <stdlib.h>
#include <string.h>

#if MG_HAVE_ONIG
#include <oniguruma.h>
#include <pthread.h>

struct mg_onig {
    regex_t *re;
};

static pthread_mutex_t onig_lock = PTHREAD_MUTEX_INITIALIZER;
static int onig_ready; /* guarded by onig_lock */

/* `$` outside classes -> `\z`; returns a malloc'd NUL-terminated copy (length in *out_len). */
static char *tiktoken_rewrite(const char *p, size_t len, size_t *out_len)
{
    char *o = mg_malloc(2 * len + 1);
    if (!o) return NULL;
    size_t k = 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < len) {
            o[k++] = c;
            o[k++] = p[++i];
            continue;
        }
        if (c == '[') {
            o[k++] = c;
            depth++;
            if (i + 1 < len && p[i + 1] == '^') o[k++] = p[++i];
            if (i + 1 < len && p[i + 1] == ']') o[k++] = p[++i]; /* literal ] first */
            continue;
        }
        if (c == ']' && depth > 0) depth--;
        if (c == '$' && depth == 0) {
            o[k++] = '\\';
            o[k++] = 'z';
            continue;
        }
        o[k++] = c;
    }
    o[k] = 0;
    *out_len = k;
    return o;
}

static mg_status onig_new_locked(regex_t **re, const UChar *pat, size_t len, OnigSyntaxType *syn,
                                 OnigErrorInfo *ei, int *code)
{
    pthread_mutex_lock(&onig_lock);
    if (!onig_ready) {
        OnigEncoding use[1] = {ONIG_ENCODING_UTF8};
        onig_initialize(use, 1);
        onig_ready = 1;
    }
    *code = onig_new(re, pat, pat + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, syn, ei);
    pthread_mutex_unlock(&onig_lock);
    return *code == ONIG_NORMAL ? MG_OK : MG_ERR_FORMAT;
}

mg_status mg_onig_compile(const char *pattern, size_t len, mg_regex_dialect d, mg_onig **out)
{
    char *own = NULL;
    const char *pat = pattern;
    OnigSyntaxType *syn = OnigDefaultSyntax;
    if (d == MG_REGEX_TIKTOKEN) {
        own = tiktoken_rewrite(pattern, len, &len);
        if (!own) return MG_ERR_NOMEM;
        pat = own;
        syn = ONIG_SYNTAX_PERL;
    }
    mg_onig *o = mg_calloc(1, sizeof *o);
    if (!o) {
        free(own);
        return MG_ERR_NOMEM;
    }
    OnigErrorInfo ei;
    int code;
    mg_status st = onig_new_locked(&o->re, (const UChar *)pat, len, syn, &ei, &code);
    free(own);
    if (st != MG_OK) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, code, &ei);
        free(o);
        return mg_error_set(st, "invalid pre-tokenizer regex \"%.200s\": %s", pattern,
                            (const char *)msg);
    }
    *out = o;
    return MG_OK;
}

void mg_onig_free(mg_onig *re)
{
    if (!re) return;
    onig_free(re->re);
    free(re);
}

void mg_onig_region_free(void *region)
{
    if (region) onig_region_free(region, 1);
}

int mg_onig_search(const mg_onig *re, void **region, const uint8_t *s, size_t n, size_t pos,
                   size_t *ms, size_t *me)
{
    if (!*region && !(*region = onig_region_new())) return MG_ERR_NOMEM;
    OnigRegion *r = *region;
    int rc = onig_search(re->re, s, s + n, s + pos, s + n, r, ONIG_OPTION_NONE);
    if (rc == ONIG_MISMATCH) return 0;
    if (rc < 0) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, rc);
        return mg_error_set(MG_ERR_LIMIT, "pre-tokenizer regex search failed at byte %zu: %s",
                            pos, (const char *)msg);
    }
    *ms = (size_t)r->beg[0];
    *me = (size_t)r->end[0];
    return 1;
}

#else /* !MG_HAVE_ONIG */

struct mg_onig {
    int unused;
};

mg_status mg_onig_compile(const char *pattern, size_t len, mg_regex_dialect d, mg_onig **out)
{
    (void)len, (void)d, (void)out;
    return mg_error_set(MG_ERR_UNSUPPORTED,
                        "not supported yet: pre-tokenizer regex \"%.200s\" (not built with "
                        "Oniguruma)",
                        pattern);
}

void mg_onig_free(mg_onig *re) { (void)re; }

void mg_onig_region_free(void *region) { (void)region; }

int mg_onig_search(const mg_onig *re, void **region, const uint8_t *s, size_t n, size_t pos,
                   size_t *ms, size_t *me)
{
    (void)re, (void)region, (void)s, (void)n, (void)pos, (void)ms, (void)me;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: regex search (not built with "
                                            "Oniguruma)");
}

#endif
