/* megatron_layout.c — mg/megatron_layout.h: Megatron's tracker file (read_metadata's rule),
 * iteration and rank folder names. */
#include "mg/megatron_layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"

/* Python's str.isspace over ASCII. */
static int py_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

static int digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Python int() of [b, e) (already stripped): sign, digits, single '_' between digits.
 * 0: not a number; -1: beyond int64; 1: *v set. */
static int py_int(const char *b, const char *e, int64_t *v)
{
    int neg = b < e && *b == '-';
    if (b < e && (*b == '-' || *b == '+')) b++;
    if (b == e || !digit(*b)) return 0;
    uint64_t x = 0;
    int big = 0;
    for (const char *p = b; p < e; p++) {
        if (*p == '_' && p + 1 < e && digit(p[1]) && digit(p[-1])) continue;
        if (!digit(*p)) return 0;
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) big = 1;
        else x = x * 10 + d;
    }
    if (big || x > (uint64_t)INT64_MAX) return -1;
    *v = neg ? -(int64_t)x : (int64_t)x;
    return 1;
}

mg_status mg_megatron_tracker_parse(const char *text, size_t len, const char *label,
                                    mg_megatron_iter *it)
{
    const char *b = text, *e = text + len;
    while (b < e && py_space(*b)) b++;
    while (e > b && py_space(e[-1])) e--;
    int64_t v = 0;
    int r = py_int(b, e, &v);
    MG_RETURN_IF(r < 0, MG_ERR_LIMIT, "%s: iteration %.*s is too large", label, (int)(e - b), b);
    if (r > 0) {
        MG_RETURN_IF(v < 0, MG_ERR_FORMAT, "%s: negative iteration %" PRId64, label, v);
        *it = (mg_megatron_iter){v, 0};
        return MG_OK;
    }
    MG_RETURN_IF((size_t)(e - b) != 7 || memcmp(b, "release", 7), MG_ERR_FORMAT,
                 "%s: expected an iteration number or 'release'", label);
    *it = (mg_megatron_iter){0, 1};
    return MG_OK;
}

static mg_status join(char *buf, const char *dir, const char *name)
{
    int n = snprintf(buf, MG_PATH_MAX, "%s/%s", dir, name);
    MG_RETURN_IF(n < 0 || n >= MG_PATH_MAX, MG_ERR_LIMIT, "%s/%s: path too long", dir, name);
    return MG_OK;
}

mg_status mg_megatron_tracker_read(const char *dir, mg_megatron_iter *it)
{
    char path[MG_PATH_MAX], folder[MG_PATH_MAX], name[MG_MEGATRON_NAME_MAX], *text = NULL;
    size_t len = 0;
    MG_FORWARD(join(path, dir, MG_MEGATRON_TRACKER));
    MG_FORWARD(mg_read_file(path, &text, &len));
    mg_status st = mg_megatron_tracker_parse(text, len, path, it);
    free(text);
    MG_FORWARD(st);
    mg_megatron_iter_name(it, name);
    MG_FORWARD(join(folder, dir, name));
    MG_RETURN_IF(!mg_is_dir(folder), MG_ERR_NOTFOUND, "%s: no such folder (named by %s)",
                 folder, path);
    return MG_OK;
}

mg_status mg_megatron_tracker_write(const char *dir, const mg_megatron_iter *it)
{
    char path[MG_PATH_MAX], text[32];
    MG_FORWARD(join(path, dir, MG_MEGATRON_TRACKER));
    int n = it->release ? snprintf(text, sizeof text, "release")
                        : snprintf(text, sizeof text, "%" PRId64, it->iteration);
    mg_out *out = NULL;
    mg_status st = mg_out_create(&out, path);
    if (st == MG_OK) st = mg_out_write(out, text, (size_t)n);
    if (st == MG_OK) st = mg_out_commit(out);
    mg_out_free(out);
    return st;
}

void mg_megatron_iter_name(const mg_megatron_iter *it, char *name)
{
    if (it->release) snprintf(name, MG_MEGATRON_NAME_MAX, "release");
    else snprintf(name, MG_MEGATRON_NAME_MAX, "iter_%07" PRId64, it->iteration);
}

void mg_megatron_rank_name(int64_t tp_rank, int64_t pp_rank, int pipeline, char *name)
{
    if (pipeline) snprintf(name, MG_MEGATRON_NAME_MAX, MG_MEGATRON_RANK_PREFIX "%02" PRId64
                           "_%03" PRId64, tp_rank, pp_rank);
    else snprintf(name, MG_MEGATRON_NAME_MAX, MG_MEGATRON_RANK_PREFIX "%02" PRId64, tp_rank);
}

mg_status mg_megatron_rank_file(const mg_megatron_iter *it, int64_t tp_rank, int64_t pp_rank,
                                int pipeline, char *rel, size_t cap)
{
    char iter[MG_MEGATRON_NAME_MAX], rank[MG_MEGATRON_NAME_MAX];
    mg_megatron_iter_name(it, iter);
    mg_megatron_rank_name(tp_rank, pp_rank, pipeline, rank);
    int n = snprintf(rel, cap, "%s/%s/" MG_MEGATRON_RANK_FILE, iter, rank);
    MG_RETURN_IF(n < 0 || (size_t)n >= cap, MG_ERR_LIMIT, "%s/%s/" MG_MEGATRON_RANK_FILE
                 ": path too long", iter, rank);
    return MG_OK;
}
