/* dry_run.h — the report of `mg-train --dry-run`: model shape, padded vocabulary, exact
 * parameter count (total and on the most loaded rank), memory per rank by part (weights,
 * gradients, optimizer, activations; memory_plan.h), Megatron's own theoretical-memory line,
 * and FLOPs per iteration (flops.h). Nothing is allocated but the text.
 *
 * Contract: opts is validated (mg_train_parse) and its vocabulary resolved
 * (mg_train_resolve_vocab). *text is malloc'd (caller frees); lines end with "\n".
 */
#ifndef MG_TRAIN_DRY_RUN_H
#define MG_TRAIN_DRY_RUN_H

#include "options.h"

mg_status mg_train_dry_run_report(const mg_train_opts *o, char **text);

#endif
