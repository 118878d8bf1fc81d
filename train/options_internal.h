/* options_internal.h — shared between options.c (parsing) and options_validate.c
 * (validate_args' checks and derived values). Not a public interface. */
#ifndef MG_TRAIN_OPTIONS_INTERNAL_H
#define MG_TRAIN_OPTIONS_INTERNAL_H

#include "options.h"

/* Checks the parsed flags and fills the derived values (options.h contract). */
mg_status mg_train_validate(mg_train_opts *o);

#endif
