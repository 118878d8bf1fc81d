/* zip_read.c — the ZIP reader of mg/zip.h.
 *
 * Contract: parses a caller-owned slice: end records (the last EOCD within the final
 * 65557 bytes, then the ZIP64 locator/EOCD when present), the central directory (its
 * sizes, offsets and ZIP64 extras) and each local header (only to find where the data
 * starts). Every offset and length is checked against the slice before use; errors are
 * MG_ERR_FORMAT "LABEL: offset N: what" (N absolute in the slice). Entry names are copied
 * and indexed (sorted) for mg_zip_find.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/zip.h"
#include "zip_internal.h"

struct mg_zip {
    const uint8_t *data;
    size_t size;
    char *label;
    mg_zip_entry *entries;
    size_t n;
    size_t *sorted; /* indices of entries sorted by name */
};

static mg_status bad(const char *label, uint64_t at, const char *what)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: offset %llu: %s", label, (unsigned long long)at, what);
}

/* ---- end records ---- */

static int find_eocd(const uint8_t *d, size_t size, size_t *pos)
{
    size_t lo = size - 22 > 65535 ? size - 22 - 65535 : 0;
    for (size_t i = size - 22 + 1; i-- > lo;)
        if (mg_rd32(d + i) == 0x06054b50 && i + 22 + mg_rd16(d + i + 20) <= size) {
            *pos = i;
            return 1;
        }
    return 0;
}

static mg_status zip64_end(const uint8_t *d, size_t size, size_t eocd, const char *label,
                           mg_zip_end *e)
{
    const uint8_t *loc = d + eocd - 20;
    uint64_t z = mg_rd64(loc + 8);
    if (z > size || size - z < 56 || z > eocd - 20)
        return bad(label, eocd - 20, "ZIP64 end record offset past the end");
    const uint8_t *r = d + z;
    if (mg_rd32(r) != 0x06064b50) return bad(label, z, "bad ZIP64 end record signature");
    if (mg_rd32(r + 16) != 0 || mg_rd32(r + 20) != 0)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: multi-disk ZIP files are not supported", label);
    e->n_entries = mg_rd64(r + 32);
    e->cd_size = mg_rd64(r + 40);
    e->cd_offset = mg_rd64(r + 48);
    e->end_offset = z;
    return MG_OK;
}

mg_status mg_zip_end_decode(const uint8_t *d, size_t size, const char *label, mg_zip_end *e)
{
    size_t eocd;
    if (size < 22) return bad(label, 0, "too small for a ZIP file");
    if (!find_eocd(d, size, &eocd)) return bad(label, size, "no ZIP end of central directory record");
    const uint8_t *r = d + eocd;
    if (mg_rd16(r + 4) != 0 || mg_rd16(r + 6) != 0)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: multi-disk ZIP files are not supported", label);
    if (eocd >= 20 && mg_rd32(d + eocd - 20) == 0x07064b50) return zip64_end(d, size, eocd, label, e);
    e->n_entries = mg_rd16(r + 10);
    e->cd_size = mg_rd32(r + 12);
    e->cd_offset = mg_rd32(r + 16);
    e->end_offset = eocd;
    return MG_OK;
}

/* ---- central directory ---- */

static mg_status zip64_fields(const uint8_t *x, size_t xlen, uint64_t at, const char *label,
                              mg_zip_rec *r)
{
    uint64_t *want[3] = {r->uncomp == MG_ZIP_U32_MAX ? &r->uncomp : NULL,
                         r->comp == MG_ZIP_U32_MAX ? &r->comp : NULL,
                         r->offset == MG_ZIP_U32_MAX ? &r->offset : NULL};
    for (size_t i = 0; i + 4 <= xlen;) {
        uint16_t id = mg_rd16(x + i), n = mg_rd16(x + i + 2);
        if (n > xlen - i - 4) return bad(label, at, "extra field runs past its header");
        if (id == 0x0001) {
            size_t k = 0;
            for (int f = 0; f < 3; f++) {
                if (!want[f]) continue;
                if (k + 8 > n) return bad(label, at, "ZIP64 extra field too short");
                *want[f] = mg_rd64(x + i + 4 + k);
                k += 8;
            }
            return MG_OK;
        }
        i += 4 + (size_t)n;
    }
    if (want[0] || want[1] || want[2]) return bad(label, at, "missing ZIP64 extra field");
    return MG_OK;
}

mg_status mg_zip_central_decode(const uint8_t *p, size_t avail, uint64_t at, const char *label,
                                mg_zip_rec *r, size_t *used)
{
    if (avail < 46) return bad(label, at, "central directory truncated");
    if (mg_rd32(p) != 0x02014b50) return bad(label, at, "bad central directory signature");
    size_t nl = mg_rd16(p + 28), xl = mg_rd16(p + 30), cl = mg_rd16(p + 32);
    if (46 + nl + xl + cl > avail) return bad(label, at, "central directory entry truncated");
    *r = (mg_zip_rec){.name = (const char *)p + 46, .name_len = nl, .flags = mg_rd16(p + 8),
                      .method = mg_rd16(p + 10), .crc = mg_rd32(p + 16), .comp = mg_rd32(p + 20),
                      .uncomp = mg_rd32(p + 24), .offset = mg_rd32(p + 42)};
    *used = 46 + nl + xl + cl;
    return zip64_fields(p + 46 + nl, xl, at, label, r);
}

static mg_status local_data(mg_zip *z, mg_zip_entry *e)
{
    uint64_t at = e->header_offset;
    if (at > z->size || z->size - at < 30) return bad(z->label, at, "local header past the end");
    const uint8_t *p = z->data + at;
    if (mg_rd32(p) != 0x04034b50) return bad(z->label, at, "bad local header signature");
    e->data_offset = at + 30 + mg_rd16(p + 26) + mg_rd16(p + 28);
    if (e->data_offset > z->size || z->size - e->data_offset < e->comp_size)
        return bad(z->label, at, "record data past the end of the file");
    return MG_OK;
}

static mg_status add_entry(mg_zip *z, const mg_zip_rec *r, uint64_t at)
{
    mg_zip_entry *e = &z->entries[z->n];
    if (memchr(r->name, 0, r->name_len)) return bad(z->label, at, "NUL in an entry name");
    char *name = mg_malloc(r->name_len + 1);
    if (!name) return MG_ERR_NOMEM;
    memcpy(name, r->name, r->name_len);
    name[r->name_len] = 0;
    *e = (mg_zip_entry){.name = name, .header_offset = r->offset, .size = r->uncomp,
                        .comp_size = r->comp, .crc = r->crc, .method = r->method};
    z->n++;
    if (r->method == 0 && r->comp != r->uncomp)
        return bad(z->label, at, "stored record with different sizes");
    return local_data(z, e);
}

static mg_status read_directory(mg_zip *z, const mg_zip_end *e)
{
    if (e->cd_offset > e->end_offset || e->end_offset - e->cd_offset < e->cd_size)
        return bad(z->label, e->cd_offset, "central directory past its end records");
    if (e->n_entries > e->cd_size / 46) return bad(z->label, e->cd_offset, "too many entries for the central directory");
    z->entries = mg_calloc(e->n_entries ? e->n_entries : 1, sizeof(*z->entries));
    if (!z->entries) return MG_ERR_NOMEM;
    uint64_t at = e->cd_offset, end = e->cd_offset + e->cd_size;
    for (uint64_t i = 0; i < e->n_entries; i++) {
        mg_zip_rec r;
        size_t used;
        MG_FORWARD(mg_zip_central_decode(z->data + at, (size_t)(end - at), at, z->label, &r, &used));
        MG_FORWARD(add_entry(z, &r, at));
        at += used;
    }
    return MG_OK;
}

static int cmp_name(const void *a, const void *b, void *ctx)
{
    const mg_zip *z = ctx;
    return strcmp(z->entries[*(const size_t *)a].name, z->entries[*(const size_t *)b].name);
}

static mg_status build_index(mg_zip *z)
{
    z->sorted = mg_malloc((z->n ? z->n : 1) * sizeof(size_t));
    if (!z->sorted) return MG_ERR_NOMEM;
    for (size_t i = 0; i < z->n; i++) z->sorted[i] = i;
    qsort_r(z->sorted, z->n, sizeof(size_t), cmp_name, z);
    return MG_OK;
}

mg_status mg_zip_open(mg_zip **out, const uint8_t *data, size_t size, const char *label)
{
    *out = NULL;
    mg_zip *z = mg_calloc(1, sizeof(*z));
    if (!z) return MG_ERR_NOMEM;
    z->data = data;
    z->size = size;
    z->label = strdup(label ? label : "zip");
    mg_zip_end e;
    mg_status st = z->label ? MG_OK : mg_error_set(MG_ERR_NOMEM, "out of memory");
    if (st == MG_OK) st = mg_zip_end_decode(data, size, z->label, &e);
    if (st == MG_OK) st = read_directory(z, &e);
    if (st == MG_OK) st = build_index(z);
    if (st != MG_OK) {
        mg_zip_free(z);
        return st;
    }
    *out = z;
    return MG_OK;
}

void mg_zip_free(mg_zip *z)
{
    if (!z) return;
    for (size_t i = 0; i < z->n; i++) free((char *)(uintptr_t)z->entries[i].name);
    free(z->entries);
    free(z->sorted);
    free(z->label);
    free(z);
}

size_t mg_zip_count(const mg_zip *z) { return z->n; }

const mg_zip_entry *mg_zip_entry_at(const mg_zip *z, size_t i)
{
    return i < z->n ? &z->entries[i] : NULL;
}

const mg_zip_entry *mg_zip_find(const mg_zip *z, const char *name)
{
    size_t lo = 0, hi = z->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(z->entries[z->sorted[mid]].name, name);
        if (c == 0) return &z->entries[z->sorted[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

mg_status mg_zip_data(const mg_zip *z, const mg_zip_entry *e, const uint8_t **p)
{
    *p = NULL;
    if (e->method != 0)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: record \"%s\": compression method %u not supported",
                            z->label, e->name, e->method);
    *p = z->data + e->data_offset;
    return MG_OK;
}

mg_status mg_zip_check_crc(const mg_zip *z, const mg_zip_entry *e)
{
    const uint8_t *p;
    MG_FORWARD(mg_zip_data(z, e, &p));
    if (mg_crc32(0, p, (size_t)e->size) != e->crc)
        return bad(z->label, e->data_offset, "CRC-32 mismatch");
    return MG_OK;
}
