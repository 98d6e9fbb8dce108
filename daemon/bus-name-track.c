/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-name-track.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util.h"

typedef struct NameEntry {
        char *name;
        unsigned n_ref;
        sd_bus_slot *match; /* NameOwnerChanged of this name */
        sd_bus_slot *query; /* GetNameOwner, until answered */
        NameTrack *track;
        struct NameEntry *next;
} NameEntry;

/* A list: a name is followed by a client that subscribed or holds pressure
 * triggers, tens of them at most in practice. */
struct NameTrack {
        sd_bus *bus;
        name_track_gone_t gone;
        void *userdata;
        NameEntry *names;
        unsigned n_names;
};

static NameEntry *entry_find(const NameTrack *t, const char *name) {
        for (NameEntry *e = t->names; e; e = e->next)
                if (streq(e->name, name))
                        return e;
        return NULL;
}

static void entry_unlink(NameEntry *e) {
        NameTrack *t = e->track;

        for (NameEntry **p = &t->names; *p; p = &(*p)->next)
                if (*p == e) {
                        *p = e->next;
                        t->n_names--;
                        return;
                }
}

static void entry_free(NameEntry *e) {
        if (!e)
                return;
        /* Unreferencing a slot from its own callback is allowed: sd-bus holds
         * its own reference while it runs it. */
        sd_bus_slot_unref(e->match);
        sd_bus_slot_unref(e->query);
        free(e->name);
        free(e);
}

/* e's name left the bus: out of t, then its owner is told. */
static void entry_gone(NameEntry *e) {
        NameTrack *t = e->track;
        char *name = TAKE_PTR(e->name);

        entry_unlink(e);
        entry_free(e);
        if (t->gone)
                t->gone(t, name, t->userdata);
        free(name);
}

static int on_owner_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        NameEntry *e = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(msg, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (streq(name, e->name) && new_owner[0] == '\0')
                entry_gone(e);
        return 0;
}

static int on_owner_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        NameEntry *e = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(reply);

        e->query = sd_bus_slot_unref(e->query);
        if (err && sd_bus_error_has_name(err, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                entry_gone(e);
        else if (err) /* a timeout, say: the match still tells when it goes */
                log_debug("Cannot ask the bus whether %s is still there: %s", e->name, err->message ?: err->name);
        return 0;
}

static int on_match_installed(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        NameEntry *e = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(reply);

        /* Without it nobody says when the name goes: what the name holds stays
         * until freezerd stops.  (sd-bus's default would close the bus.) */
        if (err)
                log_warning("Cannot follow bus client %s (the bus refused a match: %s); what it holds stays "
                            "until it is undone by hand or freezerd stops",
                            e->name, err->message ?: err->name);
        return 0;
}

int name_track_new(sd_bus *bus, name_track_gone_t gone, void *userdata, NameTrack **ret) {
        NameTrack *t = calloc(1, sizeof *t);

        if (!t)
                return -ENOMEM;
        t->bus = sd_bus_ref(bus);
        t->gone = gone;
        t->userdata = userdata;
        *ret = t;
        return 0;
}

NameTrack *name_track_free(NameTrack *t) {
        if (!t)
                return NULL;
        while (t->names) {
                NameEntry *e = t->names;
                t->names = e->next;
                entry_free(e);
        }
        sd_bus_unref(t->bus);
        free(t);
        return NULL;
}

int name_track_add(NameTrack *t, const char *name) {
        char rule[256];
        NameEntry *e;
        int r;

        e = entry_find(t, name);
        if (e) {
                e->n_ref++;
                return 0;
        }
        /* Unique names are ":" and [A-Za-z0-9._-]: nothing to quote. */
        r = snprintf(rule, sizeof rule,
                     "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                     "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'",
                     name);
        if (r < 0 || (size_t) r >= sizeof rule || strchr(name, '\''))
                return -EINVAL;
        e = calloc(1, sizeof *e);
        if (!e)
                return -ENOMEM;
        e->track = t;
        e->n_ref = 1;
        e->name = strdup(name);
        if (!e->name) {
                free(e);
                return -ENOMEM;
        }
        r = sd_bus_add_match_async(t->bus, &e->match, rule, on_owner_changed, on_match_installed, e);
        if (r >= 0)
                r = sd_bus_call_method_async(t->bus, &e->query, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                             "org.freedesktop.DBus", "GetNameOwner", on_owner_reply, e, "s", name);
        if (r < 0) {
                entry_free(e);
                return r;
        }
        e->next = t->names;
        t->names = e;
        t->n_names++;
        return 0;
}

int name_track_remove(NameTrack *t, const char *name, bool all) {
        NameEntry *e = t ? entry_find(t, name) : NULL;

        if (!e)
                return 0;
        if (!all && --e->n_ref > 0)
                return 1;
        entry_unlink(e);
        entry_free(e);
        return 1;
}

unsigned name_track_count(const NameTrack *t) {
        return t ? t->n_names : 0;
}
