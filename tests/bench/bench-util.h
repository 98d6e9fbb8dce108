/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What every benchmark program needs: the monotonic clock, sleeping through
 * signals, failing with its name, its numeric options and sorting its
 * samples.  Header-only: each program is one file. */

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

/* The value of a numeric option, within [min, max]; else the usage error (exit 2). */
static inline unsigned long parse_ulong_range(const char *s, const char *opt, unsigned long min, unsigned long max) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max) {
                fprintf(stderr, "%s: bad %s: %s\n", program_invocation_short_name, opt, s);
                exit(2);
        }
        return v;
}

static inline unsigned long parse_ulong(const char *s, const char *opt, unsigned long max) {
        return parse_ulong_range(s, opt, 1, max);
}

/* For qsort() of uint64_t samples. */
static inline int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}
