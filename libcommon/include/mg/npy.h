/* mg/npy.h — numpy .npy files (format version 1.0 as numpy.save writes them; 1.0, 2.0 and
 * 3.0 read), for the index caches Megatron keeps under --data-cache-path.
 *
 * Contract:
 *   - Arrays are 1-D or 2-D, C order, of the integer dtypes Megatron's caches use: int16,
 *     int32, int64, uint32, little-endian ('<i2' '<i4' '<i8' '<u4').
 *   - mg_npy_write() writes the bytes numpy.save (numpy 1.14 .. 2.x) writes for such an
 *     array: "\x93NUMPY\x01\x00", the uint16 header length, the dict text
 *     "{'descr': '<i4', 'fortran_order': False, 'shape': (N,), }" plus numpy's growth padding
 *     (21 - digits of shape[0] spaces), then spaces and "\n" up to a multiple of 64 bytes, then
 *     the data. It converts from the caller's element type on the fly (a value the file's
 *     dtype cannot hold is MG_ERR_LIMIT) and writes atomically (temporary file + fsync +
 *     rename, mg/file.h): no half-written file is ever left under the final name.
 *   - mg_npy_parse() validates a whole file image: magic, version, header length, the dict
 *     (exactly the keys descr, fortran_order, shape, in any order, Python literal syntax as
 *     numpy.load accepts it), dtype, dimensions, and that the data is exactly
 *     prod(shape) x itemsize bytes (a truncated or over-long file is refused). Every
 *     failure is MG_ERR_FORMAT (MG_ERR_UNSUPPORTED for a valid .npy of another dtype, a
 *     big-endian dtype, Fortran order in 2-D, or another number of dimensions) with a
 *     message that starts with the name given. The result points into the image (no copy).
 *   - mg_npy_open() maps a file read-only and parses it; mg_npy_close() unmaps (accepts a
 *     zeroed struct).
 *   - Little-endian hosts only (asserted).
 */
#ifndef MG_NPY_H
#define MG_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/file.h"

typedef enum { MG_NPY_I2, MG_NPY_I4, MG_NPY_I8, MG_NPY_U4 } mg_npy_dtype;

/* Bytes per element (2, 4, 8, 4) and numpy's descr ("<i2", ...). */
size_t mg_npy_itemsize(mg_npy_dtype dt);
const char *mg_npy_descr(mg_npy_dtype dt);

typedef struct mg_npy {
    mg_npy_dtype dtype;
    int ndim;             /* 1 or 2 */
    uint64_t shape[2];    /* shape[1] = 1 when ndim == 1 */
    uint64_t count;       /* shape[0] x shape[1] */
    const uint8_t *data;  /* count x itemsize bytes, little-endian, C order; not aligned */
} mg_npy;

/* The header numpy.save writes for (dt, ndim, shape): into buf (cap >= 256 is always
 * enough for these arrays), its length in *len. MG_ERR_ARG for ndim outside 1..2. */
mg_status mg_npy_header(mg_npy_dtype dt, int ndim, const uint64_t *shape, char *buf,
                        size_t cap, size_t *len);

/* Writes path as numpy.save(path, array of dtype dt, shape) would; src holds
 * shape[0] x shape[1 if 2-D] elements of type src_dt (in host order). */
mg_status mg_npy_write(const char *path, mg_npy_dtype dt, int ndim, const uint64_t *shape,
                       const void *src, mg_npy_dtype src_dt);

/* Validates the image buf[0..len) (see the contract); name is used in messages. */
mg_status mg_npy_parse(const uint8_t *buf, size_t len, const char *name, mg_npy *out);

/* Element i (in C order) as int64. */
int64_t mg_npy_get(const mg_npy *a, uint64_t i);

typedef struct mg_npy_file {
    mg_map map;
    mg_npy arr;
} mg_npy_file;

mg_status mg_npy_open(mg_npy_file *f, const char *path);
void mg_npy_close(mg_npy_file *f);

#endif
