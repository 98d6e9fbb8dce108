/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The in-memory model of the cgroup tree.  Pure logic: no I/O, no bus, so it
 * is unit-tested on its own (tests/test-tree.c).
 *
 * Each group keeps
 *   - freeze:    its own cgroup.freeze value,
 *   - e_freeze:  the effective flag (its own or any ancestor's, up to the
 *                outer flag above the root: tree_set_outer_freeze()), as the
 *                kernel's cgroup->freezer.e_freeze,
 *   - frozen:    what the kernel last reported in cgroup.events,
 *   - populated: likewise,
 *   - aggregate counts over its descendants, kept incrementally.
 *
 * As in the kernel series in shared/reference (Chen Ridong, 2024), changing a
 * flag walks only the subtree whose effective state actually changes: a child
 * that freezes itself keeps e_freeze whatever its parent does, so its whole
 * subtree is skipped.  Counts move up by deltas, never by rescanning.
 *
 * Every property change marks the group on a "changed" list with a bit mask,
 * so that the bus layer can emit one PropertiesChanged per changed object per
 * event-loop turn (tree_pop_changed()). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct Tree Tree;
typedef struct Group Group;

typedef enum FreezerState {
        FREEZER_RUNNING,            /* not frozen, nothing asks for it */
        FREEZER_FREEZING,           /* own flag set, kernel not yet frozen */
        FREEZER_FROZEN,             /* own flag set, kernel frozen */
        FREEZER_THAWING,            /* no flag set anywhere, kernel still frozen */
        FREEZER_FREEZING_BY_PARENT, /* own flag clear, an ancestor's set, kernel not yet frozen */
        FREEZER_FROZEN_BY_PARENT,   /* own flag clear, an ancestor's set, kernel frozen */
        _FREEZER_STATE_MAX,
        _FREEZER_STATE_INVALID = -1,
} FreezerState;

/* Bits of Group.changed: which exported properties changed since the bus
 * layer last looked. */
enum {
        GROUP_CHANGED_FREEZE = 1u << 0,
        GROUP_CHANGED_FROZEN = 1u << 1,
        GROUP_CHANGED_STATE = 1u << 2,
        GROUP_CHANGED_POPULATED = 1u << 3,
        GROUP_CHANGED_DESCENDANTS = 1u << 4,
        GROUP_CHANGED_FROZEN_DESCENDANTS = 1u << 5,
        /* Whether an ancestor's flag freezes it (tree_parent_freezes()) moved,
         * while its FreezerState did not (it freezes itself): no property
         * changed, but GroupStatesChanged's bit 2 did. */
        GROUP_CHANGED_PARENT_FREEZES = 1u << 6,
};

struct Group {
        char *path;       /* "/" for the root, else "/a/b": no trailing slash, no "//" */
        uint64_t id;      /* the kernel's cgroup id (its directory's inode number), set by the manager; 0 until */
        const char *name; /* last component (points into path); "" for the root */
        unsigned depth;   /* 0 for the root */

        Group *parent;
        Group *children; /* first child; siblings linked through next/prev */
        Group *next, *prev;
        unsigned n_children;

        /* false only for ancestors of tracked subtrees, kept for their flags.
         * A tracked group's descendants are always tracked. */
        bool tracked;

        bool freeze;
        bool e_freeze;
        bool frozen;
        bool populated;

        unsigned n_descendants;        /* all descendants in the model */
        unsigned n_frozen_descendants; /* descendants whose frozen is true */

        FreezerState state; /* cached, derived from freeze, e_freeze, frozen */

        unsigned changed;   /* GROUP_CHANGED_* bits not yet popped */
        Group *changed_next;
        Group *changed_prev; /* private to tree.c: O(1) removal from the list */
        bool on_changed_list;

        Group *hash_next; /* private to tree.c */

        void *userdata; /* owned by the manager: fds, watches, waiters */
};

Tree *tree_new(void);
/* Calls destroy(g, userdata) for every group (children before parents), then frees all. */
void tree_free(Tree *t, void (*destroy)(Group *g, void *userdata), void *userdata);

Group *tree_root(Tree *t);
Group *tree_get(Tree *t, const char *path); /* O(1) hash lookup; NULL if absent */
unsigned tree_size(Tree *t);                /* number of groups including the root */
unsigned tree_tracked(Tree *t);             /* number of groups with tracked == true */

/* Add a new leaf below parent. The new group's e_freeze is inherited from the
 * parent and its state derived.  Ancestors' n_descendants grow by one, and
 * n_frozen_descendants by one if frozen; they are marked changed.  -EEXIST if
 * a child of that name exists, -EINVAL for a bad name ("", contains '/', "."
 * or ".."), -ENOMEM. */
int tree_add(Tree *t, Group *parent, const char *name, bool tracked, bool freeze, bool frozen, bool populated,
             Group **ret);

/* Remove g and its whole subtree (not the root: -EINVAL).  destroy is called
 * for each removed group, children before parents, before it is freed; removed
 * groups leave the changed list.  Ancestors' counts drop by the subtree's
 * size and frozen count, and they are marked changed. */
int tree_remove(Tree *t, Group *g, void (*destroy)(Group *g, void *userdata), void *userdata);

/* Set a group's own flag. Recomputes e_freeze (and state) down the subtree,
 * skipping each child subtree whose effective flag does not change. No-op if
 * equal. */
void tree_set_freeze(Tree *t, Group *g, bool freeze);
/* A flag above the root (a cgroup.freeze of 1 between the mount and
 * freezerd's cgroup root, which no group of the model holds): the kernel
 * freezes the whole tree for it, so the root's effective flag is its own or
 * this one, and the change walks down as tree_set_freeze()'s does.  Off in a
 * new tree. */
void tree_set_outer_freeze(Tree *t, bool freeze);
bool tree_outer_freeze(Tree *t);
/* Whether an ancestor's flag freezes g: its parent's effective flag, or the
 * outer flag for the root. */
bool tree_parent_freezes(Tree *t, const Group *g);
/* The kernel reported frozen. Updates ancestors' n_frozen_descendants by ±1. */
void tree_set_frozen(Tree *t, Group *g, bool frozen);
void tree_set_populated(Tree *t, Group *g, bool populated);
void tree_set_tracked(Tree *t, Group *g, bool tracked);

/* Pops one group from the changed list (FIFO) and returns it, with its bits
 * in *ret_changed; clears g->changed.  NULL when the list is empty. */
Group *tree_pop_changed(Tree *t, unsigned *ret_changed);
/* Puts a popped g back on the changed list with its bits (its signals wait
 * for later in the turn). */
void tree_requeue_changed(Tree *t, Group *g, unsigned bits);

/* Drop g's pending changes: its announcement (InterfacesAdded) already
 * carries the current values. */
void tree_forget_changes(Tree *t, Group *g);
/* Clear bits of g's pending changes, g leaving the changed list (its place
 * there kept otherwise) once none is left: changes that turned out to change
 * nothing (a refused call's lookups, undone: manager_call_end()). */
void tree_unmark_changed(Tree *t, Group *g, unsigned bits);

/* Whether the kernel is expected to (eventually) report frozen: e_freeze. */
static inline bool group_expect_frozen(const Group *g) {
        return g->e_freeze;
}

/* Derive the state from own flag, effective flag and kernel report:
 *   freeze=1:                frozen ? FROZEN : FREEZING
 *   freeze=0, e_freeze=1:    frozen ? FROZEN_BY_PARENT : FREEZING_BY_PARENT
 *   e_freeze=0:              frozen ? THAWING : RUNNING */
FreezerState freezer_state_derive(bool freeze, bool e_freeze, bool frozen);
const char *freezer_state_to_string(FreezerState s);
FreezerState freezer_state_from_string(const char *s);

/* Pre-order iteration over the subtree rooted at top (top included):
 *   for (Group *g = top; g; g = tree_next_preorder(top, g)) */
Group *tree_next_preorder(Group *top, Group *g);
/* The same, past g's own subtree (not descending below g). */
Group *tree_next_preorder_skip(Group *top, Group *g);

/* Child of g named name, or NULL (linear in the number of children; use
 * tree_get() with a full path for O(1)). */
Group *group_child(Group *g, const char *name);
