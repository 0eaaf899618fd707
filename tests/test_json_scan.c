/* test_json_scan.c - the strict JSON scanner (job/json_scan.h) on its own:
 * what RFC 8259 refuses and where, the member spans, where the first
 * "\u0000" is, the depth bound, and that it reads only len bytes. Pure. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "job/json_scan.h"

/* Scans a NUL-terminated text from an exact-size copy (ASan sees reads past len). */
static bool scan(const char *text, sl_json_scan *out)
{
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, text, len);
    bool ok = sl_json_scan_text(copy, len, out);
    free(copy);
    cr_assert_eq(ok, out->error == NULL, "%s: result and error disagree", text);
    return ok;
}

static void refused(const char *text, const char *error, size_t at)
{
    sl_json_scan s;
    cr_assert_not(scan(text, &s), "took %s", text);
    cr_assert_str_eq(s.error, error, "%s", text);
    cr_assert_eq(s.error_at, at, "%s: at %zu, expected %zu", text, s.error_at, at);
}

Test(json_scan, takes_any_value_with_surrounding_whitespace)
{
    const char *ok[] = {"0", "-0", "-0.5e-3", "1E+9", "\"\"", "\" \\\" \\\\ \\/ \\b\\f\\n\\r\\t \\uABcd\"",
                        "true", "false", "null", "[]", "{}", " \t\r\n[ 1 , { \"a\" : [ ] } ] \n",
                        "\"caf\xc3\xa9\"", "\"\\ud800\""};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        sl_json_scan s;
        cr_assert(scan(ok[i], &s), "%s: %s at %zu", ok[i], s.error, s.error_at);
    }
    sl_json_scan s;
    cr_assert(scan(" \n [1]", &s));
    cr_assert_eq(s.first, 3, "first is the value's first byte");
    cr_assert_eq(s.members, 0, "an array has no members");
}

Test(json_scan, names_the_first_error_and_where)
{
    refused("", "unexpected end", 0);
    refused("   ", "unexpected end", 3);
    refused("01", "number with a leading zero", 0);
    refused("-", "bad number", 1);
    refused("1.", "bad number", 2);
    refused("1e", "bad number", 2);
    refused("+1", "unexpected character", 0);
    refused("tru", "unexpected character", 0);
    refused("nulls", "trailing data after the JSON value", 4);
    refused("1 2", "trailing data after the JSON value", 2);
    refused("[1,]", "unexpected character", 3);
    refused("[1 2]", "expected ',' or ']'", 3);
    refused("{\"a\":1 \"b\":2}", "expected ',' or '}'", 7);
    refused("{\"a\" 1}", "expected ':'", 5);
    refused("{1:2}", "expected a string key", 1);
    refused("{\"a\":1,}", "expected a string key", 7);
    refused("\"a", "unterminated string", 2);
    refused("\"a\\", "unterminated string", 2);
    refused("[\"\\u12\",0]", "bad \\u escape", 2);
    refused("\"\\u12g4\"", "bad \\u escape", 1);
    refused("\"\\x\"", "bad escape in a string", 1);
    refused("\"a\tb\"", "unescaped control character in a string", 2);
}

Test(json_scan, records_each_top_level_members_value_span)
{
    const char *text = "{ \"a\" : 12 , \"b\":{\"x\": [1, 2]}\t, \"c\":\"s\\\"t\" , \"d\":null}";
    sl_json_scan s;
    cr_assert(scan(text, &s));
    cr_assert_eq(s.members, 4);
    const char *want[] = {"12", "{\"x\": [1, 2]}", "\"s\\\"t\"", "null"};
    for (size_t i = 0; i < 4; i++) {
        sl_json_span v = s.values[i];
        cr_assert_eq(v.end - v.start, strlen(want[i]), "member %zu", i);
        cr_assert_eq(memcmp(text + v.start, want[i], v.end - v.start), 0, "member %zu", i);
    }
}

Test(json_scan, counts_members_beyond_the_recorded_spans)
{
    const char *text = "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9}";
    sl_json_scan s;
    cr_assert(scan(text, &s));
    cr_assert_eq(s.members, 9);
    sl_json_span last = s.values[SL_JSON_SPANS_MAX - 1];
    cr_assert_eq(last.end - last.start, 1);
    cr_assert_eq(text[last.start], '0' + SL_JSON_SPANS_MAX);
}

Test(json_scan, finds_the_first_nul_escape)
{
    sl_json_scan s;
    cr_assert(scan("{\"a\":\"ok\"}", &s));
    cr_assert_not(s.nul_seen);

    cr_assert(scan("{\"a\":1,\"h\":{\"x\":\"ok\",\"y\":\"v\\u0000\"},\"z\":\"\\u0000\"}", &s));
    cr_assert(s.nul_seen);
    cr_assert_not(s.nul_in_top_key);
    cr_assert_eq(s.nul_top, 1);
    cr_assert_eq(s.nul_inner, 1, "the second member of \"h\"");

    cr_assert(scan("{\"ok\":1,\"k\\u0000\":2}", &s));
    cr_assert(s.nul_in_top_key);
    cr_assert_eq(s.nul_top, 1);

    /* A key one level down is not a top-level key. */
    cr_assert(scan("{\"h\":{\"\\u0000\":\"v\"}}", &s));
    cr_assert_not(s.nul_in_top_key);
    cr_assert_eq(s.nul_inner, 0);

    cr_assert(scan("[\"x\",[0,\"\\u0000\"]]", &s));
    cr_assert_eq(s.nul_top, 1, "elements of a top-level array count too");
    cr_assert_eq(s.nul_inner, 1);

    /* "\\u0000" is a backslash then "u0000", no escape of NUL. */
    cr_assert(scan("\"\\\\u0000\"", &s));
    cr_assert_not(s.nul_seen);
}

static char *nested(size_t depth)
{
    char *text = malloc(2 * depth + 1);
    cr_assert_not_null(text);
    memset(text, '[', depth);
    memset(text + depth, ']', depth);
    text[2 * depth] = '\0';
    return text;
}

Test(json_scan, depth_is_bounded)
{
    sl_json_scan s;
    char *deepest = nested(SL_JSON_DEPTH_MAX);
    cr_assert(scan(deepest, &s), "%d levels: %s", SL_JSON_DEPTH_MAX, s.error);
    free(deepest);
    char *deeper = nested(SL_JSON_DEPTH_MAX + 1);
    refused(deeper, "nested too deeply", SL_JSON_DEPTH_MAX);
    free(deeper);
}

Test(json_scan, reads_only_len_bytes)
{
    sl_json_scan s;
    cr_assert(sl_json_scan_text("12garbage", 2, &s));
    cr_assert_not(sl_json_scan_text("{\"a\":1}", 6, &s));
    cr_assert_str_eq(s.error, "expected ',' or '}'");
    cr_assert_not(sl_json_scan_text("\"abc\"", 4, &s));
    cr_assert_str_eq(s.error, "unterminated string");
}

/* Every byte is looked at a bounded number of times: long runs of what
 * each part of the scanner loops over are taken whole (a quadratic scan
 * would still pass, but under the sanitizers it would time out). */
Test(json_scan, long_inputs_in_one_pass)
{
    size_t count = (size_t)1 << 17, len;
    char *text = malloc(count * 6 + 2);
    cr_assert_not_null(text);
    sl_json_scan s;
    /* a string of escapes */
    len = 0;
    text[len++] = '"';
    for (size_t i = 0; i < count; i++, len += 6)
        memcpy(text + len, "\\u0041", 6);
    text[len++] = '"';
    cr_assert(sl_json_scan_text(text, len, &s), "%s", s.error);
    /* a wide array */
    len = 0;
    text[len++] = '[';
    for (size_t i = 0; i < count; i++, len += 2)
        memcpy(text + len, "0,", 2);
    text[len - 1] = ']';
    cr_assert(sl_json_scan_text(text, len, &s), "%s", s.error);
    /* whitespace, then a long number */
    memset(text, ' ', count);
    memset(text + count, '7', count);
    cr_assert(sl_json_scan_text(text, 2 * count, &s), "%s", s.error);
    cr_assert_eq(s.first, count);
    free(text);
}
