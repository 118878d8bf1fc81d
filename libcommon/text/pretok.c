/* pretok.c — pre-tokenizer splitters: a Sequence of HF-style Split stages, each run by a
 * hand-written scanner (known family), by Oniguruma (any other regex) or by a literal
 * string search; see mg/pretok.h.
 *
 * Semantics follow HF tokenizers: matches are enumerated like the onig crate's find_iter
 * (an empty match right at the end of the previous match is skipped by advancing one
 * character), HF's Pattern::find_matches turns them into (segment, is_match) pairs covering
 * the piece, `invert` flips is_match, NormalizedString::split applies the behaviour, and
 * empty pieces are dropped after every stage.
 */
#include "mg/pretok.h"

#include <stdlib.h>
#include <string.h>

#include "pretok_internal.h"

/* ---- families ---- */

#define RX_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RX_R50K                                                                            \
    "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s"
#define RX_GPT2_BRACKETS                                                                   \
    "'s|'t|'re|'ve|'m|'ll|'d| ?[\\p{L}]+| ?[\\p{N}]+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RX_CL100K                                                                          \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "             \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_CL100K_06                                                                       \
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}| "                   \
    "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
#define RX_CL100K_TT                                                                       \
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| "                 \
    "?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s"
#define RX_QWEN2                                                                           \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                  \
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_O200K_WORDS(C)                                                                  \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" C \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" C
#define RX_O200K_CONTR "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
#define RX_O200K                                                                           \
    RX_O200K_WORDS(RX_O200K_CONTR)                                                         \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_MEGATRON_V1                                                                     \
    "[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|" \
    "\\s+(?!\\S)|\\s+"
#define RX_MEGATRON_V2                                                                     \
    RX_O200K_WORDS("") "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RX_DEEPSEEK_1 "\\p{N}{1,3}"
/* [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+ with the characters literally, as in the JSON */
#define RX_DEEPSEEK_2                                                                      \
    "[\xe4\xb8\x80-\xe9\xbe\xa5\xe3\x81\x80-\xe3\x82\x9f\xe3\x82\xa0-\xe3\x83\xbf]+"
#define RX_DEEPSEEK_3                                                                      \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|"                              \
    "[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"                  \
    "\\s*[\r\n]+|\\s+(?!\\S)|\\s+"

typedef struct {
    const char *name;
    const char *regex;
    mg_regex_dialect dialect;
    mg_scan_fn scan;
    mg_scan_cfg cfg;     /* contractions, digits_max, ws_end */
    mg_split_all_fn all; /* total scanners only */
} family_info;

static const family_info families[MG_PRETOK_FAMILY_COUNT_] = {
    [MG_PRETOK_GENERIC] = {"generic", NULL, MG_REGEX_HF, NULL, {0, 0, 0}, NULL},
    [MG_PRETOK_GPT2] = {"gpt2", RX_GPT2, MG_REGEX_HF, mg_scan_gpt2, {1, 0, 0}, mg_split_gpt2},
    [MG_PRETOK_CL100K_HF] = {"cl100k", RX_CL100K, MG_REGEX_HF, mg_scan_cl100k, {2, 3, 0},
                             mg_split_cl100k},
    [MG_PRETOK_CL100K_TIKTOKEN] = {"cl100k-tiktoken", RX_CL100K_TT, MG_REGEX_TIKTOKEN,
                                   mg_scan_cl100k, {2, 3, 1}, mg_split_cl100k},
    [MG_PRETOK_QWEN2] = {"qwen2", RX_QWEN2, MG_REGEX_HF, mg_scan_cl100k, {2, 1, 0},
                         mg_split_cl100k},
    [MG_PRETOK_O200K] = {"o200k", RX_O200K, MG_REGEX_HF, mg_scan_o200k, {2, 3, 0},
                         mg_split_o200k},
    [MG_PRETOK_MEGATRON_V1] = {"megatron-v1", RX_MEGATRON_V1, MG_REGEX_HF, mg_scan_cl100k,
                               {0, 1, 0}, mg_split_cl100k},
    [MG_PRETOK_MEGATRON_V2] = {"megatron-v2", RX_MEGATRON_V2, MG_REGEX_HF, mg_scan_o200k,
                               {0, 1, 0}, mg_split_o200k},
    [MG_PRETOK_DEEPSEEK_V3_1] = {"deepseek-v3-1", RX_DEEPSEEK_1, MG_REGEX_HF, mg_scan_deepseek1,
                                 {0, 0, 0}, NULL},
    [MG_PRETOK_DEEPSEEK_V3_2] = {"deepseek-v3-2", RX_DEEPSEEK_2, MG_REGEX_HF, mg_scan_deepseek2,
                                 {0, 0, 0}, NULL},
    [MG_PRETOK_DEEPSEEK_V3_3] = {"deepseek-v3-3", RX_DEEPSEEK_3, MG_REGEX_HF, mg_scan_deepseek3,
                                 {0, 0, 0}, NULL},
    [MG_PRETOK_CL100K_TIKTOKEN_ONIG] = {"cl100k-tiktoken-onig", RX_CL100K_TT, MG_REGEX_HF,
                                        mg_scan_cl100k, {2, 0, 1}, mg_split_cl100k},
};

/* Other texts with a family's meaning (both dialects unless noted); each is checked
 * against Oniguruma by tests/unit/test_pretok.c. */
#define BOTH 3
static const struct {
    const char *regex;
    int dialects; /* bit 1 << mg_regex_dialect */
    mg_pretok_family family;
} aliases[] = {
    {RX_GPT2, BOTH, MG_PRETOK_GPT2},
    {RX_R50K, BOTH, MG_PRETOK_GPT2},
    {RX_GPT2_BRACKETS, BOTH, MG_PRETOK_GPT2},
    {RX_CL100K, BOTH, MG_PRETOK_CL100K_HF},
    {RX_CL100K_06, BOTH, MG_PRETOK_CL100K_HF},
    {RX_CL100K_TT, 1 << MG_REGEX_TIKTOKEN, MG_PRETOK_CL100K_TIKTOKEN},
    {RX_CL100K_TT, 1 << MG_REGEX_HF, MG_PRETOK_CL100K_TIKTOKEN_ONIG},
    {RX_QWEN2, BOTH, MG_PRETOK_QWEN2},
    {RX_O200K, BOTH, MG_PRETOK_O200K},
    {RX_MEGATRON_V1, BOTH, MG_PRETOK_MEGATRON_V1},
    {RX_MEGATRON_V2, BOTH, MG_PRETOK_MEGATRON_V2},
    {RX_DEEPSEEK_1, BOTH, MG_PRETOK_DEEPSEEK_V3_1},
    {RX_DEEPSEEK_2, BOTH, MG_PRETOK_DEEPSEEK_V3_2},
    {RX_DEEPSEEK_3, BOTH, MG_PRETOK_DEEPSEEK_V3_3},
};

static int valid_family(mg_pretok_family f)
{
    return (int)f > MG_PRETOK_GENERIC && (int)f < MG_PRETOK_FAMILY_COUNT_;
}

const char *mg_pretok_family_regex(mg_pretok_family f)
{
    return valid_family(f) ? families[f].regex : NULL;
}

mg_regex_dialect mg_pretok_family_dialect(mg_pretok_family f)
{
    return valid_family(f) ? families[f].dialect : MG_REGEX_HF;
}

const char *mg_pretok_family_name(mg_pretok_family f)
{
    return valid_family(f) || f == MG_PRETOK_GENERIC ? families[f].name : "unknown";
}

mg_pretok_family mg_pretok_family_from_name(const char *name)
{
    for (int f = 1; f < MG_PRETOK_FAMILY_COUNT_; f++)
        if (strcmp(families[f].name, name) == 0) return (mg_pretok_family)f;
    return MG_PRETOK_GENERIC;
}

static mg_pretok_family lookup_family(const char *regex, mg_regex_dialect d)
{
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if ((aliases[i].dialects >> d & 1) && strcmp(aliases[i].regex, regex) == 0)
            return aliases[i].family;
    return MG_PRETOK_GENERIC;
}

/* ---- spans ---- */

mg_status mg_pk_spans_grow(mg_spans *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    mg_span *v = mg_realloc(s->v, cap * sizeof *v);
    if (!v) return MG_ERR_NOMEM;
    s->v = v;
    s->cap = cap;
    return MG_OK;
}

static inline mg_status push(mg_spans *s, size_t off, size_t len)
{
    if (s->n == s->cap) MG_FORWARD(mg_pk_spans_grow(s));
    s->v[s->n].off = (uint32_t)off;
    s->v[s->n].len = (uint32_t)len;
    s->n++;
    return MG_OK;
}

mg_status mg_spans_push(mg_spans *s, uint32_t off, uint32_t len) { return push(s, off, len); }

void mg_spans_free(mg_spans *s)
{
    if (!s) return;
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* ---- splitter objects ---- */

typedef enum { ST_SCAN, ST_ONIG, ST_LITERAL } stage_kind;

typedef struct {
    stage_kind kind;
    mg_pretok_family family;
    mg_regex_dialect dialect;
    char *text; /* regex or literal (owned) */
    size_t text_len;
    mg_onig *onig; /* ST_ONIG, or the oracle of an ST_SCAN stage under force_generic */
    mg_split_behavior behavior;
    int invert;
} stage;

struct mg_pretok {
    stage *st;
    size_t n, cap;
    int force_generic;
};

struct mg_pretok_scratch {
    void *region; /* OnigRegion of this thread */
    mg_spans a, b;
};

mg_status mg_pretok_create(mg_pretok **p)
{
    *p = mg_calloc(1, sizeof **p);
    return *p ? MG_OK : MG_ERR_NOMEM;
}

void mg_pretok_free(mg_pretok *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->st[i].text);
        mg_onig_free(p->st[i].onig);
    }
    free(p->st);
    free(p);
}

size_t mg_pretok_stages(const mg_pretok *p) { return p->n; }

mg_pretok_family mg_pretok_stage_family(const mg_pretok *p, size_t i)
{
    return i < p->n ? p->st[i].family : MG_PRETOK_GENERIC;
}

/* Appends a stage owning a copy of text; *out points at it. */
static mg_status add_stage(mg_pretok *p, const char *text, size_t len, stage **out)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4;
        stage *v = mg_realloc(p->st, cap * sizeof *v);
        if (!v) return MG_ERR_NOMEM;
        p->st = v;
        p->cap = cap;
    }
    char *copy = mg_malloc(len + 1);
    if (!copy) return MG_ERR_NOMEM;
    memcpy(copy, text, len);
    copy[len] = 0;
    stage *st = &p->st[p->n];
    memset(st, 0, sizeof *st);
    st->text = copy;
    st->text_len = len;
    *out = st;
    return MG_OK;
}

static mg_status check_behavior(mg_split_behavior b)
{
    MG_RETURN_IF((unsigned)b > MG_SPLIT_CONTIGUOUS, MG_ERR_ARG,
                 "invalid pre-tokenizer split behaviour %d", (int)b);
    return MG_OK;
}

mg_status mg_pretok_add_regex_dialect(mg_pretok *p, const char *regex, mg_regex_dialect d,
                                      mg_split_behavior b, int invert)
{
    MG_FORWARD(check_behavior(b));
    MG_RETURN_IF(d != MG_REGEX_HF && d != MG_REGEX_TIKTOKEN, MG_ERR_ARG,
                 "invalid regex dialect %d", (int)d);
    mg_pretok_family f = lookup_family(regex, d);
    mg_onig *re = NULL;
    if (f == MG_PRETOK_GENERIC) MG_FORWARD(mg_onig_compile(regex, strlen(regex), d, &re));
    stage *st;
    mg_status rc = add_stage(p, regex, strlen(regex), &st);
    if (rc != MG_OK) {
        mg_onig_free(re);
        return rc;
    }
    st->kind = f == MG_PRETOK_GENERIC ? ST_ONIG : ST_SCAN;
    st->family = f;
    st->dialect = d;
    st->onig = re;
    st->behavior = b;
    st->invert = invert != 0;
    p->n++;
    return MG_OK;
}

mg_status mg_pretok_add_regex(mg_pretok *p, const char *regex, mg_split_behavior b, int invert)
{
    return mg_pretok_add_regex_dialect(p, regex, MG_REGEX_HF, b, invert);
}

mg_status mg_pretok_add_literal(mg_pretok *p, const char *str, mg_split_behavior b, int invert)
{
    MG_FORWARD(check_behavior(b));
    stage *st;
    MG_FORWARD(add_stage(p, str, strlen(str), &st));
    st->kind = ST_LITERAL;
    st->family = MG_PRETOK_GENERIC;
    st->behavior = b;
    st->invert = invert != 0;
    p->n++;
    return MG_OK;
}

mg_status mg_pretok_add_family(mg_pretok *p, mg_pretok_family f)
{
    MG_RETURN_IF(!valid_family(f), MG_ERR_ARG, "invalid pre-tokenizer family %d", (int)f);
    stage *st;
    MG_FORWARD(add_stage(p, families[f].regex, strlen(families[f].regex), &st));
    st->kind = ST_SCAN;
    st->family = f;
    st->dialect = families[f].dialect;
    st->behavior = MG_SPLIT_ISOLATED;
    p->n++;
    return MG_OK;
}

void mg_pretok_force_generic(mg_pretok *p, int on)
{
    p->force_generic = on != 0;
    if (!on) return;
    for (size_t i = 0; i < p->n; i++) {
        stage *st = &p->st[i];
        if (st->kind == ST_SCAN && !st->onig)
            (void)mg_onig_compile(st->text, st->text_len, st->dialect, &st->onig);
    }
}

mg_status mg_pretok_scratch_create(mg_pretok_scratch **s)
{
    *s = mg_calloc(1, sizeof **s);
    return *s ? MG_OK : MG_ERR_NOMEM;
}

void mg_pretok_scratch_free(mg_pretok_scratch *s)
{
    if (!s) return;
    mg_onig_region_free(s->region);
    mg_spans_free(&s->a);
    mg_spans_free(&s->b);
    free(s);
}

/* ---- matching: the onig crate's find_iter over one piece ---- */

typedef struct {
    const stage *st;
    int generic; /* run the stage's Oniguruma regex */
    mg_pretok_scratch *sc;
    const uint8_t *t;
    size_t m;
    size_t last_end, last_match_end;
    int has_last;
} match_iter;

/* Raw leftmost match at or after pos: 1 found, 0 none, < 0 error. */
static int raw_find(match_iter *it, size_t pos, size_t *ms, size_t *me)
{
    const stage *st = it->st;
    if (it->generic || st->kind == ST_ONIG)
        return mg_onig_search(st->onig, &it->sc->region, it->t, it->m, pos, ms, me);
    if (pos >= it->m) return 0;
    if (st->kind == ST_SCAN) {
        const family_info *fi = &families[st->family];
        int found = fi->scan(&fi->cfg, it->t, it->m, pos, ms, me);
        MG_ASSERT(!found || (*ms >= pos && *me > *ms && *me <= it->m));
        return found;
    }
    if (st->text_len == 0) return 0; /* HF: an empty literal matches nothing */
    const uint8_t *hit = memmem(it->t + pos, it->m - pos, st->text, st->text_len);
    if (!hit) return 0;
    *ms = (size_t)(hit - it->t);
    *me = *ms + st->text_len;
    return 1;
}

static int next_match(match_iter *it, size_t *ms, size_t *me)
{
    for (;;) {
        if (it->last_end > it->m) return 0;
        int rc = raw_find(it, it->last_end, ms, me);
        if (rc <= 0) return rc;
        if (*ms == *me && it->has_last && it->last_match_end == *me) {
            it->last_end += it->last_end < it->m ? pk_len(it->t, it->m, it->last_end) : 1;
            continue;
        }
        it->last_end = it->last_match_end = *me;
        it->has_last = 1;
        return 1;
    }
}

/* ---- behaviours: NormalizedString::split over the (segment, is_match) stream ---- */

typedef struct {
    mg_split_behavior b;
    mg_spans *out;
    size_t base;
    int has_pend, pend_match, prev_match, carry;
    size_t ps, pe, cs;
} emitter;

static mg_status emit(emitter *e, size_t s, size_t t)
{
    return t > s ? push(e->out, e->base + s, t - s) : MG_OK;
}

static mg_status flush(emitter *e)
{
    if (!e->has_pend) return MG_OK;
    e->has_pend = 0;
    return emit(e, e->ps, e->pe);
}

static mg_status seg_merged_next(emitter *e, size_t s, size_t t, int is_match)
{
    /* The buffered segment joins this one iff it is a match and this one is not. */
    if (e->has_pend) {
        if (e->pend_match && !is_match) {
            if (!e->carry) e->carry = 1, e->cs = e->ps;
        } else {
            MG_FORWARD(emit(e, e->carry ? e->cs : e->ps, e->pe));
            e->carry = 0;
        }
    }
    e->has_pend = 1;
    e->ps = s;
    e->pe = t;
    e->pend_match = is_match;
    return MG_OK;
}

static mg_status segment(emitter *e, size_t s, size_t t, int is_match)
{
    int join;
    switch (e->b) {
    case MG_SPLIT_ISOLATED: return emit(e, s, t);
    case MG_SPLIT_REMOVED: return is_match ? MG_OK : emit(e, s, t);
    case MG_SPLIT_MERGED_WITH_NEXT: return seg_merged_next(e, s, t, is_match);
    case MG_SPLIT_CONTIGUOUS: join = is_match == e->prev_match; break;
    default: join = is_match && !e->prev_match; break; /* MERGED_WITH_PREVIOUS */
    }
    e->prev_match = is_match;
    if (join && e->has_pend) {
        e->pe = t;
        return MG_OK;
    }
    MG_FORWARD(flush(e));
    e->has_pend = 1;
    e->ps = s;
    e->pe = t;
    return MG_OK;
}

static mg_status finish(emitter *e)
{
    if (e->b == MG_SPLIT_MERGED_WITH_NEXT && e->has_pend) {
        e->has_pend = 0;
        return emit(e, e->carry ? e->cs : e->ps, e->pe);
    }
    return flush(e);
}

/* Splits one piece t[0, m) (m > 0, at offset base of the text) by one stage. */
static mg_status split_piece(const mg_pretok *p, const stage *st, mg_pretok_scratch *sc,
                             const uint8_t *t, size_t m, size_t base, mg_spans *out)
{
    match_iter it = {st, p->force_generic, sc, t, m, 0, 0, 0};
    emitter e = {st->behavior, out, base, 0, 0, 0, 0, 0, 0, 0};
    size_t prev = 0, ms, me;
    int rc, inv = st->invert;
    while ((rc = next_match(&it, &ms, &me)) > 0) {
        if (ms != prev) MG_FORWARD(segment(&e, prev, ms, inv));
        MG_FORWARD(segment(&e, ms, me, !inv));
        prev = me;
    }
    if (rc < 0) return (mg_status)rc;
    if (prev != m) MG_FORWARD(segment(&e, prev, m, inv));
    return finish(&e);
}

/* The common case: a scanner stage, Isolated, not inverted. */
static mg_status split_fast(const stage *st, const uint8_t *t, size_t m, size_t base,
                            mg_spans *out)
{
    const family_info *fi = &families[st->family];
    if (fi->all) return fi->all(&fi->cfg, t, m, base, out);
    size_t pos = 0, ms, me;
    while (pos < m && fi->scan(&fi->cfg, t, m, pos, &ms, &me)) {
        MG_ASSERT(ms >= pos && me > ms && me <= m);
        if (ms > pos) MG_FORWARD(push(out, base + pos, ms - pos));
        MG_FORWARD(push(out, base + ms, me - ms));
        pos = me;
    }
    return pos < m ? push(out, base + pos, m - pos) : MG_OK;
}

static mg_status run_stage(const mg_pretok *p, const stage *st, mg_pretok_scratch *sc,
                           const uint8_t *text, const mg_spans *in, mg_spans *out)
{
    if ((p->force_generic || st->kind == ST_ONIG) && !st->onig)
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: pre-tokenizer regex "
                                                "\"%.200s\" without Oniguruma",
                            st->text);
    int fast = st->kind == ST_SCAN && !p->force_generic && st->behavior == MG_SPLIT_ISOLATED &&
               !st->invert;
    for (size_t i = 0; i < in->n; i++) {
        const uint8_t *t = text + in->v[i].off;
        size_t m = in->v[i].len;
        if (fast)
            MG_FORWARD(split_fast(st, t, m, in->v[i].off, out));
        else
            MG_FORWARD(split_piece(p, st, sc, t, m, in->v[i].off, out));
    }
    return MG_OK;
}

mg_status mg_pretok_split(const mg_pretok *p, mg_pretok_scratch *s, const char *text,
                          size_t len, mg_spans *out)
{
    MG_RETURN_IF(len > UINT32_MAX, MG_ERR_LIMIT,
                 "text of %zu bytes is too long to pre-tokenize (limit 4 GiB)", len);
    if (len == 0) return MG_OK;
    if (p->n == 0) return push(out, 0, len);
    mg_span whole = {0, (uint32_t)len};
    mg_spans in = {&whole, 1, 1};
    mg_spans *bufs[2] = {&s->a, &s->b};
    for (size_t k = 0; k < p->n; k++) {
        mg_spans *dst = k + 1 == p->n ? out : bufs[k & 1];
        if (dst != out) dst->n = 0;
        MG_FORWARD(run_stage(p, &p->st[k], s, (const uint8_t *)text, &in, dst));
        in = *dst;
        if (dst == out) break;
    }
    return MG_OK;
}
