/* test_hf_tok.c — unit tests for the Hugging Face BPE tokenizers (HuggingFaceTokenizer,
 * GPT2BPETokenizer; byte-level and SentencePiece-style char-initial) and their parts: the
 * byte-level map, the added-token matcher, the normalizers (NFC, Prepend, Replace), the
 * char-initial BPE engine (byte_fallback, unk, fuse_unk), Metaspace and the tokenizer.json
 * loader.
 *
 * Small tokenizer.json files are built here with jansson: the 256 byte tokens (id = byte
 * value) plus a few merges, so the expected ids can be worked out by hand. The real
 * vocabularies of tests/data (unpacked into build/vocab) are checked on a few anchors
 * computed with transformers 5.23 (AutoTokenizer / GPT2TokenizerFast);
 * tests/interop/test_hf_tokenizers.py compares them on large corpora.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/tokenizer.h"
#include "mg/unicode.h"
#include "tok/added_tokens.h"
#include "tok/bpe.h"
#include "tok/byte_level.h"
#include "tok/hf_json.h"
#include "tok/nfc_inert.h"
#include "tok/normalize.h"

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

/* ---- byte-level map ---- */

MG_TEST(hf_byte_level_map)
{
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x00), 0x100);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x0A), 0x10A);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x20), 0x120);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x21), 0x21);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x7F), 0x121);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xA0), 0x142);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xAD), 0x143);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xFF), 0xFF);
    uint8_t all[256], back[512];
    char enc[512];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    size_t n = mg_byte_level_encode(all, 256, enc), m = 0;
    MG_CHECK(t, mg_byte_level_decode(enc, n, back, &m));
    MG_CHECK_EQ_INT(t, m, 256);
    MG_CHECK(t, memcmp(all, back, 256) == 0);
    MG_CHECK(t, !mg_byte_level_decode("\xc5\x84", 2, back, &m));     /* U+0144 */
    MG_CHECK(t, !mg_byte_level_decode("\xe2\x96\x81", 3, back, &m)); /* U+2581 */
    MG_CHECK(t, !mg_byte_level_decode(" ", 1, back, &m));            /* space is not in it */
    MG_CHECK(t, mg_byte_level_decode("\xc4\xa0hi", 4, back, &m) && m == 3 && back[0] == ' ');
}

/* ---- added tokens ---- */

static int find(const mg_added_tokens *a, const char *s, size_t from, size_t *ms, size_t *me,
                int64_t *id)
{
    return mg_added_tokens_find(a, s, strlen(s), from, ms, me, id);
}

MG_TEST(hf_added_tokens_leftmost_longest)
{
    mg_added_token toks[] = {
        {.content = "ab", .len = 2, .id = 1},
        {.content = "abc", .len = 3, .id = 2},
        {.content = "bcd", .len = 3, .id = 3},
        {.content = "<|x|>", .len = 5, .id = 4},
    };
    mg_added_tokens *a;
    MG_CHECK_OK(t, mg_added_tokens_create(&a, toks, 4));
    size_t ms, me;
    int64_t id;
    MG_CHECK(t, find(a, "xabcd", 0, &ms, &me, &id));
    MG_CHECK(t, ms == 1 && me == 4 && id == 2); /* leftmost, then longest: abc, not bcd */
    MG_CHECK(t, !find(a, "xabcd", 4, &ms, &me, &id));
    MG_CHECK(t, find(a, "<|x|<|x|>", 0, &ms, &me, &id) && ms == 4 && me == 9 && id == 4);
    MG_CHECK(t, !find(a, "<|x|", 0, &ms, &me, &id));
    MG_CHECK(t, !find(a, "", 0, &ms, &me, &id));
    MG_CHECK_EQ_INT(t, mg_added_tokens_count(a), 4);
    mg_added_tokens_free(a);
    mg_added_tokens_free(NULL);
}

MG_TEST(hf_added_tokens_flags)
{
    mg_added_token toks[] = {
        {.content = "cat", .len = 3, .id = 7, .single_word = 1},
        {.content = "<m>", .len = 3, .id = 8, .lstrip = 1, .rstrip = 1},
    };
    mg_added_tokens *a;
    MG_CHECK_OK(t, mg_added_tokens_create(&a, toks, 2));
    size_t ms, me;
    int64_t id;
    /* single_word: "concat" and "cats" are rejected, " cat." accepted */
    MG_CHECK(t, find(a, "concat cats cat.", 0, &ms, &me, &id) && ms == 12 && me == 15);
    MG_CHECK(t, !find(a, "_cat", 0, &ms, &me, &id));
    MG_CHECK(t, find(a, "\xc3\xa9" "cat cat", 0, &ms, &me, &id) && ms == 6); /* é is a letter */
    /* lstrip / rstrip swallow whitespace (Unicode White_Space), lstrip not before `from` */
    MG_CHECK(t, find(a, "x \t<m>\n y", 0, &ms, &me, &id) && ms == 1 && me == 8 && id == 8);
    MG_CHECK(t, find(a, "x  <m>", 2, &ms, &me, &id) && ms == 2 && me == 6);
    MG_CHECK(t, find(a, "x\xe3\x80\x80<m>", 0, &ms, &me, &id) && ms == 1); /* U+3000 */
    mg_added_tokens_free(a);
}

/* ---- normalizer ---- */

MG_TEST(hf_normalizer_nfc)
{
    mg_normalizer nz = {.n = 0};
    mg_norm_buf buf = {0};
#if MG_HAVE_UTF8PROC
    const char *out;
    size_t n;
    MG_CHECK_OK(t, mg_normalizer_add(&nz, MG_NORM_NFC));
    const char *ascii = "plain text\n";
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, ascii, strlen(ascii), &out, &n));
    MG_CHECK(t, out == ascii && n == strlen(ascii)); /* no copy */
    const char *dec = "e\xcc\x81t\xc3\xa9"; /* e + U+0301, t, é */
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, dec, strlen(dec), &out, &n));
    MG_CHECK(t, n == 5 && memcmp(out, "\xc3\xa9t\xc3\xa9", 5) == 0);
    const char *nul = "a\0e\xcc\x81";
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, nul, 5, &out, &n));
    MG_CHECK(t, n == 4 && memcmp(out, "a\0\xc3\xa9", 4) == 0);
#else
    MG_CHECK_ERR(t, mg_normalizer_add(&nz, MG_NORM_NFC), MG_ERR_UNSUPPORTED, "utf8proc");
#endif
    mg_norm_buf_free(&buf);
}

/* NFC a segment at a time (between ASCII characters) against utf8proc on the whole text:
 * random mixes of ASCII, combining marks (reordered and composed), precomposed letters,
 * Hangul jamo and syllables, singletons and CJK. Without utf8proc there is no NFC to
 * compare: the normalizer is refused. (The harness registers every MG_TEST line, so the
 * test exists in every build.) */
MG_TEST(hf_normalizer_nfc_segments_equal_whole)
{
#if MG_HAVE_UTF8PROC
    static const char *const parts[] = {
        "e", "a", " ", "\n", "x", "\xcc\x81", "\xcc\x88", "\xcc\xa3", "\xcd\x85", "\xc3\xa9",
        "\xe1\x84\x80", "\xe1\x85\xa1", "\xe1\x86\xa8", "\xea\xb0\x80", "\xe2\x84\xa6",
        "\xe4\xb8\xad", "\xd0\xb8", "\xcc\x86", "\xe0\xa4\x95", "\xe0\xa4\xbc",
        "\xe3\x81\x8b", "\xe3\x82\x99", "\xcd\x84", "\xf0\x9d\x85\x97", "\xf0\x9d\x85\xa5"};
    mg_normalizer nz = {.n = 0};
    mg_norm_buf buf = {0};
    MG_CHECK_OK(t, mg_normalizer_add(&nz, MG_NORM_NFC));
    uint64_t r = 0x9E3779B97F4A7C15ULL;
    char text[800];
    for (int k = 0; k < 3000 && t->failures == 0; k++) {
        size_t n = 0, m = 1 + (size_t)(k % 120);
        for (size_t j = 0; j < m; j++) {
            r = r * 6364136223846793005ULL + 1442695040888963407ULL;
            const char *part = parts[(r >> 33) % (sizeof parts / sizeof *parts)];
            memcpy(text + n, part, strlen(part));
            n += strlen(part);
        }
        utf8proc_uint8_t *want = NULL;
        utf8proc_ssize_t wn = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)n,
                                           &want, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        const char *out;
        size_t on;
        MG_CHECK_OK(t, mg_normalize(&nz, &buf, text, n, &out, &on));
        if (wn < 0 || on != (size_t)wn || memcmp(out, want, on) != 0)
            mg_test_fail(t, __FILE__, __LINE__, "text %d (%zu bytes): NFC differs", k, n);
        free(want);
    }
    mg_norm_buf_free(&buf);
#else
    mg_normalizer nz = {.n = 0};
    MG_CHECK_ERR(t, mg_normalizer_add(&nz, MG_NORM_NFC), MG_ERR_UNSUPPORTED, "utf8proc");
#endif
}

/* The NFC-inert code points (copied without utf8proc): each assigned one >= U+0080, after
 * the first element of every kind of composition whose second element has combining class
 * 0 (Latin, Hangul LV and L, Oriya, Tamil, Kannada, Malayalam, Sinhala, Myanmar, Balinese,
 * Chakma, Grantha) and followed by 'a', is left as it is by utf8proc's NFC; none of the
 * seconds of those compositions is inert. */
MG_TEST(hf_nfc_inert_code_points_stay)
{
#if MG_HAVE_UTF8PROC
    static const uint32_t firsts[] = {'e',    'A',    0xAC00, 0x1100, 0x0B47, 0x0BC6,
                                      0x0CC6, 0x0D46, 0x0DD9, 0x1025, 0x1B05, 0x11131,
                                      0x11347};
    static const uint32_t seconds[] = {0x0301, 0x1161, 0x11A8, 0x0B3E, 0x0BBE, 0x0CD5,
                                       0x0D3E, 0x0DCF, 0x102E, 0x1B35, 0x11127, 0x1133E};
    for (size_t k = 0; k < sizeof seconds / sizeof *seconds; k++)
        MG_CHECK(t, !mg_nfc_inert(seconds[k]));
    size_t bad = 0, inert = 0;
    for (uint32_t cp = 0x80; cp < 0x110000 && bad < 5; cp++) {
        if (!mg_nfc_inert(cp) || utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_CN)
            continue;
        inert++;
        for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++) {
            uint8_t in[16];
            size_t n = mg_utf8_encode(firsts[f], in);
            n += mg_utf8_encode(cp, in + n);
            in[n++] = 'a';
            utf8proc_uint8_t *res = NULL;
            utf8proc_ssize_t m = utf8proc_map(in, (utf8proc_ssize_t)n, &res,
                                              UTF8PROC_STABLE | UTF8PROC_COMPOSE);
            if (m != (utf8proc_ssize_t)n || memcmp(res, in, n) != 0) {
                mg_test_fail(t, __FILE__, __LINE__, "U+%04X after U+%04X: NFC changes it",
                             (unsigned)cp, (unsigned)firsts[f]);
                bad++;
            }
            free(res);
        }
    }
    MG_CHECK(t, inert > 200000); /* CJK, Hangul excluded, most scripts' letters */
#else
    MG_CHECK(t, !mg_nfc_inert('a'));
#endif
}

#define META "\xe2\x96\x81" /* U+2581, SentencePiece's space */

static void check_norm(mg_test_ctx *t, const mg_normalizer *nz, mg_norm_buf *buf,
                       const char *in, const char *want, int line)
{
    const char *out;
    size_t n;
    mg_status st = mg_normalize(nz, buf, in, strlen(in), &out, &n);
    if (st != MG_OK || n != strlen(want) || memcmp(out, want, n) != 0)
        mg_test_fail(t, __FILE__, line, "normalize \"%s\": got \"%.*s\" (status %d)", in,
                     st == MG_OK ? (int)n : 0, st == MG_OK ? out : "", (int)st);
}

MG_TEST(hf_normalizer_prepend_replace)
{
    mg_normalizer nz = {.n = 0};
    mg_norm_buf buf = {0};
    MG_CHECK_OK(t, mg_normalizer_add_prepend(&nz, META, 3));
    MG_CHECK_OK(t, mg_normalizer_add_replace(&nz, " ", 1, 0, META, 3));
    check_norm(t, &nz, &buf, "a b  c", META "a" META "b" META META "c", __LINE__);
    check_norm(t, &nz, &buf, "", "", __LINE__); /* Prepend leaves empty text alone */
    check_norm(t, &nz, &buf, " ", META META, __LINE__);
    /* a literal longer than one byte, matches not overlapping, leftmost first */
    MG_CHECK_OK(t, mg_normalizer_add_replace(&nz, "aa", 2, 0, "b", 1));
    check_norm(t, &nz, &buf, "aaa", META "ba", __LINE__);
    MG_CHECK_ERR(t, mg_normalizer_add_replace(&nz, "", 0, 0, "x", 1), MG_ERR_UNSUPPORTED,
                 "empty pattern");
#if MG_HAVE_ONIG
    /* a regex (Oniguruma), then the deep copy runs the same and outlives the original */
    mg_normalizer cp;
    MG_CHECK_OK(t, mg_normalizer_add_replace(&nz, "[0-9]+", 6, 1, "#", 1));
    MG_CHECK_OK(t, mg_normalizer_copy(&cp, &nz));
    mg_normalizer_free(&nz);
    MG_CHECK_EQ_INT(t, nz.n, 0);
    check_norm(t, &cp, &buf, "x12 y3", META "x#" META "y#", __LINE__);
    mg_normalizer_free(&cp);
#else
    MG_CHECK_ERR(t, mg_normalizer_add_replace(&nz, "[0-9]+", 6, 1, "#", 1), MG_ERR_UNSUPPORTED,
                 "not built with Oniguruma");
    mg_normalizer_free(&nz);
#endif
    mg_normalizer_free(NULL);
    mg_norm_buf_free(&buf);
}

/* ---- char-initial BPE engine ---- */

/* "<unk>" 0, the two byte tokens of U+00E9 1-2, a 3, b 4, ab 5, ▁ 6, ▁ab 7; merges
 * (a, b) then (▁, ab). */
static mg_bpe *char_model(mg_test_ctx *t, int fuse)
{
    static const char *const toks[] = {"<unk>", "<0xC3>", "<0xA9>", "a", "b", "ab", META,
                                       META "ab"};
    mg_bpe *b = NULL;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_PAIR_RANK));
    if (!b) return NULL;
    for (int i = 0; i < 8; i++)
        MG_CHECK_OK(t, mg_bpe_add_token(b, (const uint8_t *)toks[i], strlen(toks[i]), i, 0));
    MG_CHECK_OK(t, mg_bpe_add_merge(b, (const uint8_t *)"a", 1, (const uint8_t *)"b", 1));
    MG_CHECK_OK(t, mg_bpe_add_merge(b, (const uint8_t *)META, 3, (const uint8_t *)"ab", 2));
    MG_CHECK_OK(t, mg_bpe_set_char_symbols(b, 1, 0, fuse));
    MG_CHECK_OK(t, mg_bpe_finalize(b, 0)); /* single bytes need not be tokens */
    return b;
}

static void check_chars(mg_test_ctx *t, const mg_bpe *b, mg_bpe_cache *c, const char *s,
                        const int64_t *want, size_t n, int line)
{
    mg_ids ids = {0};
    for (int round = 0; round < 2; round++) { /* the second one from the cache */
        ids.n = 0;
        mg_status st = mg_bpe_encode_chars(b, c, (const uint8_t *)s, strlen(s), &ids);
        int ok = st == MG_OK && ids.n == n;
        for (size_t i = 0; ok && i < n; i++) ok = ids.v[i] == want[i];
        if (!ok) mg_test_fail(t, __FILE__, line, "chars \"%.40s\" round %d", s, round);
    }
    mg_ids_free(&ids);
}

#define CHARS(b, c, s, ...)                                                               \
    do {                                                                                   \
        static const int64_t w_[] = {__VA_ARGS__};                                         \
        check_chars(t, (b), (c), (s), w_, sizeof w_ / sizeof w_[0], __LINE__);             \
    } while (0)

MG_TEST(hf_char_bpe_engine)
{
    mg_bpe *b = char_model(t, 1), *nf = char_model(t, 0);
    mg_bpe_cache *c = NULL, *cn = NULL;
    if (!b || !nf) goto out;
    MG_CHECK_OK(t, mg_bpe_cache_create(&c, b));
    MG_CHECK_OK(t, mg_bpe_cache_create(&cn, nf));
    CHARS(b, c, "ab", 5);
    CHARS(b, c, META "ab" META "a", 7, 6, 3);
    CHARS(b, c, "\xc3\xa9", 1, 2);            /* U+00E9: byte fallback */
    CHARS(b, c, "xyab", 0, 5);                 /* x, y: no <0x78>/<0x79>: one fused unk */
    CHARS(nf, cn, "xyab", 0, 0, 5);            /* without fuse_unk: one unk each */
    CHARS(b, c, "xy\xc3\xa9", 1, 2, 0);        /* HF: the pending unk after byte tokens */
    CHARS(b, c, "\xc3\xa8", 0);                /* U+00E8: <0xA8> missing: unk */
    /* 40 pieces "ab" = 80 symbols: the heap path gives the same as the linear one */
    char lng[200] = "";
    for (int i = 0; i < 30; i++) strcat(lng, META "ab");
    CHARS(b, c, lng, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
          7, 7, 7, 7, 7);
    /* a byte-level model needs every single byte and has no char entry point */
    mg_bpe *bl = NULL;
    mg_bpe_cache *cb = NULL;
    mg_ids ids = {0};
    MG_CHECK_OK(t, mg_bpe_create(&bl, MG_BPE_PAIR_RANK));
    MG_CHECK_ERR(t, mg_bpe_finalize(bl, 0), MG_ERR_FORMAT, "single byte 0x00");
    mg_bpe_free(bl);
    MG_CHECK_OK(t, mg_bpe_create(&bl, MG_BPE_PAIR_RANK));
    for (int i = 0; i < 256; i++) {
        uint8_t byte = (uint8_t)i;
        MG_CHECK_OK(t, mg_bpe_add_token(bl, &byte, 1, i, 0));
    }
    MG_CHECK_OK(t, mg_bpe_finalize(bl, 0));
    MG_CHECK_OK(t, mg_bpe_cache_create(&cb, bl));
    MG_CHECK_ERR(t, mg_bpe_encode_chars(bl, cb, (const uint8_t *)"ab", 2, &ids), MG_ERR_ARG,
                 "byte-level");
    mg_bpe_cache_free(cb);
    mg_bpe_free(bl);
    MG_CHECK_OK(t, mg_bpe_create(&bl, MG_BPE_TOKEN_RANK));
    MG_CHECK_ERR(t, mg_bpe_set_char_symbols(bl, 1, -1, 1), MG_ERR_ARG, "PAIR_RANK");
    mg_bpe_free(bl);
    mg_ids_free(&ids);
out:
    mg_bpe_cache_free(c);
    mg_bpe_cache_free(cn);
    mg_bpe_free(b);
    mg_bpe_free(nf);
}

/* ---- hand-made tokenizer.json ---- */

/* Byte-level form of a raw string. */
static json_t *bl_string(const char *raw)
{
    char enc[256];
    size_t n = mg_byte_level_encode((const uint8_t *)raw, strlen(raw), enc);
    return json_stringn(enc, n);
}

static void add_vocab(json_t *vocab, const char *raw, int id)
{
    json_t *s = bl_string(raw);
    json_object_set_new(vocab, json_string_value(s), json_integer(id));
    json_decref(s);
}

/* Merges of the small model: h e, l l, he ll, hell o, " " w, a b, b c. */
static const char *const merges[][2] = {{"h", "e"},   {"l", "l"},    {"he", "ll"}, {"hell", "o"},
                                         {" ", "w"},   {"a", "b"},    {"b", "c"}};

static json_t *merge_entry(int i, int pair_form)
{
    json_t *l = bl_string(merges[i][0]), *r = bl_string(merges[i][1]);
    json_t *m;
    if (pair_form) {
        m = json_pack("[OO]", l, r);
    } else {
        char buf[64];
        snprintf(buf, sizeof buf, "%s %s", json_string_value(l), json_string_value(r));
        m = json_string(buf);
    }
    json_decref(l);
    json_decref(r);
    return m;
}

/* A tokenizer.json: 256 byte tokens (id = byte), he=256 ll=257 hell=258 hello=259
 * " w"=260 ab=261 bc=262 abc=263 (reachable only whole: no merge makes it). */
static json_t *small_model(int pair_form)
{
    json_t *vocab = json_object();
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        char enc[4];
        enc[mg_byte_level_encode(&byte, 1, enc)] = 0; /* never NUL: 0x00 maps to U+0100 */
        json_object_set_new(vocab, enc, json_integer(b));
    }
    const char *extra[] = {"he", "ll", "hell", "hello", " w", "ab", "bc", "abc"};
    for (int i = 0; i < 8; i++) add_vocab(vocab, extra[i], 256 + i);
    json_t *m = json_array();
    for (int i = 0; i < 7; i++) json_array_append_new(m, merge_entry(i, pair_form));
    json_t *model = json_pack("{s:s, s:o, s:o, s:b, s:n}", "type", "BPE", "vocab", vocab,
                              "merges", m, "ignore_merges", 0, "dropout");
    return json_pack("{s:s, s:o, s:[], s:n, s:{s:s, s:b, s:b, s:b}, s:n}", "version", "1.0",
                     "model", model, "added_tokens", "normalizer", "pre_tokenizer", "type",
                     "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1,
                     "post_processor");
}

static json_t *added(const char *content, int id, int single_word, int lstrip, int rstrip,
                     int normalized, int special)
{
    return json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", id, "content", content,
                     "single_word", single_word, "lstrip", lstrip, "rstrip", rstrip,
                     "normalized", normalized, "special", special);
}

/* Writes DIR/tokenizer.json (+ tokenizer_config.json if config) under the test dir. */
static const char *write_dir(mg_test_ctx *t, const char *name, json_t *tok, json_t *config)
{
    char rel[300];
    snprintf(rel, sizeof rel, "%s", name);
    char *dir = strdup(mg_test_path(t, rel));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    MG_CHECK(t, system(cmd) == 0);
    snprintf(rel, sizeof rel, "%s/tokenizer.json", name);
    char *s = json_dumps(tok, JSON_COMPACT);
    mg_test_write_file(t, rel, s, strlen(s));
    free(s);
    json_decref(tok);
    if (config) {
        snprintf(rel, sizeof rel, "%s/tokenizer_config.json", name);
        s = json_dumps(config, JSON_COMPACT);
        mg_test_write_file(t, rel, s, strlen(s));
        free(s);
        json_decref(config);
    }
    static char keep[8][300];
    static int k;
    char *out = keep[k++ % 8];
    snprintf(out, 300, "%s", dir);
    free(dir);
    return out;
}

static mg_status open_hf(mg_tokenizer **tk, const char *dir, int no_special)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "HuggingFaceTokenizer";
    o.model = dir;
    o.hf_no_include_special = no_special;
    return mg_tokenizer_create(tk, &o);
}

/* Encodes text and compares with the expected ids (terminated by -1). */
static void check_ids(mg_test_ctx *t, const mg_tokenizer *tk, const char *text, size_t len,
                      const int64_t *want, int line)
{
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    mg_status st = mg_encoder_create(&e, tk);
    if (st == MG_OK) st = mg_encode(e, text, len, &ids);
    size_t n = 0;
    while (want[n] >= 0) n++;
    int ok = st == MG_OK && ids.n == n;
    for (size_t i = 0; ok && i < n; i++) ok = ids.v[i] == want[i];
    if (!ok) {
        char got[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < ids.n && used < 400; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, " %lld",
                                     (long long)ids.v[i]);
        mg_test_fail(t, __FILE__, line, "ids of \"%.60s\": got [%s] (status %d: %s)", text,
                     got, (int)st, st ? mg_last_error() : "");
    }
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

#define IDS(tk, text, ...)                                                                 \
    do {                                                                                   \
        static const int64_t want_[] = {__VA_ARGS__, -1};                                  \
        check_ids(t, (tk), (text), strlen(text), want_, __LINE__);                         \
    } while (0)

MG_TEST(hf_small_merges_both_forms)
{
    for (int form = 0; form < 2; form++) {
        mg_tokenizer *tk = NULL;
        const char *dir = write_dir(t, form ? "pairs" : "strings", small_model(form), NULL);
        MG_CHECK_OK(t, open_hf(&tk, dir, 0));
        if (!tk) continue;
        IDS(tk, "hello world", 259, 260, 'o', 'r', 'l', 'd');
        IDS(tk, "abc", 261, 'c'); /* merges only: "abc" needs ab+c, which is not listed */
        IDS(tk, "hell", 258);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 264);
        MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), -1);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_ignore_merges)
{
    json_t *j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "ignore_merges", json_true());
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "im", j, NULL), 0));
    if (tk) {
        IDS(tk, "abc", 263); /* the whole piece is a token */
        IDS(tk, "abcab", 261, 'c', 261);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_added_tokens_and_template)
{
    json_t *j = small_model(0);
    json_t *at = json_object_get(j, "added_tokens");
    json_array_append_new(at, added("<s>", 264, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("</s>", 265, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<m>", 266, 0, 1, 1, 0, 1));
    json_array_append_new(at, added("word", 267, 1, 0, 0, 1, 0));
    json_object_set_new(j, "post_processor", json_pack(
        "{s:s, s:[{s:{s:s,s:i}}, {s:{s:s,s:i}}, {s:{s:s,s:i}}], s:{s:{s:s,s:[i],s:[s]}, "
        "s:{s:s,s:[i],s:[s]}}}", "type", "TemplateProcessing", "single",
        "SpecialToken", "id", "<s>", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
        "SpecialToken", "id", "</s>", "type_id", 0, "special_tokens",
        "<s>", "id", "<s>", "ids", 264, "tokens", "<s>",
        "</s>", "id", "</s>", "ids", 265, "tokens", "</s>"));
    json_t *cfg = json_pack("{s:s, s:s, s:b}", "eos_token", "</s>", "bos_token", "<new>",
                            "add_bos_token", 1);
    const char *dir = write_dir(t, "added", j, cfg);
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, dir, 0));
    if (tk) {
        IDS(tk, "hello", 264, 259, 265);
        IDS(tk, "", 264, 265);
        IDS(tk, "he <m> hell", 264, 256, 266, 258, 265); /* lstrip+rstrip eat the spaces */
        IDS(tk, "<s>he</s>", 264, 264, 256, 265, 265);
        IDS(tk, "words word.", 264, 'w', 'o', 'r', 'd', 's', ' ', 267, '.', 265);
        IDS(tk, "<new>", 264, 268, 265); /* bos_token of the config became an added token */
        MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 265);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 264 + 4 + 1);
        mg_tokenizer_free(tk);
    }
    MG_CHECK_OK(t, open_hf(&tk, dir, 1)); /* --tokenizer-hf-no-include-special-tokens */
    if (tk) {
        IDS(tk, "<s>hello", 264, 259);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_added_ids_assigned_like_tokenizers)
{
    /* tokenizers ignores the ids written in added_tokens: a new content gets the next id
     * after the vocabulary, a content of the vocabulary keeps its vocabulary id */
    json_t *j = small_model(0);
    json_t *at = json_object_get(j, "added_tokens");
    json_array_append_new(at, added("<x>", 999, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("hello", 5, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<y>", 3, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<x>", 7, 0, 0, 0, 0, 1)); /* duplicate: ignored */
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "ids", j, NULL), 0));
    if (tk) {
        IDS(tk, "<x><y>hellohe", 264, 265, 259, 256);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 266);
        mg_tokenizer_free(tk);
    }
}

/* small_model with a Split on `pattern` ("Regex" or "String" `kind`) then a ByteLevel
 * with add_prefix_space, written to directory `name`. */
static const char *split_then_prefix_space(mg_test_ctx *t, const char *name, const char *kind,
                                           const char *pattern)
{
    json_t *j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack(
        "{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]}", "type", "Sequence",
        "pretokenizers", "type", "Split", "pattern", kind, pattern, "behavior",
        "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 1, "use_regex", 0));
    return write_dir(t, name, j, NULL);
}

/* every piece of the Split gets a space: " he" " 1" " w"; frees tk */
static void check_prefix_space(mg_test_ctx *t, mg_tokenizer *tk)
{
    if (!tk) return;
    IDS(tk, "he1w", ' ', 256, ' ', '1', 260);
    IDS(tk, " w", 260);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_small_prefix_space_and_splits)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, split_then_prefix_space(t, "str", "String", "1"), 0));
    check_prefix_space(t, tk);
    tk = NULL;
#if MG_HAVE_ONIG
    MG_CHECK_OK(t, open_hf(&tk, split_then_prefix_space(t, "re", "Regex", "[0-9]"), 0));
    check_prefix_space(t, tk);
#else
    MG_CHECK_ERR(t, open_hf(&tk, split_then_prefix_space(t, "re", "Regex", "[0-9]"), 0),
                 MG_ERR_UNSUPPORTED, "not built with Oniguruma");
    MG_CHECK(t, tk == NULL);
#endif
}

MG_TEST(hf_small_normalized_added_token_after_nfc)
{
    json_t *j = small_model(0);
    json_object_set_new(j, "normalizer", json_pack("{s:s, s:[{s:s}]}", "type", "Sequence",
                                                   "normalizers", "type", "NFC"));
    /* "éx" (precomposed) as a normalized added token also matches the decomposed form */
    json_array_append_new(json_object_get(j, "added_tokens"),
                          added("\xc3\xa9x", 264, 0, 0, 0, 1, 0));
    mg_tokenizer *tk = NULL;
#if !MG_HAVE_UTF8PROC
    MG_CHECK_ERR(t, open_hf(&tk, write_dir(t, "nfc", j, NULL), 0), MG_ERR_UNSUPPORTED,
                 "not built with utf8proc");
    MG_CHECK(t, tk == NULL);
#else
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "nfc", j, NULL), 0));
    if (tk) {
        IDS(tk, "he\xcc\x81x", 'h', 264);
        IDS(tk, "\xc3\xa9xhe", 264, 256);
        IDS(tk, "\xc3\xa9", 0xC3, 0xA9); /* bytes of é, not the token "é" (id 0xE9) */
        mg_tokenizer_free(tk);
    }
#endif
}

/* ---- SentencePiece-style (char-initial) tokenizer.json ---- */

/* The char_model vocabulary plus <s> 1 / </s> 2 (and <unk> 0) as added tokens, BOS
 * template; normalizer and pre_tokenizer as given (NULL = JSON null). */
static json_t *spm_model(json_t *normalizer, json_t *pre)
{
    json_t *vocab = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "<unk>", 0,
                              "<s>", 1, "</s>", 2, "<0xC3>", 3, "<0xA9>", 4, "a", 5, "b", 6,
                              "ab", 7, META, 8, META "ab", 9);
    json_t *model = json_pack("{s:s, s:o, s:[s, s], s:b, s:s, s:b}", "type", "BPE", "vocab",
                              vocab, "merges", "a b", META " ab", "byte_fallback", 1,
                              "unk_token", "<unk>", "fuse_unk", 1);
    json_t *post = json_pack("{s:s, s:[{s:{s:s}}, {s:{s:s}}], s:{s:{s:[i]}}}", "type",
                             "TemplateProcessing", "single", "SpecialToken", "id", "<s>",
                             "Sequence", "id", "A", "special_tokens", "<s>", "ids", 1);
    return json_pack("{s:o, s:[o, o, o], s:o, s:o, s:o}", "model", model, "added_tokens",
                     added("<unk>", 0, 0, 0, 0, 0, 1), added("<s>", 1, 0, 0, 0, 0, 1),
                     added("</s>", 2, 0, 0, 0, 0, 1), "normalizer",
                     normalizer ? normalizer : json_null(), "pre_tokenizer",
                     pre ? pre : json_null(), "post_processor", post);
}

static json_t *metaspace(const char *scheme, int split)
{
    return json_pack("{s:s, s:s, s:s, s:b}", "type", "Metaspace", "replacement", META,
                     "prepend_scheme", scheme, "split", split);
}

static mg_tokenizer *open_spm(mg_test_ctx *t, const char *name, json_t *j, json_t *config)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, name, j, config), 0));
    return tk;
}

MG_TEST(hf_spm_prepend_replace_normalizer)
{
    json_t *nz = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}", "type", "Sequence",
                           "normalizers", "type", "Prepend", "prepend", META, "type",
                           "Replace", "pattern", "String", " ", "content", META);
    mg_tokenizer *tk = open_spm(t, "spm_norm", spm_model(nz, NULL), NULL);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 10);
    IDS(tk, "ab ab", 1, 9, 9);
    IDS(tk, "ab<s>ab", 1, 9, 1, 9); /* Prepend on each gap between added tokens */
    IDS(tk, "x\xc3\xa9", 1, 8, 3, 4, 0); /* unk x pending past the byte-fallback tokens */
    IDS(tk, "", 1);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_spm_metaspace_schemes)
{
    mg_tokenizer *tk = open_spm(t, "spm_first", spm_model(NULL, metaspace("first", 1)), NULL);
    if (tk) {
        IDS(tk, "ab ab", 1, 9, 9);
        IDS(tk, "ab<s>ab", 1, 9, 1, 7); /* "first": only at offset 0 of the text */
        IDS(tk, " ab", 1, 9);           /* the space becomes the replacement: no second one */
        IDS(tk, "<s>ab", 1, 1, 7);
        mg_tokenizer_free(tk);
    }
    tk = open_spm(t, "spm_always", spm_model(NULL, metaspace("always", 0)), NULL);
    if (tk) {
        IDS(tk, "ab<s>ab", 1, 9, 1, 9);
        IDS(tk, "ab  ab", 1, 9, 8, 9);
        mg_tokenizer_free(tk);
    }
    tk = open_spm(t, "spm_never", spm_model(NULL, metaspace("never", 1)), NULL);
    if (tk) {
        IDS(tk, "ab ab", 1, 7, 9);
        IDS(tk, "ab" META, 1, 7, 8);
        mg_tokenizer_free(tk);
    }
}

/* Pieces are cut before U+2581 runs only where no token spans the cut: with a token "b▁"
 * (merged first), "▁ab▁ab" is not "▁ab" + "▁ab". */
MG_TEST(hf_spm_no_cut_inside_a_token)
{
    json_t *nz = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:{s:s}, s:s}]}", "type", "Sequence",
                           "normalizers", "type", "Prepend", "prepend", META, "type",
                           "Replace", "pattern", "String", " ", "content", META);
    json_t *j = spm_model(nz, NULL);
    json_t *model = json_object_get(j, "model");
    json_object_set_new(json_object_get(model, "vocab"), "b" META, json_integer(10));
    json_array_insert_new(json_object_get(model, "merges"), 0, json_string("b " META));
    mg_tokenizer *tk = open_spm(t, "spm_nocut", j, NULL);
    if (!tk) return;
    IDS(tk, "ab ab", 1, 8, 5, 10, 7);
    IDS(tk, "a ab", 1, 8, 5, 9); /* "a" before the run: cut there */
    mg_tokenizer_free(tk);
}

/* tokenizer_class LlamaTokenizer (legacy false): transformers' own pipeline replaces the
 * file's: Metaspace("first", no split), no normalizer, no unk (unknown characters vanish,
 * and the characters around them then merge). */
MG_TEST(hf_spm_llama_class_pipeline)
{
    json_t *nz = json_pack("{s:s, s:s}", "type", "Prepend", "prepend", "zz");
    json_t *cfg = json_pack("{s:s, s:b, s:s}", "tokenizer_class", "LlamaTokenizer", "legacy", 0,
                            "eos_token", "</s>");
    mg_tokenizer *tk = open_spm(t, "spm_llama", spm_model(nz, NULL), cfg);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 2);
    IDS(tk, "ab<s>ab", 1, 9, 1, 7);
    IDS(tk, "xab", 1, 9);
    mg_tokenizer_free(tk);
}

/* ---- refusals and malformed files ---- */

static void expect_fail(mg_test_ctx *t, const char *name, json_t *j, mg_status st,
                        const char *sub, int line)
{
    const char *dir = write_dir(t, name, j, NULL);
    mg_tokenizer *tk = NULL;
    mg_status got = open_hf(&tk, dir, 0);
    if (got != st || !strstr(mg_last_error(), sub) || !strstr(mg_last_error(), dir))
        mg_test_fail(t, __FILE__, line, "%s: expected %d with \"%s\" and the path, got %d: %s",
                     name, (int)st, sub, (int)got, mg_last_error());
    mg_tokenizer_free(tk);
}

MG_TEST(hf_refuses_unsupported_features)
{
    json_t *j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "byte_fallback", json_true());
    expect_fail(t, "bf", j, MG_ERR_UNSUPPORTED,
                "not supported yet: BPE byte_fallback with a ByteLevel pre-tokenizer", __LINE__);
    j = small_model(0);
    json_object_set_new(j, "normalizer", json_pack("{s:s}", "type", "ByteLevel"));
    expect_fail(t, "bln", j, MG_ERR_UNSUPPORTED, "not supported yet: normalizer ByteLevel",
                __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer",
                        json_pack("{s:s, s:[{s:s, s:s}, {s:s}]}", "type", "Sequence",
                                  "pretokenizers", "type", "Metaspace", "replacement", "_",
                                  "type", "ByteLevel"));
    expect_fail(t, "ms", j, MG_ERR_UNSUPPORTED,
                "not supported yet: a pre-tokenizer after Metaspace", __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack("{s:s}", "type", "UnicodeScripts"));
    expect_fail(t, "scripts", j, MG_ERR_UNSUPPORTED,
                "not supported yet: pre_tokenizer UnicodeScripts", __LINE__);
    j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "type", json_string("WordLevel"));
    expect_fail(t, "wl", j, MG_ERR_UNSUPPORTED, "not supported yet: model type WordLevel",
                __LINE__); /* Unigram: test_hf_unigram.c */
    j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "continuing_subword_prefix",
                        json_string("##"));
    expect_fail(t, "csp", j, MG_ERR_UNSUPPORTED, "continuing_subword_prefix", __LINE__);
}

MG_TEST(hf_rejects_malformed_files)
{
    json_t *j = small_model(0);
    json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                          json_string("a b c"));
    expect_fail(t, "m3", j, MG_ERR_FORMAT, "model.merges[7]", __LINE__);
    j = small_model(0);
    json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                          json_string("x y")); /* "xy" is not a token */
    expect_fail(t, "mxy", j, MG_ERR_FORMAT, "model.merges[7]", __LINE__);
    /* the merges go to the model in batches: the error names the merge, wherever it is */
    j = small_model(0);
    json_t *ms = json_object_get(json_object_get(j, "model"), "merges");
    for (int i = 0; i < 150; i++) json_array_append_new(ms, json_string("h e")); /* dups */
    json_array_append_new(ms, json_string("x y"));
    expect_fail(t, "mbatch", j, MG_ERR_FORMAT, "model.merges[157]: merge \"x y\": merged",
                __LINE__);
    /* ... and the first bad one is named: a queued merge before a merge that is not
     * byte-level (U+4E00 is not a byte's character) and names no token */
    j = small_model(0);
    ms = json_object_get(json_object_get(j, "model"), "merges");
    json_array_append_new(ms, json_string("x y"));
    json_array_append_new(ms, json_string("\xe4\xb8\x80 h"));
    expect_fail(t, "morder", j, MG_ERR_FORMAT, "model.merges[7]", __LINE__);
    j = small_model(0);
    ms = json_object_get(json_object_get(j, "model"), "merges");
    json_array_append_new(ms, json_string("\xe4\xb8\x80 h"));
    expect_fail(t, "mnotbl", j, MG_ERR_FORMAT,
                "model.merges[7] uses a token that is not in the vocabulary", __LINE__);
    j = small_model(0);
    json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"), "zz",
                        json_string("1"));
    expect_fail(t, "vid", j, MG_ERR_FORMAT, "model.vocab[\"zz\"]", __LINE__);
    j = small_model(0);
    json_object_del(j, "model");
    expect_fail(t, "nomodel", j, MG_ERR_FORMAT, "missing \"model\"", __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack("{s:s, s:{s:s}, s:s}", "type", "Split",
                                                      "pattern", "Regex", "x", "behavior",
                                                      "Sideways"));
    expect_fail(t, "beh", j, MG_ERR_FORMAT, "Split behavior \"Sideways\"", __LINE__);
    j = small_model(0);
    json_array_append_new(json_object_get(j, "added_tokens"), json_pack("{s:s}", "content", "x"));
    expect_fail(t, "atok", j, MG_ERR_FORMAT, "added_tokens[0]", __LINE__);
    /* not JSON at all: the message has the file, line and column */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", mg_test_path(t, "bad"));
    MG_CHECK(t, system(cmd) == 0);
    const char *text = "{\"model\": [1,\n  2";
    mg_test_write_file(t, "bad/tokenizer.json", text, strlen(text));
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, open_hf(&tk, mg_test_path(t, "bad"), 0), MG_ERR_FORMAT,
                 "tokenizer.json:2:");
    MG_CHECK_ERR(t, open_hf(&tk, mg_test_path(t, "missing"), 0), MG_ERR_ARG, "not a directory");
}

MG_TEST(hf_desc_parse_from_memory)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    MG_CHECK_ERR(t, mg_hf_desc_parse(&d, "[]", 2, "mem.json"), MG_ERR_FORMAT,
                 "mem.json: top level is not a JSON object");
    mg_hf_desc_free(&d);
    mg_hf_desc_init(&d);
    const char *s = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\",\"a\"]]},"
                    "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}";
    MG_CHECK_OK(t, mg_hf_desc_parse(&d, s, strlen(s), "mem.json"));
    MG_CHECK_EQ_INT(t, d.n_vocab, 1);
    MG_CHECK_EQ_INT(t, d.n_merges, 1);
    MG_CHECK_EQ_INT(t, d.n_pre, 1);
    MG_CHECK(t, d.pre[0].add_prefix_space == 1 && d.pre[0].use_regex == 1); /* HF defaults */
    mg_hf_desc_free(&d);
}

/* ---- real vocabularies (anchors from transformers 5.23) ---- */

static mg_status open_real(mg_tokenizer **tk, const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/hf/%s", mg_test_vocab_dir(), name);
    return open_hf(tk, dir, 0);
}

MG_TEST(hf_real_llama3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "llama3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 128256);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 128001);
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 9906, 1917, 83739, 8862, 728, 428,
        91, 29, 220, 128000, 87);
    IDS(tk, " Vi\xe1\xbb\x87t", 101798); /* needs ignore_merges */
    mg_tokenizer_free(tk);
}

MG_TEST(hf_real_qwen3)
{
    mg_tokenizer *tk = NULL;
#if !MG_HAVE_UTF8PROC /* its normalizer is NFC */
    MG_CHECK_ERR(t, open_real(&tk, "qwen3"), MG_ERR_UNSUPPORTED, "not built with utf8proc");
    MG_CHECK(t, tk == NULL);
#else
    MG_CHECK_OK(t, open_real(&tk, "qwen3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 151669);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 151645);
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 9707, 1879, 220, 151643, 82639,
        7265, 3575, 4326, 91, 29, 87);
    mg_tokenizer_free(tk);
#endif
}

MG_TEST(hf_real_deepseek_v3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "deepseek_v3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 128815);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 1);
    /* transformers 5 loads it as TokenizersBackend: no BOS although add_bos_token is true */
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 19923, 2058, 818, 94, 523, 2154,
        2067, 94, 32, 818, 94, 8277, 19704, 19053, 94, 32, 90);
    mg_tokenizer_free(tk);
}

/* transformers 5 rebuilds LlamaTokenizer: Metaspace(always: legacy true), no normalizer,
 * no unk token, byte_fallback; BOS from the post-processor. */
MG_TEST(hf_real_llama2)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "llama2"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 32000);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 2);
    MG_CHECK(t, strstr(mg_tokenizer_describe(tk), "Metaspace(always, split=0)") != NULL);
    IDS(tk, "Hello world", 1, 22557, 1526);
    IDS(tk, " Hi<s>x </s>\n\xc3\xa9\xf0\x9f\x98\x80\xea\x99\xae", 1, 15359, 1, 1318, 28705,
        2, 28705, 13, 28797, 30575, 237, 156, 177);
    IDS(tk, "<bos>a  b<end_of_turn>\t\t\xe2\x96\x81z", 1, 523, 28726, 385, 28767, 28708,
        28705, 287, 28789, 416, 28730, 1009, 28730, 499, 28767, 12, 12, 686);
    mg_tokenizer_free(tk);
}

/* GemmaTokenizer: Replace(" " -> "▁"), Split(" "), byte_fallback, unk; vocab_size 262145:
 * tokenizer.json's 262144 + <image_soft_token> (an added token outside the vocabulary). */
MG_TEST(hf_real_gemma3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "gemma3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 262145);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 106);
    IDS(tk, "Hello world", 2, 9259, 1902);
    IDS(tk, " Hi<s>x </s>\n\xc3\xa9\xf0\x9f\x98\x80\xea\x99\xae", 2, 18428, 203, 236781,
        236743, 212, 107, 236859, 242398, 472, 391, 412);
    IDS(tk, "<bos>a  b<end_of_turn>\t\t\xe2\x96\x81z", 2, 2, 236746, 138, 236763, 106,
        255969, 904);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_real_gpt2)
{
    char vocab[512], merges_path[512];
    snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    snprintf(merges_path, sizeof merges_path, "%s/gpt2/gpt2-merges.txt", mg_test_vocab_dir());
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "GPT2BPETokenizer";
    o.vocab_file = vocab;
    o.merge_file = merges_path;
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 50257);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 50256);
    IDS(tk, "<|endoftext|>hi <|endoftext|> Hello<|endoftext|", 50256, 5303, 220, 50256, 18435,
        27, 91, 437, 1659, 5239, 91);
    IDS(tk, "Hello world", 15496, 995);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_gpt2_merges_file_errors)
{
    char vocab[512];
    snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    const char *text = "#version: 0.2\n\xc4\xa0 t\nabc\n";
    const char *bad = mg_test_write_file(t, "merges.txt", text, strlen(text));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "GPT2BPETokenizer";
    o.vocab_file = vocab;
    o.merge_file = bad;
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "merges.txt:3: a merge must");
    o.merge_file = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--merge-file");
}
