/* tok_tiktoken.c — TikTokenizer: Megatron's tiktoken wrapper, and (mgtools extension) the
 * OpenAI encodings themselves.
 *
 * Megatron layout (--tiktoken-pattern v1|v2, default v2; oracle: megatron-core
 * megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py):
 *   ids 0 .. num_special-1 are the special tokens (the 7 named ones, or the
 *   --tokenizer-special-tokens list, which must contain them, then "<SPECIAL_i>" fillers);
 *   BPE rank r has id r + num_special; only ranks below vocab_size - num_special are used
 *   (vocab_size = --vocab-size, default 131072, and the file must have that many);
 *   eod = id of "</s>" (2). Encoding is tiktoken's encode(text, allowed_special="all"):
 *   special-token strings in the text become their ids.
 * OpenAI layout (--tiktoken-pattern r50k_base|p50k_base|p50k_edit|cl100k_base|o200k_base):
 *   ids = ranks of the .tiktoken file, that encoding's special tokens at OpenAI's ids,
 *   tiktoken 0.14's regex for that encoding, vocab_size = largest id + 1, eod =
 *   <|endoftext|>. Encoding is also encode(text, allowed_special="all") (special strings in
 *   the text are matched), as in Megatron's layout; --tokenizer-special-tokens is an error,
 *   --tiktoken-num-special-tokens is not used, --vocab-size must be absent or equal.
 * Both: text is split at special-token matches (leftmost, longest), each segment is split
 * by the pattern (a segment end acts as end of text, as tiktoken runs the regex on the
 * segment) and each piece is BPE-encoded with tiktoken's rules (whole-piece shortcut,
 * rank of the concatenation). Lone surrogates become U+FFFD as in tiktoken (tokenizer.c).
 */
#include "tok/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/pretok.h"
#include "tok/added_tokens.h"
#include "tok/bpe.h"
#include "tok/decode_util.h"
#include "tok/tiktoken_vocab.h"

#define MEGATRON_DEFAULT_VOCAB 131072

typedef struct {
    mg_bpe *bpe;
    mg_pretok *pretok;
    mg_added_tokens *specials;
    /* decoding: the special tokens' strings (special_str[i] is id special_id[i]) */
    char **special_str;
    int64_t *special_id;
    size_t n_special;
} tt_impl;

typedef struct {
    const tt_impl *im;
    mg_bpe_cache *cache;
    mg_pretok_scratch *scratch;
    mg_spans spans;
} tt_state;

/* ---- the OpenAI encodings (tiktoken 0.14 tiktoken_ext/openai_public.py) ---- */

typedef struct {
    const char *str;
    int64_t id;
} named_id;

static const char r50k_regex[] =
    "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ?\\p{N}++| ?[^\\s\\p{L}\\p{N}]++|\\s++$|\\s+(?!\\S)|\\s";
static const char cl100k_regex[] =
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|\\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++"
    "[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s";
static const char o200k_regex[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*"
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

#define EOT "<|endoftext|>"
static const named_id r50k_sp[] = {{EOT, 50256}};
static const named_id p50k_edit_sp[] = {
    {EOT, 50256}, {"<|fim_prefix|>", 50281}, {"<|fim_middle|>", 50282}, {"<|fim_suffix|>", 50283}};
static const named_id cl100k_sp[] = {{EOT, 100257},
                                     {"<|fim_prefix|>", 100258},
                                     {"<|fim_middle|>", 100259},
                                     {"<|fim_suffix|>", 100260},
                                     {"<|endofprompt|>", 100276}};
static const named_id o200k_sp[] = {{EOT, 199999}, {"<|endofprompt|>", 200018}};

typedef struct {
    const char *name;
    const char *regex;
    const named_id *specials;
    size_t n_specials;
} openai_encoding;

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
static const openai_encoding openai_encodings[] = {
    {"r50k_base", r50k_regex, r50k_sp, N_OF(r50k_sp)},
    {"p50k_base", r50k_regex, r50k_sp, N_OF(r50k_sp)},
    {"p50k_edit", r50k_regex, p50k_edit_sp, N_OF(p50k_edit_sp)},
    {"cl100k_base", cl100k_regex, cl100k_sp, N_OF(cl100k_sp)},
    {"o200k_base", o200k_regex, o200k_sp, N_OF(o200k_sp)},
};

/* ---- Megatron's special tokens ---- */

static const char *const megatron_named[] = {"<unk>", "<s>", "</s>", "<mask>",
                                             "<pad>", "<cls>", "<sep>"};

/* ---- encoding ---- */

static mg_status tt_encoder_create(const mg_tokenizer *tk, void **out)
{
    *out = NULL;
    tt_state *s = mg_calloc(1, sizeof *s);
    if (!s) return MG_ERR_NOMEM;
    s->im = tk->impl;
    mg_status st = mg_bpe_cache_create(&s->cache, s->im->bpe);
    if (st == MG_OK) st = mg_pretok_scratch_create(&s->scratch);
    if (st != MG_OK) {
        mg_bpe_cache_free(s->cache);
        free(s);
        return st;
    }
    *out = s;
    return MG_OK;
}

static void tt_encoder_free(void *state)
{
    tt_state *s = state;
    if (!s) return;
    mg_bpe_cache_free(s->cache);
    mg_pretok_scratch_free(s->scratch);
    mg_spans_free(&s->spans);
    free(s);
}

/* tiktoken's encode_ordinary on one segment (no special tokens inside). */
static mg_status encode_segment(tt_state *s, const char *text, size_t len, mg_ids *out)
{
    if (len == 0) return MG_OK;
    MG_RETURN_IF(len > UINT32_MAX, MG_ERR_LIMIT, "text of %zu bytes is too long to tokenize",
                 len);
    s->spans.n = 0;
    MG_FORWARD(mg_pretok_split(s->im->pretok, s->scratch, text, len, &s->spans));
    return mg_bpe_encode_spans(s->im->bpe, s->cache, text, s->spans.v, s->spans.n, out);
}

static mg_status tt_encode(const mg_tokenizer *tk, void *state, const char *text, size_t len,
                           mg_ids *out)
{
    (void)tk;
    tt_state *s = state;
    size_t pos = 0;
    for (;;) {
        size_t ms = len, me = len;
        int64_t id = -1;
        int found = mg_added_tokens_find(s->im->specials, text, len, pos, &ms, &me, &id);
        MG_FORWARD(encode_segment(s, text + pos, (found ? ms : len) - pos, out));
        if (!found) return MG_OK;
        MG_FORWARD(mg_ids_push(out, id));
        pos = me;
    }
}

static void tt_free(void *impl)
{
    tt_impl *im = impl;
    if (!im) return;
    mg_bpe_free(im->bpe);
    mg_pretok_free(im->pretok);
    mg_added_tokens_free(im->specials);
    for (size_t i = 0; i < im->n_special; i++) free(im->special_str[i]);
    free(im->special_str);
    free(im->special_id);
    free(im);
}

/* ---- decoding: tiktoken's decode(ids) = decode_bytes(ids).decode("utf-8", "replace") ---- */

static const char *special_of(const tt_impl *im, int64_t id)
{
    if (id >= 0 && (size_t)id < im->n_special && im->special_id[id] == id)
        return im->special_str[id]; /* Megatron layout: ids 0 .. num_special-1 */
    for (size_t i = 0; i < im->n_special; i++)
        if (im->special_id[i] == id) return im->special_str[i];
    return NULL;
}

static mg_status tt_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    const tt_impl *im = tk->impl;
    mg_text bytes = {0};
    mg_status st = MG_OK;
    for (size_t i = 0; st == MG_OK && i < n; i++) {
        size_t len = 0;
        const char *sp = special_of(im, ids[i]);
        const uint8_t *b = (const uint8_t *)sp;
        if (sp) len = strlen(sp);
        else b = mg_bpe_token_bytes(im->bpe, (int32_t)ids[i], &len);
        if (!b) st = mg_error_set(MG_ERR_ARG, "token id %lld at position %zu has no bytes in "
                                  "the vocabulary", (long long)ids[i], i);
        else st = mg_text_append(&bytes, (const char *)b, len);
    }
    if (st == MG_OK) st = mg_decode_utf8_lossy(out, (const uint8_t *)bytes.p, bytes.n);
    mg_text_free(&bytes);
    return st;
}

static const struct mg_tok_vtbl tt_vtbl = {
    .encoder_create = tt_encoder_create,
    .encoder_free = tt_encoder_free,
    .encode = tt_encode,
    .free = tt_free,
    .decode = tt_decode,
};

/* ---- loading the ranks ---- */

/* Tokens go to the model QUEUE_TOKENS at a time (mg_bpe_add_tokens overlaps their
 * probes), their bytes copied into a buffer of QUEUE_BYTES (a longer token goes alone). */
#define QUEUE_TOKENS 64
#define QUEUE_BYTES 4096

typedef struct {
    mg_bpe *bpe;
    const char *path;
    int64_t id_shift;  /* num_special (Megatron) or 0 (OpenAI) */
    int64_t max_rank;  /* ranks >= this are skipped (-1: none) */
    uint8_t *seen;     /* seen[rank] */
    size_t seen_cap;
    size_t n_added;
    int64_t top_rank;  /* largest rank added */
    mg_bpe_token queue[QUEUE_TOKENS];
    size_t n_queued, queued_bytes;
    uint8_t queue_bytes[QUEUE_BYTES];
} rank_loader;

static mg_status mark_rank(rank_loader *l, int64_t rank)
{
    if ((size_t)rank >= l->seen_cap) {
        size_t cap = l->seen_cap ? l->seen_cap : 4096;
        while (cap <= (size_t)rank) cap *= 2;
        uint8_t *p = mg_realloc(l->seen, cap);
        if (!p) return MG_ERR_NOMEM;
        memset(p + l->seen_cap, 0, cap - l->seen_cap);
        l->seen = p;
        l->seen_cap = cap;
    }
    MG_RETURN_IF(l->seen[rank], MG_ERR_FORMAT, "%s: rank %lld appears twice", l->path,
                 (long long)rank);
    l->seen[rank] = 1;
    return MG_OK;
}

static mg_status flush_queue(rank_loader *l)
{
    size_t bad;
    mg_status st = mg_bpe_add_tokens(l->bpe, l->queue, l->n_queued, &bad);
    if (st != MG_OK) mg_error_prefix("%s", l->path);
    l->n_queued = l->queued_bytes = 0;
    return st;
}

/* Queues one token, its bytes copied (one longer than the queue's buffer goes at once). */
static mg_status queue_token(rank_loader *l, const uint8_t *bytes, size_t len, int64_t rank)
{
    if (l->n_queued == QUEUE_TOKENS || l->queued_bytes + len > QUEUE_BYTES)
        MG_FORWARD(flush_queue(l));
    mg_bpe_token *x = &l->queue[l->n_queued++];
    *x = (mg_bpe_token){bytes, len, (int32_t)(rank + l->id_shift), (int32_t)rank};
    if (len > QUEUE_BYTES) return flush_queue(l); /* the loader's buffer holds it till now */
    x->bytes = memcpy(l->queue_bytes + l->queued_bytes, bytes, len);
    l->queued_bytes += len;
    return MG_OK;
}

/* Error st (its message set) of the file's loading, or the error of a queued token: that
 * one comes first in the file. */
static mg_status later_error(rank_loader *l, mg_status st)
{
    char why[MG_ERROR_MAX];
    snprintf(why, sizeof why, "%s", mg_last_error());
    MG_FORWARD(flush_queue(l));
    return mg_error_set(st, "%s", why);
}

static mg_status add_rank(void *ctx, const uint8_t *bytes, size_t len, int64_t rank)
{
    rank_loader *l = ctx;
    if (l->max_rank >= 0 && rank >= l->max_rank) return MG_OK;
    MG_RETURN_IF(rank + l->id_shift >= INT32_MAX, MG_ERR_LIMIT, "%s: rank %lld is too large",
                 l->path, (long long)rank);
    MG_FORWARD(mark_rank(l, rank));
    MG_FORWARD(queue_token(l, bytes, len, rank));
    l->n_added++;
    if (rank > l->top_rank) l->top_rank = rank;
    return MG_OK;
}

static mg_status reserve_ranks(void *ctx, size_t most)
{
    rank_loader *l = ctx;
    if (l->max_rank >= 0 && (uint64_t)l->max_rank < most) most = (size_t)l->max_rank;
    return mg_bpe_reserve(l->bpe, most, 0);
}

/* Loads path into a new TOKEN_RANK model (finalized with the whole-piece shortcut). */
static mg_status load_bpe(tt_impl *im, rank_loader *l, int64_t max_entries, int *is_json)
{
    MG_FORWARD(mg_bpe_create(&im->bpe, MG_BPE_TOKEN_RANK));
    l->bpe = im->bpe;
    l->top_rank = -1;
    mg_status st = mg_tiktoken_vocab_load(l->path, max_entries, reserve_ranks, add_rank, l,
                                          is_json);
    st = st == MG_OK ? flush_queue(l) : later_error(l, st);
    if (st == MG_OK) {
        st = mg_bpe_finalize(im->bpe, 1);
        if (st != MG_OK) mg_error_prefix("%s", l->path);
    }
    return st;
}

static mg_status set_specials(tt_impl *im, const char *const *strs, const int64_t *ids,
                              size_t n)
{
    mg_added_token *t = mg_calloc(n ? n : 1, sizeof *t);
    if (!t) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        t[i].content = strs[i];
        t[i].len = strlen(strs[i]);
        t[i].id = ids[i];
        t[i].special = 1;
    }
    mg_status st = mg_added_tokens_create(&im->specials, t, n);
    free(t);
    im->special_str = mg_calloc(n ? n : 1, sizeof *im->special_str);
    im->special_id = mg_calloc(n ? n : 1, sizeof *im->special_id);
    if (st == MG_OK && (!im->special_str || !im->special_id)) st = MG_ERR_NOMEM;
    for (size_t i = 0; st == MG_OK && i < n; i++) {
        im->special_str[i] = strdup(strs[i]);
        im->special_id[i] = ids[i];
        im->n_special = i + 1;
        if (!im->special_str[i]) st = MG_ERR_NOMEM;
    }
    return st;
}

/* ---- OpenAI layout ---- */

static const openai_encoding *find_openai(const char *name)
{
    for (size_t i = 0; i < N_OF(openai_encodings); i++)
        if (strcmp(name, openai_encodings[i].name) == 0) return &openai_encodings[i];
    return NULL;
}

int mg_tiktoken_pattern_known(const char *name)
{
    return strcmp(name, "v1") == 0 || strcmp(name, "v2") == 0 || find_openai(name) != NULL;
}

static mg_status openai_specials(tt_impl *im, const openai_encoding *enc, const rank_loader *l)
{
    const char *strs[8];
    int64_t ids[8];
    for (size_t i = 0; i < enc->n_specials; i++) {
        int64_t id = enc->specials[i].id;
        MG_RETURN_IF((size_t)id < l->seen_cap && l->seen[id], MG_ERR_FORMAT,
                     "%s: rank %lld is %s's id of %s: not a %s vocabulary", l->path,
                     (long long)id, enc->name, enc->specials[i].str, enc->name);
        strs[i] = enc->specials[i].str;
        ids[i] = id;
    }
    return set_specials(im, strs, ids, enc->n_specials);
}

static mg_status create_openai(mg_tokenizer *tk, tt_impl *im, const mg_tok_opts *o,
                               const openai_encoding *enc)
{
    MG_RETURN_IF(o->n_special_tokens > 0, MG_ERR_ARG,
                 "--tokenizer-special-tokens cannot be used with --tiktoken-pattern %s",
                 enc->name);
    rank_loader l = {.path = o->model, .id_shift = 0, .max_rank = -1};
    int is_json;
    mg_status st = load_bpe(im, &l, -1, &is_json);
    if (st == MG_OK) st = openai_specials(im, enc, &l);
    free(l.seen);
    MG_FORWARD(st);
    int64_t top = l.top_rank;
    for (size_t i = 0; i < enc->n_specials; i++)
        if (enc->specials[i].id > top) top = enc->specials[i].id;
    tk->vocab_size = top + 1;
    tk->eod = enc->specials[0].id;
    MG_RETURN_IF(o->vocab_size > 0 && o->vocab_size != tk->vocab_size, MG_ERR_ARG,
                 "--vocab-size %lld does not match --tiktoken-pattern %s (%lld ids in %s)",
                 (long long)o->vocab_size, enc->name, (long long)tk->vocab_size, o->model);
    MG_FORWARD(mg_pretok_create(&im->pretok));
    MG_FORWARD(mg_pretok_add_regex_dialect(im->pretok, enc->regex, MG_REGEX_TIKTOKEN,
                                           MG_SPLIT_ISOLATED, 0));
    snprintf(tk->describe, sizeof tk->describe,
             "TikTokenizer %s as OpenAI %s (mgtools extension: ids = ranks, %zu ranks + %zu "
             "specials, vocab_size %lld, eod <|endoftext|> = %lld; tiktoken 0.14 regex; "
             "encode(allowed_special=\"all\"): special strings in text are matched)",
             o->model, enc->name, mg_bpe_n_tokens(im->bpe), enc->n_specials,
             (long long)tk->vocab_size, (long long)tk->eod);
    return MG_OK;
}

/* ---- Megatron layout ---- */

static int list_has(const char *const *list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0) return 1;
    return 0;
}

/* Megatron's checks on the named special tokens and the sizes. */
static mg_status check_megatron_specials(const char *const *names, size_t n, int64_t num_special,
                                         int64_t vocab_size)
{
    for (size_t i = 0; i < n; i++)
        MG_RETURN_IF(list_has(names, i, names[i]), MG_ERR_ARG,
                     "TikTokenizer: special token %s appears twice", names[i]);
    MG_RETURN_IF(!((int64_t)n <= num_special && num_special < vocab_size), MG_ERR_ARG,
                 "TikTokenizer: need %zu special tokens <= --tiktoken-num-special-tokens %lld "
                 "< vocab_size %lld", n, (long long)num_special, (long long)vocab_size);
    for (size_t i = 0; i < N_OF(megatron_named); i++)
        MG_RETURN_IF(!list_has(names, n, megatron_named[i]), MG_ERR_ARG,
                     "TikTokenizer: --tokenizer-special-tokens must include %s",
                     megatron_named[i]);
    return MG_OK;
}

/* The num_special special-token strings: names, then "<SPECIAL_i>" fillers. */
static mg_status megatron_specials(tt_impl *im, const char *const *names, size_t n,
                                   int64_t num_special)
{
    size_t total = (size_t)num_special;
    char *fill = mg_malloc((total - n) * 32 + 1);
    const char **strs = mg_calloc(total, sizeof *strs);
    int64_t *ids = mg_calloc(total, sizeof *ids);
    mg_status st = fill && strs && ids ? MG_OK : MG_ERR_NOMEM;
    for (size_t i = 0; i < total && st == MG_OK; i++) {
        ids[i] = (int64_t)i;
        if (i < n) {
            strs[i] = names[i];
        } else {
            strs[i] = fill + (i - n) * 32;
            snprintf(fill + (i - n) * 32, 32, "<SPECIAL_%zu>", i);
            if (list_has(names, n, strs[i]))
                st = mg_error_set(MG_ERR_ARG, "TikTokenizer: special token %s clashes with "
                                  "the filler of id %zu", strs[i], i);
        }
    }
    if (st == MG_OK) st = set_specials(im, strs, ids, total);
    free(fill);
    free(strs);
    free(ids);
    return st;
}

static mg_status megatron_pattern(tt_impl *im, const char *pattern)
{
    mg_pretok_family f;
    if (strcmp(pattern, "v1") == 0) f = MG_PRETOK_MEGATRON_V1;
    else if (strcmp(pattern, "v2") == 0) f = MG_PRETOK_MEGATRON_V2;
    else
        return mg_error_set(MG_ERR_ARG, "expected --tiktoken-pattern v1 or v2 (or an OpenAI "
                            "encoding: r50k_base, p50k_base, p50k_edit, cl100k_base, "
                            "o200k_base), got %s", pattern);
    MG_FORWARD(mg_pretok_create(&im->pretok));
    return mg_pretok_add_family(im->pretok, f);
}

static mg_status load_megatron_ranks(tt_impl *im, const mg_tok_opts *o, int64_t num_special,
                                     int64_t inner, int *is_json)
{
    rank_loader l = {.path = o->model, .id_shift = num_special, .max_rank = inner};
    mg_status st = load_bpe(im, &l, inner, is_json);
    free(l.seen);
    MG_FORWARD(st);
    MG_RETURN_IF((int64_t)l.n_added != inner, MG_ERR_FORMAT,
                 "%s: %zu ranks below %lld, need vocab_size - num_special_tokens = %lld (set "
                 "--vocab-size to the vocabulary's size plus %lld)", o->model, l.n_added,
                 (long long)inner, (long long)inner, (long long)num_special);
    return MG_OK;
}

static mg_status create_megatron(mg_tokenizer *tk, tt_impl *im, const mg_tok_opts *o,
                                 const char *pattern)
{
    const char *const *names = o->n_special_tokens ? o->special_tokens : megatron_named;
    size_t n = o->n_special_tokens ? o->n_special_tokens : N_OF(megatron_named);
    int64_t vocab = o->vocab_size > 0 ? o->vocab_size : MEGATRON_DEFAULT_VOCAB;
    int64_t num_special = o->tiktoken_num_special;
    MG_FORWARD(megatron_pattern(im, pattern));
    MG_FORWARD(check_megatron_specials(names, n, num_special, vocab));
    MG_RETURN_IF(vocab > INT32_MAX, MG_ERR_LIMIT, "TikTokenizer: vocab_size %lld is too large",
                 (long long)vocab);
    int is_json;
    MG_FORWARD(load_megatron_ranks(im, o, num_special, vocab - num_special, &is_json));
    MG_FORWARD(megatron_specials(im, names, n, num_special));
    size_t eos = 0;
    while (strcmp(names[eos], "</s>") != 0) eos++;
    tk->vocab_size = vocab;
    tk->eod = (int64_t)eos;
    snprintf(tk->describe, sizeof tk->describe,
             "TikTokenizer %s (%s; Megatron layout: %lld special ids then %lld ranks, "
             "vocab_size %lld, eod </s> = %lld; pattern %s; encode(allowed_special=\"all\"): "
             "special strings in text are matched)",
             o->model, is_json ? "Megatron JSON" : ".tiktoken ranks", (long long)num_special,
             (long long)(vocab - num_special), (long long)vocab, (long long)tk->eod, pattern);
    return MG_OK;
}

mg_status mg_tok_tiktoken_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(!o->model || !*o->model, MG_ERR_ARG, "TikTokenizer needs --tokenizer-model");
    const char *pattern = o->tiktoken_pattern ? o->tiktoken_pattern : "v2";
    tt_impl *im = mg_calloc(1, sizeof *im);
    if (!im) return MG_ERR_NOMEM;
    const openai_encoding *enc = find_openai(pattern);
    mg_status st = enc ? create_openai(tk, im, o, enc) : create_megatron(tk, im, o, pattern);
    if (st != MG_OK) {
        tt_free(im);
        return st;
    }
    tk->vt = &tt_vtbl;
    tk->impl = im;
    tk->accepts_lone_surrogates = 1;
    return MG_OK;
}
