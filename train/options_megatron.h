/* options_megatron.h — Megatron's pretrain_gpt.py flags that mg-train takes without a field
 * of its own, so that a launch script ports unchanged: those that do not change the result
 * on this backend (fusions, kernels, overlap, loggers, defaults named) are
 * accepted and named once in a note; those whose meaning mg-train cannot honour are refused
 * together, in one message.
 *
 * Contract:
 *   - mg_train_megatron_count() flags (at most MG_TRAIN_MEGATRON_MAX);
 *     mg_train_megatron_flag(i) is flag i (name and nargs), appended by options.c to its
 *     scanner's table.
 *   - mg_train_megatron_take(o, i, values, n) records flag i: an ignored one in
 *     o->ignored_flags (each name once), a refused one in o->refused_flags ("--num-experts
 *     8 (mixture of experts)"). A flag with a no-op value (--context-parallel-size 1,
 *     --expert-model-parallel-size 1, --rotary-percent 1.0, --distributed-backend nccl or
 *     gloo) is ignored at that value and refused at another.
 *   - mg_train_megatron_check(o): MG_ERR_UNSUPPORTED "not supported yet: Megatron flags
 *     whose meaning mg-train cannot honour: A; B; ..." naming every refused flag, else MG_OK.
 *   - mg_train_megatron_conditions(o), once every option is final (after
 *     --use-checkpoint-args): Megatron's conditions on the accepted flags, with the
 *     messages of arguments.py's asserts (MG_ERR_ARG): --overlap-param-gather needs
 *     --use-distributed-optimizer and --overlap-grad-reduce.
 *   - mg_train_megatron_note(o, buf, n): the note ("ignored (no effect on this backend):
 *     --a, --b"), or "" when none was given.
 */
#ifndef MG_TRAIN_OPTIONS_MEGATRON_H
#define MG_TRAIN_OPTIONS_MEGATRON_H

#include <stddef.h>

#include "mg/argv.h"
#include "options.h"

#define MG_TRAIN_MEGATRON_MAX 96

size_t mg_train_megatron_count(void);
mg_argv_flag mg_train_megatron_flag(size_t i);
void mg_train_megatron_take(mg_train_opts *o, size_t i, const char *const *values, size_t n);
mg_status mg_train_megatron_check(const mg_train_opts *o);
mg_status mg_train_megatron_conditions(const mg_train_opts *o);
void mg_train_megatron_note(const mg_train_opts *o, char *buf, size_t n);

#endif
