/* param_order.c — param_order.h: the names of a naming and megatron-core's parameter order
 * (mg/megatron_param_order.h over g's tensors). */
#include "param_order.h"

#include <stdio.h>

#include "mg/megatron_param_order.h"

mg_tname *mg_gpt_names(const mg_gpt *g, mg_names nm)
{
    mg_tname *names = mg_calloc(g->nt ? g->nt : 1, sizeof *names);
    for (size_t i = 0; names && i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        int64_t local = t->param.layer >= 0 ? t->param.layer - g->lay.layer_first : 0;
        if (t->tied_copy) /* the word embeddings' schema entry under its own name */
            snprintf(names[i], sizeof names[i], "%s", t->name);
        else mg_schema_mcore_name(&t->param, nm, local, names[i], sizeof names[i]);
    }
    return names;
}

typedef struct {
    const mg_gpt *g;
    const mg_tname *names;
} gpt_list;

static const char *gpt_name(const void *ctx, size_t i)
{
    return ((const gpt_list *)ctx)->names[i];
}

static int gpt_decay(const void *ctx, size_t i)
{
    return ((const gpt_list *)ctx)->g->t[i].decay;
}

size_t mg_gpt_param_order(const mg_gpt *g, const mg_tname *names, int decay, size_t *order,
                          size_t n)
{
    gpt_list x = {g, names};
    mg_param_list l = {gpt_name, gpt_decay, &x, g->nt};
    return mg_megatron_param_order(&l, decay, order, n);
}
