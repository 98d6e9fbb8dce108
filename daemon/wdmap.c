/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "wdmap.h"
#include "util.h"

struct WdMap {
        WdEntry *slots;
        size_t n_slots; /* power of two */
        size_t n_used;
};

static size_t slot_of(const WdMap *m, int wd) {
        /* Fibonacci hashing spreads the consecutive wds the kernel hands out. */
        return (size_t) (((uint64_t) (unsigned) wd * UINT64_C(11400714819323198485)) >> 32) & (m->n_slots - 1);
}

WdMap *wdmap_new(void) {
        WdMap *m = calloc(1, sizeof *m);
        if (!m)
                return NULL;
        m->n_slots = 64;
        m->slots = calloc(m->n_slots, sizeof *m->slots);
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

static void insert_slot(WdMap *m, WdEntry e) {
        size_t i = slot_of(m, e.wd);
        while (m->slots[i].wd > 0 && m->slots[i].wd != e.wd)
                i = (i + 1) & (m->n_slots - 1);
        if (m->slots[i].wd <= 0)
                m->n_used++;
        m->slots[i] = e;
}

static int grow(WdMap *m) {
        WdEntry *old = m->slots;
        size_t n_old = m->n_slots;
        WdEntry *slots = calloc(n_old * 2, sizeof *slots);
        if (!slots)
                return -ENOMEM;
        m->slots = slots;
        m->n_slots = n_old * 2;
        m->n_used = 0;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].wd > 0)
                        insert_slot(m, old[i]);
        free(old);
        return 0;
}

int wdmap_put(WdMap *m, int wd, void *ptr, unsigned kind) {
        if (wd <= 0)
                return -EINVAL;
        if ((m->n_used + 1) * 4 > m->n_slots * 3) {
                int r = grow(m);
                if (r < 0)
                        return r;
        }
        insert_slot(m, (WdEntry) { .wd = wd, .kind = kind, .ptr = ptr });
        return 0;
}

const WdEntry *wdmap_get(const WdMap *m, int wd) {
        if (wd <= 0)
                return NULL;
        for (size_t i = slot_of(m, wd);; i = (i + 1) & (m->n_slots - 1)) {
                if (m->slots[i].wd == wd)
                        return &m->slots[i];
                if (m->slots[i].wd <= 0)
                        return NULL;
        }
}

int wdmap_remove(WdMap *m, int wd) {
        size_t i, j;

        if (wd <= 0)
                return 0;
        for (i = slot_of(m, wd);; i = (i + 1) & (m->n_slots - 1)) {
                if (m->slots[i].wd == wd)
                        break;
                if (m->slots[i].wd <= 0)
                        return 0;
        }

        /* Backward-shift deletion keeps every probe chain intact without tombstones. */
        m->slots[i] = (WdEntry) {};
        m->n_used--;
        for (j = (i + 1) & (m->n_slots - 1); m->slots[j].wd > 0; j = (j + 1) & (m->n_slots - 1)) {
                size_t home = slot_of(m, m->slots[j].wd);
                /* Move j back to i unless its home lies cyclically in (i, j]. */
                bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (!in_range) {
                        m->slots[i] = m->slots[j];
                        m->slots[j] = (WdEntry) {};
                        i = j;
                }
        }
        return 1;
}

size_t wdmap_size(const WdMap *m) {
        return m->n_used;
}
