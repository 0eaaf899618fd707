/* tls_redis.c - see tls_redis.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"
#include "redis_server.h"
#include "tls_redis.h"

/* P-256 keys: made in milliseconds, unlike RSA ones. */
#define NEWKEY "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

bool tls_redis_make_certs(tls_redis *r, char *err, size_t err_size)
{
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "/tmp/sluice-test-tls-XXXXXX");
    if (!mkdtemp(r->dir)) {
        snprintf(err, err_size, "mkdtemp: %s", strerror(errno));
        r->dir[0] = '\0';
        return false;
    }
    char script[4096];
    snprintf(script, sizeof script,
             "set -e; cd %s\n"
             "ca() { openssl req -x509 " NEWKEY " -keyout $1.key -out $1.pem -days 2 "
             "-subj /CN=$1 -addext basicConstraints=critical,CA:TRUE "
             "-addext keyUsage=critical,keyCertSign,cRLSign; }\n"
             "leaf() { openssl req " NEWKEY " -keyout $1.key -out $1.csr -subj /CN=$1\n"
             "  printf '%%s\\n' \"$2\" basicConstraints=CA:FALSE \"extendedKeyUsage=$3\" > $1.ext\n"
             "  openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
             "-days 2 -out $1.pem -extfile $1.ext; }\n"
             "ca ca; ca other-ca\n"
             "leaf server subjectAltName=IP:127.0.0.1,DNS:localhost serverAuth\n"
             "leaf client subjectAltName=DNS:sluice-client clientAuth\n"
             "chmod 600 *.key\n",
             r->dir);
    pid_t pid = fork();
    if (pid == 0) {
        char log[128];
        snprintf(log, sizeof log, "%s/openssl.log", r->dir);
        if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr))
            _exit(126);
        execlp("sh", "sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    int status = -1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid)
        status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (status != 0) {
        snprintf(err, err_size, "making certificates with openssl failed (see %s/openssl.log)",
                 r->dir);
        return false;
    }
    return true;
}

void tls_redis_path(const tls_redis *r, const char *file, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", r->dir, file);
}

static bool port_accepts(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    return ok;
}

static pid_t spawn(const tls_redis *r, bool auth_clients, const char *const *extra)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    char port[16], cert[128], key[128], ca[128], log[128];
    snprintf(port, sizeof port, "%d", r->port);
    tls_redis_path(r, "server.pem", cert, sizeof cert);
    tls_redis_path(r, "server.key", key, sizeof key);
    tls_redis_path(r, r->trusts ? r->trusts : "ca.pem", ca, sizeof ca);
    tls_redis_path(r, "redis.log", log, sizeof log);
    char *argv[64];
    const char *args[64] = {"redis-server", "--port", "0", "--tls-port", port,
                            "--bind", "127.0.0.1", "--tls-cert-file", cert,
                            "--tls-key-file", key, "--tls-ca-cert-file", ca,
                            "--tls-auth-clients", auth_clients ? "yes" : "no",
                            "--save", "", "--appendonly", "no", "--daemonize", "no",
                            "--dir", r->dir, "--logfile", log, "--loglevel", "warning"};
    size_t argc = 0;
    while (args[argc])
        argc++;
    for (size_t i = 0; extra && extra[i] && argc < 62; i++)
        args[argc++] = extra[i];
    args[argc] = NULL;
    /* execvp's argv is not const; the child is about to be replaced. */
    for (size_t i = 0; i <= argc; i++)
        argv[i] = args[i] ? strdup(args[i]) : NULL;
    execvp("redis-server", argv);
    _exit(127);
}

bool tls_redis_start(tls_redis *r, bool auth_clients, const char *const *extra, char *err,
                     size_t err_size)
{
    for (int attempt = 0; attempt < 5; attempt++) {
        r->port = rs_free_port();
        r->pid = spawn(r, auth_clients, extra);
        if (r->pid < 0) {
            snprintf(err, err_size, "fork: %s", strerror(errno));
            r->pid = 0;
            return false;
        }
        for (int i = 0; i < 500; i++) {
            if (port_accepts(r->port))
                return true;
            int status;
            if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
                r->pid = 0; /* it exited: the port was taken, try another */
                break;
            }
            sleep_ms(10);
        }
        if (r->pid > 0)
            process_stop(r->pid, SIGTERM, 5000);
        r->pid = 0;
    }
    snprintf(err, err_size, "redis-server with TLS did not start (see %s/redis.log)", r->dir);
    return false;
}

void tls_redis_stop(tls_redis *r)
{
    if (r->pid > 0) {
        process_stop(r->pid, SIGTERM, 5000);
        r->pid = 0;
    }
    if (r->dir[0]) {
        char command[128];
        snprintf(command, sizeof command, "rm -rf %s", r->dir);
        if (system(command) != 0)
            fprintf(stderr, "could not remove %s\n", r->dir);
        r->dir[0] = '\0';
    }
}
