/* emu_config.cc — the emulator's modes (emu_control.h), its seeded generator, its reports
 * and the digest of device-to-host copies.
 *
 * Contract: the environment (MGK_EMU_ORDER, MGK_EMU_STRICT, MGK_EMU_STACK_KB) is read once,
 * at the first use; the mgk_emu_set_* calls override it. Reports go to stderr as
 * "mgk-emu: error: FILE:LINE: what (kernel K launched at F:L, block (x,y,z), thread (x,y,z))";
 * fatal() then aborts, so a test can expect the message from a child process.
 */
#include "cuda_emu/emu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace mgk_emu {

uint64_t g_switches;
uint64_t g_launches;
bool g_float_atomics;
static uint64_t g_digest = 1469598103934665603ull; /* FNV-1a offset basis */
static uint64_t g_rng;

static bool env_order(mgk_emu_order *o, uint64_t *seed)
{
    const char *s = getenv("MGK_EMU_ORDER");
    if (!s || !*s) return false;
    if (mgk_emu_parse_order(s, o, seed) != 0) {
        fprintf(stderr, "mgk-emu: error: MGK_EMU_ORDER=%s: expected fwd, rev or random:SEED\n", s);
        abort();
    }
    return true;
}

static config make_config(void)
{
    config c = {MGK_EMU_FWD, 0, true, 256 * 1024};
#ifdef MGK_EMU_ASAN
    c.stack_bytes = 1024 * 1024;
#endif
    env_order(&c.order, &c.seed);
    const char *s = getenv("MGK_EMU_STRICT");
    if (s && *s) c.strict = strcmp(s, "0") != 0;
    const char *k = getenv("MGK_EMU_STACK_KB");
    if (k && atol(k) >= 16) c.stack_bytes = (size_t)atol(k) * 1024;
    g_rng = c.seed;
    return c;
}

static config &cfg_mut(void)
{
    static config c = make_config();
    return c;
}

const config &cfg(void) { return cfg_mut(); }

uint64_t rng_next(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void order_fill(int *perm, int n)
{
    mgk_emu_order o = cfg().order;
    for (int i = 0; i < n; i++) perm[i] = o == MGK_EMU_REV ? n - 1 - i : i;
    if (o != MGK_EMU_RANDOM) return;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next() % (uint64_t)(i + 1));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

static void report(const char *level, site at, const char *fmt, va_list ap)
{
    fprintf(stderr, "mgk-emu: %s: %s:%d: ", level, at.file, at.line);
    vfprintf(stderr, fmt, ap);
    if (g_launch.d) {
        const launch_desc *d = g_launch.d;
        fprintf(stderr, " (kernel %s launched at %s:%d", d->name, d->at.file, d->at.line);
        if (g_launch.in_block) {
            const uint3 b = g_ids.block_idx, t = g_ids.thread_idx;
            fprintf(stderr, ", block (%u,%u,%u), thread (%u,%u,%u)", b.x, b.y, b.z, t.x, t.y, t.z);
        }
        fprintf(stderr, ", order %s)", mgk_emu_order_name());
    }
    fputc('\n', stderr);
}

void fatal(site at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("error", at, fmt, ap);
    va_end(ap);
    fflush(stderr);
    abort();
}

/* Relaxed mode warns once per call site. */
static bool warned_before(site at)
{
    static site seen[64];
    static int nseen;
    for (int i = 0; i < nseen; i++)
        if (seen[i].line == at.line && strcmp(seen[i].file, at.file) == 0) return true;
    if (nseen < 64) seen[nseen++] = at;
    return false;
}

void strict_violation(site at, const char *fmt, ...)
{
    if (!cfg().strict && warned_before(at)) return;
    va_list ap;
    va_start(ap, fmt);
    report(cfg().strict ? "error" : "warning (relaxed mode)", at, fmt, ap);
    va_end(ap);
    if (cfg().strict) {
        fflush(stderr);
        abort();
    }
}

void digest_add(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = g_digest;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    g_digest = (h ^ n) * 1099511628211ull;
}

} /* namespace mgk_emu */

using namespace mgk_emu;

extern "C" int mgk_emu_parse_order(const char *s, mgk_emu_order *order, uint64_t *seed)
{
    if (strcmp(s, "fwd") == 0) *order = MGK_EMU_FWD, *seed = 0;
    else if (strcmp(s, "rev") == 0) *order = MGK_EMU_REV, *seed = 0;
    else if (strncmp(s, "random:", 7) == 0 && s[7]) {
        char *end;
        *seed = strtoull(s + 7, &end, 10);
        if (*end) return -1;
        *order = MGK_EMU_RANDOM;
    } else return -1;
    return 0;
}

extern "C" void mgk_emu_set_order(mgk_emu_order order, uint64_t seed)
{
    cfg_mut().order = order;
    cfg_mut().seed = seed;
    g_rng = seed;
}

extern "C" const char *mgk_emu_order_name(void)
{
    static char buf[40];
    const config &c = cfg();
    if (c.order == MGK_EMU_RANDOM) snprintf(buf, sizeof buf, "random:%llu", (unsigned long long)c.seed);
    else snprintf(buf, sizeof buf, "%s", c.order == MGK_EMU_FWD ? "fwd" : "rev");
    return buf;
}

extern "C" void mgk_emu_set_strict(int on) { cfg_mut().strict = on != 0; }
extern "C" int mgk_emu_strict(void) { return cfg().strict; }

extern "C" void mgk_emu_results_reset(void)
{
    g_digest = 1469598103934665603ull;
    g_float_atomics = false;
    g_rng = cfg().seed;
}

extern "C" uint64_t mgk_emu_results_digest(void) { return g_digest; }
extern "C" int mgk_emu_float_atomics_used(void) { return g_float_atomics; }
extern "C" uint64_t mgk_emu_launches(void) { return g_launches; }
extern "C" uint64_t mgk_emu_switches(void) { return g_switches; }
