/* reply_box.h - what a test keeps of an asynchronous Redis reply
 * (redis_conn, redis_client, the cluster router): that it came, whether it
 * was NULL, and its gist. */
#ifndef SLUICE_TEST_REPLY_BOX_H
#define SLUICE_TEST_REPLY_BOX_H

#include <stdbool.h>

#include <hiredis/hiredis.h>

typedef struct reply_box {
    bool came;
    bool lost;      /* the reply was NULL */
    int type;
    long long integer; /* an integer reply's, or an array's first element's */
    char str[128];  /* a string, status or error reply's text, or an array's first string */
} reply_box;

/* A sl_redis_reply_fn: fills the reply_box arg. */
void reply_box_fill(redisReply *reply, void *arg);

#endif
