/* config_file.c - see config_file.h. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "config_file.h"

void config_file_vwrite(const char *path, const char *redis_url, const char *members,
                        const char *tenants_format, va_list ap)
{
    char *tenants = NULL;
    cr_assert_geq(vasprintf(&tenants, tenants_format, ap), 0, "tenants of %s", path);
    /* written whole, then renamed: a daemon reloading never reads half a file */
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    cr_assert_not_null(f, "cannot write %s", tmp);
    fprintf(f, "{\"redis\": \"%s\", %s\n \"tenants\": %s}\n", redis_url, members, tenants);
    cr_assert_eq(fclose(f), 0, "cannot write %s", tmp);
    cr_assert_eq(rename(tmp, path), 0, "cannot rename %s", tmp);
    free(tenants);
}

void config_file_write(const char *path, const char *redis_url, const char *members,
                       const char *tenants_format, ...)
{
    va_list ap;
    va_start(ap, tenants_format);
    config_file_vwrite(path, redis_url, members, tenants_format, ap);
    va_end(ap);
}

const char *config_file_daemon(const char *dir, int redis_port, const char *tenants_format, ...)
{
    static char path[128];
    char url[64];
    snprintf(path, sizeof path, "%s/sluice.json", dir);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", redis_port);
    va_list ap;
    va_start(ap, tenants_format);
    config_file_vwrite(path, url, CONFIG_DAEMON_MEMBERS, tenants_format, ap);
    va_end(ap);
    return path;
}
