/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-signal-floor: what dbus-daemon itself takes to carry a storm of
 * per-object PropertiesChanged (issue 6), without freezerd.
 *
 * A sender connection emits --count PropertiesChanged signals, one per object
 * (/org/freezerd/Freezer1/group/_2ft0/... paths as freezerd's, the Group
 * interface, FreezerState "frozen-by-parent" and Frozen true changed, as
 * freezerd sends for each group below a frozen one), as fast as sd-bus
 * sends them, from a thread of its own; a receiver connection matching them
 * reads each one (the interface and the changed properties, as a client
 * following FreezerState does).  Reported per repetition: the time from the
 * first send to the last signal read, and the sender's own loop until
 * everything was flushed, and with --bus-pid dbus-daemon's CPU time (from
 * /proc/PID/schedstat) over the repetition.  This is the floor under the "a client subscribed"
 * rows of run-scale's storm: sd-bus writes one message per sendmsg() and
 * dbus-daemon routes each one, whoever sends them.
 *
 * usage: bench-signal-floor --address=ADDR [--bus-pid=PID] [--count=N] [--repeat=K] [--json]
 * Exit status 0, 1 on a failure, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bench-bus.h"
#include "bench-util.h"

#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define GROUP_IFACE "org.freezerd.Freezer1.Group"
#define DEADLINE_NS (60ULL * 1000000000ULL)
#define FANOUT 100

static struct {
        const char *address;
        int bus_pid;
        unsigned count, repeat;
        bool json;
        char **objects;
} B = { .count = 10100, .repeat = 5 };

typedef struct Sender {
        sd_bus *bus;
        uint64_t t_start, t_flushed;
} Sender;

/* The objects of run-scale's tree: t<i> and t<i>/c<j>, FANOUT children each. */
static void make_objects(void) {
        B.objects = calloc(B.count, sizeof *B.objects);
        if (!B.objects)
                die("out of memory");
        for (unsigned k = 0; k < B.count; k++) {
                unsigned top = k / (FANOUT + 1), child = k % (FANOUT + 1);
                char path[64];
                if (child == 0)
                        snprintf(path, sizeof path, "/t%u", top);
                else
                        snprintf(path, sizeof path, "/t%u/c%u", top, child - 1);
                int r = sd_bus_path_encode(GROUP_PREFIX, path, &B.objects[k]);
                if (r < 0)
                        die("sd_bus_path_encode: %s", strerror(-r));
        }
}

static void *sender_main(void *arg) {
        Sender *s = arg;
        int r;

        s->t_start = now_ns();
        for (unsigned k = 0; k < B.count; k++) {
                sd_bus_message *m = NULL;
                r = sd_bus_message_new_signal(s->bus, &m, B.objects[k], "org.freedesktop.DBus.Properties",
                                              "PropertiesChanged");
                if (r >= 0)
                        r = sd_bus_message_append(m, "sa{sv}as", GROUP_IFACE, 2, "FreezerState", "s",
                                                  "frozen-by-parent", "Frozen", "b", 1, 0);
                if (r >= 0)
                        r = sd_bus_send(s->bus, m, NULL);
                sd_bus_message_unref(m);
                if (r < 0)
                        die("sending signal %u: %s", k, strerror(-r));
        }
        r = sd_bus_flush(s->bus);
        if (r < 0)
                die("sd_bus_flush: %s", strerror(-r));
        s->t_flushed = now_ns();
        return NULL;
}

/* Reads one signal as a client following FreezerState does. */
static bool read_signal(sd_bus_message *m) {
        const char *iface, *name;
        int r;

        if (!sd_bus_message_is_signal(m, "org.freedesktop.DBus.Properties", "PropertiesChanged"))
                return false;
        r = sd_bus_message_read(m, "s", &iface);
        if (r < 0 || strcmp(iface, GROUP_IFACE) != 0)
                die("unexpected PropertiesChanged");
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                die("reading PropertiesChanged: %s", strerror(-r));
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &name);
                if (r >= 0 && strcmp(name, "FreezerState") == 0) {
                        const char *v;
                        r = sd_bus_message_read(m, "v", "s", &v);
                } else if (r >= 0)
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        die("reading PropertiesChanged: %s", strerror(-r));
        }
        return true;
}

/* One repetition: returns the ns from the first send to the last signal read. */
static uint64_t run_once(sd_bus *receiver, uint64_t *ret_send_ns) {
        Sender s = { .bus = bench_connect_bus(B.address) };
        const char *unique;
        char *match;
        sd_bus_slot *slot = NULL;
        pthread_t thread;
        unsigned seen = 0;
        uint64_t t_last = 0, deadline;
        int r;

        r = sd_bus_get_unique_name(s.bus, &unique);
        if (r < 0)
                die("sd_bus_get_unique_name: %s", strerror(-r));
        if (asprintf(&match,
                     "type='signal',sender='%s',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'",
                     unique) < 0)
                die("out of memory");
        r = sd_bus_add_match(receiver, &slot, match, NULL, NULL); /* synchronous: in force on return */
        if (r < 0)
                die("AddMatch: %s", strerror(-r));
        free(match);

        r = pthread_create(&thread, NULL, sender_main, &s);
        if (r != 0)
                die("pthread_create: %s", strerror(r));
        deadline = now_ns() + DEADLINE_NS;
        while (seen < B.count) {
                sd_bus_message *m = NULL;
                r = sd_bus_process(receiver, &m);
                if (r < 0)
                        die("sd_bus_process: %s", strerror(-r));
                if (m) {
                        if (read_signal(m)) {
                                seen++;
                                t_last = now_ns();
                        }
                        sd_bus_message_unref(m);
                }
                if (r > 0)
                        continue;
                uint64_t now = now_ns();
                if (now >= deadline)
                        die("only %u of %u signals arrived in time", seen, B.count);
                r = sd_bus_wait(receiver, (deadline - now) / 1000);
                if (r < 0 && r != -EINTR)
                        die("sd_bus_wait: %s", strerror(-r));
        }
        pthread_join(thread, NULL);
        sd_bus_slot_unref(slot);
        sd_bus_flush_close_unref(s.bus);
        *ret_send_ns = s.t_flushed - s.t_start;
        return t_last - s.t_start;
}

/* A process's CPU time in ns (0 without --bus-pid). */
static uint64_t cpu_ns(int pid) {
        char path[64];
        unsigned long long v = 0;
        FILE *f;

        if (pid <= 0)
                return 0;
        snprintf(path, sizeof path, "/proc/%d/schedstat", pid);
        f = fopen(path, "re");
        if (!f || fscanf(f, "%llu", &v) != 1)
                die("cannot read %s: %m", path);
        fclose(f);
        return v;
}

static void usage(FILE *f) {
        fputs("usage: bench-signal-floor --address=ADDR [--bus-pid=PID] [--count=N] [--repeat=K] [--json]\n", f);
}

int main(int argc, char *argv[]) {
        enum { ARG_ADDRESS = 0x100, ARG_BUS_PID, ARG_COUNT, ARG_REPEAT, ARG_JSON };
        static const struct option options[] = {
                { "address", required_argument, NULL, ARG_ADDRESS },
                { "bus-pid", required_argument, NULL, ARG_BUS_PID },
                { "count", required_argument, NULL, ARG_COUNT },
                { "repeat", required_argument, NULL, ARG_REPEAT },
                { "json", no_argument, NULL, ARG_JSON },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint64_t *total, *send, *bus_cpu;
        sd_bus *receiver;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_ADDRESS: B.address = optarg; break;
                case ARG_BUS_PID: B.bus_pid = (int) parse_ulong(optarg, "--bus-pid", 1U << 30); break;
                case ARG_COUNT: B.count = (unsigned) parse_ulong(optarg, "--count", 1000000); break;
                case ARG_REPEAT: B.repeat = (unsigned) parse_ulong(optarg, "--repeat", 1000); break;
                case ARG_JSON: B.json = true; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        if (!B.address || optind < argc) {
                usage(stderr);
                return 2;
        }

        make_objects();
        total = calloc(B.repeat, sizeof *total);
        send = calloc(B.repeat, sizeof *send);
        bus_cpu = calloc(B.repeat, sizeof *bus_cpu);
        if (!total || !send || !bus_cpu)
                die("out of memory");
        receiver = bench_connect_bus(B.address);
        for (unsigned i = 0; i < B.repeat; i++) {
                uint64_t c0 = cpu_ns(B.bus_pid);
                total[i] = run_once(receiver, &send[i]);
                bus_cpu[i] = cpu_ns(B.bus_pid) - c0;
        }

        if (B.json) {
                printf("{\"count\": %u, \"total_ms\": [", B.count);
                for (unsigned i = 0; i < B.repeat; i++)
                        printf("%s%.1f", i ? ", " : "", (double) total[i] / 1e6);
                printf("], \"send_ms\": [");
                for (unsigned i = 0; i < B.repeat; i++)
                        printf("%s%.1f", i ? ", " : "", (double) send[i] / 1e6);
                printf("]");
                if (B.bus_pid > 0) {
                        printf(", \"bus_cpu_ms\": [");
                        for (unsigned i = 0; i < B.repeat; i++)
                                printf("%s%.1f", i ? ", " : "", (double) bus_cpu[i] / 1e6);
                        printf("]");
                }
                printf("}\n");
        } else {
                qsort(total, B.repeat, sizeof *total, cmp_u64);
                qsort(send, B.repeat, sizeof *send, cmp_u64);
                qsort(bus_cpu, B.repeat, sizeof *bus_cpu, cmp_u64);
                printf("%u PropertiesChanged through the bus: until the last read: median %.1f ms (%.1f-%.1f); "
                       "the sender's loop: median %.1f ms",
                       B.count, (double) total[B.repeat / 2] / 1e6, (double) total[0] / 1e6,
                       (double) total[B.repeat - 1] / 1e6, (double) send[B.repeat / 2] / 1e6);
                if (B.bus_pid > 0)
                        printf("; dbus-daemon's CPU: median %.1f ms", (double) bus_cpu[B.repeat / 2] / 1e6);
                printf("\n");
        }
        sd_bus_flush_close_unref(receiver);
        for (unsigned k = 0; k < B.count; k++)
                free(B.objects[k]);
        free(B.objects);
        free(total);
        free(send);
        free(bus_cpu);
        return 0;
}
