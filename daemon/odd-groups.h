/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Groups freezerd does not follow ("odd" groups here), below groups it
 * follows: those whose names are not UTF-8 that D-Bus can carry, or hold a
 * control character (cg_name_is_publishable(): every listing, reply and
 * signal naming them would fail), those deeper than GROUP_DEPTH_MAX below
 * the root, and those it could not watch (the inotify watch limit, no fd
 * left: manager_add_new()); manager.c leaves them out of the model.  The
 * kernel's flags still reach them, so the calls over a subtree must not
 * forget them: Thaw RECURSIVE clears their flags too, and FreezeExcept
 * refuses a cover that would leave one out.  They are found by listing their
 * parents' directories (a child the model lacks; the caller says which, see
 * OddFollowedFn) and reached by name beneath the cgroup root's fd, never
 * through the model, which does not hold them.  System calls only: no bus,
 * no model. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct OddGroup {
        char *rel;   /* its directory relative to the root fd, raw bytes */
        char *shown; /* its API path with the odd bytes escaped (\xNN): ASCII, for messages */
        bool prev;   /* its cgroup.freeze before odd_groups_write() */
        bool wrote;  /* odd_groups_write() changed it */
        bool skip;   /* left alone by odd_groups_write(): its flag had the value already when the
                      * caller, who may not change it, was checked (check_access_odd()) */
        uint64_t id; /* its cgroup id, from odd_groups_read(); 0 if it was gone */
} OddGroup;

typedef struct OddGroups {
        OddGroup *items; /* bottom-up: each group after every group below it */
        size_t n, cap;
} OddGroups;

/* At most this many in one call (-E2BIG beyond): a subtree whose owner makes
 * odd names by the million must not make freezerd's memory grow with them. */
#define ODD_GROUPS_MAX 65536

/* Whether the child name (raw bytes, a name D-Bus can carry) of the group at
 * the API path parent is followed, i.e. in the caller's model: 1 if so, 0 if
 * not, or -errno.  A name D-Bus cannot carry is never followed, and not
 * asked about. */
typedef int (*OddFollowedFn)(const char *parent, const char *name, void *userdata);

void odd_groups_clear(OddGroups *o);

/* The first child of the group at the API path (normalized) that is not
 * followed, its whole API path escaped as OddGroup.shown (for
 * CG_NAMED_SHOWN()), malloc'ed into *ret (NULL if there is none), and
 * whether it is not followed for its name (else for another cause): 0, or
 * -errno (the group's directory cannot be read). */
int odd_child_find(int root_fd, const char *path, OddFollowedFn followed, void *userdata, char **ret,
                   bool *ret_by_name);

/* Append to o the children of the group at the API path (normalized) that
 * are not followed, and everything below them (whatever its names: none of
 * it is followed), bottom-up.  Fails, o's new items to be dropped by the
 * caller, with -E2BIG past ODD_GROUPS_MAX groups and -ENAMETOOLONG for a
 * group whose cgroup.freeze's path (relative to the root) does not fit
 * PATH_MAX, which no open(2) takes; *ret_where then names (escaped,
 * malloc'ed) the child of path whose subtree it is in.  A group removed
 * meanwhile is left out.  The walk holds no fd between levels: a subtree
 * below the depth freezerd follows can nest thousands of levels. */
int odd_groups_collect(int root_fd, const char *path, OddFollowedFn followed, void *userdata, OddGroups *o,
                       char **ret_where);

/* Read each group's flag into prev and its cgroup id into id, for the
 * batch journal (journal.h) that goes before odd_groups_write(): 0, or
 * -errno of the first group that cannot be read (a group removed meanwhile is
 * none: its id is 0). */
int odd_groups_read(int root_fd, OddGroups *o);

/* Write v to the cgroup.freeze of each group of o whose flag differs (but
 * those marked skip), in o's order, noting what each had.  On the first failure returns -errno with
 * *ret_failed its index (the ones before it are written; a group removed
 * meanwhile is no failure: -ENOENT is skipped).  delay_usec: a pause after
 * each write, for crash tests (FREEZERD_TEST_WRITE_DELAY_USEC), else 0. */
int odd_groups_write(int root_fd, OddGroups *o, bool v, uint64_t delay_usec, size_t *ret_failed);

/* Write back what odd_groups_write() changed, newest first. */
void odd_groups_restore(int root_fd, OddGroups *o);

/* The owner (st_uid) of the group's cgroup.freeze, for the access check
 * (access.h), as manager_freeze_owner() finds it for a group of the model. */
int odd_group_owner(int root_fd, const OddGroup *g, uid_t *ret);

/* The group's cgroup.freeze, read. */
int odd_group_read_flag(int root_fd, const OddGroup *g, bool *ret);
