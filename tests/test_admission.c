/* test_admission.c - the pure admission models: exactness, parameter
 * parsing and the "wait_us is the true earliest retry" property. No Redis,
 * no clock: time is an argument. Behaviour users rely on is tested against
 * the real scripts in test_scripts.c; test_property.c proves the scripts
 * and these models reply alike. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "admission/admission.h"
#include "models.h"

#define T0 INT64_C(4102444800000000) /* 2100-01-01, epoch microseconds */

/* A burst of n jobs at one instant: the k-th slot must be k * 1e9/R us
 * after the first, to within `tolerance` us (integer slots round up). */
static void check_burst(int64_t rate_milli, int64_t n, int64_t tolerance_us)
{
    sl_shaping_state state = {0};
    sl_bucket_params p = {.capacity = SL_CAPACITY_MAX, .rate_milli = rate_milli};
    for (int64_t k = 0; k < n; k++) {
        sl_verdict v = sl_shaping_admit(&state, &p, T0);
        cr_assert(v.allowed, "job %" PRId64 " refused", k);
        /* |wait - k * 1e9 / R| <= tolerance, multiplied out by R. */
        int64_t error_scaled = v.wait_us * rate_milli - k * SL_JOB;
        cr_assert(llabs(error_scaled) <= tolerance_us * rate_milli,
                  "rate %" PRId64 " mHz: slot %" PRId64 " at %" PRId64 " us", rate_milli, k,
                  v.wait_us);
    }
}

Test(shaping_model, exact_at_25000_per_second_for_a_million_slots)
{
    check_burst(25000000, 1000000, 0);
}

Test(shaping_model, within_a_microsecond_at_3_per_second)
{
    check_burst(3000, 1000000, 1);
}

Test(shaping_model, exact_at_half_per_second_and_100000_per_second)
{
    check_burst(500, 100000, 0);
    check_burst(100000000, 1000000, 0);
    check_burst(1, 1000, 0); /* 0.001/s: one job every 1000 s */
}

Test(shaping_model, slots_never_closer_than_the_interval)
{
    /* Whatever the arrivals, any n consecutive gaps span at least n
     * intervals less the 1 us that rounding to whole microseconds costs. */
    const int64_t rates[] = {3000, 7000, 999, 25000000, 333333};
    srand(7);
    for (size_t r = 0; r < sizeof rates / sizeof rates[0]; r++) {
        sl_shaping_state state = {0};
        sl_bucket_params p = {.capacity = 50, .rate_milli = rates[r]};
        int64_t interval = SL_JOB / rates[r];
        int64_t now = T0, first_slot = -1, slots = 0, prev_slot = -1;
        for (int i = 0; i < 20000; i++) {
            now += rand() % 3 == 0 ? rand() % (3 * interval + 1) : 0;
            sl_verdict v = sl_shaping_admit(&state, &p, now);
            if (!v.allowed)
                continue;
            int64_t slot = now + v.wait_us;
            if (prev_slot >= 0 && slot - prev_slot > interval + 1) {
                first_slot = slot; /* idle gap: the schedule restarted */
                slots = 0;
            }
            if (first_slot < 0)
                first_slot = slot;
            if (prev_slot >= 0)
                cr_assert_geq((slot - prev_slot + 1) * rates[r], SL_JOB, "gap below 1/rate");
            cr_assert_geq((slot - first_slot + 1) * rates[r], slots * SL_JOB, "drift");
            prev_slot = slot;
            slots++;
        }
    }
}

Test(shaping_model, huge_backlog_does_not_overflow)
{
    /* A pause can move next_free far ahead: decided without overflow. */
    sl_shaping_state state = {.next_free = T0 + INT64_C(86400000000)};
    sl_bucket_params p = {.capacity = 10, .rate_milli = SL_RATE_MILLI_MAX};
    sl_verdict v = sl_shaping_admit(&state, &p, T0);
    cr_assert_not(v.allowed);
    cr_assert_eq(v.wait_us, INT64_C(86400000000) - 9);
}

Test(shaping_model, a_pause_restarts_the_schedule_at_its_end)
{
    sl_bucket_params p = {.capacity = 10, .rate_milli = 3000}; /* 333333.3 us apart */
    sl_shaping_state state = {0};
    cr_assert(sl_shaping_admit(&state, &p, T0).allowed);
    cr_assert_neq(state.frac, 0, "1/3 s leaves a fraction of a microsecond");

    /* A pause past next_free: the schedule restarts there, exactly. */
    int64_t until = T0 + 2000000 + 1;
    cr_assert(sl_shaping_pause(&state, until));
    cr_assert_eq(state.next_free, until);
    cr_assert_eq(state.frac, 0);
    cr_assert_eq(state.expire_at_ms, (until + 999) / 1000, "the key lives until the pause ends");
    sl_verdict v = sl_shaping_admit(&state, &p, T0 + 10);
    cr_assert(v.allowed);
    cr_assert_eq(T0 + 10 + v.wait_us, until, "the first slot is the end of the pause");

    /* A pause that ends before the schedule does changes nothing. */
    sl_shaping_state before = state;
    cr_assert_not(sl_shaping_pause(&state, state.next_free));
    cr_assert_not(sl_shaping_pause(&state, T0));
    cr_assert_eq(state.next_free, before.next_free);
    cr_assert_eq(state.frac, before.frac);
    cr_assert_eq(state.expire_at_ms, before.expire_at_ms);

    /* An absent key: the schedule starts at the pause's end. */
    sl_shaping_state fresh = {0};
    cr_assert(sl_shaping_pause(&fresh, T0 + 1));
    cr_assert_eq(fresh.next_free, T0 + 1);
    cr_assert_eq(fresh.expire_at_ms, T0 / 1000 + 1);
}

/* Drives random arrivals through every model; on each denial, probes a
 * copy of the state one microsecond before wait_us (must be denied) and at
 * wait_us (must be admitted). */
Test(all_models, wait_us_is_the_earliest_retry)
{
    srand(11);
    for (int m = 0; m < model_count; m++) {
        const model_ops *ops = &model_list[m];
        int denials = 0;
        for (int seq = 0; seq < 300; seq++) {
            int64_t first = 1 + rand() % 5;
            int64_t second = ops->window ? 1 + rand() % 50 : 1 + rand() % 20000;
            int64_t scale = ops->window ? second * 1000 : SL_JOB / second;
            void *state = model_create(ops, first);
            int64_t now = T0 + rand() % 1000000;
            for (int step = 0; step < 40; step++) {
                now += rand() % 2 ? 0 : rand() % (scale + 1);
                sl_verdict v = ops->admit(state, first, second, now);
                if (v.allowed)
                    continue;
                denials++;
                cr_assert_gt(v.wait_us, 0, "%s: denial with wait_us %" PRId64, ops->script,
                             v.wait_us);
                void *before = model_clone(ops, state);
                void *at = model_clone(ops, state);
                cr_assert_not(ops->admit(before, first, second, now + v.wait_us - 1).allowed,
                              "%s: admitted before wait_us", ops->script);
                cr_assert(ops->admit(at, first, second, now + v.wait_us).allowed,
                          "%s: still denied at wait_us", ops->script);
                model_destroy(ops, before);
                model_destroy(ops, at);
            }
            model_destroy(ops, state);
        }
        cr_assert_gt(denials, 100, "%s: the sequences never denied", ops->script);
    }
}

Test(rate_parsing, accepts_decimals_to_the_milli)
{
    const struct {
        const char *text;
        int64_t milli;
    } good[] = {{"10", 10000}, {"0.5", 500},       {"0.001", 1},           {"3.3330", 3333},
                {"25000", 25000000}, {"1000000", 1000000000}, {"007.25", 7250}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t out = -1;
        cr_assert(sl_parse_rate_milli(good[i].text, &out), "rejected %s", good[i].text);
        cr_assert_eq(out, good[i].milli, "%s -> %" PRId64, good[i].text, out);
    }
}

Test(rate_parsing, rejects_what_is_not_an_exact_rate)
{
    const char *bad[] = {"",    "0",  "0.0001", "abc", "1e3",        "-1", " 5",
                         "5.", ".5", "1000000.001", "12345678", "3.1415", "10/s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t out = -1;
        cr_assert_not(sl_parse_rate_milli(bad[i], &out), "accepted '%s'", bad[i]);
        cr_assert_eq(out, -1);
    }
}

Test(params, errors_name_the_field)
{
    cr_assert_null(sl_bucket_params_error(&(sl_bucket_params){1, 1}));
    cr_assert_str_eq(sl_bucket_params_error(&(sl_bucket_params){0, 1000}),
                     "capacity: must be an integer between 1 and 9000000");
    cr_assert_not_null(strstr(sl_bucket_params_error(&(sl_bucket_params){5, 0}), "rate:"));
    cr_assert_not_null(
        strstr(sl_bucket_params_error(&(sl_bucket_params){SL_CAPACITY_MAX + 1, 5}), "capacity:"));
    cr_assert_null(sl_window_params_error(&(sl_window_params){10000, 86400000}, true));
    cr_assert_not_null(strstr(sl_window_params_error(&(sl_window_params){0, 1000}, false), "max:"));
    cr_assert_not_null(
        strstr(sl_window_params_error(&(sl_window_params){5, 0}, false), "window_ms:"));
    /* The sliding counter's exactness bound applies to it alone. */
    sl_window_params big = {1000000000, 86400000};
    cr_assert_null(sl_window_params_error(&big, false));
    cr_assert_not_null(strstr(sl_window_params_error(&big, true), "2^52"));
}
