/* fuzz_safetensors.c — libFuzzer target for the safetensors header parser (mg_st_open_mem).
 *
 * Input: byte 0 < 0x80: the rest is a whole file. Byte 0 >= 0x80: the rest is a JSON header;
 * the target prefixes its length and appends (byte0 & 0x7f) data bytes, so the fuzzer
 * reaches the validation of tensor entries without guessing the length field.
 * For accepted inputs the reader's guarantees are checked (abort on violation): tensors
 * tile the data section in file order, nbytes == numel * element size, data pointers lie
 * inside the buffer, lookup by name finds each tensor, metadata entries are strings.
 * Must not crash, leak or trip a sanitizer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_file(const mg_st_file *f, const uint8_t *buf, size_t len)
{
    uint64_t pos = 0, data_start = 8 + mg_st_header_len(f);
    for (size_t i = 0; i < mg_st_count(f); i++) {
        const mg_st_tensor *t = mg_st_at(f, i);
        if (t->offset != pos || t->numel * mg_tdtype_size(t->dtype) != t->nbytes) abort();
        if ((const uint8_t *)t->data != buf + data_start + t->offset) abort();
        const uint8_t *d = t->data;
        if (t->nbytes && d[t->nbytes - 1] != buf[data_start + pos + t->nbytes - 1]) abort();
        pos += t->nbytes;
        const mg_st_tensor *u = mg_st_find(f, t->name);
        if (!u || strcmp(u->name, t->name) != 0) abort();
    }
    if (data_start + pos != len) abort();
    for (size_t i = 0; i < mg_st_meta_count(f); i++) {
        const char *k, *v;
        mg_st_meta_at(f, i, &k, &v);
        if (!k || !v || mg_st_meta_get(f, k) != v) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t extra = data[0] & 0x7f, n = size - 1;
    uint8_t *buf;
    size_t len;
    if (data[0] < 0x80) {
        len = n;
        buf = malloc(len + 1);
        if (!buf) return 0;
        memcpy(buf, data + 1, n);
    } else {
        len = 8 + n + extra;
        buf = malloc(len);
        if (!buf) return 0;
        for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
        memcpy(buf + 8, data + 1, n);
        memset(buf + 8 + n, 0xab, extra);
    }
    mg_st_file *f;
    if (mg_st_open_mem(&f, buf, len, "fuzz") == MG_OK) {
        check_file(f, buf, len);
        mg_st_close(f);
    }
    free(buf);
    return 0;
}
