/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fuse-hang MOUNTPOINT
 *
 * Test helper: mounts a FUSE file system on MOUNTPOINT (no libfuse: it opens
 * /dev/fuse and calls mount(2) itself), prints "ready" on stdout and then
 * never answers a single request, not even FUSE_INIT.
 *
 * Until the INIT reply arrives the kernel keeps the connection "blocked", so
 * any process that then touches a name below the mount (stat MOUNT/x, cat
 * MOUNT/x) sleeps killably -- TASK_KILLABLE, shown as "D (disk sleep)" -- in
 * fuse_get_req().  The cgroup v2 freezer only wakes interruptible sleepers,
 * so a cgroup holding such a process never reports "frozen 1".
 *
 * On SIGTERM, SIGINT, SIGHUP or EOF on stdin it closes /dev/fuse (which
 * aborts the connection: the blocked processes get ENOTCONN), detaches the
 * mount (umount2 MNT_DETACH; the harness does it too, in case we were
 * SIGKILLed) and exits 0.
 *
 * Needs root (CAP_SYS_ADMIN in the initial user namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
        stop = sig;
}

int main(int argc, char **argv) {
        struct sigaction sa;
        struct pollfd pfd;
        char opts[128];
        char buf[256];
        int fd;

        if (argc != 2) {
                fprintf(stderr, "usage: %s MOUNTPOINT\n", argv[0]);
                return 2;
        }

        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        /* No SA_RESTART: poll() must return EINTR so that we leave. */
        if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
            sigaction(SIGHUP, &sa, NULL) < 0) {
                perror("fuse-hang: sigaction");
                return 1;
        }

        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                perror("fuse-hang: open /dev/fuse");
                return 1;
        }

        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
        if (mount("fuse-hang", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
                fprintf(stderr, "fuse-hang: mount %s: %s\n", argv[1], strerror(errno));
                return 1;
        }

        if (printf("ready\n") < 0 || fflush(stdout) != 0) {
                umount2(argv[1], MNT_DETACH);
                return 1;
        }

        /* Never read /dev/fuse: the INIT request stays unanswered. Wait for EOF
         * on stdin or a signal. */
        pfd.fd = STDIN_FILENO;
        pfd.events = POLLIN;
        while (!stop) {
                ssize_t n;

                if (poll(&pfd, 1, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("fuse-hang: poll");
                        break;
                }
                if (pfd.revents & POLLNVAL)
                        pause(); /* no stdin at all: wait for a signal */
                n = read(STDIN_FILENO, buf, sizeof(buf));
                if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                        break;
        }

        close(fd); /* aborts the connection: waiters get ENOTCONN */
        if (umount2(argv[1], MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT)
                fprintf(stderr, "fuse-hang: umount2 %s: %s\n", argv[1], strerror(errno));
        return 0;
}
