/* resp_text.c - see resp_text.h. */
#include <string.h>

#include <criterion/criterion.h>

#include "resp_text.h"

redisReply *resp_text_reply(const char *text)
{
    redisReader *reader = redisReaderCreate();
    cr_assert_not_null(reader);
    cr_assert_eq(redisReaderFeed(reader, text, strlen(text)), REDIS_OK);
    void *reply = NULL;
    cr_assert_eq(redisReaderGetReply(reader, &reply), REDIS_OK);
    cr_assert_not_null(reply, "incomplete reply: %s", text);
    redisReaderFree(reader);
    return reply;
}
