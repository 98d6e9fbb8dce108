/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Intent journal of batches, for all-or-nothing across a crash.
 *
 * Before a batch (or a single call with rollback) writes its first
 * cgroup.freeze, it records every group's previous and requested flag in
 * <runtime-dir>/journal-<id>.json: written to a temporary file, fsync'd,
 * renamed, and the directory fsync'd.  The file is removed when the batch
 * finishes.  A journal found at start-up belongs to a batch that a crash
 * interrupted: every group in it that still exists gets its previous flag
 * back, newest journal first, each journal's groups in reverse order. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JournalEntry {
        const char *path; /* API path */
        bool prev_freeze;
        bool new_freeze;
} JournalEntry;

/* Write journal-<id>.json atomically; *ret_path is the final path (malloc'ed). */
int journal_write(const char *dir, uint64_t id, const JournalEntry *entries, size_t n, char **ret_path);
int journal_remove(const char *path);

/* Callback: restore path to prev_freeze. Returns 0, or -ENOENT if the group is gone. */
typedef int (*journal_restore_t)(const char *path, bool prev_freeze, void *userdata);

/* Recover every journal in dir (newest id first), calling restore() for each
 * entry in reverse order, then remove it.  A journal that cannot be parsed is
 * renamed to *.broken and logged, never silently dropped.  Returns the number
 * of journals recovered, or -errno (a missing dir is 0).  *ret_max_id gets the
 * largest id seen, so new ids never collide. */
int journal_recover(const char *dir, journal_restore_t restore, void *userdata, uint64_t *ret_max_id);

/* Parse a journal's text (for tests and fuzzing).  On success *ret (entries
 * with malloc'ed paths, free with journal_entries_free()) and *ret_n. */
int journal_parse(const char *text, size_t len, JournalEntry **ret, size_t *ret_n);
void journal_entries_free(JournalEntry *e, size_t n);
