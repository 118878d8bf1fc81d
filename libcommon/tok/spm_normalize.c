/* spm_normalize.c — sentencepiece's Normalizer (normalizer.cc, 0.2.x). Contract: spm_proto.h.
 *
 * precompiled_charsmap = <u32 LE trie size><Darts-clone double array><NUL-separated
 * replacements>. At each position the longest rule wins (among the first 32 prefix
 * matches, as sentencepiece); with none, one UTF-8 character is copied, and a malformed
 * byte becomes U+FFFD consuming 1 byte. User-defined symbols are matched first (longest)
 * and copied unnormalized. Then: leading spaces dropped and runs collapsed
 * (remove_extra_whitespaces), "▁" prepended (add_dummy_prefix, or appended with
 * treat_whitespace_as_suffix), ' ' -> "▁" (escape_whitespaces), trailing "▁" (or ' ')
 * dropped. Indices into the double array are bounds-checked (a damaged array means "no
 * match" where sentencepiece would read out of bounds).
 */
#include "tok/spm_proto.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_TRIE_RESULTS 32
static const uint8_t space_symbol[3] = {0xE2, 0x96, 0x81};

enum { FAST_OK = 1, FAST_NEXT = 2, FAST_SPACE = 4 };

static void find_plain_bytes(mg_spm_normalizer *nz);

static mg_status decode_charsmap(mg_spm_normalizer *nz, mg_spm_str blob)
{
    MG_RETURN_IF(blob.n <= 4, MG_ERR_FORMAT, "precompiled_charsmap is broken (%zu bytes)",
                 blob.n);
    uint32_t trie_size = (uint32_t)blob.p[0] | (uint32_t)blob.p[1] << 8 |
                         (uint32_t)blob.p[2] << 16 | (uint32_t)blob.p[3] << 24;
    MG_RETURN_IF(trie_size >= blob.n, MG_ERR_FORMAT, "precompiled_charsmap: trie size %u "
                 "exceeds the blob size %zu", trie_size, blob.n);
    MG_RETURN_IF(trie_size > blob.n - 4, MG_ERR_FORMAT, "precompiled_charsmap: trie of %u "
                 "bytes runs past the blob", trie_size);
    nz->n_units = trie_size / 4;
    nz->units = mg_malloc((nz->n_units ? nz->n_units : 1) * sizeof *nz->units);
    nz->strs_len = blob.n - 4 - trie_size;
    nz->strs = mg_malloc(nz->strs_len + 1);
    if (!nz->units || !nz->strs) return MG_ERR_NOMEM;
    for (size_t i = 0; i < nz->n_units; i++) {
        const uint8_t *u = blob.p + 4 + 4 * i;
        nz->units[i] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
                       (uint32_t)u[3] << 24;
    }
    memcpy(nz->strs, blob.p + 4 + trie_size, nz->strs_len);
    nz->strs[nz->strs_len] = 0;
    return MG_OK;
}

mg_status mg_spm_normalizer_init(mg_spm_normalizer *nz, const mg_spm_model *md)
{
    memset(nz, 0, sizeof *nz);
    nz->add_dummy_prefix = md->proto.add_dummy_prefix;
    nz->remove_extra_ws = md->proto.remove_extra_ws;
    nz->escape_ws = md->proto.escape_ws;
    nz->ws_suffix = md->proto.treat_ws_as_suffix;
    nz->user = md->user;
    mg_status st = md->proto.charsmap.n ? decode_charsmap(nz, md->proto.charsmap) : MG_OK;
    if (st != MG_OK) mg_spm_normalizer_free(nz);
    else find_plain_bytes(nz);
    return st;
}

void mg_spm_normalizer_free(mg_spm_normalizer *nz)
{
    free(nz->units);
    free(nz->strs);
    nz->units = NULL;
    nz->strs = NULL;
    nz->n_units = nz->strs_len = 0;
}

/* ---- Darts-clone double array ---- */

static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
static uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
static int unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
static uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

/* The double-array child of pos by byte (pos = its base offset), or SIZE_MAX. */
static size_t unit_child(const mg_spm_normalizer *nz, size_t pos, uint32_t b)
{
    pos ^= b;
    if (pos >= nz->n_units || unit_label(nz->units[pos]) != b) return SIZE_MAX;
    return pos;
}

/* The class of ASCII byte b in the rules: 1 no key starts with it; 2 no key is b alone or
 * b + an ASCII byte (so b then ASCII or the end matches no rule); 0 otherwise. */
static uint8_t rule_class(const mg_spm_normalizer *nz, uint32_t b)
{
    if (nz->n_units == 0) return 1;
    size_t pos = unit_child(nz, unit_offset(nz->units[0]), b);
    if (pos == SIZE_MAX) return 1;
    uint32_t u = nz->units[pos];
    if (unit_has_leaf(u)) return 0;
    for (uint32_t c = 0; c < 0x80; c++)
        if (unit_child(nz, pos ^ unit_offset(u), c) != SIZE_MAX) return 0;
    return 2;
}

/* Walk states of find_plain_mb: a unit of the charsmap trie, NO_RULE (the bytes so far
 * begin no key) or A_RULE (a key ends within them). */
enum { NO_RULE = -1, A_RULE = -2 };

/* The state after byte b from state pos (the walk of longest_rule). */
static long rule_step(const mg_spm_normalizer *nz, long pos, uint8_t b)
{
    if (pos < 0) return pos;
    size_t p = (size_t)pos ^ b;
    if (p >= nz->n_units || unit_label(nz->units[p]) != b) return NO_RULE;
    uint32_t u = nz->units[p];
    return unit_has_leaf(u) ? A_RULE : (long)(p ^ unit_offset(u));
}

/* Marks code point cp plain when the walk over all its bytes ended in NO_RULE (a unit left
 * means keys go on past the character). */
static void mark_plain(mg_spm_normalizer *nz, uint32_t cp, long state)
{
    if (state == NO_RULE) nz->plain_mb[cp >> 6] |= 1ull << (cp & 63);
}

/* nz->plain_mb (see spm_proto.h): the 2- and 3-byte characters, walked a byte level at a
 * time; a lead byte some user-defined symbol starts with makes none of its characters
 * plain. */
static void find_plain_mb(mg_spm_normalizer *nz)
{
    memset(nz->plain_mb, 0, sizeof nz->plain_mb);
    long root = nz->n_units ? (long)unit_offset(nz->units[0]) : NO_RULE;
    for (uint32_t lead = 0xC2; lead < 0xF0; lead++) {
        if (nz->user && mg_spm_trie_step(nz->user, 0, (uint8_t)lead) >= 0) continue;
        long s1 = rule_step(nz, root, (uint8_t)lead);
        for (uint32_t b1 = 0x80; b1 < 0xC0; b1++) {
            long s2 = rule_step(nz, s1, (uint8_t)b1);
            if (lead < 0xE0) {
                mark_plain(nz, (lead & 0x1F) << 6 | (b1 & 0x3F), s2);
                continue;
            }
            uint32_t hi = (lead & 0x0F) << 12 | (b1 & 0x3F) << 6;
            if (hi < 0x800 || (hi >= 0xD800 && hi < 0xE000)) continue; /* overlong, surrogate */
            for (uint32_t b2 = 0x80; b2 < 0xC0; b2++)
                mark_plain(nz, hi | (b2 & 0x3F), rule_step(nz, s2, (uint8_t)b2));
        }
    }
}

/* plain[b] (see spm_proto.h): the rule class of ASCII bytes no user-defined symbol starts
 * with; fast[b], out[b], out_len[b]; plain_mb. */
static void find_plain_bytes(mg_spm_normalizer *nz)
{
    find_plain_mb(nz);
    for (uint32_t b = 0; b < 0x80; b++) {
        int user = nz->user && mg_spm_trie_step(nz->user, 0, (uint8_t)b) >= 0;
        nz->plain[b] = user ? 0 : rule_class(nz, b);
        int space = b == ' ';
        nz->fast[b] = (uint8_t)((nz->plain[b] ? FAST_OK : 0) | (nz->plain[b] == 2 ? FAST_NEXT : 0) |
                                (space ? FAST_SPACE : 0));
        nz->out[b] = !space ? b : nz->escape_ws ? 0x8196E2u : ' ';
        nz->out_len[b] = space && nz->escape_ws ? 3 : 1;
    }
    nz->printable_ok = 1;
    for (uint32_t b = 0x21; b < 0x7F; b++)
        if (!(nz->fast[b] & FAST_OK)) nz->printable_ok = 0;
}

/* commonPrefixSearch: the longest of the first MAX_TRIE_RESULTS matches; 0 if none. */
static size_t longest_rule(const mg_spm_normalizer *nz, const uint8_t *s, size_t n,
                           uint32_t *value)
{
    if (nz->n_units == 0) return 0;
    size_t pos = unit_offset(nz->units[0]), best = 0, found = 0;
    for (size_t i = 0; i < n; i++) {
        pos ^= s[i];
        if (pos >= nz->n_units) return best;
        uint32_t u = nz->units[pos];
        if (unit_label(u) != s[i]) return best;
        pos ^= unit_offset(u);
        if (!unit_has_leaf(u)) continue;
        if (pos >= nz->n_units) return best;
        if (found++ < MAX_TRIE_RESULTS && (best == 0 || i + 1 > best)) {
            best = i + 1;
            *value = unit_value(nz->units[pos]);
        }
    }
    return best;
}

/* sentencepiece's IsValidDecodeUTF8: the length of a valid character at s, 0 if none
 * (a literal U+FFFD counts as valid). */
static size_t valid_char(const uint8_t *s, size_t n)
{
    uint32_t c = s[0];
    if (c < 0x80) return 1;
    size_t k = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (k == 0 || n < k) return 0;
    uint32_t cp = c & (0x7F >> k);
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[k] || (cp >= 0xD800 && cp < 0xE000) || cp > 0x10FFFF) return 0;
    return k;
}

typedef struct {
    const uint8_t *p;
    size_t n;
} span;

/* NormalizePrefix: the replacement of the longest rule at s; returns the bytes consumed. */
static size_t normalize_prefix(const mg_spm_normalizer *nz, const uint8_t *s, size_t n,
                               span *out)
{
    if (nz->user) {
        size_t k = mg_spm_trie_longest(nz->user, s, n);
        if (k > 0) {
            *out = (span){s, k};
            return k;
        }
    }
    uint32_t value = 0;
    size_t k = longest_rule(nz, s, n, &value);
    if (k > 0) {
        const char *r = value < nz->strs_len ? nz->strs + value : "";
        *out = (span){(const uint8_t *)r, strlen(r)};
        return k;
    }
    k = valid_char(s, n);
    if (k == 0) {
        *out = (span){(const uint8_t *)"\xEF\xBF\xBD", 3};
        return 1;
    }
    *out = (span){s, k};
    return k;
}

static mg_status add_ws(const mg_spm_normalizer *nz, mg_spm_buf *out)
{
    return nz->escape_ws ? mg_spm_buf_append(out, space_symbol, 3)
                         : mg_spm_buf_append(out, " ", 1);
}

/* Writes sp at *wp (room for 3 bytes per byte of sp), its spaces escaped, dropping its
 * leading spaces if the previous piece ended with one. */
static inline void emit_at(const mg_spm_normalizer *nz, span sp, int *prev_space, uint8_t **wp)
{
    size_t i = 0;
    if (*prev_space)
        while (i < sp.n && sp.p[i] == ' ') i++;
    if (i == sp.n) return;
    uint8_t *w = *wp;
    for (; i < sp.n; i++) {
        if (sp.p[i] == ' ' && nz->escape_ws) memcpy(w, space_symbol, 3), w += 3;
        else *w++ = sp.p[i];
    }
    *prev_space = sp.p[sp.n - 1] == ' ';
    *wp = w;
}

/* Room for `extra` more bytes in out. */
static inline mg_status room(mg_spm_buf *out, size_t extra)
{
    if (out->cap - out->n >= extra) return MG_OK;
    size_t cap = out->n + extra;
    uint8_t *v = mg_realloc(out->v, cap < 256 ? 256 : cap + cap / 2);
    if (!v) return MG_ERR_NOMEM;
    out->v = v;
    out->cap = cap < 256 ? 256 : cap + cap / 2;
    return MG_OK;
}

/* emit_at at the end of out, grown as needed. */
static mg_status emit(const mg_spm_normalizer *nz, span sp, int *prev_space, mg_spm_buf *out)
{
    MG_RETURN_IF(sp.n > (SIZE_MAX - out->n) / 3, MG_ERR_NOMEM, "buffer too big");
    MG_FORWARD(room(out, 3 * sp.n));
    uint8_t *w = out->v + out->n;
    emit_at(nz, sp, prev_space, &w);
    out->n = (size_t)(w - out->v);
    return MG_OK;
}

static void drop_trailing_space(const mg_spm_normalizer *nz, mg_spm_buf *out)
{
    const uint8_t *sym = nz->escape_ws ? space_symbol : (const uint8_t *)" ";
    size_t k = nz->escape_ws ? 3 : 1;
    while (out->n >= k && memcmp(out->v + out->n - k, sym, k) == 0) out->n -= k;
}

/* No rule or user-defined symbol matches at in[0] (n > 0). */
static inline int is_plain(const mg_spm_normalizer *nz, const uint8_t *in, size_t n)
{
    uint8_t c = nz->plain[in[0]];
    return c == 1 || (c == 2 && (n == 1 || in[1] < 0x80));
}

/* The whitespace after the leading spaces (remove_extra_whitespaces drops them). */
static size_t skip_leading_spaces(const mg_spm_normalizer *nz, const uint8_t *in, size_t n)
{
    size_t k = 0;
    while (nz->remove_extra_ws && k < n) {
        span sp;
        size_t m = normalize_prefix(nz, in + k, n - k, &sp);
        if (!(sp.n == 1 && sp.p[0] == ' ')) break;
        k += m;
    }
    return k;
}

/* The count of leading bytes of in[0, 16) in 0x21..0x7E (16 if all are). */
static inline size_t printable_run(const uint8_t *in)
{
#if defined(__SSE2__)
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)in);
    __m128i low = _mm_cmpgt_epi8(_mm_set1_epi8(0x21), v); /* signed: also the bytes >= 0x80 */
    __m128i high = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x7E));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(low, high)) | 0x10000u;
    return (size_t)__builtin_ctz(m);
#else
    size_t r = 0;
    while (r < 16 && in[r] >= 0x21 && in[r] <= 0x7E) r++;
    return r;
#endif
}

/* The length of the character at in[0, n) (in[0] >= 0x80) if it is a valid 2- or 3-byte
 * one set in nz->plain_mb, else 0. */
static inline size_t plain_mb_char(const mg_spm_normalizer *nz, const uint8_t *in, size_t n)
{
    uint32_t c = in[0], cp;
    size_t k;
    if (c >= 0xE0 && c < 0xF0 && n >= 3) {
        if (((in[1] ^ 0x80) | (in[2] ^ 0x80)) >= 0x40) return 0; /* not continuations */
        cp = (c & 0x0F) << 12 | (uint32_t)(in[1] & 0x3F) << 6 | (in[2] & 0x3F);
        if (cp < 0x800) return 0; /* overlong (surrogates are not in plain_mb) */
        k = 3;
    } else if (c >= 0xC2 && c < 0xE0 && n >= 2) {
        if ((in[1] ^ 0x80) >= 0x40) return 0;
        cp = (c & 0x1F) << 6 | (in[1] & 0x3F);
        k = 2;
    } else {
        return 0;
    }
    return nz->plain_mb[cp >> 6] >> (cp & 63) & 1 ? k : 0;
}

/* Whether s[0, 3) is a valid 3-byte character set in nz->plain_mb (the usual CJK one);
 * s[3] is read (a little-endian load of 4 bytes) but not looked at. */
static inline int plain_three(const mg_spm_normalizer *nz, const uint8_t *s)
{
    uint32_t x;
    memcpy(&x, s, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap32(x);
#endif
    if ((x & 0xC0C0F0u) != 0x8080E0u) return 0; /* a lead byte E0..EF, two continuations */
    uint32_t cp = (x & 0x0F) << 12 | (x >> 2 & 0xFC0) | (x >> 16 & 0x3F);
    return cp >= 0x800 && (nz->plain_mb[cp >> 6] >> (cp & 63) & 1); /* not overlong */
}

/* The bytes of the run of plain_mb characters at in[0, n), copied to *wp in one go. */
static inline size_t plain_mb_run(const mg_spm_normalizer *nz, const uint8_t *in, size_t n,
                                  uint8_t **wp)
{
    size_t i = 0, k;
    for (;;) {
        while (n - i >= 4 && plain_three(nz, in + i)) i += 3;
        if (i == n || in[i] < 0x80 || (k = plain_mb_char(nz, in + i, n - i)) == 0) break;
        i += k;
    }
    if (i == 3) memcpy(*wp, in, 3); /* one character: no call */
    else memcpy(*wp, in, i);
    *wp += i;
    return i;
}

/* The plain ASCII bytes at in[0, n - 1) (the last one is left to the caller), without
 * branches per byte: each writes 4 bytes (room: 3 per input byte + 1) and advances by its
 * length, 0 for a space after a collapsed one; runs of 0x21..0x7E are copied 16 bytes at
 * a time when all of them are plain (printable_ok). Returns the bytes consumed. */
static size_t ascii_run(const mg_spm_normalizer *nz, const uint8_t *in, size_t n,
                        uint8_t **wp, int *prev_space)
{
    uint8_t *w = *wp;
    size_t ps = (size_t)*prev_space, collapse = (size_t)(nz->remove_extra_ws != 0), i = 0;
    for (; i + 1 < n; i++) {
        if (nz->printable_ok && n - i > 16) { /* copy a run of 0x21..0x7E 16 bytes at a time */
            size_t r = printable_run(in + i);
            r -= r > 0 && in[i + r] >= 0x80; /* a FAST_NEXT byte would need its check */
            if (r > 0) {
                memcpy(w, in + i, 16);
                w += r;
                i += r - 1;
                ps = 0;
                continue;
            }
        }
        uint8_t c = in[i], f = nz->fast[c];
        /* one branch: FAST_NEXT (2) meets bit 1 of in[i + 1] >> 6, set iff it is >= 0x80 */
        if ((~f & FAST_OK) | (f & FAST_NEXT & (in[i + 1] >> 6))) break;
        size_t space = (size_t)(f >> 2);
        memcpy(w, &nz->out[c], 4);
        w += nz->out_len[c] & -(size_t)!(space & ps);
        ps = space & collapse;
    }
    *wp = w;
    *prev_space = (int)ps;
    return i;
}

/* The body of Normalize after the leading spaces: plain bytes (no rule, no user-defined
 * symbol) are copied and plain ' ' escaped and collapsed here (ascii_run, then one at a
 * time), with room for 3 output bytes per input byte (+1) kept ahead; the rest goes
 * through normalize_prefix + emit. */
static mg_status normalize_body(const mg_spm_normalizer *nz, const uint8_t *in, size_t n,
                                mg_spm_buf *out)
{
    int prev_space = nz->remove_extra_ws;
    const uint8_t *ws = nz->escape_ws ? space_symbol : (const uint8_t *)" ";
    size_t ws_n = nz->escape_ws ? 3 : 1;
    MG_FORWARD(room(out, 3 * n + 1));
    uint8_t *w = out->v + out->n;
    while (n > 0) {
        size_t k = ascii_run(nz, in, n, &w, &prev_space);
        if (k > 0) {
            in += k;
            n -= k;
            continue;
        }
        if (in[0] >= 0x80 && (k = plain_mb_run(nz, in, n, &w)) > 0) {
            in += k;
            n -= k;
            prev_space = 0;
            continue;
        }
        k = 1;
        if (in[0] != ' ' && is_plain(nz, in, n)) { /* a run of plain bytes */
            do *w++ = *in++, n--;
            while (n > 0 && in[0] != ' ' && is_plain(nz, in, n));
            prev_space = 0;
            continue;
        }
        if (in[0] == ' ' && is_plain(nz, in, n)) {
            if (!prev_space) memcpy(w, ws, ws_n), w += ws_n;
            prev_space = nz->remove_extra_ws;
        } else {
            span sp;
            k = normalize_prefix(nz, in, n, &sp);
            if (sp.n <= k) { /* within the room kept for the k bytes, even all spaces */
                emit_at(nz, sp, &prev_space, &w);
            } else {
                out->n = (size_t)(w - out->v);
                MG_FORWARD(emit(nz, sp, &prev_space, out));
                MG_FORWARD(room(out, 3 * (n - k) + 1));
                w = out->v + out->n;
            }
            if (!nz->remove_extra_ws) prev_space = 0;
        }
        in += k;
        n -= k;
    }
    out->n = (size_t)(w - out->v);
    return MG_OK;
}

mg_status mg_spm_normalize(const mg_spm_normalizer *nz, const uint8_t *in, size_t n,
                           mg_spm_buf *out)
{
    out->n = 0;
    size_t k = skip_leading_spaces(nz, in, n);
    in += k;
    n -= k;
    if (n == 0) return MG_OK;
    if (!nz->ws_suffix && nz->add_dummy_prefix) MG_FORWARD(add_ws(nz, out));
    MG_FORWARD(normalize_body(nz, in, n, out));
    if (nz->remove_extra_ws) drop_trailing_space(nz, out);
    if (nz->ws_suffix && nz->add_dummy_prefix) MG_FORWARD(add_ws(nz, out));
    return MG_OK;
}

/* ---- HF tokenizers' Precompiled normalizer (tok_hf_unigram.c) ---- */

mg_status mg_spm_charsmap_init(mg_spm_normalizer *nz, const uint8_t *blob, size_t n)
{
    memset(nz, 0, sizeof *nz);
    mg_status st = decode_charsmap(nz, (mg_spm_str){blob, n});
    if (st != MG_OK) mg_spm_normalizer_free(nz);
    else find_plain_bytes(nz);
    return st;
}

size_t mg_spm_charsmap_first(const mg_spm_normalizer *nz, const uint8_t *s, size_t n,
                             const char **repl, size_t *rlen)
{
    if (nz->n_units == 0) return 0;
    size_t pos = unit_offset(nz->units[0]);
    for (size_t i = 0; i < n; i++) {
        pos ^= s[i];
        if (pos >= nz->n_units) return 0;
        uint32_t u = nz->units[pos];
        if (unit_label(u) != s[i]) return 0;
        pos ^= unit_offset(u);
        if (!unit_has_leaf(u)) continue;
        if (pos >= nz->n_units) return 0;
        uint32_t value = unit_value(nz->units[pos]);
        *repl = value < nz->strs_len ? nz->strs + value : "";
        *rlen = strlen(*repl);
        return i + 1;
    }
    return 0;
}
