/* bpe_splits.c — the pair table of a TOKEN_RANK model (contract in bpe_impl.h): every
 * split of a token t into two tokens l || r is the pair (l, r) -> (rank of t, t).
 *
 * Looking up every prefix and suffix of every token in the token table is ~2M lookups at
 * random for o200k_base's 200K tokens (0.3 s). Instead, two walks over the tokens in
 * sorted order find them without a lookup:
 *   - in lexicographic order, the tokens that are prefixes of token u are exactly the ones
 *     on a stack that holds the chain of prefixes of the token before u, once the ones
 *     longer than the common prefix of u and that token are popped (every token between a
 *     prefix p of u and u starts with p, so p stays on the stack until u). The forward
 *     walk keeps each token's prefixes (length, id);
 *   - in the order of the reversed strings, the same stack holds the suffixes of u; the
 *     backward walk matches them with u's prefixes: a prefix of k bytes and a suffix of
 *     len(u) - k bytes make a pair.
 * A walk sorts records of (first 8 bytes of the string in its direction, big-endian and
 * zero-padded; the token) by a radix sort on those 8 bytes, then sorts each run of equal
 * keys by the whole strings; the common prefix of neighbours comes mostly from the keys.
 * Each pair comes from one token (l || r is one string), so the order of the insertions
 * does not matter.
 */
#include "tok/bpe_impl.h"

#include <stdlib.h>

/* One token in a walk: what the walk reads of it, so that it reads nothing else at random
 * (but the bytes past the key of long tokens). */
typedef struct {
    uint64_t key; /* its first 8 bytes in the walk's direction, big-endian, zero-padded */
    uint32_t off; /* of its bytes in mg_bpe.bytes (a TOKEN_RANK model has < 4 GiB of them) */
    uint32_t len;
    int32_t id, rank;
} walk_rec;

/* A prefix or suffix: its length and id. */
typedef struct {
    uint32_t len;
    int32_t id;
} part;

/* Pairs waiting for their insertion, their slots prefetched (the inserts are the walks'
 * only writes at random: a batch of them overlaps its misses). */
#define PAIR_BATCH 32

typedef struct {
    int32_t left, right, merged;
    uint32_t rank;
} pending_pair;

typedef struct {
    const mg_bpe *b;
    int rev; /* 0: forward (prefixes), 1: backward (suffixes) */
} walk;

/* Byte i of token t in the walk's direction. */
static inline uint8_t byte_at(const walk *w, const walk_rec *r, size_t i)
{
    const uint8_t *s = w->b->bytes + r->off;
    return w->rev ? s[r->len - 1 - i] : s[i];
}

static uint64_t walk_key(const uint8_t *s, size_t n, int rev)
{
    uint64_t w = 0;
    size_t m = n < 8 ? n : 8;
    if (!rev) {
        for (size_t i = 0; i < m; i++) w |= (uint64_t)s[i] << (56 - 8 * i);
    } else {
        for (size_t i = 0; i < m; i++) w |= (uint64_t)s[n - 1 - i] << (56 - 8 * i);
    }
    return w;
}

/* The length of the common prefix of a and b in the walk's direction. */
static size_t common_prefix(const walk *w, const walk_rec *a, const walk_rec *b)
{
    size_t m = a->len < b->len ? a->len : b->len;
    uint64_t x = a->key ^ b->key;
    size_t k = x ? (size_t)__builtin_clzll(x) / 8 : 8;
    if (k < 8 || m <= 8) return k < m ? k : m;
    while (k < m && byte_at(w, a, k) == byte_at(w, b, k)) k++;
    return k;
}

/* <0, 0, >0 as a sorts before, with, after b (lexicographic in the walk's direction; a
 * prefix first). */
static int compare(const walk *w, const walk_rec *a, const walk_rec *b)
{
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    size_t k = common_prefix(w, a, b);
    if (k < a->len && k < b->len) return byte_at(w, a, k) < byte_at(w, b, k) ? -1 : 1;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Sorts a run of records with equal keys (short: insertion sort). */
static void sort_run(const walk *w, walk_rec *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        walk_rec x = r[i];
        size_t j = i;
        for (; j > 0 && compare(w, &x, &r[j - 1]) < 0; j--) r[j] = r[j - 1];
        r[j] = x;
    }
}

/* Sorts r[0, n) by key (LSD radix, one byte a pass, passes where every key has the same
 * byte skipped; the passes go back and forth between r and tmp, n records each), then each
 * run of equal keys by its strings. Returns where the sorted records are (r or tmp). */
static walk_rec *sort_records(const walk *w, walk_rec *r, walk_rec *tmp, size_t n)
{
    for (int shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[(r[i].key >> shift & 0xFF) + 1]++;
        if (count[(r[0].key >> shift & 0xFF) + 1] == n) continue;
        for (size_t c = 1; c < 257; c++) count[c] += count[c - 1];
        for (size_t i = 0; i < n; i++) tmp[count[r[i].key >> shift & 0xFF]++] = r[i];
        walk_rec *sorted = tmp;
        tmp = r;
        r = sorted;
    }
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && r[j].key == r[i].key; j++) {
        }
        if (j - i > 1) sort_run(w, r + i, j - i);
    }
    return r;
}

/* The records of every token in the walk's order, in r or tmp (returned). */
static walk_rec *walk_order(const walk *w, walk_rec *r, walk_rec *tmp)
{
    const mg_bpe *b = w->b;
    for (size_t t = 0; t < b->n_tok; t++) {
        r[t] = (walk_rec){.key = walk_key(b->bytes + b->tok_off[t], b->tok_len[t], w->rev),
                          .off = (uint32_t)b->tok_off[t], .len = b->tok_len[t],
                          .id = b->tok_id[t], .rank = b->tok_rank[t]};
    }
    return b->n_tok ? sort_records(w, r, tmp, b->n_tok) : r;
}

typedef struct {
    uint32_t first, count;
} span32;

/* The per-token prefixes of the forward walk, those of the token of id i at
 * at[of[i].first, +of[i].count), shortest first (at has room for every proper prefix of
 * every token: its pages beyond the prefixes found are never touched); and the pairs
 * found, not yet inserted. */
typedef struct {
    part *at;
    size_t n, cap;
    span32 *of;
    pending_pair pend[PAIR_BATCH];
    size_t n_pend;
} prefixes;

static mg_status keep_prefixes(prefixes *p, int32_t id, const part *stack, size_t depth)
{
    MG_ASSERT(p->n + depth <= p->cap);
    MG_RETURN_IF(p->n + depth > UINT32_MAX, MG_ERR_LIMIT, "BPE vocabulary too large");
    p->of[id] = (span32){(uint32_t)p->n, (uint32_t)depth};
    memcpy(p->at + p->n, stack, depth * sizeof *stack);
    p->n += depth;
    return MG_OK;
}

static mg_status flush_pairs(mg_bpe *b, prefixes *p)
{
    for (size_t i = 0; i < p->n_pend; i++) {
        const pending_pair *q = &p->pend[i];
        MG_FORWARD(mg_bpe_pair_put(b, q->left, q->right, q->rank, q->merged));
    }
    p->n_pend = 0;
    return MG_OK;
}

static mg_status add_pair(mg_bpe *b, prefixes *p, int32_t left, int32_t right,
                          const walk_rec *u)
{
    if (p->n_pend == PAIR_BATCH) MG_FORWARD(flush_pairs(b, p));
    p->pend[p->n_pend++] = (pending_pair){left, right, u->id, (uint32_t)u->rank};
    mg_bpe_prefetch_pair(b, left, right);
    return MG_OK;
}

/* Makes the pairs of token u from its prefixes (p) and suffixes (stack), both shortest
 * first: a prefix of k bytes and a suffix of len(u) - k. */
static mg_status emit_pairs(mg_bpe *b, prefixes *p, const walk_rec *u, const part *stack,
                            size_t depth)
{
    const part *pre = p->at + p->of[u->id].first;
    size_t np = p->of[u->id].count, i = 0;
    for (size_t j = depth; j-- > 0 && i < np;) { /* suffixes longest first */
        size_t want = u->len - stack[j].len;
        while (i < np && pre[i].len < want) i++;
        if (i < np && pre[i].len == want) MG_FORWARD(add_pair(b, p, pre[i].id, stack[j].id, u));
    }
    return MG_OK;
}

/* The backward walk reads each token's prefixes at random: it asks for them
 * PREFETCH_AHEAD tokens ahead (where they are), and half as far ahead (they). */
#define PREFETCH_AHEAD 16

static void prefetch_prefixes(const prefixes *p, const walk_rec *r, size_t i, size_t n)
{
    if (i + PREFETCH_AHEAD < n) __builtin_prefetch(&p->of[r[i + PREFETCH_AHEAD].id]);
    if (i + PREFETCH_AHEAD / 2 < n)
        __builtin_prefetch(p->at + p->of[r[i + PREFETCH_AHEAD / 2].id].first);
}

/* One walk over r (in the walk's order): the stack of the tokens that are prefixes (in the
 * walk's direction) of each token in turn. Forward: keeps them in p; backward: emits the
 * pairs. stack has room for the longest token. */
static mg_status run_walk(mg_bpe *b, const walk *w, const walk_rec *r, part *stack,
                          prefixes *p)
{
    size_t depth = 0;
    for (size_t i = 0; i < b->n_tok; i++) {
        const walk_rec *u = &r[i];
        if (w->rev) prefetch_prefixes(p, r, i, b->n_tok);
        size_t common = i ? common_prefix(w, &r[i - 1], u) : 0;
        while (depth > 0 && stack[depth - 1].len > common) depth--;
        if (!w->rev) MG_FORWARD(keep_prefixes(p, u->id, stack, depth));
        else if (depth > 0) MG_FORWARD(emit_pairs(b, p, u, stack, depth));
        stack[depth++] = (part){u->len, u->id};
    }
    return MG_OK;
}

static mg_status build_pairs(mg_bpe *b, walk_rec *r, walk_rec *tmp, part *stack,
                             prefixes *p)
{
    walk fw = {b, 0}, bw = {b, 1};
    MG_FORWARD(run_walk(b, &fw, walk_order(&fw, r, tmp), stack, p));
    MG_FORWARD(run_walk(b, &bw, walk_order(&bw, r, tmp), stack, p));
    return flush_pairs(b, p);
}

mg_status mg_bpe_build_token_rank_pairs(mg_bpe *b)
{
    MG_RETURN_IF(b->bytes_len > UINT32_MAX, MG_ERR_LIMIT, "BPE vocabulary too large");
    size_t n = b->n_tok, longest = 0, total = 0;
    for (size_t t = 0; t < n; t++) {
        if (b->tok_len[t] > longest) longest = b->tok_len[t];
        total += b->tok_len[t]; /* a token of L bytes has at most L proper prefixes */
    }
    walk_rec *r = mg_malloc((n ? n : 1) * sizeof *r), *tmp = mg_malloc((n ? n : 1) * sizeof *r);
    part *stack = mg_malloc((longest + 1) * sizeof *stack);
    prefixes p = {.of = mg_malloc((b->n_ids ? b->n_ids : 1) * sizeof *p.of),
                  .at = mg_malloc((total + 1) * sizeof *p.at), .cap = total + 1};
    mg_status st = r && tmp && stack && p.of && p.at ? build_pairs(b, r, tmp, stack, &p)
                                                     : MG_ERR_NOMEM;
    free(r);
    free(tmp);
    free(stack);
    free(p.at);
    free(p.of);
    return st;
}
