/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Planning of batched requests: pure logic over the tree model, unit-tested
 * in tests/test-batch.c.
 *
 * Order "auto" applies every freeze top-down (shallowest first), then every
 * thaw bottom-up (deepest first).  Flags only rise in the first phase and only
 * fall in the second, so no group is frozen and then thawed (or the reverse)
 * within a batch; freezing an ancestor first makes the freezes of its
 * descendants kernel no-ops (one traversal of the subtree), and clearing
 * descendants first makes the final thaw of their ancestor release the whole
 * subtree at once.  The same two rules as the kernel's own freezer
 * optimisations: skip what does not change, change each subtree once. */

#include <stdbool.h>
#include <stddef.h>

#include "tree.h"

typedef enum BatchOrder {
        BATCH_ORDER_AUTO,
        BATCH_ORDER_TOP_DOWN,
        BATCH_ORDER_BOTTOM_UP,
        _BATCH_ORDER_MAX,
        _BATCH_ORDER_INVALID = -1,
} BatchOrder;

#define BATCH_MAX_REQUESTS 65536
#define BATCH_MAX_EXCLUDES 4096

typedef struct BatchItem {
        Group *group;
        bool freeze;
        size_t index; /* position in the request, for "last one wins" and stable order */
        /* Reached without being named (a RECURSIVE request's subtree,
         * FreezeExcept's cover), or named in an ApplyBatch with SKIP_MISSING:
         * removed a moment ago, before freezerd read its IN_DELETE, or while
         * the call goes on, it is left out instead of failing the call. */
        bool unnamed;
        /* Named (SKIP_MISSING): left out so, before it was written, it counts
         * in the reply's skipped as a request that needed nothing. */
        bool counted;
        /* Its owner's lookup (a caller that is not root) found no directory:
         * removed a moment ago, and let through as unnamed.  Left out without
         * a write: one by path could reach a group made again since under its
         * name, which the caller may not change (batch_start()). */
        bool gone;
} BatchItem;

/* "" and "auto" -> AUTO, "top-down", "bottom-up"; else _BATCH_ORDER_INVALID. */
BatchOrder batch_order_from_string(const char *s);
const char *batch_order_to_string(BatchOrder o);

/* Keep the last request for each group, then sort in place in the given
 * order (stable among equal depths).  Returns the new count; -ENOMEM. */
int batch_plan(BatchItem *items, size_t n, BatchOrder order, size_t *ret_n);

/* The fewest groups whose freezing covers top's subtree except the excluded
 * subtrees: top itself when nothing is excluded below it, else, recursively,
 * at each level the siblings of excluded branches.  Only tracked groups are
 * in it: the root and untracked groups are descended into.  Every excluded
 * group must lie strictly below top (-EINVAL otherwise).  The result is in
 * pre-order; *ret is malloc'ed (may be empty). */
int batch_cover_except(Group *top, Group *const *excluded, size_t n_excluded, Group ***ret, size_t *ret_n);
