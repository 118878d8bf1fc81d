/* fuzz_pretok.c — libFuzzer target for the pre-tokenizer (mg/pretok.h).
 *
 * Input: byte 0 picks a family (and for byte 0 >= 128 a non-Isolated behaviour/invert),
 * the rest is the text. Valid UTF-8 whose code points Debian's Oniguruma knows (Unicode
 * 14.0 class data) is split by the scanner and by Oniguruma on the same regex; any
 * difference aborts. Any other input is split by the scanner only, which must not crash
 * and, for the families whose matches tile the text, must cover it exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/pretok.h"
#include "mg/unicode.h"

enum { NF = MG_PRETOK_FAMILY_COUNT_ - 1 };

static mg_pretok *fast[NF][10], *slow[NF][10];
static mg_pretok_scratch *scratch;

static mg_pretok *build(mg_pretok_family f, int variant, int generic)
{
    mg_pretok *p;
    mg_split_behavior b = (mg_split_behavior)(variant / 2);
    if (mg_pretok_create(&p) != MG_OK ||
        mg_pretok_add_regex_dialect(p, mg_pretok_family_regex(f), mg_pretok_family_dialect(f),
                                    b, variant & 1) != MG_OK)
        abort();
    if (generic) mg_pretok_force_generic(p, 1);
    return p;
}

/* 1 if every code point's class is as in Unicode 14.0 (what Oniguruma 6.9.8 knows). */
static int old_unicode(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += mg_utf8_decode(s + i, n - i, &cp);
        if (MG_UC_AGE(mg_uc_props(cp)) != 0) return 0;
    }
    return 1;
}

static void check_tiles(const mg_spans *sp, size_t n)
{
    size_t at = 0;
    for (size_t i = 0; i < sp->n; i++) {
        if (sp->v[i].off != at || sp->v[i].len == 0) abort();
        at += sp->v[i].len;
    }
    if (at != n) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    if (!scratch && mg_pretok_scratch_create(&scratch) != MG_OK) abort();
    int fi = data[0] % NF, variant = data[0] >= 128 ? (data[0] >> 3) % 10 : 0;
    mg_pretok_family f = (mg_pretok_family)(fi + 1);
    if (!fast[fi][variant]) {
        fast[fi][variant] = build(f, variant, 0);
        slow[fi][variant] = build(f, variant, 1);
    }
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    mg_spans a = {0}, b = {0};
    if (mg_pretok_split(fast[fi][variant], scratch, text, n, &a) != MG_OK) abort();
    int tiles = variant == 0 && f != MG_PRETOK_DEEPSEEK_V3_1 && f != MG_PRETOK_DEEPSEEK_V3_2 &&
                f != MG_PRETOK_DEEPSEEK_V3_3;
    if (tiles) check_tiles(&a, n);
    if (mg_utf8_validate(data + 1, n) == n && old_unicode(data + 1, n)) {
        if (mg_pretok_split(slow[fi][variant], scratch, text, n, &b) != MG_OK) abort();
        if (a.n != b.n || (a.n && memcmp(a.v, b.v, a.n * sizeof a.v[0]) != 0)) {
            fprintf(stderr, "scanner and Oniguruma differ: family %s variant %d\n",
                    mg_pretok_family_name(f), variant);
            abort();
        }
    }
    mg_spans_free(&a);
    mg_spans_free(&b);
    return 0;
}
