/* bpe.c — building the BPE model: the token table, the pair table and their lookups
 * (contract in bpe.h, layout in bpe_impl.h). Encoding lives in bpe_merge.c.
 */
#include "tok/bpe_impl.h"

#include <stdio.h>
#include <stdlib.h>

#include "mg/grow.h"
#include "mg/pages.h"

#define INITIAL_SLOTS 1024

/* Writes a printable form of bytes (\xNN for non-printable ones) into buf. */
static const char *show_bytes(char *buf, size_t cap, const uint8_t *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
            buf[o++] = (char)s[i];
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", s[i]);
    }
    buf[o] = 0;
    return buf;
}

/* A pair table of n_slots empty slots in *out (fresh pages, mg/pages.h). */
static mg_status alloc_pairs(mg_bpe_pair **out, size_t n_slots)
{
    mg_bpe_pair *p = mg_pages_alloc(n_slots * sizeof *p);
    if (!p) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n_slots; i++) p[i].key = MG_BPE_EMPTY_KEY;
    *out = p;
    return MG_OK;
}

mg_status mg_bpe_create(mg_bpe **out, mg_bpe_mode mode)
{
    *out = NULL;
    MG_RETURN_IF(mode != MG_BPE_PAIR_RANK && mode != MG_BPE_TOKEN_RANK, MG_ERR_ARG,
                 "unknown BPE mode %d", (int)mode);
    mg_bpe *b = mg_calloc(1, sizeof *b);
    if (!b) return MG_ERR_NOMEM;
    b->mode = mode;
    b->unk_id = -1;
    b->slots = mg_pages_alloc(INITIAL_SLOTS * sizeof *b->slots);
    b->slot_mask = INITIAL_SLOTS - 1;
    b->pair_mask = INITIAL_SLOTS - 1;
    if (!b->slots || alloc_pairs(&b->pairs, INITIAL_SLOTS) != MG_OK) {
        mg_bpe_free(b);
        return MG_ERR_NOMEM;
    }
    *out = b;
    return MG_OK;
}

void mg_bpe_free(mg_bpe *b)
{
    if (!b) return;
    free(b->bytes);
    free(b->tok_off);
    free(b->tok_len);
    free(b->tok_id);
    free(b->tok_rank);
    mg_pages_free(b->slots, (b->slot_mask + 1) * sizeof *b->slots);
    free(b->id_index);
    mg_pages_free(b->pairs, (b->pair_mask + 1) * sizeof *b->pairs);
    mg_pages_free(b->packed, (b->packed_mask + 1) * sizeof *b->packed);
    free(b->grid);
    free(b);
}

/* Fills empty slot sl with token t (hash h). */
static void slot_fill(const mg_bpe *b, mg_bpe_slot *sl, size_t t, uint64_t h)
{
    const uint8_t *s = b->bytes + b->tok_off[t];
    size_t n = b->tok_len[t];
    sl->tag = mg_bpe_tag(h, n);
    sl->id = b->tok_id[t];
    sl->body = n <= MG_BPE_INLINE_MAX ? mg_bpe_load_tail(s, n) : b->tok_off[t] << 16 | n;
}

/* Places token t into the slot table (no duplicate check). */
static void slot_put(const mg_bpe *b, mg_bpe_slot *slots, size_t mask, size_t t)
{
    uint64_t h = mg_bpe_hash(b->bytes + b->tok_off[t], b->tok_len[t]);
    size_t i = (size_t)h & mask;
    while (slots[i].tag != 0) i = (i + 1) & mask;
    slot_fill(b, &slots[i], t, h);
}

static mg_status grow_slots(mg_bpe *b)
{
    size_t n = (b->slot_mask + 1) * 2;
    mg_bpe_slot *s = mg_pages_alloc(n * sizeof *s);
    if (!s) return MG_ERR_NOMEM;
    for (size_t t = 0; t < b->n_tok; t++) slot_put(b, s, n - 1, t);
    mg_pages_free(b->slots, (b->slot_mask + 1) * sizeof *b->slots);
    b->slots = s;
    b->slot_mask = n - 1;
    return MG_OK;
}

/* Room for need tokens in the four per-token arrays (one capacity) and the slot table. */
static mg_status grow_token_arrays(mg_bpe *b, size_t need)
{
    if (need > b->tok_cap) {
        size_t c1 = b->tok_cap, c2 = b->tok_cap, c3 = b->tok_cap;
        MG_FORWARD(MG_GROW(b->tok_off, c1, need, 1024));
        MG_FORWARD(MG_GROW(b->tok_len, c2, need, 1024));
        MG_FORWARD(MG_GROW(b->tok_id, c3, need, 1024));
        MG_FORWARD(MG_GROW(b->tok_rank, b->tok_cap, need, 1024));
    }
    while (need * 2 > b->slot_mask + 1) MG_FORWARD(grow_slots(b));
    return MG_OK;
}

/* Adds token x (hash h) in room already reserved. */
static mg_status add_one(mg_bpe *b, const mg_bpe_token *x, uint64_t h)
{
    char show[200];
    const uint8_t *bytes = x->bytes;
    size_t len = x->len;
    int32_t id = x->id, rank = x->rank;
    MG_RETURN_IF(id < 0 || id == INT32_MAX, MG_ERR_FORMAT, "token \"%s\": invalid id %d",
                 show_bytes(show, sizeof show, bytes, len), (int)id);
    MG_RETURN_IF(b->mode == MG_BPE_TOKEN_RANK && (rank < 0 || rank == INT32_MAX), MG_ERR_FORMAT,
                 "token \"%s\": invalid rank %d", show_bytes(show, sizeof show, bytes, len),
                 (int)rank);
    MG_RETURN_IF(len > MG_BPE_TOKEN_MAX, MG_ERR_LIMIT,
                 "token \"%s\" (id %d): %zu bytes, longer than the %d a token may have",
                 show_bytes(show, sizeof show, bytes, len), (int)id, len, MG_BPE_TOKEN_MAX);
    mg_bpe_slot *sl = mg_bpe_probe(b, bytes, len, h); /* a token's slot, or where it goes */
    MG_RETURN_IF(sl->tag != 0, MG_ERR_FORMAT, "duplicate token \"%s\" (id %d)",
                 show_bytes(show, sizeof show, bytes, len), (int)id);
    size_t t = b->n_tok++;
    if (len) memcpy(b->bytes + b->bytes_len, bytes, len);
    b->tok_off[t] = b->bytes_len;
    b->tok_len[t] = (uint32_t)len;
    b->tok_id[t] = id;
    b->tok_rank[t] = b->mode == MG_BPE_TOKEN_RANK ? rank : 0;
    b->bytes_len += len;
    slot_fill(b, sl, t, h);
    return MG_OK;
}

mg_status mg_bpe_add_token(mg_bpe *b, const uint8_t *bytes, size_t len, int32_t id,
                           int32_t rank)
{
    size_t bad;
    return mg_bpe_add_tokens(b, &(mg_bpe_token){bytes, len, id, rank}, 1, &bad);
}

/* Tokens are added TOKEN_BATCH at a time: every hash first, each slot prefetched, then the
 * checks and inserts in order (a token's probe sees the ones before it). */
#define TOKEN_BATCH 16

/* Room for x[0, n) in the token arrays (the slot table does not grow during the batch)
 * and their bytes. */
static mg_status reserve_batch(mg_bpe *b, const mg_bpe_token *x, size_t n)
{
    size_t bytes = 0;
    for (size_t j = 0; j < n; j++)
        bytes += x[j].len <= MG_BPE_TOKEN_MAX ? x[j].len : 0; /* add_one refuses longer */
    MG_FORWARD(grow_token_arrays(b, b->n_tok + n));
    return MG_GROW(b->bytes, b->bytes_cap, b->bytes_len + bytes, 16384);
}

mg_status mg_bpe_add_tokens(mg_bpe *b, const mg_bpe_token *x, size_t n, size_t *bad)
{
    *bad = 0;
    MG_RETURN_IF(b->finalized, MG_ERR_ARG, "BPE model already finalized");
    for (size_t i = 0; i < n; i += TOKEN_BATCH) {
        size_t k = n - i < TOKEN_BATCH ? n - i : TOKEN_BATCH;
        MG_RETURN_IF(b->n_tok + k >= INT32_MAX - 1, MG_ERR_LIMIT, "BPE vocabulary too large");
        MG_FORWARD(reserve_batch(b, x + i, k));
        uint64_t h[TOKEN_BATCH];
        for (size_t j = 0; j < k; j++) {
            h[j] = mg_bpe_hash(x[i + j].bytes, x[i + j].len);
            mg_bpe_prefetch_slot(b, h[j]);
        }
        for (size_t j = 0; j < k; j++) {
            *bad = i + j;
            MG_FORWARD(add_one(b, &x[i + j], h[j]));
        }
    }
    return MG_OK;
}

/* Moves the pair table into n_slots (a power of two above its count) slots. */
static mg_status resize_pairs(mg_bpe *b, size_t n_slots)
{
    mg_bpe_pair *t;
    MG_FORWARD(alloc_pairs(&t, n_slots));
    for (size_t i = 0; i <= b->pair_mask; i++) {
        if (b->pairs[i].key == MG_BPE_EMPTY_KEY) continue;
        size_t j = (size_t)mg_bpe_mix64(b->pairs[i].key) & (n_slots - 1);
        while (t[j].key != MG_BPE_EMPTY_KEY) j = (j + 1) & (n_slots - 1);
        t[j] = b->pairs[i];
    }
    mg_pages_free(b->pairs, (b->pair_mask + 1) * sizeof *b->pairs);
    b->pairs = t;
    b->pair_mask = n_slots - 1;
    return MG_OK;
}

mg_status mg_bpe_pair_put(mg_bpe *b, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
    /* at most 3/4 full: Llama-3's 280K merges fit 512K slots (8 MiB) */
    if ((b->n_pairs + 1) * 4 > (b->pair_mask + 1) * 3)
        MG_FORWARD(resize_pairs(b, (b->pair_mask + 1) * 2));
    uint64_t key = mg_bpe_pair_key(left, right);
    size_t i = (size_t)mg_bpe_mix64(key) & b->pair_mask;
    while (b->pairs[i].key != MG_BPE_EMPTY_KEY && b->pairs[i].key != key)
        i = (i + 1) & b->pair_mask;
    if (b->pairs[i].key == MG_BPE_EMPTY_KEY) b->n_pairs++;
    b->pairs[i] = (mg_bpe_pair){.key = key, .rank = rank, .merged = merged};
    return MG_OK;
}

/* The smallest power of two >= need, at least have. */
static size_t pow2_at_least(size_t have, size_t need)
{
    while (have < need) have *= 2;
    return have;
}

mg_status mg_bpe_reserve(mg_bpe *b, size_t n_tokens, size_t n_pairs)
{
    MG_RETURN_IF(b->finalized, MG_ERR_ARG, "BPE model already finalized");
    size_t pair_slots = pow2_at_least(b->pair_mask + 1, n_pairs / 3 * 4 + 4);
    if (pair_slots > b->pair_mask + 1) MG_FORWARD(resize_pairs(b, pair_slots));
    return grow_token_arrays(b, n_tokens);
}

static mg_status merge_error(const uint8_t *l, size_t ll, const uint8_t *r, size_t rl,
                             const char *what)
{
    char sl[120], sr[120];
    return mg_error_set(MG_ERR_FORMAT, "merge \"%s %s\": %s", show_bytes(sl, sizeof sl, l, ll),
                        show_bytes(sr, sizeof sr, r, rl), what);
}

mg_status mg_bpe_add_merge(mg_bpe *b, const uint8_t *left, size_t llen, const uint8_t *right,
                           size_t rlen)
{
    size_t bad;
    return mg_bpe_add_merges(b, &(mg_bpe_merge){left, right, llen, rlen}, 1, &bad);
}

/* Merges are looked up MERGE_BATCH at a time: every hash first, each slot prefetched, then
 * the lookups, each pair's slot prefetched, then the inserts (in order: a later duplicate
 * overwrites). */
#define MERGE_BATCH 16
#define MERGE_CAT_BYTES 4096 /* the batch's concatenations, on the stack if they fit */

typedef struct {
    uint64_t hl, hr, hc;
    const uint8_t *cat;
    int32_t l, r, merged;
} merge_look;

/* Hashes m[0, n) (n <= MERGE_BATCH) and their concatenations (written at cat). */
static void hash_merges(const mg_bpe *b, const mg_bpe_merge *m, size_t n, uint8_t *cat,
                        merge_look *q)
{
    for (size_t j = 0; j < n; j++) {
        memcpy(cat, m[j].left, m[j].llen);
        memcpy(cat + m[j].llen, m[j].right, m[j].rlen);
        q[j].cat = cat;
        q[j].hl = mg_bpe_hash(m[j].left, m[j].llen);
        q[j].hr = mg_bpe_hash(m[j].right, m[j].rlen);
        q[j].hc = mg_bpe_hash(cat, m[j].llen + m[j].rlen);
        mg_bpe_prefetch_slot(b, q[j].hl);
        mg_bpe_prefetch_slot(b, q[j].hr);
        mg_bpe_prefetch_slot(b, q[j].hc);
        cat += m[j].llen + m[j].rlen;
    }
}

static mg_status look_up_merges(const mg_bpe *b, const mg_bpe_merge *m, size_t n,
                                merge_look *q, size_t *bad)
{
    for (size_t j = 0; j < n; j++) {
        const mg_bpe_merge *x = &m[j];
        size_t cl = x->llen + x->rlen;
        q[j].l = mg_bpe_find_id_hashed(b, x->left, x->llen, q[j].hl);
        q[j].r = mg_bpe_find_id_hashed(b, x->right, x->rlen, q[j].hr);
        q[j].merged = mg_bpe_find_id_hashed(b, q[j].cat, cl, q[j].hc);
        *bad = j;
        if (q[j].l < 0) return merge_error(x->left, x->llen, x->right, x->rlen,
                                           "left part is not a token");
        if (q[j].r < 0) return merge_error(x->left, x->llen, x->right, x->rlen,
                                           "right part is not a token");
        if (q[j].merged < 0) return merge_error(x->left, x->llen, x->right, x->rlen,
                                                "merged token is not in the vocabulary");
        mg_bpe_prefetch_pair(b, q[j].l, q[j].r);
    }
    return MG_OK;
}

/* mg_bpe_add_merges for n <= MERGE_BATCH merges whose concatenations fit cat. */
static mg_status merge_batch(mg_bpe *b, const mg_bpe_merge *m, size_t n, uint8_t *cat,
                             size_t *bad)
{
    merge_look q[MERGE_BATCH];
    hash_merges(b, m, n, cat, q);
    MG_FORWARD(look_up_merges(b, m, n, q, bad));
    for (size_t j = 0; j < n; j++) {
        *bad = j;
        MG_RETURN_IF(b->n_merge_calls >= UINT32_MAX - 1, MG_ERR_LIMIT, "too many merges");
        MG_FORWARD(mg_bpe_pair_put(b, q[j].l, q[j].r, (uint32_t)b->n_merge_calls++,
                                   q[j].merged));
    }
    return MG_OK;
}

/* How many of m[0, n) (at least one, at most MERGE_BATCH) make the next batch, and the
 * bytes of their concatenations. */
static size_t batch_size(const mg_bpe_merge *m, size_t n, size_t *bytes)
{
    size_t k = 0;
    *bytes = 0;
    while (k < n && k < MERGE_BATCH) {
        size_t cl = m[k].llen + m[k].rlen;
        if (k > 0 && *bytes + cl > MERGE_CAT_BYTES) break;
        *bytes += cl;
        k++;
    }
    return k;
}

mg_status mg_bpe_add_merges(mg_bpe *b, const mg_bpe_merge *m, size_t n, size_t *bad)
{
    *bad = 0;
    MG_RETURN_IF(b->finalized, MG_ERR_ARG, "BPE model already finalized");
    MG_RETURN_IF(b->mode != MG_BPE_PAIR_RANK, MG_ERR_ARG, "merges need MG_BPE_PAIR_RANK mode");
    uint8_t stack[MERGE_CAT_BYTES];
    for (size_t i = 0, k, bytes; i < n; i += k) {
        k = batch_size(m + i, n - i, &bytes);
        uint8_t *cat = bytes <= sizeof stack ? stack : mg_malloc(bytes);
        if (!cat) return MG_ERR_NOMEM;
        mg_status st = merge_batch(b, m + i, k, cat, bad);
        if (cat != stack) free(cat);
        *bad += i;
        MG_FORWARD(st);
    }
    return MG_OK;
}

static mg_status build_token_rank_pairs(mg_bpe *b)
{
    /* the .tiktoken vocabularies have 2.2-2.3 pairs per token: one table of the right size */
    MG_FORWARD(mg_bpe_reserve(b, 0, b->n_tok * 5 / 2));
    return mg_bpe_build_token_rank_pairs(b);
}

static mg_status build_id_index(mg_bpe *b)
{
    int32_t max_id = -1;
    for (size_t t = 0; t < b->n_tok; t++)
        if (b->tok_id[t] > max_id) max_id = b->tok_id[t];
    b->n_ids = (size_t)max_id + 1;
    b->id_index = mg_malloc((b->n_ids ? b->n_ids : 1) * sizeof *b->id_index);
    if (!b->id_index) return MG_ERR_NOMEM;
    for (size_t i = 0; i < b->n_ids; i++) b->id_index[i] = -1;
    for (size_t t = 0; t < b->n_tok; t++) {
        int32_t *at = &b->id_index[b->tok_id[t]];
        /* a pair of ids must name one string: TOKEN_RANK derives its pairs from strings */
        MG_RETURN_IF(*at >= 0 && b->mode == MG_BPE_TOKEN_RANK, MG_ERR_FORMAT,
                     "id %d belongs to two tokens", (int)b->tok_id[t]);
        if (*at < 0) *at = (int32_t)t;
    }
    return MG_OK;
}

/* Do the pairs' ranks order as their merged ids (bpe_impl.h, "packed"), all ids below
 * 2^21? 1 if so, 0 if not; -1 out of memory. */
static int ranks_follow_ids(const mg_bpe *b)
{
    if (b->n_ids > (size_t)1 << MG_BPE_PACKED_BITS) return 0;
    uint32_t *rank = mg_malloc((b->n_ids ? b->n_ids : 1) * sizeof *rank);
    if (!rank) return -1;
    for (size_t i = 0; i < b->n_ids; i++) rank[i] = MG_BPE_NO_RANK;
    int ok = 1;
    for (size_t i = 0; ok && i <= b->pair_mask; i++) {
        const mg_bpe_pair *p = &b->pairs[i];
        if (p->key == MG_BPE_EMPTY_KEY) continue;
        uint32_t *r = &rank[p->merged];
        ok = *r == MG_BPE_NO_RANK || *r == p->rank; /* one rank per merged token */
        *r = p->rank;
    }
    uint32_t last = 0;
    for (size_t i = 0, seen = 0; ok && i < b->n_ids; i++) {
        if (rank[i] == MG_BPE_NO_RANK) continue;
        ok = !seen || rank[i] > last; /* greater id, greater rank */
        last = rank[i];
        seen = 1;
    }
    free(rank);
    return ok;
}

/* Packs the pair table where the model allows it (bpe_impl.h): in place, slot by slot
 * (slot i's 8 bytes overwrite only slots up to i, already read), then the second half of
 * its pages goes back to the kernel. */
static mg_status pack_pairs(mg_bpe *b)
{
    int ok = ranks_follow_ids(b);
    if (ok <= 0) return ok < 0 ? MG_ERR_NOMEM : MG_OK;
    size_t n_slots = b->pair_mask + 1;
    uint64_t *t = (uint64_t *)(void *)b->pairs;
    for (size_t i = 0; i < n_slots; i++) {
        mg_bpe_pair p = b->pairs[i];
        uint64_t key = mg_bpe_packed_key((int32_t)(p.key >> 32), (int32_t)(uint32_t)p.key);
        t[i] = p.key == MG_BPE_EMPTY_KEY ? MG_BPE_EMPTY_KEY
                                         : key << MG_BPE_PACKED_BITS | (uint32_t)p.merged;
    }
    mg_pages_shrink(t, n_slots * sizeof *b->pairs, n_slots * sizeof *t);
    b->pairs = NULL;
    b->pair_mask = 0;
    b->packed = t;
    b->packed_mask = n_slots - 1;
    return MG_OK;
}

static mg_status build_grid(mg_bpe *b)
{
    b->grid = mg_malloc(65536 * sizeof *b->grid);
    if (!b->grid) return MG_ERR_NOMEM;
    for (size_t a = 0; a < 256; a++) {
        for (size_t c = 0; c < 256; c++) {
            int32_t merged = -1;
            if (b->byte_id[a] < 0 || b->byte_id[c] < 0) {
                b->grid[a << 8 | c] = MG_BPE_EMPTY_KEY;
                continue;
            }
            uint32_t rank = mg_bpe_pair_find(b, b->byte_id[a], b->byte_id[c], &merged);
            b->grid[a << 8 | c] = rank == MG_BPE_NO_RANK
                                      ? MG_BPE_EMPTY_KEY
                                      : (uint64_t)rank << 32 | (uint32_t)merged;
        }
    }
    return MG_OK;
}

mg_status mg_bpe_finalize(mg_bpe *b, int whole_piece_shortcut)
{
    MG_RETURN_IF(b->finalized, MG_ERR_ARG, "BPE model already finalized");
    for (int c = 0; c < 256; c++) {
        uint8_t byte = (uint8_t)c;
        b->byte_id[c] = mg_bpe_find_id(b, &byte, 1);
        MG_RETURN_IF(b->byte_id[c] < 0 && !b->chars, MG_ERR_FORMAT,
                     "BPE vocabulary lacks the single byte 0x%02X (every byte must be a token)",
                     c);
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", c);
        b->fb_id[c] = b->chars ? mg_bpe_token_id(b, (const uint8_t *)name, 6) : -1;
    }
    MG_FORWARD(build_id_index(b));
    if (b->mode == MG_BPE_TOKEN_RANK) MG_FORWARD(build_token_rank_pairs(b));
    MG_FORWARD(pack_pairs(b)); /* before the grid, which holds ranks */
    MG_FORWARD(build_grid(b));
    b->shortcut = whole_piece_shortcut != 0;
    b->finalized = 1;
    return MG_OK;
}

int mg_bpe_pairs_packed(const mg_bpe *b) { return b->packed != NULL; }

mg_status mg_bpe_set_char_symbols(mg_bpe *b, int byte_fallback, int32_t unk_id, int fuse_unk)
{
    MG_RETURN_IF(b->finalized, MG_ERR_ARG, "BPE model already finalized");
    MG_RETURN_IF(b->mode != MG_BPE_PAIR_RANK, MG_ERR_ARG, "char symbols need MG_BPE_PAIR_RANK");
    b->chars = 1;
    b->byte_fallback = byte_fallback != 0;
    b->unk_id = unk_id;
    b->fuse_unk = fuse_unk != 0;
    return MG_OK;
}

size_t mg_bpe_n_tokens(const mg_bpe *b) { return b->n_tok; }

int32_t mg_bpe_token_id(const mg_bpe *b, const uint8_t *bytes, size_t len)
{
    return mg_bpe_find_id(b, bytes, len);
}

const uint8_t *mg_bpe_token_bytes(const mg_bpe *b, int32_t id, size_t *len)
{
    *len = 0;
    if (!b->id_index || id < 0 || (size_t)id >= b->n_ids || b->id_index[id] < 0) return NULL;
    int32_t t = b->id_index[id];
    *len = b->tok_len[t];
    return b->bytes + b->tok_off[t];
}
