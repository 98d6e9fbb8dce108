/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-pressure: what reading pressure stall information through freezerd
 * costs, against reading the kernel's files directly (issue 4).
 *
 * Run by tests/bench/run-bench-pressure, which makes the groups below a
 * scratch cgroup, starts a private dbus-daemon and freezerd over it, and
 * prints the table.  --root=DIR is freezerd's --cgroup-root; --one=PATH a
 * group below it, --many=PATH a group with the children g0 .. g<n-1>.
 *
 * (a) One group (--one), one "read" = its cpu, memory and io pressure:
 *   direct      pread() from offset 0 of the three files, opened beforehand,
 *               and sscanf() of both lines (what freezerd itself does for a
 *               Get, minus the bus)
 *   get         three Properties.Get (CpuPressure, MemoryPressure,
 *               IoPressure) on the group's object, sd-bus, synchronous
 *   getall      one Properties.GetAll of org.freezerd.Freezer1.Group (all
 *               ten properties: the three pressures, and FrozenUSec read from
 *               cgroup.stat.local), the three pressures picked out of it
 *   libfreezer  three freezer_get_pressure() (one Get each: the library
 *               derives the object path)
 *   get-state   three Properties.Get of FreezerState, a property freezerd
 *               answers from memory: the cost of the bus round trip alone
 *   Methods run in turns, one read each per round, --rounds rounds after
 *   --rounds/10 warm-up rounds; every read is timed alone (CLOCK_MONOTONIC).
 *
 * (b) --n groups (--many's children), one "pass" = the cpu pressure of each:
 *   direct        n pread() + sscanf() of fds opened beforehand
 *   direct-open   n open() + pread() + close() + sscanf()
 *   get           n synchronous Properties.Get of CpuPressure
 *   get-pipelined the same n calls with up to --window of them in flight
 *                 (sd_bus_call_async()): the fastest way through the bus
 *   libfreezer    n freezer_get_pressure()
 *   The first pass through freezerd ("get, first pass") is timed on its own:
 *   freezerd opens each group's cpu.pressure on its first read and keeps it.
 *   Then one warm-up pass each and --rounds-many passes, in turns.
 *
 * With --daemon-pid and --bus-pid, the CPU time freezerd and dbus-daemon
 * spend per read (process CPU clocks, all threads) is summed over the timed
 * rounds of each bus method.
 *
 * Before anything is timed, one read of each kind through freezerd is checked
 * against direct reads around it (totals between theirs): a broken setup
 * fails (exit 1) instead of producing numbers.
 *
 * usage: bench-pressure --address=ADDR --root=DIR --one=PATH --many=PATH --n=N
 *                       [--rounds=R] [--rounds-many=R] [--window=W]
 *                       [--daemon-pid=PID] [--bus-pid=PID]
 * Prints one JSON object on stdout.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "freezer.h"

#define SERVICE "org.freezerd.Freezer1"
#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define GROUP_IFACE "org.freezerd.Freezer1.Group"
#define PROPERTIES_IFACE "org.freedesktop.DBus.Properties"

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

static const char *arg_address, *arg_root, *arg_one, *arg_many;
static unsigned arg_n = 1000, arg_rounds = 2000, arg_rounds_many = 20, arg_window = 128;
static pid_t arg_daemon_pid, arg_bus_pid;

static const char *const resources[] = { "cpu", "memory", "io" };
static const char *const properties[] = { "CpuPressure", "MemoryPressure", "IoPressure" };

typedef struct reading {
        double avg[2][3];
        uint64_t total[2];
} reading;

static void die(const char *what, int r) {
        fprintf(stderr, "bench-pressure: %s: %s\n", what, strerror(r < 0 ? -r : r));
        exit(EXIT_FAILURE);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* CPU time of a process, all threads, in ns; 0 without a pid. */
static uint64_t cpu_ns(pid_t pid) {
        struct timespec ts;
        clockid_t clk;

        if (pid <= 0 || clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* ---- direct reads ---- */

static int parse_pressure(const char *buf, reading *ret) {
        int k = sscanf(buf,
                       "some avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64
                       " full avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64,
                       &ret->avg[0][0], &ret->avg[0][1], &ret->avg[0][2], &ret->total[0],
                       &ret->avg[1][0], &ret->avg[1][1], &ret->avg[1][2], &ret->total[1]);
        return k == 8 ? 0 : -EBADMSG;
}

static int read_fd(int fd, reading *ret) {
        char buf[256];
        ssize_t n;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return parse_pressure(buf, ret);
}

static char *group_file(const char *group, const char *file) {
        char *s;

        if (asprintf(&s, "%s%s/%s", arg_root, group, file) < 0)
                die("asprintf", -ENOMEM);
        return s;
}

static int open_file(const char *group, const char *file) {
        char *p = group_file(group, file);
        int fd;

        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                die(p, -errno);
        free(p);
        return fd;
}

/* ---- through the bus ---- */

static char *group_object(const char *group) {
        char *o;
        int r;

        r = sd_bus_path_encode(GROUP_PREFIX, group, &o);
        if (r < 0)
                die("sd_bus_path_encode", r);
        return o;
}

static int read_pressure_variant(sd_bus_message *m, reading *ret) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "((dddt)(dddt))");
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "((dddt)(dddt))",
                                &ret->avg[0][0], &ret->avg[0][1], &ret->avg[0][2], &ret->total[0],
                                &ret->avg[1][0], &ret->avg[1][1], &ret->avg[1][2], &ret->total[1]);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static void bus_get_state(sd_bus *bus, const char *object) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *state = NULL;
        int r;

        r = sd_bus_get_property_string(bus, SERVICE, object, GROUP_IFACE, "FreezerState", &error, &state);
        if (r < 0) {
                fprintf(stderr, "bench-pressure: Get FreezerState of %s: %s\n", object, error.message ?: strerror(-r));
                exit(EXIT_FAILURE);
        }
        free(state);
        sd_bus_error_free(&error);
}

static int bus_get(sd_bus *bus, const char *object, const char *property, reading *ret) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_call_method(bus, SERVICE, object, PROPERTIES_IFACE, "Get", &error, &reply, "ss", GROUP_IFACE,
                               property);
        if (r < 0) {
                fprintf(stderr, "bench-pressure: Get %s of %s: %s\n", property, object,
                        error.message ?: strerror(-r));
                exit(EXIT_FAILURE);
        }
        r = read_pressure_variant(reply, ret);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        return r;
}

/* GetAll, and the three pressures out of it. */
static int bus_get_all(sd_bus *bus, const char *object, reading ret[3]) {
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        unsigned found = 0;
        int r;

        r = sd_bus_call_method(bus, SERVICE, object, PROPERTIES_IFACE, "GetAll", &error, &reply, "s", GROUP_IFACE);
        if (r < 0) {
                fprintf(stderr, "bench-pressure: GetAll of %s: %s\n", object, error.message ?: strerror(-r));
                exit(EXIT_FAILURE);
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0) {
                const char *name;
                size_t i;

                r = sd_bus_message_enter_container(reply, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        break;
                for (i = 0; i < ELEMENTSOF(properties); i++)
                        if (strcmp(name, properties[i]) == 0)
                                break;
                if (i < ELEMENTSOF(properties)) {
                        r = read_pressure_variant(reply, &ret[i]);
                        found |= 1u << i;
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        sd_bus_error_free(&error);
        if (r < 0)
                return r;
        return found == 7 ? 0 : -ENODATA;
}

static void lib_get(freezer *f, const char *group, freezer_resource res, reading *ret) {
        freezer_pressure p;
        int r;

        r = freezer_get_pressure(f, group, res, &p);
        if (r < 0) {
                fprintf(stderr, "bench-pressure: freezer_get_pressure(%s, %s): %s\n", group,
                        freezer_resource_to_string(res), freezer_last_error_message(f) ?: strerror(-r));
                exit(EXIT_FAILURE);
        }
        ret->avg[0][0] = p.some.avg10;
        ret->total[0] = p.some.total_usec;
        ret->total[1] = p.full.total_usec;
}

/* Pipelined Gets: up to arg_window in flight. */
typedef struct pipeline {
        unsigned in_flight, done;
        int error;
} pipeline;

static int on_get_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        pipeline *p = userdata;
        reading rd;
        int r;

        p->in_flight--;
        p->done++;
        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                fprintf(stderr, "bench-pressure: pipelined Get: %s\n", e && e->message ? e->message : "error");
                p->error = -EIO;
                return 0;
        }
        r = read_pressure_variant(m, &rd);
        if (r < 0)
                p->error = r;
        return 0;
}

static void bus_get_pipelined(sd_bus *bus, char **objects, unsigned n) {
        pipeline p = {};
        unsigned sent = 0;
        int r;

        while (p.done < n) {
                while (sent < n && p.in_flight < arg_window) {
                        r = sd_bus_call_method_async(bus, NULL, SERVICE, objects[sent], PROPERTIES_IFACE, "Get",
                                                     on_get_reply, &p, "ss", GROUP_IFACE, "CpuPressure");
                        if (r < 0)
                                die("sd_bus_call_method_async", r);
                        sent++;
                        p.in_flight++;
                }
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        die("sd_bus_process", r);
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0)
                        die("sd_bus_wait", r);
        }
        if (p.error < 0)
                die("pipelined Get", p.error);
}

/* ---- statistics ---- */

typedef struct series {
        const char *key;
        double *v;      /* microseconds */
        size_t n;
        uint64_t daemon_ns, bus_ns; /* CPU time over the timed rounds */
        uint64_t reads;             /* bus round trips (Get/GetAll calls) timed */
} series;

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double quantile(double *sorted, size_t n, double q) {
        double pos = q * (double) (n - 1);
        size_t i = (size_t) pos;
        double frac = pos - (double) i;

        if (i + 1 >= n)
                return sorted[n - 1];
        return sorted[i] * (1 - frac) + sorted[i + 1] * frac;
}

static double median_of(series *s) {
        qsort(s->v, s->n, sizeof(double), cmp_double);
        return quantile(s->v, s->n, 0.5);
}

static void print_series(series *s, bool last) {
        double mean = 0;

        qsort(s->v, s->n, sizeof(double), cmp_double);
        for (size_t i = 0; i < s->n; i++)
                mean += s->v[i];
        mean /= (double) s->n;
        printf("    \"%s\": {\"n\": %zu, \"median_us\": %.3f, \"p10_us\": %.3f, \"p90_us\": %.3f, "
               "\"min_us\": %.3f, \"max_us\": %.3f, \"mean_us\": %.3f",
               s->key, s->n, quantile(s->v, s->n, 0.5), quantile(s->v, s->n, 0.1), quantile(s->v, s->n, 0.9),
               s->v[0], s->v[s->n - 1], mean);
        if (s->reads > 0 && arg_daemon_pid > 0)
                printf(", \"daemon_cpu_us_per_call\": %.3f", (double) s->daemon_ns / 1000.0 / (double) s->reads);
        if (s->reads > 0 && arg_bus_pid > 0)
                printf(", \"bus_cpu_us_per_call\": %.3f", (double) s->bus_ns / 1000.0 / (double) s->reads);
        printf("}%s\n", last ? "" : ",");
}

static void series_init(series *s, const char *key, size_t cap) {
        *s = (series) { .key = key, .v = calloc(cap, sizeof(double)) };
        if (!s->v)
                die("calloc", -ENOMEM);
}

/* ---- checks ---- */

static void check_between(const char *what, const reading *before, const reading *got, const reading *after) {
        for (int k = 0; k < 2; k++)
                if (got->total[k] < before->total[k] || got->total[k] > after->total[k]) {
                        fprintf(stderr,
                                "bench-pressure: %s: total %" PRIu64 " not between the direct reads %" PRIu64
                                " and %" PRIu64 "\n",
                                what, got->total[k], before->total[k], after->total[k]);
                        exit(EXIT_FAILURE);
                }
}

/* ---- main ---- */

static void parse_argv(int argc, char *argv[]) {
        enum { ARG_ADDRESS = 0x100, ARG_ROOT, ARG_ONE, ARG_MANY, ARG_N, ARG_ROUNDS, ARG_ROUNDS_MANY, ARG_WINDOW,
               ARG_DAEMON_PID, ARG_BUS_PID };
        static const struct option options[] = {
                { "address",     required_argument, NULL, ARG_ADDRESS     },
                { "root",        required_argument, NULL, ARG_ROOT        },
                { "one",         required_argument, NULL, ARG_ONE         },
                { "many",        required_argument, NULL, ARG_MANY        },
                { "n",           required_argument, NULL, ARG_N           },
                { "rounds",      required_argument, NULL, ARG_ROUNDS      },
                { "rounds-many", required_argument, NULL, ARG_ROUNDS_MANY },
                { "window",      required_argument, NULL, ARG_WINDOW      },
                { "daemon-pid",  required_argument, NULL, ARG_DAEMON_PID  },
                { "bus-pid",     required_argument, NULL, ARG_BUS_PID     },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case ARG_ADDRESS: arg_address = optarg; break;
                case ARG_ROOT: arg_root = optarg; break;
                case ARG_ONE: arg_one = optarg; break;
                case ARG_MANY: arg_many = optarg; break;
                case ARG_N: arg_n = (unsigned) strtoul(optarg, NULL, 10); break;
                case ARG_ROUNDS: arg_rounds = (unsigned) strtoul(optarg, NULL, 10); break;
                case ARG_ROUNDS_MANY: arg_rounds_many = (unsigned) strtoul(optarg, NULL, 10); break;
                case ARG_WINDOW: arg_window = (unsigned) strtoul(optarg, NULL, 10); break;
                case ARG_DAEMON_PID: arg_daemon_pid = (pid_t) strtol(optarg, NULL, 10); break;
                case ARG_BUS_PID: arg_bus_pid = (pid_t) strtol(optarg, NULL, 10); break;
                default:
                        fprintf(stderr, "usage: bench-pressure --address=ADDR --root=DIR --one=PATH --many=PATH "
                                        "--n=N [--rounds=R] [--rounds-many=R] [--window=W] [--daemon-pid=PID] "
                                        "[--bus-pid=PID]\n");
                        exit(2);
                }
        if (!arg_address || !arg_root || !arg_one || !arg_many || arg_n == 0 || arg_rounds == 0 ||
            arg_rounds_many == 0 || arg_window == 0) {
                fprintf(stderr, "bench-pressure: --address, --root, --one, --many and non-zero counts are needed\n");
                exit(2);
        }
}

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        freezer *f = NULL;
        struct rlimit rl;
        int one_fd[3], r;
        char *one_object, **objects, **paths;
        int *many_fd;
        reading rd, before, after, all[3];
        series a[5], b[5];
        series first;
        unsigned warm;

        parse_argv(argc, argv);

        /* n kept fds here. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, arg_address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, true);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0)
                die("connecting to the bus", r);
        r = freezer_open_address(&f, arg_address);
        if (r < 0)
                die("freezer_open_address", r);

        /* (a) one group */
        one_object = group_object(arg_one);
        for (size_t i = 0; i < 3; i++) {
                char file[32];
                snprintf(file, sizeof(file), "%s.pressure", resources[i]);
                one_fd[i] = open_file(arg_one, file);
        }

        /* Correctness first: through freezerd == direct, within one update. */
        for (size_t i = 0; i < 3; i++) {
                char what[64];

                if (read_fd(one_fd[i], &before) < 0)
                        die("parsing a pressure file", -EBADMSG);
                if (bus_get(bus, one_object, properties[i], &rd) < 0)
                        die("Get", -EBADMSG);
                read_fd(one_fd[i], &after);
                snprintf(what, sizeof(what), "Get %s of %s", properties[i], arg_one);
                check_between(what, &before, &rd, &after);

                read_fd(one_fd[i], &before);
                lib_get(f, arg_one, (freezer_resource) i, &rd);
                read_fd(one_fd[i], &after);
                snprintf(what, sizeof(what), "freezer_get_pressure %s of %s", resources[i], arg_one);
                check_between(what, &before, &rd, &after);
        }
        read_fd(one_fd[0], &before);
        if (bus_get_all(bus, one_object, all) < 0)
                die("GetAll without the three pressures", -ENODATA);
        read_fd(one_fd[0], &after);
        check_between("GetAll CpuPressure", &before, &all[0], &after);

        series_init(&a[0], "direct", arg_rounds);
        series_init(&a[1], "get", arg_rounds);
        series_init(&a[2], "getall", arg_rounds);
        series_init(&a[3], "libfreezer", arg_rounds);
        series_init(&a[4], "get-state", arg_rounds);
        warm = arg_rounds / 10 + 1;
        for (unsigned round = 0; round < warm + arg_rounds; round++) {
                bool timed = round >= warm;

                for (size_t m = 0; m < ELEMENTSOF(a); m++) {
                        uint64_t t0, t1, d0 = 0, b0 = 0;

                        if (timed && m > 0) {
                                d0 = cpu_ns(arg_daemon_pid);
                                b0 = cpu_ns(arg_bus_pid);
                        }
                        t0 = now_ns();
                        switch (m) {
                        case 0:
                                for (size_t i = 0; i < 3; i++)
                                        if (read_fd(one_fd[i], &rd) < 0)
                                                die("read", -EBADMSG);
                                break;
                        case 1:
                                for (size_t i = 0; i < 3; i++)
                                        bus_get(bus, one_object, properties[i], &rd);
                                break;
                        case 2:
                                if (bus_get_all(bus, one_object, all) < 0)
                                        die("GetAll", -ENODATA);
                                break;
                        case 3:
                                for (size_t i = 0; i < 3; i++)
                                        lib_get(f, arg_one, (freezer_resource) i, &rd);
                                break;
                        case 4:
                                for (size_t i = 0; i < 3; i++)
                                        bus_get_state(bus, one_object);
                                break;
                        }
                        t1 = now_ns();
                        if (!timed)
                                continue;
                        a[m].v[a[m].n++] = (double) (t1 - t0) / 1000.0;
                        if (m > 0) {
                                a[m].daemon_ns += cpu_ns(arg_daemon_pid) - d0;
                                a[m].bus_ns += cpu_ns(arg_bus_pid) - b0;
                                a[m].reads += m == 2 ? 1 : 3;
                        }
                }
        }

        /* (b) n groups */
        objects = calloc(arg_n, sizeof(char *));
        paths = calloc(arg_n, sizeof(char *));
        many_fd = calloc(arg_n, sizeof(int));
        if (!objects || !paths || !many_fd)
                die("calloc", -ENOMEM);
        for (unsigned i = 0; i < arg_n; i++) {
                if (asprintf(&paths[i], "%s/g%u", arg_many, i) < 0)
                        die("asprintf", -ENOMEM);
                objects[i] = group_object(paths[i]);
                many_fd[i] = open_file(paths[i], "cpu.pressure");
        }

        /* The first pass through freezerd: it opens every file. */
        series_init(&first, "get-first-pass", 1);
        {
                uint64_t t0, d0 = cpu_ns(arg_daemon_pid), b0 = cpu_ns(arg_bus_pid);

                t0 = now_ns();
                for (unsigned i = 0; i < arg_n; i++)
                        bus_get(bus, objects[i], "CpuPressure", &rd);
                first.v[first.n++] = (double) (now_ns() - t0) / 1000.0;
                first.daemon_ns = cpu_ns(arg_daemon_pid) - d0;
                first.bus_ns = cpu_ns(arg_bus_pid) - b0;
                first.reads = arg_n;
        }
        /* and one check of the last group */
        read_fd(many_fd[arg_n - 1], &before);
        bus_get(bus, objects[arg_n - 1], "CpuPressure", &rd);
        read_fd(many_fd[arg_n - 1], &after);
        check_between("Get CpuPressure of the last group", &before, &rd, &after);

        series_init(&b[0], "direct", arg_rounds_many);
        series_init(&b[1], "direct-open", arg_rounds_many);
        series_init(&b[2], "get", arg_rounds_many);
        series_init(&b[3], "get-pipelined", arg_rounds_many);
        series_init(&b[4], "libfreezer", arg_rounds_many);
        for (unsigned round = 0; round < 1 + arg_rounds_many; round++) {
                bool timed = round >= 1;

                for (size_t m = 0; m < ELEMENTSOF(b); m++) {
                        uint64_t t0, t1, d0 = 0, b0 = 0;

                        if (timed && m >= 2) {
                                d0 = cpu_ns(arg_daemon_pid);
                                b0 = cpu_ns(arg_bus_pid);
                        }
                        t0 = now_ns();
                        switch (m) {
                        case 0:
                                for (unsigned i = 0; i < arg_n; i++)
                                        if (read_fd(many_fd[i], &rd) < 0)
                                                die("read", -EBADMSG);
                                break;
                        case 1:
                                for (unsigned i = 0; i < arg_n; i++) {
                                        char *p = group_file(paths[i], "cpu.pressure");
                                        int fd = open(p, O_RDONLY | O_CLOEXEC);

                                        if (fd < 0)
                                                die(p, -errno);
                                        if (read_fd(fd, &rd) < 0)
                                                die("read", -EBADMSG);
                                        close(fd);
                                        free(p);
                                }
                                break;
                        case 2:
                                for (unsigned i = 0; i < arg_n; i++)
                                        bus_get(bus, objects[i], "CpuPressure", &rd);
                                break;
                        case 3:
                                bus_get_pipelined(bus, objects, arg_n);
                                break;
                        case 4:
                                for (unsigned i = 0; i < arg_n; i++)
                                        lib_get(f, paths[i], FREEZER_RESOURCE_CPU, &rd);
                                break;
                        }
                        t1 = now_ns();
                        if (!timed)
                                continue;
                        b[m].v[b[m].n++] = (double) (t1 - t0) / 1000.0;
                        if (m >= 2) {
                                b[m].daemon_ns += cpu_ns(arg_daemon_pid) - d0;
                                b[m].bus_ns += cpu_ns(arg_bus_pid) - b0;
                                b[m].reads += arg_n;
                        }
                }
        }

        printf("{\n  \"n\": %u, \"rounds\": %u, \"rounds_many\": %u, \"window\": %u,\n", arg_n, arg_rounds,
               arg_rounds_many, arg_window);
        printf("  \"one\": {\n");
        for (size_t m = 0; m < ELEMENTSOF(a); m++)
                print_series(&a[m], m + 1 == ELEMENTSOF(a));
        printf("  },\n  \"many\": {\n");
        print_series(&first, false);
        for (size_t m = 0; m < ELEMENTSOF(b); m++)
                print_series(&b[m], m + 1 == ELEMENTSOF(b));
        printf("  },\n");
        printf("  \"ratio_one\": {\"get\": %.2f, \"getall\": %.2f, \"libfreezer\": %.2f, \"get-state\": %.2f},\n",
               median_of(&a[1]) / median_of(&a[0]), median_of(&a[2]) / median_of(&a[0]),
               median_of(&a[3]) / median_of(&a[0]), median_of(&a[4]) / median_of(&a[0]));
        printf("  \"ratio_many\": {\"direct-open\": %.2f, \"get\": %.2f, \"get-pipelined\": %.2f, "
               "\"libfreezer\": %.2f, \"get-first-pass\": %.2f}\n}\n",
               median_of(&b[1]) / median_of(&b[0]), median_of(&b[2]) / median_of(&b[0]),
               median_of(&b[3]) / median_of(&b[0]), median_of(&b[4]) / median_of(&b[0]),
               first.v[0] / median_of(&b[0]));

        for (unsigned i = 0; i < arg_n; i++) {
                close(many_fd[i]);
                free(objects[i]);
                free(paths[i]);
        }
        free(objects);
        free(paths);
        free(many_fd);
        for (size_t i = 0; i < 3; i++)
                close(one_fd[i]);
        for (size_t m = 0; m < ELEMENTSOF(a); m++)
                free(a[m].v);
        for (size_t m = 0; m < ELEMENTSOF(b); m++)
                free(b[m].v);
        free(first.v);
        free(one_object);
        freezer_close(f);
        sd_bus_flush_close_unref(bus);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
