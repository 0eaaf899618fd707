/* secrets.c - "${NAME}" and "@/file" values (secrets.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"

#define VAR_NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

void sl_secret_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

/* "@/path": the file's content, one trailing "\n" (or "\r\n") stripped. */
static char *read_secret_file(sl_jpath_reader *r, const sl_config_env *env, const char *path,
                              const char *file)
{
    char shown[SL_JPATH_SHOWN_SIZE];
    sl_jpath_escape(shown, sizeof shown, file);
    char err[256] = "";
    char *data = env && env->read_file_fn
                     ? env->read_file_fn(env->ctx, file, err, sizeof err)
                     : (snprintf(err, sizeof err, "file reading is not available"), NULL);
    if (!data) {
        sl_jpath_fail(r, path, "cannot read secret file %s: %s", shown,
                      err[0] ? err : "unknown error");
        return NULL;
    }
    size_t len = strlen(data);
    if (len > 0 && data[len - 1] == '\n') {
        data[--len] = '\0';
        if (len > 0 && data[len - 1] == '\r')
            data[--len] = '\0';
    }
    if (len == 0) {
        sl_jpath_fail(r, path, "secret file %s is empty", shown);
        free(data);
        return NULL;
    }
    return data;
}

/* raw with each "${NAME}" replaced; every unset or empty variable is
 * reported, a malformed reference stops the scan. */
static char *expand_variables(sl_jpath_reader *r, const sl_config_env *env, const char *path,
                              const char *raw)
{
    char *buf = NULL;
    size_t buf_len = 0;
    FILE *f = open_memstream(&buf, &buf_len);
    if (!f) {
        r->oom = true;
        return NULL;
    }
    bool ok = true;
    const char *p = raw, *ref;
    while ((ref = strstr(p, "${")) != NULL) {
        fwrite(p, 1, (size_t)(ref - p), f);
        const char *name = ref + 2;
        size_t n = strspn(name, VAR_NAME_CHARS);
        if (n == 0 || name[n] != '}' || (name[0] >= '0' && name[0] <= '9')) {
            sl_jpath_fail(r, path,
                          "invalid reference: expected ${NAME}, NAME of [A-Za-z_][A-Za-z0-9_]*");
            ok = false;
            break;
        }
        char *var = strndup(name, n);
        if (!var) {
            r->oom = true;
            ok = false;
            break;
        }
        const char *value = env && env->getenv_fn ? env->getenv_fn(env->ctx, var) : NULL;
        if (!value) {
            sl_jpath_fail(r, path, "environment variable %s is not set", var);
            ok = false;
        } else if (!*value) {
            sl_jpath_fail(r, path, "environment variable %s is empty", var);
            ok = false;
        } else {
            fputs(value, f);
        }
        free(var);
        p = name + n + 1;
    }
    if (ok)
        fputs(p, f);
    if (fclose(f) != 0) {
        r->oom = true;
        ok = false;
    }
    if (!ok) {
        sl_secret_free(buf);
        return NULL;
    }
    return buf;
}

char *sl_secret_resolve(sl_jpath_reader *r, const sl_config_env *env, const char *path,
                        const char *raw, bool *secret)
{
    *secret = false;
    if (raw[0] == '@' && raw[1] == '/') {
        *secret = true;
        return read_secret_file(r, env, path, raw + 1);
    }
    if (!strstr(raw, "${")) {
        char *copy = strdup(raw);
        if (!copy)
            r->oom = true;
        return copy;
    }
    *secret = true;
    return expand_variables(r, env, path, raw);
}
