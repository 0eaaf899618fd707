/* redis_sentinel.c - see redis_sentinel.h. */
#include "redis_sentinel.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"

/* Sentinel's timings, small so a test's failover takes seconds: a node
 * silent for a second is down, and a failover that stalls is retried
 * after 6 s instead of 3 minutes. */
#define DOWN_AFTER_MS 1000
#define FAILOVER_TIMEOUT_MS 6000
#define POLL_MS 100

redisContext *rsn_connect(int port)
{
    struct timeval timeout = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, timeout);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    return c;
}

/* The reply of one command to 127.0.0.1:port (caller frees), or NULL. */
static redisReply *ask(int port, const char *format, ...)
{
    redisContext *c = rsn_connect(port);
    if (!c)
        return NULL;
    va_list ap;
    va_start(ap, format);
    redisReply *reply = redisvCommand(c, format, ap);
    va_end(ap);
    redisFree(c);
    return reply;
}

static const char *server_binary(void)
{
    const char *server = getenv("SLUICE_REDIS_SERVER");
    return server && *server ? server : "redis-server";
}

/* Removes dir and the files in it (no subdirectories are made there). */
static void remove_dir(char *dir)
{
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
    dir[0] = '\0';
}

/* ---- the sentinels -------------------------------------------------------- */

static bool write_sentinel_conf(const rsn_sentinel *s, int primary_port, char *path,
                                size_t path_size)
{
    snprintf(path, path_size, "%s/sentinel.conf", s->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fprintf(f,
            "port %d\n"
            "bind 127.0.0.1\n"
            "daemonize no\n"
            "dir %s\n"
            "logfile \"%s/sentinel.log\"\n"
            "sentinel monitor %s 127.0.0.1 %d 2\n"
            "sentinel down-after-milliseconds %s %d\n"
            "sentinel failover-timeout %s %d\n"
            "sentinel parallel-syncs %s 1\n",
            s->port, s->dir, s->dir, RSN_MASTER_NAME, primary_port, RSN_MASTER_NAME,
            DOWN_AFTER_MS, RSN_MASTER_NAME, FAILOVER_TIMEOUT_MS, RSN_MASTER_NAME);
    return fclose(f) == 0;
}

static bool start_sentinel(rsn_sentinel *s, int primary_port, char *err, size_t err_size)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/sluice-test-sentinel-XXXXXX");
    if (!mkdtemp(s->dir)) {
        snprintf(err, err_size, "mkdtemp: %s", strerror(errno));
        s->dir[0] = '\0';
        return false;
    }
    /* A port taken between rs_free_port and the bind: the sentinel exits,
     * and another port is tried. */
    for (int attempt = 0; attempt < 5; attempt++) {
        s->port = rs_free_port();
        char conf[128];
        if (!s->port || !write_sentinel_conf(s, primary_port, conf, sizeof conf)) {
            snprintf(err, err_size, "cannot write the sentinel's config in %s", s->dir);
            return false;
        }
        pid_t parent = getpid();
        s->pid = fork();
        if (s->pid < 0) {
            snprintf(err, err_size, "fork: %s", strerror(errno));
            s->pid = 0;
            return false;
        }
        if (s->pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            const char *server = server_binary();
            execlp(server, server, conf, "--sentinel", (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 100; i++) {
            int status;
            if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
                s->pid = 0;
                break;
            }
            redisReply *pong = ask(s->port, "PING");
            bool up = pong && pong->type == REDIS_REPLY_STATUS;
            freeReplyObject(pong);
            if (up)
                return true;
            sleep_ms(50);
        }
        if (s->pid > 0) {
            process_stop(s->pid, SIGKILL, 2000);
            s->pid = 0;
        }
    }
    snprintf(err, err_size, "%s --sentinel did not start on 127.0.0.1", server_binary());
    return false;
}

int rsn_primary_port(const rsn_group *g, int i)
{
    redisReply *r =
        ask(g->sentinels[i].port, "SENTINEL get-master-addr-by-name %s", RSN_MASTER_NAME);
    int port = 0;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    freeReplyObject(r);
    return port;
}

int rsn_node_of_port(const rsn_group *g, int port)
{
    for (int i = 0; i < 2; i++)
        if (g->nodes[i].port == port)
            return i;
    return -1;
}

/* The number of elements of an array reply of sentinel i, or -1. */
static long sentinel_count(const rsn_group *g, int i, const char *what)
{
    redisReply *r = ask(g->sentinels[i].port, "SENTINEL %s %s", what, RSN_MASTER_NAME);
    long n = r && r->type == REDIS_REPLY_ARRAY ? (long)r->elements : -1;
    freeReplyObject(r);
    return n;
}

/* Every sentinel names primary_port, knows a replica and the others. */
static bool sentinels_settled(const rsn_group *g, int primary_port)
{
    for (int i = 0; i < RSN_SENTINELS; i++)
        if (rsn_primary_port(g, i) != primary_port || sentinel_count(g, i, "replicas") < 1 ||
            sentinel_count(g, i, "sentinels") < RSN_SENTINELS - 1)
            return false;
    return true;
}

/* ---- the nodes -------------------------------------------------------------- */

static bool info_has(int port, const char *needle)
{
    redisReply *r = ask(port, "INFO replication");
    bool has = r && r->type == REDIS_REPLY_STRING && strstr(r->str, needle);
    freeReplyObject(r);
    return has;
}

static bool role_is_master(int port)
{
    redisReply *r = ask(port, "ROLE");
    bool master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return master;
}

bool rsn_replicated(const rsn_group *g, int primary_port, int timeout_ms)
{
    (void)g;
    redisReply *r = ask(primary_port, "WAIT 1 %d", timeout_ms);
    bool ok = r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
    freeReplyObject(r);
    return ok;
}

bool rsn_start(rsn_group *g, char *err, size_t err_size)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < 2; i++)
        if (!rs_start(&g->nodes[i], err, err_size)) {
            rsn_stop(g);
            return false;
        }
    /* the same as starting it with --replicaof */
    redisReply *r = ask(g->nodes[1].port, "REPLICAOF 127.0.0.1 %d", g->nodes[0].port);
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    for (int i = 0; ok && i < 100 && !info_has(g->nodes[1].port, "master_link_status:up"); i++)
        sleep_ms(POLL_MS);
    if (!ok || !info_has(g->nodes[1].port, "master_link_status:up")) {
        snprintf(err, err_size, "the replica did not sync with the primary within 10 s");
        rsn_stop(g);
        return false;
    }
    size_t used = (size_t)snprintf(g->url, sizeof g->url, "redis-sentinel://");
    for (int i = 0; i < RSN_SENTINELS; i++) {
        if (!start_sentinel(&g->sentinels[i], g->nodes[0].port, err, err_size)) {
            rsn_stop(g);
            return false;
        }
        used += (size_t)snprintf(g->url + used, sizeof g->url - used, "%s127.0.0.1:%d",
                                 i ? "," : "", g->sentinels[i].port);
    }
    snprintf(g->url + used, sizeof g->url - used, "/%s", RSN_MASTER_NAME);
    /* Sentinels find the replica at once (the primary's INFO) and each
     * other within seconds (hello messages every 2 s). */
    for (int i = 0; i < 300 && !sentinels_settled(g, g->nodes[0].port); i++)
        sleep_ms(POLL_MS);
    if (!sentinels_settled(g, g->nodes[0].port)) {
        snprintf(err, err_size, "the sentinels did not find the replica and each other within 30 s");
        rsn_stop(g);
        return false;
    }
    return true;
}

bool rsn_failover(rsn_group *g, int timeout_ms, char *err, size_t err_size)
{
    int old_port = rsn_primary_port(g, 0), old = rsn_node_of_port(g, old_port);
    if (old < 0) {
        snprintf(err, err_size, "sentinel 0 names no known primary (port %d)", old_port);
        return false;
    }
    int new_port = g->nodes[1 - old].port;
    int rounds = timeout_ms / POLL_MS;
    /* NOGOODSLAVE: the sentinel has not seen the replica healthy lately
     * enough; it will. */
    bool started = false;
    for (int i = 0; i < rounds && !started; i++) {
        redisReply *r = ask(g->sentinels[0].port, "SENTINEL FAILOVER %s", RSN_MASTER_NAME);
        started = r && r->type == REDIS_REPLY_STATUS;
        if (!started && i + 1 == rounds)
            snprintf(err, err_size, "SENTINEL FAILOVER: %s", r && r->str ? r->str : "no reply");
        freeReplyObject(r);
        if (!started)
            sleep_ms(POLL_MS);
    }
    if (!started)
        return false;
    for (int i = 0; i < rounds; i++) {
        bool all = role_is_master(new_port);
        for (int s = 0; all && s < RSN_SENTINELS; s++)
            all = rsn_primary_port(g, s) == new_port;
        if (all)
            return true;
        sleep_ms(POLL_MS);
    }
    snprintf(err, err_size, "the sentinels did not all name 127.0.0.1:%d within %d ms", new_port,
             timeout_ms);
    return false;
}

void rsn_stop(rsn_group *g)
{
    for (int i = 0; i < RSN_SENTINELS; i++) {
        rsn_sentinel *s = &g->sentinels[i];
        if (s->pid > 0)
            process_stop(s->pid, SIGTERM, 5000);
        s->pid = 0;
        remove_dir(s->dir);
    }
    for (int i = 0; i < 2; i++)
        rs_stop(&g->nodes[i]);
}
