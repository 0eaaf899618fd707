/* keys.h - the Redis key names of a tenant (SPEC section 2). */
#ifndef SLUICE_KEYS_H
#define SLUICE_KEYS_H

#include <stdbool.h>
#include <stddef.h>

/* Longest key: prefix (64) + tenant (128) + ":{" "}:" + "limit:" + limit name (64).
 * The buffers of built-on-the-spot keys (sl_limit_key, a pattern) are this big. */
#define SL_KEY_MAX 288

/* A tenant's keys, each as long as its text: one allocation holds all
 * eight, one after the other (a tenant costs what its names need, not
 * eight SL_KEY_MAX buffers: 10,000 idle tenants are kept in memory). */
typedef struct sl_tenant_keys {
    const char *queue;
    const char *shape;
    const char *inflight;
    const char *jobs;
    const char *retry;
    const char *dlq;
    const char *settings; /* live overrides (SPEC section 9) */
    const char *events;   /* their changes, JSON, newest first */
    char *text;           /* owned: the eight strings above point into it */
} sl_tenant_keys;

/* Fills every key of `tenant` under `prefix` ("sluice:{T}:queue", ...);
 * free them with sl_tenant_keys_free. The hash tag {T} puts them all in
 * one Redis Cluster slot. False if out of memory: keys zeroed. */
bool sl_tenant_keys_init(sl_tenant_keys *keys, const char *prefix, const char *tenant);

/* Frees what keys owns and zeroes it; a zeroed keys is a no-op. */
void sl_tenant_keys_free(sl_tenant_keys *keys);

/* Writes "<prefix>:{<tenant>}:limit:<name>" into out (SL_KEY_MAX bytes). */
void sl_limit_key(char *out, const char *prefix, const char *tenant, const char *limit_name);

/* The tenant of a queue key "<prefix>:{T}:queue", copied into out; false if
 * the key is not a queue key under prefix or T is not a valid name. */
bool sl_tenant_from_queue_key(const char *key, size_t key_len, const char *prefix, char *out,
                              size_t out_size);

/* The tenant of a key that holds work, "<prefix>:{T}:queue", ":retry" or
 * ":inflight" (jobs pushed, waiting for a retry, or leased), copied into
 * out; false for any other key (":dlq", ":shape", ":jobs", a limit's) or
 * an invalid T. Discovery finds tenants by these keys. */
bool sl_tenant_from_work_key(const char *key, size_t key_len, const char *prefix, char *out,
                             size_t out_size);

/* The SCAN MATCH pattern of the keys sl_tenant_from_work_key accepts
 * (and a few more that it then refuses), written to out (SL_KEY_MAX). */
void sl_work_key_pattern(char *out, const char *prefix);

#endif
