/* pretok_deepseek.c — the three Split stages of DeepSeek-V3 (tokenizer.json, Isolated):
 *   1: \p{N}{1,3}
 *   2: [\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+          (literal characters in the JSON)
 *   3: [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
 *       ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+      (literal CR/LF in the classes)
 * Unlike the other families these leave gaps: characters no alternative matches (stage 3:
 * Cc/Cf/Co/Cn that are not whitespace, digits not followed by a letter) are skipped by the
 * search, as the engine does.
 */
#include "pretok_internal.h"

static inline int is_crlf(uint8_t b) { return b == '\r' || b == '\n'; }

static inline unsigned cat_at(const uint8_t *s, size_t n, size_t i, size_t *len)
{
    return pk_cat(pk_props(s, n, i, len));
}

int mg_scan_deepseek1(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me)
{
    (void)cfg;
    size_t len;
    while (pos < n && !(cat_at(s, n, pos, &len) & PK_N)) pos += len;
    if (pos >= n) return 0;
    *ms = pos;
    for (int k = 0; k < 3 && pos < n && (cat_at(s, n, pos, &len) & PK_N); k++) pos += len;
    *me = pos;
    return 1;
}

static inline int is_cjk_kana(const uint8_t *s, size_t n, size_t i, size_t *len)
{
    uint32_t cp;
    *len = s[i] < 0x80 ? 1 : mg_utf8_decode(s + i, n - i, &cp);
    if (*len != 3) return 0;
    return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x30FF);
}

int mg_scan_deepseek2(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me)
{
    (void)cfg;
    size_t len;
    while (pos < n && !is_cjk_kana(s, n, pos, &len)) pos += len;
    if (pos >= n) return 0;
    *ms = pos;
    while (pos < n && is_cjk_kana(s, n, pos, &len)) pos += len;
    *me = pos;
    return 1;
}

static inline int is_ascii_punct(uint8_t b)
{
    return (b >= 0x21 && b <= 0x2F) || (b >= 0x3A && b <= 0x40) || (b >= 0x5B && b <= 0x60) ||
           (b >= 0x7B && b <= 0x7E);
}

static inline int is_ascii_letter(uint8_t b) { return (unsigned)((b | 0x20) - 'a') < 26; }

static size_t run_cat(const uint8_t *s, size_t n, size_t i, unsigned set)
{
    size_t len;
    while (i < n && (cat_at(s, n, i, &len) & set)) i += len;
    return i;
}

/* [\p{P}\p{S}]* then [\r\n]* from i. */
static size_t ps_crlf(const uint8_t *s, size_t n, size_t i)
{
    i = run_cat(s, n, i, PK_PS);
    while (i < n && is_crlf(s[i])) i++;
    return i;
}

/* The match of stage 3 starting exactly at i, or 0. */
static size_t stage3_at(const uint8_t *s, size_t n, size_t i)
{
    size_t len, len2 = 0;
    if (is_ascii_punct(s[i]) && i + 1 < n && is_ascii_letter(s[i + 1])) {
        size_t j = i + 1;
        while (j < n && is_ascii_letter(s[j])) j++;
        return j;
    }
    uint8_t props = pk_props(s, n, i, &len);
    unsigned c = pk_cat(props);
    unsigned next = i + len < n ? cat_at(s, n, i + len, &len2) : 0;
    int prefix = !(c & (PK_L | PK_PS)) && !is_crlf(s[i]);
    if (prefix && (next & (PK_L | PK_M))) return run_cat(s, n, i + len + len2, PK_L | PK_M);
    if (c & (PK_L | PK_M)) return run_cat(s, n, i + len, PK_L | PK_M);
    if (c & PK_PS) return ps_crlf(s, n, i + len);
    if (s[i] == ' ' && (next & PK_PS)) return ps_crlf(s, n, i + 1 + len2);
    if (!(props & MG_UC_WS)) return 0;
    size_t last, crlf, j = mg_pk_ws_run(s, n, i, &last, &crlf);
    return crlf ? crlf : pk_ws_tail(i, j, last, n);
}

int mg_scan_deepseek3(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me)
{
    (void)cfg;
    while (pos < n) {
        size_t e = stage3_at(s, n, pos);
        if (e) {
            *ms = pos;
            *me = e;
            return 1;
        }
        pos += pk_len(s, n, pos);
    }
    return 0;
}
