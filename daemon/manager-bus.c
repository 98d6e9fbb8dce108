/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config-build.h"
#include "access.h"
#include "bus-errors.h"
#include "cgroup-util.h"
#include "log.h"
#include "manager-bus.h"
#include "odd-groups.h"
#include "pressure.h"
#include "private-bus.h"

#define MANAGER_PATH "/org/freezerd/Freezer1"
#define GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define MANAGER_IFACE "org.freezerd.Freezer1.Manager"
#define GROUP_IFACE "org.freezerd.Freezer1.Group"

static sd_bus *manager_bus(Manager *m) {
        return m->bus_userdata;
}

static int group_object_path(const Group *g, char **ret) {
        return sd_bus_path_encode(GROUP_PREFIX, g->path, ret);
}

/* ---- who may do what (access.h has the rules) ------------------------------------------------------------ */

/* The caller of a method, its effective uid asked of the bus once, on first need. */
typedef struct Caller {
        sd_bus_message *msg;
        bool known;
        uid_t uid; /* ACCESS_UID_INVALID if the bus could not say */
} Caller;

#define CALLER(m) ((Caller) { .msg = (m), .uid = ACCESS_UID_INVALID })

/* The uid comes from the bus (dbus-daemon's SO_PEERCRED of the connection, or
 * the peer's on a direct connection).  AUGMENT may fill in what the bus does
 * not give from /proc/PID, which is racy (the PID may be reused by then): an
 * EUID that came from there is not trusted, and the caller counts as nobody. */
/* Asking the bus daemon for a caller's credentials is a round trip (made
 * ahead, asynchronously, by filter_caller_uid() below; synchronously here
 * where it could not be).  A connection's uid cannot change (it is
 * the SO_PEERCRED of its socket) and dbus-daemon never reuses a unique name,
 * so the answer is cached by unique name.  The cache is bounded: when full it
 * is simply emptied (entries of gone clients are otherwise never looked up
 * again). */
#define UID_CACHE_SLOTS 4096
static struct {
        char name[32];
        uid_t uid;
} uid_cache[UID_CACHE_SLOTS];
static unsigned uid_cache_used;

static unsigned uid_cache_slot(const char *name) {
        return string_hash(name) & (UID_CACHE_SLOTS - 1);
}

static bool uid_cache_get(const char *name, uid_t *ret) {
        for (unsigned i = uid_cache_slot(name), n = 0; n < UID_CACHE_SLOTS; i = (i + 1) & (UID_CACHE_SLOTS - 1), n++) {
                if (!uid_cache[i].name[0])
                        return false;
                if (streq(uid_cache[i].name, name)) {
                        *ret = uid_cache[i].uid;
                        return true;
                }
        }
        return false;
}

static void uid_cache_put(const char *name, uid_t uid) {
        unsigned i;

        if (strlen(name) >= sizeof uid_cache[0].name)
                return;
        if (uid_cache_used >= UID_CACHE_SLOTS / 2) {
                memset(uid_cache, 0, sizeof uid_cache);
                uid_cache_used = 0;
        }
        for (i = uid_cache_slot(name); uid_cache[i].name[0]; i = (i + 1) & (UID_CACHE_SLOTS - 1))
                if (streq(uid_cache[i].name, name))
                        return;
        strcpy(uid_cache[i].name, name);
        uid_cache[i].uid = uid;
        uid_cache_used++;
}

/* name left the bus after sending (a call without a reply wanted, or a
 * client that gave up): its name never comes back, so "nobody" is its answer
 * for good.  Once, not one warning and one round trip per call it left
 * queued. */
static void uid_cache_put_gone(const char *name) {
        log_warning("Cannot get the credentials of %s: it left the bus; refusing its changes", name);
        uid_cache_put(name, ACCESS_UID_INVALID);
}

/* The unique name of a call's sender on the bus; NULL on the private socket,
 * whose peer may put any sender in its messages (no bus daemon vouches for
 * it there): a private connection is known by its connection alone. */
static const char *bus_sender(sd_bus_message *msg) {
        return sd_bus_is_bus_client(sd_bus_message_get_bus(msg)) > 0 ? sd_bus_message_get_sender(msg) : NULL;
}

static uid_t caller_uid(Caller *c) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *sender = bus_sender(c->msg);
        uid_t uid;
        int r;

        if (c->known)
                return c->uid;
        c->known = true;
        /* Only unique names (":1.42") are stable identities worth caching. */
        if (sender && sender[0] == ':' && uid_cache_get(sender, &uid)) {
                c->uid = uid;
                return uid;
        }
        /* On the private socket, the peer's own credentials (SO_PEERCRED),
         * whatever sender its message names. */
        if (sd_bus_is_bus_client(sd_bus_message_get_bus(c->msg)) > 0)
                r = sd_bus_query_sender_creds(c->msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds);
        else
                r = sd_bus_get_owner_creds(sd_bus_message_get_bus(c->msg), SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT,
                                           &creds);
        if (r == -ENXIO && sender && sender[0] == ':') {
                uid_cache_put_gone(sender);
                return c->uid;
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot get the credentials of %s, refusing its changes: %m",
                                  sender ?: "a caller on the private socket");
                return c->uid;
        }
        if (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID) {
                log_warning("The bus did not give the effective uid of %s, refusing its changes",
                            sender ?: "a caller on the private socket");
                return c->uid;
        }
        r = sd_bus_creds_get_euid(creds, &uid);
        if (r < 0) {
                log_warning_errno(r, "Cannot get the effective uid of %s, refusing its changes: %m",
                                  sender ?: "a caller on the private socket");
                return c->uid;
        }
        c->uid = uid;
        if (sender && sender[0] == ':')
                uid_cache_put(sender, uid);
        return uid;
}

/* A new caller's uid without stalling the loop.  A method call that needs it
 * (UID_METHODS), from a unique name not in the cache, is held, and the bus is
 * asked for the name's uid with an asynchronous GetConnectionUnixUser; the
 * name's later calls are held behind it, in order.  The answer goes into the
 * cache, and the held calls are put back in sd-bus's read queue
 * (sd_bus_enqueue_for_read(), made for this), where they are dispatched as
 * though just read, and find the uid cached.  Meanwhile the loop goes on: the
 * kernel's events, the private socket and the other callers do not wait for
 * dbus-daemon (were it stopped, a synchronous call would hold freezerd for
 * sd-bus's 25 s).  Calls that need no uid go on at once, unless calls of the
 * same name are held (they keep their order).  Where nothing can be held (no
 * memory, the call cannot be sent), the call goes on and caller_uid() asks
 * synchronously, as it always may. */
#define UID_PENDING_MAX 256       /* names asked at a time; more go synchronously */
#define UID_HELD_PER_NAME 1024    /* calls held per name; more are refused */

typedef struct UidPending {
        char name[32];
        sd_bus_slot *slot;      /* the GetConnectionUnixUser call */
        sd_bus_message **held;  /* the calls, in order */
        size_t n_held, cap;
} UidPending;

static struct {
        UidPending *pending[UID_PENDING_MAX];
        size_t n_pending;
        /* Put back in the read queue: let through once, whatever the cache
         * says by then (an emptied cache falls back to caller_uid()'s own
         * question). */
        sd_bus_message **released;
        size_t n_released, released_cap;
        bool refusing; /* shutting down: calls go on, to be refused */
} uid_wait;

/* Not RemovePressureTrigger: a trigger is its connection's, whoever it is
 * (remove_pressure_trigger()), so it waits only behind the same name's held
 * calls, for their order. */
static const char *const UID_METHODS[] = {
        "Freeze", "Thaw", "ApplyBatch", "FreezeExcept", "GetGroup", "LookupGroup", "Track", "Untrack", "AddPressureTrigger",
};

static bool needs_uid(sd_bus_message *msg) {
        const char *iface = sd_bus_message_get_interface(msg), *member = sd_bus_message_get_member(msg);

        if (!iface || !member || (!streq(iface, MANAGER_IFACE) && !streq(iface, GROUP_IFACE)))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(UID_METHODS); i++)
                if (streq(member, UID_METHODS[i]))
                        return true;
        return false;
}

static UidPending *uid_pending_find(const char *name) {
        for (size_t i = 0; i < uid_wait.n_pending; i++)
                if (streq(uid_wait.pending[i]->name, name))
                        return uid_wait.pending[i];
        return NULL;
}

static void uid_pending_free(UidPending *p) {
        for (size_t i = 0; i < p->n_held; i++)
                sd_bus_message_unref(p->held[i]);
        sd_bus_slot_unref(p->slot);
        free(p->held);
        free(p);
}

static void uid_pending_remove(UidPending *p) {
        for (size_t i = 0; i < uid_wait.n_pending; i++)
                if (uid_wait.pending[i] == p) {
                        uid_wait.pending[i] = uid_wait.pending[--uid_wait.n_pending];
                        return;
                }
}

/* Append a reference to msg to the array *a of *n (room for *cap). */
static int messages_push(sd_bus_message ***a, size_t *n, size_t *cap, sd_bus_message *msg) {
        if (*n == *cap) {
                size_t c = *cap ? *cap * 2 : 4;
                sd_bus_message **b = reallocarray(*a, c, sizeof *b);
                if (!b)
                        return -ENOMEM;
                *a = b;
                *cap = c;
        }
        (*a)[(*n)++] = sd_bus_message_ref(msg);
        return 0;
}

/* Put msg back at the end of sd-bus's read queue, to be let through when it
 * comes out; where it cannot be, the caller is told nothing was done. */
static void uid_release(sd_bus *bus, sd_bus_message *msg) {
        int r;

        r = messages_push(&uid_wait.released, &uid_wait.n_released, &uid_wait.released_cap, msg);
        if (r < 0) {
                (void) sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_NO_MEMORY, "Out of memory; nothing was done");
                return;
        }
        r = sd_bus_enqueue_for_read(bus, msg);
        if (r < 0) {
                sd_bus_message_unref(uid_wait.released[--uid_wait.n_released]);
                (void) sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_FAILED,
                                                  "Cannot process the call (%s); nothing was done", strerror(-r));
        }
}

/* The answer: cache it (an error that says the name is gone caches "nobody",
 * as caller_uid() does), then release the held calls, in order. */
static int on_uid_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UidPending *p = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        sd_bus *bus = sd_bus_message_get_bus(reply);
        uint32_t uid;

        if (!e) {
                if (sd_bus_message_read(reply, "u", &uid) >= 0)
                        uid_cache_put(p->name, (uid_t) uid);
        } else if (sd_bus_error_has_name(e, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                uid_cache_put_gone(p->name);
        /* Other errors: not cached; caller_uid() asks again, and says why it fails. */

        uid_pending_remove(p);
        for (size_t i = 0; i < p->n_held; i++)
                uid_release(bus, p->held[i]);
        uid_pending_free(p);
        return 0;
}

static bool uid_released_take(sd_bus_message *msg) {
        for (size_t i = 0; i < uid_wait.n_released; i++)
                if (uid_wait.released[i] == msg) {
                        memmove(uid_wait.released + i, uid_wait.released + i + 1,
                                (uid_wait.n_released - i - 1) * sizeof *uid_wait.released);
                        uid_wait.n_released--;
                        sd_bus_message_unref(msg);
                        return true;
                }
        return false;
}

static bool uid_released_from(const char *sender) {
        for (size_t i = 0; i < uid_wait.n_released; i++)
                if (streq_ptr(sd_bus_message_get_sender(uid_wait.released[i]), sender))
                        return true;
        return false;
}

/* The first filter on the bus (filters run newest first): see above. */
static int filter_caller_uid(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        const char *sender = sd_bus_message_get_sender(msg);
        UidPending *p;
        uint8_t type;
        uid_t uid;
        int r;

        if (sd_bus_message_get_type(msg, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
                return 0;
        if (uid_wait.n_released > 0 && uid_released_take(msg))
                return 0;
        /* A later call of a name whose released calls are still in the read
         * queue goes behind them.  It can be ahead of them: while sd-bus waits
         * for a synchronous answer (caller_uid() with UID_PENDING_MAX names
         * asked), it queues whatever it reads, the answer about a held name
         * and that name's next call both, and the held calls go in behind. */
        if (uid_wait.n_released > 0 && sender && uid_released_from(sender)) {
                uid_release(sd_bus_message_get_bus(msg), msg);
                return 1;
        }
        if (uid_wait.refusing || !sender || sender[0] != ':' || strlen(sender) >= sizeof p->name)
                return 0;
        p = uid_pending_find(sender);
        if (!p) {
                if (!needs_uid(msg) || uid_cache_get(sender, &uid) || uid_wait.n_pending == UID_PENDING_MAX)
                        return 0;
                p = calloc(1, sizeof *p);
                if (!p)
                        return 0;
                strcpy(p->name, sender);
                r = sd_bus_call_method_async(sd_bus_message_get_bus(msg), &p->slot, "org.freedesktop.DBus",
                                             "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixUser",
                                             on_uid_reply, p, "s", sender);
                if (r < 0) {
                        free(p);
                        return 0;
                }
                uid_wait.pending[uid_wait.n_pending++] = p;
        }
        if (p->n_held >= UID_HELD_PER_NAME) {
                (void) sd_bus_reply_method_errorf(msg, BUS_ERROR_LIMITS_EXCEEDED,
                                                  "Too many calls sent before the bus said who %s is (at most %u); "
                                                  "nothing was done",
                                                  sender, UID_HELD_PER_NAME);
                return 1;
        }
        if (messages_push(&p->held, &p->n_held, &p->cap, msg) < 0) {
                (void) sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_NO_MEMORY, "Out of memory; nothing was done");
                return 1;
        }
        return 1;
}

void manager_bus_release_callers(bool refuse) {
        uid_wait.refusing = uid_wait.refusing || refuse;
        while (uid_wait.n_pending > 0) {
                UidPending *p = uid_wait.pending[--uid_wait.n_pending];
                if (refuse)
                        for (size_t i = 0; i < p->n_held; i++)
                                (void) sd_bus_reply_method_errorf(p->held[i], BUS_ERROR_CANCELLED,
                                                                  "freezerd is shutting down; nothing was done");
                uid_pending_free(p);
        }
        while (uid_wait.n_released > 0)
                sd_bus_message_unref(uid_wait.released[--uid_wait.n_released]);
        uid_wait.released = mfree(uid_wait.released);
        uid_wait.released_cap = 0;
}

/* The error says what was refused and on which path, nothing more (not the
 * owner, not the caller's uid).  quoted: the path as the message quotes it
 * (CG_NAMED(), or CG_NAMED_SHOWN() of a group freezerd does not follow); NULL:
 * the caller's uid is unknown.  outside: a lookup (GetGroup, Freeze...) of a
 * path outside the tracked subtrees, which would have tracked it. */
static int access_denied(AccessAction a, const char *quoted, bool outside, sd_bus_error *error) {
        const char *what = a == ACCESS_FREEZE ? "written" : "changed";

        if (!quoted)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Not allowed to %s: the caller's credentials are unknown; nothing was %s",
                                         access_action_to_string(a), what);
        if (outside)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s lies outside the tracked subtrees, and only root and the owner of its "
                                         "cgroup.freeze may have it tracked",
                                         quoted);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Not allowed to %s %s: only root and the owner of its cgroup.freeze may; "
                                 "nothing was %s",
                                 access_action_to_string(a), quoted, what);
}

/* May the caller do a to the group at path? 0, or -errno with error set:
 * AccessDenied, or a path error when the group cannot be looked up. */
static int check_access_path(Manager *m, Caller *c, AccessAction a, const char *path, bool outside,
                             sd_bus_error *error) {
        uid_t caller = caller_uid(c), owner = ACCESS_UID_INVALID;
        int r;

        if (access_needs_owner(a, caller)) {
                r = manager_freeze_owner(m, path, &owner, error);
                if (r < 0)
                        return r;
        }
        if (!access_allowed(a, caller, owner)) {
                r = access_denied(a, caller == ACCESS_UID_INVALID ? NULL : CG_NAMED(path), outside, error);
                return r < 0 ? r : -EACCES;
        }
        return 0;
}

/* The same for every group of a request (a batch, a RECURSIVE subtree,
 * FreezeExcept's cover): all of them or nothing.  The hierarchy's root is
 * skipped: every write path refuses it with InvalidPath anyway.  changing:
 * only the items whose flag would change need it, for the groups a RECURSIVE
 * request reaches without naming them: a delegated user's "thaw everything
 * below /" must not fail on a group of root's that is running anyway.  The
 * batch decides what it writes from the same flags in the same loop turn
 * (batch_plan() skips the others), so nothing it skips here is written.
 * checked_gen (0: none): the groups whose GroupData.expand_gen holds it passed
 * already (a RECURSIVE request's named groups, checked before the
 * expansion), and are not looked up again.  Sets BatchItem.gone of the items
 * it lets through because their lookup found no directory. */
static int check_access_groups(Manager *m, Caller *c, BatchItem *items, Group *const *groups, size_t n,
                               bool changing, uint64_t checked_gen, sd_bus_error *error) {
        _cleanup_free_ uid_t *owners = NULL;
        uid_t caller = caller_uid(c);
        bool lookup = access_needs_owner(ACCESS_FREEZE, caller);
        size_t denied;
        int r;

        owners = calloc(n ?: 1, sizeof *owners);
        if (!owners)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const Group *g = items ? items[i].group : groups[i];

                owners[i] = ACCESS_UID_INVALID;
                if (!lookup)
                        continue; /* the caller decides alone */
                if (!g->parent || (changing && items && items[i].freeze == g->freeze) ||
                    (checked_gen != 0 && g->userdata && group_data(g)->expand_gen == checked_gen)) {
                        owners[i] = caller; /* the root: left to validation; nothing to write; or passed */
                        continue;
                }
                r = manager_freeze_owner(m, g->path, &owners[i], error);
                if (r < 0 && items && items[i].unnamed && sd_bus_error_has_name(error, BUS_ERROR_NO_SUCH_GROUP)) {
                        /* Removed a moment ago (freezerd has not read its
                         * IN_DELETE), and one the batch leaves out if so
                         * (BatchItem.unnamed: below a RECURSIVE request, or
                         * named with SKIP_MISSING): failing the call here
                         * would fail it for the caller that may not look.
                         * It is left out without a write (BatchItem.gone):
                         * a write by path might reach a group made again
                         * under its name meanwhile, one the caller may not
                         * change. */
                        sd_bus_error_free(error);
                        owners[i] = caller;
                        items[i].gone = true;
                        continue;
                }
                if (r < 0)
                        return r;
        }
        denied = access_first_denied(ACCESS_FREEZE, caller, owners, n);
        if (denied < n) {
                Group *g = items ? items[denied].group : groups[denied];
                /* Its owner was read through the file kept open, or its path:
                 * a group removed and made again under its name a moment ago
                 * may be another caller's, or this caller's now.  The call
                 * starts over on the group there is (call_again_if_remade()),
                 * rather than be refused for one that is gone. */
                r = manager_group_check_exists(m, g);
                if (r == -ESTALE)
                        return r;
                r = access_denied(ACCESS_FREEZE, caller == ACCESS_UID_INVALID ? NULL : CG_NAMED(g->path), false, error);
                return r < 0 ? r : -EACCES;
        }
        return 0;
}

/* manager_resolve_group() on behalf of a caller.  A path outside the tracked
 * subtrees is tracked on the way: a Track, which only root and the owner of
 * the group may cause (AccessDenied otherwise, with nothing tracked).  "/" is
 * always an object (group_published()): its lookup tracks nothing; nor does
 * that of a group made a moment ago in a tracked subtree, before freezerd
 * read its inotify event: anyone may read it, as a moment later. */
static int resolve_group(Manager *m, Caller *c, const char *path, Group **ret, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL;
        Group *g;
        int r;

        if (cg_path_normalize(path, &norm, NULL) >= 0) {
                g = tree_get(m->tree, norm);
                if (g && group_published(g) && m->n_transient_roots == 0) {
                        *ret = g; /* every call's case: one lookup */
                        return 0;
                }
                if (manager_resolve_tracks(m, norm, false)) {
                        r = check_access_path(m, c, ACCESS_TRACK, norm, true, error);
                        if (r < 0)
                                return r;
                }
        }
        /* Malformed paths get manager_resolve_group()'s own answer. */
        return manager_resolve_group(m, path, ret, error);
}

/* ---- deferred replies ---------------------------------------------------------------------------------- */

/* A deferred reply that could not be sent.  A caller that went away meanwhile
 * needs nothing; any other caller still gets an answer: a reply (or an error
 * naming a path) that freezerd cannot build must not leave it waiting for
 * ever, with the writes made. */
static void reply_failed(sd_bus_message *call, int r) {
        const char *sender = sd_bus_message_get_sender(call) ?: "?";
        int k;

        if (r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE) {
                log_debug_errno(r, "Cannot send reply to %s: %m", sender);
                return;
        }
        log_warning_errno(r, "Cannot send reply to %s, sending an error instead: %m", sender);
        /* Failed, not the errno's own name: -EINVAL would read InvalidArgs,
         * blaming the caller for what freezerd could not build. */
        k = sd_bus_reply_method_errorf(call, SD_BUS_ERROR_FAILED, "freezerd could not build its reply: %s",
                                       strerror(-r));
        if (k < 0)
                log_warning_errno(k, "Cannot send an error to %s either: %m", sender);
}

static void reply_operation_done(Operation *op, const sd_bus_error *error, void *userdata) {
        sd_bus_message *call = userdata;
        int r;

        if (error && sd_bus_error_is_set(error))
                r = sd_bus_reply_method_error(call, error);
        else
                r = sd_bus_reply_method_return(call, NULL);
        if (r < 0)
                reply_failed(call, r);
        private_bus_call_held(op->manager->private_bus, call, false);
        sd_bus_message_unref(call);
}

typedef struct BatchReply {
        sd_bus_message *call;
        enum { REPLY_EMPTY, REPLY_COUNTS, REPLY_PATHS } kind;
        char **paths; /* FreezeExcept: the groups it froze */
        size_t n_paths;
        /* Thaw RECURSIVE: the groups below it that freezerd does not follow
         * (odd-groups.h), cleared once the batch succeeded
         * (reply_batch_done()); top is the call's path, for messages. */
        Manager *m;
        OddGroups odd;
        char *top;        /* NULL for ApplyBatch */
        size_t odd_writes; /* flags of odd written, counted in ApplyBatch's writes */
        unsigned missing;  /* ApplyBatch's SKIP_MISSING: the requests left out before the batch, in skipped */
} BatchReply;

static void batch_reply_free(BatchReply *b) {
        if (!b)
                return;
        odd_groups_clear(&b->odd);
        free(b->top);
        private_bus_call_held(b->m->private_bus, b->call, false);
        sd_bus_message_unref(b->call);
        for (size_t i = 0; i < b->n_paths; i++)
                free(b->paths[i]);
        free(b->paths);
        free(b);
}

/* The batch journal (journal.h) of the flags of odd about to be cleared, as a
 * batch's: a crash in the middle of their writes must not leave some of them
 * cleared, the others not (the restart writes back the ones cleared, as a
 * failed write does).  The groups it leaves out are marked skip, so that the
 * writes leave them out too.  Returns 1 and the slot if it made one, 0 if
 * nothing is to be written (or freezerd keeps no journals), or -errno. */
static int odd_groups_journal(Manager *m, OddGroups *odd, unsigned *ret_slot) {
        _cleanup_free_ JournalEntry *entries = NULL;
        _cleanup_free_ char **paths = NULL;
        size_t k = 0;
        int r;

        if (!m->journal)
                return 0;
        r = odd_groups_read(m->root_fd, odd);
        if (r < 0)
                return r;
        entries = calloc(odd->n, sizeof *entries);
        paths = calloc(odd->n, sizeof *paths);
        if (!entries || !paths)
                return -ENOMEM;
        for (size_t i = 0; i < odd->n; i++) {
                if (odd->items[i].skip || odd->items[i].id == 0 || !odd->items[i].prev) {
                        /* Left alone (check_access_odd()), gone, or nothing to
                         * clear: left alone by the writes too, for a flag set
                         * meanwhile would be cleared with no journal to put it
                         * back after a crash (a later freeze of its owner's,
                         * kept as check_access_odd() keeps one). */
                        odd->items[i].skip = true;
                        continue;
                }
                if (asprintf(&paths[k], "/%s", odd->items[i].rel) < 0) {
                        r = -ENOMEM;
                        break;
                }
                entries[k] = (JournalEntry) {
                        .path = paths[k],
                        .prev_freeze = true,
                        .new_freeze = false,
                        .cgroup_id = odd->items[i].id,
                };
                k++;
        }
        if (r >= 0 && k > 0)
                r = journal_begin(m->journal, ++m->journal_seq, journal_boot_id(), entries, k, ret_slot);
        for (size_t i = 0; i < k; i++)
                free(paths[i]);
        return r < 0 ? r : k > 0;
}

/* Clear the flags of b->odd, bottom-up.  On a failure the ones written are
 * written back, and the error names the group. */
static int odd_groups_thaw(Manager *m, BatchReply *b, sd_bus_error *error) {
        size_t failed = 0;
        unsigned slot = 0;
        int r, journaled;

        if (b->odd.n == 0)
                return 0;
        journaled = odd_groups_journal(m, &b->odd, &slot);
        if (journaled < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                         "The flags of the groups freezerd follows are written, but the journal of "
                                         "the groups below that it does not follow cannot be "
                                         "recorded in %s: %s; their flags are left as they were",
                                         m->runtime_dir, strerror(-journaled));
        /* It writes: b's call is accepted, not another one open meanwhile
         * (this runs from reply_batch_done() too). */
        manager_call_accept(m, b->call);
        r = odd_groups_write(m->root_fd, &b->odd, false, m->test_write_delay_usec, &failed);
        if (r < 0)
                odd_groups_restore(m->root_fd, &b->odd);
        if (journaled > 0) {
                int k = journal_end(m->journal, slot);
                if (k < 0)
                        log_warning_errno(k, "Cannot empty batch journal %s, removed it instead: %m",
                                          journal_slot_path(m->journal, slot));
        }
        if (r < 0) {
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                         "The flags of the groups freezerd follows are written, but %s, which it "
                                         "does not follow, cannot be thawed: %s; the flags of the groups freezerd "
                                         "does not follow are left as they were",
                                         CG_NAMED_SHOWN(b->odd.items[failed].shown), strerror(-r));
        }
        b->odd_writes = 0;
        for (size_t i = 0; i < b->odd.n; i++)
                b->odd_writes += b->odd.items[i].wrote;
        /* Each is thawed now, as the caller asked, written or not: one kept
         * for a retry at the next start is not written back there (as
         * group_flag_changed() does for the groups freezerd follows). */
        for (size_t i = 0; journal_has_retries(m->journal) && i < b->odd.n; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "/%s", b->odd.items[i].rel) >= 0)
                        journal_forget(m->journal, p, b->odd.items[i].id);
        }
        log_debug("%s%s: cleared %zu flags of groups freezerd does not follow.", b->top ? "Thaw of " : "Batch",
                  b->top ?: "", b->odd_writes);
        return 0;
}

static void reply_batch_done(Operation *op, const sd_bus_error *error, void *userdata) {
        BatchReply *b = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error odd_error = SD_BUS_ERROR_NULL;
        int r;

        /* A Thaw RECURSIVE clears the flags of the groups it does not follow
         * once its own are cleared (and confirmed, unless NO_WAIT), and only
         * if it succeeded: a batch refused, failed or rolled back never
         * touched them, so their tasks never ran for a call that did
         * nothing.  Their parents are thawed by then, and each of them is
         * still frozen by its own flag alone: clearing it thaws it in the
         * write (cgroup_do_freeze() updates frozen there), its tasks change
         * state once, and no waiting is needed. */
        if (!(error && sd_bus_error_is_set(error)) && odd_groups_thaw(b->m, b, &odd_error) < 0)
                error = &odd_error;

        if (error && sd_bus_error_is_set(error))
                r = sd_bus_reply_method_error(b->call, error);
        else if (b->kind == REPLY_COUNTS)
                r = sd_bus_reply_method_return(b->call, "uu", op->writes + (uint32_t) b->odd_writes,
                                               op->skipped + b->missing);
        else if (b->kind == REPLY_PATHS) {
                r = sd_bus_message_new_method_return(b->call, &reply);
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'a', "s");
                /* Not the groups left out, removed a moment ago (OpEntry.vanished). */
                for (unsigned i = 0; i < op->n_entries; i++)
                        if (op->entries[i].vanished && op->entries[i].index < b->n_paths)
                                b->paths[op->entries[i].index] = mfree(b->paths[op->entries[i].index]);
                for (size_t i = 0; r >= 0 && i < b->n_paths; i++)
                        if (b->paths[i])
                                r = sd_bus_message_append(reply, "s", b->paths[i]);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
        } else
                r = sd_bus_reply_method_return(b->call, NULL);
        if (r < 0)
                reply_failed(b->call, r);
        batch_reply_free(b);
}

/* Plan and start a batch; takes ownership of items and b. */
static int start_batch(Manager *m, BatchItem *items, size_t n, BatchOrder order, uint64_t timeout_usec,
                       uint64_t flags, BatchReply *b, sd_bus_error *error) {
        size_t planned;
        int r;

        r = batch_plan(items, n, order, &planned);
        if (r < 0) { /* (the order is validated before) */
                free(items);
                batch_reply_free(b);
                return bus_error_set_failed(error, r, "Cannot plan the batch: %s", strerror(-r));
        }
        r = manager_apply_batch(m, items, planned, timeout_usec, flags, reply_batch_done, b, error);
        free(items);
        if (r < 0) {
                batch_reply_free(b);
                return r;
        }
        return 1;
}

static int batch_reply_new(Manager *m, sd_bus_message *call, int kind, BatchReply **ret) {
        BatchReply *b = calloc(1, sizeof *b);
        if (!b)
                return -ENOMEM;
        b->m = m;
        b->call = sd_bus_message_ref(call);
        /* Its reply is deferred: a private connection waits for it (bus-event.c). */
        private_bus_call_held(m->private_bus, call, true);
        b->kind = kind;
        *ret = b;
        return 0;
}

/* Append item to the growing array *items (*n used of *cap). */
static int batch_items_push(BatchItem **items, size_t *n, size_t *cap, BatchItem item) {
        if (*n == *cap) {
                size_t nc = *cap ? *cap * 2 : 64;
                BatchItem *l = realloc(*items, nc * sizeof *l);
                if (!l)
                        return -ENOMEM;
                *items = l;
                *cap = nc;
        }
        (*items)[(*n)++] = item;
        return 0;
}

/* Append the subtree of g: its tracked groups.  Not the hierarchy's root,
 * which has no flag, nor, below a root that is not tracked, the ancestors
 * kept for their flags: a flag written there would freeze or thaw groups
 * freezerd does not follow. */
static int append_subtree(Group *g, bool freeze, BatchItem **items, size_t *n, size_t *cap, size_t *index) {
        for (Group *c = g; c; c = tree_next_preorder(g, c)) {
                if (!c->parent || !c->tracked)
                        continue;
                if (batch_items_push(items, n, cap,
                                     (BatchItem) { .group = c, .freeze = freeze, .index = *index, .unnamed = c != g }) < 0)
                        return -ENOMEM;
                (*index)++;
        }
        return 0;
}

/* RECURSIVE requests expanded to their subtrees' tracked groups, later
 * requests winning.  Taken from the last request back, each group is added
 * once, by the last request whose subtree holds it, and a group a later
 * request reached already stands for its whole subtree (that request walked
 * all of it), which is skipped: one visit per group however the requests
 * overlap, where copying each subtree would let 65,536 requests of "/" make
 * as many copies of the tree.  The result keeps the requests' order. */
static int expand_recursive(Manager *m, const BatchItem *items, size_t n, BatchItem **ret, size_t *ret_n) {
        _cleanup_free_ BatchItem *rev = NULL;
        _cleanup_free_ size_t *start = calloc(n ?: 1, sizeof *start); /* where each request's items begin */
        BatchItem *out;
        size_t rn = 0, rcap = 0, k = 0;
        uint64_t gen = ++m->expand_gen; /* from 1: 0 is every group's mark before its first */

        if (!start)
                return -ENOMEM;
        for (size_t i = n; i > 0; i--) {
                Group *top = items[i - 1].group;

                start[i - 1] = rn;
                for (Group *c = top; c;) {
                        GroupData *d = group_data(c);
                        if (d->expand_gen == gen) {
                                c = tree_next_preorder_skip(top, c);
                                continue;
                        }
                        d->expand_gen = gen;
                        if (c->parent && c->tracked &&
                            batch_items_push(&rev, &rn, &rcap, (BatchItem) { .group = c, .freeze = items[i - 1].freeze }) < 0)
                                return -ENOMEM;
                        c = tree_next_preorder(top, c);
                }
        }

        out = malloc((rn ?: 1) * sizeof *out);
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t end = i > 0 ? start[i - 1] : rn; /* request i's items end where i-1's begin */
                for (size_t j = start[i]; j < end; j++) {
                        out[k] = rev[j];
                        out[k].index = k;
                        k++;
                }
        }
        *ret = out;
        *ret_n = k;
        return 0;
}

/* odd-groups.h's question: whether parent/name is in the model. */
static int child_in_model(const char *parent, const char *name, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *p = NULL;

        if (asprintf(&p, "%s/%s", streq(parent, "/") ? "" : parent, name) < 0)
                return -ENOMEM;
        return !!tree_get(m->tree, p);
}

/* odd_child_find()'s question for FreezeExcept (refuse_odd_in_cover()): a
 * child the model lacks, with a name D-Bus can carry, may be one made a moment
 * ago, its IN_CREATE not read yet: it is added as that event would add it
 * (manager_resolve_group()), and followed if that works.  One freezerd could
 * not watch before (the inotify watch limit) fails again and stays out. */
static int child_in_model_or_added(const char *parent, const char *name, void *userdata) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        Manager *m = userdata;
        _cleanup_free_ char *p = NULL;
        Group *g;
        int r;

        r = child_in_model(parent, name, userdata);
        if (r != 0)
                return r;
        if (asprintf(&p, "%s/%s", streq(parent, "/") ? "" : parent, name) < 0)
                return -ENOMEM;
        r = manager_resolve_group(m, p, &g, &error);
        if (r == -ENOMEM)
                return r;
        return r >= 0;
}

/* The groups below g's subtree that freezerd does not follow (odd-groups.h),
 * bottom-up: the children of its tracked groups the model lacks, for their
 * names, their depth or a watch that could not be armed, and everything
 * below them.  Only the groups that had such a child are listed
 * (GroupData.unfollowed_children): a thaw of a big slice lists none.  An
 * untracked ancestor kept for its flag holds groups freezerd does not
 * follow anyway, whatever their names: left alone, as by the batch. */
static int collect_odd_children(Manager *m, Group *c, OddGroups *odd, sd_bus_error *error) {
        GroupData *d = group_data(c);
        _cleanup_free_ char *where = NULL, *named = NULL;
        int r;

        if (!c->tracked || !d || !d->unfollowed_children)
                return 0;
        r = odd_groups_collect(m->root_fd, c->path, child_in_model, m, odd, &where);
        /* where comes whole (one path, below PATH_MAX, escaped): the group it
         * names is at its end, below levels a quote (cg_quote(), its first and
         * last bytes only) would cut out, and only the whole path finds it.
         * Named whole, then. */
        if (where) {
                named = cg_quote_named_shown_whole(where);
                if (!named)
                        return sd_bus_error_set_errno(error, -ENOMEM);
        }
        if (r == -E2BIG)
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "Cannot thaw the groups below %s that freezerd does not follow: more than "
                                         "%d; nothing was written",
                                         CG_NAMED(c->path), ODD_GROUPS_MAX);
        if (r == -ENAMETOOLONG)
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "Cannot thaw the groups below %s, which freezerd does not follow: a group "
                                         "there is nested so deep that its path is longer than the kernel opens "
                                         "(PATH_MAX, %d bytes); nothing was written",
                                         named ?: CG_NAMED(c->path), PATH_MAX);
        if (r == -ENOENT)
                return 0; /* removed meanwhile: its rmdir is on its way */
        if (r < 0)
                return bus_error_set_failed(error, r, "Cannot list the groups below %s: %s; nothing was written",
                                            named ?: CG_NAMED(c->path), strerror(-r));
        return 0;
}

static int collect_odd_groups(Manager *m, Group *g, OddGroups *odd, sd_bus_error *error) {
        for (Group *c = g; c; c = tree_next_preorder(g, c)) {
                int r = collect_odd_children(m, c, odd, error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The same for a RECURSIVE ApplyBatch: the odd children of each group it
 * thaws.  Such a group is decided by the request that decides its followed
 * parent (the last one whose subtree holds it: none can name it), and the
 * expanded items name each followed group once, with that request's value;
 * all but the root, which no item names: root_thawed says whether the last
 * request of "/" thaws. */
static int collect_odd_batch(Manager *m, const BatchItem *items, size_t n, bool root_thawed, OddGroups *odd,
                             sd_bus_error *error) {
        int r = root_thawed ? collect_odd_children(m, tree_root(m->tree), odd, error) : 0;

        for (size_t i = 0; r >= 0 && i < n; i++)
                if (!items[i].freeze)
                        r = collect_odd_children(m, items[i].group, odd, error);
        return r;
}

/* check_access_groups() for the groups of odd, which a thaw clears: every
 * one whose flag would change, or nothing.  As for the groups of the model
 * (check_access_groups()), one the caller may not change whose flag is clear
 * already needs no permission: it is marked to be left alone, also should
 * someone set its flag before the thaw comes to it (odd_groups_write() runs
 * once the batch is confirmed): a "thaw everything below" of a delegated
 * user's subtree is not refused for a group of root's inside it that runs,
 * nor clears root's flag on it set meanwhile. */
static int check_access_odd(Manager *m, Caller *c, OddGroups *odd, sd_bus_error *error) {
        uid_t caller = caller_uid(c);

        if (!access_needs_owner(ACCESS_FREEZE, caller))
                return 0; /* the caller decides alone */
        for (size_t i = 0; i < odd->n; i++) {
                uid_t owner = ACCESS_UID_INVALID;
                bool flag = true;
                int r = odd_group_owner(m->root_fd, &odd->items[i], &owner);

                if (r == -ENOENT)
                        continue; /* gone: nothing to write */
                if (r < 0)
                        return bus_error_set_failed(error, r, "Cannot look up the owner of %s: %s",
                                                    CG_NAMED_SHOWN(odd->items[i].shown), strerror(-r));
                if (access_allowed(ACCESS_FREEZE, caller, owner))
                        continue;
                r = odd_group_read_flag(m->root_fd, &odd->items[i], &flag);
                if (r == -ENOENT || r == -ENODEV || (r >= 0 && !flag)) {
                        odd->items[i].skip = true;
                        continue;
                }
                r = access_denied(ACCESS_FREEZE,
                                  caller == ACCESS_UID_INVALID ? NULL : CG_NAMED_SHOWN(odd->items[i].shown), false,
                                  error);
                return r < 0 ? r : -EACCES;
        }
        return 0;
}

#define KNOWN_FLAGS (FREEZER_FLAG_ROLLBACK_ON_TIMEOUT | FREEZER_FLAG_NO_WAIT | FREEZER_FLAG_RECURSIVE)

/* Flags freezerd knows, valid for one method or another. */
#define ALL_FLAGS (KNOWN_FLAGS | FREEZER_FLAG_SKIP_MISSING)

/* The one check of a call's flags, named for its method: manager_freeze()
 * and manager_apply_batch() take these as checked. */
static int check_flags(uint64_t flags, uint64_t allowed, sd_bus_error *error) {
        uint64_t unknown = flags & ~ALL_FLAGS, misplaced = flags & ALL_FLAGS & ~allowed;
        /* A flag of another method is named as such: "Unknown flags 0x8" read
         * as if this freezerd were older than SKIP_MISSING. */
        const char *skip_missing = misplaced & FREEZER_FLAG_SKIP_MISSING ?
                                           "0x8 SKIP_MISSING applies to ApplyBatch only" : "",
                   *recursive = misplaced & FREEZER_FLAG_RECURSIVE ?
                                        "0x4 RECURSIVE applies to Freeze, Thaw and ApplyBatch only" : "",
                   *sep = *skip_missing && *recursive ? "; " : "";

        if (unknown)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown flags 0x%" PRIx64
                                         " (known: 0x1 ROLLBACK_ON_TIMEOUT, 0x2 NO_WAIT%s%s)%s%s%s%s",
                                         unknown,
                                         allowed & FREEZER_FLAG_RECURSIVE ? ", 0x4 RECURSIVE" : "",
                                         allowed & FREEZER_FLAG_SKIP_MISSING ? ", 0x8 SKIP_MISSING" : "",
                                         misplaced ? "; " : "", skip_missing, sep, recursive);
        if (misplaced)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Flag %s%s%s", skip_missing, sep, recursive);
        return 0;
}

static int start_freeze(Manager *m, Caller *c, sd_bus_message *call, Group *g, bool freeze, uint64_t timeout_usec,
                        uint64_t flags, sd_bus_error *error) {
        int r;

        r = check_flags(flags, KNOWN_FLAGS, error);
        if (r < 0)
                return r;

        if (flags & FREEZER_FLAG_RECURSIVE) {
                /* The whole subtree as one batch: thaws bottom-up, freezes top-down. */
                BatchItem *items = NULL;
                size_t n = 0, cap = 0, index = 0;
                BatchReply *b;

                _cleanup_(odd_groups_clear) OddGroups odd = {};

                /* The group the call names must pass whether its flag would
                 * change or not, as without RECURSIVE: only the groups below
                 * it, reached without being named, are checked only where a
                 * flag changes (check_access_groups()). */
                r = check_access_groups(m, c, NULL, &g, 1, false, 0, error);
                if (r < 0)
                        return r;
                /* Passed: not looked up again with its subtree below. */
                uint64_t checked = ++m->expand_gen;
                if (g->userdata)
                        group_data(g)->expand_gen = checked;
                r = append_subtree(g, freeze, &items, &n, &cap, &index);
                if (r < 0) {
                        free(items);
                        return r;
                }
                /* A thaw clears the groups freezerd does not follow too (for
                 * their names, their depth, the watch limit): "thaw everything
                 * below" must not leave one frozen, its tasks stopped, with a
                 * success.  A freeze needs nothing of them: the flags of their
                 * ancestors freeze them. */
                if (!freeze) {
                        r = collect_odd_groups(m, g, &odd, error);
                        if (r < 0) {
                                free(items);
                                return r;
                        }
                }
                if (n == 0 && odd.n == 0) {
                        free(items);
                        manager_call_accept(m, call); /* nothing to write: done */
                        return sd_bus_reply_method_return(call, NULL);
                }
                /* Every group of the subtree whose flag changes, or nothing. */
                r = check_access_groups(m, c, items, NULL, n, true, checked, error);
                if (r >= 0)
                        r = check_access_odd(m, c, &odd, error);
                if (r < 0) {
                        free(items);
                        return r;
                }
                r = batch_reply_new(m, call, REPLY_EMPTY, &b);
                if (r < 0) {
                        free(items);
                        return r;
                }
                b->odd = odd;
                odd = (OddGroups) {};
                b->top = strdup(g->path);
                if (!b->top) {
                        free(items);
                        batch_reply_free(b);
                        return -ENOMEM;
                }
                if (n == 0) {
                        /* Only groups freezerd does not follow (below "/",
                         * or below an untracked ancestor kept for its flag). */
                        free(items);
                        r = odd_groups_thaw(m, b, error);
                        if (r >= 0)
                                r = sd_bus_reply_method_return(call, NULL);
                        batch_reply_free(b);
                        return r;
                }
                return start_batch(m, items, n, BATCH_ORDER_AUTO, timeout_usec, flags, b, error);
        }

        r = check_access_groups(m, c, NULL, &g, 1, false, 0, error);
        if (r < 0)
                return r;

        sd_bus_message_ref(call);
        /* Its reply is deferred: a private connection waits for it (bus-event.c). */
        private_bus_call_held(m->private_bus, call, true);
        r = manager_freeze(m, g, freeze, timeout_usec, flags, reply_operation_done, call, error);
        if (r < 0) {
                private_bus_call_held(m->private_bus, call, false);
                sd_bus_message_unref(call);
                return r;
        }
        return 1; /* the reply is sent (or deferred) by reply_operation_done() */
}

/* ---- Manager object -------------------------------------------------------------------------------------- */

/* How often a call is handled over a group removed and made again under its
 * name, before its removal was read: each time, every kernel event is read
 * and handled first, so a second time means another rmdir and mkdir during
 * the call, and a third gives up. */
#define CALL_REMADE_TRIES 3

/* After a handling of msg that returned *r: whether to handle it again,
 * because a group of it was removed and made again under its name a moment
 * ago, before freezerd read the removal (the manager's -ESTALE, nothing
 * written: manager_handle_pending_events()).  The events are read and handled
 * now, and the message rewound: handled again, its paths reach the new
 * groups. */
static bool call_again_if_remade(Manager *m, sd_bus_message *msg, int *r, unsigned *tries, sd_bus_error *error) {
        bool remade = m->call_remade;

        m->call_remade = false;
        if (*r != -ESTALE || !remade || sd_bus_error_is_set(error))
                return false;
        if (++*tries >= CALL_REMADE_TRIES) {
                *r = sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP,
                                       "A group of the call was removed and made again under its name %u times "
                                       "while freezerd handled it; nothing was written",
                                       *tries);
                return false;
        }
        manager_handle_pending_events(m);
        *r = sd_bus_message_rewind(msg, true);
        return *r >= 0;
}

static int method_freeze_thaw(sd_bus_message *msg, Manager *m, bool freeze, sd_bus_error *error) {
        Caller c = CALLER(msg);
        const char *path;
        uint64_t timeout_usec, flags;
        Group *g;
        int r;

        r = sd_bus_message_read(msg, "stt", &path, &timeout_usec, &flags);
        if (r < 0)
                return r;
        /* Before the path: resolving one outside the tracked subtrees tracks
         * it, and a call refused for its flags must have done nothing. */
        r = check_flags(flags, KNOWN_FLAGS, error);
        if (r < 0)
                return r;
        r = resolve_group(m, &c, path, &g, error);
        if (r < 0)
                return r;
        return start_freeze(m, &c, msg, g, freeze, timeout_usec, flags, error);
}

/* The Manager methods that write flags: handler(msg), and again while
 * call_again_if_remade() says so.  Their lookups may track the paths they
 * name: one refused before it writes undoes that (manager_call_begin()). */
static int handle_until_not_remade(sd_bus_message *msg, void *userdata, sd_bus_message_handler_t handler,
                                   sd_bus_error *error) {
        unsigned tries = 0;
        int r;

        do {
                manager_call_begin(userdata, msg);
                r = handler(msg, userdata, error);
        } while (call_again_if_remade(userdata, msg, &r, &tries, error));
        manager_call_end(userdata, r < 0);
        return r;
}

static int freeze_call(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_freeze_thaw(msg, userdata, true, error);
}

static int thaw_call(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return method_freeze_thaw(msg, userdata, false, error);
}

static int method_freeze(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return handle_until_not_remade(msg, userdata, freeze_call, error);
}

static int method_thaw(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return handle_until_not_remade(msg, userdata, thaw_call, error);
}

static int reply_group_object(sd_bus_message *msg, const Group *g) {
        _cleanup_free_ char *object = NULL;
        int r = group_object_path(g, &object);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "o", object);
}

/* A read, open to everyone, as long as the group is published (tracked, or
 * "/").  A group outside the tracked subtrees would be tracked (published,
 * watched, and remembered across restarts): that is a Track, with Track's
 * rule. */
static int method_get_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        const char *path;
        Group *g;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        r = resolve_group(m, &c, path, &g, error);
        if (r < 0)
                return r;
        return reply_group_object(msg, g);
}

/* ---- transient lookups ---------------------------------------------------------------------------------- */

/* Whether h is the caller's: its unique name on the bus, its connection on
 * the private socket (whose peer may put any sender in its messages). */
static bool hold_is(const TransientHold *h, const char *sender, sd_bus *connection) {
        return sender ? h->name && streq(h->name, sender) : h->connection == connection;
}

static bool root_held(Manager *m, const char *root) {
        for (TransientHold *h = m->transient_holds; h; h = h->next)
                if (streq(h->root, root))
                        return true;
        return false;
}

/* The holds of a caller that left (sender, or connection) go; each root
 * none holds any more is released (manager_release_transient()). */
static void holds_drop(Manager *m, const char *sender, sd_bus *connection) {
        TransientHold *gone = NULL;

        for (TransientHold **p = &m->transient_holds; *p;) {
                TransientHold *h = *p;

                if (!hold_is(h, sender, connection)) {
                        p = &h->next;
                        continue;
                }
                *p = h->next;
                h->next = gone;
                gone = h;
        }
        /* Released once all of them are out: a release fails waiting calls,
         * whose replies may end in other callbacks. */
        while (gone) {
                TransientHold *h = gone;

                gone = h->next;
                if (!root_held(m, h->root))
                        manager_release_transient(m, h->root);
                free(h->root);
                free(h->name);
                sd_bus_unref(h->connection);
                free(h);
        }
}

static void on_holder_gone(NameTrack *t, const char *name, void *userdata) {
        holds_drop(userdata, name, NULL);
}

/* The caller of msg holds root (once, however often it asks).  On failure
 * (-errno, error set), a root none holds is released again. */
static int hold_add(Manager *m, sd_bus_message *msg, const char *root, sd_bus_error *error) {
        const char *sender = bus_sender(msg);
        sd_bus *connection = sd_bus_message_get_bus(msg);
        TransientHold *h;
        int r;

        for (h = m->transient_holds; h; h = h->next)
                if (streq(h->root, root) && hold_is(h, sender, connection))
                        return 0;
        h = calloc(1, sizeof *h);
        if (!h || !(h->root = strdup(root)) || (sender && !(h->name = strdup(sender)))) {
                r = -ENOMEM;
                goto fail;
        }
        if (sender) {
                /* Its name leaving ends its holds (on_holder_gone()); on the
                 * private socket, its connection's end
                 * (manager_bus_connection_closed()). */
                r = m->transient_names ? 0 : name_track_new(connection, on_holder_gone, m, &m->transient_names);
                if (r >= 0)
                        r = name_track_add(m->transient_names, sender);
                if (r < 0)
                        goto fail;
        } else
                h->connection = sd_bus_ref(connection);
        h->next = m->transient_holds;
        m->transient_holds = h;
        return 0;
fail:
        if (h) {
                free(h->root);
                free(h->name);
                free(h);
        }
        if (!root_held(m, root))
                manager_release_transient(m, root);
        return bus_error_set_failed(error, r, "Cannot follow the caller of a transient lookup of %s: %s",
                                    CG_NAMED(root), strerror(-r));
}

/* GetGroup() with flags.  FREEZER_LOOKUP_TRANSIENT: a group outside the
 * tracked subtrees is tracked as a transient root, held by the caller (its
 * unique name, or its private connection) and by every other caller that
 * looks it (or a group in it) up so, and untracked once the last of them
 * has left: not kept in tracked.json.  Tracking it is a Track all the same
 * (root, or the owner of its cgroup.freeze).  A call that tracks it for good
 * meanwhile (Track(), a lookup for good of a group in it, the configuration)
 * makes it an ordinary root. */
static int method_lookup_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        _cleanup_free_ char *norm = NULL, *root = NULL;
        const char *path;
        uint64_t flags;
        Group *g;
        int r;

        if (m->test_no_lookup_group)
                return sd_bus_error_setf(error, SD_BUS_ERROR_UNKNOWN_METHOD,
                                         "Unknown method LookupGroup or interface " MANAGER_IFACE ".");
        r = sd_bus_message_read(msg, "st", &path, &flags);
        if (r < 0)
                return r;
        if (flags & ~(uint64_t) FREEZER_LOOKUP_TRANSIENT)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown flags 0x%" PRIx64 " (known: 0x1 TRANSIENT)",
                                         flags & ~(uint64_t) FREEZER_LOOKUP_TRANSIENT);
        if (!(flags & FREEZER_LOOKUP_TRANSIENT)) {
                r = resolve_group(m, &c, path, &g, error);
                if (r < 0)
                        return r;
                return reply_group_object(msg, g);
        }
        /* Malformed paths get manager_lookup_transient()'s own answer. */
        if (cg_path_normalize(path, &norm, NULL) >= 0 && manager_resolve_tracks(m, norm, true)) {
                r = check_access_path(m, &c, ACCESS_TRACK, norm, true, error);
                if (r < 0)
                        return r;
        }
        r = manager_lookup_transient(m, path, &g, &root, error);
        if (r < 0)
                return r;
        if (root) {
                r = hold_add(m, msg, root, error);
                if (r < 0)
                        return r;
        }
        return reply_group_object(msg, g);
}

static int method_track(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        const char *path;
        Group *g;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        /* The path is validated by the owner's lookup, before the decision. */
        r = check_access_path(m, &c, ACCESS_TRACK, path, false, error);
        if (r < 0)
                return r;
        r = manager_track(m, path, true, &g, error);
        if (r < 0)
                return r;
        return reply_group_object(msg, g);
}

/* Signals are sent only while someone asked for them, as systemd's Manager
 * does: a storm over 10,000 groups is a megabyte through dbus-daemon, which
 * parses it whether or not anyone listens.  Subscribe() asks for every signal:
 * GroupsChanged and one PropertiesChanged per changed group object (a message
 * per object, to everyone with a match).  SubscribeGroups() asks for
 * GroupsChanged alone, one message per loop turn for all the groups that
 * changed: what libfreezer's state callback and `freezectl watch` follow.
 * SubscribeGroupStates() asks for GroupStatesChanged alone: the same entries
 * with groups named by Id in arrays of numbers, a fifth of the bytes and
 * nothing to parse per entry, for clients that follow thousands of groups.
 * Each call needs its own Unsubscribe*(), and a client's subscriptions end
 * when it leaves the bus.  On the private socket, the connection counts them
 * (private-bus.h).  Open to everyone: they show nothing a Get does not. */
/* userdata: the Manager's Subscribers of the method (SD_BUS_METHOD_WITH_ARGS_OFFSET). */
static int method_subscribe(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Subscribers *s = userdata;
        int r;

        if (!bus_sender(msg)) { /* a private connection */
                r = private_bus_subscribe(s->manager->private_bus, sd_bus_message_get_bus(msg), s->kind, true);
                if (r < 0)
                        return bus_error_set_failed(error, r, "Cannot subscribe: %s", strerror(-r));
                return sd_bus_reply_method_return(msg, NULL);
        }
        if (!s->names) {
                r = name_track_new(sd_bus_message_get_bus(msg), NULL, NULL, &s->names);
                if (r < 0)
                        return bus_error_set_failed(error, r, "Cannot subscribe: %s", strerror(-r));
        }
        /* Each Subscribe() needs its own Unsubscribe(), as in systemd.  A
         * failure is freezerd's (the match on the caller's name, sent to the
         * bus: a full queue is ENOBUFS). */
        r = name_track_add(s->names, bus_sender(msg));
        if (r < 0)
                return bus_error_set_failed(error, r, "Cannot subscribe: %s", strerror(-r));
        return sd_bus_reply_method_return(msg, NULL);
}

/* Unsubscribe*(): the member with its "Uns" turned
 * into "S" names the call it undoes. */
static int method_unsubscribe(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Subscribers *s = userdata;
        const char *member = sd_bus_message_get_member(msg);
        int r;

        /* r: 1 undone, 0 nothing to undo. */
        if (!bus_sender(msg)) {
                r = private_bus_subscribe(s->manager->private_bus, sd_bus_message_get_bus(msg), s->kind, false);
                if (r == -ESRCH)
                        r = 0;
                else if (r >= 0)
                        r = 1;
        } else
                r = name_track_remove(s->names, bus_sender(msg), false);
        if (r < 0)
                return bus_error_set_failed(error, r, "Cannot unsubscribe: %s", strerror(-r));
        if (r == 0)
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUBSCRIBED, "This client has not called S%s()",
                                         member + strlen("Uns"));
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_untrack(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        _cleanup_free_ char *norm = NULL;
        const char *path;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        /* A malformed path or one that is not a tracked subtree gets
         * manager_untrack()'s own answer; then the decision.  A subtree whose
         * cgroup is gone has no owner left: only root may drop it. */
        if (cg_path_normalize(path, &norm, NULL) >= 0 && manager_is_track_root(m, norm)) {
                uid_t caller = caller_uid(&c), owner = ACCESS_UID_INVALID;

                if (access_needs_owner(ACCESS_UNTRACK, caller) && manager_freeze_owner(m, norm, &owner, NULL) < 0)
                        owner = ACCESS_UID_INVALID;
                if (!access_allowed(ACCESS_UNTRACK, caller, owner))
                        return access_denied(ACCESS_UNTRACK, caller == ACCESS_UID_INVALID ? NULL : CG_NAMED(norm),
                                             false, error);
        }
        r = manager_untrack(m, path, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int cmp_group_paths(const void *a, const void *b) {
        return strcmp((*(const Group *const *) a)->path, (*(const Group *const *) b)->path);
}

/* Replies to msg with an array of one entry per group object, sorted by path
 * (byte order: strcmp()), so that a client can bisect it, diff two listings
 * in one pass, or show it as it comes; the tree's own order follows its hash
 * tables.  One array of pointers and one qsort() for the lot (at 10,000
 * groups, about 130,000 strcmp() of short paths), next to the 10,000 entries
 * the message encodes.  append adds g's entry (of signature entry) to reply. */
static int reply_group_list(sd_bus_message *msg, Manager *m, const char *entry,
                            int (*append)(sd_bus_message *reply, const Group *g)) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ const Group **groups = NULL;
        Group *root = tree_root(m->tree);
        size_t n = 0, n_allocated = tree_published(m->tree);
        int r;

        groups = reallocarray(NULL, n_allocated, sizeof *groups);
        if (!groups)
                return -ENOMEM;
        for (Group *g = root; g; g = tree_next_preorder(root, g)) {
                if (!group_published(g))
                        continue;
                r = GROW_ARRAY(groups, n_allocated, n + 1, 16); /* should tree_published() ever fall short */
                if (r < 0)
                        return r;
                groups[n++] = g;
        }
        qsort(groups, n, sizeof *groups, cmp_group_paths);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', entry);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                r = append(reply, groups[i]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int append_list_entry(sd_bus_message *reply, const Group *g) {
        _cleanup_free_ char *object = NULL;
        int r = group_object_path(g, &object);

        if (r < 0)
                return r;
        return sd_bus_message_append(reply, "(sos)", g->path, object, freezer_state_to_string(g->state));
}

static int method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_group_list(msg, userdata, "(sos)", append_list_entry);
}

static int append_id_entry(sd_bus_message *reply, const Group *g) {
        return sd_bus_message_append(reply, "(st)", g->path, g->id);
}

/* (Path, Id) of every group object, in the order of ListGroups: what a
 * client of GroupStatesChanged starts from (InterfacesAdded brings the Id of
 * each group made later). */
static int method_list_group_ids(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return reply_group_list(msg, userdata, "(st)", append_id_entry);
}

static void paths_freep(char ***l) {
        for (char **i = *l; i && *i; i++)
                free(*i);
        free(*l);
}

static int cmp_paths(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The requests of an ApplyBatch with SKIP_MISSING whose groups do not exist
 * (NoSuchGroup), each path once, as batch_plan() keeps one request a group.
 * Not a path that a later request of the call found (items[0..n_items)): made
 * meanwhile (a mkdir while freezerd looked up the requests between them), it
 * is that group's, written or skipped as set, and counted there once. */
static unsigned count_missing(Manager *m, char **paths, size_t n, const BatchItem *items, size_t n_items) {
        uint64_t found = 0;
        unsigned k = 0;

        if (n == 0)
                return 0;
        if (n_items > 0) {
                found = ++m->expand_gen;
                for (size_t i = 0; i < n_items; i++)
                        if (items[i].group->userdata)
                                group_data(items[i].group)->expand_gen = found;
        }
        qsort(paths, n, sizeof *paths, cmp_paths);
        for (size_t i = 0; i < n; i++)
                if (i == 0 || !streq(paths[i], paths[i - 1])) {
                        const Group *g = found ? tree_get(m->tree, paths[i]) : NULL;

                        if (g && g->userdata && group_data(g)->expand_gen == found) {
                                log_debug("Batch: %s did not exist at a request, and did at a later one: "
                                          "not left out.",
                                          CG_QUOTE(paths[i]));
                                continue;
                        }
                        log_debug("Batch: %s does not exist, left out (SKIP_MISSING).", CG_QUOTE(paths[i]));
                        k++;
                }
        return k;
}

static int apply_batch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        _cleanup_free_ BatchItem *items = NULL;
        _cleanup_(odd_groups_clear) OddGroups odd = {};
        _cleanup_(paths_freep) char **missing = NULL; /* SKIP_MISSING: the paths left out */
        size_t n = 0, cap = 0, n_requests = 0, n_missing = 0;
        const char *order_str;
        uint64_t timeout_usec, flags, checked = 0, gone_gen = 0; /* the named groups passed, for RECURSIVE */
        unsigned skipped_missing = 0;
        bool skip_missing;
        BatchOrder order;
        BatchReply *b;
        int r;

        /* The flags and the order come after the requests, but are checked
         * first: resolving a request's path outside the tracked subtrees
         * tracks it, for good, and a call refused for its flags (a client
         * probing whether freezerd knows one) must have done nothing.  The
         * flags also decide what a request whose group does not exist does.
         * So is their number, for the same reason. */
        r = sd_bus_message_enter_container(msg, 'a', "(sb)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_skip(msg, "(sb)")) > 0)
                if (++n_requests > BATCH_MAX_REQUESTS)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "A batch holds at most %d requests; nothing was written",
                                                 BATCH_MAX_REQUESTS);
        if (r < 0)
                return r;
        n_requests = 0;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "stt", &order_str, &timeout_usec, &flags);
        if (r < 0)
                return r;
        r = check_flags(flags, KNOWN_FLAGS | FREEZER_FLAG_SKIP_MISSING, error);
        if (r < 0)
                return r;
        order = batch_order_from_string(order_str);
        if (order < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown order \"%s\" (expected auto, top-down or bottom-up)",
                                         CG_QUOTE(order_str));
        skip_missing = flags & FREEZER_FLAG_SKIP_MISSING;
        r = sd_bus_message_rewind(msg, true);
        if (r < 0)
                return r;

        /* Validate everything before anything is written. */
        r = sd_bus_message_enter_container(msg, 'a', "(sb)");
        if (r < 0)
                return r;
        for (;;) {
                const char *path;
                int freeze;
                Group *g;

                r = sd_bus_message_read(msg, "(sb)", &path, &freeze);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                n_requests++; /* at most BATCH_MAX_REQUESTS: counted above */
                r = resolve_group(m, &c, path, &g, error);
                if (r < 0 && skip_missing && sd_bus_error_has_name(error, BUS_ERROR_NO_SUCH_GROUP)) {
                        /* Not there (nor made a moment ago: resolve_group()
                         * adds such a group): left out, as asked.  Only
                         * NoSuchGroup: a malformed path, one freezerd does
                         * not follow, or any other error still fails the
                         * call, nothing written. */
                        _cleanup_free_ char *norm = NULL;

                        sd_bus_error_free(error);
                        if (cg_path_normalize(path, &norm, NULL) < 0)
                                norm = strdup(path);
                        if (!norm)
                                return -ENOMEM;
                        char **l = reallocarray(missing, n_missing + 2, sizeof *l);
                        if (!l)
                                return -ENOMEM;
                        missing = l;
                        missing[n_missing++] = TAKE_PTR(norm);
                        missing[n_missing] = NULL;
                        continue;
                }
                if (r < 0) {
                        /* Name the request as well as the path. */
                        _cleanup_free_ char *msg_copy = strdup(error->message ?: "");
                        _cleanup_free_ char *name = strdup(error->name ?: SD_BUS_ERROR_FAILED);
                        sd_bus_error_free(error);
                        return sd_bus_error_setf(error, name ?: SD_BUS_ERROR_FAILED,
                                                 "Request %zu: %s; nothing was written", n_requests - 1,
                                                 msg_copy ?: "");
                }
                /* index: the request's own, for messages, also when some
                 * before it were left out. */
                if (batch_items_push(&items, &n, &cap,
                                     (BatchItem) { .group = g,
                                                   .freeze = freeze,
                                                   .index = n_requests - 1,
                                                   .unnamed = skip_missing,
                                                   .counted = skip_missing }) < 0)
                        return -ENOMEM;
        }
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "stt", &order_str, &timeout_usec, &flags);
        if (r < 0)
                return r;

        if (n_requests == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "The batch is empty");
        skipped_missing = count_missing(m, missing, n_missing, items, n);
        if (n == 0) { /* every request left out */
                manager_call_accept(m, msg);
                return sd_bus_reply_method_return(msg, "uu", 0, skipped_missing);
        }

        if (flags & FREEZER_FLAG_RECURSIVE) {
                BatchItem *expanded = NULL;
                size_t en = 0;
                bool root_thawed = false;

                /* Every group the batch names, whether its flag would change
                 * or not, as without RECURSIVE (also one that a later
                 * request's subtree decides): the groups below them, reached
                 * without being named, are checked after the expansion. */
                r = check_access_groups(m, &c, items, NULL, n, false, 0, error);
                if (r < 0)
                        return r;
                for (size_t i = n; i > 0; i--)
                        if (!items[i - 1].group->parent) {
                                root_thawed = !items[i - 1].freeze;
                                break;
                        }
                r = expand_recursive(m, items, n, &expanded, &en);
                if (r < 0)
                        return r;
                /* The named groups passed: not looked up again among the
                 * expanded ones (marked after the expansion, which marks
                 * every group it visits).  Those the check let through as
                 * gone (BatchItem.gone: SKIP_MISSING) are marked apart, so
                 * that their expanded items are left out without a write
                 * too. */
                checked = ++m->expand_gen;
                gone_gen = ++m->expand_gen;
                for (size_t i = 0; i < n; i++)
                        if (items[i].group->userdata)
                                group_data(items[i].group)->expand_gen = items[i].gone ? gone_gen : checked;
                free(items);
                items = expanded;
                n = en;
                /* The groups below, reached without being named, are left out
                 * if removed a moment ago (BatchItem.unnamed); the named ones
                 * fail the call, but with SKIP_MISSING, where they are left
                 * out too, counted. */
                for (size_t i = 0; i < n; i++) {
                        uint64_t mark = items[i].group->userdata ? group_data(items[i].group)->expand_gen : 0;
                        bool named = mark == checked || mark == gone_gen;
                        items[i].unnamed = !named || skip_missing;
                        items[i].counted = named && skip_missing;
                        items[i].gone = mark == gone_gen;
                }
                /* A thaw clears the groups freezerd does not follow too, as
                 * Thaw RECURSIVE does (start_freeze()). */
                r = collect_odd_batch(m, items, n, root_thawed, &odd, error);
                if (r < 0)
                        return r;
                if (n == 0 && odd.n == 0) {
                        manager_call_accept(m, msg); /* nothing to write: done */
                        return sd_bus_reply_method_return(msg, "uu", 0, skipped_missing);
                }
        } else
                for (size_t i = 0; i < n; i++)
                        if (!items[i].group->parent)
                                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH,
                                                         "Request %zu: / is freezerd's cgroup root (%s) and cannot "
                                                         "be frozen or thawed; nothing was written",
                                                         items[i].index, m->cgroup_root);

        /* Every group the batch names, or nothing; of a RECURSIVE one's subtrees, every
         * group whose flag changes (the named ones passed above). */
        r = check_access_groups(m, &c, items, NULL, n, flags & FREEZER_FLAG_RECURSIVE, checked, error);
        if (r >= 0)
                r = check_access_odd(m, &c, &odd, error);
        if (r < 0)
                return r;

        r = batch_reply_new(m, msg, REPLY_COUNTS, &b);
        if (r < 0)
                return r;
        b->odd = odd;
        odd = (OddGroups) {};
        b->missing = skipped_missing;
        if (n == 0) {
                /* Only groups freezerd does not follow (below "/"). */
                r = odd_groups_thaw(m, b, error);
                if (r >= 0)
                        r = sd_bus_reply_method_return(msg, "uu", (uint32_t) b->odd_writes, skipped_missing);
                batch_reply_free(b);
                return r;
        }
        return start_batch(m, TAKE_PTR(items), n, order, timeout_usec, flags, b, error);
}

static int method_apply_batch(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return handle_until_not_remade(msg, userdata, apply_batch, error);
}

/* FreezeExcept leaves an excluded branch running by freezing, at each
 * level from top down to it, the siblings of the branch, each by its own
 * flag (batch_cover_except()).  A sibling freezerd does not follow
 * (odd-groups.h) would be left out of that cover, its tasks running: for its
 * name, its path could not go into the reply either (a D-Bus string is
 * UTF-8); for a watch that could not be armed (the inotify watch limit), it
 * has no watch to confirm its freeze by.  Refuse, before anything is
 * written, naming it.  (Not for its depth: a group the cover splits is an
 * ancestor of a followed one, its children at most GROUP_DEPTH_MAX deep.)
 * Unfollowed groups elsewhere are no matter: inside an excluded subtree they
 * are meant to run, inside a group of the cover they freeze with it.  The
 * groups split so are the ancestors of the excluded ones, from top down,
 * that no exclusion holds; each is listed once (expand_gen marks the
 * excluded groups, then the ones listed), and only if it ever had such a
 * child (GroupData.unfollowed_children).  adopt: the pass before the cover is
 * made, which adds the children made a moment ago (child_in_model_or_added())
 * so that the cover holds them, as it would a moment later; the refusal is
 * left to the pass after the other checks (the XML's "Order of checks"). */
static int refuse_odd_in_cover(Manager *m, Group *top, Group *const *excluded, size_t n_excluded, bool adopt,
                               sd_bus_error *error) {
        uint64_t gen_x = ++m->expand_gen, gen_done;

        for (size_t i = 0; i < n_excluded; i++)
                group_data(excluded[i])->expand_gen = gen_x;
        gen_done = ++m->expand_gen;

        for (size_t i = 0; i < n_excluded; i++)
                for (Group *a = excluded[i]->parent; a; a = a == top ? NULL : a->parent) {
                        _cleanup_free_ char *odd = NULL;
                        bool reached = true, by_name;
                        int r;

                        if (group_data(a)->expand_gen == gen_done)
                                break; /* listed, and its ancestors too */
                        for (Group *b = a; reached; b = b->parent) {
                                reached = group_data(b)->expand_gen != gen_x;
                                if (b == top)
                                        break;
                        }
                        if (!reached)
                                break; /* inside an excluded subtree: so are its ancestors up to that one */
                        group_data(a)->expand_gen = gen_done;
                        if (!a->tracked)
                                continue; /* kept for its flag: holds unfollowed groups anyway (README) */
                        if (!group_data(a)->unfollowed_children)
                                continue; /* never had one: no listing, as collect_odd_groups() */
                        r = odd_child_find(m->root_fd, a->path, adopt ? child_in_model_or_added : child_in_model, m,
                                           &odd, &by_name);
                        if (adopt && r != -ENOMEM)
                                continue; /* whatever it found is refused by the next pass */
                        if (r < 0)
                                return bus_error_set_failed(error, r,
                                                            "Cannot list the groups below %s: %s; nothing was "
                                                            "written",
                                                            CG_NAMED(a->path), strerror(-r));
                        /* odd is its whole path, quoted as one (cut as
                         * one, in double quotes where it starts or ends
                         * with white space, as its parent's name may). */
                        if (odd && by_name)
                                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                                         "Cannot freeze %s apart from its siblings: freezerd does "
                                                         "not follow it, as its name is not UTF-8 that D-Bus can "
                                                         "carry, or holds a control character; freeze %s as a whole "
                                                         "(or rename that group); nothing was written",
                                                         CG_NAMED_SHOWN(odd), CG_NAMED(a->path));
                        /* Track() of a tracked group looks again for the
                         * children it lacks (manager_rescan()).  The group is
                         * named once, as a path is: a Track("...") to paste
                         * would need its '"' and backslashes escaped, and
                         * whole, which a quote of a long path is not. */
                        if (odd)
                                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                                         "Cannot freeze %s apart from its siblings: freezerd does "
                                                         "not follow it, as it could not watch it (the inotify watch "
                                                         "limit, fs.inotify.max_user_watches, was reached, or no file "
                                                         "descriptor was left: see its log); freeze %s as a whole, "
                                                         "or raise the limit and Track() that group again to follow "
                                                         "it; nothing was written",
                                                         CG_NAMED_SHOWN(odd), CG_NAMED(a->path));
                }
        return 0;
}

/* FreezeExcept's checks of its exclusions that need no lookup, made before
 * any (msg at the exclusions): a lookup of a path outside the tracked
 * subtrees tracks it, for good, and a refused call must have tracked
 * nothing.  Their number; an exclusion outside path (a malformed one, or a
 * path that is malformed itself, is left to the lookups, which name why),
 * which is NoSuchGroup where it does not exist, as its lookup would say (a
 * path given relative to the cgroup2 mount, not to freezerd's root, is such
 * a path, and freezectl's hint for it needs NoSuchGroup).  Where path itself
 * does not exist its lookup says so first. */
static int except_args_check(Manager *m, sd_bus_message *msg, const char *path, sd_bus_error *error) {
        _cleanup_free_ char *top = NULL;
        struct stat st;
        size_t n = 0, l;
        bool check;
        int r;

        /* Only over a top that is a group: one that is not (missing, a
         * file) gets its own error from its lookup. */
        check = cg_path_normalize(path, &top, NULL) >= 0 &&
                (tree_get(m->tree, top) ||
                 (fstatat(m->root_fd, top + 1, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode)));
        l = top ? strlen(top) : 0;
        r = sd_bus_message_enter_container(msg, 'a', "s");
        if (r < 0)
                return r;
        for (;;) {
                _cleanup_free_ char *norm = NULL;
                const char *x;

                r = sd_bus_message_read(msg, "s", &x);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (++n > BATCH_MAX_EXCLUDES)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "At most %d exclusions; nothing was written", BATCH_MAX_EXCLUDES);
                if (!check || cg_path_normalize(x, &norm, NULL) < 0)
                        continue;
                if (!streq(norm, top) && (streq(top, "/") || (strncmp(norm, top, l) == 0 && norm[l] == '/')))
                        continue; /* below top */
                if (!tree_get(m->tree, norm)) {
                        /* As its lookup would say (path_error()). */
                        if (fstatat(m->root_fd, norm + 1, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                                if (errno == ENOENT)
                                        return manager_path_error(error, -ENOENT, norm);
                        } else if (S_ISLNK(st.st_mode))
                                return manager_path_error(error, -ELOOP, norm);
                        else if (!S_ISDIR(st.st_mode))
                                return manager_path_error(error, -ENOTDIR, norm);
                }
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Excluded group %s is not below %s",
                                         CG_NAMED(norm), CG_NAMED(top));
        }
        return sd_bus_message_exit_container(msg);
}

static int freeze_except(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        Caller c = CALLER(msg);
        _cleanup_free_ Group **excluded = NULL, **cover = NULL;
        size_t n_excluded = 0, n_cover = 0;
        const char *path;
        uint64_t timeout_usec, flags;
        BatchItem *items;
        BatchReply *b;
        Group *top;
        int r;

        /* The flags first, as for Freeze: resolving the paths may track them. */
        r = sd_bus_message_skip(msg, "sas");
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "tt", &timeout_usec, &flags);
        if (r < 0)
                return r;
        r = check_flags(flags, FREEZER_FLAG_ROLLBACK_ON_TIMEOUT | FREEZER_FLAG_NO_WAIT, error);
        if (r < 0)
                return r;
        r = sd_bus_message_rewind(msg, true);
        if (r < 0)
                return r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        r = except_args_check(m, msg, path, error);
        if (r < 0)
                return r;
        r = sd_bus_message_rewind(msg, true);
        if (r < 0)
                return r;
        r = sd_bus_message_skip(msg, "s");
        if (r < 0)
                return r;
        r = resolve_group(m, &c, path, &top, error);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(msg, 'a', "s");
        if (r < 0)
                return r;
        for (;;) {
                const char *x;
                Group *g;

                r = sd_bus_message_read(msg, "s", &x);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = resolve_group(m, &c, x, &g, error);
                if (r < 0)
                        return r;
                {
                        bool below = false;
                        for (Group *a = g->parent; a && !below; a = a->parent)
                                below = a == top;
                        if (!below)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Excluded group %s is not below %s", CG_NAMED(g->path),
                                                         CG_NAMED(top->path));
                }
                Group **l = realloc(excluded, (n_excluded + 1) * sizeof *l);
                if (!l)
                        return -ENOMEM;
                excluded = l;
                excluded[n_excluded++] = g;
        }
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "tt", &timeout_usec, &flags);
        if (r < 0)
                return r;
        /* The checks below read the model's groups (their flags, their
         * owners): one of the named groups removed and made again under its
         * name a moment ago would be judged by the group that is gone (an
         * excluded group whose old flag was 1 refused).  The call starts over
         * on the groups there are (call_again_if_remade()).  One removed for
         * good is answered below, in the order of checks. */
        for (size_t i = 0; i <= n_excluded; i++) {
                r = manager_group_check_exists(m, i < n_excluded ? excluded[i] : top);
                if (r == -ESTALE)
                        return r;
        }

        r = refuse_odd_in_cover(m, top, excluded, n_excluded, true, error);
        if (r < 0)
                return r;
        r = batch_cover_except(top, excluded, n_excluded, &cover, &n_cover);
        if (r < 0) /* (the exclusions are validated before) */
                return bus_error_set_failed(error, r, "Cannot find the groups to freeze: %s", strerror(-r));
        /* The groups it would write, not the excluded ones it leaves alone. */
        if (n_cover > 0) {
                r = check_access_groups(m, &c, NULL, cover, n_cover, false, 0, error);
                if (r < 0)
                        return r;
        }

        /* An excluded group that a flag at or above it freezes would stay
         * frozen whatever we freeze around it: say so instead of pretending.
         * That is the groups' state, not the arguments: checked after access
         * (the XML's "Order of checks"), nothing being written either way.
         * FrozenByParent says what it says for Thaw: an ancestor's flag.  The
         * group's own flag makes the request contradict itself (keep running
         * a group that asks to be frozen): InvalidArgs, which libfreezer
         * reports as -EINVAL, as it does an exclusion outside the top. */
        for (size_t i = 0; i < n_excluded; i++) {
                const Group *x = excluded[i];
                const char *a;
                bool outer;

                if (!x->e_freeze)
                        continue;
                if (x->freeze)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Cannot keep %s running: its own cgroup.freeze is 1; thaw it first; "
                                                 "nothing was written",
                                                 CG_NAMED(x->path));
                a = manager_frozen_by(m, x, &outer);
                return sd_bus_error_setf(error, BUS_ERROR_FROZEN_BY_PARENT,
                                         "Cannot keep %s running: its ancestor %s%s freezes it "
                                         "(cgroup.freeze 1 there); thaw %s first; nothing was written",
                                         CG_NAMED(x->path), a ? CG_NAMED(a) : "(unknown)",
                                         outer ? ", above freezerd's cgroup root," : "",
                                         a ? CG_NAMED(a) : "that ancestor");
        }
        r = refuse_odd_in_cover(m, top, excluded, n_excluded, false, error);
        if (r < 0)
                return r;
        /* The groups the call names, removed a moment ago (freezerd has not
         * read their IN_DELETE): NoSuchGroup, as a moment later, with
         * nothing written.  The cover's groups, which it does not name, are
         * left out if removed (BatchItem.unnamed); without this, the call
         * over a top removed so would leave out its whole cover and succeed,
         * and one excluding a group removed so freeze all around it. */
        for (size_t i = 0; i <= n_excluded; i++) {
                Group *g = i < n_excluded ? excluded[i] : top;
                r = manager_group_check_exists(m, g);
                if (r == -ESTALE)
                        return r; /* made again under its name: handled again (call_again_if_remade()) */
                if (r < 0)
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP,
                                                 "%s no longer exists; nothing was written", CG_NAMED(g->path));
        }
        if (n_cover == 0) {
                manager_call_accept(m, msg); /* nothing to freeze: done */
                return sd_bus_reply_method_return(msg, "as", 0);
        }

        items = calloc(n_cover, sizeof *items);
        if (!items)
                return -ENOMEM;
        r = batch_reply_new(m, msg, REPLY_PATHS, &b);
        if (r < 0) {
                free(items);
                return r;
        }
        b->paths = calloc(n_cover, sizeof(char *));
        if (!b->paths) {
                free(items);
                batch_reply_free(b);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_cover; i++) {
                /* A group of the cover removed a moment ago is left out
                 * (BatchItem.unnamed), and from the reply: but top, the
                 * cover when nothing is excluded, which the call names. */
                items[i] = (BatchItem) { .group = cover[i], .freeze = true, .index = i, .unnamed = cover[i] != top };
                b->paths[i] = strdup(cover[i]->path);
                if (!b->paths[i]) {
                        free(items);
                        batch_reply_free(b);
                        return -ENOMEM;
                }
                b->n_paths++;
        }
        return start_batch(m, items, n_cover, BATCH_ORDER_TOP_DOWN, timeout_usec, flags, b, error);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", FREEZERD_VERSION);
}

static int property_get_cgroup_root(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "s", m->cgroup_root);
}

static int property_get_groups(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "u", tree_published(m->tree));
}

static int property_get_default_timeout(sd_bus *bus, const char *path, const char *interface, const char *property,
                                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        return sd_bus_message_append(reply, "t", m->config.default_timeout_usec);
}

/* ---- pressure ------------------------------------------------------------------------------------------ */

static PsiResource pressure_property_resource(const char *property) {
        if (streq(property, "CpuPressure"))
                return PSI_RESOURCE_CPU;
        if (streq(property, "MemoryPressure"))
                return PSI_RESOURCE_MEMORY;
        if (streq(property, "IoPressure"))
                return PSI_RESOURCE_IO;
        if (streq(property, "IrqPressure"))
                return PSI_RESOURCE_IRQ;
        return _PSI_RESOURCE_INVALID;
}

static int append_psi_line(sd_bus_message *m, const PsiLine *l) {
        return sd_bus_message_append(m, "(dddt)", l->avg10, l->avg60, l->avg300, l->total_usec);
}

/* A line the file does not have (cpu's "full" before Linux 5.13): the type
 * has a place for it, so it is there, but as no figures: NaN averages and a
 * total of 0, never zeros that read as "no stall". */
static int append_reading_line(sd_bus_message *m, const PsiReading *r, PsiKind kind) {
        static const PsiLine absent = { .avg10 = NAN, .avg60 = NAN, .avg300 = NAN };

        return append_psi_line(m, r->present & (1u << kind) ? &r->line[kind] : &absent);
}

/* "((dddt)(dddt))" = (some, full), or "(dddt)" = full for irq. */
static int append_pressure(sd_bus_message *m, PsiResource res, const PsiReading *r) {
        int k;

        if (res == PSI_RESOURCE_IRQ)
                return append_reading_line(m, r, PSI_KIND_FULL);
        k = sd_bus_message_open_container(m, 'r', "(dddt)(dddt)");
        if (k >= 0)
                k = append_reading_line(m, r, PSI_KIND_SOME);
        if (k >= 0)
                k = append_reading_line(m, r, PSI_KIND_FULL);
        if (k >= 0)
                k = sd_bus_message_close_container(m);
        return k;
}

static int read_pressure_property(Manager *m, Group *g, const char *property, PsiResource *ret_res,
                                  PsiReading *ret, sd_bus_error *error) {
        PsiResource res = pressure_property_resource(property);

        if (res < 0) /* the vtable's own: not the caller's to get wrong */
                return bus_error_set_failed(error, -EINVAL, "Unknown pressure property %s", property);
        *ret_res = res;
        return pressure_read(m->pressure, g, res, ret, error);
}

/* Get: read at the moment of the call; NotSupported (naming why) when the
 * kernel hides or disables it.  GetAll goes through filter_get_all(). */
static int manager_property_get_pressure(sd_bus *bus, const char *path, const char *interface, const char *property,
                                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        PsiReading reading;
        PsiResource res;
        int r;

        r = read_pressure_property(userdata, NULL, property, &res, &reading, error);
        if (r < 0)
                return r;
        return append_pressure(reply, res, &reading);
}

static int group_property_get_pressure(sd_bus *bus, const char *path, const char *interface, const char *property,
                                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Group *g = userdata;
        PsiReading reading;
        PsiResource res;
        int r;

        r = read_pressure_property(group_manager(g), g, property, &res, &reading, error);
        if (r < 0)
                return r;
        return append_pressure(reply, res, &reading);
}

static int add_pressure_trigger(sd_bus_message *msg, Manager *m, Group *g, sd_bus_error *error) {
        Caller c = CALLER(msg);
        const char *resource, *kind;
        uint64_t threshold_usec, window_usec;
        PsiResource res;
        PsiKind k;
        uint32_t id;
        int r;

        r = sd_bus_message_read(msg, "sstt", &resource, &kind, &threshold_usec, &window_usec);
        if (r < 0)
                return r;
        /* Bad arguments get pressure_trigger_add()'s own answer (the same
         * validation, which fails before anything is opened); then the rules. */
        if (psi_trigger_validate(resource, kind, threshold_usec, window_usec, !g, m->pressure->privileged, &res, &k) ==
            PSI_TRIGGER_OK) {
                if (!access_trigger_window_allowed(caller_uid(&c), window_usec))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "The window, %s (%" PRIu64 " usec), is not a whole multiple of "
                                                 "2s: callers other than root get the windows the kernel gives "
                                                 "unprivileged processes (2s, 4s, 6s, 8s or 10s)",
                                                 FORMAT_USEC(window_usec), window_usec);
                r = check_access_path(m, &c, g ? ACCESS_GROUP_TRIGGER : ACCESS_SYSTEM_TRIGGER, g ? g->path : NULL,
                                      false, error);
                if (r < 0)
                        return r;
        }
        r = pressure_trigger_add(m->pressure, msg, caller_uid(&c), g, resource, kind, threshold_usec, window_usec, &id,
                                 error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "u", id);
}

/* No uid check: pressure_trigger_remove() lets a connection remove only the
 * triggers it created itself (access.h). */
static int remove_pressure_trigger(sd_bus_message *msg, Manager *m, Group *g, sd_bus_error *error) {
        uint32_t id;
        int r;

        r = sd_bus_message_read(msg, "u", &id);
        if (r < 0)
                return r;
        r = pressure_trigger_remove(m->pressure, msg, g, id, error);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_freeze_except(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return handle_until_not_remade(msg, userdata, freeze_except, error);
}

static int method_add_pressure_trigger(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return add_pressure_trigger(msg, userdata, NULL, error);
}

static int method_remove_pressure_trigger(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return remove_pressure_trigger(msg, userdata, NULL, error);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CgroupRoot", "s", property_get_cgroup_root, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Groups", "u", property_get_groups, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("DefaultTimeoutUSec", "t", property_get_default_timeout, 0,
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD_WITH_ARGS("Freeze", SD_BUS_ARGS("s", path, "t", timeout_usec, "t", flags), SD_BUS_NO_RESULT,
                                method_freeze, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Thaw", SD_BUS_ARGS("s", path, "t", timeout_usec, "t", flags), SD_BUS_NO_RESULT,
                                method_thaw, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ApplyBatch",
                                SD_BUS_ARGS("a(sb)", requests, "s", order, "t", timeout_usec, "t", flags),
                                SD_BUS_RESULT("u", writes, "u", skipped), method_apply_batch,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("FreezeExcept",
                                SD_BUS_ARGS("s", path, "as", exclude, "t", timeout_usec, "t", flags),
                                SD_BUS_RESULT("as", frozen), method_freeze_except, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetGroup", SD_BUS_ARGS("s", path), SD_BUS_RESULT("o", object), method_get_group,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("LookupGroup", SD_BUS_ARGS("s", path, "t", flags), SD_BUS_RESULT("o", object),
                                method_lookup_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroups", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sos)", groups), method_list_groups,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroupIds", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(st)", groups),
                                method_list_group_ids, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Track", SD_BUS_ARGS("s", path), SD_BUS_RESULT("o", object), method_track,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Untrack", SD_BUS_ARGS("s", path), SD_BUS_NO_RESULT, method_untrack,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("Subscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_subscribe,
                                       offsetof(Manager, subscribed), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("Unsubscribe", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_unsubscribe,
                                       offsetof(Manager, subscribed), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("SubscribeGroups", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_subscribe,
                                       offsetof(Manager, subscribed_groups), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("UnsubscribeGroups", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_unsubscribe,
                                       offsetof(Manager, subscribed_groups), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("GroupsChanged", SD_BUS_ARGS("a(ssbbbuu)", groups), 0),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("SubscribeGroupStates", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_subscribe,
                                       offsetof(Manager, subscribed_states), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("UnsubscribeGroupStates", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT,
                                       method_unsubscribe, offsetof(Manager, subscribed_states),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("GroupStatesChanged",
                                SD_BUS_ARGS("at", ids, "au", states, "au", descendants, "au", frozen_descendants),
                                0),
        /* System-wide pressure from /proc/pressure, read at the time of the Get. */
        SD_BUS_PROPERTY("CpuPressure", "((dddt)(dddt))", manager_property_get_pressure, 0, 0),
        SD_BUS_PROPERTY("MemoryPressure", "((dddt)(dddt))", manager_property_get_pressure, 0, 0),
        SD_BUS_PROPERTY("IoPressure", "((dddt)(dddt))", manager_property_get_pressure, 0, 0),
        SD_BUS_PROPERTY("IrqPressure", "(dddt)", manager_property_get_pressure, 0, 0),
        SD_BUS_METHOD_WITH_ARGS("AddPressureTrigger",
                                SD_BUS_ARGS("s", resource, "s", kind, "t", threshold_usec, "t", window_usec),
                                SD_BUS_RESULT("u", id), method_add_pressure_trigger, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemovePressureTrigger", SD_BUS_ARGS("u", id), SD_BUS_NO_RESULT,
                                method_remove_pressure_trigger, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("PressureExceeded",
                                SD_BUS_ARGS("u", id, "s", resource, "s", kind, "(dddt)", reading), 0),
        SD_BUS_SIGNAL_WITH_ARGS("PressureTriggerRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_VTABLE_END,
};

/* ---- Group objects ------------------------------------------------------------------------------------- */

/* All group objects share one fallback vtable: no per-object registration, so
 * memory stays proportional to the model, not to sd-bus slots. */
static int group_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                      sd_bus_error *error) {
        Manager *m = userdata;
        _cleanup_free_ char *cg = NULL;
        Group *g;
        int r;

        r = sd_bus_path_decode(path, GROUP_PREFIX, &cg);
        if (r <= 0)
                return r;
        g = tree_get(m->tree, cg);
        if (!g || !group_published(g))
                return 0;
        *found = g;
        return 1;
}

static int group_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Manager *m = userdata;
        Group *root = tree_root(m->tree);
        size_t n = 0;
        char **l;

        l = calloc(tree_published(m->tree) + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (Group *g = root; g; g = tree_next_preorder(root, g)) {
                if (!group_published(g))
                        continue;
                if (group_object_path(g, &l[n]) < 0) {
                        for (size_t i = 0; i < n; i++)
                                free(l[i]);
                        free(l);
                        return -ENOMEM;
                }
                n++;
        }
        *nodes = l;
        return 0;
}

static int group_method_freeze_thaw(sd_bus_message *msg, Group *g, bool freeze, sd_bus_error *error) {
        Manager *m = group_manager(g);
        Caller c = CALLER(msg);
        uint64_t timeout_usec, flags;
        unsigned tries = 0;
        int r;

        for (;;) {
                _cleanup_free_ char *path = NULL;

                r = sd_bus_message_read(msg, "tt", &timeout_usec, &flags);
                if (r < 0)
                        return r;
                r = start_freeze(m, &c, msg, g, freeze, timeout_usec, flags, error);
                /* Made again under its name: the object's path names the new
                 * group once the events are read (g is gone then). */
                if (r == -ESTALE && m->call_remade && !(path = strdup(g->path)))
                        return -ENOMEM;
                if (!call_again_if_remade(m, msg, &r, &tries, error))
                        return r;
                g = tree_get(m->tree, path);
                if (!g || !group_published(g))
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP, "%s no longer exists",
                                                 CG_NAMED(path));
        }
}

static int group_method_freeze(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return group_method_freeze_thaw(msg, userdata, true, error);
}

static int group_method_thaw(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return group_method_freeze_thaw(msg, userdata, false, error);
}

static int group_property_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Group *g = userdata;

        if (streq(property, "Path"))
                return sd_bus_message_append(reply, "s", g->path);
        if (streq(property, "Id"))
                return sd_bus_message_append(reply, "t", g->id);
        if (streq(property, "FreezerState"))
                return sd_bus_message_append(reply, "s", freezer_state_to_string(g->state));
        if (streq(property, "Freeze"))
                return sd_bus_message_append(reply, "b", g->freeze);
        if (streq(property, "Frozen"))
                return sd_bus_message_append(reply, "b", g->frozen);
        if (streq(property, "Populated"))
                return sd_bus_message_append(reply, "b", g->populated);
        if (streq(property, "Descendants"))
                return sd_bus_message_append(reply, "u", g->n_descendants);
        if (streq(property, "FrozenDescendants"))
                return sd_bus_message_append(reply, "u", g->n_frozen_descendants);
        if (streq(property, "FrozenUSec")) {
                uint64_t v = 0;
                int r = manager_group_frozen_usec(group_manager(g), g, &v);
                if (r < 0 && r != -ENOENT && r != -ENODEV)
                        return bus_error_set_failed(error, r, "Cannot read cgroup.stat.local of %s: %s",
                                                    CG_NAMED(g->path), strerror(-r));
                return sd_bus_message_append(reply, "t", v);
        }
        return bus_error_set_failed(error, -EINVAL, "Unknown property %s", property); /* the vtable's own */
}

static int group_method_add_pressure_trigger(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Group *g = userdata;
        return add_pressure_trigger(msg, group_manager(g), g, error);
}

static int group_method_remove_pressure_trigger(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Group *g = userdata;
        return remove_pressure_trigger(msg, group_manager(g), g, error);
}

static const sd_bus_vtable group_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Path", "s", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Id", "t", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("FreezerState", "s", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Freeze", "b", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Frozen", "b", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Populated", "b", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Descendants", "u", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("FrozenDescendants", "u", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* Explicit: read from cgroup.stat.local at every Get, so it stays out of
         * InterfacesAdded and GetManagedObjects (10,000 file reads otherwise). */
        SD_BUS_PROPERTY("FrozenUSec", "t", group_property_get, 0, SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_METHOD_WITH_ARGS("Freeze", SD_BUS_ARGS("t", timeout_usec, "t", flags), SD_BUS_NO_RESULT,
                                group_method_freeze, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Thaw", SD_BUS_ARGS("t", timeout_usec, "t", flags), SD_BUS_NO_RESULT,
                                group_method_thaw, SD_BUS_VTABLE_UNPRIVILEGED),
        /* Read at the time of the Get.  EXPLICIT: left out of GetManagedObjects and
         * InterfacesAdded (a snapshot there would be stale at once, would cost three
         * open files per group, and one hidden group would fail the whole call);
         * GetAll includes them through filter_get_all(). */
        SD_BUS_PROPERTY("CpuPressure", "((dddt)(dddt))", group_property_get_pressure, 0,
                        SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_PROPERTY("MemoryPressure", "((dddt)(dddt))", group_property_get_pressure, 0,
                        SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_PROPERTY("IoPressure", "((dddt)(dddt))", group_property_get_pressure, 0,
                        SD_BUS_VTABLE_PROPERTY_EXPLICIT),
        SD_BUS_METHOD_WITH_ARGS("AddPressureTrigger",
                                SD_BUS_ARGS("s", resource, "s", kind, "t", threshold_usec, "t", window_usec),
                                SD_BUS_RESULT("u", id), group_method_add_pressure_trigger,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemovePressureTrigger", SD_BUS_ARGS("u", id), SD_BUS_NO_RESULT,
                                group_method_remove_pressure_trigger, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("PressureExceeded",
                                SD_BUS_ARGS("u", id, "s", resource, "s", kind, "(dddt)", reading), 0),
        SD_BUS_SIGNAL_WITH_ARGS("PressureTriggerRemoved", SD_BUS_ARGS("u", id, "s", reason), 0),
        SD_BUS_VTABLE_END,
};

/* ---- GetAll ------------------------------------------------------------------------------------------- */

/* sd-bus fails a whole GetAll when one getter fails, but a pressure property
 * the kernel hides (cgroup.pressure 0) or disables (psi=0) must fail its Get
 * while GetAll still returns everything else.  So GetAll of the Manager and
 * Group interfaces is answered here, from a bus filter that runs before
 * sd-bus's own dispatch: every property of the vtable in its order, through
 * its own getter, except that a pressure property that cannot be read is left
 * out instead of failing the call.  Anything else (other interfaces, unknown
 * objects, bad arguments) is left to sd-bus. */
static bool is_pressure_getter(const sd_bus_vtable *v) {
        return v->x.property.get == group_property_get_pressure ||
               v->x.property.get == manager_property_get_pressure;
}

static int reply_get_all(sd_bus *bus, sd_bus_message *call, const char *path, const char *interface,
                         const sd_bus_vtable *vtable, Manager *m, Group *g, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        /* Our vtables are arrays of this very struct: plain iteration is right. */
        for (const sd_bus_vtable *v = vtable + 1; v->type != _SD_BUS_VTABLE_END; v++) {
                const char *member = v->x.property.member, *sig = v->x.property.signature;

                if (v->type != _SD_BUS_VTABLE_PROPERTY && v->type != _SD_BUS_VTABLE_WRITABLE_PROPERTY)
                        continue;
                if (v->flags & SD_BUS_VTABLE_HIDDEN)
                        continue;
                if (!v->x.property.get) /* every property of ours has a getter */
                        return bus_error_set_failed(error, -EOPNOTSUPP, "Property %s has no getter", member);

                bool pressure = is_pressure_getter(v);
                PsiReading reading;
                PsiResource res;

                if (pressure) {
                        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;

                        /* Read before anything is appended: one that fails is left out. */
                        r = read_pressure_property(m, g, member, &res, &reading, &e);
                        if (r < 0) {
                                log_debug("GetAll of %s leaves out %s: %s", path, member, e.message ?: strerror(-r));
                                continue;
                        }
                }
                r = sd_bus_message_open_container(reply, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", member);
                if (r >= 0)
                        r = sd_bus_message_open_container(reply, 'v', sig);
                if (r >= 0 && pressure)
                        r = append_pressure(reply, res, &reading);
                else if (r >= 0) {
                        r = v->x.property.get(bus, path, interface, member, reply, userdata, error);
                        if (r >= 0 && sd_bus_error_is_set(error))
                                return -sd_bus_error_get_errno(error);
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        r = sd_bus_send(bus, reply, NULL);
        if (r < 0)
                return r;
        return 1;
}

static int filter_get_all(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *path, *iface = NULL;
        void *found = NULL;
        int r;

        if (!sd_bus_message_is_method_call(msg, "org.freedesktop.DBus.Properties", "GetAll"))
                return 0;
        path = sd_bus_message_get_path(msg);
        if (!path || !streq_ptr(sd_bus_message_get_signature(msg, true), "s"))
                return 0;
        r = sd_bus_message_read(msg, "s", &iface);
        (void) sd_bus_message_rewind(msg, true);
        if (r < 0)
                return 0;

        if (streq(path, MANAGER_PATH)) {
                if (iface[0] && !streq(iface, MANAGER_IFACE))
                        return 0;
                return reply_get_all(sd_bus_message_get_bus(msg), msg, path, MANAGER_IFACE, manager_vtable, m,
                                     NULL, m, error);
        }
        if (iface[0] && !streq(iface, GROUP_IFACE))
                return 0;
        r = group_find(sd_bus_message_get_bus(msg), path, GROUP_IFACE, m, &found, error);
        if (r <= 0)
                return 0; /* not one of our groups: sd-bus answers */
        return reply_get_all(sd_bus_message_get_bus(msg), msg, path, GROUP_IFACE, group_vtable, m, found, found,
                             error);
}

/* ---- unknown objects ---------------------------------------------------------------------------------- */

/* sd-bus answers a call on an object it does not know with UnknownObject,
 * "Unknown object '<the whole object path>'.": a call on a 60 kB object path
 * got a 60 kB error.  A call whose path is longer than a caller's string is
 * quoted (cg_quote()) and that is no object of freezerd's is answered here,
 * before sd-bus's own dispatch, with the same error, the path quoted as any
 * other.  freezerd's objects all have short paths but the groups' (a 4 kB
 * path encodes to up to 12 kB), which group_find() knows; the Peer interface
 * sd-bus answers on any path.  (A call on a path over 64 kB never gets here
 * nor anywhere: sd-bus's reader finds the message invalid and drops it, with
 * no reply; README, "D-Bus API".) */
static int filter_unknown_object(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        const char *path = sd_bus_message_get_path(msg);
        void *found = NULL;
        int r;

        if (!path || strlen(path) <= CG_QUOTE_MAX || sd_bus_message_is_method_call(msg, NULL, NULL) <= 0 ||
            streq_ptr(sd_bus_message_get_interface(msg), "org.freedesktop.DBus.Peer"))
                return 0;
        r = group_find(sd_bus_message_get_bus(msg), path, GROUP_IFACE, m, &found, error);
        if (r != 0)
                return 0; /* one of ours (or no memory to tell): sd-bus answers */
        r = sd_bus_reply_method_errorf(msg, SD_BUS_ERROR_UNKNOWN_OBJECT, "Unknown object '%s'.", CG_QUOTE(path));
        if (r < 0)
                log_debug_errno(r, "Cannot reply to a call on an unknown object: %m");
        return 1;
}

/* ---- signals ------------------------------------------------------------------------------------------- */

/* Where a signal goes: the bus, and the private connections that subscribed
 * (private-bus.h).  per_object: Subscribe() (per-object PropertiesChanged);
 * groups: GroupsChanged; states: GroupStatesChanged.  On the bus, what is
 * broadcast to everyone goes out whether or not anyone subscribed; a private
 * connection gets nothing it did not ask for. */
typedef struct Sink {
        sd_bus *bus;
        bool per_object, groups, states;
        sd_bus_message *batch; /* GroupsChanged being built */
        unsigned n_batch;
} Sink;

#define SINKS_MAX (1 + PRIVATE_BUS_CONNECTIONS_MAX)

static bool has_clients(const Subscribers *s) {
        return name_track_count(s->names) > 0;
}

static size_t collect_sinks(Manager *m, Sink sinks[static SINKS_MAX]) {
        size_t n = 0;
        void *iter = NULL;
        sd_bus *bus;
        unsigned kinds;

        if (m->bus_ready) {
                bool per_object = has_clients(&m->subscribed);
                sinks[n++] = (Sink) {
                        .bus = manager_bus(m),
                        .per_object = per_object,
                        .groups = per_object || has_clients(&m->subscribed_groups),
                        .states = has_clients(&m->subscribed_states),
                };
        }
        while (n < SINKS_MAX && (bus = private_bus_next_subscriber(m->private_bus, &iter, &kinds)))
                sinks[n++] = (Sink) {
                        .bus = bus,
                        .per_object = kinds & 1u << SUBSCRIPTION_ALL,
                        .groups = kinds & (1u << SUBSCRIPTION_ALL | 1u << SUBSCRIPTION_GROUPS),
                        .states = kinds & 1u << SUBSCRIPTION_STATES,
                };
        return n;
}

static void on_group_added(Manager *m, Group *g) {
        _cleanup_free_ char *object = NULL;
        Sink sinks[SINKS_MAX];
        size_t n = collect_sinks(m, sinks);

        if (n == 0 || group_object_path(g, &object) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void) sd_bus_emit_interfaces_added(sinks[i].bus, object, GROUP_IFACE, NULL);
}

static void on_group_removed(Manager *m, const char *path) {
        _cleanup_free_ char *object = NULL;
        Sink sinks[SINKS_MAX];
        size_t n = collect_sinks(m, sinks);

        if (n == 0 || sd_bus_path_encode(GROUP_PREFIX, path, &object) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void) sd_bus_emit_interfaces_removed(sinks[i].bus, object, GROUP_IFACE, NULL);
}

static void emit_manager_property(Manager *m, const char *property) {
        Sink sinks[SINKS_MAX];
        size_t n = collect_sinks(m, sinks);

        for (size_t i = 0; i < n; i++)
                (void) sd_bus_emit_properties_changed(sinks[i].bus, MANAGER_PATH, MANAGER_IFACE, property, NULL);
}

/* Pressure signals go to the trigger's owner only (unicast): the trigger is
 * its, and other clients need not wake up for it.  sd_bus_send(NULL, ...)
 * sends each on the connection it was made for. */
static int pressure_signal_new(Manager *m, const PressureTrigger *t, const char *member, sd_bus_message **ret) {
        _cleanup_free_ char *object = NULL;
        int r;

        if (t->group) {
                r = group_object_path(t->group, &object);
                if (r < 0)
                        return r;
        }
        /* On the private socket, the owner's own connection (no names there). */
        r = sd_bus_message_new_signal(t->client->connection ?: manager_bus(m), ret, object ?: MANAGER_PATH,
                                      t->group ? GROUP_IFACE : MANAGER_IFACE, member);
        if (r < 0 || t->client->connection)
                return r;
        return sd_bus_message_set_destination(*ret, t->client->name);
}

static void on_pressure_exceeded(Pressure *p, const PressureTrigger *t, const PsiLine *reading, void *userdata) {
        Manager *m = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        int r;

        if (!m->bus_ready)
                return;
        r = pressure_signal_new(m, t, "PressureExceeded", &sig);
        if (r >= 0)
                r = sd_bus_message_append(sig, "uss", t->id, psi_resource_to_string(t->resource),
                                          psi_kind_to_string(t->kind));
        if (r >= 0)
                r = append_psi_line(sig, reading);
        if (r >= 0)
                r = sd_bus_send(NULL, sig, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot send PressureExceeded of trigger %" PRIu32 ": %m", t->id);
}

static void on_pressure_trigger_removed(Pressure *p, const PressureTrigger *t, const char *reason, void *userdata) {
        Manager *m = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        int r;

        if (!m->bus_ready)
                return;
        r = pressure_signal_new(m, t, "PressureTriggerRemoved", &sig);
        if (r >= 0)
                r = sd_bus_message_append(sig, "us", t->id, reason);
        if (r >= 0)
                r = sd_bus_send(NULL, sig, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot send PressureTriggerRemoved of trigger %" PRIu32 ": %m", t->id);
}

/* The properties a change bit stands for, in the order they are sent. */
static const struct {
        unsigned bit;
        const char *name;
} changed_map[] = {
        { GROUP_CHANGED_STATE, "FreezerState" },
        { GROUP_CHANGED_FREEZE, "Freeze" },
        { GROUP_CHANGED_FROZEN, "Frozen" },
        { GROUP_CHANGED_POPULATED, "Populated" },
        { GROUP_CHANGED_DESCENDANTS, "Descendants" },
        { GROUP_CHANGED_FROZEN_DESCENDANTS, "FrozenDescendants" },
};

/* Appends the a{sv} of the properties in `changed`, with their values, read
 * straight from the model: the same values Get returns (group_property_get()),
 * without a vtable lookup per object. */
static int append_group_changes(sd_bus_message *msg, const Group *g, unsigned changed) {
        int r;

        r = sd_bus_message_open_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(changed_map); i++) {
                if (!(changed & changed_map[i].bit))
                        continue;
                const char *name = changed_map[i].name;

                switch (changed_map[i].bit) {
                case GROUP_CHANGED_STATE:
                        r = sd_bus_message_append(msg, "{sv}", name, "s", freezer_state_to_string(g->state));
                        break;
                case GROUP_CHANGED_FREEZE:
                        r = sd_bus_message_append(msg, "{sv}", name, "b", g->freeze);
                        break;
                case GROUP_CHANGED_FROZEN:
                        r = sd_bus_message_append(msg, "{sv}", name, "b", g->frozen);
                        break;
                case GROUP_CHANGED_POPULATED:
                        r = sd_bus_message_append(msg, "{sv}", name, "b", g->populated);
                        break;
                case GROUP_CHANGED_DESCENDANTS:
                        r = sd_bus_message_append(msg, "{sv}", name, "u", g->n_descendants);
                        break;
                case GROUP_CHANGED_FROZEN_DESCENDANTS:
                        r = sd_bus_message_append(msg, "{sv}", name, "u", g->n_frozen_descendants);
                        break;
                }
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(msg);
}

/* One group's PropertiesChanged, built by hand for the same reason. */
static int send_group_properties_changed(sd_bus *bus, const Group *g, unsigned changed) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        _cleanup_free_ char *object = NULL;
        int r;

        r = group_object_path(g, &object);
        if (r < 0)
                return r;
        r = sd_bus_message_new_signal(bus, &sig, object, "org.freedesktop.DBus.Properties", "PropertiesChanged");
        if (r < 0)
                return r;
        r = sd_bus_message_append(sig, "s", GROUP_IFACE);
        if (r < 0)
                return r;
        r = append_group_changes(sig, g, changed);
        if (r < 0)
                return r;
        r = sd_bus_message_append(sig, "as", 0);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, sig, NULL);
}

/* At most this many groups per GroupsChanged message (about 60 bytes each,
 * 30 KiB): dbus-daemon routes, and a client reads, one message while
 * freezerd builds the next.  With 4,096 a message (250 KiB) a storm's last
 * ones reached the client one after another, each only once it was whole:
 * a freeze over 10,100 groups was reported in 32 ms (median of six runs)
 * against 24 ms with 512 and 26 ms with 256. */
#define GROUPS_CHANGED_MAX 512

static int groups_changed_send(sd_bus_message **sig) {
        int r;

        if (!*sig)
                return 0;
        r = sd_bus_message_close_container(*sig);
        if (r >= 0)
                r = sd_bus_send(NULL, *sig, NULL);
        *sig = sd_bus_message_unref(*sig);
        return r;
}

/* One (ssbbbuu) entry of GroupsChanged.  Appended field by field, not with
 * sd_bus_message_append(): that parses its format string for every entry, and
 * costs 0.6 µs an entry against 0.25 µs this way (libsystemd 252, 10,000
 * entries); a storm over 10,000 groups builds 10,000 entries. */
static int append_group_entry(sd_bus_message *msg, const Group *g) {
        int freeze = g->freeze, frozen = g->frozen, populated = g->populated;
        uint32_t descendants = g->n_descendants, frozen_descendants = g->n_frozen_descendants;
        int r;

        r = sd_bus_message_open_container(msg, 'r', "ssbbbuu");
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 's', g->path);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 's', freezer_state_to_string(g->state));
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'b', &freeze);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'b', &frozen);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'b', &populated);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'u', &descendants);
        if (r >= 0)
                r = sd_bus_message_append_basic(msg, 'u', &frozen_descendants);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

/* Adds g to the sink's GroupsChanged, sent once it holds GROUPS_CHANGED_MAX. */
static void sink_add_group(Sink *k, const Group *g) {
        int r;

        if (!k->batch) {
                r = sd_bus_message_new_signal(k->bus, &k->batch, MANAGER_PATH, MANAGER_IFACE, "GroupsChanged");
                if (r >= 0)
                        r = sd_bus_message_open_container(k->batch, 'a', "(ssbbbuu)");
                if (r < 0) {
                        log_debug_errno(r, "Cannot start GroupsChanged: %m");
                        k->batch = sd_bus_message_unref(k->batch);
                        return;
                }
        }
        /* A group's whole state, typed: cheaper to build, route and read than
         * a dictionary of variants. */
        r = append_group_entry(k->batch, g);
        if (r < 0) {
                log_debug_errno(r, "Cannot add %s to GroupsChanged: %m", g->path);
                k->batch = sd_bus_message_unref(k->batch);
                k->n_batch = 0;
        } else if (++k->n_batch >= GROUPS_CHANGED_MAX) {
                r = groups_changed_send(&k->batch);
                if (r < 0)
                        log_debug_errno(r, "Cannot send GroupsChanged: %m");
                k->n_batch = 0;
        }
}

/* GroupStatesChanged(at ids, au states, au descendants, au frozen_descendants):
 * the entries of GroupsChanged as four arrays of fixed-size numbers, each
 * appended with one copy and read by the client in place
 * (sd_bus_message_read_array()), about 20 bytes a group against 60 and
 * nothing for dbus-daemon to parse per entry.  One set of arrays serves every
 * sink that asked for it.  At most this many groups per message (320 KiB): a
 * storm over 10,000 groups is one message. */
#define GROUP_STATES_MAX 16384

/* The bits of a GroupStatesChanged state (the D-Bus XML documents them). */
enum {
        GROUP_STATE_FREEZE = 1u << 0,            /* its own cgroup.freeze is 1 (Freeze) */
        GROUP_STATE_ANCESTOR_FREEZES = 1u << 1, /* an ancestor's cgroup.freeze is 1 */
        GROUP_STATE_FROZEN = 1u << 2,            /* the kernel reports it frozen (Frozen) */
        GROUP_STATE_POPULATED = 1u << 3,         /* Populated */
};

/* The four arrays live in one allocation: ids first (8-byte aligned), then
 * the three arrays of uint32_t, each `allocated` long. */
typedef struct GroupStates {
        uint64_t *ids;
        uint32_t *states, *descendants, *frozen_descendants;
        size_t n, allocated;
        bool failed; /* an allocation failed this turn: the rest is not sent (logged once) */
} GroupStates;

static uint32_t group_state_bits(Tree *t, const Group *g) {
        bool ancestor_freezes = tree_parent_freezes(t, g); /* above the root too */

        return (g->freeze ? GROUP_STATE_FREEZE : 0) | (ancestor_freezes ? GROUP_STATE_ANCESTOR_FREEZES : 0) |
               (g->frozen ? GROUP_STATE_FROZEN : 0) | (g->populated ? GROUP_STATE_POPULATED : 0);
}

static void group_states_done(GroupStates *st) {
        free(st->ids);
        *st = (GroupStates) {};
}

/* Room for twice as many entries (64 at first), the n held kept. */
static int group_states_grow(GroupStates *st) {
        size_t a = st->allocated ? st->allocated * 2 : 64;
        uint64_t *ids = malloc(a * (sizeof(uint64_t) + 3 * sizeof(uint32_t)));
        uint32_t *u;

        if (!ids)
                return -ENOMEM;
        u = (uint32_t *) (ids + a);
        if (st->n > 0) {
                memcpy(ids, st->ids, st->n * sizeof *ids);
                memcpy(u, st->states, st->n * sizeof *u);
                memcpy(u + a, st->descendants, st->n * sizeof *u);
                memcpy(u + 2 * a, st->frozen_descendants, st->n * sizeof *u);
        }
        free(st->ids);
        *st = (GroupStates) { .ids = ids, .states = u, .descendants = u + a, .frozen_descendants = u + 2 * a,
                              .n = st->n, .allocated = a };
        return 0;
}

static int group_states_send_one(sd_bus *bus, const GroupStates *st) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *sig = NULL;
        int r;

        r = sd_bus_message_new_signal(bus, &sig, MANAGER_PATH, MANAGER_IFACE, "GroupStatesChanged");
        if (r >= 0)
                r = sd_bus_message_append_array(sig, 't', st->ids, st->n * sizeof *st->ids);
        if (r >= 0)
                r = sd_bus_message_append_array(sig, 'u', st->states, st->n * sizeof *st->states);
        if (r >= 0)
                r = sd_bus_message_append_array(sig, 'u', st->descendants, st->n * sizeof *st->descendants);
        if (r >= 0)
                r = sd_bus_message_append_array(sig, 'u', st->frozen_descendants,
                                                st->n * sizeof *st->frozen_descendants);
        if (r >= 0)
                r = sd_bus_send(NULL, sig, NULL);
        return r;
}

/* Sends what st holds to every sink that asked for it, and empties it. */
static void group_states_flush(GroupStates *st, Sink *sinks, size_t n) {
        if (st->n == 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (sinks[i].states) {
                        int r = group_states_send_one(sinks[i].bus, st);
                        if (r < 0)
                                log_debug_errno(r, "Cannot send GroupStatesChanged: %m");
                }
        st->n = 0;
}

static void group_states_add(GroupStates *st, Tree *t, const Group *g, Sink *sinks, size_t n) {
        if (st->failed)
                return;
        if (st->n == st->allocated && group_states_grow(st) < 0) {
                log_warning("Out of memory for GroupStatesChanged: the rest of this turn's changes are not sent.");
                st->failed = true;
                return;
        }
        st->ids[st->n] = g->id;
        st->states[st->n] = group_state_bits(t, g);
        st->descendants[st->n] = g->n_descendants;
        st->frozen_descendants[st->n] = g->n_frozen_descendants;
        if (++st->n >= GROUP_STATES_MAX)
                group_states_flush(st, sinks, n);
}

/* The signals of the groups changed so far, up to max of them: all at the top
 * of each loop turn, a few at a time in the middle of a storm's call as its
 * writes are settled (Manager.on_groups_settled).  True if changed groups
 * are left. */
static bool emit_changed_groups(Manager *m, size_t max) {
        Sink sinks[SINKS_MAX];
        Group *g, *first_waiting = NULL;
        GroupStates states = {};
        size_t n, n_sent = 0;
        unsigned changed;
        bool wanted = false, any_states = false; /* some sink wants these signals; GroupStatesChanged */
        int r;

        /* The groups of this turn's mkdir events, complete: before any
         * GroupsChanged or PropertiesChanged that names them. */
        manager_announce(m);

        /* Every change of this loop turn, whatever number of kernel events led
         * to it, goes out as one entry of GroupsChanged (one message for up to
         * GROUPS_CHANGED_MAX groups) and of GroupStatesChanged, and as one
         * PropertiesChanged per changed object, each only to whoever
         * subscribed to it (see method_subscribe()).  Replies were sent already: signals never delay them. */
        n = collect_sinks(m, sinks);
        for (size_t i = 0; i < n; i++) {
                wanted = wanted || sinks[i].groups || sinks[i].states; /* per_object implies groups */
                any_states = any_states || sinks[i].states;
        }
        while (n_sent < max && (g = tree_pop_changed(m->tree, &changed))) {
                if (!group_published(g) || !wanted)
                        continue;
                if (manager_group_waits_for_writes(m, g)) {
                        /* Back to the tail of the list; once the first of them
                         * comes round again, only such groups are left. */
                        tree_requeue_changed(m->tree, g, changed);
                        if (g == first_waiting)
                                break;
                        if (!first_waiting)
                                first_waiting = g;
                        continue;
                }
                n_sent++;
                if (any_states)
                        group_states_add(&states, m->tree, g, sinks, n);
                /* Only its state bit 2 moved: no property of GroupsChanged or
                 * PropertiesChanged did. */
                if (changed == GROUP_CHANGED_PARENT_FREEZES)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (sinks[i].groups)
                                sink_add_group(&sinks[i], g);
                        if (sinks[i].per_object) {
                                r = send_group_properties_changed(sinks[i].bus, g, changed);
                                if (r < 0)
                                        log_debug_errno(r, "Cannot send PropertiesChanged of %s: %m", g->path);
                        }
                }
        }
        for (size_t i = 0; i < n; i++) {
                r = groups_changed_send(&sinks[i].batch);
                if (r < 0)
                        log_debug_errno(r, "Cannot send GroupsChanged: %m");
        }
        group_states_flush(&states, sinks, n);
        group_states_done(&states);
        return n_sent == max;
}

void manager_bus_flush(Manager *m) {
        manager_dispatch(m);
        (void) emit_changed_groups(m, SIZE_MAX);
        if (m->groups_count_changed) {
                m->groups_count_changed = false;
                emit_manager_property(m, "Groups");
        }
}

void manager_bus_timeout_changed(Manager *m) {
        emit_manager_property(m, "DefaultTimeoutUSec");
}

int manager_bus_attach(Manager *m, sd_bus *bus) {
        int r;

        m->bus_userdata = bus;
        m->on_group_added = on_group_added;
        m->on_group_removed = on_group_removed;
        m->on_groups_settled = emit_changed_groups;

        {
                const PressureHooks hooks = {
                        .exceeded = on_pressure_exceeded,
                        .removed = on_pressure_trigger_removed,
                        .userdata = m,
                };
                r = pressure_new(m, bus, &hooks, &m->pressure);
                if (r < 0)
                        return log_error_errno(r, "Cannot set up pressure stall information: %m");
        }
        r = manager_bus_add_objects(m, bus);
        if (r < 0)
                return log_error_errno(r, "Cannot register the objects: %m");
        /* Added last, so it runs first: a held call waits for all of them. */
        r = sd_bus_add_filter(bus, NULL, filter_caller_uid, m);
        if (r < 0)
                return log_error_errno(r, "Cannot add the callers' filter: %m");
        return 0;
}

void manager_bus_connection_closed(Manager *m, sd_bus *bus) {
        pressure_connection_closed(m->pressure, bus);
        holds_drop(m, NULL, bus);
}

int manager_bus_add_objects(Manager *m, sd_bus *bus) {
        int r;

        r = sd_bus_add_filter(bus, NULL, filter_get_all, m);
        if (r < 0)
                return r;
        r = sd_bus_add_filter(bus, NULL, filter_unknown_object, m);
        if (r < 0)
                return r;

        r = sd_bus_add_object_vtable(bus, NULL, MANAGER_PATH, MANAGER_IFACE, manager_vtable, m);
        if (r < 0)
                return r;
        r = sd_bus_add_fallback_vtable(bus, NULL, GROUP_PREFIX, GROUP_IFACE, group_vtable, group_find, m);
        if (r < 0)
                return r;
        r = sd_bus_add_node_enumerator(bus, NULL, GROUP_PREFIX, group_enumerate, m);
        if (r < 0)
                return r;
        r = sd_bus_add_object_manager(bus, NULL, MANAGER_PATH);
        if (r < 0)
                return r;
        return 0;
}
