#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's own checks of its arguments (the built libfreezer.so.0, loaded with ctypes,
on a handle to freezerd on a private bus): each refusal is -EINVAL with the last error
org.freedesktop.DBus.Error.InvalidArgs and a message that names the argument and its value
(freezer.h, "Conventions").  The message was "Invalid argument", which named nothing, so
that a program printing the last error (freezectl does) could not say what was wrong.

Checks:
  * freezer_freeze(), freezer_thaw(), freezer_track() of a NULL path: "The path is NULL".
  * freezer_apply_batch() with order 7: "Unknown order 7 (...)"; with request 1's path NULL:
    "Request 1: the path is NULL"; with requests NULL and n 2: "... n 2".
  * freezer_freeze_except() with excluded path 1 NULL: "Excluded path 1 is NULL".
  * freezer_get_pressure() and freezer_add_pressure_trigger() of resource 9: "Unknown resource 9".
  * A valid call after them works (the handle is fine)."""

import ctypes
import errno
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')


class Request(ctypes.Structure):
    _fields_ = [('path', ctypes.c_char_p), ('freeze', ctypes.c_bool)]


class Pressure(ctypes.Structure):
    _fields_ = [('v', ctypes.c_double * 8)]  # room for freezer_pressure; only the call's refusal matters


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    path = base.libfreezer_path()
    base.reexec_for_asan(path)
    lib = base.open_lib(path)
    P = ctypes.c_void_p
    base.bind(lib, {
        'freezer_open_address': (ctypes.c_int, [ctypes.POINTER(P), ctypes.c_char_p]),
        'freezer_close': (P, [P]),
        'freezer_last_error_name': (ctypes.c_char_p, [P]),
        'freezer_last_error_message': (ctypes.c_char_p, [P]),
        'freezer_freeze': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]),
        'freezer_thaw': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]),
        'freezer_track': (ctypes.c_int, [P, ctypes.c_char_p]),
        'freezer_apply_batch': (ctypes.c_int, [P, ctypes.POINTER(Request), ctypes.c_size_t, ctypes.c_int,
                                               ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint32),
                                               ctypes.POINTER(ctypes.c_uint32)]),
        'freezer_freeze_except': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                                 ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint64, P]),
        'freezer_get_pressure': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(Pressure)]),
        'freezer_add_pressure_trigger': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_int, ctypes.c_bool,
                                                        ctypes.c_uint64, ctypes.c_uint64,
                                                        ctypes.POINTER(ctypes.c_uint32)]),
    })

    with ft.Scratch('core-libfreezer-args') as sc, ft.Bus() as bus:
        sc.mkdir('/g/h')
        with ft.Daemon(bus, sc.root, config={'track': ['/g']}):
            f = ctypes.c_void_p()
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
            try:
                def refused(what, r, *words):
                    name = (lib.freezer_last_error_name(f) or b'').decode()
                    message = (lib.freezer_last_error_message(f) or b'').decode()
                    ft.check(r == -errno.EINVAL and name == ft.ERROR_INVALID_ARGS and all(w in message for w in words),
                             f'{what}: -EINVAL, InvalidArgs, "{message}" names {", ".join(words)}', (r, name, message))

                refused('freezer_freeze(NULL)', lib.freezer_freeze(f, None, 0, 0), 'The path is NULL')
                refused('freezer_thaw(NULL)', lib.freezer_thaw(f, None, 0, 0), 'The path is NULL')
                refused('freezer_track(NULL)', lib.freezer_track(f, None), 'The path is NULL')

                reqs = (Request * 2)(Request(b'/g', True), Request(b'/g/h', True))
                refused('freezer_apply_batch(order 7)',
                        lib.freezer_apply_batch(f, reqs, 2, 7, 0, 0, None, None), 'Unknown order 7')
                reqs[1].path = None
                refused('freezer_apply_batch(request 1 NULL)',
                        lib.freezer_apply_batch(f, reqs, 2, 0, 0, 0, None, None), 'Request 1', 'NULL')
                refused('freezer_apply_batch(requests NULL, n 2)',
                        lib.freezer_apply_batch(f, None, 2, 0, 0, 0, None, None), 'requests', 'NULL', 'n 2')

                excl = (ctypes.c_char_p * 2)(b'/g/h', None)
                refused('freezer_freeze_except(excluded 1 NULL)',
                        lib.freezer_freeze_except(f, b'/g', excl, 2, 0, 0, None), 'Excluded path 1 is NULL')

                p = Pressure()
                refused('freezer_get_pressure(resource 9)', lib.freezer_get_pressure(f, b'/g', 9, ctypes.byref(p)),
                        'Unknown resource 9')
                refused('freezer_add_pressure_trigger(resource 9)',
                        lib.freezer_add_pressure_trigger(f, None, 9, False, 100000, 2000000, None),
                        'Unknown resource 9')

                ft.check_equal((lib.freezer_freeze(f, b'/g', 0, 0), sc.read_freeze('/g')), (0, 1),
                               'a valid freeze after them works')
                ft.check_equal((lib.freezer_thaw(f, b'/g', 0, 0), sc.read_freeze('/g')), (0, 0), 'and its thaw')
            finally:
                lib.freezer_close(f)

    print('# checked: libfreezer refuses NULL paths, an unknown order or resource, NULL requests with InvalidArgs '
          'naming them')


if __name__ == '__main__':
    ft.run(test)
