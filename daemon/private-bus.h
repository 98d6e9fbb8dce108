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
 * with the same access rules.  Signals: a peer-to-peer connection has no match
 * rules to route them by, so a connection gets none until it calls
 * Subscribe(), SubscribeGroups() or SubscribeGroupStates(), as systemd sends signals on its private
 * buses.  A subscribed connection then gets what that subscription brings on
 * the bus, plus what the bus broadcasts to everyone (InterfacesAdded/Removed,
 * the Manager's PropertiesChanged); each call needs its own Unsubscribe*(),
 * and closing the connection ends them all.  It saves the dbus-daemon hop on
 * the way from a kernel event to the client.  Pressure triggers belong to the
 * connection: their signals go to it, and they end when it closes
 * (manager_bus_connection_closed()).  */

#include <event2/event.h>
#include <systemd/sd-bus.h>

#include "manager.h"

typedef struct PrivateBus PrivateBus;

/* At most this many private connections at once; more are closed at accept
 * (each costs an fd, and groups need theirs). */
#define PRIVATE_BUS_CONNECTIONS_MAX 256
/* A connection that has not finished its authentication (sd-bus's SASL
 * exchange) this long after it was accepted is closed: until then it holds
 * one of those slots (sd-bus's own limit is 90 s). */
#define PRIVATE_BUS_AUTH_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* Of those, the first is logged, then at most one line this often, with the
 * count of the others. */
#define PRIVATE_BUS_AUTH_LOG_USEC (5 * USEC_PER_SEC)

/* Listen on path (a stale socket there is replaced).  The caller logs. */
int private_bus_new(Manager *m, struct event_base *base, const char *path, PrivateBus **ret);
/* Before every loop turn (after the signals of the last one went out): drop
 * the connections that ended, those with more than PRIVATE_BUS_QUEUE_MAX
 * messages unread, and while freezerd's heap is PRIVATE_BUS_QUEUED_HEAP_MAX
 * above what it held before messages began to wait, the one with the most
 * (see heap_above_floor() in private-bus.c); re-arm the rest. */
#define PRIVATE_BUS_QUEUE_MAX (64u * 1024u) /* messages queued for one connection */
#define PRIVATE_BUS_QUEUED_HEAP_MAX ((size_t) 64 * 1024 * 1024) /* bytes, all connections together */
#define PRIVATE_BUS_MEASURE_STEP 8u /* messages of lagging connections between two heap measures */
void private_bus_prepare(PrivateBus *pb);
/* Close the listener (removing its file) and every connection, after sending
 * what is queued on each. */
PrivateBus *private_bus_free(PrivateBus *pb);

/* A Subscribe*() of the private connection bus, or with add=false its
 * Unsubscribe*().  -ENOENT: bus is none of ours; -ESRCH: unsubscribing what
 * was not subscribed. */
int private_bus_subscribe(PrivateBus *pb, sd_bus *bus, Subscription kind, bool add);
/* A call on bus (any connection) whose reply is deferred, or with
 * add=false its reply sent: a private connection whose peer shut its
 * sending side is closed once none is left (bus_event_call_held()). */
void private_bus_call_held(PrivateBus *pb, sd_bus_message *call, bool add);
/* The subscribed connections, for sending signals: start with *iter = NULL;
 * NULL at the end.  *ret_kinds: the bits 1 << Subscription it subscribed to. */
sd_bus *private_bus_next_subscriber(PrivateBus *pb, void **iter, unsigned *ret_kinds);
