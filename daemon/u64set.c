/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "u64set.h"
#include "util.h"

/* 0 marks a free slot: the key 0 is kept aside. */
struct U64Set {
        size_t n;    /* keys, has_zero included */
        size_t mask; /* slots - 1, slots a power of two */
        bool has_zero;
        uint64_t slot[];
};

#define U64SET_MIN_SLOTS 8

static size_t home_of(const U64Set *s, uint64_t key) {
        /* Fibonacci hashing, as wdmap.c: spreads keys that differ in few bits. */
        return (size_t) ((key * UINT64_C(11400714819323198485)) >> 32) & s->mask;
}

static U64Set *set_new(size_t slots) {
        U64Set *s = calloc(1, sizeof *s + slots * sizeof s->slot[0]);

        if (s)
                s->mask = slots - 1;
        return s;
}

/* key (not 0, not in s) into a slot: s has room. */
static void insert(U64Set *s, uint64_t key) {
        size_t i = home_of(s, key);

        while (s->slot[i] != 0)
                i = (i + 1) & s->mask;
        s->slot[i] = key;
}

int u64set_add(U64Set **sp, uint64_t key) {
        U64Set *s = *sp;

        if (u64set_contains(s, key))
                return 0;
        if (!s) {
                s = set_new(U64SET_MIN_SLOTS);
                if (!s)
                        return -ENOMEM;
                *sp = s;
        }
        if (key == 0) {
                s->has_zero = true;
                s->n++;
                return 1;
        }
        /* At most three quarters full: probe chains stay short. */
        if ((s->n + 1) * 4 > (s->mask + 1) * 3) {
                U64Set *g = set_new((s->mask + 1) * 2);
                if (!g)
                        return -ENOMEM;
                g->n = s->n;
                g->has_zero = s->has_zero;
                for (size_t i = 0; i <= s->mask; i++)
                        if (s->slot[i] != 0)
                                insert(g, s->slot[i]);
                free(s);
                *sp = s = g;
        }
        insert(s, key);
        s->n++;
        return 1;
}

bool u64set_contains(const U64Set *s, uint64_t key) {
        if (!s)
                return false;
        if (key == 0)
                return s->has_zero;
        for (size_t i = home_of(s, key);; i = (i + 1) & s->mask) {
                if (s->slot[i] == key)
                        return true;
                if (s->slot[i] == 0)
                        return false;
        }
}

bool u64set_remove(U64Set **sp, uint64_t key) {
        U64Set *s = *sp;
        size_t i;

        if (!u64set_contains(s, key))
                return false;
        if (key == 0)
                s->has_zero = false;
        else {
                for (i = home_of(s, key); s->slot[i] != key; i = (i + 1) & s->mask)
                        ;
                /* Backward-shift deletion, as wdmap_remove(): each key of the
                 * chain after the hole whose home does not lie after the hole
                 * moves into it, which moves the hole, so that no chain breaks. */
                s->slot[i] = 0;
                for (size_t j = (i + 1) & s->mask; s->slot[j] != 0; j = (j + 1) & s->mask) {
                        size_t home = home_of(s, s->slot[j]);
                        bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                        if (!in_range) {
                                s->slot[i] = s->slot[j];
                                s->slot[j] = 0;
                                i = j;
                        }
                }
        }
        if (--s->n == 0)
                *sp = u64set_free(s);
        return true;
}

size_t u64set_size(const U64Set *s) {
        return s ? s->n : 0;
}

U64Set *u64set_free(U64Set *s) {
        free(s);
        return NULL;
}
