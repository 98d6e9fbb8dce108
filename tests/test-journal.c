/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the batch intent journal (daemon/journal.c) in a temporary directory. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "journal.h"
#include "util.h"
#include "test-util.h"

typedef struct Restored {
        char path[64];
        bool prev;
} Restored;

static Restored restored[64];
static unsigned n_restored;

static int restore(const char *path, bool prev, void *userdata) {
        if (strstr(path, "gone"))
                return -ENOENT;
        if (n_restored < ELEMENTSOF(restored)) {
                snprintf(restored[n_restored].path, sizeof restored[0].path, "%s", path);
                restored[n_restored].prev = prev;
                n_restored++;
        }
        return 0;
}

static void test_roundtrip_and_recover(void) {
        char dir[] = "/tmp/test-journal.XXXXXX";
        _cleanup_free_ char *p1 = NULL, *p2 = NULL, *broken = NULL;
        JournalEntry a[] = { { "/a", false, true }, { "/a/b", true, false }, { "/gone", false, true } };
        JournalEntry b[] = { { "/c", false, true } };
        uint64_t max_id = 0;
        struct stat st;

        CHECK(mkdtemp(dir) != NULL);
        CHECK(journal_write(dir, 7, "boot-1", a, ELEMENTSOF(a), &p1) == 0);
        CHECK(journal_write(dir, 9, NULL, b, ELEMENTSOF(b), &p2) == 0); /* no boot id known */
        CHECK(p1 && stat(p1, &st) == 0 && (st.st_mode & 0777) == 0600);

        /* A torn file is kept for a human, never silently dropped. */
        CHECK(asprintf(&broken, "%s/journal-3.json", dir) > 0);
        FILE *f = fopen(broken, "w");
        CHECK(f != NULL);
        if (f) {
                fputs("{\"version\":1,\"groups\":[{\"path\":", f);
                fclose(f);
        }

        n_restored = 0;
        CHECK(journal_recover(dir, "boot-1", restore, NULL, &max_id) == 2);
        CHECK(max_id == 9);
        /* Newest journal first, each in reverse order; /gone is skipped. */
        CHECK(n_restored == 3);
        CHECK(streq(restored[0].path, "/c") && restored[0].prev == false);
        CHECK(streq(restored[1].path, "/a/b") && restored[1].prev == true);
        CHECK(streq(restored[2].path, "/a") && restored[2].prev == false);
        CHECK(stat(p1, &st) < 0 && errno == ENOENT);
        CHECK(stat(p2, &st) < 0 && errno == ENOENT);

        _cleanup_free_ char *kept = NULL;
        CHECK(asprintf(&kept, "%s.broken", broken) > 0);
        CHECK(stat(kept, &st) == 0);
        unlink(kept);

        /* Nothing left: a second recovery does nothing. */
        n_restored = 0;
        CHECK(journal_recover(dir, "boot-1", restore, NULL, &max_id) == 0);
        CHECK(n_restored == 0);

        /* A journal of another boot is removed unread; one without a boot id,
         * or read where the boot id is unknown, is restored. */
        _cleanup_free_ char *p3 = NULL, *p4 = NULL, *p5 = NULL;
        CHECK(journal_write(dir, 11, "boot-1", a, 1, &p3) == 0);
        CHECK(journal_write(dir, 12, NULL, b, 1, &p4) == 0);
        n_restored = 0;
        CHECK(journal_recover(dir, "boot-2", restore, NULL, &max_id) == 1);
        CHECK(max_id == 12);
        CHECK(n_restored == 1 && streq(restored[0].path, "/c"));
        CHECK(stat(p3, &st) < 0 && errno == ENOENT);
        CHECK(stat(p4, &st) < 0 && errno == ENOENT);
        CHECK(journal_write(dir, 13, "boot-1", a, 1, &p5) == 0);
        n_restored = 0;
        CHECK(journal_recover(dir, NULL, restore, NULL, &max_id) == 1);
        CHECK(n_restored == 1 && streq(restored[0].path, "/a"));
        CHECK(rmdir(dir) == 0);

        /* A missing directory is not an error. */
        CHECK(journal_recover("/nonexistent/freezerd", "boot-1", restore, NULL, &max_id) == 0);
}

static void test_parse(void) {
        JournalEntry *e = NULL;
        size_t n = 0;
        const char *ok = "{\"version\":1,\"id\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true,\"new\":false}]}";

        char *boot = (char *) "untouched";
        CHECK(journal_parse(ok, strlen(ok), &e, &n, &boot) == 0);
        CHECK(n == 1 && streq(e[0].path, "/x") && e[0].prev_freeze && !e[0].new_freeze);
        CHECK(boot == NULL);
        journal_entries_free(e, n);

        const char *with_boot = "{\"version\":1,\"id\":1,\"boot\":\"b-1\",\"groups\":[]}";
        CHECK(journal_parse(with_boot, strlen(with_boot), &e, &n, &boot) == 0);
        CHECK(n == 0 && streq_ptr(boot, "b-1"));
        free(boot);
        journal_entries_free(e, n);
        CHECK(journal_parse(with_boot, strlen(with_boot), &e, &n, NULL) == 0);
        journal_entries_free(e, n);

        /* What freezerd writes carries the running kernel's boot id. */
        const char *id = journal_boot_id();
        CHECK(id && strlen(id) == 36);

        const char *bad[] = {
                "",
                "[]",
                "{\"version\":2,\"groups\":[]}",
                "{\"version\":1}",
                "{\"version\":1,\"groups\":[{\"path\":\"x\",\"prev\":true,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":1,\"new\":false}]}",
                "{\"version\":1,\"groups\":[{\"path\":\"/x\",\"prev\":true}]}",
                "{\"version\":1,\"groups\":[]} trailing",
                "{\"version\":1,\"boot\":5,\"groups\":[]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                CHECK(journal_parse(bad[i], strlen(bad[i]), &e, &n, NULL) == -EBADMSG);
}

int main(void) {
        test_roundtrip_and_recover();
        test_parse();
        return test_summary("test-journal");
}
