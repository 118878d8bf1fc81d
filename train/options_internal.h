/* options_internal.h — shared between options.c (parsing), options_validate.c
 * (validate_args' checks and derived values) and options_recompute.c. Not a public interface. */
#ifndef MG_TRAIN_OPTIONS_INTERNAL_H
#define MG_TRAIN_OPTIONS_INTERNAL_H

#include "options.h"

/* options_recompute.c: the choices of --recompute-granularity and --recompute-method
 * (0, or -1 for an invalid choice) and Megatron's checks of the recomputation flags
 * (TransformerConfig.__post_init__, validate_args), after the pipeline layout's. */
int mg_train_choose_recompute(mg_train_opts *o, const char *v);
int mg_train_choose_recompute_method(mg_train_opts *o, const char *v);
mg_status mg_train_check_recompute(mg_train_opts *o);

/* Checks the parsed flags and fills the derived values (options.h contract). */
mg_status mg_train_validate(mg_train_opts *o);

#endif
