/* dcp_write.c — mg/dcp.h: writing DCP data files (items at 64-byte offsets, each a torch.save
 * archive appended in place) and the .metadata file. */
#include <stdlib.h>

#include "mg/dcp.h"

static mg_status pad64(mg_out *out)
{
    static const uint8_t zeros[64];
    uint64_t r = mg_out_offset(out) % 64;
    return r ? mg_out_write(out, zeros, (size_t)(64 - r)) : MG_OK;
}

mg_status mg_dcp_write_item(mg_out *out, const mg_pk_obj *root, const mg_torch_save_opts *so,
                            mg_dcp_chunk *c)
{
    MG_FORWARD(pad64(out));
    c->offset = mg_out_offset(out);
    MG_FORWARD(mg_torch_save_to(out, root, so));
    c->length = mg_out_offset(out) - c->offset;
    return MG_OK;
}

mg_status mg_dcp_write_meta(const mg_dcp_meta *m, const char *path)
{
    uint8_t *pk = NULL;
    size_t n = 0;
    mg_out *out = NULL;
    mg_status st = mg_dcp_meta_dump(m, &pk, &n);
    if (st == MG_OK) st = mg_out_create(&out, path);
    if (st == MG_OK) st = mg_out_write(out, pk, n);
    if (st == MG_OK) st = mg_out_commit(out);
    mg_out_free(out);
    free(pk);
    return st;
}
