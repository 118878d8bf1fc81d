/* probe_model.h — the set-up shared by the model test programs (model_probe, step_probe).
 *
 * Their command line: PROG ref|fast erf|tanh|default WEIGHTS|init PATH OUTDIR FLAGS...
 * probe_setup() parses the Megatron FLAGS with mg-train's option parser, makes the kernel
 * context (reference or fast backend) and the model of the full layout with the GeLU form
 * asked for ("default": mg_gpt_default_gelu, Megatron's choice), initialised (`init`:
 * Megatron's initialisation from --seed/--init-method-std) or loaded from HF-named
 * safetensors. Any failure prints "PROG: error: what: message" and exits 2.
 * Header-only: each program includes it once; PROBE_NAME names the program in messages.
 */
#ifndef MG_PROBE_MODEL_H
#define MG_PROBE_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/model.h"
#include "train/options.h"

__attribute__((noreturn)) static void die(const char *what)
{
    fprintf(stderr, "%s: error: %s: %s\n", PROBE_NAME, what, mg_last_error());
    exit(2);
}

static void ok(mg_status st, const char *what)
{
    if (st != MG_OK) die(what);
}

static mgk_gelu_kind gelu_of(const char *s, const mg_model_desc *m)
{
    if (strcmp(s, "erf") == 0) return MGK_GELU_ERF;
    if (strcmp(s, "tanh") == 0) return MGK_GELU_TANH;
    return mg_gpt_default_gelu(m);
}

/* argv[1..5] as above, argv[6..] the flags (argv[5] is overwritten: the parser's argv[0]). */
static mg_gpt *probe_setup(int argc, char **argv, mg_train_opts *o, mg_kctx *k)
{
    const char *backend = argv[1], *gelu = argv[2], *weights = argv[3];
    argv[5] = argv[0];
    ok(mg_train_parse(o, argc - 5, argv + 5), "flags");
    ok(mg_train_resolve_vocab(o), "vocabulary");
    ok(mgk_ctx_init(k, strcmp(backend, "fast") == 0 ? MGK_CPU_FAST : MGK_CPU_REF, 0), "kernels");
    mg_gpt_layout lay = mg_gpt_layout_full(&o->model);
    mg_gpt_opts mo = {gelu_of(gelu, &o->model), o->init_method_std, (uint64_t)o->seed,
                      o->mask_vocab_padding, 0};
    mg_gpt *g = NULL;
    ok(mg_gpt_create(&g, &o->model, &lay, &mo), "model");
    if (strcmp(weights, "init") == 0) mg_gpt_init_params(g);
    else ok(mg_gpt_load_hf(g, weights), "weights");
    return g;
}

#endif
