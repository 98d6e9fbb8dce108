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

typedef struct BusEvent BusEvent;

int bus_event_new(sd_bus *bus, struct event_base *base, BusEvent **ret);
BusEvent *bus_event_free(BusEvent *be);
/* Dispatch everything sd-bus has queued, then re-arm fd events and the timer. */
int bus_event_prepare(BusEvent *be);
