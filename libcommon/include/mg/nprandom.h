/* mg/nprandom.h — numpy's legacy RandomState (MT19937), bit for bit.
 *
 * Facts: docs/FORMATS.md §4 (numpy/random/_mt19937.pyx _legacy_seeding,
 * src/mt19937, distributions.c random_interval / random_bounded_uint64_fill, mtrand.pyx).
 *
 * Contract:
 *   - mg_nprandom_seed(rs, seed) == numpy.random.RandomState(seed) for an integer seed:
 *     Matsumoto's init_genrand (NOT init_by_array, which numpy uses only for array seeds).
 *     Seeds outside [0, 2^32-1] are MG_ERR_ARG, as numpy raises ValueError.
 *   - The state is a plain value (no allocation, no free): copy it to snapshot the stream.
 *   - next32/next64/random_sample are the bit generator outputs (next64: high word drawn
 *     first; random_sample: 53-bit double from two draws).
 *   - mg_nprandom_interval(rs, max) == random_interval: masked rejection, 32-bit draws when
 *     max <= 2^32-1, else 64-bit draws; max == 0 draws nothing.
 *   - shuffle == RandomState.shuffle of a 1-D array of any dtype: Fisher-Yates from the end,
 *     one interval draw per position n-1..1. The draws do not depend on the element type, so
 *     one generic function serves int32/uint32/int64 (typed wrappers below).
 *   - permutation(n) == RandomState.permutation(n): arange(n) (int64) shuffled.
 *   - randint(low, high, n) == RandomState.randint(low, high, size=n) with the default int64
 *     dtype (masked rejection, mask computed once); low >= high is MG_ERR_ARG.
 */
#ifndef MG_NPRANDOM_H
#define MG_NPRANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

#define MG_NPRANDOM_N 624

typedef struct mg_nprandom {
    uint32_t key[MG_NPRANDOM_N];
    int pos; /* next word to temper; MG_NPRANDOM_N means "regenerate first" */
} mg_nprandom;

/* RandomState(seed); MG_ERR_ARG if seed > 2^32-1 (the state is left untouched then). */
mg_status mg_nprandom_seed(mg_nprandom *rs, uint64_t seed);

uint32_t mg_nprandom_next32(mg_nprandom *rs);
uint64_t mg_nprandom_next64(mg_nprandom *rs);
/* RandomState.random_sample(): a double in [0, 1). */
double mg_nprandom_random_sample(mg_nprandom *rs);
/* A uniform integer in [0, max] drawn like numpy's random_interval. */
uint64_t mg_nprandom_interval(mg_nprandom *rs, uint64_t max);

/* In-place shuffle of n elements of elem_size bytes each (elem_size <= 16). */
void mg_nprandom_shuffle(mg_nprandom *rs, void *data, size_t n, size_t elem_size);
void mg_nprandom_shuffle_i32(mg_nprandom *rs, int32_t *a, size_t n);
void mg_nprandom_shuffle_u32(mg_nprandom *rs, uint32_t *a, size_t n);
void mg_nprandom_shuffle_i64(mg_nprandom *rs, int64_t *a, size_t n);

/* out[0..n) = RandomState.permutation(n). */
void mg_nprandom_permutation(mg_nprandom *rs, int64_t *out, size_t n);

/* out[0..n) = RandomState.randint(low, high, size=n) (int64). */
mg_status mg_nprandom_randint(mg_nprandom *rs, int64_t low, int64_t high, int64_t *out, size_t n);

#endif
