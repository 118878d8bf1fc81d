/* spm_unigram.c — the Unigram Viterbi of sentencepiece's unigram::Model::EncodeOptimized
 * (the 0.2.3 wheel, .model files) and of HF tokenizers' Unigram::encode_optimized
 * (tokenizer.json). Contract: spm_proto.h (mg_unigram_dat, mg_unigram_lattice).
 *
 * Both: Viterbi over byte positions, advancing one character (OneCharLen) at a time. From
 * each start, every piece of the trie that is a prefix of the rest is a candidate for the
 * node at its end; the path score is the piece's score plus the path score at its start;
 * a candidate replaces the node's best if the node is unreached or the candidate is
 * strictly greater (the earliest start wins ties). If no piece covers exactly the first
 * character, an unk candidate scores unk_score. Backtracking yields the pieces.
 *
 *   - sentencepiece 0.2.3 (mg_spm_unigram_encode / _ids; read from the wheel's machine
 *     code and checked against it, the public 0.2.0 source differs): candidates are the
 *     NORMAL and USER_DEFINED pieces, a USER_DEFINED piece of n bytes scores
 *     (float)(n - 1) * 0.1f; all scores and sums are floats (unk_score = min_score -
 *     10.0f). Before the pieces of a start are tried, if the start's path score s is
 *     finite and |s| > 1e5, s is subtracted (in float) from that node (which becomes 0)
 *     and from every reached node after it: in long documents near-ties are broken by
 *     this rebasing. Speed: the trie is a double array (mg_unigram_dat: XOR bases, each
 *     unit holding its parent, piece id and score). Usually (finite scores, pieces of at
 *     most 255 bytes) the live scores sit in a ring and each end position keeps only
 *     the start and id of its best piece (run_packed; a start at a 3-byte character takes
 *     its unit from a table, after3, instead of three steps; a start more than the longest
 *     piece before the end walks without testing for the end); otherwise nodes (float score,
 *     start, id) as sentencepiece's, set unreached in blocks just ahead of the starts
 *     (run_nodes). The best path is written backwards, straight as ids for _ids.
 *   - HF (mg_unigram_viterbi, f64 scores): every piece is a candidate; sums in f64, no
 *     rebasing; an unk needed without an unk id is an error, as tokenizers' MissingUnkId.
 */
#include "tok/spm_proto.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNK_PENALTY 10.0f
#define REBASE_AT 100000.0f
#define HOT static inline __attribute__((always_inline))

/* mg_spm_char_len, inlined. */
static inline size_t char_len(uint8_t first)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[first >> 4];
}

static mg_status ensure_scratch(mg_spm_scratch *s, size_t bytes)
{
    if (s->nodes_cap >= bytes) return MG_OK;
    if (bytes < s->nodes_cap + s->nodes_cap / 2) bytes = s->nodes_cap + s->nodes_cap / 2;
    void *v = mg_realloc(s->nodes, bytes);
    if (!v) return MG_ERR_NOMEM;
    s->nodes = v;
    s->nodes_cap = bytes;
    return MG_OK;
}

/* ==== the double array ==== */

/* Unit i is the child of unit p by byte b when i == u[p].base ^ b and u[i].check == p;
 * free units have check -1 (the root's is -2). */
typedef struct {
    int32_t base, check;
    float score; /* of the piece ending here */
    int32_t id;  /* the piece ending here, -1 if none */
} dat_unit;

struct mg_unigram_dat {
    dat_unit *u;
    size_t n;   /* units, a multiple of 256 */
    int finite; /* every piece score is finite and at most 1e30 in magnitude */
    /* after3[three_index(b)]: the unit reached from the root by the three bytes b0 b1 b2
     * (b0 in E0..EF, b1 and b2 continuation bytes), -1 if the walk leaves the trie; NULL
     * when a node on the way after one or two such bytes ends a piece (then every start
     * walks byte by byte) */
    int32_t *after3;
};

/* The index of three bytes E0..EF, 80..BF, 80..BF in after3 (a bijection onto 0..65535). */
static inline uint32_t three_index(const uint8_t *b)
{
    return (uint32_t)(b[0] & 0x0F) << 12 | (uint32_t)(b[1] & 0x3F) << 6 | (b[2] & 0x3F);
}

typedef struct {
    dat_unit *u;
    size_t n, scan; /* units allocated; no free unit below scan */
    size_t hi;      /* units in use lie below hi */
    int32_t *queue; /* (trie node, unit) pairs in breadth-first order */
    size_t q_n, q_cap;
} dat_build;

#define DAT_MAX_UNITS ((size_t)INT32_MAX - 256)
/* A node of BIG_NODE or more children first tries the last block (RECENT_UNITS) for its
 * base: from the first free unit its 512 misses would mostly end in a fresh block of its
 * own (the fortunes-zh model's array: 61 440 units that way, 15 104 this way). */
#define BIG_NODE 8
#define RECENT_UNITS 256

static mg_status dat_grow(dat_build *b, size_t need)
{
    if (need <= b->n) return MG_OK;
    MG_RETURN_IF(need > DAT_MAX_UNITS, MG_ERR_LIMIT, "Unigram trie too large");
    size_t n = b->n ? b->n : 1024;
    while (n < need) n *= 2;
    dat_unit *u = mg_realloc(b->u, n * sizeof *u);
    if (!u) return MG_ERR_NOMEM;
    for (size_t i = b->n; i < n; i++) u[i] = (dat_unit){0, -1, 0.0f, -1};
    b->u = u;
    b->n = n;
    return MG_OK;
}

static mg_status queue_push(dat_build *b, int32_t node, int32_t unit)
{
    if (b->q_n + 2 > b->q_cap) {
        size_t cap = b->q_cap ? 2 * b->q_cap : 1024;
        int32_t *q = mg_realloc(b->queue, cap * sizeof *q);
        if (!q) return MG_ERR_NOMEM;
        b->queue = q;
        b->q_cap = cap;
    }
    b->queue[b->q_n++] = node;
    b->queue[b->q_n++] = unit;
    return MG_OK;
}

/* Whether base ^ label is free for every label (units past the end are free). */
static int fits(const dat_build *b, size_t base, const uint8_t *labels, int k)
{
    for (int j = 0; j < k; j++) {
        size_t i = base ^ labels[j];
        if (i == 0 || (i < b->n && b->u[i].check != -1)) return 0;
    }
    return 1;
}

/* A base for children labels[0, k) (k >= 1): the first fit from the first free unit (for
 * a big node from the last block), or after 512 misses a fresh block past the units in
 * use. */
static mg_status find_base(dat_build *b, const uint8_t *labels, int k, size_t *base)
{
    while (b->scan < b->hi && b->u[b->scan].check != -1) b->scan++;
    int misses = 0;
    size_t f = b->scan;
    if (k >= BIG_NODE && b->hi - f > RECENT_UNITS) f = b->hi - RECENT_UNITS;
    for (; f < b->hi && misses < 512; f++) {
        if (b->u[f].check != -1) continue;
        if (fits(b, f ^ labels[0], labels, k)) break;
        misses++;
    }
    *base = f < b->hi && misses < 512 ? f ^ labels[0] : (b->hi + 255) & ~(size_t)255;
    size_t end = (*base | 255) + 1;
    if (end > b->hi) b->hi = end;
    return dat_grow(b, end);
}

/* The children of frozen node `node`: their labels and trie nodes; returns the count. */
static int children(const mg_spm_frozen *f, int32_t node, uint8_t *labels, int32_t *kids)
{
    const mg_spm_fnode *nd = &f->nodes[node];
    int k = 0;
    if (nd->count == MG_SPM_DENSE) {
        for (int c = 0; c < 256; c++) {
            int32_t kid = f->dense[(size_t)nd->first * 256 + (size_t)c];
            if (kid >= 0) labels[k] = (uint8_t)c, kids[k++] = kid;
        }
        return k;
    }
    for (uint32_t i = 0; i < nd->count; i++) {
        labels[k] = f->labels[nd->first + i];
        kids[k++] = f->kids[nd->first + i];
    }
    return k;
}

/* Places the children of (node, unit) and queues them. */
static mg_status place_children(dat_build *b, const mg_spm_frozen *f, const float *score,
                                int32_t node, int32_t unit)
{
    uint8_t labels[256];
    int32_t kids[256];
    int k = children(f, node, labels, kids);
    if (k == 0) return MG_OK;
    size_t base;
    MG_FORWARD(find_base(b, labels, k, &base));
    b->u[unit].base = (int32_t)base;
    for (int j = 0; j < k; j++) {
        size_t i = base ^ labels[j];
        int32_t id = f->nodes[kids[j]].value;
        b->u[i] = (dat_unit){0, unit, id >= 0 ? score[id] : 0.0f, id};
        MG_FORWARD(queue_push(b, kids[j], (int32_t)i));
    }
    return MG_OK;
}

/* The child of unit s by byte b, -1 if none. */
static int32_t dat_child(const dat_unit *u, int32_t s, uint8_t b)
{
    int32_t c = u[s].base ^ b;
    return u[c].check == s ? c : -1;
}

/* The child of c by b (-1 if c is -1 or has none); *ends: it ends a piece. */
static int32_t child_of(const dat_unit *u, int32_t c, uint8_t b, int *ends)
{
    c = c >= 0 ? dat_child(u, c, b) : -1;
    *ends |= c >= 0 && u[c].id >= 0;
    return c;
}

/* d->after3 (see mg_unigram_dat); left NULL if a piece ends inside a 3-byte character. */
static mg_status build_after3(mg_unigram_dat *d)
{
    int32_t *a = mg_malloc(65536 * sizeof *a);
    if (!a) return MG_ERR_NOMEM;
    int inside = 0;
    for (uint32_t b0 = 0; b0 < 16; b0++) {
        int32_t c1 = child_of(d->u, 0, (uint8_t)(0xE0 | b0), &inside);
        for (uint32_t b1 = 0; b1 < 64; b1++) {
            int32_t c2 = child_of(d->u, c1, (uint8_t)(0x80 | b1), &inside);
            int32_t *row = a + (b0 << 12 | b1 << 6);
            for (uint32_t b2 = 0; b2 < 64; b2++)
                row[b2] = c2 >= 0 ? dat_child(d->u, c2, (uint8_t)(0x80 | b2)) : -1;
        }
    }
    if (inside) free(a);
    else d->after3 = a;
    return MG_OK;
}

mg_status mg_unigram_dat_build(const mg_spm_trie *trie, const float *score,
                               mg_unigram_dat **out)
{
    *out = NULL;
    const mg_spm_frozen *f = mg_spm_trie_frozen(trie);
    MG_RETURN_IF(!f, MG_ERR_ARG, "Unigram: the piece trie is not frozen");
    dat_build b = {0};
    b.scan = 1;
    b.hi = 256;
    mg_status st = dat_grow(&b, 256);
    if (st == MG_OK) {
        b.u[0].check = -2;
        st = queue_push(&b, 0, 0);
    }
    for (size_t q = 0; st == MG_OK && q < b.q_n; q += 2)
        st = place_children(&b, f, score, b.queue[q], b.queue[q + 1]);
    free(b.queue);
    mg_unigram_dat *d = st == MG_OK ? mg_calloc(1, sizeof *d) : NULL;
    if (!d) {
        free(b.u);
        return st == MG_OK ? MG_ERR_NOMEM : st;
    }
    d->u = b.u;
    d->n = b.hi;
    d->finite = 1;
    for (size_t i = 0; i < d->n; i++)
        if (d->u[i].id >= 0 && !(fabsf(d->u[i].score) <= 1e30f)) d->finite = 0;
    st = build_after3(d);
    if (st != MG_OK) {
        mg_unigram_dat_free(d);
        return st;
    }
    *out = d;
    return MG_OK;
}

void mg_unigram_dat_free(mg_unigram_dat *d)
{
    if (!d) return;
    free(d->u);
    free(d->after3);
    free(d);
}

/* ==== sentencepiece 0.2.3 ==== */

typedef struct {
    float score;
    int32_t from; /* the start of the best piece ending here, -1: not reached */
    int32_t id;
} spm_node;

/* -- the general case: nodes (float score, start, id), as sentencepiece's -- */

/* Sets nodes [ready, ...) unreached, past start + reach; returns the new ready. */
static size_t init_nodes(spm_node *nd, size_t ready, size_t n, size_t start, size_t reach)
{
    size_t to = ready + 256 > start + reach + 1 ? ready + 256 : start + reach + 1;
    if (to > n + 1) to = n + 1;
    for (size_t i = ready; i < to; i++) nd[i] = (spm_node){0.0f, -1, -1};
    return to;
}

/* The rebasing of sentencepiece 0.2.3 at `start` (|till| > REBASE_AT): if till is
 * finite, it is subtracted from the node at start (which becomes 0) and from the reached
 * nodes after it up to `to` (past the farthest a piece from an earlier start reaches);
 * returns the start's score after it. */
static float rebase_nodes(spm_node *nd, size_t start, size_t to)
{
    float till = nd[start].score;
    if (!(fabsf(till) <= FLT_MAX)) return till;
    nd[start].score -= till;
    for (size_t i = start + 1; i < to; i++)
        if (nd[i].from >= 0) nd[i].score -= till;
    return nd[start].score;
}

/* The Viterbi into nd[0, n]: a node is replaced if unreached (from < 0) or beaten. */
static void run_nodes(const dat_unit *u, spm_node *nd, const uint8_t *t, size_t n,
                      size_t reach, float unk_score, int32_t unk_id)
{
    size_t ready = 1;
    nd[0] = (spm_node){0.0f, -1, -1};
    for (size_t start = 0; start < n;) {
        if (start + reach >= ready) ready = init_nodes(nd, ready, n, start, reach);
        float till = nd[start].score;
        if (fabsf(till) > REBASE_AT)
            till = rebase_nodes(nd, start, start + reach < ready ? start + reach + 1 : ready);
        size_t mblen = char_len(t[start]), k = start;
        if (mblen > n - start) mblen = n - start;
        int single = 0;
        for (int32_t s = 0, c = u[0].base ^ t[k]; u[c].check == s; c = u[s].base ^ t[k]) {
            s = c;
            int32_t id = u[c].id;
            float cand = u[c].score + till;
            spm_node *e = &nd[k + 1];
            if (id >= 0 && (cand > e->score || e->from < 0))
                *e = (spm_node){cand, (int32_t)start, id};
            single |= id >= 0 && k + 1 - start == mblen;
            if (++k == n) break;
        }
        spm_node *e = &nd[start + mblen];
        float cand = unk_score + till;
        if (!single && (cand > e->score || e->from < 0))
            *e = (spm_node){cand, (int32_t)start, unk_id};
        start += mblen;
    }
}

/* -- the usual case, packed: finite scores (so every candidate is finite and beats an
 * unreached node's -inf) and pieces of at most 255 bytes. The scores of the live nodes
 * [start, start + reach] sit in a ring; per end position only the start and id of its
 * best piece are kept (8 bytes instead of 12). -- */

#define RING 256 /* > reach */

/* The best piece ending at a position: its start and id (the backward walk's next index is
 * a plain load, not a load plus arithmetic: the walk is a chain of them). */
typedef struct {
    uint32_t from;
    int32_t id;
} bp_entry;

/* The piece of unit c (id >= 0) from start to end as a candidate. */
HOT void packed_candidate(const dat_unit *u, int32_t c, bp_entry *bp, float *ring,
                                    size_t start, size_t end, float till)
{
    float cand = u[c].score + till, *e = &ring[end % RING];
    if (cand > *e) {
        *e = cand;
        bp[end] = (bp_entry){(uint32_t)start, u[c].id};
    }
}

/* The candidates of the pieces starting at `start` whose walk has reached unit s0 at byte
 * k0 (s0 = 0, k0 = start: from the root; k0 < n); with track_single (a constant at each
 * call), returns whether one spans exactly mblen bytes. An ASCII start does not track it:
 * its one-byte piece is the first node of the walk. With `bounded` (a constant) the walk
 * stops at n; without, the caller knows start + reach < n: a walk reads at most the byte
 * t[start + reach] (a node reach bytes deep has no children), so it cannot run past n. */
HOT int packed_candidates(const dat_unit *u, bp_entry *bp, float *ring,
                                    const uint8_t *t, size_t n, size_t start, int32_t s0,
                                    size_t k0, size_t mblen, float till, int track_single,
                                    int bounded)
{
    int single = 0;
    size_t k = k0;
    for (int32_t s = s0, c = u[s0].base ^ t[k0]; u[c].check == s; c = u[s].base ^ t[k]) {
        s = c;
        if (u[c].id >= 0) {
            packed_candidate(u, c, bp, ring, start, k + 1, till);
            if (track_single) single |= k + 1 - start == mblen;
        }
        if (++k == n && bounded) break;
    }
    return single;
}

/* The state of run_packed, a local copy the inlined steps keep in registers. */
typedef struct {
    const dat_unit *u;
    const int32_t *after3; /* the double array's, may be NULL */
    bp_entry *bp;
    float *ring;
    const uint8_t *t;
    size_t n, reach;
    float unk_score;
    int32_t unk_id;
} packed_run;

/* The unk candidate of the character t[start, start + mblen) unless a piece is that
 * character alone (single). */
HOT void packed_unk(const packed_run *r, size_t start, size_t mblen, float till, int single)
{
    float cand = r->unk_score + till, *e = &r->ring[(start + mblen) % RING];
    if (!single && cand > *e) {
        *e = cand;
        r->bp[start + mblen] = (bp_entry){(uint32_t)start, r->unk_id};
    }
}

/* A start at a 3-byte character (t[start, start + 3), continuation bytes checked, after3
 * set): its unit from after3, then the walk on; returns whether a piece is that character
 * alone. */
HOT int packed_three(const packed_run *r, size_t start, float till, int bounded)
{
    int32_t c = r->after3[three_index(r->t + start)];
    if (c < 0) return 0;
    int single = r->u[c].id >= 0;
    if (single) packed_candidate(r->u, c, r->bp, r->ring, start, start + 3, till);
    if (!bounded || start + 3 < r->n)
        packed_candidates(r->u, r->bp, r->ring, r->t, r->n, start, c, start + 3, 3, till, 0,
                          bounded);
    return single;
}

/* The score of the path to `start` (its ring slot then reset for position start + RING),
 * after sentencepiece's rebasing. */
HOT float packed_till(const packed_run *r, size_t start)
{
    float *ring = r->ring, till = ring[start % RING];
    ring[start % RING] = -INFINITY;
    if (fabsf(till) > REBASE_AT) { /* till is finite */
        size_t to = r->n - start > r->reach ? start + r->reach : r->n;
        for (size_t i = start + 1; i <= to; i++) ring[i % RING] -= till;
        till = 0.0f;
    }
    return till;
}

/* One start of run_packed: its candidates and the unk one; returns the next start. */
HOT size_t packed_start(const packed_run *r, size_t start, int bounded)
{
    const dat_unit *u = r->u;
    const uint8_t *t = r->t;
    float till = packed_till(r, start);
    uint8_t b0 = t[start];
    if (b0 >= 0xE0 && b0 < 0xF0 && r->after3 && (!bounded || r->n - start >= 3) &&
        ((t[start + 1] ^ 0x80) | (t[start + 2] ^ 0x80)) < 0x40) { /* the usual CJK start */
        packed_unk(r, start, 3, till, packed_three(r, start, till, bounded));
        r->ring[(start + 1) % RING] = -INFINITY; /* inside the character: never a start */
        r->ring[(start + 2) % RING] = -INFINITY;
        return start + 3;
    }
    size_t mblen = b0 < 0x80 ? 1 : char_len(b0);
    if (bounded && mblen > r->n - start) mblen = r->n - start;
    int single;
    if (mblen == 1) {
        int32_t c = u[0].base ^ b0;
        single = u[c].check == 0 && u[c].id >= 0;
        packed_candidates(u, r->bp, r->ring, t, r->n, start, 0, start, 1, till, 0, bounded);
    } else {
        single = packed_candidates(u, r->bp, r->ring, t, r->n, start, 0, start, mblen, till, 1,
                                   bounded);
    }
    packed_unk(r, start, mblen, till, single);
    for (size_t i = 1; i < mblen; i++) /* inside the character: never a start */
        r->ring[(start + i) % RING] = -INFINITY;
    return start + mblen;
}

static void run_packed(const mg_unigram_dat *d, bp_entry *bp, const uint8_t *t, size_t n,
                       size_t reach, float unk_score, int32_t unk_id)
{
    float ring[RING]; /* unreached (-inf) until reached; a slot is reset once passed */
    for (size_t i = 1; i < RING; i++) ring[i] = -INFINITY;
    ring[0] = 0.0f;
    const packed_run r = {d->u, d->after3, bp, ring, t, n, reach, unk_score, unk_id};
    size_t start = 0;
    /* while start + reach < n no walk and no character can run past n (reach >= 4) */
    while (n > reach && start < n - reach) start = packed_start(&r, start, 0);
    while (start < n) start = packed_start(&r, start, 1);
}

/* Whether md's Viterbi can run packed over text (reach: the longest piece, >= 4). */
static int packable(const mg_spm_model *md, float unk_score, size_t reach)
{
    return md->dat->finite && fabsf(unk_score) <= 1e30f && reach < RING;
}

static size_t lattice_reach(const mg_spm_model *md)
{
    size_t reach = md->lattice_max_len;
    return reach < 4 ? 4 : reach; /* an unk spans one character */
}

/* The Viterbi over t[0, n) (0 < n < INT32_MAX) into s->nodes: nodes, or packed. */
static mg_status spm_viterbi(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, int packed)
{
    MG_RETURN_IF(!md->dat, MG_ERR_ARG, "sentencepiece: not a Unigram model");
    float unk_score = md->min_score - UNK_PENALTY;
    size_t reach = lattice_reach(md);
    MG_FORWARD(ensure_scratch(s, (n + 1) * (packed ? sizeof(bp_entry) : sizeof(spm_node))));
    if (packed)
        run_packed(md->dat, s->nodes, t, n, reach, unk_score, md->unk_id);
    else
        run_nodes(md->dat->u, s->nodes, t, n, reach, unk_score, md->unk_id);
    return MG_OK;
}

mg_status mg_spm_unigram_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                                size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_FORWARD(spm_viterbi(md, s, t, n, 0));
    MG_FORWARD(mg_spm_refs_reserve(out, n)); /* the path, from the back of room for n */
    const spm_node *nd = s->nodes;
    mg_spm_ref *v = out->v + out->n;
    size_t i = n;
    for (size_t end = n; end > 0; end = (size_t)nd[end].from)
        v[--i] = (mg_spm_ref){(uint32_t)nd[end].from, (uint32_t)(end - (size_t)nd[end].from),
                              nd[end].id};
    memmove(v, v + i, (n - i) * sizeof *v);
    out->n += n - i;
    return MG_OK;
}

/* The ids of the piece t[from, end) with id `id` written before *w (see
 * mg_spm_unigram_ids); *next_unk: the piece after it is a merged unk. */
static inline int64_t *put_piece(int64_t *w, int32_t id, int32_t unk, const int32_t *byte_ids,
                                 const uint8_t *t, size_t from, size_t end, int *next_unk)
{
    if (id != unk) {
        *--w = id;
        *next_unk = 0;
    } else if (byte_ids) {
        for (size_t k = end; k > from;) *--w = byte_ids[t[--k]];
    } else {
        if (*next_unk) w++; /* a run of unknown pieces is one unk, the run's first */
        *--w = unk;
        *next_unk = 1;
    }
    return w;
}

mg_status mg_spm_unigram_ids(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, const int32_t *byte_ids, int64_t *room, size_t *count)
{
    *count = 0;
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_RETURN_IF(!md->dat, MG_ERR_ARG, "sentencepiece: not a Unigram model");
    int packed = packable(md, md->min_score - UNK_PENALTY, lattice_reach(md));
    MG_FORWARD(spm_viterbi(md, s, t, n, packed));
    int64_t *w = room + n;
    int next_unk = 0;
    if (packed) {
        const bp_entry *bp = s->nodes;
        for (size_t end = n; end > 0;) {
            if (end > 256) __builtin_prefetch(&bp[end - 256]); /* the walk is latency bound */
            size_t from = bp[end].from;
            w = put_piece(w, bp[end].id, md->unk_id, byte_ids, t, from, end, &next_unk);
            end = from;
        }
    } else {
        const spm_node *nd = s->nodes;
        for (size_t end = n; end > 0; end = (size_t)nd[end].from)
            w = put_piece(w, nd[end].id, md->unk_id, byte_ids, t, (size_t)nd[end].from, end,
                          &next_unk);
    }
    *count = (size_t)(room + n - w);
    return MG_OK;
}

/* ==== HF tokenizers (f64) ==== */

typedef struct {
    int32_t id;
    int32_t starts_at; /* -1: not reached */
    double score;
} best_node;

static inline void relax(best_node *target, double cand, size_t start, int32_t id)
{
    if (target->starts_at == -1 || cand > target->score) {
        target->score = cand;
        target->starts_at = (int32_t)start;
        target->id = id;
    }
}

/* The candidates of all pieces starting at `start`; returns 1 if one spans mblen bytes. */
static int piece_candidates(const mg_unigram_lattice *L, const mg_spm_edge *const *root,
                            best_node *nodes, const uint8_t *t, size_t n, size_t start,
                            size_t mblen)
{
    mg_spm_trie_view v = mg_spm_trie_view_of(L->trie);
    double till = nodes[start].score;
    int has_single = 0;
    const mg_spm_edge *e = root[t[start]];
    for (size_t k = start; e; e = ++k < n ? mg_spm_view_step(v, e->child, t[k]) : NULL) {
        int32_t id = e->value;
        if (id < 0) continue;
        relax(&nodes[k + 1], L->score[id] + till, start, id);
        if (k + 1 - start == mblen) has_single = 1;
    }
    return has_single;
}

/* piece_candidates on a frozen trie; froot = the root's children. */
static int frozen_candidates(const mg_unigram_lattice *L, const mg_spm_frozen *f,
                             const int32_t *froot, best_node *nodes, const uint8_t *t,
                             size_t n, size_t start, size_t mblen)
{
    double till = nodes[start].score;
    int has_single = 0;
    int32_t node = froot[t[start]];
    for (size_t k = start; node >= 0; node = ++k < n ? mg_spm_frozen_step(f, node, t[k]) : -1) {
        int32_t id = f->nodes[node].value;
        if (id < 0) continue;
        relax(&nodes[k + 1], L->score[id] + till, start, id);
        if (k + 1 - start == mblen) has_single = 1;
    }
    return has_single;
}

static mg_status unk_candidate(const mg_unigram_lattice *L, best_node *nodes, size_t start,
                               size_t mblen)
{
    MG_RETURN_IF(L->unk_id < 0, MG_ERR_ARG, "Unigram model without an unk id cannot encode "
                 "the character at normalized byte %zu (no piece covers it)", start);
    relax(&nodes[start + mblen], L->unk_score + nodes[start].score, start, L->unk_id);
    return MG_OK;
}

/* Appends the best path ending at n, in text order (as spm_backtrack). */
static mg_status backtrack(const best_node *nodes, size_t n, mg_spm_refs *out)
{
    MG_FORWARD(mg_spm_refs_reserve(out, n));
    mg_spm_ref *v = out->v + out->n;
    size_t i = n;
    for (size_t end = n; end > 0; end = (size_t)nodes[end].starts_at) {
        const best_node *nd = &nodes[end];
        v[--i] = (mg_spm_ref){(uint32_t)nd->starts_at, (uint32_t)(end - (size_t)nd->starts_at),
                              nd->id};
    }
    memmove(v, v + i, (n - i) * sizeof *v);
    out->n += n - i;
    return MG_OK;
}

mg_status mg_unigram_viterbi(const mg_unigram_lattice *L, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_FORWARD(ensure_scratch(s, (n + 1) * sizeof(best_node)));
    best_node *nodes = s->nodes;
    const mg_spm_frozen *f = mg_spm_trie_frozen(L->trie);
    if (s->root_trie != L->trie) { /* the root's edges, looked up once per encoder */
        mg_spm_trie_view v = mg_spm_trie_view_of(L->trie);
        for (int b = 0; b < 256; b++) {
            s->root[b] = mg_spm_view_step(v, 0, (uint8_t)b);
            s->froot[b] = f ? mg_spm_frozen_step(f, 0, (uint8_t)b) : -1;
        }
        s->root_trie = L->trie;
    }
    /* nodes are set unreached just ahead of the starts that can reach them (while cached) */
    size_t reach = mg_spm_trie_max_len(L->trie), ready = 1;
    if (reach < 4) reach = 4; /* an unk spans one character */
    nodes[0] = (best_node){-1, -1, 0.0};
    for (size_t start = 0; start < n;) {
        size_t upto = n - start > reach ? start + reach : n;
        for (; ready <= upto; ready++) nodes[ready] = (best_node){-1, -1, 0.0};
        size_t mblen = char_len(t[start]);
        if (mblen > n - start) mblen = n - start;
        int single = f ? frozen_candidates(L, f, s->froot, nodes, t, n, start, mblen)
                       : piece_candidates(L, s->root, nodes, t, n, start, mblen);
        if (!single)
            MG_FORWARD(unk_candidate(L, nodes, start, mblen));
        start += mblen;
    }
    return backtrack(nodes, n, out);
}
