/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Drives an sd-bus connection from a libevent loop.
 *
 * libevent 2.1 has no "prepare" hook, so the owner runs
 *     for (;;) { bus_event_prepare(be); event_base_loop(base, EVLOOP_ONCE); }
 * and bus_event_prepare() re-arms the fd's events (sd_bus_get_events) and the
 * bus's own timeout (sd_bus_get_timeout, an absolute CLOCK_MONOTONIC time)
 * before every turn. */

#include <event2/event.h>
#include <systemd/sd-bus.h>

#include <stdbool.h>

typedef struct BusEvent BusEvent;

/* Called once when processing the connection fails (the peer left, or broke
 * the protocol); the connection is idle from then on, for its owner to free
 * outside of the dispatch. */
typedef void (*bus_event_broken_t)(BusEvent *be, int error, void *userdata);

int bus_event_new(sd_bus *bus, struct event_base *base, BusEvent **ret);
/* Without a callback (the daemon's bus), a broken connection ends the loop
 * (event_base_loopbreak()). */
void bus_event_set_broken_callback(BusEvent *be, bus_event_broken_t cb, void *userdata);
bool bus_event_is_broken(const BusEvent *be);
BusEvent *bus_event_free(BusEvent *be);
/* Re-arm fd events and the timer (sd_bus_get_events(), sd_bus_get_timeout()).
 * -ENOTCONN once the connection broke (with a broken callback set). */
int bus_event_prepare(BusEvent *be);
