/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small helpers shared by every daemon source file: cleanup attributes in the
 * style of systemd, so that early returns cannot leak. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* FNV-1a, 64 bit: the tree's path index, the uid cache, the odd names. */
static inline uint64_t string_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}
#define USEC_PER_SEC ((uint64_t) 1000000ULL)
#define USEC_PER_MSEC ((uint64_t) 1000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Hand a pointer/fd over to someone else so that the cleanup does nothing. */
#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) _tp_ = (p);  \
                (p) = NULL;                \
                _tp_;                      \
        })
#define TAKE_FD(fd)                        \
        ({                                 \
                int _tf_ = (fd);           \
                (fd) = -1;                 \
                _tf_;                      \
        })

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

/* CLOCK_MONOTONIC in microseconds; sd-bus and our deadlines use this clock. */
uint64_t now_usec(void);

#include <dirent.h>
static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
