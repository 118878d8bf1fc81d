/* fuzz_idx.c — libFuzzer target for the indexed dataset reader (mg_idx_open) and, for inputs
 * it accepts, mg_idx_token and mg_idx_writer_add_index (the copy must reopen identically).
 *
 * Input: byte 0 chooses the .bin size, the rest is written as f.idx in a private temporary
 * directory. Byte 0 with the high bit set: a .bin of (byte & 0x7f) bytes; otherwise the size
 * the .idx's lengths imply (capped at 1 MiB), plus (byte % 3) - 1, so both the consistent
 * case and near misses are reached. Must not crash, leak or trip a sanitizer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/idxds.h"

#define MAX_BIN ((uint64_t)1 << 20)

static char dir[64];
static char prefix[96], out_prefix[96];

static void remove_dir(void)
{
    if (dir[0]) rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    snprintf(dir, sizeof dir, "/tmp/mg-fuzz-idx-XXXXXX");
    if (!mkdtemp(dir)) abort();
    snprintf(prefix, sizeof prefix, "%s/f", dir);
    snprintf(out_prefix, sizeof out_prefix, "%s/o", dir);
    atexit(remove_dir);
    return 0;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The .bin size the lengths in idx imply, as far as they are present; 0 if too large. */
static uint64_t implied_bin_size(const uint8_t *idx, size_t n)
{
    if (n < 34) return 0;
    uint64_t elem = mg_dtype_size(idx[17]), s = rd64(idx + 18), total = 0;
    for (uint64_t i = 0; i < s && 34 + 4 * i + 4 <= n; i++) {
        int32_t len;
        memcpy(&len, idx + 34 + 4 * i, 4);
        if (len > 0) total += (uint64_t)len * elem;
        if (total > MAX_BIN) return 0;
    }
    return total;
}

static void write_files(const uint8_t *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s.idx", prefix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data + 1, 1, size - 1, f) != size - 1) abort();
    fclose(f);
    uint64_t bin = data[0] & 0x80 ? (uint64_t)(data[0] & 0x7f)
                                  : implied_bin_size(data + 1, size - 1) + data[0] % 3;
    if (!(data[0] & 0x80) && bin > 0) bin -= 1;
    snprintf(path, sizeof path, "%s.bin", prefix);
    f = fopen(path, "wb");
    if (!f || ftruncate(fileno(f), (off_t)bin) != 0) abort();
    fclose(f);
}

static void remove_files(const char *p)
{
    char path[128];
    snprintf(path, sizeof path, "%s.idx", p);
    unlink(path);
    snprintf(path, sizeof path, "%s.bin", p);
    unlink(path);
}

static int same_arrays(const mg_idx *a, const mg_idx *b)
{
    if (a->n_sequences != b->n_sequences || a->n_doc_indices != b->n_doc_indices ||
        a->dtype != b->dtype || a->bin_size != b->bin_size || !a->modes != !b->modes)
        return 0;
    size_t s = (size_t)a->n_sequences, d = (size_t)a->n_doc_indices;
    return (s == 0 || memcmp(a->lengths, b->lengths, 4 * s) == 0) &&
           (s == 0 || memcmp(a->pointers, b->pointers, 8 * s) == 0) &&
           memcmp(a->doc_index, b->doc_index, 8 * d) == 0 &&
           (!a->modes || memcmp(a->modes, b->modes, s) == 0) &&
           (a->bin_size == 0 || memcmp(a->bin, b->bin, a->bin_size) == 0);
}

/* For an accepted dataset: read every token, copy it with add_index, reopen the copy. */
static void exercise(const mg_idx *d)
{
    int64_t sum = 0;
    for (uint64_t s = 0; s < d->n_sequences; s++)
        for (uint64_t j = 0; j < (uint64_t)d->lengths[s]; j++)
            sum += mg_idx_token(d, s, j) & 1;
    if (sum < 0) abort();
    mg_idx_writer *w;
    if (mg_idx_writer_create(&w, out_prefix, d->dtype) != MG_OK) abort();
    if (mg_idx_writer_add_index(w, prefix) != MG_OK || mg_idx_writer_finish(w) != MG_OK) abort();
    mg_idx_writer_free(w);
    mg_idx copy;
    if (mg_idx_open(&copy, out_prefix) != MG_OK || !same_arrays(d, &copy)) abort();
    mg_idx_close(&copy);
    remove_files(out_prefix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    write_files(data, size);
    mg_idx d;
    if (mg_idx_open(&d, prefix) == MG_OK) {
        exercise(&d);
        mg_idx_close(&d);
    } else if (d.priv_ || d.lengths || d.bin) {
        abort(); /* a failed open must leave a zeroed handle */
    }
    remove_files(prefix);
    return 0;
}
