/* punkt.c — Punkt model loading (NLTK punkt_tab directories) and type lookups; see
 * mg/punkt.h. The four files are read whole and kept: the hash tables point into them.
 * Lines are split like Python's text-mode iteration with universal newlines ("\r\n", "\r"
 * and "\n" end a line; the last line may lack one) and one trailing newline is dropped
 * (nltk.tabdata.rm_nl). Sets and dicts follow NLTK's loader: later duplicates win in
 * ortho_context; collocation lines with other than two fields are kept by NLTK but can
 * never match, so they are skipped here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "mg/unicode.h"
#include "punkt_internal.h"

typedef struct {
    const char *s;
    size_t len;
    int64_t val;
} pk_entry;

typedef struct {
    pk_entry *slots; /* cap slots, s == NULL when free */
    size_t cap, n;
} pk_table;

enum { F_ABBREV, F_STARTERS, F_COLLOC, F_ORTHO, F_COUNT };

static const char *const file_names[F_COUNT] = {"abbrev_types.txt", "sent_starters.txt",
                                                "collocations.tab", "ortho_context.tab"};

struct mg_punkt {
    char *dir;
    char *data[F_COUNT];
    pk_table tables[F_COUNT];
};

/* ---- hash table ---------------------------------------------------------------------- */

static uint64_t hash_bytes(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

#define HASH_SEED 0xcbf29ce484222325ull

static mg_status table_init(pk_table *t, size_t n_lines)
{
    size_t cap = 16;
    while (cap < n_lines * 2 + 2) cap *= 2;
    t->slots = mg_calloc(cap, sizeof *t->slots);
    t->cap = cap;
    t->n = 0;
    return t->slots ? MG_OK : MG_ERR_NOMEM;
}

/* Finds the slot of the key whose bytes are a ++ sep ++ b (sep: 0 = none, else one byte). */
static pk_entry *table_find(const pk_table *t, const char *a, size_t alen, char sep,
                            const char *b, size_t blen)
{
    uint64_t h = hash_bytes(HASH_SEED, a, alen);
    if (sep) h = hash_bytes(hash_bytes(h, &sep, 1), b, blen);
    size_t klen = alen + (sep ? 1 + blen : 0);
    for (size_t i = (size_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        pk_entry *e = &t->slots[i];
        if (!e->s) return e;
        if (e->len != klen || memcmp(e->s, a, alen) != 0) continue;
        if (!sep || (e->s[alen] == sep && memcmp(e->s + alen + 1, b, blen) == 0)) return e;
    }
}

static void table_put(pk_table *t, const char *s, size_t len, int64_t val)
{
    pk_entry *e = table_find(t, s, len, 0, NULL, 0);
    if (!e->s) t->n++;
    e->s = s;
    e->len = len;
    e->val = val;
}

/* ---- lookups ------------------------------------------------------------------------- */

int pk_is_abbrev(const mg_punkt *p, const char *type, size_t len)
{
    return table_find(&p->tables[F_ABBREV], type, len, 0, NULL, 0)->s != NULL;
}

int pk_is_sent_starter(const mg_punkt *p, const char *type, size_t len)
{
    return table_find(&p->tables[F_STARTERS], type, len, 0, NULL, 0)->s != NULL;
}

int pk_is_collocation(const mg_punkt *p, const char *a, size_t alen, const char *b, size_t blen)
{
    return table_find(&p->tables[F_COLLOC], a, alen, '\t', b, blen)->s != NULL;
}

int64_t pk_ortho(const mg_punkt *p, const char *type, size_t len)
{
    const pk_entry *e = table_find(&p->tables[F_ORTHO], type, len, 0, NULL, 0);
    return e->s ? e->val : 0;
}

/* ---- parsing ------------------------------------------------------------------------- */

/* Python int(): surrounding whitespace, a sign, ASCII digits with single '_' between
 * them. Values beyond 64 bits keep their low bits (only the flag bits are used). */
static int parse_int(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r'))) i++;
    while (len > i && (s[len - 1] == ' ' || (s[len - 1] >= '\t' && s[len - 1] <= '\r'))) len--;
    int neg = i < len && s[i] == '-';
    if (i < len && (s[i] == '-' || s[i] == '+')) i++;
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < len; i++) {
        if (s[i] == '_' && digits && i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') continue;
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
        digits++;
    }
    if (!digits) return -1;
    *out = (int64_t)(neg ? (uint64_t)0 - v : v);
    return 0;
}

/* The next line of data[*pos, len): its bytes without the line end. 0 at the end. */
static int next_line(const char *data, size_t len, size_t *pos, const char **line,
                     size_t *llen)
{
    if (*pos >= len) return 0;
    size_t i = *pos;
    while (i < len && data[i] != '\n' && data[i] != '\r') i++;
    *line = data + *pos;
    *llen = i - *pos;
    if (i < len && data[i] == '\r' && i + 1 < len && data[i + 1] == '\n') i++;
    *pos = i < len ? i + 1 : i;
    return 1;
}

static size_t count_lines(const char *data, size_t len)
{
    size_t n = 0, pos = 0, l;
    const char *line;
    while (next_line(data, len, &pos, &line, &l)) n++;
    return n;
}

static mg_status parse_ortho_line(pk_table *t, const char *path, size_t line_no,
                                  const char *line, size_t len)
{
    const char *tab = memchr(line, '\t', len);
    int64_t v;
    if (!tab || memchr(tab + 1, '\t', len - (size_t)(tab + 1 - line)))
        return mg_error_set(MG_ERR_FORMAT, "%s:%zu: expected two tab-separated fields", path,
                            line_no);
    if (parse_int(tab + 1, len - (size_t)(tab + 1 - line), &v) != 0)
        return mg_error_set(MG_ERR_FORMAT, "%s:%zu: invalid integer '%.*s'", path, line_no,
                            (int)(len - (size_t)(tab + 1 - line)), tab + 1);
    table_put(t, line, (size_t)(tab - line), v);
    return MG_OK;
}

static mg_status parse_file(mg_punkt *p, int f, const char *path)
{
    const char *data = p->data[f];
    size_t len = strlen(data), pos = 0, l, line_no = 0;
    const char *line;
    MG_FORWARD(table_init(&p->tables[f], count_lines(data, len)));
    while (next_line(data, len, &pos, &line, &l)) {
        line_no++;
        if (f == F_ORTHO) {
            MG_FORWARD(parse_ortho_line(&p->tables[f], path, line_no, line, l));
            continue;
        }
        const char *tab = memchr(line, '\t', l);
        int two_fields = tab && !memchr(tab + 1, '\t', l - (size_t)(tab + 1 - line));
        if (f == F_COLLOC && !two_fields) continue;
        table_put(&p->tables[f], line, l, 1);
    }
    return MG_OK;
}

/* "a/b", without the trailing slashes of a. */
static char *join_path(const char *a, const char *b)
{
    size_t alen = strlen(a);
    while (alen > 1 && a[alen - 1] == '/') alen--;
    size_t n = alen + strlen(b) + 2;
    char *s = mg_malloc(n);
    if (s) snprintf(s, n, "%.*s/%s", (int)alen, a, b);
    return s;
}

/* Checks and parses p->data[f] (len bytes) read from path. */
static mg_status check_and_parse(mg_punkt *p, int f, const char *path, size_t len)
{
    if (strlen(p->data[f]) != len)
        return mg_error_set(MG_ERR_FORMAT, "%s: contains a NUL byte", path);
    size_t valid = mg_utf8_validate((const uint8_t *)p->data[f], len);
    if (valid != len)
        return mg_error_set(MG_ERR_FORMAT, "%s: invalid UTF-8 at byte %zu", path, valid);
    return parse_file(p, f, path);
}

static mg_status load_file(mg_punkt *p, int f)
{
    char *path = join_path(p->dir, file_names[f]);
    if (!path) return MG_ERR_NOMEM;
    size_t len;
    mg_status st = mg_read_file(path, &p->data[f], &len);
    if (st == MG_OK) st = check_and_parse(p, f, path, len);
    free(path);
    return st;
}

static mg_punkt *new_model(const char *dir, size_t n)
{
    mg_punkt *p = mg_calloc(1, sizeof *p);
    if (p) p->dir = mg_malloc(n + 1);
    if (p && !p->dir) {
        free(p);
        return NULL;
    }
    if (p) {
        memcpy(p->dir, dir, n);
        p->dir[n] = 0;
    }
    return p;
}

static mg_status load_failed(mg_punkt *p, mg_status st)
{
    mg_error_prefix("loading Punkt model");
    mg_punkt_free(p);
    return st;
}

mg_status mg_punkt_load(mg_punkt **out, const char *dir)
{
    *out = NULL;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    mg_punkt *p = new_model(dir, n);
    if (!p) return MG_ERR_NOMEM;
    if (!mg_is_dir(p->dir))
        return load_failed(p, mg_error_set(MG_ERR_NOTFOUND, "%s: no such directory", p->dir));
    for (int f = 0; f < F_COUNT; f++) {
        mg_status st = load_file(p, f);
        if (st != MG_OK) return load_failed(p, st);
    }
    *out = p;
    return MG_OK;
}

mg_status pk_load_memory(mg_punkt **out, const char *const data[4], const size_t len[4],
                         const char *name)
{
    *out = NULL;
    mg_punkt *p = new_model(name, strlen(name));
    if (!p) return MG_ERR_NOMEM;
    for (int f = 0; f < F_COUNT; f++) {
        p->data[f] = mg_malloc(len[f] + 1);
        if (!p->data[f]) return load_failed(p, MG_ERR_NOMEM);
        memcpy(p->data[f], data[f], len[f]);
        p->data[f][len[f]] = 0;
        char *path = join_path(name, file_names[f]);
        mg_status st = path ? check_and_parse(p, f, path, len[f]) : MG_ERR_NOMEM;
        free(path);
        if (st != MG_OK) return load_failed(p, st);
    }
    *out = p;
    return MG_OK;
}

void mg_punkt_free(mg_punkt *p)
{
    if (!p) return;
    for (int f = 0; f < F_COUNT; f++) {
        free(p->data[f]);
        free(p->tables[f].slots);
    }
    free(p->dir);
    free(p);
}

const char *mg_punkt_dir(const mg_punkt *p)
{
    return p->dir;
}

/* ---- finding a model ----------------------------------------------------------------- */

/* NLTK's _punkt_language(): one path segment of letters, digits, '-' and '_'. */
static int lang_ok(const char *lang)
{
    if (!*lang) return 0;
    for (const char *c = lang; *c; c++) {
        int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                 (*c >= '0' && *c <= '9') || *c == '-' || *c == '_';
        if (!ok) return 0;
    }
    return 1;
}

/* Appends "root/tokenizers/punkt_tab/lang" to the search list text (for the message) and
 * returns it when it is a directory. */
static char *try_root(const char *root, size_t rlen, const char *lang, char *searched,
                      size_t ssize)
{
    size_t n = rlen + strlen(lang) + 32;
    char *d = mg_malloc(n);
    if (!d) return NULL;
    snprintf(d, n, "%.*s/tokenizers/punkt_tab/%s", (int)rlen, root, lang);
    if (mg_is_dir(d)) return d;
    size_t used = strlen(searched);
    snprintf(searched + used, ssize - used, "%s%s", used ? ", " : "", d);
    free(d);
    return NULL;
}

static char *search_default(const char *lang, char *searched, size_t ssize)
{
    const char *env = getenv("NLTK_DATA");
    for (const char *s = env; s && *s;) {
        const char *colon = strchr(s, ':');
        size_t rlen = colon ? (size_t)(colon - s) : strlen(s);
        char *d = rlen ? try_root(s, rlen, lang, searched, ssize) : NULL;
        if (d) return d;
        s = colon ? colon + 1 : s + rlen;
    }
    static const char *const roots[] = {"/usr/share/nltk_data", "/usr/local/share/nltk_data",
                                        "/usr/lib/nltk_data", "/usr/local/lib/nltk_data"};
    const char *home = getenv("HOME");
    if (home && *home) {
        char *h = join_path(home, "nltk_data");
        char *d = h ? try_root(h, strlen(h), lang, searched, ssize) : NULL;
        free(h);
        if (d) return d;
    }
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char *d = try_root(roots[i], strlen(roots[i]), lang, searched, ssize);
        if (d) return d;
    }
    return NULL;
}

mg_status mg_punkt_load_lang(mg_punkt **out, const char *punkt_dir, const char *lang)
{
    *out = NULL;
    if (!lang_ok(lang))
        return mg_error_set(MG_ERR_ARG, "invalid Punkt language name '%s' (letters, digits, "
                                        "'-' and '_' only)", lang);
    if (punkt_dir) {
        char *d = join_path(punkt_dir, lang);
        if (!d) return MG_ERR_NOMEM;
        mg_status st = mg_punkt_load(out, d);
        free(d);
        return st;
    }
    char searched[MG_ERROR_MAX / 2] = "";
    char *d = search_default(lang, searched, sizeof searched);
    if (!d)
        return mg_error_set(MG_ERR_NOTFOUND, "Punkt model '%s' not found (searched %s); give "
                            "--punkt-dir DIR holding DIR/%s/ in NLTK's punkt_tab format",
                            lang, searched, lang);
    mg_status st = mg_punkt_load(out, d);
    free(d);
    return st;
}
