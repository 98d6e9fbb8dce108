/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a task is doing, from /proc: for the message of a freeze that timed
 * out, which names the tasks that keep a group from freezing (a task asleep
 * uninterruptibly on a FUSE server that never answers is the classic cause of
 * "stuck freezing"), so that an operator knows which process to look at; and
 * to check a freeze the kernel may report early (a group with tasks of its
 * own and children, see manager.c's operation_tasks_frozen()). */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TASK_COMM_RAW_MAX 64 /* the kernel's is 16 bytes (a kernel thread's may be longer) */
#define TASK_COMM_MAX 80     /* a 15-byte name with every byte escaped (\xNN) fits */
#define TASK_WCHAN_MAX 64

typedef struct TaskState {
        pid_t tid;
        char state;                 /* /proc/TID/stat's state letter: R, S, D, T, t, Z, ... */
        char comm[TASK_COMM_MAX];   /* the task's name (the part of stat between the parentheses), control
                                     * characters escaped (\xNN), a backslash doubled, and every byte above 0x7e too if it is not
                                     * UTF-8 that D-Bus can carry */
        char wchan[TASK_WCHAN_MAX]; /* the kernel function it sleeps in, "" when unknown or running */
        bool hidden;                /* the kernel hides its details from us: its wchan is unknown */
        pid_t ppid;                 /* its parent process (stat's field 4), shown to all */
        unsigned long flags;        /* the kernel's PF_* flags of the task (stat's field 9), shown to all */
        unsigned long long vsize;   /* its memory's size in bytes and resident pages (fields 23, 24), shown */
        unsigned long long rss;     /* to all: the same for tasks that share one memory (a vfork() child) */
} TaskState;

/* PF_FORKNOEXEC (include/linux/sched.h): forked, and has not exec'd since. */
#define TASK_PF_FORKNOEXEC 0x00000040UL

/* Parses the contents of /proc/TID/stat: "TID (COMM) STATE ...".  COMM may
 * hold spaces and parentheses: it ends at the last ')'.  hidden is set when
 * the task's startcode and endcode (fields 26 and 27) read 1 each, which is
 * what the kernel prints for a task whose details ptrace_may_access() keeps
 * from us (another uid's task, without CAP_SYS_PTRACE, which the shipped unit
 * does not grant; or one not dumpable): its wchan then reads "0" whatever it
 * sleeps in.  0, or -EINVAL. */
int task_state_parse_stat(const char *buf, size_t len, TaskState *ret);

/* Whether the task sits in the cgroup v2 freezer's trap: asleep (S) in
 * do_freezer_trap(), which get_signal() inlines; that is, frozen. */
bool task_state_frozen(const TaskState *t);

/* Whether the kernel counts the task as frozen (a group is frozen when all
 * its tasks are): in the trap as above, and also a task that cannot run for
 * another reason and entered the count on its way there: stopped (T, in
 * do_signal_stop()), stopped by a tracer (t), or a vfork() parent waiting
 * for its child (D in kernel_clone(), which inlines wait_for_vfork_done());
 * a zombie no longer counts.  Checked on 6.18.  A task on its CPU has an
 * empty wchan and is not counted here, although the kernel may count it
 * already (it enters the count just before it sleeps): a caller that gets
 * false for one looks again shortly. */
bool task_state_counted_frozen(const TaskState *t);

/* Whether the task was forked and has not called execve() since: a vfork()
 * child whose parent still waits for it is one. */
bool task_state_forked_not_execed(const TaskState *t);

/* Reads /proc/TID/stat alone (wchan left ""). 0, or -errno. */
int task_state_read_stat(pid_t tid, TaskState *ret);

/* The process (thread group) of the task TID, from /proc/TID/status, which
 * any uid may read. 0, or -errno. */
int task_read_tgid(pid_t tid, pid_t *ret);

/* Reads /proc/TID/stat and /proc/TID/wchan (wchan left "" where the kernel
 * hides it: another uid's task, or kernel.kptr_restrict).  0, or -errno
 * (-ENOENT: the task is gone). */
int task_state_read(pid_t tid, TaskState *ret);

/* "in uninterruptible sleep in fuse_get_req", "running", "stopped", ...: a
 * human description of t's state, into buf. */
const char *task_state_describe(const TaskState *t, char *buf, size_t size);
