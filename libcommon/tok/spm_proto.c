/* spm_proto.c — the SentencePiece model file: a hand-written proto2 wire reader for
 * sentencepiece_model.proto, byte tries for the piece sets, and InitializePieces.
 * Contract: spm_proto.h.
 */
#include "tok/spm_proto.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

/* ---- wire format ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct {
    const uint8_t *base; /* start of the file, for offsets in messages */
    const uint8_t *p, *end;
} reader;

static mg_status varint(reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        MG_RETURN_IF(r->p >= r->end, MG_ERR_FORMAT, "truncated varint at byte %zu",
                     (size_t)(r->p - r->base));
        uint8_t b = *r->p++;
        if (shift < 64) x |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return MG_OK;
        }
    }
    return mg_error_set(MG_ERR_FORMAT, "varint longer than 10 bytes at byte %zu",
                        (size_t)(r->p - r->base));
}

typedef struct {
    uint32_t field;
    int wt;
    uint64_t v;         /* varint / fixed value */
    reader sub;         /* WT_LEN payload */
} wire_field;

static mg_status need(reader *r, size_t k)
{
    MG_RETURN_IF((size_t)(r->end - r->p) < k, MG_ERR_FORMAT,
                 "field of %zu bytes at byte %zu runs past the end of its message", k,
                 (size_t)(r->p - r->base));
    return MG_OK;
}

static uint64_t le(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* Reads the next field of r (r->p < r->end). */
static mg_status next_field(reader *r, wire_field *f)
{
    uint64_t key;
    size_t at = (size_t)(r->p - r->base);
    MG_FORWARD(varint(r, &key));
    f->field = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    MG_RETURN_IF(f->field == 0 || key >> 3 > 0x1FFFFFFF, MG_ERR_FORMAT,
                 "invalid field number at byte %zu", at);
    switch (f->wt) {
    case WT_VARINT: return varint(r, &f->v);
    case WT_I64:
    case WT_I32: {
        int k = f->wt == WT_I64 ? 8 : 4;
        MG_FORWARD(need(r, (size_t)k));
        f->v = le(r->p, k);
        r->p += k;
        return MG_OK;
    }
    case WT_LEN: {
        uint64_t len;
        MG_FORWARD(varint(r, &len));
        MG_FORWARD(need(r, len > SIZE_MAX ? SIZE_MAX : (size_t)len));
        f->sub = (reader){r->base, r->p, r->p + len};
        r->p += len;
        return MG_OK;
    }
    case 3:
    case 4:
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: protobuf group (wire type "
                            "%d) at byte %zu", f->wt, at);
    default:
        return mg_error_set(MG_ERR_FORMAT, "invalid wire type %d at byte %zu", f->wt, at);
    }
}

static mg_spm_str str_of(const wire_field *f)
{
    return (mg_spm_str){f->sub.p, (size_t)(f->sub.end - f->sub.p)};
}

/* ---- messages ---- */

static mg_status parse_piece(reader r, mg_spm_piece *pc)
{
    pc->type = SPM_NORMAL;
    while (r.p < r.end) {
        wire_field f;
        MG_FORWARD(next_field(&r, &f));
        if (f.field == 1 && f.wt == WT_LEN) {
            pc->piece = str_of(&f);
        } else if (f.field == 2 && f.wt == WT_I32) {
            uint32_t u = (uint32_t)f.v;
            memcpy(&pc->score, &u, sizeof u);
        } else if (f.field == 3 && f.wt == WT_VARINT) {
            int64_t t = (int32_t)f.v;
            if (t >= SPM_NORMAL && t <= SPM_BYTE) pc->type = (int)t;
        }
    }
    return MG_OK;
}

static mg_status add_piece(mg_spm_proto *m, reader r)
{
    MG_FORWARD(MG_GROW(m->pieces, m->cap, m->n_pieces + 1, 1024));
    mg_spm_piece *pc = &m->pieces[m->n_pieces];
    memset(pc, 0, sizeof *pc);
    MG_FORWARD(parse_piece(r, pc));
    m->n_pieces++;
    return MG_OK;
}

static void trainer_field(mg_spm_proto *m, const wire_field *f)
{
    if (f->wt == WT_VARINT) {
        int64_t i32 = (int32_t)f->v;
        switch (f->field) {
        case 3: if (i32 >= SPM_UNIGRAM && i32 <= SPM_CHAR) m->model_type = (int)i32; break;
        case 4: m->vocab_size = i32; break;
        case 24: m->treat_ws_as_suffix = f->v != 0; break;
        case 25: m->split_digits = f->v != 0; break;
        case 35: m->byte_fallback = f->v != 0; break;
        default: break;
        }
    } else if (f->wt == WT_LEN) {
        switch (f->field) {
        case 45: m->unk_piece = str_of(f); break;
        case 46: m->bos_piece = str_of(f); break;
        case 47: m->eos_piece = str_of(f); break;
        case 48: m->pad_piece = str_of(f); break;
        default: break;
        }
    }
}

static void normalizer_field(mg_spm_proto *m, const wire_field *f)
{
    if (f->wt == WT_LEN && f->field == 1) m->norm_name = str_of(f);
    if (f->wt == WT_LEN && f->field == 2) m->charsmap = str_of(f);
    if (f->wt != WT_VARINT) return;
    if (f->field == 3) m->add_dummy_prefix = f->v != 0;
    if (f->field == 4) m->remove_extra_ws = f->v != 0;
    if (f->field == 5) m->escape_ws = f->v != 0;
}

static mg_status parse_sub(mg_spm_proto *m, reader r, int trainer)
{
    while (r.p < r.end) {
        wire_field f;
        MG_FORWARD(next_field(&r, &f));
        if (trainer) trainer_field(m, &f);
        else normalizer_field(m, &f);
    }
    return MG_OK;
}

mg_status mg_spm_proto_parse(mg_spm_proto *m, const uint8_t *buf, size_t n)
{
    memset(m, 0, sizeof *m);
    m->model_type = SPM_UNIGRAM;
    m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
    reader r = {buf, buf, buf + n};
    mg_status st = MG_OK;
    while (st == MG_OK && r.p < r.end) {
        wire_field f;
        st = next_field(&r, &f);
        if (st != MG_OK || f.wt != WT_LEN) continue;
        if (f.field == 1) st = add_piece(m, f.sub);
        else if (f.field == 2) st = parse_sub(m, f.sub, 1);
        else if (f.field == 3) st = parse_sub(m, f.sub, 0);
    }
    if (st != MG_OK) mg_spm_proto_free(m);
    return st;
}

void mg_spm_proto_free(mg_spm_proto *m)
{
    free(m->pieces);
    m->pieces = NULL;
    m->n_pieces = m->cap = 0;
}

/* ---- tries: nodes with values, edges in one open-addressing hash table ---- */

typedef struct {
    const uint8_t *key; /* the caller's bytes */
    size_t len;
    uint64_t hash;
    int32_t value;
} exact_entry;

struct mg_spm_trie {
    int32_t *values;  /* per node */
    size_t n_nodes, nodes_cap;
    mg_spm_edge *edges; /* open addressing, see spm_proto.h */
    size_t slots;       /* power of two */
    /* exact lookups: a second hash table over whole keys (entry index + 1, 0 = empty) */
    exact_entry *entries;
    size_t n_entries, entries_cap;
    uint32_t *ex_slots;
    size_t n_ex_slots; /* power of two */
    mg_spm_frozen *frozen; /* NULL: not frozen */
    size_t max_len;        /* of the keys */
};

size_t mg_spm_trie_max_len(const mg_spm_trie *t) { return t->max_len; }

static void unfreeze(mg_spm_trie *t)
{
    if (!t->frozen) return;
    free(t->frozen->nodes);
    free(t->frozen->labels);
    free(t->frozen->kids);
    free(t->frozen->dense);
    free(t->frozen);
    t->frozen = NULL;
}

mg_status mg_spm_trie_create(mg_spm_trie **out)
{
    *out = NULL;
    mg_spm_trie *t = mg_calloc(1, sizeof *t);
    if (!t) return MG_ERR_NOMEM;
    t->nodes_cap = 256;
    t->slots = 512;
    t->values = mg_malloc(t->nodes_cap * sizeof *t->values);
    t->edges = mg_calloc(t->slots, sizeof *t->edges);
    if (!t->values || !t->edges) {
        mg_spm_trie_free(t);
        return MG_ERR_NOMEM;
    }
    t->values[0] = -1;
    t->n_nodes = 1;
    *out = t;
    return MG_OK;
}

void mg_spm_trie_free(mg_spm_trie *t)
{
    if (!t) return;
    free(t->values);
    unfreeze(t);
    free(t->edges);
    free(t->entries);
    free(t->ex_slots);
    free(t);
}

mg_spm_trie_view mg_spm_trie_view_of(const mg_spm_trie *t)
{
    return (mg_spm_trie_view){t->edges, t->slots - 1};
}

int32_t mg_spm_trie_step(const mg_spm_trie *t, int32_t node, uint8_t byte)
{
    const mg_spm_edge *e = mg_spm_view_step(mg_spm_trie_view_of(t), node, byte);
    return e ? e->child : -1;
}

int32_t mg_spm_trie_value(const mg_spm_trie *t, int32_t node) { return t->values[node]; }

static void put_edge(mg_spm_edge *edges, size_t slots, mg_spm_edge e)
{
    size_t i = mg_spm_edge_slot(e.key, slots - 1);
    while (edges[i].key) i = (i + 1) & (slots - 1);
    edges[i] = e;
}

static mg_status grow_edges(mg_spm_trie *t)
{
    size_t slots = t->slots * 2;
    mg_spm_edge *edges = mg_calloc(slots, sizeof *edges);
    if (!edges) return MG_ERR_NOMEM;
    for (size_t i = 0; i < t->slots; i++)
        if (t->edges[i].key) put_edge(edges, slots, t->edges[i]);
    free(t->edges);
    t->edges = edges;
    t->slots = slots;
    return MG_OK;
}

/* Adds a child of node by byte; returns its index in *child. */
static mg_status add_child(mg_spm_trie *t, int32_t node, uint8_t byte, int32_t *child)
{
    MG_RETURN_IF(t->n_nodes >= INT32_MAX, MG_ERR_LIMIT, "too many trie nodes");
    MG_FORWARD(MG_GROW(t->values, t->nodes_cap, t->n_nodes + 1, 64));
    if (t->n_nodes * 2 >= t->slots) MG_FORWARD(grow_edges(t));
    *child = (int32_t)t->n_nodes++;
    t->values[*child] = -1;
    put_edge(t->edges, t->slots,
             (mg_spm_edge){((uint64_t)node << 8 | byte) + 1, *child, -1});
    return MG_OK;
}

static uint64_t hash_bytes(const uint8_t *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    uint64_t w = 0;
    for (size_t k = 0; i + k < n; k++) w |= (uint64_t)s[i + k] << (8 * k);
    h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

static void put_exact(uint32_t *slots, size_t n_slots, const exact_entry *e, uint32_t idx)
{
    size_t i = (size_t)e->hash & (n_slots - 1);
    while (slots[i]) i = (i + 1) & (n_slots - 1);
    slots[i] = idx + 1;
}

static mg_status grow_exact(mg_spm_trie *t)
{
    MG_FORWARD(MG_GROW(t->entries, t->entries_cap, t->n_entries + 1, 256));
    if ((t->n_entries + 1) * 2 <= t->n_ex_slots) return MG_OK;
    size_t n_slots = t->n_ex_slots ? t->n_ex_slots * 2 : 512;
    uint32_t *slots = mg_calloc(n_slots, sizeof *slots);
    if (!slots) return MG_ERR_NOMEM;
    for (size_t i = 0; i < t->n_entries; i++)
        put_exact(slots, n_slots, &t->entries[i], (uint32_t)i);
    free(t->ex_slots);
    t->ex_slots = slots;
    t->n_ex_slots = n_slots;
    return MG_OK;
}

static mg_status add_exact(mg_spm_trie *t, const uint8_t *key, size_t len, int32_t value)
{
    MG_RETURN_IF(t->n_entries >= UINT32_MAX - 1, MG_ERR_LIMIT, "too many pieces");
    MG_FORWARD(grow_exact(t));
    exact_entry *e = &t->entries[t->n_entries];
    *e = (exact_entry){key, len, hash_bytes(key, len), value};
    put_exact(t->ex_slots, t->n_ex_slots, e, (uint32_t)t->n_entries++);
    return MG_OK;
}

mg_status mg_spm_trie_insert(mg_spm_trie *t, const uint8_t *key, size_t len, int32_t value,
                             int *added)
{
    int32_t node = 0, parent = 0;
    unfreeze(t);
    for (size_t i = 0; i < len; i++) {
        int32_t c = mg_spm_trie_step(t, node, key[i]);
        if (c < 0) MG_FORWARD(add_child(t, node, key[i], &c));
        parent = node;
        node = c;
    }
    *added = t->values[node] < 0;
    if (!*added) return MG_OK;
    t->values[node] = value;
    if (len > t->max_len) t->max_len = len;
    if (len > 0) /* the edge into node carries its value too */
        t->edges[mg_spm_view_step(mg_spm_trie_view_of(t), parent, key[len - 1]) - t->edges]
            .value = value;
    return add_exact(t, key, len, value);
}

/* ---- frozen tries ---- */

#define DENSE_MIN 8 /* nodes with more children get a dense row */

const mg_spm_frozen *mg_spm_trie_frozen(const mg_spm_trie *t) { return t->frozen; }

/* Counts the children per node, then lays out the lists and the dense rows; fill[i] =
 * where node i's list starts. */
static mg_status layout_frozen(const mg_spm_trie *t, mg_spm_frozen *f, uint32_t *fill,
                               size_t *n_dense)
{
    for (size_t i = 0; i < t->n_nodes; i++) f->nodes[i] = (mg_spm_fnode){t->values[i], 0, 0};
    for (size_t i = 0; i < t->slots; i++)
        if (t->edges[i].key) f->nodes[(t->edges[i].key - 1) >> 8].count++;
    uint32_t first = 0;
    *n_dense = 0;
    for (size_t i = 0; i < t->n_nodes; i++) {
        mg_spm_fnode *nd = &f->nodes[i];
        fill[i] = nd->first = first;
        if (nd->count > DENSE_MIN) {
            nd->first = (uint32_t)(*n_dense)++;
            nd->count = MG_SPM_DENSE;
        } else {
            first += nd->count;
        }
    }
    f->dense = mg_malloc((*n_dense ? *n_dense : 1) * 256 * sizeof *f->dense);
    return f->dense ? MG_OK : MG_ERR_NOMEM;
}

static void fill_frozen(const mg_spm_trie *t, mg_spm_frozen *f, uint32_t *fill, size_t n_dense)
{
    for (size_t i = 0; i < n_dense * 256; i++) f->dense[i] = -1;
    for (size_t i = 0; i < t->slots; i++) {
        const mg_spm_edge *e = &t->edges[i];
        if (!e->key) continue;
        size_t parent = (size_t)((e->key - 1) >> 8);
        const mg_spm_fnode *nd = &f->nodes[parent];
        uint8_t byte = (uint8_t)((e->key - 1) & 0xFF);
        if (nd->count == MG_SPM_DENSE) {
            f->dense[(size_t)nd->first * 256 + byte] = e->child;
        } else {
            f->labels[fill[parent]] = byte;
            f->kids[fill[parent]++] = e->child;
        }
    }
}

mg_status mg_spm_trie_freeze(mg_spm_trie *t)
{
    unfreeze(t);
    MG_RETURN_IF(t->n_nodes >= INT32_MAX / 2, MG_ERR_LIMIT, "too many trie nodes");
    mg_spm_frozen *f = mg_calloc(1, sizeof *f);
    if (!f) return MG_ERR_NOMEM;
    t->frozen = f;
    size_t edges = t->n_nodes - 1, n_dense;
    f->nodes = mg_malloc(t->n_nodes * sizeof *f->nodes);
    f->labels = mg_malloc((edges ? edges : 1) * sizeof *f->labels);
    f->kids = mg_malloc((edges ? edges : 1) * sizeof *f->kids);
    uint32_t *fill = mg_malloc(t->n_nodes * sizeof *fill);
    mg_status st = f->nodes && f->labels && f->kids && fill
                       ? layout_frozen(t, f, fill, &n_dense) : MG_ERR_NOMEM;
    if (st == MG_OK) fill_frozen(t, f, fill, n_dense);
    else unfreeze(t);
    free(fill);
    return st;
}

int32_t mg_spm_trie_find(const mg_spm_trie *t, const uint8_t *key, size_t len)
{
    if (t->n_ex_slots == 0) return -1;
    uint64_t h = hash_bytes(key, len);
    for (size_t i = (size_t)h & (t->n_ex_slots - 1);; i = (i + 1) & (t->n_ex_slots - 1)) {
        uint32_t k = t->ex_slots[i];
        if (k == 0) return -1;
        const exact_entry *e = &t->entries[k - 1];
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0) return e->value;
    }
}

size_t mg_spm_trie_longest(const mg_spm_trie *t, const uint8_t *s, size_t n)
{
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        node = mg_spm_trie_step(t, node, s[i]);
        if (node < 0) break;
        if (t->values[node] >= 0) best = i + 1;
    }
    return best;
}

/* ---- InitializePieces ---- */

int32_t mg_spm_piece_to_id(const mg_spm_model *md, const uint8_t *s, size_t n)
{
    int32_t id = mg_spm_trie_find(md->reserved, s, n);
    if (id < 0) id = mg_spm_trie_find(md->pieces, s, n);
    return id < 0 ? md->unk_id : id;
}

/* The byte of a "<0xXX>" piece (upper-case hex), -1 if it is not one. */
static int piece_byte(mg_spm_str s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (s.n != 6 || memcmp(s.p, "<0x", 3) != 0 || s.p[5] != '>') return -1;
    const char *hi = memchr(hex, s.p[3], 16), *lo = memchr(hex, s.p[4], 16);
    if (!hi || !lo) return -1;
    return (int)((hi - hex) * 16 + (lo - hex));
}

static int is_matchable(int type)
{
    return type == SPM_NORMAL || type == SPM_USER_DEFINED || type == SPM_UNUSED;
}

static mg_status check_piece(mg_spm_model *md, size_t i, uint8_t *bytes_seen)
{
    const mg_spm_piece *pc = &md->proto.pieces[i];
    MG_RETURN_IF(pc->piece.n == 0, MG_ERR_FORMAT, "piece %zu is empty", i);
    MG_RETURN_IF(memchr(pc->piece.p, 0, pc->piece.n) != NULL, MG_ERR_UNSUPPORTED,
                 "not supported yet: piece %zu contains a NUL byte", i);
    if (pc->type == SPM_UNKNOWN) {
        MG_RETURN_IF(md->unk_id >= 0, MG_ERR_FORMAT, "unk is already defined (piece %zu)", i);
        md->unk_id = (int32_t)i;
    }
    if (pc->type == SPM_BYTE) {
        MG_RETURN_IF(!md->proto.byte_fallback, MG_ERR_FORMAT, "byte piece %zu is found "
                     "although byte_fallback is false", i);
        int b = piece_byte(pc->piece);
        MG_RETURN_IF(b < 0, MG_ERR_FORMAT, "byte piece %zu is invalid", i);
        bytes_seen[b] = 1;
    }
    return MG_OK;
}

static mg_status add_to_sets(mg_spm_model *md, size_t i)
{
    const mg_spm_piece *pc = &md->proto.pieces[i];
    int added;
    mg_spm_trie *set = is_matchable(pc->type) ? md->pieces : md->reserved;
    MG_FORWARD(mg_spm_trie_insert(set, pc->piece.p, pc->piece.n, (int32_t)i, &added));
    MG_RETURN_IF(!added, MG_ERR_FORMAT, "piece %zu (%.*s) is already defined", i,
                 (int)(pc->piece.n > 64 ? 64 : pc->piece.n), (const char *)pc->piece.p);
    if (pc->type != SPM_USER_DEFINED) return MG_OK;
    if (!md->user) MG_FORWARD(mg_spm_trie_create(&md->user));
    return mg_spm_trie_insert(md->user, pc->piece.p, pc->piece.n, (int32_t)i, &added);
}

/* mg_spm_model.ws_bounded */
static int ws_bounded(const mg_spm_proto *p)
{
    for (size_t i = 0; i < p->n_pieces; i++) {
        const mg_spm_piece *pc = &p->pieces[i];
        if (pc->type == SPM_UNUSED) return 0;
        if (pc->type != SPM_NORMAL && pc->type != SPM_USER_DEFINED) continue;
        for (size_t k = 1; k + 3 <= pc->piece.n; k++)
            if (memcmp(pc->piece.p + k, "\xE2\x96\x81", 3) == 0) return 0;
    }
    return 1;
}

static int has_unused(const mg_spm_proto *p)
{
    for (size_t i = 0; i < p->n_pieces; i++)
        if (p->pieces[i].type == SPM_UNUSED) return 1;
    return 0;
}

/* The Unigram candidates' trie in *out: md->pieces itself when no piece is UNUSED (then it
 * holds exactly the NORMAL and USER_DEFINED pieces), else a new frozen trie of those. */
static mg_status lattice_trie(const mg_spm_model *md, mg_spm_trie **out)
{
    *out = NULL;
    if (!has_unused(&md->proto)) return MG_OK;
    MG_FORWARD(mg_spm_trie_create(out));
    for (size_t i = 0; i < md->proto.n_pieces; i++) {
        const mg_spm_piece *pc = &md->proto.pieces[i];
        if (pc->type != SPM_NORMAL && pc->type != SPM_USER_DEFINED) continue;
        int added;
        MG_FORWARD(mg_spm_trie_insert(*out, pc->piece.p, pc->piece.n, (int32_t)i, &added));
    }
    return mg_spm_trie_freeze(*out);
}

/* The Unigram candidates: md->dat, md->lattice_max_len and md->lattice_score (after
 * score_range); none for the other model types (their encoders walk md->pieces). */
static mg_status build_lattice(mg_spm_model *md)
{
    int t = md->proto.model_type;
    if (t == SPM_BPE || t == SPM_WORD || t == SPM_CHAR) return MG_OK;
    md->lattice_score = mg_malloc((md->proto.n_pieces ? md->proto.n_pieces : 1) * sizeof(float));
    if (!md->lattice_score) return MG_ERR_NOMEM;
    for (size_t i = 0; i < md->proto.n_pieces; i++) {
        const mg_spm_piece *pc = &md->proto.pieces[i];
        md->lattice_score[i] = pc->type == SPM_USER_DEFINED
                                   ? (float)(int32_t)(pc->piece.n - 1) * 0.1f : pc->score;
    }
    mg_spm_trie *own = NULL;
    mg_status st = lattice_trie(md, &own);
    const mg_spm_trie *lattice = own ? own : md->pieces;
    if (st == MG_OK) st = mg_unigram_dat_build(lattice, md->lattice_score, &md->dat);
    md->lattice_max_len = mg_spm_trie_max_len(lattice);
    mg_spm_trie_free(own);
    return st;
}

static void score_range(mg_spm_model *md)
{
    md->min_score = FLT_MAX;
    md->max_score = FLT_MIN;
    for (size_t i = 0; i < md->proto.n_pieces; i++) {
        const mg_spm_piece *pc = &md->proto.pieces[i];
        if (pc->type != SPM_NORMAL) continue;
        if (pc->score < md->min_score) md->min_score = pc->score;
        if (pc->score > md->max_score) md->max_score = pc->score;
    }
}

mg_status mg_spm_model_init(mg_spm_model *md)
{
    md->unk_id = -1;
    MG_RETURN_IF(md->proto.n_pieces >= INT32_MAX, MG_ERR_LIMIT, "too many pieces");
    MG_FORWARD(mg_spm_trie_create(&md->pieces));
    MG_FORWARD(mg_spm_trie_create(&md->reserved));
    uint8_t bytes_seen[256] = {0};
    for (size_t i = 0; i < md->proto.n_pieces; i++) {
        MG_FORWARD(check_piece(md, i, bytes_seen));
        MG_FORWARD(add_to_sets(md, i));
    }
    MG_RETURN_IF(md->unk_id < 0, MG_ERR_FORMAT, "unk is not defined");
    if (md->proto.byte_fallback)
        for (int b = 0; b < 256; b++)
            MG_RETURN_IF(!bytes_seen[b], MG_ERR_FORMAT, "there are not 256 byte pieces "
                         "although byte_fallback is true (<0x%02X> is missing)", b);
    score_range(md);
    md->ws_bounded = ws_bounded(&md->proto);
    MG_FORWARD(mg_spm_trie_freeze(md->pieces)); /* BPE pair lookups */
    if (md->proto.model_type == SPM_BPE && md->ws_bounded && !md->user)
        MG_FORWARD(mg_spm_bigrams_build(&md->bigrams, &md->proto));
    return build_lattice(md);
}

void mg_spm_model_free(mg_spm_model *md)
{
    mg_spm_proto_free(&md->proto);
    mg_spm_trie_free(md->pieces);
    mg_spm_trie_free(md->reserved);
    mg_spm_trie_free(md->user);
    free(md->lattice_score);
    mg_unigram_dat_free(md->dat);
    mg_spm_bigrams_free(&md->bigrams);
    md->dat = NULL;
    md->pieces = md->reserved = md->user = NULL;
    md->lattice_score = NULL;
}

/* ---- buffers ---- */

mg_status mg_spm_buf_append(mg_spm_buf *b, const void *s, size_t n)
{
    MG_RETURN_IF(n > SIZE_MAX - b->n, MG_ERR_NOMEM, "buffer too big");
    MG_FORWARD(MG_GROW(b->v, b->cap, b->n + n, 256));
    memcpy(b->v + b->n, s, n);
    b->n += n;
    return MG_OK;
}

mg_status mg_spm_refs_reserve(mg_spm_refs *r, size_t extra)
{
    return MG_GROW(r->v, r->cap, r->n + extra, 64);
}

mg_status mg_spm_refs_push(mg_spm_refs *r, uint32_t off, uint32_t len, int32_t id)
{
    if (r->n == r->cap) MG_FORWARD(mg_spm_refs_reserve(r, 1));
    r->v[r->n++] = (mg_spm_ref){off, len, id};
    return MG_OK;
}

void mg_spm_scratch_free(mg_spm_scratch *s)
{
    free(s->nodes);
    free(s->syms);
    free(s->heap);
    free(s->rev);
    free(s->revs);
    free(s->span_cache);
    free(s->char3);
    free(s->stack);
    memset(s, 0, sizeof *s);
}
