/* tb_events.c — tb_events.h: TFRecord framing and the Event/Summary protobuf fields of a
 * scalar, written by hand (a handful of fields: no protobuf library). */
#include "tb_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "mg/file.h"

struct mg_tb_writer {
    FILE *f;
    char path[MG_PATH_MAX];
};

uint32_t mg_tb_crc32c(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

static void le(uint8_t *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) out[i] = (uint8_t)(v >> (8 * i));
}

/* ---- protobuf fields (wire types 0 varint, 1 fixed64, 2 bytes, 5 fixed32) ---- */

static size_t varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    do {
        out[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static size_t field_bytes(uint8_t *out, int field, const void *data, size_t len)
{
    size_t n = varint(out, (uint64_t)field << 3 | 2);
    n += varint(out + n, len);
    memcpy(out + n, data, len);
    return n + len;
}

static size_t field_fixed(uint8_t *out, int field, uint64_t bits, int bytes)
{
    size_t n = varint(out, (uint64_t)field << 3 | (bytes == 8 ? 1 : 5));
    le(out + n, bits, bytes);
    return n + (size_t)bytes;
}

static double wall_time(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* Event header: wall_time (1) and step (2). */
static size_t event_head(uint8_t *out, int64_t step)
{
    double t = wall_time();
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    size_t n = field_fixed(out, 1, bits, 8);
    n += varint(out + n, 2 << 3 | 0);
    return n + varint(out + n, (uint64_t)step);
}

static mg_status record(mg_tb_writer *w, const uint8_t *data, size_t len)
{
    uint8_t head[12], tail[4];
    le(head, len, 8);
    le(head + 8, masked(mg_tb_crc32c(head, 8)), 4);
    le(tail, masked(mg_tb_crc32c(data, len)), 4);
    int ok = fwrite(head, 1, 12, w->f) == 12 && fwrite(data, 1, len, w->f) == len &&
             fwrite(tail, 1, 4, w->f) == 4 && fflush(w->f) == 0;
    MG_RETURN_IF(!ok, MG_ERR_IO, "%s: cannot write the TensorBoard event: %s", w->path,
                 strerror(errno));
    return MG_OK;
}

mg_status mg_tb_create(mg_tb_writer **out, const char *dir)
{
    char host[128] = "localhost";
    *out = NULL;
    if (mkdir(dir, 0777) != 0 && !(errno == EEXIST && mg_is_dir(dir)))
        return mg_error_errno(errno, "--tensorboard-dir %s: cannot create the folder", dir);
    gethostname(host, sizeof host - 1);
    mg_tb_writer *w = mg_calloc(1, sizeof *w);
    if (!w) return MG_ERR_NOMEM;
    snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s.%d.0", dir,
             (long long)wall_time(), host, (int)getpid());
    if (!(w->f = fopen(w->path, "wb"))) {
        mg_status st = mg_error_errno(errno, "%s: cannot create the TensorBoard file", w->path);
        free(w);
        return st;
    }
    uint8_t ev[64];
    size_t n = event_head(ev, 0);
    n += field_bytes(ev + n, 3, "brain.Event:2", 13);
    mg_status st = record(w, ev, n);
    if (st != MG_OK) {
        mg_tb_free(w);
        return st;
    }
    *out = w;
    return MG_OK;
}

mg_status mg_tb_scalar(mg_tb_writer *w, const char *tag, int64_t step, double value)
{
    uint8_t val[160], sum[176], ev[224];
    size_t tl = strlen(tag);
    MG_RETURN_IF(tl > 120, MG_ERR_ARG, "TensorBoard tag too long: %s", tag);
    float f = (float)value;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    size_t nv = field_bytes(val, 1, tag, tl);
    nv += field_fixed(val + nv, 2, bits, 4);
    size_t ns = field_bytes(sum, 1, val, nv);
    size_t n = event_head(ev, step);
    n += field_bytes(ev + n, 5, sum, ns);
    return record(w, ev, n);
}

void mg_tb_free(mg_tb_writer *w)
{
    if (!w) return;
    if (w->f) fclose(w->f);
    free(w);
}
