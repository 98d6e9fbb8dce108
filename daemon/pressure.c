/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "bus-errors.h"
#include "cgroup-util.h"
#include "log.h"
#include "pressure.h"

#define CAP_SYS_RESOURCE_BIT 24u /* linux/capability.h */

/* ---- helpers ------------------------------------------------------------------------------------------ */

static const char *resource_file(PsiResource r) {
        switch (r) {
        case PSI_RESOURCE_CPU:
                return "cpu.pressure";
        case PSI_RESOURCE_MEMORY:
                return "memory.pressure";
        case PSI_RESOURCE_IO:
                return "io.pressure";
        case PSI_RESOURCE_IRQ:
                return "irq.pressure";
        default:
                return NULL;
        }
}

/* A file of g's own cgroup: opened in the directory at g's path that has g's
 * id.  A cgroup removed and made again under the same name (a unit
 * restarted) before freezerd has read the removal is another group: -ENOENT,
 * as for one removed.  Opened by path alone, a reading of the old group's
 * object would give the new cgroup's averages with the old one's totals (the
 * clamp), and a trigger would be armed on the new cgroup in the old one's
 * name. */
static int group_open_file(Pressure *p, const Group *g, const char *file, int flags) {
        _cleanup_close_ int dirfd =
                cg_openat_beneath(p->manager->root_fd, cg_path_relative(g->path), O_PATH | O_DIRECTORY, 0);
        uint64_t id;
        int fd, r;

        if (dirfd < 0)
                return dirfd == -ENODEV ? -ENOENT : dirfd;
        if (g->id != 0) {
                r = cg_dir_id(dirfd, NULL, &id);
                if (r < 0)
                        return r == -ENODEV ? -ENOENT : r;
                if (id != g->id)
                        return -ENOENT;
        }
        fd = openat(dirfd, file, flags | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* 1 if the group's cgroup exists, 0 if not, -errno.  Its cgroup is the
 * directory at its path with its id: one removed and made again under the
 * same name (a unit restarted, a container made again) is another. */
static int group_dir_exists(Pressure *p, const Group *g) {
        _cleanup_close_ int fd =
                cg_openat_beneath(p->manager->root_fd, cg_path_relative(g->path), O_PATH | O_DIRECTORY, 0);
        uint64_t id;

        if (fd == -ENOENT || fd == -ENODEV)
                return 0;
        if (fd < 0)
                return fd;
        if (g->id != 0 && cg_dir_id(fd, NULL, &id) >= 0 && id != g->id)
                return 0;
        return 1;
}

/* For a group whose RESOURCE.pressure is missing: 1 if it is hidden by
 * cgroup.pressure (that file exists, so PSI works for cgroups; it reads 0, or
 * is being set to 0 right now), 0 if PSI is not available for cgroups at all
 * (psi=0 removes cgroup.pressure as well). */
static int group_pressure_hidden(Pressure *p, const Group *g) {
        int fd = group_open_file(p, g, "cgroup.pressure", O_RDONLY);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        close(fd);
        return 1;
}

static GroupPressure *group_pressure(Group *g) {
        GroupData *d = group_data(g);

        if (!d)
                return NULL;
        if (!d->pressure) {
                GroupPressure *gp = calloc(1, sizeof *gp);
                if (!gp)
                        return NULL;
                for (int i = 0; i < _PSI_RESOURCE_MAX; i++)
                        gp->fd[i] = -1;
                d->pressure = gp;
        }
        return d->pressure;
}

static int group_error(Pressure *p, Group *g, PsiResource res, int r, sd_bus_error *error) {
        const char *file = resource_file(res);

        switch (r) {
        case -ENOENT:
                if (group_dir_exists(p, g) == 0)
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP, "%s no longer exists",
                                                 CG_NAMED(g->path));
                if (group_pressure_hidden(p, g) > 0)
                        return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                                 "%s of %s is hidden: its cgroup.pressure is 0", file,
                                                 CG_NAMED(g->path));
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "%s has no %s: pressure stall information is not available (kernel "
                                         "without CONFIG_PSI, or booted with psi=0)",
                                         CG_NAMED(g->path), file);
        case -EOPNOTSUPP:
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "%s of %s: pressure stall information is disabled in the kernel (psi=0)",
                                         file, CG_NAMED(g->path));
        case -ENODEV:
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_GROUP, "%s no longer exists", CG_NAMED(g->path));
        case -EBADMSG:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "%s of %s is malformed", file, CG_NAMED(g->path));
        default:
                return bus_error_set_failed(error, r, "Cannot read %s of %s: %s", file, CG_NAMED(g->path),
                                            strerror(-r));
        }
}

static int system_error(PsiResource res, int r, sd_bus_error *error) {
        const char *name = psi_resource_to_string(res);

        switch (r) {
        case -ENOENT:
                if (res == PSI_RESOURCE_IRQ)
                        return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                                 "/proc/pressure/irq does not exist: the kernel does not account "
                                                 "IRQ pressure (CONFIG_IRQ_TIME_ACCOUNTING) or PSI is disabled");
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "/proc/pressure/%s does not exist: pressure stall information is not "
                                         "available (kernel without CONFIG_PSI, or booted with psi=0)",
                                         name);
        case -EOPNOTSUPP:
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "/proc/pressure/%s: %s pressure is disabled in the kernel%s", name, name,
                                         res == PSI_RESOURCE_IRQ ? " (IRQ time accounting is off)" : " (psi=0)");
        case -EBADMSG:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "/proc/pressure/%s is malformed", name);
        default:
                return bus_error_set_failed(error, r, "Cannot read /proc/pressure/%s: %s", name, strerror(-r));
        }
}

static int system_open(PsiResource res, int flags) {
        char path[64];
        int fd;

        snprintf(path, sizeof path, "/proc/pressure/%s", psi_resource_to_string(res));
        fd = open(path, flags | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

/* ---- readings ----------------------------------------------------------------------------------------- */

/* psi_read_fd(), and FREEZERD_TEST_PRESSURE_NO_CPU_FULL: a cpu reading as
 * kernels 5.2 to 5.12 give it, without its "full" line (tests only). */
static int pressure_read_fd(Pressure *p, int fd, PsiResource res, PsiReading *ret) {
        int r = psi_read_fd(fd, res, ret);

        if (r >= 0 && p->test_no_cpu_full && res == PSI_RESOURCE_CPU) {
                ret->present &= ~PSI_LINE_FULL;
                ret->line[PSI_KIND_FULL] = (PsiLine) {};
        }
        return r;
}

static void pressure_read_limits(Pressure *p);

static void kept_fd_close(Pressure *p, int *fd) {
        if (*fd < 0)
                return;
        close(*fd);
        *fd = -1;
        if (p && p->n_kept_fds > 0)
                p->n_kept_fds--;
}

/* Read through the kept fd *slot, opening it first (kept within the budget,
 * else transient).  A kept fd that reads ENODEV (its file was hidden or its
 * group removed) is dropped and the file opened once more, so that the error
 * names the present state. */
static int read_kept(Pressure *p, int *slot, PsiResource res, int (*open_fn)(Pressure *, void *, PsiResource),
                     void *open_data, PsiReading *ret) {
        int r = 0;

        for (int attempt = 0; attempt < 2; attempt++) {
                _cleanup_close_ int transient = -1;
                bool kept = *slot >= 0;
                int fd = *slot;

                if (!kept) {
                        fd = open_fn(p, open_data, res);
                        if (fd < 0)
                                return fd;
                        /* Within the budget as pressure_read() read it. */
                        if (p->n_kept_fds < p->max_kept_fds) {
                                *slot = fd;
                                p->n_kept_fds++;
                        } else
                                transient = fd;
                }
                r = pressure_read_fd(p, fd, res, ret);
                if (r == -ENODEV && kept) {
                        kept_fd_close(p, slot);
                        continue;
                }
                break;
        }
        return r;
}

static int open_group_ro(Pressure *p, void *data, PsiResource res) {
        return group_open_file(p, data, resource_file(res), O_RDONLY);
}

static int open_system_ro(Pressure *p, void *data, PsiResource res) {
        return system_open(res, O_RDONLY);
}

/* The fds kept for readings beyond the budget, the limit lowered at run time
 * (prlimit --pid), are closed at the next reading: kept, they would hold the
 * fds that the budget leaves to the groups' watches.  The groups' first, the
 * system's (four, read most) last; a file read again is opened again, kept or
 * transient as the budget says. */
static void kept_fds_trim(Pressure *p) {
        Group *root;

        if (p->n_kept_fds <= p->max_kept_fds)
                return;
        root = tree_root(p->manager->tree);
        for (Group *g = root; g && p->n_kept_fds > p->max_kept_fds; g = tree_next_preorder(root, g)) {
                GroupData *d = group_data(g);

                if (!d || !d->pressure)
                        continue;
                for (int i = 0; i < _PSI_RESOURCE_MAX && p->n_kept_fds > p->max_kept_fds; i++)
                        kept_fd_close(p, &d->pressure->fd[i]);
        }
        for (int i = 0; i < _PSI_RESOURCE_MAX && p->n_kept_fds > p->max_kept_fds; i++)
                kept_fd_close(p, &p->system_fd[i]);
}

int pressure_read(Pressure *p, Group *g, PsiResource res, PsiReading *ret, sd_bus_error *error) {
        PsiReading reading;
        int r;

        if (res < 0 || res >= _PSI_RESOURCE_MAX) /* the property's own: not the caller's to get wrong */
                return bus_error_set_failed(error, -EINVAL, "Unknown pressure resource %d", (int) res);

        /* The budget as the limit is now, as for a trigger: read at the start
         * only, it stayed a quarter of the first limit, however prlimit --pid
         * raised or lowered it since. */
        pressure_read_limits(p);
        kept_fds_trim(p);

        if (!g) {
                r = read_kept(p, &p->system_fd[res], res, open_system_ro, NULL, &reading);
                if (r < 0)
                        return system_error(res, r, error);
                psi_clamp(&p->system_clamp[res], &reading);
        } else {
                GroupPressure *gp;

                if (res == PSI_RESOURCE_IRQ)
                        return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                                 "IRQ pressure is published for the system only");
                gp = group_pressure(g);
                if (!gp)
                        return sd_bus_error_set_errno(error, -ENOMEM);
                r = read_kept(p, &gp->fd[res], res, open_group_ro, g, &reading);
                if (r < 0)
                        return group_error(p, g, res, r, error);
                psi_clamp(&gp->clamp[res], &reading);
        }
        *ret = reading;
        return 0;
}

/* ---- clients ------------------------------------------------------------------------------------------ */

static void trigger_free(PressureTrigger *t);
static void pending_closes_forget_client(Pressure *p, const PressureClient *c);

/* The unique name of a call's sender on the bus; NULL on the private socket,
 * whose peer may put any sender in its messages (there is no bus daemon to
 * vouch for it): a connection there is known by the connection alone. */
static const char *bus_sender(Pressure *p, sd_bus_message *call) {
        return sd_bus_message_get_bus(call) == p->bus ? sd_bus_message_get_sender(call) : NULL;
}

/* A client is its unique name on the bus, its connection on the private
 * socket (where there are no names). */
static PressureClient *client_find(Pressure *p, sd_bus_message *call) {
        const char *sender = bus_sender(p, call);
        sd_bus *connection = sd_bus_message_get_bus(call);

        for (PressureClient *c = p->clients; c; c = c->next)
                if (sender ? !c->connection && streq(c->name, sender) : c->connection == connection)
                        return c;
        return NULL;
}

static void client_free(PressureClient *c) {
        Pressure *p;

        if (!c)
                return;
        p = c->pressure;
        while (c->triggers)
                trigger_free(c->triggers);
        pending_closes_forget_client(p, c);
        LIST_UNLINK(p->clients, c, prev, next);
        if (!c->connection)
                (void) name_track_remove(p->names, c->name, true);
        sd_bus_unref(c->connection);
        free(c->name);
        free(c);
}

static void client_maybe_free(PressureClient *c) {
        if (c && c->n_triggers == 0)
                client_free(c);
}

static void on_client_gone(NameTrack *t, const char *name, void *userdata) {
        Pressure *p = userdata;

        for (PressureClient *c = p->clients; c; c = c->next)
                if (!c->connection && streq(c->name, name)) {
                        /* The client is gone: nobody to tell, its triggers just go. */
                        log_debug("Bus client %s disconnected: dropping its %u pressure trigger(s)", c->name,
                                  c->n_triggers);
                        client_free(c);
                        return;
                }
}

static int client_get(Pressure *p, sd_bus_message *call, uid_t uid, PressureClient **ret, sd_bus_error *error) {
        const char *sender = bus_sender(p, call);
        PressureClient *c = client_find(p, call);
        int r;

        if (c) {
                *ret = c;
                return 0;
        }

        c = calloc(1, sizeof *c);
        if (!c)
                return sd_bus_error_set_errno(error, -ENOMEM);
        c->pressure = p;
        c->uid = uid;
        if (sender)
                c->name = strdup(sender);
        else if (asprintf(&c->name, "a private connection of uid %u", (unsigned) uid) < 0)
                c->name = NULL;
        if (!c->name) {
                free(c);
                return sd_bus_error_set_errno(error, -ENOMEM);
        }
        c->next = p->clients;
        if (p->clients)
                p->clients->prev = c;
        p->clients = c;

        /* On the private socket the connection's end ends the client
         * (pressure_connection_closed()); on the bus, its name's. */
        if (!sender) {
                c->connection = sd_bus_ref(sd_bus_message_get_bus(call));
                *ret = c;
                return 0;
        }
        r = p->names ? name_track_add(p->names, sender) : -ENOMEM;
        if (r < 0) {
                client_free(c);
                return bus_error_set_failed(error, r, "Cannot follow bus client %s: %s", sender, strerror(-r));
        }
        *ret = c;
        return 0;
}

void pressure_connection_closed(Pressure *p, sd_bus *connection) {
        for (PressureClient *c = p ? p->clients : NULL, *next; c; c = next) {
                next = c->next;
                if (c->connection != connection)
                        continue;
                /* Nobody to tell, as for a bus client that disconnected. */
                log_debug("%s closed: dropping its %u pressure trigger(s)", c->name, c->n_triggers);
                client_free(c);
        }
}

/* ---- triggers ----------------------------------------------------------------------------------------- */

static PressureTrigger *trigger_find(Pressure *p, uint32_t id) {
        for (PressureTrigger *t = p->triggers; t; t = t->next)
                if (t->id == id)
                        return t;
        return NULL;
}

static PressureTrigger **trigger_owner_list(PressureTrigger *t) {
        if (!t->group)
                return &t->pressure->system_triggers;
        GroupData *d = group_data(t->group);
        return d && d->pressure ? &d->pressure->triggers : NULL;
}

static void watch_thread_wake(Pressure *p) {
        while (eventfd_write(p->wake_fd, 1) < 0 && errno == EINTR)
                ;
}

/* A trigger's fd, out of the epoll set (watched: it was in it), goes to the
 * watcher thread to close, charged to uid and client (NULL: none) until then.
 * The kernel's close of a trigger waits for an RCU grace period
 * (psi_trigger_destroy(): synchronize_rcu()), 40-60 us and up to 17 ms under
 * load: a client that left with its 256 triggers, or one that sent Add/Remove
 * pairs without end, held the main loop (every Freeze, every kernel event) for
 * all of them.  The thread runs while any trigger does; the main thread closes
 * the fd itself only when none runs (it ended on an error of its epoll_wait()
 * or of the pipe). */
static void trigger_fd_release(Pressure *p, int fd, bool watched, uid_t uid, PressureClient *client) {
        bool queued = false;

        pthread_mutex_lock(&p->lock);
        if (watched && p->n_watched > 0)
                p->n_watched--;
        /* Queued in the same step: the thread never sees itself idle with a close pending. */
        if (p->thread_state == PRESSURE_THREAD_RUNNING && p->n_queued < ELEMENTSOF(p->closing)) {
                p->closing[p->n_queued++] = (PressureClosing) { .fd = fd, .uid = uid, .client = client };
                queued = true;
        }
        pthread_mutex_unlock(&p->lock);
        if (queued)
                watch_thread_wake(p);
        else
                close(fd);
}

/* The trigger fds the thread has yet to close (still open), in all, those
 * charged to client c and to uid, and those of the uids but root's; under the
 * lock. */
typedef struct PendingCloses {
        unsigned total, client, uid, others;
} PendingCloses;

static void pending_count(const PressureClosing *e, const PressureClient *c, uid_t uid, PendingCloses *n) {
        if (e->fd < 0)
                return;
        n->total++;
        if (c && e->client == c)
                n->client++;
        if (e->uid == uid)
                n->uid++;
        if (e->uid != 0)
                n->others++;
}

static PendingCloses pending_closes_locked(Pressure *p, const PressureClient *c, uid_t uid) {
        PendingCloses n = {};

        for (unsigned i = 0; i < p->n_queued; i++)
                pending_count(&p->closing[i], c, uid, &n);
        pending_count(&p->in_close, c, uid, &n);
        return n;
}

/* A client goes: the fds of its triggers still to close stay charged to its
 * uid, not to it (another client may get its address).  The same program,
 * back on a new connection, is a new client: its old fds no longer count
 * against the per-client bound, and it may hold up to twice that for the
 * moment the thread takes to close them (a grace period each).  That gives
 * it nothing that two connections at once would not: the per-client bound
 * is of one connection's triggers.  What bounds a program's fds is its uid's
 * bound, which still counts them, and for root, which has no such bound
 * (it may open as many connections as it likes), the total, which counts
 * every fd still to close. */
static void pending_closes_forget_client(Pressure *p, const PressureClient *c) {
        pthread_mutex_lock(&p->lock);
        for (unsigned i = 0; i < p->n_queued; i++)
                if (p->closing[i].client == c)
                        p->closing[i].client = NULL;
        if (p->in_close.client == c)
                p->in_close.client = NULL;
        pthread_mutex_unlock(&p->lock);
}

/* Which queued fds pending_close_first() picks from. */
typedef enum PendingMatch {
        PENDING_ANY,
        PENDING_CLIENT, /* client c's */
        PENDING_UID,    /* uid's */
        PENDING_OTHERS, /* any uid's but root's */
} PendingMatch;

/* The queued fd that matches goes to the top of the stack: the thread closes
 * it next.  Under the lock. */
static void pending_close_first(Pressure *p, PendingMatch match, const PressureClient *c, uid_t uid) {
        for (unsigned i = p->n_queued; i-- > 0;) {
                PressureClosing e = p->closing[i];

                if ((match == PENDING_CLIENT && e.client != c) || (match == PENDING_UID && e.uid != uid) ||
                    (match == PENDING_OTHERS && e.uid == 0))
                        continue;
                memmove(&p->closing[i], &p->closing[i + 1], (p->n_queued - i - 1) * sizeof e);
                p->closing[p->n_queued - 1] = e;
                return;
        }
}

/* Wait, under the lock, for the thread to close one more trigger fd, until
 * deadline (CLOCK_MONOTONIC usec).  false once it has passed.  The main loop
 * waits, never closes: closing in its place cost it a grace period per call,
 * and waiting for the close in progress had no limit at all. */
static bool pending_close_wait_locked(Pressure *p, uint64_t deadline) {
        uint64_t now = now_usec();
        struct timespec ts;

        if (now >= deadline)
                return false;
        if (p->thread_state != PRESSURE_THREAD_RUNNING && p->n_queued > 0) {
                /* Left behind by a thread that ended on an error: nobody else closes them. */
                int fd = p->closing[--p->n_queued].fd;

                pthread_mutex_unlock(&p->lock);
                close(fd);
                pthread_mutex_lock(&p->lock);
                return true;
        }
        ts = (struct timespec) { .tv_sec = (time_t) (deadline / USEC_PER_SEC),
                                 .tv_nsec = (long) (deadline % USEC_PER_SEC * NSEC_PER_USEC) };
        (void) pthread_cond_timedwait(&p->closed, &p->lock, &ts);
        return true;
}

static void trigger_free(PressureTrigger *t) {
        Pressure *p = t->pressure;
        PressureTrigger **head, *no_head = NULL;

        LIST_UNLINK(p->triggers, t, prev, next);

        if (t->client) {
                LIST_UNLINK(t->client->triggers, t, cprev, cnext);
                t->client->n_triggers--;
        }

        /* Where the owner's list is gone, only the neighbours are relinked. */
        head = trigger_owner_list(t);
        LIST_UNLINK(*(head ?: &no_head), t, gprev, gnext);

        if (t->fd >= 0 && !p->stopping) {
                (void) epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, t->fd, NULL);
                trigger_fd_release(p, t->fd, true, t->client ? t->client->uid : 0, t->client);
        }
        /* At shutdown (stopping) the fds are left to exit(): closing up to
         * 1,024 of them here, each a grace period, would only delay it. */
        p->n_triggers--;
        free(t);
}

/* End a trigger that the client did not remove: tell its owner why, then free. */
static void trigger_end(PressureTrigger *t, const char *reason) {
        Pressure *p = t->pressure;
        PressureClient *c = t->client;

        log_debug("Pressure trigger %" PRIu32 " (%s %s on %s) ends: %s", t->id, psi_resource_to_string(t->resource),
                  psi_kind_to_string(t->kind), t->group ? t->group->path : "the system", reason);
        if (p->hooks.removed)
                p->hooks.removed(p, t, reason, p->hooks.userdata);
        trigger_free(t);
        client_maybe_free(c);
}

/* Why the kernel reported an error on a trigger's fd.  The kernel deactivates
 * the file before it drains its open files (which is what we see), so the
 * file is already gone when we look, unless cgroup.pressure was set to 1
 * again meanwhile: the file is back, the trigger is not (draining the file
 * released it).  Nothing else errs a group's trigger: the kernel reports
 * EPOLLERR for a file it deactivated (kernfs_fop_poll()) or whose trigger it
 * released (psi_trigger_poll()), so a group that still exists had its
 * pressure hidden. */
static const char *trigger_error_reason(PressureTrigger *t) {
        int fd;

        if (!t->group)
                return PRESSURE_REASON_ERROR;
        if (group_dir_exists(t->pressure, t->group) == 0)
                return PRESSURE_REASON_GROUP_REMOVED;
        fd = group_open_file(t->pressure, t->group, resource_file(t->resource), O_RDONLY);
        if (fd != -ENOENT && fd < 0)
                return PRESSURE_REASON_ERROR;
        if (fd >= 0)
                close(fd);
        return group_dir_exists(t->pressure, t->group) == 0 ? PRESSURE_REASON_GROUP_REMOVED : PRESSURE_REASON_HIDDEN;
}

static PsiClamp *trigger_clamp(PressureTrigger *t) {
        if (!t->group)
                return &t->pressure->system_clamp[t->resource];
        GroupPressure *gp = group_pressure(t->group);
        return gp ? &gp->clamp[t->resource] : NULL;
}

/* May end the trigger (its file is gone): t is then freed. */
static void trigger_fire(PressureTrigger *t) {
        Pressure *p = t->pressure;
        PsiReading reading;
        PsiClamp *clamp;
        PsiLine line;
        int r;

        r = pressure_read_fd(p, t->fd, t->resource, &reading);
        if (r == -ENODEV) {
                trigger_end(t, trigger_error_reason(t));
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot read the pressure of trigger %" PRIu32 " (%s of %s): %m", t->id,
                                  resource_file(t->resource), t->group ? t->group->path : "the system");
                return;
        }
        clamp = trigger_clamp(t);
        if (clamp)
                psi_clamp(clamp, &reading);
        line = reading.line[t->kind];
        t->n_events++;
        /* "kernel event": what the kernel sent, signalled or dropped below
         * (a reader of the log counted the drops as signals). */
        log_debug("Pressure trigger %" PRIu32 ": kernel event %" PRIu64 ", %s total %" PRIu64 " us", t->id,
                  t->n_events, psi_kind_to_string(t->kind), line.total_usec);

        /* See pressure.h: the kernel's spurious events of a fresh unprivileged trigger. */
        if (!t->privileged && now_usec() < t->armed_usec + psi_trigger_settle_usec(t->window_usec) &&
            !psi_event_plausible(t->last_total, line.total_usec, t->threshold_usec)) {
                t->n_dropped++;
                log_debug("Pressure trigger %" PRIu32 ": dropping a spurious event, kernel event %" PRIu64
                          ", not signalled (%s total grew %" PRIu64 " us since the previous event or arming, "
                          "threshold %" PRIu64 " us)",
                          t->id, t->n_events, psi_kind_to_string(t->kind),
                          line.total_usec >= t->last_total ? line.total_usec - t->last_total : 0,
                          t->threshold_usec);
                t->last_total = line.total_usec;
                return;
        }
        t->last_total = line.total_usec;
        if (p->hooks.exceeded)
                p->hooks.exceeded(p, t, &line, p->hooks.userdata);
}

/* What the watcher thread forwards: a trigger id and its epoll events. */
typedef struct PressureWakeup {
        uint32_t id;
        uint32_t events;
} PressureWakeup;

/* Edge-triggered, armed once for good.  Not EPOLLONESHOT with a re-arm once
 * the main loop has handled the event: PSI's poll is destructive, and an event
 * that came while the trigger was disarmed would be lost.  The re-arm
 * (EPOLL_CTL_MOD) polls the file, which reports the event and clears it
 * (psi_trigger_poll(): cmpxchg(&t->event, 1, 0)); ep_modify() queues the
 * trigger as ready, and epoll_wait() polls it once more before it reports it
 * (ep_send_events()), finds nothing and drops it.  Edge-triggered, the only
 * poll is epoll_wait()'s, on the kernel's wake-up, and it reports what it
 * clears.  An error (the group removed, its pressure hidden) comes with one
 * wake-up (psi_trigger_destroy() notifies the file), so it does not spin the
 * thread either. */
static int trigger_arm(PressureTrigger *t) {
        struct epoll_event ev = { .events = EPOLLPRI | EPOLLET, .data.u64 = t->id };
        return epoll_ctl(t->pressure->epoll_fd, EPOLL_CTL_ADD, t->fd, &ev) < 0 ? -errno : 0;
}

/* FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC: each close of a trigger fd by the
 * thread waits that long first, or until stopping, so that tests see fds
 * pending.  Under the lock. */
static void test_close_delay_locked(Pressure *p) {
        uint64_t deadline;

        if (p->test_close_delay_usec == 0)
                return;
        deadline = now_usec() + p->test_close_delay_usec;
        for (uint64_t now = now_usec(); !p->stopping && now < deadline; now = now_usec()) {
                struct timespec ts = { .tv_sec = (time_t) (deadline / USEC_PER_SEC),
                                       .tv_nsec = (long) (deadline % USEC_PER_SEC * NSEC_PER_USEC) };
                (void) pthread_cond_timedwait(&p->closed, &p->lock, &ts);
        }
}

/* The watcher thread (see pressure.h): the only epoll_wait() on the set, and
 * the closes of the trigger fds (trigger_fd_release()).  It leaves once it had
 * nothing to watch or close for PRESSURE_THREAD_LINGER_USEC, or at once when
 * stopping. */
static void *watch_thread(void *userdata) {
        Pressure *p = userdata;
        struct epoll_event evs[32];
        uint64_t idle_since = 0; /* since when it has had nothing to do; 0: busy */
        bool waited = false;     /* an epoll_wait() of this thread worked */
        unsigned generation;
        bool test_fail, test_late;
        int error = 0;

        pthread_mutex_lock(&p->lock);
        generation = p->thread_generation; /* set by watch_thread_start_locked(), ours until joined */
        pthread_mutex_unlock(&p->lock);
        test_fail = generation - 1 < 64 && (p->test_fail_threads & UINT64_C(1) << (generation - 1));
        test_late = test_fail && (p->test_fail_late & UINT64_C(1) << (generation - 1));

        for (;;) {
                int n, timeout = -1;

                pthread_mutex_lock(&p->lock);
                /* A few at a time, between looks at the triggers: behind a
                 * client's 256, the others' events would wait 256 grace periods. */
                for (unsigned i = 0; !p->stopping && p->n_queued > 0; i++) {
                        if (i == 8) {
                                timeout = 0;
                                break;
                        }
                        /* Still charged to its owner until closed: see pending_closes_locked(). */
                        p->in_close = p->closing[--p->n_queued];
                        test_close_delay_locked(p);
                        int fd = p->in_close.fd;

                        pthread_mutex_unlock(&p->lock);
                        close(fd); /* a grace period: see trigger_fd_release() */
                        pthread_mutex_lock(&p->lock);
                        p->in_close = (PressureClosing) { .fd = -1 };
                        pthread_cond_broadcast(&p->closed);
                }
                if (p->stopping) {
                        pthread_mutex_unlock(&p->lock);
                        return NULL;
                }
                if (p->n_watched == 0 && p->n_queued == 0) {
                        uint64_t now = now_usec();

                        if (idle_since == 0)
                                idle_since = now;
                        if (now >= idle_since + PRESSURE_THREAD_LINGER_USEC) {
                                /* Decided under the lock: a trigger added from now on finds
                                 * LEFT, joins this thread and starts another. */
                                p->thread_state = PRESSURE_THREAD_LEFT;
                                pthread_mutex_unlock(&p->lock);
                                return NULL;
                        }
                        timeout = (int) ((idle_since + PRESSURE_THREAD_LINGER_USEC - now + USEC_PER_MSEC - 1) /
                                         USEC_PER_MSEC);
                } else
                        idle_since = 0;
                pthread_mutex_unlock(&p->lock);

                if (test_fail && !waited) {
                        n = -1;
                        errno = EIO;
                } else
                        n = epoll_wait(p->epoll_fd, evs, (int) ELEMENTSOF(evs), timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        error = errno;
                        break;
                }
                if (!waited) {
                        /* Proven healthy: the count of failures starts again (see on_thread_failed()). */
                        waited = true;
                        pthread_mutex_lock(&p->lock);
                        p->thread_failures = 0;
                        pthread_mutex_unlock(&p->lock);
                }
                for (int i = 0; i < n; i++) {
                        if (evs[i].data.u64 == 0) { /* wake_fd: looked at above */
                                eventfd_t v;
                                (void) eventfd_read(p->wake_fd, &v);
                                continue;
                        }
                        PressureWakeup w = { .id = (uint32_t) evs[i].data.u64, .events = evs[i].events };
                        /* 8 bytes < PIPE_BUF: atomic.  A full pipe blocks us, which is fine;
                         * EPIPE means the main thread is shutting down. */
                        while (write(p->pipe_fd[1], &w, sizeof w) < 0)
                                if (errno != EINTR) {
                                        error = errno;
                                        goto out;
                                }
                }
        }
out:
        /* Its fds to close, if any, are closed by the next thread, or left to
         * exit().  Unless stopping, the main loop is told (on_thread_failed()):
         * nothing watches the triggers until another thread starts.  An
         * eventfd, not the pipe: its write never blocks, and the pipe may be
         * what failed. */
        pthread_mutex_lock(&p->lock);
        p->thread_state = PRESSURE_THREAD_LEFT;
        bool tell = !p->stopping;
        if (tell) {
                p->thread_error = error;
                p->failed_generation = generation;
                p->thread_failures++;
        }
        /* FREEZERD_TEST_PRESSURE_THREAD_FAIL ":late": the main loop learns of
         * the failure only after an AddPressureTrigger started another thread
         * (joining this one), the race on_thread_failed() must survive. */
        if (tell && test_late)
                log_warning("FREEZERD_TEST_PRESSURE_THREAD_FAIL: pressure watcher thread %u failed, the main "
                            "loop learns of it once it joins the thread",
                            generation);
        while (tell && test_late && !p->stopping && !p->thread_joining)
                (void) pthread_cond_wait(&p->closed, &p->lock);
        pthread_mutex_unlock(&p->lock);
        if (tell)
                (void) eventfd_write(p->fail_fd, 1);
        return NULL;
}

/* The watcher thread runs: one that left is joined and another started.
 * Under the lock (released for the join). */
static int watch_thread_start_locked(Pressure *p) {
        sigset_t all, old;
        int r = 0;

        if (p->thread_state == PRESSURE_THREAD_LEFT) {
                /* It set LEFT as its last step (but an eventfd_write() after an
                 * error): the join does not wait. */
                p->thread_joining = true;
                pthread_cond_broadcast(&p->closed); /* a test's late failure: see watch_thread() */
                pthread_mutex_unlock(&p->lock);
                (void) pthread_join(p->thread, NULL);
                pthread_mutex_lock(&p->lock);
                p->thread_joining = false;
                p->thread_state = PRESSURE_THREAD_NONE;
        }
        if (p->thread_state == PRESSURE_THREAD_NONE) {
                /* Signals stay with the main thread. */
                sigfillset(&all);
                r = pthread_sigmask(SIG_SETMASK, &all, &old);
                if (r == 0) {
                        r = pthread_create(&p->thread, NULL, watch_thread, p);
                        (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
                }
                if (r == 0) {
                        p->thread_state = PRESSURE_THREAD_RUNNING;
                        p->thread_generation++; /* read by the thread once it has the lock */
                }
        }
        return -r;
}

/* Before a trigger's fd goes into the epoll set: the watcher thread runs, and
 * counts that fd as watched.  The thread runs only while there are triggers,
 * not with the daemon: a process with a second thread pays for it in every
 * system call on an fd (fdget() takes a reference on the file once the fd
 * table is shared), and a daemon that follows thousands of groups makes
 * thousands of them per storm. */
static int watch_thread_hold(Pressure *p) {
        int r;

        pthread_mutex_lock(&p->lock);
        r = watch_thread_start_locked(p);
        if (r >= 0)
                p->n_watched++;
        pthread_mutex_unlock(&p->lock);
        return r;
}

/* The other way: the fd held for by watch_thread_hold() never went into the
 * set.  The thread, which may be waiting without a timeout for the fds it
 * counted, is woken to look again (and linger, then leave, if that was the
 * last). */
static void watch_thread_unhold(Pressure *p) {
        pthread_mutex_lock(&p->lock);
        if (p->n_watched > 0)
                p->n_watched--;
        pthread_mutex_unlock(&p->lock);
        watch_thread_wake(p);
}

/* The watcher thread ended on an error of its epoll_wait() or of its write
 * to the pipe: nothing watched the triggers (they no longer fired) until the
 * next AddPressureTrigger started another thread.  Another starts now.
 *
 * thread_failures counts the threads that failed since one last proved
 * healthy: the first epoll_wait() of a thread that works sets it to 0
 * (watch_thread()), however that thread ends later, on an error or idle.
 * epoll_wait() fails on a broken set (EBADF, EINVAL, EFAULT), which a new
 * thread does not mend, and a set that worked in a restarted thread was not
 * broken for good: so a failure that follows a thread that worked, however
 * long ago, always gets a restart.  Where the restarted thread fails too
 * before a single epoll_wait() of it has worked (the count reaches 2), the
 * error stays: the triggers end with reason "error" (their clients are told)
 * and the fds left to close are closed here; the next trigger tries again,
 * with one thread and no restart until one works.
 *
 * The failure may be old news: an AddPressureTrigger handled before this may
 * have joined the failed thread and started another (watch_thread_hold()),
 * which watches every trigger (they share the epoll set).  That one alone
 * counts: its own failure, if any, comes here too (the eventfd adds the
 * wake-ups up, and failed_generation is the number of the last thread to
 * fail), so the failure of a thread already replaced is only logged.
 *
 * Logged once: a loop of failures must not flood the journal. */
static void on_thread_failed(evutil_socket_t fd, short what, void *userdata) {
        Pressure *p = userdata;
        unsigned failures;
        eventfd_t v;
        bool superseded;
        int error, r = 0;

        (void) eventfd_read(p->fail_fd, &v);
        pthread_mutex_lock(&p->lock);
        error = p->thread_error;
        failures = p->thread_failures;
        superseded = p->failed_generation != p->thread_generation;
        if (!superseded && failures < 2 && (p->n_watched > 0 || p->n_queued > 0))
                r = watch_thread_start_locked(p);
        pthread_mutex_unlock(&p->lock);
        if (!p->thread_failure_logged) {
                p->thread_failure_logged = true;
                log_error_errno(error, "The pressure watcher thread failed: %m; another takes over (logged once)");
        }
        if (superseded || (failures < 2 && r >= 0))
                return;

        if (!p->thread_gave_up_logged) {
                p->thread_gave_up_logged = true;
                log_error_errno(r < 0 ? r : -error,
                                "The pressure watcher thread cannot run (%m): its %u pressure trigger(s) end "
                                "(logged once)",
                                p->n_triggers);
        }
        while (p->triggers)
                trigger_end(p->triggers, PRESSURE_REASON_ERROR);
        pthread_mutex_lock(&p->lock);
        while (p->thread_state != PRESSURE_THREAD_RUNNING && p->n_queued > 0) {
                int cfd = p->closing[--p->n_queued].fd;

                pthread_mutex_unlock(&p->lock);
                close(cfd);
                pthread_mutex_lock(&p->lock);
        }
        pthread_mutex_unlock(&p->lock);
}

static void on_wakeups(evutil_socket_t fd, short what, void *userdata) {
        Pressure *p = userdata;
        PressureWakeup ws[64];

        /* Bounded, so that a burst cannot starve the rest of the loop; what is
         * left keeps the pipe readable for the next turn. */
        for (unsigned round = 0; round < 8; round++) {
                ssize_t n = read(p->pipe_fd[0], ws, sizeof ws);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                log_error_errno(errno, "Reading pressure wakeups failed: %m");
                        return;
                }
                for (size_t i = 0; i < (size_t) n / sizeof ws[0]; i++) {
                        /* By id: the trigger may have been removed since the thread saw it. */
                        PressureTrigger *t = trigger_find(p, ws[i].id);
                        if (!t)
                                continue;
                        if (ws[i].events & (EPOLLERR | EPOLLHUP)) {
                                trigger_end(t, trigger_error_reason(t));
                                continue;
                        }
                        if (ws[i].events & EPOLLPRI)
                                trigger_fire(t);
                }
                if ((size_t) n < sizeof ws)
                        return;
        }
}

static int validate(Pressure *p, bool system, const char *resource, const char *kind, uint64_t threshold_usec,
                    uint64_t window_usec, PsiResource *ret_res, PsiKind *ret_kind, sd_bus_error *error) {
        switch (psi_trigger_validate(resource, kind, threshold_usec, window_usec, system, p->privileged, ret_res,
                                     ret_kind)) {
        case PSI_TRIGGER_OK:
                return 0;
        case PSI_TRIGGER_UNKNOWN_RESOURCE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown resource \"%s\": expected %s", CG_QUOTE(resource),
                                         system ? "cpu, memory, io or irq"
                                                : "cpu, memory or io (irq is system-wide only: use the Manager)");
        case PSI_TRIGGER_UNKNOWN_KIND:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Unknown kind \"%s\": expected some or full", CG_QUOTE(kind));
        case PSI_TRIGGER_KIND_UNAVAILABLE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Resource %s has no \"%s\" pressure: use full", CG_QUOTE(resource),
                                         CG_QUOTE(kind));
        case PSI_TRIGGER_THRESHOLD_ZERO:
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "The threshold must not be 0: give the stall time (usec) per window that "
                                        "fires the trigger");
        case PSI_TRIGGER_WINDOW_TOO_SHORT:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The window, %s (%" PRIu64 " usec), is below the kernel's minimum of %s",
                                         FORMAT_USEC(window_usec), window_usec, FORMAT_USEC(PSI_WINDOW_MIN_USEC));
        case PSI_TRIGGER_WINDOW_TOO_LONG:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The window, %s (%" PRIu64 " usec), is above the kernel's maximum of %s",
                                         FORMAT_USEC(window_usec), window_usec, FORMAT_USEC(PSI_WINDOW_MAX_USEC));
        case PSI_TRIGGER_THRESHOLD_ABOVE_WINDOW:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The threshold, %s (%" PRIu64 " usec), is above the window, %s (%" PRIu64
                                         " usec): it could never be reached",
                                         FORMAT_USEC(threshold_usec), threshold_usec, FORMAT_USEC(window_usec),
                                         window_usec);
        case PSI_TRIGGER_WINDOW_NOT_MULTIPLE:
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The window, %s (%" PRIu64 " usec), is not a whole multiple of 2s, which "
                                         "the kernel requires because freezerd lacks CAP_SYS_RESOURCE",
                                         FORMAT_USEC(window_usec), window_usec);
        default:
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid pressure trigger");
        }
}

static int arm_error(Pressure *p, Group *g, PsiResource res, int r, sd_bus_error *error) {
        switch (r) {
        case -EINVAL:
                if (g)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "The kernel refused the trigger on %s of %s", resource_file(res),
                                                 CG_NAMED(g->path));
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The kernel refused the trigger on /proc/pressure/%s",
                                         psi_resource_to_string(res));
        case -EACCES:
                /* The file's permissions, not the kernel's trigger rules: a
                 * freezerd running as a user over a delegated subtree may not
                 * write the pressure files of groups root made (or of its
                 * root's parent).  freezerd's failure, not the caller's
                 * (Failed, as a cgroup.freeze write refused to freezerd):
                 * AccessDenied is what freezerd's own rules refuse. */
                if (g)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                                 "freezerd may not write %s of %s (Permission denied): a trigger "
                                                 "needs write access to the file, and it belongs to another user",
                                                 resource_file(res), CG_NAMED(g->path));
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED,
                                         "freezerd may not write /proc/pressure/%s (Permission denied)",
                                         psi_resource_to_string(res));
        case -EPERM:
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "The kernel does not let freezerd arm pressure triggers (it needs "
                                         "CAP_SYS_RESOURCE on kernels before 6.5)");
        case -EMFILE:
        case -ENFILE:
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "freezerd has no file descriptor left for a pressure trigger (%s)",
                                         r == -EMFILE ? "RLIMIT_NOFILE" : "the system's fs.file-max");
        default:
                return g ? group_error(p, g, res, r, error) : system_error(res, r, error);
        }
}

static unsigned uid_triggers(Pressure *p, uid_t uid) {
        unsigned n = 0;

        for (PressureClient *c = p->clients; c; c = c->next)
                if (c->uid == uid)
                        n += c->n_triggers;
        return n;
}

/* The triggers of all the uids but root's. */
static unsigned others_triggers(Pressure *p) {
        unsigned n = 0;

        for (PressureClient *c = p->clients; c; c = c->next)
                if (c->uid != 0)
                        n += c->n_triggers;
        return n;
}

/* The bounds that follow freezerd's RLIMIT_NOFILE, read again at each new
 * trigger and each pressure fd that could be kept (a getrlimit() is cheap):
 * `prlimit --pid` may raise or lower it while freezerd runs. */
static void pressure_read_limits(Pressure *p) {
        struct rlimit rl;

        p->max_kept_fds = 256;
        p->max_triggers = PRESSURE_TRIGGERS_MAX;
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur != RLIM_INFINITY) {
                p->max_kept_fds = (unsigned) (rl.rlim_cur / 4 < 16      ? 16
                                              : rl.rlim_cur / 4 > 65536 ? 65536
                                                                        : rl.rlim_cur / 4);
                /* Not PRESSURE_TRIGGERS_MAX alone: under a limit of 1,024, one
                 * user's 256 triggers would take a quarter of the fd table, and a
                 * few clients all of it (new groups then go unfollowed). */
                p->max_triggers = (unsigned) (rl.rlim_cur / 4 < PRESSURE_TRIGGERS_MIN ? PRESSURE_TRIGGERS_MIN
                                              : rl.rlim_cur / 4 > PRESSURE_TRIGGERS_MAX
                                                      ? PRESSURE_TRIGGERS_MAX
                                                      : rl.rlim_cur / 4);
        }
        p->max_triggers_per_uid = p->max_triggers / 4 < PRESSURE_TRIGGERS_PER_UID_MAX ? p->max_triggers / 4
                                                                                    : PRESSURE_TRIGGERS_PER_UID_MAX;
        /* The per-uid bound alone let four users take every trigger, and
         * root (whose triggers freeze and thaw on pressure) none: a quarter
         * is kept for root. */
        p->max_triggers_others = p->max_triggers - p->max_triggers / 4;
}

static int limit_error_total(Pressure *p, sd_bus_error *error) {
        return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                 "freezerd has %u pressure triggers already, the most it keeps%s", p->n_triggers,
                                 p->max_triggers < PRESSURE_TRIGGERS_MAX
                                         ? " (a quarter of its RLIMIT_NOFILE: each trigger holds an fd)"
                                         : "");
}

static int limit_error_others(Pressure *p, unsigned n_others, sd_bus_error *error) {
        return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                 "The users other than root have %u pressure triggers already (over all their "
                                 "connections), the most they may have together: the other %u of freezerd's %u "
                                 "are kept for root",
                                 n_others, p->max_triggers - p->max_triggers_others, p->max_triggers);
}

/* CAP_SYS_RESOURCE in the calling thread's effective set, on or off (a
 * thread's capabilities are its own: the other threads keep theirs). */
static int cap_sys_resource_set(bool on) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        if (on)
                d[CAP_SYS_RESOURCE_BIT / 32].effective |= 1u << (CAP_SYS_RESOURCE_BIT % 32);
        else
                d[CAP_SYS_RESOURCE_BIT / 32].effective &= ~(1u << (CAP_SYS_RESOURCE_BIT % 32));
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* The kernel (6.5 and later) decides a trigger's kind by the credentials its
 * file was opened with (psi_trigger_create(): CAP_SYS_RESOURCE in
 * file->f_cred): with it, a real-time trigger, polled by a SCHED_FIFO kernel
 * thread (psimon) made for the group; without, one updated from the 2-s
 * averages.  Only root's triggers may be real-time (access.h): for another
 * caller freezerd opens the file with CAP_SYS_RESOURCE lowered from its
 * effective set, which it raises again at once.  Opened with freezerd's full
 * privilege, any user's 2-s trigger would have the kernel start a real-time
 * thread for its group.  (Before 6.5 every trigger is real-time, and /proc/pressure
 * refuses a writer without CAP_SYS_RESOURCE: EPERM, answered in
 * pressure_trigger_add().)  *ret_privileged: whether the file was opened
 * with CAP_SYS_RESOURCE. */
static int trigger_open(Pressure *p, Group *g, PsiResource res, uid_t uid, bool *ret_privileged) {
        bool lower = p->privileged && uid != 0;
        int fd, r;

        *ret_privileged = p->privileged && !lower;
        if (lower) {
                r = cap_sys_resource_set(false);
                if (r < 0) {
                        /* Not an open's error (an EPERM here is no old kernel's): said apart. */
                        log_error_errno(r, "Cannot lower CAP_SYS_RESOURCE to open a pressure file for a caller "
                                        "other than root: %m");
                        return -ECANCELED;
                }
        }
        fd = g ? group_open_file(p, g, resource_file(res), O_RDWR | O_NONBLOCK)
               : system_open(res, O_RDWR | O_NONBLOCK);
        if (lower) {
                r = cap_sys_resource_set(true);
                if (r < 0) {
                        /* Root's triggers from now on are the averages' too: no harm to others. */
                        log_error_errno(r, "Cannot raise CAP_SYS_RESOURCE again after opening a pressure file "
                                        "for a caller other than root: %m");
                        p->privileged = false;
                }
        }
        return fd;
}

int pressure_trigger_add(Pressure *p, sd_bus_message *call, uid_t uid, Group *g, const char *resource,
                         const char *kind, uint64_t threshold_usec, uint64_t window_usec, uint32_t *ret_id,
                         sd_bus_error *error) {
        _cleanup_close_ int fd = -1;
        PressureClient *c;
        PressureTrigger *t;
        PsiReading reading;
        PsiResource res;
        PsiKind k;
        char buf[64];
        uint64_t deadline;
        bool privileged = false;
        unsigned n_uid, n_others;
        uint32_t id;
        int n, r;

        r = validate(p, !g, resource, kind, threshold_usec, window_usec, &res, &k, error);
        if (r < 0)
                return r;

        pressure_read_limits(p);
        c = client_find(p, call);
        if (c && c->n_triggers >= PRESSURE_TRIGGERS_PER_CLIENT_MAX)
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "%s has %u pressure triggers already, the most one client may have",
                                         c->name, c->n_triggers);
        n_uid = uid != 0 ? uid_triggers(p, uid) : 0;
        if (uid != 0 && n_uid >= p->max_triggers_per_uid)
                return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                         "This user has %u pressure triggers already (over all its "
                                         "connections), the most one user but root may have",
                                         p->max_triggers_per_uid);
        n_others = uid != 0 ? others_triggers(p) : 0;
        if (uid != 0 && n_others >= p->max_triggers_others)
                return limit_error_others(p, n_others, error);
        if (p->n_triggers >= p->max_triggers)
                return limit_error_total(p, error);

        /* The fds of removed triggers that the thread has yet to close are
         * still open: they count, charged to the client and the uid that
         * removed them, until closed.  Where they alone keep this call from a
         * bound, it waits for the thread to close them (the owner's first),
         * at most PRESSURE_CLOSE_WAIT_USEC: a removal then an add at a bound
         * works as before, and the main loop never waits on a close without
         * a limit. */
        deadline = now_usec() + PRESSURE_CLOSE_WAIT_USEC;
        pthread_mutex_lock(&p->lock);
        for (;;) {
                PendingCloses pending = pending_closes_locked(p, c, uid);
                const char *full;

                if (c && c->n_triggers + pending.client >= PRESSURE_TRIGGERS_PER_CLIENT_MAX) {
                        full = "this client's bound";
                        pending_close_first(p, PENDING_CLIENT, c, 0);
                } else if (uid != 0 && n_uid + pending.uid >= p->max_triggers_per_uid) {
                        full = "this user's bound";
                        pending_close_first(p, PENDING_UID, NULL, uid);
                } else if (uid != 0 && n_others + pending.others >= p->max_triggers_others) {
                        full = "the bound of all the users other than root together";
                        pending_close_first(p, PENDING_OTHERS, NULL, 0);
                } else if (p->n_triggers + pending.total >= p->max_triggers) {
                        full = "freezerd's bound";
                        pending_close_first(p, PENDING_ANY, NULL, 0);
                } else
                        break;
                if (!pending_close_wait_locked(p, deadline)) {
                        pthread_mutex_unlock(&p->lock);
                        return sd_bus_error_setf(error, BUS_ERROR_LIMITS_EXCEEDED,
                                                 "The fds of removed pressure triggers count against %s "
                                                 "until they are closed, and %u are still being closed: retry "
                                                 "in a moment",
                                                 full, pending.total);
                }
        }
        pthread_mutex_unlock(&p->lock);

        /* Open and read the start total before arming: see pressure.h. */
        fd = trigger_open(p, g, res, uid, &privileged);
        if (fd == -EMFILE || fd == -ENFILE) {
                /* No fd left, with fds of removed triggers still open (more
                 * than the bound allows once RLIMIT_NOFILE was lowered at run
                 * time): as each is closed, once more, within the same time. */
                pthread_mutex_lock(&p->lock);
                while ((fd == -EMFILE || fd == -ENFILE) && pending_closes_locked(p, NULL, 0).total > 0 &&
                       pending_close_wait_locked(p, deadline)) {
                        pthread_mutex_unlock(&p->lock);
                        fd = trigger_open(p, g, res, uid, &privileged);
                        pthread_mutex_lock(&p->lock);
                }
                pthread_mutex_unlock(&p->lock);
        }
        if (fd == -ECANCELED)
                return bus_error_set_failed(error, fd, "Cannot arm the trigger: freezerd could not lower its "
                                            "CAP_SYS_RESOURCE to open the file as for a caller other than root "
                                            "(see its log)");
        if (fd == -EPERM && p->privileged && !privileged)
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "This kernel lets only processes with CAP_SYS_RESOURCE arm %s pressure "
                                         "triggers (before 6.5 system-wide; 6.5 and early 6.6 also on groups), "
                                         "and freezerd arms them with it for root alone",
                                         g ? "a group's" : "system-wide");
        if (fd < 0)
                return arm_error(p, g, res, fd, error);
        r = pressure_read_fd(p, fd, res, &reading);
        if (r < 0)
                return arm_error(p, g, res, r, error);
        if (!(reading.present & (1u << k)))
                /* Before arming: the kernel has no such line to trigger on (cpu's "full" before 5.13). */
                return sd_bus_error_setf(error, BUS_ERROR_NOT_SUPPORTED,
                                         "This kernel has no \"%s\" line in %s%s%s (%s's came with Linux 5.13): "
                                         "no such trigger",
                                         psi_kind_to_string(k), g ? resource_file(res) : "/proc/pressure/",
                                         g ? " of " : psi_resource_to_string(res), g ? CG_NAMED(g->path) : "",
                                         psi_resource_to_string(res));
        if (g) {
                GroupPressure *gp = group_pressure(g);
                if (!gp)
                        return sd_bus_error_set_errno(error, -ENOMEM);
                psi_clamp(&gp->clamp[res], &reading);
        } else
                psi_clamp(&p->system_clamp[res], &reading);

        n = psi_trigger_format(buf, sizeof buf, k, threshold_usec, window_usec);
        if (n < 0) /* the arguments passed the checks above: freezerd's own failure */
                return bus_error_set_failed(error, n, "Cannot write the pressure trigger: %s", strerror(-n));

        /* Everything that may fail comes before the write that arms the
         * trigger: between that write and its EPOLL_CTL_ADD, an event the
         * kernel raises is cleared by the ADD's poll of the file (ep_insert()
         * polls it, psi_trigger_poll() clears the event it reports) and then
         * found by no epoll_wait(): lost.  So only the write and the ADD are
         * left in that gap, which no code of ours can close. */
        r = client_get(p, call, uid, &c, error);
        if (r < 0)
                return r;

        do
                id = p->next_id++;
        while (id == 0 || trigger_find(p, id));

        t = calloc(1, sizeof *t);
        if (!t) {
                client_maybe_free(c);
                return sd_bus_error_set_errno(error, -ENOMEM);
        }
        *t = (PressureTrigger) {
                .pressure = p,
                .id = id,
                .resource = res,
                .kind = k,
                .threshold_usec = threshold_usec,
                .window_usec = window_usec,
                .fd = -1,
                .group = g,
                .client = c,
                .last_total = reading.line[k].total_usec,
                .privileged = privileged,
        };

        r = watch_thread_hold(p);
        if (r < 0) {
                free(t);
                client_maybe_free(c);
                return bus_error_set_failed(error, r, "Cannot watch the pressure trigger: %s", strerror(-r));
        }

        /* With the NUL: psi_write() overwrites the last byte with one. */
        t->armed_usec = now_usec();
        r = write_result(write(fd, buf, (size_t) n + 1), (size_t) n + 1);
        if (r < 0) {
                /* No trigger was made (psi_write() makes one or fails): the
                 * fd's close waits for no grace period, it is closed here. */
                watch_thread_unhold(p);
                free(t);
                client_maybe_free(c);
                return arm_error(p, g, res, r, error);
        }
        t->fd = fd;
        r = trigger_arm(t);
        if (r < 0) {
                trigger_fd_release(p, TAKE_FD(fd), true, uid, NULL); /* the thread closes it, as any trigger's */
                free(t);
                client_maybe_free(c);
                return bus_error_set_failed(error, r, "Cannot watch the pressure trigger: %s", strerror(-r));
        }
        t->fd = TAKE_FD(fd);

        t->next = p->triggers;
        if (p->triggers)
                p->triggers->prev = t;
        p->triggers = t;
        p->n_triggers++;

        t->cnext = c->triggers;
        if (c->triggers)
                c->triggers->cprev = t;
        c->triggers = t;
        c->n_triggers++;

        PressureTrigger **head = trigger_owner_list(t); /* GroupData.pressure exists: allocated above */
        if (head) {
                t->gnext = *head;
                if (*head)
                        (*head)->gprev = t;
                *head = t;
        }

        log_debug("Pressure trigger %" PRIu32 " for %s: %s %s %" PRIu64 "/%" PRIu64 " usec on %s", id, c->name,
                  psi_resource_to_string(res), psi_kind_to_string(k), threshold_usec, window_usec,
                  g ? g->path : "the system");
        *ret_id = id;
        return 0;
}

int pressure_trigger_remove(Pressure *p, sd_bus_message *call, Group *g, uint32_t id, sd_bus_error *error) {
        PressureTrigger *t = trigger_find(p, id);
        PressureClient *c;

        /* One answer for unknown ids and for other clients' triggers: ids are not a
         * way to learn about other clients. */
        if (!t || t->group != g || t->client != client_find(p, call))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "No pressure trigger %" PRIu32 " of this client on %s", id,
                                         g ? CG_NAMED(g->path) : "the Manager");
        c = t->client;
        trigger_free(t);
        client_maybe_free(c);
        return 0;
}

void pressure_group_release(Pressure *p, Group *g, bool removed) {
        GroupData *d = group_data(g);
        GroupPressure *gp = d ? d->pressure : NULL;

        if (!gp)
                return;
        if (p && gp->triggers) {
                const char *reason = removed ? PRESSURE_REASON_GROUP_REMOVED : PRESSURE_REASON_UNTRACKED;
                while (gp->triggers)
                        trigger_end(gp->triggers, reason);
        }
        for (int i = 0; i < _PSI_RESOURCE_MAX; i++)
                kept_fd_close(p, &gp->fd[i]);
        free(gp);
        d->pressure = NULL;
}

/* ---- setup -------------------------------------------------------------------------------------------- */

static bool have_cap_sys_resource(void) {
        _cleanup_close_ int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

        /* Line by line: a whole-file read into 4 KiB failed (EFBIG) on a
         * status beyond that, and freezerd took itself for unprivileged. */
        return fd >= 0 && psi_read_cap_eff_fd(fd, CAP_SYS_RESOURCE_BIT) > 0;
}

static int pressure_setup_failed(Pressure *p, int r, const char *what) {
        log_error_errno(r, "Cannot set up pressure triggers: %s failed: %m", what);
        pressure_free(p);
        return r;
}

/* FREEZERD_TEST_PRESSURE_THREAD_FAIL: "N[:late],...", the watcher threads
 * (the Nth started, from 1) whose first epoll_wait() fails (EIO); ":late",
 * that tell the main loop only once it joins them to start another. */
static int parse_test_fail(const char *s, uint64_t *ret_threads, uint64_t *ret_late) {
        uint64_t threads = 0, late = 0;

        for (;;) {
                char *end;
                unsigned long n;

                errno = 0;
                n = strtoul(s, &end, 10);
                if (errno != 0 || end == s || n < 1 || n > 64)
                        return -EINVAL;
                threads |= UINT64_C(1) << (n - 1);
                if (strncmp(end, ":late", 5) == 0) {
                        late |= UINT64_C(1) << (n - 1);
                        end += 5;
                }
                if (*end == '\0')
                        break;
                if (*end != ',')
                        return -EINVAL;
                s = end + 1;
        }
        *ret_threads = threads;
        *ret_late = late;
        return 0;
}

int pressure_new(Manager *m, sd_bus *bus, const PressureHooks *hooks, Pressure **ret) {
        Pressure *p;

        p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->manager = m;
        p->bus = sd_bus_ref(bus);
        /* Not yet a failure: the first trigger of a bus client says so. */
        (void) name_track_new(bus, on_client_gone, p, &p->names);
        if (hooks)
                p->hooks = *hooks;
        p->next_id = 1;
        for (int i = 0; i < _PSI_RESOURCE_MAX; i++)
                p->system_fd[i] = -1;

        p->privileged = have_cap_sys_resource();
        pressure_read_limits(p);

        (void) pthread_mutex_init(&p->lock, NULL);
        /* CLOCK_MONOTONIC: now_usec()'s, for the timed waits on it. */
        pthread_condattr_t attr;
        (void) pthread_condattr_init(&attr);
        (void) pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        (void) pthread_cond_init(&p->closed, &attr);
        (void) pthread_condattr_destroy(&attr);
        p->in_close = (PressureClosing) { .fd = -1 };
        const char *fail = getenv("FREEZERD_TEST_PRESSURE_THREAD_FAIL");
        if (fail) {
                if (parse_test_fail(fail, &p->test_fail_threads, &p->test_fail_late) < 0)
                        log_warning("FREEZERD_TEST_PRESSURE_THREAD_FAIL=%s: not a list of thread numbers "
                                    "(1-64, each optionally followed by \":late\"), ignored.",
                                    fail);
                else
                        log_warning("FREEZERD_TEST_PRESSURE_THREAD_FAIL=%s: the first epoll_wait() of these "
                                    "pressure watcher threads (numbered as started) fails (for tests only).",
                                    fail);
        }
        if (getenv("FREEZERD_TEST_PRESSURE_NO_CPU_FULL")) {
                p->test_no_cpu_full = true;
                log_warning("FREEZERD_TEST_PRESSURE_NO_CPU_FULL: cpu readings lack their \"full\" line, as on "
                            "kernels before 5.13 (for tests only).");
        }
        const char *delay = getenv("FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC");
        if (delay) {
                p->test_close_delay_usec = strtoull(delay, NULL, 10);
                log_warning("FREEZERD_TEST_PRESSURE_CLOSE_DELAY_USEC=%" PRIu64 ": every close of a pressure "
                            "trigger's fd is delayed (for tests only).",
                            p->test_close_delay_usec);
        }
        p->wake_fd = p->fail_fd = p->pipe_fd[0] = p->pipe_fd[1] = -1;
        p->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (p->epoll_fd < 0)
                return pressure_setup_failed(p, -errno, "epoll_create1()");
        p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->wake_fd < 0)
                return pressure_setup_failed(p, -errno, "eventfd()");
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
        if (epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->wake_fd, &ev) < 0)
                return pressure_setup_failed(p, -errno, "epoll_ctl()");
        if (pipe2(p->pipe_fd, O_CLOEXEC) < 0)
                return pressure_setup_failed(p, -errno, "pipe2()");
        if (fcntl(p->pipe_fd[0], F_SETFL, O_NONBLOCK) < 0)
                return pressure_setup_failed(p, -errno, "fcntl()");
        p->pipe_event = event_new(m->event_base, p->pipe_fd[0], EV_READ | EV_PERSIST, on_wakeups, p);
        if (!p->pipe_event || event_add(p->pipe_event, NULL) < 0)
                return pressure_setup_failed(p, -ENOMEM, "event_new()");
        p->fail_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (p->fail_fd < 0)
                return pressure_setup_failed(p, -errno, "eventfd()");
        p->fail_event = event_new(m->event_base, p->fail_fd, EV_READ | EV_PERSIST, on_thread_failed, p);
        if (!p->fail_event || event_add(p->fail_event, NULL) < 0)
                return pressure_setup_failed(p, -ENOMEM, "event_new()");

        log_debug("Pressure triggers: %s CAP_SYS_RESOURCE, windows %s, at most %u; keeping up to %u pressure "
                  "fds open",
                  p->privileged ? "with" : "without",
                  p->privileged ? "from 500ms to 10s" : "of 2s, 4s, 6s, 8s or 10s", p->max_triggers,
                  p->max_kept_fds);
        *ret = p;
        return 0;
}

Pressure *pressure_free(Pressure *p) {
        bool started;

        if (!p)
                return NULL;
        /* The thread first: closing the read end of the pipe unblocks a write
         * to a full pipe (EPIPE), wake_fd ends its epoll_wait(), stopping its
         * closes (it finishes the one it is in).  The fds it had yet to close,
         * and those of the triggers freed below, are left to exit(). */
        if (p->pipe_event)
                event_free(p->pipe_event);
        if (p->fail_event)
                event_free(p->fail_event);
        closep(&p->pipe_fd[0]);
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        started = p->thread_state != PRESSURE_THREAD_NONE;
        pthread_cond_broadcast(&p->closed); /* a test's delayed close: test_close_delay_locked() */
        pthread_mutex_unlock(&p->lock);
        if (started) {
                watch_thread_wake(p);
                (void) pthread_join(p->thread, NULL);
                p->thread_state = PRESSURE_THREAD_NONE;
        }
        closep(&p->pipe_fd[1]);

        while (p->clients)
                client_free(p->clients); /* frees their triggers, without signals */
        p->names = name_track_free(p->names);
        while (p->triggers)
                trigger_free(p->triggers); /* none should be left: every trigger has a client */
        for (int i = 0; i < _PSI_RESOURCE_MAX; i++)
                kept_fd_close(NULL, &p->system_fd[i]);
        closep(&p->wake_fd);
        closep(&p->fail_fd);
        closep(&p->epoll_fd);
        pthread_cond_destroy(&p->closed);
        pthread_mutex_destroy(&p->lock);
        sd_bus_unref(p->bus);
        free(p);
        return NULL;
}
