/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef FREEZER_H
#define FREEZER_H

/*
 * libfreezer: client library for freezerd, the cgroup v2 freezer daemon
 * (D-Bus name org.freezerd.Freezer1).
 *
 * Conventions
 *   - Functions returning int return >= 0 on success and a negative errno on
 *     failure. Errors sent by the daemon are mapped to errno values:
 *         org.freezerd.Freezer1.Error.NoSuchGroup     -ENOENT
 *         org.freezerd.Freezer1.Error.InvalidPath     -EINVAL
 *         org.freezerd.Freezer1.Error.Timeout         -ETIMEDOUT
 *         org.freezerd.Freezer1.Error.FrozenByParent  -EBUSY
 *         org.freezerd.Freezer1.Error.Cancelled       -ECANCELED
 *         org.freezerd.Freezer1.Error.NotSupported    -EOPNOTSUPP
 *         org.freezerd.Freezer1.Error.LimitsExceeded  -ENOBUFS
 *         org.freezerd.Freezer1.Error.NotTracked      -ENOENT (Untrack of a path
 *                                                     that is not a tracked root,
 *                                                     since libfreezer 0.6)
 *         org.freedesktop.DBus.Error.AccessDenied     -EACCES (the caller may not)
 *         org.freedesktop.DBus.Error.InvalidArgs      -EINVAL
 *         org.freedesktop.DBus.Error.Failed           -EIO (freezerd failed: a file
 *                                                     of its runtime directory,
 *                                                     its state directory's
 *                                                     tracked.json (Track,
 *                                                     Untrack) or a cgroup write
 *                                                     refused...;
 *                                                     the message says what, with
 *                                                     the errno's text; sd-bus
 *                                                     alone would say -EACCES)
 *         org.freedesktop.DBus.Error.NoMemory         -ENOMEM (freezerd's memory)
 *         org.freedesktop.DBus.Error.UnknownObject    -ENOENT (a group vanished)
 *     Other D-Bus errors use sd-bus' mapping (e.g. ServiceUnknown -EHOSTUNREACH,
 *     NameHasNoOwner -ENXIO, unknown names -EIO).
 *   - freezer_last_error_name()/freezer_last_error_message() describe the
 *     most recent failure of a call on the handle. Like errno, they are only
 *     meaningful right after a call failed: successful calls leave them alone
 *     (they are NULL until the first failure). After a failure the name is
 *     never NULL: it is the daemon's (or the bus') error name, or for local
 *     failures the name sd-bus derives from the errno (for example
 *     "org.freedesktop.DBus.Error.Disconnected" for -ECONNRESET, or
 *     "System.Error.ENOTCONN").
 *     A local method-call timeout is reported as -ETIMEDOUT with the name
 *     "org.freedesktop.DBus.Error.Timeout" (the daemon's own timeout is
 *     "org.freezerd.Freezer1.Error.Timeout"). An argument refused before
 *     anything is sent (a NULL path, an order or a resource out of range) is
 *     -EINVAL with "org.freedesktop.DBus.Error.InvalidArgs" and a message
 *     naming the argument and its value (since libfreezer 0.6.1; the message
 *     was "Invalid argument"). freezer_open_*() fail
 *     without a handle and report the errno only.
 *   - A handle is not thread-safe and must not be used after fork(); use one
 *     handle per thread. Handles are independent of each other: threads may
 *     use their own at the same time, and the functions that take no handle
 *     (freezer_state_to_string(), freezer_strv_free(), freezer_group_clear(),
 *     ...) may be called from any thread.
 *   - Signals: the calls that wait for freezerd's answer (all but the
 *     _async() ones, freezer_dispatch() and the loop functions below) wait in
 *     ppoll(). A signal that the program handles (one with a handler: a
 *     container manager's SIGCHLD, a timer's) runs its handler and the wait
 *     goes on, until the answer or the call's method-call timeout, with every
 *     libsystemd (since 0.4.8: before, with libsystemd before 253, such as
 *     Debian 12's 252, the call failed with -EINTR although freezerd carried
 *     it out, and its answer was lost).  So a signal does not end a blocking
 *     call: a program that must stop waiting when one comes uses the _async()
 *     forms from its event loop.  freezer_open_*() and freezer_close() wait
 *     on through such signals, too.
 *   - Paths name cgroups relative to freezerd's cgroup root, e.g. "/" or
 *     "/pods/pod1/ctr"; a missing leading "/" and one trailing "/" are
 *     accepted ("pods/pod1/" is "/pods/pod1"). A call on a group outside
 *     the subtrees the daemon tracks (freezer_freeze(), freezer_get_group(),
 *     ...) makes it track that group's subtree from then on, as
 *     freezer_track() does; freezer_lookup_group() with
 *     FREEZER_LOOKUP_TRANSIENT only while the handle is open.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#  define FREEZER_EXPORT __attribute__((visibility("default")))
#else
#  define FREEZER_EXPORT
#endif

typedef struct freezer freezer;

/* Flags of freezer_freeze(), freezer_thaw(), freezer_apply_batch() and
 * freezer_freeze_except(). They are passed to the daemon as they are; a daemon
 * that does not know a bit fails with -EINVAL. */
/* On timeout write the previous cgroup.freeze value back before failing. For
 * batches (freezer_apply_batch(), freezer_freeze_except(), FREEZER_RECURSIVE)
 * this makes the batch all-or-nothing: on timeout or on a failed write every
 * flag the batch changed is restored.  A timeout of a call that wrote no
 * flag (each already as asked) says so, naming the flags, which stay:
 * ". ROLLBACK_ON_TIMEOUT had nothing to restore: the cgroup.freeze of the
 * group already as asked was 1 before this call and stays 1, and the kernel
 * goes on freezing it: /h" (a freeze of a group already freezing). */
#define FREEZER_ROLLBACK_ON_TIMEOUT (UINT64_C(1) << 0)
/* Return once cgroup.freeze is written, without waiting for the kernel. */
#define FREEZER_NO_WAIT (UINT64_C(1) << 1)
/* freezer_freeze(), freezer_thaw(), freezer_apply_batch(): the request applies
 * to every group of the subtree below its path (the path's group included), as
 * one batch: freezes top-down, thaws bottom-up. freezer_thaw() with it clears
 * every own flag in the subtree, also those of the groups the daemon does not
 * follow (odd names, too deep, the inotify watch limit), or fails with -ENOBUFS
 * (LimitsExceeded) with nothing written where it cannot reach them all.
 * freezer_freeze_except() refuses it (-EINVAL).
 * Daemons before the batch interface refuse it, too. */
#define FREEZER_RECURSIVE (UINT64_C(1) << 2)
/* freezer_apply_batch() only (since libfreezer 0.5): a request whose group
 * does not exist is left out (not written, not waited for) and counted in
 * *ret_skipped, and the call succeeds for the others, where it would fail with
 * -ENOENT, nothing written. "Does not exist" is exactly the daemon's
 * NoSuchGroup: a path never made or removed (also a moment ago, before the
 * daemon read the removal, or while the batch writes or waits), inside or
 * outside the tracked subtrees. A malformed path, "/", a conflict or any other
 * error still fails the call as without it. Which requests were left out is
 * not told: the reply holds the two counts only. freezer_freeze(),
 * freezer_thaw() and freezer_freeze_except() refuse it (-EINVAL), and so does
 * a daemon older than the flag (-EINVAL, its message "Unknown flags 0x8 ..."),
 * nothing written. */
#define FREEZER_SKIP_MISSING (UINT64_C(1) << 3)

/* The order in which freezer_apply_batch() writes the flags.
 *   FREEZER_ORDER_AUTO       all freezes top-down (shallowest first), then all
 *                            thaws bottom-up (deepest first), so that every
 *                            group changes its kernel state at most once
 *   FREEZER_ORDER_TOP_DOWN   shallowest first
 *   FREEZER_ORDER_BOTTOM_UP  deepest first */
typedef enum freezer_order {
        FREEZER_ORDER_AUTO,
        FREEZER_ORDER_TOP_DOWN,
        FREEZER_ORDER_BOTTOM_UP,
} freezer_order;

/* One request of freezer_apply_batch(): set (freeze) or clear (thaw) the own
 * cgroup.freeze flag of the group at path. */
typedef struct freezer_request {
        const char *path;
        bool freeze;
} freezer_request;

/* The daemon's FreezerState. The values are ABI: new states will be appended
 * after FREEZER_STATE_UNKNOWN. */
typedef enum freezer_state {
        FREEZER_STATE_RUNNING,
        FREEZER_STATE_FREEZING,
        FREEZER_STATE_FROZEN,
        FREEZER_STATE_THAWING,
        FREEZER_STATE_FREEZING_BY_PARENT,
        FREEZER_STATE_FROZEN_BY_PARENT,
        FREEZER_STATE_UNKNOWN,
} freezer_state;

typedef struct freezer_group {
        char *path;                   /* "/pods/a" */
        char *object;                 /* D-Bus object path of the group */
        freezer_state state;          /* FreezerState */
        bool freeze;                  /* the group's own cgroup.freeze */
        bool frozen;                  /* the kernel's "frozen" (cgroup.events) */
        bool populated;
        uint32_t descendants;
        uint32_t frozen_descendants;
        uint64_t frozen_usec;         /* cgroup.stat.local frozen_usec, 0 if unavailable */
} freezer_group;

/* Called from freezer_dispatch() when the daemon signals that a group's
 * FreezerState or Frozen changed. path is only valid during the call. */
typedef void (*freezer_state_callback)(freezer *f, const char *path, freezer_state state,
                                       bool frozen, void *userdata);

/* Connect to the system bus, the user's session bus, or a D-Bus broker at the
 * given address (e.g. "unix:path=/run/dbus/system_bus_socket"). The
 * connection is set up synchronously, so connection and authentication errors
 * are reported here. On success *ret holds a new handle; on failure *ret is
 * NULL (unless ret itself is NULL) and the functions below return one of:
 *   -EINVAL        ret is NULL; an address that is NULL, empty, or has an
 *                  entry without a "transport:" (freezer_open_address(); and
 *                  $DBUS_SYSTEM_BUS_ADDRESS for freezer_open_system(),
 *                  $DBUS_SESSION_BUS_ADDRESS for freezer_open_user(), where
 *                  set); an empty path (freezer_open_private())
 *   -ENOENT        no socket at the address: no bus, or no freezerd, listens
 *                  there; freezer_open_user() also when the environment names
 *                  no user bus (neither $DBUS_SESSION_BUS_ADDRESS nor
 *                  $XDG_RUNTIME_DIR)
 *   -ECONNREFUSED  the socket exists but nobody accepts on it (left by a
 *                  daemon that exited, or not a socket), or no entry of the
 *                  address names a transport sd-bus knows
 *   -EACCES        not permitted: the socket, or a directory on its path, is
 *                  not ours to use (freezerd's private socket is root's, mode
 *                  0600), or the peer refused our authentication
 *   -ECONNRESET    the peer closed the connection during the handshake (a
 *                  dbus-daemon does so when it will not have our uid, e.g.
 *                  another user's session bus)
 *   -EPROTO        the peer does not speak D-Bus as expected: e.g.
 *                  freezer_open_address() on freezerd's private socket, which
 *                  is no bus broker (it does not know Hello)
 *   -ENAMETOOLONG  the socket path does not fit a sockaddr_un (107 bytes)
 *   -ETIMEDOUT     the handshake did not complete within 25 s
 *   -ENOMEM
 * Other errnos of connect(2) come through as they are, but for tcp:
 * addresses, where sd-bus reports a refused connection as -ECONNRESET. No
 * handle exists, so there is no freezer_last_error_name(). */
FREEZER_EXPORT int freezer_open_system(freezer **ret);
FREEZER_EXPORT int freezer_open_user(freezer **ret);
FREEZER_EXPORT int freezer_open_address(freezer **ret, const char *address);

/* The private socket of freezerd (path NULL: FREEZER_PRIVATE_SOCKET; a daemon
 * started with --runtime-dir=DIR listens on DIR/private), as systemctl uses
 * /run/systemd/private when it runs as root: a direct connection to the
 * daemon, without dbus-daemon in between, so a call costs one round trip to
 * freezerd and nothing else.  Errors as above; the socket is root's (mode
 * 0600): others get -EACCES, and -ENOENT or -ECONNREFUSED mean no daemon
 * listens there; fall
 * back to freezer_open_system() then. A daemon that does not answer the
 * handshake within 25 s (stopped, or stuck) gives -ETIMEDOUT; so does a bus
 * that does not, for the other freezer_open_*(). A bus daemon's socket
 * given here is not told from freezerd's at the open (nothing in the
 * handshake of a direct connection says who answers): its first call then
 * fails with -ECONNRESET.
 * Calls and their answers are the same as on the bus.  The state and group
 * callbacks work too, and get their signals straight from freezerd (one hop
 * less from a kernel event to the callback); the handle does not outlive the
 * daemon, though: when it exits, freezer_dispatch() fails with -ECONNRESET or
 * -ENOTCONN (the resync callback gets FREEZER_RESYNC_DISCONNECTED), where a bus
 * handle would wait for the next one.  Pressure
 * triggers work as on the bus; they belong to the handle's connection and end
 * with it (reason "disconnected", see freezer_add_pressure_trigger()). */
#define FREEZER_PRIVATE_SOCKET "/run/freezerd/private"
FREEZER_EXPORT int freezer_open_private(freezer **ret, const char *path);

/* Disconnect and free the handle (NULL is fine). Returns NULL. It may be
 * called from any callback (to reconnect after a lost connection, say): then
 * no further callback runs, and the handle is freed when freezer_dispatch()
 * returns (0); do not use it after freezer_close() either way.
 *
 * Calls started with the _async() functions and still queued are sent before
 * the connection closes (no callback runs for them, and their userdata is not
 * touched again): the daemon carries them out. For that, freezer_close() (or,
 * after a close from a callback, the freezer_dispatch() that frees the
 * handle) waits while the peer reads them,
 * however slowly; then, with calls in flight (or cancelled with
 * freezer_cancel_call(), which freezerd carries out all the same), on
 * freezerd's private socket until freezerd has read them all, and on the bus
 * for one round trip to freezerd (it refuses the calls of a caller that left
 * before the bus told it the caller's uid), at most 25 s; a signal the
 * program handles does not end the wait. It does not wait for ever: once the peer
 * (freezerd, or the bus) took nothing for 5 s, being stopped or no longer
 * reading, what is left unsent is dropped. freezer_close() runs no
 * callback. */
FREEZER_EXPORT freezer *freezer_close(freezer *f);

/* The D-Bus error name/message of the last failed call on f, or NULL if no
 * call failed yet. The strings stay valid until the next failure or
 * freezer_close(). */
FREEZER_EXPORT const char *freezer_last_error_name(freezer *f);
FREEZER_EXPORT const char *freezer_last_error_message(freezer *f);

/* Set (freeze) or clear (thaw) the group's cgroup.freeze and, unless
 * FREEZER_NO_WAIT is given, block until the kernel confirms it.
 * timeout_usec is the daemon's timeout; 0 means the daemon's
 * DefaultTimeoutUSec. The method call itself waits timeout_usec + 5 s (for 0,
 * without asking the daemon for its default: 24 h + 5 s, 24 h being the
 * largest DefaultTimeoutUSec freezerd accepts; a daemon that exits fails the
 * call at once). Thaw fails with -EBUSY
 * (FrozenByParent) if an ancestor still freezes the group: its own flag is
 * cleared nevertheless. */
FREEZER_EXPORT int freezer_freeze(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags);
FREEZER_EXPORT int freezer_thaw(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags);

/*
 * Set many groups' own cgroup.freeze flags in one call (Manager.ApplyBatch).
 *
 * The daemon validates every path before it writes anything: one malformed or
 * missing path fails the whole call (-EINVAL, -ENOENT) with nothing written,
 * and the error message names the request by its index (counted from 0).
 * So does a group removed a moment ago, before the daemon read its removal
 * (-ENOENT, the message naming the path and saying "nothing was written");
 * one removed while the writes go on is the one case with writes made:
 * rolled back with FREEZER_ROLLBACK_ON_TIMEOUT, else the message names the
 * groups written before it, which stay. A group below a FREEZER_RECURSIVE
 * request that is removed meanwhile is left out: before its write, neither
 * written nor counted; while the call waits, no longer waited for. The call
 * succeeds without it. With FREEZER_SKIP_MISSING a named group that does not
 * exist, for any of these reasons, is left out too, counted in *ret_skipped
 * (once per path), instead of failing the call. An empty batch (n == 0) fails
 * with -EINVAL, and so does one above the daemon's limit (65536 requests).
 *
 * When a path occurs more than once, the last request wins, and the others
 * count neither as written nor as skipped (so writes + skipped is the number
 * of distinct groups, not n). A request that matches the group's current flag
 * is skipped; *ret_writes receives the number of flags written, *ret_skipped
 * that of requests skipped (either pointer may be NULL; both are set to 0 on
 * failure). With FREEZER_RECURSIVE each request
 * stands for its path's whole subtree, and the counts are of the groups in
 * those subtrees; a -ETIMEDOUT of such a batch without
 * FREEZER_ROLLBACK_ON_TIMEOUT names in its message the flags it set, as
 * freezer_freeze_except()'s does.
 *
 * Unless FREEZER_NO_WAIT is given, the call returns once every requested
 * group's kernel "frozen" matches its final effective flag (frozen when it or
 * an ancestor has freeze set), or fails with -ETIMEDOUT: then, without
 * FREEZER_ROLLBACK_ON_TIMEOUT, the flags stay as requested and the error
 * message names the groups that did not finish; with it, every flag the batch
 * changed is restored first, but one that a later call asked for as it was set
 * (that call was told it is done): the message names it ("was kept"); a
 * batch that wrote no flag says so (FREEZER_ROLLBACK_ON_TIMEOUT). A later
 * request that reverses one of the batch's
 * flags before the kernel confirmed it fails the call with -ECANCELED.
 *
 * timeout_usec and the method-call timeout are as for freezer_freeze(). A
 * request for "/" (the daemon's cgroup root) fails with -EINVAL, except with
 * FREEZER_RECURSIVE, where it stands for every group below the root.
 *
 * On the bus, a call larger than the bus daemon's message limit
 * (dbus-daemon's max_message_size: 32 MiB on the system bus, about 500
 * requests of 64 KiB, or 65536 of 500 bytes) makes the bus daemon drop the
 * connection: the call fails with -ECONNRESET, its error message giving the
 * call's size and asking to split the batch, and the handle is lost (later
 * calls fail with -ENOTCONN: open a new one). freezerd's private socket has
 * no such limit.
 */
FREEZER_EXPORT int freezer_apply_batch(freezer *f, const freezer_request *requests, size_t n,
                                       freezer_order order, uint64_t timeout_usec, uint64_t flags,
                                       uint32_t *ret_writes, uint32_t *ret_skipped);

/*
 * Freeze everything below path except the subtrees in exclude[0, n_exclude),
 * by freezing the fewest groups that cover the rest: at each level, the
 * siblings of an excluded branch (Manager.FreezeExcept). Every excluded path
 * must lie strictly below path (-EINVAL otherwise); the daemon takes at most
 * 4096 of them. An excluded group that cannot keep running fails the call
 * with nothing written: -EINVAL if its own flag is set, -EBUSY
 * (FrozenByParent) if an ancestor's is. So does a group the cover would
 * freeze on its own that the daemon does not follow: -EOPNOTSUPP
 * (NotSupported) for its name, -ENOBUFS (LimitsExceeded) when the daemon
 * could not watch it. With none, path itself is frozen (for "/", which cannot be
 * frozen, every group directly below it). Processes directly in path or in
 * another ancestor of an excluded group keep running: the kernel cannot
 * freeze a group without its descendants.
 *
 * The groups are frozen as one top-down batch; flags, timeout_usec and the
 * method-call timeout are as for freezer_apply_batch(), except that
 * FREEZER_RECURSIVE and FREEZER_SKIP_MISSING are refused (-EINVAL).
 *
 * On success returns the number of groups frozen (their flags set; those that
 * were set already count, too) and, if ret_frozen is not NULL, stores their
 * paths in *ret_frozen as a NULL-terminated array (empty, but not NULL, when
 * there was nothing to freeze), so that one freezer_apply_batch() can thaw
 * them again (with FREEZER_SKIP_MISSING, also once some of them were removed).
 * A group of the cover removed meanwhile (before its write, or
 * while the call waits: its tasks are gone) is left out of both, and the call
 * succeeds without it; path or an excluded group removed a moment ago, before
 * the daemon read its removal, fails the call with -ENOENT (NoSuchGroup),
 * nothing written, as once the daemon read it. Free *ret_frozen with
 * freezer_strv_free(); it is NULL on failure. A -ETIMEDOUT without
 * FREEZER_ROLLBACK_ON_TIMEOUT leaves the flags it set, and its message
 * (freezer_last_error_message()) names them, as "... the flags it wrote stay
 * as asked, and the kernel goes on with them: /a, /b" (at most four, then
 * "and N more"; not the flags set before the call, which *ret_frozen of a
 * success holds too); so does that of a FREEZER_RECURSIVE freeze.
 */
FREEZER_EXPORT int freezer_freeze_except(freezer *f, const char *path,
                                         const char *const *exclude, size_t n_exclude,
                                         uint64_t timeout_usec, uint64_t flags, char ***ret_frozen);

/* Free a NULL-terminated array of strings and the strings (NULL is fine). */
FREEZER_EXPORT void freezer_strv_free(char **l);

/*
 * Calls that do not block.
 *
 * freezer_freeze(), freezer_thaw(), freezer_apply_batch() and
 * freezer_freeze_except() block until the daemon replies, which is when the
 * kernel confirms: seconds, if a group cannot finish freezing. A program with
 * its own event loop (a desktop session, a container manager serving others)
 * uses their _async() forms instead: they send the same call and return at
 * once; the reply is handed to cb from a later freezer_dispatch(), which the
 * loop runs when freezer_get_fd() is readable or freezer_get_timeout() is
 * due. Any number of calls may be in flight at once, and their replies may
 * come in any order: a freeze that waits on a stuck group does not hold up
 * the others.
 *
 * The arguments, the daemon's checks, the method-call timeout and the errors
 * are those of the blocking form. Arguments refused before anything is sent
 * (NULL paths, an unknown order, a path that is not UTF-8) fail the _async()
 * call itself, with the handle's last error set as for the blocking form;
 * then cb never runs. On success *ret_id (if not NULL) receives the call's id
 * (never 0), and cb runs exactly once, unless the call is cancelled
 * (freezer_cancel_call()) or the handle closed first. userdata stays the
 * caller's (the library never frees it): where cb will not run (cancelled,
 * or closed, from a callback too), the library does not touch it again, so
 * free it then. When the connection is lost, or freezerd leaves the bus
 * without answering (it exited), every call in flight completes with
 * -ECONNRESET (org.freedesktop.DBus.Error.Disconnected)
 * from the freezer_dispatch() that notices; a call whose method-call timeout
 * passes, with -ETIMEDOUT (org.freedesktop.DBus.Error.Timeout), as the
 * blocking form.
 *
 * A large call (a batch of many long paths) may not fit the socket at once:
 * the rest is written by freezer_dispatch() when the fd is writable, so poll
 * for the events freezer_get_events() gives, not for POLLIN alone.
 *
 * The result passed to cb, and everything it points to, is valid during the
 * call only. cb may start new calls and cancel others, and close the handle
 * (see freezer_close()). The handle's last error (freezer_last_error_name())
 * is left alone: the result carries the call's own.
 */
typedef struct freezer_call_result {
        uint64_t id;                  /* as returned in *ret_id */
        int error;                    /* 0, or the negative errno the blocking form would return */
        const char *error_name;       /* the D-Bus error's name when error < 0, else NULL */
        const char *error_message;    /* and its message (may be NULL) */
        uint32_t writes, skipped;     /* freezer_apply_batch_async(): as *ret_writes, *ret_skipped */
        const char *const *frozen;    /* freezer_freeze_except_async(): the groups frozen, NULL-terminated;
                                       * NULL for the other calls and on failure */
} freezer_call_result;

typedef void (*freezer_call_callback)(freezer *f, const freezer_call_result *result, void *userdata);

FREEZER_EXPORT int freezer_freeze_async(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags,
                                        freezer_call_callback cb, void *userdata, uint64_t *ret_id);
FREEZER_EXPORT int freezer_thaw_async(freezer *f, const char *path, uint64_t timeout_usec, uint64_t flags,
                                      freezer_call_callback cb, void *userdata, uint64_t *ret_id);
FREEZER_EXPORT int freezer_apply_batch_async(freezer *f, const freezer_request *requests, size_t n,
                                             freezer_order order, uint64_t timeout_usec, uint64_t flags,
                                             freezer_call_callback cb, void *userdata, uint64_t *ret_id);
FREEZER_EXPORT int freezer_freeze_except_async(freezer *f, const char *path, const char *const *exclude,
                                               size_t n_exclude, uint64_t timeout_usec, uint64_t flags,
                                               freezer_call_callback cb, void *userdata, uint64_t *ret_id);

/* Forget a call in flight: its callback will not run. The daemon is not told:
 * it carries the call out all the same (a freeze still freezes; thaw to undo
 * it, and freezer_close() makes sure it has the call, as for one in flight).
 * Returns 0, or -ENOENT if no call with that id is in flight (it has
 * completed, its callback is running, or it was cancelled before). */
FREEZER_EXPORT int freezer_cancel_call(freezer *f, uint64_t id);

/* Make the daemon follow the subtree at path and publish its group objects
 * (Manager.Track), also after the daemon restarts (it keeps the subtrees
 * given to it in its state directory) and after a reload of a configuration
 * that no longer names it. Tracking a group that is tracked already succeeds,
 * unless the daemon must save it and cannot (below).
 * A subtree removed (rmdir) is followed again once it is made again; of such
 * removed subtrees the daemon keeps at most 1,024 waiting, and forgets the one
 * tracked or made the least recently beyond that (track it again then).
 * -EIO (Failed) where the daemon cannot save the subtree to its state
 * directory's tracked.json (a read-only or full file system): the message
 * names the file and the errno's text, and the subtree is not kept as a
 * tracked root (a group within another tracked subtree stays tracked as part
 * of it; one tracked already by a lookup stays tracked until the daemon
 * stops; a root of the daemon's configuration stays tracked by it alone);
 * -ENOMEM (NoMemory) where the save ran out of memory. */
FREEZER_EXPORT int freezer_track(freezer *f, const char *path);
/* Stop following a subtree given to freezer_track() earlier or named in the
 * daemon's configuration (Manager.Untrack). The groups' cgroup.freeze flags
 * are left as they are. A path that is not such a tracked root (a group
 * within a tracked subtree, or outside them) fails with -ENOENT, named
 * NotTracked (a freezerd older than 0.6: NoSuchGroup).  -EIO (Failed) where
 * the daemon cannot save its state directory's tracked.json without the
 * subtree: it stays tracked, as a restart would track it (-ENOMEM, NoMemory,
 * where the save ran out of memory); a subtree that the file lacks (tracked
 * by a lookup whose save failed) is untracked all the same. */
FREEZER_EXPORT int freezer_untrack(freezer *f, const char *path);

/* "running", "freezing", "frozen", "thawing", "freezing-by-parent",
 * "frozen-by-parent", "unknown"; NULL for values out of range. The strings
 * are static. */
FREEZER_EXPORT const char *freezer_state_to_string(freezer_state state);
/* The inverse; NULL or unrecognized strings give FREEZER_STATE_UNKNOWN. */
FREEZER_EXPORT freezer_state freezer_state_from_string(const char *s);
/* Whether a group in that state is frozen as the kernel's "frozen" says
 * (cgroup.events; a freezer_group's frozen, the state callback's): 1 for
 * frozen, frozen-by-parent and thawing (its tasks stay stopped until the
 * kernel is done), 0 for running, freezing and freezing-by-parent.
 * -ENODATA for FREEZER_STATE_UNKNOWN (a state the daemon did not say: the
 * group may be either), -EINVAL for a value out of range.  Since libfreezer
 * 0.6 (version node LIBFREEZER_0.6). */
FREEZER_EXPORT int freezer_state_frozen(freezer_state state);

/* All properties of one group (Manager.GetGroup, which makes the daemon track
 * the group's subtree if it does not yet, then Properties.GetAll). *ret is
 * always overwritten (cleared on failure as by freezer_group_clear(), which is
 * then always safe); it must not hold allocated data when passed in. */
FREEZER_EXPORT int freezer_get_group(freezer *f, const char *path, freezer_group *ret);
/* As freezer_get_group(), and the group's Id (its Id property: the kernel's
 * id of its cgroup, the inode number of its directory, which a group made
 * again under the same path does not keep; see the D-Bus API) into *ret_id
 * if not NULL, from the same reply.  -ENODATA from a freezerd without the
 * property (before 0.5).  Since 0.6. */
FREEZER_EXPORT int freezer_get_group_with_id(freezer *f, const char *path, freezer_group *ret, uint64_t *ret_id);
/* Flags of freezer_lookup_group(). */
/* A group outside the subtrees the daemon tracks is tracked only while this
 * handle's connection lasts (its unique bus name; on the private socket, its
 * connection), as a transient root the daemon never keeps in tracked.json:
 * looking at a group changes nothing for good.  Within the tracked subtrees
 * it is freezer_get_group().  The daemon untracks the transient root once
 * every handle that looked it (or a group in it) up so has closed; a call
 * that tracks it for good meanwhile (freezer_track(), a lookup without the
 * flag, freezer_get_group(), freezer_freeze()... of a group in it) keeps it
 * (that group's path, or the root it names) for good.  Root, or the owner of
 * the group's cgroup.freeze, may cause it (-EACCES otherwise), as for
 * freezer_track(). */
#define FREEZER_LOOKUP_TRANSIENT (UINT64_C(1) << 0)
/* As freezer_get_group_with_id() (ret_id may be NULL), looked up with flags
 * (Manager.LookupGroup; 0: Manager.GetGroup, with any freezerd).  Flags are
 * passed to the daemon as they are: a bit it does not know fails with
 * -EINVAL.  A freezerd without LookupGroup (before it) fails a call with
 * flags with sd-bus' errno of UnknownMethod (-EBADR),
 * freezer_last_error_name() "org.freedesktop.DBus.Error.UnknownMethod":
 * freezer_get_group() then tracks the group for good.  Since libfreezer 0.7
 * (version node LIBFREEZER_0.7). */
FREEZER_EXPORT int freezer_lookup_group(freezer *f, const char *path, uint64_t flags, freezer_group *ret,
                                        uint64_t *ret_id);
/* Free the strings of *g and clear it: every field zero, but state
 * FREEZER_STATE_UNKNOWN (running is 0). NULL is fine. */
FREEZER_EXPORT void freezer_group_clear(freezer_group *g);

/* Every group the daemon tracks (and "/", its cgroup root, always), in the
 * daemon's order (sorted by path, in strcmp() order, since freezerd 0.6).
 * Only path, object, state and frozen (which the state implies, as
 * freezer_state_frozen() says: true for frozen, frozen-by-parent and thawing;
 * since 0.4.5, zero before) are filled in; the other fields are zero. *ret is
 * NULL and *ret_n 0 when there is none, and on failure. Free with
 * freezer_group_array_free(). */
FREEZER_EXPORT int freezer_list(freezer *f, freezer_group **ret, size_t *ret_n);
FREEZER_EXPORT void freezer_group_array_free(freezer_group *a, size_t n);

/* The path and Id of every group freezer_list() lists (Manager.ListGroupIds),
 * in the same order; but as another call, not the same snapshot: a group made
 * or removed between the two is in one of them only.  *ret is NULL and *ret_n
 * 0 when there is none, and on failure.  Free with
 * freezer_group_id_array_free().  Since 0.6.  The array's element size is
 * part of the ABI: freezer_group_id never grows (what more a later version
 * lists comes in a call of its own). */
typedef struct freezer_group_id {
        char *path;
        uint64_t id;
} freezer_group_id;
FREEZER_EXPORT int freezer_list_ids(freezer *f, freezer_group_id **ret, size_t *ret_n);
FREEZER_EXPORT void freezer_group_id_array_free(freezer_group_id *a, size_t n);

/* The absolute path of the daemon's cgroup root, the group its paths are
 * relative to ("/" names it; the Manager's CgroupRoot property), e.g.
 * "/sys/fs/cgroup": what a path in an error message or the state of "/"
 * (frozen-by-parent: frozen by a group above it) refers to.  *ret is a
 * string to free(), NULL on failure.  Since libfreezer 0.6 (version node
 * LIBFREEZER_0.6). */
FREEZER_EXPORT int freezer_get_cgroup_root(freezer *f, char **ret);

/*
 * Event loop integration.
 *
 * freezer_get_fd() returns the bus connection's file descriptor; poll it for
 * the events freezer_get_events() returns (POLLIN, and POLLOUT while part of a
 * message waits to be written: ask again before every poll) and call
 * freezer_dispatch() when it is ready. The connection also
 * reads messages during blocking calls (freezer_freeze(), freezer_get_group(),
 * ...) and queues signals that arrive meanwhile in memory, where they do not
 * make the fd readable: call freezer_dispatch() after every blocking call, too.
 * That queue holds up to 393,216 messages (as many as sd-bus holds); past
 * that, signals are dropped (never a call's reply, nor a signal that a
 * daemon, the connection or a trigger went, nor a trigger's firing: see the
 * pressure callback) until freezer_dispatch() makes room, and the handle
 * makes up for what it can: see the state and group callbacks.
 * The fd is non-blocking and close-on-exec, and belongs to the handle: do not
 * close it or read from it. It stays the same for the handle's life but for
 * one thing: when the connection is lost, the library closes it, not
 * freezer_close(); it is closed by the time freezer_dispatch() reports the
 * loss (FREEZER_RESYNC_DISCONNECTED to the resync callback, "disconnected" to
 * the pressure-removed callback, or freezer_dispatch() failing), and from
 * then on freezer_get_fd(), freezer_get_events() and freezer_get_timeout()
 * fail with -ENOTCONN.  So drop it from the loop then, before a new handle is
 * opened (from that callback, say): the new socket may get the same number,
 * and removing the old registration afterwards (EPOLL_CTL_DEL,
 * sd_event_source_unref(), event_del()) would remove the new one.  (epoll
 * forgets a closed fd by itself.)
 *
 * Callbacks run only from freezer_dispatch(): never from the blocking calls,
 * the _async() calls, the freezer_set_*_callback() calls or freezer_close().
 *
 * freezer_dispatch() processes what is pending without blocking and runs
 * the callbacks for it (the callbacks of calls in flight, and the state, group,
 * resync, pressure and pressure-removed callbacks, in the order the messages
 * came). It is bounded (since 0.4; before, a flood of signals kept it from
 * ever returning): of the messages on the socket it processes at most
 * FREEZER_DISPATCH_MAX (a step each, the queued ones below counted in), but
 * every message a blocking call had read and queued in memory already (up to
 * 16 * FREEZER_DISPATCH_MAX steps in all); if it stopped at a bound it
 * returns, leaving the rest for the next call, and until then
 * freezer_get_timeout() says "now" (0) and freezer_wait() returns > 0 at once
 * (the fd is readable, too, while the rest is on the socket). A loop that
 * waits for the fd and for freezer_get_timeout(), or on freezer_wait(), needs
 * nothing more. One that waits for the fd alone is woken by it for what is
 * left on the socket, but not for what is left in memory: only callbacks that
 * make a blocking call for every message (each reading more into memory) get
 * there, and then the rest waits for the next message on the fd; such a loop
 * calls freezer_dispatch() again while it returns FREEZER_DISPATCH_MAX or
 * more. It returns how many steps did
 * something (0 if there was nothing to do; a call's method-call timeout may
 * be handled in a step that counts 0; FREEZER_DISPATCH_MAX or more if it may
 * have stopped at the bound) or a negative errno, e.g. -ECONNRESET or
 * -ENOTCONN once the bus connection is lost: a lost connection's callbacks
 * (-ECONNRESET for calls in flight, "disconnected" for pressure triggers,
 * FREEZER_RESYNC_DISCONNECTED for the resync callback) may run in the dispatch that sees the loss or in the
 * next one, which then fails. -ENOMEM is not fatal, unlike those: an event
 * loop should note it and go on dispatching, not close the handle or stop.
 * It says that a reply the handle waits for
 * to make up for what it may have missed (the state callback's Ids or
 * states read again, after a start of freezerd or dropped signals; the
 * group callback's list, the one at its installation too) could not be
 * asked for (its call not sent, for lack of memory or as sd-bus' write
 * queue was full: 0.6.4; so too the state callback's match and
 * subscription sent after a start of freezerd, and its fallback to
 * GroupsChanged, made by the next freezer_dispatch() then), queued or
 * loaded for lack of memory, or
 * was freezerd's NoMemory (it
 * lacked the memory for that list, or for the state callback's
 * subscription after it started, or for its fallback's SubscribeGroups(),
 * each sent again then; so too dbus-daemon's NoMemory or LimitsExceeded,
 * the call not passed on: 0.6.5)
 * (the dispatch may have run callbacks before); one -ENOMEM says every such
 * reply lost since the last freezer_dispatch() returned (several lost during
 * one blocking call, say, fail the next freezer_dispatch() once); the handle
 * stays usable: the next freezer_dispatch() asks for each again
 * (freezer_get_timeout() says "now" and freezer_wait() returns at once
 * until then), and what changed
 * meanwhile is reported as for dropped signals, late. While the replies of
 * those retries are lost too (a lasting shortage), each further retry waits
 * twice as long as the one before, from 10 ms up to 1 s, until a reload
 * gets all its replies (the states read after the Ids, too; since 0.6.5
 * the fallback to SubscribeGroups() too, which waits for its answer and
 * reads the states after it), or the retries are dropped (their callback
 * removed, freezerd restarted, the connection lost): the next loss is
 * retried at once again. The state callback's reloads and the group
 * callback's lists each back off on their own: a reply kept of one kind
 * does not end the other's backoff. freezer_get_timeout() says when the
 * retry is due, freezer_wait() returns then, and a freezer_dispatch()
 * before that does not start it; the losses fail freezer_dispatch() with
 * -ENOMEM as above. It must not be called from a
 * callback (it fails with -EBUSY); the callbacks may call the other
 * functions, including the freezer_set_*_callback() ones and
 * freezer_close().
 *
 * freezer_get_timeout() stores in *ret_usec when freezer_dispatch() is due
 * even if the fd stays quiet, as CLOCK_MONOTONIC time in microseconds:
 * UINT64_MAX for never, 0 for now (messages already read and queued, e.g. by a
 * blocking call). A loop that also waits for that time needs no other rule;
 * it is how a call of freezer_*_async() whose daemon never answers ends, with
 * -ETIMEDOUT, after its method-call timeout, and how a reload whose reply was
 * lost for lack of memory is retried once its wait is over (see -ENOMEM
 * above). Returns > 0 if there is a time,
 * 0 if not, or a negative errno (-ENOTCONN: the connection is lost).
 *
 * freezer_wait() blocks until there is something to dispatch or timeout_usec
 * passed (UINT64_MAX: no timeout), minding both. It returns > 0 if
 * freezer_dispatch() should be called (also at once, when messages are
 * queued already or a call's deadline has passed), 0 on timeout, or a
 * negative errno: -EINTR when a signal the program handles came first (as
 * poll(2); call it again; with libsystemd 253 or later it returns > 0
 * instead, and freezer_dispatch() then finds nothing to do), or the
 * connection's failure. Simple callers loop on freezer_wait() +
 * freezer_dispatch().
 */
#define FREEZER_DISPATCH_MAX 64
FREEZER_EXPORT int freezer_get_fd(freezer *f);
/* The poll events to wait for on freezer_get_fd(): POLLIN, | POLLOUT while a
 * message is not written out yet; or a negative errno (the connection is
 * lost). Since 0.3. */
FREEZER_EXPORT int freezer_get_events(freezer *f);
FREEZER_EXPORT int freezer_get_timeout(freezer *f, uint64_t *ret_usec);
FREEZER_EXPORT int freezer_dispatch(freezer *f);
FREEZER_EXPORT int freezer_wait(freezer *f, uint64_t timeout_usec);

/*
 * Install (or replace, or with cb == NULL remove) the state callback. The first
 * installation adds a bus match for the daemon's GroupStatesChanged signal
 * (one message per turn of the daemon's loop, listing every group that
 * changed as numbers, each group named by its Id), asks the daemon for it
 * (Manager.SubscribeGroupStates(): the daemon sends it only while some
 * client asked) and loads every group's Id (Manager.ListGroupIds(); later
 * groups' Ids come with InterfacesAdded).  A daemon without that signal (one
 * from before it, or a bus policy that refuses the call) gets the older
 * GroupsChanged instead (Manager.SubscribeGroups(); about three times the
 * bytes per group, parsed entry by entry), with the same callbacks.  The
 * handle asks again whenever the daemon (re)starts, and loads the new one's
 * Ids (signals that come meanwhile wait for them, up to 1,024 messages;
 * past that they are dropped and, once the Ids are in, every group's state is
 * read again with Manager.ListGroups() and those that differ from what the
 * handle knew are reported: a change in between may go unreported, the state
 * it led to is not); a daemon that is not running yet is no error, nor, on
 * the bus, one that exits during these calls (it left the bus unanswered,
 * or before it was asked: the callback is installed all the same, and the
 * handle subscribes once a freezerd takes the name, as after a restart; the
 * resync callback hears of both).  Where such a freezerd refuses
 * SubscribeGroups() too (a bus policy that refuses both: AccessDenied;
 * freezerd's Failed), the installation fails with that error; after a
 * (re)start, where the handle subscribes within freezer_dispatch(), the
 * next freezer_dispatch() fails once with its errno (-EACCES, -EIO, ...,
 * freezer_last_error_name() and freezer_last_error_message() the refusal's
 * name and message: since 0.6.5; before, the refusal
 * went unseen and no change was reported; since 0.7 a reply lost after it
 * does not replace it: that reply is asked for again all the same, without
 * its -ENOMEM), and the callback, installed
 * still, hears of nothing from that freezerd (it is not asked again) until
 * the next start.  A SubscribeGroups() that the method-call timeout ends
 * there (a freezerd slow to answer, or stopped for a while) is no refusal:
 * sent again, without an error, the states read after its answer (since
 * 0.6.5: before, it failed the dispatch with -ETIMEDOUT and was not
 * retried).  On a private handle freezerd exiting
 * loses the connection: -ECONNRESET, as for any call.  So
 * too when signals are dropped past the handle's queue (see "Event loop
 * integration"): the states are read again, and for a dropped
 * InterfacesAdded or InterfacesRemoved the Ids first (a group made meanwhile
 * is reported once, with its state; one removed meanwhile, which the Ids no
 * longer list, is forgotten, as its InterfacesRemoved would have made it:
 * this callback is told of no removal, the group callback is);
 * with GroupsChanged, too.  The call blocks until the daemon confirms, so
 * changes after it returns are not missed: to follow a group, install the
 * callback first, then read the initial state with freezer_get_group().
 * Removing the callback ends the subscription.
 *
 * cb gets the group's path, its FreezerState and its Frozen property, at most
 * once per group per signal, and only when one of the two differs from what
 * the handle last knew of that group (from an earlier signal, or from
 * freezer_get_group() or freezer_list() while the callback was installed). A
 * signal lists groups whose counts changed, too (an ancestor's frozen
 * descendants): to follow many groups, call freezer_list() once after
 * installing the callback, or their first mention is reported.  The callback may
 * remove or replace itself.
 *
 * What the handle knows is kept only while the callback is installed, one
 * entry per group: a group's entry goes when the daemon stops publishing it
 * (so a group made again under the same path starts afresh; for this the
 * callback also adds the match of the group callback below, and is woken by
 * its signals, and a dropped InterfacesRemoved is made up for by the Ids
 * loaded again), and all of them when the daemon exits or restarts, or the
 * connection is lost (see freezer_set_resync_callback()). Lookups by path
 * and by Id are hashed: a storm over 10,000 groups costs no scan.  Beyond
 * 4,194,304 groups (or without the memory) the rest are not remembered:
 * with GroupsChanged their every mention is reported, with
 * GroupStatesChanged they are not reported (the handle lacks their Id).
 * Ids loaded again that lack the memory for their table (or that freezerd
 * answers NoMemory) are loaded again from the next freezer_dispatch(), which
 * fails with -ENOMEM (see there).
 */
FREEZER_EXPORT int freezer_set_state_callback(freezer *f, freezer_state_callback cb, void *userdata);

/*
 * Groups appearing and disappearing.
 *
 * Install (or replace, or with cb == NULL remove) the group callback. The
 * first installation adds a bus match for the daemon's InterfacesAdded and
 * InterfacesRemoved and, on the bus, one for freezerd's bus name changing
 * hands, then reads the daemon's groups with their Ids
 * (Manager.ListGroupIds(); a daemon that is not running is not started, and
 * is no error), blocking until the bus and the daemon answered. cb gets the
 * path of a group that the daemon started publishing (added: a new cgroup in
 * a tracked subtree, or a subtree given to freezer_track()) with its
 * FreezerState (FREEZER_STATE_UNKNOWN if the signal did not carry it), or of
 * one it stopped publishing (added false, state FREEZER_STATE_UNKNOWN: the
 * cgroup was removed or its subtree untracked). path is only valid during the
 * call.  Changes after the call returns are reported; to follow the groups,
 * install the callback first, then read them (freezer_list()).
 *
 * While the callback is installed the handle keeps the groups it knows (from
 * that list and the signals since: path and Id, one entry per group), and
 * reports a signal only if it changes them, so each group is reported added
 * once and removed once.  When signals are dropped past the handle's queue
 * (see "Event loop integration"), it reads the groups again (ListGroupIds(),
 * not waited for) and reports what differs from what it knew: a group made
 * meanwhile added (FREEZER_STATE_UNKNOWN: the list has no states), one
 * removed removed, and a path whose group was removed and made again (another
 * Id) removed, then added; the removals first, not in the order of the
 * events, and a group made and removed again meanwhile not at all.
 *
 * What changed while no freezerd ran is not reported: the groups of a
 * freezerd that (re)starts are read as the new reference (see the resync
 * callback's FREEZER_RESYNC_DAEMON_STARTED: read the groups afresh), and
 * signals are reported as they come until they are in; but if signals are
 * dropped before that, the list is compared with what the handle knew, and
 * those groups are reported with the others.  Without that list (a daemon
 * without ListGroupIds(), or more than 4,194,304 groups), signals are
 * reported as they come, and a group whose signal was dropped is not
 * reported: after a long blocking call under a flood, read the groups afresh
 * to be sure.  A list that lacks the memory for its call, its reply or its table, or
 * that freezerd answers NoMemory (it lacked the memory for it), the
 * one at the installation (which still returns 0) or a later one (after a
 * dropped signal or a start of freezerd), is read again from a later
 * freezer_dispatch() (the first retry at once, further ones backing off),
 * and the dispatch that sees the loss fails with -ENOMEM (see there); until
 * the list at the installation is in, signals are reported as they come, and
 * a group whose signal is dropped before then is not reported: there is no
 * table yet to compare the list read for it with.
 */
typedef void (*freezer_group_callback)(freezer *f, const char *path, bool added, freezer_state state,
                                       void *userdata);
FREEZER_EXPORT int freezer_set_group_callback(freezer *f, freezer_group_callback cb, void *userdata);

/*
 * Resync: what the handle knew of freezerd's groups may be stale (since 0.4).
 *
 * The state and group callbacks report changes as freezerd signals them. When
 * freezerd exits or restarts no signal covers the meantime: groups may have
 * been made, removed, frozen or thawed, and the new daemon starts with no
 * subscription and no pressure trigger of ours. Install (or replace, or with
 * cb == NULL remove) the resync callback to hear of it; it is called from
 * freezer_dispatch() with:
 *   FREEZER_RESYNC_DAEMON_EXITED   freezerd left the bus (stopped, crashed, or
 *                                  the first half of a restart)
 *   FREEZER_RESYNC_DAEMON_STARTED  a freezerd took the bus name (started, or
 *                                  restarted): the handle has subscribed again
 *                                  for the state callback; read the state
 *                                  afresh (freezer_list(), freezer_get_group())
 *                                  and add pressure triggers again
 *   FREEZER_RESYNC_DISCONNECTED    the handle's own connection was lost (on a
 *                                  private handle: freezerd exited); nothing
 *                                  more will come: open a new handle
 * A restart is EXITED, then STARTED (a bus name handed over directly gives
 * both, from one signal). Before the callback runs, the handle has forgotten
 * the states the state callback compares against, so each group's first
 * mention afterwards is reported. The callback may call any function but
 * freezer_dispatch(), close the handle included. On a bus handle installing
 * it adds a match for freezerd's bus name changing hands (blocking until the
 * bus confirms it); on a private handle it needs no bus call.
 */
typedef enum freezer_resync_reason {
        FREEZER_RESYNC_DAEMON_EXITED,
        FREEZER_RESYNC_DAEMON_STARTED,
        FREEZER_RESYNC_DISCONNECTED,
} freezer_resync_reason;
typedef void (*freezer_resync_callback)(freezer *f, freezer_resync_reason reason, void *userdata);
FREEZER_EXPORT int freezer_set_resync_callback(freezer *f, freezer_resync_callback cb, void *userdata);

/*
 * Pressure stall information (PSI, the kernel's Documentation/accounting/psi.rst).
 *
 * For each resource the kernel accounts the time in which "some" tasks were
 * stalled waiting for it, and the time in which "full"y all non-idle tasks
 * were stalled at once: as averages (percent of wall time over the last 10,
 * 60 and 300 seconds) and as a cumulated total in microseconds. freezerd
 * reads them from a group's cpu/memory/io.pressure, or for the system from
 * /proc/pressure/, at the moment of each call: nothing is cached or polled.
 * A total never goes backwards between two readings.
 *
 * "path" arguments: a group's path, or NULL for the whole system. IRQ
 * pressure exists for the system only, and has only a "full" line.
 */

/* The values are ABI: new resources will be appended. */
typedef enum freezer_resource {
        FREEZER_RESOURCE_CPU,
        FREEZER_RESOURCE_MEMORY,
        FREEZER_RESOURCE_IO,
        FREEZER_RESOURCE_IRQ,
} freezer_resource;

typedef struct freezer_pressure_line {
        double avg10, avg60, avg300;  /* percent of the time stalled over 10 s, 60 s, 300 s */
        uint64_t total_usec;          /* cumulated stall time */
} freezer_pressure_line;

typedef struct freezer_pressure {
        freezer_pressure_line some;   /* at least one task stalled */
        freezer_pressure_line full;   /* all non-idle tasks stalled at once (NaN averages: the
                                       * kernel has no such line, cpu before Linux 5.13) */
} freezer_pressure;

/* "cpu", "memory", "io", "irq"; NULL for values out of range. The strings are
 * static. */
FREEZER_EXPORT const char *freezer_resource_to_string(freezer_resource r);
/* The inverse (exact, case-sensitive): the enum value (>= 0), or -EINVAL
 * for NULL and unknown strings. */
FREEZER_EXPORT int freezer_resource_from_string(const char *s);

/*
 * Read the pressure of resource r for the group at path (its CpuPressure,
 * MemoryPressure or IoPressure property; the daemon tracks the group's subtree
 * if it does not yet), or with path NULL for the system (the Manager's
 * properties, including IrqPressure). For FREEZER_RESOURCE_IRQ only ret->full
 * is filled in (ret->some is zero). Where the kernel prints no "full" line for
 * cpu (before Linux 5.13), ret->full has no figures: its averages are NaN
 * (isnan()) and its total 0. A group ("/" included: it is freezerd's
 * cgroup root, not the system) has no IRQ pressure: -EOPNOTSUPP (NotSupported),
 * said without asking the daemon, so also for a path that does not exist.
 * (freezer_add_pressure_trigger() refuses a group's IRQ with -EINVAL, as the
 * daemon does: there it is one of the arguments' rules.)
 * *ret is always overwritten (zeroed on failure).
 *
 * Fails with -EOPNOTSUPP (NotSupported) when the kernel hides the file
 * (the group's cgroup.pressure is 0), lacks it (no /proc/pressure/irq) or
 * disables PSI (psi=0): freezer_last_error_message() says which. -ENOENT: no
 * such group. A malformed file fails (never reads as zeros).
 */
FREEZER_EXPORT int freezer_get_pressure(freezer *f, const char *path, freezer_resource r, freezer_pressure *ret);

/*
 * Pressure triggers.
 *
 * freezer_add_pressure_trigger() asks freezerd to watch the group at path
 * (NULL: the system) and to signal whenever the stall time of resource r
 * ("full" if full is true, else "some") grows by at least threshold_usec
 * within window_usec (AddPressureTrigger). The kernel signals at most once per
 * window. The daemon's rules, each refused with -EINVAL and a message naming
 * it: threshold_usec not 0 and not above window_usec; window_usec from 500 ms
 * to 10 s and, unless freezerd has CAP_SYS_RESOURCE and the caller is root, a
 * whole multiple of 2 s; IRQ only for the system and only full. At most 64
 * triggers per connection, 256 per uid but root's over all its connections
 * (at most a quarter of the total), three quarters of the total for all the
 * uids but root's together (the rest is kept for root) and 1024 in all, at
 * most a quarter of freezerd's RLIMIT_NOFILE (-ENOBUFS
 * beyond, LimitsExceeded; a removed trigger counts until the daemon has
 * closed its fd, a moment later, and a call it alone keeps from a bound for
 * more than 50 ms fails so too: retry). -EOPNOTSUPP when the kernel hides or
 * disables the pressure file. On success *ret_id (if not NULL) receives the
 * trigger's id, unique in freezerd.
 * A group the daemon publishes, named by its normalized path, is reached by
 * its object, with no lookup (since 0.7): one tracked for a transient lookup
 * (freezer_lookup_group()) stays transient; any other path is looked up as
 * by freezer_get_group(), tracking its subtree for good.
 *
 * A trigger belongs to this handle's bus connection: freezer_close() (or a
 * lost connection) ends all of them. freezer_remove_pressure_trigger() ends one
 * (path must be the one it was added with, NULL for the system; -EINVAL for
 * ids that are not this handle's triggers on that object, e.g. triggers that
 * ended already). After it returns no callback is run for that trigger, even
 * for signals already received.
 *
 * Events are delivered through freezer_dispatch() to the pressure callback:
 * cb gets the group's path (NULL for a system-wide trigger), the trigger's
 * id, resource and kind, and reading: the current averages and total of that
 * kind. When a trigger ends without freezer_remove_pressure_trigger(), the
 * removed callback gets its path, id, resource, kind and the reason:
 *   "group-removed"    the cgroup was removed
 *   "untracked"        the group's subtree was untracked
 *   "pressure-hidden"  the group's cgroup.pressure was set to 0 (also when
 *                      set back to 1 since)
 *   "error"            the kernel reported an error on the trigger
 *   "daemon-exited"    freezerd left the bus (it stopped or restarted): all of
 *                      its triggers are gone (reported by libfreezer)
 *   "disconnected"     the handle's own connection was lost (on a private
 *                      handle: freezerd exited or closed it): all of the
 *                      handle's triggers are gone (reported by libfreezer,
 *                      from the freezer_dispatch() call that notices it,
 *                      which then fails with -ECONNRESET)
 * The trigger is forgotten before that callback runs. path and reading (and
 * reason) are only valid during the call.
 *
 * A trigger's firings that wait to be dispatched (the handle not dispatched
 * for a while, or a blocking call under a flood of signals) come as one call
 * of the pressure callback, with the latest reading: the callback says that
 * the trigger fired, at least once, since the last call for it.  So no firing
 * is lost, however long the handle waits (they are never dropped past the
 * queue's bound, see "Event loop integration").
 *
 * The daemon sends the pressure signals to the trigger's owner only, which
 * receives them without any bus match: the handle picks them out of what it
 * receives (with the first trigger it adds one match, for freezerd leaving
 * the bus). A signal dispatched while no callback is installed is dropped
 * (a trigger's end still makes the handle forget it). So install the
 * callbacks first, then add triggers, and call freezer_dispatch() whenever
 * the fd is readable and after every blocking call (see above).
 */
typedef void (*freezer_pressure_callback)(freezer *f, const char *path, uint32_t id, freezer_resource r,
                                          bool full, const freezer_pressure_line *reading, void *userdata);
typedef void (*freezer_pressure_removed_callback)(freezer *f, const char *path, uint32_t id,
                                                  freezer_resource r, bool full, const char *reason,
                                                  void *userdata);

FREEZER_EXPORT int freezer_add_pressure_trigger(freezer *f, const char *path, freezer_resource r, bool full,
                                                uint64_t threshold_usec, uint64_t window_usec, uint32_t *ret_id);
FREEZER_EXPORT int freezer_remove_pressure_trigger(freezer *f, const char *path, uint32_t id);

/* Install (or replace, or with cb == NULL remove) the pressure callback and
 * the pressure-removed callback. Neither call talks to the bus. */
FREEZER_EXPORT int freezer_set_pressure_callback(freezer *f, freezer_pressure_callback cb, void *userdata);
FREEZER_EXPORT int freezer_set_pressure_removed_callback(freezer *f, freezer_pressure_removed_callback cb,
                                                         void *userdata);

#ifdef __cplusplus
}
#endif

#endif
