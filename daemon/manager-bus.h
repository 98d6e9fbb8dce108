/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The bus glue: publishes the manager on org.freezerd.Freezer1 (manager
 * object, group objects through one fallback vtable, ObjectManager) and turns
 * model changes into signals.  All logic lives in manager.c. */

#include <systemd/sd-bus.h>

#include "manager.h"

/* The daemon's bus: objects, signals, pressure triggers. */
int manager_bus_attach(Manager *m, sd_bus *bus);
/* The objects alone (methods and properties; signals go out from
 * manager_bus_flush()), also on each connection of the private socket
 * (private-bus.h). */
int manager_bus_add_objects(Manager *m, sd_bus *bus);
/* A connection of the private socket closed while freezerd runs: what its
 * caller held there (pressure triggers) goes with it. */
void manager_bus_connection_closed(Manager *m, sd_bus *bus);
/* Emit GroupsChanged and PropertiesChanged for every group changed since the
 * last call (once per object), and the manager's Groups count, to the bus and
 * to the subscribed private connections. Call once per loop turn. */
void manager_bus_flush(Manager *m);
/* The bus's calls held until the bus says who sent them (see manager-bus.c):
 * with refuse (shutting down), answered Cancelled, and later ones are no
 * longer held; else dropped unanswered.  Before the bus is closed. */
void manager_bus_release_callers(bool refuse);
void manager_bus_timeout_changed(Manager *m);
