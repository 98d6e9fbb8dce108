/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <json-c/json.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "bus-errors.h"
#include "cgroup-util.h"
#include "freeze-writer.h"
#include "journal.h"
#include "log.h"
#include "manager.h"
#include "pressure.h"
#include "scan-helper.h"
#include "task-state.h"
#include "u64set.h"

enum {
        WD_KIND_DIR,         /* a group's directory: child mkdir and rmdir */
        WD_KIND_FREEZE,      /* a group's cgroup.freeze: writes to it */
        WD_KIND_ROOT_PARENT, /* the directory above the root (below the mount): the root's rmdir */
        WD_KIND_OUTER,       /* the cgroup.freeze of a group above the root: writes to it */
};

/* Two watches per group, and cgroup.events in an epoll set, not watched.
 * kernfs reports a change of cgroup.events to its pollers inside the change
 * itself (or from the timer of its 10 ms rate limit), and to inotify through a work item that allocates and queues one
 * event per file and change: during a freeze of 4,000 groups that work item
 * competes with the write (on the writer's CPU) and we pay for reading every
 * event.  The work item also reports the change, by name, to a watch on the
 * directory with IN_MODIFY: so the directory is watched without it, and
 * writes to cgroup.freeze are seen by a watch on that file. */
#define DIR_WATCH_MASK (IN_CREATE | IN_DELETE | IN_ONLYDIR | IN_EXCL_UNLINK)
#define FREEZE_WATCH_MASK (IN_MODIFY | IN_DONT_FOLLOW)

static bool operation_check(Operation *op);
static bool operation_tasks_frozen(Operation *op);
static void operation_recheck_arm(Operation *op);
static void operation_fail(Operation *op, const char *name, const char *fmt, ...) _printf_(3, 4);
static void operation_doom(Operation *op, bool rollback, const char *name, const char *fmt, ...) _printf_(4, 5);
static void operation_doom_leaving(Operation *op, bool over_success, const char *name, const char *fmt, ...)
        _printf_(4, 5);
static void group_flag_changed(Manager *m, Group *g);
static void operations_frozen_by_parent(Manager *m);
static void entry_unlink(OpEntry *e);
static int group_write_freeze(Manager *m, Group *g, bool v);
static void manager_find_self(Manager *m);
static void group_reread_freeze(Manager *m, Group *g, bool deduce);
static void manager_reread_outer(Manager *m, bool deduce);
static int manager_add_subtree(Manager *m, Group *parent, const char *name, bool tracked, Group **ret);
static int manager_save_tracked(Manager *m);
static void manager_root_removed(Manager *m);
static void manager_track_pending(Manager *m, const char *made);
/* Why a track root was dropped: the calls waiting on what it alone covered
 * fail with Cancelled, naming the cause. */
typedef enum UntrackCause {
        UNTRACK_CALL,      /* Untrack() */
        UNTRACK_RELOAD,    /* a reload whose "track" no longer names it */
        UNTRACK_FORGOTTEN, /* too many gone subtrees tracked at calls' requests wait (manager_forget_waiting_roots()) */
        UNTRACK_UNDONE,    /* tracking it failed, and what it added goes again (track_path()) */
        UNTRACK_RELEASED,  /* a transient root whose last holder left (manager_release_transient()) */
} UntrackCause;
static void manager_untracked_prune(Manager *m, const char *norm, UntrackCause cause);
static int manager_untrack_root(Manager *m, const char *path, UntrackCause cause, sd_bus_error *error);
static void manager_forget_waiting_roots(Manager *m);
static void call_accept(Manager *m);

/* ---- helpers ---------------------------------------------------------------------------------------- */

static int watch_fd(Manager *m, int fd, uint32_t mask) {
        char p[64];
        int wd;

        /* Watch the inode we opened (beneath the root, no symlinks) rather than
         * a path that could be swapped under us. */
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        wd = inotify_add_watch(m->inotify_fd, p, mask);
        if (wd < 0)
                return -errno;
        return wd;
}

static void group_apply_events(Manager *m, Group *g, bool populated, bool frozen);
static bool group_fully_frozen(const Group *g);
static Group *group_cover(Group *g);
static void operation_watch_holdback(Operation *op);
static void holdback_watch_external(Manager *m, Group *g);
static void holdback_remove(Manager *m, GroupData *d);
static void group_notified(Manager *m, Group *g);
static int group_check_exists(Manager *m, Group *g);

/* Puts g's cgroup.events in the epoll set or takes it out.  A group covered
 * by an empty ancestor (group_cover()) is out: the kernel changes it only
 * inside a cgroup.freeze write, which we see and settle, or when a task comes
 * into the subtree, which changes the cover's own cgroup.events (populated
 * counts the whole subtree).  So a freeze of 4,000 empty groups hands us the
 * cover's change alone, not 4,000 (each costing epoll_wait() a poll of the
 * file).  Put back, a file that changed since our last read of it is reported
 * at once (kernfs compares its event count with the one of our read). */
static void group_poll_failed(Manager *m, Group *g, bool failed, int error);
static int group_read_events(Manager *m, Group *g);

/* Opens g's file (cgroup.events, cgroup.freeze) beneath the root: no
 * symlink, no mount crossing. */
static int group_open_file(Manager *m, Group *g, const char *file, int flags) {
        _cleanup_free_ char *rel = NULL;

        if (streq(g->path, "/"))
                rel = strdup(file);
        else if (asprintf(&rel, "%s/%s", cg_path_relative(g->path), file) < 0)
                rel = NULL;
        if (!rel)
                return -ENOMEM;
        return cg_openat_beneath(m->root_fd, rel, flags, 0);
}

/* cgroup.events of g, opened now if it is not yet.  Only when it is to be
 * read or polled: the kernel's notification work after a cgroup.freeze write
 * (kernfs_notify_workfn(), on the writer's CPU, which keeps it from everything
 * else there) looks up the inode of every cgroup.events the write changed, and
 * reports the change to fsnotify only if that inode is in memory.  A file
 * nobody opened costs it one failed lookup; one opened once, even closed
 * since, two lookups and the fsnotify walk: about twice the time, 1.5 against
 * 3.5 ms for the 4,007 groups of the batch benchmark's tree here.  So the
 * groups below an empty one, which are deduced (group_cover()), never have
 * theirs opened, and a freeze of thousands of them costs every writer less. */
static int group_open_events(Manager *m, Group *g) {
        GroupData *d = group_data(g);
        int fd;

        if (d->events_fd >= 0)
                return d->events_fd;
        if (d->no_events)
                return -ENODATA;
        fd = group_open_file(m, g, "cgroup.events", O_RDONLY);
        if (fd < 0)
                return fd == -ENOENT ? -ENODEV : fd; /* removed: its removal event follows */
        d->events_fd = fd;
        return fd;
}

static int group_set_polled(Manager *m, Group *g, bool on) {
        GroupData *d = group_data(g);
        bool opened = false;
        int r;

        if (!on && d->poll_failed)
                group_poll_failed(m, g, false, 0); /* covered now: nothing to poll */
        if (d->polled == on || d->no_events)
                return 0;
        if (on) {
                /* EPOLLPRI: kernfs reports a change as EPOLLERR | EPOLLPRI.  Edge-
                 * triggered: once per change, whether we read the file or not. */
                struct epoll_event ev = { .events = EPOLLPRI | EPOLLET, .data.u64 = (uint64_t) d->wd_dir };

                if (d->events_fd < 0) {
                        r = group_open_events(m, g);
                        if (r == -ENODEV)
                                return 0; /* gone: its removal event follows */
                        if (r < 0) {
                                group_poll_failed(m, g, true, r); /* out of fds: re-read until it opens */
                                return 0;
                        }
                        opened = true;
                }
                if (epoll_ctl(m->events_epfd, EPOLL_CTL_ADD, d->events_fd, &ev) < 0) {
                        group_poll_failed(m, g, true, -errno);
                        return 0; /* followed by re-reads instead, for now */
                }
                if (d->poll_failed)
                        group_poll_failed(m, g, false, 0);
        } else if (d->events_fd >= 0) {
                if (epoll_ctl(m->events_epfd, EPOLL_CTL_DEL, d->events_fd, NULL) < 0 && errno != ENOENT)
                        return 0; /* still polled: its changes are answered through its cover */
                /* Covered again (its tasks left): the file goes too, so that
                 * freezerd holds files only for the groups that can change on
                 * their own, however many ever had tasks.  Opened again, and
                 * read, once it must be polled. */
                closep(&d->events_fd);
                d->events_fd = -1;
        }
        d->polled = on;
        /* A file opened just now reports only the changes after the open, and
         * what the model has of g was deduced: read it once. */
        if (opened)
                (void) group_read_events(m, g);
        return 0;
}

/* How often the groups that could not be polled are re-read (and put in the
 * epoll set again, once it takes them): a call waiting on one of them waits
 * about this much longer than the kernel took. */
#define REPOLL_USEC (200 * USEC_PER_MSEC)

static void repoll_arm(Manager *m) {
        const struct timeval tv = { .tv_sec = 0, .tv_usec = REPOLL_USEC };

        if (m->repoll_timer && !evtimer_pending(m->repoll_timer, NULL) && evtimer_add(m->repoll_timer, &tv) < 0)
                log_error("Cannot arm the re-read of the groups that could not be polled: their changes are "
                          "seen late, at the next change of another group");
}

/* A group whose cgroup.events could not be put in the epoll set (or opened,
 * out of fds) would be neither polled nor covered: changes of its tasks
 * (populated, a freeze that completes) would go unseen, and a call waiting on
 * it would time out.  So until epoll takes it, it is re-read every
 * REPOLL_USEC (the only polling freezerd does, and only then), and the log
 * says so: once when the first group fails, once when the last one is in
 * again. */
static void group_poll_failed(Manager *m, Group *g, bool failed, int error) {
        GroupData *d = group_data(g);

        if (d->poll_failed == failed)
                return;
        d->poll_failed = failed;
        if (!failed) {
                if (--m->n_poll_failed == 0) {
                        if (m->repoll_timer)
                                (void) evtimer_del(m->repoll_timer);
                        log_info("Every group that needs it is polled again: no more re-reads.");
                }
                return;
        }
        if (m->n_poll_failed++ == 0) {
                if (error == -ENOSPC)
                        log_warning("Cannot poll cgroup.events of %s: the epoll watch limit "
                                    "(fs.epoll.max_user_watches) is reached.  It, and any other group refused "
                                    "so, is re-read every %u ms until the limit is raised or groups are removed.",
                                    g->path, (unsigned) (REPOLL_USEC / USEC_PER_MSEC));
                else
                        log_warning_errno(error,
                                          "Cannot poll cgroup.events of %s: %m.  It, and any other group refused "
                                          "so, is re-read every %u ms until it can be polled.",
                                          g->path, (unsigned) (REPOLL_USEC / USEC_PER_MSEC));
        } else
                log_debug_errno(error, "Cannot poll cgroup.events of %s either: %m", g->path);
        repoll_arm(m);
}

static void on_repoll(evutil_socket_t fd, short what, void *userdata) {
        Manager *m = userdata;
        Group *root = tree_root(m->tree);

        /* Only while some group failed: a walk of the tree is cheap beside the
         * reads, and no list has to follow removals. */
        for (Group *g = root; g && m->n_poll_failed > 0; g = tree_next_preorder(root, g)) {
                GroupData *d = group_data(g);

                if (!d || !d->poll_failed)
                        continue;
                if (group_cover(g)) {
                        group_poll_failed(m, g, false, 0);
                        continue;
                }
                /* The read asks epoll again (group_apply_events()); taken
                 * now, a change after the read is reported by the epoll set. */
                (void) group_read_events(m, g);
        }
        if (m->n_poll_failed > 0)
                repoll_arm(m);
}

/* After a write of g's flag that is not settled (a rollback, a batch that
 * failed halfway): g is read, and the groups below whose cover no longer
 * holds are polled again (which reads them).  g must be read here even where
 * it is polled already: its own notification comes in a later turn (or held
 * back by the kernel), after the reply of this one, which would then tell the
 * groups below frozen by g while g itself is not.  First, because a read of g
 * that ends its cover reads and polls every group below
 * (group_apply_events()), which the loop then finds polled: none is read
 * twice.  A g still covered (by an empty ancestor) is as the model has it and
 * keeps its file closed.  A g with tasks still freezing reads frozen 0: its
 * notification tells the rest. */
static void group_poll_uncovered(Manager *m, Group *g) {
        if (group_data(g)->following && !group_cover(g))
                (void) group_read_events(m, g);
        for (Group *x = g; x; x = tree_next_preorder(g, x))
                if (group_data(x)->following && !group_data(x)->polled && !group_cover(x))
                        (void) group_set_polled(m, x, true);
}

/* g vouches for its subtree from now on (see group_cover()), or no longer:
 * either way a new epoch, so that no earlier cover of it holds. */
static void cover_set(GroupData *d, bool covering) {
        d->covering = covering;
        d->epoch++;
}

/* A group whose state could not be read vouches for nothing and follows its
 * own file: its next change is then read. */
static void group_read_failed(Manager *m, Group *g) {
        GroupData *d = group_data(g);

        if (d->covering)
                cover_set(d, false);
        d->cover = NULL;
        if (d->following)
                (void) group_set_polled(m, g, true);
}

static int group_read_events(Manager *m, Group *g) {
        GroupData *d = group_data(g);
        char buf[256];
        bool populated, frozen;
        ssize_t n;
        int r;

        if (d->no_events)
                return -ENODATA; /* the mount's root: nothing to read, nothing learnt */
        r = group_open_events(m, g);
        if (r < 0) {
                if (r != -ENODEV)
                        group_read_failed(m, g);
                return r;
        }
        n = cg_read_fd(d->events_fd, buf, sizeof buf);
        if (n < 0) {
                if (n != -ENODEV) /* -ENODEV once the cgroup is gone: its removal event follows */
                        group_read_failed(m, g);
                return (int) n;
        }
        r = cg_parse_events(buf, (size_t) n, &populated, &frozen);
        if (r < 0) {
                group_read_failed(m, g);
                return log_warning_errno(r, "Cannot parse cgroup.events of %s: %m", g->path);
        }
        group_apply_events(m, g, populated, frozen);
        return 0;
}

/* What the kernel says of g, read from cgroup.events or known otherwise (see
 * group_settle_subtree()). */
static void group_apply_events(Manager *m, Group *g, bool populated, bool frozen) {
        GroupData *d = group_data(g);
        bool reread_below = false;

        if (d->covering && (populated || frozen != g->e_freeze)) {
                /* A task came into the subtree g vouched empty, or a flag the
                 * model does not hold froze or thawed it (an ancestor above our
                 * root, say): the groups below were not polled (group_cover()),
                 * read them. */
                cover_set(d, false);
                reread_below = true;
        }
        /* The kernel notified this change (see operation_watch_holdback()); an
         * empty group needs no record: nothing of it that we wait for is ever
         * held back. */
        if ((populated || g->populated) && (populated != g->populated || frozen != g->frozen))
                d->notified_usec = now_usec();
        tree_set_populated(m->tree, g, populated);
        bool became_frozen = frozen && !g->frozen;
        if (frozen != g->frozen) {
                tree_set_frozen(m->tree, g, frozen);
                /* This group and every ancestor (whose completion also waits for
                 * its descendants) may be done now.  Of an ancestor, only whether
                 * it is fully frozen can change with g (what its entries ask of
                 * its own frozen did not move), and one that is not, and was not
                 * before g's change, has no ancestor that is or was: the walk
                 * stops there, as the kernel stops propagating counts upward
                 * early.  A freeze of 4,000 groups below a written one checked
                 * every operation of every ancestor for each of them. */
                for (Group *a = m->operations ? g : NULL; a; a = a->parent) {
                        GroupData *ad = group_data(a);
                        if (a != g && !group_fully_frozen(a) &&
                            !(!frozen && a->frozen && a->n_frozen_descendants + 1 == a->n_descendants))
                                break;
                        for (OpEntry *e = ad ? ad->entries : NULL, *next; e; e = next) {
                                next = e->gnext;
                                operation_check(e->op);
                        }
                }
        }
        /* The kernel sets a group frozen once its own tasks and every
         * descendant are, in the same step that freezes the last of them, but
         * may hold back its notification (see operation_watch_holdback()): a
         * cgroup.freeze write that changed nothing, as of every group below a
         * batch's top, was notified at once.  A waiting batch over groups
         * without tasks of their own waited 12 ms for each of them.  So when
         * g's change leaves all its parent's descendants frozen, the parent is
         * read now (and so on up). */
        Group *p = g->parent;
        if (became_frozen && p && p->e_freeze && !p->frozen && p->n_frozen_descendants == p->n_descendants)
                (void) group_read_events(m, p);
        if (reread_below)
                for (Group *x = tree_next_preorder(g, g); x; x = tree_next_preorder(g, x))
                        (void) group_read_events(m, x);
        if (d->following && !d->polled && !group_cover(g))
                (void) group_set_polled(m, g, true);
}

/* A group whose state was deduced below an empty group r (group_settle_subtree())
 * is (empty, frozen == its effective flag) for as long as r is empty: no task,
 * so nothing but a cgroup.freeze write (which we see and settle) can change it.
 * So such a group is not polled (group_set_polled()), and a change of it
 * still in the queue is answered by reading r instead, once per slice of
 * events for all the groups below it.  Should r read populated, every group
 * below is read and polled again (group_apply_events()); a group whose model
 * says otherwise (its flags changed without a settle: a rollback) is read
 * itself.  Returns r, or NULL. */
static Group *group_cover(Group *g) {
        GroupData *d = group_data(g), *rd;

        if (!d->cover)
                return NULL;
        rd = group_data(d->cover);
        /* The model must still say what the cover vouches for: a flag written
         * without settling (a rollback) changes what g should be. */
        if (!rd->covering || rd->epoch != d->cover_epoch || g->populated || g->frozen != g->e_freeze) {
                d->cover = NULL;
                return NULL;
        }
        return d->cover;
}

static int group_open_freeze(Manager *m, Group *g) {
        GroupData *d = group_data(g);
        int fd;

        if (d->freeze_fd >= 0)
                return d->freeze_fd;
        fd = group_open_file(m, g, "cgroup.freeze", O_RDWR);
        if (fd < 0)
                return fd;
        d->freeze_fd = fd;
        return fd;
}

static int group_read_freeze_flag(Manager *m, Group *g, bool *ret) {
        GroupData *d = group_data(g);
        _cleanup_close_ int tmp = -1;
        int fd = d ? d->freeze_fd : -1;

        if (fd < 0) {
                /* Most groups are never written by us: open, read, close, to keep
                 * no fd for them at rest (RLIMIT_NOFILE is not ours to raise). */
                tmp = group_open_file(m, g, "cgroup.freeze", O_RDONLY);
                if (tmp < 0)
                        return tmp;
                fd = tmp;
        }
        return cg_read_freeze_fd(fd, ret);
}

/* After g's own flag changed (our write or one behind our back), bring the
 * model of g's subtree to what the kernel did inside the write, rather than
 * wait for the notifications: they are rate-limited to one per 10 ms per
 * file, and reading them in the turn of the write lets it signal the final
 * state instead of a transient one.
 *
 * With `deduce` (our own writes, after manager_drain_inotify() has applied
 * every cgroup.freeze write that came before them, so that the effective flags
 * are the kernel's; and others' writes, which manager_drain_inotify() applies
 * in queue order as it reads them), most of it needs no read at all, by the
 * kernel's rules
 * (kernel/cgroup/freezer.c):
 *   - a group whose effective flag is clear is thawed inside the write
 *     (cgroup_do_freeze() clears CGRP_FROZEN whether or not it has tasks);
 *   - a group read empty after the write has its whole subtree empty, and an
 *     empty group is frozen exactly when its effective flag is set (the kernel
 *     re-checks whenever a task comes or goes, and a new group inherits it).
 *     Those groups are then covered by it (group_cover()).
 *     Those covered groups leave the epoll set (group_set_polled()): until
 *     their cover reads populated, a change of theirs can only come from a
 *     cgroup.freeze write, which is settled (or, for one that is not, a
 *     rollback or a batch that failed halfway, group_poll_uncovered()).
 * The groups left are read; a freezing group with tasks is not: its tasks
 * freeze asynchronously and their notification tells.  The polled groups'
 * notifications still come and are answered by a read: a later change merged
 * into them is never lost.  g itself is always read. */
static void group_settle_subtree(Manager *m, Group *g, bool deduce) {
        for (Group *c = g, *next; c; c = next) {
                GroupData *d = group_data(c);

                next = tree_next_preorder(g, c);
                /* A batch of nested groups settles each group once, not once per
                 * written ancestor (m->settle_gen is bumped per write burst). */
                if (d->settle_gen == m->settle_gen)
                        continue;
                d->settle_gen = m->settle_gen;

                if (deduce && c != g && !c->e_freeze) {
                        group_apply_events(m, c, c->populated, false);
                        continue;
                }
                if (c != g && c->populated && c->e_freeze)
                        continue; /* its tasks freeze asynchronously: their notification tells */
                if (group_read_events(m, c) < 0 || !deduce || c->populated)
                        continue;
                /* A cover must be told of a change: polled, or covered itself.
                 * And frozen as its flags say, or something the model does not
                 * hold (a freeze above our root) changes it. */
                if (c->frozen != c->e_freeze || (!d->polled && !group_cover(c)))
                        continue;
                /* Read empty: so is everything below, each frozen as its flags say. */
                Group *last = c;
                cover_set(d, true);
                for (Group *x = tree_next_preorder(c, c); x; x = tree_next_preorder(c, x)) {
                        GroupData *xd = group_data(x);
                        xd->settle_gen = m->settle_gen;
                        xd->cover = c;
                        xd->cover_epoch = d->epoch;
                        group_apply_events(m, x, false, x->e_freeze);
                        (void) group_set_polled(m, x, false);
                        last = x;
                }
                next = tree_next_preorder(g, last);
        }
}

/* At most this much of kernel events waits to be handled (about 260,000
 * events); beyond, they are dropped and every group is re-read, as after an
 * overflow of the kernel's own queue. */
#define INOTIFY_STASH_MAX (8u * 1024u * 1024u)

/* The kernel's rules group_settle_subtree() deduces from assume that the
 * model holds every flag reaching its groups.  The flags of the groups between
 * the mount and our root are in it only as far as a watch on each tells
 * (manager_reread_outer(); inotify may have refused one): while one is set,
 * every group below is frozen whatever its own flags, and nothing is
 * deduced. */
static bool manager_outer_frozen(Manager *m) {
        for (size_t i = 0; i < m->n_outer; i++) {
                bool v;
                if (cg_read_freeze_fd(m->outer[i].freeze_fd, &v) >= 0 && v)
                        return true;
        }
        return false;
}

/* No kernel event lost so far: the model has seen every cgroup.freeze write. */
static bool inotify_complete(const Manager *m) {
        return !m->inotify_lost && !m->inotify_overflow_pending;
}

/* The events that may tell of a group gone: its parent's IN_DELETE (the watch
 * of its directory's parent), its own watches' IN_IGNORED (IN_DELETE_SELF, never
 * sent by kernfs today), and what would lose or hide one (IN_Q_OVERFLOW, a
 * rename, an unmount).  Counted while stashed, not handled
 * (Manager.inotify_removals): removals_may_be_unread(). */
#define INOTIFY_REMOVAL_MASK (IN_DELETE | IN_DELETE_SELF | IN_IGNORED | IN_MOVED_FROM | IN_Q_OVERFLOW | IN_UNMOUNT)

/* Append n bytes of events to the stash; past INOTIFY_STASH_MAX (or out of
 * memory) the stash is dropped and every group will be re-read. */
static void stash_append(Manager *m, const void *data, size_t n) {
        char *p;

        if (n == 0 || m->inotify_lost)
                return; /* (realloc() to 0 bytes would free it); all will be re-read anyway */
        p = m->inotify_stash_len + n <= INOTIFY_STASH_MAX ? realloc(m->inotify_stash, m->inotify_stash_len + n)
                                                          : NULL;
        if (!p) {
                log_warning("Too many kernel events waiting (or out of memory), re-reading every group");
                m->inotify_stash = mfree(m->inotify_stash);
                m->inotify_stash_len = m->inotify_stash_pos = m->inotify_stash_applied = 0;
                m->inotify_removals = 0; /* inotify_lost says more */
                m->inotify_overflow_pending = false;
                m->inotify_lost = true;
                return;
        }
        m->inotify_stash = p;
        memcpy(m->inotify_stash + m->inotify_stash_len, data, n);
        for (size_t o = m->inotify_stash_len; o < m->inotify_stash_len + n;) {
                const struct inotify_event *ev = (const struct inotify_event *) (m->inotify_stash + o);
                m->inotify_removals += !!(ev->mask & INOTIFY_REMOVAL_MASK);
                o += sizeof *ev + ev->len;
        }
        m->inotify_stash_len += n;
}

/* A change of a group's cgroup.events, as an entry of the stash: what a
 * watch on its directory with IN_MODIFY would have queued, so that one queue,
 * handled in order, holds every kernel event. */
typedef struct EventsChanged {
        /* struct inotify_event's fields, spelled out: a struct ending in a
         * flexible array cannot be a member in standard C. */
        int wd;
        uint32_t mask, cookie, len;
        char name[16];
} EventsChanged;
_Static_assert(offsetof(EventsChanged, wd) == offsetof(struct inotify_event, wd) &&
                       offsetof(EventsChanged, mask) == offsetof(struct inotify_event, mask) &&
                       offsetof(EventsChanged, len) == offsetof(struct inotify_event, len) &&
                       offsetof(EventsChanged, name) == sizeof(struct inotify_event),
               "EventsChanged is an inotify_event with its name");

#define EPOLL_BATCH 256

/* Move the groups whose cgroup.events changed (the epoll set's ready list) to
 * the stash.  Edge-triggered: each is reported once per change, read or not
 * (a group deduced by group_settle_subtree() needs no read). */
static void manager_drain_epoll(Manager *m) {
        for (;;) {
                struct epoll_event evs[EPOLL_BATCH];
                EventsChanged buf[EPOLL_BATCH];
                int n = epoll_wait(m->events_epfd, evs, EPOLL_BATCH, 0);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(errno, "Polling cgroup.events failed: %m");
                        m->inotify_lost = true;
                        return;
                }
                for (int i = 0; i < n; i++)
                        buf[i] = (EventsChanged) {
                                .wd = (int) evs[i].data.u64,
                                .mask = IN_MODIFY,
                                .len = sizeof buf[i].name,
                                .name = "cgroup.events",
                        };
                stash_append(m, buf, (size_t) n * sizeof buf[0]);
                if (n < EPOLL_BATCH)
                        return;
        }
}

/* Handled events make room, once they are half of the stash (moving the rest
 * at every read would cost a storm quadratic time). */
static void stash_compact(Manager *m) {
        size_t pos = m->inotify_stash_pos;

        if (pos == 0 || pos < m->inotify_stash_len / 2)
                return;
        m->inotify_stash_len -= pos;
        memmove(m->inotify_stash, m->inotify_stash + pos, m->inotify_stash_len);
        m->inotify_stash_pos = 0;
        m->inotify_stash_applied = m->inotify_stash_applied > pos ? m->inotify_stash_applied - pos : 0;
}

/* Read the inotify queue into the stash, behind what is there.  Until a read
 * that does not fill the buffer: that one took all that was queued (and every
 * write before ours with it).  Not until the queue is empty: others' writes go
 * on adding theirs while we read.  Nothing is applied: the cgroup.freeze
 * writes among them are, by manager_drain_inotify(), from
 * inotify_stash_applied. */
static void manager_read_inotify(Manager *m) {
        for (bool more = true; more;) {
                union {
                        struct inotify_event ev;
                        char raw[64 * 1024];
                } buf;
                ssize_t n = read(m->inotify_fd, &buf, sizeof buf);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN) {
                                log_error_errno(errno, "Reading inotify events failed: %m");
                                m->inotify_lost = true;
                        }
                        break;
                }
                more = (size_t) n > sizeof buf - (sizeof buf.ev + NAME_MAX + 1);
                stash_append(m, buf.raw, (size_t) n);
        }
}

/* The part of manager_drain_inotify() that applies the cgroup.freeze writes
 * of the events read since it last did (from inotify_stash_applied: those read
 * ahead by removals_may_be_unread() too). */
static bool stash_apply_writes(Manager *m, int *outer) {
        /* Handled already: each re-read what it changed in its turn. */
        size_t from = m->inotify_stash_applied > m->inotify_stash_pos ? m->inotify_stash_applied
                                                                       : m->inotify_stash_pos;

        for (size_t o = from; o < m->inotify_stash_len;) {
                struct inotify_event *ev = (struct inotify_event *) (m->inotify_stash + o);
                const WdEntry *w;

                o += sizeof *ev + ev->len;
                if (ev->mask & IN_Q_OVERFLOW)
                        m->inotify_overflow_pending = true;
                if (!(ev->mask & IN_MODIFY) || !(w = wdmap_get(m->wds, ev->wd)))
                        continue;
                if (w->kind == WD_KIND_OUTER) {
                        /* A flag above the root, applied in queue order as
                         * the groups' own are below. */
                        if (*outer < 0)
                                *outer = manager_outer_frozen(m);
                        manager_reread_outer(m, inotify_complete(m) && !*outer);
                        ev->mask &= ~IN_MODIFY;
                        continue;
                }
                if (w->kind != WD_KIND_FREEZE)
                        continue;
                /* Our real-time writer's, read while it goes on (batch_written()):
                 * the model does not have that write yet, and the read would take
                 * it for someone else's.  Its turn in the stash reads it. */
                if (group_data(w->ptr)->write_pending)
                        continue;
                /* Someone else's write, settled as ours are: every write queued
                 * before it was applied just before (in queue order), and the
                 * kernel queues IN_MODIFY once the write is done.  Unless events
                 * were lost up to here. */
                if (*outer < 0)
                        *outer = manager_outer_frozen(m);
                group_reread_freeze(m, w->ptr, inotify_complete(m) && !*outer);
                /* Applied: its turn in the stash would read the same flag again
                 * (a write after this read queues an event of its own).  Our
                 * own writes come here too, one read each instead of two. */
                ev->mask &= ~IN_MODIFY;
        }
        m->inotify_stash_applied = m->inotify_stash_len;
        return inotify_complete(m);
}

/* Read every kernel event so far into the stash, where they are handled in
 * order (manager_handle_stashed_events()), and apply the cgroup.freeze
 * writes among them now: a write behind our back that came before ours
 * changes the effective flags group_settle_subtree() deduces from.  The kernel
 * queues IN_MODIFY inside write(2), so every write that came before ours is
 * queued by now.  A change of cgroup.events may still come before the write
 * that made it (a write of someone else still running): a read of the file is
 * the kernel's state whatever came before, and a deduction from a write not
 * yet seen is redone when it is.  The writes applied are those of every event
 * not handled yet, read since the last drain (here, or ahead by
 * removals_may_be_unread()).  Returns
 * false if events were lost (then nothing can be deduced until every group
 * was re-read).  *outer is manager_outer_frozen() if a write needed it, else
 * left at -1. */
static bool manager_drain_inotify(Manager *m, int *outer) {
        stash_compact(m);

        /* The groups whose cgroup.events changed first, then the inotify
         * queue: kernfs tells pollers inside a write, vfs_write() queues its
         * IN_MODIFY once the write is done, so reading inotify last gives a
         * write behind our back that is still running the best chance to be
         * read along with what it changed (its flag is applied next, before
         * any of those changes is handled). */
        manager_drain_epoll(m);
        manager_read_inotify(m);
        return stash_apply_writes(m, outer);
}

static int cmp_depth(const void *a, const void *b) {
        unsigned x = (*(Group *const *) a)->depth, y = (*(Group *const *) b)->depth;
        return x < y ? -1 : x > y;
}

/* Settle the subtrees of the groups we just wrote (see above), shallowest
 * first: a written group below another one is then settled with its
 * ancestor's subtree, by the same rules, instead of read on its own (a
 * bottom-up thaw of A..G reads A alone, not seven files).  Groups of one
 * depth are disjoint subtrees: their order does not matter. */
static void manager_settle_written(Manager *m, Group *const *groups, size_t n) {
        _cleanup_free_ Group **order = NULL;
        int outer = -1;
        bool deduce = manager_drain_inotify(m, &outer);
        size_t k = 0;

        deduce = deduce && !(outer >= 0 ? outer : manager_outer_frozen(m));

        m->settle_gen++;
        if (n > 1 && (order = malloc(n * sizeof *order))) {
                for (size_t i = 0; i < n; i++)
                        if (groups[i])
                                order[k++] = groups[i];
                qsort(order, k, sizeof *order, cmp_depth);
                groups = order;
                n = k;
        }
        for (size_t i = 0; i < n; i++)
                if (groups[i])
                        group_settle_subtree(m, groups[i], deduce);
        operations_frozen_by_parent(m); /* a Thaw of a group below one we froze (another call) */
}

/* Re-read g's cgroup.freeze; if it changed behind our back, settle g's
 * subtree, by deduction where `deduce` (see group_settle_subtree()). */
static void group_reread_freeze(Manager *m, Group *g, bool deduce) {
        bool v;
        int r;

        r = group_read_freeze_flag(m, g, &v);
        if (r < 0) {
                if (r != -ENOENT && r != -ENODEV)
                        log_warning_errno(r, "Cannot read cgroup.freeze of %s: %m", g->path);
                return;
        }
        if (v != g->freeze) {
                log_debug("%s: cgroup.freeze changed to %d behind our back", g->path, v);
                tree_set_freeze(m->tree, g, v);
                m->settle_gen++;
                group_settle_subtree(m, g, deduce);
                group_flag_changed(m, g);
                if (v) {
                        holdback_watch_external(m, g);
                        operations_frozen_by_parent(m);
                }
        }
}

/* Re-read the flags of the groups above the root, after a write to one of
 * them (a watch on each cgroup.freeze: nothing is polled, freezerd wakes only
 * when someone writes one).  Whether one is set is the root's parent's flag
 * in the model (tree_set_outer_freeze()): when that changes, the kernel froze
 * or thawed, inside the write, every group whose own flags do not freeze it,
 * and the whole tree is settled as for a write of the root's own flag. */
static void manager_reread_outer(Manager *m, bool deduce) {
        Group *root = tree_root(m->tree);
        bool any = false;

        for (size_t i = 0; i < m->n_outer; i++) {
                struct OuterGroup *o = &m->outer[i];
                bool v;
                int r = cg_read_freeze_fd(o->freeze_fd, &v);

                if (r >= 0)
                        o->freeze = v;
                else
                        log_debug_errno(r, "Cannot read %s/cgroup.freeze: %m", o->path);
                any = any || o->freeze;
        }
        if (any == tree_outer_freeze(m->tree))
                return;
        log_debug("A cgroup.freeze above the cgroup root %s changed: it is %s by its ancestors now", m->cgroup_root,
                  any ? "frozen" : "no longer frozen");
        tree_set_outer_freeze(m->tree, any);
        if (!group_data(root))
                return; /* at start: the root is read once attached */
        m->settle_gen++;
        group_settle_subtree(m, root, deduce);
        if (any) {
                holdback_watch_external(m, root);
                operations_frozen_by_parent(m);
        }
}

const char *manager_frozen_by(Manager *m, const Group *g, bool *ret_outer) {
        *ret_outer = false;
        for (const Group *a = g->parent; a; a = a->parent)
                if (a->freeze)
                        return a->path;
        /* The nearest (deepest) one, as above. */
        for (size_t i = m->n_outer; i > 0; i--)
                if (m->outer[i - 1].freeze) {
                        *ret_outer = true;
                        return m->outer[i - 1].path;
                }
        return NULL;
}

/* ---- group lifetime ----------------------------------------------------------------------------------- */

/* Takes g's InterfacesAdded back if it has not gone out yet (it is leaving the
 * bus again); returns whether it had not. */
static bool announce_cancel(Manager *m, Group *g) {
        GroupData *d = group_data(g);

        if (d->announce_slot == 0)
                return false;
        m->announce[d->announce_slot - 1] = NULL;
        d->announce_slot = 0;
        return true;
}

static void group_data_destroy(Group *g, void *userdata) {
        Manager *m = userdata;
        GroupData *d = group_data(g);

        if (!d)
                return;

        /* Every operation waiting on a removed group fails: its wait can never
         * end.  (Untrack() failed those on the groups it drops already.)  But
         * for a group the call reached without naming it (a RECURSIVE
         * request's subtree, FreezeExcept's cover): it is no longer part of
         * what the call asks for, its tasks gone with it, and the call goes
         * on without it (batch_write_vanished()).  It may have waited for that
         * group alone: manager_dispatch() looks at it again, once the removal
         * is over (the walk of the model must not run in the middle of it). */
        while (d->entries) {
                OpEntry *e = d->entries;
                if (e->unnamed) {
                        e->vanished = true;
                        e->op->vanished_check = m->vanished_check = true;
                } else
                        operation_doom_leaving(e->op, false, BUS_ERROR_NO_SUCH_GROUP,
                                               "%s was removed while waiting for it to %s", CG_NAMED_IN_LIST(g->path),
                                               e->new_freeze ? "freeze" : "thaw");
                entry_unlink(e);
        }

        holdback_remove(m, d);
        if (d->poll_failed && --m->n_poll_failed == 0 && m->repoll_timer)
                (void) evtimer_del(m->repoll_timer); /* silently: at shutdown every group goes */

        /* Its pressure triggers end (PressureTriggerRemoved) before the object goes. */
        pressure_group_release(m->pressure, g, true);

        if (d->wd_dir > 0) {
                wdmap_remove(m->wds, d->wd_dir);
                if (m->inotify_fd >= 0)
                        (void) inotify_rm_watch(m->inotify_fd, d->wd_dir);
        }
        if (d->wd_freeze > 0) {
                wdmap_remove(m->wds, d->wd_freeze);
                if (m->inotify_fd >= 0)
                        (void) inotify_rm_watch(m->inotify_fd, d->wd_freeze);
        }
        /* Closing it takes it out of the epoll set (freezerd never forks, so
         * no other reference to the file is left).  A change already in the
         * ready list or in the stash names a watch no longer in wds. */
        closep(&d->events_fd);
        closep(&d->freeze_fd);

        if (g->tracked) {
                m->groups_count_changed = true;
                /* Never announced: nobody heard of it, nothing to remove. */
                if (!announce_cancel(m, g) && m->on_group_removed)
                        m->on_group_removed(m, g->path);
        }
        free(d->odd_names);
        u64set_free(d->limit_names);
        free(d);
        g->userdata = NULL;
}

/* Errors of adding a group that need no message of the caller: the group
 * went away meanwhile (-ENOENT, -ENODEV), or the cause was logged already:
 * the inotify watch limit (-ENOSPC, watch_error()), the depth limit (-E2BIG)
 * and a name D-Bus cannot carry (-EILSEQ, both manager_add_new()). */
static bool add_error_logged(int r) {
        return r == -ENOENT || r == -ENODEV || r == -ENOSPC || r == -E2BIG || r == -EILSEQ;
}

/* A child of parent that could not be added, with r, is left out of the
 * model (unless it went away meanwhile): parent's hint, which the calls over
 * a subtree that must not forget it go by (GroupData.unfollowed_children,
 * odd-groups.h).  Whatever the cause, a name, the depth, the inotify watch
 * limit (a big node can reach it): the kernel's flags reach that child all
 * the same. */
static void note_unfollowed(Group *parent, int r) {
        GroupData *pd = group_data(parent);

        if (pd && r < 0 && r != -ENOENT && r != -ENODEV)
                pd->unfollowed_children = true;
}

/* The children of one group that the inotify watch limit kept out, by the
 * hash of their names, whose message was logged: each is logged once, not at
 * every retry, which any caller can cause (GetGroup or Freeze of it,
 * FreezeExcept over its parent, Track() of the subtree).  A name leaves the set
 * when its group is removed (its parent's IN_DELETE) or gets into the model,
 * so that a later failure is logged again.  A hash set, made with the first:
 * most groups never have one, and a node with thousands kept out looked each
 * name up in a list (10 ms at 6,000). */

/* Whether name is new in pd's set, which it is then added to (where memory
 * allows: else it is logged again next time). */
static bool limit_name_first(GroupData *pd, const char *name) {
        return !pd || u64set_add(&pd->limit_names, string_hash(name)) != 0;
}

static void limit_name_forget(Group *parent, const char *name) {
        GroupData *pd = parent ? group_data(parent) : NULL;

        if (pd && pd->limit_names)
                (void) u64set_remove(&pd->limit_names, string_hash(name));
}

/* A watch we could not arm for the child name of parent (NULL: the mount's
 * root): the watch limit gets a message that names its cause, once per group
 * (limit_name_first()). */
static int watch_error(Group *parent, const char *name, int r) {
        const char *parent_path = parent ? parent->path : "/";

        if (r != -ENOSPC)
                return r;
        if (!limit_name_first(parent ? group_data(parent) : NULL, name))
                return log_debug_errno(r, "Cannot track %s/%s: the inotify watch limit is still reached",
                                       streq(parent_path, "/") ? "" : parent_path, name);
        return log_warning_errno(r, "Cannot track %s/%s: the inotify watch limit "
                                    "(fs.inotify.max_user_watches) is reached",
                                 streq(parent_path, "/") ? "" : parent_path, name);
}

/* A group's two inotify watches (see DIR_WATCH_MASK); -1 where none. */
typedef struct Watches {
        int dir, freeze;
} Watches;

/* A group's cgroup.freeze as read: r 0 (then freeze holds it) or -errno. */
typedef struct FlagRead {
        int r;
        bool freeze;
} FlagRead;

static int manager_add_opened(Manager *m, Group *parent, const char *name, uint64_t dir_ino, bool tracked,
                              int parent_dirfd, bool by_name, Group *cover, int dirfd_in, int fd_in, Watches w,
                              const FlagRead *pre, Group **ret);

static void watches_drop(Manager *m, Watches *w) {
        if (w->dir > 0)
                (void) inotify_rm_watch(m->inotify_fd, w->dir);
        if (w->freeze > 0)
                (void) inotify_rm_watch(m->inotify_fd, w->freeze);
        *w = (Watches) { -1, -1 };
}

/* Take over the watches w (armed by the caller, on g's directory and its
 * cgroup.freeze) and the cgroup.events fd (-1: opened when first needed, see
 * group_open_events()), which goes into the epoll set (see DIR_WATCH_MASK),
 * its changes named by the directory's watch.  Once
 * they are attached, a failure leaves them to the caller's tree_remove() of g
 * (group_data_destroy() drops them). */
static int group_attach(Manager *m, Group *g, int events_fd, Watches w) {
        GroupData *d;
        int r;

        d = calloc(1, sizeof *d);
        if (!d) {
                if (events_fd >= 0)
                        close(events_fd);
                watches_drop(m, &w);
                return -ENOMEM;
        }
        *d = (GroupData) {
                .group = g,
                .manager = m,
                .events_fd = events_fd,
                .freeze_fd = -1,
                .wd_dir = w.dir,
                .wd_freeze = w.freeze,
        };
        g->userdata = d;

        r = wdmap_put(m->wds, w.dir, g, WD_KIND_DIR);
        if (r >= 0 && w.freeze > 0)
                r = wdmap_put(m->wds, w.freeze, g, WD_KIND_FREEZE);
        return r < 0 ? r : 0;
}

/* The group that would vouch for a new empty child of parent (see
 * group_start_following()): parent's own cover, or parent if it is one. */
static Group *group_child_cover(Group *parent) {
        GroupData *pd = group_data(parent);
        Group *top;

        if (!pd || parent->populated)
                return NULL;
        top = group_cover(parent);
        if (!top && pd->covering)
                top = parent;
        return top;
}

/* After a new group's first read (or its deduction, see manager_add_new()):
 * it is covered by its parent's cover (or by its parent, if that is one) when
 * it is what the cover vouches for, empty and frozen as its flags say, and
 * then not polled at all: a start over 10,000 empty groups polls the few tops,
 * and their first freeze queues nothing.  Otherwise it is polled; an empty one
 * becomes a cover for the groups found below it.  A change since its read is
 * not lost: polled later, the file reports it, or is read once if it was
 * opened only then (see group_set_polled()); covered, its cover's file does. */
static int group_start_following(Manager *m, Group *g, bool read_ok) {
        GroupData *d = group_data(g);
        Group *top = NULL;
        int r;

        d->following = true;
        if (d->no_events)
                return 0; /* the mount's root: never frozen, never a cover */
        if (g->parent && read_ok && !g->populated && g->frozen == g->e_freeze)
                top = group_child_cover(g->parent);
        if (top) {
                d->cover = top;
                d->cover_epoch = group_data(top)->epoch;
                return 0;
        }
        r = group_set_polled(m, g, true);
        if (r >= 0 && d->polled && read_ok && !g->populated && g->frozen == g->e_freeze)
                cover_set(d, true);
        return r;
}

/* Every directory on the cgroup2 file system is a cgroup, and the root was
 * checked to be one: RESOLVE_NO_XDEV (no mount crossing) and O_DIRECTORY are
 * all it takes to know we opened a cgroup. */
static int open_group_dir(Manager *m, const char *path, int *ret_dirfd) {
        int fd = cg_openat_beneath(m->root_fd, cg_path_relative(path), O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd;
        *ret_dirfd = fd;
        return 0;
}

/* A scan watches the children it finds by name, relative to the working
 * directory, which it moves to their parent: one fchdir() per parent instead
 * of a /proc/self/fd/N lookup (procfs and a magic link) per child, and no
 * directory fd to open and close for a leaf.  The working directory is put
 * back once the outermost scan returns (a relative --config path is read
 * again on reload). */
static int scan_chdir(Manager *m, Group *g, int dirfd) {
        if (m->scan_cwd == g)
                return 0;
        if (m->scan_saved_cwd < 0) {
                m->scan_saved_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (m->scan_saved_cwd < 0)
                        return -errno;
        }
        if (fchdir(dirfd) < 0) {
                m->scan_cwd = NULL;
                return -errno;
        }
        m->scan_cwd = g;
        return 0;
}

static void scan_restore_cwd(Manager *m) {
        m->scan_cwd = NULL;
        if (m->scan_saved_cwd < 0)
                return;
        if (fchdir(m->scan_saved_cwd) < 0)
                log_warning_errno(errno, "Cannot return to the working directory: %m");
        closep(&m->scan_saved_cwd);
        m->scan_saved_cwd = -1;
}

static int manager_add_new(Manager *m, Group *parent, const char *name, uint64_t dir_ino, bool tracked,
                           int parent_dirfd, Group **ret);
static int manager_list_children(Manager *m, Group *g, int dirfd);

/* cgroup.stat's nr_descendants of the group open at dirfd: the live cgroups
 * below it, at any depth. */
static int read_nr_descendants(int dirfd, uint64_t *ret) {
        _cleanup_close_ int fd = cg_openat_beneath(dirfd, "cgroup.stat", O_RDONLY, 0);
        char buf[1024];
        ssize_t n;

        if (fd < 0)
                return fd;
        n = cg_read_fd(fd, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return cg_parse_keyed_u64(buf, (size_t) n, "nr_descendants", ret);
}

static bool inotify_queue_empty(Manager *m) {
        int n;

        return ioctl(m->inotify_fd, FIONREAD, &n) >= 0 && n == 0;
}

/* Look for the children of c, which a listing of its parent (open at
 * parent_dirfd) added: kernfs keeps a directory's link count at 2 + its
 * subdirectories, so a leaf is neither opened nor listed. */
static int manager_scan_child_at(Manager *m, Group *c, int parent_dirfd) {
        _cleanup_close_ int dirfd = -1;
        struct stat st;

        if (fstatat(parent_dirfd, c->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_nlink == 2)
                return 0;
        dirfd = cg_openat_beneath(parent_dirfd, c->name, O_RDONLY | O_DIRECTORY, 0);
        if (dirfd < 0) {
                note_unfollowed(c, dirfd); /* its children are not followed */
                return dirfd;
        }
        return manager_list_children(m, c, dirfd);
}

static int child_open_and_watch(int inotify_fd, int parent_dirfd, const char *name, bool events, int *ret_fd,
                                Watches *ret, bool *ret_in_watch);

/* A listing's parallel part (see manager_list_children()): at least this many
 * new children below a cover in one getdents() buffer. */
#define SCAN_PARALLEL_MIN 16

/* One new child of a listing, opened, watched and read from either thread
 * (child_prepare()), then put in the model by the main thread. */
typedef struct ChildPrep {
        const char *name; /* in the listing's buffer */
        uint64_t ino;
        Watches w;
        int r; /* 0, or -errno: then nothing of it is left armed or open */
        FlagRead flag;
} ChildPrep;

typedef struct ChildPrepJob {
        int inotify_fd, parent_dirfd;
} ChildPrepJob;

/* What manager_add_new() does in the kernel for a child below a cover (its
 * cgroup.freeze only): open, watch (child_open_and_watch()) and read, from
 * either thread.  The working directory is the parent's (scan_chdir()),
 * shared by both. */
static void child_prepare(void *items, size_t i, void *userdata) {
        ChildPrep *c = (ChildPrep *) items + i;
        const ChildPrepJob *j = userdata;
        _cleanup_close_ int fd = -1;
        bool in_watch;

        c->w = (Watches) { -1, -1 };
        c->r = child_open_and_watch(j->inotify_fd, j->parent_dirfd, c->name, false, &fd, &c->w, &in_watch);
        if (c->r >= 0)
                c->flag.r = cg_read_freeze_fd(fd, &c->flag.freeze);
}

/* A listed child of g (open at dirfd) added by manager_add_new(), its failure
 * logged unless manager_add_new() did. */
static void manager_add_child_logged(Manager *m, Group *g, const char *name, uint64_t ino, int dirfd) {
        int k = manager_add_new(m, g, name, ino, true, dirfd, NULL);
        if (k < 0 && !add_error_logged(k))
                log_warning_errno(k, "Cannot track %s/%s: %m", streq(g->path, "/") ? "" : g->path, name);
}

/* Add the new children c[0..n) of g (open at dirfd) found by one getdents():
 * below a cover, with enough of them, their kernel part from two threads
 * first (see scan-helper.h), then each into the model in the listing's order,
 * as manager_add_new() would; else one by one with manager_add_new(). */
static void manager_add_listed(Manager *m, Group *g, int dirfd, ChildPrep *c, size_t n) {
        Group *cover = n >= SCAN_PARALLEL_MIN && g->depth < GROUP_DEPTH_MAX ? group_child_cover(g) : NULL;

        if (!cover || scan_chdir(m, g, dirfd) < 0) {
                for (size_t i = 0; i < n; i++)
                        manager_add_child_logged(m, g, c[i].name, c[i].ino, dirfd);
                return;
        }
        if (!m->scan_helper) {
                int r = scan_helper_new(&m->scan_helper);
                if (r < 0) /* this thread alone then, in two passes all the same */
                        log_debug_errno(r, "Cannot start the scan's second thread, scanning with one: %m");
                else
                        log_debug("Scanning %s and the rest of this scan with a second thread (%zu new groups below it)",
                                  g->path, n);
        }

        scan_helper_run(m->scan_helper, n, child_prepare, c,
                        &(ChildPrepJob) { .inotify_fd = m->inotify_fd, .parent_dirfd = dirfd });

        for (size_t i = 0; i < n; i++) {
                /* A child's addition can find g populated (a task came in,
                 * see group_apply_events()): the rest are then not deduced
                 * but read, as manager_add_new() would. */
                if (c[i].r >= 0 && group_child_cover(g) != cover) {
                        watches_drop(m, &c[i].w);
                        c[i].r = -EAGAIN;
                }
                if (c[i].r < 0) { /* anew, for its error and its message */
                        manager_add_child_logged(m, g, c[i].name, c[i].ino, dirfd);
                        continue;
                }
                int k = manager_add_opened(m, g, c[i].name, c[i].ino, true, dirfd, true, cover, -1, -1, c[i].w,
                                           &c[i].flag, NULL);
                note_unfollowed(g, k);
                if (k >= 0)
                        limit_name_forget(g, c[i].name);
                if (k < 0 && !add_error_logged(k))
                        log_warning_errno(k, "Cannot track %s/%s: %m", streq(g->path, "/") ? "" : g->path, c[i].name);
        }
}

/* List the subdirectories of a group directory and add the ones the model
 * lacks, then their subtrees.  getdents64 on the fd we hold: no second open,
 * no DIR allocation.  The watch on dirfd is armed already, so a child made
 * from now on is reported.
 *
 * When g had no children in the model, one count can spare the link-count test
 * of each new child: if g's nr_descendants, read after every child's watch was
 * armed, equals the number of children added, none of them had a child then,
 * and any made later is reported to its watch.  A child removed meanwhile
 * would lower the count (and hide as many grandchildren): the rmdir holds g's
 * inode lock from before the count drops until its IN_DELETE is queued, and
 * the getdents that finds the end takes that lock after the count was read,
 * so an empty inotify queue after it proves that no child went away. */
static int manager_list_children(Manager *m, Group *g, int dirfd) {
        _cleanup_free_ char *childpath = NULL;
        size_t plen = streq(g->path, "/") ? 0 : strlen(g->path);
        /* On the heap: this recurses once per level of the tree (through
         * manager_scan_child_at()), and 16 KiB a level on the stack would end
         * freezerd at about 500 levels. */
        _cleanup_free_ union {
                struct dirent64 de;
                char raw[SCAN_BUF_SIZE];
        } *buf = malloc(sizeof *buf);
        bool fresh = !g->children, all_leaves;
        uint64_t nr_descendants = UINT64_MAX;
        _cleanup_free_ ChildPrep *new = NULL; /* the new children of one buffer */
        size_t new_cap = 0;
        int r = 0;

        childpath = malloc(plen + 1 + NAME_MAX + 1);
        if (!childpath || !buf) {
                note_unfollowed(g, -ENOMEM);
                return -ENOMEM;
        }
        memcpy(childpath, g->path, plen);
        childpath[plen] = '/';

        for (;;) {
                ssize_t n = getdents64(dirfd, buf, sizeof *buf);
                if (n < 0) {
                        r = -errno;
                        note_unfollowed(g, r); /* the rest of its children are not followed */
                        fresh = false;
                        break;
                }
                if (n == 0)
                        break;
                size_t n_new = 0;
                for (char *p = buf->raw; p < buf->raw + n;) {
                        struct dirent64 *de = (struct dirent64 *) p;

                        p += de->d_reclen;
                        if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        /* O(1) by path, not a scan of the siblings. */
                        strncpy(childpath + plen + 1, de->d_name, NAME_MAX + 1);
                        if (tree_get(m->tree, childpath))
                                continue;
                        /* A name D-Bus cannot carry is left to manager_add_new(), which
                         * says so. */
                        if (!cg_name_is_publishable(de->d_name)) {
                                manager_add_child_logged(m, g, de->d_name, de->d_ino, dirfd);
                                continue;
                        }
                        if (n_new == new_cap) { /* grown as needed: this recurses once per level */
                                size_t cap = new_cap ? new_cap * 2 : 16;
                                ChildPrep *a = reallocarray(new, cap, sizeof *a);
                                if (!a) { /* no room: this one alone */
                                        manager_add_child_logged(m, g, de->d_name, de->d_ino, dirfd);
                                        continue;
                                }
                                new = a;
                                new_cap = cap;
                        }
                        new[n_new++] = (ChildPrep) { .name = de->d_name, .ino = de->d_ino };
                }
                manager_add_listed(m, g, dirfd, new, n_new);
                /* Before the next getdents: the one that finds the end must follow it. */
                if (fresh && read_nr_descendants(dirfd, &nr_descendants) < 0)
                        fresh = false;
        }

        all_leaves = fresh && g->n_descendants == g->n_children && nr_descendants == g->n_children &&
                     inotify_queue_empty(m);
        for (Group *c = g->children; c; c = c->next) {
                GroupData *cd = group_data(c);
                int k;

                if (!cd || !cd->scan_pending)
                        continue;
                cd->scan_pending = false;
                if (all_leaves)
                        continue;
                k = manager_scan_child_at(m, c, dirfd);
                if (k < 0 && !add_error_logged(k))
                        log_warning_errno(k, "Cannot track the children of %s: %m", c->path);
        }
        return r;
}

/* kernfs keeps a directory's link count at 2 + its subdirectories: a leaf
 * needs no getdents (two calls listing ~25 files each). */
static int manager_scan_children(Manager *m, Group *g, int dirfd) {
        struct stat st;
        int r;

        if (fstat(dirfd, &st) == 0 && st.st_nlink == 2)
                return 0;

        m->scan_depth++;
        r = manager_list_children(m, g, dirfd);
        if (--m->scan_depth == 0) {
                scan_restore_cwd(m);
                scan_helper_free(m->scan_helper); /* single-threaded again */
                m->scan_helper = NULL;
        }
        return r;
}

static void group_announce(Manager *m, Group *g) {
        GroupData *d = group_data(g);

        tree_forget_changes(m->tree, g);
        m->groups_count_changed = true;
        /* Before the bus is ready nobody listens (and a start over 10,000
         * groups would queue them all for nothing). */
        if (!m->on_group_added || !m->bus_ready || d->announce_slot)
                return;
        if (m->n_announce == m->announce_cap) {
                size_t cap = m->announce_cap ? m->announce_cap * 2 : 64;
                Group **a = reallocarray(m->announce, cap, sizeof *a);
                if (!a) {
                        m->on_group_added(m, g); /* now, with the values it has */
                        return;
                }
                m->announce = a;
                m->announce_cap = cap;
        }
        m->announce[m->n_announce++] = g;
        d->announce_slot = m->n_announce;
}

void manager_announce(Manager *m) {
        /* Held while a call that may yet be refused looks paths up: what it
         * tracks goes again if it is (manager_call_end()), unannounced. */
        if (m->call.open && !m->call.accepted)
                return;
        /* on_group_added() may not add or remove groups: the array stays put. */
        for (size_t i = 0; i < m->n_announce; i++) {
                Group *g = m->announce[i];
                if (!g)
                        continue; /* removed before it was announced */
                group_data(g)->announce_slot = 0;
                /* InterfacesAdded carries its values as they are now: what the
                 * scan changed since is no news to anyone. */
                tree_forget_changes(m->tree, g);
                if (m->on_group_added)
                        m->on_group_added(m, g);
        }
        m->n_announce = 0;
        if (m->announce_cap > 1024) { /* a burst's array is not kept for good */
                m->announce = mfree(m->announce);
                m->announce_cap = 0;
        }
}

/* An untracked ancestor becomes tracked: publish it and follow its subtree. */
static int manager_track_existing(Manager *m, Group *g) {
        _cleanup_close_ int dirfd = -1;
        bool published = group_published(g);
        int r;

        if (g->tracked)
                return 0;
        tree_set_tracked(m->tree, g, true);
        if (!published) /* the root is an object already: announce it once */
                group_announce(m, g);
        r = open_group_dir(m, g->path, &dirfd);
        if (r < 0)
                return r;
        for (Group *c = g->children; c; c = c->next)
                if (!c->tracked)
                        (void) manager_track_existing(m, c);
        return manager_scan_children(m, g, dirfd);
}

/* Add (or find) group parent/name, open and watch it, and if tracked, its
 * whole subtree.  Watches are armed before the state and the children are
 * read, so nothing that happens meanwhile is missed. */
static int manager_add_subtree(Manager *m, Group *parent, const char *name, bool tracked, Group **ret) {
        _cleanup_free_ char *path = NULL;
        Group *g;

        if (asprintf(&path, "%s/%s", streq(parent->path, "/") ? "" : parent->path, name) < 0)
                return -ENOMEM;
        g = tree_get(m->tree, path);
        if (g) {
                if (ret)
                        *ret = g;
                return tracked ? manager_track_existing(m, g) : 0;
        }
        return manager_add_new(m, parent, name, 0, tracked, -1, ret);
}

/* The names below one group that were not followed, by hash: each is logged
 * once, not at every rescan (Track() of a tracked subtree, an overflow's
 * resync); past ODD_NAMES_MAX below one group, once more to say the rest go
 * unlogged.  Allocated with the first: most groups never have one. */
#define ODD_NAMES_MAX 8
struct OddNames {
        uint64_t hash[ODD_NAMES_MAX];
        unsigned n; /* names logged; ODD_NAMES_MAX + 1 once the rest go unlogged */
};

static void odd_name_log(GroupData *pd, const char *parent_path, const char *name) {
        uint64_t h = string_hash(name);
        char esc[4 * NAME_MAX + 8]; /* every byte escaped, never cut */

        if (pd && !pd->odd_names)
                pd->odd_names = calloc(1, sizeof *pd->odd_names);
        struct OddNames *o = pd ? pd->odd_names : NULL;
        if (o) {
                if (o->n > ODD_NAMES_MAX)
                        return;
                for (unsigned i = 0; i < o->n && i < ODD_NAMES_MAX; i++)
                        if (o->hash[i] == h)
                                return;
        }
        log_warning("Not following %s/%s: its name is not UTF-8 that D-Bus can carry, or holds a control character%s",
                    streq(parent_path, "/") ? "" : CG_QUOTE(parent_path), cg_escape(name, true, esc, sizeof esc),
                    o && o->n == ODD_NAMES_MAX ? " (more such groups here are not followed either, and not logged)"
                                               : "");
        if (!o)
                return;
        if (o->n < ODD_NAMES_MAX)
                o->hash[o->n] = h;
        o->n++;
}

/* Watch the cgroup.freeze at path of a group (parent's child name, parent
 * NULL for the mount's root) whose directory has the watch wd: both go to
 * *ret.  On failure wd is taken back.  may_lack: the mount's root, which has
 * no cgroup.freeze (its watch is then -1). */
static int watch_freeze_file(Manager *m, int wd, const char *path, bool may_lack, Group *parent, const char *name,
                             Watches *ret) {
        int wdf = inotify_add_watch(m->inotify_fd, path, FREEZE_WATCH_MASK | IN_MASK_CREATE);

        if (wdf < 0 && !(may_lack && errno == ENOENT)) {
                int r = -errno;
                (void) inotify_rm_watch(m->inotify_fd, wd);
                return watch_error(parent, name, r);
        }
        *ret = (Watches) { wd, wdf };
        return 0;
}

/* Open parent/name/cgroup.events, or with !events parent/name/cgroup.freeze
 * (a group deduced below an empty one: its own flag is all there is to read),
 * into *ret_fd, and watch its directory and cgroup.freeze, by name below
 * parent_dirfd (a scan: name comes from getdents and holds no '/', and the
 * working directory is the parent's, see scan_chdir()).  System calls only,
 * nothing of the model: safe from the scan helper's thread too (see
 * child_prepare()).  On failure nothing is left open or armed, and
 * *ret_in_watch says whether a watch failed (else the open did). */
static int child_open_and_watch(int inotify_fd, int parent_dirfd, const char *name, bool events, int *ret_fd,
                                Watches *ret, bool *ret_in_watch) {
        _cleanup_close_ int fd = -1;
        char rel[NAME_MAX + sizeof "/cgroup.events"];
        int wd, wdf;

        *ret_in_watch = false;
        if (strlen(name) > NAME_MAX)
                return -ENAMETOOLONG;
        stpcpy(stpcpy(rel, name), events ? "/cgroup.events" : "/cgroup.freeze");
        /* Beneath the parent we hold: no symlink, no mount crossing. */
        fd = cg_openat_beneath(parent_dirfd, rel, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        /* cgroup2 has neither symlinks nor renames, and the file just opened
         * shows no mount on name: name is that group's directory (were it
         * removed and made again meanwhile, the parent's watch reports both).
         * IN_MASK_CREATE: never take over a watch we hold for another group. */
        *ret_in_watch = true;
        wd = inotify_add_watch(inotify_fd, name, DIR_WATCH_MASK | IN_DONT_FOLLOW | IN_MASK_CREATE);
        if (wd < 0)
                return -errno;
        stpcpy(stpcpy(rel, name), "/cgroup.freeze");
        wdf = inotify_add_watch(inotify_fd, rel, FREEZE_WATCH_MASK | IN_MASK_CREATE);
        if (wdf < 0) {
                int r = -errno;
                (void) inotify_rm_watch(inotify_fd, wd);
                return r;
        }
        *ret = (Watches) { wd, wdf };
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int open_and_watch_at(Manager *m, Group *parent, int parent_dirfd, const char *name, bool events,
                             int *ret_fd, Watches *ret) {
        bool in_watch;
        int r;

        r = child_open_and_watch(m->inotify_fd, parent_dirfd, name, events, ret_fd, ret, &in_watch);
        return r < 0 && in_watch ? watch_error(parent, name, r) : r;
}

/* The same for a group open at dirfd (its cgroup.freeze watched through
 * /proc/self/fd: the inode we opened, not a path that could be swapped);
 * parent NULL for the mount's root. */
static int watch_group_fd(Manager *m, Group *parent, const char *name, int dirfd, bool is_root, Watches *ret) {
        char p[64];
        int wd;

        wd = watch_fd(m, dirfd, DIR_WATCH_MASK);
        if (wd < 0)
                return watch_error(parent, name, wd);
        snprintf(p, sizeof p, "/proc/self/fd/%d/cgroup.freeze", dirfd);
        return watch_freeze_file(m, wd, p, is_root, parent, name, ret); /* the mount's root has none */
}

/* parent/name, absent from the model: add it (untracked until complete).
 * parent_dirfd, when >= 0, is the parent's open directory, which a scan
 * lists: the child is then looked up by name below it, and a leaf's
 * directory is never opened.  dir_ino: the d_ino that listing gave for
 * name, 0 if none. */
static int manager_add_new_unnoted(Manager *m, Group *parent, const char *name, uint64_t dir_ino, bool tracked,
                                   int parent_dirfd, Group **ret) {
        _cleanup_close_ int dirfd = -1, fd = -1;
        Watches w = { -1, -1 };
        bool by_name;
        Group *cover;
        int r;

        /* Every group's path goes into replies and signals: one that D-Bus
         * cannot carry would fail them all (a listing, a batch's reply, a
         * whole GroupsChanged).  The kernel's flags still reach it through
         * its ancestors (and the calls over a subtree through its parent's
         * hint: manager_add_new()), as they do the groups too deep. */
        if (!cg_name_is_publishable(name)) {
                odd_name_log(group_data(parent), parent->path, name);
                return -EILSEQ;
        }
        if (parent->depth >= GROUP_DEPTH_MAX) {
                GroupData *pd = group_data(parent);
                if (pd && !pd->deep_warned) { /* once per group, not per mkdir below it */
                        pd->deep_warned = true;
                        log_warning("Not following the groups below %s: they are deeper than %u levels below the "
                                    "cgroup root",
                                    parent->path, GROUP_DEPTH_MAX);
                }
                return -E2BIG;
        }

        /* Below an empty group a new group is empty too, and frozen exactly
         * when its effective flag is set (see group_cover()): then only its
         * own flag is read, and its cgroup.events is not opened (see
         * group_open_events()).  fd is then its cgroup.freeze. */
        cover = group_child_cover(parent);
        if (cover && parent_dirfd < 0) {
                /* Made since the last scan (a mkdir, or a lookup of a path the
                 * model lacks): a task may have come into it before we got
                 * here, which the cover's notification would tell only later.
                 * Its cover's file (open, and read anyway then) says now. */
                (void) group_read_events(m, cover);
                cover = group_child_cover(parent);
        }
        by_name = parent_dirfd >= 0 && scan_chdir(m, parent, parent_dirfd) >= 0;
        if (by_name) {
                r = open_and_watch_at(m, parent, parent_dirfd, name, !cover, &fd, &w);
                if (r < 0)
                        return r;
        } else {
                if (parent_dirfd >= 0)
                        dirfd = cg_openat_beneath(parent_dirfd, name, O_RDONLY | O_DIRECTORY, 0);
                else {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s/%s", streq(parent->path, "/") ? "" : parent->path, name) < 0)
                                return -ENOMEM;
                        dirfd = cg_openat_beneath(m->root_fd, cg_path_relative(path), O_RDONLY | O_DIRECTORY, 0);
                }
                if (dirfd < 0)
                        return dirfd;
                fd = openat(dirfd, cover ? "cgroup.freeze" : "cgroup.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0)
                        return -errno;
                r = watch_group_fd(m, parent, name, dirfd, false, &w);
                if (r < 0)
                        return r;
        }
        return manager_add_opened(m, parent, name, dir_ino, tracked, parent_dirfd, by_name, cover, TAKE_FD(dirfd),
                                  TAKE_FD(fd), w, NULL, ret);
}

/* manager_add_new_unnoted(), and a child left out of the model noted in
 * its parent's hint (note_unfollowed()). */
static int manager_add_new(Manager *m, Group *parent, const char *name, uint64_t dir_ino, bool tracked,
                           int parent_dirfd, Group **ret) {
        Group *g = NULL;
        int r = manager_add_new_unnoted(m, parent, name, dir_ino, tracked, parent_dirfd, &g);

        /* g is set once it is in the model, also when its own listing failed
         * after (its children were noted by their own additions). */
        if (g && ret)
                *ret = g;
        if (!g)
                note_unfollowed(parent, r);
        else
                limit_name_forget(parent, name); /* logged again should the limit keep it out later */
        return r;
}

/* The rest of manager_add_new(), once parent/name is open and watched: dirfd
 * (when not by_name, else -1) and fd (see manager_add_new()) are taken over,
 * and so are the watches w.  pre: its flag as read already, after the watches
 * were armed (a listing's parallel part, see manager_list_children(); only
 * with cover, fd -1), else NULL. */
static int manager_add_opened(Manager *m, Group *parent, const char *name, uint64_t dir_ino, bool tracked,
                              int parent_dirfd, bool by_name, Group *cover, int dirfd_in, int fd_in, Watches w,
                              const FlagRead *pre, Group **ret) {
        _cleanup_close_ int dirfd = dirfd_in, fd = fd_in;
        bool freeze, read_ok;
        Group *g;
        int r;

        /* The kernel's id, its directory's inode number: from the listing
         * when there was one (kernfs gives a directory entry the inode's
         * number, the cgroup id), else one statx() more.  Were name removed
         * and made again since the listing, the parent's watch reports both
         * and the new group is added with its own id.  Gone meanwhile: as any
         * vanished group. */
        uint64_t id = dir_ino;
        r = 0;
        if (id == 0)
                r = by_name ? cg_dir_id(parent_dirfd, name, &id) : cg_dir_id(dirfd, NULL, &id);
        if (r < 0) {
                watches_drop(m, &w);
                return r;
        }
        /* Not announced as tracked before it is complete. */
        r = tree_add(m->tree, parent, name, false, false, false, false, &g);
        if (r < 0) {
                watches_drop(m, &w);
                return r;
        }
        g->id = id;
        r = group_attach(m, g, cover ? -1 : TAKE_FD(fd), w);
        if (r < 0) {
                tree_remove(m->tree, g, group_data_destroy, m);
                return r;
        }
        /* Read after the watches are armed: a later write is seen.  Should
         * the flag not read, the group is read as any other. */
        bool deduced = false;
        if (cover && pre) {
                deduced = pre->r >= 0;
                freeze = pre->freeze;
        } else if (cover)
                deduced = cg_read_freeze_fd(fd, &freeze) >= 0;
        if (deduced) {
                tree_set_freeze(m->tree, g, freeze);
                group_apply_events(m, g, false, g->e_freeze);
                read_ok = true;
        } else
                read_ok = group_read_events(m, g) >= 0;
        /* "populated 0, frozen 0": the kernel freezes an empty group inside the
         * write, so neither this group nor an ancestor has its flag set: no need
         * to open cgroup.freeze (the watch is armed: a later write is seen). */
        if (!deduced && (g->populated || g->frozen)) {
                closep(&fd);
                if (by_name) {
                        char rel[NAME_MAX + sizeof "/cgroup.freeze"];

                        stpcpy(stpcpy(rel, name), "/cgroup.freeze");
                        fd = cg_openat_beneath(parent_dirfd, rel, O_RDONLY, 0);
                } else
                        fd = openat(dirfd, "cgroup.freeze", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd >= 0 && cg_read_freeze_fd(fd, &freeze) >= 0)
                        tree_set_freeze(m->tree, g, freeze);
        }
        r = group_start_following(m, g, read_ok);
        if (r < 0) {
                tree_remove(m->tree, g, group_data_destroy, m);
                return r;
        }

        if (ret)
                *ret = g;
        if (!tracked)
                return 0;

        tree_set_tracked(m->tree, g, true);
        group_announce(m, g);
        if (parent_dirfd < 0)
                return manager_scan_children(m, g, dirfd);
        /* The parent's listing looks for our children once it is complete. */
        group_data(g)->scan_pending = true;
        return 0;
}

/* g and its subtree leave the model: their cgroups were removed, or (untracked)
 * they exist still but are no longer tracked, which the log must not call a
 * removal. */
static void manager_remove_group(Manager *m, Group *g, bool untracked) {
        Group *parent = g->parent;

        if (g == tree_root(m->tree))
                return;
        if (untracked)
                log_debug("%s: no longer tracked", g->path);
        else
                log_debug("%s: removed", g->path);
        tree_remove(m->tree, g, group_data_destroy, m);
        m->track_roots_removed = true; /* maybe a root among them: manager_forget_waiting_roots() */

        /* Ancestors waiting for their descendants to freeze may be done now
         * that one of them is gone. */
        for (Group *a = m->operations ? parent : NULL; a; a = a->parent) {
                GroupData *ad = group_data(a);
                for (OpEntry *e = ad ? ad->entries : NULL, *next; e; e = next) {
                        next = e->gnext;
                        operation_check(e->op);
                }
        }
}

/* ---- operations --------------------------------------------------------------------------------------- */

static void entry_unlink(OpEntry *e) {
        if (!e->group)
                return;
        GroupData *d = group_data(e->group);
        if (e->gprev)
                e->gprev->gnext = e->gnext;
        else if (d)
                d->entries = e->gnext;
        if (e->gnext)
                e->gnext->gprev = e->gprev;
        e->gnext = e->gprev = NULL;
        e->group = NULL;
}

static void entry_link(OpEntry *e, Group *g) {
        GroupData *d = group_data(g);
        e->group = g;
        e->gprev = NULL;
        e->gnext = d->entries;
        if (d->entries)
                d->entries->gprev = e;
        d->entries = e;
}

/* The journal goes before the reply: once the caller is told, a crash must
 * not undo what it was told. */
static void operation_end_journal(Operation *op) {
        if (op->journal_slot < 0)
                return;
        int r = journal_end(op->manager->journal, (unsigned) op->journal_slot);
        if (r < 0)
                log_warning_errno(r, "Cannot empty batch journal %s, removed it instead: %m",
                                  journal_slot_path(op->manager->journal, (unsigned) op->journal_slot));
        op->journal_slot = -1;
}

static void operation_free(Operation *op) {
        Manager *m = op->manager;

        for (unsigned i = 0; i < op->n_entries; i++)
                entry_unlink(&op->entries[i]);
        if (op->timer)
                event_free(op->timer);
        if (op->recheck)
                event_free(op->recheck);
        LIST_UNLINK(m->operations, op, prev, next);
        m->n_operations--;
        /* Over once few are left, not only none: one call waiting for good
         * (a group stuck on FUSE) must not keep a burst's memory. */
        if (m->n_operations <= OPERATIONS_BURST / 8) {
                m->burst_over = m->burst_over || m->n_operations_peak >= OPERATIONS_BURST;
                m->n_operations_peak = m->n_operations;
        }
        operation_end_journal(op);
        free(op->doom_message);
        free(op->entries);
        free(op);
}

static void operation_finish(Operation *op, const sd_bus_error *error) {
        /* Detach first: the callback may start new operations on the same groups. */
        for (unsigned i = 0; i < op->n_entries; i++)
                entry_unlink(&op->entries[i]);
        operation_end_journal(op);
        if (op->done)
                op->done(op, error, op->userdata);
        operation_free(op);
}

static void operation_fail(Operation *op, const char *name, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);

        sd_bus_error e = SD_BUS_ERROR_MAKE_CONST(name, msg ?: "Out of memory");
        operation_finish(op, &e);
}

/* Restore every flag the operation changed, newest first, so that a batch
 * unwinds as it was applied.  A flag someone else changed since is theirs:
 * it is left alone; so is one a later call asked for as it is (adopted): that
 * call was told its flag is set.  Returns whether anything was restored;
 * *ret_kept counts the adopted flags left, *ret_kept_path names one;
 * *ret_failed counts the writes back that failed, *ret_failed_path and
 * *ret_failed_error tell the first.  gs: the groups of op's entries, for a
 * call whose write failed before its entries were linked to their groups
 * (batch_start(); NULL: linked). */
static bool operation_rollback(Operation *op, Group *const *gs, unsigned *ret_kept, const char **ret_kept_path,
                               unsigned *ret_failed, const char **ret_failed_path, int *ret_failed_error) {
        bool any = false;

        *ret_kept = 0;
        *ret_kept_path = NULL;
        *ret_failed = 0;
        *ret_failed_path = NULL;
        *ret_failed_error = 0;
        for (unsigned i = op->n_entries; i > 0; i--) {
                OpEntry *e = &op->entries[i - 1];
                Group *g = e->group ?: (gs ? gs[i - 1] : NULL);
                if (!g || !(e->wrote || e->inherited) || g->freeze != e->new_freeze)
                        continue;
                if (e->adopted) {
                        if ((*ret_kept)++ == 0)
                                *ret_kept_path = g->path;
                        continue;
                }
                e->new_freeze = e->prev_freeze; /* our own write must not cancel us */
                int r = group_write_freeze(op->manager, g, e->prev_freeze);
                if (r < 0) {
                        log_warning_errno(r, "Rollback of %s failed: %m", g->path);
                        if ((*ret_failed)++ == 0) {
                                *ret_failed_path = g->path;
                                *ret_failed_error = r;
                        }
                } else
                        any = true;
                group_poll_uncovered(op->manager, g);
        }
        return any;
}

/* What the caller of a rollback (operation_rollback()) is told of the
 * writes back that failed: ". Restoring the flag of /x failed (...): it
 * stays as written", the first named; NULL where none failed (or no memory). */
static char *rollback_failed_message(unsigned failed, const char *failed_path, int failed_error) {
        /* A flag the rollback could not write back stays as the call wrote
         * it: said, as what was restored is (the first named); but not of a
         * group removed meanwhile, which has none. */
        bool gone = failed_error == -ENOENT || failed_error == -ENODEV;
        char *msg = NULL;

        if (failed > 0 && asprintf(&msg, ". Restoring the flag of %s failed (%s)%s", CG_NAMED_IN_LIST(failed_path),
                                   strerror(-failed_error),
                                   failed > 1 ? ", and that of other groups: those that still exist stay as written"
                                   : gone     ? ": the group no longer exists"
                                              : ": it stays as written") < 0)
                msg = NULL;
        return msg;
}

/* The journal of an operation that waits with ROLLBACK_ON_TIMEOUT, made again
 * without its adopted flags: a crash must not undo what a later call was told.
 * And with the flags it inherited: those its rollback restores, a crash's
 * restart must restore too.  The new journal goes in before the old one goes
 * (a crash between restores from both, the adopted flag included: as before).
 * Where the new one cannot be written the old one stays.  gs: the groups of
 * op's entries, for a call that adopts before its entries are linked to their
 * groups (NULL: linked). */
static bool operation_rejournal(Operation *op, Group *const *gs) {
        Manager *m = op->manager;
        _cleanup_free_ JournalEntry *entries = NULL;
        unsigned slot = 0;
        size_t k = 0;
        int r;

        if (!(op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT) || !m->journal)
                return true;
        entries = calloc(op->n_entries ?: 1, sizeof *entries);
        if (!entries) {
                log_warning("Cannot record the batch journal again: out of memory, keeping the one before");
                return false;
        }
        for (unsigned i = 0; i < op->n_entries; i++) {
                const OpEntry *e = &op->entries[i];
                const Group *g = e->group ?: (gs && !e->vanished ? gs[i] : NULL);
                if (g && (e->wrote || e->inherited) && !e->adopted)
                        entries[k++] = (JournalEntry) {
                                .path = g->path,
                                .prev_freeze = e->prev_freeze,
                                .new_freeze = e->new_freeze,
                                .cgroup_id = g->id,
                        };
        }
        if (k > 0) {
                r = journal_begin(m->journal, ++m->journal_seq, journal_boot_id(), entries, k, &slot);
                if (r < 0) {
                        if (gs)
                                log_warning_errno(r, "Cannot record the batch journal again with the flags it takes "
                                                  "over from earlier calls, keeping the one before (and theirs): "
                                                  "%m");
                        else
                                log_warning_errno(r, "Cannot record the batch journal again without the flags later "
                                                  "calls asked for, keeping the one before: %m");
                        return false;
                }
        }
        operation_end_journal(op);
        op->journal_slot = k > 0 ? (int) slot : -1;
        return true;
}

/* mine (an entry of a call that asked for g's flag as it is now) makes g's
 * flag that call's too: an operation waiting with ROLLBACK_ON_TIMEOUT that
 * wrote that flag no longer owns it alone.  Its rollback would take back what
 * mine's caller is told is done (a Freeze of a group already frozen by a
 * pending call is skipped, and succeeds), so it leaves the flag (adopted),
 * and the caller of the rollback is told which; mine's call names it among
 * the flags it set (took_over: operation_stays()).  Where mine's call has
 * ROLLBACK_ON_TIMEOUT itself, it takes over the restoring (inherited): had
 * it written the flag, its rollback would restore it.  The journals this
 * makes stale are written again by operations_rejournal(), once per
 * operation.  Returns whether it made any stale. */
static bool group_adopt(Group *g, OpEntry *mine) {
        bool inherit = (mine->op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT) && !mine->wrote, any = false;

        for (OpEntry *e = group_data(g)->entries; e; e = e->gnext) {
                if (e->op == mine->op || !(e->wrote || e->inherited) || e->adopted ||
                    e->new_freeze != mine->new_freeze || !(e->op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT))
                        continue;
                e->adopted = true;
                e->op->journal_stale = any = true;
                mine->took_over = true;
                if (inherit && !mine->inherited) {
                        mine->inherited = true;
                        mine->op->journal_stale = true;
                        mine->prev_freeze = e->prev_freeze;
                }
        }
        return any;
}

/* After group_adopt() of a call's groups gs[0..n) (one for a Freeze, a
 * batch's, those of mine's entries, not linked to them yet): every stale
 * journal written again, once (a batch that adopts 10,000 flags of one
 * earlier call rewrites that call's journal once). */
static void operations_rejournal(Operation *mine, Group *const *gs, size_t n) {
        bool taken_over = true;

        assert(n == mine->n_entries);
        if (mine->journal_stale) {
                mine->journal_stale = false;
                taken_over = operation_rejournal(mine, gs);
        }
        /* Where mine's journal could not record the flags it takes over, the
         * earlier calls' keep them: a crash's restart restores them as mine's
         * rollback would, not neither. */
        for (size_t i = 0; i < n; i++)
                for (OpEntry *e = group_data(gs[i])->entries; e; e = e->gnext)
                        if (e->op->journal_stale) {
                                e->op->journal_stale = false;
                                if (taken_over)
                                        operation_rejournal(e->op, NULL);
                        }
}

/* Failures found while walking the model (a flag reversed, a group removed)
 * are not acted on there: a rollback writes flags, which may doom further
 * operations, which would change the very lists being walked.  They are
 * queued and carried out by manager_dispatch() at a safe point, within the
 * same loop turn. */
/* Put op at the end of the outcomes manager_dispatch() answers, its timer off. */
static void operation_queue(Operation *op) {
        Manager *m = op->manager;

        op->doomed = true;
        if (op->timer)
                evtimer_del(op->timer);
        if (op->recheck)
                evtimer_del(op->recheck);
        op->doomed_next = NULL;
        if (m->doomed_tail)
                m->doomed_tail->doomed_next = op;
        else
                m->doomed = op;
        m->doomed_tail = op;
}

/* Returns whether this failure is the one the call is answered with. */
_printf_(5, 0)
static bool operation_doom_va(Operation *op, bool rollback, bool over_success, const char *name, const char *fmt,
                              va_list ap) {
        bool queued = op->doomed;

        /* A failure is final, and so is a success queued (operation_conclude(),
         * doom_name NULL) but not yet replied: the kernel confirmed it, and what
         * happens next (a timeout, a removal) is not its failure.  But for a
         * flag reversed (over_success): a rollback replied before it may have
         * undone one of its flags (a request of the same value skipped is no
         * write of its own), and its reply must not say the flags are as asked. */
        if (queued && (op->doom_name || !over_success))
                return false;
        op->doom_rollback = rollback && (op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT);
        op->doom_tell_stays = false;
        op->doom_name = name;
        free(op->doom_message);
        if (vasprintf(&op->doom_message, fmt, ap) < 0)
                op->doom_message = NULL;
        if (!queued)
                operation_queue(op);
        return true;
}

static void operation_doom(Operation *op, bool rollback, const char *name, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        operation_doom_va(op, rollback, false, name, fmt, ap);
        va_end(ap);
}

/* A failure of one of op's groups (its flag reversed, the group removed)
 * that leaves the others as op wrote them, but with ROLLBACK_ON_TIMEOUT: the
 * reply names those (operation_stays()), as a Timeout's says they stay, lest
 * the caller of a batch take the failure for "nothing done". */
static void operation_doom_leaving(Operation *op, bool over_success, const char *name, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (operation_doom_va(op, true, over_success, name, fmt, ap))
                op->doom_tell_stays = true;
        va_end(ap);
}

/* Cancelled: one of op's flags was written back to the other value. */
#define operation_reversed(op, ...) operation_doom_leaving((op), true, BUS_ERROR_CANCELLED, __VA_ARGS__)

/* The sentence that names the flags that stay (operation_stays()), and
 * that of a Timeout, whose flags all stay as asked, the kernel not done with
 * them; freezectl finds these words to say them of its option (--rollback),
 * outside double quotes: every path in these messages is named by
 * CG_NAMED_IN_LIST(), so that no name passes for them or for a list's end
 * ("and 3 more"). */
#define STAYS_SENTENCE ". Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked"
#define TIMEOUT_STAYS_SENTENCE STAYS_SENTENCE ", and the kernel goes on with them"

/* sentence (STAYS_SENTENCE...) and ": /a, /b": the groups whose flag op
 * set and that still have it, at most STAYS_GROUPS_NAMED named; NULL where
 * there is none (a single Freeze's flag reversed, the group of a single call
 * removed).  Those it wrote, and those an earlier ROLLBACK call wrote that
 * stay because op asked for them too (took_over): that call's rollback
 * leaves them.  Not those as asked before, which were none's to undo. */
#define STAYS_GROUPS_NAMED 4
static char *operation_stays(const Operation *op, const char *sentence) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0, n = 0;
        FILE *f;

        if (op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT)
                return NULL;
        f = open_memstream(&text, &size);
        if (!f)
                return NULL;
        for (unsigned i = 0; i < op->n_entries; i++) {
                const OpEntry *e = &op->entries[i];

                if (!e->group || !(e->wrote || e->took_over) || e->group->freeze != e->new_freeze)
                        continue;
                if (n++ < STAYS_GROUPS_NAMED)
                        fprintf(f, "%s%s%s", n > 1 ? ", " : sentence, n > 1 ? "" : ": ",
                                CG_NAMED_IN_LIST(e->group->path));
        }
        if (n > STAYS_GROUPS_NAMED)
                fprintf(f, " and %zu more", n - STAYS_GROUPS_NAMED);
        if (fclose(f) != 0 || n == 0)
                return NULL;
        return TAKE_PTR(text);
}

/* The sentence of a Timeout with ROLLBACK_ON_TIMEOUT whose call wrote no
 * flag (every one it asked for was already so): its rollback had nothing to
 * restore, and a caller told nothing of it would not know whether it
 * happened, nor what it left.  The flags it names stay as they were.  The
 * list of paths ends it, as operation_stays()'s does: freezectl finds it so
 * (and says --rollback for ROLLBACK_ON_TIMEOUT).  Where some of them are done
 * and some not, the list is of those not done yet, which the words before it
 * speak of ("the kernel goes on with the one not done yet: /h"): the others
 * are only counted.  NULL where the call wrote a flag (its rollback's
 * sentences say what it restored), or where none is left as it asked
 * (changed since). */
#define ROLLBACK_UNCHANGED_SENTENCE ". ROLLBACK_ON_TIMEOUT had nothing to restore: "
static char *operation_unchanged(const Operation *op) {
        _cleanup_free_ char *list = NULL;
        size_t size = 0, n = 0, n_pending = 0, n_set = 0, n_listed = 0;
        bool only_pending;
        FILE *f;

        for (unsigned i = 0; i < op->n_entries; i++)
                if (op->entries[i].wrote || op->entries[i].inherited)
                        return NULL;
        for (unsigned i = 0; i < op->n_entries; i++) {
                const OpEntry *e = &op->entries[i];

                if (!e->group || e->group->freeze != e->new_freeze)
                        continue;
                n++;
                n_pending += !e->done;
                n_set += e->new_freeze;
        }
        if (n == 0)
                return NULL;
        only_pending = n_pending > 0 && n_pending < n;

        f = open_memstream(&list, &size);
        if (!f)
                return NULL;
        for (unsigned i = 0; i < op->n_entries; i++) {
                const OpEntry *e = &op->entries[i];

                if (!e->group || e->group->freeze != e->new_freeze || (only_pending && e->done))
                        continue;
                if (n_listed++ < STAYS_GROUPS_NAMED)
                        fprintf(f, "%s%s", n_listed > 1 ? ", " : "", CG_NAMED_IN_LIST(e->group->path));
        }
        if (n_listed > STAYS_GROUPS_NAMED)
                fprintf(f, " and %zu more", n_listed - STAYS_GROUPS_NAMED);
        if (fclose(f) != 0)
                return NULL;

        /* One value for all (a Freeze's, a Thaw's, most batches'): said. */
        const char *value = n_set == n ? "1" : n_set == 0 ? "0" : NULL;
        _cleanup_free_ char *what = NULL, *kernel = NULL;
        char *text = NULL;
        if ((n == 1 ? asprintf(&what, "%sthe cgroup.freeze of the group already as asked", ROLLBACK_UNCHANGED_SENTENCE)
                    : asprintf(&what, "%sthe cgroup.freeze of the %zu groups already as asked",
                               ROLLBACK_UNCHANGED_SENTENCE, n)) < 0)
                return NULL;
        int r = 0;
        if (only_pending && n_pending == 1)
                r = asprintf(&kernel, ", and the kernel goes on with the one not done yet");
        else if (only_pending)
                r = asprintf(&kernel, ", and the kernel goes on with the %zu not done yet", n_pending);
        else if (n_pending > 0)
                r = asprintf(&kernel, ", and the kernel goes on %s%s",
                             !value            ? "with them"
                             : value[0] == '1' ? "freezing"
                                               : "thawing",
                             !value ? "" : n == 1 ? " it" : " them");
        if (r < 0)
                return NULL;
        if (asprintf(&text, "%s was %s before this call and stays %s%s: %s", what,
                     value ?: "1 or 0", value ?: "so", kernel ?: "", list) < 0)
                return NULL;
        return text;
}

/* An operation done: its success is queued with the failures, so that every
 * reply goes out in the order its outcome was found.  A call that reverses a
 * pending one (Cancelled) and is then done at once replies after it, as it
 * wrote after it. */
static void operation_conclude(Operation *op) {
        if (!op->doomed)
                operation_queue(op); /* doom_name NULL: a success */
}

void manager_dispatch(Manager *m) {
        Operation *op;

        /* Calls that went on without a group removed (group_data_destroy()):
         * done now, maybe.  A look at each operation, only after such a removal. */
        if (m->vanished_check) {
                m->vanished_check = false;
                for (op = m->operations; op; op = op->next)
                        if (op->vanished_check) {
                                op->vanished_check = false;
                                (void) operation_check(op);
                        }
        }
        while ((op = m->doomed)) {
                _cleanup_free_ char *msg = TAKE_PTR(op->doom_message);
                bool restored = false;

                m->doomed = op->doomed_next;
                if (!m->doomed)
                        m->doomed_tail = NULL;
                if (!op->doom_name) {
                        operation_finish(op, NULL);
                        continue;
                }
                unsigned kept = 0, failed = 0;
                const char *kept_path = NULL, *failed_path = NULL;
                int failed_error = 0;
                _cleanup_free_ char *kept_msg = NULL, *failed_msg = NULL;
                if (op->doom_rollback)
                        restored = operation_rollback(op, NULL, &kept, &kept_path, &failed, &failed_path,
                                                      &failed_error);
                failed_msg = rollback_failed_message(failed, failed_path, failed_error);
                if (kept > 0 && asprintf(&kept_msg, "%s %s%s kept: a later call asked for %s too",
                                         restored ? ", but" : ". The flag of", CG_NAMED_IN_LIST(kept_path),
                                         kept > 1 ? " and other flags were" : " was", kept > 1 ? "them" : "it") < 0)
                        kept_msg = NULL;
                /* A timeout without ROLLBACK_ON_TIMEOUT changes nothing back:
                 * said, as the rollback's restore is, lest "Timed out" read as
                 * if nothing had been done (the group goes on freezing).  A
                 * call that wrote groups it did not name says which, for its
                 * caller to undo them, as its success's reply would let it
                 * (FreezeExcept returns its cover). */
                bool stays = streq(op->doom_name, BUS_ERROR_TIMEOUT) &&
                             !(op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT);
                _cleanup_free_ char *stays_msg = op->doom_tell_stays ? operation_stays(op, STAYS_SENTENCE)
                                                 : stays && op->writes_unnamed
                                                         ? operation_stays(op, TIMEOUT_STAYS_SENTENCE)
                                                         : NULL;
                /* A rollback of a call that wrote no flag: said, lest the
                 * caller read nothing of its rollback (operation_unchanged()). */
                _cleanup_free_ char *unchanged_msg =
                        op->doom_rollback && streq(op->doom_name, BUS_ERROR_TIMEOUT) && !restored && kept == 0 &&
                                        failed == 0
                                ? operation_unchanged(op)
                                : NULL;
                operation_fail(op, op->doom_name, "%s%s%s%s%s%s%s", msg ?: "Failed", failed_msg ?: "",
                               restored ? failed > 0 ? ". The other flags this call changed were restored"
                                                     : ". Every flag this call changed was restored"
                                        : "",
                               kept_msg ?: "", unchanged_msg ?: "",
                               stays && !stays_msg ? ". Without ROLLBACK_ON_TIMEOUT the flags stay as asked, and the "
                                                     "kernel goes on with them" : "", stays_msg ?: "");
        }
}

/* The kernel sets a group's "frozen" once its own tasks are frozen, even
 * while a child group is still freezing (seen on 6.18 with a child stuck
 * on FUSE): a freeze is complete only when every descendant reports frozen
 * too. */
static bool group_fully_frozen(const Group *g) {
        return g->frozen && g->n_frozen_descendants == g->n_descendants;
}

/* ---- a freeze the kernel reports early ---------------------------------------------------------------- */

/* The kernel marks a group frozen when its own tasks are (cgroup_update_frozen()
 * counts them), and also when its last descendant freezes
 * (cgroup_propagate_frozen(), which does not look at the group's own tasks).
 * So a group with tasks of its own and children, which cgroup v2 allows while
 * no controller is enabled below it, reads "frozen 1" as soon as its children
 * are frozen, often while its own tasks still sleep where they were; with one
 * task of its own no later notification says otherwise, and a task asleep on
 * FUSE keeps it "frozen 1" for good (README, "Kernel behaviour to know").  A
 * leaf's report is exact. */
static bool group_report_may_be_early(const Group *g) {
        return g->frozen && g->populated && g->n_children > 0;
}

/* Tasks read per look at an operation's groups (a check of an early report,
 * a timeout's message), whatever their size: past it, the kernel is taken at
 * its word, and a message says there may be more. */
#define TASKS_READ_MAX 1024u
#define RECHECK_FIRST_USEC ((uint64_t) 250)
#define RECHECK_MAX_USEC (50 * USEC_PER_MSEC)

/* The tasks directly in g (cgroup.threads, not cgroup.procs: one thread of a
 * process can be the one not frozen), as text. */
static int group_read_threads(Manager *m, const Group *g, char **ret, size_t *ret_len) {
        _cleanup_free_ char *rel = NULL;
        _cleanup_close_ int fd = -1;

        if (asprintf(&rel, "%s/cgroup.threads", cg_path_relative(g->path)) < 0)
                return -ENOMEM;
        fd = cg_openat_beneath(m->root_fd, rel, O_RDONLY, 0);
        if (fd < 0)
                return fd;
        return read_full_fd(fd, 256 * 1024, ret, ret_len);
}

/* The next task id in text (cgroup.threads, read by group_read_threads(),
 * one per line), consumed through *cursor; 0 at the end. */
static pid_t threads_next(const char **cursor) {
        while (**cursor) {
                const char *p = *cursor, *nl = strchr(p, '\n');
                long tid = strtol(p, NULL, 10);

                *cursor = nl ? nl + 1 : p + strlen(p);
                if (tid > 0 && tid <= INT_MAX)
                        return (pid_t) tid;
        }
        return 0;
}

/* The next task in text (consumed through *cursor, as threads_next()) that
 * the kernel does not count as frozen (task-state.h), each task read taking
 * one of *budget: 1 and *ret, or 0 at the end or once the budget is spent.
 * A task gone is skipped. */
static int next_task_not_frozen(const char **cursor, unsigned *budget, TaskState *ret) {
        pid_t tid;

        while (*budget > 0 && (tid = threads_next(cursor)) > 0) {
                (*budget)--;
                if (task_state_read(tid, ret) == 0 && !task_state_counted_frozen(ret))
                        return 1;
        }
        return 0;
}

/* Whether t is asleep (S) with its wchan hidden from us (another uid's task,
 * without CAP_SYS_PTRACE: most tasks, under the shipped unit): taken at the
 * kernel's word, by the check and by the Timeout message alike.  The freezer
 * wakes such a sleep, so it is in the trap or on its way. */
static bool task_hidden_asleep(const TaskState *t) {
        return t->hidden && t->state == 'S';
}

/* Whether t, a task in uninterruptible sleep whose wchan the kernel hides
 * from us, looks like a vfork() parent waiting for its child, which the
 * kernel counts as frozen: a task of the same group (text: its
 * cgroup.threads) is a child of t's process, has not exec'd since it was
 * forked, and shares t's memory (the same size and resident pages; a fork()
 * child, of a prefork server say, has a copy whose resident pages differ
 * from the first touch: not proof, but all the kernel shows to every uid).
 * A vfork() child is born in its parent's group, unless it was put elsewhere
 * (clone3()'s CLONE_INTO_CGROUP): such a parent is taken as not frozen, and
 * waited for. */
static bool hidden_vfork_parent(const char *text, const TaskState *t, unsigned *budget) {
        pid_t tgid, tid;

        if (task_read_tgid(t->tid, &tgid) < 0)
                tgid = t->tid;
        for (const char *p = text; *budget > 0 && (tid = threads_next(&p)) > 0;) {
                TaskState c, now;

                if (tid == t->tid)
                        continue;
                (*budget)--;
                /* Compared with t as read first, each child costs one read,
                 * however many a prefork server has. */
                if (task_state_read_stat(tid, &c) < 0 || c.ppid != tgid || !task_state_forked_not_execed(&c) ||
                    c.vsize == 0 || c.vsize != t->vsize || c.rss != t->rss)
                        continue;
                /* The parent read again, right after its child: the two
                 * memories compared at one moment. */
                if (*budget == 0)
                        break;
                (*budget)--;
                if (task_state_read_stat(t->tid, &now) == 0 && now.state == 'D' && c.vsize == now.vsize &&
                    c.rss == now.rss)
                        return true;
        }
        return *budget == 0; /* past the budget: the kernel's word */
}

/* Whether the check takes t, a task not counted frozen by what /proc shows
 * us (next_task_not_frozen()), at the kernel's word: asleep with its wchan
 * hidden (task_hidden_asleep()), or a hidden vfork() parent
 * (hidden_vfork_parent(); text: the cgroup.threads of its group).  For the
 * check and the Timeout message alike. */
static bool task_taken_frozen(const char *text, const TaskState *t, unsigned *budget) {
        return task_hidden_asleep(t) || (t->hidden && t->state == 'D' && hidden_vfork_parent(text, t, budget));
}

/* Whether every task directly in g is counted frozen, as far as we can see.
 * A group or task gone, or a file that cannot be read, leaves it to the
 * kernel's report (a removal answers the call on its own). */
static bool group_own_tasks_frozen(Manager *m, const Group *g, unsigned *budget) {
        _cleanup_free_ char *text = NULL;
        TaskState t;
        size_t len;
        int r;

        r = group_read_threads(m, g, &text, &len);
        if (r < 0) {
                log_debug_errno(r, "Cannot read the tasks of %s, taking the kernel's \"frozen\" as it is: %m", g->path);
                return true;
        }
        for (const char *cursor = text; next_task_not_frozen(&cursor, budget, &t) > 0;) {
                /* A task whose wchan the kernel hides from us is judged by its
                 * state letter (the ones counted frozen, stopped or a zombie,
                 * were skipped already).  Asleep (S): task_hidden_asleep().
                 * In uninterruptible sleep (D): the freezer cannot wake it (a
                 * task stuck on FUSE), so not frozen, unless it is a vfork()
                 * parent, which the kernel counts as frozen.  Running, or any
                 * other state (an idle sleep, I, is uninterruptible too): not
                 * frozen. */
                if (task_taken_frozen(text, &t, budget))
                        continue;
                return false;
        }
        return true;
}

static bool entry_wants_frozen(const OpEntry *e) {
        return e->group && e->group->e_freeze && e->want != OP_WANT_THAWED;
}

/* Whether an ancestor of g is a group op waits to see frozen: its walk covers
 * g's subtree (a RECURSIVE batch has an entry for every group of it). */
static bool operation_walks_above(Operation *op, const Group *g) {
        for (Group *a = g->parent; a; a = a->parent) {
                GroupData *ad = group_data(a);
                for (OpEntry *e = ad ? ad->entries : NULL; e; e = e->gnext)
                        if (e->op == op && entry_wants_frozen(e))
                                return true;
        }
        return false;
}

/* With every group of op reported as it asked: whether the groups below its
 * freezes whose report may be early (group_report_may_be_early()) have their
 * own tasks frozen too.  An entry over one that has not is pending again; the
 * caller looks again with operation_recheck_arm(), since no notification
 * needs to come.  Only populated subtrees are walked, so a freeze of empty
 * groups or of leaves reads nothing. */
static bool operation_tasks_frozen(Operation *op) {
        unsigned budget = TASKS_READ_MAX;
        bool all = true;

        for (unsigned i = 0; i < op->n_entries; i++) {
                OpEntry *e = &op->entries[i];
                Group *g = e->group;

                if (!entry_wants_frozen(e) || !g->populated || operation_walks_above(op, g))
                        continue;
                for (Group *x = g; x;) {
                        if (!x->populated) {
                                x = tree_next_preorder_skip(g, x);
                                continue;
                        }
                        if (group_report_may_be_early(x) && !group_own_tasks_frozen(op->manager, x, &budget)) {
                                log_debug("%s reads frozen, but a task of its own is not yet: %s waits", x->path,
                                          g->path);
                                e->done = false;
                                op->n_pending++;
                                all = false;
                                break;
                        }
                        x = tree_next_preorder(g, x);
                }
        }
        return all;
}

static void operation_recheck(evutil_socket_t fd, short what, void *userdata) {
        Operation *op = userdata;
        Manager *m = op->manager;

        (void) operation_check(op);
        manager_dispatch(m);
}

/* Look again shortly: 0.25, 0.5, 1 ms ... up to every 50 ms while a task of
 * such a group is not frozen (one asleep on FUSE, until the call times out).
 * A notification in between looks too. */
static void operation_recheck_arm(Operation *op) {
        struct timeval tv;

        if (!op->recheck) {
                op->recheck = evtimer_new(op->manager->event_base, operation_recheck, op);
                if (!op->recheck) {
                        operation_doom(op, true, SD_BUS_ERROR_NO_MEMORY, "Cannot arm a timer to look at tasks");
                        return;
                }
        }
        if (evtimer_pending(op->recheck, NULL))
                return;
        op->recheck_usec = !op->recheck_usec                            ? RECHECK_FIRST_USEC
                           : op->recheck_usec * 2 > RECHECK_MAX_USEC ? RECHECK_MAX_USEC
                                                                     : op->recheck_usec * 2;
        tv = (struct timeval) { .tv_usec = (suseconds_t) op->recheck_usec };
        (void) evtimer_add(op->recheck, &tv);
}

/* Re-evaluate whether an operation completed.  Called whenever the kernel's
 * frozen value of one of its groups changes. */
static bool operation_check(Operation *op) {
        if (op->doomed)
                return true; /* its failure is queued */
        op->n_pending = 0;
        for (unsigned i = 0; i < op->n_entries; i++) {
                OpEntry *e = &op->entries[i];
                Group *g = e->group;

                if (!g)
                        continue; /* removal fails the operation before we get here */

                switch (e->want) {
                case OP_WANT_FROZEN:
                        e->done = group_fully_frozen(g);
                        break;
                case OP_WANT_THAWED:
                        if (g->e_freeze) {
                                bool outer;
                                const char *a = manager_frozen_by(op->manager, g, &outer);
                                operation_doom(op, false, BUS_ERROR_FROZEN_BY_PARENT,
                                               "%s: its own flag is 0, but it is still frozen by %s%s%s",
                                               CG_NAMED(g->path), a ? CG_NAMED(a) : "an ancestor",
                                               outer ? ", above freezerd's cgroup root " : "",
                                               outer ? CG_NAMED(op->manager->cgroup_root) : "");
                                return true;
                        }
                        e->done = !g->frozen;
                        break;
                case OP_WANT_EFFECTIVE:
                        e->done = g->e_freeze ? group_fully_frozen(g) : !g->frozen;
                        break;
                }
                if (!e->done)
                        op->n_pending++;
        }
        if (op->n_pending > 0)
                return false;
        if (!operation_tasks_frozen(op)) {
                operation_recheck_arm(op);
                return false;
        }
        operation_conclude(op);
        return true;
}

/* An ancestor's flag was set (by another call, behind our back, or above
 * our root): a Thaw waiting for its group to read thawed fails now with
 * FrozenByParent, naming it, as operation_check() says.  Its group's frozen
 * may never change to tell it: a freeze of the ancestor whose write came
 * between the Thaw's drain of inotify and its read of the group (see
 * manager_settle_written()) left it reading frozen 1 already, and the Thaw
 * waited for its whole timeout.  Only a Thaw (freeze_start()) waits for
 * OP_WANT_THAWED, with one entry: a look at each operation, none at a
 * batch's entries; nothing at all while no call waits. */
static void operations_frozen_by_parent(Manager *m) {
        for (Operation *op = m->operations; op; op = op->next) {
                const OpEntry *e = &op->entries[0];

                if (op->n_entries == 1 && e->want == OP_WANT_THAWED && e->group && e->group->e_freeze)
                        (void) operation_check(op); /* dooms it: its reply is queued, op stays listed */
        }
}

/* e's group has the other flag now than e asked for: its operation fails. */
static void entry_reversed(OpEntry *e) {
        Operation *op = e->op;
        Group *g = e->group;

        /* The kernel may have confirmed e's group already, while the call
         * waits for another (a focus switch's thaw, skipped, reversed by the
         * next switch while a freeze of it waits on a stuck app): name the
         * group it waits for, not a confirmation that came. */
        if (e->done && !op->doomed)
                for (unsigned i = 0; i < op->n_entries; i++) {
                        const OpEntry *w = &op->entries[i];

                        if (w->group && !w->done) {
                                operation_reversed(op,
                                                   "%s: the request to %s was reversed (cgroup.freeze is now %d) "
                                                   "while the call still waited for %s",
                                                   CG_NAMED_IN_LIST(g->path), e->new_freeze ? "freeze" : "thaw",
                                                   g->freeze, CG_NAMED_IN_LIST(w->group->path));
                                return;
                        }
                }

        operation_reversed(op, "%s: the request to %s was reversed (cgroup.freeze is now %d) before %s",
                           CG_NAMED_IN_LIST(g->path),
                           e->new_freeze ? "freeze" : "thaw", g->freeze,
                           op->doomed ? "freezerd answered" : "the kernel confirmed it");
}

/* A group's own flag changed (by us or by someone else): any operation that
 * asked for the other value has been reversed before it completed. */
static void group_flag_changed(Manager *m, Group *g) {
        GroupData *d = group_data(g);

        /* A flag set since the start is what its writer wants now: a start
         * that could not restore it does not write it back at the next. */
        if (m->journal)
                journal_forget(m->journal, g->path, g->id);

        for (OpEntry *e = d->entries, *next; e; e = next) {
                next = e->gnext;
                if (e->new_freeze != g->freeze)
                        entry_reversed(e);
        }
}

/* Settling applied writes behind our back that came after ours, before the
 * operation's entries were linked: fail it as group_flag_changed() would
 * have.  True if it was. */
static bool operation_check_reversed(Operation *op) {
        for (unsigned i = 0; i < op->n_entries; i++) {
                OpEntry *e = &op->entries[i];
                if (e->group && e->new_freeze != e->group->freeze) {
                        entry_reversed(e);
                        return true;
                }
        }
        return false;
}

/* The model after a successful write of g's cgroup.freeze. */
static void group_wrote_freeze(Manager *m, Group *g, bool v) {
        bool e_freeze = g->e_freeze;

        tree_set_freeze(m->tree, g, v);
        /* A write that leaves the effective state as it was (an ancestor
         * freezes the group) is notified at once: "nothing to wait for". */
        if (g->populated && g->e_freeze == e_freeze)
                group_data(g)->notified_usec = now_usec();
        group_flag_changed(m, g);
}

static int group_write_freeze(Manager *m, Group *g, bool v) {
        FreezeWrite w = { .value = v };

        w.fd = group_open_freeze(m, g);
        if (w.fd < 0)
                return w.fd;
        /* Crash tests widen the window between writes; inert unless set. */
        freeze_write_direct(&w, 1, m->test_write_delay_usec);
        if (w.r < 0)
                return w.r;
        group_wrote_freeze(m, g, v);
        return 0;
}

/* From how many groups whose effective state a call's writes change the
 * writes go out from a real-time thread (see freeze-writer.h).  The thread
 * costs about 50 µs; the kernel's notification work it keeps out of the way
 * about 0.6 µs per group, and more for the wake-ups it delays. */
#define REALTIME_WRITE_MIN_GROUPS 1024u

/* How many groups the write of v to g's flag would freeze or thaw, by the
 * model before the call's writes.  A group below another one the call
 * writes counts for nothing: in a batch over nested groups (A..G, freezes
 * top-down, thaws bottom-up) the top's write is the one that changes the
 * subtree, and the others find it done (an approximation for a mixed batch). */
static unsigned write_reach(const Manager *m, const Group *g, bool v) {
        bool above = g->parent && g->parent->e_freeze;

        if (g->freeze == v || above)
                return 0;
        for (const Group *a = g->parent; a; a = a->parent)
                if (group_data(a) && group_data(a)->write_gen == m->write_gen)
                        return 0;
        return g->n_descendants + 1;
}

typedef struct WriteProgress {
        FreezeWrite *w;
        Group *const *gs;
        int *ret;
        size_t copied;
        freeze_progress_t progress;
        void *userdata;
} WriteProgress;

/* The writer's progress, with ret[] filled in for the caller's callback. */
static bool write_progress(size_t done, void *userdata) {
        WriteProgress *p = userdata;

        for (; p->copied < done; p->copied++)
                if (!p->gs[p->copied] || p->w[p->copied].fd >= 0) /* else its open failed: ret says how */
                        p->ret[p->copied] = p->w[p->copied].r;
        return p->progress(done, p->userdata);
}

/* Whether no group of gs[0..n) is below another one of them (their write_gen
 * set).  Their ancestors are marked on the way (above_gen, see
 * manager_group_waits_for_writes()). */
static bool writes_disjoint(const Manager *m, Group *const *gs, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (gs[i])
                        for (const Group *a = gs[i]->parent; a && group_data(a); a = a->parent) {
                                GroupData *d = group_data(a);
                                if (d->write_gen == m->write_gen)
                                        return false;
                                if (d->above_gen == m->write_gen)
                                        break; /* and so are its ancestors */
                                d->above_gen = m->write_gen;
                        }
        return true;
}

bool manager_group_waits_for_writes(const Manager *m, const Group *g) {
        return m->writes_followed && group_data(g)->above_gen == m->write_gen;
}

/* Whether a group of the model may be gone without freezerd knowing: an
 * inotify event that may tell of it (INOTIFY_REMOVAL_MASK) queued or stashed,
 * not handled yet, or events lost.  Every group of the model is in a watched
 * directory (its parent's, tracked or kept for its flag), whose watch queues
 * the IN_DELETE within the rmdir itself: with none of them queued, every
 * removal up to now is in the model.  Instead of a read of each group's file
 * (1.6 µs here, as much as a write that changes nothing): the count of them in
 * the stash (which holds the events of our own last writes and the changes of
 * cgroup.events until the loop handles them: whether it is empty said nothing
 * right after a batch), and one look at the queue (FIONREAD).  Where something
 * is queued (others' writes, an rmdir), it is read into the stash, behind what
 * waits there, in order, and counted as the stash takes it; nothing is applied
 * or handled here (manager_handle_stashed_events() applies the writes among
 * them first, as manager_drain_inotify() would have). */
static bool removals_may_be_unread(Manager *m) {
        int n = 0;

        if (m->inotify_fd < 0 || !inotify_complete(m) || m->inotify_removals > 0)
                return true;
        if (ioctl(m->inotify_fd, FIONREAD, &n) < 0)
                return true;
        if (n == 0)
                return false;
        stash_compact(m);
        manager_read_inotify(m);
        return !inotify_complete(m) || m->inotify_removals > 0;
}

/* Where removals_may_be_unread() said yes: the groups the removal events not
 * handled yet may tell of (Manager.removal_groups), so that a call looks at
 * those alone (group_check_exists(): an open and a statx each, 5 us here), not
 * at each of its thousands of groups.  An IN_DELETE (or IN_MOVED_FROM) names a
 * child of the watched directory, an IN_IGNORED (or IN_DELETE_SELF) the group
 * of the watch; every group of the model is in a watched directory, whose
 * watch queues the IN_DELETE within the rmdir.  What may lose or hide one
 * (IN_Q_OVERFLOW, IN_UNMOUNT, a watch above the root, events lost, no memory)
 * makes every group one.  The queue is read into the stash first: all that is
 * queued is looked at.
 *
 * The walk costs each call about 0.15 us per unhandled removal event (an
 * asprintf() and a lookup): in a storm of thousands of removals, handled in
 * slices with calls between them, a call of a few groups would pay more for it
 * than for looking at its groups themselves.  So a call that may look at
 * n_checks groups walks only up to REMOVALS_WALK_PER_GROUP events per group,
 * and beyond looks at each of its groups, as if every group were one. */
#define REMOVALS_WALK_PER_GROUP 16
static void removals_collect(Manager *m, size_t n_checks) {
        int n = 0;

        m->removal_groups = u64set_free(m->removal_groups);
        m->removal_all = m->inotify_fd < 0 || ioctl(m->inotify_fd, FIONREAD, &n) < 0;
        if (n > 0) {
                stash_compact(m);
                manager_read_inotify(m);
        }
        m->removal_all = m->removal_all || !inotify_complete(m) ||
                         m->inotify_removals / REMOVALS_WALK_PER_GROUP >= n_checks;
        for (size_t o = m->inotify_stash_pos; !m->removal_all && o < m->inotify_stash_len;) {
                const struct inotify_event *ev = (const struct inotify_event *) (m->inotify_stash + o);
                const WdEntry *w;
                Group *g = NULL;

                o += sizeof *ev + ev->len;
                if (!(ev->mask & INOTIFY_REMOVAL_MASK))
                        continue;
                if (ev->mask & (IN_Q_OVERFLOW | IN_UNMOUNT)) {
                        m->removal_all = true;
                        break;
                }
                w = wdmap_get(m->wds, ev->wd);
                if (!w || w->kind == WD_KIND_ROOT_PARENT)
                        continue; /* a group dropped already; the root's removal ends freezerd */
                if (w->kind == WD_KIND_OUTER) {
                        m->removal_all = true;
                        break;
                }
                if (!(ev->mask & (IN_DELETE | IN_MOVED_FROM)))
                        g = w->ptr; /* IN_IGNORED, IN_DELETE_SELF: the watch's own group */
                else if (w->kind == WD_KIND_DIR && ev->len > 0) {
                        const Group *p = w->ptr;
                        _cleanup_free_ char *cp = NULL;

                        if (asprintf(&cp, "%s/%s", streq(p->path, "/") ? "" : p->path, ev->name) < 0) {
                                m->removal_all = true;
                                break;
                        }
                        g = tree_get(m->tree, cp);
                }
                if (g && u64set_add(&m->removal_groups, (uint64_t) (uintptr_t) g) < 0)
                        m->removal_all = true;
        }
}

/* Whether g may be gone (or made again) without freezerd knowing:
 * removals_may_be_unread(), asked once per call (*unread, -1 until), and if
 * so whether an event not handled yet may tell of g (removals_collect(); the
 * call looks at n_checks groups at most). */
static bool group_removal_unread(Manager *m, int *unread, Group *g, size_t n_checks) {
        if (*unread < 0 && (*unread = removals_may_be_unread(m)))
                removals_collect(m, n_checks);
        return *unread > 0 && (m->removal_all || u64set_contains(m->removal_groups, (uint64_t) (uintptr_t) g));
}

/* Writes v[i] to the flag of gs[i] for every i where gs[i] is not NULL, in
 * order, and stops at the first failure: ret[i] is 0, -errno, or -ECANCELED
 * after a failure.  A group where may_vanish[i] (may_vanish may be NULL) that
 * was removed (-ENOENT, -ENODEV: freezerd has not read its IN_DELETE yet) is
 * no failure: its ret says so, and the writes go on.  Any other group that
 * was removed fails before anything is written, where the writes are more
 * than one: its cgroup.freeze is opened, or the one kept open read, before
 * the first write (ret[i] its -errno, every other -ECANCELED).  The model is
 * not touched (group_wrote_freeze() is the caller's, in the same order).
 * Writes that change 1,024 groups or more go
 * out from a real-time thread (see freeze-writer.h) unless the configuration
 * says "realtime_writes": false or the kernel refused it once.  (A rollback
 * writes from the main loop, group_write_freeze(): it is rare, and what it
 * restores is not waited for.)  progress (may be NULL) is called while the
 * thread writes groups that are disjoint subtrees, with ret[0..done) set (see
 * batch_written()); not otherwise.  unread is removals_may_be_unread() if the
 * caller asked it (-1 if not; group_removal_unread(), which collected the
 * groups in question then): see batch_start(). */
static int manager_write_freezes(Manager *m, Group *const *gs, const bool *v, size_t n, int *ret,
                                 const bool *may_vanish, int unread, freeze_progress_t progress,
                                 void *userdata) {
        _cleanup_free_ FreezeWrite *w = calloc(n ?: 1, sizeof *w);
        uint64_t reach = 0;
        bool first = true;
        /* A call whose lookups tracked paths is accepted below, once every
         * file is open: its first file kept open is looked at too, or a
         * write to a group removed a moment ago would fail with nothing
         * written, after the accept kept what the call tracked. */
        bool undoable = m->call.open && !m->call.accepted && m->call.n_roots > 0;

        if (!w)
                return -ENOMEM;
        m->write_gen++;
        for (size_t i = 0; i < n; i++)
                if (gs[i])
                        group_data(gs[i])->write_gen = m->write_gen;
        for (size_t i = 0; i < n; i++) {
                bool kept;
                int fd;

                w[i] = (FreezeWrite) { .fd = -1, .value = v[i], .may_vanish = may_vanish && may_vanish[i] };
                if (!gs[i])
                        continue;
                kept = group_data(gs[i])->freeze_fd >= 0;
                /* Where a removal may be unread: is the group still the
                 * model's (group_check_exists())?  One opened at an earlier
                 * write: only a read tells that its group is gone (kernfs,
                 * -ENODEV), before the writes ahead of it are made.  One
                 * opened by its path now: the path may reach another group
                 * made again under its name.  The first write of a file kept
                 * open needs no look: nothing would be written before it,
                 * and its failure is looked at after (below); nor one that
                 * may vanish among them, but a group made again under its
                 * name would be left out, not written. */
                if ((!kept || !first || w[i].may_vanish || undoable) && group_removal_unread(m, &unread, gs[i], n)) {
                        fd = group_check_exists(m, gs[i]);
                        if (fd == -ESTALE) {
                                /* Nothing is written: the call starts over. */
                                for (size_t j = 0; j < n; j++)
                                        ret[j] = -ECANCELED;
                                ret[i] = fd;
                                return 0;
                        }
                        if (fd >= 0)
                                fd = group_open_freeze(m, gs[i]);
                } else
                        fd = group_open_freeze(m, gs[i]);
                if (fd < 0 && w[i].may_vanish && (fd == -ENOENT || fd == -ENODEV)) {
                        ret[i] = fd; /* left out: the writer skips an fd < 0 */
                        continue;
                }
                if (fd < 0) {
                        /* Nothing is written: the groups before it neither. */
                        for (size_t j = 0; j < n; j++)
                                ret[j] = -ECANCELED;
                        ret[i] = fd;
                        return 0;
                }
                w[i].fd = fd;
                first = false;
                reach += write_reach(m, gs[i], v[i]);
        }
        /* Every file open, none gone: the call writes, and what its lookups
         * tracked stays (manager_call_begin()).  Not before: a call that
         * fails above wrote nothing.  The call open is the one that writes:
         * only a call's handler writes here (freeze_start(), batch_start()),
         * never the loop while another call is open. */
        call_accept(m);

        bool threaded = false;
        if (reach >= REALTIME_WRITE_MIN_GROUPS && m->config.realtime_writes && !m->realtime_refused) {
                WriteProgress wp = { .w = w, .gs = gs, .ret = ret, .progress = progress, .userdata = userdata };
                bool follow = progress && writes_disjoint(m, gs, n);

                if (follow)
                        for (size_t i = 0; i < n; i++)
                                if (gs[i])
                                        group_data(gs[i])->write_pending = true;
                m->writes_followed = follow;
                int r = freeze_write_realtime(w, n, m->test_write_delay_usec, follow ? write_progress : NULL, &wp,
                                              NULL);
                m->writes_followed = false;
                if (follow)
                        for (size_t i = 0; i < n; i++)
                                if (gs[i])
                                        group_data(gs[i])->write_pending = false;
                threaded = r >= 0;
                if (r == -EPERM) {
                        m->realtime_refused = true;
                        log_notice("Real-time scheduling is refused (it needs CAP_SYS_NICE or "
                                   "LimitRTPRIO=1, no RestrictRealtime=, and, with real-time group "
                                   "scheduling, a cgroup allowed real-time time): big cgroup.freeze "
                                   "writes go out from the main loop, where the kernel's notification "
                                   "work can get in between them.");
                } else if (r < 0 && !m->realtime_failed) {
                        /* Once: a cause that lasts (a CPU set the CPU left) would repeat it per call. */
                        m->realtime_failed = true;
                        log_warning_errno(r, "Cannot start the real-time writer thread, writing from the "
                                             "main loop (not logged again): %m");
                }
        }
        if (!threaded)
                freeze_write_direct(w, n, m->test_write_delay_usec);
        size_t done = 0;
        for (size_t i = 0; i < n; i++) {
                if (!gs[i] || w[i].fd >= 0)
                        ret[i] = w[i].r;
                done += w[i].fd >= 0 && w[i].r >= 0;
        }
        /* The first write failed on the file kept open (not looked at
         * before, above): its group is gone, and nothing was written (the
         * writes stop at it).  Made again under its name, the call starts
         * over on the new group, rather than fail for a group that exists. */
        for (size_t i = 0; i < n; i++)
                if (w[i].fd >= 0) {
                        if (!w[i].may_vanish && w[i].r == -ENODEV && group_check_exists(m, gs[i]) == -ESTALE)
                                ret[i] = -ESTALE;
                        break;
                }
        if (threaded)
                log_debug("Wrote %zu of %zu cgroup.freeze from a real-time thread (%" PRIu64 " groups change)", done,
                          n, reach);
        return 0;
}

/* A group the kernel has not frozen although every group below it is: its
 * own tasks are what a freeze of it, or above it, waits for. */
static bool group_holds_back_freeze(const Group *g) {
        return !g->frozen && g->n_frozen_descendants == g->n_descendants;
}

/* For a timeout's message: the groups below g that keep its freeze from
 * completing.  The kernel reports g frozen once its own tasks are, while a
 * child is still freezing (a task asleep on FUSE): "waiting for /pod (frozen)"
 * would not tell an operator what to look at.  Those named are the deepest
 * not frozen: every group below them is. */
static void group_list_blocking(FILE *f, Group *g) {
        unsigned n = 0;

        if (g->e_freeze && group_fully_frozen(g)) {
                /* Not done for operation_tasks_frozen(): the tasks are named below. */
                fputs("; the kernel reports it frozen, but a group in it that has children has tasks of its own that "
                      "are not",
                      f);
                return;
        }
        if (!g->e_freeze || g->n_frozen_descendants == g->n_descendants)
                return;
        for (Group *c = tree_next_preorder(g, g); c; c = tree_next_preorder(g, c)) {
                if (!group_holds_back_freeze(c))
                        continue;
                if (n < 4)
                        fprintf(f, "%s%s %s", n ? ", " : "; not frozen below it: ", CG_NAMED_IN_LIST(c->path),
                                freezer_state_to_string(c->state));
                n++;
        }
        if (n > 4)
                fprintf(f, " and %u more", n - 4);
}

/* For a timeout's message: the tasks that keep the freeze from completing.
 * The groups at fault are the deepest ones not frozen (every group below them
 * is): their own tasks are what the kernel waits for, and naming the ones not
 * in the freezer's trap, with what they sleep in, turns "stuck freezing" into
 * a process to look at (a task asleep uninterruptibly on a FUSE server that
 * never answers, say).  At most STUCK_TASKS_LISTED are named, and
 * TASKS_READ_MAX read, whatever the size of the groups. */
#define STUCK_GROUPS_MAX 16
#define STUCK_TASKS_LISTED 4

typedef struct StuckTasks {
        FILE *f;
        const Group *groups[STUCK_GROUPS_MAX]; /* visited, so that nested entries name a task once */
        unsigned n_groups, listed, more;
        unsigned budget; /* tasks still to read (TASKS_READ_MAX) */
} StuckTasks;

static void group_list_stuck_tasks(Manager *m, const Group *g, StuckTasks *st) {
        _cleanup_free_ char *text = NULL;
        /* A group the kernel reports frozen early: its tasks that the check
         * took at the kernel's word (group_own_tasks_frozen()) are not named. */
        bool early = group_report_may_be_early(g);
        TaskState t;
        size_t len;

        for (unsigned i = 0; i < st->n_groups; i++)
                if (st->groups[i] == g)
                        return;
        if (st->n_groups == STUCK_GROUPS_MAX)
                return;
        st->groups[st->n_groups++] = g;

        if (group_read_threads(m, g, &text, &len) < 0)
                return;
        for (const char *cursor = text; next_task_not_frozen(&cursor, &st->budget, &t) > 0;) {
                char desc[128];

                if (early && task_taken_frozen(text, &t, &st->budget))
                        continue;
                if (st->listed == STUCK_TASKS_LISTED) {
                        st->more++;
                        continue;
                }
                fprintf(st->f, "%s%d (%s) of %s, %s", st->listed ? "; " : ". Not frozen: task ", (int) t.tid, t.comm,
                        CG_NAMED_IN_LIST(g->path), task_state_describe(&t, desc, sizeof desc));
                st->listed++;
        }
}

static void operation_list_stuck_tasks(Operation *op, FILE *f) {
        StuckTasks st = { .f = f, .budget = TASKS_READ_MAX };

        for (unsigned i = 0; i < op->n_entries; i++) {
                Group *g = op->entries[i].group;

                if (!g || op->entries[i].done || !g->e_freeze)
                        continue;
                for (Group *x = g; x; x = tree_next_preorder(g, x))
                        if (x->e_freeze && (group_holds_back_freeze(x) || group_report_may_be_early(x)) &&
                            x->parent) /* the mount's root holds no tasks of a freeze */
                                group_list_stuck_tasks(op->manager, x, &st);
        }
        if (st.more > 0)
                fprintf(f, "; and %u more", st.more);
        else if (st.budget == 0)
                fputs("; and maybe more (not all read)", f);
}

#define TIMEOUT_GROUPS_NAMED 4

static void operation_timeout(evutil_socket_t fd, short what, void *userdata) {
        Operation *op = userdata;
        Manager *m = op->manager;
        _cleanup_free_ char *pending = NULL;
        size_t len = 0;
        FILE *f;
        char tbuf[32];

        f = open_memstream(&pending, &len);
        if (!f) {
                operation_doom(op, true, BUS_ERROR_TIMEOUT, "Timed out");
                manager_dispatch(m);
                return;
        }
        /* Each path quoted (CG_NAMED_IN_LIST(): under 550 bytes, as the groups
         * freezerd follows have UTF-8 names without control characters, a
         * backslash doubled), at most TIMEOUT_GROUPS_NAMED groups named, each
         * with up to 4 below it, and up to STUCK_TASKS_LISTED tasks: a batch
         * of 65,536 groups of 4 kB paths still gets a message under 14 kB. */
        unsigned n_listed = 0;
        for (unsigned i = 0; i < op->n_entries; i++) {
                OpEntry *e = &op->entries[i];
                if (!e->group || e->done)
                        continue;
                if (n_listed < TIMEOUT_GROUPS_NAMED) {
                        fprintf(f, "%s%s (%s", n_listed ? ", " : "", CG_NAMED_IN_LIST(e->group->path),
                                freezer_state_to_string(e->group->state));
                        group_list_blocking(f, e->group);
                        fputc(')', f);
                }
                n_listed++;
        }
        if (n_listed > TIMEOUT_GROUPS_NAMED)
                fprintf(f, " and %u more", n_listed - TIMEOUT_GROUPS_NAMED);
        operation_list_stuck_tasks(op, f);
        fclose(f);

        format_usec(tbuf, sizeof tbuf, op->timeout_usec);
        /* In the log too: the caller may drop the error, and "stuck freezing"
         * is what an operator looks for afterwards. */
        log_notice("A call timed out after %s waiting for %s", tbuf, pending ?: "?");
        operation_doom(op, true, BUS_ERROR_TIMEOUT, "Timed out after %s waiting for %s", tbuf, pending ?: "?");
        manager_dispatch(m);
}

static int operation_new(Manager *m, unsigned n_entries, uint64_t timeout_usec, uint64_t flags,
                         operation_done_t done, void *userdata, Operation **ret) {
        Operation *op;

        op = calloc(1, sizeof *op);
        if (!op)
                return -ENOMEM;
        op->entries = calloc(n_entries ?: 1, sizeof *op->entries);
        if (!op->entries) {
                free(op);
                return -ENOMEM;
        }
        op->manager = m;
        op->n_entries = n_entries;
        op->flags = flags;
        op->timeout_usec = timeout_usec ?: m->config.default_timeout_usec;
        op->journal_slot = -1;
        op->started_usec = now_usec();
        op->done = done;
        op->userdata = userdata;
        for (unsigned i = 0; i < n_entries; i++)
                op->entries[i].op = op;

        op->next = m->operations;
        if (m->operations)
                m->operations->prev = op;
        m->operations = op;
        m->n_operations++;
        if (m->n_operations > m->n_operations_peak)
                m->n_operations_peak = m->n_operations;
        *ret = op;
        return 0;
}

/* ---- notifications the kernel holds back ---------------------------------------------------------------- */

/* See operation_watch_holdback(). */
#define HOLDBACK_WINDOW_USEC (20 * USEC_PER_MSEC)
#define HOLDBACK_FIRST_USEC ((uint64_t) 250)
#define HOLDBACK_STEPS 11

typedef struct HoldbackEntry HoldbackEntry;

/* 0.25, 0.5, 1 ms, then every 2 ms to 16 ms: a task that freezes is seen
 * within 2 ms, in 11 reads at most. */
static uint64_t holdback_due(const HoldbackEntry *h) {
        unsigned k = h->step;
        return h->since + (k < 3 ? HOLDBACK_FIRST_USEC << k : 2 * USEC_PER_MSEC * (k - 2));
}

/* The last entry takes the place of the one removed. */
static void holdback_remove(Manager *m, GroupData *d) {
        if (d->holdback_slot == 0)
                return;
        HoldbackEntry *h = &m->holdback[d->holdback_slot - 1];
        *h = m->holdback[--m->n_holdback];
        group_data(h->group)->holdback_slot = d->holdback_slot;
        d->holdback_slot = 0;
}

static void holdback_rearm(Manager *m, uint64_t now) {
        uint64_t next = UINT64_MAX;

        for (unsigned i = 0; i < m->n_holdback; i++)
                if (holdback_due(&m->holdback[i]) < next)
                        next = holdback_due(&m->holdback[i]);
        if (next == UINT64_MAX) {
                (void) evtimer_del(m->holdback_timer);
                return;
        }
        uint64_t wait = next > now ? next - now : 0;
        struct timeval tv = { .tv_sec = (time_t) (wait / USEC_PER_SEC), .tv_usec = (suseconds_t) (wait % USEC_PER_SEC) };
        /* Should it fail, the kernel's own notifications still end the wait. */
        if (evtimer_add(m->holdback_timer, &tv) < 0)
                log_debug("Cannot arm the re-read of held-back notifications");
}

static void on_holdback(evutil_socket_t fd, short what, void *userdata) {
        Manager *m = userdata;
        uint64_t now = now_usec();

        /* Reading a group changes no entry: only a group's removal (never
         * during a read) or this loop does, and a removal moves the last entry
         * to i, which is then looked at next. */
        for (unsigned i = 0; i < m->n_holdback;) {
                HoldbackEntry *h = &m->holdback[i];
                Group *g = h->group;
                GroupData *d = group_data(g);

                /* Past the interval the kernel's own notification has come, or
                 * comes without holding back. */
                if (!g->e_freeze || g->frozen || d->notified_usec + HOLDBACK_WINDOW_USEC < now) {
                        holdback_remove(m, d);
                        continue;
                }
                if (now >= holdback_due(h)) {
                        (void) group_read_events(m, g);
                        if (g->frozen || ++h->step >= HOLDBACK_STEPS) {
                                holdback_remove(m, d);
                                continue;
                        }
                }
                i++;
        }
        manager_dispatch(m);
        holdback_rearm(m, now_usec());
}

static void holdback_add(Manager *m, Group *g, uint64_t now) {
        GroupData *d = group_data(g);

        if (d->holdback_slot || m->n_holdback >= HOLDBACK_MAX)
                return;
        m->holdback[m->n_holdback++] = (HoldbackEntry) { .group = g, .since = now };
        d->holdback_slot = m->n_holdback;
}

/* The kernel notified g's cgroup.events just now (read after the
 * notification), whether or not anything freezerd keeps changed: a new
 * interval of the kernel's rate limit starts (see operation_watch_holdback()).
 * A notification that changes nothing is one freezerd cannot tell apart from
 * its own no-change write's when the kernel sent that from its timer, at the
 * end of an earlier interval, rather than at once: the interval that counts is
 * the one starting now.  So a populated group a waiting call still needs
 * frozen is re-read from now on, as from its arming. */
static void group_notified(Manager *m, Group *g) {
        GroupData *d = group_data(g);
        uint64_t now;

        if (!g->populated)
                return; /* nothing of it that we wait for is ever held back */
        now = now_usec();
        d->notified_usec = now;
        if (!g->e_freeze || g->frozen)
                return;
        if (d->holdback_slot) { /* re-read for a call or after a write behind our back */
                m->holdback[d->holdback_slot - 1] = (HoldbackEntry) { .group = g, .since = now };
                holdback_rearm(m, now);
                return;
        }
        for (Group *a = m->operations ? g : NULL; a; a = a->parent)
                if (group_data(a) && group_data(a)->entries) { /* a call waits on a subtree holding g */
                        holdback_add(m, g, now);
                        if (d->holdback_slot)
                                holdback_rearm(m, now);
                        return;
                }
}

/* A waiting call: the groups it waits on whose change the kernel may hold back.
 *
 * The kernel notifies a cgroup.events no sooner than CGROUP_FILE_NOTIFY_MIN_INTV
 * (10 ms rounded up to jiffies) after its previous notification: a change
 * within that interval is sent from a timer at its end, 10 to 20 ms later
 * depending on HZ (11–16 ms measured here, HZ=250).  Two common calls hit it:
 * a batch that freezes a group and a group below it with tasks of its own (a
 * RECURSIVE freeze of a pod: the write of a container, which its pod freezes
 * already, changes nothing and is notified at once, and its tasks freeze
 * 0.2–1.5 ms later), and a freeze right after a thaw (the thaw was notified).
 * The call would wait the rest of the interval for a change that happened
 * long before.  So it re-reads such groups, and only those: populated, not yet
 * frozen, and notified within the interval as far as freezerd saw
 * (group_apply_events() and group_write_freeze() note it).  It reads them from
 * 0.25 ms after it was armed to 16 ms (holdback_due()), until they read frozen
 * or the interval since that notification is over (HOLDBACK_WINDOW_USEC: 10 ms
 * and two jiffies at HZ=100); past that, the kernel's own notification ends
 * the wait.  At most HOLDBACK_MAX groups: beyond them, a call waits for the
 * kernel as before.  A freeze written behind our back is re-read the same way
 * (holdback_watch_external()).  Nothing is read otherwise: idle, freezerd still
 * never wakes. */
static void holdback_watch_subtree(Manager *m, Group *top, uint64_t now) {
        if (!top->e_freeze)
                return; /* a thaw is synchronous in the kernel: read at the write */
        for (Group *x = top; x;) {
                GroupData *xd = group_data(x);
                if (!x->populated) { /* nothing below it to wait for */
                        x = tree_next_preorder_skip(top, x);
                        continue;
                }
                if (x->e_freeze && !x->frozen && xd->notified_usec > 0 && xd->notified_usec + HOLDBACK_WINDOW_USEC > now)
                        holdback_add(m, x, now);
                x = tree_next_preorder(top, x);
        }
}

static void operation_watch_holdback(Operation *op) {
        Manager *m = op->manager;
        uint64_t now = now_usec();
        unsigned before = m->n_holdback;

        for (unsigned i = 0; i < op->n_entries; i++) {
                OpEntry *e = &op->entries[i];

                if (e->group && !e->done)
                        holdback_watch_subtree(m, e->group, now);
        }
        if (m->n_holdback > before)
                holdback_rearm(m, now);
}

/* A freeze written behind our back (systemctl freeze, runc pause, echo 1 >
 * cgroup.freeze) right after the group's last notification, such as a freeze
 * soon after a thaw: the kernel sends its "frozen 1" only at the end of the
 * interval, 10-20 ms later, although the tasks froze within a millisecond.
 * Its groups are re-read as for a waiting call, so that Frozen (and the
 * signals saying so) follow the kernel's state, not its rate limit.  At most
 * 11 reads a group, within 20 ms of an event: idle, nothing is read. */
static void holdback_watch_external(Manager *m, Group *g) {
        uint64_t now = now_usec();
        unsigned before = m->n_holdback;

        holdback_watch_subtree(m, g, now);
        if (m->n_holdback > before)
                holdback_rearm(m, now);
}

static int operation_arm(Operation *op) {
        struct timeval tv = {
                .tv_sec = (time_t) (op->timeout_usec / USEC_PER_SEC),
                .tv_usec = (suseconds_t) (op->timeout_usec % USEC_PER_SEC),
        };

        op->timer = evtimer_new(op->manager->event_base, operation_timeout, op);
        if (!op->timer)
                return -ENOMEM;
        /* libevent fails a timer's add when its heap cannot grow (errno
         * ENOMEM from realloc()), else for its own reasons (-EIO here). */
        errno = 0;
        if (evtimer_add(op->timer, &tv) < 0)
                return errno == ENOMEM ? -ENOMEM : -EIO;
        operation_watch_holdback(op);
        return 0;
}

static int errno_to_bus_error(int r, const Group *g, const char *what, sd_bus_error *error) {
        if (r == -ENOENT || r == -ENODEV)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP, "%s no longer exists", CG_NAMED(g->path));
        return bus_error_set_failed(error, r, "Cannot %s %s: %s", what, CG_NAMED(g->path), strerror(-r));
}

/* Freezing the group freezerd runs in (or an ancestor) would stop freezerd
 * before it could confirm anything: a deadlock nobody can answer. */
static int refuse_self_freeze(Manager *m, const Group *g, sd_bus_error *error) {
        size_t l;

        if (!m->self_path)
                return 0;
        l = strlen(g->path);
        if (streq(g->path, m->self_path) || (strncmp(m->self_path, g->path, l) == 0 && m->self_path[l] == '/'))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Refusing to freeze %s: it contains freezerd itself (%s), which could then "
                                         "never confirm or undo the freeze",
                                         CG_NAMED(g->path), CG_NAMED(m->self_path));
        return 0;
}

/* Record what an operation is about to write, before the first write. */
static int operation_journal(Operation *op, const Group *const *groups, const bool *new_freeze, size_t n,
                             sd_bus_error *error) {
        Manager *m = op->manager;
        _cleanup_free_ JournalEntry *entries = NULL;
        unsigned slot = 0;
        size_t k = 0;
        int r;

        if (!m->journal)
                return 0;
        entries = calloc(n ?: 1, sizeof *entries);
        if (!entries)
                return sd_bus_error_set_errno(error, -ENOMEM);
        for (size_t i = 0; i < n; i++)
                if (groups[i] && groups[i]->freeze != new_freeze[i]) /* NULL: not written */
                        entries[k++] = (JournalEntry) {
                                .path = groups[i]->path,
                                .prev_freeze = groups[i]->freeze,
                                .new_freeze = new_freeze[i],
                                .cgroup_id = groups[i]->id,
                        };
        if (k == 0)
                return 0;
        r = journal_begin(m->journal, ++m->journal_seq, journal_boot_id(), entries, k, &slot);
        if (r >= 0)
                op->journal_slot = (int) slot;
        if (r == -EFBIG)
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "The batch journal of these %zu groups would be larger than the %u MiB a "
                                         "start reads back; nothing was written",
                                         k, JOURNAL_SIZE_MAX / (1024 * 1024));
        if (r < 0)
                return bus_error_set_failed(error, r, "Cannot record the batch journal in %s: %s; nothing was written",
                                            m->runtime_dir, strerror(-r));
        return 0;
}

static int freeze_start(Manager *m, Group *g, bool freeze, uint64_t timeout_usec, uint64_t flags,
                        operation_done_t done, void *userdata, sd_bus_error *error) {
        Operation *op;
        OpEntry *e;
        bool prev;
        int r;

        /* Refused with their message by the bus's check_flags(), which knows
         * the method: RECURSIVE is a batch by then (start_freeze()). */
        assert(!(flags & ~(FREEZER_FLAG_ROLLBACK_ON_TIMEOUT | FREEZER_FLAG_NO_WAIT)));
        if (g == tree_root(m->tree)) {
                bool outer;
                const char *a = manager_frozen_by(m, g, &outer);

                /* Nothing freezerd could write thaws it: say what would. */
                if (!freeze && a && outer)
                        return sd_bus_error_setf(error, BUS_ERROR_FROZEN_BY_PARENT,
                                                 "%s is frozen by %s, above freezerd's cgroup root %s; nothing was "
                                                 "written",
                                                 CG_NAMED(g->path), CG_NAMED(a), CG_NAMED(m->cgroup_root));
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH,
                                         "%s is freezerd's cgroup root (%s) and cannot be %s", CG_NAMED(g->path),
                                         CG_NAMED(m->cgroup_root),
                                         freeze ? "frozen" : "thawed");
        }

        if (freeze) {
                manager_find_self(m);
                r = refuse_self_freeze(m, g, error);
                if (r < 0)
                        return r;
        }

        r = operation_new(m, 1, timeout_usec, flags, done, userdata, &op);
        if (r < 0)
                return bus_error_set_failed(error, r, "%s", strerror(-r));

        if (flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT) {
                const Group *gs[] = { g };
                r = operation_journal(op, gs, &freeze, 1, error);
                if (r < 0) {
                        operation_free(op);
                        return r;
                }
        }

        prev = g->freeze;
        e = &op->entries[0];
        e->want = freeze ? OP_WANT_FROZEN : OP_WANT_THAWED;
        e->new_freeze = freeze;
        e->prev_freeze = prev;

        /* The write cancels operations that asked for the opposite. */
        int result;
        r = manager_write_freezes(m, &g, &freeze, 1, &result, NULL, -1, NULL, NULL);
        if (r >= 0 && (r = result) >= 0)
                group_wrote_freeze(m, g, freeze);
        if (r < 0) {
                operation_free(op);
                if (r == -ESTALE)
                        return r; /* made again under its name, nothing written: the call starts over */
                return errno_to_bus_error(r, g, freeze ? "freeze" : "thaw", error);
        }
        e->wrote = prev != freeze;
        op->writes = 1;
        op->skipped = !e->wrote;
        if (group_adopt(g, e))
                operations_rejournal(op, &g, 1);

        /* cgroup.events is polled or covered already; the kernel may have
         * finished at once (an empty group, or one already frozen), so look now,
         * before linking ourselves, then decide. */
        if (e->wrote)
                manager_settle_written(m, &g, 1);
        else
                (void) group_read_events(m, g);
        entry_link(e, g);
        if (operation_check_reversed(op))
                return 0;

        if (flags & FREEZER_FLAG_NO_WAIT) {
                /* FrozenByParent is reported even without waiting. */
                if (!freeze && g->e_freeze)
                        (void) operation_check(op);
                else
                        operation_conclude(op);
                return 0;
        }
        if (operation_check(op))
                return 0;

        r = operation_arm(op);
        if (r < 0)
                operation_doom(op, true, r == -ENOMEM ? SD_BUS_ERROR_NO_MEMORY : SD_BUS_ERROR_FAILED,
                               "Cannot arm the timeout for %s: %s", CG_NAMED(g->path), strerror(-r));
        return 0;
}

/* manager_group_check_exists(), where removals_may_be_unread() said yes.
 * -ESTALE (and Manager.call_remade set) where another directory has g's path
 * now: g was removed and made again under its name, and freezerd has not read
 * the removal yet.  The new directory is another cgroup, whose inode number
 * (its cgroup id) is not g->id: a call must not go on with g (a write to the
 * file kept open fails, -ENODEV; one by path reaches the new cgroup while the
 * call waits on g, whose removal then fails it), but start over once the
 * events are read (manager_handle_pending_events()), on the new group. */
static int group_check_exists(Manager *m, Group *g) {
        _cleanup_close_ int fd = -1;
        bool kept_gone = false;
        uint64_t id;
        bool v;

        if (!g->parent)
                return 0; /* the root's removal ends freezerd */
        if (group_data(g) && group_data(g)->freeze_fd >= 0) {
                /* The file kept open reaches the very cgroup of the model,
                 * whose removal only a read tells (kernfs, -ENODEV). */
                if (cg_read_freeze_fd(group_data(g)->freeze_fd, &v) != -ENODEV)
                        return 0;
                kept_gone = true;
        }
        fd = cg_openat_beneath(m->root_fd, cg_path_relative(g->path), O_PATH | O_DIRECTORY, 0);
        if (fd == -ENOENT || fd == -ENODEV)
                return fd;
        if (fd < 0)
                return kept_gone ? -ENODEV : 0; /* (as before: the write that follows tells) */
        if (!kept_gone && (g->id == 0 || cg_dir_id(fd, NULL, &id) < 0 || id == g->id))
                return 0;
        log_debug("%s: removed and made again, its removal not read yet: the call starts over", g->path);
        m->call_remade = true;
        return -ESTALE;
}

int manager_group_check_exists(Manager *m, Group *g) {
        return removals_may_be_unread(m) ? group_check_exists(m, g) : 0;
}

/* A storm: a batch whose writes change so many groups that they go out from
 * the real-time writer (freeze-writer.h), and whose written groups are
 * disjoint subtrees (the 100 top groups of 10,000).  Each write's subtree is
 * put in the model, settled, and its signals sent as soon as the writer is
 * done with it, while the next writes go on on the writer's CPU: the 1 MB of
 * GroupsChanged of 10,000 groups is then built, routed by dbus-daemon and read
 * by clients beside the writes, instead of after the last one, behind the
 * kernel's notification work that then holds that CPU (see the README,
 * "Scale").  Each group below a written one changes once in the batch (the
 * subtrees are disjoint), so it is reported once; their ancestors, whose
 * counts change with every subtree, are reported once at the end of the loop
 * turn (manager_group_waits_for_writes()).  The signals go out a few
 * messages at a time, between looks at the writer: the writes of the last
 * look, and the signals not sent by then, are left to batch_start() and the
 * end of the turn, as without a thread, so the reply goes out as soon as the
 * writes are done, before them.
 *
 * Nothing here may remove a group: the writer thread writes the cgroup.freeze
 * fds the groups hold.  The stashed kernel events (where removals come from)
 * wait for the loop. */
typedef struct BatchWritten {
        Manager *m;
        const BatchItem *items;
        Group *const *gs;
        const bool *v;
        const int *ret;
        size_t n;
        size_t applied; /* gs[0..applied) are in the model */
        bool failed;
} BatchWritten;

/* Whether the write of a batch's group failed with r because the group was
 * removed a moment ago (freezerd has not read its IN_DELETE yet) and the
 * call reached it without naming it, or named it with SKIP_MISSING
 * (BatchItem.unnamed): it is no longer part of what the call asks for.  Its
 * tasks are gone with it (the kernel removes only a cgroup without any), so it
 * is left out, neither written nor waited for, where failing would leave the
 * rest of the batch half written. */
static bool batch_write_vanished(bool unnamed, int r) {
        return unnamed && (r == -ENOENT || r == -ENODEV);
}

/* Only here does freezerd tell a group left out so from one whose removal it
 * read before the call (test-batch-vanished tells them apart by it). */
static void batch_log_vanished(const Group *g) {
        log_debug("%s: removed a moment ago, its removal not read yet: left out of the call", g->path);
}

/* Groups sent per look at the writer: two GroupsChanged messages (GROUPS_CHANGED_MAX). */
#define BATCH_WRITTEN_SIGNALS_MAX 1024u

static bool batch_written(size_t done, void *userdata) {
        BatchWritten *b = userdata;
        Manager *m = b->m;
        size_t from = b->applied;

        if (b->failed || done >= b->n)
                return false; /* batch_start() does the rest, and answers a failure */
        for (; b->applied < done; b->applied++) {
                Group *g = b->gs[b->applied];
                if (!g || batch_write_vanished(b->items[b->applied].unnamed, b->ret[b->applied]))
                        continue;
                if (b->ret[b->applied] < 0) {
                        b->failed = true;
                        break;
                }
                group_data(g)->write_pending = false;
                group_wrote_freeze(m, g, b->v[b->applied]);
        }
        if (b->applied > from)
                manager_settle_written(m, b->gs + from, b->applied - from);
        return m->on_groups_settled && m->on_groups_settled(m, BATCH_WRITTEN_SIGNALS_MAX);
}

/* Apply a planned batch: items are deduplicated and ordered (batch_plan()).
 * Every item becomes an entry that waits until the kernel's frozen equals the
 * group's effective flag. */
static int batch_start(Manager *m, const BatchItem *items, size_t n, uint64_t timeout_usec, uint64_t flags,
                       operation_done_t done, void *userdata, sd_bus_error *error) {
        Operation *op;
        int r;

        /* Refused with their message by the bus's check_flags(). */
        assert(!(flags & ~(FREEZER_FLAG_ROLLBACK_ON_TIMEOUT | FREEZER_FLAG_NO_WAIT | FREEZER_FLAG_RECURSIVE |
                           FREEZER_FLAG_SKIP_MISSING)));
        for (size_t i = 0; i < n; i++)
                if (items[i].group == tree_root(m->tree))
                        return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH,
                                                 "/ is freezerd's cgroup root (%s) and cannot be frozen or thawed",
                                                 CG_NAMED(m->cgroup_root));

        for (size_t i = 0, freezes = 0; i < n; i++)
                if (items[i].freeze) {
                        if (freezes++ == 0)
                                manager_find_self(m); /* once per call, not per group */
                        r = refuse_self_freeze(m, items[i].group, error);
                        if (r < 0)
                                return r;
                }

        r = operation_new(m, (unsigned) n, timeout_usec, flags, done, userdata, &op);
        if (r < 0)
                return bus_error_set_failed(error, r, "%s", strerror(-r));

        /* The groups to write (NULL where the flag is as asked: items name
         * distinct groups, batch_plan(), so these are the flags the loop below
         * finds), for the journal, the writes and the settling. */
        _cleanup_free_ Group **to_write = calloc(n ?: 1, sizeof(Group *));
        _cleanup_free_ bool *values = calloc(n ?: 1, sizeof(bool));
        _cleanup_free_ bool *unnamed = calloc(n ?: 1, sizeof(bool));
        _cleanup_free_ int *results = calloc(n ?: 1, sizeof(int));
        int unread = -1; /* removals_may_be_unread(), once asked (group_removal_unread()) */
        if (!to_write || !values || !unnamed || !results) {
                operation_free(op);
                return sd_bus_error_set_errno(error, -ENOMEM);
        }
        for (size_t i = 0; i < n; i++) {
                OpEntry *e = &op->entries[i];

                to_write[i] = items[i].group->freeze == items[i].freeze ? NULL : items[i].group;
                values[i] = items[i].freeze;
                unnamed[i] = items[i].unnamed;
                /* Before the writes: batch_written() may put them in the model
                 * while they go on. */
                e->unnamed = items[i].unnamed;
                /* counted: named, with SKIP_MISSING (BatchItem.counted). */
                op->writes_unnamed |= items[i].unnamed && !items[i].counted && to_write[i];
                e->index = (unsigned) items[i].index;
                e->want = OP_WANT_EFFECTIVE;
                e->new_freeze = items[i].freeze;
                e->prev_freeze = items[i].group->freeze;
                if (items[i].gone) {
                        /* Not there for the access check (BatchItem.gone):
                         * left out, not written. */
                        batch_log_vanished(items[i].group);
                        e->vanished = true;
                        op->skipped += items[i].counted;
                        to_write[i] = NULL;
                        continue;
                }
                /* A group whose flag is as asked is not written, so no write
                 * tells that it was removed a moment ago (freezerd has not
                 * read its IN_DELETE): asked here, as manager_write_freezes()
                 * asks of those it writes (nothing to ask while no inotify
                 * event waits).  One the call reached without naming it (or
                 * named with SKIP_MISSING) is left out, as a written one would
                 * be; a named one fails the call, nothing written. */
                if (!to_write[i] && group_removal_unread(m, &unread, items[i].group, n) &&
                    (r = group_check_exists(m, items[i].group)) < 0) {
                        if (r == -ESTALE) {
                                /* Made again under its name: the call starts over. */
                                operation_free(op);
                                return r;
                        }
                        if (items[i].unnamed) {
                                batch_log_vanished(items[i].group);
                                e->vanished = true;
                                op->skipped += items[i].counted;
                                continue;
                        }
                        operation_free(op);
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP,
                                                 "Request %zu: %s no longer exists; nothing was written",
                                                 items[i].index, CG_NAMED(items[i].group->path));
                }
        }
        r = operation_journal(op, (const Group *const *) to_write, values, n, error);
        if (r < 0) {
                operation_free(op);
                return r;
        }

        /* Every write first, back to back (manager_write_freezes()); then
         * the model follows them, in the same order.  A storm's writes (from
         * the real-time writer, disjoint subtrees) are followed as they are
         * done (batch_written()). */
        BatchWritten bw = { .m = m, .items = items, .gs = to_write, .v = values, .ret = results, .n = n };
        /* The answer asked above holds for the checks before the writes:
         * nothing since handled an event (a yes stays one), and a removal
         * queued since (a no that would turn) is an rmdir concurrent with the
         * call, as one during the writes is: asking again would narrow that
         * window by the journal's write, not close it. */
        r = manager_write_freezes(m, to_write, values, n, results, unnamed, unread, batch_written, &bw);
        if (r < 0) {
                operation_free(op);
                return bus_error_set_failed(error, r, "%s", strerror(-r));
        }

        for (size_t i = 0; i < n; i++) {
                OpEntry *e = &op->entries[i];
                Group *g = items[i].group;

                if (!to_write[i]) {
                        if (!e->vanished)
                                op->skipped++;
                        continue;
                }
                r = results[i];
                if (r == -ECANCELED)
                        continue; /* not written: one after it failed before any write (manager_write_freezes()) */
                if (r == -ESTALE) {
                        /* Made again under its name, nothing written: the call starts over. */
                        operation_free(op);
                        return r;
                }
                if (batch_write_vanished(items[i].unnamed, r)) {
                        batch_log_vanished(g);
                        e->vanished = true;
                        op->skipped += items[i].counted; /* a named request: not written */
                        to_write[i] = NULL; /* nothing to settle */
                        continue;
                }
                if (r >= 0 && i >= bw.applied)
                        group_wrote_freeze(m, g, items[i].freeze);
                if (r < 0) {
                        _cleanup_free_ char *msg = NULL, *stay = NULL, *failed_msg = NULL;
                        bool rollback = flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT, restored = false;
                        size_t n_stay = 0, len = 0;
                        FILE *f = rollback ? NULL : open_memstream(&stay, &len);

                        /* All or nothing: undo what this batch wrote, newest first
                         * (the entries before i: the writes stopped at i).  A
                         * write back that fails is told, as a timeout's rollback
                         * tells it: the reply must not say that the batch was
                         * rolled back while a flag of it stays as written.  (No
                         * flag is adopted yet: group_adopt() comes after the
                         * writes.)  Its journal is emptied all the same
                         * (operation_free()), as after a timeout's rollback: the
                         * reply says which flag stays, and a crash must not undo
                         * what the caller was told.  (A write back goes through the
                         * cgroup.freeze the batch's write kept open, which the
                         * kernel fails only for a group removed: no flag to
                         * restore.) */
                        if (rollback) {
                                unsigned kept = 0, failed = 0;
                                const char *kept_path = NULL, *failed_path = NULL;
                                int failed_error = 0;

                                restored = operation_rollback(op, to_write, &kept, &kept_path, &failed, &failed_path,
                                                              &failed_error);
                                failed_msg = rollback_failed_message(failed, failed_path, failed_error);
                        }
                        for (size_t j = i; j > 0; j--) {
                                if (!op->entries[j - 1].wrote)
                                        continue;
                                /* Not settled: read, and the groups it covered
                                 * follow their own files.  Not again where a
                                 * rollback wrote it back (operation_rollback()
                                 * did it then; a flag someone else set since
                                 * was settled when it was applied), nor where
                                 * batch_written() settled it. */
                                if (!rollback && j - 1 >= bw.applied)
                                        group_poll_uncovered(m, items[j - 1].group);
                                n_stay++;
                        }
                        /* Which stay, in the order written: the caller does not
                         * know the order the batch was planned in. */
                        for (size_t j = 0, named = 0; f && j < i; j++)
                                if (op->entries[j].wrote && named++ < TIMEOUT_GROUPS_NAMED)
                                        fprintf(f, "%s%s", named > 1 ? ", " : ": ",
                                                CG_NAMED_IN_LIST(items[j].group->path));
                        if (f && n_stay > TIMEOUT_GROUPS_NAMED)
                                fprintf(f, " and %zu more", n_stay - TIMEOUT_GROUPS_NAMED);
                        if (f)
                                fclose(f);
                        if (failed_msg
                                    ? asprintf(&msg, "Cannot %s %s: %s%s%s", items[i].freeze ? "freeze" : "thaw",
                                               CG_NAMED_IN_LIST(g->path),
                                               r == -ENOENT || r == -ENODEV ? "it no longer exists" : strerror(-r),
                                               failed_msg,
                                               restored ? ". The other flags this call changed were restored" : "") < 0
                                    : asprintf(&msg, "Cannot %s %s: %s; %s%s", items[i].freeze ? "freeze" : "thaw",
                                               CG_NAMED_IN_LIST(g->path),
                                               r == -ENOENT || r == -ENODEV ? "it no longer exists" : strerror(-r),
                                               n_stay == 0 ? "nothing was written"
                                               : rollback  ? "the batch was rolled back"
                                                           : "the requests before it stay applied",
                                               n_stay == 0 || rollback ? "" : stay ?: "") < 0)
                                msg = NULL;
                        operation_free(op);
                        return sd_bus_error_set(error,
                                                r == -ENOENT || r == -ENODEV ? BUS_ERROR_NO_SUCH_GROUP
                                                                             : SD_BUS_ERROR_FAILED,
                                                msg ?: "Cannot apply the batch");
                }
                e->wrote = true;
                op->writes++;
        }
        /* The groups asked for as they are (no write, no group_flag_changed()),
         * once every write landed: what the caller wants now too, which a group
         * kept for a retry at the next start must not undo. */
        for (size_t i = 0; journal_has_retries(m->journal) && i < n; i++)
                if (!to_write[i] && !op->entries[i].vanished)
                        journal_forget(m->journal, items[i].group->path, items[i].group->id);

        bool stale = false;
        for (size_t i = 0; i < n; i++)
                if (!op->entries[i].vanished) {
                        stale = group_adopt(items[i].group, &op->entries[i]) || stale;
                        /* A flag of its cover it did not write stays because
                         * of it all the same: its Timeout names it. */
                        op->writes_unnamed |= op->entries[i].took_over && items[i].unnamed && !items[i].counted;
                }
        if (stale) {
                _cleanup_free_ Group **gs = calloc(n, sizeof *gs);
                for (size_t i = 0; gs && i < n; i++)
                        gs[i] = items[i].group;
                if (gs)
                        operations_rejournal(op, gs, n);
                else /* no memory: the journals stay as they were, adopted flags in them */
                        log_warning("Cannot record the batch journals again without the flags a later call asked for");
        }

        /* Every write landed.  Without ROLLBACK_ON_TIMEOUT that is the batch's
         * outcome whatever the kernel confirms (a timeout leaves the flags as
         * requested, as a clean stop does): the journal served to make the
         * writes all or nothing across a crash, and a crash from now on must
         * not undo them (it thawed a group the caller had frozen for good). */
        if (!(flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT))
                operation_end_journal(op);

        /* From here on to_write holds the groups written (a failed write
         * returned above) whose subtrees are to be settled: not those
         * batch_written() settled. */
        for (size_t i = 0; i < bw.applied; i++)
                to_write[i] = NULL;
        if (flags & FREEZER_FLAG_NO_WAIT) {
                /* Reply first: settling serves the model, not this caller.
                 * Linked, it is Cancelled as a waiting batch would be if the
                 * rollback of a call it reversed (answered before it) undoes
                 * one of its flags. */
                for (size_t i = 0; i < n; i++)
                        if (!op->entries[i].vanished)
                                entry_link(&op->entries[i], items[i].group);
                operation_conclude(op);
                manager_dispatch(m);
                manager_settle_written(m, to_write, n);
                return 0;
        }

        /* The kernel may be done already (empty groups, nothing changed): look
         * once at every touched group, then link and decide. */
        manager_settle_written(m, to_write, n);
        for (size_t i = 0; i < n; i++)
                if (!op->entries[i].wrote && !op->entries[i].vanished)
                        (void) group_read_events(m, items[i].group);
        /* A group left out (vanished) is not waited for: its entry keeps
         * no group, as one whose removal was read (operation_check()). */
        for (size_t i = 0; i < n; i++)
                if (!op->entries[i].vanished)
                        entry_link(&op->entries[i], items[i].group);
        if (operation_check_reversed(op) || operation_check(op))
                return 0;
        r = operation_arm(op);
        if (r < 0)
                operation_doom(op, true, r == -ENOMEM ? SD_BUS_ERROR_NO_MEMORY : SD_BUS_ERROR_FAILED,
                               "Cannot arm the timeout of the batch: %s", strerror(-r));
        return 0;
}

/* A call's failures, and those its writes caused (operations it reversed),
 * are answered before the call returns: before any later call of the same
 * loop turn can write the same group and reply.  So the order of replies is
 * the order of the writes they vouch for, failures included. */
int manager_freeze(Manager *m, Group *g, bool freeze, uint64_t timeout_usec, uint64_t flags, operation_done_t done,
                   void *userdata, sd_bus_error *error) {
        int r = freeze_start(m, g, freeze, timeout_usec, flags, done, userdata, error);
        manager_dispatch(m);
        return r;
}

int manager_apply_batch(Manager *m, const BatchItem *items, size_t n, uint64_t timeout_usec, uint64_t flags,
                        operation_done_t done, void *userdata, sd_bus_error *error) {
        int r = batch_start(m, items, n, timeout_usec, flags, done, userdata, error);
        manager_dispatch(m);
        return r;
}

/* ---- inotify ------------------------------------------------------------------------------------------ */

static void manager_resync(Manager *m) {
        /* The kernel dropped events (IN_Q_OVERFLOW): re-read everything we keep. */
        log_warning("inotify queue overflowed, re-reading every group");
        manager_reread_outer(m, false);
        for (Group *g = tree_root(m->tree), *next; g; g = next) {
                next = tree_next_preorder(tree_root(m->tree), g);
                group_reread_freeze(m, g, false);
                /* Its cover, an ancestor, was read just before it, and the
                 * flags on the way down: nothing to read (see
                 * group_open_events()). */
                if (group_cover(g))
                        continue;
                if (group_read_events(m, g) == -ENODEV && g == tree_root(m->tree)) {
                        /* Its removal was among the events lost. */
                        manager_root_removed(m);
                        return;
                }
        }
        /* Groups that vanished read -ENODEV; new children are found by rescanning. */
        for (Group *g = tree_root(m->tree), *next; g; g = next) {
                _cleanup_close_ int dirfd = -1;

                next = tree_next_preorder(tree_root(m->tree), g);
                if (!g->tracked)
                        continue;
                if (open_group_dir(m, g->path, &dirfd) < 0) {
                        if (g != tree_root(m->tree)) {
                                /* Skip the subtree we are about to drop. */
                                Group *s = g;
                                while (s && !s->next && s != tree_root(m->tree))
                                        s = s->parent;
                                next = s && s != tree_root(m->tree) ? s->next : NULL;
                                manager_remove_group(m, g, false);
                        }
                        continue;
                }
                (void) manager_scan_children(m, g, dirfd);
        }
        /* A waiting track root's mkdir may be among the events lost. */
        manager_track_pending(m, NULL);
}

/* Nothing is left to follow, and a directory made again with the root's name
 * is another cgroup, which our open root fd does not reach: freezerd exits with
 * failure (main() sees m->fatal after this slice; the unit restarts it, and
 * that start finds the new directory or says that there is none). */
static void manager_root_removed(Manager *m) {
        if (m->fatal)
                return;
        log_error("The cgroup root %s was removed (or its file system unmounted): nothing is left to follow, "
                  "exiting.", m->cgroup_root);
        m->fatal = -ENODEV;
}

/* A track root's cgroup was removed: said once the slice's events are
 * handled (roots_gone_log()), when it is known whether it waits to be made
 * again or, past TRACK_ROOTS_WAITING_MAX, is forgotten at once, which
 * manager_forget_waiting_roots() says instead. */
static void root_gone(Manager *m, const char *path) {
        char **l = realloc(m->roots_gone, (m->n_roots_gone + 1) * sizeof(char *));
        char *p = strdup(path);

        if (l)
                m->roots_gone = l;
        if (!l || !p) {
                free(p);
                log_info("%s, a tracked subtree, was removed: it is tracked again once it is made.", path);
                return;
        }
        m->roots_gone[m->n_roots_gone++] = p;
}

static void roots_gone_log(Manager *m) {
        for (size_t i = 0; i < m->n_roots_gone; i++) {
                const char *p = m->roots_gone[i];
                Group *g = tree_get(m->tree, p);

                if (!manager_is_track_root(m, p))
                        ; /* forgotten: manager_forget_waiting_roots() said so */
                else if (g && g->tracked) /* after manager_track_pending()'s "was made" */
                        log_info("%s, a tracked subtree, was removed, and made again since: tracked.", p);
                else
                        log_info("%s, a tracked subtree, was removed: it is tracked again once it is made.", p);
                free(m->roots_gone[i]);
        }
        m->roots_gone = mfree(m->roots_gone);
        m->n_roots_gone = 0;
}

static void handle_inotify_event(Manager *m, const struct inotify_event *ev) {
        const WdEntry *w;
        Group *g;

        if (ev->mask & IN_Q_OVERFLOW) {
                manager_resync(m);
                return;
        }
        w = wdmap_get(m->wds, ev->wd);
        if (!w)
                return; /* a watch of a group we already dropped */
        if (w->kind == WD_KIND_OUTER) {
                /* A write manager_drain_inotify() did not apply (it always does,
                 * short of a lost event); read once per slice. */
                if (ev->mask & IN_IGNORED)
                        wdmap_remove(m->wds, ev->wd); /* unmounted: the root's watch says so */
                else if ((ev->mask & IN_MODIFY) && m->outer_gen != m->inotify_gen) {
                        m->outer_gen = m->inotify_gen;
                        manager_reread_outer(m, false);
                }
                return;
        }
        g = w->ptr;

        if (w->kind == WD_KIND_ROOT_PARENT) {
                /* The name alone could be another directory's, were the root
                 * renamed and a new one of its old name removed (cgroup2 refuses
                 * rename(2) today, EPERM): our root's own file reads -ENODEV
                 * once it is gone.  Siblings removed cost a name comparison each. */
                if ((ev->mask & IN_DELETE) && ev->len > 0 && streq(ev->name, strrchr(m->cgroup_root, '/') + 1) &&
                    group_read_events(m, g) == -ENODEV)
                        manager_root_removed(m);
                return;
        }

        if (w->kind == WD_KIND_FREEZE) {
                GroupData *d = group_data(g);
                if (ev->mask & IN_IGNORED) {
                        /* The file went with its group, whose removal follows. */
                        wdmap_remove(m->wds, ev->wd);
                        d->wd_freeze = -1;
                } else if ((ev->mask & IN_MODIFY) && d->freeze_gen != m->inotify_gen) {
                        d->freeze_gen = m->inotify_gen;
                        group_reread_freeze(m, g, false);
                }
                return;
        }
        if (g == tree_root(m->tree) && (ev->mask & IN_IGNORED)) {
                /* The root's watch went: its file system was unmounted (an rmdir of
                 * it is seen above it, WD_KIND_ROOT_PARENT). */
                wdmap_remove(m->wds, ev->wd);
                group_data(g)->wd_dir = -1;
                manager_root_removed(m);
                return;
        }
        if (ev->mask & IN_IGNORED) {
                /* Our directory is gone (normally announced to the parent first). */
                GroupData *d = group_data(g);
                wdmap_remove(m->wds, ev->wd);
                d->wd_dir = -1;
                manager_remove_group(m, g, false);
                return;
        }
        /* From the epoll set (manager_drain_epoll()). */
        if (!(ev->mask & IN_ISDIR) && (ev->mask & IN_MODIFY) && ev->len > 0 && streq(ev->name, "cgroup.events")) {
                Group *r = group_cover(g);
                GroupData *d = group_data(r ?: g);
                if (d->events_gen != m->inotify_gen) {
                        d->events_gen = m->inotify_gen;
                        if (group_read_events(m, r ?: g) >= 0 && !r)
                                group_notified(m, g);
                }
                return;
        }
        if ((ev->mask & IN_ISDIR) && ev->len > 0) {
                if (ev->mask & IN_CREATE) {
                        if (!g->tracked) {
                                /* Kept for its flag: only a track root waiting
                                 * to be made at or below the new group counts. */
                                _cleanup_free_ char *cp = NULL;
                                if (asprintf(&cp, "%s/%s", streq(g->path, "/") ? "" : g->path, ev->name) < 0)
                                        log_warning("Out of memory: a group made below %s is not looked at.",
                                                    g->path);
                                else
                                        manager_track_pending(m, cp);
                                return;
                        }
                        int r = manager_add_subtree(m, g, ev->name, true, NULL);
                        if (r < 0 && !add_error_logged(r))
                                log_warning_errno(r, "Cannot track new group %s/%s: %m",
                                                  streq(g->path, "/") ? "" : g->path, ev->name);
                } else if (ev->mask & IN_DELETE) {
                        _cleanup_free_ char *cp = NULL;
                        Group *c = NULL;
                        limit_name_forget(g, ev->name); /* one made again with its name is logged again */
                        if (asprintf(&cp, "%s/%s", streq(g->path, "/") ? "" : g->path, ev->name) >= 0)
                                c = tree_get(m->tree, cp);
                        if (!c)
                                return;
                        /* Its parent is kept (for its flag, or tracked): a
                         * directory made again with its name is tracked again
                         * (manager_track_pending()). */
                        if (!g->tracked && manager_is_track_root(m, c->path))
                                root_gone(m, c->path);
                        manager_remove_group(m, c, false);
                }
        }
}

void manager_handle_pending_events(Manager *m) {
        int outer = -1;

        m->call_remade = false;
        (void) manager_drain_inotify(m, &outer);
        while (manager_has_stashed_events(m) && !m->fatal)
                manager_handle_stashed_events(m, INOTIFY_SLICE_USEC);
}

void manager_handle_stashed_events(Manager *m, uint64_t budget_usec) {
        uint64_t deadline = now_usec() + budget_usec;

        /* Read ahead (removals_may_be_unread()): applied first, as a drain
         * would have. */
        if (m->inotify_stash_applied < m->inotify_stash_len) {
                int outer = -1;
                (void) stash_apply_writes(m, &outer);
        }
        /* Everything in this slice was queued before we read: one re-read per
         * file per slice reflects all of it. */
        m->inotify_gen++;
        for (size_t k = 0; m->inotify_stash_pos < m->inotify_stash_len; k++) {
                const struct inotify_event *ev =
                        (const struct inotify_event *) (m->inotify_stash + m->inotify_stash_pos);

                /* The clock every 32 events: one costs less than reading it. */
                if (k > 0 && k % 32 == 0 && now_usec() >= deadline)
                        break;

                m->inotify_stash_pos += sizeof *ev + ev->len;
                if (ev->mask & IN_Q_OVERFLOW)
                        m->inotify_overflow_pending = false; /* handled now */
                if (ev->mask & INOTIFY_REMOVAL_MASK)
                        m->inotify_removals--;
                handle_inotify_event(m, ev);
        }
        if (m->inotify_stash_pos >= m->inotify_stash_len) {
                m->inotify_stash = mfree(m->inotify_stash);
                m->inotify_stash_len = m->inotify_stash_pos = m->inotify_stash_applied = 0;
        }
        if (m->inotify_lost) { /* the stash was dropped with it */
                m->inotify_lost = false;
                manager_resync(m);
        }
        if (m->track_roots_removed)
                manager_forget_waiting_roots(m);
        roots_gone_log(m);
        /* Calls the slice failed (a flag reversed behind our back, a group
         * gone) are answered before the next call is handled. */
        manager_dispatch(m);
}

/* While a storm of notifications comes in (a write behind our back over a
 * large subtree of polled groups), reading them as they come wakes us for
 * every few events, and the kernel pays for each wake-up and for our reads
 * next to its own deliveries: a freeze of 4,000 groups took twice as long with
 * such an eager inotify reader as with none (tests/bench/run-watch-cost).  So after a read that brought a storm's worth,
 * the fd is left alone for a moment and read in one go afterwards.  A single
 * change is read at once; an idle daemon arms nothing. */
#define INOTIFY_STORM_BYTES (64 * (sizeof(struct inotify_event) + 16))
#define INOTIFY_PAUSE_USEC 1000

static void on_inotify(evutil_socket_t fd, short what, void *userdata) {
        Manager *m = userdata;
        size_t before = m->inotify_stash_len - m->inotify_stash_pos;

        int outer = -1;

        /* Read now, handle in slices from the main loop. */
        (void) manager_drain_inotify(m, &outer);
        if (m->inotify_stash_len - m->inotify_stash_pos >= before + INOTIFY_STORM_BYTES) {
                const struct timeval tv = { .tv_usec = INOTIFY_PAUSE_USEC };
                if (event_del(m->inotify_event) == 0 && event_del(m->events_epoll_event) == 0 &&
                    evtimer_add(m->inotify_resume, &tv) == 0)
                        return;
                (void) event_add(m->inotify_event, NULL);
                (void) event_add(m->events_epoll_event, NULL);
        }
}

static void on_inotify_resume(evutil_socket_t fd, short what, void *userdata) {
        Manager *m = userdata;

        int r = event_add(m->inotify_event, NULL);
        if (event_add(m->events_epoll_event, NULL) < 0 || r < 0)
                log_error("Cannot watch the inotify fd or the epoll set again: kernel events are no longer read");
        on_inotify(m->inotify_fd, EV_READ, m);
}

/* Normalize an API path or say why not (InvalidPath, the path escaped). */
static int normalize_path(const char *path, char **ret, sd_bus_error *error) {
        const char *reason = NULL;
        int r = cg_path_normalize(path, ret, &reason);
        if (r < 0)
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH, "Invalid path \"%s\": %s",
                                         CG_QUOTE(path), reason ?: strerror(-r));
        return 0;
}

/* ---- tracking ----------------------------------------------------------------------------------------- */

int manager_path_error(sd_bus_error *error, int r, const char *raw) {
        /* In double quotes where white space at the start or end of a name
         * would not be seen ("/ /pods" for " /pods"), a '"' in it as \", as
         * freezectl shows it. */
        const char *path = CG_NAMED(raw);

        switch (r) {
        case -ENOENT:
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP, "%s does not exist", path);
        case -ELOOP:
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH, "%s is or passes through a symlink", path);
        case -ENOTDIR:
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH, "%s is not a cgroup directory", path);
        case -EXDEV:
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH, "%s leaves the cgroup root", path);
        case -ENOSPC:
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "Cannot track %s: the inotify watch limit (fs.inotify.max_user_watches) "
                                         "is reached",
                                         path);
        case -EILSEQ:
                return sd_bus_error_setf(error, BUS_ERROR_INVALID_PATH,
                                         "%s holds a name D-Bus cannot carry (not UTF-8, a noncharacter or a "
                                         "control character): freezerd does not follow it",
                                         path);
        case -E2BIG:
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "Cannot track %s: it is deeper than %u levels below the cgroup root", path,
                                         GROUP_DEPTH_MAX);
        case -EMFILE:
        case -ENFILE:
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "Cannot track %s: freezerd has no file descriptors left (RLIMIT_NOFILE)",
                                         path);
        default:
                return bus_error_set_failed(error, r, "Cannot open %s: %s", path, strerror(-r));
        }
}

/* Ensure every component of path is in the model; the last one tracked with
 * its subtree, the ones above it kept (untracked) for their flags. */
static int manager_ensure_path(Manager *m, const char *path, bool track, Group **ret, sd_bus_error *error) {
        _cleanup_free_ char *copy = strdup(path);
        Group *g = tree_root(m->tree);
        char *p, *s;
        int r;

        if (!copy)
                return sd_bus_error_set_errno(error, -ENOMEM);
        if (streq(path, "/")) {
                /* Tracking the root tracks the whole hierarchy: every descendant
                 * of a tracked group is tracked (tree.h), and a tracked group's
                 * new children are tracked as they come.  Setting the root's
                 * flag alone would break the first and leave the groups already
                 * there out for good: its untracked subtrees are walked, as at
                 * start. */
                if (track) {
                        r = manager_track_existing(m, g);
                        if (r < 0)
                                return manager_path_error(error, r, path);
                }
                *ret = g;
                return 0;
        }
        {
                /* Refused before anything is added: the components above the
                 * limit would stay in the model, one fd and watch each. */
                unsigned depth = 0;
                for (const char *q = path; *q; q++)
                        depth += *q == '/';
                if (depth > GROUP_DEPTH_MAX)
                        return manager_path_error(error, -E2BIG, path);
        }
        for (p = copy + 1; p && *p; p = s) {
                s = strchr(p, '/');
                if (s)
                        *s++ = 0;
                bool last = !s || !*s;
                Group *c;
                if (!last && m->test_track_root_enomem) {
                        size_t len = (size_t) (p - copy) + strlen(p);

                        if (strncmp(path, m->test_track_root_enomem, len) == 0 && m->test_track_root_enomem[len] == 0)
                                return manager_path_error(error, -ENOMEM, path);
                }
                r = manager_add_subtree(m, g, p, last ? track : g->tracked, &c);
                if (r < 0) {
                        /* Report the path as far as it was resolved. */
                        return manager_path_error(error, r, path);
                }
                g = c;
        }
        *ret = g;
        return 0;
}

/* The index of root path in m->track_roots, or -1. */
static ssize_t track_root_find(Manager *m, const char *path) {
        if (!u64set_contains(m->track_root_hashes, string_hash(path)))
                return -1;
        for (size_t i = 0; i < m->n_track_roots; i++)
                if (streq(m->track_roots[i], path))
                        return (ssize_t) i;
        return -1;
}

/* After roots were taken out: the hashes of those left.  Where memory runs
 * out, the old set stays, which holds them too. */
static void track_root_hashes_rebuild(Manager *m) {
        U64Set *s = NULL;

        for (size_t i = 0; i < m->n_track_roots; i++)
                if (u64set_add(&s, string_hash(m->track_roots[i])) < 0) {
                        u64set_free(s);
                        return;
                }
        u64set_free(m->track_root_hashes);
        m->track_root_hashes = s;
}

bool manager_is_track_root(Manager *m, const char *path) {
        return track_root_find(m, path) >= 0;
}

static bool track_root_called(Manager *m, const char *path) {
        ssize_t i = track_root_find(m, path);
        return i >= 0 && m->track_roots_called[i];
}

/* Moves n roots (path, called, saved) from index from to index to. */
static void track_roots_move(Manager *m, size_t to, size_t from, size_t n) {
        memmove(m->track_roots + to, m->track_roots + from, n * sizeof(char *));
        memmove(m->track_roots_called + to, m->track_roots_called + from, n * sizeof(bool));
        memmove(m->track_roots_saved + to, m->track_roots_saved + from, n * sizeof(bool));
}

/* Root i out of the arrays, its path returned (not freed); the hashes are
 * the caller's to rebuild. */
static char *track_root_take(Manager *m, size_t i) {
        char *path = m->track_roots[i];

        track_roots_move(m, i, i + 1, m->n_track_roots - i - 1);
        m->track_roots[--m->n_track_roots] = NULL;
        return path;
}

/* Root i was tracked again, or made again: it goes last, among the roots a
 * call asked for the last to be forgotten (manager_forget_waiting_roots()).
 * tracked.json keeps that order for the next start, but is not written for
 * it here: a client that Track()s what it tracks already each time it looks
 * would cost a write and an fsync of the whole file per call, for an order
 * that matters only past TRACK_ROOTS_WAITING_MAX roots waiting.  The next
 * save takes it along, or the stop saves it (lost by a crash only). */
static void track_root_touch(Manager *m, size_t i) {
        char *path = m->track_roots[i];
        bool called = m->track_roots_called[i], saved = m->track_roots_saved[i];

        if (called && i + 1 < m->n_track_roots)
                m->track_order_unsaved = true;

        track_roots_move(m, i, i + 1, m->n_track_roots - i - 1);
        m->track_roots[m->n_track_roots - 1] = path;
        m->track_roots_called[m->n_track_roots - 1] = called;
        m->track_roots_saved[m->n_track_roots - 1] = saved;
}

/* The index of path in Manager.transient_roots, or -1. */
static ssize_t transient_find(Manager *m, const char *path) {
        for (size_t i = 0; i < m->n_transient_roots; i++)
                if (streq(m->transient_roots[i], path))
                        return (ssize_t) i;
        return -1;
}

static void transient_drop(Manager *m, const char *path) {
        ssize_t i = transient_find(m, path);

        if (i < 0)
                return;
        free(m->transient_roots[i]);
        m->transient_roots[i] = m->transient_roots[--m->n_transient_roots];
}

/* Whether root i is transient: a transient lookup added it, and no call
 * asked for it since (see Manager.transient_roots). */
static bool track_root_transient(Manager *m, size_t i) {
        return m->n_transient_roots > 0 && !m->track_roots_called[i] &&
               transient_find(m, m->track_roots[i]) >= 0;
}

/* called: a call asks for it (see Manager.track_roots_called), not the
 * configuration.  A configured root a call asks for too is marked so.
 * save: save tracked.json if that changed it (false: a lookup of a call not
 * yet accepted, saved by manager_call_accept()).  ret_save (may be NULL):
 * what the save of tracked.json that this made returned, 0 where none was
 * made (Track() undoes it where that failed: track_root_unsaved()). */
static int track_root_add(Manager *m, const char *path, bool called, bool save, int *ret_save) {
        ssize_t i = track_root_find(m, path);
        bool *c;
        char **n;
        int r;

        if (ret_save)
                *ret_save = 0;
        /* Only a transient lookup adds a transient root; the configuration
         * naming one makes it its own (a reload's: kept for good). */
        if (!m->tracking_transient && (i < 0 || !called))
                transient_drop(m, path);
        if (i >= 0) {
                bool unsaved = m->track_order_unsaved;

                if (!called)
                        return 0;
                if (m->track_roots_called[i]) {
                        track_root_touch(m, (size_t) i);
                        return 0;
                }
                /* A configured root a call asks for now goes last, and
                 * leaves no order unsaved: tracked.json gets it in its new
                 * place with the save below, or with the call's once it is
                 * accepted (call_accept()), and a call refused makes it the
                 * configuration's alone again (call_roots_undo()), whose
                 * place the file does not keep.  Else a refused call left
                 * the stop to write the file again as it was. */
                m->track_roots_called[i] = true;
                track_root_touch(m, (size_t) i);
                m->track_order_unsaved = unsaved;
                r = save ? manager_save_tracked(m) : 0;
                if (ret_save)
                        *ret_save = r;
                return 0;
        }
        if (m->test_track_root_enomem && streq(path, m->test_track_root_enomem))
                return -ENOMEM;
        if (m->tracking_transient) {
                char **t = realloc(m->transient_roots, (m->n_transient_roots + 1) * sizeof(char *));

                if (!t)
                        return -ENOMEM;
                m->transient_roots = t;
                t[m->n_transient_roots] = strdup(path);
                if (!t[m->n_transient_roots])
                        return -ENOMEM;
                m->n_transient_roots++;
        }
        /* First: a root whose hash is missing would not be found. */
        if (u64set_add(&m->track_root_hashes, string_hash(path)) < 0)
                return -ENOMEM;
        n = realloc(m->track_roots, (m->n_track_roots + 2) * sizeof(char *));
        if (!n)
                return -ENOMEM;
        m->track_roots = n;
        c = realloc(m->track_roots_called, (m->n_track_roots + 1) * sizeof(bool));
        if (!c)
                return -ENOMEM;
        m->track_roots_called = c;
        c = realloc(m->track_roots_saved, (m->n_track_roots + 1) * sizeof(bool));
        if (!c)
                return -ENOMEM;
        m->track_roots_saved = c;
        n[m->n_track_roots] = strdup(path);
        if (!n[m->n_track_roots])
                return -ENOMEM;
        m->track_roots_called[m->n_track_roots] = called;
        c[m->n_track_roots] = false;
        n[++m->n_track_roots] = NULL;
        r = save ? manager_save_tracked(m) : 0;
        if (ret_save)
                *ret_save = r;
        return 0;
}

/* Root i leaves m->track_roots. */
static void track_root_remove(Manager *m, size_t i) {
        free(track_root_take(m, i));
        track_root_hashes_rebuild(m);
}

/* Look again for the groups below top that the model lacks, as the scan at
 * start would: Track() of a group tracked already (one tracked now was just
 * scanned).  A tracked group's watch reports its new children, so normally
 * nothing is missing, but a group whose watch could not be armed (the inotify
 * watch limit, no fd left) was left out with a log line: Track() brings it
 * back once the limit is raised. */
static void manager_rescan(Manager *m, Group *top) {
        for (Group *g = top; g; g = tree_next_preorder(top, g)) {
                _cleanup_close_ int dirfd = -1;
                int r;

                if (!g->tracked)
                        continue; /* kept for its flag: its other children are not followed */
                r = open_group_dir(m, g->path, &dirfd);
                if (r >= 0)
                        r = manager_scan_children(m, g, dirfd);
                /* Gone meanwhile: its removal event follows. */
                if (r < 0 && r != -ENOENT && r != -ENODEV)
                        log_warning_errno(r, "Cannot look for new groups below %s: %m", g->path);
        }
}

/* The root whose subtree holds path (the nearest), or NULL. */
static const char *track_root_covering(Manager *m, const char *path) {
        const char *best = NULL;

        for (size_t i = 0; i < m->n_track_roots; i++) {
                const char *root = m->track_roots[i];
                size_t l = strlen(root);

                if ((streq(root, "/") || streq(root, path) || (strncmp(root, path, l) == 0 && path[l] == '/')) &&
                    (!best || l > strlen(best)))
                        best = root;
        }
        return best;
}

/* Root i (norm) was added, or, configured, marked as asked for by a call:
 * undone.  The groups only it brought leave the model, as at an Untrack()
 * of it; tracked.json is the caller's to save. */
static void track_root_undo(Manager *m, size_t i, const char *norm, bool configured) {
        if (configured) {
                m->track_roots_called[i] = false;
                return;
        }
        track_root_remove(m, i);
        manager_untracked_prune(m, norm, UNTRACK_UNDONE);
}

/* Track() asked for norm (keep, in track_path()): tracked.json must have it,
 * or a restart would not track it.  save: what the save track_root_add()
 * made returned.  Where the file lacks it, the call fails, and what it
 * changed is undone (memory as the file has it), rather than answer that it
 * holds across a restart.  A root a call had asked for already stays (a
 * lookup tracked it, and it may be in use): the file is saved again, and
 * where that fails the call says that a restart may not track it. */
static int track_root_unsaved(Manager *m, const char *norm, bool was_root, bool was_called, int save,
                              sd_bus_error *error) {
        ssize_t i = track_root_find(m, norm);
        const char *in;
        int r;

        if (i < 0 || m->track_roots_saved[i])
                return 0;
        if (was_called) {
                r = manager_save_tracked(m);
                if (r >= 0)
                        return 0;
                return bus_error_set_failed(error, r,
                                            "Cannot save tracked subtrees to %s/tracked.json, %s stays tracked "
                                            "but may not be after a restart: %s",
                                            CG_QUOTE(m->state_dir), CG_NAMED(norm), strerror(-r));
        }
        if (save >= 0)
                return 0; /* no file to keep it in (no state directory) */
        /* Unannounced: added in this loop turn. */
        track_root_undo(m, (size_t) i, norm, was_root);
        if (was_root)
                return bus_error_set_failed(error, save,
                                            "Cannot save tracked subtrees to %s/tracked.json, %s stays tracked "
                                            "by the configuration alone: %s",
                                            CG_QUOTE(m->state_dir), CG_NAMED(norm), strerror(-save));
        /* In another root's subtree it is still tracked, and published:
         * what the call did not get is a root of its own, kept. */
        in = track_root_covering(m, norm);
        if (in)
                return bus_error_set_failed(error, save,
                                            "Cannot save tracked subtrees to %s/tracked.json, %s stays tracked "
                                            "within the subtree of %s but is not kept as a track root of its own: "
                                            "%s",
                                            CG_QUOTE(m->state_dir), CG_NAMED(norm), CG_NAMED(in), strerror(-save));
        return bus_error_set_failed(error, save, "Cannot save tracked subtrees to %s/tracked.json, %s is not tracked: %s",
                                    CG_QUOTE(m->state_dir), CG_NAMED(norm), strerror(-save));
}

/* Before a lookup of a call not yet accepted adds to the model, for the
 * undo should the call be refused (call_marks_undo()): the nearest group of
 * the model at or above norm and its ancestors (what the lookup may mark
 * changed) as they are, each group once, and the number of groups published.
 * Out of memory some are not noted: their signals go out as they did. */
static void call_marks_note(Manager *m, const char *norm) {
        _cleanup_free_ char *up = NULL;
        Group *g = tree_get(m->tree, norm);
        char *s;

        if (!m->call.counted) {
                m->call.counted = true;
                m->call.groups_count_changed = m->groups_count_changed;
                m->call.published = tree_published(m->tree);
        }
        if (!g) {
                up = strdup(norm);
                if (!up)
                        return;
                while (!g && (s = strrchr(up, '/'))) {
                        s[s == up] = 0; /* "/a" gives "/" */
                        g = tree_get(m->tree, up);
                        if (s == up)
                                break;
                }
        }
        /* Noted with its ancestors: the first one noted already ends it.
         * Known by the kernel's id, not by address: a group removed while the
         * call is handled again (call_again_if_remade()) may leave its
         * address to one made since.  One whose id is not known yet (0) is
         * noted each time: the undo checks every mark on its own. */
        for (; g; g = g->parent) {
                char *path = NULL;

                if (g->id != 0) {
                        int r = u64set_add(&m->call.marked, g->id);

                        if (r <= 0)
                                return; /* noted already, or out of memory */
                }
                if (GROW_ARRAY(m->call.marks, m->call.n_marks_allocated, m->call.n_marks + 1, 8) < 0 ||
                    !(path = strdup(g->path))) {
                        if (g->id != 0)
                                (void) u64set_remove(&m->call.marked, g->id);
                        return;
                }
                m->call.marks[m->call.n_marks++] = (struct CallMark) {
                        .path = path,
                        .id = g->id,
                        .changed = g->changed,
                        .n_descendants = g->n_descendants,
                        .n_frozen_descendants = g->n_frozen_descendants,
                };
        }
}

/* After call_roots_undo(): the groups noted by call_marks_note() whose
 * counts are back to what they were lose the marks the call's lookups and
 * their undo gave those counts, and the Manager's Groups its own, where the
 * number is back too: a refused call's signals would say nothing changed.
 * A count moved meanwhile (the kernel's events read in the middle of the
 * call: call_again_if_remade()) keeps its mark, as does one marked before
 * the call. */
static void call_marks_undo(Manager *m) {
        const unsigned counts = GROUP_CHANGED_DESCENDANTS | GROUP_CHANGED_FROZEN_DESCENDANTS;

        for (size_t k = 0; k < m->call.n_marks; k++) {
                const struct CallMark *c = &m->call.marks[k];
                Group *g = tree_get(m->tree, c->path);

                if (g && g->id == c->id && g->n_descendants == c->n_descendants &&
                    g->n_frozen_descendants == c->n_frozen_descendants)
                        tree_unmark_changed(m->tree, g, counts & ~c->changed);
        }
        if (m->call.counted && !m->call.groups_count_changed && tree_published(m->tree) == m->call.published)
                m->groups_count_changed = false;
}

/* keep: see manager_track(). */
static int track_path(Manager *m, const char *path, bool called, bool keep, Group **ret, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL, *noted = NULL;
        Group *g = NULL;
        bool rescan, was_root, was_called, held;
        int save, r;
        ssize_t i;

        r = normalize_path(path, &norm, error);
        if (r < 0)
                return r;
        g = tree_get(m->tree, norm);
        rescan = g && g->tracked;
        i = track_root_find(m, norm);
        was_root = i >= 0;
        was_called = was_root && m->track_roots_called[i];
        /* A lookup of a call (manager_call_begin()) that adds a root, or
         * makes a configured one the calls': noted, for the call to undo
         * should it be refused.  Its room first: nothing to undo here
         * where there is none. */
        if (!keep && m->call.open && (!was_root || !was_called)) {
                /* Doubled as it grows: a call may name thousands. */
                r = GROW_ARRAY(m->call.roots, m->call.n_roots_allocated, m->call.n_roots + 1, 8);
                noted = r >= 0 ? strdup(norm) : NULL;
                if (!noted)
                        return bus_error_set_failed(error, -ENOMEM, "%s", strerror(ENOMEM));
        }
        held = !keep && m->call.open && !m->call.accepted;
        if (held)
                call_marks_note(m, norm);
        r = manager_ensure_path(m, norm, true, &g, error);
        if (r < 0 && !was_root &&
            (r == -ENOMEM || ((called || m->tracking_transient) && m->started) ||
             !sd_bus_error_has_name(error, BUS_ERROR_NO_SUCH_GROUP))) {
                /* Part-way: the groups it added above norm are held by no
                 * root (a reload that fails so would keep them for good; a
                 * call's lookup of /c/none/z, NoSuchGroup, would keep /c
                 * watched until the stop; a configured root that is no
                 * directory is skipped, with a warning).  But for a root of
                 * the configuration or of tracked.json that does not exist
                 * yet: it waits for its directory, watched through them
                 * (manager_track_pending()). */
                manager_untracked_prune(m, norm, UNTRACK_UNDONE);
                return r;
        }
        if (r < 0)
                return r;
        if (rescan)
                manager_rescan(m, g);
        r = track_root_add(m, norm, called, !held, &save);
        if (r < 0) {
                /* Not a root, so no root holds what manager_ensure_path()
                 * added: it goes, as at an Untrack() of it (none of it was
                 * announced yet, nor could a call wait on it). */
                manager_untracked_prune(m, norm, UNTRACK_UNDONE);
                return bus_error_set_failed(error, r, "%s", strerror(-r));
        }
        if (noted)
                m->call.roots[m->call.n_roots++] = (struct CallRoot) { .path = TAKE_PTR(noted), .configured = was_root };
        if (held && (!was_root || !was_called))
                m->call.unsaved = true;
        if (keep) {
                r = track_root_unsaved(m, norm, was_root, was_called, save, error);
                if (r < 0)
                        return r;
        }
        if (ret)
                *ret = g;
        return 0;
}

static int manager_track_root(Manager *m, const char *path, bool called, bool keep, Group **ret,
                              sd_bus_error *error) {
        int r = track_path(m, path, called, keep, ret, error);
        /* Failed or not, what it added is announced, complete, before the
         * reply.  A reload announces once, at its end: one whose later root
         * fails drops what the earlier ones added, never announced. */
        if (!m->reloading)
                manager_announce(m);
        return r;
}

int manager_track(Manager *m, const char *path, bool keep, Group **ret, sd_bus_error *error) {
        return manager_track_root(m, path, true, keep, ret, error);
}

/* A track root need not exist: a configured one made after the start (a
 * container manager that starts after freezerd), or one removed after it was
 * tracked.  Such a root waits, at no cost while idle: the groups above it that
 * exist are in the model, kept for their flags (is_ancestor_of_root()), each
 * with its directory's watch, whose IN_CREATE comes here with the new group's
 * path made (NULL: look at every root, after lost events).  Each root at or
 * below it is tracked as far as it exists now: all of it, with its subtree as
 * at start, or the groups above it that came (a mkdir -p may have made the
 * next ones before their parent was watched, which this finds). */
static void manager_track_pending(Manager *m, const char *made) {
        size_t l = made ? strlen(made) : 0;

        for (size_t i = 0; i < m->n_track_roots; i++) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                const char *root = m->track_roots[i];
                Group *g;

                /* The cheap test first: an IN_CREATE comes here for every
                 * group made below a kept ancestor. */
                if (made && (strncmp(root, made, l) != 0 || (root[l] != 0 && root[l] != '/')))
                        continue;
                g = tree_get(m->tree, root);
                if (g && g->tracked)
                        continue;
                if (manager_ensure_path(m, root, true, &g, &error) >= 0) {
                        log_info("%s was made: tracking it.", root);
                        if (m->track_roots_called[i]) {
                                /* Last now, tracked (skipped when the loop
                                 * comes to it); the next root is at i. */
                                track_root_touch(m, i);
                                i--;
                        }
                } else if (!sd_bus_error_has_name(&error, BUS_ERROR_NO_SUCH_GROUP))
                        log_warning("Cannot track %s: %s", root, error.message);
        }
}

/* Whether path is root or below it. */
static bool path_in_subtree(const char *path, const char *root) {
        size_t l = strlen(root);

        return streq(root, "/") || streq(root, path) || (strncmp(root, path, l) == 0 && path[l] == '/');
}

/* Whether g lies in (or is) a tracked root's subtree. */
static bool covered_by(Manager *m, const char *path, const char *except) {
        for (size_t i = 0; i < m->n_track_roots; i++) {
                const char *root = m->track_roots[i];
                size_t l = strlen(root);
                if (except && streq(root, except))
                        continue;
                if (streq(root, "/") || streq(root, path) || (strncmp(root, path, l) == 0 && path[l] == '/'))
                        return true;
        }
        return false;
}

static bool is_ancestor_of_root(Manager *m, const char *path, const char *except) {
        size_t l = strlen(path);
        for (size_t i = 0; i < m->n_track_roots; i++) {
                const char *root = m->track_roots[i];
                if (except && streq(root, except))
                        continue;
                if (streq(path, "/") || (strncmp(root, path, l) == 0 && root[l] == '/'))
                        return true;
        }
        return false;
}

/* g leaves the bus but stays in the model, for the flags of the tracked
 * subtrees below it.  The root stays an object (group_published()). */
static void group_untrack(Manager *m, Group *g) {
        if (!g->tracked)
                return;
        if (g->parent)
                pressure_group_release(m->pressure, g, false); /* its triggers end before its object goes */
        tree_set_tracked(m->tree, g, false);
        if (group_published(g))
                return;
        m->groups_count_changed = true;
        /* Never announced (tracked and untracked within one loop turn): nothing to remove. */
        if (!announce_cancel(m, g) && m->on_group_removed)
                m->on_group_removed(m, g->path);
}

/* The entry of op's that its Cancelled names: the first (in the call's
 * order) whose group leaves the model with the root untracked (manager_prune()
 * fails the calls of those) and that the kernel has not confirmed yet, the
 * group the call waited on, not one confirmed long ago; found, where every one
 * of them is done (the call waits on a group elsewhere).  Not only in g's
 * subtree: a reload that drops "/" prunes each of its children on its own.
 * But in untracked's: where several roots were taken out before each is
 * pruned (manager_forget_waiting_roots(), manager_call_end()), an entry under
 * another of them is not covered either, and the message names untracked as
 * what dropped it. */
static const OpEntry *untracked_waited_on(const Operation *op, const OpEntry *found, const char *untracked) {
        for (unsigned i = 0; i < op->n_entries; i++) {
                const OpEntry *e = &op->entries[i];

                if (e->group && !e->done && !e->vanished && e->group->parent &&
                    path_in_subtree(e->group->path, untracked) &&
                    !covered_by(op->manager, e->group->path, NULL) &&
                    !is_ancestor_of_root(op->manager, e->group->path, NULL))
                        return e;
        }
        return found;
}

/* The calls waiting on g's subtree fail (Cancelled), with their rollback.
 * The message names what dropped the root untracked: a caller who made no
 * Untrack() must not be told of one.  Without ROLLBACK_ON_TIMEOUT the flags
 * a call wrote stay (no rollback): its message names them as a Timeout's
 * does (operation_doom_leaving()), lest "Cancelled" read as "undone". */
static void subtree_fail_waiting(Group *g, const char *untracked, UntrackCause cause) {
        for (Group *c = g; c; c = tree_next_preorder(g, c))
                for (OpEntry *e = group_data(c)->entries; e; e = e->gnext) {
                        /* Failed already (earlier in this walk, or before), or
                         * a success queued: no other failure is its answer. */
                        if (e->op->doomed)
                                continue;
                        const OpEntry *named = untracked_waited_on(e->op, e, untracked);
                        const char *path = named->group->path, *what = named->new_freeze ? "freeze" : "thaw";
                        switch (cause) {
                        case UNTRACK_RELOAD:
                                operation_doom_leaving(e->op, false, BUS_ERROR_CANCELLED,
                                                       "%s is no longer tracked (the configuration reload dropped "
                                                       "%s from \"track\") while waiting for it to %s",
                                                       CG_NAMED_IN_LIST(path), CG_NAMED_IN_LIST(untracked), what);
                                break;
                        case UNTRACK_UNDONE:
                                operation_doom_leaving(e->op, false, BUS_ERROR_CANCELLED,
                                                       "%s is no longer tracked (tracking %s failed) while waiting "
                                                       "for it to %s",
                                                       CG_NAMED_IN_LIST(path), CG_NAMED_IN_LIST(untracked), what);
                                break;
                        case UNTRACK_RELEASED:
                                operation_doom_leaving(e->op, false, BUS_ERROR_CANCELLED,
                                                       "%s is no longer tracked (%s was tracked for a transient "
                                                       "lookup, whose last client left) while waiting for it to %s",
                                                       CG_NAMED_IN_LIST(path), CG_NAMED_IN_LIST(untracked), what);
                                break;
                        case UNTRACK_FORGOTTEN:
                                operation_doom_leaving(e->op, false, BUS_ERROR_CANCELLED,
                                                       "%s is no longer tracked (%s, tracked at a call's request, "
                                                       "was dropped: more than %u such gone subtrees wait to be "
                                                       "made again) while waiting for it to %s",
                                                       CG_NAMED_IN_LIST(path), CG_NAMED_IN_LIST(untracked),
                                                       TRACK_ROOTS_WAITING_MAX, what);
                                break;
                        default:
                                operation_doom_leaving(e->op, false, BUS_ERROR_CANCELLED,
                                                       "%s is no longer tracked (Untrack of %s) while waiting for "
                                                       "it to %s",
                                                       CG_NAMED_IN_LIST(path), CG_NAMED_IN_LIST(untracked), what);
                        }
                }
}

/* Untrack() took a root out of m->track_roots: of top's subtree, keep what the
 * remaining roots need, at every depth.  A group in a remaining root's
 * subtree stays tracked, with its subtree; an ancestor of a remaining root
 * stays in the model, untracked, for its flag; anything else leaves the model.
 * That is the state a start with the remaining roots gives.
 *
 * With untracked set, only fail the calls waiting on the groups the prune
 * will remove, while those are still in the model: their cgroups exist, so
 * that is no NoSuchGroup, and a rollback (all or nothing) must still reach
 * them.  Then, with untracked NULL, remove them. */
static void manager_prune(Manager *m, Group *top, const char *untracked, UntrackCause cause) {
        for (Group *g = top, *next; g; g = next) {
                if (covered_by(m, g->path, NULL)) {
                        next = tree_next_preorder_skip(top, g);
                        continue;
                }
                if (g->parent && !is_ancestor_of_root(m, g->path, NULL)) {
                        next = tree_next_preorder_skip(top, g);
                        if (untracked) {
                                subtree_fail_waiting(g, untracked, cause);
                                /* Their triggers end "untracked": the removal below
                                 * would say "group-removed" of cgroups that exist. */
                                for (Group *c = g; c; c = tree_next_preorder(g, c))
                                        pressure_group_release(m->pressure, c, false);
                        } else
                                manager_remove_group(m, g, true);
                        continue;
                }
                if (!untracked)
                        group_untrack(m, g);
                next = tree_next_preorder(top, g);
        }
}

int manager_untrack(Manager *m, const char *path, sd_bus_error *error) {
        return manager_untrack_root(m, path, UNTRACK_CALL, error);
}

static int manager_untrack_root(Manager *m, const char *path, UntrackCause cause, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL;
        int r;

        r = normalize_path(path, &norm, error);
        if (r < 0)
                return r;
        /* Not NoSuchGroup: the group may well exist (a group tracked
         * within a root's subtree, or one outside them), and that read as
         * if it did not. */
        if (!manager_is_track_root(m, norm)) {
                const char *in = NULL; /* the nearest root above it */

                for (size_t i = 0; i < m->n_track_roots; i++) {
                        const char *root = m->track_roots[i];
                        size_t l = strlen(root);

                        if ((streq(root, "/") || (strncmp(root, norm, l) == 0 && norm[l] == '/')) &&
                            (!in || l > strlen(in)))
                                in = root;
                }
                if (in) {
                        /* A path that names no group (a typo, a file) must not
                         * send the caller off to untrack the whole subtree
                         * ("only a group of").  The model lacks a group made a
                         * moment ago, or one not followed (its name, its depth):
                         * the directory says. */
                        if (!tree_get(m->tree, norm)) {
                                _cleanup_close_ int fd = cg_openat_beneath(m->root_fd, cg_path_relative(norm),
                                                                           O_PATH | O_DIRECTORY, 0);

                                if (fd == -ENOENT || fd == -ENOTDIR)
                                        return sd_bus_error_setf(error, BUS_ERROR_NOT_TRACKED,
                                                                 "%s is not a tracked root, and %s (in the tracked "
                                                                 "subtree at %s)",
                                                                 CG_NAMED(norm),
                                                                 fd == -ENOENT ? "does not exist" : "is no group",
                                                                 CG_NAMED(in));
                        }
                        return sd_bus_error_setf(error, BUS_ERROR_NOT_TRACKED,
                                                 "%s is not a tracked root, only a group of the tracked subtree at "
                                                 "%s: Untrack() that root (see Track() and the \"track\" setting)",
                                                 CG_NAMED(norm), CG_NAMED(in));
                }
                return sd_bus_error_setf(error, BUS_ERROR_NOT_TRACKED,
                                         "%s is not a tracked root, nor in a tracked subtree (see Track() and the "
                                         "\"track\" setting)",
                                         CG_NAMED(norm));
        }

        size_t i = (size_t) track_root_find(m, norm);
        bool called = m->track_roots_called[i], saved = m->track_roots_saved[i];
        /* Out of the arrays, its string kept: it goes back where it was
         * should tracked.json, which has it, not be saved without it. */
        char *root = track_root_take(m, i);

        /* One only the configuration asked for is not in the file.  One
         * the file lacks (its save failed: a lookup's on a read-only state
         * directory) is gone from it already: the save is tried for the
         * others, a failure only logged. */
        if (called) {
                r = manager_save_tracked(m);
                if (r < 0 && saved && cause == UNTRACK_CALL) {
                        /* The caller is told, and it stays tracked: the
                         * file, as it was, has it for the next start.  (The
                         * arrays only shrank: there is room.) */
                        track_roots_move(m, i + 1, i, m->n_track_roots - i);
                        m->track_roots[i] = root;
                        m->track_roots_called[i] = true;
                        m->track_roots_saved[i] = true;
                        m->track_roots[++m->n_track_roots] = NULL;
                        return bus_error_set_failed(error, r,
                                                    "Cannot save tracked subtrees to %s/tracked.json, %s stays "
                                                    "tracked: %s",
                                                    CG_QUOTE(m->state_dir), CG_NAMED(norm), strerror(-r));
                }
        }
        free(root);
        track_root_hashes_rebuild(m);
        manager_untracked_prune(m, norm, cause);
        return 0;
}

/* norm was taken out of m->track_roots: what it alone needed leaves the model. */
static void manager_untracked_prune(Manager *m, const char *norm, UntrackCause cause) {
        Group *g;

        g = tree_get(m->tree, norm);
        if (!g) {
                /* Its cgroup is gone, and its groups with it, or was never
                 * made: the groups above it kept for it alone go, from the
                 * nearest one in the model up. */
                _cleanup_free_ char *up = strdup(norm);
                if (!up)
                        return;
                do
                        *strrchr(up, '/') = 0;
                while (*up && !(g = tree_get(m->tree, up)));
                if (!g || !g->parent || g->tracked || covered_by(m, g->path, NULL) ||
                    is_ancestor_of_root(m, g->path, NULL))
                        return;
        }
        /* Ancestors kept for this root alone go too: from the topmost one no
         * remaining root needs, the whole subtree is pruned. */
        while (g->parent && g->parent->parent && !covered_by(m, g->parent->path, NULL) &&
               !is_ancestor_of_root(m, g->parent->path, NULL))
                g = g->parent;
        manager_prune(m, g, norm, cause);
        manager_dispatch(m); /* the calls it failed (rolled back), before any later call */
        manager_prune(m, g, NULL, cause);
}

/* configured: the hashes of the configuration's roots; NULL where there are
 * none, or no memory for them: then each is compared. */
static bool track_root_configured(Manager *m, const char *root, const U64Set *configured) {
        if (configured && !u64set_contains(configured, string_hash(root)))
                return false;
        for (char **p = m->config.track; p && *p; p++)
                if (streq(*p, root))
                        return true;
        return false;
}

/* Whether a call asked for root i alone (not the configuration) and its
 * group is gone (or not made yet): it waits to be made (manager_track_pending()). */
static bool track_root_waiting_called(Manager *m, size_t i, const U64Set *configured) {
        Group *g;

        if (!m->track_roots_called[i] || track_root_configured(m, m->track_roots[i], configured))
                return false;
        g = tree_get(m->tree, m->track_roots[i]);
        return !g || !g->tracked;
}

/* A root a call asked for waits, once its cgroup is removed, to be made again
 * (a user's slice at the next login).  A client that Track()s each pod or
 * scope by a new name, never made again, would have freezerd keep every one
 * for good: in memory, in tracked.json (written whole, with an fsync, at
 * every Track(): 5 ms of the loop a call with 10,000 waiting) and at each
 * start (10 s for 50,000).  So at most TRACK_ROOTS_WAITING_MAX wait: beyond,
 * those tracked or made least recently (m->track_roots is in that order) are
 * forgotten, as by Untrack(). */
static void manager_forget_waiting_roots(Manager *m) {
        size_t n_called = 0, n_waiting = 0, n_forget, k = 0;
        U64Set *configured = NULL;
        char **forget;

        m->track_roots_removed = false;
        for (size_t i = 0; i < m->n_track_roots; i++)
                n_called += m->track_roots_called[i];
        if (n_called <= TRACK_ROOTS_WAITING_MAX)
                return; /* the common case: no look at the tree */
        /* Each root looked up in the configuration by its hash: compared
         * with every entry, a start with 20,000 configured roots and 20,000
         * in tracked.json spent 6 of its 8 s here. */
        for (char **p = m->config.track; p && *p; p++)
                if (u64set_add(&configured, string_hash(*p)) < 0) {
                        configured = u64set_free(configured);
                        break;
                }
        for (size_t i = 0; i < m->n_track_roots; i++)
                n_waiting += track_root_waiting_called(m, i, configured);
        if (n_waiting <= TRACK_ROOTS_WAITING_MAX) {
                u64set_free(configured);
                return;
        }
        n_forget = n_waiting - TRACK_ROOTS_WAITING_MAX;
        forget = calloc(n_forget, sizeof(char *));
        if (!forget) {
                u64set_free(configured);
                return; /* the next time */
        }
        /* Taken out all at once (thousands of them at a start, from an old
         * tracked.json), then what each one alone needed is pruned. */
        size_t j = 0;
        for (size_t i = 0; i < m->n_track_roots; i++) {
                if (k < n_forget && track_root_waiting_called(m, i, configured)) {
                        forget[k++] = m->track_roots[i];
                        continue;
                }
                m->track_roots[j] = m->track_roots[i];
                m->track_roots_called[j] = m->track_roots_called[i];
                m->track_roots_saved[j++] = m->track_roots_saved[i];
        }
        u64set_free(configured);
        m->n_track_roots = j;
        m->track_roots[j] = NULL;
        track_root_hashes_rebuild(m);
        /* Logged before tracked.json says so. */
        for (size_t i = 0; i < k; i++)
                log_info("%s, tracked at a call's request, is gone and more than %u such subtrees wait to be made "
                         "again: it was tracked or made the least recently of them, and is no longer tracked "
                         "(Track() it again to follow it).",
                         forget[i], TRACK_ROOTS_WAITING_MAX);
        (void) manager_save_tracked(m);
        for (size_t i = 0; i < k; i++) {
                manager_untracked_prune(m, forget[i], UNTRACK_FORGOTTEN);
                free(forget[i]);
        }
        free(forget);
}

/* Whether the nearest group of the model above path (not in the model) is
 * tracked: every group below a tracked one is tracked (tree.h). */
static bool in_tracked_subtree(Manager *m, const char *path) {
        _cleanup_free_ char *up = strdup(path);
        char *s;

        if (!up)
                return false;
        while ((s = strrchr(up, '/'))) {
                Group *a;

                if (s == up)
                        return tree_root(m->tree)->tracked;
                *s = 0;
                a = tree_get(m->tree, up);
                if (a)
                        return a->tracked;
        }
        return false;
}

/* The nearest transient root whose subtree holds norm, where no root kept
 * for good covers it too; else NULL (also without transient roots: the
 * lookups' case, one test). */
static const char *transient_only_root(Manager *m, const char *norm) {
        const char *best = NULL;

        if (m->n_transient_roots == 0)
                return NULL;
        for (size_t i = 0; i < m->n_track_roots; i++) {
                const char *root = m->track_roots[i];

                if (!path_in_subtree(norm, root))
                        continue;
                if (!track_root_transient(m, i))
                        return NULL;
                if (!best || strlen(root) > strlen(best))
                        best = root;
        }
        return best;
}

bool manager_resolve_tracks(Manager *m, const char *norm, bool transient) {
        Group *g = tree_get(m->tree, norm);

        if (!transient && transient_only_root(m, norm))
                return true; /* tracked for good now, with Track()'s rule */
        if (g)
                return !group_published(g);
        return !in_tracked_subtree(m, norm);
}

/* norm's group where it is in the tracked subtrees: published, or made a
 * moment ago in a tracked subtree, its parent's IN_CREATE not read yet.  That
 * one is added as the event would add it, not made a track root of its own,
 * which an Untrack of the subtree would leave tracked, and tracked.json keep
 * for good (a group made and frozen at once, as a container manager does).
 * 1 and *ret, 0 where norm is outside them (or in the model unpublished: a
 * lookup tracks it), or -errno. */
static int resolve_tracked(Manager *m, const char *norm, Group **ret, sd_bus_error *error) {
        Group *g = tree_get(m->tree, norm);
        int r;

        if (g && group_published(g)) {
                *ret = g;
                return 1;
        }
        if (g || !in_tracked_subtree(m, norm))
                return 0;
        r = manager_ensure_path(m, norm, true, &g, error);
        manager_announce(m);
        if (r < 0)
                return r;
        *ret = g;
        return 1;
}

int manager_resolve_group(Manager *m, const char *path, Group **ret, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL;
        int r;

        r = normalize_path(path, &norm, error);
        if (r < 0)
                return r;
        /* In transient roots' subtrees alone: a lookup for good tracks it
         * for good, as it would without them (a root of its own, kept in
         * tracked.json; the transient root itself if it names that). */
        if (transient_only_root(m, norm))
                return manager_track(m, norm, false, ret, error);
        r = resolve_tracked(m, norm, ret, error);
        if (r != 0)
                return r < 0 ? r : 0;
        /* Outside the tracked subtrees: track it if it exists. */
        return manager_track(m, norm, false, ret, error);
}

int manager_lookup_transient(Manager *m, const char *path, Group **ret, char **ret_root, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL, *held = NULL;
        const char *in;
        Group *g;
        int r;

        r = normalize_path(path, &norm, error);
        if (r < 0)
                return r;
        /* The transient root that holds it, copied before the model moves. */
        in = transient_only_root(m, norm);
        held = strdup(in ?: norm);
        if (!held)
                return bus_error_set_failed(error, -ENOMEM, "%s", strerror(ENOMEM));
        r = resolve_tracked(m, norm, &g, error);
        if (r < 0)
                return r;
        if (r > 0) {
                *ret = g;
                *ret_root = in ? TAKE_PTR(held) : NULL;
                return 0;
        }
        /* Outside the tracked subtrees: a transient root of its own. */
        if (in) {
                free(held);
                held = strdup(norm);
                if (!held)
                        return bus_error_set_failed(error, -ENOMEM, "%s", strerror(ENOMEM));
        }
        m->tracking_transient = true;
        r = manager_track_root(m, norm, false, false, &g, error);
        m->tracking_transient = false;
        if (r < 0) {
                if (!manager_is_track_root(m, norm))
                        transient_drop(m, norm); /* added, then its root failed */
                return r;
        }
        *ret = g;
        *ret_root = TAKE_PTR(held);
        return 0;
}

void manager_release_transient(Manager *m, const char *root) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        ssize_t i = track_root_find(m, root);
        bool transient = i >= 0 && track_root_transient(m, (size_t) i);
        int r;

        transient_drop(m, root);
        if (!transient)
                return; /* untracked meanwhile, or kept for good now */
        log_debug("The last client holding %s left: no longer tracking it.", root);
        r = manager_untrack_root(m, root, UNTRACK_RELEASED, &error);
        if (r < 0)
                log_warning("Cannot stop tracking %s, tracked for a transient lookup: %s", root,
                            error.message ?: strerror(-r));
}

void manager_call_begin(Manager *m, sd_bus_message *msg) {
        m->call.msg = msg;
        m->call.open = true;
        m->call.accepted = false;
}

static void call_accept(Manager *m) {
        if (!m->call.open || m->call.accepted)
                return;
        m->call.accepted = true;
        /* Once for all its lookups; a failure is logged, as a lookup's
         * alone: what it tracked is tracked until the stop. */
        if (m->call.unsaved)
                (void) manager_save_tracked(m);
        m->call.unsaved = false;
        manager_announce(m); /* before its reply, as manager_track() does */
}

void manager_call_accept(Manager *m, sd_bus_message *msg) {
        if (msg == m->call.msg)
                call_accept(m);
}

static int call_root_path_cmp(const void *a, const void *b) {
        return strcmp(((const struct CallRoot *) a)->path, ((const struct CallRoot *) b)->path);
}

/* By path, then the entry of a lookup that added it first. */
static int call_root_cmp(const void *a, const void *b) {
        const struct CallRoot *x = a, *y = b;

        return call_root_path_cmp(a, b) ?: (int) x->configured - (int) y->configured;
}

/* A call refused before it was accepted: the roots its lookups added go
 * again, and the configured ones they marked as asked for are the
 * configuration's alone again.  All taken out of the roots at once, the
 * hashes rebuilt once, then what each one alone needed is pruned (as
 * manager_forget_waiting_roots() does): one at a time, each a look through
 * every root, a refused ApplyBatch of 8,000 new paths would take seconds.  One
 * gone from the roots meanwhile (forgotten while the call read the kernel's
 * events) needs nothing more.  A path noted twice (tracked, forgotten,
 * tracked again) is taken out if one of its lookups added it.  Returns
 * whether tracked.json has one of them (another change saved it
 * meanwhile): the caller saves it again. */
static bool call_roots_undo(Manager *m) {
        struct CallRoot *roots = m->call.roots;
        size_t n = 0, j = 0;
        bool save = false, taken = false;

        if (m->call.n_roots == 0)
                return false;
        /* Sorted, one per path (one that added it first), for bsearch(). */
        qsort(roots, m->call.n_roots, sizeof *roots, call_root_cmp);
        for (size_t k = 0; k < m->call.n_roots; k++) {
                if (n > 0 && streq(roots[n - 1].path, roots[k].path)) {
                        free(roots[k].path);
                        continue;
                }
                roots[n] = roots[k];
                roots[n++].taken = false;
        }
        m->call.n_roots = n;
        for (size_t i = 0; i < m->n_track_roots; i++) {
                const struct CallRoot key = { .path = m->track_roots[i] },
                                      *c = bsearch(&key, roots, n, sizeof *roots, call_root_path_cmp);

                if (c)
                        save = save || m->track_roots_saved[i];
                if (c && c->configured)
                        m->track_roots_called[i] = false;
                else if (c) {
                        roots[c - roots].taken = taken = true;
                        free(m->track_roots[i]);
                        continue;
                }
                m->track_roots[j] = m->track_roots[i];
                m->track_roots_called[j] = m->track_roots_called[i];
                m->track_roots_saved[j++] = m->track_roots_saved[i];
        }
        if (!taken)
                return save; /* nothing moved */
        m->n_track_roots = j;
        m->track_roots[j] = NULL;
        track_root_hashes_rebuild(m);
        /* Unannounced: held since the call began (manager_announce()). */
        for (size_t k = 0; k < n; k++)
                if (roots[k].taken)
                        manager_untracked_prune(m, roots[k].path, UNTRACK_UNDONE);
        return save;
}

void manager_call_end(Manager *m, bool failed) {
        bool save = false;

        if (!m->call.open)
                return;
        if (failed && !m->call.accepted) {
                save = call_roots_undo(m);
                call_marks_undo(m);
                m->call.unsaved = false;
        } else
                call_accept(m);
        for (size_t k = 0; k < m->call.n_roots; k++)
                free(m->call.roots[k].path);
        m->call.roots = mfree(m->call.roots);
        m->call.n_roots = m->call.n_roots_allocated = 0;
        for (size_t k = 0; k < m->call.n_marks; k++)
                free(m->call.marks[k].path);
        m->call.marks = mfree(m->call.marks);
        m->call.n_marks = m->call.n_marks_allocated = 0;
        m->call.marked = u64set_free(m->call.marked);
        m->call.counted = false;
        m->call.open = false;
        m->call.msg = NULL;
        if (save)
                (void) manager_save_tracked(m);
        /* What is left: groups its lookups added within the tracked
         * subtrees (as their mkdir events would), or the events it read. */
        manager_announce(m);
}

/* Access checks (access.h): the owner of a group's cgroup.freeze, without
 * adding anything to the model.  The fd freezerd writes through when it has
 * one (the very file a write would reach), else the file opened O_PATH beneath
 * the root: no symlinks, no other mount. */
int manager_freeze_owner(Manager *m, const char *path, uid_t *ret, sd_bus_error *error) {
        _cleanup_free_ char *norm = NULL;
        _cleanup_close_ int dirfd = -1, fd = -1;
        struct stat st;
        Group *g;
        int r;

        r = normalize_path(path, &norm, error);
        if (r < 0)
                return r;
        g = tree_get(m->tree, norm);
        if (g && g->userdata && group_data(g)->freeze_fd >= 0) {
                if (fstat(group_data(g)->freeze_fd, &st) < 0) {
                        r = -errno;
                        errno_to_bus_error(r, g, "look up the owner of", error);
                        return r;
                }
        } else {
                dirfd = cg_openat_beneath(m->root_fd, cg_path_relative(norm), O_PATH | O_DIRECTORY, 0);
                if (dirfd < 0) {
                        manager_path_error(error, dirfd, norm);
                        return dirfd;
                }
                fd = openat(dirfd, "cgroup.freeze", O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT) {
                        *ret = (uid_t) -1; /* the hierarchy's root: no flag, nobody's */
                        return 0;
                }
                if (fd < 0 || fstat(fd, &st) < 0) {
                        r = -errno;
                        bus_error_set_failed(error, r, "Cannot look up the owner of %s: %s", CG_NAMED(norm),
                                             strerror(-r));
                        return r;
                }
        }
        *ret = S_ISREG(st.st_mode) ? st.st_uid : (uid_t) -1;
        return 0;
}

int manager_group_frozen_usec(Manager *m, Group *g, uint64_t *ret) {
        _cleanup_free_ char *rel = NULL;
        _cleanup_close_ int fd = -1;
        char buf[512];
        ssize_t n;
        int r;

        if (streq(g->path, "/"))
                rel = strdup("cgroup.stat.local");
        else if (asprintf(&rel, "%s/cgroup.stat.local", cg_path_relative(g->path)) < 0)
                rel = NULL;
        if (!rel)
                return -ENOMEM;
        fd = cg_openat_beneath(m->root_fd, rel, O_RDONLY, 0);
        if (fd == -ENOENT) {
                *ret = 0; /* older kernels: no cgroup.stat.local */
                return 0;
        }
        if (fd < 0)
                return fd;
        n = cg_read_fd(fd, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        r = cg_parse_stat_local_frozen_usec(buf, (size_t) n, ret);
        if (r == -ENODATA) {
                *ret = 0;
                return 0;
        }
        return r;
}

/* ---- setup -------------------------------------------------------------------------------------------- */

static int config_copy_track(Config *dst, const Config *src) {
        char **n = calloc(src->n_track + 1, sizeof(char *));
        if (!n)
                return -ENOMEM;
        for (size_t i = 0; i < src->n_track; i++) {
                n[i] = strdup(src->track[i]);
                if (!n[i]) {
                        for (size_t j = 0; j < i; j++)
                                free(n[j]);
                        free(n);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < dst->n_track; i++)
                free(dst->track[i]);
        free(dst->track);
        dst->track = n;
        dst->n_track = src->n_track;
        return 0;
}

/* /proc/self/cgroup: a line per hierarchy, each with freezerd's path. */
#define SELF_CGROUP_MAX (64 * 1024)

/* Where freezerd itself runs, from /proc/self/cgroup ("0::/path"), as an API
 * path below our root (NULL if it is not below it).  Read again by every call
 * that freezes, once per call: anyone may move freezerd (echo PID >
 * cgroup.procs) after its start.  If it cannot be read, the last answer stays. */
static void manager_find_self(Manager *m) {
        _cleanup_free_ char *text = NULL;
        const char *self = NULL;
        char *line;
        size_t l;
        ssize_t n;

        if (!m->root_cgroup)
                return; /* our root is not on the cgroup2 mount we know of */
        /* Held open: read again at every freeze call, one pread() each (a
         * /proc file reads afresh from offset 0), not an open, two reads and
         * a close. */
        if (m->self_cgroup_fd < 0) {
                m->self_cgroup_fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
                if (m->self_cgroup_fd < 0) {
                        log_debug_errno(errno, "Cannot open /proc/self/cgroup: %m");
                        return;
                }
        }
        text = malloc(SELF_CGROUP_MAX);
        if (!text)
                return;
        n = cg_read_fd(m->self_cgroup_fd, text, SELF_CGROUP_MAX);
        if (n < 0) {
                log_debug_errno((int) n, "Cannot read /proc/self/cgroup: %m");
                return;
        }
        line = text;
        while (strncmp(line, "0::", 3) != 0) {
                line = strchr(line, '\n');
                if (!line)
                        return; /* no cgroup2 line */
                line++;
        }
        line += 3;
        line[strcspn(line, "\n")] = 0;

        l = strlen(m->root_cgroup);
        if (streq(line, l > 0 ? m->root_cgroup : "/"))
                self = "/";
        else if (strncmp(line, m->root_cgroup, l) == 0 && line[l] == '/')
                self = line + l;
        if (streq_ptr(self, m->self_path))
                return;
        free(m->self_path);
        m->self_path = self ? strdup(self) : NULL;
        if (m->self_path)
                log_debug("freezerd runs in %s below its root: it will not freeze that.", m->self_path);
}

/* Open the cgroup.freeze of every group from the mount down to our root's
 * parent (see manager_outer_frozen() and manager_reread_outer()); none when
 * the root is the mount.  Watched and read once the root is attached
 * (manager_watch_outer()). */
static void manager_open_outer(Manager *m, const char *mount) {
        const char *rel = m->root_cgroup;

        for (const char *p = rel + (*rel == '/'); (p = strchr(p, '/')); p++) {
                _cleanup_free_ char *dir = NULL, *path = NULL;
                struct OuterGroup *a;
                int fd;

                if (asprintf(&dir, "%s%.*s", mount, (int) (p - rel), rel) < 0 ||
                    asprintf(&path, "%s/cgroup.freeze", dir) < 0)
                        return;
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (fd < 0) {
                        log_debug_errno(errno, "Cannot open %s: %m", path);
                        continue;
                }
                a = reallocarray(m->outer, m->n_outer + 1, sizeof *a);
                if (!a) {
                        close(fd);
                        return;
                }
                a[m->n_outer++] = (struct OuterGroup) { .path = TAKE_PTR(dir), .freeze_fd = fd };
                m->outer = a;
        }
}

/* Watch the flags above the root, then read them: a write after the watch is
 * queued, one before it is read.  A group frozen from up there is frozen by a
 * parent, as by a flag in the model, and its thaw or freeze is seen as it
 * comes.  Without a watch (out of inotify watches) it is seen at the next
 * write of one of ours only, as before, and the log says so. */
static void manager_watch_outer(Manager *m) {
        for (size_t i = 0; i < m->n_outer; i++) {
                struct OuterGroup *o = &m->outer[i];
                /* Not FREEZE_WATCH_MASK: IN_DONT_FOLLOW would watch the
                 * /proc/self/fd link instead of the file it names. */
                int wd = watch_fd(m, o->freeze_fd, IN_MODIFY);

                if (wd >= 0 && wdmap_put(m->wds, wd, o, WD_KIND_OUTER) < 0) {
                        (void) inotify_rm_watch(m->inotify_fd, wd);
                        wd = -ENOMEM;
                }
                if (wd < 0)
                        log_warning_errno(wd, "Cannot watch %s/cgroup.freeze, above the cgroup root: %m.  A freeze "
                                          "or thaw of it is seen only after an inotify overflow.", o->path);
        }
        manager_reread_outer(m, false);
}

int manager_new(struct event_base *base, const Config *config, const char *cgroup_root, const char *runtime_dir,
                const char *state_dir, Manager **ret) {
        const char *delay;
        Manager *m;
        int r;

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->event_base = base;
        m->root_fd = -1;
        m->self_cgroup_fd = -1;
        m->runtime_lock_fd = m->state_lock_fd = -1;
        m->inotify_fd = m->events_epfd = -1;
        m->scan_saved_cwd = -1;
        m->subscribed = (Subscribers) { .manager = m, .kind = SUBSCRIPTION_ALL };
        m->subscribed_groups = (Subscribers) { .manager = m, .kind = SUBSCRIPTION_GROUPS };
        m->subscribed_states = (Subscribers) { .manager = m, .kind = SUBSCRIPTION_STATES };
        m->config.default_timeout_usec = config->default_timeout_usec;
        m->config.realtime_writes = config->realtime_writes;
        if (config_copy_track(&m->config, config) < 0) {
                free(m);
                return -ENOMEM;
        }

        m->cgroup_root = strdup(cgroup_root);
        m->runtime_dir = runtime_dir ? strdup(runtime_dir) : NULL;
        m->state_dir = state_dir ? strdup(state_dir) : NULL;
        m->tree = tree_new();
        m->wds = wdmap_new();
        if (!m->cgroup_root || !m->tree || !m->wds || (runtime_dir && !m->runtime_dir) ||
            (state_dir && !m->state_dir)) {
                manager_free(m);
                return -ENOMEM;
        }

        m->test_no_lookup_group = getenv("FREEZERD_TEST_NO_LOOKUP_GROUP");
        if (m->test_no_lookup_group)
                log_warning("FREEZERD_TEST_NO_LOOKUP_GROUP: LookupGroup() is answered UnknownMethod, as by an "
                            "older freezerd (for tests only).");
        /* The one failure a reload's new roots can meet, which no test could
         * cause otherwise (manager_reload()). */
        m->test_track_root_enomem = getenv("FREEZERD_TEST_TRACK_ROOT_ENOMEM");
        if (m->test_track_root_enomem)
                log_warning("FREEZERD_TEST_TRACK_ROOT_ENOMEM=%s: adding that track root, or one below it, "
                            "fails as out of memory would (for tests only).",
                            m->test_track_root_enomem);

        delay = getenv("FREEZERD_TEST_WRITE_DELAY_USEC");
        if (delay) {
                m->test_write_delay_usec = strtoull(delay, NULL, 10);
                log_warning("FREEZERD_TEST_WRITE_DELAY_USEC=%" PRIu64 ": every cgroup.freeze write is slowed "
                            "down (for crash tests only).", m->test_write_delay_usec);
        }

        m->root_fd = open(cgroup_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (m->root_fd < 0) {
                r = log_error_errno(errno, "Cannot open cgroup root %s: %m", cgroup_root);
                manager_free(m);
                return r;
        }
        r = cg_fd_is_cgroup2_dir(m->root_fd);
        if (r <= 0) {
                r = log_error_errno(r < 0 ? r : ENOTDIR, "%s is not a directory on a cgroup2 file system", cgroup_root);
                manager_free(m);
                return r;
        }
        r = cg_dir_id(m->root_fd, NULL, &tree_root(m->tree)->id);
        if (r < 0) {
                r = log_error_errno(r, "Cannot stat cgroup root %s: %m", cgroup_root);
                manager_free(m);
                return r;
        }

        {
                /* Where the root is in the hierarchy, as /proc/self/cgroup names cgroups. */
                _cleanup_free_ char *mount = NULL;
                size_t l;

                if (cg_find_cgroup2_mount(NULL, &mount) >= 0) {
                        l = strlen(mount);
                        if (strncmp(m->cgroup_root, mount, l) == 0 &&
                            (m->cgroup_root[l] == 0 || m->cgroup_root[l] == '/'))
                                m->root_cgroup = m->cgroup_root + l;
                }
                if (m->root_cgroup)
                        manager_open_outer(m, mount);
        }
        manager_find_self(m);

        m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (m->inotify_fd < 0) {
                r = log_error_errno(errno, "inotify_init1() failed: %m");
                manager_free(m);
                return r;
        }
        m->events_epfd = epoll_create1(EPOLL_CLOEXEC);
        if (m->events_epfd < 0) {
                r = log_error_errno(errno, "epoll_create1() failed: %m");
                manager_free(m);
                return r;
        }
        m->inotify_event = event_new(base, m->inotify_fd, EV_READ | EV_PERSIST, on_inotify, m);
        m->events_epoll_event = event_new(base, m->events_epfd, EV_READ | EV_PERSIST, on_inotify, m);
        m->inotify_resume = evtimer_new(base, on_inotify_resume, m);
        m->holdback_timer = evtimer_new(base, on_holdback, m);
        m->repoll_timer = evtimer_new(base, on_repoll, m);
        if (!m->inotify_event || !m->events_epoll_event || !m->inotify_resume || !m->holdback_timer ||
            !m->repoll_timer ||
            event_add(m->inotify_event, NULL) < 0 || event_add(m->events_epoll_event, NULL) < 0) {
                manager_free(m);
                return -ENOMEM;
        }

        *ret = m;
        return 0;
}

static int manager_attach_root(Manager *m) {
        Group *root = tree_root(m->tree);
        _cleanup_close_ int dirfd = -1;
        Watches w;
        int events_fd, r;
        bool freeze;

        if (root->userdata)
                return 0;
        /* The root's parent's flag (tree_set_outer_freeze()) before the
         * root is read. */
        manager_watch_outer(m);
        dirfd = cg_openat_beneath(m->root_fd, ".", O_RDONLY | O_DIRECTORY, 0);
        if (dirfd < 0)
                return dirfd;
        /* The mount's root has no cgroup.events or cgroup.freeze: it can never be frozen. */
        events_fd = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        r = watch_group_fd(m, NULL, "", dirfd, true, &w);
        if (r < 0) {
                closep(&events_fd);
                return r;
        }
        r = group_attach(m, root, events_fd, w);
        if (r < 0)
                return r;
        group_data(root)->no_events = events_fd < 0;
        if (events_fd >= 0) {
                /* Below the mount: the root's own rmdir is announced only to the
                 * directory above it (kernfs sends no IN_DELETE_SELF, and no
                 * IN_IGNORED while we hold the root open). */
                _cleanup_close_ int parentfd = openat(m->root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                int wd;

                if (parentfd < 0)
                        return log_error_errno(errno, "Cannot watch the directory above the cgroup root: %m");
                wd = watch_fd(m, parentfd, IN_DELETE | IN_ONLYDIR | IN_EXCL_UNLINK);
                if (wd < 0)
                        return log_error_errno(wd, "Cannot watch the directory above the cgroup root: %m");
                r = wdmap_put(m->wds, wd, root, WD_KIND_ROOT_PARENT);
                if (r < 0)
                        return r;
        }
        if (group_read_freeze_flag(m, root, &freeze) >= 0)
                tree_set_freeze(m->tree, root, freeze);
        r = group_read_events(m, root);
        tree_set_tracked(m->tree, root, false);
        return group_start_following(m, root, r >= 0);
}

static int manager_apply_track_config(Manager *m, char **track) {
        int r;

        for (char **p = track; p && *p; p++) {
                Group *g;
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

                /* A reload: tracked already (manager_track() would look for
                 * missing groups in the whole subtree, a Track()'s job).  A
                 * transient root is the configuration's now: it stays once
                 * its holders left. */
                if (manager_is_track_root(m, *p)) {
                        transient_drop(m, *p);
                        continue;
                }
                g = tree_get(m->tree, *p);
                if (g && g->tracked) {
                        /* In a subtree tracked already (["/a"] to ["/a/x"]): a root
                         * now, with no scan, before the old root is dropped. */
                        r = track_root_add(m, *p, false, true, NULL);
                        if (r < 0)
                                return log_error_errno(r, "Cannot track %s: %m", *p);
                        continue;
                }
                if (streq(*p, "/")) {
                        r = track_root_add(m, "/", false, true, NULL);
                        if (r < 0)
                                return log_error_errno(r, "Cannot track %s: %m", m->cgroup_root);
                        r = manager_track_existing(m, tree_root(m->tree));
                        if (r < 0)
                                return log_error_errno(r, "Cannot track %s: %m", m->cgroup_root);
                        continue;
                }
                r = manager_track_root(m, *p, false, false, &g, &error);
                if (r >= 0)
                        continue;
                /* As where the root is added below: a reload keeps the
                 * configuration before (manager_reload()), a start fails. */
                if (r == -ENOMEM)
                        return log_error_errno(r, "Cannot track %s: %m", *p);
                if (!sd_bus_error_has_name(&error, BUS_ERROR_NO_SUCH_GROUP)) {
                        log_warning("Cannot track %s: %s", *p, error.message);
                        continue;
                }
                /* Made later, it is tracked then (manager_track_pending()). */
                r = track_root_add(m, *p, false, true, NULL);
                if (r < 0)
                        return log_error_errno(r, "Cannot track %s: %m", *p);
                log_notice("%s does not exist yet: it is tracked once it is made.", *p);
        }
        return 0;
}

static int restore_flag(const char *cgroup_root, const JournalEntry *e, void *userdata) {
        Manager *m = userdata;
        _cleanup_close_ int other_root = -1, dirfd = -1, fd = -1;
        int rootfd = m->root_fd, r;

        /* Written by a freezerd with another --cgroup-root: the path is below
         * that one.  The same names below ours are other groups. */
        if (cgroup_root && !streq(cgroup_root, m->cgroup_root)) {
                other_root = open(cgroup_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (other_root < 0)
                        return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
                r = cg_fd_is_cgroup2_dir(other_root);
                if (r <= 0)
                        return r < 0 ? r : -ENOENT;
                rootfd = other_root;
        }
        dirfd = cg_openat_beneath(rootfd, cg_path_relative(e->path), O_PATH | O_DIRECTORY, 0);
        if (dirfd < 0)
                return dirfd == -ENODEV || dirfd == -ENOTDIR ? -ENOENT : dirfd;
        /* Removed and made again since the stop (a unit restarted): a new
         * group, whose flag the batch never wrote. */
        if (e->cgroup_id != 0) {
                uint64_t id;
                r = cg_dir_id(dirfd, NULL, &id);
                if (r < 0)
                        return r == -ENODEV ? -ENOENT : r;
                if (id != e->cgroup_id)
                        return -ESTALE;
        }
        fd = openat(dirfd, "cgroup.freeze", O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno != ENODEV && errno != ENOENT) {
                /* Not to be written (a read-only mount, say): one that has
                 * its flag needs no write, and is no failure to keep for the
                 * next start, where it could undo a later change. */
                int err = errno;
                _cleanup_close_ int ro = openat(dirfd, "cgroup.freeze", O_RDONLY | O_CLOEXEC);
                bool had;
                if (ro >= 0 && cg_read_freeze_fd(ro, &had) >= 0 && had == e->prev_freeze)
                        return 1;
                errno = err;
        }
        if (fd < 0)
                return errno == ENODEV ? -ENOENT : -errno;
        /* A batch killed halfway wrote some of its flags: the others need
         * nothing (and the summary says how many had it already). */
        bool cur;
        if (cg_read_freeze_fd(fd, &cur) >= 0 && cur == e->prev_freeze)
                return 1;
        int w = write_result(pwrite(fd, e->prev_freeze ? "1" : "0", 1, 0), 1);
        if (w < 0)
                return w == -ENODEV ? -ENOENT : w;
        log_debug("Restored %s to freeze=%d.", e->path, e->prev_freeze);
        return 0;
}

static int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        for (char *p = copy + 1;; p++) {
                if (*p == '/' || *p == 0) {
                        char c = *p;
                        *p = 0;
                        if (mkdir(copy, mode) < 0 && errno != EEXIST)
                                return -errno;
                        *p = c;
                        if (c == 0)
                                return 0;
                }
        }
}

/* One freezerd per directory.  A second one (started by hand while the service
 * runs) would take the first's journals for a crash's and undo its batches in
 * flight, and the two would overwrite each other's tracked.json.  The flock()
 * ends with the process, SIGKILL included: a restart after a crash finds it
 * free.  The file stays: removing it would let a freezerd that opened it just
 * before lock a file that the next one no longer sees. */
static int lock_dir(const char *dir, const char *what, int held_fd, bool may_be_read_only, bool *ret_read_only,
                    int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st, held;
        bool read_only = false;
        char buf[32];
        int n;

        if (asprintf(&path, "%s/lock", dir) < 0)
                return log_error_errno(ENOMEM, "Out of memory.");
        /* 0600: flock() needs no write access, so whoever can open it can hold it. */
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EROFS && may_be_read_only) {
                /* A read-only file system (a read-only /var): nothing can be
                 * written there, by us or by another freezerd, and what is
                 * there can still be read.  A lock file made before still
                 * locks (flock() needs no write access); without one there is
                 * nothing two of us could overwrite. */
                read_only = true;
                fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 && errno == ENOENT) {
                        *ret_read_only = true;
                        *ret_fd = -1;
                        return 0;
                }
        }
        if (fd < 0)
                return log_error_errno(errno, "Cannot open %s: %m", path);
        if (ret_read_only)
                *ret_read_only = read_only;
        /* The runtime and state directories may be one: then we hold it already. */
        if (held_fd >= 0 && fstat(fd, &st) == 0 && fstat(held_fd, &held) == 0 && st.st_dev == held.st_dev &&
            st.st_ino == held.st_ino) {
                *ret_fd = -1;
                return 0;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                ssize_t k;
                long pid = 0;

                if (errno != EWOULDBLOCK)
                        return log_error_errno(errno, "Cannot lock %s: %m", path);
                /* Read-only, the file holds the PID of whoever could write it
                 * last, not necessarily the holder's. */
                k = read_only ? 0 : pread(fd, buf, sizeof buf - 1, 0);
                if (k > 0) {
                        buf[k] = 0;
                        pid = strtol(buf, NULL, 10);
                }
                if (pid > 0)
                        return log_error_errno(EBUSY, "Another freezerd (PID %ld) is running with %s %s.", pid,
                                               what, dir);
                return log_error_errno(EBUSY, "Another freezerd is running with %s %s.", what, dir);
        }
        /* The PID is for the message above and for people: the lock is what counts. */
        n = snprintf(buf, sizeof buf, "%d\n", (int) getpid());
        if (read_only)
                ; /* the PID stays unsaid: the lock is what counts */
        else {
                int w = ftruncate(fd, 0) < 0 ? -errno : write_result(pwrite(fd, buf, (size_t) n, 0), (size_t) n);
                if (w < 0)
                        log_warning_errno(w, "Cannot write our PID to %s: %m", path);
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Subtrees tracked beyond the configuration (Track(), or a request outside the
 * tracked subtrees) survive restarts in <state-dir>/tracked.json.  Written to
 * a temporary file, fsync'd, renamed over it: a save that fails leaves the
 * file as it was.  Returns 0 (also where nothing is saved now: no state
 * directory, before the start, deferred to the end of a reload) or -errno,
 * logged.  Once saved, Manager.track_roots_saved says so of each root. */
static int manager_save_tracked(Manager *m) {
        _cleanup_free_ char *tmp = NULL, *final = NULL;
        json_object *root, *arr;
        const char *text;
        FILE *f = NULL;
        int r = 0;

        if (!m->state_dir || !m->started)
                return 0;
        if (m->reloading) {
                m->save_pending = true;
                return 0;
        }
        m->track_order_unsaved = false;
        root = json_object_new_object();
        arr = json_object_new_array();
        if (!root || !arr) {
                json_object_put(root);
                json_object_put(arr);
                log_warning("Cannot save tracked subtrees in %s: out of memory", m->state_dir);
                return -ENOMEM;
        }
        json_object_object_add(root, "tracked", arr);
        /* What the paths are relative to: see manager_load_tracked(). */
        json_object_object_add(root, "root", json_object_new_string(m->cgroup_root));
        /* What calls asked for, the configuration's roots among them: a
         * configuration that drops one later leaves it tracked. */
        for (size_t i = 0; i < m->n_track_roots; i++)
                if (m->track_roots_called[i])
                        json_object_array_add(arr, json_object_new_string(m->track_roots[i]));
        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (text && asprintf(&tmp, "%s/.tracked.json.tmp", m->state_dir) < 0)
                tmp = NULL;
        if (tmp && asprintf(&final, "%s/tracked.json", m->state_dir) < 0)
                final = NULL;
        if (!final) {
                log_warning("Cannot save tracked subtrees in %s: out of memory", m->state_dir);
                r = -ENOMEM;
        } else if (!(f = fopen(tmp, "we"))) {
                r = -errno;
                log_warning_errno(r, "Cannot save tracked subtrees in %s: %m", m->state_dir);
        } else {
                /* The first failure's errno: fclose() may set its own. */
                if (fputs(text, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 || fsync(fileno(f)) < 0)
                        r = -errno;
                if (fclose(f) != 0 && r == 0)
                        r = -errno;
                if (r == 0 && rename(tmp, final) < 0)
                        r = -errno;
                if (r < 0) {
                        log_warning_errno(r, "Cannot save tracked subtrees to %s: %m", final);
                        (void) unlink(tmp);
                }
        }
        json_object_put(root);
        if (r == 0)
                for (size_t i = 0; i < m->n_track_roots; i++)
                        m->track_roots_saved[i] = m->track_roots_called[i];
        return r;
}

/* tracked.json that cannot be used: the message says why, and the file is
 * kept as tracked.json.broken for a human, since the next save would write
 * over it (a hand edit's typo lost with the subtrees it named). */
static void tracked_broken(const char *path, const char *why) {
        _cleanup_free_ char *broken = NULL;

        /* Next to one kept by an earlier start, not over it: that one may hold hand edits. */
        if (rename_broken(AT_FDCWD, path, &broken) >= 0)
                log_warning("Cannot read %s: %s; kept as %s, the subtrees it tracked are not tracked again.", path,
                            why, broken);
        else
                log_warning("Cannot read %s: %s; the subtrees it tracked are not tracked again.", path, why);
}

/* The API path below new_root of the group at path below old_root (absolute
 * directories, as realpath() makes them): 1 and *ret, or 0 if it is not
 * below new_root. */
static int tracked_path_moved(const char *old_root, const char *path, const char *new_root, char **ret) {
        _cleanup_free_ char *abs = NULL;
        size_t n = strlen(new_root);
        const char *rest;

        if (asprintf(&abs, "%s%s", old_root, streq(path, "/") ? "" : path) < 0)
                return -ENOMEM;
        if (streq(new_root, "/"))
                rest = abs;
        else if (strncmp(abs, new_root, n) == 0 && (abs[n] == '/' || abs[n] == 0))
                rest = abs + n;
        else
                return 0;
        *ret = strdup(rest[0] ? rest : "/");
        return *ret ? 1 : -ENOMEM;
}

static void manager_load_tracked(Manager *m) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        enum json_tokener_error e = json_tokener_success;
        json_object *root, *arr;
        struct stat st;
        size_t len = 0;
        int r;

        if (!m->state_dir || asprintf(&path, "%s/tracked.json", m->state_dir) < 0)
                return;
        /* O_NONBLOCK: a FIFO of that name must not hold up the start. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) {
                if (errno != ENOENT)
                        log_warning_errno(errno, "Cannot read %s, the subtrees it tracked are not tracked again: %m",
                                          path);
                return;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                tracked_broken(path, "not a regular file");
                return;
        }
        r = read_full_fd(fd, 64 * 1024 * 1024, &text, &len);
        if (r < 0) {
                log_warning_errno(r, "Cannot read %s, the subtrees it tracked are not tracked again: %m", path);
                return;
        }
        if (len == 0) {
                tracked_broken(path, "it is empty");
                return;
        }
        root = strlen(text) == len ? json_tokener_parse_verbose(text, &e) : NULL;
        if (!root || !json_object_object_get_ex(root, "tracked", &arr) || !json_object_is_type(arr, json_type_array)) {
                _cleanup_free_ char *why = NULL;
                if (strlen(text) != len)
                        why = strdup("not JSON: a NUL byte");
                else if (!root && asprintf(&why, "not JSON: %s",
                                           e != json_tokener_success ? json_tokener_error_desc(e) : "null") < 0)
                        why = NULL;
                else if (root)
                        why = strdup("no \"tracked\" array in it");
                tracked_broken(path, why ?: "not JSON");
                json_object_put(root);
                return;
        }
        /* Saved by a freezerd with another --cgroup-root (a file that names
         * none, from an older freezerd: taken as ours), its paths are below that root: the same
         * paths below ours are other groups.  Each is tracked where it is below
         * ours, if it is. */
        json_object *saved_root = NULL;
        const char *old_root = NULL;
        if (json_object_object_get_ex(root, "root", &saved_root) && json_object_is_type(saved_root, json_type_string) &&
            json_object_get_string(saved_root)[0] == '/' && !streq(json_object_get_string(saved_root), m->cgroup_root)) {
                old_root = json_object_get_string(saved_root);
                log_notice("%s was saved by a freezerd with cgroup root %s (now %s): its subtrees are tracked where "
                           "they are below %s.",
                           path, old_root, m->cgroup_root, m->cgroup_root);
        }
        for (size_t i = 0; i < json_object_array_length(arr); i++) {
                json_object *v = json_object_array_get_idx(arr, i);
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_free_ char *moved = NULL;
                const char *p;
                if (!json_object_is_type(v, json_type_string)) {
                        /* A hand edit gone wrong: said, not dropped in silence
                         * by the next save. */
                        const char *shown = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                                                      JSON_C_TO_STRING_NOSLASHESCAPE);
                        /* (At most 100 bytes of it, an entry may be a whole
                         * object; cut before a character, not inside one:
                         * json-c writes UTF-8 as it is.) */
                        size_t shown_len = shown ? strlen(shown) : 0, cut = shown_len < 100 ? shown_len : 100;
                        while (cut > 0 && cut < shown_len && ((unsigned char) shown[cut] & 0xc0) == 0x80)
                                cut--;
                        log_warning("Entry %zu of %s is no path (%.*s%s): not tracked, and the next save of the "
                                    "file leaves it out.",
                                    i + 1, path, (int) cut, shown ?: "", !shown ? "?" : cut < shown_len ? "..." : "");
                        continue;
                }
                p = json_object_get_string(v);
                if (old_root) {
                        r = tracked_path_moved(old_root, p, m->cgroup_root, &moved);
                        if (r == 0)
                                log_notice("%s, tracked before the restart below cgroup root %s, is not below %s: "
                                           "not tracked.",
                                           p, old_root, m->cgroup_root);
                        if (r <= 0)
                                continue;
                        p = moved;
                }
                {
                        /* Configured too: a call asked for it, which the root
                         * now says, with no second look through its subtree. */
                        _cleanup_free_ char *norm = NULL;
                        if (normalize_path(p, &norm, &error) >= 0 && manager_is_track_root(m, norm)) {
                                (void) track_root_add(m, norm, true, true, NULL); /* there already: allocates nothing */
                                continue;
                        }
                        sd_bus_error_free(&error);
                }
                if (manager_track(m, p, false, NULL, &error) >= 0)
                        continue;
                if (!sd_bus_error_has_name(&error, BUS_ERROR_NO_SUCH_GROUP)) {
                        log_warning("Cannot track %s again, tracked before the restart: %s", p, error.message);
                        continue;
                }
                /* As a configured entry made later, and as a tracked subtree
                 * removed while freezerd runs: it waits (manager_track_pending()). */
                _cleanup_free_ char *norm = NULL;
                sd_bus_error_free(&error);
                if (normalize_path(p, &norm, &error) < 0 || track_root_add(m, norm, true, true, NULL) < 0)
                        log_warning("Cannot keep %s, tracked before the restart, waiting to be made: out of memory.",
                                    p);
                else
                        log_notice("%s, tracked before the restart, does not exist now: it is tracked again once "
                                   "it is made.", norm);
        }
        json_object_put(root);
}

static int lock_runtime_dir(Manager *m) {
        int r = mkdir_p(m->runtime_dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create runtime directory %s: %m", m->runtime_dir);
        return lock_dir(m->runtime_dir, "runtime directory", m->state_lock_fd, false, NULL, &m->runtime_lock_fd);
}

static int lock_state_dir(Manager *m) {
        bool read_only = false;
        int r;

        r = mkdir_p(m->state_dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create state directory %s: %m", m->state_dir);
        /* The state directory only keeps tracked.json: read-only, it is read,
         * and freezerd runs, saying that Track() and Untrack() of roots fail
         * (their save would) and that what lookups track will not outlive it
         * (a state that cannot be kept is no reason to refuse to freeze).
         * The runtime
         * directory must be writable: the batch journals and the private
         * socket are there. */
        r = lock_dir(m->state_dir, "state directory", m->runtime_lock_fd, true, &read_only, &m->state_lock_fd);
        if (r < 0)
                return r;
        if (read_only)
                log_warning("State directory %s is on a read-only file system: %s/tracked.json is read, but "
                            "cannot be saved: Track() and Untrack() of the roots it would change fail, and "
                            "subtrees a lookup tracks (a path outside the tracked subtrees) are tracked until "
                            "the stop only.",
                            m->state_dir, m->state_dir);
        return 0;
}

int manager_start(Manager *m) {
        int r;

        /* Both directories are ours alone before anything in them is read or
         * written: journals, the private socket (bound later), tracked.json.
         * A runtime directory that does not exist is made and locked after
         * a state directory that does, where it is locked first otherwise
         * (its errors first): the one another freezerd holds exists, so a
         * freezerd refused makes nothing: no runtime directory, no lock
         * file left behind. */
        bool runtime_later = m->runtime_dir && m->state_dir && access(m->runtime_dir, F_OK) < 0 && errno == ENOENT &&
                             access(m->state_dir, F_OK) == 0;
        if (m->runtime_dir && !runtime_later) {
                r = lock_runtime_dir(m);
                if (r < 0)
                        return r;
        }
        if (m->state_dir) {
                r = lock_state_dir(m);
                if (r < 0)
                        return r;
        }
        if (runtime_later) {
                r = lock_runtime_dir(m);
                if (r < 0)
                        return r;
        }
        if (m->runtime_dir) {
                r = journal_new(m->runtime_dir, m->cgroup_root, &m->journal);
                if (r < 0)
                        return log_error_errno(r, "Out of memory.");
                /* A batch interrupted by a crash is undone before anything is
                 * read; the groups it cannot restore are kept in m->journal
                 * for journal_forget(). */
                r = journal_recover_into(m->journal, journal_boot_id(), restore_flag, m, &m->journal_seq);
                if (r < 0)
                        return log_error_errno(r, "Cannot recover batch journals in %s: %m", m->runtime_dir);
        }

        r = manager_attach_root(m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch cgroup root %s: %m", m->cgroup_root);
        r = manager_apply_track_config(m, m->config.track);
        if (r < 0)
                return r;
        manager_load_tracked(m);
        /* The order of the roots is the one tracked.json has: the touches
         * of its roots configured too (track_root_add()) kept it.  No call
         * came yet: the roots calls asked for are the file's. */
        m->track_order_unsaved = false;
        for (size_t i = 0; i < m->n_track_roots; i++)
                m->track_roots_saved[i] = m->track_roots_called[i];
        m->started = true;
        /* A tracked.json of an older freezerd may list any number that wait. */
        manager_forget_waiting_roots(m);
        return 0;
}

/* Drops the roots that no call asked for and the configuration does not
 * name: only the configuration adds roots no call asked for, so these are
 * what an earlier configuration tracked.  Taken from the state, not from a
 * list of the configuration before: a reload that failed halfway leaves
 * none that a later one would not drop. */
static void manager_drop_unconfigured_roots(Manager *m) {
        U64Set *configured = NULL;

        for (char **p = m->config.track; p && *p; p++)
                if (u64set_add(&configured, string_hash(*p)) < 0) {
                        configured = u64set_free(configured);
                        break;
                }
        /* From the last: a root taken out moves only those after it. */
        for (size_t i = m->n_track_roots; i > 0; i--) {
                _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
                _cleanup_free_ char *root = NULL;
                int r;

                /* A transient root goes with its last holder, not here. */
                if (i > m->n_track_roots || m->track_roots_called[i - 1] ||
                    track_root_configured(m, m->track_roots[i - 1], configured) ||
                    track_root_transient(m, i - 1))
                        continue;
                root = strdup(m->track_roots[i - 1]);
                if (!root) {
                        log_warning("Cannot stop tracking %s, no longer in the configuration's \"track\": out of "
                                    "memory (the next reload tries again).",
                                    m->track_roots[i - 1]);
                        continue;
                }
                r = manager_untrack_root(m, root, UNTRACK_RELOAD, &error);
                if (r < 0)
                        log_warning("Cannot stop tracking %s, no longer in the configuration's \"track\": %s (the "
                                    "next reload tries again).",
                                    root, error.message ?: strerror(-r));
        }
        u64set_free(configured);
}

int manager_reload(Manager *m, const Config *config) {
        Config old = { .track = m->config.track, .n_track = m->config.n_track };
        uint64_t old_timeout_usec = m->config.default_timeout_usec;
        bool old_realtime_writes = m->config.realtime_writes;
        int r;

        m->config.track = NULL;
        m->config.n_track = 0;
        if (config_copy_track(&m->config, config) < 0) {
                m->config.track = old.track;
                m->config.n_track = old.n_track;
                return -ENOMEM;
        }
        m->config.default_timeout_usec = config->default_timeout_usec;
        m->config.realtime_writes = config->realtime_writes;

        /* tracked.json once, at the end: a save (an fsync, and a look at every
         * root) for each root added and each dropped held the loop for 7 s
         * when a SIGHUP replaced 500 roots, 67 s for 2,000. */
        m->reloading = true;
        m->save_pending = false;

        /* The new roots first, then the old ones dropped: a group that both
         * cover stays tracked through the change.  The other way round,
         * ["/a"] to ["/a/x"] would remove /a/x with /a (its pressure triggers
         * ended, the calls waiting on it cancelled, its object gone) and
         * publish it again. */
        r = manager_apply_track_config(m, m->config.track);
        if (r < 0) {
                /* A new root could not be added (out of memory): the whole
                 * configuration before stays, not half of each (its roots
                 * kept, some of the new ones added, which later reloads
                 * would never drop).  The new roots added are dropped as
                 * the configuration before does not name them. */
                Config new = { .track = m->config.track, .n_track = m->config.n_track };

                m->config.track = old.track;
                m->config.n_track = old.n_track;
                m->config.default_timeout_usec = old_timeout_usec;
                m->config.realtime_writes = old_realtime_writes;
                manager_drop_unconfigured_roots(m);
                config_done(&new);
        } else {
                /* Subtrees the old configuration tracked and the new one
                 * does not are dropped; those a call asked for stay. */
                for (char **p = old.track; p && *p; p++) {
                        bool kept = false;

                        for (char **q = m->config.track; q && *q && !kept; q++)
                                kept = streq(*p, *q);
                        if (!kept && track_root_called(m, *p))
                                log_info("%s is no longer in the configuration's \"track\", but stays tracked: a "
                                         "call asked for it (Untrack() drops it).",
                                         *p);
                }
                manager_drop_unconfigured_roots(m);
                config_done(&old);
                /* "realtime_writes": true read again means "try them": the
                 * cause of a refusal may be gone (an RLIMIT_RTPRIO raised
                 * with prlimit --pid, a cgroup given real-time time), and the
                 * next big write asks the kernel again (logging the notice
                 * again should it still refuse).  A thread that could not be
                 * started otherwise is tried at every big write anyway: its
                 * warning, given once, is given again should the cause (a
                 * task limit, say) still be there after the reload. */
                m->realtime_refused = false;
                m->realtime_failed = false;
        }
        m->reloading = false;
        if (m->save_pending)
                (void) manager_save_tracked(m);
        manager_announce(m); /* as Track() does: complete, before anything else is read */
        return r;
}

/* A waiting call fails (Cancelled) at a stop.  But for one that asked for all
 * or nothing (its rollback restores its flags, and its reply says so), the
 * flags it wrote stay as written, the kernel not done with them: a restart
 * finds the group still freezing.  The reply says so, lest the caller take
 * "Cancelled" for "undone". */
static void operation_doom_shutdown(Operation *op) {
        const OpEntry *first = NULL;
        unsigned n_waiting = 0;

        if (!(op->flags & FREEZER_FLAG_ROLLBACK_ON_TIMEOUT))
                for (unsigned i = 0; i < op->n_entries; i++) {
                        const OpEntry *e = &op->entries[i];

                        if (e->done || !e->group || e->vanished)
                                continue;
                        if (!first)
                                first = e;
                        n_waiting++;
                }
        if (!first) {
                operation_doom(op, true, BUS_ERROR_CANCELLED, "freezerd is shutting down");
                return;
        }
        if (n_waiting == 1)
                operation_doom(op, true, BUS_ERROR_CANCELLED,
                               "freezerd is shutting down; the cgroup.freeze of %s stays %d (%snot yet confirmed)",
                               CG_NAMED(first->group->path), first->new_freeze,
                               first->wrote ? "written, " : "");
        else
                operation_doom(op, true, BUS_ERROR_CANCELLED,
                               "freezerd is shutting down; the cgroup.freeze of %s stays %d (%snot yet confirmed), "
                               "and so do the %u other flags this call waited on",
                               CG_NAMED(first->group->path), first->new_freeze,
                               first->wrote ? "written, " : "", n_waiting - 1);
}

void manager_shutdown(Manager *m) {
        if (!m)
                return;
        /* Waiting callers get an answer, and every group stays as the kernel
         * has it, but for the calls that asked for all or nothing
         * (ROLLBACK_ON_TIMEOUT): shutting down fails them, so what they
         * changed is restored first, as for any failure. */
        manager_dispatch(m);
        for (Operation *op = m->operations; op; op = op->next)
                operation_doom_shutdown(op);
        manager_dispatch(m); /* every operation was queued: none is left */
        if (m->track_order_unsaved)
                (void) manager_save_tracked(m);
}

/* Frees *e, if any (libevent's event_free() takes no NULL), and forgets it. */
static void event_freep(struct event **e) {
        if (*e)
                event_free(*e);
        *e = NULL;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        manager_shutdown(m);

        m->on_group_removed = NULL;
        m->on_groups_settled = NULL;
        m->on_group_added = NULL;
        m->subscribed.names = name_track_free(m->subscribed.names);
        m->subscribed_groups.names = name_track_free(m->subscribed_groups.names);
        m->subscribed_states.names = name_track_free(m->subscribed_states.names);
        m->transient_names = name_track_free(m->transient_names);
        /* Triggers close silently: their clients see the bus go. */
        m->pressure = pressure_free(m->pressure);
        /* Closing the inotify fd drops every watch at once: no rm_watch per group. */
        event_freep(&m->inotify_event);
        event_freep(&m->inotify_resume);
        event_freep(&m->holdback_timer);
        event_freep(&m->repoll_timer);
        event_freep(&m->events_epoll_event);
        closep(&m->inotify_fd);
        m->inotify_fd = -1;
        m->inotify_stash = mfree(m->inotify_stash);
        m->removal_groups = u64set_free(m->removal_groups);
        if (m->tree)
                tree_free(m->tree, group_data_destroy, m);
        closep(&m->events_epfd);
        for (size_t i = 0; i < m->n_outer; i++) {
                closep(&m->outer[i].freeze_fd);
                free(m->outer[i].path);
        }
        free(m->outer);
        closep(&m->root_fd);
        closep(&m->self_cgroup_fd);
        /* While the runtime directory is still ours: its free slots are removed. */
        m->journal = journal_free(m->journal);
        closep(&m->runtime_lock_fd);
        closep(&m->state_lock_fd);
        wdmap_free(m->wds);
        for (size_t i = 0; i < m->n_track_roots; i++)
                free(m->track_roots[i]);
        free(m->track_roots);
        free(m->track_roots_called);
        free(m->track_roots_saved);
        for (size_t i = 0; i < m->n_transient_roots; i++)
                free(m->transient_roots[i]);
        free(m->transient_roots);
        while (m->transient_holds) {
                TransientHold *h = m->transient_holds;

                m->transient_holds = h->next;
                free(h->root);
                free(h->name);
                sd_bus_unref(h->connection);
                free(h);
        }
        u64set_free(m->track_root_hashes);
        for (size_t i = 0; i < m->n_roots_gone; i++)
                free(m->roots_gone[i]);
        free(m->roots_gone);
        free(m->announce);
        config_done(&m->config);
        free(m->cgroup_root);
        free(m->runtime_dir);
        free(m->self_path);
        free(m->state_dir);
        free(m->config_path);
        free(m);
        return NULL;
}
