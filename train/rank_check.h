/* rank_check.h — start-up check that every rank of a launch runs the same configuration.
 *
 * Contract:
 *   - Each rank describes itself in four parts, each a list of lines: "flags" (its command
 *     line words, in order), "seed" (--seed), "data" (per --data-path prefix the sizes of
 *     .bin and .idx and an MD5 of the .idx's first 64 MiB; or the mock data's vocabulary)
 *     and "build" (mgtools version, communication backend). Each part's MD5 (52 bits, exact
 *     in a double) is summed into a world-size table with one all-reduce; every rank then
 *     sees which ranks differ from rank 0 in which part.
 *   - When one differs, rank 0 and the first differing rank broadcast that part's text and
 *     every rank fails with the same MG_ERR_ARG message naming the rank, the part, the
 *     first differing line (both ranks' versions) and how many other ranks differ.
 *   - One rank: MG_OK at once, no communication.
 */
#ifndef MG_TRAIN_RANK_CHECK_H
#define MG_TRAIN_RANK_CHECK_H

#include "comm.h"
#include "options.h"

mg_status mg_train_check_ranks(mg_comm *world, const mg_train_opts *o, int argc, char **argv);

#endif
