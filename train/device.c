/* device.c — device.h: the backend choice, the device model and optimizer with their host
 * copies, and the micro-batch uploads. */
#include "device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/dtype_convert.h"

static mg_status open_cuda(const mg_train_opts *o, int64_t local_rank, mg_kctx *k, char *desc,
                           size_t n)
{
    int count = mgk_cuda_devices();
    MG_RETURN_IF(count < 1, MG_ERR_UNSUPPORTED, "--device cuda: no CUDA device is visible");
    int ordinal = (int)(local_rank % count);
    MG_FORWARD(mgk_cuda_select(ordinal));
    MG_FORWARD(mgk_ctx_init_half(k, MGK_CUDA, 1, o->fp16 ? MGK_HALF_FP16 : MGK_HALF_BF16));
    char name[256];
    mgk_cuda_name(name, sizeof name);
    snprintf(desc, n, "cuda:%d (%s)", ordinal, name);
    return MG_OK;
}

mg_status mg_device_open(const mg_train_opts *o, int64_t local_rank, mg_kctx *k, char *desc,
                         size_t n)
{
    mgk_cuda_build built = mgk_cuda_built();
    if (o->device == MG_DEVICE_CUDA) {
        MG_RETURN_IF(built == MGK_CUDA_NONE, MG_ERR_UNSUPPORTED,
                     "--device cuda: this mg-train was built without CUDA (build it where "
                     "nvcc is, or `make emu` for the emulated device)");
        return open_cuda(o, local_rank, k, desc, n);
    }
    if (o->device == MG_DEVICE_AUTO && built == MGK_CUDA_REAL && mgk_cuda_devices() > 0)
        return open_cuda(o, local_rank, k, desc, n);
    snprintf(desc, n, "cpu");
    return mgk_ctx_init(k, MGK_CPU_FAST, 0);
}

int mg_device_is_cpu(const mg_train_opts *o)
{
    if (o->device == MG_DEVICE_CUDA) return 0;
    return o->device == MG_DEVICE_CPU || mgk_cuda_built() != MGK_CUDA_REAL ||
           mgk_cuda_devices() < 1;
}

static size_t floats(int64_t n) { return (size_t)n * sizeof(float); }

/* d->params16 = host->params rounded to k->half (nearest-even), converted here and uploaded. */
static mg_status upload_h16(mg_gpt *d, const mg_gpt *host, const mg_kctx *k)
{
    size_t bytes = (size_t)host->numel * sizeof(mgk_h16);
    d->params16 = mgk_alloc(k->backend, bytes);
    mgk_h16 *h = mg_calloc((size_t)host->numel + 1, sizeof(mgk_h16));
    mg_status st = d->params16 && h ? MG_OK : MG_ERR_NOMEM;
    uint16_t (*round16)(float) = k->half == MGK_HALF_FP16 ? mg_f32_to_f16 : mg_f32_to_bf16;
    for (int64_t i = 0; st == MG_OK && i < host->numel; i++) h[i] = round16(host->params[i]);
    if (st == MG_OK) st = mgk_upload(k->backend, d->params16, h, bytes);
    free(h);
    return st;
}

mg_status mg_device_model(mg_gpt **dev, mg_gpt *host, const mg_kctx *k, int h16)
{
    *dev = host;
    MG_ASSERT(!h16 || k->backend == MGK_CUDA);
    if (k->backend != MGK_CUDA) return MG_OK;
    mg_gpt *d = NULL;
    MG_FORWARD(mg_gpt_create_on(&d, &host->m, &host->lay, &host->opt, k->backend));
    mg_status st = mgk_upload(k->backend, d->params, host->params, floats(host->numel));
    if (st == MG_OK && h16) st = upload_h16(d, host, k);
    if (st != MG_OK) {
        mg_gpt_free(d);
        return st;
    }
    *dev = d;
    return MG_OK;
}

mg_status mg_device_optim(mg_gpt_optim **dev, mg_gpt_optim *host, const mg_gpt *g,
                          const mg_kctx *k)
{
    *dev = host;
    if (k->backend != MGK_CUDA) return MG_OK;
    mg_gpt_optim *d = NULL;
    MG_FORWARD(mg_gpt_optim_create_on(&d, g, k->backend));
    d->step = host->step;
    mg_status st = mgk_upload(k->backend, d->m, host->m, 2 * floats(host->numel));
    if (st != MG_OK) {
        mg_gpt_optim_free(d);
        return st;
    }
    *dev = d;
    return MG_OK;
}

mg_status mg_device_to_host(mg_gpt *host, const mg_gpt *dev, mg_gpt_optim *host_opt,
                            const mg_gpt_optim *dev_opt, const mg_kctx *k)
{
    if (dev != host)
        MG_FORWARD(mgk_download(k->backend, host->params, dev->params, floats(host->numel)));
    if (host_opt && dev_opt && dev_opt != host_opt) {
        MG_FORWARD(mgk_download(k->backend, host_opt->m, dev_opt->m, 2 * floats(host->numel)));
        host_opt->step = dev_opt->step;
    }
    return MG_OK;
}

/* One micro-batch's inputs: ids, targets, positions, segments (int32), loss mask (fp32). */
enum { IN_IDS, IN_TARGETS, IN_POS, IN_SEG, IN_MASK, IN_COUNT };

mg_status mg_device_batches_create(mg_device_batches *d, const mg_kctx *k, int64_t nmicro,
                                   int64_t B, int64_t T)
{
    memset(d, 0, sizeof *d);
    d->mem = k->backend;
    d->nmicro = nmicro;
    d->N = B * T;
    d->set_bytes = (size_t)IN_COUNT * (size_t)d->N * 4;
    size_t all = (size_t)nmicro * d->set_bytes;
    d->views = mg_calloc((size_t)nmicro, sizeof *d->views);
    d->host[0] = mgk_host_alloc(d->mem, all);
    d->host[1] = mgk_host_alloc(d->mem, all);
    d->dev = mgk_alloc(d->mem, all);
    if (!d->views || !d->host[0] || !d->host[1] || !d->dev) {
        mg_device_batches_free(d);
        return MG_ERR_NOMEM;
    }
    return MG_OK;
}

/* Copies what the host batch has into the staging set; the view gets the device twins. */
static void stage(const mg_device_batches *d, unsigned char *host, unsigned char *dev,
                  const mg_gpt_batch *b, mg_gpt_batch *view)
{
    size_t n = (size_t)d->N * 4;
    const void *src[IN_COUNT] = {b->ids, b->targets, b->pos, b->seg, b->loss_mask};
    void *dst[IN_COUNT];
    for (int i = 0; i < IN_COUNT; i++) {
        dst[i] = src[i] ? dev + (size_t)i * n : NULL;
        if (src[i]) memcpy(host + (size_t)i * n, src[i], n);
    }
    view->ids = dst[IN_IDS];
    view->targets = dst[IN_TARGETS];
    view->pos = dst[IN_POS];
    view->seg = dst[IN_SEG];
    view->loss_mask = dst[IN_MASK];
}

mg_status mg_device_batches_upload(mg_device_batches *d, const mg_kctx *k, const mg_gpt *g,
                                   const mg_gpt_batch *host)
{
    unsigned char *staging = d->host[d->uploads++ & 1];
    for (int64_t i = 0; i < d->nmicro; i++) {
        MG_FORWARD(mg_gpt_check_batch(g, &host[i], d->N));
        size_t at = (size_t)i * d->set_bytes;
        stage(d, staging + at, d->dev + at, &host[i], &d->views[i]);
    }
    return mgk_upload_async(k, d->dev, staging, (size_t)d->nmicro * d->set_bytes);
}

void mg_device_batches_free(mg_device_batches *d)
{
    mgk_host_free(d->mem, d->host[0]);
    mgk_host_free(d->mem, d->host[1]);
    mgk_free(d->mem, d->dev);
    free(d->views);
    memset(d, 0, sizeof *d);
}
