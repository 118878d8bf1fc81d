/* test_bpe.c — the BPE engine (tok/bpe.h): hand-made vocabularies in both modes (ties,
 * duplicates, the whole-piece shortcut, errors), randomized comparison of both merge paths
 * (short scan and heap) against a naive reference, the caches (also past their capacity,
 * through mg_bpe_encode_spans: replaced entries, pieces with more ids than an entry of the
 * word cache holds), and the 313 TestPlans.txt
 * cases of the OpenAI encodings through TikTokenizer.
 */
#include <stdlib.h>

#include "harness.h"
#include "mg/tokenizer.h"
#include "tok/bpe.h"

/* Adds the 256 single bytes with id = rank = byte + shift. */
static void add_bytes(mg_test_ctx *t, mg_bpe *b, int32_t shift)
{
    for (int c = 0; c < 256; c++) {
        uint8_t byte = (uint8_t)c;
        MG_CHECK_OK(t, mg_bpe_add_token(b, &byte, 1, c + shift, c + shift));
    }
}

static void add_str(mg_test_ctx *t, mg_bpe *b, const char *s, int32_t id, int32_t rank)
{
    MG_CHECK_OK(t, mg_bpe_add_token(b, (const uint8_t *)s, strlen(s), id, rank));
}

static void add_merge(mg_test_ctx *t, mg_bpe *b, const char *l, const char *r)
{
    MG_CHECK_OK(t, mg_bpe_add_merge(b, (const uint8_t *)l, strlen(l), (const uint8_t *)r,
                                    strlen(r)));
}

/* Encodes s and compares with the expected ids (terminated by -1). */
static void expect(mg_test_ctx *t, const mg_bpe *b, const char *s, const int64_t *want)
{
    mg_bpe_cache *c;
    MG_CHECK_OK(t, mg_bpe_cache_create(&c, b));
    for (int round = 0; round < 2; round++) { /* the second round hits the cache */
        mg_ids ids = {0};
        MG_CHECK_OK(t, mg_bpe_encode_piece(b, c, (const uint8_t *)s, strlen(s), &ids));
        size_t n = 0;
        while (want[n] >= 0) n++;
        int same = ids.n == n;
        for (size_t i = 0; same && i < n; i++) same = ids.v[i] == want[i];
        if (!same) mg_test_fail(t, __FILE__, __LINE__, "\"%s\": ids differ (%zu ids)", s, ids.n);
        mg_ids_free(&ids);
    }
    mg_bpe_cache_free(c);
}

MG_TEST(bpe_token_rank_basics)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_TOKEN_RANK));
    add_bytes(t, b, 0);
    add_str(t, b, "aa", 1000, 256);
    add_str(t, b, "bc", 1001, 257);
    add_str(t, b, "abc", 1002, 258);
    add_str(t, b, "xyz", 1003, 259); /* unreachable: no "xy" nor "yz" */
    MG_CHECK_OK(t, mg_bpe_finalize(b, 0));
    expect(t, b, "aaa", (const int64_t[]){1000, 'a', -1});        /* tie: leftmost */
    expect(t, b, "aaaa", (const int64_t[]){1000, 1000, -1});
    expect(t, b, "abc", (const int64_t[]){1002, -1});             /* a + bc -> abc */
    expect(t, b, "xyz", (const int64_t[]){'x', 'y', 'z', -1});    /* no shortcut */
    expect(t, b, "q", (const int64_t[]){'q', -1});
    MG_CHECK_EQ_INT(t, mg_bpe_token_id(b, (const uint8_t *)"abc", 3), 1002);
    MG_CHECK_EQ_INT(t, mg_bpe_token_id(b, (const uint8_t *)"ab", 2), -1);
    size_t len;
    const uint8_t *p = mg_bpe_token_bytes(b, 1001, &len);
    MG_CHECK(t, p && len == 2 && memcmp(p, "bc", 2) == 0);
    MG_CHECK(t, mg_bpe_token_bytes(b, 999, &len) == NULL);
    MG_CHECK_EQ_INT(t, mg_bpe_n_tokens(b), 260);
    mg_bpe_free(b);
}

MG_TEST(bpe_token_rank_priority_is_rank_not_id)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_TOKEN_RANK));
    add_bytes(t, b, 0);
    add_str(t, b, "ab", 300, 900); /* high id, low priority */
    add_str(t, b, "bc", 301, 800);
    MG_CHECK_OK(t, mg_bpe_finalize(b, 1));
    expect(t, b, "abc", (const int64_t[]){'a', 301, -1});
    mg_bpe_free(b);
}

MG_TEST(bpe_whole_piece_shortcut)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_TOKEN_RANK));
    add_bytes(t, b, 0);
    add_str(t, b, "xyz", 500, 500);
    MG_CHECK_OK(t, mg_bpe_finalize(b, 1));
    expect(t, b, "xyz", (const int64_t[]){500, -1});
    expect(t, b, "xyzx", (const int64_t[]){'x', 'y', 'z', 'x', -1});
    mg_bpe_free(b);
}

MG_TEST(bpe_pair_rank_basics_and_duplicates)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_PAIR_RANK));
    add_bytes(t, b, 10);
    add_str(t, b, "ab", 400, 0);
    add_str(t, b, "bc", 401, 0);
    add_str(t, b, "abc", 402, 0);
    add_str(t, b, "cd", 403, 0);
    add_merge(t, b, "a", "b");  /* rank 0, overridden below */
    add_merge(t, b, "b", "c");  /* rank 1 */
    add_merge(t, b, "a", "b");  /* rank 2: the duplicate wins (HF HashMap collect) */
    add_merge(t, b, "ab", "c"); /* rank 3 */
    MG_CHECK_OK(t, mg_bpe_finalize(b, 0));
    /* only listed pairs merge: "a"+"bc" is not listed although "abc" is a token */
    expect(t, b, "abc", (const int64_t[]){'a' + 10, 401, -1});
    expect(t, b, "abd", (const int64_t[]){400, 'd' + 10, -1});
    expect(t, b, "cd", (const int64_t[]){'c' + 10, 'd' + 10, -1}); /* token, no merge */
    mg_bpe_free(b);

    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_PAIR_RANK));
    add_bytes(t, b, 0);
    add_str(t, b, "cd", 403, 0);
    MG_CHECK_OK(t, mg_bpe_finalize(b, 1)); /* HF ignore_merges */
    expect(t, b, "cd", (const int64_t[]){403, -1});
    mg_bpe_free(b);
}

MG_TEST(bpe_errors)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_PAIR_RANK));
    add_str(t, b, "a", 1, 0);
    MG_CHECK_ERR(t, mg_bpe_add_token(b, (const uint8_t *)"a", 1, 2, 0), MG_ERR_FORMAT,
                 "duplicate token \"a\"");
    MG_CHECK_ERR(t, mg_bpe_add_merge(b, (const uint8_t *)"a", 1, (const uint8_t *)"b", 1),
                 MG_ERR_FORMAT, "merge \"a b\": right part is not a token");
    add_str(t, b, "b", 2, 0);
    MG_CHECK_ERR(t, mg_bpe_add_merge(b, (const uint8_t *)"a", 1, (const uint8_t *)"b", 1),
                 MG_ERR_FORMAT, "merged token is not in the vocabulary");
    MG_CHECK_ERR(t, mg_bpe_finalize(b, 0), MG_ERR_FORMAT, "lacks the single byte 0x00");
    mg_bpe_free(b);
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_TOKEN_RANK));
    MG_CHECK_ERR(t, mg_bpe_add_merge(b, (const uint8_t *)"a", 1, (const uint8_t *)"b", 1),
                 MG_ERR_ARG, "PAIR_RANK");
    MG_CHECK_ERR(t, mg_bpe_add_token(b, (const uint8_t *)"a", 1, -3, 0), MG_ERR_FORMAT,
                 "invalid id");
    static uint8_t huge[65536];
    MG_CHECK_ERR(t, mg_bpe_add_token(b, huge, sizeof huge, 7, 7), MG_ERR_LIMIT,
                 "65536 bytes, longer than the 65535");
    MG_CHECK_OK(t, mg_bpe_add_token(b, huge, sizeof huge - 1, 7, 7)); /* the longest */
    mg_bpe_free(b);
    /* TOKEN_RANK derives pairs of ids from strings: an id must name one token */
    MG_CHECK_OK(t, mg_bpe_create(&b, MG_BPE_TOKEN_RANK));
    add_bytes(t, b, 0);
    add_str(t, b, "ab", 300, 300);
    add_str(t, b, "cd", 300, 301);
    MG_CHECK_ERR(t, mg_bpe_finalize(b, 1), MG_ERR_FORMAT, "id 300 belongs to two tokens");
    mg_bpe_free(b);
}

/* ---- randomized comparison with a naive reference ---- */

typedef struct {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r, uint32_t n)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return (uint32_t)((r->s >> 11) % n);
}

#define MAXTOK 600
#define MAXLEN 32

/* The four bytes that random tokens and texts are made of (a round may change them). */
static uint8_t alphabet[4] = {'a', 'b', 'c', 'd'};

typedef struct {
    uint8_t bytes[MAXTOK][MAXLEN];
    size_t len[MAXTOK];
    int32_t id[MAXTOK], rank[MAXTOK];
    size_t n;
    int32_t merge_l[MAXTOK * 2], merge_r[MAXTOK * 2]; /* token indices */
    size_t n_merges;
} vocab;

static int64_t vocab_find(const vocab *v, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->len[i] == n && memcmp(v->bytes[i], s, n) == 0) return (int64_t)i;
    return -1;
}

/* Bytes 0..255, then tokens made of two earlier tokens over the alphabet. */
static void make_vocab(vocab *v, rng *r, size_t n_extra)
{
    v->n = v->n_merges = 0;
    for (int c = 0; c < 256; c++) {
        v->bytes[v->n][0] = (uint8_t)c;
        v->len[v->n++] = 1;
    }
    size_t guard = 0;
    while (v->n < 256 + n_extra && guard++ < 100000) {
        uint32_t made = (uint32_t)(v->n - 256);
        size_t a = made == 0 || rnd(r, 3) == 0 ? alphabet[rnd(r, 4)] : 256 + rnd(r, made);
        size_t b = made == 0 || rnd(r, 2) ? alphabet[rnd(r, 4)] : 256 + rnd(r, made);
        if (v->len[a] + v->len[b] > MAXLEN) continue;
        uint8_t cat[MAXLEN];
        memcpy(cat, v->bytes[a], v->len[a]);
        memcpy(cat + v->len[a], v->bytes[b], v->len[b]);
        if (vocab_find(v, cat, v->len[a] + v->len[b]) >= 0) continue;
        memcpy(v->bytes[v->n], cat, v->len[a] + v->len[b]);
        v->len[v->n] = v->len[a] + v->len[b];
        v->merge_l[v->n_merges] = (int32_t)a;
        v->merge_r[v->n_merges++] = (int32_t)b;
        v->n++;
    }
    /* ids: a shuffled permutation; ranks: another one */
    for (size_t i = 0; i < v->n; i++) v->id[i] = v->rank[i] = (int32_t)i;
    for (size_t i = v->n - 1; i > 0; i--) {
        size_t j = rnd(r, (uint32_t)(i + 1)), k = rnd(r, (uint32_t)(i + 1));
        int32_t x = v->id[i];
        v->id[i] = v->id[j];
        v->id[j] = x;
        x = v->rank[i];
        v->rank[i] = v->rank[k];
        v->rank[k] = x;
    }
    /* extra merges: duplicates of listed pairs (later rank wins) */
    size_t base = v->n_merges;
    for (size_t i = 0; i < base / 4; i++) {
        size_t m = rnd(r, (uint32_t)base);
        v->merge_l[v->n_merges] = v->merge_l[m];
        v->merge_r[v->n_merges++] = v->merge_r[m];
    }
    for (size_t i = v->n_merges - 1; i > 0; i--) { /* shuffle the merge order */
        size_t j = rnd(r, (uint32_t)(i + 1));
        int32_t l = v->merge_l[i], rr = v->merge_r[i];
        v->merge_l[i] = v->merge_l[j];
        v->merge_r[i] = v->merge_r[j];
        v->merge_l[j] = l;
        v->merge_r[j] = rr;
    }
}

/* Pair ranks of token indices x, y (precomputed by fill_pair_table): TOKEN_RANK by the
 * concatenation, PAIR_RANK by the last listed merge; -1 if none. */
static int32_t pair_rank[MAXTOK][MAXTOK], pair_tok[MAXTOK][MAXTOK];

static void fill_pair_table(const vocab *v, mg_bpe_mode mode)
{
    for (size_t x = 0; x < v->n; x++) {
        for (size_t y = 0; y < v->n; y++) {
            pair_rank[x][y] = pair_tok[x][y] = -1;
            if (v->len[x] + v->len[y] > MAXLEN) continue;
            uint8_t cat[2 * MAXLEN];
            memcpy(cat, v->bytes[x], v->len[x]);
            memcpy(cat + v->len[x], v->bytes[y], v->len[y]);
            int64_t tok = vocab_find(v, cat, v->len[x] + v->len[y]);
            if (tok < 0) continue;
            pair_tok[x][y] = (int32_t)tok;
            if (mode == MG_BPE_TOKEN_RANK) pair_rank[x][y] = v->rank[tok];
        }
    }
    for (size_t m = 0; mode == MG_BPE_PAIR_RANK && m < v->n_merges; m++)
        pair_rank[v->merge_l[m]][v->merge_r[m]] = (int32_t)m;
}

/* Naive BPE: symbols are token indices; returns the number of ids written to out. */
static size_t ref_encode(const vocab *v, int shortcut, const uint8_t *s, size_t n,
                         int32_t *out)
{
    int64_t whole = n <= MAXLEN ? vocab_find(v, s, n) : -1;
    if (n == 1 || (shortcut && whole >= 0)) {
        out[0] = v->id[n == 1 ? s[0] : whole];
        return 1;
    }
    size_t *sym = malloc(n * sizeof *sym), m = n;
    for (size_t i = 0; i < n; i++) sym[i] = s[i];
    for (;;) {
        int64_t best = -1, best_tok = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < m; i++) {
            int64_t rk = pair_rank[sym[i]][sym[i + 1]];
            if (rk >= 0 && (best < 0 || rk < best)) best = rk, best_tok = pair_tok[sym[i]][sym[i + 1]], at = i;
        }
        if (best < 0) break;
        sym[at] = (size_t)best_tok;
        memmove(sym + at + 1, sym + at + 2, (m - at - 2) * sizeof *sym);
        m--;
    }
    for (size_t i = 0; i < m; i++) out[i] = v->id[sym[i]];
    free(sym);
    return m;
}

static mg_bpe *build_model(mg_test_ctx *t, const vocab *v, mg_bpe_mode mode, int shortcut)
{
    mg_bpe *b;
    MG_CHECK_OK(t, mg_bpe_create(&b, mode));
    for (size_t i = 0; i < v->n; i++)
        MG_CHECK_OK(t, mg_bpe_add_token(b, v->bytes[i], v->len[i], v->id[i], v->rank[i]));
    for (size_t m = 0; mode == MG_BPE_PAIR_RANK && m < v->n_merges; m++) {
        size_t l = (size_t)v->merge_l[m], r = (size_t)v->merge_r[m];
        MG_CHECK_OK(t, mg_bpe_add_merge(b, v->bytes[l], v->len[l], v->bytes[r], v->len[r]));
    }
    MG_CHECK_OK(t, mg_bpe_finalize(b, shortcut));
    return b;
}

/* New ids for v's tokens in which the ranks order as the merged ids (what the packed pair
 * table needs, bpe_impl.h): TOKEN_RANK: a token's id is its rank; PAIR_RANK: the bytes
 * first, then every token made by a merge in the order of its pair's rank (its last
 * listing). */
static void order_ids(vocab *v, mg_bpe_mode mode)
{
    static int32_t last[MAXTOK], made[2 * MAXTOK];
    if (mode == MG_BPE_TOKEN_RANK) {
        for (size_t i = 0; i < v->n; i++) v->id[i] = v->rank[i];
        return;
    }
    for (size_t i = 0; i < v->n; i++) last[i] = -1;
    for (size_t m = 0; m < v->n_merges; m++) {
        size_t l = (size_t)v->merge_l[m], r = (size_t)v->merge_r[m];
        uint8_t cat[2 * MAXLEN];
        memcpy(cat, v->bytes[l], v->len[l]);
        memcpy(cat + v->len[l], v->bytes[r], v->len[r]);
        made[m] = (int32_t)vocab_find(v, cat, v->len[l] + v->len[r]);
        last[made[m]] = (int32_t)m;
    }
    int32_t next = 0;
    for (size_t i = 0; i < v->n; i++)
        if (last[i] < 0) v->id[i] = next++;
    for (size_t m = 0; m < v->n_merges; m++)
        if (last[made[m]] == (int32_t)m) v->id[made[m]] = next++;
}

/* A random vocabulary (300 tokens past the bytes) in v, its model and a cache for it;
 * ordered: with ids in which its ranks order (order_ids), so that the model packs its pair
 * table, else with ids and ranks that do not (checked both ways). */
static mg_bpe *random_model(mg_test_ctx *t, rng *r, vocab *v, mg_bpe_mode mode, int shortcut,
                            int ordered, mg_bpe_cache **c)
{
    make_vocab(v, r, 300);
    if (ordered) order_ids(v, mode);
    fill_pair_table(v, mode);
    mg_bpe *b = build_model(t, v, mode, shortcut);
    MG_CHECK(t, mg_bpe_pairs_packed(b) == (ordered != 0));
    MG_CHECK_OK(t, mg_bpe_cache_create(c, b));
    return b;
}

static void random_round(mg_test_ctx *t, rng *r, mg_bpe_mode mode, int shortcut, int ordered)
{
    static vocab v;
    mg_bpe_cache *c;
    mg_bpe *b = random_model(t, r, &v, mode, shortcut, ordered, &c);
    uint8_t text[3000];
    int32_t want[3000];
    for (int k = 0; k < 400 && t->failures == 0; k++) {
        size_t n = k < 300 ? 1 + rnd(r, 100) : 1 + rnd(r, sizeof text);
        for (size_t i = 0; i < n; i++) text[i] = (uint8_t)(rnd(r, 16) ? alphabet[rnd(r, 4)] : rnd(r, 256));
        size_t nw = ref_encode(&v, shortcut, text, n, want);
        mg_ids ids = {0};
        MG_CHECK_OK(t, mg_bpe_encode_piece(b, c, text, n, &ids));
        int same = ids.n == nw;
        for (size_t i = 0; same && i < nw; i++) same = ids.v[i] == want[i];
        if (!same)
            mg_test_fail(t, __FILE__, __LINE__, "mode %d shortcut %d ordered %d: piece of %zu "
                         "bytes: %zu ids, reference %zu", (int)mode, shortcut, ordered, n, ids.n,
                         nw);
        mg_ids_free(&ids);
    }
    mg_bpe_cache_free(c);
    mg_bpe_free(b);
}

MG_TEST(bpe_random_vs_reference)
{
    rng r = {0x9E3779B97F4A7C15ULL};
    for (int round = 0; round < 6; round++) { /* odd rounds: packed pair tables */
        random_round(t, &r, MG_BPE_TOKEN_RANK, 1, round % 2);
        random_round(t, &r, MG_BPE_TOKEN_RANK, 0, round % 2);
        random_round(t, &r, MG_BPE_PAIR_RANK, 0, round % 2);
        random_round(t, &r, MG_BPE_PAIR_RANK, 1, round % 2);
    }
    /* NUL and 0xFF bytes: the order of the sorted walks (bpe_splits.c) pads with zeros */
    memcpy(alphabet, "\0a\xff\x01", 4);
    for (int round = 0; round < 4; round++) {
        random_round(t, &r, MG_BPE_TOKEN_RANK, round % 2, round / 2);
        random_round(t, &r, MG_BPE_PAIR_RANK, round % 2, round / 2);
    }
    memcpy(alphabet, "abcd", 4);
}

/* Many more distinct pieces (2..16 bytes: the word cache; 17..22 and 40..299: the long
 * cache's tables of 64, 128 and 512 bytes, or no table when bytes and ids fit none) than
 * the caches hold, each drawn several times in random order, encoded as spans of one text
 * by one cache: every piece's ids must equal the reference's, whatever was evicted. */
static void cache_overflow_round(mg_test_ctx *t, rng *r, mg_bpe_mode mode, int shortcut,
                                 int ordered)
{
    enum { POOL = 1200000, LONG_EVERY = 8, WIDE_EVERY = 7, MAX_LEN = 299 };
    enum { DRAWS = 1600000, BATCH = 4096 };
    static vocab v;
    mg_bpe_cache *c;
    mg_bpe *b = random_model(t, r, &v, mode, shortcut, ordered, &c);
    uint32_t *off = malloc(POOL * sizeof *off);
    uint16_t *len = malloc(POOL * sizeof *len);
    uint8_t *pool = malloc((size_t)POOL * 24 + (size_t)POOL / LONG_EVERY / WIDE_EVERY * MAX_LEN);
    uint8_t *text = malloc((size_t)BATCH * MAX_LEN);
    mg_span *spans = malloc(BATCH * sizeof *spans);
    int32_t want[MAX_LEN];
    MG_CHECK(t, off && len && pool && text && spans);
    size_t used = 0;
    for (size_t i = 0; i < POOL; i++) { /* short pieces; every LONG_EVERY-th is long */
        len[i] = (uint16_t)(i % LONG_EVERY ? 2 + rnd(r, 15)
                            : i % (LONG_EVERY * WIDE_EVERY) ? 17 + rnd(r, 6)
                                                            : 40 + rnd(r, MAX_LEN - 39));
        off[i] = (uint32_t)used;
        for (size_t k = 0; k < len[i]; k++) pool[used + k] = (uint8_t)('a' + rnd(r, 6));
        used += len[i];
    }
    mg_ids ids = {0};
    for (size_t d = 0; d < DRAWS && t->failures == 0; d += BATCH) {
        size_t at = 0;
        for (size_t i = 0; i < BATCH; i++) {
            size_t p = rnd(r, POOL);
            memcpy(text + at, pool + off[p], len[p]);
            spans[i] = (mg_span){(uint32_t)at, len[p]};
            at += len[p];
        }
        ids.n = 0;
        MG_CHECK_OK(t, mg_bpe_encode_spans(b, c, (const char *)text, spans, BATCH, &ids));
        size_t k = 0;
        for (size_t i = 0; i < BATCH && t->failures == 0; i++) {
            size_t nw = ref_encode(&v, shortcut, text + spans[i].off, spans[i].len, want);
            int same = k + nw <= ids.n;
            for (size_t j = 0; same && j < nw; j++) same = ids.v[k + j] == want[j];
            if (!same)
                mg_test_fail(t, __FILE__, __LINE__, "mode %d shortcut %d: draw %zu (%u bytes) "
                             "differs from the reference", (int)mode, shortcut, d + i,
                             spans[i].len);
            k += nw;
        }
        MG_CHECK(t, k == ids.n);
    }
    mg_ids_free(&ids);
    free(off);
    free(len);
    free(pool);
    free(text);
    free(spans);
    mg_bpe_cache_free(c);
    mg_bpe_free(b);
}

MG_TEST(bpe_cache_past_capacity)
{
    rng r = {0x2545F4914F6CDD1DULL};
    cache_overflow_round(t, &r, MG_BPE_TOKEN_RANK, 1, 0);
    cache_overflow_round(t, &r, MG_BPE_PAIR_RANK, 0, 1);
}

/* ---- TestPlans.txt (gpt-tokenizer's expected ids for the OpenAI encodings) ---- */

static const char *plan_file(const char *enc)
{
    if (!strcmp(enc, "p50k_edit")) return "p50k_base";
    return enc;
}

typedef struct {
    char name[32];
    mg_tokenizer *tk;
    mg_encoder *enc;
} plan_tok;

/* The tokenizer for encoding `name`, created on first use (up to 5 kept). */
static mg_encoder *plan_encoder(mg_test_ctx *t, plan_tok *cache, const char *name)
{
    size_t i = 0;
    for (; i < 5 && cache[i].tk; i++)
        if (!strcmp(cache[i].name, name)) return cache[i].enc;
    if (i == 5) return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/%s.tiktoken", mg_test_vocab_dir(), plan_file(name));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "TikTokenizer";
    o.model = path;
    o.tiktoken_pattern = name;
    snprintf(cache[i].name, sizeof cache[i].name, "%s", name);
    MG_CHECK_OK(t, mg_tokenizer_create(&cache[i].tk, &o));
    if (!cache[i].tk) return NULL;
    MG_CHECK_OK(t, mg_encoder_create(&cache[i].enc, cache[i].tk));
    return cache[i].enc;
}

/* Parses "[1, 2, 3]" into ids. */
static void parse_id_list(const char *s, mg_ids *ids)
{
    ids->n = 0;
    for (const char *p = strchr(s, '['); p && *p && *p != ']';) {
        char *end;
        long long v = strtoll(p + 1, &end, 10);
        if (end == p + 1) break;
        mg_ids_push(ids, v);
        p = end;
    }
}

static int ids_equal(const mg_ids *a, const mg_ids *b)
{
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i] != b->v[i]) return 0;
    return 1;
}

MG_TEST(bpe_tiktoken_testplans)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/TestPlans.txt", mg_test_vocab_dir());
    char *data = mg_test_read_file(path, NULL);
    MG_CHECK(t, data != NULL);
    if (!data) return;
    plan_tok toks[5] = {{{0}, NULL, NULL}};
    mg_ids want = {0}, got = {0};
    size_t cases = 0;
    char name[32] = "";
    for (char *line = data, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (!strncmp(line, "EncodingName: ", 14)) snprintf(name, sizeof name, "%s", line + 14);
        if (strncmp(line, "Sample: ", 8) != 0 || !next || strncmp(next, "Encoded: ", 9) != 0)
            continue;
        mg_encoder *e = plan_encoder(t, toks, name);
        if (!e) break;
        parse_id_list(next, &want);
        got.n = 0;
        MG_CHECK_OK(t, mg_encode(e, line + 8, strlen(line + 8), &got));
        if (!ids_equal(&got, &want))
            mg_test_fail(t, __FILE__, __LINE__, "%s \"%.60s\": %zu ids, expected %zu", name,
                         line + 8, got.n, want.n);
        cases++;
    }
    MG_CHECK_EQ_INT(t, cases, 313);
    for (int i = 0; i < 5; i++) {
        mg_encoder_free(toks[i].enc);
        mg_tokenizer_free(toks[i].tk);
    }
    mg_ids_free(&want);
    mg_ids_free(&got);
    free(data);
}
