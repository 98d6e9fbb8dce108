/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the batch planner (daemon/batch.c): no bus, no cgroups. */
#include <stdio.h>

#include "batch.h"
#include "tree.h"
#include "util.h"
#include "test-util.h"

static Group *add(Tree *t, const char *parent, const char *name) {
        Group *g = NULL;
        int r = tree_add(t, tree_get(t, parent), name, true, false, false, false, &g);
        if (r < 0) {
                fprintf(stderr, "tree_add(%s, %s) failed: %d\n", parent, name, r);
                exit(1);
        }
        return g;
}

/* A{B{D{H},E,F},C{G}}: the kernel selftest's tree. */
static Tree *build(void) {
        Tree *t = tree_new();
        add(t, "/", "A");
        add(t, "/A", "B");
        add(t, "/A", "C");
        add(t, "/A/B", "D");
        add(t, "/A/B", "E");
        add(t, "/A/B", "F");
        add(t, "/A/C", "G");
        add(t, "/A/B/D", "H");
        return t;
}

static void test_order_names(void) {
        CHECK(batch_order_from_string("") == BATCH_ORDER_AUTO);
        CHECK(batch_order_from_string("auto") == BATCH_ORDER_AUTO);
        CHECK(batch_order_from_string("top-down") == BATCH_ORDER_TOP_DOWN);
        CHECK(batch_order_from_string("bottom-up") == BATCH_ORDER_BOTTOM_UP);
        CHECK(batch_order_from_string("sideways") == _BATCH_ORDER_INVALID);
        CHECK(streq(batch_order_to_string(BATCH_ORDER_BOTTOM_UP), "bottom-up"));
}

static void test_plan(void) {
        Tree *t = build();
        BatchItem items[] = {
                { tree_get(t, "/A/B/D/H"), true, 0 }, { tree_get(t, "/A/B"), false, 1 },
                { tree_get(t, "/A"), true, 2 },       { tree_get(t, "/A/C/G"), false, 3 },
                { tree_get(t, "/A/B/D"), true, 4 },   { tree_get(t, "/A/B"), true, 5 }, /* last one wins */
                { tree_get(t, "/A/C"), false, 6 },
        };
        BatchItem work[ELEMENTSOF(items)];
        size_t n;

        /* auto: freezes shallowest first, then thaws deepest first. */
        memcpy(work, items, sizeof items);
        CHECK(batch_plan(work, ELEMENTSOF(work), BATCH_ORDER_AUTO, &n) == 0);
        CHECK(n == 6);
        const char *want_auto[] = { "/A", "/A/B", "/A/B/D", "/A/B/D/H", "/A/C/G", "/A/C" };
        for (size_t i = 0; i < n && i < ELEMENTSOF(want_auto); i++)
                CHECK(streq(work[i].group->path, want_auto[i]));
        CHECK(work[1].freeze); /* /A/B: the later request (freeze) won */

        memcpy(work, items, sizeof items);
        CHECK(batch_plan(work, ELEMENTSOF(work), BATCH_ORDER_TOP_DOWN, &n) == 0);
        for (size_t i = 1; i < n; i++)
                CHECK(work[i - 1].group->depth <= work[i].group->depth);

        memcpy(work, items, sizeof items);
        CHECK(batch_plan(work, ELEMENTSOF(work), BATCH_ORDER_BOTTOM_UP, &n) == 0);
        for (size_t i = 1; i < n; i++)
                CHECK(work[i - 1].group->depth >= work[i].group->depth);

        CHECK(batch_plan(work, 0, BATCH_ORDER_AUTO, &n) == 0 && n == 0);
        CHECK(batch_plan(work, 1, (BatchOrder) 17, &n) == -EINVAL);
        tree_free(t, NULL, NULL);
}

/* Simulate the kernel over the model: count how often each group's effective
 * state changes while a plan is applied write by write. */
static void test_auto_changes_each_group_once(void) {
        /* Every combination of start and target flags on the 8 groups is too many;
         * walk a fixed pseudo-random sample. */
        unsigned seed = 12345;
        for (int round = 0; round < 2000; round++) {
                Tree *t = build();
                Group *gs[8];
                const char *paths[] = { "/A", "/A/B", "/A/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/C/G", "/A/B/D/H" };
                BatchItem items[8];
                unsigned changes[8] = {}, n_items = 0;
                bool before[8];
                size_t n;

                for (int i = 0; i < 8; i++) {
                        gs[i] = tree_get(t, paths[i]);
                        seed = seed * 1103515245 + 12345;
                        tree_set_freeze(t, gs[i], (seed >> 16) & 1);
                }
                for (int i = 0; i < 8; i++) {
                        seed = seed * 1103515245 + 12345;
                        if ((seed >> 16) % 3 == 0)
                                continue;
                        items[n_items] = (BatchItem) { gs[i], (seed >> 20) & 1, n_items };
                        n_items++;
                }
                for (int i = 0; i < 8; i++)
                        before[i] = gs[i]->e_freeze;
                CHECK(batch_plan(items, n_items, BATCH_ORDER_AUTO, &n) == 0);
                for (size_t k = 0; k < n; k++) {
                        bool prev[8];
                        for (int i = 0; i < 8; i++)
                                prev[i] = gs[i]->e_freeze;
                        tree_set_freeze(t, items[k].group, items[k].freeze);
                        for (int i = 0; i < 8; i++)
                                changes[i] += prev[i] != gs[i]->e_freeze;
                }
                for (int i = 0; i < 8; i++) {
                        CHECK(changes[i] <= 1);
                        /* A group that ends frozen was never thawed on the way. */
                        if (gs[i]->e_freeze && before[i])
                                CHECK(changes[i] == 0);
                }
                tree_free(t, NULL, NULL);
        }
}

static void test_cover_except(void) {
        Tree *t = build();
        Group **cover = NULL;
        size_t n;

        /* Nothing excluded: the top itself. */
        CHECK(batch_cover_except(tree_get(t, "/A"), NULL, 0, &cover, &n) == 0);
        CHECK(n == 1 && cover[0] == tree_get(t, "/A"));
        free(cover);

        /* Excluding /A/B/D: its siblings E, F and its parent's sibling C. */
        Group *x[] = { tree_get(t, "/A/B/D") };
        CHECK(batch_cover_except(tree_get(t, "/A"), x, 1, &cover, &n) == 0);
        CHECK(n == 3);
        bool seen_e = false, seen_f = false, seen_c = false;
        for (size_t i = 0; i < n; i++) {
                seen_e |= cover[i] == tree_get(t, "/A/B/E");
                seen_f |= cover[i] == tree_get(t, "/A/B/F");
                seen_c |= cover[i] == tree_get(t, "/A/C");
        }
        CHECK(seen_e && seen_f && seen_c);
        free(cover);

        /* Two exclusions in different branches. */
        Group *y[] = { tree_get(t, "/A/B/D/H"), tree_get(t, "/A/C/G") };
        CHECK(batch_cover_except(tree_get(t, "/A"), y, 2, &cover, &n) == 0);
        CHECK(n == 2); /* E and F; D has only H, C has only G */
        free(cover);

        /* The tree root is never in a cover: it has no cgroup.freeze. */
        CHECK(batch_cover_except(tree_root(t), NULL, 0, &cover, &n) == 0);
        CHECK(n == 1 && cover[0] == tree_get(t, "/A"));
        free(cover);

        /* An untracked group (an ancestor kept for its flag) is descended into,
         * never frozen whole: it has children freezerd does not follow. */
        tree_set_tracked(t, tree_get(t, "/A"), false);
        CHECK(batch_cover_except(tree_root(t), NULL, 0, &cover, &n) == 0);
        CHECK(n == 2);
        for (size_t i = 0; i < n; i++)
                CHECK(cover[i] == tree_get(t, "/A/B") || cover[i] == tree_get(t, "/A/C"));
        CHECK(n == 2 && cover[0] != cover[1]);
        free(cover);
        tree_set_tracked(t, tree_get(t, "/A"), true);

        /* Exclusions must lie below the top. */
        Group *z[] = { tree_get(t, "/A") };
        CHECK(batch_cover_except(tree_get(t, "/A"), z, 1, &cover, &n) == -EINVAL);
        tree_free(t, NULL, NULL);
}

int main(void) {
        test_order_names();
        test_plan();
        test_auto_changes_each_group_once();
        test_cover_except();
        return test_summary("test-batch");
}
