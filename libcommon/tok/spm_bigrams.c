/* spm_bigrams.c — the character pairs inside pieces (contract: spm_proto.h,
 * mg_spm_bigrams).
 *
 * Every matchable piece is split into characters as the BPE encoder splits text
 * (sentencepiece's OneCharLen, the last one cut at the piece's end), and each adjacent
 * pair of them sets one bit of the filter, chosen by a hash of mg_spm_bigram_key. A piece
 * occurring in the text across a character boundary holds the two characters on either
 * side of it as such a pair, so a boundary whose pair's bit is clear is crossed by no
 * piece (spm_bpe.c cuts long spans there). Bits shared by several pairs only make fewer
 * such boundaries known, never a wrong one.
 */
#include "tok/spm_proto.h"

#include <stdlib.h>
#include <string.h>

/* The length of the character at p[0, n) (n >= 1), as the encoder splits it. */
static size_t char_at(const uint8_t *p, size_t n)
{
    size_t k = mg_spm_char_len(p[0]);
    return k < n ? k : n;
}

/* The pairs of one piece marked in b. */
static void add_piece(mg_spm_bigrams *b, const mg_spm_str *s)
{
    if (s->n == 0) return;
    size_t a = char_at(s->p, s->n);
    for (size_t pos = a; pos < s->n;) {
        size_t k = char_at(s->p + pos, s->n - pos);
        uint32_t x = mg_spm_char_pack(s->p + pos - a, a), y = mg_spm_char_pack(s->p + pos, k);
        size_t bit = mg_spm_bigram_bit(x, y);
        b->bits[bit >> 6] |= 1ull << (bit & 63);
        pos += k;
        a = k;
    }
}

mg_status mg_spm_bigrams_build(mg_spm_bigrams *b, const mg_spm_proto *p)
{
    b->bits = mg_calloc(MG_SPM_BIGRAM_BITS / 64, sizeof *b->bits);
    if (!b->bits) return MG_ERR_NOMEM;
    for (size_t i = 0; i < p->n_pieces; i++) {
        int t = p->pieces[i].type;
        if (t == SPM_NORMAL || t == SPM_USER_DEFINED || t == SPM_UNUSED)
            add_piece(b, &p->pieces[i].piece);
    }
    return MG_OK;
}

void mg_spm_bigrams_free(mg_spm_bigrams *b)
{
    free(b->bits);
    b->bits = NULL;
}
