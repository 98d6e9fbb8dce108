#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Freeze reversed before it completes fails with Cancelled.

  /c       two sleepers and a task blocked on a FUSE mount that never answers,
           so a Freeze of /c stays pending
  /d/sub   a sleeper and a blocked task (a pending Freeze of /d/sub)

Checks:
  * Manager.Freeze("/c") and, from a second connection, Group.Freeze on /c wait
    (FreezerState "freezing"); Thaw("/c") succeeds (at its reply cgroup.freeze
    is 0 and the kernel says frozen 0); both Freeze calls fail with
    org.freezerd.Freezer1.Error.Cancelled naming /c; FreezerState "running"
    and no task is in the freezer trap.
  * A second Freeze of /c (same direction) does not cancel the first: both
    complete once the blocked task is killed.
  * cgroup.freeze written back to 0 behind freezerd's back cancels a pending
    Freeze too.
  * A pending call is not cancelled by flag changes of other groups: Freeze of
    /d/sub stays pending across Freeze(/d, NO_WAIT) and Thaw(/d), and succeeds
    once the blocked task is killed."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

LONG = 60 * 1000000


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-cancel') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/c')
        sc.spawn_sleepers('/c', 2)
        sc.mkdir('/d/sub')
        sc.spawn_sleepers('/d/sub', 1)

        with ft.Daemon(bus, sc.root) as d, ft.Client(bus.address) as c2:
            c = d.client
            obj = c.call('GetGroup', '/c')[0]

            # ---- Freeze reversed by Thaw
            stuck = fuse.spawn_stuck(sc, '/c')
            p1 = c.call_async('Freeze', '/c', LONG, 0)
            p2 = c2.group_call_async('/c', 'Freeze', LONG, 0)
            # The Gets are answered after each connection's Freeze was handled.
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', '/c is freezing')
            ft.check_equal(c2.get_property(obj, ft.GROUP_IFACE, 'Freeze'), True, '/c Freeze flag set')
            ft.check(not p1.done() and not p2.done(), 'both Freeze calls are pending')
            c.call('Thaw', '/c', 0, 0)
            ft.check_equal((sc.read_freeze('/c'), sc.read_events('/c').get('frozen')), (0, 0),
                           'at the Thaw reply: cgroup.freeze 0, frozen 0')
            for what, p in (('Manager.Freeze', p1), ('Group.Freeze (second connection)', p2)):
                e = ft.expect_dbus_error(ft.ERROR_CANCELLED, p.result)
                ft.check('/c' in e.message, f'{what}: the Cancelled message names /c', repr(e.message))
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'running', '/c is running')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Freeze'), False, '/c Freeze flag clear')
            sc.wait_tasks_frozen('/c', frozen=False)
            ft.check(sc.no_task_frozen('/c'), 'no task of /c is in the freezer trap', sc.proc_states('/c'))

            # ---- cgroup.freeze written behind freezerd's back
            p3 = c.call_async('Freeze', '/c', LONG, 0)
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', '/c is freezing again')
            sc.write_freeze('/c', 0)
            e = ft.expect_dbus_error(ft.ERROR_CANCELLED, p3.result)
            ft.check('/c' in e.message, 'the Cancelled message names /c', repr(e.message))
            # The Cancelled reply comes from the same update of the model.
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'running',
                           '/c is running after the external write')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Freeze'), False, '/c Freeze flag clear')

            # ---- two Freezes in the same direction do not cancel each other
            p4 = c.call_async('Freeze', '/c', LONG, 0)
            p5 = c2.call_async('Freeze', '/c', LONG, 0)
            ft.check_equal(c2.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', '/c is freezing')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', 'still freezing')
            ft.check(not p4.done() and not p5.done(), 'both Freeze calls are pending')
            os.kill(stuck.pid, signal.SIGKILL)
            p4.result()
            p5.result()
            ft.check_equal(sc.read_events('/c').get('frozen'), 1, 'both Freeze calls succeeded with /c frozen 1')
            c.call('Thaw', '/c', 0, 0)

            # ---- other groups' flags do not cancel a pending call
            sub = fuse.spawn_stuck(sc, '/d/sub')
            p6 = c.call_async('Freeze', '/d/sub', LONG, 0)
            ft.check_equal(c.group_property('/d/sub', 'FreezerState'), 'freezing', '/d/sub is freezing')
            c.call('Freeze', '/d', 0, ft.FLAG_NO_WAIT)
            c.call('Thaw', '/d', 0, 0)
            ft.check_equal(c.group_property('/d/sub', 'FreezerState'), 'freezing', '/d/sub is still freezing')
            ft.check(not p6.done(), 'Freeze(/d/sub) is still pending after Freeze/Thaw of /d')
            os.kill(sub.pid, signal.SIGKILL)
            p6.result()
            ft.check_equal(sc.read_events('/d/sub').get('frozen'), 1, 'Freeze(/d/sub) succeeded with frozen 1')
            c.call('Thaw', '/d/sub', 0, 0)
    print('# checked: Cancelled for a Freeze reversed by Thaw (two connections, manager and group object) and by '
          'an external cgroup.freeze write; same-direction and other-group requests do not cancel')


ft.run(test)
