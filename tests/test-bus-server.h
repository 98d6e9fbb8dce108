/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The stand-in for freezerd's private socket that the unit tests of the
 * clients run in a child (test_serve_fork() in test-util.h): a bus server
 * (sd-bus, as freezerd's) serving a test's own methods. */

#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

/* Serve each connection to listen_fd in turn, vtable at path and interface,
 * until the client closes it or, if drop is not NULL, a method sets *drop (the
 * connection is then closed: the client gets no reply).  *drop is false again
 * for the next connection.  Exits 2 if a connection cannot be served. */
_Noreturn static inline void test_bus_serve(int listen_fd, const char *path, const char *interface,
                                            const sd_bus_vtable *vtable, bool *drop) {
        sd_id128_t id;

        if (sd_id128_randomize(&id) < 0)
                _exit(2);
        for (;;) {
                sd_bus *bus = NULL;
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

                if (fd < 0)
                        _exit(2);
                if (drop)
                        *drop = false;
                if (sd_bus_new(&bus) < 0 || sd_bus_set_fd(bus, fd, fd) < 0 || sd_bus_set_server(bus, true, id) < 0 ||
                    sd_bus_add_object_vtable(bus, NULL, path, interface, vtable, NULL) < 0 || sd_bus_start(bus) < 0)
                        _exit(2);
                while (!drop || !*drop) {
                        int r = sd_bus_process(bus, NULL);
                        if (r < 0)
                                break; /* the client went away */
                        if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                                break;
                }
                sd_bus_close_unref(bus);
        }
}
