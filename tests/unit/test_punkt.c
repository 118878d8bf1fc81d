/* test_punkt.c — Punkt model loading and sentence splitting (mg/punkt.h). The expected
 * sentences were produced by NLTK 3.10.4's PunktSentenceTokenizer with the same parameters
 * (and Megatron's CustomLanguageVars for keep_newlines); tests/interop/test_punkt.py
 * compares whole corpora against NLTK. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "mg/punkt.h"
#include "text/punkt_internal.h"

static const char *const model_files[4][2] = {
    {"abbrev_types.txt", "mr\ndr\nu.s"},
    {"sent_starters.txt", "however\n"},
    {"collocations.tab", "s.\tbach\n"},
    {"ortho_context.tab", "the\t34\nbach\t2\n"},
};

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Writes the model above into DIR = t->dir/root/tokenizers/punkt_tab/english; returns DIR. */
static const char *write_model(mg_test_ctx *t)
{
    static char dir[512];
    const char *parts[] = {"root", "root/tokenizers", "root/tokenizers/punkt_tab",
                           "root/tokenizers/punkt_tab/english"};
    for (size_t i = 0; i < 4; i++) mkdir(mg_test_path(t, parts[i]), 0700);
    snprintf(dir, sizeof dir, "%s", mg_test_path(t, parts[3]));
    for (size_t i = 0; i < 4; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, model_files[i][0]);
        write_text(p, model_files[i][1]);
    }
    return dir;
}

/* Checks that splitting text gives the sentences in want (NULL-terminated). */
static void check_split(mg_test_ctx *t, mg_punkt_splitter *s, const char *text, size_t chunk,
                        const char *const *want)
{
    const mg_punkt_span *sp;
    size_t n = 0, k = 0;
    MG_CHECK_OK(t, mg_punkt_split(s, text, strlen(text), chunk, &sp, &n));
    while (want[k]) k++;
    MG_CHECK_EQ_INT(t, n, k);
    for (size_t i = 0; i < n && i < k; i++) {
        char got[256];
        snprintf(got, sizeof got, "%.*s", (int)(sp[i].end - sp[i].start), text + sp[i].start);
        MG_CHECK_EQ_STR(t, got, want[i]);
    }
}

typedef struct {
    const char *text;
    const char *stock[5];
    const char *keep[5];
} split_case;

static const split_case cases[] = {
    {"Hello Mr. Smith. How are you? I am fine.",
     {"Hello Mr. Smith.", "How are you?", "I am fine.", NULL},
     {"Hello Mr. Smith. ", "How are you? ", "I am fine.", NULL}},
    {"One.\n\nTwo.  Three.  ", {"One.", "Two.", "Three.", NULL},
     {"One.\n\n", "Two.  ", "Three.", NULL}},
    {"(Sent one.) Sent two.", {"(Sent one.)", "Sent two.", NULL},
     {"(Sent one.)", "Sent two.", NULL}},
    {"He lives in the U.S. However, he left.",
     {"He lives in the U.S.", "However, he left.", NULL},
     {"He lives in the U.S. ", "However, he left.", NULL}},
    {"J. S. Bach. The end.", {"J. S. Bach.", "The end.", NULL},
     {"J. S. Bach. ", "The end.", NULL}},
    {"Wait... the end. Ok!!! \"Yes.\" No", {"Wait... the end.", "Ok!!!", "\"Yes.\"", "No", NULL},
     {"Wait... the end. ", "Ok!!! ", "\"Yes.\"", "No", NULL}},
    {"", {NULL}, {NULL}},
    {"  \n ", {NULL}, {NULL}},
};

MG_TEST(punkt_split_matches_nltk)
{
    mg_punkt *p;
    mg_punkt_splitter *stock, *keep;
    MG_CHECK_OK(t, mg_punkt_load(&p, write_model(t)));
    if (!p) return;
    MG_CHECK_OK(t, mg_punkt_splitter_create(&stock, p, 0));
    MG_CHECK_OK(t, mg_punkt_splitter_create(&keep, p, 1));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_split(t, stock, cases[i].text, 0, cases[i].stock);
        check_split(t, keep, cases[i].text, 0, cases[i].keep);
    }
    /* Megatron's pieces: NLTK on "Ab. Cd. Ef. Gh."[i:i+5] for i = 0, 5, 10 */
    static const char *const pieces[] = {"Ab.", "C", "d. Ef", ".", "Gh.", NULL};
    check_split(t, stock, "Ab. Cd. Ef. Gh.", 5, pieces);
    mg_punkt_splitter_free(stock);
    mg_punkt_splitter_free(keep);
    mg_punkt_free(p);
}

MG_TEST(punkt_load_lang_search)
{
    const char *dir = write_model(t);
    mg_punkt *p = NULL;
    char root[600], punkt_dir[700];
    snprintf(root, sizeof root, "%s", mg_test_path(t, "root"));
    snprintf(punkt_dir, sizeof punkt_dir, "%s/tokenizers/punkt_tab/", root);
    MG_CHECK_OK(t, mg_punkt_load_lang(&p, punkt_dir, "english"));
    MG_CHECK(t, p && strstr(mg_punkt_dir(p), "punkt_tab/english"));
    mg_punkt_free(p);
    char env[800];
    snprintf(env, sizeof env, "/nonexistent::%s", root);
    setenv("NLTK_DATA", env, 1);
    MG_CHECK_OK(t, mg_punkt_load_lang(&p, NULL, "english"));
    MG_CHECK(t, p && strcmp(mg_punkt_dir(p), dir) == 0);
    mg_punkt_free(p);
    MG_CHECK_ERR(t, mg_punkt_load_lang(&p, NULL, "german"), MG_ERR_NOTFOUND,
                 "'german' not found (searched /nonexistent/tokenizers/punkt_tab/german, ");
    unsetenv("NLTK_DATA");
    MG_CHECK_ERR(t, mg_punkt_load_lang(&p, punkt_dir, "../english"), MG_ERR_ARG,
                 "invalid Punkt language name");
    MG_CHECK_ERR(t, mg_punkt_load_lang(&p, punkt_dir, ""), MG_ERR_ARG, "invalid Punkt");
    MG_CHECK(t, p == NULL);
}

MG_TEST(punkt_load_errors)
{
    const char *dir = write_model(t);
    char path[700];
    mg_punkt *p = NULL;
    MG_CHECK_ERR(t, mg_punkt_load(&p, mg_test_path(t, "nope")), MG_ERR_NOTFOUND,
                 "no such directory");
    snprintf(path, sizeof path, "%s/ortho_context.tab", dir);
    write_text(path, "the\t34\nbach\tx2\n");
    MG_CHECK_ERR(t, mg_punkt_load(&p, dir), MG_ERR_FORMAT,
                 "ortho_context.tab:2: invalid integer 'x2'");
    write_text(path, "the\t34\nbach\n");
    MG_CHECK_ERR(t, mg_punkt_load(&p, dir), MG_ERR_FORMAT,
                 "ortho_context.tab:2: expected two tab-separated fields");
    write_text(path, "th\xc3\t34\n");
    MG_CHECK_ERR(t, mg_punkt_load(&p, dir), MG_ERR_FORMAT, "ortho_context.tab: invalid UTF-8");
    remove(path);
    MG_CHECK_ERR(t, mg_punkt_load(&p, dir), MG_ERR_NOTFOUND, "ortho_context.tab");
    MG_CHECK(t, p == NULL);
}

MG_TEST(punkt_memory_loader_follows_nltk_files)
{
    /* universal newlines, later ortho duplicates win, Python int() forms, collocation lines
     * with other than two fields never match */
    const char *data[4] = {"mr\r\ndr\rst\n\n", "however", "a\tb\r\nc\td\te\n",
                           "the\t 1_0 \r\nx\t-3\nthe\t+34\n"};
    size_t len[4];
    for (int i = 0; i < 4; i++) len[i] = strlen(data[i]);
    mg_punkt *p = NULL;
    MG_CHECK_OK(t, pk_load_memory(&p, data, len, "mem"));
    if (!p) return;
    MG_CHECK(t, pk_is_abbrev(p, "mr", 2) && pk_is_abbrev(p, "dr", 2));
    MG_CHECK(t, pk_is_abbrev(p, "st", 2));
    MG_CHECK(t, pk_is_abbrev(p, "", 0) && !pk_is_abbrev(p, "m", 1));
    MG_CHECK(t, pk_is_sent_starter(p, "however", 7));
    MG_CHECK(t, pk_is_collocation(p, "a", 1, "b", 1) && !pk_is_collocation(p, "c", 1, "d", 1));
    MG_CHECK_EQ_INT(t, pk_ortho(p, "the", 3), 34);
    MG_CHECK_EQ_INT(t, pk_ortho(p, "x", 1), -3);
    MG_CHECK_EQ_INT(t, pk_ortho(p, "y", 1), 0);
    mg_punkt_free(p);
    const char *nul[4] = {"a\0b", "", "", ""};
    size_t nlen[4] = {3, 0, 0, 0};
    MG_CHECK_ERR(t, pk_load_memory(&p, nul, nlen, "mem"), MG_ERR_FORMAT,
                 "mem/abbrev_types.txt: contains a NUL byte");
}
