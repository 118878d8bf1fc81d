/* tiktoken_vocab.h — reading TikTokenizer vocabulary files (private to libcommon/tok).
 *
 * Contract:
 *   - mg_tiktoken_vocab_load() reads FILE in one of two formats, detected by its first
 *     non-blank byte, and calls add(ctx, bytes, len, rank) for every entry in file order:
 *       '[' or '{' : JSON, which must be Megatron's list, entry i = {"rank": i, "token_bytes": base64,
 *             "token_str": str}, checked as Megatron's reload_mergeable_ranks() does
 *             (exactly those keys, rank == i, entries 0..255 are the single bytes 0..255);
 *             only the first max_entries entries are read and checked (max_entries < 0: all);
 *       else: a .tiktoken file, lines "base64 rank" (tiktoken's load_tiktoken_bpe()); empty
 *             lines are skipped; max_entries is ignored (the caller filters ranks).
 *   - Before the first add, size (if not NULL) is told at most how many entries will be
 *     added (the entries of the JSON list read; the lines of a .tiktoken file), so that
 *     the caller can size its tables once.
 *   - *is_json tells which format it was. Errors name FILE and the entry / line.
 */
#ifndef MG_TOK_TIKTOKEN_VOCAB_H
#define MG_TOK_TIKTOKEN_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef mg_status (*mg_tiktoken_add_fn)(void *ctx, const uint8_t *bytes, size_t len,
                                        int64_t rank);

typedef mg_status (*mg_tiktoken_size_fn)(void *ctx, size_t most);

mg_status mg_tiktoken_vocab_load(const char *path, int64_t max_entries,
                                 mg_tiktoken_size_fn size, mg_tiktoken_add_fn add, void *ctx,
                                 int *is_json);

#endif
