/* st_tool.c — test program for the safetensors module (mg/safetensors.h).
 *
 *   st_tool write OUT [CHUNK] < SPEC   write OUT with mg_st_writer; with CHUNK the data
 *                                      goes through mg_st_writer_write in CHUNK-byte pieces
 *                                      (spanning tensors), else one mg_st_writer_tensor call
 *                                      per tensor in the order mg_st_writer_next asks for
 *   st_tool dump FILE [--data]         print FILE as read by mg_st_open
 *   st_tool index-dump INDEX           print a model.safetensors.index.json as read by
 *                                      mg_st_index_open: "total_size S", "total_parameters
 *                                      P" (-1 when absent), "file F" per distinct shard,
 *                                      then "NAME<TAB>FILE" per entry (sorted by name)
 *   st_tool index-write OUT SIZE PARAMS < LINES   mg_st_index_write with LINES
 *                                      "NAME<TAB>FILE"; PARAMS < 0 leaves it out
 *
 * SPEC lines (empty lines ignored), tab-separated (names may hold anything but tab and
 * newline):
 *   meta<TAB>KEY<TAB>VALUE
 *   tensor<TAB>NAME<TAB>DTYPE<TAB>SHAPE<TAB>HEX
 * SHAPE is comma-separated dims ("" for a 0-dim scalar), HEX the little-endian data bytes.
 * dump prints "header N" (the header length), then "meta<TAB>KEY<TAB>VALUE" per metadata
 * entry in header order, then per tensor in file order
 * "tensor<TAB>NAME<TAB>DTYPE<TAB>SHAPE<TAB>OFFSET<TAB>NBYTES<TAB>CRC32" (CRC-32 of the data,
 * zlib's, 8 lowercase hex digits) followed by "<TAB>HEX" with --data.
 * Exit status 0 on success, 1 on a library error (message on stderr), 2 on a usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/safetensors.h"

typedef struct {
    char *name;
    uint8_t *data;
    size_t len;
} spec_tensor;

static int fail(void)
{
    fprintf(stderr, "st_tool: error: %s\n", mg_last_error());
    return 1;
}

static uint32_t crc32_of(const uint8_t *p, uint64_t n)
{
    uint32_t c = 0xffffffffu;
    for (uint64_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static void print_shape(const mg_st_tensor *t)
{
    for (int i = 0; i < t->ndim; i++) printf("%s%" PRId64, i ? "," : "", t->shape[i]);
}

static int dump(const char *path, int with_data)
{
    mg_st_file *f;
    if (mg_st_open(&f, path) != MG_OK) return fail();
    printf("header %" PRIu64 "\n", mg_st_header_len(f));
    for (size_t i = 0; i < mg_st_meta_count(f); i++) {
        const char *k, *v;
        mg_st_meta_at(f, i, &k, &v);
        printf("meta\t%s\t%s\n", k, v);
    }
    for (size_t i = 0; i < mg_st_count(f); i++) {
        const mg_st_tensor *t = mg_st_at(f, i);
        printf("tensor\t%s\t%s\t", t->name, mg_tdtype_name(t->dtype));
        print_shape(t);
        printf("\t%" PRIu64 "\t%" PRIu64 "\t%08x", t->offset, t->nbytes,
               crc32_of(t->data, t->nbytes));
        if (with_data) {
            putchar('\t');
            for (uint64_t j = 0; j < t->nbytes; j++) printf("%02x", ((const uint8_t *)t->data)[j]);
        }
        putchar('\n');
    }
    mg_st_close(f);
    return 0;
}

/* Splits line at tabs in place; returns the number of fields (at most max). */
static int split_tabs(char *line, char **fields, int max)
{
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < max; p++)
        if (*p == '\t') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    return n;
}

static int parse_shape(char *s, int64_t *shape, int *ndim)
{
    *ndim = 0;
    if (!*s) return 1;
    for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
        if (*ndim >= 64) return 0;
        shape[(*ndim)++] = strtoll(tok, NULL, 10);
    }
    return 1;
}

static int parse_hex(const char *s, spec_tensor *t)
{
    size_t n = strlen(s);
    if (n % 2) return 0;
    t->len = n / 2;
    t->data = malloc(t->len + 1);
    if (!t->data) abort();
    for (size_t i = 0; i < t->len; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) return 0;
        t->data[i] = (uint8_t)v;
    }
    return 1;
}

static int usage_line(size_t lineno)
{
    fprintf(stderr, "st_tool: spec line %zu: bad syntax\n", lineno);
    return 2;
}

static int read_tensor(mg_st_writer *w, char **fld, spec_tensor *t)
{
    int64_t shape[64];
    int ndim;
    mg_tdtype dt = mg_tdtype_from_name(fld[2]);
    if (!parse_shape(fld[3], shape, &ndim) || !parse_hex(fld[4], t)) return 2;
    t->name = strdup(fld[1]);
    if (!t->name) abort();
    return mg_st_writer_declare(w, fld[1], dt, ndim, shape) == MG_OK ? 0 : 1;
}

static int read_spec(mg_st_writer *w, spec_tensor **ts, size_t *nt)
{
    char line[1 << 16];
    size_t lineno = 0, cap = 0;
    while (fgets(line, sizeof line, stdin)) {
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        char *fld[5];
        int n = split_tabs(line, fld, 5);
        if (n == 3 && strcmp(fld[0], "meta") == 0) {
            if (mg_st_writer_meta(w, fld[1], fld[2]) != MG_OK) return fail();
            continue;
        }
        if (n != 5 || strcmp(fld[0], "tensor") != 0) return usage_line(lineno);
        if (*nt == cap) {
            cap = cap ? 2 * cap : 16;
            *ts = realloc(*ts, cap * sizeof **ts);
            if (!*ts) abort();
        }
        memset(&(*ts)[*nt], 0, sizeof **ts);
        int rc = read_tensor(w, fld, &(*ts)[(*nt)++]);
        if (rc == 2) return usage_line(lineno);
        if (rc) return fail();
    }
    return 0;
}

static const spec_tensor *find_spec(const spec_tensor *ts, size_t nt, const char *name)
{
    for (size_t i = 0; i < nt; i++)
        if (strcmp(ts[i].name, name) == 0) return &ts[i];
    return NULL;
}

static int write_whole(mg_st_writer *w, const spec_tensor *ts, size_t nt)
{
    for (size_t i = 0; i < nt; i++)
        if (ts[i].len == 0 && mg_st_writer_tensor(w, ts[i].name, NULL, 0) != MG_OK)
            return fail();
    const char *name;
    while ((name = mg_st_writer_next(w, NULL, NULL))) {
        const spec_tensor *t = find_spec(ts, nt, name);
        if (mg_st_writer_tensor(w, name, t->data, t->len) != MG_OK) return fail();
    }
    return 0;
}

/* Concatenates the data in layout order, then writes it in chunk-byte pieces. */
static int write_chunked(mg_st_writer *w, const spec_tensor *ts, size_t nt, size_t chunk)
{
    size_t total = 0, pos = 0;
    for (size_t i = 0; i < nt; i++) total += ts[i].len;
    uint8_t *all = malloc(total + 1);
    if (!all) abort();
    const char *name;
    for (size_t i = 0; (name = mg_st_writer_order(w, i)); i++) {
        const spec_tensor *t = find_spec(ts, nt, name);
        memcpy(all + pos, t->data, t->len);
        pos += t->len;
    }
    int rc = 0;
    if (chunk == 0) chunk = 1;
    for (size_t off = 0; off < total && !rc; off += chunk) {
        size_t k = total - off < chunk ? total - off : chunk;
        if (mg_st_writer_write(w, all + off, k) != MG_OK) rc = fail();
    }
    free(all);
    return rc;
}

static int index_dump(const char *path)
{
    mg_st_index *ix;
    if (mg_st_index_open(&ix, path) != MG_OK) return fail();
    printf("total_size %" PRId64 "\ntotal_parameters %" PRId64 "\n", mg_st_index_total_size(ix),
           mg_st_index_total_parameters(ix));
    for (size_t i = 0; i < mg_st_index_nfiles(ix); i++)
        printf("file %s\n", mg_st_index_file(ix, i));
    for (size_t i = 0; i < mg_st_index_count(ix); i++) {
        const char *name, *file;
        mg_st_index_at(ix, i, &name, &file);
        if (mg_st_index_file_of(ix, name) != file) abort();
        printf("%s\t%s\n", name, file);
    }
    mg_st_index_free(ix);
    return 0;
}

static int index_write(const char *out, const char *size, const char *params)
{
    char line[1 << 16];
    char **names = NULL, **files = NULL;
    size_t n = 0, cap = 0;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *fld[2];
        if (!line[0]) continue;
        if (split_tabs(line, fld, 2) != 2) return usage_line(n + 1);
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, cap * sizeof *names);
            files = realloc(files, cap * sizeof *files);
            if (!names || !files) abort();
        }
        names[n] = strdup(fld[0]);
        files[n++] = strdup(fld[1]);
    }
    int rc = 0;
    if (mg_st_index_write(out, (const char *const *)names, (const char *const *)files, n,
                          strtoull(size, NULL, 10), strtoll(params, NULL, 10)) != MG_OK)
        rc = fail();
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        free(files[i]);
    }
    free(names);
    free(files);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "index-dump") == 0) return index_dump(argv[2]);
    if (argc == 5 && strcmp(argv[1], "index-write") == 0)
        return index_write(argv[2], argv[3], argv[4]);
    if (argc >= 3 && strcmp(argv[1], "dump") == 0)
        return dump(argv[2], argc >= 4 && strcmp(argv[3], "--data") == 0);
    if (argc < 3 || strcmp(argv[1], "write") != 0) {
        fprintf(stderr, "usage: st_tool write OUT [CHUNK] < SPEC | st_tool dump FILE [--data]\n");
        return 2;
    }
    mg_st_writer *w;
    if (mg_st_writer_create(&w, argv[2]) != MG_OK) return fail();
    spec_tensor *ts = NULL;
    size_t nt = 0;
    int rc = read_spec(w, &ts, &nt);
    if (!rc && mg_st_writer_begin(w) != MG_OK) rc = fail();
    if (!rc)
        rc = argc >= 4 ? write_chunked(w, ts, nt, (size_t)strtoull(argv[3], NULL, 10))
                       : write_whole(w, ts, nt);
    if (!rc && mg_st_writer_finish(w) != MG_OK) rc = fail();
    mg_st_writer_free(w);
    for (size_t i = 0; i < nt; i++) {
        free(ts[i].name);
        free(ts[i].data);
    }
    free(ts);
    return rc;
}
