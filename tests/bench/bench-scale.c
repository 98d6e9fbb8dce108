/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-scale: freezerd over a tree of --top x --fanout cgroups (issue 6).
 *
 *   DIR/t0 .. t<top-1>           the top groups
 *   DIR/tI/c0 .. c<fanout-1>     their children (100 x 100: 10,100 groups)
 *
 * DIR (--root) is freezerd's --cgroup-root.  bench-scale makes the tree with
 * mkdir(2) where it is missing (timed: the kernel's floor), and starts
 * freezerd itself, as given after "--", with --cgroup-root=DIR appended and
 * NOTIFY_SOCKET on a datagram socket of its own (SO_PASSCRED: the READY=1
 * datagram names freezerd's pid even when it runs under a wrapper such as
 * perf or strace).  It never removes the tree (the runner does), only the
 * burst groups it made.
 *
 * Phases (--phases=start,idle,storm,burst; all by default):
 *
 * start  --starts=K times: spawn freezerd (posix_spawn), time until READY=1;
 *        read at READY its CPU time (process CPU clock), VmRSS/VmHWM/RssAnon,
 *        open fds (/proc/PID/fd) and inotify watches (the "inotify wd:" lines
 *        of /proc/PID/fdinfo/FD of its inotify fds).  With --empty-root=DIR2
 *        the same over an empty root first (the fixed cost: exec, dynamic
 *        linking, bus connection), and "freezerd --version" until exit (the
 *        bare exec).  All starts but the last are stopped (SIGTERM) at once;
 *        the last one serves the other phases.
 * idle   --idle=S seconds with nothing happening (one second to settle
 *        first): freezerd's voluntary/involuntary context switches
 *        (/proc/PID/status), utime+stime (/proc/PID/stat) and CPU clock before
 *        and after, and the number of bus messages a listener subscribed to
 *        all of freezerd's signals received meanwhile.
 * storm  one ApplyBatch (libfreezer, waiting, order auto) freezing the top
 *        groups, then one thawing them; then both again with the listener
 *        subscribed to GroupStatesChanged alone (SubscribeGroupStates(), its
 *        Ids from ListGroupIds()); then both again followed through
 *        libfreezer's state callback instead (a handle and a thread of their
 *        own, primed with freezer_list(), as freezectl watch does; the raw
 *        listener subscribes to nothing then, and counts the signals it
 *        sees); then both again with a client subscribed
 *        (Manager.Subscribe(), so that freezerd also sends one
 *        PropertiesChanged per changed object).  A listener thread on a
 *        connection of its own, matching every signal of freezerd, timestamps
 *        each message as it is processed and follows every group's
 *        FreezerState: through GroupsChanged in the first two phases,
 *        GroupStatesChanged in the next two, PropertiesChanged in the
 *        subscribed ones (libfreezer's callback in the libfreezer ones).  Reported: the time until
 *        the reply, until every group reported its final state (frozen /
 *        frozen-by-parent, then running), the GroupsChanged messages and
 *        entries (most entries for one object in the phase, and within one
 *        message), the PropertiesChanged signals received (total, on group
 *        objects, most on one object, objects with more than one), the
 *        listener's time in its handler for freezerd's signals (reading
 *        their entries: a message waits in the socket meanwhile), and
 *        freezerd's and dbus-daemon's CPU time from before the call until
 *        two Peer.Ping round trips after the last expected signal.
 *        Last, the storm's floor: the same writes of the top groups'
 *        cgroup.freeze from here, with freezerd stopped, timed (the kernel
 *        alone; see phase_storm_floor()).
 * burst  mkdir(2) of --burst groups (spread over the top groups: tI/bK) as
 *        fast as the kernel takes them, then, once all were announced, rmdir
 *        of them all: the time of the mkdir/rmdir loop, until the last
 *        InterfacesAdded/InterfacesRemoved, the signals seen, the CPU time.
 *
 * --perf=PREFIX records each storm and burst phase with `perf record -g
 * --call-graph dwarf -p PID` into PREFIX-KEY.data (it slows freezerd down:
 * the timings of such a run are not the benchmark's).
 *
 * usage: bench-scale --address=ADDR --root=DIR [--top=N] [--fanout=N] [--starts=K]
 *                    [--empty-root=DIR2] [--idle=S] [--burst=N] [--bus-pid=PID]
 *                    [--phases=LIST] [--perf=PREFIX] [--daemon-log=FILE] [--private=PATH]
 *                    [--json] -- FREEZERD [ARGS...]
 * --daemon-log=FILE appends freezerd's standard output and error to FILE
 * (default: they go where bench-scale's standard error goes).
 * --private=PATH: the listener and libfreezer's calls use freezerd's private
 * socket at PATH (its --runtime-dir's "private") instead of the bus: the
 * listener subscribes on its own connection, nobody on the bus, so that
 * dbus-daemon carries nothing.
 * Output: JSON (--json) or a short text summary.  Exit status 0, 1 on a
 * failure, 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "freezer.h"

#include "bench-bus.h"
#include "bench-util.h"

extern char **environ;

#define BUS_NAME "org.freezerd.Freezer1"
#define MANAGER_PATH "/org/freezerd/Freezer1"
#define MANAGER_IFACE "org.freezerd.Freezer1.Manager"
#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define READY_TIMEOUT_NS (300ULL * 1000000000ULL)
#define PHASE_TIMEOUT_NS (120ULL * 1000000000ULL)
#define MAX_STARTS 50

static double ms(uint64_t ns) {
        return (double) ns / 1e6;
}

/* ---- options ------------------------------------------------------------------------------------------------- */

static struct {
        const char *address;
        const char *root;
        const char *empty_root;
        unsigned top, fanout, starts, idle_s, burst;
        pid_t bus_pid;
        const char *perf;   /* --perf=PREFIX: perf record -p around each storm/burst phase */
        const char *daemon_log; /* --daemon-log=FILE: freezerd's output, appended */
        const char *private_path; /* --private=PATH: listener and calls on freezerd's private socket */
        bool json;
        bool ph_start, ph_idle, ph_storm, ph_burst, ph_lists;
        char **daemon_argv; /* after "--" */
        int n_daemon_argv;
} O = {
        .top = 100,
        .fanout = 100,
        .starts = 5,
        .idle_s = 10,
        .burst = 1000,
        .ph_start = true,
        .ph_idle = true,
        .ph_storm = true,
        .ph_burst = true,
        .ph_lists = true,
};

/* Group index: top I -> I; child (I, J) -> top + I*fanout + J; burst (I, K) -> top*(1+fanout) + I*per + K. */
static unsigned n_tree, n_slots, burst_per_top;

/* ---- /proc readings -------------------------------------------------------------------------------------------- */

static int read_file(const char *path, char *buf, size_t size) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n, total = 0;

        if (fd < 0)
                return -errno;
        while ((size_t) total < size - 1 && (n = read(fd, buf + total, size - 1 - (size_t) total)) > 0)
                total += n;
        close(fd);
        buf[total] = 0;
        return (int) total;
}

static uint64_t proc_cpu_ns(pid_t pid) {
        clockid_t clk;
        struct timespec ts;

        if (pid <= 0 || clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static uint64_t proc_ticks(pid_t pid) {
        char path[64], buf[4096];
        unsigned long long ut, st;

        snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
        if (read_file(path, buf, sizeof buf) <= 0)
                die("cannot read %s", path);
        char *p = strrchr(buf, ')');
        if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
                die("cannot parse %s", path);
        return ut + st;
}

/* A "Key:   N kB" or "Key:  N" line of /proc/PID/status. */
static uint64_t status_value(pid_t pid, const char *key) {
        char path[64], buf[8192];
        size_t kl = strlen(key);

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        if (read_file(path, buf, sizeof buf) <= 0)
                die("cannot read %s", path);
        for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (strncmp(l, key, kl) == 0 && l[kl] == ':')
                        return strtoull(l + kl + 1, NULL, 10);
        die("%s has no %s", path, key);
}

typedef struct FdCount {
        unsigned fds, inotify_fds, watches;
} FdCount;

static FdCount count_fds(pid_t pid) {
        char path[64];
        FdCount c = {};
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof path, "/proc/%d/fd", (int) pid);
        d = opendir(path);
        if (!d)
                die("cannot open %s: %m", path);
        while ((de = readdir(d))) {
                char lp[PATH_MAX], target[128], info[PATH_MAX];
                ssize_t n;

                if (de->d_name[0] == '.')
                        continue;
                c.fds++;
                snprintf(lp, sizeof lp, "%s/%s", path, de->d_name);
                n = readlink(lp, target, sizeof target - 1);
                if (n < 0)
                        continue;
                target[n] = 0;
                if (strcmp(target, "anon_inode:inotify") != 0)
                        continue;
                c.inotify_fds++;
                snprintf(info, sizeof info, "/proc/%d/fdinfo/%s", (int) pid, de->d_name);
                FILE *f = fopen(info, "re");
                if (!f)
                        continue;
                char *line = NULL;
                size_t cap = 0;
                while (getline(&line, &cap, f) > 0)
                        if (strncmp(line, "inotify wd:", 11) == 0)
                                c.watches++;
                free(line);
                fclose(f);
        }
        closedir(d);
        return c;
}

typedef struct Usage {
        uint64_t cpu_ns, ticks, vcsw, ivcsw;
} Usage;

static Usage usage_of(pid_t pid) {
        return (Usage) {
                .cpu_ns = proc_cpu_ns(pid),
                .ticks = proc_ticks(pid),
                .vcsw = status_value(pid, "voluntary_ctxt_switches"),
                .ivcsw = status_value(pid, "nonvoluntary_ctxt_switches"),
        };
}

/* ---- the tree -------------------------------------------------------------------------------------------------- */

/* Returns the ns spent in mkdir(2) calls for groups that were missing, and how many. */
static uint64_t make_tree(unsigned *made) {
        char p[PATH_MAX];
        uint64_t t = 0;

        *made = 0;
        for (unsigned i = 0; i < O.top; i++) {
                snprintf(p, sizeof p, "%s/t%u", O.root, i);
                uint64_t t0 = now_ns();
                if (mkdir(p, 0755) == 0) {
                        t += now_ns() - t0;
                        (*made)++;
                } else if (errno != EEXIST)
                        die("mkdir %s: %m", p);
                for (unsigned j = 0; j < O.fanout; j++) {
                        snprintf(p, sizeof p, "%s/t%u/c%u", O.root, i, j);
                        t0 = now_ns();
                        if (mkdir(p, 0755) == 0) {
                                t += now_ns() - t0;
                                (*made)++;
                        } else if (errno != EEXIST)
                                die("mkdir %s: %m", p);
                }
        }
        return t;
}

static unsigned count_groups(const char *dir) {
        unsigned n = 0;
        DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                die("cannot open %s: %m", dir);
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                        char p[PATH_MAX];
                        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
                        n += 1 + count_groups(p);
                }
        closedir(d);
        return n;
}

/* ---- starting freezerd --------------------------------------------------------------------------------------- */

typedef struct Daemon {
        pid_t spawned; /* what we spawned (freezerd, or a wrapper around it) */
        pid_t pid;     /* freezerd (the sender of READY=1) */
        int pidfd;
        uint64_t t_spawn, t_ready;
        char status[256];
} Daemon;

static char notify_path[108];
static int notify_fd = -1;

static void notify_setup(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int one = 1;

        snprintf(notify_path, sizeof notify_path, "/tmp/bench-scale-notify-%d", (int) getpid());
        (void) unlink(notify_path);
        strcpy(sa.sun_path, notify_path);
        notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *) &sa, sizeof sa) < 0 ||
            setsockopt(notify_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) < 0)
                die("cannot set up the notify socket %s: %m", notify_path);
}

static void notify_cleanup(void) {
        if (notify_fd >= 0) {
                close(notify_fd);
                (void) unlink(notify_path);
        }
}

static char **make_env(void) {
        size_t n = 0;
        char **env;

        while (environ[n])
                n++;
        env = calloc(n + 2, sizeof *env);
        if (!env)
                die("out of memory");
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (strncmp(environ[i], "NOTIFY_SOCKET=", 14) != 0)
                        env[k++] = environ[i];
        if (asprintf(&env[k], "NOTIFY_SOCKET=%s", notify_path) < 0)
                die("out of memory");
        return env;
}

/* With log_path, the child's stdout and stderr are appended to that file. */
static pid_t spawn_logged(char **argv, const char *log_path) {
        static char **env;
        posix_spawn_file_actions_t fa;
        pid_t pid;
        int r;

        if (!env)
                env = make_env();
        posix_spawn_file_actions_init(&fa);
        if (log_path) {
                posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
                posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        }
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, env);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                die("cannot start %s: %s", argv[0], strerror(r));
        return pid;
}

static pid_t spawn(char **argv) {
        return spawn_logged(argv, NULL);
}

static void daemon_stop(Daemon *d) {
        int status;

        if (d->spawned <= 0)
                return;
        (void) kill(d->pid > 0 ? d->pid : d->spawned, SIGTERM);
        if (waitpid(d->spawned, &status, 0) < 0)
                die("waitpid: %m");
        if (d->pidfd >= 0)
                close(d->pidfd);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                fprintf(stderr, "bench-scale: warning: freezerd (or its wrapper) exited with status 0x%x\n", status);
        *d = (Daemon) { .pidfd = -1 };
}

/* Start freezerd over root and wait for READY=1. */
static Daemon daemon_start(const char *root) {
        char **argv = calloc((size_t) O.n_daemon_argv + 2, sizeof *argv);
        char *rootarg;
        Daemon d = { .pidfd = -1 };

        if (!argv || asprintf(&rootarg, "--cgroup-root=%s", root) < 0)
                die("out of memory");
        memcpy(argv, O.daemon_argv, (size_t) O.n_daemon_argv * sizeof *argv);
        argv[O.n_daemon_argv] = rootarg;

        /* Anything stale on the socket belongs to an earlier instance. */
        for (char junk[512]; recv(notify_fd, junk, sizeof junk, 0) >= 0;)
                ;
        d.t_spawn = now_ns();
        d.spawned = spawn_logged(argv, O.daemon_log);
        d.pidfd = (int) syscall(SYS_pidfd_open, d.spawned, 0);
        if (d.pidfd < 0)
                die("pidfd_open: %m");
        free(rootarg);
        free(argv);

        for (;;) {
                struct pollfd p[2] = { { .fd = notify_fd, .events = POLLIN }, { .fd = d.pidfd, .events = POLLIN } };
                uint64_t now = now_ns();
                if (now - d.t_spawn > READY_TIMEOUT_NS)
                        die("freezerd did not send READY=1 within %llu s", READY_TIMEOUT_NS / 1000000000ULL);
                int r = poll(p, 2, (int) ((READY_TIMEOUT_NS - (now - d.t_spawn)) / 1000000) + 1);
                if (r < 0 && errno != EINTR)
                        die("poll: %m");
                if (r <= 0)
                        continue;
                if (p[0].revents & POLLIN) {
                        char buf[4096];
                        union {
                                struct cmsghdr h;
                                char raw[CMSG_SPACE(sizeof(struct ucred))];
                        } control;
                        struct iovec iov = { .iov_base = buf, .iov_len = sizeof buf - 1 };
                        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                             .msg_controllen = sizeof control };
                        ssize_t n = recvmsg(notify_fd, &mh, MSG_CMSG_CLOEXEC);
                        uint64_t t = now_ns();
                        if (n < 0)
                                continue;
                        buf[n] = 0;
                        pid_t sender = 0;
                        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                                        struct ucred uc;
                                        memcpy(&uc, CMSG_DATA(c), sizeof uc);
                                        sender = uc.pid;
                                }
                        if (strstr(buf, "READY=1")) {
                                d.t_ready = t;
                                d.pid = sender > 0 ? sender : d.spawned;
                                char *s = strstr(buf, "STATUS=");
                                if (s) {
                                        snprintf(d.status, sizeof d.status, "%s", s + 7);
                                        d.status[strcspn(d.status, "\n")] = 0;
                                }
                                return d;
                        }
                        continue;
                }
                if (p[1].revents & POLLIN) {
                        int status;
                        waitpid(d.spawned, &status, 0);
                        die("freezerd exited (status 0x%x) before READY=1", status);
                }
        }
}

/* "freezerd --version" until it exits: the bare cost of exec'ing the binary. */
static uint64_t time_version(void) {
        char *argv[] = { O.daemon_argv[0], (char *) "--version", NULL };
        int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC), saved = dup(STDOUT_FILENO), status;
        uint64_t t0, t1;
        pid_t pid;

        fflush(stdout);
        dup2(devnull, STDOUT_FILENO);
        t0 = now_ns();
        pid = spawn(argv);
        waitpid(pid, &status, 0);
        t1 = now_ns();
        dup2(saved, STDOUT_FILENO);
        close(saved);
        close(devnull);
        return t1 - t0;
}

typedef struct StartResult {
        uint64_t ready_ns, cpu_ns, rss_kb, hwm_kb, anon_kb;
        FdCount fds;
        unsigned groups; /* from STATUS= */
} StartResult;

static StartResult measure_start(Daemon *d) {
        StartResult s = {
                .ready_ns = d->t_ready - d->t_spawn,
                .cpu_ns = proc_cpu_ns(d->pid),
                .rss_kb = status_value(d->pid, "VmRSS"),
                .hwm_kb = status_value(d->pid, "VmHWM"),
                .anon_kb = status_value(d->pid, "RssAnon"),
                .fds = count_fds(d->pid),
        };
        const char *t = strstr(d->status, "Tracking ");
        if (t)
                s.groups = (unsigned) strtoul(t + 9, NULL, 10);
        return s;
}

/* ---- the listener thread --------------------------------------------------------------------------------------- */

typedef enum Want {
        WANT_NONE,
        WANT_STATE,   /* FreezerState == want_state */
        WANT_ADDED,   /* InterfacesAdded */
        WANT_REMOVED, /* InterfacesRemoved */
} Want;

enum { ST_UNKNOWN, ST_RUNNING, ST_FROZEN, ST_FROZEN_BY_PARENT, ST_OTHER };

typedef struct IdSlot {
        uint64_t id;
        int slot;
} IdSlot;

static struct {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        sd_bus *bus;
        volatile bool stop;

        /* guarded by lock */
        uint8_t *state;     /* per slot: ST_* from the last FreezerState seen */
        uint16_t *count;    /* per slot: PropertiesChanged in this phase */
        uint8_t *want_state;
        bool *reached;
        Want want;
        unsigned n_expected, n_reached;
        uint64_t t_last_reached, t_first_msg, t_last_msg;
        unsigned msgs, pc_total, pc_groups, pc_manager, added, removed, other;
        unsigned gc_msgs, gc_entries; /* GroupsChanged messages and their entries */
        uint16_t *gc_count;           /* per slot: GroupsChanged entries in this phase */
        unsigned gc_max_in_msg;       /* most entries of one object within one GroupsChanged */
        uint64_t handle_ns;           /* time spent in on_message() for freezerd's signals: reading
                                       * their entries, which delays the next message's reading */
        bool by_pc;                   /* states followed through PropertiesChanged (subscribed), else GroupsChanged */
        bool by_lib;                  /* states followed through libfreezer's state callback (the
                                       * signals this thread sees are counted, not followed) */
        struct IdSlot *ids;           /* GroupStatesChanged: (Id, slot) by Id, from ListGroupIds */
        size_t n_ids;
} L = {
        .lock = PTHREAD_MUTEX_INITIALIZER,
        .cond = PTHREAD_COND_INITIALIZER,
};

/* "%u" at *p (digits only, below limit), advancing *p; false if none. */
static bool parse_index(const char **p, unsigned limit, unsigned *ret) {
        unsigned v = 0;
        const char *q = *p;

        if (*q < '0' || *q > '9')
                return false;
        for (; *q >= '0' && *q <= '9'; q++) {
                v = v * 10 + (unsigned) (*q - '0');
                if (v >= limit)
                        return false;
        }
        *p = q;
        *ret = v;
        return true;
}

/* The slot of a group path ("/t3/c7", "/t3", "/t3/b2"), or -1.  Parsed by hand:
 * a listener calls it for each of 10,000 entries of a storm, on the CPU that
 * freezerd, dbus-daemon and the caller share (sscanf() took about 1 µs). */
static int slot_of(const char *path) {
        const char *p = path;
        unsigned i, j;

        if (strncmp(p, "/t", 2) != 0)
                return -1;
        p += 2;
        if (!parse_index(&p, O.top, &i))
                return -1;
        if (*p == 0)
                return (int) i;
        if (p[0] == '/' && p[1] == 'c' && (p += 2, parse_index(&p, O.fanout, &j)) && *p == 0)
                return (int) (O.top + i * O.fanout + j);
        if (p[0] == '/' && p[1] == 'b' && (p += 2, parse_index(&p, burst_per_top, &j)) && *p == 0)
                return (int) (n_tree + i * burst_per_top + j);
        return -1;
}

static int slot_of_object(const char *object) {
        char *path = NULL;
        int s;

        if (sd_bus_path_decode(object, GROUP_PREFIX, &path) <= 0)
                return -1;
        s = slot_of(path);
        free(path);
        return s;
}

static int state_id(const char *s) {
        return strcmp(s, "running") == 0            ? ST_RUNNING
               : strcmp(s, "frozen") == 0           ? ST_FROZEN
               : strcmp(s, "frozen-by-parent") == 0 ? ST_FROZEN_BY_PARENT
                                                     : ST_OTHER;
}

static void reach(int slot, uint64_t t) {
        if (!L.reached[slot]) {
                L.reached[slot] = true;
                L.n_reached++;
                L.t_last_reached = t;
                if (L.n_reached == L.n_expected)
                        pthread_cond_broadcast(&L.cond);
        }
}

static void unreach(int slot) {
        if (L.reached[slot]) {
                L.reached[slot] = false;
                L.n_reached--;
        }
}

/* One state (ST_*) seen for slot (from any signal). */
static void see_state_id(int slot, int st, uint64_t t) {
        L.state[slot] = (uint8_t) st;
        if (L.want == WANT_STATE && L.want_state[slot] != ST_UNKNOWN) {
                if (L.state[slot] == L.want_state[slot])
                        reach(slot, t);
                else
                        unreach(slot);
        }
}

static void see_state(int slot, const char *v, uint64_t t) {
        see_state_id(slot, state_id(v), t);
}

/* Reads the a{sv} of a PropertiesChanged; its FreezerState counts for slot when
 * follow (the phase follows this kind of signal).  Returns < 0 if malformed. */
static int read_props(sd_bus_message *m, int slot, bool follow, uint64_t t) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");

        while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;
                if (sd_bus_message_read(m, "s", &name) < 0)
                        return -EBADMSG;
                if (strcmp(name, "FreezerState") == 0) {
                        const char *v;
                        if (sd_bus_message_read(m, "v", "s", &v) < 0)
                                return -EBADMSG;
                        if (slot >= 0 && follow)
                                see_state(slot, v, t);
                } else if (sd_bus_message_skip(m, "v") < 0)
                        return -EBADMSG;
                if (sd_bus_message_exit_container(m) < 0)
                        return -EBADMSG;
        }
        return r < 0 ? r : sd_bus_message_exit_container(m);
}

/* GroupsChanged and GroupStatesChanged: a message begins; its entries are counted
 * by list_entry().  One table for both kinds: a phase follows one of them. */
static uint32_t *listed_in; /* per slot: the message that last listed it */
static uint32_t list_msg_id;

static bool list_message_begin(void) {
        if (!listed_in && !(listed_in = calloc(n_slots, sizeof *listed_in)))
                return false;
        list_msg_id++;
        L.gc_msgs++;
        return true;
}

/* One entry for slot (-1: not one of the benchmark's groups) in the current message. */
static void list_entry(int slot) {
        L.gc_entries++;
        if (slot < 0)
                return;
        if (L.gc_count[slot] < UINT16_MAX)
                L.gc_count[slot]++;
        if (listed_in[slot] == list_msg_id) {
                if (L.gc_max_in_msg < 2)
                        L.gc_max_in_msg = 2;
        } else if (L.gc_max_in_msg < 1)
                L.gc_max_in_msg = 1;
        listed_in[slot] = list_msg_id;
}

/* Manager.GroupsChanged(a(ssbbbuu)): each group's path and whole state. */
static void on_groups_changed(sd_bus_message *m, uint64_t t) {
        if (!list_message_begin() || sd_bus_message_enter_container(m, 'a', "(ssbbbuu)") <= 0)
                return;
        for (;;) {
                const char *path, *state;
                int freeze, frozen, populated, slot;
                uint32_t descendants, frozen_descendants;

                if (sd_bus_message_read(m, "(ssbbbuu)", &path, &state, &freeze, &frozen, &populated, &descendants,
                                        &frozen_descendants) <= 0)
                        return;
                slot = slot_of(path);
                list_entry(slot);
                if (slot >= 0 && !L.by_pc && !L.by_lib)
                        see_state(slot, state, t);
        }
}

static int cmp_id_slot(const void *a, const void *b) {
        uint64_t x = ((const IdSlot *) a)->id, y = ((const IdSlot *) b)->id;
        return x < y ? -1 : x > y;
}

/* The slot of a group's Id (the kernel's cgroup id: sparse), or -1. */
static int slot_of_id(uint64_t id) {
        IdSlot key = { .id = id }, *e = L.n_ids ? bsearch(&key, L.ids, L.n_ids, sizeof *L.ids, cmp_id_slot) : NULL;
        return e ? e->slot : -1;
}

/* Manager.GroupStatesChanged(at ids, au states, au descendants, au frozen_descendants):
 * the same entries, groups named by Id, read in place.  Counted with GroupsChanged's
 * figures (messages, entries, most per object). */
static void on_group_states_changed(sd_bus_message *m, uint64_t t) {
        const uint64_t *ids;
        const uint32_t *states;
        size_t n_ids, n_states;

        if (!list_message_begin() || sd_bus_message_read_array(m, 't', (const void **) &ids, &n_ids) < 0 ||
            sd_bus_message_read_array(m, 'u', (const void **) &states, &n_states) < 0 ||
            n_ids / sizeof *ids != n_states / sizeof *states)
                return;
        n_ids /= sizeof *ids;
        for (size_t i = 0; i < n_ids; i++) {
                /* 1 Freeze, 2 an ancestor freezes it, 4 Frozen (see the D-Bus XML). */
                uint32_t st = states[i] & 7;
                int slot = slot_of_id(ids[i]);

                list_entry(slot);
                if (slot >= 0 && !L.by_lib)
                        see_state_id(slot, st == 0                ? ST_RUNNING
                                           : st == 5 || st == 7   ? ST_FROZEN
                                           : st == 6              ? ST_FROZEN_BY_PARENT
                                                                  : ST_OTHER,
                                     t);
        }
}

static void on_message(sd_bus_message *m, uint64_t t) {
        const char *member = sd_bus_message_get_member(m), *object = sd_bus_message_get_path(m);
        const char *iface = sd_bus_message_get_interface(m);
        uint8_t type = 0;

        if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_SIGNAL || !member || !object || !iface)
                return;
        pthread_mutex_lock(&L.lock);
        if (!L.t_first_msg)
                L.t_first_msg = t;
        L.t_last_msg = t;
        L.msgs++;
        if (strcmp(iface, "org.freedesktop.DBus.Properties") == 0 && strcmp(member, "PropertiesChanged") == 0) {
                int slot = slot_of_object(object);
                L.pc_total++;
                if (strcmp(object, MANAGER_PATH) == 0)
                        L.pc_manager++;
                if (slot < 0)
                        goto out;
                L.pc_groups++;
                if (L.count[slot] < UINT16_MAX)
                        L.count[slot]++;
                if (sd_bus_message_skip(m, "s") >= 0)
                        (void) read_props(m, slot, L.by_pc, t);
        } else if (strcmp(iface, MANAGER_IFACE) == 0 && strcmp(member, "GroupsChanged") == 0) {
                on_groups_changed(m, t);
        } else if (strcmp(iface, MANAGER_IFACE) == 0 && strcmp(member, "GroupStatesChanged") == 0) {
                on_group_states_changed(m, t);
        } else if (strcmp(iface, "org.freedesktop.DBus.ObjectManager") == 0) {
                const char *o = NULL;
                int slot;
                bool added = strcmp(member, "InterfacesAdded") == 0;

                if (added)
                        L.added++;
                else if (strcmp(member, "InterfacesRemoved") == 0)
                        L.removed++;
                else {
                        L.other++;
                        goto out;
                }
                if (sd_bus_message_read(m, "o", &o) < 0 || (slot = slot_of_object(o)) < 0)
                        goto out;
                if ((added && L.want == WANT_ADDED) || (!added && L.want == WANT_REMOVED))
                        if (L.want_state[slot] != ST_UNKNOWN)
                                reach(slot, t);
        } else
                L.other++;
out:
        L.handle_ns += now_ns() - t;
        pthread_mutex_unlock(&L.lock);
}

static void *listener_main(void *arg) {
        while (!L.stop) {
                sd_bus_message *m = NULL;
                int r = sd_bus_process(L.bus, &m);
                uint64_t t = now_ns();
                if (r < 0) {
                        fprintf(stderr, "bench-scale: listener: %s\n", strerror(-r));
                        break;
                }
                if (m) {
                        on_message(m, t);
                        sd_bus_message_unref(m);
                }
                if (r > 0)
                        continue;
                r = sd_bus_wait(L.bus, 100000);
                if (r < 0 && r != -EINTR) {
                        fprintf(stderr, "bench-scale: listener: wait: %s\n", strerror(-r));
                        break;
                }
        }
        return NULL;
}

static void listener_thread_start(void) {
        int r;

        L.stop = false;
        r = pthread_create(&L.thread, NULL, listener_main, NULL);
        if (r != 0)
                die("pthread_create: %s", strerror(r));
}

static void listener_start(void) {
        int r;

        L.state = calloc(n_slots, 1);
        L.count = calloc(n_slots, sizeof *L.count);
        L.want_state = calloc(n_slots, 1);
        L.reached = calloc(n_slots, sizeof *L.reached);
        L.gc_count = calloc(n_slots, sizeof *L.gc_count);
        if (!L.state || !L.count || !L.want_state || !L.reached || !L.gc_count)
                die("out of memory");
        /* On the private socket no match rules: freezerd sends what the listener subscribed to. */
        if (O.private_path)
                L.bus = bench_connect_private(O.private_path);
        else {
                L.bus = bench_connect_bus(O.address);
                /* Synchronous: once it returns, the bus delivers every later signal. */
                r = sd_bus_add_match(L.bus, NULL,
                                     "type='signal',sender='" BUS_NAME "',path_namespace='" MANAGER_PATH "'", NULL,
                                     NULL);
                if (r < 0)
                        die("AddMatch: %s", strerror(-r));
        }
        listener_thread_start();
}

static void listener_stop(void) {
        L.stop = true;
        pthread_join(L.thread, NULL);
        sd_bus_flush_close_unref(L.bus);
}

/* The same states through libfreezer's state callback, as a C client of the
 * library follows them (GroupStatesChanged since libfreezer 0.4.1): a handle of
 * its own, dispatched by a thread of its own. */
static struct {
        freezer *f;
        pthread_t thread;
        volatile bool stop;
} LF;

static void on_lib_state(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        uint64_t t = now_ns();
        int slot = slot_of(path);

        if (slot < 0)
                return;
        pthread_mutex_lock(&L.lock);
        if (L.by_lib)
                see_state_id(slot, state == FREEZER_STATE_RUNNING            ? ST_RUNNING
                                   : state == FREEZER_STATE_FROZEN           ? ST_FROZEN
                                   : state == FREEZER_STATE_FROZEN_BY_PARENT ? ST_FROZEN_BY_PARENT
                                                                             : ST_OTHER,
                             t);
        pthread_mutex_unlock(&L.lock);
}

static void *lib_listener_main(void *arg) {
        while (!LF.stop) {
                int r = freezer_wait(LF.f, 100000);
                if (r > 0)
                        r = freezer_dispatch(LF.f);
                if (r < 0 && r != -EINTR) {
                        fprintf(stderr, "bench-scale: libfreezer listener: %s\n", strerror(-r));
                        break;
                }
        }
        return NULL;
}

/* Opens the handle, installs the callback (which subscribes and loads the
 * Ids), primes its states with freezer_list() as freezectl watch does, and
 * starts its thread. */
static void lib_listener_start(void) {
        freezer_group *groups = NULL;
        size_t n = 0;
        int r;

        r = O.private_path ? freezer_open_private(&LF.f, O.private_path) : freezer_open_address(&LF.f, O.address);
        if (r < 0)
                die("libfreezer listener: cannot open a handle: %s", strerror(-r));
        r = freezer_set_state_callback(LF.f, on_lib_state, NULL);
        if (r < 0)
                die("libfreezer listener: freezer_set_state_callback: %s", strerror(-r));
        r = freezer_list(LF.f, &groups, &n);
        if (r < 0)
                die("libfreezer listener: freezer_list: %s", strerror(-r));
        freezer_group_array_free(groups, n);
        LF.stop = false;
        r = pthread_create(&LF.thread, NULL, lib_listener_main, NULL);
        if (r != 0)
                die("pthread_create: %s", strerror(r));
}

static void lib_listener_stop(void) {
        LF.stop = true;
        pthread_join(LF.thread, NULL);
        LF.f = freezer_close(LF.f);
}

/* A new phase: counters to zero; what counts as done is set by the caller under the lock. */
static void phase_reset_locked(Want want) {
        memset(L.count, 0, n_slots * sizeof *L.count);
        memset(L.gc_count, 0, n_slots * sizeof *L.gc_count);
        L.gc_msgs = L.gc_entries = L.gc_max_in_msg = 0;
        L.handle_ns = 0;
        memset(L.want_state, 0, n_slots);
        memset(L.reached, 0, n_slots * sizeof *L.reached);
        L.want = want;
        L.n_expected = L.n_reached = 0;
        L.t_last_reached = L.t_first_msg = L.t_last_msg = 0;
        L.msgs = L.pc_total = L.pc_groups = L.pc_manager = L.added = L.removed = L.other = 0;
}

static void phase_expect_locked(unsigned slot, uint8_t st) {
        L.want_state[slot] = st ? st : 0xff;
        L.n_expected++;
        if (L.want == WANT_STATE && L.state[slot] == st)
                reach((int) slot, now_ns()); /* already there (not expected in a real phase) */
}

/* Wait until the phase's every expected object arrived; returns the time of the last one. */
static uint64_t phase_wait(const char *what) {
        struct timespec dl;
        uint64_t t;

        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += (time_t) (PHASE_TIMEOUT_NS / 1000000000ULL);
        pthread_mutex_lock(&L.lock);
        while (L.n_reached < L.n_expected)
                if (pthread_cond_timedwait(&L.cond, &L.lock, &dl) == ETIMEDOUT)
                        die("%s: only %u of %u group objects reported in time", what, L.n_reached, L.n_expected);
        t = L.t_last_reached;
        pthread_mutex_unlock(&L.lock);
        return t;
}

/* ---- phases ------------------------------------------------------------------------------------------------------ */

/* --perf=PREFIX: `perf record -p PID` into PREFIX-KEY.data for the length of one phase. */
static pid_t perf_begin(pid_t daemon, const char *key) {
        char *out, *pidarg;
        pid_t pid;

        if (!O.perf)
                return 0;
        if (asprintf(&out, "%s-%s.data", O.perf, key) < 0 || asprintf(&pidarg, "%d", (int) daemon) < 0)
                die("out of memory");
        char *argv[] = { (char *) "/usr/bin/perf", (char *) "record", (char *) "-q", (char *) "-F", (char *) "20000",
                         (char *) "--call-graph", (char *) "dwarf,16384", (char *) "-o", out, (char *) "-p", pidarg,
                         NULL };
        pid = spawn(argv);
        free(out);
        free(pidarg);
        sleep_ns(1000 * 1000000ULL); /* perf needs a moment to attach */
        return pid;
}

static void perf_end(pid_t pid) {
        int status;

        if (pid <= 0)
                return;
        kill(pid, SIGINT);
        waitpid(pid, &status, 0);
}

static sd_bus *ping_bus;

/* The size of --daemon-log now (0 without one). */
static off_t log_size(void) {
        struct stat st;

        if (!O.daemon_log || stat(O.daemon_log, &st) < 0)
                return 0;
        return st.st_size;
}

/* How many lines of --daemon-log from offset on contain needle. */
static unsigned log_count_from(off_t offset, const char *needle) {
        FILE *f;
        char *line = NULL;
        size_t cap = 0;
        unsigned n = 0;

        if (!O.daemon_log || !(f = fopen(O.daemon_log, "re")))
                return 0;
        if (fseeko(f, offset, SEEK_SET) == 0)
                while (getline(&line, &cap, f) > 0)
                        n += strstr(line, needle) != NULL;
        free(line);
        fclose(f);
        return n;
}

static void ping_barrier(void) {
        for (int i = 0; i < 2; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;
                int r = sd_bus_call_method(ping_bus, BUS_NAME, MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping", &error,
                                           NULL, NULL);
                if (r < 0)
                        die("Peer.Ping to freezerd failed: %s", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
        }
}

typedef struct PhaseResult {
        const char *key;
        uint64_t op_ns;       /* the call until its reply, or the mkdir/rmdir loop */
        uint64_t all_ns;      /* until the last expected signal */
        uint64_t daemon_cpu_ns, bus_cpu_ns;
        uint64_t handle_ns; /* the listener's time reading freezerd's signals */
        unsigned expected, msgs, pc_total, pc_groups, pc_manager, added, removed;
        unsigned max_per_object, objects_multi;
        unsigned gc_msgs, gc_entries, gc_max_per_object, gc_max_in_msg;
        bool subscribed;
        unsigned overflows; /* "inotify queue overflowed" lines freezerd logged during the phase */
        uint32_t writes, skipped;
} PhaseResult;

static void phase_collect(PhaseResult *p) {
        pthread_mutex_lock(&L.lock);
        p->expected = L.n_expected;
        p->msgs = L.msgs;
        p->pc_total = L.pc_total;
        p->pc_groups = L.pc_groups;
        p->pc_manager = L.pc_manager;
        p->added = L.added;
        p->removed = L.removed;
        p->gc_msgs = L.gc_msgs;
        p->gc_entries = L.gc_entries;
        p->gc_max_in_msg = L.gc_max_in_msg;
        p->handle_ns = L.handle_ns;
        for (unsigned s = 0; s < n_slots; s++) {
                if (L.gc_count[s] > p->gc_max_per_object)
                        p->gc_max_per_object = L.gc_count[s];
                if (L.count[s] > p->max_per_object)
                        p->max_per_object = L.count[s];
                if (L.count[s] > 1)
                        p->objects_multi++;
        }
        pthread_mutex_unlock(&L.lock);
}

/* Where a phase started: a perf record, freezerd's log, the CPU time of freezerd
 * and of the bus, and the clock. */
typedef struct PhaseStart {
        pid_t daemon, perf;
        off_t log0;
        uint64_t c0, b0, t0;
} PhaseStart;

/* Called right before the phase's operation. */
static PhaseStart phase_begin(pid_t daemon, const char *key) {
        PhaseStart s = { .daemon = daemon };

        s.perf = perf_begin(daemon, key);
        s.log0 = log_size();
        s.c0 = proc_cpu_ns(daemon);
        s.b0 = proc_cpu_ns(O.bus_pid);
        s.t0 = now_ns();
        return s;
}

/* Called once the phase's operation returned at t1: waits for the last
 * expected signal and the work freezerd left behind, then fills in p. */
static void phase_end(const PhaseStart *s, PhaseResult *p, uint64_t t1) {
        uint64_t tall, c1, b1;

        tall = phase_wait(p->key);
        ping_barrier();
        c1 = proc_cpu_ns(s->daemon);
        b1 = proc_cpu_ns(O.bus_pid);
        perf_end(s->perf);
        p->op_ns = t1 - s->t0;
        p->all_ns = tall - s->t0;
        p->daemon_cpu_ns = c1 - s->c0;
        p->bus_cpu_ns = O.bus_pid > 0 ? b1 - s->b0 : 0;
        sleep_ns(200 * 1000000ULL); /* late signals would show up in the counts */
        phase_collect(p);
        p->overflows = log_count_from(s->log0, "overflow");
}

/* Manager.Subscribe()/Unsubscribe() or SubscribeGroups() on the ping
 * connection: freezerd sends GroupsChanged (and, for Subscribe(), per-object
 * PropertiesChanged) to everyone's matches while anyone subscribed.  With
 * --private, on the listener's own connection (a private connection gets what
 * it subscribed to), with its thread stopped meanwhile: sd-bus connections are
 * not shared between threads. */
static void subscribe(const char *method) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus *bus = O.private_path ? L.bus : ping_bus;
        int r;

        if (O.private_path) {
                L.stop = true;
                pthread_join(L.thread, NULL);
        }
        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, method, &e, NULL, "");
        if (r < 0)
                die("%s: %s", method, e.message ?: strerror(-r));
        sd_bus_error_free(&e);
        if (O.private_path)
                listener_thread_start();
}

/* Fills L.ids from ListGroupIds(), for GroupStatesChanged. */
static void load_group_ids(void) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *path;
        uint64_t id;
        int r;

        r = sd_bus_call_method(ping_bus, BUS_NAME, MANAGER_PATH, MANAGER_IFACE, "ListGroupIds", &e, &reply, "");
        if (r < 0)
                die("ListGroupIds: %s", e.message ?: strerror(-r));
        pthread_mutex_lock(&L.lock);
        L.n_ids = 0;
        r = sd_bus_message_enter_container(reply, 'a', "(st)");
        for (size_t allocated = 0; r > 0 && (r = sd_bus_message_read(reply, "(st)", &path, &id)) > 0;) {
                if (L.n_ids == allocated) {
                        allocated = allocated ? allocated * 2 : 1024;
                        if (!(L.ids = realloc(L.ids, allocated * sizeof *L.ids)))
                                die("out of memory");
                }
                L.ids[L.n_ids++] = (IdSlot) { .id = id, .slot = slot_of(path) };
        }
        qsort(L.ids, L.n_ids, sizeof *L.ids, cmp_id_slot);
        pthread_mutex_unlock(&L.lock);
        if (r < 0)
                die("ListGroupIds: cannot read the reply: %s", strerror(-r));
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
}

typedef enum Via {
        VIA_GROUPS,     /* GroupsChanged (SubscribeGroups()) */
        VIA_STATES,     /* GroupStatesChanged (SubscribeGroupStates()) */
        VIA_PROPERTIES, /* per-object PropertiesChanged (Subscribe()) */
        VIA_LIBFREEZER, /* libfreezer's state callback */
} Via;

/* via: the signal the listener follows states through (subscribed to before). */
static PhaseResult phase_storm(freezer *f, pid_t daemon, bool freeze, Via via) {
        static const char *const keys[][2] = {
                [VIA_GROUPS] = { "storm-thaw", "storm-freeze" },
                [VIA_STATES] = { "storm-thaw-states", "storm-freeze-states" },
                [VIA_PROPERTIES] = { "storm-thaw-subscribed", "storm-freeze-subscribed" },
                [VIA_LIBFREEZER] = { "storm-thaw-libfreezer", "storm-freeze-libfreezer" },
        };
        bool subscribed = via == VIA_PROPERTIES;
        PhaseResult p = { .key = keys[via][freeze], .subscribed = subscribed };
        freezer_request *req = calloc(O.top, sizeof *req);
        char **paths = calloc(O.top, sizeof *paths);
        PhaseStart start;
        uint64_t t1;
        int r;

        if (!req || !paths)
                die("out of memory");
        for (unsigned i = 0; i < O.top; i++) {
                if (asprintf(&paths[i], "/t%u", i) < 0)
                        die("out of memory");
                req[i] = (freezer_request) { .path = paths[i], .freeze = freeze };
        }
        pthread_mutex_lock(&L.lock);
        phase_reset_locked(WANT_STATE);
        L.by_pc = subscribed;
        L.by_lib = via == VIA_LIBFREEZER;
        for (unsigned s = 0; s < n_tree; s++)
                phase_expect_locked(s, !freeze ? ST_RUNNING : s < O.top ? ST_FROZEN : ST_FROZEN_BY_PARENT);
        pthread_mutex_unlock(&L.lock);

        start = phase_begin(daemon, p.key);
        r = freezer_apply_batch(f, req, O.top, FREEZER_ORDER_AUTO, 0, 0, &p.writes, &p.skipped);
        t1 = now_ns();
        if (r < 0)
                die("ApplyBatch (%s) failed: %s: %s", p.key, freezer_last_error_name(f) ?: strerror(-r),
                    freezer_last_error_message(f) ?: "");
        phase_end(&start, &p, t1);
        for (unsigned i = 0; i < O.top; i++)
                free(paths[i]);
        free(paths);
        free(req);
        return p;
}

static PhaseResult phase_burst(pid_t daemon, bool create) {
        PhaseResult p = { .key = create ? "burst-mkdir" : "burst-rmdir" };
        unsigned n = O.top * burst_per_top;
        char **dirs = calloc(n, sizeof *dirs);
        PhaseStart start;
        uint64_t t1;

        if (!dirs)
                die("out of memory");
        for (unsigned i = 0; i < O.top; i++)
                for (unsigned k = 0; k < burst_per_top; k++)
                        if (asprintf(&dirs[i * burst_per_top + k], "%s/t%u/b%u", O.root, i, k) < 0)
                                die("out of memory");
        pthread_mutex_lock(&L.lock);
        phase_reset_locked(create ? WANT_ADDED : WANT_REMOVED);
        for (unsigned s = n_tree; s < n_slots; s++)
                phase_expect_locked(s, 0);
        pthread_mutex_unlock(&L.lock);

        start = phase_begin(daemon, p.key);
        for (unsigned i = 0; i < n; i++)
                if ((create ? mkdir(dirs[i], 0755) : rmdir(dirs[i])) < 0)
                        die("%s %s: %m", create ? "mkdir" : "rmdir", dirs[i]);
        t1 = now_ns();
        phase_end(&start, &p, t1);
        for (unsigned i = 0; i < n; i++)
                free(dirs[i]);
        free(dirs);
        return p;
}

/* The kernel's own time for the storm's writes, the floor of its rows: with
 * freezerd stopped (SIGSTOP, so that it takes no CPU meanwhile; it catches up
 * once continued, untimed), pwrite() of "1" to the top groups' cgroup.freeze
 * (fds opened beforehand), then of "0", STORM_FLOOR_ROUNDS times, 100 ms
 * apart.  The groups hold no task: the kernel freezes and thaws each subtree
 * inside the write. */
#define STORM_FLOOR_ROUNDS 3

typedef struct StormFloor {
        uint64_t freeze_ns[STORM_FLOOR_ROUNDS], thaw_ns[STORM_FLOOR_ROUNDS];
} StormFloor;

static pid_t stopped_daemon;

static void continue_daemon(void) {
        if (stopped_daemon > 0)
                (void) kill(stopped_daemon, SIGCONT);
}

static StormFloor phase_storm_floor(pid_t daemon) {
        StormFloor fl = {};
        int *fds = calloc(O.top, sizeof *fds);

        if (!fds)
                die("out of memory");
        for (unsigned i = 0; i < O.top; i++) {
                char p[PATH_MAX];
                snprintf(p, sizeof p, "%s/t%u/cgroup.freeze", O.root, i);
                fds[i] = open(p, O_WRONLY | O_CLOEXEC);
                if (fds[i] < 0)
                        die("cannot open %s: %m", p);
        }
        pthread_mutex_lock(&L.lock);
        phase_reset_locked(WANT_NONE);
        pthread_mutex_unlock(&L.lock);
        die_hook = continue_daemon;
        if (kill(daemon, SIGSTOP) < 0)
                die("cannot stop freezerd: %m");
        stopped_daemon = daemon;
        for (unsigned k = 0; k < STORM_FLOOR_ROUNDS; k++)
                for (int v = 1; v >= 0; v--) {
                        uint64_t t0 = now_ns();
                        for (unsigned i = 0; i < O.top; i++)
                                if (pwrite(fds[i], v ? "1" : "0", 1, 0) != 1)
                                        die("cannot write t%u/cgroup.freeze: %m", i);
                        (v ? fl.freeze_ns : fl.thaw_ns)[k] = now_ns() - t0;
                        sleep_ns(100 * 1000000ULL);
                }
        continue_daemon();
        stopped_daemon = 0;
        for (unsigned i = 0; i < O.top; i++)
                close(fds[i]);
        free(fds);
        ping_barrier(); /* freezerd has read the writes it missed */
        return fl;
}

typedef struct ListResult {
        uint64_t managed_ns, list_ns, daemon_cpu_managed_ns, daemon_cpu_list_ns;
        size_t managed_objects, list_n;
} ListResult;

/* One GetManagedObjects (raw sd-bus) and one ListGroups (freezer_list()), timed. */
static ListResult phase_lists(freezer *f, pid_t daemon) {
        ListResult l = {};
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL, *call = NULL;
        freezer_group *groups = NULL;
        uint64_t t0, c0;
        int r;

        r = sd_bus_message_new_method_call(ping_bus, &call, BUS_NAME, MANAGER_PATH,
                                           "org.freedesktop.DBus.ObjectManager", "GetManagedObjects");
        if (r < 0)
                die("GetManagedObjects: %s", strerror(-r));
        c0 = proc_cpu_ns(daemon);
        t0 = now_ns();
        r = sd_bus_call(ping_bus, call, 120ULL * 1000000ULL, &error, &reply);
        l.managed_ns = now_ns() - t0;
        l.daemon_cpu_managed_ns = proc_cpu_ns(daemon) - c0;
        if (r < 0)
                die("GetManagedObjects failed: %s", error.message ?: strerror(-r));
        r = sd_bus_message_enter_container(reply, 'a', "{oa{sa{sv}}}");
        while (r > 0 && (r = sd_bus_message_skip(reply, "{oa{sa{sv}}}")) > 0)
                l.managed_objects++;
        sd_bus_message_unref(reply);
        sd_bus_message_unref(call);
        sd_bus_error_free(&error);

        c0 = proc_cpu_ns(daemon);
        t0 = now_ns();
        r = freezer_list(f, &groups, &l.list_n);
        l.list_ns = now_ns() - t0;
        l.daemon_cpu_list_ns = proc_cpu_ns(daemon) - c0;
        if (r < 0)
                die("ListGroups failed: %s", strerror(-r));
        freezer_group_array_free(groups, l.list_n);
        return l;
}

typedef struct IdleResult {
        unsigned seconds;
        Usage before, after;
        unsigned msgs;
} IdleResult;

static IdleResult phase_idle(pid_t daemon) {
        IdleResult r = { .seconds = O.idle_s };

        sleep_ns(1000000000ULL);
        pthread_mutex_lock(&L.lock);
        phase_reset_locked(WANT_NONE);
        pthread_mutex_unlock(&L.lock);
        r.before = usage_of(daemon);
        sleep_ns((uint64_t) O.idle_s * 1000000000ULL);
        r.after = usage_of(daemon);
        pthread_mutex_lock(&L.lock);
        r.msgs = L.msgs;
        pthread_mutex_unlock(&L.lock);
        return r;
}

/* ---- output ------------------------------------------------------------------------------------------------------ */

typedef struct Stats {
        double median, min, max;
} Stats;

/* Of values in ns: ms. */
static Stats stats_ms(const uint64_t *v, unsigned n) {
        uint64_t s[MAX_STARTS];
        Stats r = {};

        if (n == 0)
                return r;
        memcpy(s, v, n * sizeof *s);
        qsort(s, n, sizeof *s, cmp_u64);
        r.min = ms(s[0]);
        r.max = ms(s[n - 1]);
        r.median = n % 2 ? ms(s[n / 2]) : (ms(s[n / 2 - 1]) + ms(s[n / 2])) / 2;
        return r;
}

static void json_stats(const char *name, Stats s, const char *tail) {
        printf("\"%s\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f}%s", name, s.median, s.min, s.max, tail);
}

static void json_start(const char *key, const StartResult *v, unsigned n) {
        uint64_t a[MAX_STARTS], c[MAX_STARTS];
        const StartResult *last = &v[n - 1];

        for (unsigned i = 0; i < n; i++) {
                a[i] = v[i].ready_ns;
                c[i] = v[i].cpu_ns;
        }
        printf("  \"%s\": {", key);
        json_stats("ready_ms", stats_ms(a, n), ", ");
        json_stats("cpu_ms", stats_ms(c, n), ", ");
        printf("\"starts\": %u, \"groups\": %u, \"rss_kib\": %" PRIu64 ", \"hwm_kib\": %" PRIu64
               ", \"anon_kib\": %" PRIu64 ", \"fds\": %u, \"inotify_fds\": %u, \"watches\": %u},\n",
               n, last->groups, last->rss_kb, last->hwm_kb, last->anon_kb, last->fds.fds, last->fds.inotify_fds,
               last->fds.watches);
}

static void json_phase(const PhaseResult *p, bool last) {
        printf("    {\"key\": \"%s\", \"expected\": %u, \"op_ms\": %.3f, \"all_ms\": %.3f, \"daemon_cpu_ms\": %.3f, "
               "\"bus_cpu_ms\": %.3f, \"messages\": %u, \"properties_changed\": %u, \"pc_groups\": %u, "
               "\"pc_manager\": %u, \"interfaces_added\": %u, \"interfaces_removed\": %u, \"max_pc_per_object\": %u, "
               "\"objects_with_several_pc\": %u, \"inotify_overflows\": %u, \"writes\": %u, \"skipped\": %u, "
               "\"subscribed\": %s, \"groups_changed\": %u, \"gc_entries\": %u, \"gc_max_per_object\": %u, "
               "\"gc_max_in_message\": %u, \"listener_ms\": %.3f}%s\n",
               p->key, p->expected, ms(p->op_ns), ms(p->all_ns), ms(p->daemon_cpu_ns), ms(p->bus_cpu_ns), p->msgs,
               p->pc_total, p->pc_groups, p->pc_manager, p->added, p->removed, p->max_per_object, p->objects_multi,
               p->overflows, p->writes, p->skipped, p->subscribed ? "true" : "false", p->gc_msgs, p->gc_entries,
               p->gc_max_per_object, p->gc_max_in_msg, ms(p->handle_ns), last ? "" : ",");
}

static void json_usage(const char *name, const Usage *u, const char *tail) {
        printf("\"%s\": {\"cpu_ns\": %" PRIu64 ", \"ticks\": %" PRIu64 ", \"voluntary_ctxt_switches\": %" PRIu64
               ", \"nonvoluntary_ctxt_switches\": %" PRIu64 "}%s",
               name, u->cpu_ns, u->ticks, u->vcsw, u->ivcsw, tail);
}

/* ---- main -------------------------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
        fputs("usage: bench-scale --address=ADDR --root=DIR [--top=N] [--fanout=N] [--starts=K]\n"
              "                   [--empty-root=DIR2] [--idle=S] [--burst=N] [--bus-pid=PID]\n"
              "                   [--phases=start,idle,storm,burst,lists] [--perf=PREFIX] [--daemon-log=FILE]\n"
              "                   [--private=PATH] [--json] -- FREEZERD [ARGS...]\n",
              f);
}

static void parse_phases(const char *s) {
        char *copy = strdup(s), *save = NULL;

        O.ph_start = O.ph_idle = O.ph_storm = O.ph_burst = O.ph_lists = false;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (strcmp(w, "start") == 0)
                        O.ph_start = true;
                else if (strcmp(w, "idle") == 0)
                        O.ph_idle = true;
                else if (strcmp(w, "storm") == 0)
                        O.ph_storm = true;
                else if (strcmp(w, "burst") == 0)
                        O.ph_burst = true;
                else if (strcmp(w, "lists") == 0)
                        O.ph_lists = true;
                else {
                        fprintf(stderr, "bench-scale: unknown phase %s\n", w);
                        exit(2);
                }
        }
        free(copy);
}

int main(int argc, char *argv[]) {
        enum { ARG_ADDRESS = 0x100, ARG_ROOT, ARG_EMPTY_ROOT, ARG_TOP, ARG_FANOUT, ARG_STARTS, ARG_IDLE, ARG_BURST,
               ARG_BUS_PID, ARG_PHASES, ARG_PERF, ARG_DAEMON_LOG, ARG_PRIVATE, ARG_JSON };
        static const struct option options[] = {
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "root", required_argument, NULL, ARG_ROOT },
                { "empty-root", required_argument, NULL, ARG_EMPTY_ROOT },
                { "top", required_argument, NULL, ARG_TOP },
                { "fanout", required_argument, NULL, ARG_FANOUT },
                { "starts", required_argument, NULL, ARG_STARTS },
                { "idle", required_argument, NULL, ARG_IDLE },
                { "burst", required_argument, NULL, ARG_BURST },
                { "bus-pid", required_argument, NULL, ARG_BUS_PID },
                { "phases", required_argument, NULL, ARG_PHASES },
                { "perf", required_argument, NULL, ARG_PERF },
                { "daemon-log", required_argument, NULL, ARG_DAEMON_LOG },
                { "private", required_argument, NULL, ARG_PRIVATE },
                { "json", no_argument, NULL, ARG_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        StartResult empty[MAX_STARTS], full[MAX_STARTS];
        uint64_t version_ns[5], mkdir_ns;
        unsigned made, n_empty = 0, n_full = 0, n_phases = 0;
        PhaseResult phases[10]; /* eight storms, two bursts: see PHASE() */
        StormFloor storm_floor = {};
        IdleResult idle = {};
        ListResult lists = {};
        Daemon d = { .pidfd = -1 };
        freezer *f = NULL;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_ADDRESS: O.address = optarg; break;
                case ARG_ROOT: O.root = optarg; break;
                case ARG_EMPTY_ROOT: O.empty_root = optarg; break;
                case ARG_TOP: O.top = (unsigned) parse_ulong_range(optarg, "--top", 0, 10000); break;
                case ARG_FANOUT: O.fanout = (unsigned) parse_ulong_range(optarg, "--fanout", 0, 10000); break;
                case ARG_STARTS: O.starts = (unsigned) parse_ulong_range(optarg, "--starts", 0, MAX_STARTS); break;
                case ARG_IDLE: O.idle_s = (unsigned) parse_ulong_range(optarg, "--idle", 0, 3600); break;
                case ARG_BURST: O.burst = (unsigned) parse_ulong_range(optarg, "--burst", 0, 100000); break;
                case ARG_BUS_PID: O.bus_pid = (pid_t) parse_ulong_range(optarg, "--bus-pid", 0, INT32_MAX); break;
                case ARG_PHASES: parse_phases(optarg); break;
                case ARG_PERF: O.perf = optarg; break;
                case ARG_DAEMON_LOG: O.daemon_log = optarg; break;
                case ARG_PRIVATE: O.private_path = optarg; break;
                case ARG_JSON: O.json = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        if (!O.address || !O.root || optind >= argc || O.top == 0 || O.starts == 0) {
                usage(stderr);
                return 2;
        }
        O.daemon_argv = argv + optind;
        O.n_daemon_argv = argc - optind;
        burst_per_top = (O.burst + O.top - 1) / O.top;
        n_tree = O.top * (1 + O.fanout);
        n_slots = n_tree + O.top * burst_per_top;
        signal(SIGPIPE, SIG_IGN);

        mkdir_ns = make_tree(&made);
        if (count_groups(O.root) != n_tree)
                die("%s holds %u groups, expected exactly the tree's %u", O.root, count_groups(O.root), n_tree);
        notify_setup();
        atexit(notify_cleanup);

        for (unsigned i = 0; i < 5; i++)
                version_ns[i] = time_version();
        if (O.empty_root && O.ph_start)
                for (; n_empty < O.starts; n_empty++) {
                        Daemon e = daemon_start(O.empty_root);
                        empty[n_empty] = measure_start(&e);
                        daemon_stop(&e);
                }
        for (unsigned i = 0; i < (O.ph_start ? O.starts : 1); i++) {
                if (d.spawned)
                        daemon_stop(&d);
                d = daemon_start(O.root);
                full[n_full++] = measure_start(&d);
                fprintf(stderr, "# start %u: READY after %.1f ms, %s\n", i + 1, ms(full[n_full - 1].ready_ns),
                        d.status);
        }

        if (O.ph_idle || O.ph_storm || O.ph_burst || O.ph_lists) {
                listener_start();
                ping_bus = bench_connect_bus(O.address);
                /* The listener follows GroupsChanged, which is sent only while asked for. */
                subscribe("SubscribeGroups");
                r = O.private_path ? freezer_open_private(&f, O.private_path) : freezer_open_address(&f, O.address);
                if (r < 0)
                        die("freezer_open_%s: %s", O.private_path ? "private" : "address", strerror(-r));
                ping_barrier();
        }
/* Each phase's result, in a table that must hold them all. */
#define PHASE(call)                                                                    \
        do {                                                                           \
                if (n_phases >= sizeof phases / sizeof phases[0])                      \
                        die("bench-scale: more phases than its table holds: " #call); \
                phases[n_phases++] = (call);                                           \
        } while (0)
        if (O.ph_idle)
                idle = phase_idle(d.pid);
        if (O.ph_storm) {
                PHASE(phase_storm(f, d.pid, true, VIA_GROUPS));
                sleep_ns(100 * 1000000ULL);
                PHASE(phase_storm(f, d.pid, false, VIA_GROUPS));
                sleep_ns(100 * 1000000ULL);
                subscribe("UnsubscribeGroups");
                subscribe("SubscribeGroupStates");
                load_group_ids();
                PHASE(phase_storm(f, d.pid, true, VIA_STATES));
                sleep_ns(100 * 1000000ULL);
                PHASE(phase_storm(f, d.pid, false, VIA_STATES));
                sleep_ns(100 * 1000000ULL);
                subscribe("UnsubscribeGroupStates");
                lib_listener_start();
                PHASE(phase_storm(f, d.pid, true, VIA_LIBFREEZER));
                sleep_ns(100 * 1000000ULL);
                PHASE(phase_storm(f, d.pid, false, VIA_LIBFREEZER));
                sleep_ns(100 * 1000000ULL);
                lib_listener_stop();
                pthread_mutex_lock(&L.lock);
                L.by_lib = false;
                pthread_mutex_unlock(&L.lock);
                subscribe("SubscribeGroups");
                subscribe("Subscribe");
                PHASE(phase_storm(f, d.pid, true, VIA_PROPERTIES));
                sleep_ns(100 * 1000000ULL);
                PHASE(phase_storm(f, d.pid, false, VIA_PROPERTIES));
                sleep_ns(100 * 1000000ULL);
                subscribe("Unsubscribe");
                /* Last: the rows above are freezerd's first writes of these groups. */
                storm_floor = phase_storm_floor(d.pid);
        }
        if (O.ph_burst && O.burst > 0) {
                PHASE(phase_burst(d.pid, true));
                sleep_ns(100 * 1000000ULL);
                PHASE(phase_burst(d.pid, false));
        }
        if (O.ph_lists)
                lists = phase_lists(f, d.pid);
        if (f) {
                freezer_close(f);
                sd_bus_flush_close_unref(ping_bus);
                listener_stop();
        }
        daemon_stop(&d);

        if (O.json) {
                printf("{\n  \"top\": %u, \"fanout\": %u, \"groups\": %u, \"mkdir_made\": %u, \"mkdir_ms\": %.3f,\n",
                       O.top, O.fanout, n_tree, made, ms(mkdir_ns));
                printf("  ");
                json_stats("version_exec_ms", stats_ms(version_ns, 5), ",\n");
                if (n_empty)
                        json_start("start_empty", empty, n_empty);
                json_start("start", full, n_full);
                if (O.ph_idle) {
                        printf("  \"idle\": {\"seconds\": %u, \"bus_messages\": %u, ", idle.seconds, idle.msgs);
                        json_usage("before", &idle.before, ", ");
                        json_usage("after", &idle.after, "},\n");
                }
                if (O.ph_lists)
                        printf("  \"lists\": {\"get_managed_objects_ms\": %.3f, \"get_managed_objects_objects\": %zu, "
                               "\"get_managed_objects_daemon_cpu_ms\": %.3f, \"list_groups_ms\": %.3f, "
                               "\"list_groups_n\": %zu, \"list_groups_daemon_cpu_ms\": %.3f},\n",
                               ms(lists.managed_ns), lists.managed_objects, ms(lists.daemon_cpu_managed_ns),
                               ms(lists.list_ns), lists.list_n, ms(lists.daemon_cpu_list_ns));
                if (O.ph_storm) {
                        printf("  \"storm_floor\": {\"rounds\": %d, \"freeze_ms\": [", STORM_FLOOR_ROUNDS);
                        for (unsigned k = 0; k < STORM_FLOOR_ROUNDS; k++)
                                printf("%s%.3f", k ? ", " : "", ms(storm_floor.freeze_ns[k]));
                        printf("], \"thaw_ms\": [");
                        for (unsigned k = 0; k < STORM_FLOOR_ROUNDS; k++)
                                printf("%s%.3f", k ? ", " : "", ms(storm_floor.thaw_ns[k]));
                        printf("]},\n");
                }
                printf("  \"phases\": [\n");
                for (unsigned i = 0; i < n_phases; i++)
                        json_phase(&phases[i], i + 1 == n_phases);
                printf("  ]\n}\n");
        } else {
                Stats s = stats_ms((uint64_t[]) { full[0].ready_ns }, 1);
                printf("groups %u: READY %.1f ms (first start), RSS %" PRIu64 " KiB, fds %u, watches %u\n", n_tree,
                       s.median, full[n_full - 1].rss_kb, full[n_full - 1].fds.fds, full[n_full - 1].fds.watches);
                if (O.ph_idle)
                        printf("idle %us: +%" PRIu64 " voluntary ctxt switches, +%" PRIu64 " ns CPU, %u bus messages\n",
                               idle.seconds, idle.after.vcsw - idle.before.vcsw, idle.after.cpu_ns - idle.before.cpu_ns,
                               idle.msgs);
                if (O.ph_storm)
                        printf("storm floor (the kernel's writes alone): freeze %.1f ms, thaw %.1f ms (first round)\n",
                               ms(storm_floor.freeze_ns[0]), ms(storm_floor.thaw_ns[0]));
                for (unsigned i = 0; i < n_phases; i++)
                        printf("%s: op %.1f ms, all %.1f ms, freezerd CPU %.1f ms, %u PropertiesChanged (max %u/object), "
                               "%u GroupsChanged (%u entries), listener %.1f ms reading them\n",
                               phases[i].key, ms(phases[i].op_ns), ms(phases[i].all_ns), ms(phases[i].daemon_cpu_ns),
                               phases[i].pc_total, phases[i].max_per_object, phases[i].gc_msgs, phases[i].gc_entries,
                               ms(phases[i].handle_ns));
        }
        return 0;
}
