/* param_order.c — param_order.h: the names of a naming and megatron-core's parameter order. */
#include "param_order.h"

#include <stdio.h>
#include <string.h>

#define QKV ".self_attention.linear_qkv."
#define PROJ ".self_attention.linear_proj."

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

/* 1 if a and b are tensors of the same layer's self_attention. */
static int same_attention(const char *a, const char *b)
{
    const char *ea = strstr(a, ".self_attention."), *eb = strstr(b, ".self_attention.");
    return ea && eb && ea - a == eb - b && !strncmp(a, b, (size_t)(ea - a));
}

static int wanted(const mg_gpt_tensor *t, int decay) { return decay < 0 || t->decay == decay; }

size_t mg_gpt_param_order(const mg_gpt *g, const mg_tname *names, int decay, size_t *order,
                          size_t n)
{
    for (size_t i = 0; i < g->nt; i++) {
        const char *name = names[i];
        if (strstr(name, PROJ)) continue;
        const char *prev = i > 0 ? names[i - 1] : "";
        int first_qkv = strstr(name, QKV) && !(strstr(prev, QKV) && same_attention(prev, name));
        for (size_t j = i + 1; first_qkv && j < g->nt && same_attention(names[j], name); j++)
            if (strstr(names[j], PROJ) && wanted(&g->t[j], decay)) order[n++] = j;
        if (wanted(&g->t[i], decay)) order[n++] = i;
    }
    return n;
}
