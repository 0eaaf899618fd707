/* ratelimit_headers.c - see ratelimit_headers.h. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "job/ratelimit_headers.h"
#include "job/retry_after.h" /* SL_RETRY_AFTER_MAX_MS */

/* Numbers beyond this are clamped while parsed: any delay this large is
 * clamped to a day anyway, and the products below stay in int64. */
#define NUMBER_MAX INT64_C(1000000000000000) /* 10^15 */
#define UNIX_SECONDS_MIN INT64_C(1000000000)  /* 10^9 */
#define UNIX_MS_MIN INT64_C(1000000000000)    /* 10^12 */

void sl_ratelimit_clear(sl_ratelimit_raw *r)
{
    memset(r, 0, sizeof *r);
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void keep(char *field, const char *value, size_t len)
{
    while (len > 0 && is_space(value[0])) {
        value++;
        len--;
    }
    while (len > 0 && is_space(value[len - 1]))
        len--;
    if (len > SL_RATELIMIT_VALUE_MAX || memchr(value, '\0', len))
        len = 0; /* hostile or broken: as if absent */
    memcpy(field, value, len);
    field[len] = '\0';
}

bool sl_ratelimit_capture(sl_ratelimit_raw *r, const char *name, size_t name_len,
                          const char *value, size_t value_len)
{
    static const struct {
        const char *name;
        size_t offset;
    } known[] = {
        {"RateLimit", offsetof(sl_ratelimit_raw, ratelimit)},
        {"RateLimit-Remaining", offsetof(sl_ratelimit_raw, remaining)},
        {"RateLimit-Reset", offsetof(sl_ratelimit_raw, reset)},
        {"X-RateLimit-Remaining", offsetof(sl_ratelimit_raw, x_remaining)},
        {"X-RateLimit-Reset", offsetof(sl_ratelimit_raw, x_reset)},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].name) == name_len && strncasecmp(name, known[i].name, name_len) == 0) {
            keep((char *)r + known[i].offset, value, value_len);
            r->any = true;
            return true;
        }
    }
    return false;
}

/* ---- numbers ------------------------------------------------------------ */

/* Digits at s[*i...] as an integer clamped to NUMBER_MAX; false if none. */
static bool digits(const char *s, size_t *i, int64_t *out)
{
    if (!is_digit(s[*i]))
        return false;
    int64_t n = 0;
    for (; is_digit(s[*i]); ++*i) {
        n = n * 10 + (s[*i] - '0');
        if (n > NUMBER_MAX)
            n = NUMBER_MAX;
    }
    *out = n;
    return true;
}

/* The whole of s is 1*DIGIT: *out is its value (clamped). */
static bool whole_integer(const char *s, int64_t *out)
{
    size_t i = 0;
    return digits(s, &i, out) && s[i] == '\0';
}

/* The whole of s is 1*DIGIT ["." 1*DIGIT] seconds: *ms, rounded up (a
 * pause a little long beats a 429). *whole gets the integer part. */
static bool whole_seconds(const char *s, int64_t *whole, int64_t *ms)
{
    size_t i = 0;
    if (!digits(s, &i, whole))
        return false;
    int64_t frac = 0;
    if (s[i] == '.') {
        i++;
        if (!is_digit(s[i]))
            return false;
        int scale = 100;
        bool rest = false;
        for (; is_digit(s[i]); i++) {
            if (scale > 0)
                frac += (s[i] - '0') * scale;
            else if (s[i] != '0')
                rest = true;
            scale /= 10;
        }
        frac += rest ? 1 : 0;
    }
    if (s[i] != '\0')
        return false;
    *ms = *whole * 1000 + frac;
    return true;
}

static int64_t clamp_delay(int64_t ms)
{
    return ms < 0 ? 0 : ms > SL_RETRY_AFTER_MAX_MS ? SL_RETRY_AFTER_MAX_MS : ms;
}

/* A Reset value of the separate-field forms: delay seconds or a unix
 * time (see the header for the thresholds). */
static bool reset_delay(const char *s, int64_t now_ms, int64_t *delay_ms)
{
    int64_t whole = 0, ms = 0;
    if (!whole_seconds(s, &whole, &ms))
        return false;
    if (whole >= UNIX_MS_MIN)
        *delay_ms = clamp_delay(whole - now_ms);
    else if (whole >= UNIX_SECONDS_MIN)
        *delay_ms = clamp_delay(ms - now_ms);
    else
        *delay_ms = clamp_delay(ms);
    return true;
}

/* ---- RateLimit: a structured-field list ----------------------------------- */

/* Skips a bare item at s[*i]: a quoted string, a byte sequence (:...:)
 * or a token (a policy's name, a parameter's value). */
static bool skip_bare_item(const char *s, size_t *i)
{
    if (s[*i] == ':') {
        const char *end = strchr(s + *i + 1, ':');
        if (!end)
            return false;
        *i = (size_t)(end - s) + 1;
        return true;
    }
    if (s[*i] == '"') {
        for (++*i; s[*i] != '"'; ++*i) {
            if (s[*i] == '\0')
                return false;
            if (s[*i] == '\\' && s[++*i] == '\0')
                return false;
        }
        ++*i;
        return true;
    }
    size_t start = *i;
    while (s[*i] && s[*i] != ';' && s[*i] != ',' && s[*i] != '=' && !is_space(s[*i]))
        ++*i;
    return *i > start;
}

/* One parameter or dictionary member "key=value" at s[*i]: the key's
 * span and the value if it is an integer (has_value false otherwise). */
static bool member(const char *s, size_t *i, const char **key, size_t *key_len, int64_t *value,
                   bool *has_value)
{
    while (is_space(s[*i]))
        ++*i;
    *key = s + *i;
    while ((s[*i] >= 'a' && s[*i] <= 'z') || (s[*i] >= 'A' && s[*i] <= 'Z') || s[*i] == '-' ||
           s[*i] == '_' || is_digit(s[*i]))
        ++*i;
    *key_len = (size_t)(s + *i - *key);
    if (*key_len == 0)
        return false;
    *has_value = false;
    if (s[*i] != '=')
        return true; /* a boolean parameter */
    ++*i;
    size_t at = *i;
    if (digits(s, i, value) && (s[*i] == '\0' || s[*i] == ';' || s[*i] == ',' || is_space(s[*i]))) {
        *has_value = true;
        return true;
    }
    *i = at;
    return skip_bare_item(s, i);
}

static bool key_is(const char *key, size_t len, const char *a, const char *b)
{
    return (strlen(a) == len && strncasecmp(key, a, len) == 0) ||
           (strlen(b) == len && strncasecmp(key, b, len) == 0);
}

/* The RateLimit field: items `name;r=N;t=N` separated by commas, or the
 * earlier dictionary `remaining=N, reset=N` (one policy). The longest t
 * of the policies with nothing remaining. A malformed member ends the
 * reading (what was read before counts). */
static bool ratelimit_field(const char *s, int64_t *delay_ms)
{
    bool found = false;
    int64_t longest = 0;
    /* the dictionary form's members, which span the commas */
    bool dict_r = false, dict_t = false;
    int64_t dict_remaining = 0, dict_reset = 0;
    size_t i = 0;
    for (;;) {
        while (is_space(s[i]))
            i++;
        if (s[i] == '\0')
            break;
        bool item_r = false, item_t = false;
        int64_t remaining = 0, reset = 0;
        const char *key;
        size_t key_len;
        int64_t value;
        bool has_value;
        size_t name_end = i;
        if (s[i] != '"' && skip_bare_item(s, &name_end) && s[name_end] == '=') {
            /* a dictionary member: key=value */
            if (!member(s, &i, &key, &key_len, &value, &has_value))
                break;
            if (has_value && key_is(key, key_len, "remaining", "r")) {
                dict_r = true;
                dict_remaining = value;
            } else if (has_value && key_is(key, key_len, "reset", "t")) {
                dict_t = true;
                dict_reset = value;
            }
        } else if (!skip_bare_item(s, &i)) { /* an item: a policy's name */
            break;
        }
        bool bad = false;
        while (s[i] == ';') { /* its parameters */
            i++;
            if (!member(s, &i, &key, &key_len, &value, &has_value)) {
                bad = true;
                break;
            }
            if (has_value && key_len == 1 && key[0] == 'r') {
                item_r = true;
                remaining = value;
            } else if (has_value && key_len == 1 && key[0] == 't') {
                item_t = true;
                reset = value;
            }
        }
        if (bad)
            break;
        if (item_r && item_t && remaining == 0) {
            found = true;
            if (reset > longest)
                longest = reset;
        }
        while (is_space(s[i]))
            i++;
        if (s[i] != ',')
            break;
        i++;
    }
    if (dict_r && dict_t && dict_remaining == 0) {
        found = true;
        if (dict_reset > longest)
            longest = dict_reset;
    }
    if (found)
        *delay_ms = clamp_delay(longest * 1000); /* longest <= 10^15: no overflow */
    return found;
}

/* A Remaining / Reset pair: remaining 0 and a readable reset. */
static bool pair(const char *remaining, const char *reset, int64_t now_ms, int64_t *delay_ms)
{
    int64_t left = 0;
    return whole_integer(remaining, &left) && left == 0 && reset_delay(reset, now_ms, delay_ms);
}

bool sl_ratelimit_pause(const sl_ratelimit_raw *r, int64_t now_ms, int64_t *delay_ms)
{
    if (!r || !r->any)
        return false;
    bool found = false;
    int64_t longest = 0, d = 0;
    if (ratelimit_field(r->ratelimit, &d)) {
        found = true;
        longest = d;
    }
    if (pair(r->remaining, r->reset, now_ms, &d) && (!found || d > longest)) {
        found = true;
        longest = d;
    }
    if (pair(r->x_remaining, r->x_reset, now_ms, &d) && (!found || d > longest)) {
        found = true;
        longest = d;
    }
    if (found)
        *delay_ms = longest;
    return found;
}
