/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <systemd/sd-bus.h>

#include "client-util.h"
#include "freezer.h"
#include "group-table.h"

/* The daemon's bus name changing hands: it started, exited or restarted. */
#define MATCH_DAEMON_OWNER                                                              \
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"     \
        "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" FREEZER_SERVICE "'"
#define FREEZER_ERROR_PREFIX "org.freezerd.Freezer1.Error."

/* What InterfacesAdded, GetAll or a signal says of a group's state. */
typedef struct state_props {
        uint64_t id; /* 0: not said */
        freezer_state state;
        bool frozen;
        bool have_state;
        bool have_frozen;
} state_props;

/* GroupStatesChanged held while the handle (re)loads the Ids of a freezerd
 * that has just (re)started (it names groups made while none ran, which only
 * the list has): processed once the list is in.  Beyond this many (a flood
 * for the one round trip the list takes, or a handle not dispatched for a
 * while) they are all dropped, and once the Ids are in the handle reads every
 * group's state (ListGroups()) and reports those that differ from what it
 * knew: a change in between may go unreported, the state it led to does
 * not. */
#define HELD_MAX 1024

/* A pressure trigger this handle added. */
typedef struct trigger_entry {
        uint32_t id;
        char *object;   /* the group's object path; NULL: the Manager (system-wide) */
        char *path;     /* the group's path; NULL: system-wide */
        char *owner;    /* unique bus name of the freezerd that holds it */
        freezer_resource resource;
        bool full;
        /* Its PressureExceeded waiting in the handle's queue, if any: a
         * later one takes its place (defer_pressure_exceeded()). */
        struct deferred *exceeded;
} trigger_entry;

/* A method call of freezer_*_async() waiting for its reply. */
typedef enum call_kind {
        CALL_PLAIN,           /* Freeze, Thaw: an empty reply */
        CALL_BATCH,           /* ApplyBatch: (uu) */
        CALL_EXCEPT,          /* FreezeExcept: (as) */
} call_kind;

typedef struct pending_call {
        freezer *f;
        uint64_t id;
        sd_bus_slot *slot;
        call_kind kind;
        size_t size;          /* of a batch, to explain a connection dropped for its size */
        freezer_call_callback cb;
        void *userdata;
        /* freezer_cancel_call(): no callback runs, but the call stays until
         * its reply comes, so that freezer_close() knows freezerd may not
         * have taken it yet. */
        bool cancelled;
        /* Its reply came when the connection was lost already (the reply is
         * sd-bus' own, handled later from freezer_dispatch()). */
        bool lost;
        uint64_t until;  /* call_until() */
        bool timed_out;  /* its reply is sd-bus' own for its timeout (reply_is_local_timeout()) */
        struct pending_call *prev, *next;
} pending_call;

/* A message one of the handle's sd-bus handlers got, to be handled from
 * freezer_dispatch().  The handlers only queue what they get (deferring
 * wrappers, see defer()): so the callbacks never run inside sd-bus, where
 * sd_bus_process() cannot be called again, and a blocking call can wait for
 * its reply with sd_bus_process() and sd_bus_wait(), which go on through
 * signals where sd_bus_call() gives up, and run no callback. */
typedef struct deferred {
        sd_bus_message *m;
        sd_bus_message_handler_t handler;
        void *userdata;
        /* The slot the message came through (referenced, so that no new slot
         * gets its address), and where the handle keeps it: the message is
         * dropped if the handle no longer does, as sd-bus would not have
         * handed it over. */
        sd_bus_slot *slot;
        sd_bus_slot **home;
        /* A PressureExceeded of trigger trigger_id (the trigger's exceeded
         * points here while it waits). */
        bool exceeded;
        uint32_t trigger_id;
        struct deferred *next;
} deferred;

/* A blocking call's reply (or sd-bus' own error for it), waited for by
 * wait_reply(). */
typedef struct reply_wait {
        sd_bus *bus;
        sd_bus_message *reply;
        bool lost;      /* the connection was lost when it came */
        uint64_t until; /* call_until() */
        bool timed_out; /* the reply is sd-bus' own for the call's timeout */
} reply_wait;

/* The retries of one kind of reload whose replies were lost (reload_lost()):
 * not before at (CLOCK_MONOTONIC µs), which is delay after the last loss. */
typedef struct reload_backoff {
        uint64_t at, delay;
} reload_backoff;

struct freezer {
        sd_bus *bus;
        sd_bus_error error;

        sd_bus_slot *match_slot;
        freezer_state_callback state_cb;
        void *state_userdata;

        /* What the state callback compares signals with, by object and by
         * Id: kept only while it is installed (group-table.h). */
        group_table groups;

        /* The state callback's signal: GroupStatesChanged (compact: groups
         * by Id, SubscribeGroupStates()) from a freezerd that has it, else
         * GroupsChanged (SubscribeGroups()). */
        bool compact;
        /* After a (re)start of freezerd: the subscription, then ListGroupIds(),
         * in flight; GroupStatesChanged waits in held meanwhile. */
        sd_bus_slot *ids_slot;
        sd_bus_message **held;
        size_t n_held;
        /* More than HELD_MAX came (or no memory to hold one): held was
         * dropped, what comes until the states are read again too. */
        bool held_lost;
        /* The reply of a ListGroups read again or of ListGroupIds (ids_slot)
         * is queued already (reread_in): a GroupStatesChanged dropped since is
         * newer than it, and the states are read once more after it
         * (reread_again). */
        bool reread_in, reread_again;
        /* ids_slot is SubscribeGroupStates() or ListGroupIds(): the Ids are
         * being loaded.  An InterfacesAdded/Removed dropped after their reply
         * came, or during a ListGroups, asks for the Ids once more after it
         * (ids_again; ids_lost()). */
        bool ids_loading, ids_again;

        /* InterfacesAdded/Removed, while the group or the state callback is
         * installed: the latter needs them to drop removed groups from the
         * cache, which GroupsChanged never names again. */
        sd_bus_slot *group_slot;
        /* Direct: the group callback's subscription, NULL if none: its
         * Unsubscribe*() member. */
        const char *group_unsubscribe;
        freezer_group_callback group_cb;
        void *group_userdata;
        /* While the group callback is installed: freezerd's groups as it
         * knows them (keyed by cgroup path, with their Ids), from a
         * ListGroupIds() and the signals since, so that a dropped
         * InterfacesAdded/Removed is made up for (groups_lost()) and a signal
         * that changes nothing in it is not reported (group_signal()).
         * known_loaded: it holds a ListGroupIds() and every signal since
         * (else, before the first one or after a restart of freezerd, signals
         * are reported as they come); known_base: it holds what the callback
         * was told (from a list taken at its installation), so a reply can be
         * compared with it.  known_slot: a ListGroupIds() in flight,
         * known_in: its reply queued, known_lost: a signal dropped that it
         * is to make up for, known_again: one dropped after the reply was
         * queued (newer than it: asked once more).  known_gen counts the
         * tables, for the reports of one to stop once a callback forgot it. */
        group_table known;
        sd_bus_slot *known_slot;
        bool known_loaded, known_base, known_in, known_lost, known_again;
        unsigned known_gen;

        freezer_resync_callback resync_cb;
        void *resync_userdata;

        /* Pressure triggers added through this handle. */
        trigger_entry *triggers;
        size_t n_triggers;
        size_t n_triggers_allocated;

        /* What every concern hears of the connection and of the daemon, in one
         * place each (on_filter(), on_daemon_owner_changed()): the filter for
         * pressure signals and the connection's loss (installed with the first
         * trigger or the resync callback, kept), and, on the bus, the
         * NameOwnerChanged of freezerd while the state, the group or the
         * resync callback or a trigger needs it. */
        sd_bus_slot *filter_slot;
        sd_bus_slot *owner_slot;
        freezer_pressure_callback pressure_cb;
        void *pressure_userdata;
        freezer_pressure_removed_callback pressure_removed_cb;
        void *pressure_removed_userdata;

        /* Calls in flight (freezer_*_async()), newest first. */
        pending_call *calls;
        uint64_t last_call_id;

        /* Messages for the handlers, in the order they came, for the next
         * freezer_dispatch(). */
        deferred *deferred;
        deferred **deferred_tail;
        size_t n_deferred;
        /* The blocking installation of a match waits for this. */
        reply_wait *match_wait;

        /* freezer_close() from a callback: the handle is freed once
         * freezer_dispatch() is back out of sd-bus, and no callback runs
         * meanwhile. */
        bool dispatching;
        bool closing;
        /* Calls were in flight when a callback closed the handle (they are
         * forgotten then): the close makes sure freezerd takes them. */
        bool calls_at_close;

        /* The reply of a reload (the state callback's subscription after a
         * start of freezerd, its Ids or states read again; the group
         * callback's list) that could not be queued, for lack of memory
         * (defer_reload_reply()): reload_error, until a freezer_dispatch()
         * returned it, and the reload to start again (states_retry,
         * known_retry) from a freezer_dispatch() (reloads_retry()), not
         * before its kind's backoff says (states_backoff, known_backoff:
         * reload_lost()).  Each kind backs off on its own: a reply kept of
         * one says nothing of the memory the other's, a whole group list,
         * needs. */
        int reload_error;
        /* The D-Bus error reload_error was read off, where it was a refusal
         * (the fallback's SubscribeGroups(): on_fallback_subscribed()):
         * freezer_dispatch() makes it the last error. */
        sd_bus_error reload_bus_error;
        bool states_retry, known_retry;
        reload_backoff states_backoff, known_backoff;
        /* The lost reply was SubscribeGroupStates()'s "no GroupStatesChanged
         * here" (an older freezerd): the retry falls back to SubscribeGroups()
         * as on_states_subscribed() would have, instead of loading Ids. */
        bool states_fallback;
        /* SubscribeGroupStates() was answered NoMemory (freezerd lacked the
         * memory to subscribe us, and did not count it): the retry sends it
         * again (state_resubscribe()), of the state callback's kind. */
        bool states_resubscribe;
        /* The fallback's SubscribeGroups() in flight: when sd-bus may time it
         * out (call_until()), and whether its reply is sd-bus' own timeout
         * (reply_is_local_timeout(), told where it comes: on_fallback_subscribed()
         * runs later, when the connection may be lost meanwhile). */
        uint64_t fallback_until;
        bool fallback_timed_out;

        /* The last freezer_dispatch() stopped at FREEZER_DISPATCH_MAX: until
         * the next one, freezer_get_timeout() says "now" and freezer_wait()
         * returns at once, so the caller's loop comes back for the rest. */
        bool more_pending;
};

/* A reload of the kind whose retry flag is at retry (the state callback's,
 * states_retry, or the group callback's, known_retry) waits to be started
 * again (reloads_retry()): the state callback's also for its fallback to
 * SubscribeGroups(). */
static bool reload_kind_pending(freezer *f, bool *retry) {
        if (retry == &f->known_retry)
                return f->known_retry;
        return f->states_retry || f->states_fallback || f->states_resubscribe;
}

static reload_backoff *reload_kind_backoff(freezer *f, bool *retry) {
        return retry == &f->known_retry ? &f->known_backoff : &f->states_backoff;
}

/* A reload whose reply was lost waits to be started again
 * (reloads_retry()). */
static bool reload_pending(freezer *f) {
        return reload_kind_pending(f, &f->states_retry) || reload_kind_pending(f, &f->known_retry);
}

/* When the first retry waiting is due (reload_pending() only). */
static uint64_t reload_next_at(freezer *f) {
        uint64_t at = UINT64_MAX;

        if (reload_kind_pending(f, &f->states_retry))
                at = f->states_backoff.at;
        if (reload_kind_pending(f, &f->known_retry) && f->known_backoff.at < at)
                at = f->known_backoff.at;
        return at;
}

/* A reload's reply was lost (defer_reload_reply()): the error to report,
 * or the reload to start again once its time came, is for
 * freezer_dispatch(). */
static bool reload_due(freezer *f) {
        return f->reload_error < 0 || (reload_pending(f) && reload_next_at(f) <= now_usec());
}

/* The retries of lost reloads back off while their replies are lost again:
 * the first at once (a single loss, to a passing peak of memory use, costs
 * nothing), then after 10 ms, doubled with each loss up to 1 s.  Each retry
 * is a bus call whose reply (every group's Id, heavy with 10,000 groups) is
 * lost again as long as memory lacks; asked again at once, it would come as
 * fast as freezerd answers: the program would spin, spending memory that it
 * lacks.  10 ms is
 * some hundred round trips of a small list (freezectl watch, a few groups:
 * about 6,000 lost replies a second), so from the second retry on the rate
 * falls by that much, while a short shortage delays the reports by tens of
 * milliseconds only (10, 20, 40, ...: seven doublings reach the cap).  1 s
 * bounds both how late changes are reported once memory is back (a second
 * more) and the cost of a lasting shortage (a reply a second). */
#define RELOAD_RETRY_DELAY_MIN_USEC (10 * USEC_PER_MSEC)
#define RELOAD_RETRY_DELAY_MAX_USEC USEC_PER_SEC

/* A reload's reply lost, or its Ids not loaded, for lack of memory (r): the
 * error for the next freezer_dispatch(), the reload (*retry: states_retry or
 * known_retry) for one after its kind's delay.  Several of a kind lost at
 * once are retried together.  An error pending already is kept: the first
 * is said.  It may be the fallback's refusal (fallback_refused()), which is
 * not retried and would go unsaid for good (its errno replaced, its D-Bus
 * error dropped by reload_error_take()); the loss is retried all the same,
 * and a later one says -ENOMEM then. */
static void reload_lost(freezer *f, bool *retry, int r) {
        reload_backoff *b = reload_kind_backoff(f, retry);

        if (!reload_kind_pending(f, retry))
                b->at = usec_add(now_usec(), b->delay);
        *retry = true;
        if (f->reload_error == 0)
                f->reload_error = r;
}

/* A reload to start again after its kind's delay, as reload_lost() has
 * it, but with no error for freezer_dispatch(): nothing was lost for lack
 * of memory (sd-bus timed the fallback's SubscribeGroups() out:
 * on_fallback_subscribed()). */
static void reload_retry_later(freezer *f, bool *retry) {
        reload_backoff *b = reload_kind_backoff(f, retry);

        if (!reload_kind_pending(f, retry))
                b->at = usec_add(now_usec(), b->delay);
        *retry = true;
}

/* Retries of the kind of retry dropped (their callback gone, freezerd gone
 * or restarted, the connection lost): with none of it left, the delay they
 * grew goes with them, and the next loss, a first one again, is retried at
 * once (as reload_done()). */
static void reload_retries_dropped(freezer *f, bool *retry) {
        if (!reload_kind_pending(f, retry))
                *reload_kind_backoff(f, retry) = (reload_backoff) {};
}

/* A reload's last reply came and was kept (of the kind of retry): the next
 * loss of that kind is retried at once; the other kind's retries, whose
 * replies are lost on their own, go on backing off.  Not for a reply that
 * asks for another read (the state callback's states after its Ids, a read
 * again for a signal dropped meanwhile): were the delay reset there, a read
 * whose reply is lost again and again would be retried at once each time,
 * its Ids' reply kept in between. */
static void reload_done(freezer *f, bool *retry) {
        reload_kind_backoff(f, retry)->delay = 0;
}

/* A reload's reply is a shortage that passes: NoMemory (freezerd lacked the
 * memory for the list, or the subscription, asked for; or dbus-daemon
 * lacked it to pass the call on: the same name), or the bus'
 * LimitsExceeded (dbus-daemon refused to pass the call on: freezerd's
 * queue of messages, or the replies it owes us, at dbus-daemon's limits;
 * since 0.6.5), each read by the errno sd-bus gives its name (-ENOMEM,
 * -ENOBUFS, as for a call that cannot be sent: reload_send_shortage()).
 * What was asked for is missing as if the reply were lost here: it is
 * asked for again (reload_lost()), with -ENOMEM from freezer_dispatch(),
 * rather than taken as "none".  freezerd's own LimitsExceeded (its limits,
 * which sd-bus does not know: -EIO here) is no shortage: no reload meets
 * one. */
static bool reply_shortage(sd_bus_message *reply) {
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int r;

        if (!e)
                return false;
        r = sd_bus_error_get_errno(e);
        return r == ENOMEM || r == ENOBUFS;
}

static const char *const state_table[] = {
        [FREEZER_STATE_RUNNING] = "running",
        [FREEZER_STATE_FREEZING] = "freezing",
        [FREEZER_STATE_FROZEN] = "frozen",
        [FREEZER_STATE_THAWING] = "thawing",
        [FREEZER_STATE_FREEZING_BY_PARENT] = "freezing-by-parent",
        [FREEZER_STATE_FROZEN_BY_PARENT] = "frozen-by-parent",
        [FREEZER_STATE_UNKNOWN] = "unknown",
};

static const struct {
        const char *name;
        int error;
} error_table[] = {
        { FREEZER_ERROR_PREFIX "NoSuchGroup",               ENOENT     },
        { FREEZER_ERROR_PREFIX "InvalidPath",               EINVAL     },
        { FREEZER_ERROR_PREFIX "Timeout",                   ETIMEDOUT  },
        { FREEZER_ERROR_PREFIX "FrozenByParent",            EBUSY      },
        { FREEZER_ERROR_PREFIX "Cancelled",                 ECANCELED  },
        { FREEZER_ERROR_PREFIX "NotSupported",              EOPNOTSUPP },
        { FREEZER_ERROR_PREFIX "LimitsExceeded",            ENOBUFS    },
        /* Untrack: nothing to stop following there, as for a path that
         * names no group. */
        { FREEZER_ERROR_PREFIX "NotTracked",                ENOENT     },
        { SD_BUS_ERROR_ACCESS_DENIED,                       EACCES     },
        { SD_BUS_ERROR_INVALID_ARGS,                        EINVAL     },
        /* freezerd's own failure: not sd-bus' -EACCES for Failed, which
         * would read as the caller's permission (AccessDenied's). */
        { SD_BUS_ERROR_FAILED,                              EIO        },
        { SD_BUS_ERROR_NO_MEMORY,                           ENOMEM     },
        /* A group object that went away between GetGroup and GetAll. */
        { SD_BUS_ERROR_UNKNOWN_OBJECT,                      ENOENT     },
};

FREEZER_EXPORT const char *freezer_state_to_string(freezer_state state) {
        if ((unsigned) state >= ELEMENTSOF(state_table))
                return NULL;
        return state_table[state];
}

/* The index of s in table (n entries), or -1 when s is NULL or not there. */
static int string_table_index(const char *const *table, size_t n, const char *s) {
        if (s)
                for (size_t i = 0; i < n; i++)
                        if (streq(table[i], s))
                                return (int) i;
        return -1;
}

FREEZER_EXPORT freezer_state freezer_state_from_string(const char *s) {
        int i = string_table_index(state_table, ELEMENTSOF(state_table), s);

        return i < 0 ? FREEZER_STATE_UNKNOWN : (freezer_state) i;
}

/* The kernel's "frozen" as a FreezerState tells it: frozen, frozen-by-parent
 * and thawing (no flag set any more, the kernel still frozen) are frozen;
 * running, freezing and freezing-by-parent not yet. */
FREEZER_EXPORT int freezer_state_frozen(freezer_state state) {
        switch (state) {
        case FREEZER_STATE_FROZEN:
        case FREEZER_STATE_FROZEN_BY_PARENT:
        case FREEZER_STATE_THAWING:
                return 1;
        case FREEZER_STATE_RUNNING:
        case FREEZER_STATE_FREEZING:
        case FREEZER_STATE_FREEZING_BY_PARENT:
                return 0;
        case FREEZER_STATE_UNKNOWN:
                return -ENODATA;
        }
        return -EINVAL;
}

/* ---- errors ---- */

/* Record the outcome of a failed operation: keep the D-Bus error if there is
 * one, otherwise synthesize one from r. Returns the (mapped) negative errno. */
/* The negative errno of a D-Bus error (the table in freezer.h). */
static int error_to_errno(const sd_bus_error *e) {
        for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
                if (streq(e->name, error_table[i].name))
                        return -error_table[i].error;
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_DISCONNECTED))
                return -ECONNRESET;

        return -sd_bus_error_get_errno(e);
}

/* NoReply stands for things that are no timeout of freezerd's: the bus
 * daemon's answer when freezerd left the bus with the call unanswered (it
 * exited: "Message recipient disconnected from message bus without
 * replying"), and sd-bus' own when a call's method-call timeout passed
 * (reply_is_local_timeout()).  This is the first. */
static bool error_daemon_left(const sd_bus_error *e) {
        return sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) && e->message && strstr(e->message, "disconnected");
}

/* Name freezerd leaving the bus with a call unanswered as the rest of the
 * library does: -ECONNRESET. */
static void error_normalize(sd_bus_error *e) {
        if (error_daemon_left(e)) {
                sd_bus_error_free(e);
                (void) sd_bus_error_set(e, SD_BUS_ERROR_DISCONNECTED, MESSAGE_LEFT_BUS_UNANSWERED);
        }
}

/* The time (CLOCK_MONOTONIC µs) before which sd-bus cannot time out a call
 * of timeout usec sent after this: as sd_bus_call_async(), 0 is the bus's
 * default, UINT64_MAX none. */
static uint64_t call_until(sd_bus *bus, uint64_t usec) {
        uint64_t n = now_usec();

        if (usec == 0 && sd_bus_get_method_call_timeout(bus, &usec) < 0)
                usec = SD_BUS_DEFAULT_TIMEOUT_USEC;
        return usec >= UINT64_MAX - n ? UINT64_MAX : n + usec;
}

/* Whether reply, as it comes, is sd-bus' own NoReply for a call whose
 * method-call timeout passed (lost: the connection was lost when it came;
 * until: call_until() of the call), told without its words ("Method call
 * timed out", which any peer may send too).  sd-bus makes it up
 * (process_timeout(), bus_message_new_synthetic_error()) with the serial it
 * gives every message of its own making, (uint32_t) -1
 * (bus_seal_synthetic_message()), once the call's timeout passed, and only
 * while the connection is open: for a lost one it answers the calls in
 * flight so too ("Connection terminated").  A peer's counter reaches that
 * serial too, once in 4G messages (dbus-daemon's for a client, whose NoReply
 * says freezerd left without replying): one that comes before the timeout is
 * the peer's.  Its sender says nothing: sd-bus gives it the bus driver's
 * name, as dbus-daemon's own NoReply has. */
static bool reply_is_local_timeout(sd_bus_message *reply, bool lost, uint64_t until) {
        uint64_t cookie;

        return !lost && sd_bus_message_is_method_error(reply, SD_BUS_ERROR_NO_REPLY) > 0 &&
               sd_bus_message_get_cookie(reply, &cookie) >= 0 && cookie == UINT32_MAX && now_usec() >= until;
}

static int error_take(freezer *f, sd_bus_error *e, int r) {
        if (r >= 0)
                r = -EIO;

        sd_bus_error_free(&f->error);

        if (e && sd_bus_error_is_set(e)) {
                error_normalize(e);
                f->error = *e;
                *e = SD_BUS_ERROR_NULL;
                return error_to_errno(&f->error);
        }

        (void) sd_bus_error_set_errno(&f->error, r);
        return r;
}

static int error_set(freezer *f, int r) {
        return error_take(f, NULL, r);
}

/* Fail with a D-Bus error of our own making (name and message). */
static int error_set_named(freezer *f, const char *name, const char *message) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_error_set(&e, name, message);
        return error_take(f, &e, r);
}

/* Refuse an argument before anything is sent: -EINVAL, the last error
 * InvalidArgs with a message that names the argument and its value (a bare
 * "Invalid argument" left the caller to guess which). */
_printf_(2, 3)
static int error_invalid_arg(freezer *f, const char *fmt, ...) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *message = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0)
                return error_set(f, -ENOMEM);
        r = sd_bus_error_set(&e, SD_BUS_ERROR_INVALID_ARGS, message);
        return error_take(f, &e, r);
}

/* A freezer_resource out of range, refused. */
static int error_unknown_resource(freezer *f, freezer_resource res) {
        return error_invalid_arg(f, "Unknown resource %d (FREEZER_RESOURCE_CPU, _MEMORY, _IO or _IRQ)", (int) res);
}

/* The NULL path of a call that takes one, refused. */
static int error_null_path(freezer *f) {
        return error_invalid_arg(f, "The path is NULL");
}

/* ---- waiting for replies; the handlers' queue ---- */

/* As many messages as sd-bus holds in memory (its BUS_RQUEUE_MAX), where
 * sd_bus_call() failed with ENOBUFS: signals past it (a blocking call that
 * waits long under a flood of them, a program that does not dispatch) are
 * dropped rather than queued without end.  A test build sets a small one
 * (tests/meson.build), to reach it. */
#ifndef DEFERRED_MAX
#define DEFERRED_MAX (384U * 1024U)
#endif

static bool signal_drop_forced(void);

/* A message for handler, queued by one of the deferring wrappers below: the
 * slot sd-bus dispatches it through is the one at home.  Fails for lack of
 * memory, or with ENOBUFS past DEFERRED_MAX where limited (signals that can
 * be lost: never the replies to calls, which are as many as the calls and
 * which some state waits for, nor the rare signals that say the daemon or
 * the connection or a trigger went, nor a trigger's PressureExceeded, of
 * which at most one waits: defer_pressure_exceeded()).  sd-bus takes a
 * handler's failure as handled: the message is dropped, the loop goes on.
 * states_lost() makes up for a GroupStatesChanged or a GroupsChanged (a
 * freezerd without GroupStatesChanged), ids_lost() for an
 * InterfacesAdded/Removed in what the state callback knows, groups_lost()
 * for one the group callback missed. */
static int defer_full(freezer *f, sd_bus_message *m, sd_bus_message_handler_t handler, void *userdata,
                      sd_bus_slot **home, bool limited, deferred **ret) {
        deferred *d;

        if (limited && (f->n_deferred >= DEFERRED_MAX || signal_drop_forced()))
                return -ENOBUFS;
        d = malloc(sizeof *d);
        if (!d)
                return -ENOMEM;
        *d = (deferred) {
                .m = sd_bus_message_ref(m),
                .handler = handler,
                .userdata = userdata,
                .slot = sd_bus_slot_ref(sd_bus_get_current_slot(f->bus)),
                .home = home,
        };
        *f->deferred_tail = d;
        f->deferred_tail = &d->next;
        f->n_deferred++;
        if (ret)
                *ret = d;
        return 0;
}

static int defer(freezer *f, sd_bus_message *m, sd_bus_message_handler_t handler, void *userdata,
                 sd_bus_slot **home, bool limited) {
        return defer_full(f, m, handler, userdata, home, limited, NULL);
}

/* The wrapper name_queue() of the handler name(), for a slot the handle keeps
 * in field: it queues what sd-bus hands it (limited: see defer()). */
#define DEFINE_QUEUED(name, field, limited)                                                     \
        static int name##_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) { \
                freezer *f = userdata;                                                          \
                return defer(f, m, name, f, &f->field, limited);                                \
        }

#ifdef FREEZER_TEST_HOOKS
/* One of the counts below taken: true (fail, as without the memory) while
 * it was not 0. */
static bool hook_take(unsigned *count) {
        if (*count == 0)
                return false;
        (*count)--;
        return true;
}

/* Test builds only (tests/meson.build): the next this many replies of
 * reloads fail to be queued, as without the memory. */
extern unsigned freezer_test_fail_reload_replies;
unsigned freezer_test_fail_reload_replies;

/* The next this many replies to the state callback's SubscribeGroupStates
 * after a start of freezerd are taken for its NoMemory (freezerd did
 * subscribe: the retry's subscription is a second one). */
extern unsigned freezer_test_nomem_subscriptions;
unsigned freezer_test_nomem_subscriptions;

/* Programs built with the hooks (freezectl-test-hooks) take the count from
 * the environment. */
static void __attribute__((constructor)) test_hooks_init(void) {
        const char *e = getenv("FREEZER_TEST_FAIL_RELOAD_REPLIES");

        if (e)
                freezer_test_fail_reload_replies = (unsigned) strtoul(e, NULL, 10);
        e = getenv("FREEZER_TEST_NOMEM_SUBSCRIPTIONS");
        if (e)
                freezer_test_nomem_subscriptions = (unsigned) strtoul(e, NULL, 10);
}

/* The next this many replies of the state callback's states read again
 * (ListGroups() after its Ids) fail alone: the Ids' replies are kept. */
extern unsigned freezer_test_fail_reread_replies;
unsigned freezer_test_fail_reread_replies;

static int on_states_reread(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error);

static bool reload_reply_fails(sd_bus_message_handler_t handler) {
        return (handler == on_states_reread && hook_take(&freezer_test_fail_reread_replies)) ||
               hook_take(&freezer_test_fail_reload_replies);
}

/* The next this many loads of the state callback's Ids fail, as without
 * the memory. */
extern unsigned freezer_test_fail_ids_loads;
unsigned freezer_test_fail_ids_loads;

static bool ids_load_fails(void) {
        return hook_take(&freezer_test_fail_ids_loads);
}

/* The next this many lists of the group callback's groups (the one at its
 * installation too) fail to be read, as without the memory. */
extern unsigned freezer_test_fail_group_lists;
unsigned freezer_test_fail_group_lists;

static bool group_list_fails(void) {
        return hook_take(&freezer_test_fail_group_lists);
}

/* The next this many signals that may be dropped (defer()'s limited) are,
 * as past DEFERRED_MAX: for a build with the real bound. */
extern unsigned freezer_test_drop_signals;
unsigned freezer_test_drop_signals;

static bool signal_drop_forced(void) {
        return hook_take(&freezer_test_drop_signals);
}

static bool subscription_nomem_forced(void) {
        return hook_take(&freezer_test_nomem_subscriptions);
}

/* The next this many sends of reloads fail, as without the memory, or with
 * freezer_test_reload_send_errno where it is not 0 (ENOBUFS: sd-bus' write
 * queue full): their calls (reload_call()), the group callback's first list
 * (groups_load()), and the state callback's match set anew and
 * SubscribeGroups() within a dispatch (state_match_set() not waited for,
 * states_fallback_subscribe()), each a send. */
extern unsigned freezer_test_fail_reload_sends;
unsigned freezer_test_fail_reload_sends;
extern unsigned freezer_test_reload_send_errno;
unsigned freezer_test_reload_send_errno;

static int reload_send_fails(void) {
        if (!hook_take(&freezer_test_fail_reload_sends))
                return 0;
        return freezer_test_reload_send_errno ? -(int) freezer_test_reload_send_errno : -ENOMEM;
}

/* The live entries of the state callback's table. */
size_t freezer_test_state_groups(freezer *f);
size_t freezer_test_state_groups(freezer *f) {
        return group_table_size(&f->groups);
}
#else
static bool reload_reply_fails(_unused_ sd_bus_message_handler_t handler) {
        return false;
}

static bool ids_load_fails(void) {
        return false;
}

static bool group_list_fails(void) {
        return false;
}

static bool signal_drop_forced(void) {
        return false;
}

static bool subscription_nomem_forced(void) {
        return false;
}

static int reload_send_fails(void) {
        return 0;
}
#endif

/* A reload's reply for handler (through the slot at home), queued as
 * defer() queues it.  Without the memory the reply is lost, and sd-bus
 * drops a handler's error: the slot at home would wait for it for ever, and
 * with it every later reload (they start only while none is in flight).  So
 * the slot is let go, a later freezer_dispatch() starts the reload again
 * (*retry, reload_lost()), and the dispatch that sees the loss fails with it
 * (reload_error). */
static int defer_reload_reply(freezer *f, sd_bus_message *m, sd_bus_message_handler_t handler,
                              sd_bus_slot **home, bool *retry) {
        int r = reload_reply_fails(handler) ? -ENOMEM : defer(f, m, handler, f, home, false);

        if (r < 0) {
                *home = sd_bus_slot_unref(*home);
                reload_lost(f, retry, r);
        }
        return r;
}

static trigger_entry *trigger_get(freezer *f, uint32_t id);

static deferred *deferred_pop(freezer *f) {
        deferred *d = f->deferred;

        if (d) {
                f->n_deferred--;
                f->deferred = d->next;
                if (!f->deferred)
                        f->deferred_tail = &f->deferred;
                if (d->exceeded) {
                        /* No longer waiting: the trigger's next one is queued
                         * anew.  (The trigger may be gone, or one of the same
                         * Id added since, which does not point here.) */
                        trigger_entry *t = trigger_get(f, d->trigger_id);

                        if (t && t->exceeded == d)
                                t->exceeded = NULL;
                }
        }
        return d;
}

static void deferred_free(deferred *d) {
        sd_bus_message_unref(d->m);
        sd_bus_slot_unref(d->slot);
        free(d);
}

static void deferred_clear(freezer *f) {
        deferred *d;

        while ((d = deferred_pop(f)))
                deferred_free(d);
}

/* Handle the oldest queued message, unless the handle has let go of the slot
 * it came through since (a callback removed, a reload of Ids started anew). */
static void deferred_run_one(freezer *f) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        deferred *d = deferred_pop(f);

        if (!d)
                return;
        if (d->slot && *d->home == d->slot)
                (void) d->handler(d->m, d->userdata, &e);
        deferred_free(d);
}

static int on_reply_wait(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        reply_wait *w = userdata;

        if (!w->reply) {
                w->reply = sd_bus_message_ref(m);
                w->lost = sd_bus_is_open(w->bus) <= 0;
                w->timed_out = reply_is_local_timeout(m, w->lost, w->until);
        }
        return 1;
}

/* Until w's reply came (or sd-bus' own error for it: the call's timeout, the
 * connection lost).  sd_bus_call() waits in ppoll(), and before libsystemd
 * 253 gives up with -EINTR when a signal the program handles comes (a
 * container manager's SIGCHLD, a timer's), the call sent and its answer
 * lost.  sd_bus_wait() says -EINTR for it, too: here the wait goes on.
 * sd_bus_process() handles what comes meanwhile, where the handlers only
 * queue it (defer()): no callback runs.  Returns 0, or sd-bus' failure. */
static int wait_reply(sd_bus *bus, reply_wait *w) {
        for (;;) {
                int r = sd_bus_process(bus, NULL);

                /* Checked after every step, whatever it returned: sd-bus
                 * says 0 for a step that timed a call out, as the call's
                 * callback returned. */
                if (w->reply)
                        return 0;
                if (r > 0)
                        continue;
                if (r == 0)
                        r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0 && r != -EINTR)
                        return r;
        }
}

/* w's reply as sd_bus_call() returns it: the reply (1), or the error and its
 * errno.  sd-bus' own errors are named as sd_bus_call() names them: the
 * call's timeout Timeout (ETIMEDOUT), a lost connection Disconnected
 * (ECONNRESET). */
static int reply_wait_result(reply_wait *w, sd_bus_error *error, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = TAKE_PTR(w->reply);
        const sd_bus_error *e;

        if (!sd_bus_message_is_method_error(reply, NULL)) {
                if (ret_reply)
                        *ret_reply = TAKE_PTR(reply);
                return 1;
        }

        e = sd_bus_message_get_error(reply);
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) && w->lost)
                return sd_bus_error_set_errno(error, ECONNRESET);
        if (w->timed_out)
                return sd_bus_error_set_errno(error, ETIMEDOUT);
        return sd_bus_error_copy(error, e);
}

/* sd_bus_call(), waiting on through signals (wait_reply()). */
static int call_wait(freezer *f, sd_bus_message *m, uint64_t usec, sd_bus_error *error, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        reply_wait w = { .bus = f->bus, .until = call_until(f->bus, usec) };
        int r;

        r = sd_bus_call_async(f->bus, &slot, m, on_reply_wait, &w, usec);
        if (r >= 0)
                r = wait_reply(f->bus, &w);
        if (r < 0)
                return sd_bus_error_set_errno(error, r);
        return reply_wait_result(&w, error, ret_reply);
}

/* sd_bus_call_method() to freezerd, as call_wait(). */
static int call_method_wait(freezer *f, const char *path, const char *interface, const char *member,
                            sd_bus_error *error, sd_bus_message **ret_reply, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(f->bus, &m, FREEZER_SERVICE, path, interface, member);
        if (r < 0)
                return sd_bus_error_set_errno(error, r);
        if (types && *types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return sd_bus_error_set_errno(error, r);
        }
        return call_wait(f, m, 0, error, ret_reply);
}

/* A path that sd-bus would not append: for a string that is not NULL, -EINVAL
 * means it is not UTF-8. Said as freezer_freeze() says it, instead of a bare
 * "Invalid argument". */
static int path_append_failed(int r, sd_bus_error *error) {
        if (r == -EINVAL && !sd_bus_error_is_set(error))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, MESSAGE_PATH_NOT_UTF8);
        return r;
}

static int new_manager_call(freezer *f, const char *member, sd_bus_message **ret) {
        return sd_bus_message_new_method_call(f->bus, ret,
                                              FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                                              FREEZER_MANAGER_INTERFACE, member);
}

/* Manager.member(path), waited for; a path sd-bus would not append fails as
 * path_append_failed() says it (sd_bus_call_method() set its own "Invalid
 * argument" first, which Track, Untrack and the pressure calls reported). */
static int call_manager_path(freezer *f, const char *member, const char *path, sd_bus_error *error,
                             sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(f, member, &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", path);
        if (r < 0)
                return path_append_failed(r, error);
        return call_wait(f, m, 0, error, ret_reply);
}

/* A handle of freezer_open_private(): a peer-to-peer connection to freezerd,
 * not to a bus broker. */
static bool is_direct(freezer *f) {
        return sd_bus_is_bus_client(f->bus) <= 0;
}

/* The match of one of freezerd's signals.  On a direct connection messages
 * carry no sender (nothing but freezerd is at the other end); on the bus,
 * only the daemon's name may send them. */
#define MATCH_SIGNAL_BUS "type='signal',sender='" FREEZER_SERVICE "',"
#define MATCH_SIGNAL_DIRECT "type='signal',"
#define MATCH_GROUPS_CHANGED \
        "path='" FREEZER_MANAGER_PATH "',interface='" FREEZER_MANAGER_INTERFACE "',member='GroupsChanged'"
#define MATCH_GROUP_STATES_CHANGED \
        "path='" FREEZER_MANAGER_PATH "',interface='" FREEZER_MANAGER_INTERFACE "',member='GroupStatesChanged'"
#define MATCH_INTERFACES "interface='org.freedesktop.DBus.ObjectManager',path='" FREEZER_MANAGER_PATH "'"
static const char *signal_match(freezer *f, const char *bus_rule, const char *direct_rule) {
        return is_direct(f) ? direct_rule : bus_rule;
}

FREEZER_EXPORT const char *freezer_last_error_name(freezer *f) {
        return f && sd_bus_error_is_set(&f->error) ? f->error.name : NULL;
}

FREEZER_EXPORT const char *freezer_last_error_message(freezer *f) {
        return f && sd_bus_error_is_set(&f->error) ? f->error.message : NULL;
}

/* ---- open/close ---- */

/* How long the handshake may take: as long as sd-bus waits for a method
 * call's reply. sd-bus' own authentication timeout is 90 s, and a freezerd
 * that is stopped (SIGSTOP) still has the kernel accept connections to its
 * private socket, so without this, freezer_open_private() would hang that
 * long where every call gives up after 25 s. */
#define READY_TIMEOUT_USEC SD_BUS_DEFAULT_TIMEOUT_USEC

/* Until the connection is set up (authenticated; on a bus, Hello
 * answered), or -ETIMEDOUT. */
static int wait_ready(sd_bus *bus) {
        uint64_t deadline = now_usec() + READY_TIMEOUT_USEC;

        for (;;) {
                uint64_t now;
                int r = sd_bus_is_ready(bus);

                if (r != 0)
                        return r < 0 ? r : 0;
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                now = now_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                /* A signal (one the program handles: a timer's, SIGCHLD) is
                 * no failure of the handshake, which goes on until its
                 * deadline; sd_bus_wait() says -EINTR for it. */
                r = sd_bus_wait(bus, deadline - now);
                if (r < 0 && r != -EINTR)
                        return r;
        }
}

/* The errno of a failed freezer_open_*(), as freezer.h lists them. sd-bus
 * reports one failure in several ways, depending on where in the handshake
 * it noticed, and with errnos that say little to a caller: name each cause
 * once. */
static int open_errno(int r) {
        switch (r) {
        case -EPIPE:
        case -ENOTCONN:
        case -ESHUTDOWN:
                /* The peer closed the connection during the handshake: written
                 * to (EPIPE) or read from (ECONNRESET), or found closed
                 * afterwards (ENOTCONN). */
                return -ECONNRESET;
        case -EPERM:
                /* The peer answered our authentication with anything but OK. */
                return -EACCES;
        case -E2BIG:
                /* sd-bus' word for a socket path longer than sun_path. */
                return -ENAMETOOLONG;
        case -ENOMEDIUM:
                /* sd_bus_open_user() without $DBUS_SESSION_BUS_ADDRESS and
                 * $XDG_RUNTIME_DIR: there is no user bus to find. */
                return -ENOENT;
        case -EBADR:
        case -EBADMSG:
        case -EPROTO:
                /* Hello refused as an unknown method (EBADR: the peer is no bus
                 * broker, e.g. freezerd's private socket given to
                 * freezer_open_address()), or an answer that is no D-Bus. */
                return -EPROTO;
        default:
                return r;
        }
}

/* Takes over *bus (and sets it NULL) on success. On failure, an errno as
 * open_errno() names it, the caller closes *bus without flushing it
 * (sd_bus_close_unref()): a flush would wait for the handshake that did not
 * come, for sd-bus' own 90 s. */
static int freezer_new(freezer **ret, sd_bus **bus) {
        freezer *f;
        int r;

        /* Finish connecting and authenticating now, so that errors show up
         * here, and so that no handshake is pending when the caller starts to
         * poll the fd for POLLIN only. */
        r = wait_ready(*bus);
        if (r < 0)
                return open_errno(r);

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;

        f->bus = TAKE_PTR(*bus);
        f->error = SD_BUS_ERROR_NULL;
        f->deferred_tail = &f->deferred;
        *ret = f;
        return 0;
}

static bool address_is_valid(const char *address);

/* The bus address in the environment variable name, as sd-bus reads it: set
 * and without a "transport:" in an entry ("bogus", a typo, or empty), it is
 * -EINVAL as for freezer_open_address(), where sd-bus skips the entry and
 * says ECONNREFUSED, as if a bus had refused us. */
static int env_address_check(const char *name) {
        const char *e = secure_getenv(name);

        return e && !address_is_valid(e) ? -EINVAL : 0;
}

/* The system or the user bus, which bus_open() opens, unless the environment
 * variable env_name, which it reads, holds no valid address. */
static int open_default_bus(freezer **ret, const char *env_name, int (*bus_open)(sd_bus **ret)) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (!ret)
                return -EINVAL;
        *ret = NULL;

        r = env_address_check(env_name);
        if (r < 0)
                return r;

        r = bus_open(&bus);
        if (r < 0)
                return open_errno(r);

        return freezer_new(ret, &bus);
}

FREEZER_EXPORT int freezer_open_system(freezer **ret) {
        return open_default_bus(ret, "DBUS_SYSTEM_BUS_ADDRESS", sd_bus_open_system);
}

FREEZER_EXPORT int freezer_open_user(freezer **ret) {
        return open_default_bus(ret, "DBUS_SESSION_BUS_ADDRESS", sd_bus_open_user);
}

/* direct: the address is freezerd's private socket, a peer-to-peer
 * connection to the daemon itself (no Hello; the daemon knows us by the
 * socket's credentials); otherwise that of a bus broker, where we talk to a
 * well-known name. */
static int open_address(freezer **ret, const char *address, bool direct) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;

        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;

        r = sd_bus_set_bus_client(bus, !direct);
        if (r < 0)
                return r;

        r = sd_bus_start(bus);
        if (r < 0)
                return open_errno(r);

        return freezer_new(ret, &bus);
}

/* Whether every entry of a D-Bus address ("transport:key=value,...", entries
 * separated by ';') names a transport. sd-bus skips entries without one and
 * then says ECONNREFUSED, as if a daemon had refused us: a typo is EINVAL. */
static bool address_is_valid(const char *address) {
        bool any = false;

        for (const char *p = address; *p;) {
                size_t n = strcspn(p, ";");
                const char *colon = memchr(p, ':', n);

                if (n > 0) {
                        if (!colon || colon == p)
                                return false;
                        any = true;
                }
                p += n;
                if (*p == ';')
                        p++;
        }
        return any;
}

FREEZER_EXPORT int freezer_open_address(freezer **ret, const char *address) {
        if (ret)
                *ret = NULL;
        if (!ret || !address || !address_is_valid(address))
                return -EINVAL;
        return open_address(ret, address, false);
}

/* A value in a D-Bus address: bytes other than -0-9A-Za-z_/.* as %XX. */
static char *bus_address_escape(const char *s) {
        static const char hex[] = "0123456789abcdef";
        char *e = malloc(strlen(s) * 3 + 1), *p = e;

        if (!e)
                return NULL;
        for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
                if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    strchr("-_/.*", *c))
                        *p++ = (char) *c;
                else {
                        *p++ = '%';
                        *p++ = hex[*c >> 4];
                        *p++ = hex[*c & 15];
                }
        }
        *p = 0;
        return e;
}

FREEZER_EXPORT int freezer_open_private(freezer **ret, const char *path) {
        _cleanup_free_ char *escaped = NULL, *address = NULL;

        if (ret)
                *ret = NULL;
        if (!ret || (path && !*path))
                return -EINVAL;
        /* sd-bus would say E2BIG; the path does not fit a sockaddr_un. */
        if (strlen(path ?: FREEZER_PRIVATE_SOCKET) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                return -ENAMETOOLONG;

        escaped = bus_address_escape(path ?: FREEZER_PRIVATE_SOCKET);
        if (!escaped || asprintf(&address, "unix:path=%s", escaped) < 0)
                return -ENOMEM;
        return open_address(ret, address, true);
}

static void held_drop(freezer *f) {
        for (size_t i = 0; i < f->n_held; i++)
                sd_bus_message_unref(f->held[i]);
        f->held = mfree(f->held);
        f->n_held = 0;
        f->held_lost = false;
}

/* Forgets what the state callback knew, and any (re)load of Ids. */
static void cache_clear(freezer *f) {
        group_table_clear(&f->groups);
        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        held_drop(f);
        /* Of the reads just cancelled with ids_slot: a callback installed
         * again starts from none. */
        f->reread_in = f->reread_again = f->ids_loading = f->ids_again = false;
        f->states_retry = f->states_fallback = f->states_resubscribe = false;
        reload_retries_dropped(f, &f->states_retry);
}

static void trigger_entry_clear(trigger_entry *t) {
        free(t->object);
        free(t->path);
        free(t->owner);
        *t = (trigger_entry) {};
}

static void pending_call_free(pending_call *c);
static void groups_clear(freezer *f);

/* How long freezer_close() waits for a peer that takes nothing of what is
 * still queued for it. */
#define CLOSE_STALL_USEC (5 * USEC_PER_SEC)

/* Until fd is ready for events, an error or hang-up, or deadline: > 0 when
 * ready, 0 otherwise. */
static int wait_fd(int fd, short events, uint64_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int r = poll(&p, 1, poll_timeout_ms(deadline));

                if (r > 0)
                        return !(p.revents & (POLLERR | POLLNVAL)) && (p.revents & events);
                if (r == 0 || errno != EINTR)
                        return 0;
        }
}

/* sd_bus_flush(), bounded: it waits for as long as the peer takes to read, for
 * ever once the peer (freezerd, or dbus-daemon) stopped reading with more
 * queued than the socket holds.  Here the wait goes on while the peer reads,
 * however slowly: each time the full socket becomes writable again, it read
 * some.  After CLOSE_STALL_USEC in which it read nothing, the rest is left.
 * Returns whether everything was written. */
static bool flush_bounded(sd_bus *bus, int fd) {
        for (;;) {
                int r;

                /* Writes what the socket takes (and reads one message, which
                 * no slot is left to dispatch). */
                if (sd_bus_process(bus, NULL) < 0)
                        return false;
                /* 0 is no loss: sd-bus asks for no POLLIN while messages wait
                 * in memory (read by a blocking call), and it took two such
                 * for a lost connection, skipping what makes freezerd take
                 * the calls in flight. */
                r = sd_bus_get_events(bus);
                if (r < 0 || sd_bus_is_open(bus) <= 0)
                        return false; /* the connection is gone */
                if (!(r & POLLOUT))
                        return true;
                /* The socket is full: wait until the peer made room. */
                if (!wait_fd(fd, POLLOUT, now_usec() + CLOSE_STALL_USEC))
                        return false;
        }
}

/* On freezerd's private socket, after everything is written and while calls
 * are in flight: until freezerd has read it all.  freezerd's sd-bus gives up
 * on a connection as soon as a reply to it fails, with what it had not read
 * yet: closing right after the last write lost a call queued behind one whose
 * reply came after the close (checked).  So only our sending side is shut;
 * freezerd reads on, answers into our socket (read and dropped here), reaches
 * the end and closes its side.  dbus-daemon needs none of this: it routes all
 * a connection sent before it went.  Bounded as flush_bounded(). */
static void drain_until_peer_closes(int fd) {
        uint64_t deadline = now_usec() + CLOSE_STALL_USEC;

        if (shutdown(fd, SHUT_WR) < 0)
                return;
        while (wait_fd(fd, POLLIN, deadline) > 0) {
                char buf[16384];
                ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);

                if (k == 0)
                        return; /* freezerd read everything and closed */
                if (k < 0 && errno != EAGAIN && errno != EINTR)
                        return;
                if (k > 0) /* freezerd is at work on what we sent */
                        deadline = now_usec() + CLOSE_STALL_USEC;
        }
}

/* On the bus, after everything is written and while calls are in flight:
 * one round trip to freezerd.  freezerd asks dbus-daemon for the uid of a
 * caller it does not know yet, and holds the caller's calls meanwhile; were
 * the caller gone by the answer, it would refuse them ("it left the bus"),
 * and a freezer_close() right after a freezer_*_async() would undo the call.
 * A caller's messages are held in order, so the answer to this Ping comes
 * once freezerd knows the uid and has taken the calls.  As long as any call
 * may wait for its answer (sd-bus's 25 s): freezerd may take a while over a
 * large call (a 26 MB batch took 0.5 s here, 12 s under AddressSanitizer). */
static void ping_daemon(sd_bus *bus) {
        uint64_t deadline = now_usec() + SD_BUS_DEFAULT_TIMEOUT_USEC;

        for (;;) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
                uint64_t now = now_usec();

                if (now >= deadline)
                        return;
                if (sd_bus_message_new_method_call(bus, &m, FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                                                   "org.freedesktop.DBus.Peer", "Ping") < 0)
                        return;
                /* sd-bus before v253 gives up the wait with -EINTR when a
                 * signal the program handles comes (a container manager's
                 * SIGCHLD), and the close went on at once: freezerd then
                 * refused the calls of a caller gone.  Another Ping serves as
                 * well (the first one's answer is dropped when it comes). */
                if (sd_bus_call(bus, m, deadline - now, NULL, NULL) != -EINTR)
                        return;
        }
}

FREEZER_EXPORT freezer *freezer_close(freezer *f) {
        bool calls_in_flight;
        int fd;

        if (!f)
                return NULL;

        if (f->dispatching) {
                /* From a callback: sd-bus and the loop that called it still use
                 * the handle.  Nothing more is called back; freezer_dispatch()
                 * frees it on its way out. */
                f->closing = true;
                f->state_cb = NULL;
                f->group_cb = NULL;
                f->pressure_cb = NULL;
                f->pressure_removed_cb = NULL;
                f->resync_cb = NULL;
                f->calls_at_close = f->calls != NULL;
                /* Nor for what was queued (which may name the calls). */
                deferred_clear(f);
                while (f->calls)
                        pending_call_free(f->calls);
                return NULL;
        }
        calls_in_flight = f->calls_at_close || f->calls; /* cancelled ones included */

        deferred_clear(f);

        sd_bus_slot_unref(f->match_slot);
        sd_bus_slot_unref(f->group_slot);
        groups_clear(f);
        sd_bus_slot_unref(f->filter_slot);
        sd_bus_slot_unref(f->owner_slot);
        /* Calls in flight are forgotten: no callback runs for them. */
        while (f->calls)
                pending_call_free(f->calls);
        for (size_t i = 0; i < f->n_triggers; i++)
                trigger_entry_clear(&f->triggers[i]);
        free(f->triggers);
        cache_clear(f); /* and ids_slot, a (re)load of Ids in flight */
        sd_bus_error_free(&f->error);
        sd_bus_error_free(&f->reload_bus_error);
        /* Only calls in flight need the daemon to take them: without any,
         * a close costs no round trip. */
        fd = sd_bus_get_fd(f->bus);
        if (fd >= 0 && flush_bounded(f->bus, fd) && calls_in_flight) {
                if (is_direct(f))
                        drain_until_peer_closes(fd);
                else
                        ping_daemon(f->bus);
        }
        sd_bus_close_unref(f->bus);
        free(f);
        return NULL;
}

/* ---- state cache ---- */

static group_entry *cache_get(freezer *f, const char *object) {
        return group_table_get_object(&f->groups, object);
}

/* Notes what was said of a group (id and path, if given, fill in its entry). */
static void cache_update(freezer *f, const char *object, const char *path, const state_props *p) {
        group_entry *e;

        if (!f->state_cb || !object)
                return;

        e = group_table_put(&f->groups, object, p->id, path);
        if (!e)
                return; /* Out of memory or full: we only lose a hint. */

        if (p->have_state) {
                e->state = p->state;
                e->have_state = true;
        }
        if (p->have_frozen) {
                e->frozen = p->frozen;
                e->have_frozen = true;
        }
}

static void cache_remove(freezer *f, const char *object) {
        group_table_remove_object(&f->groups, object);
}

/* ---- method calls ---- */

/* The Freeze or Thaw call; a path sd-bus cannot carry fails with InvalidArgs. */
static int build_freeze_or_thaw(freezer *f, const char *member, const char *path, uint64_t timeout_usec,
                                uint64_t flags, sd_bus_message **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(f, member, &m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "stt", path, timeout_usec, flags);
        if (r < 0)
                return path_append_failed(r, error);

        *ret = TAKE_PTR(m);
        return 0;
}

static int freeze_or_thaw(freezer *f, const char *member, const char *path,
                          uint64_t timeout_usec, uint64_t flags) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!f)
                return -EINVAL;
        if (!path)
                return error_null_path(f);

        r = build_freeze_or_thaw(f, member, path, timeout_usec, flags, &m, &error);
        if (r < 0)
                return error_take(f, &error, r);

        r = call_wait(f, m, wait_call_timeout_usec(timeout_usec, flags & FREEZER_NO_WAIT), &error, &reply);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

FREEZER_EXPORT int freezer_freeze(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags) {
        return freeze_or_thaw(f, "Freeze", path, timeout_usec, flags);
}

FREEZER_EXPORT int freezer_thaw(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags) {
        return freeze_or_thaw(f, "Thaw", path, timeout_usec, flags);
}

/* ---- batches ---- */

/* dbus-daemon's default max_message_size; larger messages make it drop the
 * connection. */
#define BUS_MESSAGE_SIZE_HINT (32U * 1024U * 1024U)

/* Explain a lost connection after sending a large message: the bus broker
 * drops clients that send messages above its limit, which sd-bus reports
 * only as ECONNRESET. */
static int large_message_failed(int r, size_t size, sd_bus_error *error) {
        if (size < BUS_MESSAGE_SIZE_HINT || !(r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE))
                return r;

        sd_bus_error_free(error);
        return sd_bus_error_set_errnof(error, r,
                                       "%s (the request was about %zu MiB: the bus may refuse "
                                       "messages that large, dbus-daemon's default limit is 32 MiB; "
                                       "split the batch)",
                                       strerror(-r), size / (1024 * 1024));
}

/* The ApplyBatch call; *ret_size is about its size on the wire. */
static int build_apply_batch(freezer *f, const freezer_request *requests, size_t n, const char *order,
                             uint64_t timeout_usec, uint64_t flags, sd_bus_message **ret, size_t *ret_size,
                             sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        size_t size = 0;
        int r;

        r = new_manager_call(f, "ApplyBatch", &m);
        if (r < 0)
                return r;

        r = sd_bus_message_open_container(m, 'a', "(sb)");
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                r = sd_bus_message_append(m, "(sb)", requests[i].path, (int) requests[i].freeze);
                if (r == -EINVAL)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 MESSAGE_REQUEST_NOT_UTF8, i);
                if (r < 0)
                        return r;

                /* Its size in the message: length, string, NUL, alignment, boolean. */
                size += strlen(requests[i].path) + 16;
        }

        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "stt", order, timeout_usec, flags);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        *ret_size = size;
        return 0;
}

/* The arguments freezer_apply_batch() and its _async() form refuse before
 * anything is sent: 0, or -EINVAL with the last error naming the one. */
static int apply_batch_args_check(freezer *f, const freezer_request *requests, size_t n, freezer_order order) {
        if (n > 0 && !requests)
                return error_invalid_arg(f, "The requests are NULL, with n %zu", n);
        if (!order_to_string(order))
                return error_invalid_arg(f, "Unknown order %d (FREEZER_ORDER_AUTO, FREEZER_ORDER_TOP_DOWN or "
                                            "FREEZER_ORDER_BOTTOM_UP)", (int) order);
        for (size_t i = 0; i < n; i++)
                if (!requests[i].path)
                        return error_invalid_arg(f, "Request %zu: the path is NULL", i);
        return 0;
}

static int apply_batch(freezer *f, const freezer_request *requests, size_t n, const char *order,
                       uint64_t timeout_usec, uint64_t flags,
                       uint32_t *ret_writes, uint32_t *ret_skipped, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        uint32_t writes, skipped;
        size_t size;
        int r;

        r = build_apply_batch(f, requests, n, order, timeout_usec, flags, &m, &size, error);
        if (r < 0)
                return r;

        r = call_wait(f, m, wait_call_timeout_usec(timeout_usec, flags & FREEZER_NO_WAIT), error, &reply);
        if (r < 0)
                return large_message_failed(r, size, error);

        r = sd_bus_message_read(reply, "uu", &writes, &skipped);
        if (r < 0)
                return r;

        if (ret_writes)
                *ret_writes = writes;
        if (ret_skipped)
                *ret_skipped = skipped;
        return 0;
}

FREEZER_EXPORT int freezer_apply_batch(freezer *f, const freezer_request *requests, size_t n,
                                       freezer_order order, uint64_t timeout_usec, uint64_t flags,
                                       uint32_t *ret_writes, uint32_t *ret_skipped) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret_writes)
                *ret_writes = 0;
        if (ret_skipped)
                *ret_skipped = 0;
        if (!f)
                return -EINVAL;
        r = apply_batch_args_check(f, requests, n, order);
        if (r < 0)
                return r;

        r = apply_batch(f, requests, n, order_to_string(order), timeout_usec, flags,
                        ret_writes, ret_skipped, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

FREEZER_EXPORT void freezer_strv_free(char **l) {
        if (!l)
                return;

        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

static int build_freeze_except(freezer *f, const char *path, const char *const *exclude, size_t n_exclude,
                               uint64_t timeout_usec, uint64_t flags, sd_bus_message **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(f, "FreezeExcept", &m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "s", path);
        if (r < 0)
                return path_append_failed(r, error);

        r = sd_bus_message_open_container(m, 'a', "s");
        if (r < 0)
                return r;

        for (size_t i = 0; i < n_exclude; i++) {
                r = sd_bus_message_append(m, "s", exclude[i]);
                if (r == -EINVAL)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Excluded path %zu is not valid UTF-8", i);
                if (r < 0)
                        return r;
        }

        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "tt", timeout_usec, flags);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(m);
        return 0;
}

/* FreezeExcept's reply: the groups frozen, an empty array rather than NULL
 * (which sd_bus_message_read_strv() gives for an empty one). */
static int read_frozen_list(sd_bus_message *reply, char ***ret) {
        char **l = NULL;
        int r;

        r = sd_bus_message_read_strv(reply, &l);
        if (r < 0)
                return r;

        if (!l) {
                l = calloc(1, sizeof(char *));
                if (!l)
                        return -ENOMEM;
        }

        *ret = l;
        return 0;
}

static int freeze_except_args_check(freezer *f, const char *path, const char *const *exclude, size_t n_exclude) {
        if (!path)
                return error_null_path(f);
        if (n_exclude > 0 && !exclude)
                return error_invalid_arg(f, "The excluded paths are NULL, with n_exclude %zu", n_exclude);
        for (size_t i = 0; i < n_exclude; i++)
                if (!exclude[i])
                        return error_invalid_arg(f, "Excluded path %zu is NULL", i);
        return 0;
}

static int freeze_except(freezer *f, const char *path, const char *const *exclude, size_t n_exclude,
                         uint64_t timeout_usec, uint64_t flags, char ***ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r;

        r = build_freeze_except(f, path, exclude, n_exclude, timeout_usec, flags, &m, error);
        if (r < 0)
                return r;

        r = call_wait(f, m, wait_call_timeout_usec(timeout_usec, flags & FREEZER_NO_WAIT), error, &reply);
        if (r < 0)
                return r;

        return read_frozen_list(reply, ret);
}

FREEZER_EXPORT int freezer_freeze_except(freezer *f, const char *path,
                                         const char *const *exclude, size_t n_exclude,
                                         uint64_t timeout_usec, uint64_t flags, char ***ret_frozen) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        char **l = NULL;
        size_t n = 0;
        int r;

        if (ret_frozen)
                *ret_frozen = NULL;
        if (!f)
                return -EINVAL;
        r = freeze_except_args_check(f, path, exclude, n_exclude);
        if (r < 0)
                return r;

        r = freeze_except(f, path, exclude, n_exclude, timeout_usec, flags, &l, &error);
        if (r < 0)
                return error_take(f, &error, r);

        while (l[n])
                n++;

        if (ret_frozen)
                *ret_frozen = l;
        else
                freezer_strv_free(l);

        return n > INT_MAX ? INT_MAX : (int) n;
}

/* ---- calls in flight ---- */

static void pending_call_free(pending_call *c) {
        if (!c)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                c->f->calls = c->next;
        if (c->next)
                c->next->prev = c->prev;
        sd_bus_slot_unref(c->slot);
        free(c);
}

/* The reply (or sd-bus' own error: the call timed out, or the connection was
 * lost) of a call of freezer_*_async(): read it and hand it to the caller's
 * callback, once. */
static int on_call_reply(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        pending_call *c = userdata;
        freezer *f = c->f;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        freezer_call_result result = { .id = c->id };
        char **frozen = NULL;
        freezer_call_callback cb = c->cb;
        void *cb_userdata = c->userdata;
        int r = 0;

        if (c->timed_out) /* named as the blocking form names it */
                r = sd_bus_error_set_errno(&error, -ETIMEDOUT);
        else if (sd_bus_message_is_method_error(reply, NULL)) {
                /* Returns the error's errno, not whether the copy worked (on
                 * ENOMEM, the copy is sd-bus' own NoMemory error). */
                (void) sd_bus_error_copy(&error, sd_bus_message_get_error(reply));
                if (sd_bus_error_is_set(&error)) {
                        error_normalize(&error);
                        r = error_to_errno(&error);
                        /* sd-bus answers the calls of a lost connection with a
                         * NoReply error of its own ("Connection terminated"):
                         * say what a blocking call would have said. */
                        if (c->lost && sd_bus_error_has_name(&error, SD_BUS_ERROR_NO_REPLY)) {
                                sd_bus_error_free(&error);
                                r = sd_bus_error_set_errno(&error, -ECONNRESET);
                        }
                        if (c->kind == CALL_BATCH)
                                r = large_message_failed(r, c->size, &error);
                } else
                        r = -EIO;
        } else if (c->kind == CALL_BATCH)
                r = sd_bus_message_read(reply, "uu", &result.writes, &result.skipped);
        else if (c->kind == CALL_EXCEPT)
                r = read_frozen_list(reply, &frozen);
        if (r < 0 && !sd_bus_error_is_set(&error))
                (void) sd_bus_error_set_errno(&error, r);
        if (r < 0)
                result.writes = result.skipped = 0;

        result.error = r < 0 ? r : 0;
        result.error_name = sd_bus_error_is_set(&error) ? error.name : NULL;
        result.error_message = sd_bus_error_is_set(&error) ? error.message : NULL;
        result.frozen = (const char *const *) frozen;

        /* Gone from the handle before the callback runs: it may start new
         * calls, and freezer_cancel_call() of this one finds nothing. */
        pending_call_free(c);
        if (cb)
                cb(f, &result, cb_userdata);
        freezer_strv_free(frozen);
        return 0;
}

/* Handled from freezer_dispatch(): whether the connection was lost is known
 * now. */
static int on_call_reply_queue(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        pending_call *c = userdata;
        int r;

        c->lost = sd_bus_is_open(c->f->bus) <= 0;
        c->timed_out = reply_is_local_timeout(reply, c->lost, c->until);
        r = defer(c->f, reply, on_call_reply, c, &c->slot, false);
        return r < 0 ? r : 1;
}

/* Send m and remember the call; on failure nothing was sent. */
static int call_async(freezer *f, sd_bus_message *m, uint64_t usec, call_kind kind, size_t size,
                      freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        pending_call *c;
        int r;

        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        *c = (pending_call) {
                .f = f,
                .id = ++f->last_call_id,
                .kind = kind,
                .size = size,
                .cb = cb,
                .userdata = userdata,
                .until = call_until(f->bus, usec),
        };

        r = sd_bus_call_async(f->bus, &c->slot, m, on_call_reply_queue, c, usec);
        if (r < 0) {
                free(c);
                return r;
        }

        c->next = f->calls;
        if (f->calls)
                f->calls->prev = c;
        f->calls = c;

        if (ret_id)
                *ret_id = c->id;
        return 0;
}

/* Send the call a build_*() made (r: what it returned) as a call in flight;
 * a failure of either is the handle's last error. */
static int start_call(freezer *f, int r, sd_bus_message **m, sd_bus_error *error, uint64_t timeout_usec,
                      uint64_t flags, call_kind kind, size_t size, freezer_call_callback cb, void *userdata,
                      uint64_t *ret_id) {
        if (r >= 0)
                r = call_async(f, *m, wait_call_timeout_usec(timeout_usec, flags & FREEZER_NO_WAIT), kind, size,
                               cb, userdata, ret_id);
        if (r < 0)
                return error_take(f, error, r);
        return 0;
}

static int freeze_or_thaw_async(freezer *f, const char *member, const char *path, uint64_t timeout_usec,
                                uint64_t flags, freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret_id)
                *ret_id = 0;
        if (!f)
                return -EINVAL;
        if (!path)
                return error_null_path(f);

        r = build_freeze_or_thaw(f, member, path, timeout_usec, flags, &m, &error);
        return start_call(f, r, &m, &error, timeout_usec, flags, CALL_PLAIN, 0, cb, userdata, ret_id);
}

FREEZER_EXPORT int freezer_freeze_async(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags,
                                        freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        return freeze_or_thaw_async(f, "Freeze", path, timeout_usec, flags, cb, userdata, ret_id);
}

FREEZER_EXPORT int freezer_thaw_async(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags,
                                      freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        return freeze_or_thaw_async(f, "Thaw", path, timeout_usec, flags, cb, userdata, ret_id);
}

FREEZER_EXPORT int freezer_apply_batch_async(freezer *f, const freezer_request *requests, size_t n,
                                             freezer_order order, uint64_t timeout_usec, uint64_t flags,
                                             freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        size_t size = 0;
        int r;

        if (ret_id)
                *ret_id = 0;
        if (!f)
                return -EINVAL;
        r = apply_batch_args_check(f, requests, n, order);
        if (r < 0)
                return r;

        r = build_apply_batch(f, requests, n, order_to_string(order), timeout_usec, flags, &m, &size, &error);
        return start_call(f, r, &m, &error, timeout_usec, flags, CALL_BATCH, size, cb, userdata, ret_id);
}

FREEZER_EXPORT int freezer_freeze_except_async(freezer *f, const char *path, const char *const *exclude,
                                               size_t n_exclude, uint64_t timeout_usec, uint64_t flags,
                                               freezer_call_callback cb, void *userdata, uint64_t *ret_id) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret_id)
                *ret_id = 0;
        if (!f)
                return -EINVAL;
        r = freeze_except_args_check(f, path, exclude, n_exclude);
        if (r < 0)
                return r;

        r = build_freeze_except(f, path, exclude, n_exclude, timeout_usec, flags, &m, &error);
        return start_call(f, r, &m, &error, timeout_usec, flags, CALL_EXCEPT, 0, cb, userdata, ret_id);
}

FREEZER_EXPORT int freezer_cancel_call(freezer *f, uint64_t id) {
        if (!f)
                return -EINVAL;

        for (pending_call *c = f->calls; c; c = c->next)
                if (c->id == id && !c->cancelled) {
                        c->cancelled = true;
                        c->cb = NULL;
                        c->userdata = NULL;
                        return 0;
                }
        return error_set(f, -ENOENT);
}

FREEZER_EXPORT int freezer_get_timeout(freezer *f, uint64_t *ret_usec) {
        int r;

        if (!f)
                return -EINVAL;
        if (!ret_usec)
                return error_invalid_arg(f, "ret_usec is NULL");

        if (f->more_pending || f->deferred || reload_due(f)) {
                *ret_usec = 0;
                return 1;
        }

        r = sd_bus_get_timeout(f->bus, ret_usec);
        if (r < 0)
                return error_set(f, r);
        /* A lost reload's retry that backs off (reload_lost()): its time,
         * unless sd-bus is due earlier. */
        if (reload_pending(f) && (r == 0 || reload_next_at(f) < *ret_usec)) {
                *ret_usec = reload_next_at(f);
                r = 1;
        }
        return r;
}

/* ---- tracking ---- */

static int track_or_untrack(freezer *f, const char *member, const char *path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!f)
                return -EINVAL;
        if (!path)
                return error_null_path(f);

        r = call_manager_path(f, member, path, &error, &reply);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

FREEZER_EXPORT int freezer_track(freezer *f, const char *path) {
        return track_or_untrack(f, "Track", path);
}

FREEZER_EXPORT int freezer_untrack(freezer *f, const char *path) {
        return track_or_untrack(f, "Untrack", path);
}

/* ---- groups ---- */

FREEZER_EXPORT void freezer_group_clear(freezer_group *g) {
        if (!g)
                return;

        free(g->path);
        free(g->object);
        *g = (freezer_group) {
                .state = FREEZER_STATE_UNKNOWN,
        };
}

FREEZER_EXPORT void freezer_group_array_free(freezer_group *a, size_t n) {
        if (!a)
                return;

        for (size_t i = 0; i < n; i++)
                freezer_group_clear(&a[i]);
        free(a);
}

/* Decode a group object path into the cgroup path ("/a/b"). Returns 0 and
 * NULL if the object path is not below the group prefix. */
static int group_object_to_path(const char *object, char **ret) {
        _cleanup_free_ char *decoded = NULL;
        char *p;
        int r;

        *ret = NULL;

        r = sd_bus_path_decode(object, FREEZER_GROUP_PREFIX, &decoded);
        if (r <= 0)
                return r;

        if (decoded[0] == '/') {
                *ret = TAKE_PTR(decoded);
                return 1;
        }

        /* Tolerate an encoding without the leading slash. */
        p = malloc(strlen(decoded) + 2);
        if (!p)
                return -ENOMEM;
        p[0] = '/';
        strcpy(p + 1, decoded);

        *ret = p;
        return 1;
}

/* Calls read_one for each entry of an a{sv} of properties, with m positioned
 * at the entry's variant, which read_one must read or skip. */
static int read_property_dict(sd_bus_message *m,
                              int (*read_one)(sd_bus_message *m, const char *name, void *userdata),
                              void *userdata) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;

        for (;;) {
                const char *name;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;

                r = read_one(m, name, userdata);
                if (r < 0)
                        return r;

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }

        return sd_bus_message_exit_container(m);
}

/* What GetAll of a group fills in: the group, and its Id (which
 * freezer_group has no field for: its size is part of the ABI). */
typedef struct group_props {
        freezer_group *g;
        uint64_t id;
        bool have_id;
} group_props;

static int read_group_property(sd_bus_message *m, const char *name, void *userdata) {
        group_props *p = userdata;
        freezer_group *g = p->g;
        int r;

        if (streq(name, "Id")) {
                r = sd_bus_message_read(m, "v", "t", &p->id);
                if (r < 0)
                        return r;
                p->have_id = true;
        } else if (streq(name, "Path")) {
                const char *s;

                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                free(g->path);
                g->path = strdup(s);
                if (!g->path)
                        return -ENOMEM;
        } else if (streq(name, "FreezerState")) {
                const char *s;

                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                g->state = freezer_state_from_string(s);
        } else if (streq(name, "Freeze") || streq(name, "Frozen") || streq(name, "Populated")) {
                int b;

                r = sd_bus_message_read(m, "v", "b", &b);
                if (r < 0)
                        return r;
                if (streq(name, "Freeze"))
                        g->freeze = b;
                else if (streq(name, "Frozen"))
                        g->frozen = b;
                else
                        g->populated = b;
        } else if (streq(name, "Descendants")) {
                r = sd_bus_message_read(m, "v", "u", &g->descendants);
                if (r < 0)
                        return r;
        } else if (streq(name, "FrozenDescendants")) {
                r = sd_bus_message_read(m, "v", "u", &g->frozen_descendants);
                if (r < 0)
                        return r;
        } else if (streq(name, "FrozenUSec")) {
                r = sd_bus_message_read(m, "v", "t", &g->frozen_usec);
                if (r < 0)
                        return r;
        } else {
                /* Newer daemons may have more. */
                r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
        }

        return 0;
}

/* The object path of the group at path (Manager.GetGroup, which validates the
 * path and makes the daemon track the group if it does not yet; with flags,
 * Manager.LookupGroup: FREEZER_LOOKUP_TRANSIENT tracks it only while this
 * handle's connection lasts). */
static int group_object_lookup(freezer *f, const char *path, uint64_t flags, char **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *object;
        char *copy;
        int r;

        if (flags == 0)
                r = call_manager_path(f, "GetGroup", path, error, &reply);
        else {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;

                r = new_manager_call(f, "LookupGroup", &m);
                if (r < 0)
                        return r;
                r = sd_bus_message_append(m, "s", path);
                if (r < 0)
                        return path_append_failed(r, error);
                r = sd_bus_message_append(m, "t", flags);
                if (r < 0)
                        return r;
                r = call_wait(f, m, 0, error, &reply);
        }
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "o", &object);
        if (r < 0)
                return r;

        copy = strdup(object);
        if (!copy)
                return -ENOMEM;

        *ret = copy;
        return 0;
}

static int group_object_get(freezer *f, const char *path, char **ret, sd_bus_error *error) {
        return group_object_lookup(f, path, 0, ret, error);
}

/* The group at path into *ret, and its Id into *ret_id if not NULL (-ENODATA
 * from a freezerd without the property); looked up with flags
 * (group_object_lookup()). */
static int get_group(freezer *f, const char *path, uint64_t flags, freezer_group *ret, uint64_t *ret_id,
                     sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(freezer_group_clear) freezer_group g = {
                .state = FREEZER_STATE_UNKNOWN,
        };
        group_props props = { .g = &g };
        int r;

        r = group_object_lookup(f, path, flags, &g.object, error);
        if (r < 0)
                return r;

        r = call_method_wait(f, g.object,
                             "org.freedesktop.DBus.Properties", "GetAll",
                             error, &reply, "s", FREEZER_GROUP_INTERFACE);
        if (r < 0)
                return r;

        r = read_property_dict(reply, read_group_property, &props);
        if (r < 0)
                return r;
        if (ret_id && !props.have_id)
                return -ENODATA;

        if (!g.path) {
                /* Not expected ("Path" is const), but be forgiving. */
                r = group_object_to_path(g.object, &g.path);
                if (r < 0)
                        return r;
                if (!g.path) {
                        g.path = strdup(path);
                        if (!g.path)
                                return -ENOMEM;
                }
        }

        cache_update(f, g.object, g.path, &(state_props) { .state = g.state, .have_state = true,
                                                           .frozen = g.frozen, .have_frozen = true });

        *ret = g;
        g = (freezer_group) {};
        if (ret_id)
                *ret_id = props.id;
        return 0;
}

FREEZER_EXPORT int freezer_get_group(freezer *f, const char *path, freezer_group *ret) {
        return freezer_get_group_with_id(f, path, ret, NULL);
}

FREEZER_EXPORT int freezer_get_group_with_id(freezer *f, const char *path, freezer_group *ret, uint64_t *ret_id) {
        return freezer_lookup_group(f, path, 0, ret, ret_id);
}

FREEZER_EXPORT int freezer_lookup_group(freezer *f, const char *path, uint64_t flags, freezer_group *ret,
                                        uint64_t *ret_id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret)
                *ret = (freezer_group) {
                        .state = FREEZER_STATE_UNKNOWN,
                };
        if (ret_id)
                *ret_id = 0;
        if (!f)
                return -EINVAL;
        if (!path)
                return error_null_path(f);
        if (!ret)
                return error_invalid_arg(f, "ret is NULL");

        r = get_group(f, path, flags, ret, ret_id, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

FREEZER_EXPORT int freezer_get_cgroup_root(freezer *f, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *root;
        char *copy;
        int r;

        if (ret)
                *ret = NULL;
        if (!f)
                return -EINVAL;
        if (!ret)
                return error_invalid_arg(f, "ret is NULL");

        r = call_method_wait(f, FREEZER_MANAGER_PATH, "org.freedesktop.DBus.Properties", "Get", &error, &reply,
                             "ss", FREEZER_MANAGER_INTERFACE, "CgroupRoot");
        if (r < 0)
                return error_take(f, &error, r);
        r = sd_bus_message_read(reply, "v", "s", &root);
        if (r < 0)
                return error_set(f, r);

        copy = strdup(root);
        if (!copy)
                return error_set(f, -ENOMEM);
        *ret = copy;
        return 0;
}

/* The body of freezer_list() and freezer_list_ids(): calls the Manager's
 * METHOD, which answers an array of SIGNATURE, into a fresh array (NULL when
 * empty) of ELEMENT_SIZE-byte elements, each filled by READ_ONE from one
 * SIGNATURE. An element is counted before READ_ONE fills it (zeroed), so
 * FREE_ARRAY, on failure, frees a half-read one too. */
static int list_manager_array(freezer *f, const char *method, const char *signature, size_t element_size,
                              int (*read_one)(sd_bus_message *reply, void *element),
                              void (*free_array)(void *a, size_t n),
                              void **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        void *a = NULL;
        size_t n = 0, n_allocated = 0;
        int r;

        if (ret)
                *ret = NULL;
        if (ret_n)
                *ret_n = 0;
        if (!f)
                return -EINVAL;
        if (!ret || !ret_n)
                return error_invalid_arg(f, "%s is NULL", !ret ? "ret" : "ret_n");

        r = call_method_wait(f, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE, method, &error, &reply,
                             NULL);
        if (r < 0)
                return error_take(f, &error, r);

        r = sd_bus_message_enter_container(reply, 'a', signature);
        if (r < 0)
                return error_set(f, r);
        while ((r = sd_bus_message_at_end(reply, false)) == 0) {
                void *element;

                r = grow_array(&a, &n_allocated, n + 1, element_size, 16);
                if (r < 0)
                        goto fail;
                element = memset((char *) a + n++ * element_size, 0, element_size);
                r = read_one(reply, element);
                if (r < 0)
                        goto fail;
        }
        if (r < 0)
                goto fail;
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                goto fail;

        if (n == 0) {
                free(a);
                a = NULL;
        }
        *ret = a;
        *ret_n = n;
        return 0;

fail:
        free_array(a, n);
        return error_set(f, r);
}

/* ListGroups: a(sos), path, object, FreezerState. */
static int read_group(sd_bus_message *reply, void *element) {
        freezer_group *g = element;
        const char *path, *object, *state;
        int r;

        r = sd_bus_message_read(reply, "(sos)", &path, &object, &state);
        if (r < 0)
                return r;

        *g = (freezer_group) {
                .path = strdup(path),
                .object = strdup(object),
                .state = freezer_state_from_string(state),
        };
        if (!g->path || !g->object)
                return -ENOMEM;
        return 0;
}

static void group_array_free(void *a, size_t n) {
        freezer_group_array_free(a, n);
}

FREEZER_EXPORT int freezer_list(freezer *f, freezer_group **ret, size_t *ret_n) {
        void *a = NULL;
        int r;

        r = list_manager_array(f, "ListGroups", "(sos)", sizeof(freezer_group), read_group, group_array_free,
                               ret ? &a : NULL, ret_n);
        if (ret)
                *ret = a;
        if (r < 0)
                return r;
        /* ListGroups has no Frozen, but FreezerState says it (it read 0, and
         * a caller that read it as the kernel's was misled). */
        for (size_t i = 0; i < *ret_n; i++)
                (*ret)[i].frozen = freezer_state_frozen((*ret)[i].state) > 0;

        /* What the state callback compares signals against: a group first seen
         * in GroupsChanged (listed there because its counts changed) would
         * otherwise be reported as if its state had changed. FreezerState
         * tells the kernel's "frozen" too (freezer_state_frozen()). */
        for (size_t i = 0; f->state_cb && i < *ret_n; i++) {
                freezer_state s = (*ret)[i].state;

                cache_update(f, (*ret)[i].object, (*ret)[i].path,
                             &(state_props) { .state = s, .have_state = true,
                                              .frozen = freezer_state_frozen(s) > 0,
                                              .have_frozen = freezer_state_frozen(s) >= 0 });
        }

        return 0;
}

/* ListGroupIds: a(st), path and cgroup id. */
static int read_group_id(sd_bus_message *reply, void *element) {
        freezer_group_id *g = element;
        const char *path;
        int r;

        r = sd_bus_message_read(reply, "(st)", &path, &g->id);
        if (r < 0)
                return r;
        g->path = strdup(path);
        if (!g->path)
                return -ENOMEM;
        return 0;
}

static void group_id_array_free(void *a, size_t n) {
        freezer_group_id_array_free(a, n);
}

FREEZER_EXPORT int freezer_list_ids(freezer *f, freezer_group_id **ret, size_t *ret_n) {
        void *a = NULL;
        int r;

        r = list_manager_array(f, "ListGroupIds", "(st)", sizeof(freezer_group_id), read_group_id,
                               group_id_array_free, ret ? &a : NULL, ret_n);
        if (ret)
                *ret = a;
        return r;
}

FREEZER_EXPORT void freezer_group_id_array_free(freezer_group_id *a, size_t n) {
        if (!a)
                return;

        for (size_t i = 0; i < n; i++)
                free(a[i].path);
        free(a);
}

/* ---- event loop ---- */

FREEZER_EXPORT int freezer_get_fd(freezer *f) {
        int r;

        if (!f)
                return -EINVAL;

        r = sd_bus_get_fd(f->bus);
        if (r < 0)
                return error_set(f, r);
        return r;
}

/* Messages sd-bus holds in memory already (read by a blocking call while it
 * waited for its reply): sd_bus_get_timeout() says "now" for them. The fd
 * does not tell of them, so a loop that polls only the fd would not come
 * back for them. */
#define DISPATCH_QUEUED_MAX (16 * FREEZER_DISPATCH_MAX)

static void reloads_retry(freezer *f);

/* The error of reloads since the last freezer_dispatch() (reload_error),
 * returned and made the last error: with its D-Bus error where one was kept
 * (fallback_refused()) and is still the one said (a refusal replaces a
 * loss's -ENOMEM; a loss since a refusal keeps it: reload_lost()), else as
 * its errno says. */
static int reload_error_take(freezer *f) {
        int r = f->reload_error;

        f->reload_error = 0;
        if (sd_bus_error_is_set(&f->reload_bus_error) && error_to_errno(&f->reload_bus_error) == r)
                return error_take(f, &f->reload_bus_error, r);
        sd_bus_error_free(&f->reload_bus_error);
        return error_set(f, r);
}

static bool messages_queued(freezer *f) {
        uint64_t t;

        return f->deferred || (sd_bus_get_timeout(f->bus, &t) > 0 && t == 0);
}

FREEZER_EXPORT int freezer_dispatch(freezer *f) {
        int n = 0, r;

        if (!f)
                return -EINVAL;
        if (f->dispatching) /* from a callback */
                return error_set(f, -EBUSY);

        /* A reload's reply lost since the last dispatch (in a blocking
         * call, say): said now, the reload started again by a later one
         * once it is due (reload_lost()). */
        if (f->reload_error < 0)
                return reload_error_take(f);
        reloads_retry(f);

        f->dispatching = true;
        f->more_pending = false;
        for (;;) {
                /* Bounded: under a flood of signals the socket never runs dry,
                 * and the caller's loop has other work.  Past the bound only
                 * what is queued in memory is processed (it is finite, and the
                 * fd would not wake the caller for it); the rest stays in the
                 * socket, whose fd stays readable.  Callbacks that make a
                 * blocking call each would refill that memory for ever: the
                 * second bound stops them, with the timeout saying "now". */
                if ((n >= FREEZER_DISPATCH_MAX && !messages_queued(f)) || n >= DISPATCH_QUEUED_MAX) {
                        f->more_pending = true;
                        f->dispatching = false;
                        return n;
                }
                /* What the handlers queued first, in the order it came: the
                 * callbacks run here, outside sd-bus (defer()). */
                if (f->deferred) {
                        deferred_run_one(f);
                        if (f->closing) {
                                f->dispatching = false;
                                (void) freezer_close(f);
                                return 0;
                        }
                        if (n < INT_MAX)
                                n++;
                        continue;
                }
                r = sd_bus_process(f->bus, NULL);
                if (f->closing) { /* a callback closed the handle */
                        f->dispatching = false;
                        (void) freezer_close(f);
                        return 0;
                }
                if (r < 0) {
                        f->dispatching = false;
                        return error_set(f, r);
                }
                if (f->reload_error < 0) { /* a reload's reply lost: started again once due */
                        f->dispatching = false;
                        return reload_error_take(f);
                }
                /* On a lost connection sd-bus fails the calls in flight one per
                 * sd_bus_process(), and says 0 after each: that is a step, and
                 * more may be due (the timeout says "now" until the connection
                 * is closed, when sd_bus_process() fails). */
                /* (sd-bus says 0, too, for a step that timed a call out:
                 * its handler queued the error.) */
                if (r == 0 && !f->deferred && (sd_bus_is_open(f->bus) > 0 || !messages_queued(f))) {
                        f->dispatching = false;
                        return n;
                }
                /* A message for the handlers counts when they run. */
                if (!f->deferred && n < INT_MAX)
                        n++;
        }
}

FREEZER_EXPORT int freezer_get_events(freezer *f) {
        int r;

        if (!f)
                return -EINVAL;

        r = sd_bus_get_events(f->bus);
        if (r < 0)
                return error_set(f, r);
        /* sd-bus asks for no POLLIN while messages wait in memory (read by a
         * blocking call), and said 0 then: a loop polling for that alone
         * heard nothing new until its timeout.  The timeout says "now" for
         * those messages already. */
        return r | POLLIN;
}

FREEZER_EXPORT int freezer_wait(freezer *f, uint64_t timeout_usec) {
        bool retry_first = false;
        int r;

        if (!f)
                return -EINVAL;
        /* freezer_dispatch() stopped at its bound, or messages wait for the
         * handlers (queued by a blocking call). */
        if (f->more_pending || f->deferred || reload_due(f))
                return 1;
        /* No longer than until a lost reload's retry is due (later than
         * now: reload_due()). */
        if (reload_pending(f)) {
                uint64_t n = now_usec(), at = reload_next_at(f);

                if (at <= n)
                        return 1;
                if (at - n < timeout_usec) {
                        timeout_usec = at - n;
                        retry_first = true;
                }
        }

        r = sd_bus_wait(f->bus, timeout_usec);
        if (r < 0)
                return error_set(f, r);
        if (r == 0 && retry_first)
                return 1;
        if (r == 0) {
                /* sd_bus_wait() says 0 without waiting, too, when messages are
                 * queued already or a call's deadline passed: both are for
                 * freezer_dispatch(), not a timeout. */
                uint64_t until;
                if (sd_bus_get_timeout(f->bus, &until) > 0 && until <= now_usec())
                        return 1;
        }
        return r;
}

/* Id, FreezerState and Frozen where present, everything else skipped. */
static int read_state_property(sd_bus_message *m, const char *name, void *userdata) {
        state_props *e = userdata;
        int r;

        if (streq(name, "Id")) {
                r = sd_bus_message_read(m, "v", "t", &e->id);
                if (r < 0)
                        return r;
        } else if (streq(name, "FreezerState")) {
                const char *s;

                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                e->state = freezer_state_from_string(s);
                e->have_state = true;
        } else if (streq(name, "Frozen")) {
                int b;

                r = sd_bus_message_read(m, "v", "b", &b);
                if (r < 0)
                        return r;
                e->frozen = b;
                e->have_frozen = true;
        } else {
                r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
        }

        return 0;
}

/* One entry of GroupsChanged: the group's whole state, (path, FreezerState,
 * Freeze, Frozen, Populated, Descendants, FrozenDescendants). */
static int groups_changed_entry(freezer *f, sd_bus_message *m) {
        _cleanup_free_ char *object = NULL;
        const char *path, *s;
        int freeze, frozen, populated;
        uint32_t descendants, frozen_descendants;
        freezer_state state;
        group_entry *e;
        int r;

        r = sd_bus_message_read(m, "(ssbbbuu)", &path, &s, &freeze, &frozen, &populated, &descendants,
                                &frozen_descendants);
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        state = freezer_state_from_string(s);
        r = sd_bus_path_encode(FREEZER_GROUP_PREFIX, path, &object);
        if (r < 0)
                return 0; /* out of memory: this entry is lost, not the others */

        /* Entries also come for changes of other properties (Populated,
         * Descendants, ...): report only what changed either of the two. */
        e = cache_get(f, object);
        if (e && e->have_state && e->have_frozen && e->state == state && e->frozen == !!frozen)
                return 0;
        cache_update(f, object, path,
                     &(state_props) { .state = state, .have_state = state != FREEZER_STATE_UNKNOWN,
                                      .frozen = frozen, .have_frozen = true });

        f->state_cb(f, path, state, frozen, f->state_userdata);
        return 0;
}

/* SubscribeGroups() or UnsubscribeGroups() (member), or those of
 * GroupStatesChanged: waited for with error, else sent and not waited for
 * (best effort).  Each call is counted by freezerd: the state and the group
 * callbacks of a direct handle hold one each.  A best-effort call is for
 * the freezerd there now, and not auto-started: freezerd is bus-activatable
 * (dbus/org.freezerd.Freezer1.service), and an unsubscription sent after
 * it left (it exited during freezer_set_state_callback(), say) would start
 * one, for nothing: a freezerd started anew knows no subscription. */
static int call_subscription(freezer *f, const char *member, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        if (error)
                return call_method_wait(f, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE, member,
                                        error, NULL, "");
        r = new_manager_call(f, member, &m);
        if (r >= 0)
                r = sd_bus_message_set_auto_start(m, false);
        if (r >= 0)
                r = sd_bus_call_async(f->bus, NULL, m, NULL, NULL, 0);
        return r;
}

/* A send of a reload (reload_call(), the state callback's match and
 * SubscribeGroups() sent again: state_match_set() not waited for,
 * states_fallback_subscribe(); the group callback's first list:
 * groups_load()) failed with r: -ENOBUFS, sd-bus unable to queue it, is lost
 * as a lack of memory is (see reload_call()), -ENOMEM for the caller to
 * retry (reload_lost()). */
static int reload_send_shortage(int r) {
        return r == -ENOBUFS ? -ENOMEM : r;
}

/* A reload's call (Manager.member(), no arguments), its reply for handler
 * through the slot at home.  Not auto-started either: a reload is for the
 * freezerd there now, and one sent after it left (a retry due before its
 * NameOwnerChanged was handled) would start one for nothing; a freezerd that
 * starts is listed and subscribed anew anyway (on_daemon_owner_changed()).
 * Without the memory to send it (-ENOMEM), it is lost as a reply that could
 * not be queued is: started again from a later freezer_dispatch() (*retry,
 * of its kind: reload_lost()), which says -ENOMEM.  So is one sd-bus cannot
 * queue (-ENOBUFS: its write queue holds BUS_WQUEUE_MAX messages, the peer
 * not reading them, or the kernel lacked buffer space for sendmsg()), the
 * one failure besides -ENOMEM with the connection open (but -ECHILD, a
 * handle used after fork(), where nothing works): a shortage that
 * passes, as memory's does, and was a reload lost for good.  Any other
 * failure is of a connection sd-bus closes (-ENOTCONN, -ECONNRESET): its
 * Disconnected tells the program, and nothing is reloaded on it. */
static int reload_call(freezer *f, const char *member, sd_bus_message_handler_t handler, sd_bus_slot **home,
                       bool *retry) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = reload_send_fails();

        if (r >= 0)
                r = new_manager_call(f, member, &m);
        if (r >= 0)
                r = sd_bus_message_set_auto_start(m, false);
        if (r >= 0)
                r = sd_bus_call_async(f->bus, home, m, handler, f, 0);
        r = reload_send_shortage(r);
        if (r == -ENOMEM)
                reload_lost(f, retry, r);
        return r;
}

static const char *state_unsubscribe_member(freezer *f) {
        return f->compact ? "UnsubscribeGroupStates" : "UnsubscribeGroups";
}

static int on_groups_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r;

        /* Malformed signals are ignored (what was read so far is reported):
         * returning an error from here would make freezer_dispatch() fail. */
        r = sd_bus_message_enter_container(m, 'a', "(ssbbbuu)");
        if (r < 0)
                return 0;
        /* The callback may remove itself: check before every entry. */
        while (f->state_cb && !sd_bus_message_at_end(m, false))
                if (groups_changed_entry(f, m) < 0)
                        return 0;
        return 0;
}

static int states_lost(freezer *f);

static int on_groups_changed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r = defer(f, m, on_groups_changed, f, &f->match_slot, true);

        if (r == -ENOBUFS)
                states_lost(f);
        return r;
}

/* A group's new state and Frozen, told to the state callback if either
 * differs from what the handle knew of it (e NULL, removed or without a
 * path: a group the handle does not know, skipped). */
static void entry_report(freezer *f, group_entry *e, freezer_state state, bool frozen) {
        _cleanup_free_ char *path = NULL;

        if (!e || e->removed || !e->path)
                return;
        if (e->have_state && e->have_frozen && e->state == state && e->frozen == frozen)
                return;
        e->state = state;
        e->frozen = frozen;
        e->have_state = e->have_frozen = true;
        /* The callback may change the table (freezer_list(), or removing
         * itself): it gets a copy. */
        path = strdup(e->path);
        if (path)
                f->state_cb(f, path, state, frozen, f->state_userdata);
}

/* GroupStatesChanged's bits (org.freezerd.Freezer1.xml). */
#define STATE_BIT_FREEZE 1u
#define STATE_BIT_ANCESTOR_FREEZES 2u
#define STATE_BIT_FROZEN 4u

static freezer_state state_from_bits(uint32_t bits) {
        bool frozen = bits & STATE_BIT_FROZEN;

        if (bits & STATE_BIT_FREEZE)
                return frozen ? FREEZER_STATE_FROZEN : FREEZER_STATE_FREEZING;
        if (bits & STATE_BIT_ANCESTOR_FREEZES)
                return frozen ? FREEZER_STATE_FROZEN_BY_PARENT : FREEZER_STATE_FREEZING_BY_PARENT;
        return frozen ? FREEZER_STATE_THAWING : FREEZER_STATE_RUNNING;
}

/* One GroupStatesChanged: (at ids, au states, au descendants, au
 * frozen_descendants), the arrays read in place.  A group's Id comes from
 * ListGroupIds() or its InterfacesAdded, both before any signal naming it; an
 * Id the handle does not know (a group gone, or a table left incomplete by a
 * lack of memory) is skipped. */
static void group_states_changed(freezer *f, sd_bus_message *m) {
        const uint64_t *ids;
        const uint32_t *states;
        size_t n_ids, n_states;

        if (sd_bus_message_read_array(m, 't', (const void **) &ids, &n_ids) < 0 ||
            sd_bus_message_read_array(m, 'u', (const void **) &states, &n_states) < 0 ||
            n_ids / sizeof(uint64_t) != n_states / sizeof(uint32_t))
                return; /* malformed: ignored, as in on_groups_changed() */
        n_ids /= sizeof(uint64_t);

        /* The callback may remove itself: check before every entry. */
        for (size_t i = 0; i < n_ids && f->state_cb; i++)
                entry_report(f, group_table_get_id(&f->groups, ids[i]), state_from_bits(states[i]),
                             states[i] & STATE_BIT_FROZEN);
}

static int on_group_states_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;

        if (!f->state_cb || !f->compact)
                return 0;
        if (f->ids_slot) { /* the Ids are being (re)loaded: later */
                sd_bus_message **a;

                if (f->held_lost)
                        return 0; /* the states are read again once the Ids are in */
                a = f->n_held < HELD_MAX ? reallocarray(f->held, f->n_held + 1, sizeof(sd_bus_message *)) : NULL;
                if (!a) {
                        held_drop(f);
                        f->held_lost = true;
                        return 0;
                }
                f->held = a;
                f->held[f->n_held++] = sd_bus_message_ref(m);
                return 0;
        }
        group_states_changed(f, m);
        return 0;
}

static int on_states_reread_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* A GroupStatesChanged was dropped (defer()): the states are read again, as
 * when held signals were lost, and the signals before that reply are dropped
 * (on_group_states_changed() holds none while held_lost).  Or a
 * GroupsChanged: the states are read again, the signals meanwhile handled
 * (each names its groups by path: the reply, which comes after them, has
 * the last word). */
static int states_lost(freezer *f) {
        int r;

        if (!f->state_cb)
                return 0;
        held_drop(f);
        f->held_lost = true;
        if (f->ids_slot) {
                /* The Ids are being loaded: on_group_ids() reads the states
                 * after them.  Or the states are: once more if their reply
                 * came before this signal. */
                if (f->reread_in)
                        f->reread_again = true;
                return 0;
        }
        f->ids_loading = false;
        r = reload_call(f, "ListGroups", on_states_reread_queue, &f->ids_slot, &f->states_retry);
        if (r < 0)
                f->held_lost = false;
        return r;
}

static int on_group_ids_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* ListGroupIds() anew, on ids_slot: on_group_ids() loads them and, as
 * held_lost is set, reads the states again after them. */
static int ids_reload(freezer *f) {
        int r;

        f->reread_in = f->reread_again = f->ids_again = false;
        f->ids_loading = true;
        r = reload_call(f, "ListGroupIds", on_group_ids_queue, &f->ids_slot, &f->states_retry);
        if (r < 0)
                f->held_lost = false;
        return r;
}

/* An InterfacesAdded/Removed was dropped (defer()): the state callback would
 * not know the new group's Id (its GroupStatesChanged would be skipped for
 * good), or would keep a removed one.  The Ids are loaded again, then the
 * states read again (the signals until then dropped, as in states_lost()):
 * a group made meanwhile is reported with its state once. */
static void ids_lost(freezer *f) {
        if (!f->state_cb || !f->compact)
                return;
        held_drop(f);
        f->held_lost = true;
        if (!f->ids_slot)
                ids_reload(f);
        else if (!f->ids_loading || f->reread_in)
                /* A ListGroups, or Ids older than the signal: load them once
                 * more when that reply is handled. */
                f->ids_again = true;
        /* else the Ids on their way are newer than the signal. */
}

static int on_group_states_changed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r = defer(f, m, on_group_states_changed, f, &f->match_slot, true);

        if (r == -ENOBUFS)
                states_lost(f);
        return r;
}

static int on_interfaces_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
static void groups_lost(freezer *f);

static int on_interfaces_changed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r = defer(f, m, on_interfaces_changed, f, &f->group_slot, true);

        if (r == -ENOBUFS) {
                ids_lost(f);
                groups_lost(f);
        }
        return r;
}

/* ListGroupIds()'s a(st) as the table: the groups it lists, each with what
 * the handle knew of it (an entry of the same Id, or of none known yet, keeps
 * its state; a new group's is unknown), and no other.  A group the handle
 * knew that the list lacks is gone, as its InterfacesRemoved (dropped, when
 * the Ids are loaded again for it) would have said: its entry goes, so that a
 * group made again under its path starts afresh.  Groups past
 * GROUP_TABLE_MAX are not remembered (freezer.h): the table holds the first
 * ones listed, and that is no failure (a reload would find as many).  On
 * failure the table stays as it was. */
static int group_ids_load(freezer *f, sd_bus_message *reply) {
        _cleanup_(group_table_clear) group_table t = {};
        int r;

        if (ids_load_fails())
                return -ENOMEM;
        r = sd_bus_message_enter_container(reply, 'a', "(st)");
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_free_ char *object = NULL;
                const group_entry *old;
                group_entry *e;
                const char *path;
                uint64_t id;

                r = sd_bus_message_read(reply, "(st)", &path, &id);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_path_encode(FREEZER_GROUP_PREFIX, path, &object);
                if (r < 0)
                        return r;
                e = group_table_put(&t, object, id, path);
                if (!e && t.n_entries >= GROUP_TABLE_MAX)
                        continue; /* the rest are read, not remembered */
                if (!e)
                        return -ENOMEM;
                old = group_table_get_object(&f->groups, object);
                if (old && (old->id == 0 || old->id == id)) {
                        e->state = old->state;
                        e->frozen = old->frozen;
                        e->have_state = old->have_state;
                        e->have_frozen = old->have_frozen;
                }
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;
        group_table_clear(&f->groups);
        f->groups = t;
        t = (group_table) {};
        return 0;
}

/* An error that says this freezerd (or the bus policy) has no
 * GroupStatesChanged for us: one from before it (libfreezer 0.4.1 and the
 * freezerd of its time), or a policy that allows only the older calls. */
static bool error_no_group_states(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_METHOD, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                      SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_ACCESS_DENIED);
}

/* No freezerd on the bus, or it left during the call (it exited, or the
 * first half of a restart): to the state callback it is the same, it
 * subscribes when a freezerd takes the name (on_daemon_owner_changed()).
 * (On a private handle freezerd exiting loses the connection: -ECONNRESET
 * named Disconnected, not this.) */
static bool error_no_daemon(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
               error_daemon_left(e);
}

static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        freezer *f = userdata;

        if (f->match_wait)
                (void) on_reply_wait(m, f->match_wait, ret_error);
        return 0;
}

/* sd_bus_add_match() (callback gets f), waiting for the bus to confirm the
 * match as call_wait() waits, on through signals. */
static int add_match_wait(freezer *f, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback) {
        reply_wait w = { .bus = f->bus, .until = call_until(f->bus, 0) };
        int r;

        if (is_direct(f)) /* no bus to ask: sd-bus matches locally */
                return sd_bus_add_match(f->bus, slot, match, callback, f);

        r = sd_bus_add_match_async(f->bus, slot, match, callback, on_match_installed, f);
        if (r < 0)
                return r;
        f->match_wait = &w;
        r = wait_reply(f->bus, &w);
        f->match_wait = NULL;
        if (r >= 0)
                r = reply_wait_result(&w, NULL, NULL);
        if (r < 0) {
                *slot = sd_bus_slot_unref(*slot);
                return r;
        }
        return 0;
}

/* The state callback's match, for GroupStatesChanged (compact) or
 * GroupsChanged; replaces one of the other kind.  On the bus only one of the
 * two may be there: a signal that another client subscribed to reaches every
 * match.  Asynchronous where the caller is inside a dispatch: dbus-daemon
 * handles our AddMatch before the subscription call sent after it: that
 * AddMatch is a reload's (state_resubscribe(), states_fallback_subscribe()),
 * and one sd-bus cannot queue (-ENOBUFS) says -ENOMEM, to be retried as one
 * lacking the memory (reload_send_shortage()): the state callback would hear
 * of nothing otherwise. */
static int state_match_set(freezer *f, bool compact, bool wait) {
        const char *match = compact ? signal_match(f, MATCH_SIGNAL_BUS MATCH_GROUP_STATES_CHANGED,
                                                   MATCH_SIGNAL_DIRECT MATCH_GROUP_STATES_CHANGED)
                                    : signal_match(f, MATCH_SIGNAL_BUS MATCH_GROUPS_CHANGED,
                                                   MATCH_SIGNAL_DIRECT MATCH_GROUPS_CHANGED);
        sd_bus_message_handler_t handler = compact ? on_group_states_changed_queue : on_groups_changed_queue;
        int r;

        if (f->match_slot && f->compact == compact)
                return 0;
        f->match_slot = sd_bus_slot_unref(f->match_slot);
        f->compact = compact;
        if (wait)
                return add_match_wait(f, &f->match_slot, match, handler);
        r = reload_send_fails();
        if (r >= 0)
                r = sd_bus_add_match_async(f->bus, &f->match_slot, match, handler, NULL, f);
        return reload_send_shortage(r);
}

static int on_fallback_subscribed_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* The state callback's fallback to GroupsChanged, freezerd having refused
 * SubscribeGroupStates() (an older one, a bus policy): its match and
 * SubscribeGroups(), a reload whose reply on_fallback_subscribed() handles
 * (since 0.6.5: it was sent without one, and a refusal, freezerd's NoMemory
 * say, left the handle believing it was subscribed, no change ever
 * reported).  It takes ids_slot: a reload in flight there (a ListGroups()
 * for a GroupStatesChanged dropped while the refusal's reply, or its retry,
 * waited) was sent before this subscription, and its reply may be older
 * than it (a change in between told by neither); the states are read once
 * the subscription is confirmed, instead.  -ENOMEM where either could not be
 * sent for lack of memory or as sd-bus' write queue was full: the caller
 * leaves the fallback to a later dispatch (states_fallback, reloads_retry()),
 * which sends what is missing (a match set already is kept; a
 * SubscribeGroups() that was not sent, freezerd did not count). */
static int states_fallback_subscribe(freezer *f) {
        int r = state_match_set(f, false, false);

        if (r < 0)
                return reload_send_shortage(r);
        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        held_drop(f);
        f->reread_in = f->reread_again = f->ids_loading = f->ids_again = false;
        f->fallback_until = call_until(f->bus, 0);
        f->fallback_timed_out = false;
        r = reload_call(f, "SubscribeGroups", on_fallback_subscribed_queue, &f->ids_slot, &f->states_fallback);
        if (r < 0)
                f->ids_slot = NULL;
        return r;
}

static int on_group_ids_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);
static int on_states_reread_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* A refusal of the fallback's SubscribeGroups() that is neither a shortage
 * nor sd-bus' own timeout (both retried) nor freezerd gone (the next start
 * subscribes): a bus policy that refuses it too (AccessDenied), freezerd's
 * Failed, a freezerd that lacks it (UnknownMethod).  Not subscribed, the state
 * callback would hear of nothing, as after a refused installation, which
 * fails: the next freezer_dispatch() fails with its errno (error_to_errno():
 * -EACCES, -EIO, ...), the refusal its last error, once; not retried (it
 * would be refused again), the callback stays installed, and a freezerd
 * that starts is subscribed anew.  (Without the memory to copy the error,
 * its errno alone.) */
static void fallback_refused(freezer *f, const sd_bus_error *e) {
        sd_bus_error_free(&f->reload_bus_error);
        /* sd_bus_error_copy() returns the error's errno, not whether the copy
         * worked (taken for a failure, every refusal was dropped: its name
         * derived from the errno, AccessDenied's message "Permission denied",
         * UnknownMethod's name System.Error.EBADR); without the memory it
         * leaves sd-bus' own NoMemory, which no refusal here is (a shortage:
         * on_fallback_subscribed()). */
        (void) sd_bus_error_copy(&f->reload_bus_error, e);
        if (!sd_bus_error_has_name(&f->reload_bus_error, e->name))
                sd_bus_error_free(&f->reload_bus_error);
        f->reload_error = error_to_errno(e);
        if (f->reload_error >= 0)
                f->reload_error = -EIO;
}

/* The reply to the fallback's SubscribeGroups() (states_fallback_subscribe()).
 * Subscribed: the states are read now, after it (states_lost()): what
 * changed before it (since freezerd started, or since the NoMemory of a
 * subscription sent again) no GroupsChanged told, and is reported as the
 * compact path reports it, the states read after the Ids.  A shortage
 * (freezerd's or dbus-daemon's NoMemory, the bus' LimitsExceeded:
 * reply_shortage()) is not subscribed either: the fallback is sent again
 * from a later dispatch (states_fallback), which says -ENOMEM, as for the
 * reloads.  sd-bus' own timeout (its method-call timeout, 25 s, passed) is
 * no refusal: a freezerd merely slow, busy, or stopped for a while, may
 * well have subscribed us, or will, and taken for one its GroupsChanged
 * were never read (freezectl watch exited, "refused").  It is sent again,
 * from a later dispatch, as after a shortage but without an error (nothing
 * was lost here: the retry is all); a freezerd that did take the first
 * counts us twice, which costs it the signals it sends us anyway, until
 * this connection closes.  freezerd gone meanwhile: nothing, the next
 * start subscribes.  Any other refusal: fallback_refused(). */
static int on_fallback_subscribed(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        if (!f->state_cb)
                return 0;
        if (reply_shortage(reply)) {
                reload_lost(f, &f->states_fallback, -ENOMEM);
                return 0;
        }
        if (f->fallback_timed_out) {
                reload_retry_later(f, &f->states_fallback);
                return 0;
        }
        if (e) {
                reload_done(f, &f->states_retry);
                if (!error_no_daemon(e))
                        fallback_refused(f, e);
                return 0;
        }
        (void) states_lost(f);
        return 0;
}

static int on_fallback_subscribed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        int before = f->reload_error, r;

        f->fallback_timed_out = reply_is_local_timeout(m, sd_bus_is_open(f->bus) <= 0, f->fallback_until);
        r = defer_reload_reply(f, m, on_fallback_subscribed, &f->ids_slot, &f->states_retry);

        /* Its reply lost for lack of memory: subscribed, the states are read
         * from a later dispatch (states_retry: states_lost() with
         * GroupsChanged), which says -ENOMEM.  A refusal is read off the
         * reply, which is at hand: a shortage's fallback sent again (the
         * same retry, of another flag), and so sd-bus' own timeout's; any
         * other refusal told as
         * on_fallback_subscribed() tells it (its errno, as no memory is
         * there to keep the error), or, freezerd gone, nothing. */
        if (r < 0 && e) {
                f->states_retry = false;
                if (reply_shortage(m) || f->fallback_timed_out)
                        f->states_fallback = true;
                else if (error_no_daemon(e))
                        f->reload_error = before;
                else {
                        f->reload_error = error_to_errno(e);
                        if (f->reload_error >= 0)
                                f->reload_error = -EIO;
                }
        }
        return r;
}

/* The reply to a SubscribeGroupStates() sent after freezerd (re)started. */
static int on_states_subscribed(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        int r;

        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        if (!f->state_cb)
                return 0;
        if (reply_shortage(reply) || subscription_nomem_forced()) {
                /* Not subscribed: sent again from a later dispatch. */
                held_drop(f);
                reload_lost(f, &f->states_resubscribe, -ENOMEM);
                return 0;
        }
        if (e) {
                reload_done(f, &f->states_retry);
                held_drop(f);
                /* This freezerd lacks GroupStatesChanged: GroupsChanged then,
                 * and the states read after that subscription: what changed
                 * before it is reported as the compact path reports it (the
                 * states read after the Ids), not lost.  Even a refusal
                 * answered at once leaves a gap: from freezerd's start (or the
                 * NoMemory of a subscription sent again) until this dispatch
                 * sends SubscribeGroups, no signal tells of a change (one made
                 * from the resync callback, say).  The table was emptied at
                 * the start (on_daemon_owner_changed()): the read reports each
                 * group no signal named since, as its first mention, as the
                 * compact path does; it follows the subscription's reply
                 * (on_fallback_subscribed()).  A fallback that cannot be sent (no memory, sd-bus'
                 * write queue full) is left to a later dispatch, as for a
                 * refusal whose reply was lost (reloads_retry(): a gap until
                 * then), with -ENOMEM: the
                 * callback would hear of no change otherwise.  Any other
                 * error (it exited again): the next start retries. */
                if (error_no_group_states(e)) {
                        r = states_fallback_subscribe(f);
                        if (r == -ENOMEM)
                                reload_lost(f, &f->states_fallback, r);
                }
                return 0;
        }
        /* Signals wait in held until the list is in (newer than any
         * signal dropped so far). */
        f->ids_loading = true;
        f->ids_again = false;
        r = reload_call(f, "ListGroupIds", on_group_ids_queue, &f->ids_slot, &f->states_retry);
        if (r < 0)
                held_drop(f);
        return 0;
}
static int on_states_subscribed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        int before = f->reload_error, r = defer_reload_reply(f, m, on_states_subscribed, &f->ids_slot, &f->states_retry);

        /* A failed subscription has no Ids to load: what its reply asked
         * for is done again instead (read off the reply, which is at hand:
         * no memory needed).  An older freezerd's refusal, the fallback to
         * GroupsChanged; freezerd's NoMemory, the subscription sent
         * again; any other error (it exited again), nothing: the next start
         * subscribes, and no dispatch need say -ENOMEM for a reply that
         * asked for nothing. */
        if (r < 0 && e) {
                f->states_retry = false;
                f->states_fallback = error_no_group_states(e);
                f->states_resubscribe = reply_shortage(m);
                if (!f->states_fallback && !f->states_resubscribe)
                        f->reload_error = before;
                held_drop(f);
        }
        return r;
}

/* ListGroups()'s a(sos), read after held signals were lost: every group
 * whose state differs from what the handle knew (or that it knew nothing of)
 * is reported, as a signal would have. */
static int on_states_reread(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        bool again = f->reread_again;
        int r;

        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        if (f->ids_again) { /* an InterfacesAdded/Removed dropped meanwhile */
                if (f->state_cb)
                        ids_reload(f);
                return 0;
        }
        f->held_lost = f->reread_in = f->reread_again = false;
        if (again) { /* older than a signal dropped since: read again */
                states_lost(f);
                return 0;
        }
        if (f->state_cb && reply_shortage(reply)) {
                /* As for a reply lost here (on_states_reread_queue()): the
                 * retry reads the states again, and tells what changed. */
                f->held_lost = true;
                reload_lost(f, &f->states_retry, -ENOMEM);
                return 0;
        }
        reload_done(f, &f->states_retry);
        if (!f->state_cb || sd_bus_message_is_method_error(reply, NULL))
                return 0;
        r = sd_bus_message_enter_container(reply, 'a', "(sos)");
        /* The callback may remove itself, or start a reload (ids_slot).  A
         * group the handle has no entry for was made since the Ids: its own
         * signals tell. */
        while (r >= 0 && f->state_cb && !f->ids_slot) {
                const char *path, *object, *s;
                freezer_state state;
                group_entry *e;

                r = sd_bus_message_read(reply, "(sos)", &path, &object, &s);
                if (r <= 0)
                        break;
                state = freezer_state_from_string(s);
                if (state == FREEZER_STATE_UNKNOWN)
                        continue;
                e = group_table_get_object(&f->groups, object);
                /* GroupsChanged reports a group's first mention, and may
                 * have been what was dropped: so is this. */
                if (!e && !f->compact)
                        e = group_table_put(&f->groups, object, 0, path);
                entry_report(f, e, state, freezer_state_frozen(state) > 0);
        }
        return 0;
}

static int on_states_reread_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r;

        f->reread_in = true; /* see states_lost() */
        r = defer_reload_reply(f, m, on_states_reread, &f->ids_slot, &f->states_retry);
        if (r < 0)
                f->reread_in = false;
        return r;
}

static int on_group_ids(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        sd_bus_message **held = TAKE_PTR(f->held);
        size_t n_held = f->n_held;

        f->n_held = 0;
        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        f->reread_in = false;
        if (f->state_cb && (reply_shortage(reply) || !sd_bus_message_is_method_error(reply, NULL))) {
                /* freezerd's NoMemory: no Ids either. */
                int r = reply_shortage(reply) ? -ENOMEM : group_ids_load(f, reply);

                if (r == -ENOMEM) {
                        /* Without the memory for the new table: the states
                         * read with the old one would pass over the groups
                         * made meanwhile, their signals skipped for good.
                         * Loaded again from a later dispatch (reload_lost()),
                         * which this one tells, as for a reply that could not
                         * be queued (defer_reload_reply()); what the held
                         * signals said is read again then. */
                        for (size_t i = 0; i < n_held; i++)
                                sd_bus_message_unref(held[i]);
                        free(held);
                        f->held_lost = false;
                        reload_lost(f, &f->states_retry, r);
                        return 0;
                }
        }
        if (f->ids_again && f->state_cb) { /* older than an InterfacesAdded/Removed dropped since */
                ids_reload(f);
                free(held); /* dropped when they were lost: empty */
                return 0;
        }
        if (f->held_lost) {
                /* Signals go on being dropped until the states are in (read
                 * after any signal dropped so far). */
                f->ids_loading = f->reread_again = false;
                if (!f->state_cb ||
                    reload_call(f, "ListGroups", on_states_reread_queue, &f->ids_slot, &f->states_retry) < 0)
                        f->held_lost = false;
                free(held); /* dropped when they were lost: empty */
                return 0;
        }
        reload_done(f, &f->states_retry);
        /* In the order they came; the callback may remove itself (or a
         * NameOwnerChanged handled meanwhile may have cleared the table). */
        for (size_t i = 0; i < n_held; i++) {
                if (f->state_cb && f->compact && !f->ids_slot)
                        group_states_changed(f, held[i]);
                sd_bus_message_unref(held[i]);
        }
        free(held);
        return 0;
}

static int on_group_ids_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r;

        f->reread_in = true; /* see states_lost(), ids_lost() */
        r = defer_reload_reply(f, m, on_group_ids, &f->ids_slot, &f->states_retry);
        if (r < 0)
                f->reread_in = false;
        return r;
}

/* freezerd (re)started while the state callback is installed: subscribe
 * anew (it knows nothing of us) and, in compact mode, load its Ids again
 * (groups may have been made meanwhile).  Not waited for: a failure leaves
 * us without signals, as it would at start; one for lack of memory, or as
 * sd-bus' write queue was full (-ENOMEM both: state_match_set(),
 * reload_call()), is sent again from a later dispatch (reloads_retry()). */
static int state_resubscribe(freezer *f) {
        int r;

        f->ids_slot = sd_bus_slot_unref(f->ids_slot);
        f->reread_in = f->reread_again = f->ids_again = false;
        f->ids_loading = true;
        held_drop(f);
        /* A new freezerd may have what the old one lacked. */
        r = state_match_set(f, true, false);
        if (r == -ENOMEM)
                reload_lost(f, &f->states_resubscribe, r);
        if (r < 0)
                return r;
        r = reload_call(f, "SubscribeGroupStates", on_states_subscribed_queue, &f->ids_slot, &f->states_resubscribe);
        if (r < 0)
                f->ids_slot = NULL;
        return r;
}

/* The resync callback, unless the handle is being closed (which clears it). */
static void resync_notify(freezer *f, freezer_resync_reason reason) {
        if (f->resync_cb)
                f->resync_cb(f, reason, f->resync_userdata);
}

static void pressure_triggers_ended_by(freezer *f, const char *old_owner);
static void groups_reload(freezer *f);

/* freezerd's bus name changed hands: it exited, started, or was replaced.
 * The triggers the old daemon held are gone with it; what the handle knew of
 * its groups is stale (groups may have come and gone while no daemon was
 * there to say so), and a daemon that (re)appears knows nothing of our
 * subscription. */
static int on_daemon_owner_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 || !streq(name, FREEZER_SERVICE))
                return 0;

        if (*old_owner)
                pressure_triggers_ended_by(f, old_owner);
        cache_clear(f);
        /* The group callback's retries too: a list of the new freezerd
         * follows, and none is for a freezerd that left. */
        f->known_retry = false;
        reload_retries_dropped(f, &f->known_retry);
        if (f->state_cb && *new_owner)
                (void) state_resubscribe(f);
        if (f->group_cb && *new_owner)
                groups_reload(f);

        /* The callback may close the handle or remove itself: each checks. */
        if (*old_owner)
                resync_notify(f, FREEZER_RESYNC_DAEMON_EXITED);
        if (*new_owner)
                resync_notify(f, FREEZER_RESYNC_DAEMON_STARTED);
        return 0;
}
DEFINE_QUEUED(on_daemon_owner_changed, owner_slot, false)

/* The NameOwnerChanged match, wanted on the bus while the state, the group or
 * the resync callback or a trigger is there (a direct connection ends with its daemon). */
static int owner_watch_ensure(freezer *f) {
        if (f->owner_slot || is_direct(f))
                return 0;
        return add_match_wait(f, &f->owner_slot, MATCH_DAEMON_OWNER, on_daemon_owner_changed_queue);
}

static void owner_watch_update(freezer *f) {
        if (!f->state_cb && !f->group_cb && !f->resync_cb && f->n_triggers == 0)
                f->owner_slot = sd_bus_slot_unref(f->owner_slot);
}

static int on_filter_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

static int filter_ensure(freezer *f) {
        if (f->filter_slot)
                return 0;
        return sd_bus_add_filter(f->bus, &f->filter_slot, on_filter_queue, f);
}

static int on_interfaces_changed_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* The InterfacesAdded/Removed match, wanted while the group or the state
 * callback is installed (blocks until the bus confirms it). */
static int interfaces_match_ensure(freezer *f) {
        if (f->group_slot)
                return 0;
        return add_match_wait(f, &f->group_slot,
                              signal_match(f, MATCH_SIGNAL_BUS MATCH_INTERFACES, MATCH_SIGNAL_DIRECT MATCH_INTERFACES),
                              on_interfaces_changed_queue);
}

static void interfaces_match_update(freezer *f) {
        if (!f->state_cb && !f->group_cb)
                f->group_slot = sd_bus_slot_unref(f->group_slot);
}

/* The state callback's first installation, waited for: the matches (first,
 * so that nothing sent after the subscription is lost), the subscription
 * and, in compact mode, the Ids.  GroupStatesChanged where freezerd has it,
 * else GroupsChanged. */
static int state_subscribe(freezer *f, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = state_match_set(f, true, true);
        if (r >= 0)
                r = interfaces_match_ensure(f);
        if (r >= 0)
                r = owner_watch_ensure(f);
        if (r < 0)
                return r;

        r = call_subscription(f, "SubscribeGroupStates", error);
        if (r >= 0) {
                r = call_method_wait(f, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE,
                                     "ListGroupIds", error, &reply, "");
                if (r >= 0)
                        r = group_ids_load(f, reply);
                if (r >= 0)
                        return 0;
                /* Without the Ids the signal is of no use. */
                (void) call_subscription(f, "UnsubscribeGroupStates", NULL);
                group_table_clear(&f->groups);
        }
        /* No daemon yet: on_daemon_owner_changed() subscribes once it is there. */
        if (error_no_daemon(error)) {
                sd_bus_error_free(error);
                return 0;
        }
        if (!error_no_group_states(error))
                return r;

        sd_bus_error_free(error);
        r = state_match_set(f, false, true);
        if (r < 0)
                return r;
        r = call_subscription(f, "SubscribeGroups", error);
        if (r < 0 && error_no_daemon(error)) {
                sd_bus_error_free(error);
                r = 0;
        }
        return r;
}

FREEZER_EXPORT int freezer_set_state_callback(freezer *f, freezer_state_callback cb, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!f)
                return -EINVAL;

        if (!cb) {
                if (f->match_slot)
                        /* Best effort: leaving the bus ends it too. */
                        (void) call_subscription(f, state_unsubscribe_member(f), NULL);
                f->match_slot = sd_bus_slot_unref(f->match_slot);
                f->state_cb = NULL;
                f->state_userdata = NULL;
                /* Nothing needs the cache now: none is kept. */
                cache_clear(f);
                owner_watch_update(f);
                interfaces_match_update(f);
                return 0;
        }

        if (!f->match_slot) {
                /* Per-object PropertiesChanged would need a Subscribe() and
                 * cost a message per group: one message per daemon loop turn
                 * lists every group that changed. */
                r = state_subscribe(f, &error);
                if (r < 0) {
                        f->match_slot = sd_bus_slot_unref(f->match_slot);
                        group_table_clear(&f->groups);
                        owner_watch_update(f);
                        interfaces_match_update(f);
                        return error_take(f, &error, r);
                }
                /* Subscribed now: a subscription still waiting to be sent
                 * again (state_resubscribe() that lacked the memory) would be
                 * a second one, which one Unsubscribe does not end. */
                f->states_resubscribe = f->states_fallback = false;
                reload_retries_dropped(f, &f->states_retry);
        }

        f->state_cb = cb;
        f->state_userdata = userdata;
        return 0;
}

/* ---- groups appearing and disappearing ---- */

/* Forgets the group callback's groups, and any ListGroupIds() for them. */
static void groups_clear(freezer *f) {
        group_table_clear(&f->known);
        f->known_slot = sd_bus_slot_unref(f->known_slot);
        f->known_loaded = f->known_base = f->known_in = f->known_lost = f->known_again = false;
        f->known_retry = false;
        reload_retries_dropped(f, &f->known_retry);
        f->known_gen++;
}

/* The group callback, with a copy of path: it may remove itself, which
 * frees the table path may be in. */
static void group_report(freezer *f, const char *path, bool added, freezer_state state) {
        _cleanup_free_ char *copy = strdup(path);

        if (copy && f->group_cb)
                f->group_cb(f, copy, added, state, f->group_userdata);
}

/* A ListGroupIds()'s a(st) as a table keyed by path: -E2BIG past
 * GROUP_TABLE_MAX (freezer.h: such a list is not kept; read again, it would
 * not fit either), unlike -ENOMEM, which a later read may not meet. */
static int groups_read(sd_bus_message *reply, group_table *ret) {
        group_table t = {};
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(st)");
        while (r >= 0) {
                const char *path;
                uint64_t id;

                r = sd_bus_message_read(reply, "(st)", &path, &id);
                if (r <= 0)
                        break;
                if (!group_table_put(&t, path, id, NULL))
                        r = t.n_entries >= GROUP_TABLE_MAX ? -E2BIG : -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r < 0) {
                group_table_clear(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* Whether a and b are two groups under one path: both Ids known, and not
 * the same. */
static bool group_remade(const group_entry *a, const group_entry *b) {
        return a->id != 0 && b->id != 0 && a->id != b->id;
}

/* What a ListGroupIds() read after a dropped signal (f->known now) holds
 * and before did not: groups gone reported removed, then new ones added
 * (their state unknown: the list has none); a path whose Id changed is both.
 * Stops once the callback is gone or has a table of another installation. */
static void groups_report_changes(freezer *f, group_table *before) {
        unsigned gen = f->known_gen;

        for (size_t k = 0; k < before->n_entries; k++) {
                const group_entry *e = &before->entries[k], *now;

                if (!f->group_cb || f->known_gen != gen)
                        return;
                if (e->removed)
                        continue;
                now = group_table_get_object(&f->known, e->object);
                if (!now || group_remade(e, now))
                        group_report(f, e->object, false, FREEZER_STATE_UNKNOWN);
        }
        /* Nothing but a new installation (known_gen) changes the table
         * while the callbacks run: signals wait in the queue meanwhile. */
        for (size_t k = 0; k < f->known.n_entries; k++) {
                const group_entry *e = &f->known.entries[k], *old;

                if (!f->group_cb || f->known_gen != gen)
                        return;
                if (e->removed)
                        continue;
                old = group_table_get_object(before, e->object);
                if (!old || group_remade(old, e))
                        group_report(f, e->object, true, FREEZER_STATE_UNKNOWN);
        }
}

static int on_groups_listed_queue(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/* ListGroupIds() for the group callback's table, not waited for. */
static int groups_list(freezer *f) {
        int r;

        f->known_in = f->known_again = false;
        f->known_slot = sd_bus_slot_unref(f->known_slot);
        r = reload_call(f, "ListGroupIds", on_groups_listed_queue, &f->known_slot, &f->known_retry);
        if (r < 0) {
                f->known_slot = NULL;
                /* Signals are reported as they come, as before any list; but
                 * not where it is retried (-ENOMEM: reload_call()): the table
                 * stays what the callback was told until the retry's list,
                 * lest a signal repeated meanwhile be reported twice (as
                 * on_groups_listed() keeps it for a table that lacks the
                 * memory). */
                if (r != -ENOMEM)
                        f->known_loaded = false;
        }
        return r;
}

/* An InterfacesAdded/Removed was dropped (defer()): the groups are listed
 * again, and the list compared with what the callback was told.  A reply on
 * its way is newer than the signal and serves; a reply queued already is
 * older, and they are listed once more after it. */
static void groups_lost(freezer *f) {
        if (!f->group_cb)
                return;
        f->known_lost = true;
        if (!f->known_slot)
                groups_list(f);
        else if (f->known_in)
                f->known_again = true;
}

/* freezerd (re)started: its groups, as the new table.  What came and went
 * while none ran is not reported (freezer.h: the resync callback's
 * DAEMON_STARTED says to read the groups afresh), unless a signal is dropped
 * before the list is in: then the list is compared with what the callback
 * was told, and those groups are reported too, rather than some of them
 * lost.  Until the list is in, signals are reported as they come. */
static void groups_reload(freezer *f) {
        f->known_loaded = false;
        groups_list(f);
}

/* A retry of b's kind started: the next waits twice as long as this one
 * did (reload_lost()), 10 ms after the first, 1 s at most. */
static void reload_backoff_grow(reload_backoff *b) {
        if (b->delay == 0)
                b->delay = RELOAD_RETRY_DELAY_MIN_USEC;
        else if (b->delay < RELOAD_RETRY_DELAY_MAX_USEC / 2)
                b->delay *= 2;
        else
                b->delay = RELOAD_RETRY_DELAY_MAX_USEC;
}

/* The reloads whose replies could not be queued (defer_reload_reply()),
 * started again; one that cannot be sent now is left for the next
 * dispatch, and its error for the one after (reload_error).  The state
 * callback's: whichever reply was lost, the Ids are loaded again and the
 * states read after them, as for a dropped InterfacesAdded/Removed (the
 * states alone with GroupsChanged): what changed meanwhile is reported as
 * then.  A subscription whose reply was lost was sent: it is not sent
 * again (freezerd counts each); but one refused by an older freezerd
 * (states_fallback) falls back to SubscribeGroups(), as its reply would
 * have had it, the states read after it, and one freezerd answered
 * NoMemory (states_resubscribe) is sent again.  Nothing is left to reload once the
 * callback is gone, or the connection is lost.  Each kind not before its
 * backoff's time: each retry doubles the wait before the next of its kind
 * (reload_lost()), and a reload whose last reply is kept ends that
 * (reload_done()); so does the fallback's SubscribeGroups() answered with
 * a refusal, which is not retried (on_fallback_subscribed(): answered
 * subscribed, the states read after it end it). */
static void reloads_retry(freezer *f) {
        uint64_t n;
        int r = 0;

        if (sd_bus_is_open(f->bus) <= 0) {
                f->states_retry = f->known_retry = f->states_fallback = f->states_resubscribe = false;
                reload_retries_dropped(f, &f->states_retry);
                reload_retries_dropped(f, &f->known_retry);
        }
        n = now_usec();
        if (reload_kind_pending(f, &f->states_retry) && f->states_backoff.at <= n) {
                reload_backoff_grow(&f->states_backoff);
                if (f->states_resubscribe) {
                        /* Its reply loads the Ids, and the states after them
                         * (held_lost): freezerd sent no GroupStatesChanged
                         * since it started, and what changed meanwhile is
                         * read.  A reload pending too is done with it.  Only
                         * a lack of memory is retried (reload_lost()). */
                        if (f->state_cb)
                                r = state_resubscribe(f);
                        if (r >= 0) {
                                f->states_resubscribe = f->states_retry = false;
                                if (f->state_cb)
                                        f->held_lost = true;
                        } else if (r != -ENOMEM)
                                /* Given up, its error told (reload_error):
                                 * nothing to reload from a freezerd that did
                                 * not subscribe the handle. */
                                f->states_resubscribe = f->states_retry = false;
                }
                if (f->states_fallback) {
                        /* As on_states_subscribed() for this error, unless the
                         * callback went, or a freezerd (re)started since and was
                         * subscribed anew (on_daemon_owner_changed()'s
                         * cache_clear() cleared this).  Its reply was lost, the
                         * fallback could not be sent then, or its
                         * SubscribeGroups() was answered with a shortage
                         * (on_fallback_subscribed()): GroupsChanged only from
                         * now on, and what changed since that reply (since the
                         * NoMemory, for a subscription sent again) is read
                         * once this subscription is confirmed
                         * (on_fallback_subscribed()), as a lost reply of the
                         * compact path reads the states after the Ids; a read
                         * pending (states_retry) waits for it too.  A fallback
                         * that cannot be sent now either waits for the next
                         * retry, its error -ENOMEM also where sd-bus' write
                         * queue was full (states_fallback_subscribe()). */
                        if (f->state_cb) {
                                r = states_fallback_subscribe(f);
                                if (r >= 0)
                                        f->states_retry = false;
                        }
                        if (r >= 0)
                                f->states_fallback = false;
                }
                /* Not while the subscription waits to be sent again: its
                 * reply loads the Ids and the states (above); nor is its
                 * error overwritten.  Nor while the fallback does: the
                 * states are read after its reply (a read now could be
                 * older than the subscription). */
                if (f->states_retry && !f->states_resubscribe && !f->states_fallback) {
                        if (f->state_cb && !f->compact)
                                r = states_lost(f);
                        else if (f->state_cb && f->ids_slot)
                                ids_lost(f); /* a reload started since: the Ids with it, or after it */
                        else if (f->state_cb) {
                                held_drop(f);
                                f->held_lost = true;
                                r = ids_reload(f);
                        }
                        if (r >= 0)
                                f->states_retry = false;
                }
                /* One that could not be sent (no memory either) waits as
                 * long.  (The fallback waits for its reply as the other
                 * reloads do, since 0.6.5: the states read after it end the
                 * backoff, on_states_reread().) */
                if (reload_kind_pending(f, &f->states_retry))
                        f->states_backoff.at = usec_add(now_usec(), f->states_backoff.delay);
        }
        if (f->known_retry && f->known_backoff.at <= n) {
                int q = 0;

                reload_backoff_grow(&f->known_backoff);
                if (f->group_cb && !f->known_slot)
                        q = groups_list(f);
                if (q >= 0)
                        f->known_retry = false;
                else {
                        f->known_backoff.at = usec_add(now_usec(), f->known_backoff.delay);
                        if (r >= 0)
                                r = q;
                }
        }
        if (r < 0 && f->reload_error == 0)
                f->reload_error = r;
}

static int on_groups_listed(sd_bus_message *reply, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        bool compare = f->known_lost && f->known_base, again = f->known_again;
        group_table before;
        int r;

        f->known_slot = sd_bus_slot_unref(f->known_slot);
        f->known_in = f->known_again = false;
        if (f->group_cb && reply_shortage(reply)) {
                /* As for a table that lacks the memory, below. */
                reload_lost(f, &f->known_retry, -ENOMEM);
                return 0;
        }
        if (!f->group_cb || sd_bus_message_is_method_error(reply, NULL)) {
                reload_done(f, &f->known_retry);
                return 0; /* freezerd went, or is one without Ids: signals as they come */
        }

        before = f->known;
        r = group_list_fails() ? -ENOMEM : groups_read(reply, &f->known);
        if (r == -ENOMEM) {
                /* Without the memory for the new table: what the dropped
                 * signals said would be lost for good.  Listed again from a
                 * later dispatch (reload_lost()), which this one tells, as
                 * for a reply that could not be queued (defer_reload_reply());
                 * the table, known_lost and known_loaded stay as they were,
                 * so that list is compared with what the callback was told. */
                f->known = before;
                reload_lost(f, &f->known_retry, r);
                return 0;
        }
        /* Not before a list read again (again): its reply, lost, backs off
         * as on_states_reread()'s. */
        if (r < 0 || !again)
                reload_done(f, &f->known_retry);
        if (r < 0) {
                f->known = before;
                f->known_loaded = false;
                return 0;
        }
        f->known_loaded = f->known_base = true;
        f->known_lost = false;
        f->known_gen++;
        if (compare)
                groups_report_changes(f, &before);
        group_table_clear(&before);
        if (again)
                groups_lost(f);
        return 0;
}

static int on_groups_listed_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        int r;

        f->known_in = true; /* see groups_lost() */
        r = defer_reload_reply(f, m, on_groups_listed, &f->known_slot, &f->known_retry);
        if (r < 0)
                f->known_in = false;
        return r;
}

/* A group added (with its Id, 0 if the signal had none) or removed, for the
 * group callback: reported unless the table says it changes nothing (the
 * group is there already, with that Id, or is not there to remove: a list
 * read after a dropped signal reported it already).  A path that has
 * another group now is reported removed, then added. */
static void group_signal(freezer *f, const char *path, bool added, uint64_t id, freezer_state state) {
        group_entry *e = group_table_get_object(&f->known, path);
        unsigned gen = f->known_gen;

        if (!added) {
                if (!e && f->known_loaded)
                        return;
                group_table_remove_object(&f->known, path);
                group_report(f, path, false, FREEZER_STATE_UNKNOWN);
                return;
        }
        if (e && f->known_loaded) {
                if (id == 0 || e->id == 0 || e->id == id)
                        return;
                group_report(f, path, false, FREEZER_STATE_UNKNOWN);
                /* Removed, or installed again (its list has the group). */
                if (!f->group_cb || f->known_gen != gen)
                        return;
        }
        /* Without the memory the table misses the group: signals are
         * reported as they come from now on, rather than its removal lost. */
        if (!group_table_put(&f->known, path, id, NULL))
                f->known_loaded = false;
        group_report(f, path, true, state);
}

/* An InterfacesAdded/Removed; report: for the group callback too (not one
 * older than its table: on_interfaces_changed_before()). */
static int interfaces_changed(freezer *f, sd_bus_message *m, bool report) {
        /* What InterfacesAdded says of the group: its Id and state. */
        state_props props = {
                .state = FREEZER_STATE_UNKNOWN,
        };
        bool added, is_group = false;
        _cleanup_free_ char *path = NULL;
        const char *object;
        int r;

        /* Malformed signals are ignored, as in on_properties_changed(). */

        if (!f->group_cb && !f->state_cb)
                return 0;

        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded"))
                added = true;
        else if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"))
                added = false;
        else
                return 0;

        r = sd_bus_message_read(m, "o", &object);
        if (r < 0)
                return 0;

        if (added) {
                r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
                if (r < 0)
                        return 0;

                for (;;) {
                        const char *interface;

                        r = sd_bus_message_enter_container(m, 'e', "sa{sv}");
                        if (r < 0)
                                return 0;
                        if (r == 0)
                                break;

                        r = sd_bus_message_read(m, "s", &interface);
                        if (r < 0)
                                return 0;

                        if (streq(interface, FREEZER_GROUP_INTERFACE)) {
                                is_group = true;
                                r = read_property_dict(m, read_state_property, &props);
                        } else
                                r = sd_bus_message_skip(m, "a{sv}");
                        if (r < 0)
                                return 0;

                        r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                return 0;
                }
        } else {
                const char *interface;

                r = sd_bus_message_enter_container(m, 'a', "s");
                if (r < 0)
                        return 0;

                while ((r = sd_bus_message_read(m, "s", &interface)) > 0)
                        if (streq(interface, FREEZER_GROUP_INTERFACE))
                                is_group = true;
                if (r < 0)
                        return 0;
        }

        if (!is_group)
                return 0;

        r = group_object_to_path(object, &path);
        if (r <= 0)
                return 0;

        if (added)
                cache_update(f, object, path, &props);
        else
                cache_remove(f, object);

        if (report && f->group_cb)
                group_signal(f, path, added, props.id,
                             added && props.have_state ? props.state : FREEZER_STATE_UNKNOWN);
        return 0;
}

static int on_interfaces_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        return interfaces_changed(userdata, m, true);
}

/* One that was queued when the group callback's table was listed: the
 * list holds what it says already. */
static int on_interfaces_changed_before(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        return interfaces_changed(userdata, m, false);
}

/* The group callback's first table, waited for (after its match: what
 * changes after the list is queued behind it).  The signals queued before
 * its reply are older than the list: not reported.  A list that fails (no
 * freezerd yet, or one without ListGroupIds()) is no error: signals are
 * reported as they come, and a freezerd that starts is listed then.  Not
 * auto-started: the group callback only listens, as it did before it
 * listed.  One that lacks the memory for its call (or that sd-bus cannot
 * queue: reload_send_shortage()), its reply or its table
 * is listed again from a later freezer_dispatch(), which says -ENOMEM, as a
 * later list is (reload_lost(), on_groups_listed()): without it, a signal
 * dropped later would have no table to be compared with, and its group
 * would not be reported.  (An -ENOMEM of the call may be freezerd's
 * NoMemory: not told apart, it is listed again too.)  Until that list is
 * in, signals are reported as they come. */
static void groups_load(freezer *f) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r;

        groups_clear(f);
        r = reload_send_fails();
        if (r >= 0)
                r = new_manager_call(f, "ListGroupIds", &m);
        if (r >= 0)
                r = sd_bus_message_set_auto_start(m, false);
        if (r >= 0)
                r = call_wait(f, m, 0, &error, &reply);
        /* -ENOBUFS: sd-bus' write queue full, or its read queue while it
         * waited, or the bus' LimitsExceeded (freezerd's own has another
         * number), the connection open: as a lack of memory. */
        r = reload_send_shortage(r);
        if (r >= 0)
                r = group_list_fails() ? -ENOMEM : groups_read(reply, &f->known);
        if (r == -ENOMEM)
                reload_lost(f, &f->known_retry, r);
        if (r < 0)
                return;
        f->known_loaded = f->known_base = true;
        for (deferred *d = f->deferred; d; d = d->next)
                if (d->handler == on_interfaces_changed)
                        d->handler = on_interfaces_changed_before;
}

FREEZER_EXPORT int freezer_set_group_callback(freezer *f, freezer_group_callback cb, void *userdata) {
        int r;

        if (!f)
                return -EINVAL;

        if (!cb) {
                if (f->group_unsubscribe)
                        (void) call_subscription(f, f->group_unsubscribe, NULL);
                f->group_unsubscribe = NULL;
                f->group_cb = NULL;
                f->group_userdata = NULL;
                groups_clear(f);
                owner_watch_update(f);
                interfaces_match_update(f); /* the state callback may still want it */
                return 0;
        }

        if (!f->group_cb) {
                bool added = !f->group_slot;

                r = interfaces_match_ensure(f);
                if (r >= 0)
                        /* A freezerd that (re)starts is listed again. */
                        r = owner_watch_ensure(f);
                if (r < 0) {
                        if (added)
                                f->group_slot = sd_bus_slot_unref(f->group_slot);
                        owner_watch_update(f);
                        return error_set(f, r);
                }
                /* The bus broadcasts InterfacesAdded/Removed; the private
                 * socket sends them only to a subscribed connection.  The
                 * group callback holds a subscription of its own: it may
                 * outlive the state callback's.  The one of GroupStatesChanged
                 * where freezerd has it: its signals are the smallest that
                 * come with such a subscription (GroupsChanged would bring a
                 * storm's 1 MB for nothing), and the state callback's signal
                 * too, sent once per turn whichever of them asked. */
                if (is_direct(f)) {
                        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                        const char *unsubscribe = "UnsubscribeGroupStates";

                        r = call_subscription(f, "SubscribeGroupStates", &error);
                        if (r < 0 && error_no_group_states(&error)) {
                                sd_bus_error_free(&error);
                                unsubscribe = "UnsubscribeGroups";
                                r = call_subscription(f, "SubscribeGroups", &error);
                        }
                        if (r < 0) {
                                if (added)
                                        f->group_slot = sd_bus_slot_unref(f->group_slot);
                                return error_take(f, &error, r);
                        }
                        f->group_unsubscribe = unsubscribe;
                }
                /* After the match and the subscription: a signal dropped
                 * from now on is made up for by a list compared with this
                 * one. */
                groups_load(f);
        }

        f->group_cb = cb;
        f->group_userdata = userdata;
        return 0;
}

/* ---- resync ---- */

FREEZER_EXPORT int freezer_set_resync_callback(freezer *f, freezer_resync_callback cb, void *userdata) {
        int r;

        if (!f)
                return -EINVAL;

        if (!cb) {
                f->resync_cb = NULL;
                f->resync_userdata = NULL;
                owner_watch_update(f);
                return 0;
        }

        /* The connection's loss comes through on_filter(). */
        r = filter_ensure(f);
        if (r >= 0)
                r = owner_watch_ensure(f);
        if (r < 0) {
                owner_watch_update(f);
                return error_set(f, r);
        }

        f->resync_cb = cb;
        f->resync_userdata = userdata;
        return 0;
}

/* ---- pressure ---- */

#define FREEZER_ERROR_NOT_SUPPORTED FREEZER_ERROR_PREFIX "NotSupported"

static const char *const resource_table[] = {
        [FREEZER_RESOURCE_CPU] = "cpu",
        [FREEZER_RESOURCE_MEMORY] = "memory",
        [FREEZER_RESOURCE_IO] = "io",
        [FREEZER_RESOURCE_IRQ] = "irq",
};

static const char *const pressure_property_table[] = {
        [FREEZER_RESOURCE_CPU] = "CpuPressure",
        [FREEZER_RESOURCE_MEMORY] = "MemoryPressure",
        [FREEZER_RESOURCE_IO] = "IoPressure",
        [FREEZER_RESOURCE_IRQ] = "IrqPressure",
};

FREEZER_EXPORT const char *freezer_resource_to_string(freezer_resource r) {
        if ((unsigned) r >= ELEMENTSOF(resource_table))
                return NULL;
        return resource_table[r];
}

FREEZER_EXPORT int freezer_resource_from_string(const char *s) {
        int i = string_table_index(resource_table, ELEMENTSOF(resource_table), s);

        return i < 0 ? -EINVAL : i;
}

/* "/" or "/a/b", as the daemon keeps paths: then the group's object path is
 * known without asking (sd_bus_path_encode() of it, like the daemon's). */
static bool path_is_normalized(const char *path) {
        if (path[0] != '/')
                return false;
        if (path[1] == 0)
                return true;

        for (const char *p = path; *p; p++)
                if (*p == '/' && (p[1] == '/' || p[1] == 0))
                        return false;

        return true;
}

static int read_pressure_line(sd_bus_message *m, freezer_pressure_line *l) {
        return sd_bus_message_read(m, "(dddt)", &l->avg10, &l->avg60, &l->avg300, &l->total_usec);
}

static int get_pressure_property(freezer *f, const char *object, const char *interface, freezer_resource res,
                                 freezer_pressure *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        freezer_pressure p = {};
        int r;

        r = call_method_wait(f, object, "org.freedesktop.DBus.Properties", "Get",
                             error, &reply, "ss", interface, pressure_property_table[res]);
        if (r < 0)
                return r;

        if (res == FREEZER_RESOURCE_IRQ) {
                r = sd_bus_message_enter_container(reply, 'v', "(dddt)");
                if (r < 0)
                        return r;
                r = read_pressure_line(reply, &p.full);
                if (r < 0)
                        return r;
        } else {
                r = sd_bus_message_enter_container(reply, 'v', "((dddt)(dddt))");
                if (r < 0)
                        return r;
                r = sd_bus_message_enter_container(reply, 'r', "(dddt)(dddt)");
                if (r < 0)
                        return r;
                r = read_pressure_line(reply, &p.some);
                if (r < 0)
                        return r;
                r = read_pressure_line(reply, &p.full);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }

        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;

        *ret = p;
        return 0;
}

static int get_pressure(freezer *f, const char *path, freezer_resource res, freezer_pressure *ret,
                        sd_bus_error *error) {
        _cleanup_free_ char *object = NULL;
        int r;

        if (!path)
                return get_pressure_property(f, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE, res, ret, error);

        /* One round trip for a group the daemon publishes: Get on the object
         * path we derive. Anything the daemon does not publish under that
         * path (an untracked group, a path it would refuse) goes through
         * GetGroup, which tracks the group or says what is wrong. */
        if (path_is_normalized(path)) {
                r = sd_bus_path_encode(FREEZER_GROUP_PREFIX, path, &object);
                if (r < 0)
                        return r;

                r = get_pressure_property(f, object, FREEZER_GROUP_INTERFACE, res, ret, error);
                if (r >= 0 || !sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        return r;

                sd_bus_error_free(error);
                object = mfree(object);
        }

        r = group_object_get(f, path, &object, error);
        if (r < 0)
                return r;

        return get_pressure_property(f, object, FREEZER_GROUP_INTERFACE, res, ret, error);
}

FREEZER_EXPORT int freezer_get_pressure(freezer *f, const char *path, freezer_resource res, freezer_pressure *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret)
                *ret = (freezer_pressure) {};
        if (!f)
                return -EINVAL;
        if (!ret)
                return error_invalid_arg(f, "ret is NULL");
        if ((unsigned) res >= ELEMENTSOF(resource_table))
                return error_unknown_resource(f, res);

        if (path && res == FREEZER_RESOURCE_IRQ)
                return error_set_named(f, FREEZER_ERROR_NOT_SUPPORTED,
                                       "IRQ pressure is published for the system only (a NULL path)");

        r = get_pressure(f, path, res, ret, &error);
        if (r < 0) {
                *ret = (freezer_pressure) {};
                return error_take(f, &error, r);
        }

        return 0;
}

/* -- triggers -- */

static trigger_entry *trigger_get(freezer *f, uint32_t id) {
        for (size_t i = 0; i < f->n_triggers; i++)
                if (f->triggers[i].id == id)
                        return &f->triggers[i];
        return NULL;
}

static void trigger_forget(freezer *f, trigger_entry *t) {
        size_t i = (size_t) (t - f->triggers);

        trigger_entry_clear(t);
        memmove(f->triggers + i, f->triggers + i + 1, (f->n_triggers - i - 1) * sizeof(trigger_entry));
        f->n_triggers--;
}

/* Take over *t (zeroed on success). */
static int trigger_remember(freezer *f, trigger_entry *t) {
        trigger_entry *old;

        /* An id known already belongs to a trigger we missed the end of: the
         * daemon hands out each id once at a time. */
        old = trigger_get(f, t->id);
        if (old)
                trigger_forget(f, old);

        if (f->n_triggers >= f->n_triggers_allocated) {
                size_t n = f->n_triggers_allocated > 0 ? f->n_triggers_allocated * 2 : 8;
                trigger_entry *a;

                a = reallocarray(f->triggers, n, sizeof(trigger_entry));
                if (!a)
                        return -ENOMEM;
                f->triggers = a;
                f->n_triggers_allocated = n;
        }

        f->triggers[f->n_triggers++] = *t;
        *t = (trigger_entry) {};
        return 0;
}

/* The trigger a pressure signal is about: ours, from the freezerd that holds
 * it, sent by the object it belongs to.  On freezerd's private socket neither
 * the reply that made the trigger nor the signals carry a sender: the owner
 * is "" there, and only freezerd is at the other end. */
static trigger_entry *trigger_of_signal(freezer *f, sd_bus_message *m, uint32_t id) {
        const char *sender = sd_bus_message_get_sender(m),
                *object = sd_bus_message_get_path(m),
                *interface = sd_bus_message_get_interface(m);
        trigger_entry *t;

        t = trigger_get(f, id);
        if (!t || !object || !interface)
                return NULL;
        if (!streq(sender ?: "", t->owner))
                return NULL;
        if (!streq(object, t->object ?: FREEZER_MANAGER_PATH))
                return NULL;
        if (!streq(interface, t->object ? FREEZER_GROUP_INTERFACE : FREEZER_MANAGER_INTERFACE))
                return NULL;
        return t;
}

static void pressure_exceeded(freezer *f, sd_bus_message *m) {
        _cleanup_free_ char *path = NULL;
        freezer_pressure_line line;
        const char *resource, *kind;
        freezer_resource res;
        trigger_entry *t;
        uint32_t id;
        bool full;
        int r;

        r = sd_bus_message_read(m, "uss", &id, &resource, &kind);
        if (r < 0)
                return;
        r = read_pressure_line(m, &line);
        if (r < 0)
                return;

        t = trigger_of_signal(f, m, id);
        if (!t || !f->pressure_cb)
                return;

        /* The callback may remove the trigger: keep what it is given. */
        if (t->path) {
                path = strdup(t->path);
                if (!path)
                        return;
        }
        res = t->resource;
        full = t->full;

        f->pressure_cb(f, path, id, res, full, &line, f->pressure_userdata);
}

static void pressure_trigger_ended(freezer *f, trigger_entry *t, const char *reason) {
        _cleanup_free_ char *path = TAKE_PTR(t->path);
        freezer_resource res = t->resource;
        bool full = t->full;
        uint32_t id = t->id;

        trigger_forget(f, t);

        if (f->pressure_removed_cb)
                f->pressure_removed_cb(f, path, id, res, full, reason, f->pressure_removed_userdata);
}

static void pressure_trigger_removed(freezer *f, sd_bus_message *m) {
        _cleanup_free_ char *reason = NULL;
        const char *s;
        trigger_entry *t;
        uint32_t id;
        int r;

        r = sd_bus_message_read(m, "us", &id, &s);
        if (r < 0)
                return;

        t = trigger_of_signal(f, m, id);
        if (!t)
                return;

        reason = strdup(s);
        if (!reason)
                return;

        pressure_trigger_ended(f, t, reason);
}

/* A filter, not a match: the daemon sends its pressure signals to the owner
 * of the trigger only, and the bus delivers such signals without any match
 * rule. So nothing needs to be asked of the bus, and no broadcast signal of
 * the daemon wakes us up for it. */
/* The handle's one filter: pressure signals (unicast, so no match is needed
 * for them), and the Disconnected signal sd-bus makes up itself, once, when
 * the handle's connection is lost. */
static int on_filter(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;

        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Local", "Disconnected")) {
                /* freezerd held every trigger for that connection (private socket)
                 * or its unique name (bus): all are gone, and no signal will say
                 * so.  One at a time, as a callback may remove others (adding
                 * fails now). */
                while (f->n_triggers > 0)
                        pressure_trigger_ended(f, &f->triggers[0], "disconnected");
                cache_clear(f);
                resync_notify(f, FREEZER_RESYNC_DISCONNECTED);
                return 0; /* others may want it, too */
        }

        if (f->n_triggers == 0)
                return 0;
        if (sd_bus_message_is_signal(m, NULL, "PressureExceeded"))
                pressure_exceeded(f, m);
        else if (sd_bus_message_is_signal(m, NULL, "PressureTriggerRemoved"))
                pressure_trigger_removed(f, m);
        return 0;
}

/* A PressureExceeded: at most one per trigger waits in the queue, the latest
 * (whose reading is the newest), so that however long the handle is not
 * dispatched they never fill the queue, and a trigger's firing is never
 * dropped: the pressure callback says that it fired, once for all the
 * firings that waited.  One that is no trigger's of ours is dropped here, as
 * on_filter() would drop it (a trigger is known from the reply that made it,
 * which comes before its signals). */
static int defer_pressure_exceeded(freezer *f, sd_bus_message *m) {
        trigger_entry *t;
        deferred *d;
        uint32_t id;
        int r;

        r = sd_bus_message_read(m, "u", &id);
        if (r < 0 || sd_bus_message_rewind(m, true) < 0)
                return 0; /* malformed: on_filter() would ignore it */
        t = trigger_of_signal(f, m, id);
        if (!t)
                return 0;
        if (t->exceeded) {
                sd_bus_message_unref(t->exceeded->m);
                t->exceeded->m = sd_bus_message_ref(m);
                return 0;
        }
        r = defer_full(f, m, on_filter, f, &f->filter_slot, false, &d);
        if (r < 0)
                return r;
        d->exceeded = true;
        d->trigger_id = id;
        t->exceeded = d;
        return 0;
}

/* Only what on_filter() acts on: the filter sees every message. */
static int on_filter_queue(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;

        /* A trigger's removal comes once, and the handle would keep the
         * trigger for good without it: never dropped. */
        if (sd_bus_message_is_signal(m, "org.freedesktop.DBus.Local", "Disconnected") ||
            sd_bus_message_is_signal(m, NULL, "PressureTriggerRemoved"))
                return defer(f, m, on_filter, f, &f->filter_slot, false);
        if (sd_bus_message_is_signal(m, NULL, "PressureExceeded"))
                return defer_pressure_exceeded(f, m);
        return 0;
}

/* freezerd (old_owner) left the bus: the triggers it held are gone with it. */
static void pressure_triggers_ended_by(freezer *f, const char *old_owner) {
        _cleanup_free_ char *old = strdup(old_owner);

        if (!old)
                return;
        /* One at a time: a callback may add or remove triggers. */
        for (;;) {
                trigger_entry *t = NULL;

                for (size_t i = 0; i < f->n_triggers && !t; i++)
                        if (streq_ptr(f->triggers[i].owner, old))
                                t = &f->triggers[i];
                if (!t)
                        break;

                pressure_trigger_ended(f, t, "daemon-exited");
        }
}

static int pressure_setup(freezer *f) {
        int r = filter_ensure(f);

        return r < 0 ? r : owner_watch_ensure(f);
}

static int add_pressure_trigger(freezer *f, const char *path, freezer_resource res, bool full,
                                uint64_t threshold_usec, uint64_t window_usec, uint32_t *ret_id,
                                sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(trigger_entry_clear) trigger_entry t = {};
        const char *owner;
        uint32_t id;
        int r;

        r = pressure_setup(f);
        if (r < 0)
                return r;

        if (path) {
                /* A group the daemon publishes is reached by the object
                 * derived from its path, as by get_pressure(): GetGroup of one
                 * in a subtree tracked for a transient lookup
                 * (freezer_lookup_group()) would track it for good.  Anything
                 * else (an untracked group, a path freezerd would refuse) goes
                 * through GetGroup, which tracks it or says what is wrong. */
                if (path_is_normalized(path)) {
                        /* Everything the entry needs is made before the
                         * trigger is: once it is, nothing fails but its
                         * remembering (below), which removes it again. */
                        t.path = strdup(path);
                        if (!t.path)
                                return -ENOMEM;
                        r = sd_bus_path_encode(FREEZER_GROUP_PREFIX, path, &t.object);
                        if (r < 0)
                                return r;
                        r = call_method_wait(f, t.object, FREEZER_GROUP_INTERFACE, "AddPressureTrigger", error,
                                             &reply, "sstt", resource_table[res], full ? "full" : "some",
                                             threshold_usec, window_usec);
                        if (r < 0 && !sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                                return r;
                        if (r < 0) {
                                sd_bus_error_free(error);
                                t.object = mfree(t.object);
                                t.path = mfree(t.path);
                        }
                }
                if (!t.object) {
                        r = group_object_get(f, path, &t.object, error);
                        if (r < 0)
                                return r;
                        r = group_object_to_path(t.object, &t.path);
                        if (r < 0)
                                return r;
                        if (r == 0) {
                                t.path = strdup(path);
                                if (!t.path)
                                        return -ENOMEM;
                        }
                }
        }

        if (!reply) {
                r = call_method_wait(f, t.object ?: FREEZER_MANAGER_PATH,
                                     t.object ? FREEZER_GROUP_INTERFACE : FREEZER_MANAGER_INTERFACE,
                                     "AddPressureTrigger", error, &reply, "sstt",
                                     resource_table[res], full ? "full" : "some", threshold_usec, window_usec);
                if (r < 0)
                        return r;
        }

        r = sd_bus_message_read(reply, "u", &id);
        if (r < 0)
                return r;

        owner = sd_bus_message_get_sender(reply);
        t.owner = strdup(owner ?: "");
        t.id = id;
        t.resource = res;
        t.full = full;

        if (!t.owner || trigger_remember(f, &t) < 0) {
                /* Do not leave a trigger behind that nobody can see. */
                (void) call_method_wait(f, t.object ?: FREEZER_MANAGER_PATH,
                                        t.object ? FREEZER_GROUP_INTERFACE : FREEZER_MANAGER_INTERFACE,
                                        "RemovePressureTrigger", NULL, NULL, "u", id);
                return -ENOMEM;
        }

        if (ret_id)
                *ret_id = id;
        return 0;
}

FREEZER_EXPORT int freezer_add_pressure_trigger(freezer *f, const char *path, freezer_resource res, bool full,
                                                uint64_t threshold_usec, uint64_t window_usec, uint32_t *ret_id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret_id)
                *ret_id = 0;
        if (!f)
                return -EINVAL;
        if ((unsigned) res >= ELEMENTSOF(resource_table))
                return error_unknown_resource(f, res);

        r = add_pressure_trigger(f, path, res, full, threshold_usec, window_usec, ret_id, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

static int remove_pressure_trigger(freezer *f, const char *path, uint32_t id, sd_bus_error *error) {
        _cleanup_free_ char *object = NULL;
        trigger_entry *t;
        int r;

        t = trigger_get(f, id);

        if (!path)
                object = strdup(FREEZER_MANAGER_PATH);
        else if (t && t->path && streq(path, t->path))
                object = strdup(t->object);
        else {
                r = group_object_get(f, path, &object, error);
                if (r < 0)
                        return r;
        }
        if (!object)
                return -ENOMEM;

        r = call_method_wait(f, object,
                             path ? FREEZER_GROUP_INTERFACE : FREEZER_MANAGER_INTERFACE,
                             "RemovePressureTrigger", error, NULL, "u", id);
        if (r < 0)
                return r;

        /* The call ran no callback (call_wait()): look it up again all the same. */
        t = trigger_get(f, id);
        if (t && streq(object, t->object ?: FREEZER_MANAGER_PATH))
                trigger_forget(f, t);

        return 0;
}

FREEZER_EXPORT int freezer_remove_pressure_trigger(freezer *f, const char *path, uint32_t id) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!f)
                return -EINVAL;

        r = remove_pressure_trigger(f, path, id, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

FREEZER_EXPORT int freezer_set_pressure_callback(freezer *f, freezer_pressure_callback cb, void *userdata) {
        if (!f)
                return -EINVAL;

        f->pressure_cb = cb;
        f->pressure_userdata = cb ? userdata : NULL;
        return 0;
}

FREEZER_EXPORT int freezer_set_pressure_removed_callback(freezer *f, freezer_pressure_removed_callback cb,
                                                         void *userdata) {
        if (!f)
                return -EINVAL;

        f->pressure_removed_cb = cb;
        f->pressure_removed_userdata = cb ? userdata : NULL;
        return 0;
}
