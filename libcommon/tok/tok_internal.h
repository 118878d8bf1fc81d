/* tok_internal.h — what every tokenizer implementation provides to the mg/tokenizer.h facade.
 * Private to libcommon/tok/; tools include only mg/tokenizer.h.
 *
 * Each --tokenizer-type has a constructor mg_tok_<kind>_create() that fills a
 * zero-initialised struct mg_tokenizer: its vtable, Megatron's vocab_size and eod, a
 * description line, and its private implementation pointer. The facade (tokenizer.c)
 * dispatches on the type name and owns the struct.
 */
#ifndef MG_TOK_INTERNAL_H
#define MG_TOK_INTERNAL_H

#include "mg/tokenizer.h"

struct mg_tok_vtbl {
    /* Per-thread encoder state (caches, scratch); *state may be set to NULL if none. */
    mg_status (*encoder_create)(const mg_tokenizer *tk, void **state);
    void (*encoder_free)(void *state);
    /* Appends the ids of text (valid UTF-8 already checked by the facade... see tokenizer.c). */
    mg_status (*encode)(const mg_tokenizer *tk, void *state, const char *text, size_t len,
                        mg_ids *out);
    void (*free)(void *impl);
    /* Appends the decoded text of ids (already checked to lie in [0, vocab_size)); NULL if
     * this tokenizer cannot decode yet. */
    mg_status (*decode)(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out);
};

struct mg_tokenizer {
    const struct mg_tok_vtbl *vt;
    int64_t vocab_size; /* Megatron's tokenizer.vocab_size */
    int64_t eod;        /* Megatron's tokenizer.eod, -1 if none */
    int accepts_lone_surrogates; /* 1: U+D800..DFFF become U+FFFD (tiktoken); 0: error */
    char describe[512];
    void *impl;
};

mg_status mg_tok_gpt2_create(mg_tokenizer *tk, const mg_tok_opts *o);     /* tok_gpt2.c */
mg_status mg_tok_hf_create(mg_tokenizer *tk, const mg_tok_opts *o);       /* tok_hf.c */
mg_status mg_tok_tiktoken_create(mg_tokenizer *tk, const mg_tok_opts *o); /* tok_tiktoken.c */
mg_status mg_tok_null_create(mg_tokenizer *tk, const mg_tok_opts *o);     /* tok_null.c */
mg_status mg_tok_spm_create(mg_tokenizer *tk, const mg_tok_opts *o);      /* tok_spm.c */
mg_status mg_tok_bert_create(mg_tokenizer *tk, const mg_tok_opts *o);     /* tok_bert.c */

#endif
