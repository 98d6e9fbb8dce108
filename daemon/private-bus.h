/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The private socket: the API without dbus-daemon, for root.
 *
 * Like systemd's /run/systemd/private, which systemctl uses when it runs as
 * root: a unix socket (mode 0600) on which every connection is a
 * peer-to-peer D-Bus connection to freezerd itself.  A call skips the bus
 * daemon's two forwarding hops, the Hello round trip of a new client and the
 * daemon's round trip to learn the caller's uid (the socket's SO_PEERCRED
 * says it), which is most of a one-shot `freezectl freeze`.
 *
 * Its connections get the same objects, methods and properties as the bus,
 * with the same access rules, but no signals: a peer-to-peer connection has no
 * match rules to route them by.  Subscribe() and pressure triggers answer
 * NotSupported there; clients that follow changes use the bus. */

#include <event2/event.h>

#include "manager.h"

typedef struct PrivateBus PrivateBus;

/* At most this many private connections at once; more are closed at accept
 * (each costs an fd, and groups need theirs). */
#define PRIVATE_BUS_CONNECTIONS_MAX 256

/* Listen on path (a stale socket there is replaced).  The caller logs. */
int private_bus_new(Manager *m, struct event_base *base, const char *path, PrivateBus **ret);
/* Before every loop turn: drop the connections that ended, re-arm the rest. */
void private_bus_prepare(PrivateBus *pb);
/* Close the listener (removing its file) and every connection, after sending
 * what is queued on each. */
PrivateBus *private_bus_free(PrivateBus *pb);
unsigned private_bus_connections(const PrivateBus *pb);
