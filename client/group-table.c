/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "group-table.h"

#ifdef FREEZER_TEST_HOOKS
size_t freezer_test_group_table_max = 1U << 22;
#endif

/* Rebuild once this many entries are removed and they outnumber the live ones. */
#define REBUILD_MIN 1024

static size_t hash_id(uint64_t id) {
        /* Ids are inode numbers, about 20 apart: Fibonacci hashing spreads them. */
        return (size_t) ((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}

static size_t hash_string(const char *s) {
        /* FNV-1a: object paths of one tree share long prefixes. */
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++)
                h = (h ^ (unsigned char) *s) * UINT64_C(0x100000001b3);
        return (size_t) (h ^ h >> 29);
}

/* The slot of by_id that holds id, or the empty one where it would go. */
static size_t id_slot(const group_table *t, uint64_t id) {
        size_t mask = t->n_slots - 1, i = hash_id(id) & mask;

        while (t->by_id[i] != 0 && t->entries[t->by_id[i] - 1].id != id)
                i = (i + 1) & mask;
        return i;
}

static size_t object_slot_hashed(const group_table *t, const char *object, size_t hash) {
        size_t mask = t->n_slots - 1, i = hash & mask;

        while (t->by_object[i] != 0 && !streq(t->entries[t->by_object[i] - 1].object, object))
                i = (i + 1) & mask;
        return i;
}

static size_t object_slot(const group_table *t, const char *object) {
        return object_slot_hashed(t, object, hash_string(object));
}

static void entry_free(group_entry *e) {
        free(e->object);
        free(e->path);
}

/* Both indexes anew with n_slots slots, from the entries: every Id (removed
 * entries too, until a rebuild drops them), and the live entries' objects.
 * With the current number of slots it reuses the arrays and cannot fail. */
static int reindex(group_table *t, size_t n_slots) {
        if (n_slots == t->n_slots) {
                memset(t->by_id, 0, n_slots * sizeof(uint32_t));
                memset(t->by_object, 0, n_slots * sizeof(uint32_t));
        } else {
                uint32_t *by_id = calloc(n_slots, sizeof(uint32_t)), *by_object = calloc(n_slots, sizeof(uint32_t));

                if (!by_id || !by_object) {
                        free(by_id);
                        free(by_object);
                        return -ENOMEM;
                }
                free(t->by_id);
                free(t->by_object);
                t->by_id = by_id;
                t->by_object = by_object;
                t->n_slots = n_slots;
        }

        for (size_t k = 0; k < t->n_entries; k++) {
                const group_entry *e = &t->entries[k];

                if (e->id != 0)
                        t->by_id[id_slot(t, e->id)] = (uint32_t) (k + 1);
                if (!e->removed)
                        t->by_object[object_slot_hashed(t, e->object, e->object_hash)] = (uint32_t) (k + 1);
        }
        return 0;
}

/* The live entries only, packed, and indexed again (in fewer slots if there
 * is the memory, else in the same ones). */
static void rebuild(group_table *t) {
        size_t n = 0, n_slots = 16;

        for (size_t k = 0; k < t->n_entries; k++) {
                if (t->entries[k].removed)
                        entry_free(&t->entries[k]);
                else
                        t->entries[n++] = t->entries[k];
        }
        t->n_entries = n;
        t->n_removed = 0;
        while (n_slots < 2 * n)
                n_slots *= 2;
        if (reindex(t, n_slots) < 0)
                (void) reindex(t, t->n_slots);
}

/* Empties slot i of by_object, moving later entries of its probe chain back
 * (linear probing's deletion: no tombstones). */
static void object_slot_delete(group_table *t, size_t i) {
        size_t mask = t->n_slots - 1;

        for (size_t j = (i + 1) & mask; t->by_object[j] != 0; j = (j + 1) & mask) {
                size_t home = t->entries[t->by_object[j] - 1].object_hash & mask;

                /* The entry at j may move to i unless its home lies
                 * cyclically in (i, j]. */
                if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
                        t->by_object[i] = t->by_object[j];
                        i = j;
                }
        }
        t->by_object[i] = 0;
}

group_entry *group_table_get_object(group_table *t, const char *object) {
        uint32_t k;

        if (t->n_slots == 0 || !object)
                return NULL;
        k = t->by_object[object_slot(t, object)];
        return k ? &t->entries[k - 1] : NULL;
}

group_entry *group_table_get_id(group_table *t, uint64_t id) {
        uint32_t k;

        if (t->n_slots == 0 || id == 0)
                return NULL;
        k = t->by_id[id_slot(t, id)];
        return k ? &t->entries[k - 1] : NULL;
}

static int fill_in(group_table *t, group_entry *e, uint64_t id, const char *path) {
        if (path && !e->path) {
                e->path = strdup(path);
                if (!e->path)
                        return -ENOMEM;
        }
        if (id != 0 && e->id == 0) {
                e->id = id;
                t->by_id[id_slot(t, id)] = (uint32_t) (e - t->entries + 1);
        }
        return 0;
}

group_entry *group_table_put(group_table *t, const char *object, uint64_t id, const char *path) {
        group_entry *e;
        size_t k;

        if (!object)
                return NULL;

        e = group_table_get_object(t, object);
        if (e && (id == 0 || e->id == 0 || e->id == id))
                return fill_in(t, e, id, path) < 0 ? NULL : e;
        if (e) {
                /* The path's earlier group (another Id): gone, though its
                 * InterfacesRemoved has not come (or was lost). */
                e->removed = true;
                t->n_removed++;
                object_slot_delete(t, object_slot(t, object));
        }

        if (t->n_entries >= GROUP_TABLE_MAX)
                return NULL;
        if (GROW_ARRAY(t->entries, t->n_allocated, t->n_entries + 1, 16) < 0)
                return NULL;
        if (2 * (t->n_entries + 1) > t->n_slots && reindex(t, t->n_slots > 0 ? 2 * t->n_slots : 16) < 0)
                return NULL;

        k = t->n_entries;
        t->entries[k] = (group_entry) {
                .object = strdup(object),
                .object_hash = hash_string(object),
                .state = FREEZER_STATE_UNKNOWN,
        };
        e = &t->entries[k];
        if (!e->object)
                return NULL;
        t->n_entries++;
        t->by_object[object_slot_hashed(t, object, e->object_hash)] = (uint32_t) (k + 1);
        if (fill_in(t, e, id, path) < 0)
                return NULL; /* the entry stays, without its path */
        return e;
}

void group_table_remove_object(group_table *t, const char *object) {
        size_t i;

        if (t->n_slots == 0 || !object)
                return;
        i = object_slot(t, object);
        if (t->by_object[i] == 0)
                return;
        t->entries[t->by_object[i] - 1].removed = true;
        t->n_removed++;
        object_slot_delete(t, i);
        if (t->n_removed >= REBUILD_MIN && t->n_removed > t->n_entries - t->n_removed)
                rebuild(t);
}

void group_table_clear(group_table *t) {
        for (size_t k = 0; k < t->n_entries; k++)
                entry_free(&t->entries[k]);
        free(t->entries);
        free(t->by_id);
        free(t->by_object);
        *t = (group_table) {};
}

size_t group_table_size(const group_table *t) {
        return t->n_entries - t->n_removed;
}
