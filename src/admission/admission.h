/* admission.h - the admission algorithms as pure functions.
 *
 * These are the reference models of the scripts in lua/: the same integer
 * arithmetic, the same replies, the same expiry. They take time as an
 * argument and do no I/O, so the worker can reuse them and tests can drive
 * them with any clock. Units: time in integer microseconds since the epoch;
 * rates in milli-jobs per second (R), so one job spaces 1e9/R us; bucket
 * levels in nano-jobs (SL_JOB per job), of which exactly R leak per us.
 * Every intermediate stays below 2^53, which is what keeps the Lua side
 * (doubles) exact and equal to this one.
 *
 * State structs: all-zero is the state of a key that does not exist, and
 * expire_at_ms is when the script's PEXPIREAT drops the key (0 = no key).
 */
#ifndef SLUICE_ADMISSION_H
#define SLUICE_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_JOB INT64_C(1000000000) /* one job in bucket units (nano-jobs) */

#define SL_CAPACITY_MAX INT64_C(9000000)
#define SL_RATE_MILLI_MIN INT64_C(1)          /* 0.001 jobs/s */
#define SL_RATE_MILLI_MAX INT64_C(1000000000) /* 1,000,000 jobs/s */
#define SL_WINDOW_MAX_MAX INT64_C(1000000000)
#define SL_WINDOW_MS_MAX INT64_C(31622400000) /* 366 days */
#define SL_COUNTER_PRODUCT_MAX INT64_C(4503599627370496) /* (max+1)*window_ms, 2^52 */
#define SL_NOW_US_MAX INT64_C(9007199254740991) /* 2^53 - 1 */

/* Parameters of shaping, policing and token_bucket (ARGV capacity, rate). */
typedef struct sl_bucket_params {
    int64_t capacity;   /* jobs, 1..SL_CAPACITY_MAX */
    int64_t rate_milli; /* milli-jobs per second, SL_RATE_MILLI_MIN..MAX */
} sl_bucket_params;

/* Parameters of the window algorithms (ARGV max, window_ms). */
typedef struct sl_window_params {
    int64_t max;       /* jobs per window, 1..SL_WINDOW_MAX_MAX */
    int64_t window_ms; /* 1..SL_WINDOW_MS_MAX */
} sl_window_params;

/* The scripts' reply {allowed, remaining, wait_us}. */
typedef struct sl_verdict {
    bool allowed;
    int64_t remaining; /* jobs that would still be admitted now */
    int64_t wait_us;   /* allowed: delay to the slot (shaping, else 0);
                          denied: the earliest time a retry succeeds */
} sl_verdict;

typedef struct sl_shaping_state {
    int64_t next_free; /* the next slot, us (the exact point rounded up) */
    int64_t frac;      /* exact point = next_free - frac / rate_milli */
    int64_t expire_at_ms;
} sl_shaping_state;

typedef struct sl_policing_state {
    int64_t level; /* nano-jobs in the bucket at `last` */
    int64_t last;
    int64_t expire_at_ms;
} sl_policing_state;

typedef struct sl_token_bucket_state {
    bool present; /* absent means a full bucket */
    int64_t tokens; /* nano-tokens at `last` */
    int64_t last;
    int64_t expire_at_ms;
} sl_token_bucket_state;

typedef struct sl_fixed_window_state {
    bool present;
    int64_t window; /* index: now / window_us */
    int64_t count;
    int64_t expire_at_ms;
} sl_fixed_window_state;

typedef struct sl_sliding_window_log_state {
    int64_t *times; /* admission times, ascending; owned by the caller */
    size_t len;
    size_t cap; /* must be >= max: admission never grows past max */
    int64_t expire_at_ms;
} sl_sliding_window_log_state;

typedef struct sl_sliding_window_counter_state {
    bool present;
    int64_t window;
    int64_t cur;
    int64_t prev;
    int64_t expire_at_ms;
} sl_sliding_window_counter_state;

/* NULL if p is within the scripts' ranges, else a message naming the field. */
const char *sl_bucket_params_error(const sl_bucket_params *p);
/* Same for window params; `counter` adds the sliding counter's product bound. */
const char *sl_window_params_error(const sl_window_params *p, bool counter);

/* Parses a decimal rate ("10", "0.5") into milli-jobs/s exactly, as the
 * scripts do. Returns false (leaving *out alone) on anything else. */
bool sl_parse_rate_milli(const char *text, int64_t *out);

/* Each admit function is the script of the same name: it decides for one
 * job arriving at now_us and updates *state when the job is admitted.
 * Params must have passed the *_params_error check. */
sl_verdict sl_shaping_admit(sl_shaping_state *state, const sl_bucket_params *p, int64_t now_us);
sl_verdict sl_policing_admit(sl_policing_state *state, const sl_bucket_params *p, int64_t now_us);
sl_verdict sl_token_bucket_admit(sl_token_bucket_state *state, const sl_bucket_params *p,
                                 int64_t now_us);
sl_verdict sl_fixed_window_admit(sl_fixed_window_state *state, const sl_window_params *p,
                                 int64_t now_us);
sl_verdict sl_sliding_window_log_admit(sl_sliding_window_log_state *state,
                                       const sl_window_params *p, int64_t now_us);
sl_verdict sl_sliding_window_counter_admit(sl_sliding_window_counter_state *state,
                                           const sl_window_params *p, int64_t now_us);

/* A 429/503 pause: no slot before until_us (the ack script's "pause" op).
 * Moves the schedule to until_us and returns true, or returns false and
 * leaves *state alone when the schedule already runs past until_us. */
bool sl_shaping_pause(sl_shaping_state *state, int64_t until_us);

#endif
