#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Freeze/Thaw of a group of 50 sleeping processes waits for the kernel.

  /g   50 x `sleep 1000000`
  /w   2 x `sleep 1000000` and one task blocked on a FUSE mount that never answers

Checks:
  * Manager.Freeze("/g") replies, and at that instant /g/cgroup.events already
    says "frozen 1" (read right after the reply); cgroup.freeze is 1; each of the
    50 tasks is then in the freezer trap; FreezerState "frozen", Freeze and
    Frozen true; PropertiesChanged signalled the change.
  * Manager.Thaw("/g") replies with cgroup.events "frozen 0"; no task is left
    in the trap; FreezerState "running", Freeze/Frozen false; FrozenUSec equals
    the kernel's frozen_usec (cgroup.stat.local).
  * Group.Freeze / Group.Thaw on the group object do the same; a second Freeze of
    a frozen group and a second Thaw of a running one succeed at once.
  * The reply really waits: a Freeze of /w, which cannot finish while one of its
    tasks is blocked on FUSE, has no reply while the kernel says "frozen 0" (a
    later call is answered first), and gets it once that task is killed and the
    kernel reports "frozen 1"."""

import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import freezertest as ft  # noqa: E402

N = 50


def check_props(c, path, state, freeze, frozen, what):
    props = c.get_all(ft.group_object(path), ft.GROUP_IFACE)
    ft.check_equal((props['FreezerState'], props['Freeze'], props['Frozen']), (state, freeze, frozen),
                   f'{what}: {path} (FreezerState, Freeze, Frozen)')
    return props


def test():
    ft.require('root', 'cgroup2', 'dbus', 'freezerd', 'fuse')
    with ft.Scratch('core-freeze50') as sc, ft.FuseHang() as fuse, ft.Bus() as bus:
        sc.mkdir('/g')
        sleepers = sc.spawn_sleepers('/g', N)
        pids = sorted(p.pid for p in sleepers)
        ft.check_equal(sorted(sc.pids('/g')), pids, f'the {N} sleepers are in /g')

        with ft.Daemon(bus, sc.root) as d:
            c = d.client
            obj = ft.group_object('/g')
            check_props(c, '/g', 'running', False, False, 'before')
            ft.check_equal(c.get_property(obj, ft.GROUP_IFACE, 'Populated'), True, '/g Populated')
            rec = c.record()

            # ---- Manager.Freeze
            c.call('Freeze', '/g', 0, 0)
            ev = sc.read_events('/g')  # right after the reply, before anything else
            ft.check_equal(ev.get('frozen'), 1, 'cgroup.events says frozen 1 at the instant Freeze replied')
            ft.check_equal(sc.read_freeze('/g'), 1, 'cgroup.freeze is 1')
            sc.wait_tasks_frozen('/g')
            ft.check(sc.all_tasks_frozen('/g'), f'all {N} tasks of /g are in the freezer trap',
                     sc.proc_states('/g'))
            ft.check_equal(len(sc.proc_states('/g')), N, f'{N} tasks inspected')
            props = check_props(c, '/g', 'frozen', True, True, 'after Freeze')
            rec.wait_property(obj, 'FreezerState', 'frozen')
            ft.check(True, 'PropertiesChanged FreezerState=frozen')
            rec.wait_property(obj, 'Frozen', True)
            ft.check(True, 'PropertiesChanged Frozen=true')
            # ---- Manager.Thaw
            rec.clear()
            c.call('Thaw', '/g', 0, 0)
            ev = sc.read_events('/g')
            ft.check_equal(ev.get('frozen'), 0, 'cgroup.events says frozen 0 at the instant Thaw replied')
            ft.check_equal(sc.read_freeze('/g'), 0, 'cgroup.freeze is 0')
            sc.wait_tasks_frozen('/g', frozen=False)
            ft.check(sc.no_task_frozen('/g'), 'no task of /g is in the freezer trap', sc.proc_states('/g'))
            ft.check_equal(sorted(sc.pids('/g')), pids, f'the same {N} processes are in /g')
            props = check_props(c, '/g', 'running', False, False, 'after Thaw')
            rec.wait_property(obj, 'FreezerState', 'running')
            ft.check(True, 'PropertiesChanged FreezerState=running')
            local = sc.abspath('/g', 'cgroup.stat.local')
            if os.path.exists(local):
                # Stable once thawed: the daemon reads it at the time of the Get.
                with open(local) as f:
                    kernel_usec = dict((k, int(v)) for k, v in (line.split() for line in f)).get('frozen_usec')
                ft.check(kernel_usec is not None and kernel_usec > 0, 'kernel frozen_usec > 0 after a freeze',
                         kernel_usec)
                ft.check_equal(props['FrozenUSec'], kernel_usec, 'FrozenUSec is cgroup.stat.local frozen_usec')

            # ---- the same through the group object
            c.group_call('/g', 'Freeze', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'Group.Freeze replied with frozen 1')
            sc.wait_tasks_frozen('/g')
            ft.check(sc.all_tasks_frozen('/g'), 'all tasks frozen after Group.Freeze')
            check_props(c, '/g', 'frozen', True, True, 'after Group.Freeze')
            c.call('Freeze', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 1, 'a second Freeze of a frozen group succeeds')
            check_props(c, '/g', 'frozen', True, True, 'after the second Freeze')
            c.group_call('/g', 'Thaw', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'Group.Thaw replied with frozen 0')
            c.call('Thaw', '/g', 0, 0)
            ft.check_equal(sc.read_events('/g').get('frozen'), 0, 'a second Thaw of a running group succeeds')
            sc.wait_tasks_frozen('/g', frozen=False)
            ft.check(sc.no_task_frozen('/g'), 'no task frozen after Group.Thaw')
            check_props(c, '/g', 'running', False, False, 'after Group.Thaw')

            # ---- the reply waits for the kernel: /w cannot finish while a task is stuck on FUSE
            sc.mkdir('/w')
            sc.spawn_sleepers('/w', 2)
            stuck = fuse.spawn_stuck(sc, '/w')
            c.call('GetGroup', '/w')
            pending = c.call_async('Freeze', '/w', 60 * 1000000, 0)
            # A call sent after the Freeze is answered first: the daemon has handled the
            # Freeze (and written cgroup.freeze) but not replied.
            ft.check_equal(c.group_property('/w', 'FreezerState'), 'freezing', '/w is freezing')
            ft.check(not pending.done(), 'no reply to Freeze(/w) while a task is blocked on FUSE')
            ft.check_equal(sc.read_events('/w').get('frozen'), 0, '/w: kernel says frozen 0')
            ft.check_equal(sc.read_freeze('/w'), 1, '/w: cgroup.freeze 1 (written)')
            os.kill(stuck.pid, signal.SIGKILL)
            pending.result()
            ft.check_equal(sc.read_events('/w').get('frozen'), 1,
                           'Freeze(/w) replied once the stuck task died, with frozen 1')
            sc.wait_tasks_frozen('/w')
            ft.check(sc.all_tasks_frozen('/w'), 'the remaining tasks of /w are in the freezer trap')
            c.call('Thaw', '/w', 0, 0)
            ft.check_equal(sc.read_events('/w').get('frozen'), 0, '/w thawed')
    print(f'# checked: Freeze/Thaw of {N} sleepers (manager and group object), kernel-confirmed replies, '
          'task states, properties and signals; a pending Freeze waits for the kernel')


ft.run(test)
