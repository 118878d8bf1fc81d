/* tb_events.h — TensorBoard event files (--tensorboard-dir), TensorBoard's own format, so
 * that `tensorboard --logdir DIR` shows mg-train's curves as it shows Megatron's.
 *
 * Contract:
 *   - mg_tb_create makes DIR (one level) when missing and a new file in it,
 *     events.out.tfevents.<10-digit unix time>.<host>.<pid>.0 (the name TensorBoard's
 *     writers use), whose first event is the file version "brain.Event:2".
 *   - The file is a sequence of TFRecords: u64 length, u32 masked CRC-32C of the length,
 *     the bytes, u32 masked CRC-32C of the bytes (little-endian; mask ((c >> 15) | (c << 17))
 *     + 0xa282ead8). Each record is an Event protobuf: wall_time (1, double), step (2,
 *     int64), file_version (3, string) or summary (5) with one Summary.Value: tag (1,
 *     string), simple_value (2, float) — what SummaryWriter.add_scalar writes.
 *   - mg_tb_scalar appends one scalar and flushes (a crashed run keeps its curve); I/O
 *     errors are MG_ERR_IO naming the file. mg_tb_free closes; accepts NULL.
 */
#ifndef MG_TRAIN_TB_EVENTS_H
#define MG_TRAIN_TB_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct mg_tb_writer mg_tb_writer;

mg_status mg_tb_create(mg_tb_writer **w, const char *dir);
mg_status mg_tb_scalar(mg_tb_writer *w, const char *tag, int64_t step, double value);
void mg_tb_free(mg_tb_writer *w);

/* CRC-32C (Castagnoli) of n bytes, as TFRecord checksums it (before masking). */
uint32_t mg_tb_crc32c(const void *p, size_t n);

#endif
