/* param_order.c — param_order.h: megatron-core's TE-spec parameter order. */
#include "param_order.h"

#include <string.h>

#define QKV ".self_attention.linear_qkv."
#define PROJ ".self_attention.linear_proj."

/* 1 if a and b are tensors of the same layer's self_attention. */
static int same_attention(const char *a, const char *b)
{
    const char *ea = strstr(a, ".self_attention."), *eb = strstr(b, ".self_attention.");
    return ea && eb && ea - a == eb - b && !strncmp(a, b, (size_t)(ea - a));
}

static int wanted(const mg_gpt_tensor *t, int decay) { return decay < 0 || t->decay == decay; }

size_t mg_gpt_param_order(const mg_gpt *g, int decay, size_t *order, size_t n)
{
    for (size_t i = 0; i < g->nt; i++) {
        const char *name = g->t[i].name;
        if (strstr(name, PROJ)) continue;
        const char *prev = i > 0 ? g->t[i - 1].name : "";
        int first_qkv = strstr(name, QKV) && !(strstr(prev, QKV) && same_attention(prev, name));
        for (size_t j = i + 1; first_qkv && j < g->nt && same_attention(g->t[j].name, name); j++)
            if (strstr(g->t[j].name, PROJ) && wanted(&g->t[j], decay)) order[n++] = j;
        if (wanted(&g->t[i], decay)) order[n++] = i;
    }
    return n;
}
