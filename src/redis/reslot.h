/* reslot.h - the reslot script's call, encoded and decoded: new slots on
 * the tenant's schedule for jobs a daemon holds late (lua/reslot.lua says
 * why). Pure: sending is the caller's. */
#ifndef SLUICE_RESLOT_H
#define SLUICE_RESLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redis/keys.h"
#include "redis/redis_argv.h"

/* Builds the call (EVALSHA sha) for count new slots at rate_milli; now_us
 * 0 lets Redis's clock decide (tests pass one). */
void sl_reslot_build(sl_argv *a, const char *sha, const sl_tenant_keys *keys, int64_t rate_milli,
                     size_t count, int64_t now_us);

/* Checks the reply and reads its time into *now_us and how many slots it
 * gives into *count; false with a message naming what is wrong when it is
 * not the script's reply (an error reply's text included). */
bool sl_reslot_parse(const redisReply *reply, int64_t *now_us, size_t *count, char *err,
                     size_t err_size);

/* The i-th (< count) slot of a reply sl_reslot_parse took, in order. */
int64_t sl_reslot_slot(const redisReply *reply, size_t i);

#endif
