/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cg_path_normalize() and cg_path_relative(): the validator of every API path
 * a client sends.  Invariants checked on acceptance: the result is "/" or
 * "/a/b" (absolute, no trailing '/', no empty, "." or ".." component, no
 * control character, shorter than PATH_MAX), normalizing it again gives the
 * same string, and cg_path_relative() maps it to "." or to the same text
 * without its leading '/'.  On refusal: a reason is given and no result. */

#include <errno.h>
#include <limits.h>

#include "cgroup-util.h"
#include "fuzz-util.h"

static void check_normalized(const char *p) {
        size_t len = strlen(p);

        FUZZ_CHECK(p[0] == '/');
        FUZZ_CHECK(len + 1 <= PATH_MAX);
        FUZZ_CHECK(len == 1 || p[len - 1] != '/');
        FUZZ_CHECK(!strstr(p, "//"));
        FUZZ_CHECK(!strstr(p, "/./") && !strstr(p, "/../"));
        FUZZ_CHECK(!(len >= 2 && strcmp(p + len - 2, "/.") == 0));
        FUZZ_CHECK(!(len >= 3 && strcmp(p + len - 3, "/..") == 0));
        for (const char *c = p; *c; c++)
                FUZZ_CHECK((unsigned char) *c >= 0x20 && *c != 0x7f);
        for (const char *c = p + 1; *c;) {
                const char *slash = strchr(c, '/');
                size_t n = slash ? (size_t) (slash - c) : strlen(c);
                FUZZ_CHECK(n >= 1 && n <= NAME_MAX);
                if (!slash)
                        break;
                c = slash + 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *in, *out = NULL, *again = NULL;
        const char *reason = "unset", *rel;
        int r;

        if (size > 3 * PATH_MAX) /* longer inputs take the same path as PATH_MAX + 1 */
                return 0;

        in = fuzz_strdup(data, size);
        r = cg_path_normalize(in, &out, &reason);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ENAMETOOLONG);
                FUZZ_CHECK(reason && reason[0] != '\0' && strcmp(reason, "unset") != 0);
                FUZZ_CHECK(!out);
                /* The relative form of anything must not crash either. */
                rel = cg_path_relative(in);
                FUZZ_CHECK(rel != NULL);
        } else {
                FUZZ_CHECK(r == 0);
                FUZZ_CHECK(out);
                FUZZ_CHECK(!reason);
                check_normalized(out);

                /* Idempotent. */
                r = cg_path_normalize(out, &again, NULL);
                FUZZ_CHECK(r == 0);
                FUZZ_CHECK(strcmp(out, again) == 0);

                rel = cg_path_relative(out);
                FUZZ_CHECK(rel);
                if (strcmp(out, "/") == 0)
                        FUZZ_CHECK(strcmp(rel, ".") == 0);
                else
                        FUZZ_CHECK(rel == out + 1);
        }

        /* Without a reason pointer too. */
        free(again);
        again = NULL;
        r = cg_path_normalize(in, &again, NULL);
        FUZZ_CHECK((r == 0) == (out != NULL));
        if (r == 0)
                FUZZ_CHECK(strcmp(out, again) == 0);

        free(again);
        free(out);
        free(in);
        return 0;
}
