/* emu_smem.cc — the shared memory of a launch.
 *
 * Contract:
 *   - The dynamic shared memory (the launch's smem_bytes) and every MGK_SHARED array are
 *     separate heap blocks of exactly their declared size (16-byte aligned), allocated once
 *     per launch, so AddressSanitizer reports any access beyond them; without ASan a 64-byte
 *     canary after each is checked at the end of every block (writes beyond are fatal).
 *   - Before every block all of it is filled with 0xff bytes (NaN as float, bf16 and double):
 *     a read of a slot no thread of this block wrote shows up in the results.
 *   - Static arrays count against 48 KiB, static + dynamic against the launch's limit (48 KiB,
 *     or the cudaFuncAttributeMaxDynamicSharedMemorySize set for the kernel): as on a GPU,
 *     a kernel over the limit does not run (here: a fatal report at the first access).
 */
#include "cuda_emu/emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

namespace mgk_emu {

#ifdef MGK_EMU_ASAN
static const size_t CANARY = 0;
#else
static const size_t CANARY = 64;
#endif
static const size_t STATIC_LIMIT = 48 * 1024;

struct region {
    char *p;
    size_t bytes;
    site at;
};

static std::vector<region> g_regions; /* [0] is the dynamic memory */
static size_t g_static_bytes;

static char *region_alloc(size_t bytes)
{
    void *p = nullptr;
    if (posix_memalign(&p, 16, bytes + CANARY) != 0 || !p) {
        fprintf(stderr, "mgk-emu: error: out of memory for %zu bytes of shared memory\n", bytes);
        abort();
    }
    return (char *)p;
}

static void region_poison(const region &r)
{
    memset(r.p, 0xff, r.bytes);
    memset(r.p + r.bytes, 0xa5, CANARY);
}

void smem_launch_begin(void)
{
    const launch_desc *d = g_launch.d;
    g_regions.clear();
    g_regions.push_back(region{region_alloc(d->smem), d->smem, d->at});
    g_static_bytes = 0;
}

void smem_block_begin(void)
{
    for (const region &r : g_regions) region_poison(r);
}

void smem_block_end(void)
{
    for (size_t i = 0; i < g_regions.size(); i++) {
        const region &r = g_regions[i];
        for (size_t k = 0; k < CANARY; k++)
            if ((unsigned char)r.p[r.bytes + k] != 0xa5)
                fatal(r.at, "shared memory written %zu byte(s) beyond the %zu bytes %s", k,
                      r.bytes, i == 0 ? "of dynamic shared memory the launch declared"
                                      : "this MGK_SHARED array declares");
    }
}

void smem_launch_end(void)
{
    for (const region &r : g_regions) free(r.p);
    g_regions.clear();
}

void *shared_static(smem_site *s, size_t bytes)
{
    site at = {s->file, s->line};
    if (s->launch == g_launch.serial) {
        if (bytes != s->bytes)
            fatal(at, "MGK_SHARED array of %zu bytes, declared with %zu bytes by another thread",
                  bytes, s->bytes);
        return s->ptr;
    }
    if (!g_launch.in_block) fatal(at, "MGK_SHARED outside a kernel");
    if (g_static_bytes + bytes > STATIC_LIMIT)
        fatal(at, "static shared memory of %zu bytes exceeds the %zu-byte limit",
              g_static_bytes + bytes, STATIC_LIMIT);
    if (g_static_bytes + bytes + g_launch.d->smem > g_launch.smem_limit)
        fatal(at, "static (%zu) + dynamic (%zu) shared memory exceeds the kernel's %zu-byte "
                  "limit (cudaFuncSetAttribute MaxDynamicSharedMemorySize raises it)",
              g_static_bytes + bytes, g_launch.d->smem, g_launch.smem_limit);
    region r = {region_alloc(bytes), bytes, at};
    region_poison(r);
    g_regions.push_back(r);
    g_static_bytes += bytes;
    s->launch = g_launch.serial;
    s->ptr = r.p;
    s->bytes = bytes;
    return r.p;
}

void *shared_dynamic(site at)
{
    if (!g_launch.in_block) fatal(at, "MGK_DYN_SHARED outside a kernel");
    return g_regions[0].p;
}

} /* namespace mgk_emu */
