/* redis_errors.h - what an error reply from Redis means for the caller:
 * a passing state of the server (retry the same command later) or a
 * fault that retrying will not mend. Pure. */
#ifndef SLUICE_REDIS_ERRORS_H
#define SLUICE_REDIS_ERRORS_H

#include <stdbool.h>
#include <stdint.h>

/* True if the error reply text (e.g. "BUSY Redis is busy running a
 * script...") says the server cannot serve the command for now but will:
 * LOADING (a dump is loading), BUSY (a script or function is running),
 * TRYAGAIN (a cluster slot is moving), OOM (over maxmemory until memory is
 * freed), MASTERDOWN (a replica lost its master) and READONLY (a primary
 * turned replica by a failover: the connection finds the new primary). The code must be the
 * whole first word: "BUSYKEY" or "BUSYGROUP" are not transient. NULL is
 * not transient. */
bool sl_redis_error_transient(const char *text);

/* A command refused by a transient error is tried again after a backoff
 * from SL_REDIS_TRANSIENT_MIN_US doubling to SL_REDIS_TRANSIENT_MAX_US:
 * soon after a short BUSY, and without hammering a server loading for
 * minutes. */
#define SL_REDIS_TRANSIENT_MIN_US 100000
#define SL_REDIS_TRANSIENT_MAX_US 2000000

/* The wait before try number n (1: the first retry; n < 1 is read as 1). */
int64_t sl_redis_transient_backoff_us(int n);

#endif
