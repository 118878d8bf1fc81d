/* scaler_probe.c — runs train/grad_scaler.c's dynamic scaler on a sequence of overflow
 * flags and prints its state after every update, for tests/interop/test_grad_scaler.py to
 * compare with megatron-core's DynamicGradScaler.
 *   scaler_probe INITIAL MIN WINDOW HYSTERESIS FLAGS
 * FLAGS is a string of '0' (clean step) and '1' (found_inf). Output: one line per flag,
 * "scale growth_tracker hysteresis_tracker" with the scale as %.17g (the float32 exactly).
 * Exit 2 on a usage or constructor error (message on stderr).
 */
#include <stdio.h>
#include <stdlib.h>

#include "train/grad_scaler.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: scaler_probe INITIAL MIN WINDOW HYSTERESIS FLAGS\n");
        return 2;
    }
    mg_grad_scaler s;
    mg_status st = mg_grad_scaler_dynamic(&s, strtod(argv[1], NULL), strtod(argv[2], NULL),
                                          strtoll(argv[3], NULL, 10), strtoll(argv[4], NULL, 10));
    if (st != MG_OK) {
        fprintf(stderr, "scaler_probe: %s\n", mg_last_error());
        return 2;
    }
    for (const char *f = argv[5]; *f; f++) {
        if (*f != '0' && *f != '1') {
            fprintf(stderr, "scaler_probe: flag '%c' is not 0 or 1\n", *f);
            return 2;
        }
        mg_grad_scaler_update(&s, *f == '1');
        printf("%.17g %lld %lld\n", (double)s.scale, (long long)s.growth_tracker,
               (long long)s.hysteresis_tracker);
    }
    return 0;
}
