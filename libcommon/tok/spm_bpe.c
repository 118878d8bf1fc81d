/* spm_bpe.c — sentencepiece's bpe::Model::Encode (0.2.x). Contract: spm_proto.h.
 *
 * The text is split into symbols: a user-defined piece (longest match; frozen, never
 * merged) or one character (OneCharLen). Every adjacent pair whose concatenation is a
 * matchable piece goes on an agenda ordered by the piece's float score, highest first,
 * then by the lower left index. The top pair is merged unless it is stale (a side is
 * empty or the sizes no longer add up), and the new pairs with its neighbours are
 * queued. Pairs forming an UNUSED piece record the split (the last one queued for that
 * piece wins); a final symbol that is an UNUSED piece is resegmented through those splits.
 * A pair's piece is found by walking the frozen md->pieces trie from the left symbol's
 * node over the right symbol's bytes (the same answer as PieceToId on the matchable set).
 *
 * Ids (sentencepiece 0.2.3, PieceToIdNoReserved): a final symbol's id is its matchable
 * piece (NORMAL/USER_DEFINED/UNUSED), else unk; the reserved pieces (CONTROL, UNKNOWN,
 * BYTE) are never looked up. So a character that is only a CONTROL piece (say "x" marked
 * CONTROL) is an unknown symbol: tok_spm.c merges a run of them into one unk or, with
 * byte_fallback, emits its bytes. Pairs only ever form matchable pieces, so merges through
 * such a character still happen ("x" + "t" -> "xt" when "xt" is a piece). 0.2.1 looked
 * reserved pieces up first and failed on such a text ("all normalized characters are not
 * consumed"). The two lookups differ only there and on a piece both matchable and
 * reserved, a BPE model 0.2.3 refuses to load ("... is already defined"; we load it and
 * use the matchable id).
 *
 * With md->ws_bounded no pair merges across the start of a "▁" and no split is recorded,
 * so each "▁"-led span is encoded on its own: the same merges (a span's pairs keep their
 * order on the agenda), and a span's pieces depend on its bytes only. So:
 *  - a per-scratch cache maps spans of at most 255 bytes to their pieces (see span_cache;
 *    it is exact: the key is the whole span);
 *  - a span of at most 64 bytes is merged in an array, the best pair found by a scan
 *    (see small_run) instead of the heap;
 *  - a final symbol's id is its trie node's value (see piece_id).
 *  - a span of more than 5 bytes (Chinese text: a whole line) is cut where no piece
 *    can cross, and its parts are encoded and cached on their own (see encode_cut);
 *  - a 3-byte character's node comes from a table filled as they are met (see char_node).
 * sentencepiece itself runs the agenda over the whole normalized text (bpe_model.cc);
 * the results are the same (tests/interop/test_spm.py, test_spm_bpe_cache.py).
 */
#include "tok/spm_proto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

/* The span cache's lookups stay inlined into each caller (the short-span loop's included). */
#define HOT static inline __attribute__((always_inline))

typedef struct {
    int32_t prev, next;
    uint32_t off, len;
    int freeze;
    int32_t node; /* the frozen md->pieces node of the symbol's text, -1 if none */
} symbol;

typedef struct {
    int32_t left, right;
    float score;
    uint32_t size;
    int32_t node; /* of the merged text */
} pair;

typedef struct {
    uint32_t l_off, l_len, r_off, r_len;
} split;

typedef struct {
    const mg_spm_model *md;
    mg_spm_scratch *s;
    const uint8_t *t;
    symbol *sym;
    size_t n_sym;
    const mg_spm_frozen *f; /* md->pieces, frozen */
    int plain_scores;       /* see small_run */
    int32_t *char3;         /* s->char3 (see char_node) */
} bpe_run;

/* The span cache (ws_bounded models): an open-addressing table (linear probing) from a
 * span of at most CACHE_KEY bytes to its pieces, both kept in an arena (per entry: the
 * span's bytes, padding to 4, the ids, the lengths). When the arena or the table is full,
 * everything is dropped, so the memory stays bounded (10 MB, touched as used); it lives
 * in the scratch's span_cache. */
enum {
    CACHE_SLOTS = 1 << 18, CACHE_MAX = CACHE_SLOTS / 2, /* entries before a reset */
    CACHE_KEY = 255, CACHE_ARENA = 1 << 23
};

typedef struct {
    uint32_t off;     /* of the entry in the arena */
    uint16_t tag;     /* hash bits the slot index does not use */
    uint8_t klen, n;  /* klen 0: an empty slot */
} cache_entry;

typedef struct {
    int plain_scores;
    size_t used, arena_n;
    cache_entry e[CACHE_SLOTS];
    uint8_t arena[CACHE_ARENA];
} span_cache;

/* ---- the agenda: a binary max-heap ---- */

static int before(const pair *a, const pair *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static mg_status heap_push(mg_spm_scratch *s, pair p)
{
    MG_FORWARD(mg_grow(&s->heap, &s->heap_cap, s->heap_n + 1, sizeof(pair), 64));
    pair *h = s->heap;
    size_t i = s->heap_n++;
    while (i > 0 && before(&p, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = p;
    return MG_OK;
}

static pair heap_pop(mg_spm_scratch *s)
{
    pair *h = s->heap, top = h[0], last = h[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&h[c + 1], &h[c])) c++;
        if (!before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (n > 0) h[i] = last;
    return top;
}

/* ---- merging ---- */

static mg_status record_split(bpe_run *r, int32_t id, const symbol *a, const symbol *b)
{
    mg_spm_scratch *s = r->s;
    if (!s->rev) {
        s->rev = mg_malloc(r->md->proto.n_pieces * sizeof *s->rev);
        if (!s->rev) return MG_ERR_NOMEM;
        memset(s->rev, 0xFF, r->md->proto.n_pieces * sizeof *s->rev);
    }
    split sp = {a->off, a->len, b->off, b->len};
    if (s->rev[id] >= 0) {
        ((split *)s->revs)[s->rev[id]] = sp;
        return MG_OK;
    }
    MG_FORWARD(mg_grow(&s->revs, &s->revs_cap, s->revs_n + 1, sizeof(split), 64));
    ((split *)s->revs)[s->revs_n] = sp;
    s->rev[id] = (int32_t)s->revs_n++;
    return MG_OK;
}

/* The node reached from node over t[off, off + len), -1 if none. */
static int32_t walk(const bpe_run *r, int32_t node, uint32_t off, uint32_t len)
{
    for (uint32_t k = 0; node >= 0 && k < len; k++)
        node = mg_spm_frozen_step(r->f, node, r->t[off + k]);
    return node;
}

/* The node of the character t[pos, pos + len) from the root, -1 if none: a 3-byte one
 * (a lead byte 0xE0..0xEF and two continuation bytes) through r->char3, filled as the
 * characters are met (64K entries, one per such character), the others walked. */
static int32_t char_node(const bpe_run *r, uint32_t pos, uint32_t len)
{
    const uint8_t *p = r->t + pos;
    if (len == 3 && (p[0] >> 4) == 0xE && ((p[1] ^ 0x80) | (p[2] ^ 0x80)) < 0x40) {
        int32_t *e = &r->char3[(p[0] & 0x0F) << 12 | (p[1] & 0x3F) << 6 | (p[2] & 0x3F)];
        if (*e == 0) *e = walk(r, 0, pos, 3) + 2;
        return *e - 2;
    }
    return walk(r, 0, pos, len);
}

/* MaybeAddNewSymbolPair */
static mg_status maybe_add(bpe_run *r, int32_t left, int32_t right)
{
    if (left < 0 || right < 0 || r->sym[left].freeze || r->sym[right].freeze) return MG_OK;
    const symbol *a = &r->sym[left], *b = &r->sym[right];
    uint32_t size = a->len + b->len;
    int32_t node = walk(r, a->node, b->off, b->len); /* = PieceToId on the matchable set */
    int32_t id = node >= 0 ? r->f->nodes[node].value : -1;
    if (id < 0) return MG_OK;
    const mg_spm_piece *pc = &r->md->proto.pieces[id];
    MG_FORWARD(heap_push(r->s, (pair){left, right, pc->score, size, node}));
    if (pc->type == SPM_UNUSED) MG_FORWARD(record_split(r, id, a, b));
    return MG_OK;
}

/* The symbols of t[from, to). */
static mg_status split_symbols(bpe_run *r, size_t from, size_t to)
{
    size_t k = 0;
    for (size_t pos = from; pos < to; k++) {
        MG_FORWARD(mg_grow(&r->s->syms, &r->s->syms_cap, k + 1, sizeof(symbol), 64));
        r->sym = r->s->syms;
        size_t len = r->md->user ? mg_spm_trie_longest(r->md->user, r->t + pos, to - pos) : 0;
        int freeze = len > 0;
        if (!freeze) {
            len = mg_spm_char_len(r->t[pos]);
            if (len > to - pos) len = to - pos;
        }
        r->sym[k] = (symbol){(int32_t)k - 1, pos + len < to ? (int32_t)k + 1 : -1,
                             (uint32_t)pos, (uint32_t)len, freeze,
                             char_node(r, (uint32_t)pos, (uint32_t)len)};
        pos += len;
    }
    r->n_sym = k;
    return MG_OK;
}

static mg_status merge_all(bpe_run *r)
{
    r->s->heap_n = 0;
    for (size_t i = 1; i < r->n_sym; i++) MG_FORWARD(maybe_add(r, (int32_t)i - 1, (int32_t)i));
    while (r->s->heap_n > 0) {
        pair top = heap_pop(r->s);
        symbol *a = &r->sym[top.left], *b = &r->sym[top.right];
        if (a->len == 0 || b->len == 0 || a->len + b->len != top.size) continue;
        a->len += b->len;
        a->node = top.node;
        a->next = b->next;
        if (b->next >= 0) r->sym[b->next].prev = top.left;
        b->len = 0;
        MG_FORWARD(maybe_add(r, a->prev, top.left));
        MG_FORWARD(maybe_add(r, top.left, a->next));
    }
    return MG_OK;
}

/* ---- output ---- */

/* Pushes (off, len) on the resegmentation stack. */
static mg_status stack_push(mg_spm_scratch *s, size_t *n, uint32_t off, uint32_t len)
{
    MG_FORWARD(MG_GROW(s->stack, s->stack_cap, *n + 2, 64));
    s->stack[(*n)++] = off;
    s->stack[(*n)++] = len;
    return MG_OK;
}

/* PieceToIdNoReserved of a final symbol, given its node in md->pieces (-1: none): the
 * matchable piece's id, else unk (a CONTROL-only character included). */
static int32_t piece_id(const bpe_run *r, int32_t node)
{
    int32_t id = node >= 0 ? r->f->nodes[node].value : -1;
    return id >= 0 ? id : r->md->unk_id;
}

/* The same for the text t[off, off + len). */
static int32_t text_id(const bpe_run *r, uint32_t off, uint32_t len)
{
    return piece_id(r, walk(r, 0, off, len));
}

static mg_status resegment(bpe_run *r, const symbol *sy, mg_spm_refs *out)
{
    mg_spm_scratch *s = r->s;
    int32_t id = piece_id(r, sy->node);
    if (r->md->proto.pieces[id].type != SPM_UNUSED || !s->rev || s->rev[id] < 0)
        return mg_spm_refs_push(out, sy->off, sy->len, id);
    size_t n = 0;
    MG_FORWARD(stack_push(s, &n, sy->off, sy->len));
    while (n > 0) {
        uint32_t len = s->stack[--n], off = s->stack[--n];
        id = text_id(r, off, len);
        int32_t slot = s->rev ? s->rev[id] : -1;
        if (r->md->proto.pieces[id].type != SPM_UNUSED || slot < 0) {
            MG_FORWARD(mg_spm_refs_push(out, off, len, id));
            continue;
        }
        const split *sp = &((const split *)s->revs)[slot];
        uint32_t r_off = sp->r_off, r_len = sp->r_len;
        MG_FORWARD(stack_push(s, &n, r_off, r_len));
        MG_FORWARD(stack_push(s, &n, sp->l_off, sp->l_len));
    }
    return MG_OK;
}

static void clear_splits(mg_spm_scratch *s, const mg_spm_model *md)
{
    if (!s->rev || s->revs_n == 0) return;
    memset(s->rev, 0xFF, md->proto.n_pieces * sizeof *s->rev);
    s->revs_n = 0;
}

/* The first "▁" at or after from in t[0, n), n if none. */
static size_t next_ws(const uint8_t *t, size_t from, size_t n)
{
    for (size_t i = from; i + 3 <= n; i++) {
        const uint8_t *p = memchr(t + i, 0xE2, n - 2 - i);
        if (!p) break;
        i = (size_t)(p - t);
        if (p[1] == 0x96 && p[2] == 0x81) return i;
    }
    return n;
}

/* ---- the span cache ---- */

/* 1 if every matchable piece's score is above -inf (no NaN). */
static int scores_plain(const mg_spm_model *md)
{
    for (size_t i = 0; i < md->proto.n_pieces; i++) {
        const mg_spm_piece *pc = &md->proto.pieces[i];
        int matchable = pc->type == SPM_NORMAL || pc->type == SPM_USER_DEFINED ||
                        pc->type == SPM_UNUSED;
        if (matchable && !(pc->score > -INFINITY)) return 0;
    }
    return 1;
}

/* The cache in s (a scratch serves one model), made on first use. */
static mg_status cache_of(mg_spm_scratch *s, const mg_spm_model *md, span_cache **out)
{
    span_cache *c = s->span_cache;
    if (!c) {
        s->span_cache = c = mg_calloc(1, sizeof *c);
        if (!c) return MG_ERR_NOMEM;
        c->plain_scores = scores_plain(md);
    }
    *out = c;
    return MG_OK;
}

HOT uint64_t span_hash(const uint8_t *p, size_t n)
{
    uint64_t h = (n + 1) * 0x9E3779B97F4A7C15ULL, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 29;
    }
    if (i < n) {
        for (w = 0; i < n; i++) w = w << 8 | p[i];
        h = (h ^ w) * 0x94D049BB133111EBULL;
    }
    return h ^ (h >> 32);
}

static size_t cache_pad(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

/* The slot of span p[0, n) with hash h: its entry, or the empty slot to fill. */
static cache_entry *cache_find(span_cache *c, const uint8_t *p, size_t n, uint64_t h)
{
    uint16_t tag = (uint16_t)(h >> 48);
    for (size_t i = h & (CACHE_SLOTS - 1);; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_entry *e = &c->e[i];
        if (e->klen == 0) return e;
        if (e->tag == tag && e->klen == n && memcmp(c->arena + e->off, p, n) == 0) return e;
    }
}

/* Appends the pieces of e at offset from. */
HOT mg_status cache_emit(const span_cache *c, const cache_entry *e, size_t from,
                         mg_spm_refs *out)
{
    MG_FORWARD(mg_spm_refs_reserve(out, e->n));
    const uint8_t *ids = c->arena + e->off + cache_pad(e->klen), *len = ids + 4 * e->n;
    uint32_t off = (uint32_t)from;
    mg_spm_ref *o = out->v + out->n;
    for (unsigned i = 0; i < e->n; i++) {
        int32_t id;
        memcpy(&id, ids + 4 * i, 4);
        o[i] = (mg_spm_ref){off, len[i], id};
        off += len[i];
    }
    out->n += e->n;
    return MG_OK;
}

/* Fills the empty slot e with span p[0, n) (hash h) -> refs[0, k), if k fits; a full
 * cache is emptied first (then e is found again). */
static void cache_store(span_cache *c, cache_entry *e, const uint8_t *p, size_t n, uint64_t h,
                        const mg_spm_ref *refs, size_t k)
{
    if (k > UINT8_MAX) return;
    size_t need = cache_pad(n) + 5 * k;
    if (c->used == CACHE_MAX || c->arena_n + need > CACHE_ARENA) {
        memset(c->e, 0, sizeof c->e);
        c->used = c->arena_n = 0;
        e = cache_find(c, p, n, h);
    }
    *e = (cache_entry){(uint32_t)c->arena_n, (uint16_t)(h >> 48), (uint8_t)n, (uint8_t)k};
    uint8_t *a = c->arena + c->arena_n, *ids = a + cache_pad(n), *len = ids + 4 * k;
    memcpy(a, p, n);
    for (size_t i = 0; i < k; i++) {
        memcpy(ids + 4 * i, &refs[i].id, 4);
        len[i] = (uint8_t)refs[i].len;
    }
    c->arena_n += cache_pad(need);
    c->used++;
}

/* Encode of t[from, to) as a whole; appends to out. */
static mg_status encode_span(bpe_run *r, size_t from, size_t to, mg_spm_refs *out)
{
    mg_status st = split_symbols(r, from, to);
    if (st == MG_OK) st = merge_all(r);
    for (int32_t i = 0; st == MG_OK && i >= 0; i = r->sym[i].next)
        st = resegment(r, &r->sym[i], out);
    return st;
}

/* ---- short spans of ws_bounded models: the agenda as a scan ----
 * The agenda's live pairs are exactly the adjacent pairs of the current symbols whose
 * text is a matchable piece (an older pair fails the size check), and it yields the
 * highest score, then the leftmost. A span of at most SMALL bytes keeps its symbols in
 * an array and finds that pair by a scan: the same merges in the same order, no heap. */
enum { SMALL = 64 };

typedef struct {
    uint32_t off, len;
    int32_t node;  /* of the symbol's text, -1 if none */
    int32_t pnode; /* of this symbol's text + the next one's, -1 if none (or frozen) */
    uint32_t freeze;
} small_sym;

/* The symbols and, per adjacent pair, the score of its piece (-inf: none; the scan needs
 * every piece score above -inf, see plain_scores). */
typedef struct {
    small_sym w[SMALL];
    float score[SMALL];
    size_t n;
} small_run;

/* The pair of w[i] and w[i + 1], given node: the walk from w[i]'s text over the first
 * skip bytes of w[i + 1]. */
static void small_pair_from(const bpe_run *r, small_run *sr, size_t i, int32_t node,
                            uint32_t skip)
{
    const small_sym *w = sr->w;
    node = w[i].freeze || w[i + 1].freeze ? -1
           : walk(r, node, w[i + 1].off + skip, w[i + 1].len - skip);
    int32_t id = node >= 0 ? r->f->nodes[node].value : -1;
    sr->w[i].pnode = node;
    sr->score[i] = id >= 0 ? r->md->proto.pieces[id].score : -INFINITY;
}

static void small_pair(const bpe_run *r, small_run *sr, size_t i)
{
    small_pair_from(r, sr, i, sr->w[i].node, 0);
}

/* The symbols of t[from, to) (at most SMALL bytes), as split_symbols. */
static void small_split(const bpe_run *r, small_run *sr, size_t from, size_t to)
{
    small_sym *w = sr->w;
    size_t k = 0;
    for (size_t pos = from; pos < to; k++) {
        size_t len = r->md->user ? mg_spm_trie_longest(r->md->user, r->t + pos, to - pos) : 0;
        int freeze = len > 0;
        if (!freeze) {
            len = r->t[pos] < 0x80 ? 1 : mg_spm_char_len(r->t[pos]);
            if (len > to - pos) len = to - pos;
        }
        int32_t node = len == 1 ? mg_spm_frozen_step(r->f, 0, r->t[pos])
                                : char_node(r, (uint32_t)pos, (uint32_t)len);
        w[k] = (small_sym){(uint32_t)pos, (uint32_t)len, node, -1, (uint32_t)freeze};
        pos += len;
    }
    sr->n = k;
}

/* The pair to merge: the highest score, then the leftmost; SIZE_MAX if none. */
static size_t small_best(const small_run *sr)
{
    size_t best = SIZE_MAX;
    float top = -INFINITY;
    for (size_t i = 0; i + 1 < sr->n; i++) {
        if (sr->score[i] > top) {
            top = sr->score[i];
            best = i;
        }
    }
    return best;
}

/* Merges the symbols as merge_all does. */
static void small_merge(const bpe_run *r, small_run *sr)
{
    for (size_t i = 0; i + 1 < sr->n; i++) small_pair(r, sr, i);
    for (size_t b; (b = small_best(sr)) != SIZE_MAX;) {
        small_sym *w = sr->w;
        /* the left pair's walk so far: over w[b] before the merge */
        int32_t left = b > 0 ? w[b - 1].pnode : -1;
        uint32_t skip = w[b].len;
        w[b].len += w[b + 1].len;
        w[b].node = w[b].pnode;
        for (size_t i = b + 1; i + 1 < sr->n; i++) {
            w[i] = w[i + 1];
            sr->score[i] = sr->score[i + 1];
        }
        sr->n--;
        if (b > 0) small_pair_from(r, sr, b - 1, left, skip);
        if (b + 1 < sr->n) small_pair(r, sr, b);
    }
}

/* Encode of t[from, to), a span of a ws_bounded model; appends to out. */
static mg_status encode_ws_span(bpe_run *r, size_t from, size_t to, mg_spm_refs *out)
{
    if (to - from > SMALL || !r->plain_scores) return encode_span(r, from, to, out);
    small_run sr;
    small_split(r, &sr, from, to);
    small_merge(r, &sr);
    MG_FORWARD(mg_spm_refs_reserve(out, sr.n));
    for (size_t i = 0; i < sr.n; i++) {
        const small_sym *w = &sr.w[i];
        out->v[out->n++] = (mg_spm_ref){w->off, w->len, piece_id(r, w->node)};
    }
    return MG_OK;
}

/* A span t[from, to) and, if it may be cached, its hash. */
typedef struct {
    size_t from, to;
    uint64_t h;
} span_ref;

/* The span at from (from == n: none) in t[0, n); its cache slot is prefetched. */
static span_ref span_at(const bpe_run *r, const span_cache *c, size_t from, size_t n)
{
    span_ref sp = {from, from < n ? next_ws(r->t, from + 1, n) : n, 0};
    if (sp.from < n && sp.to - sp.from <= CACHE_KEY) {
        sp.h = span_hash(r->t + from, sp.to - sp.from);
        __builtin_prefetch(&c->e[sp.h & (CACHE_SLOTS - 1)]);
    }
    return sp;
}

/* encode_span through the cache c. */
HOT mg_status encode_cached(bpe_run *r, span_cache *c, span_ref sp, mg_spm_refs *out)
{
    size_t n = sp.to - sp.from;
    if (n > CACHE_KEY) return encode_span(r, sp.from, sp.to, out);
    const uint8_t *p = r->t + sp.from;
    cache_entry *e = cache_find(c, p, n, sp.h);
    if (e->klen) return cache_emit(c, e, sp.from, out);
    size_t first = out->n;
    MG_FORWARD(encode_ws_span(r, sp.from, sp.to, out));
    cache_store(c, e, p, n, sp.h, out->v + first, out->n - first);
    return MG_OK;
}

/* ---- long spans: cut where no piece crosses ----
 * Every symbol the merges make is a piece occurring in the text at the symbol's place. So
 * where no piece occurs across a character boundary p (it starts before p and ends after
 * it), no pair across p is ever on the agenda, and the symbols on either side of p are
 * merged as if each side were encoded alone (the agenda's order within a side is the
 * same). A piece across p holds the characters on either side of p as an adjacent pair,
 * so p is such a boundary when md->bigrams says that pair is in no piece. A long span (Chinese
 * text: a whole line) is cut at every such p, and each part goes through the span cache
 * on its own. Not used with user-defined symbols (md->bigrams is not built: a longest
 * match could start inside a part). */
enum { CUT_MIN = 5 }; /* spans of at most this many bytes are not cut */

/* The length of the character at t[s, to), as split_symbols splits it. */
static size_t char_in(const uint8_t *t, size_t s, size_t to)
{
    size_t k = t[s] < 0x80 ? 1 : mg_spm_char_len(t[s]);
    return k < to - s ? k : to - s;
}

/* t[from, to) through the cache c as one part. */
static mg_status encode_part(bpe_run *r, span_cache *c, size_t from, size_t to,
                             mg_spm_refs *out)
{
    if (to - from == char_in(r->t, from, to)) { /* one character: its piece or unk */
        int32_t id = piece_id(r, char_node(r, (uint32_t)from, (uint32_t)(to - from)));
        if (out->n < out->cap) {
            out->v[out->n++] = (mg_spm_ref){(uint32_t)from, (uint32_t)(to - from), id};
            return MG_OK;
        }
        return mg_spm_refs_push(out, (uint32_t)from, (uint32_t)(to - from), id);
    }
    span_ref sp = {from, to, to - from <= CACHE_KEY ? span_hash(r->t + from, to - from) : 0};
    return encode_cached(r, c, sp, out);
}

/* The parts of the span sp (see above), each encoded through the cache c. */
static mg_status encode_parts(bpe_run *r, span_cache *c, span_ref sp, mg_spm_refs *out)
{
    const mg_spm_bigrams *bg = &r->md->bigrams;
    const uint8_t *t = r->t;
    size_t part = sp.from, k = char_in(t, sp.from, sp.to);
    uint32_t prev = mg_spm_char_pack(t + sp.from, k);
    for (size_t s = sp.from + k; s < sp.to; s += k) {
        k = char_in(t, s, sp.to);
        uint32_t cur = mg_spm_char_pack(t + s, k);
        if (!mg_spm_bigram_maybe(bg, prev, cur)) {
            MG_FORWARD(encode_part(r, c, part, s, out));
            part = s;
        }
        prev = cur;
    }
    return encode_part(r, c, part, sp.to, out);
}

/* encode_cached of the span sp, a long one cut into parts: the whole span is looked up
 * first (a repeated long span, such as a line of '=', is one lookup) and stored after. */
static mg_status encode_cut(bpe_run *r, span_cache *c, span_ref sp, mg_spm_refs *out)
{
    size_t n = sp.to - sp.from, first = out->n;
    if (n <= CUT_MIN || !r->md->bigrams.bits) return encode_cached(r, c, sp, out);
    const uint8_t *p = r->t + sp.from;
    if (n <= CACHE_KEY) {
        const cache_entry *e = cache_find(c, p, n, sp.h);
        if (e->klen) return cache_emit(c, e, sp.from, out);
    }
    MG_FORWARD(encode_parts(r, c, sp, out));
    if (n <= CACHE_KEY) { /* the parts may have filled or emptied the table: found again */
        cache_entry *e = cache_find(c, p, n, sp.h);
        if (!e->klen) cache_store(c, e, p, n, sp.h, out->v + first, out->n - first);
    }
    return MG_OK;
}

/* A ws_bounded model: each "▁"-led span on its own, through the cache. Two spans ahead
 * the cache slot is prefetched, one span ahead the arena entry found there. */
static mg_status encode_spans(bpe_run *r, size_t n, mg_spm_refs *out)
{
    span_cache *c;
    MG_FORWARD(cache_of(r->s, r->md, &c));
    r->plain_scores = c->plain_scores;
    span_ref a = span_at(r, c, 0, n), b = span_at(r, c, a.to, n);
    while (a.from < n) {
        span_ref next = span_at(r, c, b.to, n);
        const cache_entry *e = &c->e[b.h & (CACHE_SLOTS - 1)];
        if (e->klen) __builtin_prefetch(c->arena + e->off);
        MG_FORWARD(encode_cut(r, c, a, out));
        a = b;
        b = next;
    }
    return MG_OK;
}

mg_status mg_spm_bpe_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                            size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    if (!s->char3 && !(s->char3 = mg_calloc(65536, sizeof *s->char3))) return MG_ERR_NOMEM;
    bpe_run r = {md, s, t, s->syms, 0, mg_spm_trie_frozen(md->pieces), 0, s->char3};
    MG_RETURN_IF(!r.f, MG_ERR_ARG, "sentencepiece BPE: the piece trie is not frozen");
    if (md->ws_bounded) return encode_spans(&r, n, out);
    mg_status st = encode_span(&r, 0, n, out);
    clear_splits(s, md);
    return st;
}
