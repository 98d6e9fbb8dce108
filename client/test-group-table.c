/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libfreezer handle's table of groups (group-table.c): lookups by object
 * and by Id, filling in, a path's group made again, removal without
 * tombstones (backward shift), the rebuild, and a long random run checked
 * against a plain array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group-table.h"

static int failures;

#define CHECK(cond, ...)                                                  \
        do {                                                              \
                if (!(cond)) {                                            \
                        failures++;                                       \
                        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
                        fprintf(stderr, __VA_ARGS__);                     \
                        fputc('\n', stderr);                              \
                }                                                         \
        } while (0)

static void test_basics(void) {
        group_table t = {};
        group_entry *e;

        CHECK(!group_table_get_object(&t, "/o/a"), "empty table finds an object");
        CHECK(!group_table_get_id(&t, 7), "empty table finds an id");
        group_table_remove_object(&t, "/o/a"); /* no-op */

        /* Known by object first (freezer_list()), its Id later (ListGroupIds). */
        e = group_table_put(&t, "/o/a", 0, NULL);
        CHECK(e && e->id == 0 && !e->path && e->state == FREEZER_STATE_UNKNOWN && !e->have_state, "new entry");
        e->state = FREEZER_STATE_FROZEN;
        e->have_state = true;
        CHECK(!group_table_get_id(&t, 7), "an id before it is known");
        e = group_table_put(&t, "/o/a", 7, "/a");
        CHECK(e && e->id == 7 && e->path && strcmp(e->path, "/a") == 0 && e->have_state, "filled in, state kept");
        CHECK(group_table_get_id(&t, 7) == e, "found by id");
        CHECK(group_table_get_object(&t, "/o/a") == e, "found by object");
        CHECK(group_table_size(&t) == 1, "size 1");

        /* The same path with another Id: the group was made again. */
        e = group_table_put(&t, "/o/a", 9, "/a");
        CHECK(e && e->id == 9 && !e->have_state, "a new group under the old path starts afresh");
        CHECK(group_table_get_object(&t, "/o/a") == e, "the path finds the new group");
        CHECK(group_table_get_id(&t, 7) && group_table_get_id(&t, 7)->removed, "the old id finds a removed entry");
        CHECK(group_table_size(&t) == 1, "size still 1");

        group_table_remove_object(&t, "/o/a");
        CHECK(!group_table_get_object(&t, "/o/a"), "removed: not found by object");
        CHECK(group_table_get_id(&t, 9) && group_table_get_id(&t, 9)->removed, "removed: id marked");
        CHECK(group_table_size(&t) == 0, "size 0");

        CHECK(!group_table_put(&t, NULL, 3, NULL), "NULL object");
        group_table_clear(&t);
        CHECK(t.n_entries == 0 && t.n_slots == 0 && !group_table_get_object(&t, "/o/a"), "cleared");
}

/* A reference model: object i has id ids[i] (0: no entry). */
#define N_OBJECTS 20000

static void test_random(void) {
        static uint64_t ids[N_OBJECTS];
        group_table t = {};
        uint64_t next_id = 1000;
        unsigned seed = 12345;
        size_t live = 0, max_entries = 0;
        char object[64], path[64];

        for (int step = 0; step < 400000; step++) {
                size_t i;
                int op;

                seed = seed * 1103515245u + 12345u;
                i = (seed >> 8) % N_OBJECTS;
                op = (int) ((seed >> 4) % 4);
                snprintf(object, sizeof object, "/org/freezerd/Freezer1/group/_2fs%zu", i);
                snprintf(path, sizeof path, "/s%zu", i);

                if (op <= 1) { /* add, or made again with a new id */
                        uint64_t id = (op == 0 && ids[i]) ? ids[i] : (next_id += 20);
                        group_entry *e = group_table_put(&t, object, id, path);
                        CHECK(e && e->id == id && strcmp(e->path, path) == 0, "put %s", object);
                        if (!ids[i])
                                live++;
                        ids[i] = id;
                } else if (op == 2) { /* removed */
                        group_table_remove_object(&t, object);
                        if (ids[i])
                                live--;
                        ids[i] = 0;
                } else { /* look up */
                        group_entry *e = group_table_get_object(&t, object);
                        if (ids[i]) {
                                CHECK(e && e->id == ids[i] && !e->removed, "get %s", object);
                                CHECK(group_table_get_id(&t, ids[i]) == e, "get id of %s", object);
                        } else
                                CHECK(!e, "%s found after removal", object);
                }
                if (t.n_entries > max_entries)
                        max_entries = t.n_entries;
                if (failures > 10)
                        break;
        }
        CHECK(group_table_size(&t) == live, "size %zu, expected %zu", group_table_size(&t), live);
        /* Removed entries stay bounded by the live ones (plus the rebuild's margin). */
        CHECK(max_entries <= 2 * N_OBJECTS + 1024 + 1, "%zu entries at most, for %d objects", max_entries, N_OBJECTS);
        CHECK(t.n_slots >= 2 * t.n_entries, "load factor: %zu slots for %zu entries", t.n_slots, t.n_entries);
        for (size_t i = 0; i < N_OBJECTS; i++) {
                snprintf(object, sizeof object, "/org/freezerd/Freezer1/group/_2fs%zu", i);
                group_entry *e = group_table_get_object(&t, object);
                CHECK(ids[i] ? (e && e->id == ids[i]) : !e, "final state of %s", object);
        }
        group_table_clear(&t);
}

int main(void) {
        test_basics();
        test_random();
        if (failures) {
                fprintf(stderr, "%d checks failed\n", failures);
                return 1;
        }
        printf("test-group-table: all checks passed\n");
        return 0;
}
