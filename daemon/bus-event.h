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

int bus_event_new(sd_bus *bus, struct event_base *base, BusEvent **ret);
/* The connection is a peer's (the private socket): when processing it fails
 * (the peer left, or broke the protocol) it goes idle, for its owner to free
 * outside of the dispatch.  Otherwise (the daemon's bus) a broken connection
 * ends the loop (event_base_loopbreak()). */
void bus_event_set_peer(BusEvent *be);
/* The peer's socket is fd for sd-bus's input and out_fd, a dup of it, for its
 * output (sd_bus_set_fd(bus, fd, out_fd)).  Once the peer closed its end,
 * dispatching points out_fd at /dev/null: sd-bus fails a write the peer cannot
 * read (EPIPE) by dropping the connection, with the calls the peer sent that
 * it had not read yet; without that write, it reads them to the end.  Once a
 * peer that shut only its sending side has nothing more to read while replies
 * are due (bus_event_call_held(), or queued), fd points at a socket that never
 * ends until they are out: sd-bus would close at the end of its input. */
void bus_event_set_peer_fds(BusEvent *be, int fd, int out_fd);
/* Before each message a dispatch handles (unless the peer closed its end):
 * when output_full(userdata) says true, the dispatch stops there (what is left
 * waits for a later turn).  The private socket's bound on the memory of what
 * waits for its peers. */
void bus_event_set_output_check(BusEvent *be, bool (*output_full)(void *userdata), void *userdata);

/* A call of the peer whose reply is deferred (add), or its reply sent
 * (!add): while any is left, a peer that shut its sending side keeps its
 * connection, to get them (sd-bus would close it at the end of its input). */
void bus_event_call_held(BusEvent *be, bool add);
/* The peer's last sign of life (CLOCK_MONOTONIC µs; 0 if none): when its
 * socket last woke the loop, or now if it holds input not read yet. */
uint64_t bus_event_heard_usec(const BusEvent *be);
bool bus_event_is_broken(const BusEvent *be);
/* Why processing the daemon's bus failed and ended the loop (negative errno),
 * 0 if it did not: not logged above debug level, for the owner to say once
 * that it exits, and why. */
int bus_event_error(const BusEvent *be);
/* The peer closed its end: what is queued for it goes to /dev/null at its
 * next dispatch (bus_event_set_peer_fds()). */
bool bus_event_is_deaf(const BusEvent *be);
/* A peer's fd and out_fd (bus_event_set_peer_fds()), -1 once sd-bus closed
 * them: what sd-bus reads and writes, to poll many connections at once. */
void bus_event_get_peer_fds(const BusEvent *be, int *ret_fd, int *ret_out_fd);
BusEvent *bus_event_free(BusEvent *be);
/* Re-arm fd events and the timer (sd_bus_get_events(), sd_bus_get_timeout()).
 * -ENOTCONN once a peer's connection broke. */
int bus_event_prepare(BusEvent *be);

/* How long a shutdown gives its connections' flushes (bus_shutdown_flush()):
 * for the bus, and once for all private connections together. */
#define BUS_FLUSH_TIMEOUT_USEC (100 * USEC_PER_MSEC)

/* At shutdown, before the objects' userdata is freed: sends what is queued
 * (the errors of the calls that waited) and refuses, with Cancelled "freezerd
 * is shutting down; nothing was done", every call that came meanwhile, until
 * nothing is left to read or write or deadline (CLOCK_MONOTONIC µs) passed: a
 * peer that does not read, or goes on sending, does not hold the daemon up.
 * With !wait it returns rather than wait for the socket to take more: a caller
 * with many connections first gives each what its socket takes at once.
 * Other messages are dispatched as usual (signals to their matches). */
void bus_shutdown_flush(sd_bus *bus, uint64_t deadline, bool wait);
/* The same, refusing the calls with refusal (which outlives the call). */
void bus_refusing_flush(sd_bus *bus, uint64_t deadline, bool wait, const sd_bus_error *refusal);

/* Whether messages wait in the connection's queue, unsent (the socket full). */
bool bus_output_pending(sd_bus *bus);
