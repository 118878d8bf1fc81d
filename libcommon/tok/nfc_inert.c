/* nfc_inert.c — the table of NFC-inert code points; contract in nfc_inert.h. */
#include "tok/nfc_inert.h"

#include "mg/unicode.h"

#if MG_HAVE_UTF8PROC
#include <pthread.h>
#include <utf8proc.h>

#define CP_COUNT 0x110000u

static uint64_t inert_bits[CP_COUNT / 64];
static pthread_once_t inert_once = PTHREAD_ONCE_INIT;

static void clear_bit(uint32_t cp) { inert_bits[cp / 64] &= ~(1ull << (cp % 64)); }

static int canonical_decomposition(const utf8proc_property_t *p)
{
    return p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0;
}

static int hangul(uint32_t cp)
{
    return (cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xA960 && cp <= 0xA97F) ||
           (cp >= 0xAC00 && cp <= 0xD7FF);
}

/* Clears the elements after the first of cp's full canonical decomposition. */
static void clear_later_elements(uint32_t cp)
{
    utf8proc_int32_t seq[32];
    int boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char((utf8proc_int32_t)cp, seq, 32,
                                                 UTF8PROC_DECOMPOSE, &boundclass);
    for (utf8proc_ssize_t i = 1; i < n && i < 32; i++) clear_bit((uint32_t)seq[i]);
}

static void build(void)
{
    for (uint32_t cp = 0; cp < CP_COUNT; cp++) {
        const utf8proc_property_t *p = utf8proc_get_property((utf8proc_int32_t)cp);
        if (p->combining_class == 0 && !canonical_decomposition(p) && !hangul(cp) &&
            !(cp >= 0xD800 && cp <= 0xDFFF))
            inert_bits[cp / 64] |= 1ull << (cp % 64);
    }
    for (uint32_t cp = 0; cp < CP_COUNT; cp++)
        if (canonical_decomposition(utf8proc_get_property((utf8proc_int32_t)cp)))
            clear_later_elements(cp);
}

static int table_ready(void) { return pthread_once(&inert_once, build) == 0; }

static int bit(uint32_t cp) { return cp < CP_COUNT && (inert_bits[cp / 64] >> (cp % 64) & 1); }

#else

static int table_ready(void) { return 0; }

static int bit(uint32_t cp)
{
    (void)cp;
    return 0;
}

#endif

int mg_nfc_inert(uint32_t cp) { return table_ready() && bit(cp); }

int mg_nfc_inert_run(const uint8_t *s, size_t n)
{
    if (!table_ready()) return 0;
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        i += mg_utf8_decode(s + i, n - i, &cp);
        if (cp == MG_UC_BAD || !bit(cp)) return 0;
    }
    return 1;
}
