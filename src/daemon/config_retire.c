/* config_retire.c - see config_retire.h. */
#include "daemon/config_retire.h"

size_t sl_configs_retirable(const unsigned *kept, size_t n, const unsigned *in_use, size_t workers)
{
    if (workers == 0)
        return 0;
    unsigned oldest = in_use[0];
    for (size_t i = 1; i < workers; i++)
        if (in_use[i] < oldest)
            oldest = in_use[i];
    size_t count = 0;
    while (count < n && kept[count] < oldest)
        count++;
    return count;
}
