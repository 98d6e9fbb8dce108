/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a task is doing, from /proc: for the message of a freeze that timed
 * out, which names the tasks that keep a group from freezing (a task asleep
 * uninterruptibly on a FUSE server that never answers is the classic cause of
 * "stuck freezing"), so that an operator knows which process to look at. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TASK_COMM_MAX 64 /* the kernel's is 16 bytes; /proc may escape nothing, keep room */
#define TASK_WCHAN_MAX 64

typedef struct TaskState {
        pid_t tid;
        char state;                 /* /proc/TID/stat's state letter: R, S, D, T, t, Z, ... */
        char comm[TASK_COMM_MAX];   /* the task's name (the part of stat between the parentheses) */
        char wchan[TASK_WCHAN_MAX]; /* the kernel function it sleeps in, "" when unknown or running */
} TaskState;

/* Parses the contents of /proc/TID/stat: "TID (COMM) STATE ...".  COMM may
 * hold spaces and parentheses: it ends at the last ')'.  0, or -EINVAL. */
int task_state_parse_stat(const char *buf, size_t len, TaskState *ret);

/* Whether the task sits in the cgroup v2 freezer's trap: asleep (S) in
 * do_freezer_trap(), which get_signal() inlines; that is, frozen. */
bool task_state_frozen(const TaskState *t);

/* Reads /proc/TID/stat and /proc/TID/wchan (wchan left "" where the kernel
 * hides it: another uid's task, or kernel.kptr_restrict).  0, or -errno
 * (-ENOENT: the task is gone). */
int task_state_read(pid_t tid, TaskState *ret);

/* "in uninterruptible sleep in fuse_get_req", "running", "stopped", ...: a
 * human description of t's state, into buf. */
const char *task_state_describe(const TaskState *t, char *buf, size_t size);
