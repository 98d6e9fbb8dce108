/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who may do what: the access policy of freezerd's bus API as pure decisions
 * (no bus, no file system), unit-tested in tests/test-access.c.
 *
 * manager-bus.c supplies the facts -- the caller's effective uid, from the bus
 * (sd_bus_query_sender_creds(), never read from /proc), and the owner (st_uid)
 * of a group's cgroup.freeze, fstat'ed beneath freezerd's cgroup root -- and
 * turns a refusal into org.freedesktop.DBus.Error.AccessDenied naming the path.
 *
 * The rules (dbus/org.freezerd.Freezer1.xml documents them for clients):
 *   - Reads are open to everyone: properties, GetAll, GetManagedObjects,
 *     ListGroups, GetGroup of a tracked group or of "/", introspection.
 *   - Writing a group's cgroup.freeze (Freeze, Thaw, ApplyBatch, FreezeExcept,
 *     RECURSIVE), tracking or untracking a group, and a pressure trigger on a
 *     group: root (euid 0) on any group; any other uid only on a group whose
 *     cgroup.freeze it owns -- which is what the kernel's delegation model
 *     (and systemd's Delegate=) gives it: the groups it can write itself.  A
 *     request that touches several groups needs every one of them.
 *     A path outside the tracked subtrees is tracked when it is resolved (also
 *     by GetGroup): that is a Track, with Track's rule.
 *   - A system-wide pressure trigger (the Manager's AddPressureTrigger): anyone,
 *     within the per-client and global trigger limits.  /proc/pressure is open
 *     to every process, and an unprivileged process may arm triggers there itself.
 *   - A pressure trigger asked by a caller other than root gets only the
 *     windows the kernel gives unprivileged processes (whole multiples of 2 s),
 *     and is armed as theirs are: freezerd opens its file with
 *     CAP_SYS_RESOURCE lowered (pressure.c, trigger_open()), so that the
 *     kernel updates it from its averages and starts no real-time thread for
 *     it.  freezerd's privilege must not lend anyone the kernel's real-time
 *     polling.
 *   - RemovePressureTrigger needs no uid: only the connection that created a
 *     trigger can remove it (pressure.c), and that frees only what it took.
 *   - No known uid (the bus could not say): nothing but reads. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "Nobody": a caller whose uid is unknown, a group without cgroup.freeze. */
#define ACCESS_UID_INVALID ((uid_t) -1)

typedef enum AccessAction {
        ACCESS_READ,           /* properties, lookups of tracked groups, introspection */
        ACCESS_FREEZE,         /* write a group's cgroup.freeze (freeze or thaw) */
        ACCESS_TRACK,          /* Track(), or resolving a path outside the tracked subtrees */
        ACCESS_UNTRACK,        /* Untrack() */
        ACCESS_GROUP_TRIGGER,  /* AddPressureTrigger on a group */
        ACCESS_SYSTEM_TRIGGER, /* AddPressureTrigger on the Manager (/proc/pressure) */
        ACCESS_REMOVE_TRIGGER, /* RemovePressureTrigger: decided by connection in pressure.c */
        _ACCESS_ACTION_MAX,
        _ACCESS_ACTION_INVALID = -1,
} AccessAction;

/* What the action does, for messages: "freeze or thaw", "track", ... */
const char *access_action_to_string(AccessAction a);

/* Whether a decision needs the group's owner: false when the caller (root)
 * or the action (reads, system-wide triggers) decides alone, so that the bus
 * layer can skip the lookups. */
bool access_needs_owner(AccessAction a, uid_t caller);

/* The decision.  caller: the caller's effective uid (ACCESS_UID_INVALID if
 * unknown); owner: st_uid of the group's cgroup.freeze (ACCESS_UID_INVALID
 * when it has none or it cannot be found; ignored when the action does not
 * concern a group). */
bool access_allowed(AccessAction a, uid_t caller, uid_t owner);

/* A request over n groups (a batch, a RECURSIVE subtree, FreezeExcept's cover)
 * is allowed only if every group is.  Returns the index of the first group
 * refused, or n when all pass. */
size_t access_first_denied(AccessAction a, uid_t caller, const uid_t *owners, size_t n);

/* Windows of pressure triggers: root gets whatever freezerd can arm (its
 * own validation decides); others only whole multiples of 2 s, as the kernel
 * allows unprivileged openers of a pressure file. */
#define ACCESS_UNPRIVILEGED_WINDOW_USEC ((uint64_t) 2000000)
bool access_trigger_window_allowed(uid_t caller, uint64_t window_usec);
