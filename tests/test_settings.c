/* test_settings.c - admission/settings.c, the C model of how a claim
 * applies the fleet's settings over the file's values (lua/claim.lua's
 * Settings; test_claim.c checks the two agree). Pure: no Redis, no clock. */
#include <criterion/criterion.h>

#include "admission/settings.h"

static const sl_settings_file FILE_VALUES = {.rate_milli = 10000, .capacity = 1000,
                                             .concurrency = 16};

Test(settings, without_settings_the_file_holds)
{
    sl_settings s = {0};
    sl_settings_effective e = sl_settings_apply(&s, &FILE_VALUES, 1000);
    cr_assert_eq(e.rate_milli, 10000);
    cr_assert_eq(e.rate_source, SL_RATE_FILE);
    cr_assert_eq(e.capacity, 1000);
    cr_assert_not(e.capacity_overridden);
    cr_assert_eq(e.concurrency, 16);
    cr_assert_not(e.concurrency_overridden);
    cr_assert_not(e.paused);
}

Test(settings, overrides_beat_the_file_field_by_field)
{
    sl_settings s = {.rate_milli = 20000, .concurrency = 8};
    sl_settings_effective e = sl_settings_apply(&s, &FILE_VALUES, 0);
    cr_assert_eq(e.rate_milli, 20000);
    cr_assert_eq(e.rate_source, SL_RATE_OVERRIDE);
    cr_assert_eq(e.concurrency, 8);
    cr_assert(e.concurrency_overridden);
    cr_assert_eq(e.capacity, 1000, "capacity not overridden");
}

Test(settings, the_adaptive_rate_needs_an_adaptive_tenant_and_stays_within_its_bounds)
{
    sl_settings s = {.adaptive_rate_milli = 300000};
    sl_settings_file file = FILE_VALUES;
    cr_assert_eq(sl_settings_apply(&s, &file, 0).rate_source, SL_RATE_FILE, "not adaptive");
    file.adaptive_min_milli = 5000;
    file.adaptive_max_milli = 200000;
    sl_settings_effective e = sl_settings_apply(&s, &file, 0);
    cr_assert_eq(e.rate_source, SL_RATE_ADAPTIVE);
    cr_assert_eq(e.rate_milli, 200000, "max");
    s.adaptive_rate_milli = 1000;
    cr_assert_eq(sl_settings_apply(&s, &file, 0).rate_milli, 5000, "min");
    s.rate_milli = 7000;
    e = sl_settings_apply(&s, &file, 0);
    cr_assert_eq(e.rate_source, SL_RATE_OVERRIDE, "an override beats the adaptive rate");
    cr_assert_eq(e.rate_milli, 7000);
}

Test(settings, paused_while_paused_until_lies_ahead)
{
    sl_settings s = {.paused_until_ms = 5000};
    cr_assert(sl_settings_apply(&s, &FILE_VALUES, 4999).paused);
    cr_assert_not(sl_settings_apply(&s, &FILE_VALUES, 5000).paused, "over at its end");
    s.paused_until_ms = SL_PAUSED_FOREVER_MS;
    cr_assert(sl_settings_apply(&s, &FILE_VALUES, INT64_C(4102444800000)).paused);
}

Test(settings, fields_are_positive_decimal_integers_of_at_most_15_digits)
{
    cr_assert_eq(sl_settings_field("12"), 12);
    cr_assert_eq(sl_settings_field("999999999999999"), INT64_C(999999999999999));
    const char *bad[] = {NULL, "", "0", "-5", "1e3", "12x", " 12", "0x10", "1.5",
                         "9999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(sl_settings_field(bad[i]), 0, "%s", bad[i] ? bad[i] : "NULL");
}

Test(settings, sources_have_names_both_ways)
{
    for (int s = SL_RATE_FILE; s <= SL_RATE_ADAPTIVE; s++) {
        sl_rate_source back = SL_RATE_FILE;
        cr_assert(sl_rate_source_parse(sl_rate_source_name((sl_rate_source)s), &back));
        cr_assert_eq(back, (sl_rate_source)s);
    }
    sl_rate_source out = SL_RATE_ADAPTIVE;
    cr_assert_not(sl_rate_source_parse("pause", &out));
    cr_assert_eq(out, SL_RATE_ADAPTIVE, "left alone");
}
