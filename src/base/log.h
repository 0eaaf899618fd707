/* log.h - one line per event to stderr: level plus key=value fields.
 *
 * The level and format are set once by main before any thread starts and
 * only read afterwards. SL_LOG checks the level before the arguments are
 * evaluated, so a debug line costs nothing when debug is off. */
#ifndef SLUICE_LOG_H
#define SLUICE_LOG_H

#include <stdbool.h>

/* SL_LOG_OFF only as sl_log_setup's level: nothing is written (the
 * commands that report every failure in their own words). */
typedef enum {
    SL_LOG_OFF = -1,
    SL_LOG_ERROR,
    SL_LOG_WARNING,
    SL_LOG_INFO,
    SL_LOG_DEBUG
} sl_log_level;

/* Sets the most verbose level written, whether to prefix lines with the
 * syslog level "<N>" that journald understands (when under systemd), and
 * whether to write each line as a JSON object instead of key=value. */
void sl_log_setup(sl_log_level level, bool syslog_prefix, bool json);
bool sl_log_enabled(sl_log_level level);
/* Writes one line: "level=info msg=... <fields>" (fields preformatted). */
void sl_log_write(sl_log_level level, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

#define SL_LOG(level, ...)                                                                         \
    do {                                                                                           \
        if (sl_log_enabled(level))                                                                 \
            sl_log_write(level, __VA_ARGS__);                                                      \
    } while (0)

#endif
