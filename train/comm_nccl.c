/* comm_nccl.c — the NCCL backend (comm_internal.h): device buffers. */
#include "comm_internal.h"

#if !MG_HAVE_NCCL

mg_status comm_nccl_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg)
{
    (void)l, (void)cfg;
    *out = NULL;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: the NCCL backend: this "
                        "mg-train was built without NCCL (nccl.h and libnccl)");
}

#endif
