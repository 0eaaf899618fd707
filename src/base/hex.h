/* hex.h - the value of one hexadecimal digit (percent-decoding, chunk
 * sizes); a number in hex (claimed jobs' ids). */
#ifndef SLUICE_HEX_H
#define SLUICE_HEX_H

#include <stddef.h>
#include <stdint.h>

/* 0..15 for '0'-'9', 'a'-'f', 'A'-'F'; -1 for anything else. */
static inline int sl_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Writes n in lower-case hex, without leading zeros ("0" for 0), as Lua's
 * string.format('%x') does, to out (room for 16 characters; no NUL).
 * Returns the characters written. */
static inline size_t sl_hex_write(char *out, uint64_t n)
{
    static const char digits[] = "0123456789abcdef";
    size_t len = 1;
    for (uint64_t rest = n >> 4; rest; rest >>= 4)
        len++;
    for (size_t i = len; i > 0; i--, n >>= 4)
        out[i - 1] = digits[n & 15];
    return len;
}

#endif
