/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "u64set.h"
#include "u64table.h"
#include "util.h"

/* 0 marks a free slot: the key 0 is kept aside. */
struct U64Set {
        size_t n;    /* keys, has_zero included */
        size_t mask; /* slots - 1, slots a power of two */
        bool has_zero;
        uint64_t slot[];
};

#define U64SET_MIN_SLOTS 8

static U64Set *set_new(size_t slots) {
        U64Set *s = calloc(1, sizeof *s + slots * sizeof s->slot[0]);

        if (s)
                s->mask = slots - 1;
        return s;
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
        if (u64table_needs_grow(s->n, s->mask)) {
                U64Set *g = set_new((s->mask + 1) * 2);
                if (!g)
                        return -ENOMEM;
                g->n = s->n;
                g->has_zero = s->has_zero;
                u64table_rehash(g->slot, g->mask, s->slot, s->mask, sizeof s->slot[0]);
                free(s);
                *sp = s = g;
        }
        s->slot[u64table_find(s->slot, sizeof s->slot[0], s->mask, key)] = key;
        s->n++;
        return 1;
}

bool u64set_contains(const U64Set *s, uint64_t key) {
        if (!s)
                return false;
        if (key == 0)
                return s->has_zero;
        return s->slot[u64table_find(s->slot, sizeof s->slot[0], s->mask, key)] == key;
}

bool u64set_remove(U64Set **sp, uint64_t key) {
        U64Set *s = *sp;

        if (!u64set_contains(s, key))
                return false;
        if (key == 0)
                s->has_zero = false;
        else
                u64table_delete(s->slot, sizeof s->slot[0], s->mask,
                                u64table_find(s->slot, sizeof s->slot[0], s->mask, key));
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
