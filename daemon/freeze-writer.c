/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "freeze-writer.h"

typedef struct WriterJob {
        FreezeWrite *w;
        size_t n;
        uint64_t delay_usec;
        FreezeWriterReport *report;
        /* With a progress callback: (writes done << 1) | 1 once all are, one
         * futex word the caller sleeps on. */
        bool publish;
        _Atomic uint32_t progress;
} WriterJob;

static void futex_wake(_Atomic uint32_t *word) {
        (void) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t value) {
        /* Returns at once if *word is no longer value: no wake-up is lost. */
        (void) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void job_publish(WriterJob *job, size_t done, bool finished) {
        if (!job || !job->publish)
                return;
        atomic_store_explicit(&job->progress, (uint32_t) done << 1 | finished, memory_order_release);
        futex_wake(&job->progress);
}

static void write_all(FreezeWrite *w, size_t n, uint64_t delay_usec, WriterJob *job) {
        size_t i = 0;

        for (; i < n; i++) {
                if (w[i].fd < 0) {
                        w[i].r = 0;
                        continue;
                }
                w[i].r = pwrite(w[i].fd, w[i].value ? "1" : "0", 1, 0) == 1 ? 0 : errno > 0 ? -errno : -EIO;
                if (w[i].r < 0)
                        break;
                job_publish(job, i + 1, false);
                if (delay_usec > 0)
                        (void) usleep((useconds_t) delay_usec);
        }
        if (i < n)
                for (i++; i < n; i++)
                        w[i].r = -ECANCELED;
        job_publish(job, n, true);
}

void freeze_write_direct(FreezeWrite *w, size_t n, uint64_t delay_usec) {
        write_all(w, n, delay_usec, NULL);
}

static void *writer_main(void *userdata) {
        WriterJob *job = userdata;

        if (job->report) {
                struct sched_param param = {};
                sigset_t mask;

                job->report->cpu = sched_getcpu();
                (void) pthread_getschedparam(pthread_self(), &job->report->policy, &param);
                job->report->priority = param.sched_priority;
                job->report->signals_blocked = pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0 &&
                                               sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGHUP) == 1 &&
                                               sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGCHLD) == 1;
        }
        write_all(job->w, job->n, job->delay_usec, job);
        return NULL;
}

/* Calls progress whenever the thread published more writes done, or while it
 * has more to do, until the thread published the last. */
static void follow_progress(WriterJob *job, freeze_progress_t progress, void *userdata) {
        uint32_t seen = 0;
        bool more = false;

        for (;;) {
                uint32_t p = atomic_load_explicit(&job->progress, memory_order_acquire);

                if (p >> 1 != seen) {
                        seen = p >> 1;
                        more = progress(seen, userdata);
                } else if (p & 1)
                        return;
                else if (more)
                        more = progress(seen, userdata);
                else
                        futex_wait(&job->progress, p);
        }
}

/* The CPU for the writer: the next one after the caller's that the process
 * may run on (see freeze-writer.h), or the caller's own if it is the only one. */
static int writer_cpu(int caller_cpu) {
        cpu_set_t allowed;

        if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
                return caller_cpu;
        for (int i = 1; i < CPU_SETSIZE; i++) {
                int c = (caller_cpu + i) % CPU_SETSIZE;
                if (CPU_ISSET(c, &allowed))
                        return c;
        }
        return caller_cpu;
}

int freeze_write_realtime(FreezeWrite *w, size_t n, uint64_t delay_usec, freeze_progress_t progress, void *userdata,
                          FreezeWriterReport *report) {
        /* The count shares a 32-bit futex word with the end bit. */
        if (n > UINT32_MAX >> 1)
                progress = NULL;
        WriterJob job = { .w = w, .n = n, .delay_usec = delay_usec, .report = report, .publish = progress != NULL };
        struct sched_param param = { .sched_priority = 1 };
        pthread_attr_t attr;
        sigset_t all, saved;
        cpu_set_t cpus;
        pthread_t thread;
        int cpu, r;

        cpu = sched_getcpu();
        if (cpu < 0)
                return -errno;
        if (report)
                *report = (FreezeWriterReport) { .caller_cpu = cpu, .cpu = -1, .policy = -1 };
        r = pthread_attr_init(&attr);
        if (r != 0)
                return -r;
        CPU_ZERO(&cpus);
        CPU_SET(writer_cpu(cpu), &cpus);
        /* glibc applies these before the thread runs, and pthread_create()
         * fails with their error (EPERM for the policy). */
        if ((r = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED)) != 0 ||
            (r = pthread_attr_setschedpolicy(&attr, SCHED_FIFO)) != 0 ||
            (r = pthread_attr_setschedparam(&attr, &param)) != 0 ||
            (r = pthread_attr_setaffinity_np(&attr, sizeof cpus, &cpus)) != 0 ||
            (r = pthread_attr_setstacksize(&attr, 64 * 1024)) != 0) {
                (void) pthread_attr_destroy(&attr);
                return -r;
        }
        /* Signals stay with the main loop (libevent's handlers). */
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = pthread_create(&thread, &attr, writer_main, &job);
        (void) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        (void) pthread_attr_destroy(&attr);
        if (r != 0)
                return -r;
        if (job.publish)
                follow_progress(&job, progress, userdata);
        (void) pthread_join(thread, NULL);
        return 0;
}
