/* mg_load_internal.h — what the Megatron `torch`-format loader (mg_load.c) shares with its
 * optimizer-moment binding (mg_moments.c): the mapped rank files, their entries and the
 * shards every canonical parameter (and moment: CK_MOMENT) points at.
 */
#ifndef CK_MG_LOAD_INTERNAL_H
#define CK_MG_LOAD_INTERNAL_H

#include "ckpt.h"
#include "mg/file.h"
#include "mg/torchfile.h"

typedef struct {
    const char *name;
    const mg_pk_obj *obj;
    int used;
} entry;

typedef struct {
    mg_torch_file *f;
    char rel[MG_PATH_MAX]; /* DIR/iterdir/mp_rank_../model_optim_rng.pt */
    entry *e;
    size_t n, cap;
    int fd1;               /* a descriptor of the file + 1 for file-to-file copies; 0: none */
    mg_torch_file *dopt;   /* distrib_optim.pt beside it when its moments are kept, or NULL */
} rank_file;

typedef struct {
    const uint8_t *p;
    mg_tdtype dtype;
    int64_t rowlen;
} shard;

typedef struct {
    rank_file *files; /* pp * tp, index p * tp + r */
    size_t nfiles;
    shard *sh;        /* nparams * tp, or 3 * nparams * tp with the moments */
    int64_t vp_s;     /* source padded vocabulary */
    mg_pk_graph *names; /* arena for flattened names */
} mg_impl;

/* The stage holding parameter p and its layer index there. */
mg_status ck_mg_stage_of(const ck_source *s, const mg_param *p, int64_t *stage, int64_t *local);
/* Checks entry e of rf against p's shard shape at the source's TP (floating dtype,
 * contiguous, inside its storage) and points out at its data; errors name rf and e. */
mg_status ck_mg_check_shard(const ck_source *s, const mg_impl *h, const mg_param *p,
                            const rank_file *rf, const entry *e, shard *out);
/* Every rank file's Adam moments into h->sh (mg_moments.c): from torch's optimizer state
 * dict in model_optim_rng.pt, or from distrib_optim.pt (rank_file.dopt). */
mg_status ck_mg_bind_moments(ck_source *s, mg_impl *h);

#endif
