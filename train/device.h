/* device.h — mg-train on a GPU (--device cuda|cpu|auto): the kernel backend of the run, the
 * model and optimizer in the device's memory next to the host copies that initialisation,
 * checkpoints and logging use, and the micro-batches uploaded from pinned host buffers.
 *
 * Contract:
 *   - mg_device_open(): --device cpu gives the fast CPU backend; cuda the MGK_CUDA backend
 *     on device LOCAL_RANK mod the visible devices (one process per GPU; MG_ERR_UNSUPPORTED
 *     when the build has no CUDA or no device is visible); auto is cuda when a real GPU is
 *     visible, else cpu. The emulation build's device (make emu, docs/CUDA_EMU.md) is taken
 *     only with --device cuda, never by auto. desc names the choice ("cpu", "cuda:0 (NAME)").
 *     A CUDA context's 16-bit type (kernels.h mgk_half) is fp16 with --fp16, else bf16.
 *   - Buffers by group, each one allocation of the backend's memory (kernels.h mgk_alloc)
 *     carved into tensors with the CPU path's layout: parameters and gradients (model.c,
 *     mg_gpt_create_on), the optimizer state (step.c, mg_gpt_optim_create_on: m then v),
 *     the activations (forward.c: one arena per micro-batch in flight) and the micro-batch
 *     inputs (mg_device_batches). On the CPU backend these are the host buffers themselves
 *     and every copy below is a no-op.
 *   - Host <-> device: the host model (mg_gpt_create) is initialised and loaded on the host
 *     and uploaded once (mg_device_model); before a checkpoint the parameters and moments
 *     are downloaded into the host model and optimizer (mg_device_to_host); the loss and
 *     the gradient norm come back through the kernels' double reductions.
 *   - mg_device_batches: two sets of pinned host buffers used in turn (iteration parity),
 *     so that the host fills the next iteration's micro-batches while the device still runs
 *     the previous optimizer step; each upload goes on the context's copy stream, which the
 *     compute stream waits for (kernels.h mgk_upload_async). views[i] holds device pointers
 *     (NULL where the host batch has none). The host batch is checked (ids, targets and
 *     positions in range: mg_gpt_check_batch) before it is uploaded.
 *   - Library code: never prints or exits.
 */
#ifndef MG_TRAIN_DEVICE_H
#define MG_TRAIN_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "model.h"
#include "options.h"
#include "step.h"

mg_status mg_device_open(const mg_train_opts *o, int64_t local_rank, mg_kctx *k, char *desc,
                         size_t n);
/* Whether o->device resolves to the CPU (cpu, or auto without a real GPU). */
int mg_device_is_cpu(const mg_train_opts *o);

/* *dev = host itself on a host backend, else a model with host's views whose parameters
 * and gradients live on k's device (parameters uploaded from host); h16 adds their 16-bit
 * copy of k->half's type (params16, rounded to nearest-even on the host), which makes the
 * passes and the optimizer those of --bf16 / --fp16 (fp32 masters and gradients). */
mg_status mg_device_model(mg_gpt **dev, mg_gpt *host, const mg_kctx *k, int h16);
/* *dev = host on a host backend, else device moments and step count uploaded from host. */
mg_status mg_device_optim(mg_gpt_optim **dev, mg_gpt_optim *host, const mg_gpt *g,
                          const mg_kctx *k);
/* Parameters (and moments and step when both optimizers are given) device -> host. */
mg_status mg_device_to_host(mg_gpt *host, const mg_gpt *dev, mg_gpt_optim *host_opt,
                            const mg_gpt_optim *dev_opt, const mg_kctx *k);

typedef struct {
    mgk_backend mem;
    int64_t nmicro, N;         /* micro-batches, tokens per micro-batch */
    size_t set_bytes;          /* bytes of one micro-batch's inputs */
    unsigned char *host[2];    /* pinned staging: nmicro x set_bytes each */
    unsigned char *dev;        /* nmicro x set_bytes device inputs */
    mg_gpt_batch *views;       /* nmicro device views */
    int64_t uploads;           /* calls of mg_device_batches_upload (picks the staging set) */
} mg_device_batches;

/* The dense peak in FLOP/s of the CUDA device named name (cudaDeviceProp.name, exact match)
 * for bf16/fp16 tensor-core products (mixed) or fp32, from device_peak.c's datasheet table;
 * 0 (unknown) for a name not in it. */
double mg_device_peak_flops(const char *name, int mixed);

mg_status mg_device_batches_create(mg_device_batches *d, const mg_kctx *k, int64_t nmicro,
                                   int64_t B, int64_t T);
/* Checks and uploads host[0..nmicro-1]; sets d->views. */
mg_status mg_device_batches_upload(mg_device_batches *d, const mg_kctx *k, const mg_gpt *g,
                                   const mg_gpt_batch *host);
void mg_device_batches_free(mg_device_batches *d);

#endif
