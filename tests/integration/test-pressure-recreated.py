#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pressure trigger on a cgroup that is removed and made again under the same
name (a unit restarted, a container made again) ends with PressureTriggerRemoved
"group-removed": the new cgroup is another.

  /g   empty; removed and made again

And one whose group is untracked, its cgroup still there, ends with
"untracked" (it said "group-removed": the untracked groups leave the model as
removed ones do):

  /t, /t/x  a track root and its child; Untrack("/t")
  /h        a track root that a SIGHUP's configuration no longer names

Checked with freezerd stopped meanwhile (it then sees both at once, and the
path exists again: it said "untracked") and with freezerd running (the
kernel's error on the trigger's fd may come first, and the path be back when
freezerd looks: it could say "error").
A reading and a trigger asked of /g's object after its cgroup was removed and
made again, while freezerd is stopped and so before it has read the removal,
are of the old group: NoSuchGroup (or, where freezerd read the removal first,
of the new /g's object: the new cgroup's).  They were taken from the new cgroup
by its path: the reading had the new cgroup's averages with the old one's
totals (the clamp), the trigger was armed on the new cgroup and ended
"group-removed" at once.

No sleeps: every wait is on D-Bus messages, with a deadline."""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec
HOG = ['sh', '-c', 'while :; do :; done']


def removed(client, tid):
    return [s.body for s in client.signals if s.member == 'PressureTriggerRemoved' and s.body[0] == tid]


def some_total(sc, path):
    with open(sc.abspath(path, 'cpu.pressure')) as f:
        return int(f.readline().split()[4].split('=')[1])


def remake(sc, path):
    os.rmdir(sc.abspath(path))
    os.mkdir(sc.abspath(path))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')

    with ft.Scratch('pressure-recreated') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sc.require_pressure('/g')
        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)

            # -- removed and made again, freezerd stopped meanwhile
            tid = c.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            os.kill(d.pid, signal.SIGSTOP)
            try:
                remake(sc, '/g')
            finally:
                os.kill(d.pid, signal.SIGCONT)
            ft.wait_for(lambda: removed(c, tid), what='PressureTriggerRemoved of the trigger on /g')
            ft.check_equal(removed(c, tid), [(tid, 'group-removed')],
                           '/g removed and made again while freezerd was stopped: "group-removed"')

            # -- the same with freezerd running (the kernel's error on the trigger may come first)
            ft.wait_for(lambda: ft.group_object('/g') in c.managed_objects(), what='the new /g published')
            tid = c.group_call('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
            remake(sc, '/g')
            ft.wait_for(lambda: removed(c, tid), what='PressureTriggerRemoved of the trigger on the new /g')
            ft.check_equal(removed(c, tid), [(tid, 'group-removed')],
                           '/g removed and made again, freezerd running: "group-removed"')

            # -- a reading and a trigger of the old /g, asked before freezerd read its removal
            ft.wait_for(lambda: ft.group_object('/g') in c.managed_objects(), what='the new /g published')
            hogs = [sc.spawn('/g', HOG) for _ in range(3)]
            for h in hogs:
                os.sched_setaffinity(h.pid, {min(os.sched_getaffinity(0))})  # a queue: cpu "some" stall
            ft.wait_for(lambda: some_total(sc, '/g') > 100_000, what='cpu stall recorded in /g')
            old_total = c.group_property('/g', 'CpuPressure')[0][3]  # (freezerd keeps the file open)
            sc.kill('/g')
            for h in hogs:
                h.wait()
            ft.wait_for(lambda: 'populated 0' in open(sc.abspath('/g', 'cgroup.events')).read(),
                        what='/g empty')
            os.kill(d.pid, signal.SIGSTOP)
            try:
                get = c.send_call(ft.group_object('/g'), 'org.freedesktop.DBus.Properties', 'Get', 'ss',
                                  (ft.GROUP_IFACE, 'CpuPressure'))
                add = c.group_call_async('/g', 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)
                remake(sc, '/g')
            finally:
                os.kill(d.pid, signal.SIGCONT)
            gone = (ft.ERROR_NO_SUCH_GROUP, 'org.freedesktop.DBus.Error.UnknownObject')
            try:
                total = get.result()[0][1][0][3]
                ft.check(total < old_total, 'Get of the old /g\'s CpuPressure, /g made again: the new cgroup\'s '
                         f'total ({total} us), not the old one\'s ({old_total} us)')
            except ft.DBusError as e:
                ft.check(e.name in gone, f'Get of the old /g\'s CpuPressure, /g made again: {e.name} ({e})')
            try:
                tid = add.result()[0]
                c.managed_objects()  # a round trip: the removal, if the trigger was the old /g's, is read
                ft.check_equal(removed(c, tid), [], 'AddPressureTrigger on the old /g, /g made again: '
                               'a trigger of the new /g, not ended')
            except ft.DBusError as e:
                ft.check(e.name in gone, f'AddPressureTrigger on the old /g, /g made again: {e.name} ({e})')


        # -- untracked, the cgroups still there: "untracked", before InterfacesRemoved
        sc.mkdir('/t/x')
        sc.mkdir('/h')
        with ft.Daemon(bus, sc.root, config={'track': ['/t', '/h']}) as d:
            c = d.client
            c.add_match(type='signal', sender=ft.BUS_NAME)
            ids = {p: c.group_call(p, 'AddPressureTrigger', 'cpu', 'some', THRESHOLD, WINDOW)[0]
                   for p in ('/t', '/t/x', '/h')}

            def order_ok(path):
                def kinds():
                    return [('trigger' if s.member == 'PressureTriggerRemoved' else 'object', s.body[0])
                            for s in c.signals if s.member in ('PressureTriggerRemoved', 'InterfacesRemoved')]
                ft.wait_for(lambda: ('object', ft.group_object(path)) in kinds(),
                            what=f'InterfacesRemoved of {path}')
                k = kinds()
                return k.index(('trigger', ids[path])) < k.index(('object', ft.group_object(path)))

            c.call('Untrack', '/t')
            for p in ('/t', '/t/x'):
                ft.wait_for(lambda: removed(c, ids[p]), what=f'PressureTriggerRemoved of the trigger on {p}')
                ft.check_equal(removed(c, ids[p]), [(ids[p], 'untracked')], f'Untrack("/t"): {p}\'s trigger '
                               'ends "untracked"')
                ft.check(order_ok(p), f'  ... before the InterfacesRemoved of {p}')

            with open(d.config_path, 'w') as f:
                json.dump({'track': ['/t']}, f)
            d.reload()
            ft.wait_for(lambda: removed(c, ids['/h']), what='PressureTriggerRemoved of the trigger on /h')
            ft.check_equal(removed(c, ids['/h']), [(ids['/h'], 'untracked')],
                           'SIGHUP without /h in "track": its trigger ends "untracked"')
            ft.check(order_ok('/h'), '  ... before the InterfacesRemoved of /h')


ft.run(test)
