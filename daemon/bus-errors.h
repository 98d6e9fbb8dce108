/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* D-Bus error names of org.freezerd.Freezer1 (documented in dbus/org.freezerd.Freezer1.xml). */

#define BUS_ERROR_NO_SUCH_GROUP "org.freezerd.Freezer1.Error.NoSuchGroup"
#define BUS_ERROR_INVALID_PATH "org.freezerd.Freezer1.Error.InvalidPath"
#define BUS_ERROR_TIMEOUT "org.freezerd.Freezer1.Error.Timeout"
#define BUS_ERROR_FROZEN_BY_PARENT "org.freezerd.Freezer1.Error.FrozenByParent"
#define BUS_ERROR_CANCELLED "org.freezerd.Freezer1.Error.Cancelled"
#define BUS_ERROR_NOT_SUPPORTED "org.freezerd.Freezer1.Error.NotSupported"
#define BUS_ERROR_LIMITS_EXCEEDED "org.freezerd.Freezer1.Error.LimitsExceeded"
#define BUS_ERROR_NOT_SUBSCRIBED "org.freezerd.Freezer1.Error.NotSubscribed"
