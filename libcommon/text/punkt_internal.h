/* punkt_internal.h — what the Punkt splitter (punkt_split.c) needs from the model
 * (punkt.c): type lookups and the orthographic-context flags of NLTK's punkt.py. */
#ifndef MG_PUNKT_INTERNAL_H
#define MG_PUNKT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mg/punkt.h"

/* Orthographic context flags (NLTK _ORTHO_*). */
#define PK_BEG_UC (1 << 1)
#define PK_MID_UC (1 << 2)
#define PK_UNK_UC (1 << 3)
#define PK_BEG_LC (1 << 4)
#define PK_MID_LC (1 << 5)
#define PK_UNK_LC (1 << 6)
#define PK_UC (PK_BEG_UC | PK_MID_UC | PK_UNK_UC)
#define PK_LC (PK_BEG_LC | PK_MID_LC | PK_UNK_LC)

/* Builds a model from the contents of abbrev_types.txt, sent_starters.txt,
 * collocations.tab and ortho_context.tab (in that order; copied), checked and parsed as
 * mg_punkt_load does; `name` stands for the directory in messages (fuzzing, tests). */
mg_status pk_load_memory(mg_punkt **out, const char *const data[4], const size_t len[4],
                         const char *name);

/* Type strings are UTF-8 bytes. */
int pk_is_abbrev(const mg_punkt *p, const char *type, size_t len);
int pk_is_sent_starter(const mg_punkt *p, const char *type, size_t len);
/* (a, b) is a collocation. */
int pk_is_collocation(const mg_punkt *p, const char *a, size_t alen, const char *b,
                      size_t blen);
/* ortho_context[type] (0 when absent, as NLTK's defaultdict(int)). */
int64_t pk_ortho(const mg_punkt *p, const char *type, size_t len);

#endif
