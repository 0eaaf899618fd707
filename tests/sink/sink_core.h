/* sink_core.h - the decisions of sluice-sink as pure functions: which
 * behaviour a request URI selects, the mode that plain paths follow, how a
 * log line is written, and the per-Idempotency-Key counters of /flaky. No
 * I/O, no clock. */
#ifndef SLUICE_SINK_CORE_H
#define SLUICE_SINK_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_SINK_SLOW_MS_MAX 60000          /* /slow/MS: at most a minute */
#define SL_SINK_FLAKY_MAX 1000000000       /* /flaky/N: N at most 1e9 */
#define SL_SINK_FLAKY_KEYS_MAX 1000000     /* keys remembered by /flaky */
#define SL_SINK_RETRY_AFTER_MAX 128        /* decoded retry_after, with NUL */
#define SL_SINK_LIMIT_MAX 1000000          /* /limit/R: R at most 10^6 requests/s */

typedef enum sl_sink_kind {
    SL_SINK_OK,     /* anything else: 200 "ok" */
    SL_SINK_HEALTH, /* /_health: a control path when the method is GET */
    SL_SINK_STATUS, /* /status/NNN[/...][?retry_after=S] */
    SL_SINK_SLOW,   /* /slow/MS[/...] */
    SL_SINK_FLAKY,  /* /flaky/N[/...] */
    SL_SINK_LIMIT,  /* /limit/R[/...][?headers=1]: a hidden token bucket, 429 beyond */
    SL_SINK_CLOSE,  /* /close[/...]: drop the connection, no answer */
    SL_SINK_RESET,  /* /reset[/...]: drop the connection with a TCP reset */
    SL_SINK_MODE,   /* /_mode[/BEHAVIOUR]: a control path, any method */
    SL_SINK_BAD,    /* a behaviour path with a bad parameter: 400 */
} sl_sink_kind;

typedef struct sl_sink_route {
    sl_sink_kind kind;
    int status;      /* STATUS: 100..599 */
    int64_t param;   /* SLOW: milliseconds; FLAKY: 503s per key before 200s;
                        LIMIT: requests/s */
    bool headers;    /* LIMIT: answer X-RateLimit-Remaining and -Reset */
    char retry_after[SL_SINK_RETRY_AFTER_MAX]; /* STATUS: decoded, "" if none */
    const char *error; /* BAD: a static message naming the bad part */
    const char *mode_path; /* MODE: what follows "/_mode" in the uri, "" for none */
} sl_sink_route;

/* Parses a request URI (origin form "/p?q" or absolute form
 * "http://h/p?q") into the behaviour it selects. Never fails: unknown
 * paths are SL_SINK_OK, bad parameters SL_SINK_BAD with out->error set. */
void sl_sink_route_parse(const char *uri, sl_sink_route *out);

/* ---- the mode ----
 * A request to a plain path (SL_SINK_OK) follows the sink's mode, which
 * control requests to /_mode/BEHAVIOUR set at run time: a test or a soak
 * makes the same endpoint URLs flap between failures and health. A
 * behaviour path keeps its own behaviour whatever the mode. */

/* Parses a mode path (a route's mode_path, like "/status/429?retry_after=2",
 * "/slow/1500", "/close", "/reset", "/flaky/2" or "/ok" for healthy) into
 * *mode; NULL on success, else a static message saying why (then *mode is
 * unspecified: parse into a scratch route). "" (no path) is refused. */
const char *sl_sink_mode_parse(const char *mode_path, sl_sink_route *mode);

/* The route a request follows: its own, unless its path selects no
 * behaviour (SL_SINK_OK), then the mode's. Returns one of the two. */
const sl_sink_route *sl_sink_route_under_mode(const sl_sink_route *request,
                                              const sl_sink_route *mode);

/* Describes a route in a few words ("ok", "status 429 retry_after=2",
 * "slow 1500", "flaky 2", "close", "reset") into out (size bytes, always
 * NUL-terminated); returns what snprintf would. */
int sl_sink_route_describe(const sl_sink_route *r, char *out, size_t size);

/* One request as it goes to the log. Strings are NUL-terminated; NULL
 * stands for an absent header and is written as "-". The body is given as
 * up to body_parts pieces (it may sit in several buffer chains). */
typedef struct sl_sink_record {
    int64_t arrival_us;
    const char *method;
    const char *uri;
    const char *key;    /* Idempotency-Key */
    const char *tenant; /* X-Tenant */
    int status;         /* what the sink answers; 0 = no answer (/close) */
    const char *test;   /* X-Test */
    size_t body_parts;
    const void *const *body;  /* body_parts pointers */
    const size_t *body_len;   /* body_parts lengths */
} sl_sink_record;

/* An upper bound on the bytes sl_sink_format_line writes for r. */
size_t sl_sink_line_max(const sl_sink_record *r);

/* Writes r as one log line, "\n" included, into out (which has at least
 * sl_sink_line_max(r) bytes) and returns its length. Fields, tab-separated:
 * arrival_us method uri key tenant status body test. Every text field is
 * escaped: \t \n \r \\ and \xHH for other bytes outside 0x20..0x7e. */
size_t sl_sink_format_line(char *out, const sl_sink_record *r);

/* Escapes len bytes of in into out (room for 4 * len bytes); returns the
 * bytes written. */
size_t sl_sink_escape(char *out, const void *in, size_t len);

/* The hidden limit of /limit/R: a token bucket of R tokens/s holding at
 * most max(1, R/10) (a tenth of a second's burst), full at first. All-zero
 * is a new one. */
typedef struct sl_sink_bucket {
    int64_t micro_tokens; /* millionths of a token */
    int64_t at_us;        /* when micro_tokens was right; 0: never used */
} sl_sink_bucket;

/* What the bucket says of one request. */
typedef struct sl_sink_verdict {
    bool allowed;       /* else 429 */
    int64_t remaining;  /* whole tokens left after it */
    int64_t reset_us;   /* until the next whole token (0 when one is left) */
} sl_sink_verdict;

/* One request at now_us (any monotonic clock) against rate R: refills,
 * then takes a token if there is one. A change of R keeps the tokens
 * (clamped to the new burst). */
sl_sink_verdict sl_sink_bucket_take(sl_sink_bucket *b, int64_t rate, int64_t now_us);

/* Counters of requests per Idempotency-Key for /flaky. All-zero is an
 * empty map; it allocates as keys arrive, and when it holds max_entries
 * keys it forgets them all and starts over (so a key may be answered 503
 * more often than N, never less). Free with sl_flaky_clear. */
typedef struct sl_flaky_slot sl_flaky_slot;
typedef struct sl_flaky_chunk sl_flaky_chunk;
typedef struct sl_flaky_map {
    sl_flaky_slot *slots;
    size_t capacity; /* slots, a power of two, or 0 */
    size_t count;
    size_t max_entries; /* 0 means SL_SINK_FLAKY_KEYS_MAX */
    sl_flaky_chunk *chunks; /* where the keys are copied */
} sl_flaky_map;

/* Counts one more request with this key (len bytes, may contain NUL) and
 * returns how many it has seen, this one included; 0 when out of memory. */
uint64_t sl_flaky_hit(sl_flaky_map *m, const char *key, size_t len);

/* Frees everything the map holds; it is then empty and reusable. */
void sl_flaky_clear(sl_flaky_map *m);

#endif
