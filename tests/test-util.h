/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Checks shared by the unit tests: each failed check prints where and what,
 * and the run goes on, so one test run reports every failure. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static unsigned test_checks, test_failures;

#define CHECK(cond)                                                                              \
        do {                                                                                     \
                test_checks++;                                                                   \
                if (!(cond)) {                                                                   \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
                        test_failures++;                                                         \
                }                                                                                \
        } while (0)

#define CHECK_R(expr, expected)                                                                      \
        do {                                                                                         \
                long _r = (long) (expr);                                                             \
                long _e = (long) (expected);                                                         \
                test_checks++;                                                                       \
                if (_r != _e) {                                                                      \
                        fprintf(stderr, "%s:%d: %s returned %ld (%s), expected %ld (%s)\n", __FILE__, \
                                __LINE__, #expr, _r, _r < 0 ? strerror((int) -_r) : "ok", _e,        \
                                _e < 0 ? strerror((int) -_e) : "ok");                                \
                        test_failures++;                                                             \
                }                                                                                    \
        } while (0)

#define CHECK_STR(a, b)                                                                         \
        do {                                                                                    \
                const char *_a = (a), *_b = (b);                                                \
                test_checks++;                                                                  \
                if (!streq_ptr(_a, _b)) {                                                       \
                        fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, \
                                #a, _a ?: "(null)", _b ?: "(null)");                            \
                        test_failures++;                                                        \
                }                                                                               \
        } while (0)

/* Write content (len bytes) to path, made or truncated, mode 0644: 0 or -errno. */
static inline int test_write_file(const char *path, const char *content, size_t len) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        size_t n = 0;

        if (fd < 0)
                return -errno;
        while (n < len) {
                ssize_t k = write(fd, content + n, len - n);
                if (k <= 0)
                        return -EIO;
                n += (size_t) k;
        }
        return 0;
}

/* The threads of this process (/proc/self/task). */
static inline int count_threads(void) {
        DIR *d = opendir("/proc/self/task");
        int n = 0;

        CHECK(d);
        if (!d)
                return 0;
        for (struct dirent *de; (de = readdir(d));)
                n += de->d_name[0] != '.';
        closedir(d);
        return n;
}

/* Print "<name>: N checks, M failed" and give main()'s exit status. */
static inline int test_summary(const char *name) {
        printf("%s: %u checks, %u failed\n", name, test_checks, test_failures);
        return test_failures ? 1 : 0;
}
