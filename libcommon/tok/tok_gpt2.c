/* tok_gpt2.c — Megatron's GPT2BPETokenizer: --vocab-file vocab.json + --merge-file merges.txt.
 *
 * Megatron HEAD builds the Hugging Face GPT-2 tokenizer from the two files (transformers 5
 * GPT2Tokenizer): byte-level BPE with the GPT-2 regex (ByteLevel, add_prefix_space false),
 * no normalizer, no BOS/EOS added, <|endoftext|> registered as the unk/bos/eos special
 * token (so it is matched in text), eod = its id (50256), vocab_size = len(tokenizer) =
 * 50257. merges.txt is read as tokenizers does: lines starting with "#version" are
 * skipped, every other line must be two tokens separated by exactly one space.
 * The description is handed to the shared engine in tok_hf.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "tok/hf_json.h"
#include "tok/hf_vocab_scan.h"
#include "tok/tok_internal.h"

static const char endoftext[] = "<|endoftext|>";

static mg_status load_vocab(mg_hf_desc *d, const char *path)
{
    char *buf;
    size_t len;
    MG_FORWARD(mg_read_file(path, &buf, &len));
    mg_status st = mg_hf_scan_vocab_json(d, buf, len);
    if (st != MG_OK || d->scanned_vocab) {
        free(buf);
        return st;
    }
    json_error_t err; /* outside the scanner's subset: jansson reads it, or says what is wrong */
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, &err);
    free(buf);
    if (!root)
        return mg_error_set(MG_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", path, err.line,
                            err.column, err.text);
    MG_FORWARD(mg_hf_desc_own_json(d, root));
    MG_RETURN_IF(!json_is_object(root), MG_ERR_FORMAT, "%s: not a JSON object", path);
    size_t n = json_object_size(root);
    d->vocab = mg_calloc(n ? n : 1, sizeof *d->vocab);
    d->vocab_id = mg_calloc(n ? n : 1, sizeof *d->vocab_id);
    if (!d->vocab || !d->vocab_id) return MG_ERR_NOMEM;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        MG_RETURN_IF(!json_is_integer(v) || json_integer_value(v) < 0 ||
                         json_integer_value(v) > INT32_MAX,
                     MG_ERR_FORMAT, "%s: \"%.80s\" has no valid token id", path, key);
        d->vocab[d->n_vocab] = (mg_hf_str){key, strlen(key)};
        d->vocab_id[d->n_vocab++] = json_integer_value(v);
    }
    return MG_OK;
}

/* Number of lines in s[0, len) (a last line without '\n' counts). */
static size_t count_lines(const char *s, size_t len)
{
    size_t n = 0;
    for (const char *p = s; p < s + len; n++) {
        const char *nl = memchr(p, '\n', (size_t)(s + len - p));
        p = nl ? nl + 1 : s + len;
    }
    return n;
}

static mg_status parse_merge_line(mg_hf_desc *d, const char *path, const char *p, size_t n,
                                  size_t line)
{
    if (n > 0 && p[n - 1] == '\r') n--;
    if (n >= 8 && memcmp(p, "#version", 8) == 0) return MG_OK;
    const char *sp = memchr(p, ' ', n);
    if (!sp || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - p)))
        return mg_error_set(MG_ERR_FORMAT, "%s:%zu: a merge must be two tokens separated by "
                            "one space", path, line);
    d->merge_l[d->n_merges] = (mg_hf_str){p, (size_t)(sp - p)};
    d->merge_r[d->n_merges++] = (mg_hf_str){sp + 1, n - (size_t)(sp + 1 - p)};
    return MG_OK;
}

static mg_status load_merges(mg_hf_desc *d, const char *path)
{
    char *buf;
    size_t len;
    MG_FORWARD(mg_hf_desc_read(d, path, &buf, &len));
    size_t n = count_lines(buf, len);
    d->merge_l = mg_calloc(n ? n : 1, sizeof *d->merge_l);
    d->merge_r = mg_calloc(n ? n : 1, sizeof *d->merge_r);
    if (!d->merge_l || !d->merge_r) return MG_ERR_NOMEM;
    const char *p = buf, *end = buf + len;
    for (size_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = (size_t)((nl ? nl : end) - p);
        MG_FORWARD(parse_merge_line(d, path, p, l, line));
        p = nl ? nl + 1 : end;
    }
    return MG_OK;
}

/* What transformers' GPT2Tokenizer adds on top of the files. */
static void gpt2_defaults(mg_hf_desc *d)
{
    mg_hf_pre_stage bl = {.kind = MG_HF_PRE_BYTE_LEVEL, .use_regex = 1};
    d->pre[d->n_pre++] = bl;
    for (int i = 0; i < 3; i++) { /* unk, bos, eos */
        mg_added_token t = {.content = endoftext, .len = sizeof endoftext - 1, .id = -1,
                            .special = 1};
        d->named[d->n_named++] = t;
    }
    d->eos_token = endoftext;
}

mg_status mg_tok_gpt2_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(!o->vocab_file || !o->merge_file, MG_ERR_ARG,
                 "GPT2BPETokenizer needs --vocab-file and --merge-file");
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    snprintf(d.file, sizeof d.file, "%s", o->vocab_file);
    mg_status st = load_vocab(&d, o->vocab_file);
    if (st == MG_OK) st = load_merges(&d, o->merge_file);
    if (st == MG_OK) {
        snprintf(d.file, sizeof d.file, "%s + %s", o->vocab_file, o->merge_file);
        gpt2_defaults(&d);
        st = mg_hf_build(tk, &d, "GPT2BPETokenizer", o);
    }
    mg_hf_desc_free(&d);
    return st;
}
