/* tensor.c — element type tables for mg/tensor.h (sizes and safetensors names). */
#include "mg/tensor.h"

#include <string.h>

typedef struct {
    const char *name;
    size_t size;
} td_info;

/* Indexed by mg_tdtype. */
static const td_info td_table[MG_TD_COUNT] = {
    [MG_TD_F32] = {"F32", 4},         [MG_TD_F16] = {"F16", 2},
    [MG_TD_BF16] = {"BF16", 2},       [MG_TD_F64] = {"F64", 8},
    [MG_TD_I64] = {"I64", 8},         [MG_TD_I32] = {"I32", 4},
    [MG_TD_I16] = {"I16", 2},         [MG_TD_I8] = {"I8", 1},
    [MG_TD_U8] = {"U8", 1},           [MG_TD_BOOL] = {"BOOL", 1},
    [MG_TD_F8_E4M3] = {"F8_E4M3", 1}, [MG_TD_F8_E5M2] = {"F8_E5M2", 1},
    [MG_TD_U16] = {"U16", 2},         [MG_TD_U32] = {"U32", 4},
    [MG_TD_U64] = {"U64", 8},
};

static int td_valid(mg_tdtype t) { return (int)t >= 0 && (int)t < MG_TD_COUNT; }

size_t mg_tdtype_size(mg_tdtype t) { return td_valid(t) ? td_table[t].size : 0; }

const char *mg_tdtype_name(mg_tdtype t) { return td_valid(t) ? td_table[t].name : "invalid"; }

mg_tdtype mg_tdtype_from_name(const char *name)
{
    for (int i = 0; name && i < MG_TD_COUNT; i++)
        if (strcmp(td_table[i].name, name) == 0) return (mg_tdtype)i;
    return MG_TD_INVALID;
}
