/* fuzz_config.c - the configuration loader (sl_config_parse) on the bytes
 * as JSON text, with a fake environment: a few variables and one readable
 * credentials file, so ${ENV} and @file references are exercised without
 * the real process environment or file system.
 *
 * Checked, beyond memory safety and leaks (everything is freed: the config
 * and the error list): a parse returns either a config or at least one
 * error, never both or neither; and no error message, nor the Redis URL as
 * logged, holds a secret value (the variables' and the file's contents),
 * unless the JSON text itself contains that value. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "config/config.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* None starts with a hex digit: an error message escapes a byte as \xNN,
 * and "\xff" + "ile-..." would read as a secret that starts with 'f'. */
static const char *const secrets[] = {"key-9f2c41e7b5", "hunter2-redis-pw", "pem-file-secret-77aa"};

static const char *fake_getenv(void *ctx, const char *name)
{
    (void)ctx;
    if (strcmp(name, "TOKEN") == 0)
        return secrets[0];
    if (strcmp(name, "REDIS_PASSWORD") == 0)
        return secrets[1];
    if (strcmp(name, "EMPTY") == 0)
        return "";
    if (strcmp(name, "CRLF") == 0)
        return "a\r\nInjected: 1";
    return NULL;
}

static char *fake_read_file(void *ctx, const char *path, char *err, size_t err_size)
{
    (void)ctx;
    if (strcmp(path, "/run/credentials/sluice/token") == 0)
        return strdup("pem-file-secret-77aa\n");
    snprintf(err, err_size, "No such file or directory");
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sl_config_env env = {
        .getenv_fn = fake_getenv,
        .read_file_fn = fake_read_file,
        .cpu_count = 2,
    };
    sl_errors errors;
    sl_errors_init(&errors);
    sl_config *cfg = sl_config_parse(text, &env, &errors);
    if ((cfg != NULL) == sl_errors_any(&errors))
        sl_fuzz_violation("a config %s and %zu errors", cfg ? "returned" : "not returned", errors.count);
    for (size_t s = 0; s < sizeof secrets / sizeof secrets[0]; s++) {
        if (strstr(text, secrets[s]))
            continue;
        for (size_t i = 0; i < errors.count; i++)
            if (strstr(errors.items[i], secrets[s]))
                sl_fuzz_violation("secret %s in an error: %s", secrets[s], errors.items[i]);
        if (cfg && cfg->redis_url_redacted && strstr(cfg->redis_url_redacted, secrets[s]))
            sl_fuzz_violation("secret %s in the redacted Redis URL %s", secrets[s], cfg->redis_url_redacted);
    }
    sl_config_free(cfg);
    sl_errors_clear(&errors);
    free(text);
    return 0;
}
