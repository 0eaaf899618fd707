/* sink_process.h - a private sluice-sink (tests/sink/) for one test
 * process: start it, stop it, read back the requests it logged. */
#ifndef SLUICE_TEST_SINK_PROCESS_H
#define SLUICE_TEST_SINK_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sink_process {
    pid_t pid;          /* 0 when not running */
    int port;           /* on 127.0.0.1 */
    char dir[64];       /* its temporary directory, removed by sink_stop */
    char log_path[128]; /* the request log inside dir */
} sink_process;

/* Starts binary_path (usually getenv("SLUICE_SINK")) on a free loopback
 * port in a fresh temporary directory and waits (at most 5 s) for its port
 * file and a successful GET /_health. The sink dies with the calling
 * process. False, with a message in err, on failure (nothing left behind). */
bool sink_start(sink_process *s, const char *binary_path, char *err, size_t err_size);

/* Stops the sink by its PID (SIGTERM, SIGKILL after 5 s), reaps it and
 * removes its temporary files. Safe on a sink that is not running. */
void sink_stop(sink_process *s);

/* One logged request. Text fields are unescaped and truncated to fit;
 * key, tenant and test hold "-" when the header was absent. status is 0 for
 * /close (no answer). body is malloc'd, NUL-terminated, body_len bytes long
 * (it may contain NULs). */
typedef struct sink_request {
    int64_t arrival_us; /* CLOCK_REALTIME when the request was complete */
    char method[16];
    char path[256]; /* the request target as sent, query included */
    char key[128];  /* Idempotency-Key */
    char tenant[128]; /* X-Tenant */
    int status;
    char test[64]; /* X-Test */
    char *body;
    size_t body_len;
} sink_request;

/* Parses every whole line logged so far into a new array (*out, which the
 * caller frees with sink_requests_free) and returns how many. The sink
 * writes its log at most ~10 ms late: use sink_wait_log to wait for lines.
 * Returns 0 with *out = NULL when there are none or the log is unreadable;
 * a malformed line is skipped. */
size_t sink_read_log(const sink_process *s, sink_request **out);

/* sink_read_log, retried until it returns at least `at_least` requests or
 * timeout_ms passed; returns what the last read found. */
size_t sink_wait_log(const sink_process *s, size_t at_least, int timeout_ms, sink_request **out);

/* Frees the bodies and the array; NULL is fine. */
void sink_requests_free(sink_request *reqs, size_t n);

#endif
