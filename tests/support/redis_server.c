/* redis_server.c - start and stop a private redis-server for tests. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "redis_server.h"

int rs_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

redisContext *rs_connect(const rs_server *server)
{
    struct timeval timeout = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", server->port, timeout);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    return c;
}

static pid_t spawn_redis(const char *dir, int port, int key_load_delay_us)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Child: die with the test process, even if it crashes. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    char port_text[16], log_path[128], delay_text[16], socket_path[128];
    snprintf(port_text, sizeof port_text, "%d", port);
    snprintf(socket_path, sizeof socket_path, "%s/redis.sock", dir);
    snprintf(log_path, sizeof log_path, "%s/redis.log", dir);
    snprintf(delay_text, sizeof delay_text, "%d", key_load_delay_us);
    /* SLUICE_REDIS_SERVER=valkey-server runs the same tests against Valkey. */
    const char *server = getenv("SLUICE_REDIS_SERVER");
    if (!server || !*server)
        server = "redis-server";
    /* With a load delay, answer clients every KiB loaded, not every 2 MiB,
     * or a small dump would load without a word to anyone. */
    execlp(server, server, "--port", port_text, "--bind", "127.0.0.1",
           "--unixsocket", socket_path, "--unixsocketperm", "700",
           "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir,
           "--logfile", log_path, "--loglevel", "warning", "--key-load-delay", delay_text,
           "--loading-process-events-interval-bytes", key_load_delay_us > 0 ? "1024" : "2097152",
           (char *)NULL);
    _exit(127);
}

/* Waits for PING to succeed; false if the server exited or 5 s passed. */
static bool wait_ready(rs_server *server)
{
    for (int i = 0; i < 500; i++) {
        int status;
        if (waitpid(server->pid, &status, WNOHANG) == server->pid) {
            server->pid = 0;
            return false;
        }
        redisContext *c = rs_connect(server);
        if (c) {
            redisReply *reply = redisCommand(c, "PING");
            bool loading = reply && reply->type == REDIS_REPLY_ERROR &&
                           strncmp(reply->str, "LOADING", 7) == 0;
            bool ok = reply && (reply->type == REDIS_REPLY_STATUS ||
                                (loading && server->key_load_delay_us > 0));
            freeReplyObject(reply);
            redisFree(c);
            if (ok)
                return true;
        }
        sleep_ms(10);
    }
    return false;
}

bool rs_start(rs_server *server, char *err, size_t err_size)
{
    memset(server, 0, sizeof *server);
    return rs_start_on(server, 0, err, err_size);
}

bool rs_start_on(rs_server *server, int port, char *err, size_t err_size)
{
    if (!server->dir[0]) {
        snprintf(server->dir, sizeof server->dir, "/tmp/sluice-test-redis-XXXXXX");
        if (!mkdtemp(server->dir)) {
            snprintf(err, err_size, "mkdtemp(%s): %s", server->dir, strerror(errno));
            server->dir[0] = '\0';
            return false;
        }
    }
    /* A free port may be taken between rs_free_port and the server's bind:
     * then the server exits and we try another one. */
    for (int attempt = 0; attempt < (port ? 50 : 5); attempt++) {
        server->port = port ? port : rs_free_port();
        server->pid = spawn_redis(server->dir, server->port, server->key_load_delay_us);
        if (server->pid < 0) {
            snprintf(err, err_size, "fork: %s", strerror(errno));
            server->pid = 0;
            break;
        }
        if (wait_ready(server))
            return true;
        if (port) /* the old socket may linger a moment */
            nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    snprintf(err, err_size, "redis-server did not start on 127.0.0.1 (is it installed?)");
    rs_stop(server);
    return false;
}

void rs_stop(rs_server *server)
{
    if (server->pid > 0) {
        process_stop(server->pid, SIGTERM, 5000);
        server->pid = 0;
    }
    if (server->dir[0]) {
        char path[128];
        snprintf(path, sizeof path, "%s/redis.log", server->dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/dump.rdb", server->dir);
        unlink(path);
        rmdir(server->dir);
        server->dir[0] = '\0';
    }
}
