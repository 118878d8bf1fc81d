/* mg/tensor.h — tensor element types shared by the checkpoint modules (safetensors,
 * torch.save files, dtype conversion).
 *
 * Contract:
 *   - mg_tdtype names an element type; the numeric values are pinned (they may be stored
 *     and compared) and MG_TD_COUNT is one past the last valid value.
 *   - mg_tdtype_size(): bytes per element (0 for an invalid value). All types here are whole
 *     bytes; sub-byte safetensors types (F4, F6_*) are not represented.
 *   - mg_tdtype_name(): the safetensors dtype string ("F32", "BF16", "F8_E4M3", ...),
 *     "invalid" for an invalid value. mg_tdtype_from_name() is its exact inverse
 *     (case-sensitive) and returns MG_TD_INVALID for any other string.
 *   - Data is always little-endian, C order (both file formats store it that way).
 *   - Pure functions over const tables: thread-safe, never fail, never set an error.
 */
#ifndef MG_TENSOR_H
#define MG_TENSOR_H

#include <stddef.h>

typedef enum {
    MG_TD_INVALID = -1,
    MG_TD_F32 = 0,
    MG_TD_F16 = 1,
    MG_TD_BF16 = 2,
    MG_TD_F64 = 3,
    MG_TD_I64 = 4,
    MG_TD_I32 = 5,
    MG_TD_I16 = 6,
    MG_TD_I8 = 7,
    MG_TD_U8 = 8,
    MG_TD_BOOL = 9,
    MG_TD_F8_E4M3 = 10, /* torch.float8_e4m3fn */
    MG_TD_F8_E5M2 = 11, /* torch.float8_e5m2 */
    MG_TD_U16 = 12,
    MG_TD_U32 = 13,
    MG_TD_U64 = 14,
    MG_TD_COUNT = 15,
} mg_tdtype;

/* Bytes per element; 0 for MG_TD_INVALID or any value outside [0, MG_TD_COUNT). */
size_t mg_tdtype_size(mg_tdtype t);
/* safetensors dtype string ("BF16"); "invalid" for an invalid value. Never NULL. */
const char *mg_tdtype_name(mg_tdtype t);
/* Inverse of mg_tdtype_name for a NUL-terminated string; MG_TD_INVALID if unknown. */
mg_tdtype mg_tdtype_from_name(const char *name);

#endif /* MG_TENSOR_H */
