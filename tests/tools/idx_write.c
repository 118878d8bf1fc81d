/* idx_write.c — test program for the interop tests of the indexed dataset module (mg/idxds.h).
 *
 *   idx_write write DTYPE_CODE PREFIX DOCS.txt   write PREFIX.bin/.idx with mg_idx_writer
 *   idx_write merge DIR OUT_PREFIX               mg_idx_merge_dir
 *   idx_write dump PREFIX                        print a dataset read with mg_idx_open
 *
 * DOCS.txt: one document per line; token ids separated by spaces, " | " between the
 * sequences of a document; an empty line is an empty document (add_document([], [])).
 * dump prints "dtype=C sequences=S documents=N" (plus " modes=m0,m1,..." when the dataset
 * has modes), then one line per document in the DOCS.txt syntax (sequences joined by " | ",
 * so a line is exactly Python's " | ".join(" ".join(ids) for each sequence)).
 * Exit status 0 on success, 1 on a library error (message on stderr), 2 on a usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "mg/idxds.h"

typedef struct {
    int64_t *tokens;
    int32_t *lengths;
    size_t n_tokens, n_lengths, cap_tokens, cap_lengths;
} doc_buf;

static int fail(void)
{
    fprintf(stderr, "idx_write: error: %s\n", mg_last_error());
    return 1;
}

static void push_token(doc_buf *b, int64_t v)
{
    if (b->n_tokens == b->cap_tokens) {
        b->cap_tokens = b->cap_tokens ? 2 * b->cap_tokens : 256;
        b->tokens = realloc(b->tokens, b->cap_tokens * sizeof *b->tokens);
        if (!b->tokens) abort();
    }
    b->tokens[b->n_tokens++] = v;
}

static void push_length(doc_buf *b, int32_t v)
{
    if (b->n_lengths == b->cap_lengths) {
        b->cap_lengths = b->cap_lengths ? 2 * b->cap_lengths : 16;
        b->lengths = realloc(b->lengths, b->cap_lengths * sizeof *b->lengths);
        if (!b->lengths) abort();
    }
    b->lengths[b->n_lengths++] = v;
}

/* Parses one line [s, end) into b: tokens, and a length per '|'-separated sequence. */
static void parse_line(doc_buf *b, const char *s, const char *end)
{
    b->n_tokens = b->n_lengths = 0;
    size_t seq_start = 0;
    int any = 0;
    while (s < end) {
        if (*s == ' ' || *s == '\t' || *s == '\r') {
            s++;
        } else if (*s == '|') {
            push_length(b, (int32_t)(b->n_tokens - seq_start));
            seq_start = b->n_tokens;
            s++;
        } else {
            char *next;
            push_token(b, strtoll(s, &next, 10));
            if (next == s) abort(); /* not a number: the test wrote a bad file */
            s = next;
        }
        any = 1;
    }
    if (any) push_length(b, (int32_t)(b->n_tokens - seq_start));
}

static int cmd_write(const char *code, const char *prefix, const char *docs_path)
{
    char *text;
    size_t len;
    if (mg_read_file(docs_path, &text, &len) != MG_OK) return fail();
    mg_idx_writer *w;
    mg_status st = mg_idx_writer_create(&w, prefix, (mg_dtype)atoi(code));
    doc_buf b = {0};
    for (const char *s = text; st == MG_OK && s < text + len;) {
        const char *nl = memchr(s, '\n', (size_t)(text + len - s));
        const char *end = nl ? nl : text + len;
        parse_line(&b, s, end);
        st = mg_idx_writer_add_document(w, b.tokens, b.n_tokens, b.lengths, b.n_lengths);
        s = end + 1;
    }
    if (st == MG_OK) st = mg_idx_writer_finish(w);
    if (st == MG_OK)
        printf("sequences=%" PRIu64 " documents=%" PRIu64 " tokens=%" PRIu64 "\n",
               mg_idx_writer_sequences(w), mg_idx_writer_documents(w), mg_idx_writer_tokens(w));
    if (st != MG_OK) fail();
    mg_idx_writer_free(w);
    free(b.tokens);
    free(b.lengths);
    free(text);
    return st == MG_OK ? 0 : 1;
}

static void dump_document(const mg_idx *d, uint64_t k)
{
    for (int64_t s = d->doc_index[k]; s < d->doc_index[k + 1]; s++) {
        if (s > d->doc_index[k]) fputs(" | ", stdout);
        for (int32_t j = 0; j < d->lengths[s]; j++)
            printf("%s%" PRId64, j ? " " : "", mg_idx_token(d, (uint64_t)s, (uint64_t)j));
    }
    putchar('\n');
}

static int cmd_dump(const char *prefix)
{
    mg_idx d;
    if (mg_idx_open(&d, prefix) != MG_OK) return fail();
    printf("dtype=%d sequences=%" PRIu64 " documents=%" PRIu64, (int)d.dtype, d.n_sequences,
           d.n_doc_indices - 1);
    if (d.modes) {
        fputs(" modes=", stdout);
        for (uint64_t i = 0; i < d.n_sequences; i++) printf("%s%d", i ? "," : "", d.modes[i]);
    }
    putchar('\n');
    for (uint64_t k = 0; k + 1 < d.n_doc_indices; k++) dump_document(&d, k);
    mg_idx_close(&d);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "write") == 0) return cmd_write(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "merge") == 0)
        return mg_idx_merge_dir(argv[2], argv[3]) == MG_OK ? 0 : fail();
    if (argc == 3 && strcmp(argv[1], "dump") == 0) return cmd_dump(argv[2]);
    fprintf(stderr, "usage: idx_write write DTYPE_CODE PREFIX DOCS.txt | merge DIR OUT_PREFIX"
                    " | dump PREFIX\n");
    return 2;
}
