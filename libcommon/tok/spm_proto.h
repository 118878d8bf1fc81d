/* spm_proto.h — SentencePiece .model files and the pieces of the SentencePiece encoder
 * (sentencepiece 0.2.x), private to libcommon/tok/.
 *
 * mg_spm_proto_parse() reads sentencepiece_model.proto (proto2 wire format) by hand: the
 * pieces (piece, score, type), TrainerSpec (model_type, treat_whitespace_as_suffix,
 * split_digits, byte_fallback, unk/bos/eos/pad pieces) and NormalizerSpec (name,
 * precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces).
 * Protobuf semantics: unknown fields, fields with an unexpected wire type and enum values
 * outside the enum are skipped; a message seen twice is merged (later values win).
 * Strings point into the caller's buffer, which must outlive the mg_spm_proto.
 *
 * mg_spm_model_init() is sentencepiece's ModelInterface::InitializePieces: NORMAL,
 * USER_DEFINED and UNUSED pieces form the matchable set, the others the reserved set
 * (a piece appearing twice in one set, an empty piece, no or two UNKNOWN pieces, BYTE
 * pieces without byte_fallback or with byte_fallback and not all 256 are errors).
 *
 * The encoder stages (spm_normalize.c, spm_unigram.c, spm_bpe.c) work on the normalized
 * text and produce a list of (offset, length, id) pieces; tok_spm.c turns them into ids.
 */
#ifndef MG_TOK_SPM_PROTO_H
#define MG_TOK_SPM_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

enum { SPM_NORMAL = 1, SPM_UNKNOWN, SPM_CONTROL, SPM_USER_DEFINED, SPM_UNUSED, SPM_BYTE };
enum { SPM_UNIGRAM = 1, SPM_BPE, SPM_WORD, SPM_CHAR };

typedef struct {
    const uint8_t *p;
    size_t n;
} mg_spm_str;

typedef struct {
    mg_spm_str piece;
    float score;
    int type;
} mg_spm_piece;

typedef struct {
    mg_spm_piece *pieces;
    size_t n_pieces, cap;
    /* TrainerSpec */
    int model_type, treat_ws_as_suffix, split_digits, byte_fallback;
    int64_t vocab_size;
    mg_spm_str unk_piece, bos_piece, eos_piece, pad_piece; /* n == 0: not set */
    /* NormalizerSpec */
    mg_spm_str norm_name, charsmap;
    int add_dummy_prefix, remove_extra_ws, escape_ws;
} mg_spm_proto;

/* Parses buf[0, n); messages name the byte offset. Free with mg_spm_proto_free. */
mg_status mg_spm_proto_parse(mg_spm_proto *m, const uint8_t *buf, size_t n);
void mg_spm_proto_free(mg_spm_proto *m);

/* ---- byte tries (the piece sets and the user-defined prefix matcher) ---- */

typedef struct mg_spm_trie mg_spm_trie;

mg_status mg_spm_trie_create(mg_spm_trie **t);
void mg_spm_trie_free(mg_spm_trie *t);
/* Adds key -> value (value >= 0); *added = 0 and nothing changes if key is present. The
 * trie keeps a pointer to key (exact lookups compare against it): key must outlive it. */
mg_status mg_spm_trie_insert(mg_spm_trie *t, const uint8_t *key, size_t len, int32_t value,
                             int *added);
/* The child of node (0 = root) by byte, -1 if none. */
int32_t mg_spm_trie_step(const mg_spm_trie *t, int32_t node, uint8_t byte);
/* The value stored at node, -1 if none. */
int32_t mg_spm_trie_value(const mg_spm_trie *t, int32_t node);
/* The length of the longest key (0 if none). */
size_t mg_spm_trie_max_len(const mg_spm_trie *t);
/* Exact lookup, -1 if absent. */
int32_t mg_spm_trie_find(const mg_spm_trie *t, const uint8_t *key, size_t len);
/* Length of the longest key that is a prefix of s[0, n), 0 if none. */
size_t mg_spm_trie_longest(const mg_spm_trie *t, const uint8_t *s, size_t n);

/* The edge table for inlined walks (valid until the next insert): an edge is keyed by
 * (parent << 8 | byte) + 1 (0: an empty slot) and holds the child and the child's value. */
typedef struct {
    uint64_t key;
    int32_t child, value;
} mg_spm_edge;

typedef struct {
    const mg_spm_edge *edges;
    size_t mask; /* slots - 1, slots a power of two */
} mg_spm_trie_view;

mg_spm_trie_view mg_spm_trie_view_of(const mg_spm_trie *t);

static inline size_t mg_spm_edge_slot(uint64_t key, size_t mask)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

/* The edge from node by byte, NULL if none. */
static inline const mg_spm_edge *mg_spm_view_step(mg_spm_trie_view v, int32_t node,
                                                  uint8_t byte)
{
    uint64_t key = ((uint64_t)(uint32_t)node << 8 | byte) + 1;
    for (size_t i = mg_spm_edge_slot(key, v.mask);; i = (i + 1) & v.mask) {
        if (v.edges[i].key == key) return &v.edges[i];
        if (v.edges[i].key == 0) return NULL;
    }
}

/* A frozen copy of a trie for fast walks: per node its value and its children, as a list (labels[first + i] -> kids[first + i],
 * i < count) or, with many (count == MG_SPM_DENSE), the 256-entry row `first` of dense
 * (child or -1). mg_spm_trie_freeze makes it; an insert drops it. */
#define MG_SPM_DENSE UINT32_MAX
typedef struct {
    int32_t value;
    uint32_t first, count;
} mg_spm_fnode;

typedef struct {
    mg_spm_fnode *nodes;
    uint8_t *labels;
    int32_t *kids;
    int32_t *dense;
} mg_spm_frozen;

mg_status mg_spm_trie_freeze(mg_spm_trie *t);
/* The frozen copy, NULL if none. */
const mg_spm_frozen *mg_spm_trie_frozen(const mg_spm_trie *t);

/* The child of node by byte in a frozen trie, -1 if none. */
static inline int32_t mg_spm_frozen_step(const mg_spm_frozen *f, int32_t node, uint8_t byte)
{
    const mg_spm_fnode *nd = &f->nodes[node];
    if (nd->count == MG_SPM_DENSE) return f->dense[(size_t)nd->first * 256 + byte];
    for (uint32_t i = nd->first, end = nd->first + nd->count; i < end; i++)
        if (f->labels[i] == byte) return f->kids[i];
    return -1;
}

/* ---- the character pairs inside pieces (spm_bigrams.c) ----
 * A filter of the pairs of adjacent characters (split as the BPE encoder splits text) of
 * every matchable piece: a boundary in the text whose pair's bit is clear is crossed by
 * no piece (a set bit says nothing). */
#define MG_SPM_BIGRAM_BITS (1u << 20) /* 128 KiB */
typedef struct {
    uint64_t *bits; /* NULL: not built */
} mg_spm_bigrams;

/* A character of 1..4 bytes as a big-endian number (one of two or more bytes starts
 * with a byte >= 0xC0, so the number determines the bytes). */
static inline uint32_t mg_spm_char_pack(const uint8_t *p, size_t n)
{
    uint32_t x = 0;
    for (size_t i = 0; i < n; i++) x = x << 8 | p[i];
    return x;
}

/* The filter's bit of the pair (x, y) of packed characters. */
static inline size_t mg_spm_bigram_bit(uint32_t x, uint32_t y)
{
    uint64_t key = (uint64_t)x << 32 | y;
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 44);
}

static inline int mg_spm_bigram_maybe(const mg_spm_bigrams *b, uint32_t x, uint32_t y)
{
    size_t bit = mg_spm_bigram_bit(x, y);
    return (int)(b->bits[bit >> 6] >> (bit & 63) & 1);
}

mg_status mg_spm_bigrams_build(mg_spm_bigrams *b, const mg_spm_proto *p);
void mg_spm_bigrams_free(mg_spm_bigrams *b);

/* ---- the model ---- */

/* The Unigram candidates as a double array (spm_unigram.c), for mg_spm_unigram_encode. */
typedef struct mg_unigram_dat mg_unigram_dat;

typedef struct {
    mg_spm_proto proto;
    mg_spm_trie *pieces;   /* NORMAL/USER_DEFINED/UNUSED piece -> id (frozen) */
    mg_spm_trie *reserved; /* UNKNOWN/CONTROL/BYTE piece -> id */
    mg_spm_trie *user;     /* USER_DEFINED pieces (prefix matcher), NULL if none */
    float *lattice_score;  /* per id: the Unigram score (USER_DEFINED: (len - 1) * 0.1) */
    /* the Unigram candidates (NORMAL/USER_DEFINED piece -> id) as a double array, and the
     * longest one's bytes (Unigram models only, else NULL and 0) */
    mg_unigram_dat *dat;
    size_t lattice_max_len;
    int32_t unk_id;
    float min_score, max_score; /* over NORMAL pieces, from FLT_MAX / FLT_MIN (unigram) */
    /* no UNUSED piece, and no matchable piece holds "▁" past its start: BPE never merges
     * across the start of a "▁", so each "▁"-led span is encoded on its own (spm_bpe.c) */
    int ws_bounded;
    mg_spm_bigrams bigrams; /* BPE, ws_bounded and no USER_DEFINED piece: else not built */
} mg_spm_model;

/* InitializePieces on a parsed proto (taken over by md). */
mg_status mg_spm_model_init(mg_spm_model *md);
void mg_spm_model_free(mg_spm_model *md);
/* ModelInterface::PieceToId: reserved, then matchable pieces, else unk_id. */
int32_t mg_spm_piece_to_id(const mg_spm_model *md, const uint8_t *s, size_t n);
/* sentencepiece's OneCharLen: UTF-8 length from the first byte alone (1 for junk): by
 * the high nibble, 0-B: 1, C-D: 2, E: 3, F: 4 (the nibbles of the constant). */
static inline size_t mg_spm_char_len(uint8_t first)
{
    return (size_t)(0x4322111111111111ULL >> ((first >> 4) * 4) & 15);
}

/* ---- encoder stages ---- */

typedef struct {
    uint8_t *v;
    size_t n, cap;
} mg_spm_buf;

typedef struct {
    uint32_t off, len;
    int32_t id;
} mg_spm_ref;

typedef struct {
    mg_spm_ref *v;
    size_t n, cap;
} mg_spm_refs;

mg_status mg_spm_buf_append(mg_spm_buf *b, const void *s, size_t n);
mg_status mg_spm_refs_push(mg_spm_refs *r, uint32_t off, uint32_t len, int32_t id);
/* Room for `extra` more refs (r->cap - r->n >= extra). */
mg_status mg_spm_refs_reserve(mg_spm_refs *r, size_t extra);

/* Normalizer (normalizer.cc): the precompiled charsmap plus the options. */
typedef struct {
    uint32_t *units; /* Darts-clone double array */
    size_t n_units;
    char *strs;      /* NUL-separated replacements */
    size_t strs_len;
    int add_dummy_prefix, remove_extra_ws, escape_ws, ws_suffix;
    const mg_spm_trie *user; /* user-defined symbols pass through unnormalized */
    /* plain[b], ASCII b no user-defined symbol starts with: 1 no rule starts with b, 2 no
     * rule is b or b + an ASCII byte, 0 otherwise; plain bytes are copied as is (' ' is
     * escaped and collapsed as the options say) */
    uint8_t plain[256];
    /* the same for the ASCII fast loop: fast[b] = FAST_OK (b is plain as it stands) |
     * FAST_NEXT (only when the next byte is ASCII) | FAST_SPACE; b becomes the
     * little-endian bytes out[b], out_len[b] of them */
    uint8_t fast[256], out_len[256];
    uint32_t out[256];
    int printable_ok; /* every byte 0x21..0x7E has FAST_OK: runs of them are copied 16 at a time */
    /* bit cp of plain_mb (cp in U+0080..U+FFFF, no surrogate): no rule key and no
     * user-defined symbol begins with a prefix of cp's UTF-8 bytes, nor extends them, so
     * the character is copied as is whatever follows it (CJK text, most of it) */
    uint64_t plain_mb[1024];
} mg_spm_normalizer;

mg_status mg_spm_normalizer_init(mg_spm_normalizer *nz, const mg_spm_model *md);
void mg_spm_normalizer_free(mg_spm_normalizer *nz);
/* Normalizer::Normalize of in[0, n) into out (out->n = 0 first). */
mg_status mg_spm_normalize(const mg_spm_normalizer *nz, const uint8_t *in, size_t n,
                           mg_spm_buf *out);

/* A bare precompiled_charsmap (HF's Precompiled normalizer), no options; free with
 * mg_spm_normalizer_free. */
mg_status mg_spm_charsmap_init(mg_spm_normalizer *nz, const uint8_t *blob, size_t n);
/* spm_precompiled's transform: the rule of the first (shortest) key that is a prefix of
 * s[0, n); its replacement in *repl / *rlen; returns the key length, 0 if none. */
size_t mg_spm_charsmap_first(const mg_spm_normalizer *nz, const uint8_t *s, size_t n,
                             const char **repl, size_t *rlen);

/* Per-encoder scratch memory of the model encoders. */
typedef struct {
    void *nodes;      /* unigram: best path per end position */
    size_t nodes_cap; /* bytes */
    void *syms;       /* bpe: symbols */
    size_t syms_cap;
    void *heap;       /* bpe: the agenda */
    size_t heap_n, heap_cap;
    int32_t *rev;     /* bpe: UNUSED piece id -> slot in revs, -1 */
    void *revs;       /* bpe: the recorded splits */
    size_t revs_n, revs_cap;
    void *span_cache; /* bpe, ws_bounded models: pieces of recent spans (spm_bpe.c) */
    int32_t *char3;   /* bpe: per 3-byte character, its piece-trie node + 2 (0: not met yet) */
    uint32_t *stack;  /* bpe: resegmentation stack */
    size_t stack_cap;
    const void *root_trie; /* unigram: the trie whose root edges root[] holds, or NULL */
    int32_t froot[256];    /* unigram, frozen trie: the root's children */
    const mg_spm_edge *root[256];
} mg_spm_scratch;

void mg_spm_scratch_free(mg_spm_scratch *s);

/* HF tokenizers' Unigram Viterbi (spm_unigram.c, for tok_hf_unigram.c): the pieces of
 * `trie` (value = id) are the candidates, score = their f64 score per id (f64 sums).
 * unk_id -1: none (an unk needed is an error). Appends (offset, length, id) of the best
 * path to out. */
typedef struct {
    const mg_spm_trie *trie;
    const double *score;
    double unk_score;
    int32_t unk_id;
} mg_unigram_lattice;

mg_status mg_unigram_viterbi(const mg_unigram_lattice *L, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, mg_spm_refs *out);
/* The double array of a frozen trie whose values are piece ids, score[id] in each unit.
 * Free with mg_unigram_dat_free (NULL is fine). */
mg_status mg_unigram_dat_build(const mg_spm_trie *trie, const float *score,
                               mg_unigram_dat **out);
void mg_unigram_dat_free(mg_unigram_dat *d);
/* sentencepiece 0.2.3's unigram::Model::EncodeOptimized over the normalized text (float
 * sums, rebased past 1e5; md->dat needed); appends to out. */
mg_status mg_spm_unigram_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                                size_t n, mg_spm_refs *out);
/* mg_spm_unigram_encode and PopulateSentencePieceText's ids in one step: the ids of the
 * best path over t[0, n) end at room[n] (room has n slots): room[n - *count, n). An
 * unknown piece is the ids of its bytes with byte_ids (byte_fallback: the <0xXX> ids),
 * else unk_id once per run of unknown pieces. */
mg_status mg_spm_unigram_ids(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                             size_t n, const int32_t *byte_ids, int64_t *room, size_t *count);
/* bpe::Model::Encode over the normalized text; appends to out. */
mg_status mg_spm_bpe_encode(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t,
                            size_t n, mg_spm_refs *out);

#endif
