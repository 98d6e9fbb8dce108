/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* cgroup.freeze writes that the kernel's notification work cannot get in
 * between.
 *
 * A write that freezes or thaws a big subtree makes the kernel queue its
 * notification of every cgroup.events that changed, as one work item on the
 * writer's CPU (kernfs_notify_workfn(), about 0.4 µs a file here when nobody
 * opened the files, twice that once they were).  That kworker preempts a
 * normal-priority writer as its write(2) returns, and, on a kernel without
 * preemption of kernel code, keeps the CPU until its whole list is done: about
 * 1.5 ms for 4,000 groups, before the next write of the batch, the settling
 * and the reply.  A SCHED_FIFO thread is not preempted by it: the writes go out
 * back to back.
 *
 * The thread outlives a call by FREEZE_WRITER_LINGER_USEC, waiting for the
 * next one's writes, and then ends (so that freezerd is single-threaded at
 * rest: a second thread makes every fd lookup of the process take a
 * reference, see the README).  A call that finds it waiting hands it the
 * writes with one futex wake-up, instead of the ten system calls, clone3()
 * among them, that make a thread (about 70 µs of the main loop's time a call
 * here).  The caller goes on as soon as the last write is done, not once the
 * thread has ended (which took 150 µs more, against 70).  The thread is
 * pinned to another CPU than the caller's (the next one it may use), so that
 * the kworker runs there too, and the caller, which
 * sleeps until the thread is done, wakes on its own CPU and settles and
 * replies beside it.  Pinned to the caller's CPU, the thread
 * first preempted the caller before it slept, and the caller then waited
 * behind the kworker: 4-7 ms a cycle of the batch benchmark at n=1,000, under
 * 0.3 ms now.  The price: a thread may start behind the previous call's kworker,
 * which a real-time thread waits for in full: a call that comes while the last
 * big writes' notification work probably still runs on their CPU therefore
 * writes from another CPU, the caller's if there is no third (choose_cpu() in
 * freeze-writer.c).  A process allowed one CPU writes from that one. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct FreezeWrite {
        int fd;     /* a cgroup.freeze open for writing; < 0: nothing to write */
        bool value; /* the flag to write */
        int r;      /* out: 0, -errno of the write, or -ECANCELED (an earlier one failed) */
        /* A failure with -ENOENT or -ENODEV (its cgroup was removed) does not
         * stop the writes that follow: a group a call reached without naming
         * it (RECURSIVE, FreezeExcept's cover) is then no longer part of it. */
        bool may_vanish;
} FreezeWrite;

/* What the thread ran as, for the unit test (NULL elsewhere). */
typedef struct FreezeWriterReport {
        int caller_cpu, cpu;  /* the caller's CPU when it made the thread; the thread's */
        int policy, priority; /* the thread's scheduling */
        bool signals_blocked; /* every signal blocked in the thread */
        bool reused;          /* the thread had written for an earlier call */
} FreezeWriterReport;

/* How long the thread waits for the next call's writes before it ends. */
#define FREEZE_WRITER_LINGER_USEC 100000u

/* Called in the calling thread while the writer thread goes on: w[0..done)
 * are written (their r is set).  The writes that follow go on meanwhile, so
 * what it does with the groups written (settling them, sending their signals)
 * runs on the other CPU, beside the writes, instead of after the last one.
 * Returns true if it has more to do: it is then called again as soon as it
 * returns (done the same, or grown), false to wait for the next write.  Once
 * the thread is done, the callback is not called again for work it had left:
 * a short piece at a time lets its caller see the end of the writes soon. */
typedef bool (*freeze_progress_t)(size_t done, void *userdata);

/* Writes w[0..n) in order from a SCHED_FIFO priority 1 thread pinned to the
 * CPU after the calling one, skipping the last long writes' CPU while it is
 * busy with their notification work (the calling one where no other is left:
 * see above), and waits for it; the writes stop at
 * the first failure (see r), but that of a group removed that may_vanish.  delay_usec (crash tests only, else 0) sleeps after each write.  progress
 * (may be NULL) is called whenever writes were done since its last call (and
 * again while it says it has more to do), the last time with done == n (every
 * r set, also those a failure cancelled); never for more than 2^31 writes.
 *
 * Returns 0 once the thread did them, else a negative errno and nothing was
 * written (the caller writes itself): -EPERM if real-time scheduling is
 * refused (no CAP_SYS_NICE and RLIMIT_RTPRIO 0, or RestrictRealtime=),
 * -EAGAIN, -ENOMEM or -EINVAL if the thread could not be made.  Calls must
 * come from one thread at a time. */
int freeze_write_realtime(FreezeWrite *w, size_t n, uint64_t delay_usec, freeze_progress_t progress, void *userdata,
                          FreezeWriterReport *report);

/* The writes of freeze_write_realtime() without a thread, in the caller. */
void freeze_write_direct(FreezeWrite *w, size_t n, uint64_t delay_usec);
