/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The manager: follows the kernel (inotify on cgroup directories and
 * cgroup.freeze files, epoll on cgroup.events), keeps the tree model, and
 * runs freeze/thaw operations whose completion is driven by the kernel's
 * notifications.  It knows nothing of the
 * bus beyond sd_bus_error (a plain struct): manager-bus.c publishes it, and
 * operations report back through a callback. */

#include <event2/event.h>
#include <systemd/sd-bus.h>

#include "batch.h"
#include "bus-name-track.h"
#include "config.h"
#include "journal.h"
#include "tree.h"
#include "wdmap.h"

/* Flags of Freeze/Thaw/ApplyBatch. */
#define FREEZER_FLAG_ROLLBACK_ON_TIMEOUT (UINT64_C(1) << 0)
#define FREEZER_FLAG_NO_WAIT (UINT64_C(1) << 1)
#define FREEZER_FLAG_RECURSIVE (UINT64_C(1) << 2)
/* ApplyBatch only: a request whose group does not exist is left out, counted
 * in the reply's skipped, instead of failing the call (BatchItem.counted). */
#define FREEZER_FLAG_SKIP_MISSING (UINT64_C(1) << 3)
/* Flags of LookupGroup(): a group outside the tracked subtrees is tracked
 * while the caller stays, not for good (manager_lookup_transient()). */
#define FREEZER_LOOKUP_TRANSIENT (UINT64_C(1) << 0)

/* How deep below its cgroup root freezerd follows groups.  The kernel sets no
 * limit (cgroup.max.depth is "max" unless someone sets it), and whoever may
 * mkdir in a delegated subtree can nest thousands of levels: each level is a
 * frame of the scan's recursion and a directory fd it holds meanwhile.  Real
 * trees (systemd slices, Kubernetes pods, nested containers) stay below 40. */
#define GROUP_DEPTH_MAX 256

/* Groups re-read at once while the kernel may hold back their notification
 * (manager.c, operation_watch_holdback() and holdback_watch_external());
 * beyond them a call, or a signal, waits for it. */
#define HOLDBACK_MAX 256

/* Track roots a call asked for whose cgroup is gone, waiting to be made again
 * (manager.c, manager_forget_waiting_roots()); beyond them the one tracked or
 * made the least recently is forgotten. */
#define TRACK_ROOTS_WAITING_MAX 1024U

/* getdents64 buffer of a directory listing. */
#define SCAN_BUF_SIZE (16 * 1024)

typedef struct Manager Manager;

/* What a client subscribed to (manager-bus.c, "Signals"). */
typedef enum Subscription {
        SUBSCRIPTION_ALL,    /* Subscribe(): GroupsChanged and per-object PropertiesChanged */
        SUBSCRIPTION_GROUPS, /* SubscribeGroups(): GroupsChanged */
        SUBSCRIPTION_STATES, /* SubscribeGroupStates(): GroupStatesChanged */
        _SUBSCRIPTION_MAX,
} Subscription;

/* The bus clients of one of the Manager's subscriptions (manager-bus.c), each
 * counted once per call. */
typedef struct Subscribers {
        Manager *manager;
        Subscription kind;
        NameTrack *names; /* each counted once per call */
} Subscribers;
typedef struct Operation Operation;
/* A caller's hold on a transient root (manager-bus.c, LookupGroup()). */
typedef struct TransientHold {
        struct TransientHold *next;
        char *root;          /* normalized API path */
        char *name;          /* the holder's unique name on the bus, or NULL: */
        sd_bus *connection;  /* its private connection (a reference) */
} TransientHold;
struct Pressure;      /* pressure.h */
struct GroupPressure; /* pressure.h */
typedef struct OpEntry OpEntry;

/* Per-group state the manager keeps besides the model: Group.userdata. */
typedef struct GroupData {
        Group *group;
        Manager *manager;
        /* cgroup.events, opened on first read (group_read_events()) and kept for
         * pread() after every notification; -1 until then.  A group below an
         * empty one is deduced, not read (group_cover()), and its file never
         * opened: see group_open_events(). */
        int events_fd;
        bool no_events; /* the mount's root, which has no cgroup.events */
        int freeze_fd; /* cgroup.freeze, opened on first write and kept; -1 until then */
        int wd_dir;    /* watch on the directory (child mkdir/rmdir); also names its cgroup.events in the epoll set */
        int wd_freeze; /* watch on cgroup.freeze (writes); -1 for the mount's root, which has none */
        unsigned events_gen, freeze_gen; /* last inotify batch in which we re-read */
        unsigned settle_gen;             /* last write burst that re-read it (group_settle_subtree) */
        unsigned write_gen;              /* last call that writes its flag (manager_write_freezes) */
        bool write_pending;              /* written by the real-time writer, not yet in the model (batch_written()) */
        unsigned above_gen;              /* last call that writes a group below it (writes_disjoint()) */
        /* An empty subtree vouched for by one read of its top (see group_cover()):
         * cover/cover_epoch name the top and its epoch; a top is `covering` while
         * its reads say empty, and bumps epoch when they stop. */
        Group *cover;
        unsigned cover_epoch, epoch;
        bool covering;
        bool polled;    /* its cgroup.events is in the epoll set (see group_set_polled()) */
        bool poll_failed; /* should be polled, but epoll_ctl() refused: re-read from Manager.repoll_timer */
        bool following; /* read once and then polled or covered (group_start_following()) */
        bool scan_pending; /* added by a listing of its parent, which has yet to look for its children */
        bool deep_warned;  /* its children were refused for GROUP_DEPTH_MAX, and the log says so */
        struct OddNames *odd_names; /* children not followed for their names (manager.c); NULL until one */
        struct U64Set *limit_names; /* children the inotify watch limit kept out, logged (manager.c) */
        /* A child was left out of the model, for its name, its depth or a
         * failure to watch it (note_unfollowed()): Thaw RECURSIVE and
         * FreezeExcept list this group's directory for such children
         * (odd-groups.h).  For good: a hint, lists cost little; never set,
         * the calls list nothing. */
        bool unfollowed_children;
        size_t announce_slot; /* 1 + its index in Manager.announce while its InterfacesAdded waits, else 0 */
        OpEntry *entries; /* operations waiting on this group */
        /* The last RECURSIVE batch expansion (or FreezeExcept check) that
         * visited it, or the RECURSIVE request whose access check it passed
         * as a named group, or an ApplyBatch with SKIP_MISSING whose request
         * found it (count_missing(), manager-bus.c).  64 bits: a 32-bit mark wraps after 2^32
         * such calls, and a group marked that long ago would look visited. */
        uint64_t expand_gen;
        /* The kernel's rate limit on its cgroup.events (see operation_watch_holdback()):
         * when the file was last notified, as far as freezerd knows (0: not
         * lately), and 1 + its index in Manager.holdback while it is re-read, else 0. */
        uint64_t notified_usec;
        unsigned holdback_slot;
        struct GroupPressure *pressure; /* *.pressure fds (opened lazily), clamps, triggers; NULL until used */
} GroupData;

static inline GroupData *group_data(const Group *g) {
        return g->userdata;
}

static inline Manager *group_manager(const Group *g) {
        return group_data(g)->manager;
}

/* Whether g is a group object on the bus (and in ListGroups, Groups): every
 * tracked group, and the root whatever is tracked.  The root is always in
 * the model, watched and read (manager_attach_root()), so looking it up needs
 * no tracking; its `tracked` keeps its own meaning: its new children are
 * tracked, and so is everything below it (tree.h).  Tracking "/" only to
 * publish the root would track the whole hierarchy. */
static inline bool group_published(const Group *g) {
        return g->tracked || !g->parent;
}

/* The number of published groups. */
static inline unsigned tree_published(Tree *t) {
        return tree_tracked(t) + !tree_root(t)->tracked;
}

typedef enum OpWant {
        OP_WANT_FROZEN,    /* Freeze: kernel frozen 1 */
        OP_WANT_THAWED,    /* Thaw: kernel frozen 0; an ancestor freezing it fails with FrozenByParent */
        OP_WANT_EFFECTIVE, /* batch: kernel frozen equal to the effective flag */
} OpWant;

struct OpEntry {
        Operation *op;
        Group *group;       /* NULL once the group is gone */
        OpWant want;
        bool new_freeze;    /* the flag this operation asked for */
        bool prev_freeze;   /* the flag before the operation wrote it */
        bool wrote;         /* the operation changed the flag (rollback restores it) */
        bool adopted;       /* a later call asked for the same flag: rollback leaves it */
        bool inherited;     /* asked for a flag an earlier ROLLBACK call wrote, and took over its
                             * restoring (prev_freeze is that call's): rollback restores it */
        bool took_over;     /* asked for a flag an earlier ROLLBACK call wrote, and made it stay
                             * (group_adopt()): the flag stays set because of this call too */
        bool done;          /* the kernel reports what we wait for */
        bool unnamed;       /* BatchItem.unnamed: its removal leaves it out instead of failing the call */
        bool vanished;      /* unnamed, and removed: neither written nor waited for */
        unsigned index;     /* BatchItem.index */
        OpEntry *gnext, *gprev; /* in GroupData.entries */
};

typedef void (*operation_done_t)(Operation *op, const sd_bus_error *error, void *userdata);

struct Operation {
        Manager *manager;
        uint64_t flags;
        uint64_t timeout_usec;
        uint64_t started_usec;
        OpEntry *entries;
        unsigned n_entries;
        unsigned n_pending;
        unsigned writes;  /* cgroup.freeze writes done */
        unsigned skipped; /* requests already satisfied by the current flag, and named ones left
                           * out as missing (SKIP_MISSING, BatchItem.counted) */
        struct event *timer;
        /* Looks again at tasks the kernel may have reported frozen early
         * (operation_tasks_frozen()), every recheck_usec, doubling; NULL until needed. */
        struct event *recheck;
        uint64_t recheck_usec;
        int journal_slot;   /* its intent journal's slot while it runs (journal.h), or -1 */
        bool journal_stale; /* a flag of it adopted or inherited since: to be journaled again */
        bool doomed;        /* its failure is queued (operation_doom()) */
        bool doom_rollback;
        bool doom_tell_stays; /* its failure (a reversal, a removal) leaves its other flags: the reply names them */
        /* It writes groups the call did not name (a RECURSIVE request's
         * subtree, FreezeExcept's cover): the caller cannot tell which flags
         * a Timeout leaves set, so its reply names them. */
        bool writes_unnamed;
        bool vanished_check; /* an unnamed group of it was removed: manager_dispatch() looks again */
        const char *doom_name;
        char *doom_message;
        Operation *doomed_next;
        operation_done_t done;
        void *userdata;
        Operation *next, *prev; /* Manager.operations */
};

struct Manager {
        struct event_base *event_base;
        Config config;
        char *config_path;

        char *cgroup_root; /* absolute directory */
        char *runtime_dir; /* batch journals */
        Journal *journal;  /* their slots, once the runtime directory is ours */
        char *state_dir;   /* subtrees tracked through Track() */
        uint64_t journal_seq;
        uint64_t expand_gen; /* one per RECURSIVE batch expansion (GroupData.expand_gen); never wraps */
        bool started; /* initial tracking done: track changes are persisted from now on */
        bool reloading; /* in manager_reload(): tracked.json is saved once, at its end */
        bool save_pending;
        /* track_root_touch() reordered the roots calls asked for since
         * tracked.json was saved: saved at the stop (manager_shutdown()). */
        bool track_order_unsaved;
        char *self_path; /* freezerd's own cgroup as an API path, if it lies below the root: never frozen */
        int self_cgroup_fd; /* /proc/self/cgroup, held open (manager_find_self()) */
        const char *root_cgroup; /* the root as /proc/self/cgroup names it ("" for the mount), in cgroup_root */
        /* The groups above the root, below the mount (manager_open_outer()),
         * from the mount down: their flags freeze everything we follow. */
        struct OuterGroup {
                char *path;    /* its directory, absolute */
                int freeze_fd; /* its cgroup.freeze, watched for writes (WD_KIND_OUTER) */
                bool freeze;   /* its flag as last read */
        } *outer;
        size_t n_outer;
        int runtime_lock_fd, state_lock_fd; /* flock()ed <dir>/lock: one freezerd per directory */
        uint64_t test_write_delay_usec; /* FREEZERD_TEST_WRITE_DELAY_USEC: tests only, 0 unless set */
        /* FREEZERD_TEST_TRACK_ROOT_ENOMEM: tests only, NULL unless set; adding
         * this track root fails as out of memory would (track_root_add()),
         * and so does a path below it, once the groups above it are in the
         * model (manager_ensure_path()). */
        const char *test_track_root_enomem;
        /* FREEZERD_TEST_NO_LOOKUP_GROUP: LookupGroup() is answered
         * UnknownMethod, as by a freezerd before it (freezectl's fallback). */
        bool test_no_lookup_group;
        bool realtime_refused; /* the kernel refused SCHED_FIFO once (manager_write_freezes()): not asked again until a SIGHUP */
        bool realtime_failed;  /* the writer thread failed otherwise once: logged (again after a SIGHUP), tried again per call */
        int root_fd;       /* O_PATH|O_DIRECTORY */

        Tree *tree;
        int inotify_fd;
        struct event *inotify_event;
        int events_epfd; /* cgroup.events of the groups not covered (EPOLLPRI), data.u64 its wd_dir */
        struct event *events_epoll_event;
        struct event *inotify_resume; /* ends a pause of reading during a storm */
        WdMap *wds;
        unsigned inotify_gen;
        unsigned outer_gen; /* last inotify batch in which the flags above the root were re-read */
        /* Kernel events read from the inotify fd and the epoll set, handled in
         * order, a slice per loop turn (manager_handle_stashed_events()), from
         * inotify_stash_pos. */
        char *inotify_stash;
        size_t inotify_stash_len, inotify_stash_pos;
        /* Up to here, manager_drain_inotify() applied the cgroup.freeze
         * writes of the stash; beyond are events read ahead
         * (removals_may_be_unread()). */
        size_t inotify_stash_applied;
        /* Events of INOTIFY_REMOVAL_MASK in the stash, not handled yet. */
        size_t inotify_removals;
        /* The groups those may tell of, for the call that asked
         * (removals_collect()), keyed by address; all: any group may be. */
        struct U64Set *removal_groups;
        bool removal_all;
        bool inotify_overflow_pending; /* an IN_Q_OVERFLOW waits in the stash */
        bool inotify_lost;             /* events were read but could not be kept: re-read every group */
        unsigned settle_gen;
        unsigned write_gen; /* one per manager_write_freezes() */
        bool writes_followed; /* its writes are settled as the writer goes on (batch_written()) */
        /* A scan in progress (manager.c, scan_chdir()): nesting depth, the group
         * the working directory is in, the one to go back to (or -1). */
        unsigned scan_depth;
        Group *scan_cwd;
        int scan_saved_cwd;
        struct ScanHelper *scan_helper; /* its second thread, once a listing was big enough (scan-helper.h) */

        char **track_roots; /* subtrees tracked (normalized API paths), NULL-terminated */
        /* Per root: a call asked for it (Track(), a lookup outside the tracked
         * subtrees, tracked.json), whether or not "track" names it too.  Such
         * a root is kept in tracked.json, and a SIGHUP whose "track" drops it
         * keeps it: only Untrack() drops what a call asked for. */
        bool *track_roots_called;
        /* Per root: tracked.json, as last saved (or read at the start), has
         * it.  A root a call asked for lacks it where its save failed (a
         * read-only state directory): Untrack() of it needs no save, a
         * Track() of it saves again. */
        bool *track_roots_saved;
        size_t n_track_roots;
        /* Roots tracked by a transient lookup (LookupGroup() with
         * FREEZER_LOOKUP_TRANSIENT, manager_lookup_transient()): never in
         * tracked.json, untracked once their last holder leaves
         * (manager_release_transient()).  A root listed here is transient
         * while no call asked for it (track_roots_called): a Track() or a
         * lookup for good makes it an ordinary root, and one that call undoes
         * (a refused Freeze) leaves it transient again.  An entry may outlive
         * its root (an Untrack()): a root added again by anything but a
         * transient lookup, or configured, drops it.  Few: a list. */
        char **transient_roots;
        size_t n_transient_roots;
        bool tracking_transient; /* within manager_lookup_transient()'s track_path() */
        /* The holders of transient roots (manager-bus.c): one entry per
         * root and caller, that caller's unique name or private connection. */
        TransientHold *transient_holds;
        NameTrack *transient_names;
        /* string_hash() of each root (and maybe of some gone since, until the
         * next removal rebuilds it): a path that is no root is told at once,
         * where the list alone made a start with thousands of roots in
         * tracked.json quadratic (2 s at 20,000).  A hash found is confirmed
         * in the list. */
        struct U64Set *track_root_hashes;
        bool track_roots_removed; /* a group left the model: see manager_forget_waiting_roots() */
        /* Roots whose cgroup was removed in this slice of events, logged after
         * manager_forget_waiting_roots(): as waiting, or by it as forgotten. */
        char **roots_gone;
        size_t n_roots_gone;

        Operation *operations;
        unsigned n_operations;
        unsigned n_operations_peak; /* since the last time few were left */
        bool burst_over;            /* many calls waited, few are left: give their memory back */
        Operation *doomed, *doomed_tail; /* failures waiting for manager_dispatch() */
        bool vanished_check;             /* some Operation.vanished_check is set */
        /* Groups a waiting call needs, or a freeze written behind our back
         * froze, whose notification the kernel may be holding back
         * (operation_watch_holdback()), re-read from holdback_timer:
         * each since when, and how many times already. */
        struct HoldbackEntry {
                Group *group;
                uint64_t since;
                unsigned step;
        } holdback[HOLDBACK_MAX];
        unsigned n_holdback;
        struct event *holdback_timer;
        /* Groups that should be polled but could not be put in the epoll set
         * (the epoll watch limit, fs.epoll.max_user_watches, or no memory):
         * re-read, and tried again, from repoll_timer until every one is in
         * (manager.c, group_poll_failed()).  Unarmed while there are none. */
        unsigned n_poll_failed;
        struct event *repoll_timer;

        struct Pressure *pressure; /* PSI readings and triggers (pressure.c); set by the bus layer */

        /* Hooks set by the bus layer (may be NULL). */
        void (*on_group_added)(Manager *m, Group *g);
        void (*on_group_removed)(Manager *m, const char *path);
        /* Sends the signals of up to max of the groups changed so far, in the
         * middle of a call: the groups a storm's writes settled while the
         * writes go on (batch_written()).  True if changed groups are left. */
        bool (*on_groups_settled)(Manager *m, size_t max);
        void *bus_userdata;
        bool bus_ready; /* name owned: signals are worth sending */
        /* Clients that asked for signals (manager-bus.c): Subscribe() for all of
         * them, SubscribeGroups() for GroupsChanged alone.  Nothing is sent
         * that nobody asked for.  Connections of the private socket count
         * their own (private-bus.h). */
        Subscribers subscribed, subscribed_groups, subscribed_states;
        struct PrivateBus *private_bus; /* set by main(), may be NULL */
        bool groups_count_changed;
        int fatal; /* -errno once freezerd must exit with failure (its cgroup root removed): main() stops */
        bool call_remade; /* the -ESTALE of a call over a group made again (manager_handle_pending_events()) */
        /* Groups published but not announced yet (manager_announce()): their
         * InterfacesAdded carries their values once the scan that added them
         * is done, not halfway (a subtree's top before its descendants). */
        Group **announce;
        size_t n_announce, announce_cap;
        /* The call being handled whose lookups may track paths outside the
         * tracked subtrees (manager_call_begin()), and the roots they added:
         * undone if it is refused before it writes. */
        struct {
                sd_bus_message *msg; /* the call's message (not referenced: it outlives the handler) */
                bool open;     /* between manager_call_begin() and manager_call_end() */
                bool accepted; /* manager_call_accept() since the last manager_call_begin() */
                bool unsaved;  /* a lookup's root waits for tracked.json until it is accepted */
                struct CallRoot {
                        char *path;
                        bool configured; /* a root of the configuration, which the call only marked as asked for */
                        bool taken;      /* taken out of the roots by the undo (manager_call_end()) */
                } *roots;
                size_t n_roots, n_roots_allocated;
                /* The groups above what its lookups add, as they were before
                 * the first: the undo takes the marks of their counts off
                 * again where those came back to the same, so that a refused
                 * call sends no signal (PropertiesChanged, GroupsChanged,
                 * GroupStatesChanged, the Manager's Groups) saying nothing
                 * changed.  One per group (by its id: a path removed and made
                 * again meanwhile has two), its ancestors with it. */
                struct CallMark {
                        char *path;
                        uint64_t id;
                        unsigned changed; /* its GROUP_CHANGED_* bits not yet sent */
                        unsigned n_descendants, n_frozen_descendants;
                } *marks;
                size_t n_marks, n_marks_allocated;
                struct U64Set *marked; /* the groups in marks (their ids) */
                bool counted; /* published and groups_count_changed noted */
                bool groups_count_changed;
                unsigned published;
        } call;
};

int manager_new(struct event_base *base, const Config *config, const char *cgroup_root, const char *runtime_dir,
                const char *state_dir, Manager **ret);
Manager *manager_free(Manager *m);

/* Kernel events are read as they come (or ahead, when freezerd writes) and
 * handled in order, for up to budget_usec per call, so that calls and signals
 * go between slices of a storm.  A time budget, not a count: the events of
 * groups known empty cost a fraction of a microsecond each, those that need a
 * read a hundred times more, and every loop turn between slices has its own
 * fixed cost.  manager_has_stashed_events(): some wait. */
#define INOTIFY_SLICE_USEC 1000 /* a call waits at most about this long behind a storm */
void manager_handle_stashed_events(Manager *m, uint64_t budget_usec);
static inline bool manager_has_stashed_events(const Manager *m) {
        return m->inotify_stash_pos < m->inotify_stash_len || m->inotify_lost;
}

/* While a storm's writes are followed (batch_written()), whether g's signals
 * wait for the end of the loop turn: g is above the groups written, and its
 * counts change with each of them (reported once, when all are done). */
bool manager_group_waits_for_writes(const Manager *m, const Group *g);

/* Sends the InterfacesAdded of the groups published since the last call
 * (on_group_added), in the order they were added, each with its values as
 * they are now.  Called once the scan that added them is done: by
 * manager_track() before it returns (so before the caller's reply), at the end
 * of a reload, and at the top of every loop turn (manager_bus_flush()) for the
 * groups of mkdir events. */
void manager_announce(Manager *m);

/* Whether a burst of waiting calls (OPERATIONS_BURST or more at once) has
 * just ended, clearing it: the caller gives the heap's free memory back
 * (malloc_trim(): a burst's small blocks are freed in no order, and glibc
 * only ever returns the free top of the heap by itself). */
#define OPERATIONS_BURST 256
static inline bool manager_burst_over(Manager *m) {
        bool r = m->burst_over;
        m->burst_over = false;
        return r;
}

/* Track the subtrees of the configuration. */
int manager_start(Manager *m);

/* Re-read the configuration: new default timeout, tracked subtrees. */
int manager_reload(Manager *m, const Config *config);

/* The error of a path that cannot be looked up, by its errno (-ENOENT:
 * NoSuchGroup "PATH does not exist", -ENOTDIR, -ELOOP...: InvalidPath...),
 * raw quoted (CG_QUOTE()). */
int manager_path_error(sd_bus_error *error, int r, const char *raw);

/* Resolve an API path to a published group (a tracked one, or the root). If
 * the cgroup exists but lies outside the tracked subtrees, its subtree is
 * tracked first.  On failure fills error (InvalidPath or NoSuchGroup) and
 * returns -errno. */
int manager_resolve_group(Manager *m, const char *path, Group **ret, sd_bus_error *error);

/* A call that looks up several paths (ApplyBatch, FreezeExcept), or checks
 * more after its lookup (Freeze, Thaw), is all or nothing for tracking too: a
 * lookup tracks a path outside the tracked subtrees (manager_resolve_group()),
 * and a call refused after it (a later path missing or malformed,
 * AccessDenied, a state check) must leave freezerd as it found it.  Between
 * manager_call_begin() and manager_call_end(), the roots its lookups add are
 * noted, their tracked.json save and the InterfacesAdded of what they publish
 * held.  manager_call_accept(): the call passed its checks and writes (or
 * replies with nothing to write): the file is saved and the groups announced,
 * before any reply.  manager_call_end(): failed before it was accepted, its
 * lookups' roots go again (tracked.json, objects, watches as before, and no
 * signal for the counts above them that came back as they were); else
 * as manager_call_accept().  manager_call_begin() again (the call handled
 * again, nothing written: call_again_if_remade()) keeps the roots noted and
 * holds again.  Outside such a call, manager_call_accept() does nothing.
 * manager_call_accept()'s msg is the message of the call that writes: that
 * of another (an earlier call's batch, whose reply_batch_done() thaws the
 * groups freezerd does not follow once the kernel confirmed it, which can
 * come while this one is handled: the events read before it is handled
 * again, or the removal of what it tracked) accepts nothing. */
void manager_call_begin(Manager *m, sd_bus_message *msg);
void manager_call_accept(Manager *m, sd_bus_message *msg);
void manager_call_end(Manager *m, bool failed);

/* Whether manager_resolve_group() of norm (a normalized path) would track it
 * as a new track root: false for a published group, and for one made a
 * moment ago in a tracked subtree (added to the model as its mkdir's inotify
 * event would add it).  The access check of a Track applies only when true.
 * A group that only transient roots cover is tracked for good by a lookup
 * (true), but not by a transient one (transient: false, as for any published
 * group). */
bool manager_resolve_tracks(Manager *m, const char *norm, bool transient);

/* A transient lookup (LookupGroup() with FREEZER_LOOKUP_TRANSIENT): as
 * manager_resolve_group(), but a path outside the tracked subtrees is tracked
 * as a transient root (Manager.transient_roots), not kept in tracked.json.
 * *ret_root: the transient root the caller must hold for the group to stay
 * tracked (the nearest covering it; newly allocated), or NULL where a root
 * kept for good, or none ("/"), covers it.  The caller holds it and calls
 * manager_release_transient() once its last holder is gone. */
int manager_lookup_transient(Manager *m, const char *path, Group **ret, char **ret_root, sd_bus_error *error);
/* The last holder of root (as *ret_root above) left: where it is still a
 * transient root, it is untracked as by Untrack() (calls waiting on what it
 * alone covered fail with Cancelled); one that meanwhile became a root kept
 * for good (Track(), a lookup for good, the configuration) stays. */
void manager_release_transient(Manager *m, const char *root);

/* Track(): follow path's subtree and publish it (Track() of a group in the
 * model already also looks for the groups it lacks below).  Untrack(): drop a
 * root of manager_track() or of the configuration; the groups no remaining
 * root needs leave the bus, the ancestors of remaining roots stay in the
 * model for their flags.  Both keep their change in tracked.json: where
 * that save fails, the call fails (Failed, naming the file) and its change
 * is undone, so that what is tracked now is what a restart tracks.  keep
 * false (a lookup that tracks a path as it resolves it): a failed save is
 * logged only, the path tracked until the stop. */
int manager_track(Manager *m, const char *path, bool keep, Group **ret, sd_bus_error *error);
int manager_untrack(Manager *m, const char *path, sd_bus_error *error);
/* Whether path (normalized) is one of the tracked subtrees' roots. */
bool manager_is_track_root(Manager *m, const char *path);

/* Start Freeze or Thaw of one group, flags ROLLBACK_ON_TIMEOUT and NO_WAIT at
 * most (the bus checked them).  Returns 0 when an operation was started
 * (done() will be called exactly once, possibly before this returns), or
 * -errno with error filled when nothing was started. */
int manager_freeze(Manager *m, Group *g, bool freeze, uint64_t timeout_usec, uint64_t flags, operation_done_t done,
                   void *userdata, sd_bus_error *error);

/* Whether g's cgroup still exists: one removed a moment ago stays in the model
 * until freezerd reads its IN_DELETE.  -ENOENT or -ENODEV if it is gone,
 * -ESTALE (call_remade set) if another directory has its path (made again
 * under its name: see below), else 0 (also where that cannot be told: the
 * write that follows says it). */
int manager_group_check_exists(Manager *m, Group *g);

/* A call over a group removed and made again under its name a moment ago,
 * before freezerd read the removal, acts on neither: manager_freeze(),
 * manager_apply_batch() and manager_group_check_exists() return -ESTALE with
 * Manager.call_remade set (and no error: nothing was written), and the caller
 * reads and handles every kernel event now, then handles the call again from
 * the start: it finds the new group in the model. */
void manager_handle_pending_events(Manager *m);

/* Apply planned batch items (see batch_plan()): write each flag that differs,
 * then wait until every group's kernel frozen equals its effective flag.
 * With FREEZER_FLAG_ROLLBACK_ON_TIMEOUT a failed write or a timeout restores
 * every flag written, newest first.  op->writes and op->skipped count.  Only
 * flags the bus checked (ROLLBACK_ON_TIMEOUT, NO_WAIT, RECURSIVE, SKIP_MISSING). */
int manager_apply_batch(Manager *m, const BatchItem *items, size_t n, uint64_t timeout_usec, uint64_t flags,
                        operation_done_t done, void *userdata, sd_bus_error *error);

/* Answer the queued outcomes in order: successes, and failures with their
 * rollbacks.  The calls into the manager do at their end; the main loop does
 * once per turn, before signals are emitted. */
void manager_dispatch(Manager *m);
/* Fail every pending operation (Cancelled, "freezerd is shutting down"): their
 * replies are queued on their connections.  The model stays, so the bus
 * objects still work while the connections are flushed; manager_free() then. */
void manager_shutdown(Manager *m);

/* The owner (st_uid) of the cgroup.freeze of the group at path (an API path,
 * normalized here; the group need not be in the model), fstat'ed beneath the
 * root.  (uid_t) -1 when the directory has no cgroup.freeze (the hierarchy's
 * root).  On failure fills error (InvalidPath, NoSuchGroup...) and returns
 * -errno.  Nothing is added to the model. */
int manager_freeze_owner(Manager *m, const char *path, uid_t *ret, sd_bus_error *error);

/* What freezes g besides its own flag: the nearest ancestor in the model
 * whose flag is set (its API path), else the nearest group above the root
 * whose flag is (its absolute path, *ret_outer set), else NULL. */
const char *manager_frozen_by(Manager *m, const Group *g, bool *ret_outer);

/* Read cgroup.stat.local's frozen_usec fresh (0 where the kernel lacks it). */
int manager_group_frozen_usec(Manager *m, Group *g, uint64_t *ret);

/* Called by the main loop after every turn: nothing here by itself; the bus
 * layer pops changed groups from m->tree. */
