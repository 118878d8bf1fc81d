/* main.c — mg-convert: Hugging Face <-> Megatron checkpoint conversion and Megatron
 * resharding (streaming, parallel, atomic output, optional verification), and --inspect.
 * Exit status: 0 done, 1 runtime failure, 2 usage error or unsupported feature.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ckpt.h"
#include "mg/cli.h"

/* With --quiet only the notable entries (ckpt.h, ck_source_drop_notable). */
static void report_dropped(const ck_source *s, int quiet)
{
    for (size_t i = 0; i < s->ndropped; i++)
        if (!quiet || s->drop_notable[i])
            mg_note("not converted (intentionally): %s", s->dropped[i]);
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static mg_status plan(ck_plan *pl, const ck_source *s, const ck_opts *o)
{
    if (o->saver == CK_HF) return ck_plan_hf(pl, s, o);
    return o->torch_dist ? ck_plan_torch_dist(pl, s, o) : ck_plan_megatron(pl, s, o);
}

static mg_status write_all(const ck_plan *pl, const ck_source *s, const char *tmp,
                           const ck_opts *o)
{
    ck_progress *prog = NULL;
    MG_FORWARD(ck_progress_create(&prog, pl->bytes, o->quiet));
    mg_status st = o->saver == CK_HF  ? ck_write_hf(pl, s, tmp, o, prog)
                   : o->torch_dist    ? ck_write_torch_dist(pl, s, tmp, o, prog)
                                      : ck_write_megatron(pl, s, tmp, o, prog);
    ck_progress_free(prog);
    if (st == MG_OK && o->verify) st = ck_verify(s, pl, tmp, o->saver, o);
    return st;
}

/* With the Adam moments kept the output is a training checkpoint of the source's
 * iteration (a release folder is loaded without optimizer state), unless --iteration. */
static ck_opts effective(const ck_opts *given, const ck_source *s)
{
    ck_opts o = *given;
    if (s && s->moments && o.iteration < 0) o.iteration = s->iteration;
    return o;
}

static int convert(const ck_opts *given)
{
    ck_source *s = NULL;
    ck_plan pl = {0};
    char *tmp = NULL;
    int created = 0;
    double t0 = mg_now();
    mg_status st = ck_source_open(&s, given->load_dir, given, given->loader);
    const ck_opts eff = effective(given, s), *o = &eff;
    if (st == MG_OK) st = plan(&pl, s, o);
    if (st == MG_OK) st = ck_outdir_begin(o->save_dir, &tmp, &created);
    if (st == MG_OK) st = write_all(&pl, s, tmp, o);
    if (st == MG_OK)
        st = ck_outdir_commit(o->save_dir, tmp,
                              o->saver == CK_HF ? "config.json" : MG_MEGATRON_TRACKER);
    if (st != MG_OK) {
        ck_outdir_abort(o->save_dir, tmp, created);
        free(tmp);
        ck_plan_free(&pl);
        ck_source_free(s);
        mg_die_status(st);
    }
    report_dropped(s, o->quiet);
    if (!o->quiet)
        mg_note("wrote %zu %s in %zu %s, %.1f MB, in %.2f s", pl.ntensors,
                plural(pl.ntensors, "tensor", "tensors"), pl.nfiles, plural(pl.nfiles, "file", "files"),
                (double)pl.bytes / 1048576.0, mg_now() - t0);
    free(tmp);
    ck_plan_free(&pl);
    ck_source_free(s);
    return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
    mg_cli_init("mg-convert");
    ck_opts o;
    ck_parse_options(&o, argc, argv);
    if (o.help) {
        ck_print_help();
        return MG_EXIT_OK;
    }
    if (o.version) {
        mg_cli_print_version();
        return MG_EXIT_OK;
    }
    if (o.tokenizer_dir && o.saver != CK_HF && !o.inspect_dir)
        mg_warn("--tokenizer-dir is only used with --saver hf; ignored");
    if (o.inspect_dir) return ck_inspect(o.inspect_dir, &o) ? MG_EXIT_FAILURE : MG_EXIT_OK;
    return convert(&o);
}
