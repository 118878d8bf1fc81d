/* test_spm.c — SentencePiece tokenizers (tok_spm.c, spm_*.c): the proto2 reader, Unigram
 * Viterbi (scores, unk fusion, byte fallback, user-defined symbols), BPE (score order,
 * leftmost ties, UNUSED resegmentation, the long-span cut's pair filter), WORD and CHAR,
 * the normalizer options, SentencePiece's
 * own test models (tests/data), Megatron's vocab_size/eod, and load errors. Tiny models are written here
 * with a small protobuf writer; every expected id list was checked against sentencepiece
 * 0.2.3's encode_as_ids on the same model.
 */
#include <stdlib.h>

#include "harness.h"
#include "mg/file.h"
#include "mg/tokenizer.h"
#include "tok/spm_proto.h"

/* ---- a protobuf writer ---- */

typedef struct {
    uint8_t v[1 << 16];
    size_t n;
} pbuf;

static void put_varint(pbuf *b, uint64_t x)
{
    do {
        b->v[b->n++] = (uint8_t)((x & 0x7F) | (x > 0x7F ? 0x80 : 0));
        x >>= 7;
    } while (x);
}

static void put_bytes(pbuf *b, unsigned field, const void *s, size_t n)
{
    put_varint(b, field << 3 | 2);
    put_varint(b, n);
    memcpy(b->v + b->n, s, n);
    b->n += n;
}

static void put_int(pbuf *b, unsigned field, uint64_t x)
{
    put_varint(b, field << 3);
    put_varint(b, x);
}

static void put_piece(pbuf *b, const char *s, float score, int type)
{
    pbuf pc = {.n = 0};
    uint32_t u;
    memcpy(&u, &score, 4);
    put_bytes(&pc, 1, s, strlen(s));
    pc.v[pc.n++] = 2 << 3 | 5;
    for (int i = 0; i < 4; i++) pc.v[pc.n++] = (uint8_t)(u >> (8 * i));
    if (type != SPM_NORMAL) put_int(&pc, 3, (uint64_t)type);
    put_bytes(b, 1, pc.v, pc.n);
}

typedef struct {
    const char *s;
    float score;
    int type;
} piece_def;

#define SP "\xe2\x96\x81"

/* Writes a model: pieces, TrainerSpec {model_type, byte_fallback (adds the 256 byte
 * pieces)}, NormalizerSpec {name "identity", remove_extra_whitespaces}. */
static const char *write_model(mg_test_ctx *t, const char *name, const piece_def *p, size_t n,
                               int model_type, int byte_fallback, int remove_ws)
{
    static pbuf b;
    b.n = 0;
    for (size_t i = 0; i < n; i++) put_piece(&b, p[i].s, p[i].score, p[i].type);
    for (int c = 0; byte_fallback && c < 256; c++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", c);
        put_piece(&b, s, 0, SPM_BYTE);
    }
    pbuf ts = {.n = 0}, ns = {.n = 0};
    put_int(&ts, 3, (uint64_t)model_type);
    put_int(&ts, 35, (uint64_t)byte_fallback);
    put_int(&ts, 999, 5); /* unknown field: skipped */
    put_bytes(&ns, 1, "identity", 8);
    put_int(&ns, 4, (uint64_t)remove_ws);
    put_bytes(&b, 2, ts.v, ts.n);
    put_bytes(&b, 3, ns.v, ns.n);
    return mg_test_write_file(t, name, b.v, b.n);
}

static mg_tokenizer *open_type(mg_test_ctx *t, const char *type, const char *path)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = type;
    o.model = path;
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    return tk;
}

/* Encodes text and compares with the n expected ids. */
static void check_ids(mg_test_ctx *t, mg_tokenizer *tk, const char *text, const int64_t *want,
                      size_t n)
{
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    MG_CHECK_OK(t, mg_encode(e, text, strlen(text), &ids));
    int same = ids.n == n;
    for (size_t i = 0; same && i < n; i++) same = ids.v[i] == want[i];
    if (!same) {
        char got[512] = "";
        for (size_t i = 0, o = 0; i < ids.n && o < 480; i++)
            o += (size_t)snprintf(got + o, sizeof got - o, " %lld", (long long)ids.v[i]);
        mg_test_fail(t, __FILE__, __LINE__, "\"%s\" -> [%s ]", text, got);
    }
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

#define IDS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / 8
#define NO_IDS (const int64_t *)NULL, 0

/* ---- Unigram ---- */

static const piece_def unigram_pieces[] = {
    {"<unk>", 0, SPM_UNKNOWN}, {"<s>", 0, SPM_CONTROL}, {"</s>", 0, SPM_CONTROL},
    {SP, -1, SPM_NORMAL},      {"a", -2, SPM_NORMAL},   {"b", -2, SPM_NORMAL},
    {"ab", -3, SPM_NORMAL},    {SP "ab", -3.5f, SPM_NORMAL}, {"bb", -1, SPM_UNUSED},
    {"<u>", 0, SPM_USER_DEFINED},
};

MG_TEST(spm_unigram_viterbi)
{
    const char *m = write_model(t, "u.model", unigram_pieces, 10, SPM_UNIGRAM, 0, 1);
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", m);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 10);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 2);
    check_ids(t, tk, "ab  ab ", IDS(7, 7));   /* "▁ab" -3.5 beats "▁"+"ab" -4 */
    check_ids(t, tk, "ax", IDS(3, 4, 0));      /* unk scores min_score - 10 */
    check_ids(t, tk, "axyz", IDS(3, 4, 0));    /* a run of unknowns is one unk */
    check_ids(t, tk, "xa y", IDS(3, 0, 4, 3, 0));
    check_ids(t, tk, "bb", IDS(3, 5, 5));      /* UNUSED pieces are never chosen */
    check_ids(t, tk, "a<u>b", IDS(3, 4, 9, 5)); /* user-defined: (length - 1) * 0.1 */
    check_ids(t, tk, "   ", NO_IDS);
    check_ids(t, tk, "", NO_IDS);
    mg_tokenizer_free(tk);
}

MG_TEST(spm_unigram_byte_fallback)
{
    const char *m = write_model(t, "ub.model", unigram_pieces, 10, SPM_UNIGRAM, 1, 1);
    mg_tokenizer *tk = open_type(t, "Llama2Tokenizer", m);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 266);
    /* é = C3 A9 -> <0xC3> <0xA9> (ids 10 + byte); no unk fusion with byte_fallback */
    check_ids(t, tk, "a\xc3\xa9x", IDS(3, 4, 10 + 0xC3, 10 + 0xA9, 10 + 'x'));
    mg_tokenizer_free(tk);
}

MG_TEST(spm_normalizer_options)
{
    /* remove_extra_whitespaces off: spaces kept, each one a "▁" */
    const char *m = write_model(t, "uk.model", unigram_pieces, 10, SPM_UNIGRAM, 0, 0);
    mg_tokenizer *tk = open_type(t, "GPTSentencePieceTokenizer", m);
    if (!tk) return;
    check_ids(t, tk, " ab ", IDS(3, 7, 3));
    check_ids(t, tk, "  ", IDS(3, 3, 3));
    mg_tokenizer_free(tk);
}

/* ---- BPE ---- */

static const piece_def bpe_pieces[] = {
    {"<unk>", 0, SPM_UNKNOWN}, {"<s>", 0, SPM_CONTROL}, {"</s>", 0, SPM_CONTROL},
    {SP, 0, SPM_NORMAL},       {"a", 0, SPM_NORMAL},    {"b", 0, SPM_NORMAL},
    {"c", 0, SPM_NORMAL},      {"ab", -1, SPM_UNUSED},  {"ba", -1, SPM_NORMAL},
    {SP "a", -2, SPM_NORMAL},  {"abc", -1.5f, SPM_NORMAL}, {"cc", -0.5f, SPM_NORMAL},
};

MG_TEST(spm_bpe_merges)
{
    const char *m = write_model(t, "b.model", bpe_pieces, 12, SPM_BPE, 0, 1);
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", m);
    if (!tk) return;
    check_ids(t, tk, "abc", IDS(3, 10));     /* ab (UNUSED) then abc */
    check_ids(t, tk, "ab", IDS(3, 4, 5));    /* a final UNUSED ab is resegmented */
    check_ids(t, tk, "aba", IDS(3, 4, 5, 4)); /* ab/ba tie: leftmost (ab) wins */
    check_ids(t, tk, "bac", IDS(3, 8, 6));
    check_ids(t, tk, "ccc", IDS(3, 11, 6));  /* leftmost cc first */
    check_ids(t, tk, "ax\xc3\xa9", IDS(9, 0)); /* "▁a", then one unk for "xé" */
    mg_tokenizer_free(tk);
}

/* ---- WORD and CHAR ---- */

MG_TEST(spm_word_and_char_models)
{
    const char *m = write_model(t, "w.model", unigram_pieces, 10, SPM_WORD, 0, 1);
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", m);
    if (!tk) return;
    check_ids(t, tk, "ab  ab x y", IDS(7, 7, 0)); /* "▁x" and "▁y": one unk */
    mg_tokenizer_free(tk);
    m = write_model(t, "c.model", unigram_pieces, 10, SPM_CHAR, 0, 1);
    tk = open_type(t, "SentencePieceTokenizer", m);
    if (!tk) return;
    check_ids(t, tk, "ab<u>", IDS(3, 4, 5, 9));
    mg_tokenizer_free(tk);
}

/* ---- SentencePiece's test models (ids from sentencepiece 0.2.3 encode_as_ids) ---- */

MG_TEST(spm_shared_test_model)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sentencepiece/test_model.model", mg_test_vocab_dir());
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", path);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 1000);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 2);
    check_ids(t, tk, "Hello world.", IDS(151, 88, 21, 887, 6));
    check_ids(t, tk, "  I saw a girl  with a telescope.  ",
              IDS(9, 459, 11, 939, 44, 11, 4, 142, 82, 8, 28, 21, 132, 6));
    /* nmt_nfkc through the precompiled charsmap: fullwidth -> ASCII */
    check_ids(t, tk, "\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3\xef\xbc\x91\xef\xbc\x92\xef\xbc\x93",
              IDS(104, 540, 381, 357, 596, 0));
    check_ids(t, tk, "\xe6\x97\xa5\xe6\x9c\xac", IDS(4, 0));
    check_ids(t, tk, "   ", NO_IDS);
    mg_tokenizer_free(tk);
}

/* Letters followed by a combining mark take the rules (e + U+0301 -> U+00E9); ASCII runs and
 * spaces take the normalizer's fast path (ids from sentencepiece 0.2.3). */
MG_TEST(spm_shared_ja_model_fast_paths)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sentencepiece/test_ja_model.model", mg_test_vocab_dir());
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", path);
    if (!tk) return;
    check_ids(t, tk, "Cafe\xcc\x81 x", IDS(6, 1531, 931, 5642, 7592, 6, 5887));
    check_ids(t, tk, "A\xcc\x8a\tb  c", IDS(6, 0, 7715, 4717, 6, 2355));
    check_ids(t, tk, "e\xcc\x81", IDS(6, 7592));
    mg_tokenizer_free(tk);
}

/* Starts at 3-byte characters take the double array's entry table (after3) and then walk
 * on: Japanese and Chinese text, an unknown CJK character next to known ones, a character
 * after ASCII (ids from sentencepiece 0.2.3). */
MG_TEST(spm_unigram_cjk_starts)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sentencepiece/test_ja_model.model", mg_test_vocab_dir());
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", path);
    if (!tk) return;
    check_ids(t, tk, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87\xe7\xab\xa0\xe3\x81\xa8"
              "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac\xe3\x80\x82",
              IDS(6, 4371, 4, 3757, 14, 69, 114, 114, 48, 5));
    check_ids(t, tk, "\xe6\x9d\xb1\xe4\xba\xac\xe9\x83\xbd\xe3\x81\xaf\xe6\x97\xa5\xe6\x9c\xac\xe3\x81\xae"
              "\xe9\xa6\x96\xe9\x83\xbd\xe3\x81\xa7\xe3\x81\x99",
              IDS(6, 1999, 9, 493, 5387, 16, 94));
    check_ids(t, tk, "\xe9\xbe\xa5\xe4\xb8\x80\xe4\xb8\x81x\xe4\xb8\x82\xe4\xb8\x83",
              IDS(6, 0, 56, 2389, 5887, 0, 406));
    check_ids(t, tk, "\xe6\xbc\xa2\xe5\xad\x97\xe3\x81\x8b\xe3\x81\xaa\xe4\xba\xa4\xe3\x81\x98\xe3\x82\x8a"
              "\xe6\x96\x87",
              IDS(6, 4225, 2062, 643, 261, 41, 114));
    mg_tokenizer_free(tk);
}

/* test_ja_model read into *file (the caller frees it) and parsed into p; 1 if parsed. */
static int parse_ja_model(mg_test_ctx *t, char **file, mg_spm_proto *p)
{
    char path[512];
    snprintf(path, sizeof path, "%s/sentencepiece/test_ja_model.model", mg_test_vocab_dir());
    size_t n = 0;
    MG_CHECK_OK(t, mg_read_file(path, file, &n));
    return *file && mg_spm_proto_parse(p, (const uint8_t *)*file, n) == MG_OK;
}

/* The frozen trie walks like the hash trie, for every byte at every node on each piece's
 * path (list nodes and dense rows alike). */
MG_TEST(spm_frozen_trie_matches)
{
    char *file = NULL;
    mg_spm_model md = {0};
    if (parse_ja_model(t, &file, &md.proto) && mg_spm_model_init(&md) == MG_OK) {
        const mg_spm_frozen *f = mg_spm_trie_frozen(md.pieces);
        MG_CHECK(t, f != NULL);
        size_t bad = 0;
        for (size_t i = 0; f && i < md.proto.n_pieces; i++) {
            const mg_spm_str *pc = &md.proto.pieces[i].piece;
            int32_t node = 0;
            for (size_t k = 0; node >= 0 && k <= pc->n; k++) {
                for (int b = 0; b < 256; b++)
                    bad += mg_spm_frozen_step(f, node, (uint8_t)b) !=
                           mg_spm_trie_step(md.pieces, node, (uint8_t)b);
                bad += f->nodes[node].value != mg_spm_trie_value(md.pieces, node);
                node = k < pc->n ? mg_spm_trie_step(md.pieces, node, pc->p[k]) : -1;
            }
        }
        MG_CHECK_EQ_INT(t, bad, 0);
        MG_CHECK(t, md.ws_bounded);
    }
    mg_spm_model_free(&md);
    free(file);
}

/* The normalizer's copy of plain 2- and 3-byte characters (plain_mb) gives what the rule
 * path gives (the same normalizer with plain_mb cleared), for every such character alone,
 * after a letter, before a combining mark, before a fullwidth A and between spaces, with test_ja_model's
 * nmt_nfkc charsmap and with the user-defined symbols of a tiny model. */
static size_t plain_mb_differences(const mg_spm_normalizer *nz, size_t *n_plain)
{
    mg_spm_normalizer slow = *nz; /* shares the tables: not freed */
    memset(slow.plain_mb, 0, sizeof slow.plain_mb);
    mg_spm_buf a = {0}, b = {0};
    size_t bad = 0;
    *n_plain = 0;
    for (uint32_t cp = 0x80; cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        *n_plain += nz->plain_mb[cp >> 6] >> (cp & 63) & 1;
        char c[4];
        if (cp < 0x800) snprintf(c, sizeof c, "%c%c", 0xC0 | cp >> 6, 0x80 | (cp & 0x3F));
        else snprintf(c, sizeof c, "%c%c%c", 0xE0 | cp >> 12, 0x80 | (cp >> 6 & 0x3F),
                      0x80 | (cp & 0x3F));
        char text[64];
        int n = snprintf(text, sizeof text, "%s e%s%s\xcc\x81%s  %s\xef\xbc\xa1 x%s", c, c, c, c, c, c);
        if (mg_spm_normalize(nz, (const uint8_t *)text, (size_t)n, &a) != MG_OK ||
            mg_spm_normalize(&slow, (const uint8_t *)text, (size_t)n, &b) != MG_OK ||
            a.n != b.n || memcmp(a.v, b.v, a.n) != 0)
            bad++;
    }
    free(a.v);
    free(b.v);
    return bad;
}

/* test_ja_model into md and nz; with `user`, its last piece becomes that user-defined
 * symbol first. Returns 1 if loaded. */
static int load_ja_normalizer(mg_test_ctx *t, char **file, mg_spm_model *md,
                              mg_spm_normalizer *nz, const char *user)
{
    if (!parse_ja_model(t, file, &md->proto)) return 0;
    if (user) {
        mg_spm_piece *last = &md->proto.pieces[md->proto.n_pieces - 1];
        last->piece = (mg_spm_str){(const uint8_t *)user, strlen(user)};
        last->type = SPM_USER_DEFINED;
    }
    return mg_spm_model_init(md) == MG_OK && mg_spm_normalizer_init(nz, md) == MG_OK;
}

MG_TEST(spm_normalizer_plain_mb_matches_rules)
{
    /* test_ja_model as it is, then with a user-defined "日Ａ" (the rules map the fullwidth
     * A to "A", so copying 日 alone would lose the symbol) */
    const char *users[2] = {NULL, "\xe6\x97\xa5\xef\xbc\xa1"};
    for (int u = 0; u < 2; u++) {
        char *file = NULL;
        size_t n_plain = 0;
        mg_spm_model md = {0};
        mg_spm_normalizer nz = {0};
        if (load_ja_normalizer(t, &file, &md, &nz, users[u])) {
            MG_CHECK_EQ_INT(t, plain_mb_differences(&nz, &n_plain), 0);
            MG_CHECK(t, n_plain > 40000); /* the CJK ideographs among them */
            MG_CHECK(t, !(nz.plain_mb[0xFF21 >> 6] >> (0xFF21 & 63) & 1)); /* fullwidth A */
            MG_CHECK_EQ_INT(t, nz.plain_mb[0x65E5 >> 6] >> (0x65E5 & 63) & 1, !users[u]);
        } else {
            mg_test_fail(t, __FILE__, __LINE__, "test_ja_model did not load");
        }
        mg_spm_normalizer_free(&nz);
        mg_spm_model_free(&md);
        free(file);
    }
}

/* ---- the proto reader and load errors ---- */

MG_TEST(spm_proto_defaults_and_merge)
{
    pbuf b = {.n = 0};
    put_piece(&b, "<unk>", 0, SPM_UNKNOWN);
    put_piece(&b, "x", -1, 77); /* enum value out of range: stays NORMAL */
    pbuf ts = {.n = 0};
    put_int(&ts, 3, SPM_BPE);
    put_bytes(&b, 2, ts.v, ts.n);
    ts.n = 0;
    put_int(&ts, 24, 1); /* a second TrainerSpec merges into the first */
    put_bytes(&ts, 47, "<end>", 5);
    put_bytes(&b, 2, ts.v, ts.n);
    mg_spm_proto p;
    MG_CHECK_OK(t, mg_spm_proto_parse(&p, b.v, b.n));
    MG_CHECK_EQ_INT(t, p.n_pieces, 2);
    MG_CHECK_EQ_INT(t, p.pieces[1].type, SPM_NORMAL);
    MG_CHECK(t, p.pieces[1].score == -1.0f);
    MG_CHECK_EQ_INT(t, p.model_type, SPM_BPE);
    MG_CHECK_EQ_INT(t, p.treat_ws_as_suffix, 1);
    MG_CHECK_EQ_INT(t, p.eos_piece.n, 5);
    MG_CHECK_EQ_INT(t, p.add_dummy_prefix & p.remove_extra_ws & p.escape_ws, 1);
    mg_spm_proto_free(&p);
    MG_CHECK_ERR(t, mg_spm_proto_parse(&p, b.v, b.n - 1), MG_ERR_FORMAT, "byte");
}

static void check_load_error(mg_test_ctx *t, const piece_def *p, size_t n, int type, int bf,
                             mg_status st, const char *msg)
{
    const char *m = write_model(t, "bad.model", p, n, type, bf, 1);
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "SentencePieceTokenizer";
    o.model = m;
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), st, msg);
    MG_CHECK(t, tk == NULL);
}

MG_TEST(spm_load_errors)
{
    const piece_def no_unk[] = {{"a", 0, SPM_NORMAL}};
    check_load_error(t, no_unk, 1, SPM_UNIGRAM, 0, MG_ERR_FORMAT, "unk is not defined");
    const piece_def dup[] = {{"<unk>", 0, SPM_UNKNOWN}, {"a", 0, SPM_NORMAL}, {"a", 0, SPM_UNUSED}};
    check_load_error(t, dup, 3, SPM_UNIGRAM, 0, MG_ERR_FORMAT, "already defined");
    const piece_def byte[] = {{"<unk>", 0, SPM_UNKNOWN}, {"<0x41>", 0, SPM_BYTE}};
    check_load_error(t, byte, 2, SPM_UNIGRAM, 0, MG_ERR_FORMAT, "byte_fallback is false");
    const piece_def empty[] = {{"<unk>", 0, SPM_UNKNOWN}, {"", 0, SPM_NORMAL}};
    check_load_error(t, empty, 2, SPM_BPE, 0, MG_ERR_FORMAT, "empty");
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "Llama2Tokenizer";
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--tokenizer-model");
    o.model = write_model(t, "ok.model", unigram_pieces, 10, SPM_UNIGRAM, 0, 1);
    const char *sp[] = {"<x>"};
    o.special_tokens = sp;
    o.n_special_tokens = 1;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "special-tokens");
}

MG_TEST(spm_eod_needs_control_eos)
{
    const piece_def p[] = {
        {"<unk>", 0, SPM_UNKNOWN}, {"</s>", -1, SPM_NORMAL}, {"a", -1, SPM_NORMAL}};
    const char *m = write_model(t, "noeos.model", p, 3, SPM_UNIGRAM, 0, 1);
    mg_tokenizer *tk = open_type(t, "SentencePieceTokenizer", m);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), -1);
    mg_tokenizer_free(tk);
}

/* The BPE cut's filter (spm_bigrams.c): every adjacent character pair of every matchable
 * piece of the shared Japanese model has its bit set (a clear bit would cut inside a
 * piece), and most bits are clear (else no span would ever be cut). */
MG_TEST(spm_bigram_filter_covers_pieces)
{
    char *file = NULL;
    mg_spm_proto p = {0};
    mg_spm_bigrams bg = {0};
    if (parse_ja_model(t, &file, &p) && mg_spm_bigrams_build(&bg, &p) == MG_OK) {
        size_t missing = 0, pairs = 0, set = 0;
        for (size_t i = 0; i < p.n_pieces; i++) {
            const mg_spm_str *s = &p.pieces[i].piece;
            int ty = p.pieces[i].type;
            if (ty != SPM_NORMAL && ty != SPM_USER_DEFINED && ty != SPM_UNUSED) continue;
            for (size_t a = 0, b; s->n > 0 && a < s->n; a = b) {
                b = a + mg_spm_char_len(s->p[a]);
                if (b >= s->n) break;
                size_t c = b + mg_spm_char_len(s->p[b]);
                if (c > s->n) c = s->n;
                pairs++;
                missing += !mg_spm_bigram_maybe(&bg, mg_spm_char_pack(s->p + a, b - a),
                                                mg_spm_char_pack(s->p + b, c - b));
            }
        }
        for (size_t w = 0; w < MG_SPM_BIGRAM_BITS / 64; w++)
            set += (size_t)__builtin_popcountll(bg.bits[w]);
        MG_CHECK(t, pairs > 1000);
        MG_CHECK_EQ_INT(t, missing, 0);
        MG_CHECK(t, set < MG_SPM_BIGRAM_BITS / 8);
    }
    mg_spm_bigrams_free(&bg);
    mg_spm_proto_free(&p);
    free(file);
}
