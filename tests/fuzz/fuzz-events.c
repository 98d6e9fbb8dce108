/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The strict parsers of the kernel's cgroup files: cgroup.events,
 * cgroup.freeze and cgroup.stat.local (frozen_usec), all on the same input.
 * Checked: only the documented return values, outputs untouched on failure,
 * and the same result with and without output pointers. */

#include <errno.h>

#include "cgroup-util.h"
#include "fuzz-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = fuzz_copy(data, size);
        bool populated = true, frozen = true, b = true;
        uint64_t usec = 4242;
        int r, r2;

        /* cgroup.events */
        r = cg_parse_events(buf, size, &populated, &frozen);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r < 0)
                FUZZ_CHECK(populated && frozen); /* untouched */
        r2 = cg_parse_events(buf, size, NULL, NULL);
        FUZZ_CHECK(r == r2);

        /* cgroup.freeze */
        r = cg_parse_freeze(buf, size, &b);
        FUZZ_CHECK(r == 0 || r == -EBADMSG);
        if (r == 0) {
                FUZZ_CHECK(size == 1 || (size == 2 && buf[1] == '\n'));
                FUZZ_CHECK(b == (buf[0] == '1'));
        } else
                FUZZ_CHECK(b);
        FUZZ_CHECK(cg_parse_freeze(buf, size, NULL) == r);

        /* cgroup.stat.local */
        r = cg_parse_stat_local_frozen_usec(buf, size, &usec);
        FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENODATA);
        if (r < 0)
                FUZZ_CHECK(usec == 4242);
        FUZZ_CHECK(cg_parse_stat_local_frozen_usec(buf, size, NULL) == r);

        free(buf);
        return 0;
}
