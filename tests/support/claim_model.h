/* claim_model.h - a model of lua/claim.lua's stacked limits, for property
 * tests: one tenant on its shaping schedule (overflow "wait", no retries,
 * no deadlines, no max_wait, small jobs), built from the per-algorithm
 * models of src/admission (through models.h).
 *
 * The rule it holds the script to: a job passes only if every rule passes
 * at its slot, and then every rule commits; a job denied by a rule whose
 * on_deny is "dead-letter" is dead-lettered `limit:NAME` (the first such
 * rule) and consumes no capacity of the schedule or of the other rules;
 * else a denying "delay" rule holds the queue, in order, until the latest
 * retry time of the denying rules. */
#ifndef SLUICE_TEST_CLAIM_MODEL_H
#define SLUICE_TEST_CLAIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/admission.h"
#include "models.h"

#define CLAIM_MODEL_RULES_MAX 3
#define CLAIM_MODEL_QUEUE_MAX 1024 /* jobs pushed over a model's life */
#define CLAIM_MODEL_BATCH_MAX 64

typedef struct claim_model_rule {
    const char *name;
    const model_ops *ops; /* the rule's algorithm (not shaping) */
    int64_t first, second; /* in ARGV order, as models.h takes them */
    bool dead_letter;      /* on_deny "dead-letter", else "delay" */
    void *state;           /* owned by the claim_model */
} claim_model_rule;

typedef struct claim_model {
    sl_shaping_state shape;
    int64_t rate_milli;
    int64_t lookahead_us, refill_us;
    int batch; /* 1..CLAIM_MODEL_BATCH_MAX */
    claim_model_rule rules[CLAIM_MODEL_RULES_MAX];
    int rule_count;
    int64_t queue[CLAIM_MODEL_QUEUE_MAX]; /* job numbers; [head, tail) are queued, head first */
    size_t head, tail;
} claim_model;

/* What one claim did to one job, in queue order. */
typedef struct claim_model_outcome {
    int64_t job;
    bool claimed;          /* else dead-lettered */
    int64_t slot;          /* claimed: its slot */
    const char *denied_by; /* dead-lettered: the rule's name */
} claim_model_outcome;

typedef struct claim_model_result {
    claim_model_outcome outcomes[4 * CLAIM_MODEL_BATCH_MAX];
    size_t count;
    bool held;       /* a delaying rule stopped the claim */
    int64_t next_us; /* the reply's next_us */
    size_t queue_len;
} claim_model_result;

/* Fills *cm with an empty queue, a fresh schedule and fresh rule states
 * (rules[i].state is created here; name and ops point at the caller's,
 * which must outlive cm). */
void claim_model_init(claim_model *cm, int64_t rate_milli, int64_t lookahead_us,
                      int64_t refill_us, int batch, const claim_model_rule *rules, int rule_count);
/* Frees the rule states. */
void claim_model_free(claim_model *cm);
/* A job pushed to the queue's tail. */
void claim_model_push(claim_model *cm, int64_t job);
/* One claim at now_us, as claim.lua would do it; fills *out. */
void claim_model_claim(claim_model *cm, int64_t now_us, claim_model_result *out);

#endif
