/* spm_unigram.c — the Unigram Viterbi shared by sentencepiece's unigram::Model::
 * EncodeOptimized (0.2.x, .model files) and HF tokenizers' Unigram::encode_optimized
 * (tokenizer.json). Contract: spm_proto.h (mg_unigram_lattice).
 *
 * Viterbi over byte positions, advancing one character (OneCharLen) at a time. From each
 * start, every piece of the trie that is a prefix of the rest is a candidate for the node
 * at its end; the path score is the piece's score plus the path score at its start; a
 * candidate replaces the node's best only if strictly greater (the earliest start wins
 * ties). If no piece covers exactly the first character, an unk candidate scores
 * unk_score. Backtracking yields the pieces.
 *   - sentencepiece (lattice.fscore set; the trie holds no UNUSED pieces and the
 *     USER_DEFINED scores are len * max_score - 0.1): scores and sums are floats —
 *     sentencepiece 0.2.3's wheel breaks near-ties this way (checked on botchan.txt:
 *     comparing the double sums differs). Sums are float additions, stored in the
 *     double of the node.
 * Speed: the sentencepiece path walks a frozen copy of the trie (child lists or dense
 * rows, the score in the node), nodes are initialized just ahead of the starts that can
 * reach them, and the best path is written backwards into reserved room.
 *   - HF (lattice.score set): every piece is a candidate with its f64 score; sums in f64;
 *     an unk needed without an unk id is an error, as tokenizers' MissingUnkId.
 */
#include "tok/spm_proto.h"

#include <stdlib.h>
#include <string.h>

#define UNK_PENALTY 10.0f

typedef struct {
    int32_t id;
    int32_t starts_at; /* -1: not reached */
    double score;
} best_node;

static mg_status ensure_nodes(mg_spm_scratch *s, size_t n)
{
    if (s->nodes_cap >= n) return MG_OK;
    best_node *v = mg_realloc(s->nodes, n * sizeof *v);
    if (!v) return MG_ERR_NOMEM;
    s->nodes = v;
    s->nodes_cap = n;
    return MG_OK;
}

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
    float ftill = (float)till;
    int has_single = 0;
    const mg_spm_edge *e = root[t[start]];
    for (size_t k = start; e; e = ++k < n ? mg_spm_view_step(v, e->child, t[k]) : NULL) {
        int32_t id = e->value;
        if (id < 0) continue;
        double cand = L->fscore ? (double)(L->fscore[id] + ftill) : L->score[id] + till;
        relax(&nodes[k + 1], cand, start, id);
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
    float ftill = (float)till;
    int has_single = 0;
    int32_t node = froot[t[start]];
    for (size_t k = start; node >= 0; node = ++k < n ? mg_spm_frozen_step(f, node, t[k]) : -1) {
        const mg_spm_fnode *nd = &f->nodes[node];
        int32_t id = nd->value;
        if (id < 0) continue;
        double cand = L->fscore ? (double)(nd->score + ftill) : L->score[id] + till;
        relax(&nodes[k + 1], cand, start, id);
        if (k + 1 - start == mblen) has_single = 1;
    }
    return has_single;
}

static mg_status unk_candidate(const mg_unigram_lattice *L, best_node *nodes, size_t start,
                               size_t mblen)
{
    MG_RETURN_IF(L->unk_id < 0, MG_ERR_ARG, "Unigram model without an unk id cannot encode "
                 "the character at normalized byte %zu (no piece covers it)", start);
    double till = nodes[start].score;
    double cand = L->fscore ? (double)(float)(L->unk_score + till) : L->unk_score + till;
    relax(&nodes[start + mblen], cand, start, L->unk_id);
    return MG_OK;
}

/* Appends the best path ending at n, in text order: fills it in from the back of room for
 * n pieces (each is at least one byte long), then moves it to the front. */
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

/* mg_spm_char_len, inlined. */
static inline size_t char_len(uint8_t first)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[first >> 4];
}

mg_status mg_unigram_viterbi(const mg_unigram_lattice *L, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_FORWARD(ensure_nodes(s, n + 1));
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

mg_status mg_spm_unigram_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                                size_t n, mg_spm_refs *out)
{
    mg_unigram_lattice L = {
        .trie = md->lattice,
        .fscore = md->lattice_score,
        .unk_score = (float)(md->min_score - UNK_PENALTY),
        .unk_id = md->unk_id,
    };
    return mg_unigram_viterbi(&L, s, t, n, out);
}
