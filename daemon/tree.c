/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>

#include "tree.h"
#include "util.h"

/* Groups are hashed by their full path; chains go through Group.hash_next.
 * The bucket count is a power of two and doubles whenever the load exceeds
 * one, so lookups stay O(1) however big the tree grows. */
#define HASH_MIN_BUCKETS 64U

struct Tree {
        Group *root;

        Group **buckets;
        size_t n_buckets; /* power of two */

        unsigned n_groups;
        unsigned n_tracked;

        /* A cgroup.freeze of 1 between the mount and the root (the groups
         * above freezerd's cgroup root): the root's parent, as far as its
         * effective flag goes. */
        bool outer_freeze;

        /* FIFO of groups with pending GROUP_CHANGED_* bits, doubly linked
         * through changed_next/changed_prev. */
        Group *changed_head, *changed_tail;
};

static const char *const freezer_state_table[_FREEZER_STATE_MAX] = {
        [FREEZER_RUNNING] = "running",
        [FREEZER_FREEZING] = "freezing",
        [FREEZER_FROZEN] = "frozen",
        [FREEZER_THAWING] = "thawing",
        [FREEZER_FREEZING_BY_PARENT] = "freezing-by-parent",
        [FREEZER_FROZEN_BY_PARENT] = "frozen-by-parent",
};

const char *freezer_state_to_string(FreezerState s) {
        if (s < 0 || s >= _FREEZER_STATE_MAX)
                return NULL;
        return freezer_state_table[s];
}

FreezerState freezer_state_from_string(const char *s) {
        if (!s)
                return _FREEZER_STATE_INVALID;

        for (FreezerState i = 0; i < _FREEZER_STATE_MAX; i++)
                if (streq(freezer_state_table[i], s))
                        return i;

        return _FREEZER_STATE_INVALID;
}

FreezerState freezer_state_derive(bool freeze, bool e_freeze, bool frozen) {
        if (freeze)
                return frozen ? FREEZER_FROZEN : FREEZER_FREEZING;
        if (e_freeze)
                return frozen ? FREEZER_FROZEN_BY_PARENT : FREEZER_FREEZING_BY_PARENT;
        return frozen ? FREEZER_THAWING : FREEZER_RUNNING;
}

static Group **hash_slot(Tree *t, const char *path) {
        return &t->buckets[string_hash(path) & (t->n_buckets - 1)];
}

static void hash_resize(Tree *t, size_t n) {
        Group **b;

        b = calloc(n, sizeof(Group *));
        if (!b)
                return; /* Keep the old table: lookups get slower, never wrong. */

        for (size_t i = 0; i < t->n_buckets; i++)
                for (Group *g = t->buckets[i], *next; g; g = next) {
                        Group **slot = &b[string_hash(g->path) & (n - 1)];

                        next = g->hash_next;
                        g->hash_next = *slot;
                        *slot = g;
                }

        free(t->buckets);
        t->buckets = b;
        t->n_buckets = n;
}

static void hash_insert(Tree *t, Group *g) {
        Group **slot = hash_slot(t, g->path);

        g->hash_next = *slot;
        *slot = g;
}

static void hash_remove(Tree *t, Group *g) {
        for (Group **p = hash_slot(t, g->path); *p; p = &(*p)->hash_next)
                if (*p == g) {
                        *p = g->hash_next;
                        g->hash_next = NULL;
                        return;
                }

        assert(!"group not in hash table");
}

static void mark_changed(Tree *t, Group *g, unsigned bits) {
        if (bits == 0)
                return;

        g->changed |= bits;
        if (g->on_changed_list)
                return;

        g->changed_next = NULL;
        g->changed_prev = t->changed_tail;
        if (t->changed_tail)
                t->changed_tail->changed_next = g;
        else
                t->changed_head = g;
        t->changed_tail = g;
        g->on_changed_list = true;
}

static void changed_unlink(Tree *t, Group *g) {
        if (!g->on_changed_list)
                return;

        if (g->changed_prev)
                g->changed_prev->changed_next = g->changed_next;
        else
                t->changed_head = g->changed_next;
        if (g->changed_next)
                g->changed_next->changed_prev = g->changed_prev;
        else
                t->changed_tail = g->changed_prev;

        g->changed_next = g->changed_prev = NULL;
        g->on_changed_list = false;
}

/* Recompute the cached state from its inputs; mark it only if it moved. */
static void update_state(Tree *t, Group *g) {
        FreezerState s = freezer_state_derive(g->freeze, g->e_freeze, g->frozen);

        if (s == g->state)
                return;

        g->state = s;
        mark_changed(t, g, GROUP_CHANGED_STATE);
}

/* Allocates a group with its path in the same allocation. */
static Group *group_alloc(const char *parent_path, const char *name) {
        size_t pl, nl;
        Group *g;
        char *p;

        if (!parent_path) {
                /* The root: path "/", name "" (the NUL right after the slash). */
                g = calloc(1, sizeof(Group) + 2);
                if (!g)
                        return NULL;

                p = (char *) (g + 1);
                p[0] = '/';
                p[1] = 0;
                g->path = p;
                g->name = p + 1;
                return g;
        }

        pl = streq(parent_path, "/") ? 0 : strlen(parent_path);
        nl = strlen(name);

        g = calloc(1, sizeof(Group) + pl + 1 + nl + 1);
        if (!g)
                return NULL;

        p = (char *) (g + 1);
        memcpy(p, parent_path, pl);
        p[pl] = '/';
        memcpy(p + pl + 1, name, nl + 1);
        g->path = p;
        g->name = p + pl + 1;
        return g;
}

Tree *tree_new(void) {
        Tree *t;
        Group *root;

        t = calloc(1, sizeof(Tree));
        if (!t)
                return NULL;

        t->buckets = calloc(HASH_MIN_BUCKETS, sizeof(Group *));
        if (!t->buckets) {
                free(t);
                return NULL;
        }
        t->n_buckets = HASH_MIN_BUCKETS;

        root = group_alloc(NULL, NULL);
        if (!root) {
                free(t->buckets);
                free(t);
                return NULL;
        }

        root->tracked = true;
        root->state = freezer_state_derive(false, false, false);

        t->root = root;
        hash_insert(t, root);
        t->n_groups = 1;
        t->n_tracked = 1;

        return t;
}

static Group *leftmost_leaf(Group *g) {
        while (g->children)
                g = g->children;
        return g;
}

/* Post-order over top's subtree: destroy(), then forget and free each group.
 * A group is always its parent's first child when it is reached, so it is
 * unlinked from there and every group handed to destroy() has no children
 * left; it is still in the hash table and keeps its parent pointer.  top
 * itself must already be unlinked from its siblings (or be the root). */
static void destroy_subtree(Tree *t, Group *top, void (*destroy)(Group *g, void *userdata), void *userdata) {
        Group *g = leftmost_leaf(top);

        for (;;) {
                Group *next = NULL;

                if (g != top) {
                        next = g->next ? leftmost_leaf(g->next) : g->parent;

                        assert(g->parent->children == g);
                        g->parent->children = g->next;
                        if (g->next)
                                g->next->prev = NULL;
                        g->parent->n_children--;
                        g->next = NULL;
                }

                if (destroy)
                        destroy(g, userdata);

                /* After destroy(): anything it marked on g is dropped too. */
                changed_unlink(t, g);
                hash_remove(t, g);
                if (g->tracked)
                        t->n_tracked--;
                t->n_groups--;
                free(g);

                if (!next)
                        break;
                g = next;
        }
}

void tree_free(Tree *t, void (*destroy)(Group *g, void *userdata), void *userdata) {
        if (!t)
                return;

        destroy_subtree(t, t->root, destroy, userdata);
        assert(t->n_groups == 0);
        assert(!t->changed_head);

        free(t->buckets);
        free(t);
}

Group *tree_root(Tree *t) {
        return t->root;
}

Group *tree_get(Tree *t, const char *path) {
        if (!path)
                return NULL;

        for (Group *g = *hash_slot(t, path); g; g = g->hash_next)
                if (streq(g->path, path))
                        return g;

        return NULL;
}

unsigned tree_size(Tree *t) {
        return t->n_groups;
}

unsigned tree_tracked(Tree *t) {
        return t->n_tracked;
}

static bool name_is_valid(const char *name) {
        return name && name[0] && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

int tree_add(Tree *t, Group *parent, const char *name, bool tracked, bool freeze, bool frozen, bool populated,
             Group **ret) {
        Group *g;

        if (!t || !parent)
                return -EINVAL;
        if (!name_is_valid(name))
                return -EINVAL;

        g = group_alloc(parent->path, name);
        if (!g)
                return -ENOMEM;

        if (tree_get(t, g->path)) {
                free(g);
                return -EEXIST;
        }

        g->depth = parent->depth + 1;
        g->parent = parent;
        g->tracked = tracked;
        g->freeze = freeze;
        g->e_freeze = freeze || parent->e_freeze;
        g->frozen = frozen;
        g->populated = populated;
        g->state = freezer_state_derive(g->freeze, g->e_freeze, g->frozen);

        /* Prepend: O(1) whatever the fan-out. */
        g->next = parent->children;
        if (parent->children)
                parent->children->prev = g;
        parent->children = g;
        parent->n_children++;

        if (t->n_groups >= t->n_buckets)
                hash_resize(t, t->n_buckets * 2);
        hash_insert(t, g);
        t->n_groups++;
        if (tracked)
                t->n_tracked++;

        /* The new group itself is announced by the bus layer, not marked. */
        for (Group *a = parent; a; a = a->parent) {
                a->n_descendants++;
                if (frozen)
                        a->n_frozen_descendants++;
                mark_changed(t, a, GROUP_CHANGED_DESCENDANTS | (frozen ? GROUP_CHANGED_FROZEN_DESCENDANTS : 0));
        }

        if (ret)
                *ret = g;
        return 0;
}

int tree_remove(Tree *t, Group *g, void (*destroy)(Group *g, void *userdata), void *userdata) {
        unsigned n, n_frozen;

        if (!t || !g || g == t->root || !g->parent)
                return -EINVAL;

        n = 1 + g->n_descendants;
        n_frozen = g->frozen + g->n_frozen_descendants;

        /* Unlink from the siblings. */
        if (g->prev)
                g->prev->next = g->next;
        else
                g->parent->children = g->next;
        if (g->next)
                g->next->prev = g->prev;
        g->parent->n_children--;
        g->next = g->prev = NULL;

        for (Group *a = g->parent; a; a = a->parent) {
                assert(a->n_descendants >= n);
                assert(a->n_frozen_descendants >= n_frozen);
                a->n_descendants -= n;
                a->n_frozen_descendants -= n_frozen;
                mark_changed(t, a, GROUP_CHANGED_DESCENDANTS | (n_frozen > 0 ? GROUP_CHANGED_FROZEN_DESCENDANTS : 0));
        }

        destroy_subtree(t, g, destroy, userdata);
        return 0;
}

Group *tree_next_preorder_skip(Group *top, Group *g) {
        for (; g != top; g = g->parent)
                if (g->next)
                        return g->next;
        return NULL;
}

Group *tree_next_preorder(Group *top, Group *g) {
        if (g->children)
                return g->children;
        return tree_next_preorder_skip(top, g);
}

bool tree_parent_freezes(Tree *t, const Group *g) {
        return g->parent ? g->parent->e_freeze : t->outer_freeze;
}

/* Recompute g's effective flag from its own and its parent's (the outer flag
 * for the root), and g's subtree's after it. */
static void update_effective(Tree *t, Group *g) {
        bool e = g->freeze || tree_parent_freezes(t, g);

        if (e == g->e_freeze) {
                /* Only the own flag moved (e.g. FROZEN <-> FROZEN_BY_PARENT);
                 * nothing below can be affected. */
                update_state(t, g);
                return;
        }

        g->e_freeze = e;
        update_state(t, g);

        /* Walk down, skipping every subtree whose effective flag stays put:
         * a child that freezes itself is unaffected by what we do. */
        for (Group *d = g->children; d;) {
                e = d->freeze || d->parent->e_freeze;
                if (e == d->e_freeze) {
                        /* It freezes itself: its state and its subtree stay,
                         * but its parent's effective flag moved, which
                         * GroupStatesChanged carries (bit 2). */
                        mark_changed(t, d, GROUP_CHANGED_PARENT_FREEZES);
                        d = tree_next_preorder_skip(g, d);
                        continue;
                }

                d->e_freeze = e;
                update_state(t, d);
                d = tree_next_preorder(g, d);
        }
}

void tree_set_freeze(Tree *t, Group *g, bool freeze) {
        if (g->freeze == freeze)
                return;

        g->freeze = freeze;
        mark_changed(t, g, GROUP_CHANGED_FREEZE);
        update_effective(t, g);
}

void tree_set_outer_freeze(Tree *t, bool freeze) {
        if (t->outer_freeze == freeze)
                return;

        t->outer_freeze = freeze;
        if (t->root->freeze)
                mark_changed(t, t->root, GROUP_CHANGED_PARENT_FREEZES); /* as for a child, below */
        update_effective(t, t->root);
}

bool tree_outer_freeze(Tree *t) {
        return t->outer_freeze;
}

void tree_set_frozen(Tree *t, Group *g, bool frozen) {
        if (g->frozen == frozen)
                return;

        g->frozen = frozen;
        mark_changed(t, g, GROUP_CHANGED_FROZEN);
        update_state(t, g);

        for (Group *a = g->parent; a; a = a->parent) {
                if (frozen)
                        a->n_frozen_descendants++;
                else {
                        assert(a->n_frozen_descendants > 0);
                        a->n_frozen_descendants--;
                }
                mark_changed(t, a, GROUP_CHANGED_FROZEN_DESCENDANTS);
        }
}

void tree_set_populated(Tree *t, Group *g, bool populated) {
        if (g->populated == populated)
                return;

        g->populated = populated;
        mark_changed(t, g, GROUP_CHANGED_POPULATED);
}

void tree_set_tracked(Tree *t, Group *g, bool tracked) {
        if (g->tracked == tracked)
                return;

        g->tracked = tracked;
        if (tracked)
                t->n_tracked++;
        else
                t->n_tracked--;
}

void tree_requeue_changed(Tree *t, Group *g, unsigned bits) {
        mark_changed(t, g, bits);
}

Group *tree_pop_changed(Tree *t, unsigned *ret_changed) {
        Group *g = t->changed_head;

        if (!g) {
                if (ret_changed)
                        *ret_changed = 0;
                return NULL;
        }

        changed_unlink(t, g);
        if (ret_changed)
                *ret_changed = g->changed;
        g->changed = 0;
        return g;
}

Group *group_child(Group *g, const char *name) {
        if (!name)
                return NULL;

        for (Group *c = g->children; c; c = c->next)
                if (streq(c->name, name))
                        return c;

        return NULL;
}

void tree_forget_changes(Tree *t, Group *g) {
        changed_unlink(t, g);
        g->changed = 0;
}

void tree_unmark_changed(Tree *t, Group *g, unsigned bits) {
        g->changed &= ~bits;
        if (g->changed == 0)
                changed_unlink(t, g);
}
