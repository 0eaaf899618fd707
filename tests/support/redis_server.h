/* redis_server.h - a private redis-server for one test process (or the
 * server binary named by SLUICE_REDIS_SERVER, e.g. valkey-server). */
#ifndef SLUICE_TEST_REDIS_SERVER_H
#define SLUICE_TEST_REDIS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

typedef struct rs_server {
    pid_t pid;     /* 0 when not running */
    int port;      /* on 127.0.0.1 */
    char dir[64];  /* its working directory, removed by rs_stop */
    /* > 0: the next start loads its dump slowly, this long per key, and
     * answers LOADING meanwhile (Redis's own test settings); rs_start_on
     * then returns while it still loads. */
    int key_load_delay_us;
} rs_server;

/* Starts redis-server on a free loopback port (and on the unix socket
 * DIR/redis.sock) in a fresh temporary directory and waits (at most 5 s) until it answers PING. The server dies
 * with the calling process. False, with a message in err, on failure. */
bool rs_start(rs_server *server, char *err, size_t err_size);

/* Starts the server again on `port` (0: any free one) in server->dir
 * (kept if already set, so a saved dump.rdb is loaded back). */
bool rs_start_on(rs_server *server, int port, char *err, size_t err_size);

/* Stops the server by its PID (SIGTERM, SIGKILL after 5 s), reaps it and
 * removes its directory. Safe to call on a server that is not running. */
void rs_stop(rs_server *server);

/* A new blocking connection to the server, or NULL. Caller frees. */
redisContext *rs_connect(const rs_server *server);

/* A free TCP port on 127.0.0.1 at the time of the call (0 on failure). */
int rs_free_port(void);

#endif
