/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Intent journal of batches, for all-or-nothing across a crash of freezerd.
 *
 * Before a batch (or a single call with rollback) writes its first
 * cgroup.freeze, it records every group's previous and requested flag in a
 * journal file of <runtime-dir>, <runtime-dir>/journal-<slot>.json.  The
 * files are slots: held open, written whole at offset 0 by one pwrite(), and
 * emptied (ftruncate) when the batch finishes, before its reply; an empty
 * file is a free slot.  Two syscalls a batch, where a file made, renamed and
 * removed took five (18 against 40 us a batch on tmpfs here).
 *
 * Whole or absent: the journal is complete before the batch's first flag is
 * written, so one cut short (freezerd killed inside a pwrite() of more than
 * a page) stands for a batch that wrote nothing, and is removed with a
 * notice.  Not fsync'd: it serves a crash of the process, which the page
 * cache outlives, and never one of the machine, after which the cgroups it
 * names are gone (as is /run, its usual home).  For a --runtime-dir that does
 * survive a reboot, it records the kernel's boot id, at the head of the file,
 * and a journal of an earlier boot is removed unread, even one cut short or
 * damaged by a power loss whose head holds that id.  A journal found at start-up belongs to a
 * batch that a crash interrupted: every group in it that still exists gets
 * its previous flag back, newest journal (by the id it records) first, each
 * journal's groups in reverse order.  It records the cgroup root and each
 * group's cgroup id: a restart with another --cgroup-root restores the groups
 * below the recorded one, and a group removed and made again since is
 * another, left alone. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JournalEntry {
        const char *path; /* API path; its bytes as they are for a group not followed for its name
                           * (odd-groups.h), which the journal holds in hex ("raw") */
        bool prev_freeze;
        bool new_freeze;
        /* The kernel's cgroup id of the group (0: unknown, not recorded): a
         * group removed and made again under that name between the crash and
         * the restart is another group, and its flag is not the batch's. */
        uint64_t cgroup_id;
} JournalEntry;

/* The running kernel's boot id (/proc/sys/kernel/random/boot_id), read once;
 * NULL if it cannot be read (journals are then written and read without). */
const char *journal_boot_id(void);

/* The journal slots of one runtime directory.  journal_new() touches no
 * file: slots are made when first needed.  cgroup_root (unless NULL) is
 * recorded in every journal: the entries' paths are relative to it, and a
 * restart with another --cgroup-root must still restore the groups the
 * batch wrote, not others of the same names below the new root. */
typedef struct Journal Journal;

int journal_new(const char *dir, const char *cgroup_root, Journal **ret);
/* Closes the slots; the free ones (empty) are removed, a busy one stays for
 * the next start to recover. */
Journal *journal_free(Journal *j);

/* The most a journal may hold, which a start reads (a batch's journal over it
 * is refused before anything is written: a start would not read it back). */
#define JOURNAL_SIZE_MAX (64u * 1024u * 1024u)

/* Records a batch (its id, boot_id unless NULL, its entries) in a free slot,
 * made if none is; *ret_slot names it for journal_end().  On failure no
 * journal of it is left: -EFBIG if it would hold more than JOURNAL_SIZE_MAX
 * bytes (no file is touched). */
int journal_begin(Journal *j, uint64_t id, const char *boot_id, const JournalEntry *entries, size_t n,
                  unsigned *ret_slot);
/* The batch of that slot is over: the slot is emptied (or removed, past the
 * one slot kept open) and free again.  On failure it is removed, so that no
 * journal of a finished batch is left behind. */
int journal_end(Journal *j, unsigned slot);
/* The path of a slot's file, for messages (valid while j lives). */
const char *journal_slot_path(const Journal *j, unsigned slot);

/* Callback: restore e->path, relative to cgroup_root (the one the journal
 * records; NULL: none recorded, the current one), to e->prev_freeze, unless
 * e->cgroup_id is set and the group of that path now has another id.
 * Returns 0, 1 if it had that flag already (nothing written), -ENOENT if the
 * group is gone, or -ESTALE if the group of that path is another one (removed
 * and made again since): left alone. */
typedef int (*journal_restore_t)(const char *cgroup_root, const JournalEntry *e, void *userdata);

/* Recover every journal in j's directory (newest id first), calling restore() for each
 * entry in reverse order, then remove it (empty it where it cannot be
 * removed: a directory that cannot be changed); empty files (free slots) are
 * removed.  A journal cut short while it was written (a strict prefix of
 * one) is removed with a notice: its batch wrote nothing.  Any other that
 * cannot be parsed, or is no regular file, is renamed to *.broken
 * (*.2.broken... where one is kept already) and logged, never silently
 * dropped.  One that cannot be read for lack of a resource (EMFILE,
 * ENFILE, ENOMEM, ENOBUFS), or interrupted (EINTR, EAGAIN), is left as it
 * is, logged, and the call fails with that error before anything is
 * restored: a later start reads it.  (json-c before 0.17 does not tell a
 * parse that lacked memory: such a journal reads as damaged.)  Any other
 * error reading it (EIO, EACCES) is kept as *.broken, with the error.  A
 * listing of the directory that fails partway fails the call so too, before
 * anything is restored, for lack of a resource or an interruption; for any
 * other error (EIO) it is logged, and the journals read before it are
 * recovered, any others left as they are: then j writes no batch's journal
 * over a file of a slot's name that holds anything (journal_begin() takes
 * another name, with a warning), and *ret_max_id is at least the
 * nanoseconds since boot (CLOCK_BOOTTIME), above any id given in this boot,
 * so that a later start restores those others after the new batches' (ids
 * of a start are the largest one it read plus one a batch).  One that names a
 * boot other than boot_id (when both are known) is logged and removed without
 * restoring anything, also one cut short or damaged whose head names it.  One that records a cgroup root other than
 * j's cgroup root (freezerd restarted with another --cgroup-root) is logged,
 * and its groups restored below the root it records.  The entries whose
 * restore() fails (other than -ENOENT, -ESTALE) are kept in
 * journal-retry-<id>.json, which no slot takes and the next call reads as
 * any journal, so that they are tried again, and which j records, for
 * journal_forget(), as they are written.  Where that cannot be (a
 * directory that cannot be changed), they are given up rather than the
 * journal left whole, whose groups restored now the next call would write
 * back again over what was asked of them since.  Returns the number of
 * journals recovered, or -errno (a missing dir is 0).  *ret_max_id gets the largest id seen, so new ids never
 * collide. */
int journal_recover_into(Journal *j, const char *boot_id, journal_restore_t restore, void *userdata,
                         uint64_t *ret_max_id);
/* The flag of the group of that path (relative to j's cgroup root) and id
 * was set since the start (by freezerd or behind its back), or asked for
 * as it was by a batch: its entry is dropped from the journal-retry files,
 * lest the next start undo that choice; a file left without entries is
 * removed.  Cheap where there are none. */
void journal_forget(Journal *j, const char *path, uint64_t cgroup_id);
/* Whether there is anything for journal_forget() to drop (j may be NULL). */
bool journal_has_retries(const Journal *j);

/* Parse a journal's text (for tests and fuzzing).  On success *ret (entries
 * with malloc'ed paths, free with journal_entries_free()), *ret_n and, unless
 * ret_boot_id is NULL, the boot id it records (malloc'ed; NULL if none), so
 * too the cgroup root, and unless ret_id is NULL the batch id.  -ENODATA: the text is a strict prefix
 * of a journal (cut short); -EPROTONOSUPPORT: a journal of another format
 * version; -EBADMSG: anything else that is not one. */
int journal_parse(const char *text, size_t len, JournalEntry **ret, size_t *ret_n, char **ret_boot_id,
                  char **ret_cgroup_root, uint64_t *ret_id);
void journal_entries_free(JournalEntry *e, size_t n);
