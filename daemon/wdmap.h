/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* inotify watch descriptor -> owner.  Watch descriptors are allocated
 * cyclically by the kernel and never reused soon, so an array indexed by wd
 * would grow with every group ever seen; this is a small open-addressing hash
 * table instead (u64table.h's, as u64set.c's). */

#include <stddef.h>
#include <stdint.h>

typedef struct WdMap WdMap;

typedef struct WdEntry {
        uint64_t wd;  /* > 0 when used; first, as u64table.h wants its key */
        unsigned kind;
        void *ptr;
} WdEntry;

WdMap *wdmap_new(void);
void wdmap_free(WdMap *m);
/* Insert or replace. -ENOMEM. */
int wdmap_put(WdMap *m, int wd, void *ptr, unsigned kind);
/* NULL if absent. */
const WdEntry *wdmap_get(const WdMap *m, int wd);
/* Remove wd if present; returns whether it was present. */
int wdmap_remove(WdMap *m, int wd);
size_t wdmap_size(const WdMap *m);
