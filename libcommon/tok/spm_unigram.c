/* spm_unigram.c — sentencepiece's unigram::Model::EncodeOptimized (0.2.x). Contract:
 * spm_proto.h.
 *
 * Viterbi over byte positions, advancing one character (OneCharLen) at a time. From each
 * start, every matchable piece that is a prefix of the rest is a candidate for the node
 * at its end; UNUSED pieces are skipped. Path scores are floats: a piece's score (for
 * USER_DEFINED, len * max_score - 0.1) plus the path score at its start, compared in
 * float (strict >, so the earliest start wins ties) — sentencepiece 0.2.3's wheel breaks
 * near-ties this way (checked on botchan.txt: comparing the double sums differs). If no
 * piece covers exactly the first character, an unk candidate scores min_score - 10.
 * Backtracking yields the pieces.
 */
#include "tok/spm_proto.h"

#include <stdlib.h>

#define UNK_PENALTY 10.0f

typedef struct {
    int32_t id;
    int32_t starts_at; /* -1: not reached */
    float score;
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

/* The candidates of all pieces starting at `start`; returns 1 if one spans mblen bytes. */
static int piece_candidates(const mg_spm_model *md, best_node *nodes, const uint8_t *t,
                            size_t n, size_t start, size_t mblen)
{
    const mg_spm_piece *pcs = md->proto.pieces;
    float till_here = nodes[start].score;
    int has_single = 0;
    int32_t node = 0;
    for (size_t k = start; k < n; k++) {
        node = mg_spm_trie_step(md->pieces, node, t[k]);
        if (node < 0) break;
        int32_t id = mg_spm_trie_value(md->pieces, node);
        if (id < 0 || pcs[id].type == SPM_UNUSED) continue;
        size_t length = k + 1 - start;
        float score = pcs[id].type == SPM_USER_DEFINED
                          ? (float)((double)((float)length * md->max_score) - 0.1)
                          : pcs[id].score;
        float cand = score + till_here;
        best_node *target = &nodes[k + 1];
        if (target->starts_at == -1 || cand > target->score) {
            target->score = cand;
            target->starts_at = (int32_t)start;
            target->id = id;
        }
        if (length == mblen) has_single = 1;
    }
    return has_single;
}

static void unk_candidate(const mg_spm_model *md, best_node *nodes, size_t start, size_t mblen)
{
    float cand = (md->min_score - UNK_PENALTY) + nodes[start].score;
    best_node *target = &nodes[start + mblen];
    if (target->starts_at == -1 || cand > target->score) {
        target->score = cand;
        target->starts_at = (int32_t)start;
        target->id = md->unk_id;
    }
}

/* Appends the best path ending at n, in text order. */
static mg_status backtrack(const best_node *nodes, size_t n, mg_spm_refs *out)
{
    size_t first = out->n;
    for (size_t end = n; end > 0;) {
        const best_node *nd = &nodes[end];
        MG_FORWARD(mg_spm_refs_push(out, (uint32_t)nd->starts_at,
                                    (uint32_t)(end - (size_t)nd->starts_at), nd->id));
        end = (size_t)nd->starts_at;
    }
    for (size_t i = first, j = out->n; i + 1 < j; i++, j--) {
        mg_spm_ref tmp = out->v[i];
        out->v[i] = out->v[j - 1];
        out->v[j - 1] = tmp;
    }
    return MG_OK;
}

mg_status mg_spm_unigram_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                                size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_FORWARD(ensure_nodes(s, n + 1));
    best_node *nodes = s->nodes;
    for (size_t i = 0; i <= n; i++) nodes[i] = (best_node){-1, -1, 0.0f};
    for (size_t start = 0; start < n;) {
        size_t mblen = mg_spm_char_len(t[start]);
        if (mblen > n - start) mblen = n - start;
        if (!piece_candidates(md, nodes, t, n, start, mblen))
            unk_candidate(md, nodes, start, mblen);
        start += mblen;
    }
    return backtrack(nodes, n, out);
}
