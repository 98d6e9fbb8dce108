/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Raw sd-bus connections of the benchmarks (their calls through libfreezer
 * have handles of their own), dying on failure.  Header-only, after
 * bench-util.h. */

#include <stdbool.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bench-util.h"

/* To address: a bus (bus_client) or a peer; what names it in the message. */
static inline sd_bus *bench_connect(const char *address, bool bus_client, const char *what) {
        sd_bus *b;
        int r = sd_bus_new(&b);

        if (r >= 0)
                r = sd_bus_set_address(b, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(b, bus_client);
        if (r >= 0)
                r = sd_bus_start(b);
        if (r < 0)
                die("cannot connect to %s: %s", what, strerror(-r));
        return b;
}

/* The bus at address. */
static inline sd_bus *bench_connect_bus(const char *address) {
        return bench_connect(address, true, address);
}

/* freezerd's private socket at path: a direct connection (no Hello, no match
 * rules: freezerd sends what it subscribed to). */
static inline sd_bus *bench_connect_private(const char *path) {
        char *a;
        sd_bus *b;

        if (asprintf(&a, "unix:path=%s", path) < 0)
                die("out of memory");
        b = bench_connect(a, false, path);
        free(a);
        return b;
}
