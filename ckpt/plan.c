/* plan.c — output plans: the target model, and for every Megatron output file its tensors
 * as runs of canonical rows (per (TP, PP) rank by the split rules), plus materialising one
 * planned tensor from a source (into a buffer, or as pieces of the mapped inputs that a
 * writer hands to pwritev). The HF plan is in plan_hf.c.
 *
 * Contract (ckpt.h; docs/FORMATS.md §5.4-5.8): vocabulary rows past the true vocabulary are
 * on Megatron output what ck_vocab_row says (a Megatron source's padding rows, kept,
 * truncated or grown by copies of its last row; zeros from HF) and absent on HF output; a
 * tied output layer is written as a copy of the embedding shards on the last stage when
 * PP > 1 and not at all on HF output. Names follow ck_target_names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/grow.h"

char *ck_dupstr(const char *s)
{
    char *d = mg_malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

ck_tensor *ck_add_tensor(ck_file *f, const char *name, mg_tdtype dt, int ndim, int64_t r,
                             int64_t c)
{
    if (MG_GROW(f->t, f->cap, f->n + 1, 64) != MG_OK) return NULL;
    ck_tensor *t = &f->t[f->n];
    memset(t, 0, sizeof(*t));
    if (!(t->name = ck_dupstr(name))) return NULL;
    f->n++;
    t->dtype = dt;
    t->ndim = ndim;
    t->grows = r;
    t->gcols = c;
    t->shape[0] = r;
    t->shape[1] = c;
    return t;
}

mg_status ck_add_run(ck_tensor *t, int64_t out_row, int64_t nrows, size_t param,
                         int64_t src_row, int64_t col0, int64_t ncols)
{
    if (nrows <= 0) return MG_OK;
    MG_FORWARD(MG_GROW(t->runs, t->cap, t->nruns + 1, 4));
    t->runs[t->nruns++] = (ck_run){out_row, nrows, param, src_row, col0, ncols};
    return MG_OK;
}

uint64_t ck_tensor_bytes(const ck_tensor *t)
{
    return t->none ? 0 : (uint64_t)(t->grows * t->gcols) * mg_tdtype_size(t->dtype);
}

void ck_plan_free(ck_plan *p)
{
    for (size_t f = 0; f < p->nfiles; f++) {
        for (size_t i = 0; i < p->files[f].n; i++) {
            free(p->files[f].t[i].name);
            free(p->files[f].t[i].runs);
        }
        free(p->files[f].t);
        free(p->files[f].path);
    }
    free(p->files);
    if (p->fmt_free) p->fmt_free(p->fmt);
    mg_model_free(&p->m);
    memset(p, 0, sizeof(*p));
}

mg_status ck_plan_target(mg_model_desc *t, const ck_source *s, const ck_opts *o)
{
    MG_FORWARD(mg_model_copy(t, &s->m));
    t->tp = o->tp;
    t->pp = o->pp;
    t->pp_first = o->pp_first;
    t->pp_last = o->pp_last;
    if (o->dtype != MG_TD_INVALID) t->dtype = o->dtype;
    MG_RETURN_IF(s->masters && t->dtype != s->m.dtype, MG_ERR_UNSUPPORTED,
                 "not supported yet: --target-dtype %s with the optimizer state of a %s run "
                 "(its fp32 masters beside %s weights); pass --drop-optimizer-state to drop it",
                 mg_tdtype_name(t->dtype), mg_tdtype_name(s->m.dtype),
                 mg_tdtype_name(s->m.dtype));
    MG_RETURN_IF(s->moments && s->dist_optim && t->dtype != MG_TD_F32, MG_ERR_UNSUPPORTED,
                 "not supported yet: --target-dtype %s with the distributed optimizer's state "
                 "(distrib_optim.pt would need fp32 masters beside %s weights); pass "
                 "--drop-optimizer-state to drop it", mg_tdtype_name(t->dtype),
                 mg_tdtype_name(t->dtype));
    /* the source's unit unless given (Megatron's saver passes md.make_vocab_size_divisible_by
     * on); HF sources and args without it: 128 (mg_model_init / mg_model_from_args) */
    if (o->divisible_by > 0) t->make_vocab_size_divisible_by = o->divisible_by;
    t->padded_vocab_size = mg_model_padded_vocab(t, t->tp);
    MG_FORWARD(mg_schema_check_tp(t, t->tp));
    for (int64_t p = 0; p < t->pp; p++) {
        int64_t off, cnt;
        MG_FORWARD(mg_schema_pp_layers(t->num_layers, t->pp, t->pp_first, t->pp_last, p, &off,
                                       &cnt));
    }
    return MG_OK;
}

/* Rows [g0, g0 + n) of padded vocabulary tensor pi: the source's rows, then ck_vocab_row's
 * copies of its last row (one run each) or zeros. */
static mg_status vocab_runs(ck_tensor *t, const ck_source *s, size_t pi, int64_t g0, int64_t n,
                            int64_t cols)
{
    int64_t k = 0;
    while (k < n && ck_vocab_row(s, g0 + k) == g0 + k) k++;
    MG_FORWARD(ck_add_run(t, 0, k, pi, g0, 0, cols));
    if (k < n && ck_vocab_row(s, g0 + k) < 0) return ck_add_run(t, k, n - k, CK_ZERO, 0, 0, cols);
    for (; k < n; k++) MG_FORWARD(ck_add_run(t, k, 1, pi, ck_vocab_row(s, g0 + k), 0, cols));
    return MG_OK;
}

/* Runs of parameter pi's shard for TP rank r of T (padded vocabulary vp). */
static mg_status shard_runs(ck_tensor *t, const ck_source *s, size_t pi, int64_t r, int64_t T,
                            int64_t vp)
{
    const mg_param *p = &s->params[pi];
    int64_t R = p->rows / T, C = p->cols / T, F = p->rows / 2, Fl = F / T;
    switch (p->spec->split) {
    case MG_SPLIT_REPLICATED: return ck_add_run(t, 0, p->rows, pi, 0, 0, p->cols);
    case MG_SPLIT_COLUMN:
    case MG_SPLIT_QKV: return ck_add_run(t, 0, R, pi, r * R, 0, p->cols);
    case MG_SPLIT_SWIGLU:
        MG_FORWARD(ck_add_run(t, 0, Fl, pi, r * Fl, 0, p->cols));
        return ck_add_run(t, Fl, Fl, pi, F + r * Fl, 0, p->cols);
    case MG_SPLIT_ROW: return ck_add_run(t, 0, p->rows, pi, 0, r * C, C);
    case MG_SPLIT_VOCAB: return vocab_runs(t, s, pi, r * (vp / T), vp / T, p->cols);
    }
    return MG_OK;
}

static mg_status plan_param(ck_file *f, const ck_plan *pl, const ck_source *s, size_t pi,
                            const char *name)
{
    const mg_param *p = &s->params[pi];
    int64_t shape[2];
    int nd;
    mg_schema_shard_shape(p, &pl->m, pl->m.tp, pl->m.padded_vocab_size, shape, &nd);
    ck_tensor *t = ck_add_tensor(f, name, pl->m.dtype, nd, shape[0], shape[1]);
    if (!t) return MG_ERR_NOMEM;
    return shard_runs(t, s, pi, f->tp_rank, pl->m.tp, pl->m.padded_vocab_size);
}

/* The Adam moments of parameter tensor j of f (and with s->masters its fp32 master): its
 * runs over the source's moments, in float32 (Megatron's optimizer state), appended to f. */
static mg_status plan_moments(ck_file *f, const ck_source *s, size_t j)
{
    static const char *const what[] = {"exp_avg", "exp_avg_sq", "fp32 master"};
    for (int k = 1; k <= (s->masters ? 3 : 2); k++) {
        char name[600];
        snprintf(name, sizeof name, "%s of %s", what[k - 1], f->t[j].name);
        ck_tensor *m = ck_add_tensor(f, name, MG_TD_F32, f->t[j].ndim, f->t[j].grows,
                                     f->t[j].gcols);
        if (!m) return MG_ERR_NOMEM;
        const ck_tensor *p = &f->t[j]; /* after the append: f->t may have moved */
        m->moment = k;
        m->of = j;
        for (size_t i = 0; i < p->nruns; i++) {
            ck_run r = p->runs[i];
            MG_FORWARD(ck_add_run(m, r.out_row, r.nrows,
                                  r.param == CK_ZERO ? CK_ZERO : CK_MOMENT(s, r.param, k),
                                  r.src_row, r.col0, r.ncols));
        }
    }
    return MG_OK;
}

static mg_status plan_stage_file(ck_plan *pl, ck_file *f, const ck_source *s)
{
    int64_t off, cnt, stage = f->pp_rank;
    int last = stage == pl->m.pp - 1;
    mg_names names = pl->names;
    MG_FORWARD(mg_schema_pp_layers(pl->m.num_layers, pl->m.pp, pl->m.pp_first, pl->m.pp_last,
                                   stage, &off, &cnt));
    char name[512];
    for (size_t i = 0; i < s->nparams; i++) {
        const mg_param *p = &s->params[i];
        mg_stage st = p->spec->stage;
        if ((st == MG_STAGE_FIRST && stage != 0) || (st == MG_STAGE_LAST && !last) ||
            (st == MG_STAGE_LAYER && (p->layer < off || p->layer >= off + cnt)))
            continue;
        mg_schema_mcore_name(p, names, p->layer - off, name, sizeof name);
        MG_FORWARD(plan_param(f, pl, s, i, name));
    }
    if (last && pl->m.pp > 1 && pl->m.tied_embeddings) /* the embedding copy (§2.4.6) */
        MG_FORWARD(plan_param(f, pl, s, 0, "output_layer.weight"));
    for (size_t j = 0, n = f->n; s->moments && j < n; j++) MG_FORWARD(plan_moments(f, s, j));
    for (size_t i = 0; mg_schema_extra_state(&pl->m, names, cnt, last, i, name, sizeof name); i++) {
        ck_tensor *t = ck_add_tensor(f, name, pl->m.dtype, 0, 0, 0);
        if (!t) return MG_ERR_NOMEM;
        t->none = 1;
    }
    return MG_OK;
}

void ck_sum_plan(ck_plan *pl)
{
    for (size_t f = 0; f < pl->nfiles; f++) {
        pl->files[f].bytes = 0;
        for (size_t i = 0; i < pl->files[f].n; i++) {
            pl->files[f].bytes += ck_tensor_bytes(&pl->files[f].t[i]);
            pl->ntensors += !pl->files[f].t[i].none;
        }
        pl->bytes += pl->files[f].bytes;
    }
}

mg_status ck_plan_megatron(ck_plan *pl, const ck_source *s, const ck_opts *o)
{
    memset(pl, 0, sizeof(*pl));
    MG_FORWARD(ck_plan_target(&pl->m, s, o));
    pl->names = ck_target_names(s, o);
    pl->dp = o->dp;
    mg_megatron_iter it = ck_iteration(o);
    mg_megatron_iter_name(&it, pl->iterdir);
    pl->nfiles = (size_t)(pl->m.tp * pl->m.pp);
    pl->files = mg_calloc(pl->nfiles, sizeof(ck_file));
    if (!pl->files) return MG_ERR_NOMEM;
    for (int64_t p = 0; p < pl->m.pp; p++)
        for (int64_t r = 0; r < pl->m.tp; r++) {
            ck_file *f = &pl->files[p * pl->m.tp + r];
            char path[256];
            MG_FORWARD(mg_megatron_rank_file(&it, r, p, pl->m.pp > 1, path, sizeof path));
            if (!(f->path = ck_dupstr(path))) return MG_ERR_NOMEM;
            f->tp_rank = r;
            f->pp_rank = p;
            MG_FORWARD(plan_stage_file(pl, f, s));
        }
    ck_sum_plan(pl);
    return MG_OK;
}

/* ---- materialising ---- */

static void transpose(uint8_t *dst, const uint8_t *src, int64_t rows, int64_t cols, size_t es)
{
    const int64_t B = 32;
    for (int64_t i0 = 0; i0 < rows; i0 += B)
        for (int64_t j0 = 0; j0 < cols; j0 += B)
            for (int64_t i = i0; i < i0 + B && i < rows; i++)
                for (int64_t j = j0; j < j0 + B && j < cols; j++)
                    memcpy(dst + (size_t)(j * rows + i) * es, src + (size_t)(i * cols + j) * es, es);
}

/* Gathered rows [r0, r1) into dst (dst holds row r0 first). */
static mg_status gather_rows(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t r1,
                             uint8_t *dst)
{
    size_t es = mg_tdtype_size(t->dtype);
    for (size_t i = 0; i < t->nruns; i++) {
        const ck_run *r = &t->runs[i];
        int64_t a = r->out_row > r0 ? r->out_row : r0;
        int64_t b = r->out_row + r->nrows < r1 ? r->out_row + r->nrows : r1;
        if (a >= b) continue;
        uint8_t *out = dst + (size_t)((a - r0) * t->gcols) * es;
        if (r->param == CK_ZERO) memset(out, 0, (size_t)((b - a) * t->gcols) * es);
        else MG_FORWARD(ck_read_rows(s, r->param, r->src_row + (a - r->out_row), b - a, r->col0,
                                     r->ncols, out, t->dtype));
    }
    return MG_OK;
}

static mg_status gather(const ck_source *s, const ck_tensor *t, uint8_t *dst)
{
    return gather_rows(s, t, 0, t->grows, dst);
}

mg_status ck_tensor_fill_rows(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t r1,
                              void *buf)
{
    MG_ASSERT(!t->transpose && !t->none);
    return gather_rows(s, t, r0, r1, buf);
}

/* The run of t holding gathered row r, or NULL. */
static const ck_run *run_of(const ck_tensor *t, int64_t r)
{
    for (size_t i = 0; i < t->nruns; i++)
        if (r >= t->runs[i].out_row && r < t->runs[i].out_row + t->runs[i].nrows) return &t->runs[i];
    return NULL;
}

int64_t ck_tensor_direct_rows(const ck_source *s, const ck_tensor *t, int64_t r0,
                              int64_t max_rows, const uint8_t **p)
{
    const ck_run *run = run_of(t, r0);
    if (t->transpose || t->none || !run || run->param == CK_ZERO || run->ncols != t->gcols)
        return 0;
    size_t rowb = (size_t)t->gcols * mg_tdtype_size(t->dtype);
    int64_t end = run->out_row + run->nrows - r0, k = 0;
    if (end > max_rows) end = max_rows;
    for (; k < end; k++) {
        ck_loc loc;
        s->locate(s, run->param, run->src_row + (r0 - run->out_row) + k, run->col0, &loc);
        if (loc.dtype != t->dtype || loc.step != (int64_t)mg_tdtype_size(t->dtype) ||
            loc.avail < run->ncols || (k > 0 && loc.p != *p + (size_t)k * rowb))
            break;
        if (k == 0) *p = loc.p;
    }
    return k;
}

/* ---- rows as pieces of the mapped inputs ---- */

static const uint8_t zero_rows[64 << 10];

typedef struct {
    struct iovec *v;
    int n, max;
} iov_list;

/* Appends [p, p + len) to l, merged into the last piece when adjacent; 0 when l is full. */
static int iov_add(iov_list *l, const uint8_t *p, size_t len)
{
    struct iovec *last = l->n > 0 ? &l->v[l->n - 1] : NULL;
    if (last && p != zero_rows && (const uint8_t *)last->iov_base + last->iov_len == p) {
        last->iov_len += len;
        return 1;
    }
    if (l->n == l->max) return 0;
    l->v[l->n++] = (struct iovec){(void *)(uintptr_t)p, len};
    return 1;
}

/* Gathered row r of t (in run) appended to l; 0 when it cannot be (l is then partial). */
static int row_iov(const ck_source *s, const ck_tensor *t, const ck_run *run, int64_t r,
                   iov_list *l)
{
    size_t es = mg_tdtype_size(t->dtype);
    if (run->param == CK_ZERO) {
        for (size_t left = (size_t)t->gcols * es, k; left > 0; left -= k) {
            k = left < sizeof zero_rows ? left : sizeof zero_rows;
            if (!iov_add(l, zero_rows, k)) return 0;
        }
        return 1;
    }
    int64_t row = run->src_row + (r - run->out_row), end = run->col0 + run->ncols;
    for (int64_t c = run->col0; c < end;) {
        ck_loc loc;
        s->locate(s, run->param, row, c, &loc);
        if (loc.dtype != t->dtype || loc.step != (int64_t)es) return 0;
        int64_t n = end - c < loc.avail ? end - c : loc.avail;
        if (!iov_add(l, loc.p, (size_t)n * es)) return 0;
        c += n;
    }
    return 1;
}

int64_t ck_tensor_iov(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t max_rows,
                      uint64_t max_bytes, struct iovec *iov, int max_iov, int *niov)
{
    uint64_t rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
    iov_list l = {iov, 0, max_iov};
    const ck_run *run = NULL;
    int64_t k = 0;
    *niov = 0;
    if (t->transpose || t->none) return 0;
    for (; k < max_rows && (uint64_t)(k + 1) * rowb <= max_bytes; k++) {
        if (!run || r0 + k >= run->out_row + run->nrows) run = run_of(t, r0 + k);
        int n0 = l.n;
        struct iovec last = n0 > 0 ? iov[n0 - 1] : (struct iovec){0};
        if (!run || run->ncols != t->gcols || !row_iov(s, t, run, r0 + k, &l)) {
            l.n = n0; /* row r0 + k is not taken: undo its pieces */
            if (n0 > 0) iov[n0 - 1] = last;
            break;
        }
    }
    *niov = l.n;
    return k;
}

void ck_iov_release(const struct iovec *iov, int n)
{
    for (int i = 0; i < n; i++)
        if (iov[i].iov_len >= ((size_t)1 << 20) && iov[i].iov_base != (void *)(uintptr_t)zero_rows)
            ck_release_pages(iov[i].iov_base, iov[i].iov_len);
}

void ck_tensor_release(const ck_source *s, const ck_tensor *t)
{
    if (!s->release) return;
    for (size_t i = 0; i < t->nruns; i++)
        if (t->runs[i].param != CK_ZERO && (i == 0 || t->runs[i].param != t->runs[i - 1].param))
            s->release(s, t->runs[i].param);
}

mg_status ck_tensor_fill(const ck_source *s, const ck_tensor *t, void *buf, void **scratch,
                         size_t *scratch_cap)
{
    if (t->none) return MG_OK;
    if (!t->transpose) return gather(s, t, buf);
    size_t n = (size_t)ck_tensor_bytes(t);
    if (n > *scratch_cap) {
        void *p = mg_realloc(*scratch, n);
        if (!p) return MG_ERR_NOMEM;
        *scratch = p;
        *scratch_cap = n;
    }
    MG_FORWARD(gather(s, t, *scratch));
    transpose(buf, *scratch, t->grows, t->gcols, mg_tdtype_size(t->dtype));
    return MG_OK;
}
