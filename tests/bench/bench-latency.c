/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-latency: how fast freezerd confirms a freeze (issue 6).
 *
 * For each --group=PATH (an API path below freezerd's cgroup root --root=DIR,
 * e.g. an empty group and one holding 21 sleeping processes) and each method
 * of --methods, --rounds rounds of: freeze step, pause, thaw step, pause.
 * The methods run interleaved round by round, and each step is timed on its
 * own:
 *
 *   floor        pwrite() of DIR/PATH/cgroup.freeze from here, then wait
 *                (inotify on DIR/PATH/cgroup.events, armed beforehand, file
 *                re-read after each event; no sleeping, no polling) until the
 *                kernel says "frozen 1" (or 0): the kernel's own time.
 *   signal       the same write, behind freezerd's back, then wait on a bus
 *                connection subscribed (match on the group's object path) to
 *                the group's PropertiesChanged until one carries Frozen=true
 *                (or false): kernel event -> freezerd -> dbus-daemon -> client.
 *   signal-private  the same, the PropertiesChanged on a connection to
 *                freezerd's private socket (--private=PATH) subscribed there:
 *                kernel event -> freezerd -> client, without dbus-daemon.
 *   call         freezer_freeze() / freezer_thaw() through libfreezer, waiting
 *                for the kernel's confirmation (the default): request ->
 *                confirmed reply.
 *   call-private the same on a freezer_open_private() handle (--private).
 *   call-nowait  the same with FREEZER_NO_WAIT: one bus round trip and the
 *                write, no waiting (the floor of a call).
 *   relay        the machine's floor for the shape of "signal", without
 *                freezerd or dbus-daemon: one byte written to a helper
 *                process (in freezerd's place), which passes it to a second
 *                (dbus-daemon's), which passes it back here, over Unix
 *                sockets, each blocked in read() until then; then, untimed,
 *                the same cgroup.freeze write and wait as floor.  What any
 *                daemon behind a broker costs in wake-ups on this machine
 *                (on a VM, each wake-up of an idle vCPU waits for the host).
 *   relay-private  the same through one helper: the shape of
 *                "signal-private".
 *
 * Between steps a pause of --settle-ms (default 15 ms; the kernel holds back
 * a cgroup.events notification that comes less than 10 ms, rounded up to
 * jiffies, after the previous one of the same file, CGROUP_FILE_NOTIFY_MIN_INTV:
 * at HZ=250 the window is 12-16 ms, so some freeze steps fall inside it, and
 * the floor's inotify then waits for the kernel's timer, as a freezer that
 * only follows notifications would; freezerd re-reads such a group, see
 * holdback_watch_external() in daemon/manager.c), during which whatever
 * the step left (late signals, inotify events) is drained, and the state is
 * checked: after a freeze step cgroup.freeze is 1 and cgroup.events says
 * "frozen 1", after a thaw step both are 0.  A violation exits 1.  Then
 * (untimed) Properties.GetAll of the group until freezerd's Freeze and Frozen
 * are the kernel's: on a busy machine freezerd can lag by more than the pause,
 * and it would then see two steps' changes as one (and rightly send no signal
 * for a state it never saw change).
 *
 * usage: bench-latency --address=ADDR --root=DIR --group=PATH[:METHODS] [--group=...]
 *                      [--private=PATH] [--rounds=N] [--settle-ms=MS] [--json]
 * METHODS is a '+'-separated list (default floor+signal+call+call-nowait+
 * relay+relay-private, and signal-private+call-private with --private).  Only the connection a signal
 * method waits on is subscribed during its steps; none during the others.
 * Output: JSON (--json) or one text line per method and step: median, p90,
 * p99, min, max in µs.  Exit status 0, 1 on a failure, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "freezer.h"

#include "bench-bus.h"
#include "bench-util.h"

#define BUS_NAME "org.freezerd.Freezer1"
#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define STEP_DEADLINE_NS (10ULL * 1000000000ULL)
#define MAX_GROUPS 8

enum {
        M_FLOOR,
        M_SIGNAL,
        M_SIGNAL_PRIVATE,
        M_CALL,
        M_CALL_PRIVATE,
        M_CALL_NOWAIT,
        M_RELAY,
        M_RELAY_PRIVATE,
        _M_MAX
};
static const char *const method_key[_M_MAX] = { "floor",        "signal",      "signal-private", "call",
                                                "call-private", "call-nowait", "relay",          "relay-private" };

typedef struct Group {
        const char *path;   /* API path */
        char *dir;          /* DIR/path */
        char *object;       /* its D-Bus object */
        bool methods[_M_MAX];
        bool default_methods; /* no METHODS given: the default set (see usage()) */
        int freeze_fd, events_fd, wd;
        unsigned procs;
        uint64_t *ns[_M_MAX][2]; /* [method][0 freeze, 1 thaw] */
} Group;

static struct {
        const char *address, *root;
        unsigned rounds, settle_ms;
        bool json;
        Group groups[MAX_GROUPS];
        unsigned n_groups;
        int inotify_fd;
        const char *private_path; /* freezerd's private socket (--private) */
        sd_bus *sig;   /* the subscribed connection */
        sd_bus *psig;  /* the same on the private socket (or NULL) */
        freezer *f;    /* libfreezer */
        freezer *fp;   /* libfreezer on the private socket (or NULL) */
        int relay_fd;  /* to and from the relay's first helper (-1: no relay) */
        int relay_back_fd; /* from its second helper */
} B = {
        .rounds = 1000,
        .settle_ms = 15,
        .inotify_fd = -1,
        .relay_fd = -1,
        .relay_back_fd = -1,
};

/* ---- cgroup files ------------------------------------------------------------------------------------------------ */

static int events_frozen(Group *g) {
        char buf[256];
        ssize_t n = pread(g->events_fd, buf, sizeof buf - 1, 0);

        if (n < 0)
                die("cannot read %s/cgroup.events: %m", g->dir);
        buf[n] = 0;
        char *p = strstr(buf, "frozen ");
        if (!p)
                die("%s/cgroup.events has no \"frozen\" line", g->dir);
        return p[7] == '1';
}

static int read_flag(Group *g) {
        char buf[16];
        ssize_t n = pread(g->freeze_fd, buf, sizeof buf - 1, 0);

        if (n <= 0)
                die("cannot read %s/cgroup.freeze: %m", g->dir);
        return buf[0] == '1';
}

static void write_flag(Group *g, bool v) {
        if (pwrite(g->freeze_fd, v ? "1" : "0", 1, 0) != 1)
                die("cannot write %s/cgroup.freeze: %m", g->dir);
}

static void drain_inotify(void) {
        char buf[4096];

        while (read(B.inotify_fd, buf, sizeof buf) > 0)
                ;
}

/* ---- waiting ----------------------------------------------------------------------------------------------------- */

/* Until cgroup.events says frozen == want (inotify; no polling). */
static void wait_kernel(Group *g, int want) {
        uint64_t deadline = now_ns() + STEP_DEADLINE_NS;

        while (events_frozen(g) != want) {
                struct pollfd p = { .fd = B.inotify_fd, .events = POLLIN };
                uint64_t now = now_ns();
                if (now >= deadline)
                        die("%s did not report frozen %d in time", g->path, want);
                if (poll(&p, 1, (int) ((deadline - now) / 1000000) + 1) < 0 && errno != EINTR)
                        die("poll: %m");
                drain_inotify();
        }
}

/* Does this PropertiesChanged of g's object carry Frozen == want? */
static bool signal_says_frozen(sd_bus_message *m, Group *g, int want) {
        int r;

        if (!sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged") ||
            strcmp(sd_bus_message_get_path(m) ?: "", g->object) != 0)
                return false;
        r = sd_bus_message_skip(m, "s");
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;
                if (sd_bus_message_read(m, "s", &name) < 0)
                        return false;
                if (strcmp(name, "Frozen") == 0) {
                        int v;
                        if (sd_bus_message_read(m, "v", "b", &v) < 0)
                                return false;
                        return !!v == !!want;
                }
                if (sd_bus_message_skip(m, "v") < 0 || sd_bus_message_exit_container(m) < 0)
                        return false;
        }
        return false;
}

/* What freezerd says about g now (Properties.GetAll): its Freeze and Frozen (-1
 * if unknown); with buf, also a description for a failure message. */
static void daemon_view(Group *g, int *ret_freeze, int *ret_frozen, char *buf, size_t size) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *state = "?";
        int freeze = -1, frozen = -1, r;

        r = sd_bus_call_method(B.sig, BUS_NAME, g->object, "org.freedesktop.DBus.Properties", "GetAll", &error, &reply,
                               "s", "org.freezerd.Freezer1.Group");
        if (r < 0) {
                if (buf)
                        snprintf(buf, size, "GetAll failed: %s", error.message ?: strerror(-r));
                sd_bus_error_free(&error);
                *ret_freeze = *ret_frozen = -1;
                return;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r > 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name;
                if (sd_bus_message_read(reply, "s", &name) < 0)
                        break;
                if (strcmp(name, "FreezerState") == 0)
                        r = sd_bus_message_read(reply, "v", "s", &state);
                else if (strcmp(name, "Freeze") == 0)
                        r = sd_bus_message_read(reply, "v", "b", &freeze);
                else if (strcmp(name, "Frozen") == 0)
                        r = sd_bus_message_read(reply, "v", "b", &frozen);
                else
                        r = sd_bus_message_skip(reply, "v");
                if (r < 0 || sd_bus_message_exit_container(reply) < 0)
                        break;
        }
        if (buf)
                snprintf(buf, size, "freezerd says FreezerState=%s Freeze=%d Frozen=%d", state, freeze, frozen);
        *ret_freeze = freeze < 0 ? -1 : !!freeze;
        *ret_frozen = frozen < 0 ? -1 : !!frozen;
        sd_bus_message_unref(reply);
}

/* Untimed, after each step: wait until freezerd's view (Freeze, Frozen) is the
 * kernel's, so that a step never starts while freezerd still digests the one
 * before (on a busy machine it can lag by more than the pause, and then it
 * would see the previous step's state change and this one's as one). */
static void sync_daemon(Group *g) {
        uint64_t deadline = now_ns() + STEP_DEADLINE_NS;
        char view[256];

        for (;;) {
                int freeze, frozen, kflag = read_flag(g), kfrozen = events_frozen(g);
                daemon_view(g, &freeze, &frozen, view, sizeof view);
                if (freeze == kflag && frozen == kfrozen)
                        return;
                if (now_ns() >= deadline)
                        die("freezerd did not catch up with %s: the kernel says cgroup.freeze %d, frozen %d; %s", g->path,
                            kflag, kfrozen, view);
                struct timespec ts = { .tv_nsec = 1000000 };
                nanosleep(&ts, NULL);
        }
}

/* Until a PropertiesChanged of g on bus says Frozen == want; returns the time it was parsed. */
static uint64_t wait_signal(sd_bus *bus, Group *g, int want) {
        uint64_t deadline = now_ns() + STEP_DEADLINE_NS;
        unsigned seen = 0;

        for (;;) {
                sd_bus_message *m = NULL;
                int r = sd_bus_process(bus, &m);
                if (r < 0)
                        die("sd_bus_process: %s", strerror(-r));
                if (m) {
                        bool hit = signal_says_frozen(m, g, want);
                        seen++;
                        uint64_t t = now_ns();
                        sd_bus_message_unref(m);
                        if (hit)
                                return t;
                }
                if (r > 0)
                        continue;
                uint64_t now = now_ns();
                if (now >= deadline) {
                        char view[256];
                        int freeze, frozen;
                        daemon_view(g, &freeze, &frozen, view, sizeof view);
                        die("no PropertiesChanged with Frozen=%s from %s within %llu s (%u other messages meanwhile); "
                            "the kernel says cgroup.freeze %d, frozen %d; %s",
                            want ? "true" : "false", g->path, STEP_DEADLINE_NS / 1000000000ULL, seen, read_flag(g),
                            events_frozen(g), view);
                }
                r = sd_bus_wait(bus, (deadline - now) / 1000);
                if (r < 0 && r != -EINTR)
                        die("sd_bus_wait: %s", strerror(-r));
        }
}

static void drain_bus(sd_bus *bus) {
        int r;

        while (bus && (r = sd_bus_process(bus, NULL)) != 0)
                if (r < 0)
                        die("sd_bus_process: %s", strerror(-r));
}

/* Drop what the buses and inotify have queued, without waiting. */
static void drain(void) {
        drain_bus(B.sig);
        drain_bus(B.psig);
        drain_inotify();
}

/* Pause for settle_ms, dropping whatever the bus and inotify bring meanwhile. */
static void settle(void) {
        uint64_t deadline = now_ns() + (uint64_t) B.settle_ms * 1000000ULL;

        for (;;) {
                drain();
                uint64_t now = now_ns();
                if (now >= deadline)
                        return;
                /* Both connections, without favouring either: a short wait at a time. */
                uint64_t w = (deadline - now) / 1000;
                int r = sd_bus_wait(B.sig, B.psig && w > 1000 ? 1000 : w);
                if (r < 0 && r != -EINTR)
                        die("sd_bus_wait: %s", strerror(-r));
        }
}

static void verify(Group *g, int want, const char *method, unsigned round) {
        if (read_flag(g) != want || events_frozen(g) != want)
                die("%s, %s round %u: after the %s step cgroup.freeze is %d and cgroup.events says frozen %d",
                    g->path, method, round, want ? "freeze" : "thaw", read_flag(g), events_frozen(g));
        sync_daemon(g);
        drain();
}

/* ---- the relay (the machine's wake-up floor) ---------------------------------------------------------------------- */

/* A helper: each byte read from `in` goes on to `next`, or, for RELAY_BACK,
 * back to `back`; ends at end of file (our end closed) or with us. */
#define RELAY_ON 'n'
#define RELAY_BACK 'b'

_Noreturn static void relay_helper(int in, int next, int back) {
        char c;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (;;) {
                ssize_t n = read(in, &c, 1);
                if (n == 0)
                        _exit(0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(1);
                }
                int to = c == RELAY_ON && next >= 0 ? next : back;
                if (write(to, &c, 1) != 1)
                        _exit(1);
        }
}

/* Forks a helper reading in, passing on to next, answering on back (see
 * relay_helper()), with every other fd of fds closed in it: each socket's
 * last holder of the other end must be the one it talks to, for the end of
 * file that ends it. */
static void relay_fork(int in, int next, int back, const int *fds, size_t n_fds) {
        pid_t pid = fork();

        if (pid < 0)
                die("fork: %m");
        if (pid > 0)
                return;
        for (size_t i = 0; i < n_fds; i++)
                if (fds[i] != in && fds[i] != next && fds[i] != back)
                        close(fds[i]);
        relay_helper(in, next, back);
}

/* The first helper reads what we write to relay_fd and answers RELAY_BACK
 * bytes on it (relay-private); RELAY_ON bytes go on to the second, which
 * answers on relay_back_fd (relay).  All Unix stream sockets, as a D-Bus
 * connection is. */
static void relay_start(void) {
        int first[2], second[2], back[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, first) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, second) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, back) < 0)
                die("socketpair: %m");
        const int fds[] = { first[0], first[1], second[0], second[1], back[0], back[1] };
        fflush(NULL);
        relay_fork(first[1], second[0], first[1], fds, 6);
        relay_fork(second[1], -1, back[1], fds, 6);
        close(first[1]);
        close(second[0]);
        close(second[1]);
        close(back[1]);
        B.relay_fd = first[0];
        B.relay_back_fd = back[0];
}

/* Sends one byte through the relay; returns when it is back. */
static void relay_round(bool through_second) {
        char c = through_second ? RELAY_ON : RELAY_BACK;
        struct pollfd p = { .fd = through_second ? B.relay_back_fd : B.relay_fd, .events = POLLIN };

        if (write(B.relay_fd, &c, 1) != 1)
                die("relay write: %m");
        for (;;) {
                int n = poll(&p, 1, (int) (STEP_DEADLINE_NS / 1000000));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        die("poll: %m");
                if (n == 0)
                        die("the relay did not answer in time");
                break;
        }
        if (read(p.fd, &c, 1) != 1)
                die("relay read: %m");
}

/* ---- methods ------------------------------------------------------------------------------------------------------ */

/* Per-object PropertiesChanged are sent only while a client is subscribed.
 * Each signal method runs with its own connection subscribed and the other
 * not (a direct connection has no match rules: freezerd sends it what it
 * subscribed to), and the call methods with neither: each is measured as its
 * users would run it, without work for a listener it does not have. */
static void subscribe(sd_bus *bus, bool *current, bool want) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!bus || *current == want)
                return;
        r = sd_bus_call_method(bus, BUS_NAME, "/org/freezerd/Freezer1", "org.freezerd.Freezer1.Manager",
                               want ? "Subscribe" : "Unsubscribe", &error, NULL, "");
        if (r < 0)
                die("%s: %s", want ? "Subscribe" : "Unsubscribe", error.message ?: strerror(-r));
        sd_bus_error_free(&error);
        *current = want;
}

static void subscribe_for(unsigned m) {
        static bool bus_subscribed, private_subscribed;

        subscribe(B.sig, &bus_subscribed, m == M_SIGNAL);
        subscribe(B.psig, &private_subscribed, m == M_SIGNAL_PRIVATE);
        drain();
}

static uint64_t step(Group *g, unsigned m, int freeze) {
        uint64_t t0, t1;
        int r;

        drain_inotify();
        switch (m) {
        case M_FLOOR:
                t0 = now_ns();
                write_flag(g, freeze);
                wait_kernel(g, freeze);
                t1 = now_ns();
                break;
        case M_SIGNAL:
        case M_SIGNAL_PRIVATE:
                t0 = now_ns();
                write_flag(g, freeze);
                t1 = wait_signal(m == M_SIGNAL ? B.sig : B.psig, g, freeze);
                break;
        case M_RELAY:
        case M_RELAY_PRIVATE:
                t0 = now_ns();
                relay_round(m == M_RELAY);
                t1 = now_ns();
                write_flag(g, freeze); /* untimed: the next step starts from the same state */
                wait_kernel(g, freeze);
                break;
        case M_CALL:
        case M_CALL_PRIVATE:
        case M_CALL_NOWAIT: {
                uint64_t flags = m == M_CALL_NOWAIT ? FREEZER_NO_WAIT : 0;
                freezer *f = m == M_CALL_PRIVATE ? B.fp : B.f;
                t0 = now_ns();
                r = freeze ? freezer_freeze(f, g->path, 0, flags) : freezer_thaw(f, g->path, 0, flags);
                t1 = now_ns();
                if (r < 0)
                        die("%s %s failed: %s: %s", freeze ? "Freeze" : "Thaw", g->path,
                            freezer_last_error_name(f) ?: strerror(-r), freezer_last_error_message(f) ?: "");
                if (m == M_CALL_NOWAIT)
                        wait_kernel(g, freeze); /* untimed: the next step starts from a settled state */
                break;
        }
        default:
                abort();
        }
        return t1 - t0;
}

/* ---- statistics --------------------------------------------------------------------------------------------------- */

typedef struct Stats {
        double median, p90, p99, min, max, mean; /* µs */
} Stats;

/* Nearest-rank percentile of sorted v. */
static double pct(const uint64_t *s, unsigned n, double p) {
        unsigned k = (unsigned) (p / 100.0 * n + 0.999999);
        if (k < 1)
                k = 1;
        if (k > n)
                k = n;
        return (double) s[k - 1] / 1e3;
}

static Stats stats(const uint64_t *v, unsigned n) {
        uint64_t *s = malloc(n * sizeof *s);
        double sum = 0;
        Stats r;

        if (!s)
                die("out of memory");
        memcpy(s, v, n * sizeof *s);
        qsort(s, n, sizeof *s, cmp_u64);
        for (unsigned i = 0; i < n; i++)
                sum += (double) s[i];
        r = (Stats) {
                .median = n % 2 ? (double) s[n / 2] / 1e3 : ((double) s[n / 2 - 1] + (double) s[n / 2]) / 2e3,
                .p90 = pct(s, n, 90),
                .p99 = pct(s, n, 99),
                .min = (double) s[0] / 1e3,
                .max = (double) s[n - 1] / 1e3,
                .mean = sum / n / 1e3,
        };
        free(s);
        return r;
}

/* ---- setup --------------------------------------------------------------------------------------------------------- */

static unsigned count_procs(const char *dir) {
        char p[PATH_MAX], buf[65536];
        unsigned n = 0;
        int fd;
        ssize_t r;

        snprintf(p, sizeof p, "%s/cgroup.procs", dir);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die("cannot open %s: %m", p);
        while ((r = read(fd, buf, sizeof buf)) > 0)
                for (ssize_t i = 0; i < r; i++)
                        n += buf[i] == '\n';
        close(fd);
        return n;
}

static void setup_group(Group *g) {
        char p[PATH_MAX];
        int r;

        if (asprintf(&g->dir, "%s%s", B.root, g->path) < 0)
                die("out of memory");
        snprintf(p, sizeof p, "%s/cgroup.freeze", g->dir);
        g->freeze_fd = open(p, O_RDWR | O_CLOEXEC);
        if (g->freeze_fd < 0)
                die("cannot open %s: %m", p);
        snprintf(p, sizeof p, "%s/cgroup.events", g->dir);
        g->events_fd = open(p, O_RDONLY | O_CLOEXEC);
        if (g->events_fd < 0)
                die("cannot open %s: %m", p);
        g->wd = inotify_add_watch(B.inotify_fd, p, IN_MODIFY);
        if (g->wd < 0)
                die("inotify_add_watch %s: %m", p);
        if (read_flag(g) || events_frozen(g))
                die("%s must start thawed", g->path);
        g->procs = count_procs(g->dir);
        r = sd_bus_path_encode(GROUP_PREFIX, g->path, &g->object);
        if (r < 0)
                die("sd_bus_path_encode: %s", strerror(-r));
        if (g->methods[M_SIGNAL]) {
                char *match;
                if (asprintf(&match,
                             "type='signal',sender='" BUS_NAME "',path='%s',interface='org.freedesktop.DBus.Properties',"
                             "member='PropertiesChanged',arg0='org.freezerd.Freezer1.Group'",
                             g->object) < 0)
                        die("out of memory");
                r = sd_bus_add_match(B.sig, NULL, match, NULL, NULL);
                if (r < 0)
                        die("AddMatch %s: %s", match, strerror(-r));
                free(match);
        }
        for (unsigned m = 0; m < _M_MAX; m++)
                if (g->methods[m])
                        for (int s = 0; s < 2; s++)
                                if (!(g->ns[m][s] = calloc(B.rounds, sizeof(uint64_t))))
                                        die("out of memory");
}

static void parse_group(const char *arg) {
        Group *g;
        const char *colon = strchr(arg, ':');

        if (B.n_groups >= MAX_GROUPS)
                die("at most %d groups", MAX_GROUPS);
        g = &B.groups[B.n_groups++];
        *g = (Group) { .freeze_fd = -1, .events_fd = -1 };
        g->path = colon ? strndup(arg, (size_t) (colon - arg)) : arg;
        if (!g->path || g->path[0] != '/' || strcmp(g->path, "/") == 0) {
                fprintf(stderr, "bench-latency: bad --group=%s\n", arg);
                exit(2);
        }
        if (!colon) {
                for (unsigned m = 0; m < _M_MAX; m++)
                        g->methods[m] = true;
                g->default_methods = true;
                return;
        }
        char *copy = strdup(colon + 1), *save = NULL;
        for (char *w = strtok_r(copy, "+", &save); w; w = strtok_r(NULL, "+", &save)) {
                unsigned m;
                for (m = 0; m < _M_MAX && strcmp(w, method_key[m]) != 0; m++)
                        ;
                if (m == _M_MAX) {
                        fprintf(stderr, "bench-latency: unknown method %s\n", w);
                        exit(2);
                }
                g->methods[m] = true;
        }
        free(copy);
}

static void usage(FILE *f) {
        fputs("usage: bench-latency --address=ADDR --root=DIR --group=PATH[:METHODS] [--group=...]\n"
              "                     [--private=PATH] [--rounds=N] [--settle-ms=MS] [--json]\n"
              "METHODS: '+'-separated, of floor, signal, signal-private, call, call-private,\n"
              "call-nowait, relay, relay-private (default: all; signal-private and\n"
              "call-private need --private)\n",
              f);
}

int main(int argc, char *argv[]) {
        enum { ARG_ADDRESS = 0x100, ARG_ROOT, ARG_GROUP, ARG_PRIVATE, ARG_ROUNDS, ARG_SETTLE, ARG_JSON };
        static const struct option options[] = {
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "root", required_argument, NULL, ARG_ROOT },
                { "group", required_argument, NULL, ARG_GROUP },
                { "private", required_argument, NULL, ARG_PRIVATE },
                { "rounds", required_argument, NULL, ARG_ROUNDS },
                { "settle-ms", required_argument, NULL, ARG_SETTLE },
                { "json", no_argument, NULL, ARG_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_ADDRESS: B.address = optarg; break;
                case ARG_ROOT: B.root = optarg; break;
                case ARG_GROUP: parse_group(optarg); break;
                case ARG_PRIVATE: B.private_path = optarg; break;
                case ARG_ROUNDS: B.rounds = (unsigned) parse_ulong(optarg, "--rounds", 1000000); break;
                case ARG_SETTLE: B.settle_ms = (unsigned) parse_ulong(optarg, "--settle-ms", 10000); break;
                case ARG_JSON: B.json = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        if (!B.address || !B.root || B.n_groups == 0 || optind < argc) {
                usage(stderr);
                return 2;
        }

        B.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (B.inotify_fd < 0)
                die("inotify_init1: %m");
        B.sig = bench_connect_bus(B.address);
        r = freezer_open_address(&B.f, B.address);
        if (r < 0)
                die("freezer_open_address: %s", strerror(-r));
        for (unsigned i = 0; i < B.n_groups; i++) {
                Group *g = &B.groups[i];
                if (B.private_path || !(g->methods[M_SIGNAL_PRIVATE] || g->methods[M_CALL_PRIVATE]))
                        continue;
                if (!g->default_methods)
                        die("%s: signal-private and call-private need --private=PATH", g->path);
                g->methods[M_SIGNAL_PRIVATE] = g->methods[M_CALL_PRIVATE] = false;
        }
        if (B.private_path) {
                B.psig = bench_connect_private(B.private_path);
                r = freezer_open_private(&B.fp, B.private_path);
                if (r < 0)
                        die("freezer_open_private %s: %s", B.private_path, strerror(-r));
        }
        for (unsigned i = 0; i < B.n_groups; i++) {
                setup_group(&B.groups[i]);
                if (B.relay_fd < 0 && (B.groups[i].methods[M_RELAY] || B.groups[i].methods[M_RELAY_PRIVATE]))
                        relay_start();
        }

        /* One warm-up round of everything, then the timed ones, interleaved. */
        for (unsigned round = 0; round <= B.rounds; round++)
                for (unsigned i = 0; i < B.n_groups; i++) {
                        Group *g = &B.groups[i];
                        for (unsigned m = 0; m < _M_MAX; m++) {
                                if (!g->methods[m])
                                        continue;
                                subscribe_for(m);
                                uint64_t tf = step(g, m, 1);
                                settle();
                                verify(g, 1, method_key[m], round);
                                uint64_t tt = step(g, m, 0);
                                settle();
                                verify(g, 0, method_key[m], round);
                                if (round > 0) {
                                        g->ns[m][0][round - 1] = tf;
                                        g->ns[m][1][round - 1] = tt;
                                }
                        }
                }

        if (B.json) {
                printf("{\n  \"rounds\": %u,\n  \"settle_ms\": %u,\n  \"results\": [\n", B.rounds, B.settle_ms);
                bool first = true;
                for (unsigned i = 0; i < B.n_groups; i++) {
                        Group *g = &B.groups[i];
                        for (unsigned m = 0; m < _M_MAX; m++) {
                                if (!g->methods[m])
                                        continue;
                                for (int s = 0; s < 2; s++) {
                                        Stats st = stats(g->ns[m][s], B.rounds);
                                        printf("%s    {\"group\": \"%s\", \"procs\": %u, \"method\": \"%s\", "
                                               "\"step\": \"%s\", \"median_us\": %.1f, \"p90_us\": %.1f, "
                                               "\"p99_us\": %.1f, \"min_us\": %.1f, \"max_us\": %.1f, \"mean_us\": %.1f}",
                                               first ? "" : ",\n", g->path, g->procs, method_key[m],
                                               s ? "thaw" : "freeze", st.median, st.p90, st.p99, st.min, st.max,
                                               st.mean);
                                        first = false;
                                }
                        }
                }
                printf("\n  ]\n}\n");
        } else
                for (unsigned i = 0; i < B.n_groups; i++) {
                        Group *g = &B.groups[i];
                        for (unsigned m = 0; m < _M_MAX; m++)
                                for (int s = 0; s < 2 && g->methods[m]; s++) {
                                        Stats st = stats(g->ns[m][s], B.rounds);
                                        printf("%s (%u procs) %-14s %-6s median %8.1f  p90 %8.1f  p99 %8.1f  "
                                               "min %8.1f  max %9.1f µs\n",
                                               g->path, g->procs, method_key[m], s ? "thaw" : "freeze", st.median,
                                               st.p90, st.p99, st.min, st.max);
                                }
                }
        freezer_close(B.f);
        freezer_close(B.fp);
        sd_bus_flush_close_unref(B.sig);
        sd_bus_flush_close_unref(B.psig);
        if (B.relay_fd >= 0) { /* the helpers read end of file and exit */
                close(B.relay_fd);
                close(B.relay_back_fd);
                while (wait(NULL) > 0 || errno == EINTR)
                        ;
        }
        return 0;
}
