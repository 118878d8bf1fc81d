/* hf_json.h — a Hugging Face byte-level BPE tokenizer, described (private to libcommon/tok).
 *
 * Contract:
 *   - mg_hf_desc holds everything the encoder needs, parsed from tokenizer.json
 *     (+ tokenizer_config.json) by hf_json.c, or from GPT-2 vocab.json + merges.txt by
 *     tok_gpt2.c; mg_hf_build() (tok_hf.c) turns a description into a tokenizer.
 *   - Strings (vocabulary entries, merge halves, added-token contents) are views into
 *     buffers the description owns (the parsed JSON trees, the merges text, the strings
 *     hf_vocab_scan.c decoded); nothing is copied per entry. tokenizer.json's model.vocab
 *     and model.merges are read by hf_vocab_scan.c when they are in its strict subset
 *     (the rest of the file, and any file outside that subset, by jansson). Vocabulary and merge strings are in byte-level form (byte_level.h).
 *   - Supported tokenizer.json: model BPE (vocab; merges as "a b" strings or ["a","b"]
 *     pairs; ignore_merges; dropout null/0; byte_fallback, unk_token, fuse_unk; empty or
 *     null continuing_subword_prefix / end_of_word_suffix); normalizer null, NFC, Prepend,
 *     Replace (String or Regex pattern), or a Sequence of those; pre_tokenizer: Split
 *     stages (Regex/String pattern, behavior, invert) then a final ByteLevel
 *     (add_prefix_space, use_regex) or a final Metaspace (replacement, prepend_scheme,
 *     split), possibly inside Sequences, or null. Without ByteLevel the model is
 *     char-initial (char_level: vocabulary strings are plain UTF-8, SentencePiece-style);
 *     byte_fallback with ByteLevel is refused.
 *     post_processor null, ByteLevel, TemplateProcessing, BertProcessing, RobertaProcessing
 *     or a Sequence of those. Anything else is MG_ERR_UNSUPPORTED
 *     "not supported yet: <feature> in <file>"; malformed files are MG_ERR_FORMAT naming
 *     the file and what is wrong.
 *   - tokenizer_config.json contributes eos_token (Megatron's eod), sep_token, and the
 *     named special tokens transformers registers as added tokens when missing.
 *   - Added for WordPiece (tok_hf_wordpiece.c builds those): model WordPiece (vocab,
 *     unk_token, continuing_subword_prefix, max_input_chars_per_word); normalizers NFD,
 *     NFKC, NFKD, Lowercase, StripAccents, BertNormalizer (utf8proc; strip_accents null =
 *     lowercase); pre-tokenizers BertPreTokenizer and Punctuation (WordPiece models only),
 *     Whitespace (Split \w+|[^\w\s]+ Removed, inverted, as HF) and Digits (Split \p{N},
 *     Isolated if individual_digits, else Contiguous); tokenizer_config.json
 *     clean_up_tokenization_spaces.
 *   - Added for Unigram (tok_hf_unigram.c builds those, parsing the model object itself):
 *     model Unigram (d->unigram = the model object); normalizer Precompiled (Unigram
 *     models only, first step: d->precompiled), Strip (normalize.c's step), Nmt (two
 *     regex Replace steps: the control characters it drops, the characters it maps to
 *     ' '); pre-tokenizer WhitespaceSplit (Split on MG_HF_WHITE_SPACE_RE, Removed);
 *     d->decoder = the "decoder" object.
 */
#ifndef MG_TOK_HF_JSON_H
#define MG_TOK_HF_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "mg/pretok.h"
#include "mg/tokenizer.h"
#include "tok/added_tokens.h"
#include "tok/normalize.h"

typedef struct {
    const char *s;
    size_t len;
} mg_hf_str;

typedef enum {
    MG_HF_PRE_SPLIT = 1,
    MG_HF_PRE_BYTE_LEVEL,
    MG_HF_PRE_METASPACE,
    MG_HF_PRE_BERT,        /* BertPreTokenizer (WordPiece models only) */
    MG_HF_PRE_PUNCTUATION, /* Punctuation(behavior) (WordPiece models only) */
} mg_hf_pre_kind;

typedef enum { MG_HF_PREPEND_ALWAYS = 0, MG_HF_PREPEND_FIRST, MG_HF_PREPEND_NEVER } mg_hf_prepend;

typedef struct {
    mg_hf_pre_kind kind;
    const char *pattern; /* Split: NUL-terminated pattern text */
    int is_regex;        /* Split: {"Regex": ...} (1) or {"String": ...} (0) */
    mg_split_behavior behavior;
    int invert;
    int add_prefix_space, use_regex; /* ByteLevel */
    char replacement[8];             /* Metaspace: one character, NUL-terminated */
    mg_hf_prepend prepend_scheme;    /* Metaspace */
    int split;                       /* Metaspace */
} mg_hf_pre_stage;

/* Runs of Rust's char::is_whitespace (Unicode White_Space) as an Oniguruma regex. */
#define MG_HF_WHITE_SPACE_RE                                                                 \
    "[\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"   \
    "\\x{3000}]+"

#define MG_HF_MAX_PRE 16
#define MG_HF_MAX_POST 16
#define MG_HF_MAX_NAMED 64
#define MG_HF_MAX_OWNED 4

typedef struct {
    char file[512]; /* the file named in messages */
    /* model */
    mg_hf_str *vocab;
    int64_t *vocab_id;
    size_t n_vocab;
    mg_hf_str *merge_l, *merge_r;
    size_t n_merges;
    int scanned_vocab, scanned_merges; /* filled by hf_vocab_scan.c, not from the DOM */
    int ignore_merges;
    int char_level;    /* no ByteLevel pre-tokenizer: SentencePiece-style char-initial BPE */
    int byte_fallback; /* model.byte_fallback */
    int fuse_unk;      /* model.fuse_unk */
    const char *unk_token; /* model.unk_token, NULL if none */
    /* added_tokens of tokenizer.json */
    mg_added_token *added;
    size_t n_added;
    /* named special tokens of tokenizer_config.json (or class defaults), added if missing */
    mg_added_token named[MG_HF_MAX_NAMED];
    size_t n_named;
    const char *eos_token, *sep_token; /* contents, NULL if unset */
    const char *cfg_unk_token;         /* tokenizer_config.json unk_token, NULL if unset */
    char tokenizer_class[64];          /* tokenizer_config.json tokenizer_class, "" if unset */
    int legacy, add_prefix_space;      /* tokenizer_config.json: 0/1, -1 if unset */
    /* Unigram (tok_hf_unigram.c): the model object (json_t) when model.type is "Unigram",
     * else NULL; the base64 charsmap of a Precompiled normalizer (Unigram only, first
     * step), else NULL; the "decoder" object (json_t), else NULL. */
    const void *unigram;
    const char *precompiled;
    const void *decoder;
    /* WordPiece (tok_hf_wordpiece.c): model.type is "WordPiece"; continuing_subword_prefix
     * (default "##"), max_input_chars_per_word (default 100); unk_token above (default
     * "[UNK]"). tokenizer_config.json clean_up_tokenization_spaces: 0/1, -1 if unset. */
    int wordpiece;
    const char *wp_prefix;
    int64_t wp_max_chars;
    int cleanup_spaces;
    mg_normalizer norm;
    mg_hf_pre_stage pre[MG_HF_MAX_PRE];
    size_t n_pre;
    /* post-processor: ids around the sequence (add_special_tokens=True) */
    int64_t prefix[MG_HF_MAX_POST], suffix[MG_HF_MAX_POST];
    size_t n_prefix, n_suffix;
    /* owned storage */
    void *json[MG_HF_MAX_OWNED]; /* json_t roots */
    size_t n_json;
    char *text[MG_HF_MAX_OWNED]; /* malloc'd buffers */
    size_t n_text;
} mg_hf_desc;

/* Zeroes a description (call before filling it). */
void mg_hf_desc_init(mg_hf_desc *d);
void mg_hf_desc_free(mg_hf_desc *d); /* frees what it owns; d itself is the caller's */

/* Parses tokenizer.json content buf[0, len); `name` is the file named in messages. */
mg_status mg_hf_desc_parse(mg_hf_desc *d, const char *buf, size_t len, const char *name);
/* Reads and parses a tokenizer.json file. */
mg_status mg_hf_desc_load(mg_hf_desc *d, const char *path);
/* Parses tokenizer_config.json content (eos/sep and named special tokens). */
mg_status mg_hf_config_parse(mg_hf_desc *d, const char *buf, size_t len, const char *name);
/* transformers 5 classes that rebuild the pipeline from vocab + merges when the file is
 * not ByteLevel (call after mg_hf_config_parse): LlamaTokenizer(Fast) = no normalizer,
 * Metaspace(prepend_scheme from legacy/add_prefix_space, split false), byte_fallback,
 * fuse_unk, no unk token; GemmaTokenizer(Fast) = Replace(" " -> "▁"), Split(" ",
 * MergedWithPrevious), byte_fallback, fuse_unk, unk = the config's unk_token. Other
 * classes keep the file's pipeline. */
mg_status mg_hf_apply_class(mg_hf_desc *d);
/* Takes ownership of a json_t root / a malloc'd buffer (freed with the description). */
mg_status mg_hf_desc_own_json(mg_hf_desc *d, void *json);
mg_status mg_hf_desc_own_text(mg_hf_desc *d, char *text);
/* Reads a whole file into a buffer the description owns (mg_read_file: NUL-terminated). */
mg_status mg_hf_desc_read(mg_hf_desc *d, const char *path, char **buf, size_t *len);

/* tok_hf.c: builds the tokenizer (fills tk: vtable, vocab_size, eod, describe). `kind`
 * names the tokenizer in the description line. Does not take ownership of d: the caller
 * frees it afterwards (the tokenizer keeps no pointer into it). */
/* tok_hf.c: builds whichever model d holds (Unigram, WordPiece, or BPE after transformers'
 * class rebuild, mg_hf_apply_class) with the HuggingFaceTokenizer semantics. d is modified
 * (class rebuild) but stays the caller's to free. */
mg_status mg_hf_build_model(mg_tokenizer *tk, mg_hf_desc *d, const mg_tok_opts *o);

mg_status mg_hf_build(mg_tokenizer *tk, const mg_hf_desc *d, const char *kind,
                      const mg_tok_opts *o);

#endif
