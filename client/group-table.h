/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a libfreezer handle knows of freezerd's groups while its state callback
 * is installed: each group's last reported state, found by its object path
 * (GroupsChanged, InterfacesAdded/Removed, freezer_list()) and by its Id
 * (GroupStatesChanged names groups by Id only).
 *
 * A storm over 10,000 groups looks up 10,000 entries, so both lookups are
 * hashed (open addressing, linear probing), never a scan or a sorted insert.
 * A removed group's entry leaves the object index at once (so that a group
 * made again under the same path gets an entry of its own) but stays in the
 * array and the Id index, marked removed (an Id is never given twice in a
 * boot, so no signal names it again), until the removed entries outnumber
 * the live ones: then the table is rebuilt from the live ones.  So the memory
 * of removed groups stays bounded by the live ones, and a removal costs no
 * rehash.
 *
 * Pure data structure, no bus: tested on its own (test-group-table). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "freezer.h"

/* Entries beyond this many are not added (the caller treats such a group as
 * one it has not heard of): the indexes are 32 bits wide, and no freezerd
 * follows that many groups (each costs it two inotify watches). */
#ifdef FREEZER_TEST_HOOKS
/* libfreezer's test build (tests/meson.build): a bound the tests can reach. */
extern size_t freezer_test_group_table_max;
#define GROUP_TABLE_MAX freezer_test_group_table_max
#else
#define GROUP_TABLE_MAX (1U << 22)
#endif

typedef struct group_entry {
        uint64_t id;          /* the group's Id; 0 while not known */
        char *object;         /* its object path */
        size_t object_hash;   /* of object, for moving it within the index */
        char *path;           /* its cgroup path; NULL while not known */
        freezer_state state;  /* the last FreezerState reported, if have_state */
        bool frozen;          /* the last Frozen reported, if have_frozen */
        bool have_state;
        bool have_frozen;
        bool removed;         /* InterfacesRemoved: kept until the next rebuild */
} group_entry;

typedef struct group_table {
        group_entry *entries; /* in order of addition */
        size_t n_entries, n_allocated;
        size_t n_removed;
        uint32_t *by_id;      /* 1 + index into entries, 0 = empty slot */
        uint32_t *by_object;
        size_t n_slots;       /* of each index: a power of two, at least twice n_entries; 0 if none */
} group_table;

/* The live entry of object, or NULL. */
group_entry *group_table_get_object(group_table *t, const char *object);

/* The entry of Id id (live or removed), or NULL. */
group_entry *group_table_get_id(group_table *t, uint64_t id);

/* The live entry of object, added (state unknown) if there is none; id and
 * path (either may be 0 / NULL) fill in what the entry does not know yet.
 * An entry whose Id differs from id (the path's old group, removed and made
 * again) is replaced by a new one.  NULL on ENOMEM or at GROUP_TABLE_MAX.  The
 * pointer is valid until the next call that adds or removes. */
group_entry *group_table_put(group_table *t, const char *object, uint64_t id, const char *path);

/* Marks the live entry of object removed (no-op if there is none); rebuilds
 * the table once removed entries outnumber live ones (and are 1,024 or more),
 * which moves the entries: no entry pointer survives this call. */
void group_table_remove_object(group_table *t, const char *object);

/* Forgets every entry. */
void group_table_clear(group_table *t);

/* Live entries. */
size_t group_table_size(const group_table *t);
