/* spm_bpe.c — sentencepiece's bpe::Model::Encode (0.2.x). Contract: spm_proto.h.
 *
 * The text is split into symbols: a user-defined piece (longest match; frozen, never
 * merged) or one character (OneCharLen). Every adjacent pair whose concatenation is a
 * matchable piece goes on an agenda ordered by the piece's float score, highest first,
 * then by the lower left index. The top pair is merged unless it is stale (a side is
 * empty or the sizes no longer add up), and the new pairs with its neighbours are
 * queued. Pairs forming an UNUSED piece record the split (the last one queued for that
 * piece wins); a final symbol that is an UNUSED piece is resegmented through those splits.
 * Each final symbol's id is PieceToId (reserved pieces first, unknown -> unk).
 * With md->ws_bounded no pair merges across the start of a "▁" and no split is recorded,
 * so each "▁"-led span is encoded on its own: the same merges (a span's pairs keep their
 * order on the agenda) on a small agenda instead of the whole text's. A pair's piece is
 * found by walking the frozen md->pieces trie from the left symbol's node over the right
 * symbol's bytes (the same answer as PieceToId on the matchable set).
 */
#include "tok/spm_proto.h"

#include <stdlib.h>
#include <string.h>

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
} bpe_run;

static mg_status grow(void **v, size_t *cap, size_t need, size_t elem)
{
    if (*cap >= need) return MG_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *p = mg_realloc(*v, c * elem);
    if (!p) return MG_ERR_NOMEM;
    *v = p;
    *cap = c;
    return MG_OK;
}

/* ---- the agenda: a binary max-heap ---- */

static int before(const pair *a, const pair *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static mg_status heap_push(mg_spm_scratch *s, pair p)
{
    MG_FORWARD(grow(&s->heap, &s->heap_cap, s->heap_n + 1, sizeof(pair)));
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
    MG_FORWARD(grow(&s->revs, &s->revs_cap, s->revs_n + 1, sizeof(split)));
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
        MG_FORWARD(grow(&r->s->syms, &r->s->syms_cap, k + 1, sizeof(symbol)));
        r->sym = r->s->syms;
        size_t len = r->md->user ? mg_spm_trie_longest(r->md->user, r->t + pos, to - pos) : 0;
        int freeze = len > 0;
        if (!freeze) {
            len = mg_spm_char_len(r->t[pos]);
            if (len > to - pos) len = to - pos;
        }
        r->sym[k] = (symbol){(int32_t)k - 1, pos + len < to ? (int32_t)k + 1 : -1,
                             (uint32_t)pos, (uint32_t)len, freeze,
                             walk(r, 0, (uint32_t)pos, (uint32_t)len)};
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
    MG_FORWARD(grow((void **)&s->stack, &s->stack_cap, *n + 2, sizeof *s->stack));
    s->stack[(*n)++] = off;
    s->stack[(*n)++] = len;
    return MG_OK;
}

static mg_status resegment(bpe_run *r, const symbol *sy, mg_spm_refs *out)
{
    mg_spm_scratch *s = r->s;
    size_t n = 0;
    MG_FORWARD(stack_push(s, &n, sy->off, sy->len));
    while (n > 0) {
        uint32_t len = s->stack[--n], off = s->stack[--n];
        int32_t id = mg_spm_piece_to_id(r->md, r->t + off, len);
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

/* Encode of t[from, to) as a whole; appends to out. */
static mg_status encode_span(bpe_run *r, size_t from, size_t to, mg_spm_refs *out)
{
    mg_status st = split_symbols(r, from, to);
    if (st == MG_OK) st = merge_all(r);
    for (int32_t i = 0; st == MG_OK && i >= 0; i = r->sym[i].next)
        st = resegment(r, &r->sym[i], out);
    return st;
}

mg_status mg_spm_bpe_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                            size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    bpe_run r = {md, s, t, s->syms, 0, mg_spm_trie_frozen(md->pieces)};
    MG_RETURN_IF(!r.f, MG_ERR_ARG, "sentencepiece BPE: the piece trie is not frozen");
    mg_status st = MG_OK;
    for (size_t from = 0; st == MG_OK && from < n;) {
        size_t to = md->ws_bounded ? next_ws(t, from + 1, n) : n;
        st = encode_span(&r, from, to, out);
        from = to;
    }
    clear_splits(s, md);
    return st;
}
