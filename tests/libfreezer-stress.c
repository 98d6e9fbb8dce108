/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libfreezer's queue of messages (freezer_dispatch() runs the handlers of what
 * sd-bus read, also during blocking calls), driven as a container manager's
 * event loop drives it: callbacks that close the handle, cancel calls, remove
 * callbacks or triggers while their messages wait; a storm of state signals
 * while blocking calls wait; freezerd restarting or killed meanwhile.  Run by
 * tests/integration/test-core-libfreezer-stress.py (which sets up the bus, the
 * daemon and the cgroups), under ASan and valgrind too: a use after free or a
 * leak shows there.
 *
 *   libfreezer-stress bus|private ADDRESS CGROUP_ROOT SCENARIO [ARG]
 *
 * Prints "ok SCENARIO" and exits 0, or says what failed and exits 1.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "freezer.h"

#define N_GROUPS 600
#define DEADLINE_SEC 40

static bool direct;
static const char *address, *cgroot;
static bool in_dispatch;
static int failures;

__attribute__((format(printf, 1, 2)))
static void fail(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        fputs("FAIL: ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        fflush(stdout);
        failures++;
}

#define CHECK(cond, ...) do { if (!(cond)) fail(__VA_ARGS__); } while (0)

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static freezer *open_handle(void) {
        freezer *f = NULL;
        int r = direct ? freezer_open_private(&f, address) : freezer_open_address(&f, address);

        if (r < 0) {
                printf("FAIL: open %s: %s\n", address, strerror(-r));
                exit(1);
        }
        return f;
}

static void cg_mkdir(const char *rel) {
        char p[4096];

        snprintf(p, sizeof p, "%s%s", cgroot, rel);
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                fail("mkdir %s: %m", p);
}

static void cg_rmdir(const char *rel) {
        char p[4096];

        snprintf(p, sizeof p, "%s%s", cgroot, rel);
        if (rmdir(p) < 0 && errno != ENOENT)
                fail("rmdir %s: %m", p);
}

/* One turn of a loop as freezer.h asks for it: the fd for the events
 * freezer_get_events() gives, and freezer_get_timeout(). */
static int loop_once(freezer *f, int max_msec) {
        struct pollfd p = { .fd = freezer_get_fd(f) };
        uint64_t due = UINT64_MAX;
        int ev = freezer_get_events(f), msec = max_msec, r;

        if (p.fd < 0 || ev < 0)
                return p.fd < 0 ? p.fd : ev;
        p.events = (short) ev;
        if (freezer_get_timeout(f, &due) > 0) {
                uint64_t n = now_usec();

                msec = due <= n ? 0 : (int) ((due - n + 999) / 1000);
                if (msec > max_msec)
                        msec = max_msec;
        }
        if (poll(&p, 1, msec) < 0 && errno != EINTR)
                return -errno;
        in_dispatch = true;
        r = freezer_dispatch(f);
        in_dispatch = false;
        return r;
}

/* Runs the loop until *done or the deadline; false on timeout. */
static bool loop_until(freezer *f, bool (*done)(void *), void *userdata, const char *what) {
        uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;

        while (!done(userdata)) {
                int r;

                if (now_usec() > deadline) {
                        fail("timed out waiting for %s", what);
                        return false;
                }
                r = loop_once(f, 100);
                if (r < 0) {
                        fail("freezer_dispatch() while waiting for %s: %s", what, strerror(-r));
                        return false;
                }
        }
        return true;
}

/* ---- the storm: every child of /s changes, blocking calls wait meanwhile ---- */

typedef struct storm {
        freezer_state last[N_GROUPS];
        unsigned reports;
        unsigned outside;
        int call_done;
        int call_error;
        freezer_state want;
        unsigned groups_added, groups_removed, out_of_order;
        bool toggle_resync, resync_on;
        bool nested_ok;
} storm;

static int group_index(const char *path) {
        int i;

        if (sscanf(path, "/s/g%d", &i) == 1 && i >= 0 && i < N_GROUPS)
                return i;
        return -1;
}

static void storm_state_cb(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        storm *s = userdata;
        int i = group_index(path);

        (void) f;
        (void) frozen;
        if (!in_dispatch)
                s->outside++;
        s->reports++;
        if (i >= 0)
                s->last[i] = state;
}

static void storm_group_cb(freezer *f, const char *path, bool added, freezer_state state, void *userdata) {
        storm *s = userdata;
        freezer_group g = {};

        (void) state;
        if (!in_dispatch)
                s->outside++;
        if (strncmp(path, "/s/n", 4) != 0)
                return;
        if (!added) {
                /* Removed in the order they were removed, each once. */
                if (atoi(path + 4) != (int) s->groups_removed)
                        s->out_of_order++;
                s->groups_removed++;
                return;
        }
        /* Made one after the other: reported in that order, each once. */
        if (atoi(path + 4) != (int) s->groups_added)
                s->out_of_order++;
        s->groups_added++;
        /* A blocking call from a callback (freezer.h: allowed). */
        if (freezer_get_group(f, path, &g) == 0 && g.path && strcmp(g.path, path) == 0)
                s->nested_ok = true;
        freezer_group_clear(&g);
}

static void noop_resync_cb(freezer *f, freezer_resync_reason reason, void *userdata) {
        (void) f;
        (void) reason;
        (void) userdata;
}

static void storm_call_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        storm *s = userdata;
        int k;

        if (!in_dispatch)
                s->outside++;
        s->call_done++;
        s->call_error = r->error;
        /* With the storm queued behind: a callback that installs (a match
         * the bus confirms, waited for) and removes another. */
        if (s->toggle_resync) {
                k = freezer_set_resync_callback(f, s->resync_on ? NULL : noop_resync_cb, NULL);
                if (k < 0)
                        fail("freezer_set_resync_callback() from a callback: %s", strerror(-k));
                s->resync_on = !s->resync_on;
        }
}

static bool storm_done(void *userdata) {
        storm *s = userdata;

        if (s->call_done == 0)
                return false;
        for (int i = 0; i < N_GROUPS; i++)
                if (s->last[i] != s->want)
                        return false;
        return true;
}

static bool call_done(void *userdata) {
        storm *s = userdata;

        return s->call_done > 0;
}

static bool groups_removed_done(void *userdata) {
        storm *s = userdata;

        return s->groups_removed >= 20;
}

static bool groups_added_done(void *userdata) {
        storm *s = userdata;

        return s->groups_added >= 20;
}

static void scenario_storm(void) {
        freezer *f = open_handle();
        storm *s = calloc(1, sizeof *s);
        freezer_group *a = NULL, g = {};
        size_t n = 0;
        char p[64];
        int r;

        for (int i = 0; i < N_GROUPS; i++) {
                snprintf(p, sizeof p, "/s/g%d", i);
                cg_mkdir(p);
        }
        CHECK(freezer_track(f, "/s") == 0, "freezer_track(/s): %s", freezer_last_error_name(f));
        CHECK(freezer_set_state_callback(f, storm_state_cb, s) == 0, "set_state_callback");
        CHECK(freezer_set_group_callback(f, storm_group_cb, s) == 0, "set_group_callback");
        /* What the state callback compares against: every group, running. */
        CHECK(freezer_list(f, &a, &n) == 0 && n > N_GROUPS, "freezer_list: %zu groups", n);
        freezer_group_array_free(a, n);
        for (int i = 0; i < N_GROUPS; i++)
                s->last[i] = FREEZER_STATE_RUNNING;

        s->toggle_resync = true;
        for (int round = 0; round < 4; round++) {
                bool freeze = round % 2 == 0;

                s->want = freeze ? FREEZER_STATE_FROZEN_BY_PARENT : FREEZER_STATE_RUNNING;
                s->call_done = 0;
                r = (freeze ? freezer_freeze_async : freezer_thaw_async)(f, "/s", 0, 0, storm_call_cb, s, NULL);
                CHECK(r == 0, "round %d: async call: %s", round, strerror(-r));
                /* Blocking calls while the storm comes in: it waits in the
                 * handle's queue, no callback runs. */
                for (int k = 0; k < 30; k++) {
                        snprintf(p, sizeof p, "/s/g%d", (k * 37) % N_GROUPS);
                        r = freezer_get_group(f, p, &g);
                        CHECK(r == 0, "round %d: get_group(%s): %s", round, p, strerror(-r));
                        /* What the state callback compares against, too. */
                        if (r == 0)
                                s->last[(k * 37) % N_GROUPS] = g.state;
                        freezer_group_clear(&g);
                }
                /* The kernel confirmed (the call waits for it): every signal
                 * of the storm is out by now; a loop told by
                 * freezer_get_timeout() gets them all. */
                if (!loop_until(f, storm_done, s, freeze ? "every child reported frozen-by-parent"
                                                        : "every child reported running")) {
                        int bad = 0, first = -1;

                        for (int i = 0; i < N_GROUPS; i++)
                                if (s->last[i] != s->want) {
                                        bad++;
                                        if (first < 0)
                                                first = i;
                                }
                        fail("round %d: %d children not reported (/s/g%d: %s), call done %d, %u reports", round,
                             bad, first, freezer_state_to_string(first >= 0 ? s->last[first] : 0), s->call_done,
                             s->reports);
                        break;
                }
                CHECK(s->call_done == 1 && s->call_error == 0, "round %d: call callback ran %d times, error %d",
                      round, s->call_done, s->call_error);
        }
        CHECK(s->outside == 0, "%u callbacks ran outside freezer_dispatch()", s->outside);

        /* Groups made while a blocking call waits: the group callback makes
         * blocking calls of its own. */
        for (int i = 0; i < 20; i++) {
                snprintf(p, sizeof p, "/s/n%d", i);
                cg_mkdir(p);
        }
        CHECK(freezer_get_group(f, "/s", &g) == 0, "get_group(/s)");
        freezer_group_clear(&g);
        loop_until(f, groups_added_done, s, "the group callback for 20 new groups");
        CHECK(s->nested_ok, "freezer_get_group() from the group callback");
        CHECK(s->outside == 0, "%u callbacks ran outside freezer_dispatch()", s->outside);
        for (int i = 0; i < 20; i++) {
                snprintf(p, sizeof p, "/s/n%d", i);
                cg_rmdir(p);
        }
        CHECK(freezer_get_group(f, "/s", &g) == 0, "get_group(/s)");
        freezer_group_clear(&g);
        loop_until(f, groups_removed_done, s, "the group callback for 20 groups removed");
        CHECK(s->out_of_order == 0, "%u groups reported out of order", s->out_of_order);
        freezer_set_group_callback(f, NULL, NULL);
        freezer_close(f);
        printf("# storm: %u state reports\n", s->reports);
        free(s);
}

/* ---- a loop that polls the fd alone, as freezer.h allows ---- */

static void fdonly_state_cb(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        freezer_group g = {};

        storm_state_cb(f, path, state, frozen, userdata);
        /* A blocking call per report: each reads more into memory. */
        if (freezer_get_group(f, "/s", &g) < 0)
                fail("get_group from the state callback");
        freezer_group_clear(&g);
}

static void scenario_fdonly(void) {
        freezer *f = open_handle();
        storm *s = calloc(1, sizeof *s);
        freezer_group *a = NULL, g = {};
        size_t n = 0;

        CHECK(freezer_set_state_callback(f, fdonly_state_cb, s) == 0, "set_state_callback");
        CHECK(freezer_list(f, &a, &n) == 0, "list");
        freezer_group_array_free(a, n);
        for (int i = 0; i < N_GROUPS; i++)
                s->last[i] = FREEZER_STATE_RUNNING;
        for (int round = 0; round < 2; round++) {
                uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;
                unsigned stalls = 0;
                int r;

                s->want = round == 0 ? FREEZER_STATE_FROZEN_BY_PARENT : FREEZER_STATE_RUNNING;
                s->call_done = 0;
                r = (round == 0 ? freezer_freeze : freezer_thaw)(f, "/s", 0, 0);
                CHECK(r == 0, "blocking freeze/thaw: %s", strerror(-r));
                s->call_done = 1;
                /* After a blocking call: dispatch, and again while it says
                 * it stopped at its bound; else wait for the fd alone. */
                r = FREEZER_DISPATCH_MAX;
                for (;;) {
                        if (r < FREEZER_DISPATCH_MAX) {
                                struct pollfd p = { .fd = freezer_get_fd(f), .events = POLLIN };

                                if (storm_done(s))
                                        break;
                                if (now_usec() > deadline) {
                                        fail("fd-only loop stalled: %s", round ? "thaw" : "freeze");
                                        break;
                                }
                                if (poll(&p, 1, 1000) == 0) {
                                        /* Woken by nothing: what is left in
                                         * memory waited for the next poll. */
                                        uint64_t due = UINT64_MAX;

                                        if (freezer_get_timeout(f, &due) > 0 && due == 0)
                                                stalls++;
                                }
                        }
                        in_dispatch = true;
                        r = freezer_dispatch(f);
                        in_dispatch = false;
                        if (r < 0) {
                                fail("dispatch: %s", strerror(-r));
                                break;
                        }
                }
                CHECK(stalls == 0, "round %d: a loop polling the fd alone stalled %u times with messages in memory",
                      round, stalls);
                (void) freezer_get_group(f, "/s", &g);
                freezer_group_clear(&g);
        }
        freezer_close(f);
        free(s);
}

/* ---- closing the handle from a callback with more queued ---- */

typedef struct closer {
        freezer **f;
        unsigned calls;
        unsigned after_close;
} closer;

static void close_state_cb(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        closer *c = userdata;

        (void) path;
        (void) state;
        (void) frozen;
        if (!*c->f) {
                c->after_close++;
                return;
        }
        c->calls++;
        freezer_close(f);
        *c->f = NULL;
}

static void close_call_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        closer *c = userdata;

        (void) r;
        if (!*c->f) {
                c->after_close++;
                return;
        }
        c->calls++;
        freezer_close(f);
        *c->f = NULL;
}

static void close_resync_cb(freezer *f, freezer_resync_reason reason, void *userdata) {
        closer *c = userdata;

        (void) reason;
        (void) f;
        if (!*c->f)
                c->after_close++;
}

static void scenario_close_in_callback(void) {
        for (int round = 0; round < 6; round++) {
                freezer *f = open_handle(), *handle;
                closer *c = calloc(1, sizeof *c);
                freezer_group g = {};

                c->f = &handle;
                handle = f;
                CHECK(freezer_set_state_callback(f, close_state_cb, c) == 0, "set_state_callback");
                CHECK(freezer_set_resync_callback(f, close_resync_cb, c) == 0, "set_resync_callback");
                for (int i = 0; i < 8; i++) {
                        /* Odd rounds: the calls' replies come first. */
                        CHECK(freezer_freeze_async(f, i % 2 ? "/s" : "/s/g1", 0,
                                                   round % 2 ? FREEZER_NO_WAIT : 0, close_call_cb, c, NULL) == 0,
                              "freeze_async");
                }
                /* Read the replies and the storm into the queue. */
                for (int k = 0; k < 10; k++) {
                        CHECK(freezer_get_group(f, "/s", &g) == 0, "get_group(/s)");
                        freezer_group_clear(&g);
                }
                for (uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL; handle;) {
                        int r;

                        if (now_usec() > deadline) {
                                fail("round %d: no callback ran", round);
                                handle = freezer_close(handle);
                                break;
                        }

                        in_dispatch = true;
                        r = freezer_dispatch(handle);
                        in_dispatch = false;
                        if (r < 0) {
                                fail("dispatch: %s", strerror(-r));
                                freezer_close(handle);
                                break;
                        }
                        if (handle) {
                                struct pollfd p = { .fd = freezer_get_fd(handle), .events = POLLIN };
                                uint64_t due;

                                if (freezer_get_timeout(handle, &due) > 0 && due == 0)
                                        continue;
                                poll(&p, 1, 100);
                        }
                }
                CHECK(c->calls == 1 && c->after_close == 0, "round %d: %u callbacks closed, %u ran after the close",
                      round, c->calls, c->after_close);
                free(c);
                /* Thaw for the next round, on a handle of its own. */
                f = open_handle();
                CHECK(freezer_thaw(f, "/s", 0, 0) == 0 && freezer_thaw(f, "/s/g1", 0, 0) == 0, "thaw");
                freezer_close(f);
        }
}

/* ---- cancelling calls whose replies wait in the queue ---- */

typedef struct canceller {
        uint64_t other;
        int *other_userdata;
        unsigned ran;
        int cancel_r;
} canceller;

static void cancel_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        canceller *c = userdata;

        (void) r;
        c->ran++;
        if (c->other) {
                c->cancel_r = freezer_cancel_call(f, c->other);
                free(c->other_userdata); /* ours again: its callback will not run */
                c->other = 0;
        }
}

static void victim_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        int *v = userdata;

        (void) f;
        (void) r;
        (*v)++; /* after a cancel: a use after free */
        fail("a cancelled call's callback ran");
}

static void scenario_cancel(void) {
        freezer *f = open_handle();
        freezer_group g = {};

        for (int round = 0; round < 20; round++) {
                canceller c = {};
                int *v = calloc(1, sizeof(int));
                uint64_t a = 0, b = 0;
                uint64_t due = UINT64_MAX;

                CHECK(freezer_freeze_async(f, "/s/g2", 0, FREEZER_NO_WAIT, cancel_cb, &c, &a) == 0, "freeze_async");
                CHECK(freezer_thaw_async(f, "/s/g2", 0, FREEZER_NO_WAIT, victim_cb, v, &b) == 0, "thaw_async");
                c.other = b;
                c.other_userdata = v;
                /* Both replies come before this one's: in the queue now. */
                CHECK(freezer_get_group(f, "/s/g2", &g) == 0, "get_group");
                freezer_group_clear(&g);
                CHECK(freezer_get_timeout(f, &due) > 0 && due == 0,
                      "freezer_get_timeout() says now with replies queued (%llu)", (unsigned long long) due);
                if (round % 2) {
                        /* Cancelled outside a callback, its reply queued. */
                        CHECK(freezer_cancel_call(f, b) == 0, "cancel of a call whose reply is queued");
                        free(v);
                        c.other = 0;
                }
                in_dispatch = true;
                (void) freezer_dispatch(f);
                in_dispatch = false;
                CHECK(c.ran == 1, "round %d: the first call's callback ran %u times", round, c.ran);
                if (!(round % 2))
                        CHECK(c.cancel_r == 0, "round %d: cancel from a callback: %d", round, c.cancel_r);
                CHECK(freezer_cancel_call(f, a) == -ENOENT && freezer_cancel_call(f, b) == -ENOENT,
                      "completed calls are no longer in flight");
        }
        /* A cancelled call's reply queued, then the handle closed. */
        for (int i = 0; i < 5; i++) {
                uint64_t id;

                CHECK(freezer_freeze_async(f, "/s/g2", 0, FREEZER_NO_WAIT, victim_cb, NULL, &id) == 0, "async");
                CHECK(freezer_get_group(f, "/s/g2", &g) == 0, "get_group");
                freezer_group_clear(&g);
                CHECK(freezer_cancel_call(f, id) == 0, "cancel");
        }
        freezer_close(f);
        f = open_handle();
        CHECK(freezer_thaw(f, "/s/g2", 0, 0) == 0, "thaw");
        freezer_close(f);
}

/* ---- callbacks removed while their messages wait ---- */

typedef struct remover {
        unsigned state_calls, group_calls;
        bool self_remove;
} remover;

static void remove_state_cb(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        remover *r = userdata;

        (void) path;
        (void) state;
        (void) frozen;
        r->state_calls++;
        if (r->self_remove)
                freezer_set_state_callback(f, NULL, NULL);
}

static void remove_group_cb(freezer *f, const char *path, bool added, freezer_state state, void *userdata) {
        remover *r = userdata;

        (void) path;
        (void) added;
        (void) state;
        r->group_calls++;
        if (r->self_remove)
                freezer_set_group_callback(f, NULL, NULL);
}

static void drain(freezer *f) {
        /* Whatever is queued, and what comes for a few round trips. */
        for (int i = 0; i < 3; i++) {
                freezer_group g = {};

                (void) freezer_get_group(f, "/", &g);
                freezer_group_clear(&g);
                in_dispatch = true;
                while (freezer_dispatch(f) > 0)
                        ;
                in_dispatch = false;
        }
}

static void scenario_remove_callbacks(void) {
        for (int self = 0; self < 2; self++) {
                freezer *f = open_handle();
                remover *r = calloc(1, sizeof *r);
                freezer_group *a = NULL, g = {};
                size_t n = 0;
                char p[64];

                r->self_remove = self;
                CHECK(freezer_set_state_callback(f, remove_state_cb, r) == 0, "set_state_callback");
                CHECK(freezer_set_group_callback(f, remove_group_cb, r) == 0, "set_group_callback");
                CHECK(freezer_list(f, &a, &n) == 0, "list");
                freezer_group_array_free(a, n);
                CHECK(freezer_freeze(f, "/s", 0, 0) == 0, "freeze /s");
                for (int i = 0; i < 10; i++) {
                        snprintf(p, sizeof p, "/s/r%d", i);
                        cg_mkdir(p);
                }
                /* The storm and the groups' signals: queued. */
                for (int k = 0; k < 20; k++) {
                        CHECK(freezer_get_group(f, "/s/g0", &g) == 0, "get_group");
                        freezer_group_clear(&g);
                }
                if (!self) {
                        freezer_set_state_callback(f, NULL, NULL);
                        freezer_set_group_callback(f, NULL, NULL);
                }
                drain(f);
                CHECK(self ? r->state_calls == 1 : r->state_calls == 0,
                      "state callback removed%s: ran %u times", self ? " by itself" : "", r->state_calls);
                CHECK(self ? r->group_calls == 1 : r->group_calls == 0,
                      "group callback removed%s: ran %u times", self ? " by itself" : "", r->group_calls);
                CHECK(freezer_thaw(f, "/s", 0, 0) == 0, "thaw /s");
                for (int i = 0; i < 10; i++) {
                        snprintf(p, sizeof p, "/s/r%d", i);
                        cg_rmdir(p);
                }
                freezer_close(f);
                free(r);
        }
}

/* ---- triggers that end while their signals wait ---- */

typedef struct ender {
        freezer **f;
        unsigned removed;
        unsigned after;
        int mode; /* 0: close from the first, 1: remove the callback from the first */
} ender;

static void ender_removed_cb(freezer *f, const char *path, uint32_t id, freezer_resource res, bool full,
                             const char *reason, void *userdata) {
        ender *e = userdata;

        (void) path;
        (void) id;
        (void) res;
        (void) full;
        (void) reason;
        if (!*e->f) {
                e->after++;
                return;
        }
        e->removed++;
        if (e->mode == 0) {
                freezer_close(f);
                *e->f = NULL;
        } else
                freezer_set_pressure_removed_callback(f, NULL, NULL);
}

static void scenario_triggers(void) {
        for (int mode = 0; mode < 2; mode++) {
                freezer *f = open_handle(), *handle = f;
                ender *e = calloc(1, sizeof *e);
                char p[64];
                int r;

                e->f = &handle;
                e->mode = mode;
                CHECK(freezer_set_pressure_removed_callback(f, ender_removed_cb, e) == 0, "set removed callback");
                for (int i = 0; i < 6; i++) {
                        snprintf(p, sizeof p, "/p/t%d", i);
                        cg_mkdir(p);
                }
                for (int i = 0; i < 6; i++) {
                        snprintf(p, sizeof p, "/p/t%d", i);
                        r = freezer_add_pressure_trigger(f, p, FREEZER_RESOURCE_CPU, false, 100000, 2000000, NULL);
                        if (r == -EOPNOTSUPP) {
                                printf("# no cpu pressure: triggers skipped\n");
                                freezer_close(f);
                                free(e);
                                return;
                        }
                        CHECK(r == 0, "add_pressure_trigger(%s): %s", p, strerror(-r));
                }
                /* Their cgroups removed: each trigger's PressureTriggerRemoved
                 * comes before the answer that the last group is gone, into
                 * the queue. */
                for (int i = 0; i < 6; i++) {
                        snprintf(p, sizeof p, "/p/t%d", i);
                        cg_rmdir(p);
                }
                for (uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL; now_usec() < deadline;) {
                        freezer_group g = {};

                        r = freezer_get_group(f, "/p/t5", &g);
                        freezer_group_clear(&g);
                        if (r == -ENOENT)
                                break;
                        usleep(10000);
                }
                CHECK(r == -ENOENT, "get_group(/p/t5) after its removal: %d", r);
                for (uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;
                     handle && e->removed == 0 && now_usec() < deadline;)
                        (void) loop_once(handle, 100);
                for (int i = 0; i < 4 && handle; i++) {
                        in_dispatch = true;
                        (void) freezer_dispatch(handle);
                        in_dispatch = false;
                }
                CHECK(e->removed == 1 && e->after == 0, "mode %d: removed callback ran %u times (+%u after close)",
                      mode, e->removed, e->after);
                freezer_close(handle);
                free(e);
        }
}

/* ---- freezerd restarting while messages wait: driven with the test over stdin/stdout ---- */

typedef struct restarter {
        int events[16];
        unsigned n_events;
        unsigned removed_exited;
        storm *s;
} restarter;

static void restart_resync_cb(freezer *f, freezer_resync_reason reason, void *userdata) {
        restarter *r = userdata;

        (void) f;
        if (r->n_events < 16)
                r->events[r->n_events++] = reason;
}

static void restart_removed_cb(freezer *f, const char *path, uint32_t id, freezer_resource res, bool full,
                               const char *reason, void *userdata) {
        restarter *r = userdata;

        (void) f;
        (void) path;
        (void) id;
        (void) res;
        (void) full;
        if (strcmp(reason, "daemon-exited") == 0)
                r->removed_exited++;
}

static bool restarted(void *userdata) {
        restarter *r = userdata;

        return r->n_events >= 2 && r->removed_exited >= 1;
}

static void scenario_restart(void) {
        freezer *f = open_handle();
        restarter *rs = calloc(1, sizeof *rs);
        storm *s = calloc(1, sizeof *s);
        freezer_group *a = NULL, g = {};
        char line[64];
        size_t n = 0;
        int r;

        rs->s = s;
        CHECK(freezer_set_state_callback(f, storm_state_cb, s) == 0, "set_state_callback");
        CHECK(freezer_set_resync_callback(f, restart_resync_cb, rs) == 0, "set_resync_callback");
        CHECK(freezer_set_pressure_removed_callback(f, restart_removed_cb, rs) == 0, "removed callback");
        r = freezer_add_pressure_trigger(f, NULL, FREEZER_RESOURCE_CPU, false, 100000, 2000000, NULL);
        CHECK(r == 0 || r == -EOPNOTSUPP, "system trigger: %s", strerror(-r));
        if (r < 0)
                rs->removed_exited = 1;
        CHECK(freezer_list(f, &a, &n) == 0, "list");
        freezer_group_array_free(a, n);
        for (int i = 0; i < N_GROUPS; i++)
                s->last[i] = FREEZER_STATE_RUNNING;
        /* A storm on its way, then freezerd restarted, all unread. */
        CHECK(freezer_freeze_async(f, "/s", 0, 0, storm_call_cb, s, NULL) == 0, "freeze_async");
        CHECK(freezer_get_group(f, "/s/g5", &g) == 0, "get_group");
        freezer_group_clear(&g);
        printf("restart\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin)) {
                fail("no word from the test");
                exit(1);
        }
        /* All of it (the rest of the storm, freezerd leaving and coming,
         * the new one's answer) read by blocking calls into the queue. */
        for (int k = 0; k < 5; k++) {
                r = freezer_get_group(f, "/s/g5", &g);
                CHECK(r == 0, "get_group after the restart: %s", strerror(-r));
                freezer_group_clear(&g);
        }
        loop_until(f, restarted, rs, "the restart's resync callbacks");
        CHECK(rs->n_events == 2 && rs->events[0] == FREEZER_RESYNC_DAEMON_EXITED &&
              rs->events[1] == FREEZER_RESYNC_DAEMON_STARTED, "resync: %u events, first %d", rs->n_events,
              rs->events[0]);
        loop_until(f, call_done, s, "the freeze's callback");
        CHECK(s->call_done == 1, "the freeze's callback ran %d times", s->call_done);
        /* The new freezerd's signals reach the state callback (the handle
         * forgot every state at the restart: each is reported). */
        for (int i = 0; i < N_GROUPS; i++)
                s->last[i] = FREEZER_STATE_UNKNOWN;
        s->want = FREEZER_STATE_RUNNING;
        s->call_done = 0;
        CHECK(freezer_thaw_async(f, "/s", 0, 0, storm_call_cb, s, NULL) == 0, "thaw_async");
        loop_until(f, storm_done, s, "every child reported running from the new freezerd");
        freezer_close(f);
        free(s);
        free(rs);
}

/* ---- a call timed out while a blocking call waits ---- */

static void timeout_call_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        int *results = userdata;

        (void) f;
        results[0]++;
        results[1] = r->error;
}

static void scenario_timeout(pid_t daemon) {
        freezer *f;
        freezer_group g = {};
        int results[2] = { 0, 1 }, r;
        uint64_t t0, due = UINT64_MAX;

        /* The blocking calls' method-call timeout: 1 s (sd-bus reads it at
         * the connection's first call). */
        setenv("SYSTEMD_BUS_TIMEOUT", "1", 1);
        f = open_handle();
        CHECK(freezer_get_group(f, "/s", &g) == 0, "get_group");
        freezer_group_clear(&g);
        CHECK(kill(daemon, SIGSTOP) == 0, "SIGSTOP freezerd: %m");
        /* Its method-call timeout: 1 us + 5 s. */
        CHECK(freezer_freeze_async(f, "/s/g4", 1, 0, timeout_call_cb, results, NULL) == 0, "freeze_async");
        t0 = now_usec();
        /* Blocking calls time out one after the other until past the async
         * call's deadline: its timeout is handled inside one of them. */
        while (now_usec() - t0 < 5500000) {
                r = freezer_get_group(f, "/s", &g);
                freezer_group_clear(&g);
                CHECK(r == -ETIMEDOUT, "get_group, freezerd stopped: %d, want -ETIMEDOUT", r);
                if (r != -ETIMEDOUT)
                        break;
        }
        CHECK(results[0] == 0, "the async call's callback ran outside freezer_dispatch()");
        CHECK(freezer_get_timeout(f, &due) > 0 && due == 0,
              "freezer_get_timeout() says now for the queued timeout (%llu)", (unsigned long long) due);
        CHECK(freezer_wait(f, 0) > 0, "freezer_wait() returns at once for the queued timeout");
        in_dispatch = true;
        (void) freezer_dispatch(f);
        (void) freezer_dispatch(f);
        in_dispatch = false;
        CHECK(results[0] == 1 && results[1] == -ETIMEDOUT, "the async call's callback: ran %d times, error %d",
              results[0], results[1]);
        kill(daemon, SIGCONT);
        freezer_close(f);
        f = open_handle();
        CHECK(freezer_thaw(f, "/s/g4", 0, 0) == 0, "thaw /s/g4");
        freezer_close(f);
}

/* ---- the connection lost during a blocking call ---- */

static void lost_resync_cb(freezer *f, freezer_resync_reason reason, void *userdata) {
        int *disconnected = userdata;

        (void) f;
        if (reason == FREEZER_RESYNC_DISCONNECTED)
                (*disconnected)++;
}

static void lost_call_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        int *error = userdata;

        (void) f;
        *error = r->error;
}

static void scenario_lost(pid_t daemon) {
        freezer *f = open_handle();
        freezer_group g = {};
        int disconnected = 0, call_error = 1, r;
        pid_t killer;
        uint64_t t0;

        CHECK(freezer_set_resync_callback(f, lost_resync_cb, &disconnected) == 0, "set_resync_callback");
        CHECK(freezer_get_group(f, "/s", &g) == 0, "get_group");
        freezer_group_clear(&g);
        /* Stopped: the calls wait; then killed while they do. */
        CHECK(kill(daemon, SIGSTOP) == 0, "SIGSTOP freezerd: %m");
        CHECK(freezer_freeze_async(f, "/s/g3", 0, 0, lost_call_cb, &call_error, NULL) == 0, "freeze_async");
        killer = fork();
        if (killer == 0) {
                /* Once our parent sleeps in its call. */
                char path[64], buf[512];

                snprintf(path, sizeof path, "/proc/%d/stat", (int) getppid());
                for (int i = 0; i < 2000; i++) {
                        int fd = open(path, O_RDONLY);
                        ssize_t k = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                        char *c;

                        if (fd >= 0)
                                close(fd);
                        if (k > 0) {
                                buf[k] = 0;
                                c = strrchr(buf, ')');
                                if (c && c[1] == ' ' && c[2] == 'S')
                                        break;
                        }
                        usleep(1000);
                }
                usleep(50000);
                kill(daemon, SIGKILL);
                _exit(0);
        }
        t0 = now_usec();
        r = freezer_get_group(f, "/s", &g);
        freezer_group_clear(&g);
        waitpid(killer, NULL, 0);
        CHECK(r == -ECONNRESET,
              "blocking call, freezerd killed: %d (%s), want -ECONNRESET", r, freezer_last_error_name(f));
        CHECK(now_usec() - t0 < 20000000, "the call ended when freezerd died");
        for (int i = 0; i < 50 && (call_error == 1 || (direct && !disconnected)); i++) {
                struct pollfd p = { .fd = freezer_get_fd(f), .events = POLLIN };

                in_dispatch = true;
                r = freezer_dispatch(f);
                in_dispatch = false;
                if (r < 0 || p.fd < 0)
                        break;
                poll(&p, 1, 100);
        }
        CHECK(call_error == -ECONNRESET, "the async call completed with %d, want -ECONNRESET", call_error);
        if (direct)
                CHECK(disconnected == 1, "FREEZER_RESYNC_DISCONNECTED came %d times", disconnected);
        freezer_close(f);
}

/* ---- the queue's bound reached (a build with a small DEFERRED_MAX) ---- */

#define BOUND_OLD 100   /* /b/g0.. made before the state callback */
#define BOUND_NEW 30    /* /b/n0.. made while signals are dropped */
#define BOUND_FILL 40   /* calls whose replies fill the queue */

typedef struct bound {
        freezer_state last[BOUND_OLD + BOUND_NEW];
        bool frozen[BOUND_OLD + BOUND_NEW];
        /* The group callback's reports of each group. */
        unsigned added[BOUND_OLD + BOUND_NEW], removed[BOUND_OLD + BOUND_NEW];
        unsigned reports, outside;
        int fill_calls, fill_done, call_done, call_error;
        freezer_state want;
} bound;

/* /b/gN is N, /b/nN is BOUND_OLD + N. */
static int bound_index(const char *path) {
        int i;

        if (sscanf(path, "/b/g%d", &i) == 1 && i >= 0 && i < BOUND_OLD)
                return i;
        if (sscanf(path, "/b/n%d", &i) == 1 && i >= 0 && i < BOUND_NEW)
                return BOUND_OLD + i;
        return -1;
}

static void bound_path(int i, char *p, size_t n) {
        if (i < BOUND_OLD)
                snprintf(p, n, "/b/g%d", i);
        else
                snprintf(p, n, "/b/n%d", i - BOUND_OLD);
}

static void bound_state_cb(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        bound *b = userdata;
        int i = bound_index(path);

        (void) f;
        if (!in_dispatch)
                b->outside++;
        b->reports++;
        if (i >= 0) {
                b->last[i] = state;
                b->frozen[i] = frozen;
        }
}

static void bound_group_cb(freezer *f, const char *path, bool added, freezer_state state, void *userdata) {
        bound *b = userdata;
        int i = bound_index(path);

        (void) f;
        (void) state;
        if (!in_dispatch)
                b->outside++;
        if (i >= 0)
                (added ? b->added : b->removed)[i]++;
}

/* Every new group reported added (or removed too, if removed). */
static bool bound_groups_reported(void *userdata, bool removed) {
        bound *b = userdata;

        for (int i = BOUND_OLD; i < BOUND_OLD + BOUND_NEW; i++)
                if (b->added[i] == 0 || (removed && b->removed[i] == 0))
                        return false;
        return true;
}

static bool bound_groups_added(void *userdata) {
        return bound_groups_reported(userdata, false);
}

static bool bound_groups_removed(void *userdata) {
        return bound_groups_reported(userdata, true);
}

/* Until no list the handle asked for is left to come: each blocking call's
 * reply comes after the answer to any call sent before it, and what those
 * answers start is dispatched before the next. */
static bool bound_get(freezer *f, const char *path, freezer_group *g);

static void bound_settle(freezer *f) {
        for (int k = 0; k < 3; k++) {
                freezer_group g = {};

                if (bound_get(f, "/b", &g))
                        freezer_group_clear(&g);
                while (freezer_dispatch(f) > 0)
                        ;
        }
}

/* The group callback said each new group was added (and removed, if
 * removed) exactly once, and nothing of the old ones. */
static void bound_check_groups(bound *b, bool removed) {
        char p[64];

        for (int i = 0; i < BOUND_OLD + BOUND_NEW; i++) {
                unsigned want = i >= BOUND_OLD;

                bound_path(i, p, sizeof p);
                CHECK(b->added[i] == want && b->removed[i] == (removed ? want : 0),
                      "%s: reported added %u, removed %u times", p, b->added[i], b->removed[i]);
        }
}

static void bound_fill_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        bound *b = userdata;

        (void) f;
        if (!in_dispatch)
                b->outside++;
        b->fill_done++;
}

static void bound_call_cb(freezer *f, const freezer_call_result *r, void *userdata) {
        bound *b = userdata;

        (void) f;
        if (!in_dispatch)
                b->outside++;
        b->call_done++;
        b->call_error = r->error;
}

static bool bound_done(void *userdata) {
        bound *b = userdata;

        if (b->call_done == 0 || b->fill_done < b->fill_calls)
                return false;
        for (int i = 0; i < BOUND_OLD + BOUND_NEW; i++)
                if (b->last[i] != b->want)
                        return false;
        return true;
}

/* A blocking freezer_get_group() whose reply must be the group's. */
static bool bound_get(freezer *f, const char *path, freezer_group *g) {
        int r = freezer_get_group(f, path, g);

        if (r < 0 || !g->path || strcmp(g->path, path) != 0) {
                fail("get_group(%s) while the queue is full: %s, path %s", path, strerror(-r),
                     g->path ? g->path : "(none)");
                return false;
        }
        return true;
}

/* Calls whose replies wait in the queue (as many as the bound and more):
 * what comes after them past the bound is dropped. */
static void bound_fill(freezer *f, bound *b) {
        freezer_group g = {};
        char p[64];

        for (int k = 0; k < BOUND_FILL; k++) {
                int r;

                bound_path(k % BOUND_OLD, p, sizeof p);
                /* No change (each is as /b has it): an answer at once. */
                r = freezer_thaw_async(f, p, 0, FREEZER_NO_WAIT, bound_fill_cb, b, NULL);
                CHECK(r == 0, "thaw_async(%s): %s", p, strerror(-r));
                b->fill_calls++;
        }
        if (bound_get(f, "/b", &g))
                freezer_group_clear(&g);
}

/* The kernel's "frozen" of a group (cgroup.events), -1 if unreadable. */
static int kernel_frozen(const char *rel) {
        char p[4096], line[256];
        FILE *e;
        int frozen = -1;

        snprintf(p, sizeof p, "%s%s/cgroup.events", cgroot, rel);
        e = fopen(p, "re");
        if (!e)
                return -1;
        while (fgets(line, sizeof line, e))
                if (sscanf(line, "frozen %d", &frozen) == 1)
                        break;
        fclose(e);
        return frozen;
}

/* Freeze or thaw /b with the queue full, a blocking call after the other
 * until freezerd says it is done: every signal meanwhile comes past the
 * bound.  Then a loop gets the callbacks: every group's last report is its
 * state, which is the kernel's. */
static void bound_round(freezer *f, bound *b, bool freeze) {
        freezer_state top = freeze ? FREEZER_STATE_FROZEN : FREEZER_STATE_RUNNING;
        uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;
        unsigned gets = 0, settled = 0;
        char p[64];
        int r;

        b->want = freeze ? FREEZER_STATE_FROZEN_BY_PARENT : FREEZER_STATE_RUNNING;
        b->call_done = 0;
        bound_fill(f, b);
        r = (freeze ? freezer_freeze_async : freezer_thaw_async)(f, "/b", 0, 0, bound_call_cb, b, NULL);
        CHECK(r == 0, "%s_async(/b): %s", freeze ? "freeze" : "thaw", strerror(-r));
        for (;;) {
                freezer_group g = {};
                bool done;

                if (!bound_get(f, "/b", &g))
                        return;
                gets++;
                done = g.state == top && g.frozen_descendants == (freeze ? g.descendants : 0);
                freezer_group_clear(&g);
                /* And two more: freezerd sends a turn's GroupStatesChanged
                 * before it answers a call of a later turn. */
                if (done && ++settled > 2)
                        break;
                if (!done && now_usec() > deadline) {
                        fail("/b not %s", freezer_state_to_string(top));
                        return;
                }
        }
        if (!loop_until(f, bound_done, b, freeze ? "every child reported frozen-by-parent"
                                                 : "every child reported running")) {
                for (int i = 0; i < BOUND_OLD + BOUND_NEW; i++)
                        if (b->last[i] != b->want) {
                                bound_path(i, p, sizeof p);
                                fail("%s: last reported %s", p, freezer_state_to_string(b->last[i]));
                                break;
                        }
                fail("fill callbacks %d/%d, call callbacks %d", b->fill_done, b->fill_calls, b->call_done);
                return;
        }
        CHECK(b->call_done == 1 && b->call_error == 0, "/b's call: callback ran %d times, error %d", b->call_done,
              b->call_error);
        /* (Thawing a child of a frozen /b fails: FrozenByParent.  A reply
         * all the same.) */
        CHECK(b->fill_done == b->fill_calls, "fill calls: %d callbacks for %d", b->fill_done, b->fill_calls);
        /* What the callback said last is the kernel's. */
        for (int i = 0; i < BOUND_OLD + BOUND_NEW; i++) {
                bound_path(i, p, sizeof p);
                CHECK(kernel_frozen(p) == (int) freeze && b->frozen[i] == freeze,
                      "%s: kernel frozen %d, reported %d", p, kernel_frozen(p), b->frozen[i]);
        }
        printf("# bound %s: %u blocking calls meanwhile, %u reports\n", freeze ? "freeze" : "thaw", gets, b->reports);
}

static void scenario_bound(void) {
        freezer *f = open_handle();
        bound *b = calloc(1, sizeof *b);
        freezer_group *a = NULL, g = {};
        size_t n = 0;
        bool added;
        char p[64];

        cg_mkdir("/b");
        for (int i = 0; i < BOUND_OLD; i++) {
                bound_path(i, p, sizeof p);
                cg_mkdir(p);
        }
        CHECK(freezer_track(f, "/b") == 0, "freezer_track(/b): %s", freezer_last_error_name(f));
        CHECK(freezer_set_state_callback(f, bound_state_cb, b) == 0, "set_state_callback");
        CHECK(freezer_set_group_callback(f, bound_group_cb, b) == 0, "set_group_callback");
        CHECK(freezer_list(f, &a, &n) == 0 && n > BOUND_OLD, "freezer_list: %zu groups", n);
        freezer_group_array_free(a, n);
        for (int i = 0; i < BOUND_OLD + BOUND_NEW; i++)
                b->last[i] = FREEZER_STATE_RUNNING;

        /* Groups made with the queue full: their InterfacesAdded past the
         * bound.  (Not asked for by path: that would tell their Ids.) */
        bound_fill(f, b);
        for (int i = BOUND_OLD; i < BOUND_OLD + BOUND_NEW; i++) {
                bound_path(i, p, sizeof p);
                cg_mkdir(p);
        }
        for (uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;;) {
                bool done;

                if (!bound_get(f, "/b", &g))
                        break;
                done = g.descendants == BOUND_OLD + BOUND_NEW;
                freezer_group_clear(&g);
                if (done)
                        break;
                if (now_usec() > deadline) {
                        fail("freezerd did not see the new groups");
                        break;
                }
        }

        bound_round(f, b, true);
        bound_round(f, b, false);
        /* Their InterfacesAdded dropped: the groups listed again make up
         * for them, once each. */
        added = loop_until(f, bound_groups_added, b, "every new group reported added");
        if (added) {
                bound_settle(f);
                bound_check_groups(b, false);
        }

        /* And removed with the queue full: their InterfacesRemoved dropped. */
        bound_fill(f, b);
        for (int i = BOUND_OLD + BOUND_NEW - 1; i >= BOUND_OLD; i--) {
                bound_path(i, p, sizeof p);
                cg_rmdir(p);
        }
        for (uint64_t deadline = now_usec() + DEADLINE_SEC * 1000000ULL;;) {
                bool done;

                if (!bound_get(f, "/b", &g))
                        break;
                done = g.descendants == BOUND_OLD;
                freezer_group_clear(&g);
                if (done)
                        break;
                if (now_usec() > deadline) {
                        fail("freezerd did not see the groups removed");
                        break;
                }
        }
        /* (Not waited for again if the additions were not reported.) */
        if (added && loop_until(f, bound_groups_removed, b, "every new group reported removed") &&
            loop_until(f, bound_done, b, "the fill calls' callbacks")) {
                bound_settle(f);
                bound_check_groups(b, true);
        }
        CHECK(b->outside == 0, "%u callbacks ran outside freezer_dispatch()", b->outside);

        freezer_close(f);
        for (int i = BOUND_OLD - 1; i >= 0; i--) {
                bound_path(i, p, sizeof p);
                cg_rmdir(p);
        }
        cg_rmdir("/b");
        free(b);
}

int main(int argc, char **argv) {
        const char *scenario;

        if (argc < 5) {
                fprintf(stderr, "usage: %s bus|private ADDRESS CGROUP_ROOT SCENARIO [PID]\n", argv[0]);
                return 2;
        }
        direct = strcmp(argv[1], "private") == 0;
        address = argv[2];
        cgroot = argv[3];
        scenario = argv[4];
        setvbuf(stdout, NULL, _IOLBF, 0);

        if (strcmp(scenario, "storm") == 0)
                scenario_storm();
        else if (strcmp(scenario, "fdonly") == 0)
                scenario_fdonly();
        else if (strcmp(scenario, "close") == 0)
                scenario_close_in_callback();
        else if (strcmp(scenario, "cancel") == 0)
                scenario_cancel();
        else if (strcmp(scenario, "remove") == 0)
                scenario_remove_callbacks();
        else if (strcmp(scenario, "triggers") == 0)
                scenario_triggers();
        else if (strcmp(scenario, "restart") == 0)
                scenario_restart();
        else if (strcmp(scenario, "bound") == 0)
                scenario_bound();
        else if (strcmp(scenario, "timeout") == 0 && argc > 5)
                scenario_timeout((pid_t) atoi(argv[5]));
        else if (strcmp(scenario, "lost") == 0 && argc > 5)
                scenario_lost((pid_t) atoi(argv[5]));
        else {
                fprintf(stderr, "unknown scenario %s\n", scenario);
                return 2;
        }
        if (failures)
                return 1;
        printf("ok %s\n", scenario);
        return 0;
}
