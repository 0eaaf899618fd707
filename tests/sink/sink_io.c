/* sink_io.c - see sink_io.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink_io.h"

static void usage(FILE *to)
{
    fputs("usage: sluice-sink --port-file FILE --log FILE [--bind 127.0.0.1] [--port 0]\n"
          "  Serves HTTP on a loopback address until SIGTERM/SIGINT. Port 0 (the\n"
          "  default) takes any free port; the port is written to --port-file once\n"
          "  listening. Each request but GET /_health is appended to --log as\n"
          "  arrival_us method uri idempotency_key tenant status body x_test\n"
          "  (tab-separated, escaped). Paths: /status/NNN[?retry_after=S],\n"
          "  /slow/MS/..., /flaky/N/..., /limit/R[?headers=1] (a token bucket of R/s,\n"
          "  a tenth of a second's burst, 429 beyond; headers=1 adds\n"
          "  X-RateLimit-Remaining and X-RateLimit-Reset in seconds),\n"
          "  /close (no answer), /reset (a TCP reset);\n"
          "  any other path follows the mode, 200 \"ok\" until a request to\n"
          "  /_mode/BEHAVIOUR sets it (BEHAVIOUR: ok or one of those paths, e.g.\n"
          "  /_mode/status/429?retry_after=2); GET /_mode answers it. Control\n"
          "  requests (/_mode, GET /_health) are not logged.\n",
          to);
}

sl_sink_parse sl_sink_parse_options(int argc, char **argv, sl_sink_options *o)
{
    static const struct option longopts[] = {
        {"port-file", required_argument, NULL, 'f'}, {"log", required_argument, NULL, 'l'},
        {"bind", required_argument, NULL, 'b'},      {"port", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},            {NULL, 0, NULL, 0},
    };
    *o = (sl_sink_options){.bind = "127.0.0.1", .port = 0};
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            o->port_file = optarg;
            break;
        case 'l':
            o->log_path = optarg;
            break;
        case 'b':
            o->bind = optarg;
            break;
        case 'p': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 0 || v > 65535) {
                fprintf(stderr, "sluice-sink: --port: '%s' is not a port (0..65535)\n", optarg);
                return SL_SINK_PARSE_BAD;
            }
            o->port = (int)v;
            break;
        }
        case 'h':
            usage(stdout);
            return SL_SINK_PARSE_HELP;
        default:
            usage(stderr);
            return SL_SINK_PARSE_BAD;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-sink: unexpected argument '%s'\n", argv[optind]);
        return SL_SINK_PARSE_BAD;
    }
    if (!o->port_file || !o->log_path) {
        fprintf(stderr, "sluice-sink: %s is required\n", o->port_file ? "--log" : "--port-file");
        usage(stderr);
        return SL_SINK_PARSE_BAD;
    }
    return SL_SINK_PARSE_OK;
}

bool sl_sink_loopback_address(const sl_sink_options *o, struct sockaddr_storage *addr,
                              socklen_t *len)
{
    const char *text = o->bind;
    uint16_t port = htons((uint16_t)o->port);
    memset(addr, 0, sizeof *addr);
    struct sockaddr_in *v4 = (struct sockaddr_in *)addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)addr;
    if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
        if ((ntohl(v4->sin_addr.s_addr) >> 24) != 127)
            goto refuse;
        v4->sin_family = AF_INET;
        v4->sin_port = port;
        *len = sizeof *v4;
        return true;
    }
    if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr))
            goto refuse;
        v6->sin6_family = AF_INET6;
        v6->sin6_port = port;
        *len = sizeof *v6;
        return true;
    }
refuse:
    return false;
}

int sl_sink_listen(const sl_sink_options *o, const struct sockaddr_storage *addr, socklen_t len)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "sluice-sink: socket: %s\n", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)addr, len) != 0 || listen(fd, 1024) != 0) {
        fprintf(stderr, "sluice-sink: cannot listen on %s port %d: %s\n", o->bind, o->port,
                strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int sl_sink_bound_port(int fd)
{
    struct sockaddr_storage addr;
    socklen_t len = sizeof addr;
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0)
        return -1;
    if (addr.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&addr)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&addr)->sin6_port);
}

bool sl_sink_write_port_file(const char *path, int port)
{
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp) {
        fprintf(stderr, "sluice-sink: out of memory\n");
        return false;
    }
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%d\n", port) > 0;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "sluice-sink: cannot write --port-file %s: %s\n", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return false;
    }
    free(tmp);
    return true;
}

/* ---- the log ---- */

bool sl_sink_log_flush(sl_sink_log *l)
{
    size_t done = 0;
    while (done < l->len) {
        ssize_t n = write(l->fd, l->data + done, l->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "sluice-sink: cannot write --log %s: %s\n", l->path,
                    n < 0 ? strerror(errno) : "short write");
            return false;
        }
        done += (size_t)n;
    }
    l->len = 0;
    return true;
}

bool sl_sink_log_open(sl_sink_log *l, const char *path, size_t cap)
{
    *l = (sl_sink_log){.fd = -1, .path = path};
    l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        fprintf(stderr, "sluice-sink: cannot open --log %s: %s\n", path, strerror(errno));
        return false;
    }
    l->data = malloc(cap);
    if (!l->data) {
        fprintf(stderr, "sluice-sink: out of memory for a %zu-byte log buffer\n", cap);
        sl_sink_log_close(l);
        return false;
    }
    l->cap = cap;
    return true;
}

char *sl_sink_log_reserve(sl_sink_log *l, size_t need)
{
    if (l->cap - l->len < need && l->len > 0 && !sl_sink_log_flush(l))
        return NULL;
    if (l->cap < need) {
        char *data = realloc(l->data, need);
        if (!data) {
            fprintf(stderr, "sluice-sink: out of memory for a %zu-byte log line\n", need);
            return NULL;
        }
        l->data = data;
        l->cap = need;
    }
    return l->data + l->len;
}

void sl_sink_log_close(sl_sink_log *l)
{
    if (l->fd >= 0)
        close(l->fd);
    free(l->data);
    *l = (sl_sink_log){.fd = -1};
}
