/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bus-errors.h"
#include "bus-event.h"
#include "log.h"
#include "util.h"

struct BusEvent {
        sd_bus *bus;
        struct event_base *base;
        struct event *io;
        struct event *timer;
        short io_events; /* what io is armed for, to avoid needless re-adds */
        bool io_armed;
        uint64_t timer_until; /* absolute; UINT64_MAX when not armed */
        bool peer;   /* a connection of the private socket: its failure is the peer leaving */
        bool broken; /* a peer's connection failed: idle from then on */
        int fd, out_fd; /* a peer's socket and sd-bus's output fd, -1 when not known */
        bool deaf;      /* out_fd points at /dev/null: the peer closed its end */
        bool held;      /* fd points at a socket that never ends: see peer_check_hangup() */
        unsigned held_calls; /* the peer's calls whose replies are deferred (bus_event_call_held()) */
        uint64_t io_usec;    /* when its socket last woke us (CLOCK_MONOTONIC), 0 never */
        bool (*output_full)(void *userdata); /* bus_event_set_output_check() */
        void *output_userdata;
        int error; /* the daemon's bus: why processing it failed (negative errno), 0 if it did not */
};

/* How long a dispatch goes on before it looks for a stop request. */
#define STOP_CHECK_USEC 1000

/* sd_bus_process() calls in one dispatch: then the loop's other events have
 * their turn (the socket is still readable, or what sd-bus read already makes
 * its timeout 0: bus_event_prepare()).  Without a bound, one client that
 * sends calls as fast as freezerd answers them kept freezerd in its dispatch:
 * the bus, the other connections and the kernel's events waited for ever. */
#define DISPATCH_MAX 64

/* SIGTERM or SIGINT waiting to be read (main.c blocks them and reads them
 * from a signalfd, ahead of everything else). */
static bool stop_requested(void) {
        sigset_t pending;

        return sigpending(&pending) == 0 && (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1);
}

/* The io event goes: libevent's epoll watches a file by the fd's number and
 * the file it had when added, so one that stayed added while dup3() put
 * another file at that number would go on reporting the old one. */
static void io_drop(BusEvent *be) {
        if (be->io)
                event_del(be->io); /* freed by the next bus_event_prepare(), not in its callback */
        be->io_armed = false;
}

/* Let sd-bus read the peer's socket again (it was held: see below). */
static void peer_release(BusEvent *be) {
        io_drop(be);
        if (dup3(be->out_fd, be->fd, O_CLOEXEC) < 0) {
                /* fd still never ends: without the end of its input sd-bus
                 * would keep the connection as long as freezerd runs. */
                log_warning_errno(errno, "Cannot give a private connection its socket back, closing it: %m");
                be->broken = true;
                evtimer_del(be->timer);
                return;
        }
        be->held = false;
        log_debug("A private connection that shut its sending side has its replies: closing it.");
}

/* A peer that shut its sending side (shutdown(SHUT_WR)) and reads its
 * replies: sd-bus ends the connection as soon as it reads the end of the
 * input, with the replies still queued and those of the calls that wait (a
 * Freeze waiting for the kernel) never sent.  So once everything the peer
 * sent is read (FIONREAD 0) while some of its replies are still to come or to
 * be written, sd-bus's input fd is pointed at a socket that is never readable
 * and never ends, and given back (peer_release()) when none is left
 * (bus_event_prepare()): sd-bus then reads the end and closes.  A peer that
 * never reads is held as long as one that does not shut down: until its
 * calls ended (at their timeouts) and their replies were written. */
static void peer_hold(BusEvent *be) {
        int n = 0, never;

        if (be->held_calls == 0 && !bus_output_pending(be->bus))
                return;
        if (ioctl(be->fd, FIONREAD, &n) < 0 || n > 0)
                return; /* calls still to read: read on */
        never = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); /* unbound: nothing comes */
        if (never < 0) {
                log_debug_errno(errno, "Cannot hold a private connection that shut its sending side: %m");
                return; /* as before: sd-bus reads the end and closes */
        }
        io_drop(be);
        if (dup3(never, be->fd, O_CLOEXEC) < 0)
                log_debug_errno(errno, "Cannot hold a private connection that shut its sending side: %m");
        else {
                be->held = true;
                log_debug("A private connection shut its sending side: holding it until its replies are sent.");
        }
        close(never);
}

/* A client that sends calls without waiting for their replies and then
 * closes its socket: what it sent is still there to read, but the first reply
 * freezerd writes fails (EPIPE), and sd-bus drops the connection with the
 * calls it had not read yet (the peer that closed can read nothing anyway).
 * As dbus-broker does when its output hangs up, freezerd then stops writing
 * and reads on: the output goes to /dev/null, and sd-bus ends the connection
 * when it reads the end of the input.  POLLHUP: the peer shut both ways (a
 * peer that shut only its sending side still reads its replies:
 * peer_hold()).  Looked at before each message: a peer that closes while
 * freezerd answers one loses the rest as before. */
static void peer_check_hangup(BusEvent *be) {
        struct pollfd p = { .events = POLLRDHUP };
        int null;

        if (be->deaf || be->fd < 0 || be->out_fd < 0)
                return;
        /* While held, fd is not the socket: out_fd is. */
        p.fd = be->held ? be->out_fd : be->fd;
        if (poll(&p, 1, 0) <= 0)
                return;
        if (!(p.revents & POLLHUP)) {
                if ((p.revents & POLLRDHUP) && !be->held)
                        peer_hold(be);
                return;
        }
        if (be->held) {
                peer_release(be); /* to read the rest, to its end */
                if (be->broken)
                        return;
        }
        null = open("/dev/null", O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (null < 0) {
                log_debug_errno(errno, "Cannot open /dev/null for a private connection that closed: %m");
                return; /* as before: its first reply ends it */
        }
        if (dup3(null, be->out_fd, O_CLOEXEC) < 0)
                log_debug_errno(errno, "Cannot point a private connection that closed at /dev/null: %m");
        else {
                be->deaf = true;
                log_debug("A private connection closed: carrying out what it sent, without replies.");
        }
        close(null);
}

/* A peer's connection failed, or sd-bus ended it: idle from now on, for its
 * owner to free at its next bus_event_prepare().  Its io event goes at once:
 * once sd-bus closed fd and out_fd, the loop turn that goes on may give their
 * numbers to other files (the next connection's accept4()), and libevent,
 * which counts events by the fd's number, would not add one of those to epoll
 * while this one is there (the new connection's socket would never wake the
 * loop).  Nor are they looked at again (peer_check_hangup(), FIONREAD). */
static void peer_broken(BusEvent *be) {
        be->broken = true;
        if (be->io)
                event_del(be->io);
        be->io_armed = false;
        evtimer_del(be->timer);
        be->fd = be->out_fd = -1;
}

static void bus_dispatch(BusEvent *be) {
        uint64_t checked = now_usec();

        if (be->broken)
                return;
        for (unsigned i = 0; i < DISPATCH_MAX; i++) {
                uint64_t n = now_usec();
                int r;

                if (be->peer) {
                        peer_check_hangup(be);
                        if (be->broken)
                                return;
                }

                /* A long run of messages (a flood, or freezerd stopped and
                 * continued in the middle of one) gives way to a stop: the
                 * rest waits for the loop, which handles the signal first,
                 * and the shutdown refuses them.  Looked at once a
                 * millisecond, not per message. */
                if (n - checked >= STOP_CHECK_USEC) {
                        if (stop_requested())
                                return;
                        checked = n;
                }
                /* Its owner's bound on what waits for the peer: the rest
                 * waits for a later turn, or goes with the connection. */
                if (be->output_full && !be->deaf && be->output_full(be->output_userdata))
                        return;
                r = sd_bus_process(be->bus, NULL);
                if (r < 0) {
                        if (be->peer) {
                                /* Usually the client's exit: its owner drops it at the next prepare. */
                                log_debug_errno(r, "A private connection ended: %m");
                                peer_broken(be);
                                return;
                        }
                        /* A broken connection ends the daemon: the loop sees no
                         * more events.  Its owner logs why, once, as it exits
                         * (bus_event_error()). */
                        log_debug_errno(r, "Processing the bus failed: %m");
                        be->error = r;
                        event_base_loopbreak(be->base);
                        return;
                }
                /* The end of the peer's input, or a write it cannot take:
                 * sd-bus returns 1 as it begins to close, and its next call
                 * closes fd and out_fd (returning 1 again), before it fails.
                 * Those calls may not come in this dispatch (a stop request,
                 * DISPATCH_MAX), and the loop turn goes on. */
                if (be->peer && sd_bus_is_open(be->bus) <= 0) {
                        log_debug("A private connection ended.");
                        peer_broken(be);
                        return;
                }
                if (r == 0)
                        return;
        }
}

static void on_io(evutil_socket_t fd, short what, void *userdata) {
        BusEvent *be = userdata;
        be->io_usec = now_usec();
        bus_dispatch(be);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        BusEvent *be = userdata;
        be->timer_until = UINT64_MAX;
        bus_dispatch(be);
}

int bus_event_new(sd_bus *bus, struct event_base *base, BusEvent **ret) {
        BusEvent *be = calloc(1, sizeof *be);
        if (!be)
                return -ENOMEM;
        be->bus = sd_bus_ref(bus);
        be->base = base;
        be->timer_until = UINT64_MAX;
        be->fd = be->out_fd = -1;
        be->timer = evtimer_new(base, on_timer, be);
        if (!be->timer) {
                bus_event_free(be);
                return -ENOMEM;
        }
        *ret = be;
        return 0;
}

void bus_event_set_peer(BusEvent *be) {
        be->peer = true;
}

void bus_event_set_peer_fds(BusEvent *be, int fd, int out_fd) {
        be->fd = fd;
        be->out_fd = out_fd;
}

void bus_event_set_output_check(BusEvent *be, bool (*output_full)(void *userdata), void *userdata) {
        be->output_full = output_full;
        be->output_userdata = userdata;
}

void bus_event_call_held(BusEvent *be, bool add) {
        if (add)
                be->held_calls++;
        else {
                /* Every reply sent was counted when deferred: a miscount
                 * would release a half-closed peer with replies still due
                 * (or hold it for ever).  Unless NDEBUG, it is a bug to catch
                 * (as tree.c's counts); with NDEBUG, no wrap-around. */
                assert(be->held_calls > 0);
                if (be->held_calls > 0)
                        be->held_calls--;
        }
}

uint64_t bus_event_heard_usec(const BusEvent *be) {
        int n = 0;

        /* What the peer sent and the loop has not read yet is a sign of life
         * now: after freezerd was stopped (SIGSTOP), epoll_wait() returns
         * EINTR and the timers of that turn run before the socket's event. */
        if (be->fd >= 0 && ioctl(be->fd, FIONREAD, &n) >= 0 && n > 0)
                return now_usec();
        return be->io_usec;
}

bool bus_event_is_deaf(const BusEvent *be) {
        return be->deaf;
}

void bus_event_get_peer_fds(const BusEvent *be, int *ret_fd, int *ret_out_fd) {
        *ret_fd = be->fd;
        *ret_out_fd = be->out_fd;
}

bool bus_event_is_broken(const BusEvent *be) {
        return be->broken;
}

int bus_event_error(const BusEvent *be) {
        return be ? be->error : 0;
}

BusEvent *bus_event_free(BusEvent *be) {
        if (!be)
                return NULL;
        if (be->io)
                event_free(be->io);
        if (be->timer)
                event_free(be->timer);
        sd_bus_unref(be->bus);
        free(be);
        return NULL;
}

int bus_event_prepare(BusEvent *be) {
        uint64_t until;
        short events = 0;
        int fd, r;

        /* No sd_bus_process() here, which would cost a recvmsg() every loop
         * turn: messages that sit in sd-bus's read queue (read along with a
         * reply we waited for) make sd_bus_get_timeout() say 0, so the timer
         * below dispatches them at once. */
        if (be->broken)
                return -ENOTCONN;
        /* The last reply of a peer that shut its sending side went out. */
        if (be->held && be->held_calls == 0 && !bus_output_pending(be->bus)) {
                peer_release(be);
                if (be->broken)
                        return -ENOTCONN;
        }

        /* sd_bus_get_fd() fails where input and output fds differ. */
        fd = be->fd >= 0 ? be->fd : sd_bus_get_fd(be->bus);
        if (fd < 0)
                return fd;
        r = sd_bus_get_events(be->bus);
        if (r < 0)
                return r;
        if (r & POLLIN)
                events |= EV_READ;
        if (r & POLLOUT)
                events |= EV_WRITE;
        if (be->held) {
                /* Only the writes, on the socket (fd never becomes readable). */
                fd = be->out_fd;
                events &= EV_WRITE;
                /* Nothing to write while calls wait: the peer closing its
                 * socket must still wake us (peer_check_hangup()), to drop
                 * the connection then rather than at the reply's write.  The
                 * socket is readable for ever (the end of its input), so
                 * edge-triggered: one wake-up now, then one per change of its
                 * state (the close's EPOLLHUP), none for the writes. */
                if (events == 0)
                        events = EV_READ | EV_ET;
        }

        if (!be->io_armed || events != be->io_events) {
                if (be->io)
                        event_free(be->io);
                be->io = event_new(be->base, fd, events | EV_PERSIST, on_io, be);
                if (!be->io || event_add(be->io, NULL) < 0)
                        return -ENOMEM;
                be->io_events = events;
                be->io_armed = true;
        }

        r = sd_bus_get_timeout(be->bus, &until);
        if (r < 0)
                return r;
        if (until != be->timer_until) {
                evtimer_del(be->timer);
                be->timer_until = until;
                if (until != UINT64_MAX) {
                        uint64_t n = now_usec(), rel = until > n ? until - n : 0;
                        struct timeval tv = {
                                .tv_sec = (time_t) (rel / USEC_PER_SEC),
                                .tv_usec = (suseconds_t) (rel % USEC_PER_SEC),
                        };
                        if (evtimer_add(be->timer, &tv) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* While the shutdown's replies are flushed, sd_bus_process() also dispatches
 * what the peer sent meanwhile: no new work then, whatever filter runs first
 * (the manager's filter_get_all() only reads).  userdata is the error. */
static int refuse_call(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const sd_bus_error *refusal = userdata;
        uint8_t type;

        if (sd_bus_message_get_type(msg, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
                return 0;
        (void) sd_bus_reply_method_error(msg, refusal);
        return 1;
}

void bus_refusing_flush(sd_bus *bus, uint64_t deadline, bool wait, const sd_bus_error *refusal) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;

        /* Each call its own (nothing is dispatched between two calls). */
        if (sd_bus_add_filter(bus, &slot, refuse_call, (void *) refusal) < 0)
                return; /* no memory: what came meanwhile gets no answer */
        for (;;) {
                uint64_t n;
                int r;

                /* Until nothing is left to read or write: sd_bus_process()
                 * returns after writing without reading, so stopping once the
                 * output is out would leave calls that came meanwhile
                 * unanswered (the peer then sees the connection close, or
                 * dbus-daemon's NoReply, which does not say nothing was done). */
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return;
                n = now_usec();
                if (n >= deadline)
                        return;
                if (r > 0)
                        continue;
                r = sd_bus_get_events(bus);
                if (r <= 0 || !(r & POLLOUT) || !wait)
                        return;
                if (sd_bus_wait(bus, deadline - n) < 0)
                        return;
        }
}

void bus_shutdown_flush(sd_bus *bus, uint64_t deadline, bool wait) {
        static const sd_bus_error cancelled =
                SD_BUS_ERROR_MAKE_CONST(BUS_ERROR_CANCELLED, "freezerd is shutting down; nothing was done");

        bus_refusing_flush(bus, deadline, wait, &cancelled);
}

bool bus_output_pending(sd_bus *bus) {
        int r = sd_bus_get_events(bus);
        return r > 0 && (r & POLLOUT);
}
