/* resp_stream.c - see resp_stream.h. */
#include "resp_stream.h"

#include <stdbool.h>

#define ARRAY_MAX 100000

/* Whether the stream announces an array hiredis would allocate too much
 * for (or a negative one; -1 is the nil array). Any '*' counts, payload
 * bytes included: a few inputs are skipped for nothing, none is missed. */
static bool huge_array(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*')
            continue;
        size_t j = i + 1;
        bool negative = j < size && data[j] == '-';
        j += negative;
        uint64_t n = 0;
        for (; j < size && data[j] >= '0' && data[j] <= '9' && n <= ARRAY_MAX; j++)
            n = n * 10 + (uint64_t)(data[j] - '0');
        if (negative ? n > 1 : n > ARRAY_MAX)
            return true;
    }
    return false;
}

void sl_fuzz_resp_stream(const uint8_t *data, size_t size, size_t piece,
                         void (*check)(const redisReply *reply, void *arg), void *arg)
{
    if (huge_array(data, size))
        return;
    redisReader *reader = redisReaderCreate();
    if (!reader)
        return;
    bool failed = false;
    for (size_t at = 0; at < size && !failed;) {
        size_t n = size - at < piece ? size - at : piece;
        if (redisReaderFeed(reader, (const char *)data + at, n) != REDIS_OK)
            break;
        at += n;
        for (;;) {
            void *reply = NULL;
            if (redisReaderGetReply(reader, &reply) != REDIS_OK) {
                failed = true;
                break;
            }
            if (!reply)
                break;
            check(reply, arg);
            freeReplyObject(reply);
        }
    }
    redisReaderFree(reader);
}
