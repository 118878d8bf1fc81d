/* bpe_merge.c — encoding one pre-token with a finalized BPE model (contract in bpe.h).
 *
 *   1. pieces of 2..SHORT_KEY_MAX bytes (of 1.. in mg_bpe_encode_spans, where a piece's
 *      key is two 8-byte loads and masks with no branch on its length, except for the
 *      pieces within 8 bytes of the text's ends) are looked up in the per-thread word
 *      cache: a 4-way set-associative table of WORD_SETS sets of two 64-byte lines
 *      (WORD_SETS * 128 bytes = 16 MiB, the fixed budget that keeps one worker under 100
 *      MB; pages are mapped on first use, so a small corpus costs less). An entry holds the
 *      piece as two words (its first and last 8 bytes, or its bytes when shorter: with the
 *      length, that determines the piece) and up to WORD_IDS_MAX ids. The set's ways are
 *      in recency order: a new entry goes to way 0 and pushes the others down (way 3
 *      leaves), and a hit in the second line (ways 2, 3) moves its entry to way 0; a hit in
 *      the first line changes nothing, so the common hit reads one line and writes none.
 *      (With two ways, three pieces of one text that shared a line missed at every
 *      occurrence: a warm pass over a 4.2 MB sample merged 2270 pieces again, with four
 *      280.) Longer pieces, and short ones with more ids, use the long cache: three
 *      LONG_WAYS-way set-associative tables whose entries hold the piece's bytes and then
 *      its ids, of 64, 128 and 512 bytes (4, 3 and 1 MiB: long_entry, long_sets); a piece
 *      goes to the smallest table its bytes and ids fit, and a lookup tries the tables it
 *      could be in, smallest first. (With only the 128 and 512 tables, 6 and 2 MiB, a
 *      warm pass over the 120 MB bench corpus merged 80K of its long pieces again, with
 *      these 56K: 86% of the pieces put fit 64 bytes. The 512 table holds the box-drawing
 *      and `====` lines of 60-200 bytes, merged again at every occurrence before it was.)
 *      Their ways are in recency order too (a new entry or a hit goes to way 0, the ones
 *      before it move down one). No table grows, so memory stays bounded whatever the
 *      corpus (24 MiB per encoder). mg_bpe_encode_spans takes the spans KEY_BATCH at a
 *      time and makes each batch's word-cache keys, their sets' first lines prefetched,
 *      one batch before its lookups, which by then rarely wait on memory (with the keys
 *      made just before their own batch's lookups, the cold pass over the bench corpus
 *      took 3-13% more time, the warm one 3-6%);
 *   2. the whole-piece shortcut (if the model has it);
 *   3. the merge: repeatedly merge the adjacent pair with the lowest rank, leftmost first,
 *      until no adjacent pair has a rank. Pieces under SHORT_MAX bytes use a linear scan
 *      over an id array (what tiktoken does); longer ones a binary heap of (rank, position)
 *      with lazy invalidation over a linked list of symbols, O(n log n).
 * Both merge paths pick the same pair at every step: the minimum of (rank, position).
 * Ids are written straight into the output array, reserved once per call for the worst
 * case (a byte-level piece of n bytes has at most n ids).
 * Char-initial models (mg_bpe_encode_chars) share the long cache and both merge loops;
 * only the initial symbols differ (characters, byte fallback, unk; see bpe.h).
 */
#include "tok/bpe_impl.h"

#include <stdlib.h>

#include "mg/grow.h"
#include "mg/pages.h"

#define LONG_WAYS 4
/* The long cache's tables, by entry size: long_sets[i] sets of LONG_WAYS entries of
 * long_entry[i] bytes (4 + 3 + 1 MiB) */
#define LONG_TABLES 3
#define WIDE_ENTRY 512 /* the largest entry: the last table's */
static const size_t long_entry[LONG_TABLES] = {64, 128, WIDE_ENTRY};
static const size_t long_sets[LONG_TABLES] = {16384, 6144, 512};
#define WORD_SET_BITS 17
#define WORD_SETS (1u << WORD_SET_BITS)
#define WORD_WAYS 4
#define SHORT_KEY_MAX 16
#define WORD_IDS_MAX 3
/* nids of a word-cache entry whose piece has more ids: they are in the long cache */
#define WORD_IN_LONG 0xFF
/* Room a caller of encode_into leaves after the piece's worst case (unconditional stores) */
#define OUT_SLACK 4
#define SHORT_MAX 64
#define KEY_BATCH 16
/* Scratch larger than this (in symbols / heap entries) is released after the piece. */
#define KEEP_SCRATCH_MAX (1u << 16)
/* Helpers shared by the byte-level and char-initial paths stay inlined into each, so the
 * byte-level path compiles as it did before the char path existed. */
#define HOT static inline __attribute__((always_inline))

/* The header of a long-cache entry; its key bytes follow, then its ids at the next
 * multiple of 4, within the table's entry size. */
typedef struct {
    uint32_t hash;
    uint16_t klen, nids;
    uint8_t data[];
} cache_entry;

/* One long-cache table: sets of LONG_WAYS entries of `entry` bytes, from page-aligned
 * base. */
typedef struct {
    uint8_t *base;
    size_t sets, entry;
} cache_table;

/* One piece of 1..SHORT_KEY_MAX bytes (see word_key); len 0 = empty. */
typedef struct {
    uint64_t w0, w1;
    uint8_t len, nids; /* nids: 1..WORD_IDS_MAX, or WORD_IN_LONG */
    uint8_t pad[2];
    int32_t ids[WORD_IDS_MAX];
} word_entry;

/* Ways 0, 1 share the first 64-byte line, ways 2, 3 the second. */
typedef struct {
    _Alignas(128) word_entry way[WORD_WAYS];
} word_set;

typedef struct {
    uint64_t key; /* rank << 32 | position of the left symbol */
    int32_t left, right;
} heap_entry;

struct mg_bpe_cache {
    const mg_bpe *b;
    word_set *words; /* WORD_SETS sets, page-aligned */
    cache_table tables[LONG_TABLES]; /* the long cache, by entry size */
    /* merge scratch, indexed by byte position in the piece */
    int32_t *ids, *next, *prev;
    size_t sym_cap;
    heap_entry *heap;
    size_t heap_n, heap_cap;
};

/* Fresh zero pages (mg/pages.h): memory is touched only as entries fill. */
static int table_alloc(cache_table *t, size_t sets, size_t entry)
{
    t->base = mg_pages_alloc(sets * LONG_WAYS * entry);
    t->sets = sets;
    t->entry = entry;
    return t->base != NULL;
}

mg_status mg_bpe_cache_create(mg_bpe_cache **out, const mg_bpe *b)
{
    *out = NULL;
    MG_RETURN_IF(!b->finalized, MG_ERR_ARG, "BPE model not finalized");
    mg_bpe_cache *c = mg_calloc(1, sizeof *c);
    if (!c) return MG_ERR_NOMEM;
    c->b = b;
    c->words = mg_pages_alloc(WORD_SETS * sizeof *c->words);
    int ok = c->words != NULL;
    for (size_t i = 0; i < LONG_TABLES; i++)
        ok = table_alloc(&c->tables[i], long_sets[i], long_entry[i]) && ok;
    if (!ok) {
        mg_error_set(MG_ERR_NOMEM, "out of memory allocating the BPE cache");
        mg_bpe_cache_free(c);
        return MG_ERR_NOMEM;
    }
    *out = c;
    return MG_OK;
}

static void free_scratch(mg_bpe_cache *c)
{
    free(c->ids);
    free(c->next);
    free(c->prev);
    free(c->heap);
    c->ids = c->next = c->prev = NULL;
    c->heap = NULL;
    c->sym_cap = c->heap_cap = 0;
}

void mg_bpe_cache_free(mg_bpe_cache *c)
{
    if (!c) return;
    free_scratch(c);
    mg_pages_free(c->words, WORD_SETS * sizeof *c->words);
    for (size_t i = 0; i < LONG_TABLES; i++)
        mg_pages_free(c->tables[i].base, c->tables[i].sets * LONG_WAYS * c->tables[i].entry);
    free(c);
}

static mg_status reserve_symbols(mg_bpe_cache *c, size_t n)
{
    if (n <= c->sym_cap) return MG_OK;
    size_t cap = c->sym_cap ? c->sym_cap : 256;
    while (cap < n) cap *= 2;
    int32_t *a = mg_realloc(c->ids, cap * sizeof *a);
    if (!a) return MG_ERR_NOMEM;
    c->ids = a;
    if (!(a = mg_realloc(c->next, cap * sizeof *a))) return MG_ERR_NOMEM;
    c->next = a;
    if (!(a = mg_realloc(c->prev, cap * sizeof *a))) return MG_ERR_NOMEM;
    c->prev = a;
    c->sym_cap = cap;
    return MG_OK;
}

/* ---- short pieces: linear scan (n < SHORT_MAX) ---- */

/* Rank of the pair of ids[i], ids[i+1]. */
HOT uint32_t pair_at(const mg_bpe *b, const int32_t *ids, size_t i, int32_t *merged)
{
    return mg_bpe_pair_find(b, ids[i], ids[i + 1], merged);
}

/* The merge loop over m symbols ids[] with the ranks/results of their adjacent pairs
 * (rank[i], merged[i]: the pair of symbol i and the next live one). Symbols keep their
 * positions (no shifting): the right symbol of a merge dies, its rank becomes NO_RANK, and
 * nxt/prv link the live ones; the minimum (rank, position) is a scan over the rank array.
 * The survivors are compacted to the front at the end. */
HOT size_t merge_short_loop(const mg_bpe *b, int32_t *ids, uint32_t *rank, int32_t *merged,
                            size_t m)
{
    uint8_t nxt[SHORT_MAX], prv[SHORT_MAX];
    if (m < 2) return m;
    for (size_t i = 0; i < m; i++) {
        nxt[i] = (uint8_t)(i + 1);
        prv[i] = (uint8_t)(i - 1);
    }
    rank[m - 1] = MG_BPE_NO_RANK;
    for (;;) {
        /* the minimum of rank << 8 | position: the lowest rank, leftmost first, with a
         * conditional move per symbol instead of a branch the data decides */
        uint64_t lo = (uint64_t)rank[0] << 8;
        for (size_t i = 1; i + 1 < m; i++) {
            uint64_t key = (uint64_t)rank[i] << 8 | i;
            lo = key < lo ? key : lo;
        }
        size_t best = (size_t)(lo & 0xFF);
        if ((uint32_t)(lo >> 8) == MG_BPE_NO_RANK) break;
        size_t k = nxt[nxt[best]];
        ids[best] = merged[best];
        rank[nxt[best]] = MG_BPE_NO_RANK;
        nxt[best] = (uint8_t)k;
        rank[best] = MG_BPE_NO_RANK;
        if (k < m) {
            prv[k] = (uint8_t)best;
            rank[best] = mg_bpe_pair_find(b, ids[best], ids[k], &merged[best]);
        }
        if (best > 0) {
            size_t p = prv[best];
            rank[p] = mg_bpe_pair_find(b, ids[p], ids[best], &merged[p]);
        }
    }
    size_t out = 0;
    for (size_t i = 0; i < m; i = nxt[i]) ids[out++] = ids[i];
    return out;
}

/* Merges piece[0, n) into ids; returns the number of ids. */
static size_t merge_short(const mg_bpe *b, const uint8_t *p, size_t n, int32_t *ids)
{
    uint32_t rank[SHORT_MAX];
    int32_t merged[SHORT_MAX];
    for (size_t i = 0; i < n; i++) ids[i] = b->byte_id[p[i]];
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t g = b->grid[(size_t)p[i] << 8 | p[i + 1]];
        rank[i] = g == MG_BPE_EMPTY_KEY ? MG_BPE_NO_RANK : (uint32_t)(g >> 32);
        merged[i] = (int32_t)(uint32_t)g;
    }
    return merge_short_loop(b, ids, rank, merged, n);
}

/* Merges the m < SHORT_MAX initial symbols ids[] in place; returns the number of ids. */
static size_t merge_short_ids(const mg_bpe *b, int32_t *ids, size_t m)
{
    uint32_t rank[SHORT_MAX];
    int32_t merged[SHORT_MAX];
    for (size_t i = 0; i + 1 < m; i++) rank[i] = pair_at(b, ids, i, &merged[i]);
    return merge_short_loop(b, ids, rank, merged, m);
}

/* ---- long pieces: heap of (rank, position) + linked list ---- */

HOT void heap_sift_down(heap_entry *h, size_t n, size_t i)
{
    heap_entry e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h[c + 1].key < h[c].key) c++;
        if (h[c].key >= e.key) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static mg_status heap_push(mg_bpe_cache *c, uint32_t rank, size_t pos, int32_t l, int32_t r)
{
    MG_FORWARD(MG_GROW(c->heap, c->heap_cap, c->heap_n + 1, 1024));
    heap_entry e = {.key = (uint64_t)rank << 32 | pos, .left = l, .right = r};
    size_t i = c->heap_n++;
    while (i > 0 && c->heap[(i - 1) / 2].key > e.key) {
        c->heap[i] = c->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->heap[i] = e;
    return MG_OK;
}

HOT heap_entry heap_pop(mg_bpe_cache *c)
{
    heap_entry top = c->heap[0];
    c->heap[0] = c->heap[--c->heap_n];
    if (c->heap_n) heap_sift_down(c->heap, c->heap_n, 0);
    return top;
}

/* Pushes the pair starting at symbol position i (if i and its successor form one). */
static mg_status push_pair(mg_bpe_cache *c, int32_t i)
{
    if (i < 0 || c->next[i] < 0) return MG_OK;
    int32_t merged = -1, l = c->ids[i], r = c->ids[c->next[i]];
    uint32_t rank = mg_bpe_pair_find(c->b, l, r, &merged);
    if (rank == MG_BPE_NO_RANK) return MG_OK;
    return heap_push(c, rank, (size_t)i, l, r);
}

/* Applies a popped entry if it still describes a current pair. */
HOT mg_status apply_entry(mg_bpe_cache *c, heap_entry e)
{
    int32_t i = (int32_t)(uint32_t)e.key, j = c->next[i];
    if (c->ids[i] != e.left || j < 0 || c->ids[j] != e.right) return MG_OK; /* stale */
    int32_t merged = -1;
    (void)mg_bpe_pair_find(c->b, e.left, e.right, &merged);
    c->ids[i] = merged;
    c->ids[j] = -1;
    c->next[i] = c->next[j];
    if (c->next[j] >= 0) c->prev[c->next[j]] = i;
    MG_FORWARD(push_pair(c, c->prev[i]));
    return push_pair(c, i);
}

/* Links the n symbols of c->ids into a list. */
HOT void link_symbols(mg_bpe_cache *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c->prev[i] = (int32_t)i - 1;
        c->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    c->heap_n = 0;
}

/* Runs the heap merge to its end, then compacts the surviving symbols to the front. */
HOT mg_status merge_long_run(mg_bpe_cache *c, size_t *m)
{
    while (c->heap_n) MG_FORWARD(apply_entry(c, heap_pop(c)));
    *m = 0;
    for (int32_t i = 0; i >= 0; i = c->next[i]) c->ids[(*m)++] = c->ids[i];
    return MG_OK;
}

/* Merges piece[0, n) (n < 2^31) into c->ids[0, *m). */
static mg_status merge_long(mg_bpe_cache *c, const uint8_t *p, size_t n, size_t *m)
{
    const mg_bpe *b = c->b;
    MG_FORWARD(reserve_symbols(c, n));
    for (size_t i = 0; i < n; i++) c->ids[i] = b->byte_id[p[i]];
    link_symbols(c, n);
    for (size_t i = 0; i + 1 < n; i++) {
        uint64_t g = b->grid[(size_t)p[i] << 8 | p[i + 1]];
        if (g != MG_BPE_EMPTY_KEY)
            MG_FORWARD(heap_push(c, (uint32_t)(g >> 32), i, c->ids[i], c->ids[i + 1]));
    }
    return merge_long_run(c, m);
}

/* Merges the n initial symbols in c->ids into c->ids[0, *m). */
static mg_status merge_long_ids(mg_bpe_cache *c, size_t n, size_t *m)
{
    link_symbols(c, n);
    for (size_t i = 0; i + 1 < n; i++) MG_FORWARD(push_pair(c, (int32_t)i));
    return merge_long_run(c, m);
}

/* ---- word cache (pieces of 1..SHORT_KEY_MAX bytes) ---- */

typedef struct {
    uint64_t w0, w1;
    word_set *set; /* the piece's set */
} word_key;

/* The set of a key: the top bits of a multiplicative hash of both words and the length
 * (they depend on every bit of the key). */
HOT word_set *word_set_of(mg_bpe_cache *c, uint64_t w0, uint64_t w1, size_t n)
{
    uint64_t h = (w0 ^ (uint64_t)n << 59) * 0x9E3779B97F4A7C15ULL;
    h ^= (w1 + (h >> 29)) * 0xC2B2AE3D27D4EB4FULL;
    return &c->words[(size_t)(h >> (64 - WORD_SET_BITS))];
}

/* The piece as two words: its first and last 8 bytes (overlapping), or for n < 8 its bytes
 * as a little-endian integer and 0; with n this determines the piece. */
HOT word_key make_word_key(mg_bpe_cache *c, const uint8_t *p, size_t n)
{
    word_key k;
    if (n >= 8) {
        memcpy(&k.w0, p, 8);
        memcpy(&k.w1, p + n - 8, 8);
    } else {
        k.w0 = n >= 4 ? mg_bpe_load_tail(p, n) : p[0];
        if (n < 4 && n > 1) k.w0 |= (uint64_t)p[1] << 8 | (n > 2 ? (uint64_t)p[2] << 16 : 0);
        k.w1 = 0;
    }
    k.set = word_set_of(c, k.w0, k.w1, n);
    return k;
}

/* make_word_key for 1 <= n <= SHORT_KEY_MAX when the 8 bytes at p and the 8 bytes ending
 * at p + n may be read: two loads and masks, no branch on n. */
HOT word_key make_word_key_inner(mg_bpe_cache *c, const uint8_t *p, size_t n)
{
    /* [n]: the bytes of the first load that are the piece's / of the second that count */
    static const uint64_t first[SHORT_KEY_MAX + 1] = {
        0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL,
        0xFFFFFFFFFFFFFFULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
    static const uint64_t second[SHORT_KEY_MAX + 1] = {
        0, 0, 0, 0, 0, 0, 0, 0, 0, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL, ~0ULL};
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + n - 8, 8);
    word_key k;
    k.w0 = a & first[n];
    k.w1 = b & second[n];
    k.set = word_set_of(c, k.w0, k.w1, n);
    return k;
}

/* Is e the entry of the piece (n bytes, key k)? 0 if so, else nonzero. */
HOT uint64_t word_differs(const word_entry *e, const word_key *k, size_t n)
{
    return (e->w0 ^ k->w0) | (e->w1 ^ k->w1) | (e->len ^ n);
}

/* Moves ways 0 .. j-1 of set s down one (way j's entry is overwritten), freeing way 0. */
HOT void word_shift(word_set *s, size_t j)
{
    for (; j > 0; j--) s->way[j] = s->way[j - 1];
}

/* The piece's entry in the second line of set s, moved to way 0 (the others keep their
 * order), or NULL. */
static const word_entry *word_find_second(word_set *s, const word_key *k, size_t n)
{
    size_t j = !word_differs(&s->way[2], k, n) ? 2 : !word_differs(&s->way[3], k, n) ? 3 : 0;
    if (!j) return NULL;
    word_entry e = s->way[j];
    word_shift(s, j);
    s->way[0] = e;
    return &s->way[0];
}

/* The entry of the piece (n bytes, key k) in its set, or NULL. The two ways of the first
 * line are compared without a branch between them (which way holds a piece is the data's
 * choice); the second line is read only when the first does not hold the piece. */
HOT const word_entry *word_find(word_set *s, const word_key *k, size_t n)
{
    const word_entry *e0 = &s->way[0], *e1 = &s->way[1];
    uint64_t d0 = word_differs(e0, k, n), d1 = word_differs(e1, k, n);
    if (__builtin_expect((d0 != 0) & (d1 != 0), 0)) return word_find_second(s, k, n);
    return d0 == 0 ? e0 : e1;
}

HOT void word_put(word_set *s, const word_key *k, size_t n, const int32_t *ids, size_t nids)
{
    word_shift(s, WORD_WAYS - 1);
    word_entry *e = &s->way[0];
    e->w0 = k->w0;
    e->w1 = k->w1;
    e->len = (uint8_t)n;
    e->nids = nids <= WORD_IDS_MAX ? (uint8_t)nids : WORD_IN_LONG;
    if (nids <= WORD_IDS_MAX) memcpy(e->ids, ids, nids * sizeof *ids);
}

/* ---- long cache (pieces whose bytes and ids fit in one entry of either table) ---- */

static inline size_t ids_offset(size_t klen) { return (klen + 3) & ~(size_t)3; }

/* Does a piece of klen bytes with nids ids fit in an entry of `entry` bytes? */
static inline int entry_fits(size_t entry, size_t klen, size_t nids)
{
    return klen <= UINT16_MAX &&
           ids_offset(klen) + nids * sizeof(int32_t) <= entry - sizeof(cache_entry);
}

/* Does it fit in the long cache at all (the wide table's entries are the larger)? */
static inline int cache_fits(size_t klen, size_t nids)
{
    return entry_fits(WIDE_ENTRY, klen, nids);
}

/* Way 0 of the piece's set in t (the top 32 bits of h pick it); the other ways follow. */
static cache_entry *cache_set(const cache_table *t, uint64_t h)
{
    size_t set = (size_t)(((h >> 32) * (uint64_t)t->sets) >> 32);
    return (cache_entry *)(void *)(t->base + set * LONG_WAYS * t->entry);
}

static cache_entry *cache_way(const cache_table *t, cache_entry *set, size_t j)
{
    return (cache_entry *)(void *)((uint8_t *)set + j * t->entry);
}

static int cache_match(const cache_entry *e, const uint8_t *p, size_t n, uint64_t h)
{
    return e->klen == n && e->hash == (uint32_t)h && memcmp(e->data, p, n) == 0;
}

/* The bytes of e that hold something: its header, key and ids (the header alone if empty). */
static size_t entry_used(const cache_entry *e)
{
    size_t data = e->klen ? ids_offset(e->klen) + e->nids * sizeof(int32_t) : 0;
    return sizeof *e + data;
}

/* Moves ways 0 .. j-1 of set down one (way j's entry is overwritten), freeing way 0. */
static void cache_shift(const cache_table *t, cache_entry *set, size_t j)
{
    for (; j > 0; j--) {
        const cache_entry *from = cache_way(t, set, j - 1);
        memcpy(cache_way(t, set, j), from, entry_used(from));
    }
}

/* The entry of the piece in table t, moved to way 0, or NULL. */
HOT const cache_entry *table_get(const cache_table *t, const uint8_t *p, size_t n, uint64_t h)
{
    cache_entry *set = cache_set(t, h);
    if (cache_match(set, p, n, h)) return set;
    for (size_t j = 1; j < LONG_WAYS; j++) {
        cache_entry *e = cache_way(t, set, j);
        if (!cache_match(e, p, n, h)) continue;
        _Alignas(8) uint8_t hit[WIDE_ENTRY];
        size_t used = entry_used(e);
        memcpy(hit, e, used);
        cache_shift(t, set, j);
        memcpy(set, hit, used);
        return set;
    }
    return NULL;
}

/* The cached ids of the piece (and their number in *nids), or NULL. */
HOT const int32_t *cache_get(mg_bpe_cache *c, const uint8_t *p, size_t n, uint64_t h,
                             size_t *nids)
{
    const cache_entry *e = NULL;
    for (size_t i = 0; !e && i < LONG_TABLES; i++)
        if (entry_fits(long_entry[i], n, 1)) e = table_get(&c->tables[i], p, n, h);
    if (!e) return NULL;
    *nids = e->nids;
    return (const int32_t *)(const void *)(e->data + ids_offset(n));
}

HOT void cache_put(mg_bpe_cache *c, const uint8_t *p, size_t n, uint64_t h,
                   const int32_t *ids, size_t nids)
{
    if (!cache_fits(n, nids)) return;
    size_t i = 0;
    while (!entry_fits(long_entry[i], n, nids)) i++;
    const cache_table *t = &c->tables[i];
    cache_entry *e = cache_set(t, h);
    cache_shift(t, e, LONG_WAYS - 1);
    memcpy(e->data, p, n);
    memcpy(e->data + ids_offset(n), ids, nids * sizeof *ids);
    e->klen = (uint16_t)n;
    e->hash = (uint32_t)h;
    e->nids = (uint16_t)nids;
}

/* Reserves room for n more ids plus OUT_SLACK. */
static mg_status reserve_out(mg_ids *out, size_t n)
{
    size_t need = out->n + n + OUT_SLACK;
    if (need <= out->cap) return MG_OK;
    size_t cap = out->cap ? out->cap : 64;
    while (cap < need) cap *= 2;
    int64_t *v = mg_realloc(out->v, cap * sizeof *v);
    if (!v) return MG_ERR_NOMEM;
    out->v = v;
    out->cap = cap;
    return MG_OK;
}

static mg_status append_ids(mg_ids *out, const int32_t *ids, size_t n)
{
    MG_FORWARD(reserve_out(out, n));
    for (size_t i = 0; i < n; i++) out->v[out->n + i] = ids[i];
    out->n += n;
    return MG_OK;
}

/* The whole-piece shortcut: 1 (with the piece's id in small[0]) if the model has it and
 * the whole piece is a token. */
static int whole_piece(const mg_bpe *b, const uint8_t *p, size_t n, int32_t *small,
                       const int32_t **ids, size_t *nids)
{
    if (!b->shortcut) return 0;
    int32_t id = mg_bpe_find_id(b, p, n);
    if (id < 0) return 0;
    small[0] = id;
    *ids = small;
    *nids = 1;
    return 1;
}

/* Encodes a piece of 2+ bytes without the cache. Result in ids (SHORT) or c->ids. */
static mg_status encode_uncached(mg_bpe_cache *c, const uint8_t *p, size_t n, int32_t *small,
                                 const int32_t **ids, size_t *nids)
{
    const mg_bpe *b = c->b;
    if (whole_piece(b, p, n, small, ids, nids)) return MG_OK;
    if (n < SHORT_MAX) {
        *nids = merge_short(b, p, n, small);
        *ids = small;
        return MG_OK;
    }
    MG_RETURN_IF(n > INT32_MAX, MG_ERR_LIMIT, "pre-token of %zu bytes is too long for BPE", n);
    MG_FORWARD(merge_long(c, p, n, nids));
    *ids = c->ids;
    return MG_OK;
}

/* The long cache for piece p[0, n), else the merge (the long cache learns the result).
 * Result in *ids (for its *nids ids): the cache, small or c->ids. */
static mg_status encode_long_cached(mg_bpe_cache *c, const uint8_t *p, size_t n,
                                    int32_t *small, const int32_t **ids, size_t *nids)
{
    uint64_t h = mg_bpe_hash(p, n);
    if ((*ids = cache_get(c, p, n, h, nids)) != NULL) return MG_OK;
    MG_FORWARD(encode_uncached(c, p, n, small, ids, nids));
    cache_put(c, p, n, h, *ids, *nids);
    return MG_OK;
}

/* A piece the word cache cannot answer: writes its ids at dst (room for n + OUT_SLACK)
 * and returns their number. wl: the word-cache set that should learn the piece (key k),
 * NULL when the piece is longer than SHORT_KEY_MAX or its entry says "in the long cache". */
static size_t encode_miss(mg_bpe_cache *c, const uint8_t *p, size_t n, word_set *wl,
                          const word_key *k, int64_t *dst, mg_status *st)
{
    const int32_t *ids = NULL;
    size_t nids = 0;
    int32_t small[SHORT_MAX];
    if (wl) { /* a new short piece: the merge; the long cache only if it has many ids */
        *st = encode_uncached(c, p, n, small, &ids, &nids);
        if (*st == MG_OK && nids > WORD_IDS_MAX) cache_put(c, p, n, mg_bpe_hash(p, n), ids, nids);
        if (*st == MG_OK && (nids <= WORD_IDS_MAX || cache_fits(n, nids)))
            word_put(wl, k, n, ids, nids);
    } else {
        *st = encode_long_cached(c, p, n, small, &ids, &nids);
    }
    if (*st != MG_OK) return 0;
    for (size_t i = 0; i < nids; i++) dst[i] = ids[i];
    if (c->sym_cap > KEEP_SCRATCH_MAX || c->heap_cap > KEEP_SCRATCH_MAX) free_scratch(c);
    return nids;
}

/* Writes the ids of piece p[0, n) (1 <= n <= SHORT_KEY_MAX, word-cache key k) at dst, which
 * has room for n + OUT_SLACK ids; returns their number (0 with *st set on an error). */
HOT size_t encode_short(mg_bpe_cache *c, const uint8_t *p, size_t n, const word_key *k,
                        int64_t *dst, mg_status *st)
{
    word_set *wl = k->set;
    const word_entry *e = word_find(wl, k, n);
    if (e && e->nids != WORD_IN_LONG) {
        dst[0] = e->ids[0]; /* unconditional: OUT_SLACK covers the unused ones */
        dst[1] = e->ids[1];
        dst[2] = e->ids[2];
        return e->nids;
    }
    return encode_miss(c, p, n, e ? NULL : wl, k, dst, st);
}

/* encode_short for any n >= 1. */
HOT size_t encode_into(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *p, size_t n,
                       int64_t *dst, mg_status *st)
{
    if (n == 1) {
        dst[0] = b->byte_id[p[0]];
        return 1;
    }
    if (n > SHORT_KEY_MAX) return encode_miss(c, p, n, NULL, NULL, dst, st);
    word_key k = make_word_key(c, p, n);
    return encode_short(c, p, n, &k, dst, st);
}

mg_status mg_bpe_encode_piece(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *piece, size_t len,
                              mg_ids *out)
{
    MG_ASSERT(c->b == b);
    if (len == 0) return MG_OK;
    MG_FORWARD(reserve_out(out, len));
    mg_status st = MG_OK;
    out->n += encode_into(b, c, piece, len, out->v + out->n, &st);
    return st;
}

/* The readable bytes around the spans of one call are [lo8 - 8, hi8 + 8), as addresses. */
typedef struct {
    uintptr_t lo8, hi8;
} text_range;

/* Is piece p[0, n) short (1 <= n <= SHORT_KEY_MAX) and far enough inside r for
 * make_word_key_inner? (One predictable test for every piece.) */
HOT int inner_short(text_range r, const uint8_t *p, size_t n)
{
    uintptr_t a = (uintptr_t)p;
    return (n - 1 < SHORT_KEY_MAX) & (a + n >= r.lo8) & (a <= r.hi8);
}

/* The key of span piece p[0, n) for the word cache, its set's first line prefetched; set
 * NULL when the piece takes encode_span_other. */
HOT void prefetch_piece(mg_bpe_cache *c, text_range r, const uint8_t *p, size_t n, word_key *k)
{
    if (!inner_short(r, p, n)) {
        k->set = NULL;
        return;
    }
    *k = make_word_key_inner(c, p, n);
    __builtin_prefetch(k->set);
}

/* The pieces that prefetch_piece gave no key: long ones, and short ones near the ends of the
 * text (their key from the careful loads). */
static size_t encode_span_other(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *p, size_t len,
                                int64_t *dst, mg_status *st)
{
    return len ? encode_into(b, c, p, len, dst, st) : 0;
}

/* Writes the ids of one span's piece (key k from prefetch_piece) at dst; returns their
 * number, 0 with *st set on an error (a piece of 1+ bytes has 1+ ids). */
HOT size_t encode_span(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *p, size_t n,
                       const word_key *k, int64_t *dst, mg_status *st)
{
    if (!k->set) return encode_span_other(b, c, p, n, dst, st);
    return encode_short(c, p, n, k, dst, st);
}

/* The length of the batch of n spans that starts at span i < n (or 0 when n is 0). */
static inline size_t batch_len(size_t n, size_t i)
{
    return n - i < KEY_BATCH ? n - i : KEY_BATCH;
}

/* The keys of spans[0, m) (m <= KEY_BATCH), each set's first line prefetched. */
HOT void prefetch_batch(mg_bpe_cache *c, text_range r, const uint8_t *t, const mg_span *spans,
                        size_t m, word_key *keys)
{
    for (size_t j = 0; j < m; j++)
        prefetch_piece(c, r, t + spans[j].off, spans[j].len, &keys[j]);
}

/* Encodes spans[0, m) (m <= KEY_BATCH) with their keys. Returns the ids written at dst. */
HOT size_t encode_batch(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *t, const mg_span *spans,
                        size_t m, const word_key *keys, int64_t *dst, mg_status *st)
{
    int64_t *at = dst;
    for (size_t j = 0; j < m; j++) {
        size_t got = encode_span(b, c, t + spans[j].off, spans[j].len, &keys[j], at, st);
        if (!got && *st != MG_OK) break;
        at += got;
    }
    return (size_t)(at - dst);
}

mg_status mg_bpe_encode_spans(const mg_bpe *b, mg_bpe_cache *c, const char *text,
                              const mg_span *spans, size_t n, mg_ids *out)
{
    MG_ASSERT(c->b == b);
    if (n == 0) return MG_OK;
    const uint8_t *t = (const uint8_t *)text;
    /* spans are in text order and do not overlap: their bytes lie in this range */
    const uint8_t *lo = t + spans[0].off, *hi = t + spans[n - 1].off + spans[n - 1].len;
    MG_FORWARD(reserve_out(out, (size_t)(hi - lo)));
    text_range r = {(uintptr_t)lo + 8, (uintptr_t)hi - 8};
    mg_status st = MG_OK;
    /* a batch's keys are made (and their sets prefetched) one batch before its lookups */
    word_key keys[2][KEY_BATCH];
    prefetch_batch(c, r, t, spans, batch_len(n, 0), keys[0]);
    for (size_t i = 0, k = 0; i < n && st == MG_OK; i += KEY_BATCH, k ^= 1) {
        if (i + KEY_BATCH < n)
            prefetch_batch(c, r, t, spans + i + KEY_BATCH, batch_len(n, i + KEY_BATCH),
                           keys[k ^ 1]);
        out->n += encode_batch(b, c, t, spans + i, batch_len(n, i), keys[k], out->v + out->n, &st);
    }
    return st;
}

/* ---- char-initial models ---- */

static size_t utf8_char_len(const uint8_t *p, size_t left)
{
    size_t n = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
    return n < left ? n : left;
}

/* Id of one character, -1 if it is not a token. */
static int32_t char_id(const mg_bpe *b, const uint8_t *p, size_t n)
{
    if (n == 1) return b->byte_id[p[0]];
    return mg_bpe_find_id(b, p, n);
}

/* Appends the "<0xXX>" ids of p[0, n) if all exist; returns 0 (nothing written) if not. */
static int byte_fallback(const mg_bpe *b, const uint8_t *p, size_t n, int32_t *ids, size_t *k)
{
    if (!b->byte_fallback) return 0;
    for (size_t i = 0; i < n; i++)
        if (b->fb_id[p[i]] < 0) return 0;
    for (size_t i = 0; i < n; i++) ids[(*k)++] = b->fb_id[p[i]];
    return 1;
}

/* HF merge_word's initial symbols of piece[0, n) into c->ids[0, *m). A pending unknown
 * run is written when a known character or the end follows (not before byte-fallback
 * symbols, as HF does). */
static mg_status char_symbols(mg_bpe_cache *c, const uint8_t *p, size_t n, size_t *m)
{
    const mg_bpe *b = c->b;
    MG_FORWARD(reserve_symbols(c, n));
    int32_t *ids = c->ids;
    size_t k = 0;
    int pending = 0;
    for (size_t i = 0; i < n;) {
        size_t cl = utf8_char_len(p + i, n - i);
        int32_t id = char_id(b, p + i, cl);
        if (id >= 0) {
            if (pending) ids[k++] = b->unk_id;
            pending = 0;
            ids[k++] = id;
        } else if (!byte_fallback(b, p + i, cl, ids, &k) && b->unk_id >= 0) {
            if (pending && !b->fuse_unk) ids[k++] = b->unk_id;
            pending = 1;
        }
        i += cl;
    }
    if (pending) ids[k++] = b->unk_id;
    *m = k;
    return MG_OK;
}

static mg_status encode_chars_uncached(mg_bpe_cache *c, const uint8_t *p, size_t n,
                                       int32_t *small, const int32_t **ids, size_t *nids)
{
    const mg_bpe *b = c->b;
    if (whole_piece(b, p, n, small, ids, nids)) return MG_OK;
    MG_RETURN_IF(n > INT32_MAX, MG_ERR_LIMIT, "pre-token of %zu bytes is too long for BPE", n);
    size_t m;
    MG_FORWARD(char_symbols(c, p, n, &m));
    *ids = c->ids;
    if (m < SHORT_MAX) {
        *nids = merge_short_ids(b, c->ids, m);
        return MG_OK;
    }
    return merge_long_ids(c, m, nids);
}

mg_status mg_bpe_encode_chars(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *piece,
                              size_t len, mg_ids *out)
{
    MG_ASSERT(c->b == b);
    MG_RETURN_IF(!b->chars, MG_ERR_ARG, "mg_bpe_encode_chars on a byte-level BPE model");
    if (len == 0) return MG_OK;
    uint64_t h = 0;
    mg_status st = MG_OK;
    if (cache_fits(len, 0)) {
        h = mg_bpe_hash(piece, len);
        size_t n_hit;
        const int32_t *hit = cache_get(c, piece, len, h, &n_hit);
        if (hit) return append_ids(out, hit, n_hit);
    }
    int32_t small[1];
    const int32_t *ids = NULL;
    size_t nids = 0;
    MG_FORWARD(encode_chars_uncached(c, piece, len, small, &ids, &nids));
    if (cache_fits(len, 0)) cache_put(c, piece, len, h, ids, nids);
    st = append_ids(out, ids, nids);
    if (c->sym_cap > KEEP_SCRATCH_MAX || c->heap_cap > KEEP_SCRATCH_MAX) free_scratch(c);
    return st;
}
