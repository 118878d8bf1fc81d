/* fuzz_spm_model.c — libFuzzer target: arbitrary bytes as a SentencePiece .model file.
 *
 * Input layout: byte 0 = k, then k bytes of text (fewer if the input is shorter), then the
 * model (sentencepiece_model.proto). The model goes through the proto reader
 * (mg_spm_proto_parse), InitializePieces (mg_spm_model_init) and the normalizer; when
 * accepted, the text and a fixed sample (raw bytes: malformed UTF-8 included) are
 * normalized and encoded with both the Unigram (refs and mg_spm_unigram_ids) and the BPE
 * encoder, and every id must be a piece index; the Unigram ids must be those of the refs;
 * the normalizer's copy of plain multibyte
 * characters must give what its rule path gives; the BPE encoder's cutting of long spans
 * (md->bigrams) must give the pieces it gives without it. Any outcome is fine except a crash, a sanitizer report, a leak or a bad id.
 * Seeds: tests/fuzz/corpus/spm_model/ (small trained models: a Unigram one with a custom
 * precompiled charsmap and a user-defined symbol, a byte_fallback BPE one).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tok/spm_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char sample[] = "Hello  world! ABab\xef\xbc\xa1\xe3\x80\x80<u> \xe6\x97\xa5\xe6\x9c"
                             "\xac \xff\xc3 e\xcc\x81\t\n x \xe2\x96\x81 \xe4\xb8\xad\xe6\x96\x87"
                             "\xef\xbc\x8c\xc3\xa9\xe0\x80\x80\xed\xa0\x80\xe4\xb8";

static void check_refs(const mg_spm_model *md, const mg_spm_refs *r, size_t n)
{
    size_t covered = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].id < 0 || (size_t)r->v[i].id >= md->proto.n_pieces) abort();
        covered += r->v[i].len;
    }
    if (covered != n) abort();
}

/* The ids of refs as mg_spm_unigram_ids writes them: an unknown piece as its bytes' ids
 * with byte_ids, else a run of them as one unk. */
static size_t ids_of_refs(const mg_spm_model *md, const mg_spm_refs *r, const uint8_t *t,
                          const int32_t *byte_ids, int64_t *out)
{
    size_t k = 0;
    int prev_unk = 0;
    for (size_t i = 0; i < r->n; i++) {
        const mg_spm_ref *f = &r->v[i];
        if (f->id != md->unk_id) {
            out[k++] = f->id;
            prev_unk = 0;
        } else if (byte_ids) {
            for (size_t j = 0; j < f->len; j++) out[k++] = byte_ids[t[f->off + j]];
        } else {
            if (!prev_unk) out[k++] = md->unk_id;
            prev_unk = 1;
        }
    }
    return k;
}

/* mg_spm_unigram_ids (byte fallback when the model has the byte pieces): ids in range, and
 * the ids of `refs` (mg_spm_unigram_encode's path, byte by byte through the nodes) when
 * they were computed: the packed Viterbi, its 3-byte-character entries included, agrees. */
static void check_ids(const mg_spm_model *md, mg_spm_scratch *s, const uint8_t *t, size_t n,
                      const mg_spm_refs *refs)
{
    int32_t byte_ids[256];
    for (int b = 0; b < 256; b++) byte_ids[b] = b % (int)md->proto.n_pieces;
    const int32_t *bytes = md->proto.byte_fallback ? byte_ids : NULL;
    int64_t *room = malloc((n ? n : 1) * sizeof *room), *want = malloc((n ? n : 1) * sizeof *want);
    size_t k;
    if (room && want && mg_spm_unigram_ids(md, s, t, n, bytes, room, &k) == MG_OK) {
        if (k > n) abort();
        for (size_t i = n - k; i < n; i++)
            if (room[i] < 0 || room[i] >= (int64_t)md->proto.n_pieces) abort();
        if (refs && (ids_of_refs(md, refs, t, bytes, want) != k ||
                     (k && memcmp(want, room + n - k, k * sizeof *want) != 0)))
            abort();
    }
    free(room);
    free(want);
}

/* The copy of plain multibyte characters (plain_mb) changes nothing: the same normalizer
 * with plain_mb cleared (every character through the rules) gives the same bytes. */
static void check_plain_mb(const mg_spm_normalizer *nz, const uint8_t *t, size_t n,
                           const mg_spm_buf *norm)
{
    mg_spm_normalizer slow = *nz; /* shares the tables: not freed */
    memset(slow.plain_mb, 0, sizeof slow.plain_mb);
    mg_spm_buf b = {0};
    if (mg_spm_normalize(&slow, t, n, &b) != MG_OK || b.n != norm->n ||
        (b.n && memcmp(b.v, norm->v, b.n) != 0))
        abort();
    free(b.v);
}

/* The BPE pieces with md->bigrams (long spans cut) are those without (a copy of md that
 * has no filter, a fresh scratch: no span cache shared). */
static void check_bpe_cut(const mg_spm_model *md, const uint8_t *t, size_t n,
                          const mg_spm_refs *refs)
{
    if (!md->bigrams.bits) return;
    mg_spm_model whole = *md; /* shares the tables: not freed */
    whole.bigrams.bits = NULL;
    mg_spm_scratch s;
    memset(&s, 0, sizeof s);
    mg_spm_refs r = {0};
    if (mg_spm_bpe_encode(&whole, &s, t, n, &r) != MG_OK || r.n != refs->n ||
        (r.n && memcmp(r.v, refs->v, r.n * sizeof *r.v) != 0))
        abort();
    free(r.v);
    mg_spm_scratch_free(&s);
}

static void encode(const mg_spm_model *md, const mg_spm_normalizer *nz, const uint8_t *t,
                   size_t n)
{
    mg_spm_buf norm = {0};
    mg_spm_refs refs = {0};
    mg_spm_scratch s;
    memset(&s, 0, sizeof s);
    if (mg_spm_normalize(nz, t, n, &norm) == MG_OK) {
        check_plain_mb(nz, t, n, &norm);
        int have_refs = mg_spm_unigram_encode(md, &s, norm.v, norm.n, &refs) == MG_OK;
        if (have_refs) check_refs(md, &refs, norm.n);
        check_ids(md, &s, norm.v, norm.n, have_refs ? &refs : NULL);
        refs.n = 0;
        if (mg_spm_bpe_encode(md, &s, norm.v, norm.n, &refs) == MG_OK) {
            check_refs(md, &refs, norm.n);
            check_bpe_cut(md, norm.v, norm.n, &refs);
        }
    }
    free(norm.v);
    free(refs.v);
    mg_spm_scratch_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t k = data[0] < size - 1 ? data[0] : size - 1;
    const uint8_t *text = data + 1, *model = data + 1 + k;
    mg_spm_model md;
    memset(&md, 0, sizeof md);
    mg_spm_normalizer nz;
    memset(&nz, 0, sizeof nz);
    if (mg_spm_proto_parse(&md.proto, model, size - 1 - k) == MG_OK &&
        mg_spm_model_init(&md) == MG_OK && mg_spm_normalizer_init(&nz, &md) == MG_OK) {
        encode(&md, &nz, text, k);
        encode(&md, &nz, (const uint8_t *)sample, sizeof sample - 1);
    }
    mg_spm_normalizer_free(&nz);
    mg_spm_model_free(&md);
    return 0;
}
