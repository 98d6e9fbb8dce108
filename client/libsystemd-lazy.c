/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * libsystemd for freezectl, loaded on first use (see lazy-load.h).
 *
 * freezectl carries libfreezer's code, which talks through sd-bus. Linked
 * against libsystemd, every start would map and relocate it and what it
 * needs (libgcrypt, libgpg-error, liblzma, libzstd, liblz4, libcap): about
 * 2 ms here, a third of a "freezectl freeze". freeze and thaw over the private
 * socket need none of it (bus-wire.h); everything else loads it on its first
 * sd-bus call. The variadic functions go through their va_list forms.
 */

#include <stdarg.h>

#include <systemd/sd-bus.h>

#include "lazy-load.h"

#define LIBSYSTEMD_SONAME "libsystemd.so.0"

LAZY_LIBRARY(libsystemd_symbol, LIBSYSTEMD_SONAME)

#define FORWARD(ret, name, params, args) LAZY_FORWARD(libsystemd_symbol, ret, name, params, args)
#define FORWARD_VOID(name, params, args) LAZY_FORWARD_VOID(libsystemd_symbol, name, params, args)

FORWARD(int, sd_bus_add_filter, (sd_bus *bus, sd_bus_slot **slot, sd_bus_message_handler_t callback, void *userdata),
        (bus, slot, callback, userdata))
FORWARD(int, sd_bus_add_match, (sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback, void *userdata),
        (bus, slot, match, callback, userdata))
FORWARD(int, sd_bus_add_match_async, (sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback, sd_bus_message_handler_t install_callback, void *userdata),
        (bus, slot, match, callback, install_callback, userdata))
FORWARD(int, sd_bus_call, (sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error, sd_bus_message **reply),
        (bus, m, usec, ret_error, reply))
FORWARD(int, sd_bus_call_async, (sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback, void *userdata, uint64_t usec),
        (bus, slot, m, callback, userdata, usec))
FORWARD(int, sd_bus_call_methodv, (sd_bus *bus, const char *destination, const char *path, const char *interface, const char *member, sd_bus_error *ret_error, sd_bus_message **reply, const char *types, va_list ap),
        (bus, destination, path, interface, member, ret_error, reply, types, ap))
FORWARD(int, sd_bus_call_method_asyncv, (sd_bus *bus, sd_bus_slot **slot, const char *destination, const char *path, const char *interface, const char *member, sd_bus_message_handler_t callback, void *userdata, const char *types, va_list ap),
        (bus, slot, destination, path, interface, member, callback, userdata, types, ap))
FORWARD(int, sd_bus_error_copy, (sd_bus_error *dest, const sd_bus_error *e), (dest, e))
FORWARD_VOID(sd_bus_error_free, (sd_bus_error *e), (e))
FORWARD(int, sd_bus_error_get_errno, (const sd_bus_error *e), (e))
FORWARD(int, sd_bus_error_has_name, (const sd_bus_error *e, const char *name), (e, name))
FORWARD(int, sd_bus_error_is_set, (const sd_bus_error *e), (e))
FORWARD(int, sd_bus_error_set, (sd_bus_error *e, const char *name, const char *message), (e, name, message))
FORWARD(int, sd_bus_error_set_errno, (sd_bus_error *e, int error), (e, error))
FORWARD(int, sd_bus_error_set_errnofv, (sd_bus_error *e, int error, const char *format, va_list ap),
        (e, error, format, ap))
FORWARD(int, sd_bus_error_setfv, (sd_bus_error *e, const char *name, const char *format, va_list ap),
        (e, name, format, ap))
FORWARD(sd_bus*, sd_bus_close_unref, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_get_fd, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_get_events, (sd_bus *bus), (bus))
FORWARD(sd_bus_slot*, sd_bus_get_current_slot, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_get_method_call_timeout, (sd_bus *bus, uint64_t *ret), (bus, ret))
FORWARD(int, sd_bus_get_timeout, (sd_bus *bus, uint64_t *timeout_usec), (bus, timeout_usec))
FORWARD(int, sd_bus_is_bus_client, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_is_open, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_is_ready, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_message_appendv, (sd_bus_message *m, const char *types, va_list ap), (m, types, ap))
FORWARD(int, sd_bus_message_at_end, (sd_bus_message *m, int complete), (m, complete))
FORWARD(int, sd_bus_message_close_container, (sd_bus_message *m), (m))
FORWARD(int, sd_bus_message_enter_container, (sd_bus_message *m, char type, const char *contents),
        (m, type, contents))
FORWARD(int, sd_bus_message_exit_container, (sd_bus_message *m), (m))
FORWARD(const sd_bus_error*, sd_bus_message_get_error, (sd_bus_message *m), (m))
FORWARD(const char*, sd_bus_message_get_interface, (sd_bus_message *m), (m))
FORWARD(const char*, sd_bus_message_get_path, (sd_bus_message *m), (m))
FORWARD(int, sd_bus_message_get_cookie, (sd_bus_message *m, uint64_t *cookie), (m, cookie))
FORWARD(const char*, sd_bus_message_get_sender, (sd_bus_message *m), (m))
FORWARD(int, sd_bus_message_is_method_error, (sd_bus_message *m, const char *name), (m, name))
FORWARD(int, sd_bus_message_is_signal, (sd_bus_message *m, const char *interface, const char *member),
        (m, interface, member))
FORWARD(int, sd_bus_message_new_method_call, (sd_bus *bus, sd_bus_message **m, const char *destination, const char *path, const char *interface, const char *member),
        (bus, m, destination, path, interface, member))
FORWARD(int, sd_bus_message_open_container, (sd_bus_message *m, char type, const char *contents),
        (m, type, contents))
FORWARD(int, sd_bus_message_readv, (sd_bus_message *m, const char *types, va_list ap), (m, types, ap))
FORWARD(int, sd_bus_message_read_array, (sd_bus_message *m, char type, const void **ptr, size_t *size),
        (m, type, ptr, size))
FORWARD(int, sd_bus_message_read_strv, (sd_bus_message *m, char ***l), (m, l))
FORWARD(int, sd_bus_message_set_auto_start, (sd_bus_message *m, int b), (m, b))
FORWARD(int, sd_bus_message_skip, (sd_bus_message *m, const char *types), (m, types))
FORWARD(int, sd_bus_message_rewind, (sd_bus_message *m, int complete), (m, complete))
FORWARD(sd_bus_message*, sd_bus_message_ref, (sd_bus_message *m), (m))
FORWARD(sd_bus_message*, sd_bus_message_unref, (sd_bus_message *m), (m))
FORWARD(int, sd_bus_new, (sd_bus **ret), (ret))
FORWARD(int, sd_bus_open_system, (sd_bus **ret), (ret))
FORWARD(int, sd_bus_open_user, (sd_bus **ret), (ret))
FORWARD(int, sd_bus_path_decode, (const char *path, const char *prefix, char **ret_external_id),
        (path, prefix, ret_external_id))
FORWARD(int, sd_bus_path_encode, (const char *prefix, const char *external_id, char **ret_path),
        (prefix, external_id, ret_path))
FORWARD(int, sd_bus_process, (sd_bus *bus, sd_bus_message **r), (bus, r))
FORWARD(int, sd_bus_set_address, (sd_bus *bus, const char *address), (bus, address))
FORWARD(int, sd_bus_set_bus_client, (sd_bus *bus, int b), (bus, b))
FORWARD(sd_bus_slot*, sd_bus_slot_ref, (sd_bus_slot *slot), (slot))
FORWARD(sd_bus_slot*, sd_bus_slot_unref, (sd_bus_slot *slot), (slot))
FORWARD(int, sd_bus_start, (sd_bus *bus), (bus))
FORWARD(int, sd_bus_wait, (sd_bus *bus, uint64_t timeout_usec), (bus, timeout_usec))

int sd_bus_call_method(sd_bus *bus, const char *destination, const char *path, const char *interface,
                       const char *member, sd_bus_error *ret_error, sd_bus_message **reply, const char *types,
                       ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_methodv(bus, destination, path, interface, member, ret_error, reply, types, ap);
        va_end(ap);
        return r;
}

int sd_bus_call_method_async(sd_bus *bus, sd_bus_slot **slot, const char *destination, const char *path,
                             const char *interface, const char *member, sd_bus_message_handler_t callback,
                             void *userdata, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_method_asyncv(bus, slot, destination, path, interface, member, callback, userdata, types,
                                      ap);
        va_end(ap);
        return r;
}

int sd_bus_message_append(sd_bus_message *m, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        return r;
}

int sd_bus_message_read(sd_bus_message *m, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_message_readv(m, types, ap);
        va_end(ap);
        return r;
}

int sd_bus_error_setf(sd_bus_error *e, const char *name, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = sd_bus_error_setfv(e, name, format, ap);
        va_end(ap);
        return r;
}

int sd_bus_error_set_errnof(sd_bus_error *e, int error, const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = sd_bus_error_set_errnofv(e, error, format, ap);
        va_end(ap);
        return r;
}

/* What sd_bus_error_has_names() expands to: one sd_bus_error_has_name() per name. */
int sd_bus_error_has_names_sentinel(const sd_bus_error *e, ...) {
        const char *name;
        va_list ap;
        int r = 0;

        va_start(ap, e);
        while (!r && (name = va_arg(ap, const char *)))
                r = sd_bus_error_has_name(e, name);
        va_end(ap);
        return r;
}
