/* gptds_split.c — the --split string and the per-split sequence ranges, with numpy's float64
 * sum (contract in mg/gptds.h; facts in docs/FORMATS.md §3.1, §3.9).
 *
 * numpy.sum of a contiguous float64 array is 0.0 + pairwise(a, n): blocks of fewer than 8
 * are summed left to right, blocks up to 128 with 8 interleaved accumulators, longer ones are
 * split at a multiple of 8 near the middle (checked against numpy 2.4 up to n = 20000).
 */
#include "mg/gptds.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *mg_split_name(int k)
{
    static const char *const names[MG_SPLIT_COUNT] = {"train", "valid", "test"};
    return k >= 0 && k < MG_SPLIT_COUNT ? names[k] : "invalid";
}

static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double r = -0.0;
        for (size_t i = 0; i < n; i++) r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8];
        memcpy(r, a, sizeof r);
        size_t i;
        for (i = 8; i < n - n % 8; i += 8)
            for (int k = 0; k < 8; k++) r[k] += a[i + k];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double mg_np_sum(const double *a, size_t n)
{
    return 0.0 + pairwise_sum(a, n);
}

void mg_np_normalize(const double *w, size_t n, double *out)
{
    double s = mg_np_sum(w, n);
    for (size_t i = 0; i < n; i++) out[i] = w[i] / s;
}

/* Python float() of one [.0-9]+ match: the whole run must convert. */
static mg_status parse_number(const char *s, size_t len, const char *split, double *v)
{
    char buf[64];
    MG_RETURN_IF(len >= sizeof buf, MG_ERR_ARG, "--split \"%s\": number too long", split);
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    MG_RETURN_IF(end != buf + len || len == 0, MG_ERR_ARG,
                 "--split \"%s\": \"%s\" is not a number", split, buf);
    return MG_OK;
}

static int is_split_char(char c)
{
    return c == '.' || (c >= '0' && c <= '9');
}

/* The numbers of split, padded with zeros to three. */
static mg_status split_vector(const char *split, double v[MG_SPLIT_COUNT])
{
    size_t count = 0;
    for (const char *p = split; *p;) {
        if (!is_split_char(*p)) {
            p++;
            continue;
        }
        const char *q = p;
        while (is_split_char(*q)) q++;
        MG_RETURN_IF(count == MG_SPLIT_COUNT, MG_ERR_ARG,
                     "--split \"%s\": more than three numbers", split);
        MG_FORWARD(parse_number(p, (size_t)(q - p), split, &v[count++]));
        p = q;
    }
    for (; count < MG_SPLIT_COUNT; count++) v[count] = 0.0;
    return MG_OK;
}

mg_status mg_split_parse(const char *split, mg_split_matrix *m)
{
    double v[MG_SPLIT_COUNT];
    MG_FORWARD(split_vector(split, v));
    MG_RETURN_IF(!(mg_np_sum(v, MG_SPLIT_COUNT) > 0.0) || !isfinite(mg_np_sum(v, MG_SPLIT_COUNT)),
                 MG_ERR_ARG, "--split \"%s\": the numbers must have a positive finite sum", split);
    mg_np_normalize(v, MG_SPLIT_COUNT, v);
    double acc = 0.0; /* Python's int 0 + v0 is exactly v0 */
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        double next = k == 0 ? v[0] : acc + v[k];
        m->beg[k] = acc;
        m->end[k] = next;
        m->present[k] = next > acc;
        acc = next;
    }
    return MG_OK;
}

void mg_split_range(const mg_split_matrix *m, int k, uint64_t n_seq, uint64_t *beg,
                    uint64_t *end)
{
    MG_ASSERT(k >= 0 && k < MG_SPLIT_COUNT && m->present[k]);
    /* nearbyint in the default rounding mode is Python's round-half-to-even */
    *beg = (uint64_t)nearbyint(m->beg[k] * (double)n_seq);
    *end = (uint64_t)nearbyint(m->end[k] * (double)n_seq);
}
