/* help.h — the text mg-train --help prints: every flag it takes, with Megatron's defaults,
 * and the FLOP and memory formulas the plan and the log line use. */
#ifndef MG_TRAIN_HELP_H
#define MG_TRAIN_HELP_H

const char *mg_train_help_text(void);

#endif
