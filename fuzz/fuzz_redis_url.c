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
 * that starts "redis: " and does not quote the URL's password (checked
 * for passwords of 12 bytes or more, which no message says by chance). */
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
        /* The password: from the first ':' after "//" to the last '@'. */
        const char *slashes = strstr(url, "//");
        const char *at = strrchr(url, '@');
        const char *colon = slashes && at > slashes ? memchr(slashes, ':', (size_t)(at - slashes)) : NULL;
        if (colon && at - colon > 12 && memmem(err, strlen(err), colon + 1, (size_t)(at - colon - 1)))
            sl_fuzz_violation("error quotes the password: %s", err);
    }
    free(url);
    return 0;
}
