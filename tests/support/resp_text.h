/* resp_text.h - a reply made from raw protocol bytes by hiredis's own
 * reader, as it would come off the wire: for tests of what parses
 * replies. */
#ifndef SLUICE_TEST_RESP_TEXT_H
#define SLUICE_TEST_RESP_TEXT_H

#include <hiredis/hiredis.h>

/* The reply the protocol bytes text make; the test fails if they are not
 * one whole reply. Caller frees with freeReplyObject. */
redisReply *resp_text_reply(const char *text);

#endif
