/* test_scripts.c - the lua/ scripts on a real redis-server: the behaviour
 * users of each algorithm rely on, exactness at scale, argument errors and
 * expiry. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admission/admission.h"
#include "redis_fixture.h"
#include "script_client.h"

#define T0 INT64_C(4102444800000000) /* 2100-01-01: keys set at this time outlive the test */
#define SEC INT64_C(1000000)

static redis_fixture fx;

static void setup(void)
{
    redis_fixture_start(&fx);
}

static void teardown(void)
{
    redis_fixture_stop(&fx);
}

TestSuite(scripts, .init = setup, .fini = teardown, .timeout = 120);

/* One call of script `name` (loaded on first use) with ARGV first, second, now. */
static sl_verdict call(const char *name, const char *key, const char *first, const char *second,
                       int64_t now)
{
    char sha[41];
    redis_fixture_load(&fx, name, sha); /* SCRIPT LOAD is idempotent and cheap */
    redisReply *reply = sc_call(fx.conn, sha, key, first, second, now);
    sl_verdict v;
    char err[256];
    cr_assert(sc_parse_verdict(reply, &v, err, sizeof err), "%s: %s", name, err);
    freeReplyObject(reply);
    return v;
}

/* The error reply of a call that must fail (NULL key: call with no key). */
static char *call_error(const char *name, const char *key, const char *const *argv, int argc)
{
    char sha[41];
    redis_fixture_load(&fx, name, sha);
    const char *args[8] = {"EVALSHA", sha, key ? "1" : "0"};
    size_t n = 3;
    if (key)
        args[n++] = key;
    for (int i = 0; i < argc; i++)
        args[n++] = argv[i];
    redisReply *reply = redisCommandArgv(fx.conn, (int)n, args, NULL);
    cr_assert_not_null(reply);
    cr_assert_eq(reply->type, REDIS_REPLY_ERROR, "%s: expected an error reply", name);
    char *text = strdup(reply->str);
    freeReplyObject(reply);
    return text;
}

static long long integer_command(const char *format, const char *key)
{
    redisReply *reply = redisCommand(fx.conn, format, key);
    cr_assert(reply && reply->type == REDIS_REPLY_INTEGER, "%s %s", format, key);
    long long value = reply->integer;
    freeReplyObject(reply);
    return value;
}

/* ---- shaping ---- */

Test(scripts, shaping_exact_at_25000_per_second_for_a_million_slots)
{
    char sha[41];
    redis_fixture_load(&fx, "shaping", sha);
    const int64_t total = 1000000, batch = 10000;
    int64_t k = 0;
    while (k < total) {
        for (int64_t i = 0; i < batch; i++)
            redisAppendCommand(fx.conn, "EVALSHA %s 1 burst 9000000 25000 %" PRId64, sha, T0);
        for (int64_t i = 0; i < batch; i++, k++) {
            redisReply *reply = NULL;
            cr_assert_eq(redisGetReply(fx.conn, (void **)&reply), REDIS_OK);
            sl_verdict v;
            char err[256];
            cr_assert(sc_parse_verdict(reply, &v, err, sizeof err), "%s", err);
            freeReplyObject(reply);
            cr_assert(v.allowed && v.wait_us == k * 40,
                      "slot %" PRId64 ": wait_us %" PRId64 ", expected %" PRId64, k, v.wait_us,
                      k * 40);
        }
    }
}

Test(scripts, shaping_within_a_microsecond_at_3_per_second)
{
    for (int64_t k = 0; k < 3000; k++) {
        sl_verdict v = call("shaping", "s3", "9000000", "3", T0);
        /* |wait - k * 333333.33| <= 1, multiplied out by 3 */
        cr_assert(v.allowed && llabs(v.wait_us * 3 - k * SEC) <= 3, "slot %" PRId64 ": %" PRId64,
                  k, v.wait_us);
    }
}

Test(scripts, shaping_exact_at_fractional_and_high_rates)
{
    for (int64_t k = 0; k < 100; k++) {
        cr_assert_eq(call("shaping", "half", "1000", "0.5", T0).wait_us, k * 2 * SEC);
        cr_assert_eq(call("shaping", "fast", "1000", "100000", T0).wait_us, k * 10);
        cr_assert_eq(call("shaping", "slow", "1000", "0.001", T0).wait_us, k * 1000 * SEC);
    }
}

Test(scripts, shaping_spaces_slots_and_restarts_after_idleness)
{
    /* rate 10/s: 100 ms apart, whatever the arrival times */
    cr_assert_eq(call("shaping", "t", "100", "10", T0).wait_us, 0);
    cr_assert_eq(call("shaping", "t", "100", "10", T0 + 30000).wait_us, 70000);
    cr_assert_eq(call("shaping", "t", "100", "10", T0 + 30000).wait_us, 170000);
    /* the schedule is free again at T0 + 300 ms: a job after that leaves at once */
    cr_assert_eq(call("shaping", "t", "100", "10", T0 + 5 * SEC).wait_us, 0);
    cr_assert_eq(call("shaping", "t", "100", "10", T0 + 5 * SEC).wait_us, 100000);
}

Test(scripts, shaping_reports_overflow_beyond_capacity)
{
    for (int k = 0; k < 5; k++) {
        sl_verdict v = call("shaping", "o", "5", "1", T0);
        cr_assert(v.allowed);
        cr_assert_eq(v.remaining, 4 - k);
    }
    sl_verdict over = call("shaping", "o", "5", "1", T0);
    cr_assert_not(over.allowed);
    cr_assert_eq(over.remaining, 0);
    cr_assert_eq(over.wait_us, SEC, "one slot frees up after 1 s");
    cr_assert_not(call("shaping", "o", "5", "1", T0 + SEC - 1).allowed);
    sl_verdict later = call("shaping", "o", "5", "1", T0 + SEC);
    cr_assert(later.allowed);
    cr_assert_eq(later.wait_us, 4 * SEC, "slot after the four still waiting");
}

/* ---- policing ---- */

Test(scripts, policing_admits_while_level_plus_one_fits)
{
    for (int k = 0; k < 3; k++)
        cr_assert(call("policing", "p", "3", "3", T0).allowed);
    sl_verdict v = call("policing", "p", "3", "3", T0);
    cr_assert_not(v.allowed);
    /* one job leaks out in 1/3 s, rounded up to the microsecond */
    cr_assert_eq(v.wait_us, 333334);
    cr_assert_not(call("policing", "p", "3", "3", T0 + 333333).allowed);
    sl_verdict after = call("policing", "p", "3", "3", T0 + 333334);
    cr_assert(after.allowed);
    cr_assert_eq(after.remaining, 0);
    cr_assert_eq(after.wait_us, 0, "a meter never delays, it only admits or denies");
}

/* ---- token bucket ---- */

Test(scripts, token_bucket_allows_capacity_then_refills_at_rate)
{
    for (int k = 0; k < 10; k++)
        cr_assert(call("token_bucket", "tb", "10", "2", T0).allowed, "burst job %d", k);
    sl_verdict v = call("token_bucket", "tb", "10", "2", T0);
    cr_assert_not(v.allowed, "burst of exactly capacity");
    cr_assert_eq(v.wait_us, SEC / 2);
    /* then exactly `rate` per second: over 10 s, one every 500 ms = 20 jobs */
    int admitted = 0;
    for (int64_t t = T0 + 1000; t <= T0 + 10 * SEC; t += 1000)
        admitted += call("token_bucket", "tb", "10", "2", t).allowed;
    cr_assert_eq(admitted, 20);
}

/* ---- windows ---- */

/* Jobs admitted when `max` arrive just before and `max` just after a
 * window boundary (T0 is a multiple of 1 s). */
static int boundary_burst(const char *script)
{
    int admitted = 0;
    for (int i = 0; i < 10; i++)
        admitted += call(script, "w", "10", "1000", T0 - 1000 + i).allowed;
    for (int i = 0; i < 10; i++)
        admitted += call(script, "w", "10", "1000", T0 + i).allowed;
    return admitted;
}

Test(scripts, fixed_window_allows_the_known_double_burst)
{
    cr_assert_eq(boundary_burst("fixed_window"), 20);
}

Test(scripts, sliding_window_log_does_not)
{
    cr_assert_eq(boundary_burst("sliding_window_log"), 10);
    /* and reopens exactly one window after the oldest entry */
    cr_assert_not(call("sliding_window_log", "w", "10", "1000", T0 + SEC - 1001).allowed);
    cr_assert(call("sliding_window_log", "w", "10", "1000", T0 + SEC - 1000).allowed);
}

Test(scripts, fixed_window_denial_waits_for_the_next_window)
{
    cr_assert(call("fixed_window", "f", "1", "60000", T0 + 15 * SEC).allowed);
    sl_verdict v = call("fixed_window", "f", "1", "60000", T0 + 15 * SEC);
    cr_assert_not(v.allowed);
    cr_assert_eq(v.wait_us, 45 * SEC);
}

Test(scripts, sliding_window_log_never_collides_within_a_microsecond)
{
    for (int i = 0; i < 5; i++)
        cr_assert(call("sliding_window_log", "same", "10", "1000", T0).allowed);
    cr_assert_eq(integer_command("ZCARD %s", "same"), 5, "five entries, none overwritten");
    cr_assert_eq(call("sliding_window_log", "same", "10", "1000", T0).remaining, 4);
}

Test(scripts, sliding_window_counter_weighs_the_previous_window)
{
    /* 10 jobs in window [T0, T0 + 1 s), max 10 */
    for (int i = 0; i < 10; i++)
        cr_assert(call("sliding_window_counter", "c", "10", "1000", T0 + i).allowed);
    /* 25% into the next window the estimate is 10 * 0.75 = 7.5: two more fit */
    int64_t quarter = T0 + SEC + SEC / 4;
    sl_verdict first = call("sliding_window_counter", "c", "10", "1000", quarter);
    cr_assert(first.allowed);
    cr_assert_eq(first.remaining, 1, "estimate 8.5");
    cr_assert(call("sliding_window_counter", "c", "10", "1000", quarter).allowed);
    sl_verdict denied = call("sliding_window_counter", "c", "10", "1000", quarter);
    cr_assert_not(denied.allowed, "estimate 9.5 + 1 > 10");
    /* estimate + 1 <= 10 again when 10 * (1 - e) + 2 <= 9, i.e. at e = 0.3 */
    cr_assert_eq(denied.wait_us, SEC * 3 / 10 - SEC / 4);
}

/* ---- errors ---- */

Test(scripts, bad_arguments_get_an_error_naming_them)
{
    const struct {
        const char *script;
        const char *argv[3];
        int argc;
        const char *names;
    } cases[] = {
        {"shaping", {"0", "10"}, 2, "ARGV[1] (capacity)"},
        {"shaping", {"-5", "10"}, 2, "ARGV[1] (capacity)"},
        {"shaping", {"10", "0"}, 2, "ARGV[2] (rate)"},
        {"shaping", {"10", "fast"}, 2, "ARGV[2] (rate)"},
        {"shaping", {"10", "0.0005"}, 2, "multiple of 0.001"},
        {"shaping", {"10"}, 1, "capacity, rate"},
        {"shaping", {"10", "10", "yesterday"}, 3, "ARGV[3] (now_us)"},
        {"policing", {"1.5", "10"}, 2, "ARGV[1] (capacity)"},
        {"token_bucket", {"5", "-1"}, 2, "ARGV[2] (rate)"},
        {"fixed_window", {"0", "1000"}, 2, "ARGV[1] (max)"},
        {"sliding_window_log", {"10", "0"}, 2, "ARGV[2] (window_ms)"},
        {"sliding_window_counter", {"1000000000", "86400000"}, 2, "2^52"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = call_error(cases[i].script, "k", cases[i].argv, cases[i].argc);
        cr_assert_not_null(strstr(text, cases[i].names), "%s: '%s' does not name '%s'",
                           cases[i].script, text, cases[i].names);
        cr_assert_not_null(strstr(text, cases[i].script), "'%s' does not name the script", text);
        free(text);
    }
    const char *ok_args[] = {"10", "10"};
    char *no_key = call_error("shaping", NULL, ok_args, 2);
    cr_assert_not_null(strstr(no_key, "1 key"), "%s", no_key);
    free(no_key);
    cr_assert_eq(integer_command("EXISTS %s", "k"), 0, "a refused call writes nothing");
}

/* ---- expiry, on Redis's own clock ---- */

Test(scripts, without_now_the_scripts_use_redis_time)
{
    cr_assert_eq(call("shaping", "clock", "10", "1", -1).wait_us, 0);
    int64_t wait = call("shaping", "clock", "10", "1", -1).wait_us;
    cr_assert(wait > SEC - 500000 && wait <= SEC, "second slot %" PRId64 " us away", wait);
    redisReply *reply = redisCommand(fx.conn, "HGET clock next_free");
    int64_t next_free = strtoll(reply->str, NULL, 10);
    freeReplyObject(reply);
    int64_t now = redis_fixture_now_us(&fx);
    cr_assert(next_free > now + SEC && next_free <= now + 2 * SEC, "next_free on Redis's clock");
}

Test(scripts, idle_state_expires_by_itself)
{
    /* Parameters with state that stops mattering within milliseconds. */
    const struct {
        const char *script, *first, *second;
    } cases[] = {
        {"shaping", "5", "1000"},       {"policing", "5", "1000"},
        {"token_bucket", "5", "1000"},  {"fixed_window", "5", "5"},
        {"sliding_window_log", "5", "5"}, {"sliding_window_counter", "5", "5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert(call(cases[i].script, cases[i].script, cases[i].first, cases[i].second, -1)
                      .allowed);
        long long expire_at = integer_command("PEXPIRETIME %s", cases[i].script);
        int64_t now_ms = redis_fixture_now_us(&fx) / 1000;
        /* -2: gone already (a slow client can miss a 5 ms window), which is the point */
        cr_assert(expire_at == -2 || (expire_at > 0 && expire_at <= now_ms + 20),
                  "%s: expires at %lld, now %" PRId64, cases[i].script, expire_at, now_ms);
    }
    /* Bounded wait for Redis to drop them: at most 2 s. */
    for (int tries = 0; tries < 200; tries++) {
        long long left = 0;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            left += integer_command("EXISTS %s", cases[i].script);
        if (left == 0)
            return;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    cr_assert_fail("idle keys still exist after 2 s");
}
