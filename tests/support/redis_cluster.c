/* redis_cluster.c - see redis_cluster.h. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "redis_cluster.h"
#include "redis_server.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool port_free(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    return ok;
}

/* A free port whose cluster bus port (+10000) is free too, or 0. */
static int free_node_port(void)
{
    for (int i = 0; i < 50; i++) {
        int port = rs_free_port();
        if (port > 0 && port < 55536 && port_free(port + 10000))
            return port;
    }
    return 0;
}

static const char *server_binary(void)
{
    const char *s = getenv("SLUICE_REDIS_SERVER");
    return s && *s ? s : "redis-server";
}

static const char *cli_binary(void)
{
    const char *s = getenv("SLUICE_REDIS_CLI");
    return s && *s ? s : "redis-cli";
}

static pid_t spawn_node(const rc_cluster *c, int port)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* die with the test process */
    if (getppid() != parent)
        _exit(127);
    char port_text[16], conf[128], log_path[128], timeout[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    snprintf(conf, sizeof conf, "%s/nodes-%d.conf", c->dir, port);
    snprintf(log_path, sizeof log_path, "%s/redis-%d.log", c->dir, port);
    snprintf(timeout, sizeof timeout, "%d", RC_NODE_TIMEOUT_MS);
    const char *server = server_binary();
    execlp(server, server, "--port", port_text, "--bind", "127.0.0.1", "--cluster-enabled", "yes",
           "--cluster-config-file", conf, "--cluster-node-timeout", timeout, "--save", "",
           "--appendonly", "no", "--daemonize", "no", "--dir", c->dir, "--logfile", log_path,
           "--loglevel", "warning", (char *)NULL);
    _exit(127);
}

redisContext *rc_connect(const rc_cluster *c, int i)
{
    if (c->nodes[i].pid <= 0)
        return NULL;
    struct timeval timeout = {2, 0};
    redisContext *ctx = redisConnectWithTimeout("127.0.0.1", c->nodes[i].port, timeout);
    if (ctx && ctx->err) {
        redisFree(ctx);
        return NULL;
    }
    if (ctx)
        redisSetTimeout(ctx, timeout);
    return ctx;
}

/* node i's reply to a command (caller frees), or NULL. */
static redisReply *askv(const rc_cluster *c, int i, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static redisReply *askv(const rc_cluster *c, int i, const char *fmt, va_list ap)
{
    redisContext *ctx = rc_connect(c, i);
    if (!ctx)
        return NULL;
    redisReply *reply = redisvCommand(ctx, fmt, ap);
    redisFree(ctx);
    return reply;
}

static redisReply *ask(const rc_cluster *c, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static redisReply *ask(const rc_cluster *c, int i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = askv(c, i, fmt, ap);
    va_end(ap);
    return reply;
}

/* True if node i answered the command with no error (logged if not). */
static bool ask_ok(const rc_cluster *c, int i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool ask_ok(const rc_cluster *c, int i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *reply = askv(c, i, fmt, ap);
    va_end(ap);
    bool ok = reply && reply->type != REDIS_REPLY_ERROR;
    if (reply && !ok)
        fprintf(stderr, "redis_cluster: node %d: %s\n", i, reply->str);
    freeReplyObject(reply);
    return ok;
}

static bool wait_ping(const rc_cluster *c, int i)
{
    for (int t = 0; t < 500; t++) {
        int status;
        if (waitpid(c->nodes[i].pid, &status, WNOHANG) == c->nodes[i].pid)
            return false;
        redisReply *reply = ask(c, i, "PING");
        bool ok = reply && reply->type == REDIS_REPLY_STATUS;
        freeReplyObject(reply);
        if (ok)
            return true;
        sleep_ms(10);
    }
    return false;
}

/* Runs redis-cli with args (argv[1..], NULL-terminated; argv[0] is set
 * here), its output to DIR/log_name; true if it exited 0 within 30 s. */
static bool run_cli(const rc_cluster *c, const char **argv, const char *log_name)
{
    argv[0] = cli_binary();
    pid_t pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        char log_path[128];
        snprintf(log_path, sizeof log_path, "%s/%s", c->dir, log_name);
        if (!freopen(log_path, "a", stdout) || !freopen("/dev/null", "r", stdin))
            _exit(126);
        execvp(argv[0], (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    for (int t = 0; t < 3000; t++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0;
        sleep_ms(10);
    }
    process_stop(pid, SIGKILL, 1000);
    return false;
}

/* Runs redis-cli --cluster create; true if it exited 0 within 30 s. */
static bool create_cluster(const rc_cluster *c)
{
    char addrs[RC_NODES][32];
    const char *argv[RC_NODES + 8];
    int n = 1;
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < RC_NODES; i++) {
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", c->nodes[i].port);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = "1";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    return run_cli(c, argv, "create.log");
}

bool rc_cli_lpush(const rc_cluster *c, int i, const char *key, const char *const *values, int n)
{
    if (n < 1 || n > RC_CLI_PUSH_MAX)
        return false;
    char port[16];
    snprintf(port, sizeof port, "%d", c->nodes[i].port);
    const char *argv[RC_CLI_PUSH_MAX + 8] = {NULL, "-c", "-h", "127.0.0.1", "-p", port, "LPUSH", key};
    int k = 8;
    for (int v = 0; v < n; v++)
        argv[k++] = values[v];
    argv[k] = NULL;
    return run_cli(c, argv, "lpush.log");
}

bool rc_wait_ok(const rc_cluster *c, int timeout_ms)
{
    int64_t until = now_ms() + timeout_ms;
    do {
        bool all = true;
        for (int i = 0; i < RC_NODES && all; i++) {
            if (c->nodes[i].pid <= 0)
                continue;
            redisReply *reply = ask(c, i, "CLUSTER INFO");
            all = reply && reply->type == REDIS_REPLY_STRING &&
                  strstr(reply->str, "cluster_state:ok");
            freeReplyObject(reply);
        }
        if (all)
            return true;
        sleep_ms(50);
    } while (now_ms() < until);
    return false;
}

static int index_of_id(const rc_cluster *c, const char *id, size_t len)
{
    for (int i = 0; i < RC_NODES; i++)
        if (strlen(c->nodes[i].id) == len && memcmp(c->nodes[i].id, id, len) == 0)
            return i;
    return -1;
}

static int index_of_port(const rc_cluster *c, int port)
{
    for (int i = 0; i < RC_NODES; i++)
        if (c->nodes[i].port == port)
            return i;
    return -1;
}

bool rc_roles(rc_cluster *c)
{
    for (int i = 0; i < RC_NODES; i++) {
        redisReply *reply = ask(c, i, "CLUSTER NODES");
        if (!reply || reply->type != REDIS_REPLY_STRING) {
            freeReplyObject(reply);
            continue;
        }
        /* "<id> <ip:port@bus> <flags> <primary id or -> ..." per line:
         * ids first, then who replicates whom. */
        for (int pass = 0; pass < 2; pass++) {
            for (char *line = reply->str; line && *line;) {
                char *end = strchr(line, '\n');
                char id[41], addr[80], flags[128], primary[41];
                if (sscanf(line, "%40s %79s %127s %40s", id, addr, flags, primary) == 4) {
                    int k = index_of_port(c, atoi(strchr(addr, ':') ? strchr(addr, ':') + 1 : "0"));
                    if (k >= 0 && pass == 0) {
                        snprintf(c->nodes[k].id, sizeof c->nodes[k].id, "%s", id);
                        c->nodes[k].primary = strstr(flags, "master") != NULL;
                    } else if (k >= 0) {
                        c->nodes[k].replica_of =
                            c->nodes[k].primary ? -1 : index_of_id(c, primary, strlen(primary));
                    }
                }
                line = end ? end + 1 : NULL;
            }
        }
        freeReplyObject(reply);
        return true;
    }
    return false;
}

int rc_owner(const rc_cluster *c, unsigned slot)
{
    for (int i = 0; i < RC_NODES; i++) {
        redisReply *reply = ask(c, i, "CLUSTER SLOTS");
        if (!reply || reply->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(reply);
            continue;
        }
        int owner = -1;
        for (size_t r = 0; r < reply->elements; r++) {
            redisReply *range = reply->element[r];
            if (range->elements >= 3 && (unsigned)range->element[0]->integer <= slot &&
                slot <= (unsigned)range->element[1]->integer)
                owner = index_of_port(c, (int)range->element[2]->element[1]->integer);
        }
        freeReplyObject(reply);
        return owner;
    }
    return -1;
}

int rc_other_primary(const rc_cluster *c, int not)
{
    for (int i = 0; i < RC_NODES; i++)
        if (i != not && c->nodes[i].pid > 0 && c->nodes[i].primary)
            return i;
    return -1;
}

int rc_replica(const rc_cluster *c, int p)
{
    for (int i = 0; i < RC_NODES; i++)
        if (c->nodes[i].pid > 0 && !c->nodes[i].primary && c->nodes[i].replica_of == p)
            return i;
    return -1;
}

/* Three primaries and three replicas, each replica in sync with its
 * primary (its link up), as of rc_roles. */
static bool replicas_in_sync(const rc_cluster *c)
{
    int primaries = 0, replicas = 0;
    for (int i = 0; i < RC_NODES; i++) {
        primaries += c->nodes[i].primary;
        replicas += !c->nodes[i].primary && c->nodes[i].replica_of >= 0;
    }
    if (primaries != RC_NODES / 2 || replicas != RC_NODES / 2)
        return false;
    for (int i = 0; i < RC_NODES; i++) {
        if (c->nodes[i].pid <= 0 || c->nodes[i].primary)
            continue;
        redisReply *reply = ask(c, i, "INFO replication");
        bool up = reply && reply->type == REDIS_REPLY_STRING &&
                  strstr(reply->str, "master_link_status:up");
        freeReplyObject(reply);
        if (!up)
            return false;
    }
    return true;
}

bool rc_start(rc_cluster *c, char *err, size_t err_size)
{
    memset(c, 0, sizeof *c);
    snprintf(c->dir, sizeof c->dir, "/tmp/sluice-test-cluster-XXXXXX");
    if (!mkdtemp(c->dir)) {
        snprintf(err, err_size, "mkdtemp: %s", strerror(errno));
        c->dir[0] = '\0';
        return false;
    }
    for (int i = 0; i < RC_NODES; i++) {
        c->nodes[i].replica_of = -1;
        bool up = false;
        /* A free port may be taken before the server binds it: another one. */
        for (int attempt = 0; attempt < 5 && !up; attempt++) {
            c->nodes[i].port = free_node_port();
            c->nodes[i].pid = spawn_node(c, c->nodes[i].port);
            up = c->nodes[i].pid > 0 && wait_ping(c, i);
            if (!up && c->nodes[i].pid > 0)
                process_stop(c->nodes[i].pid, SIGKILL, 1000);
            if (!up)
                c->nodes[i].pid = 0;
        }
        if (!up) {
            snprintf(err, err_size, "%s did not start with --cluster-enabled yes (is it installed?)",
                     server_binary());
            rc_stop(c);
            return false;
        }
    }
    if (!create_cluster(c)) {
        snprintf(err, err_size, "%s --cluster create failed (see %s/create.log)", cli_binary(),
                 c->dir);
        rc_stop(c);
        return false;
    }
    int64_t until = now_ms() + 20000;
    while (!(rc_wait_ok(c, 100) && rc_roles(c) && replicas_in_sync(c)) && now_ms() < until)
        sleep_ms(50);
    if (now_ms() >= until) {
        snprintf(err, err_size, "the cluster did not settle (cluster_state:ok, replicas in sync) in 20 s");
        rc_stop(c);
        return false;
    }
    return true;
}

/* Whether node i's CLUSTER NODES has a line with `needle` whose flags do
 * not say the handshake is still under way. */
static bool knows(const rc_cluster *c, int i, const char *needle)
{
    redisReply *reply = ask(c, i, "CLUSTER NODES");
    bool found = false;
    if (reply && reply->type == REDIS_REPLY_STRING) {
        const char *at = strstr(reply->str, needle);
        char line[512] = "";
        if (at) {
            const char *end = strchr(at, '\n');
            size_t len = end ? (size_t)(end - at) : strlen(at);
            snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1),
                     at);
        }
        found = at && !strstr(line, "handshake");
    }
    freeReplyObject(reply);
    return found;
}

/* Whether the spare has learnt the whole cluster (cluster_state:ok):
 * before that it answers CLUSTERDOWN even to an ASKed command. */
static bool spare_ok(const rc_cluster *c)
{
    redisReply *reply = ask(c, RC_SPARE, "CLUSTER INFO");
    bool ok = reply && reply->type == REDIS_REPLY_STRING && strstr(reply->str, "cluster_state:ok");
    freeReplyObject(reply);
    return ok;
}

bool rc_add_empty_primary(rc_cluster *c, int meet)
{
    rc_node *s = &c->nodes[RC_SPARE];
    *s = (rc_node){.replica_of = -1, .primary = true};
    for (int attempt = 0; attempt < 5 && s->pid <= 0; attempt++) {
        s->port = free_node_port();
        s->pid = spawn_node(c, s->port);
        if (s->pid > 0 && !wait_ping(c, RC_SPARE)) {
            process_stop(s->pid, SIGKILL, 1000);
            s->pid = 0;
        }
    }
    if (s->pid <= 0)
        return false;
    redisReply *id = ask(c, RC_SPARE, "CLUSTER MYID");
    if (id && id->type == REDIS_REPLY_STRING)
        snprintf(s->id, sizeof s->id, "%s", id->str);
    freeReplyObject(id);
    if (!s->id[0] || !ask_ok(c, meet, "CLUSTER MEET 127.0.0.1 %d", s->port))
        return false;
    char spare_addr[32], meet_addr[32];
    snprintf(spare_addr, sizeof spare_addr, "127.0.0.1:%d@", s->port);
    snprintf(meet_addr, sizeof meet_addr, "127.0.0.1:%d@", c->nodes[meet].port);
    int64_t until = now_ms() + 10000;
    while (!(knows(c, meet, spare_addr) && knows(c, RC_SPARE, meet_addr) &&
             knows(c, meet, s->id) && spare_ok(c)) &&
           now_ms() < until)
        sleep_ms(50);
    return now_ms() < until;
}

void rc_stop(rc_cluster *c)
{
    for (int i = 0; i <= RC_SPARE; i++) {
        if (c->nodes[i].pid > 0)
            process_stop(c->nodes[i].pid, SIGTERM, 5000);
        c->nodes[i].pid = 0;
    }
    if (c->dir[0]) {
        /* the files the servers and redis-cli wrote, then the directory */
        DIR *d = opendir(c->dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            char path[400];
            snprintf(path, sizeof path, "%s/%s", c->dir, e->d_name);
            if (e->d_name[0] != '.')
                unlink(path);
        }
        if (d)
            closedir(d);
        rmdir(c->dir);
        c->dir[0] = '\0';
    }
}

bool rc_move_begin(rc_cluster *c, unsigned slot, int from, int to)
{
    char s[16];
    snprintf(s, sizeof s, "%u", slot);
    return ask_ok(c, to, "CLUSTER SETSLOT %s IMPORTING %s", s, c->nodes[from].id) &&
           ask_ok(c, from, "CLUSTER SETSLOT %s MIGRATING %s", s, c->nodes[to].id);
}

bool rc_move_keys(rc_cluster *c, unsigned slot, int from, int to)
{
    for (int round = 0; round < 1000; round++) {
        redisReply *keys = ask(c, from, "CLUSTER GETKEYSINSLOT %u 100", slot);
        if (!keys || keys->type != REDIS_REPLY_ARRAY) {
            freeReplyObject(keys);
            return false;
        }
        size_t n = keys->elements;
        bool ok = true;
        for (size_t k = 0; k < n && ok; k++) {
            /* the tests' keys are plain words (%s: no spaces, no NUL) */
            redisReply *r = ask(c, from, "MIGRATE 127.0.0.1 %d %s 0 5000", c->nodes[to].port,
                                keys->element[k]->str);
            ok = r && r->type != REDIS_REPLY_ERROR;
            if (r && !ok)
                fprintf(stderr, "redis_cluster: MIGRATE: %s\n", r->str);
            freeReplyObject(r);
        }
        freeReplyObject(keys);
        if (!ok)
            return false;
        if (n == 0)
            return true;
    }
    return false;
}

bool rc_move_end(rc_cluster *c, unsigned slot, int to)
{
    char s[16];
    snprintf(s, sizeof s, "%u", slot);
    /* The new owner first, then the rest of the primaries (the order
     * redis-cli uses: the importing node's epoch bump wins). */
    if (!ask_ok(c, to, "CLUSTER SETSLOT %s NODE %s", s, c->nodes[to].id))
        return false;
    for (int i = 0; i < RC_NODES; i++)
        if (i != to && c->nodes[i].pid > 0 && c->nodes[i].primary &&
            !ask_ok(c, i, "CLUSTER SETSLOT %s NODE %s", s, c->nodes[to].id))
            return false;
    return true;
}

bool rc_wait_primary(rc_cluster *c, int i, int timeout_ms)
{
    int64_t until = now_ms() + timeout_ms;
    do {
        redisReply *reply = ask(c, i, "ROLE");
        bool primary = reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
                       reply->element[0]->type == REDIS_REPLY_STRING &&
                       strcmp(reply->element[0]->str, "master") == 0;
        freeReplyObject(reply);
        if (primary)
            return rc_roles(c);
        sleep_ms(20);
    } while (now_ms() < until);
    return false;
}

bool rc_failover(rc_cluster *c, int r)
{
    /* A replica refuses while it is not in sync: ask again, bounded. */
    for (int t = 0; t < 50; t++) {
        redisReply *reply = ask(c, r, "CLUSTER FAILOVER");
        bool ok = reply && reply->type == REDIS_REPLY_STATUS;
        freeReplyObject(reply);
        if (ok)
            return rc_wait_primary(c, r, 10000);
        sleep_ms(100);
    }
    return false;
}

void rc_kill(rc_cluster *c, int i)
{
    if (c->nodes[i].pid > 0)
        process_stop(c->nodes[i].pid, SIGKILL, 5000);
    c->nodes[i].pid = 0;
}

void rc_url(const rc_cluster *c, int seeds, char *out, size_t size)
{
    size_t used = (size_t)snprintf(out, size, "redis-cluster://");
    int n = 0;
    for (int i = 0; i < RC_NODES && n < seeds && used < size; i++) {
        if (c->nodes[i].pid <= 0)
            continue;
        used += (size_t)snprintf(out + used, size - used, "%s127.0.0.1:%d", n ? "," : "",
                                 c->nodes[i].port);
        n++;
    }
}
