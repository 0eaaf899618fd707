/* test_metrics.c - counters, histograms and labels, and the Prometheus
 * text they render to. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "base/metrics.h"

/* The rendered text of view, NUL-terminated; the caller frees it. */
static char *render(const sl_process_view *view)
{
    struct evbuffer *out = evbuffer_new();
    cr_assert(sl_metrics_render(out, view));
    size_t len = evbuffer_get_length(out);
    char *text = malloc(len + 1);
    evbuffer_remove(out, text, len);
    text[len] = '\0';
    evbuffer_free(out);
    return text;
}

/* True if text has exactly this line. */
static bool has_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p += len)
        if ((p == text || p[-1] == '\n') && p[len] == '\n')
            return true;
    return false;
}

static void assert_line(const char *text, const char *line)
{
    cr_assert(has_line(text, line), "no line \"%s\" in:\n%s", line, text);
}

Test(metrics, histogram_buckets_are_upper_bounds_and_cumulative)
{
    sl_tenant_metrics m;
    sl_tenant_metrics_init(&m);
    atomic_store(&m.active, true);
    const int64_t latencies_us[] = {0, 500, 501, 1000, 4999999, 5000000, 5000001, -3};
    for (size_t i = 0; i < sizeof latencies_us / sizeof *latencies_us; i++)
        sl_histogram_observe(&m.latency, &sl_latency_bounds, latencies_us[i]);
    sl_histogram_observe(&m.shaping_delay, &sl_shaping_delay_bounds, 1000001); /* past 1 s */
    sl_tenant_view tenant = {"acme", &m};
    sl_process_view view = {.version = "1.2.3", .tenants = &tenant, .tenant_count = 1};
    char *text = render(&view);
    /* 0, 500 and -3 (counted as 0) are <= 0.0005 */
    assert_line(text, "sluice_delivery_latency_seconds_bucket{tenant=\"acme\",le=\"0.0005\"} 3");
    assert_line(text, "sluice_delivery_latency_seconds_bucket{tenant=\"acme\",le=\"0.001\"} 5");
    assert_line(text, "sluice_delivery_latency_seconds_bucket{tenant=\"acme\",le=\"1\"} 5");
    assert_line(text, "sluice_delivery_latency_seconds_bucket{tenant=\"acme\",le=\"5\"} 7");
    assert_line(text, "sluice_delivery_latency_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 8");
    assert_line(text, "sluice_delivery_latency_seconds_count{tenant=\"acme\"} 8");
    assert_line(text, "sluice_delivery_latency_seconds_sum{tenant=\"acme\"} 15.002001");
    /* the shaping histogram has 11 bounds: past the last is +Inf only */
    assert_line(text, "sluice_shaping_delay_seconds_bucket{tenant=\"acme\",le=\"1\"} 0");
    assert_line(text, "sluice_shaping_delay_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 1");
    free(text);
    sl_tenant_metrics_clear(&m);
}

Test(metrics, outcomes_reasons_and_codes)
{
    sl_tenant_metrics m;
    sl_tenant_metrics_init(&m);
    atomic_store(&m.active, true);
    sl_counter_add(&m.claimed, 10);
    sl_counter_add(&m.delivered, 6);
    sl_counter_add(&m.retried, 2);
    sl_counter_add(&m.dead_lettered, 3);
    sl_label_add(&m.dead_reasons, "http_4xx", 8, 1);
    sl_label_add(&m.dead_reasons, "limit:quota-and-more", 11, 2); /* "limit:quota" */
    sl_status_add(&m.responses, 200);
    sl_status_add(&m.responses, 0);
    sl_status_add(&m.responses, 200);
    sl_gauge_set(&m.queue_depth, 1234);
    sl_gauge_set(&m.in_flight, 7);
    sl_tenant_view tenant = {"acme", &m};
    sl_process_view view = {.version = "1.2.3", .ready = true, .redis_errors = 4,
                            .redis_reconnects = 1, .tenants = &tenant, .tenant_count = 1};
    char *text = render(&view);
    assert_line(text, "sluice_build_info{version=\"1.2.3\"} 1");
    assert_line(text, "sluice_ready 1");
    assert_line(text, "sluice_tenants 1");
    assert_line(text, "sluice_redis_errors_total 4");
    assert_line(text, "sluice_redis_reconnects_total 1");
    assert_line(text, "# TYPE sluice_jobs_total counter");
    assert_line(text, "sluice_jobs_claimed_total{tenant=\"acme\"} 10");
    assert_line(text, "sluice_jobs_total{tenant=\"acme\",outcome=\"delivered\"} 6");
    assert_line(text, "sluice_jobs_total{tenant=\"acme\",outcome=\"retried\"} 2");
    assert_line(text, "sluice_jobs_total{tenant=\"acme\",outcome=\"dead_lettered\"} 3");
    assert_line(text, "sluice_jobs_total{tenant=\"acme\",outcome=\"released\"} 0");
    assert_line(text, "sluice_dead_letters_total{tenant=\"acme\",reason=\"http_4xx\"} 1");
    assert_line(text, "sluice_dead_letters_total{tenant=\"acme\",reason=\"limit:quota\"} 2");
    assert_line(text, "sluice_http_responses_total{tenant=\"acme\",code=\"200\"} 2");
    assert_line(text, "sluice_http_responses_total{tenant=\"acme\",code=\"error\"} 1");
    assert_line(text, "sluice_queue_depth{tenant=\"acme\"} 1234");
    assert_line(text, "sluice_waiting{tenant=\"acme\"} 0");
    assert_line(text, "sluice_in_flight{tenant=\"acme\"} 7");
    cr_assert_null(strstr(text, "code=\"other\""), "no overflow yet");
    free(text);
    sl_tenant_metrics_clear(&m);
}

Test(metrics, labels_beyond_the_slots_count_as_other)
{
    sl_tenant_metrics m;
    sl_tenant_metrics_init(&m);
    atomic_store(&m.active, true);
    for (int status = 400; status < 400 + SL_LABEL_SLOTS + 3; status++)
        sl_status_add(&m.responses, status);
    for (int i = 0; i < SL_LABEL_SLOTS + 2; i++) {
        char reason[16];
        int len = snprintf(reason, sizeof reason, "r%d", i);
        sl_label_add(&m.dead_reasons, reason, (size_t)len, 1);
    }
    sl_label_add(&m.dead_reasons, "r0", 2, 5); /* a known label keeps its slot */
    sl_tenant_view tenant = {"acme", &m};
    sl_process_view view = {.version = "x", .tenants = &tenant, .tenant_count = 1};
    char *text = render(&view);
    assert_line(text, "sluice_http_responses_total{tenant=\"acme\",code=\"400\"} 1");
    assert_line(text, "sluice_http_responses_total{tenant=\"acme\",code=\"other\"} 3");
    assert_line(text, "sluice_dead_letters_total{tenant=\"acme\",reason=\"r0\"} 6");
    assert_line(text, "sluice_dead_letters_total{tenant=\"acme\",reason=\"other\"} 2");
    free(text);
    sl_tenant_metrics_clear(&m);
}

Test(metrics, idle_tenants_show_no_series_and_labels_are_escaped)
{
    sl_tenant_metrics idle, busy;
    sl_tenant_metrics_init(&idle);
    sl_tenant_metrics_init(&busy);
    atomic_store(&busy.active, true);
    sl_label_add(&busy.dead_reasons, "a\"b\\c\nd", 7, 1);
    /* a tenant that never had a job has no metrics at all (NULL) */
    sl_tenant_view tenants[] = {{"idle", &idle}, {"busy", &busy}, {"never", NULL}};
    sl_process_view view = {.version = "x", .tenants = tenants, .tenant_count = 3};
    char *text = render(&view);
    assert_line(text, "sluice_tenants 3");
    cr_assert_null(strstr(text, "tenant=\"idle\""), "an idle tenant costs no series");
    cr_assert_null(strstr(text, "tenant=\"never\""), "nor one without metrics");
    assert_line(text, "sluice_dead_letters_total{tenant=\"busy\",reason=\"a\\\"b\\\\c\\nd\"} 1");
    free(text);
    sl_tenant_metrics_clear(&idle);
    sl_tenant_metrics_clear(&busy);
}

Test(metrics, the_effective_rate_and_the_pause_of_the_last_claim)
{
    sl_tenant_metrics busy, paused, idle;
    sl_tenant_metrics_init(&busy);
    sl_tenant_metrics_init(&paused);
    sl_tenant_metrics_init(&idle);
    atomic_store(&busy.active, true);
    sl_gauge_set(&busy.rate_milli, 20500);
    sl_gauge_set(&paused.rate_milli, 10000);
    sl_gauge_set(&paused.paused, 1);
    sl_gauge_set(&idle.rate_milli, 10000);
    sl_tenant_view tenants[] = {{"busy", &busy}, {"paused", &paused}, {"idle", &idle}};
    sl_process_view view = {.version = "x", .tenants = tenants, .tenant_count = 3};
    char *text = render(&view);
    assert_line(text, "# TYPE sluice_tenant_rate gauge");
    assert_line(text, "# TYPE sluice_tenant_paused gauge");
    assert_line(text, "sluice_tenant_rate{tenant=\"busy\"} 20.500");
    assert_line(text, "sluice_tenant_paused{tenant=\"busy\"} 0");
    assert_line(text, "sluice_tenant_rate{tenant=\"paused\"} 10.000");
    assert_line(text, "sluice_tenant_paused{tenant=\"paused\"} 1");
    cr_assert_null(strstr(text, "tenant=\"idle\""), "an idle tenant costs no series");
    free(text);
    sl_tenant_metrics_clear(&busy);
    sl_tenant_metrics_clear(&paused);
    sl_tenant_metrics_clear(&idle);
}
