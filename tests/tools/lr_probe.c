/* lr_probe.c — prints mg-train's learning rate and weight decay per iteration for a
 * command line of mg-train flags (parsed and validated by train/options.h), for
 * tests/interop/test_lr_schedule.py to compare with megatron-core's OptimizerParamScheduler.
 *   lr_probe MG-TRAIN-FLAGS...
 * Output: one line per iteration k = 0 .. max(train iters, decay iters) + 3:
 *   "k num_steps lr wd" with num_steps = k * global batch size (samples, as Megatron's
 *   scheduler counts them) and lr/wd as %.17g. Exit 2 on a usage error (message on stderr).
 */
#include <stdio.h>

#include "mg/error.h"
#include "train/options.h"

int main(int argc, char **argv)
{
    mg_train_opts o;
    mg_status st = mg_train_parse(&o, argc, argv);
    if (st != MG_OK) {
        fprintf(stderr, "lr_probe: %s\n", mg_last_error());
        mg_train_opts_free(&o);
        return 2;
    }
    const double gbs = (double)o.global_batch_size;
    int64_t last = o.train_iters;
    if ((int64_t)(o.sched.decay_steps / gbs) > last) last = (int64_t)(o.sched.decay_steps / gbs);
    for (int64_t k = 0; k <= last + 3; k++) {
        double n = (double)k * gbs;
        printf("%lld %.17g %.17g %.17g\n", (long long)k, n, mg_lr_at(&o.sched, n),
               mg_wd_at(&o.sched, n));
    }
    mg_train_opts_free(&o);
    return 0;
}
