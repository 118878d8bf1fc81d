/* mg/instream.h — line-oriented input from files, compressed files, archives and stdin.
 *
 * Contract:
 *   - An mg_instream reads a list of inputs in order. Each input is a path, a directory
 *     (its corpus files, sorted by name, recursively), or "-" for stdin. In a directory a
 *     corpus file is one MG_INSTREAM_CORPUS_RULE names (not hidden, *.jsonl or *.json,
 *     each maybe .gz/.bz2/.xz/.zst, or an archive .tar[.gz|...], .tgz, .zip); the other
 *     files are skipped and listed by mg_instream_skipped(). A file named as an input is
 *     read whatever its name.
 *   - Each file is opened through libarchive: plain, .gz, .bz2, .xz, .zst (detected by
 *     content, not by name); tar and zip archives (themselves possibly compressed) yield
 *     their regular members in archive order, and each member is again decompressed if it
 *     is .gz/.bz2/.xz/.zst (by content; a tar of .jsonl.gz shards works). There is no
 *     further recursion: a member that is itself an archive (.tar, .zip, or a .tar.gz once
 *     decompressed) is read as its raw bytes. Every member / file is a sequence of lines.
 *   - mg_instream_next_line() returns the next line without its terminating "\n" (a "\r"
 *     before it is kept: callers decide), valid until the next call. The last line of a
 *     file without a final newline is returned too; an empty file yields no line.
 *   - Position for messages: mg_instream_where() gives "file[:member]" and the 1-based line
 *     number within that file or member; mg_instream_bytes() the uncompressed bytes
 *     consumed so far; mg_instream_total_hint() the sum of on-disk sizes of the inputs
 *     (0 if unknown, e.g. stdin) and mg_instream_compressed_pos() the on-disk bytes
 *     consumed, for progress/ETA.
 *   - A truncated or corrupt compressed stream (the file, the archive or a compressed
 *     member) is MG_ERR_FORMAT naming the file, the member and the line/uncompressed byte
 *     reached within that member ("shards.tar:part-1.jsonl.zst: corrupt or truncated
 *     compressed data after line N (uncompressed byte B): ..."). Lines longer than max_line bytes are
 *     MG_ERR_LIMIT.
 *   - Without libarchive (MG_HAVE_ARCHIVE=0) only plain files and stdin are read; a
 *     compressed input gives MG_ERR_UNSUPPORTED "not built with libarchive".
 */
#ifndef MG_INSTREAM_H
#define MG_INSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct mg_instream mg_instream; /* opaque */

/* paths: n entries (copied). max_line: longest accepted line in bytes (0 = 1 GiB). */
mg_status mg_instream_open(mg_instream **s, const char *const *paths, size_t n, size_t max_line);

/* Returns MG_OK with *line and *len set, or MG_OK with *line == NULL at the end of all inputs,
 * or an error. */
mg_status mg_instream_next_line(mg_instream *s, const char **line, size_t *len);

/* Name of the current input ("data.jsonl" or "shards.tar:part-0001.jsonl") and the 1-based
 * number of the line last returned. */
const char *mg_instream_where(const mg_instream *s, uint64_t *line_no);
uint64_t mg_instream_bytes(const mg_instream *s);
uint64_t mg_instream_total_hint(const mg_instream *s);
uint64_t mg_instream_compressed_pos(const mg_instream *s);

/* The rule for directory members, for messages. */
#define MG_INSTREAM_CORPUS_RULE \
    "*.jsonl, *.json, either compressed (.gz, .bz2, .xz, .zst), and .tar[.gz|...]/.tgz/.zip archives"

/* The files skipped in input directories (full paths, valid until mg_instream_free);
 * returns their number. */
size_t mg_instream_skipped(const mg_instream *s, const char *const **paths);

void mg_instream_free(mg_instream *s); /* accepts NULL */

#endif
