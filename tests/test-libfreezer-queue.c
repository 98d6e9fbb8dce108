/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * libfreezer's queue of messages at its bound, against a stand-in for
 * freezerd (a child process serving a socket in a temporary directory, as
 * freezerd serves its private socket) that sends PressureExceeded at will.
 * Built with libfreezer's sources and a queue of 16 messages (DEFERRED_MAX,
 * tests/meson.build).  No bus daemon, no cgroups, no real pressure.  And
 * how sd-bus' own NoReply for a call that timed out is told from a peer's,
 * and the state callback's Ids loaded again after an InterfacesAdded was
 * dropped while the Ids of an earlier one waited in the queue, and the group
 * callback's groups listed again after InterfacesAdded/Removed were dropped,
 * each change reported once, and a handle closed while its Ids are loaded
 * again.  And, with the test hooks of that build, the state callback's
 * groups that a reload of Ids finds gone dropped, and a reload whose reply
 * cannot be queued (no memory) reported by freezer_dispatch() and started
 * again, as one whose Ids cannot be loaded, the retries of replies lost for
 * good backing off (the states read after the Ids lost alone too; the delay
 * gone with the retries of a callback removed), and Ids past the table's
 * bound loaded as far as they fit; the group callback's list read again that
 * lacks the memory for its table read once more (-ENOMEM), one past the
 * bound not, and so is its list at the installation (then backing off);
 * the group callback's retries back off on their own, not reset by the
 * state callback's reply kept, nor by a list kept that is read again for
 * a signal dropped while its reply waited.  And freezerd's NoMemory to a
 * reload's list (the Ids, the states read after them, the group callback's
 * list) retried as a reply lost here is, with -ENOMEM; and so a reload's call
 * that cannot be sent, for lack of memory or as sd-bus' write queue is full
 * (ENOBUFS), the group callback's list at its installation too; and the
 * bus' LimitsExceeded to such a list so too (dbus-daemon's NoMemory has
 * freezerd's name).
 * And, needing no stand-in, which states freezer_state_frozen() calls
 * frozen.
 * Exit status 0 if all pass, 1 otherwise.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "freezer.h"
#include "test-bus-server.h"
#include "test-util.h"

#define PATH "/org/freezerd/Freezer1"
#define INTERFACE "org.freezerd.Freezer1.Manager"
#define TRIGGER_ID 7
#define N_CALLS 20      /* replies that fill the queue (16) */
#define N_SIGNALS 50    /* PressureExceeded sent at once */
#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define GROUP_INTERFACE "org.freezerd.Freezer1.Group"
#define N_GROUPS_MAX 32

/* The test hooks of libfreezer's test build (FREEZER_TEST_HOOKS). */
extern unsigned freezer_test_fail_reload_replies;
extern unsigned freezer_test_fail_reread_replies;
extern unsigned freezer_test_fail_ids_loads;
extern size_t freezer_test_group_table_max;
extern unsigned freezer_test_fail_group_lists;
extern unsigned freezer_test_fail_reload_sends;
extern unsigned freezer_test_reload_send_errno;
size_t freezer_test_state_groups(freezer *f);

/* The stand-in writes a letter here for each ListGroupIds (I) and
 * ListGroups (S) it answers, for the client to see the round trips. */
static int calls_pipe[2] = { -1, -1 };

/* The stand-in's groups: made by Freeze("/new..."), all frozen, each with
 * an Id of its own (from 100 on, as a real freezerd never gives one twice). */
static struct {
        char *path;
        uint64_t id;
} groups[N_GROUPS_MAX];
static unsigned n_groups;
static uint64_t next_id = 100;
/* Freeze("/slowlist") was called: the next ListGroupIds is answered 200 ms
 * late (its letter logged at once), for the client to act while it waits. */
static bool slow_list;
/* Freeze("/nomem/ids") or Freeze("/nomem/states") was called: the next
 * ListGroupIds, or ListGroups, is answered NoMemory (its letter logged), as
 * freezerd answers when it lacks the memory for the list.  "/limits/ids" or
 * "/limits/states": with the bus' LimitsExceeded instead, as dbus-daemon
 * answers a call it does not pass on (freezerd's queue at its limits). */
static bool nomem_ids, nomem_states;
static const char *nomem_error = SD_BUS_ERROR_NO_MEMORY;

/* ---- the stand-in (child process) ---- */

static void calls_log(char c) {
        if (write(calls_pipe[1], &c, 1) != 1)
                _exit(2);
}

/* A group made: its InterfacesAdded, with its Id. */
static int group_add(sd_bus *bus, const char *path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        _cleanup_free_ char *object = NULL;
        int r;

        if (n_groups >= N_GROUPS_MAX || !(groups[n_groups].path = strdup(path)))
                return -ENOMEM;
        groups[n_groups].id = next_id++;
        r = sd_bus_path_encode(GROUP_PREFIX, path, &object);
        if (r < 0)
                return r;
        r = sd_bus_message_new_signal(bus, &sig, PATH, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded");
        if (r >= 0)
                r = sd_bus_message_append(sig, "oa{sa{sv}}", object, 1, GROUP_INTERFACE, 2, "Id", "t",
                                          groups[n_groups].id, "State", "s", "frozen");
        if (r >= 0)
                r = sd_bus_send(bus, sig, NULL);
        if (r >= 0)
                n_groups++;
        return r;
}

/* A group removed: its InterfacesRemoved. */
static int group_remove(sd_bus *bus, const char *path) {
        _cleanup_free_ char *object = NULL;
        unsigned i = 0;
        int r;

        while (i < n_groups && !streq(groups[i].path, path))
                i++;
        if (i == n_groups)
                return -ENOENT;
        free(groups[i].path);
        memmove(&groups[i], &groups[i + 1], (n_groups - i - 1) * sizeof(groups[0]));
        n_groups--;
        r = sd_bus_path_encode(GROUP_PREFIX, path, &object);
        if (r < 0)
                return r;
        return sd_bus_emit_signal(bus, PATH, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", "oas",
                                  object, 1, GROUP_INTERFACE);
}

/* Freeze(s, t, t): an empty reply; for /hang none, ever; for /noreply a
 * NoReply error with the words of sd-bus' own for a call that timed out
 * (/noreply-max: and its serial); for /new... a group made (group_add())
 * first, for /del/X group X removed, for /remake/X removed and made again
 * (another Id), for /slowlist the next ListGroupIds slow (slow_list), for
 * /nomem/ids and /nomem/states the next list answered NoMemory. */
static int method_freeze(sd_bus_message *m, _unused_ void *userdata, sd_bus_error *error) {
        const char *s;
        int r;

        r = sd_bus_message_read(m, "s", &s);
        if (r < 0)
                return r;
        if (strncmp(s, "/new", 4) == 0) {
                r = group_add(sd_bus_message_get_bus(m), s);
                if (r < 0)
                        return r;
        }
        if (strncmp(s, "/del/", 5) == 0 || strncmp(s, "/remake/", 8) == 0) {
                const char *group = strchr(s + 1, '/');

                r = group_remove(sd_bus_message_get_bus(m), group);
                if (r >= 0 && s[1] == 'r')
                        r = group_add(sd_bus_message_get_bus(m), group);
                if (r < 0)
                        return r;
        }
        if (streq(s, "/slowlist"))
                slow_list = true;
        if (streq(s, "/nomem/ids") || streq(s, "/nomem/states"))
                nomem_error = SD_BUS_ERROR_NO_MEMORY;
        if (streq(s, "/limits/ids") || streq(s, "/limits/states"))
                nomem_error = SD_BUS_ERROR_LIMITS_EXCEEDED;
        if (streq(s, "/nomem/ids") || streq(s, "/limits/ids"))
                nomem_ids = true;
        if (streq(s, "/nomem/states") || streq(s, "/limits/states"))
                nomem_states = true;
        if (streq(s, "/hang")) {
                sd_bus_message_ref(m); /* held: the reply never goes */
                return 1;
        }
        if (streq(s, "/noreply"))
                return sd_bus_error_set(error, SD_BUS_ERROR_NO_REPLY, "Method call timed out");
        if (streq(s, "/noreply-max")) {
                /* The same with the serial sd-bus gives its own messages
                 * (dbus-daemon's counter for a client reaches it, freezerd's
                 * on the bus too): sealed with it, sd_bus_send() keeps it. */
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;

                r = sd_bus_message_new_method_errorf(m, &reply, SD_BUS_ERROR_NO_REPLY, "Method call timed out");
                if (r >= 0)
                        r = sd_bus_message_seal(reply, UINT32_MAX, 0);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
                return r < 0 ? r : 1;
        }
        return sd_bus_reply_method_return(m, NULL);
}

/* Thaw(s, t, t): N_SIGNALS PressureExceeded of the trigger, the k-th with a
 * total stall of k, then an empty reply. */
static int method_thaw(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        sd_bus *bus = sd_bus_message_get_bus(m);
        int r;

        for (unsigned k = 1; k <= N_SIGNALS; k++) {
                r = sd_bus_emit_signal(bus, PATH, INTERFACE, "PressureExceeded", "uss(dddt)", (uint32_t) TRIGGER_ID,
                                       "cpu", "some", 1.0, 2.0, 3.0, (uint64_t) k);
                if (r < 0)
                        return r;
        }
        return sd_bus_reply_method_return(m, NULL);
}

/* AddPressureTrigger(s, s, t, t): always the same id. */
static int method_add_trigger(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        return sd_bus_reply_method_return(m, "u", (uint32_t) TRIGGER_ID);
}

static int method_remove_trigger(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        return sd_bus_reply_method_return(m, NULL);
}

static int method_subscribe(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        return sd_bus_reply_method_return(m, NULL);
}

/* ListGroupIds(): a(st), and ListGroups(): a(sos), of the groups made. */
static int method_list(sd_bus_message *m, _unused_ void *userdata, _unused_ sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        bool ids = sd_bus_message_is_method_call(m, NULL, "ListGroupIds");
        int r;

        calls_log(ids ? 'I' : 'S');
        if (ids && slow_list) {
                slow_list = false;
                (void) usleep(200 * 1000);
        }
        if (ids ? nomem_ids : nomem_states) {
                *(ids ? &nomem_ids : &nomem_states) = false;
                return sd_bus_reply_method_errorf(m, nomem_error, "Cannot list the groups: %s",
                                                  strerror(ENOMEM));
        }
        r = sd_bus_message_new_method_return(m, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', ids ? "(st)" : "(sos)");
        for (unsigned i = 0; r >= 0 && i < n_groups; i++) {
                _cleanup_free_ char *object = NULL;

                if (ids)
                        r = sd_bus_message_append(reply, "(st)", groups[i].path, groups[i].id);
                else {
                        r = sd_bus_path_encode(GROUP_PREFIX, groups[i].path, &object);
                        if (r >= 0)
                                r = sd_bus_message_append(reply, "(sos)", groups[i].path, object, "frozen");
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("SubscribeGroupStates", "", "", method_subscribe, 0),
        SD_BUS_METHOD("UnsubscribeGroupStates", "", "", method_subscribe, 0),
        SD_BUS_METHOD("ListGroupIds", "", "a(st)", method_list, 0),
        SD_BUS_METHOD("ListGroups", "", "a(sos)", method_list, 0),
        SD_BUS_METHOD("Freeze", "stt", "", method_freeze, 0),
        SD_BUS_METHOD("Thaw", "stt", "", method_thaw, 0),
        SD_BUS_METHOD("AddPressureTrigger", "sstt", "u", method_add_trigger, 0),
        SD_BUS_METHOD("RemovePressureTrigger", "u", "", method_remove_trigger, 0),
        SD_BUS_SIGNAL("PressureExceeded", "uss(dddt)", 0),
        SD_BUS_VTABLE_END,
};

_Noreturn static void serve(int listen_fd) {
        test_bus_serve(listen_fd, PATH, INTERFACE, vtable, NULL);
}

/* ---- the client ---- */

static uint64_t mono_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

static unsigned calls_done, fired;
static uint64_t last_total;

static void call_cb(_unused_ freezer *f, const freezer_call_result *r, _unused_ void *userdata) {
        CHECK(r->error == 0);
        calls_done++;
}

static void pressure_cb(_unused_ freezer *f, const char *path, uint32_t id, freezer_resource res, bool full,
                        const freezer_pressure_line *reading, _unused_ void *userdata) {
        CHECK(!path && id == TRIGGER_ID && res == FREEZER_RESOURCE_CPU && !full);
        fired++;
        last_total = reading->total_usec;
}

/* Until every call's callback ran and nothing is left to dispatch. */
static void drain(freezer *f, unsigned calls) {
        for (uint64_t deadline = mono_usec() + 10 * USEC_PER_SEC; mono_usec() < deadline;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                int r = freezer_dispatch(f);

                CHECK(r >= 0);
                if (r < 0)
                        return;
                if (r == 0 && calls_done >= calls)
                        return;
                if (r == 0)
                        (void) poll(&p, 1, 100);
        }
        fprintf(stderr, "the calls' callbacks did not all run: %u of %u\n", calls_done, calls);
        CHECK(false);
}

/* N_CALLS replies wait in the queue, then N_SIGNALS PressureExceeded come
 * during a blocking call: past the bound, they were dropped. */
static void flood(freezer *f) {
        calls_done = fired = 0;
        last_total = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_thaw(f, "/x", 0, 0), 0);
        CHECK(calls_done == 0 && fired == 0); /* nothing ran in the blocking call */
}

/* A flood, then the queue drained: the trigger fired once, with the latest reading. */
static void flood_fired_once(freezer *f) {
        flood(f);
        drain(f, N_CALLS);
        CHECK(fired == 1);
        CHECK(last_total == N_SIGNALS);
}

static void test_pressure_coalesced(const char *socket_path) {
        freezer *f = NULL;
        uint32_t id = 0;

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        CHECK_R(freezer_set_pressure_callback(f, pressure_cb, NULL), 0);
        CHECK_R(freezer_add_pressure_trigger(f, NULL, FREEZER_RESOURCE_CPU, false, 100000, 2000000, &id), 0);
        CHECK(id == TRIGGER_ID);

        /* The firings that waited come as one, with the latest reading. */
        flood_fired_once(f);

        /* Again: the trigger's next one is queued anew. */
        flood_fired_once(f);

        /* Removed with its signal waiting: no callback; and a trigger of
         * the same id added since gets its own. */
        flood(f);
        CHECK_R(freezer_remove_pressure_trigger(f, NULL, TRIGGER_ID), 0);
        drain(f, N_CALLS);
        CHECK(fired == 0);
        CHECK_R(freezer_add_pressure_trigger(f, NULL, FREEZER_RESOURCE_CPU, false, 100000, 2000000, &id), 0);
        flood_fired_once(f);

        /* Re-added with the first one's signal still waiting: that one is
         * the old trigger's (the handle forgot it), the new one's come
         * after it. */
        flood(f);
        CHECK_R(freezer_remove_pressure_trigger(f, NULL, TRIGGER_ID), 0);
        CHECK_R(freezer_add_pressure_trigger(f, NULL, FREEZER_RESOURCE_CPU, false, 100000, 2000000, &id), 0);
        CHECK_R(freezer_thaw(f, "/x", 0, 0), 0);
        drain(f, N_CALLS);
        /* Each waits on its own: the old trigger's is not the new one's to
         * take the place of.  (The old one runs for the new trigger, which
         * has its id: a real freezerd never gives an id twice.) */
        CHECK(fired == 2);
        CHECK(last_total == N_SIGNALS);

        freezer_close(f);
}

static int timeout_error;
static char timeout_name[128];

static void timeout_cb(_unused_ freezer *f, const freezer_call_result *r, _unused_ void *userdata) {
        timeout_error = r->error;
        snprintf(timeout_name, sizeof timeout_name, "%s", r->error_name ?: "");
        calls_done++;
}

/* sd-bus' own NoReply for a call that timed out is told from a peer's with
 * the same words by what sd-bus makes it of (its own serial) and when (once
 * the call's timeout passed), not by the words: -ETIMEDOUT named Timeout, as
 * freezer.h says, for the first only. */
static void test_timeout(const char *socket_path) {
        freezer *f = NULL;

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        calls_done = 0;
        /* Both time out in the same 5 s (the call's timeout, 1 us, plus the
         * margin for freezerd's reply): the async one during the blocking
         * one. */
        CHECK_R(freezer_freeze_async(f, "/hang", 1, 0, timeout_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, "/hang", 1, 0), -ETIMEDOUT);
        CHECK_STR(freezer_last_error_name(f), SD_BUS_ERROR_TIMEOUT);
        drain(f, 1);
        CHECK(timeout_error == -ETIMEDOUT);
        CHECK_STR(timeout_name, SD_BUS_ERROR_TIMEOUT);

        /* A peer's NoReply keeps its name (its errno is sd-bus' for it). */
        CHECK(freezer_freeze(f, "/noreply", 0, 0) < 0);
        CHECK_STR(freezer_last_error_name(f), SD_BUS_ERROR_NO_REPLY);
        calls_done = 0;
        CHECK_R(freezer_freeze_async(f, "/noreply", 0, 0, timeout_cb, NULL, NULL), 0);
        drain(f, 1);
        CHECK(timeout_error < 0);
        CHECK_STR(timeout_name, SD_BUS_ERROR_NO_REPLY);

        /* Even with the serial of sd-bus' own (it read as a timeout): it
         * came before the call's timeout could pass. */
        CHECK(freezer_freeze(f, "/noreply-max", 0, 0) < 0);
        CHECK_STR(freezer_last_error_name(f), SD_BUS_ERROR_NO_REPLY);
        calls_done = 0;
        CHECK_R(freezer_freeze_async(f, "/noreply-max", 0, 0, timeout_cb, NULL, NULL), 0);
        drain(f, 1);
        CHECK(timeout_error < 0);
        CHECK_STR(timeout_name, SD_BUS_ERROR_NO_REPLY);
        freezer_close(f);
}

/* The state callback's reports of new_path. */
static const char *new_path = "/new2";
static unsigned new_reported;

static void state_cb(_unused_ freezer *f, const char *path, freezer_state state, bool frozen,
                     _unused_ void *userdata) {
        CHECK(strncmp(path, "/new", 4) == 0 && state == FREEZER_STATE_FROZEN && frozen);
        if (streq(path, new_path))
                new_reported++;
}

/* The calls' letters (calls_pipe) the stand-in wrote so far. */
static void calls_read(char *buf, size_t size) {
        ssize_t n = read(calls_pipe[0], buf, size - 1);

        buf[n > 0 ? n : 0] = 0;
}

/* The state callback's Ids: an InterfacesAdded dropped (the queue full of
 * replies) has them loaded again; another dropped while that ListGroupIds'
 * reply waits in the queue makes it older than the signal (ids_again), so
 * they are loaded once more as it is handled, before the states are read:
 * /new2, made after the first ListGroupIds, is reported with its state.
 * Without a second load it would be unknown to the handle (the states read
 * pass over it, and its GroupStatesChanged would be skipped for good). */
/* A handle with a state callback (its first ListGroupIds read off the log)
 * and N_CALLS freezes in flight, whose replies fill its queue to the bound:
 * a signal that comes next is dropped.  NULL if it cannot be opened. */
static freezer *open_queue_full(const char *socket_path) {
        freezer *f = NULL;
        char calls[32];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return NULL;
        CHECK_R(freezer_set_state_callback(f, state_cb, NULL), 0);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "I");
        calls_done = new_reported = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        return f;
}

static void test_ids_again(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        char calls[32];

        if (!f)
                return;
        /* Its InterfacesAdded comes after the replies (past the bound):
         * dropped, the Ids asked for again. */
        CHECK_R(freezer_freeze(f, "/new1", 0, 0), 0);
        /* That ListGroupIds' reply (/new1) is queued, then /new2's
         * InterfacesAdded dropped. */
        CHECK_R(freezer_freeze(f, "/new2", 0, 0), 0);
        CHECK(calls_done == 0 && new_reported == 0);
        for (uint64_t deadline = mono_usec() + 10 * USEC_PER_SEC; new_reported == 0 && mono_usec() < deadline;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                int r = freezer_dispatch(f);

                CHECK(r >= 0);
                if (r < 0)
                        break;
                if (r == 0)
                        (void) poll(&p, 1, 100);
        }
        drain(f, N_CALLS);
        CHECK(calls_done == N_CALLS);
        CHECK(new_reported == 1);
        /* The Ids twice (the second ListGroupIds sent as the first reply
         * was handled, not after a ListGroups that would be of no use),
         * then the states. */
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "IIS");
        freezer_close(f);
}

/* What the group callback reported: "+PATH" for added, "-PATH" for
 * removed, separated by spaces. */
static char group_reports[512];

static void group_cb(_unused_ freezer *f, const char *path, bool added, _unused_ freezer_state state,
                     _unused_ void *userdata) {
        size_t n = strlen(group_reports);

        snprintf(group_reports + n, sizeof group_reports - n, "%s%c%s", n > 0 ? " " : "", added ? '+' : '-',
                 path);
}

/* Until nothing is left to dispatch. */
static void dispatch_all(freezer *f) {
        for (uint64_t deadline = mono_usec() + 10 * USEC_PER_SEC; mono_usec() < deadline;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                int r = freezer_dispatch(f);

                CHECK(r >= 0);
                if (r <= 0 && (r < 0 || poll(&p, 1, 200) == 0))
                        return;
        }
}

/* The group callback's signals dropped (the queue full of replies): the
 * groups are listed again and compared with the list taken at its
 * installation, so each group made, removed or made again (removed, then
 * added) is reported once.  /new3's InterfacesAdded asks for a list; /new1's
 * InterfacesRemoved comes after that list's reply was queued, and /new2's
 * two signals too: they are older than it, so the groups are listed once
 * more after it.  Then signals are reported as they come, once each. */
static void test_groups_lost(const char *socket_path) {
        freezer *f = NULL;
        char calls[32];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        /* test_ids_again() left /new1 and /new2. */
        calls_read(calls, sizeof calls);
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        calls_done = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, "/new3", 0, 0), 0);
        CHECK_R(freezer_freeze(f, "/del/new1", 0, 0), 0);
        CHECK_R(freezer_freeze(f, "/remake/new2", 0, 0), 0);
        dispatch_all(f);
        CHECK(calls_done == N_CALLS);
        CHECK_STR(group_reports, "+/new3 -/new1 -/new2 +/new2");

        /* Signals that are not dropped: as they come. */
        group_reports[0] = 0;
        CHECK_R(freezer_freeze(f, "/new4", 0, 0), 0);
        CHECK_R(freezer_freeze(f, "/del/new4", 0, 0), 0);
        dispatch_all(f);
        CHECK_STR(group_reports, "+/new4 -/new4");

        /* At the installation, then twice after the drops. */
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "III");
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* Closed while the state callback's Ids are being loaded again (an
 * InterfacesAdded dropped, the ListGroupIds() on its way): the close lets go
 * of that call once, as of every other (run under AddressSanitizer or
 * valgrind, a second release is a use after free). */
static void test_close_reloading(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        char calls[32];

        if (!f)
                return;
        /* Its InterfacesAdded dropped: the Ids asked for again, not waited for. */
        CHECK_R(freezer_freeze(f, "/new5", 0, 0), 0);
        freezer_close(f);
        /* The second ListGroupIds was sent (the close waited for the stand-in
         * to take the calls in flight), and its reply never dispatched: the
         * close found the reload in flight. */
        calls_read(calls, sizeof calls);
        CHECK(calls[0] == 'I');
}

/* An InterfacesRemoved dropped: the Ids loaded again do not list the group,
 * and its entry goes from the state callback's table, as the signal would
 * have removed it (it stayed, for as long as the callback was installed:
 * every such group a stale entry). */
static void test_ids_removed(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        char calls[32];
        size_t n;

        if (!f)
                return;
        n = freezer_test_state_groups(f);
        CHECK(n >= 1);
        CHECK_R(freezer_freeze(f, "/del/new3", 0, 0), 0);
        dispatch_all(f);
        CHECK(calls_done == N_CALLS);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "IS");
        CHECK(freezer_test_state_groups(f) == n - 1);
        freezer_close(f);
}

/* Dispatched until new_path is reported, or for seconds: the -ENOMEM
 * failures counted, the handle due at once after each. */
static unsigned dispatch_until_reported(freezer *f, unsigned seconds) {
        unsigned enomem = 0;

        for (uint64_t deadline = mono_usec() + seconds * USEC_PER_SEC;
             new_reported == 0 && mono_usec() < deadline;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                uint64_t t = UINT64_MAX;
                int r = freezer_dispatch(f);

                if (r == -ENOMEM) {
                        enomem++;
                        /* Due at once: the loop comes back for the reload. */
                        CHECK_R(freezer_get_timeout(f, &t), 1);
                        CHECK(t == 0);
                        CHECK_R(freezer_wait(f, 0), 1);
                        continue;
                }
                CHECK(r >= 0);
                if (r < 0)
                        break;
                if (r == 0)
                        (void) poll(&p, 1, 100);
        }
        return enomem;
}

/* A reload of the state callback's, after path's InterfacesAdded was
 * dropped, that the handle loses once: freezer_dispatch() fails with -ENOMEM
 * once, the reload is started again, and path is reported; calls_expected:
 * the stand-in's calls from then on (I ListGroupIds, S ListGroups).  first
 * (may be NULL): a Freeze() of it before, which makes the stand-in answer
 * the next such call NoMemory; hook_before/hook_after (may be NULL): a test
 * hook's count set to 1 before/after path's Freeze(), which is used up by
 * then. */
static void check_reload_lost_once(const char *socket_path, const char *path, const char *first,
                                   unsigned *hook_before, unsigned *hook_after, const char *calls_expected) {
        freezer *f = open_queue_full(socket_path);
        char calls[32];

        if (!f)
                return;
        new_path = path;
        if (first)
                CHECK_R(freezer_freeze(f, first, 0, 0), 0);
        if (hook_before)
                *hook_before = 1;
        CHECK_R(freezer_freeze(f, path, 0, 0), 0);
        if (hook_after)
                *hook_after = 1;
        CHECK_R(dispatch_until_reported(f, 5), 1);
        drain(f, N_CALLS);
        if (hook_before)
                CHECK_R(*hook_before, 0);
        if (hook_after)
                CHECK_R(*hook_after, 0);
        CHECK_R(new_reported, 1);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, calls_expected);
        new_path = "/new2";
        /* Not carried into the next tests, used up or not. */
        if (hook_before)
                *hook_before = 0;
        if (hook_after)
                *hook_after = 0;
        freezer_close(f);
}

/* The reply of a reload of Ids that cannot be queued (no memory, made so by
 * the test hook): the lost reply's ListGroupIds, the one started again, the
 * states; /new6 reported.  (The reload waited for the lost reply for ever,
 * and no other reload started: /new6 was never reported, nor the error.) */
static void test_reload_reply_lost(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new6", NULL, NULL, &freezer_test_fail_reload_replies, "IIS");
}

/* The reload's call cannot be sent (no memory, made so by the test hook):
 * the retry's ListGroupIds (the first was not sent), the states.  (The send
 * failure was ignored: never retried, /new25 never reported, nor the
 * error.) */
static void test_ids_send_lost(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new25", NULL, &freezer_test_fail_reload_sends, NULL, "IS");
}

/* The reload's call cannot be queued by sd-bus (ENOBUFS, its write queue
 * full, made so by the test hook), the connection open: retried as for lack
 * of memory, with -ENOMEM.  (The send failure was ignored, as any but
 * -ENOMEM: never retried, /new26 never reported, nor the error.) */
static void test_ids_send_nobufs(const char *socket_path) {
        freezer_test_reload_send_errno = ENOBUFS;
        check_reload_lost_once(socket_path, "/new26", NULL, &freezer_test_fail_reload_sends, NULL, "IS");
        freezer_test_reload_send_errno = 0;
}

/* The Ids came but could not be loaded (no memory, made so by the test
 * hook): loaded again, the states read.  (The failure was ignored and the
 * states read with the old table, which lacked /new7: never reported, nor
 * the error.) */
static void test_ids_load_lost(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new7", NULL, NULL, &freezer_test_fail_ids_loads, "IIS");
}

/* The Ids answered NoMemory by freezerd: loaded again, the states read.
 * (The error was taken for "no Ids": the states were read with the old
 * table, which lacked /new21, never reported, nor the error.) */
static void test_ids_nomem(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new21", "/nomem/ids", NULL, NULL, "IIS");
}

/* The states read after the Ids answered NoMemory: retried as a lost reply
 * is.  (The error was taken for "no states": /new22 never reported.) */
static void test_states_nomem(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new22", "/nomem/states", NULL, NULL, "ISIS");
}

/* The Ids answered with the bus' LimitsExceeded (dbus-daemon did not pass
 * the call on): loaded again, the states read, as for NoMemory.  (It was
 * taken for "no Ids": /new30 never reported, nor the error.) */
static void test_ids_limits(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new30", "/limits/ids", NULL, NULL, "IIS");
}

/* The states read after the Ids answered with the bus' LimitsExceeded:
 * retried.  (Taken for "no states": /new31 never reported.) */
static void test_states_limits(const char *socket_path) {
        check_reload_lost_once(socket_path, "/new31", "/limits/states", NULL, NULL, "ISIS");
}

/* The poll() timeout (ms) until the handle's due time, -1 for none. */
static int due_ms(freezer *f) {
        uint64_t t, n;

        if (freezer_get_timeout(f, &t) <= 0 || t == UINT64_MAX)
                return -1;
        n = mono_usec();
        return t <= n ? 0 : (int) ((t - n + 999) / 1000);
}

/* Dispatched as a loop that polls the fd until freezer_get_timeout()'s time
 * (100 ms at most at a time), until deadline, max -ENOMEM, or done() (may be
 * NULL) says so: the -ENOMEM counted.  *future (may be NULL) counts the
 * losses from the second on after which the retry is due later, not at once
 * (a stall of the machine past the first short delays may make them due
 * already: the caller lets two pass). */
static unsigned dispatch_counting_enomem(freezer *f, uint64_t deadline, unsigned max, bool (*done)(void),
                                         unsigned *future) {
        unsigned enomem = 0;

        while (mono_usec() < deadline && enomem < max && !(done && done())) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                uint64_t t;
                int r = freezer_dispatch(f), ms;

                if (r == -ENOMEM) {
                        enomem++;
                        if (future && enomem >= 2 && freezer_get_timeout(f, &t) > 0 && t > mono_usec())
                                (*future)++;
                        continue;
                }
                CHECK(r >= 0);
                if (r < 0)
                        break;
                ms = due_ms(f);
                if (r == 0)
                        (void) poll(&p, 1, ms < 0 || ms > 100 ? 100 : ms);
        }
        return enomem;
}

/* The replies of reloads lost for good (no memory, lasting): the retries
 * back off (at once, then after 10 ms, 20 ms, ... up to 1 s), so over 1.5 s
 * a loop that polls the fd and freezer_get_timeout() sees a few -ENOMEM
 * (a reload every 10 + 20 + ... ms: 9 by 1.27 s), and freezer_get_timeout()
 * says a time to come after the second.  Once replies are kept again, the
 * next retry (within the cap) loads the Ids, and /new9, whose InterfacesAdded
 * was dropped, is reported.  (Every retry was due at once: a ListGroupIds
 * per round trip, hundreds of -ENOMEM, the loop never slept.) */
static void test_reload_backoff(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        unsigned enomem, future = 0, lost, ids = 0;
        char calls[256];

        if (!f)
                return;
        new_path = "/new9";
        CHECK_R(freezer_freeze(f, "/new9", 0, 0), 0);
        freezer_test_fail_reload_replies = 1000;
        /* Stopped at 100 -ENOMEM: the stand-in's log would fill up. */
        enomem = dispatch_counting_enomem(f, mono_usec() + 3 * USEC_PER_SEC / 2, 100, NULL, &future);
        lost = 1000 - freezer_test_fail_reload_replies;
        freezer_test_fail_reload_replies = 0;
        for (ssize_t n; (n = read(calls_pipe[0], calls, sizeof calls)) > 0;)
                for (ssize_t i = 0; i < n; i++)
                        ids += calls[i] == 'I';
        fprintf(stderr, "# lasting loss over 1.5 s: %u -ENOMEM, %u replies lost, %u ListGroupIds\n", enomem,
                lost, ids);
        CHECK(enomem >= 3 && enomem <= 12);
        CHECK(lost == enomem);
        CHECK(ids <= enomem + 1);
        CHECK(future + 2 >= enomem && future >= 1);
        CHECK_R(new_reported, 0);

        /* Memory again: the next retry loads the Ids, then the states. */
        CHECK_R(dispatch_until_reported(f, 5), 0);
        CHECK_R(new_reported, 1);
        drain(f, N_CALLS);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "IS");
        new_path = "/new2";
        freezer_close(f);
}

/* Dispatched as a loop that polls the fd until freezer_get_timeout()'s time,
 * with *lost set to lose the next so many replies, for 1.5 s or until max
 * -ENOMEM: their count.  *lost is 0 after. */
static unsigned dispatch_lasting_loss(freezer *f, unsigned *lost, unsigned max) {
        unsigned enomem;

        *lost = 1000;
        enomem = dispatch_counting_enomem(f, mono_usec() + 3 * USEC_PER_SEC / 2, max, NULL, NULL);
        *lost = 0;
        return enomem;
}

/* Every states read (ListGroups, after the Ids) lost, the Ids' replies
 * kept: the retries back off as in test_reload_backoff() (a reload is done
 * once its states are in, not its Ids), each a ListGroupIds then a
 * ListGroups.  Once replies are kept again, /new10, whose InterfacesAdded was
 * dropped, is reported.  (Each kept Ids reply reset the delay: every retry
 * was due at once, 100 -ENOMEM in some milliseconds.) */
static void test_reload_backoff_reread(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        unsigned enomem, ids = 0, states = 0;
        char calls[256];

        if (!f)
                return;
        new_path = "/new10";
        CHECK_R(freezer_freeze(f, "/new10", 0, 0), 0);
        /* Stopped at 100 -ENOMEM: the stand-in's log would fill up. */
        enomem = dispatch_lasting_loss(f, &freezer_test_fail_reread_replies, 100);
        for (ssize_t n; (n = read(calls_pipe[0], calls, sizeof calls)) > 0;)
                for (ssize_t i = 0; i < n; i++) {
                        ids += calls[i] == 'I';
                        states += calls[i] == 'S';
                }
        fprintf(stderr, "# states reads lost over 1.5 s: %u -ENOMEM, %u ListGroupIds, %u ListGroups\n", enomem,
                ids, states);
        CHECK(enomem >= 3 && enomem <= 12);
        CHECK(states == enomem);
        CHECK(ids <= enomem + 1);
        CHECK_R(new_reported, 0);

        CHECK_R(dispatch_until_reported(f, 5), 0);
        CHECK_R(new_reported, 1);
        drain(f, N_CALLS);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "IS");
        new_path = "/new2";
        freezer_close(f);
}

/* The state callback's Ids loaded again (a dropped InterfacesAdded of
 * new_path), their reply lost once: retried at once, as after no loss
 * (dispatch_until_reported() checks), and new_path reported. */
static void single_loss_at_once(freezer *f) {
        calls_done = new_reported = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, new_path, 0, 0), 0);
        freezer_test_fail_reload_replies = 1;
        CHECK_R(dispatch_until_reported(f, 5), 1);
        CHECK_R(new_reported, 1);
        drain(f, N_CALLS);
}

/* Retries whose replies were lost again (the delay grown to 160 ms), then
 * dropped with the callback they were for: the next loss, of another
 * reload, is a first one again, retried at once.  The state callback's
 * retries, dropped as it is removed and installed again; the group
 * callback's, as it is removed.  (The grown delay stayed: that loss waited
 * for it.) */
static void test_reload_delay_reset(const char *socket_path) {
        freezer *f = open_queue_full(socket_path);
        char calls[256];

        if (!f)
                return;
        new_path = "/new11";
        CHECK_R(freezer_freeze(f, "/new11", 0, 0), 0);
        CHECK_R(dispatch_lasting_loss(f, &freezer_test_fail_reload_replies, 6), 6);
        CHECK_R(freezer_set_state_callback(f, NULL, NULL), 0);
        drain(f, N_CALLS);
        CHECK_R(freezer_set_state_callback(f, state_cb, NULL), 0);
        new_path = "/new12";
        single_loss_at_once(f);
        CHECK_R(freezer_set_state_callback(f, NULL, NULL), 0);

        /* The group callback's list lost the same way. */
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        calls_done = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, "/new13", 0, 0), 0);
        CHECK_R(dispatch_lasting_loss(f, &freezer_test_fail_reload_replies, 6), 6);
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        drain(f, N_CALLS);
        CHECK_R(freezer_set_state_callback(f, state_cb, NULL), 0);
        new_path = "/new14";
        single_loss_at_once(f);
        while (read(calls_pipe[0], calls, sizeof calls) > 0)
                ;
        new_path = "/new2";
        freezer_close(f);
}

/* Ids past GROUP_TABLE_MAX (lowered by the test hook to one less than the
 * groups there are): /new8 is removed and made again (another Id, listed
 * last), both signals dropped.  The Ids loaded again keep the first ones
 * listed, as freezer.h says ("the rest are not remembered"): the old /new8
 * goes, no error, no reload after the one.  (The load failed as a whole,
 * keeping the old /new8; with its failure retried, it failed for ever.) */
static void test_ids_past_max(const char *socket_path) {
        freezer *f = NULL;
        char calls[32];
        size_t n;

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        CHECK_R(freezer_freeze(f, "/new8", 0, 0), 0);
        freezer_close(f);
        f = open_queue_full(socket_path);
        if (!f)
                return;
        n = freezer_test_state_groups(f);
        CHECK(n >= 2);
        freezer_test_group_table_max = n - 1;
        CHECK_R(freezer_freeze(f, "/remake/new8", 0, 0), 0);
        CHECK_R(dispatch_until_reported(f, 1), 0);
        drain(f, N_CALLS);
        CHECK(calls_done == N_CALLS);
        CHECK_R(freezer_test_state_groups(f), n - 1);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "IS");
        freezer_test_group_table_max = 1U << 22;
        freezer_close(f);
}

/* A handle with a group callback (its list at the installation read off
 * the log, the reports cleared) and N_CALLS freezes in flight, whose replies
 * fill its queue to the bound: a signal that comes next is dropped.  NULL if
 * it cannot be opened. */
static freezer *open_groups_queue_full(const char *socket_path) {
        freezer *f = NULL;
        char calls[32];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return NULL;
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "I");
        group_reports[0] = 0;
        calls_done = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        return f;
}

/* The calls of open_groups_queue_full() answered, and a group reported. */
static bool calls_and_report_done(void) {
        return calls_done == N_CALLS && group_reports[0] != 0;
}

/* With the group callback's table in: path's Freeze() behind a full queue
 * (N_CALLS calls), which makes the stand-in add path with its InterfacesAdded
 * dropped; once the calls are answered, path is reported added, found by
 * the one list (ListGroupIds) read again after the drop. */
static void check_added_after_list(freezer *f, const char *path) {
        char calls[32], reported[64];

        calls_done = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, path, 0, 0), 0);
        CHECK_R(dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, calls_and_report_done, NULL),
                0);
        (void) snprintf(reported, sizeof reported, "+%s", path);
        CHECK_STR(group_reports, reported);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "I");
}

/* The group callback's list, read again after path's InterfacesAdded was
 * dropped, lost once: freezer_dispatch() fails with -ENOMEM once, the
 * groups are listed again, and path is reported added; calls_expected: the
 * stand-in's ListGroupIds from then on.  first (may be NULL): a Freeze() of
 * it before, which makes the stand-in answer the next list NoMemory;
 * hook_before/hook_after (may be NULL): a test hook's count set to 1
 * before/after path's Freeze(), which is used up by then. */
static void check_group_list_lost_once(const char *socket_path, const char *path, const char *first,
                                       unsigned *hook_before, unsigned *hook_after, const char *calls_expected) {
        freezer *f = open_groups_queue_full(socket_path);
        char calls[32], reported[64];

        if (!f)
                return;
        if (first)
                CHECK_R(freezer_freeze(f, first, 0, 0), 0);
        if (hook_before)
                *hook_before = 1;
        CHECK_R(freezer_freeze(f, path, 0, 0), 0);
        if (hook_after)
                *hook_after = 1;
        CHECK_R(dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, calls_and_report_done, NULL),
                1);
        CHECK(calls_done == N_CALLS);
        if (hook_before)
                CHECK_R(*hook_before, 0);
        if (hook_after)
                CHECK_R(*hook_after, 0);
        (void) snprintf(reported, sizeof reported, "+%s", path);
        CHECK_STR(group_reports, reported);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, calls_expected);
        /* Not carried into the next tests, used up or not. */
        if (hook_before)
                *hook_before = 0;
        if (hook_after)
                *hook_after = 0;
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* A list that cannot be read into a table (no memory, made so by the test
 * hook): the list the hook failed, the one after.  (The failure was
 * ignored: /new15 was never reported, nor the error.) */
static void test_group_list_lost(const char *socket_path) {
        check_group_list_lost_once(socket_path, "/new15", NULL, NULL, &freezer_test_fail_group_lists, "II");
}

/* A list whose call cannot be sent (no memory, made so by the test hook):
 * the retry's list (the first was not sent).  (The send failure was
 * ignored: never listed again, /new24 never reported, nor the error.) */
static void test_group_list_send_lost(const char *socket_path) {
        check_group_list_lost_once(socket_path, "/new24", NULL, &freezer_test_fail_reload_sends, NULL, "I");
}

/* A list answered NoMemory by freezerd: that list, the one after.  (The
 * error was taken for a freezerd without Ids: /new23 never reported, nor
 * the error.) */
static void test_group_list_nomem(const char *socket_path) {
        check_group_list_lost_once(socket_path, "/new23", "/nomem/ids", NULL, NULL, "II");
}

/* The same answered with the bus' LimitsExceeded.  (Taken for a freezerd
 * without Ids: /new32 never reported, nor the error.) */
static void test_group_list_limits(const char *socket_path) {
        check_group_list_lost_once(socket_path, "/new32", "/limits/ids", NULL, NULL, "II");
}

/* The group callback's list, read again after /new16's InterfacesAdded was
 * dropped, holds more groups than the table's bound (lowered by the test
 * hook): no -ENOMEM, and it is not listed again (it would not fit either:
 * one list after another, for as long as the callback is installed), and
 * signals are reported as they come from then on (freezer.h). */
static void test_group_list_past_max(const char *socket_path) {
        freezer *f = open_groups_queue_full(socket_path);
        char calls[32];

        if (!f)
                return;
        freezer_test_group_table_max = 1;
        CHECK_R(freezer_freeze(f, "/new16", 0, 0), 0);
        dispatch_all(f);
        CHECK(calls_done == N_CALLS);
        CHECK_STR(group_reports, "");
        CHECK_R(freezer_freeze(f, "/del/new16", 0, 0), 0);
        dispatch_all(f);
        CHECK_STR(group_reports, "-/new16");
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "I");
        freezer_test_group_table_max = 1U << 22;
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* The letters I (ListGroupIds answered) read off the log so far, until
 * lists_wanted: for dispatch_counting_enomem(). */
static unsigned lists_seen, lists_wanted;

static bool lists_answered(void) {
        char calls[64];

        for (ssize_t n; (n = read(calls_pipe[0], calls, sizeof calls)) > 0;)
                for (ssize_t i = 0; i < n; i++)
                        lists_seen += calls[i] == 'I';
        return lists_seen >= lists_wanted;
}

/* The group callback's list at its installation lacks the memory for its
 * table (the test hook), and so do the first four retries: the installation
 * returns 0, freezer_dispatch() fails with -ENOMEM (due at once, then
 * backing off, as for a later list: after 10, 20, 40, 80 ms, windows wide
 * enough for a loaded machine to see one of them to come), and the list is
 * read again until it is in.  It is the table a dropped signal's list is compared with: /new17,
 * whose InterfacesAdded is dropped, is reported added.  (The loss was
 * ignored, never retried: no -ENOMEM, no table, /new17 never reported.) */
static void test_group_list_first_lost(const char *socket_path) {
        freezer *f = NULL;
        unsigned enomem, future = 0;
        uint64_t t = UINT64_MAX;
        char calls[32];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        calls_read(calls, sizeof calls);
        group_reports[0] = 0;
        freezer_test_fail_group_lists = 5;
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        CHECK_R(freezer_test_fail_group_lists, 4);
        /* The loss said (the dispatch returns before it starts a retry): the
         * retry waits, due at once.  (freezer_get_timeout() says "now" while
         * the error waits to be said: only after it does this tell.) */
        CHECK_R(freezer_dispatch(f), -ENOMEM);
        CHECK_R(freezer_get_timeout(f, &t), 1);
        CHECK(t <= mono_usec());
        lists_seen = 0;
        lists_wanted = 6; /* the installation's, five retries */
        enomem = 1 + dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, lists_answered, &future);
        dispatch_all(f);
        CHECK_R(enomem, 5);
        CHECK_R(lists_seen, 6);
        CHECK(future >= 1);
        CHECK_R(freezer_test_fail_group_lists, 0);
        CHECK_STR(group_reports, "");

        check_added_after_list(f, "/new17");
        freezer_test_fail_group_lists = 0;
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* The group callback's list at its installation cannot be queued by sd-bus
 * (ENOBUFS, its write queue full, made so by the test hook), the connection
 * open: the installation returns 0, freezer_dispatch() fails with -ENOMEM
 * once, and the list is asked for again (its first call was not sent: one
 * ListGroupIds in all); it is the table a dropped signal's list is compared
 * with: /new27, whose InterfacesAdded is dropped, is reported added.  (The
 * failure was ignored, as any but -ENOMEM: no -ENOMEM, no list, no table,
 * /new27 never reported.) */
static void test_group_list_first_send_nobufs(const char *socket_path) {
        freezer *f = NULL;
        unsigned enomem;
        char calls[32];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        calls_read(calls, sizeof calls);
        group_reports[0] = 0;
        freezer_test_reload_send_errno = ENOBUFS;
        freezer_test_fail_reload_sends = 1;
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        CHECK_R(freezer_test_fail_reload_sends, 0);
        lists_seen = 0;
        lists_wanted = 1;
        enomem = dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, lists_answered, NULL);
        dispatch_all(f);
        CHECK_R(enomem, 1);
        CHECK_R(lists_seen, 1);
        CHECK_STR(group_reports, "");

        check_added_after_list(f, "/new27");
        freezer_test_fail_reload_sends = freezer_test_reload_send_errno = 0;
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* The state and the group callback, an InterfacesAdded of /new18 dropped:
 * both reload, every group list lacks the memory for its table (the test
 * hook), the states read after the Ids lost three times, then kept.  The
 * group list's retries go on backing off after the states are in: the
 * waits after its second and third loss since (waits[1], waits[2]) are more
 * than 30 ms (twice and four times the delay the list's retries had reached
 * when the states came in: 160 and 320 ms on an idle machine).  (The kinds
 * shared one delay, which the states' kept reply reset: the list was
 * retried at once, then after 10 ms, 20 ms.) */
static void test_reload_backoff_kinds(const char *socket_path) {
        freezer *f = NULL;
        unsigned n_waits = 0;
        uint64_t waits[3] = {};
        char calls[256];

        CHECK_R(freezer_open_private(&f, socket_path), 0);
        if (!f)
                return;
        CHECK_R(freezer_set_state_callback(f, state_cb, NULL), 0);
        CHECK_R(freezer_set_group_callback(f, group_cb, NULL), 0);
        calls_read(calls, sizeof calls);
        CHECK_STR(calls, "II");
        calls_done = new_reported = 0;
        group_reports[0] = 0;
        new_path = "/new18";
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, "/new18", 0, 0), 0);
        freezer_test_fail_group_lists = 1000;
        freezer_test_fail_reread_replies = 3;
        for (uint64_t deadline = mono_usec() + 5 * USEC_PER_SEC; mono_usec() < deadline && n_waits < 3;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                uint64_t t;
                int r = freezer_dispatch(f), ms;

                if (r == -ENOMEM) {
                        if (new_reported > 0 && freezer_get_timeout(f, &t) > 0) {
                                uint64_t n = mono_usec();

                                waits[n_waits++] = t > n ? t - n : 0;
                        }
                        continue;
                }
                CHECK(r >= 0);
                if (r < 0)
                        break;
                ms = due_ms(f);
                if (r == 0)
                        (void) poll(&p, 1, ms < 0 || ms > 100 ? 100 : ms);
        }
        freezer_test_fail_group_lists = freezer_test_fail_reread_replies = 0;
        fprintf(stderr, "# group lists lost after the states were in: waits of %llu, %llu, %llu ms\n",
                (unsigned long long) waits[0] / 1000, (unsigned long long) waits[1] / 1000,
                (unsigned long long) waits[2] / 1000);
        CHECK_R(new_reported, 1);
        CHECK_R(n_waits, 3);
        CHECK(waits[1] >= 30 * USEC_PER_MSEC);
        CHECK(waits[2] >= 30 * USEC_PER_MSEC);

        /* Memory again: the next list is in, /new18 reported. */
        CHECK_R(dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, calls_and_report_done, NULL),
                0);
        CHECK_STR(group_reports, "+/new18");
        while (read(calls_pipe[0], calls, sizeof calls) > 0)
                ;
        new_path = "/new2";
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* /new20 reported by the group callback. */
static bool new20_reported(void) {
        return strstr(group_reports, "/new20") != NULL;
}

/* The group callback's list, read again after /new19's InterfacesAdded was
 * dropped, lost three times (the delay grown to 40 ms by the third retry);
 * that retry's reply is queued when /new20's InterfacesAdded is dropped, so
 * it is read once more after it is handled, and that reply is lost too: it
 * is retried 40 ms later (at least 20 ms), as the retries before it backed
 * off, and both groups are reported.  (The retry whose reply came reset the
 * delay though another read followed: the lost one was retried at once.) */
static void test_group_list_again_backoff(const char *socket_path) {
        freezer *f = open_groups_queue_full(socket_path);
        uint64_t t = 0, wait = 0, took = 0;
        bool lost = false;
        char calls[32];

        if (!f)
                return;
        CHECK_R(freezer_freeze(f, "/new19", 0, 0), 0);
        freezer_test_fail_group_lists = 3;
        CHECK_R(dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, 3, NULL, NULL), 3);
        CHECK_R(freezer_test_fail_group_lists, 0);
        CHECK(calls_done == N_CALLS);
        /* The third retry, answered late: sent by a dispatch, its reply not
         * read before the queue is full again. */
        CHECK_R(freezer_freeze(f, "/slowlist", 0, 0), 0);
        while (read(calls_pipe[0], calls, sizeof calls) > 0)
                ;
        lists_seen = 0;
        lists_wanted = 1;
        for (uint64_t deadline = mono_usec() + 5 * USEC_PER_SEC; mono_usec() < deadline && !lists_answered();) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                int r = freezer_dispatch(f), ms = due_ms(f);

                CHECK(r >= 0);
                if (r < 0)
                        break;
                (void) poll(&p, 1, ms < 0 || ms > 10 ? 10 : ms);
        }
        CHECK_R(lists_seen, 1);
        calls_done = 0;
        for (unsigned i = 0; i < N_CALLS; i++)
                CHECK_R(freezer_freeze_async(f, "/x", 0, 0, call_cb, NULL, NULL), 0);
        CHECK_R(freezer_freeze(f, "/new20", 0, 0), 0);
        /* The list that follows (queued after the retry's was read) lost. */
        freezer_test_fail_reload_replies = 1;
        for (uint64_t deadline = mono_usec() + 5 * USEC_PER_SEC; mono_usec() < deadline && !lost;) {
                struct pollfd p = {.fd = freezer_get_fd(f), .events = POLLIN};
                uint64_t before = mono_usec();
                int r = freezer_dispatch(f);

                if (r == -ENOMEM) {
                        lost = true;
                        if (freezer_get_timeout(f, &t) > 0) {
                                uint64_t n = mono_usec();

                                wait = t > n ? t - n : 0;
                                took = n - before;
                        }
                        break;
                }
                CHECK(r >= 0);
                if (r < 0)
                        break;
                if (r == 0)
                        (void) poll(&p, 1, 100);
        }
        fprintf(stderr, "# the list read again, lost: retried after %llu ms\n", (unsigned long long) wait / 1000);
        CHECK(lost);
        CHECK_R(freezer_test_fail_reload_replies, 0);
        /* The retry is due 40 ms after the loss, which came at or after
         * the dispatch began: counted from then, however long the dispatch
         * took (a loaded machine).  A retry due at once fails this unless
         * the dispatch itself took 20 ms. */
        CHECK(wait + took >= 20 * USEC_PER_MSEC);
        CHECK_R(dispatch_counting_enomem(f, mono_usec() + 5 * USEC_PER_SEC, UINT_MAX, new20_reported, NULL), 0);
        drain(f, N_CALLS);
        CHECK_STR(group_reports, "+/new19 +/new20");
        while (read(calls_pipe[0], calls, sizeof calls) > 0)
                ;
        CHECK_R(freezer_set_group_callback(f, NULL, NULL), 0);
        freezer_close(f);
}

/* The kernel's "frozen" of each state, by its name (a state appended to the
 * enum later must be added here, or the last check fails). */
static void test_state_frozen(void) {
        static const struct {
                const char *name;
                int frozen;
        } table[] = {
                { "running", 0 },
                { "freezing", 0 },
                { "frozen", 1 },
                { "thawing", 1 },
                { "freezing-by-parent", 0 },
                { "frozen-by-parent", 1 },
                { "unknown", -ENODATA },
        };
        int n = 0;

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                freezer_state s = freezer_state_from_string(table[i].name);

                CHECK_STR(freezer_state_to_string(s), table[i].name);
                CHECK_R(freezer_state_frozen(s), table[i].frozen);
        }
        /* Out of range, as freezer_state_to_string()'s NULL. */
        for (int s = -1; s <= 100; s++)
                if (!freezer_state_to_string((freezer_state) s))
                        CHECK_R(freezer_state_frozen((freezer_state) s), -EINVAL);
                else
                        n++;
        CHECK_R(n, ELEMENTSOF(table));
}

int main(void) {
        char dir[] = "/tmp/test-libfreezer-queue-XXXXXX";
        char socket_path[sizeof(((struct sockaddr_un *) NULL)->sun_path)];
        pid_t pid;

        if (pipe2(calls_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                perror("pipe2");
                return 1;
        }
        pid = test_serve_fork(dir, socket_path, sizeof socket_path, serve);
        if (pid < 0)
                return 1;
        test_state_frozen();
        test_pressure_coalesced(socket_path);
        test_timeout(socket_path);
        test_ids_again(socket_path);
        test_groups_lost(socket_path);
        test_close_reloading(socket_path);
        test_ids_removed(socket_path);
        test_reload_reply_lost(socket_path);
        test_ids_load_lost(socket_path);
        test_ids_send_lost(socket_path);
        test_ids_send_nobufs(socket_path);
        test_ids_nomem(socket_path);
        test_states_nomem(socket_path);
        test_ids_limits(socket_path);
        test_states_limits(socket_path);
        test_reload_backoff(socket_path);
        test_reload_backoff_reread(socket_path);
        test_reload_delay_reset(socket_path);
        test_ids_past_max(socket_path);
        test_group_list_lost(socket_path);
        test_group_list_nomem(socket_path);
        test_group_list_limits(socket_path);
        test_group_list_send_lost(socket_path);
        test_group_list_past_max(socket_path);
        test_group_list_first_lost(socket_path);
        test_group_list_first_send_nobufs(socket_path);
        test_reload_backoff_kinds(socket_path);
        test_group_list_again_backoff(socket_path);

        kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        unlink(socket_path);
        rmdir(dir);

        return test_summary("test-libfreezer-queue");
}
