/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of bus_error_set_failed() (daemon/bus-errors.h), the name of
 * every reply about a failure of freezerd's own, also at the sites no
 * integration test reaches for real (test-fault-errnames reaches the rest):
 * the listing of the groups below a RECURSIVE thaw or a FreezeExcept, the
 * owner of a group freezerd does not follow, an epoll_ctl() of a pressure
 * trigger, a bus client it cannot follow, an internal EINVAL. */
#include <systemd/sd-bus.h>

#include "bus-errors.h"
#include "test-util.h"

static void check_failed(int r, const char *name) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char expected[256];

        snprintf(expected, sizeof expected, "Cannot read x of /g: %s", strerror(-r));
        CHECK_R(bus_error_set_failed(&e, r, "Cannot read x of %s: %s", "/g", strerror(-r)), r);
        CHECK_STR(e.name, name);
        CHECK_STR(e.message, expected);
        sd_bus_error_free(&e);
}

static void test_names(void) {
        /* sd_bus_error_set_errno() would say AccessDenied, the caller's refusal. */
        check_failed(-EPERM, SD_BUS_ERROR_FAILED);
        check_failed(-EACCES, SD_BUS_ERROR_FAILED);
        /* ... InvalidArgs, the caller's arguments. */
        check_failed(-EINVAL, SD_BUS_ERROR_FAILED);
        /* ... System.Error.*, or names no document lists. */
        check_failed(-EIO, SD_BUS_ERROR_FAILED);
        check_failed(-ENOSPC, SD_BUS_ERROR_FAILED);
        check_failed(-EROFS, SD_BUS_ERROR_FAILED);
        check_failed(-ENOENT, SD_BUS_ERROR_FAILED);
        check_failed(-ETIMEDOUT, SD_BUS_ERROR_FAILED);
        check_failed(-EBADF, SD_BUS_ERROR_FAILED);
        check_failed(-ENOMEM, SD_BUS_ERROR_NO_MEMORY);
}

static void test_edges(void) {
        sd_bus_error e = SD_BUS_ERROR_NULL;

        /* No errno: -EIO, as sd-bus takes it. */
        CHECK_R(bus_error_set_failed(&e, 0, "x"), -EIO);
        CHECK_STR(e.name, SD_BUS_ERROR_FAILED);
        sd_bus_error_free(&e);

        /* An error set already is kept (as sd_bus_error_set() keeps it), r returned. */
        (void) sd_bus_error_set(&e, SD_BUS_ERROR_INVALID_ARGS, "first");
        CHECK_R(bus_error_set_failed(&e, -EACCES, "second"), -EACCES);
        CHECK_STR(e.name, SD_BUS_ERROR_INVALID_ARGS);
        CHECK_STR(e.message, "first");
        sd_bus_error_free(&e);

        /* No error to set: r all the same. */
        CHECK_R(bus_error_set_failed(NULL, -EPERM, "x"), -EPERM);
}

int main(void) {
        test_names();
        test_edges();
        return test_summary("test-bus-errors");
}
