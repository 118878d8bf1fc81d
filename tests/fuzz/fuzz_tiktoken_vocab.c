/* fuzz_tiktoken_vocab.c — libFuzzer target: arbitrary bytes as a TikTokenizer vocabulary.
 *
 * The input is written to a file and read by mg_tiktoken_vocab_load(). A .tiktoken input
 * (first non-blank byte not '[' or '{') is also parsed by the plain reference below, which
 * follows tiktoken's load_tiktoken_bpe() step by step (bytes.splitlines(), line.split(), a
 * rank of decimal digits, base64.b64decode() of well-formed groups): both must accept the
 * same files, give the same entries in the same order, and reject a file at the same line.
 * A JSON input only has to load without a crash, a sanitizer report or a leak. Either way
 * the loader's bound on the entries comes first and holds.
 * Seeds: tests/fuzz/corpus/tiktoken_vocab/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tok/tiktoken_vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    uint8_t bytes[1 << 16];
    size_t n;
    size_t count, most; /* entries added; the loader's bound on them (SIZE_MAX: none told) */
} entries;

/* Appends one entry as rank (8 bytes), length (8 bytes), bytes. */
static void put(entries *e, const uint8_t *s, size_t len, int64_t rank)
{
    if (e->n + 16 + len > sizeof e->bytes) abort(); /* inputs are capped below */
    uint64_t l = len;
    memcpy(e->bytes + e->n, &rank, 8);
    memcpy(e->bytes + e->n + 8, &l, 8);
    memcpy(e->bytes + e->n + 16, s, len);
    e->n += 16 + len;
}

static mg_status collect(void *ctx, const uint8_t *bytes, size_t len, int64_t rank)
{
    entries *e = ctx;
    if (e->most == SIZE_MAX) abort(); /* the bound comes before the first entry */
    put(e, bytes, len, rank);
    e->count++;
    return MG_OK;
}

static mg_status bound(void *ctx, size_t most)
{
    entries *e = ctx;
    if (e->most != SIZE_MAX || e->count) abort(); /* told once, first */
    e->most = most;
    return MG_OK;
}

/* ---- the reference ---- */

static int ref_ws(uint8_t c) { return c == ' ' || (c >= 9 && c <= 13); }

static int ref_b64(uint8_t c)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(a, c) : NULL;
    return p ? (int)(p - a) : c == '=' ? 64 : -1;
}

/* Decodes s[0, n) into out; 0 if it is not well-formed base64. */
static int ref_decode(const uint8_t *s, size_t n, uint8_t *out, size_t *out_len)
{
    if (n % 4) return 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], last = i + 4 == n;
        for (int k = 0; k < 4; k++)
            if ((v[k] = ref_b64(s[i + k])) < 0) return 0;
        int pad = (v[3] == 64) + (v[2] == 64);
        if (v[0] == 64 || v[1] == 64 || (v[2] == 64 && v[3] != 64) || (pad && !last)) return 0;
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                     (uint32_t)(v[2] & 63) << 6 | (uint32_t)(v[3] & 63);
        out[o++] = (uint8_t)(w >> 16);
        if (pad < 2) out[o++] = (uint8_t)(w >> 8);
        if (pad < 1) out[o++] = (uint8_t)w;
    }
    *out_len = o;
    return 1;
}

/* One line: 0 if it is bad. */
static int ref_line(const uint8_t *l, size_t n, entries *e)
{
    size_t f[6], k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && ref_ws(l[i])) i++;
        if (i == n) break;
        if (k == 4) return 0;
        f[k++] = i;
        while (i < n && !ref_ws(l[i])) i++;
        f[k++] = i;
    }
    if (k != 4 || f[3] == f[2]) return 0;
    int64_t rank = 0;
    for (size_t i = f[2]; i < f[3]; i++) {
        if (l[i] < '0' || l[i] > '9' || rank > (INT32_MAX - 9) / 10) return 0;
        rank = rank * 10 + (l[i] - '0');
    }
    uint8_t out[1 << 12];
    size_t len;
    if (f[1] - f[0] > sizeof out || !ref_decode(l + f[0], f[1] - f[0], out, &len)) return 0;
    put(e, out, len, rank);
    return 1;
}

/* The number of the first bad line, 0 if none. */
static size_t ref_load(const uint8_t *d, size_t n, entries *e)
{
    size_t line_no = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && d[j] != '\n' && d[j] != '\r') j++;
        line_no++;
        if (j > i && !ref_line(d + i, j - i, e)) return line_no;
        if (j + 1 < n && d[j] == '\r' && d[j + 1] == '\n') j++;
        i = j + 1;
    }
    return 0;
}

/* ---- the target ---- */

static entries got, want;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192) return 0; /* keeps the entries within their buffers */
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/fuzz-tiktoken-%d.tiktoken", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    got.n = want.n = got.count = 0;
    got.most = SIZE_MAX;
    int is_json;
    mg_status st = mg_tiktoken_vocab_load(path, -1, bound, collect, &got, &is_json);
    if (got.count && got.count > got.most) abort();
    if (is_json) return 0;
    size_t bad = ref_load(data, size, &want);
    char where[48];
    snprintf(where, sizeof where, "%s:%zu:", path, bad);
    if ((st == MG_OK) != (bad == 0) || (bad && !strstr(mg_last_error(), where)) ||
        (!bad && (got.n != want.n || memcmp(got.bytes, want.bytes, got.n) != 0))) {
        fprintf(stderr, "loader: status %d (%s); reference: first bad line %zu\n", (int)st,
                st ? mg_last_error() : "", bad);
        abort();
    }
    return 0;
}
