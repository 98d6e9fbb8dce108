/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small helpers shared by every daemon source file: cleanup attributes in the
 * style of systemd, so that early returns cannot leak. */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common-util.h"

#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

/* The shortest exact form in the largest unit the time has one of: "300ms",
 * "1s", "1.5s", "250us", for people reading a message (a timeout, a
 * trigger's window) who gave a duration, not a count of microseconds.  As
 * freezectl prints durations and reads them (its --timeout=, a trigger's
 * THRESHOLD and WINDOW; systemd.time(7)): one can be pasted back ("1 s" was
 * two words to a shell). */
#define FORMAT_USEC_MAX 48
static inline char *format_usec(char *buf, size_t n, uint64_t usec) {
        uint64_t unit = usec >= USEC_PER_SEC ? USEC_PER_SEC : usec >= USEC_PER_MSEC ? USEC_PER_MSEC : 1;
        const char *name = unit == USEC_PER_SEC ? "s" : unit == USEC_PER_MSEC ? "ms" : "us";
        uint64_t frac = usec % unit;
        int digits = unit == USEC_PER_SEC ? 6 : 3;

        if (frac == 0) {
                snprintf(buf, n, "%" PRIu64 "%s", usec / unit, name);
                return buf;
        }
        for (; frac % 10 == 0; frac /= 10)
                digits--;
        snprintf(buf, n, "%" PRIu64 ".%0*" PRIu64 "%s", usec / unit, digits, frac, name);
        return buf;
}
#define FORMAT_USEC(usec) format_usec((char[FORMAT_USEC_MAX]) {0}, FORMAT_USEC_MAX, (usec))

/* FNV-1a, 64 bit: the tree's path index, the uid cache, the odd names. */
static inline uint64_t string_hash(const char *s) {
        uint64_t h = UINT64_C(0xcbf29ce484222325);

        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}
/* The result of a write() or pwrite() of n bytes that returned k: 0 for all
 * of them, -errno for a failure, -EIO for a short write (which leaves errno
 * as it was: a stale errno, or 0, said nothing true). */
static inline int write_result(ssize_t k, size_t n) {
        if (k < 0)
                return errno > 0 ? -errno : -EIO;
        return (size_t) k == n ? 0 : -EIO;
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

/* Hand an fd over to someone else so that the cleanup does nothing. */
#define TAKE_FD(fd)                        \
        ({                                 \
                int _tf_ = (fd);           \
                (fd) = -1;                 \
                _tf_;                      \
        })

/* Unlinks item from the doubly linked list whose first element is head (an
 * lvalue), through item's fields prev and next, named so that one element can
 * be on several lists.  item's own fields are left as they are. */
#define LIST_UNLINK(head, item, prev, next)                       \
        do {                                                      \
                if ((item)->prev)                                 \
                        (item)->prev->next = (item)->next;        \
                else if ((head) == (item))                        \
                        (head) = (item)->next;                    \
                if ((item)->next)                                 \
                        (item)->next->prev = (item)->prev;        \
        } while (0)

#include <dirent.h>
static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
