/* test_redis_tls.c - rediss:// end to end: redis_link (the transport of
 * the daemon and the CLI) against a real redis-server that talks only
 * TLS, with a CA and certificates made by openssl for each test; the
 * words of each failure; the link's own deadlines against a peer that
 * never answers; redis_client and notify over TLS; and the real binary
 * (check-config, push, stats, dlq, run) on a rediss:// config. The pure
 * part, sl_redis_tls_describe, comes first. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon_env.h"
#include "daemon_process.h"
#include "redis/notify.h"
#include "redis/redis_client.h"
#include "redis/redis_link.h"
#include "redis/redis_tls.h"
#include "event_wait.h"
#include "redis_server.h"
#include "sink_process.h"
#include "tls_redis.h"

/* ---- the words of a failure (pure) ------------------------------------ */

Test(tls_describe, names_the_cause)
{
    char out[256];
    sl_redis_tls_describe(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, 0, out, sizeof out);
    cr_assert_str_eq(out, "certificate verify failed: unable to get local issuer certificate");
    sl_redis_tls_describe(X509_V_ERR_HOSTNAME_MISMATCH, 0, out, sizeof out);
    cr_assert_str_eq(out, "certificate verify failed: host name mismatch");
    sl_redis_tls_describe(X509_V_ERR_IP_ADDRESS_MISMATCH, 0, out, sizeof out);
    cr_assert_str_eq(out, "certificate verify failed: host name mismatch");
    sl_redis_tls_describe(X509_V_ERR_CERT_HAS_EXPIRED, 0, out, sizeof out);
    cr_assert_str_eq(out, "certificate verify failed: certificate has expired");
    sl_redis_tls_describe(X509_V_OK, ERR_PACK(ERR_LIB_SSL, 0, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED),
                          out, sizeof out);
    cr_assert_str_eq(out, "TLS error: tlsv13 alert certificate required");
    sl_redis_tls_describe(X509_V_OK, 0, out, sizeof out);
    cr_assert_str_eq(out, "connection closed during TLS");
}

Test(tls_context, unusable_files_are_named)
{
    char err[512];
    char ca[] = "/nonexistent/ca.pem", cert[] = "/nonexistent/c.pem", key[] = "/nonexistent/k";
    sl_redis_tls_options o = {.ca_file = ca};
    cr_assert_null(sl_redis_tls_ctx_new(&o, err, sizeof err));
    cr_assert(strstr(err, "cannot load the CA certificates from /nonexistent/ca.pem"), "%s", err);
    o = (sl_redis_tls_options){.cert_file = cert, .key_file = key};
    cr_assert_null(sl_redis_tls_ctx_new(&o, err, sizeof err));
    cr_assert(strstr(err, "cannot load the client certificate /nonexistent/c.pem"), "%s", err);
    o = (sl_redis_tls_options){0};
    SSL_CTX *ctx = sl_redis_tls_ctx_new(&o, err, sizeof err); /* the system's CAs */
    cr_assert_not_null(ctx, "%s", err);
    SSL_CTX_free(ctx);
}

/* ---- a link to a server ------------------------------------------------- */

static tls_redis server;

static void start_server_trusting(const char *trusts, bool auth_clients,
                                  const char *const *extra)
{
    char err[256];
    cr_assert(tls_redis_make_certs(&server, err, sizeof err), "%s", err);
    server.trusts = trusts;
    cr_assert(tls_redis_start(&server, auth_clients, extra, err, sizeof err), "%s", err);
}

static void start_server(bool auth_clients, const char *const *extra)
{
    start_server_trusting(NULL, auth_clients, extra);
}

static void stop_server(void)
{
    tls_redis_stop(&server);
}

TestSuite(tls_link, .fini = stop_server, .timeout = 60);

/* What one link saw: how it ended (why), and the reply to its PING. */
typedef struct link_run {
    sl_redis_link *link;
    bool up, down, replied;
    char why[256];
    char reply[64]; /* the PING's reply ("PONG", "ERR ...") or "" if NULL */
    bool send_ping; /* PING once up */
} link_run;

static void on_ping(redisReply *reply, void *arg)
{
    link_run *run = arg;
    run->replied = true;
    snprintf(run->reply, sizeof run->reply, "%s", reply && reply->str ? reply->str : "");
}

static void on_event(void *arg, bool up, const char *why)
{
    link_run *run = arg;
    if (up) {
        run->up = true;
        if (run->send_ping) {
            const char *argv[] = {"PING"};
            cr_assert(sl_redis_link_send_argv(run->link, 1, argv, NULL, on_ping, run, 0));
        }
        return;
    }
    run->down = true;
    snprintf(run->why, sizeof run->why, "%s", why);
}

static const sl_redis_link_timeouts quick = {
    .connect_ms = 2000, .handshake_ms = 2000, .reply_ms = 2000};

/* Opens a link to target, PINGs once up, and runs the loop until the PING
 * is answered or the link is gone. */
static void run_link(const sl_redis_target *t, const sl_redis_link_timeouts *timeouts,
                     link_run *run)
{
    struct event_base *base = event_base_new();
    char err[256];
    run->send_ping = true;
    run->link = sl_redis_link_open(base, t, timeouts, on_event, NULL, run, err, sizeof err);
    cr_assert_not_null(run->link, "%s", err);
    while (!run->down && !run->replied)
        event_base_loop(base, EVLOOP_ONCE);
    /* A failure right after the handshake (a refused client certificate
     * in TLS 1.3) ends the PING too: let the link finish saying why. */
    while (run->replied && !run->reply[0] && !run->down)
        event_base_loop(base, EVLOOP_ONCE);
    sl_redis_link_free(run->link);
    event_base_free(base);
}

/* A rediss:// target for the test server, trusting `ca` (a file of it). */
static sl_redis_target target_for(const char *ca)
{
    sl_redis_target t = {0};
    char err[256], url[64];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d/0", server.port);
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err), "%s", err);
    cr_assert(t.tls);
    if (ca) {
        char path[128];
        tls_redis_path(&server, ca, path, sizeof path);
        t.tls_options.ca_file = strdup(path);
    }
    return t;
}

static void use_client_cert(sl_redis_target *t)
{
    char path[128];
    tls_redis_path(&server, "client.pem", path, sizeof path);
    t->tls_options.cert_file = strdup(path);
    tls_redis_path(&server, "client.key", path, sizeof path);
    t->tls_options.key_file = strdup(path);
}

Test(tls_link, verified_by_its_ca)
{
    start_server(false, NULL);
    sl_redis_target t = target_for("ca.pem");
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert(run.up, "%s", run.why);
    cr_assert_str_eq(run.reply, "PONG");
    sl_redis_target_clear(&t);
}

Test(tls_link, a_name_in_the_certificate_is_verified)
{
    start_server(false, NULL);
    sl_redis_target t = target_for("ca.pem");
    t.tls_options.server_name = strdup("localhost"); /* its DNS name, reached by IP */
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_str_eq(run.reply, "PONG", "%s", run.why);
    sl_redis_target_clear(&t);
}

Test(tls_link, an_unknown_ca_is_refused)
{
    start_server_trusting("other-ca.pem", false, NULL); /* it sends its certificate alone */
    sl_redis_target t = target_for("other-ca.pem");
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_not(run.up);
    cr_assert(run.down);
    cr_assert_str_eq(run.why, "certificate verify failed: unable to get local issuer certificate");
    sl_redis_target_clear(&t);
}

Test(tls_link, the_system_cas_do_not_know_a_private_ca)
{
    start_server(false, NULL); /* it sends its chain, root included */
    sl_redis_target t = target_for(NULL);
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_not(run.up);
    cr_assert_str_eq(run.why, "certificate verify failed: self-signed certificate in certificate "
                              "chain");
    sl_redis_target_clear(&t);
}

Test(tls_link, a_wrong_host_name_is_refused)
{
    start_server(false, NULL);
    sl_redis_target t = target_for("ca.pem");
    t.tls_options.server_name = strdup("redis.wrong.example");
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_not(run.up);
    cr_assert_str_eq(run.why, "certificate verify failed: host name mismatch");
    sl_redis_target_clear(&t);
}

Test(tls_link, verify_false_accepts_any_certificate)
{
    start_server(false, NULL);
    sl_redis_target t = target_for("other-ca.pem");
    t.tls_options.no_verify = true;
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_str_eq(run.reply, "PONG", "%s", run.why);
    sl_redis_target_clear(&t);
}

Test(tls_link, a_client_certificate_required_and_given)
{
    start_server(true, NULL);
    sl_redis_target t = target_for("ca.pem");
    use_client_cert(&t);
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert_str_eq(run.reply, "PONG", "%s", run.why);
    sl_redis_target_clear(&t);
}

Test(tls_link, a_client_certificate_required_and_missing)
{
    start_server(true, NULL);
    sl_redis_target t = target_for("ca.pem");
    link_run run = {0};
    run_link(&t, &quick, &run);
    cr_assert(run.down);
    cr_assert_str_eq(run.reply, "", "no PONG without a certificate");
    cr_log_info("without a client certificate: %s", run.why);
    cr_assert(strstr(run.why, "certificate required") ||
                  strstr(run.why, "does the server require a client certificate?"), "%s",
              run.why);
    sl_redis_target_clear(&t);
}

/* ---- the link's deadlines, against a peer that never says a word ------- */

/* A socket listening on a free loopback port that never accepts: the
 * kernel completes connections (the backlog), nobody answers. */
static int silent_listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    cr_assert(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    cr_assert(listen(fd, 8) == 0);
    cr_assert(getsockname(fd, (struct sockaddr *)&addr, &len) == 0);
    *port = ntohs(addr.sin_port);
    return fd;
}

static const sl_redis_link_timeouts short_waits = {
    .connect_ms = 2000, .handshake_ms = 300, .reply_ms = 300};

Test(link_deadlines, a_handshake_that_never_ends_times_out)
{
    int port, fd = silent_listener(&port);
    char url[64], err[256];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    sl_redis_target t;
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err));
    link_run run = {0};
    run_link(&t, &short_waits, &run);
    cr_assert_not(run.up);
    cr_assert_str_eq(run.why, "TLS handshake timed out after 300 ms");
    sl_redis_target_clear(&t);
    close(fd);
}

Test(link_deadlines, a_reply_that_never_comes_times_out)
{
    int port, fd = silent_listener(&port);
    char url[64], err[256];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    sl_redis_target t;
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err));
    link_run run = {0};
    run_link(&t, &short_waits, &run);
    cr_assert(run.up, "plain TCP is up at the connect");
    cr_assert(run.replied, "the PING's callback had its NULL");
    cr_assert_str_eq(run.reply, "");
    cr_assert_str_eq(run.why, "no reply within 300 ms");
    sl_redis_target_clear(&t);
    close(fd);
}

Test(link_deadlines, nothing_listening_is_a_clear_failure)
{
    char url[64], err[256];
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", rs_free_port());
    sl_redis_target t;
    cr_assert(sl_redis_target_parse(url, &t, err, sizeof err));
    struct event_base *base = event_base_new();
    link_run run = {0};
    run.link = sl_redis_link_open(base, &t, &short_waits, on_event, NULL, &run, err, sizeof err);
    if (run.link) { /* refused later rather than at once */
        while (!run.down)
            event_base_loop(base, EVLOOP_ONCE);
        snprintf(err, sizeof err, "%s", run.why);
        sl_redis_link_free(run.link);
    }
    cr_assert_str_eq(err, "connect: Connection refused");
    event_base_free(base);
    sl_redis_target_clear(&t);
}

/* ---- redis_client and notify over TLS ------------------------------------ */

typedef struct conn_run {
    bool ready, active;
    sl_notify *notify;
    char pushed[64];
    char reply[64];
} conn_run;

static void on_ready(void *arg, bool ready)
{
    ((conn_run *)arg)->ready = ready;
}

static void on_nodes(void *arg)
{
    sl_notify_nodes_changed(((conn_run *)arg)->notify);
}

static void on_conn_reply(redisReply *reply, void *arg)
{
    conn_run *run = arg;
    snprintf(run->reply, sizeof run->reply, "%s", reply && reply->str ? reply->str : "(lost)");
}

static void on_active(void *arg, bool active)
{
    ((conn_run *)arg)->active = active;
}

static void on_push(void *arg, const char *tenant)
{
    snprintf(((conn_run *)arg)->pushed, sizeof ((conn_run *)arg)->pushed, "%s", tenant);
}

static void run_until(struct event_base *base, const bool *flag, const char *what)
{
    cr_assert(event_wait(base, flag, 5000), "%s", what);
}

Test(tls_link, redis_client_and_notify_work_over_tls)
{
    const char *const notify_on[] = {"--notify-keyspace-events", "Kl", NULL};
    start_server(false, notify_on);
    sl_redis_target t = target_for("ca.pem");
    struct event_base *base = event_base_new();
    conn_run run = {0};
    sl_redis_client *client = sl_redis_client_new(base, &t, NULL, on_ready, on_nodes, &run);
    run.notify = sl_notify_new(base, client, "sluice", on_push, on_active, &run);
    run_until(base, &run.ready, "redis_client ready (AUTH, SCRIPT LOAD) over TLS");
    cr_assert_not_null(sl_redis_client_sha(client, "claim"));
    run_until(base, &run.active, "notifications subscribed over TLS");
    const char *argv[] = {"LPUSH", "sluice:{acme}:queue", "{}"};
    cr_assert(sl_redis_client_send(client, argv[1], 3, argv, NULL, on_conn_reply, &run));
    bool pushed = false;
    for (int i = 0; i < 500 && !pushed; i++) {
        struct timeval tv = {0, 10000};
        event_base_loopexit(base, &tv);
        event_base_dispatch(base);
        pushed = run.pushed[0] != '\0';
    }
    cr_assert_str_eq(run.pushed, "acme", "the push was seen through the subscription");
    sl_notify_free(run.notify);
    sl_redis_client_free(client);
    event_base_free(base);
    sl_redis_target_clear(&t);
}

/* ---- the binary on a rediss:// config ----------------------------------- */

#define OUT_MAX 16384
static char out[OUT_MAX];

/* Runs $SLUICE_BIN with args; stdout and stderr into `out`; exit code. */
static int run_bin(const char *const *args)
{
    const char *bin = getenv("SLUICE_BIN");
    cr_assert_not_null(bin, "SLUICE_BIN is not set");
    int pipefd[2];
    cr_assert(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        close(pipefd[1]);
        char *argv[16] = {strdup(bin)};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = strdup(args[i]);
        execv(bin, argv);
        _exit(127);
    }
    close(pipefd[1]);
    size_t used = 0;
    ssize_t n;
    while (used < OUT_MAX - 1 && (n = read(pipefd[0], out + used, OUT_MAX - 1 - used)) > 0)
        used += (size_t)n;
    out[used] = '\0';
    close(pipefd[0]);
    int status;
    cr_assert(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define RUN(...) run_bin((const char *const[]){__VA_ARGS__, NULL})

/* A config in the server's directory: rediss:// with `tls_json` as
 * redis_tls, tenant acme delivering to the sink. */
static void write_config(char *path, size_t size, const char *name, const char *tls_json,
                         int sink_port)
{
    tls_redis_path(&server, name, path, size);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f,
            "{\"redis\": \"rediss://127.0.0.1:%d/0\", \"redis_tls\": %s,\n"
            " \"workers\": 1, \"admin\": null, \"grace_ms\": 2000,\n"
            " \"tenants\": {\"acme\": {\"endpoint\": \"http://127.0.0.1:%d/status/200\","
            " \"rate\": 200}}}\n",
            server.port, tls_json, sink_port);
    fclose(f);
}

static sink_process sink;
static char env_dir[64];

static void binary_setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    daemon_env_start(&sink, env_dir, sizeof env_dir, "tls");
}

static void binary_teardown(void)
{
    tls_redis_stop(&server);
    daemon_env_stop(&sink, env_dir);
}

TestSuite(tls_binary, .init = binary_setup, .fini = binary_teardown, .timeout = 90);

Test(tls_binary, check_config_push_stats_dlq_and_delivery)
{
    start_server(true, NULL);
    char ca[128], cert[128], key[128], tls_json[512], config[128];
    tls_redis_path(&server, "ca.pem", ca, sizeof ca);
    tls_redis_path(&server, "client.pem", cert, sizeof cert);
    tls_redis_path(&server, "client.key", key, sizeof key);
    snprintf(tls_json, sizeof tls_json,
             "{\"ca_file\": \"%s\", \"cert_file\": \"%s\", \"key_file\": \"%s\"}", ca, cert, key);
    write_config(config, sizeof config, "good.json", tls_json, sink.port);

    int code = RUN("check-config", config);
    cr_assert_eq(code, 0, "%s", out);

    code = RUN("push", "-c", config, "acme", "{\"id\":\"t-1\"}", "{\"id\":\"t-2\"}",
               "{\"id\":\"t-3\"}");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "pushed 3 jobs to acme"), "%s", out);
    code = RUN("stats", "-c", config, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "\"queued\":3"), "%s", out);
    code = RUN("dlq", "list", "-c", config, "acme");
    cr_assert_eq(code, 0, "%s", out);

    char log[128], err[256];
    snprintf(log, sizeof log, "%s/sluice.log", env_dir);
    daemon_process d = {0};
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    sink_request *reqs = NULL;
    size_t n = sink_wait_log(&sink, 3, 20000, &reqs);
    sink_requests_free(reqs, n);
    cr_assert_eq(daemon_stop(&d, SIGTERM, 10000), 0, "clean exit");
    cr_assert_eq(n, 3, "3 jobs delivered through a verified, mutual TLS connection");
    code = RUN("stats", "-c", config, "acme", "--json");
    cr_assert_eq(code, 0, "%s", out);
    cr_assert(strstr(out, "\"queued\":0"), "%s", out);

    /* Without the client certificate the server refuses, and says so. */
    char no_cert[128], tls_ca_only[256];
    snprintf(tls_ca_only, sizeof tls_ca_only, "{\"ca_file\": \"%s\"}", ca);
    write_config(no_cert, sizeof no_cert, "no-cert.json", tls_ca_only, sink.port);
    code = RUN("stats", "-c", no_cert);
    cr_assert_eq(code, 1, "%s", out);
    cr_assert(strstr(out, "certificate required") ||
                  strstr(out, "does the server require a client certificate?"), "%s", out);
}

/* The lines of log that report a connect refused for an unknown CA. */
static int count_failures(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    char line[1024];
    int failures = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "redis connect failed") &&
            strstr(line, "certificate verify failed: unable to get local issuer certificate"))
            failures++;
    fclose(f);
    return failures;
}

Test(tls_binary, failures_name_their_cause)
{
    start_server_trusting("other-ca.pem", false, NULL);
    char other[128], tls_json[256], config[128];
    tls_redis_path(&server, "other-ca.pem", other, sizeof other);
    snprintf(tls_json, sizeof tls_json, "{\"ca_file\": \"%s\"}", other);
    write_config(config, sizeof config, "unknown-ca.json", tls_json, sink.port);
    int code = RUN("push", "-c", config, "acme", "{}");
    cr_assert_eq(code, 1, "%s", out);
    cr_assert(strstr(out, "cannot connect to Redis at rediss://127.0.0.1:"), "%s", out);
    cr_assert(strstr(out, "certificate verify failed: unable to get local issuer certificate"),
              "%s", out);

    write_config(config, sizeof config, "missing.json",
                 "{\"ca_file\": \"/nonexistent/ca.pem\", \"cert_file\": \"/nonexistent/c.pem\"}",
                 sink.port);
    code = RUN("check-config", config);
    cr_assert_eq(code, 2, "%s", out);
    cr_assert(strstr(out, "redis_tls.ca_file: cannot read /nonexistent/ca.pem"), "%s", out);
    cr_assert(strstr(out, "redis_tls.key_file: is required with redis_tls.cert_file"), "%s", out);

    /* A key that is not the certificate's: check-config builds the
     * context the daemon would, and says which file is wrong. */
    char cert[128], wrong_key[128], mismatched[512];
    tls_redis_path(&server, "client.pem", cert, sizeof cert);
    tls_redis_path(&server, "other-ca.key", wrong_key, sizeof wrong_key);
    snprintf(mismatched, sizeof mismatched, "{\"cert_file\": \"%s\", \"key_file\": \"%s\"}",
             cert, wrong_key);
    write_config(config, sizeof config, "mismatched.json", mismatched, sink.port);
    code = RUN("check-config", config);
    cr_assert_eq(code, 2, "%s", out);
    cr_assert(strstr(out, "redis_tls: TLS: cannot use the client key "), "%s", out);
    cr_assert(strstr(out, "other-ca.key"), "%s", out);

    /* The daemon does not retry in a hot loop: its backoff spaces the
     * attempts (100 ms, doubling), so 1.5 s after the first failure see a
     * handful, not thousands. */
    char log[128], err[256];
    snprintf(log, sizeof log, "%s/refused.log", env_dir);
    write_config(config, sizeof config, "unknown-ca.json", tls_json, sink.port);
    daemon_process d = {0};
    cr_assert(daemon_start(&d, config, log, NULL, err, sizeof err), "%s", err);
    int failures = 0;
    for (int waited = 0; waited < 10000 && failures == 0; waited += 50) {
        sleep_ms(50);
        failures = count_failures(log);
    }
    cr_assert(failures > 0, "no failed connect logged in 10 s");
    sleep_ms(1500);
    daemon_stop(&d, SIGTERM, 10000);
    failures = count_failures(log);
    cr_assert(failures >= 2 && failures <= 10, "%d failed connects logged in 1.5 s", failures);
}
