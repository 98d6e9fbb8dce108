/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "bus-event.h"
#include "cgroup-util.h"
#include "config-build.h"
#include "config.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "private-bus.h"

#define BUS_NAME "org.freezerd.Freezer1"
#define EXIT_USAGE 2

typedef enum BusKind {
        BUS_SYSTEM,
        BUS_USER,
        BUS_ADDRESS,
} BusKind;

static BusKind arg_bus = BUS_SYSTEM;
static const char *arg_address;
static const char *arg_cgroup_root;
static const char *arg_config = FREEZERD_CONFIG_PATH;
static const char *arg_runtime_dir = "/run/freezerd";
static const char *arg_state_dir = "/var/lib/freezerd";
/* Given on the command line: --user leaves them alone (see user_defaults()). */
static bool arg_config_set, arg_runtime_dir_set, arg_state_dir_set;

typedef struct Daemon {
        struct event_base *base;
        sd_bus *bus;
        BusEvent *bus_event;
        PrivateBus *private_bus;
        Manager *manager;
        const char *config_cgroup_root; /* the configuration's cgroup_root at start (run()'s config) */
        int signal_fd;
        struct event *signal_event;
        bool exit;
} Daemon;

/* The default paths are the build's (its prefix, sysconfdir...): each on a
 * line of its own, lest one push its line past 80 columns (and freezerd.8's,
 * made of this text). */
static void help(void) {
        printf("Usage: freezerd [OPTIONS]\n"
               "\n"
               "Freeze manager for Linux cgroup v2: tracks cgroup subtrees, freezes and thaws\n"
               "them through cgroup.freeze, follows the kernel's cgroup.events notifications and\n"
               "publishes the result on D-Bus as " BUS_NAME ".\n"
               "\n"
               "Options:\n"
               "  --system              Connect to the system bus (default)\n"
               "  --user                Connect to the user's session bus; the defaults of\n"
               "                        --config, --runtime-dir and --state-dir are then\n"
               "                        the user's (see below)\n"
               "  --address=ADDR        Connect to the bus at ADDR (e.g. unix:path=/run/x.sock);\n"
               "                        --system, --user and --address= exclude each other\n"
               "  --cgroup-root=DIR     Manage the cgroups below DIR, a directory on the cgroup2\n"
               "                        mount (default: the cgroup2 mount itself, found in\n"
               "                        /proc/self/mountinfo); API paths are relative to it\n"
               "  --config=FILE         Configuration file, by default\n"
               "                        %s;\n"
               "                        the default may be missing (defaults), a FILE\n"
               "                        given must exist\n"
               "  --runtime-dir=DIR     Directory for runtime state, by default\n"
               "                        %s;\n"
               "                        holds the private socket DIR/private (see below)\n"
               "  --state-dir=DIR       Directory for persistent state, by default\n"
               "                        %s\n"
               "  --version             Show the version and exit\n"
               "  -h, --help            Show this help and exit\n"
               "\n"
               "The private socket: root (and freezerd's own user, when it runs as one) may\n"
               "also call the API over DIR/private (mode 0600), a direct D-Bus connection to\n"
               "freezerd that skips the bus daemon, as freezectl does when run as root.  A\n"
               "connection there gets signals once it calls Subscribe(), SubscribeGroups() or\n"
               "SubscribeGroupStates(); its pressure triggers end with it, and so do the\n"
               "subtrees tracked for its transient lookups (LookupGroup() with TRANSIENT).\n"
               "\n"
               "Tracking: a call that names a group outside the tracked subtrees (GetGroup,\n"
               "Freeze...) tracks its subtree for good, kept in STATE_DIR/tracked.json until\n"
               "Untrack(); LookupGroup() with TRANSIENT tracks it only while its caller stays\n"
               "on the bus (or keeps its private connection), never in tracked.json.\n"
               "\n"
               "User directories: with --user, as for systemd --user (a user running freezerd\n"
               "over a subtree delegated to it), --config defaults to\n"
               "$XDG_CONFIG_HOME/freezerd/freezerd.json (~/.config/freezerd/freezerd.json),\n"
               "--runtime-dir to $XDG_RUNTIME_DIR/freezerd, --state-dir to\n"
               "$XDG_STATE_HOME/freezerd (~/.local/state/freezerd).  Without $XDG_RUNTIME_DIR,\n"
               "--runtime-dir must be given.\n"
               "\n"
               "Configuration: a JSON object in a regular file; a missing file means\n"
               "defaults, but for one given with --config=. An unknown key, a wrong type or\n"
               "bad JSON stops the start with FILE:LINE: message, another kind of file (a\n"
               "FIFO) or a --config= FILE that does not exist with FILE: message; on\n"
               "SIGHUP it is logged and the running configuration stays. Keys:\n"
               "  cgroup_root           as --cgroup-root, which wins; read at start only\n"
               "  track                 the groups to follow, relative to the root\n"
               "                        (default [\"/\"]: everything); one that does not\n"
               "                        exist yet is tracked once it is made\n"
               "  default_timeout_usec  how long Freeze, Thaw and batches wait for the\n"
               "                        kernel when the call says 0 (default 10000000)\n"
               "  realtime_writes       true (default): a call whose writes freeze or thaw\n"
               "                        1,024 groups or more writes from a SCHED_FIFO 1\n"
               "                        thread (it ends 100 ms after the last such call),\n"
               "                        so that the kernel's notification work cannot\n"
               "                        come between the writes and the reply; needs\n"
               "                        CAP_SYS_NICE or an RLIMIT_RTPRIO of 1 (else it is\n"
               "                        logged once, and the main loop writes until a\n"
               "                        SIGHUP, after which it is tried again); false:\n"
               "                        the main loop writes\n"
               "\n"
               "Limits: each group followed holds two inotify watches (its directory and its\n"
               "cgroup.freeze; fs.inotify.max_user_watches); a group that can change on its\n"
               "own (not below an empty group, whose state is deduced) also holds one fd (its\n"
               "cgroup.events; RLIMIT_NOFILE, the unit sets LimitNOFILE=524288) and one epoll\n"
               "item (fs.epoll.max_user_watches).  A group that finds no fd or watch when it\n"
               "is found is not followed: it is logged, and calls naming it fail with\n"
               "LimitsExceeded; one whose file later cannot be opened or polled is logged and\n"
               "re-read every 200 ms until it can.\n"
               "\n"
               "Signals: SIGTERM and SIGINT exit, leaving every cgroup as the kernel has it:\n"
               "waiting calls fail with Cancelled, calls not yet read are refused (nothing\n"
               "done); SIGHUP reloads the configuration.\n"
               "\n"
               "Environment: FREEZERD_LOG_LEVEL=debug|info|notice|warning|err.  Log lines\n"
               "go to stderr, with a <N> priority prefix when $JOURNAL_STREAM names it (the\n"
               "journal, as systemd sets it for a service).  Elsewhere each line starts with\n"
               "its level (emerg, alert, crit, error, warning, notice, info, debug) and \": \",\n"
               "and, except on a terminal, an RFC 3339 local time with microseconds and a\n"
               "space before it: \"2026-12-06T21:03:04.123456+01:00 warning: MESSAGE\".\n"
               "\n"
               "Exit status:\n"
               "  0  exited on SIGTERM or SIGINT, or --help, --version\n"
               "  1  failure: it could not start (e.g. another freezerd runs with the same\n"
               "     runtime or state directory, or owns the bus name), lost the bus, or\n"
               "     its cgroup root was removed\n"
               "  2  usage error\n"
               "\n"
               "See also: freezectl(1), busctl(1); the API is in org.freezerd.Freezer1.xml.\n",
               FREEZERD_CONFIG_PATH, "/run/freezerd", "/var/lib/freezerd");
}

/* One line, "; see freezerd --help." after it; main() then exits EXIT_USAGE. */
_printf_(1, 2)
static int usage_error(const char *fmt, ...) {
        char buf[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        log_error("%s; see freezerd --help.", buf);
        return -EINVAL;
}

/* An XDG base directory from the environment: set and absolute (the
 * specification says to ignore a relative one), else NULL. */
static const char *xdg_dir(const char *name) {
        const char *e = getenv(name);

        return e && e[0] == '/' ? e : NULL;
}

/* dir/suffix, or $HOME/home_suffix/suffix when dir is NULL (and home_suffix
 * is not), in *ret, which lives as long as the process; -ENOENT without
 * either, -ENOMEM. */
static int user_path(const char *dir, const char *home_suffix, const char *suffix, const char **ret) {
        const char *home = xdg_dir("HOME");
        char *p;

        if (dir) {
                if (asprintf(&p, "%s/%s", dir, suffix) < 0)
                        return -ENOMEM;
        } else if (home && home_suffix) {
                if (asprintf(&p, "%s/%s/%s", home, home_suffix, suffix) < 0)
                        return -ENOMEM;
        } else
                return -ENOENT;
        *ret = p;
        return 0;
}

/* With --user, the directories a user's services have (systemd --user's,
 * from the XDG base directory specification), for those not given: a user's
 * freezerd neither reads the system's configuration (its "track" names the
 * system's groups) nor fails at once on /run/freezerd. */
static int user_defaults(void) {
        static const struct {
                const char **arg;
                const bool *given;
                const char *what, *var, *home_suffix, *suffix, *option;
        } defaults[] = {
                { &arg_config, &arg_config_set, "configuration file", "XDG_CONFIG_HOME", ".config",
                  "freezerd/freezerd.json", "--config=FILE" },
                { &arg_runtime_dir, &arg_runtime_dir_set, "runtime directory", "XDG_RUNTIME_DIR", NULL, "freezerd",
                  "--runtime-dir=DIR" },
                { &arg_state_dir, &arg_state_dir_set, "state directory", "XDG_STATE_HOME", ".local/state",
                  "freezerd", "--state-dir=DIR" },
        };

        for (size_t i = 0; i < ELEMENTSOF(defaults); i++) {
                const char *p;
                int r;

                if (*defaults[i].given)
                        continue;
                r = user_path(xdg_dir(defaults[i].var), defaults[i].home_suffix, defaults[i].suffix, &p);
                if (r == -ENOMEM)
                        return log_error_errno(ENOMEM, "Out of memory.");
                if (r < 0)
                        return usage_error("--user takes its %s from $%s%s, and %s: give %s", defaults[i].what,
                                           defaults[i].var, defaults[i].home_suffix ? " or $HOME" : "",
                                           defaults[i].home_suffix ? "neither is set" : "it is not set",
                                           defaults[i].option);
                *defaults[i].arg = p;
        }
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_SYSTEM = 0x100,
                ARG_USER,
                ARG_ADDRESS,
                ARG_CGROUP_ROOT,
                ARG_CONFIG,
                ARG_RUNTIME_DIR,
                ARG_STATE_DIR,
                ARG_VERSION,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "user", no_argument, NULL, ARG_USER },
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "runtime-dir", required_argument, NULL, ARG_RUNTIME_DIR },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                {},
        };
        int c;

        /* getopt's own messages would lack our log prefix and our exit status. */
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("freezerd %s\n", FREEZERD_VERSION);
                        return 0;
                case ARG_SYSTEM:
                case ARG_USER:
                case ARG_ADDRESS: {
                        /* Two of them would leave the last one to win, silently (--user
                         * --system ran as the system's instance), as freezectl refuses. */
                        static const char *given = NULL;
                        const char *name = c == ARG_SYSTEM ? "--system" : c == ARG_USER ? "--user" : "--address";

                        if (given && !streq(given, name))
                                return usage_error("%s and %s name two buses: give one", given, name);
                        given = name;
                        if (c == ARG_SYSTEM)
                                arg_bus = BUS_SYSTEM;
                        else if (c == ARG_USER)
                                arg_bus = BUS_USER;
                        else {
                                /* An empty one would only fail later, as "Connection refused". */
                                if (!*optarg)
                                        return usage_error(
                                                "--address= needs a bus address (e.g. unix:path=/run/x.sock)");
                                arg_bus = BUS_ADDRESS;
                                arg_address = optarg;
                        }
                        break;
                }
                case ARG_CGROUP_ROOT:
                        if (!*optarg)
                                return usage_error("--cgroup-root= needs a directory");
                        arg_cgroup_root = optarg;
                        break;
                case ARG_CONFIG:
                        /* An empty one would be a missing file: the defaults, silently. */
                        if (!*optarg)
                                return usage_error("--config= needs a file");
                        arg_config = optarg;
                        arg_config_set = true;
                        break;
                case ARG_RUNTIME_DIR:
                        if (!*optarg)
                                return usage_error("--runtime-dir= needs a directory");
                        arg_runtime_dir = optarg;
                        arg_runtime_dir_set = true;
                        break;
                case ARG_STATE_DIR:
                        if (!*optarg)
                                return usage_error("--state-dir= needs a directory");
                        arg_state_dir = optarg;
                        arg_state_dir_set = true;
                        break;
                case ':':
                        return usage_error("Option '%s' needs an argument", argv[optind - 1]);
                case '?':
                        /* optopt is the character of a bad short option; of a long one
                         * given an argument it takes none, its code (>= 0x100, or 'h'
                         * for --help=...): then argv names it. */
                        if (optopt > 0 && optopt < 0x100 && optopt != 'h')
                                return usage_error("Invalid option '-%c'", optopt);
                        return usage_error("Invalid option '%s'", argv[optind - 1]);
                default:
                        abort();
                }
        if (optind < argc)
                return usage_error("Unexpected argument \"%s\"", argv[optind]);
        if (arg_bus == BUS_USER) {
                int r = user_defaults();
                if (r < 0)
                        return r;
        }
        if (arg_runtime_dir[0] != '/')
                return usage_error("--runtime-dir=%s is not an absolute path", arg_runtime_dir);
        if (arg_state_dir[0] != '/')
                return usage_error("--state-dir=%s is not an absolute path", arg_state_dir);
        return 1;
}

static void setup_log_level(void) {
        static const struct {
                const char *name;
                int level;
        } levels[] = {
                { "debug", LOG_DEBUG }, { "info", LOG_INFO },   { "notice", LOG_NOTICE },
                { "warning", LOG_WARNING }, { "err", LOG_ERR }, { "error", LOG_ERR },
        };
        const char *e = getenv("FREEZERD_LOG_LEVEL");

        if (!e)
                return;
        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (strcasecmp(e, levels[i].name) == 0) {
                        log_set_max_level(levels[i].level);
                        return;
                }
        log_warning("Ignoring unknown FREEZERD_LOG_LEVEL=%s.", e);
}

/* The cgroup root: --cgroup-root, else the configuration's, else the cgroup2
 * mount.  It must be a directory on the cgroup2 file system. */
static int resolve_cgroup_root(const Config *config, char **ret) {
        _cleanup_free_ char *mount = NULL, *real = NULL;
        const char *want = arg_cgroup_root ?: config->cgroup_root;
        int r;

        r = cg_find_cgroup2_mount(NULL, &mount);
        if (r < 0)
                return log_error_errno(r, "No cgroup2 file system is mounted (looked in /proc/self/mountinfo): %m");
        if (!want) {
                *ret = TAKE_PTR(mount);
                return 0;
        }
        real = realpath(want, NULL);
        if (!real)
                return log_error_errno(errno, "Cannot resolve cgroup root %s: %m", want);
        {
                size_t l = strlen(mount);
                if (!(strncmp(real, mount, l) == 0 && (real[l] == 0 || real[l] == '/')))
                        return log_error_errno(EINVAL, "cgroup root %s is not inside the cgroup2 mount %s.", real,
                                               mount);
        }
        *ret = TAKE_PTR(real);
        return 0;
}

/* The address sd_bus_open_system() and sd_bus_open_user() connect to (their
 * rules, as in libsystemd): freezerd sets the connection up by itself, for
 * sd_bus_negotiate_fds() must come before it starts, and those start it. */
static int default_bus_address(char **ret) {
        _cleanup_free_ char *a = NULL;
        const char *e;
        size_t n = 0;

        if (arg_bus == BUS_SYSTEM) {
                e = secure_getenv("DBUS_SYSTEM_BUS_ADDRESS");
                *ret = strdup(e ?: "unix:path=/run/dbus/system_bus_socket");
                return *ret ? 0 : -ENOMEM;
        }
        e = secure_getenv("DBUS_SESSION_BUS_ADDRESS");
        if (e) {
                *ret = strdup(e);
                return *ret ? 0 : -ENOMEM;
        }
        e = secure_getenv("XDG_RUNTIME_DIR");
        if (!e)
                return -ENOMEDIUM;
        /* "unix:path=" + $XDG_RUNTIME_DIR escaped as D-Bus addresses are + "/bus". */
        a = malloc(strlen("unix:path=") + strlen(e) * 3 + strlen("/bus") + 1);
        if (!a)
                return -ENOMEM;
        n = stpcpy(a, "unix:path=") - a;
        for (const char *c = e; *c; c++)
                if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    strchr("-_/.", *c))
                        a[n++] = *c;
                else
                        n += sprintf(a + n, "%%%02x", (unsigned char) *c);
        strcpy(a + n, "/bus");
        *ret = TAKE_PTR(a);
        return 0;
}

static int connect_bus(sd_bus **ret) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL; /* a failed setup has nothing worth waiting to send */
        _cleanup_free_ char *address = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r >= 0 && arg_bus != BUS_ADDRESS)
                r = default_bus_address(&address);
        if (r >= 0)
                r = sd_bus_set_address(bus, address ?: arg_address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        /* freezerd takes no file descriptors: a call that carried them would
         * keep them open in freezerd while it waits (a Freeze that waits for
         * the kernel, a call held for its sender's uid), and any client could
         * so use up its RLIMIT_NOFILE.  dbus-daemon refuses to pass them. */
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, false);
        /* As sd_bus_open_user() does: a user's bus has no one to keep out. */
        if (r >= 0 && arg_bus == BUS_USER)
                r = sd_bus_set_trusted(bus, true);
        if (r >= 0)
                r = sd_bus_set_description(bus, "freezerd");
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the %s bus%s%s: %m",
                                       arg_bus == BUS_SYSTEM ? "system" : arg_bus == BUS_USER ? "user" : "given",
                                       arg_address ? " at " : "", arg_address ?: "");
        *ret = TAKE_PTR(bus);
        return 0;
}

static void on_exit_signal(Daemon *d, int sig) {
        log_info("Received %s, exiting.", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        d->exit = true;
        event_base_loopbreak(d->base);
}

static void on_reload_signal(Daemon *d) {
        _cleanup_free_ char *error = NULL;
        Config config = {};
        uint64_t old_timeout = d->manager->config.default_timeout_usec;
        int r;

        (void) sd_notify(0, "RELOADING=1");
        /* One named with --config= must exist, now as at the start. */
        r = config_load(arg_config, !arg_config_set, &config, &error);
        if (r < 0)
                log_error("Not reloading: %s", error ?: strerror(-r));
        else {
                /* Against the one the start used: the manager keeps none (its
                 * config.cgroup_root is NULL), which warned at every SIGHUP of a
                 * file that sets one, and never when it was taken out. */
                if (!streq_ptr(config.cgroup_root, d->config_cgroup_root) && !arg_cgroup_root)
                        log_warning("A new cgroup_root takes effect only on restart.");
                r = manager_reload(d->manager, &config);
                if (r < 0)
                        log_error_errno(r, "Reloading failed, the configuration before stays in effect: %m");
                else if (access(arg_config, F_OK) < 0 && errno == ENOENT)
                        /* Not an error (a missing file means defaults), but not what
                         * "reloaded from" would make one think either. */
                        log_notice("Configuration reloaded: %s does not exist, so the defaults apply (track \"/\" "
                                   "among them).",
                                   arg_config);
                else
                        log_info("Configuration reloaded from %s.", arg_config);
                if (old_timeout != d->manager->config.default_timeout_usec)
                        manager_bus_timeout_changed(d->manager);
        }
        config_done(&config);
        (void) sd_notify(0, "READY=1");
}

/* SIGTERM, SIGINT and SIGHUP are blocked from the start and read from a
 * signalfd, an event of the loop's first priority.  A signal that comes while
 * the sockets already hold calls (freezerd stopped, sent calls and SIGTERM,
 * then continued) is pending when the loop looks, so it is among the fds the
 * kernel reports ready in that same look, and handled first: a stop refuses
 * those calls ("nothing was done") instead of starting them on the way out.
 * With a signal handler it came a look later, after the calls. */
static int block_signals(sigset_t *ret) {
        static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };

        sigemptyset(ret);
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
                sigaddset(ret, sigs[i]);
        if (sigprocmask(SIG_BLOCK, ret, NULL) < 0)
                return -errno;
        /* An ignored signal is dropped when sent, blocked or not, and never
         * reaches the signalfd: one inherited as ignored (nohup ignores
         * SIGHUP) is taken back to its default, which blocked means pending. */
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
                if (signal(sigs[i], SIG_DFL) == SIG_ERR)
                        return -errno;
        return 0;
}

static void on_signal_fd(evutil_socket_t fd, short what, void *userdata) {
        Daemon *d = userdata;

        for (;;) {
                struct signalfd_siginfo si;
                ssize_t n = read(fd, &si, sizeof si);

                if (n != (ssize_t) sizeof si)
                        return; /* EAGAIN: all read */
                if (si.ssi_signo == SIGHUP)
                        on_reload_signal(d);
                else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
                        on_exit_signal(d, (int) si.ssi_signo);
                        return;
                }
        }
}

/* FREEZERD_TEST_START_DELAY_USEC: the start waits so long once the bus name
 * is ours, for tests of the calls that come meanwhile. */
static void test_start_delay(void) {
        const char *e = getenv("FREEZERD_TEST_START_DELAY_USEC");
        uint64_t usec, until;

        if (!e)
                return;
        usec = strtoull(e, NULL, 10);
        log_warning("FREEZERD_TEST_START_DELAY_USEC=%" PRIu64 ": the start waits after taking the bus name (for "
                    "tests only).",
                    usec);
        until = now_usec() + usec;
        for (uint64_t n = now_usec(); n < until; n = now_usec()) {
                struct timespec ts = {
                        .tv_sec = (time_t) ((until - n) / USEC_PER_SEC),
                        .tv_nsec = (long) ((until - n) % USEC_PER_SEC * 1000),
                };
                (void) nanosleep(&ts, NULL);
        }
}

/* A start that failed with the bus name ours: the calls dbus-daemon passed on
 * meanwhile (they waited in the socket for the start) are refused with Failed
 * "freezerd failed to start: REASON", the reason logged, and so are those that
 * come until the name is released.  Else their callers would get
 * dbus-daemon's NoReply once we leave, which says neither why nor that
 * nothing was done. */
static void refuse_after_failed_start(sd_bus *bus, int r) {
        _cleanup_free_ char *message = NULL;
        const char *reason = log_last_error();
        size_t n;

        if (asprintf(&message, "freezerd failed to start: %s", reason ?: strerror(r < 0 ? -r : EIO)) < 0)
                message = NULL;
        /* "... directory DIR." in the log, without its period here. */
        else if ((n = strlen(message)) > 0 && message[n - 1] == '.')
                message[n - 1] = 0;
        {
                const sd_bus_error refusal =
                        SD_BUS_ERROR_MAKE_CONST(SD_BUS_ERROR_FAILED, message ?: "freezerd failed to start");

                bus_refusing_flush(bus, now_usec() + BUS_FLUSH_TIMEOUT_USEC, true, &refusal);
                /* dbus-daemon passes on every call it routed to the name before
                 * the release's reply, which sd_bus_release_name() queues
                 * unread while it waits: the second flush refuses them. */
                (void) sd_bus_release_name(bus, BUS_NAME);
                bus_refusing_flush(bus, now_usec() + BUS_FLUSH_TIMEOUT_USEC, true, &refusal);
        }
}

static int run(void) {
        _cleanup_free_ char *config_error = NULL, *root = NULL;
        Config config = {};
        bool config_missing;
        Daemon d = { .signal_fd = -1 };
        bool name_owned = false;
        /* The loop ended for the bus connection (lost: closed, not merely
         * failed), logged once as the last line: the reason freezerd exits. */
        bool bus_failed = false, bus_lost = false;
        sigset_t signals;
        int r;

        /* Before anything else: one that comes during the start waits for the
         * loop (and ends it at once) instead of killing us half-started. */
        r = block_signals(&signals);
        if (r < 0)
                return log_error_errno(r, "Cannot block signals: %m");

        /* Only the default file may be missing: one named with --config= that
         * does not exist (a typo) meant the defaults, track ["/"] among them,
         * without a word. */
        r = config_load(arg_config, !arg_config_set, &config, &config_error);
        if (r == -ENOENT && config_error) {
                log_error("%s (given with --config=; only the default file may be missing).", config_error);
                return r;
        }
        if (r < 0) {
                log_error("%s", config_error ?: strerror(-r));
                return r;
        }
        config_missing = access(arg_config, F_OK) < 0 && errno == ENOENT;
        r = resolve_cgroup_root(&config, &root);
        if (r < 0)
                goto finish;
        d.config_cgroup_root = config.cgroup_root;

        {
                /* libevent's default clock is CLOCK_MONOTONIC_COARSE (4 ms steps
                 * here): deadlines would fire up to a tick early.  And by default
                 * a timer added from a callback counts from the time cached when
                 * the loop woke up, however long ago that was: a call read late in
                 * a long turn, or after freezerd was stopped (SIGSTOP, a
                 * debugger, a paused VM) between its wake-up and the read, got a
                 * timeout that had partly or wholly run out at once. */
                struct event_config *cfg = event_config_new();
                if (cfg) {
                        (void) event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
                        (void) event_config_set_flag(cfg, EVENT_BASE_FLAG_NO_CACHE_TIME);
                        /* Edge-triggered events (a held private connection's
                         * socket, at its end for good: bus-event.c) need epoll;
                         * a level-triggered backend, chosen through libevent's
                         * EVENT_NO* variables, would spin on it. */
                        (void) event_config_set_flag(cfg, EVENT_BASE_FLAG_IGNORE_ENV);
                        (void) event_config_require_features(cfg, EV_FEATURE_ET);
                        d.base = event_base_new_with_config(cfg);
                        event_config_free(cfg);
                }
        }
        /* Two priorities: the signals (0, see on_signal_fd()) before
         * everything else (1). */
        if (!d.base || event_base_priority_init(d.base, 2) < 0) {
                r = log_error_errno(ENOMEM, "Cannot create the event loop.");
                goto finish;
        }
        r = manager_new(d.base, &config, root, arg_runtime_dir, arg_state_dir, &d.manager);
        if (r < 0)
                goto finish;

        r = connect_bus(&d.bus);
        if (r < 0)
                goto finish;
        r = manager_bus_attach(d.manager, d.bus);
        if (r < 0)
                goto finish;

        /* The name before the directories: a freezerd that cannot have it
         * (the service runs, and this one was started by hand) leaves at once,
         * having made no directory or lock file and, above all, recovered no
         * batch journal (manager_start() writes the flags of one it finds in
         * its runtime directory back into the groups that the running
         * freezerd manages) nor scanned the tree for nothing.  The objects are
         * registered already; calls that come before the loop runs wait in
         * the socket until the start is through.  Another freezerd on the
         * same directories but another bus is stopped by their locks. */
        r = sd_bus_request_name(d.bus, BUS_NAME, 0);
        if (r == -EEXIST) {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                pid_t pid = 0;

                if (sd_bus_get_name_creds(d.bus, BUS_NAME, SD_BUS_CREDS_PID, &creds) >= 0)
                        (void) sd_bus_creds_get_pid(creds, &pid);
                if (pid > 0)
                        log_error("Cannot start: the name %s is owned by another process (another freezerd?), "
                                  "PID %d.",
                                  BUS_NAME, (int) pid);
                else
                        log_error("Cannot start: the name %s is owned by another process (another freezerd?).",
                                  BUS_NAME);
                goto finish;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot own the bus name %s: %m", BUS_NAME);
                goto finish;
        }
        name_owned = true;
        test_start_delay();

        /* What fails from here on is a reason for refuse_after_failed_start(). */
        log_forget_last_error();
        r = manager_start(d.manager);
        if (r < 0)
                goto finish;

        d.signal_fd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
        if (d.signal_fd < 0) {
                r = log_error_errno(errno, "Cannot set up signal handling: %m");
                goto finish;
        }
        d.signal_event = event_new(d.base, d.signal_fd, EV_READ | EV_PERSIST, on_signal_fd, &d);
        if (!d.signal_event || event_priority_set(d.signal_event, 0) < 0 || event_add(d.signal_event, NULL) < 0) {
                r = log_error_errno(ENOMEM, "Cannot set up signal handling.");
                goto finish;
        }

        r = bus_event_new(d.bus, d.base, &d.bus_event);
        if (r < 0) {
                log_error_errno(r, "Cannot follow the bus connection in the main loop: %m");
                goto finish;
        }

        /* The private socket is optional: the bus serves everyone without it. */
        {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/private", arg_runtime_dir) < 0) {
                        r = log_error_errno(ENOMEM, "Out of memory.");
                        goto finish;
                }
                r = private_bus_new(d.manager, d.base, path, &d.private_bus);
                if (r == -EADDRINUSE)
                        log_warning("Not listening on %s: another freezerd answers there.", path);
                else if (r < 0)
                        log_warning_errno(r, "Not listening on %s: %m", path);
                d.manager->private_bus = d.private_bus;
        }

        d.manager->bus_ready = true;
        {
                unsigned changed;
                while (tree_pop_changed(d.manager->tree, &changed))
                        ;
                d.manager->groups_count_changed = false;
        }
        log_info("freezerd %s ready: %u group%s tracked under %s; configuration: %s%s.", FREEZERD_VERSION,
                 tree_tracked(d.manager->tree), tree_tracked(d.manager->tree) == 1 ? "" : "s", root,
                 config_missing ? "the defaults, no file at " : "", arg_config);
        (void) sd_notifyf(0, "READY=1\nSTATUS=Tracking %u groups under %s", tree_tracked(d.manager->tree), root);

        while (!d.exit) {
                bool busy;

                manager_bus_flush(d.manager);
                /* After the replies of a burst went out (their messages freed). */
                if (manager_burst_over(d.manager))
                        (void) malloc_trim(0);
                r = bus_event_prepare(d.bus_event);
                if (r < 0) {
                        if (sd_bus_is_open(d.bus) <= 0) {
                                bus_failed = bus_lost = true;
                                break;
                        }
                        log_error_errno(r, "Cannot wait for the bus: %m");
                        break;
                }
                private_bus_prepare(d.private_bus);
                if (d.exit)
                        break;
                /* Kernel events waiting to be handled: look at the fds without
                 * blocking, then handle a slice of them, so that calls (and
                 * the signals of each slice) go between slices of a storm. */
                busy = manager_has_stashed_events(d.manager);
                /* EVLOOP_NONBLOCK alone would run the callbacks again for as
                 * long as an fd stays ready: while a storm's notifications
                 * trickle in, that is reading them a few at a time and
                 * handling none. */
                r = event_base_loop(d.base, busy ? EVLOOP_NONBLOCK | EVLOOP_ONCE : EVLOOP_ONCE);
                if (r < 0) {
                        r = log_error_errno(EIO, "The event loop failed.");
                        break;
                }
                /* The bus connection broke (bus_dispatch()), also in the turn
                 * of a SIGTERM: said, and the exit status 1, either way. */
                if (bus_event_error(d.bus_event) < 0 || (event_base_got_break(d.base) && !d.exit)) {
                        r = bus_event_error(d.bus_event) ?: -ECONNRESET;
                        bus_failed = true;
                        bus_lost = sd_bus_is_open(d.bus) <= 0;
                        break;
                }
                r = 0;
                /* Also what this turn's read brought: handled now, not after
                 * one more look at the fds (a change reaches the bus sooner). */
                if (manager_has_stashed_events(d.manager))
                        manager_handle_stashed_events(d.manager, INOTIFY_SLICE_USEC);
                /* Set while handling kernel events (the cgroup root removed), logged there. */
                if (d.manager->fatal) {
                        r = d.manager->fatal;
                        break;
                }
        }
        (void) sd_notify(0, "STOPPING=1");

finish:
        /* Pending callers get an answer; cgroups stay exactly as the kernel has
         * them.  The private connections are flushed while the manager still
         * exists: flushing them dispatches what they read meanwhile, which the
         * manager's objects and filters (with the manager as userdata) would
         * otherwise get after it is freed.  private_bus_free() refuses those
         * calls, and so does the bus's flush here for the calls dbus-daemon
         * passed on meanwhile (without it they got dbus-daemon's NoReply once
         * we left, which does not say that nothing was done). */
        if (d.manager)
                d.manager->private_bus = NULL;
        manager_shutdown(d.manager);
        /* Calls held until the bus says who sent them: refused as the rest. */
        manager_bus_release_callers(true);
        if (d.bus && d.manager && d.manager->bus_ready)
                bus_shutdown_flush(d.bus, now_usec() + BUS_FLUSH_TIMEOUT_USEC, true);
        else if (name_owned)
                refuse_after_failed_start(d.bus, r);
        d.private_bus = private_bus_free(d.private_bus);
        d.manager = manager_free(d.manager);
        /* What the flush held again (none: it refuses), and the bus's references. */
        manager_bus_release_callers(true);
        if (d.bus) {
                /* sd_bus_flush() waits for as long as dbus-daemon takes to read:
                 * for ever if it stopped reading with more queued than the
                 * socket holds (16 MB of signals).  What bus_shutdown_flush()
                 * could not send in its time is left. */
                if (bus_output_pending(d.bus))
                        log_warning("The bus did not take freezerd's last messages in time (dbus-daemon does not "
                                    "read); exiting without them.");
                else
                        (void) sd_bus_flush(d.bus);
                d.bus_event = bus_event_free(d.bus_event);
                d.bus = sd_bus_close_unref(d.bus);
        }
        if (d.signal_event)
                event_free(d.signal_event);
        if (d.signal_fd >= 0)
                close(d.signal_fd);
        if (d.base)
                event_base_free(d.base);
        config_done(&config);
        /* Last, after whatever the stop logged: the bus's error alone
         * ("Connection reset by peer") would say neither that freezerd
         * leaves nor why. */
        if (bus_lost)
                log_error_errno(r, "The connection to the bus was lost (%m): freezerd exits with status %d.",
                                EXIT_FAILURE);
        else if (bus_failed)
                log_error_errno(r, "Processing the bus failed (%m): freezerd exits with status %d.", EXIT_FAILURE);
        return r;
}

/* glibc raises its trim threshold to twice the size of any large block freed
 * (a storm's 1 MiB GroupsChanged, say), and keeps the heap's top up to that
 * size for good: a long-running daemon would hold on to a burst's memory.
 * Fixed thresholds turn that off: blocks of 128 KiB and more are mapped and
 * unmapped on their own, and free memory above 128 KiB at the top goes back. */
#define MALLOC_THRESHOLD (128 * 1024)

int main(int argc, char *argv[]) {
        int r;

        (void) mallopt(M_MMAP_THRESHOLD, MALLOC_THRESHOLD);
        (void) mallopt(M_TRIM_THRESHOLD, MALLOC_THRESHOLD);
        log_setup();
        setup_log_level();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r == -ENOMEM ? EXIT_FAILURE : r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        r = run();
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
