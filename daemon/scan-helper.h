/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A second thread for the kernel's part of a big scan.
 *
 * Starting over 10,000 groups is five system calls a group (open and read
 * its cgroup.freeze, watch its directory and that file) and little else: on
 * a virtual machine, where every system call is dear, the scan is bound by
 * them.  They touch nothing of the model, so the groups of one listing can be
 * opened, watched and read from two threads at once, and then put in the
 * model by the main thread alone, in the listing's order (see
 * manager_list_children() in manager.c).  Two threads did the kernel's part
 * of 10,000 such groups in 114-143 ms against 176-254 ms for one.
 *
 * The thread lives for one scan: freezerd is single-threaded at rest (a
 * second thread makes every fd lookup of the process take a reference, see
 * freeze-writer.h).  Every signal is blocked in it. */

#include <stddef.h>

typedef struct ScanHelper ScanHelper;

/* Does item i of items; called from both threads, each i once. */
typedef void (*scan_item_fn)(void *items, size_t i, void *userdata);

/* Starts the thread: 0, or a negative errno (then scan alone). */
int scan_helper_new(ScanHelper **ret);

/* Calls fn(items, i, userdata) for every i < n, from this thread and the
 * helper's, and returns once all are done.  Should the helper not have
 * started on them by the time this thread ran out of items, it does none:
 * this thread never waits for the helper to wake up, only for items it took. */
void scan_helper_run(ScanHelper *h, size_t n, scan_item_fn fn, void *items, void *userdata);

/* Ends the thread (NULL: nothing). */
void scan_helper_free(ScanHelper *h);
