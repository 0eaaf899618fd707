/* fuzz_redis_url.c - the Redis URL parser (sl_redis_target_parse) and its
 * printing for logs (sl_redis_target_redacted).
 *
 * Input: the URL (NULs cut it short, as in a C string).
 *
 * Checked, beyond memory safety and leaks: the redacted form never holds
 * the password. Said precisely, so that a password that happens to read
 * like part of the host ("6379", "r") is no false alarm: the redacted form
 * does not depend on the password at all (it is the same with other
 * passwords), so it tells nothing of it. It parses back to the same target
 * with the password "***". A refusal leaves the target zeroed and an error
 * that starts "redis: " and does not quote the URL's password (see
 * check_error_hides_password). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/redis_url.h"
#include "violation.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_redacted(const sl_redis_target *t)
{
    char *redacted = sl_redis_target_redacted(t);
    if (!redacted)
        return; /* out of memory */
    if (t->password) {
        sl_redis_target other = *t;
        other.password = (char *)(uintptr_t)"a-different-password";
        char *with_other = sl_redis_target_redacted(&other);
        if (with_other) {
            if (strcmp(redacted, with_other) != 0)
                sl_fuzz_violation("redacted form depends on the password: %s vs %s", redacted, with_other);
            free(with_other);
        }
        other.password = (char *)(uintptr_t)"x";
        char *with_short = sl_redis_target_redacted(&other);
        if (with_short) {
            if (strcmp(redacted, with_short) != 0)
                sl_fuzz_violation("redacted form depends on the password: %s vs %s", redacted, with_short);
            free(with_short);
        }
    }
    /* Printed back, it reads as the same target (password masked). */
    sl_redis_target back;
    char err[256];
    if (!sl_redis_target_parse(redacted, &back, err, sizeof err))
        sl_fuzz_violation("redacted form %s does not parse back: %s", redacted, err);
    if (!same_text(back.host, t->host) || back.port != t->port ||
        !same_text(back.unix_path, t->unix_path) || !same_text(back.username, t->username) ||
        back.db != t->db || (t->password ? !same_text(back.password, "***") : back.password != NULL))
        sl_fuzz_violation("redacted form %s parses back to another target", redacted);
    sl_redis_target_clear(&back);
    free(redacted);
}

/* A letter or digit turned into another of its kind; anything else kept,
 * so the URL changed this way parses along the same path. */
static char other_of_its_kind(char c)
{
    if (c >= 'a' && c <= 'z')
        return c == 'z' ? 'a' : (char)(c + 1);
    if (c >= 'A' && c <= 'Z')
        return c == 'Z' ? 'A' : (char)(c + 1);
    if (c >= '0' && c <= '9')
        return c == '9' ? '0' : (char)(c + 1);
    return c;
}

/* A refusal's error must not quote the URL's password: from the first ':'
 * after "//" to the last '@', checked for passwords of 12 bytes or more.
 * An error that merely contains those bytes (a fixed message such as
 * "...host:port,... or redis-sentinel://..." that a fuzzed password
 * copied) is no leak: it leaks only if the error of the same URL with
 * the password's letters and digits changed quotes the changed password. */
static void check_error_hides_password(const char *url, size_t size, const char *err)
{
    const char *slashes = strstr(url, "//");
    const char *at = strrchr(url, '@');
    const char *colon = slashes && at > slashes ? memchr(slashes, ':', (size_t)(at - slashes)) : NULL;
    if (!colon || at - colon <= 12)
        return;
    const char *password = colon + 1;
    size_t password_len = (size_t)(at - password);
    if (!memmem(err, strlen(err), password, password_len))
        return;
    char *changed = malloc(size + 1);
    if (!changed)
        return;
    memcpy(changed, url, size + 1);
    char *changed_password = changed + (password - url);
    for (size_t i = 0; i < password_len; i++)
        changed_password[i] = other_of_its_kind(password[i]);
    sl_redis_target t;
    char changed_err[256];
    changed_err[0] = '\0';
    if (sl_redis_target_parse(changed, &t, changed_err, sizeof changed_err))
        sl_redis_target_clear(&t);
    else if (memmem(changed_err, strlen(changed_err), changed_password, password_len))
        sl_fuzz_violation("error quotes the password: %s", err);
    free(changed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *url = malloc(size + 1);
    if (!url)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';
    sl_redis_target t;
    memset(&t, 0x5a, sizeof t);
    char err[256];
    err[0] = '\0';
    if (sl_redis_target_parse(url, &t, err, sizeof err)) {
        check_redacted(&t);
        sl_redis_target_clear(&t);
    } else {
        if (t.host || t.port || t.unix_path || t.username || t.password || t.db)
            sl_fuzz_violation("a refused URL left the target set");
        if (strncmp(err, "redis: ", 7) != 0)
            sl_fuzz_violation("error does not start with \"redis: \": %s", err);
        check_error_hides_password(url, size, err);
    }
    free(url);
    return 0;
}
