/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The open addressing under u64set.c and wdmap.c: a power-of-two array of
 * slots, each a struct whose first member is its uint64_t key, 0 in a free slot
 * (the key 0 cannot be stored: callers keep it aside or refuse it); linear
 * probing, at most three quarters full so that probe chains stay short, and
 * backward-shift deletion, so no tombstones.  The callers own the array and
 * count the keys; these functions take the array, the size of a slot and the
 * mask (slots - 1).  The lookup is inline: wdmap_get() runs per inotify event,
 * and with a constant slot size it compiles to the loop it was. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline size_t u64table_home(uint64_t key, size_t mask) {
        /* Fibonacci hashing spreads keys that differ in few bits, such as the
         * consecutive watch descriptors the kernel hands out. */
        return (size_t) ((key * UINT64_C(11400714819323198485)) >> 32) & mask;
}

static inline uint64_t u64table_key(const void *slots, size_t slot_size, size_t i) {
        /* The key is the slot's first member. */
        return *(const uint64_t *) ((const char *) slots + i * slot_size);
}

/* The index of key's slot (key not 0) or, where key is absent, of the free
 * slot that ends its chain, where it would go. */
static inline size_t u64table_find(const void *slots, size_t slot_size, size_t mask, uint64_t key) {
        for (size_t i = u64table_home(key, mask);; i = (i + 1) & mask) {
                uint64_t k = u64table_key(slots, slot_size, i);
                if (k == key || k == 0)
                        return i;
        }
}

/* Whether a table of mask + 1 slots holding n keys must grow before it takes
 * one more. */
static inline bool u64table_needs_grow(size_t n, size_t mask) {
        return (n + 1) * 4 > (mask + 1) * 3;
}

/* Every used slot of from (from_mask + 1 slots) into to (to_mask + 1 slots, all
 * free, room for them all). */
void u64table_rehash(void *to, size_t to_mask, const void *from, size_t from_mask, size_t slot_size);

/* Frees slot i, used, and moves back the keys after it in the chain whose
 * home does not lie after the hole, so that no chain breaks. */
void u64table_delete(void *slots, size_t slot_size, size_t mask, size_t i);
