/* tok_bert.c — Megatron's BertWordPieceLowerCase / BertWordPieceCase (--vocab-file
 * vocab.txt), with Megatron HEAD semantics (megatron/core/tokenizers: library "megatron" =
 * MegatronHFTokenizer = transformers AutoTokenizer("bert-large-uncased" / "bert-large-cased",
 * vocab_file=...), i.e. transformers 5's BertTokenizer on this vocabulary):
 *   - vocab.txt: one token per line, id = line number, as tokenizers' WordPiece::read_file
 *     (what transformers 5 uses for vocab_file): lines end at "\n", each line loses its
 *     trailing White_Space (Rust trim_end: "\r", " ", U+3000 ...), no line after a final
 *     "\n", a later duplicate wins; must be UTF-8.
 *   - LowerCase: BertNormalizer(clean_text, chinese chars, strip_accents, lowercase); Case:
 *     BertNormalizer(clean_text, chinese chars) (the hub configs' do_lower_case true /
 *     false). BertPreTokenizer, WordPiece("##", max 100 characters, "[UNK]").
 *   - ids = [CLS] + WordPiece ids + [SEP] per call (the post-processor; dropped with
 *     --tokenizer-hf-no-include-special-tokens); [PAD] [UNK] [CLS] [SEP] [MASK] are special
 *     added tokens matched in the raw text.
 *   - eod = id of [SEP] (Megatron: eos := sep); vocab_size = len(tokenizer) = distinct
 *     vocabulary lines (+ specials missing from the file).
 *   - Case adds the 100 special tokens <extra_id_0> .. <extra_id_99> (vocab_size + 100, ids
 *     after the vocabulary) and ignores --tokenizer-special-tokens, as Megatron's
 *     build_tokenizer does; LowerCase adds --tokenizer-special-tokens.
 *   - decode: transformers' decode (WordPiece decoder with cleanup, special tokens kept,
 *     clean_up_tokenization_spaces false).
 * LEGACY Megatron (own WordPiece, no [CLS]/[SEP], [BOS]/[EOS] appended to the vocabulary,
 * max 200 characters) is not what this follows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/unicode.h"
#include "tok/hf_json.h"
#include "tok/normalize.h"
#include "tok/tok_hf_wordpiece.h"
#include "tok/tok_internal.h"

#define N_EXTRA 100

/* End of line [start, end) without its trailing White_Space. */
static size_t trim_end(const char *buf, size_t start, size_t end)
{
    while (end > start) {
        size_t k = end - 1;
        while (k > start && ((unsigned char)buf[k] & 0xC0) == 0x80) k--;
        uint32_t cp;
        mg_utf8_decode((const uint8_t *)buf + k, end - k, &cp);
        if (!mg_uc_is_ws(cp)) break;
        end = k;
    }
    return end;
}

/* Splits the owned text into vocabulary lines. */
static mg_status split_lines(mg_hf_desc *d, const char *buf, size_t len)
{
    size_t cap = 1;
    for (size_t i = 0; i < len; i++) cap += buf[i] == '\n';
    d->vocab = mg_calloc(cap, sizeof *d->vocab);
    d->vocab_id = mg_calloc(cap, sizeof *d->vocab_id);
    if (!d->vocab || !d->vocab_id) return MG_ERR_NOMEM;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && buf[i] != '\n') continue;
        if (i == len && start == len) break; /* no line after the final newline */
        d->vocab[d->n_vocab] = (mg_hf_str){buf + start, trim_end(buf, start, i) - start};
        d->vocab_id[d->n_vocab] = (int64_t)d->n_vocab;
        d->n_vocab++;
        start = i + 1;
    }
    return MG_OK;
}

static mg_status load_vocab(mg_hf_desc *d, const char *path)
{
    char *buf;
    size_t len;
    MG_FORWARD(mg_hf_desc_read(d, path, &buf, &len));
    size_t ok = mg_utf8_validate((const uint8_t *)buf, len);
    MG_RETURN_IF(ok != len, MG_ERR_FORMAT, "%s: invalid UTF-8 at byte %zu", path, ok);
    return split_lines(d, buf, len);
}

/* [UNK] [SEP] [PAD] [CLS] [MASK] (transformers' special-token order), then for Case the
 * 100 <extra_id_i>. */
static mg_status add_specials(mg_hf_desc *d, int extras)
{
    static const char *const names[] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
    size_t n = 5 + (extras ? N_EXTRA : 0);
    char *text = mg_malloc(N_EXTRA * 16);
    d->added = mg_calloc(n, sizeof *d->added);
    if (!text || !d->added) {
        free(text);
        return MG_ERR_NOMEM;
    }
    MG_FORWARD(mg_hf_desc_own_text(d, text));
    for (size_t i = 0; i < 5; i++)
        d->added[i] = (mg_added_token){.content = names[i], .len = strlen(names[i]),
                                       .special = 1, .id = -1};
    for (size_t i = 0; extras && i < N_EXTRA; i++) {
        char *s = text + 16 * i;
        int k = snprintf(s, 16, "<extra_id_%zu>", i);
        d->added[5 + i] = (mg_added_token){.content = s, .len = (size_t)k, .special = 1, .id = -1};
    }
    d->n_added = n;
    return MG_OK;
}

static mg_status describe_bert(mg_hf_desc *d, const mg_tok_opts *o, int lower)
{
    snprintf(d->file, sizeof d->file, "%s", o->vocab_file);
    MG_FORWARD(load_vocab(d, o->vocab_file));
    int64_t cls = mg_hf_desc_vocab_id(d, "[CLS]"), sep = mg_hf_desc_vocab_id(d, "[SEP]");
    MG_RETURN_IF(cls < 0 || sep < 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: a BERT vocabulary without [CLS] and [SEP] in %s",
                 o->vocab_file);
    d->wordpiece = 1;
    d->char_level = 1;
    d->wp_prefix = "##";
    d->wp_max_chars = 100;
    d->unk_token = "[UNK]";
    d->sep_token = "[SEP]";
    d->prefix[0] = cls;
    d->suffix[0] = sep;
    d->n_prefix = d->n_suffix = 1;
    d->pre[0] = (mg_hf_pre_stage){.kind = MG_HF_PRE_BERT};
    d->n_pre = 1;
    d->cleanup_spaces = 0;
    unsigned flags = MG_NORM_BERT_CLEAN | MG_NORM_BERT_CHINESE;
    if (lower) flags |= MG_NORM_BERT_STRIP_ACCENTS | MG_NORM_BERT_LOWERCASE;
    MG_FORWARD(mg_normalizer_add_bert(&d->norm, flags));
    MG_FORWARD(add_specials(d, !lower));
    return mg_hf_wordpiece_decoder(d);
}

mg_status mg_tok_bert_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(!o->vocab_file, MG_ERR_ARG, "%s needs --vocab-file vocab.txt", o->type);
    MG_RETURN_IF(o->merge_file || o->model, MG_ERR_ARG,
                 "%s takes --vocab-file only (not --merge-file / --tokenizer-model)", o->type);
    int lower = strcmp(o->type, "BertWordPieceLowerCase") == 0;
    mg_tok_opts opts = *o;
    if (!lower) opts.n_special_tokens = 0; /* Megatron drops them for BertWordPieceCase */
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    mg_status st = describe_bert(&d, o, lower);
    char kind[96];
    snprintf(kind, sizeof kind, "%s (Megatron HEAD: transformers BertTokenizer)", o->type);
    if (st == MG_OK) st = mg_hf_wordpiece_build(tk, &d, kind, &opts);
    mg_hf_desc_free(&d);
    return st;
}
