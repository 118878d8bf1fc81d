/* npy.c — .npy reading and writing (contract in mg/npy.h; format: numpy/lib/_format_impl.py,
 * docs/FORMATS.md §3.10). The header dict is parsed as a tiny subset of Python
 * literals: quoted strings, True/False, tuples of non-negative integers. */
#include "mg/npy.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS */

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
static const char *const descrs[] = {"<i2", "<i4", "<i8", "<u4"};

size_t mg_npy_itemsize(mg_npy_dtype dt)
{
    static const size_t size[] = {2, 4, 8, 4};
    return size[dt];
}

const char *mg_npy_descr(mg_npy_dtype dt)
{
    return descrs[dt];
}

static void assert_little_endian(void)
{
    const uint16_t one = 1;
    MG_ASSERT(*(const uint8_t *)&one == 1);
}

/* ---- writing ------------------------------------------------------------------------ */

mg_status mg_npy_header(mg_npy_dtype dt, int ndim, const uint64_t *shape, char *buf,
                        size_t cap, size_t *len)
{
    MG_RETURN_IF(ndim < 1 || ndim > 2, MG_ERR_ARG, ".npy: %d dimensions (1 or 2 supported)",
                 ndim);
    char dict[160], first[24];
    int digits = snprintf(first, sizeof first, "%llu", (unsigned long long)shape[0]);
    int n = ndim == 1
                ? snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
                           "'shape': (%s,), }", descrs[dt], first)
                : snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
                           "'shape': (%s, %llu), }", descrs[dt], first,
                           (unsigned long long)shape[1]);
    size_t text = (size_t)n + (size_t)(NPY_GROWTH_DIGITS - digits);
    size_t hlen = text + 1; /* + "\n" */
    size_t pad = NPY_ALIGN - (sizeof magic + 2 + 2 + hlen) % NPY_ALIGN;
    size_t total = sizeof magic + 4 + hlen + pad;
    MG_ASSERT(total <= cap && hlen + pad < 65536);
    memcpy(buf, magic, sizeof magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (char)((hlen + pad) & 0xff);
    buf[9] = (char)((hlen + pad) >> 8);
    memcpy(buf + 10, dict, (size_t)n);
    memset(buf + 10 + n, ' ', total - 11 - (size_t)n);
    buf[total - 1] = '\n';
    *len = total;
    return MG_OK;
}

static int64_t load_elem(const void *src, mg_npy_dtype dt, size_t i)
{
    switch (dt) {
    case MG_NPY_I2: return ((const int16_t *)src)[i];
    case MG_NPY_I4: return ((const int32_t *)src)[i];
    case MG_NPY_I8: return ((const int64_t *)src)[i];
    default: return ((const uint32_t *)src)[i];
    }
}

/* Stores v as dt at dst[i]; 0 if it does not fit. */
static int store_elem(void *dst, mg_npy_dtype dt, size_t i, int64_t v)
{
    switch (dt) {
    case MG_NPY_I2:
        ((int16_t *)dst)[i] = (int16_t)v;
        return v >= INT16_MIN && v <= INT16_MAX;
    case MG_NPY_I4:
        ((int32_t *)dst)[i] = (int32_t)v;
        return v >= INT32_MIN && v <= INT32_MAX;
    case MG_NPY_I8: ((int64_t *)dst)[i] = v; return 1;
    default: ((uint32_t *)dst)[i] = (uint32_t)v; return v >= 0 && v <= (int64_t)UINT32_MAX;
    }
}

/* Writes count elements of src (src_dt) as dt, converting through a buffer. */
static mg_status write_data(mg_out *o, mg_npy_dtype dt, const void *src, mg_npy_dtype src_dt,
                            uint64_t count)
{
    if (dt == src_dt) return mg_out_write(o, src, (size_t)count * mg_npy_itemsize(dt));
    enum { CHUNK = 8192 };
    int64_t buf[CHUNK]; /* room for CHUNK elements of any dtype */
    for (uint64_t done = 0; done < count;) {
        size_t n = count - done < CHUNK ? (size_t)(count - done) : CHUNK;
        for (size_t i = 0; i < n; i++) {
            int64_t v = load_elem(src, src_dt, (size_t)done + i);
            MG_RETURN_IF(!store_elem(buf, dt, i, v), MG_ERR_LIMIT,
                         "%s: value %lld at element %llu does not fit %s", mg_out_path(o),
                         (long long)v, (unsigned long long)(done + i), descrs[dt]);
        }
        MG_FORWARD(mg_out_write(o, buf, n * mg_npy_itemsize(dt)));
        done += n;
    }
    return MG_OK;
}

mg_status mg_npy_write(const char *path, mg_npy_dtype dt, int ndim, const uint64_t *shape,
                       const void *src, mg_npy_dtype src_dt)
{
    assert_little_endian();
    char head[256];
    size_t hlen;
    MG_FORWARD(mg_npy_header(dt, ndim, shape, head, sizeof head, &hlen));
    uint64_t count = shape[0] * (ndim == 2 ? shape[1] : 1);
    mg_out *o = NULL;
    MG_FORWARD(mg_out_create(&o, path));
    mg_status st = mg_out_write(o, head, hlen);
    if (st == MG_OK) st = write_data(o, dt, src, src_dt, count);
    if (st == MG_OK) st = mg_out_commit(o);
    mg_out_free(o);
    return st;
}

/* ---- reading ------------------------------------------------------------------------ */

typedef struct {
    const char *p, *end, *name;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static mg_status bad(const cursor *c, const char *what)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: bad .npy header: %s", c->name, what);
}

/* Expects character ch after optional blanks. */
static mg_status expect(cursor *c, char ch, const char *what)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) return bad(c, what);
    c->p++;
    return MG_OK;
}

/* A '...' or "..." string without escapes into out[cap]. */
static mg_status parse_string(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return bad(c, "expected a string");
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\' || n + 1 >= cap) return bad(c, "unexpected string");
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return bad(c, "unterminated string");
    c->p++;
    out[n] = '\0';
    return MG_OK;
}

static mg_status parse_bool(cursor *c, int *v)
{
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        *v = 1;
        c->p += 4;
    } else if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        *v = 0;
        c->p += 5;
    } else {
        return bad(c, "fortran_order is neither True nor False");
    }
    return MG_OK;
}

static mg_status parse_uint(cursor *c, uint64_t *v)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return bad(c, "expected a dimension");
    *v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        unsigned d = (unsigned)(*c->p++ - '0');
        if (*v > (UINT64_MAX - d) / 10) return bad(c, "dimension too large");
        *v = *v * 10 + d;
    }
    return MG_OK;
}

/* "(a, b, ...)" with an optional trailing comma ("(a,)" for one dimension). */
static mg_status parse_shape(cursor *c, mg_npy *a)
{
    MG_FORWARD(expect(c, '(', "shape is not a tuple"));
    a->ndim = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') break;
        uint64_t v = 0;
        MG_FORWARD(parse_uint(c, &v));
        if (a->ndim < 2) a->shape[a->ndim] = v;
        a->ndim++;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p >= c->end || *c->p != ')') return bad(c, "shape is not a tuple");
    }
    c->p++;
    return MG_OK;
}

static mg_status set_descr(cursor *c, const char *d, mg_npy *a)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(d, descrs[i]) == 0) {
            a->dtype = (mg_npy_dtype)i;
            return MG_OK;
        }
    if (d[0] == '>' && (strcmp(d + 1, "i2") == 0 || strcmp(d + 1, "i4") == 0 ||
                        strcmp(d + 1, "i8") == 0 || strcmp(d + 1, "u4") == 0))
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: big-endian dtype '%s' not supported",
                            c->name, d);
    return mg_error_set(MG_ERR_UNSUPPORTED, "%s: dtype '%s' not supported (expected <i2, "
                        "<i4, <i8 or <u4)", c->name, d);
}

/* One "key: value" entry; seen marks keys already read (bit per key). */
static mg_status parse_entry(cursor *c, mg_npy *a, int *fortran, unsigned *seen)
{
    char key[32], val[32];
    MG_FORWARD(parse_string(c, key, sizeof key));
    MG_FORWARD(expect(c, ':', "expected ':'"));
    unsigned bit;
    mg_status st;
    if (strcmp(key, "descr") == 0) {
        bit = 1;
        st = parse_string(c, val, sizeof val);
        if (st == MG_OK) st = set_descr(c, val, a);
    } else if (strcmp(key, "fortran_order") == 0) {
        bit = 2;
        st = parse_bool(c, fortran);
    } else if (strcmp(key, "shape") == 0) {
        bit = 4;
        st = parse_shape(c, a);
    } else {
        return bad(c, "unexpected key");
    }
    if (st == MG_OK && (*seen & bit)) return bad(c, "duplicate key");
    *seen |= bit;
    return st;
}

static mg_status parse_dict(cursor *c, mg_npy *a, int *fortran)
{
    unsigned seen = 0;
    MG_FORWARD(expect(c, '{', "expected '{'"));
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') break;
        MG_FORWARD(parse_entry(c, a, fortran, &seen));
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') c->p++;
        else if (c->p >= c->end || *c->p != '}') return bad(c, "expected ',' or '}'");
    }
    c->p++;
    skip_ws(c);
    if (c->p != c->end) return bad(c, "text after the dictionary");
    if (seen != 7) return bad(c, "descr, fortran_order or shape missing");
    return MG_OK;
}

/* Magic, version and header length: the header text is buf[*beg .. *end). */
static mg_status parse_preamble(const uint8_t *buf, size_t len, const char *name, size_t *beg,
                                size_t *end)
{
    MG_RETURN_IF(len < 10 || memcmp(buf, magic, sizeof magic) != 0, MG_ERR_FORMAT,
                 "%s: not a .npy file (no \\x93NUMPY magic)", name);
    uint8_t major = buf[6], minor = buf[7];
    MG_RETURN_IF(major < 1 || major > 3 || minor != 0, MG_ERR_FORMAT,
                 "%s: .npy format version %u.%u not supported (1.0, 2.0, 3.0)", name, major,
                 minor);
    uint64_t hlen;
    if (major == 1) {
        hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
        *beg = 10;
    } else {
        MG_RETURN_IF(len < 12, MG_ERR_FORMAT, "%s: truncated .npy header", name);
        hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 |
               (uint64_t)buf[11] << 24;
        *beg = 12;
    }
    MG_RETURN_IF(hlen > len - *beg, MG_ERR_FORMAT,
                 "%s: .npy header of %llu bytes runs past the end of the file (%zu bytes)",
                 name, (unsigned long long)hlen, len);
    *end = *beg + (size_t)hlen;
    MG_RETURN_IF(hlen == 0 || buf[*end - 1] != '\n', MG_ERR_FORMAT,
                 "%s: bad .npy header: it does not end with a newline", name);
    return MG_OK;
}

static mg_status check_layout(const mg_npy *a, int fortran, const char *name)
{
    MG_RETURN_IF(a->ndim < 1 || a->ndim > 2, MG_ERR_UNSUPPORTED,
                 "%s: a %d-dimensional array (1 or 2 dimensions expected)", name, a->ndim);
    MG_RETURN_IF(fortran && a->ndim == 2 && a->shape[0] > 1 && a->shape[1] > 1,
                 MG_ERR_UNSUPPORTED, "%s: a Fortran-order 2-D array is not supported", name);
    return MG_OK;
}

mg_status mg_npy_parse(const uint8_t *buf, size_t len, const char *name, mg_npy *out)
{
    assert_little_endian();
    memset(out, 0, sizeof *out);
    size_t beg = 0, end = 0;
    MG_FORWARD(parse_preamble(buf, len, name, &beg, &end));
    cursor c = {(const char *)buf + beg, (const char *)buf + end, name};
    mg_npy a;
    memset(&a, 0, sizeof a);
    int fortran = 0;
    MG_FORWARD(parse_dict(&c, &a, &fortran));
    MG_FORWARD(check_layout(&a, fortran, name));
    if (a.ndim == 1) a.shape[1] = 1;
    uint64_t item = mg_npy_itemsize(a.dtype), avail = len - end;
    MG_RETURN_IF(a.shape[1] != 0 && a.shape[0] > UINT64_MAX / item / a.shape[1],
                 MG_ERR_FORMAT, "%s: shape too large", name);
    a.count = a.shape[0] * a.shape[1];
    MG_RETURN_IF(a.count * item != avail, MG_ERR_FORMAT,
                 "%s: %llu bytes of data after the header, the shape (%llu x %llu of %s) "
                 "needs %llu", name, (unsigned long long)avail, (unsigned long long)a.shape[0],
                 (unsigned long long)a.shape[1], descrs[a.dtype],
                 (unsigned long long)(a.count * item));
    a.data = buf + end;
    *out = a;
    return MG_OK;
}

int64_t mg_npy_get(const mg_npy *a, uint64_t i)
{
    const uint8_t *p = a->data + i * mg_npy_itemsize(a->dtype);
    switch (a->dtype) {
    case MG_NPY_I2: { int16_t v; memcpy(&v, p, 2); return v; }
    case MG_NPY_I4: { int32_t v; memcpy(&v, p, 4); return v; }
    case MG_NPY_I8: { int64_t v; memcpy(&v, p, 8); return v; }
    default: { uint32_t v; memcpy(&v, p, 4); return v; }
    }
}

mg_status mg_npy_open(mg_npy_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    MG_FORWARD(mg_map_open(&f->map, path));
    static const uint8_t empty[1] = {0};
    mg_status st = mg_npy_parse(f->map.data ? f->map.data : empty, f->map.size, path, &f->arr);
    if (st != MG_OK) mg_npy_close(f);
    return st;
}

void mg_npy_close(mg_npy_file *f)
{
    mg_map_close(&f->map);
    memset(f, 0, sizeof *f);
}
