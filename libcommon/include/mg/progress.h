/* mg/progress.h — progress lines (count, MB read, rates, ETA) on stderr for the tools.
 *
 * Contract:
 *   - A tool-side helper (like mg/cli.h): it prints to stderr, library modules never use it.
 *   - mg_progress_update(p, units, bytes, pos) is called by one thread whenever it likes;
 *     it prints a line only when `units` has crossed a multiple of `every` since the last
 *     line AND at least `min_interval` seconds have passed since the last line (so a small
 *     --log-interval cannot flood the terminal). Format:
 *       "<prog>: 120000 docs, 512.3 MB read, 210.5 MB/s, 48000 docs/s, ETA 0:00:03"
 *     where MB = 2^20 bytes (as Megatron's MB/s) and "ETA" appears only when total > 0:
 *     it extrapolates pos/total (e.g. compressed bytes consumed / on-disk size).
 *   - Every function accepts p == NULL and then does nothing (how --quiet is done).
 */
#ifndef MG_PROGRESS_H
#define MG_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct mg_progress mg_progress;

/* unit: plural noun for the count ("docs"); every >= 1; total: 0 if unknown. The clock
 * starts here. The unit string must outlive p. */
mg_status mg_progress_create(mg_progress **p, const char *unit, uint64_t every,
                             double min_interval, uint64_t total);
void mg_progress_update(mg_progress *p, uint64_t units, uint64_t bytes, uint64_t pos);
/* Seconds since creation (0 for NULL). */
double mg_progress_elapsed(const mg_progress *p);
void mg_progress_free(mg_progress *p); /* accepts NULL */

/* Formats seconds as "H:MM:SS" into buf (size >= 16). Returns buf. */
char *mg_format_hms(double seconds, char *buf, size_t size);

#endif
