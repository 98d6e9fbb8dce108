/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <string.h>

#include "u64table.h"

static void *slot_at(void *slots, size_t slot_size, size_t i) {
        return (char *) slots + i * slot_size;
}

void u64table_rehash(void *to, size_t to_mask, const void *from, size_t from_mask, size_t slot_size) {
        for (size_t i = 0; i <= from_mask; i++) {
                uint64_t key = u64table_key(from, slot_size, i);
                if (key != 0)
                        memcpy(slot_at(to, slot_size, u64table_find(to, slot_size, to_mask, key)),
                               (const char *) from + i * slot_size, slot_size);
        }
}

void u64table_delete(void *slots, size_t slot_size, size_t mask, size_t i) {
        memset(slot_at(slots, slot_size, i), 0, slot_size);
        for (size_t j = (i + 1) & mask; u64table_key(slots, slot_size, j) != 0; j = (j + 1) & mask) {
                size_t home = u64table_home(u64table_key(slots, slot_size, j), mask);
                /* Move j back to i unless its home lies cyclically in (i, j]. */
                bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (!in_range) {
                        memcpy(slot_at(slots, slot_size, i), slot_at(slots, slot_size, j), slot_size);
                        memset(slot_at(slots, slot_size, j), 0, slot_size);
                        i = j;
                }
        }
}
