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
#define BUS_ERROR_NOT_TRACKED "org.freezerd.Freezer1.Error.NotTracked"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-bus.h>

#include "util.h"

/* A failure of freezerd's own, on the way to what the caller asked (a file of
 * its runtime directory or of a cgroup refused, memory): Failed, or NoMemory
 * for ENOMEM, with the errno's text in the message, and r returned.  Not
 * sd_bus_error_set_errno()'s names: they would answer EPERM and EACCES with
 * AccessDenied (the caller's permission, which freezerd checked already:
 * access.c), EINVAL with InvalidArgs and most others with System.Error.*,
 * which README and the interface XML do not list. */
_printf_(3, 4) static inline int bus_error_set_failed(sd_bus_error *error, int r, const char *format, ...) {
        char *message = NULL;
        va_list ap;

        if (r >= 0)
                r = -EIO; /* as sd-bus does with a positive errno */
        va_start(ap, format);
        if (vasprintf(&message, format, ap) < 0)
                message = NULL;
        va_end(ap);
        (void) sd_bus_error_set(error, r == -ENOMEM ? SD_BUS_ERROR_NO_MEMORY : SD_BUS_ERROR_FAILED,
                                message ?: strerror(-r));
        free(message);
        return r;
}
