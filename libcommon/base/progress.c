/* progress.c — rate-limited progress lines on stderr; see mg/progress.h. */
#include "mg/progress.h"

#include <stdio.h>
#include <stdlib.h>

#include "mg/cli.h"

struct mg_progress {
    const char *unit;
    uint64_t every;
    uint64_t next_units; /* print when units >= this */
    double min_interval;
    uint64_t total;
    double start;
    double last_print;
};

mg_status mg_progress_create(mg_progress **p, const char *unit, uint64_t every,
                             double min_interval, uint64_t total)
{
    *p = mg_calloc(1, sizeof **p);
    if (!*p) return MG_ERR_NOMEM;
    (*p)->unit = unit;
    (*p)->every = every ? every : 1;
    (*p)->next_units = (*p)->every;
    (*p)->min_interval = min_interval;
    (*p)->total = total;
    (*p)->start = mg_now();
    (*p)->last_print = (*p)->start;
    return MG_OK;
}

char *mg_format_hms(double seconds, char *buf, size_t size)
{
    if (seconds < 0 || seconds > 1e9) seconds = 0;
    uint64_t s = (uint64_t)(seconds + 0.5);
    snprintf(buf, size, "%llu:%02u:%02u", (unsigned long long)(s / 3600),
             (unsigned)(s / 60 % 60), (unsigned)(s % 60));
    return buf;
}

static void print_line(const mg_progress *p, uint64_t units, uint64_t bytes, uint64_t pos,
                       double now)
{
    double dt = now - p->start;
    if (dt <= 0) dt = 1e-9;
    double mb = (double)bytes / (1024.0 * 1024.0);
    char eta[64] = "";
    if (p->total > 0 && pos > 0 && pos <= p->total) {
        char hms[32];
        double left = dt * (double)(p->total - pos) / (double)pos;
        snprintf(eta, sizeof eta, ", ETA %s", mg_format_hms(left, hms, sizeof hms));
    }
    fprintf(stderr, "%s: %llu %s, %.1f MB read, %.1f MB/s, %.0f %s/s%s\n", mg_cli_prog(),
            (unsigned long long)units, p->unit, mb, mb / dt, (double)units / dt, p->unit, eta);
    fflush(stderr);
}

void mg_progress_update(mg_progress *p, uint64_t units, uint64_t bytes, uint64_t pos)
{
    if (!p || units < p->next_units) return;
    double now = mg_now();
    if (now - p->last_print < p->min_interval) return;
    print_line(p, units, bytes, pos, now);
    p->last_print = now;
    p->next_units = (units / p->every + 1) * p->every;
}

double mg_progress_elapsed(const mg_progress *p)
{
    return p ? mg_now() - p->start : 0.0;
}

void mg_progress_free(mg_progress *p)
{
    free(p);
}
