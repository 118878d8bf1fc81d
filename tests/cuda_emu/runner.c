/* runner.c — the variants of build/test-cuda-emu: every test runs once per thread order, and
 * the results it copied back from the device must be bitwise equal under all of them.
 *
 * Orders: MGK_EMU_ORDERS (space-separated, default "fwd rev random:1"). The digest of every
 * device-to-host copy (emu_control.h) is compared across the orders; a test whose kernels
 * used float atomics is exempt (its own tolerance checks still run under every order), and
 * the runner says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emu/emu_control.h"
#include "harness.h"

#define MAX_ORDERS 8

static struct {
    int n;
    char names[MAX_ORDERS][32];
    uint64_t digest[MAX_ORDERS];
    int float_atomics;
} orders;

static void orders_init(void)
{
    const char *env = getenv("MGK_EMU_ORDERS");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", env && *env ? env : "fwd rev random:1");
    for (char *tok = strtok(buf, " ,"); tok && orders.n < MAX_ORDERS; tok = strtok(NULL, " ,")) {
        mgk_emu_order o;
        uint64_t seed;
        if (mgk_emu_parse_order(tok, &o, &seed) != 0) {
            fprintf(stderr, "test-cuda-emu: MGK_EMU_ORDERS: bad order \"%s\"\n", tok);
            exit(2);
        }
        snprintf(orders.names[orders.n++], sizeof orders.names[0], "%s", tok);
    }
}

int mg_test_variant_count(void)
{
    if (!orders.n) {
        orders_init();
        printf("test-cuda-emu: every test under the thread orders");
        for (int i = 0; i < orders.n; i++) printf(" %s", orders.names[i]);
        printf(" (MGK_EMU_ORDERS), strict mode %s\n", mgk_emu_strict() ? "on" : "off");
    }
    return orders.n;
}

const char *mg_test_variant_begin(int v)
{
    mgk_emu_order o;
    uint64_t seed;
    mgk_emu_parse_order(orders.names[v], &o, &seed);
    mgk_emu_set_order(o, seed);
    mgk_emu_results_reset();
    if (v == 0) orders.float_atomics = 0;
    return orders.names[v];
}

void mg_test_variant_end(mg_test_ctx *t, int v)
{
    orders.digest[v] = mgk_emu_results_digest();
    orders.float_atomics |= mgk_emu_float_atomics_used();
    if (v != orders.n - 1 || t->failures) return;
    for (int i = 1; i < orders.n; i++) {
        if (orders.digest[i] == orders.digest[0]) continue;
        if (orders.float_atomics) {
            if (getenv("MG_VERBOSE"))
                printf("note %s: results differ between thread orders (float atomics: not "
                       "required bitwise)\n", t->name);
            return;
        }
        mg_test_fail(t, __FILE__, __LINE__,
                     "results copied to the host differ between thread orders %s and %s "
                     "(a missing __syncthreads() or __syncwarp()?)",
                     orders.names[0], orders.names[i]);
        return;
    }
}
