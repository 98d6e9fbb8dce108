/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "wdmap.h"
#include "u64table.h"
#include "util.h"

struct WdMap {
        WdEntry *slots;
        size_t mask; /* slots - 1, slots a power of two */
        size_t n_used;
};

#define WDMAP_MIN_SLOTS 64

/* wd (> 0)'s slot, or the free slot where it would go. */
static size_t find(const WdMap *m, int wd) {
        return u64table_find(m->slots, sizeof m->slots[0], m->mask, (uint64_t) wd);
}

WdMap *wdmap_new(void) {
        WdMap *m = calloc(1, sizeof *m);
        if (!m)
                return NULL;
        m->mask = WDMAP_MIN_SLOTS - 1;
        m->slots = calloc(WDMAP_MIN_SLOTS, sizeof *m->slots);
        if (!m->slots) {
                free(m);
                return NULL;
        }
        return m;
}

void wdmap_free(WdMap *m) {
        if (!m)
                return;
        free(m->slots);
        free(m);
}

static int grow(WdMap *m) {
        size_t mask = (m->mask + 1) * 2 - 1;
        WdEntry *slots = calloc(mask + 1, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        u64table_rehash(slots, mask, m->slots, m->mask, sizeof *slots);
        free(m->slots);
        m->slots = slots;
        m->mask = mask;
        return 0;
}

int wdmap_put(WdMap *m, int wd, void *ptr, unsigned kind) {
        size_t i;

        if (wd <= 0)
                return -EINVAL;
        i = find(m, wd);
        if (m->slots[i].wd == 0) {
                if (u64table_needs_grow(m->n_used, m->mask)) {
                        int r = grow(m);
                        if (r < 0)
                                return r;
                        i = find(m, wd);
                }
                m->n_used++;
        }
        m->slots[i] = (WdEntry) { .wd = (uint64_t) wd, .kind = kind, .ptr = ptr };
        return 0;
}

const WdEntry *wdmap_get(const WdMap *m, int wd) {
        size_t i;

        if (wd <= 0)
                return NULL;
        i = find(m, wd);
        return m->slots[i].wd != 0 ? &m->slots[i] : NULL;
}

int wdmap_remove(WdMap *m, int wd) {
        size_t i;

        if (wd <= 0)
                return 0;
        i = find(m, wd);
        if (m->slots[i].wd == 0)
                return 0;
        u64table_delete(m->slots, sizeof m->slots[0], m->mask, i);
        m->n_used--;
        return 1;
}

size_t wdmap_size(const WdMap *m) {
        return m->n_used;
}
