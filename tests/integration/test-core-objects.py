#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Group objects follow mkdir/rmdir; a Freeze waiting on a group that is removed
fails with NoSuchGroup.

  /p       one sleeper; frozen, then /p/new and /p/new/deeper are made under it
  /q       one task blocked on a FUSE mount that never answers (it cannot finish freezing)

Checks:
  * mkdir /p/new under frozen /p: ObjectManager.InterfacesAdded arrives for its
    object with Path "/p/new", FreezerState "frozen-by-parent", Freeze false,
    Frozen true; Get says the same; the kernel has cgroup.freeze 0 and frozen 1.
    A grandchild made at once appears too.  Groups counts them (PropertiesChanged).
  * rmdir of both: InterfacesRemoved for each (with the Group interface), GetGroup
    then fails with NoSuchGroup, Groups goes back.
  * rmdir during a pending Freeze: Manager.Freeze("/q") and Group.Freeze on /q
    wait (FreezerState "freezing", no reply).  To make sure the group is gone
    before freezerd could ever see it frozen (an empty group reports "frozen 1"
    at once), freezerd is stopped (SIGSTOP) while the blocked task is killed and
    /q removed, then continued (SIGCONT): both calls fail with NoSuchGroup naming
    /q, and InterfacesRemoved is emitted for /q."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def added(rec, obj):
    for o, ifaces in rec.interfaces_added():
        if o == obj:
            return ifaces
    return None


def removed(rec, obj):
    for o, ifaces in rec.interfaces_removed():
        if o == obj:
            return ifaces
    return None


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-objects') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/p')
        sc.spawn_sleepers('/p', 1)

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            c.call('Freeze', '/p', 0, 0)
            ft.check_equal(sc.read_events('/p').get('frozen'), 1, '/p frozen')
            groups0 = c.manager_property('Groups')
            rec = c.record()

            # ---- mkdir under a frozen group
            sc.mkdir('/p/new')
            obj = ft.group_object('/p/new')
            ifaces = rec.wait_for(lambda r: added(r, obj), what=f'InterfacesAdded for {obj}')
            ft.check(ft.GROUP_IFACE in ifaces, 'InterfacesAdded carries the Group interface', list(ifaces))
            props = ifaces[ft.GROUP_IFACE]
            ft.check_equal(props.get('Path'), '/p/new', 'InterfacesAdded: Path')
            ft.check_equal(props.get('FreezerState'), 'frozen-by-parent', 'InterfacesAdded: FreezerState')
            ft.check_equal((props.get('Freeze'), props.get('Frozen')), (False, True), 'InterfacesAdded: Freeze, Frozen')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'frozen-by-parent',
                           'Get FreezerState of /p/new: frozen-by-parent')
            ft.check_equal((sc.read_freeze('/p/new'), sc.read_events('/p/new').get('frozen')), (0, 1),
                           'kernel: /p/new has cgroup.freeze 0 and frozen 1')
            ft.check_equal(c.call('GetGroup', '/p/new')[0], obj, 'GetGroup(/p/new)')

            sc.mkdir('/p/new/deeper')
            obj2 = ft.group_object('/p/new/deeper')
            ifaces = rec.wait_for(lambda r: added(r, obj2), what=f'InterfacesAdded for {obj2}')
            ft.check_equal(ifaces.get(ft.GROUP_IFACE, {}).get('FreezerState'), 'frozen-by-parent',
                           'InterfacesAdded of /p/new/deeper: frozen-by-parent')
            ft.check_equal(sc.read_events('/p/new/deeper').get('frozen'), 1, 'kernel: /p/new/deeper frozen 1')
            rec.wait_property(ft.MANAGER_PATH, 'Groups', groups0 + 2)
            ft.check_equal(c.manager_property('Groups'), groups0 + 2, 'Groups counts the two new groups')

            # ---- rmdir
            sc.rmdir('/p/new/deeper')
            sc.rmdir('/p/new')
            for o in (obj2, obj):
                gone = rec.wait_for(lambda r: removed(r, o), what=f'InterfacesRemoved for {o}')
                ft.check(ft.GROUP_IFACE in gone, f'InterfacesRemoved for {o} lists the Group interface', gone)
            ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'GetGroup', '/p/new')
            rec.wait_property(ft.MANAGER_PATH, 'Groups', groups0)
            ft.check_equal(c.manager_property('Groups'), groups0, 'Groups is back')
            c.call('Thaw', '/p', 0, 0)

            # ---- rmdir during a pending Freeze
            sc.mkdir('/q')
            stuck = fuse.spawn_stuck(sc, '/q')
            qobj = c.call('GetGroup', '/q')[0]
            rec.clear()
            p1 = c.call_async('Freeze', '/q', 60 * 1000000, 0)
            p2 = c.group_call_async('/q', 'Freeze', 60 * 1000000, 0)
            ft.check_equal(c.get_property(qobj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', '/q is freezing')
            ft.check(not p1.done() and not p2.done(), 'both Freeze calls on /q are pending')
            ft.check_equal(sc.read_events('/q').get('frozen'), 0, 'kernel: /q frozen 0')

            os.kill(d.pid, signal.SIGSTOP)
            try:
                os.kill(stuck.pid, signal.SIGKILL)
                sc.wait_events('/q', populated=0)
                sc.rmdir('/q')
            finally:
                os.kill(d.pid, signal.SIGCONT)
            ft.check(not sc.exists('/q'), '/q removed while freezerd was stopped')
            for what, p in (('Manager.Freeze', p1), ('Group.Freeze', p2)):
                e = ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, p.result)
                ft.check('/q' in e.message, f'{what}: the NoSuchGroup message names /q', repr(e.message))
            gone = rec.wait_for(lambda r: removed(r, qobj), what=f'InterfacesRemoved for {qobj}')
            ft.check(ft.GROUP_IFACE in gone, 'InterfacesRemoved for /q lists the Group interface', gone)
            ft.expect_dbus_error(ft.ERROR_NO_SUCH_GROUP, c.call, 'Freeze', '/q', 0, 0)

            # ---- the same race with freezerd running: kill and rmdir at once.  freezerd may
            # see the empty group frozen before it goes (success) or not (NoSuchGroup); either
            # way the call must end at once, not at its 60 s deadline.
            sc.mkdir('/r')
            stuck = fuse.spawn_stuck(sc, '/r')
            robj = c.call('GetGroup', '/r')[0]
            rec.clear()
            p3 = c.call_async('Freeze', '/r', 60 * 1000000, 0)
            ft.check_equal(c.get_property(robj, ft.GROUP_IFACE, 'FreezerState'), 'freezing', '/r is freezing')
            os.kill(stuck.pid, signal.SIGKILL)
            sc.wait_events('/r', populated=0)
            sc.rmdir('/r')
            try:
                p3.result(timeout=10 * ft.TIMEOUT_MULTIPLIER)
                outcome = 'success'
            except ft.DBusError as e:
                outcome = e.name
            ft.check(outcome in ('success', ft.ERROR_NO_SUCH_GROUP),
                     f'Freeze(/r) raced with kill+rmdir ends at once with success or NoSuchGroup (got {outcome})')
            rec.wait_for(lambda r: removed(r, robj), what=f'InterfacesRemoved for {robj}')
            ft.check(True, 'InterfacesRemoved for /r')
    print('# checked: InterfacesAdded (frozen-by-parent) for groups made under a frozen group, InterfacesRemoved '
          'on rmdir, Groups; a pending Freeze (manager and group object) fails with NoSuchGroup when its group is '
          'removed')


ft.run(test)
