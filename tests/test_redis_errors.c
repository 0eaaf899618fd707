/* test_redis_errors.c - which Redis error replies are a passing state of
 * the server (src/redis/redis_errors.c). */
#include <criterion/criterion.h>

#include "redis/redis_errors.h"

Test(redis_errors, the_six_transient_codes_as_redis_sends_them)
{
    cr_assert(sl_redis_error_transient("LOADING Redis is loading the dataset in memory"));
    cr_assert(sl_redis_error_transient(
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."));
    cr_assert(sl_redis_error_transient("TRYAGAIN Multiple keys request during rehashing of slot"));
    cr_assert(sl_redis_error_transient("OOM command not allowed when used memory > 'maxmemory'."));
    cr_assert(sl_redis_error_transient(
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."));
    cr_assert(sl_redis_error_transient("READONLY You can't write against a read only replica."));
}

Test(redis_errors, a_bare_code_is_transient_too)
{
    cr_assert(sl_redis_error_transient("BUSY"));
    cr_assert(sl_redis_error_transient("LOADING"));
}

Test(redis_errors, faults_are_not_transient)
{
    cr_assert_not(sl_redis_error_transient("ERR unknown command 'FOO'"));
    cr_assert_not(sl_redis_error_transient("NOSCRIPT No matching script. Please use EVAL."));
    cr_assert_not(sl_redis_error_transient("WRONGTYPE Operation against a key holding the wrong kind of value"));
    cr_assert_not(sl_redis_error_transient("NOAUTH Authentication required."));
    cr_assert_not(sl_redis_error_transient("ERR Error running script: @user_script:1: OOM in script"));
}

Test(redis_errors, the_code_must_be_the_whole_first_word)
{
    cr_assert_not(sl_redis_error_transient("BUSYKEY Target key name already exists."));
    cr_assert_not(sl_redis_error_transient("BUSYGROUP Consumer Group name already exists"));
    cr_assert_not(sl_redis_error_transient("OOMPH"));
    cr_assert_not(sl_redis_error_transient("busy lowercase is not a code"));
    cr_assert_not(sl_redis_error_transient(" BUSY"));
}

Test(redis_errors, nothing_is_not_transient)
{
    cr_assert_not(sl_redis_error_transient(NULL));
    cr_assert_not(sl_redis_error_transient(""));
}

Test(redis_errors, the_backoff_doubles_to_its_cap)
{
    cr_assert_eq(sl_redis_transient_backoff_us(0), SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_eq(sl_redis_transient_backoff_us(1), SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_eq(sl_redis_transient_backoff_us(2), 2 * SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_eq(sl_redis_transient_backoff_us(3), 4 * SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_eq(sl_redis_transient_backoff_us(5), 16 * SL_REDIS_TRANSIENT_MIN_US);
    cr_assert_eq(sl_redis_transient_backoff_us(6), SL_REDIS_TRANSIENT_MAX_US);
    cr_assert_eq(sl_redis_transient_backoff_us(1000000), SL_REDIS_TRANSIENT_MAX_US);
}
