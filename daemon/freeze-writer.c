/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include "freeze-writer.h"

typedef struct WriterJob {
        FreezeWrite *w;
        size_t n;
        uint64_t delay_usec;
        FreezeWriterReport *report;
} WriterJob;

void freeze_write_direct(FreezeWrite *w, size_t n, uint64_t delay_usec) {
        size_t i = 0;

        for (; i < n; i++) {
                if (w[i].fd < 0) {
                        w[i].r = 0;
                        continue;
                }
                w[i].r = pwrite(w[i].fd, w[i].value ? "1" : "0", 1, 0) == 1 ? 0 : errno > 0 ? -errno : -EIO;
                if (w[i].r < 0)
                        break;
                if (delay_usec > 0)
                        (void) usleep((useconds_t) delay_usec);
        }
        if (i < n)
                for (i++; i < n; i++)
                        w[i].r = -ECANCELED;
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
        freeze_write_direct(job->w, job->n, job->delay_usec);
        return NULL;
}

int freeze_write_realtime(FreezeWrite *w, size_t n, uint64_t delay_usec, FreezeWriterReport *report) {
        WriterJob job = { .w = w, .n = n, .delay_usec = delay_usec, .report = report };
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
        CPU_SET(cpu, &cpus);
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
        (void) pthread_join(thread, NULL);
        return 0;
}
