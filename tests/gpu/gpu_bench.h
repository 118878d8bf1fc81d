/* gpu_bench.h — kernel timings of the GPU test program (gpu_bench.c). */
#ifndef MG_GPU_BENCH_H
#define MG_GPU_BENCH_H

/* Times every CUDA kernel on GPT-2/Llama-sized shapes and prints time, GB/s or TFLOP/s and the
 * fraction of the device's peak (H100/H200 figures; device_name picks them). Returns 0, or 1
 * when a kernel or an allocation failed. */
int gpu_bench_run(const char *device_name);

#endif
