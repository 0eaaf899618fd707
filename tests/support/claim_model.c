/* claim_model.c - see claim_model.h; each step names the function of
 * lua/claim.lua it stands for. */
#include <stdlib.h>

#include "claim_model.h"

void claim_model_init(claim_model *cm, int64_t rate_milli, int64_t lookahead_us,
                      int64_t refill_us, int batch, const claim_model_rule *rules, int rule_count)
{
    *cm = (claim_model){.rate_milli = rate_milli, .lookahead_us = lookahead_us,
                        .refill_us = refill_us < lookahead_us ? refill_us : lookahead_us,
                        .batch = batch, .rule_count = rule_count};
    if (batch < 1 || batch > CLAIM_MODEL_BATCH_MAX || rule_count > CLAIM_MODEL_RULES_MAX)
        abort();
    for (int i = 0; i < rule_count; i++) {
        cm->rules[i] = rules[i];
        cm->rules[i].state = model_create(rules[i].ops, rules[i].first);
    }
}

void claim_model_free(claim_model *cm)
{
    for (int i = 0; i < cm->rule_count; i++)
        model_destroy(cm->rules[i].ops, cm->rules[i].state);
}

void claim_model_push(claim_model *cm, int64_t job)
{
    if (cm->tail == CLAIM_MODEL_QUEUE_MAX)
        abort();
    cm->queue[cm->tail++] = job;
}

/* judge_limits: every rule decides on a copy of its state at the slot.
 * Returns the copies (the states were the job claimed); *denied_by is the
 * first denying dead-letter rule (NULL: none), *delay_until the latest
 * retry time of the denying delay rules (0: none denied). */
static void judge_limits(const claim_model *cm, int64_t slot, void *trial[],
                         const char **denied_by, int64_t *delay_until)
{
    *denied_by = NULL;
    *delay_until = 0;
    for (int i = 0; i < cm->rule_count; i++) {
        const claim_model_rule *r = &cm->rules[i];
        trial[i] = model_clone(r->ops, r->state);
        sl_verdict v = r->ops->admit(trial[i], r->first, r->second, slot);
        if (v.allowed)
            continue;
        if (!r->dead_letter) {
            if (slot + v.wait_us > *delay_until)
                *delay_until = slot + v.wait_us;
        } else if (!*denied_by) {
            *denied_by = r->name;
        }
    }
}

void claim_model_claim(claim_model *cm, int64_t now_us, claim_model_result *out)
{
    *out = (claim_model_result){0};
    int64_t horizon = now_us + cm->lookahead_us;
    sl_bucket_params schedule = {SL_CAPACITY_MAX, cm->rate_milli}; /* overflow "wait" */
    int claimed = 0;
    int64_t next_us = now_us; /* stops "batch" and "bound": at once */
    /* claim_batch: dead letters do not count against the batch, the loop
     * is bounded by 4 batches */
    for (int pass = 0; pass < 4 * cm->batch; pass++) {
        if (claimed >= cm->batch)
            break;
        if (cm->head == cm->tail) { /* drained, no retries: idle */
            next_us = 0;
            break;
        }
        /* judge: the slot on the schedule, then the rules there */
        sl_shaping_state shape = cm->shape;
        sl_verdict v = sl_shaping_admit(&shape, &schedule, now_us);
        if (!v.allowed) { /* full */
            next_us = now_us + v.wait_us;
            break;
        }
        int64_t slot = now_us + v.wait_us;
        if (slot > horizon) { /* beyond */
            next_us = slot - cm->refill_us;
            break;
        }
        void *trial[CLAIM_MODEL_RULES_MAX];
        const char *denied_by;
        int64_t delay_until;
        judge_limits(cm, slot, trial, &denied_by, &delay_until);
        bool commit = !denied_by && delay_until == 0;
        for (int i = 0; i < cm->rule_count; i++) {
            claim_model_rule *r = &cm->rules[i];
            if (commit) {
                model_destroy(r->ops, r->state);
                r->state = trial[i];
            } else {
                model_destroy(r->ops, trial[i]);
            }
        }
        if (!denied_by && delay_until != 0) { /* held, in order */
            out->held = true;
            next_us = delay_until;
            break;
        }
        claim_model_outcome *o = &out->outcomes[out->count++];
        o->job = cm->queue[cm->head++];
        if (denied_by) { /* reject: no slot, no rule consumed */
            o->denied_by = denied_by;
        } else { /* commit */
            cm->shape = shape;
            o->claimed = true;
            o->slot = slot;
            claimed++;
        }
    }
    out->next_us = next_us;
    out->queue_len = cm->tail - cm->head;
}
