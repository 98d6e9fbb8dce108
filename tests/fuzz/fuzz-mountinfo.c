/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cg_parse_mountinfo_cgroup2(): the first cgroup2 mount point of a
 * /proc/self/mountinfo text, octal escapes decoded.  A result is an absolute
 * path; -ENOENT means none was found. */

#include <errno.h>

#include "cgroup-util.h"
#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = fuzz_copy(data, size), *path = NULL;
        int r;

        r = cg_parse_mountinfo_cgroup2(buf, size, &path);
        FUZZ_CHECK(r == 0 || r == -ENOENT);
        if (r == 0) {
                FUZZ_CHECK(path);
                FUZZ_CHECK(path[0] == '/');
                /* Decoding only shrinks: "\040" is one byte. */
                FUZZ_CHECK(strlen(path) < size);
        } else
                FUZZ_CHECK(!path);

        free(path);
        free(buf);
        return 0;
}
