#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezer_lookup_group(f, path, flags, ret, ret_id) (libfreezer 0.7, LIBFREEZER_0.7).

  /t (the "track" setting); /o, /o/a; /p

  * FREEZER_LOOKUP_TRANSIENT of /o fills the group and its Id as freezer_get_group()
    and ListGroups do; freezerd lists /o, tracked.json does not; freezer_close() of the
    handle (its name leaves the bus) and /o goes (InterfacesRemoved).
  * The same over the private socket (freezer_open_private()).
  * flags 0: as freezer_get_group(), /p tracked for good (tracked.json).
  * A bit freezerd does not know (2): -EINVAL, the error InvalidArgs naming 0x2, nothing
    tracked."""

import ctypes
import errno
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')

TRANSIENT = 1


def listed(d, path):
    return path in ft.published_paths(d.client)


def kept(d, path):
    return path in (ft.tracked_roots(d.state_dir) or [])


def check_transient(lib, d, rec, f, what):
    g = base.Group()
    gid = ctypes.c_uint64()
    ft.check_equal(lib.freezer_lookup_group(f, b'/o', TRANSIENT, ctypes.byref(g), ctypes.byref(gid)), 0,
                   f'{what}: freezer_lookup_group(/o, TRANSIENT)')
    ft.check_equal((g.path, g.object.decode()), (b'/o', ft.group_object('/o')), f'{what}: its path and object')
    ids = dict(d.client.call('ListGroupIds')[0])
    ft.check_equal(gid.value, ids.get('/o'), f'{what}: its Id, as ListGroupIds says')
    lib.freezer_group_clear(ctypes.byref(g))
    ft.check(listed(d, '/o') and listed(d, '/o/a') and not kept(d, '/o'),
             f'{what}: /o listed while the handle is open, not in tracked.json')
    rec.clear()
    lib.freezer_close(f)
    obj = ft.group_object('/o')
    rec.wait_for(lambda r: any(o == obj for o, _i in r.interfaces_removed()),
                 what=f'{what}: /o untracked once the handle closed')
    ft.check(not listed(d, '/o') and not kept(d, '/o'), f'{what}: closed, /o gone')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    base.reexec_for_asan(base.libfreezer_path())
    lib = base.load()
    P = ctypes.c_void_p
    if getattr(lib, 'freezer_lookup_group', None) is None:
        ft.fail('libfreezer lacks freezer_lookup_group')
    base.bind(lib, {'freezer_lookup_group': (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_uint64,
                                                            ctypes.POINTER(base.Group),
                                                            ctypes.POINTER(ctypes.c_uint64)])})
    with ft.Scratch('libfreezer-lookup') as sc, ft.Bus() as bus:
        for p in ('/t', '/o/a', '/p'):
            sc.mkdir(p)
        with ft.Daemon(bus, sc.root, config={'track': ['/t']}) as d:
            rec = d.client.record(subscribe=False)

            f = P()
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
            check_transient(lib, d, rec, f, 'bus')

            f = P()
            private = os.path.join(d.runtime_dir, 'private')
            ft.check_equal(lib.freezer_open_private(ctypes.byref(f), private.encode()), 0, 'freezer_open_private')
            check_transient(lib, d, rec, f, 'private socket')

            f = P()
            ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
            try:
                g = base.Group()
                ft.check_equal(lib.freezer_lookup_group(f, b'/p', 0, ctypes.byref(g), None), 0,
                               'freezer_lookup_group(/p, 0)')
                lib.freezer_group_clear(ctypes.byref(g))
                ft.check(kept(d, '/p'), 'flags 0: /p tracked for good', ft.tracked_roots(d.state_dir))
                ft.check_equal(lib.freezer_lookup_group(f, b'/o', 2, ctypes.byref(g), None), -errno.EINVAL,
                               'flags 2: -EINVAL')
                ft.check_equal(lib.freezer_last_error_name(f), ft.ERROR_INVALID_ARGS.encode(), '  ... InvalidArgs')
                ft.check(b'0x2' in (lib.freezer_last_error_message(f) or b''), '  ... naming 0x2',
                         lib.freezer_last_error_message(f))
                ft.check(not listed(d, '/o'), '  ... /o not tracked')
            finally:
                lib.freezer_close(f)
            ft.check_equal(d.warnings(), [], 'freezerd warnings')


if __name__ == '__main__':
    ft.run(test)
