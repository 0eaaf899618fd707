/* The one host[:port] parser (src/base/authority.h): names, IPv4, bracketed
 * IPv6, ports, and each way an authority is refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/authority.h"

static sl_authority_status parse(const char *text, sl_authority *out)
{
    return sl_authority_parse(text, strlen(text), out);
}

Test(authority, a_name_with_a_port)
{
    sl_authority a;
    cr_assert_eq(parse("redis.internal:6380", &a), SL_AUTHORITY_OK);
    cr_assert_str_eq(a.host, "redis.internal");
    cr_assert_eq(a.port, 6380);
    cr_assert_not(a.bracketed);
}

Test(authority, no_port_is_port_zero)
{
    sl_authority a;
    cr_assert_eq(parse("127.0.0.1", &a), SL_AUTHORITY_OK);
    cr_assert_str_eq(a.host, "127.0.0.1");
    cr_assert_eq(a.port, 0);
}

Test(authority, a_bracketed_ipv6_address_loses_its_brackets)
{
    sl_authority a;
    cr_assert_eq(parse("[::1]:9464", &a), SL_AUTHORITY_OK);
    cr_assert_str_eq(a.host, "::1");
    cr_assert_eq(a.port, 9464);
    cr_assert(a.bracketed);
    cr_assert_eq(parse("[fe80::1]", &a), SL_AUTHORITY_OK);
    cr_assert_eq(a.port, 0);
}

Test(authority, each_refusal_has_its_own_status)
{
    sl_authority a;
    cr_assert_eq(parse("", &a), SL_AUTHORITY_NO_HOST);
    cr_assert_eq(parse(":80", &a), SL_AUTHORITY_NO_HOST);
    cr_assert_eq(parse("[::1", &a), SL_AUTHORITY_UNCLOSED_BRACKET);
    cr_assert_eq(parse("[::1]80", &a), SL_AUTHORITY_AFTER_BRACKET);
    cr_assert_eq(parse("::1", &a), SL_AUTHORITY_UNBRACKETED_V6);
    cr_assert_eq(parse("fe80::1:80", &a), SL_AUTHORITY_UNBRACKETED_V6);
    cr_assert_eq(parse("[example.com]:80", &a), SL_AUTHORITY_BAD_HOST);
    cr_assert_eq(parse("exa mple.com", &a), SL_AUTHORITY_BAD_HOST);
    cr_assert_eq(parse("1.2.3.999", &a), SL_AUTHORITY_BAD_HOST);
    cr_assert_eq(parse("-a.example", &a), SL_AUTHORITY_BAD_HOST);
    cr_assert_eq(parse("a.example:", &a), SL_AUTHORITY_BAD_PORT);
    cr_assert_eq(parse("a.example:0", &a), SL_AUTHORITY_BAD_PORT);
    cr_assert_eq(parse("a.example:65536", &a), SL_AUTHORITY_BAD_PORT);
    cr_assert_eq(parse("a.example:+80", &a), SL_AUTHORITY_BAD_PORT);
}

Test(authority, only_the_given_length_is_read)
{
    sl_authority a;
    const char *url_rest = "a.example:8080/path:9";
    cr_assert_eq(sl_authority_parse(url_rest, strlen("a.example:8080"), &a), SL_AUTHORITY_OK);
    cr_assert_eq(a.port, 8080);
}

Test(authority, a_host_longer_than_a_dns_name_is_refused)
{
    char text[300];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    sl_authority a;
    cr_assert_eq(parse(text, &a), SL_AUTHORITY_BAD_HOST);
}

Test(authority, every_status_has_a_text)
{
    for (int s = SL_AUTHORITY_OK; s <= SL_AUTHORITY_BAD_PORT; s++)
        cr_assert_gt(strlen(sl_authority_status_text((sl_authority_status)s)), 0);
    cr_assert_str_eq(sl_authority_status_text(SL_AUTHORITY_BAD_PORT), "has an invalid port (1..65535)");
}
