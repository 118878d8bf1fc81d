/* test_train_device.c — train/device.h: the datasheet peak table (exact device names only;
 * any other name, the emulator's included, is unknown) and the backend choice of --device
 * (cpu: the fast CPU backend; cuda without a visible device: refused as unsupported). The
 * training runs on the emulated device: tests/interop/test_train_device.py. */
#include <string.h>

#include "device.h"
#include "harness.h"
#include "options.h"

MG_TEST(train_device_peak_table)
{
    MG_CHECK(t, mg_device_peak_flops("NVIDIA H100 80GB HBM3", 1) == 989.4e12);
    MG_CHECK(t, mg_device_peak_flops("NVIDIA H100 80GB HBM3", 0) == 66.9e12);
    MG_CHECK(t, mg_device_peak_flops("NVIDIA H200", 1) == 989.4e12);
    MG_CHECK(t, mg_device_peak_flops("NVIDIA H100 PCIe", 1) == 756e12);
    MG_CHECK(t, mg_device_peak_flops("NVIDIA A100-SXM4-80GB", 1) == 312e12);
    MG_CHECK(t, mg_device_peak_flops("NVIDIA A100-SXM4-80GB", 0) == 19.5e12);
    /* no prefix, case or emulator matches */
    MG_CHECK(t, mg_device_peak_flops("NVIDIA H100", 1) == 0);
    MG_CHECK(t, mg_device_peak_flops("nvidia h200", 1) == 0);
    MG_CHECK(t, mg_device_peak_flops("mgk-emu (emulated cc 9.0 on CPU)", 1) == 0);
    MG_CHECK(t, mg_device_peak_flops("", 0) == 0);
}

MG_TEST(train_device_open_choice)
{
    mg_train_opts o;
    memset(&o, 0, sizeof o);
    o.device = MG_DEVICE_CPU;
    mg_kctx k;
    char desc[64];
    MG_CHECK_OK(t, mg_device_open(&o, 0, &k, desc, sizeof desc));
    MG_CHECK(t, k.backend == MGK_CPU_FAST);
    MG_CHECK_EQ_STR(t, desc, "cpu");
    MG_CHECK(t, mg_device_is_cpu(&o));
    mgk_ctx_free(&k);
    o.device = MG_DEVICE_CUDA;
    MG_CHECK(t, !mg_device_is_cpu(&o));
    if (mgk_cuda_devices() == 0)
        MG_CHECK_ERR(t, mg_device_open(&o, 0, &k, desc, sizeof desc), MG_ERR_UNSUPPORTED,
                     "--device cuda");
}
