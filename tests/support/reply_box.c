/* reply_box.c - see reply_box.h. */
#include "reply_box.h"

#include <stdio.h>

void reply_box_fill(redisReply *reply, void *arg)
{
    reply_box *box = arg;
    box->came = true;
    box->lost = reply == NULL;
    if (!reply)
        return;
    box->type = reply->type;
    box->integer = reply->integer;
    const redisReply *first = reply->type == REDIS_REPLY_ARRAY && reply->elements > 0
                                  ? reply->element[0] : NULL;
    if (first && first->str)
        snprintf(box->str, sizeof box->str, "%s", first->str);
    else if (first)
        box->integer = first->integer;
    else if (reply->str)
        snprintf(box->str, sizeof box->str, "%s", reply->str);
}
