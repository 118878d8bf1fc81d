/* mg/npgenerator.h — numpy's new-style random API, bit for bit: SeedSequence, the PCG64 bit
 * generator, and Generator.integers for int32 and int64 (numpy.random.default_rng(seed)).
 * Needed for megatron-core's MockGPTLowLevelDataset (--mock-data), whose document lengths are
 * default_rng(0).integers(1, 4096, size=100000, dtype=int32).
 *
 * Facts (numpy >= 1.17; the streams are stable across releases):
 *   - SeedSequence(entropy): entropy is a non-negative integer split into 32-bit words, lowest
 *     first (0 -> one word 0), no spawn key, pool of four 32-bit words built by O'Neill's
 *     seed_seq hash/mix rounds. generate_state(n, uint32) cycles the pool through a second
 *     hash; generate_state(n, uint64) is 2n 32-bit words viewed little-endian (low word first).
 *   - PCG64(seed_seq): w = generate_state(4, uint64); state and increment are the 128-bit
 *     values (w[0] << 64 | w[1]) and (w[2] << 64 | w[3]) fed to pcg's setseq seeding
 *     (state = 0, inc = 2*initseq + 1, step, state += initstate, step). Output is XSL-RR of
 *     the state after each LCG step (multiplier 0x2360ED051FC65DA44385DF649FCCF645).
 *   - next32 splits one 64-bit output: low half first, the high half kept for the next call
 *     (has_uint32 / uinteger, part of the state).
 *   - Generator.integers(low, high, size, dtype, endpoint) with numpy's default
 *     (use_masked=False): rng = high - low (high - 1 - low without endpoint), off = low; rng 0
 *     draws nothing; otherwise ranges that fit 32 bits use Lemire's multiply-shift with
 *     rejection on next32 draws (rng == 2^32-1: the raw next32), wider ranges Lemire on
 *     next64 draws (rng == 2^64-1: the raw next64). Bounds outside the dtype or an empty
 *     range are MG_ERR_ARG (numpy's ValueError); out is untouched and nothing is drawn then.
 *
 * All state is plain values (no allocation): copy a struct to snapshot a stream.
 * Written from numpy's documented algorithms; no numpy code is copied.
 */
#ifndef MG_NPGENERATOR_H
#define MG_NPGENERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

#define MG_SEEDSEQ_POOL 4

typedef struct mg_seedseq {
    uint32_t pool[MG_SEEDSEQ_POOL];
} mg_seedseq;

/* SeedSequence(entropy) where entropy is the integer whose 32-bit words (lowest first) are
 * words[0..n) (n >= 1; leading zero high words change the result, as in numpy). */
void mg_seedseq_init_words(mg_seedseq *s, const uint32_t *words, size_t n);
/* SeedSequence(seed) for a non-negative integer seed below 2^64. */
void mg_seedseq_init(mg_seedseq *s, uint64_t seed);
/* SeedSequence.generate_state(n, numpy.uint32) and (n, numpy.uint64). */
void mg_seedseq_generate_u32(const mg_seedseq *s, uint32_t *out, size_t n);
void mg_seedseq_generate_u64(const mg_seedseq *s, uint64_t *out, size_t n);

typedef struct mg_pcg64 {
    uint64_t state_hi, state_lo; /* the 128-bit LCG state */
    uint64_t inc_hi, inc_lo;     /* the (odd) 128-bit increment */
    int has_uint32;              /* a buffered high half is waiting for next32 */
    uint32_t uinteger;           /* that half */
} mg_pcg64;

/* PCG64(SeedSequence(...)) and PCG64(seed) == numpy.random.default_rng(seed).bit_generator. */
void mg_pcg64_seed_seq(mg_pcg64 *g, const mg_seedseq *s);
void mg_pcg64_seed(mg_pcg64 *g, uint64_t seed);

uint64_t mg_pcg64_next64(mg_pcg64 *g); /* bit_generator.random_raw() */
uint32_t mg_pcg64_next32(mg_pcg64 *g);

/* out[0..n) = Generator.integers(low, high, size=n, dtype=numpy.int32, endpoint=endpoint).
 * low and high must lie in the int32 range (high may be 2^31 without endpoint). */
mg_status mg_npgen_integers_i32(mg_pcg64 *g, int64_t low, int64_t high, int endpoint,
                                int32_t *out, size_t n);
/* The same with dtype=numpy.int64 (numpy's high = 2**63 without endpoint is written here as
 * high = INT64_MAX with endpoint = 1). */
mg_status mg_npgen_integers_i64(mg_pcg64 *g, int64_t low, int64_t high, int endpoint,
                                int64_t *out, size_t n);

#endif
