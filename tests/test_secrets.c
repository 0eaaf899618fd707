/* test_secrets.c - "${NAME}" and "@/file" values, resolved through an
 * environment the test passes in; what is reported when they cannot be,
 * and that a secret's value never appears in a message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/secrets.h"

#define SECRET "s3cr3t"

static const char *const vars[][2] = {
    {"TOKEN", SECRET}, {"USER", "bob"}, {"EMPTY", ""}, {NULL, NULL}};
static const char *const files[][2] = {{"/run/tok", SECRET "\n"},   {"/run/crlf", SECRET "\r\n"},
                                       {"/run/two", SECRET "\n\n"}, {"/run/bare", SECRET},
                                       {"/run/empty", "\n"},        {NULL, NULL}};

static const char *test_getenv(void *ctx, const char *name)
{
    (void)ctx;
    for (int i = 0; vars[i][0]; i++) {
        if (strcmp(vars[i][0], name) == 0)
            return vars[i][1];
    }
    return NULL;
}

static char *test_read_file(void *ctx, const char *path, char *err, size_t err_size)
{
    (void)ctx;
    for (int i = 0; files[i][0]; i++) {
        if (strcmp(files[i][0], path) == 0)
            return strdup(files[i][1]);
    }
    snprintf(err, err_size, "No such file or directory");
    return NULL;
}

static const sl_config_env env = {test_getenv, test_read_file, NULL, 1};

typedef struct outcome {
    char *value;
    bool secret;
    sl_errors errors;
} outcome;

static outcome resolve(const sl_config_env *e, const char *raw)
{
    outcome o;
    sl_errors_init(&o.errors);
    sl_jpath_reader r = {.errors = &o.errors, .oom = false};
    o.secret = true; /* a plain value must set it back to false */
    o.value = sl_secret_resolve(&r, e, "h.X", raw, &o.secret);
    cr_assert_not(r.oom);
    for (size_t i = 0; i < o.errors.count; i++)
        cr_assert_null(strstr(o.errors.items[i], SECRET), "leaked: %s", o.errors.items[i]);
    return o;
}

static void done(outcome *o)
{
    sl_secret_free(o->value);
    sl_errors_clear(&o->errors);
}

static void assert_value(const char *raw, const char *value, bool secret)
{
    outcome o = resolve(&env, raw);
    cr_assert_eq(o.errors.count, 0, "%s: %s", raw, o.errors.count ? o.errors.items[0] : "");
    cr_assert_not_null(o.value, "%s", raw);
    cr_assert_str_eq(o.value, value, "%s", raw);
    cr_assert_eq(o.secret, secret, "%s", raw);
    done(&o);
}

static void assert_refused(const sl_config_env *e, const char *raw, size_t n,
                           const char *const *msgs)
{
    outcome o = resolve(e, raw);
    cr_assert_null(o.value, "%s", raw);
    cr_assert_eq(o.errors.count, n, "%s: %zu errors, first %s", raw, o.errors.count,
                 o.errors.count ? o.errors.items[0] : "");
    for (size_t i = 0; i < n; i++)
        cr_assert_str_eq(o.errors.items[i], msgs[i]);
    done(&o);
}

Test(secrets, plain_values_are_copied_and_not_secret)
{
    assert_value("Bearer abc", "Bearer abc", false);
    assert_value("", "", false);
    assert_value("$TOKEN and {TOKEN} and $ {x}", "$TOKEN and {TOKEN} and $ {x}", false);
    assert_value("a@/b", "a@/b", false); /* only a leading "@/" names a file */
}

Test(secrets, variables_anywhere_in_a_value)
{
    assert_value("${TOKEN}", SECRET, true);
    assert_value("Bearer ${TOKEN}", "Bearer " SECRET, true);
    assert_value("${USER}:${TOKEN}!", "bob:" SECRET "!", true);
}

Test(secrets, files_lose_one_trailing_newline)
{
    assert_value("@/run/tok", SECRET, true);
    assert_value("@/run/crlf", SECRET, true);
    assert_value("@/run/two", SECRET "\n", true);
    assert_value("@/run/bare", SECRET, true);
}

Test(secrets, every_unset_or_empty_variable_is_reported)
{
    const char *const msgs[] = {"h.X: environment variable NOPE is not set",
                                "h.X: environment variable EMPTY is empty"};
    assert_refused(&env, "${NOPE}-${TOKEN}-${EMPTY}", 2, msgs);
}

Test(secrets, malformed_references)
{
    const char *const msg = "h.X: invalid reference: expected ${NAME}, NAME of "
                            "[A-Za-z_][A-Za-z0-9_]*";
    const char *bad[] = {"${}", "${1A}", "${A-B}", "${TOKEN", "x ${ TOKEN}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_refused(&env, bad[i], 1, &msg);
}

Test(secrets, unreadable_and_empty_files)
{
    const char *const missing = "h.X: cannot read secret file /run/nope: No such file or directory";
    assert_refused(&env, "@/run/nope", 1, &missing);
    const char *const empty = "h.X: secret file /run/empty is empty";
    assert_refused(&env, "@/run/empty", 1, &empty);
    const char *const odd =
        "h.X: cannot read secret file /run/\\x0a\\\"x: No such file or directory";
    assert_refused(&env, "@/run/\n\"x", 1, &odd);
}

Test(secrets, without_an_environment_nothing_is_set_or_readable)
{
    const char *const var = "h.X: environment variable TOKEN is not set";
    assert_refused(NULL, "${TOKEN}", 1, &var);
    const char *const file = "h.X: cannot read secret file /run/tok: file reading is not available";
    assert_refused(NULL, "@/run/tok", 1, &file);
    sl_config_env none = {0};
    assert_refused(&none, "${TOKEN}", 1, &var);
    assert_refused(&none, "@/run/tok", 1, &file);
}

Test(secrets, free_accepts_null)
{
    sl_secret_free(NULL);
    char *s = strdup("x");
    cr_assert_not_null(s);
    sl_secret_free(s);
}
