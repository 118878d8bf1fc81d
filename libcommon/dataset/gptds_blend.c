/* gptds_blend.c — blends: --data-path parsing, the per-dataset sample counts of
 * BlendedMegatronDatasetBuilder, the blending indices of helpers.cpp, and mg_gpt_data, the
 * per-split top-level datasets (contract in mg/gptds.h; facts in docs/FORMATS.md §3.8).
 */
#include "mg/gptds.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t mg_blend_dataset_size(int64_t size, double weight, double surplus)
{
    double target = ceil((double)size * weight);
    return (int64_t)ceil(target * (1.0 + surplus));
}

mg_status mg_blend_build_indices(const double *weights, size_t n, int64_t size,
                                 int16_t *dataset_index, int64_t *dataset_sample_index)
{
    int64_t *count = mg_calloc(n ? n : 1, sizeof *count);
    if (!count) return MG_ERR_NOMEM;
    for (int64_t s = 0; s < size; s++) {
        double x = fmax((double)s, 1.0);
        size_t best = 0;
        double best_err = weights[0] * x - (double)count[0];
        for (size_t d = 1; d < n; d++) {
            double err = weights[d] * x - (double)count[d];
            if (err > best_err) {
                best_err = err;
                best = d;
            }
        }
        dataset_index[s] = (int16_t)best;
        dataset_sample_index[s] = count[best]++;
    }
    free(count);
    return MG_OK;
}

/* Among the datasets with samples left (ascending, strict >), the largest w*x - count. */
static size_t exhaustive_pick(const double *w, const int64_t *sizes, const int64_t *count,
                              size_t n, double x)
{
    double best_err = -DBL_MAX;
    size_t best = 0;
    for (size_t d = 0; d < n; d++) {
        double err = w[d] * x - (double)count[d];
        if (count[d] < sizes[d] && err > best_err) {
            best_err = err;
            best = d;
        }
    }
    return best;
}

mg_status mg_blend_build_exhaustive(const int64_t *sizes, size_t n, int16_t *dataset_index,
                                    int64_t *dataset_sample_index)
{
    int64_t total = 0;
    for (size_t d = 0; d < n; d++) total += sizes[d];
    int64_t *count = mg_calloc(n ? n : 1, sizeof *count);
    double *w = mg_malloc((n ? n : 1) * sizeof *w);
    if (!count || !w) {
        free(count);
        free(w);
        return MG_ERR_NOMEM;
    }
    for (size_t d = 0; d < n; d++) w[d] = (double)sizes[d] / (double)total;
    for (int64_t s = 0; s < total; s++) {
        size_t best = exhaustive_pick(w, sizes, count, n, fmax((double)s, 1.0));
        dataset_index[s] = (int16_t)best;
        dataset_sample_index[s] = count[best]++;
    }
    free(w);
    free(count);
    return MG_OK;
}

/* ---- --data-path ------------------------------------------------------------------- */

/* Python float(): the whole string (surrounding blanks allowed) must be a decimal number. */
static int python_float(const char *s, double *v)
{
    while (isspace((unsigned char)*s)) s++;
    const char *p = *s == '+' || *s == '-' ? s + 1 : s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return 0; /* strtod takes hex, Python not */
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s) return 0;
    while (isspace((unsigned char)*end)) end++;
    return *end == '\0';
}

static char *strip_dup(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1])) len--;
    char *r = mg_malloc(len + 1);
    if (r) {
        memcpy(r, s, len);
        r[len] = '\0';
    }
    return r;
}

/* Even-length list: weights, or NULL (all prefixes) by get_blend_from_list's any/all rule. */
static mg_status pair_weights(const char *const *args, size_t n_args, double *w, int *all_num)
{
    size_t first_bad = n_args;
    for (size_t i = 0; i < n_args / 2; i++) {
        int ok = python_float(args[2 * i], &w[i]);
        if (!ok && first_bad == n_args) first_bad = i;
        MG_RETURN_IF(ok && first_bad != n_args, MG_ERR_ARG,
                     "--data-path: \"%s\" is a weight but \"%s\" before it is not",
                     args[2 * i], args[2 * first_bad]);
    }
    *all_num = first_bad == n_args;
    return MG_OK;
}

static mg_status blend_fill(mg_gpt_blend *b, const char *const *args, size_t n_args)
{
    int weighted = 0;
    b->weights = mg_malloc((n_args / 2 + 1) * sizeof *b->weights);
    if (!b->weights) return MG_ERR_NOMEM;
    if (n_args % 2 == 0) MG_FORWARD(pair_weights(args, n_args, b->weights, &weighted));
    if (!weighted) {
        free(b->weights);
        b->weights = NULL;
    }
    size_t n = weighted ? n_args / 2 : n_args;
    b->prefixes = mg_calloc(n, sizeof *b->prefixes);
    if (!b->prefixes) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++, b->n++) {
        b->prefixes[i] = strip_dup(weighted ? args[2 * i + 1] : args[i]);
        if (!b->prefixes[i]) return MG_ERR_NOMEM;
    }
    return MG_OK;
}

mg_status mg_gpt_blend_parse(mg_gpt_blend *b, const char *const *args, size_t n_args)
{
    memset(b, 0, sizeof *b);
    MG_RETURN_IF(n_args == 0, MG_ERR_ARG, "--data-path: no dataset prefix given");
    mg_status st = blend_fill(b, args, n_args);
    if (st != MG_OK) mg_gpt_blend_clear(b);
    return st;
}

void mg_gpt_blend_clear(mg_gpt_blend *b)
{
    for (size_t i = 0; i < b->n; i++) free(b->prefixes[i]);
    free(b->prefixes);
    free(b->weights);
    memset(b, 0, sizeof *b);
}
