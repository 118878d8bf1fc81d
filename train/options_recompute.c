/* options_recompute.c — options_internal.h: --recompute-granularity, --recompute-method,
 * --recompute-num-layers and --recompute-activations as Megatron takes them.
 *
 * Contract: the choices are argparse's (full|selective, uniform|block);
 * --recompute-activations means selective (validate_args). The checks and their messages
 * are megatron-core's TransformerConfig.__post_init__ and validate_args': selective takes
 * neither a method nor a layer count, full needs both, and the count lies between 1 and the
 * layers per pipeline rank (num_layers // pipeline size, Megatron's figure; the message
 * states the bound, here it is also enforced). Without a granularity the method and count
 * change nothing (Megatron ignores them too). MG_ERR_ARG for a wrong combination.
 */
#include <string.h>

#include "options_internal.h"

#define LL(x) ((long long)(x))

int mg_train_choose_recompute(mg_train_opts *o, const char *v)
{
    if (strcmp(v, "full") && strcmp(v, "selective")) return -1;
    o->recompute_granularity = strcmp(v, "full") == 0 ? MG_RC_FULL : MG_RC_SELECTIVE;
    return 0;
}

int mg_train_choose_recompute_method(mg_train_opts *o, const char *v)
{
    if (strcmp(v, "uniform") && strcmp(v, "block")) return -1;
    o->recompute_method = strcmp(v, "uniform") == 0 ? MG_RC_UNIFORM : MG_RC_BLOCK;
    return 0;
}

mg_status mg_train_check_recompute(mg_train_opts *o)
{
    if (o->recompute_activations) o->recompute_granularity = MG_RC_SELECTIVE;
    const char *gran = o->recompute_granularity == MG_RC_FULL ? "full" : "selective";
    int64_t per_rank = o->model.num_layers / o->model.pp;
    if (o->recompute_granularity == MG_RC_SELECTIVE) {
        MG_RETURN_IF(o->recompute_method != MG_RC_METHOD_NONE, MG_ERR_ARG,
                     "recompute method is not yet supported for selective recomputing "
                     "granularity (--recompute-method)");
        MG_RETURN_IF(o->recompute_num_layers, MG_ERR_ARG, "When using recompute_granularity: "
                     "%s recompute_num_layers must be None.", gran);
    }
    if (o->recompute_granularity != MG_RC_FULL) return MG_OK;
    MG_RETURN_IF(o->recompute_method == MG_RC_METHOD_NONE, MG_ERR_ARG,
                 "Using recompute_granularity: %s so recompute_method must be \"block\" or "
                 "\"uniform\" (--recompute-method)", gran);
    MG_RETURN_IF(o->recompute_num_layers < 1 || o->recompute_num_layers > per_rank, MG_ERR_ARG,
                 "When using recompute_granularity: %s recompute_num_layers must be between 1 "
                 "and num_layers_per_pipeline_rank: %lld (--recompute-num-layers %lld)", gran,
                 LL(per_rank), LL(o->recompute_num_layers));
    return MG_OK;
}
