#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libfreezer's group callback keeps a table of freezerd's groups (listed at its installation,
then by the signals), to make up for signals dropped past the handle's queue (test-libfreezer-queue,
test-core-libfreezer-bound) and to pass over a signal that changes nothing in it.  Here, on the bus:

  * A group made and removed: reported added, then removed, once each.
  * A restart of freezerd: /r made while none ran, then removed once the new freezerd publishes
    it: reported removed, once.  The handle lists the new freezerd's groups when it sees its
    NameOwnerChanged (a table still of the old freezerd's, without /r, would pass over the
    removal as one of a group it never had)."""

import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

base = ft.load_test_module('test-core-libfreezer')


def published(c, path):
    return any(p == path for p, _o, _s in c.call('ListGroups')[0])


def check_groups(lib, sc, bus):
    events = []
    f = ctypes.c_void_p()

    @base.GROUP_CALLBACK
    def on_group(_f, path, added, _state, _ud):
        events.append((path.decode(), bool(added)))

    def reported(event, what):
        ft.wait_for(lambda: (lib.freezer_dispatch(f), event in events)[1], poll=0.02,
                    what=f'the group callback: {what}')

    ft.check_equal(lib.freezer_open_address(ctypes.byref(f), bus.address.encode()), 0, 'freezer_open_address')
    try:
        with ft.Daemon(bus, sc.root):
            ft.check_equal(lib.freezer_set_group_callback(f, on_group, None), 0, 'freezer_set_group_callback')
            sc.mkdir('/a')
            reported(('/a', True), '/a added')
            sc.rmdir('/a')
            reported(('/a', False), '/a removed')
            ft.check_equal(events, [('/a', True), ('/a', False)], '/a made and removed: reported once each')

        sc.mkdir('/r')  # while no freezerd runs
        with ft.Daemon(bus, sc.root) as d:
            ft.wait_for(lambda: published(d.client, '/r'), what='the new freezerd to publish /r')
            sc.rmdir('/r')
            reported(('/r', False), '/r removed after the restart')
            # Behind the removal: one round trip more, for a second report to come.
            ids, n = ctypes.c_void_p(), ctypes.c_size_t()
            ft.check_equal(lib.freezer_list_ids(f, ctypes.byref(ids), ctypes.byref(n)), 0, 'freezer_list_ids')
            lib.freezer_group_id_array_free(ids, n)
            while lib.freezer_dispatch(f) > 0:
                pass
            ft.check_equal([e for e in events if e == ('/r', False)], [('/r', False)],
                           'restart: /r, made while no freezerd ran, reported removed once')
    finally:
        lib.freezer_close(f)
        if sc.exists('/r'):
            sc.rmdir('/r')


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    base.reexec_for_asan(base.libfreezer_path())
    lib = base.load()
    with ft.Scratch('libfreezer-groups') as sc:
        with ft.Bus() as bus:
            check_groups(lib, sc, bus)
    print('# checked: libfreezer\'s group callback on the bus: reports once each, its table listed again '
          'after a restart of freezerd')


if __name__ == '__main__':
    ft.run(test)
