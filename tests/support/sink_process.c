/* sink_process.c - start and stop a private sluice-sink for tests, and
 * read its request log. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#include "base/hex.h"
#include "process.h"
#include "sink_process.h"

static int64_t monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void port_path(const sink_process *s, char *out, size_t size, const char *suffix)
{
    snprintf(out, size, "%s/port%s", s->dir, suffix);
}

static pid_t spawn_sink(const sink_process *s, const char *binary_path)
{
    char port_file[96];
    port_path(s, port_file, sizeof port_file, "");
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* Child: die with the test process, even if it crashes. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    execl(binary_path, "sluice-sink", "--port-file", port_file, "--log", s->log_path, "--bind",
          "127.0.0.1", (char *)NULL);
    fprintf(stderr, "sink_process: exec %s: %s\n", binary_path, strerror(errno));
    _exit(127);
}

/* The port in the sink's port file, 0 while there is none. */
static int read_port(const sink_process *s)
{
    char path[96];
    port_path(s, path, sizeof path, "");
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int port = 0;
    if (fscanf(f, "%d", &port) != 1 || port <= 0 || port > 65535)
        port = 0;
    fclose(f);
    return port;
}

/* True if GET /_health on 127.0.0.1:port answers 200 within a second. */
static bool health_ok(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct timeval timeout = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char request[] =
        "GET /_health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    char answer[64] = {0};
    size_t got = 0;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        send(fd, request, sizeof request - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof request - 1)) {
        while (got < sizeof answer - 1) {
            ssize_t n = recv(fd, answer + got, sizeof answer - 1 - got, 0);
            if (n <= 0)
                break;
            got += (size_t)n;
        }
    }
    close(fd);
    return strncmp(answer, "HTTP/1.1 200", 12) == 0;
}

bool sink_start(sink_process *s, const char *binary_path, char *err, size_t err_size)
{
    memset(s, 0, sizeof *s);
    if (!binary_path || !*binary_path) {
        snprintf(err, err_size, "no sluice-sink binary (is SLUICE_SINK set by meson test?)");
        return false;
    }
    snprintf(s->dir, sizeof s->dir, "/tmp/sluice-test-sink-XXXXXX");
    if (!mkdtemp(s->dir)) {
        snprintf(err, err_size, "mkdtemp(%s): %s", s->dir, strerror(errno));
        s->dir[0] = '\0';
        return false;
    }
    snprintf(s->log_path, sizeof s->log_path, "%s/requests.log", s->dir);
    s->pid = spawn_sink(s, binary_path);
    if (s->pid < 0) {
        snprintf(err, err_size, "fork: %s", strerror(errno));
        s->pid = 0;
        sink_stop(s);
        return false;
    }
    int64_t deadline = monotonic_ms() + 5000;
    while (monotonic_ms() < deadline) {
        int status;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            snprintf(err, err_size, "%s exited (%s %d) before serving", binary_path,
                     WIFEXITED(status) ? "status" : "signal",
                     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            sink_stop(s);
            return false;
        }
        int port = read_port(s);
        if (port && health_ok(port)) {
            s->port = port;
            return true;
        }
        sleep_ms(5);
    }
    snprintf(err, err_size, "%s did not answer GET /_health within 5 s", binary_path);
    sink_stop(s);
    return false;
}

void sink_stop(sink_process *s)
{
    if (s->pid > 0) {
        process_stop(s->pid, SIGTERM, 5000);
        s->pid = 0;
    }
    if (s->dir[0]) {
        char path[96];
        port_path(s, path, sizeof path, "");
        unlink(path);
        port_path(s, path, sizeof path, ".tmp");
        unlink(path);
        unlink(s->log_path);
        rmdir(s->dir);
        s->dir[0] = '\0';
    }
    s->port = 0;
}

/* ---- the log ---- */

/* Undoes the sink's escaping of in[0..len) into out (room for `cap` bytes,
 * cap >= 1), truncating; NUL-terminates and returns the unescaped length,
 * or -1 on a malformed escape. */
static long unescape(const char *in, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = in[i];
        if (c == '\\') {
            if (++i == len)
                return -1;
            switch (in[i]) {
            case 't':
                c = '\t';
                break;
            case 'n':
                c = '\n';
                break;
            case 'r':
                c = '\r';
                break;
            case '\\':
                c = '\\';
                break;
            case 'x': {
                int hi = i + 2 < len ? sl_hex_digit(in[i + 1]) : -1;
                int lo = hi >= 0 ? sl_hex_digit(in[i + 2]) : -1;
                if (hi < 0 || lo < 0)
                    return -1;
                c = (char)(hi * 16 + lo);
                i += 2;
                break;
            }
            default:
                return -1;
            }
        }
        if (o + 1 < cap)
            out[o++] = c;
    }
    out[o] = '\0';
    return (long)o;
}

/* Parses one line (without its '\n') into r; false if malformed. */
static bool parse_line(const char *line, size_t len, sink_request *r)
{
    const char *field[8];
    size_t flen[8];
    size_t n = 0;
    const char *p = line, *end = line + len;
    while (n < 8) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        field[n] = p;
        flen[n] = (size_t)((tab ? tab : end) - p);
        n++;
        if (!tab)
            break;
        p = tab + 1;
    }
    if (n != 8 || field[7] + flen[7] != end)
        return false;
    memset(r, 0, sizeof *r);
    char number[24];
    if (unescape(field[0], flen[0], number, sizeof number) <= 0)
        return false;
    char *num_end;
    r->arrival_us = strtoll(number, &num_end, 10);
    if (*num_end)
        return false;
    if (unescape(field[5], flen[5], number, sizeof number) <= 0)
        return false;
    r->status = (int)strtol(number, &num_end, 10);
    if (*num_end)
        return false;
    if (unescape(field[1], flen[1], r->method, sizeof r->method) < 0 ||
        unescape(field[2], flen[2], r->path, sizeof r->path) < 0 ||
        unescape(field[3], flen[3], r->key, sizeof r->key) < 0 ||
        unescape(field[4], flen[4], r->tenant, sizeof r->tenant) < 0 ||
        unescape(field[7], flen[7], r->test, sizeof r->test) < 0)
        return false;
    r->body = malloc(flen[6] + 1);
    if (!r->body)
        return false;
    long body_len = unescape(field[6], flen[6], r->body, flen[6] + 1);
    if (body_len < 0) {
        free(r->body);
        r->body = NULL;
        return false;
    }
    r->body_len = (size_t)body_len;
    return true;
}

/* The whole file at path, NUL-terminated, in *size bytes; NULL if none. */
static char *read_file(const char *path, size_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *data = malloc(cap);
    while (data) {
        if (cap - len < 2) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                data = NULL;
                break;
            }
            data = bigger;
            cap *= 2;
        }
        ssize_t n = read(fd, data + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (data) {
        data[len] = '\0';
        *size = len;
    }
    return data;
}

size_t sink_read_log(const sink_process *s, sink_request **out)
{
    *out = NULL;
    size_t size;
    char *data = read_file(s->log_path, &size);
    if (!data)
        return 0;
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    sink_request *reqs = lines ? calloc(lines, sizeof *reqs) : NULL;
    size_t n = 0;
    const char *p = data, *end = data + size;
    while (reqs && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* a line still being written: never, but be safe */
        if (parse_line(p, (size_t)(nl - p), &reqs[n]))
            n++;
        p = nl + 1;
    }
    free(data);
    if (n == 0) {
        free(reqs);
        return 0;
    }
    *out = reqs;
    return n;
}

/* Whole lines in the log so far: cheap enough to poll while a test
 * measures timing, unlike parsing it. */
static size_t count_lines(const sink_process *s)
{
    FILE *f = fopen(s->log_path, "rb");
    if (!f)
        return 0;
    char buf[65536];
    size_t n, lines = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + n - p))); p++)
            lines++;
    fclose(f);
    return lines;
}

size_t sink_wait_log(const sink_process *s, size_t at_least, int timeout_ms, sink_request **out)
{
    int64_t deadline = monotonic_ms() + timeout_ms;
    while (count_lines(s) < at_least && monotonic_ms() < deadline)
        sleep_ms(50);
    return sink_read_log(s, out);
}

void sink_requests_free(sink_request *reqs, size_t n)
{
    if (!reqs)
        return;
    for (size_t i = 0; i < n; i++)
        free(reqs[i].body);
    free(reqs);
}
