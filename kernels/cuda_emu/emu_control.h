/* emu_control.h — the CUDA emulator's modes and result digest, callable from C (the test
 * runner) and C++ (the emulator).
 *
 * Contract:
 *   - Thread order: the threads of a block run between synchronisation points in forward
 *     (thread 0 first), reverse or seeded random order, and the grid's blocks in the same
 *     order. Environment MGK_EMU_ORDER=fwd|rev|random:SEED (default fwd), read at the first
 *     launch; mgk_emu_set_order overrides it.
 *   - Strict mode (default; MGK_EMU_STRICT=0 relaxes it) aborts with the file:line of the
 *     offending call on: a barrier reached by only some threads (another barrier call site,
 *     or a thread that already exited), a thread that exits while others wait at a barrier,
 *     a warp operation whose mask names a lane that exited (relaxed: it no longer counts),
 *     kernel pointer arguments outside cudaMalloc memory, a shuffle reading a lane outside
 *     its mask. Always fatal, in both modes: warp operations whose mask does not match the
 *     lanes that call it, deadlocks, shared memory beyond the declared size.
 *   - Streams: by default every copy, memset, launch and cuBLASLt call runs when issued
 *     (streams run in issue order). MGK_EMU_STREAMS=late (or mgk_emu_set_late_streams(1))
 *     keeps each created stream's copies and memsets queued until something must see them:
 *     a launch or cuBLASLt call on that stream, a synchronisation of it, of an event
 *     recorded on it (cudaEventSynchronize, cudaStreamWaitEvent), of the device, work on the
 *     default stream, cudaFree. Kernels on another stream that read a copy's destination
 *     without waiting for its event then see the old contents, and a host buffer changed
 *     before its copy was waited for is copied as changed: a missing event wait shows.
 *   - The result digest hashes the bytes of every device-to-host copy since the last reset:
 *     equal digests under two orders mean the program saw bitwise-equal results.
 */
#ifndef MGK_EMU_CONTROL_H
#define MGK_EMU_CONTROL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MGK_EMU_FWD = 0, MGK_EMU_REV = 1, MGK_EMU_RANDOM = 2 } mgk_emu_order;

/* Parses "fwd", "rev" or "random:SEED" (decimal); returns 0 on success, -1 otherwise. */
int mgk_emu_parse_order(const char *s, mgk_emu_order *order, uint64_t *seed);
void mgk_emu_set_order(mgk_emu_order order, uint64_t seed);
/* The current order as parseable text ("random:7"); static buffer. */
const char *mgk_emu_order_name(void);
/* Streams mode "late" (on) or issue order (off), overriding MGK_EMU_STREAMS. */
void mgk_emu_set_late_streams(int on);
void mgk_emu_set_strict(int on);
int mgk_emu_strict(void);

/* Result digest: reset before a run, read after it. */
void mgk_emu_results_reset(void);
uint64_t mgk_emu_results_digest(void);
/* Nonzero when a float atomic ran since the reset (results may differ in the last bits
 * between orders). */
int mgk_emu_float_atomics_used(void);
/* Kernel launches and fiber switches since the process started (for the runner's summary). */
uint64_t mgk_emu_launches(void);
uint64_t mgk_emu_switches(void);

#ifdef __cplusplus
}
#endif

#endif
