/* sink_io.h - the process plumbing of sluice-sink: its arguments, the
 * loopback-only listening socket, the port file and the buffered request
 * log. Failures print one line naming what failed to stderr. */
#ifndef SLUICE_SINK_IO_H
#define SLUICE_SINK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct sl_sink_options {
    const char *port_file; /* required */
    const char *log_path;  /* required */
    const char *bind;      /* default "127.0.0.1" */
    int port;              /* default 0: any free port */
} sl_sink_options;

typedef enum sl_sink_parse {
    SL_SINK_PARSE_OK,
    SL_SINK_PARSE_HELP, /* --help: usage was printed to stdout */
    SL_SINK_PARSE_BAD,  /* why was printed to stderr */
} sl_sink_parse;

/* Parses argv (getopt_long) into o, whose strings point into argv. */
sl_sink_parse sl_sink_parse_options(int argc, char **argv, sl_sink_options *o);

/* Fills addr and len for o->bind and o->port if o->bind is a numeric
 * loopback address (127.0.0.0/8 or ::1); false, printing nothing, for
 * anything else: the sink must never face a network. */
bool sl_sink_loopback_address(const sl_sink_options *o, struct sockaddr_storage *addr,
                              socklen_t *len);

/* A non-blocking, close-on-exec listening socket on addr; -1 on failure
 * (the message names o->bind, o->port and the reason). */
int sl_sink_listen(const sl_sink_options *o, const struct sockaddr_storage *addr, socklen_t len);

/* The port a bound socket got, -1 on failure. */
int sl_sink_bound_port(int fd);

/* Writes "PORT\n" to path.tmp and renames it to path, so a reader sees the
 * whole file or none. */
bool sl_sink_write_port_file(const char *path, int port);

/* An append-only log file behind a buffer that only ever holds whole
 * lines. The caller decides when to flush. */
typedef struct sl_sink_log {
    int fd; /* -1 when closed */
    char *data;
    size_t len, cap;
    const char *path; /* borrowed, for messages */
} sl_sink_log;

/* Opens (creating, appending to) path with a cap-byte buffer. */
bool sl_sink_log_open(sl_sink_log *l, const char *path, size_t cap);

/* Writes out every buffered line, so that the buffer is empty. */
bool sl_sink_log_flush(sl_sink_log *l);

/* Room for `need` bytes at data + len, flushing the buffer when full and
 * growing it for a line longer than the buffer; NULL on failure. The
 * caller writes one whole line there and adds its length to len. */
char *sl_sink_log_reserve(sl_sink_log *l, size_t need);

/* Closes the file and frees the buffer, without flushing. */
void sl_sink_log_close(sl_sink_log *l);

#endif
