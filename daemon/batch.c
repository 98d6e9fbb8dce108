/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "batch.h"
#include "util.h"

static const char *const order_names[_BATCH_ORDER_MAX] = {
        [BATCH_ORDER_AUTO] = "auto",
        [BATCH_ORDER_TOP_DOWN] = "top-down",
        [BATCH_ORDER_BOTTOM_UP] = "bottom-up",
};

BatchOrder batch_order_from_string(const char *s) {
        if (!s || !*s)
                return BATCH_ORDER_AUTO;
        for (int i = 0; i < _BATCH_ORDER_MAX; i++)
                if (streq(s, order_names[i]))
                        return (BatchOrder) i;
        return _BATCH_ORDER_INVALID;
}

const char *batch_order_to_string(BatchOrder o) {
        return o >= 0 && o < _BATCH_ORDER_MAX ? order_names[o] : NULL;
}

static int cmp_group_then_index(const void *a, const void *b) {
        const BatchItem *x = a, *y = b;
        if (x->group != y->group)
                return x->group < y->group ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

static BatchOrder sort_order;

static int sort_key(const BatchItem *x) {
        switch (sort_order) {
        case BATCH_ORDER_TOP_DOWN:
                return (int) x->group->depth;
        case BATCH_ORDER_BOTTOM_UP:
                return -(int) x->group->depth;
        default:
                /* Freezes first, shallowest first; then thaws, deepest first. */
                return x->freeze ? (int) x->group->depth - (1 << 20) : -(int) x->group->depth;
        }
}

static int cmp_planned(const void *a, const void *b) {
        const BatchItem *x = a, *y = b;
        int kx = sort_key(x), ky = sort_key(y);
        if (kx != ky)
                return kx < ky ? -1 : 1;
        return x->index < y->index ? -1 : x->index > y->index;
}

int batch_plan(BatchItem *items, size_t n, BatchOrder order, size_t *ret_n) {
        size_t k = 0;

        if (order < 0 || order >= _BATCH_ORDER_MAX)
                return -EINVAL;

        /* Last one wins: group equal requests together, keep the highest index. */
        qsort(items, n, sizeof *items, cmp_group_then_index);
        for (size_t i = 0; i < n; i++) {
                if (i + 1 < n && items[i + 1].group == items[i].group)
                        continue;
                items[k++] = items[i];
        }

        sort_order = order;
        qsort(items, k, sizeof *items, cmp_planned);
        *ret_n = k;
        return 0;
}

static bool is_below(const Group *g, const Group *top) {
        for (const Group *a = g->parent; a; a = a->parent)
                if (a == top)
                        return true;
        return false;
}

static bool has_excluded_at_or_below(const Group *g, Group *const *excluded, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (excluded[i] == g || is_below(excluded[i], g))
                        return true;
        return false;
}

static bool is_excluded(const Group *g, Group *const *excluded, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (excluded[i] == g)
                        return true;
        return false;
}

static int cover(Group *g, Group *const *excluded, size_t n_excluded, Group ***list, size_t *n, size_t *cap) {
        if (is_excluded(g, excluded, n_excluded))
                return 0;
        /* The root of the hierarchy has no cgroup.freeze: always descend from it.
         * So from a group that is not tracked (below an untracked root, an
         * ancestor kept for its flag): freezing it would freeze its children
         * that freezerd does not follow. */
        if (g->parent && g->tracked && !has_excluded_at_or_below(g, excluded, n_excluded)) {
                if (*n == *cap) {
                        size_t c = *cap ? *cap * 2 : 16;
                        Group **l = realloc(*list, c * sizeof *l);
                        if (!l)
                                return -ENOMEM;
                        *list = l;
                        *cap = c;
                }
                (*list)[(*n)++] = g;
                return 0;
        }
        for (Group *c = g->children; c; c = c->next) {
                int r = cover(c, excluded, n_excluded, list, n, cap);
                if (r < 0)
                        return r;
        }
        return 0;
}

int batch_cover_except(Group *top, Group *const *excluded, size_t n_excluded, Group ***ret, size_t *ret_n) {
        Group **list = NULL;
        size_t n = 0, cap = 0;
        int r;

        for (size_t i = 0; i < n_excluded; i++)
                if (!is_below(excluded[i], top))
                        return -EINVAL;

        r = cover(top, excluded, n_excluded, &list, &n, &cap);
        if (r < 0) {
                free(list);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}
