/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define HAVE_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(HAVE_ASAN)
#  define HAVE_ASAN 1
#endif
#ifdef HAVE_ASAN
/* Its allocator is not malloc's: mallinfo2() would say nothing.  Declared
 * here (<sanitizer/allocator_interface.h> comes with clang, not gcc). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#include "bus-errors.h"
#include "bus-event.h"
#include "log.h"
#include "manager-bus.h"
#include "private-bus.h"
#include "util.h"

typedef struct PrivateConnection PrivateConnection;
struct PrivateConnection {
        PrivateBus *pb;
        sd_bus *bus;
        BusEvent *event;
        struct event *auth_timer; /* until it authenticated: PRIVATE_BUS_AUTH_TIMEOUT_USEC */
        bool auth_expired;
        bool auth_extended; /* its timeout was given once more: see on_auth_timeout() */
        unsigned subscribed[_SUBSCRIPTION_MAX]; /* Subscribe*() calls not undone, by kind */
        uint64_t queued; /* messages waiting to be written, at the last private_bus_prepare() */
        PrivateConnection *next;
};

struct PrivateBus {
        Manager *manager;
        struct event_base *base;
        char *path;
        int fd;
        struct event *accept_event;
        struct event *retry_event; /* accept paused while out of fds */
        sd_id128_t id;             /* the server id sd-bus hands to peers */
        PrivateConnection *connections;
        unsigned n_connections;
        bool warned_full;
        struct event *auth_log_timer; /* while pending, clients that did not authenticate are counted */
        unsigned auth_unlogged;       /* ... here, for one line when it fires */
        size_t heap_floor; /* see heap_above_floor(); SIZE_MAX while no queue holds a message */
        uint64_t turn_usec; /* when the loop's turn began (the end of private_bus_prepare()) */
        unsigned unmeasured; /* messages of lagging connections since the last measure (connection_output_full()) */
        uint64_t flush_usec; /* the shutdown's flush: BUS_FLUSH_TIMEOUT_USEC, or a test's */
};

static PrivateConnection *connection_free(PrivateConnection *c) {
        if (!c)
                return NULL;
        if (c->auth_timer)
                event_free(c->auth_timer);
        c->event = bus_event_free(c->event);
        /* Operations still hold their calls (and with them the bus): their
         * replies fail with ENOTCONN once it is closed. */
        sd_bus_close(c->bus);
        sd_bus_unref(c->bus);
        free(c);
        return NULL;
}

static bool connection_output_full(void *userdata);

static int auth_timer_add(PrivateConnection *c, uint64_t usec) {
        const struct timeval tv = {
                .tv_sec = (time_t) (usec / USEC_PER_SEC),
                .tv_usec = (suseconds_t) (usec % USEC_PER_SEC),
        };
        return evtimer_add(c->auth_timer, &tv);
}

static void auth_log_timer_add(PrivateBus *pb) {
        const struct timeval tv = {
                .tv_sec = (time_t) (PRIVATE_BUS_AUTH_LOG_USEC / USEC_PER_SEC),
                .tv_usec = (suseconds_t) (PRIVATE_BUS_AUTH_LOG_USEC % USEC_PER_SEC),
        };
        (void) evtimer_add(pb->auth_log_timer, &tv); /* failing, the next one logs a line of its own */
}

static void auth_unlogged_flush(PrivateBus *pb) {
        if (pb->auth_unlogged == 0)
                return;
        log_notice("%u more clients on %s did not authenticate within %u s: closed them.", pb->auth_unlogged,
                   pb->path, (unsigned) (PRIVATE_BUS_AUTH_TIMEOUT_USEC / USEC_PER_SEC));
        pb->auth_unlogged = 0;
}

/* The end of a window of PRIVATE_BUS_AUTH_LOG_USEC: one line for those it
 * counted, and a window more if there were any. */
static void on_auth_log_timer(evutil_socket_t fd, short what, void *userdata) {
        PrivateBus *pb = userdata;

        if (pb->auth_unlogged == 0)
                return;
        auth_unlogged_flush(pb);
        auth_log_timer_add(pb);
}

/* A line for the first client that did not authenticate, then at most one
 * every PRIVATE_BUS_AUTH_LOG_USEC that counts those since: up to 256 clients
 * that connect again and again without a word (a stuck client in a loop, a
 * port scanner) would log 256 lines every 5 s. */
static void auth_expired_log(PrivateBus *pb) {
        if (evtimer_pending(pb->auth_log_timer, NULL)) {
                pb->auth_unlogged++;
                return;
        }
        log_notice("A client on %s did not authenticate within %u s: closing it.", pb->path,
                   (unsigned) (PRIVATE_BUS_AUTH_TIMEOUT_USEC / USEC_PER_SEC));
        auth_log_timer_add(pb);
}

/* sd-bus gives a peer 90 s to authenticate, during which it holds one of the
 * PRIVATE_BUS_CONNECTIONS_MAX slots: a client that connects and sends nothing
 * (stuck, or just many of them) would keep the rest out that long.  Dropped at
 * the next private_bus_prepare(). */
static void on_auth_timeout(evutil_socket_t fd, short what, void *userdata) {
        PrivateConnection *c = userdata;

        /* A connection that ended meanwhile goes anyway, without this line. */
        if (sd_bus_is_ready(c->bus) > 0 || bus_event_is_broken(c->event))
                return;
        /* The time counts from the accept.  Only a delay of freezerd's own
         * earns more: after freezerd was held up (stopped, or a long turn: a
         * big SIGHUP, say) the timer fires in the turn that reads the AUTH the
         * client sent meanwhile (or has it still unread), and the client has
         * had no time to answer the OK.  So a client heard in this very turn
         * gets the time once more, once: counting from its every sign of life
         * let one that sends a byte now and then hold its slot for sd-bus's
         * 90 s. */
        if (!c->auth_extended && bus_event_heard_usec(c->event) >= c->pb->turn_usec) {
                c->auth_extended = true;
                if (auth_timer_add(c, PRIVATE_BUS_AUTH_TIMEOUT_USEC) >= 0)
                        return;
        }
        c->auth_expired = true;
        auth_expired_log(c->pb);
}

static int connection_new(PrivateBus *pb, int fd) {
        _cleanup_(sd_bus_unrefp) sd_bus *bus = NULL;
        PrivateConnection *c;
        int out_fd, r;

        /* Output on a fd of its own, which bus-event.c can point at
         * /dev/null once the peer closed (bus_event_set_peer_fds()). */
        out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (out_fd < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        r = sd_bus_new(&bus);
        if (r < 0) {
                close(fd);
                close(out_fd);
                return r;
        }
        r = sd_bus_set_fd(bus, fd, out_fd);
        if (r < 0) {
                close(fd);
                close(out_fd);
                return r;
        }
        /* From here on the bus owns fd and out_fd. */
        r = sd_bus_set_server(bus, true, pb->id);
        if (r < 0)
                return r;
        r = sd_bus_set_description(bus, "private");
        if (r < 0)
                return r;
        /* No file descriptors, as on the bus (main.c): a peer that sends some
         * anyway is disconnected by sd-bus, its descriptors closed. */
        r = sd_bus_negotiate_fds(bus, false);
        if (r < 0)
                return r;
        r = manager_bus_add_objects(pb->manager, bus);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->pb = pb;
        r = bus_event_new(bus, pb->base, &c->event);
        if (r < 0) {
                free(c);
                return r;
        }
        c->auth_timer = evtimer_new(pb->base, on_auth_timeout, c);
        if (!c->auth_timer || auth_timer_add(c, PRIVATE_BUS_AUTH_TIMEOUT_USEC) < 0) {
                if (c->auth_timer)
                        event_free(c->auth_timer);
                bus_event_free(c->event);
                free(c);
                return -ENOMEM;
        }
        bus_event_set_peer(c->event);
        bus_event_set_output_check(c->event, connection_output_full, c);
        bus_event_set_peer_fds(c->event, fd, out_fd);
        c->bus = TAKE_PTR(bus);
        c->next = pb->connections;
        pb->connections = c;
        pb->n_connections++;
        return 0;
}

static void on_retry(evutil_socket_t fd, short what, void *userdata) {
        PrivateBus *pb = userdata;
        (void) event_add(pb->accept_event, NULL);
}

static void on_accept(evutil_socket_t fd, short what, void *userdata) {
        PrivateBus *pb = userdata;

        for (;;) {
                int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                int r;

                if (cfd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno == EAGAIN)
                                return;
                        log_warning_errno(errno, "Cannot accept a connection on %s: %m", pb->path);
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                                /* The socket stays readable: listening on would spin.  Pause a second. */
                                const struct timeval tv = { .tv_sec = 1 };
                                (void) event_del(pb->accept_event);
                                (void) evtimer_add(pb->retry_event, &tv);
                        }
                        return;
                }
                if (pb->n_connections >= PRIVATE_BUS_CONNECTIONS_MAX) {
                        if (!pb->warned_full)
                                log_warning("%u private connections are open, refusing more on %s.",
                                            pb->n_connections, pb->path);
                        pb->warned_full = true;
                        close(cfd);
                        continue;
                }
                r = connection_new(pb, cfd);
                if (r == -ECONNRESET || r == -EPIPE)
                        /* The peer went away first (a probe, a client that gave up): nothing wrong here. */
                        log_debug_errno(r, "A connection on %s closed before it was set up: %m", pb->path);
                else if (r < 0)
                        log_warning_errno(r, "Cannot set up a connection on %s: %m", pb->path);
        }
}

int private_bus_new(Manager *m, struct event_base *base, const char *path, PrivateBus **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *flush;
        PrivateBus *pb;
        mode_t old_umask;
        int r;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);

        pb = calloc(1, sizeof *pb);
        if (!pb)
                return -ENOMEM;
        *pb = (PrivateBus) { .manager = m, .base = base, .fd = -1, .heap_floor = SIZE_MAX,
                             .flush_usec = BUS_FLUSH_TIMEOUT_USEC };
        /* A test's peer must have the time to read its part of the flush
         * whatever the machine's load (test-fault-private-shutdown). */
        flush = getenv("FREEZERD_TEST_FLUSH_TIMEOUT_USEC");
        if (flush) {
                pb->flush_usec = strtoull(flush, NULL, 10);
                log_notice("FREEZERD_TEST_FLUSH_TIMEOUT_USEC=%" PRIu64 ": the private connections' flush at "
                           "shutdown lasts up to that (for tests only).", pb->flush_usec);
        }
        pb->path = strdup(path);
        if (!pb->path) {
                r = -ENOMEM;
                goto fail;
        }
        r = sd_id128_randomize(&pb->id);
        if (r < 0)
                goto fail;

        pb->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (pb->fd < 0) {
                r = -errno;
                goto fail;
        }
        /* A socket left by a daemon that did not exit cleanly is replaced;
         * one that answers belongs to a daemon that runs. */
        {
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (const struct sockaddr *) &sa, sizeof sa) == 0) {
                        r = -EADDRINUSE;
                        goto fail;
                }
        }
        if (unlink(path) < 0 && errno != ENOENT) {
                r = -errno;
                goto fail;
        }
        /* Root only, from the moment it exists: the mode of a socket file is
         * set by bind() from the umask. */
        old_umask = umask(0177);
        r = bind(pb->fd, (const struct sockaddr *) &sa, sizeof sa) < 0 ? -errno : 0;
        umask(old_umask);
        if (r < 0)
                goto fail;
        if (listen(pb->fd, SOMAXCONN) < 0) {
                r = -errno;
                (void) unlink(path);
                goto fail;
        }

        pb->accept_event = event_new(base, pb->fd, EV_READ | EV_PERSIST, on_accept, pb);
        pb->retry_event = evtimer_new(base, on_retry, pb);
        pb->auth_log_timer = evtimer_new(base, on_auth_log_timer, pb);
        if (!pb->accept_event || !pb->retry_event || !pb->auth_log_timer || event_add(pb->accept_event, NULL) < 0) {
                r = -ENOMEM;
                (void) unlink(path);
                goto fail;
        }
        *ret = pb;
        return 0;

fail:
        pb->path = mfree(pb->path); /* nothing of ours to unlink */
        private_bus_free(pb);
        return r;
}

/* A client that does not read (its signals, or the replies to calls it
 * sends on regardless) would have them pile up in freezerd: unlike
 * dbus-daemon for the bus (max_outgoing_bytes), nothing else bounds it.
 *
 * sd-bus keeps what the socket does not take in its write queue and says how
 * many messages wait there (sd_bus_get_n_queued_write()), not their size,
 * which ranges from a hundred bytes (a Get) to megabytes over 10,000 groups
 * (GetManagedObjects, Introspect, a GroupsChanged).  So besides their count
 * (PRIVATE_BUS_QUEUE_MAX) freezerd bounds their bytes where they are: in its
 * heap in use (mallinfo2(), or AddressSanitizer's count under it).  That is
 * exact for any message, sd-bus's own replies included, where an estimate of
 * each reply from its call would have to follow sd-bus's formats.  Measuring
 * walks malloc's free lists (some µs), so it is done only while messages wait
 * for a connection (its socket is full): before every
 * PRIVATE_BUS_MEASURE_STEP-th message lagging connections send
 * (connection_output_full()), and once per loop
 * turn (for the signals queued by other events), never for clients that keep
 * up.  The floor is the least heap measured since the queues were last all
 * empty, what the model and everything else held: once the heap is
 * PRIVATE_BUS_QUEUED_HEAP_MAX above it, the connection with the most messages
 * queued is closed, then the next, until it is within; for one connection or
 * many together. */
static size_t heap_in_use(void) {
#ifdef HAVE_ASAN
        return __sanitizer_get_current_allocated_bytes();
#else
        struct mallinfo2 mi = mallinfo2();

        return mi.uordblks + mi.hblkhd;
#endif
}

static size_t heap_above_floor(PrivateBus *pb) {
        size_t heap = heap_in_use();

        pb->unmeasured = 0;
        if (heap < pb->heap_floor)
                pb->heap_floor = heap;
        return heap - pb->heap_floor;
}

/* Before each message of a connection's dispatch: whether to stop there, for
 * private_bus_prepare() to close a connection.  While messages wait for it,
 * the heap is measured before every PRIVATE_BUS_MEASURE_STEP-th message that
 * lagging connections (all together) send, not before each: a measure costs
 * µs (more with many free chunks), and every other client's call would pay
 * it while one lags; the bound is passed by the replies of at most that many
 * messages. */
static bool connection_output_full(void *userdata) {
        PrivateConnection *c = userdata;
        uint64_t n = 0;

        if (sd_bus_get_n_queued_write(c->bus, &n) < 0 || n == 0)
                return false;
        if (++c->pb->unmeasured < PRIVATE_BUS_MEASURE_STEP)
                return false;
        return heap_above_floor(c->pb) > PRIVATE_BUS_QUEUED_HEAP_MAX;
}

static void connection_drop(PrivateBus *pb, PrivateConnection **p) {
        PrivateConnection *c = *p;

        *p = c->next;
        manager_bus_connection_closed(pb->manager, c->bus);
        connection_free(c);
        pb->n_connections--;
        pb->warned_full = false;
}

/* The connections with the most messages queued go until the heap is within
 * PRIVATE_BUS_QUEUED_HEAP_MAX of its floor.  Whether any went. */
static bool drop_biggest_queues(PrivateBus *pb) {
        bool dropped = false;

        for (;;) {
                size_t above = heap_above_floor(pb);
                PrivateConnection **biggest = NULL;

                if (above <= PRIVATE_BUS_QUEUED_HEAP_MAX)
                        return dropped;
                /* Not one whose peer closed: its queue goes to /dev/null at
                 * its next dispatch, and it has calls to carry out. */
                for (PrivateConnection **p = &pb->connections; *p; p = &(*p)->next)
                        if ((*p)->queued > 0 && !bus_event_is_deaf((*p)->event) &&
                            (!biggest || (*p)->queued > (*biggest)->queued))
                                biggest = p;
                if (!biggest)
                        return dropped;
                log_warning("A client on %s does not read its replies or signals (%" PRIu64
                            " messages queued, freezerd's heap %zu MiB above what it held before): closing it.",
                            pb->path, (*biggest)->queued, above / (1024 * 1024));
                connection_drop(pb, biggest);
                dropped = true;
        }
}

void private_bus_prepare(PrivateBus *pb) {
        bool lagging = false, overflowed = false;

        if (!pb)
                return;
        for (PrivateConnection **p = &pb->connections; *p;) {
                PrivateConnection *c = *p;

                if (sd_bus_get_n_queued_write(c->bus, &c->queued) < 0)
                        c->queued = 0;
                if (c->queued > PRIVATE_BUS_QUEUE_MAX)
                        log_warning("A client on %s does not read its replies or signals (%" PRIu64
                                    " messages queued): closing it.",
                                    pb->path, c->queued);
                else if (!c->auth_expired && bus_event_prepare(c->event) >= 0) {
                        lagging = lagging || c->queued > 0;
                        p = &c->next;
                        continue;
                }
                overflowed = overflowed || c->queued > PRIVATE_BUS_QUEUE_MAX;
                connection_drop(pb, p);
        }
        if (!lagging)
                pb->heap_floor = SIZE_MAX; /* measured afresh when a queue grows again */
        else if (drop_biggest_queues(pb))
                overflowed = true;
        /* Their messages were freed in the middle of the heap, which glibc
         * does not give back by itself. */
        if (overflowed)
                (void) malloc_trim(0);
        pb->turn_usec = now_usec();
}

static PrivateConnection *connection_find(PrivateBus *pb, sd_bus *bus) {
        for (PrivateConnection *c = pb ? pb->connections : NULL; c; c = c->next)
                if (c->bus == bus)
                        return c;
        return NULL;
}

int private_bus_subscribe(PrivateBus *pb, sd_bus *bus, Subscription kind, bool add) {
        PrivateConnection *c = connection_find(pb, bus);
        unsigned *n;

        if (!c)
                return -ENOENT;
        n = &c->subscribed[kind];
        if (add)
                (*n)++;
        else if (*n == 0)
                return -ESRCH;
        else
                (*n)--;
        return 0;
}

void private_bus_call_held(PrivateBus *pb, sd_bus_message *call, bool add) {
        sd_bus *bus = sd_bus_message_get_bus(call);
        PrivateConnection *c;

        /* Not the bus's calls (nor the scan for them), nor those that want no reply. */
        if (!pb || sd_bus_is_bus_client(bus) > 0 || !sd_bus_message_get_expect_reply(call))
                return;
        c = connection_find(pb, bus);
        if (c) /* else it is gone: its replies fail */
                bus_event_call_held(c->event, add);
}

sd_bus *private_bus_next_subscriber(PrivateBus *pb, void **iter, unsigned *ret_kinds) {
        PrivateConnection *c = *iter ? ((PrivateConnection *) *iter)->next : pb ? pb->connections : NULL;

        for (; c; c = c->next) {
                unsigned kinds = 0;

                for (Subscription k = 0; k < _SUBSCRIPTION_MAX; k++)
                        if (c->subscribed[k] > 0)
                                kinds |= 1u << k;
                if (kinds) {
                        *iter = c;
                        *ret_kinds = kinds;
                        return c->bus;
                }
        }
        *iter = NULL;
        return NULL;
}

/* The shutdown's flush, once each connection got what its socket took at
 * once: then the waits for the sockets to take the rest, for all connections
 * at once until the deadline.  One connection after the other, a first peer
 * that never read used up the deadline, and those behind it, reading, got no
 * more than their sockets took in one go after it (twice net.core.wmem_max
 * without CAP_NET_ADMIN: 416 KB by default), the rest of their replies lost
 * and their calls of the meantime unanswered.  While its output waits, a
 * connection's calls that come meanwhile are refused, as bus_shutdown_flush()
 * does.  -ENOMEM, to wait one after the other. */
static int connections_flush_wait(PrivateBus *pb, uint64_t deadline) {
        _cleanup_free_ struct pollfd *p = NULL;
        _cleanup_free_ PrivateConnection **cs = NULL;

        if (pb->n_connections == 0)
                return 0;
        p = calloc(2 * (size_t) pb->n_connections, sizeof *p);
        cs = calloc(pb->n_connections, sizeof *cs);
        if (!p || !cs)
                return -ENOMEM;
        for (;;) {
                struct timespec ts;
                size_t n = 0;
                uint64_t now;
                int r;

                for (PrivateConnection *c = pb->connections; c; c = c->next) {
                        int fd, out_fd, events;

                        if (bus_event_is_broken(c->event))
                                continue;
                        /* As sd_bus_wait(): its input only while sd-bus reads it. */
                        events = sd_bus_get_events(c->bus);
                        if (events <= 0 || !(events & POLLOUT))
                                continue;
                        bus_event_get_peer_fds(c->event, &fd, &out_fd);
                        if (fd < 0 || out_fd < 0)
                                continue;
                        cs[n / 2] = c;
                        p[n++] = (struct pollfd) { .fd = fd, .events = (short) (events & POLLIN) };
                        p[n++] = (struct pollfd) { .fd = out_fd, .events = POLLOUT };
                }
                now = now_usec();
                if (n == 0 || now >= deadline)
                        return 0;
                ts = (struct timespec) {
                        .tv_sec = (time_t) ((deadline - now) / USEC_PER_SEC),
                        .tv_nsec = (long) ((deadline - now) % USEC_PER_SEC * 1000),
                };
                r = ppoll(p, n, &ts, NULL);
                if (r < 0 && errno != EINTR)
                        return 0; /* (not to be: what could not go out is lost, as at the deadline) */
                for (size_t i = 0; r > 0 && i < n; i += 2)
                        if (p[i].revents || p[i + 1].revents)
                                bus_shutdown_flush(cs[i / 2]->bus, deadline, false);
        }
}

PrivateBus *private_bus_free(PrivateBus *pb) {
        /* One deadline for all the connections: one each made a shutdown
         * wait 100 ms for every peer that does not read, one after the other
         * (25.6 s with 256 of them).  First each gets what its socket takes at
         * once (and the refusals of what it sent meanwhile), then the waits
         * for the sockets to take the rest, all at once until the deadline
         * (connections_flush_wait()). */
        uint64_t deadline;

        if (!pb)
                return NULL;
        deadline = now_usec() + pb->flush_usec;
        for (PrivateConnection *c = pb->connections; c; c = c->next)
                if (!bus_event_is_broken(c->event))
                        bus_shutdown_flush(c->bus, deadline, false);
        if (connections_flush_wait(pb, deadline) < 0)
                for (PrivateConnection *c = pb->connections; c; c = c->next)
                        if (!bus_event_is_broken(c->event))
                                bus_shutdown_flush(c->bus, deadline, true);
        while (pb->connections) {
                PrivateConnection *c = pb->connections;
                pb->connections = c->next;
                connection_free(c);
        }
        if (pb->accept_event)
                event_free(pb->accept_event);
        if (pb->retry_event)
                event_free(pb->retry_event);
        if (pb->auth_log_timer) {
                auth_unlogged_flush(pb);
                event_free(pb->auth_log_timer);
        }
        if (pb->fd >= 0) {
                close(pb->fd);
                if (pb->path)
                        (void) unlink(pb->path);
        }
        free(pb->path);
        free(pb);
        return NULL;
}
