/* tokenizer.c — the mg/tokenizer.h facade: options, dispatch on --tokenizer-type, the
 * shared accessors, id vectors, encoders, and the input checks every tokenizer shares.
 *
 * mg_encode() validates UTF-8 (Python's strict decoder: no overlong forms, nothing above
 * U+10FFFF) before the tokenizer sees the text. The 3-byte forms ED A0..BF xx are the lone
 * surrogates mg/jsonl.h emits for \uD800-\uDFFF escapes: a tokenizer that accepts them
 * (tiktoken) gets them replaced the way tiktoken does (text.encode("utf-16",
 * "surrogatepass").decode("utf-16", "replace")): a high surrogate directly followed by a
 * low one becomes the pair's code point, any other surrogate U+FFFD; the others reject
 * the text, as Megatron's tokenizers raise on it.
 * Constructors clean up after themselves on failure (tk->impl is only valid on success).
 */
#include "tok/tok_internal.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "mg/argv.h"
#include "mg/grow.h"
#include "mg/strbuf.h"

struct mg_encoder {
    const mg_tokenizer *tk;
    void *state;
    char *fixed; /* text with surrogates replaced */
    size_t fixed_cap;
};

void mg_tok_opts_init(mg_tok_opts *o)
{
    memset(o, 0, sizeof *o);
    o->vocab_size = -1;
    o->tiktoken_num_special = 1000;
    o->null_eod_id = -1;
}

static const struct {
    const char *name;
    mg_status (*create)(mg_tokenizer *tk, const mg_tok_opts *o);
} kinds[] = {
    {"GPT2BPETokenizer", mg_tok_gpt2_create},
    {"HuggingFaceTokenizer", mg_tok_hf_create},
    {"TikTokenizer", mg_tok_tiktoken_create},
    {"NullTokenizer", mg_tok_null_create},
    {"SentencePieceTokenizer", mg_tok_spm_create},
    {"GPTSentencePieceTokenizer", mg_tok_spm_create},
    {"Llama2Tokenizer", mg_tok_spm_create},
    {"BertWordPieceLowerCase", mg_tok_bert_create},
    {"BertWordPieceCase", mg_tok_bert_create},
};

/* Loading a large vocabulary frees tens of MB (file text, parsed entries) that glibc keeps
 * mapped inside its heap; they would stay resident under the encoders' caches and count in
 * the peak RSS. malloc_trim hands the free pages back to the system. */
static void release_loading_memory(void)
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

/* Megatron's --tokenizer-type choices (megatron/training/arguments.py) that are not here:
 * "not supported yet"; any other name is an invalid choice listing Megatron's. */
static mg_status unknown_type(const char *type)
{
    static const char *const megatron[] = {
        "BertWordPieceLowerCase", "BertWordPieceCase", "GPT2BPETokenizer",
        "SentencePieceTokenizer", "GPTSentencePieceTokenizer", "HuggingFaceTokenizer",
        "Llama2Tokenizer", "TikTokenizer", "MultimodalTokenizer", "NullTokenizer",
        "NullMultimodalTokenizer", "SFTTokenizer"};
    int i;
    MG_FORWARD(mg_argv_choice("--tokenizer-type", type, megatron,
                              sizeof megatron / sizeof *megatron, &i));
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: --tokenizer-type %s", type);
}

mg_status mg_tokenizer_create(mg_tokenizer **out, const mg_tok_opts *o)
{
    *out = NULL;
    MG_RETURN_IF(!o->type || !*o->type, MG_ERR_ARG, "--tokenizer-type is required");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(o->type, kinds[i].name) != 0) continue;
        mg_tokenizer *tk = mg_calloc(1, sizeof *tk);
        if (!tk) return MG_ERR_NOMEM;
        tk->eod = -1;
        mg_status st = kinds[i].create(tk, o);
        if (st != MG_OK) {
            free(tk);
            return st;
        }
        MG_ASSERT(tk->vt && tk->vt->encode);
        release_loading_memory();
        *out = tk;
        return MG_OK;
    }
    return unknown_type(o->type);
}

void mg_tokenizer_free(mg_tokenizer *tk)
{
    if (!tk) return;
    if (tk->vt && tk->vt->free) tk->vt->free(tk->impl);
    free(tk);
}

int64_t mg_tokenizer_vocab_size(const mg_tokenizer *tk) { return tk->vocab_size; }
int64_t mg_tokenizer_eod(const mg_tokenizer *tk) { return tk->eod; }
const char *mg_tokenizer_describe(const mg_tokenizer *tk) { return tk->describe; }

mg_status mg_ids_push(mg_ids *ids, int64_t id)
{
    MG_FORWARD(MG_GROW(ids->v, ids->cap, ids->n + 1, 64));
    ids->v[ids->n++] = id;
    return MG_OK;
}

void mg_ids_free(mg_ids *ids)
{
    free(ids->v);
    ids->v = NULL;
    ids->n = ids->cap = 0;
}

mg_status mg_encoder_create(mg_encoder **out, const mg_tokenizer *tk)
{
    *out = NULL;
    mg_encoder *e = mg_calloc(1, sizeof *e);
    if (!e) return MG_ERR_NOMEM;
    e->tk = tk;
    if (tk->vt->encoder_create) {
        mg_status st = tk->vt->encoder_create(tk, &e->state);
        if (st != MG_OK) {
            free(e);
            return st;
        }
    }
    *out = e;
    return MG_OK;
}

void mg_encoder_free(mg_encoder *e)
{
    if (!e) return;
    if (e->state && e->tk->vt->encoder_free) e->tk->vt->encoder_free(e->state);
    free(e->fixed);
    free(e);
}

/* ---- UTF-8 ---- */

static int is_cont(uint8_t c) { return (c & 0xC0) == 0x80; }

/* Length of the valid sequence at s[0, n) (n >= 1), 0 if invalid; *sur is set when it is
 * a surrogate's 3-byte form. */
static size_t utf8_seq(const uint8_t *s, size_t n, int *sur)
{
    uint8_t c = s[0];
    *sur = 0;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return n >= 2 && is_cont(s[1]) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || !is_cont(s[1]) || !is_cont(s[2])) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0;
        if (c == 0xED && s[1] >= 0xA0) *sur = 1;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || !is_cont(s[1]) || !is_cont(s[2]) || !is_cont(s[3])) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0;
        if (c == 0xF4 && s[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

/* The bytes of the run of 3-byte characters at s[0, n) led by E1..EC or EE..EF (never an
 * overlong or a surrogate form: most of CJK text), checked with one test per character. */
static size_t three_byte_run(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i + 3 <= n) {
        uint8_t c = s[i];
        if ((uint8_t)(c - 0xE1) > 0xEF - 0xE1 || c == 0xED ||
            ((s[i + 1] ^ 0x80) | (s[i + 2] ^ 0x80)) >= 0x40)
            break;
        i += 3;
    }
    return i;
}

/* Validates s[0, n); *first_sur = offset of the first surrogate form (n if none). */
static mg_status check_utf8(const uint8_t *s, size_t n, size_t *first_sur)
{
    *first_sur = n;
    size_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        size_t run = three_byte_run(s + i, n - i);
        if (run) {
            i += run;
            continue;
        }
        int sur;
        size_t k = utf8_seq(s + i, n - i, &sur);
        MG_RETURN_IF(k == 0, MG_ERR_FORMAT, "invalid UTF-8 at byte %zu", i);
        if (sur && *first_sur == n) *first_sur = i;
        i += k;
    }
    return MG_OK;
}

static unsigned surrogate_at(const uint8_t *s)
{
    return 0xD000u | (unsigned)(s[1] & 0x3F) << 6 | (unsigned)(s[2] & 0x3F);
}

/* Is s[i, n) a surrogate's 3-byte form? (the text is already validated) */
static int is_surrogate(const uint8_t *s, size_t i, size_t n)
{
    return i + 3 <= n && s[i] == 0xED && s[i + 1] >= 0xA0;
}

/* Writes code point cp (>= 0x10000) as 4 bytes. */
static size_t put_astral(uint8_t *o, unsigned cp)
{
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Copies s[0, n) into e->fixed with tiktoken's surrogate replacement; *out_n = length. */
static mg_status replace_surrogates(mg_encoder *e, const uint8_t *s, size_t n, size_t *out_n)
{
    if (e->fixed_cap < n + 1) {
        char *f = mg_realloc(e->fixed, n + 1);
        if (!f) return MG_ERR_NOMEM;
        e->fixed = f;
        e->fixed_cap = n + 1;
    }
    uint8_t *o = (uint8_t *)e->fixed;
    size_t j = 0;
    for (size_t i = 0; i < n;) {
        if (!is_surrogate(s, i, n)) {
            o[j++] = s[i++];
            continue;
        }
        unsigned hi = surrogate_at(s + i);
        if (hi < 0xDC00 && is_surrogate(s, i + 3, n) && surrogate_at(s + i + 3) >= 0xDC00) {
            unsigned lo = surrogate_at(s + i + 3);
            j += put_astral(o + j, 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
            i += 6;
        } else {
            memcpy(o + j, "\xEF\xBF\xBD", 3);
            j += 3;
            i += 3;
        }
    }
    *out_n = j;
    return MG_OK;
}

mg_status mg_encode(mg_encoder *e, const char *text, size_t len, mg_ids *out)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t first_sur;
    MG_FORWARD(check_utf8(s, len, &first_sur));
    if (first_sur < len) {
        MG_RETURN_IF(!e->tk->accepts_lone_surrogates, MG_ERR_FORMAT,
                     "lone surrogate U+%04X at byte %zu (Megatron's tokenizer rejects it)",
                     surrogate_at(s + first_sur), first_sur);
        MG_FORWARD(replace_surrogates(e, s, len, &len));
        text = e->fixed;
    }
    return e->tk->vt->encode(e->tk, e->state, text, len, out);
}

mg_status mg_text_append(mg_text *t, const char *s, size_t len)
{
    if (mg_strbuf_grow(&t->p, &t->cap, t->n + len + 1))
        return mg_error_set(MG_ERR_NOMEM, "out of memory (text of %zu bytes)", t->n + len);
    if (len) memcpy(t->p + t->n, s, len);
    t->n += len;
    t->p[t->n] = '\0';
    return MG_OK;
}

void mg_text_free(mg_text *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}

mg_status mg_tokenizer_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n,
                              mg_text *out)
{
    for (size_t i = 0; i < n; i++)
        MG_RETURN_IF(ids[i] < 0 || ids[i] >= tk->vocab_size, MG_ERR_ARG,
                     "token id %lld at position %zu is outside the vocabulary [0, %lld)",
                     (long long)ids[i], i, (long long)tk->vocab_size);
    MG_RETURN_IF(!tk->vt->decode, MG_ERR_UNSUPPORTED, "not supported yet: decoding %s",
                 tk->describe);
    return tk->vt->decode(tk, ids, n, out);
}
