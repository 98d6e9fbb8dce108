/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "freeze-writer.h"
#include "util.h"

typedef struct WriterJob {
        FreezeWrite *w;
        size_t n;
        uint64_t delay_usec;
        FreezeWriterReport *report;
        /* (writes done << 1) | 1 once all are, one futex word the caller
         * sleeps on: after every write with a progress callback (publish),
         * else once, at the end. */
        bool publish;
        _Atomic uint32_t progress;
        /* How long the writes took, from the first to the last (ns), set
         * before the end is published. */
        int64_t write_ns;
} WriterJob;

/* The writer thread between calls.  At most one thread waits for a job: the
 * caller hands it the next call's, or, once it has waited
 * FREEZE_WRITER_LINGER_USEC for one, it leaves and the next call makes a new
 * thread.  Jobs come from one thread only (freezerd's main loop). */
enum {
        WRITER_NONE,    /* no thread waits: the next call makes one */
        WRITER_IDLE,    /* a thread waits on state for a job, until its deadline */
        WRITER_CLAIMED, /* the caller took the waiting thread and moves it to its CPU */
        WRITER_JOB,     /* job is set, the thread works on it */
};

static struct {
        _Atomic uint32_t state;
        WriterJob *job; /* written before state becomes WRITER_JOB */
        pid_t tid;      /* the waiting thread's */
        int cpu;        /* the CPU it is pinned to */
} writer = { .state = WRITER_NONE, .tid = -1, .cpu = -1 };

/* Where the last job's writes went and until when the kernel's notification
 * work they queued there probably runs (CLOCK_MONOTONIC ns): see
 * choose_cpu().  Caller side only. */
static struct {
        int cpu;
        int64_t busy_until_ns;
} last_writes = { .cpu = -1 };

static int64_t timespec_nsec(const struct timespec *t) {
        return (int64_t) t->tv_sec * 1000000000 + t->tv_nsec;
}

static int64_t monotonic_nsec(void) {
        struct timespec now;

        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        return timespec_nsec(&now);
}

static void futex_wake(_Atomic uint32_t *word) {
        (void) syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void futex_wait(_Atomic uint32_t *word, uint32_t value, const struct timespec *timeout) {
        /* Returns at once if *word is no longer value: no wake-up is lost. */
        (void) syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, timeout, NULL, 0);
}

static void job_publish(WriterJob *job, size_t done, bool finished) {
        if (!job || !(job->publish || finished))
                return;
        /* Once the end is stored, the caller may return and its stack, where
         * the job is, be reused: only the word's address is used after it. */
        _Atomic uint32_t *word = &job->progress;
        atomic_store_explicit(word, (uint32_t) done << 1 | finished, memory_order_release);
        futex_wake(word);
}

/* The writes; with a job (from the thread), the thread is waiting for the
 * next one before the end is published: once the caller sees the end, it may
 * hand out the next job at once. */
static void write_all(FreezeWrite *w, size_t n, uint64_t delay_usec, WriterJob *job) {
        int64_t start = job ? monotonic_nsec() : 0;
        size_t i = 0;

        for (; i < n; i++) {
                if (w[i].fd < 0) {
                        w[i].r = 0;
                        continue;
                }
                w[i].r = write_result(pwrite(w[i].fd, w[i].value ? "1" : "0", 1, 0), 1);
                if (w[i].r < 0 && !(w[i].may_vanish && (w[i].r == -ENOENT || w[i].r == -ENODEV)))
                        break;
                job_publish(job, i + 1, false);
                if (delay_usec > 0)
                        (void) usleep((useconds_t) delay_usec);
        }
        if (i < n)
                for (i++; i < n; i++)
                        w[i].r = -ECANCELED;
        if (job) {
                job->write_ns = monotonic_nsec() - start;
                atomic_store_explicit(&writer.state, WRITER_IDLE, memory_order_release);
        }
        job_publish(job, n, true);
}

void freeze_write_direct(FreezeWrite *w, size_t n, uint64_t delay_usec) {
        write_all(w, n, delay_usec, NULL);
}

static void writer_run(WriterJob *job, bool reused) {
        if (job->report) {
                struct sched_param param = {};
                sigset_t mask;

                job->report->cpu = sched_getcpu();
                job->report->reused = reused;
                (void) pthread_getschedparam(pthread_self(), &job->report->policy, &param);
                job->report->priority = param.sched_priority;
                job->report->signals_blocked = pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0 &&
                                               sigismember(&mask, SIGTERM) == 1 && sigismember(&mask, SIGHUP) == 1 &&
                                               sigismember(&mask, SIGINT) == 1 && sigismember(&mask, SIGCHLD) == 1;
        }
        write_all(job->w, job->n, job->delay_usec, job);
}

/* Waits for the next job until the linger deadline: the job, or NULL once the
 * thread is to leave (state is then WRITER_NONE, and the thread no longer
 * touches it). */
static WriterJob *writer_wait(void) {
        struct timespec now;
        int64_t deadline;

        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        deadline = timespec_nsec(&now) + (int64_t) FREEZE_WRITER_LINGER_USEC * 1000;
        for (;;) {
                uint32_t st = atomic_load_explicit(&writer.state, memory_order_acquire);

                if (st == WRITER_JOB)
                        return writer.job;
                if (st == WRITER_CLAIMED) {
                        /* Being moved: the job follows at once. */
                        futex_wait(&writer.state, WRITER_CLAIMED, NULL);
                        continue;
                }
                (void) clock_gettime(CLOCK_MONOTONIC, &now);
                int64_t left = deadline - timespec_nsec(&now);
                if (left <= 0) {
                        uint32_t idle = WRITER_IDLE;
                        /* Leave, unless the caller took it just now. */
                        if (atomic_compare_exchange_strong_explicit(&writer.state, &idle, WRITER_NONE,
                                                                    memory_order_acq_rel, memory_order_acquire))
                                return NULL;
                        continue;
                }
                struct timespec rel = { .tv_sec = (time_t) (left / 1000000000), .tv_nsec = (long) (left % 1000000000) };
                futex_wait(&writer.state, WRITER_IDLE, &rel);
        }
}

static void *writer_main(void *userdata) {
        WriterJob *job = userdata;

        writer.tid = gettid(); /* the caller reads it after the first job's end */
        for (bool reused = false; job; reused = true) {
                writer_run(job, reused);
                job = writer_wait();
        }
        return NULL;
}

/* A child of fork() has no writer thread, whatever the parent had. */
static void writer_atfork_child(void) {
        atomic_store(&writer.state, WRITER_NONE);
        writer.job = NULL;
        writer.tid = -1;
        writer.cpu = -1;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void) {
        (void) pthread_atfork(NULL, NULL, writer_atfork_child);
}

/* Calls progress (may be NULL) whenever the thread published more writes
 * done, or while it has more to do, until the thread published the last. */
static void follow_progress(WriterJob *job, freeze_progress_t progress, void *userdata) {
        uint32_t seen = 0;
        bool more = false;

        for (;;) {
                uint32_t p = atomic_load_explicit(&job->progress, memory_order_acquire);

                if (progress && p >> 1 != seen) {
                        seen = p >> 1;
                        more = progress(seen, userdata);
                } else if (p & 1)
                        return;
                else if (more)
                        more = progress(seen, userdata);
                else
                        futex_wait(&job->progress, p, NULL);
        }
}

/* The CPU for the writer: the next one after the caller's that the process
 * may run on and is not `avoid` (see freeze-writer.h; -1: none), or the
 * caller's own if there is no other. */
static int writer_cpu(int caller_cpu, int avoid) {
        cpu_set_t allowed;

        if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
                return caller_cpu;
        for (int i = 1; i < CPU_SETSIZE; i++) {
                int c = (caller_cpu + i) % CPU_SETSIZE;
                if (c != avoid && CPU_ISSET(c, &allowed))
                        return c;
        }
        return caller_cpu;
}

/* The CPU for this call's writes.  A write that changes many groups leaves
 * the kernel's notification work for them queued on its CPU, to run once the
 * writer sleeps, without preemption (see freeze-writer.h): about 0.6 of the
 * write's own time here (4,000 groups: a 2.9 ms write, 1.7 ms of work).  A
 * call that comes before that is done (a thaw right after a freeze's reply)
 * and sends its writes to that CPU waits for it in full, real-time or not:
 * the scheduler places a woken real-time thread on its CPU while a normal
 * task runs there, counting on preemption that a kernel without it does not
 * give (1.0-1.4 ms a thaw step of the batch benchmark at n=1,000).  Such a
 * call writes from another CPU, the caller's where there is no third one (the
 * caller leaves it to the thread as it waits); most of the new writes' own
 * notifications are then held back by the kernel's 10 ms limit per file and
 * come later from a timer.  The work is taken to last as long as the writes
 * did: more than it does, which costs nothing but a write from the caller's
 * CPU.  Writes shorter than WRITER_BUSY_MIN_NS changed too few groups for
 * their work to matter. */
#define WRITER_BUSY_MIN_NS (250 * 1000)
static int choose_cpu(int caller_cpu, int64_t now_ns) {
        return writer_cpu(caller_cpu, now_ns < last_writes.busy_until_ns ? last_writes.cpu : -1);
}

/* Hands job to the waiting thread, moved to cpu: false if none waits. */
static bool writer_hand_over(WriterJob *job, int cpu) {
        uint32_t idle = WRITER_IDLE;

        if (!atomic_compare_exchange_strong_explicit(&writer.state, &idle, WRITER_CLAIMED, memory_order_acq_rel,
                                                     memory_order_acquire))
                return false;
        /* Claimed, it cannot leave: its tid is its own.  Where it cannot be
         * moved (the CPU left the process's set meanwhile), it writes from
         * where it is.  writer.cpu is where we put it: should the kernel move
         * it (its CPU left the cpuset), it writes from there until the CPU
         * wanted changes. */
        if (writer.cpu != cpu) {
                cpu_set_t cpus;

                CPU_ZERO(&cpus);
                CPU_SET(cpu, &cpus);
                if (sched_setaffinity(writer.tid, sizeof cpus, &cpus) >= 0)
                        writer.cpu = cpu;
        }
        writer.job = job;
        atomic_store_explicit(&writer.state, WRITER_JOB, memory_order_release);
        futex_wake(&writer.state);
        return true;
}

static int writer_start(WriterJob *job, int cpu) {
        struct sched_param param = { .sched_priority = 1 };
        pthread_attr_t attr;
        sigset_t all, saved;
        cpu_set_t cpus;
        pthread_t thread;
        int r;

        (void) pthread_once(&atfork_once, register_atfork);
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
            (r = pthread_attr_setstacksize(&attr, 64 * 1024)) != 0 ||
            (r = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)) != 0) {
                (void) pthread_attr_destroy(&attr);
                return -r;
        }
        /* Its state before it runs: it publishes WRITER_IDLE after this job.
         * A thread that is leaving (it set WRITER_NONE) no longer looks. */
        writer.cpu = cpu;
        atomic_store_explicit(&writer.state, WRITER_JOB, memory_order_release);
        /* Signals stay with the main loop (libevent's handlers). */
        sigfillset(&all);
        (void) pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = pthread_create(&thread, &attr, writer_main, job);
        (void) pthread_sigmask(SIG_SETMASK, &saved, NULL);
        (void) pthread_attr_destroy(&attr);
        if (r != 0) {
                atomic_store_explicit(&writer.state, WRITER_NONE, memory_order_release);
                writer.cpu = -1;
                return -r;
        }
        return 0;
}

int freeze_write_realtime(FreezeWrite *w, size_t n, uint64_t delay_usec, freeze_progress_t progress, void *userdata,
                          FreezeWriterReport *report) {
        /* The count shares a 32-bit futex word with the end bit. */
        if (n > UINT32_MAX >> 1)
                progress = NULL;
        WriterJob job = { .w = w, .n = n, .delay_usec = delay_usec, .report = report, .publish = progress != NULL };
        int caller, cpu, r;

        caller = sched_getcpu();
        if (caller < 0)
                return -errno;
        if (report)
                *report = (FreezeWriterReport) { .caller_cpu = caller, .cpu = -1, .policy = -1 };
        cpu = choose_cpu(caller, monotonic_nsec());
        if (!writer_hand_over(&job, cpu)) {
                r = writer_start(&job, cpu);
                if (r < 0)
                        return r;
        }
        /* The caller goes on as soon as the last write is done. */
        follow_progress(&job, job.publish ? progress : NULL, userdata);
        last_writes.cpu = writer.cpu;
        last_writes.busy_until_ns = job.write_ns >= WRITER_BUSY_MIN_NS ? monotonic_nsec() + job.write_ns : 0;
        return 0;
}
