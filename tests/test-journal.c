/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the batch intent journal (daemon/journal.c) in a temporary directory. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/fs.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cgroup-util.h"
#include "journal.h"
#include "log.h"
#include "util.h"
#include "test-util.h"

typedef struct Restored {
        char path[64];
        char root[64];
        bool prev;
        uint64_t cgroup_id;
} Restored;

static Restored restored[64];
static unsigned n_restored;
static bool refuse; /* a path with "refused" in it fails to be restored (EROFS) */

static int restore(const char *cgroup_root, const JournalEntry *e, void *userdata) {
        if (strstr(e->path, "gone"))
                return -ENOENT;
        if (strstr(e->path, "remade"))
                return -ESTALE;
        if (refuse && strstr(e->path, "refused"))
                return -EROFS;
        if (n_restored < ELEMENTSOF(restored)) {
                snprintf(restored[n_restored].path, sizeof restored[0].path, "%s", e->path);
                snprintf(restored[n_restored].root, sizeof restored[0].root, "%s", cgroup_root ?: "(none)");
                restored[n_restored].prev = e->prev_freeze;
                restored[n_restored].cgroup_id = e->cgroup_id;
                n_restored++;
        }
        return 0;
}

/* A start's recovery of dir (journal_recover_into() of a Journal of its own). */
static int recover_dir(const char *dir, const char *boot_id, const char *cgroup_root, journal_restore_t restore_fn,
                       void *userdata, uint64_t *ret_max_id) {
        Journal *j = NULL;
        int r = journal_new(dir, cgroup_root, &j);

        if (r < 0)
                return r;
        r = journal_recover_into(j, boot_id, restore_fn, userdata, ret_max_id);
        journal_free(j);
        return r;
}

static char *slot_file(const char *dir, unsigned k) {
        char *p = NULL;
        CHECK(asprintf(&p, "%s/journal-%u.json", dir, k) > 0);
        return p;
}

static off_t file_size(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 ? st.st_size : -1;
}

static void write_text(const char *path, const char *text) {
        CHECK_R(test_write_file(path, text, strlen(text)), 0);
}

static bool dir_empty(const char *dir) {
        _cleanup_(closedirp) DIR *d = opendir(dir);
        if (!d)
                return false;
        for (struct dirent *de; (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        return false;
        return true;
}

static void test_slots_and_recover(void) {
        char dir[] = "/tmp/test-journal.XXXXXX";
        JournalEntry a[] = { { "/a", false, true }, { "/a/b", true, false }, { "/gone", false, true } };
        JournalEntry b[] = { { "/c", false, true } };
        uint64_t max_id = 0;
        unsigned s0 = 99, s1 = 99, s2 = 99, again = 99;
        Journal *j = NULL;
        struct stat st;

        CHECK(mkdtemp(dir) != NULL);
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK(dir_empty(dir)); /* no file before the first batch */

        CHECK(journal_begin(j, 7, "boot-1", a, ELEMENTSOF(a), &s0) == 0);
        CHECK(journal_begin(j, 9, NULL, b, ELEMENTSOF(b), &s1) == 0); /* no boot id known */
        CHECK(journal_begin(j, 5, "boot-1", b, ELEMENTSOF(b), &s2) == 0);
        CHECK(s0 == 0 && s1 == 1 && s2 == 2);
        _cleanup_free_ char *p0 = slot_file(dir, 0), *p1 = slot_file(dir, 1), *p2 = slot_file(dir, 2);
        CHECK(stat(p0, &st) == 0 && (st.st_mode & 0777) == 0600);
        CHECK(streq(journal_slot_path(j, s0), p0));

        /* What a slot holds: the whole journal, ending in a newline. */
        {
                _cleanup_free_ char *text = NULL, *boot = NULL;
                _cleanup_close_ int fd = open(p0, O_RDONLY | O_CLOEXEC);
                JournalEntry *e = NULL;
                size_t len = 0, n = 0;
                uint64_t id = 0;
                CHECK(fd >= 0 && read_full_fd(fd, 1 << 20, &text, &len) >= 0);
                CHECK(len > 0 && text[len - 1] == '\n');
                CHECK(journal_parse(text, len, &e, &n, &boot, NULL, &id) == 0);
                CHECK(id == 7 && n == 3 && streq_ptr(boot, "boot-1") && streq(e[1].path, "/a/b") && e[1].prev_freeze);
                journal_entries_free(e, n);
                /* Cut short anywhere (freezerd killed inside the pwrite()): a prefix, never taken for a journal. */
                for (size_t k = 0; k + 1 < len; k++)
                        CHECK(journal_parse(text, k, &e, &n, NULL, NULL, NULL) == -ENODATA);
        }

        /* A finished batch's slot is removed (a slot past the first), and the
         * next batch gets a file of that name again. */
        CHECK(journal_end(j, s2) == 0);
        CHECK(file_size(p2) < 0);
        CHECK(journal_begin(j, 10, "boot-1", b, 1, &again) == 0 && again == 2);
        CHECK(file_size(p2) > 0);
        CHECK(journal_end(j, again) == 0);
        CHECK(journal_end(j, again) == -EINVAL); /* not busy */

        /* A journal cut short is removed; a damaged one is kept for a human. */
        _cleanup_free_ char *cut = NULL, *broken = NULL, *kept = NULL;
        CHECK(asprintf(&cut, "%s/journal-40.json", dir) > 0);
        write_text(cut, "{\"version\":1,\"id\":40,\"groups\":[{\"path\":\"/a\",\"pr");
        CHECK(asprintf(&broken, "%s/journal-3.json", dir) > 0);
        write_text(broken, "{\"version\":1,\"groups\":[{\"path\":}]}\n");

        /* A crash: the busy slots stay (journal_free() as at exit). */
        j = journal_free(j);
        CHECK(file_size(p0) > 0 && file_size(p1) > 0);
        CHECK(stat(p2, &st) < 0 && errno == ENOENT);

        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", NULL, restore, NULL, &max_id) == 2);
        CHECK(max_id == 9);
        /* Newest journal (by its id, not its slot) first, each in reverse order; /gone is skipped. */
        CHECK(n_restored == 3);
        CHECK(streq(restored[0].path, "/c") && restored[0].prev == false);
        CHECK(streq(restored[1].path, "/a/b") && restored[1].prev == true);
        CHECK(streq(restored[2].path, "/a") && restored[2].prev == false);
        CHECK(stat(p0, &st) < 0 && errno == ENOENT);
        CHECK(stat(p1, &st) < 0 && errno == ENOENT);
        CHECK(stat(cut, &st) < 0 && errno == ENOENT);
        CHECK(asprintf(&kept, "%s.broken", broken) > 0);
        CHECK(stat(kept, &st) == 0);
        /* A second damaged journal in that slot is kept next to the first
         * (until session 34 it replaced it). */
        {
                _cleanup_free_ char *kept2 = NULL;
                write_text(broken, "not json\n");
                CHECK(recover_dir(dir, "boot-1", NULL, restore, NULL, &max_id) == 0);
                CHECK(stat(broken, &st) < 0 && errno == ENOENT);
                CHECK(stat(kept, &st) == 0 && st.st_size == (off_t) strlen("{\"version\":1,\"groups\":[{\"path\":}]}\n"));
                CHECK(asprintf(&kept2, "%s.2.broken", broken) > 0);
                CHECK(stat(kept2, &st) == 0 && st.st_size == (off_t) strlen("not json\n"));
                unlink(kept2);
        }
        unlink(kept);
        CHECK(dir_empty(dir));

        /* Nothing left: a second recovery does nothing; a free slot (empty) is removed quietly. */
        write_text(p0, "");
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", NULL, restore, NULL, &max_id) == 0);
        CHECK(n_restored == 0 && dir_empty(dir));

        /* Many batches at once: the slots past the one kept are removed when their batch ends. */
        {
                unsigned slots[12];
                CHECK(journal_new(dir, NULL, &j) == 0);
                for (unsigned i = 0; i < ELEMENTSOF(slots); i++)
                        CHECK(journal_begin(j, 100 + i, NULL, b, 1, &slots[i]) == 0 && slots[i] == i);
                for (unsigned i = 0; i < ELEMENTSOF(slots); i++)
                        CHECK(journal_end(j, slots[i]) == 0);
                for (unsigned i = 0; i < ELEMENTSOF(slots); i++) {
                        _cleanup_free_ char *p = slot_file(dir, i);
                        CHECK(i < 1 ? file_size(p) == 0 : file_size(p) < 0);
                }
                j = journal_free(j);
                CHECK(dir_empty(dir));
        }

        /* The kept slot's file removed behind freezerd's back: the next batch
         * makes it again, so its journal is where the next start looks. */
        {
                _cleanup_free_ char *p = slot_file(dir, 0);
                CHECK(journal_new(dir, NULL, &j) == 0);
                CHECK(journal_begin(j, 20, "boot-1", a, 1, &s0) == 0 && s0 == 0);
                CHECK(journal_end(j, s0) == 0);
                CHECK(unlink(p) == 0);
                CHECK(journal_begin(j, 21, "boot-1", a, 1, &s0) == 0 && s0 == 0);
                CHECK(file_size(p) > 0);
                CHECK(journal_end(j, s0) == 0);
                CHECK(file_size(p) == 0);
                j = journal_free(j);
                CHECK(dir_empty(dir));
        }

        /* The whole directory removed (a cleaner of /run): a batch cannot
         * record its journal (-ENOENT: the call fails, nothing written); once
         * the directory is made again, the next batch's journal goes there. */
        {
                _cleanup_free_ char *p = slot_file(dir, 0);
                CHECK(journal_new(dir, NULL, &j) == 0);
                CHECK(journal_begin(j, 22, "boot-1", a, 1, &s0) == 0 && s0 == 0);
                CHECK(journal_end(j, s0) == 0);
                CHECK(unlink(p) == 0 && rmdir(dir) == 0);
                CHECK(journal_begin(j, 23, "boot-1", a, 1, &s0) == -ENOENT);
                CHECK(mkdir(dir, 0700) == 0);
                CHECK(journal_begin(j, 24, "boot-1", a, 1, &s0) == 0);
                CHECK(file_size(p) > 0);
                CHECK(journal_end(j, s0) == 0);
                j = journal_free(j);
                CHECK(dir_empty(dir));
        }

        /* A journal of another boot is removed unread; one without a boot id,
         * or read where the boot id is unknown, is restored. */
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK(journal_begin(j, 11, "boot-1", a, 1, &s0) == 0);
        CHECK(journal_begin(j, 12, NULL, b, 1, &s1) == 0);
        j = journal_free(j);
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-2", NULL, restore, NULL, &max_id) == 1);
        CHECK(max_id == 12);
        CHECK(n_restored == 1 && streq(restored[0].path, "/c"));
        CHECK(dir_empty(dir));

        /* Damaged (cut short, or NUL bytes after its head: a power loss on a
         * disk), the boot id at its head still tells a journal of another
         * boot: removed, not kept as *.broken (until session 34).  One of
         * this boot so damaged is kept. */
        {
                static const char head[] = "{\"version\":1,\"id\":14,\"boot\":\"boot-0\",\"groups\":[{\"pa";
                static const char mine[] = "{\"version\":1,\"id\":15,\"boot\":\"boot-2\",\"groups\":[{\"pa";
                char buf[sizeof head - 1 + 4096] = {};
                _cleanup_free_ char *cut5 = NULL, *nul = NULL, *nul2 = NULL, *kept2 = NULL;
                CHECK(asprintf(&cut5, "%s/journal-5.json", dir) > 0);
                CHECK(asprintf(&nul, "%s/journal-6.json", dir) > 0);
                CHECK(asprintf(&nul2, "%s/journal-7.json", dir) > 0);
                write_text(cut5, head);
                memcpy(buf, head, sizeof head - 1);
                _cleanup_close_ int fd = open(nul, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                CHECK(fd >= 0 && write(fd, buf, sizeof buf) == (ssize_t) sizeof buf);
                memcpy(buf, mine, sizeof mine - 1);
                _cleanup_close_ int fd2 = open(nul2, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                CHECK(fd2 >= 0 && write(fd2, buf, sizeof buf) == (ssize_t) sizeof buf);
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-2", NULL, restore, NULL, &max_id) == 0);
                CHECK(n_restored == 0);
                CHECK(stat(cut5, &st) < 0 && errno == ENOENT);
                CHECK(stat(nul, &st) < 0 && errno == ENOENT);
                CHECK(asprintf(&kept2, "%s.broken", nul2) > 0);
                CHECK(stat(kept2, &st) == 0);
                CHECK(unlink(kept2) == 0);
                CHECK(dir_empty(dir));
        }
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK(journal_begin(j, 13, "boot-1", a, 1, &s0) == 0);
        j = journal_free(j);
        n_restored = 0;
        CHECK(recover_dir(dir, NULL, NULL, restore, NULL, &max_id) == 1);
        CHECK(n_restored == 1 && streq(restored[0].path, "/a"));

        /* The journals of a freezerd from before the slots (journal-<id>.json, no newline) too. */
        _cleanup_free_ char *old = NULL;
        CHECK(asprintf(&old, "%s/journal-17.json", dir) > 0);
        write_text(old, "{\"version\":1,\"id\":17,\"groups\":[{\"path\":\"/c\",\"prev\":true,\"new\":false}]}");
        n_restored = 0;
        CHECK(recover_dir(dir, NULL, NULL, restore, NULL, &max_id) == 1);
        CHECK(max_id == 17 && n_restored == 1 && streq(restored[0].path, "/c") && restored[0].prev);
        CHECK(streq(restored[0].root, "(none)") && restored[0].cgroup_id == 0); /* neither recorded then */
        CHECK(rmdir(dir) == 0);

        /* The cgroup root and each group's cgroup id are recorded and handed
         * back to the restore; a group made again since (-ESTALE) counts as
         * gone and is not restored. */
        {
                JournalEntry c[] = {
                        { .path = "/r/x", .prev_freeze = true, .new_freeze = false, .cgroup_id = 4242 },
                        { .path = "/r/remade", .prev_freeze = true, .new_freeze = false, .cgroup_id = 77 },
                        { .path = "/r/y", .prev_freeze = false, .new_freeze = true }, /* id unknown: none recorded */
                };
                _cleanup_free_ char *slot = slot_file(dir, 0), *text = NULL, *root = NULL;
                JournalEntry *e = NULL;
                size_t n = 0, len = 0;

                CHECK(mkdir(dir, 0700) == 0);
                CHECK(journal_new(dir, "/sys/fs/cgroup/old", &j) == 0);
                CHECK(journal_begin(j, 30, "boot-1", c, ELEMENTSOF(c), &s0) == 0);
                {
                        _cleanup_close_ int fd = open(slot, O_RDONLY | O_CLOEXEC);
                        CHECK(fd >= 0 && read_full_fd(fd, 1 << 20, &text, &len) >= 0);
                }
                CHECK(journal_parse(text, len, &e, &n, NULL, &root, NULL) == 0);
                CHECK(n == 3 && streq_ptr(root, "/sys/fs/cgroup/old"));
                CHECK(e[0].cgroup_id == 4242 && e[1].cgroup_id == 77 && e[2].cgroup_id == 0);
                CHECK(!strstr(text, "\"/r/y\",\"prev\":false,\"new\":true,\"cgroup\""));
                journal_entries_free(e, n);
                j = journal_free(j);
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", "/sys/fs/cgroup/new", restore, NULL, &max_id) == 1);
                CHECK(n_restored == 2);
                CHECK(streq(restored[0].path, "/r/y") && streq(restored[0].root, "/sys/fs/cgroup/old") &&
                      restored[0].cgroup_id == 0);
                CHECK(streq(restored[1].path, "/r/x") && restored[1].cgroup_id == 4242);
                CHECK(dir_empty(dir));
                CHECK(rmdir(dir) == 0);
        }

        /* A path that is no UTF-8 JSON can carry (a group freezerd does not
         * follow for its name): escaped in "path", its bytes in "raw", read
         * back as they were. */
        {
                JournalEntry c[] = {
                        { .path = "/p/bad\xff/in", .prev_freeze = true, .new_freeze = false, .cgroup_id = 9 },
                        { .path = "/p/ctl\x01", .prev_freeze = true, .new_freeze = false },
                        { .path = "/p/caf\xc3\xa9", .prev_freeze = false, .new_freeze = true },
                };
                _cleanup_free_ char *slot = slot_file(dir, 0), *text = NULL;
                JournalEntry *e = NULL;
                size_t n = 0, len = 0;

                CHECK(mkdir(dir, 0700) == 0);
                CHECK(journal_new(dir, NULL, &j) == 0);
                CHECK(journal_begin(j, 31, "boot-1", c, ELEMENTSOF(c), &s0) == 0);
                {
                        _cleanup_close_ int fd = open(slot, O_RDONLY | O_CLOEXEC);
                        CHECK(fd >= 0 && read_full_fd(fd, 1 << 20, &text, &len) >= 0);
                }
                /* ASCII but for the UTF-8 name, which stays as it is. */
                CHECK(strstr(text, "\"path\":\"/p/bad\\\\xff/in\",\"raw\":\"2f702f626164ff2f696e\""));
                CHECK(strstr(text, "\"path\":\"/p/ctl\\\\x01\",\"raw\":\"2f702f63746c01\""));
                CHECK(strstr(text, "\"path\":\"/p/caf\xc3\xa9\",\"prev\""));
                CHECK(journal_parse(text, len, &e, &n, NULL, NULL, NULL) == 0);
                CHECK(n == 3 && streq(e[0].path, c[0].path) && streq(e[1].path, c[1].path) &&
                      streq(e[2].path, c[2].path) && e[0].cgroup_id == 9);
                journal_entries_free(e, n);
                j = journal_free(j);
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", NULL, restore, NULL, &max_id) == 1);
                CHECK(n_restored == 3 && streq(restored[2].path, "/p/bad\xff/in") && streq(restored[1].path, "/p/ctl\x01"));
                CHECK(dir_empty(dir));
                CHECK(rmdir(dir) == 0);
        }

        /* A missing directory is not an error. */
        CHECK(recover_dir("/nonexistent/freezerd", "boot-1", NULL, restore, NULL, &max_id) == 0);
}

static void test_parse(void) {
        JournalEntry *e = NULL;
        size_t n = 0;
        const char *ok = "{\"version\":1,\"id\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true,\"new\":false}]}";

        char *boot = (char *) "untouched";
        uint64_t id = 0;
        CHECK(journal_parse(ok, strlen(ok), &e, &n, &boot, NULL, &id) == 0);
        CHECK(n == 1 && streq(e[0].path, "/x") && e[0].prev_freeze && !e[0].new_freeze);
        CHECK(boot == NULL && id == 1);
        journal_entries_free(e, n);

        /* With the newline freezerd puts after it; without an id (taken as 0). */
        _cleanup_free_ char *nl = NULL;
        CHECK(asprintf(&nl, "%s\n", ok) > 0);
        CHECK(journal_parse(nl, strlen(nl), &e, &n, NULL, NULL, &id) == 0 && id == 1);
        journal_entries_free(e, n);
        const char *no_id = "{\"version\":1,\"groups\":[]}";
        CHECK(journal_parse(no_id, strlen(no_id), &e, &n, NULL, NULL, &id) == 0 && id == 0);
        journal_entries_free(e, n);

        const char *with_boot = "{\"version\":1,\"id\":1,\"boot\":\"b-1\",\"groups\":[]}";
        CHECK(journal_parse(with_boot, strlen(with_boot), &e, &n, &boot, NULL, NULL) == 0);
        CHECK(n == 0 && streq_ptr(boot, "b-1"));
        free(boot);
        journal_entries_free(e, n);
        CHECK(journal_parse(with_boot, strlen(with_boot), &e, &n, NULL, NULL, NULL) == 0);
        journal_entries_free(e, n);

        /* What freezerd writes carries the running kernel's boot id. */
        const char *boot_id = journal_boot_id();
        CHECK(boot_id && strlen(boot_id) == 36);

        /* Cut short: the empty text, and a prefix; a prefix then a newline is no journal of ours. */
        CHECK(journal_parse("", 0, &e, &n, NULL, NULL, NULL) == -ENODATA);
        CHECK(journal_parse(ok, strlen(ok) - 1, &e, &n, NULL, NULL, NULL) == -ENODATA);
        CHECK(journal_parse("{\"version\":1\n", 13, &e, &n, NULL, NULL, NULL) == -EBADMSG);

        const char *bad[] = {
                "[]",
                "{\"version\":1}",
                "{\"version\":1,\"groups\":[{\"path\":\"x\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":1,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true}]}",
                "{\"version\":1,\"groups\":[]} trailing",
                "{\"version\":1,\"boot\":5,\"groups\":[]}",
                "{\"version\":1,\"id\":-1,\"groups\":[]}",
                "{\"version\":1,\"id\":\"7\",\"groups\":[]}",
                "{\"version\":1,\"root\":5,\"groups\":[]}",
                "{\"version\":1,\"root\":\"sys/fs/cgroup\",\"groups\":[]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true,\"new\":false,\"cgroup\":-3}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true,\"new\":false,\"cgroup\":\"3\"}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":5,\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"2f7\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"2f7g\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"2F78\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"78\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"2f0078\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"raw\":\"\",\"prev\":true,\"new\":false}]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                CHECK(journal_parse(bad[i], strlen(bad[i]), &e, &n, NULL, NULL, NULL) == -EBADMSG);

        /* Another format version is told apart from damage (the log says so);
         * a version that is no integer is damage. */
        const char *other[] = {
                "{\"version\":2,\"groups\":[]}",
                "{\"version\":0,\"id\":3,\"groups\":[{\"path\":\"/x\",\"prev\":true,\"new\":false}]}",
                "{\"version\":4294967297,\"groups\":[]}",
                "{\"version\":2,\"entries\":{}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(other); i++)
                CHECK(journal_parse(other[i], strlen(other[i]), &e, &n, NULL, NULL, NULL) == -EPROTONOSUPPORT);
        CHECK(journal_parse("{\"version\":\"1\",\"groups\":[]}", 27, &e, &n, NULL, NULL, NULL) == -EBADMSG);
}

/* The retry file of test_keep_failed(), once /refused is forgotten: batch 8's
 * /refused2 alone, 0 -> 1. */
static void check_retry_holds_refused2(const char *retry) {
        _cleanup_free_ char *t = NULL;
        _cleanup_close_ int fd = open(retry, O_RDONLY | O_CLOEXEC);
        JournalEntry *e = NULL;
        char *boot = NULL, *root = NULL;
        uint64_t id = 0;
        size_t len = 0, n = 0;

        CHECK(fd >= 0 && read_full_fd(fd, 1 << 20, &t, &len) >= 0);
        CHECK(t && journal_parse(t, len, &e, &n, &boot, &root, &id) == 0);
        CHECK(id == 8 && streq_ptr(boot, "boot-1") && streq_ptr(root, "/cg"));
        CHECK(n == 1 && streq(e[0].path, "/refused2") && !e[0].prev_freeze && e[0].new_freeze);
        journal_entries_free(e, n);
        free(boot);
        free(root);
}

/* The groups that could not be restored are kept in journal-retry-<id>.json
 * (until session 34 they were lost with their journal), with the boot id and
 * cgroup root of this start where the journal had none; the next start
 * restores them, and a batch's slot never takes that file. */
static int set_immutable(const char *path, bool on);
static void clear_immutable(const char *path);

static void test_keep_failed(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *slot = NULL, *retry = NULL, *text = NULL;
        JournalEntry *e = NULL;
        char *boot = NULL, *root = NULL;
        size_t n = 0, len = 0;
        uint64_t max_id = 0, id = 0;
        Journal *j = NULL;
        unsigned s0 = 0;
        struct stat st;

        CHECK(dir);
        CHECK(asprintf(&slot, "%s/journal-0.json", dir) > 0);
        CHECK(asprintf(&retry, "%s/journal-retry-8.json", dir) > 0);
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/ok\",\"prev\":true,\"new\":false},"
                         "{\"path\":\"/refused\",\"prev\":true,\"new\":false,\"cgroup\":5},"
                         "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        refuse = true;
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
        CHECK(max_id == 8 && n_restored == 1 && streq(restored[0].path, "/ok"));
        CHECK(stat(slot, &st) < 0 && errno == ENOENT);
        {
                _cleanup_close_ int fd = open(retry, O_RDONLY | O_CLOEXEC);
                CHECK(fd >= 0 && read_full_fd(fd, 1 << 20, &text, &len) >= 0);
        }
        CHECK(text && journal_parse(text, len, &e, &n, &boot, &root, &id) == 0);
        CHECK(id == 8 && boot && streq(boot, "boot-1") && root && streq(root, "/cg"));
        CHECK(n == 2 && streq(e[0].path, "/refused") && e[0].prev_freeze && e[0].cgroup_id == 5 &&
              streq(e[1].path, "/refused2") && !e[1].prev_freeze && e[1].new_freeze);
        journal_entries_free(e, n);
        free(boot);
        free(root);

        /* A batch takes the slot, a crash leaves it: the kept file is not written over. */
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(journal_begin(j, 9, "boot-1", &(JournalEntry) { .path = "/x", .new_freeze = true }, 1, &s0) == 0);
        j = journal_free(j);
        CHECK(file_size(retry) == (off_t) len);

        /* Refused again, then restored: the next starts try again until it is. */
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 2);
        CHECK(max_id == 9 && n_restored == 1 && streq(restored[0].path, "/x"));
        CHECK(file_size(retry) == (off_t) len);
        refuse = false;
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
        CHECK(max_id == 8);
        CHECK(n_restored == 2 && streq(restored[0].path, "/refused2") && streq(restored[1].path, "/refused"));
        CHECK(streq(restored[0].root, "/cg"));
        CHECK(dir_empty(dir));

        /* A flag written since the start is not written back at the next:
         * its entry is dropped (the same path of another cgroup id, or below
         * another root, is another group), the file removed once empty. */
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/refused\",\"prev\":true,\"new\":false,"
                         "\"cgroup\":5},{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        refuse = true;
        CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
        CHECK(file_size(retry) > 0);
        CHECK(journal_new(dir, "/other", &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        off_t size = file_size(retry);
        journal_forget(j, "/refused2", 0);
        CHECK(file_size(retry) == size);
        j = journal_free(j);
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        journal_forget(j, "/refused", 6);
        CHECK(file_size(retry) == size);
        journal_forget(j, "/refused", 5);
        CHECK(file_size(retry) > 0 && file_size(retry) < size);
        j = journal_free(j);
        /* (read again by the next start) */
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        /* A file that cannot be changed (its directory gone for a moment)
         * keeps the entry in memory too: the group's next change tries again. */
        char moved[sizeof tmpl + 8];
        snprintf(moved, sizeof moved, "%s.moved", dir);
        CHECK(rename(dir, moved) == 0);
        journal_forget(j, "/refused2", 0);
        CHECK(rename(moved, dir) == 0);
        CHECK(file_size(retry) > 0);
        journal_forget(j, "/refused2", 0);
        CHECK(file_size(retry) < 0);
        journal_forget(j, "/refused2", 0);
        j = journal_free(j);

        /* journal_recover_into() knows the files it keeps as it writes them. */
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/ok\",\"prev\":true,\"new\":false},"
                         "{\"path\":\"/refused\",\"prev\":true,\"new\":false,\"cgroup\":5},"
                         "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(!journal_has_retries(j));
        n_restored = 0;
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        CHECK(max_id == 8 && n_restored == 1 && journal_has_retries(j));
        size = file_size(retry);
        journal_forget(j, "/refused", 5);
        CHECK(file_size(retry) > 0 && file_size(retry) < size);
        check_retry_holds_refused2(retry);
        journal_forget(j, "/refused2", 0);
        CHECK(file_size(retry) < 0 && !journal_has_retries(j));
        j = journal_free(j);

        /* A retry file that cannot be replaced (its directory immutable) is
         * still known to journal_forget(), and written over in place: until
         * session 36 the entry was dropped in memory only, and a stop before
         * the group changed again left it to the next start, which wrote the
         * flag back, undoing what was asked since. */
        write_text(retry, "{\"version\":1,\"id\":8,\"boot\":\"boot-1\",\"groups\":["
                          "{\"path\":\"/refused\",\"prev\":true,\"new\":false,\"cgroup\":5},"
                          "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        CHECK(journal_new(dir, "/cg", &j) == 0);
        int r = set_immutable(dir, true);
        if (r < 0)
                fprintf(stderr, "test-journal: cannot make %s immutable (%s): a retry file kept as it is not checked\n",
                        dir, strerror(-r));
        else {
                CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
                CHECK(journal_has_retries(j) && file_size(retry) > 0);
                size = file_size(retry);
                journal_forget(j, "/refused", 5);
                CHECK(file_size(retry) > 0 && file_size(retry) < size);
                check_retry_holds_refused2(retry);
                journal_forget(j, "/refused2", 0);
                CHECK(file_size(retry) == 0 && !journal_has_retries(j));
                clear_immutable(dir);
                j = journal_free(j);
                /* The next start writes nothing back, and removes the file. */
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 0);
                CHECK(n_restored == 0 && file_size(retry) < 0);
        }
        j = journal_free(j);
        (void) unlink(retry);

        /* In a directory that cannot be changed, the groups restored are not
         * kept either (until session 36 the whole journal stayed, and the
         * next start wrote every group of it back, undoing what batches
         * asked of them meanwhile): a slot's journal is emptied (the failed
         * groups not tried again: journal_forget() must not write a slot's
         * file), a retry file written over in place with the failed ones. */
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/ok\",\"prev\":true,\"new\":false},"
                         "{\"path\":\"/refused\",\"prev\":true,\"new\":false}]}\n");
        write_text(retry, "{\"version\":1,\"id\":7,\"boot\":\"boot-1\",\"groups\":["
                          "{\"path\":\"/ok2\",\"prev\":true,\"new\":false},"
                          "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        _cleanup_free_ char *retry7 = NULL;
        CHECK(asprintf(&retry7, "%s/journal-retry-7.json", dir) > 0);
        CHECK(rename(retry, retry7) == 0);
        CHECK(journal_new(dir, "/cg", &j) == 0);
        r = set_immutable(dir, true);
        if (r < 0)
                fprintf(stderr, "test-journal: cannot make %s immutable (%s): journals that cannot be kept are not "
                        "checked\n", dir, strerror(-r));
        else {
                n_restored = 0;
                CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 2);
                clear_immutable(dir);
                CHECK(n_restored == 2 && streq(restored[0].path, "/ok") && streq(restored[1].path, "/ok2"));
                CHECK(file_size(slot) == 0);
                j = journal_free(j);
                /* The next start: only /refused2 again. */
                refuse = false;
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
                CHECK(n_restored == 1 && streq(restored[0].path, "/refused2"));
        }
        j = journal_free(j);
        (void) unlink(slot);
        (void) unlink(retry7);
        refuse = false;
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

/* A journal a start would not read back (more than JOURNAL_SIZE_MAX: until
 * session 35 nothing limited what a batch wrote, and the next start kept it
 * as damaged, restoring nothing) is refused before any file is touched; one
 * of that size exactly is written and restored. */
static void test_size_limit(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        enum { N = 16 };
        JournalEntry e[N];
        _cleanup_free_ char *path = NULL, *paths = NULL;
        size_t base, extra, len[N];
        uint64_t max_id = 0;
        Journal *j = NULL;
        unsigned s0 = 99;

        CHECK(dir);
        /* The size of a journal of N entries of paths of 2 bytes, to size
         * the paths so that the whole is JOURNAL_SIZE_MAX bytes exactly. */
        for (size_t i = 0; i < N; i++)
                e[i] = (JournalEntry) { .path = "/a", .prev_freeze = true, .cgroup_id = 1000 + i };
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(journal_begin(j, 1, "boot-1", e, N, &s0) == 0 && s0 == 0);
        CHECK(asprintf(&path, "%s/journal-0.json", dir) > 0);
        base = (size_t) file_size(path);
        CHECK(journal_end(j, s0) == 0);
        extra = JOURNAL_SIZE_MAX - base;
        paths = malloc(JOURNAL_SIZE_MAX + 2 * N); /* (room for one byte more) */
        CHECK(paths);
        if (!paths)
                return;
        for (size_t i = 0, off = 0; i < N; i++) {
                len[i] = 2 + extra / N + (i == N - 1 ? extra % N : 0);
                memset(paths + off, 'a', len[i] + 1);
                paths[off] = '/';
                paths[off + len[i]] = paths[off + len[i] + 1] = 0;
                e[i].path = paths + off;
                off += len[i] + 2;
        }
        CHECK(journal_begin(j, 2, "boot-1", e, N, &s0) == 0 && s0 == 0);
        CHECK(file_size(path) == (off_t) JOURNAL_SIZE_MAX);
        j = journal_free(j); /* a crash: the journal stays */

        /* Read back whole by the next start. */
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
        CHECK(max_id == 2 && n_restored == N && restored[0].prev);
        CHECK(dir_empty(dir));

        /* One byte more: refused, the free slot not even made. */
        CHECK(journal_new(dir, "/cg", &j) == 0);
        paths[len[N - 1] + (size_t) (e[N - 1].path - paths)] = 'a';
        CHECK_R(journal_begin(j, 3, "boot-1", e, N, &s0), -EFBIG);
        CHECK(dir_empty(dir));
        j = journal_free(j);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

/* A slot's name that holds what the start could not move away: written over
 * if it is a file this process can write (as the start left it to be), else
 * no slot, and batches take the next name (until session 35 every batch
 * failed there, at every start, until someone removed the file). */
static void test_slot_taken(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        JournalEntry a[] = { { "/a", false, true } };
        _cleanup_free_ char *p0 = NULL, *p1 = NULL, *p2 = NULL;
        unsigned s0 = 99, s1 = 99;
        Journal *j = NULL;

        CHECK(dir);
        p0 = slot_file(dir, 0);
        p1 = slot_file(dir, 1);
        p2 = slot_file(dir, 2);
        CHECK(mkdir(p0, 0700) == 0);
        CHECK(mkfifo(p1, 0600) == 0);
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK_R(journal_begin(j, 1, NULL, a, 1, &s0), 0);
        CHECK(s0 == 2 && streq(journal_slot_path(j, s0), p2) && file_size(p2) > 0);
        /* The one slot kept between batches is that one now. */
        CHECK(journal_end(j, s0) == 0);
        CHECK(file_size(p2) == 0);
        CHECK(journal_begin(j, 2, NULL, a, 1, &s0) == 0 && s0 == 2);
        CHECK(journal_begin(j, 3, NULL, a, 1, &s1) == 0 && s1 == 3);
        CHECK(journal_end(j, s1) == 0);
        _cleanup_free_ char *p3 = slot_file(dir, 3);
        CHECK(file_size(p3) < 0);
        CHECK(journal_end(j, s0) == 0);
        j = journal_free(j);
        CHECK(file_size(p2) < 0);
        struct stat st;
        CHECK(stat(p0, &st) == 0 && S_ISDIR(st.st_mode));
        CHECK(stat(p1, &st) == 0 && S_ISFIFO(st.st_mode));
        CHECK(rmdir(p0) == 0 && unlink(p1) == 0);

        /* A file it can write is written over. */
        write_text(p0, "{\"version\":1,\"groups\":[{\"path\":}]}\n");
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK(journal_begin(j, 4, NULL, a, 1, &s0) == 0 && s0 == 0);
        CHECK(journal_end(j, s0) == 0 && file_size(p0) == 0);
        j = journal_free(j);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

static int set_immutable(const char *path, bool on) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int flags;

        if (fd < 0 || ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
                return -errno;
        flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
        return ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0 ? -errno : 0;
}

/* An immutable directory left behind only root with chattr -i removes: say
 * which. */
static void clear_immutable(const char *path) {
        int r = set_immutable(path, false);

        if (r < 0) {
                fprintf(stderr, "test-journal: cannot clear the immutable flag of %s (%s): run chattr -i on it\n",
                        path, strerror(-r));
                test_failures++;
        }
}

/* A slot's file that cannot be removed when its batch ends (the directory
 * made immutable meanwhile) is emptied: a finished batch's journal left
 * there would be undone by the next start. */
static void test_drop_immutable_dir(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        JournalEntry a[] = { { "/a", false, true } };
        _cleanup_free_ char *p1 = NULL;
        unsigned s0 = 99, s1 = 99;
        Journal *j = NULL;
        int r;

        CHECK(dir);
        p1 = slot_file(dir, 1);
        CHECK(journal_new(dir, NULL, &j) == 0);
        CHECK(journal_begin(j, 1, NULL, a, 1, &s0) == 0 && s0 == 0);
        CHECK(journal_begin(j, 2, NULL, a, 1, &s1) == 0 && s1 == 1);
        CHECK(file_size(p1) > 0);
        r = set_immutable(dir, true);
        if (r < 0) {
                fprintf(stderr, "test-journal: cannot make %s immutable (%s): drop of an immutable slot not checked\n",
                        dir, strerror(-r));
        } else {
                CHECK(journal_end(j, s1) == 0);
                CHECK(file_size(p1) == 0);
                clear_immutable(dir);
        }
        CHECK(journal_end(j, s0) == 0);
        j = journal_free(j);
        (void) unlink(p1);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

/* A journal restored whole at start, in a directory that cannot be changed
 * (made immutable since the crash): it cannot be removed, so it is emptied.
 * Left whole, the next start restored every group of it once more, undoing
 * what calls had asked of them in between. */
static void test_restored_immutable_dir(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *slot = NULL;
        uint64_t max_id = 0;
        int r;

        CHECK(dir);
        slot = slot_file(dir, 0);
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/ok\",\"prev\":true,\"new\":false}]}\n");
        r = set_immutable(dir, true);
        if (r < 0)
                fprintf(stderr, "test-journal: cannot make %s immutable (%s): a journal restored there is not "
                        "checked\n", dir, strerror(-r));
        else {
                refuse = false;
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 1);
                CHECK(n_restored == 1 && streq(restored[0].path, "/ok"));
                clear_immutable(dir);
                CHECK(file_size(slot) <= 0);
                /* The next start restores nothing. */
                n_restored = 0;
                CHECK(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id) == 0);
                CHECK(n_restored == 0);
        }
        (void) unlink(slot);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

static char *read_text(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *text = NULL;
        size_t len = 0;

        if (fd < 0 || read_full_fd(fd, 1 << 20, &text, &len) < 0)
                return NULL;
        return text;
}

/* The retry file at path holds journal 8 and the groups of paths (a NULL
 * end), in that order; with root, also of boot-1 and that cgroup root. */
static void check_retry_file(const char *path, const char *root_want, const char *const *paths) {
        _cleanup_free_ char *text = read_text(path);
        JournalEntry *e = NULL;
        char *boot = NULL, *root = NULL;
        uint64_t id = 0;
        size_t n = 0, i = 0;

        CHECK(text && journal_parse(text, strlen(text), &e, &n, &boot, &root, &id) == 0);
        CHECK(id == 8);
        if (root_want)
                CHECK(boot && streq(boot, "boot-1") && root && streq(root, root_want));
        for (; paths[i]; i++)
                CHECK(i < n && e && streq(e[i].path, paths[i]));
        CHECK(n == i);
        journal_entries_free(e, n);
        free(boot);
        free(root);
}

/* A retry file kept on a full file system (a small tmpfs, in a mount
 * namespace of this process's own): it cannot be replaced, so it is written
 * over in place.  A text that needs more room than the file had fails, and
 * the file must be left as it was, which keep_failed() says it keeps: until
 * session 37 it was truncated first, the write failed, and the next start
 * removed the empty (or cut short) file while this one had logged its groups
 * kept.  A shorter text fits in place and is what the file holds after. */
static void test_keep_failed_no_space(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        static const char old[] = "{\"version\":1,\"id\":8,\"boot\":\"boot-1\",\"groups\":["
                                  "{\"path\":\"/ok\",\"prev\":true,\"new\":false},"
                                  "{\"path\":\"/refused\",\"prev\":true,\"new\":false,\"cgroup\":5},"
                                  "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n";
        _cleanup_free_ char *retry = NULL, *filler = NULL, *text = NULL, *long_root = NULL;
        uint64_t max_id = 0;
        Journal *j = NULL;

        CHECK(dir);
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700") < 0) {
                fprintf(stderr, "test-journal: cannot mount a tmpfs on %s (%s): a retry file on a full file system "
                        "is not checked\n", dir, strerror(errno));
                (void) rmdir(dir);
                return;
        }
        CHECK(asprintf(&retry, "%s/journal-retry-8.json", dir) > 0);
        CHECK(asprintf(&filler, "%s/filler", dir) > 0);
        write_text(retry, old);
        {
                static char block[4096];
                _cleanup_close_ int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                ssize_t k;

                CHECK(fd >= 0);
                while ((k = write(fd, block, sizeof block)) > 0)
                        ;
                CHECK(k < 0 && errno == ENOSPC);
        }
        /* The journal has no cgroup root (written before they were
         * recorded): the one of this start, of 3 pages, is added. */
        long_root = malloc(3 * 4096);
        CHECK(long_root);
        memset(long_root, 'r', 3 * 4096 - 1);
        long_root[0] = '/';
        long_root[3 * 4096 - 1] = '\0';

        refuse = true;
        n_restored = 0;
        CHECK(journal_new(dir, long_root, &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        CHECK(max_id == 8 && n_restored == 1 && streq(restored[0].path, "/ok"));
        text = read_text(retry);
        CHECK(text && streq(text, old));
        CHECK(journal_has_retries(j));
        text = mfree(text);
        /* Kept as it is, without a cgroup root: a flag asked for since is
         * dropped from it all the same (it was skipped, and the next start
         * wrote /refused back), the file written over in place in its own
         * format (the shorter text: no root added). */
        journal_forget(j, "/refused", 5);
        check_retry_file(retry, NULL, (const char *[]) { "/ok", "/refused2", NULL });
        text = read_text(retry);
        CHECK(text && !strstr(text, "\"root\""));
        text = mfree(text);
        j = journal_free(j);
        write_text(retry, old);

        /* A cgroup root short enough: the two refused groups, in place. */
        n_restored = 0;
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        CHECK(n_restored == 1 && streq(restored[0].path, "/ok"));
        check_retry_file(retry, "/cg", (const char *[]) { "/refused", "/refused2", NULL });

        /* /refused's flag asked for since, with no room for a copy of the
         * file: the shorter text written over in place, so the next start
         * does not write /refused back (it was left whole, which would). */
        journal_forget(j, "/refused", 5);
        j = journal_free(j);
        check_retry_file(retry, NULL, (const char *[]) { "/refused2", NULL });

        /* Room for the longer text in place (3 pages more), but not for a
         * copy of it (4 pages): written over in place, its end first. */
        write_text(retry, old);
        CHECK(truncate(filler, file_size(filler) - 3 * 4096) == 0);
        n_restored = 0;
        CHECK(journal_new(dir, long_root, &j) == 0);
        CHECK(journal_recover_into(j, "boot-1", restore, NULL, &max_id) == 1);
        CHECK(n_restored == 1 && streq(restored[0].path, "/ok"));
        j = journal_free(j);
        check_retry_file(retry, long_root, (const char *[]) { "/refused", "/refused2", NULL });

        /* With room again, restored and removed. */
        CHECK(unlink(filler) == 0);
        refuse = false;
        n_restored = 0;
        CHECK(recover_dir(dir, "boot-1", long_root, restore, NULL, &max_id) == 1);
        CHECK(n_restored == 2);
        CHECK(dir_empty(dir));
        CHECK(umount2(dir, MNT_DETACH) == 0);
        CHECK(rmdir(dir) == 0);
}

/* A journal the start cannot read for a cause not its own (too many open
 * files here: RLIMIT_NOFILE leaves room for the directory's descriptor
 * alone) is left as it is and the start fails, restoring nothing, so that
 * the service manager's restart restores its flags.  Until session 45 it was
 * renamed to *.broken, which no start reads: its flags were never restored.
 * One that is no regular file (a symlink, ELOOP; a socket, ENXIO) is still
 * kept as *.broken, as no start could read it. */
static void test_recover_unreadable(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *slot = NULL, *kept = NULL, *link = NULL, *sock = NULL, *link_kept = NULL,
                            *sock_kept = NULL;
        struct rlimit old, low;
        uint64_t max_id = 0;
        struct stat st;
        int fd, r;

        CHECK(dir);
        slot = slot_file(dir, 0);
        CHECK(asprintf(&kept, "%s.broken", slot) > 0);
        write_text(slot, "{\"version\":1,\"id\":8,\"groups\":[{\"path\":\"/ok\",\"prev\":true,\"new\":false}]}\n");

        refuse = false;
        n_restored = 0;
        fd = dup(STDERR_FILENO); /* the lowest free descriptor, which opendir() takes */
        CHECK(fd >= 0);
        (void) close(fd);
        CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
        low = old;
        low.rlim_cur = (rlim_t) fd + 1;
        CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
        r = recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id);
        CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
        CHECK_R(r, -EMFILE);
        CHECK(n_restored == 0);
        CHECK(file_size(slot) > 0);
        CHECK(stat(kept, &st) < 0 && errno == ENOENT);

        /* The next start, with descriptors to spare, restores it. */
        CHECK_R(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id), 1);
        CHECK(n_restored == 1 && streq(restored[0].path, "/ok") && restored[0].prev);
        CHECK(max_id == 8);
        CHECK(file_size(slot) < 0);
        CHECK(stat(kept, &st) < 0 && errno == ENOENT);

        /* A symlink and a socket of a journal's name: damaged, not a failed start. */
        CHECK(asprintf(&link, "%s/journal-1.json", dir) > 0);
        CHECK(asprintf(&sock, "%s/journal-2.json", dir) > 0);
        CHECK(asprintf(&link_kept, "%s.broken", link) > 0);
        CHECK(asprintf(&sock_kept, "%s.broken", sock) > 0);
        CHECK(symlink("/dev/null", link) == 0);
        {
                _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };

                CHECK(s >= 0 && strlen(sock) < sizeof sa.sun_path);
                snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
                CHECK(bind(s, (struct sockaddr *) &sa, sizeof sa) == 0);
        }
        n_restored = 0;
        CHECK_R(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id), 0);
        CHECK(n_restored == 0);
        CHECK(lstat(link_kept, &st) == 0 && S_ISLNK(st.st_mode));
        CHECK(lstat(sock_kept, &st) == 0 && S_ISSOCK(st.st_mode));
        CHECK(unlink(link_kept) == 0 && unlink(sock_kept) == 0);
        (void) unlink(link);
        (void) unlink(sock);
        (void) unlink(slot);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

/* readdir() of this program, journal.c's with it, goes through here
 * (-Wl,--wrap=readdir64, tests/meson.build): armed, it fails the listing of
 * a directory with readdir_fail_errno once it has given readdir_fail_after
 * journals' names (journal-*), as a disk's I/O error would. */
struct dirent *__real_readdir64(DIR *d);
struct dirent *__wrap_readdir64(DIR *d);
static bool readdir_armed;
static unsigned readdir_fail_after, readdir_calls;
static int readdir_fail_errno;

struct dirent *__wrap_readdir64(DIR *d) {
        struct dirent *de;

        readdir_calls++;
        if (!readdir_armed)
                return __real_readdir64(d);
        if (readdir_fail_after == 0) {
                errno = readdir_fail_errno;
                return NULL;
        }
        de = __real_readdir64(d);
        if (de && strncmp(de->d_name, "journal-", 8) == 0)
                readdir_fail_after--;
        return de;
}

/* A listing of the runtime directory that fails partway.  Until session 46
 * recover() took it for the end of the listing: the journals after that
 * point were neither restored nor said to be there.  A lasting error (EIO)
 * is logged and the journals read are recovered (freezerd starts, as for a
 * journal that cannot be read), the others left as they are for a later
 * start; a lack of resources (ENOMEM) fails the start, restoring nothing, as
 * a journal's read that lacks them does. */
static void test_recover_listing_fails(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *s0 = NULL, *s1 = NULL;
        uint64_t max_id = 0;
        const char *e;
        int r;

        CHECK(dir);
        s0 = slot_file(dir, 0);
        s1 = slot_file(dir, 1);
        write_text(s0, "{\"version\":1,\"id\":5,\"groups\":[{\"path\":\"/a\",\"prev\":true,\"new\":false}]}\n");
        write_text(s1, "{\"version\":1,\"id\":6,\"groups\":[{\"path\":\"/b\",\"prev\":true,\"new\":false}]}\n");

        /* Lack of resources before any journal is listed: the start fails,
         * nothing restored, both left whole. */
        refuse = false;
        n_restored = 0;
        readdir_calls = 0;
        readdir_armed = true, readdir_fail_after = 0, readdir_fail_errno = ENOMEM;
        log_forget_last_error();
        r = recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id);
        readdir_armed = false;
        if (readdir_calls == 0) {
                /* (A libc whose readdir() is no readdir64: the wrapper is not
                 * linked in, and there is nothing to test.) */
                fprintf(stderr, "test_recover_listing_fails: readdir64 not wrapped, skipped\n");
                (void) unlink(s0);
                (void) unlink(s1);
                CHECK(rmdir(dir) == 0);
                return;
        }
        CHECK_R(r, -ENOMEM);
        CHECK(n_restored == 0);
        CHECK(file_size(s0) > 0 && file_size(s1) > 0);
        e = log_last_error();
        CHECK(e && strstr(e, "Cannot list the batch journals in ") && strstr(e, "Cannot allocate memory"));

        /* An I/O error after one journal: that one is restored and removed,
         * the other left whole, and the log says so. */
        n_restored = 0;
        readdir_armed = true, readdir_fail_after = 1, readdir_fail_errno = EIO;
        log_forget_last_error();
        r = recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id);
        readdir_armed = false;
        CHECK_R(r, 1);
        CHECK(n_restored == 1);
        CHECK((file_size(s0) < 0) != (file_size(s1) < 0));
        e = log_last_error();
        CHECK(e && strstr(e, "Cannot list all of the batch journals in ") && strstr(e, "Input/output error") &&
              strstr(e, "the 1 journal read before the error is recovered, any others are left as they are"));

        /* Again, with the start's Journal kept, as freezerd's is: a batch
         * started then, and cut short by a crash (its slot left busy), must
         * not write its journal over the one not listed, and its id must be
         * above that one's.  Until session 46 the batch took journal-0.json,
         * and where that was the one not listed it was written over; the id
         * was the listed one's plus one, which may be below the other's, and
         * the next start restored the older batch first.  Its flag: the
         * group's as the older batch left it (its new one, false).  The
         * journal listed first (the order of the directory, unchanged by
         * a write in place) gets the smaller id: the other's is above any
         * the listed one gives. */
        write_text(file_size(s0) > 0 ? s1 : s0, "");
        const char *listed = NULL;
        {
                _cleanup_(closedirp) DIR *d = opendir(dir);
                struct dirent *de;
                CHECK(d);
                while (d && !listed && (de = readdir(d)))
                        if (streq(de->d_name, "journal-0.json") || streq(de->d_name, "journal-1.json"))
                                listed = streq(de->d_name, "journal-0.json") ? s0 : s1;
        }
        CHECK(listed);
        const char *unlisted = listed == s0 ? s1 : s0;
        const uint64_t unlisted_id = 9;
        const char *unlisted_path = "/b", *listed_path = "/a";
        write_text(listed, "{\"version\":1,\"id\":5,\"groups\":[{\"path\":\"/a\",\"prev\":true,\"new\":false}]}\n");
        write_text(unlisted, "{\"version\":1,\"id\":9,\"groups\":[{\"path\":\"/b\",\"prev\":true,\"new\":false}]}\n");
        _cleanup_free_ char *before = read_text(unlisted), *after = NULL;
        CHECK(before);
        Journal *j = NULL;
        unsigned slot = 0;
        CHECK(journal_new(dir, "/cg", &j) == 0);
        n_restored = 0;
        readdir_armed = true, readdir_fail_after = 1, readdir_fail_errno = EIO;
        max_id = 0;
        r = journal_recover_into(j, "boot-1", restore, NULL, &max_id);
        readdir_armed = false;
        CHECK_R(r, 1);
        CHECK(n_restored == 1 && streq(restored[0].path, listed_path));
        CHECK(file_size(listed) < 0 && file_size(unlisted) > 0);
        CHECK(max_id > unlisted_id);
        JournalEntry ne = { .path = unlisted_path, .prev_freeze = false, .new_freeze = true };
        CHECK_R(journal_begin(j, max_id + 1, "boot-1", &ne, 1, &slot), 0);
        CHECK(!streq(journal_slot_path(j, slot), unlisted));
        after = read_text(unlisted);
        CHECK(after && streq(after, before));
        _cleanup_free_ char *new_path = strdup(journal_slot_path(j, slot));
        CHECK(new_path);
        j = journal_free(j); /* (its slot busy: left, as a crash leaves it) */
        CHECK(file_size(new_path) > 0);

        /* The next start, whose listing is whole, restores both, the new
         * batch first: the group ends with the older batch's previous flag. */
        n_restored = 0;
        log_forget_last_error();
        CHECK_R(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id), 2);
        CHECK(n_restored == 2);
        CHECK(streq(restored[0].path, unlisted_path) && !restored[0].prev);
        CHECK(streq(restored[1].path, unlisted_path) && restored[1].prev);
        CHECK(!log_last_error());
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

/* journal_forget() whose write in place fails halfway, in a directory that
 * cannot be changed (no copy can replace the file): the file is emptied,
 * and what j remembers of it must be too.  Until session 45 j kept the old
 * list, and a later journal_forget() of another group of that file wrote it
 * from that list, bringing back the group dropped first, whose old flag the
 * next start wrote back.  The write fails for real: RLIMIT_FSIZE below the
 * new text's length lets its first byte be written, not the rest (EFBIG). */
static void test_forget_lost_in_place(void) {
        char tmpl[] = "/tmp/test-journal-XXXXXX";
        char *dir = mkdtemp(tmpl);
        _cleanup_free_ char *slot = NULL, *retry = NULL;
        struct sigaction ign = { .sa_handler = SIG_IGN }, old_sa;
        struct rlimit old, low;
        uint64_t max_id = 0;
        Journal *j = NULL;
        int r;

        CHECK(dir);
        slot = slot_file(dir, 0);
        CHECK(asprintf(&retry, "%s/journal-retry-8.json", dir) > 0);
        write_text(slot, "{\"version\":1,\"id\":8,\"boot\":\"boot-1\",\"groups\":["
                         "{\"path\":\"/refused\",\"prev\":false,\"new\":true},"
                         "{\"path\":\"/refused2\",\"prev\":false,\"new\":true}]}\n");
        refuse = true;
        n_restored = 0;
        CHECK(journal_new(dir, "/cg", &j) == 0);
        CHECK_R(journal_recover_into(j, "boot-1", restore, NULL, &max_id), 1);
        check_retry_file(retry, "/cg", (const char *[]) { "/refused", "/refused2", NULL });
        CHECK(journal_has_retries(j));

        r = set_immutable(dir, true);
        if (r < 0)
                fprintf(stderr, "test-journal: cannot make %s immutable (%s): a retry file emptied by a failed write "
                        "in place is not checked\n", dir, strerror(-r));
        else {
                /* /refused's flag set since: its write in place fails after the first byte. */
                CHECK(sigaction(SIGXFSZ, &ign, &old_sa) == 0);
                CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
                low = old;
                low.rlim_cur = 10;
                CHECK(setrlimit(RLIMIT_FSIZE, &low) == 0);
                journal_forget(j, "/refused", 0);
                CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
                CHECK(sigaction(SIGXFSZ, &old_sa, NULL) == 0);
                CHECK(file_size(retry) == 0);
                CHECK(!journal_has_retries(j));

                /* /refused2's too: nothing of that file is left to write. */
                journal_forget(j, "/refused2", 0);
                CHECK(file_size(retry) == 0);
                clear_immutable(dir);
        }
        j = journal_free(j);

        /* The next start writes back neither. */
        refuse = false;
        n_restored = 0;
        CHECK_R(recover_dir(dir, "boot-1", "/cg", restore, NULL, &max_id), 0);
        CHECK(n_restored == 0);
        (void) unlink(retry);
        CHECK(dir_empty(dir));
        CHECK(rmdir(dir) == 0);
}

int main(void) {
        test_drop_immutable_dir();
        test_restored_immutable_dir();
        test_slot_taken();
        test_size_limit();
        test_slots_and_recover();
        test_keep_failed();
        test_parse();
        test_recover_unreadable();
        test_recover_listing_fails();
        test_forget_lost_in_place();
        test_keep_failed_no_space(); /* last: it leaves this process in a mount namespace of its own */
        return test_summary("test-journal");
}
