/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-batch: freeze then thaw A..G of the kernel thread's benchmark tree,
 * each way we know, and compare against direct writes.
 *
 *         A            D, E, F and G have n children each (c0 .. c<n-1>),
 *        / \           all in --root=DIR, which is freezerd's --cgroup-root.
 *       B   C          The tree must exist (tests/bench/run-bench makes it),
 *     / | \  \         with, for --leaf-sleepers, a sleeping process in every
 *    D  E  F  G        leaf and nothing else anywhere.
 *
 * A cycle is: freeze A..G (the freeze step), then thaw A..G (the thaw step).
 * Each method runs one warm-up cycle and then --rounds cycles, interleaved
 * round by round, and the table gives the median (and min-max) of the cycle
 * and of each step:
 *
 *   floor         pwrite() of cgroup.freeze from here with fds opened
 *                 beforehand, in the best order (freeze top-down, so that A's
 *                 write freezes the whole tree in one kernel traversal and the
 *                 others change nothing; thaw bottom-up, so that A's write,
 *                 last, thaws it in one traversal).  Without sleepers the
 *                 kernel finishes inside the write (empty groups), which the
 *                 check after the step proves.  With --leaf-sleepers it also
 *                 waits until the kernel confirms: inotify watches on the 7
 *                 cgroup.events are armed before writing, the files are read,
 *                 and re-read after each event, until each says the expected
 *                 "frozen" value (deadline 10 s; no sleeping, no polling).
 *   floor-nowait  (--leaf-sleepers only) the same writes without waiting.
 *   shell         the kernel thread's way: one `sh -c` running 14 lines
 *                 `echo 1 > .../cgroup.freeze` for A..G, then `echo 0 > ...`
 *                 for A..G (its order), timed from spawn to exit.  It never
 *                 waits for the kernel and yields the cycle only.
 *   batch-nowait  freezerd: one ApplyBatch freezing A..G and one thawing them
 *                 (order auto), through libfreezer, with FREEZER_NO_WAIT.
 *   batch         the same, waiting for the kernel (the default).
 *   batch-private the same over freezerd's private socket (--private=PATH,
 *                 freezer_open_private()): no dbus-daemon in between, as for a
 *                 container manager running as root.
 *   single        freezerd: 7 freezer_freeze() then 7 freezer_thaw() calls,
 *                 A..G in that order (bottom-up thaws would fail with
 *                 FrozenByParent), each waiting.
 *
 * The floor, floor-nowait and shell cycles run with freezerd stopped (SIGSTOP
 * to --daemon-pid, SIGCONT after the cycle, before settle()), so that they
 * measure the kernel alone: freezerd follows the groups' changes and would
 * otherwise spend CPU time on them, on the other core, while they run.  (Its
 * open files and watches stay, as they would for any writer on the machine.)
 *
 * Correctness is checked after every step of every cycle (untimed): after a
 * freeze step every cgroup.freeze of A..G is 1 and, where the method waited
 * (or without sleepers, where the kernel is synchronous), every cgroup.events
 * says "frozen 1"; after a thaw step every flag is 0 and every group says
 * "frozen 0" (thawing is synchronous in the kernel).  A violation exits 1.
 *
 * Between cycles (untimed, settle()): a 25 ms pause, longer than the kernel's
 * 10 ms rate limit on cgroup.events notifications (CGROUP_FILE_NOTIFY_MIN_INTV:
 * a thaw right after a freeze is notified 10 ms late, from a timer, and no
 * notification of the next freeze may be held back in turn), then two
 * Peer.Ping round trips to freezerd over a separate connection, and until
 * freezerd's CPU clock stands still (two looks 2 ms apart), so that the daemon
 * and the bus have handled all that the previous cycle made them do
 * (thousands of inotify events, cgroup.events reads and signals at n = 1000)
 * before anything is timed.
 *
 * freezerd's CPU time (--daemon-pid) is taken around each of its cycles
 * (from before the freeze step to after the following settle()) and summed over the
 * rounds: from /proc/PID/stat utime+stime in clock ticks (10 ms each), and
 * from the process CPU clock (clock_getcpuclockid(), ns), then divided by the
 * number of calls.  --bus-pid does the same for dbus-daemon.
 *
 * Time spent waiting to run (runnable, not running: the second field of
 * /proc/PID/schedstat, ns) is taken around the timed cycle alone, for this
 * process, freezerd and dbus-daemon, and printed per cycle.  The floor never
 * sleeps; a call through freezerd wakes the bus, freezerd and this process in
 * turn, and each wake-up may wait behind the kernel's own work (kernfs tells
 * inotify of each cgroup.events change from a kworker, after the write).
 *
 * usage: bench-batch --address=ADDR --root=DIR --n=N [--rounds=R]
 *                    [--leaf-sleepers] [--daemon-pid=PID] [--bus-pid=PID] [--json]
 *                    [--only=KEY,...] [--step-barrier] [--floor-realtime] [--no-pause-daemon]
 *                    [--private=PATH]
 * --only runs just the methods named (keys as above; the floor always runs),
 * e.g. to profile freezerd during one of them.  --step-barrier (a diagnostic,
 * not for the table) puts the between-cycles barrier and pause between the
 * freeze and the thaw step as well, so that the thaw step starts with freezerd
 * idle: the difference to a normal run is what the thaw waits for.
 * --floor-realtime (a diagnostic too) makes the floor's writes as freezerd
 * makes its big ones: from SCHED_FIFO priority 1, so that the kworker the
 * first write wakes on this CPU cannot run before the last write (a normal
 * writer is preempted by it, or not, from round to round: the floor's freeze
 * step has two modes).
 * --no-pause-daemon leaves freezerd running during the floor and shell cycles
 * (see above).
 * Exit status: 0, 1 on a failed check or call, 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "freezer.h"

#include "bench-bus.h"
#include "bench-util.h"

extern char **environ;

#define N_GROUPS 7
#define WAIT_DEADLINE_NS (10ULL * 1000000000ULL)
#define SETTLE_NS (25ULL * 1000000ULL)

/* Top-down order: A, B, C, D, E, F, G.  Bottom-up is the reverse. */
static const char *const group_rel[N_GROUPS] = { "A", "A/B", "A/C", "A/B/D", "A/B/E", "A/B/F", "A/C/G" };
static const char *const group_api[N_GROUPS] = { "/A", "/A/B", "/A/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/C/G" };
static const char group_name[N_GROUPS] = { 'A', 'B', 'C', 'D', 'E', 'F', 'G' };
#define FIRST_LEAF_PARENT 3 /* D, E, F, G have the n children */

enum {
        M_FLOOR,
        M_FLOOR_NOWAIT,
        M_SHELL,
        M_BATCH_NOWAIT,
        M_BATCH,
        M_BATCH_PRIVATE,
        M_SINGLE,
        _M_MAX,
};

typedef struct Method {
        const char *key;
        const char *label;
        bool waits;        /* waits for the kernel to confirm the freeze */
        bool steps;        /* freeze and thaw are timed separately */
        unsigned calls;    /* freezerd calls per cycle (0: does not use freezerd) */
        bool enabled;
        uint64_t *freeze_ns, *thaw_ns, *cycle_ns;
        uint64_t daemon_ticks, daemon_cpu_ns, bus_cpu_ns;
        uint64_t wait_self_ns, wait_daemon_ns, wait_bus_ns; /* waiting to run, timed cycles only */
} Method;

static struct {
        const char *address;
        const char *root;
        unsigned n;
        unsigned rounds;
        bool sleepers;
        bool json;
        pid_t daemon_pid;
        pid_t bus_pid;
        const char *only; /* --only=KEY,...: run just these methods (for profiling) */
        bool step_barrier; /* --step-barrier: settle between the freeze and the thaw step too */
        bool floor_realtime; /* --floor-realtime: the floor's writes from SCHED_FIFO */
        bool no_pause;     /* --no-pause-daemon: leave freezerd running during the baselines */
        bool daemon_stopped; /* we sent SIGSTOP and not yet SIGCONT */

        int freeze_fd[N_GROUPS];
        int events_fd[N_GROUPS];
        int inotify_fd;
        freezer *f;
        const char *private_path; /* --private: freezerd's private socket */
        freezer *fp;              /* a handle on it (batch-private) */
        sd_bus *bus; /* a second connection, for the Ping barrier */
        char *shell_script;
        freezer_request freeze_req[N_GROUPS], thaw_req[N_GROUPS];
        Method methods[_M_MAX];
} B = {
        .rounds = 15,
        .inotify_fd = -1,
};

/* die()'s hook: never leave freezerd stopped. */
static void resume_daemon(void) {
        if (B.daemon_stopped)
                (void) kill(B.daemon_pid, SIGCONT);
}

static char *path_join(const char *a, const char *b, const char *c) {
        char *p;

        if (asprintf(&p, "%s/%s%s%s", a, b, c ? "/" : "", c ?: "") < 0)
                die("out of memory");
        return p;
}

/* ---- cgroup files ---------------------------------------------------------------------------------------- */

/* "frozen" (or "populated") of a cgroup.events fd; dies on errors. */
static int events_value(int fd, const char *key, const char *what) {
        char buf[256];
        ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
        size_t kl = strlen(key);

        if (n < 0)
                die("cannot read %s/cgroup.events: %m", what);
        buf[n] = 0;
        for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
                        return l[kl + 1] == '1';
        die("%s/cgroup.events has no \"%s\" line", what, key);
}

static int read_frozen(unsigned i) {
        return events_value(B.events_fd[i], "frozen", group_rel[i]);
}

static int read_flag(unsigned i) {
        char buf[16];
        ssize_t n = pread(B.freeze_fd[i], buf, sizeof buf, 0);

        if (n < 1)
                die("cannot read %s/cgroup.freeze: %m", group_rel[i]);
        return buf[0] == '1';
}

static void write_flag(unsigned i, bool v) {
        if (pwrite(B.freeze_fd[i], v ? "1" : "0", 1, 0) != 1)
                die("cannot write %d to %s/cgroup.freeze: %m", v, group_rel[i]);
}

static void drain_inotify(void) {
        char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(B.inotify_fd, buf, sizeof buf);
                if (n > 0)
                        continue;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno != EAGAIN)
                        die("reading inotify events: %m");
                return;
        }
}

/* Wait until every group of A..G says "frozen <want>": read each file, and re-read
 * the ones not there yet after each inotify event, up to the deadline.  The
 * watches must have been armed (and the queue drained) before the writes. */
static void wait_frozen(int want, const char *method) {
        uint64_t deadline = now_ns() + WAIT_DEADLINE_NS;
        bool done[N_GROUPS] = {};

        for (;;) {
                unsigned pending = 0;

                for (unsigned i = 0; i < N_GROUPS; i++)
                        if (!done[i]) {
                                done[i] = read_frozen(i) == want;
                                pending += !done[i];
                        }
                if (pending == 0)
                        return;

                uint64_t t = now_ns();
                if (t >= deadline) {
                        char late[2 * N_GROUPS + 1] = "";
                        for (unsigned i = 0; i < N_GROUPS; i++)
                                if (!done[i]) {
                                        size_t l = strlen(late);
                                        late[l] = group_name[i];
                                        late[l + 1] = 0;
                                }
                        die("%s: the kernel did not report frozen %d for %s within 10 s", method, want, late);
                }
                struct timespec ts = { .tv_sec = (time_t) ((deadline - t) / 1000000000ULL),
                                       .tv_nsec = (long) ((deadline - t) % 1000000000ULL) };
                struct pollfd p = { .fd = B.inotify_fd, .events = POLLIN };
                if (ppoll(&p, 1, &ts, NULL) < 0 && errno != EINTR)
                        die("ppoll: %m");
                drain_inotify();
        }
}

/* The check after each step.  frozen < 0: do not look at cgroup.events. */
static void verify(const char *method, const char *step, unsigned round, int flag, int frozen) {
        for (unsigned i = 0; i < N_GROUPS; i++) {
                int v = read_flag(i);
                if (v != flag)
                        die("%s, round %u, after the %s step: %s/cgroup.freeze is %d, expected %d", method, round,
                            step, group_rel[i], v, flag);
                if (frozen < 0)
                        continue;
                v = read_frozen(i);
                if (v != frozen)
                        die("%s, round %u, after the %s step: %s/cgroup.events says frozen %d, expected %d", method,
                            round, step, group_rel[i], v, frozen);
        }
}

/* ---- CPU time of other processes -------------------------------------------------------------------------- */

/* Reads /proc/PID/stat into buf and returns what follows comm: " S ppid ...",
 * from field 3 (state) on. comm may contain anything, ')' too: the fields
 * start after the last ')'. */
/* A /proc file read in one go into buf, NUL-terminated: its length, or -1. */
static ssize_t read_proc_file(const char *path, char *buf, size_t size) {
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = 0;
        return n;
}

static const char *proc_stat_fields(pid_t pid, char *buf, size_t size) {
        char path[64];
        const char *p;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        if (read_proc_file(path, buf, size) < 0)
                die("cannot read %s: %m", path);
        p = strrchr(buf, ')');
        if (!p)
                die("cannot parse %s", path);
        return p + 1;
}

/* utime + stime (fields 14 and 15 of /proc/PID/stat), in clock ticks. */
static uint64_t proc_ticks(pid_t pid) {
        char buf[4096];
        unsigned long long ut, st;
        const char *p;

        p = proc_stat_fields(pid, buf, sizeof buf);
        if (sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
                die("cannot parse /proc/%d/stat", (int) pid);
        return ut + st;
}

/* The process CPU clock: the same time in nanoseconds, all threads. */
static uint64_t proc_cpu_ns(pid_t pid) {
        clockid_t clk;
        struct timespec ts;
        int r;

        r = clock_getcpuclockid(pid, &clk);
        if (r != 0)
                die("clock_getcpuclockid(%d): %s", (int) pid, strerror(r));
        if (clock_gettime(clk, &ts) < 0)
                die("clock_gettime(CPU clock of %d): %m", (int) pid);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* The state letter of /proc/PID/stat. */
static char proc_state(pid_t pid) {
        char buf[512];
        const char *p;

        p = proc_stat_fields(pid, buf, sizeof buf);
        if (p[0] != ' ' || !p[1])
                die("cannot parse /proc/%d/stat", (int) pid);
        return p[1];
}

/* The baselines (floor, shell) run with freezerd stopped (SIGSTOP), so that it does not
 * compete for the CPUs while the kernel works: with every group watched, each write
 * below makes it read thousands of cgroup.events and send as many signals.  The
 * inotify events wait in its queue (about 16000 at n = 1000 for a cycle, under the
 * default max_queued_events of 16384) and are handled after SIGCONT, in settle(). */
static void daemon_pause(bool stop) {
        if (B.daemon_pid <= 0 || B.no_pause)
                return;
        if (kill(B.daemon_pid, stop ? SIGSTOP : SIGCONT) < 0)
                die("cannot send %s to freezerd (pid %d): %m", stop ? "SIGSTOP" : "SIGCONT", (int) B.daemon_pid);
        B.daemon_stopped = stop;
        if (!stop)
                return;
        /* Stopping is asynchronous; it takes a few microseconds (untimed). */
        uint64_t deadline = now_ns() + WAIT_DEADLINE_NS;
        while (proc_state(B.daemon_pid) != 'T')
                if (now_ns() > deadline)
                        die("freezerd (pid %d) did not stop within 10 s of SIGSTOP", (int) B.daemon_pid);
}

/* Time pid (0: this process) spent runnable but not running, in ns: the
 * second field of /proc/PID/schedstat; 0 where the kernel has none. */
static uint64_t proc_run_delay_ns(pid_t pid) {
        char path[64], buf[128];
        unsigned long long run, delay;

        if (pid == 0)
                snprintf(path, sizeof path, "/proc/self/schedstat");
        else
                snprintf(path, sizeof path, "/proc/%d/schedstat", (int) pid);
        if (read_proc_file(path, buf, sizeof buf) < 0 || sscanf(buf, "%llu %llu", &run, &delay) != 2)
                return 0;
        return delay;
}

/* CPU time of freezerd and dbus-daemon, and time waiting to run of this
 * process, freezerd and dbus-daemon, at one instant. */
typedef struct CpuMark {
        uint64_t ticks, daemon_ns, bus_ns;
        uint64_t wait_self_ns, wait_daemon_ns, wait_bus_ns;
} CpuMark;

static CpuMark cpu_mark(void) {
        CpuMark c = { .wait_self_ns = proc_run_delay_ns(0) };

        if (B.daemon_pid > 0) {
                c.ticks = proc_ticks(B.daemon_pid);
                c.daemon_ns = proc_cpu_ns(B.daemon_pid);
                c.wait_daemon_ns = proc_run_delay_ns(B.daemon_pid);
        }
        if (B.bus_pid > 0) {
                c.bus_ns = proc_cpu_ns(B.bus_pid);
                c.wait_bus_ns = proc_run_delay_ns(B.bus_pid);
        }
        return c;
}

static void cpu_account(Method *m, const CpuMark *a, const CpuMark *b) {
        m->daemon_ticks += b->ticks - a->ticks;
        m->daemon_cpu_ns += b->daemon_ns - a->daemon_ns;
        m->bus_cpu_ns += b->bus_ns - a->bus_ns;
}

/* ---- freezerd ----------------------------------------------------------------------------------------------- */

static void ping_barrier(void) {
        for (int i = 0; i < 2; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                int r = sd_bus_call_method(B.bus, "org.freezerd.Freezer1", "/org/freezerd/Freezer1",
                                           "org.freedesktop.DBus.Peer", "Ping", &error, NULL, NULL);
                if (r < 0)
                        die("Peer.Ping to freezerd failed: %s", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
        }
}

/* Let what the last step set off run its course, so that the next one starts from a quiet
 * system: the kernel holds back a cgroup.events notification that comes within 10 ms of the
 * previous one of that file (CGROUP_FILE_NOTIFY_MIN_INTV) and sends it from a timer, so a
 * thaw right after a freeze is reported 10 ms later, after any barrier taken at once.  Wait
 * 25 ms (past that timer, and long enough that the next step's notifications are not held
 * back in turn), then make sure freezerd and the bus have handled everything: two Peer.Ping
 * round trips through the bus (the second one is read by freezerd in a later turn of its
 * event loop than the first, after the inotify events queued before it). */
/* Until freezerd's CPU clock stood still over two looks IDLE_LOOK_NS apart:
 * it has handled all it was given.  The Pings alone do not say so: freezerd
 * answers calls between slices of kernel events, and the floor and shell
 * cycles leave it thousands (their writes, behind its back while it was
 * stopped), whose handling would otherwise run into the next timed cycle and
 * into that method's CPU time. */
#define IDLE_LOOK_NS (2 * 1000000ULL)
#define IDLE_DEADLINE_NS (10ULL * 1000000000ULL)
static void wait_daemon_idle(void) {
        uint64_t deadline = now_ns() + IDLE_DEADLINE_NS, last;
        unsigned still = 0;

        if (B.daemon_pid <= 0)
                return;
        last = proc_cpu_ns(B.daemon_pid);
        while (still < 2) {
                if (now_ns() >= deadline)
                        die("freezerd did not come to rest within %llu s", IDLE_DEADLINE_NS / 1000000000ULL);
                sleep_ns(IDLE_LOOK_NS);
                uint64_t c = proc_cpu_ns(B.daemon_pid);
                still = c - last < 20000 ? still + 1 : 0; /* under 20 µs: a timer tick's worth of noise */
                last = c;
        }
}

static void settle(void) {
        sleep_ns(SETTLE_NS);
        ping_barrier();
        wait_daemon_idle();
}

static void check_call_on(freezer *f, int r, const char *what) {
        if (r < 0)
                die("%s failed: %s: %s (%s)", what, strerror(-r), freezer_last_error_name(f) ?: "?",
                    freezer_last_error_message(f) ?: "");
}

static void check_call(int r, const char *what) {
        check_call_on(B.f, r, what);
}

static void apply_batch(freezer *f, bool freeze, uint64_t flags) {
        uint32_t writes = 0, skipped = 0;
        int r = freezer_apply_batch(f, freeze ? B.freeze_req : B.thaw_req, N_GROUPS, FREEZER_ORDER_AUTO, 0, flags,
                                    &writes, &skipped);

        check_call_on(f, r, freeze ? "ApplyBatch (freeze A..G)" : "ApplyBatch (thaw A..G)");
        if (writes != N_GROUPS || skipped != 0)
                die("ApplyBatch (%s A..G) wrote %" PRIu32 " and skipped %" PRIu32 ", expected %d and 0",
                    freeze ? "freeze" : "thaw", writes, skipped, N_GROUPS);
}

/* ---- the methods: one cycle each ------------------------------------------------------------------------------ */

typedef struct Times {
        uint64_t freeze, thaw, cycle;
} Times;

/* Between the two steps of a cycle: nothing, or with --step-barrier what comes between cycles
 * (while freezerd is stopped for a baseline, the pause alone: it cannot answer a Ping). */
static void between_steps(void) {
        if (!B.step_barrier)
                return;
        if (B.daemon_stopped)
                sleep_ns(SETTLE_NS);
        else
                settle();
}

/* With --floor-realtime: the floor's writes from SCHED_FIFO, as freezerd's big ones. */
static void floor_set_realtime(bool on) {
        struct sched_param param = { .sched_priority = on ? 1 : 0 };

        if (B.floor_realtime && sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &param) < 0)
                die("sched_setscheduler(%s): %m", on ? "SCHED_FIFO" : "SCHED_OTHER");
}

static Times run_floor(unsigned round, bool wait) {
        const char *name = wait ? "floor" : "floor-nowait";
        Times t;
        uint64_t t0, t1, t2, t3;

        drain_inotify();
        floor_set_realtime(true);
        t0 = now_ns();
        for (unsigned i = 0; i < N_GROUPS; i++) /* top-down */
                write_flag(i, true);
        if (wait && B.sleepers)
                wait_frozen(1, name);
        t1 = now_ns();
        floor_set_realtime(false);
        verify(name, "freeze", round, 1, wait || !B.sleepers ? 1 : -1);
        between_steps();

        drain_inotify();
        floor_set_realtime(true);
        t2 = now_ns();
        for (unsigned i = N_GROUPS; i > 0; i--) /* bottom-up */
                write_flag(i - 1, false);
        if (wait && B.sleepers)
                wait_frozen(0, name); /* the kernel thaws synchronously: one read of each file */
        t3 = now_ns();
        floor_set_realtime(false);
        verify(name, "thaw", round, 0, 0);

        t.freeze = t1 - t0;
        t.thaw = t3 - t2;
        t.cycle = t.freeze + t.thaw;
        return t;
}

static Times run_shell(unsigned round) {
        char *argv[] = { (char *) "sh", (char *) "-c", B.shell_script, NULL };
        uint64_t t0, t1;
        pid_t pid;
        int r, status;

        t0 = now_ns();
        r = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
        if (r != 0)
                die("posix_spawn /bin/sh: %s", strerror(r));
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        die("waitpid: %m");
        t1 = now_ns();
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die("shell, round %u: sh -c exited with status 0x%x", round, (unsigned) status);
        verify("shell", "thaw", round, 0, 0);
        return (Times) { .cycle = t1 - t0 };
}

static Times run_batch(unsigned round, bool wait, freezer *f) {
        const char *name = f == B.fp ? "batch-private" : wait ? "batch" : "batch-nowait";
        uint64_t flags = wait ? 0 : FREEZER_NO_WAIT;
        Times t;
        uint64_t t0;

        t0 = now_ns();
        apply_batch(f, true, flags);
        t.freeze = now_ns() - t0;
        verify(name, "freeze", round, 1, wait || !B.sleepers ? 1 : -1);
        between_steps();

        t0 = now_ns();
        apply_batch(f, false, flags);
        t.thaw = now_ns() - t0;
        verify(name, "thaw", round, 0, 0);

        t.cycle = t.freeze + t.thaw;
        return t;
}

static Times run_single(unsigned round) {
        Times t;
        uint64_t t0;

        t0 = now_ns();
        for (unsigned i = 0; i < N_GROUPS; i++)
                check_call(freezer_freeze(B.f, group_api[i], 0, 0), "Freeze");
        t.freeze = now_ns() - t0;
        verify("single", "freeze", round, 1, 1);
        between_steps();

        t0 = now_ns();
        for (unsigned i = 0; i < N_GROUPS; i++) /* top-down: a bottom-up Thaw would fail with FrozenByParent */
                check_call(freezer_thaw(B.f, group_api[i], 0, 0), "Thaw");
        t.thaw = now_ns() - t0;
        verify("single", "thaw", round, 0, 0);

        t.cycle = t.freeze + t.thaw;
        return t;
}

static Times run_method(unsigned m, unsigned round) {
        if (m == M_FLOOR || m == M_FLOOR_NOWAIT || m == M_SHELL) {
                Times t;
                daemon_pause(true);
                t = m == M_SHELL ? run_shell(round) : run_floor(round, m == M_FLOOR);
                daemon_pause(false);
                return t;
        }
        switch (m) {
        case M_FLOOR:
                return run_floor(round, true);
        case M_FLOOR_NOWAIT:
                return run_floor(round, false);
        case M_SHELL:
                return run_shell(round);
        case M_BATCH_NOWAIT:
                return run_batch(round, false, B.f);
        case M_BATCH:
                return run_batch(round, true, B.f);
        case M_BATCH_PRIVATE:
                return run_batch(round, true, B.fp);
        case M_SINGLE:
                return run_single(round);
        }
        abort();
}

/* ---- set-up ------------------------------------------------------------------------------------------------ */

static unsigned count_subdirs(const char *dir) {
        DIR *d = opendir(dir);
        unsigned n = 0;

        if (!d)
                die("cannot open %s: %m", dir);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

static int file_events_value(const char *dir, const char *key) {
        char *p = path_join(dir, "cgroup.events", NULL);
        int fd = open(p, O_RDONLY | O_CLOEXEC), v;

        if (fd < 0)
                die("cannot open %s: %m", p);
        v = events_value(fd, key, dir);
        close(fd);
        free(p);
        return v;
}

/* The tree is the expected one, idle, and has sleepers exactly where asked. */
static void check_tree(void) {
        for (unsigned i = 0; i < N_GROUPS; i++) {
                char *dir = path_join(B.root, group_rel[i], NULL);
                unsigned want = i < FIRST_LEAF_PARENT ? (i == 0 ? 2 : i == 1 ? 3 : 1) : B.n;
                unsigned have = count_subdirs(dir);

                if (have != want)
                        die("%s has %u child groups, expected %u", dir, have, want);
                if (read_flag(i) || read_frozen(i))
                        die("%s is not thawed at the start (cgroup.freeze or frozen is 1)", dir);
                /* Without sleepers a leaf parent's "populated 0" says that every
                 * leaf is empty.  The leaves' cgroup.events are not opened (nor
                 * does freezerd open them): the kernel's notification work after
                 * each write takes twice as long for a file whose inode is in
                 * memory (see group_open_events() in daemon/manager.c), and every
                 * method measured would pay for this check. */
                if (i >= FIRST_LEAF_PARENT && !B.sleepers && file_events_value(dir, "populated") != 0)
                        die("%s is populated, expected no process below it (no --leaf-sleepers)", dir);
                if (i >= FIRST_LEAF_PARENT && B.sleepers)
                        for (unsigned k = 0; k < B.n; k++) {
                                char leaf[32];
                                snprintf(leaf, sizeof leaf, "c%u", k);
                                char *l = path_join(dir, leaf, NULL);
                                if (file_events_value(l, "populated") != B.sleepers)
                                        die("%s is %s, expected %s (--leaf-sleepers %s)", l,
                                            B.sleepers ? "empty" : "populated", B.sleepers ? "a sleeper" : "none",
                                            B.sleepers ? "given" : "not given");
                                free(l);
                        }
                free(dir);
        }
        if (file_events_value(B.root, "populated") != B.sleepers)
                die("%s is %spopulated", B.root, B.sleepers ? "not " : "");
}

static void setup(void) {
        FILE *f;
        size_t len = 0;
        int r;

        B.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (B.inotify_fd < 0)
                die("inotify_init1: %m");
        for (unsigned i = 0; i < N_GROUPS; i++) {
                char *fp = path_join(B.root, group_rel[i], "cgroup.freeze");
                char *ep = path_join(B.root, group_rel[i], "cgroup.events");
                B.freeze_fd[i] = open(fp, O_RDWR | O_CLOEXEC);
                if (B.freeze_fd[i] < 0)
                        die("cannot open %s: %m", fp);
                B.events_fd[i] = open(ep, O_RDONLY | O_CLOEXEC);
                if (B.events_fd[i] < 0)
                        die("cannot open %s: %m", ep);
                if (inotify_add_watch(B.inotify_fd, ep, IN_MODIFY) < 0)
                        die("inotify_add_watch %s: %m", ep);
                free(fp);
                free(ep);
                B.freeze_req[i] = (freezer_request) { .path = group_api[i], .freeze = true };
                B.thaw_req[i] = (freezer_request) { .path = group_api[i], .freeze = false };
        }
        check_tree();

        /* The kernel thread's script: freeze A..G, then thaw A..G, in that order. */
        if (strchr(B.root, '\''))
                die("--root must not contain a single quote");
        f = open_memstream(&B.shell_script, &len);
        if (!f)
                die("out of memory");
        fputs("set -e\n", f);
        for (int v = 1; v >= 0; v--)
                for (unsigned i = 0; i < N_GROUPS; i++)
                        fprintf(f, "echo %d > '%s/%s/cgroup.freeze'\n", v, B.root, group_rel[i]);
        if (fclose(f) != 0)
                die("out of memory");

        r = freezer_open_address(&B.f, B.address);
        if (r < 0)
                die("cannot connect to %s: %s", B.address, strerror(-r));
        if (B.private_path) {
                r = freezer_open_private(&B.fp, B.private_path);
                if (r < 0)
                        die("cannot connect to %s: %s", B.private_path, strerror(-r));
        }

        B.bus = bench_connect_bus(B.address);
        ping_barrier(); /* freezerd is there */

        static const struct {
                const char *key, *label, *label_sleepers;
                bool waits, steps;
                unsigned calls;
        } defs[_M_MAX] = {
                [M_FLOOR] = { "floor", "floor: pwrite, open fds, best order",
                              "floor: pwrite, best order, until the kernel confirms", true, true, 0 },
                [M_FLOOR_NOWAIT] = { "floor-nowait", NULL, "floor: pwrite only, no wait", false, true, 0 },
                [M_SHELL] = { "shell", "shell: one sh -c, 14 x echo > cgroup.freeze",
                              "shell: one sh -c, 14 x echo (no wait)", false, false, 0 },
                [M_BATCH_NOWAIT] = { "batch-nowait", "freezerd: 2 x ApplyBatch, NO_WAIT",
                                     "freezerd: 2 x ApplyBatch, NO_WAIT", false, true, 2 },
                [M_BATCH] = { "batch", "freezerd: 2 x ApplyBatch, waiting", "freezerd: 2 x ApplyBatch, waiting", true,
                              true, 2 },
                [M_BATCH_PRIVATE] = { "batch-private", "freezerd: the same over its private socket",
                                      "freezerd: the same over its private socket", true, true, 2 },
                [M_SINGLE] = { "single", "freezerd: 14 x Freeze/Thaw, waiting", "freezerd: 14 x Freeze/Thaw, waiting",
                               true, true, 14 },
        };
        for (unsigned m = 0; m < _M_MAX; m++) {
                Method *x = &B.methods[m];
                x->key = defs[m].key;
                x->label = B.sleepers ? defs[m].label_sleepers : defs[m].label;
                x->waits = defs[m].waits;
                x->steps = defs[m].steps;
                x->calls = defs[m].calls;
                x->enabled = x->label != NULL &&        /* floor-nowait only with sleepers */
                             (m != M_BATCH_PRIVATE || B.fp); /* batch-private with --private */
                if (B.only && m != M_FLOOR) { /* the floor always runs: the ratios need it */
                        size_t kl = strlen(x->key);
                        bool listed = false;
                        for (const char *p = B.only; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
                                if (strncmp(p, x->key, kl) == 0 && (p[kl] == ',' || p[kl] == 0))
                                        listed = true;
                        x->enabled = x->enabled && listed;
                }
                x->freeze_ns = calloc(B.rounds, sizeof(uint64_t));
                x->thaw_ns = calloc(B.rounds, sizeof(uint64_t));
                x->cycle_ns = calloc(B.rounds, sizeof(uint64_t));
                if (!x->freeze_ns || !x->thaw_ns || !x->cycle_ns)
                        die("out of memory");
        }
}

/* ---- statistics and output ---------------------------------------------------------------------------------- */

typedef struct Stats {
        double median, min, max; /* µs */
} Stats;

static Stats stats(const uint64_t *v, unsigned n) {
        uint64_t *s = malloc(n * sizeof *s);
        Stats r;

        if (!s)
                die("out of memory");
        memcpy(s, v, n * sizeof *s);
        qsort(s, n, sizeof *s, cmp_u64);
        r.min = (double) s[0] / 1e3;
        r.max = (double) s[n - 1] / 1e3;
        r.median = (n % 2 ? (double) s[n / 2] : ((double) s[n / 2 - 1] + (double) s[n / 2]) / 2) / 1e3;
        free(s);
        return r;
}

static void json_stats(const char *name, const Stats *s, bool last) {
        printf("      \"%s\": {\"median\": %.1f, \"min\": %.1f, \"max\": %.1f}%s\n", name, s->median, s->min, s->max,
               last ? "" : ",");
}

static void print_results(void) {
        const long tck = sysconf(_SC_CLK_TCK);
        const unsigned groups = N_GROUPS + 4 * B.n;
        const Stats floor_cycle = stats(B.methods[M_FLOOR].cycle_ns, B.rounds);

        if (B.json) {
                bool first = true;
                printf("{\n  \"n\": %u,\n  \"groups\": %u,\n  \"sleepers\": %u,\n  \"rounds\": %u,\n"
                       "  \"clock_ticks_per_second\": %ld,\n  \"daemon_paused_for_baselines\": %s,\n"
                       "  \"methods\": [\n",
                       B.n, groups, B.sleepers ? 4 * B.n : 0, B.rounds, tck,
                       B.daemon_pid > 0 && !B.no_pause ? "true" : "false");
                for (unsigned m = 0; m < _M_MAX; m++) {
                        const Method *x = &B.methods[m];
                        if (!x->enabled)
                                continue;
                        Stats c = stats(x->cycle_ns, B.rounds);
                        printf("%s    {\n      \"key\": \"%s\",\n      \"label\": \"%s\",\n      \"waits\": %s,\n"
                               "      \"calls_per_cycle\": %u,\n      \"ratio_to_floor\": %.3f,\n",
                               first ? "" : ",\n", x->key, x->label, x->waits ? "true" : "false", x->calls,
                               c.median / floor_cycle.median);
                        first = false;
                        if (x->steps) {
                                Stats fs = stats(x->freeze_ns, B.rounds), ts = stats(x->thaw_ns, B.rounds);
                                json_stats("freeze_us", &fs, false);
                                json_stats("thaw_us", &ts, false);
                        }
                        if (x->calls && B.daemon_pid > 0) {
                                double calls = (double) x->calls * B.rounds;
                                printf("      \"daemon_cpu\": {\"ticks\": %" PRIu64 ", \"stat_us_per_call\": %.1f, "
                                       "\"clock_us_per_call\": %.1f, \"clock_us_per_cycle\": %.1f},\n",
                                       x->daemon_ticks, (double) x->daemon_ticks * 1e6 / (double) tck / calls,
                                       (double) x->daemon_cpu_ns / 1e3 / calls,
                                       (double) x->daemon_cpu_ns / 1e3 / B.rounds);
                        }
                        if (x->calls && B.bus_pid > 0)
                                printf("      \"bus_cpu\": {\"clock_us_per_call\": %.1f},\n",
                                       (double) x->bus_cpu_ns / 1e3 / ((double) x->calls * B.rounds));
                        printf("      \"run_wait_us_per_cycle\": {\"self\": %.1f, \"daemon\": %.1f, \"bus\": %.1f},\n",
                               (double) x->wait_self_ns / 1e3 / B.rounds, (double) x->wait_daemon_ns / 1e3 / B.rounds,
                               (double) x->wait_bus_ns / 1e3 / B.rounds);
                        json_stats("cycle_us", &c, true);
                        printf("    }");
                }
                printf("\n  ]\n}\n");
                return;
        }

        printf("n=%u (%u groups below %s), %s, %u rounds (+1 warm-up), medians in µs%s\n", B.n, groups, B.root,
               B.sleepers ? "one sleeper in every leaf" : "no processes", B.rounds,
               B.daemon_pid > 0 && !B.no_pause ? "; freezerd stopped during floor and shell" : "");
        printf("%-52s %10s %21s %10s %10s %7s %12s %12s\n", "method", "cycle", "min-max", "freeze", "thaw",
               "ratio", "cpu/call", "cpu/call");
        printf("%-52s %10s %21s %10s %10s %7s %12s %12s\n", "", "", "", "", "", "", "(stat)", "(clock)");
        for (unsigned m = 0; m < _M_MAX; m++) {
                const Method *x = &B.methods[m];
                char range[64], fz[32] = "-", th[32] = "-", cs[32] = "-", cc[32] = "-";
                if (!x->enabled)
                        continue;
                Stats c = stats(x->cycle_ns, B.rounds);
                snprintf(range, sizeof range, "%.1f-%.1f", c.min, c.max);
                if (x->steps) {
                        snprintf(fz, sizeof fz, "%.1f", stats(x->freeze_ns, B.rounds).median);
                        snprintf(th, sizeof th, "%.1f", stats(x->thaw_ns, B.rounds).median);
                }
                if (x->calls && B.daemon_pid > 0) {
                        double calls = (double) x->calls * B.rounds;
                        snprintf(cs, sizeof cs, "%.0f", (double) x->daemon_ticks * 1e6 / (double) tck / calls);
                        snprintf(cc, sizeof cc, "%.1f", (double) x->daemon_cpu_ns / 1e3 / calls);
                }
                printf("%-52s %10.1f %21s %10s %10s %6.2fx %12s %12s\n", x->label, c.median, range, fz, th,
                       c.median / floor_cycle.median, cs, cc);
        }
}

/* ---- main -------------------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
        fputs("usage: bench-batch --address=ADDR --root=DIR --n=N [--rounds=R] [--leaf-sleepers]\n"
              "                   [--daemon-pid=PID] [--bus-pid=PID] [--json] [--only=KEY,...]\n"
              "                   [--step-barrier] [--floor-realtime] [--no-pause-daemon] [--private=PATH]\n"
              "methods (KEY): floor floor-nowait shell batch-nowait batch batch-private single; the floor\n"
              "always runs; batch-private needs --private (freezerd's private socket)\n",
              f);
}

int main(int argc, char *argv[]) {
        die_hook = resume_daemon;
        enum {
                ARG_ADDRESS = 0x100,
                ARG_ROOT,
                ARG_N,
                ARG_ROUNDS,
                ARG_SLEEPERS,
                ARG_DAEMON_PID,
                ARG_BUS_PID,
                ARG_JSON,
                ARG_ONLY,
                ARG_STEP_BARRIER,
                ARG_FLOOR_REALTIME,
                ARG_NO_PAUSE,
                ARG_PRIVATE,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "root", required_argument, NULL, ARG_ROOT },
                { "n", required_argument, NULL, ARG_N },
                { "rounds", required_argument, NULL, ARG_ROUNDS },
                { "leaf-sleepers", no_argument, NULL, ARG_SLEEPERS },
                { "daemon-pid", required_argument, NULL, ARG_DAEMON_PID },
                { "bus-pid", required_argument, NULL, ARG_BUS_PID },
                { "json", no_argument, NULL, ARG_JSON },
                { "only", required_argument, NULL, ARG_ONLY },
                { "step-barrier", no_argument, NULL, ARG_STEP_BARRIER },
                { "floor-realtime", no_argument, NULL, ARG_FLOOR_REALTIME },
                { "no-pause-daemon", no_argument, NULL, ARG_NO_PAUSE },
                { "private", required_argument, NULL, ARG_PRIVATE },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        usage(stdout);
                        return 0;
                case ARG_ADDRESS:
                        B.address = optarg;
                        break;
                case ARG_ROOT:
                        B.root = optarg;
                        break;
                case ARG_N:
                        B.n = (unsigned) parse_ulong(optarg, "--n", 100000);
                        break;
                case ARG_ROUNDS:
                        B.rounds = (unsigned) parse_ulong(optarg, "--rounds", 100000);
                        break;
                case ARG_SLEEPERS:
                        B.sleepers = true;
                        break;
                case ARG_DAEMON_PID:
                        B.daemon_pid = (pid_t) parse_ulong(optarg, "--daemon-pid", INT_MAX);
                        break;
                case ARG_BUS_PID:
                        B.bus_pid = (pid_t) parse_ulong(optarg, "--bus-pid", INT_MAX);
                        break;
                case ARG_JSON:
                        B.json = true;
                        break;
                case ARG_ONLY:
                        B.only = optarg;
                        break;
                case ARG_STEP_BARRIER:
                        B.step_barrier = true;
                        break;
                case ARG_FLOOR_REALTIME:
                        B.floor_realtime = true;
                        break;
                case ARG_NO_PAUSE:
                        B.no_pause = true;
                        break;
                case ARG_PRIVATE:
                        B.private_path = optarg;
                        break;
                default:
                        usage(stderr);
                        return 2;
                }
        if (optind < argc || !B.address || !B.root || B.n == 0) {
                usage(stderr);
                return 2;
        }

        setup();

        /* Round 0 is the warm-up; methods interleave within each round.  Each cycle starts
         * settled, and is followed by settle(), inside its CPU time window. */
        settle();
        for (unsigned round = 0; round <= B.rounds; round++)
                for (unsigned m = 0; m < _M_MAX; m++) {
                        Method *x = &B.methods[m];
                        CpuMark a, w, b;
                        Times t;

                        if (!x->enabled)
                                continue;
                        a = cpu_mark();
                        t = run_method(m, round);
                        w = cpu_mark(); /* waiting to run: the timed cycle alone */
                        settle();
                        b = cpu_mark();
                        if (round == 0)
                                continue;
                        if (x->calls)
                                cpu_account(x, &a, &b);
                        x->wait_self_ns += w.wait_self_ns - a.wait_self_ns;
                        x->wait_daemon_ns += w.wait_daemon_ns - a.wait_daemon_ns;
                        x->wait_bus_ns += w.wait_bus_ns - a.wait_bus_ns;
                        x->freeze_ns[round - 1] = t.freeze;
                        x->thaw_ns[round - 1] = t.thaw;
                        x->cycle_ns[round - 1] = t.cycle;
                }

        print_results();

        freezer_close(B.f);
        freezer_close(B.fp);
        sd_bus_flush_close_unref(B.bus);
        for (unsigned i = 0; i < N_GROUPS; i++) {
                close(B.freeze_fd[i]);
                close(B.events_fd[i]);
        }
        close(B.inotify_fd);
        free(B.shell_script);
        for (unsigned m = 0; m < _M_MAX; m++) {
                free(B.methods[m].freeze_ns);
                free(B.methods[m].thaw_ns);
                free(B.methods[m].cycle_ns);
        }
        return 0;
}
