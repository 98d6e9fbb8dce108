/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What every benchmark program needs: the monotonic clock, sleeping through
 * signals, and failing with its name.  Header-only: each program is one file. */

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static inline void sleep_ns(uint64_t ns) {
        struct timespec ts = { .tv_sec = (time_t) (ns / 1000000000ULL), .tv_nsec = (long) (ns % 1000000000ULL) };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* Run by die() before it exits (e.g. to resume a daemon it stopped); NULL: nothing. */
static void (*die_hook)(void);

_Noreturn __attribute__((format(printf, 1, 2))) static inline void die(const char *fmt, ...) {
        va_list ap;

        if (die_hook)
                die_hook();
        fprintf(stderr, "%s: ", program_invocation_short_name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}
