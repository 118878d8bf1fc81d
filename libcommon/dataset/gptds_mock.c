/* gptds_mock.c — megatron-core's MockGPTLowLevelDataset as an mg_gpt_source (contract in
 * mg/gptds.h): fixed seed 0, 100000 documents with lengths drawn by numpy's
 * default_rng(0).integers(1, 4096, dtype=int32) (mg/npgenerator.h); document of length L is
 * (arange(L - 1) + 1) % vocab_size followed by the tokenizer's eod.
 */
#include "mg/gptds.h"
#include "mg/npgenerator.h"

#include <stdlib.h>

struct mg_gpt_mock {
    int64_t vocab_size, eod;
    int32_t lengths[MG_GPT_MOCK_DOCUMENTS];
};

mg_status mg_gpt_mock_create(mg_gpt_mock **out, int64_t vocab_size, int64_t eod)
{
    *out = NULL;
    MG_RETURN_IF(vocab_size <= 0, MG_ERR_ARG,
                 "mock data needs a positive vocabulary size (got %lld)", (long long)vocab_size);
    mg_gpt_mock *m = mg_calloc(1, sizeof *m);
    if (!m) return MG_ERR_NOMEM;
    m->vocab_size = vocab_size;
    m->eod = eod;
    mg_pcg64 g;
    mg_pcg64_seed(&g, 0);
    mg_status st = mg_npgen_integers_i32(&g, 1, MG_GPT_MOCK_MAX_LENGTH, 0, m->lengths,
                                         MG_GPT_MOCK_DOCUMENTS);
    MG_ASSERT(st == MG_OK); /* constant, valid bounds */
    *out = m;
    return MG_OK;
}

void mg_gpt_mock_free(mg_gpt_mock *m)
{
    free(m);
}

/* Token j of document seq: j + 1 (mod vocab) before the last position, eod at it. */
static int64_t mock_token(const void *ctx, uint64_t seq, uint64_t j)
{
    const mg_gpt_mock *m = ctx;
    if (j + 1 >= (uint64_t)m->lengths[seq]) return m->eod;
    return (int64_t)((j + 1) % (uint64_t)m->vocab_size);
}

mg_gpt_source mg_gpt_mock_source(const mg_gpt_mock *m)
{
    mg_gpt_source s = {MG_GPT_MOCK_DOCUMENTS, m->lengths, mock_token, m};
    return s;
}
