/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Which bus clients are still on the bus, asked without waiting for
 * dbus-daemon.  What sd_bus_track does, less its synchronous GetNameOwner at
 * each new name: with dbus-daemon slow or stopped, that call held freezerd's
 * whole loop (the private socket, the kernel's events, every other client)
 * for up to sd-bus's 25 s.  Here a new name gets a match on its
 * NameOwnerChanged and an asynchronous GetNameOwner, sent in that order:
 * dbus-daemon answers in order, so a name gone before the match was in place
 * is reported by the answer, one gone after by the signal.
 *
 * Names are unique names (":1.42"), never reused, each counted once per add. */

#include <stdbool.h>
#include <systemd/sd-bus.h>

typedef struct NameTrack NameTrack;

/* name left the bus; it is no longer in t (its count is gone). */
typedef void (*name_track_gone_t)(NameTrack *t, const char *name, void *userdata);

/* gone may be NULL. -ENOMEM. */
int name_track_new(sd_bus *bus, name_track_gone_t gone, void *userdata, NameTrack **ret);
NameTrack *name_track_free(NameTrack *t);
/* One more count of name.  -ENOMEM, or what sd-bus says (no bus). */
int name_track_add(NameTrack *t, const char *name);
/* One count less of name (every count with all); 1 if it had one, 0 if not. */
int name_track_remove(NameTrack *t, const char *name, bool all);
/* The names in t. */
unsigned name_track_count(const NameTrack *t);
