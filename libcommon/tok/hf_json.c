/* hf_json.c — tokenizer.json / tokenizer_config.json into an mg_hf_desc; see hf_json.h.
 *
 * Parsing uses jansson; strings stay inside the parsed trees, which the description owns.
 * Every refusal names the feature and the file: "not supported yet: <feature> in <file>".
 */
#include "tok/hf_json.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "tok/hf_vocab_scan.h"

#define UNSUPPORTED(d, ...) unsupported((d), __VA_ARGS__)

static mg_status unsupported(const mg_hf_desc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static mg_status malformed(const mg_hf_desc *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
#include <stdio.h>

static mg_status unsupported(const mg_hf_desc *d, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: %s in %s", what, d->file);
}

static mg_status malformed(const mg_hf_desc *d, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mg_error_set(MG_ERR_FORMAT, "%s: %s", d->file, what);
}

void mg_hf_desc_init(mg_hf_desc *d)
{
    memset(d, 0, sizeof *d);
    d->legacy = d->add_prefix_space = -1;
    d->cleanup_spaces = -1;
}

void mg_hf_desc_free(mg_hf_desc *d)
{
    if (!d) return;
    free(d->vocab);
    free(d->vocab_id);
    free(d->merge_l);
    free(d->merge_r);
    free(d->added);
    for (size_t i = 0; i < d->n_json; i++) json_decref(d->json[i]);
    for (size_t i = 0; i < d->n_text; i++) free(d->text[i]);
    mg_normalizer_free(&d->norm);
    mg_hf_desc_init(d);
}

mg_status mg_hf_desc_own_json(mg_hf_desc *d, void *json)
{
    if (d->n_json == MG_HF_MAX_OWNED) {
        json_decref(json);
        return mg_error_set(MG_ERR_LIMIT, "%s: too many parsed files", d->file);
    }
    d->json[d->n_json++] = json;
    return MG_OK;
}

mg_status mg_hf_desc_own_text(mg_hf_desc *d, char *text)
{
    if (d->n_text == MG_HF_MAX_OWNED) {
        free(text);
        return mg_error_set(MG_ERR_LIMIT, "%s: too many buffers", d->file);
    }
    d->text[d->n_text++] = text;
    return MG_OK;
}

mg_status mg_hf_desc_read(mg_hf_desc *d, const char *path, char **buf, size_t *len)
{
    MG_FORWARD(mg_read_file(path, buf, len));
    return mg_hf_desc_own_text(d, *buf);
}

static void set_file(mg_hf_desc *d, const char *name)
{
    snprintf(d->file, sizeof d->file, "%s", name ? name : "tokenizer.json");
}

static mg_status parse_json(mg_hf_desc *d, const char *buf, size_t len, size_t flags,
                            json_t **root)
{
    json_error_t err;
    *root = json_loadb(buf, len, JSON_ALLOW_NUL | flags, &err);
    if (!*root)
        return mg_error_set(MG_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", d->file, err.line,
                            err.column, err.text);
    MG_FORWARD(mg_hf_desc_own_json(d, *root));
    if (!json_is_object(*root)) return malformed(d, "top level is not a JSON object");
    return MG_OK;
}

/* ---- small typed accessors ---- */

/* Boolean member; absent or null gives def; another type is an error. */
static mg_status get_bool(const mg_hf_desc *d, const json_t *obj, const char *key, int def,
                          const char *ctx, int *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = def;
    if (!v || json_is_null(v)) return MG_OK;
    if (!json_is_boolean(v)) return malformed(d, "%s.%s is not a boolean", ctx, key);
    *out = json_is_true(v);
    return MG_OK;
}

/* Type string of an object ("type" member), or NULL. */
static const char *type_of(const json_t *obj)
{
    return json_string_value(json_object_get(obj, "type"));
}

/* ---- model ---- */

/* A value hf_vocab_scan.c took: jansson sees its marker there. */
static mg_status check_scanned(const mg_hf_desc *d, const json_t *v, const char *what)
{
    const json_t *m = json_is_array(v) ? json_array_get(v, 0) : json_object_get(v, MG_HF_SCAN_MARKER);
    if ((json_is_array(v) ? json_array_size(v) : json_object_size(v)) == 1 &&
        (json_is_array(v) ? json_is_string(m) && strcmp(json_string_value(m),
                                                         MG_HF_SCAN_MARKER) == 0
                          : json_is_integer(m)))
        return MG_OK;
    return mg_error_set(MG_ERR_FORMAT, "%s: internal error: %s scanned, but jansson found "
                        "another value there", d->file, what);
}

static mg_status parse_vocab(mg_hf_desc *d, json_t *vocab)
{
    if (d->scanned_vocab) return check_scanned(d, vocab, "model.vocab");
    if (!json_is_object(vocab)) return malformed(d, "model.vocab is not an object");
    size_t n = json_object_size(vocab);
    d->vocab = mg_calloc(n ? n : 1, sizeof *d->vocab);
    d->vocab_id = mg_calloc(n ? n : 1, sizeof *d->vocab_id);
    if (!d->vocab || !d->vocab_id) return MG_ERR_NOMEM;
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > INT32_MAX)
            return malformed(d, "model.vocab[\"%.80s\"] is not a token id", key);
        d->vocab[d->n_vocab] = (mg_hf_str){key, strlen(key)};
        d->vocab_id[d->n_vocab++] = json_integer_value(v);
    }
    return MG_OK;
}

/* One merge: "a b" (exactly one space) or ["a", "b"]. */
static mg_status parse_merge(mg_hf_desc *d, const json_t *m, size_t i)
{
    if (json_is_string(m)) {
        const char *s = json_string_value(m);
        size_t len = json_string_length(m);
        const char *sp = memchr(s, ' ', len);
        if (!sp || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
            return malformed(d, "model.merges[%zu] \"%.80s\" is not two tokens separated by "
                             "one space", i, s);
        d->merge_l[i] = (mg_hf_str){s, (size_t)(sp - s)};
        d->merge_r[i] = (mg_hf_str){sp + 1, len - (size_t)(sp + 1 - s)};
        return MG_OK;
    }
    if (json_is_array(m) && json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
        json_is_string(json_array_get(m, 1))) {
        const json_t *a = json_array_get(m, 0), *b = json_array_get(m, 1);
        d->merge_l[i] = (mg_hf_str){json_string_value(a), json_string_length(a)};
        d->merge_r[i] = (mg_hf_str){json_string_value(b), json_string_length(b)};
        return MG_OK;
    }
    return malformed(d, "model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", i);
}

static mg_status parse_merges(mg_hf_desc *d, const json_t *merges)
{
    if (d->scanned_merges) return check_scanned(d, merges, "model.merges");
    if (!merges || json_is_null(merges)) return MG_OK;
    if (!json_is_array(merges)) return malformed(d, "model.merges is not an array");
    size_t n = json_array_size(merges);
    d->merge_l = mg_calloc(n ? n : 1, sizeof *d->merge_l);
    d->merge_r = mg_calloc(n ? n : 1, sizeof *d->merge_r);
    if (!d->merge_l || !d->merge_r) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) MG_FORWARD(parse_merge(d, json_array_get(merges, i), i));
    d->n_merges = n;
    return MG_OK;
}

/* A string option that must be null/absent or "" (continuing_subword_prefix, ...). */
static mg_status check_empty_string(const mg_hf_desc *d, const json_t *model, const char *key)
{
    const json_t *v = json_object_get(model, key);
    if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
        return MG_OK;
    return unsupported(d, "BPE %s", key);
}

static mg_status check_bpe_options(mg_hf_desc *d, const json_t *model)
{
    MG_FORWARD(get_bool(d, model, "byte_fallback", 0, "model", &d->byte_fallback));
    MG_FORWARD(get_bool(d, model, "fuse_unk", 0, "model", &d->fuse_unk));
    const json_t *unk = json_object_get(model, "unk_token");
    if (unk && !json_is_null(unk) && !json_is_string(unk))
        return malformed(d, "model.unk_token is not a string");
    d->unk_token = json_string_value(unk);
    const json_t *dropout = json_object_get(model, "dropout");
    if (dropout && !json_is_null(dropout) &&
        !(json_is_number(dropout) && json_number_value(dropout) == 0.0))
        return unsupported(d, "BPE dropout");
    MG_FORWARD(check_empty_string(d, model, "continuing_subword_prefix"));
    return check_empty_string(d, model, "end_of_word_suffix");
}

/* WordPiece: vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word. */
static mg_status parse_wordpiece(mg_hf_desc *d, const json_t *model)
{
    const json_t *unk = json_object_get(model, "unk_token");
    const json_t *pre = json_object_get(model, "continuing_subword_prefix");
    const json_t *mx = json_object_get(model, "max_input_chars_per_word");
    if ((unk && !json_is_string(unk)) || (pre && !json_is_string(pre)) ||
        (mx && !(json_is_integer(mx) && json_integer_value(mx) >= 0)))
        return malformed(d, "WordPiece model: unk_token and continuing_subword_prefix must be "
                         "strings, max_input_chars_per_word a count");
    d->wordpiece = 1;
    d->unk_token = unk ? json_string_value(unk) : "[UNK]";
    d->wp_prefix = pre ? json_string_value(pre) : "##";
    d->wp_max_chars = mx ? json_integer_value(mx) : 100;
    json_t *vocab = json_object_get(model, "vocab");
    if (!vocab) return malformed(d, "missing model.vocab");
    return parse_vocab(d, vocab);
}

static mg_status parse_model(mg_hf_desc *d, const json_t *root)
{
    const json_t *model = json_object_get(root, "model");
    if (!json_is_object(model)) return malformed(d, "missing \"model\" object");
    const char *type = type_of(model);
    if (!type) return unsupported(d, "model without \"type\"");
    if (strcmp(type, "Unigram") == 0) {
        d->unigram = model; /* parsed by tok_hf_unigram.c */
        return MG_OK;
    }
    if (strcmp(type, "WordPiece") == 0) return parse_wordpiece(d, model);
    if (strcmp(type, "BPE") != 0) return unsupported(d, "model type %.80s", type);
    MG_FORWARD(check_bpe_options(d, model));
    MG_FORWARD(get_bool(d, model, "ignore_merges", 0, "model", &d->ignore_merges));
    json_t *vocab = json_object_get(model, "vocab");
    if (!vocab) return malformed(d, "missing model.vocab");
    MG_FORWARD(parse_vocab(d, vocab));
    return parse_merges(d, json_object_get(model, "merges"));
}

/* ---- added tokens ---- */

static mg_status parse_added_token(mg_hf_desc *d, const json_t *t, size_t i, mg_added_token *a)
{
    char ctx[64];
    snprintf(ctx, sizeof ctx, "added_tokens[%zu]", i);
    const json_t *id = json_object_get(t, "id"), *content = json_object_get(t, "content");
    if (!json_is_object(t) || !json_is_integer(id) || json_integer_value(id) < 0 ||
        json_integer_value(id) > INT32_MAX || !json_is_string(content))
        return malformed(d, "%s needs an integer \"id\" and a string \"content\"", ctx);
    a->id = json_integer_value(id);
    a->content = json_string_value(content);
    a->len = json_string_length(content);
    MG_FORWARD(get_bool(d, t, "single_word", 0, ctx, &a->single_word));
    MG_FORWARD(get_bool(d, t, "lstrip", 0, ctx, &a->lstrip));
    MG_FORWARD(get_bool(d, t, "rstrip", 0, ctx, &a->rstrip));
    MG_FORWARD(get_bool(d, t, "special", 0, ctx, &a->special));
    return get_bool(d, t, "normalized", !a->special, ctx, &a->normalized);
}

static mg_status parse_added(mg_hf_desc *d, const json_t *root)
{
    const json_t *arr = json_object_get(root, "added_tokens");
    if (!arr || json_is_null(arr)) return MG_OK;
    if (!json_is_array(arr)) return malformed(d, "added_tokens is not an array");
    size_t n = json_array_size(arr);
    d->added = mg_calloc(n ? n : 1, sizeof *d->added);
    if (!d->added) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        MG_FORWARD(parse_added_token(d, json_array_get(arr, i), i, &d->added[i]));
    d->n_added = n;
    return MG_OK;
}

/* ---- normalizer ---- */

static mg_status parse_prepend(mg_hf_desc *d, const json_t *n)
{
    const json_t *s = json_object_get(n, "prepend");
    if (!json_is_string(s)) return malformed(d, "Prepend normalizer without a \"prepend\" string");
    return mg_normalizer_add_prepend(&d->norm, json_string_value(s), json_string_length(s));
}

static mg_status parse_replace(mg_hf_desc *d, const json_t *n)
{
    const json_t *pat = json_object_get(n, "pattern"), *content = json_object_get(n, "content");
    const json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
    const json_t *p = json_is_string(re) ? re : str;
    if (!json_is_string(p) || !json_is_string(content))
        return malformed(d, "Replace normalizer needs a {\"String\"} or {\"Regex\"} pattern "
                         "and a \"content\" string");
    if (json_string_length(p) == 0) return unsupported(d, "Replace normalizer with an empty pattern");
    return mg_normalizer_add_replace(&d->norm, json_string_value(p), json_string_length(p),
                                     p == re, json_string_value(content),
                                     json_string_length(content));
}

/* Precompiled (Unigram models, as the first step): kept for tok_hf_unigram.c. */
static mg_status parse_precompiled(mg_hf_desc *d, const json_t *n)
{
    const char *s = json_string_value(json_object_get(n, "precompiled_charsmap"));
    if (!s) return malformed(d, "Precompiled normalizer without a precompiled_charsmap string");
    if (!d->unigram) return unsupported(d, "normalizer Precompiled with a non-Unigram model");
    if (d->norm.n > 0 || d->precompiled)
        return unsupported(d, "normalizer Precompiled after another normalizer");
    d->precompiled = s;
    return MG_OK;
}

/* Nmt (tokenizers' SentencePiece nmt filter): control characters removed, some spaces
 * and U+2581 / U+FEFF / U+FFFD become ' ' — per character, so two regex Replace steps. */
static mg_status parse_nmt(mg_hf_desc *d)
{
    static const char drop[] = "[\\x{1}-\\x{8}\\x{B}\\x{E}-\\x{1F}\\x{7F}\\x{8F}\\x{9F}]";
    static const char space[] = "[\\t\\n\\f\\r\\x{1680}\\x{200B}-\\x{200F}\\x{2028}\\x{2029}"
                                "\\x{2581}\\x{FEFF}\\x{FFFD}]";
    MG_FORWARD(mg_normalizer_add_replace(&d->norm, drop, sizeof drop - 1, 1, "", 0));
    return mg_normalizer_add_replace(&d->norm, space, sizeof space - 1, 1, " ", 1);
}

/* Strip(strip_left, strip_right): normalize.c's Strip step. */
#define WHITE_SPACE MG_HF_WHITE_SPACE_RE
static mg_status parse_strip(mg_hf_desc *d, const json_t *n)
{
    int left, right;
    MG_FORWARD(get_bool(d, n, "strip_left", 1, "Strip", &left));
    MG_FORWARD(get_bool(d, n, "strip_right", 1, "Strip", &right));
    return mg_normalizer_add_strip(&d->norm, left, right);
}

/* NFD, NFKC, NFKD, Lowercase, StripAccents (utf8proc steps without arguments), else 0. */
static mg_norm_step unicode_step(const char *type)
{
    static const char *const names[] = {"NFD", "NFKC", "NFKD", "Lowercase", "StripAccents"};
    static const mg_norm_step steps[] = {MG_NORM_NFD, MG_NORM_NFKC, MG_NORM_NFKD,
                                         MG_NORM_LOWERCASE, MG_NORM_STRIP_ACCENTS};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(type, names[i]) == 0) return steps[i];
    return (mg_norm_step)0;
}

/* BertNormalizer: strip_accents null follows lowercase (as HF does). */
static mg_status parse_bert_normalizer(mg_hf_desc *d, const json_t *n)
{
    int clean, chinese, strip, lower;
    MG_FORWARD(get_bool(d, n, "clean_text", 1, "BertNormalizer", &clean));
    MG_FORWARD(get_bool(d, n, "handle_chinese_chars", 1, "BertNormalizer", &chinese));
    MG_FORWARD(get_bool(d, n, "lowercase", 1, "BertNormalizer", &lower));
    MG_FORWARD(get_bool(d, n, "strip_accents", lower, "BertNormalizer", &strip));
    return mg_normalizer_add_bert(&d->norm, (clean ? MG_NORM_BERT_CLEAN : 0) |
                                            (chinese ? MG_NORM_BERT_CHINESE : 0) |
                                            (strip ? MG_NORM_BERT_STRIP_ACCENTS : 0) |
                                            (lower ? MG_NORM_BERT_LOWERCASE : 0));
}

static mg_status parse_normalizer(mg_hf_desc *d, const json_t *n, int depth)
{
    if (!n || json_is_null(n)) return MG_OK;
    const char *type = type_of(n);
    if (!json_is_object(n) || !type) return malformed(d, "normalizer without a \"type\"");
    if (depth > 8) return unsupported(d, "normalizers nested this deep");
    if (strcmp(type, "Sequence") == 0) {
        const json_t *list = json_object_get(n, "normalizers");
        if (!json_is_array(list)) return malformed(d, "normalizer Sequence without a list");
        for (size_t i = 0; i < json_array_size(list); i++)
            MG_FORWARD(parse_normalizer(d, json_array_get(list, i), depth + 1));
        return MG_OK;
    }
    mg_status st;
    if (strcmp(type, "NFC") == 0) st = mg_normalizer_add(&d->norm, MG_NORM_NFC);
    else if (strcmp(type, "Prepend") == 0) st = parse_prepend(d, n);
    else if (strcmp(type, "Replace") == 0) st = parse_replace(d, n);
    else if (strcmp(type, "Precompiled") == 0) st = parse_precompiled(d, n);
    else if (strcmp(type, "Strip") == 0) st = parse_strip(d, n);
    else if (strcmp(type, "Nmt") == 0) st = parse_nmt(d);
    else if (strcmp(type, "BertNormalizer") == 0) st = parse_bert_normalizer(d, n);
    else if (unicode_step(type) != 0) st = mg_normalizer_add(&d->norm, unicode_step(type));
    else return unsupported(d, "normalizer %.80s", type);
    if (st != MG_OK && st != MG_ERR_FORMAT) mg_error_prefix("%s", d->file);
    return st;
}

/* ---- pre-tokenizer ---- */

static mg_status parse_behavior(const mg_hf_desc *d, const char *s, mg_split_behavior *b)
{
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious",
                                        "MergedWithNext", "Contiguous"};
    static const mg_split_behavior vals[] = {MG_SPLIT_ISOLATED, MG_SPLIT_REMOVED,
                                             MG_SPLIT_MERGED_WITH_PREVIOUS,
                                             MG_SPLIT_MERGED_WITH_NEXT, MG_SPLIT_CONTIGUOUS};
    for (size_t i = 0; s && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) {
            *b = vals[i];
            return MG_OK;
        }
    return malformed(d, "Split behavior \"%.80s\" is not one of Isolated, Removed, "
                     "MergedWithPrevious, MergedWithNext, Contiguous", s ? s : "(none)");
}

static mg_status push_stage(mg_hf_desc *d, const mg_hf_pre_stage *st)
{
    if (d->n_pre == MG_HF_MAX_PRE) return unsupported(d, "more than %d pre-tokenizers",
                                                      MG_HF_MAX_PRE);
    if (d->n_pre > 0 && d->pre[d->n_pre - 1].kind == MG_HF_PRE_BYTE_LEVEL)
        return unsupported(d, "a pre-tokenizer after ByteLevel");
    if (d->n_pre > 0 && d->pre[d->n_pre - 1].kind == MG_HF_PRE_METASPACE)
        return unsupported(d, "a pre-tokenizer after Metaspace");
    d->pre[d->n_pre++] = *st;
    return MG_OK;
}

static mg_status parse_split(mg_hf_desc *d, const json_t *p)
{
    mg_hf_pre_stage st = {.kind = MG_HF_PRE_SPLIT};
    const json_t *pat = json_object_get(p, "pattern");
    const json_t *re = json_object_get(pat, "Regex"), *str = json_object_get(pat, "String");
    if (json_is_string(re)) {
        st.pattern = json_string_value(re);
        st.is_regex = 1;
    } else if (json_is_string(str)) {
        st.pattern = json_string_value(str);
    } else {
        return malformed(d, "Split pre-tokenizer without a {\"Regex\"} or {\"String\"} pattern");
    }
    MG_FORWARD(parse_behavior(d, json_string_value(json_object_get(p, "behavior")), &st.behavior));
    MG_FORWARD(get_bool(d, p, "invert", 0, "Split", &st.invert));
    return push_stage(d, &st);
}

static mg_status parse_byte_level(mg_hf_desc *d, const json_t *p)
{
    mg_hf_pre_stage st = {.kind = MG_HF_PRE_BYTE_LEVEL};
    MG_FORWARD(get_bool(d, p, "add_prefix_space", 1, "ByteLevel", &st.add_prefix_space));
    MG_FORWARD(get_bool(d, p, "use_regex", 1, "ByteLevel", &st.use_regex));
    return push_stage(d, &st);
}

static mg_status parse_prepend_scheme(const mg_hf_desc *d, const json_t *p, mg_hf_prepend *out)
{
    const json_t *v = json_object_get(p, "prepend_scheme");
    int aps;
    if (!v || json_is_null(v)) { /* legacy form: add_prefix_space */
        MG_FORWARD(get_bool(d, p, "add_prefix_space", 1, "Metaspace", &aps));
        *out = aps ? MG_HF_PREPEND_ALWAYS : MG_HF_PREPEND_NEVER;
        return MG_OK;
    }
    const char *s = json_string_value(v);
    if (s && strcmp(s, "always") == 0) *out = MG_HF_PREPEND_ALWAYS;
    else if (s && strcmp(s, "first") == 0) *out = MG_HF_PREPEND_FIRST;
    else if (s && strcmp(s, "never") == 0) *out = MG_HF_PREPEND_NEVER;
    else return malformed(d, "Metaspace prepend_scheme is not always, first or never");
    return MG_OK;
}

static mg_status parse_metaspace(mg_hf_desc *d, const json_t *p)
{
    mg_hf_pre_stage st = {.kind = MG_HF_PRE_METASPACE};
    const json_t *r = json_object_get(p, "replacement");
    if (!r) r = json_object_get(p, "str_rep");
    const char *rs = json_string_value(r);
    size_t n = json_string_length(r);
    if (!rs || n == 0 || n >= sizeof st.replacement || (n > 1 && (rs[0] & 0xC0) != 0xC0) ||
        (n == 1 && (rs[0] & 0x80)))
        return malformed(d, "Metaspace replacement is not one character");
    memcpy(st.replacement, rs, n);
    MG_FORWARD(parse_prepend_scheme(d, p, &st.prepend_scheme));
    MG_FORWARD(get_bool(d, p, "split", 1, "Metaspace", &st.split));
    return push_stage(d, &st);
}

/* BertPreTokenizer, Punctuation, Whitespace (\w+|[^\w\s]+ as HF's regex), Digits. */
static mg_status parse_word_pretok(mg_hf_desc *d, const json_t *p, const char *type)
{
    mg_hf_pre_stage st = {.kind = MG_HF_PRE_SPLIT, .is_regex = 1};
    if (strcmp(type, "BertPreTokenizer") == 0) {
        st.kind = MG_HF_PRE_BERT;
    } else if (strcmp(type, "Punctuation") == 0) {
        const char *b = json_string_value(json_object_get(p, "behavior"));
        st.kind = MG_HF_PRE_PUNCTUATION;
        MG_FORWARD(parse_behavior(d, b ? b : "Isolated", &st.behavior));
    } else if (strcmp(type, "Whitespace") == 0) {
        st.pattern = "\\w+|[^\\w\\s]+";
        st.behavior = MG_SPLIT_REMOVED;
        st.invert = 1;
    } else if (strcmp(type, "Digits") == 0) {
        int individual;
        MG_FORWARD(get_bool(d, p, "individual_digits", 0, "Digits", &individual));
        st.pattern = "\\p{N}"; /* Rust char::is_numeric: Nd, Nl, No */
        st.behavior = individual ? MG_SPLIT_ISOLATED : MG_SPLIT_CONTIGUOUS;
    } else {
        return unsupported(d, "pre_tokenizer %.80s", type);
    }
    if (st.kind != MG_HF_PRE_SPLIT && !d->wordpiece)
        return unsupported(d, "pre_tokenizer %.80s with a non-WordPiece model", type);
    return push_stage(d, &st);
}

static mg_status parse_pretok(mg_hf_desc *d, const json_t *p, int depth)
{
    const char *type = type_of(p);
    if (!json_is_object(p) || !type) return malformed(d, "pre_tokenizer without a \"type\"");
    if (depth > 8) return unsupported(d, "pre-tokenizers nested this deep");
    if (strcmp(type, "Sequence") == 0) {
        const json_t *list = json_object_get(p, "pretokenizers");
        if (!json_is_array(list)) return malformed(d, "pre_tokenizer Sequence without a list");
        for (size_t i = 0; i < json_array_size(list); i++)
            MG_FORWARD(parse_pretok(d, json_array_get(list, i), depth + 1));
        return MG_OK;
    }
    if (strcmp(type, "Split") == 0) return parse_split(d, p);
    if (strcmp(type, "ByteLevel") == 0) return parse_byte_level(d, p);
    if (strcmp(type, "Metaspace") == 0) return parse_metaspace(d, p);
    if (strcmp(type, "WhitespaceSplit") == 0) { /* split(char::is_whitespace, Removed) */
        mg_hf_pre_stage st = {.kind = MG_HF_PRE_SPLIT, .pattern = WHITE_SPACE, .is_regex = 1,
                              .behavior = MG_SPLIT_REMOVED};
        return push_stage(d, &st);
    }
    return parse_word_pretok(d, p, type);
}

static mg_status parse_pre_tokenizer(mg_hf_desc *d, const json_t *root)
{
    const json_t *p = json_object_get(root, "pre_tokenizer");
    if (p && !json_is_null(p)) MG_FORWARD(parse_pretok(d, p, 0));
    d->char_level = d->n_pre == 0 || d->pre[d->n_pre - 1].kind != MG_HF_PRE_BYTE_LEVEL;
    if (!d->char_level && d->byte_fallback)
        return unsupported(d, "BPE byte_fallback with a ByteLevel pre-tokenizer");
    return MG_OK;
}

/* ---- post-processor ---- */

static mg_status push_post(mg_hf_desc *d, int before, int64_t id)
{
    size_t *n = before ? &d->n_prefix : &d->n_suffix;
    if (*n == MG_HF_MAX_POST) return unsupported(d, "post-processor adding > %d tokens",
                                                 MG_HF_MAX_POST);
    (before ? d->prefix : d->suffix)[(*n)++] = id;
    return MG_OK;
}

/* The ids of a template's special token `name` (special_tokens[name].ids). */
static mg_status template_special(mg_hf_desc *d, const json_t *p, const char *name, int before)
{
    const json_t *ids = json_object_get(json_object_get(json_object_get(p, "special_tokens"),
                                                        name ? name : ""), "ids");
    if (!name || !json_is_array(ids))
        return malformed(d, "TemplateProcessing special token \"%.80s\" has no ids",
                         name ? name : "(none)");
    for (size_t i = 0; i < json_array_size(ids); i++) {
        const json_t *id = json_array_get(ids, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0)
            return malformed(d, "TemplateProcessing special token \"%.80s\": bad id", name);
        MG_FORWARD(push_post(d, before, json_integer_value(id)));
    }
    return MG_OK;
}

static mg_status parse_template(mg_hf_desc *d, const json_t *p)
{
    const json_t *single = json_object_get(p, "single");
    if (!json_is_array(single)) return malformed(d, "TemplateProcessing without \"single\"");
    int seen_seq = 0;
    for (size_t i = 0; i < json_array_size(single); i++) {
        const json_t *item = json_array_get(single, i);
        const json_t *sp = json_object_get(item, "SpecialToken");
        if (json_is_object(json_object_get(item, "Sequence"))) {
            if (seen_seq) return unsupported(d, "TemplateProcessing repeating the sequence");
            seen_seq = 1;
        } else if (json_is_object(sp)) {
            const char *name = json_string_value(json_object_get(sp, "id"));
            MG_FORWARD(template_special(d, p, name, !seen_seq));
        } else {
            return malformed(d, "TemplateProcessing single[%zu] is neither SpecialToken nor "
                             "Sequence", i);
        }
    }
    if (!seen_seq) return unsupported(d, "TemplateProcessing without the sequence");
    return MG_OK;
}

/* BertProcessing / RobertaProcessing: cls + sequence + sep ({"cls": [str, id], ...}). */
static mg_status parse_cls_sep(mg_hf_desc *d, const json_t *p)
{
    const json_t *cls = json_array_get(json_object_get(p, "cls"), 1);
    const json_t *sep = json_array_get(json_object_get(p, "sep"), 1);
    if (!json_is_integer(cls) || !json_is_integer(sep) || json_integer_value(cls) < 0 ||
        json_integer_value(sep) < 0)
        return malformed(d, "%s without [token, id] cls and sep", type_of(p));
    MG_FORWARD(push_post(d, 1, json_integer_value(cls)));
    return push_post(d, 0, json_integer_value(sep));
}

static mg_status parse_post(mg_hf_desc *d, const json_t *p, int depth)
{
    if (!p || json_is_null(p)) return MG_OK;
    const char *type = type_of(p);
    if (!json_is_object(p) || !type) return malformed(d, "post_processor without a \"type\"");
    if (depth > 8) return unsupported(d, "post-processors nested this deep");
    if (strcmp(type, "ByteLevel") == 0) return MG_OK; /* offsets only */
    if (strcmp(type, "TemplateProcessing") == 0) return parse_template(d, p);
    if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0)
        return parse_cls_sep(d, p);
    if (strcmp(type, "Sequence") == 0) {
        const json_t *list = json_object_get(p, "processors");
        if (!json_is_array(list)) return malformed(d, "post_processor Sequence without a list");
        for (size_t i = 0; i < json_array_size(list); i++)
            MG_FORWARD(parse_post(d, json_array_get(list, i), depth + 1));
        return MG_OK;
    }
    return unsupported(d, "post_processor %.80s", type);
}

mg_status mg_hf_desc_parse(mg_hf_desc *d, const char *buf, size_t len, const char *name)
{
    json_t *root;
    char *rest;
    size_t rest_len;
    set_file(d, name);
    MG_FORWARD(mg_hf_scan_model(d, buf, len, &rest, &rest_len));
    mg_status st = parse_json(d, rest ? rest : buf, rest ? rest_len : len, 0, &root);
    free(rest);
    MG_FORWARD(st);
    MG_FORWARD(parse_model(d, root));
    MG_FORWARD(parse_added(d, root));
    MG_FORWARD(parse_normalizer(d, json_object_get(root, "normalizer"), 0));
    MG_FORWARD(parse_pre_tokenizer(d, root));
    const json_t *dec = json_object_get(root, "decoder");
    d->decoder = json_is_object(dec) ? dec : NULL;
    return parse_post(d, json_object_get(root, "post_processor"), 0);
}

mg_status mg_hf_desc_load(mg_hf_desc *d, const char *path)
{
    char *buf;
    size_t len;
    MG_FORWARD(mg_read_file(path, &buf, &len));
    mg_status st = mg_hf_desc_parse(d, buf, len, path);
    free(buf);
    return st;
}

/* ---- tokenizer_config.json ---- */

/* A special-token value: "text" or {"content": "text", "lstrip": ..., ...}. Returns the
 * content (NULL for null/absent) and fills the flags of *a. */
static mg_status config_token(mg_hf_desc *d, const json_t *v, const char *key, mg_added_token *a,
                              const char **content)
{
    memset(a, 0, sizeof *a);
    *content = NULL;
    if (!v || json_is_null(v)) return MG_OK;
    a->special = 1;
    if (json_is_string(v)) {
        *content = json_string_value(v);
        a->len = json_string_length(v);
    } else if (json_is_object(v) && json_is_string(json_object_get(v, "content"))) {
        const json_t *c = json_object_get(v, "content");
        *content = json_string_value(c);
        a->len = json_string_length(c);
        MG_FORWARD(get_bool(d, v, "single_word", 0, key, &a->single_word));
        MG_FORWARD(get_bool(d, v, "lstrip", 0, key, &a->lstrip));
        MG_FORWARD(get_bool(d, v, "rstrip", 0, key, &a->rstrip));
        MG_FORWARD(get_bool(d, v, "normalized", 0, key, &a->normalized));
    } else {
        return malformed(d, "%s is neither a string nor an AddedToken object", key);
    }
    a->content = *content;
    a->id = -1;
    return MG_OK;
}

static mg_status push_named(mg_hf_desc *d, const json_t *v, const char *key, const char **content)
{
    mg_added_token a;
    const char *c;
    MG_FORWARD(config_token(d, v, key, &a, &c));
    if (content) *content = c;
    if (!c || a.len == 0) return MG_OK;
    if (d->n_named == MG_HF_MAX_NAMED) return unsupported(d, "more than %d special tokens",
                                                          MG_HF_MAX_NAMED);
    d->named[d->n_named++] = a;
    return MG_OK;
}

static mg_status config_list(mg_hf_desc *d, const json_t *root, const char *key)
{
    const json_t *list = json_object_get(root, key);
    if (!list || json_is_null(list)) return MG_OK;
    if (!json_is_array(list)) return MG_OK; /* a dict form (v5 named extras): not used here */
    for (size_t i = 0; i < json_array_size(list); i++)
        MG_FORWARD(push_named(d, json_array_get(list, i), key, NULL));
    return MG_OK;
}

/* tokenizer_class, legacy, add_prefix_space (for mg_hf_apply_class). */
static mg_status config_class(mg_hf_desc *d, const json_t *root)
{
    const char *cls = json_string_value(json_object_get(root, "tokenizer_class"));
    snprintf(d->tokenizer_class, sizeof d->tokenizer_class, "%s", cls ? cls : "");
    const json_t *l = json_object_get(root, "legacy"), *a = json_object_get(root, "add_prefix_space");
    if (json_is_boolean(l)) d->legacy = json_is_true(l);
    if (json_is_boolean(a)) d->add_prefix_space = json_is_true(a);
    const json_t *c = json_object_get(root, "clean_up_tokenization_spaces");
    if (json_is_boolean(c)) d->cleanup_spaces = json_is_true(c);
    return MG_OK;
}

mg_status mg_hf_config_parse(mg_hf_desc *d, const char *buf, size_t len, const char *name)
{
    /* transformers' SPECIAL_TOKENS_ATTRIBUTES order: new tokens get ids in this order */
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token"};
    char saved[sizeof d->file];
    memcpy(saved, d->file, sizeof saved);
    set_file(d, name);
    json_t *root;
    /* model_max_length is often 1e30 written as an integer: read numbers as reals */
    mg_status st = parse_json(d, buf, len, JSON_DECODE_INT_AS_REAL, &root);
    for (size_t i = 0; st == MG_OK && i < sizeof keys / sizeof keys[0]; i++) {
        const char **content = i == 1   ? &d->eos_token
                               : i == 2 ? &d->cfg_unk_token
                               : i == 3 ? &d->sep_token
                                        : NULL;
        st = push_named(d, json_object_get(root, keys[i]), keys[i], content);
    }
    if (st == MG_OK) st = config_list(d, root, "additional_special_tokens");
    if (st == MG_OK) st = config_list(d, root, "extra_special_tokens");
    if (st == MG_OK) st = config_class(d, root);
    memcpy(d->file, saved, sizeof saved);
    return st;
}

/* ---- transformers 5 tokenizer classes ---- */

static int class_is(const mg_hf_desc *d, const char *name)
{
    size_t n = strlen(name);
    return strncmp(d->tokenizer_class, name, n) == 0 &&
           (d->tokenizer_class[n] == 0 || strcmp(d->tokenizer_class + n, "Fast") == 0);
}

static void class_model(mg_hf_desc *d, const char *unk)
{
    d->byte_fallback = 1;
    d->fuse_unk = 1;
    d->ignore_merges = 0;
    d->unk_token = unk;
    mg_normalizer_free(&d->norm);
    d->n_pre = 0;
}

mg_status mg_hf_apply_class(mg_hf_desc *d)
{
    if (!d->char_level) return MG_OK; /* transformers loads ByteLevel files as they are */
    if (class_is(d, "LlamaTokenizer")) {
        class_model(d, NULL);
        mg_hf_pre_stage st = {.kind = MG_HF_PRE_METASPACE, .replacement = "\xe2\x96\x81"};
        st.prepend_scheme = d->add_prefix_space == 0 ? MG_HF_PREPEND_NEVER
                            : d->legacy == 1         ? MG_HF_PREPEND_ALWAYS
                                                     : MG_HF_PREPEND_FIRST;
        d->pre[d->n_pre++] = st;
        return MG_OK;
    }
    if (class_is(d, "GemmaTokenizer")) {
        class_model(d, d->cfg_unk_token ? d->cfg_unk_token : "<unk>");
        mg_hf_pre_stage st = {.kind = MG_HF_PRE_SPLIT, .pattern = " ",
                              .behavior = MG_SPLIT_MERGED_WITH_PREVIOUS};
        d->pre[d->n_pre++] = st;
        return mg_normalizer_add_replace(&d->norm, " ", 1, 0, "\xe2\x96\x81", 3);
    }
    return MG_OK;
}
