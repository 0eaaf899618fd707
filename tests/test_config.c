/* test_config.c - the configuration file: values, defaults, and the exact
 * path-prefixed message of every kind of mistake. No real environment or
 * files: a fake sl_config_env serves both. JSON is written with single
 * quotes (turned into double quotes before parsing) to stay readable. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admission/admission.h"
#include "config/config.h"
#include "base/errors.h"
#include "config/redis_url.h"

#define SECRET "s3cr3t-T0ken"

/* ---- fake environment ---------------------------------------------- */

#define FAKE_FILES 16

typedef struct fake_env {
    const char *vars[8][2];  /* name, value */
    const char *files[FAKE_FILES][2]; /* path, content */
} fake_env;

static const char *fake_getenv(void *ctx, const char *name)
{
    fake_env *f = ctx;
    for (int i = 0; i < 8 && f->vars[i][0]; i++) {
        if (strcmp(f->vars[i][0], name) == 0)
            return f->vars[i][1];
    }
    return NULL;
}

static char *fake_read_file(void *ctx, const char *path, char *err, size_t err_size)
{
    fake_env *f = ctx;
    for (int i = 0; i < FAKE_FILES && f->files[i][0]; i++) {
        if (strcmp(f->files[i][0], path) == 0)
            return strdup(f->files[i][1]);
    }
    snprintf(err, err_size, "No such file or directory");
    return NULL;
}

static fake_env default_fake = {
    .vars = {{"ACME_TOKEN", "Bearer " SECRET}, {"EMPTY", ""}, {"REDIS_PW", SECRET}},
    .files = {{"/run/credentials/token", SECRET "\n"},
              {"/run/credentials/crlf", SECRET "\r\n"},
              {"/run/credentials/two-newlines", SECRET "\n\n"},
              {"/run/credentials/empty", "\n"},
              {"/run/credentials/redis-url", "redis://:" SECRET "@db.example:6390/1\n"},
              {"/etc/sluice/ca.pem", "-----BEGIN CERTIFICATE-----\n"},
              {"/etc/sluice/ok.json",
               "{\"tenants\": {\"a\": {\"endpoint\": \"http://h/\", \"rate\": 1}}}"},
              {"/tls/ca.pem", "-----BEGIN CERTIFICATE-----\n"},
              {"/tls/client.key", "-----BEGIN PRIVATE KEY-----\n"}},
};

static sl_config_env fake(int cpus)
{
    return (sl_config_env){fake_getenv, fake_read_file, &default_fake, cpus};
}

/* ---- helpers ----------------------------------------------------------- */

/* s with every ' turned into " (malloc'd). */
static char *dq(const char *s)
{
    char *d = strdup(s);
    cr_assert_not_null(d);
    for (char *p = d; *p; p++) {
        if (*p == '\'')
            *p = '"';
    }
    return d;
}

static sl_config *parse_with(const char *single_quoted, sl_errors *errs, int cpus)
{
    char *json = dq(single_quoted);
    sl_config_env env = fake(cpus);
    sl_config *cfg = sl_config_parse(json, &env, errs);
    free(json);
    return cfg;
}

static char *joined(const sl_errors *e)
{
    size_t len = 1;
    for (size_t i = 0; i < e->count; i++)
        len += strlen(e->items[i]) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < e->count; i++) {
        strcat(s, e->items[i]);
        strcat(s, "\n");
    }
    return s;
}

/* Parses a config that must be valid. */
static sl_config *ok(const char *single_quoted)
{
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config *cfg = parse_with(single_quoted, &errs, 4);
    char *all = joined(&errs);
    cr_assert_not_null(cfg, "rejected %s:\n%s", single_quoted, all);
    cr_assert_eq(errs.count, 0);
    free(all);
    sl_errors_clear(&errs);
    return cfg;
}

/* Parses a config that must fail with exactly the given messages (NULL
 * terminated, any order). */
static void bad(const char *single_quoted, ...)
{
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config *cfg = parse_with(single_quoted, &errs, 4);
    char *all = joined(&errs);
    cr_assert_null(cfg, "accepted %s", single_quoted);
    va_list ap;
    va_start(ap, single_quoted);
    size_t expected = 0;
    for (const char *msg; (msg = va_arg(ap, const char *)) != NULL; expected++) {
        bool found = false;
        for (size_t i = 0; i < errs.count && !found; i++)
            found = strcmp(errs.items[i], msg) == 0;
        cr_assert(found, "%s\nmissing: %s\ngot:\n%s", single_quoted, msg, all);
    }
    va_end(ap);
    cr_assert_eq(errs.count, expected, "%s\nexpected %zu errors, got:\n%s", single_quoted,
                 expected, all);
    cr_assert_eq(errs.dropped, 0);
    free(all);
    sl_errors_clear(&errs);
}

/* One tenant "acme" with the required keys, plus `extra` (",'k': v...");
 * TENANTS is the same without the opening brace, to follow other keys. */
#define TENANTS(extra)                                                                             \
    "'tenants': {'acme': {'endpoint': 'https://x.example/hook', 'rate': 10" extra "}}}"
#define ACME(extra) "{" TENANTS(extra)
/* acme with one limit whose members are `members`. */
#define LIMIT(members) ACME(", 'limits': [{'name': 'l', " members "}]")

/* ---- the SPEC example and defaults -------------------------------------- */

static const char spec_example[] =
    "{"
    "  'redis': 'redis://127.0.0.1:6379/0',"
    "  'prefix': 'sluice',"
    "  'workers': 2,"
    "  'admin': '127.0.0.1:9464',"
    "  'tenants': {"
    "    'acme': {"
    "      'endpoint': 'https://api.partner.example/v1/hook',"
    "      'rate': 10,"
    "      'capacity': 1000,"
    "      'overflow': 'wait',"
    "      'concurrency': 16,"
    "      'timeout_ms': 5000,"
    "      'retry': {'max_attempts': 5, 'base_ms': 500, 'max_ms': 60000},"
    "      'headers': {'Authorization': '${ACME_TOKEN}', 'X-Tenant': 'acme'},"
    "      'format': 'envelope',"
    "      'allow_urls': [],"
    "      'max_wait_ms': 0,"
    "      'limits': ["
    "        {'name': 'daily', 'type': 'fixed_window', 'max': 10000,"
    "         'window_ms': 86400000, 'on_deny': 'dead-letter'},"
    "        {'name': 'minute', 'type': 'sliding_window_log', 'max': 300,"
    "         'window_ms': 60000, 'on_deny': 'delay'}"
    "      ]"
    "    },"
    "    '*': {'endpoint': 'http://127.0.0.1:8080/hook', 'rate': 100}"
    "  }"
    "}";

static void check_tenant_defaults(const sl_tenant_config *t)
{
    cr_assert_eq(t->capacity, 1000);
    cr_assert_eq(t->overflow, SL_OVERFLOW_WAIT);
    cr_assert_eq(t->concurrency, 16);
    cr_assert_eq(t->timeout_ms, 5000);
    cr_assert_eq(t->retry.max_attempts, 5);
    cr_assert_eq(t->retry.base_ms, 500);
    cr_assert_eq(t->retry.max_ms, 60000);
    cr_assert_eq(t->format, SL_FORMAT_ENVELOPE);
    cr_assert_eq(t->allow_url_count, 0);
    cr_assert_eq(t->max_wait_ms, 0);
    cr_assert_eq(t->max_job_bytes, 1048576);
    cr_assert_str_eq(t->idempotency_header, "Idempotency-Key");
    cr_assert_not(t->adaptive.enabled);
}

Test(spec_example, parses_with_its_values_and_defaults)
{
    sl_config *cfg = ok(spec_example);
    cr_assert_str_eq(cfg->redis.host, "127.0.0.1");
    cr_assert_eq(cfg->redis.port, 6379);
    cr_assert_eq(cfg->redis.db, 0);
    cr_assert_null(cfg->redis.unix_path);
    cr_assert_null(cfg->redis.password);
    cr_assert_str_eq(cfg->redis_url_redacted, "redis://127.0.0.1:6379/0");
    cr_assert_str_eq(cfg->prefix, "sluice");
    cr_assert_eq(cfg->workers, 2);
    cr_assert_str_eq(cfg->admin, "127.0.0.1:9464");
    cr_assert_str_eq(cfg->admin_host, "127.0.0.1");
    cr_assert_eq(cfg->admin_port, 9464);
    cr_assert_eq(cfg->grace_ms, 10000);

    cr_assert_eq(cfg->tenant_count, 1);
    const sl_tenant_config *t = sl_config_find_tenant(cfg, "acme");
    cr_assert_eq(t, &cfg->tenants[0]);
    cr_assert_str_eq(t->name, "acme");
    cr_assert_str_eq(t->endpoint, "https://api.partner.example/v1/hook");
    cr_assert_eq(t->rate_milli, 10000);
    check_tenant_defaults(t);
    cr_assert_eq(t->header_count, 2);
    cr_assert_str_eq(t->headers[0].name, "Authorization");
    cr_assert_str_eq(t->headers[0].value, "Bearer " SECRET);
    cr_assert(t->headers[0].secret);
    cr_assert_str_eq(t->headers[1].name, "X-Tenant");
    cr_assert_str_eq(t->headers[1].value, "acme");
    cr_assert_not(t->headers[1].secret);
    cr_assert_eq(t->limit_count, 2);
    cr_assert_str_eq(t->limits[0].name, "daily");
    cr_assert_eq(t->limits[0].type, SL_LIMIT_FIXED_WINDOW);
    cr_assert_eq(t->limits[0].first, 10000);
    cr_assert_eq(t->limits[0].second, 86400000);
    cr_assert_eq(t->limits[0].on_deny, SL_ON_DENY_DEAD_LETTER);
    cr_assert_str_eq(t->limits[1].name, "minute");
    cr_assert_eq(t->limits[1].type, SL_LIMIT_SLIDING_WINDOW_LOG);
    cr_assert_eq(t->limits[1].first, 300);
    cr_assert_eq(t->limits[1].second, 60000);
    cr_assert_eq(t->limits[1].on_deny, SL_ON_DENY_DELAY);

    const sl_tenant_config *tpl = cfg->template_tenant;
    cr_assert_not_null(tpl);
    cr_assert_str_eq(tpl->name, "*");
    cr_assert_str_eq(tpl->endpoint, "http://127.0.0.1:8080/hook");
    cr_assert_eq(tpl->rate_milli, 100000);
    check_tenant_defaults(tpl);
    cr_assert_eq(tpl->header_count, 0);
    cr_assert_eq(tpl->limit_count, 0);

    cr_assert_null(sl_config_find_tenant(cfg, "*"), "the template is not a listed tenant");
    cr_assert_null(sl_config_find_tenant(cfg, "newcomer"));
    cr_assert_eq(sl_config_tenant_for(cfg, "acme"), t);
    cr_assert_eq(sl_config_tenant_for(cfg, "newcomer"), tpl);
    cr_assert_null(sl_config_tenant_for(cfg, "not valid"));
    sl_config_free(cfg);
}

Test(defaults, minimal_config)
{
    sl_config *cfg = ok(ACME(""));
    cr_assert_str_eq(cfg->redis.host, "127.0.0.1");
    cr_assert_eq(cfg->redis.port, 6379);
    cr_assert_str_eq(cfg->prefix, "sluice");
    cr_assert_eq(cfg->workers, 4, "workers defaults to the CPU count");
    cr_assert_str_eq(cfg->admin, "127.0.0.1:9464");
    cr_assert_eq(cfg->grace_ms, 10000);
    cr_assert_null(cfg->template_tenant);
    check_tenant_defaults(&cfg->tenants[0]);
    cr_assert_eq(cfg->tenants[0].header_count, 0);
    sl_config_free(cfg);
}

Test(defaults, workers_follow_the_cpu_count_within_range)
{
    const int cpus[][2] = {{0, 1}, {1, 1}, {7, 7}, {256, 256}, {1000, 256}};
    for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
        sl_errors errs;
        sl_errors_init(&errs);
        sl_config *cfg = parse_with(ACME(""), &errs, cpus[i][0]);
        cr_assert_not_null(cfg);
        cr_assert_eq(cfg->workers, cpus[i][1], "%d cpus -> %d workers", cpus[i][0], cfg->workers);
        sl_config_free(cfg);
    }
    /* No env at all: still parses, one worker. */
    sl_errors errs;
    sl_errors_init(&errs);
    char *json = dq(ACME(""));
    sl_config *cfg = sl_config_parse(json, NULL, &errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->workers, 1);
    sl_config_free(cfg);
    free(json);
}

Test(defaults, every_tenant_key_can_be_set)
{
    sl_config *cfg = ok(ACME(", 'capacity': 9000000, 'overflow': 'dead-letter', 'concurrency': "
                             "10000, 'timeout_ms': 3600000, 'retry': {'max_attempts': 1000, "
                             "'base_ms': 1, 'max_ms': 86400000}, 'format': 'raw', 'allow_urls': "
                             "['https://a.example/v1/', 'http://[::1]:81/'], 'max_wait_ms': "
                             "31622400000, 'max_job_bytes': 67108864, 'idempotency_header': "
                             "'X-Request-Id'"));
    const sl_tenant_config *t = &cfg->tenants[0];
    cr_assert_eq(t->capacity, SL_CAPACITY_MAX);
    cr_assert_eq(t->overflow, SL_OVERFLOW_DEAD_LETTER);
    cr_assert_eq(t->concurrency, 10000);
    cr_assert_eq(t->timeout_ms, 3600000);
    cr_assert_eq(t->retry.max_attempts, 1000);
    cr_assert_eq(t->retry.base_ms, 1);
    cr_assert_eq(t->retry.max_ms, 86400000);
    cr_assert_eq(t->format, SL_FORMAT_RAW);
    cr_assert_eq(t->allow_url_count, 2);
    cr_assert_str_eq(t->allow_urls[0], "https://a.example/v1/");
    cr_assert_str_eq(t->allow_urls[1], "http://[::1]:81/");
    cr_assert_eq(t->max_wait_ms, INT64_C(31622400000));
    cr_assert_eq(t->max_job_bytes, 67108864);
    cr_assert_str_eq(t->idempotency_header, "X-Request-Id");
    sl_config_free(cfg);

    cfg = ok("{'redis': 'unix:///run/redis/redis.sock?db=3', 'prefix': 'app.v2:q-1_x', "
             "'workers': 256, 'admin': '[::1]:1', 'grace_ms': 0, " TENANTS(""));
    cr_assert_str_eq(cfg->redis.unix_path, "/run/redis/redis.sock");
    cr_assert_eq(cfg->redis.db, 3);
    cr_assert_str_eq(cfg->prefix, "app.v2:q-1_x");
    cr_assert_eq(cfg->workers, 256);
    cr_assert_str_eq(cfg->admin_host, "::1");
    cr_assert_eq(cfg->admin_port, 1);
    cr_assert_eq(cfg->grace_ms, 0);
    sl_config_free(cfg);
}

Test(defaults, tenants_are_sorted_and_found_by_exact_name)
{
    sl_config *cfg = ok("{'tenants': {"
                        "'zeta': {'endpoint': 'http://h/', 'rate': 1},"
                        "'Acme': {'endpoint': 'http://h/', 'rate': 2},"
                        "'acme': {'endpoint': 'http://h/', 'rate': 3},"
                        "'a.b:c-d_e': {'endpoint': 'http://h/', 'rate': 4}}}");
    cr_assert_eq(cfg->tenant_count, 4);
    for (size_t i = 1; i < cfg->tenant_count; i++)
        cr_assert_lt(strcmp(cfg->tenants[i - 1].name, cfg->tenants[i].name), 0);
    cr_assert_eq(sl_config_find_tenant(cfg, "acme")->rate_milli, 3000);
    cr_assert_eq(sl_config_find_tenant(cfg, "Acme")->rate_milli, 2000);
    cr_assert_eq(sl_config_find_tenant(cfg, "a.b:c-d_e")->rate_milli, 4000);
    cr_assert_eq(sl_config_find_tenant(cfg, "zeta")->rate_milli, 1000);
    cr_assert_null(sl_config_find_tenant(cfg, "acm"));
    cr_assert_null(sl_config_find_tenant(cfg, "acme "));
    sl_config_free(cfg);

    /* A config of the template alone is valid: every tenant is discovered. */
    cfg = ok("{'tenants': {'*': {'endpoint': 'http://h/', 'rate': 1}}}");
    cr_assert_eq(cfg->tenant_count, 0);
    cr_assert_not_null(cfg->template_tenant);
    cr_assert_null(sl_config_find_tenant(cfg, "x"));
    cr_assert_eq(sl_config_tenant_for(cfg, "x"), cfg->template_tenant);
    sl_config_free(cfg);
}

/* ---- rates ------------------------------------------------------------- */

Test(rate, converts_to_milli_jobs_exactly)
{
    const struct {
        const char *text;
        int64_t milli;
    } cases[] = {{"0.5", 500},         {"25000", 25000000}, {"0.001", 1},  {"1000000", 1000000000},
                 {"0.1", 100},         {"3.3", 3300},       {"10", 10000}, {"999999.999", 999999999},
                 {"1e3", 1000000},     {"0.007", 7}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{'tenants': {'a': {'endpoint': 'http://h/', 'rate': %s}}}",
                 cases[i].text);
        sl_config *cfg = ok(json);
        cr_assert_eq(cfg->tenants[0].rate_milli, cases[i].milli, "%s -> %ld", cases[i].text,
                     (long)cfg->tenants[0].rate_milli);
        sl_config_free(cfg);
    }
}

Test(rate, rejects_what_is_not_a_rate)
{
    const struct {
        const char *text, *msg;
    } cases[] = {
        {"0.0001", "must be a multiple of 0.001 (at least 0.001)"},
        {"0.0015", "must be a multiple of 0.001 (at least 0.001)"},
        {"1e-10", "must be a multiple of 0.001 (at least 0.001)"},
        {"0", "must be > 0"},
        {"-1", "must be > 0"},
        {"1000000.001", "must be at most 1000000"},
        {"1e400", "must be at most 1000000"},
        {"'10'", "must be a number (jobs per second), not a string"},
        {"null", "must be a number (jobs per second), not null"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[256], msg[256];
        snprintf(json, sizeof json, "{'tenants': {'a': {'endpoint': 'http://h/', 'rate': %s}}}",
                 cases[i].text);
        snprintf(msg, sizeof msg, "tenants.a.rate: %s", cases[i].msg);
        bad(json, msg, NULL);
    }
}

/* ---- adaptive ------------------------------------------------------------ */

Test(adaptive, defaults_and_every_key)
{
    sl_config *cfg = ok(ACME(", 'adaptive': {'min': 5, 'max': 200}"));
    const sl_adaptive_config *a = &cfg->tenants[0].adaptive;
    cr_assert(a->enabled);
    cr_assert_eq(a->min_milli, 5000);
    cr_assert_eq(a->max_milli, 200000);
    cr_assert_eq(a->decrease_permille, 850);
    cr_assert_eq(a->increase_milli, 5000); /* max / 40 */
    cr_assert_eq(a->cooldown_ms, 1000);
    cr_assert_not(a->on_timeout);
    cr_assert_not(a->on_5xx);
    sl_config_free(cfg);

    cfg = ok(ACME(", 'adaptive': {'min': 0.5, 'max': 0.5, 'decrease': 0.9, 'increase': 0.25, "
                  "'cooldown_ms': 250, 'on_timeout': true, 'on_5xx': true}"));
    a = &cfg->tenants[0].adaptive;
    cr_assert_eq(a->min_milli, 500);
    cr_assert_eq(a->max_milli, 500);
    cr_assert_eq(a->decrease_permille, 900);
    cr_assert_eq(a->increase_milli, 250);
    cr_assert_eq(a->cooldown_ms, 250);
    cr_assert(a->on_timeout);
    cr_assert(a->on_5xx);
    sl_config_free(cfg);

    /* a tiny max still rises by something */
    cfg = ok(ACME(", 'adaptive': {'min': 0.001, 'max': 0.01}"));
    cr_assert_eq(cfg->tenants[0].adaptive.increase_milli, 1);
    sl_config_free(cfg);
}

Test(adaptive, mistakes_name_their_path)
{
    bad(ACME(", 'adaptive': {}"), "tenants.acme.adaptive.min: is required",
        "tenants.acme.adaptive.max: is required", NULL);
    bad(ACME(", 'adaptive': {'min': 50, 'max': 20}"),
        "tenants.acme.adaptive.max: must be >= min (50.000)", NULL);
    const char *decreases[] = {"0", "1", "1.5", "-0.5", "0.0005", "'0.7'", "true"};
    for (size_t i = 0; i < sizeof decreases / sizeof decreases[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, ACME(", 'adaptive': {'min': 1, 'max': 2, 'decrease': %s}"),
                 decreases[i]);
        bad(json,
            "tenants.acme.adaptive.decrease: must be a number between 0.001 and 0.999, a "
            "multiple of 0.001",
            NULL);
    }
    bad(ACME(", 'adaptive': {'min': 1, 'max': 2, 'on_5xx': 1}"),
        "tenants.acme.adaptive.on_5xx: must be true or false, not a number", NULL);
    bad(ACME(", 'adaptive': {'min': 1, 'max': 2, 'cooldown_ms': 5}"),
        "tenants.acme.adaptive.cooldown_ms: must be an integer between 10 and 3600000", NULL);
    bad(ACME(", 'adaptive': {'min': 1, 'max': 2, 'increase': 0}"),
        "tenants.acme.adaptive.increase: must be > 0", NULL);
    bad(ACME(", 'adaptive': {'min': 1, 'max': 2, 'step': 1}"),
        "tenants.acme.adaptive.step: unknown key", NULL);
    bad(ACME(", 'adaptive': 5"), "tenants.acme.adaptive: must be an object, not a number", NULL);
}

/* ---- mistakes, one at a time --------------------------------------------- */

Test(mistakes, each_names_its_path)
{
    const struct {
        const char *json, *msg;
    } cases[] = {
        /* top level */
        {"{'workers': 0, " TENANTS(""), "workers: must be an integer between 1 and 256"},
        {"{'workers': 2.5, " TENANTS(""), "workers: must be an integer between 1 and 256"},
        {"{'workers': '2', " TENANTS(""), "workers: must be an integer, not a string"},
        {"{'grace_ms': -1, " TENANTS(""), "grace_ms: must be an integer between 0 and 3600000"},
        {"{'prefix': '', " TENANTS(""), "prefix: must be 1..64 characters of [A-Za-z0-9_.:-]"},
        {"{'prefix': 'a{b}', " TENANTS(""),
         "prefix: must be 1..64 characters of [A-Za-z0-9_.:-]"},
        {"{'prefix': 7, " TENANTS(""), "prefix: must be a string, not a number"},
        {"{'redis': 6379, " TENANTS(""), "redis: must be a string, not a number"},
        {"{'tenants': []}", "tenants: must be an object, not an array"},
        {"{'tenants': {}}", "tenants: must list at least one tenant"},
        {"{}", "tenants: is required"},
        /* tenant */
        {"{'tenants': {'acme': {'rate': 1}}}", "tenants.acme.endpoint: is required"},
        {"{'tenants': {'acme': {'endpoint': 'http://h/'}}}", "tenants.acme.rate: is required"},
        {"{'tenants': {'acme': 5}}", "tenants.acme: must be an object, not a number"},
        {ACME(", 'capacity': 0"), "tenants.acme.capacity: must be an integer between 1 and 9000000"},
        {ACME(", 'capacity': 9000001"),
         "tenants.acme.capacity: must be an integer between 1 and 9000000"},
        {ACME(", 'overflow': 'drop'"),
         "tenants.acme.overflow: must be \"wait\" or \"dead-letter\", not \"drop\""},
        {ACME(", 'format': 'json'"),
         "tenants.acme.format: must be \"envelope\" or \"raw\", not \"json\""},
        {ACME(", 'format': true"), "tenants.acme.format: must be a string, not a boolean"},
        {ACME(", 'concurrency': 10001"),
         "tenants.acme.concurrency: must be an integer between 1 and 10000"},
        {ACME(", 'timeout_ms': 0"),
         "tenants.acme.timeout_ms: must be an integer between 1 and 3600000"},
        {ACME(", 'max_wait_ms': -1"),
         "tenants.acme.max_wait_ms: must be an integer between 0 and 31622400000"},
        {ACME(", 'max_job_bytes': 67108865"),
         "tenants.acme.max_job_bytes: must be an integer between 1 and 67108864"},
        {ACME(", 'idempotency_header': 'Idem Key'"),
         "tenants.acme.idempotency_header: must be an HTTP token (letters, digits and "
         "!#$%&'*+-.^_`|~)"},
        {ACME(", 'retry': 5"), "tenants.acme.retry: must be an object, not a number"},
        {ACME(", 'retry': {'max_attempts': 0}"),
         "tenants.acme.retry.max_attempts: must be an integer between 1 and 1000"},
        {ACME(", 'retry': {'base_ms': 3600001}"),
         "tenants.acme.retry.base_ms: must be an integer between 1 and 3600000"},
        {ACME(", 'retry': {'max_ms': 86400001}"),
         "tenants.acme.retry.max_ms: must be an integer between 1 and 86400000"},
        {ACME(", 'retry': {'max_ms': 400}"), "tenants.acme.retry.max_ms: must be >= base_ms (500)"},
        {ACME(", 'retry': {'base_ms': 2000, 'max_ms': 1000}"),
         "tenants.acme.retry.max_ms: must be >= base_ms (2000)"},
        {ACME(", 'headers': []"), "tenants.acme.headers: must be an object, not an array"},
        {ACME(", 'headers': {'X-A': 5}"), "tenants.acme.headers.X-A: must be a string, not a number"},
        {ACME(", 'allow_urls': 'https://a/'"),
         "tenants.acme.allow_urls: must be an array of URL prefixes, not a string"},
        {ACME(", 'allow_urls': ['https://a/', 5]"),
         "tenants.acme.allow_urls[1]: must be a string, not a number"},
        {ACME(", 'allow_urls': ['https://a.example']"),
         "tenants.acme.allow_urls[0]: must include the path after the host (at least \"/\"), "
         "or it would also match other hosts"},
        {ACME(", 'allow_urls': ['ftp://a.example/']"),
         "tenants.acme.allow_urls[0]: must be an http:// or https:// URL"},
        {ACME(", 'limits': {}"), "tenants.acme.limits: must be an array of limits, not an object"},
        {ACME(", 'limits': ['daily']"), "tenants.acme.limits[0]: must be an object, not a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        bad(cases[i].json, cases[i].msg, NULL);
}

Test(mistakes, endpoints)
{
    const struct {
        const char *url, *msg;
    } cases[] = {
        {"ftp://h/", "must be an http:// or https:// URL"},
        {"h.example/hook", "must be an http:// or https:// URL"},
        {"https://h.example/a b", "must not contain whitespace or control characters"},
        {"https://h.example/a\\r\\nX-Evil: 1", "must not contain whitespace or control characters"},
        {"https://", "must have a host"},
        {"https:///path", "must have a host"},
        {"http://h:0/", "has an invalid port (1..65535)"},
        {"http://h:99999/", "has an invalid port (1..65535)"},
        {"http://h:/", "has an invalid port (1..65535)"},
        {"http://bad_host!/", "has an invalid host"},
        {"http://[::1/", "has an invalid host"},
        {"http://[h]/", "has an invalid host"},
        {"http://300.1.1.1/", "has an invalid host"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[256], msg[256];
        snprintf(json, sizeof json, "{'tenants': {'a': {'endpoint': '%s', 'rate': 1}}}",
                 cases[i].url);
        snprintf(msg, sizeof msg, "tenants.a.endpoint: %s", cases[i].msg);
        bad(json, msg, NULL);
    }
    const char *good[] = {"http://h", "HTTPS://H.example:8443/x?y=1", "http://[::1]:8080/",
                          "https://user:pw@h.example/", "http://10.0.0.1"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{'tenants': {'a': {'endpoint': '%s', 'rate': 1}}}", good[i]);
        sl_config_free(ok(json));
    }
    /* Credentials in a bad URL are not repeated. */
    bad("{'tenants': {'a': {'endpoint': 'https://u:" SECRET "@h:70000/', 'rate': 1}}}",
        "tenants.a.endpoint: has an invalid port (1..65535)", NULL);
}

Test(mistakes, unknown_keys_at_every_level)
{
    bad("{'tenant': {}, " TENANTS(""), "tenant: unknown key", NULL);
    bad(ACME(", 'retyr': {}"), "tenants.acme.retyr: unknown key", NULL);
    bad(ACME(", 'retry': {'max_attempt': 3}"), "tenants.acme.retry.max_attempt: unknown key",
        NULL);
    bad(LIMIT("'type': 'fixed_window', 'max': 1, 'window_ms': 1, 'on_denied': 'delay'"),
        "tenants.acme.limits[0].on_denied: unknown key", NULL);
    /* Odd keys are quoted and escaped, never printed raw. */
    bad(ACME(", 'a.b': 1, 'x y': 2, '': 3, 'n\\nl': 4"), "tenants.acme[\"a.b\"]: unknown key",
        "tenants.acme[\"x y\"]: unknown key", "tenants.acme[\"\"]: unknown key",
        "tenants.acme[\"n\\x0al\"]: unknown key", NULL);
}

Test(mistakes, duplicate_keys)
{
    bad("{'prefix': 'a', 'prefix': 'b', " TENANTS(""), "prefix: duplicate key", NULL);
    bad(ACME(", 'rate': 20"), "tenants.acme.rate: duplicate key", NULL);
    bad("{'tenants': {'a': {'endpoint': 'http://h/', 'rate': 1},"
        "'a': {'endpoint': 'http://h/', 'rate': 2}}}",
        "tenants.a: duplicate key", NULL);
    bad("{'tenants': {'*': {'endpoint': 'http://h/', 'rate': 1},"
        "'*': {'endpoint': 'http://h/', 'rate': 2}}}",
        "tenants.*: duplicate key", NULL);
}

Test(mistakes, tenant_names)
{
    char long_name[SL_TENANT_NAME_MAX + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    const struct {
        const char *name, *shown;
    } cases[] = {
        {"bad name", "[\"bad name\"]"},
        {"{acme}", "[\"{acme}\"]"},
        {"", "[\"\"]"},
        {"a/b", "[\"a/b\"]"},
        {"**", ".**"},
        {"caf\\u00e9", "[\"caf\\xc3\\xa9\"]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512], msg[512];
        snprintf(json, sizeof json, "{'tenants': {'%s': {'endpoint': 'http://h/', 'rate': 1}}}",
                 cases[i].name);
        snprintf(msg, sizeof msg,
                 "tenants%s: invalid tenant name: must be 1..128 characters of "
                 "[A-Za-z0-9_.:-], or \"*\" for the template",
                 cases[i].shown);
        bad(json, msg, NULL);
    }
    /* 129 characters: shown cut short. */
    char json[512];
    snprintf(json, sizeof json, "{'tenants': {'%s': {'endpoint': 'http://h/', 'rate': 1}}}",
             long_name);
    sl_errors errs;
    sl_errors_init(&errs);
    cr_assert_null(parse_with(json, &errs, 1));
    cr_assert_eq(errs.count, 1);
    cr_assert(strstr(errs.items[0], "...\"]: invalid tenant name"), "%s", errs.items[0]);
    sl_errors_clear(&errs);
    /* 128 is fine; the body of a badly named tenant is still checked. */
    long_name[SL_TENANT_NAME_MAX] = '\0';
    snprintf(json, sizeof json, "{'tenants': {'%s': {'endpoint': 'http://h/', 'rate': 1}}}",
             long_name);
    sl_config_free(ok(json));
    bad("{'tenants': {'a b': {'endpoint': 'http://h/', 'rate': 0}}}",
        "tenants[\"a b\"]: invalid tenant name: must be 1..128 characters of [A-Za-z0-9_.:-], "
        "or \"*\" for the template",
        "tenants[\"a b\"].rate: must be > 0", NULL);

    /* Valid names with '.' or ':' are bracketed in paths, to stay readable. */
    bad("{'tenants': {'org:acme.eu': {'endpoint': 'http://h/', 'rate': 0}}}",
        "tenants[\"org:acme.eu\"].rate: must be > 0", NULL);

    cr_assert(sl_tenant_name_valid("acme"));
    cr_assert(sl_tenant_name_valid("A-z_0.9:x"));
    cr_assert_not(sl_tenant_name_valid("*"));
    cr_assert_not(sl_tenant_name_valid(""));
    cr_assert_not(sl_tenant_name_valid("{a}"));
    cr_assert_not(sl_tenant_name_valid(NULL));
    cr_assert(sl_tenant_name_valid(long_name));
}

Test(mistakes, all_are_reported_together)
{
    bad("{'workers': 0, 'prefix': '', 'admin': 'nope', 'redis': 'redis://h:0', 'extra': 1,"
        " 'tenants': {"
        "  'acme': {'endpoint': 'ftp://x', 'rate': 0, 'capacity': 0, 'retyr': {},"
        "           'headers': {'Bad Name': 'v', 'X-Secret': '${MISSING}'},"
        "           'limits': [{'name': 'l', 'type': 'fixed_window', 'max': 0, 'window_ms': 0},"
        "                      {'name': 'l', 'type': 'leaky', 'on_deny': 'drop'}]},"
        "  'bad name': {'endpoint': 'http://h/', 'rate': 1},"
        "  'ok': {'endpoint': 'http://h/', 'rate': 1, 'concurrency': 0}}}",
        "workers: must be an integer between 1 and 256",
        "prefix: must be 1..64 characters of [A-Za-z0-9_.:-]",
        "admin: must be \"host:port\" (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), or null to "
        "disable",
        "redis: port must be an integer between 1 and 65535", "extra: unknown key",
        "tenants.acme.endpoint: must be an http:// or https:// URL", "tenants.acme.rate: must be > 0",
        "tenants.acme.capacity: must be an integer between 1 and 9000000",
        "tenants.acme.retyr: unknown key",
        "tenants.acme.headers[\"Bad Name\"]: invalid header name: must be an HTTP token "
        "(letters, digits and !#$%&'*+-.^_`|~)",
        "tenants.acme.headers.X-Secret: environment variable MISSING is not set",
        "tenants.acme.limits[0].max: must be an integer between 1 and 1000000000",
        "tenants.acme.limits[0].window_ms: must be an integer between 1 and 31622400000 (366 "
        "days)",
        "tenants.acme.limits[1].name: duplicate limit name \"l\" (also limits[0])",
        "tenants.acme.limits[1].type: must be \"policing\", \"token_bucket\", \"fixed_window\", "
        "\"sliding_window_log\" or \"sliding_window_counter\", not \"leaky\"",
        "tenants.acme.limits[1].on_deny: must be \"delay\" or \"dead-letter\", not \"drop\"",
        "tenants[\"bad name\"]: invalid tenant name: must be 1..128 characters of "
        "[A-Za-z0-9_.:-], or \"*\" for the template",
        "tenants.ok.concurrency: must be an integer between 1 and 10000", NULL);
}

/* ---- invalid JSON ---------------------------------------------------------- */

Test(json, syntax_errors_give_line_and_column)
{
    /* cJSON points just past a character it could not start a key with. */
    bad("{\n  'tenants': {,\n}", "config: invalid JSON at line 2, column 16", NULL);
    bad("{'tenants': {}} x", "config: invalid JSON at line 1, column 17", NULL);
    bad("{'tenants':\n", "config: invalid JSON: unexpected end of input at line 2, column 1",
        NULL);
    bad("", "config: invalid JSON: unexpected end of input at line 1, column 1", NULL);
    bad("[1, 2]", "config: must be a JSON object, not an array", NULL);
    bad("'redis'", "config: must be a JSON object, not a string", NULL);

    sl_errors errs;
    sl_errors_init(&errs);
    cr_assert_null(sl_config_parse(NULL, NULL, &errs));
    cr_assert_eq(errs.count, 1);
    sl_errors_clear(&errs);
}

/* ---- headers and secrets ------------------------------------------------- */

static void assert_no_secret(const sl_errors *errs)
{
    for (size_t i = 0; i < errs->count; i++)
        cr_assert_null(strstr(errs->items[i], SECRET), "secret leaked: %s", errs->items[i]);
}

Test(secrets, missing_variable_names_it_and_leaks_nothing)
{
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config *cfg = parse_with(ACME(", 'headers': {'Authorization': '${ACME_TOKEN}', "
                                     "'X-Literal': 'plain', 'X-Other': '${MISSING}'}"),
                                &errs, 1);
    cr_assert_null(cfg);
    cr_assert_eq(errs.count, 1);
    cr_assert_str_eq(errs.items[0],
                     "tenants.acme.headers.X-Other: environment variable MISSING is not set");
    assert_no_secret(&errs);
    sl_errors_clear(&errs);
}

Test(secrets, references_inside_values_and_their_errors)
{
    sl_config *cfg = ok(ACME(", 'headers': {'Authorization': 'Token ${REDIS_PW}!', "
                             "'X-Two': '${REDIS_PW}/${REDIS_PW}'}"));
    cr_assert_str_eq(cfg->tenants[0].headers[0].value, "Token " SECRET "!");
    cr_assert(cfg->tenants[0].headers[0].secret);
    cr_assert_str_eq(cfg->tenants[0].headers[1].value, SECRET "/" SECRET);
    sl_config_free(cfg);

    const char *invalid = "tenants.acme.headers.X-A: invalid reference: expected ${NAME}, NAME "
                          "of [A-Za-z_][A-Za-z0-9_]*";
    bad(ACME(", 'headers': {'X-A': '${1X}'}"), invalid, NULL);
    bad(ACME(", 'headers': {'X-A': '${X'}"), invalid, NULL);
    bad(ACME(", 'headers': {'X-A': '${}'}"), invalid, NULL);
    bad(ACME(", 'headers': {'X-A': '${A-B}'}"), invalid, NULL);
    bad(ACME(", 'headers': {'X-A': '${EMPTY}'}"),
        "tenants.acme.headers.X-A: environment variable EMPTY is empty", NULL);
    bad(ACME(", 'headers': {'X-A': '${NOPE1} ${NOPE2}'}"),
        "tenants.acme.headers.X-A: environment variable NOPE1 is not set",
        "tenants.acme.headers.X-A: environment variable NOPE2 is not set", NULL);
    /* A "$" without a brace is just a dollar. */
    cfg = ok(ACME(", 'headers': {'X-Price': '$5 $ {x}'}"));
    cr_assert_str_eq(cfg->tenants[0].headers[0].value, "$5 $ {x}");
    cr_assert_not(cfg->tenants[0].headers[0].secret);
    sl_config_free(cfg);
}

Test(secrets, files_lose_one_trailing_newline)
{
    sl_config *cfg = ok(ACME(", 'headers': {'X-A': '@/run/credentials/token', "
                             "'X-B': '@/run/credentials/crlf', 'X-Handle': '@bob'}"));
    const sl_tenant_config *t = &cfg->tenants[0];
    cr_assert_str_eq(t->headers[0].value, SECRET);
    cr_assert(t->headers[0].secret);
    cr_assert_str_eq(t->headers[1].value, SECRET);
    cr_assert_str_eq(t->headers[2].value, "@bob", "only @/ names a file");
    cr_assert_not(t->headers[2].secret);
    sl_config_free(cfg);

    sl_errors errs;
    sl_errors_init(&errs);
    cr_assert_null(parse_with(ACME(", 'headers': {'X-A': '@/run/credentials/two-newlines', "
                                   "'X-B': '@/run/credentials/missing', "
                                   "'X-C': '@/run/credentials/empty'}"),
                              &errs, 1));
    char *all = joined(&errs);
    cr_assert_eq(errs.count, 3, "%s", all);
    cr_assert_str_eq(errs.items[0],
                     "tenants.acme.headers.X-A: the secret value contains CR, LF or another "
                     "control character (only one trailing newline of a file is stripped)");
    cr_assert_str_eq(errs.items[1], "tenants.acme.headers.X-B: cannot read secret file "
                                    "/run/credentials/missing: No such file or directory");
    cr_assert_str_eq(errs.items[2],
                     "tenants.acme.headers.X-C: secret file /run/credentials/empty is empty");
    assert_no_secret(&errs);
    free(all);
    sl_errors_clear(&errs);
}

Test(headers, names_and_values_are_checked)
{
    bad(ACME(", 'headers': {'X-A': 'a\\r\\nX-Injected: 1'}"),
        "tenants.acme.headers.X-A: must not contain CR, LF or other control characters", NULL);
    bad(ACME(", 'headers': {'X-A': 'bell\\u0007'}"),
        "tenants.acme.headers.X-A: must not contain CR, LF or other control characters", NULL);
    bad(ACME(", 'headers': {'X-A:': 'v', 'X(B)': 'v', '': 'v'}"),
        "tenants.acme.headers[\"X-A:\"]: invalid header name: must be an HTTP token (letters, "
        "digits and !#$%&'*+-.^_`|~)",
        "tenants.acme.headers[\"X(B)\"]: invalid header name: must be an HTTP token (letters, "
        "digits and !#$%&'*+-.^_`|~)",
        "tenants.acme.headers[\"\"]: invalid header name: must be an HTTP token (letters, "
        "digits and !#$%&'*+-.^_`|~)",
        NULL);
    bad(ACME(", 'headers': {'X-A': '1', 'x-a': '2'}"),
        "tenants.acme.headers.x-a: duplicate header (header names ignore case)", NULL);
    bad(ACME(", 'headers': {'content-length': '5', 'Transfer-Encoding': 'chunked'}"),
        "tenants.acme.headers.content-length: is set by sluice and cannot be configured",
        "tenants.acme.headers.Transfer-Encoding: is set by sluice and cannot be configured", NULL);
    bad(ACME(", 'headers': {'idempotency-key': 'x'}"),
        "tenants.acme.headers.idempotency-key: is the idempotency_header, which sluice sets to "
        "each job's id",
        NULL);
    bad(ACME(", 'idempotency_header': 'X-Id', 'headers': {'X-ID': 'x'}"),
        "tenants.acme.headers.X-ID: is the idempotency_header, which sluice sets to each job's "
        "id",
        NULL);
    /* Tabs are legal in values; odd but valid token characters in names. */
    sl_config *cfg = ok(ACME(", 'headers': {'X~Odd!#': 'a\\tb', 'Idempotency-Key2': ''}"));
    cr_assert_str_eq(cfg->tenants[0].headers[0].name, "X~Odd!#");
    cr_assert_str_eq(cfg->tenants[0].headers[0].value, "a\tb");
    cr_assert_str_eq(cfg->tenants[0].headers[1].value, "");
    sl_config_free(cfg);
}

/* ---- limits -------------------------------------------------------------- */

Test(limits, all_types_parse_in_argv_order)
{
    sl_config *cfg =
        ok(ACME(", 'limits': ["
                "{'name': 'p', 'type': 'policing', 'capacity': 5, 'rate': 0.5},"
                "{'name': 't', 'type': 'token_bucket', 'capacity': 9000000, 'rate': 1000000,"
                " 'on_deny': 'dead-letter'},"
                "{'name': 'f.1', 'type': 'fixed_window', 'max': 1, 'window_ms': 31622400000},"
                "{'name': 'L_og-', 'type': 'sliding_window_log', 'max': 1000000000,"
                " 'window_ms': 1},"
                "{'name': 'c', 'type': 'sliding_window_counter', 'max': 10000,"
                " 'window_ms': 86400000}]"));
    const sl_tenant_config *t = &cfg->tenants[0];
    cr_assert_eq(t->limit_count, 5);
    const struct {
        sl_limit_type type;
        int64_t first, second;
        sl_on_deny on_deny;
    } want[] = {
        {SL_LIMIT_POLICING, 5, 500, SL_ON_DENY_DELAY},
        {SL_LIMIT_TOKEN_BUCKET, SL_CAPACITY_MAX, SL_RATE_MILLI_MAX, SL_ON_DENY_DEAD_LETTER},
        {SL_LIMIT_FIXED_WINDOW, 1, SL_WINDOW_MS_MAX, SL_ON_DENY_DELAY},
        {SL_LIMIT_SLIDING_WINDOW_LOG, SL_WINDOW_MAX_MAX, 1, SL_ON_DENY_DELAY},
        {SL_LIMIT_SLIDING_WINDOW_COUNTER, 10000, 86400000, SL_ON_DENY_DELAY},
    };
    for (size_t i = 0; i < 5; i++) {
        cr_assert_eq(t->limits[i].type, want[i].type, "limit %zu", i);
        cr_assert_eq(t->limits[i].first, want[i].first, "limit %zu", i);
        cr_assert_eq(t->limits[i].second, want[i].second, "limit %zu", i);
        cr_assert_eq(t->limits[i].on_deny, want[i].on_deny, "limit %zu", i);
    }
    cr_assert_str_eq(t->limits[2].name, "f.1");
    sl_config_free(cfg);
}

Test(limits, parameters_are_validated_by_type)
{
    const char *p = "tenants.acme.limits[0].";
    const struct {
        const char *members, *msg, *msg2;
    } cases[] = {
        {"'type': 'policing', 'capacity': 0, 'rate': 1",
         "capacity: must be an integer between 1 and 9000000", NULL},
        {"'type': 'token_bucket', 'capacity': 9000001, 'rate': 1",
         "capacity: must be an integer between 1 and 9000000", NULL},
        {"'type': 'policing', 'capacity': 2.5, 'rate': 1",
         "capacity: must be an integer between 1 and 9000000", NULL},
        {"'type': 'policing', 'capacity': 5, 'rate': 0.0001",
         "rate: must be a multiple of 0.001 (at least 0.001)", NULL},
        {"'type': 'policing', 'capacity': 0, 'rate': -1",
         "capacity: must be an integer between 1 and 9000000", "rate: must be > 0"},
        {"'type': 'policing', 'capacity': '5', 'rate': 1",
         "capacity: must be an integer, not a string", NULL},
        {"'type': 'fixed_window', 'max': 0, 'window_ms': 1000",
         "max: must be an integer between 1 and 1000000000", NULL},
        {"'type': 'fixed_window', 'max': 5, 'window_ms': 31622400001",
         "window_ms: must be an integer between 1 and 31622400000 (366 days)", NULL},
        {"'type': 'sliding_window_log', 'max': 1e30, 'window_ms': 0.5",
         "max: must be an integer between 1 and 1000000000",
         "window_ms: must be an integer between 1 and 31622400000 (366 days)"},
        {"'type': 'sliding_window_counter', 'max': 1000000000, 'window_ms': 86400000",
         "max: (max + 1) * window_ms must stay below 2^52 for exact arithmetic", NULL},
        /* (max + 1) * window_ms would overflow int64 here. */
        {"'type': 'sliding_window_counter', 'max': 1000000000, 'window_ms': 31622400000",
         "max: (max + 1) * window_ms must stay below 2^52 for exact arithmetic", NULL},
        {"'type': 'fixed_window', 'max': 5", "window_ms: is required", NULL},
        {"'type': 'token_bucket'", "capacity: is required", "rate: is required"},
        {"'type': 'fixed_window', 'max': 5, 'window_ms': 1000, 'capacity': 3",
         "capacity: unknown key for type fixed_window (its parameters are max and window_ms)",
         NULL},
        {"'type': 'policing', 'capacity': 5, 'rate': 1, 'window_ms': 3",
         "window_ms: unknown key for type policing (its parameters are capacity and rate)", NULL},
        {"'type': 'fixed_window', 'max': 5, 'window_ms': 1000, 'on_deny': 'reject'",
         "on_deny: must be \"delay\" or \"dead-letter\", not \"reject\"", NULL},
        {"'max': 5, 'window_ms': 1000", "type: is required", NULL},
        {"'type': 5, 'max': 5, 'window_ms': 1000", "type: must be a string, not a number", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512], m1[256], m2[256];
        snprintf(json, sizeof json, LIMIT("%s"), cases[i].members);
        snprintf(m1, sizeof m1, "%s%s", p, cases[i].msg);
        if (cases[i].msg2)
            snprintf(m2, sizeof m2, "%s%s", p, cases[i].msg2);
        bad(json, m1, cases[i].msg2 ? m2 : NULL, NULL);
    }
}

Test(limits, names)
{
    const char *rule = "'type': 'fixed_window', 'max': 1, 'window_ms': 1";
    char json[512];
    snprintf(json, sizeof json, ACME(", 'limits': [{'name': 'a', %s}, {'name': 'b', %s}, "
                                     "{'name': 'a', %s}]"),
             rule, rule, rule);
    bad(json, "tenants.acme.limits[2].name: duplicate limit name \"a\" (also limits[0])", NULL);
    snprintf(json, sizeof json, ACME(", 'limits': [{%s}]"), rule);
    bad(json, "tenants.acme.limits[0].name: is required", NULL);
    const char *bad_names[] = {"''", "'a b'", "'a:b'", "'a{b}'", "5",
                               "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        snprintf(json, sizeof json, ACME(", 'limits': [{'name': %s, %s}]"), bad_names[i], rule);
        bad(json,
            i == 4 ? "tenants.acme.limits[0].name: must be a string, not a number"
                   : "tenants.acme.limits[0].name: must be 1..64 characters of [A-Za-z0-9_.-]",
            NULL);
    }
}

Test(limits, type_names_are_the_script_names)
{
    cr_assert_str_eq(sl_limit_type_name(SL_LIMIT_POLICING), "policing");
    cr_assert_str_eq(sl_limit_type_name(SL_LIMIT_TOKEN_BUCKET), "token_bucket");
    cr_assert_str_eq(sl_limit_type_name(SL_LIMIT_FIXED_WINDOW), "fixed_window");
    cr_assert_str_eq(sl_limit_type_name(SL_LIMIT_SLIDING_WINDOW_LOG), "sliding_window_log");
    cr_assert_str_eq(sl_limit_type_name(SL_LIMIT_SLIDING_WINDOW_COUNTER),
                     "sliding_window_counter");
    cr_assert_null(sl_limit_type_name((sl_limit_type)5));
    cr_assert_null(sl_limit_type_name((sl_limit_type)-1));
}

/* ---- redis ----------------------------------------------------------------- */

typedef struct redis_case {
    const char *url;
    const char *host;
    int port;
    const char *unix_path, *username, *password;
    int db;
    const char *redacted;
} redis_case;

Test(redis_url, accepted_forms)
{
    const redis_case cases[] = {
        {"redis://127.0.0.1:6379/0", "127.0.0.1", 6379, NULL, NULL, NULL, 0,
         "redis://127.0.0.1:6379/0"},
        {"redis://localhost", "localhost", 6379, NULL, NULL, NULL, 0, "redis://localhost:6379/0"},
        {"REDIS://cache.internal.:7000/", "cache.internal.", 7000, NULL, NULL, NULL, 0,
         "redis://cache.internal.:7000/0"},
        {"redis://app:" SECRET "@redis.example:6380/15", "redis.example", 6380, NULL, "app",
         SECRET, 15, "redis://app:***@redis.example:6380/15"},
        {"redis://:" SECRET "@h", "h", 6379, NULL, NULL, SECRET, 0, "redis://:***@h:6379/0"},
        {"redis://" SECRET "@h", "h", 6379, NULL, NULL, SECRET, 0, "redis://:***@h:6379/0"},
        {"redis://us%40er:p%40ss:w/o?rd@h", "h", 6379, NULL, "us@er", "p@ss:w/o?rd", 0,
         "redis://us%40er:***@h:6379/0"},
        {"redis://[::1]:6380/1", "::1", 6380, NULL, NULL, NULL, 1, "redis://[::1]:6380/1"},
        {"redis://[2001:db8::7]", "2001:db8::7", 6379, NULL, NULL, NULL, 0,
         "redis://[2001:db8::7]:6379/0"},
        {"redis://h?db=4", "h", 6379, NULL, NULL, NULL, 4, "redis://h:6379/4"},
        {"unix:///run/redis/redis.sock", NULL, 0, "/run/redis/redis.sock", NULL, NULL, 0,
         "unix:///run/redis/redis.sock"},
        {"unix:///tmp/r.sock?db=2", NULL, 0, "/tmp/r.sock", NULL, NULL, 2,
         "unix:///tmp/r.sock?db=2"},
        {"unix://:" SECRET "@/run/redis@main/r.sock", NULL, 0, "/run/redis@main/r.sock", NULL,
         SECRET, 0, "unix://:***@/run/redis@main/r.sock"},
        {"unix://u:" SECRET "@/s.sock?db=1", NULL, 0, "/s.sock", "u", SECRET, 1,
         "unix://u:***@/s.sock?db=1"},
        {"rediss://app:" SECRET "@redis.example:6380/2", "redis.example", 6380, NULL, "app",
         SECRET, 2, "rediss://app:***@redis.example:6380/2"},
        {"REDISS://[::1]", "::1", 6379, NULL, NULL, NULL, 0, "rediss://[::1]:6379/0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const redis_case *c = &cases[i];
        sl_redis_target t;
        char err[256] = "";
        cr_assert(sl_redis_target_parse(c->url, &t, err, sizeof err), "%s: %s", c->url, err);
#define STR_EQ(got, want)                                                                          \
    do {                                                                                           \
        if (want)                                                                                  \
            cr_assert(got && strcmp(got, want) == 0, "%s: %s", c->url, #got);                    \
        else                                                                                       \
            cr_assert_null(got, "%s: %s", c->url, #got);                                           \
    } while (0)
        STR_EQ(t.host, c->host);
        STR_EQ(t.unix_path, c->unix_path);
        STR_EQ(t.username, c->username);
        STR_EQ(t.password, c->password);
#undef STR_EQ
        cr_assert_eq(t.port, c->port, "%s", c->url);
        cr_assert_eq(t.db, c->db, "%s", c->url);
        cr_assert_eq(t.tls, strncasecmp(c->url, "rediss://", 9) == 0, "%s: tls", c->url);
        char *red = sl_redis_target_redacted(&t);
        cr_assert_str_eq(red, c->redacted);
        cr_assert_null(strstr(red, SECRET));
        free(red);
        sl_redis_target_clear(&t);
        cr_assert_null(t.host);
        cr_assert_null(t.password);
    }
}

Test(redis_url, errors_say_what_and_never_the_password)
{
    const struct {
        const char *url, *msg;
    } cases[] = {
        {"redis://u:" SECRET "@h:0/0", "redis: port must be an integer between 1 and 65535"},
        {"redis://u:" SECRET "@h:65536", "redis: port must be an integer between 1 and 65535"},
        {"redis://h:", "redis: port must be an integer between 1 and 65535"},
        {"redis://" SECRET ":x@h:12a", "redis: port must be an integer between 1 and 65535"},
        {"redis://::1:6379", "redis: an IPv6 address must be in brackets, e.g. redis://[::1]:6379"},
        {"redis://[::1:6379", "redis: missing ']' after the IPv6 address"},
        {"redis://[::1]x", "redis: unexpected text after the IPv6 address"},
        {"redis://[nothex]", "redis: invalid host"},
        {"redis://h_ost!", "redis: invalid host"},
        {"redis://", "redis: missing host (redis://host:port/db)"},
        {"redis://u:" SECRET "@:6379", "redis: missing host (redis://host:port/db)"},
        {"redis://h/x", "redis: the database (/db) must be an integer between 0 and 2147483647"},
        {"redis://h/-1", "redis: the database (/db) must be an integer between 0 and 2147483647"},
        {"redis://h/2147483648",
         "redis: the database (/db) must be an integer between 0 and 2147483647"},
        {"redis://h/1?db=2", "redis: the database is given twice"},
        {"redis://h?timeout=1", "redis: unknown URL parameter (only db=N is supported)"},
        {"redis://h#frag", "redis: unexpected '#' in the URL"},
        {"redis://user:@h", "redis: a user name needs a password (redis://user:password@host)"},
        {"redis://u:" SECRET "%zz@h", "redis: invalid percent-encoding in the password"},
        {"redis://u:" SECRET " x@h", "redis: URL must not contain spaces or control characters "
                                     "(percent-encode them in a password)"},
        {"rediss://", "redis: missing host (redis://host:port/db)"},
        {"http://" SECRET "@h", "redis: must be a redis://host:port/db, rediss://, "
                                "unix:///path/to/redis.sock, redis-cluster://host:port,... or "
                                "redis-sentinel://host:port,.../NAME URL"},
        {"127.0.0.1:6379", "redis: must be a redis://host:port/db, rediss://, "
                           "unix:///path/to/redis.sock, redis-cluster://host:port,... or "
                           "redis-sentinel://host:port,.../NAME URL"},
        {"redis-cluster://u:" SECRET "@h1:7000,,h2:7001",
         "redis: empty address in the list (host:port,host:port)"},
        {"redis-cluster://h1:7000,h2:99999",
         "redis: port must be an integer between 1 and 65535"},
        {"redis-cluster://h1:7000/1", "redis: a cluster URL is only its seed nodes "
                                      "(redis-cluster://host:port,host:port; a cluster has no /db)"},
        {"redis-cluster://", "redis: empty address in the list (host:port,host:port)"},
        {"redis-sentinel://u:" SECRET "@s1,s2",
         "redis: missing the primary's name (redis-sentinel://host:26379,host:26379/MASTER_NAME)"},
        {"redis-sentinel://s1/my master", "redis: URL must not contain spaces or control "
                                          "characters (percent-encode them in a password)"},
        {"redis-sentinel://s1/my*master", "redis: the primary's name may hold only letters, "
                                          "digits, '-', '_' and '.'"},
        {"redis-sentinel://s1/m/x",
         "redis: the database (/db) must be an integer between 0 and 2147483647"},
        {"redis-sentinel://s1/m/1?db=2",
         "redis: unexpected text after redis-sentinel://hosts/MASTER_NAME/db"},
        {"", "redis: empty URL"},
        {"unix://relative.sock", "redis: unix socket path must be absolute "
                                 "(unix:///path/to/redis.sock)"},
        {"unix:///", "redis: missing unix socket path (unix:///path/to/redis.sock)"},
        {"unix:///s.sock?db=x", "redis: db must be an integer between 0 and 2147483647"},
        {"unix:///s.sock?password=" SECRET,
         "redis: unknown URL parameter (only db=N is supported)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_redis_target t;
        char err[256] = "";
        cr_assert_not(sl_redis_target_parse(cases[i].url, &t, err, sizeof err), "accepted %s",
                      cases[i].url);
        cr_assert_str_eq(err, cases[i].msg, "%s", cases[i].url);
        cr_assert_null(t.host);
        cr_assert_null(t.password);
    }
    char long_url[200] = "unix:///";
    memset(long_url + 8, 's', 110);
    sl_redis_target t;
    char err[256];
    cr_assert_not(sl_redis_target_parse(long_url, &t, err, sizeof err));
    cr_assert_str_eq(err, "redis: unix socket path is too long (at most 107 bytes)");
}

Test(redis_url, cluster_and_sentinel_seed_lists)
{
    sl_redis_target t;
    char err[256] = "";
    cr_assert(sl_redis_target_parse("rediss-cluster://app:" SECRET "@10.0.0.1:7000,[::1],n3:7002/",
                                    &t, err, sizeof err), "%s", err);
    cr_assert_eq(t.mode, SL_REDIS_CLUSTER);
    cr_assert(t.tls);
    cr_assert_eq(t.seed_count, 3);
    cr_assert_str_eq(t.seeds[0].host, "10.0.0.1");
    cr_assert_eq(t.seeds[0].port, 7000);
    cr_assert_str_eq(t.seeds[1].host, "::1");
    cr_assert_eq(t.seeds[1].port, 6379, "a cluster seed's port defaults to Redis's");
    cr_assert_str_eq(t.seeds[2].host, "n3");
    cr_assert_str_eq(t.host, "10.0.0.1", "host is the first seed");
    cr_assert_str_eq(t.username, "app");
    cr_assert_str_eq(t.password, SECRET);
    char *red = sl_redis_target_redacted(&t);
    cr_assert_str_eq(red, "rediss-cluster://app:***@10.0.0.1:7000,[::1]:6379,n3:7002");
    free(red);

    sl_redis_target node;
    cr_assert(sl_redis_target_node(&t, "10.0.0.9", 7005, &node));
    cr_assert_eq(node.mode, SL_REDIS_STANDALONE);
    cr_assert_str_eq(node.host, "10.0.0.9");
    cr_assert_eq(node.port, 7005);
    cr_assert_str_eq(node.password, SECRET);
    cr_assert(node.tls);
    cr_assert_null(node.seeds);
    cr_assert_not(sl_redis_target_same(&node, &t));
    sl_redis_target_clear(&node);
    sl_redis_target_clear(&t);

    cr_assert(sl_redis_target_parse("redis-sentinel://:" SECRET "@s1,s2:26380,s3/mymaster/3", &t,
                                    err, sizeof err), "%s", err);
    cr_assert_eq(t.mode, SL_REDIS_SENTINEL);
    cr_assert_not(t.tls);
    cr_assert_eq(t.seed_count, 3);
    cr_assert_eq(t.seeds[0].port, 26379, "a sentinel's port defaults to 26379");
    cr_assert_eq(t.seeds[1].port, 26380);
    cr_assert_str_eq(t.master_name, "mymaster");
    cr_assert_eq(t.db, 3);
    red = sl_redis_target_redacted(&t);
    cr_assert_str_eq(red, "redis-sentinel://:***@s1:26379,s2:26380,s3:26379/mymaster/3");
    free(red);
    sl_redis_target again;
    cr_assert(sl_redis_target_parse("redis-sentinel://:" SECRET "@s1,s2:26380,s3/mymaster/3",
                                    &again, err, sizeof err));
    cr_assert(sl_redis_target_same(&t, &again));
    sl_redis_target_clear(&again);
    cr_assert(sl_redis_target_copy(&t, &again));
    cr_assert(sl_redis_target_same(&t, &again), "a copy is the same target");
    cr_assert_neq(again.seeds, t.seeds, "with seeds of its own");
    cr_assert_str_eq(again.password, SECRET);
    sl_redis_target_clear(&again);
    cr_assert(sl_redis_target_parse("redis-sentinel://:" SECRET "@s1,s2:26380,s4/mymaster/3",
                                    &again, err, sizeof err));
    cr_assert_not(sl_redis_target_same(&t, &again), "another sentinel is another target");
    sl_redis_target_clear(&again);
    sl_redis_target_clear(&t);
    cr_assert_null(t.seeds);

    cr_assert(sl_redis_target_parse("unix://:" SECRET "@/tmp/r.sock?db=2", &t, err, sizeof err));
    cr_assert(sl_redis_target_copy(&t, &again));
    cr_assert(sl_redis_target_same(&t, &again), "a unix socket's copy too");
    cr_assert_str_eq(again.unix_path, "/tmp/r.sock");
    sl_redis_target_clear(&again);
    sl_redis_target_clear(&t);
}

Test(redis_url, in_the_config_with_secrets)
{
    sl_config *cfg = ok("{'redis': 'redis://app:${REDIS_PW}@[::1]:6380/2', " TENANTS(""));
    cr_assert_str_eq(cfg->redis.password, SECRET);
    cr_assert_str_eq(cfg->redis.username, "app");
    cr_assert_str_eq(cfg->redis.host, "::1");
    cr_assert_str_eq(cfg->redis_url_redacted, "redis://app:***@[::1]:6380/2");
    sl_config_free(cfg);

    cfg = ok("{'redis': '@/run/credentials/redis-url', " TENANTS(""));
    cr_assert_str_eq(cfg->redis.password, SECRET);
    cr_assert_str_eq(cfg->redis.host, "db.example");
    cr_assert_eq(cfg->redis.port, 6390);
    cr_assert_str_eq(cfg->redis_url_redacted, "redis://:***@db.example:6390/1");
    sl_config_free(cfg);

    sl_errors errs;
    sl_errors_init(&errs);
    cr_assert_null(parse_with("{'redis': 'redis://:${REDIS_PW}@h:99999', " TENANTS(""), &errs, 1));
    cr_assert_eq(errs.count, 1);
    cr_assert_str_eq(errs.items[0], "redis: port must be an integer between 1 and 65535");
    sl_errors_clear(&errs);

    bad("{'redis': 'redis://:" SECRET "@h/abc', " TENANTS(""),
        "redis: the database (/db) must be an integer between 0 and 2147483647", NULL);
    bad("{'redis': 'redis://:${NOPE}@h', " TENANTS(""),
        "redis: environment variable NOPE is not set", NULL);
}

Test(redis_url, a_cluster_is_taken)
{
    sl_config *cfg = ok("{'redis': 'rediss-cluster://app:${REDIS_PW}@10.0.0.1:7000,10.0.0.2:7001', "
                        TENANTS(""));
    cr_assert_eq(cfg->redis.mode, SL_REDIS_CLUSTER);
    cr_assert_eq(cfg->redis.seed_count, 2);
    cr_assert(cfg->redis.tls);
    cr_assert_str_eq(cfg->redis_url_redacted,
                     "rediss-cluster://app:***@10.0.0.1:7000,10.0.0.2:7001");
    sl_config_free(cfg);
}

/* ---- redis_tls ---------------------------------------------------------------- */

Test(redis_tls, options_for_a_rediss_url)
{
    sl_config *cfg = ok("{'redis': 'rediss://redis.example', " TENANTS(""));
    cr_assert(cfg->redis.tls);
    cr_assert_null(cfg->redis.tls_options.ca_file, "the system's CAs by default");
    cr_assert_not(cfg->redis.tls_options.no_verify, "verified by default");
    sl_config_free(cfg);

    cfg = ok("{'redis': 'rediss://10.0.0.5:6380', 'redis_tls': {'ca_file': '/tls/ca.pem', "
             "'cert_file': '/tls/ca.pem', 'key_file': '/tls/client.key', "
             "'server_name': 'redis.internal', 'verify': true}, " TENANTS(""));
    const sl_redis_tls_options *o = &cfg->redis.tls_options;
    cr_assert_str_eq(o->ca_file, "/tls/ca.pem");
    cr_assert_str_eq(o->cert_file, "/tls/ca.pem");
    cr_assert_str_eq(o->key_file, "/tls/client.key");
    cr_assert_str_eq(o->server_name, "redis.internal");
    cr_assert_not(o->no_verify);
    cr_assert_str_eq(cfg->redis_url_redacted, "rediss://10.0.0.5:6380/0");
    sl_config_free(cfg);

    cfg = ok("{'redis': 'rediss://h', 'redis_tls': {'verify': false}, " TENANTS(""));
    cr_assert(cfg->redis.tls_options.no_verify);
    sl_config_free(cfg);
}

Test(redis_tls, mistakes_are_named_at_their_path)
{
    bad("{'redis': 'rediss://h', 'redis_tls': {'ca_file': '/tls/missing.pem'}, " TENANTS(""),
        "redis_tls.ca_file: cannot read /tls/missing.pem: No such file or directory", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'ca_file': 'ca.pem'}, " TENANTS(""),
        "redis_tls.ca_file: must be an absolute path", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'cert_file': '/tls/ca.pem'}, " TENANTS(""),
        "redis_tls.key_file: is required with redis_tls.cert_file (a client certificate needs "
        "its key)", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'key_file': '/tls/client.key'}, " TENANTS(""),
        "redis_tls.cert_file: is required with redis_tls.key_file (a client certificate needs "
        "its key)", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'verify': 'no'}, " TENANTS(""),
        "redis_tls.verify: must be true or false, not a string", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'server_name': 'a b'}, " TENANTS(""),
        "redis_tls.server_name: must be a host name (letters, digits, '-' and '.')", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': {'ca': '/tls/ca.pem'}, " TENANTS(""),
        "redis_tls.ca: unknown key", NULL);
    bad("{'redis': 'rediss://h', 'redis_tls': true, " TENANTS(""),
        "redis_tls: must be an object, not a boolean", NULL);
    bad("{'redis': 'redis://h', 'redis_tls': {'verify': true}, " TENANTS(""),
        "redis_tls: applies only to a rediss:// URL in \"redis\"", NULL);
}

/* ---- admin ------------------------------------------------------------------ */

Test(admin, null_disables_and_addresses_are_checked)
{
    sl_config *cfg = ok("{'admin': null, " TENANTS(""));
    cr_assert_null(cfg->admin);
    cr_assert_null(cfg->admin_host);
    sl_config_free(cfg);

    const struct {
        const char *addr, *host;
        int port;
    } good[] = {{"[::1]:9464", "::1", 9464},
                {"0.0.0.0:80", "0.0.0.0", 80},
                {"localhost:65535", "localhost", 65535},
                {"[::]:9464", "::", 9464}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{'admin': '%s', 'tenants': {'a': {'endpoint': 'http://h/', "
                                    "'rate': 1}}}",
                 good[i].addr);
        cfg = ok(json);
        cr_assert_str_eq(cfg->admin, good[i].addr);
        cr_assert_str_eq(cfg->admin_host, good[i].host);
        cr_assert_eq(cfg->admin_port, good[i].port);
        sl_config_free(cfg);
    }
    const char *wrong[] = {"localhost", ":9464", "::1:9464", "host:0", "host:65536", "[h]:1",
                           "[::1]", "[::1]9464", "a b:1", "", "host:x"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{'admin': '%s', 'tenants': {'a': {'endpoint': 'http://h/', "
                                    "'rate': 1}}}",
                 wrong[i]);
        bad(json,
            "admin: must be \"host:port\" (e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"), or null "
            "to disable",
            NULL);
    }
    bad("{'admin': 9464, " TENANTS(""), "admin: must be a string, not a number", NULL);
    bad("{'admin': false, " TENANTS(""), "admin: must be a string, not a boolean", NULL);
}

/* ---- loading and the error list ------------------------------------------------ */

Test(load, reads_through_the_env)
{
    sl_config_env env = fake(2);
    sl_errors errs;
    sl_errors_init(&errs);
    sl_config *cfg = sl_config_load("/etc/sluice/ok.json", &env, &errs);
    cr_assert_not_null(cfg);
    cr_assert_eq(cfg->workers, 2);
    sl_config_free(cfg);
    cr_assert_null(sl_config_load("/etc/sluice/missing.json", &env, &errs));
    cr_assert_eq(errs.count, 1);
    cr_assert_str_eq(errs.items[0], "/etc/sluice/missing.json: No such file or directory");
    sl_errors_clear(&errs);
    sl_config_free(NULL);
}

Test(load, errors_already_in_the_list_are_kept)
{
    sl_errors errs;
    sl_errors_init(&errs);
    sl_errors_add(&errs, "earlier: %d", 1);
    sl_config *cfg = parse_with(ACME(""), &errs, 1);
    cr_assert_not_null(cfg, "an earlier error is not a problem of this file");
    sl_config_free(cfg);
    cr_assert_null(parse_with(ACME(", 'rate': 2"), &errs, 1));
    cr_assert_eq(errs.count, 2);
    cr_assert_str_eq(errs.items[0], "earlier: 1");
    sl_errors_clear(&errs);
}

Test(errors, grow_and_clear)
{
    sl_errors errs;
    sl_errors_init(&errs);
    cr_assert_not(sl_errors_any(&errs));
    for (int i = 0; i < 100; i++)
        sl_errors_add(&errs, "e%d %s", i, "x");
    cr_assert(sl_errors_any(&errs));
    cr_assert_eq(errs.count, 100);
    cr_assert_str_eq(errs.items[0], "e0 x");
    cr_assert_str_eq(errs.items[99], "e99 x");
    sl_errors_clear(&errs);
    cr_assert_not(sl_errors_any(&errs));
    sl_errors_add(&errs, "again");
    cr_assert_eq(errs.count, 1);
    sl_errors_clear(&errs);
}

/* ---- a tenant's tls ---------------------------------------------------- */

Test(tls, a_private_ca_and_a_client_certificate)
{
    sl_config *cfg = ok("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': "
                        "{'ca_file': '/etc/sluice/ca.pem', 'cert_file': '/run/credentials/token',"
                        " 'key_file': '/run/credentials/crlf'}}, 'b': {'endpoint': 'https://h/',"
                        " 'rate': 1}}}");
    const sl_tenant_config *a = sl_config_find_tenant(cfg, "a"), *b = sl_config_find_tenant(cfg, "b");
    cr_assert_str_eq(a->tls_ca_file, "/etc/sluice/ca.pem");
    cr_assert_str_eq(a->tls_cert_file, "/run/credentials/token");
    cr_assert_str_eq(a->tls_key_file, "/run/credentials/crlf");
    cr_assert_null(b->tls_ca_file, "no tls: the system's CAs");
    cr_assert_null(b->tls_cert_file);
    sl_config_free(cfg);
}

Test(tls, each_mistake_is_named)
{
    bad("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': {'ca_file': 'ca.pem'}}}}",
        "tenants.a.tls.ca_file: must be an absolute path", NULL);
    bad("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': {'ca_file': '/nope.pem'}}}}",
        "tenants.a.tls.ca_file: cannot read /nope.pem: No such file or directory", NULL);
    bad("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': "
        "{'cert_file': '/etc/sluice/ca.pem'}}}}",
        "tenants.a.tls.key_file: is required with tenants.a.tls.cert_file (a client certificate needs its key)", NULL);
    bad("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': {'verify': false}}}}",
        "tenants.a.tls.verify: unknown key", NULL);
    bad("{'tenants': {'a': {'endpoint': 'https://h/', 'rate': 1, 'tls': 'yes'}}}",
        "tenants.a.tls: must be an object, not a string", NULL);
}
