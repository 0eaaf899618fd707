/* test_log.c - log lines as JSON (log_json.c): pure, no I/O. */
#include <criterion/criterion.h>

#include "base/log_json.h"

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
