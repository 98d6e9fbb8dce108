/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config_parse(): /etc/freezerd/freezerd.json.  Checked: only -EINVAL (with
 * a one-line message that names the file) or -ENOMEM on failure; on success
 * a valid configuration (track paths normalized, unique and NULL-terminated,
 * cgroup_root absolute, timeout in (0, 24 h]); the same result without an
 * error pointer; config_done() frees everything (LeakSanitizer). */

#include <errno.h>
#include <limits.h>

#include "cgroup-util.h"
#include "config.h"
#include "fuzz-util.h"

#define FILENAME "fuzz.json"

static void check_config(const Config *c) {
        FUZZ_CHECK(c->track);
        FUZZ_CHECK(c->n_track >= 1);
        FUZZ_CHECK(!c->track[c->n_track]);
        for (size_t i = 0; i < c->n_track; i++) {
                char *again = NULL;

                FUZZ_CHECK(c->track[i]);
                FUZZ_CHECK(cg_path_normalize(c->track[i], &again, NULL) == 0);
                FUZZ_CHECK(strcmp(again, c->track[i]) == 0);
                free(again);
                for (size_t j = 0; j < i; j++)
                        FUZZ_CHECK(strcmp(c->track[i], c->track[j]) != 0);
        }
        if (c->cgroup_root) {
                FUZZ_CHECK(c->cgroup_root[0] == '/');
                FUZZ_CHECK(strlen(c->cgroup_root) < PATH_MAX);
        }
        FUZZ_CHECK(c->default_timeout_usec > 0);
        FUZZ_CHECK(c->default_timeout_usec <= 24ULL * 3600ULL * 1000000ULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = fuzz_copy(data, size), *error = NULL;
        Config c = {}, c2 = {};
        int r, r2;

        r = config_parse(text, size, FILENAME, &c, &error);
        FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
        if (r == 0) {
                FUZZ_CHECK(!error);
                check_config(&c);
        } else if (r == -EINVAL) {
                FUZZ_CHECK(error);
                FUZZ_CHECK(strncmp(error, FILENAME ":", strlen(FILENAME ":")) == 0);
                FUZZ_CHECK(!strchr(error, '\n'));
                FUZZ_CHECK(!c.track && !c.cgroup_root); /* untouched */
        }

        /* Same verdict and result without a message. */
        r2 = config_parse(text, size, FILENAME, &c2, NULL);
        FUZZ_CHECK(r2 == r);
        if (r == 0) {
                FUZZ_CHECK(c2.n_track == c.n_track);
                for (size_t i = 0; i < c.n_track; i++)
                        FUZZ_CHECK(strcmp(c.track[i], c2.track[i]) == 0);
                FUZZ_CHECK((c.cgroup_root == NULL) == (c2.cgroup_root == NULL));
                if (c.cgroup_root)
                        FUZZ_CHECK(strcmp(c.cgroup_root, c2.cgroup_root) == 0);
                FUZZ_CHECK(c.default_timeout_usec == c2.default_timeout_usec);
        }

        config_done(&c);
        config_done(&c2);
        free(error);
        free(text);
        return 0;
}
