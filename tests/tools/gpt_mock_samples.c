/* gpt_mock_samples.c — test program for --mock-data (mg/gptds.h, cfg.mock): megatron-core's
 * MockGPTDataset splits.
 *
 *   gpt_mock_samples --vocab-size V --eod E --seq-length S [--seed 1234]
 *                    [--train-samples N] [--valid-samples N] [--test-samples N]
 *                    [--first N] [--every K]
 *
 * Builds what BlendedMegatronDatasetBuilder(MockGPTDataset, sizes, config with no blend)
 * builds (a missing --X-samples is None), then for each split prints "SPLIT LEN" and, for
 * samples 0, K, 2K, ... (N of them, 3 by default; K = 1 by default), "SPLIT I: tok tok ..."
 * (seq_length + 1 tokens, padding -1).
 * Exit status 0 on success, 1 on a library error, 2 on a usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/gptds.h"

typedef struct {
    mg_gpt_data_config cfg;
    int64_t first, every;
} opts;

static int parse(opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->cfg.mock = 1;
    o->cfg.seed = 1234;
    o->cfg.add_extra_token = 1;
    o->cfg.drop_last_partial_validation = 1;
    o->cfg.mock_vocab_size = -1;
    for (int k = 0; k < MG_SPLIT_COUNT; k++) o->cfg.sizes[k] = -1;
    o->first = 3;
    o->every = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        int64_t x = strtoll(v, NULL, 10);
        if (strcmp(a, "--vocab-size") == 0) o->cfg.mock_vocab_size = x;
        else if (strcmp(a, "--eod") == 0) o->cfg.mock_eod = x;
        else if (strcmp(a, "--seq-length") == 0) o->cfg.seq_length = x;
        else if (strcmp(a, "--seed") == 0) o->cfg.seed = (uint64_t)x;
        else if (strcmp(a, "--train-samples") == 0) o->cfg.sizes[MG_SPLIT_TRAIN] = x;
        else if (strcmp(a, "--valid-samples") == 0) o->cfg.sizes[MG_SPLIT_VALID] = x;
        else if (strcmp(a, "--test-samples") == 0) o->cfg.sizes[MG_SPLIT_TEST] = x;
        else if (strcmp(a, "--first") == 0) o->first = x;
        else if (strcmp(a, "--every") == 0) o->every = x;
        else return fprintf(stderr, "gpt_mock_samples: error: unknown option \"%s\"\n", a), 2;
    }
    if (argc % 2 == 0 || o->cfg.seq_length <= 0 || o->every <= 0) {
        fprintf(stderr, "gpt_mock_samples: error: give --vocab-size, --eod and --seq-length "
                        "(options take one value each)\n");
        return 2;
    }
    return 0;
}

static int emit_split(const opts *o, const mg_gpt_data *d, int k, int64_t *tok)
{
    uint64_t len = mg_gpt_data_len(d, k);
    printf("%s %" PRIu64 "\n", mg_split_name(k), len);
    for (int64_t n = 0; n < o->first; n++) {
        uint64_t i = (uint64_t)(n * o->every);
        if (i >= len) break;
        if (mg_gpt_data_sample(d, k, i, -1, tok, NULL) != MG_OK) return 1;
        printf("%s %" PRIu64 ":", mg_split_name(k), i);
        for (int64_t j = 0; j <= o->cfg.seq_length; j++) printf(" %" PRId64, tok[j]);
        printf("\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse(&o, argc, argv);
    if (rc) return rc;
    mg_gpt_data *d = NULL;
    int64_t *tok = malloc(((size_t)o.cfg.seq_length + 1) * sizeof *tok);
    rc = tok && mg_gpt_data_create(&d, &o.cfg) == MG_OK ? 0 : 1;
    for (int k = 0; rc == 0 && k < MG_SPLIT_COUNT; k++) rc = emit_split(&o, d, k, tok);
    if (rc) fprintf(stderr, "gpt_mock_samples: error: %s\n", tok ? mg_last_error() : "memory");
    free(tok);
    mg_gpt_data_free(d);
    return rc;
}
