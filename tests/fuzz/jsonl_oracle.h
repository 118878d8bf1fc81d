/* jsonl_oracle.h — differential check of mg_jsonl_extract() against jansson, shared by
 * tests/fuzz/fuzz_jsonl.c and tests/unit/test_jsonl.c.
 *
 * jansson is strict RFC 8259 JSON; our extractor follows Python's json.loads, which also
 * accepts NaN/Infinity/-Infinity, lone surrogate escapes and numbers of any size. So the
 * line is first rewritten, keeping every byte offset, into what jansson can check:
 *   - NaN -> 0.0, Infinity -> 12345678, -Infinity -> -12345678 (as whole tokens outside
 *     strings only, between delimiters, so validity is unchanged);
 *   - exponent digits -> 0 (no double overflow), integers are decoded as reals;
 *   - a lone surrogate escape \uD8xx..\uDFxx -> \uFFFF (same length: 3 bytes decoded as
 *     EF BF BF, where ours writes ED xx xx; the comparison knows).
 * Then: jansson accepts  => ours must give the same outcome (values byte-equal, a list of
 * strings item by item, types and messages by category, the first non-string of a list
 * named by its 1-based index); jansson rejects => ours must reject the line as invalid JSON,
 * invalid UTF-8 or an empty line, except for the few jansson-only limits (depth counted
 * on scalars too, NUL in a key, mantissas beyond double range). A raw NUL byte (where
 * jansson's reader stops) must be rejected by ours.
 */
#ifndef MG_JSONL_ORACLE_H
#define MG_JSONL_ORACLE_H

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/jsonl.h"

static int oracle_is_delim(const uint8_t *s, size_t n, size_t i)
{
    if (i >= n) return 1;
    uint8_t c = s[i];
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' ||
           c == '[' || c == ']' || c == '{' || c == '}';
}

static int oracle_hex4(const uint8_t *p, unsigned *v)
{
    char tmp[5];
    memcpy(tmp, p, 4);
    tmp[4] = 0;
    for (int k = 0; k < 4; k++)
        if (!strchr("0123456789abcdefABCDEF", tmp[k]) || !tmp[k]) return 0;
    *v = (unsigned)strtoul(tmp, NULL, 16);
    return 1;
}

/* Rewrites the escape at s[i] == '\\' inside a string; returns its length. */
static size_t oracle_escape(uint8_t *s, size_t n, size_t i)
{
    unsigned c, c2;
    if (i + 6 > n || s[i + 1] != 'u' || !oracle_hex4(s + i + 2, &c)) return 2;
    if (c < 0xD800 || c > 0xDFFF) return 6;
    if (c <= 0xDBFF && i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' &&
        oracle_hex4(s + i + 8, &c2) && c2 >= 0xDC00 && c2 <= 0xDFFF)
        return 12; /* a proper pair: jansson joins it as Python does */
    memcpy(s + i + 2, "FFFF", 4);
    return 6;
}

/* Rewrites a token outside strings at s[i]; returns how many bytes it covered. */
static size_t oracle_token(uint8_t *s, size_t n, size_t i)
{
    static const struct { const char *from, *to; } words[] = {
        {"NaN", "0.0"}, {"Infinity", "12345678"}, {"-Infinity", "-12345678"}};
    int lead = i == 0 || oracle_is_delim(s, n, i - 1);
    for (size_t w = 0; w < 3 && lead; w++) {
        size_t len = strlen(words[w].from);
        if (i + len <= n && memcmp(s + i, words[w].from, len) == 0 &&
            oracle_is_delim(s, n, i + len)) {
            memcpy(s + i, words[w].to, len);
            return len;
        }
    }
    if ((s[i] == 'e' || s[i] == 'E') && i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') {
        size_t j = i + 1;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        for (; j < n && s[j] >= '0' && s[j] <= '9'; j++) s[j] = '0';
        return j - i;
    }
    return 1;
}

static void oracle_sanitize(uint8_t *s, size_t n)
{
    int in_str = 0;
    for (size_t i = 0; i < n;) {
        if (in_str) {
            if (s[i] == '\\') i += oracle_escape(s, n, i);
            else in_str = s[i++] != '"';
        } else if (s[i] == '"') {
            in_str = 1;
            i++;
        } else {
            i += oracle_token(s, n, i);
        }
    }
}

/* ours (len bytes, lone lone surrogates) == jansson's string, where EF BF BF in jansson's
 * may stand for one of our 3-byte surrogates. */
static int oracle_same_string(const char *ours, size_t len, size_t lone, const char *ref,
                              size_t ref_len)
{
    if (len != ref_len || (len && !ours) || (ours && ours[len] != 0)) return 0;
    size_t seen = 0;
    for (size_t i = 0; i < len;) {
        const uint8_t *a = (const uint8_t *)ours + i, *b = (const uint8_t *)ref + i;
        if (i + 3 <= len && a[0] == 0xED && a[1] >= 0xA0 && b[0] == 0xEF && b[1] == 0xBF &&
            b[2] == 0xBF) {
            seen++;
            i += 3;
        } else if (*a == *b) {
            i++;
        } else {
            return 0;
        }
    }
    return seen == lone;
}

static const char *oracle_type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static int oracle_is_syntax_error(mg_status st)
{
    const char *m = mg_last_error();
    return st == MG_ERR_FORMAT && (strncmp(m, "invalid JSON at column ", 23) == 0 ||
                                   strncmp(m, "invalid UTF-8 at column ", 24) == 0 ||
                                   strcmp(m, "empty line") == 0);
}

/* Index (from 1) of the first non-string element of array v, 0 if all are strings. */
static size_t oracle_first_non_string(const json_t *v)
{
    for (size_t k = 0; k < json_array_size(v); k++)
        if (!json_is_string(json_array_get(v, k))) return k + 1;
    return 0;
}

/* Our string value out against jansson's string v. */
static int oracle_same_string_value(const mg_jsonl_value *out, const json_t *v)
{
    return !out->is_list && out->n_items == 1 && out->items && out->items[0].str == out->str &&
           out->items[0].len == out->len && out->items[0].lone_surrogates == out->lone_surrogates &&
           oracle_same_string(out->str, out->len, out->lone_surrogates, json_string_value(v),
                              json_string_length(v));
}

/* Our list value out against jansson's array of strings v. */
static int oracle_same_list(const mg_jsonl_value *out, const json_t *v)
{
    size_t lone = 0;
    if (!out->is_list || out->str || out->n_items != json_array_size(v)) return 0;
    for (size_t k = 0; k < out->n_items; k++) {
        const mg_jsonl_item *it = &out->items[k];
        const json_t *e = json_array_get(v, k);
        if (!oracle_same_string(it->str, it->len, it->lone_surrogates, json_string_value(e),
                                json_string_length(e)))
            return 0;
        lone += it->lone_surrogates;
    }
    return lone == out->lone_surrogates;
}

/* Ours vs jansson's object j; NULL if consistent, else what differs. */
static const char *oracle_compare_object(mg_status st, const json_t *j, const char *const *keys,
                                         size_t n, const mg_jsonl_value *out)
{
    char want[256];
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(j, keys[i]);
        size_t bad = v && json_is_array(v) ? oracle_first_non_string(v) : 0;
        if (v && json_is_string(v)) {
            if (st == MG_OK && !oracle_same_string_value(&out[i], v))
                return "different string value";
            continue;
        }
        if (v && json_is_array(v) && !bad) {
            if (st == MG_OK && !oracle_same_list(&out[i], v)) return "different list value";
            continue;
        }
        if (!v) snprintf(want, sizeof want, "missing key \"%s\"", keys[i]);
        else if (bad) snprintf(want, sizeof want, "key \"%s\" item %zu is %s, expected a string",
                               keys[i], bad, oracle_type_phrase(json_array_get(v, bad - 1)));
        else snprintf(want, sizeof want, "key \"%s\" is %s, expected a string", keys[i],
                      oracle_type_phrase(v));
        return st == MG_ERR_FORMAT && strcmp(mg_last_error(), want) == 0 ? NULL
                                                                          : "different key error";
    }
    return st == MG_OK ? NULL : "ours failed where jansson accepted";
}

/* Runs both parsers on line; NULL if they agree, else a description. */
static const char *jsonl_oracle_check(mg_jsonl *p, const uint8_t *line, size_t len,
                                      const char *const *keys, size_t n, mg_jsonl_value *out)
{
    mg_status st = mg_jsonl_extract(p, (const char *)line, len, keys, n, out);
    if (st == MG_ERR_NOMEM) return NULL;
    if (len && memchr(line, 0, len)) /* jansson stops at a raw NUL; JSON never allows one */
        return oracle_is_syntax_error(st) ? NULL : "ours accepted a raw NUL byte";
    uint8_t *copy = malloc(len + 1);
    if (len) memcpy(copy, line, len);
    oracle_sanitize(copy, len);
    json_error_t err;
    json_t *j = json_loadb((const char *)copy, len,
                           JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, &err);
    free(copy);
    const char *diff = NULL;
    if (!j) {
        int jansson_only = strstr(err.text, "maximum parsing depth") ||
                           strstr(err.text, "NUL byte in object key") ||
                           strstr(err.text, "real number overflow");
        if (!jansson_only && !oracle_is_syntax_error(st))
            diff = "ours accepted what jansson rejected";
    } else if (!json_is_object(j)) {
        if (st != MG_ERR_FORMAT || strcmp(mg_last_error(), "not a JSON object") != 0)
            diff = "jansson: not an object, ours disagrees";
    } else {
        diff = oracle_compare_object(st, j, keys, n, out);
    }
    json_decref(j);
    return diff;
}

#endif
