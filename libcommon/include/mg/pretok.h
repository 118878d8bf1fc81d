/* mg/pretok.h — pre-tokenisation: splitting text into pieces before BPE.
 *
 * Contract:
 *   - A splitter is built from a regex string as found in a tokenizer.json Split
 *     pre-tokenizer or in tiktoken (pattern text compared byte for byte with the known
 *     families), or from a family name. Known families run a hand-written scanner over
 *     the Unicode class tables (mg/unicode.h); any other regex runs on Oniguruma (the
 *     engine HF tokenizers uses), giving identical pieces. Without Oniguruma an unknown
 *     regex is MG_ERR_UNSUPPORTED ("not supported yet: pre-tokenizer regex ... in FILE").
 *   - A splitter may be a Sequence: each stage re-splits every piece of the stage before
 *     (HF pre_tokenizers.Sequence), each stage with its own Split behaviour.
 *   - HF Split behaviours: ISOLATED (matches and gaps are pieces), REMOVED (matches
 *     dropped), MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS; `invert` swaps matches
 *     and gaps.
 *   - Splitting never allocates per piece: it appends (offset, length) spans to a
 *     caller-owned mg_spans, offsets relative to the text passed in. Empty pieces are never
 *     emitted. The concatenation of the emitted pieces equals the input except for
 *     REMOVED parts.
 *   - Input is valid UTF-8 (callers validate); a splitter is immutable after creation and
 *     may be shared by threads, each using its own mg_pretok_scratch.
 *   - Each piece boundary behaves as end of text (\s+(?!\S) at a piece end matches the
 *     whole run), as HF does when stages are chained.
 *   - Regex dialects (added): the same pattern text can mean different things to the two
 *     engines. MG_REGEX_HF is Oniguruma with its default syntax, as HF tokenizers compiles a
 *     tokenizer.json Split regex (there `\p{N}{1,3}+` is a nested repeat = `\p{N}+`, and `$`
 *     is end of line); MG_REGEX_TIKTOKEN is tiktoken's fancy-regex (`{1,3}+` possessive, `$`
 *     end of text). mg_pretok_add_regex() is the HF dialect. A family is picked only where
 *     its scanner gives the engine's exact pieces in that dialect (checked by differential
 *     tests against Oniguruma).
 *   - Unicode classes are those of Unicode 16.0 (both peers); the Oniguruma fallback uses
 *     the system library's tables (Debian 6.9.8: Unicode 14.0), see mg/unicode.h.
 */
#ifndef MG_PRETOK_H
#define MG_PRETOK_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct {
    uint32_t off, len;
} mg_span;

typedef struct {
    mg_span *v;
    size_t n, cap;
} mg_spans;

/* Appends one span, growing the array. */
mg_status mg_spans_push(mg_spans *s, uint32_t off, uint32_t len);
void mg_spans_free(mg_spans *s);

typedef enum {
    MG_SPLIT_ISOLATED = 0,
    MG_SPLIT_REMOVED,
    MG_SPLIT_MERGED_WITH_PREVIOUS,
    MG_SPLIT_MERGED_WITH_NEXT,
    MG_SPLIT_CONTIGUOUS,
} mg_split_behavior;

/* Known regex families with a hand-written scanner. */
typedef enum {
    MG_PRETOK_GENERIC = 0,     /* Oniguruma */
    MG_PRETOK_GPT2,            /* GPT-2 / r50k / p50k, HF ByteLevel built-in regex */
    MG_PRETOK_CL100K_HF,       /* original cl100k = Llama-3 (tokenizer.json form) */
    MG_PRETOK_CL100K_TIKTOKEN, /* tiktoken >= 0.8 cl100k (possessive, \s++$) */
    MG_PRETOK_QWEN2,           /* cl100k with single \p{N} (Qwen2/2.5/3) */
    MG_PRETOK_O200K,           /* o200k_base */
    MG_PRETOK_MEGATRON_V1,     /* Megatron TikTokenizer pattern v1 */
    MG_PRETOK_MEGATRON_V2,     /* Megatron TikTokenizer pattern v2 */
    MG_PRETOK_DEEPSEEK_V3_1,   /* DeepSeek-V3 stage 1: \p{N}{1,3} */
    MG_PRETOK_DEEPSEEK_V3_2,   /* DeepSeek-V3 stage 2: CJK/kana runs */
    MG_PRETOK_DEEPSEEK_V3_3,   /* DeepSeek-V3 stage 3 */
    /* added: the tiktoken >= 0.8 cl100k text found in a tokenizer.json and run by HF's
     * Oniguruma: as CL100K_TIKTOKEN but with unbounded digit runs ({1,3}+ = (?:{1,3})+) */
    MG_PRETOK_CL100K_TIKTOKEN_ONIG,
    MG_PRETOK_FAMILY_COUNT_ /* not a family */
} mg_pretok_family;

/* Which engine's reading of a pattern text applies (added). */
typedef enum {
    MG_REGEX_HF = 0,   /* HF tokenizers: Oniguruma, OnigDefaultSyntax, no options */
    MG_REGEX_TIKTOKEN, /* tiktoken: fancy-regex over Rust regex */
} mg_regex_dialect;

typedef struct mg_pretok mg_pretok;
typedef struct mg_pretok_scratch mg_pretok_scratch; /* per-thread working memory */

/* Creates an empty splitter (a Sequence of zero stages: the whole text is one piece). */
mg_status mg_pretok_create(mg_pretok **p);
/* Appends a Split stage for `regex` (fast scanner if it is a known family's text). */
mg_status mg_pretok_add_regex(mg_pretok *p, const char *regex, mg_split_behavior b, int invert);
/* Appends a Split stage for `regex` read in dialect d (added). */
mg_status mg_pretok_add_regex_dialect(mg_pretok *p, const char *regex, mg_regex_dialect d,
                                      mg_split_behavior b, int invert);
/* Appends a Split stage whose pattern is a literal string (HF {"String": ...}). */
mg_status mg_pretok_add_literal(mg_pretok *p, const char *str, mg_split_behavior b, int invert);
/* Appends a stage by family (ISOLATED, not inverted). */
mg_status mg_pretok_add_family(mg_pretok *p, mg_pretok_family f);
/* Family of stage i (MG_PRETOK_GENERIC for a regex without scanner); for tests/logging. */
mg_pretok_family mg_pretok_stage_family(const mg_pretok *p, size_t i);
size_t mg_pretok_stages(const mg_pretok *p);
/* The regex text of a family (NULL for GENERIC). */
const char *mg_pretok_family_regex(mg_pretok_family f);
/* The dialect in which the family's regex text has the family's meaning (added). */
mg_regex_dialect mg_pretok_family_dialect(mg_pretok_family f);
/* Short name ("gpt2", "cl100k", "cl100k-tiktoken", "qwen2", "o200k", "megatron-v1",
 * "megatron-v2", "deepseek-v3-1".."-3", "cl100k-tiktoken-onig") and back (added);
 * the lookup returns MG_PRETOK_GENERIC for an unknown name. */
const char *mg_pretok_family_name(mg_pretok_family f);
mg_pretok_family mg_pretok_family_from_name(const char *name);
/* Forces the generic engine for every stage (the differential fuzz oracle). */
void mg_pretok_force_generic(mg_pretok *p, int on);

mg_status mg_pretok_scratch_create(mg_pretok_scratch **s);
void mg_pretok_scratch_free(mg_pretok_scratch *s);

/* Splits text[0, len) and appends the pieces to out (out->n is not reset). */
mg_status mg_pretok_split(const mg_pretok *p, mg_pretok_scratch *s, const char *text,
                          size_t len, mg_spans *out);

void mg_pretok_free(mg_pretok *p); /* accepts NULL */

#endif
