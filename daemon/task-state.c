/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "task-state.h"
#include "util.h"

/* p at field `field` of a stat line: the start of field `to`, or NULL if the
 * line ends first. */
static const char *stat_field(const char *p, const char *end, unsigned field, unsigned to) {
        while (field < to) {
                p = memchr(p, ' ', (size_t) (end - p));
                if (!p)
                        return NULL;
                p++;
                field++;
        }
        return p;
}

/* p at the state (field 3): whether fields 26 and 27 are both "1". */
static bool stat_hidden(const char *p, const char *end) {
        p = stat_field(p, end, 3, 26);
        return p && end - p >= 4 && memcmp(p, "1 1 ", 4) == 0;
}

/* p at the state (field 3): the parent's pid (field 4), the kernel's
 * per-task flags (field 9), and the size and resident pages of its memory
 * (fields 23 and 24), which the kernel shows whoever reads; 0 where the line
 * ends first. */
static void stat_shown_fields(const char *p, const char *end, TaskState *t) {
        const char *f;

        f = stat_field(p, end, 3, 4);
        if (f)
                t->ppid = (pid_t) strtol(f, NULL, 10);
        f = f ? stat_field(f, end, 4, 9) : NULL;
        if (f)
                t->flags = strtoul(f, NULL, 10);
        f = f ? stat_field(f, end, 9, 23) : NULL;
        if (f)
                t->vsize = strtoull(f, NULL, 10);
        f = f ? stat_field(f, end, 23, 24) : NULL;
        if (f)
                t->rss = strtoull(f, NULL, 10);
}

int task_state_parse_stat(const char *buf, size_t len, TaskState *ret) {
        const char *open, *close, *p, *end = buf + len;
        char raw[TASK_COMM_RAW_MAX], *num_end;
        long tid;
        size_t n;

        open = memchr(buf, '(', len);
        if (!open)
                return -EINVAL;
        close = NULL;
        for (p = open + 1; p < end; p++)
                if (*p == ')')
                        close = p;
        if (!close)
                return -EINVAL;
        errno = 0;
        tid = strtol(buf, &num_end, 10);
        if (errno != 0 || num_end == buf || tid <= 0 || *num_end != ' ' || num_end + 1 != open)
                return -EINVAL;
        /* ") S ..." */
        if (end - close < 3 || close[1] != ' ' || close[2] == ' ' || close[2] == '\n')
                return -EINVAL;

        *ret = (TaskState) { .tid = (pid_t) tid, .state = close[2], .hidden = stat_hidden(close + 2, end) };
        stat_shown_fields(close + 2, end, ret);
        /* The name goes into D-Bus error messages, which must be UTF-8: the
         * kernel keeps whatever bytes a task set (prctl(PR_SET_NAME)), and
         * cuts a long name at 15 bytes, in the middle of a character maybe.
         * A backslash is doubled (cg_escape()), as in the paths those messages
         * quote, so that a name holding a literal "\x0a" is not read as one
         * holding a newline. */
        n = (size_t) (close - open - 1);
        if (n >= sizeof raw)
                n = sizeof raw - 1;
        memcpy(raw, open + 1, n);
        raw[n] = 0;
        cg_escape(raw, !cg_name_is_publishable(raw), ret->comm, sizeof ret->comm);
        return 0;
}

bool task_state_frozen(const TaskState *t) {
        return t->state == 'S' && (streq(t->wchan, "get_signal") || streq(t->wchan, "do_freezer_trap"));
}

bool task_state_counted_frozen(const TaskState *t) {
        switch (t->state) {
        case 'T':
        case 't':
        case 'Z':
        case 'X':
                return true;
        case 'D':
                return streq(t->wchan, "kernel_clone") || streq(t->wchan, "wait_for_vfork_done");
        default:
                return task_state_frozen(t);
        }
}

bool task_state_forked_not_execed(const TaskState *t) {
        return t->flags & TASK_PF_FORKNOEXEC;
}

static ssize_t read_proc(pid_t tid, const char *name, char *buf, size_t size) {
        char path[64];
        _cleanup_close_ int fd = -1;

        snprintf(path, sizeof path, "/proc/%d/%s", (int) tid, name);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return cg_read_fd(fd, buf, size);
}

int task_state_read_stat(pid_t tid, TaskState *ret) {
        char buf[1024];
        ssize_t n;

        n = read_proc(tid, "stat", buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return task_state_parse_stat(buf, (size_t) n, ret);
}

int task_read_tgid(pid_t tid, pid_t *ret) {
        char path[64], buf[1024];
        _cleanup_close_ int fd = -1;
        const char *p;
        ssize_t n;

        /* Tgid is the fourth line, after Name, Umask and State: the file's
         * head is read alone, which a task with hundreds of supplementary
         * groups (a status of more than a page) cannot push away. */
        snprintf(path, sizeof path, "/proc/%d/status", (int) tid);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                n = read(fd, buf, sizeof buf - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        p = strstr(buf, "\nTgid:");
        if (!p)
                return -EINVAL;
        *ret = (pid_t) strtol(p + strlen("\nTgid:"), NULL, 10);
        return *ret > 0 ? 0 : -EINVAL;
}

int task_state_read(pid_t tid, TaskState *ret) {
        ssize_t n;
        int r;

        r = task_state_read_stat(tid, ret);
        if (r < 0)
                return r;
        if (ret->hidden)
                return 0; /* its wchan reads "0" */
        n = read_proc(tid, "wchan", ret->wchan, sizeof ret->wchan);
        if (n < 0)
                n = 0;
        ret->wchan[(size_t) n < sizeof ret->wchan ? (size_t) n : sizeof ret->wchan - 1] = 0;
        ret->wchan[strcspn(ret->wchan, "\n")] = 0;
        if (streq(ret->wchan, "0")) /* running, or hidden from us */
                ret->wchan[0] = 0;
        return 0;
}

const char *task_state_describe(const TaskState *t, char *buf, size_t size) {
        const char *what;

        switch (t->state) {
        case 'R':
                what = "running";
                break;
        case 'S':
                what = "asleep";
                break;
        case 'D':
                what = "in uninterruptible sleep";
                break;
        case 'T':
                what = "stopped";
                break;
        case 't':
                what = "stopped by a tracer";
                break;
        case 'Z':
                what = "a zombie";
                break;
        default:
                snprintf(buf, size, "in state %c%s%s", t->state, t->wchan[0] ? " in " : "", t->wchan);
                return buf;
        }
        snprintf(buf, size, "%s%s%s%s", what, t->wchan[0] && t->state != 'R' ? " in " : "",
                 t->state != 'R' ? t->wchan : "",
                 t->hidden && (t->state == 'S' || t->state == 'D') ? " (where, the kernel does not show freezerd)" : "");
        return buf;
}
