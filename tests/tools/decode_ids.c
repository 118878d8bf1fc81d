/* decode_ids.c — test program for the decode interop tests (mg_tokenizer_decode).
 *
 *   decode_ids [tokenizer flags as mg-preprocess] [--keep-going] < ids.txt
 *
 * Tokenizer flags: see tok_flags.h.
 * Each input line holds space-separated ids (an empty line = no ids); for each one line is
 * printed: the decoded text as a JSON string (so newlines and NUL survive), or with
 * --keep-going {"error": MESSAGE} when decoding fails (without it: exit status 1).
 * Exit status 2 on a usage error or a malformed id.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/tokenizer.h"
#include "tok_flags.h"

/* Parses the ids of one line into *ids. */
static void parse_ids(const char *line, size_t line_no, mg_ids *ids)
{
    ids->n = 0;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) return;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno) {
            fprintf(stderr, "decode_ids: error: line %zu: not an id: %.20s\n", line_no, p);
            exit(2);
        }
        if (mg_ids_push(ids, v) != MG_OK) exit(1);
        p = end;
    }
}

/* Prints s as one JSON value on its own line. */
static void print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    if (!s) exit(1);
    puts(s);
    free(s);
}

int main(int argc, char **argv)
{
    tok_flags o = {0};
    tok_flags_parse(&o, "decode_ids", argc, argv, NULL, NULL);
    mg_tokenizer *tk;
    if (mg_tokenizer_create(&tk, &o.tok) != MG_OK) {
        fprintf(stderr, "decode_ids: error: %s\n", mg_last_error());
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    mg_ids ids = {0};
    mg_text text = {0};
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, stdin) >= 0) {
        parse_ids(line, ++line_no, &ids);
        text.n = 0;
        if (mg_tokenizer_decode(tk, ids.v, ids.n, &text) == MG_OK) {
            print_json(json_stringn(text.n ? text.p : "", text.n));
        } else if (o.keep_going) {
            print_json(json_pack("{s:s}", "error", mg_last_error()));
        } else {
            fprintf(stderr, "decode_ids: error: line %zu: %s\n", line_no, mg_last_error());
            rc = 1;
        }
    }
    free(line);
    mg_ids_free(&ids);
    mg_text_free(&text);
    mg_tokenizer_free(tk);
    return rc;
}
