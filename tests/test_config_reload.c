/* test_config_reload.c - what a SIGHUP may change in a running daemon
 * (config/config_reload.h): settings that need a restart block a reload. */
#include <criterion/criterion.h>
#include <string.h>

#include "base/errors.h"
#include "config/config.h"
#include "config/config_reload.h"

static sl_config *parse(const char *json)
{
    sl_errors errors;
    sl_errors_init(&errors);
    sl_config *cfg = sl_config_parse(json, NULL, &errors);
    cr_assert_not_null(cfg, "%s", errors.count ? errors.items[0] : "?");
    sl_errors_clear(&errors);
    return cfg;
}

Test(config_reload, only_restart_settings_block_a_reload)
{
    sl_config *running = parse("{\"redis\": \"redis://:pw@127.0.0.1:6379/0\", \"workers\": 2,"
                               " \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 5}}}");
    sl_config *rates = parse("{\"redis\": \"redis://:pw@127.0.0.1:6379/0\", \"workers\": 2,"
                             " \"tenants\": {\"a\": {\"endpoint\": \"http://h/x\", \"rate\": 50},"
                             " \"b\": {\"endpoint\": \"http://h/\", \"rate\": 1}}}");
    sl_config *moved = parse("{\"redis\": \"redis://:other@127.0.0.1:6379/0\", \"workers\": 3,"
                             " \"prefix\": \"p\", \"admin\": null,"
                             " \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 5}}}");
    char why[128];
    cr_assert_eq(sl_config_reload_blockers(running, rates, why, sizeof why), 0, "%s", why);
    cr_assert_str_eq(why, "");
    cr_assert_eq(sl_config_reload_blockers(running, moved, why, sizeof why), 4);
    cr_assert_str_eq(why, "redis, prefix, workers, admin");
    cr_assert_null(strstr(why, "other"), "the password is compared, never shown");
    sl_config_free(running);
    sl_config_free(rates);
    sl_config_free(moved);
}

Test(config_reload, tls_settings_need_a_restart)
{
    sl_config *plain = parse("{\"redis\": \"redis://h:6379/0\","
                             " \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 5}}}");
    sl_config *tls = parse("{\"redis\": \"rediss://h:6379/0\","
                           " \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 5}}}");
    sl_config *unverified = parse("{\"redis\": \"rediss://h:6379/0\","
                                  " \"redis_tls\": {\"verify\": false},"
                                  " \"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 5}}}");
    char why[128];
    cr_assert_eq(sl_config_reload_blockers(plain, tls, why, sizeof why), 1);
    cr_assert_str_eq(why, "redis");
    cr_assert_eq(sl_config_reload_blockers(tls, unverified, why, sizeof why), 1);
    cr_assert_str_eq(why, "redis_tls");
    sl_config_free(plain);
    sl_config_free(tls);
    sl_config_free(unverified);
}
