/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* journal_parse(): the batch intent journal read back at start-up after a
 * crash (it may be cut short or corrupted).  Checked: -ENODATA, -EBADMSG,
 * -EPROTONOSUPPORT (another format version), -EFBIG or -ENOMEM on failure
 * with nothing returned; on success absolute paths; and what was
 * accepted (boot id included) survives a round trip through the writer's JSON
 * form. */

#include <errno.h>
#include <json-c/json.h>

#include "fuzz-json.h"
#include "fuzz-util.h"
#include "journal.h"

/* The form journal_format() produces (see daemon/journal.c), newline aside. */
static char *serialize(const JournalEntry *e, size_t n, const char *boot) {
        json_object *root = json_object_new_object(), *groups = json_object_new_array();

        FUZZ_CHECK(root && groups);
        json_object_object_add(root, "version", json_object_new_int(1));
        json_object_object_add(root, "id", json_object_new_uint64(1));
        if (boot)
                json_object_object_add(root, "boot", json_object_new_string(boot));
        json_object_object_add(root, "groups", groups);
        for (size_t i = 0; i < n; i++) {
                json_object *g = json_object_new_object();
                json_object_object_add(g, "path", json_object_new_string(e[i].path));
                json_object_object_add(g, "prev", json_object_new_boolean(e[i].prev_freeze));
                json_object_object_add(g, "new", json_object_new_boolean(e[i].new_freeze));
                if (e[i].cgroup_id)
                        json_object_object_add(g, "cgroup", json_object_new_uint64(e[i].cgroup_id));
                json_object_array_add(groups, g);
        }
        return fuzz_json_text(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_copy(data, size);
        JournalEntry *e = (JournalEntry *) 0x1, *e2 = NULL;
        char *boot = (char *) 0x1, *boot2 = NULL;
        size_t n = 4242, n2 = 0;
        int r;

        r = journal_parse(text, size, &e, &n, &boot, NULL, NULL);
        FUZZ_CHECK(r == 0 || r == -ENODATA || r == -EBADMSG || r == -EPROTONOSUPPORT || r == -EFBIG || r == -ENOMEM);
        if (r < 0) {
                FUZZ_CHECK(e == (JournalEntry *) 0x1 && n == 4242 && boot == (char *) 0x1); /* untouched */
                free(text);
                return 0;
        }

        FUZZ_CHECK(e);
        for (size_t i = 0; i < n; i++) {
                FUZZ_CHECK(e[i].path);
                FUZZ_CHECK(e[i].path[0] == '/');
        }

        /* Round trip: what the writer would write for these entries parses back the same. */
        char *again = serialize(e, n, boot);
        r = journal_parse(again, strlen(again), &e2, &n2, &boot2, NULL, NULL);
        FUZZ_CHECK(r == 0);
        FUZZ_CHECK(n2 == n);
        FUZZ_CHECK(!boot == !boot2 && (!boot || strcmp(boot, boot2) == 0));
        for (size_t i = 0; i < n; i++) {
                FUZZ_CHECK(strcmp(e[i].path, e2[i].path) == 0);
                FUZZ_CHECK(e[i].prev_freeze == e2[i].prev_freeze);
                FUZZ_CHECK(e[i].new_freeze == e2[i].new_freeze);
                FUZZ_CHECK(e[i].cgroup_id == e2[i].cgroup_id);
        }

        journal_entries_free(e2, n2);
        journal_entries_free(e, n);
        free(boot2);
        free(boot);
        free(again);
        free(text);
        return 0;
}
