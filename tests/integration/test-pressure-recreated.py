#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A pressure trigger on a cgroup that is removed and made again under the same
name (a unit restarted, a container made again) ends with PressureTriggerRemoved
"group-removed": the new cgroup is another.

  /g   empty; removed and made again

Checked with freezerd stopped meanwhile (it then sees both at once, and the
path exists again: it said "untracked") and with freezerd running (the
kernel's error on the trigger's fd may come first, and the path be back when
freezerd looks: it could say "error").
No sleeps: every wait is on D-Bus messages, with a deadline."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

WINDOW = 2_000_000          # usec: a whole multiple of 2 s (freezerd lacks CAP_SYS_RESOURCE)
THRESHOLD = 100_000         # usec


def removed(client, tid):
    return [s.body for s in client.signals if s.member == 'PressureTriggerRemoved' and s.body[0] == tid]


def remake(sc, path):
    os.rmdir(sc.abspath(path))
    os.mkdir(sc.abspath(path))


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'psi')

    with ft.Scratch('pressure-recreated') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        if not os.path.exists(sc.abspath('/g', 'cpu.pressure')):
            ft.skip('cgroups have no cpu.pressure (PSI disabled for cgroups)')
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


ft.run(test)
