/* emu_sched.cc — one block of a launch: its threads, barriers and warp operations.
 *
 * Contract:
 *   - Threads start in the order of emu_config's order_fill. A worker fiber runs unstarted
 *     threads one after the other as plain calls; a thread that reaches a synchronisation
 *     point keeps its worker (it becomes that thread's fiber) and the next thread starts on
 *     another worker. So a block without barriers costs one fiber switch, and no thread ever
 *     runs twice.
 *   - Released threads (a completed barrier or warp operation) resume before unstarted
 *     threads start, in the selected order (a random order is redrawn at every barrier).
 *   - A barrier completes when every thread that has not exited has arrived; a warp
 *     operation when every lane of its mask that has not exited has arrived at the same
 *     operation with the same mask (strict mode reports exits that matter before). Results of shuffles follow PTX's shfl.sync (segments of `width` lanes, a source
 *     outside the segment gives the lane its own value).
 *   - Misuse is reported through fatal/strict_violation (emu_config.cc) with the call site.
 */
#include "cuda_emu/emu_internal.h"

#include <stdio.h>
#include <string.h>

#include <vector>

namespace mgk_emu {

enum tstate : uint8_t { T_UNSTARTED, T_READY, T_RUNNING, T_BARRIER, T_WARP, T_EXITED };

struct trec {
    uint3 tid;
    tstate state;
    fiber *f;
    /* the warp operation it waits at */
    site wsite;
    uint32_t wmask, wb;
    int wkind, wwidth;
    uint64_t wval, wout;
};

/* Lanes waiting at one warp operation (same mask, kind and call site). */
struct wgroup {
    uint32_t mask, arrived;
    int kind;
    site at;
};

struct warp_rec {
    uint32_t exists, exited, at_barrier;
    int ngroups;
    wgroup g[32];
};

struct block_rec {
    std::vector<trec> th;
    std::vector<int> perm;  /* start / release order */
    std::vector<int> ready; /* ring of released threads */
    int rhead, rcount;
    int next_unstarted; /* index into perm */
    int n, live, exited, cur;
    int bar_arrived;
    site bar_site;
    std::vector<warp_rec> warps;
};

static block_rec B;

int sched_current_thread(void) { return g_launch.in_block ? B.cur : -1; }

static bool same_site(site a, site b)
{
    return a.line == b.line && (a.file == b.file || strcmp(a.file, b.file) == 0);
}

static void block_init(unsigned n)
{
    const dim3 bd = g_ids.block_dim;
    B.n = (int)n;
    B.th.resize(n);
    B.perm.resize(n);
    B.ready.resize(n);
    for (unsigned i = 0; i < n; i++) {
        trec &t = B.th[i];
        t.tid = make_uint3(i % bd.x, (i / bd.x) % bd.y, i / (bd.x * bd.y));
        t.state = T_UNSTARTED;
        t.f = nullptr;
    }
    B.warps.resize((n + 31) / 32);
    for (unsigned w = 0; w < B.warps.size(); w++) {
        warp_rec &r = B.warps[w];
        unsigned lanes = n - 32 * w < 32 ? n - 32 * w : 32;
        r.exists = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
        r.exited = r.at_barrier = 0;
        r.ngroups = 0;
    }
    order_fill(B.perm.data(), B.n);
    B.rhead = B.rcount = 0;
    B.next_unstarted = 0;
    B.live = B.n;
    B.exited = 0;
    B.cur = -1;
    B.bar_arrived = 0;
}

static void ready_push(int t)
{
    B.th[t].state = T_READY;
    int at = B.rhead + B.rcount++;
    B.ready[at >= B.n ? at - B.n : at] = t;
}

/* The next thread to run: a released one, else the next unstarted one, else -1. */
static int pick_next(void)
{
    if (B.rcount) {
        int t = B.ready[B.rhead];
        if (++B.rhead == B.n) B.rhead = 0;
        B.rcount--;
        return t;
    }
    if (B.next_unstarted < B.n) return B.perm[B.next_unstarted++];
    return -1;
}

/* Makes t the running thread on fiber f. */
static void bind(fiber *f, int t)
{
    trec &r = B.th[t];
    r.f = f;
    r.state = T_RUNNING;
    f->thread = t;
    B.cur = t;
    g_ids.thread_idx = r.tid;
}

[[noreturn]] static void deadlock(void);

/* Leaves fiber self (its thread waits or it is free) for thread next, or for the launching
 * thread when the block is done. */
static void continue_with(fiber *self, int next)
{
    if (next < 0) {
        if (B.live > 0) deadlock();
        fiber_switch(self, fiber_main());
        return;
    }
    trec &r = B.th[next];
    if (r.state == T_UNSTARTED) {
        fiber *f = fiber_acquire();
        bind(f, next);
        fiber_switch(self, f);
    } else {
        fiber *f = r.f;
        bind(f, next);
        fiber_switch(self, f);
    }
}

/* The running thread t waits; returns when it has been released and runs again. */
static void wait_released(int t)
{
    fiber *self = B.th[t].f;
    int next = pick_next();
    if (next == t) {
        bind(self, t);
        return;
    }
    continue_with(self, next);
}

static warp_rec &warp_of(int t) { return B.warps[t / 32]; }

/* A group of t's warp waiting for t's lane, or NULL. */
static wgroup *group_waiting_for(int t)
{
    warp_rec &w = warp_of(t);
    for (int i = 0; i < w.ngroups; i++)
        if (w.g[i].mask & (1u << (t % 32))) return &w.g[i];
    return nullptr;
}

static bool group_complete(const warp_rec &w, const wgroup *g)
{
    return g->arrived == (g->mask & ~w.exited);
}

static void complete_group(warp_rec &w, wgroup *g, int base);

static void thread_exit(int t)
{
    trec &r = B.th[t];
    wgroup *g = group_waiting_for(t);
    if (g)
        strict_violation(g->at, "thread exited while lanes 0x%08x of its warp wait for it at "
                         "this warp operation (mask 0x%08x)", g->arrived, g->mask);
    if (B.bar_arrived > 0)
        strict_violation(B.bar_site, "thread (%u,%u,%u) exited while %d threads wait at this "
                         "__syncthreads()", r.tid.x, r.tid.y, r.tid.z, B.bar_arrived);
    r.state = T_EXITED;
    warp_of(t).exited |= 1u << (t % 32);
    B.live--;
    B.exited++;
    /* relaxed mode: as on a GPU, the exited lane no longer counts for the operation */
    if (g && group_complete(warp_of(t), g)) complete_group(warp_of(t), g, t - t % 32);
}

static void barrier_release(void)
{
    if (cfg().order == MGK_EMU_RANDOM) order_fill(B.perm.data(), B.n);
    for (int i = 0; i < B.n; i++)
        if (B.th[B.perm[i]].state == T_BARRIER) ready_push(B.perm[i]);
    for (warp_rec &w : B.warps) w.at_barrier = 0;
    B.bar_arrived = 0;
}

[[noreturn]] void sched_worker(fiber *self)
{
    for (;;) {
        int t = self->thread;
        g_launch.d->body(g_launch.d->ctx);
        thread_exit(t);
        /* relaxed mode: the exit may complete a barrier the others wait at */
        if (B.bar_arrived > 0 && B.bar_arrived == B.live) barrier_release();
        int next = pick_next();
        if (next >= 0 && B.th[next].state == T_UNSTARTED) {
            bind(self, next); /* plain-call path: no switch */
            continue;
        }
        fiber_release(self);
        continue_with(self, next);
    }
}

void sched_run_block(void)
{
    block_init(g_launch.nthreads);
    int first = pick_next();
    fiber *f = fiber_acquire();
    bind(f, first);
    g_launch.in_block = true;
    fiber_switch(fiber_main(), f);
    g_launch.in_block = false;
    B.cur = -1;
}

static int running_thread(site at, const char *what)
{
    if (!g_launch.in_block) fatal(at, "%s called outside a kernel", what);
    return B.cur;
}

void syncthreads(site at)
{
    int t = running_thread(at, "__syncthreads()");
    if (wgroup *g = group_waiting_for(t))
        fatal(at, "__syncthreads() while lanes 0x%08x of this warp wait for this lane at the "
                  "warp operation at %s:%d (mask 0x%08x)", g->arrived, g->at.file, g->at.line,
              g->mask);
    if (B.exited > 0)
        strict_violation(at, "__syncthreads() reached by only some threads: %d thread(s) of the "
                         "block already exited (a return before a barrier?)", B.exited);
    if (B.bar_arrived > 0 && !same_site(at, B.bar_site))
        strict_violation(at, "divergent __syncthreads(): other threads wait at %s:%d",
                         B.bar_site.file, B.bar_site.line);
    if (B.bar_arrived == 0) B.bar_site = at;
    B.bar_arrived++;
    B.th[t].state = T_BARRIER;
    warp_of(t).at_barrier |= 1u << (t % 32);
    if (B.bar_arrived == B.live) barrier_release();
    wait_released(t);
}

/* ---- warp operations -------------------------------------------------------------------- */

static void check_warp_call(site at, int t, warp_kind kind, unsigned mask, int width)
{
    warp_rec &w = warp_of(t);
    unsigned lane = (unsigned)t % 32;
    if (!(mask & (1u << lane)))
        fatal(at, "warp operation with mask 0x%08x does not name the calling lane %u", mask, lane);
    if (mask & ~w.exists)
        fatal(at, "mask 0x%08x names lanes that do not exist (block of %d threads: lanes 0x%08x "
                  "in this warp)", mask, B.n, w.exists);
    if (kind == WARP_MMA && mask != 0xffffffffu)
        fatal(at, "wmma operations need all 32 lanes of the warp (lanes 0x%08x exist)", w.exists);
    if (width < 1 || width > 32 || (width & (width - 1)))
        fatal(at, "shuffle width %d is not a power of two <= 32", width);
    if (mask & w.exited)
        strict_violation(at, "warp operation with mask 0x%08x: lanes 0x%08x have exited", mask,
                         mask & w.exited);
    if (mask & w.at_barrier)
        fatal(at, "warp operation with mask 0x%08x: lanes 0x%08x wait at __syncthreads() at "
                  "%s:%d", mask, mask & w.at_barrier, B.bar_site.file, B.bar_site.line);
}

/* The group this call joins: one waiting with the same mask, or a new one. */
static wgroup *join_group(site at, int t, warp_kind kind, unsigned mask)
{
    warp_rec &w = warp_of(t);
    for (int i = 0; i < w.ngroups; i++) {
        wgroup *g = &w.g[i];
        if (!(g->mask & mask)) continue;
        if (g->mask != mask || g->kind != kind)
            fatal(at, "warp operation mask mismatch: lanes 0x%08x wait at %s:%d with mask "
                      "0x%08x, lane %d calls with mask 0x%08x", g->arrived, g->at.file,
                  g->at.line, g->mask, t % 32, mask);
        if (!same_site(at, g->at))
            strict_violation(at, "lanes of mask 0x%08x reached different warp operations: "
                             "lanes 0x%08x wait at %s:%d", mask, g->arrived, g->at.file,
                             g->at.line);
        return g;
    }
    wgroup *g = &w.g[w.ngroups++];
    *g = wgroup{mask, 0, kind, at};
    return g;
}

/* Source lane of lane l's shuffle, as PTX shfl.sync computes it. */
static unsigned shfl_source(int kind, unsigned l, unsigned b, int width)
{
    unsigned segmask = 32u - (unsigned)width;
    unsigned cval = kind == WARP_UP ? 0u : 31u;
    int min_lane = (int)(l & segmask);
    int max_lane = (int)((l & segmask) | (cval & ~segmask));
    int j;
    bool ok;
    switch (kind) {
    case WARP_UP: j = (int)l - (int)b; ok = j >= max_lane; break;
    case WARP_DOWN: j = (int)l + (int)b; ok = j <= max_lane; break;
    case WARP_XOR: j = (int)(l ^ (b & 31u)); ok = j <= max_lane; break;
    default: j = min_lane | (int)(b & ~segmask & 31u); ok = j <= max_lane; break;
    }
    (void)min_lane;
    return ok ? (unsigned)j : l;
}

static void compute_results(const wgroup *g, int base)
{
    if (g->kind == WARP_BALLOT) {
        uint64_t bits = 0;
        for (unsigned l = 0; l < 32; l++)
            if ((g->arrived >> l & 1) && B.th[base + l].wval) bits |= 1ull << l;
        for (unsigned l = 0; l < 32; l++)
            if (g->arrived >> l & 1) B.th[base + l].wout = bits;
        return;
    }
    if (g->kind == WARP_SYNC || g->kind == WARP_MMA) return;
    for (unsigned l = 0; l < 32; l++) {
        if (!(g->arrived >> l & 1)) continue;
        trec &r = B.th[base + l];
        unsigned j = shfl_source(g->kind, l, r.wb, r.wwidth);
        if (!(g->arrived >> j & 1)) {
            strict_violation(g->at, "lane %u reads lane %u, which is not in the mask 0x%08x%s",
                             l, j, g->mask, g->mask >> j & 1 ? " (it exited)" : "");
            r.wout = ~0ull; /* undefined on the GPU: NaN bits here */
            continue;
        }
        r.wout = B.th[base + j].wval;
    }
}

/* Releases the lanes of a completed group, in the selected order. */
static void release_group(warp_rec &w, wgroup *g, int base)
{
    int lanes[32], n = 0;
    for (int l = 0; l < 32; l++)
        if (g->arrived >> l & 1) lanes[n++] = l;
    mgk_emu_order o = cfg().order;
    for (int i = 0; i < n; i++) {
        int k = o == MGK_EMU_FWD ? i : n - 1 - i;
        if (o == MGK_EMU_RANDOM) {
            int r = i + (int)(rng_next() % (uint64_t)(n - i));
            int tmp = lanes[i];
            lanes[i] = lanes[r];
            lanes[r] = tmp;
            k = i;
        }
        ready_push(base + lanes[k]);
    }
    *g = w.g[--w.ngroups];
}

static void complete_group(warp_rec &w, wgroup *g, int base)
{
    compute_results(g, base);
    release_group(w, g, base);
}

uint64_t warp_exchange(site at, warp_kind kind, unsigned mask, uint64_t value, unsigned b,
                       int width)
{
    int t = running_thread(at, "a warp operation");
    check_warp_call(at, t, kind, mask, width);
    wgroup *g = join_group(at, t, kind, mask);
    trec &r = B.th[t];
    r.wsite = at;
    r.wmask = mask;
    r.wkind = kind;
    r.wb = b;
    r.wwidth = width;
    r.wval = value;
    r.state = T_WARP;
    g->arrived |= 1u << (t % 32);
    if (group_complete(warp_of(t), g)) complete_group(warp_of(t), g, t - t % 32);
    wait_released(t);
    return B.th[t].wout;
}

/* No thread can run but some wait: names every waiting thread's call site. */
[[noreturn]] static void deadlock(void)
{
    for (int t = 0; t < B.n; t++) {
        const trec &r = B.th[t];
        if (r.state == T_WARP)
            fprintf(stderr, "mgk-emu:   thread (%u,%u,%u) waits at the warp operation at %s:%d "
                            "(mask 0x%08x)\n", r.tid.x, r.tid.y, r.tid.z, r.wsite.file,
                    r.wsite.line, r.wmask);
    }
    site at = B.bar_arrived ? B.bar_site : site{"(block)", 0};
    fatal(at, "deadlock: %d thread(s) wait at __syncthreads() and the warp operations listed "
              "above, no thread can run", B.bar_arrived);
}

} /* namespace mgk_emu */
