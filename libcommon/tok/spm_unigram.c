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
 *   - sentencepiece (lattice.spm set): UNUSED pieces are skipped, USER_DEFINED score
 *     len * max_score - 0.1, and scores and sums are floats — sentencepiece 0.2.3's wheel
 *     breaks near-ties this way (checked on botchan.txt: comparing the double sums
 *     differs). Sums are kept in double rounded to float, which is float addition.
 *   - HF (lattice.score set): every piece is a candidate with its f64 score; sums in f64;
 *     an unk needed without an unk id is an error, as tokenizers' MissingUnkId.
 */
#include "tok/spm_proto.h"

#include <stdlib.h>

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

/* The path score through piece `id` of `length` bytes, or 0 if it is no candidate. */
static int piece_score(const mg_unigram_lattice *L, int32_t id, size_t length, double till,
                       double *cand)
{
    if (!L->spm) {
        *cand = L->score[id] + till;
        return 1;
    }
    const mg_spm_piece *pc = &L->spm[id];
    if (pc->type == SPM_UNUSED) return 0;
    float score = pc->type == SPM_USER_DEFINED
                      ? (float)((double)((float)length * L->max_score) - 0.1)
                      : pc->score;
    *cand = (float)(score + till);
    return 1;
}

static void relax(best_node *target, double cand, size_t start, int32_t id)
{
    if (target->starts_at == -1 || cand > target->score) {
        target->score = cand;
        target->starts_at = (int32_t)start;
        target->id = id;
    }
}

/* The candidates of all pieces starting at `start`; returns 1 if one spans mblen bytes. */
static int piece_candidates(const mg_unigram_lattice *L, const int32_t *root, best_node *nodes,
                            const uint8_t *t, size_t n, size_t start, size_t mblen)
{
    double till = nodes[start].score, cand;
    int has_single = 0;
    int32_t node = 0;
    for (size_t k = start; k < n; k++) {
        node = k == start ? root[t[k]] : mg_spm_trie_step(L->trie, node, t[k]);
        if (node < 0) break;
        int32_t id = mg_spm_trie_value(L->trie, node);
        if (id < 0 || !piece_score(L, id, k + 1 - start, till, &cand)) continue;
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
    double cand = L->spm ? (double)(float)(L->unk_score + till) : L->unk_score + till;
    relax(&nodes[start + mblen], cand, start, L->unk_id);
    return MG_OK;
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

mg_status mg_unigram_viterbi(const mg_unigram_lattice *L, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, mg_spm_refs *out)
{
    if (n == 0) return MG_OK;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    MG_FORWARD(ensure_nodes(s, n + 1));
    best_node *nodes = s->nodes;
    if (s->root_trie != L->trie) { /* the root's children, looked up once per encoder */
        for (int b = 0; b < 256; b++) s->root[b] = mg_spm_trie_step(L->trie, 0, (uint8_t)b);
        s->root_trie = L->trie;
    }
    for (size_t i = 0; i <= n; i++) nodes[i] = (best_node){-1, -1, 0.0};
    for (size_t start = 0; start < n;) {
        size_t mblen = mg_spm_char_len(t[start]);
        if (mblen > n - start) mblen = n - start;
        if (!piece_candidates(L, s->root, nodes, t, n, start, mblen))
            MG_FORWARD(unk_candidate(L, nodes, start, mblen));
        start += mblen;
    }
    return backtrack(nodes, n, out);
}

mg_status mg_spm_unigram_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                                size_t n, mg_spm_refs *out)
{
    mg_unigram_lattice L = {
        .trie = md->pieces,
        .spm = md->proto.pieces,
        .max_score = md->max_score,
        .unk_score = (float)(md->min_score - UNK_PENALTY),
        .unk_id = md->unk_id,
    };
    return mg_unigram_viterbi(&L, s, t, n, out);
}
