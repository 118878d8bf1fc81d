/* added_tokens.c — leftmost-longest search for added/special tokens; see added_tokens.h.
 *
 * The token strings form a byte trie (first-child/next-sibling lists, with a dense table for
 * the root). The scan skips bytes that start no token through a 256-entry table, then walks
 * the trie from each candidate position, keeping the longest token found: the first
 * position with any match gives the leftmost match, the walk gives the longest one. Matches
 * never overlap: a match rejected by single_word resumes the search after its end (HF's
 * Aho-Corasick iterator does the same).
 */
#include "tok/added_tokens.h"

#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#else
#include "mg/unicode.h"
#endif

typedef struct {
    int32_t child, sibling; /* node indices, -1 for none */
    int32_t token;          /* index into toks, -1 if no token ends here */
    uint8_t byte;
} trie_node;

struct mg_added_tokens {
    mg_added_token *toks;
    size_t n;
    char *strings;   /* all contents, back to back */
    trie_node *nodes;
    size_t n_nodes, cap_nodes;
    int32_t root[256]; /* node of the first byte, -1 if no token starts with it */
    int single_first;  /* the only first byte of all tokens (memchr scan), or -1 */
};

static mg_status push_node(mg_added_tokens *a, uint8_t byte, int32_t *idx)
{
    MG_FORWARD(MG_GROW(a->nodes, a->cap_nodes, a->n_nodes + 1, 64));
    trie_node *nd = &a->nodes[a->n_nodes];
    nd->child = nd->sibling = nd->token = -1;
    nd->byte = byte;
    *idx = (int32_t)a->n_nodes++;
    return MG_OK;
}

/* Child of node `parent` (or a root entry when parent < 0) for byte b, created if absent. */
static mg_status child_of(mg_added_tokens *a, int32_t parent, uint8_t b, int32_t *out)
{
    if (parent < 0) {
        if (a->root[b] < 0) MG_FORWARD(push_node(a, b, &a->root[b]));
        *out = a->root[b];
        return MG_OK;
    }
    int32_t c = a->nodes[parent].child;
    for (; c >= 0; c = a->nodes[c].sibling)
        if (a->nodes[c].byte == b) break;
    if (c < 0) {
        MG_FORWARD(push_node(a, b, &c));
        a->nodes[c].sibling = a->nodes[parent].child;
        a->nodes[parent].child = c;
    }
    *out = c;
    return MG_OK;
}

static mg_status insert(mg_added_tokens *a, size_t ti)
{
    const uint8_t *s = (const uint8_t *)a->toks[ti].content;
    int32_t node = -1;
    for (size_t i = 0; i < a->toks[ti].len; i++) MG_FORWARD(child_of(a, node, s[i], &node));
    a->nodes[node].token = (int32_t)ti; /* a later duplicate replaces an earlier one */
    return MG_OK;
}

static mg_status copy_tokens(mg_added_tokens *a, const mg_added_token *toks, size_t n)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++) total += toks[i].len;
    a->toks = mg_calloc(n ? n : 1, sizeof *a->toks);
    a->strings = mg_malloc(total);
    if (!a->toks || !a->strings) return MG_ERR_NOMEM;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        a->toks[i] = toks[i];
        memcpy(a->strings + off, toks[i].content, toks[i].len);
        a->toks[i].content = a->strings + off;
        off += toks[i].len;
    }
    a->n = n;
    return MG_OK;
}

mg_status mg_added_tokens_create(mg_added_tokens **out, const mg_added_token *toks, size_t n)
{
    *out = NULL;
    mg_added_tokens *a = mg_calloc(1, sizeof *a);
    if (!a) return MG_ERR_NOMEM;
    memset(a->root, 0xff, sizeof a->root);
    mg_status st = copy_tokens(a, toks, n);
    for (size_t i = 0; st == MG_OK && i < n; i++)
        if (toks[i].len > 0) st = insert(a, i);
    if (st != MG_OK) {
        mg_added_tokens_free(a);
        return st;
    }
    int firsts = 0;
    for (int b = 0; b < 256; b++)
        if (a->root[b] >= 0) {
            firsts++;
            a->single_first = b;
        }
    if (firsts != 1) a->single_first = -1;
    *out = a;
    return MG_OK;
}

void mg_added_tokens_free(mg_added_tokens *a)
{
    if (!a) return;
    free(a->toks);
    free(a->strings);
    free(a->nodes);
    free(a);
}

size_t mg_added_tokens_count(const mg_added_tokens *a)
{
    return a ? a->n : 0;
}

/* Longest token starting at text[pos]; returns its length (0 if none) and index. */
static size_t longest_at(const mg_added_tokens *a, const uint8_t *s, size_t len, size_t pos,
                         int32_t *tok)
{
    size_t best = 0;
    int32_t node = a->root[s[pos]];
    for (size_t i = pos; node >= 0;) {
        if (a->nodes[node].token >= 0) {
            best = i + 1 - pos;
            *tok = a->nodes[node].token;
        }
        if (++i >= len) break;
        int32_t c = a->nodes[node].child;
        while (c >= 0 && a->nodes[c].byte != s[i]) c = a->nodes[c].sibling;
        node = c;
    }
    return best;
}

/* ---- Unicode helpers: Rust char::is_whitespace / is_alphanumeric ---- */

static int is_white_space(uint32_t c)
{
    if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || c == 0x20;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Alphabetic or numeric (letters, Nl/Nd/No; marks with Other_Alphabetic are approximated
 * by Mn/Mc, which utf8proc cannot tell apart). ASCII is exact. */
static int is_word_char(uint32_t c)
{
    if (c < 0x80)
        return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
#if MG_HAVE_UTF8PROC
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
        return 1;
    default:
        return 0;
    }
#else /* the built-in class table (Unicode 16.0) */
    unsigned cat = mg_uc_props(c) & MG_UC_CAT_MASK;
    return MG_UC_IS_L(cat) || MG_UC_IS_N(cat) || cat == MG_UC_MN || cat == MG_UC_MC;
#endif
}

/* Decodes the (valid) UTF-8 character starting at s[i]; sets *n to its length. */
static uint32_t char_at(const uint8_t *s, size_t i, size_t *n)
{
    uint32_t c = s[i];
    if (c < 0x80) { *n = 1; return c; }
    if (c < 0xE0) { *n = 2; return ((c & 0x1F) << 6) | (s[i + 1] & 0x3F); }
    if (c < 0xF0) {
        *n = 3;
        return ((c & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
    }
    *n = 4;
    return ((c & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) |
           ((uint32_t)(s[i + 2] & 0x3F) << 6) | (s[i + 3] & 0x3F);
}

/* Start of the character ending at s[end - 1]. */
static size_t char_start_before(const uint8_t *s, size_t end)
{
    size_t i = end - 1;
    while (i > 0 && (s[i] & 0xC0) == 0x80) i--;
    return i;
}

static int word_before(const uint8_t *s, size_t start)
{
    size_t n;
    return start > 0 && is_word_char(char_at(s, char_start_before(s, start), &n));
}

static int word_after(const uint8_t *s, size_t len, size_t stop)
{
    size_t n;
    return stop < len && is_word_char(char_at(s, stop, &n));
}

/* Start of the whitespace run that ends at `end` (not before `floor`). */
static size_t strip_left(const uint8_t *s, size_t end, size_t floor)
{
    while (end > floor) {
        size_t p = char_start_before(s, end), n;
        if (!is_white_space(char_at(s, p, &n))) break;
        end = p;
    }
    return end;
}

static size_t strip_right(const uint8_t *s, size_t len, size_t pos)
{
    while (pos < len) {
        size_t n;
        if (!is_white_space(char_at(s, pos, &n))) break;
        pos += n;
    }
    return pos;
}

int mg_added_tokens_find(const mg_added_tokens *a, const char *text, size_t len, size_t from,
                         size_t *mstart, size_t *mend, int64_t *id)
{
    const uint8_t *s = (const uint8_t *)text;
    if (!a || a->n == 0) return 0;
    for (size_t pos = from; pos < len; pos++) {
        if (a->single_first >= 0) { /* e.g. every token starts with '<' */
            const uint8_t *p = memchr(s + pos, a->single_first, len - pos);
            if (!p) return 0;
            pos = (size_t)(p - s);
        } else if (a->root[s[pos]] < 0) {
            continue;
        }
        int32_t ti = -1;
        size_t l = longest_at(a, s, len, pos, &ti);
        if (l == 0) continue;
        const mg_added_token *t = &a->toks[ti];
        size_t start = pos, stop = pos + l;
        if (t->single_word && (word_before(s, start) || word_after(s, len, stop))) {
            pos = stop - 1; /* resume after the rejected match */
            continue;
        }
        if (t->lstrip) start = strip_left(s, start, from);
        if (t->rstrip) stop = strip_right(s, len, stop);
        *mstart = start;
        *mend = stop;
        *id = t->id;
        return 1;
    }
    return 0;
}
