/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * spawn-sleepers: start `sleep infinity` processes directly inside cgroups, fast.
 *
 * usage: spawn-sleepers [--count=K] [--exec] DIR...
 *
 * For every cgroup directory DIR, K (default 1) children are created with
 * clone3(CLONE_INTO_CGROUP), so they are born in DIR: no migration through
 * cgroup.procs (which takes the cgroup_threadgroup_rwsem for writing, once per
 * process).  Each child sets PR_SET_PDEATHSIG=SIGKILL, so it dies with this
 * helper, puts stdin/stdout on /dev/null and sleeps in pause(), as
 * `sleep infinity` does, under the name "sleeper"; with --exec it execs
 * `/bin/sleep infinity` instead (an exec costs milliseconds on some VMs: 4000
 * of them take half a minute there).  Kernels without clone3 or
 * CLONE_INTO_CGROUP get fork() plus a write of "0" to DIR/cgroup.procs in the
 * child instead.
 *
 * Once every child is set up (a close-on-exec pipe shared by all of them,
 * which each closes by exec'ing or explicitly, reaches EOF) it prints
 * "ready N" on stdout.  It then waits until its stdin
 * reaches EOF or SIGTERM/SIGINT/SIGHUP arrives, SIGKILLs the sleepers it still
 * has (only its own unreaped children, so never a recycled pid), reaps them all
 * and exits 0.  Exit status 1 if a sleeper could not be started: the ones
 * already started are killed and reaped first.
 *
 * Used by tests/bench/run-bench for the "one sleeping process in every leaf"
 * runs (4000 processes for n = 1000).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t *pids;
static size_t n_pids;

static void kill_and_reap(void) {
        for (size_t i = 0; i < n_pids; i++)
                (void) kill(pids[i], SIGKILL); /* unreaped children: the pid cannot be recycled */
        for (;;) {
                pid_t p = waitpid(-1, NULL, 0);
                if (p < 0 && errno == EINTR)
                        continue;
                if (p < 0)
                        break; /* ECHILD: all reaped */
        }
        n_pids = 0;
}

static bool arg_exec;

/* In the child: nothing but async-signal-safe calls until exec (or pause). */
_Noreturn static void child_run(pid_t parent, int nullfd, int errfd, const int *close_fds, size_t n_close,
                                const sigset_t *oldmask, const char *procs) {
        int e;

        if (procs) {
                int fd = open(procs, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1) {
                        e = errno;
                        goto fail;
                }
                close(fd);
        }
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent) {
                e = errno ?: ESRCH;
                goto fail;
        }
        if (dup2(nullfd, STDIN_FILENO) < 0 || dup2(nullfd, STDOUT_FILENO) < 0) {
                e = errno;
                goto fail;
        }
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        if (arg_exec) {
                execl("/bin/sleep", "sleep", "infinity", (char *) NULL);
                e = errno;
                goto fail;
        }
        /* The same kernel state as `sleep infinity` (which calls pause() too), without
         * the cost of an exec: drop what we inherited, then sleep until killed. */
        for (size_t i = 0; i < n_close; i++)
                close(close_fds[i]);
        (void) prctl(PR_SET_NAME, "sleeper", 0, 0, 0);
        close(errfd); /* tells the parent we are ready */
        for (;;)
                pause();
fail:
        (void) !write(errfd, &e, sizeof e);
        _exit(127);
}

static pid_t spawn_one(const char *dir, pid_t self, int nullfd, int errfd, const int *close_fds, size_t n_close,
                       const sigset_t *oldmask, bool *use_clone3) {
        char procs[4096];
        pid_t pid;

        if (*use_clone3) {
                int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0) {
                        fprintf(stderr, "spawn-sleepers: open %s: %m\n", dir);
                        return -1;
                }
                struct clone_args args = {
                        .flags = CLONE_INTO_CGROUP,
                        .exit_signal = SIGCHLD,
                        .cgroup = (uint64_t) dfd,
                };
                pid = (pid_t) syscall(SYS_clone3, &args, sizeof args);
                if (pid == 0) {
                        close(dfd);
                        child_run(self, nullfd, errfd, close_fds, n_close, oldmask, NULL);
                }
                int e = errno;
                close(dfd);
                if (pid > 0)
                        return pid;
                if (e != ENOSYS && e != E2BIG && e != EINVAL) {
                        fprintf(stderr, "spawn-sleepers: clone3 into %s: %s\n", dir, strerror(e));
                        return -1;
                }
                *use_clone3 = false; /* old kernel: fall back for this and every later one */
        }
        if ((size_t) snprintf(procs, sizeof procs, "%s/cgroup.procs", dir) >= sizeof procs) {
                fprintf(stderr, "spawn-sleepers: path too long: %s\n", dir);
                return -1;
        }
        pid = fork();
        if (pid == 0)
                child_run(self, nullfd, errfd, close_fds, n_close, oldmask, procs);
        if (pid < 0)
                fprintf(stderr, "spawn-sleepers: fork: %m\n");
        return pid;
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "count", required_argument, NULL, 'c' },
                { "exec", no_argument, NULL, 'e' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        unsigned long count = 1;
        bool use_clone3 = true;
        sigset_t mask, oldmask;
        int pipefd[2], nullfd, sfd, c, e;
        pid_t self = getpid();

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'c': {
                        char *end;
                        errno = 0;
                        count = strtoul(optarg, &end, 10);
                        if (errno || *end || count == 0 || count > 100000) {
                                fprintf(stderr, "spawn-sleepers: bad --count=%s\n", optarg);
                                return 2;
                        }
                        break;
                }
                case 'e':
                        arg_exec = true;
                        break;
                case 'h':
                        printf("usage: spawn-sleepers [--count=K] [--exec] DIR...\n");
                        return 0;
                default:
                        return 2;
                }
        if (optind >= argc) {
                fprintf(stderr, "usage: spawn-sleepers [--count=K] [--exec] DIR...\n");
                return 2;
        }

        pids = calloc((size_t) (argc - optind) * count, sizeof *pids);
        if (!pids) {
                fprintf(stderr, "spawn-sleepers: out of memory\n");
                return 1;
        }

        /* Termination requests are read from a signalfd; children get the old mask back. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, &oldmask) < 0 || (sfd = signalfd(-1, &mask, SFD_CLOEXEC)) < 0) {
                fprintf(stderr, "spawn-sleepers: signalfd: %m\n");
                return 1;
        }
        nullfd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nullfd < 0 || pipe2(pipefd, O_CLOEXEC) < 0) {
                fprintf(stderr, "spawn-sleepers: %m\n");
                return 1;
        }

        const int close_fds[] = { sfd, nullfd, pipefd[0] };
        for (int i = optind; i < argc; i++)
                for (unsigned long k = 0; k < count; k++) {
                        pid_t pid = spawn_one(argv[i], self, nullfd, pipefd[1], close_fds, 3, &oldmask,
                                              &use_clone3);
                        if (pid < 0) {
                                kill_and_reap();
                                return 1;
                        }
                        pids[n_pids++] = pid;
                }

        /* Every child closes its copy of the write end once it is set up, by exec'ing or
         * explicitly (or writes errno there and exits). */
        close(pipefd[1]);
        for (;;) {
                ssize_t n = read(pipefd[0], &e, sizeof e);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0)
                        break;
                if (n < 0)
                        e = errno;
                fprintf(stderr, "spawn-sleepers: a sleeper failed to start: %s\n", strerror(e));
                kill_and_reap();
                return 1;
        }
        close(pipefd[0]);

        printf("ready %zu\n", n_pids);
        fflush(stdout);

        /* Wait for EOF on stdin or a termination signal. */
        for (;;) {
                struct pollfd p[2] = {
                        { .fd = STDIN_FILENO, .events = POLLIN },
                        { .fd = sfd, .events = POLLIN },
                };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[1].revents)
                        break;
                if (p[0].revents & (POLLHUP | POLLERR | POLLNVAL))
                        break;
                if (p[0].revents & POLLIN) {
                        char buf[256];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
                        if (n <= 0 && !(n < 0 && (errno == EINTR || errno == EAGAIN)))
                                break;
                }
        }
        kill_and_reap();
        return 0;
}
