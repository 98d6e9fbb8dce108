/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The helpers the daemon (util.h) and the client side (client/client-util.h)
 * both use, kept once.  Macros and static inlines only: nothing of it may end
 * up in libfreezer's ABI. */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

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

/* Hand a pointer over to someone else so that the cleanup does nothing. */
#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) _tp_ = (p);  \
                (p) = NULL;                \
                _tp_;                      \
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
static inline uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}
