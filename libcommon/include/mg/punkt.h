/* mg/punkt.h — NLTK Punkt sentence splitting with given parameters (no training).
 *
 * Contract:
 *   - Reproduces nltk.tokenize.punkt.PunktSentenceTokenizer.tokenize(text) of NLTK 3.10.4
 *     (nltk/tokenize/punkt.py, regexes run by the `regex` module) for a model in NLTK's
 *     punkt_tab format: a directory with abbrev_types.txt, sent_starters.txt (one type a
 *     line), collocations.tab (two types a line, tab-separated) and ortho_context.tab (type,
 *     tab, integer flags), read as UTF-8 text with universal newlines like NLTK's
 *     load_punkt_params().
 *   - keep_newlines selects Megatron's CustomLanguageVars (tools/preprocess_data.py
 *     --keep-newlines): the period-context regex "\S* [.?!] \s* (?=NonWord | \S+)", so the
 *     whitespace after a sentence end stays in that sentence.
 *   - Indices follow Python: text is handled as code points (a malformed UTF-8 byte counts
 *     as one code point), spans are returned as byte offsets into the caller's text. Case
 *     tests and lowercasing follow Python's str.isupper/islower/lower (Unicode data of this
 *     library and utf8proc; without utf8proc only ASCII and Latin-1 letters are lowercased).
 *   - A model (mg_punkt) is immutable after loading and may be shared by threads; a splitter
 *     (mg_punkt_splitter) holds one thread's scratch buffers.
 */
#ifndef MG_PUNKT_H
#define MG_PUNKT_H

#include <stddef.h>

#include "mg/error.h"

/* Megatron's preprocess_data.py splits a text in pieces of this many code points and
 * tokenizes each piece separately. */
#define MG_PUNKT_MEGATRON_CHUNK 1000000

typedef struct mg_punkt mg_punkt;
typedef struct mg_punkt_splitter mg_punkt_splitter;

typedef struct {
    size_t start, end; /* byte offsets, start <= end */
} mg_punkt_span;

/* Loads the model in directory `dir` (the four files above). Missing file: MG_ERR_NOTFOUND;
 * malformed line: MG_ERR_FORMAT naming file:line. */
mg_status mg_punkt_load(mg_punkt **out, const char *dir);

/* Loads model `lang` (letters, digits, '-', '_' only) from punkt_dir/lang when punkt_dir is
 * not NULL, else from the first of $NLTK_DATA (':'-separated), ~/nltk_data,
 * /usr/share/nltk_data, /usr/local/share/nltk_data, /usr/lib/nltk_data,
 * /usr/local/lib/nltk_data holding tokenizers/punkt_tab/lang (NLTK's search order, less
 * the Python-prefix folders). Not found: MG_ERR_NOTFOUND naming the folders searched. */
mg_status mg_punkt_load_lang(mg_punkt **out, const char *punkt_dir, const char *lang);

void mg_punkt_free(mg_punkt *p); /* accepts NULL */

/* The directory the model was loaded from. */
const char *mg_punkt_dir(const mg_punkt *p);

/* A splitter for one thread; p must outlive it. */
mg_status mg_punkt_splitter_create(mg_punkt_splitter **out, const mg_punkt *p,
                                   int keep_newlines);
void mg_punkt_splitter_free(mg_punkt_splitter *s); /* accepts NULL */

/* Splits text[0, len) into sentences: the text is cut into pieces of chunk_chars code
 * points (0: one piece), each piece is tokenized as PunktSentenceTokenizer.tokenize does
 * (realign_boundaries=True) and the sentences of all pieces are returned in order, as
 * byte spans into text (an empty sentence can occur, as in NLTK). *spans is owned by the
 * splitter and valid until its next call. Fails only for lack of memory. */
mg_status mg_punkt_split(mg_punkt_splitter *s, const char *text, size_t len, size_t chunk_chars,
                         const mg_punkt_span **spans, size_t *n_spans);

#endif /* MG_PUNKT_H */
