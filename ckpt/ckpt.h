/* ckpt.h — mg-convert internals: options, checkpoint sources, output plans.
 *
 * The converter works on "canonical" parameters (mg/schema.h): a source (HF or Megatron
 * loader) answers where each canonical element lives in its mapped input files (locate);
 * a plan lists every output file and, for each output tensor, which canonical rows and
 * columns fill it (runs; vocabulary rows past the true vocabulary: ck_vocab_row); writers
 * materialise one tensor at a time from the source and stream it into the output file.
 * Peak memory is a few tensors per worker, whatever the model size.
 */
#ifndef CKPT_H
#define CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mg/error.h"
#include "mg/megatron_layout.h"
#include "mg/megatron_param_order.h"
#include "mg/model_desc.h"
#include "mg/pickle.h"
#include "mg/schema.h"
#include "mg/torchfile.h"

enum { CK_AUTO = 0, CK_HF = 1, CK_MEGATRON = 2 };

typedef struct {
    const char *load_dir, *save_dir, *inspect_dir, *tokenizer_dir;
    int loader, saver;           /* CK_* */
    int64_t tp, pp, pp_first, pp_last;
    int64_t dp;                  /* --target-data-parallel-size: the output's args'
                                  * data_parallel_size (distrib_optim.pt's DDP buckets);
                                  * 0: the source's */
    mg_tdtype dtype;             /* MG_TD_INVALID: keep the source's */
    int64_t divisible_by;        /* 0: 128 */
    int64_t true_vocab;          /* 0: unknown */
    int te;                      /* --transformer-impl: 1 TransformerEngine names, 0 local,
                                  * -1 (default) the Megatron source's (ck_target_names) */
    int torch_dist;              /* --ckpt-format torch_dist (Megatron saver) */
    int64_t iteration;           /* -1: release */
    uint64_t max_shard;
    int drop_optim, verify, quiet, help, version;
    int summary;                 /* --inspect --summary: one line per kind of tensor */
    int workers;                 /* 0: automatic */
} ck_opts;

void ck_parse_options(ck_opts *o, int argc, char **argv);
void ck_print_help(void);

/* The iteration folder a Megatron save writes (--iteration N, or release). */
static inline mg_megatron_iter ck_iteration(const ck_opts *o)
{
    return (mg_megatron_iter){o->iteration >= 0 ? o->iteration : 0, o->iteration < 0};
}

/* Optimizer state is dropped (and listed) with --drop-optimizer-state, or for a Hugging Face
 * export, which has nowhere to put it; otherwise the loaders refuse it. */
static inline int ck_drops_optimizer(const ck_opts *o)
{
    return o->drop_optim || o->saver == CK_HF;
}

/* Where canonical element (row, col) of a parameter lives: p points at it, the next ones
 * along the row follow every `step` bytes, `avail` of them (>= 1) are there. */
typedef struct {
    const uint8_t *p;
    int64_t step;
    int64_t avail;
    mg_tdtype dtype;
} ck_loc;

typedef struct ck_source ck_source;
struct ck_source {
    mg_model_desc m;             /* vocab_size = the true vocabulary (canonical rows) */
    mg_param *params;
    size_t nparams;
    void (*locate)(const ck_source *s, size_t pi, int64_t row, int64_t col, ck_loc *loc);
    void (*close)(ck_source *s);
    /* Optional: the mapped pages of parameter pi may be dropped from memory (they are
     * re-read from the page cache when needed again): keeps RSS at a few tensors. */
    void (*release)(const ck_source *s, size_t pi);
    /* Optional: 1 when mapped byte p of an input lies in an open file (*fd, at *off), so
     * that a writer may copy it file to file; 0 otherwise. */
    int (*file_of)(const ck_source *s, const uint8_t *p, int *fd, uint64_t *off);
    char **dropped;              /* "what (where)" lines: intentionally not converted */
    unsigned char *drop_notable; /* per line: 1 = worth reporting even with --quiet */
    size_t ndropped;
    mg_pk_obj *args;             /* Megatron source's args Namespace, or NULL */
    int vocab_unknown;           /* Megatron source without a true vocabulary size: the
                                  * canonical rows are its padded rows */
    int64_t vocab_rows;          /* Megatron source: the rows its vocabulary tensors hold
                                  * (its padded size; readable through locate past V);
                                  * 0: the true vocabulary only (HF) */
    mg_names names;              /* Megatron source: the spec its layer norms are named
                                  * after (TE, local or legacy); HF: MG_NAMES_TE */
    int64_t tp, pp;              /* the source's layout (1, 1 for HF) */
    char format[96];             /* "hf safetensors", "megatron torch (release)" */
    /* Megatron source with its Adam moments kept (optimizer state in its rank files, not
     * dropped): canonical "parameters" nparams..3*nparams-1 are the moments, exp_avg of
     * parameter i at CK_MOMENT(s, i, 1), exp_avg_sq at CK_MOMENT(s, i, 2) (locate and
     * release take them; s->params has the first nparams only: ck_param). */
    int moments;
    /* with the moments, a --bf16/--fp16 run's fp32 masters (Float16OptimizerWithFloat16Params'
     * fp32_from_fp16_params) at CK_MOMENT(s, i, 3) */
    int masters;
    /* with the moments, the source's are the distributed optimizer's (distrib_optim.pt
     * beside every rank file): the output is written in that form too (mg_distopt.c) */
    int dist_optim;
    double optim_step;           /* the moments' step count (torch's state[i]['step']) */
    const mg_pk_obj *optim_groups; /* rank 0's param_groups (their 'params' are replaced) */
    mg_pk_obj *optim_scaler;       /* rank 0's optimizer 'grad_scaler' (kept), or NULL */
    int64_t iteration;           /* the source's iteration; -1: release */
    const mg_pk_obj *root0;      /* Megatron source: rank 0's pickled root, or NULL */
    void *impl;
};

#define CK_MOMENT(s, pi, k) ((pi) + (size_t)(k) * (s)->nparams)
/* The canonical copies of each parameter: itself, its moments, its master. */
#define CK_COPIES(s) ((size_t)1 + ((s)->moments ? 2 : 0) + ((s)->masters ? 1 : 0))

/* The parameter behind canonical index pi (a parameter, or one of its moments). */
static inline const mg_param *ck_param(const ck_source *s, size_t pi)
{
    return &s->params[pi % s->nparams];
}

/* Loaders. opts supplies --true-vocab-size and --drop-optimizer-state. */
mg_status ck_hf_open(ck_source **s, const char *dir, const ck_opts *o);
mg_status ck_mg_open(ck_source **s, const char *dir, const ck_opts *o);
/* Megatron `torch_dist` (td_load.c): iterpath is the iteration folder (what names it in
 * the format line); mg_mcore_dist_is (mg/mcore_dist.h) says whether a folder holds one. */
mg_status ck_td_open(ck_source **s, const char *iterpath, const char *what, const ck_opts *o);
/* Picks the loader (o->loader, or auto: config.json / latest_checkpointed_iteration.txt /
 * metadata.json); a Megatron folder holding torch_dist goes to ck_td_open. */
mg_status ck_source_open(ck_source **s, const char *dir, const ck_opts *o, int loader);
/* For loaders: a zeroed source owning a zeroed implementation struct of impl_size bytes
 * (s->impl), its model description initialised; NULL when out of memory. */
ck_source *ck_source_alloc(size_t impl_size);
void ck_source_free(ck_source *s);
/* Lists an entry as intentionally not converted: routine (metadata, buffers, tied copies,
 * optimizer state dropped on request), or notable (state a resumed run would miss), which
 * is reported even with --quiet. */
mg_status ck_source_drop(ck_source *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
mg_status ck_source_drop_notable(ck_source *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Shared by the loaders: the parameter list for s->m. */
mg_status ck_source_params(ck_source *s);

/* The source row that fills row `row` (>= V) of a padded vocabulary tensor on Megatron
 * output, as Megatron's converter does (tools/checkpoint/saver_base.py, receive_lm's
 * pad_weight: the source's padded table is kept, truncated to the new padded size, or grown
 * by copies of its last row): row itself while the source holds it, then its last row; -1
 * (a zero row) for an HF source, which has no padding. */
int64_t ck_vocab_row(const ck_source *s, int64_t row);
/* Names Megatron output takes: --transformer-impl, else the Megatron source's (local stays
 * local; TE, legacy and HF sources give Megatron-Core's default, TE). */
mg_names ck_target_names(const ck_source *s, const ck_opts *o);

/* Canonical block [row0, row0+nrows) x [col0, col0+ncols) of parameter pi, converted to
 * dt, into dst (row-major, ncols per row). */
mg_status ck_read_rows(const ck_source *s, size_t pi, int64_t row0, int64_t nrows,
                       int64_t col0, int64_t ncols, void *dst, mg_tdtype dt);

/* ---- plans ---- */

#define CK_ZERO ((size_t)-1)

typedef struct {
    int64_t out_row, nrows; /* rows of the gathered block */
    size_t param;           /* CK_ZERO: zero rows */
    int64_t src_row, col0, ncols;
} ck_run;

typedef struct {
    char *name;
    mg_tdtype dtype;
    int ndim;
    int64_t shape[2];
    int64_t grows, gcols;   /* gathered block; the tensor is it, or its transpose */
    int transpose;
    int none;               /* Megatron `_extra_state` = None: no data */
    int moment;             /* 0: a parameter; 1: exp_avg, 2: exp_avg_sq of tensor `of` */
    size_t of;              /* moments: the index (in the file) of their parameter tensor */
    size_t item, chunk;     /* torch_dist: the chunk of the plan's mg_dcp_meta it is */
    ck_run *runs;
    size_t nruns, cap;
} ck_tensor;

typedef struct {
    char *path;             /* relative to the output root */
    ck_tensor *t;
    size_t n, cap;
    int64_t tp_rank, pp_rank;
    uint64_t bytes;
} ck_file;

typedef struct {
    mg_model_desc m;        /* the target model (tp, pp, dtype, vocab) */
    mg_names names;         /* Megatron output: the spec its names follow */
    ck_file *files;
    size_t nfiles;
    char iterdir[MG_MEGATRON_NAME_MAX]; /* Megatron: "release" or "iter_%07d" */
    int64_t dp;             /* Megatron `torch`: --target-data-parallel-size, or 0 */
    uint64_t bytes;
    size_t ntensors;
    void *fmt;              /* format-specific plan (torch_dist: the mg_dcp_meta), or NULL */
    void (*fmt_free)(void *fmt);
} ck_plan;

mg_status ck_plan_target(mg_model_desc *t, const ck_source *s, const ck_opts *o);
/* Plan building blocks (plan.c): a tensor appended to f ([r, c] gathered), a run appended
 * to t, the byte totals of p, a malloc'd copy of s. */
ck_tensor *ck_add_tensor(ck_file *f, const char *name, mg_tdtype dt, int ndim, int64_t r,
                         int64_t c);
mg_status ck_add_run(ck_tensor *t, int64_t out_row, int64_t nrows, size_t param,
                     int64_t src_row, int64_t col0, int64_t ncols);
void ck_sum_plan(ck_plan *p);
char *ck_dupstr(const char *s);
mg_status ck_plan_megatron(ck_plan *p, const ck_source *s, const ck_opts *o);
mg_status ck_plan_hf(ck_plan *p, const ck_source *s, const ck_opts *o);
/* torch_dist (td_save.c): files are the data files, tensors their chunks (one per layer of
 * a stacked key, one per other key); p->fmt is the .metadata to complete while writing. */
mg_status ck_plan_torch_dist(ck_plan *p, const ck_source *s, const ck_opts *o);
void ck_plan_free(ck_plan *p);
uint64_t ck_tensor_bytes(const ck_tensor *t);
/* Materialises t from s into buf (ck_tensor_bytes(t) bytes); scratch is grown as needed. */
mg_status ck_tensor_fill(const ck_source *s, const ck_tensor *t, void *buf, void **scratch,
                         size_t *scratch_cap);
/* Rows [r0, r1) of a tensor that is not transposed, into buf (row-major). */
mg_status ck_tensor_fill_rows(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t r1,
                              void *buf);
/* How many gathered rows of t from r0 on (at most max_rows) lie back to back in one mapped
 * input, in t's dtype, so that they can be written straight from the mapping: k >= 1 with
 * *p at row r0, or 0 (zero rows, a transposed tensor, another dtype, pieces of rows). */
int64_t ck_tensor_direct_rows(const ck_source *s, const ck_tensor *t, int64_t r0,
                              int64_t max_rows, const uint8_t **p);
/* Pieces one batch of rows written from the mappings may take (<= IOV_MAX). */
#define CK_IOV_MAX 1024
/* Gathered rows of t from r0 on (at most max_rows, whole rows of at most max_bytes in
 * all) as pieces of the mapped inputs, in order, adjacent pieces merged; zero rows are
 * pieces of a static zero buffer: the rows described (*niov pieces in iov, <= max_iov), or
 * 0 when row r0 cannot be (a transposed tensor, a strided layout, another dtype than t's,
 * more pieces than max_iov): then the caller gathers through a buffer. */
int64_t ck_tensor_iov(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t max_rows,
                      uint64_t max_bytes, struct iovec *iov, int max_iov, int *niov);
/* After the pieces of ck_tensor_iov were written: drops the pages of those of >= 1 MiB. */
void ck_iov_release(const struct iovec *iov, int n);
/* Lets the source drop the pages of every parameter t reads (s->release). */
void ck_tensor_release(const ck_source *s, const ck_tensor *t);
/* madvise(MADV_DONTNEED) of the whole pages inside [p, p + n) of a read-only mapping. */
void ck_release_pages(const void *p, size_t n);

/* Reading of one planned tensor in output byte order, straight into the caller's memory
 * (one row held for ranges that split rows; transposed tensors are held whole). */
typedef struct {
    const ck_source *s;
    const ck_tensor *t;
    uint8_t *buf;
    size_t cap;
    uint64_t b0, b1;    /* bytes of the tensor held in buf */
    void *scratch;
    size_t scratch_cap;
    int threads;        /* > 1: large row ranges are gathered by this many threads */
} ck_reader;

/* Copies bytes [off, off + len) of tensor t into out (t may change between calls). */
mg_status ck_reader_read(ck_reader *r, const ck_tensor *t, uint64_t off, void *out, size_t len);
void ck_reader_free(ck_reader *r);

/* ---- writing ---- */

/* Progress over all workers (NULL when --quiet): tensors and bytes written. */
typedef struct ck_progress ck_progress;
mg_status ck_progress_create(ck_progress **p, uint64_t total_bytes, int quiet);
void ck_progress_add(ck_progress *p, uint64_t tensors, uint64_t bytes);
void ck_progress_free(ck_progress *p);

/* Streaming of one file's planned tensors into a torch.save writer (stream.c). */
typedef struct {
    const ck_file *f;
    mg_pk_obj **pk;          /* per planned tensor of f: its pickled tensor (NULL for None) */
    size_t cur;              /* index of the tensor being written */
    ck_reader rd;
    ck_progress *prog;
    const ck_source *s;
    const ck_tensor *done_t; /* a tensor whose last byte the last direct piece was, or NULL:
                                released at the next call, once the writer has read it */
    struct iovec *iov;       /* CK_IOV_MAX pieces handed to the writer by gather */
    int niov;                /* of them, still to release at the next call */
} ck_stream;

/* Allocates c->pk (zeroed, f->n entries, for the caller to fill) and the piece list. */
mg_status ck_stream_init(ck_stream *c, const ck_file *f, const ck_source *s, ck_progress *prog,
                         int threads);
/* Save options whose callbacks read the planned tensors of c (archive_name as given). */
void ck_stream_opts(ck_stream *c, mg_torch_save_opts *so, const char *archive_name);
/* Releases what the last callback left and frees the stream (after init, even failed). */
void ck_stream_end(ck_stream *c);

/* What a saver's file workers share (ck_parallel's ctx). */
typedef struct {
    const ck_plan *pl;
    const ck_source *s;
    const char *root;
    ck_progress *prog;
    int threads;    /* per file (ck_threads_per_file) */
} ck_write_ctx;

/* Writes every file of p under root (in parallel); Megatron or HF by p's files. */
mg_status ck_write_megatron(const ck_plan *p, const ck_source *s, const char *root,
                            const ck_opts *o, ck_progress *prog);
mg_status ck_write_hf(const ck_plan *p, const ck_source *s, const char *root, const ck_opts *o,
                      ck_progress *prog);
mg_status ck_write_torch_dist(const ck_plan *p, const ck_source *s, const char *root,
                              const ck_opts *o, ck_progress *prog);
/* The args Namespace a Megatron saver writes for plan p (in g), its transformer_impl the
 * spec of the plan's names. */
mg_status ck_megatron_args(const ck_plan *p, const ck_source *s, mg_pk_graph *g,
                           mg_pk_obj **args);
/* The parameter tensors of output file f (not None, not moments: indices into f->t in
 * f's order, t malloc'd, to free) and their list for mg_megatron_param_order (mg_optim.c;
 * decay: 2-D). */
typedef struct {
    const ck_file *f;
    size_t *t;
    size_t n;
    mg_param_list list;
} ck_file_params;
mg_status ck_file_params_init(ck_file_params *x, const ck_file *f);
/* A torch param group's decay class (mg_optim.c): 1 when its wd_mult (else weight_decay)
 * is non-zero, 0 when zero, -1 when it has neither. */
int ck_group_decay(const mg_pk_obj *grp);
/* The state order of l's parameters under param_groups `groups` (torch numbers the
 * parameters group after group): each group's decay class in megatron-core's order; one
 * group per class, covering every parameter, else MG_ERR_UNSUPPORTED naming where. */
mg_status ck_groups_order(const mg_pk_obj *groups, const mg_param_list *l, size_t *order,
                          const char *where);
/* The optimizer state of Megatron output file f when s->moments (mg_optim.c): into *out
 * (g), *steps the step values it points at, to free() after the save (even on failure).
 * torch's state dict of the full moments; a mixed-precision source's nested in
 * Float16OptimizerWithFloat16Params'; a distributed-optimizer source's with
 * DistributedOptimizer.state_dict()'s 'optimizer' (param groups without 'params') beside it,
 * as mg-train writes it, so that both optimizer classes load the file. */
mg_status ck_megatron_optimizer(mg_pk_graph *g, const ck_source *s, const ck_file *f,
                                mg_pk_obj **pk, mg_pk_obj **out, float **steps);
/* megatron-core DistributedDataParallel's bucket size (elements, 0: one bucket) of pipeline
 * stage `stage` (numel elements) under a run's args (overlap_grad_reduce, ddp_bucket_size,
 * data_parallel_size; absent: no overlap), mg_ddp_bucket_size_of; MG_ERR_UNSUPPORTED naming
 * where when the layout depends on a data-parallel size the args lack (the default bucket
 * size with numel >= 40,000,000). */
mg_status ck_args_bucket_size(const mg_pk_obj *args, int64_t stage, int64_t numel,
                              const char *where, int64_t *out);
/* The distributed optimizer's distrib_optim.pt of Megatron output file f (s->dist_optim,
 * mg_distopt.c) at path: the fp32 masters (the file's fp32 parameters) and moments of f's
 * planned tensors in megatron-core's buffer layout of f's stage in the DDP buckets of the
 * output's args (ck_args_bucket_size: the source's overlap_grad_reduce, ddp_bucket_size and
 * data_parallel_size, which the output keeps). */
mg_status ck_megatron_distrib_optim(const ck_source *s, const ck_plan *pl, const ck_file *f,
                                    const mg_pk_obj *args, const char *path);
/* The tracker file under root ("release" or the iteration). */
mg_status ck_write_tracker(const char *root, const ck_opts *o);
/* mkdir -p of path's parent directories (path itself is a file). */
mg_status ck_mkdirs_for(const char *path);
/* Writes a small file atomically. */
mg_status ck_write_small(const char *path, const void *data, size_t len);
/* Runs fn(i) for i < n on o->workers threads; the first failure wins. */
mg_status ck_parallel(size_t n, int workers, mg_status (*fn)(void *ctx, size_t i), void *ctx);
/* Threads each of n files written at once may use for its own tensors: the workers
 * (0: CPUs) left over when there are fewer files than workers, shared out (>= 1). */
int ck_threads_per_file(size_t n, int workers);

/* Output directory: checks DST, makes DST/.tmp-XXXXXX (*tmp, malloc'd). */
mg_status ck_outdir_begin(const char *dst, char **tmp, int *created);
/* Moves the entries of tmp into dst (`last` moved last), removes tmp. */
mg_status ck_outdir_commit(const char *dst, const char *tmp, const char *last);
/* Removes tmp (recursively) and dst when created by us and empty. */
void ck_outdir_abort(const char *dst, const char *tmp, int created);

/* Re-reads the written checkpoint at dir and compares every parameter with s (in the
 * target dtype); prints a summary on stdout. MG_ERR_FORMAT on any difference. */
mg_status ck_verify(const ck_source *s, const ck_plan *p, const char *dir, int loader,
                    const ck_opts *o);
/* --inspect: prints the report; returns 1 if problems were found, 0 if none. */
int ck_inspect(const char *dir, const ck_opts *o);

#endif /* CKPT_H */
