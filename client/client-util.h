/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private helpers of libfreezer and freezectl. A trimmed copy of the daemon's
 * util.h, so that the client side does not depend on daemon/. Everything here
 * is static inline or a macro: nothing of it may end up in libfreezer's ABI. */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define USEC_PER_SEC ((uint64_t) 1000000ULL)
#define USEC_PER_MSEC ((uint64_t) 1000ULL)
#define USEC_PER_MINUTE ((uint64_t) (60ULL * USEC_PER_SEC))
#define USEC_PER_HOUR ((uint64_t) (60ULL * USEC_PER_MINUTE))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

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

static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);

        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* a + b, saturating at UINT64_MAX (which sd-bus and we read as "infinity"). */
static inline uint64_t usec_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
