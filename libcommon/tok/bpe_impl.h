/* bpe_impl.h — the BPE model's layout, shared by bpe.c and bpe_splits.c (building) and
 * bpe_merge.c (encoding). Private to those files; everything else uses bpe.h.
 *
 * Tables (all open addressing, linear probing, power-of-two sizes, load <= 1/2):
 *   - tokens: byte string -> id. A slot (16 bytes) holds 24 bits of the string's hash, its
 *             length, its id and, for a token of at most MG_BPE_INLINE_MAX bytes, its
 *             bytes: a lookup that finds such a token reads one slot and nothing else (the
 *             load of a vocabulary is ~2M lookups, mostly of short strings, at random);
 *             a longer token's slot says where its bytes are;
 *   - pairs:  (left_id << 32 | right_id) -> (rank, merged_id); key ~0 = empty (16 bytes a
 *             slot, while the model is built);
 *   - packed: the pair table of a finalized model whose ranks order as their merged ids
 *             (every pair that makes a token has that token's rank, and a greater id means
 *             a greater rank: the .tiktoken vocabularies, GPT-2's and Qwen's merges, not
 *             Llama-3's) with ids below 2^21, in 8-byte slots left << 42 | right << 21 |
 *             merged, ~0 = empty, packed in place by finalizing (slot for slot, the pages
 *             of the second half returned); its lookups return the merged id as the rank,
 *             which picks the same pair at every step of a merge (lowest rank, leftmost
 *             first). Half the bytes: the random lookups of a merge hit the caches more;
 *   - grid:   the pair table for two single bytes, dense (65536 entries), so the first
 *             round of a merge needs no hashing.
 * A rank value of MG_BPE_NO_RANK means "no merge".
 */
#ifndef MG_TOK_BPE_IMPL_H
#define MG_TOK_BPE_IMPL_H

#include <stdint.h>
#include <string.h>

#include "tok/bpe.h"

#define MG_BPE_NO_RANK UINT32_MAX
#define MG_BPE_EMPTY_KEY UINT64_MAX

typedef struct {
    uint64_t key;    /* left_id << 32 | right_id */
    uint32_t rank;   /* merge priority, lower first */
    int32_t merged;  /* id of left||right */
} mg_bpe_pair;

/* Tokens are at most this long (a tokenizer's are a few hundred bytes at most). */
#define MG_BPE_TOKEN_MAX 65535
#define MG_BPE_INLINE_MAX 8

typedef struct {
    uint32_t tag;  /* mg_bpe_tag(hash, length); 0 = empty slot */
    int32_t id;
    uint64_t body; /* length <= MG_BPE_INLINE_MAX: mg_bpe_load_tail(bytes, length); else
                    * the bytes' offset in mg_bpe.bytes << 16 | length */
} mg_bpe_slot;

struct mg_bpe {
    mg_bpe_mode mode;
    int finalized;
    int shortcut;
    /* tokens in mg_bpe_add_token order */
    uint8_t *bytes;
    size_t bytes_len, bytes_cap;
    uint64_t *tok_off;
    uint32_t *tok_len;
    int32_t *tok_id;
    int32_t *tok_rank;
    size_t n_tok, tok_cap;
    mg_bpe_slot *slots;
    size_t slot_mask;
    /* id -> token index (-1 = none), ids 0 .. n_ids-1 */
    int32_t *id_index;
    size_t n_ids;
    int32_t byte_id[256];
    mg_bpe_pair *pairs;
    size_t pair_mask, n_pairs;
    size_t n_merge_calls; /* PAIR_RANK: rank of the next merge */
    uint64_t *grid;       /* [a << 8 | b] = rank << 32 | merged, or MG_BPE_EMPTY_KEY */
    uint64_t *packed;     /* the packed pair table (then pairs is NULL), or NULL */
    size_t packed_mask;
    /* char-initial models (mg_bpe_set_char_symbols); byte_id[c] is -1 for a byte that is
     * not a token */
    int chars, byte_fallback, fuse_unk;
    int32_t unk_id;      /* -1: none */
    int32_t fb_id[256];  /* id of "<0xXX>", -1 if absent */
};

static inline uint64_t mg_bpe_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The n <= 8 bytes at p as a little-endian integer, read with overlapping fixed-size
 * loads (a variable-size memcpy into a stack word stalls on store forwarding). For n < 4
 * it combines p[0], p[n/2], p[n-1]: injective for a given n. */
static inline uint64_t mg_bpe_load_tail(const uint8_t *p, size_t n)
{
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + n - 4, 4);
        return a | (uint64_t)b << (8 * (n - 4));
    }
    if (n == 0) return 0;
    return p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16;
}

/* a[0, n) == b[0, n), inline: the strings compared are tokens, mostly under 16 bytes,
 * where a call to memcmp costs more than the compare. */
static inline int mg_bpe_bytes_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    for (; n >= 8; a += 8, b += 8, n -= 8) {
        uint64_t x, y;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (x != y) return 0;
    }
    return mg_bpe_load_tail(a, n) == mg_bpe_load_tail(b, n);
}

/* Hash of a byte string (also used by the per-thread cache), in two steps: the state
 * after each whole 8-byte word, then the tail and the length. */
#define MG_BPE_HASH_SEED 0x9E3779B97F4A7C15ULL

static inline uint64_t mg_bpe_hash_word(uint64_t h, const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x9fb21c651e98df25ULL;
    return h ^ h >> 29;
}

/* The hash of a string of n bytes whose whole words left state h and whose last n % 8
 * bytes are at tail. */
static inline uint64_t mg_bpe_hash_end(uint64_t h, const uint8_t *tail, size_t n)
{
    uint64_t len = (uint64_t)n * 0x2545F4914F6CDD1DULL;
    return mg_bpe_mix64(h ^ mg_bpe_load_tail(tail, n % 8) ^ len);
}

static inline uint64_t mg_bpe_hash(const uint8_t *p, size_t n)
{
    uint64_t h = MG_BPE_HASH_SEED;
    for (size_t i = 0; i + 8 <= n; i += 8) h = mg_bpe_hash_word(h, p + i);
    return mg_bpe_hash_end(h, p + (n & ~(size_t)7), n);
}

static inline uint64_t mg_bpe_pair_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

/* Asks for the token-table slot where a lookup of hash h starts (a batch of lookups
 * overlaps its misses). */
static inline void mg_bpe_prefetch_slot(const mg_bpe *b, uint64_t h)
{
    __builtin_prefetch(&b->slots[(size_t)h & b->slot_mask]);
}

/* Asks for the pair-table slot where pair (left, right) goes, to be written. */
static inline void mg_bpe_prefetch_pair(const mg_bpe *b, int32_t left, int32_t right)
{
    size_t i = (size_t)mg_bpe_mix64(mg_bpe_pair_key(left, right)) & b->pair_mask;
    __builtin_prefetch(&b->pairs[i], 1);
}

#define MG_BPE_PACKED_BITS 21
#define MG_BPE_PACKED_ID_MASK ((1u << MG_BPE_PACKED_BITS) - 1)

/* The key of pair (left, right) in the packed table (ids of the model, below 2^21). */
static inline uint64_t mg_bpe_packed_key(int32_t left, int32_t right)
{
    return (uint64_t)(uint32_t)left << MG_BPE_PACKED_BITS | (uint32_t)right;
}

/* mg_bpe_pair_find in the packed table (slots where the other table had them: the same
 * hash of the same key, the same probes): the merged id is the rank. */
static inline uint32_t mg_bpe_packed_find(const mg_bpe *b, int32_t left, int32_t right,
                                          int32_t *merged)
{
    uint64_t key = mg_bpe_packed_key(left, right);
    size_t i = (size_t)mg_bpe_mix64(mg_bpe_pair_key(left, right)) & b->packed_mask;
    for (;; i = (i + 1) & b->packed_mask) {
        uint64_t e = b->packed[i];
        if (e >> MG_BPE_PACKED_BITS == key) {
            *merged = (int32_t)(e & MG_BPE_PACKED_ID_MASK);
            return (uint32_t)*merged;
        }
        if (e == MG_BPE_EMPTY_KEY) return MG_BPE_NO_RANK;
    }
}

/* Looks up pair (left, right): returns its rank (MG_BPE_NO_RANK if none) and sets *merged. */
static inline uint32_t mg_bpe_pair_find(const mg_bpe *b, int32_t left, int32_t right,
                                        int32_t *merged)
{
    if (b->packed) return mg_bpe_packed_find(b, left, right, merged);
    uint64_t key = mg_bpe_pair_key(left, right);
    size_t i = (size_t)mg_bpe_mix64(key) & b->pair_mask;
    for (;;) {
        const mg_bpe_pair *p = &b->pairs[i];
        if (p->key == key) {
            *merged = p->merged;
            return p->rank;
        }
        if (p->key == MG_BPE_EMPTY_KEY) return MG_BPE_NO_RANK;
        i = (i + 1) & b->pair_mask;
    }
}

/* Inserts or overwrites pair (left, right) -> (rank, merged) (bpe.c). */
mg_status mg_bpe_pair_put(mg_bpe *b, int32_t left, int32_t right, uint32_t rank,
                          int32_t merged);
/* TOKEN_RANK: the pairs of every split of every token into two tokens, ranked by the
 * token's rank (bpe_splits.c); ids are unique. */
mg_status mg_bpe_build_token_rank_pairs(mg_bpe *b);

/* The tag of a string of n bytes whose mg_bpe_hash() is h: bits 40..63 of h (the slot
 * index takes the low bits) and the length, capped (never 0). */
static inline uint32_t mg_bpe_tag(uint64_t h, size_t n)
{
    return ((uint32_t)(h >> 32) & 0xFFFFFF00u) | (uint32_t)(n < 255 ? n + 1 : 255);
}

/* The slot of a string of n <= MG_BPE_TOKEN_MAX bytes whose mg_bpe_hash() is h: its
 * token's, or the empty slot where it would go (tag 0). */
static inline mg_bpe_slot *mg_bpe_probe(const mg_bpe *b, const uint8_t *s, size_t n,
                                        uint64_t h)
{
    uint32_t tag = mg_bpe_tag(h, n);
    int inline_bytes = n <= MG_BPE_INLINE_MAX;
    uint64_t body = inline_bytes ? mg_bpe_load_tail(s, n) : (uint64_t)n;
    for (size_t i = (size_t)h & b->slot_mask;; i = (i + 1) & b->slot_mask) {
        mg_bpe_slot *sl = &b->slots[i];
        if (sl->tag == 0) return sl;
        if (sl->tag != tag) continue;
        if (inline_bytes ? sl->body == body
                         : (sl->body & 0xFFFF) == n &&
                               mg_bpe_bytes_equal(b->bytes + (sl->body >> 16), s, n))
            return sl;
    }
}

/* Id of a byte string whose mg_bpe_hash() is h, -1 if it is not a token. */
static inline int32_t mg_bpe_find_id_hashed(const mg_bpe *b, const uint8_t *s, size_t n,
                                            uint64_t h)
{
    if (n > MG_BPE_TOKEN_MAX) return -1;
    const mg_bpe_slot *sl = mg_bpe_probe(b, s, n, h);
    return sl->tag ? sl->id : -1;
}

/* Id of a byte string, -1 if it is not a token. */
static inline int32_t mg_bpe_find_id(const mg_bpe *b, const uint8_t *s, size_t n)
{
    return mg_bpe_find_id_hashed(b, s, n, mg_bpe_hash(s, n));
}

#endif
