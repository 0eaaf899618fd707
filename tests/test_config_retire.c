/* test_config_retire.c - which configurations replaced by SIGHUP are
 * freed (src/daemon/config_retire.c): those no worker still uses. */
#include <criterion/criterion.h>

#include "daemon/config_retire.h"

Test(config_retire, those_older_than_every_workers_oldest_go)
{
    unsigned kept[] = {1, 2, 3, 4};
    unsigned in_use[] = {4, 3};
    cr_assert_eq(sl_configs_retirable(kept, 4, in_use, 2), 2, "1 and 2");
}

Test(config_retire, a_worker_that_has_not_taken_a_reload_keeps_what_it_uses)
{
    unsigned kept[] = {1, 2, 3};
    unsigned in_use[] = {3, 0, 3}; /* the second still runs the start's */
    cr_assert_eq(sl_configs_retirable(kept, 3, in_use, 3), 0);
}

Test(config_retire, the_running_one_stays_once_every_worker_took_it)
{
    unsigned kept[] = {5, 6, 7};
    unsigned in_use[] = {7, 7};
    cr_assert_eq(sl_configs_retirable(kept, 3, in_use, 2), 2, "7 stays");
}

Test(config_retire, many_reloads_leave_one)
{
    unsigned kept[1000];
    for (unsigned i = 0; i < 1000; i++)
        kept[i] = i + 1;
    unsigned in_use[] = {1000};
    cr_assert_eq(sl_configs_retirable(kept, 1000, in_use, 1), 999);
}

Test(config_retire, nothing_without_workers_or_configurations)
{
    unsigned kept[] = {1};
    unsigned in_use[] = {5};
    cr_assert_eq(sl_configs_retirable(kept, 1, in_use, 0), 0);
    cr_assert_eq(sl_configs_retirable(kept, 0, in_use, 1), 0);
}
