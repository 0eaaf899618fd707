/* delivery_checks.c - see delivery_checks.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delivery_checks.h"
#include "process.h"

long long redis_count(redisContext *c, const char *format, const char *tenant)
{
    redisReply *reply = redisCommand(c, format, tenant);
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER, "%s", format);
    long long v = reply->integer;
    freeReplyObject(reply);
    return v;
}

void assert_tenant_drained(redisContext *c, const char *tenant)
{
    cr_assert_eq(redis_count(c, "LLEN sluice:{%s}:queue", tenant), 0, "queue not empty");
    cr_assert_eq(redis_count(c, "ZCARD sluice:{%s}:inflight", tenant), 0, "jobs still in flight");
    cr_assert_eq(redis_count(c, "ZCARD sluice:{%s}:retry", tenant), 0, "jobs still retrying");
    cr_assert_eq(redis_count(c, "HLEN sluice:{%s}:jobs", tenant), 0, "job records left");
}

/* k if key is "TAG-k" with 0 <= k < expected, else -1. */
static int index_of(const char *key, const char *tag, int expected)
{
    size_t tag_len = strlen(tag);
    if (strncmp(key, tag, tag_len) != 0 || key[tag_len] != '-')
        return -1;
    int k = atoi(key + tag_len + 1);
    return k >= 0 && k < expected ? k : -1;
}

void assert_each_delivered(const sink_request *reqs, size_t n, const char *tag, int expected,
                           bool allow_dup)
{
    int *seen = calloc((size_t)expected, sizeof *seen);
    size_t tag_len = strlen(tag);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(reqs[i].key, tag, tag_len) != 0 || reqs[i].key[tag_len] != '-')
            continue;
        int k = index_of(reqs[i].key, tag, expected);
        cr_assert(k >= 0, "unexpected key %s", reqs[i].key);
        seen[k]++;
    }
    for (int k = 0; k < expected; k++) {
        cr_assert_geq(seen[k], 1, "%s-%d never delivered", tag, k);
        if (!allow_dup)
            cr_assert_eq(seen[k], 1, "%s-%d delivered %d times", tag, k, seen[k]);
    }
    free(seen);
}

size_t sink_wait_each(const sink_process *sink, const char *tag, int expected, int timeout_ms,
                      sink_request **out)
{
    for (int waited = 0;; waited += 100) {
        size_t n = sink_read_log(sink, out);
        int *seen = calloc((size_t)expected, sizeof *seen);
        int distinct = 0;
        for (size_t i = 0; i < n; i++) {
            int k = index_of((*out)[i].key, tag, expected);
            if (k >= 0 && !seen[k]++)
                distinct++;
        }
        free(seen);
        if (distinct == expected || waited >= timeout_ms)
            return n;
        sink_requests_free(*out, n);
        *out = NULL;
        sleep_ms(100);
    }
}

size_t dlq_read(redisContext *c, const char *tenant, char ***out)
{
    redisReply *reply = redisCommand(c, "LRANGE sluice:{%s}:dlq 0 -1", tenant);
    cr_assert(reply && reply->type == REDIS_REPLY_ARRAY);
    *out = calloc(reply->elements + 1, sizeof **out);
    for (size_t i = 0; i < reply->elements; i++) /* LPUSHed: newest first */
        (*out)[reply->elements - 1 - i] = strdup(reply->element[i]->str);
    size_t n = reply->elements;
    freeReplyObject(reply);
    return n;
}

bool dlq_wait(redisContext *c, const char *tenant, long long n, int timeout_ms)
{
    for (int waited = 0; waited < timeout_ms; waited += 50) {
        if (redis_count(c, "LLEN sluice:{%s}:dlq", tenant) >= n)
            return true;
        sleep_ms(50);
    }
    return false;
}

bool wait_under_way(redisContext *c, const char *tenant, const sink_process *sink,
                    size_t requests_before, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
        sink_request *reqs = NULL;
        size_t n = sink_read_log(sink, &reqs);
        sink_requests_free(reqs, n);
        if (n > requests_before && redis_count(c, "ZCARD sluice:{%s}:inflight", tenant) > 0)
            return true;
        sleep_ms(20);
    }
    return false;
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

size_t departures_read(const char *path, int64_t **out)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no trace at %s", path);
    size_t n = 0, cap = 1024;
    int64_t *t = malloc(cap * sizeof *t);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *col = line;
        for (int c = 0; c < 4 && col; c++)
            col = strchr(col, '\t') ? strchr(col, '\t') + 1 : NULL;
        if (!col)
            continue;
        if (n == cap)
            t = realloc(t, (cap *= 2) * sizeof *t);
        t[n++] = strtoll(col, NULL, 10);
    }
    fclose(f);
    qsort(t, n, sizeof *t, compare_int64);
    *out = t;
    return n;
}

void strings_free(char **s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i]);
    free(s);
}

static int by_arrival(const void *a, const void *b)
{
    int64_t x = ((const sink_request *)a)->arrival_us, y = ((const sink_request *)b)->arrival_us;
    return (x > y) - (x < y);
}

void sink_requests_sort_by_arrival(sink_request *reqs, size_t n)
{
    if (n > 0)
        qsort(reqs, n, sizeof *reqs, by_arrival);
}

static int by_value(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void int64_sort(int64_t *v, size_t n)
{
    if (n > 0)
        qsort(v, n, sizeof *v, by_value);
}
