/* models.h - one interface over the six admission models, for tests that
 * treat them alike (property tests, wait probes). */
#ifndef SLUICE_TEST_MODELS_H
#define SLUICE_TEST_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/admission.h"

typedef struct model_ops {
    const char *script; /* name in lua/ and in sl_lua_scripts */
    bool window;        /* params are (max, window_ms), else (capacity, rate_milli) */
    size_t state_size;
    size_t expire_offset; /* offsetof(state, expire_at_ms) */
    /* The admission call; first/second are the params in ARGV order. */
    sl_verdict (*admit)(void *state, int64_t first, int64_t second, int64_t now_us);
} model_ops;

/* A fresh (absent-key) state able to hold `first` (capacity or max) jobs. */
void *model_create(const model_ops *m, int64_t first);
void model_destroy(const model_ops *m, void *state);
void *model_clone(const model_ops *m, const void *state);
/* What the key's expiry does: back to the absent state. */
void model_reset(const model_ops *m, void *state);
/* When Redis would drop the key (ms), 0 while there is no key. */
int64_t model_expire_at_ms(const model_ops *m, const void *state);

extern const model_ops model_list[];
extern const int model_count;

/* The model for a script name, or NULL. */
const model_ops *model_find(const char *script);

#endif
