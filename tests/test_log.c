/* test_log.c - log lines as JSON (log_json.c): pure, no I/O; and the
 * levels let through. */
#include <criterion/criterion.h>

#include "base/log.h"
#include "base/log_json.h"

/* Criterion forks each test: the level set here stays in its process. */
Test(log_level, off_lets_nothing_through)
{
    sl_log_setup(SL_LOG_WARNING, false, false);
    cr_assert(sl_log_enabled(SL_LOG_ERROR));
    cr_assert(sl_log_enabled(SL_LOG_WARNING));
    cr_assert_not(sl_log_enabled(SL_LOG_INFO));
    sl_log_setup(SL_LOG_OFF, false, false);
    cr_assert_not(sl_log_enabled(SL_LOG_ERROR), "not even errors");
    sl_log_setup(SL_LOG_DEBUG, false, false);
    cr_assert_not(sl_log_enabled(SL_LOG_OFF), "OFF is no level to write at");
}

Test(log_json, fields_become_an_object)
{
    char out[512];
    cr_assert(sl_log_kv_to_json("level=info msg=\"redis ready\" scripts=2 tenant=acme", out,
                                sizeof out));
    cr_assert_str_eq(out, "{\"level\":\"info\",\"msg\":\"redis ready\",\"scripts\":2,\"tenant\":\"acme\"}");
}

Test(log_json, quoting_and_escapes)
{
    char out[512];
    cr_assert(sl_log_kv_to_json("msg=\"said \\\"no\\\" \\\\ then\" n=-12 x=1.5 path=a\"b", out,
                                sizeof out));
    cr_assert_str_eq(out, "{\"msg\":\"said \\\"no\\\" \\\\ then\",\"n\":-12,\"x\":\"1.5\",\"path\":\"a\\\"b\"}");
    cr_assert(sl_log_kv_to_json("msg=\"tab\there\"", out, sizeof out));
    cr_assert_str_eq(out, "{\"msg\":\"tab\\u0009here\"}");
}

Test(log_json, refuses_what_is_not_key_value)
{
    char out[512];
    cr_assert_not(sl_log_kv_to_json("just words", out, sizeof out));
    cr_assert_not(sl_log_kv_to_json("msg=\"unterminated", out, sizeof out));
    char tiny[8];
    cr_assert_not(sl_log_kv_to_json("level=info msg=long", tiny, sizeof tiny), "does not fit");
    cr_assert(sl_log_kv_to_json("", out, sizeof out));
    cr_assert_str_eq(out, "{}");
}
