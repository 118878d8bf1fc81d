/* zip_write.c — the stored (uncompressed) ZIP64 writer of mg/zip.h, writing what
 * PyTorch's PyTorchStreamWriter (miniz) writes: local headers with flags 0x0808 and zero
 * crc/sizes, an "FB" extra padding every record's data to 64 bytes, the data, a data
 * descriptor, then the central directory and, always, ZIP64 EOCD + locator + EOCD.
 *
 * Contract: records are written one at a time (begin / write... / end) with the size given
 * at begin; end fails if a different number of bytes was written. CRC-32 (IEEE) is computed
 * while streaming (mg_zip_writer_writev: over each group of pieces of about CRC_CHUNK bytes
 * just before pwritev() writes that group from the caller's memory). The writer appends to
 * a caller-owned mg_out and never commits it; the archive starts where the mg_out stood
 * when the writer was created (its offsets count from there: an archive nested in a bigger
 * file, as DCP data files hold them). Entry names are copied.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "mg/grow.h"
#include "mg/zip.h"
#include "zip_internal.h"

static void wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void wr32(uint8_t *p, uint32_t v) { wr16(p, v & 0xFFFF), wr16(p + 2, v >> 16); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v), wr32(p + 4, (uint32_t)(v >> 32)); }

static uint32_t clamp32(uint64_t v) { return v >= MG_ZIP_U32_MAX ? MG_ZIP_U32_MAX : (uint32_t)v; }

int mg_zip_needs_zip64(const mg_zip_rec *r)
{
    return r->uncomp >= MG_ZIP_U32_MAX || r->offset >= MG_ZIP_U32_MAX;
}

/* ZIP64 extra with the fields that overflow; local headers carry both sizes if either. */
static size_t zip64_extra(uint8_t *p, const mg_zip_rec *r, int local)
{
    size_t n = 4;
    int sizes = r->uncomp >= MG_ZIP_U32_MAX || r->comp >= MG_ZIP_U32_MAX;
    if (local ? sizes : r->uncomp >= MG_ZIP_U32_MAX) wr64(p + n, r->uncomp), n += 8;
    if (local ? sizes : r->comp >= MG_ZIP_U32_MAX) wr64(p + n, r->comp), n += 8;
    if (r->offset >= MG_ZIP_U32_MAX) wr64(p + n, r->offset), n += 8;
    wr16(p, 0x0001);
    wr16(p + 2, (uint32_t)(n - 4));
    return n;
}

size_t mg_zip_local_encode(uint8_t *buf, const mg_zip_rec *r)
{
    memset(buf, 0, 30);
    wr32(buf, 0x04034b50);
    wr16(buf + 6, 0x0808);
    wr16(buf + 26, (uint32_t)r->name_len);
    memcpy(buf + 30, r->name, r->name_len);
    size_t n = 30 + r->name_len;
    if (mg_zip_needs_zip64(r)) {
        n += zip64_extra(buf + n, r, 1);
        if (r->uncomp >= MG_ZIP_U32_MAX) {
            wr32(buf + 18, MG_ZIP_U32_MAX);
            wr32(buf + 22, MG_ZIP_U32_MAX);
        }
    }
    uint64_t start = r->offset + n + 4;
    size_t pad = (size_t)((MG_ZIP_ALIGN - start % MG_ZIP_ALIGN) % MG_ZIP_ALIGN);
    wr16(buf + n, 0x4246); /* "FB" */
    wr16(buf + n + 2, (uint32_t)pad);
    memset(buf + n + 4, 'Z', pad);
    n += 4 + pad;
    wr16(buf + 28, (uint32_t)(n - 30 - r->name_len));
    return n;
}

size_t mg_zip_descriptor_encode(uint8_t *buf, const mg_zip_rec *r, int zip64)
{
    wr32(buf, 0x08074b50);
    wr32(buf + 4, r->crc);
    if (zip64) {
        wr64(buf + 8, r->comp);
        wr64(buf + 16, r->uncomp);
        return 24;
    }
    wr32(buf + 8, (uint32_t)r->comp);
    wr32(buf + 12, (uint32_t)r->uncomp);
    return 16;
}

size_t mg_zip_central_encode(uint8_t *buf, const mg_zip_rec *r)
{
    memset(buf, 0, 46);
    wr32(buf, 0x02014b50);
    wr16(buf + 8, r->flags);
    wr16(buf + 10, r->method);
    wr32(buf + 16, r->crc);
    wr32(buf + 20, clamp32(r->comp));
    wr32(buf + 24, clamp32(r->uncomp));
    wr16(buf + 28, (uint32_t)r->name_len);
    wr32(buf + 42, clamp32(r->offset));
    memcpy(buf + 46, r->name, r->name_len);
    size_t n = 46 + r->name_len;
    if (r->comp >= MG_ZIP_U32_MAX || r->uncomp >= MG_ZIP_U32_MAX || r->offset >= MG_ZIP_U32_MAX) {
        size_t x = zip64_extra(buf + n, r, 0);
        wr16(buf + 30, (uint32_t)x);
        n += x;
    }
    return n;
}

size_t mg_zip_end_encode(uint8_t *buf, const mg_zip_end *e)
{
    uint8_t *z = buf, *loc = buf + 56, *eo = buf + 76;
    memset(buf, 0, 98);
    wr32(z, 0x06064b50);
    wr64(z + 4, 44);
    wr16(z + 12, 0x031e);
    wr16(z + 14, 0x002d);
    wr64(z + 24, e->n_entries);
    wr64(z + 32, e->n_entries);
    wr64(z + 40, e->cd_size);
    wr64(z + 48, e->cd_offset);
    wr32(loc, 0x07064b50);
    wr64(loc + 8, e->end_offset);
    wr32(loc + 16, 1);
    wr32(eo, 0x06054b50);
    uint32_t n16 = e->n_entries >= 0xFFFF ? 0xFFFF : (uint32_t)e->n_entries;
    wr16(eo + 8, n16);
    wr16(eo + 10, n16);
    wr32(eo + 12, clamp32(e->cd_size));
    wr32(eo + 16, clamp32(e->cd_offset));
    return 98;
}

/* ---- CRC-32 (IEEE, reflected 0xEDB88320) ----
 *
 * Two implementations with identical results: slicing by 8 (portable; the reference, also
 * used for short inputs and tails) and, on x86 CPUs with PCLMULQDQ and SSE4.1 (detected at
 * run time), carry-less multiplication folding after Gopal et al., "Fast CRC Computation
 * for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), reflected variant:
 * four 128-bit lanes are folded 512 bits at a time, then into one lane, then 128 -> 64 ->
 * 32 bits and a Barrett reduction. The constants are powers of x modulo P(x), bit-reflected
 * and shifted left by one (the product of two reflected operands is one bit short):
 *   K1 = x^(4*128+32) mod P, K2 = x^(4*128-32) mod P   (fold by 512 bits)
 *   K3 = x^(128+32) mod P,   K4 = x^(128-32) mod P     (fold by 128 bits)
 *   K5 = x^64 mod P, MU = floor(x^64 / P), POLY = P    (final reduction)
 * The unit tests compare both versions on random lengths and alignments. */

static uint32_t crc_table[8][256];
static int crc_have_clmul;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_have_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

/* Table CRC over the (already inverted) state. */
static uint32_t crc_slice8(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t a = mg_rd32(p) ^ crc, b = mg_rd32(p + 4);
        crc = crc_table[7][a & 0xFF] ^ crc_table[6][(a >> 8) & 0xFF] ^
              crc_table[5][(a >> 16) & 0xFF] ^ crc_table[4][a >> 24] ^
              crc_table[3][b & 0xFF] ^ crc_table[2][(b >> 8) & 0xFF] ^
              crc_table[1][(b >> 16) & 0xFF] ^ crc_table[0][b >> 24];
        p += 8;
        len -= 8;
    }
    while (len--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

uint32_t mg_crc32_table(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    return ~crc_slice8(~crc, data, len);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define CRC_TARGET __attribute__((target("pclmul,sse4.1")))

/* x * k folded 128 bits further: x.lo * k.lo ^ x.hi * k.hi. */
CRC_TARGET static inline __m128i fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

CRC_TARGET static inline __m128i load(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* The 128-bit remainder x reduced to the 32-bit CRC state. */
CRC_TARGET static uint32_t clmul_reduce(__m128i x)
{
    const __m128i k34 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i poly_mu = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    x = _mm_xor_si128(_mm_clmulepi64_si128(x, k34, 0x10), _mm_srli_si128(x, 8)); /* 128 -> 96 */
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k5, 0x00),
                      _mm_srli_si128(x, 4)); /* 96 -> 64 */
    __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly_mu, 0x10); /* Barrett */
    t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly_mu, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x), 1);
}

/* Folding CRC of the (inverted) state over p[0, len), len >= 64; the tail (len % 16 bytes)
 * goes through the table. */
CRC_TARGET static uint32_t crc_clmul(uint32_t crc, const uint8_t *p, size_t len)
{
    const __m128i k12 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k34 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
    p += 64, len -= 64;
    for (; len >= 64; p += 64, len -= 64) {
        x0 = _mm_xor_si128(fold(x0, k12), load(p));
        x1 = _mm_xor_si128(fold(x1, k12), load(p + 16));
        x2 = _mm_xor_si128(fold(x2, k12), load(p + 32));
        x3 = _mm_xor_si128(fold(x3, k12), load(p + 48));
    }
    x0 = _mm_xor_si128(fold(x0, k34), x1);
    x0 = _mm_xor_si128(fold(x0, k34), x2);
    x0 = _mm_xor_si128(fold(x0, k34), x3);
    for (; len >= 16; p += 16, len -= 16) x0 = _mm_xor_si128(fold(x0, k34), load(p));
    return crc_slice8(clmul_reduce(x0), p, len);
}

int mg_crc32_clmul_available(void)
{
    pthread_once(&crc_once, crc_init);
    return crc_have_clmul;
}

uint32_t mg_crc32_clmul(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc_init);
    if (!crc_have_clmul || len < 64) return ~crc_slice8(~crc, data, len);
    return ~crc_clmul(~crc, data, len);
}
#else
int mg_crc32_clmul_available(void) { return 0; }

uint32_t mg_crc32_clmul(uint32_t crc, const void *data, size_t len)
{
    return mg_crc32_table(crc, data, len);
}
#endif

uint32_t mg_crc32(uint32_t crc, const void *data, size_t len)
{
    return mg_crc32_clmul(crc, data, len);
}

/* ---- writer ---- */

/* Data is checksummed and handed to the file in pieces of this size, so that the write
 * copies what the CRC has just brought into the cache. */
#define CRC_CHUNK ((size_t)256 << 10)

struct mg_zip_writer {
    mg_out *out;
    mg_zip_rec *recs;
    size_t n, cap;
    int open;       /* a record is between begin and end */
    uint64_t written;
    uint64_t base;  /* offset of the archive's first byte in out */
};

mg_status mg_zip_writer_create(mg_zip_writer **w, mg_out *out)
{
    *w = mg_calloc(1, sizeof(**w));
    if (!*w) return MG_ERR_NOMEM;
    (*w)->out = out;
    (*w)->base = mg_out_offset(out);
    return MG_OK;
}

void mg_zip_writer_free(mg_zip_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free((char *)(uintptr_t)w->recs[i].name);
    free(w->recs);
    free(w);
}

mg_status mg_zip_writer_begin(mg_zip_writer *w, const char *name, uint64_t size)
{
    MG_ASSERT(!w->open);
    size_t len = strlen(name);
    if (len == 0 || len > 0xFFFF - MG_ZIP_HDR_MAX)
        return mg_error_set(MG_ERR_ARG, "%s: bad zip entry name \"%s\"", mg_out_path(w->out), name);
    MG_FORWARD(MG_GROW(w->recs, w->cap, w->n + 1, 32));
    char *copy = mg_malloc(len + 1);
    uint8_t *hdr = mg_malloc(MG_ZIP_HDR_MAX + len);
    if (!copy || !hdr) {
        free(copy);
        free(hdr);
        return MG_ERR_NOMEM;
    }
    memcpy(copy, name, len + 1);
    mg_zip_rec *r = &w->recs[w->n++];
    *r = (mg_zip_rec){.name = copy, .name_len = len, .flags = 0x0808, .comp = size,
                      .uncomp = size, .offset = mg_out_offset(w->out) - w->base};
    size_t n = mg_zip_local_encode(hdr, r);
    mg_status st = mg_out_write(w->out, hdr, n);
    free(hdr);
    w->open = 1;
    w->written = 0;
    return st;
}

mg_status mg_zip_writer_write(mg_zip_writer *w, const void *data, size_t len)
{
    MG_ASSERT(w->open);
    mg_zip_rec *r = &w->recs[w->n - 1];
    if (len > r->uncomp - w->written)
        return mg_error_set(MG_ERR_ARG, "%s: zip entry \"%s\" longer than announced",
                            mg_out_path(w->out), r->name);
    w->written += len;
    const uint8_t *p = data;
    for (size_t n; len > 0; p += n, len -= n) { /* each piece is written while cache-hot */
        n = len < CRC_CHUNK ? len : CRC_CHUNK;
        r->crc = mg_crc32(r->crc, p, n);
        MG_FORWARD(mg_out_write(w->out, p, n));
    }
    return MG_OK;
}

/* The first pieces of iov[0..n) that make up about CRC_CHUNK bytes (at least one), added
 * to *crc: their count. */
static int crc_group(const struct iovec *iov, int n, uint32_t *crc)
{
    size_t bytes = 0;
    int k = 0;
    for (; k < n && (k == 0 || bytes + iov[k].iov_len <= CRC_CHUNK); k++) {
        *crc = mg_crc32(*crc, iov[k].iov_base, iov[k].iov_len);
        bytes += iov[k].iov_len;
    }
    return k;
}

mg_status mg_zip_writer_writev(mg_zip_writer *w, const struct iovec *iov, int n)
{
    MG_ASSERT(w->open);
    mg_zip_rec *r = &w->recs[w->n - 1];
    uint64_t len = 0;
    for (int i = 0; i < n; i++) len += iov[i].iov_len;
    if (len > r->uncomp - w->written)
        return mg_error_set(MG_ERR_ARG, "%s: zip entry \"%s\" longer than announced",
                            mg_out_path(w->out), r->name);
    w->written += len;
    for (int k; n > 0; iov += k, n -= k) { /* each group is written while cache-hot */
        k = crc_group(iov, n, &r->crc);
        MG_FORWARD(mg_out_writev(w->out, iov, k));
    }
    return MG_OK;
}

static void crc_see(void *crc, const void *p, size_t n)
{
    *(uint32_t *)crc = mg_crc32(*(uint32_t *)crc, p, n);
}

mg_status mg_zip_writer_copy(mg_zip_writer *w, int src_fd, uint64_t src_off, size_t len)
{
    MG_ASSERT(w->open);
    mg_zip_rec *r = &w->recs[w->n - 1];
    if (len > r->uncomp - w->written)
        return mg_error_set(MG_ERR_ARG, "%s: zip entry \"%s\" longer than announced",
                            mg_out_path(w->out), r->name);
    w->written += len;
    return mg_out_copy_seen(w->out, src_fd, src_off, len, crc_see, &r->crc);
}

mg_status mg_zip_writer_end(mg_zip_writer *w)
{
    MG_ASSERT(w->open);
    mg_zip_rec *r = &w->recs[w->n - 1];
    w->open = 0;
    if (w->written != r->uncomp)
        return mg_error_set(MG_ERR_ARG, "%s: zip entry \"%s\" has %llu of %llu bytes",
                            mg_out_path(w->out), r->name, (unsigned long long)w->written,
                            (unsigned long long)r->uncomp);
    uint8_t dd[24];
    return mg_out_write(w->out, dd, mg_zip_descriptor_encode(dd, r, mg_zip_needs_zip64(r)));
}

mg_status mg_zip_writer_add(mg_zip_writer *w, const char *name, const void *data, size_t len)
{
    MG_FORWARD(mg_zip_writer_begin(w, name, len));
    MG_FORWARD(mg_zip_writer_write(w, data, len));
    return mg_zip_writer_end(w);
}

mg_status mg_zip_writer_finish(mg_zip_writer *w)
{
    MG_ASSERT(!w->open);
    mg_zip_end e = {.n_entries = w->n, .cd_offset = mg_out_offset(w->out) - w->base};
    for (size_t i = 0; i < w->n; i++) {
        uint8_t *buf = mg_malloc(MG_ZIP_HDR_MAX + w->recs[i].name_len);
        if (!buf) return MG_ERR_NOMEM;
        size_t n = mg_zip_central_encode(buf, &w->recs[i]);
        mg_status st = mg_out_write(w->out, buf, n);
        free(buf);
        MG_FORWARD(st);
    }
    e.end_offset = mg_out_offset(w->out) - w->base;
    e.cd_size = e.end_offset - e.cd_offset;
    uint8_t end[98];
    return mg_out_write(w->out, end, mg_zip_end_encode(end, &e));
}
