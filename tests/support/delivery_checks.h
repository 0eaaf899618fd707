/* delivery_checks.h - what tests of a running daemon check: what reached
 * the endpoint (sluice-sink's log), what is left in a tenant's Redis keys,
 * and its dead letters. Each check fails the test (cr_assert) itself. */
#ifndef SLUICE_TEST_DELIVERY_CHECKS_H
#define SLUICE_TEST_DELIVERY_CHECKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "sink_process.h"

/* The integer reply of a command naming one tenant ("LLEN sluice:{%s}:queue"). */
long long redis_count(redisContext *c, const char *format, const char *tenant);

/* The tenant's queue, in-flight set, retry set and job records are empty. */
void assert_tenant_drained(redisContext *c, const char *tenant);

/* Every id TAG-0..TAG-(expected-1) is among reqs at least once, and exactly
 * once unless allow_dup (a killed worker may deliver a job twice). */
void assert_each_delivered(const sink_request *reqs, size_t n, const char *tag, int expected,
                           bool allow_dup);

/* Reads the sink's log until every id TAG-0..TAG-(expected-1) has arrived
 * or timeout_ms passed; returns the requests read last (all of them, in
 * *out: free with sink_requests_free). */
size_t sink_wait_each(const sink_process *sink, const char *tag, int expected, int timeout_ms,
                      sink_request **out);

/* The tenant's dead-letter records, oldest first, one string each, in a
 * new array (*out; free with strings_free); returns how many. */
size_t dlq_read(redisContext *c, const char *tenant, char ***out);

/* True once the tenant has at least n dead letters; false after timeout_ms. */
bool dlq_wait(redisContext *c, const char *tenant, long long n, int timeout_ms);

/* True once the sink has logged more than requests_before requests and
 * the tenant has a job under a lease (claimed, in flight): something is
 * under way. False after timeout_ms. */
bool wait_under_way(redisContext *c, const char *tenant, const sink_process *sink,
                    size_t requests_before, int timeout_ms);

/* The departure times (5th column: the sender's CLOCK_REALTIME, one clock
 * for every process of the host) of a --trace-departures file, ascending,
 * in a new array (*out; caller frees); returns how many. Fails the test if
 * the file cannot be read. */
size_t departures_read(const char *path, int64_t **out);

/* Sorts reqs by arrival at the endpoint, earliest first. */
void sink_requests_sort_by_arrival(sink_request *reqs, size_t n);

/* Sorts n times (or any int64_t values) in increasing order. */
void int64_sort(int64_t *v, size_t n);

/* Frees n strings and the array holding them. */
void strings_free(char **s, size_t n);

#endif
