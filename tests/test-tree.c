/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests for the in-memory cgroup model (daemon/tree.c). */

#include <inttypes.h>
#include <time.h>

#include "tree.h"
#include "util.h"

static unsigned n_checks;
static const char *check_context = "";

#define CHECK_MSG(expr, fmt, ...)                                                             \
        do {                                                                                  \
                n_checks++;                                                                   \
                if (!(expr)) {                                                                \
                        fprintf(stderr, "%s:%d: %s: check failed: %s" fmt "%s%s\n", __FILE__, \
                                __LINE__, __func__, #expr, __VA_ARGS__,                       \
                                check_context[0] ? " | " : "", check_context);                \
                        exit(EXIT_FAILURE);                                                   \
                }                                                                             \
        } while (0)

#define CHECK(expr) CHECK_MSG(expr, "%s", "")

#define CHECK_EQ(a, b)                                                                             \
        do {                                                                                       \
                long long _a_ = (long long) (a), _b_ = (long long) (b);                            \
                CHECK_MSG(_a_ == _b_, " (%s = %lld, %s = %lld)", #a, _a_, #b, _b_);                \
        } while (0)

#define CHECK_STREQ(a, b)                                                                          \
        do {                                                                                       \
                const char *_a_ = (a), *_b_ = (b);                                                 \
                CHECK_MSG(streq_ptr(_a_, _b_), " (\"%s\" vs \"%s\")", _a_ ? _a_ : "(null)",         \
                          _b_ ? _b_ : "(null)");                                                   \
        } while (0)

static double now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* ---- helpers independent of the code under test ---- */

/* Adds a group at a full path whose parent exists. */
static Group *add_path(Tree *t, const char *path, bool tracked, bool freeze, bool frozen) {
        char parent_path[256];
        const char *slash = strrchr(path, '/');
        Group *parent, *g = NULL;
        int r;

        CHECK(slash);
        if (slash == path)
                strcpy(parent_path, "/");
        else {
                CHECK((size_t) (slash - path) < sizeof parent_path);
                memcpy(parent_path, path, slash - path);
                parent_path[slash - path] = 0;
        }

        parent = tree_get(t, parent_path);
        CHECK_MSG(parent, " (parent of %s)", path);
        r = tree_add(t, parent, slash + 1, tracked, freeze, frozen, false, &g);
        CHECK_MSG(r == 0, " (adding %s: %d)", path, r);
        CHECK(g);
        CHECK_STREQ(g->path, path);
        return g;
}

static Group *get(Tree *t, const char *path) {
        Group *g = tree_get(t, path);

        CHECK_MSG(g, " (%s)", path);
        return g;
}

/* Recursive pre-order into a growable array, following children/next only. */
typedef struct GroupArray {
        Group **v;
        size_t n, allocated;
} GroupArray;

static void array_push(GroupArray *a, Group *g) {
        if (a->n == a->allocated) {
                a->allocated = a->allocated ? a->allocated * 2 : 64;
                a->v = realloc(a->v, a->allocated * sizeof(Group *));
                CHECK(a->v);
        }
        a->v[a->n++] = g;
}

static void collect_preorder(Group *g, GroupArray *a) {
        /* Explicit stack rather than recursion: the chain tests go deep. */
        GroupArray stack = {};

        array_push(&stack, g);
        while (stack.n > 0) {
                Group *x = stack.v[--stack.n];
                size_t first;

                array_push(a, x);

                /* Push children in reverse so the first child pops first. */
                first = stack.n;
                for (Group *c = x->children; c; c = c->next)
                        array_push(&stack, c);
                for (size_t i = first, j = stack.n; i + 1 < j; i++, j--) {
                        Group *tmp = stack.v[i];
                        stack.v[i] = stack.v[j - 1];
                        stack.v[j - 1] = tmp;
                }
        }
        free(stack.v);
}

/* Recounts descendants from scratch and compares with the kept counts. */
static void verify_counts(Group *g, unsigned *ret_n, unsigned *ret_frozen) {
        unsigned n = 0, f = 0;

        for (Group *c = g->children; c; c = c->next) {
                unsigned cn, cf;

                verify_counts(c, &cn, &cf);
                n += 1 + cn;
                f += c->frozen + cf;
        }

        CHECK_MSG(g->n_descendants == n, " (%s: %u, counted %u)", g->path, g->n_descendants, n);
        CHECK_MSG(g->n_frozen_descendants == f, " (%s: %u, counted %u)", g->path, g->n_frozen_descendants, f);
        *ret_n = n;
        *ret_frozen = f;
}

/* Checks every invariant of the model against brute force. */
static void verify_tree(Tree *t) {
        GroupArray a = {};
        unsigned n_tracked = 0, n, n_frozen;
        Group *root = tree_root(t);

        CHECK(root);
        CHECK(!root->parent);
        CHECK_EQ(root->depth, 0);
        CHECK_STREQ(root->path, "/");
        CHECK_STREQ(root->name, "");
        CHECK(tree_get(t, "/") == root);

        collect_preorder(root, &a);
        CHECK_EQ(a.n, tree_size(t));

        for (size_t i = 0; i < a.n; i++) {
                Group *g = a.v[i];
                unsigned n_children = 0;
                Group *prev = NULL;

                if (g != root) {
                        char expected[4096];

                        CHECK(g->parent);
                        CHECK_EQ(g->depth, g->parent->depth + 1);
                        CHECK(g->name[0]);
                        CHECK(!strchr(g->name, '/'));
                        snprintf(expected, sizeof expected, "%s/%s", g->parent == root ? "" : g->parent->path,
                                 g->name);
                        CHECK_STREQ(g->path, expected);
                        /* name points into path */
                        CHECK(g->name > g->path && g->name < g->path + strlen(g->path));
                }

                CHECK_MSG(tree_get(t, g->path) == g, " (%s)", g->path);

                for (Group *c = g->children; c; c = c->next) {
                        CHECK(c->parent == g);
                        CHECK(c->prev == prev);
                        prev = c;
                        n_children++;
                }
                CHECK_EQ(g->n_children, n_children);

                CHECK_MSG(g->e_freeze == (g->freeze || (g->parent ? g->parent->e_freeze : tree_outer_freeze(t))),
                          " (%s)", g->path);
                CHECK_EQ(tree_parent_freezes(t, g), g->parent ? g->parent->e_freeze : tree_outer_freeze(t));
                CHECK_MSG(g->state == freezer_state_derive(g->freeze, g->e_freeze, g->frozen), " (%s)", g->path);

                CHECK_EQ(g->on_changed_list, g->changed != 0);

                n_tracked += g->tracked;
        }

        CHECK_EQ(tree_tracked(t), n_tracked);
        free(a.v);

        verify_counts(root, &n, &n_frozen);
        CHECK_EQ(n + 1, tree_size(t));
}

/* Pops every pending change; returns how many groups were on the list. */
static unsigned drain(Tree *t) {
        unsigned n = 0, bits;

        while (tree_pop_changed(t, &bits)) {
                CHECK(bits != 0);
                n++;
        }
        CHECK_EQ(bits, 0);
        return n;
}

/* The kernel settles: every group reports frozen == e_freeze, deepest first. */
static void kernel_settle(Tree *t) {
        GroupArray a = {};

        collect_preorder(tree_root(t), &a);
        for (size_t i = a.n; i > 0; i--)
                tree_set_frozen(t, a.v[i - 1], a.v[i - 1]->e_freeze);
        free(a.v);
}

/* ---- tests ---- */

static void test_state_strings(void) {
        static const char *const names[] = {
                "running", "freezing", "frozen", "thawing", "freezing-by-parent", "frozen-by-parent",
        };

        CHECK_EQ(ELEMENTSOF(names), _FREEZER_STATE_MAX);
        for (FreezerState s = 0; s < _FREEZER_STATE_MAX; s++) {
                CHECK_STREQ(freezer_state_to_string(s), names[s]);
                CHECK_EQ(freezer_state_from_string(names[s]), s);
        }

        CHECK(!freezer_state_to_string(_FREEZER_STATE_MAX));
        CHECK(!freezer_state_to_string(_FREEZER_STATE_INVALID));
        CHECK_EQ(freezer_state_from_string("Frozen"), _FREEZER_STATE_INVALID);
        CHECK_EQ(freezer_state_from_string(""), _FREEZER_STATE_INVALID);
        CHECK_EQ(freezer_state_from_string("frozen "), _FREEZER_STATE_INVALID);
        CHECK_EQ(freezer_state_from_string("blah"), _FREEZER_STATE_INVALID);
        CHECK_EQ(freezer_state_from_string(NULL), _FREEZER_STATE_INVALID);
}

static void test_state_derive(void) {
        static const struct {
                bool freeze, e_freeze, frozen;
                FreezerState state;
        } table[] = {
                /* freeze e_freeze frozen */
                { false, false, false, FREEZER_RUNNING },
                { false, false, true,  FREEZER_THAWING },
                { false, true,  false, FREEZER_FREEZING_BY_PARENT },
                { false, true,  true,  FREEZER_FROZEN_BY_PARENT },
                /* freeze implies e_freeze in the model, but the derivation
                 * only looks at freeze first: both rows must agree. */
                { true,  false, false, FREEZER_FREEZING },
                { true,  false, true,  FREEZER_FROZEN },
                { true,  true,  false, FREEZER_FREEZING },
                { true,  true,  true,  FREEZER_FROZEN },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                CHECK_MSG(freezer_state_derive(table[i].freeze, table[i].e_freeze, table[i].frozen) ==
                                  table[i].state,
                          " (row %zu)", i);
}

static void test_new(void) {
        Tree *t = tree_new();
        Group *root;
        unsigned bits = 123;

        CHECK(t);
        root = tree_root(t);
        CHECK(root);
        CHECK_STREQ(root->path, "/");
        CHECK_STREQ(root->name, "");
        CHECK_EQ(root->depth, 0);
        CHECK(root->tracked);
        CHECK(!root->freeze && !root->e_freeze && !root->frozen);
        CHECK_EQ(root->state, FREEZER_RUNNING);
        CHECK(!root->children && !root->parent && !root->next && !root->prev);
        CHECK_EQ(root->n_children, 0);
        CHECK_EQ(tree_size(t), 1);
        CHECK_EQ(tree_tracked(t), 1);
        CHECK(tree_get(t, "/") == root);
        CHECK(!tree_get(t, ""));
        CHECK(!tree_get(t, "//"));
        CHECK(!tree_get(t, "/a"));
        CHECK(!tree_get(t, NULL));
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(bits, 0);
        CHECK(!tree_pop_changed(t, NULL));
        CHECK(!tree_next_preorder(root, root));
        CHECK_EQ(tree_remove(t, root, NULL, NULL), -EINVAL);
        CHECK_EQ(tree_size(t), 1);
        verify_tree(t);

        tree_free(t, NULL, NULL);
        tree_free(NULL, NULL, NULL);
}

static void test_add(void) {
        Tree *t = tree_new();
        Group *root = tree_root(t), *a, *b, *c, *x, *g;
        unsigned bits;

        CHECK_EQ(tree_add(t, root, "a", true, false, false, true, &a), 0);
        CHECK_STREQ(a->path, "/a");
        CHECK_STREQ(a->name, "a");
        CHECK_EQ(a->depth, 1);
        CHECK(a->parent == root);
        CHECK(a->populated);
        CHECK(a->tracked);
        CHECK_EQ(a->state, FREEZER_RUNNING);
        CHECK(!a->on_changed_list);
        CHECK_EQ(a->changed, 0);
        CHECK(!a->userdata);

        /* The root is marked, the new group is not. */
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));

        /* Frozen and freezing groups, inherited e_freeze. */
        CHECK_EQ(tree_add(t, a, "b", true, true, false, false, &b), 0);
        CHECK_STREQ(b->path, "/a/b");
        CHECK_STREQ(b->name, "b");
        CHECK_EQ(b->depth, 2);
        CHECK(b->freeze && b->e_freeze && !b->frozen);
        CHECK_EQ(b->state, FREEZER_FREEZING);

        CHECK_EQ(tree_add(t, b, "c", true, false, true, false, &c), 0);
        CHECK_STREQ(c->path, "/a/b/c");
        CHECK(!c->freeze && c->e_freeze && c->frozen);
        CHECK_EQ(c->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(b->n_frozen_descendants, 1);
        CHECK_EQ(a->n_frozen_descendants, 1);
        CHECK_EQ(root->n_frozen_descendants, 1);
        CHECK_EQ(root->n_descendants, 3);
        CHECK_EQ(a->n_descendants, 2);
        CHECK_EQ(b->n_descendants, 1);
        CHECK_EQ(c->n_descendants, 0);

        CHECK_EQ(tree_add(t, c, "d", true, false, false, false, &g), 0);
        CHECK_EQ(g->state, FREEZER_FREEZING_BY_PARENT);
        CHECK_EQ(tree_add(t, a, "thaw", true, false, true, false, &g), 0);
        CHECK_EQ(g->state, FREEZER_THAWING);
        CHECK_EQ(tree_add(t, a, "frz", true, true, true, false, &g), 0);
        CHECK_EQ(g->state, FREEZER_FROZEN);

        /* Ancestors are marked nearest first, so in order of first marking:
         * a, root (adding b), b (adding c), c (adding d). */
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == c);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));

        /* Errors leave everything as it was. */
        x = (Group *) 0x1;
        CHECK_EQ(tree_add(t, root, "a", true, false, false, false, &x), -EEXIST);
        CHECK_EQ(tree_add(t, a, "b", false, true, true, false, &x), -EEXIST);
        CHECK_EQ(tree_add(t, root, "", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, "x/y", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, "/", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, "x/", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, ".", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, "..", true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, root, NULL, true, false, false, false, &x), -EINVAL);
        CHECK_EQ(tree_add(t, NULL, "x", true, false, false, false, &x), -EINVAL);
        CHECK(x == (Group *) 0x1);
        CHECK_EQ(tree_size(t), 7);
        CHECK(!tree_pop_changed(t, &bits));

        /* Names that merely look odd are fine. */
        CHECK_EQ(tree_add(t, root, "...", true, false, false, false, NULL), 0);
        CHECK_EQ(tree_add(t, root, ".a", true, false, false, false, NULL), 0);
        CHECK_EQ(tree_add(t, root, "a.slice", true, false, false, false, NULL), 0);
        CHECK_EQ(tree_add(t, root, "with space", true, false, false, false, NULL), 0);
        CHECK(tree_get(t, "/..."));
        CHECK(tree_get(t, "/.a"));
        CHECK(tree_get(t, "/a.slice"));
        CHECK(tree_get(t, "/with space"));
        /* Same name under different parents is fine too. */
        CHECK_EQ(tree_add(t, b, "a", true, false, false, false, &x), 0);
        CHECK_STREQ(x->path, "/a/b/a");

        /* Lookups: exact normalized paths only. */
        CHECK(tree_get(t, "/a/b/c") == c);
        CHECK(!tree_get(t, "/a/b/c/"));
        CHECK(!tree_get(t, "a/b/c"));
        CHECK(!tree_get(t, "//a/b/c"));
        CHECK(!tree_get(t, "/a/b/c/d/e"));

        CHECK(group_child(root, "a") == a);
        CHECK(group_child(a, "b") == b);
        CHECK(group_child(b, "c") == c);
        CHECK(!group_child(a, "c"));
        CHECK(!group_child(c, "x"));
        CHECK(!group_child(a, NULL));
        CHECK_EQ(root->n_children, 5);
        CHECK_EQ(a->n_children, 3);

        verify_tree(t);
        tree_free(t, NULL, NULL);
}

/* The 13-row hierarchy matrix of the kernel selftest (Chen Ridong, "cgroup/freezer:
 * Add freeze selftest", tools/testing/selftests/cgroup/test_freezer.sh). */
static void test_kernel_matrix(void) {
        static const char *const paths[8] = {
                "/A", "/A/B", "/A/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/C/G", "/A/B/D/H",
        };
        static const char matrix[13][2][8] = {
                /* value written to freeze      expected frozen in cgroup.events
                 *  A  B  C  D  E  F  G  H        A  B  C  D  E  F  G  H */
                { { 1, 0, 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 1, 1, 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 1, 0, 1, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 } },

                { { 1, 1, 1, 1, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 1, 1, 1, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 1, 1, 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },
                { { 1, 0, 0, 0, 0, 0, 0, 0 }, { 1, 1, 1, 1, 1, 1, 1, 1 } },

                { { 0, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 1, 0, 0, 0, 1 } },
                { { 0, 0, 0, 1, 0, 0, 0, 1 }, { 0, 0, 0, 1, 0, 0, 0, 1 } },
                { { 0, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 1, 0, 0, 0, 1 } },
                { { 0, 0, 1, 1, 0, 0, 0, 0 }, { 0, 0, 1, 1, 0, 0, 1, 1 } },
                { { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 } },
        };
        Tree *t = tree_new();
        Group *g[8];
        bool prev_freeze[8] = {};
        char ctx[64];

        for (size_t j = 0; j < 8; j++)
                g[j] = add_path(t, paths[j], true, false, false);
        drain(t);
        verify_tree(t);

        for (size_t row = 0; row < ELEMENTSOF(matrix); row++) {
                bool expect_e[8];
                unsigned bits;
                Group *x;

                snprintf(ctx, sizeof ctx, "matrix row %zu", row + 1);
                check_context = ctx;

                /* The selftest writes A..H in order. */
                for (size_t j = 0; j < 8; j++)
                        tree_set_freeze(t, g[j], matrix[row][0][j]);

                /* Effective flags follow at once; the kernel has not reported yet. */
                for (size_t j = 0; j < 8; j++) {
                        CHECK_EQ(g[j]->freeze, matrix[row][0][j]);
                        expect_e[j] = matrix[row][1][j];
                        CHECK_MSG(g[j]->e_freeze == expect_e[j], " (%s)", paths[j]);
                }
                verify_tree(t);

                /* Own-flag changes, and only those, carry GROUP_CHANGED_FREEZE. */
                while ((x = tree_pop_changed(t, &bits))) {
                        bool freeze_changed = false;

                        for (size_t j = 0; j < 8; j++)
                                if (g[j] == x)
                                        freeze_changed = prev_freeze[j] != (bool) matrix[row][0][j];
                        CHECK_MSG(!!(bits & GROUP_CHANGED_FREEZE) == freeze_changed, " (%s)", x->path);
                        CHECK(!(bits & (GROUP_CHANGED_FROZEN | GROUP_CHANGED_FROZEN_DESCENDANTS)));
                }
                for (size_t j = 0; j < 8; j++)
                        prev_freeze[j] = matrix[row][0][j];

                kernel_settle(t);

                for (size_t j = 0; j < 8; j++) {
                        FreezerState expected;

                        CHECK_MSG(g[j]->frozen == (bool) matrix[row][1][j], " (%s)", paths[j]);
                        if (!matrix[row][1][j])
                                expected = FREEZER_RUNNING;
                        else if (matrix[row][0][j])
                                expected = FREEZER_FROZEN;
                        else
                                expected = FREEZER_FROZEN_BY_PARENT;
                        CHECK_MSG(g[j]->state == expected, " (%s: %s)", paths[j],
                                  freezer_state_to_string(g[j]->state));
                }
                verify_tree(t);
                drain(t);
        }

        check_context = "";
        tree_free(t, NULL, NULL);
}

/* Pops every change that setting A's own flag made: A's flag and state, the
 * state alone of each group below A that follows it, in state unless that is
 * _FREEZER_STATE_INVALID; of C, the subtree that froze itself, only that its
 * parent's effective flag moved (GroupStatesChanged's bit 2), nothing of G and I. */
static void check_changed_outside(Tree *t, Group *A, Group *C, Group *G, Group *I, FreezerState state) {
        unsigned bits;
        Group *x;
        bool c_seen = false;

        while ((x = tree_pop_changed(t, &bits))) {
                CHECK_MSG(x != G && x != I, " (%s got 0x%x)", x->path, bits);
                if (x == C) {
                        CHECK_EQ(bits, GROUP_CHANGED_PARENT_FREEZES);
                        c_seen = true;
                        continue;
                }
                if (x == A)
                        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
                else
                        CHECK_MSG(bits == GROUP_CHANGED_STATE, " (%s got 0x%x)", x->path, bits);
                if (state != _FREEZER_STATE_INVALID)
                        CHECK_EQ(x->state, state);
        }
        CHECK(c_seen);
}

/* Freezing a parent must not touch a subtree that froze itself. */
static void test_skip_self_frozen_subtree(void) {
        static const char *const paths[] = {
                "/A", "/A/B", "/A/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/C/G", "/A/B/D/H", "/A/C/G/I",
        };
        Tree *t = tree_new();
        Group *A, *C, *G, *I;
        unsigned bits;

        for (size_t j = 0; j < ELEMENTSOF(paths); j++)
                add_path(t, paths[j], true, false, false);
        A = get(t, "/A");
        C = get(t, "/A/C");
        G = get(t, "/A/C/G");
        I = get(t, "/A/C/G/I");

        tree_set_freeze(t, C, true);
        CHECK(C->e_freeze && G->e_freeze && I->e_freeze);
        CHECK(!A->e_freeze && !get(t, "/A/B")->e_freeze);
        kernel_settle(t);
        CHECK_EQ(C->state, FREEZER_FROZEN);
        CHECK_EQ(G->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(A->n_frozen_descendants, 3);
        drain(t);

        /* Freeze A: A, B and B's subtree change state; C, G, I do not. */
        tree_set_freeze(t, A, true);
        check_changed_outside(t, A, C, G, I, _FREEZER_STATE_INVALID);
        CHECK_EQ(C->state, FREEZER_FROZEN);
        CHECK_EQ(G->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(get(t, "/A/B/D/H")->state, FREEZER_FREEZING_BY_PARENT);
        verify_tree(t);
        kernel_settle(t);
        drain(t);

        /* C's own flag flips under a frozen A: only C changes (FROZEN ->
         * FROZEN_BY_PARENT); G and I keep e_freeze and are skipped. */
        tree_set_freeze(t, C, false);
        CHECK(tree_pop_changed(t, &bits) == C);
        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(C->state, FREEZER_FROZEN_BY_PARENT);
        CHECK(G->e_freeze && I->e_freeze);

        tree_set_freeze(t, C, true);
        CHECK(tree_pop_changed(t, &bits) == C);
        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(C->state, FREEZER_FROZEN);

        /* Thaw A: C's subtree stays frozen and untouched. */
        tree_set_freeze(t, A, false);
        check_changed_outside(t, A, C, G, I, FREEZER_THAWING);
        CHECK(C->e_freeze && G->e_freeze && I->e_freeze);
        verify_tree(t);

        /* Setting a flag to its current value changes nothing at all. */
        kernel_settle(t);
        drain(t);
        tree_set_freeze(t, C, true);
        tree_set_freeze(t, A, false);
        CHECK(!tree_pop_changed(t, &bits));

        /* A group frozen by its parent and by itself: dropping the parent's
         * flag leaves it alone. */
        tree_set_freeze(t, G, true);
        CHECK(tree_pop_changed(t, &bits) == G);
        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        CHECK(!tree_pop_changed(t, &bits));
        tree_set_freeze(t, C, false);
        CHECK(tree_pop_changed(t, &bits) == C);
        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        /* G's state stays, but no longer does an ancestor freeze it. */
        CHECK(tree_pop_changed(t, &bits) == G);
        CHECK_EQ(bits, GROUP_CHANGED_PARENT_FREEZES);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(C->state, FREEZER_THAWING);
        CHECK_EQ(G->state, FREEZER_FROZEN);
        CHECK_EQ(I->state, FREEZER_FROZEN_BY_PARENT);
        verify_tree(t);

        tree_free(t, NULL, NULL);
}

/* A flag above the root (tree_set_outer_freeze()): the whole tree is frozen
 * by a parent, as by a flag on a tracked ancestor, and a group with its own
 * flag keeps its state and is skipped. */
static void test_outer_freeze(void) {
        Tree *t = tree_new();
        Group *root = tree_root(t), *A, *B, *C, *D;
        unsigned bits;

        add_path(t, "/A", true, false, false);
        add_path(t, "/A/B", true, false, false);
        add_path(t, "/C", true, false, false);
        add_path(t, "/C/D", true, false, false);
        A = get(t, "/A");
        B = get(t, "/A/B");
        C = get(t, "/C");
        D = get(t, "/C/D");
        tree_set_freeze(t, C, true);
        kernel_settle(t);
        drain(t);
        CHECK(!tree_outer_freeze(t));
        CHECK(!tree_parent_freezes(t, root));

        tree_set_outer_freeze(t, true);
        CHECK(tree_outer_freeze(t));
        CHECK(tree_parent_freezes(t, root));
        CHECK(!root->freeze && root->e_freeze && A->e_freeze && B->e_freeze);
        CHECK_EQ(root->state, FREEZER_FREEZING_BY_PARENT);
        CHECK_EQ(B->state, FREEZER_FREEZING_BY_PARENT);
        CHECK_EQ(C->state, FREEZER_FROZEN);
        CHECK_EQ(D->state, FREEZER_FROZEN_BY_PARENT);
        /* root, A and B change state alone (no own flag moved), nothing else:
         * C froze itself. */
        check_changed_outside(t, NULL, C, D, NULL, _FREEZER_STATE_INVALID);
        verify_tree(t);

        kernel_settle(t);
        CHECK_EQ(root->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(A->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(B->state, FREEZER_FROZEN_BY_PARENT);
        drain(t);

        /* The same value again changes nothing. */
        tree_set_outer_freeze(t, true);
        CHECK(!tree_pop_changed(t, &bits));

        /* A group added below now inherits it. */
        add_path(t, "/A/E", true, false, false);
        CHECK(get(t, "/A/E")->e_freeze);
        kernel_settle(t);
        drain(t);

        /* The root's own flag under the outer one: only the root's own flag
         * and state move (FROZEN_BY_PARENT <-> FROZEN), as for any group. */
        tree_set_freeze(t, root, true);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        CHECK(!tree_pop_changed(t, &bits));
        tree_set_outer_freeze(t, false);
        /* The root still freezes itself: only the flag above it moved. */
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_PARENT_FREEZES);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK(root->e_freeze && B->e_freeze);
        tree_set_outer_freeze(t, true);
        tree_set_freeze(t, root, false);
        drain(t);

        /* Thawed from above: every group not frozen by itself is thawing
         * until the kernel reports it, then running; C's subtree stays. */
        tree_set_outer_freeze(t, false);
        CHECK(!root->e_freeze && !A->e_freeze && !B->e_freeze);
        CHECK_EQ(root->state, FREEZER_THAWING);
        CHECK_EQ(B->state, FREEZER_THAWING);
        CHECK_EQ(C->state, FREEZER_FROZEN);
        CHECK_EQ(D->state, FREEZER_FROZEN_BY_PARENT);
        check_changed_outside(t, NULL, C, D, NULL, FREEZER_THAWING);
        verify_tree(t);
        kernel_settle(t);
        CHECK_EQ(root->state, FREEZER_RUNNING);
        CHECK_EQ(B->state, FREEZER_RUNNING);
        verify_tree(t);

        tree_free(t, NULL, NULL);
}

static void test_set_frozen_populated_tracked(void) {
        Tree *t = tree_new();
        Group *root = tree_root(t), *a, *b, *c, *d;
        unsigned bits;

        a = add_path(t, "/a", false, false, false);
        b = add_path(t, "/a/b", true, true, false);
        c = add_path(t, "/a/b/c", true, false, false);
        d = add_path(t, "/a/d", true, false, false);
        CHECK_EQ(tree_tracked(t), 4);
        drain(t);

        tree_set_frozen(t, c, true);
        CHECK_EQ(c->state, FREEZER_FROZEN_BY_PARENT);
        CHECK_EQ(b->n_frozen_descendants, 1);
        CHECK_EQ(a->n_frozen_descendants, 1);
        CHECK_EQ(root->n_frozen_descendants, 1);
        CHECK(tree_pop_changed(t, &bits) == c);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN | GROUP_CHANGED_STATE);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));

        tree_set_frozen(t, c, true); /* no-op */
        CHECK(!tree_pop_changed(t, &bits));

        tree_set_frozen(t, b, true);
        CHECK_EQ(b->state, FREEZER_FROZEN);
        CHECK_EQ(a->n_frozen_descendants, 2);
        CHECK_EQ(root->n_frozen_descendants, 2);
        CHECK_EQ(b->n_frozen_descendants, 1);

        /* A kernel report that disagrees with the flags: THAWING. */
        tree_set_frozen(t, d, true);
        CHECK_EQ(d->state, FREEZER_THAWING);
        CHECK_EQ(root->n_frozen_descendants, 3);
        drain(t);

        tree_set_frozen(t, c, false);
        CHECK_EQ(c->state, FREEZER_FREEZING_BY_PARENT);
        CHECK_EQ(b->n_frozen_descendants, 0);
        CHECK_EQ(a->n_frozen_descendants, 2);
        CHECK_EQ(root->n_frozen_descendants, 2);
        CHECK(tree_pop_changed(t, &bits) == c);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN | GROUP_CHANGED_STATE);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK(!tree_pop_changed(t, &bits));

        /* frozen on the root itself (the model allows it): no ancestors. */
        tree_set_frozen(t, root, true);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN | GROUP_CHANGED_STATE);
        tree_set_frozen(t, root, false);
        drain(t);
        verify_tree(t);

        /* populated */
        tree_set_populated(t, a, false); /* no-op */
        CHECK(!tree_pop_changed(t, &bits));
        tree_set_populated(t, a, true);
        CHECK(a->populated);
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED);
        CHECK(!tree_pop_changed(t, &bits));
        tree_set_populated(t, a, false);
        CHECK(!a->populated);
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED);

        /* tracked: counts only, never on the changed list */
        CHECK(!a->tracked);
        tree_set_tracked(t, a, true);
        CHECK(a->tracked);
        CHECK_EQ(tree_tracked(t), 5);
        tree_set_tracked(t, a, true);
        CHECK_EQ(tree_tracked(t), 5);
        tree_set_tracked(t, a, false);
        tree_set_tracked(t, a, false);
        CHECK_EQ(tree_tracked(t), 4);
        tree_set_tracked(t, root, false);
        CHECK_EQ(tree_tracked(t), 3);
        tree_set_tracked(t, root, true);
        CHECK_EQ(tree_tracked(t), 4);
        CHECK(!tree_pop_changed(t, &bits));

        CHECK_EQ(tree_remove(t, b, NULL, NULL), 0); /* b and c, both tracked */
        CHECK_EQ(tree_tracked(t), 2);
        CHECK_EQ(tree_size(t), 3);
        tree_set_tracked(t, d, false);
        CHECK_EQ(tree_remove(t, d, NULL, NULL), 0);
        CHECK_EQ(tree_tracked(t), 1);
        verify_tree(t);

        tree_free(t, NULL, NULL);
}

static void test_changed_list(void) {
        Tree *t = tree_new();
        Group *root = tree_root(t), *a, *b, *c, *x;
        unsigned bits;

        a = add_path(t, "/a", true, false, false);
        b = add_path(t, "/b", true, false, false);
        c = add_path(t, "/c", true, false, false);
        drain(t);

        /* FIFO in order of first marking; later marks OR in. */
        tree_set_populated(t, b, true);
        tree_set_populated(t, a, true);
        tree_set_freeze(t, b, true);
        tree_set_populated(t, c, true);
        tree_set_frozen(t, b, true); /* also marks root */
        tree_set_freeze(t, a, true);

        CHECK(b->on_changed_list && a->on_changed_list && c->on_changed_list && root->on_changed_list);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED | GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE | GROUP_CHANGED_FROZEN);
        CHECK(!b->on_changed_list);
        CHECK_EQ(b->changed, 0);
        CHECK(tree_pop_changed(t, &bits) == a);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED | GROUP_CHANGED_FREEZE | GROUP_CHANGED_STATE);
        CHECK(tree_pop_changed(t, &bits) == c);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(bits, 0);

        /* tree_unmark_changed(): bits cleared, its place kept while some
         * are left, off the list with the last. */
        tree_set_populated(t, a, false);
        tree_set_freeze(t, b, false);
        tree_set_populated(t, c, false);
        tree_unmark_changed(t, b, GROUP_CHANGED_FREEZE);
        CHECK(b->on_changed_list);
        CHECK_EQ(b->changed, GROUP_CHANGED_STATE);
        tree_unmark_changed(t, a, GROUP_CHANGED_POPULATED | GROUP_CHANGED_DESCENDANTS);
        CHECK(!a->on_changed_list && a->changed == 0);
        tree_unmark_changed(t, a, GROUP_CHANGED_POPULATED); /* off the list already */
        CHECK(!a->on_changed_list && a->changed == 0);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_STATE);
        CHECK(tree_pop_changed(t, &bits) == c);
        CHECK(!tree_pop_changed(t, NULL));
        tree_set_populated(t, a, true);
        tree_set_populated(t, c, true);
        drain(t);

        /* A popped group that changes again goes to the tail. */
        tree_set_populated(t, a, false);
        tree_set_populated(t, b, false);
        CHECK(tree_pop_changed(t, &bits) == a);
        tree_set_populated(t, a, true);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK(tree_pop_changed(t, NULL) == a);
        CHECK(!a->on_changed_list && a->changed == 0);
        CHECK(!tree_pop_changed(t, NULL));

        /* Removing groups from the middle, the head and the tail of the list. */
        {
                Group *g[6];
                char path[16];

                for (unsigned i = 0; i < 6; i++) {
                        snprintf(path, sizeof path, "/c/%u", i);
                        g[i] = add_path(t, path, true, false, false);
                }
                drain(t);
                for (unsigned i = 0; i < 6; i++)
                        tree_set_populated(t, g[i], true);

                CHECK_EQ(tree_remove(t, g[2], NULL, NULL), 0); /* middle */
                CHECK_EQ(tree_remove(t, g[0], NULL, NULL), 0); /* head */
                CHECK_EQ(tree_remove(t, g[5], NULL, NULL), 0); /* tail */
                /* c and root were appended (descendant counts) after g[5]. */
                CHECK(tree_pop_changed(t, &bits) == g[1]);
                CHECK(tree_pop_changed(t, &bits) == g[3]);
                CHECK(tree_pop_changed(t, &bits) == g[4]);
                x = tree_pop_changed(t, &bits);
                CHECK(x == c);
                CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
                CHECK(tree_pop_changed(t, &bits) == root);
                CHECK(!tree_pop_changed(t, &bits));

                /* The list keeps working after removals emptied it. */
                tree_set_populated(t, g[1], false);
                CHECK_EQ(tree_remove(t, g[1], NULL, NULL), 0); /* only member */
                CHECK(tree_pop_changed(t, &bits) == c);
                CHECK(tree_pop_changed(t, &bits) == root);
                CHECK(!tree_pop_changed(t, &bits));
                tree_set_populated(t, g[3], false);
                CHECK(tree_pop_changed(t, &bits) == g[3]);
                CHECK(!tree_pop_changed(t, &bits));
        }

        verify_tree(t);
        tree_free(t, NULL, NULL);
}

typedef struct DestroyLog {
        char **paths;
        size_t n, allocated;
        Tree *tree; /* if set, check the group is still reachable while destroyed */
} DestroyLog;

static void log_destroy(Group *g, void *userdata) {
        DestroyLog *l = userdata;

        CHECK(l);
        /* Children are destroyed first, and unlinked by then. */
        CHECK_MSG(!g->children && g->n_children == 0, " (%s)", g->path);
        if (l->tree)
                CHECK_MSG(tree_get(l->tree, g->path) == g, " (%s)", g->path);

        if (l->n == l->allocated) {
                l->allocated = l->allocated ? l->allocated * 2 : 16;
                l->paths = realloc(l->paths, l->allocated * sizeof(char *));
                CHECK(l->paths);
        }
        l->paths[l->n] = strdup(g->path);
        CHECK(l->paths[l->n]);
        l->n++;
}

static bool path_is_ancestor(const char *a, const char *b) {
        size_t n = strlen(a);

        if (streq(a, "/"))
                return !streq(b, "/");
        return strncmp(a, b, n) == 0 && b[n] == '/';
}

static void destroy_log_check_postorder(const DestroyLog *l) {
        for (size_t i = 0; i < l->n; i++)
                for (size_t j = i + 1; j < l->n; j++)
                        CHECK_MSG(!path_is_ancestor(l->paths[i], l->paths[j]), " (%s destroyed before %s)",
                                  l->paths[i], l->paths[j]);
}

static bool destroy_log_has(const DestroyLog *l, const char *path) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->paths[i], path))
                        return true;
        return false;
}

static void destroy_log_clear(DestroyLog *l) {
        for (size_t i = 0; i < l->n; i++)
                free(l->paths[i]);
        free(l->paths);
        l->paths = NULL;
        l->n = l->allocated = 0;
}

static void test_remove(void) {
        static const char *const paths[] = {
                "/s", "/s/a", "/s/a/x", "/s/a/x/1", "/s/a/x/2", "/s/a/y", "/s/b", "/s/b/z", "/k", "/k/l",
        };
        static const char *const removed[] = {
                "/s/a", "/s/a/x", "/s/a/x/1", "/s/a/x/2", "/s/a/y",
        };
        Tree *t = tree_new();
        Group *root = tree_root(t), *s, *a, *b, *k, *x;
        DestroyLog l = { .tree = t };
        unsigned bits;

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                add_path(t, paths[i], true, false, false);
        s = get(t, "/s");
        a = get(t, "/s/a");
        b = get(t, "/s/b");
        k = get(t, "/k");
        CHECK_EQ(root->n_descendants, 10);
        CHECK_EQ(s->n_descendants, 7);
        CHECK_EQ(a->n_descendants, 4);

        /* Some frozen groups inside and outside the removed subtree. */
        tree_set_freeze(t, a, true);
        tree_set_frozen(t, get(t, "/s/a/x/1"), true);
        tree_set_frozen(t, get(t, "/s/a/x"), true);
        tree_set_frozen(t, a, true);
        tree_set_frozen(t, get(t, "/s/b/z"), true);
        tree_set_frozen(t, get(t, "/k/l"), true);
        CHECK_EQ(s->n_frozen_descendants, 4);
        CHECK_EQ(root->n_frozen_descendants, 5);
        verify_tree(t);
        drain(t);

        /* Leave some removed groups, and survivors, on the changed list. */
        tree_set_populated(t, get(t, "/s/a/y"), true);
        tree_set_populated(t, b, true);
        tree_set_populated(t, get(t, "/s/a/x/2"), true);
        tree_set_populated(t, a, true);
        tree_set_populated(t, k, true);

        CHECK_EQ(tree_remove(t, a, log_destroy, &l), 0);

        CHECK_EQ(l.n, ELEMENTSOF(removed));
        for (size_t i = 0; i < ELEMENTSOF(removed); i++) {
                CHECK_MSG(destroy_log_has(&l, removed[i]), " (%s)", removed[i]);
                CHECK_MSG(!tree_get(t, removed[i]), " (%s)", removed[i]);
        }
        destroy_log_check_postorder(&l);
        CHECK_STREQ(l.paths[l.n - 1], "/s/a");

        CHECK_EQ(tree_size(t), 6);
        CHECK_EQ(tree_tracked(t), 6);
        CHECK_EQ(root->n_descendants, 5);
        CHECK_EQ(s->n_descendants, 2);
        CHECK_EQ(s->n_frozen_descendants, 1);
        CHECK_EQ(root->n_frozen_descendants, 2);
        CHECK_EQ(s->n_children, 1);
        CHECK(s->children == b);
        CHECK(!b->prev && !b->next);
        CHECK(!group_child(s, "a"));

        /* Survivors in their order, then the ancestors; no removed group. */
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED);
        CHECK(tree_pop_changed(t, &bits) == k);
        CHECK_EQ(bits, GROUP_CHANGED_POPULATED);
        CHECK(tree_pop_changed(t, &bits) == s);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));
        verify_tree(t);

        /* Removing an unfrozen subtree: no FROZEN_DESCENDANTS bit. */
        destroy_log_clear(&l);
        l.tree = t;
        x = add_path(t, "/s/b/w", true, false, false);
        drain(t);
        CHECK_EQ(tree_remove(t, x, log_destroy, &l), 0);
        CHECK_EQ(l.n, 1);
        CHECK(tree_pop_changed(t, &bits) == b);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == s);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
        CHECK(tree_pop_changed(t, &bits) == root);
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));

        /* Removing without a callback; removing a frozen leaf. */
        CHECK_EQ(tree_remove(t, get(t, "/k/l"), NULL, NULL), 0);
        CHECK_EQ(root->n_frozen_descendants, 1);
        CHECK_EQ(k->n_descendants, 0);
        CHECK(!k->children);

        /* Re-adding a removed name works, with fresh state. */
        CHECK_EQ(tree_add(t, s, "a", true, false, false, false, &x), 0);
        CHECK(tree_get(t, "/s/a") == x);
        CHECK(!tree_get(t, "/s/a/x"));
        CHECK_EQ(x->n_descendants, 0);
        CHECK(!x->e_freeze);
        verify_tree(t);

        CHECK_EQ(tree_remove(t, root, NULL, NULL), -EINVAL);
        CHECK_EQ(tree_remove(t, NULL, NULL, NULL), -EINVAL);

        /* Removing a whole top-level subtree down to a bare root. */
        CHECK_EQ(tree_remove(t, s, NULL, NULL), 0);
        CHECK_EQ(tree_remove(t, k, NULL, NULL), 0);
        CHECK_EQ(tree_size(t), 1);
        CHECK_EQ(tree_tracked(t), 1);
        CHECK_EQ(root->n_descendants, 0);
        CHECK_EQ(root->n_frozen_descendants, 0);
        CHECK_EQ(root->n_children, 0);
        CHECK(!root->children);
        verify_tree(t);

        /* tree_free destroys everything, root last, children first. */
        add_path(t, "/p", true, false, false);
        add_path(t, "/p/q", true, false, false);
        add_path(t, "/r", true, false, false);
        destroy_log_clear(&l);
        l.tree = NULL;
        tree_free(t, log_destroy, &l);
        CHECK_EQ(l.n, 4);
        destroy_log_check_postorder(&l);
        CHECK_STREQ(l.paths[l.n - 1], "/");
        destroy_log_clear(&l);
}

static void test_preorder(void) {
        static const char *const paths[] = {
                "/A", "/A/B", "/A/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/C/G", "/A/B/D/H", "/Z", "/Z/Y",
        };
        Tree *t = tree_new();
        GroupArray expected = {};
        Group *g;
        size_t i;

        for (size_t j = 0; j < ELEMENTSOF(paths); j++)
                add_path(t, paths[j], true, false, false);

        /* Every subtree, compared against an independent DFS. */
        for (size_t top_i = 0; top_i <= ELEMENTSOF(paths); top_i++) {
                Group *top = top_i == 0 ? tree_root(t) : get(t, paths[top_i - 1]);

                expected.n = 0;
                collect_preorder(top, &expected);
                CHECK_EQ(expected.n, top->n_descendants + 1);

                for (g = top, i = 0; g; g = tree_next_preorder(top, g), i++) {
                        CHECK_MSG(i < expected.n, " (top %s)", top->path);
                        CHECK_MSG(g == expected.v[i], " (top %s, got %s)", top->path, g->path);
                }
                CHECK_EQ(i, expected.n);
        }

        /* Parents always come before children; every group exactly once. */
        expected.n = 0;
        collect_preorder(tree_root(t), &expected);
        CHECK_EQ(expected.n, tree_size(t));
        for (size_t a = 0; a < expected.n; a++)
                for (size_t b = a + 1; b < expected.n; b++) {
                        CHECK(expected.v[a] != expected.v[b]);
                        CHECK(expected.v[b] != expected.v[a]->parent);
                }

        free(expected.v);
        tree_free(t, NULL, NULL);
}

/* Random operations, checked against brute force after every step, and the
 * changed bits checked to be exactly the set of properties that moved. */
typedef struct Snapshot {
        bool freeze, frozen, populated, parent_freezes;
        FreezerState state;
        unsigned n_descendants, n_frozen_descendants;
        unsigned popped;
        unsigned n_pops;
} Snapshot;

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rng(void) {
        /* xorshift64* */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(0x2545f4914f6cdd1d);
}

static unsigned rng_below(unsigned n) {
        return (unsigned) (rng() % n);
}

static void snapshot_take(Group *g) {
        Snapshot *s = g->userdata;

        if (!s) {
                s = calloc(1, sizeof(Snapshot));
                CHECK(s);
                g->userdata = s;
        }
        *s = (Snapshot) {
                .freeze = g->freeze,
                .frozen = g->frozen,
                .populated = g->populated,
                .parent_freezes = g->parent && g->parent->e_freeze, /* no outer flag here */
                .state = g->state,
                .n_descendants = g->n_descendants,
                .n_frozen_descendants = g->n_frozen_descendants,
        };
}

static unsigned n_snapshots_freed;

static void snapshot_free(Group *g, void *userdata) {
        CHECK(g->userdata);
        free(g->userdata);
        g->userdata = NULL;
        n_snapshots_freed++;
}

static void test_random(void) {
        static const char *const names[] = { "a", "b", "c", "d", "e" };
        Tree *t = tree_new();
        GroupArray all = {};
        unsigned n_ops = 6000, n_adds = 0, n_freed_expected = 0, max_size = 0;
        char ctx[64];

        check_context = ctx;
        snapshot_take(tree_root(t));

        for (unsigned op = 0; op < n_ops; op++) {
                unsigned kind = rng_below(100), bits;
                Group *g, *x, *added = NULL;

                snprintf(ctx, sizeof ctx, "random op %u kind %u", op, kind);

                all.n = 0;
                collect_preorder(tree_root(t), &all);
                for (size_t i = 0; i < all.n; i++)
                        snapshot_take(all.v[i]);

                g = all.v[rng_below(all.n)];

                if (kind < 35) {
                        const char *name = names[rng_below(ELEMENTSOF(names))];
                        bool exists = group_child(g, name);
                        bool frozen = rng_below(2), freeze = rng_below(4) == 0;
                        bool tracked = rng_below(2), populated = rng_below(2);
                        int r;

                        if (g->depth >= 6 || tree_size(t) > 200)
                                continue;

                        r = tree_add(t, g, name, tracked, freeze, frozen, populated, &added);
                        CHECK_EQ(r, exists ? -EEXIST : 0);
                        if (r == 0) {
                                CHECK(group_child(g, name) == added);
                                CHECK(added->freeze == freeze && added->frozen == frozen);
                                n_adds++;
                        } else
                                added = NULL;
                } else if (kind < 40) {
                        unsigned n = g->n_descendants + 1;

                        /* Big subtrees go rarely, so that the tree gets to grow. */
                        if (g == tree_root(t) || (n > 10 && rng_below(8) != 0))
                                continue;
                        CHECK_EQ(tree_remove(t, g, snapshot_free, NULL), 0);
                        n_freed_expected += n;
                        CHECK_EQ(n_snapshots_freed, n_freed_expected);
                } else if (kind < 63)
                        tree_set_freeze(t, g, rng_below(2));
                else if (kind < 78)
                        tree_set_frozen(t, g, rng_below(2));
                else if (kind < 88)
                        tree_set_frozen(t, g, g->e_freeze); /* the kernel catching up */
                else if (kind < 93)
                        tree_set_populated(t, g, rng_below(2));
                else if (kind < 97)
                        tree_set_tracked(t, g, rng_below(2));
                else
                        kernel_settle(t);

                while ((x = tree_pop_changed(t, &bits))) {
                        Snapshot *s = x->userdata;

                        CHECK_MSG(x != added, " (new group %s on the changed list)", x->path);
                        CHECK(s);
                        CHECK_MSG(s->n_pops == 0, " (%s popped twice)", x->path);
                        s->n_pops++;
                        s->popped = bits;
                }

                all.n = 0;
                collect_preorder(tree_root(t), &all);
                for (size_t i = 0; i < all.n; i++) {
                        Snapshot *s;
                        unsigned expected = 0;

                        x = all.v[i];
                        if (x == added) {
                                CHECK(!x->userdata);
                                continue;
                        }

                        s = x->userdata;
                        CHECK(s);
                        if (s->freeze != x->freeze)
                                expected |= GROUP_CHANGED_FREEZE;
                        if (s->frozen != x->frozen)
                                expected |= GROUP_CHANGED_FROZEN;
                        if (s->state != x->state)
                                expected |= GROUP_CHANGED_STATE;
                        if (s->populated != x->populated)
                                expected |= GROUP_CHANGED_POPULATED;
                        if (s->n_descendants != x->n_descendants)
                                expected |= GROUP_CHANGED_DESCENDANTS;
                        if (s->n_frozen_descendants != x->n_frozen_descendants)
                                expected |= GROUP_CHANGED_FROZEN_DESCENDANTS;
                        /* A group that freezes itself keeps its state: bit 2 of
                         * GroupStatesChanged alone moved. */
                        if (s->freeze && x->freeze && s->parent_freezes != (x->parent && x->parent->e_freeze))
                                expected |= GROUP_CHANGED_PARENT_FREEZES;

                        if (kind < 97) {
                                /* One operation: the bits are exactly what moved. */
                                CHECK_MSG(s->popped == expected, " (%s: bits 0x%x, expected 0x%x)", x->path,
                                          s->popped, expected);
                                CHECK_EQ(s->n_pops, expected ? 1 : 0);
                        } else
                                /* Many reports in a row: a count may move and come
                                 * back, so only require that every move was seen. */
                                CHECK_MSG((s->popped & expected) == expected, " (%s: bits 0x%x, expected 0x%x)",
                                          x->path, s->popped, expected);
                }

                verify_tree(t);
                if (tree_size(t) > max_size)
                        max_size = tree_size(t);
        }

        check_context = "";
        printf("  random: %u ops, %u adds, %u removed, largest tree %u groups\n", n_ops, n_adds,
               n_freed_expected, max_size);
        CHECK(n_adds > 500);
        CHECK(max_size > 100);

        /* A group added by the last operation has no snapshot yet. */
        all.n = 0;
        collect_preorder(tree_root(t), &all);
        for (size_t i = 0; i < all.n; i++)
                snapshot_take(all.v[i]);
        free(all.v);
        n_freed_expected += tree_size(t);
        tree_free(t, snapshot_free, NULL);
        CHECK_EQ(n_snapshots_freed, n_freed_expected);
}

static void count_destroy(Group *g, void *userdata) {
        (*(unsigned *) userdata)++;
}

/* 100 000 children under one parent: the duplicate check must not be linear. */
static void test_large_flat(void) {
        const unsigned n = 100000;
        Tree *t = tree_new();
        Group *p, *g;
        char name[32], path[64];
        unsigned destroyed = 0;
        double start = now_sec(), built, torn;

        p = add_path(t, "/flat", true, false, false);
        for (unsigned i = 0; i < n; i++) {
                snprintf(name, sizeof name, "c%u", i);
                CHECK_EQ(tree_add(t, p, name, true, false, i % 3 == 0, false, NULL), 0);
        }
        built = now_sec();

        CHECK_EQ(tree_size(t), n + 2);
        CHECK_EQ(p->n_children, n);
        CHECK_EQ(p->n_descendants, n);
        CHECK_EQ(p->n_frozen_descendants, (n + 2) / 3);
        CHECK_EQ(tree_add(t, p, "c4242", true, false, false, false, NULL), -EEXIST);
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof path, "/flat/c%u", i);
                g = tree_get(t, path);
                CHECK_MSG(g, " (%s)", path);
                CHECK_STREQ(g->path, path);
                CHECK(g->parent == p);
        }
        CHECK(!tree_get(t, "/flat/c100000"));
        drain(t);

        /* Freezing the parent touches every child. */
        tree_set_freeze(t, p, true);
        CHECK_EQ(drain(t), n + 1);

        CHECK_EQ(tree_remove(t, p, count_destroy, &destroyed), 0);
        torn = now_sec();
        CHECK_EQ(destroyed, n + 1);
        CHECK_EQ(tree_size(t), 1);
        CHECK(!tree_get(t, "/flat/c0"));
        CHECK(!tree_get(t, "/flat"));
        verify_tree(t);
        tree_free(t, NULL, NULL);

        printf("  flat: %u groups built in %.3fs, frozen and removed in %.3fs\n", n, built - start, torn - built);
}

/* A 10-ary tree five levels deep below /t: 111 111 groups. */
static void test_large_fanout(void) {
        Tree *t = tree_new();
        GroupArray level = {}, next = {};
        Group *top, *g;
        unsigned n = 1, destroyed = 0, bits;
        double start = now_sec(), built, frozen, thaw, torn;
        char name[8];

        top = add_path(t, "/t", true, false, false);
        array_push(&level, top);
        for (unsigned depth = 0; depth < 5; depth++) {
                next.n = 0;
                for (size_t i = 0; i < level.n; i++)
                        for (unsigned c = 0; c < 10; c++) {
                                snprintf(name, sizeof name, "%u", c);
                                CHECK_EQ(tree_add(t, level.v[i], name, true, false, false, false, &g), 0);
                                array_push(&next, g);
                                n++;
                        }
                GroupArray tmp = level;
                level = next;
                next = tmp;
        }
        built = now_sec();

        CHECK_EQ(n, 111111);
        CHECK_EQ(tree_size(t), n + 1);
        CHECK_EQ(tree_tracked(t), n + 1);
        CHECK_EQ(top->n_descendants, n - 1);
        CHECK(tree_get(t, "/t/9/9/9/9/9"));
        CHECK_EQ(tree_get(t, "/t/9/9/9/9/9")->depth, 6);
        CHECK(!tree_get(t, "/t/9/9/9/9/9/9"));
        drain(t);

        /* Pre-order visits every group exactly once. */
        {
                unsigned visited = 0;

                for (g = tree_root(t); g; g = tree_next_preorder(tree_root(t), g)) {
                        CHECK(!g->userdata);
                        g->userdata = g;
                        visited++;
                }
                CHECK_EQ(visited, n + 1);
                for (g = tree_root(t); g; g = tree_next_preorder(tree_root(t), g)) {
                        CHECK(g->userdata == g);
                        g->userdata = NULL;
                }
        }

        /* One child froze itself first: its 11 111 groups are skipped later. */
        tree_set_freeze(t, get(t, "/t/3"), true);
        CHECK_EQ(drain(t), 11111);
        tree_set_freeze(t, top, true);
        CHECK_EQ(drain(t), n - 11111 + 1); /* and /t/3 itself: an ancestor freezes it now (bit 2) */
        kernel_settle(t);
        frozen = now_sec();
        CHECK_EQ(top->n_frozen_descendants, n - 1);
        CHECK_EQ(tree_root(t)->n_frozen_descendants, n);
        verify_tree(t);
        drain(t);

        /* Thaw with everything still on the changed list, then remove it all:
         * unlinking from the list must not be a scan. */
        thaw = now_sec();
        tree_set_freeze(t, top, false);
        CHECK(top->on_changed_list);
        kernel_settle(t);
        CHECK_EQ(tree_root(t)->n_frozen_descendants, 11111);
        CHECK_EQ(tree_remove(t, top, count_destroy, &destroyed), 0);
        torn = now_sec();
        CHECK_EQ(destroyed, n);
        CHECK(tree_pop_changed(t, &bits) == tree_root(t));
        CHECK_EQ(bits, GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS);
        CHECK(!tree_pop_changed(t, &bits));
        CHECK_EQ(tree_size(t), 1);
        CHECK_EQ(tree_root(t)->n_frozen_descendants, 0);

        free(level.v);
        free(next.v);
        tree_free(t, NULL, NULL);

        printf("  fan-out: %u groups built in %.3fs, frozen in %.3fs, thawed and removed in %.3fs\n", n,
               built - start, frozen - built, torn - thaw);
}

/* A deep chain: nothing in the tree code may recurse. */
static void test_deep_chain(void) {
        const unsigned n = 3000;
        Tree *t = tree_new();
        Group *g = tree_root(t), *first = NULL;
        unsigned destroyed = 0, visited = 0;

        for (unsigned i = 0; i < n; i++) {
                CHECK_EQ(tree_add(t, g, "x", true, false, false, false, &g), 0);
                if (!first)
                        first = g;
        }
        CHECK_EQ(g->depth, n);
        CHECK_EQ(strlen(g->path), 2 * n);
        CHECK(tree_get(t, g->path) == g);

        for (Group *x = tree_root(t); x; x = tree_next_preorder(tree_root(t), x))
                visited++;
        CHECK_EQ(visited, n + 1);

        tree_set_freeze(t, first, true);
        CHECK(g->e_freeze);
        tree_set_frozen(t, g, true);
        CHECK_EQ(first->n_frozen_descendants, 1);
        CHECK_EQ(tree_root(t)->n_frozen_descendants, 1);

        CHECK_EQ(tree_remove(t, first, count_destroy, &destroyed), 0);
        CHECK_EQ(destroyed, n);
        CHECK_EQ(tree_size(t), 1);
        tree_free(t, NULL, NULL);
}

int main(void) {
        static const struct {
                const char *name;
                void (*func)(void);
        } tests[] = {
                { "state_strings", test_state_strings },
                { "state_derive", test_state_derive },
                { "new", test_new },
                { "add", test_add },
                { "kernel_matrix", test_kernel_matrix },
                { "skip_self_frozen_subtree", test_skip_self_frozen_subtree },
                { "outer_freeze", test_outer_freeze },
                { "set_frozen_populated_tracked", test_set_frozen_populated_tracked },
                { "changed_list", test_changed_list },
                { "remove", test_remove },
                { "preorder", test_preorder },
                { "random", test_random },
                { "large_flat", test_large_flat },
                { "large_fanout", test_large_fanout },
                { "deep_chain", test_deep_chain },
        };

        for (size_t i = 0; i < ELEMENTSOF(tests); i++) {
                printf("%s\n", tests[i].name);
                tests[i].func();
        }

        printf("test-tree: %zu tests, %u checks passed\n", ELEMENTSOF(tests), n_checks);
        return EXIT_SUCCESS;
}
