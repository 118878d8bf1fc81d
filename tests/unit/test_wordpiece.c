/* test_wordpiece.c — unit tests for the WordPiece model (wordpiece.h), BERT's basic
 * tokenizer (bert_basic.h), the utf8proc normalizer steps (normalize.h: NFD, NFKC, NFKD,
 * Lowercase, StripAccents, BertNormalizer, Strip), Megatron's BertWordPieceLowerCase /
 * BertWordPieceCase and HuggingFaceTokenizer over a WordPiece tokenizer.json.
 *
 * Expected ids were worked out by hand from the small vocabularies written here and agree
 * with HF tokenizers 0.23.3 (tests/interop/test_wordpiece.py compares large corpora).
 * Without utf8proc (MG_HAVE_UTF8PROC 0, the minimal build) each check that needs it is
 * replaced by a check that the library refuses with "not built with utf8proc" (or, for the
 * BERT pre-tokenizer, that mg_bert_available() says it must not be called).
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/tokenizer.h"
#include "tok/bert_basic.h"
#include "tok/normalize.h"
#include "tok/wordpiece.h"

static mg_wordpiece *small_wp(mg_test_ctx *t, size_t max_chars, const char *prefix)
{
    static const char *const toks[] = {"[UNK]", "a", "##a", "ab", "##b", "abc", "##cd",
                                       "##c", "##d", "b"};
    mg_wordpiece *wp = NULL;
    MG_CHECK_OK(t, mg_wordpiece_create(&wp, prefix, "[UNK]", max_chars));
    for (size_t i = 0; wp && i < sizeof toks / sizeof toks[0]; i++)
        MG_CHECK_OK(t, mg_wordpiece_add(wp, toks[i], strlen(toks[i]), (int64_t)i));
    if (wp) MG_CHECK_OK(t, mg_wordpiece_finalize(wp));
    return wp;
}

/* Encodes one word; returns the ids as "1 2 3" in a static buffer. */
static const char *word_ids(mg_test_ctx *t, const mg_wordpiece *wp, const char *w)
{
    static char buf[256];
    mg_ids ids = {0};
    buf[0] = 0;
    MG_CHECK_OK(t, mg_wordpiece_encode_word(wp, w, strlen(w), &ids));
    for (size_t i = 0, o = 0; i < ids.n && o < sizeof buf - 24; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", i ? " " : "", (long long)ids.v[i]);
    mg_ids_free(&ids);
    return buf;
}

MG_TEST(wordpiece_greedy_longest_match)
{
    mg_wordpiece *wp = small_wp(t, 5, "##");
    if (!wp) return;
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "aaaaa"), "1 2 2 2 2");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "aaaaaa"), "0"); /* 6 characters > 5 */
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "abcd"), "5 8");  /* abc + ##d, not ab + ##cd */
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "abcdd"), "5 8 8");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "bab"), "9 2 4");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "abd"), "3 8");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "bx"), "0"); /* any failure: the whole word */
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "\xc3\xa9"), "0");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "##a"), "2"); /* a first piece is looked up as is */
    MG_CHECK_EQ_INT(t, mg_wordpiece_size(wp), 10);
    size_t len = 0;
    const char *s = mg_wordpiece_token(wp, 6, &len);
    MG_CHECK(t, s && len == 4 && memcmp(s, "##cd", 4) == 0);
    MG_CHECK(t, mg_wordpiece_token(wp, 10, &len) == NULL);
    mg_wordpiece_free(wp);
}

MG_TEST(wordpiece_characters_not_bytes)
{
    mg_wordpiece *wp = small_wp(t, 3, "##");
    if (!wp) return;
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "\xc3\xa9\xc3\xa9\xc3\xa9"), "0"); /* 3 chars, no piece */
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "aaa"), "1 2 2");
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "aaaa"), "0");
    mg_wordpiece_free(wp);
}

MG_TEST(wordpiece_duplicates_and_prefixes)
{
    mg_wordpiece *wp = NULL;
    MG_CHECK_OK(t, mg_wordpiece_create(&wp, "", "<unk>", 100));
    if (!wp) return;
    MG_CHECK_OK(t, mg_wordpiece_add(wp, "ab", 2, 0));
    MG_CHECK_OK(t, mg_wordpiece_add(wp, "c", 1, 1));
    MG_CHECK_OK(t, mg_wordpiece_add(wp, "ab", 2, 2)); /* the later id wins */
    MG_CHECK_OK(t, mg_wordpiece_finalize(wp));
    MG_CHECK_EQ_INT(t, mg_wordpiece_id(wp, "ab", 2), 2);
    MG_CHECK_EQ_INT(t, mg_wordpiece_size(wp), 2);
    MG_CHECK_EQ_STR(t, word_ids(t, wp, "abcab"), "2 1 2"); /* empty prefix: plain pieces */
    mg_ids ids = {0};
    MG_CHECK_ERR(t, mg_wordpiece_encode_word(wp, "x", 1, &ids), MG_ERR_FORMAT, "<unk>");
    mg_ids_free(&ids);
    mg_wordpiece_free(wp);
}

/* ---- BERT basic tokenizer ---- */

static const char *pieces(mg_test_ctx *t, const char *text)
{
    static char buf[256];
    mg_spans sp = {0};
    buf[0] = 0;
    MG_CHECK_OK(t, mg_bert_pretokenize(text, strlen(text), 0, &sp));
    for (size_t i = 0, o = 0; i < sp.n && o < sizeof buf - 64; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%.*s", i ? "|" : "", (int)sp.v[i].len,
                              text + sp.v[i].off);
    mg_spans_free(&sp);
    return buf;
}

MG_TEST(bert_pretokenize_ascii)
{
    MG_CHECK_EQ_STR(t, pieces(t, "Hello, world!  x"), "Hello|,|world|!|x");
    MG_CHECK_EQ_STR(t, pieces(t, " a$b+c^d`e|f~g "), "a|$|b|+|c|^|d|`|e|||f|~|g");
    MG_CHECK_EQ_STR(t, pieces(t, "don't\tstop\n"), "don|'|t|stop");
    MG_CHECK_EQ_STR(t, pieces(t, "   "), "");
    MG_CHECK(t, mg_bert_is_chinese(0x4E2D) && mg_bert_is_chinese(0x2B920));
    MG_CHECK(t, !mg_bert_is_chinese(0x2B820) && !mg_bert_is_chinese(0x3042)); /* HF ranges */
    MG_CHECK(t, mg_bert_is_whitespace(0x3000) && mg_bert_is_whitespace('\r'));
}

MG_TEST(bert_pretokenize_unicode)
{
#if MG_HAVE_UTF8PROC
    MG_CHECK_EQ_STR(t, pieces(t, "\xc2\xbfQu\xc3\xa9?\xe3\x80\x80\xe2\x80\x94x"),
                    "\xc2\xbf|Qu\xc3\xa9|?|\xe2\x80\x94|x"); /* ¿ P, U+3000 space, — Pd */
    MG_CHECK(t, mg_bert_is_control(0x200B) && mg_bert_is_control(0xE000));
    MG_CHECK(t, !mg_bert_is_control('\t'));
    MG_CHECK(t, !mg_bert_is_control(0x0378)); /* unassigned (Cn) is not a control */
#else
    MG_CHECK_EQ_INT(t, mg_bert_available(), 0); /* callers refuse (tok_hf_wordpiece.c) */
#endif
}

/* ---- normalizers ---- */

static const char *norm1(mg_test_ctx *t, mg_normalizer *nz, const char *text)
{
    static char out[256];
    mg_norm_buf buf = {0};
    const char *r = NULL;
    size_t n = 0;
    out[0] = 0;
    MG_CHECK_OK(t, mg_normalize(nz, &buf, text, strlen(text), &r, &n));
    if (r && n < sizeof out) {
        memcpy(out, r, n);
        out[n] = 0;
    }
    mg_norm_buf_free(&buf);
    return out;
}

MG_TEST(normalize_strip)
{
    mg_normalizer nz = {0};
    MG_CHECK_OK(t, mg_normalizer_add_strip(&nz, 1, 0));
    MG_CHECK_EQ_STR(t, norm1(t, &nz, " \t\xe3\x80\x80 a b \n"), "a b \n");
    mg_normalizer nz2 = {0};
    MG_CHECK_OK(t, mg_normalizer_copy(&nz2, &nz));
    MG_CHECK_OK(t, mg_normalizer_add_strip(&nz2, 0, 1));
    MG_CHECK_EQ_STR(t, norm1(t, &nz2, " \t a b \xc2\x85"), "a b");
    MG_CHECK_EQ_STR(t, norm1(t, &nz2, "   "), "");
    mg_normalizer_free(&nz);
    mg_normalizer_free(&nz2);
}

#if MG_HAVE_UTF8PROC
static const char *norm_step(mg_test_ctx *t, mg_norm_step step, const char *text)
{
    mg_normalizer nz = {0};
    MG_CHECK_OK(t, mg_normalizer_add(&nz, step));
    const char *r = norm1(t, &nz, text);
    mg_normalizer_free(&nz);
    return r;
}

#endif

MG_TEST(normalize_unicode_steps)
{
#if MG_HAVE_UTF8PROC
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_NFD, "caf\xc3\xa9"), "cafe\xcc\x81");
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_NFKC, "\xef\xac\x81 e\xcc\x81"), "fi \xc3\xa9");
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_NFKD, "\xef\xac\x81\xc2\xbd"), "fi1\xe2\x81\x84" "2");
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_LOWERCASE, "\xc4\xb0STANBUL \xce\xa3\xce\x91\xce\xa3"),
                    "i\xcc\x87stanbul \xcf\x83\xce\xb1\xcf\x83"); /* no final sigma */
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_STRIP_ACCENTS, "e\xcc\x81\xe0\xa4\x83x"), "ex");
    MG_CHECK_EQ_STR(t, norm_step(t, MG_NORM_NFD, "plain ascii"), "plain ascii");
#else
    mg_normalizer nz = {0};
    MG_CHECK_ERR(t, mg_normalizer_add(&nz, MG_NORM_NFD), MG_ERR_UNSUPPORTED,
                 "not built with utf8proc");
    MG_CHECK_ERR(t, mg_normalizer_add_bert(&nz, MG_NORM_BERT_CLEAN), MG_ERR_UNSUPPORTED,
                 "not built with utf8proc");
    MG_CHECK_EQ_INT(t, nz.n, 0);
#endif
}

MG_TEST(normalize_bert)
{
#if MG_HAVE_UTF8PROC
    mg_normalizer nz = {0};
    MG_CHECK_OK(t, mg_normalizer_add_bert(&nz, MG_NORM_BERT_CLEAN | MG_NORM_BERT_CHINESE |
                                                   MG_NORM_BERT_STRIP_ACCENTS |
                                                   MG_NORM_BERT_LOWERCASE));
    /* controls dropped (also VT/FF: Cc before White_Space), tab -> space, CJK padded */
    MG_CHECK_EQ_STR(t,
                    norm1(t, &nz, "H\xc3\xa9llo\x01\x0b\tW\xe4\xbd\xa0\xe5\xa5\xbd!\xef\xbf\xbd"),
                    "hello w \xe4\xbd\xa0  \xe5\xa5\xbd !");
    mg_normalizer cased = {0};
    MG_CHECK_OK(t, mg_normalizer_add_bert(&cased, MG_NORM_BERT_CLEAN));
    MG_CHECK_EQ_STR(t, norm1(t, &cased, "H\xc3\xa9\x7fllo\xe4\xbd\xa0"),
                    "H\xc3\xa9llo\xe4\xbd\xa0");
    mg_normalizer_free(&nz);
    mg_normalizer_free(&cased);
#else
    mg_normalizer nz = {0};
    MG_CHECK_ERR(t, mg_normalizer_add_bert(&nz, MG_NORM_BERT_CLEAN | MG_NORM_BERT_LOWERCASE),
                 MG_ERR_UNSUPPORTED, "not built with utf8proc");
    mg_normalizer_free(&nz);
#endif
}

/* ---- Megatron BertWordPiece* ---- */

/* Lines as tokenizers' WordPiece::read_file cuts them (checked with transformers 5.23):
 * trailing White_Space goes (CR, space, tab, U+3000), a CR inside a line stays (line 5 is
 * "hello<CR>world", line 6 "hello", line 7 "world"); no final newline. */
static const char bert_vocab[] = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\r\n"
                                 "hello\rworld\nhello \r\t\nworld\xe3\x80\x80\n"
                                 ",\n!\n##s\n\xe4\xbd\xa0\n\xe5\xa5\xbd\nH\n##ello";

static mg_status bert_tok(mg_test_ctx *t, const char *type, mg_tokenizer **tk)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = type;
    o.vocab_file = mg_test_write_file(t, "vocab.txt", bert_vocab, sizeof bert_vocab - 1);
    return mg_tokenizer_create(tk, &o);
}

static const char *encode_str(mg_test_ctx *t, mg_tokenizer *tk, const char *text)
{
    static char buf[512];
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    buf[0] = 0;
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    if (e) MG_CHECK_OK(t, mg_encode(e, text, strlen(text), &ids));
    for (size_t i = 0, o = 0; i < ids.n && o < sizeof buf - 24; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", i ? " " : "", (long long)ids.v[i]);
    mg_ids_free(&ids);
    mg_encoder_free(e);
    return buf;
}

#if !MG_HAVE_UTF8PROC
static void check_bert_refused(mg_test_ctx *t, const char *type)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, bert_tok(t, type, &tk), MG_ERR_UNSUPPORTED, "not built with utf8proc");
    MG_CHECK(t, tk == NULL);
}
#endif

MG_TEST(bert_wordpiece_lowercase)
{
    mg_tokenizer *tk = NULL;
#if !MG_HAVE_UTF8PROC
    check_bert_refused(t, "BertWordPieceLowerCase");
    return;
#endif
    MG_CHECK_OK(t, bert_tok(t, "BertWordPieceLowerCase", &tk));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 15);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 3);
    MG_CHECK_EQ_STR(t, encode_str(t, tk, "H\xc3\xa9llo, Worlds![SEP]\xe4\xbd\xa0\xe5\xa5\xbd x"),
                    "2 6 8 7 10 9 3 11 12 1 3");
    MG_CHECK_EQ_STR(t, encode_str(t, tk, ""), "2 3");
    int64_t ids[] = {2, 6, 8, 7, 10, 9, 3, 11, 12};
    mg_text out = {0};
    MG_CHECK_OK(t, mg_tokenizer_decode(tk, ids, 9, &out));
    MG_CHECK_EQ_STR(t, out.p, "[CLS] hello, worlds! [SEP] \xe4\xbd\xa0 \xe5\xa5\xbd");
    mg_text_free(&out);
    mg_tokenizer_free(tk);
}

MG_TEST(bert_wordpiece_case)
{
    mg_tokenizer *tk = NULL;
#if !MG_HAVE_UTF8PROC
    check_bert_refused(t, "BertWordPieceCase");
    return;
#endif
    MG_CHECK_OK(t, bert_tok(t, "BertWordPieceCase", &tk));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 115);
    MG_CHECK_EQ_STR(t, encode_str(t, tk, "Hello hello <extra_id_99>H\xc3\xa9llo"),
                    "2 13 14 6 114 1 3");
    mg_tokenizer_free(tk);
}

MG_TEST(bert_wordpiece_errors)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "BertWordPieceCase";
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--vocab-file");
    o.vocab_file = mg_test_write_file(t, "v.txt", "a\nb\n", 4);
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_UNSUPPORTED, "[CLS]");
    o.vocab_file = mg_test_write_file(t, "bad.txt", "[CLS]\n[SEP]\n\xff\n", 14);
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "invalid UTF-8");
    MG_CHECK(t, tk == NULL);
}

/* ---- HuggingFaceTokenizer over a WordPiece tokenizer.json ---- */

static const char wp_json[] =
    "{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
    "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": 8, "
    "\"vocab\": {\"[UNK]\": 0, \"[CLS]\": 1, \"[SEP]\": 2, \"un\": 3, \"##aff\": 4, "
    "\"##able\": 5, \"!\": 6, \"cafe\": 7}},"
    " \"added_tokens\": [{\"id\": 1, \"content\": \"[CLS]\", \"special\": true},"
    " {\"id\": 2, \"content\": \"[SEP]\", \"special\": true},"
    " {\"id\": 9, \"content\": \"<new>\", \"special\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFD\"},"
    " {\"type\": \"StripAccents\"}, {\"type\": \"Lowercase\"}]},"
    " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"},"
    " \"post_processor\": {\"type\": \"BertProcessing\", \"sep\": [\"[SEP]\", 2],"
    " \"cls\": [\"[CLS]\", 1]},"
    " \"decoder\": {\"type\": \"WordPiece\", \"prefix\": \"##\", \"cleanup\": true}}";

static mg_status hf_wp(mg_test_ctx *t, const char *json, mg_tokenizer **tk)
{
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "HuggingFaceTokenizer";
    o.model = t->dir;
    return mg_tokenizer_create(tk, &o);
}

MG_TEST(hf_wordpiece_json)
{
    mg_tokenizer *tk = NULL;
    if (!MG_HAVE_UTF8PROC) {
        MG_CHECK_ERR(t, hf_wp(t, wp_json, &tk), MG_ERR_UNSUPPORTED, "not built with utf8proc");
        return;
    }
    MG_CHECK_OK(t, hf_wp(t, wp_json, &tk));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 9); /* <new> gets id 8, not 9 */
    /* unaffable: 9 characters > 8; cafes: no ##s */
    MG_CHECK_EQ_STR(t, encode_str(t, tk, "UNAFFable! Caf\xc3\xa9 unAff cafes<new>"),
                    "1 0 6 7 3 4 0 8 2");
    int64_t ids[] = {1, 3, 4, 5, 6, 7};
    mg_text out = {0};
    MG_CHECK_OK(t, mg_tokenizer_decode(tk, ids, 6, &out));
    MG_CHECK_EQ_STR(t, out.p, "[CLS] unaffable! cafe");
    mg_text_free(&out);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_wordpiece_refusals)
{
    static const char bl[] =
        "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0}},"
        " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}";
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, hf_wp(t, bl, &tk), MG_ERR_UNSUPPORTED,
                 "ByteLevel pre-tokenizer with a WordPiece");
    static const char bpe[] =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
        " \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}}";
    MG_CHECK_ERR(t, hf_wp(t, bpe, &tk), MG_ERR_UNSUPPORTED,
                 "BertPreTokenizer with a non-WordPiece");
    MG_CHECK(t, tk == NULL);
}
