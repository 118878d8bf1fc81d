/* safetensors_index.c — sharded checkpoints' model.safetensors.index.json (mg/safetensors.h).
 *
 * Contract: the reader parses the index with jansson (duplicate keys rejected), checks the
 * weight_map and metadata types, and keeps the entries sorted by tensor name plus the
 * sorted list of distinct shard files. The writer emits the same bytes as
 * transformers' json.dumps(index, indent=2, sort_keys=True) + "\n": keys sorted by code
 * point (== bytewise on UTF-8), 2-space indentation, ": " and "," + newline separators,
 * strings ASCII-only (Python's ensure_ascii: \" \\ \n \r \t \b \f, every other character
 * outside ' '..'~' as \u00xx / \uxxxx, astral characters as surrogate pairs, lowercase).
 */
#include "mg/safetensors.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "mg/unicode.h"

typedef struct {
    const char *name;
    const char *file;
} ix_entry;

struct mg_st_index {
    char *path;
    json_t *root;
    ix_entry *e; /* sorted by name */
    size_t n;
    const char **files; /* distinct, sorted */
    size_t nfiles;
    int64_t total_size, total_params;
};

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const ix_entry *)a)->name, ((const ix_entry *)b)->name);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static mg_status get_count(const mg_st_index *ix, json_t *meta, const char *key, int64_t *out)
{
    *out = -1;
    json_t *v = json_object_get(meta, key);
    if (!v) return MG_OK;
    MG_RETURN_IF(!json_is_integer(v) || json_integer_value(v) < 0, MG_ERR_FORMAT,
                 "%s: metadata.%s is not a non-negative integer", ix->path, key);
    *out = json_integer_value(v);
    return MG_OK;
}

static mg_status parse_metadata(mg_st_index *ix)
{
    json_t *meta = json_object_get(ix->root, "metadata");
    ix->total_size = ix->total_params = -1;
    if (!meta || json_is_null(meta)) return MG_OK;
    MG_RETURN_IF(!json_is_object(meta), MG_ERR_FORMAT, "%s: \"metadata\" is not an object",
                 ix->path);
    MG_FORWARD(get_count(ix, meta, "total_size", &ix->total_size));
    return get_count(ix, meta, "total_parameters", &ix->total_params);
}

static mg_status check_file_name(const mg_st_index *ix, const char *name, const char *file)
{
    MG_RETURN_IF(!file, MG_ERR_FORMAT, "%s: weight_map[\"%s\"] is not a string", ix->path, name);
    MG_RETURN_IF(!*file || strchr(file, '/') || strcmp(file, ".") == 0 || strcmp(file, "..") == 0,
                 MG_ERR_FORMAT, "%s: weight_map[\"%s\"]: \"%s\" is not a plain file name",
                 ix->path, name, file);
    return MG_OK;
}

static mg_status collect_files(mg_st_index *ix)
{
    ix->files = mg_calloc(ix->n + 1, sizeof *ix->files);
    if (!ix->files) return MG_ERR_NOMEM;
    for (size_t i = 0; i < ix->n; i++) ix->files[i] = ix->e[i].file;
    if (ix->n > 0) qsort(ix->files, ix->n, sizeof *ix->files, cmp_str);
    for (size_t i = 0; i < ix->n; i++)
        if (ix->nfiles == 0 || strcmp(ix->files[ix->nfiles - 1], ix->files[i]) != 0)
            ix->files[ix->nfiles++] = ix->files[i];
    return MG_OK;
}

static mg_status parse_weight_map(mg_st_index *ix)
{
    json_t *wm = json_object_get(ix->root, "weight_map");
    MG_RETURN_IF(!json_is_object(wm), MG_ERR_FORMAT,
                 "%s: \"weight_map\" missing or not an object", ix->path);
    ix->e = mg_calloc(json_object_size(wm) + 1, sizeof *ix->e);
    if (!ix->e) return MG_ERR_NOMEM;
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        MG_FORWARD(check_file_name(ix, key, json_string_value(v)));
        ix->e[ix->n].name = key;
        ix->e[ix->n++].file = json_string_value(v);
    }
    if (ix->n > 0) qsort(ix->e, ix->n, sizeof *ix->e, cmp_entry);
    return collect_files(ix);
}

static mg_status index_parse(mg_st_index *ix)
{
    char *text;
    size_t len;
    MG_FORWARD(mg_read_file(ix->path, &text, &len));
    json_error_t err;
    ix->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    free(text);
    MG_RETURN_IF(!ix->root, MG_ERR_FORMAT, "%s:%d: invalid JSON: %s", ix->path, err.line,
                 err.text);
    MG_RETURN_IF(!json_is_object(ix->root), MG_ERR_FORMAT, "%s: not a JSON object", ix->path);
    MG_FORWARD(parse_metadata(ix));
    return parse_weight_map(ix);
}

mg_status mg_st_index_open(mg_st_index **out, const char *path)
{
    *out = NULL;
    mg_st_index *ix = mg_calloc(1, sizeof *ix);
    if (!ix) return MG_ERR_NOMEM;
    ix->path = strdup(path);
    mg_status st = ix->path ? index_parse(ix) : mg_error_set(MG_ERR_NOMEM, "out of memory");
    if (st != MG_OK) {
        mg_st_index_free(ix);
        return st;
    }
    *out = ix;
    return MG_OK;
}

void mg_st_index_free(mg_st_index *ix)
{
    if (!ix) return;
    json_decref(ix->root);
    free(ix->e);
    free(ix->files);
    free(ix->path);
    free(ix);
}

size_t mg_st_index_count(const mg_st_index *ix) { return ix->n; }

void mg_st_index_at(const mg_st_index *ix, size_t i, const char **name, const char **file)
{
    MG_ASSERT(i < ix->n);
    *name = ix->e[i].name;
    *file = ix->e[i].file;
}

const char *mg_st_index_file_of(const mg_st_index *ix, const char *name)
{
    ix_entry key = {name, NULL};
    const ix_entry *e = ix->n ? bsearch(&key, ix->e, ix->n, sizeof *ix->e, cmp_entry) : NULL;
    return e ? e->file : NULL;
}

size_t mg_st_index_nfiles(const mg_st_index *ix) { return ix->nfiles; }

const char *mg_st_index_file(const mg_st_index *ix, size_t i)
{
    MG_ASSERT(i < ix->nfiles);
    return ix->files[i];
}

int64_t mg_st_index_total_size(const mg_st_index *ix) { return ix->total_size; }
int64_t mg_st_index_total_parameters(const mg_st_index *ix) { return ix->total_params; }

mg_status mg_st_shard_name(char *buf, size_t cap, int index, int count)
{
    MG_RETURN_IF(count < 1 || index < 1 || index > count, MG_ERR_ARG,
                 "shard %d of %d: invalid shard number", index, count);
    int n = snprintf(buf, cap, "model-%05d-of-%05d.safetensors", index, count);
    MG_RETURN_IF(n < 0 || (size_t)n >= cap, MG_ERR_LIMIT, "shard name longer than %zu bytes",
                 cap);
    return MG_OK;
}

/* ---- writer ---- */

static mg_status put(mg_out *o, const char *s) { return mg_out_write(o, s, strlen(s)); }

static mg_status put_u16_escape(mg_out *o, uint32_t u)
{
    char tmp[16];
    snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned)u);
    return put(o, tmp);
}

/* One code point the way Python's json.dumps(ensure_ascii=True) writes it. */
static mg_status put_cp(mg_out *o, uint32_t cp)
{
    static const char *const named[] = {['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n",
                                        ['\r'] = "\\r", ['\t'] = "\\t", ['\b'] = "\\b",
                                        ['\f'] = "\\f"};
    if (cp < sizeof named / sizeof *named && named[cp]) return put(o, named[cp]);
    if (cp >= 0x20 && cp < 0x7f) {
        char c = (char)cp;
        return mg_out_write(o, &c, 1);
    }
    if (cp < 0x10000) return put_u16_escape(o, cp);
    cp -= 0x10000;
    MG_FORWARD(put_u16_escape(o, 0xd800 + (cp >> 10)));
    return put_u16_escape(o, 0xdc00 + (cp & 0x3ff));
}

static mg_status put_json_str(mg_out *o, const char *s)
{
    const uint8_t *p = (const uint8_t *)s;
    size_t len = strlen(s);
    size_t valid = mg_utf8_validate(p, len);
    MG_RETURN_IF(valid != len, MG_ERR_ARG, "%s: \"%s\" is not valid UTF-8", mg_out_path(o), s);
    MG_FORWARD(put(o, "\""));
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += mg_utf8_decode(p + i, len - i, &cp);
        MG_FORWARD(put_cp(o, cp));
    }
    return put(o, "\"");
}

static mg_status put_metadata(mg_out *o, uint64_t total_size, int64_t total_params)
{
    char tmp[64];
    MG_FORWARD(put(o, "{\n  \"metadata\": {\n"));
    if (total_params >= 0) {
        snprintf(tmp, sizeof tmp, "    \"total_parameters\": %lld,\n", (long long)total_params);
        MG_FORWARD(put(o, tmp));
    }
    snprintf(tmp, sizeof tmp, "    \"total_size\": %llu\n  },\n", (unsigned long long)total_size);
    return put(o, tmp);
}

static mg_status put_weight_map(mg_out *o, const ix_entry *e, size_t n)
{
    if (n == 0) return put(o, "  \"weight_map\": {}\n}\n");
    MG_FORWARD(put(o, "  \"weight_map\": {\n"));
    for (size_t i = 0; i < n; i++) {
        MG_FORWARD(put(o, "    "));
        MG_FORWARD(put_json_str(o, e[i].name));
        MG_FORWARD(put(o, ": "));
        MG_FORWARD(put_json_str(o, e[i].file));
        MG_FORWARD(put(o, i + 1 < n ? ",\n" : "\n"));
    }
    return put(o, "  }\n}\n");
}

static mg_status sorted_entries(const char *path, const char *const *names,
                                const char *const *files, size_t n, ix_entry **out)
{
    ix_entry *e = mg_calloc(n + 1, sizeof *e);
    if (!e) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) e[i] = (ix_entry){names[i], files[i]};
    if (n > 0) qsort(e, n, sizeof *e, cmp_entry);
    for (size_t i = 1; i < n; i++)
        if (strcmp(e[i - 1].name, e[i].name) == 0) {
            mg_status st = mg_error_set(MG_ERR_ARG, "%s: tensor \"%s\" listed twice", path,
                                        e[i].name);
            free(e);
            return st;
        }
    *out = e;
    return MG_OK;
}

mg_status mg_st_index_write(const char *path, const char *const *names,
                            const char *const *files, size_t n, uint64_t total_size,
                            int64_t total_parameters)
{
    ix_entry *e = NULL;
    MG_FORWARD(sorted_entries(path, names, files, n, &e));
    mg_out *o;
    mg_status st = mg_out_create(&o, path);
    if (st == MG_OK) st = put_metadata(o, total_size, total_parameters);
    if (st == MG_OK) st = put_weight_map(o, e, n);
    if (st == MG_OK) st = mg_out_commit(o);
    mg_out_free(o);
    free(e);
    return st;
}
