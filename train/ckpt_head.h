/* ckpt_head.h — what a --load names, read before anything is built: the iteration folder
 * (the tracker's, or --ckpt-step N), the checkpoint's format and layout, and the first model
 * shard's `args`, `opt_param_scheduler` and `optimizer` (mg-train's checks and
 * --use-checkpoint-args, ckpt_preflight.h). The tensors are not read here (checkpoint.h loads them).
 *
 * Contract:
 *   - mg_train_ckpt_iter: step < 0 takes the tracker's iteration (mg/megatron_layout.h);
 *     step >= 0 takes DIR/iter_%07d, which must exist: MG_ERR_NOTFOUND listing the
 *     iterations DIR holds. A folder without a tracker that holds a Hugging Face model
 *     (config.json) is MG_ERR_ARG naming the mg-convert command that converts it.
 *   - mg_train_ckpt_head_open reads the iteration folder: torch_dist (metadata.json; args
 *     from its common state) or `torch` (mp_rank_00, else mp_rank_00_000, else
 *     MG_ERR_NOTFOUND listing the folder). For `torch` it checks that every rank file the
 *     args' tensor_model_parallel_size x pipeline_model_parallel_size imply is there
 *     (MG_ERR_FORMAT naming the first missing one). args, sched and optim point into the open
 *     file (NULL when absent) until mg_train_ckpt_head_close, which accepts a zeroed head.
 */
#ifndef MG_TRAIN_CKPT_HEAD_H
#define MG_TRAIN_CKPT_HEAD_H

#include <stdint.h>

#include "mg/dcp.h"
#include "mg/file.h"
#include "mg/megatron_layout.h"
#include "mg/pickle.h"
#include "mg/torchfile.h"

typedef struct {
    mg_megatron_iter it;
    char path[MG_PATH_MAX];    /* the file (torch) or iteration folder (torch_dist) read */
    int dist;                  /* torch_dist */
    int64_t tp, pp;            /* the layout args name (1 when absent) */
    const mg_pk_obj *args;     /* argparse.Namespace, or NULL */
    const mg_pk_obj *sched;    /* opt_param_scheduler dict, or NULL */
    const mg_pk_obj *optim;    /* the optimizer state dict (`torch`), or NULL */
    mg_torch_file *f;          /* owned */
    mg_dcp_dir *d;             /* owned (torch_dist) */
} mg_train_ckpt_head;

/* The iteration folder of checkpoint dir to load (see the contract). */
mg_status mg_train_ckpt_iter(const char *dir, int64_t step, mg_megatron_iter *it);

mg_status mg_train_ckpt_head_open(mg_train_ckpt_head *h, const char *dir, int64_t step);
void mg_train_ckpt_head_close(mg_train_ckpt_head *h);

#endif
