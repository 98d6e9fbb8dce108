/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* freeze_write_realtime() and freeze_write_direct() over plain files (the
 * writes are pwrite()s of "0"/"1" at offset 0, whatever the file): results,
 * the stop at the first failure, how the thread ran, and the progress it
 * reports to the caller while it goes on.  Needs real-time
 * scheduling (root, or RLIMIT_RTPRIO >= 1); exits 77 without it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "freeze-writer.h"
#include "test-util.h"
#include "util.h"

#define N 5

static int tmpfile_fd(void) {
        char name[] = "/tmp/test-freeze-writer-XXXXXX";
        int fd = mkstemp(name);
        if (fd >= 0)
                (void) unlink(name);
        return fd;
}

/* The file's first byte, or '-' if it has none. */
static char content(int fd) {
        char c;
        return pread(fd, &c, 1, 0) == 1 ? c : '-';
}

/* The same file again, open for reading only: a write to it fails (EBADF). */
static int reopen_read_only(int fd) {
        char path[64];
        int ro;

        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ro = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(ro >= 0);
        return ro;
}

typedef int (*run_t)(FreezeWrite *w, size_t n);

static int run_realtime(FreezeWrite *w, size_t n) {
        return freeze_write_realtime(w, n, 0, NULL, NULL, NULL);
}

static int run_direct(FreezeWrite *w, size_t n) {
        freeze_write_direct(w, n, 0);
        return 0;
}

static void test_writes(const char *what, run_t run) {
        int fds[N], ro;
        FreezeWrite w[N];

        for (int i = 0; i < N; i++) {
                fds[i] = tmpfile_fd();
                CHECK(fds[i] >= 0);
        }

        /* All written, in order; an fd < 0 is left out and counts as done. */
        for (int i = 0; i < N; i++)
                w[i] = (FreezeWrite) { .fd = i == 2 ? -1 : fds[i], .value = i % 2 == 0, .r = 12345 };
        CHECK_R(run(w, N), 0);
        for (int i = 0; i < N; i++) {
                CHECK_R(w[i].r, 0);
                CHECK(content(fds[i]) == (i == 2 ? '-' : i % 2 == 0 ? '1' : '0'));
        }
        /* A second write replaces the first byte (offset 0), as for cgroup.freeze. */
        w[0].value = false;
        CHECK_R(run(w, 1), 0);
        CHECK(content(fds[0]) == '0');

        /* A failure stops the writes: those after it are not made. */
        /* fds[2], never written above, read-only. */
        ro = reopen_read_only(fds[2]);
        for (int i = 0; i < N; i++)
                w[i] = (FreezeWrite) { .fd = i == 2 ? ro : fds[i], .value = true, .r = 12345 };
        CHECK_R(run(w, N), 0);
        CHECK_R(w[0].r, 0);
        CHECK_R(w[1].r, 0);
        CHECK_R(w[2].r, -EBADF);
        CHECK_R(w[3].r, -ECANCELED);
        CHECK_R(w[4].r, -ECANCELED);
        CHECK(content(fds[1]) == '1');
        CHECK(content(fds[3]) == '0' && content(fds[4]) == '1'); /* as the first round left them */

        /* Nothing to write. */
        CHECK_R(run(w, 0), 0);

        for (int i = 0; i < N; i++)
                close(fds[i]);
        close(ro);
        printf("%s: done\n", what);
}

static void test_report(void) {
        FreezeWriterReport rep;
        FreezeWrite w = { .fd = tmpfile_fd(), .value = true };

        CHECK(w.fd >= 0);
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK_R(w.r, 0);
        CHECK_R(rep.policy, SCHED_FIFO);
        CHECK_R(rep.priority, 1);
        /* Pinned to another CPU than the caller's at the time of the call,
         * one the process may use, where it may use more than one. */
        cpu_set_t allowed, one;
        CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
        CHECK(rep.caller_cpu >= 0 && rep.cpu >= 0);
        CHECK(CPU_ISSET(rep.cpu, &allowed));
        if (CPU_COUNT(&allowed) > 1)
                CHECK(rep.cpu != rep.caller_cpu);
        CHECK(rep.signals_blocked);
        /* The caller's own scheduling is untouched. */
        CHECK_R(sched_getscheduler(0), SCHED_OTHER);

        /* Allowed one CPU, the process writes from that one. */
        CPU_ZERO(&one);
        CPU_SET(rep.caller_cpu, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK_R(w.r, 0);
        CHECK_R(rep.cpu, rep.caller_cpu);
        CHECK(CPU_ISSET(rep.cpu, &one));
        CHECK(sched_setaffinity(0, sizeof allowed, &allowed) == 0);
        close(w.fd);
}

/* A call right after long writes writes from another CPU than theirs, where
 * the kernel's notification work for them may still run (choose_cpu()); a
 * call after short writes, or once that time has passed, from the CPU after
 * the caller's again.  The long writes are one write and a sleep (delay_usec),
 * which the thread counts as writing time. */
static void test_busy_cpu(void) {
        FreezeWriterReport rep;
        FreezeWrite w = { .fd = tmpfile_fd(), .value = true };
        cpu_set_t allowed;
        uint64_t end;
        int long_cpu;

        CHECK(w.fd >= 0);
        CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
        if (CPU_COUNT(&allowed) < 2) {
                printf("busy cpu: not run, the process may use one CPU only\n");
                close(w.fd);
                return;
        }
        CHECK_R(freeze_write_realtime(&w, 1, 50000, NULL, NULL, &rep), 0);
        end = now_usec();
        long_cpu = rep.cpu;
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK_R(w.r, 0);
        CHECK(rep.cpu != long_cpu);
        CHECK(CPU_ISSET(rep.cpu, &allowed));
        CHECK(now_usec() - end < 50000); /* (else the check above proved nothing) */
        /* That write was short: the next goes to the CPU after the caller's. */
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK(rep.cpu != rep.caller_cpu);

        /* Long writes again, and a call once their time has passed. */
        CHECK_R(freeze_write_realtime(&w, 1, 50000, NULL, NULL, &rep), 0);
        usleep(120000);
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK(rep.cpu != rep.caller_cpu);
        close(w.fd);
        printf("busy cpu: done\n");
}

typedef struct Progress {
        FreezeWrite *w;
        const int *fds;
        pid_t caller;
        size_t calls, last;
        bool in_caller, increasing, written;
        bool ask_more;              /* say "more to do" after the first call */
        unsigned more_left, again;  /* calls still wanted; calls made for them */
} Progress;

static Progress progress_new(FreezeWrite *w, const int *fds, bool ask_more) {
        return (Progress) { .w = w, .fds = fds, .caller = gettid(), .in_caller = true, .increasing = true,
                            .written = true, .ask_more = ask_more };
}

static bool on_progress(size_t done, void *userdata) {
        Progress *p = userdata;

        p->calls++;
        p->in_caller = p->in_caller && gettid() == p->caller;
        if (p->more_left > 0 && done == p->last) {
                /* Called again for the work it said it had left. */
                p->more_left--;
                p->again++;
                return p->more_left > 0;
        }
        p->increasing = p->increasing && done > p->last;
        /* What it says is done is done: in the file, its r set. */
        for (size_t i = 0; i < done; i++)
                p->written = p->written && p->w[i].r != 12345 &&
                             (p->w[i].r < 0 || content(p->fds[i]) == (p->w[i].value ? '1' : '0'));
        p->last = done;
        /* Once, after the first write: "more to do" for three calls. */
        if (p->ask_more && p->calls == 1) {
                p->more_left = 3;
                return true;
        }
        return false;
}

/* The progress callback: in the caller's thread while the writes go on (20
 * ms apart: more than one call), each call with more writes done, the last
 * with all of them; after a failure too, the cancelled writes included. */
static void test_progress(void) {
        int fds[N], ro;
        FreezeWrite w[N];

        for (int i = 0; i < N; i++) {
                fds[i] = tmpfile_fd();
                CHECK(fds[i] >= 0);
                w[i] = (FreezeWrite) { .fd = fds[i], .value = i % 2 == 1, .r = 12345 };
        }
        Progress p = progress_new(w, fds, false);
        CHECK_R(freeze_write_realtime(w, N, 20000, on_progress, &p, NULL), 0);
        CHECK(p.calls >= 2 && p.calls <= N);
        CHECK_R((int) p.last, N);
        CHECK(p.in_caller);
        CHECK(p.increasing);
        CHECK(p.written);

        ro = reopen_read_only(fds[2]);
        for (int i = 0; i < N; i++)
                w[i] = (FreezeWrite) { .fd = i == 2 ? ro : fds[i], .value = true, .r = 12345 };
        p = progress_new(w, fds, false);
        CHECK_R(freeze_write_realtime(w, N, 20000, on_progress, &p, NULL), 0);
        CHECK_R((int) p.last, N);
        CHECK(p.increasing && p.in_caller && p.written);
        CHECK_R(w[2].r, -EBADF);
        CHECK_R(w[4].r, -ECANCELED);

        /* "More to do": called again at once, with what is done by then,
         * until it says no more (3 calls here, each far shorter than the 20
         * ms to the next write, so all with the first write's count). */
        for (int i = 0; i < N; i++)
                w[i] = (FreezeWrite) { .fd = fds[i], .value = true, .r = 12345 };
        p = progress_new(w, fds, true);
        CHECK_R(freeze_write_realtime(w, N, 20000, on_progress, &p, NULL), 0);
        CHECK_R((int) p.again, 3);
        CHECK_R((int) p.last, N);
        CHECK(p.increasing && p.in_caller && p.written);

        for (int i = 0; i < N; i++)
                close(fds[i]);
        close(ro);
}

/* The thread waits FREEZE_WRITER_LINGER_USEC for the next call's writes,
 * which it then makes (moved to the CPU after the caller's), and leaves after
 * that; a child of fork() makes its own. */
static void test_linger(void) {
        FreezeWriterReport rep;
        FreezeWrite w = { .fd = tmpfile_fd(), .value = true };
        uint64_t start, deadline;
        pid_t pid;
        int status;

        CHECK(w.fd >= 0);
        /* Whatever an earlier test left has gone. */
        deadline = now_usec() + FREEZE_WRITER_LINGER_USEC + 2000000;
        while (count_threads() > 1 && now_usec() < deadline)
                usleep(1000);
        CHECK_R(count_threads(), 1);

        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK(!rep.reused);
        start = now_usec();
        CHECK_R(count_threads(), 2);
        w.value = false;
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK(rep.reused);
        CHECK_R(w.r, 0);
        CHECK(content(w.fd) == '0');
        CHECK_R(rep.policy, SCHED_FIFO);
        CHECK(rep.signals_blocked);
        cpu_set_t allowed;
        CHECK(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
        if (CPU_COUNT(&allowed) > 1)
                CHECK(rep.cpu != rep.caller_cpu);

        /* A child has none of the parent's threads: it makes its own, and
         * the parent's waiting one is untouched. */
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                FreezeWriterReport crep;
                w.value = true;
                if (freeze_write_realtime(&w, 1, 0, NULL, NULL, &crep) != 0 || w.r != 0 || crep.reused)
                        _exit(1);
                _exit(content(w.fd) == '1' ? 0 : 2);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK_R(WEXITSTATUS(status), 0);

        /* Gone once it has waited long enough, not before. */
        deadline = start + FREEZE_WRITER_LINGER_USEC + 2000000;
        while (count_threads() > 1 && now_usec() < deadline)
                usleep(1000);
        CHECK_R(count_threads(), 1);
        CHECK(now_usec() - start >= FREEZE_WRITER_LINGER_USEC);
        CHECK_R(freeze_write_realtime(&w, 1, 0, NULL, NULL, &rep), 0);
        CHECK(!rep.reused);
        close(w.fd);
}

/* Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 the kernel refuses the
 * policy: -EPERM, and nothing written.  In a child, which drops them. */
static void test_refused(void) {
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                struct rlimit rl = { 0, 0 };
                FreezeWrite w = { .fd = tmpfile_fd(), .value = true, .r = 12345 };

                if (syscall(SYS_capget, &h, d) < 0)
                        _exit(2);
                d[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
                d[CAP_SYS_NICE / 32].permitted &= ~(1u << (CAP_SYS_NICE % 32));
                if (syscall(SYS_capset, &h, d) < 0 || setrlimit(RLIMIT_RTPRIO, &rl) < 0)
                        _exit(3);
                if (freeze_write_realtime(&w, 1, 0, NULL, NULL, NULL) != -EPERM)
                        _exit(4);
                if (w.r != 12345 || content(w.fd) != '-')
                        _exit(5); /* nothing written, nothing reported */
                _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK_R(WEXITSTATUS(status), 0);
}

/* write_result(), the writes' verdict: a short write is -EIO, not the -errno
 * of whatever failed before (until session 46 the writer, and the arming of
 * a pressure trigger, returned that stale errno, or took a short write for a
 * success of errno 0).  A real short write: RLIMIT_FSIZE 1, two bytes. */
static void test_write_result(void) {
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = { 1, 1 };
                int fd = tmpfile_fd();
                ssize_t k;

                if (fd < 0 || setrlimit(RLIMIT_FSIZE, &rl) < 0)
                        _exit(2);
                errno = EBADF; /* stale */
                k = pwrite(fd, "ab", 2, 0);
                if (k != 1)
                        _exit(3);
                if (write_result(k, 2) != -EIO)
                        _exit(4);
                errno = 0;
                if (write_result(k, 2) != -EIO)
                        _exit(5);
                if (write_result(pwrite(fd, "a", 1, 0), 1) != 0)
                        _exit(6);
                if (write_result(pwrite(-1, "a", 1, 0), 1) != -EBADF)
                        _exit(7);
                _exit(0);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK_R(WEXITSTATUS(status), 0);
}

int main(void) {
        FreezeWrite probe = { .fd = -1 };
        int r = freeze_write_realtime(&probe, 1, 0, NULL, NULL, NULL);

        if (r == -EPERM) {
                printf("SKIP: real-time scheduling is refused here (needs root or RLIMIT_RTPRIO >= 1)\n");
                return 77;
        }
        CHECK_R(r, 0);
        test_write_result();
        test_writes("realtime", run_realtime);
        test_writes("direct", run_direct);
        test_report();
        test_busy_cpu();
        test_progress();
        /* Right after the others: their thread still waits for a call. */
        test_refused();
        test_linger();
        return test_summary("test-freeze-writer");
}
