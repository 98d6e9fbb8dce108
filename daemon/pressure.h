/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pressure stall information for the manager: fresh readings of a group's
 * (or the system's) *.pressure files, and pressure triggers owned by bus
 * clients.
 *
 * Readings: each group's cpu/memory/io.pressure is opened on its first read
 * and kept (GroupData.pressure), every read is one pread() from offset 0; no
 * polling, no cache of values.  Only totals are remembered, to clamp a total
 * that goes backwards.  Kept fds are budgeted (a quarter of RLIMIT_NOFILE):
 * beyond the budget a read opens, reads and closes.
 *
 * Triggers: one fd per trigger, opened O_RDWR|O_NONBLOCK, armed by writing
 * "<kind> <threshold> <window>" with its trailing NUL (psi_write() overwrites
 * the last byte written with a NUL).  A trigger belongs to the bus client that
 * created it (bus-name-track.h): its triggers go when it disconnects.
 *
 * Waiting for POLLPRI: libevent 2.1 cannot, and an epoll set of the trigger
 * fds handed to libevent as one readable fd loses events.  PSI's poll is
 * destructive (psi_trigger_poll() clears the event it reports), and a nested
 * epoll set is polled twice per event: libevent's epoll first asks the inner
 * set whether it is ready (ep_eventpoll_poll() polls the first ready trigger,
 * clearing its event), then our epoll_wait() polls it again and finds nothing.
 * Seen on 6.18: of two triggers firing together one was never reported, a
 * lone trigger in the daemon never at all.  So a small watcher thread (running
 * while there are triggers, and PRESSURE_THREAD_LINGER_USEC after the last)
 * does the only epoll_wait() on the set (EPOLLPRI|EPOLLET, data = trigger id)
 * and forwards (id, events) records through a pipe that libevent watches; the
 * main thread handles them.  The thread also closes the fds of the triggers
 * that end (a close waits for an RCU grace period: trigger_fd_release()); it
 * touches nothing else.  Edge-triggered and never re-armed: a re-arm
 * (EPOLLONESHOT, then EPOLL_CTL_MOD once the main loop had handled the event,
 * the other way) polls the file too, and lost an event that came while
 * the trigger was disarmed (trigger_arm() says how; test-pressure-disarmed).
 *
 * The kernel's spurious first event: an unprivileged trigger's window starts
 * from the wrong aggregator's total (psi_trigger_create() resets the window
 * with the rtpoll total, while unprivileged triggers are updated from the
 * avgs total: "psi: Fix avg trigger being fired unexpectedly", not in 6.18).
 * So the first update may count the group's whole history as growth and fire
 * at once; and when that window ends, its bogus growth becomes the next
 * window's interpolated "previous growth", which can fire once more (seen on
 * 6.18: threshold 500 ms, real stall ~150 ms per 2-s window, events after 2 s
 * and 6 s).  What freezerd does: it reads the trigger's total just before
 * arming, and again at every event.  Until psi_trigger_settle_usec() after
 * arming (three windows and one 2-s update period: the span such an event can
 * come in), an event is delivered only if the total grew by at least the
 * threshold since the trigger's previous event (or since arming); otherwise it
 * is dropped, counted and logged at debug level.  An event of genuine
 * pressure passes: the kernel needs that much growth within one window, and
 * events are at least one window apart.  The only other events this can drop
 * are kernel repeats, in those first seconds, of a burst already reported
 * (its window still holds it).  After that span every event is delivered. */

#include <pthread.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "bus-name-track.h"
#include "manager.h"
#include "psi.h"

#define PRESSURE_TRIGGERS_PER_CLIENT_MAX 64u
/* All the clients of one uid but root's together: one user opening many
 * connections must not take every trigger freezerd keeps from the others.
 * Never more than a quarter of those (a low RLIMIT_NOFILE lowers them).  And
 * all the uids but root's together get three quarters of them at most: the
 * rest is kept for root. */
#define PRESSURE_TRIGGERS_PER_UID_MAX 256u
#define PRESSURE_TRIGGERS_MAX 1024u
/* Each trigger holds an fd: in all at most a quarter of RLIMIT_NOFILE (as the
 * kept fds of readings), so that triggers cannot take the fds that groups
 * (their cgroup.events), the private socket's connections and the journal
 * need.  Under a limit of 256 or less that is 64 or fewer, 16 at least. */
#define PRESSURE_TRIGGERS_MIN 16u

typedef struct Pressure Pressure;
typedef struct PressureTrigger PressureTrigger;
typedef struct PressureClient PressureClient;
typedef struct GroupPressure GroupPressure;

/* Reasons of PressureTriggerRemoved. */
#define PRESSURE_REASON_GROUP_REMOVED "group-removed"     /* the cgroup is gone */
#define PRESSURE_REASON_UNTRACKED "untracked"             /* freezerd no longer publishes the group */
#define PRESSURE_REASON_HIDDEN "pressure-hidden"          /* cgroup.pressure was set to 0 */
#define PRESSURE_REASON_ERROR "error"                     /* the kernel reported an error on the fd */

struct PressureTrigger {
        Pressure *pressure;
        uint32_t id;
        PsiResource resource;
        PsiKind kind;
        uint64_t threshold_usec, window_usec;
        int fd;                  /* the armed pressure file */
        Group *group;            /* NULL: system-wide, owned by the Manager object */
        PressureClient *client;  /* the bus client that created it */
        bool privileged;         /* armed with CAP_SYS_RESOURCE (root's): the kernel polls it in real
                                  * time; else from its 2-s averages (see trigger_open()) */
        uint64_t armed_usec;     /* CLOCK_MONOTONIC when armed */
        uint64_t last_total;     /* the kind's total just before arming, then at each event */
        uint64_t n_events, n_dropped;

        PressureTrigger *next, *prev;   /* Pressure.triggers */
        PressureTrigger *cnext, *cprev; /* PressureClient.triggers */
        PressureTrigger *gnext, *gprev; /* GroupPressure.triggers or Pressure.system_triggers */
};

struct PressureClient {
        Pressure *pressure;
        char *name;         /* unique bus name; on the private socket a description for the log */
        sd_bus *connection; /* on the private socket: the connection itself (its signals go there) */
        uid_t uid;          /* the caller's, when it created its first trigger */
        PressureTrigger *triggers;
        unsigned n_triggers;
        PressureClient *next, *prev;
};

struct GroupPressure {
        int fd[_PSI_RESOURCE_MAX]; /* kept read-only fds; -1 until the first read (irq unused) */
        PsiClamp clamp[_PSI_RESOURCE_MAX];
        PressureTrigger *triggers;
};

/* The watcher thread. */
typedef enum PressureThreadState {
        PRESSURE_THREAD_NONE,    /* none was started, or the last one was joined */
        PRESSURE_THREAD_RUNNING,
        PRESSURE_THREAD_LEFT,    /* it found nothing to do for its linger and left: join it */
} PressureThreadState;

/* A trigger fd that the watcher thread has yet to close, and whom it is
 * charged to until then: it is still open, so it counts against its client's,
 * its uid's and the total bound on triggers (a client that added and removed
 * triggers in a loop held as many fds as the total bound allowed, and with
 * them every other client's room). */
typedef struct PressureClosing {
        int fd;
        uid_t uid;              /* the owner's, charged until the close */
        PressureClient *client; /* NULL once that client is gone (its uid stays charged) */
} PressureClosing;

/* How long an AddPressureTrigger may wait, on the main loop, for the thread
 * to close fds of removed triggers when they alone keep it from a bound (a
 * close waits for an RCU grace period: 40 us to 17 ms).  Past it the call
 * fails (LimitsExceeded, "retry"): the main loop never waits longer. */
#define PRESSURE_CLOSE_WAIT_USEC (50 * USEC_PER_MSEC)

/* How long the watcher thread waits, with no trigger left and no fd to close,
 * before it leaves (as the writer thread lingers): a client that replaces its
 * only trigger does not make a thread each time. */
#define PRESSURE_THREAD_LINGER_USEC (100 * USEC_PER_MSEC)

typedef struct PressureHooks {
        /* A trigger fired: reading is the current line of its kind. */
        void (*exceeded)(Pressure *p, const PressureTrigger *t, const PsiLine *reading, void *userdata);
        /* A trigger ended by itself (its group went away...), not by RemovePressureTrigger
         * or the client's disconnection.  Called before t is freed. */
        void (*removed)(Pressure *p, const PressureTrigger *t, const char *reason, void *userdata);
        void *userdata;
} PressureHooks;

struct Pressure {
        Manager *manager;
        sd_bus *bus;
        NameTrack *names; /* the bus clients holding triggers */
        PressureHooks hooks;
        bool privileged; /* CAP_SYS_RESOURCE effective at start */

        int system_fd[_PSI_RESOURCE_MAX]; /* /proc/pressure/<res>, kept; -1 until read */
        PsiClamp system_clamp[_PSI_RESOURCE_MAX];

        unsigned n_kept_fds, max_kept_fds;
        unsigned max_triggers; /* PRESSURE_TRIGGERS_MAX, or less under a low RLIMIT_NOFILE (read at each new trigger) */
        unsigned max_triggers_per_uid; /* PRESSURE_TRIGGERS_PER_UID_MAX, at most a quarter of max_triggers */
        unsigned max_triggers_others;  /* all the uids but root's together: max_triggers less a quarter,
                                        * kept for root */

        int epoll_fd;              /* the trigger fds, and wake_fd with data 0 */
        int wake_fd;               /* eventfd: wakes the watcher thread (fds to close, stopping) */
        int pipe_fd[2];            /* watcher thread -> main loop: PressureWakeup records */
        struct event *pipe_event;
        int fail_fd;               /* eventfd: the watcher thread ended on an error */
        struct event *fail_event;
        bool thread_failure_logged, thread_gave_up_logged;
        pthread_t thread;

        /* Shared with the watcher thread, under lock.  The thread runs while
         * there are trigger fds to watch or to close, and PRESSURE_THREAD_LINGER_USEC
         * after: freezerd is single-threaded at rest. */
        pthread_mutex_t lock;
        pthread_cond_t closed;     /* the thread closed a trigger fd (CLOCK_MONOTONIC) */
        PressureThreadState thread_state;
        bool stopping;             /* pressure_free(): the thread leaves, nothing more is closed */
        unsigned n_watched;        /* trigger fds in the epoll set (or being added to it) */
        unsigned thread_generation; /* threads started so far: the running (or last) one's number */
        unsigned failed_generation; /* the number of the last thread that ended on an error */
        int thread_error;          /* errno of the last thread that ended on an error */
        unsigned thread_failures;  /* threads that ended on an error since one last proved healthy
                                    * (an epoll_wait() of it worked): see on_thread_failed() */
        bool thread_joining;       /* a thread that left is being joined (FREEZERD_TEST_PRESSURE_THREAD_FAIL) */
        unsigned n_queued;
        PressureClosing closing[PRESSURE_TRIGGERS_MAX]; /* the queue (a stack): n_triggers + the fds still to
                                                         * close <= PRESSURE_TRIGGERS_MAX */
        PressureClosing in_close;  /* the one the thread is closing; fd -1: none */
        uint64_t test_close_delay_usec; /* FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC: tests only, 0 unless set */
        bool test_no_cpu_full;     /* FREEZERD_TEST_PRESSURE_NO_CPU_FULL: tests only (pressure_read_fd()) */
        /* FREEZERD_TEST_PRESSURE_THREAD_FAIL: the threads (bit n-1: the nth started) whose first
         * epoll_wait() fails, and those of them that tell the main loop only once it joins them. */
        uint64_t test_fail_threads, test_fail_late;

        PressureTrigger *triggers;        /* all of them */
        PressureTrigger *system_triggers; /* those of the Manager object */
        unsigned n_triggers;
        uint32_t next_id;
        PressureClient *clients;
};

int pressure_new(Manager *m, sd_bus *bus, const PressureHooks *hooks, Pressure **ret);
/* Closes every trigger silently (no signals) and frees; NULL-safe. */
Pressure *pressure_free(Pressure *p);

/* Read the pressure of resource for group g (NULL: the system, /proc/pressure),
 * fresh, totals clamped.  On failure fills error (NotSupported naming the
 * reason, NoSuchGroup, Failed for a malformed file) and returns -errno. */
int pressure_read(Pressure *p, Group *g, PsiResource resource, PsiReading *ret, sd_bus_error *error);

/* AddPressureTrigger of the group g (NULL: the Manager, system-wide) by the
 * sender of call, whose uid is uid.  Validates (InvalidArgs naming the rule),
 * enforces the limits (LimitsExceeded: per client, per uid but root's, all
 * the uids but root's together, in all, and no fd left), opens and arms the
 * file. */
int pressure_trigger_add(Pressure *p, sd_bus_message *call, uid_t uid, Group *g, const char *resource,
                         const char *kind, uint64_t threshold_usec, uint64_t window_usec, uint32_t *ret_id,
                         sd_bus_error *error);
/* RemovePressureTrigger: only the sender's own trigger on that object (InvalidArgs otherwise). */
int pressure_trigger_remove(Pressure *p, sd_bus_message *call, Group *g, uint32_t id, sd_bus_error *error);
/* A private connection closed: its triggers go (nobody is left to tell). */
void pressure_connection_closed(Pressure *p, sd_bus *connection);

/* Hook of the manager: g leaves the bus, its cgroup removed (removed) or
 * untracked.  Ends its triggers (hooks.removed with "group-removed" or
 * "untracked": the manager knows which, a look at the path cannot tell a
 * cgroup made again under the same name), closes its fds, frees
 * GroupData.pressure.  p may be NULL (shutdown). */
void pressure_group_release(Pressure *p, Group *g, bool removed);
