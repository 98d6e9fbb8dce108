/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Intent journal of batches, for all-or-nothing across a crash of freezerd.
 *
 * Before a batch (or a single call with rollback) writes its first
 * cgroup.freeze, it records every group's previous and requested flag in
 * <runtime-dir>/journal-<id>.json: written to a temporary file and renamed,
 * so that it is whole or absent.  Not fsync'd: it serves a crash of the
 * process, which the page cache outlives, and never one of the machine,
 * after which the cgroups it names are gone (as is /run, its usual home).
 * For a --runtime-dir that does survive a reboot, it records the kernel's
 * boot id, and a journal of an earlier boot is removed unread.  The file is
 * removed when the batch finishes.  A journal found at start-up belongs to a
 * batch that a crash interrupted: every group in it that still exists gets
 * its previous flag back, newest journal first, each journal's groups in
 * reverse order. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JournalEntry {
        const char *path; /* API path */
        bool prev_freeze;
        bool new_freeze;
} JournalEntry;

/* The running kernel's boot id (/proc/sys/kernel/random/boot_id), read once;
 * NULL if it cannot be read (journals are then written and read without). */
const char *journal_boot_id(void);

/* Write journal-<id>.json atomically, with boot_id unless NULL; *ret_path is
 * the final path (malloc'ed). */
int journal_write(const char *dir, uint64_t id, const char *boot_id, const JournalEntry *entries, size_t n,
                  char **ret_path);
int journal_remove(const char *path);

/* Callback: restore path to prev_freeze. Returns 0, or -ENOENT if the group is gone. */
typedef int (*journal_restore_t)(const char *path, bool prev_freeze, void *userdata);

/* Recover every journal in dir (newest id first), calling restore() for each
 * entry in reverse order, then remove it.  A journal that cannot be parsed is
 * renamed to *.broken and logged, never silently dropped.  One that names a
 * boot other than boot_id (when both are known) is logged and removed without
 * restoring anything.  Returns the number of journals recovered, or -errno (a
 * missing dir is 0).  *ret_max_id gets the largest id seen, so new ids never
 * collide. */
int journal_recover(const char *dir, const char *boot_id, journal_restore_t restore, void *userdata,
                    uint64_t *ret_max_id);

/* Parse a journal's text (for tests and fuzzing).  On success *ret (entries
 * with malloc'ed paths, free with journal_entries_free()), *ret_n and, unless
 * ret_boot_id is NULL, the boot id it records (malloc'ed; NULL if none). */
int journal_parse(const char *text, size_t len, JournalEntry **ret, size_t *ret_n, char **ret_boot_id);
void journal_entries_free(JournalEntry *e, size_t n);
