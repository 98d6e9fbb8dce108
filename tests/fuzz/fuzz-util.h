/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Shared by the libFuzzer targets: an exact-size heap copy of the input (so
 * that ASan catches a read one byte past the end, even where libFuzzer's own
 * buffer would have slack), a NUL-terminated copy for the parsers that take C
 * strings, and FUZZ_CHECK(), which aborts on a broken invariant so that
 * libFuzzer reports it as a crash and saves the input. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond)                                                                          \
        do {                                                                                      \
                if (!(cond)) {                                                                    \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                                  \
                }                                                                                 \
        } while (0)

/* Exact-size copy (malloc(0) may return NULL: use one byte then, but the
 * length stays 0).  Aborts on allocation failure: not a finding. */
static inline char *fuzz_copy(const uint8_t *data, size_t size) {
        char *p = malloc(size ? size : 1);
        if (!p)
                abort();
        if (size)
                memcpy(p, data, size);
        return p;
}

/* NUL-terminated copy: the input up to its first NUL byte, if any. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size) {
        char *p = malloc(size + 1);
        if (!p)
                abort();
        if (size)
                memcpy(p, data, size);
        p[size] = '\0';
        return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
