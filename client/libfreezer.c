/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "client-util.h"
#include "freezer.h"

#define FREEZER_SERVICE "org.freezerd.Freezer1"
#define FREEZER_MANAGER_PATH "/org/freezerd/Freezer1"
#define FREEZER_MANAGER_INTERFACE "org.freezerd.Freezer1.Manager"
#define FREEZER_GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define FREEZER_GROUP_INTERFACE "org.freezerd.Freezer1.Group"
#define FREEZER_ERROR_PREFIX "org.freezerd.Freezer1.Error."

/* The method call waits this much longer than the daemon's own timeout, so that
 * the daemon's Timeout error wins over a local one. */
#define CALL_TIMEOUT_MARGIN_USEC (5 * USEC_PER_SEC)
/* Lower bound of the method-call timeout when the caller asks for the daemon's
 * default timeout. */
#define CALL_TIMEOUT_DEFAULT_USEC (30 * USEC_PER_SEC)
/* The state cache forgets everything when it would grow beyond this: it holds
 * one entry per group object ever signalled, removed groups included. */
#define STATE_CACHE_MAX 65536

/* Last known state of one group object, for signals that carry only one of
 * FreezerState and Frozen. Kept only while a state callback is installed. */
typedef struct state_entry {
        char *object;
        freezer_state state;
        bool frozen;
        bool have_state;
        bool have_frozen;
} state_entry;

struct freezer {
        sd_bus *bus;
        sd_bus_error error;

        /* DefaultTimeoutUSec of the daemon, fetched on first need. */
        uint64_t default_timeout_usec;
        bool have_default_timeout;

        sd_bus_slot *match_slot;
        freezer_state_callback state_cb;
        void *state_userdata;

        state_entry *cache;     /* sorted by object */
        size_t n_cache;
        size_t n_cache_allocated;
};

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
        { SD_BUS_ERROR_ACCESS_DENIED,                       EACCES     },
        { SD_BUS_ERROR_INVALID_ARGS,                        EINVAL     },
        /* A group object that went away between GetGroup and GetAll. */
        { SD_BUS_ERROR_UNKNOWN_OBJECT,                      ENOENT     },
};

FREEZER_EXPORT const char *freezer_state_to_string(freezer_state state) {
        if ((unsigned) state >= ELEMENTSOF(state_table))
                return NULL;
        return state_table[state];
}

FREEZER_EXPORT freezer_state freezer_state_from_string(const char *s) {
        if (!s)
                return FREEZER_STATE_UNKNOWN;

        for (size_t i = 0; i < ELEMENTSOF(state_table); i++)
                if (streq(state_table[i], s))
                        return (freezer_state) i;

        return FREEZER_STATE_UNKNOWN;
}

/* The kernel's "frozen" as implied by a state, for when nothing better is
 * known. */
static bool state_is_frozen(freezer_state state) {
        return state == FREEZER_STATE_FROZEN ||
                state == FREEZER_STATE_THAWING ||
                state == FREEZER_STATE_FROZEN_BY_PARENT;
}

/* ---- errors ---- */

/* Record the outcome of a failed operation: keep the D-Bus error if there is
 * one, otherwise synthesize one from r. Returns the (mapped) negative errno. */
static int error_take(freezer *f, sd_bus_error *e, int r) {
        if (r >= 0)
                r = -EIO;

        sd_bus_error_free(&f->error);

        if (e && sd_bus_error_is_set(e)) {
                f->error = *e;
                *e = SD_BUS_ERROR_NULL;

                for (size_t i = 0; i < ELEMENTSOF(error_table); i++)
                        if (streq(f->error.name, error_table[i].name))
                                return -error_table[i].error;

                return -sd_bus_error_get_errno(&f->error);
        }

        (void) sd_bus_error_set_errno(&f->error, r);
        return r;
}

static int error_set(freezer *f, int r) {
        return error_take(f, NULL, r);
}

FREEZER_EXPORT const char *freezer_last_error_name(freezer *f) {
        return f && sd_bus_error_is_set(&f->error) ? f->error.name : NULL;
}

FREEZER_EXPORT const char *freezer_last_error_message(freezer *f) {
        return f && sd_bus_error_is_set(&f->error) ? f->error.message : NULL;
}

/* ---- open/close ---- */

/* Takes over bus on success. */
static int freezer_new(freezer **ret, sd_bus *bus) {
        const char *unique;
        freezer *f;
        int r;

        /* Finish connecting and authenticating now, so that errors show up
         * here, and so that no handshake is pending when the caller starts to
         * poll the fd for POLLIN only. */
        r = sd_bus_get_unique_name(bus, &unique);
        if (r < 0)
                return r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;

        f->bus = bus;
        f->error = SD_BUS_ERROR_NULL;
        *ret = f;
        return 0;
}

FREEZER_EXPORT int freezer_open_system(freezer **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (!ret)
                return -EINVAL;

        r = sd_bus_open_system(&bus);
        if (r < 0)
                return r;

        r = freezer_new(ret, bus);
        if (r < 0)
                return r;

        TAKE_PTR(bus);
        return 0;
}

FREEZER_EXPORT int freezer_open_user(freezer **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (!ret)
                return -EINVAL;

        r = sd_bus_open_user(&bus);
        if (r < 0)
                return r;

        r = freezer_new(ret, bus);
        if (r < 0)
                return r;

        TAKE_PTR(bus);
        return 0;
}

FREEZER_EXPORT int freezer_open_address(freezer **ret, const char *address) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (!ret || !address || !*address)
                return -EINVAL;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;

        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;

        /* The address is that of a bus broker (we talk to a well-known name),
         * not of a peer-to-peer connection to the daemon. */
        r = sd_bus_set_bus_client(bus, true);
        if (r < 0)
                return r;

        r = sd_bus_start(bus);
        if (r < 0)
                return r;

        r = freezer_new(ret, bus);
        if (r < 0)
                return r;

        TAKE_PTR(bus);
        return 0;
}

static void cache_clear(freezer *f) {
        for (size_t i = 0; i < f->n_cache; i++)
                free(f->cache[i].object);
        free(f->cache);
        f->cache = NULL;
        f->n_cache = f->n_cache_allocated = 0;
}

FREEZER_EXPORT freezer *freezer_close(freezer *f) {
        if (!f)
                return NULL;

        sd_bus_slot_unref(f->match_slot);
        cache_clear(f);
        sd_bus_error_free(&f->error);
        sd_bus_flush_close_unref(f->bus);
        free(f);
        return NULL;
}

/* ---- state cache ---- */

/* Index of object in the cache, or where it would have to be inserted. */
static size_t cache_search(freezer *f, const char *object, bool *ret_found) {
        size_t lo = 0, hi = f->n_cache;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(f->cache[mid].object, object);

                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }

        *ret_found = false;
        return lo;
}

static state_entry *cache_get(freezer *f, const char *object) {
        bool found;
        size_t i;

        i = cache_search(f, object, &found);
        return found ? &f->cache[i] : NULL;
}

static state_entry *cache_get_or_add(freezer *f, const char *object) {
        bool found;
        size_t i;
        char *copy;

        i = cache_search(f, object, &found);
        if (found)
                return &f->cache[i];

        if (f->n_cache >= STATE_CACHE_MAX) {
                cache_clear(f);
                i = 0;
        }

        if (f->n_cache >= f->n_cache_allocated) {
                size_t n = f->n_cache_allocated > 0 ? f->n_cache_allocated * 2 : 16;
                state_entry *a;

                a = reallocarray(f->cache, n, sizeof(state_entry));
                if (!a)
                        return NULL;
                f->cache = a;
                f->n_cache_allocated = n;
        }

        copy = strdup(object);
        if (!copy)
                return NULL;

        memmove(f->cache + i + 1, f->cache + i, (f->n_cache - i) * sizeof(state_entry));
        f->cache[i] = (state_entry) {
                .object = copy,
                .state = FREEZER_STATE_UNKNOWN,
        };
        f->n_cache++;
        return &f->cache[i];
}

static void cache_update(freezer *f, const char *object,
                         bool have_state, freezer_state state,
                         bool have_frozen, bool frozen) {
        state_entry *e;

        if (!f->state_cb || !object)
                return;

        e = cache_get_or_add(f, object);
        if (!e)
                return; /* Out of memory: we only lose a hint. */

        if (have_state) {
                e->state = state;
                e->have_state = true;
        }
        if (have_frozen) {
                e->frozen = frozen;
                e->have_frozen = true;
        }
}

/* ---- method calls ---- */

static int new_manager_call(freezer *f, const char *member, sd_bus_message **ret) {
        return sd_bus_message_new_method_call(f->bus, ret,
                                              FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                                              FREEZER_MANAGER_INTERFACE, member);
}

static uint64_t call_timeout(freezer *f, uint64_t timeout_usec) {
        uint64_t usec;

        if (timeout_usec > 0)
                return usec_add(timeout_usec, CALL_TIMEOUT_MARGIN_USEC);

        if (!f->have_default_timeout) {
                uint64_t t = 0;
                int r;

                /* Ask once per handle. If that fails, fall back to our
                 * default; the Freeze/Thaw call will report any real
                 * problem. */
                r = sd_bus_get_property_trivial(f->bus, FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                                                FREEZER_MANAGER_INTERFACE, "DefaultTimeoutUSec",
                                                NULL, 't', &t);
                if (r < 0)
                        return CALL_TIMEOUT_DEFAULT_USEC;

                f->default_timeout_usec = t;
                f->have_default_timeout = true;
        }

        usec = usec_add(f->default_timeout_usec, CALL_TIMEOUT_MARGIN_USEC);
        return usec > CALL_TIMEOUT_DEFAULT_USEC ? usec : CALL_TIMEOUT_DEFAULT_USEC;
}

/* The method-call timeout of calls that wait for the kernel like Freeze/Thaw
 * do. With NO_WAIT the daemon replies at once: sd-bus' default method-call
 * timeout (0, i.e. 25 s) is plenty. */
static uint64_t wait_call_timeout(freezer *f, uint64_t timeout_usec, uint64_t flags) {
        return (flags & FREEZER_NO_WAIT) ? 0 : call_timeout(f, timeout_usec);
}

static int freeze_or_thaw(freezer *f, const char *member, const char *path,
                          uint64_t timeout_usec, uint64_t flags) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t usec;
        int r;

        if (!f)
                return -EINVAL;
        if (!path)
                return error_set(f, -EINVAL);

        usec = wait_call_timeout(f, timeout_usec, flags);

        r = new_manager_call(f, member, &m);
        if (r < 0)
                return error_set(f, r);

        r = sd_bus_message_append(m, "stt", path, timeout_usec, flags);
        if (r < 0)
                return error_set(f, r);

        r = sd_bus_call(f->bus, m, usec, &error, &reply);
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

static const char *const order_table[] = {
        [FREEZER_ORDER_AUTO] = "auto",
        [FREEZER_ORDER_TOP_DOWN] = "top-down",
        [FREEZER_ORDER_BOTTOM_UP] = "bottom-up",
};

static int apply_batch(freezer *f, const freezer_request *requests, size_t n, const char *order,
                       uint64_t timeout_usec, uint64_t flags,
                       uint32_t *ret_writes, uint32_t *ret_skipped, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        uint32_t writes, skipped;
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
                                                 "Request %zu: the path is not valid UTF-8", i);
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

        r = sd_bus_call(f->bus, m, wait_call_timeout(f, timeout_usec, flags), error, &reply);
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
        if ((n > 0 && !requests) || (unsigned) order >= ELEMENTSOF(order_table))
                return error_set(f, -EINVAL);
        for (size_t i = 0; i < n; i++)
                if (!requests[i].path)
                        return error_set(f, -EINVAL);

        r = apply_batch(f, requests, n, order_table[order], timeout_usec, flags,
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

static int freeze_except(freezer *f, const char *path, const char *const *exclude, size_t n_exclude,
                         uint64_t timeout_usec, uint64_t flags, char ***ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        char **l = NULL;
        int r;

        r = new_manager_call(f, "FreezeExcept", &m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "s", path);
        if (r == -EINVAL)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "The path is not valid UTF-8");
        if (r < 0)
                return r;

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

        r = sd_bus_call(f->bus, m, wait_call_timeout(f, timeout_usec, flags), error, &reply);
        if (r < 0)
                return r;

        /* sd_bus_message_read_strv() gives NULL for an empty array. */
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
        if (!path || (n_exclude > 0 && !exclude))
                return error_set(f, -EINVAL);
        for (size_t i = 0; i < n_exclude; i++)
                if (!exclude[i])
                        return error_set(f, -EINVAL);

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

/* ---- tracking ---- */

static int track_or_untrack(freezer *f, const char *member, const char *path) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (!f)
                return -EINVAL;
        if (!path)
                return error_set(f, -EINVAL);

        r = sd_bus_call_method(f->bus, FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                               FREEZER_MANAGER_INTERFACE, member,
                               &error, &reply, "s", path);
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

static int read_group_properties(sd_bus_message *m, freezer_group *g) {
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

                if (streq(name, "Path")) {
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

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }

        return sd_bus_message_exit_container(m);
}

static int get_group(freezer *f, const char *path, freezer_group *ret, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(freezer_group_clear) freezer_group g = {
                .state = FREEZER_STATE_UNKNOWN,
        };
        const char *object;
        int r;

        r = new_manager_call(f, "GetGroup", &m);
        if (r < 0)
                return r;

        r = sd_bus_message_append(m, "s", path);
        if (r < 0)
                return r;

        r = sd_bus_call(f->bus, m, 0, error, &reply);
        if (r < 0)
                return r;

        r = sd_bus_message_read(reply, "o", &object);
        if (r < 0)
                return r;

        g.object = strdup(object);
        if (!g.object)
                return -ENOMEM;

        reply = sd_bus_message_unref(reply);

        r = sd_bus_call_method(f->bus, FREEZER_SERVICE, g.object,
                               "org.freedesktop.DBus.Properties", "GetAll",
                               error, &reply, "s", FREEZER_GROUP_INTERFACE);
        if (r < 0)
                return r;

        r = read_group_properties(reply, &g);
        if (r < 0)
                return r;

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

        cache_update(f, g.object, true, g.state, true, g.frozen);

        *ret = g;
        g = (freezer_group) {};
        return 0;
}

FREEZER_EXPORT int freezer_get_group(freezer *f, const char *path, freezer_group *ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret)
                *ret = (freezer_group) {
                        .state = FREEZER_STATE_UNKNOWN,
                };
        if (!f)
                return -EINVAL;
        if (!path || !ret)
                return error_set(f, -EINVAL);

        r = get_group(f, path, ret, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
}

static int list_groups(freezer *f, freezer_group **ret, size_t *ret_n, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        freezer_group *a = NULL;
        size_t n = 0, n_allocated = 0;
        int r;

        r = sd_bus_call_method(f->bus, FREEZER_SERVICE, FREEZER_MANAGER_PATH,
                               FREEZER_MANAGER_INTERFACE, "ListGroups",
                               error, &reply, NULL);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(sos)");
        if (r < 0)
                return r;

        for (;;) {
                const char *path, *object, *state;

                r = sd_bus_message_read(reply, "(sos)", &path, &object, &state);
                if (r < 0)
                        goto fail;
                if (r == 0)
                        break;

                if (n >= n_allocated) {
                        size_t k = n_allocated > 0 ? n_allocated * 2 : 16;
                        freezer_group *b;

                        b = reallocarray(a, k, sizeof(freezer_group));
                        if (!b) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        a = b;
                        n_allocated = k;
                }

                a[n++] = (freezer_group) {
                        .path = strdup(path),
                        .object = strdup(object),
                        .state = freezer_state_from_string(state),
                };
                if (!a[n - 1].path || !a[n - 1].object) {
                        r = -ENOMEM;
                        goto fail;
                }
        }

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
        freezer_group_array_free(a, n);
        return r;
}

FREEZER_EXPORT int freezer_list(freezer *f, freezer_group **ret, size_t *ret_n) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (ret)
                *ret = NULL;
        if (ret_n)
                *ret_n = 0;
        if (!f)
                return -EINVAL;
        if (!ret || !ret_n)
                return error_set(f, -EINVAL);

        r = list_groups(f, ret, ret_n, &error);
        if (r < 0)
                return error_take(f, &error, r);

        return 0;
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

FREEZER_EXPORT int freezer_dispatch(freezer *f) {
        int n = 0, r;

        if (!f)
                return -EINVAL;

        for (;;) {
                r = sd_bus_process(f->bus, NULL);
                if (r < 0)
                        return error_set(f, r);
                if (r == 0)
                        return n;
                if (n < INT_MAX)
                        n++;
        }
}

FREEZER_EXPORT int freezer_wait(freezer *f, uint64_t timeout_usec) {
        int r;

        if (!f)
                return -EINVAL;

        r = sd_bus_wait(f->bus, timeout_usec);
        if (r < 0)
                return error_set(f, r);
        return r;
}

/* Fetch FreezerState or Frozen of a group synchronously (from within the
 * signal handler). */
static int get_group_state(freezer *f, const char *object, freezer_state *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = sd_bus_get_property_string(f->bus, FREEZER_SERVICE, object, FREEZER_GROUP_INTERFACE,
                                       "FreezerState", NULL, &s);
        if (r < 0)
                return r;

        *ret = freezer_state_from_string(s);
        return 0;
}

static int get_group_frozen(freezer *f, const char *object, bool *ret) {
        int b, r;

        r = sd_bus_get_property_trivial(f->bus, FREEZER_SERVICE, object, FREEZER_GROUP_INTERFACE,
                                        "Frozen", NULL, 'b', &b);
        if (r < 0)
                return r;

        *ret = b;
        return 0;
}

static int on_properties_changed(sd_bus_message *m, void *userdata, _unused_ sd_bus_error *ret_error) {
        freezer *f = userdata;
        const char *interface, *object;
        bool have_state = false, have_frozen = false;
        bool state_invalidated = false, frozen_invalidated = false;
        freezer_state state = FREEZER_STATE_UNKNOWN;
        bool frozen = false;
        _cleanup_free_ char *path = NULL;
        state_entry *e;
        int r;

        /* Malformed signals are ignored: returning an error from here would
         * make freezer_dispatch() fail. */

        if (!f->state_cb)
                return 0;

        object = sd_bus_message_get_path(m);
        if (!object)
                return 0;

        r = sd_bus_message_read(m, "s", &interface);
        if (r < 0 || !streq(interface, FREEZER_GROUP_INTERFACE))
                return 0;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return 0;

        for (;;) {
                const char *name;

                r = sd_bus_message_enter_container(m, 'e', "sv");
                if (r < 0)
                        return 0;
                if (r == 0)
                        break;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return 0;

                if (streq(name, "FreezerState")) {
                        const char *s;

                        r = sd_bus_message_read(m, "v", "s", &s);
                        if (r < 0)
                                return 0;
                        state = freezer_state_from_string(s);
                        have_state = true;
                } else if (streq(name, "Frozen")) {
                        int b;

                        r = sd_bus_message_read(m, "v", "b", &b);
                        if (r < 0)
                                return 0;
                        frozen = b;
                        have_frozen = true;
                } else {
                        r = sd_bus_message_skip(m, "v");
                        if (r < 0)
                                return 0;
                }

                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return 0;
        }

        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return 0;

        /* Properties that changed without their new values being sent. */
        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r > 0) {
                const char *name;

                while (sd_bus_message_read(m, "s", &name) > 0) {
                        if (streq(name, "FreezerState"))
                                state_invalidated = true;
                        else if (streq(name, "Frozen"))
                                frozen_invalidated = true;
                }
        }

        if (!have_state && !have_frozen && !state_invalidated && !frozen_invalidated)
                return 0;

        r = group_object_to_path(object, &path);
        if (r <= 0)
                return 0;

        e = cache_get(f, object);

        if (!have_state) {
                if (e && e->have_state && !state_invalidated)
                        state = e->state;
                else if (get_group_state(f, object, &state) < 0)
                        state = FREEZER_STATE_UNKNOWN;
                /* sd_bus_call() only queues what arrives meanwhile, it
                 * runs no handlers: the cache, and e, are unchanged. */
        }

        if (!have_frozen) {
                if (e && e->have_frozen && !frozen_invalidated)
                        frozen = e->frozen;
                else if (!frozen_invalidated || get_group_frozen(f, object, &frozen) < 0)
                        frozen = state_is_frozen(state);
        }

        cache_update(f, object, state != FREEZER_STATE_UNKNOWN, state, true, frozen);

        f->state_cb(f, path, state, frozen, f->state_userdata);
        return 0;
}

FREEZER_EXPORT int freezer_set_state_callback(freezer *f, freezer_state_callback cb, void *userdata) {
        int r;

        if (!f)
                return -EINVAL;

        if (!cb) {
                f->match_slot = sd_bus_slot_unref(f->match_slot);
                f->state_cb = NULL;
                f->state_userdata = NULL;
                cache_clear(f);
                return 0;
        }

        if (!f->match_slot) {
                r = sd_bus_add_match(f->bus, &f->match_slot,
                                     "type='signal',"
                                     "sender='" FREEZER_SERVICE "',"
                                     "interface='org.freedesktop.DBus.Properties',"
                                     "member='PropertiesChanged',"
                                     "path_namespace='" FREEZER_GROUP_PREFIX "',"
                                     "arg0='" FREEZER_GROUP_INTERFACE "'",
                                     on_properties_changed, f);
                if (r < 0)
                        return error_set(f, r);
        }

        f->state_cb = cb;
        f->state_userdata = userdata;
        return 0;
}
