/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The helpers the daemon (util.h) and the client side (client/client-util.h)
 * both use, kept once.  Macros and static inlines only: nothing of it may end
 * up in libfreezer's ABI. */

#include <errno.h>
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

/* Makes the array at *p (of elements of size bytes, *n_allocated of them)
 * hold at least need, doubling it (from min) so that appending one at a
 * time costs O(1) amortised.  -ENOMEM and nothing changed when out of
 * memory.  GROW_ARRAY() takes the array and its count themselves. */
static inline int grow_array(void **p, size_t *n_allocated, size_t need, size_t size, size_t min) {
        size_t k = *n_allocated > 0 ? *n_allocated : min > 0 ? min : 1;
        void *a;

        if (need <= *n_allocated)
                return 0;
        while (k < need) {
                if (k > SIZE_MAX / 2)
                        return -ENOMEM;
                k *= 2;
        }
        a = reallocarray(*p, k, size);
        if (!a)
                return -ENOMEM;
        *p = a;
        *n_allocated = k;
        return 0;
}
#define GROW_ARRAY(array, n_allocated, need, min) \
        grow_array((void **) &(array), &(n_allocated), (need), sizeof(*(array)), (min))

/* CLOCK_MONOTONIC in microseconds; sd-bus and our deadlines use this clock. */
static inline uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}
