/* comm_tcp.h — a one-shot broadcast over TCP, for bootstrapping without MPI: rank 0 of a
 * torchrun-style launch hands a small blob (the NCCL unique id) to every other rank.
 *
 * Contract:
 *   - Rank 0 listens on addr:port (the port torchrun's MASTER_PORT names; SO_REUSEADDR),
 *     accepts size - 1 connections and writes `bytes` bytes to each; every other rank
 *     connects to addr:port (retrying while rank 0 is not listening yet) and reads them.
 *   - The whole exchange must finish within timeout_s (> 0): otherwise MG_ERR_IO naming
 *     this rank, the address and what it was waiting for (a connection, the data).
 *   - addr is a host name or a numeric address (getaddrinfo, IPv4 or IPv6).
 */
#ifndef MG_TRAIN_COMM_TCP_H
#define MG_TRAIN_COMM_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

mg_status mg_comm_tcp_bcast(const char *addr, int port, int64_t rank, int64_t size, void *buf,
                            size_t bytes, double timeout_s);

#endif
