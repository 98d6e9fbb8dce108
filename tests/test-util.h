/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Checks shared by the unit tests: each failed check prints where and what,
 * and the run goes on, so one test run reports every failure. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* A stand-in server for a test: dir (a mkdtemp() template) is made, a Unix
 * socket listens at dir/private (its path in socket_path, of size at least
 * sizeof sun_path), and a child process (killed when the test dies) runs
 * serve() on it.  Returns the child's pid, or -1 (perror() said why). */
static inline pid_t test_serve_fork(char *dir, char *socket_path, size_t size, void (*serve)(int listen_fd)) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        pid_t pid;
        int fd;

        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return -1;
        }
        snprintf(socket_path, size, "%s/private", dir);
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", socket_path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(fd, 8) < 0) {
                perror("socket");
                return -1;
        }
        pid = fork();
        if (pid < 0) {
                perror("fork");
                return -1;
        }
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                serve(fd);
                _exit(0);
        }
        close(fd);
        return pid;
}

/* Print "<name>: N checks, M failed" and give main()'s exit status. */
static inline int test_summary(const char *name) {
        printf("%s: %u checks, %u failed\n", name, test_checks, test_failures);
        return test_failures ? 1 : 0;
}
