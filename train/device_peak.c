/* device_peak.c — device.h mg_device_peak_flops: the datasheet peaks of NVIDIA GPUs by the
 * exact name the CUDA runtime reports (cudaDeviceProp.name), for MFU.
 *
 * Dense (no 2:4 sparsity) tensor-core bf16 / fp16 peaks and the fp32 peak of the CUDA cores
 * (the fp32 path multiplies with CUBLAS_COMPUTE_32F, no TF32), in FLOP/s, from NVIDIA's
 * datasheets (docs/TRAINING.md "On GPUs"). A name not in the table (another board, a new
 * GPU, the emulator's device) has no peak: MFU prints `unknown`, never a guessed figure.
 */
#include "device.h"

#include <string.h>

typedef struct {
    const char *name;   /* cudaDeviceProp.name */
    double bf16, fp32;  /* dense FLOP/s; fp16 = bf16 on all of them */
} device_peak;

static const device_peak peaks[] = {
    {"NVIDIA H100 80GB HBM3", 989.4e12, 66.9e12}, /* H100 SXM5 */
    {"NVIDIA H100 PCIe", 756.0e12, 51.2e12},
    {"NVIDIA H100 NVL", 835.0e12, 60.0e12},
    {"NVIDIA H200", 989.4e12, 66.9e12}, /* H200 SXM: GH100's compute, 141 GB HBM3e */
    {"NVIDIA GH200 480GB", 989.4e12, 66.9e12},
    {"NVIDIA A100-SXM4-80GB", 312.0e12, 19.5e12},
    {"NVIDIA A100-SXM4-40GB", 312.0e12, 19.5e12},
    {"NVIDIA A100-PCIE-40GB", 312.0e12, 19.5e12},
    {"NVIDIA A100 80GB PCIe", 312.0e12, 19.5e12},
    {"NVIDIA L40S", 362.05e12, 91.6e12},
    {"NVIDIA B200", 2250.0e12, 75.0e12}, /* HGX B200: 8 GPUs' datasheet figures / 8 */
};

double mg_device_peak_flops(const char *name, int mixed)
{
    for (size_t i = 0; i < sizeof peaks / sizeof *peaks; i++)
        if (strcmp(name, peaks[i].name) == 0)
            return mixed ? peaks[i].bf16 : peaks[i].fp32;
    return 0.0;
}
