/* tok_tiktoken_load.c — TikTokenizer vocabulary files: Megatron's JSON list and OpenAI's
 * .tiktoken rank files (contract in tiktoken_vocab.h).
 */
#include "tok/tiktoken_vocab.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mg/base64.h"
#include "mg/file.h"

/* Decodes base64 text into *buf (grown as needed); *n = decoded length. */
static mg_status decode_b64(const char *s, size_t len, uint8_t **buf, size_t *cap, size_t *n)
{
    size_t need = mg_base64_decoded_max(len);
    if (need > *cap) {
        uint8_t *b = mg_realloc(*buf, need);
        if (!b) return MG_ERR_NOMEM;
        *buf = b;
        *cap = need;
    }
    return mg_base64_decode(s, len, *buf, n);
}

/* ---- Megatron JSON list ---- */

static int rank_matches(const json_t *r, size_t i)
{
    if (json_is_integer(r)) return json_integer_value(r) == (json_int_t)i;
    return json_is_real(r) && json_real_value(r) == (double)i;
}

static mg_status json_entry(const char *path, size_t i, const json_t *e, uint8_t **buf,
                            size_t *cap, size_t *n)
{
    MG_RETURN_IF(!json_is_object(e), MG_ERR_FORMAT, "%s: entry %zu is not an object", path, i);
    const json_t *r = json_object_get(e, "rank"), *tb = json_object_get(e, "token_bytes");
    MG_RETURN_IF(json_object_size(e) != 3 || !r || !tb || !json_object_get(e, "token_str"),
                 MG_ERR_FORMAT, "%s: entry %zu: keys must be exactly rank, token_bytes, "
                 "token_str", path, i);
    MG_RETURN_IF(!rank_matches(r, i), MG_ERR_FORMAT, "%s: entry %zu: rank must be %zu", path, i,
                 i);
    MG_RETURN_IF(!json_is_string(tb), MG_ERR_FORMAT, "%s: entry %zu: token_bytes is not a string",
                 path, i);
    mg_status st = decode_b64(json_string_value(tb), json_string_length(tb), buf, cap, n);
    if (st != MG_OK) {
        mg_error_prefix("%s: entry %zu: token_bytes", path, i);
        return st;
    }
    MG_RETURN_IF(i < 256 && (*n != 1 || (*buf)[0] != i), MG_ERR_FORMAT,
                 "%s: entry %zu: the first 256 entries must be the single bytes 0..255", path, i);
    return MG_OK;
}

static mg_status load_json(const char *path, const mg_map *m, int64_t max_entries,
                           mg_tiktoken_size_fn size, mg_tiktoken_add_fn add, void *ctx)
{
    json_error_t err;
    json_t *root = json_loadb((const char *)m->data, m->size, JSON_ALLOW_NUL, &err);
    MG_RETURN_IF(!root, MG_ERR_FORMAT, "%s:%d: invalid JSON: %s", path, err.line, err.text);
    mg_status st = MG_OK;
    if (!json_is_array(root)) st = mg_error_set(MG_ERR_FORMAT, "%s: not a JSON list", path);
    size_t n = json_is_array(root) ? json_array_size(root) : 0;
    if (max_entries >= 0 && (uint64_t)max_entries < n) n = (size_t)max_entries;
    if (st == MG_OK && size) st = size(ctx, n);
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0;
    for (size_t i = 0; i < n && st == MG_OK; i++) {
        st = json_entry(path, i, json_array_get(root, i), &buf, &cap, &len);
        if (st == MG_OK) st = add(ctx, buf, len, (int64_t)i);
    }
    free(buf);
    json_decref(root);
    return st;
}

/* ---- .tiktoken lines ---- */

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == 11 || c == 12; }

/* Splits line[0, n) into exactly two whitespace-separated fields. */
static int two_fields(const uint8_t *l, size_t n, size_t f[4])
{
    size_t k = 0, i = 0;
    while (k < 6) {
        while (i < n && is_ws(l[i])) i++;
        if (i == n) break;
        if (k == 4) return 0; /* a third field */
        f[k++] = i;
        while (i < n && !is_ws(l[i])) i++;
        f[k++] = i;
    }
    return k == 4;
}

static mg_status parse_rank(const uint8_t *s, size_t n, int64_t *rank)
{
    int64_t r = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || r > (INT32_MAX - 9) / 10) return MG_ERR_FORMAT;
        r = r * 10 + (s[i] - '0');
    }
    *rank = r;
    return n ? MG_OK : MG_ERR_FORMAT;
}

/* The usual line, "base64 rank" split at its one space without a scan of every byte: the
 * caller takes these fields only if they decode, and neither field can then hold whitespace
 * (it is outside the base64 alphabet and not a digit), so two_fields() would agree. */
static int one_space_fields(const uint8_t *l, size_t n, size_t f[4])
{
    const uint8_t *sp = memchr(l, ' ', n);
    if (!sp || sp == l || sp + 1 == l + n) return 0;
    f[0] = 0;
    f[1] = (size_t)(sp - l);
    f[2] = f[1] + 1;
    f[3] = n;
    return 1;
}

static mg_status tiktoken_line(const char *path, size_t line_no, const uint8_t *l, size_t n,
                               uint8_t **buf, size_t *cap, mg_tiktoken_add_fn add, void *ctx)
{
    size_t f[4];
    int64_t rank;
    size_t len;
    if (one_space_fields(l, n, f) && parse_rank(l + f[2], f[3] - f[2], &rank) == MG_OK &&
        decode_b64((const char *)l + f[0], f[1] - f[0], buf, cap, &len) == MG_OK)
        return add(ctx, *buf, len, rank);
    MG_RETURN_IF(!two_fields(l, n, f), MG_ERR_FORMAT, "%s:%zu: expected \"base64 rank\"", path,
                 line_no);
    MG_RETURN_IF(parse_rank(l + f[2], f[3] - f[2], &rank) != MG_OK, MG_ERR_FORMAT,
                 "%s:%zu: invalid rank", path, line_no);
    mg_status st = decode_b64((const char *)l + f[0], f[1] - f[0], buf, cap, &len);
    if (st != MG_OK) {
        mg_error_prefix("%s:%zu", path, line_no);
        return st;
    }
    return add(ctx, *buf, len, rank);
}

/* bytes.splitlines(): \n, \r and \r\n end a line. */
/* How many times byte c is in d[0, n) (not followed by `unless`, if that is not -1). */
static size_t count_byte(const uint8_t *d, size_t n, int c, int unless)
{
    size_t k = 0;
    for (const uint8_t *at; n && (at = memchr(d, c, n)); d = at + 1) {
        n -= (size_t)(at + 1 - d);
        k += unless < 0 || !n || at[1] != unless;
    }
    return k;
}

/* At most how many lines d[0, n) has (bytes.splitlines(): \n, \r and \r\n end one). */
static size_t count_lines(const uint8_t *d, size_t n)
{
    return 1 + count_byte(d, n, '\n', -1) + count_byte(d, n, '\r', '\n');
}

static mg_status load_tiktoken(const char *path, const mg_map *m, mg_tiktoken_size_fn size,
                               mg_tiktoken_add_fn add, void *ctx)
{
    const uint8_t *d = m->data;
    size_t n = m->size, line_no = 0;
    uint8_t *buf = NULL;
    size_t cap = 0;
    mg_status st = size ? size(ctx, count_lines(d, n)) : MG_OK;
    for (size_t i = 0; i < n && st == MG_OK;) {
        const uint8_t *nl = memchr(d + i, '\n', n - i);
        size_t j = nl ? (size_t)(nl - d) : n;
        const uint8_t *cr = memchr(d + i, '\r', j - i);
        if (cr) j = (size_t)(cr - d);
        line_no++;
        if (j > i) st = tiktoken_line(path, line_no, d + i, j - i, &buf, &cap, add, ctx);
        if (j < n && d[j] == '\r' && j + 1 < n && d[j + 1] == '\n') j++;
        i = j + 1;
    }
    free(buf);
    return st;
}

mg_status mg_tiktoken_vocab_load(const char *path, int64_t max_entries,
                                 mg_tiktoken_size_fn size, mg_tiktoken_add_fn add, void *ctx,
                                 int *is_json)
{
    mg_map m;
    MG_FORWARD(mg_map_open(&m, path));
    size_t i = 0;
    while (i < m.size && is_ws(m.data[i])) i++;
    *is_json = i < m.size && (m.data[i] == '[' || m.data[i] == '{');
    mg_status st = *is_json ? load_json(path, &m, max_entries, size, add, ctx)
                            : load_tiktoken(path, &m, size, add, ctx);
    mg_map_close(&m);
    return st;
}
