/* config_file.h - the sluice configuration files integration tests write:
 * one shape, {"redis": URL, <members> "tenants": {...}}, for every test
 * file that starts the real binary. */
#ifndef SLUICE_TEST_CONFIG_FILE_H
#define SLUICE_TEST_CONFIG_FILE_H

#include <stdarg.h>

/* The top-level members a test daemon runs with unless a test says
 * otherwise: two workers, no admin endpoint, a 5 s grace. */
#define CONFIG_DAEMON_MEMBERS "\"workers\": 2, \"admin\": null, \"grace_ms\": 5000,"

/* Writes path (replacing it): {"redis": "redis_url", MEMBERS "tenants": T}
 * where members are whole top-level members, each followed by a comma
 * ("" for none), and T is formatted from tenants_format. Fails the test
 * (cr_assert) if the file cannot be written. */
void config_file_write(const char *path, const char *redis_url, const char *members,
                       const char *tenants_format, ...)
    __attribute__((format(printf, 4, 5)));

/* config_file_write with the tenants' arguments in ap. */
void config_file_vwrite(const char *path, const char *redis_url, const char *members,
                        const char *tenants_format, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Writes DIR/sluice.json for a test daemon (the Redis on 127.0.0.1:
 * redis_port, db 0, with CONFIG_DAEMON_MEMBERS) and returns its path, kept
 * until the next call. Fails the test if it cannot. */
const char *config_file_daemon(const char *dir, int redis_port, const char *tenants_format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
