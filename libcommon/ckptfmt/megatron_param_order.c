/* megatron_param_order.c — mg/megatron_param_order.h: megatron-core's parameter order. */
#include "mg/megatron_param_order.h"

#include <string.h>

#define QKV ".self_attention.linear_qkv."
#define PROJ ".self_attention.linear_proj."

/* 1 if a and b are tensors of the same layer's self_attention. */
static int same_attention(const char *a, const char *b)
{
    const char *ea = strstr(a, ".self_attention."), *eb = strstr(b, ".self_attention.");
    return ea && eb && ea - a == eb - b && !strncmp(a, b, (size_t)(ea - a));
}

static int wanted(const mg_param_list *l, size_t i, int decay)
{
    return decay < 0 || l->decay_of(l->ctx, i) == decay;
}

size_t mg_megatron_param_order(const mg_param_list *l, int decay, size_t *order, size_t k)
{
    for (size_t i = 0; i < l->n; i++) {
        const char *name = l->name_of(l->ctx, i);
        if (strstr(name, PROJ)) continue;
        const char *prev = i > 0 ? l->name_of(l->ctx, i - 1) : "";
        int first_qkv = strstr(name, QKV) && !(strstr(prev, QKV) && same_attention(prev, name));
        for (size_t j = i + 1; first_qkv && j < l->n && same_attention(l->name_of(l->ctx, j), name);
             j++)
            if (strstr(l->name_of(l->ctx, j), PROJ) && wanted(l, j, decay)) order[k++] = j;
        if (wanted(l, i, decay)) order[k++] = i;
    }
    return k;
}
