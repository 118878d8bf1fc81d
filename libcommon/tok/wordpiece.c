/* wordpiece.c — WordPiece vocabulary and greedy longest-match-first encoding; see
 * wordpiece.h.
 *
 * Strings live in one arena. Two open-addressing hash tables (FNV-1a, linear probing)
 * index the entries: `main` by the whole string, `cont` by the string without the
 * continuing_subword_prefix (only strings that start with it), so a continuation piece is
 * looked up without building prefix + piece. The longest key of each table bounds the
 * greedy search.
 */
#include "tok/wordpiece.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t off; /* in the arena */
    uint32_t len;
    int32_t id;
} wp_entry;

typedef struct {
    uint32_t *slot; /* entry index + 1, 0 = empty */
    size_t mask;
    size_t longest; /* longest key, bytes */
} wp_table;

struct mg_wordpiece {
    char *arena;
    size_t arena_n, arena_cap;
    wp_entry *ent;
    size_t n_ent, cap_ent;
    wp_table main, cont;
    int32_t *by_id; /* id -> entry index, -1 if none */
    int64_t id_end;
    size_t n_distinct;
    char prefix[64];
    size_t plen;
    char unk[256];
    size_t unk_len;
    size_t max_chars;
    int64_t unk_id; /* -1 if the unk token is not in the vocabulary */
};

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h ^ (h >> 29);
}

mg_status mg_wordpiece_create(mg_wordpiece **out, const char *prefix, const char *unk,
                              size_t max_input_chars_per_word)
{
    *out = NULL;
    MG_RETURN_IF(strlen(prefix) >= sizeof((mg_wordpiece *)0)->prefix, MG_ERR_UNSUPPORTED,
                 "not supported yet: a WordPiece continuing_subword_prefix of %zu bytes",
                 strlen(prefix));
    MG_RETURN_IF(strlen(unk) >= sizeof((mg_wordpiece *)0)->unk, MG_ERR_UNSUPPORTED,
                 "not supported yet: a WordPiece unk_token of %zu bytes", strlen(unk));
    mg_wordpiece *wp = mg_calloc(1, sizeof *wp);
    if (!wp) return MG_ERR_NOMEM;
    wp->plen = strlen(prefix);
    memcpy(wp->prefix, prefix, wp->plen);
    wp->unk_len = strlen(unk);
    memcpy(wp->unk, unk, wp->unk_len);
    wp->max_chars = max_input_chars_per_word;
    wp->unk_id = -1;
    *out = wp;
    return MG_OK;
}

void mg_wordpiece_free(mg_wordpiece *wp)
{
    if (!wp) return;
    free(wp->arena);
    free(wp->ent);
    free(wp->main.slot);
    free(wp->cont.slot);
    free(wp->by_id);
    free(wp);
}

static mg_status grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return MG_OK;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    void *q = mg_realloc(*p, c * elem);
    if (!q) return MG_ERR_NOMEM;
    *p = q;
    *cap = c;
    return MG_OK;
}

mg_status mg_wordpiece_add(mg_wordpiece *wp, const char *s, size_t len, int64_t id)
{
    MG_RETURN_IF(id < 0 || id > INT32_MAX, MG_ERR_FORMAT, "WordPiece token id %lld out of range",
                 (long long)id);
    MG_RETURN_IF(len > UINT32_MAX, MG_ERR_LIMIT, "a WordPiece token of %zu bytes", len);
    MG_FORWARD(grow((void **)&wp->arena, &wp->arena_cap, wp->arena_n + len + 1, 1));
    MG_FORWARD(grow((void **)&wp->ent, &wp->cap_ent, wp->n_ent + 1, sizeof *wp->ent));
    memcpy(wp->arena + wp->arena_n, s, len);
    wp->arena[wp->arena_n + len] = 0;
    wp->ent[wp->n_ent++] = (wp_entry){wp->arena_n, (uint32_t)len, (int32_t)id};
    wp->arena_n += len + 1;
    return MG_OK;
}

/* Slot of key s[0, n) in t: the slot holding it, or the empty slot where it belongs. */
static size_t probe(const mg_wordpiece *wp, const wp_table *t, size_t skip, const char *s,
                    size_t n)
{
    size_t i = (size_t)hash(s, n) & t->mask;
    for (;;) {
        uint32_t e = t->slot[i];
        if (e == 0) return i;
        const wp_entry *x = &wp->ent[e - 1];
        if (x->len - skip == n && memcmp(wp->arena + x->off + skip, s, n) == 0) return i;
        i = (i + 1) & t->mask;
    }
}

/* Inserts entry k (key = its string minus `skip` bytes); a later entry replaces an
 * earlier one with the same key. Returns 1 if the key was new. */
static int insert(mg_wordpiece *wp, wp_table *t, size_t skip, size_t k)
{
    const wp_entry *x = &wp->ent[k];
    size_t n = x->len - skip, i = probe(wp, t, skip, wp->arena + x->off + skip, n);
    int fresh = t->slot[i] == 0;
    t->slot[i] = (uint32_t)(k + 1);
    if (n > t->longest) t->longest = n;
    return fresh;
}

static mg_status table_init(wp_table *t, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    t->slot = mg_calloc(cap, sizeof *t->slot);
    if (!t->slot) return MG_ERR_NOMEM;
    t->mask = cap - 1;
    return MG_OK;
}

static int is_cont(const mg_wordpiece *wp, const wp_entry *x)
{
    return x->len >= wp->plen && memcmp(wp->arena + x->off, wp->prefix, wp->plen) == 0;
}

static mg_status build_by_id(mg_wordpiece *wp)
{
    for (size_t k = 0; k < wp->n_ent; k++)
        if (wp->ent[k].id >= wp->id_end) wp->id_end = wp->ent[k].id + 1;
    wp->by_id = mg_malloc((size_t)(wp->id_end ? wp->id_end : 1) * sizeof *wp->by_id);
    if (!wp->by_id) return MG_ERR_NOMEM;
    for (int64_t i = 0; i < wp->id_end; i++) wp->by_id[i] = -1;
    /* only entries that survive in the main table (the later of duplicates) */
    for (size_t i = 0; i <= wp->main.mask; i++) {
        uint32_t e = wp->main.slot[i];
        if (e) wp->by_id[wp->ent[e - 1].id] = (int32_t)(e - 1);
    }
    return MG_OK;
}

mg_status mg_wordpiece_finalize(mg_wordpiece *wp)
{
    MG_FORWARD(table_init(&wp->main, wp->n_ent));
    MG_FORWARD(table_init(&wp->cont, wp->n_ent));
    for (size_t k = 0; k < wp->n_ent; k++) {
        wp->n_distinct += (size_t)insert(wp, &wp->main, 0, k);
        if (is_cont(wp, &wp->ent[k])) insert(wp, &wp->cont, wp->plen, k);
    }
    wp->unk_id = mg_wordpiece_id(wp, wp->unk, wp->unk_len);
    return build_by_id(wp);
}

size_t mg_wordpiece_size(const mg_wordpiece *wp) { return wp->n_distinct; }
int64_t mg_wordpiece_id_end(const mg_wordpiece *wp) { return wp->id_end; }

static int64_t lookup(const mg_wordpiece *wp, const wp_table *t, size_t skip, const char *s,
                      size_t n)
{
    uint32_t e = t->slot[probe(wp, t, skip, s, n)];
    return e ? wp->ent[e - 1].id : -1;
}

int64_t mg_wordpiece_id(const mg_wordpiece *wp, const char *s, size_t len)
{
    if (len > wp->main.longest) return -1;
    return lookup(wp, &wp->main, 0, s, len);
}

const char *mg_wordpiece_token(const mg_wordpiece *wp, int64_t id, size_t *len)
{
    if (id < 0 || id >= wp->id_end || wp->by_id[id] < 0) return NULL;
    const wp_entry *x = &wp->ent[wp->by_id[id]];
    *len = x->len;
    return wp->arena + x->off;
}

const char *mg_wordpiece_prefix(const mg_wordpiece *wp, size_t *len)
{
    *len = wp->plen;
    return wp->prefix;
}

static mg_status push_unk(const mg_wordpiece *wp, mg_ids *out)
{
    MG_RETURN_IF(wp->unk_id < 0, MG_ERR_FORMAT,
                 "WordPiece: the unk token \"%s\" is missing from the vocabulary", wp->unk);
    return mg_ids_push(out, wp->unk_id);
}

static size_t count_chars(const char *w, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)w[i] & 0xC0) != 0x80;
    return c;
}

/* The longest piece at w[start, n) in table t: its id and end, or -1. */
static int64_t longest_piece(const mg_wordpiece *wp, const wp_table *t, size_t skip,
                             const char *w, size_t start, size_t n, size_t *end)
{
    size_t e = n - start > t->longest ? start + t->longest : n;
    while (e > start && e < n && ((unsigned char)w[e] & 0xC0) == 0x80) e--;
    for (; e > start; e--) {
        if (e < n && ((unsigned char)w[e] & 0xC0) == 0x80) continue;
        int64_t id = lookup(wp, t, skip, w + start, e - start);
        if (id >= 0) {
            *end = e;
            return id;
        }
    }
    return -1;
}

mg_status mg_wordpiece_encode_word(const mg_wordpiece *wp, const char *w, size_t n,
                                   mg_ids *out)
{
    if (count_chars(w, n) > wp->max_chars) return push_unk(wp, out);
    size_t mark = out->n, start = 0;
    while (start < n) {
        size_t end = start;
        int64_t id = start == 0 ? longest_piece(wp, &wp->main, 0, w, 0, n, &end)
                                : longest_piece(wp, &wp->cont, wp->plen, w, start, n, &end);
        if (id < 0) {
            out->n = mark;
            return push_unk(wp, out);
        }
        MG_FORWARD(mg_ids_push(out, id));
        start = end;
    }
    return MG_OK;
}
