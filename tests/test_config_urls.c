/* test_config_urls.c - how the config words a host[:port] that the one
 * authority parser (base/authority.h) refuses, for endpoint and allow_urls
 * URLs and for the admin address: the edge cases test_config.c does not
 * spell out. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"

static void assert_endpoint(const char *url, const char *msg)
{
    char json[512];
    snprintf(json, sizeof json, "{\"tenants\": {\"a\": {\"endpoint\": \"%s\", \"rate\": 1}}}", url);
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config *cfg = sl_config_parse(json, NULL, &errs);
    if (!msg) {
        cr_assert_not_null(cfg, "%s: %s", url, errs.count ? errs.items[0] : "");
    } else {
        cr_assert_null(cfg, "%s accepted", url);
        cr_assert_eq(errs.count, 1, "%s", url);
        char want[256];
        snprintf(want, sizeof want, "tenants.a.endpoint: %s", msg);
        cr_assert_str_eq(errs.items[0], want);
    }
    sl_config_free(cfg);
    sl_errors_clear(&errs);
}

Test(endpoint, refused_authorities)
{
    const char *colons = "has more than one ':' (an IPv6 address goes in brackets, e.g. "
                         "http://[::1]:8080/)";
    assert_endpoint("http://::1/", colons);
    assert_endpoint("http://h:1:2/", colons);
    assert_endpoint("http://[]/", "has an invalid host");
    assert_endpoint("http://[::1]x/", "has an invalid host");
    assert_endpoint("http://[::1]:/", "has an invalid port (1..65535)");
    assert_endpoint("http://:80/", "must have a host");
    assert_endpoint("http://u@/", "must have a host");
    assert_endpoint("http://u:p@:1/", "must have a host");
}

Test(endpoint, accepted_authorities)
{
    assert_endpoint("http://[::1]/", NULL);
    assert_endpoint("http://[2001:db8::1]:65535/x", NULL);
    assert_endpoint("http://u:p@x@h.example:1/", NULL);
    assert_endpoint("https://h.example.?q", NULL);
}

static sl_config *with_admin(const char *addr, sl_errors *errs)
{
    char json[512];
    snprintf(
        json, sizeof json,
        "{\"admin\": \"%s\", \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 1}}}",
        addr);
    sl_errors_init(errs);
    return sl_config_parse(json, NULL, errs);
}

Test(admin, the_port_is_required_and_ipv6_needs_brackets)
{
    const char *refused[] = {"::1:80",  "[::1]", "h",   "h:",      "[h]:1",      "[::1]x:1",
                             "[::1:80", ":80",   "h:0", "h:65536", "1.2.3.999:1"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        sl_errors errs;
        sl_config *cfg = with_admin(refused[i], &errs);
        cr_assert_null(cfg, "%s accepted", refused[i]);
        cr_assert_eq(errs.count, 1);
        sl_errors_clear(&errs);
    }
    sl_errors errs;
    sl_config *cfg = with_admin("[fe80::1]:65535", &errs);
    cr_assert_not_null(cfg);
    cr_assert_str_eq(cfg->admin_host, "fe80::1");
    cr_assert_eq(cfg->admin_port, 65535);
    sl_config_free(cfg);
    sl_errors_clear(&errs);
}
