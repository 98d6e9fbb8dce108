#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Smoke test: freezerd on a private bus over a scratch cgroup tree freezes and
thaws a group of real processes, and its replies wait for the kernel.

  /g   5 x `sleep 1000000` and a `cat` whose echo proves the group runs

Manager.Freeze("/g", 0, 0) must reply only once the kernel says "frozen 1" in
/g/cgroup.events, with every task parked in the freezer trap; Manager.Thaw
must reply once it says "frozen 0", and the group runs again.

The Version property is freezerd --version's and freezectl --version's, and no
older than the libfreezer built with it (0.5: the daemon said 0.1.0 for ever,
older than the library documenting its flags)."""

import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd')
    with ft.Scratch('smoke') as sc, ft.Bus() as bus:
        sc.mkdir('/g')
        sleepers = sc.spawn_sleepers('/g', 5)
        echo = sc.spawn_echo('/g')
        echo.ping()
        pids = sorted([p.pid for p in sleepers] + [echo.pid])
        ft.check_equal(sorted(sc.pids('/g')), pids, 'the 6 processes are in /g')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            ft.check_equal(c.manager_property('CgroupRoot'), sc.root, 'CgroupRoot is the scratch root')
            version = c.manager_property('Version')
            ft.check(re.fullmatch(r'\d+\.\d+\.\d+', version), 'Version is set: MAJOR.MINOR.MICRO', version)
            for binary, name in ((ft.FREEZERD_BIN, 'freezerd'), (ft.FREEZECTL_BIN, 'freezectl')):
                out = subprocess.run([binary, '--version'], capture_output=True, text=True, check=True).stdout
                ft.check_equal(out, f'{name} {version}\n', f'{name} --version says the Version property\'s')
            libs = [m for m in (re.fullmatch(r'.*/libfreezer\.so\.(\d+)\.(\d+)\.\d+', p)
                                for p in glob.glob(os.path.join(ft.BUILDDIR, 'client', 'libfreezer.so.*'))) if m]
            if libs:
                lib = (int(libs[0][1]), int(libs[0][2]))
                ft.check(tuple(int(x) for x in version.split('.'))[:2] >= lib,
                         f'Version {version} is no older than the libfreezer built with it', libs[0][0])

            obj = c.call('GetGroup', '/g')[0]
            ft.check_equal(obj, ft.group_object('/g'), 'GetGroup("/g") is the sd_bus_path_encode()d path')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Path'), '/g', 'Group.Path')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'running', 'FreezerState before')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Populated'), True, 'Populated')
            listed = {p: (o, s) for p, o, s in c.call('ListGroups')[0]}
            ft.check_equal(listed.get('/g'), (obj, 'running'), 'ListGroups has /g running')

            rec = c.record()

            # Freeze: the reply means the kernel has confirmed.
            c.call('Freeze', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'cgroup.events says frozen 1 when Freeze replies')
            ft.check_equal(sc.read_freeze('/g'), 1, 'cgroup.freeze is 1')
            sc.wait_tasks_frozen('/g')
            ft.check(sc.all_tasks_frozen('/g'),
                     'every task of /g is in the freezer trap (S, wchan get_signal)', sc.proc_states('/g'))
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'frozen', 'FreezerState frozen')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Frozen'), True, 'Frozen')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Freeze'), True, 'Freeze')
            rec.wait_property(obj, 'FreezerState', 'frozen')
            ft.check(True, 'PropertiesChanged FreezerState=frozen was signalled')

            token = echo.send()  # queued while frozen, answered after the thaw

            # Thaw.
            rec.clear()
            c.call('Thaw', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'cgroup.events says frozen 0 when Thaw replies')
            ft.check_equal(sc.read_freeze('/g'), 0, 'cgroup.freeze is 0')
            ft.wait_for(lambda: echo.answered(token), what='the echo queued while frozen')
            ft.check(True, 'the group runs again (the echo came back)')
            sc.wait_tasks_frozen('/g', frozen=False)
            ft.check(sc.no_task_frozen('/g'), 'no task of /g is in the freezer trap', sc.proc_states('/g'))
            ft.check_equal(sorted(sc.pids('/g')), pids, 'the same 6 processes are still there')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'FreezerState'), 'running', 'FreezerState running')
            rec.wait_property(obj, 'FreezerState', 'running')
            ft.check(True, 'PropertiesChanged FreezerState=running was signalled')


ft.run(test)
