/* gpu_main.c — the GPU test program (build/test-gpu): every CUDA kernel against its CPU
 * reference (the MG_TEST cases of tests/cuda, and of tests/gpu at sizes too large for the
 * emulator, through the unit harness, which prints "N passed, N failed"), then the kernel
 * timings of gpu_bench.c.
 * Usage: test-gpu [substring ...]   (selects tests; MG_GPU_BENCH=0 skips the timings)
 * Without a device it prints "skipped: no GPU" and exits 0. Exit status 1 if a test failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels_cuda.h"
#include "gpu_bench.h"

int mg_test_harness_main(int argc, char **argv); /* tests/unit/harness.c's main, renamed */

int main(int argc, char **argv)
{
    if (mgk_cuda_device_count() < 1) {
        printf("skipped: no GPU\n");
        return 0;
    }
    char name[256];
    int major = 0, minor = 0, nsm = 0;
    if (mgk_cuda_device_info(name, sizeof name, &major, &minor, &nsm) != MG_OK) {
        fprintf(stderr, "test-gpu: error: %s\n", mg_last_error());
        return 1;
    }
    printf("device: %s (sm_%d%d, %d SMs)\n", name, major, minor, nsm);
    printf("== correctness: every CUDA kernel against the CPU reference\n");
    fflush(stdout);
    int rc = mg_test_harness_main(argc, argv);
    fflush(stdout);
    const char *bench = getenv("MG_GPU_BENCH");
    if (!bench || strcmp(bench, "0") != 0) {
        printf("== timings\n");
        if (gpu_bench_run(name) != 0) rc = 1;
    }
    return rc;
}
