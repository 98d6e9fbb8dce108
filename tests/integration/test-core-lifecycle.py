#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""freezerd picks up the kernel's state at start, follows Populated, and leaves
every group as the kernel has it on SIGTERM.

Before freezerd starts:
  /pre       frozen behind its back (cgroup.freeze 1, frozen 1)
  /pre/kid   one sleeper (frozen by /pre)
  /s         cgroup.freeze 1 but a task blocked on a FUSE mount: freezing forever
  /pop       two sleepers

Checks:
  * At start (READY=1 with a STATUS): /pre "frozen" (Freeze, Frozen true),
    /pre/kid "frozen-by-parent", /s "freezing", /pop "running"; the root's
    Descendants / FrozenDescendants equal the kernel's counts (4 / 2).
  * Populated: cgroup.kill of /pop signals Populated=false; a new process in
    /pop signals Populated=true.
  * SIGTERM while a Freeze of /s waits (on a second connection) and /pop is
    frozen through freezerd: freezerd exits 0, the waiting call gets an error
    reply (org.freezerd.Freezer1.Error.Cancelled), every cgroup.freeze and
    "frozen" is as before the SIGTERM.
  * A second freezerd on the same tree reports the same states."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

PATHS = ['/pre', '/pre/kid', '/s', '/pop']


def kernel(sc):
    return {p: (sc.read_freeze(p), sc.read_events(p).get('frozen')) for p in PATHS}


def states(c):
    return {p: c.group_property(p, 'FreezerState') for p in PATHS}


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-lifecycle') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        for p in PATHS:
            sc.mkdir(p)
        sc.spawn_sleepers('/pre/kid', 1)
        sc.spawn_sleepers('/pop', 2)
        fuse.spawn_stuck(sc, '/s')
        sc.write_freeze('/pre', 1)
        sc.write_freeze('/s', 1)
        sc.wait_events('/pre', frozen=1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            ft.check(any(n.get('READY') == '1' and n.get('STATUS') for n in d.notifications),
                     'READY=1 came with a STATUS', d.notifications)
            ft.check_equal(states(c), {'/pre': 'frozen', '/pre/kid': 'frozen-by-parent', '/s': 'freezing',
                                       '/pop': 'running'}, 'states picked up at start')
            pre = c.get_all(ft.group_object('/pre'), ft.GROUP_IFACE)
            ft.check_equal((pre['Freeze'], pre['Frozen'], pre['Descendants'], pre['FrozenDescendants']),
                           (True, True, 1, 1), '/pre: Freeze, Frozen, Descendants, FrozenDescendants')
            root = c.get_all(ft.group_object('/'), ft.GROUP_IFACE)
            ft.check_equal((root['Descendants'], root['FrozenDescendants']), (4, 2),
                           'root: Descendants 4, FrozenDescendants 2 (/pre, /pre/kid)')

            # ---- Populated
            rec = c.record()
            pop = ft.group_object('/pop')
            sc.kill('/pop')
            sc.wait_events('/pop', populated=0)
            rec.wait_property(pop, 'Populated', False)
            ft.check_equal(c.get_property(pop, ft.GROUP_IFACE, 'Populated'), False, '/pop: Populated false signalled')
            sc.spawn_sleepers('/pop', 1)
            rec.wait_property(pop, 'Populated', True)
            ft.check_equal(c.get_property(pop, ft.GROUP_IFACE, 'Populated'), True, '/pop: Populated true signalled')

            # ---- SIGTERM with a waiting call
            c.call('Freeze', '/pop', 0, 0)
            with ft.Client(bus.address) as c2:
                pending = c2.call_async('Freeze', '/s', 60 * 1000000, 0)
                ft.check_equal(c2.group_property('/s', 'FreezerState'), 'freezing', 'Freeze(/s) is waiting')
                ft.check(not pending.done(), 'no reply yet')
                before = kernel(sc)
                status = d.stop()
                ft.check_equal(status, 0, 'freezerd exits 0 on SIGTERM')
                e = ft.expect_dbus_error(ft.ERROR_CANCELLED, pending.result)
                ft.check(True, f'the waiting call was answered: {e.message}')
            ft.check_equal(kernel(sc), before, 'every cgroup.freeze and frozen is as the kernel had it')
            ft.check_equal(before['/pop'], (1, 1), '/pop stays frozen')

        # ---- a second freezerd reads the same states
        with ft.Daemon(bus, sc.root) as d:
            ft.check_equal(states(d.client), {'/pre': 'frozen', '/pre/kid': 'frozen-by-parent', '/s': 'freezing',
                                              '/pop': 'frozen'}, 'a restarted freezerd reports the same states')
            for p in ('/pre', '/pop', '/s'):
                d.client.call('Thaw', p, 0, 0)
            ft.check_equal(kernel(sc), {p: (0, 0) for p in PATHS}, 'all thawed')
    print('# checked: state picked up at start (external freeze, freezing, frozen-by-parent, counts), Populated '
          'signals, SIGTERM answers waiters and leaves the kernel state, restart')


ft.run(test)
