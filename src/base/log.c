/* log.c - see log.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/log_json.h"

/* Written once by main before threads start, read-only afterwards. */
static sl_log_level max_level = SL_LOG_INFO;
static bool with_syslog_prefix;
static bool as_json;

void sl_log_setup(sl_log_level level, bool syslog_prefix, bool json)
{
    max_level = level;
    with_syslog_prefix = syslog_prefix;
    as_json = json;
}

bool sl_log_enabled(sl_log_level level)
{
    return level <= max_level && level != SL_LOG_OFF;
}

void sl_log_write(sl_log_level level, const char *format, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    static const int syslog_levels[] = {3, 4, 6, 7};
    char line[2048];
    int used = 0;
    if (with_syslog_prefix)
        used = snprintf(line, sizeof line, "<%d>", syslog_levels[level]);
    used += snprintf(line + used, sizeof line - (size_t)used, "level=%s ", names[level]);
    va_list ap;
    va_start(ap, format);
    vsnprintf(line + used, sizeof line - (size_t)used - 1, format, ap);
    va_end(ap);
    if (as_json) {
        /* The fields, after the syslog prefix, as one JSON object. */
        size_t prefix = with_syslog_prefix ? strcspn(line, ">") + 1 : 0;
        char json[2048 + 512];
        if (sl_log_kv_to_json(line + prefix, json, sizeof json))
            snprintf(line + prefix, sizeof line - prefix - 1, "%s", json);
    }
    size_t len = strlen(line);
    line[len] = '\n';
    /* One write per line so that lines of different threads never mix. */
    fwrite(line, 1, len + 1, stderr);
}
